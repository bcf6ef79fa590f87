/*
 * fit.c: one entry point for "plan this under M bytes per device".
 *
 * sl_fit_search is the search every caller runs.  Between the least-cost
 * plan and the least-memory plan it solves, exactly, cost weighed against
 * memory, at the weight where the lines of the two plans nearest the limit
 * cross (parametric search, as in sweep.c), with a bisection step every
 * eighth, until they are neighbours on the convex frontier of memory and
 * cost: the one that fits is the least-cost plan of that frontier under the
 * limit.  Every solve also bounds the cost of any plan that fits (Lagrangian
 * duality), so the search says when it is exact.
 *
 * A pipeline stage (pipe_stage.c) runs it on its time and its memory with
 * its micro-batches in flight.  sl_fit_plan runs it on a space's problem:
 * the cost is the objective at alpha, the memory a fold of the step's items
 * (memory.c), and --recompute auto (recompute.c) fits at each set of
 * recomputed layers it tries.  `solve --mem-limit`, `plan`, the explorer
 * and --recompute auto all come here.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------ the search */

typedef struct probe_plan {
	int *choice;
	int64_t mem;
	double cost;
} probe_plan;

static void
probe_measure(const sl_fit_probe *pr, probe_plan *p)
{
	pr->measure(pr->ctx, p->choice, &p->mem, &p->cost);
}

/* Solves at weights (wm, wc) into p and tightens the bound with it. */
static int
probe_solve(const sl_fit_probe *pr, double wm, double wc, int64_t limit,
    probe_plan *p, sl_fit_found *out, sl_error *err)
{
	double b;
	int rc = pr->solve(pr->ctx, wm, wc, p->choice, err);

	if (rc != SL_OK)
		return rc;
	out->solves++;
	probe_measure(pr, p);
	/*
	 * Any plan y under the limit has wm mem(y) + wc cost(y) >= what the
	 * solve found, less the rounding of its integer costs (half a unit
	 * a term), so cost(y) >= cost + wm / wc (mem - limit) - slack.
	 */
	if (wc > 0) {
		b = p->cost + wm / wc * ((double)p->mem - (double)limit) -
		    0.5 * pr->terms / wc;
		if (b > out->bound)
			out->bound = b;
	}
	return SL_OK;
}

static double
probe_line(const probe_plan *p, double wm, double wc)
{
	return wm * (double)p->mem + wc * p->cost;
}

static void
probe_swap(probe_plan *a, probe_plan *b)
{
	probe_plan t = *a;

	*a = *b;
	*b = t;
}

int
sl_fit_search(const sl_fit_probe *pr, int64_t limit, sl_fit_found *out,
    sl_error *err)
{
	probe_plan lo = { 0 }, hi = { 0 }, mid = { 0 };
	size_t sz = (pr->n ? pr->n : 1) * sizeof(int);
	double lam_lo = 1e-9, lam_hi = 1e9;
	int rc = SL_OK;

	memset(out, 0, sizeof *out);
	out->bound = -INFINITY;
	out->choice = sl_xmalloc(sz);
	lo.choice = sl_xmalloc(sz);
	hi.choice = sl_xmalloc(sz);
	mid.choice = sl_xmalloc(sz);
	/* the least-cost plan: done when it fits */
	if (pr->fast != NULL) {
		memcpy(hi.choice, pr->fast, sz);
		probe_measure(pr, &hi);
		if (pr->fast_exact)
			out->bound = hi.cost;
	} else if ((rc = probe_solve(pr, 1e-9, 1.0, limit, &hi, out, err)) != SL_OK)
		goto done;
	if (hi.mem <= limit) {
		out->fits = true;
		probe_swap(&lo, &hi);
		goto found;
	}
	/* a plan known to fit, else the least-memory plan: nothing fits when
	 * that does not */
	if (pr->frugal != NULL) {
		memcpy(lo.choice, pr->frugal, sz);
		probe_measure(pr, &lo);
	} else if ((rc = probe_solve(pr, 1.0, 1e-9, limit, &lo, out, err)) != SL_OK)
		goto done;
	if (lo.mem > limit)
		goto found;
	out->fits = true;
	/*
	 * lam = wc / wm.  lo (fits) was solved at lam_lo, hi (does not) at
	 * lam_hi.  Steps solve where lo's and hi's lines cross, and stop when
	 * nothing lies below; every eighth halves the interval in log(lam)
	 * instead, which bounds the steps however many vertices lie between.
	 * (Most searches end within five steps: a halving every fourth cost
	 * GPT-3's plan on 64 devices 8% more solves, with the same plans.)
	 */
	for (int iter = 0; iter < 60; iter++) {
		double dm = (double)(hi.mem - lo.mem), dc = lo.cost - hi.cost;
		double wm, wc, lam;
		bool cross = iter % 8 != 7;

		if (!(dm > 0) || !(dc > 0))
			break;
		lam = cross ? dm / dc : sqrt(lam_lo * lam_hi);
		if (!cross && lam_hi / lam_lo < 1.0001)
			continue;
		wm = 1.0 / (1.0 + lam);
		wc = lam / (1.0 + lam);
		if ((rc = probe_solve(pr, wm, wc, limit, &mid, out, err)) != SL_OK)
			goto done;
		if (cross && probe_line(&mid, wm, wc) >= probe_line(&lo, wm, wc) - 0.5)
			break;		/* lo and hi are neighbours */
		if (mid.mem <= limit) {
			probe_swap(&lo, &mid);
			if (lam > lam_lo)
				lam_lo = lam;
		} else {
			probe_swap(&hi, &mid);
			if (lam < lam_hi)
				lam_hi = lam;
		}
	}
found:
	/* lo: the least-cost fitting vertex, or the least memory when none */
	memcpy(out->choice, lo.choice, sz);
	out->mem = lo.mem;
	out->cost = lo.cost;
done:
	free(lo.choice);
	free(hi.choice);
	free(mid.choice);
	if (rc != SL_OK) {
		free(out->choice);
		out->choice = NULL;
	}
	return rc;
}

/* ------------------------------------------------- a space's problem */

const char *
sl_fold_name(sl_fold f)
{
	static const char *const names[SL_FOLD_COUNT] = { "sum", "peak" };

	return (unsigned)f < SL_FOLD_COUNT ? names[f] : "?";
}

typedef struct fit_ctx {
	sl_space *s;
	sl_problem *p;
	const sl_fit_opts *o;
	sl_dp *dp;		/* live solver of p (the caller's, or ours) */
	bool own_dp, tried_dp;
	int solves;
} fit_ctx;

/*
 * The memory of a plan under the fold, on device 0 (which holds the largest
 * shard of every tensor): the sum is the space's own node and edge tables,
 * what sl_evaluate's max_total comes to without walking every device.
 */
static int64_t
fold_mem(const fit_ctx *c, const int *choice)
{
	const sl_space *s = c->s;
	int64_t t = 0;

	for (int v = 0; v < s->g->n_ops; v++)
		t = sl_add_sat(t, s->node_mem[v][choice[v]]);
	for (int e = 0; e < s->n_edges; e++) {
		const sl_space_edge *se = &s->edges[e];
		t = sl_add_sat(t, s->edge_mem[e][choice[se->src] *
		    s->ops[se->dst].n_strat + choice[se->dst]]);
	}
	return t;
}

/* The objective at alpha of a plan (what the problem scores at alpha). */
static double
fit_cost(const fit_ctx *c, const int *choice)
{
	const sl_space *s = c->s;
	double a = c->o->alpha, t = 0;

	for (int v = 0; v < s->g->n_ops; v++)
		t += (double)sl_weigh(s->node_mem[v][choice[v]],
		    s->node_ns[v][choice[v]], a);
	for (int e = 0; e < s->n_edges; e++) {
		const sl_space_edge *se = &s->edges[e];
		int i = choice[se->src] * s->ops[se->dst].n_strat + choice[se->dst];
		t += (double)sl_weigh(s->edge_mem[e][i], s->edge_ns[e][i], a);
	}
	return t;
}

static void
fit_measure(void *ctx, const int *choice, int64_t *mem, double *cost)
{
	fit_ctx *c = ctx;

	*mem = fold_mem(c, choice);
	*cost = fit_cost(c, choice);
}

/* p's costs for wm x memory + wc x the objective at alpha (wm 0: the
 * objective itself, exactly). */
static void
fit_weigh(fit_ctx *c, double wm, double wc)
{
	const sl_space *s = c->s;
	sl_problem *p = c->p;
	double a = c->o->alpha;

	if (wm == 0) {
		sl_space_reweigh(s, a, p);
		return;
	}
	for (int v = 0; v < p->n; v++)
		for (int i = 0; i < p->k[v]; i++)
			p->cost[v][i] = llround(wm * (double)s->node_mem[v][i] +
			    wc * (double)sl_weigh(s->node_mem[v][i], s->node_ns[v][i], a));
	for (int e = 0; e < p->m; e++) {
		int n = p->k[p->edge[e][0]] * p->k[p->edge[e][1]];
		for (int i = 0; i < n; i++)
			p->ecost[e][i] = llround(wm * (double)s->edge_mem[e][i] +
			    wc * (double)sl_weigh(s->edge_mem[e][i], s->edge_ns[e][i], a));
	}
}

/* The live DP of p, when the solver is the DP and it takes p. */
static void
fit_live_dp(fit_ctx *c)
{
	const sl_fit_opts *o = c->o;

	if (c->dp == NULL && !c->tried_dp &&
	    (o->solver == SL_SOLVER_DP || o->solver == SL_SOLVER_AUTO)) {
		sl_error e2;
		sl_error_clear(&e2);
		c->tried_dp = true;
		c->dp = sl_dp_new(c->p, &e2);	/* NULL: not exact cheaply */
		c->own_dp = c->dp != NULL;
	}
}

/* One exact solve of p as weighed now (the live DP when it takes p). */
static int
fit_solve_now(fit_ctx *c, sl_solution *sol, sl_error *err)
{
	const sl_fit_opts *o = c->o;
	int rc;

	fit_live_dp(c);
	sl_solution_free(sol);
	sl_solution_init(sol, c->p->n);
	c->solves++;
	rc = c->dp != NULL ? sl_dp_resolve(c->dp, c->p, sol, err) :
	    sl_solve(c->p, o->solver, o->solve, sol, err);
	return rc;
}

static int
fit_probe_solve(void *ctx, double wm, double wc, int *choice, sl_error *err)
{
	fit_ctx *c = ctx;
	sl_solution sol;
	int rc;

	fit_weigh(c, wm, wc);
	sl_solution_init(&sol, c->p->n);
	rc = fit_solve_now(c, &sol, err);
	if (rc == SL_OK && sol.status != SL_SOLVE_OPTIMAL &&
	    sol.status != SL_SOLVE_FEASIBLE)
		rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("the solver ended %s while fitting the memory limit"),
		    sl_solve_status_name(sol.status));
	if (rc == SL_OK)
		memcpy(choice, sol.choice, c->p->n * sizeof *choice);
	sl_solution_free(&sol);
	return rc;
}

/*
 * The plan at the current layer settings: the optimum at alpha when it
 * fits, else the search between it and the least-memory plan.  r->sol
 * holds the plan, scored on p at alpha.
 */
static int
fit_here(fit_ctx *c, sl_fit *r, sl_error *err)
{
	const sl_fit_opts *o = c->o;
	sl_fit_probe pr = { .n = c->p->n, .solve = fit_probe_solve,
	    .measure = fit_measure, .ctx = c, .terms = c->p->n + c->p->m };
	sl_fit_found f;
	int rc;

	/* the optimum at alpha as every front end takes it (at alpha 0, the
	 * least communication among the plans of least memory) */
	sl_space_reweigh(c->s, o->alpha, c->p);
	fit_live_dp(c);
	sl_solution_free(&r->sol);
	sl_solution_init(&r->sol, c->p->n);
	c->solves++;
	if ((rc = sl_space_solve(c->s, c->p, o->alpha, c->dp, o->solver, o->solve,
	    &r->sol, err)) != SL_OK)
		return rc;
	if (r->sol.status != SL_SOLVE_OPTIMAL && r->sol.status != SL_SOLVE_FEASIBLE)
		return SL_OK;	/* no plan at all: the caller says why */
	r->mem = fold_mem(c, r->sol.choice);
	r->fits = o->limit <= 0 || r->mem <= o->limit;
	r->exact = r->sol.status == SL_SOLVE_OPTIMAL;
	r->bound = r->exact ? r->sol.objective : INT64_MIN;
	if (r->fits)
		return SL_OK;
	pr.fast = r->sol.choice;
	pr.fast_exact = r->exact;
	if ((rc = sl_fit_search(&pr, o->limit, &f, err)) != SL_OK)
		return rc;
	sl_space_reweigh(c->s, o->alpha, c->p);
	memcpy(r->sol.choice, f.choice, c->p->n * sizeof *f.choice);
	r->sol.objective = sl_problem_score(c->p, r->sol.choice);
	r->mem = f.mem;
	r->fits = f.fits;
	r->bound = isfinite(f.bound) ? (int64_t)ceil(f.bound) : INT64_MIN;
	if (r->bound > r->sol.objective)
		r->bound = r->sol.objective;
	r->exact = r->fits && r->bound >= r->sol.objective;
	r->sol.status = r->fits ? (r->exact ? SL_SOLVE_OPTIMAL : SL_SOLVE_FEASIBLE) :
	    SL_SOLVE_INFEASIBLE;
	r->sol.bound = r->bound;
	r->searched = true;
	free(f.choice);
	return SL_OK;
}

/* recompute.c's probe: the plan under the limit at its layer settings. */
static int
fit_layers(void *ctx, sl_fit *r, sl_error *err)
{
	return fit_here(ctx, r, err);
}

static int64_t
fit_bound(void *ctx)
{
	fit_ctx *c = ctx;
	int64_t b = 0;

	/* every operator's least node memory among its allowed strategies
	 * (edges add nothing below zero) */
	for (int v = 0; v < c->s->g->n_ops; v++) {
		int64_t m = INT64_MAX;
		for (int k = 0; k < c->s->ops[v].n_strat; k++)
			if (c->p->allowed[v][k] && c->s->node_mem[v][k] < m)
				m = c->s->node_mem[v][k];
		if (m != INT64_MAX)
			b = sl_add_sat(b, m);
	}
	return b;
}

int
sl_fit_plan(sl_space *s, sl_problem *p, const sl_fit_opts *o, sl_fit *out,
    sl_error *err)
{
	fit_ctx c = { .s = s, .p = p, .o = o, .dp = o->live };
	int rc;

	memset(out, 0, sizeof *out);
	sl_solution_init(&out->sol, p->n);
	out->n_layers = s->g->n_layers;
	if (o->recompute) {
		sl_rc_probe rp = { fit_layers, fit_bound, &c };
		rc = sl_recompute_choose(s, &rp, o->limit, out, err);
	} else {
		rc = fit_here(&c, out, err);
	}
	/* p as the caller gave it: weighed at alpha, for the layers chosen */
	sl_space_reweigh(s, o->alpha, p);
	if (rc == SL_OK && out->sol.status != SL_SOLVE_INFEASIBLE &&
	    out->sol.choice != NULL)
		out->sol.objective = sl_problem_score(p, out->sol.choice);
	out->solves = c.solves;
	if (c.own_dp)
		sl_dp_free(c.dp);
	return rc;
}

void
sl_fit_free(sl_fit *f)
{
	if (f == NULL)
		return;
	sl_solution_free(&f->sol);
	memset(f, 0, sizeof *f);
}
