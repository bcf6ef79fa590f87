/*
 * anytime_state.c: the anytime search's state (anytime.h), built on the
 * reduced problem: the load over time in a segment tree (range add, range
 * maximum over the segments between interval ends), the nodes live at a
 * time by a stabbing index over that tree, what a move costs and whether
 * it keeps the limit, and the record of the best plan.
 */
#include "anytime.h"

#include <stdlib.h>

double
at_ms(const at *a)
{
	return sl_run_ms(&a->run);
}

bool
at_over(at *a)
{
	if (a->o != NULL && a->o->first_plan && a->first_ms >= 0)
		return true;
	return sl_run_over(&a->run);
}

static uint32_t
at_rand(at *a)
{
	a->rng ^= a->rng >> 12;
	a->rng ^= a->rng << 25;
	a->rng ^= a->rng >> 27;
	return (uint32_t)((a->rng * 2685821657736338717ULL) >> 32);
}

int
at_rnd(at *a, int n)
{
	return (int)(at_rand(a) % (uint32_t)n);
}

/* ------------------------------------------------------------ segment tree */

static void
at_seg_add(at *a, int node, int l, int r, int ql, int qr, int64_t d)
{
	if (qr <= l || r <= ql)
		return;
	if (ql <= l && r <= qr) {
		a->tmax[node] += d;
		a->tadd[node] += d;
		return;
	}
	int mid = (l + r) / 2;
	at_seg_add(a, 2 * node, l, mid, ql, qr, d);
	at_seg_add(a, 2 * node + 1, mid, r, ql, qr, d);
	a->tmax[node] = a->tadd[node] +
	    (a->tmax[2 * node] > a->tmax[2 * node + 1] ?
	    a->tmax[2 * node] : a->tmax[2 * node + 1]);
}

int64_t
at_seg_max(const at *a, int node, int l, int r, int ql, int qr)
{
	if (qr <= l || r <= ql)
		return INT64_MIN;
	if (ql <= l && r <= qr)
		return a->tmax[node];
	int mid = (l + r) / 2;
	int64_t x = at_seg_max(a, 2 * node, l, mid, ql, qr);
	int64_t y = at_seg_max(a, 2 * node + 1, mid, r, ql, qr);
	return (x > y ? x : y) + a->tadd[node];
}

/* Usage change of v from strategy s to t applied to the load. */
void
at_load_move(at *a, int v, int s, int t)
{
	if (!a->has_mem)
		return;
	for (int j = a->poff[v]; j < a->poff[v + 1]; j++) {
		int64_t d = (t >= 0 ? a->puse[j][t] : 0) -
		    (s >= 0 ? a->puse[j][s] : 0);
		if (d != 0)
			at_seg_add(a, 1, 0, a->nseg, a->plo[j], a->phi[j], d);
	}
}

/* Whether v uses memory that depends on its strategy. */
bool
at_has_pieces(const at *a, int v)
{
	return a->has_mem && a->poff[v] < a->poff[v + 1];
}

/* Adds (count: counts) piece j to the tree nodes covering its segments. */
static void
at_stab_add(at *a, int node, int l, int r, int j, bool count)
{
	if (a->phi[j] <= l || r <= a->plo[j])
		return;
	if (a->plo[j] <= l && r <= a->phi[j]) {
		if (count)
			a->xoff[node + 1]++;
		else
			a->xpc[a->xoff[node]++] = j;
		return;
	}
	at_stab_add(a, 2 * node, l, (l + r) / 2, j, count);
	at_stab_add(a, 2 * node + 1, (l + r) / 2, r, j, count);
}

static void
at_stab_build(at *a)
{
	size_t nt = 4 * (size_t)a->tsize + 4;
	int np = a->poff[a->n];

	a->xoff = sl_xcalloc(nt + 1, sizeof *a->xoff);
	for (int j = 0; j < np; j++)
		if (a->plo[j] < a->phi[j])
			at_stab_add(a, 1, 0, a->nseg, j, true);
	for (size_t i = 0; i < nt; i++)
		a->xoff[i + 1] += a->xoff[i];
	a->xpc = sl_xmalloc(((size_t)a->xoff[nt] + 1) * sizeof *a->xpc);
	for (int j = 0; j < np; j++)
		if (a->plo[j] < a->phi[j])
			at_stab_add(a, 1, 0, a->nseg, j, false);
	/* the fill advanced each start to the next one's: back */
	for (size_t i = nt; i > 0; i--)
		a->xoff[i] = a->xoff[i - 1];
	a->xoff[0] = 0;
}

/*
 * The nodes live at segment seg and their usage there per strategy (the
 * repair's and the exchanges' candidates), from the pieces on seg's path
 * down the segment tree.
 */
void
at_live_list(at *a, int seg)
{
	int node = 1, l = 0, r = a->nseg;
	size_t off = 0;

	a->nlv = 0;
	a->lvstamp++;
	for (;;) {
		for (int i = a->xoff[node]; i < a->xoff[node + 1]; i++) {
			int j = a->xpc[i], v = a->powner[j], k = a->p->k[v];
			int64_t *u;
			if (a->lvmark[v] != a->lvstamp) {
				a->lvmark[v] = a->lvstamp;
				a->lvpos[v] = a->nlv;
				a->lvn[a->nlv] = v;
				a->lvo[a->nlv++] = (int)off;
				memset(a->lvu + off, 0, (size_t)k * sizeof *a->lvu);
				off += (size_t)k;
			}
			u = a->lvu + a->lvo[a->lvpos[v]];
			for (int s = 0; s < k; s++)
				u[s] += a->puse[j][s];
		}
		if (r - l <= 1)
			break;
		if (seg < (l + r) / 2) {
			node = 2 * node;
			r = (l + r) / 2;
		} else {
			node = 2 * node + 1;
			l = (l + r) / 2;
		}
	}
}

/* v's usage at segment seg on strategy s. */
int64_t
at_use_at(const at *a, int v, int s, int seg)
{
	int64_t u = 0;

	for (int j = a->poff[v]; j < a->poff[v + 1]; j++)
		if (a->plo[j] <= seg && seg < a->phi[j])
			u += a->puse[j][s];
	return u;
}

/* The largest load over the segments where v is live. */
int64_t
at_load_over(const at *a, int v)
{
	int64_t mx = INT64_MIN;

	for (int j = a->poff[v]; j < a->poff[v + 1]; j++) {
		int64_t x = at_seg_max(a, 1, 0, a->nseg, a->plo[j], a->phi[j]);
		mx = x > mx ? x : mx;
	}
	return mx;
}

void
at_load_reset(at *a)
{
	if (!a->has_mem)
		return;
	memset(a->tmax, 0, 2 * (size_t)a->tsize * sizeof *a->tmax);
	memset(a->tadd, 0, 2 * (size_t)a->tsize * sizeof *a->tadd);
	for (int q = 0; q < a->nseg; q++)
		if (a->base[q] != 0)
			at_seg_add(a, 1, 0, a->nseg, q, q + 1, a->base[q]);
	for (int v = 0; v < a->n; v++)
		at_load_move(a, v, -1, a->x[v]);
}

int64_t
at_peak(const at *a)
{
	return a->has_mem ? a->tmax[1] : 0;
}

/*
 * Whether v's move to t, which frees memory at one time, keeps the limit
 * wherever it uses more (a merged node's pieces may rise at other times):
 * checked against the move's whole rise, so a move that would fit may be
 * refused, never the other way.
 */
bool
at_rise_fits(const at *a, int v, int t)
{
	int s = a->x[v];
	int64_t rise = 0;

	if (a->poff[v + 1] - a->poff[v] < 2)
		return true;
	for (int j = a->poff[v]; j < a->poff[v + 1]; j++)
		if (a->puse[j][t] > a->puse[j][s])
			rise += a->puse[j][t] - a->puse[j][s];
	for (int j = a->poff[v]; rise > 0 && j < a->poff[v + 1]; j++)
		if (a->puse[j][t] > a->puse[j][s] && at_seg_max(a, 1, 0,
		    a->nseg, a->plo[j], a->phi[j]) + rise > a->limit)
			return false;
	return true;
}

/* May v move from its strategy to t without breaking the limit (where
 * it is live)? */
bool
at_fits(at *a, int v, int t)
{
	int j = a->poff[v], s = a->x[v];
	bool up = false, ok;

	if (!at_has_pieces(a, v) || a->limit == INT64_MAX)
		return true;
	if (j + 1 == a->poff[v + 1]) {
		int64_t d = a->puse[j][t] - a->puse[j][s];
		return d <= 0 || at_seg_max(a, 1, 0, a->nseg, a->plo[j],
		    a->phi[j]) + d <= a->limit;
	}
	/* several pieces, which may overlap in time: tried */
	for (; j < a->poff[v + 1]; j++)
		up |= a->puse[j][t] > a->puse[j][s];
	if (!up)
		return true;
	at_load_move(a, v, s, t);
	ok = at_load_over(a, v) <= a->limit;
	at_load_move(a, v, t, s);
	return ok;
}

/* Node cost of v on s plus its edges to the current plan. */
int64_t
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
int64_t
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
int64_t
at_shift(const at *a, int64_t before, int64_t after)
{
	if (before >= INT64_MAX / 4 || after >= INT64_MAX / 4 ||
	    a->cost >= INT64_MAX / 4)
		return at_score(a);
	return a->cost + (after - before);
}

void
at_record(at *a)
{
	if (!a->priced && a->cost < a->best_cost && at_peak(a) <= a->limit) {
		a->best_cost = a->cost;
		memcpy(a->best, a->x, (size_t)a->n * sizeof *a->x);
		/* a plan counts once it has no impossible pair */
		if (a->first_ms < 0 && a->best_cost < AT_HARD)
			a->first_ms = at_ms(a);
	}
}

/* A segment at the peak of the load (the segment tree descended). */
int
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

/* ---------------------------------------------------- building the state */

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

/*
 * The search's state on the reduced problem red->q: its edges by node, its
 * memory (when mem: the original problem has intervals, usages and a
 * limit) as pieces over the segments between the distinct interval ends,
 * the fixed loads summed per segment.
 */
void
at_build(at *a, const sl_reduction *red, bool mem)
{
	const sl_problem *p = red->q;
	const int64_t (*fixed)[3] = (const int64_t (*)[3])red->fixed;
	int n = p->n, nfixed = red->nfixed, np = red->poff[n];
	int *deg = sl_xcalloc((size_t)n + 1, sizeof *deg);

	a->p = p;
	a->n = n;
	a->ok = red->ok;
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
	a->has_mem = mem && p->usage_limit >= 0;
	a->limit = a->has_mem ? p->usage_limit : INT64_MAX;
	a->poff = red->poff;
	a->puse = red->puse;
	a->plo = sl_xcalloc((size_t)np + 1, sizeof *a->plo);
	a->phi = sl_xcalloc((size_t)np + 1, sizeof *a->phi);
	a->usum = sl_xcalloc((size_t)n + 1, sizeof *a->usum);
	for (int v = 0; v < n; v++) {
		a->usum[v] = sl_xcalloc((size_t)p->k[v] + 1, sizeof **a->usum);
		for (int j = red->poff[v]; j < red->poff[v + 1]; j++)
			for (int s = 0; s < p->k[v]; s++)
				a->usum[v][s] += red->puse[j][s];
	}
	a->nseg = 0;
	if (a->has_mem) {
		int64_t *t = sl_xmalloc((2 * (size_t)np + 2 * (size_t)nfixed + 1) *
		    sizeof *t);
		int nt = 0;
		for (int j = 0; j < np; j++)
			if (red->pint[j][0] < red->pint[j][1]) {
				t[nt++] = red->pint[j][0];
				t[nt++] = red->pint[j][1];
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
		for (int j = 0; j < np; j++)
			if (red->pint[j][0] < red->pint[j][1]) {
				a->plo[j] = at_find_time(t, u, red->pint[j][0]);
				a->phi[j] = at_find_time(t, u, red->pint[j][1]);
			}
		/* the fixed loads by a difference array */
		a->base = sl_xcalloc((size_t)a->nseg + 2, sizeof *a->base);
		for (int f = 0; f < nfixed; f++)
			if (fixed[f][0] < fixed[f][1]) {
				a->base[at_find_time(t, u, fixed[f][0])] += fixed[f][2];
				a->base[at_find_time(t, u, fixed[f][1])] -= fixed[f][2];
			}
		for (int q = 1; q <= a->nseg; q++)
			a->base[q] += a->base[q - 1];
		a->base[a->nseg] = 0;
		free(t);
		a->tsize = 1;
		while (a->tsize < a->nseg)
			a->tsize *= 2;
		/* recursion indexes nodes up to 4 * nseg */
		a->tmax = sl_xcalloc(4 * (size_t)a->tsize + 4, sizeof *a->tmax);
		a->tadd = sl_xcalloc(4 * (size_t)a->tsize + 4, sizeof *a->tadd);
		a->tsize *= 2;
	}
	a->powner = sl_xmalloc(((size_t)np + 1) * sizeof *a->powner);
	for (int v = 0; v < n; v++)
		for (int j = red->poff[v]; j < red->poff[v + 1]; j++)
			a->powner[j] = v;
	if (a->has_mem) {
		size_t ks = 0;
		at_stab_build(a);
		for (int v = 0; v < n; v++)
			ks += (size_t)p->k[v];
		a->lvn = sl_xmalloc(((size_t)n + 1) * sizeof *a->lvn);
		a->lvo = sl_xmalloc(((size_t)n + 1) * sizeof *a->lvo);
		a->lvpos = sl_xmalloc(((size_t)n + 1) * sizeof *a->lvpos);
		a->lvmark = sl_xcalloc((size_t)n + 1, sizeof *a->lvmark);
		a->lvu = sl_xmalloc((ks + 1) * sizeof *a->lvu);
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
	a->wpi = sl_xmalloc(((size_t)n + 1) * sizeof *a->wpi);
	a->wpei = sl_xmalloc(((size_t)n + 1) * sizeof *a->wpei);
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

void
at_free(at *a)
{
	if (a->pc != NULL)
		for (int v = 0; v < a->n; v++)
			free(a->pc[v]);
	free(a->pc);
	free(a->aoff);
	free(a->aedge);
	free(a->plo);
	free(a->phi);
	free(a->powner);
	free(a->xoff);
	free(a->xpc);
	free(a->lvn);
	free(a->lvo);
	free(a->lvpos);
	free(a->lvmark);
	free(a->lvu);
	if (a->usum != NULL)
		for (int v = 0; v < a->n; v++)
			free(a->usum[v]);
	free(a->usum);
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
	free(a->wpi);
	free(a->wpei);
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

/* Load per segment of plan x, fixed loads included. */
void
at_plan_load(const at *a, const int *x, int64_t *load)
{
	int64_t cur = 0;

	memset(load, 0, ((size_t)a->nseg + 1) * sizeof *load);
	for (int v = 0; v < a->n; v++)
		for (int j = a->poff[v]; j < a->poff[v + 1]; j++) {
			load[a->plo[j]] += a->puse[j][x[v]];
			load[a->phi[j]] -= a->puse[j][x[v]];
		}
	for (int q = 0; q < a->nseg; q++) {
		cur += load[q];
		load[q] = cur + a->base[q];
	}
}
