/*
 * test_finetune.c: fine-tuning recipes (recipe.c, space.c, compute.c):
 * LoRA and QLoRA of LLaMA-2-7B at rank 16 on q and v, every figure worked
 * out by hand below: the frozen weights, the adapters' states, the NF4
 * layout of bitsandbytes, what the frozen layers keep for backward, and
 * the FLOPs of a frozen matmul's backward.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * LLaMA-2-7B (meta-llama/Llama-2-7b-hf config.json): 32 layers, hidden
 * 4096, 32 heads, SwiGLU 11008, vocabulary 32000, untied embeddings; one
 * sample of 512 tokens.
 */
#define L 32
#define H 4096
#define F 11008
#define V 32000
#define S 512
#define R 16

/* Parameters: embedding and head H x V each, per layer qkv H x 3H, o H x H,
 * gate, up and down H x F each, two RMSNorm scales; the final norm. */
#define P_LAYER_MATMUL ((int64_t)H * 3 * H + (int64_t)H * H + 3 * (int64_t)H * F)
#define P_TOTAL (2 * (int64_t)H * V + L * (P_LAYER_MATMUL + 2 * H) + H)
/* Adapters on q and v: A (H x r) and B (r x H) each, per layer. */
#define P_ADAPTERS ((int64_t)L * 2 * (H * R + R * H))

static sl_space *
llama_space(sl_finetune ft, sl_graph **g)
{
	sl_gen_config c;
	sl_hw hw;
	sl_mesh m;
	sl_space_opts so;
	sl_error err;
	int shape[1] = { 1 };
	sl_space *s;

	sl_gen_defaults(SL_FAM_LLAMA, &c);
	c.layers = L;
	c.hidden = H;
	c.heads = 32;
	c.kv_heads = 32;
	c.ffn = F;
	c.vocab = V;
	c.seq = S;
	c.batch = 1;
	sl_error_clear(&err);
	*g = sl_gen(&c, &err);
	assert_non_null(*g);
	assert_int_equal(sl_hw_load("h100-nvlink", &hw, &err), SL_OK);
	assert_int_equal(sl_mesh_make(&hw, 1, shape, &m, &err), SL_OK);
	sl_space_opts_default(&so);
	so.recipe.finetune = ft;
	so.recipe.lora_rank = R;
	so.recipe.lora_targets = SL_LORA_Q | SL_LORA_V;
	s = sl_space_build(*g, &m, &so, &err);
	assert_non_null(s);
	return s;
}

static void
states(sl_finetune ft, sl_mem *out)
{
	sl_graph *g;
	sl_space *s = llama_space(ft, &g);
	int *choice = calloc(g->n_ops, sizeof *choice);
	sl_eval ev;
	sl_error err;

	assert_non_null(choice);
	sl_error_clear(&err);
	assert_int_equal(sl_evaluate(s, choice, 0, &ev, &err), SL_OK);
	*out = ev.dev[0];
	/* one device: nothing is redundant, nothing counted short */
	assert_int_equal(ev.redundant, 0);
	sl_eval_free(&ev);
	free(choice);
	sl_space_free(s);
	sl_graph_free(g);
}

/* bitsandbytes' NF4 storage of e elements, double-quantised: e / 2 packed
 * bytes, the 16-value fp32 code, one uint8 absmax per block of 64, an fp32
 * absmax per 256 of those, the fp32 offset. */
static int64_t
nf4(int64_t e)
{
	int64_t blocks = (e + 63) / 64;

	return e / 2 + 16 * 4 + blocks + (blocks + 255) / 256 * 4 + 4;
}

static void
test_nf4_layout(void **state)
{
	(void)state;
	/* 4096 x 4096: 8388608 + 64 + 262144 + 1024 x 4 + 4 */
	assert_int_equal(sl_nf4_bytes((int64_t)H * H, true), 8654916);
	/* without double quantisation: an fp32 absmax per block */
	assert_int_equal(sl_nf4_bytes((int64_t)H * H, false),
	    8388608 + 64 + 262144 * 4);
	assert_int_equal(sl_nf4_bytes(0, true), 0);
}

static void
test_lora_states(void **state)
{
	sl_mem m;

	(void)state;
	/* 6738415616 parameters: LLaMA-2-7B */
	assert_int_equal(P_TOTAL, 6738415616LL);
	assert_int_equal(P_ADAPTERS, 8388608);
	states(SL_FT_LORA, &m);
	/* frozen bf16 weights and fp32 adapters; fp32 gradients and Adam's
	 * two fp32 moments of the adapters alone (PEFT keeps them in fp32) */
	assert_int_equal(m.params, 2 * P_TOTAL + 4 * P_ADAPTERS);
	assert_int_equal(m.grads, 4 * P_ADAPTERS);
	assert_int_equal(m.optim, 8 * P_ADAPTERS);
}

static void
test_qlora_states(void **state)
{
	sl_mem m;
	int64_t layer;

	(void)state;
	states(SL_FT_QLORA, &m);
	/* every layer matmul 4-bit; embedding, head and norms bf16 */
	layer = nf4((int64_t)H * 3 * H) + nf4((int64_t)H * H) +
	    3 * nf4((int64_t)H * F);
	assert_int_equal(m.params, 2 * (2 * (int64_t)H * V + L * 2 * H + H) +
	    L * layer + 4 * P_ADAPTERS);
	assert_int_equal(m.grads, 4 * P_ADAPTERS);
	assert_int_equal(m.optim, 8 * P_ADAPTERS);
}

struct saved {
	int64_t bytes;
};

static void
count_saved(void *ctx, const sl_mem_item *it)
{
	struct saved *c = ctx;

	if (it->kind == SL_BUF_SAVED)
		c->bytes += it->local;
}

static int64_t
saved_of(const sl_space *s, const char *op)
{
	struct saved c = { 0 };
	int v = sl_graph_find_op(s->g, op);

	assert_true(v >= 0);
	sl_node_items(s, v, 0, NULL, count_saved, &c);
	return c.bytes;
}

/*
 * What the frozen layers keep: a matmul keeps its input for its weight
 * gradient alone, so a frozen one without adapters keeps nothing (PyTorch's
 * linear saves only what the gradients it forms read); bitsandbytes' 4-bit
 * matmul keeps its input whenever its input needs a gradient.  The
 * embedding's output gets no gradient under LoRA, so layer 0's first norm
 * keeps nothing either.
 */
static void
test_saved(void **state)
{
	sl_graph *g;
	sl_space *s;
	int64_t x = (int64_t)S * H * 2;		/* a bf16 [512, 4096] */

	(void)state;
	s = llama_space(SL_FT_LORA, &g);
	assert_int_equal(saved_of(s, "layer1.gate"), 0);
	assert_int_equal(saved_of(s, "layer1.down"), 0);
	assert_int_equal(saved_of(s, "layer1.qkv"), x);	/* dA = x^T d(xA) */
	assert_int_equal(saved_of(s, "layer0.ln1"), 0);
	assert_true(saved_of(s, "layer1.ln1") > 0);
	assert_true(sl_space_grad(s, s->g->ops[sl_graph_find_op(s->g,
	    "layer1.gate")].in[0]));
	sl_space_free(s);
	sl_graph_free(g);

	s = llama_space(SL_FT_QLORA, &g);
	assert_int_equal(saved_of(s, "layer1.gate"), x);
	assert_int_equal(saved_of(s, "layer1.down"), (int64_t)S * F * 2);
	sl_space_free(s);
	sl_graph_free(g);

	s = llama_space(SL_FT_NONE, &g);
	assert_int_equal(saved_of(s, "layer1.gate"), x);
	sl_space_free(s);
	sl_graph_free(g);
}

static sl_compute
compute_of(const sl_space *s, const char *op)
{
	sl_compute c;
	int v = sl_graph_find_op(s->g, op);

	assert_true(v >= 0);
	sl_node_compute(s, v, 0, NULL, &c);
	return c;
}

/*
 * Backward FLOPs: a frozen matmul forms its input's gradient alone (2 m k
 * n, no weight gradient); an adapter of rank r on n of the columns adds
 * dB = (x A)^T dY (2 m r n), d(x A) = dY B^T (2 m r n), dA = x^T d(x A)
 * (2 m k r) and, where x has a gradient, d(x A) A^T (2 m k r).
 */
static void
test_backward_flops(void **state)
{
	sl_graph *g;
	sl_space *s;
	const int64_t m = S, k = H;
	int64_t w_fwd = 2 * m * k * 3 * H;
	int64_t ad_fwd = 2 * (2 * m * k * R + 2 * m * R * H);
	sl_compute c;

	(void)state;
	s = llama_space(SL_FT_LORA, &g);
	c = compute_of(s, "layer1.qkv");
	assert_int_equal(c.flops_fwd, w_fwd + ad_fwd);
	assert_int_equal(c.flops_bwd, w_fwd + 2 * (4 * m * R * H + 4 * m * k * R));
	/* layer 0's qkv reads the embedding's norm: no gradient there */
	c = compute_of(s, "layer0.qkv");
	assert_int_equal(c.flops_bwd, 2 * (4 * m * R * H + 2 * m * k * R));
	c = compute_of(s, "layer1.gate");
	assert_int_equal(c.flops_bwd, c.flops_fwd);
	assert_int_equal(c.flops_fwd, 2 * m * k * F);
	/* the optimizer steps over the adapters alone */
	assert_int_equal(compute_of(s, "layer1.qkv").param_elems, 2 * (H * R + R * H));
	assert_int_equal(compute_of(s, "layer1.gate").param_elems, 0);
	assert_int_equal(compute_of(s, "embed").param_elems, 0);
	/* the embedding's backward does not run */
	c = compute_of(s, "embed");
	assert_int_equal(c.flops_bwd, 0);
	assert_int_equal(c.bwd_ns, 0);
	sl_space_free(s);
	sl_graph_free(g);

	s = llama_space(SL_FT_NONE, &g);
	c = compute_of(s, "layer1.gate");
	assert_int_equal(c.flops_bwd, 2 * c.flops_fwd);
	sl_space_free(s);
	sl_graph_free(g);
}

/*
 * Model FLOPs under LoRA: every forward; backward where a gradient flows,
 * a frozen matmul its input gradient alone (1x its forward), attention 2x;
 * layer 0's qkv reads the frozen embedding's norm and forms no input
 * gradient; the adapters' products.
 */
static void
test_model_flops(void **state)
{
	sl_graph *g;
	sl_space *s;
	const double m = S, k = H, r = R, n = 2.0 * H;	/* q and v columns */
	double mm = 2 * m * k * (3.0 * H + H + 3.0 * F);	/* a layer's matmuls */
	double qkv = 2 * m * k * 3.0 * H, head = 2 * m * k * V, att, ad_f, want;

	(void)state;
	s = llama_space(SL_FT_LORA, &g);
	att = sl_op_model_flops(g, &g->ops[sl_graph_find_op(g, "layer0.attn")]);
	ad_f = 2 * m * k * r * 2 + 2 * m * r * n;
	want = L * (mm + att + ad_f) + head +			/* forward */
	    (mm - qkv) + 2 * att + 4 * m * r * n + 2 * m * k * r * 2 +	/* layer 0 */
	    (L - 1) * (mm + 2 * att + 4 * m * r * n + 2 * m * k * r * 2 * 2) +
	    head;
	assert_true(sl_recipe_model_flops(g, &s->opts.recipe) == want);
	/* pre-training: three times the forward */
	s->opts.recipe.finetune = SL_FT_NONE;
	assert_true(sl_recipe_model_flops(g, &s->opts.recipe) ==
	    3 * (L * (mm + att) + head));
	sl_space_free(s);
	sl_graph_free(g);
}

static void
test_targets(void **state)
{
	unsigned t;
	char why[160], buf[64];

	(void)state;
	assert_true(sl_lora_targets_parse("q,v", &t, why, sizeof why));
	assert_int_equal(t, SL_LORA_Q | SL_LORA_V);
	assert_true(sl_lora_targets_parse("q_proj,v_proj,down", &t, why, sizeof why));
	assert_int_equal(t, SL_LORA_Q | SL_LORA_V | SL_LORA_DOWN);
	assert_string_equal(sl_lora_targets_format(t, buf, sizeof buf), "q,v,down");
	assert_true(sl_lora_targets_parse("all-linear", &t, why, sizeof why));
	assert_string_equal(sl_lora_targets_format(t, buf, sizeof buf), "all");
	assert_false(sl_lora_targets_parse("q,x", &t, why, sizeof why));
	assert_non_null(strstr(why, "'x'"));
	assert_false(sl_lora_targets_parse("q,", &t, why, sizeof why));
	assert_false(sl_lora_targets_parse("", &t, why, sizeof why));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nf4_layout),
		cmocka_unit_test(test_lora_states),
		cmocka_unit_test(test_qlora_states),
		cmocka_unit_test(test_saved),
		cmocka_unit_test(test_backward_flops),
		cmocka_unit_test(test_model_flops),
		cmocka_unit_test(test_targets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
