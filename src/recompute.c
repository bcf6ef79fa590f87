/*
 * recompute.c: recomputation chosen per layer (--recompute auto).  Full
 * recomputation of a layer keeps only its input and runs its forward again
 * in backward; the solvers price that forward time in the objective (space.c
 * node_tables).  auto recomputes the fewest layers for the plan to fit the
 * device memory: fewer recomputed layers never need less memory, so the
 * count is found by bisection over exact solves; among the layer sets of
 * that size (all of them for small models, the first layers otherwise,
 * which are interchangeable when the layers repeat) the best objective wins.
 */
#include "internal.h"

#include <stdlib.h>

/* Layer l fully recomputed where full[l], the others not at all. */
static void
set_layers(sl_space *s, const uint8_t *full)
{
	uint8_t *modes = sl_xmalloc(s->g->n_layers + 1);

	for (int l = 0; l < s->g->n_layers; l++)
		modes[l] = full[l] ? SL_RECOMP_FULL : SL_RECOMP_NONE;
	sl_space_set_layers_recompute(s, modes);
	free(modes);
}

typedef struct rc_try {
	bool ok;		/* solved */
	bool fits;
	int64_t objective, max_total;
} rc_try;

/* One problem and, for the DP, one live solver kept across the tries: a
 * try changes some layers' costs, and the folded DP recomputes only those. */
typedef struct rc_solver {
	sl_space *s;
	double alpha;
	int64_t capacity;
	sl_solver_kind kind;
	const sl_solve_opts *o;
	sl_problem *p;		/* the caller's, re-weighed in place */
	bool first;
	sl_dp *d;
} rc_solver;

/*
 * Memory of device 0, which holds the largest shard of every tensor and so
 * is the largest device: the space's own node and edge tables (what
 * sl_evaluate's max_total comes to, without walking every device).
 */
static int64_t
device0_total(const sl_space *s, const int *choice)
{
	int64_t t = 0;

	for (int v = 0; v < s->g->n_ops; v++)
		t = sl_add_sat(t, s->node_mem[v][choice[v]]);
	for (int e = 0; e < s->n_edges; e++) {
		const sl_space_edge *se = &s->edges[e];
		t = sl_add_sat(t, s->edge_mem[e][choice[se->src] *
		    s->ops[se->dst].n_strat + choice[se->dst]]);
	}
	return t;
}

/*
 * A lower bound on device 0's memory with the current layer settings: every
 * operator's least node memory among its allowed strategies (edges add
 * nothing below zero).
 */
static int64_t
memory_bound(const sl_space *s, const sl_problem *p)
{
	int64_t b = 0;

	for (int v = 0; v < s->g->n_ops; v++) {
		int64_t m = INT64_MAX;
		for (int k = 0; k < s->ops[v].n_strat; k++)
			if (p->allowed[v][k] && s->node_mem[v][k] < m)
				m = s->node_mem[v][k];
		if (m != INT64_MAX)
			b = sl_add_sat(b, m);
	}
	return b;
}

/* Solves with the current layer settings; *sol gets the plan. */
static int
try_solve(rc_solver *r, sl_solution *sol, rc_try *t, sl_error *err)
{
	int rc;

	memset(t, 0, sizeof *t);
	if (r->first) {
		r->first = false;
		if (r->kind == SL_SOLVER_DP || r->kind == SL_SOLVER_AUTO) {
			sl_error e2;
			sl_error_clear(&e2);
			r->d = sl_dp_new(r->p, r->o, &e2); /* NULL: not exact cheaply */
		}
	} else {
		sl_space_reweigh_nodes(r->s, r->alpha, r->p);
	}
	sl_solution_free(sol);
	sl_solution_init(sol, r->p->n);
	rc = r->d != NULL ? sl_dp_resolve(r->d, r->p, r->o, sol, err) :
	    sl_solve(r->p, r->kind, r->o, sol, err);
	if (rc != SL_OK)
		return rc;
	if (sol->status != SL_SOLVE_OPTIMAL && sol->status != SL_SOLVE_FEASIBLE)
		return SL_OK;
	t->ok = true;
	t->objective = sol->objective;
	t->max_total = device0_total(r->s, sol->choice);
	t->fits = r->capacity <= 0 || t->max_total <= r->capacity;
	return SL_OK;
}

/* First r layers recomputed. */
static void
first_layers(uint8_t *full, int n, int r)
{
	for (int l = 0; l < n; l++)
		full[l] = l < r;
}

/* Next set of the same size (ones moving right); false after the last. */
static bool
next_subset(uint8_t *f, int n)
{
	int i, ones = 0;

	for (i = n - 2; i >= 0; i--)
		if (f[i] && !f[i + 1])
			break;
	if (i < 0)
		return false;
	for (int j = i + 2; j < n; j++)
		ones += f[j];
	f[i] = 0;
	f[i + 1] = 1;
	for (int j = i + 2; j < n; j++)
		f[j] = (j - (i + 2)) < ones;
	return true;
}

int
sl_recompute_auto(sl_space *s, sl_problem *p, double alpha, int64_t capacity,
    sl_solver_kind kind, const sl_solve_opts *o, sl_recompute_choice *out,
    sl_error *err)
{
	int n = s->g->n_layers, lo, hi, rc, guess;
	int64_t m0;
	uint8_t *full = sl_xcalloc(n + 1, 1), *best = sl_xcalloc(n + 1, 1);
	sl_solution sol;
	rc_try t, bt;
	rc_solver r = { s, alpha, capacity, kind, o, p, true, NULL };

	memset(out, 0, sizeof *out);
	out->n_layers = n;
	memset(&bt, 0, sizeof bt);
	sl_solution_init(&sol, s->g->n_ops);
	/* none recomputed: fits already?  A bound says no without a solve. */
	first_layers(full, n, 0);
	set_layers(s, full);
	m0 = memory_bound(s, p);
	if (n == 0 || capacity <= 0 || m0 <= capacity) {
		if ((rc = try_solve(&r, &sol, &t, err)) != SL_OK)
			goto out;
		out->max_total = t.max_total;
		if ((t.ok && t.fits) || n == 0) {
			out->fits = t.ok && t.fits;
			goto out;
		}
		m0 = t.max_total;
	}
	/* all recomputed: the least this can do */
	first_layers(full, n, n);
	set_layers(s, full);
	if ((rc = try_solve(&r, &sol, &t, err)) != SL_OK)
		goto out;
	if (!t.ok || !t.fits) {
		out->n_recomputed = n;
		out->max_total = t.max_total;
		goto out;
	}
	bt = t;
	/* fits(hi), not fits(lo); memory falls about linearly with the count,
	 * so the first probe is where the line crosses the capacity and the
	 * second its neighbour, then bisection */
	lo = 0;
	hi = n;
	guess = m0 > t.max_total ? (int)((double)n * (double)(m0 - capacity) /
	    (double)(m0 - t.max_total) + 0.999) : n / 2;
	while (hi - lo > 1) {
		int mid = guess > lo && guess < hi ? guess : lo + (hi - lo) / 2;
		first_layers(full, n, mid);
		set_layers(s, full);
		if ((rc = try_solve(&r, &sol, &t, err)) != SL_OK)
			goto out;
		if (t.ok && t.fits) {
			hi = mid;
			bt = t;
			guess = mid - 1;
		} else {
			lo = mid;
			guess = mid + 1;
		}
	}
	/* hi layers: which ones?  Every set of that size on small models; on
	 * larger ones the first layers, solved last in the loop above. */
	first_layers(best, n, hi);
	if (n <= SL_RECOMPUTE_EXHAUSTIVE) {
		first_layers(full, n, hi);
		memset(&bt, 0, sizeof bt);
		do {
			set_layers(s, full);
			if ((rc = try_solve(&r, &sol, &t, err)) != SL_OK)
				goto out;
			if (t.ok && t.fits && (!bt.ok || t.objective < bt.objective)) {
				bt = t;
				memcpy(best, full, n);
			}
		} while (next_subset(full, n));
	}
	memcpy(full, best, n);
	out->n_recomputed = hi;
	out->fits = bt.fits;
	out->max_total = bt.max_total;
out:
	if (rc == SL_OK)
		set_layers(s, full);
	sl_solution_free(&sol);
	sl_dp_free(r.d);
	sl_space_reweigh_nodes(s, alpha, p);
	free(full);
	free(best);
	return rc;
}
