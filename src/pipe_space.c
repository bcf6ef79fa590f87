/*
 * pipe_space.c: what the stages of a pipeline share, per micro-batch graph
 * and sub-mesh: the graph (once per micro-batch size), its strategy space
 * on the stage sub-mesh, the classes of alike layers, and the tables of
 * every operator's memory, compute, communication and gradient sync under
 * each recomputation.  A stage (pipe_stage.c) is a slice of these.
 */
#include "pipe_internal.h"

#include <limits.h>
#include <stdlib.h>

const sl_recompute recomp_of[N_RECOMP] = {
	SL_RECOMP_NONE, SL_RECOMP_SELECTIVE, SL_RECOMP_FULL
};

int
recomp_index(sl_recompute r)
{
	return r == SL_RECOMP_SELECTIVE ? 1 : r == SL_RECOMP_FULL ? 2 : 0;
}

static void
tab_free(stage_tab *t, int n_ops)
{
	if (!t->ready)
		return;
	for (int v = 0; v < n_ops; v++) {
		if (t->of[v] != v)
			continue;
		free(t->mem[v]);
		free(t->time[v]);
	}
	free(t->of);
	free(t->mem);
	free(t->time);
	free(t->rep);
	free(t->ndiff);
	t->ndiff = NULL;
	t->ready = false;
}

void
space_free(space_entry *e)
{
	if (e != NULL)
		free(e->fw_choice);
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

sl_graph *
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

const graph_entry *
hyb_graph_entry(const hyb *h, const sl_graph *g)
{
	for (const graph_entry *e = h->graphs; e != NULL; e = e->next)
		if (e->g == g)
			return e;
	return NULL;
}

int
stage_mesh(const hyb *h, int outer, int inner, int rep, sl_mesh *m, sl_error *err)
{
	int shape[2], n = 0;

	if (h->o->topo != NULL)
		return sl_topo_stage_mesh(h->o->topo, m, err);
	if (rep > 1) {
		/* HSDP without named axes: the data-parallel ranks as
		 * replicate x shard groups, consecutive devices sharding (so
		 * that a node's devices shard together) */
		if (inner != 1 || outer % rep != 0)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("HSDP: %d replicate groups need a sub-mesh of data-parallel "
			    "ranks only that they divide, not %dx%d"), rep, outer, inner);
		shape[n++] = rep;
		if (outer / rep > 1)
			shape[n++] = outer / rep;
		return sl_mesh_make(&h->o->hw, n, shape, m, err);
	}
	if (outer > 1)
		shape[n++] = outer;
	if (inner > 1 || n == 0)
		shape[n++] = inner;
	return sl_mesh_make(&h->o->hw, n, shape, m, err);
}

int
hyb_rep(const hyb *h, int rep)
{
	if (rep <= 0)
		rep = h->o->dp_replicate;
	return rep > 1 ? rep : 1;
}

uint8_t
stage_zrep(const hyb *h, int rep, const sl_mesh *m, const sl_axis_role *role)
{
	int all = 1;

	if (rep <= 1)
		return 0;
	if (h->o->topo == NULL)
		return 1u;	/* axis 0 of stage_mesh's replicate x shard */
	/* named axes: a data-parallel axis of rep devices, the outer first;
	 * else every data-parallel axis when they make rep together */
	for (int a = 0; a < m->n_axes; a++)
		if (role[a] == SL_AXIS_DP && m->axes[a].size == rep)
			return (uint8_t)(1u << a);
	for (int a = 0; a < m->n_axes; a++)
		if (role[a] == SL_AXIS_DP)
			all *= m->axes[a].size;
	if (all != rep)
		return 0;
	all = 0;
	for (int a = 0; a < m->n_axes; a++)
		if (role[a] == SL_AXIS_DP)
			all |= 1 << a;
	return (uint8_t)all;
}

bool
stage_rep_ok(const hyb *h, int outer, int inner, int rep, char *why, size_t len)
{
	sl_framework fw = h->o->space.recipe.framework;
	sl_axis_role role[SL_MAX_AXES];
	sl_mesh m;
	sl_error e;
	uint8_t z;
	bool shard = false;

	if (rep <= 1)
		return true;
	/* torchtitan's data_parallel_replicate_degree with
	 * data_parallel_shard_degree (torchtitan/config/job_config.py);
	 * Megatron-LM and DeepSpeed's ZeRO shard over all of data parallel */
	if (fw != SL_FW_TORCHTITAN && fw != SL_FW_FREE) {
		snprintf(why, len, _("%s does not replicate sharded states across "
		    "groups (HSDP is torchtitan's)"), sl_framework_title(fw));
		return false;
	}
	if (!h->o->space.zero) {
		snprintf(why, len, "%s", _("HSDP replicates sharded states, and "
		    "the plan shards none"));
		return false;
	}
	if (h->o->topo == NULL && inner != 1) {
		snprintf(why, len, _("HSDP beside %d-way tensor parallelism needs a "
		    "third sub-mesh axis, and a stage's sub-mesh has two"), inner);
		return false;
	}
	if (h->o->topo == NULL && outer % rep != 0) {
		snprintf(why, len, _("%d replicate groups do not divide %d "
		    "data-parallel ranks"), rep, outer);
		return false;
	}
	sl_error_clear(&e);
	if (stage_mesh(h, outer, inner, rep, &m, &e) != SL_OK) {
		snprintf(why, len, "%s", e.msg);
		return false;
	}
	space_roles(h, outer, inner, rep, role);
	z = stage_zrep(h, rep, &m, role);
	if (z == 0) {
		snprintf(why, len, _("no data-parallel axis of the sub-mesh has %d "
		    "devices to replicate across"), rep);
		return false;
	}
	/* a data-parallel axis left to shard over: else every rank
	 * replicates, which is DDP, not HSDP */
	for (int a = 0; a < m.n_axes; a++)
		if (role[a] == SL_AXIS_DP && !(z & (1u << a)) && m.axes[a].size > 1)
			shard = true;
	if (!shard) {
		snprintf(why, len, _("%d replicate groups leave no data-parallel "
		    "ranks to shard over"), rep);
		return false;
	}
	return true;
}

/* The link between neighbouring stages. */
sl_link
pp_link(const hyb *h, int outer, int inner)
{
	int dpn = h->o->hw.devices_per_node > 0 ? h->o->hw.devices_per_node : 1;

	if (h->o->topo != NULL)
		return sl_topo_pp_link(h->o->topo);
	/* stages are a sub-mesh apart: in one node when a node holds several */
	return outer * inner < dpn && dpn % (outer * inner) == 0 ?
	    h->o->hw.intra : h->o->hw.inter;
}

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

/*
 * The operator each operator's rows are checked against (the one at the
 * same position of layer 1), and the edges whose tables equal, entry for
 * entry, those of the edge into the same slot of that operator.
 */
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

space_entry *
hyb_space(hyb *h, int64_t batch, int outer, int inner, int rep, sl_error *err)
{
	space_entry *e;
	const sl_graph *g;
	sl_mesh mesh;
	sl_space_opts so = h->o->space;
	sl_axis_role role[SL_MAX_AXES];
	uint8_t z;

	rep = rep > 1 ? rep : 1;
	for (e = h->spaces; e != NULL; e = e->next)
		if (e->batch == batch && e->outer == outer && e->inner == inner &&
		    e->rep == rep)
			return e;
	if ((g = hyb_graph(h, batch, err)) == NULL ||
	    stage_mesh(h, outer, inner, rep, &mesh, err) != SL_OK)
		return NULL;
	/* HSDP: +z leaves the replicate axes out (space.c) */
	space_roles(h, outer, inner, rep, role);
	z = stage_zrep(h, rep, &mesh, role);
	if (rep > 1 && z == 0) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("no data-parallel axis of the sub-mesh has %d devices to "
		    "replicate across"), rep);
		return NULL;
	}
	so.zero_replicate |= z;
	e = sl_xcalloc(1, sizeof *e);
	e->batch = batch;
	e->outer = outer;
	e->inner = inner;
	e->rep = rep;
	e->cur_r = -1;
	if ((e->sp = sl_space_build(g, &mesh, &so, err)) == NULL) {
		free(e);
		return NULL;
	}
	space_reps(e);
	memcpy(e->role, role, sizeof e->role);
	e->erow = sl_xcalloc(e->sp->n_edges ? e->sp->n_edges : 1, sizeof *e->erow);
	e->by_n = sl_xcalloc((size_t)g->n_layers + 1, sizeof *e->by_n);
	e->next = h->spaces;
	h->spaces = e;
	return e;
}

/*
 * The part of a node's communication that a step with several
 * micro-batches does once: the reduction of parameter gradients (*ns: an
 * all-reduce, or a reduce-scatter under recipe.shard_states,
 * sl_coll_grad_sync), and *in_comm, those collectives and the all-gather
 * of the updated weights that follows them (the optimizer's, compute.c)
 * as sl_node_cost counts them.
 */
struct sync_acc {
	const sl_space *sp;
	int v, s;
	int64_t ns, in_comm;
};

static void
sync_item(void *ctx, const sl_coll_item *c)
{
	struct sync_acc *a = ctx;
	const sl_mesh *m = &a->sp->mesh;
	const sl_link *l = &m->axes[c->axis].link;
	int n = m->axes[c->axis].size;
	int64_t t = sl_coll_time(c->coll, n, c->bytes, l);

	if (c->cause == SL_CAUSE_STATE_GATHER) {
		a->in_comm = sl_add_sat(a->in_comm, t);
		return;
	}
	if (!sl_coll_grad_sync(a->sp, a->v, a->s, c))
		return;
	a->ns = sl_add_sat(a->ns, t);
	a->in_comm = sl_add_sat(a->in_comm, t);
}

static int64_t
node_sync_ns(const sl_space *sp, int v, int s, int64_t *in_comm)
{
	struct sync_acc acc = { sp, v, s, 0, 0 };

	sl_node_colls(sp, v, s, sync_item, &acc);
	*in_comm = acc.in_comm;
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
stage_tab *
space_tab(const hyb *h, space_entry *e, int r)
{
	stage_tab *tb = &e->tab[r];
	const sl_space *sp = e->sp;
	int n = sp->g->n_ops;

	/* under a framework only its plan's entries are read (type_fw_plan):
	 * the other strategies' stay zero */
	const int *fc = h->o->space.recipe.framework != SL_FW_FREE &&
	    !h->all_tabs ? space_fw_choice(h, e, NULL) : NULL;
	bool **need = NULL;

	if (tb->ready)
		return tb;
	space_recompute(e, r);
	if (fc != NULL) {
		need = sl_xcalloc(n ? n : 1, sizeof *need);
		for (int v = 0; v < n; v++) {
			int u = sp->like[v] != v && !h->o->plain ? sp->like[v] : v;
			while (sp->like[u] != u && !h->o->plain)
				u = sp->like[u];
			if (need[u] == NULL)
				need[u] = sl_xcalloc(sp->ops[u].n_strat, sizeof **need);
			need[u][fc[v]] = true;
		}
	}
	tb->mem = sl_xcalloc(n, sizeof *tb->mem);
	tb->time = sl_xcalloc(n, sizeof *tb->time);
	tb->of = sl_xmalloc((n ? n : 1) * sizeof *tb->of);
	for (int v = 0; v < n; v++) {
		int k = sp->ops[v].n_strat;

		if (sp->like[v] != v && !h->o->plain) {
			/* alike (space.c): its rows are those of like */
			int u = sp->like[v];
			tb->of[v] = tb->of[u];
			tb->mem[v] = tb->mem[u];
			tb->time[v] = tb->time[u];
			continue;
		}
		tb->of[v] = v;
		tb->mem[v] = sl_xmalloc(k * sizeof **tb->mem);
		tb->time[v] = sl_xcalloc(k, sizeof **tb->time);
		for (int s = 0; s < k; s++) {
			op_time *ot = &tb->time[v][s];
			sl_comm c;
			sl_compute cp;
			int64_t in_comm;

			if (need != NULL && !need[v][s]) {
				memset(&tb->mem[v][s], 0, sizeof tb->mem[v][s]);
				memset(ot, 0, sizeof *ot);
				continue;
			}
			/* the stage's fold of the operator's items */
			sl_node_stage_mem(sp, v, s, NULL, &tb->mem[v][s]);
			sl_node_cost(sp, v, s, NULL, NULL, &c);
			sl_node_compute(sp, v, s, NULL, &cp);
			ot->compute = cp.fwd_ns + cp.bwd_ns + cp.recompute_ns;
			ot->bwd = cp.bwd_ns + cp.recompute_ns;
			ot->sync = node_sync_ns(sp, v, s, &in_comm);
			ot->comm = sl_comm_total(&c) - in_comm;
			ot->pelems = cp.param_elems;
			ot->optim = cp.optim_ns;
			if (h->o->offload_optimizer) {
				int64_t d2h, host;
				tb->mem[v][s].optim = 0;
				sl_offload_ns(&sp->mesh.hw, &sp->opts.recipe,
				    cp.optim_elems, &d2h, &host);
				ot->sync = sl_add_sat(ot->sync, d2h);
				/* the host's step over the device's share; the
				 * weights it sends back are then all-gathered as
				 * without offload (stage_1_and_2.py, step) */
				ot->optim = sl_add_sat(host, cp.gather_ns);
			}
		}
	}
	for (int v = 0; need != NULL && v < n; v++)
		free(need[v]);
	free(need);
	tb->rep = sl_xmalloc((n ? n : 1) * sizeof *tb->rep);
	for (int v = 0; v < n; v++) {
		int u = e->cand[v], k = sp->ops[v].n_strat;
		tb->rep[v] = v;
		if (u < v && tb->of[u] == tb->of[v])
			tb->rep[v] = u;		/* the very rows */
		else if (u < v && memcmp(tb->mem[v], tb->mem[u], k * sizeof **tb->mem) == 0 &&
		    memcmp(tb->time[v], tb->time[u], k * sizeof **tb->time) == 0)
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
bool
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
			    memcmp(tb->time[v], pv->time[v], k * sizeof **tb->time) == 0;
			tb->ndiff[v + 1] = tb->ndiff[v] + !same;
		}
	}
	return tb->ndiff[b] == tb->ndiff[a];
}

bool
roles_bind(const hyb *h)
{
	return h->o->topo != NULL || h->o->space.recipe.framework != SL_FW_FREE;
}

void
space_roles(const hyb *h, int outer, int inner, int rep, sl_axis_role *role)
{
	const sl_topo *t = h->o->topo;
	int n = 0;

	for (int a = 0; a < SL_MAX_AXES; a++)
		role[a] = SL_AXIS_DP;
	if (t != NULL) {
		for (int a = 0; a < t->n_axes && n < SL_MAX_AXES; a++)
			if (t->role[a] != SL_AXIS_PP)
				role[n++] = t->role[a];
		return;
	}
	/* stage_mesh: outer x inner, an axis of size 1 left out; the inner
	 * axis is the tensor-parallel one (under HSDP, replicate x shard:
	 * both data parallel) */
	if (rep > 1)
		return;
	if (outer > 1 && inner > 1)
		role[1] = SL_AXIS_TP;
	else if (inner > 1)
		role[0] = SL_AXIS_TP;
}

unsigned
space_ep_axes(const hyb *h, const sl_axis_role *role, const sl_mesh *m)
{
	int ep = h->o->ep_axes < 0 ? 0 : h->o->ep_axes;
	unsigned axes = 0;

	for (int a = 0; a < m->n_axes; a++) {
		if (m->axes[a].size <= 1)
			continue;
		if (role[a] == SL_AXIS_TP ? (ep & SL_EP_TENSOR) != 0 :
		    (ep & SL_EP_DATA) != 0)
			axes |= 1u << a;
	}
	return axes;
}

const int *
space_fw_choice(const hyb *h, space_entry *e, sl_error *err)
{
	const sl_hybrid_opts *o = h->o;
	/* FSDP (torchtitan) and ZeRO-3 (DeepSpeed) shard the parameters;
	 * Megatron-LM's distributed optimizer shards only their states */
	bool shard = o->space.zero && (o->space.recipe.framework == SL_FW_TORCHTITAN ||
	    o->space.recipe.framework == SL_FW_DEEPSPEED);

	if (e->fw_choice == NULL) {
		e->fw_choice = sl_xmalloc((e->sp->g->n_ops ? e->sp->g->n_ops : 1) *
		    sizeof *e->fw_choice);
		e->fw_rc = sl_framework_choice(e->sp, e->role,
		    space_ep_axes(h, e->role, &e->sp->mesh), shard, e->fw_choice,
		    e->fw_why, sizeof e->fw_why);
	}
	if (e->fw_rc != SL_OK) {
		sl_error_set(err, e->fw_rc, NULL, 0, 0, _("%s cannot run the plan: %s"),
		    sl_framework_title(o->space.recipe.framework), e->fw_why);
		return NULL;
	}
	return e->fw_choice;
}
