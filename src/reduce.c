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

enum { RED_ISOLATED, RED_LEAF, RED_CHAIN };

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

static bool
red_fixed_usage(const sl_problem *w, int v)
{
	int64_t u = -1;

	if (w->usage_limit < 0 || w->interval == NULL || w->usage == NULL ||
	    w->interval[v][0] >= w->interval[v][1])
		return true;
	for (int s = 0; s < w->k[v]; s++) {
		if (!w->allowed[v][s])
			continue;
		if (u >= 0 && w->usage[v][s] != u)
			return false;
		u = w->usage[v][s];
	}
	return true;
}

static int64_t
red_const_usage(const sl_problem *w, int v)
{
	if (w->interval == NULL || w->usage == NULL)
		return 0;
	for (int s = 0; s < w->k[v]; s++)
		if (w->allowed[v][s])
			return w->usage[v][s];
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
	bool mem = w->usage_limit >= 0 && w->usage != NULL;
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
			if (w->cost[v][t] > w->cost[v][s] ||
			    (mem && w->usage[v][t] > w->usage[v][s]))
				continue;
			strict = w->cost[v][t] < w->cost[v][s] ||
			    (mem && w->usage[v][t] < w->usage[v][s]);
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

static void
red_fix_load(sl_reduction *red, const sl_problem *w, int v)
{
	int64_t u = red_const_usage(w, v);

	if (w->interval == NULL || u == 0 ||
	    w->interval[v][0] >= w->interval[v][1])
		return;
	red->fixed = sl_xrealloc(red->fixed, ((size_t)red->nfixed + 1) *
	    sizeof *red->fixed);
	red->fixed[red->nfixed][0] = w->interval[v][0];
	red->fixed[red->nfixed][1] = w->interval[v][1];
	red->fixed[red->nfixed][2] = u;
	red->nfixed++;
}

/* Contracts v if it can be; true when it was. */
static bool
red_contract(sl_reduction *red, struct red_work *r, int v)
{
	sl_problem *w = r->w;
	int e[2], ne;
	struct red_step st = { .v = v, .a = -1, .b = -1 };

	if (r->gone[v] || r->deg[v] > 2 || !red_fixed_usage(w, v))
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
	red_fix_load(red, w, v);
	r->gone[v] = true;
	red_step_add(red, st);
	return true;
}

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
	for (int e = 0; e < p->m; e++) {
		red_adj_add(&r, p->edge[e][0], e);
		red_adj_add(&r, p->edge[e][1], e);
	}
	for (int v = 0; v < p->n; v++)
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
		if (p->interval != NULL && p->usage != NULL) {
			q->interval = sl_xcalloc((size_t)nq + 1,
			    sizeof *q->interval);
			q->usage = sl_xcalloc((size_t)nq + 1, sizeof *q->usage);
			for (int v = 0; v < p->n; v++) {
				int i = newid[v];
				if (i < 0)
					continue;
				q->interval[i][0] = p->interval[v][0];
				q->interval[i][1] = p->interval[v][1];
				q->usage[i] = sl_xmalloc((size_t)p->k[v] *
				    sizeof **q->usage);
				memcpy(q->usage[i], p->usage[v],
				    (size_t)p->k[v] * sizeof **q->usage);
			}
		}
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
	free(red->newid);
	sl_problem_free(red->q);
	memset(red, 0, sizeof *red);
}
