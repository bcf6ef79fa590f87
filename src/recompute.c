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
#include <string.h>

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

/* One try: the plan under the limit at the current layer settings. */
typedef struct rc_try {
	bool fits;
	int64_t objective, mem;
} rc_try;

static int
try_fit(const sl_rc_probe *pr, int n_ops, rc_try *t, sl_error *err)
{
	sl_fit f;
	int rc;

	memset(&f, 0, sizeof f);
	sl_solution_init(&f.sol, n_ops);
	rc = pr->fit(pr->ctx, &f, err);
	t->fits = rc == SL_OK && f.fits && (f.sol.status == SL_SOLVE_OPTIMAL ||
	    f.sol.status == SL_SOLVE_FEASIBLE);
	t->objective = f.sol.objective;
	t->mem = f.mem;
	sl_solution_free(&f.sol);	/* all that an sl_fit owns */
	return rc;
}

int
sl_recompute_choose(sl_space *s, const sl_rc_probe *pr, int64_t limit,
    sl_fit *out, sl_error *err)
{
	int n = s->g->n_layers, n_ops = s->g->n_ops, lo, hi, rc, guess;
	int64_t m0;
	uint8_t *full = sl_xcalloc(n + 1, 1), *best = sl_xcalloc(n + 1, 1);
	rc_try t, bt;

	memset(&bt, 0, sizeof bt);
	out->n_layers = n;
	/* none recomputed: fits already?  A bound says no without a solve. */
	first_layers(full, n, 0);
	set_layers(s, full);
	m0 = pr->bound != NULL ? pr->bound(pr->ctx) : 0;
	if (n == 0 || limit <= 0 || m0 <= limit) {
		if ((rc = try_fit(pr, n_ops, &t, err)) != SL_OK)
			goto out;
		if (t.fits || n == 0)
			goto out;
		m0 = t.mem;
	}
	/* all recomputed: the least this can do */
	first_layers(full, n, n);
	set_layers(s, full);
	if ((rc = try_fit(pr, n_ops, &t, err)) != SL_OK)
		goto out;
	if (!t.fits)
		goto out;
	bt = t;
	/* fits(hi), not fits(lo); memory falls about linearly with the count,
	 * so the first probe is where the line crosses the limit and the
	 * second its neighbour, then bisection */
	lo = 0;
	hi = n;
	guess = m0 > t.mem ? (int)((double)n * (double)(m0 - limit) /
	    (double)(m0 - t.mem) + 0.999) : n / 2;
	while (hi - lo > 1) {
		int mid = guess > lo && guess < hi ? guess : lo + (hi - lo) / 2;
		first_layers(full, n, mid);
		set_layers(s, full);
		if ((rc = try_fit(pr, n_ops, &t, err)) != SL_OK)
			goto out;
		if (t.fits) {
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
			if ((rc = try_fit(pr, n_ops, &t, err)) != SL_OK)
				goto out;
			if (t.fits && (!bt.fits || t.objective < bt.objective)) {
				bt = t;
				memcpy(best, full, n);
			}
		} while (next_subset(full, n));
	}
	memcpy(full, best, n);
out:
	if (rc == SL_OK) {
		/* the plan at the layers chosen (all of them when none fits) */
		set_layers(s, full);
		/* out emptied (sl_fit_free's work: fit.c calls this file, not
		 * the other way round) */
		sl_solution_free(&out->sol);
		memset(out, 0, sizeof *out);
		sl_solution_init(&out->sol, n_ops);
		rc = pr->fit(pr->ctx, out, err);
		out->n_layers = n;
		for (int l = 0; l < n; l++)
			out->n_recomputed += full[l] != 0;
	}
	free(full);
	free(best);
	return rc;
}
