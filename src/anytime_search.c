/*
 * anytime_search.c: the schedule of one anytime search on a reduced
 * problem (at_search; steps 3 to 6 of solve_anytime.c): the lightest plan,
 * repaired to the limit and improved by ICM, the limit priced into the
 * costs, the Lagrangian bound, then the large neighbourhood search until
 * the deadline.  The portfolio (anytime_portfolio.c) runs it side by side.
 */
#include "anytime.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * Whether the limit is broken even with every piece on its least usage
 * (strategies chosen piece by piece, which a merged node cannot do): then
 * no plan keeps it.
 */
static bool
at_lightest_over(const at *a)
{
	int64_t *load = sl_xcalloc((size_t)a->nseg + 1, sizeof *load), cur = 0;
	bool over = false;

	for (int v = 0; v < a->n; v++)
		for (int j = a->poff[v]; j < a->poff[v + 1]; j++) {
			int64_t u = INT64_MAX;
			for (int s = 0; s < a->p->k[v]; s++)
				if (a->ok[v][s] && a->puse[j][s] < u)
					u = a->puse[j][s];
			load[a->plo[j]] += u;
			load[a->phi[j]] -= u;
		}
	for (int q = 0; q < a->nseg && !over; q++) {
		cur += load[q];
		over = cur + a->base[q] > a->limit;
	}
	free(load);
	return over;
}

/*
 * The search on a reduced problem.  On return a->best holds the best plan
 * (a->best_cost INT64_MAX when none), *bound the best lower bound.
 */
void
at_search(at *a, long double *bound, bool *infeasible)
{
	const sl_problem *p = a->p;
	long double lb = -INFINITY;

	*infeasible = false;
	/* 1. least usage everywhere: the lightest plan there is, unless a
	 * merged node's pieces are lightest on different strategies */
	for (int v = 0; v < a->n; v++) {
		int bs = -1;
		for (int s = 0; s < p->k[v]; s++) {
			if (!a->ok[v][s])
				continue;
			if (bs < 0 || (a->has_mem &&
			    a->usum[v][s] < a->usum[v][bs]) ||
			    ((!a->has_mem || a->usum[v][s] == a->usum[v][bs]) &&
			    p->cost[v][s] < p->cost[v][bs]))
				bs = s;
		}
		if (bs < 0) {
			*infeasible = true;
			*bound = INFINITY;
			return;
		}
		a->x[v] = bs;
	}
	at_load_reset(a);
	if (at_peak(a) > a->limit && at_lightest_over(a)) {
		*infeasible = true;
		*bound = INFINITY;
		return;
	}
	a->cost = at_score(a);
	if (at_peak(a) > a->limit)
		at_repair(a);
	at_record(a);
	if (a->n == 0) {
		/* everything was contracted: the plan is exact */
		a->proved = true;
		*bound = a->best_cost;
		return;
	}
	a->until_ms = at_ms(a) + AT_FIRST_SLICE;
	at_icm(a);
	a->until_ms = a->deadline_ms;
	/* 2. the limit priced into the costs, from the lightest plan */
	if (a->has_mem)
		at_priced_search(a, &lb);

	/* 3. Lagrangian relaxation of the limit over a spanning forest: a bound */
	at_lag_bound(a, &lb);

	/* 4. large neighbourhood search from the best plan */
	memcpy(a->x, a->best, (size_t)a->n * sizeof *a->x);
	a->cost = a->best_cost;
	at_load_reset(a);
	at_lns(a, lb, a->deadline_ms);
	*bound = a->proved ? (long double)a->best_cost : lb;
}
