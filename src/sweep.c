/*
 * sweep.c: the alpha frontier.  Every plan's objective is a line in alpha,
 * mem + alpha * comm / 1000, so the optimum over alpha is the lower envelope
 * of those lines: concave and piecewise linear.  Its vertices are found by
 * the classic parametric search (Eisner and Severance 1976): solve at both
 * ends, then where the two plans' lines cross; a plan strictly below the
 * crossing is a new vertex and splits the interval, otherwise the crossing is
 * a breakpoint.  Exact solves go through one live DP (sl_dp) re-weighed per
 * alpha; plans are scored by the evaluator.
 */
#include "internal.h"

#include <stdlib.h>

/* Most exact solves one sweep may spend. */
#define SWEEP_MAX_SOLVES 400
/* Nominal "communication only" weight (bytes per microsecond). */
#define SWEEP_ALPHA_MAX 1e12
/* Keep every weighed term well below its cap (sl_weigh: 2^53). */
#define SWEEP_TERM_LIMIT 1e15

typedef struct sweep_plan {
	int64_t mem, comm;
	int64_t step_ns;
	double tokens_per_s, mfu;
	int *choice;
} sweep_plan;

typedef struct sweep {
	const sl_space *s;
	sl_problem *p;
	sl_solver_kind kind;
	sl_dp *dp;
	sl_solution sol;
	int nplan, capplan;
	sweep_plan *plan;
	int solves;
	const sl_solve_opts *o;
	sl_run run;
} sweep;

/* Solves at alpha; returns the plan's index (existing when equal). */
static int
sweep_solve(sweep *w, double alpha, int *out, sl_error *err)
{
	sl_eval ev;
	int rc;

	if (sl_run_over(&w->run))
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
		    sl_run_cancelled(&w->run) ? _("sweep: cancelled") :
		    _("sweep: the time limit ran out"));
	if (++w->solves > SWEEP_MAX_SOLVES)
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
		    _("sweep: too many solves; the frontier is not converging"));
	sl_space_reweigh(w->s, alpha, w->p);
	if (w->dp != NULL)
		rc = sl_run_dp_resolve(w->dp, w->p, w->o, &w->run, &w->sol, err);
	else
		rc = sl_solve(w->p, w->kind, w->o, &w->sol, err);
	if (rc != SL_OK)
		return rc;
	if (w->sol.status == SL_SOLVE_INFEASIBLE)
		return sl_error_set(err, SL_EINFEASIBLE, NULL, 0, 0, "%s",
		    _("sweep: no plan satisfies the pins and forbids"));
	if (w->sol.status != SL_SOLVE_OPTIMAL)
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("sweep: the solver stopped without an optimum (%s) at alpha %g"),
		    sl_solve_status_name(w->sol.status), alpha);
	if ((rc = sl_evaluate(w->s, w->sol.choice, alpha, &ev, err)) != SL_OK)
		return rc;
	for (int i = 0; i < w->nplan; i++)
		if (w->plan[i].mem == ev.mem_part && w->plan[i].comm == ev.comm_ns) {
			sl_eval_free(&ev);
			*out = i;
			return SL_OK;
		}
	if (w->nplan == w->capplan) {
		w->capplan = w->capplan ? 2 * w->capplan : 16;
		w->plan = sl_xrealloc(w->plan, (size_t)w->capplan * sizeof *w->plan);
	}
	w->plan[w->nplan].mem = ev.mem_part;
	w->plan[w->nplan].comm = ev.comm_ns;
	w->plan[w->nplan].step_ns = ev.step_ns;
	w->plan[w->nplan].tokens_per_s = ev.tokens_per_s;
	w->plan[w->nplan].mfu = ev.mfu;
	w->plan[w->nplan].choice = sl_xmalloc((size_t)w->p->n * sizeof(int));
	memcpy(w->plan[w->nplan].choice, w->sol.choice, (size_t)w->p->n * sizeof(int));
	sl_eval_free(&ev);
	*out = w->nplan++;
	return SL_OK;
}

/* Whether plan c lies strictly below the line through a and b (a.comm > b.comm). */
static bool
sweep_below(const sweep_plan *a, const sweep_plan *b, const sweep_plan *c)
{
	__int128 l = (__int128)(c->mem - a->mem) * (a->comm - b->comm);
	__int128 r = (__int128)(c->comm - a->comm) * (b->mem - a->mem);

	return l + r < 0;
}

static double
sweep_cross(const sweep_plan *a, const sweep_plan *b)
{
	return 1000.0 * (double)(b->mem - a->mem) / (double)(a->comm - b->comm);
}

/* Vertices between plans a (less memory) and b (less communication). */
static int
sweep_between(sweep *w, int a, int b, sl_error *err)
{
	const sweep_plan *A, *B;
	double alpha;
	int c, rc;

	A = &w->plan[a];
	B = &w->plan[b];
	if (A->comm <= B->comm || A->mem >= B->mem)
		return SL_OK;
	alpha = sweep_cross(A, B);
	if ((rc = sweep_solve(w, alpha, &c, err)) != SL_OK)
		return rc;
	if (c == a || c == b || !sweep_below(&w->plan[a], &w->plan[b], &w->plan[c]))
		return SL_OK;
	if ((rc = sweep_between(w, a, c, err)) != SL_OK)
		return rc;
	return sweep_between(w, c, b, err);
}

static int
sweep_cmp(const void *x, const void *y)
{
	const sweep_plan *a = x, *b = y;

	if (a->mem != b->mem)
		return a->mem < b->mem ? -1 : 1;
	return (a->comm > b->comm) - (a->comm < b->comm);
}

/* Largest communication time of one term (ns), from costs at alpha 1000 and 0. */
static double
sweep_max_term_ns(sweep *w)
{
	sl_problem *p = w->p;
	int64_t best = 0;
	sl_problem *q = sl_problem_copy(p);

	sl_space_reweigh(w->s, 0, q);
	sl_space_reweigh(w->s, 1000.0, p);
	for (int v = 0; v < p->n; v++)
		for (int s = 0; s < p->k[v]; s++)
			if (p->cost[v][s] - q->cost[v][s] > best)
				best = p->cost[v][s] - q->cost[v][s];
	for (int e = 0; e < p->m; e++) {
		size_t n = (size_t)p->k[p->edge[e][0]] * p->k[p->edge[e][1]];
		for (size_t i = 0; i < n; i++)
			if (p->ecost[e][i] - q->ecost[e][i] > best)
				best = p->ecost[e][i] - q->ecost[e][i];
	}
	sl_problem_free(q);
	return (double)best;
}

int
sl_sweep(const sl_space *s, const sl_constraints *cs, sl_solver_kind kind,
    const sl_solve_opts *o, sl_frontier *f, sl_error *err)
{
	sweep w;
	double amax = SWEEP_ALPHA_MAX, tmax;
	int a, b, rc, keep;

	memset(f, 0, sizeof *f);
	memset(&w, 0, sizeof w);
	w.s = s;
	w.kind = kind;
	w.o = o;
	sl_run_start(&w.run, o);
	w.p = sl_space_problem(s, 0, cs, err);
	if (w.p == NULL)
		return err != NULL && err->code != SL_OK ? err->code : SL_EINTERNAL;
	sl_solution_init(&w.sol, w.p->n);
	if (kind == SL_SOLVER_DP || kind == SL_SOLVER_AUTO) {
		sl_error e2;
		sl_error_clear(&e2);
		w.dp = sl_run_dp_new(w.p, o, &w.run, kind == SL_SOLVER_DP ?
		    err : &e2);
		if (w.dp == NULL && kind == SL_SOLVER_DP) {
			rc = err != NULL ? err->code : SL_EINTERNAL;
			goto out;
		}
	}
	/* the top end: communication dominates, and no term reaches its cap */
	tmax = sweep_max_term_ns(&w);
	if (tmax > 0 && amax * tmax / 1000.0 > SWEEP_TERM_LIMIT)
		amax = SWEEP_TERM_LIMIT * 1000.0 / tmax;

	if ((rc = sweep_solve(&w, 0, &a, err)) != SL_OK ||
	    (rc = sweep_solve(&w, amax, &b, err)) != SL_OK ||
	    (rc = sweep_between(&w, a, b, err)) != SL_OK)
		goto out;

	/* the lower envelope: memory up, communication strictly down, convex */
	qsort(w.plan, (size_t)w.nplan, sizeof *w.plan, sweep_cmp);
	keep = 0;
	for (int i = 0; i < w.nplan; i++) {
		sweep_plan P = w.plan[i];
		if (keep > 0 && P.comm >= w.plan[keep - 1].comm) {
			free(P.choice);
			continue;
		}
		while (keep >= 2 &&
		    !sweep_below(&w.plan[keep - 2], &P, &w.plan[keep - 1])) {
			free(w.plan[keep - 1].choice);
			keep--;
		}
		w.plan[keep++] = P;
	}
	w.nplan = keep;
	f->n = keep;
	f->pt = sl_xcalloc((size_t)(keep ? keep : 1), sizeof *f->pt);
	for (int i = 0; i < keep; i++) {
		sl_frontier_point *pt = &f->pt[i];
		pt->mem = w.plan[i].mem;
		pt->comm_ns = w.plan[i].comm;
		pt->step_ns = w.plan[i].step_ns;
		pt->tokens_per_s = w.plan[i].tokens_per_s;
		pt->mfu = w.plan[i].mfu;
		pt->choice = w.plan[i].choice;
		w.plan[i].choice = NULL;
		pt->alpha_lo = i == 0 ? 0 : f->pt[i - 1].alpha_hi;
		pt->alpha_hi = i + 1 < keep ?
		    sweep_cross(&w.plan[i], &w.plan[i + 1]) : -1;
	}
	w.nplan = 0;
	rc = SL_OK;
out:
	for (int i = 0; i < w.nplan; i++)
		free(w.plan[i].choice);
	free(w.plan);
	sl_dp_free(w.dp);
	sl_solution_free(&w.sol);
	sl_problem_free(w.p);
	return rc;
}

void
sl_frontier_free(sl_frontier *f)
{
	if (f == NULL)
		return;
	for (int i = 0; i < f->n; i++)
		free(f->pt[i].choice);
	free(f->pt);
	f->pt = NULL;
	f->n = 0;
}
