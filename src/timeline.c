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
	"reshard", "loss", "optimizer-work", "new-gradient", "dequantised"
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

/* Alloc set of an item: the tasks before the first of which it is held. */
static void
item_alloc_set(tl_build *b, const sl_mem_item *it)
{
	const sl_graph *g = b->s->g;
	int v = it->op, ly = v >= 0 ? g->ops[v].layer : -1, p;

	switch (it->alloc) {
	case SL_AT_START:
		break;
	case SL_AT_PRODUCER:
		if ((p = g->tensors[it->tensor].producer) >= 0)
			buf_a(b, FWD(p));
		break;
	case SL_AT_FWD:
		buf_a(b, FWD(v));
		break;
	case SL_AT_PREV_LAYER_FWD:
		if (ly > 0) {
			const sl_layer *l = &g->layers[ly - 1];
			for (int u = l->first_op; u < l->first_op + l->n_ops; u++)
				buf_a(b, FWD(u));
		}
		buf_a(b, FWD(v));
		break;
	case SL_AT_BWD:
		buf_a(b, BWD(b, v));
		break;
	case SL_AT_NEXT_LAYER_BWD:
		if (ly >= 0 && ly + 1 < g->n_layers)
			buf_a_layer_backward(b, ly + 1);
		buf_a(b, BWD(b, v));
		buf_a(b, b->wgrad[v]);
		break;
	case SL_AT_LAYER_BWD:
		buf_a_layer_backward(b, ly);
		break;
	case SL_AT_WGRAD:
		buf_a(b, b->wgrad[v]);
		break;
	case SL_AT_READERS_BWD:
		if (!b->s->consumed[it->tensor])
			buf_a(b, BWD(b, v));
		READERS(b, it->tensor, k)
			buf_a(b, BWD(b, b->rd[k]));
		break;
	case SL_AT_READERS_WGRAD:
		READERS(b, it->tensor, k)
			buf_a(b, b->wgrad[b->rd[k]]);
		break;
	case SL_AT_OPTIM:
		buf_a(b, b->optim);
		break;
	}
}

/* Free set of an item: the tasks after the last of which it is released. */
static void
item_free_set(tl_build *b, const sl_mem_item *it)
{
	int v = it->op;

	switch (it->free) {
	case SL_UNTIL_END:
		break;
	case SL_UNTIL_FWD:
		buf_f(b, FWD(v));
		break;
	case SL_UNTIL_READERS_FWD:
		if (!b->s->consumed[it->tensor])
			buf_f(b, BWD(b, v));
		READERS(b, it->tensor, k)
			buf_f(b, FWD(b->rd[k]));
		break;
	case SL_UNTIL_FWD_END:
		buf_f(b, FWD(b->n_ops - 1));
		break;
	case SL_UNTIL_DGRAD:
		buf_f(b, BWD(b, v));
		break;
	case SL_UNTIL_WGRAD:
		buf_f_backward(b, v, true);
		break;
	case SL_UNTIL_BWD:
		buf_f_backward(b, v, false);
		break;
	case SL_UNTIL_OPTIM:
		buf_f(b, b->optim);
		break;
	}
}

/* A buffer's name: "fc1:saved:x", "h1.grad", "w1.gather". */
static void
item_name(const tl_build *b, const sl_mem_item *it, int tensor, char *buf,
    size_t len)
{
	const sl_graph *g = b->s->g;
	const char *on = it->op >= 0 ? g->ops[it->op].name : "";
	const char *tn = tensor >= 0 ? g->tensors[tensor].name : "";

	switch (it->kind) {
	case SL_BUF_STATE:
		snprintf(buf, len, "%s.%s", tn, it->cat == SL_CAT_PARAMS ?
		    "weight" : "optimizer");
		break;
	case SL_BUF_GRAD:
	case SL_BUF_ACT_GRAD:
		snprintf(buf, len, "%s.grad", tn);
		break;
	case SL_BUF_SAVED:
		snprintf(buf, len, "%s:saved:%s", on, tn);
		break;
	case SL_BUF_AUTOCAST:
		/* an operator's own (no tensor): its LoRA adapters' copies */
		snprintf(buf, len, "%s:bf16:%s", on, it->tensor < 0 ? "lora" : tn);
		break;
	case SL_BUF_EXTRA:
		snprintf(buf, len, "%s:%s", on, it->op >= 0 &&
		    g->ops[it->op].kind == SL_OP_MATMUL ? "lora.xA" :
		    b->s->opts.recipe.attention == SL_ATTN_FLASH ? "lse" : "scores");
		break;
	case SL_BUF_DEQUANT:
		snprintf(buf, len, "%s.dequant%s", tn, it->alloc == SL_AT_BWD ?
		    ".bwd" : "");
		break;
	case SL_BUF_REMAT:
		snprintf(buf, len, "%s:recomputed:%s", on, tn);
		break;
	case SL_BUF_WORKING:
		snprintf(buf, len, "%s", tn);
		break;
	case SL_BUF_GATHER:
		snprintf(buf, len, "%s.gather%s", tn,
		    it->alloc == SL_AT_NEXT_LAYER_BWD ? ".bwd" : "");
		break;
	case SL_BUF_GRAD_FULL:
		snprintf(buf, len, "%s.grad.full", tn);
		break;
	case SL_BUF_GRAD_NEW:
		snprintf(buf, len, "%s.grad.new", tn);
		break;
	case SL_BUF_RESHARD: {
		const sl_space_edge *se = &b->s->edges[it->edge];
		if (it->alloc == SL_AT_FWD)
			snprintf(buf, len, "%s:%s->%s", tn, g->ops[se->src].name,
			    g->ops[se->dst].name);
		else if (it->alloc == SL_AT_WGRAD)	/* sequence parallelism */
			snprintf(buf, len, "%s.gather:%s->%s.wgrad", tn,
			    g->ops[se->src].name, g->ops[se->dst].name);
		else
			snprintf(buf, len, "%s.grad:%s->%s", tn, g->ops[se->dst].name,
			    g->ops[se->src].name);
		break;
	}
	case SL_BUF_LOSS:
		snprintf(buf, len, "%s:fp32:%s%s", on, tn,
		    it->alloc == SL_AT_BWD ? ".grad" : "");
		break;
	default:
		snprintf(buf, len, "optimizer.work");
		break;
	}
}

/* One item of the step's stream (sl_step_items) as a buffer. */
static void
tl_item(void *ctx, const sl_mem_item *it)
{
	tl_build *b = ctx;
	int tensor = it->tensor;
	char name[96];

	if (it->summed)
		b->sum = sl_add_sat(b->sum, it->local);
	if (it->local <= 0)
		return;
	/* what no slot describes stands for the operator's output */
	if (tensor < 0 && it->op >= 0 && it->kind != SL_BUF_OPTIM_TMP)
		tensor = b->s->g->ops[it->op].out[0];
	item_name(b, it, tensor, name, sizeof name);
	buf_new(b, it->kind, it->cat, it->op, tensor, it->local, "%s", name);
	item_alloc_set(b, it);
	item_free_set(b, it);
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

/*
 * Sums of buffer sizes: a size the cost model saturated (INT64_MAX, naive
 * attention's scores at a sequence of 2^31) added to others and taken back
 * would overflow int64, so running sums are kept in 128 bits, exact, and
 * saturated only where they become a figure of the timeline.
 */
typedef __int128 tl_sum;

static int64_t
tl_sat(tl_sum v)
{
	return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : (int64_t)v;
}

/* ------------------------------------------------------------ orders */

/*
 * A binary min-heap of task indices by a total order (int keys, smallest
 * first), for the orders below: each pick is O(log n) where a scan of the
 * ready set was O(n).
 */
typedef struct tl_heap {
	int *v, n;
} tl_heap;

static void
heap_push(tl_heap *h, int x)
{
	int i = h->n++;

	while (i > 0 && h->v[(i - 1) / 2] > x) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = x;
}

static int
heap_pop(tl_heap *h)
{
	int top = h->v[0], x = h->v[--h->n], i = 0;

	for (;;) {
		int c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1] < h->v[c])
			c++;
		if (h->v[c] >= x)
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n > 0)
		h->v[i] = x;
	return top;
}

/* The default order: forward in graph order (dependencies first), the
 * loss, backward in reverse with each input gradient before its weight
 * gradient, the optimizer. */
static void
default_order(const tl_build *b, int *order)
{
	const sl_graph *g = b->s->g;
	const sl_timeline *tl = b->tl;
	int n = g->n_ops, k = 0, nf = 0, *fwd = sl_xmalloc((n ? n : 1) * sizeof *fwd);
	int *indeg = sl_xcalloc(n + 1, sizeof *indeg);
	int *rd_start = sl_xcalloc(n + 2, sizeof *rd_start), *rd, *fill;
	tl_heap ready = { sl_xmalloc((n ? n : 1) * sizeof(int)), 0 };

	/*
	 * Dependencies first, lowest index first (the graph need not list
	 * operators in order): Kahn's algorithm taking the least ready index,
	 * which is the operator a scan from the first would find.  A forward
	 * task waits on forward tasks alone (build_tasks).
	 */
	for (int v = 0; v < n; v++)
		for (int d = tl->dep_start[v]; d < tl->dep_start[v + 1]; d++) {
			indeg[v]++;
			rd_start[tl->dep[d] + 1]++;
		}
	for (int v = 0; v < n; v++)
		rd_start[v + 1] += rd_start[v];
	rd = sl_xmalloc((rd_start[n] + 1) * sizeof *rd);
	fill = sl_xcalloc(n + 1, sizeof *fill);
	for (int v = 0; v < n; v++)
		for (int d = tl->dep_start[v]; d < tl->dep_start[v + 1]; d++) {
			int u = tl->dep[d];
			rd[rd_start[u] + fill[u]++] = v;
		}
	for (int v = 0; v < n; v++)
		if (indeg[v] == 0)
			heap_push(&ready, v);
	while (ready.n > 0) {
		int u = heap_pop(&ready);
		fwd[nf++] = u;
		for (int r = rd_start[u]; r < rd_start[u + 1]; r++)
			if (--indeg[rd[r]] == 0)
				heap_push(&ready, rd[r]);
	}
	/* (a validated graph has no cycle: nothing is left waiting) */
	for (int v = 0; nf < n && v < n; v++)
		if (indeg[v] > 0)
			fwd[nf++] = v;
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
	free(indeg);
	free(rd_start);
	free(rd);
	free(fill);
	free(ready.v);
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
	tl_sum *diff, run = 0, peak = 0;

	if (!order_positions(tl, order, pos)) {
		free(pos);
		return -1;
	}
	diff = sl_xcalloc(n + 1, sizeof *diff);
	for (int i = 0; i < tl->n_bufs; i++) {
		int lo, hi;
		buf_window(tl, i, pos, &lo, &hi);
		diff[lo] += tl->buf[i].bytes;
		diff[hi + 1] -= tl->buf[i].bytes;
	}
	for (int i = 0; i < n; i++) {
		run += diff[i];
		if (run > peak)
			peak = run;
	}
	free(pos);
	free(diff);
	return tl_sat(peak);
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
 *
 * Raising the peak least is max(peak, live + inc) least, inc what the task
 * would allocate: every task with inc <= peak - live ties at the peak, and
 * among those the rule goes by (inc - dec, rank), dec what it would free;
 * when none fits under the peak, by (inc, inc - dec, rank).  The ready
 * tasks are kept in a treap ordered by (inc, inc - dec, rank) whose nodes
 * also hold the least (inc - dec, rank) of their subtree, so that either
 * answer is one walk down: O(log n) a pick, where a scan of the ready set
 * made the schedule quadratic (37 s on a chain of 60,000 operators).  A
 * ready task's keys change only when a buffer it would allocate is
 * allocated by another task, or when a buffer it would free comes to wait
 * on it alone; each buffer does either once, so the updates cost
 * O(alloc and free sets) in all.
 */
typedef struct tl_treap {
	int *l, *r;		/* children, -1 none */
	unsigned *pri;		/* heap priorities: a hash of the task */
	int *best;		/* the least (k2, rank) of the subtree */
	tl_sum *inc, *k2;	/* the keys of each ready task; k2 = inc - dec */
	const int *rank;	/* position in the default order */
	int root;
} tl_treap;

/* (inc, k2, rank) of a before b's. */
static bool
tp_less(const tl_treap *q, int a, int b)
{
	if (q->inc[a] != q->inc[b])
		return q->inc[a] < q->inc[b];
	if (q->k2[a] != q->k2[b])
		return q->k2[a] < q->k2[b];
	return q->rank[a] < q->rank[b];
}

/* The better of a and b by (k2, rank); -1 is none. */
static int
tp_better(const tl_treap *q, int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	if (q->k2[a] != q->k2[b])
		return q->k2[a] < q->k2[b] ? a : b;
	return q->rank[a] < q->rank[b] ? a : b;
}

static void
tp_pull(tl_treap *q, int x)
{
	int b = x;

	if (q->l[x] >= 0)
		b = tp_better(q, b, q->best[q->l[x]]);
	if (q->r[x] >= 0)
		b = tp_better(q, b, q->best[q->r[x]]);
	q->best[x] = b;
}

/* Joins a and b, every key of a before every key of b. */
static int
tp_merge(tl_treap *q, int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	if (q->pri[a] > q->pri[b]) {
		q->r[a] = tp_merge(q, q->r[a], b);
		tp_pull(q, a);
		return a;
	}
	q->l[b] = tp_merge(q, a, q->l[b]);
	tp_pull(q, b);
	return b;
}

/* Splits x into the keys before t's (*a) and the others (*b). */
static void
tp_split(tl_treap *q, int x, int t, int *a, int *b)
{
	if (x < 0) {
		*a = *b = -1;
		return;
	}
	if (tp_less(q, x, t)) {
		tp_split(q, q->r[x], t, &q->r[x], b);
		*a = x;
	} else {
		tp_split(q, q->l[x], t, a, &q->l[x]);
		*b = x;
	}
	tp_pull(q, x);
}

static void
tp_insert(tl_treap *q, int t)
{
	int a, b;

	tp_split(q, q->root, t, &a, &b);
	q->l[t] = q->r[t] = -1;
	q->best[t] = t;
	q->root = tp_merge(q, tp_merge(q, a, t), b);
}

/* Removes t, whose keys must not have changed since it was inserted. */
static int
tp_erase(tl_treap *q, int x, int t)
{
	if (x == t)
		return tp_merge(q, q->l[x], q->r[x]);
	if (tp_less(q, t, x))
		q->l[x] = tp_erase(q, q->l[x], t);
	else
		q->r[x] = tp_erase(q, q->r[x], t);
	tp_pull(q, x);
	return x;
}

/* The task the rule runs next, room = peak - live. */
static int
tp_pick(const tl_treap *q, tl_sum room)
{
	int best = -1, x = q->root;

	while (x >= 0) {
		if (q->inc[x] <= room) {
			/* x and everything before it fit under the peak */
			if (q->l[x] >= 0)
				best = tp_better(q, best, q->best[q->l[x]]);
			best = tp_better(q, best, x);
			x = q->r[x];
		} else
			x = q->l[x];
	}
	if (best >= 0)
		return best;
	for (x = q->root; q->l[x] >= 0; x = q->l[x])
		;
	return x;
}

/*
 * The greedy schedule's state: per task the buffers it allocates (ab) and
 * may free (fb) and the tasks waiting on it (rd), each as CSR lists; the
 * dependencies left (indeg), the tasks each buffer still waits on to be
 * freed (fremain), which buffers are allocated, each task's state (0
 * waiting, 1 ready, in the treap, 2 done), and the bytes live.
 */
typedef struct tl_greedy {
	const sl_timeline *tl;
	int *ab_start, *ab, *fb_start, *fb, *rd_start, *rd;
	int *indeg, *fremain;
	bool *alloc;
	uint8_t *state;
	tl_treap q;
	tl_sum live;
} tl_greedy;

/* The state before any task ran: the inverse maps, and the buffers alive
 * from the start of the step. */
static void
greedy_init(tl_greedy *g, const sl_timeline *tl, const int *dflt)
{
	int n = tl->n_tasks, nb = tl->n_bufs;
	int *rank = sl_xmalloc((n ? n : 1) * sizeof *rank);
	int *fill = sl_xcalloc(n + 1, sizeof(int));

	memset(g, 0, sizeof *g);
	g->tl = tl;
	g->indeg = sl_xcalloc(n ? n : 1, sizeof *g->indeg);
	g->ab_start = sl_xcalloc(n + 1, sizeof(int));
	g->fb_start = sl_xcalloc(n + 1, sizeof(int));
	g->ab = sl_xmalloc((tl->a_start[nb] + 1) * sizeof(int));
	g->fb = sl_xmalloc((tl->f_start[nb] + 1) * sizeof(int));
	g->rd_start = sl_xcalloc(n + 1, sizeof(int));
	g->rd = sl_xmalloc((tl->dep_start[n] + 1) * sizeof(int));
	g->fremain = sl_xmalloc((nb ? nb : 1) * sizeof(int));
	g->alloc = sl_xcalloc(nb ? nb : 1, sizeof(bool));
	g->state = sl_xcalloc(n ? n : 1, 1);
	g->q = (tl_treap){
		.l = sl_xmalloc((n ? n : 1) * sizeof(int)),
		.r = sl_xmalloc((n ? n : 1) * sizeof(int)),
		.pri = sl_xmalloc((n ? n : 1) * sizeof(unsigned)),
		.best = sl_xmalloc((n ? n : 1) * sizeof(int)),
		.inc = sl_xcalloc(n ? n : 1, sizeof(tl_sum)),
		.k2 = sl_xcalloc(n ? n : 1, sizeof(tl_sum)),
		.rank = rank,
		.root = -1,
	};
	for (int i = 0; i < n; i++) {
		uint32_t h = (uint32_t)i * 0x9e3779b9u;

		rank[dflt[i]] = i;
		/* a fixed mix of the index: the same tree on every run */
		h ^= h >> 16;
		h *= 0x85ebca6bu;
		h ^= h >> 13;
		g->q.pri[i] = h;
	}
	/* Inverse maps: task -> buffers it allocates / may free; task ->
	 * tasks waiting on it. */
	for (int i = 0; i < nb; i++) {
		for (int a = tl->a_start[i]; a < tl->a_start[i + 1]; a++)
			g->ab_start[tl->a_list[a] + 1]++;
		for (int f = tl->f_start[i]; f < tl->f_start[i + 1]; f++)
			g->fb_start[tl->f_list[f] + 1]++;
		g->fremain[i] = tl->f_start[i + 1] - tl->f_start[i];
		if (tl->a_start[i] == tl->a_start[i + 1]) {
			g->alloc[i] = true;
			g->live += tl->buf[i].bytes;
		}
	}
	for (int t = 0; t < n; t++) {
		g->ab_start[t + 1] += g->ab_start[t];
		g->fb_start[t + 1] += g->fb_start[t];
	}
	for (int i = 0; i < nb; i++) {
		for (int a = tl->a_start[i]; a < tl->a_start[i + 1]; a++) {
			int t = tl->a_list[a];
			g->ab[g->ab_start[t] + fill[t]++] = i;
		}
	}
	memset(fill, 0, (n + 1) * sizeof(int));
	for (int i = 0; i < nb; i++)
		for (int f = tl->f_start[i]; f < tl->f_start[i + 1]; f++) {
			int t = tl->f_list[f];
			g->fb[g->fb_start[t] + fill[t]++] = i;
		}
	for (int t = 0; t < n; t++) {
		g->indeg[t] = tl->dep_start[t + 1] - tl->dep_start[t];
		for (int d = tl->dep_start[t]; d < tl->dep_start[t + 1]; d++)
			g->rd_start[tl->dep[d] + 1]++;
	}
	for (int t = 0; t < n; t++)
		g->rd_start[t + 1] += g->rd_start[t];
	memset(fill, 0, (n + 1) * sizeof(int));
	for (int t = 0; t < n; t++)
		for (int d = tl->dep_start[t]; d < tl->dep_start[t + 1]; d++) {
			int u = tl->dep[d];
			g->rd[g->rd_start[u] + fill[u]++] = t;
		}
	free(fill);
}

static void
greedy_free(tl_greedy *g)
{
	free((int *)g->q.rank);
	free(g->indeg);
	free(g->ab_start);
	free(g->fb_start);
	free(g->ab);
	free(g->fb);
	free(g->rd_start);
	free(g->rd);
	free(g->fremain);
	free(g->alloc);
	free(g->state);
	free(g->q.l);
	free(g->q.r);
	free(g->q.pri);
	free(g->q.best);
	free(g->q.inc);
	free(g->q.k2);
}

/* Task t becomes ready: its keys from the buffers' state now. */
static inline void
greedy_ready(tl_greedy *g, int t)
{
	tl_sum inc = 0, dec = 0;

	for (int a = g->ab_start[t]; a < g->ab_start[t + 1]; a++)
		if (!g->alloc[g->ab[a]])
			inc += g->tl->buf[g->ab[a]].bytes;
	for (int f = g->fb_start[t]; f < g->fb_start[t + 1]; f++)
		if (g->fremain[g->fb[f]] == 1)
			dec += g->tl->buf[g->fb[f]].bytes;
	g->q.inc[t] = inc;
	g->q.k2[t] = inc - dec;
	g->state[t] = 1;
	tp_insert(&g->q, t);
}

/* A ready task's keys change by d_inc and d_k2. */
static inline void
greedy_rekey(tl_greedy *g, int t, tl_sum d_inc, tl_sum d_k2)
{
	g->q.root = tp_erase(&g->q, g->q.root, t);
	g->q.inc[t] += d_inc;
	g->q.k2[t] += d_k2;
	tp_insert(&g->q, t);
}

/*
 * Task t runs: the buffers it allocates are allocated (the other tasks that
 * would have allocated one no longer do) and those it frees last are
 * freed (a buffer left waiting on one task makes that task free it).
 */
static void
greedy_run(tl_greedy *g, int t, tl_sum *peak)
{
	const sl_timeline *tl = g->tl;

	for (int a = g->ab_start[t]; a < g->ab_start[t + 1]; a++) {
		int i = g->ab[a];
		tl_sum by = tl->buf[i].bytes;

		if (g->alloc[i])
			continue;
		g->alloc[i] = true;
		g->live += by;
		/* the others that would have allocated it no longer do */
		for (int x = tl->a_start[i]; x < tl->a_start[i + 1]; x++)
			if (g->state[tl->a_list[x]] == 1)
				greedy_rekey(g, tl->a_list[x], -by, -by);
	}
	if (g->live > *peak)
		*peak = g->live;
	for (int f = g->fb_start[t]; f < g->fb_start[t + 1]; f++) {
		int i = g->fb[f];

		if (--g->fremain[i] == 0 && g->alloc[i])
			g->live -= tl->buf[i].bytes;
		if (g->fremain[i] != 1)
			continue;
		/* the one task it now waits on would free it */
		for (int x = tl->f_start[i]; x < tl->f_start[i + 1]; x++)
			if (g->state[tl->f_list[x]] != 2) {
				if (g->state[tl->f_list[x]] == 1)
					greedy_rekey(g, tl->f_list[x], 0, -tl->buf[i].bytes);
				break;
			}
	}
}

void
sl_timeline_greedy(const sl_timeline *tl, const int *dflt, int *order)
{
	int n = tl->n_tasks, k = 0;
	tl_sum peak;
	tl_greedy g;

	greedy_init(&g, tl, dflt);
	peak = g.live;
	for (int t = 0; t < n; t++)
		if (g.indeg[t] == 0)
			greedy_ready(&g, t);
	while (g.q.root >= 0) {
		int t = tp_pick(&g.q, peak - g.live);

		g.q.root = tp_erase(&g.q, g.q.root, t);
		g.state[t] = 2;
		order[k++] = t;
		greedy_run(&g, t, &peak);
		for (int d = g.rd_start[t]; d < g.rd_start[t + 1]; d++)
			if (--g.indeg[g.rd[d]] == 0)
				greedy_ready(&g, g.rd[d]);
	}
	greedy_free(&g);
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
#define CA_MAX_SIZE (INT64_MAX - INT64_MAX % CA_ROUND_LARGE)

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
	tl_sum allocated, reserved, peak_alloc;	/* (tl_sum: saturated sizes add) */
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
	/* a saturated size stays the largest multiple of every rounding */
	int64_t size = bytes < CA_ROUND ? CA_ROUND : bytes >= CA_MAX_SIZE ?
	    CA_MAX_SIZE : sl_ceil_div(bytes, CA_ROUND) * CA_ROUND;
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
		    CA_LARGE_SEG : size >= CA_MAX_SIZE ? CA_MAX_SIZE :
		    sl_ceil_div(size, CA_ROUND_LARGE) * CA_ROUND_LARGE;
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
	tl->alloc_peak = tl_sat(c.peak_alloc);
	tl->reserved_peak = tl_sat(c.reserved);
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
	tl_sum (*diff)[SL_CAT_COUNT] = sl_xcalloc(n + 1, sizeof *diff);
	tl_sum run[SL_CAT_COUNT] = { 0 };

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
			tl->live[p][c] = tl_sat(run[c]);
			tot = sl_add_sat(tot, tl->live[p][c]);
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
	sl_step_items(s, choice, b.coord, false, tl_item, &b);
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
			sl_timeline_greedy(tl, dflt, o);
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
	free(b.rd_start);
	free(b.rd);
	return SL_OK;
}

int
sl_timeline_hold(sl_timeline *tl, const char *name, int cat, int64_t bytes)
{
	sl_tl_buf *x;

	if (bytes <= 0)
		return SL_OK;
	tl->buf = sl_xrealloc(tl->buf, (tl->n_bufs + 1) * sizeof *tl->buf);
	tl->a_start = sl_xrealloc(tl->a_start, (tl->n_bufs + 2) * sizeof(int));
	tl->f_start = sl_xrealloc(tl->f_start, (tl->n_bufs + 2) * sizeof(int));
	x = &tl->buf[tl->n_bufs];
	memset(x, 0, sizeof *x);
	snprintf(x->name, sizeof x->name, "%s", name);
	x->kind = SL_BUF_STATE;
	x->cat = cat;
	x->op = x->tensor = -1;
	x->bytes = bytes;
	/* empty alloc and free sets: held from before the step to past it */
	tl->a_start[tl->n_bufs + 1] = tl->a_start[tl->n_bufs];
	tl->f_start[tl->n_bufs + 1] = tl->f_start[tl->n_bufs];
	tl->n_bufs++;
	tl->peak_default = sl_add_sat(tl->peak_default, bytes);
	tl->peak_optimised = sl_add_sat(tl->peak_optimised, bytes);
	tl->sum = sl_add_sat(tl->sum, bytes);
	apply_order(tl);
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
