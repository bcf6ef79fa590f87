/*
 * test_launch.c: the launch lists the GPU runner executes, checked on the
 * CPU.  Per device, the bytes a launch list allocates equal the evaluator's
 * prediction in every category, its itemized buffers agree with the cost
 * model without correction, its collectives add up to the modelled
 * communication time, and its matmuls have the local shard shapes worked
 * out by hand below.
 */
#include "testutil.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int mkstemp(char *template);

/* ------------------------------------------------------------- helpers */

/*
 * The events of device d: keyed to items in order, every timeline buffer
 * with bytes allocated once and released once after, and replayed in order
 * they hold at most exactly the peak of the device's timeline (built here
 * on its own, default order).
 */
static void
check_events(const sl_space *s, const int *choice, int d, const sl_launch_dev *dv)
{
	sl_timeline tl;
	sl_error err;
	int *state = calloc(dv->n_tbuf + 1, sizeof(int));
	int last_at = 0;

	sl_error_clear(&err);
	assert_int_equal(sl_timeline_build(s, choice, d, false, &tl, &err), SL_OK);
	assert_int_equal(dv->n_tbuf, tl.n_bufs);
	assert_true(dv->n_event > 0);
	for (int e = 0; e < dv->n_event; e++) {
		const sl_launch_event *ev = &dv->event[e];
		assert_true(ev->at >= last_at && ev->at <= dv->n_items);
		last_at = ev->at;
		assert_true(ev->buf >= 0 && ev->buf < dv->n_tbuf);
		assert_int_equal(state[ev->buf], ev->release ? 1 : 0);
		state[ev->buf]++;
	}
	for (int i = 0; i < dv->n_tbuf; i++) {
		assert_int_equal(dv->tbuf[i].bytes, tl.buf[i].bytes);
		assert_int_equal(state[i], tl.buf[i].bytes > 0 ? 2 : 0);
	}
	assert_true(tl.peak > 0);
	assert_int_equal(dv->tl_peak, tl.peak);
	assert_int_equal(sl_launch_replay_peak(dv), tl.peak);
	free(state);
	sl_timeline_free(&tl);
}

/* The two-layer MLP: x[b,512] -> fc1 w1[512,2048] -> gelu -> fc2 w2[2048,512]. */
static sl_graph *
mlp(int64_t batch)
{
	sl_graph *g = sl_graph_new("mlp-2layer");
	sl_error err;
	int64_t dx[2] = { batch, 512 }, dw1[2] = { 512, 2048 }, dh[2] = { batch, 2048 };
	int64_t dw2[2] = { 2048, 512 }, dy[2] = { batch, 512 };
	int x, w1, h, a, w2, y;

	sl_error_clear(&err);
	x = sl_graph_add_tensor(g, "x", 2, dx, SL_DT_BF16, SL_ROLE_INPUT, &err);
	w1 = sl_graph_add_tensor(g, "w1", 2, dw1, SL_DT_BF16, SL_ROLE_PARAMETER, &err);
	h = sl_graph_add_tensor(g, "h", 2, dh, SL_DT_BF16, SL_ROLE_ACTIVATION, &err);
	a = sl_graph_add_tensor(g, "a", 2, dh, SL_DT_BF16, SL_ROLE_ACTIVATION, &err);
	w2 = sl_graph_add_tensor(g, "w2", 2, dw2, SL_DT_BF16, SL_ROLE_PARAMETER, &err);
	y = sl_graph_add_tensor(g, "y", 2, dy, SL_DT_BF16, SL_ROLE_ACTIVATION, &err);
	assert_true(x >= 0 && w1 >= 0 && h >= 0 && a >= 0 && w2 >= 0 && y >= 0);
	assert_int_equal(sl_graph_add_op(g, "fc1", SL_OP_MATMUL, 2,
	    (int[]){ x, w1 }, 1, &h, NULL, &err), 0);
	assert_int_equal(sl_graph_add_op(g, "gelu", SL_OP_GELU, 1, &h, 1, &a,
	    NULL, &err), 1);
	assert_int_equal(sl_graph_add_op(g, "fc2", SL_OP_MATMUL, 2,
	    (int[]){ a, w2 }, 1, &y, NULL, &err), 2);
	assert_int_equal(sl_graph_validate(g, NULL, &err), SL_OK);
	return g;
}

static sl_space *
space_on(const sl_graph *g, int n_axes, const int *shape)
{
	sl_hw hw;
	sl_mesh m;
	sl_error err;
	sl_space *s;

	sl_error_clear(&err);
	assert_int_equal(sl_hw_load("h100-nvlink", &hw, &err), SL_OK);
	assert_int_equal(sl_mesh_make(&hw, n_axes, shape, &m, &err), SL_OK);
	s = sl_space_build(g, &m, NULL, &err);
	assert_non_null(s);
	return s;
}

static void
choose(const sl_space *s, int *choice, const char *const *names)
{
	for (int op = 0; op < s->g->n_ops; op++) {
		choice[op] = sl_space_find_strategy(s, op, names[op]);
		if (choice[op] < 0)
			fail_msg("operator %s has no strategy %s", s->g->ops[op].name,
			    names[op]);
	}
}

/*
 * The invariants of every launch list: per device and category the
 * allocations equal the evaluator, no operator needed the cost model's
 * correction, and the collectives' times add up to the modelled
 * communication (the same on every device, and the evaluator's).
 */
static void
check_launch(const sl_space *s, const int *choice, sl_launch *l)
{
	sl_error err;
	sl_eval ev;

	sl_error_clear(&err);
	assert_int_equal(sl_launch_build(s, choice, l, &err), SL_OK);
	assert_int_equal(sl_evaluate(s, choice, 0.0, &ev, &err), SL_OK);
	assert_int_equal(l->n_devices, s->mesh.n_devices);
	for (int d = 0; d < l->n_devices; d++) {
		const sl_launch_dev *dv = &l->dev[d];
		sl_mem sum;

		memset(&sum, 0, sizeof(sum));
		for (int i = 0; i < dv->n_alloc; i++) {
			assert_true(dv->alloc[i].bytes > 0);
			sl_mem_add(&sum, dv->alloc[i].cat, dv->alloc[i].bytes);
		}
		for (int c = 0; c < SL_CAT_COUNT; c++) {
			if (sl_mem_get(&sum, c) != sl_mem_get(&ev.dev[d], c))
				fail_msg("device %d %s: allocated %lld, predicted %lld",
				    d, sl_mem_cat_name(c),
				    (long long)sl_mem_get(&sum, c),
				    (long long)sl_mem_get(&ev.dev[d], c));
			assert_int_equal(sl_mem_get(&dv->alloc_sum, c),
			    sl_mem_get(&ev.dev[d], c));
			assert_int_equal(sl_mem_get(&dv->predicted, c),
			    sl_mem_get(&ev.dev[d], c));
		}
		assert_int_equal(dv->items_comm_ns, dv->comm_ns);
		assert_int_equal(dv->comm_ns, ev.comm_ns);
		check_events(s, choice, d, dv);
	}
	sl_eval_free(&ev);
}

static const sl_launch_item *
find_item(const sl_launch_dev *d, const char *name)
{
	for (int i = 0; i < d->n_items; i++)
		if (strcmp(d->item[i].name, name) == 0)
			return &d->item[i];
	fail_msg("no launch item %s", name);
	return NULL;
}

static void
assert_gemm(const sl_launch_dev *d, const char *name, int64_t m, int64_t n,
    int64_t k)
{
	const sl_launch_item *it = find_item(d, name);

	assert_int_equal(it->kind, SL_ITEM_GEMM);
	assert_int_equal(it->batch, 1);
	assert_int_equal(it->m, m);
	assert_int_equal(it->n, n);
	assert_int_equal(it->k, k);
	assert_int_equal(it->flops, 2 * m * n * k);
}

static int64_t
alloc_bytes(const sl_launch_dev *d, const char *name)
{
	for (int i = 0; i < d->n_alloc; i++)
		if (strcmp(d->alloc[i].name, name) == 0)
			return d->alloc[i].bytes;
	return -1;
}

/* --------------------------------------------------------------- tests */

/*
 * Megatron MLP on 4 devices: fc1 col, gelu col, fc2 row.  Local w1 is
 * 512 x 512 and local w2 512 x 512; every device holds
 *   parameters 2 x (2 x 512 x 512)            = 1,048,576
 *   gradients  the same                       = 1,048,576
 *   optimizer  12 x 2 x 512 x 512             = 6,291,456
 *   activations x[8,512], h[8,512], a[8,512] in bf16 = 3 x 8192 = 24,576
 * and nothing moves between the operators (h and a stay split by column).
 */
static void
test_mlp_megatron(void **state)
{
	sl_graph *g = mlp(8);
	sl_space *s = space_on(g, 1, (int[]){ 4 });
	const char *names[] = { "col", "col", "row" };
	int choice[3];
	sl_launch l;

	choose(s, choice, names);
	check_launch(s, choice, &l);
	for (int d = 0; d < 4; d++) {
		const sl_launch_dev *dv = &l.dev[d];

		assert_int_equal(dv->predicted.params, 1048576);
		assert_int_equal(dv->predicted.grads, 1048576);
		assert_int_equal(dv->predicted.optim, 6291456);
		assert_int_equal(dv->predicted.acts, 24576);
		assert_int_equal(dv->predicted.buffers, 0);
		assert_int_equal(alloc_bytes(dv, "w1"), 512 * 512 * 2);
		assert_int_equal(alloc_bytes(dv, "w1.grad"), 512 * 512 * 2);
		assert_int_equal(alloc_bytes(dv, "w1.master"), 512 * 512 * 4);
		assert_int_equal(alloc_bytes(dv, "fc1:saved:x"), 8 * 512 * 2);
		/* fc1: [8,512] x [512,512]; dgrad dx = dh w1^T; wgrad dw1 = x^T dh */
		assert_gemm(dv, "fc1.fwd", 8, 512, 512);
		assert_gemm(dv, "fc1.wgrad", 512, 512, 8);
		/* x is data: no gradient, so no dgrad for fc1 */
		for (int i = 0; i < dv->n_items; i++)
			assert_string_not_equal(dv->item[i].name, "fc1.dgrad");
		/* fc2 row: [8,512] x [512,512] (contraction split) */
		assert_gemm(dv, "fc2.fwd", 8, 512, 512);
		assert_gemm(dv, "fc2.dgrad", 8, 512, 512);
		assert_gemm(dv, "fc2.wgrad", 512, 512, 8);
		/* gelu reads h and writes a: 2 x 8 x 512 x 2 bytes */
		assert_int_equal(find_item(dv, "gelu.fwd")->bytes, 16384);
		assert_int_equal(dv->flops, 2 * (2LL * 8 * 512 * 512) +
		    3 * (2LL * 8 * 512 * 512));
	}
	sl_launch_free(&l);
	sl_space_free(s);
	sl_graph_free(g);
}

/*
 * Data parallel on 4 devices with a batch of 6: devices 0 and 1 get 2 rows,
 * 2 and 3 get 1.  Weights are replicated, so their gradients are all-reduced
 * over the axis: B = 512 x 2048 x 2 bytes each, in backward order fc2, fc1.
 */
static void
test_mlp_dp_uneven(void **state)
{
	sl_graph *g = mlp(6);
	sl_space *s = space_on(g, 1, (int[]){ 4 });
	const char *names[] = { "dp", "dp", "dp" };
	int choice[3];
	sl_launch l;
	const int64_t rows[4] = { 2, 2, 1, 1 };

	choose(s, choice, names);
	check_launch(s, choice, &l);
	for (int d = 0; d < 4; d++) {
		const sl_launch_dev *dv = &l.dev[d];
		int n_ar = 0;

		assert_gemm(dv, "fc1.fwd", rows[d], 2048, 512);
		assert_gemm(dv, "fc2.fwd", rows[d], 512, 2048);
		assert_gemm(dv, "fc2.dgrad", rows[d], 2048, 512);
		assert_gemm(dv, "fc2.wgrad", 2048, 512, rows[d]);
		assert_int_equal(dv->predicted.params, 2 * 2 * 512 * 2048);
		/* saved: x[r,512], h[r,2048], a[r,2048] in bf16 */
		assert_int_equal(dv->predicted.acts, rows[d] * (512 + 2048 + 2048) * 2);
		for (int i = 0; i < dv->n_items; i++) {
			const sl_launch_item *it = &dv->item[i];
			if (it->kind != SL_ITEM_COLL)
				continue;
			assert_int_equal(it->coll, SL_COLL_ALL_REDUCE);
			assert_int_equal(it->phase, SL_PHASE_BWD);
			assert_int_equal(it->axis, 0);
			assert_int_equal(it->group, 4);
			assert_int_equal(it->bytes, 512 * 2048 * 2);
			assert_int_equal(it->ns, sl_coll_time(SL_COLL_ALL_REDUCE, 4,
			    512 * 2048 * 2, &s->mesh.axes[0].link));
			assert_string_equal(it->name, n_ar == 0 ? "fc2.w2.grad0" :
			    "fc1.w1.grad0");
			n_ar++;
		}
		assert_int_equal(n_ar, 2);
	}
	sl_launch_free(&l);
	sl_space_free(s);
	sl_graph_free(g);
}

/* Every assignment of the MLP on a 2 x 2 mesh (ZeRO variants included). */
static void
test_mlp_all_plans_2x2(void **state)
{
	sl_graph *g = mlp(8);
	sl_space *s = space_on(g, 2, (int[]){ 2, 2 });
	int k0 = s->ops[0].n_strat, k1 = s->ops[1].n_strat, k2 = s->ops[2].n_strat;
	int n = 0, with_comm = 0, with_buffers = 0;

	for (int a = 0; a < k0; a++)
		for (int b = 0; b < k1; b++)
			for (int c = 0; c < k2; c++) {
				int choice[3] = { a, b, c };
				sl_launch l;

				check_launch(s, choice, &l);
				n++;
				with_comm += l.dev[0].comm_ns > 0;
				with_buffers += l.dev[0].predicted.buffers > 0;
				sl_launch_free(&l);
			}
	assert_int_equal(n, k0 * k1 * k2);
	/* the enumeration covered resharding and collectives, not only no-ops */
	assert_true(with_comm > 0);
	assert_true(with_buffers > 0);
	sl_space_free(s);
	sl_graph_free(g);
}

/* The JSON the runner reads carries the same allocations and predictions. */
static void
test_json_roundtrip(void **state)
{
	sl_graph *g = mlp(8);
	sl_space *s = space_on(g, 2, (int[]){ 2, 2 });
	int choice[3] = { 0, 0, 0 };
	char path[] = "/tmp/test_launch_XXXXXX";
	json_error_t je;
	json_t *root, *devs;
	sl_launch l;
	sl_error err;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	/* the plan with the most buffers: resharding on every edge */
	int64_t best = -1;
	for (int a = 0; a < s->ops[0].n_strat; a++)
		for (int c = 0; c < s->ops[2].n_strat; c++) {
			int ch[3] = { a, 0, c };
			sl_eval ev;
			assert_int_equal(sl_evaluate(s, ch, 0, &ev, &err), SL_OK);
			if (ev.dev[0].buffers > best) {
				best = ev.dev[0].buffers;
				memcpy(choice, ch, sizeof(ch));
			}
			sl_eval_free(&ev);
		}
	check_launch(s, choice, &l);
	sl_error_clear(&err);
	assert_int_equal(sl_launch_write_json(&l, path, &err), SL_OK);
	root = json_load_file(path, 0, &je);
	assert_non_null(root);
	assert_string_equal(json_string_value(json_object_get(root, "format")),
	    "shardlab-launch");
	devs = json_object_get(root, "devices");
	assert_int_equal(json_array_size(devs), 4);
	for (int d = 0; d < 4; d++) {
		json_t *jd = json_array_get(devs, d), *al = json_object_get(jd, "allocations");
		json_t *pm = json_object_get(json_object_get(jd, "predicted"), "memory_bytes");
		int64_t sum[SL_CAT_COUNT] = { 0 };

		assert_int_equal(json_array_size(al), l.dev[d].n_alloc);
		for (size_t i = 0; i < json_array_size(al); i++) {
			json_t *x = json_array_get(al, i);
			int c = sl_mem_cat_from_name(json_string_value(
			    json_object_get(x, "category")));
			assert_true(c >= 0);
			sum[c] += json_integer_value(json_object_get(x, "bytes"));
		}
		for (int c = 0; c < SL_CAT_COUNT; c++) {
			assert_int_equal(sum[c], sl_mem_get(&l.dev[d].predicted, c));
			assert_int_equal(json_integer_value(json_object_get(pm,
			    sl_mem_cat_name(c))), sl_mem_get(&l.dev[d].predicted, c));
		}
		assert_int_equal(json_array_size(json_object_get(jd, "launch")),
		    l.dev[d].n_items);
	}
	assert_true(l.dev[0].predicted.buffers > 0);
	json_decref(root);
	unlink(path);
	sl_launch_free(&l);
	sl_space_free(s);
	sl_graph_free(g);
}

static sl_graph *
open_model(const char *name, int devices)
{
	sl_model_opts o = { 1, devices };
	sl_error err;
	sl_graph *g;

	sl_error_clear(&err);
	g = sl_model_open(name, &o, &err);
	if (!g)
		fail_msg("cannot open %s: %s", name, err.msg);
	return g;
}

/* The bundled MLP, solved on 2 x 2 at alpha 0 and at a large alpha. */
static void
test_bundled_mlp_solved(void **state)
{
	sl_graph *g = open_model("mlp-2layer", 4);
	sl_space *s = space_on(g, 2, (int[]){ 2, 2 });
	const double alphas[] = { 0.0, 1e9 };

	for (size_t i = 0; i < 2; i++) {
		sl_error err;
		sl_problem *p;
		sl_solution sol;
		sl_launch l;

		sl_error_clear(&err);
		sl_constraints cs = { 0 };
		sl_solve_opts so = { 0 };
		p = sl_space_problem(s, alphas[i], &cs, &err);
		assert_non_null(p);
		sl_solution_init(&sol, p->n);
		assert_int_equal(sl_solve(p, SL_SOLVER_AUTO, &so, &sol, &err), SL_OK);
		check_launch(s, sol.choice, &l);
		sl_launch_free(&l);
		sl_solution_free(&sol);
		sl_problem_free(p);
	}
	sl_space_free(s);
	sl_graph_free(g);
}

/* gpt-1.7b on 2 x 4: the memory-optimal plan and Megatron-style pins. */
static void
test_gpt_1_7b(void **state)
{
	sl_graph *g = open_model("gpt-1.7b", 8);
	sl_space *s = space_on(g, 2, (int[]){ 2, 4 });
	sl_error err;
	sl_problem *p;
	sl_solution sol;
	sl_launch l;
	int64_t gemms = 0;

	sl_constraints cs = { 0 };
	sl_solve_opts so = { 0 };

	sl_error_clear(&err);
	p = sl_space_problem(s, 0.0, &cs, &err);
	assert_non_null(p);
	sl_solution_init(&sol, p->n);
	assert_int_equal(sl_solve(p, SL_SOLVER_AUTO, &so, &sol, &err), SL_OK);
	check_launch(s, sol.choice, &l);
	for (int i = 0; i < l.dev[0].n_items; i++)
		gemms += l.dev[0].item[i].kind == SL_ITEM_GEMM;
	/* at least forward, dgrad and wgrad of the 4 matmuls of 24 layers */
	assert_true(gemms >= 24 * 4 * 3);
	sl_launch_free(&l);

	/*
	 * Megatron on 2 x 4: data parallel over axis 0, tensor parallel over
	 * axis 1.  With batch 8, sequence 2048, hidden 2304, 24 heads:
	 *   qkv  [4*2048, 2304] x [2304, 6912/4]  -> m 8192, n 1728, k 2304
	 *   proj [4*2048, 2304/4] x [576, 2304]   -> m 8192, n 2304, k 576
	 *   attention: 4 x 24/4 = 24 (batch, head) pairs of 2048 x 2048 x 96
	 */
	int *choice = calloc(g->n_ops, sizeof(int));
	for (int op = 0; op < g->n_ops; op++) {
		const char *want[3] = { "dp0", "dp0", "dp0" };
		const char *name = g->ops[op].name;
		const char *dot = strrchr(name, '.');
		const char *base = dot ? dot + 1 : name;

		if (!strcmp(base, "qkv") || !strcmp(base, "fc1") || !strcmp(base, "gelu") ||
		    !strcmp(base, "lm_head"))
			want[0] = "dp0.col1";
		else if (!strcmp(base, "proj") || !strcmp(base, "fc2"))
			want[0] = "dp0.row1";
		else if (g->ops[op].kind == SL_OP_ATTENTION)
			want[0] = "dp0.head1";
		else if (g->ops[op].kind == SL_OP_EMBEDDING ||
		    g->ops[op].kind == SL_OP_CROSS_ENTROPY)
			want[0] = "dp0.vocab1";
		choice[op] = -1;
		for (int i = 0; i < 3 && choice[op] < 0; i++)
			choice[op] = sl_space_find_strategy(s, op, want[i]);
		assert_true(choice[op] >= 0);
	}
	check_launch(s, choice, &l);
	for (int d = 0; d < 8; d++) {
		const sl_launch_dev *dv = &l.dev[d];
		const sl_launch_item *qk = find_item(dv, "layer5.attn.qk");
		int n_ar1 = 0;

		assert_gemm(dv, "layer0.qkv.fwd", 8192, 1728, 2304);
		assert_gemm(dv, "layer0.qkv.wgrad", 2304, 1728, 8192);
		assert_gemm(dv, "layer23.proj.fwd", 8192, 2304, 576);
		assert_gemm(dv, "layer23.proj.dgrad", 8192, 576, 2304);
		assert_int_equal(qk->batch, 24);
		assert_int_equal(qk->m, 2048);
		assert_int_equal(qk->n, 2048);
		assert_int_equal(qk->k, 96);
		/* local qkv weight: 2304 x 1728 bf16 */
		assert_int_equal(alloc_bytes(dv, "layer0.qkv.w"), 2304LL * 1728 * 2);
		/* the row-parallel proj output is all-reduced over the tensor axis
		 * in forward: [4, 2048, 2304] bf16 */
		for (int i = 0; i < dv->n_items; i++) {
			const sl_launch_item *it = &dv->item[i];
			if (it->kind == SL_ITEM_COLL && it->phase == SL_PHASE_FWD &&
			    it->coll == SL_COLL_ALL_REDUCE && it->axis == 1 &&
			    it->bytes == 4LL * 2048 * 2304 * 2)
				n_ar1++;
		}
		assert_true(n_ar1 >= 2 * 24);
	}
	sl_launch_free(&l);
	free(choice);
	sl_solution_free(&sol);
	sl_problem_free(p);
	sl_space_free(s);
	sl_graph_free(g);
}

/*
 * Recomputation re-runs the forward kernels in backward: under full
 * recomputation every operator of a layer, and only those, is launched a
 * second time (".recompute", same shapes and bytes) after the forward pass
 * and before the layer's first backward item; under selective with naive
 * attention only the attention core; without recomputation nothing.  The
 * re-run matmul FLOPs are the forward ones of the operators whose forward
 * time the cost model counts twice (sl_node_compute's recompute_ns).
 */
static int
count_recompute(const sl_space *s, sl_recompute r, sl_attention att)
{
	sl_gen_config gc;
	sl_space_opts so;
	sl_graph *g;
	sl_space *sp;
	sl_hw hw;
	sl_mesh m;
	sl_error err;
	sl_launch l;
	int *choice, n = 0, shape[1] = { 1 };
	int64_t want = 0, got = 0;

	(void)s;
	sl_error_clear(&err);
	sl_gen_defaults(SL_FAM_GPT, &gc);
	gc.layers = 2;
	gc.batch = 1;
	g = sl_gen(&gc, &err);
	assert_non_null(g);
	assert_int_equal(sl_hw_load("h100-nvlink", &hw, &err), SL_OK);
	assert_int_equal(sl_mesh_make(&hw, 1, shape, &m, &err), SL_OK);
	sl_space_opts_default(&so);
	so.recipe.recompute = r;
	so.recipe.attention = att;
	sp = sl_space_build(g, &m, &so, &err);
	assert_non_null(sp);
	choice = calloc(g->n_ops, sizeof *choice);
	for (int v = 0; v < g->n_ops; v++)
		choice[v] = sl_space_find_strategy(sp, v, "rep");
	check_launch(sp, choice, &l);
	/* the forward matmuls of the operators whose forward time counts again
	 * (sl_node_compute) */
	for (int i = 0; i < l.dev[0].n_items; i++) {
		const sl_launch_item *it = &l.dev[0].item[i];
		sl_compute cp;

		sl_node_compute(sp, it->op, choice[it->op], NULL, &cp);
		if (it->kind == SL_ITEM_GEMM && it->phase == SL_PHASE_FWD &&
		    strstr(it->name, ".recompute") == NULL && cp.recompute_ns > 0)
			want += it->flops;
	}
	for (int i = 0; i < l.dev[0].n_items; i++) {
		const sl_launch_item *it = &l.dev[0].item[i];
		const char *suffix = strstr(it->name, ".recompute");
		char fwd[sizeof it->name];
		const sl_launch_item *orig;
		int lay = g->ops[it->op].layer;

		if (suffix == NULL)
			continue;
		n++;
		got += it->kind == SL_ITEM_GEMM ? it->flops : 0;
		assert_true(sl_op_recomputed(sp, it->op));
		assert_int_equal(it->phase, SL_PHASE_FWD);
		snprintf(fwd, sizeof fwd, "%.*s", (int)(suffix - it->name), it->name);
		orig = find_item(&l.dev[0], fwd);
		assert_non_null(orig);
		assert_true(orig < it);
		assert_int_equal(orig->flops, it->flops);
		assert_int_equal(orig->bytes, it->bytes);
		/* before every backward item of its layer, after every forward one */
		for (int j = 0; j < l.dev[0].n_items; j++) {
			const sl_launch_item *o = &l.dev[0].item[j];
			if (g->ops[o->op].layer != lay)
				continue;
			if (o->phase == SL_PHASE_BWD)
				assert_true(j > i);
			else if (strstr(o->name, ".recompute") == NULL)
				assert_true(j < i);
		}
	}
	assert_int_equal(got, want);
	sl_launch_free(&l);
	free(choice);
	sl_space_free(sp);
	sl_graph_free(g);
	return n;
}

static void
test_recompute_launches(void **state)
{
	int full, sel;

	(void)state;
	assert_int_equal(count_recompute(NULL, SL_RECOMP_NONE, SL_ATTN_FLASH), 0);
	assert_int_equal(count_recompute(NULL, SL_RECOMP_SELECTIVE, SL_ATTN_FLASH), 0);
	sel = count_recompute(NULL, SL_RECOMP_SELECTIVE, SL_ATTN_NAIVE);
	full = count_recompute(NULL, SL_RECOMP_FULL, SL_ATTN_FLASH);
	assert_true(sel > 0);
	assert_true(full > sel);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mlp_megatron),
		cmocka_unit_test(test_recompute_launches),
		cmocka_unit_test(test_mlp_dp_uneven),
		cmocka_unit_test(test_mlp_all_plans_2x2),
		cmocka_unit_test(test_json_roundtrip),
		cmocka_unit_test(test_bundled_mlp_solved),
		cmocka_unit_test(test_gpt_1_7b),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
