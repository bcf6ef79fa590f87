/*
 * pipe_timeline.c: memory over time of one pipeline stage.  The stage's
 * operators become a graph of their own, so the timeline (timeline.c) runs
 * over them as over a whole model: what the stage before sends in is an
 * input of that graph (its gradient goes back on the pipeline link, not
 * through this device's memory), what it sends on is an output kept until
 * its gradient comes back, and a parameter another stage owns is owned
 * here, as Megatron-LM keeps the tied embedding's copy on the last stage.
 * The timeline is one micro-batch's step; what the device holds beyond it
 * (the other micro-batches in flight at its peak, its other chunks'
 * states) is held through it, so the peak is the device's.
 */
#include "pipe_internal.h"

#include <stdlib.h>

/* ops [a, b) of g as a graph: returns NULL with err set. */
static sl_graph *
stage_graph(const sl_graph *g, int a, int b, int stage, sl_error *out_err)
{
	char name[160];
	sl_graph *s;
	sl_error e, *err = &e;
	int *map = sl_xmalloc((g->n_tensors ? g->n_tensors : 1) * sizeof *map);

	sl_error_clear(&e);
	snprintf(name, sizeof name, "%s/stage%d", g->name, stage);
	s = sl_graph_new(name);
	for (int t = 0; t < g->n_tensors; t++)
		map[t] = -1;
	for (int v = a; v < b && err->code == SL_OK; v++) {
		const sl_op *op = &g->ops[v];
		int in[SL_MAX_OP_TENSORS], out[SL_MAX_OP_TENSORS], u;

		for (int i = 0; i < op->n_in + op->n_out; i++) {
			int t = sl_op_slot_tensor(op, i);
			const sl_tensor *x = &g->tensors[t];
			sl_role role = x->role;

			if (map[t] < 0) {
				/* made by an earlier stage: received, an input here */
				if (role == SL_ROLE_ACTIVATION && (x->producer < a ||
				    x->producer >= b))
					role = SL_ROLE_INPUT;
				map[t] = sl_graph_add_tensor(s, x->name, x->rank,
				    x->dims, x->dtype, role, err);
			}
			if (i < op->n_in)
				in[i] = map[t];
			else
				out[i - op->n_in] = map[t];
		}
		u = sl_graph_add_op(s, op->name, op->kind, op->n_in, in, op->n_out,
		    out, op->layer >= 0 ? g->layers[op->layer].name : NULL, err);
		if (u < 0)
			break;
		s->ops[u].heads = op->heads;
		s->ops[u].kv_heads = op->kv_heads;
		memcpy(s->ops[u].perm, op->perm, sizeof op->perm);
		s->ops[u].p = op->p;
		s->ops[u].transpose_w = op->transpose_w;
	}
	free(map);
	if (err->code != SL_OK || sl_graph_validate(s, NULL, err) != SL_OK) {
		sl_error_set(out_err, err->code ? err->code : SL_EINTERNAL, NULL, 0, 0,
		    "%s", err->msg);
		sl_graph_free(s);
		return NULL;
	}
	return s;
}

/*
 * The stage's graph, its space on the stage sub-mesh (the stage's
 * recomputation; its gradients accumulate over the step's micro-batches)
 * and its plan, into out; the timeline is left to the caller.
 */
static int
stage_space_of(const sl_hybrid_opts *o, const sl_pipeline *pl, int stage,
    sl_stage_timeline *out, sl_error *err)
{
	const sl_pipe_stage *st;
	sl_space_opts so;
	sl_graph *g;

	memset(out, 0, sizeof *out);
	if (stage < 0 || stage >= pl->n_stages)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("the pipeline has no stage %d (0 to %d)"), stage,
		    pl->n_stages - 1);
	st = &pl->stage[stage];
	if ((g = o->model(o->model_ctx, pl->graph_batch, o->space.recipe.seq,
	    err)) == NULL)
		return err->code ? err->code : SL_EINPUT;
	out->g = stage_graph(g, st->first_op, st->first_op + st->n_ops, stage, err);
	sl_graph_free(g);
	if (out->g == NULL)
		return SL_EINTERNAL;
	/* the gradients of the micro-batches add up until the step ends */
	so = o->space;
	so.recipe.recompute = st->recompute;
	so.recipe.global_batch = sl_mul_sat(pl->graph_batch, pl->micro_batches);
	if ((out->space = sl_space_build(out->g, &pl->mesh, &so, err)) == NULL) {
		sl_stage_timeline_free(out);
		return err->code ? err->code : SL_EINTERNAL;
	}
	out->choice = sl_xmalloc((out->g->n_ops ? out->g->n_ops : 1) *
	    sizeof *out->choice);
	for (int u = 0; u < out->g->n_ops; u++) {
		out->choice[u] = u < st->n_strat_ops ?
		    sl_space_find_strategy(out->space, u, st->strategy[u]) : -1;
		if (out->choice[u] < 0) {
			int rc = sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
			    _("stage %d: operator '%s' has no strategy '%s' of its own"),
			    stage, out->g->ops[u].name,
			    u < st->n_strat_ops ? st->strategy[u] : "?");
			sl_stage_timeline_free(out);
			return rc;
		}
	}
	return SL_OK;
}

int
sl_pipeline_timeline(const sl_hybrid_opts *o, const sl_pipeline *pl,
    int stage, int dev, bool optimise, sl_stage_timeline *out, sl_error *err)
{
	const sl_pipe_stage *st;
	const sl_pipe_dev *dv;
	char name[96];
	int rc;

	if ((rc = stage_space_of(o, pl, stage, out, err)) != SL_OK)
		return rc;
	st = &pl->stage[stage];
	dv = &pl->dev[st->device];
	if ((rc = sl_timeline_build(out->space, out->choice, dev, optimise,
	    &out->tl, err)) != SL_OK) {
		sl_stage_timeline_free(out);
		return rc;
	}
	/* the device beyond this chunk's micro-batch: the others in flight at
	 * its peak, and its other chunks' states (interleaved schedules) */
	out->in_flight = dv->acts - st->acts > 0 ? dv->acts - st->acts : 0;
	out->other_chunks = dv->states - sl_mem_total(&st->states) > 0 ?
	    dv->states - sl_mem_total(&st->states) : 0;
	snprintf(name, sizeof name, "in flight: %lld micro-batches",
	    (long long)(dv->in_flight > 1 ? dv->in_flight - 1 : 0));
	sl_timeline_hold(&out->tl, name, SL_CAT_ACTS, out->in_flight);
	sl_timeline_hold(&out->tl, "other chunks' states", SL_CAT_PARAMS,
	    out->other_chunks);
	return SL_OK;
}

/* The once-a-step collectives of a stage's parameter states (space.c,
 * sl_node_colls), by kind. */
struct state_comm {
	const sl_space *sp;
	int v, s;
	sl_comm *out;
};

static void
state_coll(void *ctx, const sl_coll_item *c)
{
	struct state_comm *a = ctx;
	const sl_mesh *m = &a->sp->mesh;
	int n = m->axes[c->axis].size;

	if (c->cause != SL_CAUSE_STATE_GATHER &&
	    !sl_coll_grad_sync(a->sp, a->v, a->s, c))
		return;
	if (n <= 1 || c->bytes <= 0)
		return;
	a->out->ns[c->coll] = sl_add_sat(a->out->ns[c->coll],
	    sl_coll_time(c->coll, n, c->bytes, &m->axes[c->axis].link));
	a->out->bytes[c->coll] = sl_add_sat(a->out->bytes[c->coll], c->bytes);
}

int
sl_pipeline_state_comm(const sl_hybrid_opts *o, const sl_pipeline *pl,
    int stage, sl_comm *out, sl_error *err)
{
	sl_stage_timeline t;
	int rc;

	memset(out, 0, sizeof *out);
	if ((rc = stage_space_of(o, pl, stage, &t, err)) != SL_OK)
		return rc;
	for (int v = 0; v < t.g->n_ops; v++) {
		struct state_comm a = { t.space, v, t.choice[v], out };
		sl_node_colls(t.space, v, t.choice[v], state_coll, &a);
	}
	sl_stage_timeline_free(&t);
	return SL_OK;
}

void
sl_stage_timeline_free(sl_stage_timeline *st)
{
	if (st == NULL)
		return;
	sl_timeline_free(&st->tl);
	free(st->choice);
	sl_space_free(st->space);
	sl_graph_free(st->g);
	memset(st, 0, sizeof *st);
}
