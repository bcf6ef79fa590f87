/*
 * launch.c: turns a plan (a strategy per operator) into what one training
 * step does on each device: the buffers it holds and, in order, the kernels
 * and collectives it runs.  The GPU runner executes this list; here it is only
 * built, from the cost model's own items (doc/cost-model.md): the buffers
 * are the items the evaluator sums (sl_step_items), each parameter's states
 * split into the parts the recipe says they are, so the runner allocates
 * exactly what was predicted; the collectives are sl_node_colls' and
 * sl_edge_colls'.
 */
#include "internal.h"
#include "json.h"

#include <jansson.h>
#include <stdlib.h>

/* ------------------------------------------------------------ building */

typedef struct launch_ctx {
	const sl_space *s;
	const int *choice;
	sl_launch_dev *d;
	int cap_alloc, cap_items;
	int *wgrad_item;	/* per operator: its wgrad gemm's item, -1 none */
	bool recompute;		/* launching a forward re-run in backward */
} launch_ctx;

static void
launch_alloc(launch_ctx *c, int op, int cat, int64_t bytes, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void
launch_alloc(launch_ctx *c, int op, int cat, int64_t bytes, const char *fmt, ...)
{
	sl_launch_dev *d = c->d;
	va_list ap;

	if (bytes <= 0)
		return;
	if (d->n_alloc == c->cap_alloc) {
		c->cap_alloc = c->cap_alloc ? 2 * c->cap_alloc : 64;
		d->alloc = sl_xrealloc(d->alloc, c->cap_alloc * sizeof(*d->alloc));
	}
	sl_alloc *a = &d->alloc[d->n_alloc++];
	memset(a, 0, sizeof(*a));
	va_start(ap, fmt);
	vsnprintf(a->name, sizeof(a->name), fmt, ap);
	va_end(ap);
	a->cat = cat;
	a->op = op;
	a->bytes = bytes;
	a->kind = -1;
	sl_mem_add(&d->alloc_sum, cat, bytes);
}

static sl_launch_item *
launch_item(launch_ctx *c, sl_item_kind kind, sl_phase ph, int op,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static sl_launch_item *
launch_item(launch_ctx *c, sl_item_kind kind, sl_phase ph, int op,
    const char *fmt, ...)
{
	sl_launch_dev *d = c->d;
	va_list ap;

	if (d->n_items == c->cap_items) {
		c->cap_items = c->cap_items ? 2 * c->cap_items : 64;
		d->item = sl_xrealloc(d->item, c->cap_items * sizeof(*d->item));
	}
	sl_launch_item *it = &d->item[d->n_items++];
	memset(it, 0, sizeof(*it));
	it->kind = kind;
	it->phase = ph;
	it->op = op;
	it->batch = 1;
	it->axis = -1;
	va_start(ap, fmt);
	vsnprintf(it->name, sizeof(it->name), fmt, ap);
	va_end(ap);
	if (c->recompute) {
		size_t n = strlen(it->name);
		snprintf(it->name + n, sizeof(it->name) - n, ".recompute");
	}
	return it;
}

static void
launch_gemm(launch_ctx *c, sl_phase ph, int op, const char *what,
    int64_t batch, int64_t m, int64_t n, int64_t k)
{
	const sl_op *o = &c->s->g->ops[op];
	sl_launch_item *it = launch_item(c, SL_ITEM_GEMM, ph, op, "%s.%s",
	    o->name, what);

	it->batch = batch;
	it->m = m;
	it->n = n;
	it->k = k;
	it->flops = sl_mul_sat(sl_mul_sat(sl_mul_sat(2 * batch, m), n), k);
	if (strcmp(what, "wgrad") == 0)
		c->wgrad_item[op] = c->d->n_items - 1;
	c->d->flops = sl_add_sat(c->d->flops, it->flops);
}

static void
launch_memory(launch_ctx *c, sl_phase ph, int op, const char *what, int64_t bytes)
{
	const sl_op *o = &c->s->g->ops[op];
	sl_launch_item *it;

	if (bytes <= 0)
		return;
	it = launch_item(c, SL_ITEM_MEMORY, ph, op, "%s.%s", o->name, what);
	it->bytes = bytes;
	c->d->traffic = sl_add_sat(c->d->traffic, bytes);
}

static void
launch_coll(launch_ctx *c, sl_phase ph, int op, sl_coll coll, int axis,
    int64_t bytes, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static void
launch_coll(launch_ctx *c, sl_phase ph, int op, sl_coll coll, int axis,
    int64_t bytes, const char *fmt, ...)
{
	const sl_mesh *m = &c->s->mesh;
	char name[96];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	sl_launch_item *it = launch_item(c, SL_ITEM_COLL, ph, op, "%s", name);
	it->coll = coll;
	it->axis = axis;
	it->group = m->axes[axis].size;
	it->bytes = bytes;
	it->ns = sl_coll_time(coll, it->group, bytes, &m->axes[axis].link);
	c->d->items_comm_ns = sl_add_sat(c->d->items_comm_ns, it->ns);
}

/* Local size of loop dimension l of op's strategy on the device. */
static int64_t
launch_loop_local(const sl_space *s, int op, int strat, int l, const int *coord)
{
	const sl_space_op *so = &s->ops[op];
	sl_spec sp;

	memset(&sp, 0, sizeof(sp));
	sp.split[0] = so->strat[strat].loop_axes[l];
	return sl_local_dim(&s->mesh, &sp, 0, so->bind->size[l], coord);
}

static const sl_tensor *
launch_slot_tensor(const sl_space *s, int op, int slot)
{
	const sl_op *o = &s->g->ops[op];
	int t = slot < o->n_in ? o->in[slot] : o->out[slot - o->n_in];

	return &s->g->tensors[t];
}

/* Local elements of a slot's tensor without the ZeRO state sharding. */
static int64_t
launch_slot_elems(const sl_space *s, int op, int strat, int slot, const int *coord)
{
	sl_spec sp = s->ops[op].strat[strat].spec[slot];

	sp.zero = 0;
	return sl_local_elems(&s->mesh, &sp, launch_slot_tensor(s, op, slot), coord);
}

static int64_t
launch_slot_bytes(const sl_space *s, int op, int strat, int slot, const int *coord)
{
	const sl_tensor *t = launch_slot_tensor(s, op, slot);

	return sl_mul_sat(launch_slot_elems(s, op, strat, slot, coord),
	    sl_elem_bytes(s, t));
}




/* Does slot use loop dimension l? */
static bool
launch_slot_has_loop(const sl_binding *b, const sl_tensor *t, int slot, int l)
{
	for (int d = 0; d < t->rank; d++)
		if (b->map[slot][d] == l)
			return true;
	return false;
}

/* One memory item of the cost model as named buffers: a parameter's states
 * as their parts (weight, gradient, fp32 master, Adam's moments). */
static void
launch_mem_item(void *ctx, const sl_mem_item *it)
{
	launch_ctx *c = ctx;
	const sl_graph *g = c->s->g;
	const char *on = it->op >= 0 ? g->ops[it->op].name : "";
	const char *tn = it->tensor >= 0 ? g->tensors[it->tensor].name : "extra";

	switch (it->what) {
	case SL_WHAT_STATE:
		for (int p = 0; p < SL_PART_COUNT; p++) {
			if (it->parts[p] == 0)
				continue;
			if (p == SL_PART_WEIGHT)
				launch_alloc(c, it->op, it->cat, sl_mul_sat(it->parts[p],
				    it->elems), "%s", tn);
			else
				launch_alloc(c, it->op, it->cat, sl_mul_sat(it->parts[p],
				    it->elems), "%s.%s", tn,
				    sl_state_part_name((sl_state_part)p));
		}
		break;
	case SL_WHAT_AUTOCAST:
		launch_alloc(c, it->op, it->cat, it->local, "%s:autocast:%s", on, tn);
		break;
	case SL_WHAT_FP8:
		launch_alloc(c, it->op, it->cat, it->local, "%s:fp8:%s", on, tn);
		break;
	case SL_WHAT_TRANSIENT: {
		/* the resharding copy the consumer holds */
		const sl_space_edge *ed = &c->s->edges[it->edge];
		launch_alloc(c, ed->dst, it->cat, it->local, "%s:%s->%s", tn,
		    g->ops[ed->src].name, g->ops[ed->dst].name);
		break;
	}
	default:
		launch_alloc(c, it->op, it->cat, it->local, "%s:saved:%s", on, tn);
		break;
	}
}

/* ------------------------------------------------------------- kernels */

/*
 * Matmul-like kinds as an einsum of two inputs A, B into Y: loop dimensions
 * in A, B and Y are batch; in A and Y only m; in B and Y only n; in A and B
 * only k (the contraction).
 */
static void
launch_gemm_shape(const launch_ctx *c, int op, const int *coord, int64_t *batch,
    int64_t *m, int64_t *n, int64_t *k)
{
	const sl_space *s = c->s;
	const sl_op *o = &s->g->ops[op];
	const sl_binding *b = s->ops[op].bind;
	int st = c->choice[op];
	const sl_tensor *ta = launch_slot_tensor(s, op, 0);
	const sl_tensor *tb = launch_slot_tensor(s, op, 1);
	const sl_tensor *ty = launch_slot_tensor(s, op, o->n_in);

	*batch = *m = *n = *k = 1;
	for (int l = 0; l < b->n_loop; l++) {
		bool ia = launch_slot_has_loop(b, ta, 0, l);
		bool ib = launch_slot_has_loop(b, tb, 1, l);
		bool iy = launch_slot_has_loop(b, ty, o->n_in, l);
		int64_t sz = launch_loop_local(s, op, st, l, coord);

		if (ia && ib && iy)
			*batch *= sz;
		else if (ia && iy)
			*m *= sz;
		else if (ib && iy)
			*n *= sz;
		else if (ia && ib)
			*k *= sz;
	}
}

/* Forward (ph FWD) or backward kernels of one operator. */
static void
launch_op_kernels(launch_ctx *c, int op, sl_phase ph, const int *coord)
{
	const sl_space *s = c->s;
	const sl_op *o = &s->g->ops[op];
	int st = c->choice[op];
	int64_t in_b = 0, out_b = 0, grad_in_b = 0;

	for (int i = 0; i < o->n_in; i++) {
		int64_t b = launch_slot_bytes(s, op, st, i, coord);

		in_b += b;
		if (sl_space_grad(s, o->in[i]))
			grad_in_b += b;
	}
	for (int j = 0; j < o->n_out; j++)
		out_b += launch_slot_bytes(s, op, st, o->n_in + j, coord);

	switch (sl_kinds[o->kind].kernel) {
	case SL_KERNEL_GEMM: {
		int64_t bt, m, n, k;

		launch_gemm_shape(c, op, coord, &bt, &m, &n, &k);
		if (ph == SL_PHASE_FWD) {
			launch_gemm(c, ph, op, "fwd", bt, m, n, k);
			if (o->n_in > 2)	/* bias: read y and bias, write y */
				launch_memory(c, ph, op, "bias", 2 * out_b);
		} else {
			if (o->n_in > 2)	/* bias gradient: a reduction of dy */
				launch_memory(c, ph, op, "dbias", out_b);
			if (sl_space_grad(s, o->in[0]))
				launch_gemm(c, ph, op, "dgrad", bt, m, k, n);
			if (sl_space_grad(s, o->in[1]))
				launch_gemm(c, ph, op, "wgrad", bt, k, n, m);
		}
		break;
	}
	case SL_KERNEL_EXPERTS: {
		/*
		 * x[b,E,c,h] through every local expert: grouped gemms of E
		 * local problems of m = b c tokens, fc1 (h -> f') and fc2
		 * (f -> h), the activation between them (loops b, E, c, h, f;
		 * kinds.c bind_experts).
		 */
		int64_t e = launch_loop_local(s, op, st, 1, coord);
		int64_t m = launch_loop_local(s, op, st, 0, coord) *
		    launch_loop_local(s, op, st, 2, coord);
		int64_t h = launch_loop_local(s, op, st, 3, coord);
		int64_t f = launch_loop_local(s, op, st, 4, coord);
		int64_t f1 = o->gated ? 2 * f : f;
		/* the activation reads f' and writes f values per token */
		int64_t act = 2 * e * m * (f1 + f);

		if (ph == SL_PHASE_FWD) {
			launch_gemm(c, ph, op, "fc1", e, m, f1, h);
			launch_memory(c, ph, op, "act", act);
			launch_gemm(c, ph, op, "fc2", e, m, h, f);
		} else {
			launch_gemm(c, ph, op, "fc2.dgrad", e, m, f, h);
			launch_gemm(c, ph, op, "fc2.wgrad", e, f, h, m);
			launch_memory(c, ph, op, "dact", act + 2 * e * m * f1);
			launch_gemm(c, ph, op, "fc1.dgrad", e, m, h, f1);
			launch_gemm(c, ph, op, "fc1.wgrad", e, h, f1, m);
		}
		break;
	}
	case SL_KERNEL_ATTENTION: {
		/* qkv[b,s,(q+2kv)d] (or latent q, kv, k_rope) -> y[b,s,q dv];
		 * keys span the whole sequence; QK^T is dqk wide, PV dv */
		const sl_tensor *y = launch_slot_tensor(s, op, o->n_in);
		const sl_spec *ys = &s->ops[op].strat[st].spec[o->n_in];
		sl_attn_dims ad;
		int64_t d, dk, S, yl, sl, bh, probs;

		sl_attention_dims(s->g, o, &ad);
		d = ad.dv > 0 ? ad.dv : 1;
		dk = ad.dqk > 0 ? ad.dqk : d;
		S = y->rank >= 2 ? y->dims[y->rank - 2] : 1;
		yl = sl_local_elems(&s->mesh, ys, y, coord);
		sl = y->rank >= 2 ? sl_local_dim(&s->mesh, ys, y->rank - 2, S, coord) : 1;
		bh = sl > 0 ? yl / (sl * d) : 0;
		probs = sl_mul_sat(sl_mul_sat(bh, sl), S) * 2;
		if (ph == SL_PHASE_FWD) {
			launch_gemm(c, ph, op, "qk", bh, sl, S, dk);
			launch_memory(c, ph, op, "softmax", 2 * probs);
			launch_gemm(c, ph, op, "pv", bh, sl, d, S);
		} else {
			launch_gemm(c, ph, op, "dp", bh, sl, S, d);
			launch_gemm(c, ph, op, "dv", bh, S, d, sl);
			launch_memory(c, ph, op, "dsoftmax", 3 * probs);
			launch_gemm(c, ph, op, "dq", bh, sl, dk, S);
			launch_gemm(c, ph, op, "dk", bh, S, dk, sl);
		}
		break;
	}
	case SL_KERNEL_VIEW:
		break;		/* no traffic */
	case SL_KERNEL_GATHER:
		/* gather rows into y; backward scatter-adds dy into the table */
		if (ph == SL_PHASE_FWD)
			launch_memory(c, ph, op, "fwd", 2 * out_b);
		else
			launch_memory(c, ph, op, "bwd", 3 * out_b);
		break;
	case SL_KERNEL_MEMORY:
	default:
		/* read the inputs, write the outputs; backward reads dy and the
		 * saved inputs and writes their gradients */
		if (ph == SL_PHASE_FWD)
			launch_memory(c, ph, op, "fwd", in_b + out_b);
		else
			launch_memory(c, ph, op, "bwd", out_b + in_b + grad_in_b);
		break;
	}
}

/* --------------------------------------------------------- collectives */

/*
 * The cost model's collectives (sl_node_colls, sl_edge_colls), launched in
 * step order: for a node, those of one phase, before or after its kernels.
 */
struct coll_launch {
	launch_ctx *c;
	int op;			/* operator they are launched with */
	sl_phase phase;
	bool after;
	const char *label;	/* edge: "tensor:src->dst" */
};

static void
launch_coll_item(void *ctx, const sl_coll_item *it)
{
	struct coll_launch *l = ctx;
	const sl_graph *g = l->c->s->g;

	if (it->phase != l->phase || it->after != l->after)
		return;
	if (l->label != NULL)
		launch_coll(l->c, it->phase, l->op, it->coll, it->axis, it->bytes,
		    "%s.%s%d", l->label, sl_coll_tag(it), it->axis);
	else
		launch_coll(l->c, it->phase, l->op, it->coll, it->axis, it->bytes,
		    "%s.%s.%s%d", g->ops[l->op].name, g->tensors[it->tensor].name,
		    sl_coll_tag(it), it->axis);
}

static void
launch_edge_colls(launch_ctx *c, int e, sl_phase ph)
{
	const sl_space *s = c->s;
	const sl_space_edge *ed = &s->edges[e];
	char label[96];
	struct coll_launch l = { c, ed->dst, ph, false, label };

	snprintf(label, sizeof label, "%s:%s->%s", s->g->tensors[ed->tensor].name,
	    s->g->ops[ed->src].name, s->g->ops[ed->dst].name);
	sl_edge_colls(s, e, c->choice[ed->src], c->choice[ed->dst],
	    launch_coll_item, &l);
}

static void
launch_node_colls(launch_ctx *c, int op, sl_phase ph, bool after)
{
	struct coll_launch l = { c, op, ph, after, NULL };

	sl_node_colls(c->s, op, c->choice[op], launch_coll_item, &l);
}

/* ------------------------------------------------- timeline events */

/*
 * The timeline's buffers and when the step allocates and releases them, as
 * events before launch items.  Each task of the timeline starts at its first
 * item (a forward: the operator's forward block; an input gradient: its
 * backward block; a weight gradient: its wgrad gemm); a task without items
 * starts where the next one does.  Before the task at position p, the
 * buffers last alive at p - 1 are released, then those first alive at p are
 * allocated, so the bytes held after each allocation are the timeline's
 * live bytes at p and the replay peaks at its peak.
 */
static int
launch_events(const sl_space *s, const int *choice, int dev, launch_ctx *c,
    sl_error *err)
{
	sl_launch_dev *d = c->d;
	sl_timeline tl;
	int n_ops = s->g->n_ops, *start, *at, cap, rc;

	if ((rc = sl_timeline_build(s, choice, dev, false, &tl, err)) != SL_OK)
		return rc;
	start = sl_xmalloc((tl.n_tasks + 1) * sizeof *start);
	at = sl_xmalloc((tl.n_tasks + 1) * sizeof *at);
	for (int t = 0; t < tl.n_tasks; t++)
		start[t] = -1;
	for (int t = 0; t < tl.n_tasks; t++) {
		const sl_task *tk = &tl.task[t];
		int op = tk->op;

		if (op < 0 || op >= n_ops)
			continue;
		for (int i = 0; i < d->n_items && start[t] < 0; i++) {
			const sl_launch_item *it = &d->item[i];
			if (it->op != op)
				continue;
			if ((tk->kind == SL_TASK_FWD && it->phase == SL_PHASE_FWD) ||
			    (tk->kind == SL_TASK_BWD && it->phase == SL_PHASE_BWD))
				start[t] = i;
		}
		if (tk->kind == SL_TASK_WGRAD)
			start[t] = c->wgrad_item[op];
	}
	at[tl.n_tasks] = d->n_items;
	for (int p = tl.n_tasks - 1; p >= 0; p--)
		at[p] = start[tl.order[p]] >= 0 ? start[tl.order[p]] : at[p + 1];
	for (int p = 1; p <= tl.n_tasks; p++)	/* never before an earlier task */
		if (at[p] < at[p - 1])
			at[p] = at[p - 1];

	d->n_tbuf = tl.n_bufs;
	d->tbuf = sl_xcalloc(tl.n_bufs + 1, sizeof *d->tbuf);
	for (int i = 0; i < tl.n_bufs; i++) {
		sl_alloc *a = &d->tbuf[i];
		snprintf(a->name, sizeof a->name, "%s", tl.buf[i].name);
		a->cat = tl.buf[i].cat;
		a->op = tl.buf[i].op;
		a->bytes = tl.buf[i].bytes;
		a->kind = tl.buf[i].kind;
		sl_mem_add(&d->tbuf_sum, a->cat, a->bytes);
	}
	cap = 2 * tl.n_bufs + 1;
	d->event = sl_xmalloc(cap * sizeof *d->event);
	for (int p = 0; p <= tl.n_tasks; p++) {
		for (int i = 0; i < tl.n_bufs; i++)
			if (tl.buf[i].last == p - 1 && tl.buf[i].bytes > 0)
				d->event[d->n_event++] = (sl_launch_event){ at[p], i, true };
		for (int i = 0; p < tl.n_tasks && i < tl.n_bufs; i++)
			if (tl.buf[i].first == p && tl.buf[i].bytes > 0)
				d->event[d->n_event++] = (sl_launch_event){ at[p], i, false };
	}
	d->tl_peak = tl.peak;
	free(start);
	free(at);
	sl_timeline_free(&tl);
	return SL_OK;
}

int64_t
sl_launch_replay_peak(const sl_launch_dev *d)
{
	int64_t held = 0, peak = 0;

	for (int e = 0; e < d->n_event; e++) {
		const sl_launch_event *ev = &d->event[e];
		if (ev->buf < 0 || ev->buf >= d->n_tbuf)
			continue;
		held += ev->release ? -d->tbuf[ev->buf].bytes : d->tbuf[ev->buf].bytes;
		if (held > peak)
			peak = held;
	}
	return peak;
}

static int
launch_build_dev(const sl_space *s, const int *choice, int dev, sl_launch_dev *d,
    sl_error *err)
{
	const sl_graph *g = s->g;
	launch_ctx c = { s, choice, d, 0, 0, NULL, false };
	int coord[SL_MAX_AXES] = { 0 };
	int rc;

	c.wgrad_item = sl_xmalloc((g->n_ops + 1) * sizeof *c.wgrad_item);
	for (int op = 0; op < g->n_ops; op++)
		c.wgrad_item[op] = -1;

	d->id = dev;
	sl_mesh_coords(&s->mesh, dev, coord);
	memcpy(d->coord, coord, sizeof(d->coord));

	/* the buffers the evaluator sums, and the communication it counts */
	sl_step_items(s, choice, coord, true, launch_mem_item, &c);
	for (int op = 0; op < g->n_ops; op++) {
		sl_comm comm;
		sl_node_cost(s, op, choice[op], coord, NULL, &comm);
		d->comm_ns = sl_add_sat(d->comm_ns, sl_comm_total(&comm));
	}
	for (int e = 0; e < s->n_edges; e++) {
		const sl_space_edge *ed = &s->edges[e];
		sl_comm comm;
		sl_edge_cost(s, e, choice[ed->src], choice[ed->dst], coord, NULL,
		    &comm);
		d->comm_ns = sl_add_sat(d->comm_ns, sl_comm_total(&comm));
	}

	/* forward in graph order: incoming resharding, ZeRO gathers, kernels */
	for (int op = 0; op < g->n_ops; op++) {
		for (int e = 0; e < s->n_edges; e++)
			if (s->edges[e].dst == op)
				launch_edge_colls(&c, e, SL_PHASE_FWD);
		launch_node_colls(&c, op, SL_PHASE_FWD, false);
		launch_op_kernels(&c, op, SL_PHASE_FWD, coord);
		launch_node_colls(&c, op, SL_PHASE_FWD, true);
	}
	/* backward in reverse: gathers, kernels, gradient reductions, and the
	 * backward mirror of the incoming resharding; a layer that recomputes
	 * re-runs the forward kernels of its recomputed operators first */
	for (int op = g->n_ops - 1; op >= 0; op--) {
		int lay = g->ops[op].layer;

		if (lay >= 0 && op == g->layers[lay].first_op + g->layers[lay].n_ops - 1) {
			c.recompute = true;
			for (int v = g->layers[lay].first_op; v <= op; v++)
				if (sl_op_recomputed(s, v))
					launch_op_kernels(&c, v, SL_PHASE_FWD, coord);
			c.recompute = false;
		}
		launch_node_colls(&c, op, SL_PHASE_BWD, false);
		launch_op_kernels(&c, op, SL_PHASE_BWD, coord);
		launch_node_colls(&c, op, SL_PHASE_BWD, true);
		for (int e = s->n_edges - 1; e >= 0; e--)
			if (s->edges[e].dst == op)
				launch_edge_colls(&c, e, SL_PHASE_BWD);
	}
	/* The evaluator's kernel time of this device (compute.c). */
	d->compute_ns = 0;
	for (int op = 0; op < g->n_ops; op++) {
		sl_compute cp;
		sl_node_compute(s, op, choice[op], coord, &cp);
		d->compute_ns = sl_add_sat(d->compute_ns, sl_add_sat(cp.fwd_ns,
		    sl_add_sat(cp.bwd_ns, cp.recompute_ns)));
	}
	rc = launch_events(s, choice, dev, &c, err);
	free(c.wgrad_item);
	return rc;
}

int
sl_launch_build(const sl_space *s, const int *choice, sl_launch *l, sl_error *err)
{
	sl_eval ev;
	int rc;

	memset(l, 0, sizeof(*l));
	for (int op = 0; op < s->g->n_ops; op++)
		if (choice[op] < 0 || choice[op] >= s->ops[op].n_strat)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("operator %s: strategy index %d out of range"),
			    s->g->ops[op].name, choice[op]);
	memset(&ev, 0, sizeof(ev));
	if ((rc = sl_evaluate(s, choice, 0.0, &ev, err)) != SL_OK)
		return rc;
	snprintf(l->model, sizeof(l->model), "%s", s->g->name ? s->g->name : "");
	snprintf(l->hardware, sizeof(l->hardware), "%s", s->mesh.hw.name);
	l->mesh = s->mesh;
	l->n_devices = s->mesh.n_devices;
	l->eval_comm_ns = ev.comm_ns;
	l->dev = sl_xcalloc(l->n_devices, sizeof(*l->dev));
	for (int d = 0; d < l->n_devices; d++) {
		if ((rc = launch_build_dev(s, choice, d, &l->dev[d], err)) != SL_OK)
			break;
		if (d < ev.n_devices)
			l->dev[d].predicted = ev.dev[d];
	}
	sl_eval_free(&ev);
	if (rc != SL_OK)
		sl_launch_free(l);
	return rc;
}

void
sl_launch_free(sl_launch *l)
{
	if (l->dev) {
		for (int d = 0; d < l->n_devices; d++) {
			free(l->dev[d].alloc);
			free(l->dev[d].item);
			free(l->dev[d].tbuf);
			free(l->dev[d].event);
		}
		free(l->dev);
	}
	memset(l, 0, sizeof(*l));
}

/* ----------------------------------------------------------------- JSON */

static json_t *
launch_mem_json(const sl_mem *m)
{
	json_t *o = json_object();

	json_object_set_new(o, "total", json_integer(sl_mem_total(m)));
	for (int c = 0; c < SL_CAT_COUNT; c++)
		json_object_set_new(o, sl_mem_cat_name(c),
		    json_integer(sl_mem_get(m, c)));
	return o;
}

static const char *const launch_item_kinds[] = { "gemm", "memory", "collective" };

static json_t *
launch_item_json(const sl_launch *l, const sl_launch_item *it)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:i}",
	    "kind", launch_item_kinds[it->kind],
	    "phase", it->phase == SL_PHASE_FWD ? "fwd" : "bwd",
	    "name", it->name, "op", it->op);

	switch (it->kind) {
	case SL_ITEM_GEMM:
		json_object_set_new(o, "batch", json_integer(it->batch));
		json_object_set_new(o, "m", json_integer(it->m));
		json_object_set_new(o, "n", json_integer(it->n));
		json_object_set_new(o, "k", json_integer(it->k));
		json_object_set_new(o, "flops", json_integer(it->flops));
		break;
	case SL_ITEM_MEMORY:
		json_object_set_new(o, "bytes", json_integer(it->bytes));
		break;
	case SL_ITEM_COLL:
		json_object_set_new(o, "collective",
		    json_string(sl_coll_name(it->coll)));
		json_object_set_new(o, "axis", json_integer(it->axis));
		json_object_set_new(o, "group", json_integer(it->group));
		json_object_set_new(o, "bytes", json_integer(it->bytes));
		json_object_set_new(o, "time_ns", json_integer(it->ns));
		break;
	}
	return o;
}

static json_t *
launch_json(const sl_launch *l)
{
	json_t *root = json_object(), *mesh = json_object();
	json_t *shape = json_array(), *axes = json_array(), *devs = json_array();

	json_object_set_new(root, "format", json_string("shardlab-launch"));
	json_object_set_new(root, "version", json_integer(SL_LAUNCH_VERSION));
	json_object_set_new(root, "model", json_string(l->model));
	for (int a = 0; a < l->mesh.n_axes; a++) {
		json_array_append_new(shape, json_integer(l->mesh.axes[a].size));
		json_array_append_new(axes, json_pack("{s:i, s:f, s:f}",
		    "size", l->mesh.axes[a].size,
		    "bandwidth", l->mesh.axes[a].link.bandwidth,
		    "latency", l->mesh.axes[a].link.latency));
	}
	json_object_set_new(mesh, "shape", shape);
	json_object_set_new(mesh, "axes", axes);
	json_object_set_new(mesh, "hardware", json_string(l->hardware));
	json_object_set_new(mesh, "device", json_string(l->mesh.hw.device));
	json_object_set_new(mesh, "flops", json_real(l->mesh.hw.flops));
	json_object_set_new(mesh, "memory_bytes", json_integer(l->mesh.hw.memory_bytes));
	json_object_set_new(root, "mesh", mesh);
	json_object_set_new(root, "comm_time_ns", json_integer(l->eval_comm_ns));

	for (int d = 0; d < l->n_devices; d++) {
		const sl_launch_dev *dv = &l->dev[d];
		json_t *jd = json_object(), *coord = json_array();
		json_t *allocs = json_array(), *items = json_array();

		json_object_set_new(jd, "id", json_integer(dv->id));
		for (int a = 0; a < l->mesh.n_axes; a++)
			json_array_append_new(coord, json_integer(dv->coord[a]));
		json_object_set_new(jd, "coord", coord);
		json_object_set_new(jd, "predicted", json_pack(
		    "{s:o, s:I, s:I, s:I}",
		    "memory_bytes", launch_mem_json(&dv->predicted),
		    "comm_time_ns", (json_int_t)dv->comm_ns,
		    "compute_time_ns", (json_int_t)dv->compute_ns,
		    "step_time_ns", (json_int_t)sl_add_sat(dv->comm_ns, dv->compute_ns)));
		json_object_set_new(jd, "allocated_bytes", launch_mem_json(&dv->alloc_sum));
		json_object_set_new(jd, "flops", json_integer(dv->flops));
		json_object_set_new(jd, "traffic_bytes", json_integer(dv->traffic));
		for (int i = 0; i < dv->n_alloc; i++)
			json_array_append_new(allocs, json_pack("{s:s, s:s, s:I}",
			    "name", dv->alloc[i].name,
			    "category", sl_mem_cat_name(dv->alloc[i].cat),
			    "bytes", (json_int_t)dv->alloc[i].bytes));
		json_object_set_new(jd, "allocations", allocs);
		for (int i = 0; i < dv->n_items; i++)
			json_array_append_new(items, launch_item_json(l, &dv->item[i]));
		json_object_set_new(jd, "launch", items);
		if (dv->n_event > 0) {
			json_t *tb = json_array(), *evs = json_array();
			for (int i = 0; i < dv->n_tbuf; i++)
				json_array_append_new(tb, json_pack("{s:s, s:s, s:s, s:I}",
				    "name", dv->tbuf[i].name,
				    "category", sl_mem_cat_name(dv->tbuf[i].cat),
				    "kind", sl_buf_kind_name(dv->tbuf[i].kind),
				    "bytes", (json_int_t)dv->tbuf[i].bytes));
			for (int i = 0; i < dv->n_event; i++)
				json_array_append_new(evs, json_pack("{s:i, s:i}",
				    "at", dv->event[i].at,
				    dv->event[i].release ? "free" : "alloc",
				    dv->event[i].buf));
			json_object_set_new(jd, "timeline_peak_bytes",
			    json_integer(dv->tl_peak));
			json_object_set_new(jd, "timeline_buffers", tb);
			json_object_set_new(jd, "events", evs);
		}
		json_array_append_new(devs, jd);
	}
	json_object_set_new(root, "devices", devs);
	return root;
}

char *
sl_launch_to_json(const sl_launch *l, sl_error *err)
{
	char *txt = sl_json_format(launch_json(l));

	if (!txt)
		sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("cannot encode the launch list as JSON"));
	return txt;
}

int
sl_launch_write_json(const sl_launch *l, const char *path, sl_error *err)
{
	return sl_json_write(launch_json(l), path,
	    _("cannot write the launch list"), err);
}
