/*
 * items.c: a node's memory items (doc/cost-model.md).  What one operator
 * under one strategy keeps on a device, item by item, each with its local
 * and its full bytes, what it is and when the step holds it; the widths
 * the recipe gives each tensor.  Every memory rule of the recipe is applied
 * here: the cost model (space.c) sums the items, the step's stream
 * (memory.c) orders them, compute.c counts the parameters they shard.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ recipe rules */

static bool
is_float(const sl_tensor *t)
{
	return t->dtype == SL_DT_F32 || t->dtype == SL_DT_F16 || t->dtype == SL_DT_BF16;
}

/*
 * Bytes per element of a tensor as the step moves it (collectives, resharding
 * buffers): parameters in their weight precision, floating-point activations
 * at the recipe's activation width, integer data as stored.
 */
int
sl_elem_bytes(const sl_space *sp, const sl_tensor *t)
{
	const sl_recipe *r = &sp->opts.recipe;

	if (!is_float(t))
		return sl_dtype_size(t->dtype);
	if (t->role == SL_ROLE_PARAMETER)
		return sl_recipe_state_bytes(r, SL_CAT_PARAMS);
	/* the recipe widens (fp32), never narrows what the model declares */
	return sl_max_int(sl_recipe_act_bytes(r), sl_dtype_size(t->dtype));
}

/* Bytes per element of a gradient as it is reduced. */
int
sl_grad_elem_bytes(const sl_space *sp, const sl_tensor *t)
{
	if (t->role == SL_ROLE_PARAMETER)
		return sl_recipe_state_bytes(&sp->opts.recipe, SL_CAT_GRADS);
	return sl_elem_bytes(sp, t);
}

/*
 * Bytes per element that a kind's saved-tensor rule f (sl_kind_info.saved_in
 * or saved_out: -1 the tensor's width, else fixed bytes) keeps of t.  Under
 * autocast (amp) the residual stream is fp32, so norms keep 4-byte inputs.
 */
static int
saved_width(const sl_space *sp, const sl_op *op, const sl_tensor *t, int f)
{
	const sl_recipe *r = &sp->opts.recipe;

	if (f >= 0)
		return f;
	if (!is_float(t))
		return sl_dtype_size(t->dtype);
	if (r->precision == SL_PREC_AMP &&
	    (op->kind == SL_OP_LAYERNORM || op->kind == SL_OP_RMSNORM))
		return 4;
	/* Transformer Engine keeps a linear layer's input for its weight
	 * gradient as the FP8 transposed copy the GEMM reads: 1 byte */
	if (sl_fp8_matmul(sp, op) && op->in[0] >= 0 &&
	    &sp->g->tensors[op->in[0]] == t)
		return 1;
	return sl_max_int(sl_recipe_act_bytes(r), sl_dtype_size(t->dtype));
}

/*
 * Under full recomputation a layer keeps only its input: a tensor read by
 * the layer but produced outside it, counted by the layer's first reader.
 */
bool
sl_keeps_layer_input(const sl_graph *g, int opi, int slot)
{
	const sl_op *op = &g->ops[opi];
	const sl_layer *ly = &g->layers[op->layer];
	int t = op->in[slot], prod = g->tensors[t].producer;

	if (g->tensors[t].role == SL_ROLE_PARAMETER)
		return false;
	if (prod >= ly->first_op && prod < ly->first_op + ly->n_ops)
		return false;
	for (int o = ly->first_op; o < opi; o++)
		for (int i = 0; i < g->ops[o].n_in; i++)
			if (g->ops[o].in[i] == t)
				return false;
	for (int i = 0; i < slot; i++)
		if (op->in[i] == t)
			return false;
	return true;
}

/* ---------------------------------------------------- LoRA, frozen weights */

/*
 * The layer matmuls an adapter may target, by the name the generators give
 * them after the layer's ("layer3.qkv"): the fused qkv projection holds q,
 * k and v, each its own adapter (as PEFT adapts LLaMA's q_proj, k_proj and
 * v_proj).
 */
static const struct {
	const char *name;
	unsigned bits;
} lora_sites[] = {
	{ "qkv", SL_LORA_Q | SL_LORA_K | SL_LORA_V }, { "proj", SL_LORA_O },
	{ "gate", SL_LORA_GATE }, { "up", SL_LORA_UP }, { "fc1", SL_LORA_UP },
	{ "down", SL_LORA_DOWN }, { "fc2", SL_LORA_DOWN },
};

/* The site of layer matmul opi: its SL_LORA_ bits, 0 for none. */
static unsigned
lora_site(const sl_graph *g, int opi)
{
	const sl_op *op = &g->ops[opi];
	const char *dot;

	if (op->kind != SL_OP_MATMUL || op->layer < 0 || op->transpose_w ||
	    (dot = strrchr(op->name, '.')) == NULL)
		return 0;
	for (size_t i = 0; i < SL_ARRAY_LEN(lora_sites); i++)
		if (strcmp(dot + 1, lora_sites[i].name) == 0)
			return lora_sites[i].bits;
	return 0;
}

/*
 * Columns of the targeted projections of site bits in a weight of n
 * columns: a fused qkv's q, k and v are the heads and key/value heads of
 * the attention that reads it (thirds when none does).
 */
static int64_t
lora_columns(const sl_graph *g, int opi, unsigned site, unsigned targets,
    int64_t n, int *parts)
{
	const sl_op *op = &g->ops[opi];
	int64_t q = 1, kv = 1;

	*parts = 0;
	if (site != (SL_LORA_Q | SL_LORA_K | SL_LORA_V)) {
		*parts = (site & targets) != 0;
		return *parts ? n : 0;
	}
	for (int v = 0; v < g->n_ops; v++)
		if (g->ops[v].kind == SL_OP_ATTENTION && g->ops[v].in[0] == op->out[0]) {
			q = g->ops[v].heads;
			kv = g->ops[v].kv_heads > 0 ? g->ops[v].kv_heads : q;
			break;
		}
	{
		int64_t w[3] = { q, kv, kv }, cols = 0;
		unsigned bit[3] = { SL_LORA_Q, SL_LORA_K, SL_LORA_V };
		for (int i = 0; i < 3; i++)
			if (targets & bit[i]) {
				cols += n / (q + 2 * kv) * w[i];
				(*parts)++;
			}
		return cols;
	}
}

/*
 * Under LoRA every matmul of a layer a target names gets its adapters;
 * under QLoRA the frozen weights of the layers' matmuls are 4-bit: what
 * transformers quantises (replace_with_bnb_linear, every nn.Linear but
 * the output layer, transformers/integrations/bitsandbytes.py).
 */
void
sl_find_adapters(sl_space *sp)
{
	const sl_graph *g = sp->g;
	const sl_recipe *r = &sp->opts.recipe;

	sp->adapter = sl_xcalloc(g->n_ops ? g->n_ops : 1, sizeof *sp->adapter);
	if (!sl_recipe_frozen(r))
		return;
	for (int v = 0; v < g->n_ops; v++) {
		const sl_op *op = &g->ops[v];
		unsigned site;
		if (op->kind != SL_OP_MATMUL || op->layer < 0 || op->transpose_w)
			continue;
		sp->adapter[v].nf4 = r->finetune == SL_FT_QLORA;
		if ((site = lora_site(g, v)) == 0)
			continue;
		sp->adapter[v].n = lora_columns(g, v, site, r->lora_targets,
		    g->tensors[op->in[1]].dims[1], &sp->adapter[v].parts);
	}
}

/*
 * Which tensors get a gradient.  Training every weight: every one a
 * gradient can flow into.  Under LoRA, what depends on an adapter: a
 * tensor made by an operator with an adapter or with an input that has a
 * gradient (autograd's requires_grad, spread forward).
 */
void
sl_find_grads(sl_space *sp)
{
	const sl_graph *g = sp->g;
	bool changed = true;

	sp->grad = sl_xcalloc(g->n_tensors ? g->n_tensors : 1, 1);
	if (!sl_recipe_frozen(&sp->opts.recipe)) {
		for (int t = 0; t < g->n_tensors; t++)
			sp->grad[t] = sl_needs_grad(&g->tensors[t]);
		return;
	}
	/* operators need not be in order: until nothing changes */
	for (int pass = 0; changed && pass <= g->n_ops; pass++) {
		changed = false;
		for (int v = 0; v < g->n_ops; v++) {
			const sl_op *op = &g->ops[v];
			bool any = sp->adapter[v].parts > 0;
			for (int i = 0; i < op->n_in && !any; i++)
				any = sp->grad[op->in[i]];
			for (int j = 0; j < op->n_out && any; j++) {
				int t = op->out[j];
				if (!sp->grad[t] && sl_needs_grad(&g->tensors[t])) {
					sp->grad[t] = 1;
					changed = true;
				}
			}
		}
	}
}

/* Does the step form tensor t's gradient? */
bool
sl_space_grad(const sl_space *sp, int t)
{
	if (sp->grad == NULL)
		return sl_needs_grad(&sp->g->tensors[t]);
	return sp->grad[t] != 0;
}

/* Does operator opi run a backward pass (some output gets a gradient)? */
bool
sl_op_backward(const sl_space *sp, int opi)
{
	const sl_op *op = &sp->g->ops[opi];

	for (int j = 0; j < op->n_out; j++)
		if (sl_space_grad(sp, op->out[j]))
			return true;
	return false;
}

/*
 * What operator opi keeps of input slot i for backward (sl_kind_info's
 * saved_in).  Under LoRA, an operator whose outputs get no gradient runs
 * no backward and keeps nothing; a matmul keeps its input for the weight
 * gradient dW = x^T dY alone, so a frozen one keeps it only for its
 * adapter (dA reads the same x), or as bitsandbytes' 4-bit matmul does,
 * which keeps its input whenever something before it needs a gradient
 * (MatMul4Bit.forward, bitsandbytes/autograd/_functions.py: ctx.tensors
 * = (A, B) if any(ctx.needs_input_grad[:2])).  PyTorch's own linear saves
 * only what the gradients it must form read (emit_save_inputs, guard_for,
 * tools/autograd/gen_variable_type.py).
 */
int
sl_saved_in_rule(const sl_space *sp, int opi, int i)
{
	const sl_op *op = &sp->g->ops[opi];
	int f = sl_kinds[op->kind].saved_in[i];
	const sl_adapter *ad = &sp->adapter[opi];

	if (f == 0 || !sl_recipe_frozen(&sp->opts.recipe))
		return f;
	if (!sl_op_backward(sp, opi))
		return 0;
	if (op->kind == SL_OP_MATMUL && i == 0 && ad->parts == 0 &&
	    !(ad->nf4 && sl_space_grad(sp, op->in[0])))
		return 0;
	return f;
}

/* Local k and n of a matmul's weight [k, n] under its strategy. */
static void
weight_local(const sl_space *sp, int opi, int si, const int *coord,
    int64_t *k, int64_t *n)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_tensor *w = &sp->g->tensors[op->in[1]];
	const sl_spec *ws = &sp->ops[opi].strat[si].spec[1];

	*k = sl_local_dim(&sp->mesh, ws, 0, w->dims[0], coord);
	*n = sl_local_dim(&sp->mesh, ws, 1, w->dims[1], coord);
}

void
sl_adapter_local(const sl_space *sp, int opi, int si, const int *coord,
    int64_t *a_elems, int64_t *b_elems)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_adapter *ad = &sp->adapter[opi];
	const sl_tensor *w = &sp->g->tensors[op->in[1]];
	int64_t k, n, r = sp->opts.recipe.lora_rank;

	*a_elems = *b_elems = 0;
	if (ad->parts <= 0)
		return;
	weight_local(sp, opi, si, coord, &k, &n);
	/* A [k, r] split as the weight's rows; B [r, n'] as its columns,
	 * the targeted columns in proportion */
	*a_elems = sl_mul_sat(sl_mul_sat(ad->parts, k), r);
	*b_elems = sl_mul_sat(r, w->dims[1] > 0 ? ad->n * n / w->dims[1] : 0);
}

/*
 * Memory items of a node, each with its local bytes on coord and its full
 * (unsharded) bytes, what it is and when the step holds it, passed to fn;
 * the evaluator uses the full bytes for redundancy, sl_node_cost only the
 * local ones of the items it sums.  Every memory rule of the recipe is
 * applied here and nowhere else.
 */
static void
emit(item_fn fn, void *ctx, sl_mem_item *it, int bpe, int64_t elems,
    int64_t full_elems)
{
	it->bpe = bpe;
	it->elems = elems;
	it->local = sl_mul_sat(bpe, elems);
	it->full = sl_mul_sat(bpe, full_elems);
	fn(ctx, it);
}

/*
 * The axes over which Megatron-LM's sequence parallelism hands a
 * column-parallel matmul its input: axes that split the matmul's output
 * features while its input is whole along them, and along which the
 * input's sequence can be split (0 none, and always 0 for other
 * frameworks).  *seq_dim: that dimension of the input.
 */
uint8_t
sl_sp_gather_axes(const sl_space *sp, int opi, int si, int *seq_dim)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_binding *b = sp->ops[opi].bind;
	const sl_strategy *st = &sp->ops[opi].strat[si];
	const sl_tensor *x;
	uint8_t col = 0, axes = 0;
	int d = -1;

	if (sp->opts.recipe.framework != SL_FW_MEGATRON ||
	    op->kind != SL_OP_MATMUL)
		return 0;
	x = &sp->g->tensors[op->in[0]];
	if (x->producer < 0)
		return 0;	/* no edge can hand it split */
	for (int l = 0; l < b->n_loop; l++)
		if (b->role[l] == SL_LOOP_COL)
			col |= st->loop_axes[l];
	for (int k = 0; k < x->rank; k++)
		if (b->map[0][k] >= 0 && b->role[b->map[0][k]] == SL_LOOP_SEQ)
			d = k;
	if (d < 0 || col == 0)
		return 0;
	for (int a = 0; a < sp->mesh.n_axes; a++)
		if ((col & (1u << a)) && sl_placement(&st->spec[0], x->rank, a) == -1 &&
		    sp->mesh.axes[a].size > 1)
			axes |= (uint8_t)(1u << a);
	if (axes != 0 && x->dims[d] < sl_axes_parts(&sp->mesh,
	    axes | st->spec[0].split[d]))
		return 0;
	*seq_dim = d;
	return axes;
}

/*
 * What a matmul keeps of its input x: x as it computes with it, except
 * under Megatron-LM's sequence parallelism, where a column-parallel linear
 * (megatron/core/tensor_parallel/layers.py,
 * LinearWithGradAccumulationAndAsyncCommunication) saves the input as it
 * arrives, split over the sequence, and gathers it again for the weight
 * gradient: 34 s b h / t a layer (Korthikanti et al. 2022) rather than
 * keeping the gathered input of qkv and fc1 whole.  The node keeps it as
 * sequence parallelism hands it (split over every sl_sp_gather_axes axis);
 * how it arrives is the edge's to know (sl_edge_items adds the rest when
 * the producer hands it whole over some of those axes).
 */
static void
sp_kept_spec(const sl_space *sp, int opi, int si, sl_spec *kept)
{
	int d = -1;
	uint8_t axes = sl_sp_gather_axes(sp, opi, si, &d);

	if (axes != 0)
		kept->split[d] |= axes;
}

/*
 * The width at which operator opi keeps its first input for backward
 * (sl_node_items_as's rule for that slot), 0 when it does not keep it.
 */
int
sl_kept_first_width(const sl_space *sp, int opi)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_tensor *t = &sp->g->tensors[op->in[0]];
	int f = sl_kinds[op->kind].saved_in[0];

	if (t->role == SL_ROLE_PARAMETER)
		return 0;
	if (f != 0 && sp->saver[op->in[0]] != opi)
		f = 0;
	if (sl_layer_recompute_of(sp, op) == SL_RECOMP_FULL || sl_op_sac(sp, op)) {
		if (!sl_keeps_layer_input(sp->g, opi, 0))
			return 0;
		if (f == 0)
			f = -1;
	} else if (f == 0) {
		return 0;
	}
	return saved_width(sp, op, t, f);
}

/* An item of operator opi kept for backward, summed. */
static sl_mem_item *
kept_item(sl_mem_item *it, int opi, sl_item_what what, sl_buf_kind kind,
    int slot, int tensor, sl_alloc_at at, sl_free_at until)
{
	memset(it, 0, sizeof *it);
	it->cat = SL_CAT_ACTS;
	it->what = what;
	it->kind = kind;
	it->op = opi;
	it->slot = slot;
	it->tensor = tensor;
	it->edge = -1;
	it->alloc = at;
	it->free = until;
	it->summed = true;
	return it;
}

/*
 * A parameter's states, one item per category with what each byte of it
 * is (recipe.c), of e elements (gradients e_grads and optimizer states
 * e_optim, where ZeRO-1 or 2 shards them).  The gradient is created by the first weight gradient that
 * reaches it (a shared weight has several) and held until the optimizer
 * step, unless the step keeps its gradients throughout (sp->grads_persist).
 */
static void
state_items(const sl_space *sp, int opi, int slot, int tensor, int64_t e,
    int64_t e_grads, int64_t e_optim, int64_t full, bool adapter, item_fn fn,
    void *ctx)
{
	const sl_recipe *r = &sp->opts.recipe;
	sl_mem_item it;

	for (int c = SL_CAT_PARAMS; c <= SL_CAT_OPTIM; c++) {
		int bpe = 0;
		kept_item(&it, opi, SL_WHAT_STATE, c == SL_CAT_GRADS ? SL_BUF_GRAD :
		    SL_BUF_STATE, slot, tensor, SL_AT_START, SL_UNTIL_END);
		it.cat = c;
		if (c == SL_CAT_GRADS && !sp->grads_persist) {
			it.alloc = SL_AT_READERS_WGRAD;
			it.free = SL_UNTIL_OPTIM;
		}
		for (int p = 0; p < SL_PART_COUNT; p++)
			if (sl_state_part_cat((sl_state_part)p) == c) {
				int n = adapter ? sl_recipe_adapter_part_bytes(
				    (sl_state_part)p) : sl_recipe_part_bytes(r,
				    (sl_state_part)p);
				it.parts[p] = (uint8_t)n;
				bpe += n;
			}
		emit(fn, ctx, &it, bpe, c == SL_CAT_GRADS ? e_grads :
		    c == SL_CAT_OPTIM ? e_optim : e, full);
	}
}

/*
 * A frozen weight of e local elements (LoRA): the weight alone, in its
 * precision or 4-bit (sl_recipe_frozen_bytes); no gradient, no optimizer
 * states.
 */
static void
frozen_item(const sl_space *sp, int opi, int slot, int tensor, int64_t e,
    int64_t full, item_fn fn, void *ctx)
{
	sl_mem_item it;
	bool nf4 = sp->adapter[opi].nf4;

	kept_item(&it, opi, SL_WHAT_STATE, SL_BUF_STATE, slot, tensor, SL_AT_START,
	    SL_UNTIL_END);
	it.cat = SL_CAT_PARAMS;
	it.frozen = true;
	if (!nf4) {
		it.parts[SL_PART_WEIGHT] = (uint8_t)sl_recipe_part_bytes(
		    &sp->opts.recipe, SL_PART_WEIGHT);
		emit(fn, ctx, &it, it.parts[SL_PART_WEIGHT], e, full);
		return;
	}
	it.elems = e;
	it.local = sl_recipe_frozen_bytes(&sp->opts.recipe, e, true);
	it.full = sl_recipe_frozen_bytes(&sp->opts.recipe, full, true);
	fn(ctx, &it);
}

/*
 * The adapters of matmul opi (LoRA): the states of A and B (fp32, PEFT's),
 * sharded as the weight's; the bf16 copies of them the adapter's matmuls
 * keep for backward (A's for the input gradient, when there is one); and
 * x A, the r columns per adapter that dB = (x A)^T dY reads in the weight
 * gradient.  What a fully recomputed layer keeps is its input alone.
 */
static void
adapter_items(const sl_space *sp, int opi, int si, const int *coord,
    sl_recompute rc, item_fn fn, void *ctx)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_strategy *st = &sp->ops[opi].strat[si];
	const sl_spec *ws = &st->spec[1];
	const sl_mesh *m = &sp->mesh;
	const sl_tensor *y = &sp->g->tensors[op->out[0]];
	const sl_spec *ys = &st->spec[op->n_in];
	int64_t a, b, e, es, full, rows, last;
	int ss = sp->opts.recipe.shard_states, r = sp->opts.recipe.lora_rank;
	uint8_t rep = ws->zero ? 0 : sl_grad_axes(sp->ops[opi].bind, st, 1, op->n_in);
	sl_mem_item it;

	sl_adapter_local(sp, opi, si, coord, &a, &b);
	if (a + b <= 0)
		return;
	e = a + b;
	full = sl_mul_sat(r, sl_mul_sat(sp->adapter[opi].parts,
	    sp->g->tensors[op->in[1]].dims[0]) + sp->adapter[opi].n);
	if (ws->zero)
		e = sl_piece(e, sl_axes_parts(m, ws->zero), sl_axes_index(m, ws->zero,
		    coord));
	es = rep == 0 ? e : sl_piece(e, sl_axes_parts(m, rep), sl_axes_index(m, rep,
	    coord));
	state_items(sp, opi, 1, op->in[1], e, ss >= 2 ? es : e, ss >= 1 ? es : e,
	    full, true, fn, ctx);
	if (rc == SL_RECOMP_FULL)
		return;
	/* B's copy alone where x has no gradient (d(x A) A^T is not formed) */
	if (sl_space_grad(sp, op->in[0]))
		emit(fn, ctx, kept_item(&it, opi, SL_WHAT_AUTOCAST, SL_BUF_AUTOCAST,
		    -1, -1, SL_AT_FWD, SL_UNTIL_BWD), 2, a + b, full);
	else
		emit(fn, ctx, kept_item(&it, opi, SL_WHAT_AUTOCAST, SL_BUF_AUTOCAST,
		    -1, -1, SL_AT_FWD, SL_UNTIL_BWD), 2, b,
		    sl_mul_sat(r, sp->adapter[opi].n));
	last = sl_local_dim(m, ys, y->rank - 1, y->dims[y->rank - 1], coord);
	rows = last > 0 ? sl_local_elems(m, ys, y, coord) / last : 0;
	kept_item(&it, opi, SL_WHAT_EXTRA, SL_BUF_EXTRA, -1, -1, SL_AT_FWD,
	    SL_UNTIL_WGRAD);
	emit(fn, ctx, &it, sl_recipe_act_bytes(&sp->opts.recipe),
	    sl_mul_sat(rows, (int64_t)r * sp->adapter[opi].parts),
	    sl_mul_sat(sl_tensor_elems(y) / y->dims[y->rank - 1],
	    (int64_t)r * sp->adapter[opi].parts));
}

/* Transformer Engine's FP8 copies of weight slot i of matmul opi and the
 * module's scaling state (sl_node_items_as). */
static void
fp8_items(const sl_space *sp, int opi, int si, const int *coord, int i,
    item_fn fn, void *ctx)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_tensor *t = &sp->g->tensors[op->in[i]];
	const sl_strategy *st = &sp->ops[opi].strat[si];
	const sl_mesh *m = &sp->mesh;
	int64_t full = sl_tensor_elems(t);
	sl_mem_item it;

	/*
	 * Transformer Engine casts a linear layer's weight to
	 * FP8 at the first micro-batch and keeps the copy and
	 * its transpose (the dgrad GEMM's operand) until the
	 * optimizer changes the weight (transformer_engine/
	 * pytorch/module/linear.py, is_first_microbatch), and
	 * per module the scaling factors and amax history of
	 * its FP8 tensors: input, weight and output forward,
	 * output and input gradients backward, 1024 fp32
	 * amaxes each (DelayedScaling's amax_history_len) with
	 * a scale and its inverse.
	 */
	kept_item(&it, opi, SL_WHAT_FP8, SL_BUF_AUTOCAST, i,
	    op->in[i], SL_AT_START, SL_UNTIL_END);
	it.cat = SL_CAT_BUFFERS;
	emit(fn, ctx, &it, 2, sl_local_elems(m, &st->spec[i], t, coord),
	    full);
	kept_item(&it, opi, SL_WHAT_FP8, SL_BUF_AUTOCAST, -1, -1,
	    SL_AT_START, SL_UNTIL_END);
	it.cat = SL_CAT_BUFFERS;
	it.local = it.full = 5 * (1024 + 2) * 4;
	fn(ctx, &it);
}

/* The loss's fp32 copies of its logits (slot 0, e of full elements kept at
 * width f) in forward and backward (sl_node_items_as). */
static void
loss_items(const sl_space *sp, int opi, int f, int64_t e, int64_t full,
    item_fn fn, void *ctx)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_tensor *t = &sp->g->tensors[op->in[0]];
	const int i = 0;
	sl_mem_item it;

	/*
	 * The loss upcasts its logits to fp32 in forward (a
	 * copy for its task alone; log-softmax keeps its fp32
	 * output, the item above).  Its backward
	 * (torch.nn.functional.cross_entropy: nll_loss_backward
	 * then log_softmax_backward) holds two fp32 gradients
	 * at once, of log-softmax's output and of its input,
	 * before the cast back hands on the logits' gradient in
	 * their own type (an activation gradient of the
	 * stream): the task's peak is 2 fp32 widths beside the
	 * kept output, of which the logits' gradient is already
	 * counted.  On an H100 and an H200 PyTorch holds that:
	 * 12 bytes a bf16 logit at the loss's backward.
	 */
	int w = saved_width(sp, op, t, f);
	int gw = sl_grad_elem_bytes(sp, t);
	kept_item(&it, opi, SL_WHAT_TRANSIENT, SL_BUF_LOSS, i,
	    op->in[i], SL_AT_FWD, SL_UNTIL_FWD);
	it.cat = SL_CAT_BUFFERS;
	it.summed = false;
	emit(fn, ctx, &it, w, e, full);
	it.alloc = SL_AT_BWD;
	it.free = SL_UNTIL_DGRAD;
	emit(fn, ctx, &it, 2 * w - gw > w ? 2 * w - gw : w, e, full);
}

int64_t
sl_sac_lse_bytes(const int64_t *loop)
{
	/* fp32, one a row of each head: batch, heads, sequence are the
	 * attention's loops 0, 2 and 1 */
	return sl_mul_sat(4, sl_mul_sat(sl_mul_sat(loop[0], loop[2]), loop[1]));
}

/*
 * What torchtitan's op SAC keeps of operator opi beside its block's input
 * (sl_layer_sac; torchtitan/distributed/activation_checkpoint.py,
 * _apply_op_sac, MUST_SAVE): the share of a matrix product's output its
 * policy saves and, where the product's output is a partial sum (a
 * row-parallel projection under tensor parallelism), the reduce-scatter's
 * result, which the save list names too; attention's output and what
 * its kernel keeps beside it (flash attention's log-sum-exp).  Each is
 * cached from the forward to the block's backward.
 */
static void
sac_items(const sl_space *sp, int opi, int si, const int *coord, item_fn fn,
    void *ctx)
{
	const sl_graph *g = sp->g;
	const sl_op *op = &g->ops[opi];
	const sl_space_op *so = &sp->ops[opi];
	const sl_strategy *st = &so->strat[si];
	const sl_mesh *m = &sp->mesh;
	const sl_tensor *t = &g->tensors[op->out[0]];
	const sl_spec *ys = &st->spec[op->n_in];
	int64_t e = sl_local_elems(m, ys, t, coord);
	double share = sl_sac_saved_share(g, opi);
	int w = saved_width(sp, op, t, -1);
	sl_mem_item it;

	if (op->kind != SL_OP_MATMUL && op->kind != SL_OP_ATTENTION)
		return;
	kept_item(&it, opi, SL_WHAT_SAVED, SL_BUF_SAVED, op->n_in, op->out[0],
	    SL_AT_FWD, SL_UNTIL_BWD);
	if (share > 0)
		emit(fn, ctx, &it, w, (int64_t)llround((double)e * share),
		    (int64_t)llround((double)sl_tensor_elems(t) * share));
	if (op->kind == SL_OP_MATMUL && ys->partial)
		emit(fn, ctx, &it, w, e / sl_axes_parts(m, ys->partial),
		    sl_tensor_elems(t));
	if (op->kind == SL_OP_ATTENTION && sl_kinds[op->kind].extra_saved != NULL) {
		const int64_t *all = so->bind->size;
		int64_t loc[SL_MAX_LOOP];
		kept_item(&it, opi, SL_WHAT_EXTRA, SL_BUF_EXTRA, -1, -1, SL_AT_FWD,
		    SL_UNTIL_DGRAD);
		sl_local_loop(sp, opi, si, coord, loc);
		if (sp->opts.recipe.attention == SL_ATTN_FLASH) {
			it.local = sl_sac_lse_bytes(loc);
			it.full = sl_sac_lse_bytes(all);
		} else {
			it.local = sl_kinds[op->kind].extra_saved(sp, op, so->bind, loc);
			it.full = sl_kinds[op->kind].extra_saved(sp, op, so->bind, all);
		}
		fn(ctx, &it);
	}
}

void
sl_node_items(const sl_space *sp, int opi, int si, const int *coord, item_fn fn,
    void *ctx)
{
	const sl_op *op = &sp->g->ops[opi];
	sl_recompute rc = sl_layer_recompute_of(sp, op);

	/* torchtitan's op SAC: the block's input kept as under full
	 * recomputation, and what the policy saves */
	if (sl_layer_sac(&sp->opts.recipe, op, rc)) {
		sl_node_items_as(sp, opi, si, coord, SL_RECOMP_FULL, fn, ctx);
		sac_items(sp, opi, si, coord, fn, ctx);
		return;
	}
	sl_node_items_as(sp, opi, si, coord, rc, fn, ctx);
}

void
sl_node_items_as(const sl_space *sp, int opi, int si, const int *coord,
    sl_recompute rc, item_fn fn, void *ctx)
{
	const sl_graph *g = sp->g;
	const sl_op *op = &g->ops[opi];
	const sl_space_op *so = &sp->ops[opi];
	const sl_strategy *st = &so->strat[si];
	const sl_kind_info *k = &sl_kinds[op->kind];
	const sl_mesh *m = &sp->mesh;
	const sl_recipe *r = &sp->opts.recipe;
	sl_mem_item it;

	for (int i = 0; i < op->n_in; i++) {
		const sl_tensor *t = &g->tensors[op->in[i]];
		int64_t e, full = sl_tensor_elems(t);
		int f;
		bool matmul_x;

		if (sp->owner[op->in[i]] == opi) {
			/* Weight, gradient and optimizer states (recipe.c). */
			uint8_t rep = st->spec[i].zero ? 0 :
			    sl_grad_axes(so->bind, st, i, op->n_in);
			e = sl_local_elems(m, &st->spec[i], t, coord);
			if (st->spec[i].zero)
				e = sl_piece(e, sl_axes_parts(m, st->spec[i].zero),
				    sl_axes_index(m, st->spec[i].zero, coord));
			if (sl_recipe_frozen(r)) {
				frozen_item(sp, opi, i, op->in[i], e, full, fn, ctx);
			} else {
				/* ZeRO-1 and 2 (Megatron-LM's distributed
				 * optimizer, DeepSpeed): the ranks that hold the
				 * same piece keep a share each of its optimizer
				 * states (and gradients) */
				int64_t es = rep == 0 ? e : sl_piece(e,
				    sl_axes_parts(m, rep), sl_axes_index(m, rep, coord));
				int ss = sp->opts.recipe.shard_states;
				int64_t eg = ss >= 2 ? es : e;

				if (sl_whole_grad_axes(sp, opi, si, i) != 0)
					eg = sl_whole_grad_elems(sp, opi, si, i, coord);
				state_items(sp, opi, i, op->in[i], e, eg,
				    ss >= 1 ? es : e, full, false, fn, ctx);
			}
		}
		if (op->kind == SL_OP_MATMUL && i == 1 && sp->adapter[opi].parts > 0)
			adapter_items(sp, opi, si, coord, rc, fn, ctx);
		if (t->role == SL_ROLE_PARAMETER && i == 1 && sl_fp8_matmul(sp, op))
			fp8_items(sp, opi, si, coord, i, fn, ctx);
		if (t->role == SL_ROLE_PARAMETER) {
			/* Autocast keeps the bf16 copy of a matmul's weight for
			 * backward (not when the layer is recomputed): dX = dY W^T
			 * reads it.  Where X has no gradient mm saves it not
			 * (mm saves mat2 only for self's gradient): a trained
			 * weight's copy stays in autocast's cache until the
			 * autocast region, the forward, ends (aten/src/ATen/
			 * autocast_mode.cpp, cached_cast: fp32 leaves that
			 * require grad; torch/amp/autocast_mode.py, __exit__
			 * clears it), a frozen one's (LoRA) is not cached. */
			bool dx = sl_space_grad(sp, op->in[0]);
			if (r->precision == SL_PREC_AMP && op->kind == SL_OP_MATMUL &&
			    i == 1 && rc != SL_RECOMP_FULL &&
			    (!sl_recipe_frozen(r) || dx))
				emit(fn, ctx, kept_item(&it, opi, SL_WHAT_AUTOCAST,
				    SL_BUF_AUTOCAST, i, op->in[i], SL_AT_FWD,
				    dx ? SL_UNTIL_DGRAD : SL_UNTIL_FWD_END), 2,
				    sl_local_elems(m, &st->spec[i], t, coord), full);
			continue;
		}
		f = sl_saved_in_rule(sp, opi, i);
		if (f != 0 && sp->saver[op->in[i]] != opi)
			f = 0;		/* kept already, by its first reader */
		if (rc == SL_RECOMP_FULL) {
			if (!sl_keeps_layer_input(g, opi, i))
				continue;
			if (f == 0)
				f = -1;
		} else if (f == 0) {
			continue;
		}
		/* Held from the tensor's production (it is the same memory) to
		 * the backward that reads it: a matmul's input only feeds its
		 * weight gradient (dW = X^T dY). */
		matmul_x = op->kind == SL_OP_MATMUL && i == 0;
		{
			sl_spec kept = st->spec[i];
			if (matmul_x)
				sp_kept_spec(sp, opi, si, &kept);
			e = sl_local_elems(m, &kept, t, coord);
		}
		emit(fn, ctx, kept_item(&it, opi, rc == SL_RECOMP_FULL ?
		    SL_WHAT_LAYER_INPUT : SL_WHAT_SAVED, SL_BUF_SAVED, i, op->in[i],
		    SL_AT_PRODUCER, matmul_x ? SL_UNTIL_WGRAD : SL_UNTIL_BWD),
		    saved_width(sp, op, t, f), e, full);
		if (op->kind == SL_OP_CROSS_ENTROPY && i == 0)
			loss_items(sp, opi, f, e, full, fn, ctx);
	}
	if (rc == SL_RECOMP_FULL || !sl_op_backward(sp, opi))
		return;
	for (int j = 0; j < op->n_out && j < 2; j++) {
		const sl_tensor *t = &g->tensors[op->out[j]];
		int f = k->saved_out[j];
		/* flash attention's backward reads its output O (flash_attn's
		 * _flash_attn_backward(dout, q, k, v, out, softmax_lse)): kept
		 * by the matmul that reads it, else (a frozen projection) here */
		if (f == 0 && op->kind == SL_OP_ATTENTION && j == 0 &&
		    r->attention == SL_ATTN_FLASH && sl_recipe_frozen(r) &&
		    sp->saver[op->out[0]] < 0)
			f = -1;
		if (f != 0)
			emit(fn, ctx, kept_item(&it, opi, SL_WHAT_SAVED, SL_BUF_SAVED,
			    op->n_in + j, op->out[j], SL_AT_FWD, SL_UNTIL_BWD),
			    saved_width(sp, op, t, f),
			    sl_local_elems(m, &st->spec[op->n_in + j], t, coord),
			    sl_tensor_elems(t));
	}
	if (k->extra_saved != NULL) {
		int64_t loc[SL_MAX_LOOP];
		const sl_binding *b = so->bind;
		kept_item(&it, opi, SL_WHAT_EXTRA, SL_BUF_EXTRA, -1, -1, SL_AT_FWD,
		    SL_UNTIL_DGRAD);
		sl_local_loop(sp, opi, si, coord, loc);
		it.local = k->extra_saved(sp, op, b, loc);
		it.full = k->extra_saved(sp, op, b, b->size);
		fn(ctx, &it);
	}
}
