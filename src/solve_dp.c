/*
 * solve_dp.c: the exact live solver.
 *
 * The strategy graph is a pairwise min-sum problem (PBQP).  Variable
 * elimination solves it exactly: a node of degree 0 or 1 folds into its
 * neighbour's costs, a node of degree 2 into an edge between its two
 * neighbours (merged with any edge already there), and when none of those is
 * left a general elimination step in min-size order builds a factor over the
 * node's neighbours, refusing when that factor would be too large.  Each
 * step records the best strategy of the eliminated node for every choice of
 * its neighbours, so the argmin comes back by substitution in reverse order.
 * Disallowed strategies cost DP_INF and are never picked.  The order depends
 * on the structure alone, so sl_dp_new runs it once on scopes only and
 * refuses a problem too wide for exact elimination before building a table.
 *
 * Repeated layers (p->layer, p->pos) that talk to the rest of the graph only
 * through one input node and one output node are folded (TAP): each layer
 * becomes a k_in x k_out min-plus transfer matrix, layers with equal content
 * share one matrix, and a segment tree over a chain of layers keeps the
 * chain's product so that a change in one layer costs one layer elimination
 * and O(log L) products.  The first and last layers keep their own choices:
 * the argmin is recovered per layer by descending the tree.
 *
 * The live object (sl_dp) keeps the structure, a copy of the costs it last
 * saw, the layer classes and the trees; a resolve recomputes what differs.
 * A caller that knows layers are equal may give them the very same cost
 * rows (one buffer for all of them); a layer whose rows are the previous
 * layer's, and whose structure is, takes that layer's class without reading
 * a cost, so a chain of n equal layers costs one layer's work and n pointer
 * comparisons.
 *
 * The elimination itself is dp_elim.c's (dp_internal.h).
 */
#include "dp_internal.h"

#include <stdlib.h>

/* ------------------------------------------------------------- layer folding */

/* Content of one layer, the key of its transfer matrix. */
typedef struct dp_class {
	uint64_t hash;
	int64_t *content;
	size_t len;
	int refs;
	int kin, ko;
	int64_t *T;		/* kin x ko */
	ve rec;			/* var 0 = input node, 1 + j = local node j */
	struct dp_class *hnext;	/* pool bucket */
	size_t bytes;		/* what it holds, roughly */
} dp_class;

/*
 * Classes shared by several solvers: a hash of buckets, and a ring in
 * insertion order; the oldest leave when the pool holds too much.  The pool
 * holds one reference to each class it lists.  12 MiB: the hybrid search's
 * hits come from recent stages (a stage's solves, and the next layer
 * count's fastest and least-memory plans, at the same weights, some 5 MiB
 * of classes later on GPT-3 over 64 devices: 6 MiB made its search 1.4x
 * slower), and each MiB more is memory touched for the first time (32 MiB
 * made it 0.03 s slower cold, bench_plan's first_ms, with the same plans).
 */
#define DP_POOL_BUCKETS 4096
#define DP_POOL_RING 2048
#define DP_POOL_BYTES ((size_t)12 << 20)
struct sl_dp_pool {
	dp_class *bucket[DP_POOL_BUCKETS];
	dp_class *ring[DP_POOL_RING];
	int head, count;
	size_t bytes;
};

typedef struct dp_layer {
	int n;
	int *node;		/* global node per local index (pos order) */
	int o;			/* local index of the output node */
	int in;			/* global input node, -1 none */
	int kin;
	/* merged internal pairs (a < b local); contributions CSR */
	int npair;
	int (*pair)[2];
	int *poff, *pedge;
	uint8_t *pflip;		/* edge stored (b, a) */
	/* input edges per local node; contributions CSR */
	int nin;
	int *inx, *ioff, *iedge;
	uint8_t *iflip;		/* edge stored (x, in) */
	int nedge;
	int *edges;		/* every edge owned by the layer */
	dp_class *cls;
	bool dirty;
	bool twin;		/* same structure as the layer before it in its run */
	bool stale;		/* the cached costs were not copied last solve */
} dp_layer;

typedef struct dp_seg {
	int rows, cols;
	int64_t *m;		/* owned for inner nodes; class T for leaves */
	uint64_t sig;		/* hash of the classes of its layers */
	int l;			/* first layer of its range */
} dp_seg;

/*
 * Within one pass, an inner node whose layers have the same classes as a
 * node already computed copies that product instead of multiplying: a chain
 * of equal layers costs O(log L) products after an alpha change.
 */
typedef struct dp_memo {
	int cap;		/* power of two */
	int *node, *stamp;
	uint64_t *sig;
	int pass;
} dp_memo;

typedef struct dp_run {
	int first, len;		/* layers first .. first+len-1 */
	int in, out;		/* outer input node (-1 none), output node */
	dp_seg *seg;		/* heap order, 4*len */
	dp_memo memo;
} dp_run;

struct sl_dp {
	int n, m;
	int *k;
	int (*edge)[2];
	double cap;		/* most work of one elimination run */
	/*
	 * The costs each layer's node and edge had when its class was last
	 * found: a row per node or edge, allocated when first synced (the
	 * layers that share the previous layer's rows never are).
	 */
	int64_t **ncost, **ecost;
	uint8_t **nallow;
	bool primed;
	/* folding */
	int nlayer;
	dp_layer *layer;
	int nrun;
	dp_run *run;
	int *nown;		/* node -> layer eliminating it, -1 outer */
	int *eown;		/* edge -> layer owning it, -1 outer */
	int nclass, capclass;
	dp_class **cls;
	/* outer problem */
	int nouter;
	int *outer;		/* outer index -> node */
	int *oidx;		/* node -> outer index or -1 */
	int *val;		/* scratch choices */
	int64_t *cbuf;		/* scratch content */
	size_t capcbuf;
	int recomputed, width;
	int64_t max_entries;
	sl_dp_pool *pool;	/* classes live there when set */
};

static uint64_t dp_mix(uint64_t a, uint64_t b);

/*
 * Hash of a layer's content: a bucket key only, since equal hashes are
 * always confirmed by comparing the contents.  Long contents are sampled
 * (1024 entries evenly spaced, and the length): contents from different
 * weights differ nearly everywhere.  Four lanes, so that the
 * multiplications overlap.
 */
static uint64_t
dp_hash(const int64_t *a, size_t n)
{
	uint64_t h[4] = { 1469598103934665603ULL, 0x9e3779b97f4a7c15ULL,
	    0xbf58476d1ce4e5b9ULL, 0x94d049bb133111ebULL };
	size_t step = n > 1024 ? n / 1024 : 1, m = n / step;

	for (size_t i = 0; i < m; i++) {
		int j = (int)(i & 3);
		h[j] ^= (uint64_t)a[i * step];
		h[j] *= 1099511628211ULL;
		h[j] ^= h[j] >> 29;
	}
	if (n > 0)
		h[0] ^= (uint64_t)a[n - 1];
	return dp_mix(dp_mix(h[0], h[1]), dp_mix(h[2], h[3] ^ (uint64_t)n));
}

static void
dp_class_unref(sl_dp *d, dp_class *c)
{
	if (c == NULL || --c->refs > 0)
		return;
	for (int i = 0; i < d->nclass; i++)
		if (d->cls[i] == c) {
			d->cls[i] = d->cls[--d->nclass];
			break;
		}
	free(c->content);
	free(c->T);
	ve_free(&c->rec);
	free(c);
}

static void
dp_class_release(dp_class *c)
{
	if (c == NULL || --c->refs > 0)
		return;
	free(c->content);
	free(c->T);
	ve_free(&c->rec);
	free(c);
}

sl_dp_pool *
sl_dp_pool_new(void)
{
	return sl_xcalloc(1, sizeof(sl_dp_pool));
}

/* The oldest class leaves the pool. */
static void
dp_pool_evict(sl_dp_pool *pool)
{
	int at = (pool->head - pool->count + DP_POOL_RING) % DP_POOL_RING;
	dp_class *c = pool->ring[at], **pp;

	for (pp = &pool->bucket[c->hash % DP_POOL_BUCKETS]; *pp != c; pp = &(*pp)->hnext)
		;
	*pp = c->hnext;
	pool->count--;
	pool->bytes -= c->bytes;
	dp_class_release(c);
}

void
sl_dp_pool_free(sl_dp_pool *pool)
{
	if (pool == NULL)
		return;
	while (pool->count > 0)
		dp_pool_evict(pool);
	free(pool);
}

void
sl_dp_set_pool(sl_dp *d, sl_dp_pool *pool)
{
	d->pool = pool;
}

static dp_class *
dp_pool_find(sl_dp_pool *pool, const int64_t *c, size_t len, uint64_t h)
{
	for (dp_class *x = pool->bucket[h % DP_POOL_BUCKETS]; x != NULL; x = x->hnext)
		if (x->hash == h && x->len == len &&
		    memcmp(x->content, c, len * sizeof *c) == 0)
			return x;
	return NULL;
}

static void
dp_pool_add(sl_dp_pool *pool, dp_class *c)
{
	c->bytes = c->len * sizeof *c->content +
	    (size_t)c->kin * c->ko * sizeof *c->T;
	for (int i = 0; i < c->rec.nst; i++) {
		size_t n = 1;
		for (int j = 0; j < c->rec.st[i].ny; j++)
			n *= (size_t)c->rec.k[c->rec.st[i].y[j]];
		c->bytes += n * sizeof *c->rec.st[i].arg;
	}
	while (pool->count > 0 && (pool->count == DP_POOL_RING ||
	    pool->bytes + c->bytes > DP_POOL_BYTES))
		dp_pool_evict(pool);
	c->refs++;
	c->hnext = pool->bucket[c->hash % DP_POOL_BUCKETS];
	pool->bucket[c->hash % DP_POOL_BUCKETS] = c;
	pool->ring[pool->head] = c;
	pool->head = (pool->head + 1) % DP_POOL_RING;
	pool->count++;
	pool->bytes += c->bytes;
}

static int64_t *
dp_cbuf(sl_dp *d, size_t n)
{
	if (n > d->capcbuf) {
		free(d->cbuf);
		d->capcbuf = n + n / 2;
		d->cbuf = sl_xmalloc(d->capcbuf * sizeof *d->cbuf);
	}
	return d->cbuf;
}

/*
 * The ka x kb table (a-major) summing n edges of p between two nodes: edge
 * edges[q] is stored (a, b), or (b, a) when flip[q].  Returns ka * kb.
 */
static size_t
dp_edge_table(const sl_problem *p, int64_t *t, int ka, int kb,
    const int *edges, const uint8_t *flip, int n)
{
	size_t len = (size_t)ka * kb;

	if (n == 0)
		memset(t, 0, len * sizeof *t);
	for (int q = 0; q < n; q++) {
		const int64_t *e = p->ecost[edges[q]];
		if (q == 0 && !flip[q])
			memcpy(t, e, len * sizeof *t);	/* dp_add(0, x) is x */
		else if (q == 0)
			for (int a = 0; a < ka; a++)
				for (int b = 0; b < kb; b++)
					t[(size_t)a * kb + b] = e[(size_t)b * ka + a];
		else if (!flip[q])
			for (size_t j = 0; j < len; j++)
				t[j] = dp_add(t[j], e[j]);
		else
			for (int a = 0; a < ka; a++)
				for (int b = 0; b < kb; b++)
					t[(size_t)a * kb + b] = dp_add(
					    t[(size_t)a * kb + b],
					    e[(size_t)b * ka + a]);
	}
	return len;
}

/*
 * Canonical content of layer L from p: header (sizes, output, pairs), then
 * unary costs (DP_INF where not allowed), merged pair tables (a-major), and
 * input tables (in-major).  Returns its length in d->cbuf.
 */
static size_t
dp_layer_content(sl_dp *d, const sl_problem *p, const dp_layer *L)
{
	size_t len = 5 + (size_t)L->n + 2 * (size_t)L->npair + (size_t)L->nin;
	int64_t *c;
	size_t at;

	for (int j = 0; j < L->n; j++)
		len += (size_t)p->k[L->node[j]];
	for (int i = 0; i < L->npair; i++)
		len += (size_t)p->k[L->node[L->pair[i][0]]] *
		    p->k[L->node[L->pair[i][1]]];
	for (int i = 0; i < L->nin; i++)
		len += (size_t)L->kin * p->k[L->node[L->inx[i]]];
	c = dp_cbuf(d, len);
	at = 0;
	c[at++] = L->n;
	c[at++] = L->kin;
	c[at++] = L->o;
	c[at++] = L->npair;
	c[at++] = L->nin;
	for (int j = 0; j < L->n; j++)
		c[at++] = p->k[L->node[j]];
	for (int i = 0; i < L->npair; i++) {
		c[at++] = L->pair[i][0];
		c[at++] = L->pair[i][1];
	}
	for (int i = 0; i < L->nin; i++)
		c[at++] = L->inx[i];
	for (int j = 0; j < L->n; j++) {
		int v = L->node[j];
		for (int s = 0; s < p->k[v]; s++)
			c[at++] = p->allowed[v][s] ? p->cost[v][s] : DP_INF;
	}
	for (int i = 0; i < L->npair; i++) {
		int ka = p->k[L->node[L->pair[i][0]]];
		int kb = p->k[L->node[L->pair[i][1]]];
		at += dp_edge_table(p, c + at, ka, kb, L->pedge + L->poff[i],
		    L->pflip + L->poff[i], L->poff[i + 1] - L->poff[i]);
	}
	for (int i = 0; i < L->nin; i++) {
		int kx = p->k[L->node[L->inx[i]]], ki = L->kin;
		at += dp_edge_table(p, c + at, ki, kx, L->iedge + L->ioff[i],
		    L->iflip + L->ioff[i], L->ioff[i + 1] - L->ioff[i]);
	}
	return at;
}

/* Eliminates a layer's inner nodes: its transfer matrix and argmin record. */
static dp_class *
dp_class_build(sl_dp *d, const int64_t *c, size_t len, uint64_t h,
    sl_error *err)
{
	int n = (int)c[0], kin = (int)c[1], o = (int)c[2], npair = (int)c[3];
	int nin = (int)c[4];
	const int64_t *kk = c + 5, *pairs = kk + n, *inx = pairs + 2 * (size_t)npair;
	int *k;
	size_t at = 5 + (size_t)n + 2 * (size_t)npair + (size_t)nin;
	dp_class *cl;
	ve *w;

	(void)len;
	cl = sl_xcalloc(1, sizeof *cl);
	w = &cl->rec;
	k = sl_xmalloc((size_t)(n + 1) * sizeof *k);
	k[0] = kin;
	for (int j = 0; j < n; j++)
		k[1 + j] = (int)kk[j];
	ve_init(w, n + 1, k);
	w->cap = d->cap;
	for (int j = 0; j < n; j++) {
		memcpy(w->u[1 + j], c + at, (size_t)k[1 + j] * sizeof *c);
		at += (size_t)k[1 + j];
	}
	for (int i = 0; i < npair; i++) {
		int a = 1 + (int)pairs[2 * i], b = 1 + (int)pairs[2 * i + 1];
		ve_add_binary(w, a, b, (int64_t *)(c + at), false);
		at += (size_t)k[a] * k[b];
	}
	for (int i = 0; i < nin; i++) {
		int x = 1 + (int)inx[i];
		ve_add_binary(w, 0, x, (int64_t *)(c + at), false);
		at += (size_t)kin * k[x];
	}
	w->state[0] = 1;
	w->state[1 + o] = 1;
	if (ve_run(w, err) != SL_OK) {
		ve_free(w);
		free(k);
		free(cl);
		return NULL;
	}
	cl->kin = kin;
	cl->ko = k[1 + o];
	cl->T = sl_xmalloc((size_t)kin * cl->ko * sizeof *cl->T);
	for (int a = 0; a < kin; a++)
		for (int b = 0; b < cl->ko; b++)
			cl->T[(size_t)a * cl->ko + b] = dp_add(w->cst,
			    dp_add(w->u[0][a], w->u[1 + o][b]));
	for (int i = 0; i < w->nf; i++) {
		const ve_fac *f = &w->f[i];
		if (f->ar == 0)
			continue;
		/* only {0, 1+o} can remain */
		for (int a = 0; a < kin; a++)
			for (int b = 0; b < cl->ko; b++) {
				size_t idx = f->sc[0] == 0 ?
				    (size_t)a * cl->ko + b : (size_t)b * kin + a;
				cl->T[(size_t)a * cl->ko + b] = dp_add(
				    cl->T[(size_t)a * cl->ko + b], f->t[idx]);
			}
	}
	if (w->width > d->width)
		d->width = w->width;
	if (w->max_entries > d->max_entries)
		d->max_entries = w->max_entries;
	ve_free_work(w);
	free(k);
	cl->hash = h;
	cl->len = len;
	if (c == d->cbuf) {
		/* the class keeps the buffer the content was built in, cut
		 * to its length (the next layer's content gets another) */
		cl->content = sl_xrealloc(d->cbuf, len * sizeof *c);
		d->cbuf = NULL;
		d->capcbuf = 0;
	} else {
		cl->content = sl_xmalloc(len * sizeof *c);
		memcpy(cl->content, c, len * sizeof *c);
	}
	return cl;
}

/* Finds or builds the class of layer L's current content. */
static int
dp_layer_classify(sl_dp *d, const sl_problem *p, dp_layer *L, sl_error *err)
{
	size_t len = dp_layer_content(d, p, L);
	uint64_t h = dp_hash(d->cbuf, len);
	dp_class *cl = NULL;

	if (L->cls != NULL && L->cls->hash == h && L->cls->len == len &&
	    memcmp(L->cls->content, d->cbuf, len * sizeof *d->cbuf) == 0)
		return SL_OK;
	for (int i = 0; i < d->nclass; i++) {
		dp_class *c = d->cls[i];
		if (c->hash == h && c->len == len &&
		    memcmp(c->content, d->cbuf, len * sizeof *d->cbuf) == 0) {
			cl = c;
			break;
		}
	}
	if (cl == NULL && d->pool != NULL)
		cl = dp_pool_find(d->pool, d->cbuf, len, h);
	if (cl == NULL && d->pool != NULL) {
		/* the pool keeps it; this solver lists it nowhere */
		cl = dp_class_build(d, d->cbuf, len, h, err);
		if (cl == NULL)
			return err != NULL ? err->code : SL_EINTERNAL;
		d->recomputed++;
		dp_pool_add(d->pool, cl);
	} else if (cl == NULL) {
		cl = dp_class_build(d, d->cbuf, len, h, err);
		if (cl == NULL)
			return err != NULL ? err->code : SL_EINTERNAL;
		d->recomputed++;
		if (d->nclass == d->capclass) {
			d->capclass = d->capclass ? 2 * d->capclass : 8;
			d->cls = sl_xrealloc(d->cls,
			    (size_t)d->capclass * sizeof *d->cls);
		}
		d->cls[d->nclass++] = cl;
	}
	cl->refs++;
	dp_class_unref(d, L->cls);
	L->cls = cl;
	L->dirty = true;
	return SL_OK;
}

static uint64_t
dp_mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL);

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 29);
}

/* Whether layers [a, a+n) and [b, b+n) of run R have the same classes. */
static bool
dp_same_classes(const sl_dp *d, const dp_run *R, int a, int b, int n)
{
	for (int i = 0; i < n; i++)
		if (d->layer[R->first + a + i].cls != d->layer[R->first + b + i].cls)
			return false;
	return true;
}

/* Recomputes the tree nodes above changed leaves; returns whether node changed. */
static bool
dp_seg_fix(sl_dp *d, dp_run *R, int node, int l, int r, bool all)
{
	dp_seg *s = &R->seg[node];

	s->l = l;
	if (l == r) {
		dp_layer *L = &d->layer[R->first + l];
		bool ch = all || L->dirty || s->m != L->cls->T;
		s->m = L->cls->T;
		s->rows = L->cls->kin;
		s->cols = L->cls->ko;
		s->sig = dp_mix((uint64_t)(uintptr_t)L->cls, 1);
		return ch;
	}
	int mid = (l + r) / 2;
	bool a = dp_seg_fix(d, R, 2 * node, l, mid, all);
	bool b = dp_seg_fix(d, R, 2 * node + 1, mid + 1, r, all);
	if (!(a || b || all) && s->m != NULL)
		return false;
	dp_seg *x = &R->seg[2 * node], *y = &R->seg[2 * node + 1];
	dp_memo *M = &R->memo;
	uint64_t sig = dp_mix(dp_mix(x->sig, y->sig), (uint64_t)(r - l + 1));
	size_t slot = (size_t)(sig & (uint64_t)(M->cap - 1));
	const dp_seg *twin = NULL;

	s->sig = sig;
	if (s->m == NULL || s->rows != x->rows || s->cols != y->cols) {
		free(s->m);
		s->m = sl_xmalloc((size_t)x->rows * y->cols * sizeof *s->m);
	}
	s->rows = x->rows;
	s->cols = y->cols;
	for (int probe = 0; probe < M->cap; probe++) {
		size_t q = (slot + (size_t)probe) & (size_t)(M->cap - 1);
		if (M->stamp[q] != M->pass)
			break;
		const dp_seg *t = &R->seg[M->node[q]];
		if (M->sig[q] == sig && t->rows == s->rows && t->cols == s->cols &&
		    dp_same_classes(d, R, t->l, l, r - l + 1)) {
			twin = t;
			break;
		}
	}
	if (twin != NULL) {
		memcpy(s->m, twin->m, (size_t)s->rows * s->cols * sizeof *s->m);
		return true;
	}
	dp_minplus(x->m, y->m, s->m, x->rows, x->cols, y->cols);
	for (int probe = 0; probe < M->cap; probe++) {
		size_t q = (size_t)((sig + (uint64_t)probe) & (uint64_t)(M->cap - 1));
		if (M->stamp[q] == M->pass)
			continue;
		M->stamp[q] = M->pass;
		M->sig[q] = sig;
		M->node[q] = node;
		break;
	}
	return true;
}

/* Boundary choices by descending the tree: out[l] = choice of layer l's output. */
static void
dp_seg_descend(const dp_run *R, int node, int l, int r, int a, int c, int *out)
{
	if (l == r) {
		out[l] = c;
		return;
	}
	const dp_seg *x = &R->seg[2 * node], *y = &R->seg[2 * node + 1];
	int64_t want = R->seg[node].m[(size_t)a * R->seg[node].cols + c];
	int best = 0, mid = (l + r) / 2;
	int64_t bv = DP_INF;
	for (int b = 0; b < x->cols; b++) {
		int64_t v = dp_add(x->m[(size_t)a * x->cols + b],
		    y->m[(size_t)b * y->cols + c]);
		if (v < bv) {
			bv = v;
			best = b;
			if (v == want)
				break;
		}
	}
	dp_seg_descend(R, 2 * node, l, mid, a, best, out);
	dp_seg_descend(R, 2 * node + 1, mid + 1, r, best, c, out);
}

/* ------------------------------------------------------------- structure */

typedef struct dp_inst {
	int n;
	int *node;		/* pos order */
	int min;
} dp_inst;

/* Sort key of a layer node: instance, position, index. */
typedef struct dp_key {
	int layer, pos, v;
} dp_key;

static int
dp_cmp_key(const void *a, const void *b)
{
	const dp_key *x = a, *y = b;

	if (x->layer != y->layer)
		return x->layer < y->layer ? -1 : 1;
	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	return (x->v > y->v) - (x->v < y->v);
}

static int
dp_cmp_inst(const void *a, const void *b)
{
	const dp_inst *x = a, *y = b;

	return (x->min > y->min) - (x->min < y->min);
}

/* Node adjacency (CSR of edge ids) of p. */
typedef struct dp_adj {
	int *off, *e;
} dp_adj;

static void
dp_adj_build(const sl_problem *p, dp_adj *A)
{
	int *cnt = sl_xcalloc((size_t)p->n + 1, sizeof *cnt);

	A->off = sl_xcalloc((size_t)p->n + 1, sizeof *A->off);
	A->e = sl_xmalloc((size_t)(2 * p->m + 1) * sizeof *A->e);
	for (int e = 0; e < p->m; e++) {
		A->off[p->edge[e][0] + 1]++;
		A->off[p->edge[e][1] + 1]++;
	}
	for (int v = 0; v < p->n; v++)
		A->off[v + 1] += A->off[v];
	for (int e = 0; e < p->m; e++)
		for (int j = 0; j < 2; j++) {
			int v = p->edge[e][j];
			A->e[A->off[v] + cnt[v]++] = e;
		}
	free(cnt);
}

/*
 * Whether instance i (with output node o, input node in) talks to the rest
 * only through in and o; next: the instance its output may feed (-1 for the
 * last layer of a chain, whose output may feed anything).
 */
static bool
dp_inst_ok(const sl_problem *p, const dp_adj *A, const int *inst_of,
    const dp_inst *I, int i, int o, int in, int next)
{
	for (int j = 0; j < I[i].n; j++) {
		int x = I[i].node[j];
		for (int q = A->off[x]; q < A->off[x + 1]; q++) {
			int e = A->e[q];
			int y = p->edge[e][0] == x ? p->edge[e][1] : p->edge[e][0];
			if (inst_of[y] == i)
				continue;
			if (y == in)
				continue;
			if (x == o && (next < 0 || inst_of[y] == next))
				continue;
			return false;
		}
	}
	return true;
}

/* Unique outside endpoint of instance i's edges other than o -> next. */
static int
dp_inst_input(const sl_problem *p, const dp_adj *A, const int *inst_of,
    const dp_inst *I, int i, int o, int next, bool *ok)
{
	int in = -1;

	*ok = true;
	for (int j = 0; j < I[i].n; j++) {
		int x = I[i].node[j];
		for (int q = A->off[x]; q < A->off[x + 1]; q++) {
			int e = A->e[q];
			int y = p->edge[e][0] == x ? p->edge[e][1] : p->edge[e][0];
			if (inst_of[y] == i)
				continue;
			if (x == o && next >= 0 && inst_of[y] == next)
				continue;
			if (in < 0)
				in = y;
			else if (in != y)
				*ok = false;
		}
	}
	return in;
}

static int
dp_pair_cmp(const void *a, const void *b)
{
	const int *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] - y[0];
	if (x[1] != y[1])
		return x[1] - y[1];
	return x[2] - y[2];
}

/* Fills the layer's pair and input lists and marks its edges owned. */
static bool
dp_layer_setup(sl_dp *d, const sl_problem *p, const dp_adj *A, int li,
    const int *inst_of, int inst)
{
	dp_layer *L = &d->layer[li];
	int (*pe)[3], npe = 0, (*ie)[3], nie = 0;
	int cap = 0;

	for (int j = 0; j < L->n; j++) {
		int x = L->node[j];
		cap += A->off[x + 1] - A->off[x];
	}
	pe = sl_xmalloc((size_t)(cap + 1) * sizeof *pe);
	ie = sl_xmalloc((size_t)(cap + 1) * sizeof *ie);
	L->edges = sl_xmalloc((size_t)(cap + 1) * sizeof *L->edges);
	L->nedge = 0;
	for (int j = 0; j < L->n; j++) {
		int x = L->node[j];
		for (int q = A->off[x]; q < A->off[x + 1]; q++) {
			int e = A->e[q];
			int u = p->edge[e][0], v = p->edge[e][1];
			int y = u == x ? v : u;
			if (inst_of[y] == inst) {
				/* internal: record once, from its first end */
				if (x != u)
					continue;
				int ju = -1, jv = -1;
				for (int t = 0; t < L->n; t++) {
					if (L->node[t] == u)
						ju = t;
					if (L->node[t] == v)
						jv = t;
				}
				if (ju < jv) {
					pe[npe][0] = ju;
					pe[npe][1] = jv;
					pe[npe][2] = e * 2;
				} else {
					pe[npe][0] = jv;
					pe[npe][1] = ju;
					pe[npe][2] = e * 2 + 1;
				}
				npe++;
			} else if (y == L->in && L->in >= 0) {
				ie[nie][0] = j;
				ie[nie][1] = e * 2 + (u == x);
				ie[nie][2] = 0;
				nie++;
			} else
				continue;
			if (d->eown[e] >= 0 && d->eown[e] != li) {
				free(pe);
				free(ie);
				return false;
			}
			if (d->eown[e] < 0) {
				d->eown[e] = li;
				L->edges[L->nedge++] = e;
			}
		}
	}
	qsort(pe, (size_t)npe, sizeof *pe, dp_pair_cmp);
	qsort(ie, (size_t)nie, sizeof *ie, dp_pair_cmp);
	L->pair = sl_xmalloc((size_t)(npe + 1) * sizeof *L->pair);
	L->poff = sl_xmalloc((size_t)(npe + 2) * sizeof *L->poff);
	L->pedge = sl_xmalloc((size_t)(npe + 1) * sizeof *L->pedge);
	L->pflip = sl_xmalloc((size_t)(npe + 1));
	L->npair = 0;
	for (int i = 0; i < npe; i++) {
		if (i == 0 || pe[i][0] != pe[i - 1][0] || pe[i][1] != pe[i - 1][1]) {
			L->pair[L->npair][0] = pe[i][0];
			L->pair[L->npair][1] = pe[i][1];
			L->poff[L->npair++] = i;
		}
		L->pedge[i] = pe[i][2] / 2;
		L->pflip[i] = (uint8_t)(pe[i][2] & 1);
	}
	L->poff[L->npair] = npe;
	L->inx = sl_xmalloc((size_t)(nie + 1) * sizeof *L->inx);
	L->ioff = sl_xmalloc((size_t)(nie + 2) * sizeof *L->ioff);
	L->iedge = sl_xmalloc((size_t)(nie + 1) * sizeof *L->iedge);
	L->iflip = sl_xmalloc((size_t)(nie + 1));
	L->nin = 0;
	for (int i = 0; i < nie; i++) {
		if (i == 0 || ie[i][0] != ie[i - 1][0]) {
			L->inx[L->nin] = ie[i][0];
			L->ioff[L->nin++] = i;
		}
		L->iedge[i] = ie[i][1] / 2;
		L->iflip[i] = (uint8_t)(ie[i][1] & 1);
	}
	L->ioff[L->nin] = nie;
	free(pe);
	free(ie);
	return true;
}

/* Whether layer li has the structure of layer li - 1 (same run). */
static void
dp_layer_twin(sl_dp *d, const sl_problem *p, int li)
{
	dp_layer *L = &d->layer[li], *P = &d->layer[li - 1];

	L->twin = false;
	if (L->n != P->n || L->o != P->o || L->kin != P->kin ||
	    L->npair != P->npair || L->nin != P->nin ||
	    L->poff[L->npair] != P->poff[P->npair] ||
	    L->ioff[L->nin] != P->ioff[P->nin])
		return;
	for (int j = 0; j < L->n; j++)
		if (p->k[L->node[j]] != p->k[P->node[j]])
			return;
	for (int i = 0; i < L->npair; i++)
		if (L->pair[i][0] != P->pair[i][0] || L->pair[i][1] != P->pair[i][1] ||
		    L->poff[i] != P->poff[i])
			return;
	for (int i = 0; i < L->poff[L->npair]; i++)
		if (L->pflip[i] != P->pflip[i])
			return;
	for (int i = 0; i < L->nin; i++)
		if (L->inx[i] != P->inx[i] || L->ioff[i] != P->ioff[i])
			return;
	for (int i = 0; i < L->ioff[L->nin]; i++)
		if (L->iflip[i] != P->iflip[i])
			return;
	L->twin = true;
}

/*
 * Whether twin layer L's cost rows are those of P, the layer before it:
 * then its content is P's without reading it.
 */
static bool
dp_layer_shares(const sl_problem *p, const dp_layer *L, const dp_layer *P)
{
	if (!L->twin || P->cls == NULL)
		return false;
	for (int j = 0; j < L->n; j++) {
		int a = L->node[j], b = P->node[j];
		if (p->cost[a] != p->cost[b] || (p->allowed[a] != p->allowed[b] &&
		    memcmp(p->allowed[a], p->allowed[b], (size_t)p->k[a]) != 0))
			return false;
	}
	for (int i = 0; i < L->poff[L->npair]; i++)
		if (p->ecost[L->pedge[i]] != p->ecost[P->pedge[i]])
			return false;
	for (int i = 0; i < L->ioff[L->nin]; i++)
		if (p->ecost[L->iedge[i]] != p->ecost[P->iedge[i]])
			return false;
	return true;
}

static void
dp_unfold(sl_dp *d)
{
	for (int i = 0; i < d->nlayer; i++) {
		dp_layer *L = &d->layer[i];
		dp_class_unref(d, L->cls);
		free(L->node);
		free(L->pair);
		free(L->poff);
		free(L->pedge);
		free(L->pflip);
		free(L->inx);
		free(L->ioff);
		free(L->iedge);
		free(L->iflip);
		free(L->edges);
	}
	free(d->layer);
	d->layer = NULL;
	d->nlayer = 0;
	for (int r = 0; r < d->nrun; r++) {
		dp_run *R = &d->run[r];
		free(R->seg);
		free(R->memo.node);
		free(R->memo.stamp);
		free(R->memo.sig);
	}
	free(d->run);
	d->run = NULL;
	d->nrun = 0;
	for (int v = 0; v < d->n; v++)
		d->nown[v] = -1;
	for (int e = 0; e < d->m; e++)
		d->eown[e] = -1;
}

/* Frees the inner nodes of a run's tree (leaves belong to classes). */
static void
dp_seg_free(dp_run *R, int node, int l, int r)
{
	if (l == r)
		return;
	int mid = (l + r) / 2;
	dp_seg_free(R, 2 * node, l, mid);
	dp_seg_free(R, 2 * node + 1, mid + 1, r);
	free(R->seg[node].m);
	R->seg[node].m = NULL;
}

/*
 * The instances of repeated layers: p's nodes grouped by layer (by
 * position within it), the groups in order of their lowest node; ord holds
 * the nodes, inst_of[v] v's instance (-1 none).  Returns how many.
 */
static int
dp_instances(const sl_problem *p, int *ord, dp_inst *I, int *inst_of)
{
	int no = 0, ni = 0;

	for (int v = 0; v < p->n; v++)
		if (p->layer[v] >= 0)
			ord[no++] = v;
	{
		dp_key *key = sl_xmalloc(((size_t)no + 1) * sizeof *key);
		for (int i = 0; i < no; i++) {
			key[i].layer = p->layer[ord[i]];
			key[i].pos = p->pos != NULL ? p->pos[ord[i]] : 0;
			key[i].v = ord[i];
		}
		qsort(key, (size_t)no, sizeof *key, dp_cmp_key);
		for (int i = 0; i < no; i++)
			ord[i] = key[i].v;
		free(key);
	}
	for (int v = 0; v < p->n; v++)
		inst_of[v] = -1;
	for (int i = 0; i < no; ) {
		int j = i;
		while (j < no && p->layer[ord[j]] == p->layer[ord[i]])
			j++;
		I[ni].n = j - i;
		I[ni].node = ord + i;
		I[ni].min = ord[i];
		for (int t = i; t < j; t++)
			if (ord[t] < I[ni].min)
				I[ni].min = ord[t];
		ni++;
		i = j;
	}
	qsort(I, (size_t)ni, sizeof *I, dp_cmp_inst);
	for (int i = 0; i < ni; i++)
		for (int j = 0; j < I[i].n; j++)
			inst_of[I[i].node[j]] = i;
	return ni;
}

/*
 * The output of each instance, o[i]: the one node feeding the next
 * instance (link[i], -1 when not exactly one), or for the last of a row
 * the node at the position of the one before's output.
 */
static void
dp_outputs(const sl_problem *p, const dp_adj *A, const int *inst_of,
    const dp_inst *I, int ni, int *o, int *link)
{
	for (int i = 0; i < ni; i++)
		link[i] = -1;
	for (int i = 0; i + 1 < ni; i++) {
		int x = -1;
		bool one = true;
		for (int j = 0; j < I[i].n && one; j++) {
			int v = I[i].node[j];
			for (int q = A->off[v]; q < A->off[v + 1]; q++) {
				int e = A->e[q];
				int y = p->edge[e][0] == v ? p->edge[e][1] : p->edge[e][0];
				if (inst_of[y] != i + 1)
					continue;
				if (x >= 0 && x != v) {
					one = false;
					break;
				}
				x = v;
			}
		}
		link[i] = one ? x : -1;
	}
	for (int i = 0; i < ni; i++) {
		o[i] = link[i];
		if (o[i] < 0 && i > 0 && link[i - 1] >= 0) {
			int j;
			for (j = 0; j < I[i - 1].n; j++)
				if (I[i - 1].node[j] == link[i - 1])
					break;
			if (j < I[i].n && I[i].n == I[i - 1].n)
				o[i] = I[i].node[j];
		}
	}
}

/*
 * Chains of instances, greedily: each chain from instance rfirst[r], of
 * rlen[r] instances, fed by node rin[r] (-1 none).  Returns how many.
 */
static int
dp_chains(const sl_problem *p, const dp_adj *A, const int *inst_of,
    const dp_inst *I, int ni, const int *o, const int *link, int *rfirst,
    int *rlen, int *rin)
{
	int nr = 0;

	for (int i = 0; i < ni; ) {
		bool iok;
		int in, cur;
		if (o[i] < 0) {
			i++;
			continue;
		}
		in = dp_inst_input(p, A, inst_of, I, i,
		    o[i], link[i] >= 0 ? i + 1 : -1, &iok);
		if (!iok || (in >= 0 && inst_of[in] >= 0 && inst_of[in] >= i)) {
			i++;
			continue;
		}
		cur = i;
		int cin = in;
		while (link[cur] >= 0 && cur + 1 < ni && o[cur + 1] >= 0 &&
		    dp_inst_ok(p, A, inst_of, I, cur, o[cur], cin, cur + 1) &&
		    dp_inst_ok(p, A, inst_of, I, cur + 1, o[cur + 1], o[cur], -1)) {
			cin = o[cur];
			cur++;
		}
		if (cur > i && dp_inst_ok(p, A, inst_of, I, cur, o[cur], cin, -1)) {
			rfirst[nr] = i;
			rlen[nr] = cur - i + 1;
			rin[nr] = in;
			nr++;
		}
		i = cur + 1;
	}
	return nr;
}

/*
 * The nr chains as d's runs of folded layers; false when one of them does
 * not fold after all (an edge of an eliminated node no layer owns, a run
 * fed by a node inside it): then d is unfolded.
 */
static bool
dp_build_runs(sl_dp *d, const sl_problem *p, const dp_adj *A,
    const int *inst_of, const dp_inst *I, const int *o, const int *rfirst,
    const int *rlen, const int *rin, int nr)
{
	bool ok = true;
	int total = 0;

	for (int r = 0; r < nr; r++)
		total += rlen[r];
	d->layer = sl_xcalloc((size_t)total, sizeof *d->layer);
	d->run = sl_xcalloc((size_t)nr, sizeof *d->run);
	for (int r = 0; r < nr && ok; r++) {
		dp_run *R = &d->run[d->nrun++];
		R->first = d->nlayer;
		R->len = rlen[r];
		R->in = rin[r];
		R->out = o[rfirst[r] + rlen[r] - 1];
		R->seg = sl_xcalloc((size_t)4 * R->len, sizeof *R->seg);
		R->memo.cap = 16;
		while (R->memo.cap < 8 * R->len)
			R->memo.cap *= 2;
		R->memo.node = sl_xcalloc((size_t)R->memo.cap, sizeof(int));
		R->memo.stamp = sl_xcalloc((size_t)R->memo.cap, sizeof(int));
		R->memo.sig = sl_xcalloc((size_t)R->memo.cap, sizeof(uint64_t));
		for (int t = 0; t < rlen[r]; t++) {
			int ii = rfirst[r] + t;
			dp_layer *L = &d->layer[d->nlayer++];
			L->n = I[ii].n;
			L->node = sl_xmalloc((size_t)L->n * sizeof *L->node);
			memcpy(L->node, I[ii].node, (size_t)L->n * sizeof *L->node);
			L->o = -1;
			for (int j = 0; j < L->n; j++)
				if (L->node[j] == o[ii])
					L->o = j;
			L->in = t == 0 ? rin[r] : o[ii - 1];
			L->kin = L->in >= 0 ? p->k[L->in] : 1;
			if (!dp_layer_setup(d, p, A, d->nlayer - 1,
			    inst_of, ii))
				ok = false;
			for (int j = 0; j < L->n; j++)
				if (t < rlen[r] - 1 || j != L->o)
					d->nown[L->node[j]] = d->nlayer - 1;
		}
	}
	for (int r = 0; r < d->nrun && ok; r++)
		for (int t = 1; t < d->run[r].len; t++)
			dp_layer_twin(d, p, d->run[r].first + t);
	/* every edge touching an eliminated node must be owned by a layer */
	for (int e = 0; e < p->m && ok; e++)
		if (d->eown[e] < 0 &&
		    (d->nown[p->edge[e][0]] >= 0 || d->nown[p->edge[e][1]] >= 0))
			ok = false;
	for (int r = 0; r < d->nrun && ok; r++) {
		dp_run *R = &d->run[r];
		if (R->in >= 0 && (d->nown[R->in] >= 0 || R->in == R->out))
			ok = false;
	}
	if (!ok)
		dp_unfold(d);
	return ok;
}

/* Finds chains of layers that fold; leaves d unfolded when none or unsure. */
static void
dp_find_runs(sl_dp *d, const sl_problem *p)
{
	int *ord, ni, *inst_of, *o, *link, *rfirst, *rlen, *rin, nr;
	dp_inst *I;
	dp_adj A;
	bool any = false;

	if (p->layer == NULL)
		return;
	for (int v = 0; v < p->n && !any; v++)
		any = p->layer[v] >= 0;
	if (!any)
		return;
	ord = sl_xmalloc((size_t)(p->n + 1) * sizeof *ord);
	I = sl_xcalloc((size_t)p->n + 1, sizeof *I);
	inst_of = sl_xmalloc((size_t)p->n * sizeof *inst_of);
	ni = dp_instances(p, ord, I, inst_of);
	dp_adj_build(p, &A);
	o = sl_xmalloc((size_t)(ni + 1) * sizeof *o);
	link = sl_xmalloc((size_t)(ni + 1) * sizeof *link);
	dp_outputs(p, &A, inst_of, I, ni, o, link);
	rfirst = sl_xmalloc((size_t)(ni + 1) * sizeof *rfirst);
	rlen = sl_xmalloc((size_t)(ni + 1) * sizeof *rlen);
	rin = sl_xmalloc((size_t)(ni + 1) * sizeof *rin);
	nr = dp_chains(p, &A, inst_of, I, ni, o, link, rfirst, rlen, rin);
	if (nr > 0)
		dp_build_runs(d, p, &A, inst_of, I, o, rfirst, rlen, rin, nr);
	free(rfirst);
	free(rlen);
	free(rin);
	free(link);
	free(o);
	free(A.off);
	free(A.e);
	free(inst_of);
	free(I);
	free(ord);
}

/* ------------------------------------------------------------- live object */

/*
 * Runs the elimination of the outer problem and of every layer on their
 * structure alone (the order depends on nothing else), so that a problem too
 * wide for exact elimination is refused before any table is built.
 */
static int
dp_check_width(sl_dp *d, const sl_problem *p, sl_run *run, sl_error *err)
{
	ve w;
	int rc;

	ve_init(&w, d->nouter, NULL);
	for (int i = 0; i < d->nouter; i++)
		w.k[i] = p->k[d->outer[i]];
	w.sym = true;
	w.cap = d->cap;
	w.run = run;
	for (int e = 0; e < p->m; e++)
		if (d->eown[e] < 0)
			ve_add_binary(&w, d->oidx[p->edge[e][0]],
			    d->oidx[p->edge[e][1]], NULL, true);
	for (int r = 0; r < d->nrun; r++)
		if (d->run[r].in >= 0)
			ve_add_binary(&w, d->oidx[d->run[r].in],
			    d->oidx[d->run[r].out], NULL, true);
	rc = ve_run(&w, err);
	ve_free(&w);
	for (int i = 0; i < d->nlayer && rc == SL_OK; i++) {
		const dp_layer *L = &d->layer[i];
		ve_init(&w, L->n + 1, NULL);
		w.k[0] = L->kin;
		for (int j = 0; j < L->n; j++)
			w.k[1 + j] = p->k[L->node[j]];
		w.sym = true;
		w.cap = d->cap;
		w.run = run;
		for (int q = 0; q < L->npair; q++)
			ve_add_binary(&w, 1 + L->pair[q][0], 1 + L->pair[q][1],
			    NULL, true);
		for (int q = 0; q < L->nin; q++)
			ve_add_binary(&w, 0, 1 + L->inx[q], NULL, true);
		w.state[0] = 1;
		w.state[1 + L->o] = 1;
		rc = ve_run(&w, err);
		ve_free(&w);
	}
	return rc;
}

static sl_dp *
dp_create(const sl_problem *p, const sl_solve_opts *o, sl_run *run,
    sl_error *err)
{
	sl_dp *d;

	if (p->usage_limit >= 0 && p->interval != NULL && p->usage != NULL) {
		sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
		    _("dp: memory usage limits need ilp"));
		return NULL;
	}
	for (int v = 0; v < p->n; v++)
		if (p->k[v] < 1 || p->k[v] > DP_MAX_K) {
			sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
			    _("dp: node %d has %d strategies (1 to %d supported)"),
			    v, p->k[v], DP_MAX_K);
			return NULL;
		}
	for (int e = 0; e < p->m; e++) {
		int u = p->edge[e][0], v = p->edge[e][1];
		if (u < 0 || v < 0 || u >= p->n || v >= p->n || u == v) {
			sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("dp: edge %d has bad endpoints (%d, %d)"), e, u, v);
			return NULL;
		}
	}
	d = sl_xcalloc(1, sizeof *d);
	d->n = p->n;
	d->m = p->m;
	d->cap = o != NULL && o->work_cap > 0 ? o->work_cap : DP_MAX_WORK;
	d->k = sl_xmalloc((size_t)(p->n + 1) * sizeof *d->k);
	memcpy(d->k, p->k, (size_t)p->n * sizeof *d->k);
	d->edge = sl_xmalloc((size_t)(p->m + 1) * sizeof *d->edge);
	memcpy(d->edge, p->edge, (size_t)p->m * sizeof *d->edge);
	d->ncost = sl_xcalloc((size_t)p->n + 1, sizeof *d->ncost);
	d->nallow = sl_xcalloc((size_t)p->n + 1, sizeof *d->nallow);
	d->ecost = sl_xcalloc((size_t)p->m + 1, sizeof *d->ecost);
	d->nown = sl_xmalloc((size_t)(p->n + 1) * sizeof *d->nown);
	d->eown = sl_xmalloc((size_t)(p->m + 1) * sizeof *d->eown);
	for (int v = 0; v < p->n; v++)
		d->nown[v] = -1;
	for (int e = 0; e < p->m; e++)
		d->eown[e] = -1;
	if (o == NULL || !o->no_fold)
		dp_find_runs(d, p);
	d->oidx = sl_xmalloc((size_t)(p->n + 1) * sizeof *d->oidx);
	d->outer = sl_xmalloc((size_t)(p->n + 1) * sizeof *d->outer);
	for (int v = 0; v < p->n; v++) {
		d->oidx[v] = -1;
		if (d->nown[v] < 0) {
			d->oidx[v] = d->nouter;
			d->outer[d->nouter++] = v;
		}
	}
	d->val = sl_xmalloc((size_t)(p->n + 2) * sizeof *d->val);
	if (dp_check_width(d, p, run, err) != SL_OK) {
		sl_dp_free(d);
		return NULL;
	}
	return d;
}

sl_dp *
sl_run_dp_new(const sl_problem *p, const sl_solve_opts *o, sl_run *run,
    sl_error *err)
{
	return dp_create(p, o, run, err);
}

sl_dp *
sl_dp_new(const sl_problem *p, const sl_solve_opts *o, sl_error *err)
{
	sl_run run;

	sl_run_start(&run, o);
	return dp_create(p, o, &run, err);
}

void
sl_dp_free(sl_dp *d)
{
	if (d == NULL)
		return;
	for (int r = 0; r < d->nrun; r++)
		dp_seg_free(&d->run[r], 1, 0, d->run[r].len - 1);
	dp_unfold(d);
	while (d->nclass > 0) {
		d->cls[0]->refs = 1;
		dp_class_unref(d, d->cls[0]);
	}
	free(d->cls);
	free(d->k);
	free(d->edge);
	for (int v = 0; v < d->n && d->ncost != NULL; v++) {
		free(d->ncost[v]);
		free(d->nallow[v]);
	}
	for (int e = 0; e < d->m && d->ecost != NULL; e++)
		free(d->ecost[e]);
	free(d->ncost);
	free(d->nallow);
	free(d->ecost);
	free(d->nown);
	free(d->eown);
	free(d->oidx);
	free(d->outer);
	free(d->val);
	free(d->cbuf);
	free(d);
}

void
sl_dp_info_get(const sl_dp *d, sl_dp_info *info)
{
	memset(info, 0, sizeof *info);
	info->runs = d->nrun;
	info->folded_layers = d->nlayer;
	info->classes = d->nclass;
	info->recomputed = d->recomputed;
	info->width = d->width;
	info->max_entries = d->max_entries;
	info->outer_nodes = d->nouter;
}

/* Copies node v's costs into the cache; true when they differed. */
static bool
dp_sync_node(sl_dp *d, const sl_problem *p, int v, bool force)
{
	size_t k = (size_t)p->k[v];

	if (d->ncost[v] == NULL) {
		d->ncost[v] = sl_xmalloc(k * sizeof **d->ncost);
		d->nallow[v] = sl_xmalloc(k);
	} else if (!force && memcmp(d->ncost[v], p->cost[v], k * sizeof **d->ncost) == 0 &&
	    memcmp(d->nallow[v], p->allowed[v], k) == 0)
		return false;
	memcpy(d->ncost[v], p->cost[v], k * sizeof **d->ncost);
	memcpy(d->nallow[v], p->allowed[v], k);
	return true;
}

static bool
dp_sync_edge(sl_dp *d, const sl_problem *p, int e, bool force)
{
	size_t n = (size_t)p->k[p->edge[e][0]] * p->k[p->edge[e][1]];

	if (d->ecost[e] == NULL)
		d->ecost[e] = sl_xmalloc(n * sizeof **d->ecost);
	else if (!force && memcmp(d->ecost[e], p->ecost[e], n * sizeof **d->ecost) == 0)
		return false;
	memcpy(d->ecost[e], p->ecost[e], n * sizeof **d->ecost);
	return true;
}

static int
dp_check_same(const sl_dp *d, const sl_problem *p, sl_error *err)
{
	if (p->n != d->n || p->m != d->m ||
	    memcmp(p->k, d->k, (size_t)p->n * sizeof *p->k) != 0 ||
	    memcmp(p->edge, d->edge, (size_t)p->m * sizeof *p->edge) != 0)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("dp: the problem's structure changed; build a new solver"));
	return SL_OK;
}

/*
 * Layers whose content changed get their class (and matrix) again, and the
 * chains' trees their products (costs_same: only p->allowed changed, the
 * edge costs are not compared).
 */
static int
dp_sync_layers(sl_dp *d, const sl_problem *p, bool costs_same, sl_error *err)
{
	int rc;

	for (int i = 0; i < d->nlayer; i++) {
		dp_layer *L = &d->layer[i];
		bool force = !d->primed || L->stale, ch = force;
		L->dirty = false;
		if (i > 0 && dp_layer_shares(p, L, &d->layer[i - 1])) {
			/* the previous layer's rows: its class; copy nothing */
			dp_class *cl = d->layer[i - 1].cls;
			if (L->cls != cl) {
				cl->refs++;
				dp_class_unref(d, L->cls);
				L->cls = cl;
				L->dirty = true;
			}
			L->stale = true;
			continue;
		}
		for (int j = 0; j < L->n; j++)
			ch |= dp_sync_node(d, p, L->node[j], force);
		if (!costs_same || force)
			for (int j = 0; j < L->nedge; j++)
				ch |= dp_sync_edge(d, p, L->edges[j], force);
		L->stale = false;
		if (ch && (rc = dp_layer_classify(d, p, L, err)) != SL_OK)
			return rc;
	}
	for (int r = 0; r < d->nrun; r++) {
		d->run[r].memo.pass++;
		dp_seg_fix(d, &d->run[r], 1, 0, d->run[r].len - 1, !d->primed);
	}
	d->primed = true;
	return SL_OK;
}

/* The chains' choices: boundaries from the trees, inner nodes per layer. */
static void
dp_chain_choices(sl_dp *d, sl_solution *sol)
{
	for (int r = 0; r < d->nrun; r++) {
		dp_run *R = &d->run[r];
		int *bo = sl_xmalloc((size_t)R->len * sizeof *bo);
		int a = R->in >= 0 ? sol->choice[R->in] : 0;
		dp_seg_descend(R, 1, 0, R->len - 1, a, sol->choice[R->out], bo);
		for (int t = 0; t < R->len; t++) {
			dp_layer *L = &d->layer[R->first + t];
			int *val = d->val;
			val[0] = t == 0 ? a : bo[t - 1];
			val[1 + L->o] = bo[t];
			ve_backsub(&L->cls->rec, val);
			for (int j = 0; j < L->n; j++)
				sol->choice[L->node[j]] = val[1 + j];
		}
		free(bo);
	}
}

static int
dp_solve(sl_dp *d, const sl_problem *p, bool costs_same, sl_run *run,
    sl_solution *sol, sl_error *err)
{
	ve w;
	int rc;
	int64_t best;

	if ((rc = dp_check_same(d, p, err)) != SL_OK)
		return rc;
	if (sol->choice == NULL || sol->n != p->n) {
		free(sol->choice);
		sol->choice = sl_xcalloc((size_t)(p->n ? p->n : 1),
		    sizeof *sol->choice);
		sol->n = p->n;
	}
	sol->solver = SL_SOLVER_DP;
	sol->status = SL_SOLVE_FAILED;
	sol->confirmed = false;
	sol->note[0] = '\0';
	sol->objective = INT64_MAX;
	d->recomputed = 0;

	for (int v = 0; v < p->n; v++) {
		bool any = false;
		for (int s = 0; s < p->k[v] && !any; s++)
			any = p->allowed[v][s] != 0;
		if (!any) {
			sol->status = SL_SOLVE_INFEASIBLE;
			snprintf(sol->note, sizeof sol->note,
			    _("node %d has no allowed strategy"), v);
			sol->time_ms = sl_run_ms(run);
			return SL_OK;
		}
	}

	if ((rc = dp_sync_layers(d, p, costs_same, err)) != SL_OK)
		return rc;

	/* the outer problem: unfolded nodes plus each chain's product */
	{
		int *ko = sl_xmalloc((size_t)(d->nouter + 1) * sizeof *ko);
		for (int i = 0; i < d->nouter; i++)
			ko[i] = p->k[d->outer[i]];
		ve_init(&w, d->nouter, ko);
		free(ko);
		w.cap = d->cap;
		w.run = run;
	}
	for (int i = 0; i < d->nouter; i++) {
		int v = d->outer[i];
		for (int s = 0; s < p->k[v]; s++)
			w.u[i][s] = p->allowed[v][s] ? p->cost[v][s] : DP_INF;
	}
	for (int r = 0; r < d->nrun; r++) {
		int o = d->oidx[d->run[r].out];
		/* the output node's own costs live in its layer's matrix */
		for (int s = 0; s < p->k[d->run[r].out]; s++)
			w.u[o][s] = 0;
	}
	for (int e = 0; e < p->m; e++) {
		if (d->eown[e] >= 0)
			continue;
		ve_add_binary(&w, d->oidx[p->edge[e][0]], d->oidx[p->edge[e][1]],
		    p->ecost[e], false);
	}
	for (int r = 0; r < d->nrun; r++) {
		dp_run *R = &d->run[r];
		int o = d->oidx[R->out];
		const int64_t *P = R->seg[1].m;
		if (R->in >= 0)
			ve_add_binary(&w, d->oidx[R->in], o, (int64_t *)P, false);
		else
			for (int s = 0; s < p->k[R->out]; s++)
				w.u[o][s] = dp_add(w.u[o][s], P[s]);
	}
	rc = ve_run(&w, err);
	if (rc != SL_OK && w.stop != 0) {
		/* stopped by the run: no plan, and no error */
		sl_error_clear(err);
		sol->status = w.stop == 2 ? SL_SOLVE_CANCELLED : SL_SOLVE_LIMIT;
		ve_free(&w);
		sol->time_ms = sl_run_ms(run);
		return SL_OK;
	}
	if (rc != SL_OK) {
		ve_free(&w);
		return rc;
	}
	if (w.width > d->width)
		d->width = w.width;
	if (w.max_entries > d->max_entries)
		d->max_entries = w.max_entries;
	best = w.cst;
	if (best == DP_INF) {
		ve_free(&w);
		sol->status = SL_SOLVE_INFEASIBLE;
		snprintf(sol->note, sizeof sol->note, "%s",
		    _("every choice includes a disallowed strategy"));
		sol->time_ms = sl_run_ms(run);
		return SL_OK;
	}
	ve_backsub(&w, d->val);
	for (int i = 0; i < d->nouter; i++)
		sol->choice[d->outer[i]] = d->val[i];
	ve_free(&w);

	dp_chain_choices(d, sol);

	sol->objective = sl_problem_score(p, sol->choice);
	sol->time_ms = sl_run_ms(run);
	if (sol->objective != best) {
		sol->status = SL_SOLVE_FAILED;
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("dp: internal error: value %lld but the choice scores %lld"),
		    (long long)best, (long long)sol->objective);
	}
	sol->status = SL_SOLVE_OPTIMAL;
	if (d->nrun > 0) {
		/* recomputed: layer classes whose min-plus matrices this
		 * resolve built; the others were kept from before */
		char ly[64], ch[64], mx[96];
		snprintf(ly, sizeof ly, ngettext("%d layer", "%d layers", d->nlayer),
		    d->nlayer);
		snprintf(ch, sizeof ch, ngettext("%d chain", "%d chains", d->nrun),
		    d->nrun);
		snprintf(mx, sizeof mx, ngettext("%d layer matrix built",
		    "%d layer matrices built", d->recomputed), d->recomputed);
		/* TRANSLATORS: "dp: 36 layers folded in 1 chain, 2 layer
		 * matrices built" */
		snprintf(sol->note, sizeof sol->note, _("dp: %s folded in %s, %s"),
		    ly, ch, mx);
	}
	return SL_OK;
}

int
sl_run_dp_resolve(sl_dp *d, const sl_problem *p, const sl_solve_opts *o,
    sl_run *run, sl_solution *sol, sl_error *err)
{
	return dp_solve(d, p, o != NULL && o->allowed_only, run, sol, err);
}

int
sl_dp_resolve(sl_dp *d, const sl_problem *p, const sl_solve_opts *o,
    sl_solution *sol, sl_error *err)
{
	sl_run run;

	sl_run_start(&run, o);
	return dp_solve(d, p, o != NULL && o->allowed_only, &run, sol, err);
}

int
sl_run_dp(const sl_problem *p, const sl_solve_opts *o, sl_run *run,
    sl_solution *sol, sl_error *err)
{
	sl_dp *d = dp_create(p, o, run, err);
	int rc;

	if (d == NULL)
		return err != NULL ? err->code : SL_EINTERNAL;
	rc = dp_solve(d, p, o != NULL && o->allowed_only, run, sol, err);
	sl_dp_free(d);
	sol->time_ms = sl_run_ms(run);
	return rc;
}

int
sl_solve_dp(const sl_problem *p, const sl_solve_opts *o, sl_solution *sol,
    sl_error *err)
{
	sl_run run;

	sl_run_start(&run, o);
	return sl_run_dp(p, o, &run, sol, err);
}
