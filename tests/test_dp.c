/*
 * test_dp.c: the exact DP against GLPK and brute force on random graphs
 * (trees, series-parallel graphs, K4 chains, grids, random graphs with
 * parallel edges), pins and forbids, several cost scales; the live solver's
 * incremental re-solves against cold solves; folded layers against the
 * unfolded elimination; bundled and generated models; the alpha frontier.
 */
#include "testutil.h"
#include "gpt3.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ random problems */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t
rng(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static int
rnd(int n)
{
	return (int)(rng() % (uint64_t)n);
}

enum gen_kind { GEN_TREE, GEN_SP, GEN_K4, GEN_GRID, GEN_RANDOM, GEN_KIND_COUNT };

struct edges {
	int m, cap;
	int (*e)[2];
};

static void
edges_add(struct edges *E, int u, int v)
{
	if (u == v)
		return;
	if (E->m == E->cap) {
		E->cap = E->cap ? 2 * E->cap : 16;
		E->e = realloc(E->e, (size_t)E->cap * sizeof *E->e);
	}
	E->e[E->m][0] = u;
	E->e[E->m][1] = v;
	E->m++;
}

/* Cost scales: ties galore, moderate, bytes-like, signed. */
static int64_t
rnd_cost(int scale)
{
	switch (scale) {
	case 0:
		return rnd(4);
	case 1:
		return rnd(1000);
	case 2:
		return (int64_t)(rng() % 1000000000000ULL);
	default:
		return rnd(101) - 50;
	}
}

/* Fills costs and allowed at random: forbids, pins, occasionally none. */
static void
randomize(sl_problem *p, int scale, int pin_pct, int forbid_pct)
{
	for (int v = 0; v < p->n; v++) {
		for (int s = 0; s < p->k[v]; s++) {
			p->cost[v][s] = rnd_cost(scale);
			p->allowed[v][s] = rnd(100) >= forbid_pct;
		}
		if (rnd(100) < pin_pct) {
			int s0 = rnd(p->k[v]);
			for (int s = 0; s < p->k[v]; s++)
				p->allowed[v][s] = s == s0;
		}
		bool any = false;
		for (int s = 0; s < p->k[v]; s++)
			any |= p->allowed[v][s];
		if (!any)
			p->allowed[v][rnd(p->k[v])] = 1;
	}
	for (int e = 0; e < p->m; e++) {
		size_t n = (size_t)p->k[p->edge[e][0]] * p->k[p->edge[e][1]];
		for (size_t i = 0; i < n; i++)
			p->ecost[e][i] = rnd_cost(scale);
	}
}

static sl_problem *
gen_problem(enum gen_kind kind, int n, int kmax, int scale)
{
	struct edges E = { 0 };
	int *k;
	sl_problem *p;

	switch (kind) {
	case GEN_TREE:
		for (int v = 1; v < n; v++)
			edges_add(&E, rnd(v), v);
		break;
	case GEN_SP:
		/* series-parallel (treewidth 2): subdivide or attach to an edge's ends */
		edges_add(&E, 0, 1);
		for (int v = 2; v < n; v++) {
			int e = rnd(E.m), a = E.e[e][0], b = E.e[e][1];
			if (rnd(2)) {
				E.e[e][1] = v;
				edges_add(&E, v, b);
			} else {
				edges_add(&E, a, v);
				edges_add(&E, v, b);
			}
		}
		break;
	case GEN_K4:
		/* chain of K4s sharing one node, plus pendant nodes: treewidth 3 */
		n = n < 4 ? 4 : n;
		{
			int base = 0, next = 1;
			while (next + 3 <= n) {
				int q[4] = { base, next, next + 1, next + 2 };
				for (int i = 0; i < 4; i++)
					for (int j = i + 1; j < 4; j++)
						edges_add(&E, q[i], q[j]);
				base = next + 2;
				next += 3;
			}
			for (int v = next; v < n; v++)
				edges_add(&E, rnd(v), v);
		}
		break;
	case GEN_GRID: {
		int r = 3, c = n / 3 < 2 ? 2 : n / 3;
		n = r * c;
		for (int i = 0; i < r; i++)
			for (int j = 0; j < c; j++) {
				if (j + 1 < c)
					edges_add(&E, i * c + j, i * c + j + 1);
				if (i + 1 < r)
					edges_add(&E, i * c + j, (i + 1) * c + j);
			}
		break;
	}
	default:
		for (int v = 1; v < n; v++)
			edges_add(&E, rnd(v), v);
		for (int i = 0; i < n / 2; i++)
			edges_add(&E, rnd(n), rnd(n));
		break;
	}
	/* a few parallel edges in every kind */
	for (int i = 0, m0 = E.m; i < 2 && m0 > 0; i++) {
		int e = rnd(m0);
		if (rnd(2))
			edges_add(&E, E.e[e][0], E.e[e][1]);
		else
			edges_add(&E, E.e[e][1], E.e[e][0]);
	}
	k = malloc((size_t)n * sizeof *k);
	for (int v = 0; v < n; v++)
		k[v] = 1 + rnd(kmax);
	p = sl_problem_new(n, k, E.m, (const int (*)[2])E.e);
	free(k);
	free(E.e);
	randomize(p, scale, 10, 20);
	return p;
}

static double
combos(const sl_problem *p)
{
	double c = 1;

	for (int v = 0; v < p->n; v++)
		c *= p->k[v];
	return c;
}

/*
 * A solver's result checked (status optimal, the choice allowed and scored
 * to the objective) and freed; returns the objective, or -1 when infeasible.
 */
static int64_t
checked_obj(const sl_problem *p, int rc, sl_solution *sol, const sl_error *err,
    const char *what)
{
	int64_t obj;

	if (rc != SL_OK)
		fail_msg("%s: %s", what, err->msg);
	if (sol->status == SL_SOLVE_INFEASIBLE) {
		sl_solution_free(sol);
		return -1;
	}
	assert_int_equal(sol->status, SL_SOLVE_OPTIMAL);
	assert_int_equal(sl_problem_score(p, sol->choice), sol->objective);
	for (int v = 0; v < p->n; v++)
		assert_true(p->allowed[v][sol->choice[v]]);
	obj = sol->objective;
	sl_solution_free(sol);
	return obj;
}

static int64_t
dp_cold(const sl_problem *p)
{
	sl_solution sol;
	sl_error err;

	sl_error_clear(&err);
	sl_solution_init(&sol, p->n);
	return checked_obj(p, sl_solve_dp(p, NULL, &sol, &err), &sol, &err, "dp");
}

static int64_t
ilp_obj(const sl_problem *p)
{
	sl_solution sol;
	sl_error err;

	sl_error_clear(&err);
	sl_solution_init(&sol, p->n);
	return checked_obj(p, sl_solve_ilp(p, NULL, &sol, &err), &sol, &err, "ilp");
}

static int64_t
brute_obj(const sl_problem *p)
{
	sl_solution sol;
	sl_error err;
	int64_t obj;

	sl_error_clear(&err);
	sl_solution_init(&sol, p->n);
	if (sl_solve_brute(p, NULL, &sol, &err) != SL_OK)
		fail_msg("brute: %s", err.msg);
	obj = sol.status == SL_SOLVE_INFEASIBLE ? -1 : sol.objective;
	sl_solution_free(&sol);
	return obj;
}

static int64_t dp_live(sl_dp *d, const sl_problem *p);

/* ------------------------------------------------------------------ tests */

/* 240 random problems: DP == GLPK, and == brute force on the small ones. */
static void
test_random_vs_ilp(void **state)
{
	int nbrute = 0, nk4 = 0, ngrid = 0, nwide = 0;

	(void)state;
	rng_state = 12345;
	for (int it = 0; it < 240; it++) {
		enum gen_kind kind = (enum gen_kind)(it % GEN_KIND_COUNT);
		bool small = it % 3 == 0;
		int n = small ? 4 + rnd(6) : 10 + rnd(30);
		int kmax = small ? 3 : 2 + rnd(5);
		sl_problem *p = gen_problem(kind, n, kmax, rnd(4));
		int64_t d = dp_cold(p), g = ilp_obj(p);

		if (d != g)
			fail_msg("problem %d (kind %d, n %d): dp %lld ilp %lld",
			    it, kind, p->n, (long long)d, (long long)g);
		if (combos(p) <= 2e5) {
			assert_int_equal(brute_obj(p), d);
			nbrute++;
		}
		if (kind == GEN_K4 || kind == GEN_GRID) {
			/* a treewidth-3 core: the general elimination step ran */
			sl_error err;
			sl_dp_info info;
			sl_dp *dp;
			sl_error_clear(&err);
			dp = sl_dp_new(p, NULL, &err);
			assert_int_equal(dp_live(dp, p), d);
			sl_dp_info_get(dp, &info);
			nwide += info.width >= 3;
			sl_dp_free(dp);
		}
		nk4 += kind == GEN_K4;
		ngrid += kind == GEN_GRID;
		sl_problem_free(p);
	}
	assert_true(nbrute >= 60);
	assert_true(nk4 >= 40 && ngrid >= 40);
	assert_true(nwide >= 60);
}

/* A hand-made problem: a triangle whose optimum is known. */
static void
test_hand_triangle(void **state)
{
	int k[3] = { 2, 2, 2 };
	int e[3][2] = { { 0, 1 }, { 1, 2 }, { 2, 0 } };
	sl_problem *p = sl_problem_new(3, k, 3, (const int (*)[2])e);
	sl_solution sol;
	sl_error err;

	(void)state;
	/* nodes prefer strategy 0; edges punish disagreement by 10 */
	for (int v = 0; v < 3; v++) {
		p->cost[v][0] = 1;
		p->cost[v][1] = 4;
	}
	for (int i = 0; i < 3; i++) {
		p->ecost[i][0] = 0;
		p->ecost[i][1] = 10;
		p->ecost[i][2] = 10;
		p->ecost[i][3] = 0;
	}
	assert_int_equal(dp_cold(p), 3);
	/* forbid strategy 0 of node 1: all 1 costs 12; (0,1,0) costs 1+4+1+20 */
	p->allowed[1][0] = 0;
	assert_int_equal(dp_cold(p), 12);
	sl_error_clear(&err);
	sl_solution_init(&sol, 3);
	assert_int_equal(sl_solve_dp(p, NULL, &sol, &err), SL_OK);
	assert_int_equal(sol.choice[0], 1);
	assert_int_equal(sol.choice[1], 1);
	assert_int_equal(sol.choice[2], 1);
	/* nothing allowed on node 2: infeasible */
	p->allowed[2][0] = p->allowed[2][1] = 0;
	assert_int_equal(sl_solve_dp(p, NULL, &sol, &err), SL_OK);
	assert_int_equal(sol.status, SL_SOLVE_INFEASIBLE);
	sl_solution_free(&sol);
	sl_problem_free(p);

	/* one node, no edges: the cheapest allowed strategy */
	int k1[1] = { 3 };
	p = sl_problem_new(1, k1, 0, NULL);
	p->cost[0][0] = 5;
	p->cost[0][1] = 2;
	p->cost[0][2] = 9;
	assert_int_equal(dp_cold(p), 2);
	p->allowed[0][1] = 0;
	assert_int_equal(dp_cold(p), 5);
	sl_problem_free(p);
}

/* A clique too wide for exact elimination is refused, with the reason. */
static void
test_refuse_wide(void **state)
{
	int n = 12, m = 0, (*e)[2] = malloc(66 * sizeof *e), *k = malloc(12 * sizeof *k);
	sl_problem *p;
	sl_solution sol;
	sl_error err;

	(void)state;
	for (int v = 0; v < n; v++) {
		k[v] = 8;
		for (int u = 0; u < v; u++) {
			e[m][0] = u;
			e[m][1] = v;
			m++;
		}
	}
	p = sl_problem_new(n, k, m, (const int (*)[2])e);
	sl_error_clear(&err);
	sl_solution_init(&sol, n);
	assert_int_equal(sl_solve_dp(p, NULL, &sol, &err), SL_EINTERNAL);
	assert_non_null(strstr(err.msg, "too costly"));
	assert_non_null(strstr(err.msg, "ilp"));
	sl_problem_free(p);

	/* a 10x10 grid (treewidth 10) is refused before any table is built */
	{
		int ge[180][2], gm = 0, gk[100];
		for (int i = 0; i < 10; i++)
			for (int j = 0; j < 10; j++) {
				gk[i * 10 + j] = 8;
				if (j + 1 < 10) {
					ge[gm][0] = i * 10 + j;
					ge[gm++][1] = i * 10 + j + 1;
				}
				if (i + 1 < 10) {
					ge[gm][0] = i * 10 + j;
					ge[gm++][1] = (i + 1) * 10 + j;
				}
			}
		sl_problem *g = sl_problem_new(100, gk, gm, (const int (*)[2])ge);
		sl_error_clear(&err);
		assert_null(sl_dp_new(g, NULL, &err));
		assert_int_equal(err.code, SL_EINTERNAL);
		assert_non_null(strstr(err.msg, "too costly"));
		sl_problem_free(g);
	}
	p = sl_problem_new(n, k, m, (const int (*)[2])e);

	/* and a usage limit is refused too */
	p->interval = calloc((size_t)n, sizeof *p->interval);
	p->usage = calloc((size_t)n, sizeof *p->usage);
	for (int v = 0; v < n; v++)
		p->usage[v] = calloc((size_t)k[v], sizeof **p->usage);
	p->usage_limit = 100;
	sl_error_clear(&err);
	assert_int_equal(sl_solve_dp(p, NULL, &sol, &err), SL_EINTERNAL);
	assert_non_null(strstr(err.msg, "usage limits"));
	sl_solution_free(&sol);
	sl_problem_free(p);
	free(e);
	free(k);
}

/* Incremental: random pins, forbids, releases and cost changes; each == cold. */
static void
test_incremental_random(void **state)
{
	(void)state;
	rng_state = 777;
	for (int rep = 0; rep < 12; rep++) {
		sl_problem *p = gen_problem((enum gen_kind)(rep % GEN_KIND_COUNT),
		    15 + rnd(20), 5, rep % 3);
		sl_error err;
		sl_solution sol;
		sl_dp *d;

		sl_error_clear(&err);
		d = sl_dp_new(p, NULL, &err);
		assert_non_null(d);
		sl_solution_init(&sol, p->n);
		for (int step = 0; step < 12; step++) {
			int v = rnd(p->n), what = rnd(4);
			if (what == 0) {	/* pin */
				int s0 = rnd(p->k[v]);
				for (int s = 0; s < p->k[v]; s++)
					p->allowed[v][s] = s == s0;
			} else if (what == 1) {	/* forbid one */
				p->allowed[v][rnd(p->k[v])] = 0;
			} else if (what == 2) {	/* release */
				memset(p->allowed[v], 1, (size_t)p->k[v]);
			} else {		/* cost change */
				p->cost[v][rnd(p->k[v])] = rnd_cost(rep % 3);
				if (p->m > 0) {
					int e = rnd(p->m);
					p->ecost[e][0] = rnd_cost(rep % 3);
				}
			}
			assert_int_equal(sl_dp_resolve(d, p, NULL, &sol, &err), SL_OK);
			int64_t c = dp_cold(p);
			if (sol.status == SL_SOLVE_INFEASIBLE)
				assert_int_equal(c, -1);
			else {
				assert_int_equal(sol.objective, c);
				assert_int_equal(sl_problem_score(p, sol.choice), c);
			}
			if (step % 4 == 3)
				assert_int_equal(ilp_obj(p), c);
		}
		sl_solution_free(&sol);
		sl_dp_free(d);
		sl_problem_free(p);
	}
}

/*
 * A synthetic model: two nodes before, L identical transformer-like layers
 * (ln1 qkv attn proj add1 ln2 fc1 act fc2 add2; residual edges from the
 * previous layer's add2 into ln1 and add1), three after, and an edge from the
 * first node to the head (tied embedding).  wide: an extra edge inside each
 * layer making its core treewidth 3.
 */
#define LAYER_OPS 10
static sl_problem *
gen_layered(int L, int kmax, int scale, bool wide)
{
	static const int in_edges[][2] = {	/* within a layer, local ids */
		{ 0, 1 }, { 1, 2 }, { 2, 3 }, { 3, 4 }, { 4, 5 }, { 4, 9 },
		{ 5, 6 }, { 6, 7 }, { 7, 8 }, { 8, 9 },
	};
	int nin = (int)(sizeof in_edges / sizeof in_edges[0]);
	int n = 2 + L * LAYER_OPS + 3;
	struct edges E = { 0 };
	int *k = malloc((size_t)n * sizeof *k);
	int lk[LAYER_OPS];
	sl_problem *p;

	for (int j = 0; j < LAYER_OPS; j++)
		lk[j] = 1 + rnd(kmax);
	k[0] = 1 + rnd(kmax);
	k[1] = 1 + rnd(kmax);
	edges_add(&E, 0, 1);
	for (int l = 0; l < L; l++) {
		int b = 2 + l * LAYER_OPS, prev = l == 0 ? 1 : b - 1;
		for (int j = 0; j < LAYER_OPS; j++)
			k[b + j] = lk[j];
		edges_add(&E, prev, b + 0);
		edges_add(&E, prev, b + 4);
		for (int i = 0; i < nin; i++)
			edges_add(&E, b + in_edges[i][0], b + in_edges[i][1]);
		if (wide) {
			edges_add(&E, b + 1, b + 3);
			edges_add(&E, b + 0, b + 2);
			edges_add(&E, b + 3, b + 0);	/* reversed on purpose */
		}
	}
	int t = 2 + L * LAYER_OPS;
	for (int j = 0; j < 3; j++)
		k[t + j] = 1 + rnd(kmax);
	edges_add(&E, t - 1, t);
	edges_add(&E, t, t + 1);
	edges_add(&E, t + 1, t + 2);
	edges_add(&E, 0, t + 1);
	p = sl_problem_new(n, k, E.m, (const int (*)[2])E.e);
	for (int v = 0; v < n; v++) {
		p->layer[v] = v >= 2 && v < t ? (v - 2) / LAYER_OPS : -1;
		p->pos[v] = v >= 2 && v < t ? (v - 2) % LAYER_OPS : -1;
	}
	/* identical layers: node costs by position, edge costs by local edge */
	int64_t *nc[LAYER_OPS];
	for (int j = 0; j < LAYER_OPS; j++) {
		nc[j] = malloc((size_t)lk[j] * sizeof **nc);
		for (int s = 0; s < lk[j]; s++)
			nc[j][s] = rnd_cost(scale);
	}
	for (int v = 0; v < n; v++) {
		for (int s = 0; s < k[v]; s++)
			p->cost[v][s] = p->layer[v] >= 0 ? nc[p->pos[v]][s] :
			    rnd_cost(scale);
	}
	int per = nin + 2 + (wide ? 3 : 0);
	int64_t **ec = malloc((size_t)per * sizeof *ec);
	for (int i = 0; i < per; i++) {
		ec[i] = malloc(64 * 64 * sizeof **ec);
		for (int j = 0; j < 64 * 64; j++)
			ec[i][j] = rnd_cost(scale);
	}
	for (int e = 0; e < p->m; e++) {
		size_t cnt = (size_t)k[p->edge[e][0]] * k[p->edge[e][1]];
		int li = e - 1;	/* edge 0 is before the layers */
		bool inl = li >= 0 && li < L * per;
		for (size_t j = 0; j < cnt; j++)
			p->ecost[e][j] = inl ? ec[li % per][j] : rnd_cost(scale);
	}
	for (int i = 0; i < per; i++)
		free(ec[i]);
	free(ec);
	for (int j = 0; j < LAYER_OPS; j++)
		free(nc[j]);
	free(k);
	free(E.e);
	return p;
}

static int64_t
dp_live(sl_dp *d, const sl_problem *p)
{
	sl_solution sol;
	sl_error err;

	sl_error_clear(&err);
	sl_solution_init(&sol, p->n);
	return checked_obj(p, sl_dp_resolve(d, p, NULL, &sol, &err), &sol, &err,
	    "dp resolve");
}

static int64_t
dp_unfolded(const sl_problem *p)
{
	sl_error err;
	sl_dp *d;
	int64_t o;
	sl_dp_info info;

	sl_error_clear(&err);
	d = sl_dp_new(p, &(sl_solve_opts){ .no_fold = true }, &err);
	assert_non_null(d);
	o = dp_live(d, p);
	sl_dp_info_get(d, &info);
	assert_int_equal(info.folded_layers, 0);
	sl_dp_free(d);
	return o;
}

/* Folded == unfolded == GLPK on identical-layer chains, narrow and wide. */
static void
test_folded_layers(void **state)
{
	(void)state;
	rng_state = 4242;
	for (int rep = 0; rep < 16; rep++) {
		bool wide = rep % 2 == 1;
		int L = rep < 8 ? 2 + rnd(4) : 12 + rnd(40);
		sl_problem *p = gen_layered(L, rep < 8 ? 3 : 6, rep % 3, wide);
		sl_error err;
		sl_dp *d;
		sl_dp_info info;
		int64_t f, u;

		sl_error_clear(&err);
		d = sl_dp_new(p, NULL, &err);
		assert_non_null(d);
		f = dp_live(d, p);
		sl_dp_info_get(d, &info);
		assert_int_equal(info.runs, 1);
		assert_int_equal(info.folded_layers, L);
		/* the first layer's input is the embedding: maybe its own class */
		assert_true(info.classes == 1 || info.classes == 2);
		assert_int_equal(info.recomputed, info.classes);
		int classes0 = info.classes;
		u = dp_unfolded(p);
		assert_int_equal(f, u);
		assert_int_equal(dp_cold(p), f);
		if (rep < 8 || rep % 4 == 0)
			assert_int_equal(ilp_obj(p), f);

		/* pins and forbids in single layers: one class more each time */
		for (int step = 0; step < 10; step++) {
			int l = rnd(L), j = rnd(LAYER_OPS), v = 2 + l * LAYER_OPS + j;
			if (step % 3 == 2) {
				memset(p->allowed[v], 1, (size_t)p->k[v]);
			} else {
				int s0 = rnd(p->k[v]);
				for (int s = 0; s < p->k[v]; s++)
					p->allowed[v][s] = step % 3 == 0 ? s == s0 :
					    s != s0 || p->k[v] == 1;
			}
			if (step % 2) {
				f = dp_live(d, p);
			} else {
				/* only allowed changed: the cheaper entry point */
				sl_solution sol;
				sl_solve_opts ao = { .allowed_only = true };
				sl_error_clear(&err);
				sl_solution_init(&sol, p->n);
				assert_int_equal(sl_dp_resolve(d, p, &ao, &sol,
				    &err), SL_OK);
				assert_int_equal(sol.status, SL_SOLVE_OPTIMAL);
				f = sol.objective;
				assert_int_equal(sl_problem_score(p, sol.choice), f);
				sl_solution_free(&sol);
			}
			sl_dp_info_get(d, &info);
			assert_true(info.recomputed <= 1);
			assert_int_equal(f, dp_unfolded(p));
			if (rep < 8 && step % 5 == 0)
				assert_int_equal(ilp_obj(p), f);
		}
		/* a cost change everywhere (like alpha): still one class */
		for (int v = 0; v < p->n; v++)
			memset(p->allowed[v], 1, (size_t)p->k[v]);
		for (int e = 0; e < p->m; e++)
			p->ecost[e][0] += 7;
		for (int v = 0; v < p->n; v++)
			p->cost[v][0] += 3;
		f = dp_live(d, p);
		sl_dp_info_get(d, &info);
		assert_int_equal(info.classes, classes0);
		assert_int_equal(f, dp_unfolded(p));
		sl_dp_free(d);
		sl_problem_free(p);
	}
}

/* A layer whose inner node talks to a later layer does not fold wrongly. */
static void
test_fold_guard(void **state)
{
	(void)state;
	rng_state = 99;
	for (int rep = 0; rep < 6; rep++) {
		sl_problem *p = gen_layered(5, 3, rep % 3, false);
		int k[1];
		sl_problem *q;
		int (*e)[2] = malloc((size_t)(p->m + 1) * sizeof *e);
		sl_dp *d;
		sl_error err;
		sl_dp_info info;

		/* extra edge: layer 1's qkv to layer 3's fc1 */
		memcpy(e, p->edge, (size_t)p->m * sizeof *e);
		e[p->m][0] = 2 + 1 * LAYER_OPS + 1;
		e[p->m][1] = 2 + 3 * LAYER_OPS + 6;
		q = sl_problem_new(p->n, p->k, p->m + 1, (const int (*)[2])e);
		for (int v = 0; v < p->n; v++) {
			memcpy(q->cost[v], p->cost[v], (size_t)p->k[v] * 8);
			q->layer[v] = p->layer[v];
			q->pos[v] = p->pos[v];
		}
		for (int i = 0; i < p->m; i++)
			memcpy(q->ecost[i], p->ecost[i],
			    (size_t)p->k[p->edge[i][0]] * p->k[p->edge[i][1]] * 8);
		for (int j = 0; j < q->k[e[p->m][0]] * q->k[e[p->m][1]]; j++)
			q->ecost[p->m][j] = rnd_cost(1);
		(void)k;
		sl_error_clear(&err);
		d = sl_dp_new(q, NULL, &err);
		assert_non_null(d);
		assert_int_equal(dp_live(d, q), ilp_obj(q));
		sl_dp_info_get(d, &info);
		/* layers 1..3 cannot all sit inside one folded chain */
		assert_true(info.folded_layers < 5);
		sl_dp_free(d);
		sl_problem_free(q);
		sl_problem_free(p);
		free(e);
	}
}

/* ------------------------------------------------------------ models */

static sl_space *
open_space(const char *model, const sl_gen_config *gc, int n_axes,
    const int *shape)
{
	sl_error err;
	sl_hw hw;
	sl_mesh mesh;
	sl_model_opts mo = { .micro_batch = 1 };
	sl_graph *g;
	sl_space *s;
	int nd = 1;

	for (int i = 0; i < n_axes; i++)
		nd *= shape[i];
	mo.devices = nd;
	sl_error_clear(&err);
	if (sl_hw_load("h100-nvlink", &hw, &err) != SL_OK) {
		sl_error_clear(&err);
		const char *const *names = sl_bundled_hardware();
		if (names == NULL || names[0] == NULL ||
		    sl_hw_load(names[0], &hw, &err) != SL_OK)
			return NULL;
	}
	if (sl_mesh_make(&hw, n_axes, shape, &mesh, &err) != SL_OK)
		return NULL;
	if (gc != NULL) {
		sl_gen_config c = *gc;
		c.batch = nd;
		g = sl_gen(&c, &err);
	} else
		g = sl_model_open(model, &mo, &err);
	if (g == NULL)
		return NULL;
	s = sl_space_build(g, &mesh, NULL, &err);
	return s;
}

static void
close_space(sl_space *s)
{
	if (s == NULL)
		return;
	sl_graph *g = (sl_graph *)s->g;
	sl_space_free(s);
	sl_graph_free(g);
}

static void
check_model(sl_space *s, int pins)
{
	sl_error err;
	sl_problem *p;
	sl_dp *d;
	sl_dp_info info;
	int64_t f;

	sl_error_clear(&err);
	p = sl_space_problem(s, 1000.0, NULL, &err);
	assert_non_null(p);
	d = sl_dp_new(p, NULL, &err);
	assert_non_null(d);
	f = dp_live(d, p);
	sl_dp_info_get(d, &info);
	assert_true(info.folded_layers >= s->g->n_layers - 1);
	assert_int_equal(f, dp_unfolded(p));
	for (int i = 0; i < pins; i++) {
		int v = rnd(p->n), s0 = rnd(p->k[v]);
		for (int t = 0; t < p->k[v]; t++)
			p->allowed[v][t] = t == s0;
		f = dp_live(d, p);
		sl_dp_info_get(d, &info);
		assert_true(info.recomputed <= 1);
		assert_int_equal(f, dp_unfolded(p));
	}
	sl_dp_free(d);
	sl_problem_free(p);
}

static void
test_models(void **state)
{
	int shape[2] = { 2, 4 };
	const char *names[] = { "gpt-1.7b", "gpt-7.5b" };
	sl_gen_config gc;

	(void)state;
	rng_state = 31337;
	for (int i = 0; i < 2; i++) {
		sl_space *s = open_space(names[i], NULL, 2, shape);
		if (s == NULL)
			skip();
		check_model(s, 6);
		close_space(s);
	}
	/* a real model where GLPK is quick: 1-D mesh of 4, with a pin */
	{
		int four[1] = { 4 };
		sl_space *s = open_space("gpt-1.7b", NULL, 1, four);
		sl_error err;
		sl_problem *p;
		if (s == NULL)
			skip();
		sl_error_clear(&err);
		p = sl_space_problem(s, 100.0, NULL, &err);
		assert_non_null(p);
		assert_int_equal(dp_cold(p), ilp_obj(p));
		int v = p->n / 2;
		for (int t = 1; t < p->k[v]; t++)
			p->allowed[v][t] = 0;
		assert_int_equal(dp_cold(p), ilp_obj(p));
		sl_problem_free(p);
		close_space(s);
	}
	gpt3_175b_config(&gc);
	sl_space *s = open_space(NULL, &gc, 2, shape);
	if (s == NULL)
		skip();
	check_model(s, 6);
	close_space(s);
}

/* Each frontier plan is optimal inside its range; memory up, communication down. */
static bool
count_never(void *ctx)
{
	(*(int *)ctx)++;
	return false;
}

static bool
cancel_at_four(void *ctx)
{
	return ++*(int *)ctx == 4;
}

static void
test_sweep(void **state)
{
	int shape[2] = { 2, 4 };
	sl_space *s;
	sl_frontier f = { 0 };
	sl_error err;

	(void)state;
	s = open_space("gpt-1.7b", NULL, 2, shape);
	if (s == NULL)
		skip();
	sl_error_clear(&err);
	if (sl_sweep(s, NULL, SL_SOLVER_DP, NULL, &f, &err) != SL_OK)
		fail_msg("sweep: %s", err.msg);
	assert_true(f.n >= 2);
	assert_true(f.pt[0].alpha_lo == 0);
	assert_true(f.pt[f.n - 1].alpha_hi < 0);
	for (int i = 0; i < f.n; i++) {
		sl_frontier_point *pt = &f.pt[i];
		double a = pt->alpha_hi < 0 ? 2 * pt->alpha_lo + 1 :
		    (pt->alpha_lo + pt->alpha_hi) / 2;
		sl_problem *p = sl_space_problem(s, a, NULL, &err);
		sl_eval ev;
		assert_non_null(p);
		if (i > 0) {
			assert_true(pt->mem > f.pt[i - 1].mem);
			assert_true(pt->comm_ns < f.pt[i - 1].comm_ns);
			assert_true(pt->alpha_lo == f.pt[i - 1].alpha_hi);
		}
		assert_int_equal(sl_evaluate(s, pt->choice, a, &ev, &err), SL_OK);
		assert_int_equal(ev.mem_part, pt->mem);
		assert_int_equal(ev.comm_ns, pt->comm_ns);
		assert_int_equal(sl_problem_score(p, pt->choice), ev.objective);
		assert_int_equal(dp_cold(p), ev.objective);
		sl_eval_free(&ev);
		sl_problem_free(p);
	}

	/* cancellable: never cancelled, the same frontier; cancelled
	 * at the fourth poll, an error and no frontier after three solves */
	{
		sl_frontier g = { 0 };
		int polls = 0;

		sl_solve_opts never = { .cancel = count_never,
		    .cancel_ctx = &polls };
		sl_solve_opts four = { .cancel = cancel_at_four,
		    .cancel_ctx = &polls };

		assert_int_equal(sl_sweep(s, NULL, SL_SOLVER_DP, &never, &g,
		    &err), SL_OK);
		assert_int_equal(g.n, f.n);
		for (int i = 0; i < f.n; i++) {
			assert_int_equal(g.pt[i].mem, f.pt[i].mem);
			assert_int_equal(g.pt[i].comm_ns, f.pt[i].comm_ns);
		}
		assert_true(polls >= f.n);
		sl_frontier_free(&g);
		polls = 0;
		sl_error_clear(&err);
		assert_int_equal(sl_sweep(s, NULL, SL_SOLVER_DP, &four, &g,
		    &err), SL_EINTERNAL);
		assert_non_null(strstr(err.msg, "cancelled"));
		assert_int_equal(polls, 4);
		assert_int_equal(g.n, 0);
		assert_null(g.pt);
	}
	sl_frontier_free(&f);
	close_space(s);
}

/* The frontier through GLPK is the same as through the DP, point by point. */
static void
test_sweep_ilp(void **state)
{
	int four[1] = { 4 };
	sl_space *s;
	sl_frontier a = { 0 }, b = { 0 };
	sl_error err;

	(void)state;
	s = open_space("gpt-1.7b", NULL, 1, four);
	if (s == NULL)
		skip();
	sl_error_clear(&err);
	assert_int_equal(sl_sweep(s, NULL, SL_SOLVER_DP, NULL, &a, &err), SL_OK);
	assert_int_equal(sl_sweep(s, NULL, SL_SOLVER_ILP, NULL, &b, &err), SL_OK);
	assert_true(a.n >= 3);
	assert_int_equal(a.n, b.n);
	for (int i = 0; i < a.n; i++) {
		assert_int_equal(a.pt[i].mem, b.pt[i].mem);
		assert_int_equal(a.pt[i].comm_ns, b.pt[i].comm_ns);
		assert_true(a.pt[i].alpha_lo == b.pt[i].alpha_lo);
	}
	sl_frontier_free(&a);
	sl_frontier_free(&b);
	close_space(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hand_triangle),
		cmocka_unit_test(test_refuse_wide),
		cmocka_unit_test(test_random_vs_ilp),
		cmocka_unit_test(test_incremental_random),
		cmocka_unit_test(test_folded_layers),
		cmocka_unit_test(test_fold_guard),
		cmocka_unit_test(test_models),
		cmocka_unit_test(test_sweep),
		cmocka_unit_test(test_sweep_ilp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
