/*
 * test_framework_memory.c: memory as the framework of a plan keeps it,
 * against hand calculations.
 *  - Megatron-LM's sequence parallelism: a column-parallel linear keeps its
 *    input split over the sequence and gathers it again for the weight
 *    gradient, so a GPT layer keeps 34 s b h / t (Korthikanti et al. 2022)
 *    plus flash attention's log-sum-exp.
 *  - Megatron-LM's distributed optimizer: the fp32 master weights and
 *    Adam's moments are divided over the data-parallel ranks; the bf16
 *    weights and the fp32 main gradients are not.
 *  - FSDP2 resharding after forward (torchtitan's "always", which the export
 *    writes): a block's gathered weights live around its forward and again
 *    around its backward, never across the loss.
 */
#include "testutil.h"
#include "internal.h"
#include "mlp.h"

#include <stdlib.h>
#include <string.h>

/* The summed activations of one layer's operators, edges into them included. */
struct layer_acts {
	int first, n;
	int64_t acts;
};

static void
add_acts(void *ctx, const sl_mem_item *it)
{
	struct layer_acts *l = ctx;

	if (it->summed && it->cat == SL_CAT_ACTS && it->op >= l->first &&
	    it->op < l->first + l->n)
		l->acts += it->local;
}

struct sp_colls {
	int n;
	int64_t bytes;
};

static void
count_sp(void *ctx, const sl_coll_item *c)
{
	struct sp_colls *a = ctx;

	if (c->cause == SL_CAUSE_SP_GATHER) {
		a->n++;
		a->bytes += c->bytes;
		assert_int_equal(c->phase, SL_PHASE_BWD);
		assert_int_equal(c->coll, SL_COLL_ALL_GATHER);
	}
}

/* gpt-1.7b's layer shape (s 2048, h 2304, 24 heads, b 1), two layers */
enum { S = 2048, H = 2304, A = 24 };
static const int64_t sbh = (int64_t)S * H;

/*
 * One GPT layer's activations (the second layer's, summed) and its
 * sequence-parallel gathers, for a plan kind base on t devices under
 * framework fw, attention at and recomputation rc.
 */
static int64_t
layer_acts(int t, sl_framework fw, sl_baseline_kind base, sl_attention at,
    sl_recompute rc, struct sp_colls *spc)
{
	sl_gen_config c;
	sl_error err;
	sl_graph *g;
	sl_mesh m;
	sl_space_opts so;
	sl_space *sp;
	sl_scored_plan sc;
	sl_baseline_opts bo = { .mem_budget = -1 };
	struct layer_acts la;

	sl_error_clear(&err);
	sl_gen_defaults(SL_FAM_GPT, &c);
	c.layers = 2, c.hidden = H, c.heads = c.kv_heads = A, c.ffn = 4 * H;
	c.seq = S, c.vocab = 51200, c.batch = 1;
	g = sl_gen(&c, &err);
	assert_non_null(g);
	assert_int_equal(tu_mesh("h100-nvlink", 1, t, 1, &m), SL_OK);
	sl_space_opts_default(&so);
	so.recipe.framework = fw;
	so.recipe.attention = at;
	so.recipe.recompute = rc;
	sp = sl_space_build(g, &m, &so, &err);
	assert_non_null(sp);
	assert_int_equal(sl_baseline_plan(sp, base, &bo, NULL, &sc, &err), SL_OK);
	la.first = g->layers[1].first_op;
	la.n = g->layers[1].n_ops;
	la.acts = 0;
	sl_step_items(sp, sc.choice, NULL, true, add_acts, &la);
	spc->n = 0;
	spc->bytes = 0;
	for (int e = 0; e < sp->n_edges; e++) {
		const sl_space_edge *ed = &sp->edges[e];
		if (ed->dst >= la.first && ed->dst < la.first + la.n)
			sl_edge_colls(sp, e, sc.choice[ed->src], sc.choice[ed->dst],
			    count_sp, spc);
	}
	for (int v = la.first; v < la.first + la.n; v++)
		sl_node_colls(sp, v, sc.choice[v], count_sp, spc);
	sl_scored_plan_free(&sc);
	sl_space_free(sp);
	sl_graph_free(g);
	return la.acts;
}

/*
 * Korthikanti et al. 2022 (Reducing Activation Recomputation in Large
 * Transformer Models), Table 2, per layer in bytes, with 2-byte
 * activations and attention dropout:
 *   tensor parallel          s b h (10 + 24/t + 5 a s / (h t))
 *   tensor + sequence par.   s b h (34/t + 5 a s / (h t))
 *   + selective recompute    s b h 34/t
 *   full recompute           the layer's input: 2 s b h, split over the
 *                            sequence under sequence parallelism (2 s b h / t;
 *                            megatron/core/transformer/transformer_block.py
 *                            checkpoints hidden_states as [s/t, b, h])
 * Flash attention keeps no s^2 term but an fp32 log-sum-exp per row and
 * head: 4 a s b / t.  Beside the paper's terms, the two LayerNorms keep
 * their fp32 mean and reciprocal deviation, 8 bytes a row: 16 s b, over
 * the sequence split under sequence parallelism (st / t), whole without.
 */
static void
check_sp_layer(int t)
{
	const int64_t lse = 4 * (A / t) * S, scores = 5 * (int64_t)A * S * S / t;
	const int64_t st = 2 * 8 * S;
	struct sp_colls spc;

	/* sequence parallel, flash: qkv and fc1 gather their input again,
	 * the whole sequence at 2 bytes an element */
	assert_int_equal(layer_acts(t, SL_FW_MEGATRON, SL_BASE_MEGATRON_SP,
	    SL_ATTN_FLASH, SL_RECOMP_NONE, &spc), 34 * sbh / t + st / t + lse);
	assert_int_equal(spc.n, 2);
	assert_int_equal(spc.bytes, 2 * 2 * sbh);
	/* the paper's figure itself: naive attention keeps the 5 a s^2 b */
	assert_int_equal(layer_acts(t, SL_FW_MEGATRON, SL_BASE_MEGATRON_SP,
	    SL_ATTN_NAIVE, SL_RECOMP_NONE, &spc), 34 * sbh / t + st / t + scores);
	assert_int_equal(layer_acts(t, SL_FW_MEGATRON, SL_BASE_MEGATRON_SP,
	    SL_ATTN_NAIVE, SL_RECOMP_SELECTIVE, &spc), 34 * sbh / t + st / t);
	assert_int_equal(layer_acts(t, SL_FW_MEGATRON, SL_BASE_MEGATRON_SP,
	    SL_ATTN_FLASH, SL_RECOMP_FULL, &spc), 2 * sbh / t);
	/* tensor parallel alone: the input arrives whole and is kept so,
	 * and nothing is gathered again */
	assert_int_equal(layer_acts(t, SL_FW_MEGATRON, SL_BASE_MEGATRON,
	    SL_ATTN_NAIVE, SL_RECOMP_NONE, &spc), 10 * sbh + 24 * sbh / t + st +
	    scores);
	assert_int_equal(spc.n, 0);
	assert_int_equal(layer_acts(t, SL_FW_MEGATRON, SL_BASE_MEGATRON,
	    SL_ATTN_NAIVE, SL_RECOMP_SELECTIVE, &spc), 10 * sbh + 24 * sbh / t + st);
	/* a framework that keeps the gathered input (PyTorch autograd
	 * saves what the matmul reads): qkv's and fc1's whole, 2 s b h
	 * each, instead of 2 s b h / t */
	assert_int_equal(layer_acts(t, SL_FW_FREE, SL_BASE_MEGATRON_SP,
	    SL_ATTN_FLASH, SL_RECOMP_NONE, &spc), 34 * sbh / t + st / t + lse +
	    2 * (2 * sbh - 2 * sbh / t));
	assert_int_equal(spc.n, 0);
}

/*
 * No tensor parallelism (t = 1): every framework keeps 34 s b h (and the
 * scores, and the norms' statistics 16 s b), one copy of the attention
 * output among them: the projection's input, which PyTorch's fused
 * kernels also keep as their output (their transpose(1, 2).contiguous() is
 * a view), and which naive attention's P V never keeps (it keeps P and V).
 */
static void
test_one_copy_of_attention_output(void **state)
{
	struct sp_colls spc;

	(void)state;
	for (int fw = 0; fw < SL_FW_COUNT; fw++) {
		assert_int_equal(layer_acts(1, (sl_framework)fw, SL_BASE_DP,
		    SL_ATTN_FLASH, SL_RECOMP_NONE, &spc), 34 * sbh + 16 * S +
		    4 * A * S);
		assert_int_equal(layer_acts(1, (sl_framework)fw, SL_BASE_DP,
		    SL_ATTN_NAIVE, SL_RECOMP_NONE, &spc),
		    34 * sbh + 16 * S + 5 * (int64_t)A * S * S);
	}
}

static void
test_megatron_sp_layer(void **state)
{
	(void)state;
	check_sp_layer(2);
	check_sp_layer(4);
	check_sp_layer(8);
}

struct by_cat {
	int64_t cat[SL_CAT_COUNT];
};

static void
add_cat(void *ctx, const sl_mem_item *it)
{
	struct by_cat *b = ctx;

	if (it->summed)
		b->cat[it->cat] += it->local;
}

/*
 * The MLP's data-parallel plan on d = 4 devices under Megatron-LM, without
 * and with the distributed optimizer (megatron/core/optimizer/
 * distrib_optimizer.py; the table of docs/source/api-guide/
 * dist_optimizer.md): bf16 parameters with fp32 main gradients keep
 * 18 bytes a parameter, or 6 + 12/d (the bf16 weight and the fp32 main
 * gradient whole, the fp32 master weight and Adam's two moments divided);
 * fp32 parameters and gradients 16, or 8 + 8/d (no master copy: only the
 * moments are divided).  2,097,152 parameters.
 */
static void
test_distributed_optimizer(void **state)
{
	static const struct {
		sl_precision prec;
		int weight, grad, states;
	} rows[] = {
		{ SL_PREC_MEGATRON, 2, 4, 12 },
		{ SL_PREC_FP32, 4, 4, 8 },
	};
	const int64_t P = 2097152, d = 4;
	sl_graph *g = tu_mlp();
	sl_error err;
	sl_mesh m;

	(void)state;
	sl_error_clear(&err);
	assert_non_null(g);
	assert_int_equal(tu_mesh("h100-nvlink", 1, (int)d, 1, &m), SL_OK);
	for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
	for (int shard = 0; shard < 2; shard++) {
		sl_space_opts so;
		sl_space *sp;
		sl_scored_plan sc;
		sl_baseline_opts bo = { .mem_budget = -1 };
		struct by_cat b = { { 0 } };

		sl_space_opts_default(&so);
		so.zero = false;
		so.recipe.framework = SL_FW_MEGATRON;
		so.recipe.precision = rows[r].prec;
		so.recipe.shard_states = shard;
		sp = sl_space_build(g, &m, &so, &err);
		assert_non_null(sp);
		assert_int_equal(sl_baseline_plan(sp, SL_BASE_DP, &bo, NULL, &sc,
		    &err), SL_OK);
		for (int v = 0; v < g->n_ops; v++)
			sl_node_items(sp, v, sc.choice[v], NULL, add_cat, &b);
		assert_int_equal(b.cat[SL_CAT_PARAMS], rows[r].weight * P);
		assert_int_equal(b.cat[SL_CAT_GRADS], rows[r].grad * P);
		assert_int_equal(b.cat[SL_CAT_OPTIM], shard ?
		    rows[r].states * P / d : rows[r].states * P);
		sl_scored_plan_free(&sc);
		sl_space_free(sp);
	}
	sl_graph_free(g);
}

/*
 * ZeRO-3 / FSDP2 on the MLP over 4 devices (dp+z everywhere): each
 * weight's gathered copy (its whole 2 B elements) lives from the forward
 * of the layer before to its own forward, and its backward copy from the
 * backward of the layer after to its own backward; at the loss task none
 * is alive.
 */
static void
test_fsdp_reshard_after_forward(void **state)
{
	sl_graph *g = tu_mlp();
	sl_error err;
	sl_mesh m;
	sl_space_opts so;
	sl_space *sp;
	sl_timeline tl;
	int choice[3], loss = -1, gathers = 0;

	(void)state;
	sl_error_clear(&err);
	assert_int_equal(tu_mesh("h100-nvlink", 1, 4, 1, &m), SL_OK);
	sl_space_opts_default(&so);
	so.recipe.framework = SL_FW_TORCHTITAN;
	sp = sl_space_build(g, &m, &so, &err);
	assert_non_null(sp);
	choice[0] = sl_space_find_strategy(sp, 0, "dp+z");
	choice[1] = sl_space_find_strategy(sp, 1, "dp");
	choice[2] = sl_space_find_strategy(sp, 2, "dp+z");
	assert_true(choice[0] >= 0 && choice[1] >= 0 && choice[2] >= 0);
	assert_int_equal(sl_timeline_build(sp, choice, 0, false, &tl, &err), SL_OK);
	for (int p = 0; p < tl.n_tasks; p++)
		if (tl.task[tl.order[p]].kind == SL_TASK_LOSS)
			loss = p;
	assert_true(loss > 0);
	for (int i = 0; i < tl.n_bufs; i++) {
		const sl_tl_buf *b = &tl.buf[i];
		if (b->kind != SL_BUF_GATHER)
			continue;
		gathers++;
		/* the whole weight, 512 x 2048 x 2 bytes */
		assert_int_equal(b->bytes, 512 * 2048 * 2);
		assert_false(b->first <= loss && loss <= b->last);
	}
	assert_int_equal(gathers, 4);	/* w1 and w2, forward and backward */
	sl_timeline_free(&tl);
	sl_space_free(sp);
	sl_graph_free(g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_megatron_sp_layer),
		cmocka_unit_test(test_one_copy_of_attention_output),
		cmocka_unit_test(test_distributed_optimizer),
		cmocka_unit_test(test_fsdp_reshard_after_forward),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
