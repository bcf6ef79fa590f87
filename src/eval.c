/*
 * eval.c: the evaluator.  Scores any assignment (from a solver, a baseline,
 * pins or a plan file) device by device: memory by category, redundant
 * bytes, communication by collective, and the weighed objective.  It walks
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
		for (int v = 0; v < g->n_ops; v++)
			sl_node_items(s, v, choice[v], coord, acc_item, &acc);
		for (int e = 0; e < s->n_edges; e++) {
			const sl_space_edge *se = &s->edges[e];
			const sl_tensor *t = &g->tensors[se->tensor];
			sl_mem mem;

			sl_edge_cost(s, e, choice[se->src], choice[se->dst], coord,
			    &mem, NULL);
			if (mem.buffers > 0) {
				sl_mem_item it = { .cat = CAT_BUFFERS,
				    .local = mem.buffers, .full = sl_mul_sat(
				    sl_tensor_elems(t), sl_elem_bytes(s, t)) };
				acc_item(&acc, &it);
			}
		}
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

void
sl_eval_free(sl_eval *ev)
{
	if (ev == NULL)
		return;
	free(ev->dev);
	free(ev->dev_redundant);
	free(ev->ops);
	memset(ev, 0, sizeof *ev);
}
