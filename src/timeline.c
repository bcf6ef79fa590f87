/*
 * timeline.c: memory over time.  One training step of a plan on one device
 * as tasks in execution order (forward, the loss, backward split into input
 * and weight gradients, the optimizer step) and the buffers alive around
 * them; the peak of that timeline; the order of independent tasks that
 * lowers it (ROAM, Wang et al. 2023); and PyTorch's caching allocator
 * simulated over it for reserved memory (doc/cost-model.md, "Memory over
 * time").
 *
 * What a step keeps, and how many bytes, comes from sl_node_items and
 * sl_edge_cost alone; this file only says when each item is allocated and
 * released.  A buffer is described by two task sets: it is allocated before
 * the first task of its alloc set runs (empty: from the start of the step)
 * and released after every task of its free set has run (empty: kept past
 * the step).  The live bytes during a task therefore depend only on which
 * tasks have run, which is what makes the exact search over orders a
 * search over sets.
 */
#include "internal.h"
#include "json.h"

#include <jansson.h>
#include <stdlib.h>

static const char *const buf_kind_names[SL_BUF_KIND_COUNT] = {
	"state", "gradient", "saved", "autocast", "extra", "recomputed",
	"working", "activation-gradient", "gathered", "full-gradient",
	"reshard", "loss", "optimizer-work"
};

const char *
sl_buf_kind_name(sl_buf_kind k)
{
	if ((int)k < 0 || k >= SL_BUF_KIND_COUNT)
		return "?";
	return buf_kind_names[k];
}

/* ------------------------------------------------------------ building */

typedef struct tl_build {
	const sl_space *s;
	const int *choice;
	int coord[SL_MAX_AXES];
	sl_timeline *tl;
	int cap_bufs, cap_a, cap_f, n_a, n_f;
	int n_ops;
	int *wgrad;		/* per operator: its weight-gradient task, -1 none */
	int loss, optim;
	/* item callback state */
	int cur_op;
	bool remat;		/* collecting a recomputed layer's items */
	bool *kept;		/* per tensor: an item keeps it (no working buffer) */
	int64_t max_grad;	/* largest parameter gradient on this device */
	bool persistent_grads;
	/* items of the kept (recomputed-layer) set, for subtraction */
	int n_keep, cap_keep;
	int (*keep)[3];		/* tensor, what, category */
	int *rd_start, *rd;	/* readers of each tensor (CSR, duplicates kept) */
	int64_t sum;		/* what the evaluator counts on this device */
} tl_build;

/* Readers of tensor t: b->rd[b->rd_start[t] .. b->rd_start[t + 1]). */
#define READERS(b, t, k) for (int k = (b)->rd_start[t]; k < (b)->rd_start[(t) + 1]; k++)

static void
build_readers(tl_build *b)
{
	const sl_graph *g = b->s->g;
	int *fill = sl_xcalloc(g->n_tensors + 1, sizeof *fill);

	b->rd_start = sl_xcalloc(g->n_tensors + 1, sizeof *b->rd_start);
	for (int u = 0; u < g->n_ops; u++)
		for (int i = 0; i < g->ops[u].n_in; i++)
			b->rd_start[g->ops[u].in[i] + 1]++;
	for (int t = 0; t < g->n_tensors; t++)
		b->rd_start[t + 1] += b->rd_start[t];
	b->rd = sl_xmalloc((b->rd_start[g->n_tensors] + 1) * sizeof *b->rd);
	for (int u = 0; u < g->n_ops; u++)
		for (int i = 0; i < g->ops[u].n_in; i++) {
			int t = g->ops[u].in[i];
			b->rd[b->rd_start[t] + fill[t]++] = u;
		}
	free(fill);
}

#define FWD(v) (v)
#define BWD(b, v) ((b)->n_ops + 1 + (v))

static int
buf_new(tl_build *b, sl_buf_kind kind, int cat, int op, int tensor,
    int64_t bytes, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static int
buf_new(tl_build *b, sl_buf_kind kind, int cat, int op, int tensor,
    int64_t bytes, const char *fmt, ...)
{
	sl_timeline *tl = b->tl;
	sl_tl_buf *x;
	va_list ap;

	if (tl->n_bufs + 1 >= b->cap_bufs) {
		b->cap_bufs = b->cap_bufs ? 2 * b->cap_bufs : 256;
		tl->buf = sl_xrealloc(tl->buf, b->cap_bufs * sizeof *tl->buf);
		tl->a_start = sl_xrealloc(tl->a_start, (b->cap_bufs + 1) * sizeof(int));
		tl->f_start = sl_xrealloc(tl->f_start, (b->cap_bufs + 1) * sizeof(int));
	}
	x = &tl->buf[tl->n_bufs];
	memset(x, 0, sizeof *x);
	x->kind = kind;
	x->cat = cat;
	x->op = op;
	x->tensor = tensor;
	x->bytes = bytes;
	va_start(ap, fmt);
	vsnprintf(x->name, sizeof x->name, fmt, ap);
	va_end(ap);
	tl->a_start[tl->n_bufs] = b->n_a;
	tl->f_start[tl->n_bufs] = b->n_f;
	tl->n_bufs++;
	tl->a_start[tl->n_bufs] = b->n_a;
	tl->f_start[tl->n_bufs] = b->n_f;
	return tl->n_bufs - 1;
}

/* Adds task t to the alloc set (a) or free set (f) of the last buffer. */
static void
buf_a(tl_build *b, int t)
{
	if (t < 0)
		return;
	if (b->n_a == b->cap_a) {
		b->cap_a = b->cap_a ? 2 * b->cap_a : 1024;
		b->tl->a_list = sl_xrealloc(b->tl->a_list, b->cap_a * sizeof(int));
	}
	b->tl->a_list[b->n_a++] = t;
	b->tl->a_start[b->tl->n_bufs] = b->n_a;
}

static void
buf_f(tl_build *b, int t)
{
	if (t < 0)
		return;
	if (b->n_f == b->cap_f) {
		b->cap_f = b->cap_f ? 2 * b->cap_f : 1024;
		b->tl->f_list = sl_xrealloc(b->tl->f_list, b->cap_f * sizeof(int));
	}
	b->tl->f_list[b->n_f++] = t;
	b->tl->f_start[b->tl->n_bufs] = b->n_f;
}

/* The backward tasks that read what operator v saved from tensor slot: a
 * matmul's input only feeds its weight gradient (dW = X^T dY); everything
 * else is read by both halves. */
static void
buf_f_backward(tl_build *b, int v, bool only_wgrad)
{
	if (!(only_wgrad && b->wgrad[v] >= 0))
		buf_f(b, BWD(b, v));
	buf_f(b, b->wgrad[v]);
}

/* Alloc set: every backward task of the operators of layer ly. */
static void
buf_a_layer_backward(tl_build *b, int ly)
{
	const sl_layer *l = &b->s->g->layers[ly];

	for (int u = l->first_op; u < l->first_op + l->n_ops; u++) {
		buf_a(b, BWD(b, u));
		buf_a(b, b->wgrad[u]);
	}
}

static bool
tl_is_float(const sl_tensor *t)
{
	return t->dtype == SL_DT_F32 || t->dtype == SL_DT_F16 ||
	    t->dtype == SL_DT_BF16;
}

/* Bytes of tensor t on this device in the spec of operator v's slot. */
static int64_t
slot_elems(const tl_build *b, int v, int slot, const sl_spec *override)
{
	const sl_space *s = b->s;
	const sl_op *op = &s->g->ops[v];
	const sl_tensor *t = &s->g->tensors[sl_op_slot_tensor(op, slot)];
	const sl_spec *sp = override ? override :
	    &s->ops[v].strat[b->choice[v]].spec[slot];

	return sl_local_elems(&s->mesh, sp, t, b->coord);
}

static bool
matmul_x(const sl_space *s, int v, int t)
{
	const sl_op *op = &s->g->ops[v];

	return op->kind == SL_OP_MATMUL && op->in[0] == t;
}

static void
remember_keep(tl_build *b, int tensor, int what, int cat)
{
	if (b->n_keep == b->cap_keep) {
		b->cap_keep = b->cap_keep ? 2 * b->cap_keep : 16;
		b->keep = sl_xrealloc(b->keep, b->cap_keep * sizeof *b->keep);
	}
	b->keep[b->n_keep][0] = tensor;
	b->keep[b->n_keep][1] = what;
	b->keep[b->n_keep][2] = cat;
	b->n_keep++;
}

static bool
was_kept(const tl_build *b, int tensor, int what, int cat)
{
	for (int i = 0; i < b->n_keep; i++)
		if (b->keep[i][0] == tensor && b->keep[i][1] == what &&
		    b->keep[i][2] == cat)
			return true;
	return false;
}

/* What an item is, as the timeline tells them apart: a saved slot is an
 * input or an output; the layer input full recomputation keeps is an
 * input kept like any other. */
enum { KEEP_STATE, KEEP_SAVED_IN, KEEP_SAVED_OUT, KEEP_AUTOCAST, KEEP_EXTRA };

static int
keep_kind(const sl_op *op, const sl_mem_item *it)
{
	switch (it->what) {
	case SL_WHAT_STATE: return KEEP_STATE;
	case SL_WHAT_SAVED: return it->slot < op->n_in ? KEEP_SAVED_IN : KEEP_SAVED_OUT;
	case SL_WHAT_LAYER_INPUT: return KEEP_SAVED_IN;
	case SL_WHAT_AUTOCAST: return KEEP_AUTOCAST;
	default: return KEEP_EXTRA;
	}
}

/* The fp32 copy of its logits the loss keeps (an item of sl_node_items). */
struct loss_find { const sl_op *op; int64_t fp32; };

static void
loss_item(void *ctx, const sl_mem_item *it)
{
	struct loss_find *f = ctx;

	if (keep_kind(f->op, it) == KEEP_SAVED_IN && it->tensor == f->op->in[0])
		f->fp32 = it->local;
}

int64_t
sl_loss_bwd_bytes(const sl_space *s, int v, int strat, const int *coord)
{
	const sl_op *op = &s->g->ops[v];
	const sl_tensor *t;
	struct loss_find f = { op, 0 };
	int64_t grad = 0;

	if (op->kind != SL_OP_CROSS_ENTROPY || op->n_in < 1)
		return 0;
	sl_node_items(s, v, strat, coord, loss_item, &f);
	t = &s->g->tensors[op->in[0]];
	if (tl_is_float(t) && t->role == SL_ROLE_ACTIVATION)
		grad = sl_mul_sat(sl_local_elems(&s->mesh,
		    &s->ops[v].strat[strat].spec[0], t, coord),
		    sl_grad_elem_bytes(s, t));
	return sl_add_sat(f.fp32, grad);
}

/* One item of sl_node_items: when it lives. */
static void
tl_item(void *ctx, const sl_mem_item *it)
{
	tl_build *b = ctx;
	const sl_space *s = b->s;
	const sl_graph *g = s->g;
	int v = b->cur_op;
	const sl_op *op = &g->ops[v];
	int cat = it->cat, what = keep_kind(op, it);
	int tensor = it->tensor >= 0 ? it->tensor : op->out[0];
	int64_t local = it->local;
	const sl_tensor *t = &g->tensors[tensor];
	const char *tn = t->name;

	if (!b->remat)
		b->sum = sl_add_sat(b->sum, local);
	if (local <= 0)
		return;
	if (b->remat) {
		int ly = op->layer;
		if (what == KEEP_STATE || was_kept(b, tensor, what, cat))
			return;
		if (what == KEEP_AUTOCAST) {
			/* Autocast caches its bf16 copy of a weight until the
			 * autocast region (the forward pass and the loss) ends,
			 * though the layer keeps nothing for backward. */
			buf_new(b, SL_BUF_AUTOCAST, cat, v, tensor, local,
			    "%s:bf16:%s", op->name, tn);
			buf_a(b, FWD(v));
			buf_f(b, FWD(b->n_ops - 1));
		}
		buf_new(b, SL_BUF_REMAT, cat, v, tensor, local, "%s:recomputed:%s",
		    op->name, tn);
		buf_a_layer_backward(b, ly);
		buf_f_backward(b, v, what == KEEP_SAVED_IN && matmul_x(s, v, tensor));
		return;
	}
	if (s->layer_recompute != NULL && op->layer >= 0 &&
	    s->layer_recompute[op->layer] == SL_RECOMP_FULL)
		remember_keep(b, tensor, what, cat);
	switch (what) {
	case KEEP_STATE:
		if (cat != CAT_GRADS) {
			buf_new(b, SL_BUF_STATE, cat, v, tensor, local, "%s.%s", tn,
			    cat == CAT_PARAMS ? "weight" : "optimizer");
			return;
		}
		buf_new(b, SL_BUF_GRAD, cat, v, tensor, local, "%s.grad", tn);
		if (local > b->max_grad)
			b->max_grad = local;
		if (b->persistent_grads)
			return;
		/* Created by the first weight gradient that reaches it (shared
		 * weights have several), held until the optimizer step. */
		READERS(b, tensor, k)
			buf_a(b, b->wgrad[b->rd[k]]);
		buf_f(b, b->optim);
		return;
	case KEEP_SAVED_IN:
		b->kept[tensor] = true;
		buf_new(b, SL_BUF_SAVED, cat, v, tensor, local, "%s:saved:%s",
		    op->name, tn);
		/* Held from the tensor's production (it is the same memory). */
		if (t->producer >= 0)
			buf_a(b, FWD(t->producer));
		buf_f_backward(b, v, matmul_x(s, v, tensor));
		if (op->kind == SL_OP_CROSS_ENTROPY && tensor == op->in[0]) {
			/* The loss upcasts its logits to fp32 in forward and
			 * forms their fp32 gradient in backward: each the size
			 * of the fp32 copy it keeps. */
			buf_new(b, SL_BUF_LOSS, CAT_BUFFERS, v, tensor, local,
			    "%s:fp32:%s", op->name, tn);
			buf_a(b, FWD(v));
			buf_f(b, FWD(v));
			buf_new(b, SL_BUF_LOSS, CAT_BUFFERS, v, tensor, local,
			    "%s:fp32:%s.grad", op->name, tn);
			buf_a(b, BWD(b, v));
			buf_f(b, BWD(b, v));
		}
		return;
	case KEEP_SAVED_OUT:
		b->kept[tensor] = true;
		buf_new(b, SL_BUF_SAVED, cat, v, tensor, local, "%s:saved:%s",
		    op->name, tn);
		buf_a(b, FWD(v));
		buf_f_backward(b, v, false);
		return;
	case KEEP_AUTOCAST:
		buf_new(b, SL_BUF_AUTOCAST, cat, v, tensor, local, "%s:bf16:%s",
		    op->name, tn);
		buf_a(b, FWD(v));
		buf_f(b, BWD(b, v));	/* dX = dY W^T reads it */
		return;
	default:
		buf_new(b, SL_BUF_EXTRA, cat, v, tensor, local, "%s:%s", op->name,
		    s->opts.recipe.attention == SL_ATTN_FLASH ? "lse" : "scores");
		buf_a(b, FWD(v));
		buf_f(b, BWD(b, v));
		return;
	}
}

/* Tasks and their dependencies. */
static void
build_tasks(tl_build *b)
{
	const sl_space *s = b->s;
	const sl_graph *g = s->g;
	sl_timeline *tl = b->tl;
	int n = g->n_ops, nw = 0, cap, nd = 0;

	b->wgrad = sl_xmalloc((n ? n : 1) * sizeof *b->wgrad);
	for (int v = 0; v < n; v++) {
		b->wgrad[v] = -1;
		for (int i = 0; i < g->ops[v].n_in; i++)
			if (g->tensors[g->ops[v].in[i]].role == SL_ROLE_PARAMETER)
				b->wgrad[v] = 1;
		if (b->wgrad[v] > 0)
			b->wgrad[v] = 2 * n + 1 + nw++;
	}
	tl->n_tasks = 2 * n + 1 + nw + 1;
	b->loss = n;
	b->optim = tl->n_tasks - 1;
	tl->task = sl_xcalloc(tl->n_tasks, sizeof *tl->task);
	tl->task[b->optim] = (sl_task){ SL_TASK_OPTIM, -1, 0 };
	for (int v = 0; v < n; v++) {
		sl_compute cp;
		int64_t bw;
		sl_node_compute(s, v, b->choice[v], b->coord, &cp);
		tl->task[b->optim].ns = sl_add_sat(tl->task[b->optim].ns, cp.optim_ns);
		bw = sl_add_sat(cp.bwd_ns, cp.recompute_ns);
		tl->task[FWD(v)] = (sl_task){ SL_TASK_FWD, v, cp.fwd_ns };
		tl->task[BWD(b, v)] = (sl_task){ SL_TASK_BWD, v,
		    b->wgrad[v] >= 0 ? bw / 2 : bw };
		if (b->wgrad[v] >= 0)
			tl->task[b->wgrad[v]] = (sl_task){ SL_TASK_WGRAD, v, bw - bw / 2 };
	}
	tl->task[b->loss] = (sl_task){ SL_TASK_LOSS, -1, 0 };
	for (int i = 0; i < tl->n_tasks; i++)
		if (tl->task[i].ns < 1000)
			tl->task[i].ns = 1000;

	/* Dependencies (CSR): forward after producers; the loss after every
	 * forward; backward after the loss and the backward of every reader of
	 * an output; weight gradients likewise; the optimizer after all. */
	cap = 4 * tl->n_tasks + 16;
	tl->dep_start = sl_xmalloc((tl->n_tasks + 1) * sizeof(int));
	tl->dep = sl_xmalloc(cap * sizeof(int));
#define DEP(x) do { if (nd == cap) { cap *= 2; \
	tl->dep = sl_xrealloc(tl->dep, cap * sizeof(int)); } tl->dep[nd++] = (x); } while (0)
	for (int t = 0; t < tl->n_tasks; t++) {
		const sl_task *tk = &tl->task[t];
		tl->dep_start[t] = nd;
		if (tk->kind == SL_TASK_FWD) {
			const sl_op *op = &g->ops[tk->op];
			for (int i = 0; i < op->n_in; i++) {
				int p = g->tensors[op->in[i]].producer;
				if (p >= 0 && g->tensors[op->in[i]].role == SL_ROLE_ACTIVATION)
					DEP(FWD(p));
			}
		} else if (tk->kind == SL_TASK_LOSS) {
			for (int v = 0; v < n; v++)
				DEP(FWD(v));
		} else if (tk->kind == SL_TASK_BWD || tk->kind == SL_TASK_WGRAD) {
			const sl_op *op = &g->ops[tk->op];
			DEP(b->loss);
			for (int j = 0; j < op->n_out; j++)
				READERS(b, op->out[j], k)
					if (b->rd[k] != tk->op)
						DEP(BWD(b, b->rd[k]));
		} else {
			for (int u = b->loss + 1; u < b->optim; u++)
				DEP(u);
		}
	}
#undef DEP
	tl->dep_start[tl->n_tasks] = nd;
}

static int64_t
graph_batch(const sl_graph *g)
{
	for (int t = 0; t < g->n_tensors; t++)
		if (g->tensors[t].role == SL_ROLE_INPUT && g->tensors[t].rank > 0)
			return g->tensors[t].dims[0];
	return 0;
}

/* readers[t]: operators reading tensor t (CSR). */
static void
build_buffers(tl_build *b)
{
	const sl_space *s = b->s;
	const sl_graph *g = s->g;
	const sl_mesh *m = &s->mesh;
	const sl_recipe *r = &s->opts.recipe;
	int n = g->n_ops;

	b->persistent_grads = r->precision == SL_PREC_MEGATRON ||
	    sl_recipe_accum_steps(r, graph_batch(g)) > 1;
	b->kept = sl_xcalloc(g->n_tensors ? g->n_tensors : 1, sizeof *b->kept);

	/* What the cost model says each operator keeps. */
	for (int v = 0; v < n; v++) {
		const sl_op *op = &g->ops[v];
		b->cur_op = v;
		b->n_keep = 0;
		sl_node_items(s, v, b->choice[v], b->coord, tl_item, b);
		if (op->layer >= 0 && s->layer_recompute != NULL &&
		    s->layer_recompute[op->layer] == SL_RECOMP_FULL) {
			b->remat = true;
			sl_node_items_as(s, v, b->choice[v], b->coord,
			    SL_RECOMP_NONE, tl_item, b);
			b->remat = false;
		}
	}

	for (int v = 0; v < n; v++) {
		const sl_op *op = &g->ops[v];
		const sl_strategy *st = &s->ops[v].strat[b->choice[v]];

		/* ZeRO-3: the compute copy is gathered one layer ahead and
		 * released after use, in forward and again in backward; the
		 * weight gradient is whole until its reduce-scatter. */
		for (int i = 0; i < op->n_in; i++) {
			const sl_tensor *t = &g->tensors[op->in[i]];
			sl_spec sp = st->spec[i];
			int64_t e;
			if (s->owner[op->in[i]] != v || sp.zero == 0)
				continue;
			sp.zero = 0;
			e = slot_elems(b, v, i, &sp);
			buf_new(b, SL_BUF_GATHER, CAT_BUFFERS, v, op->in[i],
			    sl_mul_sat(e, sl_elem_bytes(s, t)), "%s.gather", t->name);
			if (op->layer > 0) {
				const sl_layer *l = &g->layers[op->layer - 1];
				for (int u = l->first_op; u < l->first_op + l->n_ops; u++)
					buf_a(b, FWD(u));
			}
			buf_a(b, FWD(v));
			buf_f(b, FWD(v));
			buf_new(b, SL_BUF_GATHER, CAT_BUFFERS, v, op->in[i],
			    sl_mul_sat(e, sl_elem_bytes(s, t)), "%s.gather.bwd", t->name);
			if (op->layer >= 0 && op->layer + 1 < g->n_layers)
				buf_a_layer_backward(b, op->layer + 1);
			buf_f_backward(b, v, false);
			buf_a(b, BWD(b, v));
			buf_a(b, b->wgrad[v]);
			buf_new(b, SL_BUF_GRAD_FULL, CAT_BUFFERS, v, op->in[i],
			    sl_mul_sat(e, sl_grad_elem_bytes(s, t)), "%s.grad.full",
			    t->name);
			buf_a(b, b->wgrad[v]);
			buf_f(b, b->wgrad[v]);
		}

		/* Tensors between their producer and their readers. */
		for (int j = 0; j < op->n_out; j++) {
			int ti = op->out[j], slot = op->n_in + j;
			const sl_tensor *t = &g->tensors[ti];
			int64_t e = slot_elems(b, v, slot, NULL);

			if (!b->kept[ti]) {
				buf_new(b, SL_BUF_WORKING, CAT_BUFFERS, v, ti,
				    sl_mul_sat(e, sl_elem_bytes(s, t)), "%s", t->name);
				buf_a(b, FWD(v));
				if (s->consumed[ti]) {
					READERS(b, ti, k)
						buf_f(b, FWD(b->rd[k]));
				} else {
					buf_f(b, BWD(b, v));
				}
			}
			if (!tl_is_float(t) || t->role != SL_ROLE_ACTIVATION)
				continue;
			/* Its gradient: from the first reader's backward to the
			 * end of the producer's. */
			buf_new(b, SL_BUF_ACT_GRAD, CAT_BUFFERS, v, ti,
			    sl_mul_sat(e, sl_grad_elem_bytes(s, t)), "%s.grad", t->name);
			if (s->consumed[ti]) {
				READERS(b, ti, k)
					buf_a(b, BWD(b, b->rd[k]));
			} else {
				buf_a(b, BWD(b, v));
			}
			buf_f_backward(b, v, false);
		}
	}

	/* Resharding copies: around the reader's forward, and its gradient's
	 * around the reader's backward. */
	for (int e = 0; e < s->n_edges; e++) {
		const sl_space_edge *se = &s->edges[e];
		const sl_tensor *t = &g->tensors[se->tensor];
		sl_mem mem;

		sl_edge_cost(s, e, b->choice[se->src], b->choice[se->dst], b->coord,
		    &mem, NULL);
		if (mem.buffers <= 0)
			continue;
		b->sum = sl_add_sat(b->sum, mem.buffers);
		buf_new(b, SL_BUF_RESHARD, CAT_BUFFERS, se->dst, se->tensor,
		    mem.buffers, "%s:%s->%s", t->name, g->ops[se->src].name,
		    g->ops[se->dst].name);
		buf_a(b, FWD(se->dst));
		buf_f(b, FWD(se->dst));
		if (!tl_is_float(t))
			continue;
		buf_new(b, SL_BUF_RESHARD, CAT_BUFFERS, se->dst, se->tensor,
		    mem.buffers, "%s.grad:%s->%s", t->name, g->ops[se->dst].name,
		    g->ops[se->src].name);
		buf_a(b, BWD(b, se->dst));
		buf_f(b, BWD(b, se->dst));
	}

	/* The fused optimizer works through the parameters one tensor at a
	 * time: one gradient-sized work buffer at a time. */
	if (b->max_grad > 0) {
		buf_new(b, SL_BUF_OPTIM_TMP, CAT_BUFFERS, -1, -1, b->max_grad,
		    "optimizer.work");
		buf_a(b, b->optim);
		buf_f(b, b->optim);
	}
	(void)m;
}

/* Sorts and deduplicates each buffer's alloc and free sets in place. */
static int
int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static void
dedup_sets(int n, int *start, int *list)
{
	int o = 0;

	for (int i = 0; i < n; i++) {
		int lo = start[i], hi = start[i + 1];
		start[i] = o;
		qsort(list + lo, hi - lo, sizeof *list, int_cmp);
		for (int k = lo; k < hi; k++)
			if (k == lo || list[k] != list[k - 1])
				list[o++] = list[k];
	}
	start[n] = o;
}

/* ------------------------------------------------------------ orders */

/* The default order: forward in graph order (dependencies first), the
 * loss, backward in reverse with each input gradient before its weight
 * gradient, the optimizer. */
static void
default_order(const tl_build *b, int *order)
{
	const sl_graph *g = b->s->g;
	const sl_timeline *tl = b->tl;
	int n = g->n_ops, k = 0, *fwd = sl_xmalloc((n ? n : 1) * sizeof *fwd);
	bool *done = sl_xcalloc(n ? n : 1, sizeof *done);
	int nf = 0;

	/* Dependencies first, lowest index first (the graph need not list
	 * operators in order). */
	while (nf < n) {
		for (int v = 0; v < n; v++) {
			bool ready = !done[v];
			for (int d = tl->dep_start[v]; ready && d < tl->dep_start[v + 1]; d++)
				ready = done[tl->dep[d]];
			if (ready) {
				done[v] = true;
				fwd[nf++] = v;
				break;
			}
		}
	}
	for (int i = 0; i < n; i++)
		order[k++] = FWD(fwd[i]);
	order[k++] = b->loss;
	for (int i = n - 1; i >= 0; i--) {
		order[k++] = BWD(b, fwd[i]);
		if (b->wgrad[fwd[i]] >= 0)
			order[k++] = b->wgrad[fwd[i]];
	}
	order[k++] = b->optim;
	free(fwd);
	free(done);
}

/* pos[t] of an order; false when it is not a valid order. */
static bool
order_positions(const sl_timeline *tl, const int *order, int *pos)
{
	for (int t = 0; t < tl->n_tasks; t++)
		pos[t] = -1;
	for (int i = 0; i < tl->n_tasks; i++) {
		if (order[i] < 0 || order[i] >= tl->n_tasks || pos[order[i]] >= 0)
			return false;
		pos[order[i]] = i;
	}
	for (int t = 0; t < tl->n_tasks; t++)
		for (int d = tl->dep_start[t]; d < tl->dep_start[t + 1]; d++)
			if (pos[tl->dep[d]] > pos[t])
				return false;
	return true;
}

static void
buf_window(const sl_timeline *tl, int i, const int *pos, int *first, int *last)
{
	int lo = tl->n_tasks, hi = -1;

	for (int k = tl->a_start[i]; k < tl->a_start[i + 1]; k++)
		if (pos[tl->a_list[k]] < lo)
			lo = pos[tl->a_list[k]];
	for (int k = tl->f_start[i]; k < tl->f_start[i + 1]; k++)
		if (pos[tl->f_list[k]] > hi)
			hi = pos[tl->f_list[k]];
	if (tl->a_start[i] == tl->a_start[i + 1])
		lo = 0;
	if (tl->f_start[i] == tl->f_start[i + 1])
		hi = tl->n_tasks - 1;
	if (lo > hi) {
		int x = lo;
		lo = hi;
		hi = x;
	}
	*first = lo;
	*last = hi;
}

int64_t
sl_timeline_peak_of(const sl_timeline *tl, const int *order)
{
	int n = tl->n_tasks;
	int *pos = sl_xmalloc(n * sizeof *pos);
	int64_t *diff, run = 0, peak = 0;

	if (!order_positions(tl, order, pos)) {
		free(pos);
		return -1;
	}
	diff = sl_xcalloc(n + 1, sizeof *diff);
	for (int i = 0; i < tl->n_bufs; i++) {
		int lo, hi;
		buf_window(tl, i, pos, &lo, &hi);
		diff[lo] = sl_add_sat(diff[lo], tl->buf[i].bytes);
		diff[hi + 1] -= tl->buf[i].bytes;
	}
	for (int i = 0; i < n; i++) {
		run += diff[i];
		if (run > peak)
			peak = run;
	}
	free(pos);
	free(diff);
	return peak;
}

/*
 * Exact least peak over all valid orders: dynamic programming over the
 * sets of tasks done (the live bytes during a task depend on that set
 * alone).  Refuses (false) above 64 tasks or max_states sets.
 */
typedef struct dp_state {
	uint64_t done;
	int64_t peak;
	int parent, task;
} dp_state;

static bool
exact_order(const sl_timeline *tl, int *order, long max_states)
{
	int n = tl->n_tasks, nb = tl->n_bufs;
	uint64_t *amask, *fmask, *need, full;
	dp_state *st = NULL;
	long n_st = 0, cap = 0, layer_lo = 0, layer_hi;
	long hcap = 1;
	long *hash = NULL;
	bool ok = true;

	if (n > 64)
		return false;
	amask = sl_xcalloc(nb ? nb : 1, sizeof *amask);
	fmask = sl_xcalloc(nb ? nb : 1, sizeof *fmask);
	need = sl_xcalloc(n, sizeof *need);
	for (int i = 0; i < nb; i++) {
		for (int k = tl->a_start[i]; k < tl->a_start[i + 1]; k++)
			amask[i] |= 1ull << tl->a_list[k];
		for (int k = tl->f_start[i]; k < tl->f_start[i + 1]; k++)
			fmask[i] |= 1ull << tl->f_list[k];
	}
	for (int t = 0; t < n; t++)
		for (int d = tl->dep_start[t]; d < tl->dep_start[t + 1]; d++)
			need[t] |= 1ull << tl->dep[d];
	full = n == 64 ? ~0ull : (1ull << n) - 1;
	while (hcap < 2 * max_states)
		hcap <<= 1;
	hash = sl_xmalloc(hcap * sizeof *hash);
	cap = 1024;
	st = sl_xmalloc(cap * sizeof *st);
	st[n_st++] = (dp_state){ 0, 0, -1, -1 };
	for (int k = 0; k < n && ok; k++) {
		layer_hi = n_st;
		for (long h = 0; h < hcap; h++)
			hash[h] = -1;
		for (long si = layer_lo; si < layer_hi && ok; si++) {
			uint64_t S = st[si].done;
			for (int t = 0; t < n && ok; t++) {
				uint64_t T = 1ull << t, S2 = S | T;
				int64_t live = 0, peak;
				long h;
				if ((S & T) || (need[t] & ~S))
					continue;
				for (int i = 0; i < nb; i++)
					if ((amask[i] == 0 || (amask[i] & S2)) &&
					    (fmask[i] == 0 || (fmask[i] & ~S)))
						live = sl_add_sat(live, tl->buf[i].bytes);
				peak = live > st[si].peak ? live : st[si].peak;
				h = (long)((S2 * 0x9E3779B97F4A7C15ull) >> 20) & (hcap - 1);
				while (hash[h] >= 0 && st[hash[h]].done != S2)
					h = (h + 1) & (hcap - 1);
				if (hash[h] >= 0) {
					if (peak < st[hash[h]].peak) {
						st[hash[h]].peak = peak;
						st[hash[h]].parent = (int)si;
						st[hash[h]].task = t;
					}
					continue;
				}
				if (n_st >= max_states) {
					ok = false;
					break;
				}
				if (n_st == cap) {
					cap *= 2;
					st = sl_xrealloc(st, cap * sizeof *st);
				}
				hash[h] = n_st;
				st[n_st++] = (dp_state){ S2, peak, (int)si, t };
			}
		}
		layer_lo = layer_hi;
	}
	if (ok && layer_lo < n_st && st[layer_lo].done == full) {
		long si = layer_lo;
		for (int i = n - 1; i >= 0; i--) {
			order[i] = st[si].task;
			si = st[si].parent;
		}
	} else {
		ok = false;
	}
	free(amask);
	free(fmask);
	free(need);
	free(hash);
	free(st);
	return ok;
}

/*
 * Greedy list schedule for graphs too large to search: among the tasks
 * whose dependencies are done, run the one that raises the peak least,
 * then the one that frees most, then the one the default order runs
 * first.
 */
static void
greedy_order(const sl_timeline *tl, const int *dflt, int *order)
{
	int n = tl->n_tasks, nb = tl->n_bufs, k = 0, n_ready = 0;
	int *rank = sl_xmalloc(n * sizeof *rank), *indeg = sl_xcalloc(n, sizeof *indeg);
	int *ab_start = sl_xcalloc(n + 1, sizeof(int)), *fb_start = sl_xcalloc(n + 1, sizeof(int));
	int *ab = sl_xmalloc((tl->a_start[nb] + 1) * sizeof(int));
	int *fb = sl_xmalloc((tl->f_start[nb] + 1) * sizeof(int));
	int *rd_start = sl_xcalloc(n + 1, sizeof(int));
	int *rd = sl_xmalloc((tl->dep_start[n] + 1) * sizeof(int));
	int *fill = sl_xcalloc(n + 1, sizeof(int));
	int *fremain = sl_xmalloc((nb ? nb : 1) * sizeof(int));
	bool *alloc = sl_xcalloc(nb ? nb : 1, sizeof(bool));
	int *ready = sl_xmalloc(n * sizeof(int));
	int64_t live = 0, peak = 0;

	for (int i = 0; i < n; i++)
		rank[dflt[i]] = i;
	/* Inverse maps: task -> buffers it allocates / may free; task ->
	 * tasks waiting on it. */
	for (int i = 0; i < nb; i++) {
		for (int a = tl->a_start[i]; a < tl->a_start[i + 1]; a++)
			ab_start[tl->a_list[a] + 1]++;
		for (int f = tl->f_start[i]; f < tl->f_start[i + 1]; f++)
			fb_start[tl->f_list[f] + 1]++;
		fremain[i] = tl->f_start[i + 1] - tl->f_start[i];
		if (tl->a_start[i] == tl->a_start[i + 1]) {
			alloc[i] = true;
			live = sl_add_sat(live, tl->buf[i].bytes);
		}
	}
	for (int t = 0; t < n; t++) {
		ab_start[t + 1] += ab_start[t];
		fb_start[t + 1] += fb_start[t];
	}
	for (int i = 0; i < nb; i++) {
		for (int a = tl->a_start[i]; a < tl->a_start[i + 1]; a++) {
			int t = tl->a_list[a];
			ab[ab_start[t] + fill[t]++] = i;
		}
	}
	memset(fill, 0, (n + 1) * sizeof(int));
	for (int i = 0; i < nb; i++)
		for (int f = tl->f_start[i]; f < tl->f_start[i + 1]; f++) {
			int t = tl->f_list[f];
			fb[fb_start[t] + fill[t]++] = i;
		}
	for (int t = 0; t < n; t++) {
		indeg[t] = tl->dep_start[t + 1] - tl->dep_start[t];
		for (int d = tl->dep_start[t]; d < tl->dep_start[t + 1]; d++)
			rd_start[tl->dep[d] + 1]++;
	}
	for (int t = 0; t < n; t++)
		rd_start[t + 1] += rd_start[t];
	memset(fill, 0, (n + 1) * sizeof(int));
	for (int t = 0; t < n; t++)
		for (int d = tl->dep_start[t]; d < tl->dep_start[t + 1]; d++) {
			int u = tl->dep[d];
			rd[rd_start[u] + fill[u]++] = t;
		}
	peak = live;
	for (int t = 0; t < n; t++)
		if (indeg[t] == 0)
			ready[n_ready++] = t;
	while (n_ready > 0) {
		int best = -1;
		int64_t bkey1 = 0, bkey2 = 0;
		for (int r = 0; r < n_ready; r++) {
			int t = ready[r];
			int64_t inc = 0, dec = 0, k1, k2;
			for (int a = ab_start[t]; a < ab_start[t + 1]; a++)
				if (!alloc[ab[a]])
					inc += tl->buf[ab[a]].bytes;
			for (int f = fb_start[t]; f < fb_start[t + 1]; f++)
				if (fremain[fb[f]] == 1)
					dec += tl->buf[fb[f]].bytes;
			k1 = live + inc > peak ? live + inc : peak;
			k2 = inc - dec;
			if (best < 0 || k1 < bkey1 || (k1 == bkey1 && (k2 < bkey2 ||
			    (k2 == bkey2 && rank[t] < rank[ready[best]])))) {
				best = r;
				bkey1 = k1;
				bkey2 = k2;
			}
		}
		{
			int t = ready[best];
			ready[best] = ready[--n_ready];
			order[k++] = t;
			for (int a = ab_start[t]; a < ab_start[t + 1]; a++)
				if (!alloc[ab[a]]) {
					alloc[ab[a]] = true;
					live += tl->buf[ab[a]].bytes;
				}
			if (live > peak)
				peak = live;
			for (int f = fb_start[t]; f < fb_start[t + 1]; f++)
				if (--fremain[fb[f]] == 0 && alloc[fb[f]])
					live -= tl->buf[fb[f]].bytes;
			for (int d = rd_start[t]; d < rd_start[t + 1]; d++)
				if (--indeg[rd[d]] == 0)
					ready[n_ready++] = rd[d];
		}
	}
	free(rank);
	free(indeg);
	free(ab_start);
	free(fb_start);
	free(ab);
	free(fb);
	free(rd_start);
	free(rd);
	free(fill);
	free(fremain);
	free(alloc);
	free(ready);
}

/* ------------------------------------------------- the caching allocator */

/*
 * PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, as
 * its documentation describes it): sizes rounded up to 512 bytes; requests
 * up to 1 MiB from a small pool of 2 MiB segments, larger ones from a large
 * pool whose segments are 20 MiB below 10 MiB and otherwise the request
 * rounded to 2 MiB; best fit among the pool's free blocks; a block is split
 * when the rest is at least 512 bytes (small) or more than 1 MiB (large);
 * freed blocks merge with free neighbours; nothing is returned to the
 * device within a step.
 */
#define CA_ROUND 512
#define CA_SMALL ((int64_t)1 << 20)
#define CA_SMALL_SEG ((int64_t)2 << 20)
#define CA_LARGE_SEG ((int64_t)20 << 20)
#define CA_MIN_LARGE ((int64_t)10 << 20)
#define CA_ROUND_LARGE ((int64_t)2 << 20)

typedef struct ca_block {
	int64_t size;
	int prev, next;		/* neighbours in the segment, -1 none */
	bool free, small;
} ca_block;

typedef struct ca_sim {
	ca_block *b;
	int *fpos;		/* per block: index in its pool's free list, -1 */
	int n, cap;
	int *fl[2];		/* free blocks of the large (0) and small (1) pool */
	int n_fl[2], cap_fl[2];
	int64_t allocated, reserved, peak_alloc;
	int segments;
} ca_sim;

static void
ca_mark_free(ca_sim *c, int i)
{
	int p = c->b[i].small;

	c->b[i].free = true;
	if (c->n_fl[p] == c->cap_fl[p]) {
		c->cap_fl[p] = c->cap_fl[p] ? 2 * c->cap_fl[p] : 64;
		c->fl[p] = sl_xrealloc(c->fl[p], c->cap_fl[p] * sizeof(int));
	}
	c->fpos[i] = c->n_fl[p];
	c->fl[p][c->n_fl[p]++] = i;
}

static void
ca_mark_used(ca_sim *c, int i)
{
	int p = c->b[i].small, k = c->fpos[i], last = c->fl[p][--c->n_fl[p]];

	c->fl[p][k] = last;
	c->fpos[last] = k;
	c->fpos[i] = -1;
	c->b[i].free = false;
}

static int
ca_new_block(ca_sim *c, int64_t size, bool small)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 256;
		c->b = sl_xrealloc(c->b, c->cap * sizeof *c->b);
		c->fpos = sl_xrealloc(c->fpos, c->cap * sizeof *c->fpos);
	}
	c->b[c->n] = (ca_block){ size, -1, -1, false, small };
	c->fpos[c->n] = -1;
	ca_mark_free(c, c->n);
	return c->n++;
}

static int
ca_malloc(ca_sim *c, int64_t bytes)
{
	int64_t size = bytes < CA_ROUND ? CA_ROUND :
	    sl_ceil_div(bytes, CA_ROUND) * CA_ROUND;
	bool small = size <= CA_SMALL;
	int best = -1;
	int64_t rest;

	for (int k = 0; k < c->n_fl[small]; k++) {
		int i = c->fl[small][k];
		if (c->b[i].size >= size && (best < 0 || c->b[i].size < c->b[best].size ||
		    (c->b[i].size == c->b[best].size && i < best)))
			best = i;
	}
	if (best < 0) {
		int64_t seg = small ? CA_SMALL_SEG : size < CA_MIN_LARGE ?
		    CA_LARGE_SEG : sl_ceil_div(size, CA_ROUND_LARGE) * CA_ROUND_LARGE;
		best = ca_new_block(c, seg, small);
		c->reserved += seg;
		c->segments++;
	}
	rest = c->b[best].size - size;
	if (small ? rest >= CA_ROUND : rest > CA_SMALL) {
		int r = ca_new_block(c, rest, small);
		c->b[r].prev = best;
		c->b[r].next = c->b[best].next;
		if (c->b[best].next >= 0)
			c->b[c->b[best].next].prev = r;
		c->b[best].next = r;
		c->b[best].size = size;
	}
	ca_mark_used(c, best);
	c->allocated += c->b[best].size;
	if (c->allocated > c->peak_alloc)
		c->peak_alloc = c->allocated;
	return best;
}

static void
ca_free(ca_sim *c, int i)
{
	int p, q;

	c->allocated -= c->b[i].size;
	/* Merge with free neighbours; merged blocks become size 0 husks. */
	q = c->b[i].next;
	if (q >= 0 && c->b[q].free) {
		ca_mark_used(c, q);
		c->b[i].size += c->b[q].size;
		c->b[i].next = c->b[q].next;
		if (c->b[q].next >= 0)
			c->b[c->b[q].next].prev = i;
		c->b[q].size = 0;
	}
	p = c->b[i].prev;
	if (p >= 0 && c->b[p].free) {
		c->b[p].size += c->b[i].size;
		c->b[p].next = c->b[i].next;
		if (c->b[i].next >= 0)
			c->b[c->b[i].next].prev = p;
		c->b[i].size = 0;
	} else {
		ca_mark_free(c, i);
	}
}

static void
simulate_allocator(sl_timeline *tl)
{
	ca_sim c = { 0 };
	int n = tl->n_tasks;
	int *blk = sl_xmalloc((tl->n_bufs ? tl->n_bufs : 1) * sizeof *blk);
	int *by_first = sl_xcalloc(n + 1, sizeof(int)), *by_last = sl_xcalloc(n + 1, sizeof(int));
	int *fi = sl_xmalloc((tl->n_bufs + 1) * sizeof(int)), *la = sl_xmalloc((tl->n_bufs + 1) * sizeof(int));
	int *fill = sl_xcalloc(n + 1, sizeof(int));

	/* Buffers by first and by last position, in buffer order. */
	for (int i = 0; i < tl->n_bufs; i++) {
		by_first[tl->buf[i].first + 1]++;
		by_last[tl->buf[i].last + 1]++;
	}
	for (int p = 0; p < n; p++) {
		by_first[p + 1] += by_first[p];
		by_last[p + 1] += by_last[p];
	}
	for (int i = 0; i < tl->n_bufs; i++)
		fi[by_first[tl->buf[i].first] + fill[tl->buf[i].first]++] = i;
	memset(fill, 0, (n + 1) * sizeof(int));
	for (int i = 0; i < tl->n_bufs; i++)
		la[by_last[tl->buf[i].last] + fill[tl->buf[i].last]++] = i;
	for (int p = 0; p < n; p++) {
		for (int k = by_first[p]; k < by_first[p + 1]; k++)
			blk[fi[k]] = tl->buf[fi[k]].bytes > 0 ?
			    ca_malloc(&c, tl->buf[fi[k]].bytes) : -1;
		for (int k = by_last[p]; k < by_last[p + 1]; k++)
			if (blk[la[k]] >= 0 && p < n - 1)
				ca_free(&c, blk[la[k]]);
	}
	tl->alloc_peak = c.peak_alloc;
	tl->reserved_peak = c.reserved;
	tl->segments = c.segments;
	free(c.b);
	free(c.fpos);
	free(c.fl[0]);
	free(c.fl[1]);
	free(blk);
	free(by_first);
	free(by_last);
	free(fi);
	free(la);
	free(fill);
}

/* ------------------------------------------------------------ results */

/* Fills first/last, live, total and peak from order. */
static void
apply_order(sl_timeline *tl)
{
	int n = tl->n_tasks;
	int *pos = sl_xmalloc(n * sizeof *pos);
	int64_t (*diff)[SL_CAT_COUNT] = sl_xcalloc(n + 1, sizeof *diff);
	int64_t run[SL_CAT_COUNT] = { 0 };

	order_positions(tl, tl->order, pos);
	for (int i = 0; i < tl->n_bufs; i++) {
		sl_tl_buf *x = &tl->buf[i];
		buf_window(tl, i, pos, &x->first, &x->last);
		diff[x->first][x->cat] += x->bytes;
		diff[x->last + 1][x->cat] -= x->bytes;
	}
	tl->peak = 0;
	tl->peak_pos = 0;
	for (int p = 0; p < n; p++) {
		int64_t tot = 0;
		for (int c = 0; c < SL_CAT_COUNT; c++) {
			run[c] += diff[p][c];
			tl->live[p][c] = run[c];
			tot = sl_add_sat(tot, run[c]);
		}
		tl->total[p] = tot;
		if (tot > tl->peak) {
			tl->peak = tot;
			tl->peak_pos = p;
		}
	}
	free(pos);
	free(diff);
	simulate_allocator(tl);
}

int
sl_timeline_set_order(sl_timeline *tl, const int *order, sl_error *err)
{
	int *pos = sl_xmalloc(tl->n_tasks * sizeof *pos);
	bool ok = order_positions(tl, order, pos);

	free(pos);
	if (!ok)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("not a valid order of the step's tasks"));
	memcpy(tl->order, order, tl->n_tasks * sizeof *order);
	apply_order(tl);
	return SL_OK;
}

/* Above this many states the exact search gives way to the greedy one. */
#define EXACT_MAX_STATES 20000

int
sl_timeline_build(const sl_space *s, const int *choice, int dev, bool optimise,
    sl_timeline *tl, sl_error *err)
{
	tl_build b;
	int *dflt;

	memset(tl, 0, sizeof *tl);
	if (dev < 0 || dev >= s->mesh.n_devices)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("device %d is not in the mesh (0 to %d)"), dev,
		    s->mesh.n_devices - 1);
	for (int v = 0; v < s->g->n_ops; v++)
		if (choice[v] < 0 || choice[v] >= s->ops[v].n_strat)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("operator '%s' has no strategy number %d"),
			    s->g->ops[v].name, choice[v]);
	memset(&b, 0, sizeof b);
	b.s = s;
	b.choice = choice;
	b.tl = tl;
	b.n_ops = s->g->n_ops;
	sl_mesh_coords(&s->mesh, dev, b.coord);
	tl->dev = dev;
	build_readers(&b);
	build_tasks(&b);
	b.cap_bufs = 256;
	tl->buf = sl_xmalloc(b.cap_bufs * sizeof *tl->buf);
	tl->a_start = sl_xcalloc(b.cap_bufs + 1, sizeof(int));
	tl->f_start = sl_xcalloc(b.cap_bufs + 1, sizeof(int));
	build_buffers(&b);
	dedup_sets(tl->n_bufs, tl->a_start, tl->a_list ? tl->a_list : (int[1]){ 0 });
	dedup_sets(tl->n_bufs, tl->f_start, tl->f_list ? tl->f_list : (int[1]){ 0 });

	tl->order = sl_xmalloc(tl->n_tasks * sizeof *tl->order);
	tl->live = sl_xcalloc(tl->n_tasks, sizeof *tl->live);
	tl->total = sl_xcalloc(tl->n_tasks, sizeof *tl->total);
	dflt = sl_xmalloc(tl->n_tasks * sizeof *dflt);
	default_order(&b, dflt);
	tl->peak_default = sl_timeline_peak_of(tl, dflt);
	memcpy(tl->order, dflt, tl->n_tasks * sizeof *dflt);
	tl->peak_optimised = tl->peak_default;
	if (optimise) {
		int *o = sl_xmalloc(tl->n_tasks * sizeof *o);
		int64_t p;
		if (exact_order(tl, o, EXACT_MAX_STATES)) {
			tl->exact = true;
		} else {
			greedy_order(tl, dflt, o);
		}
		p = sl_timeline_peak_of(tl, o);
		if (p >= 0 && p <= tl->peak_default) {
			memcpy(tl->order, o, tl->n_tasks * sizeof *o);
			tl->peak_optimised = p;
		}
		tl->optimised = true;
		free(o);
	}
	apply_order(tl);
	tl->sum = b.sum;
	free(dflt);
	free(b.wgrad);
	free(b.kept);
	free(b.keep);
	free(b.rd_start);
	free(b.rd);
	return SL_OK;
}

void
sl_timeline_free(sl_timeline *tl)
{
	if (tl == NULL)
		return;
	free(tl->task);
	free(tl->order);
	free(tl->dep_start);
	free(tl->dep);
	free(tl->buf);
	free(tl->live);
	free(tl->total);
	free(tl->a_start);
	free(tl->a_list);
	free(tl->f_start);
	free(tl->f_list);
	memset(tl, 0, sizeof *tl);
}

typedef struct alive_ent {
	int64_t bytes;
	int idx;
} alive_ent;

static int
alive_cmp(const void *a, const void *b)
{
	const alive_ent *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->idx - y->idx;
}

int
sl_timeline_alive(const sl_timeline *tl, int pos, int *idx)
{
	alive_ent *e = sl_xmalloc((tl->n_bufs ? tl->n_bufs : 1) * sizeof *e);
	int k = 0;

	for (int i = 0; i < tl->n_bufs; i++)
		if (tl->buf[i].first <= pos && pos <= tl->buf[i].last &&
		    tl->buf[i].bytes > 0)
			e[k++] = (alive_ent){ tl->buf[i].bytes, i };
	qsort(e, k, sizeof *e, alive_cmp);
	for (int i = 0; i < k; i++)
		idx[i] = e[i].idx;
	free(e);
	return k;
}

const char *
sl_task_name(const sl_space *s, const sl_task *t, char *buf, size_t len)
{
	const char *op = t->op >= 0 ? s->g->ops[t->op].name : "";
	bool split = false;

	if (t->kind == SL_TASK_BWD && t->op >= 0)
		for (int i = 0; i < s->g->ops[t->op].n_in; i++)
			if (s->g->tensors[s->g->ops[t->op].in[i]].role == SL_ROLE_PARAMETER)
				split = true;
	switch (t->kind) {
	case SL_TASK_FWD: snprintf(buf, len, "%s.fwd", op); break;
	case SL_TASK_LOSS: snprintf(buf, len, "loss"); break;
	case SL_TASK_BWD: snprintf(buf, len, "%s.%s", op, split ? "dgrad" : "bwd"); break;
	case SL_TASK_WGRAD: snprintf(buf, len, "%s.wgrad", op); break;
	default: snprintf(buf, len, "optimizer"); break;
	}
	return buf;
}

/* ------------------------------------------------------------ trace */

static const char *const task_cat[SL_TASK_KIND_COUNT] = {
	"forward", "loss", "backward", "backward", "optimizer"
};

static json_t *
trace_json(const sl_space *s, const sl_timeline *tl)
{
	json_t *ev = json_array(), *root;
	double ts = 0;
	char name[128];

	json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}",
	    "name", "process_name", "ph", "M", "pid", tl->dev, "tid", 0,
	    "args", "name", s->g->name));
	for (int p = 0; p < tl->n_tasks; p++) {
		const sl_task *t = &tl->task[tl->order[p]];
		json_t *args = json_object();
		double dur = (double)t->ns / 1000.0;

		for (int c = 0; c < SL_CAT_COUNT; c++)
			json_object_set_new(args, sl_mem_cat_name(c),
			    json_integer(tl->live[p][c]));
		json_array_append_new(ev, json_pack("{s:s, s:s, s:f, s:i, s:i, s:o}",
		    "name", "memory", "ph", "C", "ts", ts, "pid", tl->dev, "tid", 0,
		    "args", args));
		json_array_append_new(ev, json_pack(
		    "{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:{s:i, s:I}}",
		    "name", sl_task_name(s, t, name, sizeof name),
		    "cat", task_cat[t->kind], "ph", "X", "ts", ts, "dur", dur,
		    "pid", tl->dev, "tid", 0, "args", "position", p,
		    "bytes", (json_int_t)tl->total[p]));
		if (p == tl->peak_pos)
			json_array_append_new(ev, json_pack(
			    "{s:s, s:s, s:s, s:f, s:i, s:i, s:{s:I}}",
			    "name", "peak", "ph", "i", "s", "p", "ts", ts,
			    "pid", tl->dev, "tid", 0, "args", "bytes",
			    (json_int_t)tl->peak));
		ts += dur;
	}
	root = json_pack("{s:o, s:s, s:{s:I, s:I, s:I, s:I, s:I, s:I}}",
	    "traceEvents", ev, "displayTimeUnit", "ms", "otherData",
	    "peak", (json_int_t)tl->peak, "peak_default", (json_int_t)tl->peak_default,
	    "peak_optimised", (json_int_t)tl->peak_optimised,
	    "sum", (json_int_t)tl->sum, "allocated_peak", (json_int_t)tl->alloc_peak,
	    "reserved_peak", (json_int_t)tl->reserved_peak);
	return root;
}

char *
sl_timeline_trace_json(const sl_space *s, const sl_timeline *tl, sl_error *err)
{
	char *text = sl_json_format(trace_json(s, tl));

	if (text == NULL)
		sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("cannot build the trace JSON"));
	return text;
}

int
sl_timeline_write_trace(const sl_space *s, const sl_timeline *tl,
    const char *path, sl_error *err)
{
	return sl_json_write(trace_json(s, tl), path,
	    _("cannot build the trace JSON"), err);
}
