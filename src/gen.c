/*
 * gen.c: builds the forward graph of GPT, BERT, LLaMA-style and
 * mixture-of-experts transformers from a handful of sizes (sl_gen_config),
 * and reads those sizes from a Hugging Face config.json.
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
 *   BERT   post-LN, same blocks, token-type and position embeddings, an
 *          embedding layernorm, masked-LM head (dense, GELU, layernorm) and
 *          a decoder tied to the embedding.
 *   LLaMA  RMSNorm, qkv with grouped-query heads, no biases, SwiGLU MLP
 *          (silu(gate) * up, down), no dropout, no position table, untied
 *          lm_head; what Hugging Face configs of the family vary (head
 *          width, biases, query/key norms, sliding windows, tied
 *          embeddings, latent attention) are members of sl_gen_config.
 *   MoE    LLaMA blocks whose MLP is a mixture of experts: gate, router,
 *          dispatch, experts, combine (kinds.c), with optional shared
 *          experts beside them, and dense MLPs in the first layers or
 *          between MoE layers where the config says.
 */
#include "internal.h"
#include "json.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>

static const char *const fam_names[SL_FAM_COUNT] = { "gpt", "bert", "llama",
    "moe" };

/* Largest size a generator field may take: keeps every product in int64. */
#define GEN_MAX_DIM ((int64_t)1 << 31)
#define GEN_MAX_LAYERS 1024
#define GEN_MAX_EXPERTS 65536

/* The first rows of sl_gen_fields: the sizes every family has. */
#define GEN_BASE_FIELDS 7

#define FAM(f) (1u << (f))
#define ALL (FAM(SL_FAM_GPT) | FAM(SL_FAM_BERT) | FAM(SL_FAM_LLAMA) | FAM(SL_FAM_MOE))
#define DEC (FAM(SL_FAM_LLAMA) | FAM(SL_FAM_MOE))
#define MOE FAM(SL_FAM_MOE)
#define F(k, t, m, lo, hi, fams, h) { k, t, offsetof(sl_gen_config, m), lo, hi, fams, h }

/*
 * The members of sl_gen_config a model file ("generator") and `shardlab
 * gen` (--KEY with '-' for '_') give: one row each, read, written and
 * checked from here.
 */
const sl_gen_field sl_gen_fields[] = {
	F("layers", SL_GEN_COUNT, layers, 1, GEN_MAX_LAYERS, ALL,
	    N_("transformer layers")),
	F("hidden", SL_GEN_INT, hidden, 1, GEN_MAX_DIM, ALL, N_("hidden size")),
	F("heads", SL_GEN_INT, heads, 1, GEN_MAX_DIM, ALL, N_("attention heads")),
	F("kv_heads", SL_GEN_INT, kv_heads, 0, GEN_MAX_DIM, ALL,
	    N_("key/value heads (grouped-query attention; default: heads)")),
	F("ffn", SL_GEN_INT, ffn, 0, GEN_MAX_DIM, ALL,
	    N_("feed-forward size (of the dense MLPs)")),
	F("vocab", SL_GEN_INT, vocab, 1, GEN_MAX_DIM, ALL, N_("vocabulary")),
	F("seq", SL_GEN_INT, seq, 1, GEN_MAX_DIM, ALL,
	    N_("training sequence length")),
	F("head_dim", SL_GEN_INT, head_dim, 0, GEN_MAX_DIM, DEC,
	    N_("width of one attention head (default: hidden / heads)")),
	F("tie", SL_GEN_TIE, tie, 0, 0, ALL,
	    N_("the head reads the token embedding table (default: GPT and BERT do)")),
	F("qkv_bias", SL_GEN_BOOL, qkv_bias, 0, 0, DEC,
	    N_("biases of the query, key and value matmuls")),
	F("out_bias", SL_GEN_BOOL, out_bias, 0, 0, DEC,
	    N_("bias of the attention's output matmul")),
	F("mlp_bias", SL_GEN_BOOL, mlp_bias, 0, 0, DEC,
	    N_("biases of the MLP's gate, up and down matmuls")),
	F("qk_norm", SL_GEN_BOOL, qk_norm, 0, 0, DEC,
	    N_("RMSNorm of every query and key head")),
	F("sinks", SL_GEN_BOOL, sinks, 0, 0, DEC,
	    N_("a learned softmax logit per head (attention sinks)")),
	F("window", SL_GEN_INT, window, 0, GEN_MAX_DIM, DEC,
	    N_("sliding-window attention: keys each query sees")),
	F("window_first", SL_GEN_COUNT, window_first, 0, GEN_MAX_LAYERS, DEC,
	    N_("the first layer whose attention slides (default 0)")),
	F("window_every", SL_GEN_COUNT, window_every, 0, GEN_MAX_LAYERS, DEC,
	    N_("from there, every this many layers slide (default 1)")),
	F("type_vocab", SL_GEN_INT, type_vocab, 0, GEN_MAX_DIM, FAM(SL_FAM_BERT),
	    N_("token types (segment embeddings; default 2)")),
	F("experts", SL_GEN_INT, experts, 0, GEN_MAX_EXPERTS, MOE,
	    N_("routed experts per MoE layer")),
	F("topk", SL_GEN_INT, topk, 0, GEN_MAX_EXPERTS, MOE,
	    N_("experts each token is routed to")),
	F("moe_ffn", SL_GEN_INT, moe_ffn, 0, GEN_MAX_DIM, MOE,
	    N_("hidden size of one expert (default: ffn)")),
	F("shared_ffn", SL_GEN_INT, shared_ffn, 0, GEN_MAX_DIM, MOE,
	    N_("hidden size of the shared experts together (default: none)")),
	F("shared_gate", SL_GEN_BOOL, shared_gate, 0, 0, MOE,
	    N_("a sigmoid gate on the shared experts' output")),
	F("router_bias", SL_GEN_BOOL, router_bias, 0, 0, MOE,
	    N_("a bias on the router's logits")),
	F("score_bias", SL_GEN_BOOL, score_bias, 0, 0, MOE,
	    N_("a per-expert bias used only to select experts")),
	F("expert_bias", SL_GEN_BOOL, expert_bias, 0, 0, MOE,
	    N_("biases inside every expert")),
	F("first_dense", SL_GEN_COUNT, first_dense, 0, GEN_MAX_LAYERS, MOE,
	    N_("the first layers have a dense MLP of ffn (default 0)")),
	F("moe_every", SL_GEN_COUNT, moe_every, 0, GEN_MAX_LAYERS, MOE,
	    /* xgettext:no-c-format */
	    N_("from there, layer l is MoE when l % moe_every == moe_phase (default 1)")),
	F("moe_phase", SL_GEN_COUNT, moe_phase, 0, GEN_MAX_LAYERS, MOE,
	    N_("see moe_every (default 0)")),
	F("capacity", SL_GEN_REAL, capacity, 0, 0, MOE,
	    N_("capacity factor: tokens an expert takes, over the balanced share (default: dropless)")),
	F("q_lora", SL_GEN_INT, q_lora, 0, GEN_MAX_DIM, DEC,
	    N_("latent attention: query compression rank (default: none)")),
	F("kv_lora", SL_GEN_INT, kv_lora, 0, GEN_MAX_DIM, DEC,
	    N_("latent attention: key/value compression rank (multi-head latent attention)")),
	F("qk_nope", SL_GEN_INT, qk_nope, 0, GEN_MAX_DIM, DEC,
	    N_("latent attention: query/key width per head without rotary embedding")),
	F("qk_rope", SL_GEN_INT, qk_rope, 0, GEN_MAX_DIM, DEC,
	    N_("latent attention: rotary width, one key shared by the heads")),
	F("v_head", SL_GEN_INT, v_head, 0, GEN_MAX_DIM, DEC,
	    N_("latent attention: value width per head")),
	{ NULL, 0, 0, 0, 0, 0, NULL }
};

const sl_gen_field *
sl_gen_field_find(const char *key)
{
	for (const sl_gen_field *f = sl_gen_fields; f->key != NULL; f++)
		if (strcmp(f->key, key) == 0)
			return f;
	return NULL;
}

/* The value of an integer field of c. */
static int64_t
field_int(const sl_gen_config *c, const sl_gen_field *f)
{
	const char *p = (const char *)c + f->off;

	if (f->type == SL_GEN_COUNT)
		return *(const int *)p;
	if (f->type == SL_GEN_INT)
		return *(const int64_t *)p;
	if (f->type == SL_GEN_BOOL)
		return *(const bool *)p;
	if (f->type == SL_GEN_TIE)
		return *(const sl_tie *)p;
	return 0;
}

static void
field_put_int(sl_gen_config *c, const sl_gen_field *f, int64_t v)
{
	char *p = (char *)c + f->off;

	if (f->type == SL_GEN_COUNT)
		*(int *)p = (int)v;
	else if (f->type == SL_GEN_INT)
		*(int64_t *)p = v;
}

int
sl_gen_field_set(sl_gen_config *c, const sl_gen_field *f, const char *text,
    sl_error *err)
{
	char *p = (char *)c + f->off;
	double v;

	switch (f->type) {
	case SL_GEN_BOOL:
	case SL_GEN_TIE:
		if (strcmp(text, "true") != 0 && strcmp(text, "false") != 0 &&
		    strcmp(text, "1") != 0 && strcmp(text, "0") != 0)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("%s: expected true or false, got \"%.32s\""), f->key, text);
		if (f->type == SL_GEN_BOOL)
			*(bool *)p = text[0] == 't' || text[0] == '1';
		else
			*(sl_tie *)p = text[0] == 't' || text[0] == '1' ?
			    SL_TIE_YES : SL_TIE_NO;
		return SL_OK;
	case SL_GEN_REAL:
		if (!sl_parse_number(text, &v) || v < 0 || v > 1e6)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("%s: expected a number of at least 0 (0: dropless), "
			    "got \"%.32s\""), f->key, text);
		*(double *)p = v;
		return SL_OK;
	default:
		if (!sl_parse_number(text, &v) || v != floor(v) ||
		    v < (double)f->min || v > (double)f->max)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("%s: expected an integer between %lld and %lld, got "
			    "\"%.32s\""), f->key, (long long)f->min,
			    (long long)f->max, text);
		field_put_int(c, f, (int64_t)v);
		return SL_OK;
	}
}

void
sl_gen_defaults(sl_family fam, sl_gen_config *c)
{
	memset(c, 0, sizeof *c);
	c->family = fam;
	snprintf(c->name, sizeof c->name, "%s-tiny",
	    ((int)fam >= 0 && fam < SL_FAM_COUNT) ? fam_names[fam] : "model");
	c->layers = 2;
	c->hidden = 64;
	c->heads = 4;
	c->kv_heads = 4;
	c->ffn = 256;
	c->vocab = 512;
	c->seq = 32;
	c->batch = 1;
	if (fam == SL_FAM_BERT)
		c->type_vocab = 2;
	if (fam == SL_FAM_LLAMA || fam == SL_FAM_MOE) {
		c->kv_heads = 2;
		c->ffn = 176;	/* 2/3 of 4h, rounded up to a multiple of 16 */
	}
	if (fam == SL_FAM_MOE) {
		c->experts = 4;
		c->topk = 2;
		c->moe_ffn = 64;
	}
}

void
sl_gen_family_defaults(sl_family fam, sl_gen_config *c)
{
	static const struct {
		const char *name;
		int layers;
		int64_t hidden, heads, kv_heads, ffn, vocab, seq;
	} real[] = {
		[SL_FAM_GPT] = { "gpt2", 12, 768, 12, 0, 0, 50257, 1024 },
		[SL_FAM_BERT] = { "bert-base", 12, 768, 12, 0, 0, 30522, 512 },
		[SL_FAM_LLAMA] = { "llama-2-7b", 32, 4096, 32, 0, 0, 32000, 4096 },
		/* Mixtral-8x7B (Jiang et al. 2024): 8 experts, top-2 */
		[SL_FAM_MOE] = { "mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 4096 },
	};

	sl_gen_defaults(fam, c);
	if ((int)fam < 0 || fam >= SL_FAM_COUNT)
		return;
	snprintf(c->name, sizeof c->name, "%s", real[fam].name);
	c->layers = real[fam].layers;
	c->hidden = real[fam].hidden;
	c->heads = c->kv_heads = real[fam].heads;
	if (real[fam].kv_heads > 0)
		c->kv_heads = real[fam].kv_heads;
	c->ffn = real[fam].ffn;
	c->vocab = real[fam].vocab;
	c->seq = real[fam].seq;
	c->batch = 1;
	if (fam == SL_FAM_MOE) {
		c->experts = 8;
		c->topk = 2;
		c->moe_ffn = 0;
	}
}

int64_t
sl_gen_ffn(sl_family fam, int64_t hidden)
{
	if (fam == SL_FAM_LLAMA || fam == SL_FAM_MOE) {
		int64_t f = 8 * hidden / 3;
		return (f + 255) / 256 * 256;
	}
	return 4 * hidden;
}

const char *
sl_family_name(sl_family fam)
{
	return (int)fam >= 0 && fam < SL_FAM_COUNT ? fam_names[fam] : "?";
}

/* Whether the head reads the token embedding table. */
static bool
gen_tied(const sl_gen_config *c)
{
	if (c->tie != SL_TIE_DEFAULT)
		return c->tie == SL_TIE_YES;
	return c->family == SL_FAM_GPT || c->family == SL_FAM_BERT;
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
	/* then every member the family's way does not give */
	for (const sl_gen_field *f = sl_gen_fields; gen != NULL && f->key != NULL; f++) {
		if (json_object_get(gen, f->key) != NULL)
			continue;
		if (f->type == SL_GEN_REAL) {
			double v = *(const double *)((const char *)c + f->off);
			if (v > 0)
				json_object_set_new(gen, f->key, json_real(v));
		} else if (f->type == SL_GEN_BOOL) {
			if (field_int(c, f))
				json_object_set_new(gen, f->key, json_true());
		} else if (f->type == SL_GEN_TIE) {
			if (c->tie != SL_TIE_DEFAULT)
				json_object_set_new(gen, f->key,
				    json_boolean(c->tie == SL_TIE_YES));
		} else if (field_int(c, f) != 0) {
			json_object_set_new(gen, f->key, json_integer(field_int(c, f)));
		}
	}
	if (c->family == SL_FAM_MOE)
		snprintf(desc, sizeof desc, "%s: %d layers, hidden %lld, %lld heads, "
		    "%lld experts (top-%lld), sequence %lld, vocabulary %lld",
		    fam_names[c->family], c->layers, (long long)c->hidden,
		    (long long)c->heads, (long long)c->experts, (long long)c->topk,
		    (long long)c->seq, (long long)c->vocab);
	else
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

/* Whether layer l of c is a mixture of experts. */
static bool
gen_moe_layer(const sl_gen_config *c, int l)
{
	if (c->family != SL_FAM_MOE || l < c->first_dense)
		return false;
	return c->moe_every <= 1 || l % c->moe_every == c->moe_phase;
}

/* Whether layer l's attention slides. */
static bool
gen_window_layer(const sl_gen_config *c, int l)
{
	int every = c->window_every > 0 ? c->window_every : 1;

	return c->window > 0 && l >= c->window_first &&
	    (l - c->window_first) % every == 0;
}

/* Tokens of one sample an expert takes: the balanced share s k / E, times
 * the capacity factor when there is one (Megatron-LM moe_utils.py,
 * get_capacity: ceil(tokens x topk / experts x capacity_factor)), at most
 * the sample's tokens. */
static int64_t
gen_capacity(const sl_gen_config *c)
{
	double share = (double)c->seq * (double)c->topk / (double)c->experts;
	int64_t cap;

	if (c->capacity > 0)
		share *= c->capacity;
	cap = (int64_t)ceil(share - 1e-9);
	if (cap < 1)
		cap = 1;
	return cap < c->seq ? cap : c->seq;
}

/* The field of c named key, for an error's *field. */
static int
gen_fail(const char **field, const char *key, sl_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int
gen_fail(const char **field, const char *key, sl_error *err, const char *fmt, ...)
{
	va_list ap;
	char msg[512];

	*field = key;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s", msg);
}

int
sl_gen_check(const sl_gen_config *c, const char **field, sl_error *err)
{
	int64_t kv = c->kv_heads > 0 ? c->kv_heads : c->heads;
	const char *dummy;

	if (field == NULL)
		field = &dummy;
	if ((int)c->family < 0 || c->family >= SL_FAM_COUNT)
		return gen_fail(field, "family", err,
		    _("unknown model family (expected gpt, bert, llama or moe)"));
	for (const sl_gen_field *f = sl_gen_fields; f->key != NULL; f++) {
		int64_t v = field_int(c, f);

		if (f->type == SL_GEN_REAL) {
			double x = *(const double *)((const char *)c + f->off);
			if (!(x >= 0 && x <= 1e6))
				return gen_fail(field, f->key, err,
				    _("%s must be 0 (dropless) or a positive factor"),
				    f->key);
			continue;
		}
		if (f->type != SL_GEN_INT && f->type != SL_GEN_COUNT)
			continue;
		/* min 0: 0 is the family's way */
		if (v == 0 && f->min == 0)
			continue;
		if (v < 1 || v > f->max)
			return gen_fail(field, f->key, err,
			    _("%s must be between 1 and %lld, got %lld"), f->key,
			    (long long)f->max, (long long)v);
	}
	if (c->batch < 1 || c->batch > GEN_MAX_DIM)
		return gen_fail(field, "batch", err,
		    _("batch must be between 1 and %lld, got %lld"),
		    (long long)GEN_MAX_DIM, (long long)c->batch);
	if (c->head_dim == 0 && c->kv_lora == 0 && c->hidden % c->heads != 0)
		return gen_fail(field, "heads", err,
		    _("hidden size %lld is not a multiple of %lld heads"),
		    (long long)c->hidden, (long long)c->heads);
	if (kv > c->heads || c->heads % kv != 0)
		return gen_fail(field, "kv_heads", err,
		    _("kv_heads %lld must divide heads %lld"), (long long)kv,
		    (long long)c->heads);
	if (c->kv_lora > 0) {
		static const char *const need[] = { "qk_nope", "qk_rope", "v_head" };
		for (size_t i = 0; i < SL_ARRAY_LEN(need); i++)
			if (field_int(c, sl_gen_field_find(need[i])) == 0)
				return gen_fail(field, need[i], err,
				    _("latent attention (kv_lora %lld) needs %s"),
				    (long long)c->kv_lora, need[i]);
		if (kv != c->heads)
			return gen_fail(field, "kv_heads", err,
			    _("latent attention has as many key/value heads as "
			    "heads (%lld)"), (long long)c->heads);
		if (c->qk_norm || c->sinks || c->head_dim || c->qkv_bias)
			return gen_fail(field, c->qk_norm ? "qk_norm" : c->sinks ?
			    "sinks" : c->head_dim ? "head_dim" : "qkv_bias", err,
			    _("%s does not apply to latent attention"), c->qk_norm ?
			    "qk_norm" : c->sinks ? "sinks" : c->head_dim ? "head_dim" :
			    "qkv_bias");
	} else if (c->q_lora || c->qk_nope || c->qk_rope || c->v_head) {
		return gen_fail(field, c->q_lora ? "q_lora" : c->qk_nope ? "qk_nope" :
		    c->qk_rope ? "qk_rope" : "v_head", err,
		    _("%s is a size of latent attention, which needs kv_lora"),
		    c->q_lora ? "q_lora" : c->qk_nope ? "qk_nope" :
		    c->qk_rope ? "qk_rope" : "v_head");
	}
	if (c->family == SL_FAM_MOE) {
		if (c->experts < 1)
			return gen_fail(field, "experts", err,
			    _("a mixture of experts needs experts (the routed "
			    "experts per MoE layer)"));
		if (c->topk < 1)
			return gen_fail(field, "topk", err,
			    _("a mixture of experts needs topk (the experts each "
			    "token is routed to)"));
		if (c->topk > c->experts)
			return gen_fail(field, "topk", err,
			    _("topk %lld is above the expert count %lld"),
			    (long long)c->topk, (long long)c->experts);
		if (c->moe_every > 1 && c->moe_phase >= c->moe_every)
			return gen_fail(field, "moe_phase", err,
			    _("moe_phase %d must be below moe_every %d"),
			    c->moe_phase, c->moe_every);
		if (c->first_dense > c->layers)
			return gen_fail(field, "first_dense", err,
			    _("first_dense %d is more than the %d layers"),
			    c->first_dense, c->layers);
		if (c->shared_gate && c->shared_ffn == 0)
			return gen_fail(field, "shared_gate", err,
			    _("shared_gate needs shared experts (shared_ffn)"));
	}
	if (c->family != SL_FAM_GPT && c->family != SL_FAM_BERT) {
		if ((c->window_first || c->window_every) && c->window == 0)
			return gen_fail(field, c->window_first ? "window_first" :
			    "window_every", err, _("%s needs window (the keys each "
			    "query sees)"), c->window_first ? "window_first" :
			    "window_every");
	}
	if ((c->family == SL_FAM_GPT || c->family == SL_FAM_BERT) && kv != c->heads)
		return gen_fail(field, "kv_heads", err,
		    _("the %s family has no grouped-query attention: kv_heads "
		    "must equal heads (%lld)"), fam_names[c->family],
		    (long long)c->heads);
	/* a member that means nothing to the family is not silently dropped */
	for (const sl_gen_field *f = sl_gen_fields; f->key != NULL; f++) {
		bool set = f->type == SL_GEN_REAL ?
		    *(const double *)((const char *)c + f->off) > 0 : field_int(c, f) != 0;
		if (set && !(f->families & FAM(c->family)))
			return gen_fail(field, f->key, err,
			    _("%s does not apply to the %s family"), f->key,
			    fam_names[c->family]);
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
gen_tensor4(gen_b *gb, const char *op, const char *suffix, sl_role role,
    sl_dtype dt, int rank, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
	int64_t dims[4] = { d0, d1, d2, d3 };
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
gen_tensor(gen_b *gb, const char *op, const char *suffix, sl_role role,
    sl_dtype dt, int rank, int64_t d0, int64_t d1, int64_t d2)
{
	return gen_tensor4(gb, op, suffix, role, dt, rank, d0, d1, d2, 0);
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

/* Attention of the GPT and BERT blocks: fused qkv, every head alike. */
static int
gen_attention(gen_b *gb, const sl_gen_config *c, int qkv, int64_t kv)
{
	int y = gen_act(gb, "attn", c->hidden);
	sl_op *o = gen_op(gb, "attn", SL_OP_ATTENTION, 1, &qkv, y);

	if (o != NULL) {
		o->heads = (int)c->heads;
		o->kv_heads = (int)kv;
		/* GPT and BERT drop attention probabilities; LLaMA has no dropout */
		o->p = c->family == SL_FAM_GPT || c->family == SL_FAM_BERT ? 0.1 : 0.0;
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

/*
 * The attention of a LLaMA-style block on its normalised input t: a fused
 * qkv of head_dim-wide heads (with the query and key norms' scales and
 * the sinks as parameters of the attention), or multi-head latent
 * attention (DeepSeek-V2, Hugging Face modeling_deepseek_v2.py): the query
 * through a low-rank q_a/q_b pair (or one matmul), the keys and values
 * through a kv_lora latent (kv_a, its norm, kv_b), and one rotary key
 * (k_rope) all heads share.  Returns the output projection's result.
 */
static int
gen_dec_attention(gen_b *gb, const sl_gen_config *c, int t, int l, int64_t kv)
{
	int64_t h = c->hidden, H = c->heads, d;
	int in[5], n = 0, y;
	sl_op *o;

	if (c->kv_lora > 0) {
		int64_t dqk = c->qk_nope + c->qk_rope;
		if (c->q_lora > 0) {
			in[0] = gen_linear(gb, "q_a", t, h, c->q_lora, false);
			in[0] = gen_norm(gb, "q_norm", in[0], c->q_lora, true);
			in[0] = gen_linear(gb, "q_b", in[0], c->q_lora, H * dqk, false);
		} else {
			in[0] = gen_linear(gb, "q", t, h, H * dqk, false);
		}
		in[1] = gen_linear(gb, "kv_a", t, h, c->kv_lora, false);
		in[1] = gen_norm(gb, "kv_norm", in[1], c->kv_lora, true);
		in[1] = gen_linear(gb, "kv_b", in[1], c->kv_lora,
		    H * (c->qk_nope + c->v_head), false);
		in[2] = gen_linear(gb, "k_rope", t, h, c->qk_rope, false);
		n = 3;
		d = c->v_head;
	} else {
		d = c->head_dim > 0 ? c->head_dim : h / H;
		in[n++] = gen_linear(gb, "qkv", t, h, (H + 2 * kv) * d, c->qkv_bias);
		if (c->qk_norm) {
			in[n++] = gen_param(gb, "attn", "q_norm", d, 0);
			in[n++] = gen_param(gb, "attn", "k_norm", d, 0);
		}
		if (c->sinks)
			in[n++] = gen_param(gb, "attn", "sinks", H, 0);
	}
	y = gen_act(gb, "attn", H * d);
	if ((o = gen_op(gb, "attn", SL_OP_ATTENTION, n, in, y)) != NULL) {
		o->heads = (int)H;
		o->kv_heads = (int)kv;
		o->p = 0.0;
		o->qk_norm = c->qk_norm;
		o->sinks = c->sinks;
		o->window = gen_window_layer(c, l) && c->window < c->seq ?
		    (int)c->window : 0;
	}
	return gen_linear(gb, "proj", y, H * d, h, c->out_bias);
}

/* A SwiGLU MLP of width f on t: silu(gate) * up, down. */
static int
gen_swiglu(gen_b *gb, const char *prefix, int t, int64_t h, int64_t f, bool bias)
{
	char n1[32], n2[32], n3[32], n4[32], n5[32];
	int gate, up;

	snprintf(n1, sizeof n1, "%sgate", prefix);
	snprintf(n2, sizeof n2, "%sup", prefix);
	snprintf(n3, sizeof n3, "%ssilu", prefix);
	snprintf(n4, sizeof n4, "%smul", prefix);
	snprintf(n5, sizeof n5, "%sdown", prefix);
	gate = gen_linear(gb, n1, t, h, f, bias);
	up = gen_linear(gb, n2, t, h, f, bias);
	t = gen_elem(gb, n3, SL_OP_SILU, gate, -1, f);
	t = gen_elem(gb, n4, SL_OP_MUL, t, up, f);
	return gen_linear(gb, n5, t, f, h, bias);
}

/*
 * A mixture-of-experts MLP on t (doc/cost-model.md, "Mixture of
 * experts"): the gate's logits over the experts, the router's top-k,
 * dispatch into [b, E, c, h], the experts' grouped SwiGLU, combine; and
 * the shared experts, with their sigmoid gate, added to it.
 */
static int
gen_moe(gen_b *gb, const sl_gen_config *c, int t)
{
	int64_t h = c->hidden, E = c->experts, k = c->topk;
	int64_t f = c->moe_ffn > 0 ? c->moe_ffn : c->ffn;
	int64_t cap = gen_capacity(c);
	int in[5], logits, w, d, y, out;
	sl_op *o;

	logits = gen_linear(gb, "moe_gate", t, h, E, c->router_bias);
	in[0] = logits;
	if (c->score_bias)
		in[1] = gen_param(gb, "router", "bias", E, 0);
	w = gen_act(gb, "router", k);
	gen_op(gb, "router", SL_OP_ROUTER, c->score_bias ? 2 : 1, in, w);
	in[0] = t;
	d = gen_tensor4(gb, "dispatch", "out", SL_ROLE_ACTIVATION, SL_DT_BF16, 4,
	    gb->b, E, cap, h);
	if ((o = gen_op(gb, "dispatch", SL_OP_DISPATCH, 1, in, d)) != NULL) {
		o->topk = (int)k;
		o->capacity = c->capacity;
	}
	in[0] = d;
	in[1] = gen_tensor(gb, "experts", "w1", SL_ROLE_PARAMETER, SL_DT_BF16, 3,
	    E, h, 2 * f);
	in[2] = gen_tensor(gb, "experts", "w2", SL_ROLE_PARAMETER, SL_DT_BF16, 3,
	    E, f, h);
	if (c->expert_bias) {
		in[3] = gen_param(gb, "experts", "b1", E, 2 * f);
		in[4] = gen_param(gb, "experts", "b2", E, h);
	}
	y = gen_tensor4(gb, "experts", "out", SL_ROLE_ACTIVATION, SL_DT_BF16, 4,
	    gb->b, E, cap, h);
	if ((o = gen_op(gb, "experts", SL_OP_EXPERTS, c->expert_bias ? 5 : 3, in,
	    y)) != NULL) {
		o->topk = (int)k;
		o->gated = true;
	}
	in[0] = y;
	in[1] = w;
	out = gen_act(gb, "combine", h);
	gen_op(gb, "combine", SL_OP_COMBINE, 2, in, out);
	if (c->shared_ffn > 0) {
		int sh = gen_swiglu(gb, "shared_", t, h, c->shared_ffn, false);
		if (c->shared_gate) {
			/* Qwen2-MoE: sigmoid(x W_g) scales the shared experts */
			int g = gen_linear(gb, "shared_score", t, h, 1, false);
			g = gen_elem(gb, "shared_sigmoid", SL_OP_SIGMOID, g, -1, 1);
			sh = gen_elem(gb, "shared_scale", SL_OP_MUL, sh, g, h);
		}
		out = gen_elem(gb, "moe_add", SL_OP_ADD, out, sh, h);
	}
	return out;
}

/* One LLaMA-style block: RMSNorm, attention, SwiGLU MLP or a mixture. */
static int
gen_llama_layer(gen_b *gb, const sl_gen_config *c, int x, int l, int64_t ffn,
    int64_t kv)
{
	int64_t h = c->hidden;
	int t, r;

	t = gen_norm(gb, "ln1", x, h, true);
	t = gen_dec_attention(gb, c, t, l, kv);
	r = gen_elem(gb, "add1", SL_OP_ADD, x, t, h);
	t = gen_norm(gb, "ln2", r, h, true);
	if (gen_moe_layer(c, l))
		t = gen_moe(gb, c, t);
	else
		t = gen_swiglu(gb, "", t, h, ffn, c->mlp_bias);
	return gen_elem(gb, "add2", SL_OP_ADD, r, t, h);
}

sl_graph *
sl_gen(const sl_gen_config *c, sl_error *err)
{
	gen_b gb;
	const char *field;
	int64_t h, ffn, kv;
	int tokens, wte, x, in[3];
	bool tied;
	sl_op *o;
	char desc[1024];
	size_t dl;

	if (sl_gen_check(c, &field, err) != SL_OK)
		return NULL;
	h = c->hidden;
	kv = c->kv_heads > 0 ? c->kv_heads : c->heads;
	ffn = c->ffn > 0 ? c->ffn : sl_gen_ffn(c->family, h);
	tied = gen_tied(c);

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
	if (c->family == SL_FAM_GPT || c->family == SL_FAM_BERT)
		in[2] = gen_tensor(&gb, "wpe", "", SL_ROLE_PARAMETER, SL_DT_BF16, 2,
		    gb.s, h, 0);
	x = gen_act(&gb, "embed", h);
	gen_op(&gb, "embed", SL_OP_EMBEDDING, c->family == SL_FAM_GPT ||
	    c->family == SL_FAM_BERT ? 3 : 2, in, x);
	if (c->family == SL_FAM_BERT && c->type_vocab > 0) {
		/* BERT adds each token's segment embedding (Hugging Face
		 * BertEmbeddings: token_type_embeddings) */
		int te;
		in[0] = gen_tensor(&gb, "token_types", "", SL_ROLE_INPUT, SL_DT_I32,
		    2, gb.b, gb.s, 0);
		in[1] = gen_tensor(&gb, "wtt", "", SL_ROLE_PARAMETER, SL_DT_BF16, 2,
		    c->type_vocab, h, 0);
		te = gen_act(&gb, "embed_type", h);
		gen_op(&gb, "embed_type", SL_OP_EMBEDDING, 2, in, te);
		x = gen_elem(&gb, "embed_add", SL_OP_ADD, x, te, h);
	}
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
		default:
			x = gen_llama_layer(&gb, c, x, l, ffn, kv);
			break;
		}
	}
	gb.layer[0] = '\0';

	switch (c->family) {
	case SL_FAM_GPT:
		x = gen_norm(&gb, "ln_f", x, h, false);
		break;
	case SL_FAM_BERT:
		/* masked-LM head: dense, GELU, layernorm, decoder with bias */
		x = gen_linear(&gb, "mlm_fc", x, h, h, true);
		x = gen_elem(&gb, "mlm_gelu", SL_OP_GELU, x, -1, h);
		x = gen_norm(&gb, "mlm_ln", x, h, false);
		break;
	default:
		x = gen_norm(&gb, "ln_f", x, h, true);
		break;
	}
	if (tied) {
		/* the same tensor, read as [h, V] */
		in[0] = x;
		in[1] = wte;
		if (c->family == SL_FAM_BERT)
			in[2] = gen_param(&gb, "lm_head", "b", c->vocab, 0);
		x = gen_act(&gb, "lm_head", c->vocab);
		if ((o = gen_op(&gb, "lm_head", SL_OP_MATMUL, c->family ==
		    SL_FAM_BERT ? 3 : 2, in, x)) != NULL)
			o->transpose_w = true;
	} else {
		x = gen_linear(&gb, "lm_head", x, h, c->vocab, c->family == SL_FAM_BERT);
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
	/* Identity of a generated graph: its configuration, canonically (the
	 * members the family's way leaves at 0 only when set, so that the
	 * identity of the models before they existed stays). */
	dl = (size_t)snprintf(desc, sizeof desc, "shardlab-gen 1 %s layers=%d "
	    "hidden=%lld heads=%lld kv_heads=%lld ffn=%lld vocab=%lld seq=%lld "
	    "batch=%lld", fam_names[c->family], c->layers, (long long)h,
	    (long long)c->heads, (long long)kv, (long long)ffn,
	    (long long)c->vocab, (long long)c->seq, (long long)c->batch);
	for (const sl_gen_field *f = sl_gen_fields + GEN_BASE_FIELDS;
	    f->key != NULL && dl < sizeof desc; f++) {
		if (field_int(c, f) == 0 && f->type != SL_GEN_REAL)
			continue;
		if (f->type == SL_GEN_REAL) {
			double v = *(const double *)((const char *)c + f->off);
			if (v > 0)
				dl += (size_t)snprintf(desc + dl, sizeof desc - dl,
				    " %s=%.17g", f->key, v);
		} else {
			dl += (size_t)snprintf(desc + dl, sizeof desc - dl, " %s=%lld",
			    f->key, (long long)field_int(c, f));
		}
	}
	if (dl >= sizeof desc)
		dl = sizeof desc - 1;
	sl_sha256_hex(desc, dl, gb.g->sha256);
	free(gb.g->source);
	gb.g->source = sl_xmalloc(8 + strlen(fam_names[c->family]));
	sprintf(gb.g->source, "gen:%s", fam_names[c->family]);
	return gb.g;
}

/* ------------------------------------------------- Hugging Face config.json */

/*
 * The model types read, what each means, and the defaults of its
 * transformers configuration class for the keys a file may leave out.
 */
typedef enum hf_kind {
	HF_LLAMA, HF_MISTRAL, HF_QWEN2, HF_QWEN3, HF_GPT2, HF_BERT, HF_MIXTRAL,
	HF_QWEN2_MOE, HF_QWEN3_MOE, HF_DEEPSEEK_V2, HF_DEEPSEEK_V3, HF_GPT_OSS
} hf_kind;

static const struct hf_type {
	const char *type;
	sl_family fam;
	hf_kind kind;
} hf_types[] = {
	{ "llama", SL_FAM_LLAMA, HF_LLAMA }, { "mistral", SL_FAM_LLAMA, HF_MISTRAL },
	{ "qwen2", SL_FAM_LLAMA, HF_QWEN2 }, { "qwen3", SL_FAM_LLAMA, HF_QWEN3 },
	{ "gpt2", SL_FAM_GPT, HF_GPT2 }, { "bert", SL_FAM_BERT, HF_BERT },
	{ "mixtral", SL_FAM_MOE, HF_MIXTRAL },
	{ "qwen2_moe", SL_FAM_MOE, HF_QWEN2_MOE },
	{ "qwen3_moe", SL_FAM_MOE, HF_QWEN3_MOE },
	{ "deepseek_v2", SL_FAM_MOE, HF_DEEPSEEK_V2 },
	{ "deepseek_v3", SL_FAM_MOE, HF_DEEPSEEK_V3 },
	{ "gpt_oss", SL_FAM_MOE, HF_GPT_OSS },
};
#define HF_TYPE_LIST "llama, mistral, qwen2, qwen3, gpt2, bert, mixtral, " \
	"qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3, gpt_oss"

typedef struct hf_ctx {
	const char *path;
	json_t *root;
	const jp_doc *doc;
	sl_error *err;
	const char *type;
} hf_ctx;

/* Where key's value is, or the document's start. */
static const jp_node *
hf_at(const hf_ctx *h, const char *key)
{
	const jp_node *p = key != NULL ? jp_member(jp_root(h->doc), key) : NULL;

	return p != NULL ? p : jp_root(h->doc);
}

static int
hf_fail(const hf_ctx *h, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int
hf_fail(const hf_ctx *h, const char *key, const char *fmt, ...)
{
	const jp_node *p = hf_at(h, key);
	va_list ap;
	char msg[768];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return sl_error_set(h->err, SL_EINPUT, h->path, p->line, p->col, "%s", msg);
}

/* A short description of a JSON value for a message. */
static const char *
hf_describe(json_t *j, char *got, size_t len)
{
	if (json_is_integer(j))
		snprintf(got, len, "%lld", (long long)json_integer_value(j));
	else if (json_is_string(j))
		snprintf(got, len, _("the string \"%.32s\""), json_string_value(j));
	else if (json_is_real(j))
		snprintf(got, len, "%g", json_real_value(j));
	else
		snprintf(got, len, "%s", json_is_boolean(j) ? _("a boolean") :
		    json_is_array(j) ? _("an array") : json_is_null(j) ? "null" :
		    _("an object"));
	return got;
}

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

			return sl_error_set(h->err, SL_EINPUT, h->path,
			    p ? p->line : 0, p ? p->col : 0,
			    _("\"%s\": expected a positive integer (at most %lld), got %s"),
			    *keys, (long long)GEN_MAX_DIM, hf_describe(j, got, sizeof got));
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

/* One key as a positive integer, or a count that may be 0 (zero_ok). */
static int
hf_one(hf_ctx *h, const char *key, bool zero_ok, int64_t *v)
{
	json_t *j = json_object_get(h->root, key);
	const char *const keys[] = { key, NULL };
	char got[64];

	if (zero_ok && json_is_integer(j) && json_integer_value(j) == 0) {
		*v = 0;
		return SL_OK;
	}
	if (j != NULL && !json_is_null(j) && !json_is_integer(j))
		return hf_fail(h, key, _("\"%s\": expected an integer, got %s"), key,
		    hf_describe(j, got, sizeof got));
	return hf_int(h, keys, v);
}

/* A boolean key: absent or null leaves *v. */
static int
hf_bool(hf_ctx *h, const char *key, bool *v)
{
	json_t *j = json_object_get(h->root, key);
	char got[64];

	if (j == NULL || json_is_null(j))
		return SL_OK;
	if (!json_is_boolean(j))
		return hf_fail(h, key, _("\"%s\": expected true or false, got %s"), key,
		    hf_describe(j, got, sizeof got));
	*v = json_is_true(j);
	return SL_OK;
}

/* Whether key is present and not null. */
static bool
hf_present(const hf_ctx *h, const char *key)
{
	json_t *j = json_object_get(h->root, key);

	return j != NULL && !json_is_null(j);
}

/* Whether one of keys is present (and not null). */
static bool
hf_has(const hf_ctx *h, const char *const *keys)
{
	for (; *keys != NULL; keys++)
		if (hf_present(h, *keys))
			return true;
	return false;
}

/* A key the model type must give. */
static int
hf_need(hf_ctx *h, const char *key, const char *what)
{
	if (hf_present(h, key))
		return SL_OK;
	return hf_fail(h, NULL, _("missing \"%s\": a %s config must give %s"), key,
	    h->type, what);
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

/*
 * "layer_types": per layer "full_attention" or "sliding_attention"
 * (transformers' configs of Qwen2, Mistral, GPT-OSS write it).  What
 * shardlab models is a window from one layer on, every so many layers:
 * any other pattern is refused, naming the key.
 */
static int
hf_layer_types(hf_ctx *h, sl_gen_config *c, int layers, bool *given)
{
	json_t *lt = json_object_get(h->root, "layer_types");
	int first = -1, every = 0;
	size_t n;

	*given = false;
	if (lt == NULL || json_is_null(lt))
		return SL_OK;
	if (!json_is_array(lt))
		return hf_fail(h, "layer_types", _("\"layer_types\": expected a list "
		    "of \"full_attention\" and \"sliding_attention\""));
	n = json_array_size(lt);
	if (layers > 0 && n != (size_t)layers)
		return hf_fail(h, "layer_types", _("\"layer_types\" lists %zu layers, "
		    "the model has %d"), n, layers);
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(lt, i);
		const char *t = json_is_string(e) ? json_string_value(e) : "";
		if (strcmp(t, "sliding_attention") == 0) {
			if (first < 0)
				first = (int)i;
			else if (every == 0)
				every = (int)i - first;
		} else if (strcmp(t, "full_attention") != 0) {
			return hf_fail(h, "layer_types", _("\"layer_types\": layer %zu "
			    "is \"%.32s\"; shardlab models full_attention and "
			    "sliding_attention"), i, t);
		}
	}
	*given = true;
	if (first < 0) {
		c->window = 0;
		return SL_OK;
	}
	for (size_t i = 0; i < n; i++) {
		const char *t = json_string_value(json_array_get(lt, i));
		bool slides = (int)i >= first && (every == 0 ?
		    (int)i == first || false : ((int)i - first) % every == 0);
		if (every == 0 && (int)i > first)
			slides = false;
		if (slides != (strcmp(t, "sliding_attention") == 0))
			return hf_fail(h, "layer_types", _("\"layer_types\": the "
			    "sliding layers are not every n-th from the first; "
			    "shardlab models that pattern only (layer %zu)"), i);
	}
	c->window_first = first;
	/* one sliding layer: a period past the last layer */
	c->window_every = every > 0 ? every : (int)n;
	if (c->window_first == 0 && c->window_every == 1)
		c->window_first = c->window_every = 0;
	return SL_OK;
}

/*
 * Keys that change a model's sizes, memory or work and that the model type
 * does not have: present with any value but the neutral one, they are
 * refused by name rather than read as a dense model of the same sizes.
 */
static int
hf_refuse_unmodelled(hf_ctx *h, const struct hf_type *t)
{
	static const char *const expert_keys[] = { "num_local_experts",
	    "num_experts", "n_routed_experts", NULL };
	json_t *j;

	if (t->fam != SL_FAM_MOE)
		for (const char *const *k = expert_keys; *k != NULL; k++) {
			j = json_object_get(h->root, *k);
			if (json_is_integer(j) && json_integer_value(j) > 0)
				return hf_fail(h, *k, _("\"%s\": model_type %s with "
				    "experts is not modelled: a mixture of experts is "
				    "read from model_type mixtral, qwen2_moe, qwen3_moe, "
				    "deepseek_v2, deepseek_v3 or gpt_oss, or generated by "
				    "shardlab gen moe"), *k, h->type);
		}
	if (t->kind != HF_DEEPSEEK_V2 && t->kind != HF_DEEPSEEK_V3 &&
	    hf_present(h, "kv_lora_rank"))
		return hf_fail(h, "kv_lora_rank", _("\"kv_lora_rank\": latent "
		    "attention under model_type %s is not modelled (it is read "
		    "from deepseek_v2 and deepseek_v3)"), h->type);
	j = json_object_get(h->root, "mlp_only_layers");
	if (j != NULL && !json_is_null(j) && !(json_is_array(j) &&
	    json_array_size(j) == 0))
		return hf_fail(h, "mlp_only_layers", _("\"mlp_only_layers\": dense "
		    "layers at chosen places are not modelled (first_dense and "
		    "moe_every are: use shardlab gen moe)"));
	j = json_object_get(h->root, "position_embedding_type");
	if (json_is_string(j) && strcmp(json_string_value(j), "absolute") != 0)
		return hf_fail(h, "position_embedding_type", _("\"position_embedding_"
		    "type\": \"%.32s\" is not modelled (absolute is)"),
		    json_string_value(j));
	if (json_is_true(json_object_get(h->root, "add_cross_attention")) ||
	    json_is_true(json_object_get(h->root, "is_encoder_decoder")))
		return hf_fail(h, json_is_true(json_object_get(h->root,
		    "add_cross_attention")) ? "add_cross_attention" :
		    "is_encoder_decoder", _("cross-attention (an encoder-decoder) "
		    "is not modelled"));
	if (t->kind != HF_LLAMA && json_is_true(json_object_get(h->root, "mlp_bias")))
		return hf_fail(h, "mlp_bias", _("\"mlp_bias\": MLP biases under "
		    "model_type %s are not modelled (llama's are)"), h->type);
	if ((t->fam == SL_FAM_GPT || t->fam == SL_FAM_BERT || t->kind == HF_LLAMA) &&
	    hf_present(h, "sliding_window"))
		return hf_fail(h, "sliding_window", _("\"sliding_window\" under "
		    "model_type %s is not modelled (mistral's, qwen2's, qwen3's and "
		    "gpt_oss's are)"), h->type);
	return SL_OK;
}

/* The sliding window, from the keys of each type (transformers' rules:
 * Mistral and Mixtral slide every layer, Qwen2 and Qwen3 only with
 * use_sliding_window and from max_window_layers on). */
static int
hf_window(hf_ctx *h, const struct hf_type *t, sl_gen_config *c, int layers)
{
	int64_t w = 0, mwl = 0;
	bool use = false, given;

	/* MistralConfig's default window is 4096; the others' none */
	if (t->kind == HF_MISTRAL && !json_object_get(h->root, "sliding_window"))
		w = 4096;
	if (t->kind == HF_GPT_OSS && !json_object_get(h->root, "sliding_window"))
		w = 128;
	if (hf_one(h, "sliding_window", false, &w))
		return SL_EINPUT;
	switch (t->kind) {
	case HF_MISTRAL:
	case HF_MIXTRAL:
		c->window = w;
		break;
	case HF_QWEN2:
	case HF_QWEN3:
	case HF_QWEN2_MOE:
	case HF_QWEN3_MOE:
		if (hf_bool(h, "use_sliding_window", &use) ||
		    hf_one(h, "max_window_layers", true, &mwl))
			return SL_EINPUT;
		if (use && w > 0) {
			if (mwl > GEN_MAX_LAYERS)
				mwl = GEN_MAX_LAYERS;
			c->window = w;
			c->window_first = (int)mwl;
		}
		break;
	case HF_GPT_OSS:
		/* GptOssConfig: sliding and full attention alternate */
		c->window = w;
		c->window_first = 0;
		c->window_every = 2;
		break;
	default:
		break;
	}
	if (hf_layer_types(h, c, layers, &given))
		return SL_EINPUT;
	if (given && c->window_every + c->window_first == 0 && w > 0)
		c->window = w;		/* every layer slides */
	else if (given && c->window_every > 0)
		c->window = w;
	if (c->window == 0)
		c->window_first = c->window_every = 0;
	return SL_OK;
}

/* The mixture of experts of the MoE types. */
static int
hf_moe(hf_ctx *h, const struct hf_type *t, sl_gen_config *c)
{
	int64_t v = 0;

	switch (t->kind) {
	case HF_MIXTRAL:
	case HF_GPT_OSS: {
		static const char *const k_e[] = { "num_local_experts", NULL };
		static const char *const k_k[] = { "num_experts_per_tok",
		    "experts_per_token", NULL };
		if (hf_need(h, "num_local_experts", _("the number of experts")) ||
		    hf_int(h, k_e, &c->experts))
			return SL_EINPUT;
		if (!hf_has(h, k_k))
			return hf_need(h, "num_experts_per_tok",
			    _("the experts each token is routed to"));
		if (hf_int(h, k_k, &c->topk))
			return SL_EINPUT;
		if (t->kind == HF_GPT_OSS) {
			/* GptOssTopKRouter and GptOssExperts: biases */
			c->router_bias = true;
			c->expert_bias = true;
		}
		return SL_OK;
	}
	case HF_QWEN2_MOE:
	case HF_QWEN3_MOE:
		if (hf_need(h, "num_experts", _("the number of experts")) ||
		    hf_one(h, "num_experts", false, &c->experts) ||
		    hf_need(h, "num_experts_per_tok",
		    _("the experts each token is routed to")) ||
		    hf_one(h, "num_experts_per_tok", false, &c->topk) ||
		    hf_need(h, "moe_intermediate_size", _("the experts' hidden size")) ||
		    hf_one(h, "moe_intermediate_size", false, &c->moe_ffn))
			return SL_EINPUT;
		v = 1;
		if (hf_one(h, "decoder_sparse_step", false, &v))
			return SL_EINPUT;
		if (v > GEN_MAX_LAYERS)
			v = GEN_MAX_LAYERS;
		/* transformers: layer l is sparse when (l + 1) % step == 0 */
		c->moe_every = v > 1 ? (int)v : 0;
		c->moe_phase = v > 1 ? (int)v - 1 : 0;
		if (t->kind == HF_QWEN2_MOE) {
			v = 0;
			if (hf_one(h, "shared_expert_intermediate_size", true, &v))
				return SL_EINPUT;
			c->shared_ffn = v;
			c->shared_gate = v > 0;
		}
		return SL_OK;
	case HF_DEEPSEEK_V2:
	case HF_DEEPSEEK_V3:
		if (hf_need(h, "n_routed_experts", _("the number of routed experts")) ||
		    hf_one(h, "n_routed_experts", false, &c->experts) ||
		    hf_need(h, "num_experts_per_tok",
		    _("the experts each token is routed to")) ||
		    hf_one(h, "num_experts_per_tok", false, &c->topk) ||
		    hf_need(h, "moe_intermediate_size", _("the experts' hidden size")) ||
		    hf_one(h, "moe_intermediate_size", false, &c->moe_ffn))
			return SL_EINPUT;
		v = 0;
		if (hf_one(h, "n_shared_experts", true, &v))
			return SL_EINPUT;
		c->shared_ffn = sl_mul_sat(v, c->moe_ffn);
		v = 0;
		if (hf_one(h, "first_k_dense_replace", true, &v))
			return SL_EINPUT;
		c->first_dense = (int)(v > GEN_MAX_LAYERS ? GEN_MAX_LAYERS + 1 : v);
		v = 1;
		if (hf_one(h, "moe_layer_freq", false, &v))
			return SL_EINPUT;
		/* modeling_deepseek: MoE when l >= first_k_dense_replace and
		 * l % moe_layer_freq == 0 */
		c->moe_every = v > 1 ? (int)(v > GEN_MAX_LAYERS ? GEN_MAX_LAYERS : v) : 0;
		c->moe_phase = 0;
		{
			/* DeepSeek-V3's aux-loss-free routing selects with a
			 * per-expert bias (e_score_correction_bias) */
			json_t *tm = json_object_get(h->root, "topk_method");
			c->score_bias = json_is_string(tm) &&
			    strcmp(json_string_value(tm), "noaux_tc") == 0;
		}
		return SL_OK;
	default:
		return SL_OK;
	}
}

/* Multi-head latent attention (DeepSeek-V2/V3). */
static int
hf_mla(hf_ctx *h, sl_gen_config *c)
{
	static const struct {
		const char *key;
		size_t off;
		bool need;
	} k[] = {
		{ "q_lora_rank", offsetof(sl_gen_config, q_lora), false },
		{ "kv_lora_rank", offsetof(sl_gen_config, kv_lora), true },
		{ "qk_nope_head_dim", offsetof(sl_gen_config, qk_nope), true },
		{ "qk_rope_head_dim", offsetof(sl_gen_config, qk_rope), true },
		{ "v_head_dim", offsetof(sl_gen_config, v_head), true },
	};

	for (size_t i = 0; i < SL_ARRAY_LEN(k); i++) {
		int64_t *v = (int64_t *)((char *)c + k[i].off);
		if (k[i].need && hf_need(h, k[i].key,
		    _("the sizes of its multi-head latent attention")))
			return SL_EINPUT;
		if (hf_one(h, k[i].key, false, v))
			return SL_EINPUT;
	}
	c->kv_heads = c->heads;		/* latent attention: one per query head */
	return SL_OK;
}

/* The Hugging Face key a generator field came from, for errors. */
static const char *
hf_key_of(const hf_ctx *h, const char *field)
{
	static const struct { const char *f; const char *const k[4]; } m[] = {
		{ "hidden", { "hidden_size", "n_embd" } },
		{ "heads", { "num_attention_heads", "n_head" } },
		{ "kv_heads", { "num_key_value_heads" } },
		{ "ffn", { "intermediate_size", "n_inner" } },
		{ "vocab", { "vocab_size" } },
		{ "seq", { "max_position_embeddings", "n_positions", "n_ctx" } },
		{ "layers", { "num_hidden_layers", "n_layer" } },
		{ "head_dim", { "head_dim" } },
		{ "experts", { "num_local_experts", "num_experts", "n_routed_experts" } },
		{ "topk", { "num_experts_per_tok", "experts_per_token" } },
		{ "moe_ffn", { "moe_intermediate_size" } },
		{ "shared_ffn", { "shared_expert_intermediate_size", "n_shared_experts" } },
		{ "first_dense", { "first_k_dense_replace" } },
		{ "moe_every", { "decoder_sparse_step", "moe_layer_freq" } },
		{ "moe_phase", { "decoder_sparse_step", "moe_layer_freq" } },
		{ "window", { "sliding_window", "layer_types" } },
		{ "window_first", { "max_window_layers", "layer_types" } },
		{ "type_vocab", { "type_vocab_size" } },
		{ "q_lora", { "q_lora_rank" } },
		{ "kv_lora", { "kv_lora_rank" } },
		{ "qk_nope", { "qk_nope_head_dim" } },
		{ "qk_rope", { "qk_rope_head_dim" } },
		{ "v_head", { "v_head_dim" } },
	};

	for (size_t i = 0; i < SL_ARRAY_LEN(m); i++)
		if (strcmp(m[i].f, field) == 0)
			for (int j = 0; j < 4 && m[i].k[j] != NULL; j++)
				if (jp_member(jp_root(h->doc), m[i].k[j]) != NULL)
					return m[i].k[j];
	return NULL;
}

/* The keys of each size, synonyms after the Hugging Face name. */
static const char *const k_hidden[] = { "hidden_size", "n_embd", NULL };
static const char *const k_layers[] = { "num_hidden_layers", "n_layer", NULL };
static const char *const k_heads[] = { "num_attention_heads", "n_head", NULL };
static const char *const k_kv[] = { "num_key_value_heads", NULL };
static const char *const k_ffn[] = { "intermediate_size", "n_inner", NULL };
static const char *const k_vocab[] = { "vocab_size", NULL };
static const char *const k_seq[] = { "max_position_embeddings",
    "n_positions", "n_ctx", NULL };

/* The config's "model_type": its row of hf_types, or NULL with the error. */
static const struct hf_type *
hf_type(hf_ctx *h)
{
	const jp_doc *doc = h->doc;
	json_t *mt = json_object_get(h->root, "model_type");
	const jp_node *mtp = jp_member(jp_root(doc), "model_type");

	if (mt == NULL) {
		sl_error_set(h->err, SL_EINPUT, h->path, jp_root(doc)->line,
		    jp_root(doc)->col, _("missing \"model_type\" (expected one of %s)"),
		    HF_TYPE_LIST);
		return NULL;
	}
	if (!json_is_string(mt)) {
		sl_error_set(h->err, SL_EINPUT, h->path, mtp->line, mtp->col,
		    _("\"model_type\" must be a string such as \"llama\""));
		return NULL;
	}
	for (size_t ti = 0; ti < SL_ARRAY_LEN(hf_types); ti++)
		if (strcmp(json_string_value(mt), hf_types[ti].type) == 0)
			return &hf_types[ti];
	sl_error_set(h->err, SL_EINPUT, h->path, mtp->line, mtp->col,
	    _("model_type \"%.40s\" is not supported (expected one of %s)"),
	    json_string_value(mt), HF_TYPE_LIST);
	return NULL;
}

/* The sizes every family has into c (its family's defaults already there). */
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
	if (layers > GEN_MAX_LAYERS)
		return hf_fail(h, hf_key_of(h, "layers"),
		    _("expected at most %d layers, got %lld"), GEN_MAX_LAYERS,
		    (long long)layers);
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

/*
 * What the type's blocks are beyond the sizes: head width, tied
 * embeddings, biases, norms, sinks, token types (the defaults of the
 * type's transformers configuration class for keys left out).
 */
static int
hf_blocks(hf_ctx *h, const struct hf_type *t, sl_gen_config *c)
{
	int64_t hd = 0;
	bool b, tied;

	/* the width of a head, where the type takes one (transformers:
	 * getattr(config, "head_dim", hidden_size // num_attention_heads);
	 * GptOssConfig's default is 64) */
	if (t->fam == SL_FAM_LLAMA || t->fam == SL_FAM_MOE) {
		if (t->kind == HF_GPT_OSS)
			hd = 64;
		if (hf_one(h, "head_dim", false, &hd))
			return SL_EINPUT;
		if (hd > 0 && hd * c->heads != c->hidden)
			c->head_dim = hd;
	}
	/* tie_word_embeddings: the config class's default when absent
	 * (PretrainedConfig's true for GPT-2 and BERT, false for the others) */
	tied = t->fam == SL_FAM_GPT || t->fam == SL_FAM_BERT;
	if (hf_bool(h, "tie_word_embeddings", &tied))
		return SL_EINPUT;
	if (tied != (t->fam == SL_FAM_GPT || t->fam == SL_FAM_BERT))
		c->tie = tied ? SL_TIE_YES : SL_TIE_NO;
	/* biases: Qwen2's q, k and v always (Qwen2Attention); attention_bias
	 * gives q, k, v and o (Llama, Qwen3, DeepSeek, GPT-OSS: default true) */
	if (t->kind == HF_QWEN2 || t->kind == HF_QWEN2_MOE)
		c->qkv_bias = true;
	if (t->kind == HF_LLAMA || t->kind == HF_QWEN3 || t->kind == HF_QWEN3_MOE ||
	    t->kind == HF_DEEPSEEK_V2 || t->kind == HF_DEEPSEEK_V3 ||
	    t->kind == HF_GPT_OSS) {
		b = t->kind == HF_GPT_OSS;
		if (hf_bool(h, "attention_bias", &b))
			return SL_EINPUT;
		if (b && (t->kind == HF_DEEPSEEK_V2 || t->kind == HF_DEEPSEEK_V3))
			return hf_fail(h, "attention_bias", _("\"attention_bias\": "
			    "biases of latent attention are not modelled"));
		c->qkv_bias = c->out_bias = b;
	}
	if (t->kind == HF_LLAMA && hf_bool(h, "mlp_bias", &c->mlp_bias))
		return SL_EINPUT;
	/* Qwen3's RMSNorm of each query and key head; GPT-OSS's sinks */
	c->qk_norm = t->kind == HF_QWEN3 || t->kind == HF_QWEN3_MOE;
	c->sinks = t->kind == HF_GPT_OSS;
	if (t->fam == SL_FAM_BERT) {
		int64_t tv = 2;
		if (hf_one(h, "type_vocab_size", true, &tv))
			return SL_EINPUT;
		c->type_vocab = tv;
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

/* sl_gen_check of what was read, its error at the key the bad size came
 * from. */
static int
hf_check(hf_ctx *h, const sl_gen_config *c)
{
	const char *field = NULL;
	const jp_node *p;
	sl_error e2;

	sl_error_clear(&e2);
	if (sl_gen_check(c, &field, &e2) == SL_OK)
		return SL_OK;
	p = hf_at(h, field ? hf_key_of(h, field) : NULL);
	return sl_error_set(h->err, SL_EINPUT, h->path, p->line, p->col, "%s",
	    e2.msg);
}

int
sl_gen_from_hf_config(const char *path, sl_gen_config *c, sl_error *err)
{
	hf_ctx h = { path, NULL, NULL, err, NULL };
	char *text;
	size_t len;
	sl_json j = { 0 };
	const struct hf_type *t;
	int rc = SL_EINPUT;
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
	if ((t = hf_type(&h)) == NULL)
		goto out;
	h.type = t->type;
	sl_gen_family_defaults(t->fam, c);
	if (t->fam == SL_FAM_MOE) {
		c->experts = c->topk = 0;
		c->moe_ffn = 0;
	}
	if (hf_refuse_unmodelled(&h, t) != SL_OK || hf_sizes(&h, c) != SL_OK ||
	    hf_blocks(&h, t, c) != SL_OK || hf_window(&h, t, c, c->layers) != SL_OK)
		goto out;
	if (t->fam == SL_FAM_MOE) {
		if (hf_moe(&h, t, c) != SL_OK)
			goto out;
		if (c->moe_ffn == c->ffn && t->kind != HF_DEEPSEEK_V2 &&
		    t->kind != HF_DEEPSEEK_V3)
			c->moe_ffn = 0;
	}
	if ((t->kind == HF_DEEPSEEK_V2 || t->kind == HF_DEEPSEEK_V3) &&
	    hf_mla(&h, c) != SL_OK)
		goto out;
	hf_model_name(&h, t->type, c);
	if (hf_check(&h, c) != SL_OK)
		goto out;
	rc = SL_OK;
out:
	sl_json_free(&j);
	free(text);
	free(dirpath);
	return rc;
}
