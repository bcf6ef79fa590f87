/*
 * anytime_moves.c: the anytime search's moves under the limit: iterated
 * conditional modes, the repair of a plan over the limit (the moves that
 * cost least per byte saved at the peak), exchanges that pay for a move
 * breaking the limit by freeing memory elsewhere (at_fix), compound moves
 * along impossible pairs, and relinking towards a priced plan.
 */
#include "anytime.h"

#include <math.h>
#include <stdlib.h>

/*
 * Iterated conditional modes: every node in turn takes its cheapest
 * strategy given its neighbours, among those that keep the limit.  Passes
 * until nothing moves.
 */
void
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
		d += at_use_at(a, w, a->x[w], seg) - at_use_at(a, w, a->gnew[w], seg);
	}
	return d;
}

bool
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
		at_live_list(a, seg);
		for (int i = 0; i < a->nlv; i++) {
			int v = a->lvn[i], s = a->x[v], bt = -1;
			const int64_t *us = a->lvu + a->lvo[i];
			int64_t u = us[s], cur = -1;
			double br = INFINITY;
			bool bg = false;
			for (int t = 0; t < p->k[v]; t++) {
				if (!a->ok[v][t] || us[t] >= u ||
				    !at_rise_fits(a, v, t))
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
					ratio = at_per_byte(lt - cur, u - us[t],
					    excess);
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
			if (at_seg_max(a, 1, 0, a->nseg, seg, seg + 1) <= a->limit)
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
bool
at_fix(at *a, int64_t gain, int64_t *spent)
{
	const sl_problem *p = a->p;
	int nf = 0;
	int64_t sp = 0;

	while (at_peak(a) > a->limit && nf < AT_FIX_STEPS) {
		int seg = at_peak_seg(a), bv = -1, bt = -1;
		int64_t excess = at_peak(a) - a->limit, bdc = 0;
		double br = INFINITY;

		at_live_list(a, seg);
		for (int i = 0; i < a->nlv; i++) {
			int v = a->lvn[i];
			if (a->wstamp[v] == a->stamp)
				continue;
			int s = a->x[v];
			const int64_t *us = a->lvu + a->lvo[i];
			int64_t u = us[s], cur = INT64_MIN;
			for (int t = 0; t < p->k[v]; t++) {
				int64_t ut;
				if (!a->ok[v][t] || (ut = us[t]) >= u ||
				    !at_rise_fits(a, v, t))
					continue;
				if (cur == INT64_MIN)
					cur = at_local(a, v, s);
				int64_t dc = at_local(a, v, t) - cur;
				double ratio = at_per_byte(dc, u - ut, excess);
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
void
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
		if (!at_has_pieces(a, v))
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

void
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
void
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
void
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
