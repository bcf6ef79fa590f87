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
static void
graph_batch(const sl_graph *g, int64_t *samples, int64_t *tokens)
{
	*samples = 1;
	*tokens = 1;
	for (int i = 0; i < g->n_tensors; i++) {
		const sl_tensor *t = &g->tensors[i];
		bool ids = t->dtype == SL_DT_I32 || t->dtype == SL_DT_I64;

		if (t->role != SL_ROLE_INPUT || t->rank < 1)
			continue;
		*samples = t->dims[0];
		for (int d = 0; d < t->rank - (ids || t->rank == 1 ? 0 : 1); d++)
			*tokens = sl_mul_sat(*tokens, t->dims[d]);
		return;
	}
}

/*
 * Step time (doc/cost-model.md, "Step time").  Compute: every operator's
 * kernels on each device, the slowest device.  Communication of parameters
 * (gradient reduction, ZeRO-3 gathers) runs on its own stream: an
 * operator's starts when its backward is done and overlaps the backward of
 * the operators before it; only what is left when backward ends is exposed.
 * Tensor-parallel collectives and resharding sit between kernels that need
 * their result and are all exposed.
 */
static void
eval_time(const sl_space *s, const int *choice, sl_eval *ev)
{
	const sl_graph *g = s->g;
	const sl_mesh *m = &s->mesh;
	int64_t param_ns = 0, t_bwd = 0, comm_end = 0, samples, tokens;
	double step_s, recomputed = 0;

	ev->dev_compute_ns = sl_xcalloc(m->n_devices, sizeof *ev->dev_compute_ns);
	for (int d = 0; d < m->n_devices; d++) {
		int coord[SL_MAX_AXES];
		int64_t t = 0;

		sl_mesh_coords(m, d, coord);
		for (int v = 0; v < g->n_ops; v++) {
			sl_compute c;
			sl_node_compute(s, v, choice[v], coord, &c);
			t = sl_add_sat(t, sl_add_sat(c.fwd_ns,
			    sl_add_sat(c.bwd_ns, c.recompute_ns)));
		}
		ev->dev_compute_ns[d] = t;
		if (t > ev->compute_ns)
			ev->compute_ns = t;
	}
	/* Backward in reverse order on device 0, parameter comm beside it. */
	for (int v = g->n_ops - 1; v >= 0; v--) {
		sl_compute c;
		int64_t p;

		sl_node_compute(s, v, choice[v], NULL, &c);
		t_bwd = sl_add_sat(t_bwd, sl_add_sat(c.bwd_ns, c.recompute_ns));
		p = sl_node_param_comm_ns(s, v, choice[v]);
		param_ns = sl_add_sat(param_ns, p);
		if (p > 0)
			comm_end = sl_add_sat(comm_end > t_bwd ? comm_end : t_bwd, p);
		if (sl_op_recomputed(s, v))
			recomputed += sl_op_model_flops(g, &g->ops[v]);
	}
	ev->exposed_comm_ns = ev->comm_ns - param_ns +
	    (comm_end > t_bwd ? comm_end - t_bwd : 0);

	graph_batch(g, &samples, &tokens);
	ev->accum_steps = sl_recipe_accum_steps(&s->opts.recipe, samples);
	if (ev->accum_steps < 1)	/* global batch not a multiple: round up */
		ev->accum_steps = s->opts.recipe.global_batch > 0 && samples > 0 ?
		    sl_ceil_div(s->opts.recipe.global_batch, samples) : 1;
	ev->step_ns = sl_mul_sat(ev->accum_steps,
	    sl_add_sat(ev->compute_ns, ev->exposed_comm_ns));
	ev->tokens = sl_mul_sat(ev->accum_steps, tokens);
	/* Model FLOPs (compute.c, sl_model_flops), whatever the plan
	 * recomputes; the hardware's add the forward passes re-run. */
	ev->model_flops = sl_model_flops(g) * (double)ev->accum_steps;
	ev->hw_flops = ev->model_flops + recomputed * (double)ev->accum_steps;
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
