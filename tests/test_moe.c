/*
 * test_moe.c: a mixture-of-experts layer against hand calculations.
 *
 * The toy MoE model of sl_gen_defaults (one layer): hidden h = 64, E = 4
 * experts of f = 64 (SwiGLU: w1 [E,h,2f], w2 [E,f,h]), top-k = 2, sequence
 * s = 32, batch b = 4, bf16.  Dropless, each sample sends an expert
 * c = s k / E = 16 tokens: the dispatched tensor is [b,E,c,h] = [4,4,16,64],
 * 16,384 elements, 32,768 bytes.  Parameters cost 16 bytes an element
 * (2 weight + 2 gradient + 12 Adam).
 */
#include "testutil.h"
#include "mlp.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define H 64
#define E 4
#define F 64
#define K 2
#define S 32
#define B 4
#define C 16

static sl_graph *
moe_graph(double capacity)
{
	sl_gen_config c;
	sl_error err;
	sl_graph *g;

	sl_gen_defaults(SL_FAM_MOE, &c);
	c.layers = 1;
	c.batch = B;
	c.capacity = capacity;
	sl_error_clear(&err);
	g = sl_gen(&c, &err);
	if (g == NULL)
		fail_msg("%s", err.msg);
	return g;
}

static sl_space *
moe_space(const sl_graph *g, int n_axes, int a, int b)
{
	sl_mesh m;
	sl_error err;
	sl_space *s;

	assert_int_equal(tu_mesh("h100-nvlink", n_axes, a, b, &m), 0);
	sl_error_clear(&err);
	s = sl_space_build(g, &m, NULL, &err);
	if (s == NULL)
		fail_msg("%s", err.msg);
	return s;
}

static int
op_of(const sl_space *s, const char *name)
{
	int v = sl_graph_find_op(s->g, name);

	if (v < 0)
		fail_msg("no operator %s", name);
	return v;
}

static int
strat_of(const sl_space *s, int v, const char *name)
{
	int i = sl_space_find_strategy(s, v, name);

	if (i < 0)
		fail_msg("%s has no strategy %s", s->g->ops[v].name, name);
	return i;
}

/* The edge carrying tensor into operator dst. */
static int
edge_into(const sl_space *s, const char *tensor, const char *dst)
{
	int t = sl_graph_find_tensor(s->g, tensor), d = op_of(s, dst);

	for (int e = 0; e < s->n_edges; e++)
		if (s->edges[e].tensor == t && s->edges[e].dst == d)
			return e;
	fail_msg("no edge of %s into %s", tensor, dst);
	return -1;
}

/* All-to-all over n devices of B bytes (doc/cost-model.md), by hand:
 * each device sends (n - 1)/n of its B/n. */
static int64_t
a2a_ns(const sl_mesh *m, int axis, double bytes)
{
	const sl_axis *ax = &m->axes[axis];
	double n = ax->size;

	return (int64_t)llround((n - 1) / (n * n) * bytes / ax->link.bandwidth * 1e9 +
	    (n - 1) * ax->link.latency * 1e9);
}

/* Shapes and counts of the layer. */
static void
test_moe_shapes(void **state)
{
	sl_graph *g = moe_graph(0);
	const sl_tensor *d = &g->tensors[sl_graph_find_tensor(g, "layer0.dispatch.out")];
	const sl_op *ex = &g->ops[sl_graph_find_op(g, "layer0.experts")];
	int64_t total = sl_graph_param_count(g), emb, act;

	assert_int_equal(d->rank, 4);
	assert_int_equal(d->dims[0], B);
	assert_int_equal(d->dims[1], E);
	assert_int_equal(d->dims[2], C);
	assert_int_equal(d->dims[3], H);
	assert_int_equal(ex->topk, K);
	assert_true(ex->gated);
	/* active: the experts' 3 h f per expert counts top-k of E */
	act = sl_graph_active_params(g, &emb);
	assert_int_equal(total - act, (int64_t)(E - K) * 3 * H * F);
	assert_int_equal(emb, 512 * H);		/* the untied input table */
	sl_graph_free(g);

	/* a capacity factor bounds each expert's tokens: ceil(1.25 s k / E) */
	g = moe_graph(1.25);
	d = &g->tensors[sl_graph_find_tensor(g, "layer0.dispatch.out")];
	assert_int_equal(d->dims[2], 20);
	sl_graph_free(g);
	/* ... at most the sample's tokens */
	g = moe_graph(100);
	d = &g->tensors[sl_graph_find_tensor(g, "layer0.dispatch.out")];
	assert_int_equal(d->dims[2], S);
	sl_graph_free(g);
}

/*
 * Memory of the experts operator on device 0 under each strategy of a
 * 4-device axis: expert parallel (each device one expert), data parallel
 * (every expert, a quarter of the samples), and on 2 x 2 expert parallel
 * with expert tensor parallelism (two experts, half of f).
 */
static void
test_moe_memory(void **state)
{
	sl_graph *g = moe_graph(0);
	sl_space *s = moe_space(g, 1, 4, 1);
	int v = op_of(s, "layer0.experts");
	int64_t w_el = (int64_t)E * H * 2 * F + (int64_t)E * F * H;	/* 49,152 */
	sl_mem m;

	/* exp: one expert's weights; its tokens of every sample: [4,1,16,64]
	 * kept (fc1's input), fc1's 2f and the activation's f per token */
	sl_node_cost(s, v, strat_of(s, v, "exp"), NULL, &m, NULL);
	assert_int_equal(m.params, 2 * w_el / 4);
	assert_int_equal(m.grads, 2 * w_el / 4);
	assert_int_equal(m.optim, 12 * w_el / 4);
	assert_int_equal(m.acts, (int64_t)B * 1 * C * H * 2 +
	    (int64_t)B * 1 * C * (2 * F + F) * 2);
	/* dp: every expert, one sample */
	sl_node_cost(s, v, strat_of(s, v, "dp"), NULL, &m, NULL);
	assert_int_equal(m.params, 2 * w_el);
	assert_int_equal(m.acts, (int64_t)1 * E * C * H * 2 +
	    (int64_t)1 * E * C * (2 * F + F) * 2);
	/* the router keeps fp32 scores of every expert and the int64 top-k
	 * indices, dispatch an int64 index per routed token, combine the
	 * experts' output and the weights */
	{
		int r = op_of(s, "layer0.router"), d = op_of(s, "layer0.dispatch");
		int cb = op_of(s, "layer0.combine");
		sl_node_cost(s, r, strat_of(s, r, "dp"), NULL, &m, NULL);
		assert_int_equal(m.acts, 4LL * 1 * S * E + 8LL * 1 * S * K);
		sl_node_cost(s, d, strat_of(s, d, "dp"), NULL, &m, NULL);
		assert_int_equal(m.acts, 8LL * 1 * S * K);
		sl_node_cost(s, cb, strat_of(s, cb, "dp"), NULL, &m, NULL);
		assert_int_equal(m.acts, 1LL * E * C * H * 2 + 1LL * S * K * 2);
	}
	sl_space_free(s);

	/* 2 x 2: experts over axis 0, f over axis 1 */
	s = moe_space(g, 2, 2, 2);
	v = op_of(s, "layer0.experts");
	sl_node_cost(s, v, strat_of(s, v, "exp0.col1"), NULL, &m, NULL);
	assert_int_equal(m.params, 2 * w_el / 4);
	/* every sample's tokens of two experts, replicated on axis 1; fc1's
	 * output and the activation halved by f */
	assert_int_equal(m.acts, (int64_t)B * 2 * C * H * 2 +
	    (int64_t)B * 2 * C * (2 * F + F) / 2 * 2);
	sl_space_free(s);
	sl_graph_free(g);
}

/*
 * Communication: the dispatcher's all-to-all is the resharding of
 * [b,E,c,h] from a split of the batch (dispatch dp) to a split of the
 * experts (experts exp), forward and backward; combine's the way back.
 * Expert weights reduce their gradients only over the axes that split the
 * tokens (expert data parallelism), never over the expert axis.
 */
static void
test_moe_all_to_all(void **state)
{
	sl_graph *g = moe_graph(0);
	sl_space *s = moe_space(g, 1, 4, 1);
	int d = op_of(s, "layer0.dispatch"), x = op_of(s, "layer0.experts");
	int cb = op_of(s, "layer0.combine");
	int e = edge_into(s, "layer0.dispatch.out", "layer0.experts");
	double bytes = (double)B * E * C * H * 2;	/* 32,768 */
	sl_mem m;
	sl_comm c;

	sl_edge_cost(s, e, strat_of(s, d, "dp"), strat_of(s, x, "exp"), NULL, &m, &c);
	assert_int_equal(c.bytes[SL_COLL_ALL_TO_ALL], 2 * (int64_t)bytes);
	assert_int_equal(c.ns[SL_COLL_ALL_TO_ALL], 2 * a2a_ns(&s->mesh, 0, bytes));
	assert_int_equal(sl_comm_total(&c), c.ns[SL_COLL_ALL_TO_ALL]);
	/* the received tokens: a quarter of the tensor, as a buffer */
	assert_int_equal(m.buffers, (int64_t)bytes / 4);
	/* and back to the tokens' owners */
	e = edge_into(s, "layer0.experts.out", "layer0.combine");
	sl_edge_cost(s, e, strat_of(s, x, "exp"), strat_of(s, cb, "dp"), NULL, &m, &c);
	assert_int_equal(c.bytes[SL_COLL_ALL_TO_ALL], 2 * (int64_t)bytes);
	assert_int_equal(c.ns[SL_COLL_ALL_TO_ALL], 2 * a2a_ns(&s->mesh, 0, bytes));
	/* data-parallel experts: no all-to-all, but the weights' gradients
	 * all-reduced (2 bytes an element under bf16) */
	e = edge_into(s, "layer0.dispatch.out", "layer0.experts");
	sl_edge_cost(s, e, strat_of(s, d, "dp"), strat_of(s, x, "dp"), NULL, &m, &c);
	assert_int_equal(sl_comm_total(&c), 0);
	sl_node_cost(s, x, strat_of(s, x, "dp"), NULL, NULL, &c);
	assert_int_equal(c.bytes[SL_COLL_ALL_REDUCE],
	    2 * ((int64_t)E * H * 2 * F + (int64_t)E * F * H));
	sl_node_cost(s, x, strat_of(s, x, "exp"), NULL, NULL, &c);
	assert_int_equal(sl_comm_total(&c), 0);
	/*
	 * The all-gather dispatcher: dispatch split by experts reads every
	 * token (gathered from the batch split, forward), its input's
	 * gradient is summed over the expert axis (backward), and combine's
	 * output is a partial sum there.
	 */
	sl_node_cost(s, d, strat_of(s, d, "exp"), NULL, NULL, &c);
	assert_int_equal(c.bytes[SL_COLL_ALL_REDUCE], (int64_t)B * S * H * 2);
	{
		int ce = strat_of(s, cb, "exp");
		assert_int_equal(s->ops[cb].strat[ce].spec[2].partial, 1);
	}
	sl_space_free(s);
	sl_graph_free(g);
}

/* Experts split in equal parts only: 4 experts on 3 devices have no expert
 * split; on 2 x 2 both axes may split them (4 parts). */
static void
test_moe_divides(void **state)
{
	sl_graph *g = moe_graph(0);
	sl_space *s = moe_space(g, 1, 3, 1);
	int x = op_of(s, "layer0.experts");

	assert_int_equal(sl_space_find_strategy(s, x, "exp"), -1);
	assert_true(sl_space_find_strategy(s, x, "dp") >= 0);
	sl_space_free(s);
	s = moe_space(g, 2, 2, 2);
	x = op_of(s, "layer0.experts");
	assert_true(sl_space_find_strategy(s, x, "exp01") >= 0);
	assert_true(sl_space_find_strategy(s, x, "dp0.exp1") >= 0);
	sl_space_free(s);
	sl_graph_free(g);
}

/* Compute: the experts' grouped gemms do 2 x tokens x h x (2f + f)
 * forward, twice that backward, for the tokens a device holds. */
static void
test_moe_flops(void **state)
{
	sl_graph *g = moe_graph(0);
	sl_space *s = moe_space(g, 1, 4, 1);
	int x = op_of(s, "layer0.experts");
	sl_compute cp;

	sl_node_compute(s, x, strat_of(s, x, "exp"), NULL, &cp);
	assert_int_equal(cp.flops_fwd, 2LL * (B * 1 * C) * H * (2 * F + F));
	assert_int_equal(cp.flops_bwd, 2 * cp.flops_fwd);
	/* a whole step's experts: every routed token once, k per token */
	sl_node_compute(s, x, strat_of(s, x, "dp"), NULL, &cp);
	assert_int_equal(cp.flops_fwd * 4, 2LL * B * S * K * H * (2 * F + F));
	sl_space_free(s);
	sl_graph_free(g);
}

/*
 * The launch list the GPU runner replays: its buffers sum to the
 * evaluator's figures on every device, the experts run as grouped gemms of
 * their local experts, and the dispatcher's all-to-all is there forward
 * and backward, of the tensor the group holds (the runner sends each peer
 * B / n^2 of it with NCCL).
 */
static void
test_moe_launch(void **state)
{
	sl_graph *g = moe_graph(0);
	sl_space *s = moe_space(g, 1, 4, 1);
	int *choice = calloc(g->n_ops, sizeof *choice);
	int x = op_of(s, "layer0.experts");
	int n_a2a[2] = { 0, 0 }, fc1 = 0;
	sl_launch l;
	sl_eval ev;
	sl_error err;

	for (int v = 0; v < g->n_ops; v++)
		choice[v] = strat_of(s, v, v == x ? "exp" : "dp");
	sl_error_clear(&err);
	assert_int_equal(sl_launch_build(s, choice, &l, &err), SL_OK);
	assert_int_equal(sl_evaluate(s, choice, 0, &ev, &err), SL_OK);
	for (int d = 0; d < l.n_devices; d++)
		for (int c = 0; c < SL_CAT_COUNT; c++)
			assert_int_equal(sl_mem_get(&l.dev[d].alloc_sum, c),
			    sl_mem_get(&ev.dev[d], c));
	for (int i = 0; i < l.dev[0].n_items; i++) {
		const sl_launch_item *it = &l.dev[0].item[i];
		if (it->kind == SL_ITEM_COLL && it->coll == SL_COLL_ALL_TO_ALL) {
			assert_int_equal(it->bytes, (int64_t)B * E * C * H * 2);
			assert_int_equal(it->group, 4);
			n_a2a[it->phase]++;
		}
		if (it->kind == SL_ITEM_GEMM && it->op == x &&
		    strcmp(strrchr(it->name, '.') + 1, "fc1") == 0) {
			/* one local expert: every sample's c tokens, h -> 2f */
			assert_int_equal(it->batch, 1);
			assert_int_equal(it->m, (int64_t)B * C);
			assert_int_equal(it->n, 2 * F);
			assert_int_equal(it->k, H);
			fc1++;
		}
	}
	/* dispatch -> experts and experts -> combine, each way */
	assert_int_equal(n_a2a[SL_PHASE_FWD], 2);
	assert_int_equal(n_a2a[SL_PHASE_BWD], 2);
	assert_int_equal(fc1, 1);
	sl_eval_free(&ev);
	sl_launch_free(&l);
	free(choice);
	sl_space_free(s);
	sl_graph_free(g);
}

/* explain teaches the all-to-all with the arithmetic it shows for an
 * all-reduce, and says which experts each device holds. */
static void
test_moe_explain(void **state)
{
	sl_graph *g = moe_graph(0);
	sl_space *s = moe_space(g, 1, 4, 1);
	int x = op_of(s, "layer0.experts");
	int *choice = calloc(g->n_ops, sizeof *choice);
	char *text, want[160];
	sl_error err;

	for (int v = 0; v < g->n_ops; v++)
		choice[v] = strat_of(s, v, v == x ? "exp" : "dp");
	sl_error_clear(&err);
	text = sl_explain(s, choice, x, choice[x], &err);
	assert_non_null(text);
	assert_non_null(strstr(text, "device 2: expert 2\n"));
	assert_non_null(strstr(text, "each keeps 1/4 of its piece and sends 1/4 to "
	    "each of the 3 others"));
	snprintf(want, sizeof want, "forward all-to-all over axis 0 (4 devices) of "
	    "32,768 bytes (32.00 KiB): 3/4^2 x 32,768 B / ");
	assert_non_null(strstr(text, want));
	free(text);
	free(choice);
	sl_space_free(s);
	sl_graph_free(g);
}

/*
 * The experts as Megatron-LM runs them (sl_framework_choice), on a 4 x 2
 * mesh of roles dp, tp: the router and its gate on the rank's tokens; with
 * the experts' axes (ep_axes) they split by expert and the tokens keep
 * their split (all-to-all), else by width over tp, the tokens gathered
 * before dispatch and reduce-scattered by combine.  The layout read back
 * (moe.c) gives the degrees Megatron-LM is told, and its rules refuse
 * experts that do not divide.
 */
static void
test_moe_framework(void **state)
{
	static const sl_axis_role role[2] = { SL_AXIS_DP, SL_AXIS_TP };
	static const struct {
		unsigned ep;
		const char *dispatch, *experts;
		int want_ep, want_etp;
	} rows[] = {
		{ 0, "dp0", "dp0.col1", 1, 2 },
		{ 1, "dp0", "exp0.col1", 4, 2 },
		{ 2, "dp0.seq1", "dp0.exp1", 2, 1 },
	};
	sl_graph *g = moe_graph(0);
	sl_space *s = moe_space(g, 2, 4, 2);
	int *c = calloc(g->n_ops, sizeof *c);
	char why[256];

	(void)state;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		sl_moe_layout l;
		sl_layout lay;
		sl_arch a;

		assert_int_equal(sl_framework_choice(s, role, rows[i].ep, false, c,
		    why, sizeof why), SL_OK);
		assert_string_equal(s->ops[op_of(s, "layer0.moe_gate")].strat[
		    c[op_of(s, "layer0.moe_gate")]].name, "dp0.seq1");
		assert_string_equal(s->ops[op_of(s, "layer0.router")].strat[
		    c[op_of(s, "layer0.router")]].name, "dp0.seq1");
		assert_string_equal(s->ops[op_of(s, "layer0.dispatch")].strat[
		    c[op_of(s, "layer0.dispatch")]].name, rows[i].dispatch);
		assert_string_equal(s->ops[op_of(s, "layer0.experts")].strat[
		    c[op_of(s, "layer0.experts")]].name, rows[i].experts);
		assert_string_equal(s->ops[op_of(s, "layer0.combine")].strat[
		    c[op_of(s, "layer0.combine")]].name, "dp0.seq1");
		for (int v = 0; v < g->n_ops; v++)
			assert_true(sl_strategy_roles_ok(s, v, &s->ops[v].strat[c[v]], role));
		sl_moe_layout_init(&l);
		for (int v = 0; v < g->n_ops; v++)
			sl_moe_layout_add(s, v, c[v], &l);
		sl_moe_layout_finish(&s->mesh, &l);
		assert_int_equal(l.ep, rows[i].want_ep);
		assert_int_equal(l.etp, rows[i].want_etp);
		assert_false(l.allgather);
		assert_true(l.megatron);
		/* Megatron-LM accepts it, and refuses 4 experts over 3 */
		assert_int_equal(sl_arch_of(g, &a, NULL), SL_OK);
		assert_int_equal(a.moe.experts, 4);
		memset(&lay, 0, sizeof lay);
		lay.framework = SL_FW_MEGATRON;
		lay.world = 8;
		lay.pp = lay.vpp = lay.cp = 1;
		lay.tp = 2;
		lay.dp = 4;
		lay.n_stages = 1;
		lay.micro_batch = 1;
		lay.micro_batches = 1;
		lay.global_batch = 4;
		lay.precision = SL_PREC_MEGATRON;
		lay.ep = l.ep;
		lay.etp = l.etp;
		assert_true(sl_layout_check(&lay, &a, why, sizeof why));
		lay.ep = 3;
		assert_false(sl_layout_check(&lay, &a, why, sizeof why));
		assert_string_equal(why, "4 experts are not a multiple of expert parallel 3");
	}
	free(c);
	sl_space_free(s);
	sl_graph_free(g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_moe_shapes),
		cmocka_unit_test(test_moe_memory),
		cmocka_unit_test(test_moe_all_to_all),
		cmocka_unit_test(test_moe_divides),
		cmocka_unit_test(test_moe_flops),
		cmocka_unit_test(test_moe_launch),
		cmocka_unit_test(test_moe_explain),
		cmocka_unit_test(test_moe_framework),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
