/*
 * anytime_windows.c: the anytime search's large neighbourhoods: the tree
 * min-sum DP, induced trees and balls of the graph re-solved exactly (the
 * latter by the elimination DP under a work cap), pricing the usages of a
 * window's nodes at overloaded times when its new plan breaks the limit,
 * and moves of every node over a random spanning forest.
 */
#include "anytime.h"

#include <math.h>
#include <stdlib.h>
/* Most work for the DP of one window (operations). */
#define AT_DP_WORK 3e7
/* Price fixed point: a price p costs (usage * p) >> AT_PRICE_SHIFT. */
#define AT_PRICE_SHIFT 16

/* ---------------------------------------------------------- the tree DP */

/*
 * Exact min-sum over a forest given as nw items in parent-first order (a
 * breadth-first order, each tree's items after its root): item i is node
 * node[i], its parent item par[i] (-1 a root) joined by edge pe[i].  Its
 * unary costs (INT64_MAX: not allowed) are at u + uoff[i], which the
 * messages from its children overwrite; arg holds k[parent] entries per
 * item at arg + aoff[i].  y[i] gets the optimum's strategy per item (a root
 * with nothing allowed keeps dflt[node], or 0), and the sum of the roots'
 * minima is returned (INFINITY when a root has nothing allowed).  The
 * windows, the forest moves and the Lagrangian bound all solve with it.
 */
long double
at_tree_dp(const sl_problem *p, int nw, const int *node, const int *par,
    const int *pe, int64_t *u, const size_t *uoff, int *arg,
    const size_t *aoff, const int *dflt, int *y)
{
	long double total = 0;

	/* children before parents: each sends its message up */
	for (int i = nw - 1; i >= 0; i--) {
		int v = node[i];
		int64_t *uv = u + uoff[i];
		if (par[i] < 0) {
			int64_t bm = INT64_MAX;
			int bs = dflt != NULL ? dflt[v] : 0;
			for (int s = 0; s < p->k[v]; s++)
				if (uv[s] < bm) {
					bm = uv[s];
					bs = s;
				}
			y[i] = bs;
			total += bm == INT64_MAX ? (long double)INFINITY : bm;
			continue;
		}
		int pv = node[par[i]];
		int64_t *up = u + uoff[par[i]];
		int *av = arg + aoff[i];
		/* cell (s, sp) of the edge at ec[s * ss + sp * sp1], in place */
		const int64_t *ec = p->ecost[pe[i]];
		size_t ss = p->edge[pe[i]][0] == v ? (size_t)p->k[pv] : 1;
		size_t sp1 = p->edge[pe[i]][0] == v ? 1 : (size_t)p->k[v];
		for (int sp = 0; sp < p->k[pv]; sp++) {
			int64_t bm = INT64_MAX;
			int bs = 0;
			if (up[sp] == INT64_MAX) {
				av[sp] = 0;
				continue;
			}
			for (int s = 0; s < p->k[v]; s++) {
				if (uv[s] == INT64_MAX)
					continue;
				int64_t c = sl_add_sat(uv[s],
				    ec[(size_t)s * ss + (size_t)sp * sp1]);
				if (c < bm) {
					bm = c;
					bs = s;
				}
			}
			av[sp] = bs;
			up[sp] = sl_add_sat(up[sp], bm);
		}
	}
	for (int i = 0; i < nw; i++)
		if (par[i] >= 0)
			y[i] = arg[aoff[i] + y[par[i]]];
	return total;
}

/* ------------------------------------------------------ tree DP over a window */

/*
 * Grows a window from root whose induced subgraph is a tree: a node joins
 * when exactly one of its edges leads into the window.  worder is BFS order.
 */
static int
at_grow(at *a, int root, int max)
{
	const sl_problem *p = a->p;
	int nw = 0, head = 0;

	a->stamp++;
	a->wstamp[root] = a->stamp;
	a->worder[nw++] = root;
	a->wpar[root] = -1;
	a->wpe[root] = -1;
	while (head < nw && nw < max) {
		int v = a->worder[head++];
		for (int i = a->aoff[v]; i < a->aoff[v + 1] && nw < max; i++) {
			int e = a->aedge[i], w = at_other(p, e, v), inside = 0;
			if (a->wstamp[w] == a->stamp)
				continue;
			for (int j = a->aoff[w]; j < a->aoff[w + 1]; j++)
				inside += a->wstamp[at_other(p, a->aedge[j], w)] ==
				    a->stamp;
			if (inside != 1)
				continue;
			a->wstamp[w] = a->stamp;
			a->wpar[w] = v;
			a->wpe[w] = e;
			a->worder[nw++] = w;
		}
	}
	return nw;
}

static int64_t
at_priced(int64_t u, int64_t price)
{
	__int128 t = (__int128)u * price >> AT_PRICE_SHIFT;

	return t > INT64_MAX / 4 ? INT64_MAX / 4 : (int64_t)t;
}

/*
 * Exact min-sum DP over the window tree: unary = node cost + edges to the
 * fixed rest + price * usage; writes the optimum into wy (by position in
 * worder; wpos maps a node to its position).
 */
static void
at_window_dp(at *a, int nw, const int64_t *price)
{
	const sl_problem *p = a->p;
	size_t off = 0, aoffs = 0;

	for (int i = 0; i < nw; i++) {
		int v = a->worder[i];
		a->woff[i] = off;
		off += (size_t)p->k[v];
		a->waoff[i] = aoffs;
		aoffs += a->wpar[v] >= 0 ? (size_t)p->k[a->wpar[v]] : 0;
		a->wpos[v] = i;
	}
	for (int i = 0; i < nw; i++) {
		int v = a->worder[i];
		a->wpi[i] = a->wpar[v] >= 0 ? a->wpos[a->wpar[v]] : -1;
		a->wpei[i] = a->wpe[v];
	}
	for (int i = 0; i < nw; i++) {
		int v = a->worder[i];
		int64_t *u = a->wu + a->woff[i];
		for (int s = 0; s < p->k[v]; s++) {
			if (!a->ok[v][s]) {
				u[s] = INT64_MAX;
				continue;
			}
			int64_t c = a->nc[v][s];
			if (a->has_mem && price[i] != 0)
				c = sl_add_sat(c, at_priced(a->usum[v][s], price[i]));
			for (int j = a->aoff[v]; j < a->aoff[v + 1]; j++) {
				int e = a->aedge[j], w = at_other(p, e, v);
				if (a->wstamp[w] == a->stamp)
					continue;	/* inside: a tree edge */
				c = sl_add_sat(c, at_ecell(p, e, v, s, a->x[w]));
			}
			u[s] = c;
		}
	}
	at_tree_dp(p, nw, a->worder, a->wpi, a->wpei, a->wu, a->woff, a->warg,
	    a->waoff, a->x, a->wy);
}

/* Cost of the window's nodes and every edge touching them, under x. */
static int64_t
at_window_cost(const at *a, int nw)
{
	const sl_problem *p = a->p;
	int64_t c = 0;

	for (int i = 0; i < nw; i++) {
		int v = a->worder[i];
		c = sl_add_sat(c, a->nc[v][a->x[v]]);
		for (int j = a->aoff[v]; j < a->aoff[v + 1]; j++) {
			int e = a->aedge[j], w = at_other(p, e, v);
			if (a->wstamp[w] == a->stamp && w < v)
				continue;
			c = sl_add_sat(c, at_ecell(p, e, v, a->x[v], a->x[w]));
		}
	}
	return c;
}

static bool at_ball_dp(at *a, int nw, const int64_t *price, sl_problem **qp,
    int64_t **basep);

static void
at_ball_free(sl_problem **qp, int64_t **basep)
{
	if (*qp != NULL)
		sl_problem_free(*qp);
	free(*basep);
	*qp = NULL;
	*basep = NULL;
}
static int at_ball(at *a, int root, int max);

/*
 * One LNS step: a window around a random node is re-solved; if the new
 * window breaks the limit, the usages of its nodes live at an overloaded
 * time are priced and it is solved again.  The result is kept when it fits
 * and costs no more.
 */
static void
at_window(at *a, int max)
{
	int root = a->nhard > 0 ? a->hard[at_rnd(a, a->nhard)] : at_rnd(a, a->n);
	int nw;
	int64_t before, after, mu = a->mu;
	int *keep;
	bool fitted = false, ball;
	sl_problem *bq = NULL;	/* the ball's problem, built once */
	int64_t *bbase = NULL;

	/* impossible pairs: long tree windows follow their chains far */
	ball = a->ball > 0 && !(a->nhard > 0 && at_rnd(a, 2));
	nw = ball ? at_ball(a, root, a->ball) :
	    at_grow(a, root, a->nhard > 0 ? AT_WINDOW_MAX : max);
	if (nw < 2)
		return;
	a->windows++;
	for (int i = 0; i < nw; i++)
		a->wprice[i] = 0;
	before = at_window_cost(a, nw);
	keep = sl_xmalloc((size_t)nw * sizeof *keep);
	for (int i = 0; i < nw; i++)
		keep[i] = a->x[a->worder[i]];
	for (int round = 0; round < 12 && !fitted; round++) {
		bool priced = false;
		if (ball) {
			if (!at_ball_dp(a, nw, a->wprice, &bq, &bbase)) {
				/* too wide: a smaller ball here, and a bit
				 * smaller ones from now on */
				a->ball = a->ball * 7 / 8;
				if (a->ball < 8)
					a->ball = 8;
				if (round > 0 || nw <= 8) {
					free(keep);
					at_ball_free(&bq, &bbase);
					return;
				}
				at_ball_free(&bq, &bbase);
				nw = at_ball(a, root, nw / 2);
				before = at_window_cost(a, nw);
				for (int i = 0; i < nw; i++) {
					keep[i] = a->x[a->worder[i]];
					a->wprice[i] = 0;
				}
				round--;
				continue;
			}
			a->balls_ok++;
		} else
			at_window_dp(a, nw, a->wprice);
		for (int i = 0; i < nw; i++) {
			int v = a->worder[i];
			at_load_move(a, v, a->x[v], a->wy[i]);
			a->x[v] = a->wy[i];
		}
		if (at_peak(a) <= a->limit) {
			fitted = true;
			after = at_window_cost(a, nw);
			if (after <= before) {
				a->cost = at_shift(a, before, after);
				if (after < before) {
					a->improved++;
					at_record(a);
				}
				if (round > 0)
					a->mu = mu;
				/* the whole problem solved exactly, limit unpriced */
				if (ball && nw == a->n && round == 0 && !a->priced)
					a->proved = true;
				if (ball && a->balls_ok % 4 == 0 &&
				    a->ball < AT_WINDOW_MAX)
					a->ball += 1 + a->ball / 16;
				free(keep);
				at_ball_free(&bq, &bbase);
				return;
			}
		} else {
			int64_t spent = 0;
			/* paid for by freeing memory outside the window */
			after = at_window_cost(a, nw);
			if (after < before && at_fix(a, before - after, &spent)) {
				a->cost = at_shift(a, before, after + spent);
				a->improved++;
				at_record(a);
				free(keep);
				at_ball_free(&bq, &bbase);
				return;
			}
			/* price the nodes that load an overloaded time */
			for (int i = 0; i < nw; i++) {
				int v = a->worder[i];
				if (!at_has_pieces(a, v) ||
				    a->usum[v][a->x[v]] == 0)
					continue;
				if (at_load_over(a, v) > a->limit) {
					a->wprice[i] = a->wprice[i] ?
					    2 * a->wprice[i] : mu;
					priced = true;
				}
			}
		}
		for (int i = 0; i < nw; i++) {
			int v = a->worder[i];
			at_load_move(a, v, a->x[v], keep[i]);
			a->x[v] = keep[i];
		}
		if (!priced)
			break;
	}
	/* the window could not be made to fit cheaply: start dearer next time */
	if (!fitted && a->mu < ((int64_t)1 << 50))
		a->mu *= 2;
	else if (fitted && a->mu > 1)
		a->mu -= a->mu / 8;
	free(keep);
	at_ball_free(&bq, &bbase);
}

/*
 * A ball of the graph around root (BFS, cycles and all) as a problem of its
 * own: node costs plus the edges to the fixed rest plus the priced usage;
 * the edges inside kept.  Solved exactly by the elimination DP when its
 * width allows; false when the DP refuses.  The problem is built once per
 * ball (*qp NULL: built; its unpriced node costs kept in *basep) and only
 * its node costs change when the window's prices do, so a window that
 * needs several price rounds copies its edge matrices once.
 */
static bool
at_ball_dp(at *a, int nw, const int64_t *price, sl_problem **qp,
    int64_t **basep)
{
	const sl_problem *p = a->p;
	sl_problem *q = *qp;
	sl_solution sol;
	sl_error err;
	bool ok;

	if (q == NULL) {
		int *k = sl_xmalloc((size_t)nw * sizeof *k), me = 0;
		int (*ed)[2], *eid;
		size_t nb = 0;

		for (int i = 0; i < nw; i++) {
			int v = a->worder[i];
			a->wpos[v] = i;
			k[i] = p->k[v];
			nb += (size_t)p->k[v];
			for (int j = a->aoff[v]; j < a->aoff[v + 1]; j++)
				me += a->wstamp[at_other(p, a->aedge[j], v)] ==
				    a->stamp;
		}
		me /= 2;
		ed = sl_xmalloc(((size_t)me + 1) * sizeof *ed);
		eid = sl_xmalloc(((size_t)me + 1) * sizeof *eid);
		me = 0;
		for (int i = 0; i < nw; i++) {
			int v = a->worder[i];
			for (int j = a->aoff[v]; j < a->aoff[v + 1]; j++) {
				int e = a->aedge[j], w = at_other(p, e, v);
				if (a->wstamp[w] != a->stamp || a->wpos[w] < i)
					continue;
				/* the file's orientation: the matrix as is */
				ed[me][0] = a->wpos[p->edge[e][0]];
				ed[me][1] = a->wpos[p->edge[e][1]];
				eid[me++] = e;
			}
		}
		q = sl_problem_new(nw, k, me, (const int (*)[2])ed);
		for (int i = 0; i < me; i++)
			memcpy(q->ecost[i], p->ecost[eid[i]],
			    (size_t)p->k[p->edge[eid[i]][0]] *
			    (size_t)p->k[p->edge[eid[i]][1]] * sizeof **p->ecost);
		*basep = sl_xmalloc((nb + 1) * sizeof **basep);
		nb = 0;
		for (int i = 0; i < nw; i++) {
			int v = a->worder[i];
			for (int s = 0; s < p->k[v]; s++) {
				int64_t c = a->nc[v][s];
				q->allowed[i][s] = a->ok[v][s];
				for (int j = a->aoff[v]; j < a->aoff[v + 1]; j++) {
					int e = a->aedge[j], w = at_other(p, e, v);
					if (a->wstamp[w] != a->stamp)
						c = sl_add_sat(c,
						    at_ecell(p, e, v, s, a->x[w]));
				}
				(*basep)[nb++] = c;
			}
		}
		free(k);
		free(ed);
		free(eid);
		*qp = q;
	}
	{
		size_t nb = 0;
		for (int i = 0; i < nw; i++) {
			int v = a->worder[i];
			for (int s = 0; s < p->k[v]; s++) {
				int64_t c = (*basep)[nb++];
				if (a->has_mem && price[i] != 0)
					c = sl_add_sat(c,
					    at_priced(a->usum[v][s], price[i]));
				q->cost[i][s] = c;
			}
		}
	}
	sl_error_clear(&err);
	sl_solution_init(&sol, nw);
	{
		/* about 1e5 operations a millisecond: never past the deadline */
		double left = (a->until_ms < a->deadline_ms ? a->until_ms :
		    a->deadline_ms) - at_ms(a);
		sl_solve_opts wo = { .work_cap = left * 1e5 < AT_DP_WORK ?
		    left * 1e5 : AT_DP_WORK };
		if (wo.work_cap < 1e4)
			wo.work_cap = 1e4;
		ok = sl_run_dp(q, &wo, &a->run, &sol, &err) == SL_OK &&
		    sol.status == SL_SOLVE_OPTIMAL;
	}
	if (ok)
		for (int i = 0; i < nw; i++)
			a->wy[i] = sol.choice[i];
	sl_solution_free(&sol);
	return ok;
}

/* A BFS ball of at most max nodes around root. */
static int
at_ball(at *a, int root, int max)
{
	const sl_problem *p = a->p;
	int nw = 0, head = 0;

	a->stamp++;
	a->wstamp[root] = a->stamp;
	a->worder[nw++] = root;
	for (int next = root;;) {
		while (head < nw && nw < max) {
			int v = a->worder[head++];
			for (int i = a->aoff[v]; i < a->aoff[v + 1] && nw < max;
			    i++) {
				int w = at_other(p, a->aedge[i], v);
				if (a->wstamp[w] == a->stamp)
					continue;
				a->wstamp[w] = a->stamp;
				a->worder[nw++] = w;
			}
		}
		if (nw >= max || nw >= a->n)
			break;
		/* the component is exhausted: go on with the next one */
		do
			next = (next + 1) % a->n;
		while (a->wstamp[next] == a->stamp);
		a->wstamp[next] = a->stamp;
		a->worder[nw++] = next;
	}
	return nw;
}

/*
 * A move of every node at once over a random spanning forest: the edges
 * off the forest are charged half to each end against the current plan of
 * the other end, the forest is solved exactly, and the result is kept when
 * the real objective falls and the limit holds.
 */
static void
at_forest(at *a)
{
	const sl_problem *p = a->p;
	int n = a->n, nw = 0;
	int *order = sl_xmalloc((size_t)n * sizeof *order);
	int *par = sl_xmalloc((size_t)n * sizeof *par);
	int *pe = sl_xmalloc((size_t)n * sizeof *pe);
	int *pen = sl_xmalloc((size_t)n * sizeof *pen);
	int *yi = sl_xmalloc((size_t)n * sizeof *yi);
	int *y = sl_xmalloc((size_t)n * sizeof *y);
	size_t *uoff = sl_xmalloc(((size_t)n + 1) * sizeof *uoff);
	size_t *aoff = sl_xmalloc(((size_t)n + 1) * sizeof *aoff);
	int64_t *u;
	int *arg;
	int r0 = at_rnd(a, n);
	size_t uo = 0, ao = 0;
	int64_t now;

	/* the forest by position (par, pe); pen a node's edge to its parent */
	a->stamp++;
	for (int i = 0; i < n; i++) {
		int r = (r0 + i) % n, head = nw;
		if (a->wstamp[r] == a->stamp)
			continue;
		a->wstamp[r] = a->stamp;
		par[nw] = -1;
		pe[nw] = -1;
		pen[r] = -1;
		order[nw++] = r;
		while (head < nw) {
			int v = order[head++], d = a->aoff[v + 1] - a->aoff[v];
			int off = d > 0 ? at_rnd(a, d) : 0;
			for (int j = 0; j < d; j++) {
				int e = a->aedge[a->aoff[v] + (j + off) % d];
				int w = at_other(p, e, v);
				if (a->wstamp[w] == a->stamp)
					continue;
				a->wstamp[w] = a->stamp;
				par[nw] = head - 1;
				pe[nw] = e;
				pen[w] = e;
				order[nw++] = w;
			}
		}
	}
	for (int i = 0; i < n; i++) {
		uoff[i] = uo;
		uo += (size_t)p->k[order[i]];
		aoff[i] = ao;
		ao += par[i] >= 0 ? (size_t)p->k[order[par[i]]] : 0;
	}
	u = sl_xmalloc((uo + 1) * sizeof *u);
	arg = sl_xmalloc((ao + 1) * sizeof *arg);
	for (int i = 0; i < n; i++) {
		int v = order[i];
		int64_t *uv = u + uoff[i];
		for (int s = 0; s < p->k[v]; s++) {
			if (!a->ok[v][s]) {
				uv[s] = INT64_MAX;
				continue;
			}
			int64_t c = a->nc[v][s];
			for (int j = a->aoff[v]; j < a->aoff[v + 1]; j++) {
				int e = a->aedge[j], w = at_other(p, e, v);
				if (pen[v] == e || pen[w] == e)
					continue;
				c = sl_add_sat(c, at_ecell(p, e, v, s, a->x[w]) / 2);
			}
			uv[s] = c;
		}
	}
	at_tree_dp(p, n, order, par, pe, u, uoff, arg, aoff, a->x, yi);
	for (int i = 0; i < n; i++)
		y[order[i]] = yi[i];
	/* keep it if it is better and fits */
	memcpy(order, a->x, (size_t)n * sizeof *order);	/* the old plan */
	for (int v = 0; v < n; v++)
		if (y[v] != a->x[v]) {
			at_load_move(a, v, a->x[v], y[v]);
			a->x[v] = y[v];
		}
	now = at_score(a);
	if (now < a->cost && at_peak(a) <= a->limit) {
		a->cost = now;
		a->improved++;
		at_record(a);
	} else {
		for (int v = 0; v < n; v++)
			if (order[v] != a->x[v]) {
				at_load_move(a, v, a->x[v], order[v]);
				a->x[v] = order[v];
			}
	}
	free(order);
	free(par);
	free(pe);
	free(pen);
	free(yi);
	free(y);
	free(uoff);
	free(aoff);
	free(u);
	free(arg);
}

/* Windows until the deadline (or the bound is reached). */
void
at_lns(at *a, long double lb, double until_ms)
{
	int wmax = 8;
	long since = 0;

	a->until_ms = until_ms;
	while (!at_over(a) && at_ms(a) < until_ms && !a->proved &&
	    (a->priced || (long double)a->best_cost > lb)) {
		at_find_hard(a);
		for (int i = 0; i < 16 && !at_over(a) && at_ms(a) < until_ms; i++)
			at_window(a, wmax);
		at_forest(a);
		since += 16;
		if (since >= 256) {
			/* tree windows alternate their size */
			wmax = wmax * 2 > AT_WINDOW_MAX ? 8 : wmax * 2;
			since = 0;
		}
	}
}
