/*
 * memory.c: a training step's memory on a device as one stream of items
 * (sl_step_items), each with what it is and the tasks that allocate and
 * free it: the nodes' and edges' own items (space.c) and the transients
 * between them.  The evaluator's sum, the timeline's peak and a pipeline
 * stage's memory fold this stream into the tallies of tally.c; the launch
 * lists name its items.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------ the step's stream */

typedef struct step_ctx {
	const sl_space *s;
	const int *choice;
	const int *coord;
	bool summed_only;
	item_fn fn;
	void *ctx;
	int cur_op;
	bool cur_full;		/* its layer is fully recomputed */
	bool *kept;		/* per tensor: an item keeps it (no working buffer) */
	int64_t max_grad;	/* largest parameter gradient on this device */
	int64_t adam_v;		/* bytes of every exp_avg_sq the device updates */
	/* the items a fully recomputed layer's operator keeps, to tell what
	 * it re-materialises: tensor, slot side (0 input, 1 output), what */
	int n_keep, cap_keep;
	int (*keep)[3];
} step_ctx;

static bool
layer_full(const sl_space *s, const sl_op *op)
{
	return op->layer >= 0 && s->layer_recompute != NULL &&
	    (s->layer_recompute[op->layer] == SL_RECOMP_FULL || sl_op_sac(s, op));
}

/* The same memory kept twice is one item: (tensor, input or output, what). */
static void
keep_key(const sl_op *op, const sl_mem_item *it, int key[3])
{
	key[0] = it->tensor >= 0 ? it->tensor : op->out[0];
	key[1] = it->what == SL_WHAT_STATE ? 0 : it->what == SL_WHAT_EXTRA ? 3 :
	    it->what == SL_WHAT_AUTOCAST ? 2 : it->slot >= op->n_in ? 1 : 4;
	key[2] = it->cat;
}

static bool
was_kept(const step_ctx *c, const int key[3])
{
	for (int i = 0; i < c->n_keep; i++)
		if (memcmp(c->keep[i], key, sizeof c->keep[i]) == 0)
			return true;
	return false;
}

/* An item on its way to the caller. */
static void
step_pass(void *ctx, const sl_mem_item *it)
{
	step_ctx *c = ctx;

	if (!c->summed_only || it->summed)
		c->fn(c->ctx, it);
}

/* A node's item on its way to the caller: what it keeps is noted. */
static void
step_node_item(void *ctx, const sl_mem_item *it)
{
	step_ctx *c = ctx;

	if (c->summed_only && !it->summed)
		return;
	if (it->what == SL_WHAT_SAVED || it->what == SL_WHAT_LAYER_INPUT)
		c->kept[it->tensor] = true;
	if (it->kind == SL_BUF_GRAD && it->local > c->max_grad)
		c->max_grad = it->local;
	if (it->what == SL_WHAT_STATE && it->cat == SL_CAT_OPTIM)
		c->adam_v += it->elems * it->parts[SL_PART_ADAM_V];
	if (c->cur_full && it->local > 0) {
		if (c->n_keep == c->cap_keep) {
			c->cap_keep = c->cap_keep ? 2 * c->cap_keep : 16;
			c->keep = sl_xrealloc(c->keep, c->cap_keep * sizeof *c->keep);
		}
		keep_key(&c->s->g->ops[c->cur_op], it, c->keep[c->n_keep++]);
	}
	c->fn(c->ctx, it);
}

/*
 * What a fully recomputed layer re-materialises in backward: the items of
 * its operator without recomputation, less what full recomputation keeps,
 * each from the layer's first backward task to the backward that reads it.
 * Autocast caches its bf16 copy of a weight until the autocast region (the
 * forward pass and the loss) ends, though the layer keeps nothing for
 * backward.
 */
static void
step_remat_item(void *ctx, const sl_mem_item *it)
{
	step_ctx *c = ctx;
	const sl_op *op = &c->s->g->ops[c->cur_op];
	sl_mem_item r = *it;
	int key[3];

	if (it->local <= 0 || it->what == SL_WHAT_STATE ||
	    it->what == SL_WHAT_TRANSIENT)
		return;
	/* torchtitan's op SAC caches flash attention's log-sum-exp, not what
	 * else it keeps (items.c, sac_items): the rest is re-materialised */
	if (it->what == SL_WHAT_EXTRA && op->kind == SL_OP_ATTENTION &&
	    c->s->opts.recipe.attention == SL_ATTN_FLASH && sl_op_sac(c->s, op)) {
		int64_t loc[SL_MAX_LOOP];

		sl_local_loop(c->s, c->cur_op, c->choice[c->cur_op], c->coord, loc);
		r.local = it->local - sl_sac_lse_bytes(loc);
		if (r.local <= 0)
			return;
		r.summed = false;
		r.what = SL_WHAT_TRANSIENT;
		r.kind = SL_BUF_REMAT;
		r.alloc = SL_AT_LAYER_BWD;
		r.free = SL_UNTIL_BWD;
		c->fn(c->ctx, &r);
		return;
	}
	keep_key(op, it, key);
	if (was_kept(c, key))
		return;
	/* torchtitan's op SAC: the backward reads the share of a tensor its
	 * policy cached (items.c, sac_items) from that cache */
	if (it->what == SL_WHAT_SAVED && it->tensor >= 0 && sl_op_sac(c->s, op) &&
	    c->s->g->tensors[it->tensor].producer >= 0) {
		double share = sl_sac_saved_share(c->s->g,
		    c->s->g->tensors[it->tensor].producer);
		if (share >= 1)
			return;
		if (r.bpe > 0) {
			r.elems = (int64_t)llround((double)r.elems * (1 - share));
			r.local = sl_mul_sat(r.bpe, r.elems);
		} else
			r.local = (int64_t)llround((double)r.local * (1 - share));
	}
	r.summed = false;
	r.what = SL_WHAT_TRANSIENT;
	if (it->what == SL_WHAT_AUTOCAST) {
		r.kind = SL_BUF_AUTOCAST;
		r.alloc = SL_AT_FWD;
		r.free = SL_UNTIL_FWD_END;
		c->fn(c->ctx, &r);
	}
	r.kind = SL_BUF_REMAT;
	r.alloc = SL_AT_LAYER_BWD;
	r.free = it->free == SL_UNTIL_WGRAD && it->what == SL_WHAT_SAVED ?
	    SL_UNTIL_WGRAD : SL_UNTIL_BWD;
	c->fn(c->ctx, &r);
}

/* An activation's gradient exists where backward flows into it. */
static bool
has_act_grad(const sl_space *s, int t)
{
	return s->g->tensors[t].role == SL_ROLE_ACTIVATION && sl_space_grad(s, t);
}

int64_t
sl_act_grad_bytes(const sl_space *s, int t, const sl_spec *sp, const int *coord)
{
	const sl_tensor *x = &s->g->tensors[t];

	if (!has_act_grad(s, t))
		return 0;
	return sl_mul_sat(sl_local_elems(&s->mesh, sp, x, coord),
	    sl_grad_elem_bytes(s, x));
}

/* A transient outside any node's kept items, not summed. */
static void
transient(const sl_space *s, item_fn fn, void *ctx, sl_buf_kind kind, int op,
    int slot, int tensor, int bpe, int64_t elems, sl_alloc_at at,
    sl_free_at until)
{
	const sl_tensor *t = tensor >= 0 ? &s->g->tensors[tensor] : NULL;
	sl_mem_item it = { .cat = SL_CAT_BUFFERS, .what = SL_WHAT_TRANSIENT,
	    .kind = kind, .op = op, .slot = slot, .tensor = tensor, .edge = -1,
	    .bpe = bpe, .elems = elems, .local = sl_mul_sat(elems, bpe),
	    .full = t != NULL ? sl_mul_sat(sl_tensor_elems(t), bpe) : 0,
	    .alloc = at, .free = until };

	fn(ctx, &it);
}

static void
step_transient(step_ctx *c, sl_buf_kind kind, int op, int slot, int tensor,
    int bpe, int64_t elems, sl_alloc_at at, sl_free_at until)
{
	transient(c->s, c->fn, c->ctx, kind, op, slot, tensor, bpe, elems, at,
	    until);
}

void
sl_node_transients(const sl_space *s, int v, int strat, const int *coord,
    bool accumulate, item_fn fn, void *ctx)
{
	const sl_graph *g = s->g;
	const sl_op *op = &g->ops[v];
	const sl_strategy *st = &s->ops[v].strat[strat];

	for (int i = 0; i < op->n_in; i++) {
		const sl_tensor *t = &g->tensors[op->in[i]];
		sl_spec sp = st->spec[i];
		int64_t e;
		if (s->adapter != NULL && s->adapter[v].nf4 && i == 1) {
			/* QLoRA: bitsandbytes' 4-bit matmul dequantises the whole
			 * weight to bf16 for its forward and again for the input
			 * gradient (MatMul4Bit, F.dequantize_4bit) */
			sl_spec ds = sp;
			ds.zero = 0;
			e = sl_local_elems(&s->mesh, &ds, t, coord);
			transient(s, fn, ctx, SL_BUF_DEQUANT, v, i, op->in[i], 2, e,
			    SL_AT_FWD, SL_UNTIL_FWD);
			if (sl_space_grad(s, op->in[0]))
				transient(s, fn, ctx, SL_BUF_DEQUANT, v, i, op->in[i], 2, e,
				    SL_AT_BWD, SL_UNTIL_DGRAD);
		}
		if (s->owner[op->in[i]] != v)
			continue;
		if (sp.zero == 0) {
			/*
			 * Gradients that accumulate (over micro-steps or a
			 * pipeline's micro-batches): PyTorch's AccumulateGrad
			 * forms the new gradient in a buffer of its own and adds
			 * it in; Megatron-LM's wgrad GEMM accumulates straight
			 * into its main gradient (gradient_accumulation_fusion,
			 * on by default: megatron/training/arguments.py
			 * --no-gradient-accumulation-fusion).
			 */
			if (accumulate && !sl_recipe_frozen(&s->opts.recipe) &&
			    s->opts.recipe.framework != SL_FW_MEGATRON)
				transient(s, fn, ctx, SL_BUF_GRAD_NEW, v, i, op->in[i],
				    sl_grad_elem_bytes(s, t),
				    sl_local_elems(&s->mesh, &sp, t, coord),
				    SL_AT_WGRAD, SL_UNTIL_WGRAD);
			continue;
		}
		sp.zero = 0;
		e = sl_local_elems(&s->mesh, &sp, t, coord);
		transient(s, fn, ctx, SL_BUF_GATHER, v, i, op->in[i],
		    sl_elem_bytes(s, t), e, SL_AT_PREV_LAYER_FWD, SL_UNTIL_FWD);
		transient(s, fn, ctx, SL_BUF_GATHER, v, i, op->in[i],
		    sl_elem_bytes(s, t), e, SL_AT_NEXT_LAYER_BWD, SL_UNTIL_BWD);
		if (!sl_recipe_frozen(&s->opts.recipe))
			transient(s, fn, ctx, SL_BUF_GRAD_FULL, v, i, op->in[i],
			    sl_grad_elem_bytes(s, t), e, SL_AT_WGRAD, SL_UNTIL_WGRAD);
	}
}

/*
 * The transients of operator v: its own (sl_node_transients: ZeRO-3's
 * gathered copies and whole gradients); each output nobody keeps, from its
 * producer to its last forward reader; and each activation's gradient,
 * from the first backward of a reader to the end of the producer's.
 */
static void
step_transients(step_ctx *c, int v)
{
	const sl_space *s = c->s;
	const sl_graph *g = s->g;
	const sl_op *op = &g->ops[v];
	const sl_strategy *st = &s->ops[v].strat[c->choice[v]];

	sl_node_transients(s, v, c->choice[v], c->coord, s->grads_persist,
	    c->fn, c->ctx);
	for (int j = 0; j < op->n_out; j++) {
		int ti = op->out[j], slot = op->n_in + j;
		const sl_tensor *t = &g->tensors[ti];
		const sl_spec *sp = &st->spec[slot];
		int64_t e = sl_local_elems(&s->mesh, sp, t, c->coord);

		if (!c->kept[ti])
			step_transient(c, SL_BUF_WORKING, v, slot, ti,
			    sl_elem_bytes(s, t), e, SL_AT_FWD, SL_UNTIL_READERS_FWD);
		if (!has_act_grad(s, ti))
			continue;
		step_transient(c, SL_BUF_ACT_GRAD, v, slot, ti,
		    sl_grad_elem_bytes(s, t), e, SL_AT_READERS_BWD, SL_UNTIL_BWD);
	}
}

void
sl_step_items(const sl_space *s, const int *choice, const int *coord,
    bool summed_only, item_fn fn, void *ctx)
{
	const sl_graph *g = s->g;
	step_ctx c = { .s = s, .choice = choice, .coord = coord,
	    .summed_only = summed_only, .fn = fn, .ctx = ctx };

	c.kept = sl_xcalloc(g->n_tensors ? g->n_tensors : 1, sizeof *c.kept);
	for (int v = 0; v < g->n_ops; v++) {
		c.cur_op = v;
		c.cur_full = layer_full(s, &g->ops[v]);
		c.n_keep = 0;
		sl_node_items(s, v, choice[v], coord, step_node_item, &c);
		if (!summed_only && c.cur_full)
			sl_node_items_as(s, v, choice[v], coord, SL_RECOMP_NONE,
			    step_remat_item, &c);
	}
	for (int v = 0; v < g->n_ops && !summed_only; v++)
		step_transients(&c, v);
	for (int e = 0; e < s->n_edges; e++) {
		const sl_space_edge *se = &s->edges[e];
		sl_edge_items(s, e, choice[se->src], choice[se->dst], coord,
		    step_pass, &c);
	}
	/*
	 * The fused optimizer works through the parameters one tensor at a
	 * time: one gradient-sized work buffer at a time.  The foreach one
	 * takes the square root of every exp_avg_sq at once into new tensors
	 * (torch/optim/adam.py, _multi_tensor_adam: torch._foreach_sqrt of
	 * the group's exp_avg_sqs, divided and offset in place, then read by
	 * _foreach_addcdiv_): a copy of all of them (measured: gpt-1.7b 4.06
	 * GiB above the fused step's peak, steps-h100.jsonl).
	 */
	if (!summed_only && s->opts.recipe.optimizer == SL_OPTIM_FOREACH &&
	    c.adam_v > 0)
		step_transient(&c, SL_BUF_OPTIM_TMP, -1, -1, -1, 1, c.adam_v,
		    SL_AT_OPTIM, SL_UNTIL_OPTIM);
	else if (!summed_only && c.max_grad > 0)
		step_transient(&c, SL_BUF_OPTIM_TMP, -1, -1, -1, 1, c.max_grad,
		    SL_AT_OPTIM, SL_UNTIL_OPTIM);
	free(c.kept);
	free(c.keep);
}

/* The loss's own items allocated with its backward. */
struct loss_acc {
	int64_t bytes;
};

static void
loss_item(void *ctx, const sl_mem_item *it)
{
	struct loss_acc *a = ctx;

	if (!it->summed && it->alloc == SL_AT_BWD)
		a->bytes = sl_add_sat(a->bytes, it->local);
}

int64_t
sl_loss_bwd_bytes(const sl_space *s, int v, int strat, const int *coord)
{
	const sl_op *op = &s->g->ops[v];
	struct loss_acc a = { 0 };

	if (op->kind != SL_OP_CROSS_ENTROPY || op->n_in < 1)
		return 0;
	sl_node_items(s, v, strat, coord, loss_item, &a);
	return sl_add_sat(a.bytes, sl_act_grad_bytes(s, op->in[0],
	    &s->ops[v].strat[strat].spec[0], coord));
}

sl_span
sl_item_span(const sl_mem_item *it)
{
	if (it->free == SL_UNTIL_END || it->free == SL_UNTIL_OPTIM)
		return SL_SPAN_STEP;
	if ((it->alloc == SL_AT_PRODUCER || it->alloc == SL_AT_FWD ||
	    it->alloc == SL_AT_PREV_LAYER_FWD) && (it->free == SL_UNTIL_DGRAD ||
	    it->free == SL_UNTIL_WGRAD || it->free == SL_UNTIL_BWD))
		return SL_SPAN_MICRO;
	return SL_SPAN_MOMENT;
}

bool
sl_item_at_loss(const sl_mem_item *it)
{
	bool before = it->alloc == SL_AT_START || it->alloc == SL_AT_PRODUCER ||
	    it->alloc == SL_AT_FWD || it->alloc == SL_AT_PREV_LAYER_FWD;
	bool after = it->free != SL_UNTIL_FWD && it->free != SL_UNTIL_READERS_FWD &&
	    it->free != SL_UNTIL_FWD_END;

	return before && after;
}

/* The stage's fold: summed items held through the step by category, those
 * held per micro-batch as activations; the operator's own moments apart,
 * those of its forward and those of its backward. */
struct stage_acc {
	sl_mem *held;
	int64_t fwd, bwd;
};

static void
stage_item(void *ctx, const sl_mem_item *it)
{
	struct stage_acc *a = ctx;

	if (!it->summed) {
		if (it->free == SL_UNTIL_FWD)
			a->fwd = sl_add_sat(a->fwd, it->local);
		else if (it->alloc == SL_AT_BWD || it->alloc == SL_AT_WGRAD ||
		    it->alloc == SL_AT_NEXT_LAYER_BWD)
			a->bwd = sl_add_sat(a->bwd, it->local);
		return;
	}
	switch (sl_item_span(it)) {
	case SL_SPAN_STEP:
		sl_mem_add(a->held, it->cat, it->local);
		break;
	case SL_SPAN_MICRO:
		sl_mem_add(a->held, SL_CAT_ACTS, it->local);
		break;
	default:
		if (it->local > a->fwd)
			a->fwd = it->local;
		break;
	}
}

void
sl_node_stage_mem(const sl_space *s, int v, int strat, const int *coord,
    sl_mem *held)
{
	const sl_op *op = &s->g->ops[v];
	struct stage_acc a = { held, 0, 0 };

	memset(held, 0, sizeof *held);
	sl_node_items(s, v, strat, coord, stage_item, &a);
	/* a pipeline's micro-batches add their gradients up */
	sl_node_transients(s, v, strat, coord, true, stage_item, &a);
	/* the loss passes the logits' gradient back from its backward */
	if (op->kind == SL_OP_CROSS_ENTROPY && op->n_in > 0)
		a.bwd = sl_add_sat(a.bwd, sl_act_grad_bytes(s, op->in[0],
		    &s->ops[v].strat[strat].spec[0], coord));
	held->buffers = a.fwd > a.bwd ? a.fwd : a.bwd;
}
