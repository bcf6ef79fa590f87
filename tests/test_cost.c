/*
 * test_cost.c: the cost model against hand calculations on the two-layer MLP
 * x[8,512] -> fc1 w1[512,2048] -> gelu -> fc2 w2[2048,512] -> y[8,512] (bf16).
 *
 * Parameters P = 2 * 512 * 2048 = 2,097,152 elements; training state is
 * 16 bytes per element: 2 weight, 2 gradient, 12 optimizer.
 */
#include "testutil.h"
#include "mlp.h"

#define P_ELEMS 2097152LL

typedef struct {
	sl_graph *g;
	sl_mesh m;
	sl_space *s;
	sl_eval ev;
	int choice[3];
} fixture;

static void
setup(fixture *f, int n_axes, int a, int b, const char *s0, const char *s1,
    const char *s2)
{
	sl_error err;
	const char *names[3] = { s0, s1, s2 };

	sl_error_clear(&err);
	memset(f, 0, sizeof *f);
	f->g = tu_mlp();
	assert_non_null(f->g);
	assert_int_equal(tu_mesh("h100-nvlink", n_axes, a, b, &f->m), 0);
	f->s = sl_space_build(f->g, &f->m, NULL, &err);
	assert_non_null(f->s);
	tu_choose(f->s, names, f->choice);
	for (int v = 0; v < 3; v++)
		assert_true(f->choice[v] >= 0);
	assert_int_equal(sl_evaluate(f->s, f->choice, 0, &f->ev, &err), SL_OK);
}

static void
teardown(fixture *f)
{
	sl_eval_free(&f->ev);
	sl_space_free(f->s);
	sl_graph_free(f->g);
}

static int64_t
ar(const sl_mesh *m, int axis, int64_t bytes)
{
	return sl_coll_time(SL_COLL_ALL_REDUCE, m->axes[axis].size, bytes,
	    &m->axes[axis].link);
}

/* Pure data parallel on 2 devices. */
static void
test_mlp_dp2(void **state)
{
	fixture f;

	setup(&f, 1, 2, 1, "dp", "dp", "dp");
	for (int d = 0; d < 2; d++) {
		const sl_mem *m = &f.ev.dev[d];
		/* every device holds all of w1 and w2 */
		assert_int_equal(m->params, 2 * P_ELEMS);	/* 4,194,304 */
		assert_int_equal(m->grads, 2 * P_ELEMS);
		assert_int_equal(m->optim, 12 * P_ELEMS);	/* 25,165,824 */
		/* fc1 keeps x [4,512], gelu keeps h1 [4,2048], fc2 keeps g [4,2048]; 2 bytes each */
		assert_int_equal(m->acts, 4 * 512 * 2 + 4 * 2048 * 2 + 4 * 2048 * 2); /* 36,864 */
		assert_int_equal(m->buffers, 0);
		assert_int_equal(sl_mem_total(m), 16 * P_ELEMS + 36864);
	}
	/* redundant: 15/16 ... each of 2 devices holds twice its share of the states */
	assert_int_equal(f.ev.redundant, 16 * P_ELEMS - 16 * P_ELEMS / 2);
	/* gradient all-reduce of w1 and w2 (2,097,152 bytes each) over 2 devices */
	assert_int_equal(f.ev.comm_ns, 2 * ar(&f.m, 0, 2 * 512 * 2048));
	assert_int_equal(f.ev.objective, sl_mem_total(&f.ev.dev[0]));
	teardown(&f);
}

/* Megatron MLP: fc1 column-parallel, gelu split like it, fc2 row-parallel. */
static void
test_mlp_tp2(void **state)
{
	fixture f;

	setup(&f, 1, 2, 1, "col", "col", "row");
	for (int d = 0; d < 2; d++) {
		const sl_mem *m = &f.ev.dev[d];
		/* w1 [512,1024] + w2 [1024,512] = 1,048,576 elements per device */
		assert_int_equal(m->params, 2 * 1048576);
		assert_int_equal(m->grads, 2 * 1048576);
		assert_int_equal(m->optim, 12 * 1048576);
		/* x [8,512] replicated, h1 [8,1024], g [8,1024] */
		assert_int_equal(m->acts, 8 * 512 * 2 + 8 * 1024 * 2 + 8 * 1024 * 2);
		assert_int_equal(m->buffers, 0);
	}
	/* only the replicated copy of x is redundant: 8192 - 8192/2 */
	assert_int_equal(f.ev.redundant, 4096);
	/* y leaves fc2 as a partial sum: one all-reduce of [8,512] bf16 */
	assert_int_equal(f.ev.comm_ns, ar(&f.m, 0, 8 * 512 * 2));
	teardown(&f);
}

static void
test_mlp_dp4_tp4(void **state)
{
	fixture f;

	setup(&f, 1, 4, 1, "dp", "dp", "dp");
	assert_int_equal(sl_mem_total(&f.ev.dev[3]),
	    16 * P_ELEMS + 2 * 512 * 2 + 2 * 2048 * 2 + 2 * 2048 * 2);	/* 33,572,864 */
	assert_int_equal(f.ev.redundant, 16 * P_ELEMS - 16 * P_ELEMS / 4);
	teardown(&f);

	setup(&f, 1, 4, 1, "col", "col", "row");
	/* w1 [512,512] + w2 [512,512] = 524,288 elements x 16 bytes = 8,388,608 */
	assert_int_equal(f.ev.dev[2].params + f.ev.dev[2].grads + f.ev.dev[2].optim,
	    16 * 524288);
	/* x [8,512] + h1 [8,512] + g [8,512], 2 bytes each = 24,576 */
	assert_int_equal(f.ev.dev[2].acts, 3 * 8 * 512 * 2);
	assert_int_equal(sl_mem_total(&f.ev.dev[0]), 8388608 + 24576);
	teardown(&f);
}

/* Uneven splits: 2048 columns over 3 devices are 683, 683, 682. */
static void
test_mlp_uneven3(void **state)
{
	fixture f;

	setup(&f, 1, 3, 1, "col", "col", "row");
	assert_int_equal(f.ev.dev[0].params, 2 * (512 * 683 + 683 * 512));
	assert_int_equal(f.ev.dev[1].params, 2 * (512 * 683 + 683 * 512));
	assert_int_equal(f.ev.dev[2].params, 2 * (512 * 682 + 682 * 512));
	assert_int_equal(f.ev.dev[2].acts, 8 * 512 * 2 + 2 * (8 * 682 * 2));
	assert_true(sl_mem_total(&f.ev.dev[2]) < sl_mem_total(&f.ev.dev[0]));
	assert_int_equal(f.ev.max_total, sl_mem_total(&f.ev.dev[0]));
	teardown(&f);
}

/* 2x2 mesh: data parallel over axis 0, Megatron over axis 1. */
static void
test_mlp_2x2(void **state)
{
	fixture f;

	setup(&f, 2, 2, 2, "dp0.col1", "dp0.col1", "dp0.row1");
	for (int d = 0; d < 4; d++) {
		/* half of w1 and w2 per device: 1,048,576 elements x 16 bytes */
		assert_int_equal(f.ev.dev[d].params + f.ev.dev[d].grads + f.ev.dev[d].optim,
		    16 * 1048576);
		/* x [4,512], h1 [4,1024], g [4,1024] */
		assert_int_equal(f.ev.dev[d].acts, 4 * 512 * 2 + 2 * 4 * 1024 * 2);
	}
	/* gradients all-reduced over axis 0 (2 MiB... half of each weight: 1,048,576
	 * bytes each) and y [4,512] all-reduced over axis 1 */
	assert_int_equal(f.ev.comm_ns, 2 * ar(&f.m, 0, 1048576) + ar(&f.m, 1, 4 * 512 * 2));
	teardown(&f);
}

/* ZeRO-3: states divided over the data-parallel axis, gathers added. */
static void
test_mlp_zero(void **state)
{
	fixture f;
	int64_t wb = 512 * 2048 * 2;	/* bytes of one weight */
	const sl_link *l;

	setup(&f, 1, 4, 1, "dp+z", "dp", "dp+z");
	assert_int_equal(f.ev.dev[1].params + f.ev.dev[1].grads + f.ev.dev[1].optim,
	    16 * P_ELEMS / 4);
	l = &f.m.axes[0].link;
	assert_int_equal(f.ev.comm_ns, 2 * (2 * sl_coll_time(SL_COLL_ALL_GATHER, 4, wb, l) +
	    sl_coll_time(SL_COLL_REDUCE_SCATTER, 4, wb, l)));
	teardown(&f);
}

/*
 * HSDP on a 2x4 mesh (torchtitan's data_parallel_replicate_degree 2 x
 * data_parallel_shard_degree 4): with axis 0 left replicated, +z shards
 * the states over axis 1 only; each weight is gathered within the shard
 * group (forward and backward), its gradient reduce-scattered there and
 * the quarter left all-reduced across axis 0.  Full FSDP on the same mesh
 * shards over all 8 and has no all-reduce.
 */
static void
test_mlp_hsdp(void **state)
{
	sl_error err;
	sl_graph *g;
	sl_mesh m;
	sl_space_opts o;
	sl_space *s;
	sl_eval ev;
	int choice[3];
	const char *names[3] = { "dp01+z", "dp01", "dp01+z" };
	int64_t wb = 512 * 2048 * 2;	/* bytes of one weight */
	const sl_link *l0, *l1;

	(void)state;
	sl_error_clear(&err);
	g = tu_mlp();
	assert_non_null(g);
	assert_int_equal(tu_mesh("h100-nvlink", 2, 2, 4, &m), 0);
	l0 = &m.axes[0].link;
	l1 = &m.axes[1].link;
	for (int hsdp = 0; hsdp < 2; hsdp++) {
		int64_t comm;

		sl_space_opts_default(&o);
		o.zero_replicate = hsdp ? 1u : 0u;
		s = sl_space_build(g, &m, &o, &err);
		assert_non_null(s);
		tu_choose(s, names, choice);
		for (int v = 0; v < 3; v++)
			assert_true(choice[v] >= 0);
		/* a strategy on the replicate axis alone has nothing to shard */
		assert_int_equal(sl_space_find_strategy(s, 0, "dp0+z") >= 0, !hsdp);
		assert_int_equal(sl_evaluate(s, choice, 0, &ev, &err), SL_OK);
		assert_int_equal(ev.dev[5].params + ev.dev[5].grads + ev.dev[5].optim,
		    16 * P_ELEMS / (hsdp ? 4 : 8));
		if (hsdp)
			comm = 2 * sl_coll_time(SL_COLL_ALL_GATHER, 4, wb, l1) +
			    sl_coll_time(SL_COLL_REDUCE_SCATTER, 4, wb, l1) +
			    sl_coll_time(SL_COLL_ALL_REDUCE, 2, wb / 4, l0);
		else
			comm = 2 * sl_coll_time(SL_COLL_ALL_GATHER, 2, wb, l0) +
			    sl_coll_time(SL_COLL_REDUCE_SCATTER, 2, wb, l0) +
			    2 * sl_coll_time(SL_COLL_ALL_GATHER, 4, wb / 2, l1) +
			    sl_coll_time(SL_COLL_REDUCE_SCATTER, 4, wb / 2, l1);
		assert_int_equal(ev.comm_ns, 2 * comm);
		sl_eval_free(&ev);
		sl_space_free(s);
	}
	sl_graph_free(g);
}

/* A resharding edge: fc1 col feeding gelu dp needs an all-to-all and a buffer. */
static void
test_mlp_reshard(void **state)
{
	fixture f;
	const sl_link *l;

	setup(&f, 1, 2, 1, "col", "dp", "dp");
	l = &f.m.axes[0].link;
	/* h1 [8,2048] goes from column split to batch split: all-to-all forward
	 * and backward of the 32,768-byte tensor; gelu's copy [4,2048] is a buffer */
	assert_int_equal(f.ev.dev[0].buffers, 4 * 2048 * 2);
	assert_int_equal(f.ev.comm_ns,
	    2 * sl_coll_time(SL_COLL_ALL_TO_ALL, 2, 8 * 2048 * 2, l) +
	    ar(&f.m, 0, 2 * 512 * 2048));	/* w2's gradient; w1 is split */
	teardown(&f);
}

/* x[8,512] w[512,256] b[256] -> y[8,256]: the bias of a row-parallel matmul
 * gets its gradient from the complete dY, so only y's all-reduce is paid. */
static void
test_bias_gradient(void **state)
{
	sl_graph *g = sl_graph_new("bias");
	sl_error err;
	int64_t dx[2] = { 8, 512 }, dw[2] = { 512, 256 }, db[1] = { 256 }, dy[2] = { 8, 256 };
	int in[3], y;
	sl_mesh m;
	sl_space *s;
	sl_eval ev;
	int choice[1];

	sl_error_clear(&err);
	in[0] = sl_graph_add_tensor(g, "x", 2, dx, SL_DT_BF16, SL_ROLE_INPUT, &err);
	in[1] = sl_graph_add_tensor(g, "w", 2, dw, SL_DT_BF16, SL_ROLE_PARAMETER, &err);
	in[2] = sl_graph_add_tensor(g, "b", 1, db, SL_DT_BF16, SL_ROLE_PARAMETER, &err);
	y = sl_graph_add_tensor(g, "y", 2, dy, SL_DT_BF16, SL_ROLE_ACTIVATION, &err);
	sl_graph_add_op(g, "fc", SL_OP_MATMUL, 3, in, 1, &y, NULL, &err);
	assert_int_equal(sl_graph_validate(g, "t", &err), SL_OK);
	assert_int_equal(tu_mesh("h100-nvlink", 1, 2, 1, &m), 0);
	s = sl_space_build(g, &m, NULL, &err);

	choice[0] = sl_space_find_strategy(s, 0, "row");
	assert_int_equal(sl_evaluate(s, choice, 0, &ev, &err), SL_OK);
	/* y [8,256] bf16 = 4096 bytes, all-reduced once; nothing for b */
	assert_int_equal(ev.comm_ns, ar(&m, 0, 4096));
	sl_eval_free(&ev);

	choice[0] = sl_space_find_strategy(s, 0, "dp");
	assert_int_equal(sl_evaluate(s, choice, 0, &ev, &err), SL_OK);
	/* data parallel: gradients of w (262,144 bytes) and b (512 bytes) */
	assert_int_equal(ev.comm_ns, ar(&m, 0, 512 * 256 * 2) + ar(&m, 0, 256 * 2));
	sl_eval_free(&ev);
	sl_space_free(s);
	sl_graph_free(g);
}

static void
test_collective_formulas(void **state)
{
	sl_link l = { .bandwidth = 100e9, .latency = 1e-6 };

	/* all-reduce of 1 GB on 4: 2*3/4 * 1e9/1e11 s = 15 ms, + 6 us */
	assert_int_equal(sl_coll_time(SL_COLL_ALL_REDUCE, 4, 1000000000, &l), 15006000);
	/* all-gather: 3/4 * 10 ms + 3 us */
	assert_int_equal(sl_coll_time(SL_COLL_ALL_GATHER, 4, 1000000000, &l), 7503000);
	/* all-to-all: 3/16 * 10 ms + 3 us */
	assert_int_equal(sl_coll_time(SL_COLL_ALL_TO_ALL, 4, 1000000000, &l), 1878000);
	assert_int_equal(sl_coll_time(SL_COLL_ALL_REDUCE, 1, 1000000000, &l), 0);
}

static void
test_weigh(void **state)
{
	assert_int_equal(sl_weigh(1000, 5000, 0), 1000);
	/* 2 bytes per microsecond x 5 us = 10 bytes */
	assert_int_equal(sl_weigh(1000, 5000, 2.0), 1010);
	/* saturates at 2^53 instead of wrapping */
	assert_int_equal(sl_weigh(1, INT64_MAX / 2, 1e12), (int64_t)1 << 53);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mlp_dp2),
		cmocka_unit_test(test_mlp_tp2),
		cmocka_unit_test(test_mlp_dp4_tp4),
		cmocka_unit_test(test_mlp_uneven3),
		cmocka_unit_test(test_mlp_2x2),
		cmocka_unit_test(test_mlp_zero),
		cmocka_unit_test(test_mlp_hsdp),
		cmocka_unit_test(test_mlp_reshard),
		cmocka_unit_test(test_bias_gradient),
		cmocka_unit_test(test_collective_formulas),
		cmocka_unit_test(test_weigh),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
