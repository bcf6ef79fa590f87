/*
 * pipe_eval.c: one pipeline evaluated: each stage planned under the budget
 * its device gives it (the schedule's micro-batches in flight, the chunks
 * of an interleaved device), the devices' memory at their peak, the
 * pipelined step time, and the degrees it launches with.
 */
#include "pipe_internal.h"

#include <stdlib.h>

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
	o->ep_axes = -1;
}

int64_t
sl_hybrid_mem_cap(const sl_hybrid_opts *o)
{
	return o->mem_limit > 0 ? o->mem_limit :
	    o->hw.memory_bytes > 0 ? o->hw.memory_bytes : INT64_MAX / 4;
}

/*
 * Whether the chunks of device d (stages d, d + p, ... of p v; layers[j]
 * layers each, or n each when layers is NULL) are alike: none is the first
 * or the last stage, all are of one length over layers of the same classes
 * (space_entry.lcls), and no stage is planned at its own layers alone
 * (h->own_layers: constraints on one layer).  Alike chunks take one plan.
 */
bool
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
void
chunk_budget(const hyb *h, int v, int64_t K, bool alike, int64_t *ks,
    int64_t *k, int64_t *cap)
{
	*cap = sl_hybrid_mem_cap(h->o);
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

/*
 * The gradient sync and optimizer of pipeline pl, from each device's sums
 * over its chunks (bwd, sync, optim, pelems: of one micro-batch, once per
 * step): the sync's share per bucket (sl_recipe_grad_bucket) and what is
 * left of it after the pipelined time (sl_pipe_sync_exposed); the slowest
 * device's optimizer.  Megatron-LM buckets the first pipeline rank's
 * gradients alone; the others reduce theirs in one piece once their
 * backward is done, while the ranks before them drain
 * (megatron/core/distributed/distributed_data_parallel.py: bucket_size
 * None when the pipeline rank is not 0).
 */
void
pipe_sync(const hyb *h, sl_pipeline *pl, int p, int v, const dev_sums *dt)
{
	const sl_recipe *r = &h->o->space.recipe;
	int gb = sl_recipe_state_bytes(r, SL_CAT_GRADS);
	int64_t *sync = sl_xmalloc(p * sizeof *sync), *bwd = sl_xmalloc(p * sizeof *bwd);
	double *q = sl_xmalloc(p * sizeof *q);

	pl->optim_ns = 0;
	for (int d = 0; d < p; d++) {
		int64_t bucket = sl_recipe_grad_bucket(r, pl->mesh.n_devices, gb);
		double bytes = (double)dt[d].pelems * gb;

		sync[d] = dt[d].sync;
		bwd[d] = dt[d].bwd;
		q[d] = bytes > 0 && bucket < INT64_MAX ? (double)bucket / bytes : 1;
		if (r->framework == SL_FW_MEGATRON && d > 0)
			q[d] = 1;
		if (dt[d].optim > pl->optim_ns)
			pl->optim_ns = dt[d].optim;
	}
	pl->sync_ns = sl_pipe_sync_exposed(p, v, sync, bwd, q);
	free(sync);
	free(bwd);
	free(q);
}

static int megatron_choice(const sl_space *sp, bool tp, bool seq, int *choice,
    sl_error *err);

/*
 * Stage j of c in Megatron-LM's layout (c->layout) instead of a planned
 * one: its operators take mc, the Megatron-LM plan of the whole graph
 * (layout_choice), costed by the same tables; it fits when its memory with
 * ks states and k micro-batches in flight is within cap.  *out holds it.
 */
static const stage_plan *
layout_plan(hyb *h, stage_type *ty, const sl_pipe_config *c, int j,
    const int *mc, int64_t ks, int64_t k, int64_t cap, stage_plan *out)
{
	int r = recomp_index(c->recompute[j]);

	type_extras(h, ty, r);
	memset(out, 0, sizeof *out);
	stage_plan_totals(ty, space_tab(h, ty->se, r), r, mc + ty->a, out);
	out->choice = (int *)(mc + ty->a);
	out->r = r;
	out->ks = ks;
	out->k = k;
	out->cap = cap;
	out->ok = stage_plan_mem(out, ks, k) <= cap;
	return out;
}

/* Megatron-LM's plan of the graph of c (tensor parallel on the inner axis
 * when it has more than one device), for layout_plan; NULL with err. */
static int *
layout_choice(hyb *h, const sl_pipe_config *c, sl_error *err)
{
	space_entry *se = hyb_space(h, c->graph_batch, c->outer, c->inner,
	    hyb_rep(h, c->dp_replicate), err);
	int *mc;

	if (se == NULL)
		return NULL;
	mc = sl_xmalloc((se->sp->g->n_ops ? se->sp->g->n_ops : 1) * sizeof *mc);
	if (megatron_choice(se->sp, c->inner > 1, c->layout == SL_LAYOUT_MEGATRON_SP,
	    mc, err) != SL_OK) {
		free(mc);
		return NULL;
	}
	return mc;
}

/*
 * The degrees the pipeline launches with.  Where the roles of the axes
 * bind (named axes, or a framework), from the roles: tensor parallel the
 * tp axes, context parallel the cp axes.  Otherwise from the plan:
 * context parallel the axes over which a layer's attention splits the
 * sequence (its loop 1, space.c ring_colls); tensor parallel the inner
 * axis, when it is no such axis and some layer operator uses it for more
 * than the batch (the experts of a mixture aside).  The experts' layout
 * from the plan (moe.c).
 */
static void
pipeline_degrees(hyb *h, const sl_pipe_config *c, sl_pipeline *pl)
{
	space_entry *se = hyb_space(h, c->graph_batch, c->outer, c->inner,
	    hyb_rep(h, c->dp_replicate), NULL);
	const sl_space *sp;
	int inner;
	bool tp = false;

	pl->launch_tp = 1;
	pl->launch_cp = 1;
	pl->cp_axes = 0;
	sl_moe_layout_init(&pl->moe);
	if (se == NULL)
		return;
	sp = se->sp;
	memcpy(pl->role, se->role, sizeof pl->role);
	/* the experts' own layout (moe.c) */
	for (int j = 0; j < pl->n_stages; j++) {
		const sl_pipe_stage *st = &pl->stage[j];
		for (int u = 0; u < st->n_ops; u++) {
			int v = st->first_op + u;
			int si = sl_space_find_strategy(sp, v, st->strategy[u]);
			if (si >= 0)
				sl_moe_layout_add(sp, v, si, &pl->moe);
		}
	}
	sl_moe_layout_finish(&sp->mesh, &pl->moe);
	if (roles_bind(h)) {
		for (int a = 0; a < sp->mesh.n_axes; a++) {
			if (se->role[a] == SL_AXIS_TP)
				pl->launch_tp *= sp->mesh.axes[a].size;
			else if (se->role[a] == SL_AXIS_CP) {
				pl->launch_cp *= sp->mesh.axes[a].size;
				pl->cp_axes |= 1u << a;
			}
		}
		return;
	}
	inner = sp->mesh.n_axes - 1;
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
			/* the experts' degrees say nothing of tensor
			 * parallelism (sl_moe_layout_add) */
			if (sl_kind_is_moe(sp->g->ops[v].kind))
				continue;
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

/*
 * The pipeline's shape from its configuration: schedule, stages and
 * devices, the sub-mesh of a stage, the link between neighbouring stages
 * and each device's micro-batches in flight.
 */
static int
pipeline_shape(hyb *h, const sl_pipe_config *c, sl_pipeline *pl, sl_error *err)
{
	const sl_hybrid_opts *o = h->o;
	int p = c->pp, v = c->virt > 0 ? c->virt : 1, ns = p * v;
	int64_t m = c->micro_batches;

	pl->pp = p;
	pl->virt = v;
	pl->schedule = v > 1 ? SL_SCHED_INTERLEAVED :
	    o->schedule == SL_SCHED_INTERLEAVED ? SL_SCHED_1F1B : o->schedule;
	pl->graph_batch = c->graph_batch;
	pl->micro_batches = m;
	pl->outer = c->outer;
	pl->inner = c->inner;
	pl->pp_link = o->hw.inter;
	pl->n_stages = ns;
	pl->stage = sl_xcalloc(ns, sizeof *pl->stage);
	pl->dev = sl_xcalloc(p, sizeof *pl->dev);
	if (stage_mesh(h, c->outer, c->inner, hyb_rep(h, c->dp_replicate),
	    &pl->mesh, err) != SL_OK)
		return err->code;
	/* HSDP: the ranks the sharded states are replicated across (the
	 * space's +z leaves these axes out, hyb_space) */
	{
		sl_axis_role role[SL_MAX_AXES];
		int rep = hyb_rep(h, c->dp_replicate);
		unsigned z;

		space_roles(h, c->outer, c->inner, rep, role);
		z = o->space.zero_replicate | stage_zrep(h, rep, &pl->mesh, role);
		pl->dp_replicate = 1;
		for (int a = 0; a < pl->mesh.n_axes; a++)
			if (z & (1u << a))
				pl->dp_replicate *= pl->mesh.axes[a].size;
	}
	/* the pipeline link: neighbouring stages sit a sub-mesh apart */
	if (pl->mesh.n_devices < (o->hw.devices_per_node > 0 ? o->hw.devices_per_node : 1) &&
	    (o->hw.devices_per_node % pl->mesh.n_devices) == 0 &&
	    (int64_t)pl->mesh.n_devices * p <= o->hw.devices_per_node)
		pl->pp_link = o->hw.intra;
	if (o->topo != NULL)
		pl->pp_link = sl_topo_pp_link(o->topo);
	for (int d = 0; d < p; d++)
		pl->dev[d].in_flight = sl_pipe_in_flight(pl->schedule, p, v, m, d);
	return SL_OK;
}

/* Stage st, layers l0.. (n of them, operators a..b) on device d, as its
 * plan sp of stage type ty has it. */
static void
stage_record(sl_pipe_stage *st, const stage_type *ty, const stage_plan *sp,
    int l0, int n, int a, int b, int d, sl_recompute rec)
{
	st->first_layer = l0;
	st->n_layers = n;
	st->first_op = a;
	st->n_ops = b - a;
	st->device = d;
	st->recompute = rec;
	st->n_strat_ops = b - a;
	st->strategy = sl_xmalloc((b - a) * sizeof *st->strategy);
	for (int u = 0; u < b - a; u++)
		snprintf(st->strategy[u], sizeof st->strategy[u], "%s",
		    ty->se->sp->ops[u + a].strat[sp->choice[u]].name);
	st->states = sp->states;
	st->acts = sp->acts;
	st->compute_ns = sp->compute;
	st->bwd_ns = sp->bwd;
	st->comm_ns = sl_add_sat(sp->comm, sp->p2p);
	st->p2p_ns = sp->p2p;
	st->micro_ns = stage_plan_micro(sp);
	st->sync_ns = sp->sync;
	st->optim_ns = sp->optim;
}

/*
 * The step's FLOPs, tokens and utilisation: model FLOPs of the
 * micro-batches of the graph (compute.c), whatever the stages recompute;
 * the hardware's add the forward passes re-run (recomputed, per
 * micro-batch).
 */
static void
pipeline_rates(const sl_hybrid_opts *o, const sl_graph *g, sl_pipeline *pl,
    double recomputed)
{
	int64_t m = pl->micro_batches;
	int p = pl->pp;

	pl->model_flops = sl_recipe_model_flops(g, &o->space.recipe) * (double)m;
	pl->hw_flops = pl->model_flops + recomputed * (double)m;
	pl->tokens = sl_mul_sat(sl_graph_tokens(g, NULL), m);
	if (pl->step_ns > 0) {
		double s = (double)pl->step_ns / 1e9;
		double peak = o->hw.flops * (double)p * (double)pl->mesh.n_devices;
		pl->tokens_per_s = (double)pl->tokens / s;
		if (peak > 0) {
			pl->mfu = pl->model_flops / (peak * s);
			pl->hfu = pl->hw_flops / (peak * s);
		}
	}
}

int
pipeline_eval(hyb *h, const sl_pipe_config *c, sl_pipeline *pl, sl_error *err)
{
	const sl_hybrid_opts *o = h->o;
	int p = c->pp, v = c->virt > 0 ? c->virt : 1, ns = p * v, l0 = 0;
	int64_t cap = sl_hybrid_mem_cap(o), m = c->micro_batches;
	const sl_graph *g;
	int64_t *t;
	dev_sums *dt;
	double recomputed = 0;
	stage_plan fixed;
	int *mc = NULL;

	memset(pl, 0, sizeof *pl);
	if ((g = hyb_graph(h, c->graph_batch, err)) == NULL)
		return err->code;
	if (pipeline_shape(h, c, pl, err) != SL_OK)
		return err->code;
	dt = sl_xcalloc(p, sizeof *dt);
	h->all_tabs |= c->layout != SL_LAYOUT_PLANNED;
	if (c->layout != SL_LAYOUT_PLANNED &&
	    (mc = layout_choice(h, c, err)) == NULL) {
		free(dt);
		return err->code ? err->code : SL_EINTERNAL;
	}
	pl->fits = true;
	for (int j = 0, tot = 0; j < ns; j++) {
		if (c->layers[j] < 1 || (tot += c->layers[j]) > g->n_layers) {
			free(dt);
			free(mc);
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("stage %d: %d layers do not fit the model's %d"), j,
			    c->layers[j], g->n_layers);
		}
	}
	for (int j = 0; j < ns; j++) {
		sl_pipe_stage *st = &pl->stage[j];
		int d = j % p, n = c->layers[j];
		int64_t ks, kc, ccap;
		const stage_plan *sp;
		stage_type *ty;
		int a, b;

		ty = hyb_type(h, c->graph_batch, c->outer, c->inner,
		    hyb_rep(h, c->dp_replicate), l0, n, err);
		if (ty == NULL) {
			free(dt);
			free(mc);
			return err->code ? err->code : SL_EINTERNAL;
		}
		chunk_budget(h, v, pl->dev[d].in_flight,
		    device_alike(h, ty->se, p, v, d, c->layers, 0), &ks, &kc, &ccap);
		if (mc != NULL)
			sp = layout_plan(h, ty, c, j, mc, ks, kc, ccap, &fixed);
		else
			sp = type_plan(h, ty, recomp_index(c->recompute[j]), ks, kc, m,
			    ccap, err);
		if (sp == NULL) {
			free(dt);
			free(mc);
			return err->code ? err->code : SL_EINTERNAL;
		}
		stage_ops(g, l0, n, &a, &b);
		stage_record(st, ty, sp, l0, n, a, b, d, c->recompute[j]);
		/* a device keeps its chunks' states; their moments (buffers)
		 * come one at a time: the largest, added below */
		pl->dev[d].states = sl_add_sat(pl->dev[d].states,
		    sl_mem_total(&st->states) - st->states.buffers);
		if (st->states.buffers > pl->dev[d].moment)
			pl->dev[d].moment = st->states.buffers;
		pl->dev[d].micro_ns = sl_add_sat(pl->dev[d].micro_ns, st->micro_ns);
		dt[d].bwd = sl_add_sat(dt[d].bwd, sp->bwd);
		dt[d].sync = sl_add_sat(dt[d].sync, sp->sync);
		dt[d].optim = sl_add_sat(dt[d].optim, sp->optim);
		dt[d].pelems = sl_add_sat(dt[d].pelems, sp->pelems);
		if (!sp->ok)
			pl->fits = false;
		/* the forward passes its layers run again in backward */
		for (int u = 0; u < b - a; u++)
			recomputed += sl_op_model_flops(g, &g->ops[u + a]) *
			    sl_recompute_share(&o->space.recipe, g, u + a, st->recompute);
		l0 += n;
	}
	if (l0 != g->n_layers) {
		free(dt);
		free(mc);
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("the stages hold %d layers; the model has %d"), l0, g->n_layers);
	}
	t = sl_xmalloc(p * sizeof *t);
	for (int d = 0; d < p; d++) {
		sl_pipe_dev *dv = &pl->dev[d];
		dv->states = sl_add_sat(dv->states, dv->moment);
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
	pipe_sync(h, pl, p, v, dt);
	free(dt);
	free(mc);
	pl->step_ns = sl_add_sat(sl_add_sat(pl->pipe_ns, pl->sync_ns), pl->optim_ns);
	free(t);
	pipeline_rates(o, g, pl, recomputed);
	pipeline_degrees(h, c, pl);
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
	if (rc != SL_OK)
		sl_pipeline_free(pl);
	hyb_free(&h);
	return rc;
}

/* The Megatron-LM plan of a stage, with sequence parallelism when seq,
 * or an error: the baseline's (baseline.c), whose layout is the one
 * the frameworks' plans take (megatron_layout). */
static int
megatron_choice(const sl_space *sp, bool tp, bool seq, int *choice,
    sl_error *err)
{
	sl_scored_plan sc;
	sl_baseline_opts bo;
	int rc;

	memset(&bo, 0, sizeof bo);
	bo.mem_budget = -1;
	bo.solver = SL_SOLVER_AUTO;
	memset(&sc, 0, sizeof sc);
	rc = sl_baseline_plan(sp, !tp ? SL_BASE_DP : seq ? SL_BASE_MEGATRON_SP :
	    SL_BASE_MEGATRON, &bo, NULL, &sc, err);
	if (rc == SL_OK && sc.applicable && sc.choice != NULL)
		memcpy(choice, sc.choice, sp->g->n_ops * sizeof *choice);
	else if (rc == SL_OK)
		rc = SL_EINTERNAL;
	sl_scored_plan_free(&sc);
	return rc;
}
