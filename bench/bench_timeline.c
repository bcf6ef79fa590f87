/*
 * bench_timeline.c: speed of memory over time (`make bench`).  Builds the
 * timeline of the 96-layer GPT-3 175B (tests/gpt3.h) on meshes of 8 and 64
 * devices with the optimised order (median of several runs) and prints its
 * time against the 50 ms budget as a ratio, beside the time of the default
 * order alone and the peak in both orders.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#define _POSIX_C_SOURCE 200809L
#include "shardlab.h"
#include "../tests/gpt3.h"

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
	return 0;
}
