/*
 * anytime_price.c: the usage limit priced into node costs: the Lagrangian
 * bound over a spanning forest, the priced search's rounds (multipliers
 * per time segment, their first raise the price that clears the first
 * excess) and TRW-S (trws.c) on the priced problem for bounds and plans.
 */
#include "anytime.h"

#include <math.h>
#include <stdlib.h>
/*
 * Longest priced round (ms).  The multipliers move once a round; on the
 * contest's instance S a dozen rounds of 15 s left them swinging between
 * plans over the limit and dearer ones under it (doc/anytime.md).
 */
#define AT_ROUND_MAX 4000.0
/* Most TRW-S iterations in one priced round. */
#define AT_TRWS_ITERS 30

/* ------------------------------------------------ Lagrangian lower bound */

struct at_lag {
	/* spanning forest in BFS order: per position its node, its parent's
	 * position and its edge; pos a node's position */
	int *order, *par, *pe, *pos;
	bool *tree;		/* edge in the forest */
	int64_t *u;		/* unary per strategy, CSR by position */
	size_t *uoff;
	int *arg;		/* argmin per parent strategy, CSR by position */
	size_t *aoff;
	int *ys;		/* relaxed optimum by position */
	double *lambda;		/* multiplier per segment */
	double *Lam;		/* sum of lambda over each piece's segments */
	int *xs;		/* relaxed optimum */
	int64_t *load;
};

static void
at_lag_init(at *a, struct at_lag *L)
{
	const sl_problem *p = a->p;
	int n = a->n, nw = 0;
	bool *seen = sl_xcalloc((size_t)n + 1, sizeof *seen);
	size_t uo = 0, ao = 0;

	L->order = sl_xmalloc(((size_t)n + 1) * sizeof *L->order);
	L->par = sl_xmalloc(((size_t)n + 1) * sizeof *L->par);
	L->pe = sl_xmalloc(((size_t)n + 1) * sizeof *L->pe);
	L->pos = sl_xmalloc(((size_t)n + 1) * sizeof *L->pos);
	L->tree = sl_xcalloc((size_t)p->m + 1, sizeof *L->tree);
	for (int r = 0; r < n; r++) {
		int head = nw;
		if (seen[r])
			continue;
		seen[r] = true;
		L->par[nw] = -1;
		L->pe[nw] = -1;
		L->order[nw++] = r;
		while (head < nw) {
			int v = L->order[head++];
			for (int i = a->aoff[v]; i < a->aoff[v + 1]; i++) {
				int e = a->aedge[i], w = at_other(p, e, v);
				if (seen[w])
					continue;
				seen[w] = true;
				L->tree[e] = true;
				L->par[nw] = head - 1;
				L->pe[nw] = e;
				L->order[nw++] = w;
			}
		}
	}
	free(seen);
	L->uoff = sl_xmalloc(((size_t)n + 1) * sizeof *L->uoff);
	L->aoff = sl_xmalloc(((size_t)n + 1) * sizeof *L->aoff);
	for (int i = 0; i < n; i++) {
		int v = L->order[i];
		L->pos[v] = i;
		L->uoff[i] = uo;
		uo += (size_t)p->k[v];
		L->aoff[i] = ao;
		ao += L->par[i] >= 0 ? (size_t)p->k[L->order[L->par[i]]] : 0;
	}
	L->u = sl_xmalloc((uo + 1) * sizeof *L->u);
	L->arg = sl_xmalloc((ao + 1) * sizeof *L->arg);
	L->lambda = sl_xcalloc((size_t)a->nseg + 1, sizeof *L->lambda);
	L->Lam = sl_xcalloc((size_t)a->poff[n] + 1, sizeof *L->Lam);
	L->xs = sl_xmalloc(((size_t)n + 1) * sizeof *L->xs);
	L->ys = sl_xmalloc(((size_t)n + 1) * sizeof *L->ys);
	L->load = sl_xcalloc((size_t)a->nseg + 1, sizeof *L->load);
}

static void
at_lag_free(struct at_lag *L)
{
	free(L->order);
	free(L->par);
	free(L->pe);
	free(L->pos);
	free(L->ys);
	free(L->tree);
	free(L->u);
	free(L->uoff);
	free(L->arg);
	free(L->aoff);
	free(L->lambda);
	free(L->Lam);
	free(L->xs);
	free(L->load);
}

/*
 * Solves the relaxation for the current multipliers: the forest exactly,
 * the other edges by the minimum of their rows charged to one end.  Returns
 * the bound (a long double to keep the priced terms honest), and the
 * relaxed optimum in L->xs.
 */
static long double
at_lag_solve(at *a, struct at_lag *L)
{
	const sl_problem *p = a->p;
	long double total = 0, sumlam = 0;

	/* multipliers summed over each piece's segments (prefix sums) */
	if (a->has_mem) {
		double *pre = sl_xmalloc(((size_t)a->nseg + 1) * sizeof *pre);
		pre[0] = 0;
		for (int q = 0; q < a->nseg; q++) {
			pre[q + 1] = pre[q] + L->lambda[q];
			sumlam += (long double)L->lambda[q] *
			    ((long double)a->limit - (long double)a->base[q]);
		}
		for (int j = 0; j < a->poff[a->n]; j++)
			L->Lam[j] = pre[a->phi[j]] - pre[a->plo[j]];
		free(pre);
	}
	for (int v = 0; v < a->n; v++) {
		int64_t *u = L->u + L->uoff[L->pos[v]];
		for (int s = 0; s < p->k[v]; s++) {
			if (!a->ok[v][s]) {
				u[s] = INT64_MAX;
				continue;
			}
			/* the price floors, so the bound stays a bound */
			int64_t c = p->cost[v][s];
			for (int j = a->poff[v]; a->has_mem && j < a->poff[v + 1];
			    j++)
				if (L->Lam[j] > 0)
					c = sl_add_sat(c, (int64_t)floor(L->Lam[j] *
					    (double)a->puse[j][s]));
			u[s] = c;
		}
	}
	/* non-tree edges: row minima onto their first end */
	for (int e = 0; e < p->m; e++) {
		if (L->tree[e])
			continue;
		int v0 = p->edge[e][0], v1 = p->edge[e][1];
		int64_t *u = L->u + L->uoff[L->pos[v0]];
		for (int s = 0; s < p->k[v0]; s++) {
			int64_t mn = INT64_MAX;
			if (u[s] == INT64_MAX)
				continue;
			for (int t = 0; t < p->k[v1]; t++)
				if (a->ok[v1][t] &&
				    p->ecost[e][(size_t)s * p->k[v1] + t] < mn)
					mn = p->ecost[e][(size_t)s * p->k[v1] + t];
			u[s] = sl_add_sat(u[s], mn);
		}
	}
	total = at_tree_dp(p, a->n, L->order, L->par, L->pe, L->u, L->uoff,
	    L->arg, L->aoff, NULL, L->ys);
	for (int i = 0; i < a->n; i++)
		L->xs[L->order[i]] = L->ys[i];
	return total - sumlam;
}

/* The relaxed optimum's load per segment. */
static void
at_lag_load(at *a, struct at_lag *L)
{
	at_plan_load(a, L->xs, L->load);
	L->load[a->nseg] = 0;
}

/*
 * TRW-S (trws.c) on the problem with the limit priced in, in two runs that
 * take turns, a round each, each with messages of its own that persist
 * from round to round:
 * - on the priced problem the search sees (a->pc, the search's own
 *   multipliers, which rise where its plans overload the memory): its plans
 *   are the best candidates where the limit binds at few times (S);
 * - on costs priced by multipliers of its own (struct at_tr), tuned by
 *   subgradient steps on its plans (Polyak steps against the best plan's
 *   cost): the better bound, and the candidates, where the search's
 *   multipliers do not settle (A).
 * Any multipliers lam >= 0 give a bound: TRW-S's bound on the priced
 * problem less the sum over segments of lam (limit - fixed load), since a
 * plan that keeps the limit pays no more priced than real.  Its plans,
 * repaired to the limit and improved under it, are candidates; the last one
 * becomes the priced search's start when it is cheaper there than px.
 */
struct at_tr {
	sl_trws *T;		/* on the costs priced by lam below */
	sl_trws *S;		/* on the search's priced costs */
	double *lam, *pre, step, last;
	int64_t **uc;		/* node costs priced by lam */
	int64_t *load;
	int *tx;
	int stale;
};

static void
at_tr_init(at *a, struct at_tr *R)
{
	R->T = sl_trws_new(a->p, a->ok);
	R->S = sl_trws_new(a->p, a->ok);
	R->lam = sl_xcalloc((size_t)a->nseg + 1, sizeof *R->lam);
	R->pre = sl_xmalloc(((size_t)a->nseg + 1) * sizeof *R->pre);
	R->load = sl_xmalloc(((size_t)a->nseg + 1) * sizeof *R->load);
	R->tx = sl_xmalloc(((size_t)a->n + 1) * sizeof *R->tx);
	R->uc = sl_xcalloc((size_t)a->n + 1, sizeof *R->uc);
	for (int v = 0; v < a->n; v++)
		R->uc[v] = sl_xmalloc((size_t)a->p->k[v] * sizeof **R->uc);
	R->step = 1;
	R->last = -INFINITY;
}

static void
at_tr_free(at *a, struct at_tr *R)
{
	sl_trws_free(R->T);
	sl_trws_free(R->S);
	for (int v = 0; v < a->n; v++)
		free(R->uc[v]);
	free(R->uc);
	free(R->lam);
	free(R->pre);
	free(R->load);
	free(R->tx);
}

/* Node costs priced by multipliers lam (floored, so a bound stays one). */
static void
at_price(const at *a, const double *lam, double *pre, int64_t **out)
{
	const sl_problem *p = a->p;

	pre[0] = 0;
	for (int q = 0; q < a->nseg; q++)
		pre[q + 1] = pre[q] + lam[q];
	for (int v = 0; v < a->n; v++) {
		for (int s = 0; s < p->k[v]; s++) {
			double c = 0;
			for (int j = a->poff[v]; j < a->poff[v + 1]; j++)
				c += (pre[a->phi[j]] - pre[a->plo[j]]) *
				    (double)a->puse[j][s];
			out[v][s] = sl_add_sat(p->cost[v][s],
			    c > 1e17 ? (int64_t)1e17 : (int64_t)floor(c));
		}
	}
}

/* A subgradient step on R's own multipliers from its plan R->tx, whose
 * bound was b. */
static void
at_tr_step(at *a, struct at_tr *R, long double b)
{
	double g2 = 0, ub, t;

	at_plan_load(a, R->tx, R->load);
	for (int q = 0; q < a->nseg; q++) {
		double g = (double)(R->load[q] - a->limit);
		if (g > 0 || R->lam[q] > 0)
			g2 += g * g;
	}
	if (g2 == 0)
		return;
	ub = a->best_cost < AT_HARD ? (double)a->best_cost :
	    (double)fabsl(b) + 1;
	if ((double)b > R->last + 1e-6 * fabs(R->last)) {
		R->last = (double)b;
		R->stale = 0;
	} else if (++R->stale >= 10) {
		R->step /= 2;
		R->stale = 0;
	}
	t = R->step * (ub - (double)b > 0 ? ub - (double)b : 1e-3 * ub) / g2;
	for (int q = 0; q < a->nseg; q++) {
		double nl = R->lam[q] + t * (double)(R->load[q] - a->limit);
		R->lam[q] = nl > 0 ? nl : 0;
	}
}

/* What multipliers lam charge for the memory a plan may still use: the sum
 * over segments of lam (limit - fixed load). */
static long double
at_free_price(const at *a, const double *lam)
{
	long double f = 0;

	for (int q = 0; q < a->nseg; q++)
		f += (long double)lam[q] *
		    ((long double)a->limit - (long double)a->base[q]);
	return f;
}

/* own: R's multipliers, else the search's (lam, which priced a->pc). */
static void
at_trws(at *a, struct at_tr *R, bool own, const double *lam, int *px,
    double until_ms, double slice, long double *lb)
{
	const sl_problem *p = a->p;
	bool any = false;

	long double freep = 0;

	for (int it = 0; it < AT_TRWS_ITERS && at_ms(a) < until_ms &&
	    !at_over(a); it++) {
		long double b;

		/* R's multipliers move every iteration, the search's not */
		if (own)
			at_price(a, R->lam, R->pre, R->uc);
		if (own || it == 0)
			freep = at_free_price(a, own ? R->lam : lam);
		b = sl_trws_iterate(own ? R->T : R->S, own ? R->uc : a->pc,
		    R->tx) - freep;
		any = true;
		if (b > *lb)
			*lb = b;
		if (own)
			at_tr_step(a, R, b);
	}
	if (!any)
		return;
	/* the last plan: the priced search's start when cheaper there */
	{
		int64_t c, pxc;
		a->nc = a->pc;
		memcpy(a->x, R->tx, (size_t)a->n * sizeof *a->x);
		c = at_score(a);
		memcpy(a->x, px, (size_t)a->n * sizeof *a->x);
		pxc = at_score(a);
		if (c < pxc)
			memcpy(px, R->tx, (size_t)a->n * sizeof *px);
	}
	/* and on the real problem */
	a->nc = p->cost;
	memcpy(a->x, R->tx, (size_t)a->n * sizeof *a->x);
	at_load_reset(a);
	if (at_repair(a)) {
		double until = a->until_ms;
		at_record(a);
		a->until_ms = at_ms(a) + slice;
		at_icm(a);
		at_swap_pass(a);
		at_group_pass(a);
		at_lns(a, *lb, a->until_ms);
		a->until_ms = until;
	}
}

struct at_offer {
	double price;		/* per byte and segment over the limit */
	int64_t freed;		/* bytes at the peak */
};

static int
at_offer_cmp(const void *x, const void *y)
{
	const struct at_offer *a = x, *b = y;

	return a->price < b->price ? -1 : a->price > b->price;
}

/*
 * A first price per byte and segment for the priced search, from the plan
 * x searched without the limit (load its load per segment).  A node live
 * at the peak moves to one of its strategies of less usage there once the
 * prices on the segments over the limit pay for it: at its cost over the
 * bytes it frees summed over those segments.  The price returned clears
 * the excess at the peak: the least at which the nodes' moves, each its
 * cheapest, free as many bytes there as the plan is over (every move at
 * the highest price when they cannot; the least price above 0 when moves
 * that cost nothing would do).  0 when the plan fits or nothing frees
 * memory at its peak.
 */
static double
at_clearing_price(at *a, const int64_t *load, int64_t limit)
{
	int *cnt = sl_xcalloc((size_t)a->nseg + 1, sizeof *cnt), seg = 0, no = 0;
	struct at_offer *o;
	double price = 0;
	int64_t got = 0;

	for (int q = 0; q < a->nseg; q++) {
		cnt[q + 1] = cnt[q] + (load[q] > limit);
		if (load[q] > load[seg])
			seg = q;
	}
	if (a->nseg == 0 || load[seg] <= limit) {
		free(cnt);
		return 0;
	}
	at_live_list(a, seg);
	o = sl_xmalloc(((size_t)a->nlv + 1) * sizeof *o);
	for (int i = 0; i < a->nlv; i++) {
		int v = a->lvn[i], s = a->x[v];
		const int64_t *us = a->lvu + a->lvo[i];
		int64_t cur = at_local(a, v, s);
		struct at_offer best = { INFINITY, 0 };
		for (int t = 0; t < a->p->k[v]; t++) {
			double freed = 0;
			int64_t dc;
			if (!a->ok[v][t] || us[t] >= us[s])
				continue;
			for (int j = a->poff[v]; j < a->poff[v + 1]; j++)
				freed += (double)(a->puse[j][s] - a->puse[j][t]) *
				    (cnt[a->phi[j]] - cnt[a->plo[j]]);
			dc = at_local(a, v, t) - cur;
			if (freed <= 0 || dc >= AT_HARD / 2)
				continue;
			if ((dc > 0 ? (double)dc : 0) / freed < best.price) {
				best.price = (dc > 0 ? (double)dc : 0) / freed;
				best.freed = us[s] - us[t];
			}
		}
		if (best.price < INFINITY)
			o[no++] = best;
	}
	qsort(o, (size_t)no, sizeof *o, at_offer_cmp);
	for (int i = 0; i < no && (got < load[seg] - limit || price == 0); i++) {
		got += o[i].freed;
		price = o[i].price;
	}
	free(o);
	free(cnt);
	return price;
}

/*
 * The limit priced into node costs: multipliers per time segment rise where
 * the priced search's plan overloads the memory (first by the price that
 * clears the first such plan's excess, at_clearing_price, then by half
 * again and a twentieth of that) and fall elsewhere, faster where more
 * memory is free; the priced problem is searched without the limit, and
 * its plan, repaired to the limit and improved under it, is a candidate.
 * Until 75% of the time, in rounds of a twelfth of it, at most
 * AT_ROUND_MAX each.
 */
void
at_priced_search(at *a, long double *lb)
{
	const sl_problem *p = a->p;
	double *lam = sl_xcalloc((size_t)a->nseg + 1, sizeof *lam);
	double *pre = sl_xmalloc(((size_t)a->nseg + 1) * sizeof *pre);
	int64_t *load = sl_xmalloc(((size_t)a->nseg + 1) * sizeof *load);
	int *px = sl_xmalloc((size_t)a->n * sizeof *px);
	double lam0 = 0;
	double end = at_ms(a) + (a->deadline_ms - at_ms(a)) * 0.75;
	double slice = (end - at_ms(a)) / 12 < AT_ROUND_MAX ?
	    (end - at_ms(a)) / 12 : AT_ROUND_MAX;
	int64_t limit = a->limit;
	struct at_tr R;

	at_tr_init(a, &R);
	memcpy(px, a->x, (size_t)a->n * sizeof *px);
	for (int round = 0; at_ms(a) < end && !at_over(a) && !a->proved;
	    round++) {
		bool over = false;

		/* priced costs from the multipliers */
		at_price(a, lam, pre, a->pc);
		if (round >= 2) {
			at_trws(a, &R, round & 1, lam, px, at_ms(a) + slice / 4,
			    slice / 8, lb);
		}
		/* search the priced problem from its last plan */
		a->priced = true;
		a->nc = a->pc;
		a->limit = INT64_MAX;
		memcpy(a->x, px, (size_t)a->n * sizeof *px);
		at_load_reset(a);
		a->cost = at_score(a);
		a->until_ms = at_ms(a) + (round < 2 ? AT_FIRST_SLICE : slice);
		at_icm(a);
		/* the first rounds short: a plan that keeps the limit soon */
		at_lns(a, *lb, at_ms(a) + (round < 2 && slice > AT_FIRST_SLICE ?
		    AT_FIRST_SLICE : slice));
		memcpy(px, a->x, (size_t)a->n * sizeof *px);
		/* its load per segment */
		at_plan_load(a, a->x, load);
		/* the first time a plan breaks the limit, the first raise is the
		 * price that clears its excess at the peak */
		if (lam0 == 0) {
			lam0 = 20 * at_clearing_price(a, load, limit);
		}
		for (int q = 0; q < a->nseg; q++) {
			double slack;
			if (load[q] > limit) {
				over = true;
				lam[q] = lam[q] * 1.5 + lam0 * 0.05;
				continue;
			}
			/* down as fast as the memory is free there: 1% free,
			 * a tenth off; 5% or more, half */
			slack = (double)(limit - load[q]) / (double)limit;
			lam[q] *= 1 - (10 * slack > 0.5 ? 0.5 : 10 * slack);
		}
		/* back to the real problem: repair and improve */
		a->priced = false;
		a->nc = p->cost;
		a->limit = limit;
		at_load_reset(a);
		if (!over || at_repair(a)) {
			a->cost = at_score(a);
			at_record(a);
			a->until_ms = at_ms(a) + (round < 2 ? AT_FIRST_SLICE : slice) / 4;
			at_icm(a);
			at_swap_pass(a);
			at_group_pass(a);
			at_lns(a, *lb, a->until_ms);
		}
		/* and the best plan relinked towards the priced one */
		if (a->best_cost < INT64_MAX) {
			memcpy(a->x, a->best, (size_t)a->n * sizeof *a->x);
			at_load_reset(a);
			a->cost = a->best_cost;
			at_relink(a, px);
		}
	}
	at_tr_free(a, &R);
	a->priced = false;
	a->nc = p->cost;
	a->limit = limit;
	memcpy(a->x, a->best, (size_t)a->n * sizeof *a->x);
	a->cost = a->best_cost;
	at_load_reset(a);
	free(lam);
	free(pre);
	free(load);
	free(px);
}

/*
 * The Lagrangian relaxation of the limit over a spanning forest: a few
 * subgradient steps (Polyak steps against the best plan), each bound
 * raising *lb; without a limit the forest's optimum is a plan.
 */
void
at_lag_bound(at *a, long double *lb)
{
	struct at_lag L;

	at_lag_init(a, &L);
	{
		double step = 1.0, lastv = -INFINITY;
		int stale = 0;
		int iters = a->has_mem ? 40 : 1;
		double budget = at_ms(a) + (a->deadline_ms - at_ms(a)) * 0.05;

		for (int it = 0; it < iters && at_ms(a) < budget && !at_over(a);
		    it++) {
			long double v = at_lag_solve(a, &L);
			if (v > *lb)
				*lb = v;
			if (!a->has_mem) {
				/* the forest optimum is a plan */
				memcpy(a->x, L.xs, (size_t)a->n * sizeof *a->x);
				a->cost = at_score(a);
				at_record(a);
				break;
			}
			at_lag_load(a, &L);
			/* subgradient step, scaled to the gap (Polyak) */
			double g2 = 0;
			for (int q = 0; q < a->nseg; q++) {
				double g = (double)(L.load[q] - a->limit);
				if (g > 0 || L.lambda[q] > 0)
					g2 += g * g;
			}
			double gap = (double)a->best_cost - (double)v;
			if (g2 == 0 || !(gap > 0))
				break;
			double t = step * gap / g2;
			for (int q = 0; q < a->nseg; q++) {
				double nl = L.lambda[q] +
				    t * (double)(L.load[q] - a->limit);
				L.lambda[q] = nl > 0 ? nl : 0;
			}
			if ((double)v <= lastv) {
				if (++stale >= 3) {
					step /= 2;
					stale = 0;
				}
			} else {
				stale = 0;
				lastv = (double)v;
			}
		}
	}
	at_lag_free(&L);
}
