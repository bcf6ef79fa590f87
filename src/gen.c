/*
 * gen.c: builds the forward graph of GPT, BERT and LLaMA-style transformers
 * from a handful of sizes (sl_gen_config), and reads those sizes from a
 * Hugging Face config.json.
 *
 * Every family starts with an "embed" operator, repeats one block per layer
 * (operators "layerN.<op>" tagged "layerN", contiguous) and ends with a final
 * norm, the language-model head and the loss.  Tensors are named after the
 * operator that writes them ("layer3.qkv.out") or owns them ("layer3.qkv.w",
 * "layer3.ln1.gamma").  Activations are bf16, token ids and labels i32, the
 * loss f32.
 *
 *   GPT    pre-LN, fused qkv with bias, GELU MLP of 4h, dropout, learned
 *          positions, lm_head tied to the token embedding (GPT-2, Megatron).
 *   BERT   post-LN, same blocks, embedding layernorm, masked-LM head
 *          (dense, GELU, layernorm) and a decoder tied to the embedding.
 *   LLaMA  RMSNorm, qkv with grouped-query heads, no biases, SwiGLU MLP
 *          (silu(gate) * up, down), no dropout, no position table, untied
 *          lm_head.
 */
#include "internal.h"
#include "json.h"

#include <jansson.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>

static const char *const fam_names[] = { "gpt", "bert", "llama" };

/* Largest size a generator field may take: keeps every product in int64. */
#define GEN_MAX_DIM ((int64_t)1 << 31)
#define GEN_MAX_LAYERS 1024

void
sl_gen_defaults(sl_family fam, sl_gen_config *c)
{
	memset(c, 0, sizeof *c);
	c->family = fam;
	snprintf(c->name, sizeof c->name, "%s-tiny",
	    ((int)fam >= 0 && fam <= SL_FAM_LLAMA) ? fam_names[fam] : "model");
	c->layers = 2;
	c->hidden = 64;
	c->heads = 4;
	c->kv_heads = 4;
	c->ffn = 256;
	c->vocab = 512;
	c->seq = 32;
	c->batch = 1;
	if (fam == SL_FAM_LLAMA) {
		c->kv_heads = 2;
		c->ffn = 176;	/* 2/3 of 4h, rounded up to a multiple of 16 */
	}
}

void
sl_gen_family_defaults(sl_family fam, sl_gen_config *c)
{
	static const struct {
		const char *name;
		int layers;
		int64_t hidden, heads, vocab, seq;
	} real[] = {
		[SL_FAM_GPT] = { "gpt2", 12, 768, 12, 50257, 1024 },
		[SL_FAM_BERT] = { "bert-base", 12, 768, 12, 30522, 512 },
		[SL_FAM_LLAMA] = { "llama-2-7b", 32, 4096, 32, 32000, 4096 },
	};

	sl_gen_defaults(fam, c);
	if ((int)fam < 0 || fam > SL_FAM_LLAMA)
		return;
	snprintf(c->name, sizeof c->name, "%s", real[fam].name);
	c->layers = real[fam].layers;
	c->hidden = real[fam].hidden;
	c->heads = c->kv_heads = real[fam].heads;
	c->ffn = 0;
	c->vocab = real[fam].vocab;
	c->seq = real[fam].seq;
	c->batch = 1;
}

int64_t
sl_gen_ffn(sl_family fam, int64_t hidden)
{
	if (fam == SL_FAM_LLAMA) {
		int64_t f = 8 * hidden / 3;
		return (f + 255) / 256 * 256;
	}
	return 4 * hidden;
}

int
sl_gen_save(const sl_gen_config *c, const char *path, sl_error *err)
{
	json_t *root, *gen;
	char desc[256];

	gen = json_pack("{s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I}",
	    "family", fam_names[c->family], "layers", c->layers,
	    "hidden", (json_int_t)c->hidden, "heads", (json_int_t)c->heads,
	    "kv_heads", (json_int_t)(c->kv_heads > 0 ? c->kv_heads : c->heads),
	    "ffn", (json_int_t)(c->ffn > 0 ? c->ffn : sl_gen_ffn(c->family, c->hidden)),
	    "vocab", (json_int_t)c->vocab, "seq", (json_int_t)c->seq);
	snprintf(desc, sizeof desc, "%s: %d layers, hidden %lld, %lld heads, "
	    "sequence %lld, vocabulary %lld", fam_names[c->family], c->layers,
	    (long long)c->hidden, (long long)c->heads, (long long)c->seq,
	    (long long)c->vocab);
	root = json_pack("{s:s, s:i, s:s, s:s, s:o}", "format", "shardlab-model",
	    "version", 1, "name", c->name, "description", desc, "generator", gen);
	if (root == NULL)
		return sl_error_set(err, SL_EINTERNAL, path, 0, 0,
		    _("cannot build the model description"));
	return sl_json_write(root, path,
	    _("cannot write the model"), err);
}

int
sl_family_from_name(const char *s)
{
	if (s == NULL)
		return -1;
	for (size_t i = 0; i < SL_ARRAY_LEN(fam_names); i++)
		if (strcasecmp(s, fam_names[i]) == 0)
			return (int)i;
	return -1;
}

/* Checks c; on failure names the offending field in *field. */
static int
gen_check(const sl_gen_config *c, const char **field, sl_error *err)
{
	static const struct {
		const char *name;
		size_t off;
	} f[] = {
		{ "hidden", offsetof(sl_gen_config, hidden) },
		{ "heads", offsetof(sl_gen_config, heads) },
		{ "kv_heads", offsetof(sl_gen_config, kv_heads) },
		{ "ffn", offsetof(sl_gen_config, ffn) },
		{ "vocab", offsetof(sl_gen_config, vocab) },
		{ "seq", offsetof(sl_gen_config, seq) },
		{ "batch", offsetof(sl_gen_config, batch) },
	};
	int64_t kv = c->kv_heads > 0 ? c->kv_heads : c->heads;

	if ((int)c->family < 0 || c->family > SL_FAM_LLAMA) {
		*field = "family";
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("unknown model family (expected gpt, bert or llama)"));
	}
	if (c->layers < 1 || c->layers > GEN_MAX_LAYERS) {
		*field = "layers";
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("layers must be between 1 and %d, got %d"), GEN_MAX_LAYERS,
		    c->layers);
	}
	for (size_t i = 0; i < SL_ARRAY_LEN(f); i++) {
		int64_t v = *(const int64_t *)((const char *)c + f[i].off);

		if (v == 0 && (strcmp(f[i].name, "kv_heads") == 0 ||
		    strcmp(f[i].name, "ffn") == 0))
			continue;	/* 0: the family's default */
		if (v < 1 || v > GEN_MAX_DIM) {
			*field = f[i].name;
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("%s must be between 1 and %lld, got %lld"), f[i].name,
			    (long long)GEN_MAX_DIM, (long long)v);
		}
	}
	if (c->hidden % c->heads != 0) {
		*field = "heads";
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("hidden size %lld is not a multiple of %lld heads"),
		    (long long)c->hidden, (long long)c->heads);
	}
	if (kv > c->heads || c->heads % kv != 0) {
		*field = "kv_heads";
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("kv_heads %lld must divide heads %lld"), (long long)kv,
		    (long long)c->heads);
	}
	if (c->family != SL_FAM_LLAMA && kv != c->heads) {
		*field = "kv_heads";
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("the %s family has no grouped-query attention: kv_heads "
		    "must equal heads (%lld)"), fam_names[c->family],
		    (long long)c->heads);
	}
	return SL_OK;
}

/* ------------------------------------------------------------ graph builder */

typedef struct gen_b {
	sl_graph *g;
	sl_error *err;
	int rc;
	char layer[32];		/* current layer tag, "" outside layers */
	int64_t b, s;		/* batch, sequence */
} gen_b;

static const char *
gen_name(const gen_b *gb, const char *op, const char *suffix, char *buf,
    size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s", gb->layer, gb->layer[0] ? "." : "",
	    op, suffix[0] ? "." : "", suffix);
	return buf;
}

/* Adds a tensor of the given rank; returns its index (or -1 once failed). */
static int
gen_tensor(gen_b *gb, const char *op, const char *suffix, sl_role role,
    sl_dtype dt, int rank, int64_t d0, int64_t d1, int64_t d2)
{
	int64_t dims[3] = { d0, d1, d2 };
	char name[96];
	int t;

	if (gb->rc != SL_OK)
		return -1;
	t = sl_graph_add_tensor(gb->g, gen_name(gb, op, suffix, name, sizeof name),
	    rank, dims, dt, role, gb->err);
	if (t < 0)
		gb->rc = gb->err != NULL && gb->err->code ? gb->err->code : SL_EINTERNAL;
	return t;
}

static int
gen_param(gen_b *gb, const char *op, const char *suffix, int64_t d0, int64_t d1)
{
	return gen_tensor(gb, op, suffix, SL_ROLE_PARAMETER, SL_DT_BF16,
	    d1 > 0 ? 2 : 1, d0, d1, 0);
}

/* An activation [b, s, h] written by op. */
static int
gen_act(gen_b *gb, const char *op, int64_t h)
{
	return gen_tensor(gb, op, "out", SL_ROLE_ACTIVATION, SL_DT_BF16, 3,
	    gb->b, gb->s, h);
}

/* Adds operator op reading in[0..n_in) and writing out; returns its index. */
static sl_op *
gen_op(gen_b *gb, const char *op, sl_op_kind kind, int n_in, const int *in,
    int out)
{
	char name[96];
	int o;

	if (gb->rc != SL_OK)
		return NULL;
	o = sl_graph_add_op(gb->g, gen_name(gb, op, "", name, sizeof name), kind,
	    n_in, in, 1, &out, gb->layer[0] ? gb->layer : NULL, gb->err);
	if (o < 0) {
		gb->rc = gb->err != NULL && gb->err->code ? gb->err->code : SL_EINTERNAL;
		return NULL;
	}
	return &gb->g->ops[o];
}

/* y = x W (+ bias): returns y. */
static int
gen_linear(gen_b *gb, const char *op, int x, int64_t k, int64_t n, bool bias)
{
	int in[3], y;

	in[0] = x;
	in[1] = gen_param(gb, op, "w", k, n);
	if (bias)
		in[2] = gen_param(gb, op, "b", n, 0);
	y = gen_act(gb, op, n);
	gen_op(gb, op, SL_OP_MATMUL, bias ? 3 : 2, in, y);
	return y;
}

static int
gen_norm(gen_b *gb, const char *op, int x, int64_t h, bool rms)
{
	int in[3], y;

	in[0] = x;
	in[1] = gen_param(gb, op, "gamma", h, 0);
	if (!rms)
		in[2] = gen_param(gb, op, "beta", h, 0);
	y = gen_act(gb, op, h);
	gen_op(gb, op, rms ? SL_OP_RMSNORM : SL_OP_LAYERNORM, rms ? 2 : 3, in, y);
	return y;
}

/* Unary or binary elementwise operator. */
static int
gen_elem(gen_b *gb, const char *op, sl_op_kind kind, int a, int b, int64_t h)
{
	int in[2] = { a, b }, y = gen_act(gb, op, h);
	sl_op *o = gen_op(gb, op, kind, b >= 0 ? 2 : 1, in, y);

	if (o != NULL && kind == SL_OP_DROPOUT)
		o->p = 0.1;
	return y;
}

static int
gen_attention(gen_b *gb, const sl_gen_config *c, int qkv, int64_t kv)
{
	int y = gen_act(gb, "attn", c->hidden);
	sl_op *o = gen_op(gb, "attn", SL_OP_ATTENTION, 1, &qkv, y);

	if (o != NULL) {
		o->heads = (int)c->heads;
		o->kv_heads = (int)kv;
		/* GPT and BERT drop attention probabilities; LLaMA has no dropout */
		o->p = c->family == SL_FAM_LLAMA ? 0.0 : 0.1;
	}
	return y;
}

/* One GPT block (pre-LN); returns its output. */
static int
gen_gpt_layer(gen_b *gb, const sl_gen_config *c, int x, int64_t ffn)
{
	int64_t h = c->hidden;
	int t, r;

	t = gen_norm(gb, "ln1", x, h, false);
	t = gen_linear(gb, "qkv", t, h, 3 * h, true);
	t = gen_attention(gb, c, t, c->heads);
	t = gen_linear(gb, "proj", t, h, h, true);
	t = gen_elem(gb, "drop1", SL_OP_DROPOUT, t, -1, h);
	r = gen_elem(gb, "add1", SL_OP_ADD, x, t, h);
	t = gen_norm(gb, "ln2", r, h, false);
	t = gen_linear(gb, "fc1", t, h, ffn, true);
	t = gen_elem(gb, "gelu", SL_OP_GELU, t, -1, ffn);
	t = gen_linear(gb, "fc2", t, ffn, h, true);
	t = gen_elem(gb, "drop2", SL_OP_DROPOUT, t, -1, h);
	return gen_elem(gb, "add2", SL_OP_ADD, r, t, h);
}

/* One BERT block (post-LN). */
static int
gen_bert_layer(gen_b *gb, const sl_gen_config *c, int x, int64_t ffn)
{
	int64_t h = c->hidden;
	int t, r;

	t = gen_linear(gb, "qkv", x, h, 3 * h, true);
	t = gen_attention(gb, c, t, c->heads);
	t = gen_linear(gb, "proj", t, h, h, true);
	t = gen_elem(gb, "drop1", SL_OP_DROPOUT, t, -1, h);
	t = gen_elem(gb, "add1", SL_OP_ADD, x, t, h);
	r = gen_norm(gb, "ln1", t, h, false);
	t = gen_linear(gb, "fc1", r, h, ffn, true);
	t = gen_elem(gb, "gelu", SL_OP_GELU, t, -1, ffn);
	t = gen_linear(gb, "fc2", t, ffn, h, true);
	t = gen_elem(gb, "drop2", SL_OP_DROPOUT, t, -1, h);
	t = gen_elem(gb, "add2", SL_OP_ADD, r, t, h);
	return gen_norm(gb, "ln2", t, h, false);
}

/* One LLaMA block: RMSNorm, GQA attention, SwiGLU. */
static int
gen_llama_layer(gen_b *gb, const sl_gen_config *c, int x, int64_t ffn, int64_t kv)
{
	int64_t h = c->hidden, d = h / c->heads;
	int t, r, gate, up;

	t = gen_norm(gb, "ln1", x, h, true);
	t = gen_linear(gb, "qkv", t, h, (c->heads + 2 * kv) * d, false);
	t = gen_attention(gb, c, t, kv);
	t = gen_linear(gb, "proj", t, h, h, false);
	r = gen_elem(gb, "add1", SL_OP_ADD, x, t, h);
	t = gen_norm(gb, "ln2", r, h, true);
	gate = gen_linear(gb, "gate", t, h, ffn, false);
	up = gen_linear(gb, "up", t, h, ffn, false);
	t = gen_elem(gb, "silu", SL_OP_SILU, gate, -1, ffn);
	t = gen_elem(gb, "mul", SL_OP_MUL, t, up, ffn);
	t = gen_linear(gb, "down", t, ffn, h, false);
	return gen_elem(gb, "add2", SL_OP_ADD, r, t, h);
}

sl_graph *
sl_gen(const sl_gen_config *c, sl_error *err)
{
	gen_b gb;
	const char *field;
	int64_t h, ffn, kv;
	int tokens, wte, x, in[3];
	sl_op *o;
	char desc[256];

	if (gen_check(c, &field, err) != SL_OK)
		return NULL;
	h = c->hidden;
	kv = c->kv_heads > 0 ? c->kv_heads : c->heads;
	ffn = c->ffn > 0 ? c->ffn : sl_gen_ffn(c->family, h);

	memset(&gb, 0, sizeof gb);
	gb.g = sl_graph_new(c->name[0] ? c->name : fam_names[c->family]);
	gb.err = err;
	gb.b = c->batch;
	gb.s = c->seq;

	/* embedding: tokens[b,s], wte[V,h] (, wpe[s,h]) -> [b,s,h] */
	tokens = gen_tensor(&gb, "tokens", "", SL_ROLE_INPUT, SL_DT_I32, 2,
	    gb.b, gb.s, 0);
	wte = gen_tensor(&gb, "wte", "", SL_ROLE_PARAMETER, SL_DT_BF16, 2,
	    c->vocab, h, 0);
	in[0] = tokens;
	in[1] = wte;
	if (c->family != SL_FAM_LLAMA)
		in[2] = gen_tensor(&gb, "wpe", "", SL_ROLE_PARAMETER, SL_DT_BF16, 2,
		    gb.s, h, 0);
	x = gen_act(&gb, "embed", h);
	gen_op(&gb, "embed", SL_OP_EMBEDDING, c->family == SL_FAM_LLAMA ? 2 : 3,
	    in, x);
	if (c->family == SL_FAM_BERT)
		x = gen_norm(&gb, "ln_emb", x, h, false);

	for (int l = 0; l < c->layers && gb.rc == SL_OK; l++) {
		snprintf(gb.layer, sizeof gb.layer, "layer%d", l);
		switch (c->family) {
		case SL_FAM_GPT:
			x = gen_gpt_layer(&gb, c, x, ffn);
			break;
		case SL_FAM_BERT:
			x = gen_bert_layer(&gb, c, x, ffn);
			break;
		case SL_FAM_LLAMA:
			x = gen_llama_layer(&gb, c, x, ffn, kv);
			break;
		}
	}
	gb.layer[0] = '\0';

	switch (c->family) {
	case SL_FAM_GPT:
		x = gen_norm(&gb, "ln_f", x, h, false);
		in[0] = x;
		in[1] = wte;	/* tied: the same tensor, read as [h, V] */
		x = gen_act(&gb, "lm_head", c->vocab);
		if ((o = gen_op(&gb, "lm_head", SL_OP_MATMUL, 2, in, x)) != NULL)
			o->transpose_w = true;
		break;
	case SL_FAM_BERT:
		/* masked-LM head: dense, GELU, layernorm, tied decoder with bias */
		x = gen_linear(&gb, "mlm_fc", x, h, h, true);
		x = gen_elem(&gb, "mlm_gelu", SL_OP_GELU, x, -1, h);
		x = gen_norm(&gb, "mlm_ln", x, h, false);
		in[0] = x;
		in[1] = wte;
		in[2] = gen_param(&gb, "lm_head", "b", c->vocab, 0);
		x = gen_act(&gb, "lm_head", c->vocab);
		if ((o = gen_op(&gb, "lm_head", SL_OP_MATMUL, 3, in, x)) != NULL)
			o->transpose_w = true;
		break;
	case SL_FAM_LLAMA:
		x = gen_norm(&gb, "ln_f", x, h, true);
		x = gen_linear(&gb, "lm_head", x, h, c->vocab, false);
		break;
	}
	in[0] = x;
	in[1] = gen_tensor(&gb, "labels", "", SL_ROLE_INPUT, SL_DT_I32, 2,
	    gb.b, gb.s, 0);
	x = gen_tensor(&gb, "loss", "out", SL_ROLE_ACTIVATION, SL_DT_F32, 2,
	    gb.b, gb.s, 0);
	gen_op(&gb, "loss", SL_OP_CROSS_ENTROPY, 2, in, x);

	if (gb.rc == SL_OK)
		gb.rc = sl_graph_validate(gb.g, NULL, err);
	if (gb.rc != SL_OK) {
		sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("the %s generator failed"), fam_names[c->family]);
		sl_graph_free(gb.g);
		return NULL;
	}
	/* Identity of a generated graph: its configuration, canonically. */
	snprintf(desc, sizeof desc, "shardlab-gen 1 %s layers=%d hidden=%lld "
	    "heads=%lld kv_heads=%lld ffn=%lld vocab=%lld seq=%lld batch=%lld",
	    fam_names[c->family], c->layers, (long long)h, (long long)c->heads,
	    (long long)kv, (long long)ffn, (long long)c->vocab,
	    (long long)c->seq, (long long)c->batch);
	sl_sha256_hex(desc, strlen(desc), gb.g->sha256);
	free(gb.g->source);
	gb.g->source = sl_xmalloc(8 + strlen(fam_names[c->family]));
	sprintf(gb.g->source, "gen:%s", fam_names[c->family]);
	return gb.g;
}

/* ------------------------------------------------- Hugging Face config.json */

typedef struct hf_ctx {
	const char *path;
	json_t *root;
	const jp_doc *doc;
	sl_error *err;
} hf_ctx;

/*
 * Reads the first present key of keys (NULL-terminated) as a positive
 * integer into *v; absent or null leaves *v.  Returns SL_OK or SL_EINPUT.
 */
static int
hf_int(hf_ctx *h, const char *const *keys, int64_t *v)
{
	const char *first = NULL;
	int64_t got_v = 0;

	for (; *keys != NULL; keys++) {
		json_t *j = json_object_get(h->root, *keys);
		const jp_node *p = jp_member(jp_root(h->doc), *keys);

		if (j == NULL || json_is_null(j))
			continue;
		if (!json_is_integer(j) || json_integer_value(j) < 1 ||
		    json_integer_value(j) > GEN_MAX_DIM) {
			char got[64];

			if (json_is_integer(j))
				snprintf(got, sizeof got, "%lld",
				    (long long)json_integer_value(j));
			else if (json_is_string(j))
				snprintf(got, sizeof got, _("the string \"%.32s\""),
				    json_string_value(j));
			else if (json_is_real(j))
				snprintf(got, sizeof got, "%g", json_real_value(j));
			else
				snprintf(got, sizeof got, "%s", json_is_boolean(j) ?
				    _("a boolean") : json_is_array(j) ? _("an array") :
				    _("an object"));
			return sl_error_set(h->err, SL_EINPUT, h->path,
			    p ? p->line : 0, p ? p->col : 0,
			    _("\"%s\": expected a positive integer (at most %lld), got %s"),
			    *keys, (long long)GEN_MAX_DIM, got);
		}
		if (first != NULL && json_integer_value(j) != got_v)
			/* synonyms (hidden_size, n_embd) that disagree */
			return sl_error_set(h->err, SL_EINPUT, h->path,
			    p ? p->line : 0, p ? p->col : 0,
			    _("\"%s\" is %lld but \"%s\" is %lld: they name the "
			    "same size; keep one"), *keys,
			    (long long)json_integer_value(j), first,
			    (long long)got_v);
		if (first == NULL) {
			first = *keys;
			got_v = json_integer_value(j);
		}
	}
	if (first != NULL)
		*v = got_v;
	return SL_OK;
}

/*
 * A config without "_name_or_path" is named after where it lives: the folder
 * of a ".../NAME/config.json", else the file's name without ".json".
 */
static void
hf_name_from_path(const char *path, const char *fallback, char *buf, size_t len)
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	if (strcmp(base, "config.json") == 0 && base > path + 1) {
		const char *end = base - 1, *start = end;
		while (start > path && start[-1] != '/')
			start--;
		n = (size_t)(end - start);
		if (n > 0 && !(n == 1 && start[0] == '.') &&
		    !(n == 2 && start[0] == '.' && start[1] == '.')) {
			snprintf(buf, len, "%.*s", (int)n, start);
			return;
		}
	}
	n = strlen(base);
	if (n > 5 && strcmp(base + n - 5, ".json") == 0 && strcmp(base, "config.json") != 0) {
		snprintf(buf, len, "%.*s", (int)(n - 5), base);
		return;
	}
	snprintf(buf, len, "%s", fallback);
}

/* Whether one of keys is present (and not null). */
static bool
hf_has(const hf_ctx *h, const char *const *keys)
{
	for (; *keys != NULL; keys++) {
		json_t *j = json_object_get(h->root, *keys);
		if (j != NULL && !json_is_null(j))
			return true;
	}
	return false;
}

/* The model types read, and the family each is generated as. */
static const struct {
	const char *type;
	sl_family fam;
} hf_types[] = {
	{ "llama", SL_FAM_LLAMA }, { "mistral", SL_FAM_LLAMA },
	{ "qwen2", SL_FAM_LLAMA }, { "gpt2", SL_FAM_GPT },
	{ "bert", SL_FAM_BERT },
};

/* The keys of each size, synonyms after the Hugging Face name. */
static const char *const k_hidden[] = { "hidden_size", "n_embd", NULL };
static const char *const k_layers[] = { "num_hidden_layers", "n_layer", NULL };
static const char *const k_heads[] = { "num_attention_heads", "n_head", NULL };
static const char *const k_kv[] = { "num_key_value_heads", NULL };
static const char *const k_ffn[] = { "intermediate_size", "n_inner", NULL };
static const char *const k_vocab[] = { "vocab_size", NULL };
static const char *const k_seq[] = { "max_position_embeddings",
    "n_positions", "n_ctx", NULL };

/* The config's "model_type": its index in hf_types, or -1 with the error. */
static int
hf_type(hf_ctx *h)
{
	const jp_doc *doc = h->doc;
	json_t *mt = json_object_get(h->root, "model_type");
	const jp_node *mtp = jp_member(jp_root(doc), "model_type");
	size_t ti;

	if (mt == NULL) {
		sl_error_set(h->err, SL_EINPUT, h->path, jp_root(doc)->line,
		    jp_root(doc)->col, _("missing \"model_type\" (expected one of "
		    "llama, mistral, qwen2, gpt2, bert)"));
		return -1;
	}
	if (!json_is_string(mt)) {
		sl_error_set(h->err, SL_EINPUT, h->path, mtp->line, mtp->col,
		    _("\"model_type\" must be a string such as \"llama\""));
		return -1;
	}
	for (ti = 0; ti < SL_ARRAY_LEN(hf_types); ti++)
		if (json_is_string(mt) &&
		    strcmp(json_string_value(mt), hf_types[ti].type) == 0)
			break;
	if (ti == SL_ARRAY_LEN(hf_types)) {
		sl_error_set(h->err, SL_EINPUT, h->path, mtp->line, mtp->col,
		    _("model_type \"%.40s\" is not supported (expected one of "
		    "llama, mistral, qwen2, gpt2, bert)"), json_string_value(mt));
		return -1;
	}
	return (int)ti;
}

/* The sizes of the model into c (its family's defaults already there). */
static int
hf_sizes(hf_ctx *h, sl_gen_config *c)
{
	const jp_doc *doc = h->doc;
	int64_t layers = -1, kv = 0, ffn = 0;

	c->kv_heads = 0;
	c->ffn = 0;
	if (hf_int(h, k_hidden, &c->hidden) || hf_int(h, k_layers, &layers) ||
	    hf_int(h, k_heads, &c->heads) || hf_int(h, k_kv, &kv) ||
	    hf_int(h, k_ffn, &ffn) || hf_int(h, k_vocab, &c->vocab) ||
	    hf_int(h, k_seq, &c->seq))
		return SL_EINPUT;
	{
		/* the sizes that make the model: without them it is not this model */
		static const char *const *const need[] = { k_hidden, k_layers,
		    k_heads };
		for (size_t i = 0; i < SL_ARRAY_LEN(need); i++)
			if (!hf_has(h, need[i]))
				return sl_error_set(h->err, SL_EINPUT, h->path,
				    jp_root(doc)->line, jp_root(doc)->col,
				    _("missing \"%s\": a config must give the hidden "
				    "size, the number of layers and of attention "
				    "heads"), need[i][0]);
	}
	if (layers > GEN_MAX_LAYERS) {
		const jp_node *p = jp_member(jp_root(doc), "num_hidden_layers");
		if (p == NULL)
			p = jp_member(jp_root(doc), "n_layer");
		return sl_error_set(h->err, SL_EINPUT, h->path, p ? p->line : 0,
		    p ? p->col : 0, _("expected at most %d layers, got %lld"),
		    GEN_MAX_LAYERS, (long long)layers);
	}
	if (layers > 0)
		c->layers = (int)layers;
	c->kv_heads = kv > 0 ? kv : c->heads;
	c->ffn = ffn > 0 ? ffn : sl_gen_ffn(c->family, c->hidden);
	/* Train at the model's longest sequence, but no longer than
	 * SL_HF_MAX_SEQ (32k-position models are trained shorter). */
	c->max_positions = 0;
	if (c->seq > SL_HF_MAX_SEQ) {
		c->max_positions = c->seq;
		c->seq = SL_HF_MAX_SEQ;
	}
	return SL_OK;
}

/* The model's name: "_name_or_path"'s last part, else the file's. */
static void
hf_model_name(const hf_ctx *h, const char *type, sl_gen_config *c)
{
	json_t *np = json_object_get(h->root, "_name_or_path");

	if (json_is_string(np) && json_string_length(np) > 0) {
		const char *s = json_string_value(np), *slash = strrchr(s, '/');
		snprintf(c->name, sizeof c->name, "%s", slash && slash[1] ? slash + 1 : s);
	} else {
		hf_name_from_path(h->path, type, c->name, sizeof c->name);
	}
}

/* gen_check of what was read, its error at the key the bad size came from. */
static int
hf_check(hf_ctx *h, const sl_gen_config *c)
{
	static const struct { const char *f; const char *const *k; } m[] = {
		{ "hidden", k_hidden }, { "heads", k_heads },
		{ "kv_heads", k_kv }, { "ffn", k_ffn },
		{ "vocab", k_vocab }, { "seq", k_seq },
		{ "layers", k_layers },
	};
	const char *field = NULL;
	const jp_node *p = NULL;
	sl_error e2;

	sl_error_clear(&e2);
	if (gen_check(c, &field, &e2) == SL_OK)
		return SL_OK;
	for (size_t i = 0; i < SL_ARRAY_LEN(m) && p == NULL; i++)
		if (strcmp(m[i].f, field) == 0)
			for (const char *const *k = m[i].k; *k && !p; k++)
				p = jp_member(jp_root(h->doc), *k);
	if (p == NULL)
		p = jp_root(h->doc);
	return sl_error_set(h->err, SL_EINPUT, h->path, p->line, p->col, "%s",
	    e2.msg);
}

int
sl_gen_from_hf_config(const char *path, sl_gen_config *c, sl_error *err)
{
	hf_ctx h = { path, NULL, NULL, err };
	char *text;
	size_t len;
	sl_json j = { 0 };
	int rc = SL_EINPUT, ti;
	char *dirpath = NULL;

	{
		/* a model directory: its config.json */
		struct stat st;

		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			size_t n = strlen(path) + 16;
			dirpath = sl_xmalloc(n);
			snprintf(dirpath, n, "%s/config.json", path);
			path = dirpath;
			h.path = path;
		}
	}
	if ((text = sl_read_file(path, &len, err)) == NULL) {
		free(dirpath);
		return err != NULL ? err->code : SL_EINPUT;
	}
	if (sl_json_read(&j, path, text, len, 0, SL_EINPUT, err) != SL_OK)
		goto out;
	h.doc = j.pos;
	h.root = j.root;
	if (!json_is_object(h.root)) {
		sl_error_set(err, SL_EINPUT, path, 1, 1,
		    _("expected a JSON object (a Hugging Face config.json)"));
		goto out;
	}
	if ((ti = hf_type(&h)) < 0)
		goto out;
	sl_gen_family_defaults(hf_types[ti].fam, c);
	if (hf_sizes(&h, c) != SL_OK)
		goto out;
	hf_model_name(&h, hf_types[ti].type, c);
	if (hf_check(&h, c) != SL_OK)
		goto out;
	rc = SL_OK;
out:
	sl_json_free(&j);
	free(text);
	free(dirpath);
	return rc;
}
