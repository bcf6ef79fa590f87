/*
 * pipe_search.c: the hybrid search (Galvatron, Galvatron-BMW) over the
 * pipeline degree, the chunks per device, the sub-mesh shape, the
 * micro-batch size, the stage boundaries and recomputation.  Each
 * configuration gets a lower bound from its stages' fastest plans, and
 * they are searched best first; within one, every stage's best item per
 * layer count is computed once, then the partitions are listed (or, when
 * too many, searched by a shortest path per bound on the slowest stage).
 * The points no other beats in both memory and step time make the front.
 */
#include "pipe_internal.h"

#include <stdlib.h>
#include <time.h>

void
sl_hybrid_result_free(sl_hybrid_result *r)
{
	if (r == NULL)
		return;
	sl_pipeline_free(&r->best);
	sl_pipeline_free(&r->least);
	free(r->front);
	memset(r, 0, sizeof *r);
}

/* The per-stage choice the search makes: best recomputation for a stage. */
typedef struct item {
	bool ok;
	int r;
	int64_t t, mem;
	int64_t once;			/* its sync and optimizer (stage_plan_once) */
	dev_sums sums;			/* what the step's end needs of it */
} item;

typedef struct cfg {
	int p, v, outer, inner;
	int rep;		/* HSDP's replicate degree; 1 none */
	int64_t G, m;
	int ns, L;
	int lo, hi;		/* layers per stage searched */
	int64_t lb;		/* no partition steps faster */
	/* one recomputation for every stage (a framework's), or -1: each
	 * stage its own */
	int rfix;
	/* nu: the first layers a stage's item depends on: 1 when the layers
	 * are all alike (a middle stage is costed at layer 1), else L */
	int nu;
	item *it;		/* [ns][nu][hi + 1] */
} cfg;

static int
cfg_item(hyb *h, cfg *c, int j, int u, int n, item *out, sl_error *err)
{
	const sl_hybrid_opts *o = h->o;
	int d = j % c->p, l0;
	int64_t K = sl_pipe_in_flight(c->v > 1 ? SL_SCHED_INTERLEAVED :
	    o->schedule == SL_SCHED_INTERLEAVED ? SL_SCHED_1F1B : o->schedule,
	    c->p, c->v, c->m, d);
	int64_t ks, k, cap;
	bool alike = false;
	int r0, r1;

	if (c->v > 1) {
		/* interleaved: chunks of equal length (search_cfg) */
		const space_entry *se = hyb_space(h, c->G, c->outer, c->inner,
		    c->rep, err);
		if (se == NULL)
			return err->code ? err->code : SL_EINTERNAL;
		alike = device_alike(h, se, c->p, c->v, d, NULL, n);
	}
	chunk_budget(h, c->v, K, alike, &ks, &k, &cap);
	l0 = j == 0 ? 0 : j == c->ns - 1 ? c->L - n : c->nu > 1 ? u : 1;
	memset(out, 0, sizeof *out);
	if (c->rfix >= 0)
		r0 = r1 = c->rfix;
	else if (o->space.recipe.recompute == SL_RECOMP_AUTO) {
		r0 = 0;
		r1 = N_RECOMP - 1;
	} else
		r0 = r1 = recomp_index(o->space.recipe.recompute);
	for (int r = r0; r <= r1; r++) {
		stage_type *ty = hyb_type(h, c->G, c->outer, c->inner, c->rep, l0,
		    n, err);
		const stage_plan *sp;
		int64_t t, key, best;

		if (ty == NULL)
			return err->code ? err->code : SL_EINTERNAL;
		/*
		 * The same problem as under r - 1: its plans are the same, and
		 * an equal plan never replaces the one kept (strictly better
		 * only), so r changes nothing.
		 */
		if (r > r0 && tab_same_prev(h, ty->se, r, ty->a, ty->b))
			continue;
		if (r > r0 && out->ok) {
			/* no plan under r beats its fastest, whatever its memory */
			const stage_plan *f = type_plan(h, ty, r, 1, 1, c->m, INT64_MAX / 4, err);
			if (f == NULL)
				return err->code ? err->code : SL_EINTERNAL;
			if (sl_add_sat(sl_mul_sat(c->m, stage_plan_micro(f)), stage_plan_once(f)) >=
			    sl_add_sat(sl_mul_sat(c->m, out->t), out->once))
				continue;
		}
		sp = type_plan(h, ty, r, ks, k, c->m, cap, err);
		if (sp == NULL)
			return err->code ? err->code : SL_EINTERNAL;
		t = stage_plan_micro(sp);
		key = sl_add_sat(sl_mul_sat(c->m, t), stage_plan_once(sp));
		best = sl_add_sat(sl_mul_sat(c->m, out->t), out->once);
		if ((sp->ok && !out->ok) || (sp->ok == out->ok &&
		    (r == r0 || (sp->ok ? key < best :
		    stage_plan_mem(sp, ks, k) < out->mem)))) {
			out->ok = sp->ok;
			out->r = r;
			out->t = t;
			out->once = stage_plan_once(sp);
			out->sums = (dev_sums){ .bwd = sp->bwd, .sync = sp->sync,
			    .optim = sp->optim, .pelems = sp->pelems };
			out->mem = stage_plan_mem(sp, ks, k);
		}
		/* the fastest plan fits: recomputing more cannot be faster */
		if (sp->ok && sp->choice != NULL &&
		    memcmp(sp->choice, ty->fast[r], (ty->b - ty->a) * sizeof(int)) == 0)
			break;
	}
	return SL_OK;
}

static item *
cfg_at(cfg *c, int j, int u, int n)
{
	return &c->it[((size_t)j * c->nu + (c->nu > 1 ? u : 0)) * (c->hi + 1) + n];
}

/*
 * The items of every stage j and layer count n; when the layers differ,
 * of every first layer u the stage may start at too (a stage of the same
 * length over other layers is another problem).
 *
 * With one chunk per device, a partition's step is (m - 1) max_j t_j +
 * sum_j t_j + the largest sync (try_partition), and stage j's t_j is one
 * of its items: so with A the largest and S the sum, over the stages done,
 * of each stage's fastest fitting item, no partition steps faster than
 * (m - 1) A + S; and its memory per device, the largest of its stages',
 * is at least M, the largest over the stages done of each stage's least
 * item memory.  Once a point of the frontier found so far (r->front, the
 * best step among them) steps no slower than (m - 1) A + S and holds no
 * more than M, this configuration can neither win (only a strictly
 * faster step replaces the best) nor add a point to the frontier: the
 * rest of its items are not computed and *pruned is set.  The first stage
 * keeps the most micro-batches in flight and the last holds the output
 * layer and the loss: they come first, and decide most configurations
 * whose memory forces a slower plan.
 */
static int
cfg_items(hyb *h, cfg *c, const sl_hybrid_result *r, bool *pruned, sl_error *err)
{
	const space_entry *se = hyb_space(h, c->G, c->outer, c->inner, c->rep,
	    err);
	int64_t A = 0, S = 0, M = 0;

	*pruned = false;
	if (se == NULL)
		return err->code ? err->code : SL_EINTERNAL;
	c->nu = se->uniform ? 1 : c->L;
	c->it = sl_xcalloc((size_t)c->ns * c->nu * (c->hi + 1), sizeof *c->it);
	for (int jj = 0; jj < c->ns; jj++) {
		/* the first stage, the last, then the middle ones */
		int j = jj == 0 ? 0 : jj == 1 ? c->ns - 1 : jj - 1;
		int64_t mn = INT64_MAX, mm = INT64_MAX;
		for (int n = c->lo; n <= c->hi; n++) {
			/* a middle stage needs layers on both sides */
			if (j > 0 && j < c->ns - 1 && n > c->L - 2)
				continue;
			for (int u = 0; u < c->nu; u++) {
				item *it = cfg_at(c, j, u, n);
				int rc;
				/* the places stage j of n layers can start at */
				if (c->nu > 1 && (j == 0 ? u != 0 : j == c->ns - 1 ?
				    u != c->L - n : u < j || u + n > c->L - (c->ns - 1 - j)))
					continue;
				if ((rc = cfg_item(h, c, j, u, n, it, err)) != SL_OK)
					return rc;
				if (it->ok && it->t < mn)
					mn = it->t;
				if (it->ok && it->mem < mm)
					mm = it->mem;
			}
		}
		if (c->v > 1 || r->n_front == 0 || h->o->no_stage_bound)
			continue;
		/* no item fits: no partition does (nothing to remember, as
		 * a plan that fits was found) */
		if (mn == INT64_MAX) {
			*pruned = true;
			return SL_OK;
		}
		if (mn > A)
			A = mn;
		if (mm > M)
			M = mm;
		S = sl_add_sat(S, mn);
		for (int i = 0; i < r->n_front; i++)
			if (r->front[i].fits &&
			    r->front[i].step_ns <= sl_add_sat(sl_mul_sat(c->m - 1, A), S) &&
			    r->front[i].max_mem <= M) {
				*pruned = true;
				return SL_OK;
			}
	}
	return SL_OK;
}

/* Tracks the best pipeline configuration found. */
typedef struct best_t {
	bool found;
	int64_t step;
	sl_pipe_config c;
	int layers[1024];
	sl_recompute rec[1024];
} best_t;

static void
cfg_to_pipe(const cfg *c, const int *layers, const sl_recompute *rec,
    sl_pipe_config *pc)
{
	*pc = (sl_pipe_config){ .pp = c->p, .virt = c->v, .outer = c->outer,
	    .inner = c->inner, .dp_replicate = c->rep, .graph_batch = c->G,
	    .micro_batches = c->m,
	    .layers = layers, .recompute = rec };
}

static int
i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/*
 * The configuration as its framework launches it (framework.c): the
 * sub-mesh's tensor- and context-parallel axes by their roles, the rest
 * data parallel; layers and rec (NULL: not yet chosen) per stage.
 */
static void
cfg_layout(hyb *h, const cfg *c, const int *layers, const sl_recompute *rec,
    sl_layout *l)
{
	const sl_hybrid_opts *o = h->o;
	sl_axis_role role[SL_MAX_AXES];
	int size[SL_MAX_AXES] = { 1, 1 }, n = 0, D = c->outer * c->inner;

	memset(l, 0, sizeof *l);
	space_roles(h, c->outer, c->inner, c->rep, role);
	if (o->topo != NULL) {
		for (int a = 0; a < o->topo->n_axes && n < SL_MAX_AXES; a++)
			if (o->topo->role[a] != SL_AXIS_PP)
				size[n++] = o->topo->shape[a];
	} else if (c->rep > 1) {
		/* HSDP: replicate x shard (stage_mesh), both data parallel */
		size[0] = c->rep;
		size[1] = c->outer / c->rep;
	} else if (c->outer > 1 && c->inner > 1) {
		size[0] = c->outer;
		size[1] = c->inner;
	} else
		size[0] = c->outer > 1 ? c->outer : c->inner;
	l->framework = o->space.recipe.framework;
	l->tp = l->cp = l->ep = 1;
	for (int a = 0; a < SL_MAX_AXES; a++) {
		int ep = o->ep_axes < 0 ? 0 : o->ep_axes;
		if (role[a] == SL_AXIS_TP)
			l->tp *= size[a];
		else if (role[a] == SL_AXIS_CP)
			l->cp *= size[a];
		/* the experts' axes (space_ep_axes) */
		if (role[a] == SL_AXIS_TP ? (ep & SL_EP_TENSOR) : (ep & SL_EP_DATA))
			l->ep *= size[a];
	}
	l->etp = o->ep_axes > 0 && (o->ep_axes & SL_EP_TENSOR) ? 1 : l->tp;
	l->dp = D / (l->tp * l->cp);
	l->pp = c->p;
	l->vpp = c->v;
	l->world = c->p * D;
	l->schedule = c->v > 1 ? SL_SCHED_INTERLEAVED :
	    o->schedule == SL_SCHED_INTERLEAVED ? SL_SCHED_1F1B : o->schedule;
	l->n_stages = c->ns;
	l->stage_layers = layers;
	l->stage_recompute = rec;
	l->micro_batch = l->dp > 0 ? c->G / l->dp : c->G;
	l->micro_batches = c->m;
	l->global_batch = c->G * c->m;
	l->seq = o->space.recipe.seq;
	l->precision = o->space.recipe.precision;
	l->zero = (o->space.zero && (l->framework == SL_FW_TORCHTITAN ||
	    l->framework == SL_FW_DEEPSPEED)) ? 3 : o->space.recipe.shard_states;
	l->dp_replicate = l->zero == 3 && c->rep > 1 ? c->rep : 1;
	l->offload_optimizer = o->offload_optimizer != 0;
}

/* Whether the framework runs the configuration (always, for free). */
static bool
cfg_runs(hyb *h, const cfg *c, const int *layers, const sl_recompute *rec,
    const sl_arch *a, char *why, size_t len)
{
	sl_layout l;

	if (h->o->space.recipe.framework == SL_FW_FREE)
		return true;
	cfg_layout(h, c, layers, rec, &l);
	return sl_layout_check(&l, a, why, len);
}

/*
 * Whether the experts' axes of the search (sl_hybrid_opts.ep_axes) are of
 * size 1 in c: the same plans as the search with fewer.
 */
static bool
ep_repeats(hyb *h, const cfg *c)
{
	int ep = h->o->ep_axes;
	sl_layout l;

	if (ep <= 0 || h->o->space.recipe.framework == SL_FW_FREE)
		return false;
	cfg_layout(h, c, NULL, NULL, &l);
	return ((ep & SL_EP_DATA) && l.dp * l.cp == 1) ||
	    ((ep & SL_EP_TENSOR) && l.tp == 1);
}

/* Evaluates one partition exactly; keeps it when it is the best fitting. */
static int
try_partition(hyb *h, cfg *c, const int *layers, best_t *b, best_t *cb,
    int64_t *partitions, sl_error *err)
{
	sl_recompute rec[1024];
	sl_pipe_config pc;
	sl_pipeline pl;
	int rc;

	for (int j = 0, u = 0; j < c->ns; u += layers[j], j++) {
		item *it = cfg_at(c, j, u, layers[j]);
		if (!it->ok && b != NULL)
			return SL_OK;	/* this stage fits under no plan */
		rec[j] = recomp_of[it->r];
	}
	if (!cfg_runs(h, c, layers, rec, h->arch, NULL, 0))
		return SL_OK;
	(*partitions)++;
	if (c->v == 1) {
		/*
		 * One chunk per device: the items are the stages exactly as
		 * pipeline_eval costs them, so the step is their arithmetic.
		 */
		int64_t t[1024] = { 0 }, step;
		dev_sums ds[1024];
		sl_pipeline q;
		for (int j = 0, u = 0; j < c->ns; u += layers[j], j++) {
			item *it = cfg_at(c, j, u, layers[j]);
			if (!it->ok)
				return SL_OK;
			t[j] = it->t;
			ds[j] = it->sums;
		}
		/* the end of the step as pipeline_eval takes it (pipe_sync) */
		memset(&q, 0, sizeof q);
		if (stage_mesh(h, c->outer, c->inner, c->rep, &q.mesh, err) != SL_OK)
			return err->code;
		pipe_sync(h, &q, c->p, 1, ds);
		step = sl_add_sat(sl_add_sat(sl_pipe_time(c->p, 1, c->m, t),
		    q.sync_ns), q.optim_ns);
		if (!cb->found || step < cb->step) {
			cfg_to_pipe(c, layers, rec, &pc);
			cb->found = true;
			cb->step = step;
			cb->c = pc;
			memcpy(cb->layers, layers, c->ns * sizeof *layers);
			memcpy(cb->rec, rec, c->ns * sizeof *rec);
			cb->c.layers = cb->layers;
			cb->c.recompute = cb->rec;
		}
		return SL_OK;
	}
	cfg_to_pipe(c, layers, rec, &pc);
	if ((rc = pipeline_eval(h, &pc, &pl, err)) != SL_OK) {
		sl_pipeline_free(&pl);
		return rc;
	}
	if (pl.fits && (!cb->found || pl.step_ns < cb->step)) {
		cb->found = true;
		cb->step = pl.step_ns;
		cb->c = pc;
		memcpy(cb->layers, layers, c->ns * sizeof *layers);
		memcpy(cb->rec, rec, c->ns * sizeof *rec);
		cb->c.layers = cb->layers;
		cb->c.recompute = cb->rec;
	}
	sl_pipeline_free(&pl);
	return SL_OK;
}

/* Every partition in the band, depth first. */
static int
enum_parts(hyb *h, cfg *c, int j, int left, int *layers, best_t *cb,
    int64_t *partitions, sl_error *err)
{
	if (j == c->ns)
		return left == 0 ? try_partition(h, c, layers, cb, cb, partitions, err) : SL_OK;
	for (int n = c->lo; n <= c->hi && n <= left; n++) {
		int rest = c->ns - j - 1;
		int rc;
		if (left - n < rest * c->lo || left - n > rest * c->hi)
			continue;
		if (j > 0 && j < c->ns - 1 && n > c->L - 2)
			continue;
		layers[j] = n;
		if ((rc = enum_parts(h, c, j + 1, left - n, layers, cb, partitions, err)) != SL_OK)
			return rc;
	}
	return SL_OK;
}

/* Partitions in the band, or -1 when more than limit. */
static int64_t
count_parts(const cfg *c, int64_t limit)
{
	int64_t *w = sl_xcalloc(c->L + 1, sizeof *w), *nw = sl_xcalloc(c->L + 1, sizeof *nw);
	int64_t r;

	w[0] = 1;
	for (int j = 0; j < c->ns; j++) {
		memset(nw, 0, (c->L + 1) * sizeof *nw);
		for (int u = 0; u <= c->L; u++)
			if (w[u] > 0)
				for (int n = c->lo; n <= c->hi && u + n <= c->L; n++) {
					nw[u + n] += w[u];
					if (nw[u + n] > limit)
						nw[u + n] = limit + 1;
				}
		memcpy(w, nw, (c->L + 1) * sizeof *w);
	}
	r = w[c->L] > limit ? -1 : w[c->L];
	free(w);
	free(nw);
	return r;
}

/*
 * Too many partitions to list (one chunk per device): for each bound T on
 * the slowest stage, in increasing order, the partition of least total
 * stage time whose stages all fit and stay under T (a shortest path over
 * stages and layers used); stops once m T alone exceeds the best step.
 * Stage times come from the items, so the step is then evaluated exactly.
 */
static int
dp_parts(hyb *h, cfg *c, best_t *cb, int64_t *partitions, sl_error *err)
{
	int L = c->L, ns = c->ns, nT = 0;
	int64_t *T = sl_xmalloc((size_t)ns * c->nu * (c->hi + 1) * sizeof *T);
	int64_t *cost = sl_xmalloc((size_t)(ns + 1) * (L + 1) * sizeof *cost);
	int *from = sl_xmalloc((size_t)(ns + 1) * (L + 1) * sizeof *from);
	int layers[1024];
	int rc = SL_OK;

	for (int j = 0; j < ns; j++)
		for (int u = 0; u < c->nu; u++)
			for (int n = c->lo; n <= c->hi; n++)
				if (cfg_at(c, j, u, n)->ok)
					T[nT++] = cfg_at(c, j, u, n)->t;
	if (nT > 1)
		qsort(T, nT, sizeof *T, i64_cmp);
	for (int ti = 0; ti < nT; ti++) {
		int64_t bound = T[ti];
		if (ti > 0 && T[ti - 1] == bound)
			continue;
		if (cb->found && sl_mul_sat(c->m, bound) >= cb->step)
			break;
		for (int i = 0; i < (ns + 1) * (L + 1); i++)
			cost[i] = INT64_MAX;
		cost[0] = 0;
		for (int j = 0; j < ns; j++)
			for (int u = 0; u <= L; u++) {
				int64_t cu = cost[j * (L + 1) + u];
				if (cu == INT64_MAX)
					continue;
				for (int n = c->lo; n <= c->hi && u + n <= L; n++) {
					item *it;
					if (j > 0 && j < ns - 1 && n > L - 2)
						continue;
					if (j == ns - 1 && u + n != L)
						continue;
					it = cfg_at(c, j, u, n);
					if (!it->ok || it->t > bound)
						continue;
					if (cu + it->t < cost[(j + 1) * (L + 1) + u + n]) {
						cost[(j + 1) * (L + 1) + u + n] = cu + it->t;
						from[(j + 1) * (L + 1) + u + n] = n;
					}
				}
			}
		if (cost[ns * (L + 1) + L] == INT64_MAX)
			continue;
		for (int j = ns, u = L; j > 0; j--) {
			layers[j - 1] = from[j * (L + 1) + u];
			u -= layers[j - 1];
		}
		if ((rc = try_partition(h, c, layers, cb, cb, partitions, err)) != SL_OK)
			break;
	}
	free(T);
	free(cost);
	free(from);
	return rc;
}

static void
front_add(sl_hybrid_result *r, const cfg *c, const sl_pipeline *pl)
{
	sl_hybrid_point *pt;

	r->front = sl_xrealloc(r->front, (r->n_front + 1) * sizeof *r->front);
	pt = &r->front[r->n_front++];
	pt->pp = c->p;
	pt->virt = c->v;
	pt->outer = c->outer;
	pt->inner = c->inner;
	pt->dp_replicate = c->rep;
	pt->micro_batches = c->m;
	pt->graph_batch = c->G;
	pt->max_mem = pl->max_mem;
	pt->step_ns = pl->step_ns;
	pt->fits = pl->fits;
}

/* Keeps the points no other point beats in both memory and step time. */
static void
front_prune(sl_hybrid_result *r)
{
	int n = 0;

	for (int i = 0; i < r->n_front; i++) {
		bool dominated = false;
		for (int j = 0; j < r->n_front && !dominated; j++) {
			const sl_hybrid_point *a = &r->front[j], *b = &r->front[i];
			if (j != i && a->max_mem <= b->max_mem && a->step_ns <= b->step_ns &&
			    (a->max_mem < b->max_mem || a->step_ns < b->step_ns || j < i))
				dominated = true;
		}
		if (!dominated)
			r->front[n++] = r->front[i];
	}
	r->n_front = n;
	for (int i = 1; i < n; i++)
		for (int q = i; q > 0 && r->front[q - 1].max_mem > r->front[q].max_mem; q--) {
			sl_hybrid_point x = r->front[q];
			r->front[q] = r->front[q - 1];
			r->front[q - 1] = x;
		}
}

/* The even split of L layers into ns stages, the first ones one larger. */
static void
even_split(int L, int ns, int *layers)
{
	for (int j = 0; j < ns; j++)
		layers[j] = L / ns + (j < L % ns ? 1 : 0);
}

#define ENUM_LIMIT 5000

static int
search_cfg(hyb *h, cfg *c, sl_hybrid_result *r, best_t *best, sl_error *err)
{
	best_t *cb = sl_xcalloc(1, sizeof *cb);
	int layers[1024];
	int64_t total;
	bool pruned;
	int rc;

	if (c->ns == 1) {
		c->lo = c->hi = c->L;
	} else if (h->o->slack < 0) {
		c->lo = 1;
		c->hi = c->L - (c->ns - 1);
	} else {
		c->lo = c->L / c->ns - h->o->slack;
		c->hi = sl_ceil_div(c->L, c->ns) + h->o->slack;
		if (c->lo < 1)
			c->lo = 1;
		if (c->hi > c->L - (c->ns - 1))
			c->hi = c->L - (c->ns - 1);
	}
	if (c->v > 1 || (h->o->space.recipe.framework == SL_FW_DEEPSPEED &&
	    c->ns > 1)) {
		/* interleaving: equal chunks, as Megatron-LM requires; and
		 * PipelineModule's even partition */
		c->lo = c->hi = c->L / c->ns;
	}
	if ((rc = cfg_items(h, c, r, &pruned, err)) != SL_OK)
		goto out;
	if (pruned) {
		r->pruned_bound++;
		r->pruned_stages++;
		goto out;
	}
	total = count_parts(c, ENUM_LIMIT);
	if (total >= 0 || c->v > 1)
		rc = enum_parts(h, c, 0, c->L, layers, cb, &r->partitions, err);
	else {
		rc = dp_parts(h, c, cb, &r->partitions, err);
		r->pruned_partitions++;
	}
	if (rc != SL_OK)
		goto out;
	r->configs++;
	if (cb->found) {
		sl_pipeline pl;
		if ((rc = pipeline_eval(h, &cb->c, &pl, err)) != SL_OK) {
			sl_pipeline_free(&pl);
			goto out;
		}
		front_add(r, c, &pl);
		sl_pipeline_free(&pl);
		if (!best->found || cb->step < best->step) {
			*best = *cb;
			best->c.layers = best->layers;
			best->c.recompute = best->rec;
		}
	} else {
		/* nothing fits this configuration: remember the least memory */
		sl_recompute rec[1024];
		sl_pipe_config pc;
		sl_pipeline pl;
		even_split(c->L, c->ns, layers);
		for (int j = 0, u = 0; j < c->ns; u += layers[j], j++)
			rec[j] = recomp_of[cfg_at(c, j, u, layers[j])->r];
		cfg_to_pipe(c, layers, rec, &pc);
		if ((rc = pipeline_eval(h, &pc, &pl, err)) != SL_OK) {
			sl_pipeline_free(&pl);
			goto out;
		}
		if (!r->have_least || pl.max_mem < r->least.max_mem) {
			sl_pipeline_free(&r->least);
			r->least = pl;
			r->have_least = true;
		} else
			sl_pipeline_free(&pl);
	}
out:
	free(c->it);
	c->it = NULL;
	free(cb);
	return rc;
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * A lower bound on the step of a configuration: some device holds at
 * least ceil(L / (p v)) layers in each of its v chunks, and no stage of
 * that many layers runs a micro-batch faster than its fastest plan,
 * whatever its memory; the step is at least m times that.
 */
static int
fastest_of(hyb *h, cfg *c, int n, int r, int64_t *out, sl_error *err)
{
	int64_t best = INT64_MAX;
	const space_entry *se = hyb_space(h, c->G, c->outer, c->inner, c->rep,
	    err);

	if (se == NULL)
		return err->code ? err->code : SL_EINTERNAL;
	for (int cls = 0; cls < 3; cls++) {
		/* middle stages: at layer 1 when the layers are all alike, else
		 * at every place (they may differ) */
		int l0 = cls == 0 ? 0 : cls == 1 ? 1 : c->L - n;
		int l1 = cls == 1 && !se->uniform ? c->L - n - 1 : l0;

		if (c->ns == 1 && cls > 0)
			break;
		if (cls == 1 && (c->ns < 3 || n > c->L - 2))
			continue;
		for (; l0 <= l1; l0++) {
			stage_type *ty;
			const stage_plan *sp;

			if ((ty = hyb_type(h, c->G, c->outer, c->inner, c->rep, l0, n,
			    err)) == NULL)
				return err->code ? err->code : SL_EINTERNAL;
			/* infinite memory: the fastest plan */
			if ((sp = type_plan(h, ty, r, 1, 1, c->m, INT64_MAX / 4, err)) == NULL)
				return err->code ? err->code : SL_EINTERNAL;
			if (stage_plan_micro(sp) < best)
				best = stage_plan_micro(sp);
		}
	}
	*out = best;
	return SL_OK;
}

/*
 * A lower bound on the step of a configuration.  Some device holds at
 * least ceil(L / (p v)) layers in each of its v chunks and every other
 * device at least the fewest layers a stage may have; no stage runs a
 * micro-batch faster than its fastest plan, whatever its memory.  So the
 * step is at least m v t(ceil) + (p - 1) t(fewest).
 */
static int
cfg_bound(hyb *h, cfg *c, bool fit, int64_t *lb, sl_error *err)
{
	int n1 = (int)sl_ceil_div(c->L, c->ns), nlo, nhi;
	int64_t t1, tlo;
	int r = c->rfix >= 0 ? c->rfix :
	    h->o->space.recipe.recompute == SL_RECOMP_AUTO ? 0 :
	    recomp_index(h->o->space.recipe.recompute);
	int rc;

	if (c->ns == 1 || c->v > 1)
		nlo = c->L / c->ns;
	else if (h->o->slack < 0)
		nlo = 1;
	else
		nlo = c->L / c->ns - h->o->slack > 1 ? c->L / c->ns - h->o->slack : 1;
	if ((rc = fastest_of(h, c, n1, r, &t1, err)) != SL_OK ||
	    (rc = fastest_of(h, c, nlo, r, &tlo, err)) != SL_OK)
		return rc;
	/*
	 * With fit (one chunk per device), the last device's stage too: no
	 * faster than its fastest item that fits (cfg_item, over the layer
	 * counts search_cfg tries), which cfg_items computes anyway when the
	 * configuration is searched.  When a stage's memory forces slower
	 * plans than its fastest (a mixture's expert states), this is the
	 * bound that sets the configuration aside.
	 */
	if (fit && c->ns > 1 && c->v == 1) {
		int64_t tl = INT64_MAX;
		nhi = h->o->slack < 0 ? c->L - (c->ns - 1) :
		    (int)sl_ceil_div(c->L, c->ns) + h->o->slack;
		if (nhi > c->L - (c->ns - 1))
			nhi = c->L - (c->ns - 1);
		for (int n = nlo; n <= nhi; n++) {
			item it;
			if ((rc = cfg_item(h, c, c->ns - 1, c->L - n, n, &it, err)) != SL_OK)
				return rc;
			if (it.ok && it.t < tl)
				tl = it.t;
		}
		if (tl == INT64_MAX) {
			/* the last stage fits under no plan: no partition does */
			*lb = INT64_MAX;
			return SL_OK;
		}
		if (tl > t1)
			t1 = tl;
	}
	*lb = sl_add_sat(sl_mul_sat(sl_mul_sat(c->m, t1), c->v),
	    sl_mul_sat(c->p - 1, tlo));
	return SL_OK;
}

/* Whether the space of (G, outer, inner) serves one of the n configurations
 * left, or the best found (evaluated again at the end). */
static bool
space_needed(const cfg *left, int n, const best_t *best, int64_t G, int outer,
    int inner, int rep)
{
	for (int j = 0; j < n; j++)
		if (left[j].G == G && left[j].outer == outer && left[j].inner == inner &&
		    left[j].rep == rep)
			return true;
	return best->found && best->c.graph_batch == G && best->c.outer == outer &&
	    best->c.inner == inner && best->c.dp_replicate == rep;
}

static int
cfg_cmp(const void *a, const void *b)
{
	const cfg *x = a, *y = b;

	return (x->lb > y->lb) - (x->lb < y->lb);
}

/*
 * What the search may vary: the devices, and the degrees fixed by the
 * options or by a topology (--axes), 0 where free.  fix_tp is the inner
 * sub-mesh axis, fix_outer the outer one.
 */
typedef struct search_space {
	int N;
	int fix_pp, fix_tp, fix_outer;
} search_space;

static int
search_space_of(const sl_hybrid_opts *o, search_space *s, sl_error *err)
{
	s->N = o->devices;
	s->fix_pp = o->pp;
	s->fix_tp = o->tp;
	s->fix_outer = 0;
	if (o->topo != NULL) {
		sl_mesh sm;
		int rc;
		if ((rc = sl_topo_stage_mesh(o->topo, &sm, err)) != SL_OK)
			return rc;
		s->N = o->topo->n_devices;
		s->fix_pp = sl_topo_pp(o->topo);
		if (sm.n_axes == 2) {
			s->fix_outer = sm.axes[0].size;
			s->fix_tp = sm.axes[1].size;
		} else {
			bool tp = false;
			for (int a = 0; a < o->topo->n_axes; a++)
				if (o->topo->role[a] == SL_AXIS_TP)
					tp = true;
			s->fix_tp = tp ? sm.axes[0].size : 1;
			s->fix_outer = tp ? 1 : sm.axes[0].size;
		}
	}
	if (s->N < 1)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("the search needs a number of devices, at least 1"));
	return SL_OK;
}

/*
 * Adds configuration c.  A framework recomputes every stage alike: each
 * recomputation it runs is a configuration of its own.
 */
static void
cfg_push(hyb *h, cfg *c, cfg **cs, int *nc, int *capc)
{
	const sl_hybrid_opts *o = h->o;

	for (int rf = 0; rf < N_RECOMP; rf++) {
		if (o->space.recipe.framework == SL_FW_FREE ||
		    o->space.recipe.recompute != SL_RECOMP_AUTO) {
			if (rf > 0)
				break;
		} else {
			sl_recompute rr[1024];
			for (int j = 0; j < c->ns; j++)
				rr[j] = recomp_of[rf];
			c->rfix = rf;
			if (!cfg_runs(h, c, NULL, rr, h->arch, NULL, 0))
				continue;
		}
		if (*nc == *capc) {
			*capc = *capc ? 2 * *capc : 32;
			*cs = sl_xrealloc(*cs, *capc * sizeof **cs);
		}
		(*cs)[(*nc)++] = *c;
	}
}

/*
 * The replicate degrees of HSDP c is searched at (reps, how many): the
 * one --dp-replicate forces; else full sharding (1) and, under the
 * frameworks that run HSDP (torchtitan's data_parallel_replicate_degree,
 * torchtitan/config/job_config.py, and free) with sharded states, when a
 * stage's data-parallel ranks span nodes, sharding within a node and
 * replicating across the nodes; with named axes, when the sub-mesh has
 * two data-parallel axes, sharding over the inner and replicating over
 * the outer.  The search keeps whichever steps faster.
 */
static int
cfg_reps(const hyb *h, const cfg *c, int *reps)
{
	const sl_hybrid_opts *o = h->o;
	sl_framework fw = o->space.recipe.framework;
	int dpn = o->hw.devices_per_node > 0 ? o->hw.devices_per_node : 1;

	if (o->dp_replicate > 0) {
		reps[0] = o->dp_replicate;
		return 1;
	}
	reps[0] = 1;
	if (!o->space.zero || (fw != SL_FW_TORCHTITAN && fw != SL_FW_FREE))
		return 1;
	if (o->topo != NULL) {
		sl_axis_role role[SL_MAX_AXES];
		sl_mesh m;
		int ndp = 0;

		if (sl_topo_stage_mesh(o->topo, &m, NULL) != SL_OK || m.n_axes < 2)
			return 1;
		space_roles(h, c->outer, c->inner, 1, role);
		for (int a = 0; a < m.n_axes; a++)
			ndp += role[a] == SL_AXIS_DP && m.axes[a].size > 1;
		if (ndp < 2)
			return 1;
		reps[1] = m.axes[0].size;
		return 2;
	}
	if (c->inner != 1 || c->outer <= dpn || c->outer % dpn != 0)
		return 1;
	reps[1] = c->outer / dpn;
	return 2;
}

/*
 * The configurations of L layers on the devices of s with global batch
 * B: pipeline degree, chunks, sub-mesh, micro-batch.  Those set aside are
 * counted in r; when none is left, r->why_none says why.  Returns how
 * many, in *out (the caller frees it).
 */
static int
search_cfgs(hyb *h, const search_space *s, int L, int64_t B,
    sl_hybrid_result *r, cfg **out)
{
	const sl_hybrid_opts *o = h->o;
	char why[256];
	int N = s->N, dpn = o->hw.devices_per_node > 0 ? o->hw.devices_per_node : 1;
	int nc = 0, capc = 0;
	cfg *cs = NULL;

	for (int p = 1; p <= N; p++) {
		int vs[3] = { 1, 0, 0 }, nv = 1;
		if (N % p != 0 || p > L || (s->fix_pp > 0 && p != s->fix_pp))
			continue;
		if (o->schedule == SL_SCHED_INTERLEAVED && p > 1) {
			nv = 0;
			if (o->virt > 1)
				vs[nv++] = o->virt;
			else {
				vs[nv++] = 2;
				vs[nv++] = 4;
			}
		}
		for (int vi = 0; vi < nv; vi++) {
			int v = vs[vi], D = N / p;
			if (v > 1 && L % (p * v) != 0) {
				r->pruned_shapes++;
				continue;
			}
			for (int inner = 1; inner <= D; inner++) {
				static const int bs[] = { 1, 2, 4, 8 };
				if (D % inner != 0 || (s->fix_tp > 0 && inner != s->fix_tp) ||
				    (s->fix_outer > 0 && D / inner != s->fix_outer))
					continue;
				if (inner > dpn && o->topo == NULL) {
					/* tensor parallelism beyond a node */
					r->pruned_shapes++;
					continue;
				}
				for (int bi = 0; bi < 4; bi++) {
					int64_t b = o->micro_batch > 0 ? o->micro_batch : bs[bi];
					cfg c;
					if (o->micro_batch > 0 && bi > 0)
						break;
					memset(&c, 0, sizeof c);
					c.p = p;
					c.v = v;
					c.outer = D / inner;
					c.inner = inner;
					c.G = b * c.outer;
					c.L = L;
					c.ns = p * v;
					if (B % c.G != 0 || c.ns > 1024) {
						r->pruned_batches++;
						continue;
					}
					c.m = B / c.G;
					c.rfix = -1;
					if (v > 1 && c.m % p != 0) {
						r->pruned_batches++;
						continue;
					}
					/* experts over axes of size 1: another
					 * search's (sl_hybrid_search) */
					if (ep_repeats(h, &c))
						continue;
					/* full sharding, and HSDP where it applies
					 * (cfg_reps) */
					int reps[2], nr = cfg_reps(h, &c, reps);
					for (int ri = 0; ri < nr; ri++) {
						c.rep = reps[ri];
						if (!stage_rep_ok(h, c.outer, c.inner, c.rep,
						    why, sizeof why) ||
						    /* what the framework cannot run */
						    (o->space.recipe.framework != SL_FW_FREE &&
						    !cfg_runs(h, &c, NULL, NULL, h->arch, why,
						    sizeof why))) {
							if (r->pruned_framework++ == 0)
								snprintf(r->framework_why,
								    sizeof r->framework_why, "%s", why);
							continue;
						}
						cfg_push(h, &c, &cs, &nc, &capc);
					}
				}
			}
		}
	}
	if (nc == 0) {
		/* nothing to evaluate: say why */
		if (r->pruned_framework > 0)
			snprintf(r->why_none, sizeof r->why_none,
			    _("%s runs none of the configurations (%lld set aside; the "
			    "first because %s)"),
			    sl_framework_title(o->space.recipe.framework),
			    (long long)r->pruned_framework, r->framework_why);
		else if (r->pruned_shapes > 0 || r->pruned_batches > 0)
			snprintf(r->why_none, sizeof r->why_none,
			    _("every configuration was set aside: %lld sub-meshes (tensor "
			    "parallelism beyond a node, or chunks of unequal layers), %lld "
			    "micro-batch sizes that do not divide the global batch"),
			    (long long)r->pruned_shapes, (long long)r->pruned_batches);
		else
			snprintf(r->why_none, sizeof r->why_none,
			    _("no pipeline degree and sub-mesh match %d devices, %d layers "
			    "and the pipeline and tensor-parallel degrees asked for"), N, L);
	}
	*out = cs;
	return nc;
}

/*
 * The nc configurations searched, best bound first; a configuration whose
 * bound is no better than the best step found is skipped.  Once no
 * configuration left needs a space (nor the best found, which is
 * evaluated again at the end), it is freed.
 */
static int
search_best_first(hyb *h, cfg *cs, int nc, sl_hybrid_result *r, best_t *best,
    sl_error *err)
{
	int rc = SL_OK;

	for (int i = 0; i < nc && rc == SL_OK; i++) {
		rc = cfg_bound(h, &cs[i], false, &cs[i].lb, err);
		hyb_drop_solvers(h);
	}
	if (rc == SL_OK && nc > 1)
		qsort(cs, nc, sizeof *cs, cfg_cmp);
	for (int i = 0; i < nc && rc == SL_OK; i++) {
		sl_pipe_config was = best->c;
		bool had = best->found;

		if (best->found && cs[i].lb >= best->step)
			r->pruned_bound++;
		else if (best->found && cs[i].v == 1 && !h->o->no_stage_bound &&
		    (rc = cfg_bound(h, &cs[i], true, &cs[i].lb, err)) == SL_OK &&
		    cs[i].lb >= best->step) {
			/* the bound again, over plans that fit: a configuration
			 * whose memory forces slower plans than its fastest */
			r->pruned_bound++;
			hyb_drop_solvers(h);
		} else if (rc == SL_OK) {
			rc = search_cfg(h, &cs[i], r, best, err);
			hyb_drop_solvers(h);
		}
		if (!space_needed(cs + i + 1, nc - i - 1, best, cs[i].G, cs[i].outer,
		    cs[i].inner, cs[i].rep))
			hyb_drop_space(h, cs[i].G, cs[i].outer, cs[i].inner, cs[i].rep);
		if (had && !space_needed(cs + i + 1, nc - i - 1, best, was.graph_batch,
		    was.outer, was.inner, was.dp_replicate))
			hyb_drop_space(h, was.graph_batch, was.outer, was.inner,
			    was.dp_replicate);
	}
	return rc;
}

static int
hybrid_search(const sl_hybrid_opts *o, sl_hybrid_result *r, sl_error *err)
{
	hyb h;
	sl_arch arch;
	best_t *best;
	const sl_graph *g0;
	search_space s;
	int L, nc;
	int64_t B;
	double t0 = now_ms();
	int rc;
	cfg *cs;

	memset(r, 0, sizeof *r);
	if ((rc = search_space_of(o, &s, err)) != SL_OK)
		return rc;
	memset(&h, 0, sizeof h);
	h.o = o;
	B = o->global_batch > 0 ? o->global_batch : s.N;
	if ((g0 = hyb_graph(&h, 1, err)) == NULL) {
		hyb_free(&h);
		return err->code ? err->code : SL_EINPUT;
	}
	L = g0->n_layers;
	if (sl_arch_of(g0, &arch, NULL) == SL_OK)
		h.arch = &arch;
	if (L < 1) {
		hyb_free(&h);
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("model '%s' has no layers to split into pipeline stages"), g0->name);
	}
	nc = search_cfgs(&h, &s, L, B, r, &cs);
	best = sl_xcalloc(1, sizeof *best);
	rc = search_best_first(&h, cs, nc, r, best, err);
	if (rc == SL_OK && best->found) {
		rc = pipeline_eval(&h, &best->c, &r->best, err);
		if (rc == SL_OK)
			r->found = true;
	}
	front_prune(r);
	r->stage_solves = h.solves;
	r->cache_hits = h.hits;
	hyb_free(&h);
	free(best);
	free(cs);
	r->time_ms = now_ms() - t0;
	r->shard_states = o->space.recipe.shard_states;
	if (rc != SL_OK)
		sl_hybrid_result_free(r);
	return rc;
}

/* Joins r1 into r: the faster fitting best (of two as fast, the one
 * that holds less), the lesser least, the frontiers and counts; r1 is
 * freed. */
static void
result_join(sl_hybrid_result *r, sl_hybrid_result *r1)
{
	if (r1->found && (!r->found || (r1->best.fits && !r->best.fits) ||
	    (r1->best.fits == r->best.fits && (r1->best.step_ns < r->best.step_ns ||
	    (r1->best.step_ns == r->best.step_ns &&
	    r1->best.max_mem < r->best.max_mem))))) {
		sl_pipeline_free(&r->best);
		r->best = r1->best;
		r->found = true;
		r->shard_states = r1->shard_states;
		memset(&r1->best, 0, sizeof r1->best);
	}
	if (r1->have_least && (!r->have_least || r1->least.max_mem < r->least.max_mem)) {
		sl_pipeline_free(&r->least);
		r->least = r1->least;
		r->have_least = true;
		memset(&r1->least, 0, sizeof r1->least);
	}
	r->front = sl_xrealloc(r->front, (size_t)(r->n_front + r1->n_front + 1) *
	    sizeof *r->front);
	if (r1->n_front > 0)
		memcpy(r->front + r->n_front, r1->front,
		    (size_t)r1->n_front * sizeof *r1->front);
	r->n_front += r1->n_front;
	front_prune(r);
	r->configs += r1->configs;
	r->stage_solves += r1->stage_solves;
	r->cache_hits += r1->cache_hits;
	r->partitions += r1->partitions;
	r->pruned_partitions += r1->pruned_partitions;
	r->pruned_shapes += r1->pruned_shapes;
	r->pruned_batches += r1->pruned_batches;
	r->pruned_bound += r1->pruned_bound;
	r->pruned_stages += r1->pruned_stages;
	r->pruned_framework += r1->pruned_framework;
	if (r->framework_why[0] == '\0')
		snprintf(r->framework_why, sizeof r->framework_why, "%s", r1->framework_why);
	if (!r->found && r->why_none[0] == '\0')
		snprintf(r->why_none, sizeof r->why_none, "%s", r1->why_none);
	r->time_ms += r1->time_ms;
	sl_hybrid_result_free(r1);
}

/*
 * DeepSpeed's ZeRO stages are two searches: ZeRO-1 (optimizer states
 * sharded, with or without a pipeline) and ZeRO-3 (parameters too, which
 * its PipelineEngine refuses: one stage).  The faster fitting plan of the
 * two is kept, the frontiers and counts joined.
 */
static int
zero_search(const sl_hybrid_opts *o, sl_hybrid_result *r, sl_error *err)
{
	sl_hybrid_opts o1;
	sl_hybrid_result r1;
	int rc;

	if (o->space.recipe.framework != SL_FW_DEEPSPEED || !o->space.zero)
		return hybrid_search(o, r, err);
	o1 = *o;
	o1.space.zero = false;
	if ((rc = hybrid_search(&o1, r, err)) != SL_OK)
		return rc;
	if ((rc = hybrid_search(o, &r1, err)) != SL_OK) {
		sl_hybrid_result_free(r);
		return rc;
	}
	result_join(r, &r1);
	return SL_OK;
}

/*
 * Megatron-LM's plan for the same devices and batch, its layout costed as
 * the per-operator plan runs, is a plan of the per-operator search too:
 * kept when faster than what the stages' solver chose (which weighs a
 * stage's gradient reduction as if nothing overlapped it, and can miss
 * that layout by a little).  Plans with context parallelism or experts
 * are left to the search.
 */
static int
megatron_candidate(const sl_hybrid_opts *o, sl_hybrid_result *r, sl_error *err)
{
	sl_hybrid_opts om = *o, of = *o;
	sl_hybrid_result rm;
	sl_pipe_config pc;
	sl_pipeline pl;
	const sl_pipeline *b;
	int *layers;
	sl_recompute *rec;
	int rc;

	om.space.recipe.framework = SL_FW_MEGATRON;
	om.space.recipe.shard_states = 1;
	if (hybrid_search(&om, &rm, err) != SL_OK) {
		/* nothing Megatron-LM runs: the search's plan stands */
		sl_error_clear(err);
		return SL_OK;
	}
	b = &rm.best;
	if (!rm.found || !b->fits || b->launch_cp > 1 || b->moe.n_experts > 0 ||
	    (r->found && r->best.fits && r->best.step_ns <= b->step_ns)) {
		sl_hybrid_result_free(&rm);
		return SL_OK;
	}
	layers = sl_xmalloc((size_t)b->n_stages * sizeof *layers);
	rec = sl_xmalloc((size_t)b->n_stages * sizeof *rec);
	for (int j = 0; j < b->n_stages; j++) {
		layers[j] = b->stage[j].n_layers;
		rec[j] = b->stage[j].recompute;
	}
	pc = (sl_pipe_config){ .pp = b->pp, .virt = b->virt, .outer = b->outer,
	    .inner = b->inner, .graph_batch = b->graph_batch,
	    .micro_batches = b->micro_batches, .layers = layers, .recompute = rec,
	    .layout = b->inner > 1 ? SL_LAYOUT_MEGATRON_SP : SL_LAYOUT_MEGATRON };
	of.space.recipe.shard_states = 1;
	of.schedule = b->schedule;
	rc = sl_pipeline_eval(&of, &pc, &pl, err);
	if (rc == SL_OK && pl.fits && (!r->found || !r->best.fits ||
	    pl.step_ns < r->best.step_ns)) {
		sl_pipeline_free(&r->best);
		r->best = pl;
		r->found = true;
		r->shard_states = 1;
	} else if (rc == SL_OK)
		sl_pipeline_free(&pl);
	else {
		sl_error_clear(err);	/* no such layout here: the plan stands */
		rc = SL_OK;
	}
	free(layers);
	free(rec);
	sl_hybrid_result_free(&rm);
	return rc;
}

/*
 * States sharded over the data-parallel ranks or not, when the options
 * leave it to the search (recipe.shard_states -1, the per-operator
 * search): one search each for none, the optimizer states (ZeRO-1, what
 * Megatron-LM's distributed optimizer shards) and the gradients too
 * (ZeRO-2, DeepSpeed's stage 2), beside ZeRO-3's +z per operator in every
 * one.  The fastest fitting plan is kept, so that no framework's sharding
 * of the states is outside what the per-operator search reaches.
 */
static int
states_search(const sl_hybrid_opts *o, sl_hybrid_result *r, sl_error *err)
{
	sl_hybrid_opts o1 = *o;
	int rc;

	if (o->space.recipe.shard_states >= 0)
		return zero_search(o, r, err);
	for (int ss = 0; ss <= 2; ss++) {
		sl_hybrid_result r1;

		o1.space.recipe.shard_states = ss;
		if ((rc = zero_search(&o1, ss == 0 ? r : &r1, err)) != SL_OK) {
			if (ss > 0)
				sl_hybrid_result_free(r);
			return rc;
		}
		if (ss > 0)
			result_join(r, &r1);
	}
	if ((rc = megatron_candidate(o, r, err)) != SL_OK)
		sl_hybrid_result_free(r);
	return rc;
}

/* Whether the model the search plans has a mixture's experts. */
static bool
model_has_experts(const sl_hybrid_opts *o)
{
	const sl_graph *g;
	bool has = false;

	if (o->model == NULL ||
	    (g = o->model(o->model_ctx, 1, o->space.recipe.seq, NULL)) == NULL)
		return false;
	for (int v = 0; v < g->n_ops && !has; v++)
		has = g->ops[v].kind == SL_OP_EXPERTS;
	sl_graph_free((sl_graph *)g);
	return has;
}

/*
 * A mixture under Megatron-LM: where its experts split by expert is a
 * choice of the launch (--expert-model-parallel-size and
 * --expert-tensor-parallel-size), one search each: over no axis, the
 * data- and context-parallel ones, the tensor-parallel ones (expert
 * tensor parallel 1), or both.  The fastest fitting plan is kept.
 */
int
sl_hybrid_search(const sl_hybrid_opts *o, sl_hybrid_result *r, sl_error *err)
{
	sl_hybrid_opts o1 = *o;
	int rc;

	if (o->ep_axes >= 0 || o->space.recipe.framework != SL_FW_MEGATRON ||
	    !model_has_experts(o)) {
		if (o1.ep_axes < 0)
			o1.ep_axes = 0;
		return states_search(&o1, r, err);
	}
	for (int ep = 0; ep <= (SL_EP_DATA | SL_EP_TENSOR); ep++) {
		sl_hybrid_result r1;

		o1.ep_axes = ep;
		if ((rc = states_search(&o1, ep == 0 ? r : &r1, err)) != SL_OK) {
			if (ep > 0)
				sl_hybrid_result_free(r);
			return rc;
		}
		if (ep > 0)
			result_join(r, &r1);
	}
	return SL_OK;
}
