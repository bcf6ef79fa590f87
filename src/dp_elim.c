/*
 * dp_elim.c: variable elimination, the exact DP's engine (dp_internal.h):
 * factors over the strategies of their scopes, a node of degree 0, 1 or 2
 * eliminated into its neighbours, else the general step over its sorted
 * neighbours in least-size order (a heap), refused when a factor or the
 * work would be too large; a record of each step's argmins for the plan by
 * substitution; the min-plus kernels the folded layers multiply with.
 * Symbolic runs (scopes only) decide the order and whether it is exact
 * cheaply before any table is built.  Runs poll the solver run.
 */
#include "dp_internal.h"

#include <stdlib.h>
/* Largest factor (entries) one elimination step may build. */
#define DP_MAX_ENTRIES 20000000LL
/* Eliminations, and entries of one general step, between two polls of the
 * run (its deadline and cancel). */
#define DP_POLL_STEPS 64
#define DP_POLL_ENTRIES 65536

void
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
void
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

void
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
void
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

void
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
int
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
void
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
