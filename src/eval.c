/*
 * eval.c: the evaluator.  Scores any assignment (from a solver, a baseline,
 * pins or a plan file) device by device: memory by category, redundant
 * bytes, communication by collective, the weighed objective, and the time
 * of a training step with what it achieves (tokens per second, MFU).  It walks
 * the graph and the cost model afresh rather than reading the solvers'
 * tables, so a solver's claimed objective can be checked against it.
 */
#include "internal.h"

#include <stdlib.h>

struct dev_acc {
	sl_mem *mem;
	int64_t *redundant;
	int n_devices;
};

static void eval_time(const sl_space *s, const int *choice, sl_eval *ev);

struct param_acc {
	const sl_space *s;
	int64_t ns;
};

static void
param_coll(void *ctx, const sl_coll_item *c)
{
	struct param_acc *a = ctx;
	const sl_mesh *m = &a->s->mesh;

	if (a->s->g->tensors[c->tensor].role == SL_ROLE_PARAMETER)
		a->ns = sl_add_sat(a->ns, sl_coll_time(c->coll,
		    m->axes[c->axis].size, c->bytes, &m->axes[c->axis].link));
}

int64_t
sl_node_param_comm_ns(const sl_space *s, int op, int strat)
{
	struct param_acc a = { s, 0 };

	sl_node_colls(s, op, strat, param_coll, &a);
	return a.ns;
}

static void
acc_item(void *ctx, const sl_mem_item *it)
{
	struct dev_acc *a = ctx;

	sl_mem_add(a->mem, it->cat, it->local);
	/* Redundant bytes: what this device holds beyond its fair share. */
	*a->redundant = sl_add_sat(*a->redundant, it->local - it->full / a->n_devices);
}

int
sl_evaluate(const sl_space *s, const int *choice, double alpha, sl_eval *ev,
    sl_error *err)
{
	const sl_graph *g = s->g;
	const sl_mesh *m = &s->mesh;
	int n = m->n_devices;

	memset(ev, 0, sizeof *ev);
	for (int v = 0; v < g->n_ops; v++)
		if (choice[v] < 0 || choice[v] >= s->ops[v].n_strat)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("operator '%s' has no strategy number %d"),
			    g->ops[v].name, choice[v]);
	ev->n_devices = n;
	ev->dev = sl_xcalloc(n, sizeof *ev->dev);
	ev->dev_redundant = sl_xcalloc(n, sizeof *ev->dev_redundant);
	ev->n_ops = g->n_ops;
	ev->ops = sl_xcalloc(g->n_ops, sizeof *ev->ops);

	for (int d = 0; d < n; d++) {
		int coord[SL_MAX_AXES] = { 0 };
		struct dev_acc acc = { &ev->dev[d], &ev->dev_redundant[d], n };

		sl_mesh_coords(m, d, coord);
		/* the sum: the items of the step's stream it counts */
		sl_step_items(s, choice, coord, true, acc_item, &acc);
	}

	/* Device 0 holds the largest shard of everything: the objective's memory. */
	for (int v = 0; v < g->n_ops; v++) {
		sl_mem mem;
		sl_comm comm;

		sl_compute cp;

		sl_node_cost(s, v, choice[v], NULL, &mem, &comm);
		sl_node_compute(s, v, choice[v], NULL, &cp);
		ev->ops[v].mem = mem;
		ev->ops[v].comm = comm;
		sl_comm_add(&ev->comm, &comm);
		ev->recompute_ns = sl_add_sat(ev->recompute_ns, cp.recompute_ns);
		ev->mem_part = sl_add_sat(ev->mem_part, sl_mem_total(&mem));
		/* the solvers' node time: communication plus recomputation */
		ev->objective = sl_add_sat(ev->objective, sl_weigh(sl_mem_total(&mem),
		    sl_add_sat(sl_comm_total(&comm), cp.recompute_ns), alpha));
	}
	for (int e = 0; e < s->n_edges; e++) {
		const sl_space_edge *se = &s->edges[e];
		sl_mem mem;
		sl_comm comm;

		sl_edge_cost(s, e, choice[se->src], choice[se->dst], NULL, &mem, &comm);
		ev->ops[se->dst].mem.buffers = sl_add_sat(ev->ops[se->dst].mem.buffers,
		    mem.buffers);
		sl_comm_add(&ev->ops[se->dst].comm, &comm);
		sl_comm_add(&ev->comm, &comm);
		ev->mem_part = sl_add_sat(ev->mem_part, sl_mem_total(&mem));
		ev->objective = sl_add_sat(ev->objective,
		    sl_weigh(sl_mem_total(&mem), sl_comm_total(&comm), alpha));
	}
	ev->comm_ns = sl_comm_total(&ev->comm);
	eval_time(s, choice, ev);
	ev->redundant = ev->dev_redundant[0];
	for (int d = 0; d < n; d++) {
		int64_t t = sl_mem_total(&ev->dev[d]);
		if (t > ev->max_total)
			ev->max_total = t;
		if (m->hw.memory_bytes > 0 && t > m->hw.memory_bytes)
			ev->n_over_capacity++;
	}
	return SL_OK;
}

/*
 * Samples and tokens of one micro-step: the graph's first input is [batch,
 * ...]; token ids (integers) count every element, features all but the
 * last dimension.
 */
int64_t
sl_graph_tokens(const sl_graph *g, int64_t *samples)
{
	int64_t tokens = 1;

	if (samples != NULL)
		*samples = 1;
	for (int i = 0; i < g->n_tensors; i++) {
		const sl_tensor *t = &g->tensors[i];
		bool ids = t->dtype == SL_DT_I32 || t->dtype == SL_DT_I64;

		if (t->role != SL_ROLE_INPUT || t->rank < 1)
			continue;
		if (samples != NULL)
			*samples = t->dims[0];
		for (int d = 0; d < t->rank - (ids || t->rank == 1 ? 0 : 1); d++)
			tokens = sl_mul_sat(tokens, t->dims[d]);
		break;
	}
	return tokens;
}

/* A node's parameter collectives by when they run (space.c, sl_node_colls). */
struct pcomm {
	const sl_space *s;
	int v, si;
	int64_t fwd, bwd, grad;		/* gathers forward, backward; gradient */
	int64_t grad_bytes;		/* of the gradients reduced */
	bool every;			/* reduced every micro-step (ZeRO-3) */
	int dp;				/* the largest group reducing them */
};

static void
pcomm_item(void *ctx, const sl_coll_item *c)
{
	struct pcomm *p = ctx;
	const sl_mesh *m = &p->s->mesh;
	int64_t t;

	/* the updated weights' gather is the optimizer step's
	 * (sl_compute.gather_ns) */
	if (p->s->g->tensors[c->tensor].role != SL_ROLE_PARAMETER ||
	    c->cause == SL_CAUSE_STATE_GATHER)
		return;
	t = sl_coll_time(c->coll, m->axes[c->axis].size, c->bytes,
	    &m->axes[c->axis].link);
	if (c->phase == SL_PHASE_FWD)
		p->fwd = sl_add_sat(p->fwd, t);
	else if (!c->after)
		p->bwd = sl_add_sat(p->bwd, t);
	else {
		p->grad = sl_add_sat(p->grad, t);
		p->grad_bytes = sl_add_sat(p->grad_bytes, c->bytes);
		p->every |= c->coll == SL_COLL_REDUCE_SCATTER &&
		    !sl_coll_grad_sync(p->s, p->v, p->si, c);
		if (m->axes[c->axis].size > p->dp)
			p->dp = m->axes[c->axis].size;
	}
}

static void
node_pcomm(const sl_space *s, int v, int si, struct pcomm *p)
{
	memset(p, 0, sizeof *p);
	p->s = s;
	p->v = v;
	p->si = si;
	sl_node_colls(s, v, si, pcomm_item, p);
}

/* One operator of a micro-step on device 0: its parameter communication
 * and its kernels' time each way (the backward with its recomputation). */
struct node_step {
	struct pcomm p;
	int64_t fwd, bwd;
};

/* Fills ns[v] for every operator of the plan, once for both passes of
 * micro_exposed and both of its calls. */
static struct node_step *
node_steps(const sl_space *s, const int *choice)
{
	struct node_step *ns = sl_xcalloc((size_t)s->g->n_ops, sizeof *ns);

	for (int v = 0; v < s->g->n_ops; v++) {
		sl_compute cp;

		node_pcomm(s, v, choice[v], &ns[v].p);
		sl_node_compute(s, v, choice[v], NULL, &cp);
		ns[v].fwd = cp.fwd_ns;
		ns[v].bwd = sl_add_sat(cp.bwd_ns, cp.recompute_ns);
	}
	return ns;
}

/*
 * The time one micro-step's parameter communication adds to its compute
 * on device 0 (doc/cost-model.md, "Step time"), on a stream of its own:
 * ZeRO-3 gathers are issued one operator ahead (FSDP's prefetch: no
 * earlier than the start of the previous operator that gathers) and an
 * operator waits for its own; gradients are reduced in the framework's
 * buckets (sl_recipe_grad_bucket), a bucket once its last gradient is
 * ready.  reduce: this micro-step reduces the data-parallel gradients
 * (the last of an accumulation; ZeRO-3's reduce-scatter runs in every
 * micro-step).  Returns the waits plus what runs on after backward ends.
 */
static int64_t
micro_exposed(const sl_space *s, const struct node_step *ns, bool reduce)
{
	const sl_graph *g = s->g;
	const sl_recipe *r = &s->opts.recipe;
	int64_t t = 0, c = 0, pure = 0, prev = 0, acc = 0, acc_bytes = 0, bucket = 0;
	int64_t ready = 0;	/* when the open bucket's last gradient was ready */
	int acc_layer = -2;

	for (int v = 0; v < g->n_ops; v++) {
		const struct pcomm *p = &ns[v].p;

		if (p->fwd > 0) {
			c = sl_add_sat(c > prev ? c : prev, p->fwd);
			if (c > t)
				t = c;
			prev = t;
		}
		t = sl_add_sat(t, ns[v].fwd);
		pure = sl_add_sat(pure, ns[v].fwd);
	}
	prev = t;
	for (int v = g->n_ops - 1; v >= 0; v--) {
		const struct pcomm *p = &ns[v].p;
		int64_t b = ns[v].bwd;

		if (p->bwd > 0) {
			c = sl_add_sat(c > prev ? c : prev, p->bwd);
			if (c > t)
				t = c;
			prev = t;
		}
		t = sl_add_sat(t, b);
		pure = sl_add_sat(pure, b);
		if (p->grad <= 0 || !(reduce || p->every))
			continue;
		/* torchtitan's FSDP2 reduces each module (a layer) on its own */
		if (acc > 0 && r->framework == SL_FW_TORCHTITAN &&
		    g->ops[v].layer != acc_layer) {
			c = sl_add_sat(c > ready ? c : ready, acc);
			acc = acc_bytes = 0;
		}
		acc = sl_add_sat(acc, p->grad);
		acc_bytes = sl_add_sat(acc_bytes, p->grad_bytes);
		acc_layer = g->ops[v].layer;
		ready = t;
		bucket = sl_recipe_grad_bucket(r, p->dp,
		    sl_recipe_state_bytes(r, SL_CAT_GRADS));
		if (acc_bytes >= bucket) {
			c = sl_add_sat(c > t ? c : t, acc);
			acc = acc_bytes = 0;
		}
	}
	if (acc > 0)
		c = sl_add_sat(c > t ? c : t, acc);
	return (t - pure) + (c > t ? c - t : 0);
}

/*
 * Step time (doc/cost-model.md, "Step time").  Compute: every operator's
 * kernels on each device, the slowest device.  Communication of parameters
 * (gradient reduction, ZeRO-3 gathers) runs on its own stream beside it
 * (micro_exposed); tensor-parallel collectives and resharding sit between
 * kernels that need their result and are all exposed.  Then the optimizer
 * step, once.
 */
static void
eval_time(const sl_space *s, const int *choice, sl_eval *ev)
{
	const sl_graph *g = s->g;
	const sl_mesh *m = &s->mesh;
	int64_t param_ns = 0, samples, tokens, other;
	double recomputed = 0;
	struct node_step *steps;

	ev->dev_compute_ns = sl_xcalloc(m->n_devices, sizeof *ev->dev_compute_ns);
	for (int d = 0; d < m->n_devices; d++) {
		int coord[SL_MAX_AXES];
		int64_t t = 0, o = 0;

		sl_mesh_coords(m, d, coord);
		for (int v = 0; v < g->n_ops; v++) {
			sl_compute c;
			sl_node_compute(s, v, choice[v], coord, &c);
			t = sl_add_sat(t, sl_add_sat(c.fwd_ns,
			    sl_add_sat(c.bwd_ns, c.recompute_ns)));
			o = sl_add_sat(o, c.optim_ns);
		}
		ev->dev_compute_ns[d] = t;
		if (t > ev->compute_ns)
			ev->compute_ns = t;
		if (o > ev->optim_ns)
			ev->optim_ns = o;
	}
	for (int v = 0; v < g->n_ops; v++) {
		param_ns = sl_add_sat(param_ns, sl_node_param_comm_ns(s, v, choice[v]));
		if (sl_op_recomputed(s, v))
			recomputed += sl_op_model_flops(g, &g->ops[v]) *
			    sl_op_recompute_share(s, v);
	}
	other = ev->comm_ns - param_ns;
	steps = node_steps(s, choice);
	ev->exposed_comm_ns = sl_add_sat(other, micro_exposed(s, steps, true));

	tokens = sl_graph_tokens(g, &samples);
	ev->accum_steps = sl_recipe_accum_steps(&s->opts.recipe, samples);
	if (ev->accum_steps < 1)	/* global batch not a multiple: round up */
		ev->accum_steps = s->opts.recipe.global_batch > 0 && samples > 0 ?
		    sl_ceil_div(s->opts.recipe.global_batch, samples) : 1;
	/* the micro-steps before the last accumulate without reducing */
	ev->exposed_accum_ns = ev->accum_steps > 1 ?
	    sl_add_sat(other, micro_exposed(s, steps, false)) : ev->exposed_comm_ns;
	free(steps);
	ev->tokens = sl_mul_sat(ev->accum_steps, tokens);
	/* Model FLOPs (compute.c, sl_model_flops), whatever the plan
	 * recomputes; the hardware's add the forward passes re-run. */
	ev->model_flops = sl_recipe_model_flops(g, &s->opts.recipe) *
	    (double)ev->accum_steps;
	ev->hw_flops = ev->model_flops + recomputed * (double)ev->accum_steps;
	sl_eval_restep(s, ev);
}

void
sl_eval_restep(const sl_space *s, sl_eval *ev)
{
	const sl_mesh *m = &s->mesh;
	int64_t last = sl_add_sat(ev->compute_ns, ev->exposed_comm_ns);
	double step_s;

	ev->step_ns = sl_add_sat(sl_add_sat(sl_mul_sat(ev->accum_steps - 1,
	    sl_add_sat(ev->compute_ns, ev->exposed_accum_ns)), last), ev->optim_ns);
	ev->tokens_per_s = ev->mfu = ev->hfu = 0;
	step_s = (double)ev->step_ns / 1e9;
	if (step_s > 0) {
		ev->tokens_per_s = (double)ev->tokens / step_s;
		if (m->hw.flops > 0) {
			ev->mfu = ev->model_flops /
			    ((double)m->n_devices * m->hw.flops * step_s);
			ev->hfu = ev->hw_flops /
			    ((double)m->n_devices * m->hw.flops * step_s);
		}
	}
}

void
sl_eval_free(sl_eval *ev)
{
	if (ev == NULL)
		return;
	free(ev->dev);
	free(ev->dev_redundant);
	free(ev->ops);
	free(ev->dev_compute_ns);
	memset(ev, 0, sizeof *ev);
}
