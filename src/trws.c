/*
 * trws.c: sequential tree-reweighted message passing (TRW-S, Kolmogorov
 * 2006) on a strategy graph without its usage limit: node costs given by
 * the caller (the anytime search passes the limit priced into them), edge
 * costs from the problem, read in place.
 *
 * Nodes are taken in index order.  Node v has nin edges to earlier nodes
 * and nout to later ones, and the weight g = 1 / max(nin, nout).  A forward
 * pass visits the nodes in order; at v the reparametrized costs
 *
 *	h(s) = cost(v, s) + the messages into v over all its edges
 *
 * are formed, and for every edge e to a later node w the message into w is
 *
 *	m(e -> w)(t) = min_s [ g h(s) - m(e -> v)(s) + cost_e(s, t) ] - d_e,
 *
 * d_e its minimum.  The backward pass does the same in reverse order.
 *
 * The bound.  Any messages leave the energy of every plan unchanged once the
 * edges carry cost_e(s, t) - m(e -> v)(s) - m(e -> w)(t) and the nodes
 * h(s).  Split each h into g h for every edge the pass sends along and the
 * rest, (1 - nout g) h >= 0, for the node: then every plan costs at least
 * the sum of the parts' minima, and right after the pass the part of edge e
 * has minimum d_e exactly.  So a pass bounds the optimum from below by
 *
 *	sum_e d_e + sum_v (1 - nout g) min_s h(s).
 *
 * The plan: in the forward pass v takes its cheapest strategy given the
 * strategies already taken by its earlier neighbours and the messages from
 * its later ones.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

struct sl_trws {
	const sl_problem *p;
	uint8_t *const *ok;
	int *aoff, *aedge;	/* incident edges, CSR */
	int *nin, *nout;
	size_t *moff;		/* messages of edge e: into end 0, then end 1 */
	double *msg;
	double *h, *hs, *raw;	/* scratch of the widest node */
};

sl_trws *
sl_trws_new(const sl_problem *p, uint8_t *const *ok)
{
	sl_trws *t = sl_xcalloc(1, sizeof *t);
	int n = p->n, kmax = 1;
	int *deg = sl_xcalloc((size_t)n + 1, sizeof *deg);
	size_t mo = 0;

	t->p = p;
	t->ok = ok != NULL ? ok : (uint8_t *const *)p->allowed;
	t->aoff = sl_xcalloc((size_t)n + 2, sizeof *t->aoff);
	t->aedge = sl_xmalloc(2 * ((size_t)p->m + 1) * sizeof *t->aedge);
	t->nin = sl_xcalloc((size_t)n + 1, sizeof *t->nin);
	t->nout = sl_xcalloc((size_t)n + 1, sizeof *t->nout);
	t->moff = sl_xmalloc(((size_t)p->m + 1) * sizeof *t->moff);
	for (int e = 0; e < p->m; e++) {
		int u = p->edge[e][0], w = p->edge[e][1];
		t->aoff[u + 1]++;
		t->aoff[w + 1]++;
		t->nout[u < w ? u : w]++;
		t->nin[u < w ? w : u]++;
		t->moff[e] = mo;
		mo += (size_t)p->k[u] + (size_t)p->k[w];
	}
	for (int v = 0; v < n; v++) {
		t->aoff[v + 1] += t->aoff[v];
		if (p->k[v] > kmax)
			kmax = p->k[v];
	}
	for (int e = 0; e < p->m; e++)
		for (int j = 0; j < 2; j++) {
			int v = p->edge[e][j];
			t->aedge[t->aoff[v] + deg[v]++] = e;
		}
	free(deg);
	t->msg = sl_xcalloc(mo + 1, sizeof *t->msg);
	t->h = sl_xmalloc((size_t)kmax * sizeof *t->h);
	t->hs = sl_xmalloc((size_t)kmax * sizeof *t->hs);
	t->raw = sl_xmalloc((size_t)kmax * sizeof *t->raw);
	return t;
}

void
sl_trws_free(sl_trws *t)
{
	if (t == NULL)
		return;
	free(t->aoff);
	free(t->aedge);
	free(t->nin);
	free(t->nout);
	free(t->moff);
	free(t->msg);
	free(t->h);
	free(t->hs);
	free(t->raw);
	free(t);
}

/* The messages of edge e into its end j (0 or 1). */
static double *
trws_into(const sl_trws *t, int e, int j)
{
	return t->msg + t->moff[e] +
	    (j == 0 ? 0 : (size_t)t->p->k[t->p->edge[e][0]]);
}

/*
 * The message of edge e from v (its end j) into the other end w, from
 * hv(s) = g h(s) - m(e -> v)(s) (infinite where v may not take s); returns
 * its minimum d_e.  The cost matrix is read in place: rows when v is its
 * first end, columns otherwise.
 */
static double
trws_send(sl_trws *t, int e, int j, const double *hv)
{
	const sl_problem *p = t->p;
	int v = p->edge[e][j], w = p->edge[e][1 - j];
	int kv = p->k[v], kw = p->k[w];
	const int64_t *c = p->ecost[e];
	const uint8_t *okw = t->ok[w];
	double *raw = t->raw, *out = trws_into(t, e, 1 - j), d = INFINITY;

	if (j == 0) {
		for (int b = 0; b < kw; b++)
			raw[b] = INFINITY;
		for (int s = 0; s < kv; s++) {
			const int64_t *row = c + (size_t)s * kw;
			double hs = hv[s];
			if (hs == INFINITY)
				continue;
			for (int b = 0; b < kw; b++) {
				double x = hs + (double)row[b];
				raw[b] = x < raw[b] ? x : raw[b];
			}
		}
	} else {
		for (int b = 0; b < kw; b++) {
			const int64_t *row = c + (size_t)b * kv;
			double m = INFINITY;
			for (int s = 0; s < kv; s++) {
				double x = hv[s] + (double)row[s];
				m = x < m ? x : m;
			}
			raw[b] = m;
		}
	}
	for (int b = 0; b < kw; b++)
		if (okw[b] && raw[b] < d)
			d = raw[b];
	for (int b = 0; b < kw; b++)
		out[b] = okw[b] && raw[b] < INFINITY ? raw[b] - d : 0;
	return d;
}

/* h(s) of node v: its cost plus the messages into it. */
static void
trws_h(sl_trws *t, int64_t *const *unary, int v, double *h)
{
	const sl_problem *p = t->p;
	int k = p->k[v];

	for (int s = 0; s < k; s++)
		h[s] = t->ok[v][s] ? (double)unary[v][s] : INFINITY;
	for (int i = t->aoff[v]; i < t->aoff[v + 1]; i++) {
		int e = t->aedge[i];
		const double *m = trws_into(t, e, p->edge[e][0] == v ? 0 : 1);
		for (int s = 0; s < k; s++)
			h[s] += m[s];
	}
}

/*
 * One pass, forward (dir 1) or backward (-1); returns its bound (long
 * double sums), and in x (when not NULL, forward only) the plan.
 */
static long double
trws_pass(sl_trws *t, int64_t *const *unary, int dir, int *x)
{
	const sl_problem *p = t->p;
	long double bound = 0;
	int n = p->n;

	for (int i = 0; i < n; i++) {
		int v = dir > 0 ? i : n - 1 - i;
		int k = p->k[v], nsend = dir > 0 ? t->nout[v] : t->nin[v];
		int most = t->nin[v] > t->nout[v] ? t->nin[v] : t->nout[v];
		double g = most > 0 ? 1.0 / most : 1.0, hmin = INFINITY;

		trws_h(t, unary, v, t->h);
		if (x != NULL) {
			/* the plan: edges to earlier nodes at their strategies
			 * instead of their messages */
			double best = INFINITY;
			int bs = -1;
			for (int s = 0; s < k; s++)
				t->hs[s] = t->h[s];
			for (int j = t->aoff[v]; j < t->aoff[v + 1]; j++) {
				int e = t->aedge[j], end = p->edge[e][0] == v ? 0 : 1;
				int w = p->edge[e][1 - end];
				if (w >= v)
					continue;
				const double *m = trws_into(t, e, end);
				for (int s = 0; s < k; s++)
					t->hs[s] += (double)(end == 0 ?
					    p->ecost[e][(size_t)s * p->k[w] + x[w]] :
					    p->ecost[e][(size_t)x[w] * k + s]) - m[s];
			}
			for (int s = 0; s < k; s++)
				if (t->ok[v][s] && (bs < 0 || t->hs[s] < best)) {
					best = t->hs[s];
					bs = s;
				}
			x[v] = bs < 0 ? 0 : bs;
		}
		for (int s = 0; s < k; s++)
			if (t->ok[v][s] && t->h[s] < hmin)
				hmin = t->h[s];
		for (int j = t->aoff[v]; j < t->aoff[v + 1]; j++) {
			int e = t->aedge[j], end = p->edge[e][0] == v ? 0 : 1;
			int w = p->edge[e][1 - end];
			if (dir > 0 ? w < v : w > v)
				continue;
			const double *m = trws_into(t, e, end);
			for (int s = 0; s < k; s++)
				t->hs[s] = t->h[s] == INFINITY ? INFINITY :
				    g * t->h[s] - m[s];
			bound += trws_send(t, e, end, t->hs);
		}
		bound += (long double)(1.0 - nsend * g) * hmin;
	}
	return bound;
}

long double
sl_trws_iterate(sl_trws *t, int64_t *const *unary, int *x)
{
	long double f = trws_pass(t, unary, 1, x);
	long double b = trws_pass(t, unary, -1, NULL);
	long double lb = f > b ? f : b;

	/* doubles summed in another order than exact arithmetic would: a
	 * relative margin keeps the bound a bound */
	return lb - fabsl(lb) * 1e-9L - 1;
}
