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

/* ---------------------------------------------------------------- weighing */

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
			z &= (uint8_t)~sp->opts.zero_replicate;
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
	[SL_CAUSE_ADAPTER] = "adapter",
	[SL_CAUSE_SP_GATHER] = "spgather",
	[SL_CAUSE_STATE_GATHER] = "update",
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

/* A frozen weight's ZeRO-3 gathers: forward, and backward when the
 * operator forms its input's gradient (dX = dY W^T reads W). */
static void
frozen_gathers(const sl_space *sp, int opi, int si, int i, uint8_t part,
    coll_item_fn fn, void *ctx)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_strategy *st = &sp->ops[opi].strat[si];
	const sl_tensor *t = &sp->g->tensors[op->in[i]];
	const sl_mesh *m = &sp->mesh;
	sl_coll_item it = { .tensor = op->in[i], .slot = i,
	    .cause = SL_CAUSE_ZERO_GATHER, .bpe = sl_elem_bytes(sp, t) };
	int64_t bytes = sl_mul_sat(sl_local_elems(m, &st->spec[i], t, NULL), it.bpe);
	bool dgrad = sl_space_grad(sp, op->in[0]);

	for (int a = 0; a < m->n_axes; a++) {
		if (!(part & st->spec[i].zero & (1u << a)) || m->axes[a].size <= 1 ||
		    bytes <= 0)
			continue;
		it.loop = axis_loop(sp->ops[opi].bind, st, a);
		emit_coll(fn, ctx, it, SL_PHASE_FWD, false, SL_COLL_ALL_GATHER, a, bytes);
		if (dgrad)
			emit_coll(fn, ctx, it, SL_PHASE_BWD, false, SL_COLL_ALL_GATHER, a,
			    bytes);
		bytes = sl_ceil_div(bytes, m->axes[a].size);
	}
}

/*
 * The adapters' gradients, reduced after the backward kernels where they
 * are partial sums (LoRA): both over the axes that split the batch or the
 * sequence, A's also over those that split the weight's columns (dA = x^T
 * (dY B^T) sums over them), B's over those that split its rows (x A is a
 * partial sum there; the partial outputs fold into the matmul's own).
 */
static void
adapter_colls(const sl_space *sp, int opi, int si, coll_item_fn fn, void *ctx)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_strategy *st = &sp->ops[opi].strat[si];
	const sl_mesh *m = &sp->mesh;
	const sl_spec *ws = &st->spec[1];
	int64_t a, b;
	uint8_t dp;
	sl_coll_item it = { .tensor = op->in[1 < op->n_in ? 1 : 0], .slot = 1,
	    .cause = SL_CAUSE_ADAPTER, .bpe = sl_recipe_adapter_part_bytes(SL_PART_GRAD),
	    .loop = -1 };

	if (op->kind != SL_OP_MATMUL || sp->adapter[opi].parts <= 0)
		return;
	sl_adapter_local(sp, opi, si, NULL, &a, &b);
	dp = sl_grad_axes(sp->ops[opi].bind, st, 1, op->n_in);
	for (int x = 0; x < m->n_axes; x++) {
		int64_t bytes = 0;
		if (m->axes[x].size <= 1)
			continue;
		if ((dp | ws->split[1]) & (1u << x))
			bytes = sl_add_sat(bytes, sl_mul_sat(a, it.bpe));
		if ((dp | ws->split[0]) & (1u << x))
			bytes = sl_add_sat(bytes, sl_mul_sat(b, it.bpe));
		if (bytes > 0)
			emit_coll(fn, ctx, it, SL_PHASE_BWD, true, SL_COLL_ALL_REDUCE, x,
			    bytes);
	}
}

/* Whether a parameter's states are sharded over the ranks that replicate
 * it (recipe.shard_states; a frozen weight has none to shard). */
static bool
sharded_states(const sl_space *sp, const sl_tensor *t)
{
	return sp->opts.recipe.shard_states >= 1 && t->role == SL_ROLE_PARAMETER &&
	    !sl_recipe_frozen(&sp->opts.recipe);
}

/*
 * The mesh axes over which a vocabulary-parallel embedding's weight
 * gradient is held whole although the weight is split: under DTensor
 * (--framework torchtitan) the embedding's backward has no row-wise
 * strategy (torch/distributed/tensor/_ops/_embedding_ops.py,
 * embedding_dense_backward_strategy: column-wise, batch-sharded with a
 * Partial gradient, or replicated), so the gradient of a weight split by
 * rows (torchtitan's RowwiseParallel on tok_embeddings) is formed whole
 * and all-reduced over those ranks, and is held Replicate until the
 * optimizer step: on an H200 a tensor-parallel-2 rank of a tiny LLaMA held
 * 1 MiB of embedding gradient for its 0.5 MiB of weight
 * (tests/data/fidelity/dtensor-h200.txt).  FSDP2 (+z) reduce-scatters it to
 * its shard instead.  0 elsewhere.
 */
uint8_t
sl_whole_grad_axes(const sl_space *sp, int opi, int si, int slot)
{
	const sl_op *op = &sp->g->ops[opi];
	const sl_spec *ws = &sp->ops[opi].strat[si].spec[slot];

	if (sp->opts.recipe.framework != SL_FW_TORCHTITAN ||
	    op->kind != SL_OP_EMBEDDING || slot != 1 || ws->zero != 0)
		return 0;
	return ws->split[0];
}

int64_t
sl_whole_grad_elems(const sl_space *sp, int opi, int si, int slot,
    const int *coord)
{
	sl_spec whole = sp->ops[opi].strat[si].spec[slot];

	whole.split[0] = 0;
	return sl_local_elems(&sp->mesh, &whole,
	    &sp->g->tensors[sp->g->ops[opi].in[slot]], coord);
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
		uint8_t part, whole;
		int64_t bytes;
		/* a frozen weight (LoRA) forms no gradient: stored sharded,
		 * it is gathered for forward and for the input gradient */
		bool frozen = t->role == SL_ROLE_PARAMETER &&
		    sl_recipe_frozen(&sp->opts.recipe);

		if (!frozen && !sl_space_grad(sp, op->in[i]))
			continue;
		whole = frozen ? 0 : sl_whole_grad_axes(sp, opi, si, i);
		if (whole != 0) {
			/* formed whole and all-reduced (sl_whole_grad_axes) */
			it.bpe = sl_grad_elem_bytes(sp, t);
			it.cause = SL_CAUSE_GRAD;
			bytes = sl_mul_sat(sl_whole_grad_elems(sp, opi, si, i, NULL),
			    it.bpe);
			for (int a = 0; a < m->n_axes; a++)
				if ((whole & (1u << a)) && m->axes[a].size > 1) {
					it.loop = axis_loop(so->bind, st, a);
					emit_coll(fn, ctx, it, SL_PHASE_BWD, true,
					    SL_COLL_ALL_REDUCE, a, bytes);
				}
		}
		/* The input's gradient is a partial sum over these axes. */
		part = sl_grad_axes(so->bind, st, i, op->n_in);
		if (part == 0)
			continue;
		if (frozen) {
			frozen_gathers(sp, opi, si, i, part, fn, ctx);
			continue;
		}
		it.bpe = sl_grad_elem_bytes(sp, t);
		bytes = sl_mul_sat(sl_local_elems(m, &st->spec[i], t, NULL), it.bpe);
		/* The +z axes first, then the others: under HSDP
		 * (opts.zero_replicate) the shard the reduce-scatter leaves is
		 * what is all-reduced across the replicate axes (FSDP2's
		 * reduce-scatter then all-reduce, torch/distributed/fsdp/
		 * _fully_shard/_fsdp_collectives.py, foreach_reduce). */
		for (int pass = 0; pass < 2; pass++)
		for (int a = 0; a < m->n_axes; a++) {
			bool z = (st->spec[i].zero & (1u << a)) != 0;

			if (!(part & (1u << a)) || m->axes[a].size <= 1 || bytes <= 0 ||
			    z != (pass == 0))
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
			} else if (sharded_states(sp, t)) {
				sl_coll_item w = it;
				/*
				 * Megatron-LM's distributed optimizer, ZeRO-1
				 * and -2: the gradient is reduce-scattered,
				 * each rank keeping the share it updates, and
				 * the updated weight all-gathered after the
				 * optimizer step at its own width (compute.c,
				 * shard_gather_ns, says when that costs time).
				 */
				it.cause = SL_CAUSE_GRAD;
				emit_coll(fn, ctx, it, SL_PHASE_BWD, true,
				    SL_COLL_REDUCE_SCATTER, a, bytes);
				/* by the parameter's owner, where its states are
				 * (a weight also stored sharded, +z, is updated
				 * in its shards: nothing to gather) */
				if (sp->owner == NULL || sp->owner[op->in[i]] != opi ||
				    st->spec[i].zero != 0)
					continue;
				w.cause = SL_CAUSE_STATE_GATHER;
				w.bpe = sl_recipe_part_bytes(&sp->opts.recipe,
				    SL_PART_WEIGHT);
				emit_coll(fn, ctx, w, SL_PHASE_BWD, true,
				    SL_COLL_ALL_GATHER, a, sl_mul_sat(w.bpe,
				    sl_local_elems(m, &st->spec[i], t, NULL)));
			} else {
				it.cause = SL_CAUSE_GRAD;
				emit_coll(fn, ctx, it, SL_PHASE_BWD, true,
				    SL_COLL_ALL_REDUCE, a, bytes);
			}
		}
	}
	adapter_colls(sp, opi, si, fn, ctx);
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

bool
sl_coll_grad_sync(const sl_space *sp, int opi, int si, const sl_coll_item *c)
{
	const sl_strategy *st = &sp->ops[opi].strat[si];

	if (c->tensor < 0 || sp->g->tensors[c->tensor].role != SL_ROLE_PARAMETER)
		return false;
	return c->coll == SL_COLL_ALL_REDUCE || (c->coll == SL_COLL_REDUCE_SCATTER &&
	    c->cause == SL_CAUSE_GRAD && !(st->spec[c->slot].zero & (1u << c->axis)));
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

/* Resharding src -> dst spec of tensor t: comm, and whether forward moved data. */
static const sl_spec *
edge_src_spec(const sl_space *s, const sl_space_edge *e, int s_src, sl_spec *tmp)
{
	*tmp = s->ops[e->src].strat[s_src].spec[e->src_slot];
	tmp->zero = 0;		/* parameters travel as their gathered compute copy */
	return tmp;
}

/*
 * The axes of sl_sp_gather_axes along which edge e hands the column-parallel
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
	cand = sl_sp_gather_axes(s, e->dst, s_dst, &d);
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
		/* no gradient flows back into a tensor that has none */
		if (!sl_space_grad(s, e->tensor))
			bw = SL_COLL_COUNT;
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

	if (e->dst_slot != 0 ||
	    (all = sl_sp_gather_axes(s, e->dst, s_dst, &d)) == 0 ||
	    (w = sl_kept_first_width(s, e->dst)) == 0)
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
	if (!sl_space_grad(s, e->tensor))
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
	/* LoRA: the same adapters, the weight stored alike */
	if (sp->adapter[u].parts != sp->adapter[v].parts ||
	    sp->adapter[u].n != sp->adapter[v].n ||
	    sp->adapter[u].nf4 != sp->adapter[v].nf4)
		return false;
	for (int i = 0; i < sl_op_nslots(a); i++) {
		int ta = sl_op_slot_tensor(a, i), tb = sl_op_slot_tensor(b, i);
		const sl_tensor *x = &g->tensors[ta], *y = &g->tensors[tb];

		/* which tensors get a gradient (layer 0's input has none under LoRA) */
		if (sp->grad[ta] != sp->grad[tb])
			return false;
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
		    (a->layer >= 0 && sl_keeps_layer_input(g, u, i) !=
		    sl_keeps_layer_input(g, v, i)))
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
 * (sl_sp_gather_axes) are part of the class: the edge's items read them.
 */
static int
spec_classes(const sl_space *sp, int opi, int slot, bool dst, int *cls)
{
	const sl_space_op *so = &sp->ops[opi];
	int n = 0, d;
	int *rep = sl_xmalloc(so->n_strat * sizeof *rep);

	for (int i = 0; i < so->n_strat; i++) {
		sl_spec a = so->strat[i].spec[slot];
		uint8_t ka = dst && slot == 0 ? sl_sp_gather_axes(sp, opi, i, &d) : 0;
		int c = -1;
		a.zero = 0;
		for (int j = 0; j < n && c < 0; j++) {
			sl_spec b = so->strat[rep[j]].spec[slot];
			uint8_t kb = dst && slot == 0 ?
			    sl_sp_gather_axes(sp, opi, rep[j], &d) : 0;
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
	bool recomputes =
	    sl_layer_recompute_of(sp, &sp->g->ops[i]) != SL_RECOMP_NONE;

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
	sl_find_adapters(sp);
	sl_find_grads(sp);
	sp->saver = sl_xmalloc(g->n_tensors * sizeof *sp->saver);
	for (int t = 0; t < g->n_tensors; t++)
		sp->saver[t] = -1;
	for (int o2 = 0; o2 < g->n_ops; o2++)
		for (int i = 0; i < g->ops[o2].n_in; i++) {
			int t = g->ops[o2].in[i];
			if (sl_saved_in_rule(sp, o2, i) != 0 && sp->saver[t] < 0)
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
	free(s->grad);
	free(s->adapter);
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
