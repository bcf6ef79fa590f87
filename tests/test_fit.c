/*
 * test_fit.c: plans under a memory limit (fit.c) against brute force.
 *
 * sl_fit_search on plans given as points (memory, cost): the plan it
 * returns is the least-cost point of the lower convex hull under the limit,
 * and its bound never exceeds the least cost of any point under the limit.
 * sl_fit_plan on small models whose every plan can be listed: the plan
 * fits, costs no less than the best fitting plan, exactly that when it says
 * it is exact, and its bound is never above it.
 */
#include "testutil.h"
#include "internal.h"
#include "mlp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------- the search on points */

struct points {
	int n;
	const int64_t (*pt)[2];		/* memory, cost */
	int solves;
};

/* The point minimising wm x memory + wc x cost (lowest index on ties). */
static int
points_solve(void *ctx, double wm, double wc, int *choice, sl_error *err)
{
	struct points *p = ctx;
	double best = INFINITY;

	(void)err;
	for (int i = 0; i < p->n; i++) {
		double v = wm * (double)p->pt[i][0] + wc * (double)p->pt[i][1];
		if (v < best) {
			best = v;
			choice[0] = i;
		}
	}
	p->solves++;
	return SL_OK;
}

static void
points_measure(void *ctx, const int *choice, int64_t *mem, int64_t *weighed,
    double *cost)
{
	struct points *p = ctx;

	*mem = p->pt[choice[0]][0];
	*cost = (double)p->pt[choice[0]][1];
}

/* Whether point i lies on the lower convex hull of the points. */
static bool
on_hull(const struct points *p, int i)
{
	for (int a = 0; a < p->n; a++)
		for (int b = 0; b < p->n; b++) {
			double t;
			int64_t ma = p->pt[a][0], mb = p->pt[b][0], mi = p->pt[i][0];
			if (a == i || b == i || !(ma < mi && mi < mb))
				continue;
			t = (double)(mi - ma) / (double)(mb - ma);
			if ((1 - t) * (double)p->pt[a][1] + t * (double)p->pt[b][1] <
			    (double)p->pt[i][1] - 1e-9)
				return false;
		}
	return true;
}

static void
test_search_points(void **state)
{
	/* a frontier with a dent (point 3 lies above the hull) and points
	 * off it */
	static const int64_t pt[][2] = {
		{ 100, 10 }, { 80, 20 }, { 60, 40 }, { 50, 62 }, { 40, 70 },
		{ 20, 200 }, { 90, 50 }, { 70, 90 }, { 30, 300 }, { 45, 66 },
	};
	struct points p = { (int)SL_ARRAY_LEN(pt), pt, 0 };

	(void)state;
	for (int64_t limit = 10; limit <= 110; limit += 5) {
		sl_fit_probe pr = { .n = 1, .solve = points_solve,
		    .measure = points_measure, .ctx = &p, .terms = 0,
		    .bounds = true };
		sl_fit_found f;
		sl_error err;
		int64_t best = INT64_MAX, hull = INT64_MAX;

		sl_error_clear(&err);
		for (int i = 0; i < p.n; i++) {
			if (pt[i][0] > limit)
				continue;
			if (pt[i][1] < best)
				best = pt[i][1];
			if (on_hull(&p, i) && pt[i][1] < hull)
				hull = pt[i][1];
		}
		assert_int_equal(sl_fit_search(&pr, limit, &f, &err), SL_OK);
		if (best == INT64_MAX) {
			assert_false(f.fits);
			assert_int_equal(f.mem, 20);	/* the least memory */
		} else {
			assert_true(f.fits);
			assert_true(f.mem <= limit);
			if ((int64_t)f.cost != hull)
				fail_msg("limit %lld: cost %g, the hull's best %lld",
				    (long long)limit, f.cost, (long long)hull);
			assert_true(f.bound <= (double)best + 1e-9);
		}
		free(f.choice);
	}
}

/* ------------------------------------------------- plans of a model */

static void
add_held(void *ctx, const sl_mem_item *it)
{
	if (sl_item_at_loss(it))
		*(int64_t *)ctx += it->local;
}

/* What a plan holds on device 0 when backward begins. */
static int64_t
held_of(const sl_space *s, const int *choice)
{
	int64_t b = 0;

	for (int v = 0; v < s->g->n_ops; v++)
		sl_node_items(s, v, choice[v], NULL, add_held, &b);
	return b;
}

/* The memory of a plan on device 0 under a fold: the sum of the space's
 * tables, or the peak of its timeline in the default order. */
static int64_t
fold_of(const sl_space *s, sl_fold fold, const int *c)
{
	int64_t mem = 0;
	sl_timeline tl;
	sl_error err;

	if (fold == SL_FOLD_PEAK) {
		sl_error_clear(&err);
		assert_int_equal(sl_timeline_build(s, c, 0, false, &tl, &err), SL_OK);
		mem = tl.peak;
		sl_timeline_free(&tl);
		return mem;
	}
	for (int v = 0; v < s->g->n_ops; v++)
		mem += s->node_mem[v][c[v]];
	for (int e = 0; e < s->n_edges; e++)
		mem += s->edge_mem[e][c[s->edges[e].src] *
		    s->ops[s->edges[e].dst].n_strat + c[s->edges[e].dst]];
	return mem;
}

static sl_fold brute_fold;

/* Least objective at alpha among the plans whose memory under brute_fold
 * on device 0 fits, by listing every plan; INT64_MAX when none fits.
 * *least: the least memory of any plan. */
static int64_t
brute(const sl_space *s, const sl_problem *p, int64_t limit, int64_t *least)
{
	int n = p->n, *c = calloc(n, sizeof *c);
	int64_t best = INT64_MAX;

	*least = INT64_MAX;
	for (;;) {
		bool ok = true;
		for (int v = 0; v < n && ok; v++)
			ok = p->allowed[v][c[v]];
		if (ok) {
			int64_t mem = fold_of(s, brute_fold, c), obj = sl_problem_score(p, c);
			if (mem < *least)
				*least = mem;
			if (mem <= limit && obj < best)
				best = obj;
		}
		int v = 0;
		while (v < n && ++c[v] == p->k[v])
			c[v++] = 0;
		if (v == n)
			break;
	}
	free(c);
	return best;
}

static double
plans_of(const sl_problem *p)
{
	double n = 1;

	for (int v = 0; v < p->n; v++)
		n *= p->k[v];
	return n;
}

/* Every alpha and limit of a model on a mesh: checked against brute force;
 * returns how many fits were exact. */
static int
check_model(sl_graph *g, int n_axes, int a0, int a1, const char *pin,
    sl_fold fold, sl_solver_kind solver, int *checked)
{
	sl_mesh m;
	sl_space *s;
	sl_problem *p;
	sl_constraints cs = { 0 };
	sl_error err;
	int exact = 0;
	static const double alphas[] = { 0, 1e3, 1e5, 1e7, 1e9 };

	sl_error_clear(&err);
	assert_int_equal(tu_mesh("h100-nvlink", n_axes, a0, a1, &m), SL_OK);
	s = sl_space_build(g, &m, NULL, &err);
	assert_non_null(s);
	if (pin != NULL)
		assert_int_equal(sl_constraints_parse(&cs, pin, false, &err), SL_OK);
	p = sl_space_problem(s, 0, &cs, &err);
	assert_non_null(p);
	assert_true(plans_of(p) <= 4e6);
	for (size_t ai = 0; ai < SL_ARRAY_LEN(alphas); ai++) {
		int64_t least, most = 0, lo, hi;
		sl_space_reweigh(s, alphas[ai], p);
		brute_fold = fold;
		brute(s, p, INT64_MAX, &least);
		/* the memory of the optimum at alpha: limits below it bind */
		{
			sl_solution sol;
			sl_solution_init(&sol, p->n);
			assert_int_equal(sl_solve(p, SL_SOLVER_DP, NULL, &sol, &err), SL_OK);
			most = fold_of(s, fold, sol.choice);
			sl_solution_free(&sol);
		}
		lo = least - (most - least) / 8 - 1;
		hi = most + (most - least) / 8;
		for (int i = 0; i <= 12; i++) {
			int64_t limit = lo + (hi - lo) * i / 12, best, ignore;
			sl_fit_opts fo = { .alpha = alphas[ai], .limit = limit,
			    .fold = fold, .solver = solver };
			sl_fit f;

			best = brute(s, p, limit, &ignore);
			assert_int_equal(sl_fit_plan(s, p, &fo, &f, &err), SL_OK);
			if (best == INT64_MAX) {
				assert_false(f.fits);
				assert_int_equal(f.mem, least);
			} else {
				assert_true(f.fits);
				assert_true(f.mem <= limit);
				assert_int_equal(f.sol.objective, sl_problem_score(p, f.sol.choice));
				assert_true(f.sol.objective >= best);
				if (f.exact && f.sol.objective != best)
					fail_msg("%s alpha %g limit %lld: exact %lld, best %lld",
					    g->name, alphas[ai], (long long)limit,
					    (long long)f.sol.objective, (long long)best);
				if (f.bound != INT64_MIN && f.bound > best)
					fail_msg("%s alpha %g limit %lld: bound %lld above %lld",
					    g->name, alphas[ai], (long long)limit,
					    (long long)f.bound, (long long)best);
				exact += f.exact;
			}
			for (int v = 0; v < p->n; v++)
				assert_true(p->allowed[v][f.sol.choice[v]]);
			sl_fit_free(&f);
			(*checked)++;
		}
		/* p is left weighed at alpha */
		{
			sl_problem *q = sl_space_problem(s, alphas[ai], &cs, &err);
			for (int v = 0; v < p->n; v++)
				assert_memory_equal(p->cost[v], q->cost[v],
				    p->k[v] * sizeof *p->cost[v]);
			sl_problem_free(q);
		}
	}
	sl_constraints_free(&cs);
	sl_problem_free(p);
	sl_space_free(s);
	return exact;
}

static void
test_fit_brute(void **state)
{
	sl_graph *g = tu_mlp();
	int checked = 0, exact = 0;

	(void)state;
	assert_non_null(g);
	exact += check_model(g, 1, 4, 1, NULL, SL_FOLD_SUM, SL_SOLVER_DP, &checked);
	exact += check_model(g, 2, 2, 2, NULL, SL_FOLD_SUM, SL_SOLVER_DP, &checked);
	exact += check_model(g, 1, 8, 1, NULL, SL_FOLD_SUM, SL_SOLVER_DP, &checked);
	exact += check_model(g, 2, 2, 2, "fc1=dp01+z", SL_FOLD_SUM, SL_SOLVER_DP,
	    &checked);
	assert_true(checked >= 4 * 5 * 13);
	/* the limits that bind and the bound meets the plan are exact */
	assert_true(exact > 0);
	sl_graph_free(g);
}

/*
 * The same on the peak of the timeline, with the DP (exact only when the
 * optimum at alpha fits) and with GLPK (what is held when backward begins
 * as a knapsack row, a relaxation: exact whenever its optimum's peak
 * fits).
 */
static void
test_fit_brute_peak(void **state)
{
	sl_graph *g = tu_mlp();
	int checked = 0, exact_dp = 0, exact_ilp = 0, total;

	(void)state;
	assert_non_null(g);
	exact_dp += check_model(g, 1, 4, 1, NULL, SL_FOLD_PEAK, SL_SOLVER_DP, &checked);
	exact_dp += check_model(g, 2, 2, 2, NULL, SL_FOLD_PEAK, SL_SOLVER_DP, &checked);
	total = checked;
	exact_ilp += check_model(g, 1, 4, 1, NULL, SL_FOLD_PEAK, SL_SOLVER_ILP, &checked);
	exact_ilp += check_model(g, 2, 2, 2, NULL, SL_FOLD_PEAK, SL_SOLVER_ILP, &checked);
	exact_ilp += check_model(g, 2, 2, 2, "fc2=dp01+z", SL_FOLD_PEAK,
	    SL_SOLVER_ILP, &checked);
	assert_true(total >= 2 * 5 * 13);
	assert_true(exact_ilp >= exact_dp);
	assert_true(exact_ilp > 0);
	sl_graph_free(g);
}

/*
 * The peak's separable part (what a plan holds when backward begins) is a
 * lower bound on the timeline's peak, and close to it: on the bundled GPT
 * and LLaMA models, 1, 8 and 2x4 devices, plain and fully recomputed, the
 * optimum at alpha 0 and at a large alpha.
 */
static void
test_held_bounds_peak(void **state)
{
	static const char *const models[] = { "gpt-1.7b", "llama-7b", "bert-large" };
	static const int shapes[][3] = { { 1, 1, 1 }, { 1, 8, 1 }, { 2, 2, 4 } };
	int checked = 0;

	(void)state;
	for (size_t mi = 0; mi < SL_ARRAY_LEN(models); mi++)
		for (size_t si = 0; si < SL_ARRAY_LEN(shapes); si++)
			for (int rc = 0; rc < 2; rc++) {
				int dev = shapes[si][1] * shapes[si][2];
				sl_model_opts mo = { .micro_batch = 1, .devices = dev };
				sl_space_opts so;
				sl_error err;
				sl_mesh m;
				sl_graph *g;
				sl_space *s;
				sl_problem *p;

				sl_error_clear(&err);
				g = sl_model_open(models[mi], &mo, &err);
				assert_non_null(g);
				assert_int_equal(tu_mesh("h100-nvlink", shapes[si][0],
				    shapes[si][1], shapes[si][2], &m), SL_OK);
				sl_space_opts_default(&so);
				so.recipe.recompute = rc ? SL_RECOMP_FULL : SL_RECOMP_NONE;
				s = sl_space_build(g, &m, &so, &err);
				assert_non_null(s);
				p = sl_space_problem(s, 0, NULL, &err);
				for (int ai = 0; ai < 2; ai++) {
					sl_fit_opts fo = { .alpha = ai ? 1e7 : 0,
					    .limit = INT64_MAX / 4, .fold = SL_FOLD_PEAK,
					    .solver = SL_SOLVER_DP };
					sl_fit f;
					int64_t held = 0, peak;
					sl_space_reweigh(s, fo.alpha, p);
					assert_int_equal(sl_fit_plan(s, p, &fo, &f, &err), SL_OK);
					peak = fold_of(s, SL_FOLD_PEAK, f.sol.choice);
					assert_int_equal(f.mem, peak);
					held = held_of(s, f.sol.choice);
					if (held > peak || held < peak / 2)
						fail_msg("%s on %d devices: held %lld, peak %lld",
						    models[mi], dev, (long long)held,
						    (long long)peak);
					sl_fit_free(&f);
					checked++;
				}
				sl_problem_free(p);
				sl_space_free(s);
				sl_graph_free(g);
			}
	assert_int_equal(checked, 3 * 3 * 2 * 2);
}

/*
 * On models too large to list, the plans the search weighs are those of
 * the alpha frontier (the plans least in memory + alpha' x time for some
 * alpha' <= alpha): the plan it fits is never worse than the best fitting
 * plan of the frontier, which `solve --mem-limit` used to pick.
 */
static void
test_fit_frontier(void **state)
{
	sl_gen_config c;
	sl_error err;
	sl_graph *g;
	sl_mesh m;
	sl_space *s;
	sl_problem *p;
	sl_frontier f;
	int checked = 0, searched = 0;

	(void)state;
	sl_error_clear(&err);
	sl_gen_defaults(SL_FAM_GPT, &c);
	c.layers = 2;
	c.batch = 4;
	g = sl_gen(&c, &err);
	assert_non_null(g);
	assert_int_equal(tu_mesh("h100-nvlink", 2, 2, 2, &m), SL_OK);
	s = sl_space_build(g, &m, NULL, &err);
	assert_non_null(s);
	assert_int_equal(sl_sweep(s, NULL, SL_SOLVER_DP, NULL, &f, &err), SL_OK);
	assert_true(f.n >= 3);
	p = sl_space_problem(s, 0, NULL, &err);
	for (int i = 1; i < f.n; i++) {
		/* at alphas inside each frontier plan's range, limits between
		 * the plans' memories */
		double alpha = f.pt[i].alpha_hi < 0 ? f.pt[i].alpha_lo * 2 :
		    (f.pt[i].alpha_lo + f.pt[i].alpha_hi) / 2;
		for (int j = 0; j < i; j++) {
			int64_t limit = (f.pt[j].mem + f.pt[j + 1].mem) / 2, best = INT64_MAX;
			sl_fit_opts fo = { .alpha = alpha, .limit = limit,
			    .fold = SL_FOLD_SUM, .solver = SL_SOLVER_DP };
			sl_fit r;
			sl_space_reweigh(s, alpha, p);
			for (int k = 0; k < f.n; k++)
				if (f.pt[k].mem <= limit) {
					int64_t o = sl_problem_score(p, f.pt[k].choice);
					if (o < best)
						best = o;
				}
			assert_int_equal(sl_fit_plan(s, p, &fo, &r, &err), SL_OK);
			assert_true(r.fits);
			assert_true(r.mem <= limit);
			if (r.sol.objective > best)
				fail_msg("alpha %g limit %lld: fitted %lld, the frontier's best %lld",
				    alpha, (long long)limit, (long long)r.sol.objective,
				    (long long)best);
			searched += r.searched;
			sl_fit_free(&r);
			checked++;
		}
	}
	assert_true(checked >= 3);
	assert_true(searched >= 3);
	sl_problem_free(p);
	sl_frontier_free(&f);
	sl_space_free(s);
	sl_graph_free(g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_search_points),
		cmocka_unit_test(test_fit_brute),
		cmocka_unit_test(test_fit_brute_peak),
		cmocka_unit_test(test_held_bounds_peak),
		cmocka_unit_test(test_fit_frontier),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
