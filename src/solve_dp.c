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
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

#define DP_INF INT64_MAX
/* Largest factor (entries) one elimination step may build. */
#define DP_MAX_ENTRIES 20000000LL
/* Most work (entries times strategies, summed over steps) one solve may
 * take, unless sl_solve_opts.work_cap says less. */
#define DP_MAX_WORK 4e9
#define DP_MAX_K 65535
/* Eliminations, and entries of one general step, between two polls of the
 * run (its deadline and cancel). */
#define DP_POLL_STEPS 64
#define DP_POLL_ENTRIES 65536

static inline int64_t
dp_add(int64_t a, int64_t b)
{
	int64_t r;

	if (a == DP_INF || b == DP_INF)
		return DP_INF;
	if (__builtin_add_overflow(a, b, &r))
		return a > 0 ? DP_INF : INT64_MIN;
	return r;
}

/* ------------------------------------------------------- variable elimination */

typedef struct ve_fac {
	int ar;			/* arity; 0 when consumed */
	int *sc;		/* scope: variables, row-major order of t */
	int64_t *t;
} ve_fac;

typedef struct ve_step {
	int x, ny;
	int *y;			/* neighbours at elimination, index order of arg */
	uint16_t *arg;		/* best strategy of x per neighbour choice */
} ve_step;

/* A candidate general step: its size when pushed (ve_cost). */
typedef struct ve_cand {
	double c;
	int v;
} ve_cand;

typedef struct ve {
	int n;
	int *k;
	int64_t **u;		/* unary costs per variable */
	ve_fac *f;
	int nf, capf;
	int **adj;		/* variable -> factor ids (dead ones skipped) */
	int *nadj, *capadj;
	uint8_t *state;		/* 0 live, 1 kept, 2 eliminated */
	int64_t cst;
	ve_step *st;
	int nst, capst;
	int *mark, stamp;
	int width;		/* largest neighbour count met */
	int64_t max_entries;	/* largest factor built */
	double work;		/* entries x strategies so far */
	double cap;		/* most work allowed */
	bool sym;		/* symbolic: scopes only, no tables */
	sl_run *run;		/* polled now and then; NULL never */
	int polls;
	int stop;		/* 1: the run's deadline passed, 2: cancelled */
	/* general steps by size, smallest (then lowest index) first: a heap
	 * of candidates, stale ones dropped when met */
	ve_cand *heap;
	int nheap, capheap;
	/* scratch */
	int *nb, *fl, capfl;
	int64_t *tmp1, *tmp2;
	size_t captmp1, captmp2;
} ve;

static void
ve_init(ve *w, int n, const int *k)
{
	memset(w, 0, sizeof *w);
	w->n = n;
	w->cap = DP_MAX_WORK;
	w->k = sl_xcalloc((size_t)(n ? n : 1), sizeof *w->k);
	w->u = sl_xcalloc((size_t)(n ? n : 1), sizeof *w->u);
	if (k != NULL) {
		/* k NULL: a symbolic run fills w->k and needs no costs */
		memcpy(w->k, k, (size_t)n * sizeof *w->k);
		for (int v = 0; v < n; v++)
			w->u[v] = sl_xcalloc((size_t)k[v], sizeof **w->u);
	}
	w->adj = sl_xcalloc((size_t)(n ? n : 1), sizeof *w->adj);
	w->nadj = sl_xcalloc((size_t)(n ? n : 1), sizeof *w->nadj);
	w->capadj = sl_xcalloc((size_t)(n ? n : 1), sizeof *w->capadj);
	w->state = sl_xcalloc((size_t)(n ? n : 1), 1);
	w->mark = sl_xcalloc((size_t)(n ? n : 1), sizeof *w->mark);
	w->nb = sl_xmalloc((size_t)(n ? n : 1) * sizeof *w->nb);
}

/* Frees everything but the record of steps (k and st). */
static void
ve_free_work(ve *w)
{
	if (w->u != NULL)
		for (int v = 0; v < w->n; v++)
			free(w->u[v]);
	free(w->u);
	w->u = NULL;
	for (int i = 0; i < w->nf; i++) {
		free(w->f[i].sc);
		free(w->f[i].t);
	}
	free(w->f);
	w->f = NULL;
	w->nf = w->capf = 0;
	if (w->adj != NULL)
		for (int v = 0; v < w->n; v++)
			free(w->adj[v]);
	free(w->adj);
	w->adj = NULL;
	free(w->nadj);
	free(w->capadj);
	free(w->state);
	free(w->mark);
	free(w->nb);
	free(w->fl);
	free(w->tmp1);
	free(w->tmp2);
	free(w->heap);
	w->heap = NULL;
	w->nheap = w->capheap = 0;
	w->nadj = w->capadj = w->mark = w->nb = w->fl = NULL;
	w->capfl = 0;
	w->state = NULL;
	w->tmp1 = w->tmp2 = NULL;
	w->captmp1 = w->captmp2 = 0;
}

static void
ve_free(ve *w)
{
	ve_free_work(w);
	for (int i = 0; i < w->nst; i++) {
		free(w->st[i].y);
		free(w->st[i].arg);
	}
	free(w->st);
	free(w->k);
	memset(w, 0, sizeof *w);
}

static int64_t *
ve_scratch(int64_t **buf, size_t *cap, size_t n)
{
	if (n > *cap) {
		free(*buf);
		*buf = sl_xmalloc(n * sizeof **buf);
		*cap = n;
	}
	return *buf;
}

static void
ve_adj_push(ve *w, int v, int f)
{
	if (w->nadj[v] == w->capadj[v]) {
		w->capadj[v] = w->capadj[v] ? 2 * w->capadj[v] : 4;
		w->adj[v] = sl_xrealloc(w->adj[v],
		    (size_t)w->capadj[v] * sizeof *w->adj[v]);
	}
	w->adj[v][w->nadj[v]++] = f;
}

/* Drops consumed factors from v's list. */
static void
ve_adj_compact(ve *w, int v)
{
	int j = 0;

	for (int i = 0; i < w->nadj[v]; i++)
		if (w->f[w->adj[v][i]].ar > 0)
			w->adj[v][j++] = w->adj[v][i];
	w->nadj[v] = j;
}

static int
ve_new_fac(ve *w, int ar, const int *sc, int64_t *t)
{
	ve_fac *f;

	if (w->nf == w->capf) {
		w->capf = w->capf ? 2 * w->capf : 16;
		w->f = sl_xrealloc(w->f, (size_t)w->capf * sizeof *w->f);
	}
	f = &w->f[w->nf];
	f->ar = ar;
	f->sc = sl_xmalloc((size_t)ar * sizeof *f->sc);
	memcpy(f->sc, sc, (size_t)ar * sizeof *f->sc);
	f->t = t;
	for (int i = 0; i < ar; i++)
		ve_adj_push(w, sc[i], w->nf);
	return w->nf++;
}

/*
 * Adds a table over (a, b), a-major, into the factor on {a, b} (parallel
 * edges merge).  take: t may be kept as the new factor's table.
 */
static void
ve_add_binary(ve *w, int a, int b, int64_t *t, bool take)
{
	int ka = w->k[a], kb = w->k[b];
	int v = w->nadj[a] <= w->nadj[b] ? a : b;

	for (int i = 0; i < w->nadj[v]; i++) {
		ve_fac *f = &w->f[w->adj[v][i]];
		if (f->ar != 2)
			continue;
		if (w->sym && ((f->sc[0] == a && f->sc[1] == b) ||
		    (f->sc[0] == b && f->sc[1] == a))) {
			if (take)
				free(t);
			return;
		}
		if (f->sc[0] == a && f->sc[1] == b) {
			size_t n = (size_t)ka * kb;
			for (size_t j = 0; j < n; j++)
				f->t[j] = dp_add(f->t[j], t[j]);
		} else if (f->sc[0] == b && f->sc[1] == a) {
			for (int s = 0; s < ka; s++)
				for (int r = 0; r < kb; r++)
					f->t[(size_t)r * ka + s] = dp_add(
					    f->t[(size_t)r * ka + s],
					    t[(size_t)s * kb + r]);
		} else
			continue;
		if (take)
			free(t);
		return;
	}
	if (w->sym) {
		if (take)
			free(t);
		t = NULL;
	} else if (!take) {
		int64_t *c = sl_xmalloc((size_t)ka * kb * sizeof *c);
		memcpy(c, t, (size_t)ka * kb * sizeof *c);
		t = c;
	}
	int sc[2] = { a, b };
	ve_new_fac(w, 2, sc, t);
}

/* Adds a factor over sorted scope sc (arity ar) and takes t. */
static void
ve_add_factor(ve *w, int ar, const int *sc, int64_t *t)
{
	if (w->sym && ar < 2) {
		free(t);
		return;
	}
	if (ar == 0) {
		w->cst = dp_add(w->cst, t[0]);
		free(t);
		return;
	}
	if (ar == 1) {
		for (int s = 0; s < w->k[sc[0]]; s++)
			w->u[sc[0]][s] = dp_add(w->u[sc[0]][s], t[s]);
		free(t);
		return;
	}
	if (ar == 2) {
		ve_add_binary(w, sc[0], sc[1], t, true);
		return;
	}
	for (int i = 0; i < w->nadj[sc[0]]; i++) {
		ve_fac *f = &w->f[w->adj[sc[0]][i]];
		size_t n = 1;
		if (f->ar != ar || memcmp(f->sc, sc, (size_t)ar * sizeof *sc) != 0)
			continue;
		if (w->sym) {
			free(t);
			return;
		}
		for (int j = 0; j < ar; j++)
			n *= (size_t)w->k[sc[j]];
		for (size_t j = 0; j < n; j++)
			f->t[j] = dp_add(f->t[j], t[j]);
		free(t);
		return;
	}
	ve_new_fac(w, ar, sc, t);
}

/* Neighbours of x into w->nb (count returned); its live factors into w->fl. */
static int
ve_nbrs(ve *w, int x, int *nfac, bool *binary)
{
	int ny = 0, nf = 0;

	ve_adj_compact(w, x);
	if (w->nadj[x] > w->capfl) {
		w->capfl = 2 * w->nadj[x];
		free(w->fl);
		w->fl = sl_xmalloc((size_t)w->capfl * sizeof *w->fl);
	}
	if (++w->stamp == 0) {
		memset(w->mark, 0, (size_t)w->n * sizeof *w->mark);
		w->stamp = 1;
	}
	w->mark[x] = w->stamp;
	*binary = true;
	for (int i = 0; i < w->nadj[x]; i++) {
		ve_fac *f = &w->f[w->adj[x][i]];
		if (f->ar != 2)
			*binary = false;
		w->fl[nf++] = w->adj[x][i];
		for (int j = 0; j < f->ar; j++) {
			int y = f->sc[j];
			if (w->mark[y] != w->stamp) {
				w->mark[y] = w->stamp;
				w->nb[ny++] = y;
			}
		}
	}
	*nfac = nf;
	return ny;
}

static ve_step *
ve_push_step(ve *w, int x, int ny, const int *y, size_t nargs)
{
	ve_step *st;

	if (w->nst == w->capst) {
		w->capst = w->capst ? 2 * w->capst : 16;
		w->st = sl_xrealloc(w->st, (size_t)w->capst * sizeof *w->st);
	}
	st = &w->st[w->nst++];
	st->x = x;
	st->ny = ny;
	st->y = sl_xmalloc((size_t)(ny ? ny : 1) * sizeof *st->y);
	if (ny > 0)
		memcpy(st->y, y, (size_t)ny * sizeof *y);
	st->arg = sl_xcalloc(nargs ? nargs : 1, sizeof *st->arg);
	return st;
}

/* The table of binary factor f as x-major (x first) into buf. */
static const int64_t *
ve_xmajor(ve *w, const ve_fac *f, int x, int64_t **buf, size_t *cap)
{
	int o = f->sc[0] == x ? f->sc[1] : f->sc[0];
	int kx = w->k[x], ko = w->k[o];
	int64_t *t;

	if (f->sc[0] == x)
		return f->t;
	t = ve_scratch(buf, cap, (size_t)kx * ko);
	for (int r = 0; r < ko; r++)
		for (int s = 0; s < kx; s++)
			t[(size_t)s * ko + r] = f->t[(size_t)r * kx + s];
	return t;
}

static int
ve_cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/*
 * The min-plus kernels, where most of the time goes.  dp_row: o[r] =
 * min(o[r], base + r2[r]), with ag[r] = us where it lowers (ag NULL: values
 * only), skipping r2[r] = DP_INF and sums that overflow.  Written without
 * branches (the comparisons are unpredictable) so that it vectorises.  The
 * loops around it are the functions GCC on x86-64 builds in AVX-512, AVX2
 * and plain copies, one chosen at run time: the choice is made once per
 * elimination or product, and the row loop is inlined into each copy
 * (rows are short: a few dozen strategies).
 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define DP_KERNEL __attribute__((target_clones("avx512f", "avx2", "default"), \
	optimize("tree-vectorize")))
#define DP_ROW_INLINE __attribute__((always_inline)) inline
#else
#define DP_KERNEL
#define DP_ROW_INLINE inline
#endif

static DP_ROW_INLINE void
dp_row(int64_t *restrict o, int64_t *restrict ag, const int64_t *restrict r2,
    int64_t base, int64_t us, int n)
{
	if (ag == NULL) {
		for (int r = 0; r < n; r++) {
			int64_t x = r2[r];
			int64_t v = (int64_t)((uint64_t)base + (uint64_t)x);
			int64_t bad = ((base ^ v) & (x ^ v)) | -(int64_t)(x == DP_INF);
			int64_t lt = -(int64_t)(v < o[r]) & ~(bad >> 63);
			o[r] = lt ? v : o[r];
		}
		return;
	}
	for (int r = 0; r < n; r++) {
		int64_t x = r2[r];
		int64_t v = (int64_t)((uint64_t)base + (uint64_t)x);
		/* signed overflow: the sum's sign differs from both terms' */
		int64_t bad = ((base ^ v) & (x ^ v)) | -(int64_t)(x == DP_INF);
		int64_t lt = -(int64_t)(v < o[r]) & ~(bad >> 63);
		o[r] = lt ? v : o[r];
		ag[r] = lt ? us : ag[r];
	}
}

/*
 * dp_row where no sum can overflow (base and every finite r2[r] in [0,
 * DP_SMALL)): only DP_INF needs a test, about half the work per entry.
 */
#define DP_SMALL ((int64_t)1 << 62)

static DP_ROW_INLINE void
dp_row_small(int64_t *restrict o, int64_t *restrict ag, const int64_t *restrict r2,
    int64_t base, int64_t us, int n)
{
	if (ag == NULL) {
		for (int r = 0; r < n; r++) {
			int64_t x = r2[r];
			int64_t v = (int64_t)((uint64_t)base + (uint64_t)x);
			int64_t lt = -(int64_t)(v < o[r]) & -(int64_t)(x != DP_INF);
			o[r] = lt ? v : o[r];
		}
		return;
	}
	for (int r = 0; r < n; r++) {
		int64_t x = r2[r];
		int64_t v = (int64_t)((uint64_t)base + (uint64_t)x);
		int64_t lt = -(int64_t)(v < o[r]) & -(int64_t)(x != DP_INF);
		o[r] = lt ? v : o[r];
		ag[r] = lt ? us : ag[r];
	}
}

/* Whether every entry of t[0..n) is DP_INF or in [0, DP_SMALL). */
static bool
dp_all_small(const int64_t *t, size_t n)
{
	uint64_t bad = 0;

	for (size_t i = 0; i < n; i++)
		bad |= (uint64_t)(t[i] != DP_INF) & ((uint64_t)t[i] >= (uint64_t)DP_SMALL);
	return bad == 0;
}

/*
 * Eliminating x between y and z: out[t][z] = min over s of ux[s] + m1(s, t)
 * + m2[s][z], arg the least such s.  m1 is x-major (m1[s * ky + t]) when
 * m1x, else y-major (m1[t * kx + s]); m2 is x-major, small when every entry
 * is (dp_all_small).  Each output row stays in cache while every s passes
 * over it, in increasing order (ties keep the least s).  out must hold
 * DP_INF.
 */
DP_KERNEL static void
dp_elim_pair(int64_t *restrict out, uint16_t *restrict arg, const int64_t *ux,
    const int64_t *m1, bool m1x, const int64_t *m2, bool small, int kx, int ky,
    int kz, int64_t *restrict agw)
{
	for (int t = 0; t < ky; t++) {
		int64_t *o = out + (size_t)t * kz;
		uint16_t *ag = arg + (size_t)t * kz;
		/* the row's arguments as wide as its values while s runs, so
		 * that one mask selects both */
		for (int z = 0; z < kz; z++)
			agw[z] = ag[z];
		for (int s = 0; s < kx; s++) {
			int64_t base = dp_add(ux[s], m1x ? m1[(size_t)s * ky + t] :
			    m1[(size_t)t * kx + s]);
			if (base == DP_INF)
				continue;
			if (small && base >= 0 && base < DP_SMALL)
				dp_row_small(o, agw, m2 + (size_t)s * kz, base, s, kz);
			else
				dp_row(o, agw, m2 + (size_t)s * kz, base, s, kz);
		}
		for (int z = 0; z < kz; z++)
			ag[z] = (uint16_t)agw[z];
	}
}

/* Min-plus product C = A (r x m) (x) B (m x c). */
DP_KERNEL static void
dp_minplus_rows(const int64_t *A, const int64_t *B, int64_t *C, int r, int m, int c,
    bool small)
{
	for (size_t i = 0; i < (size_t)r * c; i++)
		C[i] = DP_INF;
	for (int a = 0; a < r; a++) {
		int64_t *out = C + (size_t)a * c;
		for (int b = 0; b < m; b++) {
			int64_t base = A[(size_t)a * m + b];
			if (base == DP_INF)
				continue;
			if (small && base >= 0 && base < DP_SMALL)
				dp_row_small(out, NULL, B + (size_t)b * c, base, 0, c);
			else
				dp_row(out, NULL, B + (size_t)b * c, base, 0, c);
		}
	}
}

static void
dp_minplus(const int64_t *A, const int64_t *B, int64_t *C, int r, int m, int c)
{
	dp_minplus_rows(A, B, C, r, m, c, dp_all_small(B, (size_t)m * c));
}

/* Whether the run says stop (polled every so many calls); sets w->stop
 * and err. */
static bool
ve_stopped(ve *w, int every, sl_error *err)
{
	if (w->run == NULL || w->stop != 0 || ++w->polls % every != 0)
		return w->stop != 0;
	if (!sl_run_over(w->run))
		return false;
	w->stop = sl_run_cancelled(w->run) ? 2 : 1;
	sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s", w->stop == 2 ?
	    _("dp: cancelled") : _("dp: the time limit ran out"));
	return true;
}

/* Eliminating x with no neighbour left: its best strategy, a constant. */
static void
ve_elim_alone(ve *w, int x)
{
	int kx = w->k[x];
	const int64_t *ux = w->u[x];
	ve_step *st = ve_push_step(w, x, 0, NULL, 1);
	int64_t best = DP_INF;

	for (int s = 0; s < kx; s++)
		if (ux[s] < best) {
			best = ux[s];
			st->arg[0] = (uint16_t)s;
		}
	w->cst = dp_add(w->cst, best);
}

/* Eliminating x, one binary factor to y: folded into y's costs. */
static void
ve_elim_leaf(ve *w, int x)
{
	int kx = w->k[x];
	const int64_t *ux = w->u[x];
	int y = w->nb[0], ky = w->k[y];
	ve_step *st = ve_push_step(w, x, 1, &y, (size_t)ky);
	int64_t *acc = ve_scratch(&w->tmp2, &w->captmp2, (size_t)ky);
	const int64_t *m;

	/* parallel factors are merged: exactly one */
	m = ve_xmajor(w, &w->f[w->fl[0]], x, &w->tmp1, &w->captmp1);
	for (int t = 0; t < ky; t++)
		acc[t] = DP_INF;
	for (int s = 0; s < kx; s++) {
		const int64_t *row = m + (size_t)s * ky;
		if (ux[s] == DP_INF)
			continue;
		for (int t = 0; t < ky; t++) {
			int64_t v = dp_add(ux[s], row[t]);
			if (v < acc[t]) {
				acc[t] = v;
				st->arg[t] = (uint16_t)s;
			}
		}
	}
	for (int t = 0; t < ky; t++)
		w->u[y][t] = dp_add(w->u[y][t], acc[t]);
}

/* Eliminating x between two binary factors: a new factor on the two. */
static void
ve_elim_pair(ve *w, int x)
{
	int kx = w->k[x];
	const int64_t *ux = w->u[x];
	int y, z, ky, kz, yz[2];
	const ve_fac *fa = &w->f[w->fl[0]], *fb = &w->f[w->fl[1]];
	const int64_t *m2;
	int64_t *out;
	ve_step *st;
	int64_t *t2 = NULL;
	size_t c2 = 0;

	y = fa->sc[0] == x ? fa->sc[1] : fa->sc[0];
	z = fb->sc[0] == x ? fb->sc[1] : fb->sc[0];
	ky = w->k[y];
	kz = w->k[z];
	yz[0] = y;
	yz[1] = z;
	st = ve_push_step(w, x, 2, yz, (size_t)ky * kz);
	m2 = fb->sc[0] == x ? fb->t : ve_xmajor(w, fb, x, &t2, &c2);
	out = sl_xmalloc((size_t)ky * kz * sizeof *out);
	for (size_t i = 0; i < (size_t)ky * kz; i++)
		out[i] = DP_INF;
	dp_elim_pair(out, st->arg, ux, fa->t, fa->sc[0] == x, m2,
	    dp_all_small(m2, (size_t)kx * kz), kx, ky, kz,
	    ve_scratch(&w->tmp2, &w->captmp2, (size_t)kz));
	free(t2);
	/* consume before merging, so the new factor does not meet them */
	w->f[w->fl[0]].ar = 0;
	w->f[w->fl[1]].ar = 0;
	ve_adj_compact(w, y);
	ve_adj_compact(w, z);
	ve_add_binary(w, y, z, out, true);
}

/*
 * Eliminating x in general: a factor over its ny sorted neighbours (w->nb)
 * from its nfac factors (w->fl), size entries, each the minimum over x's
 * strategies.  The kernel of the general step, where the DP's time goes on
 * wide problems: it stays one loop, polling the run every DP_POLL_ENTRIES.
 */
static int
ve_elim_general(ve *w, int x, int ny, int nfac, size_t size, sl_error *err)
{
	int kx = w->k[x];
	const int64_t *ux = w->u[x];
	int *y = w->nb;
	int ar = ny;
	ve_step *st;
	int64_t *out;
	int *idx = sl_xcalloc((size_t)ny, sizeof *idx);
	/* per factor: stride of x, strides of each neighbour */
	size_t *sx = sl_xcalloc((size_t)nfac, sizeof *sx);
	size_t *sy = sl_xcalloc((size_t)nfac * ny, sizeof *sy);

	qsort(y, (size_t)ny, sizeof *y, ve_cmp_int);
	st = ve_push_step(w, x, ny, y, size);
	for (int j = 0; j < nfac; j++) {
		const ve_fac *f = &w->f[w->fl[j]];
		size_t stride = 1;
		for (int a = f->ar - 1; a >= 0; a--) {
			int v = f->sc[a];
			if (v == x)
				sx[j] = stride;
			else
				for (int i = 0; i < ny; i++)
					if (y[i] == v)
						sy[(size_t)j * ny + i] = stride;
			stride *= (size_t)w->k[v];
		}
	}
	/*
	 * off[j]: where factor j's row for the neighbours' current
	 * strategies starts, kept as the odometer idx turns; acc
	 * sums the factors for every s of x, factor by factor, so
	 * that no offset is recomputed per strategy.
	 */
	size_t *off = sl_xcalloc((size_t)nfac, sizeof *off);
	int64_t *acc = ve_scratch(&w->tmp2, &w->captmp2, (size_t)kx);
	out = sl_xmalloc(size * sizeof *out);
	for (size_t e = 0; e < size; e++) {
		int64_t best = DP_INF;
		int arg = 0;
		if ((e + 1) % DP_POLL_ENTRIES == 0 &&
		    ve_stopped(w, 1, err)) {
			free(out);
			free(off);
			free(idx);
			free(sx);
			free(sy);
			return SL_EINTERNAL;
		}
		memcpy(acc, ux, (size_t)kx * sizeof *acc);
		for (int j = 0; j < nfac; j++) {
			const int64_t *t = w->f[w->fl[j]].t + off[j];
			size_t step = sx[j];
			for (int s = 0; s < kx; s++)
				acc[s] = dp_add(acc[s], t[(size_t)s * step]);
		}
		for (int s = 0; s < kx; s++)
			if (acc[s] < best) {
				best = acc[s];
				arg = s;
			}
		out[e] = best;
		st->arg[e] = (uint16_t)arg;
		for (int i = ny - 1; i >= 0; i--) {
			if (++idx[i] < w->k[y[i]]) {
				for (int j = 0; j < nfac; j++)
					off[j] += sy[(size_t)j * ny + i];
				break;
			}
			for (int j = 0; j < nfac; j++)
				off[j] -= (size_t)(idx[i] - 1) *
				    sy[(size_t)j * ny + i];
			idx[i] = 0;
		}
	}
	free(off);
	for (int j = 0; j < nfac; j++)
		w->f[w->fl[j]].ar = 0;
	for (int i = 0; i < ny; i++)
		ve_adj_compact(w, y[i]);
	free(idx);
	free(sx);
	free(sy);
	ve_add_factor(w, ar, st->y, out);
	return SL_OK;
}

/*
 * Eliminates x: refused when its factor would be too large or the work too
 * much, else by the step its neighbours call for (scopes only when
 * symbolic).
 */
static int
ve_elim(ve *w, int x, sl_error *err)
{
	int nfac, ny, kx = w->k[x];
	bool binary;
	size_t size = 1;

	ny = ve_nbrs(w, x, &nfac, &binary);
	for (int i = 0; i < ny; i++) {
		size *= (size_t)w->k[w->nb[i]];
		if (size > (size_t)DP_MAX_ENTRIES) {
			double est = 1;
			for (int j = 0; j < ny; j++)
				est *= w->k[w->nb[j]];
			return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
			    _("dp: elimination width %d too costly (%.1e entries); use ilp"),
			    ny, est);
		}
	}
	if (ny > w->width)
		w->width = ny;
	if ((int64_t)size > w->max_entries)
		w->max_entries = (int64_t)size;
	w->work += (double)size * kx * (nfac > 0 ? nfac : 1);
	if (w->work > w->cap)
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("dp: elimination too costly (over %.1e operations, width %d); use ilp"),
		    w->cap, w->width);

	if (w->sym) {
		/* the same scopes, in the same order, as below; no tables */
		if (!(binary && ny == 2))
			qsort(w->nb, (size_t)ny, sizeof *w->nb, ve_cmp_int);
		int *y = sl_xmalloc((size_t)(ny ? ny : 1) * sizeof *y);
		memcpy(y, w->nb, (size_t)ny * sizeof *y);
		for (int j = 0; j < nfac; j++)
			w->f[w->fl[j]].ar = 0;
		for (int i = 0; i < ny; i++)
			ve_adj_compact(w, y[i]);
		if (ny >= 2)
			ve_add_factor(w, ny, y, NULL);
		free(y);
		w->state[x] = 2;
		return SL_OK;
	}

	if (ny == 0)
		ve_elim_alone(w, x);
	else if (binary && ny == 1)
		ve_elim_leaf(w, x);
	else if (binary && ny == 2)
		ve_elim_pair(w, x);
	else if (ve_elim_general(w, x, ny, nfac, size, err) != SL_OK)
		return SL_EINTERNAL;
	for (int j = 0; j < nfac; j++)
		w->f[w->fl[j]].ar = 0;
	w->state[x] = 2;
	return SL_OK;
}

/* Size of eliminating x now (product of neighbour k), or -1 when not live. */
static double
ve_cost(ve *w, int x, int *ny)
{
	int nfac;
	bool binary;
	double size = 1;

	*ny = ve_nbrs(w, x, &nfac, &binary);
	for (int i = 0; i < *ny; i++)
		size *= w->k[w->nb[i]];
	return size * w->k[x];
}

static void
ve_heap_push(ve *w, double c, int v)
{
	int i;

	if (w->nheap == w->capheap) {
		w->capheap = w->capheap ? 2 * w->capheap : 64;
		w->heap = sl_xrealloc(w->heap, (size_t)w->capheap *
		    sizeof *w->heap);
	}
	i = w->nheap++;
	while (i > 0) {
		int up = (i - 1) / 2;
		ve_cand *a = &w->heap[up];
		if (a->c < c || (a->c == c && a->v < v))
			break;
		w->heap[i] = *a;
		i = up;
	}
	w->heap[i] = (ve_cand){ c, v };
}

static ve_cand
ve_heap_pop(ve *w)
{
	ve_cand top = w->heap[0], last = w->heap[--w->nheap];
	int i = 0;

	for (;;) {
		int c = 2 * i + 1;
		if (c >= w->nheap)
			break;
		if (c + 1 < w->nheap && (w->heap[c + 1].c < w->heap[c].c ||
		    (w->heap[c + 1].c == w->heap[c].c &&
		    w->heap[c + 1].v < w->heap[c].v)))
			c++;
		if (last.c < w->heap[c].c ||
		    (last.c == w->heap[c].c && last.v < w->heap[c].v))
			break;
		w->heap[i] = w->heap[c];
		i = c;
	}
	if (w->nheap > 0)
		w->heap[i] = last;
	return top;
}

/*
 * The cheapest general step: the live variable of least ve_cost, the
 * lowest index among equals, or -1.  The heap holds every live variable
 * at its size when last pushed; a size changes only when a neighbour is
 * eliminated, which pushes it again (ve_run), so an entry whose size is no
 * longer the variable's is stale and dropped.
 */
static int
ve_cheapest(ve *w, bool *first)
{
	int ny;

	if (*first) {
		*first = false;
		for (int v = 0; v < w->n; v++)
			if (w->state[v] == 0)
				ve_heap_push(w, ve_cost(w, v, &ny), v);
	}
	while (w->nheap > 0) {
		ve_cand c = ve_heap_pop(w);
		if (w->state[c.v] == 0 && ve_cost(w, c.v, &ny) == c.c)
			return c.v;
	}
	return -1;
}

/*
 * Eliminates x and queues its live neighbours (their degree fell), and,
 * once general steps have begun, pushes their new sizes.
 */
static int
ve_elim_queue(ve *w, int x, int **queue, int *nq, int *capq, bool heap,
    sl_error *err)
{
	int nfac, ny, rc;
	bool binary;
	int *nbs;

	ny = ve_nbrs(w, x, &nfac, &binary);
	nbs = sl_xmalloc((size_t)(ny ? ny : 1) * sizeof *nbs);
	memcpy(nbs, w->nb, (size_t)ny * sizeof *nbs);
	if ((rc = ve_elim(w, x, err)) != SL_OK) {
		free(nbs);
		return rc;
	}
	for (int i = 0; i < ny; i++) {
		int c;
		if (w->state[nbs[i]] != 0)
			continue;
		if (*nq + 1 > *capq) {
			*capq *= 2;
			*queue = sl_xrealloc(*queue, (size_t)*capq * sizeof **queue);
		}
		(*queue)[(*nq)++] = nbs[i];
		if (heap)
			ve_heap_push(w, ve_cost(w, nbs[i], &c), nbs[i]);
	}
	free(nbs);
	return SL_OK;
}

/*
 * Eliminates every variable not marked kept: degree <= 2 first (exact, never
 * widens), then the cheapest in product-of-sizes order.
 */
static int
ve_run(ve *w, sl_error *err)
{
	int *queue, nq = 0, capq, rc = SL_OK;
	bool first = true;

	capq = 2 * w->n + 16;
	queue = sl_xmalloc((size_t)capq * sizeof *queue);
	for (int v = w->n - 1; v >= 0; v--)
		queue[nq++] = v;
	for (;;) {
		int best;
		while (nq > 0) {
			int x = queue[--nq], nfac;
			bool binary;
			if (w->state[x] != 0)
				continue;
			if (ve_nbrs(w, x, &nfac, &binary) > 2)
				continue;
			if (ve_stopped(w, DP_POLL_STEPS, err)) {
				rc = SL_EINTERNAL;
				goto out;
			}
			if ((rc = ve_elim_queue(w, x, &queue, &nq, &capq,
			    !first, err)) != SL_OK)
				goto out;
		}
		/* no node of degree <= 2 left: cheapest general step */
		if ((best = ve_cheapest(w, &first)) < 0)
			break;
		if (ve_stopped(w, 1, err)) {
			rc = SL_EINTERNAL;
			goto out;
		}
		if ((rc = ve_elim_queue(w, best, &queue, &nq, &capq, true,
		    err)) != SL_OK)
			goto out;
	}
out:
	free(queue);
	return rc;
}

/* Choices of every eliminated variable, given those of the kept ones. */
static void
ve_backsub(const ve *w, int *val)
{
	for (int i = w->nst - 1; i >= 0; i--) {
		const ve_step *st = &w->st[i];
		size_t idx = 0;
		for (int j = 0; j < st->ny; j++)
			idx = idx * (size_t)w->k[st->y[j]] + (size_t)val[st->y[j]];
		val[st->x] = st->arg[idx];
	}
}

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
