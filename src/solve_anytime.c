/*
 * solve_anytime.c: the anytime solver for general strategy graphs with a
 * memory usage limit over liveness intervals (IOPDDL problems, and model
 * graphs that do not fold).  It has a plan that keeps the limit early and
 * improves it until the time limit (doc/anytime.md):
 *
 *   1. small problems are enumerated; mid-sized ones go to GLPK after the
 *      search (sl_solve_anytime);
 *   2. exact reductions (reduce.c): dominated strategies removed, nodes of
 *      fixed usage on chains and leaves contracted;
 *   3. the least-usage plan (if it breaks the limit, every plan does),
 *      improved by single-node moves that keep the limit;
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
 */
#include "internal.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Below this many assignments the whole problem is enumerated first. */
#define AT_ENUM_COMBOS 2e5
/* Default time limit when none is given (seconds); problems GLPK can take
 * get it after a fifth of this, without a limit, as before there was a
 * search. */
#define AT_DEFAULT_LIMIT 10.0
/* Largest window, in nodes. */
#define AT_WINDOW_MAX 400
/*
 * Costs from 1e16 up mark impossible pairs (the contest writes 1e18); the
 * search sees them as 1e14, so that sums of many (up to 90,000) stay clear
 * of saturation and a plan with one impossible pair fewer is seen to be
 * better.  A plan whose cost reaches 1e14 has one and is no answer.
 */
#define AT_IMPOSSIBLE SL_COST_IMPOSSIBLE
#define AT_HARD ((int64_t)100000000000000LL)
/* Impossible pairs listed at once, for windows to aim at. */
#define AT_HARD_LIST 1024
/* The first priced round's search (ms): the first plan comes after it. */
#define AT_FIRST_SLICE 200.0
/* Most work for the DP of one window (operations). */
#define AT_DP_WORK 3e7
/*
 * Longest priced round (ms).  The multipliers move once a round; on the
 * contest's instance S a dozen rounds of 15 s left them swinging between
 * plans over the limit and dearer ones under it (doc/anytime.md).
 */
#define AT_ROUND_MAX 4000.0
/* Most TRW-S iterations in one priced round. */
#define AT_TRWS_ITERS 30
/* Price fixed point: a price p costs (usage * p) >> AT_PRICE_SHIFT. */
#define AT_PRICE_SHIFT 16

/*
 * Searches run side by side (sl_solve_opts.threads 0): one per processor
 * the process may run on, at most this many.  Each further one holds its own search
 * state: 25-45 MB on the contest instances, beside 430-500 MB for one.
 */
#define AT_THREADS_DEFAULT 4
/* Most searches side by side however many are asked for. */
#define AT_THREADS_MAX 64

/* Tests set this to skip the exact shortcuts and exercise the search alone. */
int sl_anytime_search_only;

typedef struct at {
	const sl_problem *p;
	const sl_solve_opts *o;
	uint8_t **ok;		/* allowed after reductions */
	int n;
	int *aoff, *aedge;	/* incident edges, CSR */
	/* time segments: node v covers segments [slo[v], shi[v]) */
	int nseg;
	int *slo, *shi;
	int64_t *base;		/* fixed load per segment (contracted nodes) */
	int64_t *tmax, *tadd;	/* segment tree over segments */
	int tsize;
	int64_t limit;		/* INT64_MAX when none */
	bool has_mem;
	int *x;			/* current plan */
	int64_t cost;
	int *best;
	int64_t best_cost;
	double first_ms;
	uint64_t rng;
	struct timespec t0;
	double deadline_ms;
	bool stopped;		/* cancelled */
	long polls;
	/* window scratch */
	int *wstamp, stamp;
	int *worder, *wpar, *wpe, *wy, *woff, *waoff, *wpos;
	int64_t *wu, *wprice;
	int *warg;
	int64_t mu;		/* last price that made a window fit */
	int64_t **nc;		/* node costs the search sees (priced or not) */
	int64_t **pc;		/* priced node costs */
	bool priced;		/* searching the priced problem, limit off */
	int ball;		/* size of BFS balls solved by the DP; 0 none */
	int *gbuf, *gnew;	/* compound moves */
	int *hard, nhard;	/* nodes on impossible pairs, windows go there */
	int *fixv, *fixs;	/* at_fix's moves, to undo them */
	int64_t gshift;
	double until_ms;	/* end of the current phase */
	bool proved;		/* best is optimal */
	long balls_ok;
	/* statistics */
	long windows, improved;
	/* set by the search that proves its plan optimal: the others stop */
	atomic_bool *done;
} at;

static double
at_ms(const at *a)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - a->t0.tv_sec) * 1e3 +
	    (double)(t.tv_nsec - a->t0.tv_nsec) / 1e6;
}

static bool
at_over(at *a)
{
	if (a->stopped)
		return true;
	if (a->done != NULL && atomic_load_explicit(a->done,
	    memory_order_relaxed))
		return true;
	if (a->o != NULL && a->o->cancel != NULL &&
	    a->o->cancel(a->o->cancel_ctx)) {
		a->stopped = true;
		return true;
	}
	if (a->o != NULL && a->o->first_plan && a->first_ms >= 0)
		return true;
	return at_ms(a) >= a->deadline_ms;
}

static uint32_t
at_rand(at *a)
{
	a->rng ^= a->rng >> 12;
	a->rng ^= a->rng << 25;
	a->rng ^= a->rng >> 27;
	return (uint32_t)((a->rng * 2685821657736338717ULL) >> 32);
}

static int
at_rnd(at *a, int n)
{
	return (int)(at_rand(a) % (uint32_t)n);
}

/* ------------------------------------------------------------ segment tree */

static void
seg_add_rec(at *a, int node, int l, int r, int ql, int qr, int64_t d)
{
	if (qr <= l || r <= ql)
		return;
	if (ql <= l && r <= qr) {
		a->tmax[node] += d;
		a->tadd[node] += d;
		return;
	}
	int mid = (l + r) / 2;
	seg_add_rec(a, 2 * node, l, mid, ql, qr, d);
	seg_add_rec(a, 2 * node + 1, mid, r, ql, qr, d);
	a->tmax[node] = a->tadd[node] +
	    (a->tmax[2 * node] > a->tmax[2 * node + 1] ?
	    a->tmax[2 * node] : a->tmax[2 * node + 1]);
}

static int64_t
seg_max_rec(const at *a, int node, int l, int r, int ql, int qr)
{
	if (qr <= l || r <= ql)
		return INT64_MIN;
	if (ql <= l && r <= qr)
		return a->tmax[node];
	int mid = (l + r) / 2;
	int64_t x = seg_max_rec(a, 2 * node, l, mid, ql, qr);
	int64_t y = seg_max_rec(a, 2 * node + 1, mid, r, ql, qr);
	return (x > y ? x : y) + a->tadd[node];
}

/* Usage change of v from strategy s to t applied to the load. */
static void
at_load_move(at *a, int v, int s, int t)
{
	int64_t d;

	if (!a->has_mem || a->slo[v] >= a->shi[v])
		return;
	d = (t >= 0 ? a->p->usage[v][t] : 0) - (s >= 0 ? a->p->usage[v][s] : 0);
	if (d != 0)
		seg_add_rec(a, 1, 0, a->nseg, a->slo[v], a->shi[v], d);
}

static void
at_load_reset(at *a)
{
	if (!a->has_mem)
		return;
	memset(a->tmax, 0, 2 * (size_t)a->tsize * sizeof *a->tmax);
	memset(a->tadd, 0, 2 * (size_t)a->tsize * sizeof *a->tadd);
	for (int q = 0; q < a->nseg; q++)
		if (a->base[q] != 0)
			seg_add_rec(a, 1, 0, a->nseg, q, q + 1, a->base[q]);
	for (int v = 0; v < a->n; v++)
		at_load_move(a, v, -1, a->x[v]);
}

static int64_t
at_peak(const at *a)
{
	return a->has_mem ? a->tmax[1] : 0;
}

/* May v move from its strategy to t without breaking the limit? */
static bool
at_fits(const at *a, int v, int t)
{
	int64_t d;

	if (!a->has_mem || a->slo[v] >= a->shi[v])
		return true;
	d = a->p->usage[v][t] - a->p->usage[v][a->x[v]];
	if (d <= 0)
		return true;
	return seg_max_rec(a, 1, 0, a->nseg, a->slo[v], a->shi[v]) + d <=
	    a->limit;
}

/* ------------------------------------------------------------------ costs */

static inline int
at_other(const sl_problem *p, int e, int v)
{
	return p->edge[e][0] == v ? p->edge[e][1] : p->edge[e][0];
}

/* Cost of edge e with v on s and the other end on t. */
static inline int64_t
at_ecell(const sl_problem *p, int e, int v, int s, int t)
{
	int u0 = p->edge[e][0], u1 = p->edge[e][1];

	if (u0 == v)
		return p->ecost[e][(size_t)s * p->k[u1] + t];
	return p->ecost[e][(size_t)t * p->k[u1] + s];
}

/* Node cost of v on s plus its edges to the current plan. */
static int64_t
at_local(const at *a, int v, int s)
{
	const sl_problem *p = a->p;
	int64_t c = a->nc[v][s];

	for (int i = a->aoff[v]; i < a->aoff[v + 1]; i++) {
		int e = a->aedge[i];
		c = sl_add_sat(c, at_ecell(p, e, v, s, a->x[at_other(p, e, v)]));
	}
	return c;
}

/* The search's objective of the current plan (a->nc for node costs). */
static int64_t
at_score(const at *a)
{
	const sl_problem *p = a->p;
	int64_t sum = 0;

	for (int v = 0; v < a->n; v++)
		sum = sl_add_sat(sum, a->nc[v][a->x[v]]);
	for (int e = 0; e < p->m; e++)
		sum = sl_add_sat(sum, p->ecost[e][(size_t)a->x[p->edge[e][0]] *
		    p->k[p->edge[e][1]] + a->x[p->edge[e][1]]]);
	return sum;
}

/*
 * The objective after a part of it went from before to after; summed again
 * when saturated terms (impossible pairs) make the difference meaningless.
 */
static int64_t
at_shift(const at *a, int64_t before, int64_t after)
{
	if (before >= INT64_MAX / 4 || after >= INT64_MAX / 4 ||
	    a->cost >= INT64_MAX / 4)
		return at_score(a);
	return a->cost + (after - before);
}

static void
at_record(at *a)
{
	if (!a->priced && a->cost < a->best_cost) {
		a->best_cost = a->cost;
		memcpy(a->best, a->x, (size_t)a->n * sizeof *a->x);
		/* a plan counts once it has no impossible pair */
		if (a->first_ms < 0 && a->best_cost < AT_HARD)
			a->first_ms = at_ms(a);
	}
}

/*
 * Iterated conditional modes: every node in turn takes its cheapest
 * strategy given its neighbours, among those that keep the limit.  Passes
 * until nothing moves.
 */
static void
at_icm(at *a)
{
	bool moved = true;

	for (int pass = 0; moved && pass < 50 && !at_over(a) &&
	    at_ms(a) < a->until_ms; pass++) {
		moved = false;
		for (int v = 0; v < a->n; v++) {
			int s = a->x[v], bs = s;
			if ((v & 1023) == 1023 && at_ms(a) >= a->until_ms)
				break;
			int64_t cur = at_local(a, v, s), bc = cur;
			for (int t = 0; t < a->p->k[v]; t++) {
				if (t == s || !a->ok[v][t])
					continue;
				int64_t c = at_local(a, v, t);
				if (c < bc && at_fits(a, v, t)) {
					bc = c;
					bs = t;
				}
			}
			if (bs != s) {
				at_load_move(a, v, s, bs);
				a->x[v] = bs;	/* the cost is summed after the pass */
				moved = true;
			}
		}
	}
	a->cost = at_score(a);
	at_record(a);
}

/* A segment at the peak of the load (the segment tree descended). */
static int
at_peak_seg(const at *a)
{
	int node = 1, l = 0, r = a->nseg;

	while (r - l > 1) {
		int mid = (l + r) / 2;
		if (a->tmax[2 * node] >= a->tmax[2 * node + 1]) {
			node = 2 * node;
			r = mid;
		} else {
			node = 2 * node + 1;
			l = mid;
		}
	}
	return l;
}

/*
 * Brings the plan under the limit: while the peak is over it, the moves of
 * nodes live at the peak that cost least per byte saved there are taken.
 * A node's move that would leave a neighbour on an impossible pair is
 * taken as a compound move (at_group_build: the neighbours follow), priced
 * by the group's change of objective over the bytes the group saves.
 * False when no move is left (then the caller discards the plan).
 */
struct at_cand {
	double ratio;
	int v, t;
	bool group;
};

static int
at_cand_cmp(const void *x, const void *y)
{
	const struct at_cand *a = x, *b = y;

	return a->ratio < b->ratio ? -1 : a->ratio > b->ratio;
}

/*
 * What a move costs per byte it frees at an overloaded time, counting no
 * more bytes than the excess there: freeing 50 MB where 1 MB is missing
 * buys 1 MB.  The repair and the exchanges price their moves so.
 */
static double
at_per_byte(int64_t dcost, int64_t freed, int64_t excess)
{
	return (double)dcost / (double)(freed < excess ? freed : excess);
}

static int at_group_build(at *a, int v, int t);
static void at_group_delta(const at *a, int ng, int64_t *before,
    int64_t *after);
static void at_group_apply(at *a, int ng);

/* Bytes the group in gbuf saves at segment seg. */
static int64_t
at_group_saves(const at *a, int ng, int seg)
{
	int64_t d = 0;

	for (int i = 0; i < ng; i++) {
		int w = a->gbuf[i];
		if (a->slo[w] <= seg && seg < a->shi[w])
			d += a->p->usage[w][a->x[w]] - a->p->usage[w][a->gnew[w]];
	}
	return d;
}

static bool
at_repair(at *a)
{
	const sl_problem *p = a->p;
	struct at_cand *c = sl_xmalloc(((size_t)a->n + 1) * sizeof *c);
	int *moved = sl_xcalloc((size_t)a->n + 1, sizeof *moved), batch = 0;

	/* a compound move may load other times: rounds are bounded */
	while (at_peak(a) > a->limit && batch < 4 * a->n + 64) {
		int seg, nc = 0;
		int64_t excess;
		bool any = false;

		if (at_over(a))
			break;
		seg = at_peak_seg(a);
		excess = at_peak(a) - a->limit;
		/* each live node's cheapest bytes saved there, bytes past the
		 * excess not counted */
		for (int v = 0; v < a->n; v++) {
			if (a->slo[v] > seg || a->shi[v] <= seg)
				continue;
			int s = a->x[v], bt = -1;
			int64_t u = p->usage[v][s], cur = -1;
			double br = INFINITY;
			bool bg = false;
			for (int t = 0; t < p->k[v]; t++) {
				if (!a->ok[v][t] || p->usage[v][t] >= u)
					continue;
				if (cur < 0)
					cur = at_local(a, v, s);
				int64_t lt = at_local(a, v, t);
				double ratio;
				bool g = false;
				if (lt >= AT_HARD && cur < AT_HARD) {
					/* the neighbours on impossible pairs
					 * follow */
					int64_t before, after, saved;
					int ng = at_group_build(a, v, t);
					if (ng == 0)
						continue;
					at_group_delta(a, ng, &before, &after);
					saved = at_group_saves(a, ng, seg);
					if (saved <= 0)
						continue;
					ratio = at_per_byte(after - before, saved,
					    excess);
					g = true;
				} else {
					ratio = at_per_byte(lt - cur,
					    u - p->usage[v][t], excess);
				}
				if (ratio < br) {
					br = ratio;
					bt = t;
					bg = g;
				}
			}
			if (bt >= 0) {
				c[nc].ratio = br;
				c[nc].v = v;
				c[nc].group = bg;
				c[nc++].t = bt;
			}
		}
		/* the cheapest first until this segment fits; each move was
		 * priced alone, so a node a move touched waits for the next
		 * round */
		qsort(c, (size_t)nc, sizeof *c, at_cand_cmp);
		batch++;
		for (int i = 0; i < nc; i++) {
			int v = c[i].v, ng = 1;
			if (moved[v] == batch || c[i].t == a->x[v])
				continue;
			if (c[i].group) {
				ng = at_group_build(a, v, c[i].t);
				if (ng == 0 || at_group_saves(a, ng, seg) <= 0)
					continue;
			} else {
				a->gbuf[0] = v;
				a->gnew[v] = c[i].t;
			}
			for (int g = 0; g < ng; g++) {
				int w = a->gbuf[g];
				moved[w] = batch;
				for (int j = a->aoff[w]; j < a->aoff[w + 1]; j++)
					moved[at_other(p, a->aedge[j], w)] = batch;
			}
			at_group_apply(a, ng);
			any = true;
			if (seg_max_rec(a, 1, 0, a->nseg, seg, seg + 1) <= a->limit)
				break;
		}
		if (!any)
			break;
	}
	free(c);
	free(moved);
	a->cost = at_score(a);
	return at_peak(a) <= a->limit;
}

/*
 * Exchanges at the limit.  A move (its nodes marked with the current stamp)
 * that lowers the objective by gain but breaks the limit is paid for by
 * freeing memory elsewhere: while the peak is over the limit, the unmarked
 * node live at the peak whose strategy of less usage costs least per byte
 * it frees there (bytes past the excess not counted) moves, priced against
 * the plan as it stands.  True when the plan fits again having spent less
 * than gain (*spent: the objective's change by these moves); otherwise its
 * own moves are undone.
 */
#define AT_FIX_STEPS 64

static bool
at_fix(at *a, int64_t gain, int64_t *spent)
{
	const sl_problem *p = a->p;
	int nf = 0;
	int64_t sp = 0;

	while (at_peak(a) > a->limit && nf < AT_FIX_STEPS) {
		int seg = at_peak_seg(a), bv = -1, bt = -1;
		int64_t excess = at_peak(a) - a->limit, bdc = 0;
		double br = INFINITY;

		for (int v = 0; v < a->n; v++) {
			if (a->slo[v] > seg || a->shi[v] <= seg ||
			    a->wstamp[v] == a->stamp)
				continue;
			int s = a->x[v];
			int64_t u = p->usage[v][s], cur = INT64_MIN;
			for (int t = 0; t < p->k[v]; t++) {
				if (!a->ok[v][t] || p->usage[v][t] >= u)
					continue;
				if (cur == INT64_MIN)
					cur = at_local(a, v, s);
				int64_t dc = at_local(a, v, t) - cur;
				double ratio = at_per_byte(dc,
				    u - p->usage[v][t], excess);
				if (ratio < br) {
					br = ratio;
					bv = v;
					bt = t;
					bdc = dc;
				}
			}
		}
		if (bv < 0 || sp + bdc >= gain)
			break;
		a->fixv[nf] = bv;
		a->fixs[nf++] = a->x[bv];
		at_load_move(a, bv, a->x[bv], bt);
		a->x[bv] = bt;
		sp += bdc;
	}
	if (at_peak(a) <= a->limit && sp < gain) {
		*spent = sp;
		return true;
	}
	while (nf-- > 0) {
		int v = a->fixv[nf];
		at_load_move(a, v, a->x[v], a->fixs[nf]);
		a->x[v] = a->fixs[nf];
	}
	return false;
}

/*
 * Every node's cheapest strategy given its neighbours, when it breaks the
 * limit, paid for by at_fix (ICM takes the moves that fit).
 */
static void
at_swap_pass(at *a)
{
	const sl_problem *p = a->p;

	if (!a->has_mem || a->priced)
		return;
	for (int i = 0; i < a->n && !at_over(a); i++) {
		int v = (int)(((int64_t)i * 7919 + a->gshift) % a->n), s = a->x[v];
		int bt = s;
		int64_t cur, bc, spent;

		if ((i & 255) == 0 && at_ms(a) >= a->until_ms)
			break;
		if (a->slo[v] >= a->shi[v])
			continue;
		cur = bc = at_local(a, v, s);
		for (int t = 0; t < p->k[v]; t++) {
			if (t == s || !a->ok[v][t])
				continue;
			int64_t c = at_local(a, v, t);
			if (c < bc) {
				bc = c;
				bt = t;
			}
		}
		if (bt == s)
			continue;
		a->stamp++;
		a->wstamp[v] = a->stamp;
		at_load_move(a, v, s, bt);
		a->x[v] = bt;
		spent = 0;
		if (at_peak(a) <= a->limit || at_fix(a, cur - bc, &spent)) {
			a->cost = at_shift(a, cur, bc + spent);
			a->improved++;
			at_record(a);
			continue;
		}
		at_load_move(a, v, bt, s);
		a->x[v] = s;
	}
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
		a->woff[i] = (int)off;
		off += (size_t)p->k[v];
		a->waoff[i] = (int)aoffs;
		aoffs += a->wpar[v] >= 0 ? (size_t)p->k[a->wpar[v]] : 0;
		a->wpos[v] = i;
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
				c = sl_add_sat(c, at_priced(p->usage[v][s], price[i]));
			for (int j = a->aoff[v]; j < a->aoff[v + 1]; j++) {
				int e = a->aedge[j], w = at_other(p, e, v);
				if (a->wstamp[w] == a->stamp)
					continue;	/* inside: a tree edge */
				c = sl_add_sat(c, at_ecell(p, e, v, s, a->x[w]));
			}
			u[s] = c;
		}
	}
	/* children before parents: messages up, parent index found by search */
	for (int i = nw - 1; i > 0; i--) {
		int v = a->worder[i], par = a->wpar[v], e = a->wpe[v];
		int pi = a->wpos[par];
		int64_t *u = a->wu + a->woff[i];
		int *arg = a->warg + a->waoff[i];
		int64_t *up = a->wu + a->woff[pi];
		for (int sp = 0; sp < p->k[par]; sp++) {
			int64_t bm = INT64_MAX;
			int bs = 0;
			if (up[sp] == INT64_MAX) {
				arg[sp] = 0;
				continue;
			}
			for (int s = 0; s < p->k[v]; s++) {
				if (u[s] == INT64_MAX)
					continue;
				int64_t c = sl_add_sat(u[s], at_ecell(p, e, v, s, sp));
				if (c < bm) {
					bm = c;
					bs = s;
				}
			}
			arg[sp] = bs;
			up[sp] = sl_add_sat(up[sp], bm);
		}
	}
	{
		int64_t *u = a->wu;
		int v = a->worder[0], bs = a->x[v];
		int64_t bm = INT64_MAX;
		for (int s = 0; s < p->k[v]; s++)
			if (u[s] < bm) {
				bm = u[s];
				bs = s;
			}
		a->wy[0] = bs;
	}
	for (int i = 1; i < nw; i++) {
		int pi = a->wpos[a->wpar[a->worder[i]]];
		a->wy[i] = a->warg[a->waoff[i] + a->wy[pi]];
	}
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
	const sl_problem *p = a->p;
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
				if (a->slo[v] >= a->shi[v] ||
				    p->usage[v][a->x[v]] == 0)
					continue;
				if (seg_max_rec(a, 1, 0, a->nseg, a->slo[v],
				    a->shi[v]) > a->limit) {
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
					    at_priced(p->usage[v][s], price[i]));
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
		sl_dp_work_cap = left * 1e5 < AT_DP_WORK ? left * 1e5 : AT_DP_WORK;
		if (sl_dp_work_cap < 1e4)
			sl_dp_work_cap = 1e4;
	}
	ok = sl_solve_dp(q, NULL, &sol, &err) == SL_OK &&
	    sol.status == SL_SOLVE_OPTIMAL;
	sl_dp_work_cap = 0;
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

/* ------------------------------------------------ Lagrangian lower bound */

struct at_lag {
	int *order, *par, *pe;	/* spanning forest in BFS order */
	bool *tree;		/* edge in the forest */
	int64_t *u;		/* unary per strategy, CSR by node */
	size_t *uoff;
	int *arg;		/* argmin per parent strategy */
	size_t *aoff;
	double *lambda;		/* multiplier per segment */
	double *Lam;		/* sum of lambda over each node's segments */
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
	L->tree = sl_xcalloc((size_t)p->m + 1, sizeof *L->tree);
	for (int r = 0; r < n; r++) {
		int head = nw;
		if (seen[r])
			continue;
		seen[r] = true;
		L->par[r] = -1;
		L->pe[r] = -1;
		L->order[nw++] = r;
		while (head < nw) {
			int v = L->order[head++];
			for (int i = a->aoff[v]; i < a->aoff[v + 1]; i++) {
				int e = a->aedge[i], w = at_other(p, e, v);
				if (seen[w])
					continue;
				seen[w] = true;
				L->tree[e] = true;
				L->par[w] = v;
				L->pe[w] = e;
				L->order[nw++] = w;
			}
		}
	}
	free(seen);
	L->uoff = sl_xmalloc(((size_t)n + 1) * sizeof *L->uoff);
	L->aoff = sl_xmalloc(((size_t)n + 1) * sizeof *L->aoff);
	for (int v = 0; v < n; v++) {
		L->uoff[v] = uo;
		uo += (size_t)p->k[v];
		L->aoff[v] = ao;
		ao += L->par[v] >= 0 ? (size_t)p->k[L->par[v]] : 0;
	}
	L->u = sl_xmalloc((uo + 1) * sizeof *L->u);
	L->arg = sl_xmalloc((ao + 1) * sizeof *L->arg);
	L->lambda = sl_xcalloc((size_t)a->nseg + 1, sizeof *L->lambda);
	L->Lam = sl_xcalloc((size_t)n + 1, sizeof *L->Lam);
	L->xs = sl_xmalloc(((size_t)n + 1) * sizeof *L->xs);
	L->load = sl_xcalloc((size_t)a->nseg + 1, sizeof *L->load);
}

static void
at_lag_free(struct at_lag *L)
{
	free(L->order);
	free(L->par);
	free(L->pe);
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

	/* multipliers summed over each node's segments (prefix sums) */
	if (a->has_mem) {
		double *pre = sl_xmalloc(((size_t)a->nseg + 1) * sizeof *pre);
		pre[0] = 0;
		for (int q = 0; q < a->nseg; q++) {
			pre[q + 1] = pre[q] + L->lambda[q];
			sumlam += (long double)L->lambda[q] *
			    ((long double)a->limit - (long double)a->base[q]);
		}
		for (int v = 0; v < a->n; v++)
			L->Lam[v] = a->slo[v] < a->shi[v] ?
			    pre[a->shi[v]] - pre[a->slo[v]] : 0;
		free(pre);
	}
	for (int v = 0; v < a->n; v++) {
		int64_t *u = L->u + L->uoff[v];
		for (int s = 0; s < p->k[v]; s++) {
			if (!a->ok[v][s]) {
				u[s] = INT64_MAX;
				continue;
			}
			/* the price floors, so the bound stays a bound */
			int64_t c = p->cost[v][s];
			if (a->has_mem && L->Lam[v] > 0)
				c = sl_add_sat(c, (int64_t)floor(L->Lam[v] *
				    (double)p->usage[v][s]));
			u[s] = c;
		}
	}
	/* non-tree edges: row minima onto their first end */
	for (int e = 0; e < p->m; e++) {
		if (L->tree[e])
			continue;
		int v0 = p->edge[e][0], v1 = p->edge[e][1];
		int64_t *u = L->u + L->uoff[v0];
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
	for (int i = a->n - 1; i >= 0; i--) {
		int v = L->order[i], par = L->par[v];
		int64_t *u = L->u + L->uoff[v];
		if (par < 0) {
			int64_t bm = INT64_MAX;
			int bs = 0;
			for (int s = 0; s < p->k[v]; s++)
				if (u[s] < bm) {
					bm = u[s];
					bs = s;
				}
			L->xs[v] = bs;
			total += bm == INT64_MAX ? (long double)INFINITY : bm;
			continue;
		}
		int64_t *up = L->u + L->uoff[par];
		int *arg = L->arg + L->aoff[v];
		for (int sp = 0; sp < p->k[par]; sp++) {
			int64_t bm = INT64_MAX;
			int bs = 0;
			if (up[sp] == INT64_MAX) {
				arg[sp] = 0;
				continue;
			}
			for (int s = 0; s < p->k[v]; s++) {
				if (u[s] == INT64_MAX)
					continue;
				int64_t c = sl_add_sat(u[s],
				    at_ecell(p, L->pe[v], v, s, sp));
				if (c < bm) {
					bm = c;
					bs = s;
				}
			}
			arg[sp] = bs;
			up[sp] = sl_add_sat(up[sp], bm);
		}
	}
	for (int i = 0; i < a->n; i++) {
		int v = L->order[i];
		if (L->par[v] >= 0)
			L->xs[v] = L->arg[L->aoff[v] + L->xs[L->par[v]]];
	}
	return total - sumlam;
}

/* The relaxed optimum's load per segment (difference array). */
static void
at_lag_load(at *a, struct at_lag *L)
{
	int64_t cur = 0;

	memset(L->load, 0, ((size_t)a->nseg + 1) * sizeof *L->load);
	for (int v = 0; v < a->n; v++) {
		if (a->slo[v] >= a->shi[v])
			continue;
		L->load[a->slo[v]] += a->p->usage[v][L->xs[v]];
		L->load[a->shi[v]] -= a->p->usage[v][L->xs[v]];
	}
	for (int q = 0; q <= a->nseg; q++) {
		cur += L->load[q];
		L->load[q] = q < a->nseg ? cur + a->base[q] : 0;
	}
}

/* ------------------------------------------------------------- the solver */

static int
at_cmp64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return a < b ? -1 : a > b;
}

static int
at_find_time(const int64_t *t, int nt, int64_t v)
{
	int lo = 0, hi = nt;

	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (t[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void
at_build(at *a, const sl_problem *p, uint8_t **ok, const int64_t (*fixed)[3],
    int nfixed)
{
	int n = p->n;
	int *deg = sl_xcalloc((size_t)n + 1, sizeof *deg);

	a->p = p;
	a->n = n;
	a->ok = ok;
	a->aoff = sl_xcalloc((size_t)n + 2, sizeof *a->aoff);
	a->aedge = sl_xmalloc(2 * ((size_t)p->m + 1) * sizeof *a->aedge);
	for (int e = 0; e < p->m; e++) {
		a->aoff[p->edge[e][0] + 1]++;
		a->aoff[p->edge[e][1] + 1]++;
	}
	for (int v = 0; v < n; v++)
		a->aoff[v + 1] += a->aoff[v];
	for (int e = 0; e < p->m; e++)
		for (int j = 0; j < 2; j++) {
			int v = p->edge[e][j];
			a->aedge[a->aoff[v] + deg[v]++] = e;
		}
	free(deg);
	a->has_mem = p->usage_limit >= 0 && p->interval != NULL &&
	    p->usage != NULL;
	a->limit = a->has_mem ? p->usage_limit : INT64_MAX;
	a->slo = sl_xcalloc((size_t)n + 1, sizeof *a->slo);
	a->shi = sl_xcalloc((size_t)n + 1, sizeof *a->shi);
	a->nseg = 0;
	if (a->has_mem) {
		int64_t *t = sl_xmalloc((2 * (size_t)n + 2 * (size_t)nfixed + 1) *
		    sizeof *t);
		int nt = 0;
		for (int v = 0; v < n; v++)
			if (p->interval[v][0] < p->interval[v][1]) {
				t[nt++] = p->interval[v][0];
				t[nt++] = p->interval[v][1];
			}
		for (int f = 0; f < nfixed; f++)
			if (fixed[f][0] < fixed[f][1]) {
				t[nt++] = fixed[f][0];
				t[nt++] = fixed[f][1];
			}
		qsort(t, (size_t)nt, sizeof *t, at_cmp64);
		int u = 0;
		for (int i = 0; i < nt; i++)
			if (u == 0 || t[u - 1] != t[i])
				t[u++] = t[i];
		a->nseg = u > 1 ? u - 1 : 0;
		for (int v = 0; v < n; v++)
			if (p->interval[v][0] < p->interval[v][1]) {
				a->slo[v] = at_find_time(t, u, p->interval[v][0]);
				a->shi[v] = at_find_time(t, u, p->interval[v][1]);
			}
		a->base = sl_xcalloc((size_t)a->nseg + 1, sizeof *a->base);
		for (int f = 0; f < nfixed; f++)
			if (fixed[f][0] < fixed[f][1]) {
				int l = at_find_time(t, u, fixed[f][0]);
				int r = at_find_time(t, u, fixed[f][1]);
				for (int q = l; q < r; q++)
					a->base[q] += fixed[f][2];
			}
		free(t);
		a->tsize = 1;
		while (a->tsize < a->nseg)
			a->tsize *= 2;
		/* recursion indexes nodes up to 4 * nseg */
		a->tmax = sl_xcalloc(4 * (size_t)a->tsize + 4, sizeof *a->tmax);
		a->tadd = sl_xcalloc(4 * (size_t)a->tsize + 4, sizeof *a->tadd);
		a->tsize *= 2;
		if (a->nseg == 0)
			a->has_mem = p->usage_limit < 0 ? false : a->has_mem;
	}
	if (a->base == NULL)
		a->base = sl_xcalloc(1, sizeof *a->base);
	a->x = sl_xcalloc((size_t)n + 1, sizeof *a->x);
	a->best = sl_xcalloc((size_t)n + 1, sizeof *a->best);
	a->best_cost = INT64_MAX;
	a->first_ms = -1;
	a->wstamp = sl_xcalloc((size_t)n + 1, sizeof *a->wstamp);
	a->worder = sl_xmalloc(((size_t)n + 1) * sizeof *a->worder);
	a->wpar = sl_xmalloc(((size_t)n + 1) * sizeof *a->wpar);
	a->wpe = sl_xmalloc(((size_t)n + 1) * sizeof *a->wpe);
	a->wy = sl_xmalloc(((size_t)n + 1) * sizeof *a->wy);
	a->woff = sl_xmalloc(((size_t)n + 1) * sizeof *a->woff);
	a->waoff = sl_xmalloc(((size_t)n + 1) * sizeof *a->waoff);
	a->wpos = sl_xmalloc(((size_t)n + 1) * sizeof *a->wpos);
	a->gbuf = sl_xmalloc(((size_t)n + 1) * sizeof *a->gbuf);
	a->hard = sl_xmalloc((AT_HARD_LIST + 1) * sizeof *a->hard);
	a->gnew = sl_xmalloc(((size_t)n + 1) * sizeof *a->gnew);
	a->fixv = sl_xmalloc((AT_FIX_STEPS + 1) * sizeof *a->fixv);
	a->fixs = sl_xmalloc((AT_FIX_STEPS + 1) * sizeof *a->fixs);
	a->wprice = sl_xcalloc((size_t)n + 1, sizeof *a->wprice);
	{
		size_t most = 0, k2 = 0;
		for (int v = 0; v < n; v++) {
			most += (size_t)p->k[v];
			if ((size_t)p->k[v] > k2)
				k2 = (size_t)p->k[v];
		}
		/* a window holds at most AT_WINDOW_MAX nodes */
		size_t cap = k2 * AT_WINDOW_MAX;
		if (cap > most)
			cap = most;
		a->wu = sl_xmalloc((cap + 1) * sizeof *a->wu);
		/* one entry per strategy of each window node's parent */
		cap = k2 * (size_t)(n < AT_WINDOW_MAX ? n : AT_WINDOW_MAX);
		a->warg = sl_xmalloc((cap + 1) * sizeof *a->warg);
	}
	a->mu = 1;
	a->ball = 24;
	a->nc = p->cost;
	a->pc = sl_xcalloc((size_t)n + 1, sizeof *a->pc);
	for (int v = 0; v < n; v++)
		a->pc[v] = sl_xmalloc((size_t)p->k[v] * sizeof **a->pc);
	a->rng = 0x9e3779b97f4a7c15ULL;
}

static void
at_free(at *a)
{
	if (a->pc != NULL)
		for (int v = 0; v < a->n; v++)
			free(a->pc[v]);
	free(a->pc);
	free(a->aoff);
	free(a->aedge);
	free(a->slo);
	free(a->shi);
	free(a->base);
	free(a->tmax);
	free(a->tadd);
	free(a->x);
	free(a->best);
	free(a->wstamp);
	free(a->worder);
	free(a->wpar);
	free(a->wpe);
	free(a->wy);
	free(a->woff);
	free(a->waoff);
	free(a->wpos);
	free(a->gbuf);
	free(a->hard);
	free(a->gnew);
	free(a->fixv);
	free(a->fixs);
	free(a->wprice);
	free(a->wu);
	free(a->warg);
}

/* A first price per byte, from the spreads of cost over spreads of usage. */
static int64_t
at_first_price(const at *a)
{
	const sl_problem *p = a->p;
	double *r = sl_xmalloc(((size_t)a->n + 1) * sizeof *r);
	int nr = 0;
	int64_t mu;

	for (int v = 0; v < a->n; v++) {
		int64_t cmin = INT64_MAX, cmax = INT64_MIN, umin = INT64_MAX,
		    umax = INT64_MIN;
		if (a->slo[v] >= a->shi[v])
			continue;
		for (int s = 0; s < p->k[v]; s++) {
			if (!a->ok[v][s])
				continue;
			if (p->cost[v][s] < cmin)
				cmin = p->cost[v][s];
			if (p->cost[v][s] > cmax)
				cmax = p->cost[v][s];
			if (p->usage[v][s] < umin)
				umin = p->usage[v][s];
			if (p->usage[v][s] > umax)
				umax = p->usage[v][s];
		}
		if (umax > umin && cmax > cmin)
			r[nr++] = ((double)cmax - (double)cmin) /
			    ((double)umax - (double)umin);
	}
	if (nr == 0) {
		free(r);
		return (int64_t)1 << AT_PRICE_SHIFT;
	}
	/*
	 * A rough scale only: the first 4097 ratios are sorted and the one in
	 * the middle of the list taken, which on large problems is some node's
	 * ratio, not the median.  The multipliers adapt from it; a true median
	 * made the first plan on instance S come 20 s later, so the scale is
	 * left as measured until the schedule is tuned on more instances.
	 */
	for (int i = 1; i < nr; i++) {
		double x = r[i];
		int j = i;
		while (j > 0 && r[j - 1] > x) {
			r[j] = r[j - 1];
			j--;
		}
		r[j] = x;
		if (i > 4096)
			break;
	}
	mu = (int64_t)(r[nr / 2] * (double)((int64_t)1 << AT_PRICE_SHIFT) / 16);
	free(r);
	return mu > 0 ? mu : 1;
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
	int *y = sl_xmalloc((size_t)n * sizeof *y);
	size_t *uoff = sl_xmalloc(((size_t)n + 1) * sizeof *uoff);
	size_t *aoff = sl_xmalloc(((size_t)n + 1) * sizeof *aoff);
	int64_t *u;
	int *arg;
	int r0 = at_rnd(a, n);
	size_t uo = 0, ao = 0;
	int64_t now;

	a->stamp++;
	for (int i = 0; i < n; i++) {
		int r = (r0 + i) % n, head = nw;
		if (a->wstamp[r] == a->stamp)
			continue;
		a->wstamp[r] = a->stamp;
		par[r] = -1;
		pe[r] = -1;
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
				par[w] = v;
				pe[w] = e;
				order[nw++] = w;
			}
		}
	}
	for (int v = 0; v < n; v++) {
		uoff[v] = uo;
		uo += (size_t)p->k[v];
		aoff[v] = ao;
		ao += par[v] >= 0 ? (size_t)p->k[par[v]] : 0;
	}
	u = sl_xmalloc((uo + 1) * sizeof *u);
	arg = sl_xmalloc((ao + 1) * sizeof *arg);
	for (int v = 0; v < n; v++) {
		int64_t *uv = u + uoff[v];
		for (int s = 0; s < p->k[v]; s++) {
			if (!a->ok[v][s]) {
				uv[s] = INT64_MAX;
				continue;
			}
			int64_t c = a->nc[v][s];
			for (int j = a->aoff[v]; j < a->aoff[v + 1]; j++) {
				int e = a->aedge[j], w = at_other(p, e, v);
				if (pe[v] == e || pe[w] == e)
					continue;
				c = sl_add_sat(c, at_ecell(p, e, v, s, a->x[w]) / 2);
			}
			uv[s] = c;
		}
	}
	for (int i = n - 1; i >= 0; i--) {
		int v = order[i], pv = par[v];
		int64_t *uv = u + uoff[v];
		if (pv < 0) {
			int64_t bm = INT64_MAX;
			int bs = a->x[v];
			for (int s = 0; s < p->k[v]; s++)
				if (uv[s] < bm) {
					bm = uv[s];
					bs = s;
				}
			y[v] = bs;
			continue;
		}
		int64_t *up = u + uoff[pv];
		int *av = arg + aoff[v];
		/* cell (s, sp) of the edge at c[s * ss + sp * sp1], in place */
		const int64_t *ec = p->ecost[pe[v]];
		size_t ss = p->edge[pe[v]][0] == v ? (size_t)p->k[pv] : 1;
		size_t sp1 = p->edge[pe[v]][0] == v ? 1 : (size_t)p->k[v];
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
	for (int i = 0; i < n; i++) {
		int v = order[i];
		if (par[v] >= 0)
			y[v] = arg[aoff[v] + y[par[v]]];
	}
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
	free(y);
	free(uoff);
	free(aoff);
	free(u);
	free(arg);
}

/*
 * A compound move: v takes t, and every neighbour left on an impossible pair
 * (cost at or above AT_HARD) follows to its cheapest compatible strategy,
 * and so on along the edges, as XLA's "follow" edges chain whole regions
 * together.  at_group_build lists the group in gbuf (marked with a fresh
 * stamp, new strategies in gnew) and returns its size, 0 when some node
 * cannot follow; at_group_delta gives the objective over the group and its
 * edges before and after.
 */
#define AT_GROUP_MAX 4096

static int
at_group_build(at *a, int v, int t)
{
	const sl_problem *p = a->p;
	int *grp = a->gbuf, ng = 0, head = 0;

	a->stamp++;
	a->wstamp[v] = a->stamp;
	a->gnew[v] = t;
	grp[ng++] = v;
	while (head < ng) {
		int w = grp[head++];
		for (int j = a->aoff[w]; j < a->aoff[w + 1]; j++) {
			int e = a->aedge[j], z = at_other(p, e, w);
			bool in = a->wstamp[z] == a->stamp;
			int cz = in ? a->gnew[z] : a->x[z], bz = -1;
			int64_t bc = INT64_MAX;
			if (at_ecell(p, e, w, a->gnew[w], cz) < AT_HARD)
				continue;
			if (in || ng >= AT_GROUP_MAX)
				return 0;
			for (int q = 0; q < p->k[z]; q++) {
				if (!a->ok[z][q] ||
				    at_ecell(p, e, w, a->gnew[w], q) >= AT_HARD)
					continue;
				int64_t c = a->nc[z][q];
				if (c < bc) {
					bc = c;
					bz = q;
				}
			}
			if (bz < 0)
				return 0;
			a->wstamp[z] = a->stamp;
			a->gnew[z] = bz;
			grp[ng++] = z;
		}
	}
	return ng;
}

static void
at_group_delta(const at *a, int ng, int64_t *before, int64_t *after)
{
	const sl_problem *p = a->p;
	const int *grp = a->gbuf;

	*before = *after = 0;
	for (int i = 0; i < ng; i++) {
		int w = grp[i];
		*before = sl_add_sat(*before, a->nc[w][a->x[w]]);
		*after = sl_add_sat(*after, a->nc[w][a->gnew[w]]);
		for (int j = a->aoff[w]; j < a->aoff[w + 1]; j++) {
			int e = a->aedge[j], z = at_other(p, e, w);
			bool in = a->wstamp[z] == a->stamp;
			if (in && z < w)
				continue;
			*before = sl_add_sat(*before,
			    at_ecell(p, e, w, a->x[w], a->x[z]));
			*after = sl_add_sat(*after, at_ecell(p, e, w, a->gnew[w],
			    in ? a->gnew[z] : a->x[z]));
		}
	}
}

/* The group takes its new strategies; gnew keeps the old ones to undo. */
static void
at_group_apply(at *a, int ng)
{
	for (int i = 0; i < ng; i++) {
		int w = a->gbuf[i], s = a->x[w];
		at_load_move(a, w, s, a->gnew[w]);
		a->x[w] = a->gnew[w];
		a->gnew[w] = s;
	}
}

/* Kept when the objective falls and the limit holds (or at_fix pays). */
static bool
at_group_move(at *a, int v, int t)
{
	int ng = at_group_build(a, v, t);
	int64_t before, after, spent = 0;

	if (ng == 0)
		return false;
	at_group_delta(a, ng, &before, &after);
	if (after >= before)
		return false;
	at_group_apply(a, ng);
	if (at_peak(a) > a->limit && !at_fix(a, before - after, &spent)) {
		at_group_apply(a, ng);
		return false;
	}
	a->cost = at_shift(a, before, after + spent);
	a->improved++;
	at_record(a);
	return true;
}

/*
 * Path relinking from the current plan (which keeps the limit) towards
 * plan y (a priced plan that breaks it): the nodes where the two differ
 * fall into connected parts of the graph (cut at AT_RELINK_MAX nodes), and
 * each part takes y's strategies when that lowers the objective and the
 * limit holds, or at_fix pays for it.  The priced search moves whole
 * regions together, which single moves and the repair cannot.
 */
/* Largest part relinked at once (nodes). */
#define AT_RELINK_MAX 32

static void
at_relink(at *a, const int *y)
{
	const sl_problem *p = a->p;
	int *comp = a->gbuf;

	for (int r = 0; r < a->n && !at_over(a); r++) {
		int ng = 0, head = 0;
		int64_t before, after, spent = 0;

		if (a->x[r] == y[r] || !a->ok[r][y[r]])
			continue;
		a->stamp++;
		a->wstamp[r] = a->stamp;
		comp[ng++] = r;
		while (head < ng) {
			int w = comp[head++];
			a->gnew[w] = y[w];
			for (int j = a->aoff[w]; j < a->aoff[w + 1]; j++) {
				int z = at_other(p, a->aedge[j], w);
				if (a->wstamp[z] == a->stamp || a->x[z] == y[z] ||
				    !a->ok[z][y[z]] || ng >= AT_RELINK_MAX)
					continue;
				a->wstamp[z] = a->stamp;
				comp[ng++] = z;
			}
		}
		at_group_delta(a, ng, &before, &after);
		if (after >= before)
			continue;
		at_group_apply(a, ng);
		if (at_peak(a) > a->limit && !at_fix(a, before - after, &spent)) {
			at_group_apply(a, ng);
			continue;
		}
		a->cost = at_shift(a, before, after + spent);
		a->improved++;
		at_record(a);
	}
}

/* Every node tries its other strategies as compound moves. */
static void
at_group_pass(at *a)
{
	for (int i = 0; i < a->n && !at_over(a); i++) {
		int v = (int)(((int64_t)i * 7919 + a->gshift) % a->n);
		if ((i & 255) == 0 && at_ms(a) >= a->until_ms)
			break;
		for (int t = 0; t < a->p->k[v]; t++)
			if (t != a->x[v] && a->ok[v][t] && at_group_move(a, v, t))
				break;
	}
	a->gshift += 1;
}

/* The nodes on impossible pairs of the current plan (some of them). */
static void
at_find_hard(at *a)
{
	const sl_problem *p = a->p;

	a->nhard = 0;
	for (int e = 0; e < p->m && a->nhard < AT_HARD_LIST; e++) {
		int u = p->edge[e][0], v = p->edge[e][1];
		if (p->ecost[e][(size_t)a->x[u] * p->k[v] + a->x[v]] >= AT_HARD)
			a->hard[a->nhard++] = at_rnd(a, 2) ? u : v;
	}
	for (int v = 0; v < a->n && a->nhard < AT_HARD_LIST; v++)
		if (p->cost[v][a->x[v]] >= AT_HARD)
			a->hard[a->nhard++] = v;
}

/* Windows until the deadline (or the bound is reached). */
static void
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
		double L = a->slo[v] < a->shi[v] ?
		    pre[a->shi[v]] - pre[a->slo[v]] : 0;
		for (int s = 0; s < p->k[v]; s++) {
			double c = L * (double)p->usage[v][s];
			out[v][s] = sl_add_sat(p->cost[v][s],
			    c > 1e17 ? (int64_t)1e17 : (int64_t)floor(c));
		}
	}
}

/* Load per segment of plan x, fixed loads included. */
static void
at_plan_load(const at *a, const int *x, int64_t *load)
{
	int64_t cur = 0;

	memset(load, 0, ((size_t)a->nseg + 1) * sizeof *load);
	for (int v = 0; v < a->n; v++)
		if (a->slo[v] < a->shi[v]) {
			load[a->slo[v]] += a->p->usage[v][x[v]];
			load[a->shi[v]] -= a->p->usage[v][x[v]];
		}
	for (int q = 0; q < a->nseg; q++) {
		cur += load[q];
		load[q] = cur + a->base[q];
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

/*
 * The limit priced into node costs: multipliers per time segment rise where
 * the priced search's plan overloads the memory and fall elsewhere, faster
 * where more memory is free; the
 * priced problem is searched without the limit, and its plan, repaired to
 * the limit and improved under it, is a candidate.  Until 75% of the time,
 * in rounds of a twelfth of it, at most AT_ROUND_MAX each.
 */
static void
at_priced_search(at *a, long double *lb)
{
	const sl_problem *p = a->p;
	double *lam = sl_xcalloc((size_t)a->nseg + 1, sizeof *lam);
	double *pre = sl_xmalloc(((size_t)a->nseg + 1) * sizeof *pre);
	int64_t *load = sl_xmalloc(((size_t)a->nseg + 1) * sizeof *load);
	int *px = sl_xmalloc((size_t)a->n * sizeof *px);
	double lam0 = (double)at_first_price(a) /
	    (double)((int64_t)1 << AT_PRICE_SHIFT);
	double end = at_ms(a) + (a->deadline_ms - at_ms(a)) * 0.75;
	double slice = (end - at_ms(a)) / 12 < AT_ROUND_MAX ?
	    (end - at_ms(a)) / 12 : AT_ROUND_MAX;
	int64_t limit = a->limit;
	struct at_tr R;

	at_tr_init(a, &R);
	memcpy(px, a->x, (size_t)a->n * sizeof *px);
	for (int round = 0; at_ms(a) < end && !at_over(a) && !a->proved;
	    round++) {
		int64_t cur = 0;
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
		memset(load, 0, ((size_t)a->nseg + 1) * sizeof *load);
		for (int v = 0; v < a->n; v++)
			if (a->slo[v] < a->shi[v]) {
				load[a->slo[v]] += p->usage[v][a->x[v]];
				load[a->shi[v]] -= p->usage[v][a->x[v]];
			}
		for (int q = 0; q < a->nseg; q++) {
			double slack;
			cur += load[q];
			if (cur + a->base[q] > limit) {
				over = true;
				lam[q] = lam[q] * 1.5 + lam0 * 0.05;
				continue;
			}
			/* down as fast as the memory is free there: 1% free,
			 * a tenth off; 5% or more, half */
			slack = (double)(limit - cur - a->base[q]) / (double)limit;
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
 * The search on a (reduced) problem.  fixed lists loads [lo, hi, usage] that
 * no choice changes (contracted nodes).  On return a->best holds the best
 * plan (a->best_cost INT64_MAX when none), *bound the best lower bound.
 */
static void
at_search(at *a, long double *bound, bool *infeasible)
{
	const sl_problem *p = a->p;
	struct at_lag L;
	long double lb = -INFINITY;

	*infeasible = false;
	/* 1. least usage everywhere: the lightest plan there is */
	for (int v = 0; v < a->n; v++) {
		int bs = -1;
		for (int s = 0; s < p->k[v]; s++) {
			if (!a->ok[v][s])
				continue;
			if (bs < 0 || (a->has_mem &&
			    p->usage[v][s] < p->usage[v][bs]) ||
			    ((!a->has_mem || p->usage[v][s] == p->usage[v][bs]) &&
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
	if (at_peak(a) > a->limit) {
		*infeasible = true;
		*bound = INFINITY;
		return;
	}
	a->cost = at_score(a);
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
	at_lag_init(a, &L);
	{
		double step = 1.0, lastv = -INFINITY;
		int stale = 0;
		int iters = a->has_mem ? 40 : 1;
		double budget = at_ms(a) + (a->deadline_ms - at_ms(a)) * 0.05;

		for (int it = 0; it < iters && at_ms(a) < budget && !at_over(a);
		    it++) {
			long double v = at_lag_solve(a, &L);
			if (v > lb)
				lb = v;
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

	/* 4. large neighbourhood search from the best plan */
	memcpy(a->x, a->best, (size_t)a->n * sizeof *a->x);
	a->cost = a->best_cost;
	at_load_reset(a);
	at_lns(a, lb, a->deadline_ms);
	*bound = a->proved ? (long double)a->best_cost : lb;
}

/*
 * How many searches run side by side: by default one per processor this
 * process may run on (its affinity, as taskset and batch schedulers' CPU
 * sets leave it), else per online processor.
 */
static int
at_threads(const sl_solve_opts *o)
{
	long n = 0;
	cpu_set_t cs;

	if (o != NULL && o->first_plan)
		return 1;	/* the first plan, as soon as one search has it */
	if (o != NULL && o->threads > 0)
		return o->threads < AT_THREADS_MAX ? o->threads : AT_THREADS_MAX;
	CPU_ZERO(&cs);
	if (sched_getaffinity(0, sizeof cs, &cs) == 0)
		n = CPU_COUNT(&cs);
	if (n < 1)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > AT_THREADS_DEFAULT ? AT_THREADS_DEFAULT : (int)n;
}

struct at_job {
	at a;
	long double lb;
	bool infeasible;
};

static void *
at_job_run(void *arg)
{
	struct at_job *j = arg;

	at_search(&j->a, &j->lb, &j->infeasible);
	/* a proof, or no plan at all, holds for every search: stop them */
	if (j->a.done != NULL && (j->a.proved || j->infeasible ||
	    (j->a.best_cost < INT64_MAX && (long double)j->a.best_cost <= j->lb)))
		atomic_store(j->a.done, true);
	return NULL;
}

/*
 * at_search in nt threads on the same reduced problem, each
 * from its own random seed (the first one's is the single search's), and
 * the best plan kept.  The searches share nothing but the problem and a
 * flag that the first proof raises; runs of one search on the contest
 * instances vary by several percent with timing alone, and the best of
 * several is steadier.  On return *a is the search whose plan is best,
 * with every search's statistics, *lb the best bound of any.
 */
static void
at_portfolio(at *a, const sl_reduction *red, int nt, long double *lb,
    bool *infeasible)
{
	struct at_job *j = sl_xcalloc((size_t)nt, sizeof *j);
	pthread_t *th = sl_xcalloc((size_t)nt, sizeof *th);
	bool *run = sl_xcalloc((size_t)nt, sizeof *run);
	atomic_bool done;
	int best = 0;

	atomic_init(&done, false);
	for (int i = 0; i < nt; i++) {
		j[i].a.t0 = a->t0;
		j[i].a.o = a->o;
		j[i].a.deadline_ms = a->deadline_ms;
		j[i].a.until_ms = a->until_ms;
		at_build(&j[i].a, red->q, red->ok,
		    (const int64_t (*)[3])red->fixed, red->nfixed);
		j[i].a.rng += (uint64_t)i * 0xbf58476d1ce4e5b9ULL;
		j[i].a.done = nt > 1 ? &done : NULL;
	}
	/* the others in threads of their own; one that cannot start is
	 * left out */
	for (int i = 1; i < nt; i++)
		run[i] = pthread_create(&th[i], NULL, at_job_run, &j[i]) == 0;
	at_job_run(&j[0]);
	for (int i = 1; i < nt; i++)
		if (run[i])
			pthread_join(th[i], NULL);
	*lb = j[0].lb;
	*infeasible = j[0].infeasible;
	for (int i = 1; i < nt; i++) {
		if (!run[i])
			continue;
		if (j[i].lb > *lb)
			*lb = j[i].lb;
		if (j[i].a.best_cost < j[best].a.best_cost ||
		    (j[i].a.best_cost == j[best].a.best_cost &&
		    j[i].a.proved && !j[best].a.proved))
			best = i;
		j[0].a.stopped |= j[i].a.stopped;
	}
	for (int i = 0; i < nt; i++) {
		if (i == best || (i > 0 && !run[i]))
			continue;
		j[best].a.windows += j[i].a.windows;
		j[best].a.improved += j[i].a.improved;
		if (j[i].a.first_ms >= 0 && (j[best].a.first_ms < 0 ||
		    j[i].a.first_ms < j[best].a.first_ms))
			j[best].a.first_ms = j[i].a.first_ms;
	}
	j[best].a.stopped = j[0].a.stopped;
	j[best].a.done = NULL;
	*a = j[best].a;
	for (int i = 0; i < nt; i++)
		if (i != best)
			at_free(&j[i].a);
	free(j);
	free(th);
	free(run);
}

/*
 * Tries every assignment when there are few: exact, usage limit included.
 * Returns true when it answered.
 */
static bool
at_enumerate(const sl_problem *p, const sl_solve_opts *o, sl_solution *sol,
    sl_error *err)
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
	if (sl_solve_brute(p, o, sol, err) != SL_OK)
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

/* GLPK on the whole problem with the time left; kept when it does better. */
static void
at_ilp(const sl_problem *p, const sl_solve_opts *o, double ms, sl_solution *sol)
{
	sl_solve_opts io = { 0 };
	sl_solution alt;
	sl_error err;

	if (ms >= 0 && ms < 50)
		return;
	if (o != NULL)
		io = *o;
	io.time_limit = ms >= 0 ? ms / 1e3 : 0;	/* < 0: until proved */
	sl_error_clear(&err);
	sl_solution_init(&alt, p->n);
	if (sl_solve_ilp(p, &io, &alt, &err) == SL_OK &&
	    (alt.status == SL_SOLVE_OPTIMAL || alt.status == SL_SOLVE_FEASIBLE) &&
	    sl_problem_feasible(p, alt.choice)) {
		int64_t obj = sl_problem_score(p, alt.choice);
		if (obj <= sol->objective) {
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
	sl_reduction red;
	at a;
	bool use_ilp, unlimited;
	long double lb;
	bool infeasible;
	double limit_s = o != NULL && o->time_limit > 0 ? o->time_limit :
	    AT_DEFAULT_LIMIT;
	int rc;

	memset(&a, 0, sizeof a);
	clock_gettime(CLOCK_MONOTONIC, &a.t0);
	if (p->usage_limit >= 0 && (p->interval == NULL || p->usage == NULL))
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("anytime: a usage limit needs intervals and usages"));
	if (!sl_anytime_search_only && at_enumerate(p, o, sol, err))
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
	/* leave room to expand the plan and hand it back */
	a.deadline_ms = limit_s * 1e3 * 0.97 - 20;
	/* problems GLPK can prove in the time: search first, then the ILP */
	unlimited = o == NULL || o->time_limit <= 0;
	use_ilp = !sl_anytime_search_only && at_ilp_fits(p) &&
	    (unlimited || limit_s >= AT_ILP_MIN_SECONDS ||
	    at_strats(p) <= AT_ILP_SMALL);
	if (use_ilp)
		a.deadline_ms = limit_s * 1e3 * AT_ILP_SEARCH_SHARE;
	a.until_ms = a.deadline_ms;
	at_portfolio(&a, &red, at_threads(o), &lb, &infeasible);
	if (a.stopped) {
		sol->status = SL_SOLVE_CANCELLED;
	} else if (infeasible) {
		sol->status = SL_SOLVE_INFEASIBLE;
		sol->bound = INT64_MAX;
	} else if (a.best_cost == INT64_MAX) {
		sol->status = SL_SOLVE_LIMIT;
	} else {
		sl_reduce_expand(&red, a.best, sol->choice);
		sol->objective = sl_problem_score(p, sol->choice);
		if (a.best_cost >= AT_HARD) {
			/* it keeps the limit but takes an impossible pair */
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
	if (use_ilp && !a.stopped && !infeasible &&
	    sol->status != SL_SOLVE_OPTIMAL && !(o != NULL && o->first_plan))
		at_ilp(p, o, unlimited ? -1 : limit_s * 1e3 * 0.97 - at_ms(&a),
		    sol);
	snprintf(sol->note, sizeof sol->note,
	    _("reductions: %d of %d strategies dominated, %d leaves and %d chain nodes of %d contracted, %d nodes in %d groups of identical subgraphs, %d of them solved as copies; %ld windows, %ld improvements%s"),
	    red.dominated, at_strats(p), red.leaves, red.chains, p->n,
	    red.twin_nodes, red.twins.ngroups, red.merged, a.windows, a.improved, use_ilp ? _("; then ilp") : "");
	at_free(&a);
	sl_reduce_free(&red);
	return SL_OK;
}
