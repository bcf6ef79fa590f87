/*
 * test_pipeline.c: pipeline schedules, per-stage memory against hand
 * calculations, the hybrid search against exhaustive enumeration, and the
 * GPT-3 175B configuration of Narayanan et al. (SC21).
 */
#include "testutil.h"
#include "gpt3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ models */

/* A stack of L layers, each fc (x[b,h] w[h,h]) then gelu, bf16; h = 256. */
typedef struct stack { int layers; int64_t hidden; } stack;

static sl_graph *
stack_model(void *ctx, int64_t batch, int64_t seq, sl_error *err)
{
	const stack *st = ctx;
	sl_graph *g = sl_graph_new("stack");
	int64_t dx[2] = { batch, st->hidden }, dw[2] = { st->hidden, st->hidden };
	int x;
	char nm[64], ly[32];

	(void)seq;
	x = sl_graph_add_tensor(g, "x", 2, dx, SL_DT_BF16, SL_ROLE_INPUT, err);
	for (int l = 0; l < st->layers; l++) {
		int w, y, z, in[2];
		snprintf(ly, sizeof ly, "layer%d", l);
		snprintf(nm, sizeof nm, "w%d", l);
		w = sl_graph_add_tensor(g, nm, 2, dw, SL_DT_BF16, SL_ROLE_PARAMETER, err);
		snprintf(nm, sizeof nm, "y%d", l);
		y = sl_graph_add_tensor(g, nm, 2, dx, SL_DT_BF16, SL_ROLE_ACTIVATION, err);
		snprintf(nm, sizeof nm, "z%d", l);
		z = sl_graph_add_tensor(g, nm, 2, dx, SL_DT_BF16, SL_ROLE_ACTIVATION, err);
		in[0] = x;
		in[1] = w;
		snprintf(nm, sizeof nm, "fc%d", l);
		sl_graph_add_op(g, nm, SL_OP_MATMUL, 2, in, 1, &y, ly, err);
		snprintf(nm, sizeof nm, "gelu%d", l);
		sl_graph_add_op(g, nm, SL_OP_GELU, 1, &y, 1, &z, ly, err);
		x = z;
	}
	if (err->code != SL_OK || sl_graph_validate(g, "stack", err) != SL_OK) {
		sl_graph_free(g);
		return NULL;
	}
	return g;
}

/*
 * Layers of two shapes: each layer x -> fc1 -> gelu -> fc2, whose inner
 * width is the hidden size, and four times it in layers [wide_lo, wide_hi).
 */
typedef struct wide_stack { int layers, wide_lo, wide_hi; int64_t hidden; } wide_stack;

static sl_graph *
wide_stack_model(void *ctx, int64_t batch, int64_t seq, sl_error *err)
{
	const wide_stack *st = ctx;
	sl_graph *g = sl_graph_new("wide-stack");
	int64_t h = st->hidden, dx[2] = { batch, h };
	int x;
	char nm[64], ly[32];

	(void)seq;
	x = sl_graph_add_tensor(g, "x", 2, dx, SL_DT_BF16, SL_ROLE_INPUT, err);
	for (int l = 0; l < st->layers; l++) {
		int64_t f = l >= st->wide_lo && l < st->wide_hi ? 4 * h : h;
		int64_t d1[2] = { h, f }, d2[2] = { f, h }, dy[2] = { batch, f };
		int w1, w2, y, z, o, in[2];

		snprintf(ly, sizeof ly, "layer%d", l);
		snprintf(nm, sizeof nm, "w1_%d", l);
		w1 = sl_graph_add_tensor(g, nm, 2, d1, SL_DT_BF16, SL_ROLE_PARAMETER, err);
		snprintf(nm, sizeof nm, "w2_%d", l);
		w2 = sl_graph_add_tensor(g, nm, 2, d2, SL_DT_BF16, SL_ROLE_PARAMETER, err);
		snprintf(nm, sizeof nm, "y%d", l);
		y = sl_graph_add_tensor(g, nm, 2, dy, SL_DT_BF16, SL_ROLE_ACTIVATION, err);
		snprintf(nm, sizeof nm, "z%d", l);
		z = sl_graph_add_tensor(g, nm, 2, dy, SL_DT_BF16, SL_ROLE_ACTIVATION, err);
		snprintf(nm, sizeof nm, "o%d", l);
		o = sl_graph_add_tensor(g, nm, 2, dx, SL_DT_BF16, SL_ROLE_ACTIVATION, err);
		in[0] = x;
		in[1] = w1;
		snprintf(nm, sizeof nm, "fc1_%d", l);
		sl_graph_add_op(g, nm, SL_OP_MATMUL, 2, in, 1, &y, ly, err);
		snprintf(nm, sizeof nm, "gelu%d", l);
		sl_graph_add_op(g, nm, SL_OP_GELU, 1, &y, 1, &z, ly, err);
		in[0] = z;
		in[1] = w2;
		snprintf(nm, sizeof nm, "fc2_%d", l);
		sl_graph_add_op(g, nm, SL_OP_MATMUL, 2, in, 1, &o, ly, err);
		x = o;
	}
	if (err->code != SL_OK || sl_graph_validate(g, "wide-stack", err) != SL_OK) {
		sl_graph_free(g);
		return NULL;
	}
	return g;
}

/*
 * A model whose layers differ: the generated one, with the feed-forward of
 * layers [2, 4) four times as wide (every dimension of the layer's own
 * tensors equal to ffn), so layers 0-1, 2-3 and 4-5 are three runs.
 */
static sl_graph *
wide_middle_model(void *ctx, int64_t batch, int64_t seq, sl_error *err)
{
	sl_graph *g = gen_model_fn(ctx, batch, seq, err);
	const sl_gen_config *c = ctx;

	if (g == NULL)
		return NULL;
	for (int t = 0; t < g->n_tensors; t++) {
		sl_tensor *x = &g->tensors[t];
		int l;
		if (sscanf(x->name, "layer%d.", &l) != 1 || l < 2 || l >= 4)
			continue;
		for (int d = 0; d < x->rank; d++)
			if (x->dims[d] == c->ffn)
				x->dims[d] = 4 * c->ffn;
	}
	assert_int_equal(sl_graph_validate(g, NULL, err), SL_OK);
	return g;
}

static void
opts_for(sl_hybrid_opts *o, const char *hw, sl_model_fn fn, void *ctx)
{
	sl_error err;

	sl_error_clear(&err);
	sl_hybrid_opts_default(o);
	assert_int_equal(sl_hw_load(hw, &o->hw, &err), SL_OK);
	o->model = fn;
	o->model_ctx = ctx;
}

/* --------------------------------------------------------- schedules */

static void
test_schedules(void **state)
{
	int64_t t[4] = { 1000, 1000, 1000, 1000 };

	(void)state;
	/* 1F1B: stage d of p keeps p - d micro-batches (never more than m) */
	for (int d = 0; d < 4; d++)
		assert_int_equal(sl_pipe_in_flight(SL_SCHED_1F1B, 4, 1, 8, d), 4 - d);
	assert_int_equal(sl_pipe_in_flight(SL_SCHED_1F1B, 4, 1, 2, 0), 2);
	/* GPipe: all m */
	for (int d = 0; d < 4; d++)
		assert_int_equal(sl_pipe_in_flight(SL_SCHED_GPIPE, 4, 1, 8, d), 8);
	/* interleaved, p = 4, v = 2: 2 (p - d - 1) + (v - 1) p + 1 chunks */
	assert_int_equal(sl_pipe_in_flight(SL_SCHED_INTERLEAVED, 4, 2, 8, 0), 11);
	assert_int_equal(sl_pipe_in_flight(SL_SCHED_INTERLEAVED, 4, 2, 8, 1), 9);
	assert_int_equal(sl_pipe_in_flight(SL_SCHED_INTERLEAVED, 4, 2, 8, 3), 5);
	/* bubble (p - 1) / (m + p - 1) and (p - 1) / (v m + p - 1) */
	assert_true(sl_pipe_bubble(4, 1, 8) == 3.0 / 11.0);
	assert_true(sl_pipe_bubble(8, 1, 96) == 7.0 / 103.0);
	assert_true(sl_pipe_bubble(4, 2, 8) == 3.0 / 19.0);
	assert_true(sl_pipe_bubble(1, 1, 8) == 0.0);
	/* equal stages: (m + p - 1) t, whose bubble share is the formula */
	assert_int_equal(sl_pipe_time(4, 1, 8, t), 11 * 1000);
	assert_true((double)(sl_pipe_time(4, 1, 8, t) - 8 * 1000) /
	    (double)sl_pipe_time(4, 1, 8, t) == sl_pipe_bubble(4, 1, 8));
	/*
	 * What an interleaved device holds changes as the schedule runs.
	 * p = 2, v = 2, m = 4, device 1 (warm-up 2 forwards, both chunk 0):
	 * then forward chunk 1, backward chunk 1, ... so at most two
	 * micro-batches of chunk 0 and one of chunk 1, or three of chunk 0.
	 * Device 0 (warm-up 4: chunk 0 twice, chunk 1 twice) goes through
	 * (3, 2), (4, 1), (4, 1), (3, 2) after each forward: all four of
	 * chunk 0 with one of chunk 1 at worst when chunk 0 is the larger.
	 */
	assert_int_equal(sl_pipe_peak_acts(SL_SCHED_INTERLEAVED, 2, 2, 4, 1,
	    (int64_t[]){ 1, 100 }), 2 * 1 + 1 * 100);
	assert_int_equal(sl_pipe_peak_acts(SL_SCHED_INTERLEAVED, 2, 2, 4, 1,
	    (int64_t[]){ 100, 1 }), 3 * 100);
	assert_int_equal(sl_pipe_peak_acts(SL_SCHED_INTERLEAVED, 2, 2, 4, 0,
	    (int64_t[]){ 1, 100 }), 3 * 1 + 2 * 100);
	assert_int_equal(sl_pipe_peak_acts(SL_SCHED_INTERLEAVED, 2, 2, 4, 0,
	    (int64_t[]){ 100, 1 }), 4 * 100 + 1 * 1);
	/* equal chunks: the count in flight, at any m that p divides */
	for (int d = 0; d < 4; d++)
		for (int64_t m = 4; m <= 64; m *= 4)
			assert_int_equal(sl_pipe_peak_acts(SL_SCHED_INTERLEAVED, 4, 2, m,
			    d, (int64_t[]){ 7, 7 }),
			    7 * sl_pipe_in_flight(SL_SCHED_INTERLEAVED, 4, 2, m, d));
	/* one chunk: in flight x its acts; a p that does not divide m:
	 * every chunk at the largest */
	assert_int_equal(sl_pipe_peak_acts(SL_SCHED_1F1B, 4, 1, 8, 1,
	    (int64_t[]){ 5 }), 3 * 5);
	assert_int_equal(sl_pipe_peak_acts(SL_SCHED_INTERLEAVED, 4, 2, 6, 0,
	    (int64_t[]){ 1, 9 }), 9 * sl_pipe_in_flight(SL_SCHED_INTERLEAVED, 4, 2, 6, 0));
	/* interleaved: m t + (p - 1) t / v */
	assert_int_equal(sl_pipe_time(4, 2, 8, t), 8 * 1000 + 3 * 1000 / 2);

	/*
	 * The gradient sync left after the pipeline, by hand.  One bucket
	 * (q = 1): device 0 all of its 100, device 1 its 100 less device 0's
	 * drain, its backward of 50.  Buckets of a quarter on device 0: the
	 * reduction cannot keep up (100 > 50): it ends 100 - 0.75 x 50 =
	 * 62.5 after the backward.  A sync shorter than its backward: the
	 * last bucket alone, 0.25 x 40.  Interleaved, p = 3, v = 2: device
	 * 2's drain is a chunk of devices 0 and 1, (100 + 100) / 2.
	 */
	assert_int_equal(sl_pipe_sync_exposed(2, 1, (int64_t[]){ 100, 100 },
	    (int64_t[]){ 50, 50 }, (double[]){ 1, 1 }), 100);
	assert_int_equal(sl_pipe_sync_exposed(2, 1, (int64_t[]){ 0, 100 },
	    (int64_t[]){ 50, 50 }, (double[]){ 1, 1 }), 50);
	assert_int_equal(sl_pipe_sync_exposed(1, 1, (int64_t[]){ 100 },
	    (int64_t[]){ 50 }, (double[]){ 0.25 }), 63);
	assert_int_equal(sl_pipe_sync_exposed(1, 1, (int64_t[]){ 40 },
	    (int64_t[]){ 100 }, (double[]){ 0.25 }), 10);
	assert_int_equal(sl_pipe_sync_exposed(3, 2, (int64_t[]){ 0, 0, 300 },
	    (int64_t[]){ 100, 100, 100 }, (double[]){ 1, 1, 1 }), 200);
}

/* ---------------------------------------------------- per-stage memory */

/*
 * Four layers of fc + gelu, h = 256, micro-batch of 4 samples, each stage
 * on one device (nothing split, no resharding), bf16 recipe:
 *   states of a layer: w 256 x 256 x 16 B = 1,048,576 B
 *   activations of a layer and micro-batch: fc keeps x (4 x 256 x 2 B),
 *   gelu keeps y (4 x 256 x 2 B): 4,096 B
 *   the device's moment: as the micro-batches' gradients accumulate, a
 *   weight's new gradient before PyTorch adds it in, 256 x 256 x 2 B
 */
#define LAYER_STATES 1048576
#define LAYER_ACTS 4096
#define NEW_GRAD 131072

static void
eval_stack(sl_schedule sched, int p, int v, int64_t m, const int *layers,
    sl_pipeline *pl)
{
	stack st = { 4, 256 };
	sl_hybrid_opts o;
	sl_pipe_config c;
	sl_recompute rec[8] = { 0 };
	sl_error err;

	opts_for(&o, "h100-nvlink", stack_model, &st);
	o.space.zero = false;
	o.schedule = sched;
	pipe_config(&c, p, v, 1, 1, 4, m, layers, rec);
	sl_error_clear(&err);
	assert_int_equal(sl_pipeline_eval(&o, &c, pl, &err), SL_OK);
}

static void
test_stage_memory(void **state)
{
	static const int two[2] = { 2, 2 }, four[4] = { 1, 1, 1, 1 };
	sl_pipeline pl;

	(void)state;
	/* 1F1B, p = 2, m = 8: stage 0 keeps 2 micro-batches, stage 1 one */
	eval_stack(SL_SCHED_1F1B, 2, 1, 8, two, &pl);
	assert_int_equal(pl.dev[0].in_flight, 2);
	assert_int_equal(pl.dev[1].in_flight, 1);
	assert_int_equal(pl.stage[0].acts, 2 * LAYER_ACTS);
	assert_int_equal(pl.stage[0].states.buffers, NEW_GRAD);
	assert_int_equal(pl.dev[0].mem, 2 * LAYER_STATES + 2 * 2 * LAYER_ACTS +
	    NEW_GRAD);
	assert_int_equal(pl.dev[1].mem, 2 * LAYER_STATES + 1 * 2 * LAYER_ACTS +
	    NEW_GRAD);
	assert_int_equal(pl.max_mem, 2113536 + NEW_GRAD);
	sl_pipeline_free(&pl);

	/* GPipe keeps all 8 on both */
	eval_stack(SL_SCHED_GPIPE, 2, 1, 8, two, &pl);
	assert_int_equal(pl.dev[0].mem, 2 * LAYER_STATES + 8 * 2 * LAYER_ACTS +
	    NEW_GRAD);
	assert_int_equal(pl.dev[1].mem, 2 * LAYER_STATES + 8 * 2 * LAYER_ACTS +
	    NEW_GRAD);
	sl_pipeline_free(&pl);

	/*
	 * Interleaved, p = 2, v = 2: chunks of one layer; device 0 holds
	 * layers 0 and 2 and keeps 2 (2 - 0 - 1) + (2 - 1) 2 + 1 = 5 chunks
	 * in flight, device 1 keeps 3.
	 */
	eval_stack(SL_SCHED_INTERLEAVED, 2, 2, 8, four, &pl);
	assert_int_equal(pl.n_stages, 4);
	assert_int_equal(pl.stage[2].device, 0);
	assert_int_equal(pl.dev[0].in_flight, 5);
	assert_int_equal(pl.dev[1].in_flight, 3);
	/* two chunks' states, one moment */
	assert_int_equal(pl.dev[0].mem, 2 * LAYER_STATES + 5 * LAYER_ACTS +
	    NEW_GRAD);
	assert_int_equal(pl.dev[1].mem, 2 * LAYER_STATES + 3 * LAYER_ACTS +
	    NEW_GRAD);
	/* bubble: (p - 1) / v of a device's micro-batch time */
	assert_int_equal(pl.pipe_ns, sl_pipe_time(2, 2, 8, (int64_t[]){
	    pl.dev[0].micro_ns, pl.dev[1].micro_ns }));
	sl_pipeline_free(&pl);
}

/*
 * Interleaved, p = 4, v = 2, 8 layers on 2 x 1 (data parallel, ZeRO
 * offered): device 2 holds chunks 2 and 6, both of one middle layer, and
 * keeps K = 2 (4 - 2 - 1) + (2 - 1) 4 + 1 = 7 chunks in flight.  Alike
 * chunks take one plan, so the device holds 2 states + 7 acts + one moment.
 * With the capacity at exactly that for the plans taken without a limit,
 * device 2 keeps them; an even split of the device (each chunk within half,
 * with ceil(7 / 2) = 4 in flight, 2 states + 8 acts in all) would not fit
 * them.
 */
static void
test_interleaved_budget(void **state)
{
	static const int eight[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	stack st = { 8, 256 };
	sl_hybrid_opts o;
	sl_pipe_config c;
	sl_recompute rec[8] = { 0 };
	sl_pipeline free_pl, pl;
	sl_error err;
	int64_t S, A, M;

	(void)state;
	opts_for(&o, "h100-nvlink", stack_model, &st);
	o.schedule = SL_SCHED_INTERLEAVED;
	pipe_config(&c, 4, 2, 2, 1, 8, 8, eight, rec);
	sl_error_clear(&err);
	assert_int_equal(sl_pipeline_eval(&o, &c, &free_pl, &err), SL_OK);
	assert_int_equal(free_pl.dev[2].in_flight, 7);
	assert_int_equal(free_pl.stage[2].device, 2);
	assert_int_equal(free_pl.stage[6].device, 2);
	/* S: a chunk's states but its moment M, which the device holds once */
	M = free_pl.stage[2].states.buffers;
	S = sl_mem_total(&free_pl.stage[2].states) - M;
	A = free_pl.stage[2].acts;
	assert_true(S > 0 && A > 0 && M > 0);
	assert_int_equal(sl_mem_total(&free_pl.stage[6].states), S + M);
	assert_int_equal(free_pl.dev[2].mem, 2 * S + 7 * A + M);

	o.mem_limit = 2 * S + 7 * A + M;
	assert_int_equal(sl_pipeline_eval(&o, &c, &pl, &err), SL_OK);
	for (int j = 2; j <= 6; j += 4) {
		assert_int_equal(pl.stage[j].n_strat_ops, free_pl.stage[j].n_strat_ops);
		for (int u = 0; u < pl.stage[j].n_strat_ops; u++)
			assert_string_equal(pl.stage[j].strategy[u],
			    free_pl.stage[j].strategy[u]);
	}
	assert_int_equal(pl.dev[2].mem, 2 * S + 7 * A + M);
	/* what an even split would have asked of the same plan */
	assert_true(2 * (S + 4 * A) + M > o.mem_limit);
	sl_pipeline_free(&pl);
	sl_pipeline_free(&free_pl);
}

/*
 * The end of an interleaved step on 2 x 1 devices (no ZeRO: data-parallel
 * gradients all-reduced once a step), 8 layers of fc (2048 x 2048) and
 * gelu, micro-batches of 8192 rows: every chunk's sync counts, a device's
 * chunks summed (not the largest stage's), reduced after the backward
 * (--no-overlap-grad-reduce), each device's hidden by the drain of the
 * devices before it (a chunk's backward each); then the slowest device's
 * optimizer.  On a link of 50 GB/s a device's two syncs outlast the drain
 * and leave more than any one stage's.  Offloading the optimizer to the
 * host never makes the step faster: its CPU Adam and copies over the host
 * link against fused AdamW at the memory bandwidth, on every bundled
 * profile.
 */
static void
test_pipeline_step_end(void **state)
{
	static const int eight[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	static const int four[4] = { 2, 2, 2, 2 };
	const char *const *hw = sl_bundled_hardware();
	stack st = { 8, 2048 };
	sl_hybrid_opts o;
	sl_pipe_config c;
	sl_recompute rec[8] = { 0 };
	sl_pipeline pl, off;
	sl_error err;

	(void)state;
	opts_for(&o, "h100-nvlink", stack_model, &st);
	o.space.zero = false;
	o.space.recipe.no_grad_overlap = true;
	o.schedule = SL_SCHED_INTERLEAVED;
	for (int run = 0; run < 2; run++) {
		int p = run == 0 ? 4 : 2;
		int64_t sync[4] = { 0 }, bwd[4] = { 0 }, optim[4] = { 0 }, want = 0;
		int64_t most = 0, lag = 0;

		if (run == 1)
			o.hw.intra.bandwidth = 50e9;
		pipe_config(&c, p, 2, 2, 1, 8192, 8, run == 0 ? eight : four, rec);
		sl_error_clear(&err);
		assert_int_equal(sl_pipeline_eval(&o, &c, &pl, &err), SL_OK);
		for (int j = 0; j < 2 * p; j++) {
			int d = pl.stage[j].device;
			sync[d] += pl.stage[j].sync_ns;
			bwd[d] += pl.stage[j].bwd_ns;
			optim[d] += pl.stage[j].optim_ns;
			if (pl.stage[j].sync_ns > most)
				most = pl.stage[j].sync_ns;
		}
		assert_true(most > 0);
		for (int d = 0; d < p; lag += bwd[d] / 2, d++)
			if (sync[d] - lag > want)
				want = sync[d] - lag;
		assert_true(llabs(pl.sync_ns - want) <= 1);
		if (run == 1)
			assert_true(pl.sync_ns > most);
		for (int d = 0; d < p; d++)
			assert_true(optim[d] <= pl.optim_ns);
		assert_int_equal(pl.step_ns, pl.pipe_ns + pl.sync_ns + pl.optim_ns);
		sl_pipeline_free(&pl);
	}
	pipe_config(&c, 4, 2, 2, 1, 8192, 8, eight, rec);

	o.space.recipe.no_grad_overlap = false;
	/* offload never faster, with the optimizer states whole and with
	 * them divided over the data-parallel ranks (ZeRO-Offload over
	 * ZeRO-2: each rank offloads its share, and the weights that come
	 * back are all-gathered as without offload) */
	for (int ss = 0; ss < 2; ss++)
	for (hw = sl_bundled_hardware(); *hw != NULL; hw++) {
		o.space.recipe.shard_states = ss;
		sl_error_clear(&err);
		assert_int_equal(sl_hw_load(*hw, &o.hw, &err), SL_OK);
		o.offload_optimizer = 0;
		assert_int_equal(sl_pipeline_eval(&o, &c, &pl, &err), SL_OK);
		o.offload_optimizer = 1;
		assert_int_equal(sl_pipeline_eval(&o, &c, &off, &err), SL_OK);
		assert_true(off.step_ns > pl.step_ns);
		assert_true(off.optim_ns > pl.optim_ns);
		assert_true(off.dev[0].states < pl.dev[0].states);
		sl_pipeline_free(&pl);
		sl_pipeline_free(&off);
	}
	o.space.recipe.shard_states = 0;
	/*
	 * Optimizer states divided over the 2 data-parallel ranks (ZeRO-1):
	 * each updates half, the gradients are reduce-scattered (half an
	 * all-reduce's time) and the weights all-gathered after the step.
	 * Megatron-LM's layout, data parallel over the outer axis.
	 */
	o.offload_optimizer = 0;
	c.layout = SL_LAYOUT_MEGATRON;
	sl_error_clear(&err);
	assert_int_equal(sl_hw_load("h100-nvlink", &o.hw, &err), SL_OK);
	assert_int_equal(sl_pipeline_eval(&o, &c, &pl, &err), SL_OK);
	o.space.recipe.shard_states = 1;
	assert_int_equal(sl_pipeline_eval(&o, &c, &off, &err), SL_OK);
	assert_true(off.dev[0].states < pl.dev[0].states);
	for (int j = 0; j < 8; j++) {
		assert_true(off.stage[j].sync_ns < pl.stage[j].sync_ns);
		assert_true(off.stage[j].sync_ns >= pl.stage[j].sync_ns / 2 - 8);
		assert_true(off.stage[j].optim_ns > 0);
	}
	assert_true(off.step_ns <= pl.step_ns);
	sl_pipeline_free(&pl);
	sl_pipeline_free(&off);
	o.space.recipe.shard_states = 0;
}

/*
 * Where the gain comes from: a GPT of 8 layers (hidden 1024, 16 heads) on
 * 8 H100 at global batch 32.  Megatron-LM's recommended layout is tensor
 * parallel over the node's 8 devices with sequence parallelism, the
 * fewest stages that fit, the largest micro-batch that fits (twice it does
 * not), and fits; the account's last step is the plan itself, its first
 * steps each change one thing.
 */
static void
test_account(void **state)
{
	sl_gen_config gc;
	sl_hybrid_opts o;
	sl_hybrid_result r;
	sl_pipe_account a;
	sl_error err;

	(void)state;
	sl_gen_defaults(SL_FAM_GPT, &gc);
	gc.layers = 8;
	gc.hidden = 1024;
	gc.heads = gc.kv_heads = 16;
	gc.ffn = 4096;
	gc.seq = 1024;
	gc.vocab = 32000;
	opts_for(&o, "h100-nvlink", gen_model_fn, &gc);
	o.devices = 8;
	o.global_batch = 32;
	o.mem_limit = (int64_t)6 << 30;
	sl_error_clear(&err);
	assert_int_equal(sl_hybrid_search(&o, &r, &err), SL_OK);
	assert_true(r.found);
	assert_int_equal(sl_pipe_account_build(&o, &r.best, &a, &err), SL_OK);
	assert_int_equal(a.tp, 8);
	assert_int_equal(a.standard.pp * a.dp * a.tp, 8);
	assert_true(a.standard.fits);
	assert_int_equal(a.standard.graph_batch, a.micro_batch * a.dp);
	/* twice the micro-batch does not fit (or does not divide the batch) */
	if (32 % (2 * a.micro_batch * a.dp) == 0) {
		int layers[8];
		sl_recompute rec[8];
		sl_pipe_config c;
		sl_pipeline q;
		for (int j = 0; j < a.standard.pp; j++) {
			layers[j] = a.standard.stage[j].n_layers;
			rec[j] = a.recompute;
		}
		pipe_config(&c, a.standard.pp, 1, a.dp, a.tp, 2 * a.micro_batch * a.dp,
		    32 / (2 * a.micro_batch * a.dp), layers, rec);
		c.layout = SL_LAYOUT_MEGATRON_SP;
		assert_int_equal(sl_pipeline_eval(&o, &c, &q, &err), SL_OK);
		assert_false(q.fits);
		sl_pipeline_free(&q);
	}
	assert_int_equal(a.n_items, 4);
	assert_int_equal(a.item[3].step_ns, r.best.step_ns);
	assert_int_equal(a.item[3].max_mem, r.best.max_mem);
	/* the plan is no slower than the recommended layout */
	assert_true(r.best.step_ns <= a.standard.step_ns);
	sl_pipe_account_free(&a);
	sl_hybrid_result_free(&r);
}

/* ------------------------------------- the explorer's kept pipeline */

/*
 * sl_pipe_ctx_eval equals sl_pipeline_eval without pins, again after
 * moves.  A pin names one operator, as in the operator view: a pin of fc0
 * holds in layer 0 only (stage 0's first fc keeps half its weight, col,
 * 256 x 128 elements at 16 bytes of states), while stage 1, of equal
 * layers, keeps the plan it has without pins; pins of every layer's fc (the
 * operator view's P) hold in every stage.  A forbid keeps the strategy out
 * of its layer; a pin of a strategy no stage has is counted as skipped;
 * clearing restores the figures.
 */
static void
test_ctx_pins(void **state)
{
	stack st = { 4, 256 };
	sl_hybrid_opts o;
	sl_pipe_config c;
	sl_recompute rec[2] = { 0 };
	int layers[2] = { 2, 2 }, skipped = -1;
	sl_pipeline a, b;
	sl_constraints cs;
	sl_pipe_ctx *ctx;
	sl_error err;
	char free0[32];

	(void)state;
	opts_for(&o, "h100-nvlink", stack_model, &st);
	o.space.zero = false;
	o.devices = 4;
	pipe_config(&c, 2, 1, 1, 2, 4, 4, layers, rec);
	sl_error_clear(&err);
	ctx = sl_pipe_ctx_new(&o);
	for (int l = 2; l >= 1; l--) {
		layers[0] = l;
		layers[1] = 4 - l;
		assert_int_equal(sl_pipeline_eval(&o, &c, &a, &err), SL_OK);
		assert_int_equal(sl_pipe_ctx_eval(ctx, &c, &b, &skipped, &err), SL_OK);
		assert_int_equal(skipped, 0);
		assert_int_equal(a.step_ns, b.step_ns);
		assert_int_equal(a.max_mem, b.max_mem);
		sl_pipeline_free(&a);
		sl_pipeline_free(&b);
	}
	layers[0] = layers[1] = 2;
	assert_int_equal(sl_pipeline_eval(&o, &c, &a, &err), SL_OK);
	snprintf(free0, sizeof free0, "%s", a.stage[1].strategy[0]);
	/* the pin must change something for the test to mean anything */
	assert_string_not_equal(a.stage[0].strategy[0], "col");
	memset(&cs, 0, sizeof cs);
	sl_constraints_add(&cs, "fc0", "col", true);
	sl_pipe_ctx_constrain(ctx, &cs);
	assert_int_equal(sl_pipe_ctx_eval(ctx, &c, &b, &skipped, &err), SL_OK);
	assert_int_equal(skipped, 0);
	assert_string_equal(b.stage[0].strategy[0], "col");	/* fc0 */
	{
		/* every fc of the stage holds 256 x 256 x 16 bytes of states,
		 * half of them when it splits its weight (fc1 may follow fc0's
		 * split, to read its output without resharding) */
		int64_t want = 0;
		for (int u = 0; u < b.stage[0].n_ops; u += 2)
			want += 256 * 256 * 16 /
			    (strcmp(b.stage[0].strategy[u], "rep") == 0 ? 1 : 2);
		assert_int_equal(b.stage[0].states.params + b.stage[0].states.grads +
		    b.stage[0].states.optim, want);
	}
	for (int u = 0; u < a.stage[1].n_ops; u++)	/* layers 2 and 3 */
		assert_string_equal(b.stage[1].strategy[u], a.stage[1].strategy[u]);
	sl_pipeline_free(&a);
	sl_pipeline_free(&b);
	sl_constraints_free(&cs);
	memset(&cs, 0, sizeof cs);
	for (int l = 0; l < 4; l++) {
		char nm[16];
		snprintf(nm, sizeof nm, "fc%d", l);
		sl_constraints_add(&cs, nm, "col", true);
	}
	sl_pipe_ctx_constrain(ctx, &cs);
	assert_int_equal(sl_pipe_ctx_eval(ctx, &c, &b, &skipped, &err), SL_OK);
	assert_int_equal(skipped, 0);
	for (int j = 0; j < 2; j++) {
		const sl_pipe_stage *sg = &b.stage[j];
		assert_string_equal(sg->strategy[0], "col");	/* fc */
		assert_string_equal(sg->strategy[2], "col");
		assert_int_equal(sg->states.params + sg->states.grads + sg->states.optim,
		    2 * 256 * 128 * 16);
	}
	sl_pipeline_free(&b);
	sl_constraints_free(&cs);
	memset(&cs, 0, sizeof cs);
	sl_constraints_add(&cs, "fc2", free0, false);
	sl_constraints_add(&cs, "fc1", "no-such", true);
	sl_pipe_ctx_constrain(ctx, &cs);
	assert_int_equal(sl_pipe_ctx_eval(ctx, &c, &b, &skipped, &err), SL_OK);
	assert_int_equal(skipped, 1);
	assert_string_not_equal(b.stage[1].strategy[0], free0);	/* fc2 */
	sl_pipeline_free(&b);
	sl_constraints_free(&cs);
	sl_pipe_ctx_constrain(ctx, NULL);
	assert_int_equal(sl_pipeline_eval(&o, &c, &a, &err), SL_OK);
	assert_int_equal(sl_pipe_ctx_eval(ctx, &c, &b, &skipped, &err), SL_OK);
	assert_int_equal(a.step_ns, b.step_ns);
	assert_int_equal(a.max_mem, b.max_mem);
	for (int j = 0; j < 2; j++)
		for (int u = 0; u < a.stage[j].n_ops; u++)
			assert_string_equal(a.stage[j].strategy[u], b.stage[j].strategy[u]);
	sl_pipeline_free(&a);
	sl_pipeline_free(&b);
	sl_pipe_ctx_free(ctx);
}

/* ------------------------------------------- search against enumeration */

static int64_t brute_best;

static void
brute_parts(const sl_hybrid_opts *o, sl_pipe_config *c, int *layers, int j,
    int left)
{
	int ns = c->pp;

	if (j == ns) {
		sl_pipeline pl;
		sl_error err;
		if (left != 0)
			return;
		sl_error_clear(&err);
		assert_int_equal(sl_pipeline_eval(o, c, &pl, &err), SL_OK);
		if (pl.fits && (brute_best < 0 || pl.step_ns < brute_best))
			brute_best = pl.step_ns;
		sl_pipeline_free(&pl);
		return;
	}
	for (int n = 1; n <= left - (ns - j - 1); n++) {
		layers[j] = n;
		brute_parts(o, c, layers, j + 1, left - n);
	}
}

/* The least step over every configuration of pipeline degree p (all when
 * p is 0), by enumeration. */
static int64_t
enumerate(const sl_hybrid_opts *o, int n_layers, int fix_p, int tp)
{
	int devices = o->devices, dpn = o->hw.devices_per_node;
	int64_t B = o->global_batch;
	int layers[8];
	sl_recompute rec[8] = { 0 };

	brute_best = -1;
	for (int p = 1; p <= devices && p <= n_layers; p++) {
		int D = devices / p;
		if (devices % p || (fix_p > 0 && p != fix_p))
			continue;
		for (int inner = 1; inner <= D && inner <= dpn; inner++) {
			if (D % inner || (tp > 0 && inner != tp))
				continue;
			for (int b = 1; b <= 8; b *= 2) {
				sl_pipe_config c;
				int64_t G = (int64_t)b * (D / inner);
				if (B % G)
					continue;
				pipe_config(&c, p, 1, D / inner, inner, G, B / G, layers, rec);
				brute_parts(o, &c, layers, 0, n_layers);
			}
		}
	}
	return brute_best;
}

/*
 * The search's optimum against enumeration: over every configuration,
 * and for each pipeline degree alone (so that partitions of deeper
 * pipelines are compared even where one stage is fastest).
 * stage_pruned counts the configurations set aside by the bound from their
 * first stages' plans, so that a test can show that bound was exercised.
 */
static int64_t stage_pruned;

static void
check_search_of(sl_model_fn fn, void *ctx, int devices, int64_t B, int64_t limit,
    sl_schedule sched, bool zero, int n_layers, int tp)
{
	sl_hybrid_opts o;
	sl_hybrid_result r;
	sl_error err;

	opts_for(&o, "h100-nvlink", fn, ctx);
	o.devices = devices;
	o.global_batch = B;
	o.mem_limit = limit;
	o.slack = -1;		/* every partition */
	o.schedule = sched;
	o.space.zero = zero;
	o.tp = tp;
	for (int p = 0; p <= n_layers && p <= devices; p++) {
		int64_t want;
		if (p > 0 && devices % p)
			continue;
		want = enumerate(&o, n_layers, p, tp);
		o.pp = p;
		sl_error_clear(&err);
		assert_int_equal(sl_hybrid_search(&o, &r, &err), SL_OK);
		fprintf(stderr, "# %d devices, batch %lld, limit %lld, pp %d: enumeration "
		    "%lld ns, search %lld ns (pp %d, %lld partitions, %lld set aside by bound, %lld after their first stages)\n", devices,
		    (long long)B, (long long)limit, p, (long long)want,
		    r.found ? (long long)r.best.step_ns : -1LL, r.found ? r.best.pp : 0,
		    (long long)r.partitions, (long long)r.pruned_bound,
		    (long long)r.pruned_stages);
		stage_pruned += r.pruned_stages;
		if (want < 0) {
			assert_false(r.found);
		} else {
			assert_true(r.found);
			assert_int_equal(r.best.step_ns, want);
			assert_true(r.best.fits);
			assert_true(r.best.max_mem <= limit);
			if (p > 0)
				assert_int_equal(r.best.pp, p);
		}
		sl_hybrid_result_free(&r);
	}
}

static void
check_search(int devices, int64_t B, int64_t limit, sl_schedule sched, bool zero,
    int n_layers, int tp)
{
	stack st = { n_layers, 256 };

	check_search_of(stack_model, &st, devices, B, limit, sched, zero, n_layers, tp);
}

static void
test_search_exhaustive(void **state)
{
	wide_stack ws = { 6, 2, 4, 256 };

	(void)state;
	stage_pruned = 0;
	/* plenty of memory, then so little that only deep pipelines fit */
	check_search(4, 32, 80000000000LL, SL_SCHED_1F1B, true, 4, 0);
	check_search(4, 32, 1400000, SL_SCHED_1F1B, true, 4, 0);
	check_search(8, 64, 700000, SL_SCHED_1F1B, true, 4, 0);
	/* a batch of 32 over 8 devices: configurations whose first stage
	 * must take a slow plan are set aside once it is planned (at a
	 * limit where that happens with the stages' moments counted, a
	 * weight's new gradient as gradients accumulate, and the step's
	 * optimizer and overlapped gradient sync) */
	check_search(8, 32, 550000, SL_SCHED_1F1B, true, 4, 0);
	check_search(8, 32, 2800000, SL_SCHED_1F1B, true, 4, 0);
	check_search(8, 32, 1100000, SL_SCHED_1F1B, false, 4, 0);
	/*
	 * No tensor parallelism, no ZeRO-3: a device holds its stage's whole
	 * weights (1 MiB a layer), so only pipelines fit, and the partitions
	 * and schedules decide which.
	 */
	check_search(4, 32, 3300000, SL_SCHED_1F1B, false, 6, 1);
	check_search(4, 32, 3300000, SL_SCHED_GPIPE, false, 6, 1);
	check_search(4, 64, 2200000, SL_SCHED_1F1B, false, 6, 1);
	check_search(8, 64, 2200000, SL_SCHED_GPIPE, false, 6, 1);
	/* nothing fits */
	check_search(2, 8, 1000, SL_SCHED_1F1B, true, 4, 0);
	/*
	 * Layers of two shapes (the middle two four times as wide): a middle
	 * stage is planned, and bounded, at its own layers.
	 */
	check_search_of(wide_stack_model, &ws, 4, 32, 30000000, SL_SCHED_1F1B,
	    false, 6, 1);
	check_search_of(wide_stack_model, &ws, 4, 32, 16000000, SL_SCHED_1F1B,
	    false, 6, 1);
	check_search_of(wide_stack_model, &ws, 6, 32, 10000000, SL_SCHED_1F1B,
	    false, 6, 1);
	check_search_of(wide_stack_model, &ws, 4, 32, 9000000, SL_SCHED_1F1B,
	    false, 6, 1);
	/* the wide layers fit nowhere (a search costing them as narrow ones
	 * would pass a pipeline of 2, 1, 1, 2 layers) */
	check_search_of(wide_stack_model, &ws, 4, 32, 6000000, SL_SCHED_1F1B,
	    false, 6, 1);
	/* the optima above held with configurations set aside after their
	 * first stages were planned */
	assert_true(stage_pruned > 0);
}

/* ------------------------------------------------- a topology of 3 axes */

static void
test_topology(void **state)
{
	sl_hw hw;
	sl_topo t;
	sl_mesh m;
	sl_error err;
	int n, sh[SL_MAX_TOPO_AXES];
	sl_axis_role ro[SL_MAX_TOPO_AXES];

	(void)state;
	sl_error_clear(&err);
	assert_int_equal(sl_hw_load("a100-sxm", &hw, &err), SL_OK);
	assert_int_equal(sl_topo_parse("4x2x8", "pp,dp,tp", &n, sh, ro, &err), SL_OK);
	assert_int_equal(n, 3);
	assert_int_equal(sl_topo_make(&hw, n, sh, ro, &t, &err), SL_OK);
	assert_int_equal(t.n_devices, 64);
	/* tp groups are 8 consecutive devices: one node; dp and pp cross */
	assert_false(t.crosses[2]);
	assert_true(t.crosses[1]);
	assert_true(t.crosses[0]);
	assert_true(t.link[2].bandwidth == hw.intra.bandwidth);
	assert_true(t.link[1].bandwidth == hw.inter.bandwidth);
	assert_int_equal(sl_topo_pp(&t), 4);
	assert_int_equal(sl_topo_stage_mesh(&t, &m, &err), SL_OK);
	assert_int_equal(m.n_axes, 2);
	assert_int_equal(m.axes[0].size, 2);
	assert_int_equal(m.axes[1].size, 8);
	assert_true(m.axes[0].link.bandwidth == hw.inter.bandwidth);
	/* 2x4 (dp, tp) per stage: stages of 8 in one node each; dp stays in */
	assert_int_equal(sl_topo_parse("8x2x4", "pp,dp,tp", &n, sh, ro, &err), SL_OK);
	assert_int_equal(sl_topo_make(&hw, n, sh, ro, &t, &err), SL_OK);
	assert_false(t.crosses[1]);
	assert_false(t.crosses[2]);
	assert_true(t.crosses[0]);
	/* dp outermost strides over the pipeline: it crosses nodes */
	assert_int_equal(sl_topo_parse("2x4x8", "dp,pp,tp", &n, sh, ro, &err), SL_OK);
	assert_int_equal(sl_topo_make(&hw, n, sh, ro, &t, &err), SL_OK);
	assert_true(t.crosses[0]);
	/* bad spellings */
	sl_error_clear(&err);
	assert_int_equal(sl_topo_parse("4x2x8", "pp,dp", &n, sh, ro, &err), SL_EINPUT);
	sl_error_clear(&err);
	assert_int_equal(sl_topo_parse("4x2x8", "pp,pp,tp", &n, sh, ro, &err), SL_EINPUT);
	sl_error_clear(&err);
	assert_int_equal(sl_topo_parse("4x2x8", "pp,xx,tp", &n, sh, ro, &err), SL_EINPUT);
	sl_error_clear(&err);
	assert_int_equal(sl_topo_parse("2x2x2x2", "dp,dp,tp,tp", &n, sh, ro, &err), SL_EINPUT);
	/* the messages are about the axes, named as the engine names them;
	 * a mesh of four unnamed axes wants them named */
	assert_int_equal(err.about, SL_SET_AXES);
	assert_int_equal(strncmp(err.msg, sl_setting_name(SL_SET_AXES),
	    strlen(sl_setting_name(SL_SET_AXES))), 0);
	assert_null(strstr(err.msg, "--"));
	sl_error_clear(&err);
	assert_int_equal(sl_topo_parse("2x2x2x2", NULL, &n, sh, ro, &err), SL_EINPUT);
	assert_int_equal(err.about, SL_SET_NONE);
	assert_int_equal(err.fix, SL_SET_AXES);
	assert_null(strstr(err.msg, "--"));
}

/* ------------------------------------------ GPT-3 175B, Narayanan et al. */

/*
 * A published GPT-3 175B layout on A100 80GB: pipeline parallel 8 (12 layers
 * a stage), each stage on outer (data parallel) x 8 (tensor parallel)
 * devices, graph_batch samples a micro-batch, Megatron's mixed precision,
 * every stage recomputing rec.
 */
typedef struct gpt3_run {
	sl_gen_config gc;
	sl_hybrid_opts o;
	sl_pipe_config c;
	int layers[8];
	sl_recompute rec[8];
} gpt3_run;

static void
gpt3_layout(gpt3_run *g, int outer, int64_t graph_batch, int64_t micro_batches,
    sl_recompute rec)
{
	gpt3_175b_config(&g->gc);
	opts_for(&g->o, "a100-sxm", gen_model_fn, &g->gc);
	g->o.space.recipe.precision = SL_PREC_MEGATRON;
	g->o.devices = 8 * 8 * outer;
	g->o.global_batch = graph_batch * micro_batches;
	memset(&g->c, 0, sizeof g->c);
	g->c.pp = 8;
	g->c.virt = 1;
	g->c.outer = outer;
	g->c.inner = 8;
	g->c.graph_batch = graph_batch;
	g->c.micro_batches = micro_batches;
	g->c.layers = g->layers;
	g->c.recompute = g->rec;
	for (int j = 0; j < 8; j++) {
		g->layers[j] = 12;
		g->rec[j] = rec;
	}
}

/*
 * Fits what an A100 80GB leaves a plan (its capacity less the runtime's
 * reserve), also as Megatron-LM runs it: the same stages with Megatron-LM's
 * own tensor-parallel layout on every stage (the framework's plan), whose
 * memory is returned.
 */
static int64_t
assert_fits_80gb(const gpt3_run *g, const sl_pipeline *pl)
{
	sl_hybrid_opts mo = g->o;
	sl_pipeline mp;
	sl_error err;
	int64_t mem;

	assert_true(pl->fits);
	assert_true(g->o.hw.memory_bytes < g->o.hw.capacity_bytes);
	assert_true(pl->max_mem <= g->o.hw.memory_bytes);
	mo.space.recipe.framework = SL_FW_MEGATRON;
	sl_error_clear(&err);
	assert_int_equal(sl_pipeline_eval(&mo, &g->c, &mp, &err), SL_OK);
	assert_int_equal(mp.launch_tp, 8);
	for (int j = 0; j < 8; j++) {
		fprintf(stderr, "# stage %d: %.2f GB, Megatron layout %.2f GB\n", j,
		    pl->dev[pl->stage[j].device].mem / 1e9,
		    mp.dev[mp.stage[j].device].mem / 1e9);
		assert_true(mp.dev[mp.stage[j].device].mem <= g->o.hw.memory_bytes);
	}
	/* the layout is Megatron-LM's: column-parallel qkv of the data-
	 * parallel outer axis and tensor-parallel inner one */
	for (int u = 0; u < mp.stage[1].n_ops && mp.mesh.n_axes == 2; u++)
		if (strstr(mp.stage[1].strategy[u], "col") != NULL)
			assert_non_null(strstr(mp.stage[1].strategy[u], "col1"));
	mem = mp.max_mem;
	sl_pipeline_free(&mp);
	return mem;
}

/* Our own search over the same devices and batch is no slower. */
static void
assert_search_no_slower(gpt3_run *g, const sl_pipeline *pl, int64_t megatron_mem,
    const char *who)
{
	sl_hybrid_result r;
	sl_error err;

	g->o.slack = 1;
	sl_error_clear(&err);
	assert_int_equal(sl_hybrid_search(&g->o, &r, &err), SL_OK);
	assert_true(r.found);
	fprintf(stderr, "# GPT-3 175B, %s layout: step %.3f s, %.1f GB at most "
	    "(Megatron's own per-operator layout %.1f GB); the search: pp %d, %d x %d, "
	    "%lld micro-batches, step %.3f s, %.1f GB\n", who, pl->step_ns / 1e9,
	    pl->max_mem / 1e9, megatron_mem / 1e9, r.best.pp,
	    r.best.mesh.axes[0].size, r.best.mesh.n_axes > 1 ? r.best.mesh.axes[1].size : 1,
	    (long long)r.best.micro_batches, r.best.step_ns / 1e9, r.best.max_mem / 1e9);
	assert_true(r.best.step_ns <= pl->step_ns);
	sl_hybrid_result_free(&r);
}

/*
 * Megatron-LM's GPT-3 175B (Narayanan et al., SC21): 96 layers, hidden
 * 12288, 96 heads, sequence 2048; tensor parallel 8 inside a DGX A100 node,
 * pipeline parallel 8 (12 layers a stage), data parallel 16 on 1024 A100
 * 80GB; micro-batch 1, global batch 1536 (96 micro-batches of 16 samples);
 * Megatron's mixed precision, full recomputation of every layer.
 */
static void
test_gpt3_narayanan(void **state)
{
	gpt3_run g;
	sl_pipeline pl;
	sl_error err;

	(void)state;
	gpt3_layout(&g, 16, 16, 96, SL_RECOMP_FULL);
	g.o.space.recipe.recompute = SL_RECOMP_FULL;
	sl_error_clear(&err);
	assert_int_equal(sl_pipeline_eval(&g.o, &g.c, &pl, &err), SL_OK);
	assert_search_no_slower(&g, &pl, assert_fits_80gb(&g, &pl), "Megatron-LM's");
	sl_pipeline_free(&pl);
}

/*
 * Its recomputation setting (Korthikanti et al., "Reducing Activation
 * Recomputation in Large Transformer Models", 2022, Table 3): GPT-3 175B on
 * 64 A100 80GB, tensor parallel 8 with sequence parallelism, pipeline
 * parallel 8 (12 layers a stage), no data parallelism, micro-batch 1, global
 * batch 64, Megatron's mixed precision, attention without a fused kernel,
 * selective recomputation of the attention core.  Without recomputation
 * the first stage does not fit; with selective recomputation every stage
 * does, in Megatron-LM's own layout too, and the search's plan for the
 * same 64 devices and batch is no slower.
 */
static void
test_gpt3_korthikanti(void **state)
{
	gpt3_run g;
	sl_pipeline pl;
	sl_error err;

	(void)state;
	gpt3_layout(&g, 1, 1, 64, SL_RECOMP_NONE);
	g.o.space.recipe.attention = SL_ATTN_NAIVE;
	sl_error_clear(&err);
	assert_int_equal(sl_pipeline_eval(&g.o, &g.c, &pl, &err), SL_OK);
	fprintf(stderr, "# GPT-3 175B, TP 8 PP 8 on 64, no recomputation: %.1f GB at most\n",
	    pl.max_mem / 1e9);
	assert_false(pl.fits);
	sl_pipeline_free(&pl);
	for (int j = 0; j < 8; j++)
		g.rec[j] = SL_RECOMP_SELECTIVE;
	sl_error_clear(&err);
	assert_int_equal(sl_pipeline_eval(&g.o, &g.c, &pl, &err), SL_OK);
	{
		int64_t mm = assert_fits_80gb(&g, &pl);
		g.o.space.recipe.recompute = SL_RECOMP_SELECTIVE;
		assert_search_no_slower(&g, &pl, mm, "Korthikanti et al.'s");
	}
	sl_pipeline_free(&pl);
}

/* -------------------------------------- shared layers against plain */

/* Two searches' answers and frontiers, stage by stage and strategy by
 * strategy. */
static void
assert_same_answer(const sl_hybrid_result *a, const sl_hybrid_result *b)
{
	assert_int_equal(a->found, b->found);
	assert_int_equal(a->n_front, b->n_front);
	for (int i = 0; i < a->n_front; i++) {
		assert_int_equal(a->front[i].step_ns, b->front[i].step_ns);
		assert_int_equal(a->front[i].max_mem, b->front[i].max_mem);
	}
	if (!a->found)
		return;
	assert_int_equal(a->best.pp, b->best.pp);
	assert_int_equal(a->best.virt, b->best.virt);
	assert_int_equal(a->best.mesh.n_axes, b->best.mesh.n_axes);
	for (int x = 0; x < a->best.mesh.n_axes; x++)
		assert_int_equal(a->best.mesh.axes[x].size, b->best.mesh.axes[x].size);
	assert_int_equal(a->best.micro_batches, b->best.micro_batches);
	assert_int_equal(a->best.step_ns, b->best.step_ns);
	assert_int_equal(a->best.max_mem, b->best.max_mem);
	assert_int_equal(a->best.n_stages, b->best.n_stages);
	for (int j = 0; j < a->best.n_stages; j++) {
		const sl_pipe_stage *x = &a->best.stage[j], *y = &b->best.stage[j];
		assert_int_equal(x->n_layers, y->n_layers);
		assert_int_equal(x->recompute, y->recompute);
		assert_int_equal(x->micro_ns, y->micro_ns);
		assert_int_equal(x->n_strat_ops, y->n_strat_ops);
		for (int u = 0; u < x->n_strat_ops; u++)
			assert_string_equal(x->strategy[u], y->strategy[u]);
	}
}

/* The same answer, and the same configurations searched alike. */
static void
assert_same_search(const sl_hybrid_result *a, const sl_hybrid_result *b)
{
	assert_same_answer(a, b);
	assert_int_equal(a->configs, b->configs);
	/* plain builds a problem per stage position: never fewer solves */
	assert_true(b->stage_solves >= a->stage_solves);
	assert_int_equal(a->partitions, b->partitions);
	assert_int_equal(a->pruned_bound, b->pruned_bound);
}

/* Options for a search over a generated model of the family's defaults. */
static void
gen_opts(sl_hybrid_opts *o, sl_gen_config *gc, sl_family fam, int layers,
    int devices, int64_t batch, int64_t mem)
{
	sl_gen_defaults(fam, gc);
	gc->layers = layers;
	opts_for(o, "a100-sxm", gen_model_fn, gc);
	o->devices = devices;
	o->global_batch = batch;
	o->mem_limit = mem;
	o->space.recipe.recompute = SL_RECOMP_AUTO;
}

/*
 * Configurations set aside once their first stages are planned (they can
 * neither win nor join the frontier) change nothing: the same plan and the
 * same frontier as planning each in full, with fewer solves.  Memory
 * limits make the first stages' plans slower than the bound before any
 * planning, which is where this bound acts.
 */
static void
test_search_stage_bound(void **state)
{
	static const struct {
		sl_family fam;
		int layers, devices;
		int64_t batch, mem;
	} cases[] = {
		{ SL_FAM_GPT, 8, 16, 64, 0 },
		{ SL_FAM_GPT, 8, 16, 64, 40000000 },
		{ SL_FAM_GPT, 12, 32, 128, 60000000 },
		{ SL_FAM_LLAMA, 8, 32, 64, 50000000 },
		{ SL_FAM_LLAMA, 6, 8, 32, 30000000 },
	};
	int64_t set_aside = 0;
	bool several = false;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sl_gen_config gc;
		sl_hybrid_opts o;
		sl_hybrid_result bound, full;
		sl_error err;

		gen_opts(&o, &gc, cases[i].fam, cases[i].layers, cases[i].devices,
		    cases[i].batch, cases[i].mem);
		sl_error_clear(&err);
		assert_int_equal(sl_hybrid_search(&o, &bound, &err), SL_OK);
		o.no_stage_bound = true;
		assert_int_equal(sl_hybrid_search(&o, &full, &err), SL_OK);
		fprintf(stderr, "# case %zu: %lld of %lld configurations set aside after "
		    "their first stages, %lld stage solves (%lld in full), %d points "
		    "on the frontier\n", i, (long long)bound.pruned_stages,
		    (long long)(bound.configs + bound.pruned_stages),
		    (long long)bound.stage_solves, (long long)full.stage_solves,
		    bound.n_front);
		assert_same_answer(&bound, &full);
		assert_int_equal(full.pruned_stages, 0);
		assert_int_equal(bound.configs + bound.pruned_stages, full.configs);
		assert_true(bound.stage_solves <= full.stage_solves);
		set_aside += bound.pruned_stages;
		if (bound.n_front > 2)
			several = true;
		sl_hybrid_result_free(&bound);
		sl_hybrid_result_free(&full);
	}
	/* the bound acted, and frontiers of several points were kept */
	assert_true(set_aside > 0);
	assert_true(several);
}

/*
 * The search shares the rows of equal layers between the operators of a
 * stage, and eliminated layers between the stages' solvers; plain costs
 * and solves every layer on its own.  Both must answer alike, to the
 * strategy, on generated models whose stages hold several equal layers.
 */
static void
test_search_shared_plain(void **state)
{
	static const struct {
		sl_family fam;
		int layers, devices;
		int64_t batch, mem;
		sl_schedule sched;
		double link;		/* bytes/s of every link; 0: the profile's */
	} cases[] = {
		{ SL_FAM_GPT, 8, 16, 64, 0, SL_SCHED_1F1B, 0 },
		{ SL_FAM_GPT, 8, 16, 64, 40000000, SL_SCHED_1F1B, 0 },
		{ SL_FAM_LLAMA, 6, 8, 32, 30000000, SL_SCHED_GPIPE, 0 },
		{ SL_FAM_GPT, 8, 8, 32, 40000000, SL_SCHED_INTERLEAVED, 0 },
		/* slow links: the transfers between stages weigh on each plan */
		{ SL_FAM_GPT, 8, 16, 64, 40000000, SL_SCHED_1F1B, 1e8 },
		{ SL_FAM_LLAMA, 6, 8, 32, 0, SL_SCHED_1F1B, 1e8 },
	};
	bool deep = false;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sl_gen_config gc;
		sl_hybrid_opts o;
		sl_hybrid_result shared, plain;
		sl_error err;

		gen_opts(&o, &gc, cases[i].fam, cases[i].layers, cases[i].devices,
		    cases[i].batch, cases[i].mem);
		o.schedule = cases[i].sched;
		if (cases[i].link > 0)
			o.hw.intra.bandwidth = o.hw.inter.bandwidth = cases[i].link;
		sl_error_clear(&err);
		assert_int_equal(sl_hybrid_search(&o, &shared, &err), SL_OK);
		o.plain = true;
		assert_int_equal(sl_hybrid_search(&o, &plain, &err), SL_OK);
		assert_same_search(&shared, &plain);
		if (shared.found && shared.best.pp > 1 && shared.best.stage[0].n_layers > 2)
			deep = true;
		sl_hybrid_result_free(&shared);
		sl_hybrid_result_free(&plain);
	}
	/* some case chose stages of several (equal) layers */
	assert_true(deep);
	/*
	 * Layers of two shapes: a middle stage's problem serves only stages
	 * over layers of the same shapes, so the shared search answers as
	 * the plain one, which builds every stage at its own layers.
	 */
	{
		static const int64_t mems[] = { 0, 15000000, 8000000, 5000000, 3000000, 2000000 };
		bool middle = false;

		for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++) {
			sl_gen_config gc;
			sl_hybrid_opts o;
			sl_hybrid_result shared, plain;
			sl_error err;

			sl_gen_defaults(SL_FAM_GPT, &gc);
			gc.layers = 6;
			opts_for(&o, "a100-sxm", wide_middle_model, &gc);
			o.devices = 12;
			o.global_batch = 24;
			o.mem_limit = mems[i];
			o.space.recipe.recompute = SL_RECOMP_AUTO;
			o.hw.intra.bandwidth = o.hw.inter.bandwidth = 1e8;
			sl_error_clear(&err);
			assert_int_equal(sl_hybrid_search(&o, &shared, &err), SL_OK);
			o.plain = true;
			assert_int_equal(sl_hybrid_search(&o, &plain, &err), SL_OK);
			assert_same_search(&shared, &plain);
			if (shared.found && shared.best.pp >= 3)
				middle = true;
			sl_hybrid_result_free(&shared);
			sl_hybrid_result_free(&plain);
		}
		/* some plan had a middle stage */
		assert_true(middle);
	}
	/*
	 * Fixed pipelines over slow links, from ample memory down to too
	 * little: each stage's plan moves along its memory / time frontier.
	 */
	for (int64_t mem = 400000000; mem > 1000000; mem = mem * 2 / 3) {
		static const int layers[4] = { 3, 2, 2, 3 };
		static const sl_recompute rec[4] = { SL_RECOMP_NONE, SL_RECOMP_SELECTIVE,
		    SL_RECOMP_NONE, SL_RECOMP_FULL };
		sl_gen_config gc;
		sl_hybrid_opts o;
		sl_pipe_config c;
		sl_pipeline a, b;
		sl_error err;

		sl_gen_defaults(SL_FAM_GPT, &gc);
		gc.layers = 10;
		opts_for(&o, "a100-sxm", gen_model_fn, &gc);
		o.hw.intra.bandwidth = o.hw.inter.bandwidth = 1e8;
		o.mem_limit = mem;
		pipe_config(&c, 4, 1, 2, 2, 8, 4, layers, rec);
		sl_error_clear(&err);
		assert_int_equal(sl_pipeline_eval(&o, &c, &a, &err), SL_OK);
		o.plain = true;
		assert_int_equal(sl_pipeline_eval(&o, &c, &b, &err), SL_OK);
		assert_int_equal(a.step_ns, b.step_ns);
		assert_int_equal(a.max_mem, b.max_mem);
		assert_int_equal(a.fits, b.fits);
		for (int j = 0; j < 4; j++)
			for (int u = 0; u < a.stage[j].n_strat_ops; u++)
				assert_string_equal(a.stage[j].strategy[u], b.stage[j].strategy[u]);
		sl_pipeline_free(&a);
		sl_pipeline_free(&b);
	}
}

/*
 * Every node and edge row of sp equals the costs computed afresh; returns
 * how many operators share an earlier operator's node rows.
 */
static int
check_space_rows(const sl_space *sp)
{
	const sl_graph *g = sp->g;
	int shared = 0;

	for (int v = 0; v < g->n_ops; v++) {
		assert_int_equal(sp->ops[v].n_strat, sp->ops[sp->like[v]].n_strat);
		if (sp->node_of[v] != v) {
			/* the very rows of the operator named */
			assert_ptr_equal(sp->node_mem[v], sp->node_mem[sp->node_of[v]]);
			assert_ptr_equal(sp->node_ns[v], sp->node_ns[sp->node_of[v]]);
			shared++;
		}
		for (int s = 0; s < sp->ops[v].n_strat; s++) {
			sl_mem mem;
			sl_comm c;
			sl_compute cp;
			int64_t ns = 0;
			sl_node_cost(sp, v, s, NULL, &mem, &c);
			sl_node_compute(sp, v, s, NULL, &cp);
			for (int x = 0; x < SL_COLL_COUNT; x++)
				ns += c.ns[x];
			assert_string_equal(sp->ops[v].strat[s].name,
			    sp->ops[sp->like[v]].strat[s].name);
			assert_int_equal(sp->node_mem[v][s], mem.params + mem.grads +
			    mem.optim + mem.acts + mem.buffers);
			assert_int_equal(sp->node_ns[v][s], ns + cp.recompute_ns);
		}
	}
	for (int e = 0; e < sp->n_edges; e++) {
		int ka = sp->ops[sp->edges[e].src].n_strat;
		int kb = sp->ops[sp->edges[e].dst].n_strat;
		for (int i = 0; i < ka; i++)
			for (int j = 0; j < kb; j++) {
				sl_mem mem;
				sl_comm c;
				int64_t ns = 0;
				sl_edge_cost(sp, e, i, j, NULL, &mem, &c);
				for (int x = 0; x < SL_COLL_COUNT; x++)
					ns += c.ns[x];
				assert_int_equal(sp->edge_mem[e][i * kb + j],
				    mem.params + mem.grads + mem.optim +
				    mem.acts + mem.buffers);
				assert_int_equal(sp->edge_ns[e][i * kb + j], ns);
			}
	}
	return shared;
}

/*
 * sl_space_build shares the strategies and node rows of an operator alike
 * to one of an earlier layer, and copies its edge tables: every row equals
 * the costs computed afresh, after every layer switches recomputation, after
 * one layer alone does (the rows it shared become its own, and the other
 * layers' stay right), and after runs of layers recompute differently.
 */
static void
test_space_alike(void **state)
{
	static const sl_recompute modes[] = {
		SL_RECOMP_NONE, SL_RECOMP_FULL, SL_RECOMP_SELECTIVE
	};
	static const uint8_t runs[5] = {
		SL_RECOMP_NONE, SL_RECOMP_NONE, SL_RECOMP_FULL, SL_RECOMP_FULL,
		SL_RECOMP_SELECTIVE
	};
	sl_gen_config gc;
	sl_hw hw;
	sl_mesh m;
	sl_space *sp;
	sl_graph *g;
	sl_error err;
	int shape[2] = { 2, 4 }, per;

	(void)state;
	sl_error_clear(&err);
	assert_int_equal(sl_hw_load("a100-sxm", &hw, &err), SL_OK);
	assert_int_equal(sl_mesh_make(&hw, 2, shape, &m, &err), SL_OK);
	sl_gen_defaults(SL_FAM_LLAMA, &gc);
	gc.layers = 5;
	gc.batch = 8;
	assert_non_null(g = sl_gen(&gc, &err));
	assert_non_null(sp = sl_space_build(g, &m, NULL, &err));
	/* the operators of layers 1 to 4 share layer 0's rows */
	per = g->layers[1].n_ops;
	for (size_t r = 0; r < sizeof modes / sizeof modes[0]; r++) {
		if (r > 0)
			sl_space_set_recompute(sp, modes[r]);
		assert_int_equal(check_space_rows(sp), (g->n_layers - 1) * per);
	}
	/* layer 0, whose rows the others share, alone: nothing is alike after,
	 * and the others keep their costs */
	sl_space_set_layer_recompute(sp, 0, SL_RECOMP_FULL);
	assert_int_equal(check_space_rows(sp), 0);
	sl_space_set_layer_recompute(sp, 3, SL_RECOMP_NONE);
	assert_int_equal(check_space_rows(sp), 0);
	/* runs: layers 1 and 3 share the rows of layers 0 and 2 */
	sl_space_set_layers_recompute(sp, runs);
	assert_int_equal(check_space_rows(sp), 2 * per);
	sl_space_free(sp);
	sl_graph_free(g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schedules),
		cmocka_unit_test(test_stage_memory),
		cmocka_unit_test(test_interleaved_budget),
		cmocka_unit_test(test_pipeline_step_end),
		cmocka_unit_test(test_account),
		cmocka_unit_test(test_ctx_pins),
		cmocka_unit_test(test_topology),
		cmocka_unit_test(test_search_exhaustive),
		cmocka_unit_test(test_search_stage_bound),
		cmocka_unit_test(test_search_shared_plain),
		cmocka_unit_test(test_space_alike),
		cmocka_unit_test(test_gpt3_narayanan),
		cmocka_unit_test(test_gpt3_korthikanti),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
