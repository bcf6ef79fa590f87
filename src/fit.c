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
	int64_t mem, weighed;
	double cost;
} probe_plan;

static void
probe_measure(const sl_fit_probe *pr, probe_plan *p)
{
	p->weighed = -1;
	pr->measure(pr->ctx, p->choice, &p->mem, &p->weighed, &p->cost);
	if (p->weighed < 0)
		p->weighed = p->mem;
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
	 * Any plan y under the limit has wm w(y) + wc cost(y) >= what the
	 * solve found, less the rounding of its integer costs (half a unit
	 * a term), w the memory the solve weighs (never above the measured
	 * memory, so w(y) <= limit too): cost(y) >= cost + wm / wc (w - limit)
	 * - slack.
	 */
	if (wc > 0 && pr->bounds) {
		b = p->cost + wm / wc * ((double)p->weighed - (double)limit) -
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
			out->bound = hi.cost;	/* no plan costs less at all */
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
	/* for the peak, per operator and strategy (at the current layer
	 * settings): held, what is alive when backward begins, a lower
	 * bound on the peak (the exact path's knapsack row); resident, what
	 * the step keeps at all (held and the gradients), what the search
	 * weighs */
	int64_t **held, **resident;
} fit_ctx;

/* The sum's memory of a plan on device 0: the space's own node and edge
 * tables, what sl_evaluate's max_total comes to without walking devices. */
static int64_t
sum_mem(const sl_space *s, const int *choice)
{
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

/*
 * The memory of a plan under the fold, on device 0 (which holds the largest
 * shard of every tensor): the sum, or the peak of its timeline in the
 * order frameworks run it (sl_timeline_build; a few milliseconds on the
 * bundled models).
 */
static int64_t
fold_mem(const fit_ctx *c, const int *choice)
{
	sl_timeline tl;
	sl_error err;
	int64_t peak;

	if (c->o->fold != SL_FOLD_PEAK)
		return sum_mem(c->s, choice);
	sl_error_clear(&err);
	if (sl_timeline_build(c->s, choice, 0, false, &tl, &err) != SL_OK)
		return INT64_MAX;
	peak = tl.peak;
	sl_timeline_free(&tl);
	return peak;
}

/* What an item holds when backward begins (the step's loss task), and
 * what the step keeps at all (the items the sum counts, but the edges'). */
struct held_acc {
	int64_t held, resident;
};

static void
held_item(void *ctx, const sl_mem_item *it)
{
	struct held_acc *a = ctx;

	if (sl_item_at_loss(it))
		a->held = sl_add_sat(a->held, it->local);
	/* what the search weighs: the kept items and the operator's own
	 * moments (the loss's fp32 buffers, ZeRO-3's gathered copies) */
	a->resident = sl_add_sat(a->resident, it->local);
}

/*
 * The peak's separable parts, per operator and strategy on device 0.
 * held: the bytes of its items alive when backward begins (weights,
 * optimizer states, gradients held through the step, every activation
 * kept for backward); their sum over a plan is what its timeline holds at
 * the loss task less that task's transients, a lower bound on its peak,
 * which makes the exact path's knapsack row a relaxation of "the peak
 * fits".  resident: what the step keeps at all (held and the gradients
 * made in backward) and the operator's own moments, which the search
 * weighs: a plan's peak is its residents less what is freed before the
 * peak, plus the transients of the moment, and both move with these (a
 * ZeRO-3 plan keeps a third of the states, and gathers each layer's
 * weights whole for a moment: weighed in full, every layer's at once, it
 * still keeps far less).
 */
static void
held_tables(fit_ctx *c)
{
	const sl_space *s = c->s;
	int n = s->g->n_ops ? s->g->n_ops : 1;

	c->held = sl_xcalloc(n, sizeof *c->held);
	c->resident = sl_xcalloc(n, sizeof *c->resident);
	for (int v = 0; v < s->g->n_ops; v++) {
		c->held[v] = sl_xmalloc(s->ops[v].n_strat * sizeof **c->held);
		c->resident[v] = sl_xmalloc(s->ops[v].n_strat * sizeof **c->resident);
		for (int k = 0; k < s->ops[v].n_strat; k++) {
			struct held_acc a = { 0, 0 };
			sl_node_items(s, v, k, NULL, held_item, &a);
			sl_node_transients(s, v, k, NULL, s->grads_persist,
			    held_item, &a);
			c->held[v][k] = a.held;
			c->resident[v][k] = a.resident;
		}
	}
}

static void
held_free(fit_ctx *c)
{
	if (c->held == NULL)
		return;
	for (int v = 0; v < c->s->g->n_ops; v++) {
		free(c->held[v]);
		free(c->resident[v]);
	}
	free(c->held);
	free(c->resident);
	c->held = c->resident = NULL;
}

/* The memory the solves weigh for operator v's strategy i (and an edge's):
 * the fold itself for the sum, the residents for the peak. */
static int64_t
weighed_node_mem(const fit_ctx *c, int v, int i)
{
	return c->resident != NULL ? c->resident[v][i] : c->s->node_mem[v][i];
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
fit_measure(void *ctx, const int *choice, int64_t *mem, int64_t *weighed,
    double *cost)
{
	fit_ctx *c = ctx;

	*mem = fold_mem(c, choice);
	if (c->resident != NULL) {
		*weighed = 0;
		for (int v = 0; v < c->s->g->n_ops; v++)
			*weighed = sl_add_sat(*weighed, c->resident[v][choice[v]]);
	}
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
			p->cost[v][i] = llround(wm * (double)weighed_node_mem(c, v, i) +
			    wc * (double)sl_weigh(s->node_mem[v][i], s->node_ns[v][i], a));
	for (int e = 0; e < p->m; e++) {
		int n = p->k[p->edge[e][0]] * p->k[p->edge[e][1]];
		for (int i = 0; i < n; i++)
			p->ecost[e][i] = llround((c->held != NULL ? 0 :
			    wm * (double)s->edge_mem[e][i]) +
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
		c->dp = sl_dp_new(c->p, o->solve, &e2);	/* NULL: not exact cheaply */
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
	rc = c->dp != NULL ? sl_dp_resolve(c->dp, c->p, o->solve, sol, err) :
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
 * The exact path where the solver is exact: the peak's separable part is a
 * sum over operators (no edge holds anything when backward begins), so
 * "that part within the limit" is one knapsack row of GLPK's program
 * (sl_problem's usage over one interval).  Its optimum bounds every plan
 * whose peak fits, and is the answer when its own peak fits; when it does
 * not, the row is tightened once by what its timeline held beyond the
 * separable part, and that plan is taken if it fits and does better.
 */
static int
fit_ilp(fit_ctx *c, sl_fit *r, sl_error *err)
{
	const sl_fit_opts *o = c->o;
	sl_problem *q;
	sl_solve_opts so = { .time_limit = SL_ILP_DEFAULT_TIME_LIMIT };
	int64_t limit = o->limit;
	int rc = SL_OK;

	if (o->solve != NULL)
		so = *o->solve;
	if (so.time_limit <= 0)
		so.time_limit = SL_ILP_DEFAULT_TIME_LIMIT;
	sl_space_reweigh(c->s, o->alpha, c->p);
	q = sl_problem_copy(c->p);
	q->interval = sl_xcalloc(q->n ? q->n : 1, sizeof *q->interval);
	q->usage = sl_xcalloc(q->n ? q->n : 1, sizeof *q->usage);
	for (int v = 0; v < q->n; v++) {
		q->interval[v][0] = 0;
		q->interval[v][1] = 1;
		q->usage[v] = sl_xmalloc(q->k[v] * sizeof **q->usage);
		memcpy(q->usage[v], c->held[v], q->k[v] * sizeof **q->usage);
	}
	for (int round = 0; round < 2 && limit > 0; round++) {
		sl_solution sol;
		int64_t peak, held = 0;

		q->usage_limit = limit;
		sl_solution_init(&sol, q->n);
		c->solves++;
		rc = sl_solve(q, SL_SOLVER_ILP, &so, &sol, err);
		if (rc != SL_OK || (sol.status != SL_SOLVE_OPTIMAL &&
		    sol.status != SL_SOLVE_FEASIBLE)) {
			sl_solution_free(&sol);
			break;
		}
		/* the relaxation's optimum bounds every plan whose peak fits */
		if (round == 0 && sol.status == SL_SOLVE_OPTIMAL &&
		    sol.objective > r->bound)
			r->bound = sol.objective;
		if (round == 0 && sol.bound != INT64_MIN && sol.bound > r->bound)
			r->bound = sol.bound;
		peak = fold_mem(c, sol.choice);
		if (peak <= o->limit && (!r->fits || sol.objective < r->sol.objective)) {
			memcpy(r->sol.choice, sol.choice, q->n * sizeof *sol.choice);
			r->sol.objective = sol.objective;
			r->mem = peak;
			r->fits = true;
		}
		for (int v = 0; v < q->n; v++)
			held = sl_add_sat(held, c->held[v][sol.choice[v]]);
		sl_solution_free(&sol);
		if (peak <= o->limit)
			break;
		limit -= peak - held;
	}
	sl_problem_free(q);
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
	    .measure = fit_measure, .ctx = c, .terms = c->p->n + c->p->m,
	    .bounds = o->fold != SL_FOLD_PEAK };
	sl_fit_found f;
	int rc;

	held_free(c);
	if (o->fold == SL_FOLD_PEAK && o->limit > 0)
		held_tables(c);
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
	free(f.choice);
	if (r->fits && r->bound > r->sol.objective)
		r->bound = r->sol.objective;
	/* GLPK's branching on the knapsack row can take its whole time limit:
	 * asked for by name (--solver ilp), not as a live re-solve */
	if (c->held != NULL && (!r->fits || r->bound < r->sol.objective) &&
	    o->solver == SL_SOLVER_ILP) {
		if ((rc = fit_ilp(c, r, err)) != SL_OK)
			return rc;
		sl_space_reweigh(c->s, o->alpha, c->p);
	}
	r->exact = r->fits && r->bound >= r->sol.objective;
	r->sol.status = r->fits ? (r->exact ? SL_SOLVE_OPTIMAL : SL_SOLVE_FEASIBLE) :
	    SL_SOLVE_INFEASIBLE;
	r->sol.bound = r->bound;
	r->searched = true;
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
	held_free(c);
	if (c->o->fold == SL_FOLD_PEAK && c->o->limit > 0)
		held_tables(c);
	for (int v = 0; v < c->s->g->n_ops; v++) {
		int64_t m = INT64_MAX;
		for (int k = 0; k < c->s->ops[v].n_strat; k++)
			if (c->p->allowed[v][k] && weighed_node_mem(c, v, k) < m)
				m = weighed_node_mem(c, v, k);
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
	held_free(&c);
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

/* --recompute auto on the evaluator's sum (shardlab.h). */
int
sl_recompute_auto(sl_space *s, sl_problem *p, double alpha, int64_t capacity,
    sl_solver_kind kind, const sl_solve_opts *o, sl_recompute_choice *out,
    sl_error *err)
{
	sl_fit_opts fo = { .alpha = alpha, .limit = capacity, .fold = SL_FOLD_SUM,
	    .solver = kind, .solve = o, .recompute = true };
	sl_fit f;
	int rc = sl_fit_plan(s, p, &fo, &f, err);

	memset(out, 0, sizeof *out);
	out->n_layers = f.n_layers;
	out->n_recomputed = f.n_recomputed;
	out->fits = f.fits;
	out->max_total = f.mem;
	sl_fit_free(&f);
	return rc;
}
