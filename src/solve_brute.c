/*
 * solve_brute.c: exhaustive enumeration of every allowed assignment, the
 * third opinion on small problems.  Depth-first over the nodes in index
 * order; an edge is added once both its endpoints are fixed.  Partial sums
 * prune only when no cost is negative (then a partial sum never falls).
 */
#include "internal.h"

#include <stdlib.h>

/* Above this many assignments, enumeration is not a reasonable request. */
#define BRUTE_MAX_COMBOS 1e7
#define BRUTE_POLL 4096

struct brute {
	const sl_problem *p;
	sl_run *run;
	int *choice, *best;
	int64_t best_cost;
	bool found, prune, stopped, timed_out;
	int *close_start, *close_edge;	/* edges whose later endpoint is v */
	long polls;
};

static bool
brute_should_stop(struct brute *b)
{
	if (++b->polls % BRUTE_POLL != 0 || !sl_run_over(b->run))
		return false;
	if (sl_run_cancelled(b->run))
		b->stopped = true;
	else
		b->timed_out = true;
	return true;
}

static void
brute_dfs(struct brute *b, int v, int64_t sum)
{
	const sl_problem *p = b->p;

	if (b->stopped || b->timed_out)
		return;
	if (v == p->n) {
		if (brute_should_stop(b))
			return;
		if (b->found && sum >= b->best_cost)
			return;
		if (!sl_problem_feasible(p, b->choice))
			return;
		b->found = true;
		b->best_cost = sum;
		memcpy(b->best, b->choice, (size_t)p->n * sizeof *b->best);
		return;
	}
	for (int s = 0; s < p->k[v]; s++) {
		int64_t c;
		if (!p->allowed[v][s])
			continue;
		b->choice[v] = s;
		c = sl_add_sat(sum, p->cost[v][s]);
		for (int i = b->close_start[v]; i < b->close_start[v + 1]; i++) {
			int e = b->close_edge[i];
			int x = p->edge[e][0], y = p->edge[e][1];
			c = sl_add_sat(c, p->ecost[e][(size_t)b->choice[x] *
			    p->k[y] + b->choice[y]]);
		}
		if (b->prune && b->found && c >= b->best_cost)
			continue;
		brute_dfs(b, v + 1, c);
	}
}

int
sl_solve_brute(const sl_problem *p, const sl_solve_opts *o, sl_solution *sol,
    sl_error *err)
{
	sl_run run;

	sl_run_start(&run, o);
	return sl_run_brute(p, o, &run, sol, err);
}

int
sl_run_brute(const sl_problem *p, const sl_solve_opts *o, sl_run *run,
    sl_solution *sol, sl_error *err)
{
	struct brute b = { .p = p, .run = run, .prune = true };
	double combos = 1;

	(void)o;
	for (int e = 0; e < p->m; e++) {
		int u = p->edge[e][0], v = p->edge[e][1];
		if (u < 0 || u >= p->n || v < 0 || v >= p->n || u == v)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("brute: edge %d joins nodes %d and %d"), e, u, v);
	}
	for (int v = 0; v < p->n; v++) {
		int a = 0;
		for (int s = 0; s < p->k[v]; s++) {
			a += p->allowed[v][s] != 0;
			if (p->cost[v][s] < 0)
				b.prune = false;
		}
		combos *= a;
	}
	for (int e = 0; e < p->m && b.prune; e++) {
		size_t cells = (size_t)p->k[p->edge[e][0]] * p->k[p->edge[e][1]];
		for (size_t i = 0; i < cells; i++)
			if (p->ecost[e][i] < 0)
				b.prune = false;
	}
	if (combos > BRUTE_MAX_COMBOS) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("brute: %.3g assignments to enumerate, more than the %.0g "
		    "it takes on"), combos, BRUTE_MAX_COMBOS);
		return sl_error_fix(err, SL_SET_SOLVER, "dp or ilp");
	}

	if (sol->choice == NULL || sol->n != p->n) {
		free(sol->choice);
		sol->n = p->n;
		sol->choice = sl_xcalloc((size_t)(p->n > 0 ? p->n : 1),
		    sizeof *sol->choice);
	}
	sol->solver = SL_SOLVER_BRUTE;
	sol->confirmed = false;
	sol->objective = INT64_MAX;

	b.choice = sl_xcalloc((size_t)p->n + 1, sizeof *b.choice);
	b.best = sl_xcalloc((size_t)p->n + 1, sizeof *b.best);
	/* Each edge is closed at its later endpoint in the enumeration order. */
	b.close_start = sl_xcalloc((size_t)p->n + 2, sizeof *b.close_start);
	b.close_edge = sl_xmalloc(((size_t)p->m + 1) * sizeof *b.close_edge);
	for (int e = 0; e < p->m; e++) {
		int last = p->edge[e][0] > p->edge[e][1] ? p->edge[e][0] :
		    p->edge[e][1];
		b.close_start[last + 1]++;
	}
	for (int v = 0; v < p->n; v++)
		b.close_start[v + 1] += b.close_start[v];
	{
		int *fill = sl_xcalloc((size_t)p->n + 1, sizeof *fill);
		for (int e = 0; e < p->m; e++) {
			int last = p->edge[e][0] > p->edge[e][1] ?
			    p->edge[e][0] : p->edge[e][1];
			b.close_edge[b.close_start[last] + fill[last]++] = e;
		}
		free(fill);
	}

	if (combos > 0)
		brute_dfs(&b, 0, 0);
	if (b.found) {
		memcpy(sol->choice, b.best, (size_t)p->n * sizeof *sol->choice);
		sol->objective = sl_problem_score(p, sol->choice);
	}
	if (b.stopped)
		sol->status = SL_SOLVE_CANCELLED;
	else if (b.timed_out)
		sol->status = b.found ? SL_SOLVE_FEASIBLE : SL_SOLVE_LIMIT;
	else
		sol->status = b.found ? SL_SOLVE_OPTIMAL : SL_SOLVE_INFEASIBLE;
	free(b.choice);
	free(b.best);
	free(b.close_start);
	free(b.close_edge);
	sol->time_ms = sl_run_ms(run);
	return SL_OK;
}
