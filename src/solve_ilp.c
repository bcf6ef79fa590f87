/*
 * solve_ilp.c: the reference solver, a GLPK integer program in the per-edge
 * marginal formulation (doc/design.md, "The ILP and alpha"):
 *
 *   X_(v,s) binary,            sum_s X_(v,s) = 1                 per node
 *   B_e(s,t) continuous >= 0,  sum_t B_e(s,t) = X_(u,s)          per edge, s
 *                              sum_s B_e(s,t) = X_(v,t)          per edge, t
 *   min sum cost[v][s] X_(v,s) + sum ecost[e][s,t] B_e(s,t)
 *
 * plus, for IOPDDL problems with a usage limit, one row per time at which the
 * set of live nodes is locally maximal: sum usage[v][s] X_(v,s) <= limit, or
 * where those rows would be too many, the same as a chain of level columns
 * (see struct sl_ilp).  The marginal rows imply the usual linking and degree
 * rows and give a much tighter relaxation; on structured instances the LP is
 * integral and glp_intopt is skipped.  Otherwise branch and bound gets a
 * rounded and locally improved plan as its first incumbent, and a solve cut
 * short by its time limit still returns such a plan.
 *
 * Costs far above what any plan without them can reach (IOPDDL marks
 * impossible choices with 1e18) are dropped from the LP, which keeps it
 * numerically sane; this is exact whenever a plan avoiding them exists, and
 * they come back as penalties otherwise.
 *
 * Kept warm (sl_ilp_*), every entry has a column; pins and forbids become
 * bounds and are re-solved by the dual simplex from the last optimal basis,
 * cost changes by the primal simplex.
 *
 * GLPK aborts on invalid arguments and prints on stdout: every input is
 * checked before it reaches GLPK, its terminal output goes to the progress
 * callback (or nowhere), and every failure becomes an sl_error.
 */
#include "internal.h"

#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

/* Simplex iterations between two polls of the cancel callback. */
#define ILP_CHUNK_ITERS 2000
/* Beyond this many columns GLPK is hopeless; refuse rather than thrash. */
#define ILP_MAX_COLS 10000000
#define ILP_MAX_NNZ 40000000

/*
 * Entries >= huge are excluded from the model, or, when no plan avoids them,
 * penalised: each weighs weight * value / hmin, where weight exceeds the sum
 * of everything below huge, so the LP first takes as few as it can (exact
 * when they share one value, as the contest's 10^18 do) and stays in a
 * numerically sane range.
 */
struct ilp_excl {
	int64_t huge;		/* INT64_MAX: nothing excluded */
	bool penalize;
	double weight;
	int64_t hmin;
};

struct sl_ilp {
	glp_prob *lp;
	int n, m;
	int *k;
	int (*edge)[2];
	bool compact;		/* columns of excluded entries were dropped */
	struct ilp_excl ex;
	int **xcol;		/* column of X_(v,s); 0 when dropped */
	int **bcol;		/* column of B_e(s,t), index s * k[v] + t; 0 when dropped */
	int ncols, nrows;
	bool has_limit;		/* built for a problem with a usage limit */
	/*
	 * Usage as a chain over the distinct interval ends t_0 < t_1 < ...:
	 * level L_q (usage over [t_q, t_q+1), a column bounded by the limit)
	 * = L_q-1 + usage of the nodes starting at t_q - of those ending.
	 * Each X enters two rows, where a row per time over the live set
	 * would hold hundreds of millions of entries on contest problems.
	 */
	/*
	 * Where that would stay small, a row per time at which the live set
	 * is locally largest (the sum of usages of the live nodes <= limit)
	 * is kept instead: the LP solves faster with it.
	 */
	int n_times;
	bool dense;		/* rows per time rather than the chain */
	int usage_row0;		/* first usage row; 0 when no limit */
	int n_urows;		/* usage rows */
	int lcol0;		/* column of L_0 (chain) */
	double cur_limit;	/* the levels' current upper bound */
	int64_t *usage_time;	/* the distinct times */
	int *ilo, *ihi;		/* per node: its interval as time indices */
	uint8_t *fixed;		/* per column: currently fixed at 0 */
	double *obj;		/* per column: current objective coefficient */
	bool has_basis;		/* a simplex has run: the basis is GLPK's */
	bool basis_valid;	/* the LP basis is optimal for the last model */
	int *row_stat, *col_stat;	/* saved around glp_intopt */
	/* adjacency for the rounding heuristic */
	int *adj_start, *adj_edge;
};

/* The ILP's run (ending at ILP_LIMIT_SHARE of the one it was given). */
struct ilp_clock {
	sl_run run;
	/* time to build the model: a call of glp_simplex spends about as
	 * much in its own set-up before it first looks at tm_lim */
	double setup_ms;
};

static double
ilp_elapsed_ms(const struct ilp_clock *c)
{
	return sl_run_ms(&c->run);
}

/* The run's length in ms, INFINITY when it has no deadline. */
static double
ilp_limit_ms(const struct ilp_clock *c)
{
	return c->run.deadline - c->run.start;
}

/* Remaining time in ms for GLPK's tm_lim, INT_MAX when unlimited. */
static int
ilp_remaining_ms(const struct ilp_clock *c)
{
	double left;

	if (ilp_limit_ms(c) == INFINITY)
		return INT_MAX;
	left = sl_run_left(&c->run) - c->setup_ms;
	if (left < 1)
		return 1;
	if (left > (double)INT_MAX)
		return INT_MAX;
	return (int)left;
}

static bool
ilp_out_of_time(const struct ilp_clock *c)
{
	return sl_run_left(&c->run) <= 0;
}

/* Whether a new call of glp_simplex would end past the limit. */
static bool
ilp_no_time_for_simplex(const struct ilp_clock *c)
{
	return sl_run_left(&c->run) <= c->setup_ms;
}

/* ------------------------------------------------------------ validation */

static int
ilp_check_problem(const sl_problem *p, sl_error *err)
{
	if (p == NULL || p->n < 0 || p->m < 0)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("ilp: malformed problem"));
	for (int v = 0; v < p->n; v++)
		if (p->k[v] < 1)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("ilp: node %d has no strategies"), v);
	for (int e = 0; e < p->m; e++) {
		int u = p->edge[e][0], v = p->edge[e][1];
		if (u < 0 || u >= p->n || v < 0 || v >= p->n || u == v)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("ilp: edge %d joins nodes %d and %d"), e, u, v);
	}
	if (p->usage_limit >= 0 && (p->interval == NULL || p->usage == NULL))
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("ilp: a usage limit needs intervals and usages"));
	return SL_OK;
}

/* ------------------------------------------------------ excluded entries */

static int
ilp_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Sum over nodes and edges of the largest entry <= a (saturating). */
static int64_t
ilp_small_sum(const sl_problem *p, int64_t a)
{
	int64_t sum = 0;

	for (int v = 0; v < p->n; v++) {
		int64_t best = 0;
		for (int s = 0; s < p->k[v]; s++)
			if (p->cost[v][s] <= a && p->cost[v][s] > best)
				best = p->cost[v][s];
		sum = sl_add_sat(sum, best);
	}
	for (int e = 0; e < p->m; e++) {
		size_t cells = (size_t)p->k[p->edge[e][0]] * p->k[p->edge[e][1]];
		int64_t best = 0;
		for (size_t i = 0; i < cells; i++)
			if (p->ecost[e][i] <= a && p->ecost[e][i] > best)
				best = p->ecost[e][i];
		sum = sl_add_sat(sum, best);
	}
	return sum;
}

/*
 * The lowest value h such that every entry >= h exceeds the cost of any plan
 * built from entries < h alone, looking only at big jumps between distinct
 * values; INT64_MAX when costs are moderate, negative, or no such jump exists.
 */
static int64_t
ilp_huge_threshold(const sl_problem *p)
{
	const int64_t moderate = (int64_t)1 << 40;
	int64_t maxv = 0, h = INT64_MAX;
	size_t total = 0, nv = 0;
	int64_t *vals;

	for (int v = 0; v < p->n; v++)
		for (int s = 0; s < p->k[v]; s++) {
			if (p->cost[v][s] < 0)
				return INT64_MAX;
			if (p->cost[v][s] > maxv)
				maxv = p->cost[v][s];
		}
	for (int e = 0; e < p->m; e++) {
		size_t cells = (size_t)p->k[p->edge[e][0]] * p->k[p->edge[e][1]];
		for (size_t i = 0; i < cells; i++) {
			if (p->ecost[e][i] < 0)
				return INT64_MAX;
			if (p->ecost[e][i] > maxv)
				maxv = p->ecost[e][i];
		}
		total += cells;
	}
	if (maxv < moderate)
		return INT64_MAX;
	for (int v = 0; v < p->n; v++)
		total += (size_t)p->k[v];
	vals = sl_xmalloc(total * sizeof *vals);
	for (int v = 0; v < p->n; v++)
		for (int s = 0; s < p->k[v]; s++)
			vals[nv++] = p->cost[v][s];
	for (int e = 0; e < p->m; e++) {
		size_t cells = (size_t)p->k[p->edge[e][0]] * p->k[p->edge[e][1]];
		for (size_t i = 0; i < cells; i++)
			vals[nv++] = p->ecost[e][i];
	}
	qsort(vals, nv, sizeof *vals, ilp_cmp_i64);
	for (size_t i = 0; i + 1 < nv; i++) {
		int64_t a = vals[i], b = vals[i + 1];
		if (a == b || b < moderate || (a > 0 && b / 1000 < a))
			continue;
		if (b > ilp_small_sum(p, a)) {
			h = b;
			break;
		}
	}
	free(vals);
	return h;
}

/* ------------------------------------------------------------- the model */

static void
ilp_free_model(sl_ilp *w)
{
	if (w == NULL)
		return;
	if (w->lp != NULL)
		glp_delete_prob(w->lp);
	for (int v = 0; v < w->n; v++)
		free(w->xcol[v]);
	for (int e = 0; e < w->m; e++)
		free(w->bcol[e]);
	free(w->xcol);
	free(w->bcol);
	free(w->k);
	free(w->edge);
	free(w->usage_time);
	free(w->ilo);
	free(w->ihi);
	free(w->fixed);
	free(w->obj);
	free(w->row_stat);
	free(w->col_stat);
	free(w->adj_start);
	free(w->adj_edge);
	free(w);
}

/* Growable triplet list for glp_load_matrix (1-based). */
struct ilp_mat {
	int *ia, *ja;
	double *ar;
	size_t n, cap;
};

static void
ilp_mat_add(struct ilp_mat *a, int i, int j, double v)
{
	if (a->n + 1 >= a->cap) {
		a->cap = a->cap ? 2 * a->cap : 1024;
		a->ia = sl_xrealloc(a->ia, a->cap * sizeof *a->ia);
		a->ja = sl_xrealloc(a->ja, a->cap * sizeof *a->ja);
		a->ar = sl_xrealloc(a->ar, a->cap * sizeof *a->ar);
	}
	a->n++;
	a->ia[a->n] = i;
	a->ja[a->n] = j;
	a->ar[a->n] = v;
}

static int
ilp_time_index(const int64_t *t, int n, int64_t x)
{
	int lo = 0, hi = n;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (t[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The distinct ends of non-empty intervals, and each node's indices. */
static void
ilp_usage_times(sl_ilp *w, const sl_problem *p)
{
	int64_t *t = sl_xmalloc((2 * (size_t)p->n + 1) * sizeof *t);
	int nt = 0, u = 0;

	for (int v = 0; v < p->n; v++)
		if (p->interval[v][0] < p->interval[v][1]) {
			t[nt++] = p->interval[v][0];
			t[nt++] = p->interval[v][1];
		}
	qsort(t, (size_t)nt, sizeof *t, ilp_cmp_i64);
	for (int i = 0; i < nt; i++)
		if (u == 0 || t[i] != t[u - 1])
			t[u++] = t[i];
	w->usage_time = t;
	w->n_times = u;
	w->ilo = sl_xcalloc((size_t)p->n + 1, sizeof *w->ilo);
	w->ihi = sl_xcalloc((size_t)p->n + 1, sizeof *w->ihi);
	for (int v = 0; v < p->n; v++)
		if (p->interval[v][0] < p->interval[v][1]) {
			w->ilo[v] = ilp_time_index(t, u, p->interval[v][0]);
			w->ihi[v] = ilp_time_index(t, u, p->interval[v][1]);
		}
}

/*
 * The dense alternative: a row at each time index q where a node starts and
 * the next change ends one (a local maximum of the live set; enough when
 * usages are non-negative, else every start).  Returns the nonzeros it would
 * take, and adds the rows when a is not NULL; in a compact model rows that
 * cannot bind are left out.
 */
static size_t
ilp_dense_rows(sl_ilp *w, const sl_problem *p, struct ilp_mat *a, int *nrows)
{
	int nt = w->n_times;
	int *cnt = sl_xcalloc(2 * (size_t)nt + 2, sizeof *cnt);
	int *starts = cnt, *ends = cnt + nt + 1;
	int *live = sl_xmalloc(((size_t)p->n + 1) * sizeof *live);
	int *where = sl_xmalloc(((size_t)p->n + 1) * sizeof *where);
	int *kk = sl_xcalloc((size_t)p->n + 1, sizeof *kk), nlive = 0;
	int **by_s, **by_e;
	bool nonneg = true;
	size_t nnz = 0, live_k = 0;

	for (int v = 0; v < p->n; v++)
		for (int s = 0; s < p->k[v]; s++) {
			if (p->usage[v][s] < 0)
				nonneg = false;
			kk[v] += w->xcol[v][s] != 0 && p->usage[v][s] != 0;
		}
	for (int v = 0; v < p->n; v++)
		if (w->ilo[v] < w->ihi[v]) {
			starts[w->ilo[v]]++;
			ends[w->ihi[v]]++;
		}
	/* nodes by start and by end index */
	by_s = sl_xcalloc((size_t)nt + 1, sizeof *by_s);
	by_e = sl_xcalloc((size_t)nt + 1, sizeof *by_e);
	for (int q = 0; q < nt; q++) {
		by_s[q] = sl_xmalloc(((size_t)starts[q] + 1) * sizeof **by_s);
		by_e[q] = sl_xmalloc(((size_t)ends[q] + 1) * sizeof **by_e);
		starts[q] = ends[q] = 0;
	}
	for (int v = 0; v < p->n; v++)
		if (w->ilo[v] < w->ihi[v]) {
			by_s[w->ilo[v]][starts[w->ilo[v]]++] = v;
			by_e[w->ihi[v]][ends[w->ihi[v]]++] = v;
		}
	for (int q = 0; q < nt; q++) {
		for (int i = 0; i < ends[q]; i++) {
			int v = by_e[q][i], at = where[v];
			live[at] = live[--nlive];
			where[live[at]] = at;
			live_k -= (size_t)kk[v];
		}
		for (int i = 0; i < starts[q]; i++) {
			int v = by_s[q][i];
			where[v] = nlive;
			live[nlive++] = v;
			live_k += (size_t)kk[v];
		}
		if (starts[q] == 0 || (nonneg && q + 1 < nt && ends[q + 1] == 0))
			continue;
		if (a != NULL && w->compact) {
			int64_t maxsum = 0;
			for (int i = 0; i < nlive; i++) {
				int v = live[i];
				int64_t mx = INT64_MIN;
				for (int s = 0; s < p->k[v]; s++)
					if (w->xcol[v][s] && p->usage[v][s] > mx)
						mx = p->usage[v][s];
				if (mx != INT64_MIN)
					maxsum = sl_add_sat(maxsum, mx);
			}
			if (maxsum <= p->usage_limit)
				continue;
		}
		nnz += live_k;
		if (a == NULL)
			continue;
		++*nrows;
		w->n_urows++;
		for (int i = 0; i < nlive; i++) {
			int v = live[i];
			for (int s = 0; s < p->k[v]; s++)
				if (w->xcol[v][s] && p->usage[v][s] != 0)
					ilp_mat_add(a, *nrows, w->xcol[v][s],
					    (double)p->usage[v][s]);
		}
	}
	for (int q = 0; q < nt; q++) {
		free(by_s[q]);
		free(by_e[q]);
	}
	free(by_s);
	free(by_e);
	free(cnt);
	free(live);
	free(where);
	free(kk);
	return nnz;
}

/* The chain rows: L_q - L_q-1 - starting usage + ending usage = 0. */
static void
ilp_usage_rows(sl_ilp *w, const sl_problem *p, struct ilp_mat *a, int *nrows)
{
	int nt = w->n_times;
	int *cnt = sl_xcalloc(2 * (size_t)nt + 2, sizeof *cnt);
	int *start = cnt, *end = cnt + nt + 1, *order_s, *order_e, *fill;

	/* Nodes bucketed by start index and by end index. */
	for (int v = 0; v < p->n; v++)
		if (w->ilo[v] < w->ihi[v]) {
			start[w->ilo[v] + 1]++;
			end[w->ihi[v] + 1]++;
		}
	for (int q = 0; q < nt; q++) {
		start[q + 1] += start[q];
		end[q + 1] += end[q];
	}
	order_s = sl_xmalloc(((size_t)p->n + 1) * sizeof *order_s);
	order_e = sl_xmalloc(((size_t)p->n + 1) * sizeof *order_e);
	fill = sl_xcalloc(2 * (size_t)nt + 2, sizeof *fill);
	for (int v = 0; v < p->n; v++)
		if (w->ilo[v] < w->ihi[v]) {
			order_s[start[w->ilo[v]] + fill[w->ilo[v]]++] = v;
			order_e[end[w->ihi[v]] + fill[nt + 1 + w->ihi[v]]++] = v;
		}
	for (int q = 0; q < nt; q++) {
		int row = ++*nrows;
		ilp_mat_add(a, row, w->lcol0 + q, 1.0);
		if (q > 0)
			ilp_mat_add(a, row, w->lcol0 + q - 1, -1.0);
		for (int i = start[q]; i < start[q + 1]; i++) {
			int v = order_s[i];
			for (int s = 0; s < p->k[v]; s++)
				if (w->xcol[v][s] && p->usage[v][s] != 0)
					ilp_mat_add(a, row, w->xcol[v][s],
					    -(double)p->usage[v][s]);
		}
		for (int i = end[q]; i < end[q + 1]; i++) {
			int v = order_e[i];
			for (int s = 0; s < p->k[v]; s++)
				if (w->xcol[v][s] && p->usage[v][s] != 0)
					ilp_mat_add(a, row, w->xcol[v][s],
					    (double)p->usage[v][s]);
		}
	}
	free(cnt);
	free(order_s);
	free(order_e);
	free(fill);
}

/* The limit as the bound of the usage rows or of the chain's levels. */
static void
ilp_set_limit(sl_ilp *w)
{
	if (!w->has_limit)
		return;
	if (w->dense)
		for (int r = 0; r < w->n_urows; r++)
			glp_set_row_bnds(w->lp, w->usage_row0 + r, GLP_UP, 0.0,
			    w->cur_limit);
	else
		for (int q = 0; q < w->n_times; q++)
			glp_set_col_bnds(w->lp, w->lcol0 + q, GLP_UP, 0.0,
			    w->cur_limit);
}

static struct ilp_excl
ilp_excl_make(const sl_problem *p, int64_t huge, bool penalize)
{
	struct ilp_excl ex = { huge, penalize, 1.0, INT64_MAX };

	if (huge == INT64_MAX || !penalize)
		return ex;
	ex.weight = (double)ilp_small_sum(p, huge - 1) + 1.0;
	for (int v = 0; v < p->n; v++)
		for (int s = 0; s < p->k[v]; s++)
			if (p->cost[v][s] >= huge && p->cost[v][s] < ex.hmin)
				ex.hmin = p->cost[v][s];
	for (int e = 0; e < p->m; e++) {
		size_t cells = (size_t)p->k[p->edge[e][0]] * p->k[p->edge[e][1]];
		for (size_t i = 0; i < cells; i++)
			if (p->ecost[e][i] >= huge && p->ecost[e][i] < ex.hmin)
				ex.hmin = p->ecost[e][i];
	}
	return ex;
}

/* Whether a cost takes part in the model, and its coefficient there. */
static bool
ilp_cell_on(const struct ilp_excl *ex, int64_t c)
{
	return c < ex->huge || ex->penalize;
}

static double
ilp_coef(const struct ilp_excl *ex, int64_t c)
{
	if (c < ex->huge)
		return (double)c;
	return ex->weight * ((double)c / (double)ex->hmin);
}

/* Whether an entry takes part in the model: allowed and not excluded. */
static bool
ilp_x_on(const sl_problem *p, const struct ilp_excl *ex, int v, int s)
{
	return p->allowed[v][s] && ilp_cell_on(ex, p->cost[v][s]);
}

/*
 * Whether the model stays within what GLPK takes (it aborts rather than
 * fail politely); err says how large it would be when not.
 */
static bool
ilp_size_ok(const sl_problem *p, bool compact, const struct ilp_excl *ex,
    sl_error *err)
{
	size_t ncols = 0, nnz = 0;

	for (int v = 0; v < p->n; v++)
		for (int s = 0; s < p->k[v]; s++)
			if (!compact || ilp_x_on(p, ex, v, s)) {
				ncols++;
				nnz += 4;	/* node, edge and usage rows */
			}
	for (int e = 0; e < p->m; e++) {
		int u = p->edge[e][0], v = p->edge[e][1];
		size_t cells = (size_t)p->k[u] * p->k[v];
		for (size_t i = 0; i < cells; i++)
			if (!compact || (ilp_x_on(p, ex, u, (int)(i / p->k[v])) &&
			    ilp_x_on(p, ex, v, (int)(i % p->k[v])) &&
			    ilp_cell_on(ex, p->ecost[e][i]))) {
				ncols++;
				nnz += 2;
			}
		nnz += (size_t)p->k[u] + p->k[v];
	}
	if (p->usage_limit >= 0)
		ncols += 2 * (size_t)p->n;
	if (ncols > ILP_MAX_COLS || nnz > ILP_MAX_NNZ) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("ilp: the model would have %zu columns and %zu nonzeros, "
		    "too many for GLPK"), ncols, nnz);
		return false;
	}
	return true;
}

/* The columns: X per node and strategy, B per edge cell, the usage levels
 * of the chain form (chain: that form whatever the size). */
static void
ilp_columns(sl_ilp *w, const sl_problem *p, bool compact, bool chain,
    const struct ilp_excl *ex)
{
	int col = 0;

	w->xcol = sl_xcalloc((size_t)p->n + 1, sizeof *w->xcol);
	w->bcol = sl_xcalloc((size_t)p->m + 1, sizeof *w->bcol);
	for (int v = 0; v < p->n; v++) {
		w->xcol[v] = sl_xcalloc((size_t)p->k[v], sizeof **w->xcol);
		for (int s = 0; s < p->k[v]; s++)
			if (!compact || ilp_x_on(p, ex, v, s))
				w->xcol[v][s] = ++col;
	}
	for (int e = 0; e < p->m; e++) {
		int u = p->edge[e][0], v = p->edge[e][1];
		w->bcol[e] = sl_xcalloc((size_t)p->k[u] * p->k[v],
		    sizeof **w->bcol);
		for (int s = 0; s < p->k[u]; s++)
			for (int t = 0; t < p->k[v]; t++) {
				size_t i = (size_t)s * p->k[v] + t;
				if (!compact || (w->xcol[u][s] && w->xcol[v][t] &&
				    ilp_cell_on(ex, p->ecost[e][i])))
					w->bcol[e][i] = ++col;
			}
	}
	w->has_limit = p->usage_limit >= 0;
	if (w->has_limit) {
		ilp_usage_times(w, p);
		/* Rows per time while they cost at most a few entries per X. */
		w->dense = !chain &&
		    ilp_dense_rows(w, p, NULL, NULL) <= 4 * (size_t)col + 100000;
		if (!w->dense) {
			w->lcol0 = col + 1;
			col += w->n_times;
		}
	}
	w->ncols = col;
}

/* Rows: nodes, then per edge its row marginals and all but the last
 * column marginal (implied by the node rows), then usage. */
static void
ilp_rows(sl_ilp *w, const sl_problem *p, struct ilp_mat *a)
{
	int nrows = 0;

	for (int v = 0; v < p->n; v++) {
		nrows++;
		for (int s = 0; s < p->k[v]; s++)
			if (w->xcol[v][s])
				ilp_mat_add(a, nrows, w->xcol[v][s], 1.0);
	}
	for (int e = 0; e < p->m; e++) {
		int u = p->edge[e][0], v = p->edge[e][1];
		int last = -1;
		for (int s = 0; s < p->k[u]; s++) {
			if (!w->xcol[u][s])
				continue;
			nrows++;
			ilp_mat_add(a, nrows, w->xcol[u][s], -1.0);
			for (int t = 0; t < p->k[v]; t++) {
				int c = w->bcol[e][(size_t)s * p->k[v] + t];
				if (c)
					ilp_mat_add(a, nrows, c, 1.0);
			}
		}
		for (int t = 0; t < p->k[v]; t++)
			if (w->xcol[v][t])
				last = t;
		for (int t = 0; t < last; t++) {
			if (!w->xcol[v][t])
				continue;
			nrows++;
			ilp_mat_add(a, nrows, w->xcol[v][t], -1.0);
			for (int s = 0; s < p->k[u]; s++) {
				int c = w->bcol[e][(size_t)s * p->k[v] + t];
				if (c)
					ilp_mat_add(a, nrows, c, 1.0);
			}
		}
	}
	if (w->has_limit && w->n_times > 0) {
		w->usage_row0 = nrows + 1;
		if (w->dense)
			ilp_dense_rows(w, p, a, &nrows);
		else
			ilp_usage_rows(w, p, a, &nrows);
	}
	w->nrows = nrows;
}

/* GLPK's problem from the columns and the rows in a. */
static void
ilp_load(sl_ilp *w, const sl_problem *p, struct ilp_mat *a)
{
	int nrows = w->nrows;

	w->lp = glp_create_prob();
	glp_set_obj_dir(w->lp, GLP_MIN);
	if (nrows > 0)
		glp_add_rows(w->lp, nrows);
	if (w->ncols > 0)
		glp_add_cols(w->lp, w->ncols);
	{
		int r = 0;
		for (int v = 0; v < p->n; v++)
			glp_set_row_bnds(w->lp, ++r, GLP_FX, 1.0, 1.0);
		while (r < nrows)
			glp_set_row_bnds(w->lp, ++r, GLP_FX, 0.0, 0.0);
	}
	w->cur_limit = (double)p->usage_limit;
	ilp_set_limit(w);
	for (int v = 0; v < p->n; v++)
		for (int s = 0; s < p->k[v]; s++)
			if (w->xcol[v][s])
				glp_set_col_kind(w->lp, w->xcol[v][s], GLP_BV);
	for (int e = 0; e < p->m; e++) {
		size_t cells = (size_t)p->k[p->edge[e][0]] * p->k[p->edge[e][1]];
		for (size_t i = 0; i < cells; i++)
			if (w->bcol[e][i])
				glp_set_col_bnds(w->lp, w->bcol[e][i], GLP_LO,
				    0.0, 0.0);
	}
	if (a->n > 0)
		glp_load_matrix(w->lp, (int)a->n, a->ia, a->ja, a->ar);
}

/* Adjacency (edge ids per node) for the rounding heuristic. */
static void
ilp_adjacency(sl_ilp *w, const sl_problem *p)
{
	int *fill = sl_xcalloc((size_t)p->n + 1, sizeof *fill);

	w->adj_start = sl_xcalloc((size_t)p->n + 1, sizeof *w->adj_start);
	w->adj_edge = sl_xmalloc(((size_t)2 * p->m + 1) * sizeof *w->adj_edge);
	for (int e = 0; e < p->m; e++) {
		w->adj_start[p->edge[e][0]]++;
		w->adj_start[p->edge[e][1]]++;
	}
	for (int v = 0, sum = 0; v <= p->n; v++) {
		int c = v < p->n ? w->adj_start[v] : 0;
		w->adj_start[v] = sum;
		sum += c;
	}
	for (int e = 0; e < p->m; e++)
		for (int j = 0; j < 2; j++) {
			int v = p->edge[e][j];
			w->adj_edge[w->adj_start[v] + fill[v]++] = e;
		}
	free(fill);
}

/*
 * Builds the model.  compact drops the columns of entries that are not
 * allowed or excluded (a cold solve); otherwise every entry has a column and
 * ilp_apply fixes the unavailable ones through their bounds (kept warm).
 */
static sl_ilp *
ilp_build(const sl_problem *p, bool compact, bool chain,
    const struct ilp_excl *ex, sl_error *err)
{
	sl_ilp *w;
	struct ilp_mat a = { 0 };

	if (!ilp_size_ok(p, compact, ex, err))
		return NULL;
	w = sl_xcalloc(1, sizeof *w);
	w->n = p->n;
	w->m = p->m;
	w->compact = compact;
	w->ex = *ex;
	w->k = sl_xmalloc(((size_t)p->n + 1) * sizeof *w->k);
	memcpy(w->k, p->k, (size_t)p->n * sizeof *w->k);
	w->edge = sl_xmalloc(((size_t)p->m + 1) * sizeof *w->edge);
	memcpy(w->edge, p->edge, (size_t)p->m * sizeof *w->edge);
	ilp_columns(w, p, compact, chain, ex);
	ilp_rows(w, p, &a);
	ilp_load(w, p, &a);
	free(a.ia);
	free(a.ja);
	free(a.ar);
	w->fixed = sl_xcalloc((size_t)w->ncols + 1, 1);
	w->obj = sl_xcalloc((size_t)w->ncols + 1, sizeof *w->obj);
	w->row_stat = sl_xmalloc(((size_t)w->nrows + 1) * sizeof *w->row_stat);
	w->col_stat = sl_xmalloc(((size_t)w->ncols + 1) * sizeof *w->col_stat);
	ilp_adjacency(w, p);
	return w;
}

static void
ilp_set_col(sl_ilp *w, int j, bool fix, double c, bool is_x, bool *bnd_changed,
    bool *obj_changed)
{
	if (j == 0)
		return;
	if (fix != (w->fixed[j] != 0)) {
		if (fix)
			glp_set_col_bnds(w->lp, j, GLP_FX, 0.0, 0.0);
		else if (is_x)
			glp_set_col_bnds(w->lp, j, GLP_DB, 0.0, 1.0);
		else
			glp_set_col_bnds(w->lp, j, GLP_LO, 0.0, 0.0);
		w->fixed[j] = fix;
		*bnd_changed = true;
	}
	if (c != w->obj[j]) {
		glp_set_obj_coef(w->lp, j, c);
		w->obj[j] = c;
		*obj_changed = true;
	}
}

/*
 * Loads p's allowed entries (as bounds) and costs (as objective
 * coefficients) into the model, excluding entries >= huge.  Reports which of
 * the two changed, so a re-solve can pick its simplex.
 */
static void
ilp_apply(sl_ilp *w, const sl_problem *p, const struct ilp_excl *ex,
    bool *bnd_changed,
    bool *obj_changed)
{
	w->ex = *ex;
	for (int v = 0; v < p->n; v++)
		for (int s = 0; s < p->k[v]; s++) {
			bool on = ilp_x_on(p, ex, v, s);
			ilp_set_col(w, w->xcol[v][s], !on,
			    on ? ilp_coef(ex, p->cost[v][s]) : 0.0, true,
			    bnd_changed, obj_changed);
		}
	for (int e = 0; e < p->m; e++) {
		int v = p->edge[e][1];
		size_t cells = (size_t)p->k[p->edge[e][0]] * p->k[v];
		for (size_t i = 0; i < cells; i++) {
			bool on = ilp_cell_on(ex, p->ecost[e][i]);
			ilp_set_col(w, w->bcol[e][i], !on,
			    on ? ilp_coef(ex, p->ecost[e][i]) : 0.0, false,
			    bnd_changed, obj_changed);
		}
	}
	if (w->has_limit && (double)p->usage_limit != w->cur_limit) {
		w->cur_limit = (double)p->usage_limit;
		ilp_set_limit(w);
		*bnd_changed = true;
	}
}

/* ------------------------------------------------- terminal output hook */

static int
ilp_term(void *info, const char *s)
{
	const sl_solve_opts *o = info;

	if (o != NULL && o->progress != NULL)
		o->progress(o->progress_ctx, s);
	return 1;		/* never on stdout */
}

/* ------------------------------------------------- rounding heuristic */

struct ilp_run {
	sl_ilp *w;
	const sl_problem *p;
	const sl_solve_opts *o;
	struct ilp_clock *clk;
	int *choice;		/* scratch */
	int64_t heur_best;
	int heur_calls;
	bool cancelled;
	bool timed_out;		/* stopped by the clock from the callback */
};

/*
 * Cost of node v taking strategy s with its neighbours as in choice, and in
 * *bad the number of its edges whose chosen cell is excluded from the model.
 * INT64_MAX when s itself is not available.
 */
static int64_t
ilp_local_cost(const struct ilp_run *r, int v, int s, int *bad)
{
	const sl_problem *p = r->p;
	const sl_ilp *w = r->w;
	int64_t c;

	*bad = 0;
	if (!ilp_x_on(p, &w->ex, v, s) || w->xcol[v][s] == 0 ||
	    w->fixed[w->xcol[v][s]])
		return INT64_MAX;
	c = p->cost[v][s];
	for (int i = w->adj_start[v]; i < w->adj_start[v + 1]; i++) {
		int e = w->adj_edge[i];
		int a = p->edge[e][0], b = p->edge[e][1];
		size_t cell = a == v ? (size_t)s * p->k[b] + r->choice[b] :
		    (size_t)r->choice[a] * p->k[b] + s;
		int64_t ec = p->ecost[e][cell];
		if (!ilp_cell_on(&w->ex, ec) || w->bcol[e][cell] == 0 ||
		    w->fixed[w->bcol[e][cell]])
			(*bad)++;
		else
			c = sl_add_sat(c, ec);
	}
	return c;
}

/* (bad, cost) pairs compare lexicographically. */
static bool
ilp_better(int bad1, int64_t c1, int bad0, int64_t c0)
{
	return bad1 < bad0 || (bad1 == bad0 && c1 < c0);
}

/*
 * Usage level over the time indices of a plan, as a segment tree with range
 * add and range max, so that a local move is checked in O(log T).
 */
struct ilp_prof {
	int size;
	int64_t *mx, *lz;	/* mx[i]: max below i, including lz[i] */
};

static void
ilp_seg_add(struct ilp_prof *t, int i, int nl, int nr, int l, int r,
    int64_t d)
{
	if (r <= nl || nr <= l)
		return;
	if (l <= nl && nr <= r) {
		t->mx[i] += d;
		t->lz[i] += d;
		return;
	}
	ilp_seg_add(t, 2 * i, nl, (nl + nr) / 2, l, r, d);
	ilp_seg_add(t, 2 * i + 1, (nl + nr) / 2, nr, l, r, d);
	t->mx[i] = (t->mx[2 * i] > t->mx[2 * i + 1] ? t->mx[2 * i] :
	    t->mx[2 * i + 1]) + t->lz[i];
}

static int64_t
ilp_seg_max(const struct ilp_prof *t, int i, int nl, int nr, int l, int r)
{
	int64_t a, b;

	if (r <= nl || nr <= l)
		return INT64_MIN / 4;
	if (l <= nl && nr <= r)
		return t->mx[i];
	a = ilp_seg_max(t, 2 * i, nl, (nl + nr) / 2, l, r);
	b = ilp_seg_max(t, 2 * i + 1, (nl + nr) / 2, nr, l, r);
	return (a > b ? a : b) + t->lz[i];
}

/* Index of a time of the highest level. */
static int
ilp_seg_argmax(const struct ilp_prof *t)
{
	int i = 1;

	while (i < t->size) {
		int64_t want = t->mx[i] - t->lz[i];
		i = t->mx[2 * i] == want ? 2 * i : 2 * i + 1;
	}
	return i - t->size;
}

static void
ilp_prof_free(struct ilp_prof *t)
{
	if (t == NULL)
		return;
	free(t->mx);
	free(t->lz);
	free(t);
}

/* The plan's profile, or NULL when the model has no usage limit. */
static struct ilp_prof *
ilp_profile(const struct ilp_run *r)
{
	const sl_problem *p = r->p;
	const sl_ilp *w = r->w;
	struct ilp_prof *t;
	int64_t *diff, lvl = 0;

	if (!w->has_limit || w->n_times == 0)
		return NULL;
	t = sl_xcalloc(1, sizeof *t);
	t->size = 1;
	while (t->size < w->n_times)
		t->size *= 2;
	t->mx = sl_xcalloc(2 * (size_t)t->size, sizeof *t->mx);
	t->lz = sl_xcalloc(2 * (size_t)t->size, sizeof *t->lz);
	diff = sl_xcalloc((size_t)w->n_times + 1, sizeof *diff);
	for (int v = 0; v < p->n; v++)
		if (w->ilo[v] < w->ihi[v]) {
			int64_t u = p->usage[v][r->choice[v]];
			diff[w->ilo[v]] = sl_add_sat(diff[w->ilo[v]], u);
			diff[w->ihi[v]] = sl_add_sat(diff[w->ihi[v]], -u);
		}
	for (int q = 0; q < t->size; q++) {
		if (q < w->n_times) {
			lvl = sl_add_sat(lvl, diff[q]);
			t->mx[t->size + q] = lvl;
		} else
			t->mx[t->size + q] = INT64_MIN / 4;
	}
	for (int i = t->size - 1; i >= 1; i--)
		t->mx[i] = t->mx[2 * i] > t->mx[2 * i + 1] ? t->mx[2 * i] :
		    t->mx[2 * i + 1];
	free(diff);
	return t;
}

/* Whether moving v to s keeps the plan within the limit; apply does it. */
static bool
ilp_move_fits(const struct ilp_run *r, struct ilp_prof *t, int v, int s,
    bool apply)
{
	const sl_problem *p = r->p;
	const sl_ilp *w = r->w;
	int64_t d;

	if (t == NULL || w->ilo[v] >= w->ihi[v])
		return true;
	d = p->usage[v][s] - p->usage[v][r->choice[v]];
	if (apply) {
		if (d != 0)
			ilp_seg_add(t, 1, 0, t->size, w->ilo[v], w->ihi[v], d);
		return true;
	}
	return d <= 0 || ilp_seg_max(t, 1, 0, t->size, w->ilo[v], w->ihi[v]) +
	    d <= p->usage_limit;
}

/*
 * Brings a plan within the usage limit: at the most loaded time, switch the
 * live node whose cheaper-in-memory strategy costs least per byte saved.
 * Returns false when it gets stuck.
 */
static bool
ilp_repair(struct ilp_run *r, struct ilp_prof *prof)
{
	const sl_problem *p = r->p;
	const sl_ilp *w = r->w;

	for (int iter = 0; iter < 20000; iter++) {
		int q, bv = -1, bs = -1;
		double best = 0;

		if (prof->mx[1] <= p->usage_limit)
			return true;
		q = ilp_seg_argmax(prof);
		for (int v = 0; v < p->n; v++) {
			int cur = r->choice[v], bad0;
			int64_t c0;
			if (w->ilo[v] > q || q >= w->ihi[v])
				continue;
			c0 = ilp_local_cost(r, v, cur, &bad0);
			for (int s = 0; s < p->k[v]; s++) {
				int64_t drop = p->usage[v][cur] - p->usage[v][s];
				int64_t c;
				double ratio;
				int bad;
				if (drop <= 0)
					continue;
				c = ilp_local_cost(r, v, s, &bad);
				if (c == INT64_MAX || bad > bad0)
					continue;
				ratio = bad < bad0 ? -1e300 :
				    ((double)c - (double)c0) / (double)drop;
				if (bv < 0 || ratio < best) {
					best = ratio;
					bv = v;
					bs = s;
				}
			}
		}
		if (bv < 0)
			return false;
		ilp_move_fits(r, prof, bv, bs, true);
		r->choice[bv] = bs;
	}
	return false;
}

/* Best-response passes (iterated conditional modes) within the limit. */
static void
ilp_icm(struct ilp_run *r, struct ilp_prof *prof)
{
	const sl_problem *p = r->p;
	bool improved = true;

	for (int pass = 0; improved && pass < 50; pass++) {
		improved = false;
		for (int v = 0; v < p->n; v++) {
			int cur = r->choice[v], bs = cur, bb, bad;
			int64_t bc = ilp_local_cost(r, v, cur, &bb);
			for (int s = 0; s < p->k[v]; s++) {
				int64_t c;
				if (s == cur)
					continue;
				c = ilp_local_cost(r, v, s, &bad);
				if (c != INT64_MAX && ilp_better(bad, c, bb, bc) &&
				    ilp_move_fits(r, prof, v, s, false)) {
					bc = c;
					bb = bad;
					bs = s;
				}
			}
			if (bs != cur) {
				ilp_move_fits(r, prof, v, bs, true);
				r->choice[v] = bs;
				improved = true;
			}
		}
	}
}

/* Best responses, repair into the limit, best responses within it. */
static int64_t
ilp_polish(struct ilp_run *r)
{
	const sl_problem *p = r->p;
	struct ilp_prof *prof;

	ilp_icm(r, NULL);
	prof = ilp_profile(r);
	if (prof != NULL) {
		if (!ilp_repair(r, prof)) {
			ilp_prof_free(prof);
			return INT64_MAX;
		}
		ilp_icm(r, prof);
	}
	ilp_prof_free(prof);
	for (int v = 0; v < p->n; v++) {
		int bad;
		if (ilp_local_cost(r, v, r->choice[v], &bad) == INT64_MAX ||
		    bad > 0)
			return INT64_MAX;
	}
	if (!sl_problem_feasible(p, r->choice))
		return INT64_MAX;
	return sl_problem_score(p, r->choice);
}

/*
 * Greedy construction in node order: each node takes the strategy cheapest
 * with its already placed neighbours (fewest excluded cells first), which
 * follows chains of "must match" edges that single moves cannot repair.
 */
static bool
ilp_greedy(struct ilp_run *r)
{
	const sl_problem *p = r->p;
	const sl_ilp *w = r->w;
	uint8_t *placed = sl_xcalloc((size_t)p->n + 1, 1);
	bool ok = true;

	for (int v = 0; v < p->n && ok; v++) {
		int bs = -1, bb = 0;
		int64_t bc = 0;
		for (int s = 0; s < p->k[v]; s++) {
			int bad = 0;
			int64_t c;
			int j = w->xcol[v][s];
			if (j == 0 || w->fixed[j] || !ilp_x_on(p, &w->ex, v, s))
				continue;
			c = p->cost[v][s];
			for (int i = w->adj_start[v]; i < w->adj_start[v + 1]; i++) {
				int e = w->adj_edge[i];
				int a = p->edge[e][0], b = p->edge[e][1];
				int o = a == v ? b : a;
				size_t cell;
				if (!placed[o])
					continue;
				cell = a == v ? (size_t)s * p->k[b] + r->choice[b] :
				    (size_t)r->choice[a] * p->k[b] + s;
				if (!ilp_cell_on(&w->ex, p->ecost[e][cell]) ||
				    w->bcol[e][cell] == 0 || w->fixed[w->bcol[e][cell]])
					bad++;
				else
					c = sl_add_sat(c, p->ecost[e][cell]);
			}
			if (bs < 0 || ilp_better(bad, c, bb, bc)) {
				bs = s;
				bb = bad;
				bc = c;
			}
		}
		if (bs < 0)
			ok = false;
		else {
			r->choice[v] = bs;
			placed[v] = 1;
		}
	}
	free(placed);
	return ok;
}

/*
 * Two candidate plans, polished: the LP point rounded to its largest X per
 * node, and the greedy construction.  Leaves the better in r->choice and
 * returns its score, or INT64_MAX when neither is a plan of the model.
 */
static int64_t
ilp_round(struct ilp_run *r, glp_prob *lp)
{
	const sl_problem *p = r->p;
	sl_ilp *w = r->w;
	int64_t best = INT64_MAX, sc;
	int *keep = sl_xmalloc(((size_t)p->n + 1) * sizeof *keep);
	bool rounded = true;

	for (int v = 0; v < p->n && rounded; v++) {
		double bx = -1;
		r->choice[v] = -1;
		for (int s = 0; s < p->k[v]; s++) {
			int j = w->xcol[v][s];
			double x;
			if (j == 0 || w->fixed[j])
				continue;
			x = glp_get_col_prim(lp, j);
			if (x > bx) {
				bx = x;
				r->choice[v] = s;
			}
		}
		if (r->choice[v] < 0)
			rounded = false;
	}
	if (rounded && (sc = ilp_polish(r)) < best) {
		best = sc;
		memcpy(keep, r->choice, (size_t)p->n * sizeof *keep);
	}
	if (ilp_greedy(r) && (sc = ilp_polish(r)) < best) {
		best = sc;
		memcpy(keep, r->choice, (size_t)p->n * sizeof *keep);
	}
	if (best != INT64_MAX)
		memcpy(r->choice, keep, (size_t)p->n * sizeof *keep);
	free(keep);
	return best;
}

/* Column values of a plan: X and the chosen cell of every edge. */
static double *
ilp_plan_vector(const struct ilp_run *r)
{
	const sl_problem *p = r->p;
	const sl_ilp *w = r->w;
	double *x = sl_xcalloc((size_t)w->ncols + 1, sizeof *x);

	for (int v = 0; v < p->n; v++)
		x[w->xcol[v][r->choice[v]]] = 1.0;
	for (int e = 0; e < p->m; e++) {
		int a = p->edge[e][0], b = p->edge[e][1];
		x[w->bcol[e][(size_t)r->choice[a] * p->k[b] + r->choice[b]]] = 1.0;
	}
	if (w->has_limit && !w->dense && w->n_times > 0) {
		/* the chain's levels */
		double *d = sl_xcalloc((size_t)w->n_times + 1, sizeof *d), l = 0;
		for (int v = 0; v < p->n; v++)
			if (w->ilo[v] < w->ihi[v]) {
				d[w->ilo[v]] += (double)p->usage[v][r->choice[v]];
				d[w->ihi[v]] -= (double)p->usage[v][r->choice[v]];
			}
		for (int q = 0; q < w->n_times; q++) {
			l += d[q];
			x[w->lcol0 + q] = l;
		}
		free(d);
	}
	return x;
}

static void
ilp_callback(glp_tree *T, void *info)
{
	struct ilp_run *r = info;

	if (sl_run_cancelled(&r->clk->run)) {
		r->cancelled = true;
		glp_ios_terminate(T);
		return;
	}
	if (ilp_out_of_time(r->clk)) {
		/* GLPK polls tm_lim rarely on large trees */
		r->timed_out = true;
		glp_ios_terminate(T);
		return;
	}
	if (glp_ios_reason(T) == GLP_IHEUR) {
		int64_t sc;
		/* At the root, then now and then: rounding is cheap but not free. */
		if (r->heur_calls++ % 25 != 0)
			return;
		sc = ilp_round(r, glp_ios_get_prob(T));
		if (sc < r->heur_best) {
			double *x = ilp_plan_vector(r);
			r->heur_best = sc;
			glp_ios_heur_sol(T, x);
			free(x);
		}
	}
}

/* ------------------------------------------------------------ solving */

static void
ilp_read_choice(const sl_ilp *w, const sl_problem *p, bool mip, int *choice)
{
	for (int v = 0; v < p->n; v++) {
		double best = -1;
		choice[v] = 0;
		for (int s = 0; s < p->k[v]; s++) {
			int j = w->xcol[v][s];
			double x;
			if (j == 0)
				continue;
			x = mip ? glp_mip_col_val(w->lp, j) :
			    glp_get_col_prim(w->lp, j);
			if (x > best) {
				best = x;
				choice[v] = s;
			}
		}
	}
}

static bool
ilp_x_integral(const sl_ilp *w, const sl_problem *p)
{
	for (int v = 0; v < p->n; v++)
		for (int s = 0; s < p->k[v]; s++) {
			int j = w->xcol[v][s];
			double x;
			if (j == 0)
				continue;
			x = glp_get_col_prim(w->lp, j);
			if (x > 1e-6 && x < 1 - 1e-6)
				return false;
		}
	return true;
}

static void
ilp_save_basis(sl_ilp *w)
{
	for (int i = 1; i <= w->nrows; i++)
		w->row_stat[i] = glp_get_row_stat(w->lp, i);
	for (int j = 1; j <= w->ncols; j++)
		w->col_stat[j] = glp_get_col_stat(w->lp, j);
}

static void
ilp_restore_basis(sl_ilp *w)
{
	for (int i = 1; i <= w->nrows; i++)
		glp_set_row_stat(w->lp, i, w->row_stat[i]);
	for (int j = 1; j <= w->ncols; j++)
		glp_set_col_stat(w->lp, j, w->col_stat[j]);
}

/*
 * The time ran out before the LP did: round its current point and improve it
 * locally, so a time-limited solve still returns a plan when one is at hand.
 */
static void
ilp_fallback_why(struct ilp_run *r, sl_solution *sol, const char *why)
{
	int64_t sc;

	sol->status = SL_SOLVE_LIMIT;
	r->choice = sl_xmalloc(((size_t)r->p->n + 1) * sizeof *r->choice);
	sc = ilp_round(r, r->w->lp);
	if (sc != INT64_MAX) {
		memcpy(sol->choice, r->choice, (size_t)r->p->n * sizeof *r->choice);
		sol->objective = sc;
		sol->status = SL_SOLVE_FEASIBLE;
		snprintf(sol->note, sizeof sol->note, "%s", why);
	}
	free(r->choice);
	r->choice = NULL;
}

static void
ilp_fallback(struct ilp_run *r, sl_solution *sol)
{
	ilp_fallback_why(r, sol, _("time limit before the LP relaxation was "
	    "solved; plan rounded from it"));
}

/*
 * The LP relaxation, in chunks of simplex iterations polling the clock and
 * the cancel when there is a limit or a cancel to poll.  True when it is
 * optimal (the basis valid); otherwise sol and *rc say how it ended: a plan
 * rounded at the limit, cancelled, infeasible, or GLPK's failure.
 */
static bool
ilp_relax(struct ilp_run *r, int meth, bool presolve, int msg_lev,
    sl_solution *sol, int *rc, sl_error *err)
{
	sl_ilp *w = r->w;
	struct ilp_clock *clk = r->clk;
	bool chunked = clk->run.cancel != NULL || clk->run.stop != NULL ||
	    ilp_limit_ms(clk) < INFINITY;
	bool retried = false;
	int ret, st;
	glp_smcp sp;

	glp_init_smcp(&sp);
	sp.msg_lev = msg_lev;
	sp.meth = meth;
	sp.presolve = (presolve && !chunked) ? GLP_ON : GLP_OFF;
	/* A model never solved gets a crash basis; later ones keep theirs. */
	/* (the crash basis is not worth its time when the limit is near) */
	if (sp.presolve == GLP_OFF && !w->has_basis &&
	    ilp_elapsed_ms(clk) < ilp_limit_ms(clk) / 2)
		glp_adv_basis(w->lp, 0);
	w->has_basis = true;
	w->basis_valid = false;
	for (;;) {
		if (chunked && sl_run_cancelled(&clk->run)) {
			sol->status = SL_SOLVE_CANCELLED;
			return false;
		}
		sp.tm_lim = ilp_remaining_ms(clk);
		sp.it_lim = chunked ? ILP_CHUNK_ITERS : INT_MAX;
		if (ilp_no_time_for_simplex(clk)) {
			ilp_fallback(r, sol);
			return false;
		}
		ret = glp_simplex(w->lp, &sp);
		if (ret == GLP_EITLIM) {
			if (ilp_out_of_time(clk)) {
				ilp_fallback(r, sol);
				return false;
			}
			continue;
		}
		if ((ret == GLP_EBADB || ret == GLP_ESING || ret == GLP_ECOND ||
		    ret == GLP_EFAIL) && !retried) {
			/* The kept basis is unusable, or the simplex lost its way
			 * from it (numerically): start afresh once. */
			retried = true;
			glp_adv_basis(w->lp, 0);
			continue;
		}
		break;
	}
	switch (ret) {
	case 0:
		break;
	case GLP_ETMLIM:
		ilp_fallback(r, sol);
		return false;
	case GLP_EFAIL:
		/* failed twice: a plan rounded from where it stopped, if any */
		ilp_fallback_why(r, sol, _("the simplex method failed "
		    "numerically; plan rounded from its last basis"));
		if (sol->status == SL_SOLVE_FEASIBLE)
			return false;
		*rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("ilp: the simplex method failed (GLPK code %d)"), ret);
		return false;
	case GLP_ENOPFS:
	case GLP_ENODFS:	/* the LP is bounded: no dual solution = infeasible */
		sol->status = SL_SOLVE_INFEASIBLE;
		return false;
	default:
		*rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("ilp: the simplex method failed (GLPK code %d)"), ret);
		return false;
	}
	st = glp_get_status(w->lp);
	if (st == GLP_NOFEAS) {
		sol->status = SL_SOLVE_INFEASIBLE;
		return false;
	}
	if (st != GLP_OPT) {
		*rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("ilp: the LP relaxation ended with GLPK status %d"), st);
		return false;
	}
	w->basis_valid = true;
	return true;
}

/*
 * Branch and bound from the relaxation (its basis kept for the next
 * re-solve).  True when sol has a plan to read off the model (optimal or
 * feasible); otherwise sol and *rc say how it ended.
 */
static bool
ilp_branch(struct ilp_run *r, int msg_lev, sl_solution *sol, int *rc,
    sl_error *err)
{
	sl_ilp *w = r->w;
	glp_iocp ip;
	int ret, mst;

	ilp_save_basis(w);
	glp_init_iocp(&ip);
	ip.msg_lev = msg_lev;
	ip.presolve = GLP_OFF;
	ip.tm_lim = ilp_remaining_ms(r->clk);
	ip.cb_func = ilp_callback;
	ip.cb_info = r;
	ip.mip_gap = 0.0;
	r->choice = sl_xmalloc(((size_t)r->p->n + 1) * sizeof *r->choice);
	ret = glp_intopt(w->lp, &ip);
	free(r->choice);
	mst = glp_mip_status(w->lp);
	ilp_restore_basis(w);
	switch (ret) {
	case 0:
		if (mst == GLP_OPT)
			sol->status = SL_SOLVE_OPTIMAL;
		else if (mst == GLP_NOFEAS) {
			sol->status = SL_SOLVE_INFEASIBLE;
			return false;
		} else if (mst == GLP_FEAS)
			sol->status = SL_SOLVE_FEASIBLE;
		else {
			*rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
			    _("ilp: branch and bound ended with GLPK status %d"),
			    mst);
			return false;
		}
		return true;
	case GLP_ETMLIM:
	case GLP_ESTOP:
		if (r->cancelled)
			sol->status = SL_SOLVE_CANCELLED;
		else
			sol->status = mst == GLP_FEAS ?
			    SL_SOLVE_FEASIBLE : SL_SOLVE_LIMIT;
		return mst == GLP_FEAS || mst == GLP_OPT;
	case GLP_ENOPFS:
		sol->status = SL_SOLVE_INFEASIBLE;
		return false;
	case GLP_EFAIL:
		/*
		 * A node's LP failed (seen when the time ran out in it on a
		 * loaded machine): the incumbent is still a plan, and without
		 * one the relaxation is rounded as at the time limit.
		 */
		if (mst == GLP_FEAS) {
			sol->status = SL_SOLVE_FEASIBLE;
			snprintf(sol->note, sizeof sol->note,
			    _("branch and bound stopped (GLPK code %d); the best plan found is kept"),
			    ret);
			return true;
		}
		if (ilp_out_of_time(r->clk)) {
			ilp_fallback(r, sol);
			return false;
		}
		/* FALLTHROUGH */
	default:
		*rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("ilp: branch and bound failed (GLPK code %d)"), ret);
		return false;
	}
}

/*
 * Solves the model as loaded.  meth: GLP_PRIMAL, or GLP_DUALP after bound
 * changes from an optimal basis; presolve only where nothing is kept.
 * Fills sol (status, choice, objective) and returns SL_OK, or an error code.
 */
static int
ilp_run_model(sl_ilp *w, const sl_problem *p, const sl_solve_opts *o,
    struct ilp_clock *clk, int meth, bool presolve, sl_solution *sol,
    sl_error *err)
{
	struct ilp_run r = { .w = w, .p = p, .o = o, .clk = clk,
	    .heur_best = INT64_MAX };
	bool mip = false;
	int rc = SL_OK, msg_lev;

	if (w->ncols == 0 || w->nrows == 0) {
		/* Nothing for GLPK to do (GLPK refuses empty problems). */
		sol->status = SL_SOLVE_INFEASIBLE;
		return SL_OK;
	}
	msg_lev = (o != NULL && o->progress != NULL) ? GLP_MSG_ON : GLP_MSG_ERR;
	if (!ilp_relax(&r, meth, presolve, msg_lev, sol, &rc, err))
		return rc;
	if (!ilp_x_integral(w, p)) {
		mip = true;
		if (!ilp_branch(&r, msg_lev, sol, &rc, err))
			return rc;
	} else
		sol->status = SL_SOLVE_OPTIMAL;
	ilp_read_choice(w, p, mip, sol->choice);
	sol->objective = sl_problem_score(p, sol->choice);
	if (sol->objective == INT64_MAX || !sl_problem_feasible(p, sol->choice))
		rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
		    _("ilp: GLPK's solution does not round to a feasible plan"));
	return rc;
}

static bool
ilp_some_node_empty(const sl_problem *p)
{
	for (int v = 0; v < p->n; v++) {
		bool any = false;
		for (int s = 0; s < p->k[v]; s++)
			if (p->allowed[v][s])
				any = true;
		if (!any)
			return true;
	}
	return false;
}

static void
ilp_sol_prepare(const sl_problem *p, sl_solution *sol)
{
	if (sol->choice == NULL || sol->n != p->n) {
		free(sol->choice);
		sol->n = p->n;
		sol->choice = sl_xcalloc((size_t)(p->n > 0 ? p->n : 1),
		    sizeof *sol->choice);
	}
	sol->objective = INT64_MAX;
	sol->status = SL_SOLVE_FAILED;
	sol->solver = SL_SOLVER_ILP;
	sol->confirmed = false;
}

/*
 * GLPK is stopped at ILP_LIMIT_SHARE of the limit: what follows (reading or
 * rounding a plan, freeing the model) must fit in the rest, so that a solve
 * ends within 10% of its limit.
 */
#define ILP_LIMIT_SHARE 0.9

static void
ilp_clock_start(struct ilp_clock *c, const sl_run *run)
{
	sl_run_within(&c->run, run, -1);
	sl_run_shrink(&c->run, ILP_LIMIT_SHARE, 0);
	c->setup_ms = 0;
}

/*
 * Scales the model, unless the limit is tight: scaling a large model takes
 * longer than building it, and under a tight limit that time is better left
 * to the simplex.
 */
static void
ilp_scale(sl_ilp *w, struct ilp_clock *clk, double build_ms)
{
	clk->setup_ms = build_ms;
	if (build_ms < ilp_limit_ms(clk) / 20)
		glp_scale_prob(w->lp, GLP_SF_AUTO);
}

/* Trivial cases GLPK cannot take: no nodes, or a node with nothing allowed. */
static bool
ilp_trivial(const sl_problem *p, sl_solution *sol)
{
	if (p->n == 0) {
		sol->status = SL_SOLVE_OPTIMAL;
		sol->objective = 0;
		return true;
	}
	if (ilp_some_node_empty(p)) {
		sol->status = SL_SOLVE_INFEASIBLE;
		return true;
	}
	return false;
}

int
sl_solve_ilp(const sl_problem *p, const sl_solve_opts *o, sl_solution *sol,
    sl_error *err)
{
	sl_run run;

	sl_run_start(&run, o);
	return sl_run_ilp(p, o, &run, sol, err);
}

int
sl_run_ilp(const sl_problem *p, const sl_solve_opts *o, sl_run *run,
    sl_solution *sol, sl_error *err)
{
	struct ilp_clock clk;
	int64_t huge;
	sl_ilp *w;
	int rc;

	ilp_clock_start(&clk, run);
	if ((rc = ilp_check_problem(p, err)) != SL_OK)
		return rc;
	ilp_sol_prepare(p, sol);
	if (ilp_trivial(p, sol))
		goto done;
	huge = ilp_huge_threshold(p);
	glp_term_hook(ilp_term, (void *)o);
	for (bool penalize = false;; penalize = true) {
		struct ilp_excl ex = ilp_excl_make(p, huge, penalize);
		bool b = false, c = false;
		double t0 = ilp_elapsed_ms(&clk);
		if ((w = ilp_build(p, true, o != NULL && o->usage_chain, &ex,
		    err)) == NULL) {
			rc = err != NULL ? err->code : SL_EINPUT;
			break;
		}
		ilp_apply(w, p, &ex, &b, &c);
		ilp_scale(w, &clk, ilp_elapsed_ms(&clk) - t0);
		if (ilp_out_of_time(&clk)) {
			/* the limit came while the model was being built */
			sol->status = SL_SOLVE_LIMIT;
			ilp_free_model(w);
			break;
		}
		rc = ilp_run_model(w, p, o, &clk, GLP_PRIMAL, false, sol, err);
		ilp_free_model(w);
		/* Excluding huge entries left no plan: penalise them instead. */
		if (rc == SL_OK && sol->status == SL_SOLVE_INFEASIBLE &&
		    huge != INT64_MAX && !penalize)
			continue;
		break;
	}
	glp_term_hook(NULL, NULL);
	if (rc != SL_OK)
		return rc;
done:
	sol->time_ms = ilp_elapsed_ms(&clk);
	return SL_OK;
}

/* ------------------------------------------------------------ kept warm */

sl_ilp *
sl_ilp_new(const sl_problem *p, const sl_solve_opts *o, sl_error *err)
{
	sl_ilp *w;

	if (ilp_check_problem(p, err) != SL_OK)
		return NULL;
	{
		struct ilp_excl none = { INT64_MAX, false, 1.0, INT64_MAX };
		w = ilp_build(p, false, o != NULL && o->usage_chain, &none,
		    err);
	}
	if (w == NULL)
		return NULL;
	/* Every column starts free with a zero objective; ilp_apply loads p. */
	glp_term_hook(ilp_term, NULL);
	glp_scale_prob(w->lp, GLP_SF_AUTO);
	glp_term_hook(NULL, NULL);
	return w;
}

int
sl_ilp_resolve(sl_ilp *w, const sl_problem *p, const sl_solve_opts *o,
    sl_solution *sol, sl_error *err)
{
	struct ilp_clock clk;
	sl_run run;
	int64_t huge;
	int rc;

	sl_run_start(&run, o);
	ilp_clock_start(&clk, &run);
	if (w == NULL)
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
		    _("ilp: no model to re-solve"));
	if ((rc = ilp_check_problem(p, err)) != SL_OK)
		return rc;
	if (p->n != w->n || p->m != w->m ||
	    memcmp(p->k, w->k, (size_t)p->n * sizeof *p->k) != 0 ||
	    memcmp(p->edge, w->edge, (size_t)p->m * sizeof *p->edge) != 0 ||
	    (p->usage_limit >= 0) != w->has_limit)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("ilp: the problem's structure changed; build a new model"));
	ilp_sol_prepare(p, sol);
	if (ilp_trivial(p, sol))
		goto done;
	huge = ilp_huge_threshold(p);
	glp_term_hook(ilp_term, (void *)o);
	for (bool penalize = false;; penalize = true) {
		struct ilp_excl ex = ilp_excl_make(p, huge, penalize);
		bool bnd = false, obj = false;
		int meth;
		ilp_apply(w, p, &ex, &bnd, &obj);
		/* Bounds moved, costs kept: the basis stays dual feasible. */
		meth = (w->basis_valid && bnd && !obj) ? GLP_DUALP : GLP_PRIMAL;
		rc = ilp_run_model(w, p, o, &clk, meth, false, sol, err);
		if (rc == SL_OK && sol->status == SL_SOLVE_INFEASIBLE &&
		    huge != INT64_MAX && !penalize)
			continue;
		break;
	}
	glp_term_hook(NULL, NULL);
	if (rc != SL_OK)
		return rc;
done:
	sol->time_ms = ilp_elapsed_ms(&clk);
	return SL_OK;
}

void
sl_ilp_free(sl_ilp *w)
{
	ilp_free_model(w);
}

void
sl_ilp_quiet(void)
{
	glp_term_out(GLP_OFF);
}

void
sl_ilp_thread_end(void)
{
	glp_free_env();
}
