/*
 * bench_solve.c: speed of the live DP against GLPK, measured in one run
 * (`make bench`).  For each model and mesh: cold DP solve (folded and
 * unfolded), a pin or forbid re-solve (median of many), an alpha change,
 * the full alpha sweep, and GLPK cold and warm where they finish within the
 * time limit; ratios GLPK/DP; peak RSS against the space alone.
 *
 * usage: bench_solve [--time-limit SECONDS] [--no-glpk] [--pins N] [--quick]
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#define _POSIX_C_SOURCE 200809L
#include "shardlab.h"
#include "../tests/gpt3.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double
peak_rss_mib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss / 1024.0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint64_t rng_state = 88172645463325252ULL;

static int
rnd(int n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (int)(rng_state % (uint64_t)n);
}

struct bcase {
	const char *label;
	const char *model;	/* bundled name, or NULL for the generated 175B */
	int n_axes, shape[2];
	bool glpk;		/* try GLPK at all */
};

static const struct bcase cases[] = {
	{ "gpt-1.7b 4", "gpt-1.7b", 1, { 4, 0 }, true },
	{ "gpt-1.7b 8", "gpt-1.7b", 1, { 8, 0 }, true },
	{ "gpt-1.7b 2x4", "gpt-1.7b", 2, { 2, 4 }, true },
	{ "gpt-7.5b 4", "gpt-7.5b", 1, { 4, 0 }, true },
	{ "gpt-7.5b 8", "gpt-7.5b", 1, { 8, 0 }, true },
	{ "gpt-7.5b 2x4", "gpt-7.5b", 2, { 2, 4 }, true },
	{ "gpt3-175b 2x4", NULL, 2, { 2, 4 }, false },
};

static sl_space *
open_case(const struct bcase *c, sl_error *err)
{
	sl_hw hw;
	sl_mesh mesh;
	sl_graph *g;
	sl_model_opts mo = { .micro_batch = 1 };
	int nd = c->shape[0] * (c->n_axes > 1 ? c->shape[1] : 1);
	const char *const *hwn;

	if (sl_hw_load("h100-nvlink", &hw, err) != SL_OK) {
		sl_error_clear(err);
		hwn = sl_bundled_hardware();
		if (hwn == NULL || hwn[0] == NULL ||
		    sl_hw_load(hwn[0], &hw, err) != SL_OK)
			return NULL;
	}
	if (sl_mesh_make(&hw, c->n_axes, c->shape, &mesh, err) != SL_OK)
		return NULL;
	mo.devices = nd;
	if (c->model != NULL)
		g = sl_model_open(c->model, &mo, err);
	else {
		sl_gen_config gc;
		gpt3_175b_config(&gc);
		gc.batch = nd;
		g = sl_gen(&gc, err);
	}
	if (g == NULL)
		return NULL;
	return sl_space_build(g, &mesh, NULL, err);
}

/*
 * Median time of npins pin re-solves: pin a random strategy, re-solve with
 * options o, release it, re-solve (tv: room for 2 * npins times).
 */
static double
pin_resolves(sl_dp *d, sl_problem *p, sl_solution *sol,
    const sl_solve_opts *o, int npins, double *tv)
{
	sl_error err;
	double t;

	sl_error_clear(&err);
	for (int r = 0; r < npins; r++) {
		int v = rnd(p->n), s0 = rnd(p->k[v]);
		uint8_t *save = malloc((size_t)p->k[v]);
		memcpy(save, p->allowed[v], (size_t)p->k[v]);
		for (int j = 0; j < p->k[v]; j++)
			p->allowed[v][j] = j == s0;
		t = now_ms();
		sl_dp_resolve(d, p, o, sol, &err);
		tv[2 * r] = now_ms() - t;
		memcpy(p->allowed[v], save, (size_t)p->k[v]);
		t = now_ms();
		sl_dp_resolve(d, p, o, sol, &err);
		tv[2 * r + 1] = now_ms() - t;
		free(save);
	}
	return median(tv, 2 * npins);
}

static void
fmt_ms(double ms, char *buf, size_t len)
{
	if (ms < 0)
		snprintf(buf, len, "-");
	else if (ms < 1)
		snprintf(buf, len, "%.1f us", ms * 1e3);
	else if (ms < 1e4)
		snprintf(buf, len, "%.2f ms", ms);
	else
		snprintf(buf, len, "%.1f s", ms / 1e3);
}

/* a / b with prec decimals, or "-" when a is unmeasured (< 0). */
static void
fmt_ratio(double a, double b, int prec, char *buf, size_t len)
{
	if (a >= 0)
		snprintf(buf, len, "%.*f", prec, a / b);
	else
		snprintf(buf, len, "-");
}

/*
 * --recompute auto on one case: the whole choice (bisection over live DP
 * re-solves) against one cold DP solve of the same space, and pin re-solves
 * with the chosen recomputation against pin re-solves without.
 */
static void
bench_recompute(const struct bcase *c, int npins)
{
	sl_error err;
	sl_space *s;
	sl_problem *p;
	sl_solution sol;
	sl_dp *d;
	sl_recompute_choice rc;
	double t, tv[5], cold, autot, pin0, pin1, *pv;
	char b[4][32];

	sl_error_clear(&err);
	if ((s = open_case(c, &err)) == NULL) {
		printf("%-14s cannot open: %s\n", c->label, err.msg);
		return;
	}
	pv = malloc((size_t)(npins * 2 + 2) * sizeof *pv);
	p = sl_space_problem(s, 0, NULL, &err);
	sl_solution_init(&sol, p->n);
	for (int r = 0; r < 5; r++) {
		t = now_ms();
		d = sl_dp_new(p, NULL, &err);
		sl_dp_resolve(d, p, NULL, &sol, &err);
		tv[r] = now_ms() - t;
		sl_dp_free(d);
	}
	cold = median(tv, 5);
	d = sl_dp_new(p, NULL, &err);
	sl_dp_resolve(d, p, NULL, &sol, &err);
	pin0 = pin_resolves(d, p, &sol, NULL, npins, pv);
	sl_dp_free(d);
	for (int r = 0; r < 5; r++) {
		for (int l = 0; l < s->g->n_layers; l++)
			sl_space_set_layer_recompute(s, l, SL_RECOMP_NONE);
		t = now_ms();
		if (sl_recompute_auto(s, p, 0, s->mesh.hw.memory_bytes,
		    SL_SOLVER_DP, NULL, &rc, &err) != SL_OK) {
			printf("%-14s recompute auto: %s\n", c->label, err.msg);
			goto out;
		}
		tv[r] = now_ms() - t;
	}
	autot = median(tv, 5);
	d = sl_dp_new(p, NULL, &err);
	sl_dp_resolve(d, p, NULL, &sol, &err);
	pin1 = pin_resolves(d, p, &sol, NULL, npins, pv);
	sl_dp_free(d);
	fmt_ms(cold, b[0], 32);
	fmt_ms(autot, b[1], 32);
	fmt_ms(pin0, b[2], 32);
	fmt_ms(pin1, b[3], 32);
	printf("%-14s %2d/%-3d %-4s | cold %9s  auto %9s  %5.2fx | pin %9s  pin after auto %9s  %5.2fx\n",
	    c->label, rc.n_recomputed, rc.n_layers, rc.fits ? "fits" : "over",
	    b[0], b[1], autot / cold, b[2], b[3], pin1 / pin0);
out:
	free(pv);
	sl_solution_free(&sol);
	sl_problem_free(p);
	{
		sl_graph *g = (sl_graph *)s->g;
		sl_space_free(s);
		sl_graph_free(g);
	}
}

/*
 * Graphs that do not fold: each node joined to three of the six before it,
 * so that the DP eliminates nodes with three or more neighbours (its
 * general step).  Random costs from a fixed seed; the DP's cold solve
 * (median of 3) against GLPK's, and their objectives compared.
 */
static void
bench_wide(double time_limit, bool glpk)
{
	static const int shape[][2] = { { 16, 4 }, { 24, 6 }, { 60, 8 },
	    { 40, 10 }, { 30, 16 } };

	printf("\ngraphs that do not fold (random, each node joined to 3 of "
	    "the 6 before it):\n");
	printf("%-14s %5s %5s %4s | %9s | %9s %9s | %8s\n", "graph", "ops",
	    "edges", "k", "dp cold", "glpk cold", "objective", "cold x");
	for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
		int n = shape[i][0], kk = shape[i][1], m = 0;
		int (*ed)[2] = malloc((size_t)n * 3 * sizeof *ed);
		int *k = malloc((size_t)n * sizeof *k);
		sl_problem *p;
		sl_solution sol;
		sl_error err;
		double tv[3], dp, gc = -1;
		char b[3][32], label[32], gobj[40];

		rng_state = 88172645463325252ULL + i;
		for (int v = 0; v < n; v++) {
			k[v] = kk;
			for (int d = 0; d < 3 && v > 0; d++) {
				int u = v - 1 - rnd(v < 6 ? v : 6);
				bool dup = false;
				for (int e = 0; e < m; e++)
					dup |= ed[e][0] == u && ed[e][1] == v;
				if (!dup) {
					ed[m][0] = u;
					ed[m][1] = v;
					m++;
				}
			}
		}
		p = sl_problem_new(n, k, m, (const int (*)[2])ed);
		for (int v = 0; v < n; v++)
			for (int s = 0; s < kk; s++)
				p->cost[v][s] = rnd(1000);
		for (int e = 0; e < m; e++)
			for (int c = 0; c < kk * kk; c++)
				p->ecost[e][c] = rnd(1000);
		snprintf(label, sizeof label, "random %d", n);
		sl_solution_init(&sol, n);
		for (int r = 0; r < 3; r++) {
			double t = now_ms();
			sl_error_clear(&err);
			if (sl_solve_dp(p, NULL, &sol, &err) != SL_OK) {
				printf("%-14s dp: %s\n", label, err.msg);
				goto next;
			}
			tv[r] = now_ms() - t;
		}
		dp = median(tv, 3);
		gobj[0] = '\0';
		if (glpk) {
			sl_solve_opts o = { .time_limit = time_limit };
			sl_solution gs;
			double t = now_ms();
			sl_solution_init(&gs, n);
			sl_error_clear(&err);
			if (sl_solve_ilp(p, &o, &gs, &err) == SL_OK &&
			    gs.status == SL_SOLVE_OPTIMAL) {
				gc = now_ms() - t;
				if (gs.objective != sol.objective)
					printf("%-14s MISMATCH glpk %lld dp %lld\n",
					    label, (long long)gs.objective,
					    (long long)sol.objective);
			} else if (gs.status == SL_SOLVE_FEASIBLE)
				snprintf(gobj, sizeof gobj, " (its plan %.3fx)",
				    (double)gs.objective / (double)sol.objective);
			sl_solution_free(&gs);
		}
		fmt_ms(dp, b[0], 32);
		fmt_ms(gc, b[1], 32);
		fmt_ratio(gc, dp, 1, b[2], 32);
		printf("%-14s %5d %5d %4d | %9s | %9s %9lld | %8s%s%s\n", label,
		    n, m, kk, b[0], b[1], (long long)sol.objective, b[2],
		    glpk && gc < 0 ? " glpk: limit" : "", gobj);
		fflush(stdout);
next:
		sl_solution_free(&sol);
		sl_problem_free(p);
		free(ed);
		free(k);
	}
}

/*
 * GLPK cold (build + first solve of the kept object), then warm after a
 * pin: *gc and *gw in ms (-1 when not reached); returns the note for the
 * row.  obj is the DP's objective, which GLPK must equal.
 */
static const char *
bench_glpk(const struct bcase *c, sl_problem *p, double time_limit,
    int64_t obj, double *gc, double *gw)
{
	sl_solve_opts o = { .time_limit = time_limit };
	sl_solution gs;
	sl_ilp *w;
	sl_error err;
	const char *gnote = "";
	double t;

	sl_error_clear(&err);
	sl_solution_init(&gs, p->n);
	t = now_ms();
	w = sl_ilp_new(p, NULL, &err);
	if (w != NULL && sl_ilp_resolve(w, p, &o, &gs, &err) == SL_OK &&
	    gs.status == SL_SOLVE_OPTIMAL) {
		*gc = now_ms() - t;
		if (gs.objective != obj)
			printf("%-14s MISMATCH glpk %lld dp %lld\n",
			    c->label, (long long)gs.objective,
			    (long long)obj);
		int v = rnd(p->n), s0 = rnd(p->k[v]);
		uint8_t *save = malloc((size_t)p->k[v]);
		memcpy(save, p->allowed[v], (size_t)p->k[v]);
		for (int j = 0; j < p->k[v]; j++)
			p->allowed[v][j] = j == s0;
		t = now_ms();
		if (sl_ilp_resolve(w, p, &o, &gs, &err) == SL_OK &&
		    gs.status == SL_SOLVE_OPTIMAL)
			*gw = now_ms() - t;
		else
			gnote = "glpk warm: limit";
		memcpy(p->allowed[v], save, (size_t)p->k[v]);
		free(save);
	} else
		gnote = "glpk: limit";
	sl_ilp_free(w);
	sl_solution_free(&gs);
	return gnote;
}

/* One row of the table: the DP's times on case c, then GLPK's. */
static void
bench_case(const struct bcase *c, double alpha, double time_limit, bool glpk,
    int npins)
{
	sl_space *s;
	sl_problem *p;
	sl_solution sol;
	sl_dp *d;
	sl_dp_info info;
	sl_error err;
	double t, cold, unf, pin, pina, alch, sw = -1, gc = -1, gw = -1;
	double rss_space, rss_dp;
	double *tv;
	int kmax = 0, nplans = 0;
	int64_t obj;
	const char *gnote = "";
	char b[12][32];

	sl_error_clear(&err);
	s = open_case(c, &err);
	if (s == NULL) {
		printf("%-14s cannot open: %s\n", c->label, err.msg);
		return;
	}
	p = sl_space_problem(s, alpha, NULL, &err);
	if (p == NULL) {
		printf("%-14s problem: %s\n", c->label, err.msg);
		return;
	}
	rss_space = peak_rss_mib();
	for (int v = 0; v < p->n; v++)
		if (p->k[v] > kmax)
			kmax = p->k[v];
	sl_solution_init(&sol, p->n);

	/* cold: structure, every layer class, trees, outer problem */
	tv = malloc((size_t)(npins * 2 + 16) * sizeof *tv);
	for (int r = 0; r < 5; r++) {
		t = now_ms();
		d = sl_dp_new(p, NULL, &err);
		if (d == NULL || sl_dp_resolve(d, p, NULL, &sol, &err) != SL_OK) {
			printf("%-14s dp: %s\n", c->label, err.msg);
			goto next;
		}
		tv[r] = now_ms() - t;
		sl_dp_free(d);
	}
	cold = median(tv, 5);
	obj = sol.objective;
	for (int r = 0; r < 3; r++) {
		t = now_ms();
		{
			sl_solve_opts plain = { .no_fold = true };
			d = sl_dp_new(p, &plain, &err);
		}
		sl_dp_resolve(d, p, NULL, &sol, &err);
		tv[r] = now_ms() - t;
		if (sol.objective != obj)
			printf("%-14s MISMATCH unfolded %lld folded %lld\n",
			    c->label, (long long)sol.objective,
			    (long long)obj);
		sl_dp_free(d);
	}
	unf = median(tv, 3);

	d = sl_dp_new(p, NULL, &err);
	sl_dp_resolve(d, p, NULL, &sol, &err);
	rss_dp = peak_rss_mib();
	sl_dp_info_get(d, &info);
	/* pin re-solves: pin a random strategy, re-solve, release, re-solve */
	pin = pin_resolves(d, p, &sol, NULL, npins, tv);
	{
		sl_solve_opts ao = { .allowed_only = true };
		pina = pin_resolves(d, p, &sol, &ao, npins, tv);
	}
	/* alpha change: re-weigh and re-solve */
	for (int r = 0; r < 9; r++) {
		double a = r % 2 ? alpha : alpha * 10;
		t = now_ms();
		sl_space_reweigh(s, a, p);
		sl_dp_resolve(d, p, NULL, &sol, &err);
		tv[r] = now_ms() - t;
	}
	alch = median(tv, 9);
	sl_space_reweigh(s, alpha, p);
	sl_dp_resolve(d, p, NULL, &sol, &err);
	sl_dp_free(d);
	{
		sl_frontier f;
		t = now_ms();
		if (sl_sweep(s, NULL, SL_SOLVER_DP, NULL, &f, &err) == SL_OK) {
			sw = now_ms() - t;
			nplans = f.n;
			sl_frontier_free(&f);
		} else
			printf("%-14s sweep: %s\n", c->label, err.msg);
	}

	if (glpk && c->glpk)
		gnote = bench_glpk(c, p, time_limit, obj, &gc, &gw);
	else
		gnote = glpk ? "glpk: skipped (size)" : "glpk: off";

	fmt_ms(cold, b[0], 32);
	fmt_ms(unf, b[1], 32);
	fmt_ms(pin, b[2], 32);
	fmt_ms(pina, b[3], 32);
	fmt_ms(alch, b[4], 32);
	fmt_ms(sw, b[5], 32);
	fmt_ms(gc, b[6], 32);
	fmt_ms(gw, b[7], 32);
	fmt_ratio(gc, cold, 0, b[8], 32);
	fmt_ratio(gw, pin, 0, b[9], 32);
	printf("%-14s %5d %5d %4d | %9s %9s %9s %9s %9s %9s %5d | %9s %9s %9lld | %8s %8s | %6.0fM %6.0fM %s\n",
	    c->label, p->n, p->m, kmax, b[0], b[1], b[2], b[3], b[4], b[5],
	    nplans, b[6], b[7], (long long)obj, b[8], b[9],
	    rss_space, rss_dp, gnote);
	printf("%-14s   folded %d layers in %d chains, %d classes, "
	    "%d outer nodes, width %d\n", "", info.folded_layers,
	    info.runs, info.classes, info.outer_nodes, info.width);
	fflush(stdout);
next:
	free(tv);
	sl_solution_free(&sol);
	sl_problem_free(p);
	{
		sl_graph *g = (sl_graph *)s->g;
		sl_space_free(s);
		sl_graph_free(g);
	}
}

int
main(int argc, char **argv)
{
	double time_limit = 60, alpha = 100;
	bool glpk = true, quick = false;
	int npins = 200;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--time-limit") == 0 && i + 1 < argc)
			time_limit = atof(argv[++i]);
		else if (strcmp(argv[i], "--no-glpk") == 0)
			glpk = false;
		else if (strcmp(argv[i], "--pins") == 0 && i + 1 < argc)
			npins = atoi(argv[++i]);
		else if (strcmp(argv[i], "--quick") == 0)
			quick = true;
		else {
			fprintf(stderr, "usage: %s [--time-limit SECONDS] [--no-glpk] "
			    "[--pins N] [--quick]\n", argv[0]);
			return 2;
		}
	}
	if (quick)
		npins = 40;

	printf("shardlab solver benchmark: alpha %g bytes/us, GLPK limit %g s, "
	    "pin re-solve = median of %d\n\n", alpha, time_limit, npins);
	printf("%-14s %5s %5s %4s | %9s %9s %9s %9s %9s %9s %5s | %9s %9s %9s | %8s %8s | %7s %7s\n",
	    "model mesh", "ops", "edges", "kmax",
	    "dp cold", "unfolded", "pin", "pin(a)", "alpha", "sweep", "plans",
	    "glpk cold", "glpk warm", "objective",
	    "cold x", "warm x", "RSS sp", "RSS dp");

	for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
		if (quick && ci > 0 && ci < sizeof cases / sizeof cases[0] - 1 &&
		    ci != 4)
			continue;
		bench_case(&cases[ci], alpha, time_limit, glpk, npins);
	}
	{
		static const struct bcase rcases[] = {
			{ "gpt-7.5b 2x4", "gpt-7.5b", 2, { 2, 4 }, false },
			{ "gpt3-175b 2x4", NULL, 2, { 2, 4 }, false },
			{ "gpt3-175b 8x8", NULL, 2, { 8, 8 }, false },
		};
		printf("\n--recompute auto (layers recomputed to fit 80 GB; ratios "
		    "against the same space without recomputation):\n");
		for (size_t i = 0; i < sizeof rcases / sizeof rcases[0]; i++)
			if (!quick || i == 1)
				bench_recompute(&rcases[i], npins);
	}
	bench_wide(time_limit, glpk);
	printf("\ncolumns: dp cold = new live solver + first solve (median of 5); "
	    "unfolded = same without layer folding (median of 3);\n"
	    "pin = pin or release one strategy and re-solve (sl_dp_resolve, median); "
	    "pin(a) = same with allowed_only;\n"
	    "alpha = re-weigh all costs and re-solve; sweep = whole alpha frontier; "
	    "x = GLPK time / DP time (cold / pin);\n"
	    "RSS sp = peak RSS with the space and problem built; RSS dp = peak "
	    "after the live solver (process-wide peak).\n");
	return 0;
}
