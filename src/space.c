/*
 * space.c: the strategy space and the cost model (doc/cost-model.md).
 *
 * For every operator it enumerates the strategies a mesh allows (one loop
 * dimension, or none, per mesh axis; optional ZeRO-3/OSDP variants), derives
 * the sharding spec of each tensor, and prices each strategy (node) and each
 * pair of strategies across a tensor edge in memory bytes and communication
 * nanoseconds.  sl_space_problem weighs the two by alpha into the int64
 * tables every solver sees.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------ local sizes */

int
sl_axes_parts(const sl_mesh *m, uint8_t axes)
{
	int p = 1;

	for (int a = 0; a < m->n_axes; a++)
		if (axes & (1u << a))
			p *= m->axes[a].size;
	return p;
}

/* Index of a device within the group that splits over axes (axis 0 outer). */
int
sl_axes_index(const sl_mesh *m, uint8_t axes, const int *coord)
{
	int idx = 0;

	if (coord == NULL)
		return 0;
	for (int a = 0; a < m->n_axes; a++)
		if (axes & (1u << a))
			idx = idx * m->axes[a].size + coord[a];
	return idx;
}

/* Piece i of n split into parts, lower indices taking the remainder. */
int64_t
sl_piece(int64_t n, int parts, int i)
{
	return n / parts + (i < n % parts ? 1 : 0);
}

void
sl_local_loop(const sl_space *sp, int opi, int si, const int *coord,
    int64_t *loc)
{
	const sl_binding *b = sp->ops[opi].bind;
	const sl_strategy *st = &sp->ops[opi].strat[si];

	for (int l = 0; l < b->n_loop; l++)
		loc[l] = st->loop_axes[l] ? sl_piece(b->size[l],
		    sl_axes_parts(&sp->mesh, st->loop_axes[l]),
		    sl_axes_index(&sp->mesh, st->loop_axes[l], coord)) : b->size[l];
}

int64_t
sl_local_dim(const sl_mesh *m, const sl_spec *sp, int d, int64_t size,
    const int *coord)
{
	uint8_t axes = sp->split[d];

	if (axes == 0)
		return size;
	return sl_piece(size, sl_axes_parts(m, axes), sl_axes_index(m, axes, coord));
}

int64_t
sl_local_elems(const sl_mesh *m, const sl_spec *sp, const sl_tensor *t,
    const int *coord)
{
	int64_t n = 1;

	for (int d = 0; d < t->rank; d++)
		n = sl_mul_sat(n, sl_local_dim(m, sp, d, t->dims[d], coord));
	return n;
}

const char *
sl_spec_format(const sl_spec *s, int rank, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
#define PUT(...) do { if (o < len) o += snprintf(buf + o, len - o, __VA_ARGS__); } while (0)
	for (int d = 0; d < rank; d++) {
		PUT("%s", d ? "," : "");
		if (s->split[d] == 0)
			PUT("R");
		else {
			PUT("S");
			for (int a = 0; a < SL_MAX_AXES; a++)
				if (s->split[d] & (1u << a))
					PUT("%d", a);
		}
	}
	if (rank == 0)
		PUT("R");
	if (s->partial) {
		PUT("|P");
		for (int a = 0; a < SL_MAX_AXES; a++)
			if (s->partial & (1u << a))
				PUT("%d", a);
	}
	if (s->zero) {
		PUT("|Z");
		for (int a = 0; a < SL_MAX_AXES; a++)
			if (s->zero & (1u << a))
				PUT("%d", a);
	}
#undef PUT
	return buf;
}

/* Cap of one weighed term: 2^53, exact in a double, and sums of many stay in int64. */
#define SL_TERM_MAX ((int64_t)1 << 53)

int64_t
sl_weigh(int64_t mem, int64_t ns, double alpha)
{
	double t = alpha > 0 ? alpha * (double)ns / 1000.0 : 0.0;
	int64_t r;

	if (!(t < (double)SL_TERM_MAX))
		return SL_TERM_MAX;
	r = sl_add_sat(mem, (int64_t)llround(t));
	return r > SL_TERM_MAX ? SL_TERM_MAX : r;
}

/* ------------------------------------------------------------- strategies */

/* Axes splitting a loop dimension that tensor slot does not have. */
static uint8_t
missing_axes(const sl_binding *b, const sl_strategy *st, int slot)
{
	bool has[SL_MAX_LOOP] = { false };
	uint8_t axes = 0;

	for (int d = 0; d < SL_MAX_RANK; d++)
		if (b->map[slot][d] >= 0)
			has[b->map[slot][d]] = true;
	for (int l = 0; l < b->n_loop; l++)
		if (!has[l])
			axes |= st->loop_axes[l];
	return axes;
}

/*
 * Axes over which the gradient of input slot is a partial sum: those that
 * split a loop dimension the input lacks but the output has (dX = dY . W
 * sums over them).  A loop dimension in neither (a row-parallel matmul's
 * contraction, seen from its bias) leaves the gradient complete.
 */
uint8_t
sl_grad_axes(const sl_binding *b, const sl_strategy *st, int slot, int out_slot)
{
	bool has[SL_MAX_LOOP] = { false }, out[SL_MAX_LOOP] = { false };
	uint8_t axes = 0;

	for (int d = 0; d < SL_MAX_RANK; d++) {
		if (b->map[slot][d] >= 0)
			has[b->map[slot][d]] = true;
		if (b->map[out_slot][d] >= 0)
			out[b->map[out_slot][d]] = true;
	}
	for (int l = 0; l < b->n_loop; l++)
		if (!has[l] && out[l])
			axes |= st->loop_axes[l];
	return axes;
}

bool
sl_needs_grad(const sl_tensor *t)
{
	return t->role != SL_ROLE_INPUT && t->dtype != SL_DT_I32 &&
	    t->dtype != SL_DT_I64 && t->dtype != SL_DT_U8;
}

static void
derive_specs(const sl_graph *g, const sl_op *op, const sl_binding *b,
    sl_strategy *st)
{
	int ns = sl_op_nslots(op);

	for (int s = 0; s < ns; s++) {
		const sl_tensor *t = &g->tensors[sl_op_slot_tensor(op, s)];
		sl_spec *sp = &st->spec[s];

		memset(sp, 0, sizeof *sp);
		for (int d = 0; d < t->rank; d++)
			if (b->map[s][d] >= 0)
				sp->split[d] = st->loop_axes[b->map[s][d]];
		if (s >= op->n_in)
			sp->partial = missing_axes(b, st, s);
		else if (t->role == SL_ROLE_PARAMETER)
			sp->zero = st->zero & sl_grad_axes(b, st, s, op->n_in);
	}
}

/* Does every split fit the sizes it splits (at least one element a piece)? */
static bool
strategy_fits(const sl_graph *g, const sl_op *op, const sl_mesh *m,
    const sl_binding *b, const sl_strategy *st)
{
	for (int l = 0; l < b->n_loop; l++)
		if (st->loop_axes[l] && b->size[l] < sl_axes_parts(m, st->loop_axes[l]))
			return false;
	/* Grouped-query attention splits whole groups: each device's query
	 * heads with their own K and V heads (the fused qkv splits evenly). */
	if (op->kind == SL_OP_ATTENTION && st->loop_axes[2]) {
		int p = sl_axes_parts(m, st->loop_axes[2]);
		int64_t kv = op->kv_heads > 0 ? op->kv_heads : op->heads;
		if (kv % p != 0 || op->heads % p != 0)
			return false;
	}
	/* Experts split in equal parts: every rank of the expert-parallel
	 * group holds as many (Megatron-LM megatron/training/arguments.py,
	 * validate_args: num_experts % expert_model_parallel_size == 0). */
	for (int l = 0; l < b->n_loop; l++)
		if (b->role[l] == SL_LOOP_EXPERT && st->loop_axes[l] &&
		    b->size[l] % sl_axes_parts(m, st->loop_axes[l]) != 0)
			return false;
	for (int s = 0; s < sl_op_nslots(op); s++) {
		const sl_tensor *t = &g->tensors[sl_op_slot_tensor(op, s)];
		for (int d = 0; d < t->rank; d++)
			if (st->spec[s].split[d] &&
			    t->dims[d] < sl_axes_parts(m, st->spec[s].split[d]))
				return false;
	}
	return true;
}

static void
strategy_name(const sl_mesh *m, const sl_binding *b, sl_strategy *st)
{
	size_t o = 0, len = sizeof st->name;
	bool any = false;

	st->name[0] = '\0';
	/* In axis order: the loop dimension each axis splits, first time seen. */
	for (int a = 0; a < m->n_axes; a++) {
		for (int l = 0; l < b->n_loop; l++) {
			uint8_t ax = st->loop_axes[l];
			int first;
			if (!(ax & (1u << a)))
				continue;
			first = __builtin_ctz(ax);
			if (first != a)
				continue;
			o += snprintf(st->name + o, len - o, "%s%s", any ? "." : "",
			    sl_loop_role_name(b->role[l]));
			if (m->n_axes > 1)
				for (int k = 0; k < m->n_axes; k++)
					if (ax & (1u << k))
						o += snprintf(st->name + o, len - o, "%d", k);
			any = true;
		}
	}
	if (!any)
		snprintf(st->name, len, "rep");
}

static bool
owns_params(const sl_graph *g, const sl_op *op, int opi, const int *owner)
{
	for (int i = 0; i < op->n_in; i++)
		if (owner[op->in[i]] == opi)
			return true;
	return false;
}

static void
push_strategy(sl_space_op *so, int *cap, const sl_strategy *st)
{
	if (so->n_strat == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		so->strat = sl_xrealloc(so->strat, *cap * sizeof *so->strat);
	}
	so->strat[so->n_strat++] = *st;
}

static int
strategy_cmp(const void *a, const void *b)
{
	const sl_strategy *x = a, *y = b;
	bool rx = strcmp(x->name, "rep") == 0, ry = strcmp(y->name, "rep") == 0;

	if (rx != ry)
		return rx ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void
enumerate(const sl_space *sp, int opi)
{
	const sl_graph *g = sp->g;
	const sl_op *op = &g->ops[opi];
	const sl_mesh *m = &sp->mesh;
	sl_space_op *so = &sp->ops[opi];
	const sl_binding *b = so->bind;
	int active[SL_MAX_AXES], n_active = 0, choice[SL_MAX_AXES], cap = 0;
	int opts = b->n_loop + 1;	/* per axis: none or a loop dimension */
	long total = 1;
	bool params = owns_params(g, op, opi, sp->owner);

	for (int a = 0; a < m->n_axes; a++)
		if (m->axes[a].size > 1)
			active[n_active++] = a;
	for (int i = 0; i < n_active; i++)
		total *= opts;
	for (long c = 0; c < total; c++) {
		sl_strategy st;
		long r = c;
		bool ok = true;

		memset(&st, 0, sizeof st);
		for (int i = 0; i < n_active; i++) {
			choice[i] = (int)(r % opts) - 1;
			r /= opts;
		}
		for (int i = 0; i < n_active && ok; i++) {
			if (choice[i] < 0)
				continue;
			if (!b->splittable[choice[i]])
				ok = false;
			else
				st.loop_axes[choice[i]] |= (uint8_t)(1u << active[i]);
		}
		if (!ok)
			continue;
		derive_specs(g, op, b, &st);
		if (!strategy_fits(g, op, m, b, &st))
			continue;
		strategy_name(m, b, &st);
		push_strategy(so, &cap, &st);
		if (params && sp->opts.zero) {
			uint8_t z = 0;
			for (int i = 0; i < op->n_in; i++)
				if (sp->owner[op->in[i]] == opi)
					z |= sl_grad_axes(b, &st, i, op->n_in);
			if (z) {
				st.zero = z;
				derive_specs(g, op, b, &st);
				strncat(st.name, "+z", sizeof st.name - strlen(st.name) - 1);
				push_strategy(so, &cap, &st);
			}
		}
	}
	/* "rep" first, then by name: a stable, readable order. */
	qsort(so->strat, so->n_strat, sizeof *so->strat, strategy_cmp);
}

int
sl_space_find_strategy(const sl_space *s, int op, const char *name)
{
	if (op < 0 || op >= s->g->n_ops)
		return -1;
	for (int i = 0; i < s->ops[op].n_strat; i++)
		if (strcmp(s->ops[op].strat[i].name, name) == 0)
			return i;
	return -1;
}

/* ------------------------------------------------------------------- costs */

/* Adds collective c of B bytes over axis a to comm. */
static void
add_coll(const sl_mesh *m, sl_comm *comm, sl_coll c, int a, int64_t bytes)
{
	int n = m->axes[a].size;

	if (n <= 1 || bytes <= 0)
		return;
	comm->ns[c] = sl_add_sat(comm->ns[c], sl_coll_time(c, n, bytes, &m->axes[a].link));
	comm->bytes[c] = sl_add_sat(comm->bytes[c], bytes);
}

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

/* The layer's recomputation mode for an operator (none outside layers). */
static sl_recompute
op_recompute(const sl_space *sp, const sl_op *op)
{
	if (op->layer < 0 || sp->layer_recompute == NULL)
		return SL_RECOMP_NONE;
	return (sl_recompute)sp->layer_recompute[op->layer];
}

/*
 * Under full recomputation a layer keeps only its input: a tensor read by
 * the layer but produced outside it, counted by the layer's first reader.
 */
static bool
keeps_layer_input(const sl_graph *g, int opi, int slot)
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

/*
 * Bytes per (batch x head x s^2) score element that naive attention keeps:
 * the softmax output, and with dropout its 1-byte mask and the dropped
 * copy that P.V reads.  Under autocast the softmax runs in fp32 and P.V
 * keeps a bf16 cast of it.  (Korthikanti et al. 2022 count 5 for bf16.)
 */
int
sl_attention_score_bytes(const sl_space *sp, const sl_op *op)
{
	const sl_recipe *r = &sp->opts.recipe;
	bool drop = op->p > 0;

	switch (r->precision) {
	case SL_PREC_AMP:
		return drop ? 4 + 1 + 2 : 4 + 2;
	case SL_PREC_FP32:
		return drop ? 4 + 1 + 4 : 4;
	default:
		return drop ? 2 + 1 + 2 : 2;
	}
}

/*
 * What attention keeps beyond its inputs, on local loop sizes loc (b,
 * seq, heads): naive the s^2 scores (unless recomputed), flash the fp32
 * log-sum-exp per row.  A sliding window changes neither: the fused
 * kernel keeps one log-sum-exp per row, and eager attention materialises
 * the masked s x s scores.  Its output is kept by its consumer (the
 * projection).  With qk_norm it keeps the normalised queries and keys
 * beside its input (the norms keep the input); latent attention keeps the
 * keys it assembles, each head's no-rope part with the shared rotary key
 * (Megatron-LM megatron/core/transformer/multi_latent_attention.py), for
 * the fused kernel that reads them.
 */
int64_t
sl_attention_saved(const sl_space *sp, const sl_op *op, const sl_binding *b,
    const int64_t *loc)
{
	int64_t s = b->size[1], rows = sl_mul_sat(loc[0], loc[2]), r, tok;
	sl_attn_dims ad;

	sl_attention_dims(sp->g, op, &ad);
	if (sp->opts.recipe.attention == SL_ATTN_FLASH)
		r = sl_mul_sat(sl_mul_sat(4, rows), loc[1]);
	else if (op_recompute(sp, op) == SL_RECOMP_SELECTIVE)
		r = 0;
	else
		r = sl_mul_sat(sl_mul_sat(sl_attention_score_bytes(sp, op), rows),
		    sl_mul_sat(loc[1], s));
	/* rows of one head: batch x local sequence, at the activation width */
	tok = sl_mul_sat(sl_mul_sat(loc[0], loc[1]),
	    sl_recipe_act_bytes(&sp->opts.recipe));
	if (op->qk_norm)
		r = sl_add_sat(r, sl_mul_sat(tok, sl_mul_sat(loc[2] + loc[2] *
		    ad.kv_heads / ad.heads, ad.dqk)));
	if (ad.n_act == 3)
		r = sl_add_sat(r, sl_mul_sat(tok, sl_mul_sat(loc[2], ad.dqk)));
	return r;
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
static uint8_t
sp_gather_axes(const sl_space *sp, int opi, int si, int *seq_dim)
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
 * sequence parallelism hands it (split over every sp_gather_axes axis);
 * how it arrives is the edge's to know (sl_edge_items adds the rest when
 * the producer hands it whole over some of those axes).
 */
static void
sp_kept_spec(const sl_space *sp, int opi, int si, sl_spec *kept)
{
	int d = -1;
	uint8_t axes = sp_gather_axes(sp, opi, si, &d);

	if (axes != 0)
		kept->split[d] |= axes;
}

/*
 * The width at which operator opi keeps its first input for backward
 * (sl_node_items_as's rule for that slot), 0 when it does not keep it.
 */
static int
kept_first_width(const sl_space *sp, int opi)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_tensor *t = &sp->g->tensors[op->in[0]];
	int f = sl_kinds[op->kind].saved_in[0];

	if (t->role == SL_ROLE_PARAMETER)
		return 0;
	if (f != 0 && sp->saver[op->in[0]] != opi)
		f = 0;
	if (op_recompute(sp, op) == SL_RECOMP_FULL) {
		if (!keeps_layer_input(sp->g, opi, 0))
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
    int64_t e_grads, int64_t e_optim, int64_t full, item_fn fn, void *ctx)
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
				int n = sl_recipe_part_bytes(r, (sl_state_part)p);
				it.parts[p] = (uint8_t)n;
				bpe += n;
			}
		emit(fn, ctx, &it, bpe, c == SL_CAT_GRADS ? e_grads :
		    c == SL_CAT_OPTIM ? e_optim : e, full);
	}
}

void
sl_node_items(const sl_space *sp, int opi, int si, const int *coord, item_fn fn,
    void *ctx)
{
	sl_node_items_as(sp, opi, si, coord, op_recompute(sp, &sp->g->ops[opi]),
	    fn, ctx);
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
			{
				/* ZeRO-1 and 2 (Megatron-LM's distributed
				 * optimizer, DeepSpeed): the ranks that hold the
				 * same piece keep a share each of its optimizer
				 * states (and gradients) */
				int64_t es = rep == 0 ? e : sl_piece(e,
				    sl_axes_parts(m, rep), sl_axes_index(m, rep, coord));
				int ss = sp->opts.recipe.shard_states;
				state_items(sp, opi, i, op->in[i], e, ss >= 2 ? es : e,
				    ss >= 1 ? es : e, full, fn, ctx);
			}
		}
		if (t->role == SL_ROLE_PARAMETER && i == 1 && sl_fp8_matmul(sp, op)) {
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
		if (t->role == SL_ROLE_PARAMETER) {
			/* Autocast keeps the bf16 copy of a matmul's weight for
			 * backward (not when the layer is recomputed): dX = dY W^T
			 * reads it. */
			if (r->precision == SL_PREC_AMP && op->kind == SL_OP_MATMUL &&
			    i == 1 && rc != SL_RECOMP_FULL)
				emit(fn, ctx, kept_item(&it, opi, SL_WHAT_AUTOCAST,
				    SL_BUF_AUTOCAST, i, op->in[i], SL_AT_FWD,
				    SL_UNTIL_DGRAD), 2,
				    sl_local_elems(m, &st->spec[i], t, coord), full);
			continue;
		}
		f = k->saved_in[i];
		if (f != 0 && sp->saver[op->in[i]] != opi)
			f = 0;		/* kept already, by its first reader */
		if (rc == SL_RECOMP_FULL) {
			if (!keeps_layer_input(g, opi, i))
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
		if (op->kind == SL_OP_CROSS_ENTROPY && i == 0) {
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
	}
	if (rc == SL_RECOMP_FULL)
		return;
	for (int j = 0; j < op->n_out && j < 2; j++) {
		const sl_tensor *t = &g->tensors[op->out[j]];
		int f = k->saved_out[j];
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

static void
item_to_mem(void *ctx, const sl_mem_item *it)
{
	if (it->summed)
		sl_mem_add(ctx, it->cat, it->local);
}

/* Bytes the group of axis a holds together of a tensor of spec sp (device 0). */
static int64_t
group_bytes(const sl_mesh *m, const sl_spec *sp, const sl_tensor *t, int a,
    int bpe)
{
	sl_spec other = *sp;

	for (int d = 0; d < t->rank; d++)
		other.split[d] &= (uint8_t)~(1u << a);
	return sl_mul_sat(sl_local_elems(m, &other, t, NULL), bpe);
}

static const char *const cause_tags[SL_CAUSE_COUNT] = {
	[SL_CAUSE_ZERO_GATHER] = "gather", [SL_CAUSE_GRAD] = "grad",
	[SL_CAUSE_OUT] = "out", [SL_CAUSE_RING] = "ring",
	[SL_CAUSE_SP_GATHER] = "spgather",
};

const char *
sl_coll_tag(const sl_coll_item *c)
{
	if (c->cause == SL_CAUSE_RESHARD)
		return c->phase == SL_PHASE_FWD ? "fwd" : "bwd";
	if ((unsigned)c->cause >= SL_CAUSE_COUNT || cause_tags[c->cause] == NULL)
		return "?";
	return cause_tags[c->cause];
}

/* A collective of the cost model, its cause filled in by the caller. */
static void
emit_coll(coll_item_fn fn, void *ctx, sl_coll_item it, sl_phase ph, bool after,
    sl_coll c, int a, int64_t bytes)
{
	it.phase = ph;
	it.after = after;
	it.coll = c;
	it.axis = a;
	it.bytes = bytes;
	fn(ctx, &it);
}

/* Context parallelism's ring for attention whose sequence is split. */
static void
ring_colls(const sl_space *sp, int opi, int si, coll_item_fn fn, void *ctx)
{
	const sl_graph *g = sp->g;
	const sl_op *op = &g->ops[opi];
	const sl_strategy *st = &sp->ops[opi].strat[si];
	const sl_mesh *m = &sp->mesh;
	const sl_tensor *y;
	sl_attn_dims ad;
	int64_t bytes;
	uint8_t seq;

	if (op->kind != SL_OP_ATTENTION || (seq = st->loop_axes[1]) == 0)
		return;
	y = &g->tensors[op->out[0]];
	sl_attention_dims(g, op, &ad);
	for (int a = 0; a < m->n_axes; a++) {
		sl_spec other = st->spec[op->n_in];
		sl_coll_item it = { .cause = SL_CAUSE_RING, .tensor = op->in[0],
		    .slot = 0, .bpe = sl_elem_bytes(sp, y), .loop = 1 };
		if (!(seq & (1u << a)) || m->axes[a].size <= 1)
			continue;
		other.split[1] &= (uint8_t)~(1u << a);
		/* K and V of the group's tokens: per query head of the output
		 * (dv values), kv/q key and value heads of dqk + dv values */
		bytes = sl_mul_sat(sl_local_elems(m, &other, y, NULL), it.bpe);
		bytes = bytes / ad.dv * ad.kv_heads / ad.heads * (ad.dqk + ad.dv);
		emit_coll(fn, ctx, it, SL_PHASE_FWD, false, SL_COLL_ALL_GATHER, a, bytes);
		emit_coll(fn, ctx, it, SL_PHASE_BWD, false, SL_COLL_ALL_GATHER, a, bytes);
		emit_coll(fn, ctx, it, SL_PHASE_BWD, true, SL_COLL_REDUCE_SCATTER, a,
		    bytes);
	}
}

/* The loop dimension axis a splits in st (-1 none). */
static int
axis_loop(const sl_binding *b, const sl_strategy *st, int a)
{
	for (int l = 0; l < b->n_loop; l++)
		if (st->loop_axes[l] & (1u << a))
			return l;
	return -1;
}

void
sl_node_colls(const sl_space *sp, int opi, int si, coll_item_fn fn, void *ctx)
{
	const sl_graph *g = sp->g;
	const sl_op *op = &g->ops[opi];
	const sl_space_op *so = &sp->ops[opi];
	const sl_strategy *st = &so->strat[si];
	const sl_mesh *m = &sp->mesh;

	for (int i = 0; i < op->n_in; i++) {
		const sl_tensor *t = &g->tensors[op->in[i]];
		sl_coll_item it = { .tensor = op->in[i], .slot = i };
		uint8_t part;
		int64_t bytes;

		if (!sl_needs_grad(t))
			continue;
		/* The input's gradient is a partial sum over these axes. */
		part = sl_grad_axes(so->bind, st, i, op->n_in);
		if (part == 0)
			continue;
		it.bpe = sl_grad_elem_bytes(sp, t);
		bytes = sl_mul_sat(sl_local_elems(m, &st->spec[i], t, NULL), it.bpe);
		for (int a = 0; a < m->n_axes; a++) {
			if (!(part & (1u << a)) || m->axes[a].size <= 1 || bytes <= 0)
				continue;
			it.loop = axis_loop(so->bind, st, a);
			if (st->spec[i].zero & (1u << a)) {
				/* ZeRO-3: gather for forward and backward, scatter the gradient. */
				it.cause = SL_CAUSE_ZERO_GATHER;
				emit_coll(fn, ctx, it, SL_PHASE_FWD, false,
				    SL_COLL_ALL_GATHER, a, bytes);
				emit_coll(fn, ctx, it, SL_PHASE_BWD, false,
				    SL_COLL_ALL_GATHER, a, bytes);
				it.cause = SL_CAUSE_GRAD;
				emit_coll(fn, ctx, it, SL_PHASE_BWD, true,
				    SL_COLL_REDUCE_SCATTER, a, bytes);
				bytes = sl_ceil_div(bytes, m->axes[a].size);
			} else {
				it.cause = SL_CAUSE_GRAD;
				emit_coll(fn, ctx, it, SL_PHASE_BWD, true,
				    SL_COLL_ALL_REDUCE, a, bytes);
			}
		}
	}
	ring_colls(sp, opi, si, fn, ctx);
	/* A graph output left as a partial sum is all-reduced to be usable. */
	for (int j = 0; j < op->n_out; j++) {
		const sl_spec *sp2 = &st->spec[op->n_in + j];
		const sl_tensor *t = &g->tensors[op->out[j]];
		sl_coll_item it = { .cause = SL_CAUSE_OUT, .tensor = op->out[j],
		    .slot = op->n_in + j, .bpe = sl_elem_bytes(sp, t) };
		if (sp->consumed[op->out[j]] || sp2->partial == 0)
			continue;
		for (int a = 0; a < m->n_axes; a++)
			if ((sp2->partial & (1u << a)) && m->axes[a].size > 1) {
				it.loop = axis_loop(so->bind, st, a);
				emit_coll(fn, ctx, it, SL_PHASE_FWD, true,
				    SL_COLL_ALL_REDUCE, a,
				    group_bytes(m, sp2, t, a, it.bpe));
			}
	}
}

sl_coll
sl_grad_sync_coll(const sl_space *sp, const sl_coll_item *c)
{
	if (c->coll == SL_COLL_ALL_REDUCE && c->cause == SL_CAUSE_GRAD &&
	    sp->opts.recipe.shard_states >= 1 && c->tensor >= 0 &&
	    sp->g->tensors[c->tensor].role == SL_ROLE_PARAMETER)
		return SL_COLL_REDUCE_SCATTER;
	return c->coll;
}

struct coll_acc {
	const sl_mesh *m;
	sl_comm *comm;
};

static void
coll_to_comm(void *ctx, const sl_coll_item *c)
{
	struct coll_acc *a = ctx;

	add_coll(a->m, a->comm, c->coll, c->axis, c->bytes);
}

static void
node_comm(const sl_space *sp, int opi, int si, sl_comm *comm)
{
	struct coll_acc acc = { &sp->mesh, comm };

	sl_node_colls(sp, opi, si, coll_to_comm, &acc);
}

void
sl_node_cost(const sl_space *s, int op, int strat, const int *coord,
    sl_mem *mem, sl_comm *comm)
{
	if (mem != NULL) {
		memset(mem, 0, sizeof *mem);
		sl_node_items(s, op, strat, coord, item_to_mem, mem);
	}
	if (comm != NULL) {
		memset(comm, 0, sizeof *comm);
		node_comm(s, op, strat, comm);
	}
}

int
sl_placement(const sl_spec *sp, int rank, int a)
{
	if (sp->partial & (1u << a))
		return -2;
	for (int d = 0; d < rank; d++)
		if (sp->split[d] & (1u << a))
			return d;
	return -1;
}

/* Resharding src -> dst spec of tensor t: comm, and whether forward moved data. */
static const sl_spec *
edge_src_spec(const sl_space *s, const sl_space_edge *e, int s_src, sl_spec *tmp)
{
	*tmp = s->ops[e->src].strat[s_src].spec[e->src_slot];
	tmp->zero = 0;		/* parameters travel as their gathered compute copy */
	return tmp;
}

/*
 * The axes of sp_gather_axes along which edge e hands the column-parallel
 * matmul its input split over the sequence (the producer's spec splits
 * that dimension there, as Megatron-LM's sequence-parallel regions do):
 * the edge gathers it in forward, the matmul keeps it split and gathers
 * it again for its weight gradient.  *seq_dim: that dimension.
 */
static uint8_t
sp_arrived_axes(const sl_space *s, const sl_space_edge *e, const sl_spec *src,
    int s_dst, int *seq_dim)
{
	const sl_tensor *t = &s->g->tensors[e->tensor];
	uint8_t cand, got = 0;
	int d = -1;

	if (e->dst_slot != 0 || s->g->ops[e->dst].in[0] != e->tensor)
		return 0;
	cand = sp_gather_axes(s, e->dst, s_dst, &d);
	for (int a = 0; a < s->mesh.n_axes; a++)
		if ((cand & (1u << a)) && sl_placement(src, t->rank, a) == d)
			got |= (uint8_t)(1u << a);
	*seq_dim = d;
	return got;
}

/*
 * Per axis, from the producer's placement to the consumer's (doc/cost-model.md):
 * replicated -> split slices in forward and gathers the gradient in backward;
 * partial -> replicated all-reduces; partial -> split reduce-scatters, and
 * gathers the gradient; split -> replicated gathers; split -> other split
 * is an all-to-all both ways.  Under Megatron-LM's sequence parallelism a
 * column-parallel matmul's input gathered here is gathered again in
 * backward, for the weight gradient (sp_arrived_axes).
 */
bool
sl_edge_colls(const sl_space *s, int edge, int s_src, int s_dst,
    coll_item_fn fn, void *ctx)
{
	const sl_space_edge *e = &s->edges[edge];
	const sl_tensor *t = &s->g->tensors[e->tensor];
	const sl_spec *dst = &s->ops[e->dst].strat[s_dst].spec[e->dst_slot];
	const sl_mesh *m = &s->mesh;
	sl_spec tmp;
	const sl_spec *src = edge_src_spec(s, e, s_src, &tmp);
	int bpe = sl_elem_bytes(s, t), d = -1;
	uint8_t sp_ax = sp_arrived_axes(s, e, src, s_dst, &d);
	bool moved = false;

	for (int a = 0; a < m->n_axes; a++) {
		int p = sl_placement(src, t->rank, a), c = sl_placement(dst, t->rank, a);
		int64_t b;
		sl_coll fw = SL_COLL_COUNT, bw = SL_COLL_COUNT;
		sl_coll_item it = { .cause = SL_CAUSE_RESHARD, .tensor = e->tensor,
		    .slot = e->dst_slot, .bpe = bpe, .loop = -1, .from = p, .to = c };

		if (p == c || m->axes[a].size <= 1)
			continue;
		b = group_bytes(m, src, t, a, bpe);
		if (p == -1) {			/* replicated -> split: slice */
			bw = SL_COLL_ALL_GATHER;
		} else if (p == -2 && c == -1) {	/* partial -> replicated */
			fw = SL_COLL_ALL_REDUCE;
		} else if (p == -2) {		/* partial -> split */
			fw = SL_COLL_REDUCE_SCATTER;
			bw = SL_COLL_ALL_GATHER;
		} else if (c == -1) {		/* split -> replicated */
			fw = SL_COLL_ALL_GATHER;
		} else {			/* split d -> split d' */
			fw = bw = SL_COLL_ALL_TO_ALL;
		}
		moved = moved || p != -1;
		if (fn != NULL && fw != SL_COLL_COUNT)
			emit_coll(fn, ctx, it, SL_PHASE_FWD, false, fw, a, b);
		if (fn != NULL && bw != SL_COLL_COUNT)
			emit_coll(fn, ctx, it, SL_PHASE_BWD, false, bw, a, b);
		if (fn != NULL && (sp_ax & (1u << a))) {
			it.cause = SL_CAUSE_SP_GATHER;
			emit_coll(fn, ctx, it, SL_PHASE_BWD, false,
			    SL_COLL_ALL_GATHER, a, b);
		}
	}
	return moved;
}

/*
 * Megatron-LM's sequence parallelism on an edge into a column-parallel
 * matmul (sp_kept_spec): the node keeps the input split over the sequence
 * as sequence parallelism hands it; where the producer hands it whole over
 * some of those axes, the matmul keeps it as it arrives, and the edge adds
 * the rest (Megatron-LM without --sequence-parallel keeps the whole input:
 * Korthikanti et al. 2022's 10 + 24/t).  Where it arrives split, the
 * weight gradient gathers it again into a buffer of its own, alive for
 * that task (LinearWithGradAccumulationAndAsyncCommunication.backward,
 * get_global_memory_buffer).
 */
static void
sp_edge_items(const sl_space *s, int edge, int s_src, int s_dst,
    const int *coord, item_fn fn, void *ctx)
{
	const sl_space_edge *e = &s->edges[edge];
	const sl_tensor *t = &s->g->tensors[e->tensor];
	const sl_spec *dst = &s->ops[e->dst].strat[s_dst].spec[e->dst_slot];
	sl_spec tmp, kept = *dst, got = *dst;
	const sl_spec *src = edge_src_spec(s, e, s_src, &tmp);
	sl_mem_item it = { .cat = SL_CAT_ACTS, .what = SL_WHAT_SAVED,
	    .kind = SL_BUF_SAVED, .op = e->dst, .slot = e->dst_slot,
	    .tensor = e->tensor, .edge = edge, .alloc = SL_AT_PRODUCER,
	    .free = SL_UNTIL_WGRAD, .summed = true };
	int d = -1, w;
	uint8_t all, arrived;

	if (e->dst_slot != 0 || (all = sp_gather_axes(s, e->dst, s_dst, &d)) == 0 ||
	    (w = kept_first_width(s, e->dst)) == 0)
		return;
	arrived = sp_arrived_axes(s, e, src, s_dst, &d);
	kept.split[d] |= all;
	got.split[d] |= arrived;
	if (arrived != all) {
		it.bpe = w;
		it.elems = sl_local_elems(&s->mesh, &got, t, coord) -
		    sl_local_elems(&s->mesh, &kept, t, coord);
		it.local = sl_mul_sat(it.elems, w);
		it.full = sl_mul_sat(sl_tensor_elems(t), w);
		fn(ctx, &it);
	}
	if (arrived == 0)
		return;
	it.cat = SL_CAT_BUFFERS;
	it.what = SL_WHAT_TRANSIENT;
	it.kind = SL_BUF_RESHARD;
	it.alloc = SL_AT_WGRAD;
	it.free = SL_UNTIL_WGRAD;
	it.summed = false;
	it.bpe = w;		/* the kept input, gathered (FP8 under TE) */
	it.elems = sl_local_elems(&s->mesh, dst, t, coord);
	it.local = sl_mul_sat(it.elems, it.bpe);
	it.full = sl_mul_sat(sl_tensor_elems(t), it.bpe);
	fn(ctx, &it);
}

void
sl_edge_items(const sl_space *s, int edge, int s_src, int s_dst,
    const int *coord, item_fn fn, void *ctx)
{
	const sl_space_edge *e = &s->edges[edge];
	const sl_tensor *t = &s->g->tensors[e->tensor];
	const sl_spec *dst = &s->ops[e->dst].strat[s_dst].spec[e->dst_slot];
	sl_mem_item it = { .cat = SL_CAT_BUFFERS, .what = SL_WHAT_TRANSIENT,
	    .kind = SL_BUF_RESHARD, .op = e->dst, .slot = e->dst_slot,
	    .tensor = e->tensor, .edge = edge, .alloc = SL_AT_FWD,
	    .free = SL_UNTIL_FWD, .summed = true };

	sp_edge_items(s, edge, s_src, s_dst, coord, fn, ctx);
	if (!sl_edge_colls(s, edge, s_src, s_dst, NULL, NULL))
		return;
	/* The consumer's copy around its forward, and its gradient's around
	 * its backward; the sum counts the copy once (FITEE's M_ij). */
	it.bpe = sl_elem_bytes(s, t);
	it.elems = sl_local_elems(&s->mesh, dst, t, coord);
	it.local = sl_mul_sat(it.elems, it.bpe);
	it.full = sl_mul_sat(sl_tensor_elems(t), it.bpe);
	fn(ctx, &it);
	if (!sl_needs_grad(t))
		return;
	it.alloc = SL_AT_BWD;
	it.free = SL_UNTIL_DGRAD;
	it.summed = false;
	fn(ctx, &it);
}

void
sl_edge_cost(const sl_space *s, int edge, int s_src, int s_dst,
    const int *coord, sl_mem *mem, sl_comm *comm)
{
	sl_comm c;
	struct coll_acc acc = { &s->mesh, &c };

	memset(&c, 0, sizeof c);
	sl_edge_colls(s, edge, s_src, s_dst, coll_to_comm, &acc);
	if (comm != NULL)
		*comm = c;
	if (mem != NULL) {
		memset(mem, 0, sizeof *mem);
		sl_edge_items(s, edge, s_src, s_dst, coord, item_to_mem, mem);
	}
}

/* ------------------------------------------------------------ build, free */

/*
 * Whether operators u and v are alike in everything the rules of this file
 * and compute.c read of them: kind, attributes, the shape, type and role of
 * every tensor slot and which slots share a tensor, whether they hold a
 * parameter's states, keep an input first, keep a layer's input under full
 * recomputation, leave an output unread, and how their layers recompute.
 * Alike operators have the same strategies and node costs; the operators of
 * a model's equal layers are alike.  A new rule that reads something else of
 * an operator must be added here.
 */
static bool
ops_alike(const sl_space *sp, int u, int v)
{
	const sl_graph *g = sp->g;
	const sl_op *a = &g->ops[u], *b = &g->ops[v];

	if (a->kind != b->kind || a->n_in != b->n_in || a->n_out != b->n_out ||
	    a->heads != b->heads || a->kv_heads != b->kv_heads || a->p != b->p ||
	    a->window != b->window || a->qk_norm != b->qk_norm ||
	    a->sinks != b->sinks || a->topk != b->topk || a->gated != b->gated ||
	    a->capacity != b->capacity ||
	    a->transpose_w != b->transpose_w ||
	    memcmp(a->perm, b->perm, sizeof a->perm) != 0 ||
	    (a->layer < 0) != (b->layer < 0) ||
	    (a->layer >= 0 && sp->layer_recompute[a->layer] !=
	    sp->layer_recompute[b->layer]))
		return false;
	for (int i = 0; i < sl_op_nslots(a); i++) {
		int ta = sl_op_slot_tensor(a, i), tb = sl_op_slot_tensor(b, i);
		const sl_tensor *x = &g->tensors[ta], *y = &g->tensors[tb];

		if (x->rank != y->rank || x->dtype != y->dtype || x->role != y->role ||
		    sp->width[ta] != sp->width[tb] ||
		    memcmp(x->dims, y->dims, x->rank * sizeof *x->dims) != 0)
			return false;
		for (int j = 0; j < i; j++)
			if ((sl_op_slot_tensor(a, j) == ta) != (sl_op_slot_tensor(b, j) == tb))
				return false;
		if (i >= a->n_in) {
			if (sp->consumed[ta] != sp->consumed[tb])
				return false;
			continue;
		}
		if ((sp->owner[ta] == u) != (sp->owner[tb] == v) ||
		    (sp->saver[ta] == u) != (sp->saver[tb] == v) ||
		    (a->layer >= 0 && keeps_layer_input(g, u, i) != keeps_layer_input(g, v, i)))
			return false;
	}
	return true;
}

/*
 * sp->like: each operator of layer l > 0 alike to the one at its position
 * in layer l - 1 takes that one's like; every other operator is its own.
 */
static void
find_alike(sl_space *sp)
{
	const sl_graph *g = sp->g;

	sp->like = sl_xmalloc((g->n_ops ? g->n_ops : 1) * sizeof *sp->like);
	for (int v = 0; v < g->n_ops; v++) {
		const sl_op *op = &g->ops[v];
		const sl_layer *prev;
		int u;

		sp->like[v] = v;
		if (op->layer < 1 || op->pos < 0)
			continue;
		prev = &g->layers[op->layer - 1];
		if (prev->n_ops != g->layers[op->layer].n_ops || op->pos >= prev->n_ops)
			continue;
		u = prev->first_op + op->pos;
		if (g->ops[u].pos == op->pos && ops_alike(sp, u, v))
			sp->like[v] = sp->like[u];
	}
}

static void
find_edges(sl_space *sp)
{
	const sl_graph *g = sp->g;
	int cap = 0;

	for (int o = 0; o < g->n_ops; o++) {
		const sl_op *op = &g->ops[o];
		for (int i = 0; i < op->n_in; i++) {
			int t = op->in[i];
			const sl_tensor *ts = &g->tensors[t];
			sl_space_edge e = { .tensor = t, .dst = o, .dst_slot = i };

			if (ts->role == SL_ROLE_ACTIVATION && ts->producer >= 0) {
				const sl_op *p = &g->ops[ts->producer];
				e.src = ts->producer;
				for (int j = 0; j < p->n_out; j++)
					if (p->out[j] == t)
						e.src_slot = p->n_in + j;
			} else if (ts->role == SL_ROLE_PARAMETER && sp->owner[t] != o) {
				const sl_op *p = &g->ops[sp->owner[t]];
				e.src = sp->owner[t];
				for (int j = 0; j < p->n_in; j++)
					if (p->in[j] == t)
						e.src_slot = j;
			} else {
				continue;
			}
			if (sp->n_edges == cap) {
				cap = cap ? 2 * cap : 64;
				sp->edges = sl_xrealloc(sp->edges, cap * sizeof *sp->edges);
			}
			sp->edges[sp->n_edges++] = e;
		}
	}
}

/*
 * Strategies with identical specs on a slot share edge costs: class ids.
 * Into a matmul's input under Megatron-LM, the sequence-parallel axes
 * (sp_gather_axes) are part of the class: the edge's items read them.
 */
static int
spec_classes(const sl_space *sp, int opi, int slot, bool dst, int *cls)
{
	const sl_space_op *so = &sp->ops[opi];
	int n = 0, d;
	int *rep = sl_xmalloc(so->n_strat * sizeof *rep);

	for (int i = 0; i < so->n_strat; i++) {
		sl_spec a = so->strat[i].spec[slot];
		uint8_t ka = dst && slot == 0 ? sp_gather_axes(sp, opi, i, &d) : 0;
		int c = -1;
		a.zero = 0;
		for (int j = 0; j < n && c < 0; j++) {
			sl_spec b = so->strat[rep[j]].spec[slot];
			uint8_t kb = dst && slot == 0 ?
			    sp_gather_axes(sp, opi, rep[j], &d) : 0;
			b.zero = 0;
			if (memcmp(&a, &b, sizeof a) == 0 && ka == kb)
				c = j;
		}
		if (c < 0) {
			rep[n] = i;
			c = n++;
		}
		cls[i] = c;
	}
	/* reuse cls' tail is not possible; return representatives via cls sign */
	for (int i = 0; i < n; i++)
		cls[so->n_strat + i] = rep[i];
	free(rep);
	return n;
}

/*
 * An earlier edge whose tables are ei's: into the same slot of the alike
 * operator at the same position of the layer before, from the same slot
 * of an operator alike to ei's source.  -1 none.  at: edge per (operator,
 * slot).
 */
static int
edge_alike(const sl_space *sp, int ei, const int *at)
{
	const sl_graph *g = sp->g;
	const sl_space_edge *e = &sp->edges[ei], *f;
	const sl_op *op = &g->ops[e->dst];
	const sl_layer *prev;
	int y, u;

	if (sp->like[e->dst] == e->dst || op->layer < 1)
		return -1;
	prev = &g->layers[op->layer - 1];
	u = prev->first_op + op->pos;
	if (op->pos >= prev->n_ops || sp->like[u] != sp->like[e->dst] ||
	    (y = at[u * SL_MAX_OP_TENSORS + e->dst_slot]) < 0)
		return -1;
	f = &sp->edges[y];
	if (sp->like[f->src] != sp->like[e->src] || f->src_slot != e->src_slot)
		return -1;
	return y;
}

static void
edge_tables(sl_space *sp, int ei)
{
	const sl_space_edge *e = &sp->edges[ei];
	const sl_space_op *a = &sp->ops[e->src], *b = &sp->ops[e->dst];
	int *ca = sl_xmalloc(2 * a->n_strat * sizeof *ca);
	int *cb = sl_xmalloc(2 * b->n_strat * sizeof *cb);
	int na = spec_classes(sp, e->src, e->src_slot, false, ca);
	int nb = spec_classes(sp, e->dst, e->dst_slot, true, cb);
	int64_t *cm = sl_xmalloc((size_t)na * nb * sizeof *cm);
	int64_t *ct = sl_xmalloc((size_t)na * nb * sizeof *ct);

	for (int i = 0; i < na; i++)
		for (int j = 0; j < nb; j++) {
			sl_mem mem;
			sl_comm comm;
			sl_edge_cost(sp, ei, ca[a->n_strat + i], cb[b->n_strat + j],
			    NULL, &mem, &comm);
			cm[i * nb + j] = sl_mem_total(&mem);
			ct[i * nb + j] = sl_comm_total(&comm);
		}
	sp->edge_mem[ei] = sl_xmalloc((size_t)a->n_strat * b->n_strat * sizeof(int64_t));
	sp->edge_ns[ei] = sl_xmalloc((size_t)a->n_strat * b->n_strat * sizeof(int64_t));
	for (int s = 0; s < a->n_strat; s++)
		for (int t = 0; t < b->n_strat; t++) {
			sp->edge_mem[ei][s * b->n_strat + t] = cm[ca[s] * nb + cb[t]];
			sp->edge_ns[ei][s * b->n_strat + t] = ct[ca[s] * nb + cb[t]];
		}
	free(ca);
	free(cb);
	free(cm);
	free(ct);
}

/*
 * Gives operator i node rows of its own; with copy, holding what it reads
 * now.  Without, they are to be filled: the rows it pointed at may be gone
 * (node_tables frees an operator's rows when it becomes alike to an earlier
 * one, before the later operators that pointed at them are done).
 */
static void
node_own(sl_space *sp, int i, bool copy)
{
	size_t k = (size_t)sp->ops[i].n_strat;
	int64_t *m, *t;

	if (sp->node_of[i] == i)
		return;
	m = sl_xmalloc(k * sizeof *m);
	t = sl_xmalloc(k * sizeof *t);
	if (copy) {
		memcpy(m, sp->node_mem[i], k * sizeof *m);
		memcpy(t, sp->node_ns[i], k * sizeof *t);
	}
	sp->node_mem[i] = m;
	sp->node_ns[i] = t;
	sp->node_of[i] = i;
}

/*
 * The solvers' node terms on device 0: memory, and time that differs between
 * plans beyond the kernels themselves: communication, and the forward run
 * again when the operator's layer recomputes.
 */
static void
node_tables(sl_space *sp, int i)
{
	int u = sp->like != NULL ? sp->like[i] : i;

	if (u != i) {
		/* alike: u's rows (u < i, so they are current) */
		if (sp->node_of[i] == i) {
			free(sp->node_mem[i]);
			free(sp->node_ns[i]);
		}
		sp->node_of[i] = sp->node_of[u];
		sp->node_mem[i] = sp->node_mem[u];
		sp->node_ns[i] = sp->node_ns[u];
		return;
	}
	node_own(sp, i, false);
	/* only a recomputed layer has forward time in the objective */
	bool recomputes = op_recompute(sp, &sp->g->ops[i]) != SL_RECOMP_NONE;

	for (int s = 0; s < sp->ops[i].n_strat; s++) {
		sl_mem mem;
		sl_comm comm;
		sl_compute cp = { 0 };
		sl_node_cost(sp, i, s, NULL, &mem, &comm);
		if (recomputes)
			sl_node_compute(sp, i, s, NULL, &cp);
		sp->node_mem[i][s] = sl_mem_total(&mem);
		sp->node_ns[i][s] = sl_add_sat(sl_comm_total(&comm), cp.recompute_ns);
	}
}

void
sl_space_set_layer_recompute(sl_space *sp, int layer, sl_recompute r)
{
	const sl_layer *ly;

	if (layer < 0 || layer >= sp->g->n_layers || r == SL_RECOMP_AUTO)
		return;
	sp->layer_recompute[layer] = (uint8_t)r;
	/* layers may now recompute differently: nothing is alike any more,
	 * and every operator gets rows of its own before this layer's change */
	for (int i = 0; i < sp->g->n_ops && sp->like != NULL; i++)
		sp->like[i] = i;
	for (int i = 0; i < sp->g->n_ops; i++)
		node_own(sp, i, true);
	ly = &sp->g->layers[layer];
	for (int i = ly->first_op; i < ly->first_op + ly->n_ops; i++)
		node_tables(sp, i);
}

void
sl_space_set_recompute(sl_space *sp, sl_recompute r)
{
	const sl_graph *g = sp->g;

	if (r == SL_RECOMP_AUTO)
		return;
	for (int l = 0; l < g->n_layers; l++)
		sp->layer_recompute[l] = (uint8_t)r;
	free(sp->like);
	find_alike(sp);
	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].layer >= 0)
			node_tables(sp, i);
}

void
sl_space_set_layers_recompute(sl_space *sp, const uint8_t *modes)
{
	const sl_graph *g = sp->g;
	bool changed = false;

	for (int l = 0; l < g->n_layers; l++) {
		uint8_t r = modes[l] == SL_RECOMP_AUTO ? SL_RECOMP_NONE : modes[l];
		changed = changed || sp->layer_recompute[l] != r;
		sp->layer_recompute[l] = r;
	}
	if (!changed)
		return;
	/* runs of equally recomputed equal layers are alike again: each run
	 * costs one layer's tables, the rest are copies */
	free(sp->like);
	find_alike(sp);
	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].layer >= 0)
			node_tables(sp, i);
}

/*
 * Whether parameter gradients are held through the whole step: Megatron-LM
 * keeps them (fp32 under --bf16, in the parameters' type under --fp16 or
 * --grad-reduce-in-bf16) in its contiguous main-gradient buffer
 * (megatron/core/distributed/param_and_grad_buffer.py), and gradients
 * accumulated over micro-steps live from the first to the optimizer step.
 * The graph's batch is the first dimension of its first input.
 */
static bool
grads_persist(const sl_graph *g, const sl_recipe *r)
{
	int64_t batch = 0;

	if (r->precision == SL_PREC_MEGATRON || r->precision == SL_PREC_FP8 ||
	    r->framework == SL_FW_MEGATRON)
		return true;
	for (int t = 0; t < g->n_tensors && batch == 0; t++)
		if (g->tensors[t].role == SL_ROLE_INPUT && g->tensors[t].rank > 0)
			batch = g->tensors[t].dims[0];
	return sl_recipe_accum_steps(r, batch) > 1;
}

sl_space *
sl_space_build(const sl_graph *g, const sl_mesh *m, const sl_space_opts *o,
    sl_error *err)
{
	sl_space *sp = sl_xcalloc(1, sizeof *sp);

	sp->g = g;
	sp->mesh = *m;
	if (o != NULL)
		sp->opts = *o;
	else
		sl_space_opts_default(&sp->opts);
	if (sp->opts.recipe.precision == SL_PREC_FP8 && m->hw.fp8_flops <= 0) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("FP8 precision: the %s of hardware profile \"%s\" has no FP8 "
		    "matrix units (the profile gives no \"fp8_flops\"); FP8 "
		    "training needs an H100, H200, B200, L40S, L4 or RTX 4090 class GPU"),
		    m->hw.device, m->hw.name);
		free(sp);
		return NULL;
	}
	if (sp->opts.recipe.micro_batch <= 0)
		sp->opts.recipe.micro_batch = 1;
	sp->grads_persist = grads_persist(g, &sp->opts.recipe);
	sp->layer_recompute = sl_xcalloc(g->n_layers ? g->n_layers : 1, 1);
	for (int l = 0; l < g->n_layers; l++)
		sp->layer_recompute[l] = sp->opts.recipe.recompute == SL_RECOMP_AUTO ?
		    SL_RECOMP_NONE : sp->opts.recipe.recompute;
	sp->ops = sl_xcalloc(g->n_ops, sizeof *sp->ops);
	sp->owner = sl_xmalloc(g->n_tensors * sizeof *sp->owner);
	sp->consumed = sl_xcalloc(g->n_tensors, sizeof *sp->consumed);
	for (int t = 0; t < g->n_tensors; t++)
		sp->owner[t] = -1;
	for (int o2 = 0; o2 < g->n_ops; o2++)
		for (int i = 0; i < g->ops[o2].n_in; i++) {
			int t = g->ops[o2].in[i];
			sp->consumed[t] = true;
			if (g->tensors[t].role == SL_ROLE_PARAMETER && sp->owner[t] < 0)
				sp->owner[t] = o2;
		}
	sp->saver = sl_xmalloc(g->n_tensors * sizeof *sp->saver);
	for (int t = 0; t < g->n_tensors; t++)
		sp->saver[t] = -1;
	for (int o2 = 0; o2 < g->n_ops; o2++)
		for (int i = 0; i < g->ops[o2].n_in; i++) {
			int t = g->ops[o2].in[i];
			if (sl_kinds[g->ops[o2].kind].saved_in[i] != 0 && sp->saver[t] < 0)
				sp->saver[t] = o2;
		}
	sp->width = sl_xmalloc(g->n_tensors ? g->n_tensors : 1);
	sl_recipe_widths(&sp->opts.recipe, g, sp->width);
	find_alike(sp);
	sp->strat_of = sl_xmalloc((g->n_ops ? g->n_ops : 1) * sizeof *sp->strat_of);
	for (int i = 0; i < g->n_ops; i++) {
		int u = sp->like[i];
		sp->strat_of[i] = i;
		if (u != i) {
			/* alike: the same binding, and u's strategies */
			sp->ops[i].bind = sp->ops[u].bind;
			sp->ops[i].n_strat = sp->ops[u].n_strat;
			sp->ops[i].strat = sp->ops[u].strat;
			sp->strat_of[i] = sp->strat_of[u];
			continue;
		}
		{
			sl_binding *b = sl_xmalloc(sizeof *b);
			sl_kinds[g->ops[i].kind].bind(g, &g->ops[i], b);
			sp->ops[i].bind = b;
		}
		enumerate(sp, i);
		if (sp->ops[i].n_strat == 0) {
			sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
			    _("operator '%s' has no strategy on this mesh"), g->ops[i].name);
			sl_space_free(sp);
			return NULL;
		}
	}
	find_edges(sp);
	sp->node_mem = sl_xcalloc(g->n_ops, sizeof *sp->node_mem);
	sp->node_ns = sl_xcalloc(g->n_ops, sizeof *sp->node_ns);
	sp->node_of = sl_xmalloc((g->n_ops ? g->n_ops : 1) * sizeof *sp->node_of);
	for (int i = 0; i < g->n_ops; i++) {
		sp->node_of[i] = -1;	/* no rows yet */
		node_tables(sp, i);
	}
	sp->edge_mem = sl_xcalloc(sp->n_edges ? sp->n_edges : 1, sizeof *sp->edge_mem);
	sp->edge_ns = sl_xcalloc(sp->n_edges ? sp->n_edges : 1, sizeof *sp->edge_ns);
	sp->edge_of = sl_xmalloc((sp->n_edges ? sp->n_edges : 1) * sizeof *sp->edge_of);
	{
		int *at = sl_xmalloc(((size_t)g->n_ops * SL_MAX_OP_TENSORS + 1) * sizeof *at);
		for (size_t i = 0; i < (size_t)g->n_ops * SL_MAX_OP_TENSORS; i++)
			at[i] = -1;
		for (int e = 0; e < sp->n_edges; e++)
			at[sp->edges[e].dst * SL_MAX_OP_TENSORS + sp->edges[e].dst_slot] = e;
		for (int e = 0; e < sp->n_edges; e++) {
			int y = edge_alike(sp, e, at);
			if (y < 0) {
				sp->edge_of[e] = e;
				edge_tables(sp, e);
				continue;
			}
			sp->edge_of[e] = sp->edge_of[y];
			sp->edge_mem[e] = sp->edge_mem[y];
			sp->edge_ns[e] = sp->edge_ns[y];
		}
		free(at);
	}
	return sp;
}

void
sl_space_free(sl_space *s)
{
	if (s == NULL)
		return;
	free(s->layer_recompute);
	free(s->saver);
	free(s->width);
	free(s->like);
	for (int i = 0; i < s->g->n_ops; i++) {
		if (s->strat_of == NULL || s->strat_of[i] == i) {
			free(s->ops[i].strat);
			free((void *)s->ops[i].bind);
		}
		if (s->node_of == NULL || s->node_of[i] != i)
			continue;
		free(s->node_mem[i]);
		free(s->node_ns[i]);
	}
	for (int e = 0; e < s->n_edges; e++) {
		if (s->edge_of != NULL && s->edge_of[e] != e)
			continue;
		if (s->edge_mem)
			free(s->edge_mem[e]);
		if (s->edge_ns)
			free(s->edge_ns[e]);
	}
	free(s->strat_of);
	free(s->node_of);
	free(s->edge_of);
	free(s->node_mem);
	free(s->node_ns);
	free(s->edge_mem);
	free(s->edge_ns);
	free(s->ops);
	free(s->edges);
	free(s->owner);
	free(s->consumed);
	free(s);
}

/* ---------------------------------------------------------------- problems */

void
sl_space_reweigh_nodes(const sl_space *s, double alpha, sl_problem *p)
{
	for (int v = 0; v < p->n; v++)
		for (int i = 0; i < p->k[v]; i++)
			p->cost[v][i] = sl_weigh(s->node_mem[v][i], s->node_ns[v][i], alpha);
}

void
sl_space_reweigh(const sl_space *s, double alpha, sl_problem *p)
{
	for (int v = 0; v < p->n; v++)
		for (int i = 0; i < p->k[v]; i++)
			p->cost[v][i] = sl_weigh(s->node_mem[v][i], s->node_ns[v][i], alpha);
	for (int e = 0; e < p->m; e++) {
		int n = p->k[p->edge[e][0]] * p->k[p->edge[e][1]];
		for (int i = 0; i < n; i++)
			p->ecost[e][i] = sl_weigh(s->edge_mem[e][i], s->edge_ns[e][i], alpha);
	}
}

int
sl_space_constrain(const sl_space *s, sl_problem *p, const sl_constraints *cs,
    sl_error *err)
{
	const sl_graph *g = s->g;
	int *pin_of = sl_xmalloc(g->n_ops * sizeof *pin_of);
	int rc = SL_OK;

	for (int v = 0; v < p->n; v++) {
		memset(p->allowed[v], 1, p->k[v]);
		pin_of[v] = -1;
	}
	for (int i = 0; cs != NULL && i < cs->n && rc == SL_OK; i++) {
		const sl_constraint *c = &cs->c[i];
		int v, st;

		if (c->opi >= 0) {
			/* by index, from a front end holding this space */
			if (c->opi >= p->n || c->sti < 0 || c->sti >= p->k[c->opi]) {
				rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
				    _("a constraint names operator %d, strategy %d, which this model does not have"),
				    c->opi, c->sti);
				break;
			}
			if (c->pin && pin_of[c->opi] >= 0 &&
			    pin_of[c->opi] != c->sti) {
				rc = sl_error_set(err, SL_EINFEASIBLE, NULL, 0, 0,
				    _("conflicting pins: operator '%s' is pinned to both '%s' and '%s'"),
				    g->ops[c->opi].name,
				    s->ops[c->opi].strat[pin_of[c->opi]].name,
				    s->ops[c->opi].strat[c->sti].name);
				break;
			}
			if (c->pin)
				pin_of[c->opi] = c->sti;
			continue;
		}
		v = sl_graph_find_op(g, c->op);
		if (v < 0) {
			rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("--%s %s=%s: no operator named '%s'"),
			    c->pin ? "pin" : "forbid", c->op, c->strategy, c->op);
			break;
		}
		st = sl_space_find_strategy(s, v, c->strategy);
		if (st < 0) {
			char list[512];
			size_t o = 0;
			list[0] = '\0';
			for (int j = 0; j < s->ops[v].n_strat && o < sizeof list - 8; j++)
				o += snprintf(list + o, sizeof list - o, "%s%s",
				    j ? ", " : "", s->ops[v].strat[j].name);
			rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("--%s %s=%s: operator '%s' has no strategy '%s' on this mesh (it has: %s)"),
			    c->pin ? "pin" : "forbid", c->op, c->strategy, c->op,
			    c->strategy, list);
			break;
		}
		if (c->pin) {
			if (pin_of[v] >= 0 && pin_of[v] != st) {
				rc = sl_error_set(err, SL_EINFEASIBLE, NULL, 0, 0,
				    _("conflicting pins: operator '%s' is pinned to both '%s' and '%s'"),
				    c->op, s->ops[v].strat[pin_of[v]].name, c->strategy);
				break;
			}
			pin_of[v] = st;
		}
	}
	for (int i = 0; cs != NULL && i < cs->n && rc == SL_OK; i++) {
		const sl_constraint *c = &cs->c[i];
		int v = c->opi >= 0 ? c->opi : sl_graph_find_op(g, c->op);
		int st = c->opi >= 0 ? c->sti :
		    sl_space_find_strategy(s, v, c->strategy);
		if (c->pin) {
			for (int j = 0; j < p->k[v]; j++)
				if (j != st)
					p->allowed[v][j] = 0;
		} else {
			p->allowed[v][st] = 0;
		}
	}
	for (int v = 0; v < p->n && rc == SL_OK; v++) {
		bool any = false;
		for (int j = 0; j < p->k[v]; j++)
			any |= p->allowed[v][j] != 0;
		if (any)
			continue;
		if (pin_of[v] >= 0)
			rc = sl_error_set(err, SL_EINFEASIBLE, NULL, 0, 0,
			    _("operator '%s' is left no strategy: it is pinned to '%s' and '%s' is forbidden"),
			    g->ops[v].name, s->ops[v].strat[pin_of[v]].name,
			    s->ops[v].strat[pin_of[v]].name);
		else
			rc = sl_error_set(err, SL_EINFEASIBLE, NULL, 0, 0,
			    _("operator '%s' is left no strategy: all %d of its strategies are forbidden"),
			    g->ops[v].name, p->k[v]);
	}
	free(pin_of);
	return rc;
}

void
sl_constraints_add_index(sl_constraints *cs, const sl_space *s, int op,
    int st, bool pin)
{
	sl_constraints_add(cs, s->g->ops[op].name, s->ops[op].strat[st].name,
	    pin);
	cs->c[cs->n - 1].opi = op;
	cs->c[cs->n - 1].sti = st;
}

sl_problem *
sl_space_problem(const sl_space *s, double alpha, const sl_constraints *cs,
    sl_error *err)
{
	const sl_graph *g = s->g;
	int *k = sl_xmalloc(g->n_ops * sizeof *k);
	int (*ends)[2] = sl_xmalloc((s->n_edges ? s->n_edges : 1) * sizeof *ends);
	sl_problem *p;

	for (int i = 0; i < g->n_ops; i++)
		k[i] = s->ops[i].n_strat;
	for (int e = 0; e < s->n_edges; e++) {
		ends[e][0] = s->edges[e].src;
		ends[e][1] = s->edges[e].dst;
	}
	p = sl_problem_new(g->n_ops, k, s->n_edges, (const int (*)[2])ends);
	free(k);
	free(ends);
	if (p == NULL) {
		sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, _("cannot build the problem"));
		return NULL;
	}
	free(p->name);
	p->name = sl_xstrdup(g->name);
	for (int v = 0; v < p->n; v++) {
		p->layer[v] = g->ops[v].layer;
		p->pos[v] = g->ops[v].pos;
	}
	sl_space_reweigh(s, alpha, p);
	if (sl_space_constrain(s, p, cs, err) != SL_OK) {
		sl_problem_free(p);
		return NULL;
	}
	return p;
}
