/*
 * pipeline.c: pipeline stages and the hybrid search (Galvatron, Galvatron-BMW).
 *
 * The layers split into contiguous stages; each stage is a slice of the
 * graph whose operators the exact intra-operator solver plans on the stage
 * sub-mesh.  A schedule (GPipe, 1F1B, interleaved 1F1B) decides how many
 * micro-batches each device keeps in flight, which multiplies the stage's
 * activations, and how long the pipeline takes: the micro-batches of the
 * slowest device plus the fill and drain of the others.  The search runs
 * over the pipeline degree, the sub-mesh shape, the micro-batch size, the
 * stage boundaries and recomputation; stage solves are cached by layer
 * count, position class (first, middle, last) and the classes of the
 * layers (runs of alike layers), since stages alike in those are alike in
 * everything.  doc/cost-model.md, "Pipelines", has the formulas.
 */
#include "internal.h"
#include "json.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

static const char *const sched_names[SL_SCHED_COUNT] = { "1f1b", "gpipe", "interleaved" };

const char *
sl_schedule_name(sl_schedule s)
{
	return (unsigned)s < SL_SCHED_COUNT ? sched_names[s] : "?";
}

int
sl_schedule_from_name(const char *s)
{
	for (int i = 0; s != NULL && i < SL_SCHED_COUNT; i++)
		if (strcmp(s, sched_names[i]) == 0)
			return i;
	return -1;
}

/* ---------------------------------------------------------- schedules */

int64_t
sl_pipe_in_flight(sl_schedule s, int p, int v, int64_t m, int d)
{
	int64_t n;

	if (m < 1 || p < 1 || d < 0 || d >= p)
		return 0;
	switch (s) {
	case SL_SCHED_GPIPE:
		return m;
	case SL_SCHED_INTERLEAVED:
		if (v <= 1)
			break;		/* one chunk is plain 1F1B */
		n = 2 * (int64_t)(p - d - 1) + (int64_t)(v - 1) * p + 1;
		return n < (int64_t)v * m ? n : (int64_t)v * m;
	default:
		break;
	}
	{
		n = p - d;
		return n < m ? n : m;
	}
}

/*
 * Interleaved 1F1B as Megatron-LM runs it on device d: forward k on chunk
 * (k mod p v) / p, backward k on chunk v - 1 - (k mod p v) / p; a warm-up
 * of min(v m, 2 (p - d - 1) + (v - 1) p) forwards, then one forward and
 * one backward at a time, then the backwards left (p divides m, as
 * Megatron-LM asks; otherwise every chunk in flight is counted at the
 * largest chunk's activations).  After the warm-up the
 * chunks in flight after each forward repeat every p v steps (forwards and
 * backwards each meet every chunk p times in p v), and the cool-down only
 * releases: the peak is after a forward among the first p v steps, or
 * after the warm-up when nothing follows it.
 */
int64_t
sl_pipe_peak_acts(sl_schedule s, int p, int v, int64_t m, int d,
    const int64_t *acts)
{
	int64_t total, warm, steady, peak = 0, *n;
	int64_t pv = (int64_t)p * v;

	if (m < 1 || p < 1 || d < 0 || d >= p)
		return 0;
	if (s != SL_SCHED_INTERLEAVED || v <= 1)
		return sl_mul_sat(sl_pipe_in_flight(s, p, 1, m, d), acts[0]);
	if (m % p != 0) {
		/* no order of Megatron-LM's (it asks p | m): every chunk in
		 * flight at the largest chunk's */
		for (int c = 0; c < v; c++)
			if (acts[c] > peak)
				peak = acts[c];
		return sl_mul_sat(sl_pipe_in_flight(s, p, v, m, d), peak);
	}
	total = sl_mul_sat(v, m);
	warm = 2 * (int64_t)(p - d - 1) + (int64_t)(v - 1) * p;
	if (warm > total)
		warm = total;
	steady = total - warm < pv ? total - warm : pv;
	n = sl_xcalloc((size_t)v, sizeof *n);
	for (int64_t k = 0; k < warm; k++)
		n[(k % pv) / p]++;
	for (int64_t i = 0; i <= steady; i++) {
		int64_t held = 0;
		if (i < steady)
			n[((warm + i) % pv) / p]++;	/* forward */
		else if (steady > 0)
			break;
		for (int c = 0; c < v; c++)
			held = sl_add_sat(held, sl_mul_sat(n[c], acts[c]));
		if (held > peak)
			peak = held;
		if (i < steady)
			n[v - 1 - (i % pv) / p]--;	/* backward */
	}
	free(n);
	return peak;
}

double
sl_pipe_bubble(int p, int v, int64_t m)
{
	if (v < 1)
		v = 1;
	if (p <= 1 || m < 1)
		return 0;
	return (double)(p - 1) / ((double)v * (double)m + (double)(p - 1));
}

int64_t
sl_pipe_time(int p, int v, int64_t m, const int64_t *t)
{
	int64_t mx = 0, sum = 0;

	if (v < 1)
		v = 1;
	for (int d = 0; d < p; d++) {
		if (t[d] > mx)
			mx = t[d];
		sum = sl_add_sat(sum, t[d]);
	}
	return sl_add_sat(sl_mul_sat(m, mx), (sum - mx) / v);
}

/* One point-to-point transfer of bytes over a link. */
static int64_t
p2p_ns(int64_t bytes, const sl_link *l)
{
	double s;

	if (bytes <= 0)
		return 0;
	if (!(l->bandwidth > 0))
		return INT64_MAX / 4;
	s = (double)bytes / l->bandwidth + l->latency;
	return (int64_t)llround(s * 1e9);
}

/* ------------------------------------------------------ the stage cache */

/*
 * One strategy space per micro-batch size and sub-mesh, on the whole
 * graph: a stage is the sub-problem of its operators [a, b) and the edges
 * between them.  Its tables per recomputation are shared by every stage.
 * What a stage adds: the transfers across its boundaries, and the states
 * of a parameter it reads but another stage owns (a tied embedding read by
 * the output layer), which it must hold too.
 */

#define N_RECOMP 3	/* none, selective, full */

static const sl_recompute recomp_of[N_RECOMP] = {
	SL_RECOMP_NONE, SL_RECOMP_SELECTIVE, SL_RECOMP_FULL
};

/*
 * Per operator and strategy of the whole graph, under one recomputation.
 * rep[v]: an operator whose rows are v's, value for value (the operator at
 * the same position of layer 1, when checked equal; else v itself).
 */
typedef struct stage_tab {
	bool ready;
	sl_mem **mem;
	int64_t **compute, **comm, **sync;
	int *rep;
	int *of;		/* the operator whose rows v points at (v: its own) */
	/*
	 * ndiff[v]: how many of the operators before v have rows other than
	 * under the recomputation before this one (lazy, tab_same_prev).
	 */
	int *ndiff;
} stage_tab;

/*
 * A space and its tables.  erep[e]: an edge whose tables are e's, value for
 * value (the edge into the same slot of layer 1's operator, when checked
 * equal; else e).  Stages of equal layers share their rows through these,
 * and the solver then reads each distinct layer once (solve_dp.c).
 */
typedef struct space_entry {
	int64_t batch;
	int outer, inner;
	sl_space *sp;
	int cur_r;
	int *cand;		/* per operator: the layer-1 operator to check */
	int *erep;
	/*
	 * Per space edge: the row its stage problems' views of it point at
	 * (lazy).  Every solve fills the rows its view keeps first
	 * (type_solve), so the stage problems of a space share them.
	 */
	int64_t **erow;
	/*
	 * Per layer: the first layer of its run of alike layers (every
	 * operator alike, space.c sp->like, and wired alike); middle stages
	 * share a type only over layers of equal classes.  uniform: one run.
	 */
	int *lcls;
	bool uniform;
	stage_tab tab[N_RECOMP];
	/* its stage types by layer count, chained through stage_type.snext */
	struct stage_type **by_n;
	struct space_entry *next;
} space_entry;

/*
 * A stage's plan under one recomputation and one budget: its memory ks
 * states + k acts (k in flight; ks 1, or v for the v alike chunks of an
 * interleaved device, chunk_budget) within cap.
 */
typedef struct stage_plan {
	int r;
	int64_t ks, k, cap;
	bool ok;		/* some plan fits cap */
	int *choice;		/* per operator of the stage */
	sl_mem states;		/* params, grads, optim, buffers (acts 0) */
	int64_t acts, compute, comm, p2p, sync;
} stage_plan;

/* An operator slot of the stage that costs extra: a boundary transfer or
 * a foreign parameter's states. */
typedef struct extra {
	int op, slot;		/* op: index in the stage */
	bool p2p;
} extra;

typedef struct stage_type {
	space_entry *se;
	bool first, last;
	int l0, n_layers;	/* l0: the layers of the stage that built it */
	int a, b;		/* operators */
	sl_problem *prob;
	int *edge;		/* stage edge -> space edge */
	int n_extra;
	extra *ex;
	int64_t **xmem[N_RECOMP], **xp2p;	/* [op][strategy]: extras (lazy) */
	/*
	 * The problem's own rows, and views in which operators and edges with
	 * equal tables (and no extras) point at the first such row of the
	 * stage: type_solve fills that row alone.  prim: the operators and
	 * edges whose rows the views hold.
	 */
	int64_t **own_cost, **own_ecost;
	int64_t **view_cost[N_RECOMP], **view_ecost;
	int *prim[N_RECOMP], nprim[N_RECOMP], *eprim, neprim;
	sl_dp *dp;
	int *fast[N_RECOMP];	/* the fastest plan, whatever its memory */
	int n_plan, cap_plan;
	stage_plan *plan;
	struct stage_type *next;	/* every type (hyb.types) */
	struct stage_type *snext;	/* its space's, of its layer count */
} stage_type;

typedef struct graph_entry {
	int64_t batch;
	sl_graph *g;
	int *last_reader;	/* per tensor: the last operator reading it, -1 */
	struct graph_entry *next;
} graph_entry;

typedef struct hyb {
	const sl_hybrid_opts *o;
	graph_entry *graphs;
	space_entry *spaces;
	stage_type *types;
	sl_dp_pool *pool;	/* layers the stages' solvers share */
	int64_t solves, hits;
	bool own_layers;	/* a stage type serves only its own layers */
} hyb;

static void
tab_free(stage_tab *t, int n_ops)
{
	if (!t->ready)
		return;
	for (int v = 0; v < n_ops; v++) {
		if (t->of[v] != v)
			continue;
		free(t->mem[v]);
		free(t->compute[v]);
		free(t->comm[v]);
		free(t->sync[v]);
	}
	free(t->of);
	free(t->mem);
	free(t->compute);
	free(t->comm);
	free(t->sync);
	free(t->rep);
	free(t->ndiff);
	t->ndiff = NULL;
	t->ready = false;
}

static void
free_rows(int64_t **x, int n)
{
	if (x == NULL)
		return;
	for (int i = 0; i < n; i++)
		free(x[i]);
	free(x);
}

static void
type_free(stage_type *t)
{
	int nops = t->b - t->a;

	for (int r = 0; r < N_RECOMP; r++) {
		free(t->fast[r]);
		free_rows(t->xmem[r], nops);
		free(t->view_cost[r]);
		free(t->prim[r]);
	}
	free_rows(t->xp2p, nops);
	free(t->view_ecost);
	free(t->eprim);
	if (t->prob != NULL) {
		t->prob->cost = t->own_cost;
		t->prob->ecost = t->own_ecost;
	}
	for (int i = 0; i < t->n_plan; i++)
		free(t->plan[i].choice);
	free(t->plan);
	free(t->ex);
	free(t->edge);
	sl_dp_free(t->dp);
	sl_problem_free(t->prob);
	free(t);
}

static void
space_free(space_entry *e)
{
	for (int r = 0; r < N_RECOMP; r++)
		tab_free(&e->tab[r], e->sp->g->n_ops);
	for (int x = 0; x < e->sp->n_edges; x++)
		free(e->erow[x]);
	free(e->erow);
	free(e->cand);
	free(e->erep);
	free(e->lcls);
	free(e->by_n);
	sl_space_free(e->sp);
	free(e);
}

/*
 * Frees the space of micro-batch graph batch on sub-mesh outer x inner
 * and its stage types, if it exists: a search done with a configuration
 * gives its memory to the next.  A later call for it builds it again.
 */
static void
hyb_drop_space(hyb *h, int64_t batch, int outer, int inner)
{
	space_entry **pe, *e;

	for (pe = &h->spaces; *pe != NULL; pe = &(*pe)->next)
		if ((*pe)->batch == batch && (*pe)->outer == outer && (*pe)->inner == inner)
			break;
	if ((e = *pe) == NULL)
		return;
	*pe = e->next;
	for (stage_type **pt = &h->types; *pt != NULL;) {
		stage_type *t = *pt;
		if (t->se == e) {
			*pt = t->next;
			type_free(t);
		} else
			pt = &t->next;
	}
	space_free(e);
}

static void
hyb_free(hyb *h)
{
	for (stage_type *t = h->types, *n; t != NULL; t = n) {
		n = t->next;
		type_free(t);
	}
	for (space_entry *e = h->spaces, *n; e != NULL; e = n) {
		n = e->next;
		space_free(e);
	}
	for (graph_entry *e = h->graphs, *n; e != NULL; e = n) {
		n = e->next;
		sl_graph_free(e->g);
		free(e->last_reader);
		free(e);
	}
	sl_dp_pool_free(h->pool);
	memset(h, 0, sizeof *h);
}

static sl_graph *
hyb_graph(hyb *h, int64_t batch, sl_error *err)
{
	graph_entry *e;

	for (e = h->graphs; e != NULL; e = e->next)
		if (e->batch == batch)
			return e->g;
	e = sl_xcalloc(1, sizeof *e);
	e->batch = batch;
	e->g = h->o->model(h->o->model_ctx, batch, h->o->space.recipe.seq, err);
	if (e->g == NULL) {
		free(e);
		return NULL;
	}
	for (int l = 1; l < e->g->n_layers; l++)
		if (e->g->layers[l].first_op < e->g->layers[l - 1].first_op) {
			sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("model '%s': its layers are not in order, so they "
			    "cannot be split into pipeline stages"), e->g->name);
			sl_graph_free(e->g);
			free(e);
			return NULL;
		}
	e->last_reader = sl_xmalloc((e->g->n_tensors ? e->g->n_tensors : 1) *
	    sizeof *e->last_reader);
	for (int t = 0; t < e->g->n_tensors; t++)
		e->last_reader[t] = -1;
	for (int v = 0; v < e->g->n_ops; v++)
		for (int q = 0; q < e->g->ops[v].n_in; q++)
			e->last_reader[e->g->ops[v].in[q]] = v;
	e->next = h->graphs;
	h->graphs = e;
	return e->g;
}

static const graph_entry *
hyb_graph_entry(const hyb *h, const sl_graph *g)
{
	for (const graph_entry *e = h->graphs; e != NULL; e = e->next)
		if (e->g == g)
			return e;
	return NULL;
}

/* Operators of the stage holding layers [l0, l0 + n) of L. */
static void
stage_ops(const sl_graph *g, int l0, int n, int *a, int *b)
{
	int L = g->n_layers;

	*a = l0 == 0 ? 0 : g->layers[l0].first_op;
	*b = l0 + n >= L ? g->n_ops : g->layers[l0 + n].first_op;
}

static int
stage_mesh(const hyb *h, int outer, int inner, sl_mesh *m, sl_error *err)
{
	int shape[2], n = 0;

	if (h->o->topo != NULL)
		return sl_topo_stage_mesh(h->o->topo, m, err);
	if (outer > 1)
		shape[n++] = outer;
	if (inner > 1 || n == 0)
		shape[n++] = inner;
	return sl_mesh_make(&h->o->hw, n, shape, m, err);
}

/* The link between neighbouring stages. */
static sl_link
pp_link(const hyb *h, int outer, int inner)
{
	int dpn = h->o->hw.devices_per_node > 0 ? h->o->hw.devices_per_node : 1;

	if (h->o->topo != NULL)
		return sl_topo_pp_link(h->o->topo);
	/* stages are a sub-mesh apart: in one node when a node holds several */
	return outer * inner < dpn && dpn % (outer * inner) == 0 ?
	    h->o->hw.intra : h->o->hw.inter;
}

/*
 * The operator each operator's rows are checked against (the one at the
 * same position of layer 1), and the edges whose tables equal, entry for
 * entry, those of the edge into the same slot of that operator.
 */
/* Where operator u (of a layer, or not) sits relative to layer l. */
static void
rel_op(const sl_graph *g, int u, int l, int *dl, int *pos)
{
	if (g->ops[u].layer < 0) {
		*dl = INT_MIN;
		*pos = u;
	} else {
		*dl = g->ops[u].layer - l;
		*pos = g->ops[u].pos;
	}
}

/*
 * Whether layer l is alike to layer l - 1: the same number of operators,
 * each alike (sp->like) to the one at its position, and every edge into
 * it from the operator at the same place relative to its layer.
 */
static bool
layer_alike_prev(const sl_space *sp, int l, const int *at)
{
	const sl_graph *g = sp->g;
	const sl_layer *ly = &g->layers[l], *pv = &g->layers[l - 1];

	if (ly->n_ops != pv->n_ops)
		return false;
	for (int i = 0; i < ly->n_ops; i++) {
		int v = ly->first_op + i, u = pv->first_op + i;
		if (g->ops[v].pos != i || g->ops[u].pos != i ||
		    sp->like[v] != sp->like[u])
			return false;
		for (int slot = 0; slot < SL_MAX_OP_TENSORS; slot++) {
			int ev = at[v * SL_MAX_OP_TENSORS + slot];
			int eu = at[u * SL_MAX_OP_TENSORS + slot];
			int d1, p1, d2, p2;
			if ((ev < 0) != (eu < 0))
				return false;
			if (ev < 0)
				continue;
			rel_op(g, sp->edges[ev].src, l, &d1, &p1);
			rel_op(g, sp->edges[eu].src, l - 1, &d2, &p2);
			if (d1 != d2 || p1 != p2 ||
			    sp->edges[ev].src_slot != sp->edges[eu].src_slot)
				return false;
		}
	}
	return true;
}

/* e->lcls and e->uniform (space_entry). */
static void
space_classes(space_entry *e)
{
	const sl_space *sp = e->sp;
	const sl_graph *g = sp->g;
	int *at = sl_xmalloc(((size_t)g->n_ops * SL_MAX_OP_TENSORS + 1) * sizeof *at);

	for (size_t i = 0; i < (size_t)g->n_ops * SL_MAX_OP_TENSORS; i++)
		at[i] = -1;
	for (int x = 0; x < sp->n_edges; x++)
		at[sp->edges[x].dst * SL_MAX_OP_TENSORS + sp->edges[x].dst_slot] = x;
	e->lcls = sl_xmalloc((g->n_layers ? g->n_layers : 1) * sizeof *e->lcls);
	e->uniform = true;
	for (int l = 0; l < g->n_layers; l++) {
		e->lcls[l] = l > 0 && layer_alike_prev(sp, l, at) ? e->lcls[l - 1] : l;
		if (e->lcls[l] != 0)
			e->uniform = false;
	}
	free(at);
}

/* Whether a type built on layers t->l0... serves the n layers from l0. */
static bool
type_serves(const stage_type *t, int l0, int n, bool plain)
{
	const space_entry *se = t->se;

	if (plain)
		return t->l0 == l0;
	if (se->uniform || t->l0 == l0)
		return true;
	for (int i = 0; i < n; i++)
		if (se->lcls[t->l0 + i] != se->lcls[l0 + i])
			return false;
	return true;
}

static void
space_reps(space_entry *e)
{
	const sl_space *sp = e->sp;
	const sl_graph *g = sp->g;
	int *at = sl_xmalloc((size_t)g->n_ops * SL_MAX_OP_TENSORS * sizeof *at);

	e->cand = sl_xmalloc((g->n_ops ? g->n_ops : 1) * sizeof *e->cand);
	e->erep = sl_xmalloc((sp->n_edges ? sp->n_edges : 1) * sizeof *e->erep);
	for (int v = 0; v < g->n_ops; v++) {
		int l = g->ops[v].layer;
		const sl_layer *ref = g->n_layers > 1 ? &g->layers[1] : NULL;
		e->cand[v] = v;
		if (ref != NULL && l >= 1 && g->layers[l].n_ops == ref->n_ops &&
		    g->ops[v].pos >= 0 && g->ops[v].pos < ref->n_ops) {
			int u = ref->first_op + g->ops[v].pos;
			if (sp->ops[u].n_strat == sp->ops[v].n_strat)
				e->cand[v] = u;
		}
	}
	for (int i = 0; i < g->n_ops * SL_MAX_OP_TENSORS; i++)
		at[i] = -1;
	for (int x = 0; x < sp->n_edges; x++)
		at[sp->edges[x].dst * SL_MAX_OP_TENSORS + sp->edges[x].dst_slot] = x;
	for (int x = 0; x < sp->n_edges; x++) {
		const sl_space_edge *ed = &sp->edges[x];
		int y = at[e->cand[ed->dst] * SL_MAX_OP_TENSORS + ed->dst_slot];
		size_t n = (size_t)sp->ops[ed->src].n_strat * sp->ops[ed->dst].n_strat;

		e->erep[x] = x;
		if (y < 0 || y == x ||
		    sp->ops[sp->edges[y].src].n_strat != sp->ops[ed->src].n_strat ||
		    sp->ops[sp->edges[y].dst].n_strat != sp->ops[ed->dst].n_strat)
			continue;
		if ((sp->edge_mem[x] == sp->edge_mem[y] && sp->edge_ns[x] == sp->edge_ns[y]) ||
		    (memcmp(sp->edge_mem[x], sp->edge_mem[y], n * sizeof(int64_t)) == 0 &&
		    memcmp(sp->edge_ns[x], sp->edge_ns[y], n * sizeof(int64_t)) == 0))
			e->erep[x] = y;
	}
	free(at);
	space_classes(e);
}

static space_entry *
hyb_space(hyb *h, int64_t batch, int outer, int inner, sl_error *err)
{
	space_entry *e;
	const sl_graph *g;
	sl_mesh mesh;

	for (e = h->spaces; e != NULL; e = e->next)
		if (e->batch == batch && e->outer == outer && e->inner == inner)
			return e;
	if ((g = hyb_graph(h, batch, err)) == NULL ||
	    stage_mesh(h, outer, inner, &mesh, err) != SL_OK)
		return NULL;
	e = sl_xcalloc(1, sizeof *e);
	e->batch = batch;
	e->outer = outer;
	e->inner = inner;
	e->cur_r = -1;
	if ((e->sp = sl_space_build(g, &mesh, &h->o->space, err)) == NULL) {
		free(e);
		return NULL;
	}
	space_reps(e);
	e->erow = sl_xcalloc(e->sp->n_edges ? e->sp->n_edges : 1, sizeof *e->erow);
	e->by_n = sl_xcalloc((size_t)g->n_layers + 1, sizeof *e->by_n);
	e->next = h->spaces;
	h->spaces = e;
	return e;
}

/*
 * The part of a node's communication that a step with several
 * micro-batches does once: the all-reduce of parameter gradients.
 */
struct sync_acc {
	const sl_space *sp;
	int64_t ns;
};

static void
sync_item(void *ctx, const sl_coll_item *c)
{
	struct sync_acc *a = ctx;
	const sl_mesh *m = &a->sp->mesh;

	if (c->coll != SL_COLL_ALL_REDUCE || c->tensor < 0 ||
	    a->sp->g->tensors[c->tensor].role != SL_ROLE_PARAMETER)
		return;
	a->ns = sl_add_sat(a->ns, sl_coll_time(c->coll, m->axes[c->axis].size,
	    c->bytes, &m->axes[c->axis].link));
}

static int64_t
node_sync_ns(const sl_space *sp, int v, int s)
{
	struct sync_acc acc = { sp, 0 };

	sl_node_colls(sp, v, s, sync_item, &acc);
	return acc.ns;
}

/* Sets the space's layers to recompute r. */
static void
space_recompute(space_entry *e, int r)
{
	if (e->cur_r == r)
		return;
	sl_space_set_recompute(e->sp, recomp_of[r]);
	e->cur_r = r;
}

/* The per-strategy tables of the whole graph under recomputation r. */
static stage_tab *
space_tab(const hyb *h, space_entry *e, int r)
{
	stage_tab *tb = &e->tab[r];
	const sl_space *sp = e->sp;
	int n = sp->g->n_ops;

	if (tb->ready)
		return tb;
	space_recompute(e, r);
	tb->mem = sl_xcalloc(n, sizeof *tb->mem);
	tb->compute = sl_xcalloc(n, sizeof *tb->compute);
	tb->comm = sl_xcalloc(n, sizeof *tb->comm);
	tb->sync = sl_xcalloc(n, sizeof *tb->sync);
	tb->of = sl_xmalloc((n ? n : 1) * sizeof *tb->of);
	for (int v = 0; v < n; v++) {
		int k = sp->ops[v].n_strat;

		if (sp->like[v] != v && !h->o->plain) {
			/* alike (space.c): its rows are those of like */
			int u = sp->like[v];
			tb->of[v] = tb->of[u];
			tb->mem[v] = tb->mem[u];
			tb->compute[v] = tb->compute[u];
			tb->comm[v] = tb->comm[u];
			tb->sync[v] = tb->sync[u];
			continue;
		}
		tb->of[v] = v;
		tb->mem[v] = sl_xmalloc(k * sizeof **tb->mem);
		tb->compute[v] = sl_xmalloc(k * sizeof(int64_t));
		tb->comm[v] = sl_xmalloc(k * sizeof(int64_t));
		tb->sync[v] = sl_xmalloc(k * sizeof(int64_t));
		for (int s = 0; s < k; s++) {
			sl_comm c;
			sl_compute cp;

			sl_node_cost(sp, v, s, NULL, &tb->mem[v][s], &c);
			/* the loss's backward buffers, once per chunk */
			tb->mem[v][s].buffers = sl_add_sat(tb->mem[v][s].buffers,
			    sl_loss_bwd_bytes(sp, v, s, NULL));
			sl_node_compute(sp, v, s, NULL, &cp);
			if (h->o->offload_optimizer)
				tb->mem[v][s].optim = 0;
			tb->compute[v][s] = cp.fwd_ns + cp.bwd_ns + cp.recompute_ns;
			tb->sync[v][s] = node_sync_ns(sp, v, s);
			tb->comm[v][s] = sl_comm_total(&c) - tb->sync[v][s];
		}
	}
	tb->rep = sl_xmalloc((n ? n : 1) * sizeof *tb->rep);
	for (int v = 0; v < n; v++) {
		int u = e->cand[v], k = sp->ops[v].n_strat;
		tb->rep[v] = v;
		if (u < v && tb->of[u] == tb->of[v])
			tb->rep[v] = u;		/* the very rows */
		else if (u < v && memcmp(tb->mem[v], tb->mem[u], k * sizeof **tb->mem) == 0 &&
		    memcmp(tb->compute[v], tb->compute[u], k * sizeof(int64_t)) == 0 &&
		    memcmp(tb->comm[v], tb->comm[u], k * sizeof(int64_t)) == 0 &&
		    memcmp(tb->sync[v], tb->sync[u], k * sizeof(int64_t)) == 0)
			tb->rep[v] = u;
	}
	tb->ready = true;
	return tb;
}

/*
 * Whether operators [a, b) have the same rows under recomputation r as
 * under r - 1 (recomputing selected parts changes nothing where those
 * parts keep no activations).  Edges and a stage's extras (type_extras)
 * do not depend on r, so such a stage is the same problem under both.
 */
static bool
tab_same_prev(const hyb *h, space_entry *e, int r, int a, int b)
{
	stage_tab *tb, *pv;
	int n = e->sp->g->n_ops;

	if (r == 0)
		return false;
	pv = space_tab(h, e, r - 1);
	tb = space_tab(h, e, r);
	if (tb->ndiff == NULL) {
		tb->ndiff = sl_xmalloc((size_t)(n + 1) * sizeof *tb->ndiff);
		tb->ndiff[0] = 0;
		for (int v = 0; v < n; v++) {
			int k = e->sp->ops[v].n_strat;
			bool same = memcmp(tb->mem[v], pv->mem[v], k * sizeof **tb->mem) == 0 &&
			    memcmp(tb->compute[v], pv->compute[v], k * sizeof(int64_t)) == 0 &&
			    memcmp(tb->comm[v], pv->comm[v], k * sizeof(int64_t)) == 0 &&
			    memcmp(tb->sync[v], pv->sync[v], k * sizeof(int64_t)) == 0;
			tb->ndiff[v + 1] = tb->ndiff[v] + !same;
		}
	}
	return tb->ndiff[b] == tb->ndiff[a];
}

/*
 * The edge rows of stage t: an edge whose tables equal an earlier edge's of
 * the stage (erep) shares its row; eprim lists the rows that stay.
 */
static void
type_edges(stage_type *t, bool plain)
{
	space_entry *se = t->se;
	sl_problem *p = t->prob;
	int m = p->m, *first;

	first = sl_xmalloc((se->sp->n_edges ? se->sp->n_edges : 1) * sizeof *first);
	for (int e = 0; e < m; e++)
		first[se->erep[t->edge[e]]] = -1;
	if (plain)
		for (int e = 0; e < m; e++)
			first[t->edge[e]] = -1;
	t->own_ecost = p->ecost;	/* rows of its own: none */
	t->view_ecost = sl_xmalloc((m ? m : 1) * sizeof *t->view_ecost);
	t->eprim = sl_xmalloc((m ? m : 1) * sizeof *t->eprim);
	for (int e = 0; e < m; e++) {
		int key = plain ? t->edge[e] : se->erep[t->edge[e]];
		if (first[key] < 0) {
			first[key] = e;
			t->eprim[t->neprim++] = e;
			if (se->erow[key] == NULL)
				se->erow[key] = sl_xcalloc((size_t)p->k[p->edge[e][0]] *
				    p->k[p->edge[e][1]], sizeof **se->erow);
		}
		t->view_ecost[e] = se->erow[key];
	}
	free(first);
	p->ecost = t->view_ecost;
}

static stage_type *
hyb_type(hyb *h, int64_t batch, int outer, int inner, int l0, int n,
    sl_error *err)
{
	const sl_graph *g;
	const sl_space *sp;
	space_entry *se;
	stage_type *t;
	bool first = l0 == 0, last;
	int a, b, *k, (*ends)[2], ne = 0, cap = 8;

	if ((se = hyb_space(h, batch, outer, inner, err)) == NULL)
		return NULL;
	sp = se->sp;
	g = sp->g;
	last = l0 + n >= g->n_layers;
	if (l0 < 0 || n < 1 || l0 + n > g->n_layers) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("the stages hold %d layers; the model has %d"), l0 + n, g->n_layers);
		return NULL;
	}
	for (t = se->by_n[n]; t != NULL; t = t->snext)
		if (t->first == first && t->last == last &&
		    type_serves(t, l0, n, h->o->plain || h->own_layers))
			return t;
	t = sl_xcalloc(1, sizeof *t);
	t->se = se;
	t->first = first;
	t->last = last;
	t->l0 = l0;
	t->n_layers = n;
	stage_ops(g, l0, n, &a, &b);
	t->a = a;
	t->b = b;
	k = sl_xmalloc((b - a) * sizeof *k);
	for (int v = a; v < b; v++)
		k[v - a] = sp->ops[v].n_strat;
	ends = sl_xmalloc((sp->n_edges ? sp->n_edges : 1) * sizeof *ends);
	t->edge = sl_xmalloc((sp->n_edges ? sp->n_edges : 1) * sizeof *t->edge);
	for (int e = 0; e < sp->n_edges; e++) {
		int u = sp->edges[e].src, v = sp->edges[e].dst;
		if (u >= a && u < b && v >= a && v < b) {
			ends[ne][0] = u - a;
			ends[ne][1] = v - a;
			t->edge[ne++] = e;
		}
	}
	/* edges get rows below: only those the view keeps (type_edges) */
	t->prob = sl_problem_new_rows(b - a, k, 0, NULL, false);
	free(k);
	if (t->prob == NULL) {
		free(ends);
		free(t->edge);
		free(t);
		sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, _("cannot build the problem"));
		return NULL;
	}
	free(t->prob->edge);
	free(t->prob->ecost);
	t->prob->m = ne;
	t->prob->edge = sl_xmalloc((ne ? ne : 1) * sizeof *t->prob->edge);
	memcpy(t->prob->edge, ends, ne * sizeof *ends);
	t->prob->ecost = sl_xcalloc(ne ? ne : 1, sizeof *t->prob->ecost);
	free(ends);
	type_edges(t, h->o->plain);
	for (int v = a; v < b; v++) {
		t->prob->layer[v - a] = g->ops[v].layer;
		t->prob->pos[v - a] = g->ops[v].pos;
	}
	/* a row of its own only where a view keeps one (type_views) */
	t->own_cost = t->prob->cost;
	/* the slots that cost extra; read: tensors some earlier operator of
	 * the stage reads */
	{
		const int *last = hyb_graph_entry(h, g)->last_reader;
		bool *read = sl_xcalloc(g->n_tensors ? g->n_tensors : 1, sizeof *read);

		t->ex = sl_xmalloc(cap * sizeof *t->ex);
		for (int v = a; v < b; v++) {
			const sl_op *op = &g->ops[v];
			for (int i = 0; i < sl_op_nslots(op); i++) {
				int ti = sl_op_slot_tensor(op, i);
				const sl_tensor *ts = &g->tensors[ti];
				bool p2p = false, foreign = false;

				if (i < op->n_in && ts->role == SL_ROLE_ACTIVATION &&
				    ts->producer < a) {
					/* the first reader receives it, sends its gradient */
					p2p = !read[ti];
				} else if (i >= op->n_in && sp->consumed[ti]) {
					/* made here, read by a later stage */
					p2p = last[ti] >= b;
				} else if (i < op->n_in && ts->role == SL_ROLE_PARAMETER &&
				    (sp->owner[ti] < a || sp->owner[ti] >= b)) {
					foreign = !read[ti];
				}
				if (!p2p && !foreign)
					continue;
				if (t->n_extra == cap) {
					cap *= 2;
					t->ex = sl_xrealloc(t->ex, cap * sizeof *t->ex);
				}
				t->ex[t->n_extra].op = v - a;
				t->ex[t->n_extra].slot = i;
				t->ex[t->n_extra].p2p = p2p;
				t->n_extra++;
			}
			for (int q = 0; q < op->n_in; q++)
				read[op->in[q]] = true;
		}
		free(read);
	}
	t->next = h->types;
	h->types = t;
	t->snext = se->by_n[n];
	se->by_n[n] = t;
	return t;
}

/* The extras of a stage under r: memory (foreign states) and p2p time. */
static void
type_extras(const hyb *h, stage_type *t, int r)
{
	const sl_space *sp = t->se->sp;
	const sl_graph *g = sp->g;
	int nops = t->b - t->a;
	sl_link pl;

	if (t->xmem[r] != NULL)
		return;
	pl = pp_link(h, t->se->outer, t->se->inner);
	t->xmem[r] = sl_xcalloc(nops, sizeof *t->xmem[r]);
	if (t->xp2p == NULL)
		t->xp2p = sl_xcalloc(nops, sizeof *t->xp2p);
	for (int x = 0; x < t->n_extra; x++) {
		int v = t->ex[x].op, opi = v + t->a, i = t->ex[x].slot;
		const sl_op *op = &g->ops[opi];
		const sl_tensor *ts = &g->tensors[sl_op_slot_tensor(op, i)];
		int k = sp->ops[opi].n_strat;
		bool need_p2p = t->ex[x].p2p;

		if (t->xmem[r][v] == NULL)
			t->xmem[r][v] = sl_xcalloc(k, sizeof(int64_t));
		if (t->xp2p[v] == NULL)
			t->xp2p[v] = sl_xcalloc(k, sizeof(int64_t));
		for (int s = 0; s < k; s++) {
			const sl_spec *spec = &sp->ops[opi].strat[s].spec[i];
			int64_t el = sl_local_elems(&sp->mesh, spec, ts, NULL);
			if (need_p2p) {
				if (r == 0)
					t->xp2p[v][s] += 2 * p2p_ns(sl_mul_sat(el,
					    sl_elem_bytes(sp, ts)), &pl);
			} else {
				int64_t per = 0;
				for (int c = SL_CAT_PARAMS; c <= SL_CAT_OPTIM; c++)
					if (!(c == SL_CAT_OPTIM && h->o->offload_optimizer))
						per += sl_recipe_state_bytes(&sp->opts.recipe, c);
				t->xmem[r][v][s] += sl_mul_sat(el, per);
			}
		}
	}
	if (r != 0 && t->xmem[0] == NULL)
		type_extras(h, t, 0);	/* p2p is filled on r = 0 */
}

static int64_t
x_at(int64_t **x, int v, int s)
{
	return x != NULL && x[v] != NULL ? x[v][s] : 0;
}

/* Totals of a choice under the tables. */
static void
plan_totals(const stage_type *t, const stage_tab *tb, int r, const int *c,
    stage_plan *sp)
{
	const sl_space *s = t->se->sp;

	memset(&sp->states, 0, sizeof sp->states);
	sp->acts = sp->compute = sp->comm = sp->p2p = sp->sync = 0;
	for (int v = 0; v < t->b - t->a; v++) {
		int o = v + t->a;
		const sl_mem *m = &tb->mem[o][c[v]];
		sp->states.params += m->params;
		sp->states.grads += m->grads;
		sp->states.optim += m->optim + x_at(t->xmem[r], v, c[v]);
		sp->states.buffers += m->buffers;
		sp->acts += m->acts;
		sp->compute += tb->compute[o][c[v]];
		sp->comm += tb->comm[o][c[v]];
		sp->sync += tb->sync[o][c[v]];
		sp->p2p += x_at(t->xp2p, v, c[v]);
	}
	for (int e = 0; e < t->prob->m; e++) {
		int se = t->edge[e];
		int idx = c[t->prob->edge[e][0]] * t->prob->k[t->prob->edge[e][1]] +
		    c[t->prob->edge[e][1]];
		sp->states.buffers += s->edge_mem[se][idx];
		sp->comm += s->edge_ns[se][idx];
	}
}

static int64_t
plan_mem(const stage_plan *p, int64_t ks, int64_t k)
{
	return sl_add_sat(sl_mul_sat(ks, sl_mem_total(&p->states)),
	    sl_mul_sat(k, p->acts));
}

static int64_t
plan_micro(const stage_plan *p)
{
	return sl_add_sat(sl_add_sat(p->compute, p->comm), p->p2p);
}

/*
 * The node view of stage t under r: an operator without extras whose rows
 * equal another's (tb->rep) points at the first such operator's row of the
 * stage; prim lists the rows that stay.
 */
static void
type_views(stage_type *t, const stage_tab *tb, int r, bool plain)
{
	const space_entry *se = t->se;
	int n = t->prob->n;
	int *first;

	if (t->view_cost[r] != NULL)
		return;
	first = sl_xmalloc((se->sp->g->n_ops ? se->sp->g->n_ops : 1) * sizeof *first);
	for (int v = 0; v < n; v++)
		first[tb->rep[v + t->a]] = -1;
	t->view_cost[r] = sl_xmalloc((n ? n : 1) * sizeof *t->view_cost[r]);
	t->prim[r] = sl_xmalloc((n ? n : 1) * sizeof *t->prim[r]);
	for (int v = 0; v < n; v++) {
		int key = tb->rep[v + t->a];
		bool extra = plain || (t->xmem[r] != NULL && t->xmem[r][v] != NULL) ||
		    (t->xp2p != NULL && t->xp2p[v] != NULL);
		if (extra || first[key] < 0) {
			if (!extra)
				first[key] = v;
			t->prim[r][t->nprim[r]++] = v;
			if (t->own_cost[v] == NULL)
				t->own_cost[v] = sl_xcalloc(t->prob->k[v], sizeof **t->own_cost);
			t->view_cost[r][v] = t->own_cost[v];
		} else
			t->view_cost[r][v] = t->own_cost[first[key]];
	}
	free(first);
}

/* Solves the stage at memory weight wm and time weight wt. */
static int
type_solve(hyb *h, stage_type *t, const stage_tab *tb, int r, int64_t ks,
    int64_t k, int64_t m, double wm, double wt, int *choice, sl_error *err)
{
	sl_problem *p = t->prob;
	const sl_space *sps = t->se->sp;
	sl_solution sol;
	int rc;

	type_views(t, tb, r, h->o->plain);
	p->cost = t->view_cost[r];
	p->ecost = t->view_ecost;
	for (int i = 0; i < t->nprim[r]; i++) {
		int v = t->prim[r][i], o = v + t->a;
		for (int s = 0; s < p->k[v]; s++) {
			const sl_mem *mm = &tb->mem[o][s];
			double mem = (double)ks * (double)(sl_mem_total(mm) - mm->acts +
			    x_at(t->xmem[r], v, s)) + (double)k * (double)mm->acts;
			double ns = (double)m * (double)(tb->compute[o][s] +
			    tb->comm[o][s] + x_at(t->xp2p, v, s)) +
			    (double)tb->sync[o][s];
			p->cost[v][s] = (int64_t)(wm * mem + wt * ns + 0.5);
		}
	}
	for (int i = 0; i < t->neprim; i++) {
		int e = t->eprim[i];
		int n = p->k[p->edge[e][0]] * p->k[p->edge[e][1]], se = t->edge[e];
		for (int j = 0; j < n; j++)
			p->ecost[e][j] = (int64_t)(wm * (double)sps->edge_mem[se][j] +
			    wt * (double)m * (double)sps->edge_ns[se][j] + 0.5);
	}
	sl_solution_init(&sol, p->n);
	h->solves++;
	if (t->dp == NULL && (t->dp = sl_dp_new(p, NULL)) != NULL && !h->o->plain) {
		if (h->pool == NULL)
			h->pool = sl_dp_pool_new();
		sl_dp_set_pool(t->dp, h->pool);
	}
	if (t->dp != NULL)
		rc = sl_dp_resolve(t->dp, p, &sol, err);
	else
		rc = sl_solve(p, SL_SOLVER_AUTO, NULL, &sol, err);
	if (rc == SL_OK && sol.status != SL_SOLVE_OPTIMAL)
		rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("stage solve ended %s"), sl_solve_status_name(sol.status));
	if (rc == SL_OK)
		memcpy(choice, sol.choice, p->n * sizeof *choice);
	sl_solution_free(&sol);
	return rc;
}

static double
line(const stage_plan *p, int64_t ks, int64_t k, int64_t m, double wm,
    double wt)
{
	return wm * (double)plan_mem(p, ks, k) +
	    wt * ((double)m * (double)plan_micro(p) + (double)p->sync);
}

/*
 * The fastest plan of the stage whose memory with k micro-batches in flight
 * fits cap, over the vertices of its memory / time frontier: solve for the
 * least time and the least memory, then where their lines cross, keeping
 * the side that fits, until no plan lies below the crossing (parametric
 * search, as in sweep.c).
 */
static const stage_plan *
type_plan(hyb *h, stage_type *t, int r, int64_t ks, int64_t k, int64_t m,
    int64_t cap, sl_error *err)
{
	stage_tab *tb;
	stage_plan lo, hi, mid, *out;
	int n = t->b - t->a, iter;

	for (int i = 0; i < t->n_plan; i++)
		if (t->plan[i].r == r && t->plan[i].ks == ks && t->plan[i].k == k &&
		    t->plan[i].cap == cap) {
			h->hits++;
			return &t->plan[i];
		}
	tb = space_tab(h, t->se, r);
	type_extras(h, t, r);
	memset(&lo, 0, sizeof lo);
	memset(&hi, 0, sizeof hi);
	memset(&mid, 0, sizeof mid);
	hi.choice = sl_xmalloc(n * sizeof(int));
	lo.choice = sl_xmalloc(n * sizeof(int));
	mid.choice = sl_xmalloc(n * sizeof(int));
	/* the fastest plan does not depend on k or cap: solved once per r */
	if (t->fast[r] == NULL) {
		t->fast[r] = sl_xmalloc(n * sizeof(int));
		if (type_solve(h, t, tb, r, 1, 1, m, 1e-9, 1.0, t->fast[r], err) != SL_OK) {
			free(t->fast[r]);
			t->fast[r] = NULL;
			goto fail;
		}
	} else
		h->hits++;
	memcpy(hi.choice, t->fast[r], n * sizeof(int));
	plan_totals(t, tb, r, hi.choice, &hi);
	if (plan_mem(&hi, ks, k) <= cap) {
		hi.ok = true;
		goto done;
	}
	/*
	 * A plan that fit with more micro-batches in flight fits with k: the
	 * closest such starts the search instead of the least-memory plan.
	 */
	{
		const stage_plan *warm = NULL;
		for (int i = 0; i < t->n_plan; i++) {
			const stage_plan *q = &t->plan[i];
			if (q->r == r && q->ks == ks && q->cap == cap && q->ok && q->k > k &&
			    (warm == NULL || q->k < warm->k))
				warm = q;
		}
		if (warm != NULL) {
			memcpy(lo.choice, warm->choice, n * sizeof(int));
			h->hits++;
		} else if (type_solve(h, t, tb, r, ks, k, m, 1.0, 1e-9, lo.choice, err) != SL_OK)
			goto fail;
	}
	plan_totals(t, tb, r, lo.choice, &lo);
	if (plan_mem(&lo, ks, k) > cap) {
		/* nothing fits: report the least memory */
		memcpy(hi.choice, lo.choice, n * sizeof(int));
		plan_totals(t, tb, r, hi.choice, &hi);
		hi.ok = false;
		goto done;
	}
	/*
	 * lam = wt / wm.  lo (fits) was solved at lam_lo, hi (does not) at
	 * lam_hi.  Steps solve where lo's and hi's lines cross, and stop when
	 * nothing lies below; every eighth halves the interval in log(lam)
	 * instead, which bounds the steps however many vertices lie between.
	 * (Most searches end within five steps: a halving every fourth, as
	 * before, cost GPT-3 on 64 devices 8% more solves, with the same plans.)
	 */
	{
		double lam_lo = 1e-9, lam_hi = 1e9;
		for (iter = 0; iter < 60; iter++) {
			double dm = (double)(plan_mem(&hi, ks, k) - plan_mem(&lo, ks, k));
			double dt = ((double)m * (double)plan_micro(&lo) + (double)lo.sync) -
			    ((double)m * (double)plan_micro(&hi) + (double)hi.sync);
			double wm, wt, lam;
			bool cross = iter % 8 != 7;

			if (!(dm > 0) || !(dt > 0))
				break;
			lam = cross ? dm / dt : sqrt(lam_lo * lam_hi);
			if (!cross && lam_hi / lam_lo < 1.0001)
				continue;
			wm = 1.0 / (1.0 + lam);
			wt = lam / (1.0 + lam);
			if (type_solve(h, t, tb, r, ks, k, m, wm, wt, mid.choice, err) != SL_OK)
				goto fail;
			plan_totals(t, tb, r, mid.choice, &mid);
			if (cross && line(&mid, ks, k, m, wm, wt) >= line(&lo, ks, k, m, wm, wt) - 0.5)
				break;		/* lo and hi are neighbours */
			if (plan_mem(&mid, ks, k) <= cap) {
				int *c = lo.choice;
				lo = mid;
				mid.choice = c;
				if (lam > lam_lo)
					lam_lo = lam;
			} else {
				int *c = hi.choice;
				hi = mid;
				mid.choice = c;
				if (lam < lam_hi)
					lam_hi = lam;
			}
		}
	}
	/* lo fits and is the fastest fitting vertex */
	{
		int *c = hi.choice;
		hi = lo;
		lo.choice = c;
		hi.ok = true;
	}
done:
	free(lo.choice);
	free(mid.choice);
	hi.r = r;
	hi.ks = ks;
	hi.k = k;
	hi.cap = cap;
	if (t->n_plan == t->cap_plan) {
		t->cap_plan = t->cap_plan ? 2 * t->cap_plan : 8;
		t->plan = sl_xrealloc(t->plan, t->cap_plan * sizeof *t->plan);
	}
	out = &t->plan[t->n_plan++];
	*out = hi;
	return out;
fail:
	free(lo.choice);
	free(hi.choice);
	free(mid.choice);
	return NULL;
}

/* ---------------------------------------------------------- evaluation */

void
sl_pipeline_free(sl_pipeline *pl)
{
	if (pl == NULL)
		return;
	for (int i = 0; i < pl->n_stages && pl->stage != NULL; i++)
		free(pl->stage[i].strategy);
	free(pl->stage);
	free(pl->dev);
	memset(pl, 0, sizeof *pl);
}

void
sl_hybrid_opts_default(sl_hybrid_opts *o)
{
	memset(o, 0, sizeof *o);
	sl_space_opts_default(&o->space);
	o->schedule = SL_SCHED_1F1B;
	o->slack = 1;
}

static int64_t
mem_cap(const sl_hybrid_opts *o)
{
	return o->mem_limit > 0 ? o->mem_limit :
	    o->hw.memory_bytes > 0 ? o->hw.memory_bytes : INT64_MAX / 4;
}

static int
recomp_index(sl_recompute r)
{
	return r == SL_RECOMP_SELECTIVE ? 1 : r == SL_RECOMP_FULL ? 2 : 0;
}

/* Index of the Megatron-LM plan's strategy for op v of a stage (-1 none). */
static int megatron_choice(const sl_space *sp, bool tp, int *choice, sl_error *err);
static void pipeline_megatron(hyb *h, const sl_pipe_config *c, sl_pipeline *pl);

/*
 * Whether the chunks of device d (stages d, d + p, ... of p v; layers[j]
 * layers each, or n each when layers is NULL) are alike: none is the first
 * or the last stage, all are of one length over layers of the same classes
 * (space_entry.lcls), and no stage is planned at its own layers alone
 * (h->own_layers: constraints on one layer).  Alike chunks take one plan.
 */
static bool
device_alike(const hyb *h, const space_entry *se, int p, int v, int d,
    const int *layers, int n)
{
	int ns = p * v, a0 = -1, n0 = 0;

	if (v <= 1 || h->own_layers)
		return false;
	for (int j = 0, l0 = 0, nj; j < ns; l0 += nj, j++) {
		nj = layers != NULL ? layers[j] : n;
		if (j % p != d)
			continue;
		if (j == 0 || j == ns - 1)
			return false;
		if (a0 < 0) {
			a0 = l0;
			n0 = nj;
			continue;
		}
		if (nj != n0)
			return false;
		for (int i = 0; i < n0 && !se->uniform; i++)
			if (se->lcls[l0 + i] != se->lcls[a0 + i])
				return false;
	}
	return true;
}

/*
 * The budget of a plan of stage j on device d, which keeps K of its
 * chunks' micro-batches in flight (sl_pipe_in_flight): ks states + k acts
 * within *cap (stage_plan).  One chunk per device: 1, K, the capacity.
 * Interleaved, v chunks: alike chunks (device_alike) take one plan, and
 * the device's memory, the sum of its chunks' states + K x the largest
 * chunk's acts, is then v states + K acts: v, K, the capacity, exact.
 * Otherwise (the first device holds the embedding, the last the output
 * layer) each chunk gets an even share: 1, ceil(K / v), cap / v.
 */
static void
chunk_budget(const hyb *h, int v, int64_t K, bool alike, int64_t *ks,
    int64_t *k, int64_t *cap)
{
	*cap = mem_cap(h->o);
	*ks = 1;
	*k = K;
	if (v > 1 && alike)
		*ks = v;
	else if (v > 1) {
		*k = sl_ceil_div(K, v);
		*cap /= v;
	}
}

/*
 * The activations device d of pl holds at its peak, with stage j's (one
 * of d's chunks) taken as acts_j instead of its own when j >= 0.
 */
static int64_t
dev_peak_acts(const sl_pipeline *pl, int d, int j, int64_t acts_j)
{
	int v = pl->virt > 0 ? pl->virt : 1;
	int64_t *a = sl_xmalloc((size_t)v * sizeof *a), peak;

	for (int c = 0; c < v; c++) {
		int s = c * pl->pp + d;
		a[c] = s == j ? acts_j : pl->stage[s].acts;
	}
	peak = sl_pipe_peak_acts(pl->schedule, pl->pp, v, pl->micro_batches, d, a);
	free(a);
	return peak;
}

static int
pipeline_eval(hyb *h, const sl_pipe_config *c, sl_pipeline *pl, sl_error *err)
{
	const sl_hybrid_opts *o = h->o;
	int p = c->pp, v = c->virt > 0 ? c->virt : 1, ns = p * v, l0 = 0;
	int64_t cap = mem_cap(o), m = c->micro_batches;
	const sl_graph *g;
	int64_t *t;

	memset(pl, 0, sizeof *pl);
	if ((g = hyb_graph(h, c->graph_batch, err)) == NULL)
		return err->code;
	pl->pp = p;
	pl->virt = v;
	pl->schedule = v > 1 ? SL_SCHED_INTERLEAVED :
	    o->schedule == SL_SCHED_INTERLEAVED ? SL_SCHED_1F1B : o->schedule;
	pl->graph_batch = c->graph_batch;
	pl->micro_batches = m;
	pl->pp_link = o->hw.inter;
	pl->n_stages = ns;
	pl->stage = sl_xcalloc(ns, sizeof *pl->stage);
	pl->dev = sl_xcalloc(p, sizeof *pl->dev);
	if (stage_mesh(h, c->outer, c->inner, &pl->mesh, err) != SL_OK)
		return err->code;
	/* the pipeline link: neighbouring stages sit a sub-mesh apart */
	if (pl->mesh.n_devices < (o->hw.devices_per_node > 0 ? o->hw.devices_per_node : 1) &&
	    (o->hw.devices_per_node % pl->mesh.n_devices) == 0 &&
	    (int64_t)pl->mesh.n_devices * p <= o->hw.devices_per_node)
		pl->pp_link = o->hw.intra;
	if (o->topo != NULL)
		pl->pp_link = sl_topo_pp_link(o->topo);
	for (int d = 0; d < p; d++)
		pl->dev[d].in_flight = sl_pipe_in_flight(pl->schedule, p, v, m, d);
	pl->fits = true;
	pl->launch_tp = pl->mesh.axes[pl->mesh.n_axes - 1].size;
	pl->launch_cp = 1;
	for (int j = 0, tot = 0; j < ns; j++) {
		if (c->layers[j] < 1 || (tot += c->layers[j]) > g->n_layers)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("stage %d: %d layers do not fit the model's %d"), j,
			    c->layers[j], g->n_layers);
	}
	for (int j = 0; j < ns; j++) {
		sl_pipe_stage *st = &pl->stage[j];
		int d = j % p, n = c->layers[j];
		int64_t ks, kc, ccap;
		const stage_plan *sp;
		stage_type *ty;
		int a, b;

		ty = hyb_type(h, c->graph_batch, c->outer, c->inner, l0, n, err);
		if (ty == NULL)
			return err->code ? err->code : SL_EINTERNAL;
		chunk_budget(h, v, pl->dev[d].in_flight,
		    device_alike(h, ty->se, p, v, d, c->layers, 0), &ks, &kc, &ccap);
		sp = type_plan(h, ty, recomp_index(c->recompute[j]), ks, kc, m,
		    ccap, err);
		if (sp == NULL)
			return err->code ? err->code : SL_EINTERNAL;
		stage_ops(g, l0, n, &a, &b);
		st->first_layer = l0;
		st->n_layers = n;
		st->first_op = a;
		st->n_ops = b - a;
		st->device = d;
		st->recompute = c->recompute[j];
		st->n_strat_ops = b - a;
		st->strategy = sl_xmalloc((b - a) * sizeof *st->strategy);
		for (int u = 0; u < b - a; u++)
			snprintf(st->strategy[u], sizeof st->strategy[u], "%s",
			    ty->se->sp->ops[u + a].strat[sp->choice[u]].name);
		st->states = sp->states;
		st->acts = sp->acts;
		st->compute_ns = sp->compute;
		st->comm_ns = sl_add_sat(sp->comm, sp->p2p);
		st->p2p_ns = sp->p2p;
		st->micro_ns = plan_micro(sp);
		st->sync_ns = sp->sync;
		st->megatron_ns = st->micro_ns;
		st->megatron_mem = -1;
		st->expressible = true;
		pl->dev[d].states = sl_add_sat(pl->dev[d].states, sl_mem_total(&st->states));
		pl->dev[d].micro_ns = sl_add_sat(pl->dev[d].micro_ns, st->micro_ns);
		if (st->sync_ns > pl->sync_ns)
			pl->sync_ns = st->sync_ns;
		if (!sp->ok)
			pl->fits = false;
		/* FLOPs: the stage's useful work per micro-batch, all devices */
		for (int u = 0; u < b - a; u++) {
			sl_compute cp;
			sl_node_compute(ty->se->sp, u + a, sp->choice[u], NULL, &cp);
			pl->flops = sl_add_sat(pl->flops, sl_mul_sat(sl_mul_sat(
			    cp.flops_fwd + cp.flops_bwd, m), pl->mesh.n_devices));
		}
		l0 += n;
	}
	if (l0 != g->n_layers)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("the stages hold %d layers; the model has %d"), l0, g->n_layers);
	t = sl_xmalloc(p * sizeof *t);
	for (int d = 0; d < p; d++) {
		sl_pipe_dev *dv = &pl->dev[d];
		dv->acts = dev_peak_acts(pl, d, -1, 0);
		dv->mem = sl_add_sat(dv->states, dv->acts);
		if (dv->mem > pl->max_mem)
			pl->max_mem = dv->mem;
		if (dv->mem > cap)
			pl->fits = false;
		t[d] = dv->micro_ns;
	}
	pl->pipe_ns = sl_pipe_time(p, v, m, t);
	{
		int64_t mx = 0;
		for (int d = 0; d < p; d++)
			if (t[d] > mx)
				mx = t[d];
		pl->bubble_ns = pl->pipe_ns - sl_mul_sat(m, mx);
	}
	pl->step_ns = sl_add_sat(pl->pipe_ns, pl->sync_ns);
	free(t);
	return SL_OK;
}

int
sl_pipeline_eval(const sl_hybrid_opts *o, const sl_pipe_config *c,
    sl_pipeline *pl, sl_error *err)
{
	hyb h;
	int rc;

	memset(&h, 0, sizeof h);
	h.o = o;
	rc = pipeline_eval(&h, c, pl, err);
	if (rc == SL_OK)
		pipeline_megatron(&h, c, pl);
	if (rc != SL_OK)
		sl_pipeline_free(pl);
	hyb_free(&h);
	return rc;
}

/* The Megatron-LM plan of a stage (baseline.c), or an error. */
static int
megatron_choice(const sl_space *sp, bool tp, int *choice, sl_error *err)
{
	sl_scored_plan sc;
	sl_baseline_opts bo;
	int rc;

	memset(&bo, 0, sizeof bo);
	bo.mem_budget = -1;
	bo.solver = SL_SOLVER_AUTO;
	memset(&sc, 0, sizeof sc);
	/* Megatron-LM runs tensor parallelism with sequence parallelism */
	rc = sl_baseline_plan(sp, !tp ? SL_BASE_DP : SL_BASE_MEGATRON_SP, &bo,
	    NULL, &sc, err);
	if (rc == SL_OK && sc.applicable && sc.choice != NULL)
		memcpy(choice, sc.choice, sp->g->n_ops * sizeof *choice);
	else if (rc == SL_OK)
		rc = SL_EINTERNAL;
	sl_scored_plan_free(&sc);
	return rc;
}

/*
 * For each stage of pl: the Megatron-LM plan of the same stage (tensor
 * parallel on the inner axis with sequence parallelism, data parallel on
 * the outer) and whether the chosen plan is that plan.
 */
static void
pipeline_megatron(hyb *h, const sl_pipe_config *c, sl_pipeline *pl)
{
	space_entry *se = hyb_space(h, c->graph_batch, c->outer, c->inner, NULL);
	int *mc;
	bool ok;

	if (se == NULL)
		return;
	/*
	 * Context parallel: the axes over which a layer's attention splits
	 * the sequence (its loop 1, space.c ring_colls).  Tensor parallel:
	 * the inner axis, when it is no such axis and some layer operator
	 * uses it for more than the batch.
	 */
	{
		const sl_space *sp = se->sp;
		int inner = sp->mesh.n_axes - 1;
		bool tp = false;

		pl->launch_tp = 1;
		pl->launch_cp = 1;
		pl->cp_axes = 0;
		for (int j = 0; j < pl->n_stages; j++) {
			const sl_pipe_stage *st = &pl->stage[j];
			for (int u = 0; u < st->n_ops; u++) {
				int v = st->first_op + u;
				int si = sl_space_find_strategy(sp, v, st->strategy[u]);
				const sl_binding *b = sp->ops[v].bind;
				if (sp->g->ops[v].layer < 0 || si < 0)
					continue;
				if (sp->g->ops[v].kind == SL_OP_ATTENTION)
					pl->cp_axes |= sp->ops[v].strat[si].loop_axes[1];
				for (int l = 0; l < b->n_loop; l++)
					if ((sp->ops[v].strat[si].loop_axes[l] & (1u << inner)) &&
					    b->role[l] != SL_LOOP_NONE && b->role[l] != SL_LOOP_DP)
						tp = true;
			}
		}
		for (int a = 0; a < sp->mesh.n_axes; a++)
			if (pl->cp_axes & (1u << a))
				pl->launch_cp *= sp->mesh.axes[a].size;
		if (tp && !(pl->cp_axes & (1u << inner)))
			pl->launch_tp = sp->mesh.axes[inner].size;
	}
	mc = sl_xmalloc(se->sp->g->n_ops * sizeof *mc);
	ok = megatron_choice(se->sp, pl->launch_tp > 1, mc, NULL) == SL_OK;
	for (int j = 0; j < pl->n_stages; j++) {
		sl_pipe_stage *st = &pl->stage[j];
		stage_type *ty = hyb_type(h, c->graph_batch, c->outer, c->inner,
		    st->first_layer, st->n_layers, NULL);
		int r = recomp_index(st->recompute);
		stage_plan tot;

		if (ty == NULL || !ok) {
			st->expressible = false;
			st->megatron_ns = -1;
			continue;
		}
		type_extras(h, ty, r);
		plan_totals(ty, space_tab(h, se, r), r, mc + ty->a, &tot);
		st->megatron_ns = plan_micro(&tot);
		/* the device's memory with this stage on Megatron-LM's plan */
		st->megatron_mem = sl_add_sat(sl_add_sat(
		    pl->dev[st->device].states - sl_mem_total(&st->states),
		    sl_mem_total(&tot.states)),
		    dev_peak_acts(pl, st->device, j, tot.acts));
		st->expressible = true;
		for (int u = 0; u < ty->b - ty->a; u++)
			if (strcmp(se->sp->ops[u + ty->a].strat[mc[u + ty->a]].name,
			    st->strategy[u]) != 0)
				st->expressible = false;
	}
	free(mc);
}

/* ------------------------------------------------------------- search */

/*
 * Drops the stage types' solvers: what they found stays (the types' plans
 * are cached apart from them), and a type solved again gets a new one.
 * Called once a configuration is searched: its types serve no other
 * configuration of one chunk per device, and the memory they free serves
 * the next instead of memory touched for the first time (peak RSS of
 * bench_plan gpt3 64: 728 -> 545 MB, minor faults 181k -> 136k).
 */
static void
hyb_drop_solvers(hyb *h)
{
	for (stage_type *t = h->types; t != NULL; t = t->next) {
		sl_dp_free(t->dp);
		t->dp = NULL;
	}
}

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
	int64_t t, sync, mem;
} item;

typedef struct cfg {
	int p, v, outer, inner;
	int64_t G, m;
	int ns, L;
	int lo, hi;		/* layers per stage searched */
	int64_t lb;		/* no partition steps faster */
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
		const space_entry *se = hyb_space(h, c->G, c->outer, c->inner, err);
		if (se == NULL)
			return err->code ? err->code : SL_EINTERNAL;
		alike = device_alike(h, se, c->p, c->v, d, NULL, n);
	}
	chunk_budget(h, c->v, K, alike, &ks, &k, &cap);
	l0 = j == 0 ? 0 : j == c->ns - 1 ? c->L - n : c->nu > 1 ? u : 1;
	memset(out, 0, sizeof *out);
	if (o->space.recipe.recompute == SL_RECOMP_AUTO) {
		r0 = 0;
		r1 = N_RECOMP - 1;
	} else
		r0 = r1 = recomp_index(o->space.recipe.recompute);
	for (int r = r0; r <= r1; r++) {
		stage_type *ty = hyb_type(h, c->G, c->outer, c->inner, l0, n, err);
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
			if (sl_add_sat(sl_mul_sat(c->m, plan_micro(f)), f->sync) >=
			    sl_add_sat(sl_mul_sat(c->m, out->t), out->sync))
				continue;
		}
		sp = type_plan(h, ty, r, ks, k, c->m, cap, err);
		if (sp == NULL)
			return err->code ? err->code : SL_EINTERNAL;
		t = plan_micro(sp);
		key = sl_add_sat(sl_mul_sat(c->m, t), sp->sync);
		best = sl_add_sat(sl_mul_sat(c->m, out->t), out->sync);
		if ((sp->ok && !out->ok) || (sp->ok == out->ok &&
		    (r == r0 || (sp->ok ? key < best : plan_mem(sp, ks, k) < out->mem)))) {
			out->ok = sp->ok;
			out->r = r;
			out->t = t;
			out->sync = sp->sync;
			out->mem = plan_mem(sp, ks, k);
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
	const space_entry *se = hyb_space(h, c->G, c->outer, c->inner, err);
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
	    .inner = c->inner, .graph_batch = c->G, .micro_batches = c->m,
	    .layers = layers, .recompute = rec };
}

static int
i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
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
	(*partitions)++;
	if (c->v == 1) {
		/*
		 * One chunk per device: the items are the stages exactly as
		 * pipeline_eval costs them, so the step is their arithmetic.
		 */
		int64_t t[1024] = { 0 }, sync = 0, step;
		for (int j = 0, u = 0; j < c->ns; u += layers[j], j++) {
			item *it = cfg_at(c, j, u, layers[j]);
			if (!it->ok)
				return SL_OK;
			t[j] = it->t;
			if (it->sync > sync)
				sync = it->sync;
		}
		step = sl_add_sat(sl_pipe_time(c->p, 1, c->m, t), sync);
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
	if (c->v > 1) {
		/* interleaving: equal chunks, as Megatron-LM requires */
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
	const space_entry *se = hyb_space(h, c->G, c->outer, c->inner, err);

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

			if ((ty = hyb_type(h, c->G, c->outer, c->inner, l0, n, err)) == NULL)
				return err->code ? err->code : SL_EINTERNAL;
			/* infinite memory: the fastest plan */
			if ((sp = type_plan(h, ty, r, 1, 1, c->m, INT64_MAX / 4, err)) == NULL)
				return err->code ? err->code : SL_EINTERNAL;
			if (plan_micro(sp) < best)
				best = plan_micro(sp);
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
cfg_bound(hyb *h, cfg *c, int64_t *lb, sl_error *err)
{
	int n1 = (int)sl_ceil_div(c->L, c->ns), nlo;
	int64_t t1, tlo;
	int r = h->o->space.recipe.recompute == SL_RECOMP_AUTO ? 0 :
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
	*lb = sl_add_sat(sl_mul_sat(sl_mul_sat(c->m, t1), c->v),
	    sl_mul_sat(c->p - 1, tlo));
	return SL_OK;
}

/* Whether the space of (G, outer, inner) serves one of the n configurations
 * left, or the best found (evaluated again at the end). */
static bool
space_needed(const cfg *left, int n, const best_t *best, int64_t G, int outer,
    int inner)
{
	for (int j = 0; j < n; j++)
		if (left[j].G == G && left[j].outer == outer && left[j].inner == inner)
			return true;
	return best->found && best->c.graph_batch == G && best->c.outer == outer &&
	    best->c.inner == inner;
}

static int
cfg_cmp(const void *a, const void *b)
{
	const cfg *x = a, *y = b;

	return (x->lb > y->lb) - (x->lb < y->lb);
}

int
sl_hybrid_search(const sl_hybrid_opts *o, sl_hybrid_result *r, sl_error *err)
{
	hyb h;
	best_t *best = sl_xcalloc(1, sizeof *best);
	const sl_graph *g0;
	int N = o->devices, L, dpn = o->hw.devices_per_node > 0 ? o->hw.devices_per_node : 1;
	int64_t B;
	double t0 = now_ms();
	int rc = SL_OK, nc = 0, capc = 0;
	cfg *cs = NULL;
	int fix_pp = o->pp, fix_tp = o->tp, fix_outer = 0;

	memset(r, 0, sizeof *r);
	memset(&h, 0, sizeof h);
	h.o = o;
	if (o->topo != NULL) {
		sl_mesh sm;
		if ((rc = sl_topo_stage_mesh(o->topo, &sm, err)) != SL_OK) {
			free(best);
			return rc;
		}
		N = o->topo->n_devices;
		fix_pp = sl_topo_pp(o->topo);
		if (sm.n_axes == 2) {
			fix_outer = sm.axes[0].size;
			fix_tp = sm.axes[1].size;
		} else {
			bool tp = false;
			for (int a = 0; a < o->topo->n_axes; a++)
				if (o->topo->role[a] == SL_AXIS_TP)
					tp = true;
			fix_tp = tp ? sm.axes[0].size : 1;
			fix_outer = tp ? 1 : sm.axes[0].size;
		}
	}
	if (N < 1) {
		free(best);
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("the search needs a number of devices, at least 1"));
	}
	B = o->global_batch > 0 ? o->global_batch : N;
	if ((g0 = hyb_graph(&h, 1, err)) == NULL) {
		free(best);
		hyb_free(&h);
		return err->code ? err->code : SL_EINPUT;
	}
	L = g0->n_layers;
	if (L < 1) {
		free(best);
		hyb_free(&h);
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("model '%s' has no layers to split into pipeline stages"), g0->name);
	}
	/* the configurations: pipeline degree, chunks, sub-mesh, micro-batch */
	for (int p = 1; p <= N; p++) {
		int vs[3] = { 1, 0, 0 }, nv = 1;
		if (N % p != 0 || p > L || (fix_pp > 0 && p != fix_pp))
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
				if (D % inner != 0 || (fix_tp > 0 && inner != fix_tp) ||
				    (fix_outer > 0 && D / inner != fix_outer))
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
					if (v > 1 && c.m % p != 0) {
						r->pruned_batches++;
						continue;
					}
					if (nc == capc) {
						capc = capc ? 2 * capc : 32;
						cs = sl_xrealloc(cs, capc * sizeof *cs);
					}
					cs[nc++] = c;
				}
			}
		}
	}
	if (nc == 0) {
		/* nothing to evaluate: say why */
		if (r->pruned_shapes > 0 || r->pruned_batches > 0)
			snprintf(r->why_none, sizeof r->why_none,
			    _("every configuration was set aside: %lld sub-meshes (tensor "
			    "parallelism beyond a node, or chunks of unequal layers), %lld "
			    "micro-batch sizes that do not divide the global batch"),
			    (long long)r->pruned_shapes, (long long)r->pruned_batches);
		else
			snprintf(r->why_none, sizeof r->why_none,
			    _("no pipeline degree and sub-mesh match %d devices, %d layers "
			    "and the degrees asked for (--pp, --tp)"), N, L);
	}
	for (int i = 0; i < nc && rc == SL_OK; i++) {
		rc = cfg_bound(&h, &cs[i], &cs[i].lb, err);
		hyb_drop_solvers(&h);
	}
	if (rc == SL_OK && nc > 1)
		qsort(cs, nc, sizeof *cs, cfg_cmp);
	/*
	 * Best first; a configuration whose bound is no better is skipped.
	 * Once no configuration left needs a space (nor the best found, which
	 * is evaluated again at the end), it is freed.
	 */
	for (int i = 0; i < nc && rc == SL_OK; i++) {
		sl_pipe_config was = best->c;
		bool had = best->found;

		if (best->found && cs[i].lb >= best->step)
			r->pruned_bound++;
		else {
			rc = search_cfg(&h, &cs[i], r, best, err);
			hyb_drop_solvers(&h);
		}
		if (!space_needed(cs + i + 1, nc - i - 1, best, cs[i].G, cs[i].outer,
		    cs[i].inner))
			hyb_drop_space(&h, cs[i].G, cs[i].outer, cs[i].inner);
		if (had && !space_needed(cs + i + 1, nc - i - 1, best, was.graph_batch,
		    was.outer, was.inner))
			hyb_drop_space(&h, was.graph_batch, was.outer, was.inner);
	}
	if (rc == SL_OK && best->found) {
		rc = pipeline_eval(&h, &best->c, &r->best, err);
		if (rc == SL_OK) {
			pipeline_megatron(&h, &best->c, &r->best);
			r->found = true;
		}
	}
	front_prune(r);
	r->stage_solves = h.solves;
	r->cache_hits = h.hits;
	hyb_free(&h);
	free(best);
	free(cs);
	r->time_ms = now_ms() - t0;
	if (rc != SL_OK)
		sl_hybrid_result_free(r);
	return rc;
}

/* -------------------------------------------------- what would make it fit */

static int
suggest_one(const sl_hybrid_opts *base, sl_hybrid_opts *o, sl_fit_change *out,
    sl_error *err)
{
	sl_hybrid_result r;
	sl_error e2;
	int rc;

	(void)base;
	sl_error_clear(&e2);
	rc = sl_hybrid_search(o, &r, &e2);
	if (rc != SL_OK) {
		out->fits = false;
		if (rc != SL_EINPUT)
			return sl_error_set(err, rc, NULL, 0, 0, "%s", e2.msg);
		/* the change itself makes bad input (too short a sequence) */
		snprintf(out->why, sizeof out->why, "%.*s", (int)sizeof out->why - 1, e2.msg);
		return SL_OK;
	}
	out->fits = r.found;
	if (r.found) {
		out->max_mem = r.best.max_mem;
		out->step_ns = r.best.step_ns;
	} else if (r.have_least) {
		out->max_mem = r.least.max_mem;
		out->step_ns = r.least.step_ns;
	} else
		snprintf(out->why, sizeof out->why, "%s", r.why_none);
	sl_hybrid_result_free(&r);
	return SL_OK;
}

static int
change_cmp(const void *a, const void *b)
{
	const sl_fit_change *x = a, *y = b;

	if (x->fits != y->fits)
		return x->fits ? -1 : 1;
	if ((x->why[0] != '\0') != (y->why[0] != '\0'))
		return x->why[0] != '\0' ? 1 : -1;	/* not evaluated: last */
	if (x->fits)
		return (x->step_ns > y->step_ns) - (x->step_ns < y->step_ns);
	return (x->max_mem > y->max_mem) - (x->max_mem < y->max_mem);
}

int
sl_hybrid_suggest(const sl_hybrid_opts *o, sl_fit_change **out, int *n,
    sl_error *err)
{
	sl_fit_change *ch = sl_xcalloc(8, sizeof *ch);
	int k = 0, rc = SL_OK;
	sl_hybrid_opts t;

	/* recomputation */
	if (o->space.recipe.recompute != SL_RECOMP_FULL &&
	    o->space.recipe.recompute != SL_RECOMP_AUTO) {
		t = *o;
		t.space.recipe.recompute = SL_RECOMP_AUTO;
		snprintf(ch[k].what, sizeof ch[k].what, "%s",
		    _("recomputation chosen per stage (--recompute auto)"));
		if ((rc = suggest_one(o, &t, &ch[k++], err)) != SL_OK)
			goto out;
	}
	/* more pipeline stages than the search allows */
	if (o->pp > 0) {
		t = *o;
		t.pp = 0;
		snprintf(ch[k].what, sizeof ch[k].what, "%s",
		    _("any pipeline degree (drop --pp)"));
		if ((rc = suggest_one(o, &t, &ch[k++], err)) != SL_OK)
			goto out;
	}
	/* the smallest micro-batch */
	if (o->micro_batch != 1) {
		t = *o;
		t.micro_batch = 1;
		snprintf(ch[k].what, sizeof ch[k].what, "%s",
		    _("micro-batch of 1 sample per data-parallel rank"));
		if ((rc = suggest_one(o, &t, &ch[k++], err)) != SL_OK)
			goto out;
	}
	/* shorter sequence */
	{
		t = *o;
		t.space.recipe.seq = (o->space.recipe.seq > 0 ? o->space.recipe.seq :
		    o->model_seq) / 2;
		if (t.space.recipe.seq >= 1) {
			snprintf(ch[k].what, sizeof ch[k].what, _("sequence of %lld tokens"),
			    (long long)t.space.recipe.seq);
			if ((rc = suggest_one(o, &t, &ch[k++], err)) != SL_OK)
				goto out;
		}
	}
	/* more devices */
	for (int f = 2; f <= 4; f *= 2) {
		t = *o;
		t.devices = o->devices * f;
		if (o->global_batch <= 0)
			t.global_batch = o->devices;
		snprintf(ch[k].what, sizeof ch[k].what, _("%d devices"), t.devices);
		if ((rc = suggest_one(o, &t, &ch[k++], err)) != SL_OK)
			goto out;
	}
	/* optimizer states in host memory */
	if (!o->offload_optimizer) {
		t = *o;
		t.offload_optimizer = 1;
		snprintf(ch[k].what, sizeof ch[k].what, "%s",
		    _("optimizer states offloaded to host memory"));
		if ((rc = suggest_one(o, &t, &ch[k++], err)) != SL_OK)
			goto out;
	}
	/* stable, so that equals keep the order tried */
	for (int i = 1; i < k; i++)
		for (int q = i; q > 0 && change_cmp(&ch[q - 1], &ch[q]) > 0; q--) {
			sl_fit_change x = ch[q];
			ch[q] = ch[q - 1];
			ch[q - 1] = x;
		}
out:
	if (rc != SL_OK) {
		free(ch);
		*out = NULL;
		*n = 0;
		return rc;
	}
	*out = ch;
	*n = k;
	return SL_OK;
}

/* ------------------------------------------------------------- exports */

static const char *const export_names[SL_EXPORT_COUNT] = {
	"megatron", "deepspeed", "dtensor", "json"
};

int
sl_export_from_name(const char *s)
{
	for (int i = 0; s != NULL && i < SL_EXPORT_COUNT; i++)
		if (strcmp(s, export_names[i]) == 0)
			return i;
	return -1;
}

/* A growing string. */
typedef struct sbuf {
	char *s;
	size_t n, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
sb_printf(sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->s != NULL && b->n + n < b->cap) {
			b->n += n;
			return;
		}
		b->cap = (b->cap + n + 1) * 2;
		b->s = sl_xrealloc(b->s, b->cap);
	}
}

/* What every export says the same way. */
typedef struct launch_shape {
	int tp, pp, dp, cp, vpp;	/* vpp: layers per virtual stage, 0 none */
	int64_t mbs, gbs, accum;
	bool sp;			/* sequence parallel (with tensor parallel) */
	const char *granularity;	/* NULL: none */
	int recompute_layers;		/* full: layers per stage recomputed */
	bool uneven;			/* stages of unequal layer counts */
	bool mixed_recompute;		/* stages recompute differently */
	bool expressible;
	int64_t megatron_gap_ns;	/* per step: Megatron plan minus ours */
} launch_shape;

static void
shape_of(const sl_pipeline *pl, const sl_hybrid_opts *o, launch_shape *ls)
{
	int inner = pl->launch_tp > 1 ? pl->launch_tp : 1;
	int cp = pl->launch_cp > 1 ? pl->launch_cp : 1;
	int outer = pl->mesh.n_devices / (inner * cp);
	int64_t gap = 0;

	/* tensor parallel on the inner axis, context parallel on the axes
	 * attention splits the sequence over, the rest data parallel */
	memset(ls, 0, sizeof *ls);
	if (outer < 1)
		outer = 1;
	ls->tp = inner;
	ls->cp = cp;
	ls->dp = outer;
	ls->pp = pl->pp;
	ls->vpp = pl->virt > 1 ? pl->stage[0].n_layers : 0;
	ls->gbs = pl->graph_batch * pl->micro_batches;
	ls->mbs = pl->graph_batch / (outer > 0 ? outer : 1);
	ls->accum = pl->micro_batches;
	ls->sp = inner > 1;	/* as megatron_choice lays the stages out */
	ls->expressible = true;
	for (int j = 0; j < pl->n_stages; j++) {
		const sl_pipe_stage *st = &pl->stage[j];
		if (st->n_layers != pl->stage[0].n_layers)
			ls->uneven = true;
		if (st->recompute != pl->stage[0].recompute)
			ls->mixed_recompute = true;
		if (!st->expressible)
			ls->expressible = false;
		if (st->megatron_ns > 0)
			gap += st->megatron_ns - st->micro_ns;
	}
	ls->megatron_gap_ns = sl_mul_sat(gap > 0 ? gap : 0, pl->micro_batches);
	switch (pl->stage[0].recompute) {
	case SL_RECOMP_SELECTIVE:
		ls->granularity = "selective";
		break;
	case SL_RECOMP_FULL:
		ls->granularity = "full";
		ls->recompute_layers = 1;
		break;
	default:
		break;
	}
	(void)o;
}

static void
notes(sbuf *b, const sl_pipeline *pl, const launch_shape *ls, const char *cmt)
{
	char t1[32];

	if (ls->uneven) {
		sb_printf(b, "%s %s", cmt, _("stages hold unequal layer counts:"));
		for (int j = 0; j < pl->n_stages; j++)
			sb_printf(b, " %d", pl->stage[j].n_layers);
		sb_printf(b, "\n%s %s\n", cmt,
		    _("(Megatron-LM: --decoder-first-pipeline-num-layers and "
		    "--decoder-last-pipeline-num-layers, where the release has them)"));
	}
	if (ls->mixed_recompute)
		sb_printf(b, "%s %s\n", cmt,
		    _("stages recompute differently; the arguments give the first "
		    "stage's setting"));
	if (!ls->expressible)
		sb_printf(b, "%s %s %s %s\n", cmt,
		    _("the plan chooses per operator what the framework cannot say; "
		    "the nearest expressible plan is the one below, which the cost "
		    "model predicts slower by"),
		    sl_format_ns(ls->megatron_gap_ns, t1, sizeof t1), _("per step"));
	if (ls->cp > 1) {
		sb_printf(b, "%s ", cmt);
		sb_printf(b, _("context parallel: attention splits the sequence over %d "
		    "devices, K and V passed round a ring"), ls->cp);
		sb_printf(b, "\n");
		if (!ls->expressible)
			sb_printf(b, "%s %s\n", cmt,
			    _("(the comparison above is with a plan without context parallelism)"));
	}
}

/* root as text in the writer's layout (json.c). */
static char *
export_json(json_t *root, sl_error *err)
{
	char *text = sl_json_format(root);

	if (text == NULL)
		sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
		    _("cannot build the JSON export"));
	return text;
}

char *
sl_pipeline_export(const sl_pipeline *pl, const sl_hybrid_opts *o,
    sl_export_kind k, sl_error *err)
{
	launch_shape ls;
	sbuf b = { 0 };

	if (pl == NULL || pl->n_stages < 1) {
		sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s", _("no pipeline to export"));
		return NULL;
	}
	shape_of(pl, o, &ls);
	switch (k) {
	case SL_EXPORT_MEGATRON:
		notes(&b, pl, &ls, "#");
		sb_printf(&b, "--tensor-model-parallel-size %d \\\n", ls.tp);
		sb_printf(&b, "--pipeline-model-parallel-size %d \\\n", ls.pp);
		if (ls.vpp > 0)
			sb_printf(&b, "--num-layers-per-virtual-pipeline-stage %d \\\n", ls.vpp);
		if (ls.sp)
			sb_printf(&b, "--sequence-parallel \\\n");
		sb_printf(&b, "--context-parallel-size %d \\\n", ls.cp);
		if (ls.granularity != NULL) {
			sb_printf(&b, "--recompute-granularity %s \\\n", ls.granularity);
			if (ls.recompute_layers > 0)
				sb_printf(&b, "--recompute-method uniform \\\n"
				    "--recompute-num-layers %d \\\n", ls.recompute_layers);
		}
		sb_printf(&b, "--micro-batch-size %lld \\\n", (long long)ls.mbs);
		sb_printf(&b, "--global-batch-size %lld \\\n", (long long)ls.gbs);
		sb_printf(&b, "--use-distributed-optimizer\n");
		break;
	case SL_EXPORT_DEEPSPEED: {
		/*
		 * The configuration file; the stages themselves are given to
		 * PipelineModule(num_stages=pp) in code (man shardlab(1)).
		 */
		int zero = ls.dp > 1 || o->offload_optimizer ? 1 : 0;
		json_t *root, *z;

		z = json_pack("{s:i}", "stage", zero);
		if (o->offload_optimizer)
			json_object_set_new(z, "offload_optimizer", json_pack(
			    "{s:s, s:b}", "device", "cpu", "pin_memory", 1));
		root = json_pack("{s:I, s:I, s:I, s:{s:b}, s:o}",
		    "train_batch_size", (json_int_t)ls.gbs,
		    "train_micro_batch_size_per_gpu", (json_int_t)ls.mbs,
		    "gradient_accumulation_steps", (json_int_t)ls.accum,
		    "bf16", "enabled",
		    (int)(o->space.recipe.precision != SL_PREC_FP32),
		    "zero_optimization", z);
		if (pl->stage[0].recompute == SL_RECOMP_FULL)
			json_object_set_new(root, "activation_checkpointing",
			    json_pack("{s:b, s:b, s:b}", "partition_activations",
			    (int)(ls.tp > 1), "contiguous_memory_optimization", 0,
			    "cpu_checkpointing", 0));
		json_object_set_new(root, "pipeline", json_pack("{s:b, s:b}",
		    "pipe_partitioned", (int)(ls.tp > 1),
		    "grad_partitioned", (int)(ls.tp > 1)));
		return export_json(root, err);
	}
	case SL_EXPORT_DTENSOR:
		notes(&b, pl, &ls, "#");
		if (ls.cp > 1)
			sb_printf(&b, "# PyTorch DTensor / FSDP2 plan: %d pipeline stages of a "
			    "%d x %d x %d (dp x cp x tp) mesh\n", ls.pp, ls.dp, ls.cp, ls.tp);
		else
			sb_printf(&b, "# PyTorch DTensor / FSDP2 plan: %d pipeline stages of a "
			    "%d x %d (dp x tp) mesh\n", ls.pp, ls.dp, ls.tp);
		sb_printf(&b, "from torch.distributed.device_mesh import init_device_mesh\n"
		    "from torch.distributed.tensor.parallel import (\n"
		    "    ColwiseParallel, RowwiseParallel, parallelize_module)\n"
		    "from torch.distributed.fsdp import fully_shard\n\n");
		if (ls.cp > 1)
			sb_printf(&b, "from torch.distributed.tensor.experimental "
			    "import context_parallel\n");
		if (ls.cp > 1)
			sb_printf(&b, "mesh = init_device_mesh(\"cuda\", (%d, %d, %d, %d), "
			    "mesh_dim_names=(\"pp\", \"dp\", \"cp\", \"tp\"))\n",
			    ls.pp, ls.dp, ls.cp, ls.tp);
		else
			sb_printf(&b, "mesh = init_device_mesh(\"cuda\", (%d, %d, %d), "
			    "mesh_dim_names=(\"pp\", \"dp\", \"tp\"))\n", ls.pp, ls.dp, ls.tp);
		sb_printf(&b, "STAGE_LAYERS = [");
		for (int j = 0; j < pl->n_stages; j++)
			sb_printf(&b, "%s%d", j ? ", " : "", pl->stage[j].n_layers);
		sb_printf(&b, "]\nMICRO_BATCHES = %lld\n\n", (long long)pl->micro_batches);
		sb_printf(&b, "def parallelize_layer(layer):\n");
		if (ls.tp > 1)
			sb_printf(&b, "    parallelize_module(layer, mesh[\"tp\"], {\n"
			    "        \"attn.qkv\": ColwiseParallel(),\n"
			    "        \"attn.proj\": RowwiseParallel(),\n"
			    "        \"mlp.fc1\": ColwiseParallel(),\n"
			    "        \"mlp.fc2\": RowwiseParallel(),\n"
			    "    })\n");
		/* gradients are summed over the data- and context-parallel
		 * ranks together (torchtitan flattens the two the same way) */
		sb_printf(&b, "    fully_shard(layer, mesh=%s, "
		    "reshard_after_forward=False)\n", ls.cp > 1 ?
		    "mesh[\"dp\", \"cp\"]._flatten(\"dp_cp\")" : "mesh[\"dp\"]");
		sb_printf(&b, "    return layer\n");
		if (ls.cp > 1)
			sb_printf(&b, "\n# each step: the sequence dimension (1) of the inputs and\n"
			    "# labels split over mesh[\"cp\"] while the step runs\n"
			    "def step_context(tokens, labels):\n"
			    "    return context_parallel(mesh[\"cp\"], buffers=[tokens, labels],\n"
			    "                            buffer_seq_dims=[1, 1])\n");
		break;
	case SL_EXPORT_JSON: {
		json_t *root, *stages = json_array(), *shape = json_array();

		for (int i = 0; i < pl->mesh.n_axes; i++)
			json_array_append_new(shape,
			    json_integer(pl->mesh.axes[i].size));
		for (int j = 0; j < pl->n_stages; j++) {
			const sl_pipe_stage *st = &pl->stage[j];
			const sl_pipe_dev *dv = &pl->dev[st->device];
			json_t *ops = json_array();

			for (int u = 0; u < st->n_strat_ops; u++)
				json_array_append_new(ops,
				    sl_json_str(st->strategy[u]));
			json_array_append_new(stages, json_pack(
			    "{s:i, s:i, s:i, s:s, s:I, s:I, s:I, s:o}",
			    "device", st->device, "first_layer", st->first_layer,
			    "layers", st->n_layers,
			    "recompute", sl_recompute_name(st->recompute),
			    "in_flight", (json_int_t)dv->in_flight,
			    "memory_bytes", (json_int_t)dv->mem,
			    "micro_batch_time_ns", (json_int_t)st->micro_ns,
			    "ops", ops));
		}
		root = json_pack("{s:s, s:i, s:s, s:i, s:i, s:{s:o}, s:I, s:I, "
		    "s:I, s:I, s:I, s:b, s:o}",
		    "format", "shardlab-pipeline", "version", 1,
		    "schedule", sl_schedule_name(pl->schedule), "pp", pl->pp,
		    "virtual_stages", pl->virt, "mesh", "shape", shape,
		    "micro_batches", (json_int_t)pl->micro_batches,
		    "graph_batch", (json_int_t)pl->graph_batch,
		    "step_time_ns", (json_int_t)pl->step_ns,
		    "bubble_ns", (json_int_t)pl->bubble_ns,
		    "max_memory_bytes", (json_int_t)pl->max_mem,
		    "fits", (int)pl->fits, "stages", stages);
		json_object_set_new(root, "recipe",
		    sl_plan_recipe_json(&o->space.recipe, NULL, 0));
		return export_json(root, err);
	}
	default:
		sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s", _("unknown export kind"));
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* ------------------------------------------- a pipeline kept for re-use */

/*
 * The explorer re-evaluates one pipeline after every key: the graphs,
 * spaces, stage problems and plans of earlier evaluations stay cached in
 * the context, so moving a boundary solves only the stages it changed.
 * Pins and forbids hold inside every stage: an operator outside the
 * repeated layers by its name, a layer's operator at its position in every
 * layer (stages of equal length over alike layers share one problem, as
 * the layers share one plan under folding).  A strategy name the stage
 * sub-mesh lacks is skipped and counted.
 */
struct sl_pipe_ctx {
	hyb h;
	sl_constraints cs;
	int n_done, cap_done;
	stage_type **done;	/* types constrained under cs */
};

sl_pipe_ctx *
sl_pipe_ctx_new(const sl_hybrid_opts *o)
{
	sl_pipe_ctx *c = sl_xcalloc(1, sizeof *c);

	c->h.o = o;
	return c;
}

void
sl_pipe_ctx_free(sl_pipe_ctx *c)
{
	if (c == NULL)
		return;
	hyb_free(&c->h);
	sl_constraints_free(&c->cs);
	free(c->done);
	free(c);
}

/* Applies the constraints to a stage type's problem; its cached plans
 * were solved under others. */
static void
ctx_constrain_type(const sl_pipe_ctx *c, stage_type *t)
{
	const sl_space *sp = t->se->sp;
	const sl_graph *g = sp->g;
	sl_problem *p = t->prob;

	for (int v = 0; v < p->n; v++)
		memset(p->allowed[v], 1, (size_t)p->k[v]);
	/* a constraint names one operator; a type whose layers a constraint
	 * names serves only its own layers (sl_pipe_ctx_eval) */
	for (int i = 0; i < c->cs.n; i++) {
		const sl_constraint *k = &c->cs.c[i];
		int v = sl_graph_find_op(g, k->op), s;

		if (v < t->a || v >= t->b ||
		    (s = sl_space_find_strategy(sp, v, k->strategy)) < 0)
			continue;
		if (k->pin)
			for (int q = 0; q < sp->ops[v].n_strat; q++)
				p->allowed[v - t->a][q] = q == s;
		else
			p->allowed[v - t->a][s] = 0;
	}
	for (int i = 0; i < t->n_plan; i++)
		free(t->plan[i].choice);
	t->n_plan = 0;
	for (int r = 0; r < N_RECOMP; r++) {
		free(t->fast[r]);
		t->fast[r] = NULL;
	}
}

void
sl_pipe_ctx_constrain(sl_pipe_ctx *c, const sl_constraints *cs)
{
	sl_constraints_free(&c->cs);
	memset(&c->cs, 0, sizeof c->cs);
	for (int i = 0; cs != NULL && i < cs->n; i++)
		sl_constraints_add(&c->cs, cs->c[i].op, cs->c[i].strategy, cs->c[i].pin);
	/* every type is constrained again when next used (a type constrained
	 * before and not used now keeps stale allowed sets until then) */
	c->n_done = 0;
}

int
sl_pipe_ctx_eval(sl_pipe_ctx *c, const sl_pipe_config *cfg, sl_pipeline *pl,
    int *skipped, sl_error *err)
{
	int rc, l0 = 0, ns = cfg->pp * (cfg->virt > 0 ? cfg->virt : 1), n_ty = 0;
	stage_type **ty;
	space_entry *se;

	/* a constraint on one layer's operator holds in that layer only: the
	 * stages then do not share types across layers */
	if ((se = hyb_space(&c->h, cfg->graph_batch, cfg->outer, cfg->inner,
	    err)) == NULL) {
		memset(pl, 0, sizeof *pl);
		return err->code ? err->code : SL_EINTERNAL;
	}
	c->h.own_layers = false;
	for (int i = 0; i < c->cs.n && !c->h.own_layers; i++) {
		int op = sl_graph_find_op(se->sp->g, c->cs.c[i].op);
		c->h.own_layers = op >= 0 && se->sp->g->ops[op].layer >= 0;
	}
	ty = sl_xcalloc(ns > 0 ? ns : 1, sizeof *ty);
	/* the stage types of this configuration, constrained before solving */
	for (int j = 0; j < ns && cfg->layers[j] >= 1; j++) {
		stage_type *t = hyb_type(&c->h, cfg->graph_batch, cfg->outer,
		    cfg->inner, l0, cfg->layers[j], err);
		bool seen = false;

		if (t == NULL) {
			free(ty);
			memset(pl, 0, sizeof *pl);
			return err->code ? err->code : SL_EINTERNAL;
		}
		l0 += cfg->layers[j];
		ty[n_ty++] = t;
		for (int i = 0; i < c->n_done && !seen; i++)
			seen = c->done[i] == t;
		if (seen)
			continue;
		ctx_constrain_type(c, t);
		if (c->n_done == c->cap_done) {
			c->cap_done = c->cap_done ? 2 * c->cap_done : 16;
			c->done = sl_xrealloc(c->done, c->cap_done * sizeof *c->done);
		}
		c->done[c->n_done++] = t;
	}
	/* constraints that name nothing inside these stages */
	if (skipped != NULL) {
		*skipped = 0;
		for (int i = 0; i < c->cs.n && n_ty > 0; i++) {
			const sl_space *sp = ty[0]->se->sp;
			int v = sl_graph_find_op(sp->g, c->cs.c[i].op);
			bool hit = false;
			for (int j = 0; j < n_ty && !hit; j++)
				hit = v >= ty[j]->a && v < ty[j]->b &&
				    sl_space_find_strategy(sp, v, c->cs.c[i].strategy) >= 0;
			if (!hit)
				(*skipped)++;
		}
	}
	free(ty);
	rc = pipeline_eval(&c->h, cfg, pl, err);
	if (rc == SL_OK)
		pipeline_megatron(&c->h, cfg, pl);
	else
		sl_pipeline_free(pl);
	return rc;
}
