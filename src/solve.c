/*
 * solve.c: the solver run (one clock, deadline and cancel for every
 * solver) and solver dispatch.  auto takes the exact DP; when the DP
 * refuses (a usage limit, a core too wide) small problems go to the ILP and
 * larger ones to the anytime search.  On small problems a second exact
 * solver is asked for the same objective: the two must agree in integer
 * units, or something is wrong in one of them.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

/* Problems this small (total strategies) are cross-checked by auto. */
#define SOLVE_CONFIRM_STRATS 2000
/* ... with the ILP given at most this long. */
#define SOLVE_CONFIRM_SECONDS 10.0
/* Brute force confirms only below this many assignments. */
#define SOLVE_CONFIRM_BRUTE 1e5
/*
 * Under a time limit, auto gives the DP at most this share of it to find
 * its elimination order, the step that decides whether it refuses: a
 * problem it would refuse leaves the rest to the solver that takes it.
 */
#define SOLVE_DP_SHARE 0.1

/* ------------------------------------------------------------- the run */

double
sl_run_clock(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

void
sl_run_start(sl_run *r, const sl_solve_opts *o)
{
	memset(r, 0, sizeof *r);
	r->start = sl_run_clock();
	r->deadline = o != NULL && o->time_limit > 0 ?
	    r->start + o->time_limit * 1e3 : INFINITY;
	if (o != NULL) {
		r->cancel = o->cancel;
		r->cancel_ctx = o->cancel_ctx;
	}
}

void
sl_run_within(sl_run *r, const sl_run *outer, double ms)
{
	*r = *outer;
	r->start = sl_run_clock();
	if (ms >= 0 && r->start + ms < r->deadline)
		r->deadline = r->start + ms;
}

void
sl_run_shrink(sl_run *r, double share, double margin_ms)
{
	if (r->deadline < INFINITY)
		r->deadline = r->start + (r->deadline - r->start) * share -
		    margin_ms;
}

double
sl_run_ms(const sl_run *r)
{
	return sl_run_clock() - r->start;
}

double
sl_run_left(const sl_run *r)
{
	return r->deadline < INFINITY ? r->deadline - sl_run_clock() : INFINITY;
}

bool
sl_run_cancelled(sl_run *r)
{
	if (!r->cancelled && r->cancel != NULL && r->cancel(r->cancel_ctx))
		r->cancelled = true;
	return r->cancelled || (r->stop != NULL &&
	    atomic_load_explicit(r->stop, memory_order_relaxed));
}

bool
sl_run_over(sl_run *r)
{
	return sl_run_cancelled(r) || (r->deadline < INFINITY &&
	    sl_run_clock() >= r->deadline);
}

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
	if (rc == SL_OK && alt.status == sol->status &&
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
