/*
 * reduce.c: exact reductions of a problem before a search.
 *
 *   - a strategy is dominated when another of the same node costs no more,
 *     uses no more memory and costs no more on every edge against every
 *     strategy of the other end; it is removed (ties keep the lower index);
 *   - a node whose usage is the same on all its strategies (or that has no
 *     interval, or a problem without a limit) no longer matters to the limit:
 *     isolated it takes its cheapest strategy, as a leaf its cost folds into
 *     its neighbour, and on a chain (two neighbours) it becomes one edge
 *     between them, the DP's eliminations.  Its fixed usage stays as a load.
 *
 *   - nodes joined by one-to-one edges (every allowed strategy of either end
 *     has exactly one allowed strategy of the other at a possible cost, as
 *     XLA's "follow" edges) are merged into one node first: its strategies
 *     are those of one of them (the root), the others follow along the
 *     edges, and it carries their costs, their edges to the rest and their
 *     usages, each over its own interval (a piece of its memory).
 *
 * The reduced problem has the surviving nodes renumbered; expanding a plan
 * undoes the contractions in reverse order.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

/* Chains are contracted only while the new edge stays this small. */
#define RED_CHAIN_CELLS 250000
/* Dominance is checked only where it costs at most this many comparisons. */
#define RED_DOM_WORK 20000000.0

enum { RED_ISOLATED, RED_LEAF, RED_CHAIN, RED_COPY, RED_MERGE };

struct red_step {
	int kind, v, a, b;	/* contracted node, its neighbours */
	int *arg;		/* v's strategy per neighbour strategy (pair) */
	int kb;			/* k of b for chains */
};

struct red_work {
	sl_problem *w;		/* working copy, edges appended */
	int m, mcap;
	bool *dead;
	int **adj, *nadj, *cadj;	/* incident edges, dead ones skipped */
	int *deg;
	bool *gone;
	/* the nodes merged into v: mhead[v], then mnext[] (-1 ends); mmap[m]
	 * a merged node's strategy per strategy of its root (-1 none) */
	int *mhead, *mnext;
	int **mmap;
};

static int
red_other(const sl_problem *w, int e, int v)
{
	return w->edge[e][0] == v ? w->edge[e][1] : w->edge[e][0];
}

static int64_t
red_cell(const sl_problem *w, int e, int v, int s, int t)
{
	if (w->edge[e][0] == v)
		return w->ecost[e][(size_t)s * w->k[w->edge[e][1]] + t];
	return w->ecost[e][(size_t)t * w->k[w->edge[e][1]] + s];
}

/* The next of the nodes v stands for after m (v itself, then those merged
 * into it); -1 after the last. */
static int
red_member_next(const struct red_work *r, int v, int m)
{
	return m == v ? r->mhead[v] : r->mnext[m];
}

/* Whether member m of v (v itself or merged into it) is ever live. */
static bool
red_member_live(const sl_problem *w, int m)
{
	return w->interval != NULL && w->usage != NULL &&
	    w->interval[m][0] < w->interval[m][1];
}

/* The usage of member m of v when v takes s (0 when m cannot follow). */
static int64_t
red_use(const struct red_work *r, int v, int m, int s)
{
	int t = m == v ? s : r->mmap[m][s];

	return t < 0 ? 0 : r->w->usage[m][t];
}

/* Whether every allowed strategy of v uses the same memory, member by
 * member (always so without a limit). */
static bool
red_fixed_usage(const struct red_work *r, int v)
{
	const sl_problem *w = r->w;

	if (w->usage_limit < 0 || w->interval == NULL || w->usage == NULL)
		return true;
	for (int m = v; m >= 0; m = red_member_next(r, v, m)) {
		int64_t u = -1;
		if (!red_member_live(w, m))
			continue;
		for (int s = 0; s < w->k[v]; s++) {
			if (!w->allowed[v][s])
				continue;
			if (u >= 0 && red_use(r, v, m, s) != u)
				return false;
			u = red_use(r, v, m, s);
		}
	}
	return true;
}

/* Member m's usage on v's first allowed strategy. */
static int64_t
red_const_usage(const struct red_work *r, int v, int m)
{
	const sl_problem *w = r->w;

	if (w->interval == NULL || w->usage == NULL)
		return 0;
	for (int s = 0; s < w->k[v]; s++)
		if (w->allowed[v][s])
			return red_use(r, v, m, s);
	return 0;
}

static void
red_adj_add(struct red_work *r, int v, int e)
{
	if (r->nadj[v] == r->cadj[v]) {
		r->cadj[v] = r->cadj[v] ? 2 * r->cadj[v] : 4;
		r->adj[v] = sl_xrealloc(r->adj[v], (size_t)r->cadj[v] *
		    sizeof **r->adj);
	}
	r->adj[v][r->nadj[v]++] = e;
	r->deg[v]++;
}

/* The live edges of v, at most two, into e[]; returns how many. */
static int
red_live(const struct red_work *r, int v, int *e, int most)
{
	int n = 0;

	for (int i = 0; i < r->nadj[v] && n < most; i++)
		if (!r->dead[r->adj[v][i]])
			e[n++] = r->adj[v][i];
	return n;
}

static void
red_kill(struct red_work *r, int e)
{
	r->dead[e] = true;
	r->deg[r->w->edge[e][0]]--;
	r->deg[r->w->edge[e][1]]--;
}

/* Adds matrix c (a-major, k[a] x k[b]) as an edge a-b, or into one there. */
static void
red_add_edge(struct red_work *r, int a, int b, int64_t *c)
{
	sl_problem *w = r->w;

	for (int i = 0; i < r->nadj[a]; i++) {
		int e = r->adj[a][i];
		if (r->dead[e] || red_other(w, e, a) != b)
			continue;
		for (int s = 0; s < w->k[a]; s++)
			for (int t = 0; t < w->k[b]; t++) {
				int64_t *cell = w->edge[e][0] == a ?
				    &w->ecost[e][(size_t)s * w->k[b] + t] :
				    &w->ecost[e][(size_t)t * w->k[a] + s];
				*cell = sl_add_sat(*cell,
				    c[(size_t)s * w->k[b] + t]);
			}
		free(c);
		return;
	}
	if (r->m == r->mcap) {
		r->mcap *= 2;
		w->edge = sl_xrealloc(w->edge, (size_t)r->mcap * sizeof *w->edge);
		w->ecost = sl_xrealloc(w->ecost, (size_t)r->mcap *
		    sizeof *w->ecost);
		r->dead = sl_xrealloc(r->dead, (size_t)r->mcap * sizeof *r->dead);
	}
	w->edge[r->m][0] = a;
	w->edge[r->m][1] = b;
	w->ecost[r->m] = c;
	r->dead[r->m] = false;
	red_adj_add(r, a, r->m);
	red_adj_add(r, b, r->m);
	r->m++;
	w->m = r->m;
}

/* Removes the strategies of v dominated by another; returns how many. */
static int
red_dominated(struct red_work *r, int v)
{
	sl_problem *w = r->w;
	double work = (double)w->k[v] * w->k[v];
	bool mem = w->usage_limit >= 0 && w->usage != NULL &&
	    w->interval != NULL;
	int removed = 0;

	{
		double rows = 1;
		for (int i = 0; i < r->nadj[v]; i++)
			rows += w->k[red_other(w, r->adj[v][i], v)];
		if (work * rows > RED_DOM_WORK)
			return 0;
	}
	for (int s = 0; s < w->k[v]; s++) {
		if (!w->allowed[v][s])
			continue;
		for (int t = 0; t < w->k[v]; t++) {
			bool dom = true, strict = false;
			if (t == s || !w->allowed[v][t])
				continue;
			if (w->cost[v][t] > w->cost[v][s])
				continue;
			strict = w->cost[v][t] < w->cost[v][s];
			/* no more memory in any of the nodes v stands for */
			for (int m = v; mem && dom && m >= 0;
			    m = red_member_next(r, v, m)) {
				if (!red_member_live(w, m))
					continue;
				dom = red_use(r, v, m, t) <= red_use(r, v, m, s);
				strict |= red_use(r, v, m, t) < red_use(r, v, m, s);
			}
			for (int i = 0; dom && i < r->nadj[v]; i++) {
				int e = r->adj[v][i], o = red_other(w, e, v);
				if (r->dead[e])
					continue;
				for (int q = 0; q < w->k[o]; q++) {
					int64_t ct, cs;
					if (!w->allowed[o][q])
						continue;
					ct = red_cell(w, e, v, t, q);
					cs = red_cell(w, e, v, s, q);
					if (ct > cs) {
						dom = false;
						break;
					}
					strict |= ct < cs;
				}
			}
			if (dom && (strict || t < s)) {
				w->allowed[v][s] = 0;
				removed++;
				break;
			}
		}
	}
	return removed;
}

static void
red_step_add(sl_reduction *red, struct red_step st)
{
	if (red->nsteps == red->capsteps) {
		red->capsteps = red->capsteps ? 2 * red->capsteps : 64;
		red->steps = sl_xrealloc(red->steps, (size_t)red->capsteps *
		    sizeof(struct red_step));
	}
	((struct red_step *)red->steps)[red->nsteps++] = st;
}

/* A fixed load: usage u over [lo, hi). */
static void
red_load_add(sl_reduction *red, int64_t lo, int64_t hi, int64_t u)
{
	if (u == 0 || lo >= hi)
		return;
	red->fixed = sl_xrealloc(red->fixed, ((size_t)red->nfixed + 1) *
	    sizeof *red->fixed);
	red->fixed[red->nfixed][0] = lo;
	red->fixed[red->nfixed][1] = hi;
	red->fixed[red->nfixed][2] = u;
	red->nfixed++;
}

/* v's memory, the same on every strategy, as fixed loads. */
static void
red_fix_load(sl_reduction *red, const struct red_work *r, int v)
{
	const sl_problem *w = r->w;

	for (int m = v; m >= 0; m = red_member_next(r, v, m))
		if (red_member_live(w, m))
			red_load_add(red, w->interval[m][0], w->interval[m][1],
			    red_const_usage(r, v, m));
}

/* Contracts v if it can be; true when it was. */
static bool
red_contract(sl_reduction *red, struct red_work *r, int v)
{
	sl_problem *w = r->w;
	int e[2], ne;
	struct red_step st = { .v = v, .a = -1, .b = -1 };

	if (r->gone[v] || r->deg[v] > 2 || !red_fixed_usage(r, v))
		return false;
	{
		/* a node with nothing allowed stays, for the search to report */
		int any = 0;
		for (int s = 0; s < w->k[v]; s++)
			any |= w->allowed[v][s];
		if (!any)
			return false;
	}
	ne = red_live(r, v, e, 2);
	if (ne == 2 && red_other(w, e[0], v) == red_other(w, e[1], v))
		return false;	/* parallel edges are merged on load */
	if (ne == 0) {
		int bs = -1;
		for (int s = 0; s < w->k[v]; s++)
			if (w->allowed[v][s] &&
			    (bs < 0 || w->cost[v][s] < w->cost[v][bs]))
				bs = s;
		if (bs < 0)
			return false;
		st.kind = RED_ISOLATED;
		st.arg = sl_xmalloc(sizeof *st.arg);
		st.arg[0] = bs;
		red->offset = sl_add_sat(red->offset, w->cost[v][bs]);
	} else if (ne == 1) {
		int a = red_other(w, e[0], v);
		st.kind = RED_LEAF;
		st.a = a;
		st.arg = sl_xmalloc((size_t)w->k[a] * sizeof *st.arg);
		for (int sa = 0; sa < w->k[a]; sa++) {
			int64_t bm = INT64_MAX;
			int bs = 0;
			for (int s = 0; s < w->k[v]; s++) {
				if (!w->allowed[v][s])
					continue;
				int64_t c = sl_add_sat(w->cost[v][s],
				    red_cell(w, e[0], v, s, sa));
				if (c < bm) {
					bm = c;
					bs = s;
				}
			}
			st.arg[sa] = bs;
			w->cost[a][sa] = sl_add_sat(w->cost[a][sa], bm);
		}
		red_kill(r, e[0]);
		red->leaves++;
	} else {
		int a = red_other(w, e[0], v), b = red_other(w, e[1], v);
		double cells = (double)w->k[a] * w->k[b];
		int64_t *c;
		if (cells > RED_CHAIN_CELLS || cells * w->k[v] > 50 * RED_CHAIN_CELLS)
			return false;
		st.kind = RED_CHAIN;
		st.a = a;
		st.b = b;
		st.kb = w->k[b];
		st.arg = sl_xmalloc((size_t)cells * sizeof *st.arg);
		c = sl_xmalloc((size_t)cells * sizeof *c);
		for (int sa = 0; sa < w->k[a]; sa++)
			for (int sb = 0; sb < w->k[b]; sb++) {
				int64_t bm = INT64_MAX;
				int bs = 0;
				for (int s = 0; s < w->k[v]; s++) {
					if (!w->allowed[v][s])
						continue;
					int64_t x = sl_add_sat(w->cost[v][s],
					    sl_add_sat(red_cell(w, e[0], v, s, sa),
					    red_cell(w, e[1], v, s, sb)));
					if (x < bm) {
						bm = x;
						bs = s;
					}
				}
				st.arg[(size_t)sa * w->k[b] + sb] = bs;
				c[(size_t)sa * w->k[b] + sb] = bm;
			}
		red_kill(r, e[0]);
		red_kill(r, e[1]);
		red_add_edge(r, a, b, c);
		red->chains++;
	}
	red_fix_load(red, r, v);
	r->gone[v] = true;
	red_step_add(red, st);
	return true;
}

/*
 * Whether edge e is one-to-one: every allowed strategy of either end has
 * exactly one allowed strategy of the other end at a possible cost (below
 * SL_COST_IMPOSSIBLE).  fwd gets end 1's partner per strategy of end 0,
 * bwd end 0's per strategy of end 1 (-1 where not allowed).
 */
static bool
red_one_to_one(const sl_problem *w, int e, int *fwd, int *bwd)
{
	int a = w->edge[e][0], b = w->edge[e][1], ka = w->k[a], kb = w->k[b];

	for (int t = 0; t < kb; t++)
		bwd[t] = -1;
	for (int s = 0; s < ka; s++) {
		const int64_t *row = w->ecost[e] + (size_t)s * kb;
		fwd[s] = -1;
		if (!w->allowed[a][s])
			continue;
		for (int t = 0; t < kb; t++) {
			if (!w->allowed[b][t] || row[t] >= SL_COST_IMPOSSIBLE)
				continue;
			if (fwd[s] >= 0)
				return false;
			fwd[s] = t;
		}
		if (fwd[s] < 0 || bwd[fwd[s]] >= 0)
			return false;
		bwd[fwd[s]] = s;
	}
	for (int t = 0; t < kb; t++)
		if (w->allowed[b][t] && bwd[t] < 0)
			return false;
	return true;
}

/*
 * Merges the group grp[0 .. ng-1] (grp[0] its root, the others in the
 * order they were reached, mmap set) into its root: the root takes the
 * others' node costs and the edges inside the group at the strategies
 * that follow its own, and their edges to the rest, re-read against its
 * strategies (parallel edges summed).  in[v] == stamp marks the group.
 */
static void
red_merge_group(sl_reduction *red, struct red_work *r, const int *grp, int ng,
    const int *in, int stamp)
{
	sl_problem *w = r->w;
	int root = grp[0], kr = w->k[root];

	for (int i = 1; i < ng; i++) {
		int m = grp[i];
		const int *map = r->mmap[m];
		for (int s = 0; s < kr; s++)
			if (map[s] >= 0)
				w->cost[root][s] = sl_add_sat(w->cost[root][s],
				    w->cost[m][map[s]]);
	}
	for (int i = 0; i < ng; i++) {
		int m = grp[i];
		for (int j = 0; j < r->nadj[m]; j++) {
			int e = r->adj[m][j], o = red_other(w, e, m);
			if (r->dead[e])
				continue;
			if (in[o] == stamp) {
				/* inside: a cost of the root's strategy */
				for (int s = 0; s < kr; s++) {
					int sm = m == root ? s : r->mmap[m][s];
					int so = o == root ? s : r->mmap[o][s];
					if (sm >= 0 && so >= 0)
						w->cost[root][s] = sl_add_sat(
						    w->cost[root][s],
						    red_cell(w, e, m, sm, so));
				}
				red_kill(r, e);
			} else if (m != root) {
				int ko = w->k[o];
				int64_t *c = sl_xcalloc((size_t)kr * ko + 1,
				    sizeof *c);
				for (int s = 0; s < kr; s++) {
					int sm = r->mmap[m][s];
					if (sm < 0)
						continue;
					for (int t = 0; t < ko; t++)
						c[(size_t)s * ko + t] =
						    red_cell(w, e, m, sm, t);
				}
				red_kill(r, e);
				red_add_edge(r, root, o, c);
			}
		}
	}
	/* a strategy that takes an impossible pair inside (a cycle of
	 * one-to-one edges that does not close) is no plan's, unless all do */
	{
		bool possible = false;
		for (int s = 0; s < kr; s++)
			possible |= w->allowed[root][s] &&
			    w->cost[root][s] < SL_COST_IMPOSSIBLE;
		for (int s = 0; possible && s < kr; s++)
			if (w->cost[root][s] >= SL_COST_IMPOSSIBLE)
				w->allowed[root][s] = 0;
	}
	for (int i = 1; i < ng; i++) {
		int m = grp[i];
		struct red_step st = { .kind = RED_MERGE, .v = m, .a = root,
		    .b = -1 };
		st.arg = sl_xmalloc((size_t)kr * sizeof *st.arg);
		memcpy(st.arg, r->mmap[m], (size_t)kr * sizeof *st.arg);
		for (int s = 0; s < kr; s++)
			if (st.arg[s] < 0)
				st.arg[s] = 0;	/* the root never takes s */
		red_step_add(red, st);
		r->gone[m] = true;
		r->mnext[m] = r->mhead[root];
		r->mhead[root] = m;
	}
	red->joined += ng - 1;
	red->join_groups++;
}

/*
 * Nodes joined by one-to-one edges, merged: a breadth-first tree of such
 * edges from each node not yet in a group, its nodes' strategies read off
 * the root's along the tree.  Exact for every plan without an impossible
 * pair: such a plan takes on each one-to-one edge its one possible pair.
 * On the contest's instances these are half the edges, and the groups
 * (up to 1,656 nodes on C) move only as a whole.
 */
static void
red_merge(sl_reduction *red, struct red_work *r)
{
	sl_problem *w = r->w;
	int n = w->n, m0 = r->m, kmax = 1, stamp = 0;
	bool *one = sl_xcalloc((size_t)m0 + 1, sizeof *one);
	int *in = sl_xcalloc((size_t)n + 1, sizeof *in);
	int *grp = sl_xmalloc(((size_t)n + 1) * sizeof *grp);
	int *fwd, *bwd;
	bool any = false;

	for (int v = 0; v < n; v++)
		kmax = w->k[v] > kmax ? w->k[v] : kmax;
	fwd = sl_xmalloc((size_t)kmax * sizeof *fwd);
	bwd = sl_xmalloc((size_t)kmax * sizeof *bwd);
	for (int e = 0; e < m0; e++)
		any |= one[e] = !r->dead[e] && red_one_to_one(w, e, fwd, bwd);
	for (int v = 0; any && v < n; v++) {
		int ng = 0, kr = w->k[v];
		if (in[v] != 0 || r->gone[v])
			continue;
		in[v] = ++stamp;
		grp[ng++] = v;
		for (int h = 0; h < ng; h++) {
			int u = grp[h];
			for (int j = 0; j < r->nadj[u]; j++) {
				int e = r->adj[u][j], c = red_other(w, e, u);
				const int *to;
				if (e >= m0 || !one[e] || in[c] != 0)
					continue;
				red_one_to_one(w, e, fwd, bwd);
				to = w->edge[e][0] == u ? fwd : bwd;
				in[c] = stamp;
				grp[ng++] = c;
				r->mmap[c] = sl_xmalloc((size_t)kr *
				    sizeof **r->mmap);
				for (int s = 0; s < kr; s++) {
					int su = u == v ? s : r->mmap[u][s];
					r->mmap[c][s] = su >= 0 &&
					    w->allowed[u][su] ? to[su] : -1;
				}
			}
		}
		if (ng > 1)
			red_merge_group(red, r, grp, ng, in, stamp);
	}
	free(one);
	free(in);
	free(grp);
	free(fwd);
	free(bwd);
}

/*
 * The memory of the reduced problem's nodes as pieces (sl_reduction): one
 * per node a survivor stands for whose usage depends on the strategy; one
 * that does not becomes a fixed load.
 */
static void
red_pieces(sl_reduction *red, const struct red_work *r, const int *newid,
    int nq)
{
	const sl_problem *w = r->w;
	int np = 0, cap = 0;

	red->poff = sl_xcalloc((size_t)nq + 1, sizeof *red->poff);
	if (w->usage_limit < 0 || w->interval == NULL || w->usage == NULL)
		return;
	for (int v = 0; v < w->n; v++) {
		int i = newid[v];
		if (i < 0)
			continue;
		red->poff[i] = np;
		for (int m = v; m >= 0; m = red_member_next(r, v, m)) {
			int64_t u0 = -1;
			bool fixed = true;
			if (!red_member_live(w, m))
				continue;
			for (int s = 0; s < w->k[v]; s++) {
				if (!w->allowed[v][s])
					continue;
				fixed &= u0 < 0 || red_use(r, v, m, s) == u0;
				u0 = red_use(r, v, m, s);
			}
			if (fixed) {
				red_load_add(red, w->interval[m][0],
				    w->interval[m][1], u0 < 0 ? 0 : u0);
				continue;
			}
			if (np == cap) {
				cap = cap ? 2 * cap : 1024;
				red->pint = sl_xrealloc(red->pint, (size_t)cap *
				    sizeof *red->pint);
				red->puse = sl_xrealloc(red->puse, (size_t)cap *
				    sizeof *red->puse);
			}
			red->pint[np][0] = w->interval[m][0];
			red->pint[np][1] = w->interval[m][1];
			red->puse[np] = sl_xmalloc((size_t)w->k[v] *
			    sizeof **red->puse);
			for (int s = 0; s < w->k[v]; s++)
				red->puse[np][s] = red_use(r, v, m, s);
			np++;
		}
	}
	red->poff[nq] = np;
}

struct tw_view;
static void tw_find(const struct tw_view *g, sl_twins *out);
static void red_twins(sl_reduction *red, struct red_work *r,
    const sl_problem *p);

int
sl_reduce(const sl_problem *p, sl_reduction *red, sl_error *err)
{
	struct red_work r = { 0 };
	sl_problem *w;
	int *stack, ns = 0, *newid, nq = 0, mq = 0;

	memset(red, 0, sizeof *red);
	red->n = p->n;
	w = r.w = sl_problem_copy(p);
	r.m = r.mcap = p->m > 0 ? p->m : 1;
	r.m = p->m;
	r.dead = sl_xcalloc((size_t)r.mcap, sizeof *r.dead);
	r.adj = sl_xcalloc((size_t)p->n + 1, sizeof *r.adj);
	r.nadj = sl_xcalloc((size_t)p->n + 1, sizeof *r.nadj);
	r.cadj = sl_xcalloc((size_t)p->n + 1, sizeof *r.cadj);
	r.deg = sl_xcalloc((size_t)p->n + 1, sizeof *r.deg);
	r.gone = sl_xcalloc((size_t)p->n + 1, sizeof *r.gone);
	r.mhead = sl_xmalloc(((size_t)p->n + 1) * sizeof *r.mhead);
	r.mnext = sl_xmalloc(((size_t)p->n + 1) * sizeof *r.mnext);
	r.mmap = sl_xcalloc((size_t)p->n + 1, sizeof *r.mmap);
	for (int v = 0; v < p->n; v++)
		r.mhead[v] = r.mnext[v] = -1;
	for (int e = 0; e < p->m; e++) {
		red_adj_add(&r, p->edge[e][0], e);
		red_adj_add(&r, p->edge[e][1], e);
	}
	red_merge(red, &r);
	for (int v = 0; v < p->n; v++)
		if (!r.gone[v])
			red->dominated += red_dominated(&r, v);
	/* contract until nothing changes: a contraction may free a neighbour */
	/* n to start, at most two more per contraction */
	stack = sl_xmalloc((3 * (size_t)p->n + 1) * sizeof *stack);
	for (int v = p->n - 1; v >= 0; v--)
		stack[ns++] = v;
	while (ns > 0) {
		int v = stack[--ns], e[2], ne;
		if (r.gone[v])
			continue;
		ne = red_live(&r, v, e, 2);
		if (!red_contract(red, &r, v))
			continue;
		for (int i = 0; i < ne; i++) {
			int o = red_other(w, e[i], v);
			if (!r.gone[o] && r.deg[o] <= 2)
				stack[ns++] = o;
		}
	}
	free(stack);
	red_twins(red, &r, p);

	/* the reduced problem: survivors renumbered, live edges */
	newid = sl_xmalloc(((size_t)p->n + 1) * sizeof *newid);
	for (int v = 0; v < p->n; v++)
		newid[v] = r.gone[v] ? -1 : nq++;
	{
		int *k = sl_xmalloc(((size_t)nq + 1) * sizeof *k);
		int (*ed)[2] = sl_xmalloc(((size_t)r.m + 1) * sizeof *ed);
		sl_problem *q;
		for (int v = 0; v < p->n; v++)
			if (newid[v] >= 0)
				k[newid[v]] = w->k[v];
		for (int e = 0; e < r.m; e++)
			if (!r.dead[e]) {
				ed[mq][0] = newid[w->edge[e][0]];
				ed[mq][1] = newid[w->edge[e][1]];
				mq++;
			}
		q = sl_problem_new(nq, k, mq, (const int (*)[2])ed);
		free(k);
		free(ed);
		for (int v = 0; v < p->n; v++) {
			int i = newid[v];
			if (i < 0)
				continue;
			memcpy(q->cost[i], w->cost[v], (size_t)w->k[v] *
			    sizeof **w->cost);
			memcpy(q->allowed[i], w->allowed[v], (size_t)w->k[v]);
		}
		mq = 0;
		for (int e = 0; e < r.m; e++)
			if (!r.dead[e]) {
				memcpy(q->ecost[mq], w->ecost[e],
				    (size_t)w->k[w->edge[e][0]] *
				    w->k[w->edge[e][1]] * sizeof **w->ecost);
				mq++;
			}
		q->usage_limit = p->usage_limit;
		red_pieces(red, &r, newid, nq);
		red->q = q;
		red->ok = q->allowed;
	}
	red->newid = newid;
	red->removed_edges = p->m - mq;
	for (int v = 0; v < p->n; v++)
		free(r.adj[v]);
	free(r.adj);
	free(r.nadj);
	free(r.cadj);
	free(r.deg);
	free(r.gone);
	free(r.dead);
	for (int v = 0; v < p->n; v++)
		free(r.mmap[v]);
	free(r.mmap);
	free(r.mhead);
	free(r.mnext);
	/* w's edge arrays grew past p->m: free them by hand */
	for (int e = 0; e < r.m; e++)
		free(w->ecost[e]);
	w->m = 0;
	sl_problem_free(w);
	(void)err;
	return SL_OK;
}

void
sl_reduce_expand(const sl_reduction *red, const int *qchoice, int *choice)
{
	const struct red_step *st = red->steps;

	for (int v = 0; v < red->n; v++)
		choice[v] = red->newid[v] >= 0 ? qchoice[red->newid[v]] : -1;
	for (int i = red->nsteps - 1; i >= 0; i--) {
		const struct red_step *s = &st[i];
		switch (s->kind) {
		case RED_ISOLATED:
			choice[s->v] = s->arg[0];
			break;
		case RED_LEAF:
			choice[s->v] = s->arg[choice[s->a]];
			break;
		case RED_COPY:
			choice[s->v] = choice[s->a];
			break;
		case RED_MERGE:
			choice[s->v] = s->arg[choice[s->a]];
			break;
		default:
			choice[s->v] = s->arg[(size_t)choice[s->a] * s->kb +
			    choice[s->b]];
			break;
		}
	}
}

int64_t
sl_reduce_bound(const sl_reduction *red, long double qbound)
{
	long double b = qbound + (long double)red->offset;

	if (!(b > (long double)INT64_MIN))
		return INT64_MIN;
	if (b >= (long double)INT64_MAX)
		return INT64_MAX;
	/* bounds from priced relaxations are real numbers: round up is safe
	 * only for integral optima, which every plan's cost is */
	return (int64_t)ceill(b - 1e-15L * fabsl(b) - 1e-6L);
}

void
sl_reduce_free(sl_reduction *red)
{
	struct red_step *st = red->steps;

	for (int i = 0; i < red->nsteps; i++)
		free(st[i].arg);
	free(red->steps);
	free(red->fixed);
	for (int j = 0; red->poff != NULL && j < red->poff[red->q->n]; j++)
		free(red->puse[j]);
	free(red->poff);
	free(red->pint);
	free(red->puse);
	sl_twins_free(&red->twins);
	free(red->newid);
	sl_problem_free(red->q);
	memset(red, 0, sizeof *red);
}

/* ------------------------------------------------- identical subgraphs */

/*
 * Identical subgraphs: sets of node-disjoint subgraphs that are the same up
 * to renumbering: node by node the same strategies allowed, costs and
 * usages, edge by edge the same cost matrix.  Colour refinement
 * (Weisfeiler-Lehman, TW_ROUNDS rounds) hashes each node's neighbourhood
 * out to that radius; the copies are then grown in lock step from nodes of
 * one colour, breadth first, each node added to every copy at once only
 * when its counterparts compare equal exactly, edges to the nodes already
 * in the copies included.  The hash only proposes, the comparison decides.
 * First whole connected components with the same colours are matched, then
 * repeated structures (the layers of a model) among the nodes left.
 */
#define TW_ROUNDS 3
/* Growing copies stops after this many comparisons per node and edge (then
 * fewer are found, never wrong ones). */
#define TW_WORK 200.0

struct tw_view {
	const sl_problem *w;
	const uint8_t *const *ok;
	const bool *gone;	/* nodes not in the view (NULL: none) */
	const bool *dead;	/* edges not in the view (NULL: none) */
	const int *mhead;	/* >= 0: the node stands for others merged into
				 * it, alike to none (NULL: none) */
	int m;
};

struct tw {
	struct tw_view g;
	int n;
	int *aoff, *aedge;	/* live incident edges, CSR */
	uint64_t *col;		/* colours after TW_ROUNDS rounds */
	uint64_t *ehash;	/* per edge: [2e] seen from end 0, [2e+1] from end 1 */
	int *owner;		/* -1 free, else a tag per copy */
	int tag;
	int *mark, *medge, stamp;	/* neighbour marks for comparisons */
	int *map;		/* node i of copy j at map[j * stride + i] */
	int stride;
	int *idx;		/* a node's index in its copy */
	int *pick, pstamp;	/* counterparts taken in this step */
	double work, most_work;	/* comparisons made, allowed */
};

static uint64_t
tw_mix(uint64_t h, uint64_t x)
{
	x += h + 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static int
tw_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static bool
tw_live_edge(const struct tw *t, int e)
{
	return t->g.dead == NULL || !t->g.dead[e];
}

static bool
tw_live_node(const struct tw *t, int v)
{
	return t->g.gone == NULL || !t->g.gone[v];
}

/* Entry (s of v, o's strategy u) of edge e. */
static int64_t
tw_cell(const sl_problem *w, int e, int v, int s, int u)
{
	return red_cell(w, e, v, s, u);
}

/* A node that stands for others merged into it. */
static bool
tw_merged(const struct tw *t, int v)
{
	return t->g.mhead != NULL && t->g.mhead[v] >= 0;
}

static bool
tw_same_node(const struct tw *t, int a, int b)
{
	const sl_problem *w = t->g.w;
	bool mem = w->usage != NULL && w->interval != NULL;

	if (w->k[a] != w->k[b] || tw_merged(t, a) || tw_merged(t, b))
		return false;
	for (int s = 0; s < w->k[a]; s++) {
		if ((t->g.ok[a][s] != 0) != (t->g.ok[b][s] != 0) ||
		    w->cost[a][s] != w->cost[b][s])
			return false;
		if (mem && w->usage[a][s] != w->usage[b][s])
			return false;
	}
	if (mem && (w->interval[a][0] < w->interval[a][1]) !=
	    (w->interval[b][0] < w->interval[b][1]))
		return false;
	return true;
}

/* Edge e seen from v equals edge f seen from x (same shape assumed by k). */
static bool
tw_same_edge(const sl_problem *w, int e, int v, int f, int x)
{
	int o = red_other(w, e, v), y = red_other(w, f, x);

	if (w->k[v] != w->k[x] || w->k[o] != w->k[y])
		return false;
	for (int s = 0; s < w->k[v]; s++)
		for (int u = 0; u < w->k[o]; u++)
			if (tw_cell(w, e, v, s, u) != tw_cell(w, f, x, s, u))
				return false;
	return true;
}

static void
tw_colours(struct tw *t)
{
	const sl_problem *w = t->g.w;
	bool mem = w->usage != NULL && w->interval != NULL;
	uint64_t *next = sl_xmalloc(((size_t)t->n + 1) * sizeof *next);
	uint64_t *buf;
	int maxdeg = 0;

	for (int v = 0; v < t->n; v++) {
		uint64_t h = tw_mix(0, (uint64_t)w->k[v]);
		for (int s = 0; s < w->k[v]; s++) {
			h = tw_mix(h, t->g.ok[v][s] != 0);
			h = tw_mix(h, (uint64_t)w->cost[v][s]);
			if (mem)
				h = tw_mix(h, (uint64_t)w->usage[v][s]);
		}
		if (mem)
			h = tw_mix(h, w->interval[v][0] < w->interval[v][1]);
		if (tw_merged(t, v))
			h = tw_mix(h, 0x6d65726765ULL + (uint64_t)v);
		t->col[v] = h;
		if (t->aoff[v + 1] - t->aoff[v] > maxdeg)
			maxdeg = t->aoff[v + 1] - t->aoff[v];
	}
	for (int e = 0; e < t->g.m; e++) {
		int a = w->edge[e][0], b = w->edge[e][1];
		uint64_t h0 = tw_mix(1, (uint64_t)w->k[a]), h1;
		if (!tw_live_edge(t, e))
			continue;
		h1 = tw_mix(2, (uint64_t)w->k[b]);
		for (int s = 0; s < w->k[a]; s++)
			for (int u = 0; u < w->k[b]; u++)
				h0 = tw_mix(h0, (uint64_t)tw_cell(w, e, a, s, u));
		for (int u = 0; u < w->k[b]; u++)
			for (int s = 0; s < w->k[a]; s++)
				h1 = tw_mix(h1, (uint64_t)tw_cell(w, e, b, u, s));
		t->ehash[2 * (size_t)e] = h0;
		t->ehash[2 * (size_t)e + 1] = h1;
	}
	buf = sl_xmalloc(((size_t)maxdeg + 1) * sizeof *buf);
	for (int r = 0; r < TW_ROUNDS; r++) {
		for (int v = 0; v < t->n; v++) {
			int d = 0;
			uint64_t h = t->col[v];
			for (int i = t->aoff[v]; i < t->aoff[v + 1]; i++) {
				int e = t->aedge[i], o = red_other(w, e, v);
				buf[d++] = tw_mix(t->ehash[2 * (size_t)e +
				    (w->edge[e][0] != v)], t->col[o]);
			}
			qsort(buf, (size_t)d, sizeof *buf, tw_cmp_u64);
			for (int i = 0; i < d; i++)
				h = tw_mix(h, buf[i]);
			next[v] = tw_mix(h, (uint64_t)d);
		}
		memcpy(t->col, next, (size_t)t->n * sizeof *next);
	}
	free(buf);
	free(next);
}

/*
 * Whether cand[j] (or, for the search, a free neighbour of copy j's node
 * head found into cand[j]) can join copy j as w0 joins copy 0.
 */
static bool
tw_fits(struct tw *t, int j, int head, int e, int w0, int *cand)
{
	const sl_problem *w = t->g.w;
	int u0 = t->map[head], uj = t->map[(size_t)j * t->stride + head];
	uint64_t eh = t->ehash[2 * (size_t)e + (w->edge[e][0] != u0)];
	int wj = -1, n0 = 0, nj = 0;

	t->work += t->aoff[uj + 1] - t->aoff[uj];
	for (int k = t->aoff[uj]; k < t->aoff[uj + 1]; k++) {
		int f = t->aedge[k], x = red_other(w, f, uj);
		if (t->owner[x] != -1 || x == w0 || t->col[x] != t->col[w0] ||
		    t->ehash[2 * (size_t)f + (w->edge[f][0] != uj)] != eh ||
		    t->pick[x] == t->pstamp)
			continue;
		wj = x;
		break;
	}
	cand[j] = wj;
	if (wj < 0 || !tw_same_node(t, w0, wj))
		return false;
	t->pick[wj] = t->pstamp;
	/* the edges into each copy compare equal, one to one */
	t->work += t->aoff[wj + 1] - t->aoff[wj] + t->aoff[w0 + 1] - t->aoff[w0];
	t->stamp++;
	for (int k = t->aoff[wj]; k < t->aoff[wj + 1]; k++) {
		int f = t->aedge[k], x = red_other(w, f, wj);
		if (t->owner[x] == t->tag + j) {
			t->mark[x] = t->stamp;
			t->medge[x] = f;
			nj++;
		}
	}
	for (int k = t->aoff[w0]; k < t->aoff[w0 + 1]; k++) {
		int f = t->aedge[k], x = red_other(w, f, w0), xj;
		if (t->owner[x] != t->tag)
			continue;
		n0++;
		xj = t->map[(size_t)j * t->stride + t->idx[x]];
		if (t->mark[xj] != t->stamp ||
		    !tw_same_edge(w, f, w0, t->medge[xj], wj))
			return false;
	}
	return n0 == nj;
}

/* Gives copy j's nodes back and moves the last copy into its place. */
static void
tw_drop(struct tw *t, int j, int c, int size, int *cand, bool *fit)
{
	int *row = t->map + (size_t)j * t->stride,
	    *last = t->map + (size_t)(c - 1) * t->stride;

	for (int i = 0; i < size; i++)
		t->owner[row[i]] = -1;
	if (j == c - 1)
		return;
	for (int i = 0; i < size; i++) {
		row[i] = last[i];
		t->owner[row[i]] = t->tag + j;
	}
	cand[j] = cand[c - 1];
	fit[j] = fit[c - 1];
}

/*
 * Grows *c copies in lock step from the anchors (one node per copy, all
 * free and equal as nodes), breadth first from copy 0's nodes; returns the
 * nodes per copy, each copy's nodes in t->map and owned by tags t->tag ..
 * t->tag + *c - 1.  A node joins when every copy has its counterpart; where
 * a few copies (an eighth at once, a quarter in all) have none, as the
 * first or last of a row of layers, those copies are dropped instead.
 */
static int
tw_grow(struct tw *t, int *cp, const int *anchor, int most)
{
	const sl_problem *w = t->g.w;
	int c = *cp, c0 = c, size, *cand = sl_xmalloc((size_t)c * sizeof *cand);
	bool *fit = sl_xmalloc((size_t)c * sizeof *fit);

	for (int j = 0; j < c; j++) {
		if (!tw_same_node(t, anchor[0], anchor[j])) {
			free(cand);
			free(fit);
			return 0;
		}
	}
	for (int j = 0; j < c; j++) {
		t->map[(size_t)j * t->stride] = anchor[j];
		t->owner[anchor[j]] = t->tag + j;
		t->idx[anchor[j]] = 0;
	}
	size = 1;
	for (int head = 0; head < size && size < most &&
	    t->work < t->most_work; head++) {
		int u0 = t->map[head];
		for (int i = t->aoff[u0]; i < t->aoff[u0 + 1] && size < most &&
		    t->work < t->most_work; i++) {
			int e = t->aedge[i], w0 = red_other(w, e, u0), nfail = 0;
			bool too_many = false;
			if (t->owner[w0] != -1)
				continue;
			cand[0] = w0;
			t->pstamp++;
			for (int j = 1; j < c && !too_many; j++) {
				fit[j] = tw_fits(t, j, head, e, w0, cand);
				nfail += !fit[j];
				too_many = nfail > 0 && (8 * nfail > c ||
				    4 * (c0 - c + nfail) > c0 || c - nfail < 2);
			}
			if (too_many)
				continue;
			for (int j = c - 1; j >= 1; j--)
				if (!fit[j]) {
					tw_drop(t, j, c, size, cand, fit);
					c--;
				}
			for (int j = 0; j < c; j++) {
				t->map[(size_t)j * t->stride + size] = cand[j];
				t->owner[cand[j]] = t->tag + j;
				t->idx[cand[j]] = size;
			}
			size++;
		}
	}
	free(cand);
	free(fit);
	*cp = c;
	return size;
}

/* Copies smaller than this many nodes are not reported as structures. */
#define TW_MIN_SIZE 2

static void
tw_keep(struct tw *t, sl_twins *out, int c, int size, bool comps)
{
	sl_twin_group *g;

	out->g = sl_xrealloc(out->g, ((size_t)out->ngroups + 1) * sizeof *out->g);
	g = &out->g[out->ngroups++];
	g->copies = c;
	g->size = size;
	g->components = comps;
	g->merged = false;
	g->node = sl_xmalloc((size_t)c * size * sizeof *g->node);
	for (int j = 0; j < c; j++)
		memcpy(g->node + (size_t)j * size, t->map + (size_t)j * t->stride,
		    (size_t)size * sizeof *g->node);
	t->tag += c;
}

static void
tw_release(struct tw *t, int c, int size)
{
	for (int j = 0; j < c; j++)
		for (int i = 0; i < size; i++)
			t->owner[t->map[(size_t)j * t->stride + i]] = -1;
}

struct tw_key {
	uint64_t key;
	int id;
};

static int
tw_cmp_key(const void *a, const void *b)
{
	const struct tw_key *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->id - y->id;
}

/* Whole connected components alike: comp[v] its component, order BFS. */
static void
tw_components(struct tw *t, sl_twins *out)
{
	const sl_problem *w = t->g.w;
	int n = t->n, nc = 0, *comp = sl_xmalloc(((size_t)n + 1) * sizeof *comp);
	int *order = sl_xmalloc(((size_t)n + 1) * sizeof *order), no = 0;
	int *start, *anchor;
	uint64_t *cols = sl_xmalloc(((size_t)n + 1) * sizeof *cols);
	struct tw_key *key;

	for (int v = 0; v < n; v++)
		comp[v] = -1;
	start = sl_xmalloc(((size_t)n + 2) * sizeof *start);
	for (int v = 0; v < n; v++) {
		int h;
		if (!tw_live_node(t, v) || comp[v] >= 0)
			continue;
		start[nc] = no;
		comp[v] = nc;
		order[no++] = v;
		for (h = start[nc]; h < no; h++) {
			int u = order[h];
			for (int i = t->aoff[u]; i < t->aoff[u + 1]; i++) {
				int o = red_other(w, t->aedge[i], u);
				if (comp[o] < 0) {
					comp[o] = nc;
					order[no++] = o;
				}
			}
		}
		nc++;
	}
	start[nc] = no;
	key = sl_xmalloc(((size_t)nc + 1) * sizeof *key);
	for (int c = 0; c < nc; c++) {
		int sz = start[c + 1] - start[c];
		uint64_t h = tw_mix(7, (uint64_t)sz);
		for (int i = 0; i < sz; i++)
			cols[i] = t->col[order[start[c] + i]];
		qsort(cols, (size_t)sz, sizeof *cols, tw_cmp_u64);
		for (int i = 0; i < sz; i++)
			h = tw_mix(h, cols[i]);
		key[c].key = h;
		key[c].id = c;
	}
	qsort(key, (size_t)nc, sizeof *key, tw_cmp_key);
	anchor = sl_xmalloc(((size_t)nc + 1) * sizeof *anchor);
	for (int i = 0; i < nc;) {
		int j = i, c0 = key[i].id, sz = start[c0 + 1] - start[c0];
		uint64_t rare = 0;
		int best = INT32_MAX, got;
		while (j < nc && key[j].key == key[i].key)
			j++;
		if (j - i < 2) {
			i = j;
			continue;
		}
		/* the anchor: the rarest colour of the first component */
		for (int a = 0; a < sz; a++) {
			int cnt = 0;
			uint64_t ca = t->col[order[start[c0] + a]];
			if (sz > 64 && a >= 64)
				break;	/* a few candidates are enough */
			for (int b = 0; b < sz; b++)
				cnt += t->col[order[start[c0] + b]] == ca;
			if (cnt < best || (cnt == best && ca < rare)) {
				best = cnt;
				rare = ca;
			}
		}
		for (int q = i; q < j; q++) {
			int c = key[q].id;
			anchor[q - i] = -1;
			for (int b = start[c]; b < start[c + 1]; b++)
				if (t->col[order[b]] == rare) {
					anchor[q - i] = order[b];
					break;
				}
		}
		t->stride = sz;
		t->map = sl_xrealloc(t->map, (size_t)(j - i) * sz * sizeof *t->map);
		got = 0;
		for (int q = 0; q < j - i; q++)
			if (anchor[q] < 0)
				got = -1;
		if (got == 0) {
			int c = j - i;
			got = tw_grow(t, &c, anchor, sz);
			if (got == sz && c == j - i)
				tw_keep(t, out, c, sz, true);
			else if (got > 0)
				tw_release(t, c, got);
		}
		i = j;
	}
	free(anchor);
	free(key);
	free(cols);
	free(start);
	free(order);
	free(comp);
}

struct tw_class {
	uint64_t col;
	int first, size;	/* in the sorted list */
	long cover;		/* nodes in classes of its size */
};

static int
tw_cmp_class(const void *a, const void *b)
{
	const struct tw_class *x = a, *y = b;

	if (x->cover != y->cover)
		return x->cover > y->cover ? -1 : 1;
	if (x->size != y->size)
		return y->size - x->size;
	return x->col < y->col ? -1 : x->col > y->col;
}

/*
 * Repeated structures among the free nodes: the colour classes of the size
 * that covers most nodes first (the number of layers), each class's free
 * members grown into copies.
 */
static void
tw_structures(struct tw *t, sl_twins *out)
{
	int n = t->n, nf = 0, ncl = 0, free_left;
	struct tw_key *fr = sl_xmalloc(((size_t)n + 1) * sizeof *fr);
	struct tw_class *cl;
	long *cover = sl_xcalloc((size_t)n + 2, sizeof *cover);
	int *anchor = sl_xmalloc(((size_t)n + 1) * sizeof *anchor);

	for (int v = 0; v < n; v++)
		if (t->owner[v] == -1) {
			fr[nf].key = t->col[v];
			fr[nf].id = v;
			nf++;
		}
	qsort(fr, (size_t)nf, sizeof *fr, tw_cmp_key);
	free_left = nf;
	cl = sl_xmalloc(((size_t)nf + 1) * sizeof *cl);
	for (int i = 0; i < nf;) {
		int j = i;
		while (j < nf && fr[j].key == fr[i].key)
			j++;
		if (j - i >= 2) {
			cl[ncl].col = fr[i].key;
			cl[ncl].first = i;
			cl[ncl].size = j - i;
			cover[j - i] += j - i;
			ncl++;
		}
		i = j;
	}
	for (int c = 0; c < ncl; c++)
		cl[c].cover = cover[cl[c].size];
	qsort(cl, (size_t)ncl, sizeof *cl, tw_cmp_class);
	for (int c = 0; c < ncl; c++) {
		int na = 0, got;
		for (int i = 0; i < cl[c].size; i++) {
			int v = fr[cl[c].first + i].id;
			if (t->owner[v] == -1 &&
			    (na == 0 || tw_same_node(t, anchor[0], v)))
				anchor[na++] = v;
		}
		if (na < 2)
			continue;
		t->stride = free_left / na;
		if (t->stride < TW_MIN_SIZE)
			continue;
		t->map = sl_xrealloc(t->map, (size_t)na * t->stride *
		    sizeof *t->map);
		got = tw_grow(t, &na, anchor, t->stride);
		if (got >= TW_MIN_SIZE) {
			tw_keep(t, out, na, got, false);
			free_left -= na * got;
		} else if (got > 0)
			tw_release(t, na, got);
	}
	free(anchor);
	free(cover);
	free(cl);
	free(fr);
}

static void
tw_find(const struct tw_view *g, sl_twins *out)
{
	const sl_problem *w = g->w;
	struct tw t = { .g = *g, .n = w->n,
	    .most_work = TW_WORK * ((double)w->n + g->m) + 1e6 };
	int *deg = sl_xcalloc((size_t)w->n + 1, sizeof *deg);

	memset(out, 0, sizeof *out);
	t.aoff = sl_xcalloc((size_t)w->n + 2, sizeof *t.aoff);
	for (int e = 0; e < g->m; e++)
		if (tw_live_edge(&t, e)) {
			t.aoff[w->edge[e][0] + 1]++;
			t.aoff[w->edge[e][1] + 1]++;
		}
	for (int v = 0; v < w->n; v++)
		t.aoff[v + 1] += t.aoff[v];
	t.aedge = sl_xmalloc(((size_t)t.aoff[w->n] + 1) * sizeof *t.aedge);
	for (int e = 0; e < g->m; e++)
		if (tw_live_edge(&t, e))
			for (int s = 0; s < 2; s++) {
				int v = w->edge[e][s];
				t.aedge[t.aoff[v] + deg[v]++] = e;
			}
	t.col = sl_xmalloc(((size_t)w->n + 1) * sizeof *t.col);
	t.ehash = sl_xcalloc(2 * (size_t)g->m + 2, sizeof *t.ehash);
	t.owner = sl_xmalloc(((size_t)w->n + 1) * sizeof *t.owner);
	t.mark = sl_xcalloc((size_t)w->n + 1, sizeof *t.mark);
	t.medge = sl_xcalloc((size_t)w->n + 1, sizeof *t.medge);
	t.idx = sl_xcalloc((size_t)w->n + 1, sizeof *t.idx);
	t.pick = sl_xcalloc((size_t)w->n + 1, sizeof *t.pick);
	for (int v = 0; v < w->n; v++)
		t.owner[v] = tw_live_node(&t, v) ? -1 : -2;
	tw_colours(&t);
	tw_components(&t, out);
	tw_structures(&t, out);
	free(deg);
	free(t.aoff);
	free(t.aedge);
	free(t.col);
	free(t.ehash);
	free(t.owner);
	free(t.mark);
	free(t.medge);
	free(t.idx);
	free(t.pick);
	free(t.map);
}

void
sl_twins_find(const sl_problem *p, sl_twins *out)
{
	struct tw_view g = { .w = p, .ok = (const uint8_t *const *)p->allowed,
	    .m = p->m };

	tw_find(&g, out);
}

void
sl_twins_free(sl_twins *t)
{
	for (int i = 0; i < t->ngroups; i++)
		free(t->g[i].node);
	free(t->g);
	memset(t, 0, sizeof *t);
}

/* ------------------------------------------ identical components merged */

/*
 * Whether the limit can tell the copies of a group of whole components
 * apart: not when, wherever one of their nodes is live, every node live
 * then on its largest usage still keeps the limit.  The copies then meet
 * neither each other nor anything else, and one solved once stands for all.
 * maxload: per distinct interval end of p, the largest load from it on;
 * ends its sorted ends, nt of them; tab a sparse table of range maxima.
 */
struct red_maxload {
	int64_t *ends;
	int nt, levels;
	int64_t **tab;
};

static int
red_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int
red_end_index(const struct red_maxload *L, int64_t x)
{
	int lo = 0, hi = L->nt;

	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (L->ends[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void
red_maxload_build(struct red_maxload *L, const sl_problem *p)
{
	int n = 0;
	int64_t *d;

	L->ends = sl_xmalloc(2 * ((size_t)p->n + 1) * sizeof *L->ends);
	for (int v = 0; v < p->n; v++)
		if (p->interval[v][0] < p->interval[v][1]) {
			L->ends[n++] = p->interval[v][0];
			L->ends[n++] = p->interval[v][1];
		}
	qsort(L->ends, (size_t)n, sizeof *L->ends, red_cmp_i64);
	L->nt = 0;
	for (int i = 0; i < n; i++)
		if (L->nt == 0 || L->ends[L->nt - 1] != L->ends[i])
			L->ends[L->nt++] = L->ends[i];
	d = sl_xcalloc((size_t)L->nt + 1, sizeof *d);
	for (int v = 0; v < p->n; v++) {
		int64_t u = 0;
		if (p->interval[v][0] >= p->interval[v][1])
			continue;
		for (int s = 0; s < p->k[v]; s++)
			if (p->allowed[v][s] && p->usage[v][s] > u)
				u = p->usage[v][s];
		d[red_end_index(L, p->interval[v][0])] = sl_add_sat(
		    d[red_end_index(L, p->interval[v][0])], u);
		d[red_end_index(L, p->interval[v][1])] = sl_add_sat(
		    d[red_end_index(L, p->interval[v][1])], -u);
	}
	L->levels = 1;
	while ((1 << L->levels) <= L->nt)
		L->levels++;
	L->tab = sl_xmalloc((size_t)L->levels * sizeof *L->tab);
	L->tab[0] = d;
	for (int i = 1; i <= L->nt; i++)
		d[i] = sl_add_sat(d[i], d[i - 1]);
	for (int l = 1; l < L->levels; l++) {
		L->tab[l] = sl_xmalloc(((size_t)L->nt + 1) * sizeof **L->tab);
		for (int i = 0; i + (1 << l) <= L->nt; i++) {
			int64_t a = L->tab[l - 1][i],
			    b = L->tab[l - 1][i + (1 << (l - 1))];
			L->tab[l][i] = a > b ? a : b;
		}
	}
}

/* Largest load over [lo, hi) of the time axis (lo < hi, both ends of p). */
static int64_t
red_maxload_get(const struct red_maxload *L, int64_t lo, int64_t hi)
{
	int a = red_end_index(L, lo), b = red_end_index(L, hi), l = 0;
	int64_t x, y;

	while ((2 << l) <= b - a)
		l++;
	x = L->tab[l][a];
	y = L->tab[l][b - (1 << l)];
	return x > y ? x : y;
}

static void
red_maxload_free(struct red_maxload *L)
{
	for (int l = 0; l < L->levels; l++)
		free(L->tab[l]);
	free(L->tab);
	free(L->ends);
}

/* Costs this large times the copies would be read as impossible pairs. */
static bool
red_scales(int64_t x, int c)
{
	return x >= SL_COST_IMPOSSIBLE ||
	    (x > -SL_COST_IMPOSSIBLE / 10 / c && x < SL_COST_IMPOSSIBLE / 10 / c);
}

/*
 * Finds the identical subgraphs of the contracted problem and merges groups
 * of whole components the limit cannot tell apart: the first copy stays,
 * its costs times the copies, the others take its plan.
 */
static void
red_twins(sl_reduction *red, struct red_work *r, const sl_problem *p)
{
	sl_problem *w = r->w;
	struct tw_view g = { .w = w, .ok = (const uint8_t *const *)w->allowed,
	    .gone = r->gone, .dead = r->dead, .mhead = r->mhead, .m = r->m };
	struct red_maxload L = { 0 };
	bool limited = p->usage_limit >= 0 && p->interval != NULL &&
	    p->usage != NULL, built = false;

	tw_find(&g, &red->twins);
	for (int gi = 0; gi < red->twins.ngroups; gi++) {
		sl_twin_group *tg = &red->twins.g[gi];
		int c = tg->copies, sz = tg->size;
		bool ok = tg->components;

		red->twin_nodes += c * sz;
		for (int i = 0; ok && i < sz; i++) {
			int v = tg->node[i];
			for (int s = 0; ok && s < w->k[v]; s++)
				ok = red_scales(w->cost[v][s], c);
			for (int a = 0; ok && a < r->nadj[v]; a++) {
				int e = r->adj[v][a];
				size_t cells;
				if (r->dead[e])
					continue;
				cells = (size_t)w->k[w->edge[e][0]] *
				    w->k[w->edge[e][1]];
				for (size_t x = 0; ok && x < cells; x++)
					ok = red_scales(w->ecost[e][x], c);
			}
		}
		if (ok && limited) {
			if (!built) {
				red_maxload_build(&L, p);
				built = true;
			}
			for (int j = 0; ok && j < c; j++)
				for (int i = 0; ok && i < sz; i++) {
					int v = tg->node[(size_t)j * sz + i];
					if (p->interval[v][0] < p->interval[v][1])
						ok = red_maxload_get(&L,
						    p->interval[v][0],
						    p->interval[v][1]) <=
						    p->usage_limit;
				}
		}
		if (!ok)
			continue;
		/* the first copy costs as much as all of them */
		for (int i = 0; i < sz; i++) {
			int v = tg->node[i];
			for (int s = 0; s < w->k[v]; s++)
				w->cost[v][s] = sl_mul_sat(w->cost[v][s], c);
			for (int a = 0; a < r->nadj[v]; a++) {
				int e = r->adj[v][a];
				size_t cells;
				if (r->dead[e] || w->edge[e][0] != v)
					continue;
				cells = (size_t)w->k[v] * w->k[w->edge[e][1]];
				for (size_t x = 0; x < cells; x++)
					w->ecost[e][x] = sl_mul_sat(w->ecost[e][x], c);
			}
		}
		for (int j = 1; j < c; j++)
			for (int i = 0; i < sz; i++) {
				int v = tg->node[(size_t)j * sz + i];
				struct red_step st = { .kind = RED_COPY, .v = v,
				    .a = tg->node[i], .b = -1 };
				for (int a = 0; a < r->nadj[v]; a++)
					if (!r->dead[r->adj[v][a]])
						red_kill(r, r->adj[v][a]);
				r->gone[v] = true;
				red_step_add(red, st);
			}
		tg->merged = true;
		red->merged += (c - 1) * sz;
	}
	if (built)
		red_maxload_free(&L);
}
