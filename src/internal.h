/*
 * internal.h: helpers shared by the engine's files and its front ends but not
 * part of the public interface: gettext macros (and their fallback without
 * NLS), checked arithmetic, the operator kind table.
 */
#ifndef SL_INTERNAL_H
#define SL_INTERNAL_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "shardlab.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>

/*
 * Without NLS (configure --disable-nls) the messages stay as written: the
 * singular when n is 1, else the plural, as gettext does with no catalogue.
 * Here, where the engine and the front ends both see it.
 */
#ifdef ENABLE_NLS
#include <libintl.h>
#define _(s) gettext(s)
#else
#define _(s) (s)
#define ngettext(a, b, n) ((n) == 1 ? (a) : (b))
#endif
#define N_(s) (s)

#define SL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static inline int sl_max_int(int a, int b) { return a > b ? a : b; }
static inline int64_t sl_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Saturating int64 arithmetic: costs never wrap. */
static inline int64_t sl_add_sat(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return (a > 0) ? INT64_MAX : INT64_MIN;
	return r;
}
static inline int64_t sl_mul_sat(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_mul_overflow(a, b, &r))
		return ((a > 0) == (b > 0)) ? INT64_MAX : INT64_MIN;
	return r;
}

/* Costs from this up mark impossible pairs (the IOPDDL contest writes 1e18). */
#define SL_COST_IMPOSSIBLE ((int64_t)10000000000000000LL)

/* The kernels the GPU runner launches for a kind (launch.c). */
typedef enum sl_kernel {
	SL_KERNEL_MEMORY,	/* memory-bound: reads its inputs, writes its outputs */
	SL_KERNEL_GEMM,		/* (batched) matrix product: fwd, dgrad, wgrad */
	SL_KERNEL_ATTENTION,	/* qk, softmax, pv and their backward */
	SL_KERNEL_GATHER,	/* rows of a table: gather, scatter-add backward */
	SL_KERNEL_VIEW,		/* a view of its input: no traffic */
	SL_KERNEL_EXPERTS,	/* grouped gemms of every local expert: fc1, fc2 */
	SL_KERNEL_COUNT
} sl_kernel;

/*
 * How Megatron-LM splits a kind on the tensor-parallel axis (baseline.c).
 * "Its input's split" is the role of the dimension of its first input that
 * arrives split; "the sequence" is with sequence parallelism only, else it
 * is replicated.
 */
typedef enum sl_tp_rule {
	SL_TP_FOLLOW,		/* its input's split unless data parallel, else the sequence */
	SL_TP_VOCAB,		/* the vocabulary */
	SL_TP_HEAD,		/* the heads */
	SL_TP_ROW_OR_COL,	/* row-parallel after a feature split, else column-parallel */
	SL_TP_HEAD_OR_INPUT,	/* the heads if it has them, else its input's split */
	SL_TP_VOCAB_OR_SEQ,	/* the vocabulary if its input is split so, else the sequence */
	SL_TP_SEQ,		/* the sequence */
	/* a mixture's (Megatron-LM's MoE layer, baseline.c megatron_role):
	 * the router on the sequence, the matmul that feeds it whole; the
	 * dispatcher on the sequence under expert parallelism, else on
	 * gathered tokens; the experts by expert, else by their width */
	SL_TP_ROUTER,
	SL_TP_DISPATCH,
	SL_TP_EXPERTS,
	SL_TP_RULE_COUNT
} sl_tp_rule;

/* The value types of operator attributes (model_json.c). */
typedef enum sl_attr_type {
	SL_ATTR_COUNT_INT,	/* a positive integer (int) */
	SL_ATTR_PROB,		/* a probability in [0, 1) (double) */
	SL_ATTR_BOOL,		/* true or false (bool) */
	SL_ATTR_PERM,		/* a permutation of the input's dimensions (int[]) */
	SL_ATTR_REAL,		/* a number of at least 0 (double); 0 absent */
	SL_ATTR_TYPE_COUNT
} sl_attr_type;

/*
 * One attribute a kind takes: the field of sl_op it fills, whether the model
 * must give it, its value when absent (a probability's; others are 0), and
 * for an integer the attribute it must divide.  A file gives probabilities
 * and permutations always, integers and booleans when not 0 or false.
 */
typedef struct sl_attr {
	const char *name;
	sl_attr_type type;
	size_t field;		/* offsetof(sl_op, ...) */
	bool required;
	double absent;
	const char *divides;
} sl_attr;

#define SL_MAX_ATTRS 6

/*
 * One row per operator kind (kinds.c).  check validates the operator's
 * shapes and writes why not into why; bind describes its loop dimensions.
 * saved[slot] is what the kind keeps for backward from each tensor slot
 * input slot (saved_in) and output slot (saved_out): bytes per element, -1
 * for the tensor's dtype size, 0 for nothing.  extra_saved adds what no tensor slot describes (attention
 * scores), on the given device.  attrs are the attributes it takes (name
 * NULL ends them), kernel what the GPU runner launches for it, tp_rule how
 * Megatron-LM splits it.
 *
 * kernels are how many kernels it runs forward and backward, as eager
 * frameworks issue them (compute.c): a matmul's backward is two gemms
 * (input and weight gradient); a norm's backward a kernel for the input
 * and one for its scale and shift; fused attention's backward the pre-pass
 * over dO.O, the main kernel, the conversion of dQ and the packing of dQ,
 * dK and dV into one tensor; an elementwise operator one kernel each way
 * (for a residual add, the accumulation of the gradient of its shared
 * input).  Every parameter adds one more in backward (compute.c): its
 * gradient reduced (a bias) or accumulated into the gradient buffer across
 * micro-steps.
 */
typedef struct sl_kind_info {
	const char *name;
	int min_in, max_in, n_out;
	int (*check)(const sl_graph *g, const sl_op *op, char *why, size_t len);
	void (*bind)(const sl_graph *g, const sl_op *op, sl_binding *b);
	int saved_in[SL_MAX_OP_TENSORS];
	int saved_out[2];
	int64_t (*extra_saved)(const sl_space *sp, const sl_op *op,
	    const sl_binding *b, const int64_t *local_loop);
	bool elementwise;	/* output follows the inputs dimension by dimension */
	const char *summary;	/* one line for man pages and `show` */
	sl_attr attrs[SL_MAX_ATTRS + 1];
	sl_kernel kernel;
	sl_tp_rule tp_rule;
	uint8_t kernels[2];	/* forward, backward */
} sl_kind_info;

extern const sl_kind_info sl_kinds[SL_OP_KIND_COUNT];

/*
 * The shape of an attention operator (kinds.c): its activation inputs (1:
 * fused qkv; 3: latent q, kv, k_rope), the slot of its first parameter,
 * query and key/value heads, the query/key and value head widths and the
 * rotary key's width (latent only).
 */
typedef struct sl_attn_dims {
	int n_act, param;
	int64_t heads, kv_heads, dqk, dv, rope;
} sl_attn_dims;
void sl_attention_dims(const sl_graph *g, const sl_op *op, sl_attn_dims *d);

/* A compute-bound kind, whose work no baseline replicates (baseline.c). */
static inline bool
sl_kind_is_heavy(sl_op_kind k)
{
	return sl_kinds[k].kernel == SL_KERNEL_GEMM ||
	    sl_kinds[k].kernel == SL_KERNEL_EXPERTS ||
	    sl_kinds[k].kernel == SL_KERNEL_ATTENTION;
}

/* An operator of a mixture's routing and experts (kinds.c). */
static inline bool
sl_kind_is_moe(sl_op_kind k)
{
	return k == SL_OP_ROUTER || k == SL_OP_DISPATCH || k == SL_OP_EXPERTS ||
	    k == SL_OP_COMBINE;
}

/* Largest shard of a loop dimension of size n split over parts. */
static inline int64_t sl_shard(int64_t n, int64_t parts) { return sl_ceil_div(n, parts); }

/* Slot of tensor index t among an operator's inputs then outputs, or -1. */
static inline int sl_op_nslots(const sl_op *op) { return op->n_in + op->n_out; }
static inline int sl_op_slot_tensor(const sl_op *op, int slot)
{
	return slot < op->n_in ? op->in[slot] : op->out[slot - op->n_in];
}

/*
 * The step's memory as one stream of items: every buffer a training step
 * holds on a device, what it is and when it is held.  The evaluator's sum
 * (eval.c) adds the items it counts, the timeline (timeline.c) turns each
 * item's lifetime into the tasks that allocate and free it and takes the
 * peak, and a pipeline stage keeps its resident items once and the
 * activations alive at the loss once per micro-batch in flight: three
 * folds of one stream.
 *
 * A lifetime is given in the tasks of the step's timeline (sl_task_kind):
 * an item is allocated before the first task of its alloc point and
 * released after the last task of its free point; "the operator" is the
 * item's op, "its tensor" the item's tensor.
 */
typedef enum sl_alloc_at {
	SL_AT_START,		/* held from before the step */
	SL_AT_PRODUCER,		/* its tensor's producer's forward (the same memory; the start for none) */
	SL_AT_FWD,		/* the operator's forward */
	SL_AT_PREV_LAYER_FWD,	/* the first forward of the layer before the operator's, or its own */
	SL_AT_BWD,		/* the operator's input gradient */
	SL_AT_NEXT_LAYER_BWD,	/* the first backward task of the layer after, or its own */
	SL_AT_LAYER_BWD,	/* the first backward task of the operator's layer */
	SL_AT_WGRAD,		/* the operator's weight gradient */
	SL_AT_READERS_BWD,	/* the first backward of a reader of its tensor (the operator's when none) */
	SL_AT_READERS_WGRAD,	/* the first weight gradient of a reader of its tensor */
	SL_AT_OPTIM		/* the optimizer step */
} sl_alloc_at;
typedef enum sl_free_at {
	SL_UNTIL_END,		/* kept past the step */
	SL_UNTIL_FWD,		/* the operator's forward */
	SL_UNTIL_READERS_FWD,	/* the last forward reading its tensor (the operator's input gradient when none does) */
	SL_UNTIL_FWD_END,	/* the forward of the graph's last operator */
	SL_UNTIL_DGRAD,		/* the operator's input gradient */
	SL_UNTIL_WGRAD,		/* its weight gradient (its input gradient when it has none) */
	SL_UNTIL_BWD,		/* all of its backward */
	SL_UNTIL_OPTIM		/* the optimizer step */
} sl_free_at;

/* What a node's item is, for launch lists and explain. */
typedef enum sl_item_what {
	SL_WHAT_STATE,		/* weight, gradient or optimizer state of a parameter */
	SL_WHAT_SAVED,		/* a tensor slot kept for backward */
	SL_WHAT_LAYER_INPUT,	/* the layer input a fully recomputed layer keeps */
	SL_WHAT_AUTOCAST,	/* autocast's bf16 copy of a weight */
	SL_WHAT_FP8,		/* Transformer Engine's FP8 copy of a weight and
				 * its transpose, and its scaling history */
	SL_WHAT_EXTRA,		/* what no slot describes (attention scores, LSE) */
	SL_WHAT_TRANSIENT	/* held for a task or a few (sl_mem_item.kind says which) */
} sl_item_what;
typedef struct sl_mem_item {
	int cat;		/* sl_mem_cat */
	int64_t local, full;	/* bytes on the device, bytes unsharded */
	sl_item_what what;
	sl_buf_kind kind;	/* as the timeline tells buffers apart */
	int op;			/* the operator its lifetime names; -1 none */
	int slot;		/* tensor slot (inputs then outputs), -1 none */
	int tensor;		/* tensor index, -1 none */
	int edge;		/* a resharding copy's edge, -1 none */
	int bpe;		/* bytes per element, 0 when not per element */
	int64_t elems;		/* local elements (0 when not per element) */
	sl_alloc_at alloc;
	sl_free_at free;
	/* counted in the evaluator's sum (the solvers' memory term): what a
	 * device keeps across the step, and the FITEE model's resharding
	 * copy of each edge; the other transients are the timeline's alone */
	bool summed;
	/* a parameter's state: bytes per element of each part (recipe.c), the
	 * parts of the item's category summing to bpe */
	uint8_t parts[SL_PART_COUNT];
	/* a frozen weight (LoRA): no gradient, no optimizer step over it */
	bool frozen;
} sl_mem_item;
typedef void (*item_fn)(void *ctx, const sl_mem_item *it);
/*
 * A node's items (items.c): its parameters' states, what it keeps for
 * backward, and the loss's fp32 buffers around its forward and backward.
 */
void sl_node_items(const sl_space *sp, int opi, int si, const int *coord,
    item_fn fn, void *ctx);
/* An edge's items (space.c): the resharding copy the consumer holds when
 * data moves, forward (summed), and its gradient's in backward. */
void sl_edge_items(const sl_space *sp, int e, int s_src, int s_dst,
    const int *coord, item_fn fn, void *ctx);
/* A node's own transients (memory.c): ZeRO-3's copy of a parameter
 * gathered for forward and again for backward, and its whole gradient
 * until the reduce-scatter; where gradients accumulate (accumulate), the
 * new gradient of each weight before it is added in. */
void sl_node_transients(const sl_space *s, int v, int strat, const int *coord,
    bool accumulate, item_fn fn, void *ctx);
/*
 * The whole step's stream on device coord under a plan (memory.c): every
 * node's items (with, in a fully recomputed layer, what it re-materialises
 * in backward), the transients (tensors between producer and readers,
 * activation gradients, ZeRO-3 gathers and whole gradients), every edge's
 * items and the optimizer's work buffer, in that order.  summed_only:
 * only the items the sum counts.
 */
void sl_step_items(const sl_space *s, const int *choice, const int *coord,
    bool summed_only, item_fn fn, void *ctx);
/* The same under recomputation mode rc instead of the layer's (the timeline
 * asks what a fully recomputed layer re-materialises in backward). */
void sl_node_items_as(const sl_space *sp, int opi, int si, const int *coord,
    sl_recompute rc, item_fn fn, void *ctx);
/*
 * Whether the recipe runs op's matrix products in FP8 (recipe.c): under
 * --precision fp8, Transformer Engine's linear layers, the matmuls of a
 * parameter weight inside a transformer layer; the embedding, the output
 * layer and attention stay in bf16 (te.Linear and its fused modules
 * replace the layers' linears; fp8_dpa, FP8 attention, is off by default).
 */
bool sl_fp8_matmul(const sl_space *sp, const sl_op *op);
/* Axes over which an input's gradient is a partial sum (local.c). */
uint8_t sl_grad_axes(const sl_binding *b, const sl_strategy *st, int slot,
    int out_slot);
/* The one shard rule (local.c): devices in the group of a set of mesh axes,
 * a device's index in its group (axis 0 outer; coord NULL = device 0), and
 * piece i of n split into parts, lower indices taking the remainder. */
int sl_axes_parts(const sl_mesh *m, uint8_t axes);
int sl_axes_index(const sl_mesh *m, uint8_t axes, const int *coord);
int64_t sl_piece(int64_t n, int parts, int i);
/* Local size of every loop dimension of an operator's strategy on coord. */
void sl_local_loop(const sl_space *sp, int opi, int si, const int *coord,
    int64_t *loc);
/* Recipe rules (items.c): bytes per element as moved, as reduced. */
int sl_elem_bytes(const sl_space *sp, const sl_tensor *t);
int sl_grad_elem_bytes(const sl_space *sp, const sl_tensor *t);
/* Whether a fully recomputed layer keeps op opi's input slot: a tensor
 * read by the layer but produced outside it, counted by its first reader
 * (items.c; operators alike must agree on it). */
bool sl_keeps_layer_input(const sl_graph *g, int opi, int slot);
/* Megatron-LM's sequence parallelism (items.c): the axes over which it
 * hands a column-parallel matmul its input split over the sequence
 * (*seq_dim), and the width at which an operator keeps its first input for
 * backward (0: it does not keep it). */
uint8_t sl_sp_gather_axes(const sl_space *sp, int opi, int si, int *seq_dim);
int sl_kept_first_width(const sl_space *sp, int opi);
/* At build (items.c): the LoRA adapters and frozen weights of the space's
 * matmuls (sp->adapter), the tensors that have gradients, and the
 * saved-input rule of op opi's input i (0: it keeps none). */
void sl_find_adapters(sl_space *sp);
void sl_find_grads(sl_space *sp);
int sl_saved_in_rule(const sl_space *sp, int opi, int i);
/*
 * What the loss's backward pass holds for a moment on device coord beyond
 * what the step keeps (memory.c): the items of its own it allocates there
 * (its fp32 gradient of the logits) and the logits' gradient it passes
 * back; 0 for any other operator.  A pipeline stage that holds the loss
 * counts them once.
 */
int64_t sl_loss_bwd_bytes(const sl_space *s, int v, int strat, const int *coord);
/*
 * How long a step holds an item, read from its lifetime (memory.c): the
 * whole step (a parameter's states and gradient: once a device, however
 * many micro-batches run), from a micro-batch's forward to its backward
 * (once per micro-batch in flight), or a moment (within a task or a few).
 */
typedef enum sl_span {
	SL_SPAN_STEP, SL_SPAN_MICRO, SL_SPAN_MOMENT
} sl_span;
sl_span sl_item_span(const sl_mem_item *it);
/* Whether the step holds an item when backward begins (the loss task):
 * allocated before it and released in backward or later. */
bool sl_item_at_loss(const sl_mem_item *it);
/*
 * A pipeline stage's fold of an operator's items on coord: held, what it
 * keeps once whatever the micro-batches (the summed items held through the
 * step, by category), acts, the summed items held per micro-batch in
 * flight, and buffers, its largest moment: what its own forward or its
 * own backward holds for the task alone (the loss's fp32 buffers and the
 * logits' gradient, ZeRO-3's gathered copies and whole gradients).  A
 * stage holds the largest of its operators' moments and its edges'
 * resharding copies, not their sum.
 */
void sl_node_stage_mem(const sl_space *s, int v, int strat, const int *coord,
    sl_mem *held);
/* Bytes of the gradient of tensor t held in spec sp on coord (an
 * activation's, at the gradient width); 0 for a tensor without one. */
int64_t sl_act_grad_bytes(const sl_space *s, int t, const sl_spec *sp,
    const int *coord);
/*
 * Of what flash attention keeps beyond its inputs, the part that is an
 * output of SDPA, the log-sum-exp, in bytes for its local loops: what
 * torchtitan's op SAC caches of it (items.c); the rest (the key and value
 * heads repeat_kv copies) its backward recomputes.
 */
int64_t sl_sac_lse_bytes(const int64_t *loop);
/* What attention keeps beyond its inputs, and the bytes a score element
 * takes (kinds.c, beside the attention kind). */
int64_t sl_attention_saved(const sl_space *sp, const sl_op *op,
    const sl_binding *b, const int64_t *local_loop);
int sl_attention_score_bytes(const sl_space *sp, const sl_op *op);
/* The layer's recomputation mode for an operator (none outside layers). */
static inline sl_recompute
sl_layer_recompute_of(const sl_space *sp, const sl_op *op)
{
	if (op->layer < 0 || sp->layer_recompute == NULL)
		return SL_RECOMP_NONE;
	return (sl_recompute)sp->layer_recompute[op->layer];
}
/*
 * The collectives of a node or an edge, each once, in the order a step runs
 * them (space.c), each with its cause: sl_node_cost and sl_edge_cost sum
 * their times, the launch lists run them, explain and the graph's edge
 * labels put them into words.  A node's: ZeRO gathers of its parameters
 * (forward, and again in backward), its input gradients' partial sums
 * reduced after the backward kernels (a reduce-scatter where the states
 * are sharded, else an all-reduce), graph outputs left partial reduced
 * after the forward kernels, and context parallelism's ring: attention
 * whose sequence is split passes K and V round that axis (an all-gather's
 * worth forward, again backward, plus a reduce-scatter of their
 * gradients).  An edge's: the resharding from the producer's placement
 * along an axis to the consumer's, forward and backward.
 */
typedef enum sl_coll_cause {
	SL_CAUSE_ZERO_GATHER,	/* a parameter stored sharded, gathered for compute */
	SL_CAUSE_GRAD,		/* an input's gradient is a partial sum over the axis */
	SL_CAUSE_OUT,		/* a graph output left as a partial sum */
	SL_CAUSE_RING,		/* context parallelism: K and V round the ring */
	SL_CAUSE_RESHARD,	/* an edge: from the producer's spec to the consumer's */
	SL_CAUSE_ADAPTER,	/* LoRA: the adapters' gradients are partial sums */
	SL_CAUSE_SP_GATHER,	/* Megatron-LM's sequence parallelism: a column-
				 * parallel matmul's input gathered again in backward */
	SL_CAUSE_STATE_GATHER,	/* recipe.shard_states: the updated weight
				 * all-gathered after the optimizer step */
	SL_CAUSE_COUNT
} sl_coll_cause;
typedef struct sl_coll_item {
	sl_phase phase;
	bool after;		/* after the operator's kernels */
	sl_coll coll;
	int axis;
	int64_t bytes;		/* of the tensor the group holds together */
	int tensor;
	sl_coll_cause cause;
	int slot;		/* the tensor's slot in the operator (an edge: the consumer's) */
	int bpe;		/* bytes per element as moved */
	int loop;		/* node: the loop dimension the axis splits, -1 none */
	int from, to;		/* an edge: sl_placement of producer and consumer */
} sl_coll_item;
typedef void (*coll_item_fn)(void *ctx, const sl_coll_item *c);
void sl_node_colls(const sl_space *sp, int opi, int si, coll_item_fn fn, void *ctx);
/* Whether c, a collective of operator opi under strategy si, reduces a
 * parameter's gradient once per optimizer step: an all-reduce (the
 * adapters' too), or the reduce-scatter of sharded states
 * (recipe.shard_states); not ZeRO-3's reduce-scatter of every micro-step. */
bool sl_coll_grad_sync(const sl_space *sp, int opi, int si, const sl_coll_item *c);
/* Axes over which a split weight's gradient is held whole (space.c). */
uint8_t sl_whole_grad_axes(const sl_space *sp, int opi, int si, int slot);
/* Its local elements as held: whole over those axes. */
int64_t sl_whole_grad_elems(const sl_space *sp, int opi, int si, int slot,
    const int *coord);
/* Returns whether the edge moves data (the consumer then holds a copy). */
bool sl_edge_colls(const sl_space *sp, int e, int s_src, int s_dst,
    coll_item_fn fn, void *ctx);
/* A collective's short tag in launch names: "gather", "grad", "out", "ring",
 * "spgather"; an edge's "fwd" or "bwd". */
const char *sl_coll_tag(const sl_coll_item *c);
/* Placement of a tensor of spec sp along mesh axis a: -2 a partial sum, -1
 * replicated, else the dimension split over it. */
int sl_placement(const sl_spec *sp, int rank, int a);
/* Does a tensor have a gradient (floating point, not data fed to the step;
 * graph.c)? */
bool sl_needs_grad(const sl_tensor *t);
/* Does the step form tensor t's gradient (items.c): sl_needs_grad, and
 * under LoRA only what depends on an adapter (sl_space.grad). */
bool sl_space_grad(const sl_space *sp, int t);
/* Does operator opi run a backward pass: does some output of it get a
 * gradient (items.c)? */
bool sl_op_backward(const sl_space *sp, int opi);
/* The local elements of matmul opi's adapters A and B on coord (NULL:
 * device 0) under strategy si (space.c); 0 without adapters. */
void sl_adapter_local(const sl_space *sp, int opi, int si, const int *coord,
    int64_t *a_elems, int64_t *b_elems);
/* sl_problem_new; without cost rows (all NULL, the caller's to fill)
 * unless cost_rows. */
sl_problem *sl_problem_new_rows(int n, const int *k, int m,
    const int (*edge)[2], bool cost_rows);
/* sl_space_reweigh of the node costs alone (recomputation changes no edge). */
void sl_space_reweigh_nodes(const sl_space *s, double alpha, sl_problem *p);

/* sha256 of a byte buffer as 64 hex characters (util.c). */
void sl_sha256_hex(const void *data, size_t len, char out[65]);
/*
 * Reads a whole file, inflated when it starts with gzip's magic bytes
 * (whatever its name); NULL + err.  Only regular files, of at most
 * sl_max_input() bytes (inflated, for gzip).
 */
char *sl_read_file(const char *path, size_t *len, sl_error *err);
/*
 * Opens an input for reading: a regular file within sl_max_input(), never
 * waiting on a FIFO.  Returns the descriptor, or -1 with err set.
 */
int sl_open_input(const char *path, sl_error *err);

/*
 * Groups of identical subgraphs (reduce.c): node-disjoint subgraphs alike
 * node by node (allowed strategies, costs, usages) and edge by edge (cost
 * matrices), found by colour refinement and confirmed by exact comparison.
 * Node i of copy j is node[j * size + i]; components: every copy is a whole
 * connected component; merged: solved once for all copies by sl_reduce.
 */
typedef struct sl_twin_group {
	int copies, size;
	bool components, merged;
	int *node;
} sl_twin_group;
typedef struct sl_twins {
	int ngroups;
	sl_twin_group *g;
} sl_twins;
/* The groups of p (its allowed strategies, every node and edge). */
void sl_twins_find(const sl_problem *p, sl_twins *t);
void sl_twins_free(sl_twins *t);

/*
 * Exact reductions before a search (reduce.c): nodes joined by one-to-one
 * edges merged, dominated strategies removed, nodes of fixed usage with at
 * most two neighbours contracted, identical components the limit cannot
 * tell apart solved once (the one kept costs as much as all its copies).
 * q is the reduced problem (ok = q->allowed), fixed the loads [lo, hi,
 * usage] that no choice changes, offset the cost of the isolated nodes.
 * q carries no intervals or usages: its node i uses memory in pieces
 * poff[i] .. poff[i + 1] - 1, piece j puse[j][s] bytes over [pint[j][0],
 * pint[j][1]) when i takes s: one piece per node it stands for (more than
 * one when merged) whose usage depends on the strategy.
 */
typedef struct sl_reduction {
	int n;			/* nodes of the original problem */
	sl_problem *q;
	uint8_t **ok;
	int64_t (*fixed)[3];
	int nfixed;
	int *poff;
	int64_t (*pint)[2];
	int64_t **puse;
	int64_t offset;
	int *newid;		/* original node -> q node, -1 contracted */
	void *steps;
	int nsteps, capsteps;
	int dominated, leaves, chains, removed_edges;
	/* nodes merged into another by one-to-one edges, and their groups */
	int joined, join_groups;
	/* identical subgraphs of the contracted problem (original node ids),
	 * the nodes in their copies, and the nodes of copies solved once */
	sl_twins twins;
	int twin_nodes, merged;
} sl_reduction;

int sl_reduce(const sl_problem *p, sl_reduction *red, sl_error *err);
/* A plan of q back to the original problem. */
void sl_reduce_expand(const sl_reduction *red, const int *qchoice, int *choice);
/* A lower bound on q as one on the original, rounded up to an integer. */
int64_t sl_reduce_bound(const sl_reduction *red, long double qbound);
void sl_reduce_free(sl_reduction *red);

/*
 * The search of fit.c on any min-sum problem with a memory and a cost per
 * plan: solve gives the plan minimising wm x w + wc x cost (an exact solve
 * of integer costs, terms of them in all) for a memory w the solve can
 * weigh; measure a plan's memory under the limit's fold, the w it was
 * weighed at (left alone: the same) and its cost.  bounds: w never exceeds
 * the fold's memory, so the solves bound the cost of any plan that fits.  fast: the least-cost plan when
 * the caller has it (fast_exact: proven so), else solved; frugal: a plan
 * known to fit nearer the limit than the least-memory plan, else the
 * least-memory plan is solved.  found: the least-cost plan of the convex
 * frontier that fits, else the least memory found (fits false), and a
 * lower bound on the cost of any plan that fits (-inf: none).
 */
typedef struct sl_fit_probe {
	int n;
	int (*solve)(void *ctx, double wm, double wc, int *choice, sl_error *err);
	void (*measure)(void *ctx, const int *choice, int64_t *mem,
	    int64_t *weighed, double *cost);
	void *ctx;
	int terms;
	bool bounds;
	const int *fast;
	bool fast_exact;
	const int *frugal;
} sl_fit_probe;
typedef struct sl_fit_found {
	int *choice;		/* malloc'd, n */
	bool fits;
	int64_t mem;
	double cost, bound;
	int solves;
} sl_fit_found;
int sl_fit_search(const sl_fit_probe *pr, int64_t limit, sl_fit_found *found,
    sl_error *err);
/*
 * recompute.c: the fewest fully recomputed layers for which fit finds a
 * plan under limit (fit: sl_fit_plan's plan at the current layer
 * settings; bound, when not NULL: a lower bound on the memory of any plan
 * at them); out gets the plan at the layers chosen, left in s.
 */
typedef struct sl_rc_probe {
	int (*fit)(void *ctx, sl_fit *out, sl_error *err);
	int64_t (*bound)(void *ctx);
	void *ctx;
} sl_rc_probe;
int sl_recompute_choose(sl_space *s, const sl_rc_probe *pr, int64_t limit,
    sl_fit *out, sl_error *err);

/*
 * One solver run (run.c): its start, its deadline and the caller's
 * cancel callback, in one place for every solver.  A solver that calls
 * another hands it a run within its own (sl_run_within), so that the
 * deadline holds for the whole solve.  Times are monotonic milliseconds.
 */
typedef struct sl_run {
	double start, deadline;	/* deadline INFINITY: none */
	bool (*cancel)(void *ctx);
	void *cancel_ctx;
	/* raised by another search of the same solve (the anytime
	 * portfolio); NULL none */
	atomic_bool *stop;
	bool cancelled;		/* the callback said so: it stays said */
} sl_run;
double sl_run_clock(void);
/* A run from the options' time limit and cancel callback (o may be NULL). */
void sl_run_start(sl_run *r, const sl_solve_opts *o);
/* A run that starts now inside outer and ends with it, or after ms when
 * that comes first (ms < 0: with outer). */
void sl_run_within(sl_run *r, const sl_run *outer, double ms);
/* Brings the deadline in to share of the run's length less margin_ms: room
 * for what a solver does after it stops (its plan read back, freed). */
void sl_run_shrink(sl_run *r, double share, double margin_ms);
double sl_run_ms(const sl_run *r);	/* since the start */
double sl_run_left(const sl_run *r);	/* to the deadline; INFINITY none */
/* Polls the cancel callback and the stop flag. */
bool sl_run_cancelled(sl_run *r);
/* Cancelled, or past the deadline. */
bool sl_run_over(sl_run *r);

/* The solvers within a run (the public sl_solve_* start one from o). */
int sl_run_brute(const sl_problem *p, const sl_solve_opts *o, sl_run *run,
    sl_solution *sol, sl_error *err);
int sl_run_dp(const sl_problem *p, const sl_solve_opts *o, sl_run *run,
    sl_solution *sol, sl_error *err);
/* sl_dp_new and sl_dp_resolve within a run. */
sl_dp *sl_run_dp_new(const sl_problem *p, const sl_solve_opts *o, sl_run *run,
    sl_error *err);
int sl_run_dp_resolve(sl_dp *d, const sl_problem *p, const sl_solve_opts *o,
    sl_run *run, sl_solution *sol, sl_error *err);
int sl_run_ilp(const sl_problem *p, const sl_solve_opts *o, sl_run *run,
    sl_solution *sol, sl_error *err);
int sl_run_anytime(const sl_problem *p, const sl_solve_opts *o, sl_run *run,
    sl_solution *sol, sl_error *err);

/*
 * Sequential tree-reweighted message passing (trws.c) on a strategy graph
 * without its usage limit: node costs unary[v][s] (the anytime search
 * prices the limit into them), edge costs read from p in place, ok the
 * strategies allowed (NULL: p->allowed).  Messages persist between
 * iterations, so a caller may change unary and go on.  One iteration is a
 * forward and a backward pass; it returns a lower bound on the least
 * unary-plus-edge cost of a plan, and writes in x (when not NULL) the plan
 * its forward pass reads off.
 */
typedef struct sl_trws sl_trws;
sl_trws *sl_trws_new(const sl_problem *p, uint8_t *const *ok);
long double sl_trws_iterate(sl_trws *t, int64_t *const *unary, int *x);
void sl_trws_free(sl_trws *t);

/*
 * The greedy order of a timeline's tasks (timeline.c), for graphs too large
 * for the exact search: dflt is the default order (its positions break
 * ties).  O(n log n) in the tasks, plus the sizes of the buffers' alloc and
 * free sets.
 */
void sl_timeline_greedy(const sl_timeline *tl, const int *dflt, int *order);


/*
 * A hash index of names to ints (util.c), so that loading a model or a plan
 * stays linear in its size.  Keys are not copied: each must outlive the
 * index.  get returns -1 for a name not added.
 */
typedef struct sl_names {
	size_t cap, n;		/* cap: a power of two, or 0 */
	const char **key;
	int *val;
} sl_names;
void sl_names_add(sl_names *h, const char *key, int val);
int sl_names_get(const sl_names *h, const char *key);
void sl_names_free(sl_names *h);

/* The memory a hybrid plan may use per device: --mem-limit, else the
 * profile's (pipe_eval.c). */
int64_t sl_hybrid_mem_cap(const sl_hybrid_opts *o);

#endif /* SL_INTERNAL_H */
