/*
 * solve_anytime.c: the anytime solver for general strategy graphs with a
 * memory usage limit over liveness intervals (IOPDDL problems, and model
 * graphs that do not fold).  It has a plan that keeps the limit early and
 * improves it until the time limit (doc/anytime.md):
 *
 *   1. small problems are enumerated; mid-sized ones go to GLPK after the
 *      search (sl_solve_anytime);
 *   2. exact reductions (reduce.c): nodes joined by one-to-one edges
 *      merged (their memory kept as pieces over several intervals),
 *      dominated strategies removed, nodes of fixed usage on chains and
 *      leaves contracted;
 *   3. the least-usage plan (if it breaks the limit, every plan does, or
 *      with merged nodes when every piece on its least does; else it is
 *      repaired), improved by single-node moves that keep the limit;
 *   4. the limit priced into node costs by multipliers per time segment
 *      (at_priced_search): the priced problem is searched without the
 *      limit, its plan repaired to the limit and improved under it, and
 *      the best plan relinked towards it (at_relink); from
 *      the third round on, TRW-S (trws.c) on the problem priced by
 *      multipliers of its own adds candidates and a lower bound (at_trws);
 *   5. a Lagrangian lower bound over a spanning forest (at_lag_*);
 *   6. large neighbourhood search (at_lns): balls of the graph re-solved
 *      exactly by the elimination DP, induced trees by a tree DP, moves of
 *      every node over a random spanning forest, and compound moves along
 *      impossible pairs; a move that gains but breaks the limit is paid
 *      for by freeing memory elsewhere when that costs less (at_fix).
 *
 * Plans over the limit are repaired (at_repair) by the moves that cost
 * least per byte saved at the peak, compound ones where a single move
 * would leave a neighbour on an impossible pair.
 *
 * The load over time lives in a segment tree with range add and range max
 * over the distinct interval ends, so a move is checked in O(log T).
 *
 * This file has the entry; the schedule of one search (at_search) and the
 * rest are in the anytime_*.c files, whose map is anytime.h.
 */
#include "anytime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Below this many assignments the whole problem is enumerated first. */
#define AT_ENUM_COMBOS 2e5
/* Default time limit when none is given (seconds); problems GLPK can take
 * get it after a fifth of this, without a limit, as before there was a
 * search. */
#define AT_DEFAULT_LIMIT SL_ANYTIME_DEFAULT_TIME_LIMIT

/*
 * Tries every assignment when there are few: exact, usage limit included.
 * Returns true when it answered.
 */
static bool
at_enumerate(const sl_problem *p, const sl_solve_opts *o, sl_run *run,
    sl_solution *sol, sl_error *err)
{
	double c = 1;

	for (int v = 0; v < p->n; v++) {
		int n = 0;
		for (int s = 0; s < p->k[v]; s++)
			n += p->allowed[v][s] != 0;
		c *= n > 0 ? n : 1;
	}
	if (c > AT_ENUM_COMBOS)
		return false;
	if (sl_run_brute(p, o, run, sol, err) != SL_OK)
		return false;
	if (sol->status != SL_SOLVE_OPTIMAL && sol->status != SL_SOLVE_INFEASIBLE)
		return false;
	sol->bound = sol->status == SL_SOLVE_OPTIMAL ? sol->objective : INT64_MAX;
	sol->first_ms = sol->time_ms;
	return true;
}

/* The ILP gets problems of at most this many strategies ... */
#define AT_ILP_STRATS 20000
/* ... when the time limit is at least this long; the search takes this share. */
#define AT_ILP_MIN_SECONDS 20.0
#define AT_ILP_SEARCH_SHARE 0.2
/* ... or whatever the limit when this small (GLPK takes them in moments). */
#define AT_ILP_SMALL 2000

static int
at_strats(const sl_problem *p)
{
	int t = 0;

	for (int v = 0; v < p->n; v++)
		t += p->k[v];
	return t;
}

static bool
at_ilp_fits(const sl_problem *p)
{
	double t = 0;

	for (int v = 0; v < p->n; v++)
		t += p->k[v];
	return t <= AT_ILP_STRATS;
}

/*
 * GLPK on the whole problem with the time left in run (none: until it
 * proves its optimum); kept when it does better.  It is handed nine tenths
 * of what is left: its solve ends within 10% of the time it is given (a
 * branch-and-bound node's LP runs on past its clock), and G at 120 s on a
 * loaded machine ended at 124.7 s with 97%.
 */
static void
at_ilp(const sl_problem *p, const sl_solve_opts *o, const sl_run *run,
    sl_solution *sol)
{
	sl_solution alt;
	sl_run ir;
	sl_error err;

	sl_run_within(&ir, run, -1);
	sl_run_shrink(&ir, 0.9, 0);
	if (sl_run_left(&ir) < 50)
		return;
	sl_error_clear(&err);
	sl_solution_init(&alt, p->n);
	if (sl_run_ilp(p, o, &ir, &alt, &err) == SL_OK &&
	    (alt.status == SL_SOLVE_OPTIMAL || alt.status == SL_SOLVE_FEASIBLE) &&
	    sl_problem_feasible(p, alt.choice)) {
		int64_t obj = sl_problem_score(p, alt.choice);
		/* a plan with an impossible pair is no answer, GLPK's neither */
		if (obj <= sol->objective && obj < AT_IMPOSSIBLE) {
			memcpy(sol->choice, alt.choice, (size_t)p->n * sizeof *alt.choice);
			sol->objective = obj;
			if (sol->status == SL_SOLVE_LIMIT)
				sol->status = SL_SOLVE_FEASIBLE;
			if (alt.status == SL_SOLVE_OPTIMAL) {
				/* GLPK proved it */
				sol->bound = obj;
				sol->status = SL_SOLVE_OPTIMAL;
			}
		}
	}
	sl_solution_free(&alt);
}

int
sl_solve_anytime(const sl_problem *p, const sl_solve_opts *o, sl_solution *sol,
    sl_error *err)
{
	sl_run run;

	sl_run_start(&run, o);
	return sl_run_anytime(p, o, &run, sol, err);
}

int
sl_run_anytime(const sl_problem *p, const sl_solve_opts *o, sl_run *run,
    sl_solution *sol, sl_error *err)
{
	sl_reduction red;
	at a;
	bool use_ilp, unlimited = run->deadline == INFINITY;
	bool search_only = o != NULL && o->search_only;
	long double lb;
	bool infeasible;
	/* the time it has (its default when none), in ms */
	double limit = unlimited ? AT_DEFAULT_LIMIT * 1e3 : sl_run_left(run);
	int rc;

	memset(&a, 0, sizeof a);
	if (p->usage_limit >= 0 && (p->interval == NULL || p->usage == NULL))
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("anytime: a usage limit needs intervals and usages"));
	/* problems GLPK can prove in the time: search first, then the ILP */
	use_ilp = !search_only && at_ilp_fits(p) &&
	    (unlimited || limit >= AT_ILP_MIN_SECONDS * 1e3 ||
	    at_strats(p) <= AT_ILP_SMALL);
	/* the search's own run: a share before GLPK, or all of it less room
	 * to expand the plan and hand it back */
	sl_run_within(&a.run, run, use_ilp ? limit * AT_ILP_SEARCH_SHARE :
	    limit * 0.97 - 20);
	a.deadline_ms = a.run.deadline - a.run.start;
	if (!search_only && at_enumerate(p, o, &a.run, sol, err))
		return SL_OK;
	sl_error_clear(err);
	if ((rc = sl_reduce(p, &red, err)) != SL_OK)
		return rc;
	/* impossible pairs counted, not saturated (a bound stays a bound:
	 * lowering costs only lowers the optimum) */
	for (int v = 0; v < red.q->n; v++)
		for (int s = 0; s < red.q->k[v]; s++)
			if (red.q->cost[v][s] >= AT_IMPOSSIBLE)
				red.q->cost[v][s] = AT_HARD;
	for (int e = 0; e < red.q->m; e++) {
		size_t cells = (size_t)red.q->k[red.q->edge[e][0]] *
		    (size_t)red.q->k[red.q->edge[e][1]];
		for (size_t c = 0; c < cells; c++)
			if (red.q->ecost[e][c] >= AT_IMPOSSIBLE)
				red.q->ecost[e][c] = AT_HARD;
	}
	a.o = o;
	a.until_ms = a.deadline_ms;
	at_portfolio(&a, &red, p->interval != NULL && p->usage != NULL,
	    at_threads(o), &lb, &infeasible);
	if (a.run.cancelled) {
		sol->status = SL_SOLVE_CANCELLED;
	} else if (infeasible) {
		sol->status = SL_SOLVE_INFEASIBLE;
		sol->bound = INT64_MAX;
	} else if (a.best_cost == INT64_MAX) {
		sol->status = SL_SOLVE_LIMIT;
	} else {
		sl_reduce_expand(&red, a.best, sol->choice);
		sol->objective = sl_problem_score(p, sol->choice);
		if (a.best_cost >= AT_HARD || sol->objective >= AT_IMPOSSIBLE) {
			/* it keeps the limit but takes an impossible pair (in
			 * the search, or in what the reductions contracted) */
			sol->status = SL_SOLVE_LIMIT;
			sol->objective = INT64_MAX;
			goto done;
		}
		/* a proof is exact; a relaxation's bound is rounded up */
		sol->bound = a.proved ? sl_add_sat(a.best_cost, red.offset) :
		    sl_reduce_bound(&red, lb);
		if (sol->bound > sol->objective)
			sol->bound = sol->objective;	/* rounding of the prices */
		sol->status = sol->bound >= sol->objective ? SL_SOLVE_OPTIMAL :
		    SL_SOLVE_FEASIBLE;
		if (!sl_problem_feasible(p, sol->choice)) {
			at_free(&a);
			sl_reduce_free(&red);
			return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
			    _("anytime: the plan found breaks the usage limit"));
		}
	}
done:
	sol->first_ms = a.first_ms;
	if (use_ilp && !a.run.cancelled && !infeasible &&
	    sol->status != SL_SOLVE_OPTIMAL && !(o != NULL && o->first_plan))
		at_ilp(p, o, run, sol);
	snprintf(sol->note, sizeof sol->note,
	    _("reductions: %d nodes merged into %d along one-to-one edges, %d of %d strategies dominated, %d leaves and %d chain nodes of %d contracted, %d nodes in %d groups of identical subgraphs, %d of them solved as copies; %ld windows, %ld improvements%s"),
	    red.joined + red.join_groups, red.join_groups, red.dominated,
	    at_strats(p), red.leaves, red.chains, p->n, red.twin_nodes,
	    red.twins.ngroups, red.merged, a.windows, a.improved,
	    use_ilp ? _("; then ilp") : "");
	at_free(&a);
	sl_reduce_free(&red);
	return SL_OK;
}
