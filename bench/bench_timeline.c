/*
 * bench_timeline.c: speed of memory over time (`make bench`).  Builds the
 * timeline of the 96-layer GPT-3 175B (tests/gpt3.h) on meshes of 8 and 64
 * devices with the optimised order (median of several runs) and prints its
 * time against the 50 ms budget as a ratio, beside the time of the default
 * order alone and the peak in both orders.  Then chains of 15,000, 30,000
 * and 60,000 operators (matmul and gelu in turn, every matmul with its
 * weight): the optimised order's time over n log n, as a ratio to the
 * shortest chain's in the same run, stays near 1 when the order search is
 * O(n log n) (a quadratic one doubles it with each doubling of n).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#define _POSIX_C_SOURCE 200809L
#include "shardlab.h"
#include "../tests/gpt3.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUDGET_MS 50.0
#define RUNS 7

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
timed(const sl_space *s, const int *choice, bool optimise, sl_timeline *keep)
{
	double t[RUNS];

	for (int r = 0; r < RUNS; r++) {
		sl_timeline tl;
		sl_error err;
		double t0 = now_ms();
		sl_error_clear(&err);
		if (sl_timeline_build(s, choice, 0, optimise, &tl, &err) != SL_OK) {
			fprintf(stderr, "bench_timeline: %s\n", err.msg);
			exit(3);
		}
		t[r] = now_ms() - t0;
		if (r == 0 && keep != NULL)
			*keep = tl;
		else
			sl_timeline_free(&tl);
	}
	qsort(t, RUNS, sizeof *t, cmp_double);
	return t[RUNS / 2];
}

/* A chain of n operators: t0 -> matmul(w1) -> gelu -> matmul(w3) -> ... */
static sl_graph *
chain_graph(int n)
{
	sl_graph *g = sl_graph_new("chain");
	int64_t act[2] = { 8, 64 }, w[2] = { 64, 64 };
	sl_error err;
	char name[32];
	int prev, t, in[2];

	sl_error_clear(&err);
	prev = sl_graph_add_tensor(g, "t0", 2, act, SL_DT_BF16, SL_ROLE_INPUT, &err);
	for (int i = 1; i <= n; i++) {
		snprintf(name, sizeof name, "t%d", i);
		t = sl_graph_add_tensor(g, name, 2, act, SL_DT_BF16, SL_ROLE_ACTIVATION, &err);
		in[0] = prev;
		snprintf(name, sizeof name, "op%d", i);
		if (i % 2 == 1) {
			char wn[32];
			snprintf(wn, sizeof wn, "w%d", i);
			in[1] = sl_graph_add_tensor(g, wn, 2, w, SL_DT_BF16,
			    SL_ROLE_PARAMETER, &err);
			sl_graph_add_op(g, name, SL_OP_MATMUL, 2, in, 1, &t, NULL, &err);
		} else
			sl_graph_add_op(g, name, SL_OP_GELU, 1, in, 1, &t, NULL, &err);
		prev = t;
	}
	if (err.code != SL_OK || sl_graph_validate(g, NULL, &err) != SL_OK) {
		fprintf(stderr, "bench_timeline: %s\n", err.msg);
		exit(3);
	}
	return g;
}

/* The chains' rows: time of the optimised order over n log n, against the
 * first chain's. */
static void
chains(const sl_hw *hw)
{
	static const int len[] = { 15000, 30000, 60000 };
	double ref = 0;
	sl_error err;
	sl_mesh m;
	int one = 1;

	sl_error_clear(&err);
	if (sl_mesh_make(hw, 1, &one, &m, &err) != SL_OK) {
		fprintf(stderr, "bench_timeline: %s\n", err.msg);
		exit(3);
	}
	printf("\nchains (optimised order; ratio: time / (n log n) against the %d-operator chain's)\n",
	    len[0]);
	printf("%10s %8s %8s | %10s %10s %8s\n", "operators", "tasks", "bufs",
	    "default", "optimised", "ratio");
	for (size_t i = 0; i < sizeof len / sizeof len[0]; i++) {
		sl_graph *g = chain_graph(len[i]);
		sl_space *s = sl_space_build(g, &m, NULL, &err);
		int *choice = calloc(g->n_ops, sizeof *choice);
		sl_timeline tl;
		double td, to, per;

		if (s == NULL || choice == NULL) {
			fprintf(stderr, "bench_timeline: %s\n", err.msg);
			exit(3);
		}
		td = timed(s, choice, false, NULL);
		to = timed(s, choice, true, &tl);
		per = to / (len[i] * log((double)len[i]));
		if (i == 0)
			ref = per;
		printf("%10d %8d %8d | %7.1f ms %7.1f ms %8.2f\n", len[i], tl.n_tasks,
		    tl.n_bufs, td, to, per / ref);
		sl_timeline_free(&tl);
		free(choice);
		sl_space_free(s);
		sl_graph_free(g);
	}
}

int
main(void)
{
	static const int meshes[][2] = { { 8, 1 }, { 8, 8 } };
	sl_gen_config gc;
	sl_error err;
	sl_graph *g;
	sl_hw hw;

	sl_error_clear(&err);
	gpt3_175b_config(&gc);
	gc.batch = 8;
	if ((g = sl_gen(&gc, &err)) == NULL || sl_hw_load("h100-nvlink", &hw, &err) != SL_OK) {
		fprintf(stderr, "bench_timeline: %s\n", err.msg);
		return 3;
	}
	printf("shardlab timeline benchmark: %s, %d operators, budget %.0f ms, median of %d\n\n",
	    g->name, g->n_ops, BUDGET_MS, RUNS);
	printf("%-8s %6s %6s | %10s %10s %8s | %12s %12s %12s\n", "mesh", "tasks",
	    "bufs", "default", "optimised", "/budget", "sum", "peak dflt", "peak opt");
	for (size_t i = 0; i < sizeof meshes / sizeof meshes[0]; i++) {
		int shape[2] = { meshes[i][0], meshes[i][1] };
		int n_axes = shape[1] > 1 ? 2 : 1;
		sl_mesh m;
		sl_space *s;
		sl_problem *p;
		sl_solution sol;
		sl_timeline tl;
		double td, to;
		char b1[32], b2[32], b3[32], ms[16];

		if (sl_mesh_make(&hw, n_axes, shape, &m, &err) != SL_OK ||
		    (s = sl_space_build(g, &m, NULL, &err)) == NULL ||
		    (p = sl_space_problem(s, 0, NULL, &err)) == NULL) {
			fprintf(stderr, "bench_timeline: %s\n", err.msg);
			return 3;
		}
		sl_solution_init(&sol, p->n);
		if (sl_solve(p, SL_SOLVER_DP, NULL, &sol, &err) != SL_OK) {
			fprintf(stderr, "bench_timeline: %s\n", err.msg);
			return 3;
		}
		td = timed(s, sol.choice, false, NULL);
		to = timed(s, sol.choice, true, &tl);
		snprintf(ms, sizeof ms, n_axes > 1 ? "%dx%d" : "%d", shape[0], shape[1]);
		printf("%-8s %6d %6d | %7.2f ms %7.2f ms %8.2f | %12s %12s %12s\n", ms,
		    tl.n_tasks, tl.n_bufs, td, to, to / BUDGET_MS,
		    sl_format_bytes(tl.sum, b1, sizeof b1),
		    sl_format_bytes(tl.peak_default, b2, sizeof b2),
		    sl_format_bytes(tl.peak_optimised, b3, sizeof b3));
		sl_timeline_free(&tl);
		sl_solution_free(&sol);
		sl_problem_free(p);
		sl_space_free(s);
	}
	sl_graph_free(g);
	chains(&hw);
	return 0;
}
