/*
 * test_models.c: model sources.  The bundled models load and have the
 * parameter counts of their papers, generated graphs have the documented
 * structure, the explicit form survives a save/load round trip, Hugging Face
 * config.json files map onto generator sizes, and every file of the
 * bad-input corpus (tests/data/bad, expectations in
 * tests/expected/bad/errors.tsv) fails with its line, column and message.
 * Truncated and corrupted copies of a valid file never crash the loader.
 */
#include "testutil.h"
#include "internal.h"
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];

/* Source tree: from the harness (TESTS_SRCDIR), else next to this file. */
static const char *
srcdir_tests(void)
{
	static char buf[1024];
	const char *d = getenv("TESTS_SRCDIR");
	const char *slash;

	if (d != NULL && *d != '\0')
		return d;
	slash = strrchr(__FILE__, '/');
	if (slash == NULL)
		return ".";
	snprintf(buf, sizeof buf, "%.*s", (int)(slash - __FILE__), __FILE__);
	return buf;
}

static void
ensure_datadir(void)
{
	static char buf[1100];

	if (getenv("SHARDLAB_DATADIR") == NULL) {
		snprintf(buf, sizeof buf, "%s/../data", srcdir_tests());
		setenv("SHARDLAB_DATADIR", buf, 1);
	}
}

static char *
tmp_path(const char *name)
{
	static char buf[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
	return buf[k];
}

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static sl_graph *
open_model(const char *name, int64_t micro_batch, int devices)
{
	sl_model_opts o = { micro_batch, devices };
	sl_error err;
	char buf[2048];
	sl_graph *g;

	sl_error_clear(&err);
	g = sl_model_open(name, &o, &err);
	if (g == NULL)
		fail_msg("%s: %s", name, sl_error_format(&err, buf, sizeof buf));
	return g;
}

/* 12 L h^2 (1 + 13/(12h) + (V+s)/(12 L h)): Narayanan et al., SC21, eq. (2). */
static double
gpt_formula(double L, double h, double V, double s)
{
	return 12 * L * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * L * h));
}

/* ---------------------------------------------------------- bundled models */

static void
test_bundled_all_load(void **state)
{
	const char *const *names = sl_bundled_models();
	int n = 0;

	for (; names[n] != NULL; n++) {
		sl_graph *g = open_model(names[n], 1, 1);
		sl_error err;

		assert_string_equal(g->name, names[n]);
		assert_int_equal(strlen(g->sha256), 64);
		sl_error_clear(&err);
		assert_int_equal(sl_graph_validate(g, NULL, &err), SL_OK);
		sl_graph_free(g);
	}
	assert_int_equal(n, 6);
}

static void
test_gpt_parameter_counts(void **state)
{
	static const struct {
		const char *name;
		int L;
		int64_t h, V, s;
		int64_t paper;	/* Megatron-LM SC21 Table 1, rounded */
	} m[] = {
		{ "gpt-1.7b", 24, 2304, 51200, 2048, 1700000000 },
		{ "gpt-3.6b", 30, 3072, 51200, 2048, 3600000000 },
		{ "gpt-7.5b", 36, 4096, 51200, 2048, 7500000000 },
	};

	for (size_t i = 0; i < SL_ARRAY_LEN(m); i++) {
		sl_graph *g = open_model(m[i].name, 1, 1);
		int64_t p = sl_graph_param_count(g);
		int64_t L = m[i].L, h = m[i].h;
		/* by hand: per layer qkv 3h^2+3h, proj h^2+h, fc1 4h^2+4h,
		 * fc2 4h^2+h, two layernorms 4h; wte, wpe; final layernorm 2h */
		int64_t exact = L * (12 * h * h + 13 * h) + (m[i].V + m[i].s) * h + 2 * h;
		double f = gpt_formula(L, h, m[i].V, m[i].s);

		assert_int_equal(p, exact);
		assert_true(p > 0.99 * f && p < 1.01 * f);
		assert_true(p > 0.95 * m[i].paper && p < 1.01 * m[i].paper);
		assert_int_equal(g->n_ops, 12 * m[i].L + 4);
		assert_int_equal(g->n_layers, m[i].L);
		sl_graph_free(g);
	}
}

static void
test_bert_large(void **state)
{
	sl_graph *g = open_model("bert-large", 1, 1);
	int64_t p = sl_graph_param_count(g), h = 1024, V = 30522, s = 512;
	/* formula plus embedding layernorm, the masked-LM head (dense h^2+h,
	 * layernorm 2h, decoder bias V) and the token types (2h) */
	int64_t exact = 24 * (12 * h * h + 13 * h) + (V + s) * h + 2 * h +
	    (h * h + h) + 2 * h + V + 2 * h;
	double f = gpt_formula(24, h, V, s);

	assert_int_equal(p, exact);
	/* Hugging Face BertForMaskedLM of bert-large-uncased, the token-type
	 * embedding (2 x h) included */
	assert_int_equal(p, 335174458);
	assert_true(p > 0.99 * f && p < 1.01 * f);
	assert_int_equal(g->n_ops, 12 * 24 + 9);
	/* post-LN: the layer ends in its second layernorm */
	{
		const sl_layer *L = &g->layers[0];
		const sl_op *last = &g->ops[L->first_op + L->n_ops - 1];
		assert_string_equal(last->name, "layer0.ln2");
		assert_int_equal(last->kind, SL_OP_LAYERNORM);
		assert_int_equal(g->ops[L->first_op].kind, SL_OP_MATMUL);
	}
	sl_graph_free(g);
}

static void
test_llama_7b(void **state)
{
	sl_graph *g = open_model("llama-7b", 1, 1);
	int64_t h = 4096, ffn = 11008, V = 32000, L = 32;
	int64_t exact = L * (4 * h * h + 3 * h * ffn + 2 * h) + 2 * V * h + h;
	int a, head, embed;

	assert_int_equal(sl_graph_param_count(g), exact);
	assert_int_equal(exact, 6738415616);	/* the published LLaMA-7B count */
	assert_int_equal(g->n_ops, 12 * 32 + 4);
	/* no dropout, no biases, no position table */
	for (int i = 0; i < g->n_ops; i++) {
		assert_int_not_equal(g->ops[i].kind, SL_OP_DROPOUT);
		if (g->ops[i].kind == SL_OP_MATMUL)
			assert_int_equal(g->ops[i].n_in, 2);
	}
	assert_int_equal(sl_graph_find_tensor(g, "wpe"), -1);
	a = sl_graph_find_op(g, "layer5.attn");
	assert_true(a >= 0);
	assert_int_equal(g->ops[a].heads, 32);
	assert_int_equal(g->ops[a].kv_heads, 32);
	/* untied head: its own weight [h, V] */
	head = sl_graph_find_op(g, "lm_head");
	embed = sl_graph_find_op(g, "embed");
	assert_int_not_equal(g->ops[head].in[1], g->ops[embed].in[1]);
	assert_false(g->ops[head].transpose_w);
	assert_int_equal(g->tensors[g->ops[head].in[1]].dims[0], h);
	assert_int_equal(g->tensors[g->ops[head].in[1]].dims[1], V);
	/* SwiGLU: mul of silu(gate) and up */
	{
		int m = sl_graph_find_op(g, "layer0.mul");
		int si = sl_graph_find_op(g, "layer0.silu");
		int up = sl_graph_find_op(g, "layer0.up");
		assert_int_equal(g->ops[m].kind, SL_OP_MUL);
		assert_int_equal(g->ops[m].in[0], g->ops[si].out[0]);
		assert_int_equal(g->ops[m].in[1], g->ops[up].out[0]);
	}
	sl_graph_free(g);
}

static void
test_gpt_structure_and_tied_embedding(void **state)
{
	static const char *const layer_ops[] = { "ln1", "qkv", "attn", "proj",
	    "drop1", "add1", "ln2", "fc1", "gelu", "fc2", "drop2", "add2" };
	sl_graph *g = open_model("gpt-1.7b", 1, 1);
	int embed = sl_graph_find_op(g, "embed"), head = sl_graph_find_op(g, "lm_head");
	int wte = sl_graph_find_tensor(g, "wte"), users = 0, n_wte = 0;
	char name[64];

	assert_int_equal(embed, 0);
	assert_true(wte >= 0);
	for (int i = 0; i < g->n_tensors; i++)
		n_wte += strcmp(g->tensors[i].name, "wte") == 0;
	assert_int_equal(n_wte, 1);
	for (int o = 0; o < g->n_ops; o++)
		for (int j = 0; j < g->ops[o].n_in; j++)
			users += g->ops[o].in[j] == wte;
	assert_int_equal(users, 2);
	assert_int_equal(g->ops[head].in[1], wte);
	assert_true(g->ops[head].transpose_w);
	assert_int_equal(g->tensors[wte].dims[0], 51200);
	assert_int_equal(g->tensors[wte].dims[1], 2304);
	for (int l = 0; l < 24; l++) {
		const sl_layer *L = &g->layers[l];

		snprintf(name, sizeof name, "layer%d", l);
		assert_string_equal(L->name, name);
		assert_int_equal(L->n_ops, 12);
		assert_int_equal(L->first_op, 1 + 12 * l);
		for (int k = 0; k < 12; k++) {
			const sl_op *op = &g->ops[L->first_op + k];
			snprintf(name, sizeof name, "layer%d.%s", l, layer_ops[k]);
			assert_string_equal(op->name, name);
			assert_int_equal(op->layer, l);
			assert_int_equal(op->pos, k);
		}
	}
	/* the residual add of a layer reads the layer's input */
	{
		const sl_op *add1 = &g->ops[sl_graph_find_op(g, "layer3.add1")];
		const sl_op *prev = &g->ops[sl_graph_find_op(g, "layer2.add2")];
		assert_int_equal(add1->in[0], prev->out[0]);
		assert_int_equal(g->ops[sl_graph_find_op(g, "layer3.attn")].heads, 24);
	}
	assert_string_equal(g->ops[g->n_ops - 1].name, "loss");
	assert_int_equal(g->ops[g->n_ops - 1].kind, SL_OP_CROSS_ENTROPY);
	assert_int_equal(g->tensors[g->ops[g->n_ops - 1].out[0]].dtype, SL_DT_F32);
	assert_int_equal(g->tensors[sl_graph_find_tensor(g, "tokens")].role, SL_ROLE_INPUT);
	assert_int_equal(g->tensors[sl_graph_find_tensor(g, "labels")].dtype, SL_DT_I32);
	sl_graph_free(g);
}

static void
test_batch_follows_mesh(void **state)
{
	sl_graph *g = open_model("gpt-1.7b", 2, 4);
	const sl_tensor *tok = &g->tensors[sl_graph_find_tensor(g, "tokens")];
	const sl_tensor *qkv = &g->tensors[sl_graph_find_tensor(g, "layer0.qkv.out")];

	assert_int_equal(tok->dims[0], 8);
	assert_int_equal(tok->dims[1], 2048);
	assert_int_equal(qkv->dims[0], 8);
	assert_int_equal(qkv->dims[2], 3 * 2304);
	sl_graph_free(g);

	/* NULL options: batch 1 */
	{
		sl_error err;
		sl_error_clear(&err);
		g = sl_model_open("bert-large", NULL, &err);
		assert_non_null(g);
		assert_int_equal(g->tensors[sl_graph_find_tensor(g, "tokens")].dims[0], 1);
		sl_graph_free(g);
	}

	/* explicit shapes stay as written */
	g = open_model("mlp-2layer", 4, 8);
	assert_int_equal(g->tensors[sl_graph_find_tensor(g, "x")].dims[0], 8);
	sl_graph_free(g);
}

static void
test_mlp_2layer(void **state)
{
	sl_graph *g = open_model("mlp-2layer", 1, 1);
	static const struct {
		const char *name;
		int64_t d0, d1;
		sl_role role;
	} t[] = {
		{ "x", 8, 512, SL_ROLE_INPUT }, { "w1", 512, 2048, SL_ROLE_PARAMETER },
		{ "h1", 8, 2048, SL_ROLE_ACTIVATION }, { "g", 8, 2048, SL_ROLE_ACTIVATION },
		{ "w2", 2048, 512, SL_ROLE_PARAMETER }, { "y", 8, 512, SL_ROLE_ACTIVATION },
	};

	assert_int_equal(g->n_tensors, 6);
	for (size_t i = 0; i < SL_ARRAY_LEN(t); i++) {
		const sl_tensor *x = &g->tensors[sl_graph_find_tensor(g, t[i].name)];
		assert_int_equal(x->rank, 2);
		assert_int_equal(x->dims[0], t[i].d0);
		assert_int_equal(x->dims[1], t[i].d1);
		assert_int_equal(x->dtype, SL_DT_BF16);
		assert_int_equal(x->role, t[i].role);
	}
	assert_int_equal(g->n_ops, 3);
	assert_string_equal(g->ops[0].name, "fc1");
	assert_string_equal(g->ops[1].name, "gelu");
	assert_string_equal(g->ops[2].name, "fc2");
	assert_int_equal(g->n_layers, 2);
	assert_string_equal(g->layers[0].name, "layer0");
	assert_int_equal(g->layers[0].n_ops, 2);
	assert_string_equal(g->layers[1].name, "layer1");
	assert_int_equal(g->ops[2].layer, 1);
	assert_int_equal(sl_graph_param_count(g), 2 * 512 * 2048);
	/* operators remember where they were defined */
	assert_int_equal(g->ops[0].src_line, 15);
	assert_int_equal(g->ops[0].src_col, 5);
	sl_graph_free(g);
}

/* -------------------------------------------------------------- round trip */

static void
assert_same_graph(const sl_graph *a, const sl_graph *b)
{
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->n_tensors, b->n_tensors);
	assert_int_equal(a->n_ops, b->n_ops);
	assert_int_equal(a->n_layers, b->n_layers);
	for (int i = 0; i < a->n_tensors; i++) {
		const sl_tensor *x = &a->tensors[i], *y = &b->tensors[i];
		assert_string_equal(x->name, y->name);
		assert_int_equal(x->rank, y->rank);
		for (int d = 0; d < x->rank; d++)
			assert_int_equal(x->dims[d], y->dims[d]);
		assert_int_equal(x->dtype, y->dtype);
		assert_int_equal(x->role, y->role);
		assert_int_equal(x->producer, y->producer);
	}
	for (int i = 0; i < a->n_ops; i++) {
		const sl_op *x = &a->ops[i], *y = &b->ops[i];
		assert_string_equal(x->name, y->name);
		assert_int_equal(x->kind, y->kind);
		assert_int_equal(x->n_in, y->n_in);
		assert_int_equal(x->n_out, y->n_out);
		assert_memory_equal(x->in, y->in, x->n_in * sizeof *x->in);
		assert_memory_equal(x->out, y->out, x->n_out * sizeof *x->out);
		assert_int_equal(x->layer, y->layer);
		assert_int_equal(x->pos, y->pos);
		assert_int_equal(x->heads, y->heads);
		assert_int_equal(x->kv_heads, y->kv_heads);
		assert_memory_equal(x->perm, y->perm, sizeof x->perm);
		assert_true(x->p == y->p);
		assert_int_equal(x->transpose_w, y->transpose_w);
	}
	for (int i = 0; i < a->n_layers; i++) {
		assert_string_equal(a->layers[i].name, b->layers[i].name);
		assert_int_equal(a->layers[i].first_op, b->layers[i].first_op);
		assert_int_equal(a->layers[i].n_ops, b->layers[i].n_ops);
	}
}

static char *
slurp(const char *path, size_t *len)
{
	sl_error err;
	char *t;

	sl_error_clear(&err);
	t = sl_read_file(path, len, &err);
	assert_non_null(t);
	return t;
}

static void
round_trip(sl_graph *g, const char *file)
{
	const char *p1 = tmp_path(file);
	char p2[600], sha[65];
	sl_error err;
	sl_graph *h;
	size_t n1, n2;
	char *t1, *t2;

	sl_error_clear(&err);
	assert_int_equal(sl_model_save_json(g, p1, &err), SL_OK);
	h = sl_model_load_json(p1, &err);
	if (h == NULL) {
		char buf[2048];
		fail_msg("%s", sl_error_format(&err, buf, sizeof buf));
	}
	assert_same_graph(g, h);
	t1 = slurp(p1, &n1);
	sl_sha256_hex(t1, n1, sha);
	assert_string_equal(h->sha256, sha);
	assert_string_equal(h->source, p1);
	/* saving the reloaded graph gives the same bytes */
	snprintf(p2, sizeof p2, "%s.2", p1);
	assert_int_equal(sl_model_save_json(h, p2, &err), SL_OK);
	t2 = slurp(p2, &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(t1, t2, n1);
	free(t1);
	free(t2);
	sl_graph_free(h);
}

static void
test_round_trip(void **state)
{
	sl_graph *g = open_model("mlp-2layer", 1, 1);
	sl_gen_config c;
	sl_error err;

	round_trip(g, "mlp.json");
	sl_graph_free(g);
	g = open_model("gpt-1.7b", 1, 2);
	round_trip(g, "gpt.json");
	sl_graph_free(g);
	for (int fam = SL_FAM_GPT; fam <= SL_FAM_LLAMA; fam++) {
		sl_gen_defaults(fam, &c);
		sl_error_clear(&err);
		g = sl_gen(&c, &err);
		assert_non_null(g);
		round_trip(g, "tiny.json");
		sl_graph_free(g);
	}
}

static void
test_round_trip_attrs(void **state)
{
	static const char text[] =
	    "{\"format\": \"shardlab-model\", \"version\": 1, \"name\": \"t \\\"q\\\" \\u00e9\",\n"
	    " \"tensors\": [\n"
	    "  {\"name\": \"a\", \"shape\": [2, 3, 4], \"dtype\": \"f32\", \"role\": \"input\"},\n"
	    "  {\"name\": \"b\", \"shape\": [4, 2, 3]},\n"
	    "  {\"name\": \"c\", \"shape\": [4, 2, 3], \"dtype\": \"bf16\"},\n"
	    "  {\"name\": \"d\", \"shape\": [4, 2, 3], \"dtype\": \"bf16\"}\n"
	    " ],\n"
	    " \"ops\": [\n"
	    "  {\"name\": \"t\", \"kind\": \"transpose\", \"inputs\": [\"a\"], \"outputs\": [\"b\"], \"attrs\": {\"perm\": [2, 0, 1]}},\n"
	    "  {\"name\": \"dr\", \"kind\": \"dropout\", \"inputs\": [\"b\"], \"outputs\": [\"c\"], \"attrs\": {\"p\": 0.3}, \"_note\": \"comment\"},\n"
	    "  {\"name\": \"dz\", \"kind\": \"dropout\", \"inputs\": [\"c\"], \"outputs\": [\"d\"], \"attrs\": {\"p\": 0}}\n"
	    " ]}\n";
	sl_error err;
	sl_graph *g;

	sl_error_clear(&err);
	g = sl_model_parse_json(text, strlen(text), "attrs.json", &err);
	assert_non_null(g);
	assert_string_equal(g->name, "t \"q\" \xc3\xa9");
	assert_int_equal(g->ops[0].perm[0], 2);
	assert_int_equal(g->ops[0].perm[2], 1);
	assert_true(g->ops[1].p == 0.3);
	assert_true(g->ops[2].p == 0.0);
	assert_int_equal(g->tensors[1].dtype, SL_DT_BF16);	/* default */
	assert_int_equal(g->tensors[1].role, SL_ROLE_ACTIVATION);
	assert_int_equal(g->ops[1].src_line, 10);
	assert_int_equal(g->ops[1].src_col, 3);
	round_trip(g, "attrs.json");
	sl_graph_free(g);
}

/* -------------------------------------------------------------- generators */

static void
test_gen_checks(void **state)
{
	sl_gen_config c;
	sl_error err;
	sl_graph *g;

	assert_int_equal(sl_family_from_name("gpt"), SL_FAM_GPT);
	assert_int_equal(sl_family_from_name("LLaMA"), SL_FAM_LLAMA);
	assert_int_equal(sl_family_from_name("bert"), SL_FAM_BERT);
	assert_int_equal(sl_family_from_name("t5"), -1);

	sl_gen_defaults(SL_FAM_GPT, &c);
	assert_int_equal(c.layers, 2);
	assert_int_equal(c.batch, 1);
	sl_error_clear(&err);
	g = sl_gen(&c, &err);
	assert_non_null(g);
	assert_int_equal(g->n_ops, 12 * 2 + 4);
	assert_int_equal(strncmp(g->source, "gen:gpt", 7), 0);
	assert_int_equal(strlen(g->sha256), 64);
	sl_graph_free(g);

	c.hidden = 100;
	c.heads = 3;
	sl_error_clear(&err);
	assert_null(sl_gen(&c, &err));
	assert_int_equal(err.code, SL_EINPUT);
	assert_non_null(strstr(err.msg, "not a multiple of 3 heads"));

	sl_gen_defaults(SL_FAM_LLAMA, &c);
	c.kv_heads = 3;		/* does not divide 4 */
	sl_error_clear(&err);
	assert_null(sl_gen(&c, &err));
	assert_non_null(strstr(err.msg, "kv_heads 3 must divide heads 4"));

	sl_gen_defaults(SL_FAM_LLAMA, &c);
	c.layers = 0;
	sl_error_clear(&err);
	assert_null(sl_gen(&c, &err));
	assert_int_equal(err.code, SL_EINPUT);

	/* GQA: qkv width (q + 2 kv) d */
	sl_gen_defaults(SL_FAM_LLAMA, &c);
	sl_error_clear(&err);
	g = sl_gen(&c, &err);
	assert_non_null(g);
	{
		const sl_tensor *w = &g->tensors[sl_graph_find_tensor(g, "layer1.qkv.w")];
		assert_int_equal(w->dims[0], 64);
		assert_int_equal(w->dims[1], (4 + 2 * 2) * 16);
		assert_int_equal(g->ops[sl_graph_find_op(g, "layer1.attn")].kv_heads, 2);
	}
	sl_graph_free(g);
}

/* ----------------------------------------------------- Hugging Face configs */

static void
test_hf_llama(void **state)
{
	const char *p = tmp_path("llama_config.json");
	sl_gen_config c;
	sl_error err;
	sl_graph *g;

	write_file(p,
	    "{\n"
	    "  \"_name_or_path\": \"meta-llama/Llama-2-7b-hf\",\n"
	    "  \"architectures\": [\"LlamaForCausalLM\"],\n"
	    "  \"hidden_size\": 4096,\n"
	    "  \"intermediate_size\": 11008,\n"
	    "  \"max_position_embeddings\": 4096,\n"
	    "  \"model_type\": \"llama\",\n"
	    "  \"num_attention_heads\": 32,\n"
	    "  \"num_hidden_layers\": 32,\n"
	    "  \"num_key_value_heads\": 8,\n"
	    "  \"rms_norm_eps\": 1e-05,\n"
	    "  \"rope_scaling\": null,\n"
	    "  \"torch_dtype\": \"float16\",\n"
	    "  \"vocab_size\": 32000\n"
	    "}\n");
	sl_error_clear(&err);
	assert_int_equal(sl_gen_from_hf_config(p, &c, &err), SL_OK);
	assert_int_equal(c.family, SL_FAM_LLAMA);
	assert_string_equal(c.name, "Llama-2-7b-hf");
	assert_int_equal(c.layers, 32);
	assert_int_equal(c.hidden, 4096);
	assert_int_equal(c.heads, 32);
	assert_int_equal(c.kv_heads, 8);
	assert_int_equal(c.ffn, 11008);
	assert_int_equal(c.vocab, 32000);
	assert_int_equal(c.seq, 4096);
	g = sl_gen(&c, &err);
	assert_non_null(g);
	/* per layer: q,o 2h^2, k,v 2 h (h/4), MLP 3 h ffn, norms 2h */
	assert_int_equal(sl_graph_param_count(g),
	    32 * (2 * 4096LL * 4096 + 2 * 4096LL * 1024 + 3 * 4096LL * 11008 + 2 * 4096) +
	    2 * 32000LL * 4096 + 4096);
	sl_graph_free(g);
}

static void
test_hf_gpt2_bert_mistral(void **state)
{
	const char *p = tmp_path("gpt2_config.json");
	sl_gen_config c;
	sl_error err;
	sl_graph *g;

	write_file(p,
	    "{\"activation_function\": \"gelu_new\", \"model_type\": \"gpt2\",\n"
	    " \"n_ctx\": 1024, \"n_embd\": 768, \"n_head\": 12, \"n_inner\": null,\n"
	    " \"n_layer\": 12, \"n_positions\": 1024, \"vocab_size\": 50257}\n");
	sl_error_clear(&err);
	assert_int_equal(sl_gen_from_hf_config(p, &c, &err), SL_OK);
	assert_int_equal(c.family, SL_FAM_GPT);
	assert_int_equal(c.hidden, 768);
	assert_int_equal(c.ffn, 4 * 768);
	assert_int_equal(c.seq, 1024);
	g = sl_gen(&c, &err);
	assert_non_null(g);
	assert_int_equal(sl_graph_param_count(g), 124439808);	/* GPT-2 small */
	sl_graph_free(g);

	p = tmp_path("bert_config.json");
	write_file(p,
	    "{\"architectures\": [\"BertForMaskedLM\"], \"hidden_size\": 768,\n"
	    " \"intermediate_size\": 3072, \"max_position_embeddings\": 512,\n"
	    " \"model_type\": \"bert\", \"num_attention_heads\": 12,\n"
	    " \"num_hidden_layers\": 12, \"type_vocab_size\": 2, \"vocab_size\": 30522}\n");
	sl_error_clear(&err);
	assert_int_equal(sl_gen_from_hf_config(p, &c, &err), SL_OK);
	assert_int_equal(c.family, SL_FAM_BERT);
	assert_int_equal(c.seq, 512);
	assert_int_equal(c.layers, 12);

	p = tmp_path("mistral_config.json");
	write_file(p,
	    "{\"model_type\": \"mistral\", \"hidden_size\": 4096, \"intermediate_size\": 14336,\n"
	    " \"max_position_embeddings\": 32768, \"num_attention_heads\": 32,\n"
	    " \"num_hidden_layers\": 32, \"num_key_value_heads\": 8, \"vocab_size\": 32000}\n");
	sl_error_clear(&err);
	assert_int_equal(sl_gen_from_hf_config(p, &c, &err), SL_OK);
	assert_int_equal(c.family, SL_FAM_LLAMA);
	assert_int_equal(c.kv_heads, 8);
	assert_int_equal(c.ffn, 14336);

	/* a model directory stands for its config.json */
	assert_int_equal(mkdir(tmp_path("hfmodel"), 0755), 0);
	write_file(tmp_path("hfmodel/config.json"),
	    "{\"model_type\": \"qwen2\", \"hidden_size\": 896, \"num_attention_heads\": 14,\n"
	    " \"num_key_value_heads\": 2, \"num_hidden_layers\": 24, \"intermediate_size\": 4864,\n"
	    " \"vocab_size\": 151936, \"max_position_embeddings\": 32768}\n");
	sl_error_clear(&err);
	assert_int_equal(sl_gen_from_hf_config(tmp_path("hfmodel"), &c, &err), SL_OK);
	assert_int_equal(c.family, SL_FAM_LLAMA);
	assert_int_equal(c.heads, 14);
	assert_int_equal(c.kv_heads, 2);
	assert_int_equal(c.layers, 24);
	/* named after its folder; trains at 4096 of its 32768 positions */
	assert_string_equal(c.name, "hfmodel");
	assert_int_equal(c.seq, 4096);
	assert_int_equal(c.max_positions, 32768);
	/* and errors name the file inside it */
	write_file(tmp_path("hfmodel/config.json"), "{\"model_type\": 7}");
	sl_error_clear(&err);
	assert_int_equal(sl_gen_from_hf_config(tmp_path("hfmodel"), &c, &err), SL_EINPUT);
	assert_string_equal(err.file, tmp_path("hfmodel/config.json"));
	assert_int_equal(err.column, 16);
	assert_non_null(strstr(err.msg, "\"model_type\" must be a string"));
}

static void
test_hf_errors(void **state)
{
	static const struct {
		const char *text;
		int line, col;
		const char *msg;
	} bad[] = {
		{ "{\"model_type\": \"t5\", \"d_model\": 512}\n", 1, 16,
		  "model_type \"t5\" is not supported" },
		{ "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": \"4096\"\n}\n", 3, 18,
		  "\"hidden_size\": expected a positive integer" },
		{ "{\n  \"model_type\": \"llama\",\n  \"num_attention_heads\": -1\n}\n", 3, 26,
		  "got -1" },
		{ "{\"hidden_size\": 64}\n", 1, 1, "missing \"model_type\"" },
		{ "{\"model_type\": \"llama\", \"hidden_size\": 100,\n \"num_attention_heads\": 3, \"num_hidden_layers\": 2}\n",
		  2, 25, "not a multiple of 3 heads" },
		/* only model_type: not silently a toy model */
		{ "{\"model_type\": \"gpt2\"}\n", 1, 1, "missing \"hidden_size\"" },
		{ "{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_head\": 4}\n", 1, 1,
		  "missing \"num_hidden_layers\"" },
		/* synonyms that disagree, pointed at the second */
		{ "{\"model_type\": \"gpt2\", \"hidden_size\": 64,\n \"n_embd\": 128}\n",
		  2, 12, "\"n_embd\" is 128 but \"hidden_size\" is 64" },
		{ "{\"model_type\": \"llama\",, }\n", 1, 24, "expected a member name" },
		{ "", 1, 1, "expected a JSON value" },
	};
	const char *p = tmp_path("bad_config.json");

	for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
		sl_gen_config c;
		sl_error err;

		write_file(p, bad[i].text);
		sl_error_clear(&err);
		assert_int_equal(sl_gen_from_hf_config(p, &c, &err), SL_EINPUT);
		if (err.line != bad[i].line || err.column != bad[i].col ||
		    strstr(err.msg, bad[i].msg) == NULL)
			fail_msg("case %zu: got %d:%d: %s; want %d:%d: ...%s...", i,
			    err.line, err.column, err.msg, bad[i].line, bad[i].col,
			    bad[i].msg);
		assert_string_equal(err.file, p);
	}
}

/*
 * The configs of tests/data/hf (as published on the Hugging Face Hub; the
 * README there names each source): every parameter of each, as a hand
 * count from its sizes, and the published totals and active counts to the
 * digits they were published with.  Publishers count active parameters
 * two ways: with the input embedding table (Mistral, Qwen) or without it
 * (DeepSeek, OpenAI's gpt-oss model card).
 */
static void
test_hf_published(void **state)
{
	/* per-layer pieces, named after the config's sizes */
#define GQA(h, q, kv, d) ((int64_t)(h) * (q) * (d) + 2LL * (h) * (kv) * (d) + \
	    (int64_t)(q) * (d) * (h))
#define SWIGLU(h, f) (3LL * (h) * (f))
	/* latent attention: q_a, its norm, q_b; kv_a (latent and rotary key),
	 * its norm, kv_b; the output */
#define MLA(h, H, ql, kl, dn, dr, dv) ((int64_t)(h) * (ql) + (ql) + \
	    (int64_t)(ql) * (H) * ((dn) + (dr)) + (int64_t)(h) * ((kl) + (dr)) + \
	    (kl) + (int64_t)(kl) * (H) * ((dn) + (dv)) + (int64_t)(H) * (dv) * (h))
	static const struct {
		const char *file, *family;
		int64_t total, active;	/* hand counts */
		bool active_with_embedding;
		double pub_total, pub_active, digit;	/* billions; last digit's unit */
	} m[] = {
		/* tied: one table of 128256 x 2048 */
		{ "Llama-3.2-1B", "llama", 16 * (GQA(2048, 32, 8, 64) +
		  SWIGLU(2048, 8192) + 2 * 2048) + 128256LL * 2048 + 2048, 0, true,
		  1.236, 0, 0.001 },
		/* head_dim 128 of 32 heads (4096) on hidden 5120 */
		{ "Mistral-Nemo-Base-2407", "llama", 40 * (GQA(5120, 32, 8, 128) +
		  SWIGLU(5120, 14336) + 2 * 5120) + 2 * 131072LL * 5120 + 5120, 0,
		  true, 12.25, 0, 0.01 },
		/* q, k and v biases (28 + 2 x 4 heads of 128) */
		{ "Qwen2-7B", "llama", 28 * (GQA(3584, 28, 4, 128) + (28 + 8) * 128 +
		  SWIGLU(3584, 18944) + 2 * 3584) + 2 * 152064LL * 3584 + 3584, 0,
		  true, 7.61, 0, 0.01 },
		/* BertForMaskedLM: token types 2 x 768 */
		{ "bert-base-uncased", "bert", 12 * (4 * 768LL * 768 + 4 * 768 +
		  2 * 768LL * 3072 + 3072 + 768 + 4 * 768) + (30522LL + 512 + 2) * 768 +
		  2 * 768 + (768LL * 768 + 768 + 2 * 768 + 30522), 0, true, 0.110, 0,
		  0.001 },
		/* 8 experts of 14336, top-2, router 4096 x 8 */
		{ "Mixtral-8x7B-v0.1", "moe", 32 * (GQA(4096, 32, 8, 128) +
		  8 * SWIGLU(4096, 14336) + 4096 * 8 + 2 * 4096) + 2 * 32000LL * 4096 +
		  4096, 32 * (GQA(4096, 32, 8, 128) + 2 * SWIGLU(4096, 14336) +
		  4096 * 8 + 2 * 4096) + 2 * 32000LL * 4096 + 4096, true, 46.7, 12.9,
		  0.1 },
		/* 60 experts of 1408, top-4; a shared expert of 5632 with its
		 * sigmoid gate (2048 x 1); q, k, v biases */
		{ "Qwen1.5-MoE-A2.7B", "moe", 24 * (GQA(2048, 16, 16, 128) + 3 * 2048 +
		  60 * SWIGLU(2048, 1408) + SWIGLU(2048, 5632) + 2048 + 2048 * 60 +
		  2 * 2048) + 2 * 151936LL * 2048 + 2048, 24 * (GQA(2048, 16, 16, 128) +
		  3 * 2048 + 4 * SWIGLU(2048, 1408) + SWIGLU(2048, 5632) + 2048 +
		  2048 * 60 + 2 * 2048) + 2 * 151936LL * 2048 + 2048, true, 14.3, 2.7,
		  0.1 },
		/* 128 experts of 768, top-8; query and key norms of 128 */
		{ "Qwen3-30B-A3B", "moe", 48 * (GQA(2048, 32, 4, 128) + 2 * 128 +
		  128 * SWIGLU(2048, 768) + 2048 * 128 + 2 * 2048) +
		  2 * 151936LL * 2048 + 2048, 48 * (GQA(2048, 32, 4, 128) + 2 * 128 +
		  8 * SWIGLU(2048, 768) + 2048 * 128 + 2 * 2048) +
		  2 * 151936LL * 2048 + 2048, true, 30.5, 3.3, 0.1 },
		/* one dense layer of 12288; 160 experts of 1536, top-6, two
		 * shared */
		{ "DeepSeek-V2", "moe", MLA(5120, 128, 1536, 512, 128, 64, 128) +
		  SWIGLU(5120, 12288) + 2 * 5120 + 59 * (MLA(5120, 128, 1536, 512, 128,
		  64, 128) + 162 * SWIGLU(5120, 1536) + 5120 * 160 + 2 * 5120) +
		  2 * 102400LL * 5120 + 5120, MLA(5120, 128, 1536, 512, 128, 64, 128) +
		  SWIGLU(5120, 12288) + 2 * 5120 + 59 * (MLA(5120, 128, 1536, 512, 128,
		  64, 128) + 8 * SWIGLU(5120, 1536) + 5120 * 160 + 2 * 5120) +
		  102400LL * 5120 + 5120, false, 236, 21, 1 },
		/* three dense layers of 18432; 256 experts of 2048, top-8, one
		 * shared; the routing bias (256) */
		{ "DeepSeek-V3", "moe", 3 * (MLA(7168, 128, 1536, 512, 128, 64, 128) +
		  SWIGLU(7168, 18432) + 2 * 7168) + 58 * (MLA(7168, 128, 1536, 512, 128,
		  64, 128) + 257 * SWIGLU(7168, 2048) + 7168 * 256 + 256 + 2 * 7168) +
		  2 * 129280LL * 7168 + 7168, 3 * (MLA(7168, 128, 1536, 512, 128, 64,
		  128) + SWIGLU(7168, 18432) + 2 * 7168) + 58 * (MLA(7168, 128, 1536,
		  512, 128, 64, 128) + 9 * SWIGLU(7168, 2048) + 7168 * 256 + 256 +
		  2 * 7168) + 129280LL * 7168 + 7168, false, 671, 37, 1 },
		/* 128 experts of 2880 with biases, top-4; router with bias; q, k,
		 * v, o biases; sinks (64) */
		{ "gpt-oss-120b", "moe", 36 * (GQA(2880, 64, 8, 64) + 64 * 64 + 2 * 8 * 64 +
		  2880 + 64 + 128 * (SWIGLU(2880, 2880) + 2 * 2880 + 2880) +
		  2880 * 128 + 128 + 2 * 2880) + 2 * 201088LL * 2880 + 2880,
		  36 * (GQA(2880, 64, 8, 64) + 64 * 64 + 2 * 8 * 64 + 2880 + 64 +
		  4 * (SWIGLU(2880, 2880) + 2 * 2880 + 2880) + 2880 * 128 + 128 +
		  2 * 2880) + 201088LL * 2880 + 2880, false, 116.83, 5.13, 0.01 },
		{ "gpt-oss-20b", "moe", 24 * (GQA(2880, 64, 8, 64) + 64 * 64 + 2 * 8 * 64 +
		  2880 + 64 + 32 * (SWIGLU(2880, 2880) + 2 * 2880 + 2880) +
		  2880 * 32 + 32 + 2 * 2880) + 2 * 201088LL * 2880 + 2880,
		  24 * (GQA(2880, 64, 8, 64) + 64 * 64 + 2 * 8 * 64 + 2880 + 64 +
		  4 * (SWIGLU(2880, 2880) + 2 * 2880 + 2880) + 2880 * 32 + 32 +
		  2 * 2880) + 201088LL * 2880 + 2880, false, 20.91, 3.61, 0.01 },
	};
#undef GQA
#undef SWIGLU
#undef MLA

	for (size_t i = 0; i < SL_ARRAY_LEN(m); i++) {
		char path[600];
		sl_gen_config c;
		sl_error err;
		sl_graph *g;
		int64_t total, emb, active;

		snprintf(path, sizeof path, "%s/data/hf/%s.json", srcdir_tests(),
		    m[i].file);
		sl_error_clear(&err);
		if (sl_gen_from_hf_config(path, &c, &err) != SL_OK)
			fail_msg("%s: %s", m[i].file, err.msg);
		assert_string_equal(sl_family_name(c.family), m[i].family);
		c.batch = 1;
		g = sl_gen(&c, &err);
		if (g == NULL)
			fail_msg("%s: %s", m[i].file, err.msg);
		total = sl_graph_param_count(g);
		active = sl_graph_active_params(g, &emb);
		if (total != m[i].total)
			fail_msg("%s: %lld parameters, by hand %lld", m[i].file,
			    (long long)total, (long long)m[i].total);
		/* the published total, to its last digit (rounded or cut) */
		if (fabs((double)total / 1e9 - m[i].pub_total) >= m[i].digit)
			fail_msg("%s: %.3f B, published %.3f B", m[i].file,
			    (double)total / 1e9, m[i].pub_total);
		if (m[i].active == 0) {
			assert_int_equal(active, total);
		} else {
			if (!m[i].active_with_embedding)
				active -= emb;
			if (active != m[i].active)
				fail_msg("%s: %lld active, by hand %lld", m[i].file,
				    (long long)active, (long long)m[i].active);
			if (fabs((double)active / 1e9 - m[i].pub_active) >= m[i].digit)
				fail_msg("%s: %.3f B active, published %.3f B",
				    m[i].file, (double)active / 1e9, m[i].pub_active);
		}
		sl_graph_free(g);
	}
}

/*
 * Fields that change a model's sizes and are not what its model type
 * has, and fields a type must give: refused, naming the field.
 */
static void
test_hf_refused(void **state)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "{\"model_type\": \"mistral\", \"hidden_size\": 64, \"num_hidden_layers\": 2,\n"
		  " \"num_attention_heads\": 4, \"num_local_experts\": 8}\n",
		  "\"num_local_experts\": model_type mistral with experts is not modelled" },
		{ "{\"model_type\": \"mixtral\", \"hidden_size\": 64, \"num_hidden_layers\": 2,\n"
		  " \"num_attention_heads\": 4, \"num_local_experts\": 8}\n",
		  "missing \"num_experts_per_tok\"" },
		{ "{\"model_type\": \"mixtral\", \"hidden_size\": 64, \"num_hidden_layers\": 2,\n"
		  " \"num_attention_heads\": 4, \"num_local_experts\": 8, \"num_experts_per_tok\": 9}\n",
		  "topk 9 is above the expert count 8" },
		{ "{\"model_type\": \"qwen3_moe\", \"hidden_size\": 64, \"num_hidden_layers\": 2,\n"
		  " \"num_attention_heads\": 4, \"num_experts\": 8, \"num_experts_per_tok\": 2,\n"
		  " \"moe_intermediate_size\": 32, \"mlp_only_layers\": [1]}\n",
		  "\"mlp_only_layers\": dense layers at chosen places are not modelled" },
		{ "{\"model_type\": \"deepseek_v3\", \"hidden_size\": 64, \"num_hidden_layers\": 2,\n"
		  " \"num_attention_heads\": 4, \"n_routed_experts\": 8, \"num_experts_per_tok\": 2,\n"
		  " \"moe_intermediate_size\": 32, \"kv_lora_rank\": 16, \"qk_nope_head_dim\": 8,\n"
		  " \"qk_rope_head_dim\": 4}\n", "missing \"v_head_dim\"" },
		{ "{\"model_type\": \"bert\", \"hidden_size\": 64, \"num_hidden_layers\": 2,\n"
		  " \"num_attention_heads\": 4, \"position_embedding_type\": \"relative_key\"}\n",
		  "\"position_embedding_type\": \"relative_key\" is not modelled" },
		{ "{\"model_type\": \"qwen2\", \"hidden_size\": 64, \"num_hidden_layers\": 2,\n"
		  " \"num_attention_heads\": 4, \"mlp_bias\": true}\n",
		  "\"mlp_bias\": MLP biases under model_type qwen2 are not modelled" },
		{ "{\"model_type\": \"gpt_oss\", \"hidden_size\": 64, \"num_hidden_layers\": 3,\n"
		  " \"num_attention_heads\": 4, \"num_local_experts\": 4, \"num_experts_per_tok\": 2,\n"
		  " \"layer_types\": [\"sliding_attention\", \"sliding_attention\", \"full_attention\"]}\n",
		  "the sliding layers are not every n-th from the first" },
		{ "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2,\n"
		  " \"num_attention_heads\": 4, \"kv_lora_rank\": 16}\n",
		  "\"kv_lora_rank\": latent attention under model_type llama is not modelled" },
	};
	const char *p = tmp_path("refused_config.json");

	for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
		sl_gen_config c;
		sl_error err;

		write_file(p, bad[i].text);
		sl_error_clear(&err);
		assert_int_equal(sl_gen_from_hf_config(p, &c, &err), SL_EINPUT);
		if (strstr(err.msg, bad[i].msg) == NULL)
			fail_msg("case %zu: got %s; want ...%s...", i, err.msg,
			    bad[i].msg);
		assert_true(err.line >= 1);
		assert_string_equal(err.file, p);
	}
}

/*
 * What the configs' other fields change: a sliding window (Mistral-7B,
 * every layer; GPT-OSS, every other), tied embeddings and head_dim are
 * read, and a generator description written and read again keeps them.
 */
static void
test_hf_fields(void **state)
{
	char path[600];
	sl_gen_config c;
	sl_error err;
	sl_graph *g, *g2;
	int n_slide = 0;

	snprintf(path, sizeof path, "%s/data/hf/gpt-oss-20b.json", srcdir_tests());
	sl_error_clear(&err);
	assert_int_equal(sl_gen_from_hf_config(path, &c, &err), SL_OK);
	assert_int_equal(c.window, 128);
	assert_int_equal(c.window_every, 2);
	assert_int_equal(c.window_first, 0);
	assert_int_equal(c.head_dim, 64);
	assert_true(c.sinks && c.qkv_bias && c.out_bias && c.router_bias && c.expert_bias);
	c.batch = 1;
	c.layers = 4;
	g = sl_gen(&c, &err);
	assert_non_null(g);
	for (int v = 0; v < g->n_ops; v++)
		if (g->ops[v].kind == SL_OP_ATTENTION) {
			assert_int_equal(g->ops[v].window,
			    g->layers[g->ops[v].layer].name[5] % 2 == 0 ? 128 : 0);
			n_slide += g->ops[v].window > 0;
		}
	assert_int_equal(n_slide, 2);
	/* written as a generator description and read again: the same graph */
	assert_int_equal(sl_gen_save(&c, tmp_path("oss.json"), &err), SL_OK);
	{
		sl_model_opts mo = { .micro_batch = 1, .devices = 1 };
		g2 = sl_model_open(tmp_path("oss.json"), &mo, &err);
		if (g2 == NULL)
			fail_msg("%s", err.msg);
	}
	assert_int_equal(g2->n_ops, g->n_ops);
	assert_int_equal(sl_graph_param_count(g2), sl_graph_param_count(g));
	for (int v = 0; v < g->n_ops; v++) {
		assert_string_equal(g2->ops[v].name, g->ops[v].name);
		assert_int_equal(g2->ops[v].window, g->ops[v].window);
		assert_int_equal(g2->ops[v].n_in, g->ops[v].n_in);
	}
	sl_graph_free(g2);
	sl_graph_free(g);

	snprintf(path, sizeof path, "%s/data/hf/Mistral-7B-v0.1.json", srcdir_tests());
	assert_int_equal(sl_gen_from_hf_config(path, &c, &err), SL_OK);
	assert_int_equal(c.window, 4096);
	assert_int_equal(c.window_first, 0);
	assert_int_equal(c.window_every, 0);
	/* Qwen2 slides only with use_sliding_window */
	snprintf(path, sizeof path, "%s/data/hf/Qwen2-7B.json", srcdir_tests());
	assert_int_equal(sl_gen_from_hf_config(path, &c, &err), SL_OK);
	assert_int_equal(c.window, 0);
	assert_true(c.qkv_bias && !c.out_bias);
	snprintf(path, sizeof path, "%s/data/hf/Llama-3.2-1B.json", srcdir_tests());
	assert_int_equal(sl_gen_from_hf_config(path, &c, &err), SL_OK);
	assert_int_equal(c.tie, SL_TIE_YES);
	assert_int_equal(c.head_dim, 0);	/* 2048 / 32 */
}

/* --------------------------------------------------------- bad-input corpus */

static void
test_bad_corpus(void **state)
{
	char table[1200], line[1024];
	FILE *f;
	int n = 0;

	snprintf(table, sizeof table, "%s/expected/bad/errors.tsv", srcdir_tests());
	f = fopen(table, "r");
	if (f == NULL)
		fail_msg("%s: %s", table, strerror(errno));
	while (fgets(line, sizeof line, f) != NULL) {
		char *file, *l, *c, *msg, path[1400], buf[2048];
		sl_error err;
		sl_graph *g;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		line[strcspn(line, "\n")] = '\0';
		file = strtok(line, "\t");
		l = strtok(NULL, "\t");
		c = strtok(NULL, "\t");
		msg = strtok(NULL, "");
		assert_non_null(msg);
		snprintf(path, sizeof path, "%s/data/bad/%s", srcdir_tests(), file);
		sl_error_clear(&err);
		g = sl_model_load_json(path, &err);
		if (g != NULL)
			fail_msg("%s: loaded, but should fail", file);
		sl_error_format(&err, buf, sizeof buf);
		if (err.code != SL_EINPUT || err.line != atoi(l) ||
		    err.column != atoi(c) || strstr(err.msg, msg) == NULL ||
		    strcmp(err.file, path) != 0)
			fail_msg("%s: got code %d, %s; want %s:%s: ...%s...", file,
			    err.code, buf, l, c, msg);
		n++;
	}
	fclose(f);
	assert_true(n >= 12);
}

/* Every prefix and many one-byte corruptions: an error or a graph, never a crash. */
static void
fuzz_text(const char *text, size_t len)
{
	static const char subst[] = { '"', '{', '}', '[', ']', ',', ':', '\0',
	    '\xff', '\xc3', '9', '-', 'e', '\\', ' ', '\n' };
	char *buf = sl_xmalloc(len + 1);
	size_t last = len;
	int lines = 1;

	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	while (last > 0 && text[last - 1] != '}')
		last--;
	for (size_t n = 0; n < last; n += last / 1500 + 1) {
		sl_error err;
		sl_graph *g;

		memcpy(buf, text, n);
		sl_error_clear(&err);
		g = sl_model_parse_json(buf, n, "prefix.json", &err);
		if (g != NULL)
			fail_msg("a prefix of %zu bytes loaded", n);
		assert_int_equal(err.code, SL_EINPUT);
		assert_true(err.line >= 1 && err.line <= lines);
		assert_true(err.column >= 1);
	}
	/* at most about 500 positions, so that big texts stay quick */
	for (size_t i = 0; i < len; i += len / 500 + 1)
		for (size_t k = 0; k < sizeof subst; k++) {
			sl_error err;
			sl_graph *g;

			memcpy(buf, text, len);
			buf[i] = subst[k];
			sl_error_clear(&err);
			g = sl_model_parse_json(buf, len, "mutant.json", &err);
			if (g == NULL) {
				assert_int_equal(err.code, SL_EINPUT);
				assert_true(err.line >= 1 && err.line <= lines + 1);
			}
			sl_graph_free(g);
		}
	free(buf);
}

static void
test_truncated_and_mutated(void **state)
{
	char path[1200];
	size_t len;
	char *text;
	sl_gen_config c;
	sl_graph *g;
	sl_error err;

	snprintf(path, sizeof path, "%s/models/mlp-2layer.json", getenv("SHARDLAB_DATADIR"));
	text = slurp(path, &len);
	fuzz_text(text, len);
	free(text);
	{
		/* the generator form, small enough that mutants build quickly */
		static const char gen[] = "{\"format\": \"shardlab-model\", "
		    "\"version\": 1, \"name\": \"g\",\n \"generator\": {\"family\": "
		    "\"llama\", \"layers\": 2, \"hidden\": 64, \"heads\": 4, "
		    "\"kv_heads\": 2, \"ffn\": 96, \"seq\": 16, \"vocab\": 128}}\n";
		fuzz_text(gen, strlen(gen));
	}

	/* an explicit transformer: attention, dropout, layernorm, tied head */
	sl_gen_defaults(SL_FAM_GPT, &c);
	c.layers = 1;
	sl_error_clear(&err);
	g = sl_gen(&c, &err);
	assert_non_null(g);
	assert_int_equal(sl_model_save_json(g, tmp_path("fuzz.json"), &err), SL_OK);
	sl_graph_free(g);
	text = slurp(tmp_path("fuzz.json"), &len);
	fuzz_text(text, len);
	free(text);
}

static void
test_hostile_inputs(void **state)
{
	size_t n = 200000;
	char *deep = sl_xmalloc(2 * n + 1);
	sl_error err;

	/* far deeper than any stack would allow a naive recursive parser */
	memset(deep, '[', n);
	memset(deep + n, ']', n);
	sl_error_clear(&err);
	assert_null(sl_model_parse_json(deep, 2 * n, "deep.json", &err));
	assert_int_equal(err.code, SL_EINPUT);
	assert_int_equal(err.line, 1);
	assert_int_equal(err.column, JP_MAX_DEPTH + 1);
	memset(deep, '{', n);
	sl_error_clear(&err);
	assert_null(sl_model_parse_json(deep, n, "deep.json", &err));
	assert_int_equal(err.code, SL_EINPUT);
	free(deep);

	/* a huge real dimension and a huge real */
	{
		static const char t1[] = "{\"format\": \"shardlab-model\", \"version\": 1e999}";
		static const char t2[] = "{\"format\": \"shardlab-model\", \"version\": 1.0}";
		sl_error_clear(&err);
		assert_null(sl_model_parse_json(t1, strlen(t1), "r.json", &err));
		assert_int_equal(err.column, 41);
		assert_non_null(strstr(err.msg, "out of range"));
		sl_error_clear(&err);
		assert_null(sl_model_parse_json(t2, strlen(t2), "r.json", &err));
		assert_non_null(strstr(err.msg, "\"version\" must be the integer 1, got 1.0"));
	}

	/* a byte order mark is not part of the text */
	{
		static const char t3[] = "\xef\xbb\xbf{\"format\": \"shardlab-model\", "
		    "\"version\": 1, \"generator\": {\"family\": \"gpt\", \"layers\": 0}}";
		static const char t4[] = "\xef\xbb\xbf{\"format\": \"shardlab-model\", "
		    "\"version\": 1, \"generator\": {\"family\": \"gpt\"}}";
		sl_graph *g;

		sl_error_clear(&err);
		assert_null(sl_model_parse_json(t3, strlen(t3), "bom.json", &err));
		assert_int_equal(err.column, 85);
		assert_non_null(strstr(err.msg, "\"layers\" must be a positive integer, got 0"));
		sl_error_clear(&err);
		g = sl_model_parse_json(t4, strlen(t4), "bom.json", &err);
		assert_non_null(g);
		/* members left out take the family's real defaults (GPT-2) */
		assert_int_equal(g->n_layers, 12);
		sl_graph_free(g);
	}

	/* a model that names no file */
	sl_error_clear(&err);
	assert_null(sl_model_parse_json("", 0, NULL, &err));
	assert_string_equal(err.file, "<input>");
}

static void
test_model_open_errors(void **state)
{
	sl_error err;

	sl_error_clear(&err);
	assert_null(sl_model_open("gpt-9000b", NULL, &err));
	assert_int_equal(err.code, SL_EINPUT);
	assert_non_null(strstr(err.msg, "unknown model 'gpt-9000b': not a file and "
	    "not a bundled model (bundled: bert-large, gpt-1.7b"));
	sl_error_clear(&err);
	assert_null(sl_model_open(tmp_path("missing.json"), NULL, &err));
	assert_int_equal(err.code, SL_EINPUT);
	assert_non_null(strstr(err.msg, "cannot open"));
	sl_error_clear(&err);
	assert_null(sl_model_open(tmpdir, NULL, &err));
	assert_non_null(strstr(err.msg, "directory"));
	/* a file wins over a bundled name */
	{
		char cwd[1024];
		assert_non_null(getcwd(cwd, sizeof cwd));
		assert_int_equal(chdir(tmpdir), 0);
		write_file("mlp-2layer",
		    "{\"format\": \"shardlab-model\", \"version\": 1,\n"
		    " \"generator\": {\"family\": \"llama\", \"layers\": 1}}\n");
		sl_error_clear(&err);
		sl_graph *g = sl_model_open("mlp-2layer", NULL, &err);
		assert_non_null(g);
		assert_string_equal(g->name, "mlp-2layer");	/* from the file name */
		assert_int_equal(g->n_layers, 1);
		assert_int_equal(g->ops[1].kind, SL_OP_RMSNORM);
		sl_graph_free(g);
		unlink("mlp-2layer");
		assert_int_equal(chdir(cwd), 0);
	}
}

/* ----------------------------------------------------------------- jsonpos */

static void
test_jsonpos(void **state)
{
	/* BOM, CRLF, a two-byte and a four-byte character before values */
	static const char text[] = "\xef\xbb\xbf{\"a\xc3\xa9\": [1, {\"b\": \"\xf0\x9f\x99\x82\"}],\r\n"
	    "\t\"c\": {\"d\": [true, null, -2.5e3]}}";
	jp_error e;
	jp_doc *d = jp_scan(text, sizeof text - 1, &e);
	const jp_node *n;

	assert_non_null(d);
	n = jp_root(d);
	assert_int_equal(n->line, 1);
	assert_int_equal(n->col, 1);
	n = jp_find(d, "a\xc3\xa9[1].b");
	assert_non_null(n);
	assert_int_equal(n->type, JP_STRING);
	assert_int_equal(n->col, 18);
	n = jp_find(d, "c.d[2]");
	assert_non_null(n);
	assert_int_equal(n->type, JP_NUMBER);
	assert_int_equal(n->line, 2);
	assert_int_equal(n->col, 26);
	n = jp_member(jp_root(d), "c");
	assert_int_equal(n->key_line, 2);
	assert_int_equal(n->key_col, 2);
	assert_null(jp_find(d, "c.d[3]"));
	assert_null(jp_find(d, "x"));
	jp_free(d);

	/* a column counts characters: the error after an emoji */
	assert_null(jp_scan("[\"\xf0\x9f\x99\x82\" 1]", 10, &e));
	assert_int_equal(e.line, 1);
	assert_int_equal(e.col, 6);
	assert_null(jp_scan("{\"a\": 01}", 9, &e));
	assert_int_equal(e.col, 7);
	assert_null(jp_scan("{\"a\": \"\\ud800\"}", 15, &e));
	assert_non_null(strstr(e.msg, "surrogate"));
	assert_null(jp_scan("[1] x", 5, &e));
	assert_int_equal(e.col, 5);
	assert_null(jp_scan("{'a': 1}", 8, &e));
	assert_non_null(strstr(e.msg, "double quotes"));
	assert_null(jp_scan("[tru]", 5, &e));
	assert_int_equal(e.col, 2);
	assert_null(jp_scan("[\"a\\qb\"]", 8, &e));
	assert_int_equal(e.col, 4);
	assert_non_null(strstr(e.msg, "invalid escape '\\q'"));
	assert_null(jp_scan("[\"a\n\"]", 6, &e));
	assert_int_equal(e.line, 1);
	assert_int_equal(e.col, 4);
	assert_non_null(strstr(e.msg, "line break inside a string"));

	/* escaped keys are compared decoded */
	{
		static const char t[] = "{\"\\ud83d\\ude42\": 1, \"a\\\"b\\u00e9\": 2}";
		d = jp_scan(t, sizeof t - 1, &e);
		assert_non_null(d);
		n = jp_member(jp_root(d), "\xf0\x9f\x99\x82");
		assert_non_null(n);
		assert_int_equal(n->col, 18);
		n = jp_member(jp_root(d), "a\"b\xc3\xa9");
		assert_non_null(n);
		assert_int_equal(n->key_col, 21);
		jp_free(d);
	}
}

/*
 * The one reader: values and positions of the same text, an element of an
 * array included, found the same way whether positions are kept or the text
 * is scanned again (lazy); a missing member is reported at its object.
 */
static void
test_json_reader(void **state)
{
	static const char text[] = "{\"device\": {\"gemm\": [\n"
	    "  {\"m\": 1, \"tflops\": 2},\n"
	    "  {\"m\": -4, \"tflops\": 3}\n"
	    "]}, \"x\": [[1, 2], [3, true]]}\n";
	static const struct {
		const char *path;
		int line, col;
	} at[] = {
		{ "", 1, 1 },
		{ "device.gemm", 1, 21 },
		{ "device.gemm[1]", 3, 3 },
		{ "device.gemm[1].m", 3, 9 },
		{ "device.gemm[1].k", 3, 3 },	/* missing: its object */
		{ "device.gemm[7]", 1, 21 },	/* no such element: the array */
		{ "x[1][1]", 4, 23 },
		{ "x[1]", 4, 19 },
	};
	sl_error err;
	sl_json j;
	int line, col;

	for (int lazy = 0; lazy < 2; lazy++) {
		sl_error_clear(&err);
		if (lazy)
			sl_json_text(&j, "f.json", text, sizeof text - 1);
		else {
			assert_int_equal(sl_json_read(&j, "f.json", text,
			    sizeof text - 1, 0, SL_EINPUT, &err), SL_OK);
			assert_true(json_is_true(json_array_get(json_array_get(
			    json_object_get(j.root, "x"), 1), 1)));
		}
		for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
			sl_json_where(&j, at[i].path, &line, &col);
			if (line != at[i].line || col != at[i].col)
				fail_msg("%s (lazy %d): at %d:%d, expected %d:%d",
				    at[i].path, lazy, line, col, at[i].line,
				    at[i].col);
		}
		assert_int_equal(sl_json_fail(&j, &err, "device.gemm[1].m",
		    "\"%s\" must be greater than zero", "m"), SL_EINPUT);
		assert_string_equal(err.file, "f.json");
		assert_int_equal(err.line, 3);
		assert_int_equal(err.column, 9);
		sl_json_free(&j);
	}

	/* a syntax error: the code asked for, at the offending character */
	sl_error_clear(&err);
	assert_int_equal(sl_json_read(&j, "g.json", "[1,\n 2 3]", 9, 0,
	    SL_EINTERNAL, &err), SL_EINTERNAL);
	assert_null(j.root);
	assert_int_equal(err.line, 2);
	assert_int_equal(err.column, 4);
	assert_non_null(strstr(err.msg, "not valid JSON: expected ',' or ']'"));
	/* repeated members only when asked for; the last one wins */
	sl_error_clear(&err);
	assert_int_equal(sl_json_read(&j, "h.json", "{\"a\": 1, \"a\": 2}", 16,
	    0, SL_EINPUT, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "duplicate member"));
	assert_int_equal(sl_json_read(&j, "h.json", "{\"a\": 1, \"a\": 2}", 16,
	    SL_JSON_DUPLICATES, SL_EINPUT, NULL), SL_OK);
	assert_int_equal(json_integer_value(json_object_get(j.root, "a")), 2);
	sl_json_free(&j);

	/* the writer: what it writes reads back the same */
	{
		char path[600];
		json_t *v = json_pack("{s:i, s:[s, f]}", "n", 3, "l", "a", 0.5);

		snprintf(path, sizeof path, "%s/w.json", tmpdir);
		sl_error_clear(&err);
		assert_int_equal(sl_json_write(json_incref(v), path,
		    "cannot write", &err), SL_OK);
		assert_int_equal(sl_json_read_file(&j, path, 0, SL_EINPUT, &err),
		    SL_OK);
		assert_true(json_equal(j.root, v));
		sl_json_free(&j);
		json_decref(v);
		unlink(path);
	}
}

/*
 * The writer's layout (json.c): the top-level members one per line, a
 * table's records one per line (a table inside a record two deeper), the
 * rest of a record on its line, more than 16 scalars wrapped after every
 * 16, strings escaped, reals in their shortest exact form and still reals.
 */
/* Reads a whole document with the pull reader; its error (or a zero one). */
static jp_tok
pull_all(const char *text, size_t len, jp_error *e, int *values)
{
	jp_pull *p = jp_pull_new(text, len);
	jp_tok t;

	*values = 0;
	while ((t = jp_pull_next(p)) != JP_T_EOF && t != JP_T_ERROR)
		*values += t != JP_T_END;
	*e = *jp_pull_error(p);
	jp_pull_free(p);
	return t;
}

/*
 * The pull reader is as strict as the scanner: on good and bad texts alike
 * it accepts what jp_scan accepts, and stops at the same line and column
 * with the same message; its tokens, keys, strings and integers are the
 * document's, and skipping a container reads past all of it.
 */
static void
test_json_pull(void **state)
{
	static const char *const texts[] = {
		"{\"a\": [1, 2.5e3, -3], \"b\": {\"c\": null, \"d\": [true, false]}}",
		"\xef\xbb\xbf[1]", "[]", "{}", " \"x\" ", "[1,]", "{\"a\": 1,}",
		"[1 2]", "{\"a\" 1}", "{\"a\": 1 \"b\": 2}", "{\"a\": 1", "[1, [2",
		"{1: 2}", "[01]", "[1e999]", "[99999999999999999999]", "[\"a\n\"]",
		"[\"\\ud800\"]", "[1] x", "[tru]", "", "   ", "{'a': 1}", "[-]",
		"[\"\xff\"]", "{\"a\": {\"b\": [1, {\"c\": [}]}}", "[1.]",
	};
	jp_error e1, e2;
	int values;

	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		const char *s = texts[i];
		jp_doc *d = jp_scan(s, strlen(s), &e1);
		jp_tok t = pull_all(s, strlen(s), &e2, &values);

		if ((d != NULL) != (t == JP_T_EOF))
			fail_msg("'%s': the scanner %s it, the pull reader %s", s,
			    d != NULL ? "accepts" : "refuses",
			    t == JP_T_EOF ? "accepts" : "refuses");
		if (d == NULL && (e1.line != e2.line || e1.col != e2.col ||
		    strcmp(e1.msg, e2.msg) != 0))
			fail_msg("'%s': scanner %d:%d %s; pull reader %d:%d %s", s,
			    e1.line, e1.col, e1.msg, e2.line, e2.col, e2.msg);
		jp_free(d);
	}

	/* the tokens of the first text */
	{
		const char *s = texts[0];
		jp_pull *p = jp_pull_new(s, strlen(s));
		int64_t v;
		int line, col;

		assert_int_equal(jp_pull_next(p), JP_T_OBJECT);
		assert_null(jp_pull_key(p));
		assert_int_equal(jp_pull_next(p), JP_T_ARRAY);
		assert_string_equal(jp_pull_key(p), "a");
		jp_pull_where(p, &line, &col);
		assert_int_equal(col, 7);
		assert_int_equal(jp_pull_next(p), JP_T_NUMBER);
		assert_true(jp_pull_int64(p, &v));
		assert_int_equal(v, 1);
		assert_int_equal(jp_pull_next(p), JP_T_NUMBER);
		/* an integral real, as jansson's reals are taken */
		assert_true(jp_pull_int64(p, &v));
		assert_int_equal(v, 2500);
		assert_int_equal(jp_pull_next(p), JP_T_NUMBER);
		assert_true(jp_pull_int64(p, &v));
		assert_int_equal(v, -3);
		assert_int_equal(jp_pull_next(p), JP_T_END);
		assert_int_equal(jp_pull_depth(p), 1);
		/* "b" skipped whole */
		assert_int_equal(jp_pull_skip(p, jp_pull_next(p)), JP_T_END);
		assert_int_equal(jp_pull_depth(p), 1);
		assert_int_equal(jp_pull_next(p), JP_T_END);
		assert_int_equal(jp_pull_next(p), JP_T_EOF);
		jp_pull_free(p);
	}
	{
		jp_pull *p = jp_pull_new("[\"a\\u00e9\", 1.5]", 16);

		assert_int_equal(jp_pull_next(p), JP_T_ARRAY);
		assert_int_equal(jp_pull_next(p), JP_T_STRING);
		assert_string_equal(jp_pull_string(p), "a\xc3\xa9");
		assert_int_equal(jp_pull_next(p), JP_T_NUMBER);
		{
			int64_t v;
			assert_false(jp_pull_int64(p, &v));
		}
		jp_pull_free(p);
	}
}

/*
 * What a document's values would take is bounded by SHARDLAB_MAX_INPUT as
 * its text is: past sl_max_input() / 128 values the reader stops at the
 * first value too many, before jansson builds a tree, and says it is the
 * limit, not bad JSON.  An invalid limit is an error, not the default.
 */
static void
test_json_budget(void **state)
{
	char *text = malloc(4 + 2 * 10000);
	size_t n = 0;
	sl_error err;
	sl_json j;

	text[n++] = '[';
	for (int i = 0; i < 10000; i++)
		n += (size_t)sprintf(text + n, i ? ",0" : "0");
	text[n++] = ']';
	setenv("SHARDLAB_MAX_INPUT", "2MiB", 1);
	sl_error_clear(&err);
	assert_int_equal(sl_json_read(&j, "f.json", text, n, 0, SL_EINPUT, &err),
	    SL_OK);
	sl_json_free(&j);
	/* 128 KiB: 1024 values, the array and 1023 of its elements */
	setenv("SHARDLAB_MAX_INPUT", "128KiB", 1);
	sl_error_clear(&err);
	assert_int_equal(sl_json_read(&j, "f.json", text, n, 0, SL_EINPUT, &err),
	    SL_EINPUT);
	assert_null(j.root);
	assert_int_equal(err.line, 1);
	assert_int_equal(err.column, 2 + 2 * 1023);
	assert_non_null(strstr(err.msg, "too many values"));
	assert_null(strstr(err.msg, "not valid JSON"));
	setenv("SHARDLAB_MAX_INPUT", "lots", 1);
	assert_int_equal(sl_max_input(), -1);
	sl_error_clear(&err);
	assert_int_equal(sl_max_input_check(&err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "'lots'"));
	unsetenv("SHARDLAB_MAX_INPUT");
	assert_int_equal(sl_max_input(), SL_MAX_INPUT_DEFAULT);
	free(text);
}

static void
test_json_layout(void **state)
{
	static const char want[] =
	    "{\n"
	    "  \"format\": \"x\",\n"
	    "  \"s\": \"q\\\"b\\\\n\\n\\u0001\xc3\xa9/\",\n"
	    "  \"reals\": [0.1, 5.0, 1.345180000178516, 1e300, -2.5e-8],\n"
	    "  \"empty\": {\"o\": {}, \"a\": []},\n"
	    "  \"ops\": [\n"
	    "    {\"name\": \"a\", \"t\": [\n"
	    "      {\"k\": 1},\n"
	    "      [2, 3]\n"
	    "    ], \"n\": null},\n"
	    "    {\"name\": \"b\", \"ok\": true}\n"
	    "  ],\n"
	    "  \"long\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,\n"
	    "    16]\n"
	    "}\n";
	json_t *root, *lng = json_array();
	sl_json j;
	sl_error err;
	char *text;

	(void)state;
	for (int i = 0; i < 17; i++)
		json_array_append_new(lng, json_integer(i));
	root = json_pack("{s:s, s:s, s:[f, f, f, f, f], s:{s:{}, s:[]}, "
	    "s:[{s:s, s:[{s:i}, [i, i]], s:n}, {s:s, s:b}], s:o}",
	    "format", "x", "s", "q\"b\\n\n\x01\xc3\xa9/",
	    "reals", 0.1, 5.0, 1.345180000178516, 1e300, -2.5e-8,
	    "empty", "o", "a", "ops", "name", "a", "t", "k", 1, 2, 3, "n",
	    "name", "b", "ok", 1, "long", lng);
	assert_non_null(root);
	text = sl_json_format(json_incref(root));
	assert_non_null(text);
	if (strcmp(text, want) != 0)
		fail_msg("written:\n%s\nexpected:\n%s", text, want);
	/* and the one reader gives back the same values */
	sl_error_clear(&err);
	assert_int_equal(sl_json_read(&j, "w.json", text, strlen(text), 0,
	    SL_EINPUT, &err), SL_OK);
	assert_true(json_equal(j.root, root));
	sl_json_free(&j);
	free(text);
	json_decref(root);
}

/*
 * A real is written in the shortest of %.15g, %.16g, %.17g that reads back
 * as exactly the same double: 0.1 as "0.1", not 0.10000000000000001; a
 * double that needs 17 digits gets them.  Checked on 200,000 doubles of
 * every exponent, subnormal ones included (a fixed sequence).
 */
static int
sig_digits(const char *s)
{
	int n = 0, zeros = 0;
	bool lead = true;

	for (; *s != '\0' && *s != 'e'; s++) {
		if (*s < '0' || *s > '9')
			continue;
		if (lead && *s == '0')
			continue;
		lead = false;
		if (*s == '0')
			zeros++;
		else {
			n += zeros + 1;
			zeros = 0;
		}
	}
	return n;
}

static void
test_json_reals(void **state)
{
	static const struct {
		double d;
		const char *s;
	} known[] = {
		{ 0.1, "0.1" }, { 1.0 / 3.0, "0.3333333333333333" },
		{ 0.1 + 0.2, "0.30000000000000004" }, { 100.0, "100.0" },
		{ -0.0, "-0.0" }, { 1e21, "1e21" }, { 2e12, "2e12" },
		{ 4e-6, "4e-6" }, { 1.5e-5, "1.5e-5" }, { 1e-4, "0.0001" },
		{ 1e5, "100000.0" }, { 1e6, "1e6" }, { 3.12e14, "3.12e14" },
		{ 123456789012.0, "123456789012.0" }, { 1e15, "1e15" },
		{ 123456789012345678.0, "1.2345678901234568e17" },
		{ 5e-324, "5e-324" }, { 1.345, "1.345" },
	};
	char buf[32];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
		sl_json_format_real(known[i].d, buf, sizeof buf);
		assert_string_equal(buf, known[i].s);
	}
	sl_json_format_real(INFINITY, buf, sizeof buf);
	assert_string_equal(buf, "null");
	for (int i = 0; i < 200000; i++) {
		double d;
		char shorter[32];

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* a decimal of five digits comes back with at most five */
		snprintf(shorter, sizeof shorter, "%de%d", (int)(x % 100000),
		    (int)(x >> 56) % 40 - 20);
		d = strtod(shorter, NULL);
		sl_json_format_real(d, buf, sizeof buf);
		if (strtod(buf, NULL) != d || sig_digits(buf) > 5)
			fail_msg("%s written as %s", shorter, buf);
		memcpy(&d, &x, sizeof d);
		if (!isfinite(d))
			continue;
		sl_json_format_real(d, buf, sizeof buf);
		if (strtod(buf, NULL) != d)
			fail_msg("%s does not read back as %a", buf, d);
		/* and has no more digits than the fewest that read back */
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(shorter, sizeof shorter, "%.*g", prec, d);
			if (strtod(shorter, NULL) != d)
				continue;
			if (sig_digits(buf) > prec)
				fail_msg("%s for %a, %s reads back too", buf, d,
				    shorter);
			break;
		}
	}
}

/*
 * A kind is its row of the kind table: every row names its checks, its
 * kernel and its Megatron-LM rule, and its attributes are read and written
 * by the row alone.  tests/data/all_kinds.json has an operator of every
 * kind (a new kind adds one there): it reads, writes and reads back the
 * same, attributes included, and writes the attributes of the old switches
 * exactly so.
 */
static void
test_kind_table(void **state)
{
	static const struct {
		const char *op, *attrs;
	} written[] = {
		{ "heads", ", \"attrs\": {\"perm\": [0, 2, 1, 3]}}" },
		{ "drop", ", \"attrs\": {\"p\": 0.25}}" },
		{ "attention", ", \"attrs\": {\"heads\": 2, \"kv_heads\": 1, "
		    "\"dropout\": 0.125}}" },
		{ "lm_head", ", \"attrs\": {\"transpose_w\": true}}" },
		{ "wq", "\"outputs\": [\"q\"]}" },	/* no attributes: none written */
	};
	bool seen[SL_OP_KIND_COUNT] = { false };
	char path[600];
	sl_graph *g, *g2;
	sl_error err;
	char *t1, *t2;
	size_t n1, n2;

	for (int k = 0; k < SL_OP_KIND_COUNT; k++) {
		const sl_kind_info *ki = &sl_kinds[k];

		assert_non_null(ki->name);
		assert_int_equal(sl_op_kind_from_name(ki->name), k);
		assert_non_null(ki->check);
		assert_non_null(ki->bind);
		assert_non_null(ki->summary);
		assert_true(ki->min_in >= 1 && ki->min_in <= ki->max_in &&
		    ki->max_in <= SL_MAX_OP_TENSORS && ki->n_out >= 1);
		assert_true((int)ki->kernel >= 0 && ki->kernel < SL_KERNEL_COUNT);
		assert_true((int)ki->tp_rule >= 0 && ki->tp_rule < SL_TP_RULE_COUNT);
		for (const sl_attr *at = ki->attrs; at->name != NULL; at++) {
			assert_true(at - ki->attrs < SL_MAX_ATTRS);
			assert_true((int)at->type >= 0 && at->type < SL_ATTR_TYPE_COUNT);
			assert_true(at->field < sizeof(sl_op));
			if (at->divides != NULL) {
				const sl_attr *d = ki->attrs;
				while (d->name != NULL && strcmp(d->name, at->divides) != 0)
					d++;
				if (d->name == NULL)
					fail_msg("%s: \"%s\" divides \"%s\", not an "
					    "attribute of the kind", ki->name, at->name,
					    at->divides);
			}
		}
	}
	/* the heavy kinds no baseline replicates: those with compute kernels */
	assert_true(sl_kind_is_heavy(SL_OP_MATMUL));
	assert_true(sl_kind_is_heavy(SL_OP_BMM));
	assert_true(sl_kind_is_heavy(SL_OP_ATTENTION));
	assert_false(sl_kind_is_heavy(SL_OP_EMBEDDING));
	assert_false(sl_kind_is_heavy(SL_OP_SOFTMAX));

	snprintf(path, sizeof path, "%s/data/all_kinds.json", srcdir_tests());
	sl_error_clear(&err);
	g = sl_model_load_json(path, &err);
	if (g == NULL)
		fail_msg("%s", err.msg);
	for (int i = 0; i < g->n_ops; i++)
		seen[g->ops[i].kind] = true;
	for (int k = 0; k < SL_OP_KIND_COUNT; k++)
		if (!seen[k])
			fail_msg("tests/data/all_kinds.json has no %s operator",
			    sl_kinds[k].name);
	assert_int_equal(sl_model_save_json(g, tmp_path("kinds1.json"), &err), SL_OK);
	g2 = sl_model_load_json(tmp_path("kinds1.json"), &err);
	if (g2 == NULL)
		fail_msg("%s", err.msg);
	assert_int_equal(sl_model_save_json(g2, tmp_path("kinds2.json"), &err), SL_OK);
	t1 = slurp(tmp_path("kinds1.json"), &n1);
	t2 = slurp(tmp_path("kinds2.json"), &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(t1, t2, n1);
	assert_int_equal(g2->n_ops, g->n_ops);
	for (int i = 0; i < g->n_ops; i++) {
		const sl_op *a = &g->ops[i], *b = &g2->ops[i];

		assert_string_equal(a->name, b->name);
		assert_int_equal(a->kind, b->kind);
		assert_int_equal(a->heads, b->heads);
		assert_int_equal(a->kv_heads, b->kv_heads);
		assert_memory_equal(a->perm, b->perm, sizeof a->perm);
		assert_true(a->p == b->p);
		assert_int_equal(a->transpose_w, b->transpose_w);
	}
	/* the values of the file, and the defaults of absent attributes */
	{
		const sl_op *o = &g->ops[sl_graph_find_op(g, "attention")];
		assert_int_equal(o->heads, 2);
		assert_int_equal(o->kv_heads, 1);
		assert_true(o->p == 0.125);
		o = &g->ops[sl_graph_find_op(g, "heads")];
		assert_int_equal(o->perm[1], 2);
		assert_int_equal(o->perm[2], 1);
		assert_true(g->ops[sl_graph_find_op(g, "drop")].p == 0.25);
		assert_true(g->ops[sl_graph_find_op(g, "lm_head")].transpose_w);
		assert_false(g->ops[sl_graph_find_op(g, "wq")].transpose_w);
	}
	for (size_t i = 0; i < sizeof written / sizeof written[0]; i++) {
		char needle[64];
		const char *line;

		snprintf(needle, sizeof needle, "{\"name\": \"%s\", \"kind\"",
		    written[i].op);
		line = strstr(t1, needle);
		assert_non_null(line);
		if (strncmp(strchr(line, '\n') - strlen(written[i].attrs) -
		    (line[strcspn(line, "\n") - 1] == ',' ? 1 : 0),
		    written[i].attrs, strlen(written[i].attrs)) != 0)
			fail_msg("%s: expected the line to end with %s: %.*s",
			    written[i].op, written[i].attrs,
			    (int)strcspn(line, "\n"), line);
	}
	free(t1);
	free(t2);
	sl_graph_free(g);
	sl_graph_free(g2);

	/* an absent dropout probability is the row's default; a missing
	 * required attribute is named with what it must be */
	{
		static const char head[] = "{\"format\": \"shardlab-model\", "
		    "\"version\": 1, \"tensors\": ["
		    "{\"name\": \"x\", \"shape\": [2, 4], \"role\": \"input\"},"
		    "{\"name\": \"y\", \"shape\": [%s]}], \"ops\": [%s]}";
		char m[1024];

		snprintf(m, sizeof m, head, "2, 4", "{\"name\": \"d\", \"kind\": "
		    "\"dropout\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}");
		sl_error_clear(&err);
		g = sl_model_parse_json(m, strlen(m), "m.json", &err);
		if (g == NULL)
			fail_msg("%s", err.msg);
		assert_true(g->ops[0].p == 0.1);
		sl_graph_free(g);
		snprintf(m, sizeof m, head, "4, 2", "{\"name\": \"t\", \"kind\": "
		    "\"transpose\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], "
		    "\"attrs\": {}}");
		assert_null(sl_model_parse_json(m, strlen(m), "m.json", &err));
		assert_non_null(strstr(err.msg, "operator 't': missing attribute "
		    "\"perm\" (a permutation of 0..1)"));
	}
}

static int
setup(void **state)
{
	const char *t = getenv("TMPDIR");

	ensure_datadir();
	snprintf(tmpdir, sizeof tmpdir, "%s/test_models.XXXXXX", t && *t ? t : "/tmp");
	if (mkdtemp(tmpdir) == NULL)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	char cmd[600];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bundled_all_load),
		cmocka_unit_test(test_gpt_parameter_counts),
		cmocka_unit_test(test_bert_large),
		cmocka_unit_test(test_llama_7b),
		cmocka_unit_test(test_gpt_structure_and_tied_embedding),
		cmocka_unit_test(test_batch_follows_mesh),
		cmocka_unit_test(test_mlp_2layer),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_round_trip_attrs),
		cmocka_unit_test(test_gen_checks),
		cmocka_unit_test(test_hf_llama),
		cmocka_unit_test(test_hf_gpt2_bert_mistral),
		cmocka_unit_test(test_hf_errors),
		cmocka_unit_test(test_hf_published),
		cmocka_unit_test(test_hf_refused),
		cmocka_unit_test(test_hf_fields),
		cmocka_unit_test(test_bad_corpus),
		cmocka_unit_test(test_truncated_and_mutated),
		cmocka_unit_test(test_hostile_inputs),
		cmocka_unit_test(test_model_open_errors),
		cmocka_unit_test(test_jsonpos),
		cmocka_unit_test(test_json_reader),
		cmocka_unit_test(test_json_pull),
		cmocka_unit_test(test_json_budget),
		cmocka_unit_test(test_json_layout),
		cmocka_unit_test(test_json_reals),
		cmocka_unit_test(test_kind_table),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
