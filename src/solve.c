/*
 * solve.c: solver dispatch, in the run every solver shares (run.c).  auto
 * takes the exact DP; when the DP refuses (a usage limit, a core too wide)
 * small problems go to the ILP and larger ones to the anytime search.  On
 * small problems a second exact solver is asked for the same objective:
 * the two must agree in integer units, or something is wrong in one of
 * them.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

/* Problems this small (total strategies) are cross-checked by auto. */
#define SOLVE_CONFIRM_STRATS 2000
/* ... with the ILP given at most this long. */
#define SOLVE_CONFIRM_SECONDS 10.0
/* Brute force confirms only below this many assignments. */
#define SOLVE_CONFIRM_BRUTE 1e5
/*
 * GLPK computes in doubles, whose spacing reaches one unit at 2^52: from
 * there on it cannot tell apart plans a few units apart, and the plan it
 * calls optimal may cost a little more than the DP's exact optimum
 * (gpt-1.7b at a sequence of 2^31: 4,521,748,158,885,632 against
 * 4,521,748,157,171,456).  Past it a dearer plan from GLPK is no evidence
 * against the other solver; a cheaper one still is.
 */
#define SOLVE_DOUBLE_EXACT ((int64_t)1 << 52)
/*
 * Under a time limit, auto gives the DP at most this share of it to find
 * its elimination order, the step that decides whether it refuses: a
 * problem it would refuse leaves the rest to the solver that takes it.
 */
#define SOLVE_DP_SHARE 0.1

/* ------------------------------------------------------------ dispatch */

static int64_t
solve_total_strats(const sl_problem *p)
{
	int64_t t = 0;

	for (int v = 0; v < p->n; v++)
		t += p->k[v];
	return t;
}

static double
solve_combos(const sl_problem *p)
{
	double c = 1;

	for (int v = 0; v < p->n; v++) {
		int a = 0;
		for (int s = 0; s < p->k[v]; s++)
			a += p->allowed[v][s] != 0;
		c *= a;
	}
	return c;
}

/* Solver kind within run (auto excluded). */
static int
solve_kind(const sl_problem *p, sl_solver_kind kind, const sl_solve_opts *o,
    sl_run *run, sl_solution *sol, sl_error *err)
{
	switch (kind) {
	case SL_SOLVER_ILP:
		return sl_run_ilp(p, o, run, sol, err);
	case SL_SOLVER_BRUTE:
		return sl_run_brute(p, o, run, sol, err);
	case SL_SOLVER_ANYTIME:
		return sl_run_anytime(p, o, run, sol, err);
	default:
		return sl_run_dp(p, o, run, sol, err);
	}
}

/*
 * Runs another exact solver on p and compares, within what is left of the
 * run (at most SOLVE_CONFIRM_SECONDS).  Returns SL_OK (setting
 * sol->confirmed when they agree) or SL_EINTERNAL when two optima differ.
 */
static int
solve_confirm(const sl_problem *p, sl_solver_kind other, const sl_solve_opts *o,
    sl_run *run, sl_solution *sol, sl_error *err)
{
	sl_solve_opts co = { 0 };
	sl_solution alt;
	sl_run cr;
	sl_error e2;
	int rc;

	if (o != NULL) {
		co.cancel = o->cancel;
		co.cancel_ctx = o->cancel_ctx;
	}
	sl_run_within(&cr, run, SOLVE_CONFIRM_SECONDS * 1e3);
	if (sl_run_left(&cr) <= 0)
		return SL_OK;	/* no time left: no opinion */
	sl_error_clear(&e2);
	sl_solution_init(&alt, p->n);
	rc = solve_kind(p, other, &co, &cr, &alt, &e2);
	if (rc == SL_OK && other == SL_SOLVER_ILP &&
	    alt.status == SL_SOLVE_OPTIMAL && sol->status == SL_SOLVE_OPTIMAL &&
	    sl_ilp_verdict(sol->objective, alt.objective) == 0) {
		/* GLPK's rounding, not a disagreement: no opinion */
		size_t n = strlen(sol->note);
		snprintf(sol->note + n, sizeof sol->note - n, _("%snot confirmed: "
		    "the objective is past 2^52, where GLPK's doubles cannot tell "
		    "plans a unit apart"), n > 0 ? "; " : "");
	} else if (rc == SL_OK && alt.status == sol->status &&
	    (alt.status == SL_SOLVE_OPTIMAL || alt.status == SL_SOLVE_INFEASIBLE)) {
		if (alt.status == SL_SOLVE_INFEASIBLE ||
		    alt.objective == sol->objective)
			sol->confirmed = true;
		else
			rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
			    _("solvers disagree: %s found objective %lld, %s %lld"),
			    sl_solver_name(sol->solver),
			    (long long)sol->objective, sl_solver_name(other),
			    (long long)alt.objective);
	} else if (rc == SL_OK && alt.status == SL_SOLVE_OPTIMAL &&
	    sol->status == SL_SOLVE_INFEASIBLE) {
		rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("solvers disagree: %s found no plan, %s one of objective %lld"),
		    sl_solver_name(sol->solver), sl_solver_name(other),
		    (long long)alt.objective);
	} else
		rc = SL_OK;	/* the other could not answer: no opinion */
	sl_solution_free(&alt);
	return rc;
}

int
sl_ilp_verdict(int64_t exact, int64_t ilp)
{
	if (ilp == exact)
		return 1;
	return ilp > exact && exact >= SOLVE_DOUBLE_EXACT ? 0 : -1;
}

/* time_ms covers the answer (refusal included), not the cross-check. */
bool
sl_solve_auto_searches(const sl_problem *p)
{
	return solve_total_strats(p) > SOLVE_CONFIRM_STRATS;
}

/*
 * The DP, its elimination order found within SOLVE_DP_SHARE of the run:
 * SL_EINTERNAL when it refuses (dperr says why), as when it takes longer.
 */
static int
solve_auto_dp(const sl_problem *p, const sl_solve_opts *o, sl_run *run,
    sl_solution *sol, sl_error *dperr)
{
	sl_run order;
	sl_dp *d;
	int rc;

	sl_run_within(&order, run, run->deadline < INFINITY ?
	    SOLVE_DP_SHARE * (run->deadline - run->start) : -1);
	if ((d = sl_run_dp_new(p, o, &order, dperr)) == NULL) {
		if (!sl_run_over(run) && sl_run_over(&order)) {
			sl_error_clear(dperr);
			return sl_error_set(dperr, SL_EINTERNAL, NULL, 0, 0,
			    _("dp: no elimination order within %.2g s, its share of the time limit"),
			    (order.deadline - order.start) / 1e3);
		}
		return dperr->code != SL_OK ? dperr->code : SL_EINTERNAL;
	}
	rc = sl_run_dp_resolve(d, p, o, run, sol, dperr);
	sl_dp_free(d);
	return rc;
}

static int
solve_auto(const sl_problem *p, const sl_solve_opts *o, sl_run *run,
    sl_solution *sol, sl_error *err)
{
	sl_error dperr;
	int rc;

	sl_error_clear(&dperr);
	rc = solve_auto_dp(p, o, run, sol, &dperr);
	if (rc == SL_EINTERNAL && sl_run_cancelled(run)) {
		sol->status = SL_SOLVE_CANCELLED;
		sol->time_ms = sl_run_ms(run);
		return SL_OK;
	}
	if (rc == SL_EINTERNAL) {
		/* The DP refused (or failed): the ILP is the general path. */
		const char *why = dperr.msg;
		/* The DP's messages start with its own name. */
		if (strncmp(why, "dp: ", 4) == 0)
			why += 4;
		if (sl_solve_auto_searches(p)) {
			/* too big for GLPK within a usual limit: search */
			char reason[sizeof dperr.msg];
			snprintf(reason, sizeof reason, "%s", why);
			rc = sl_run_anytime(p, o, run, sol, err);
			if (rc != SL_OK)
				return rc;
			sol->solver = SL_SOLVER_ANYTIME;
			sol->time_ms = sl_run_ms(run);
			{
				char red[sizeof sol->note];
				snprintf(red, sizeof red, "%s", sol->note);
				snprintf(sol->note, sizeof sol->note,
				    _("dp refused: %s; solved with anytime (%s)"),
				    reason, red);
			}
			return SL_OK;
		}
		snprintf(sol->note, sizeof sol->note,
		    _("dp refused: %s; solved with ilp"), why);
		rc = sl_run_ilp(p, o, run, sol, err);
		if (rc != SL_OK)
			return rc;
		sol->solver = SL_SOLVER_ILP;
		sol->time_ms = sl_run_ms(run);
		if (sol->status == SL_SOLVE_OPTIMAL)
			sol->bound = sol->objective;
		if (solve_combos(p) <= SOLVE_CONFIRM_BRUTE &&
		    (sol->status == SL_SOLVE_OPTIMAL ||
		    sol->status == SL_SOLVE_INFEASIBLE))
			return solve_confirm(p, SL_SOLVER_BRUTE, o, run, sol, err);
		return SL_OK;
	}
	if (rc != SL_OK) {
		if (err != NULL && err->code == SL_OK)
			*err = dperr;
		return rc;
	}
	sol->solver = SL_SOLVER_DP;
	sol->time_ms = sl_run_ms(run);
	if (sol->status == SL_SOLVE_OPTIMAL)
		sol->bound = sol->objective;
	if (solve_total_strats(p) <= SOLVE_CONFIRM_STRATS &&
	    (sol->status == SL_SOLVE_OPTIMAL ||
	    sol->status == SL_SOLVE_INFEASIBLE))
		return solve_confirm(p, SL_SOLVER_ILP, o, run, sol, err);
	return SL_OK;
}

int
sl_solve(const sl_problem *p, sl_solver_kind kind, const sl_solve_opts *o,
    sl_solution *sol, sl_error *err)
{
	sl_run run;
	int rc;

	sl_run_start(&run, o);
	if (sol->choice == NULL || sol->n != p->n) {
		free(sol->choice);
		sol->n = p->n;
		sol->choice = sl_xcalloc((size_t)(p->n > 0 ? p->n : 1),
		    sizeof *sol->choice);
	}
	sol->note[0] = '\0';
	sol->confirmed = false;
	sol->bound = INT64_MIN;
	sol->first_ms = -1;
	switch (kind) {
	case SL_SOLVER_DP:
	case SL_SOLVER_ILP:
	case SL_SOLVER_BRUTE:
	case SL_SOLVER_ANYTIME:
		rc = solve_kind(p, kind, o, &run, sol, err);
		sol->solver = kind;
		break;
	case SL_SOLVER_AUTO:
		rc = solve_auto(p, o, &run, sol, err);
		if (rc == SL_OK && sol->first_ms < 0 &&
		    (sol->status == SL_SOLVE_OPTIMAL ||
		    sol->status == SL_SOLVE_FEASIBLE))
			sol->first_ms = sol->time_ms;
		return rc;
	default:
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("unknown solver %d"), (int)kind);
	}
	sol->time_ms = sl_run_ms(&run);
	if (rc == SL_OK && sol->status == SL_SOLVE_OPTIMAL)
		sol->bound = sol->objective;
	if (rc == SL_OK && sol->first_ms < 0 &&
	    (sol->status == SL_SOLVE_OPTIMAL || sol->status == SL_SOLVE_FEASIBLE))
		sol->first_ms = sol->time_ms;
	return rc;
}

/* ------------------------------------------------------ ties at alpha 0 */

/* Most solves the tie-break of alpha 0 may spend. */
#define SOLVE_TIE_MAX_SOLVES 64
/* As sweep.c: "communication only", kept well below each term's cap. */
#define SOLVE_TIE_ALPHA_MAX 1e12
#define SOLVE_TIE_TERM_LIMIT 1e15

/* A plan's memory and time as the objective sums them (space tables). */
typedef struct solve_point {
	int64_t mem, ns;
} solve_point;

static solve_point
solve_point_of(const sl_space *s, const sl_problem *p, const int *choice)
{
	solve_point pt = { 0, 0 };

	for (int v = 0; v < p->n; v++) {
		pt.mem = sl_add_sat(pt.mem, s->node_mem[v][choice[v]]);
		pt.ns = sl_add_sat(pt.ns, s->node_ns[v][choice[v]]);
	}
	for (int e = 0; e < p->m; e++) {
		int u = p->edge[e][0], v = p->edge[e][1];
		size_t i = (size_t)choice[u] * p->k[v] + choice[v];
		pt.mem = sl_add_sat(pt.mem, s->edge_mem[e][i]);
		pt.ns = sl_add_sat(pt.ns, s->edge_ns[e][i]);
	}
	return pt;
}

/* Whether c lies strictly below the segment from a to b (a.mem < b.mem,
 * a.ns > b.ns), in exact integer arithmetic. */
static bool
solve_point_below(solve_point a, solve_point b, solve_point c)
{
	/* (c - a) x (b - a) > 0 in the (ns, mem) plane */
	__int128 l = (__int128)(c.mem - a.mem) * (a.ns - b.ns);
	__int128 r = (__int128)(b.mem - a.mem) * (a.ns - c.ns);

	return l < r;
}

/* One exact solve of p at its present weights: the DP when there is one. */
static int
solve_tie_once(sl_dp *d, const sl_problem *p, sl_solver_kind kind,
    const sl_solve_opts *o, sl_solution *sol, sl_error *err)
{
	int rc = d != NULL ? sl_dp_resolve(d, p, o, sol, err) :
	    sl_solve(p, kind, o, sol, err);

	if (rc == SL_OK && sol->status != SL_SOLVE_OPTIMAL)
		rc = SL_EINTERNAL;	/* not proven: keep what is proven */
	return rc;
}

/*
 * At alpha 0 the objective is memory alone, and plans of equal memory are
 * common (an operator whose strategies hold the same bytes and move
 * different ones); the solvers return any of them.  Among the plans of
 * least memory this finds one of least communication, i.e. the optimum of
 * memory + alpha * time for every alpha in (0, a1), a1 the frontier's first
 * breakpoint: the first vertex of the lower envelope, which sl_sweep lists
 * first.  A lexicographic weight (memory x 2^k + time) would be exact in
 * one solve, but memory x 2^k + time does not fit the 2^53 that every term
 * and GLPK's sums are exact in.  So the same parametric search as the
 * sweep's (Eisner and Severance 1976) runs on the first segment only: a
 * plan A of least memory, B of least time; at the alpha where their lines
 * cross, a plan below both either has A's memory and less time (it becomes
 * A) or more memory (it becomes B); when none is below, A is the answer.
 * Each solve is exact in integer units; only plans of A's memory replace
 * it, so the memory stays optimal whatever the search does.  Every step
 * either lowers A's time or cuts the segment, so it ends.
 */
static int
solve_tie_break(const sl_space *s, sl_problem *p, sl_dp *d, sl_solver_kind kind,
    const sl_solve_opts *o, sl_solution *sol, sl_error *err)
{
	sl_solution t;
	sl_error e2;
	sl_dp *own = NULL;
	solve_point a, b, c;
	double amax = SOLVE_TIE_ALPHA_MAX, tmax = 0;
	int solves = 0, rc = SL_OK;

	a = solve_point_of(s, p, sol->choice);
	if (a.ns == 0)
		return SL_OK;
	for (int v = 0; v < p->n; v++)
		for (int i = 0; i < p->k[v]; i++)
			if ((double)s->node_ns[v][i] > tmax)
				tmax = (double)s->node_ns[v][i];
	for (int e = 0; e < p->m; e++) {
		size_t n = (size_t)p->k[p->edge[e][0]] * p->k[p->edge[e][1]];
		for (size_t i = 0; i < n; i++)
			if ((double)s->edge_ns[e][i] > tmax)
				tmax = (double)s->edge_ns[e][i];
	}
	if (tmax > 0 && amax * tmax / 1000.0 > SOLVE_TIE_TERM_LIMIT)
		amax = SOLVE_TIE_TERM_LIMIT * 1000.0 / tmax;
	sl_error_clear(&e2);
	if (d == NULL && (kind == SL_SOLVER_AUTO || kind == SL_SOLVER_DP))
		d = own = sl_dp_new(p, o, &e2);
	sl_solution_init(&t, p->n);

	sl_space_reweigh(s, amax, p);
	if (solve_tie_once(d, p, kind, o, &t, &e2) != SL_OK)
		goto out;
	solves++;
	b = solve_point_of(s, p, t.choice);
	if (b.mem == a.mem && b.ns < a.ns) {
		/* the plan of least time has the least memory too */
		memcpy(sol->choice, t.choice, (size_t)p->n * sizeof *t.choice);
		a = b;
	}
	while (a.ns > b.ns && a.mem < b.mem && solves < SOLVE_TIE_MAX_SOLVES) {
		double alpha = 1000.0 * (double)(b.mem - a.mem) /
		    (double)(a.ns - b.ns);

		sl_space_reweigh(s, alpha, p);
		if (solve_tie_once(d, p, kind, o, &t, &e2) != SL_OK)
			break;
		solves++;
		c = solve_point_of(s, p, t.choice);
		if (c.mem == a.mem && c.ns < a.ns) {
			memcpy(sol->choice, t.choice,
			    (size_t)p->n * sizeof *t.choice);
			a = c;
		} else if (c.mem > a.mem && solve_point_below(a, b, c)) {
			b = c;
		} else {
			break;
		}
	}
out:
	/* back to alpha 0, and the live DP in step with it */
	sl_space_reweigh(s, 0, p);
	if (d != NULL && own == NULL)
		rc = sl_dp_resolve(d, p, o, &t, err);
	sl_solution_free(&t);
	sl_dp_free(own);
	sol->objective = sl_problem_score(p, sol->choice);
	if (sol->status == SL_SOLVE_OPTIMAL)
		sol->bound = sol->objective;
	return rc;
}

int
sl_space_solve(const sl_space *s, sl_problem *p, double alpha, sl_dp *d,
    sl_solver_kind kind, const sl_solve_opts *o, sl_solution *sol,
    sl_error *err)
{
	double first_ms, t0;
	int rc;

	rc = d != NULL ? sl_dp_resolve(d, p, o, sol, err) :
	    sl_solve(p, kind, o, sol, err);
	if (rc != SL_OK || s == NULL || alpha > 0 || sol->status != SL_SOLVE_OPTIMAL ||
	    p->usage_limit >= 0)
		return rc;
	/* the solver's time, and the tie-break's (not a confirmation's) */
	first_ms = sol->time_ms;
	t0 = sl_run_clock();
	rc = solve_tie_break(s, p, d, kind, o, sol, err);
	sol->time_ms = first_ms + sl_run_clock() - t0;
	return rc;
}
