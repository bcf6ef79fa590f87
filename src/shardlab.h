/*
 * shardlab.h: the engine's one public header.
 *
 * The engine turns a model's operator graph and a device mesh into a strategy
 * graph, solves it for the plan with the least per-device memory traded
 * against communication time, and evaluates any plan.  It never prints and
 * never includes curses: errors come back as sl_error values, progress
 * through callbacks.  The command line (src/cli/) and the explorer (ui/)
 * are front ends over this header alone.
 *
 *   graph.c        operators, tensors, validation, topological order
 *   kinds.c        the operator kind table: loop dimensions, saved tensors
 *                  (with a mixture of experts' router, dispatch, experts
 *                  and combine; attention's saved scores by recipe)
 *   model_json.c   JSON model format loader/saver (man shardlab-model.5)
 *   json.c         the one JSON reader (values with the line and column of
 *                  each) and writer (atomic files)
 *   gen.c          GPT / BERT / LLaMA generators, Hugging Face config.json
 *   hardware.c     hardware profiles and device meshes
 *   local.c        local sizes: a device's piece of a tensor or a loop
 *   items.c        a node's memory items: every memory rule of the recipe
 *   space.c        strategy enumeration and the cost model
 *   compute.c      compute time of an operator's shard (FLOPs, bytes, profile)
 *   recompute.c    recomputation chosen per layer (--recompute auto)
 *   fit.c          plans under a memory limit: the one search every caller
 *                  of "plan this under M bytes" runs
 *   problem.c      the solvers' pairwise min-sum problem, pins and forbids
 *   solve_ilp.c    GLPK integer program (per-edge marginal formulation)
 *   solve_dp.c     exact elimination / folded-layer DP, the live solver
 *   dp_elim.c      its variable elimination (dp_internal.h)
 *   solve_brute.c  exhaustive enumeration (small problems, tests)
 *   solve_anytime.c  the anytime solver for graphs with a memory usage
 *                  limit over liveness intervals (IOPDDL problems, graphs
 *                  that do not fold): a plan early, improved until the
 *                  time limit, with a lower bound (doc/anytime.md); its
 *                  parts (anytime.h has their map):
 *   anytime_search.c  the schedule of one search
 *   anytime_state.c  the search's state: the load over time, a move's cost
 *   anytime_moves.c  moves under the limit, the repair, exchanges
 *   anytime_windows.c  windows re-solved exactly, forest moves, the tree DP
 *   anytime_price.c  the limit priced: Lagrangian bound, rounds, TRW-S
 *   anytime_portfolio.c  searches side by side
 *   reduce.c       exact reductions before a search: one-to-one edges
 *                  merged, dominated strategies, contracted leaves and
 *                  chains, identical subgraphs
 *   trws.c         tree-reweighted message passing (TRW-S): the anytime
 *                  solver's lower bounds and priced plans
 *   run.c          the solver run: one clock, deadline and cancel for
 *                  every solver
 *   solve.c        solver dispatch (auto|dp|ilp|brute|anytime)
 *   iopddl.c       IOPDDL contest problems: load (plain or gzip), export
 *   eval.c         per-device evaluator of any assignment
 *   sweep.c        the alpha frontier (parametric search over exact solves)
 *   plan.c         plan JSON write/read (man shardlab-plan.5)
 *   baseline.c     data parallel, ZeRO, Megatron-LM, Alpa, Colossal-Auto plans
 *   explain.c      one operator's strategy explained step by step (text)
 *   launch.c       a plan as per-device buffers and kernels for the GPU runner
 *   memory.c       a step's memory as one stream of items with lifetimes
 *                  (the sum, the timeline and pipeline stages fold it)
 *   tally.c        memory and communication tallies the folds add into
 *   moe.c          a plan's mixtures of experts as frameworks say it: the
 *                  model read back and the experts' layout
 *   recipe.c       the training recipe: attention kernel, precision,
 *                  recomputation, batches; bytes per element by recipe
 *   timeline.c     memory over time: a step's buffers in execution order,
 *                  the peak, the order that lowers it, a caching allocator
 *   pipe_schedule.c  pipeline schedules (GPipe, 1F1B, interleaved):
 *                  micro-batches in flight, peak, bubble, pipelined time
 *   pipe_space.c   what a pipeline's stages share per micro-batch and
 *                  sub-mesh: the space, classes of alike layers, tables
 *   pipe_stage.c   stage types and their plans under a memory budget
 *   pipe_eval.c    one pipeline evaluated; its Megatron-LM comparison
 *   pipe_search.c  the hybrid search over pipeline degree, sub-mesh,
 *                  micro-batches, stage boundaries and recomputation
 *   pipe_suggest.c what single change would make a model fit
 *   pipe_export.c  launch arguments and configurations for frameworks
 *   pipe_timeline.c memory over time of one pipeline stage
 *   pipe_ctx.c     a pipeline the explorer keeps and evaluates again
 *   pipe_account.c Megatron-LM's recommended layout beside a plan, and
 *                  the difference as a chain of single changes
 *   framework.c    what Megatron-LM, torchtitan and DeepSpeed can run: a
 *                  model's architecture, a plan as each launches it, and
 *                  their argument and configuration checks
 *   util.c         errors, allocation, atomic files, size parsing
 *
 * Headers beside this one, for the engine's own files: internal.h (gettext,
 * checked arithmetic, the kind table, what files share), json.h (the JSON
 * reader and writer), pipe_internal.h (what the pipeline files share).
 * doc/design.md describes the parts and how data flows through them.
 *
 * Units: memory in bytes, time in nanoseconds, both int64_t.
 */
#ifndef SHARDLAB_H
#define SHARDLAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ errors */

/* Exit statuses of the command line; also the codes of sl_error. */
enum sl_status {
	SL_OK = 0,
	SL_EINFEASIBLE = 1,	/* no plan satisfies the constraints */
	SL_EINPUT = 2,		/* bad usage or bad input */
	SL_EINTERNAL = 3	/* internal or solver failure */
};

/*
 * The settings of a run that the engine's words can be about.  The engine
 * names them plainly ("mesh", "memory budget": sl_setting_name); each front
 * end maps them to its own terms (the command line to its options, such as
 * --mesh), so that no engine message names a command-line flag.
 */
typedef enum sl_setting {
	SL_SET_NONE = 0,
	SL_SET_MESH,		/* the shape of the device mesh */
	SL_SET_AXES,		/* what each mesh axis carries: pp, dp or tp */
	SL_SET_HW,		/* the hardware profile */
	SL_SET_PIN,		/* OP=STRATEGY: the strategy an operator takes */
	SL_SET_FORBID,		/* OP=STRATEGY: a strategy an operator does not take */
	SL_SET_SOLVER,		/* the solver */
	SL_SET_MEM_LIMIT,	/* a memory budget per device */
	SL_SET_RECOMPUTE,	/* recomputation */
	SL_SET_PP,		/* the pipeline degree */
	SL_SET_PLAN,		/* a plan file to open */
	SL_SET_COUNT
} sl_setting;
/* The plain (translated) name of a setting; "" for SL_SET_NONE. */
const char *sl_setting_name(sl_setting s);

typedef struct sl_error {
	int code;		/* enum sl_status; SL_OK when unset */
	char file[512];		/* "" when not about a file */
	int line, column;	/* 1-based; 0 when unknown */
	/*
	 * about: msg is about this setting's value and opens with its plain
	 * name and a space (sl_error_about), where a front end may put its own
	 * name for it.  fix: a setting that would mend the error, and
	 * fix_value the value to give it ("" when msg says or none applies):
	 * a front end says how.  SL_SET_NONE when not known.
	 */
	sl_setting about, fix;
	char fix_value[64];
	char msg[1024];
} sl_error;

void sl_error_clear(sl_error *e);
/* Sets e (if non-NULL and not already set) and returns code. */
int sl_error_set(sl_error *e, int code, const char *file, int line, int col,
    const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* sl_error_set of a message about setting s: its name, a space, then fmt. */
int sl_error_about(sl_error *e, int code, sl_setting s, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/*
 * Names the setting (and its value, or NULL) that would mend the error just
 * set in e; returns e's code.  Does nothing when e already names one.
 */
int sl_error_fix(sl_error *e, sl_setting s, const char *value);
/* "file:line:column: msg" (the parts that are known). */
const char *sl_error_format(const sl_error *e, char *buf, size_t len);

void *sl_xmalloc(size_t n);
void *sl_xcalloc(size_t n, size_t m);
void *sl_xrealloc(void *p, size_t n);
char *sl_xstrdup(const char *s);
/*
 * Sets the C library's allocator for a process that builds and drops many
 * large tables (the hybrid search's stage spaces): blocks under 64 MiB come
 * from the heap rather than fresh mappings, up to 512 MiB of freed heap is
 * kept rather than returned and faulted in again, and the heap's first
 * 384 MiB are reserved (not touched) and marked for transparent huge
 * pages where the system has them.  For a program, once at its start;
 * without glibc's mallopt it does nothing.
 */
void sl_tune_allocator(void);

/*
 * Length of the decimal number at the start of s ("12", "-0.5", "1e9"; no
 * hexadecimal, infinity or NaN, no leading space), 0 when there is none.
 */
size_t sl_decimal_len(const char *s);
/* A whole string that is one finite decimal number; false otherwise. */
bool sl_parse_number(const char *s, double *out);
/* Parses "40GiB", "80GB", "512MiB", "1e9" into bytes.  -1 on error. */
int64_t sl_parse_size(const char *s);
/* Formats bytes as "1.50 GiB" into buf. */
const char *sl_format_bytes(int64_t bytes, char *buf, size_t len);
/* Formats ns as "1.25 ms" into buf. */
const char *sl_format_ns(int64_t ns, char *buf, size_t len);
/* A rate such as tokens per second: "950", "41.2k", "1.23M"; "-" if unknown. */
const char *sl_format_rate(double per_s, char *buf, size_t len);

/*
 * Writes a file atomically: open gives a FILE* on a temporary file in the
 * same directory (a short name, whatever the length of path's); commit
 * renames it over path, keeping the old file's permissions (or removes it on
 * failure).  path "-" means standard output.  A symbolic link is followed:
 * the file it names is replaced and the link stays.  A character device or a
 * FIFO is written through, never replaced; a directory, a block device, a
 * socket or a read-only file is refused.  A file that cannot be written,
 * wherever that is found (any of those, a FIFO without a reader, a
 * directory that is missing, full or not writable, a failed write or
 * rename), is SL_EINTERNAL; a path that would replace an input of the
 * process (sl_output_check) is SL_EINPUT.
 */
typedef struct sl_atomic {
	FILE *fp;
	char *path, *tmp;	/* tmp NULL when writing through */
	bool is_stdout;
	int mode;		/* permissions to give the new file */
} sl_atomic;
int sl_atomic_open(sl_atomic *a, const char *path, sl_error *err);
int sl_atomic_commit(sl_atomic *a, sl_error *err);	/* closes, renames */
void sl_atomic_abort(sl_atomic *a);			/* closes, removes */
/* The temporary file of an open sl_atomic (NULL when writing through). */
const char *sl_atomic_tmp(const sl_atomic *a);
/*
 * Removes the temporary files of every open sl_atomic: async-signal-safe,
 * for a front end's handler of SIGTERM, SIGHUP and SIGINT.
 */
void sl_atomic_unlink_all(void);

/*
 * No output replaces an input.  Every file read through the engine
 * (models, plans, profiles, problems, configs) is kept in a list of the
 * process's inputs, and so is every file a front end names as one before
 * reading it (sl_input_note: a bundled name resolved to its file);
 * sl_output_check refuses a path that names one of them now (by device and
 * inode: through a link, a second name, a name resolved), SL_EINPUT naming
 * the input and what (an option such as "--json", or NULL).  Once a front
 * end has called sl_inputs_guard(true), sl_atomic_open calls it for every
 * file it writes (a library user that writes over what it read on purpose,
 * such as a test, is not refused).
 */
void sl_input_note(const char *path);
int sl_output_check(const char *path, const char *what, sl_error *err);
void sl_inputs_guard(bool on);

/*
 * Largest input file, largest text a gzip file may inflate to, and most
 * memory what is read from one may take (the values of a JSON document,
 * an IOPDDL problem's tables), in bytes: SL_MAX_INPUT_DEFAULT or
 * $SHARDLAB_MAX_INPUT (a size such as 64MiB, at most SL_MAX_INPUT_MAX).
 * -1 when the variable holds anything else: sl_max_input_check says so,
 * and no input is read (never another limit in its place).
 */
#define SL_MAX_INPUT_DEFAULT ((int64_t)512 << 20)
#define SL_MAX_INPUT_MAX ((int64_t)1 << 40)
int64_t sl_max_input(void);
/* SL_EINPUT naming $SHARDLAB_MAX_INPUT when sl_max_input is -1. */
int sl_max_input_check(sl_error *err);

/*
 * A name from a file or the command line, fit for a terminal: control
 * characters (C0, DEL, C1) and invalid UTF-8 bytes become \xHH escapes, a
 * backslash stays as it is.  Returns one of a few rotating thread-local
 * buffers, so that several names may be escaped in one printf; a name too
 * long for them is cut with "...".
 */
const char *sl_esc(const char *s);
/* The same into buf; returns buf. */
const char *sl_esc_buf(const char *s, char *buf, size_t len);

/* Directory of bundled data (models, hardware); SHARDLAB_DATADIR overrides. */
const char *sl_datadir(void);
/* path of a file beside the running program ("<its directory>/name") into
 * buf; false when that cannot be known or does not fit. */
bool sl_beside_program(char *buf, size_t len, const char *name);
/*
 * Directory of the message catalogues: $SHARDLAB_LOCALEDIR when set; else
 * the installed one when it holds shardlab's catalogues; else, for a program
 * run from its build tree, locale/ beside it or in the tree it was built in.
 */
const char *sl_localedir(void);

/* ------------------------------------------------------------------- graph */

#define SL_MAX_RANK 4		/* tensor dimensions */
#define SL_MAX_OP_TENSORS 6	/* inputs + outputs of one operator */
#define SL_MAX_LOOP 8		/* loop (iteration) dimensions of one operator */
#define SL_MAX_AXES 2		/* mesh axes */

typedef enum sl_dtype {
	SL_DT_F32, SL_DT_F16, SL_DT_BF16, SL_DT_I32, SL_DT_I64, SL_DT_U8,
	SL_DT_COUNT
} sl_dtype;

typedef enum sl_role {
	SL_ROLE_ACTIVATION,	/* produced by an operator */
	SL_ROLE_PARAMETER,	/* trained weight: 16 bytes/element of state */
	SL_ROLE_INPUT,		/* data fed to the step (tokens, labels): no gradient */
	SL_ROLE_COUNT
} sl_role;

typedef enum sl_op_kind {
	SL_OP_EMBEDDING,	/* tokens[b,s], table[V,h] (, pos[s,h]) -> [b,s,h] */
	SL_OP_MATMUL,		/* x[...,k], w[k,n] (, bias[n]) -> [...,n] */
	SL_OP_BMM,		/* a[...,m,k], b[...,k,n] -> [...,m,n] */
	SL_OP_LAYERNORM,	/* x[...,h], gamma[h], beta[h] -> [...,h] */
	SL_OP_RMSNORM,		/* x[...,h], gamma[h] -> [...,h] */
	SL_OP_SOFTMAX,		/* x[...,n] -> [...,n], over the last dimension */
	SL_OP_GELU,
	SL_OP_SILU,
	SL_OP_RELU,
	SL_OP_MUL,		/* elementwise product of equal shapes */
	SL_OP_ADD,		/* elementwise sum of equal shapes (residual) */
	SL_OP_DROPOUT,
	SL_OP_RESHAPE,		/* equal element count; common leading dims splittable */
	SL_OP_TRANSPOSE,	/* attribute perm */
	SL_OP_ATTENTION,	/* fused core attention: qkv[b,s,(q+2kv)*d] -> [b,s,q*d] */
	SL_OP_CROSS_ENTROPY,	/* logits[b,s,V], labels[b,s] -> loss[b,s] */
	SL_OP_SIGMOID,		/* elementwise (a shared expert's gate) */
	/* mixture of experts (doc/cost-model.md, "Mixture of experts") */
	SL_OP_ROUTER,		/* logits[b,s,E] (, bias[E]) -> top-k weights[b,s,k] */
	SL_OP_DISPATCH,		/* x[b,s,h], weights[b,s,k] -> tokens by expert [b,E,c,h] */
	SL_OP_EXPERTS,		/* [b,E,c,h], w1[E,h,f'], w2[E,f,h] (, biases) -> [b,E,c,h] */
	SL_OP_COMBINE,		/* y[b,E,c,h], weights[b,s,k] -> [b,s,h] */
	SL_OP_KIND_COUNT
} sl_op_kind;

typedef struct sl_tensor {
	char *name;
	int rank;
	int64_t dims[SL_MAX_RANK];
	sl_dtype dtype;
	sl_role role;
	int producer;		/* operator index, -1 for parameters and inputs */
} sl_tensor;

typedef struct sl_op {
	char *name;
	sl_op_kind kind;
	int n_in, n_out;
	int in[SL_MAX_OP_TENSORS];	/* tensor indices */
	int out[SL_MAX_OP_TENSORS];
	int layer;		/* index into graph->layers, -1 if none */
	int pos;		/* position within its layer (0-based), -1 if none */
	/* attributes */
	int heads, kv_heads;	/* attention */
	int window;		/* attention: keys a query sees (sliding window); 0 all */
	bool qk_norm;		/* attention: RMSNorm of each query and key head */
	bool sinks;		/* attention: a learned logit per head in the softmax */
	int perm[SL_MAX_RANK];	/* transpose */
	double p;		/* dropout probability */
	bool transpose_w;	/* matmul: weight stored [n,k] (tied embeddings) */
	int topk;		/* experts: experts each token is routed to */
	bool gated;		/* experts: gated (SwiGLU) first matmul of 2f columns */
	double capacity;	/* dispatch: the capacity factor its [b,E,c,h] was
				 * sized by; 0 dropless */
	/* where the operator was defined, for error messages */
	int src_line, src_col;
} sl_op;

typedef struct sl_layer {
	char *name;
	int first_op, n_ops;	/* operators of a layer are contiguous */
} sl_layer;

typedef struct sl_graph {
	char *name;
	char *source;		/* file it came from, or "gen:..." */
	int n_ops, n_tensors, n_layers;
	sl_op *ops;
	sl_tensor *tensors;
	sl_layer *layers;
	int cap_ops, cap_tensors, cap_layers;
	char sha256[65];	/* of the source bytes, or of the canonical JSON */
	struct sl_graph_index *index;	/* names of ops, tensors, layers (graph.c) */
} sl_graph;

sl_graph *sl_graph_new(const char *name);
void sl_graph_free(sl_graph *g);
/* Returns the new tensor's index, or -1 (duplicate name; err set). */
int sl_graph_add_tensor(sl_graph *g, const char *name, int rank,
    const int64_t *dims, sl_dtype dtype, sl_role role, sl_error *err);
/*
 * Adds an operator.  layer may be NULL; operators of one layer must be added
 * contiguously.  Returns the operator index or -1 (err set).
 */
int sl_graph_add_op(sl_graph *g, const char *name, sl_op_kind kind,
    int n_in, const int *in, int n_out, const int *out, const char *layer,
    sl_error *err);
int sl_graph_find_tensor(const sl_graph *g, const char *name);
int sl_graph_find_op(const sl_graph *g, const char *name);
/*
 * Checks shapes against each kind's rules, single producers, no cycles,
 * every activation produced, positive dimensions without overflow; reorders
 * nothing.  err names the operator (and its src_line/src_col, with file).
 */
int sl_graph_validate(sl_graph *g, const char *file, sl_error *err);
int64_t sl_graph_param_count(const sl_graph *g);
/* Samples of one micro-step: the first dimension of the model's first input
 * (tokens), 1 without inputs; *seq (may be NULL) gets its second (0 if none). */
int64_t sl_graph_batch(const sl_graph *g, int64_t *seq);
int64_t sl_tensor_elems(const sl_tensor *t);
int sl_dtype_size(sl_dtype dt);
const char *sl_dtype_name(sl_dtype dt);
int sl_dtype_from_name(const char *s);		/* -1 if unknown */
const char *sl_role_name(sl_role r);
int sl_role_from_name(const char *s);
const char *sl_op_kind_name(sl_op_kind k);
int sl_op_kind_from_name(const char *s);	/* -1 if unknown */

/* ------------------------------------------------------------------ recipe */

/*
 * How the user trains: what a training step keeps and computes depends on
 * it as much as on the sharding (recipe.c; doc/cost-model.md has every
 * formula).  Defaults follow common practice: flash attention, bf16 weights
 * with fp32 master weights and Adam states, no recomputation.
 */
typedef enum sl_attention {
	SL_ATTN_FLASH,		/* fused: keeps output and log-sum-exp, no s^2 tensor */
	SL_ATTN_NAIVE,		/* softmax(QK^T)V materialised: keeps the s^2 tensors */
	SL_ATTN_COUNT
} sl_attention;

typedef enum sl_precision {
	SL_PREC_BF16,		/* bf16 weights, fp32 master + Adam (ZeRO/FSDP): 16 B/param */
	SL_PREC_MEGATRON,	/* bf16 weights, fp32 main grads, fp32 master + Adam: 18 B/param */
	SL_PREC_AMP,		/* fp32 weights under bf16 autocast: 16 B/param + bf16 copies */
	SL_PREC_FP32,		/* everything fp32: 16 B/param, 4-byte activations */
	SL_PREC_FP8,		/* Transformer Engine: the layers' matmuls in FP8,
				 * bf16 weights with fp32 main grads and master +
				 * Adam (18 B/param) and an FP8 copy of each weight */
	SL_PREC_FP16,		/* fp16 weights and grads, fp32 master + Adam, loss scaling: 16 B/param */
	SL_PREC_COUNT
} sl_precision;

typedef enum sl_recompute {
	SL_RECOMP_NONE,		/* keep everything for backward */
	SL_RECOMP_SELECTIVE,	/* attention core recomputed (Korthikanti et al.) */
	SL_RECOMP_FULL,		/* only each layer's input kept; layer re-run in backward */
	SL_RECOMP_AUTO,		/* the solver chooses per layer */
	SL_RECOMP_COUNT
} sl_recompute;

/*
 * The framework a plan is launched with.  Under one, a plan holds only what
 * that framework can run, costed as it runs it (its memory rules, its
 * overlap of communication), and its exports launch exactly that plan;
 * free is the per-operator search over every strategy of the space.
 */
typedef enum sl_framework {
	SL_FW_FREE,		/* per operator, any strategy of the space */
	SL_FW_MEGATRON,		/* Megatron-LM (megatron/training/arguments.py) */
	SL_FW_TORCHTITAN,	/* torchtitan: FSDP2, TP, PP, CP (PyTorch native) */
	SL_FW_DEEPSPEED,	/* DeepSpeed: ZeRO 0-3, PipelineModule */
	SL_FW_COUNT
} sl_framework;
const char *sl_framework_name(sl_framework f);		/* "megatron" */
int sl_framework_from_name(const char *s);		/* -1 if unknown */
/* "Megatron-LM", "torchtitan", "DeepSpeed", "per-operator (free)" */
const char *sl_framework_title(sl_framework f);

/*
 * Which weights a step trains (recipe.c; doc/cost-model.md, "Fine-tuning").
 * Pre-training and full fine-tuning train every weight: the same step.
 * LoRA (Hu et al. 2021, as PEFT builds it, peft/tuners/lora/layer.py)
 * freezes every weight of the model and trains, beside each targeted
 * matmul y = x W of a layer, an adapter y += (x A) B: A of k x r and B of
 * r x n elements.  QLoRA (Dettmers et al. 2023) stores the frozen weights
 * of the layers' matmuls in 4-bit NF4 as bitsandbytes does.
 */
typedef enum sl_finetune {
	SL_FT_NONE,		/* pre-training: every weight trained */
	SL_FT_FULL,		/* full fine-tuning: every weight trained */
	SL_FT_LORA,		/* adapters over frozen weights in their precision */
	SL_FT_QLORA,		/* adapters over frozen 4-bit NF4 weights */
	SL_FT_COUNT
} sl_finetune;
const char *sl_finetune_name(sl_finetune f);		/* "lora" */
int sl_finetune_from_name(const char *s);		/* -1 if unknown */

/*
 * The matmuls of a layer an adapter may target, named as PEFT names
 * LLaMA's modules (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj,
 * down_proj); a GPT or BERT layer's first and second feed-forward matmuls
 * are up and down.  The default, q and v at rank 8, is PEFT's
 * (peft/utils/constants.py, TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING;
 * peft/tuners/lora/config.py, LoraConfig.r).
 */
enum {
	SL_LORA_Q = 1 << 0, SL_LORA_K = 1 << 1, SL_LORA_V = 1 << 2,
	SL_LORA_O = 1 << 3, SL_LORA_GATE = 1 << 4, SL_LORA_UP = 1 << 5,
	SL_LORA_DOWN = 1 << 6,
	SL_LORA_ALL = (1 << 7) - 1,
	SL_LORA_DEFAULT = SL_LORA_Q | SL_LORA_V
};
#define SL_LORA_DEFAULT_RANK 8
/*
 * "q,v", "all" or PEFT's module names ("q_proj,v_proj") into a set of
 * SL_LORA_ bits; false (why says which name) for another.
 */
bool sl_lora_targets_parse(const char *s, unsigned *out, char *why, size_t len);
/* "q,v"; "all" for every one. */
const char *sl_lora_targets_format(unsigned t, char *buf, size_t len);

/*
 * The optimizer's implementation (recipe.c, sl_recipe_optim_bytes): one
 * fused AdamW kernel that reads and writes each parameter's states once
 * (apex and Transformer Engine FusedAdam, torch.optim.AdamW(fused=True)),
 * or PyTorch's foreach AdamW, eight passes over them.
 */
typedef enum sl_optimizer {
	SL_OPTIM_FUSED,
	SL_OPTIM_FOREACH,
	SL_OPTIM_COUNT
} sl_optimizer;
const char *sl_optimizer_name(sl_optimizer o);		/* "fused" */
int sl_optimizer_from_name(const char *s);		/* -1 if unknown */

typedef struct sl_recipe {
	sl_framework framework;	/* who runs the step (default free) */
	sl_attention attention;
	sl_precision precision;
	sl_recompute recompute;
	int64_t micro_batch;	/* samples per device per micro-step (default 1) */
	int64_t global_batch;	/* samples per optimizer step; 0: one micro-step */
	int64_t seq;		/* training sequence length; 0: the model's */
	sl_optimizer optimizer;	/* default fused */
	/* the data-parallel gradient reduction waits for the end of the
	 * backward pass (Megatron-LM without --overlap-grad-reduce, its local
	 * DDP of 2021); default false: reduced in buckets during it */
	bool no_grad_overlap;
	/* no gradient-norm clipping (every framework clips at 1.0 unless told
	 * otherwise: Megatron-LM --clip-grad 0) */
	bool no_clip_grad;
	/* states of a parameter that is not +z, divided over the ranks that
	 * hold the same piece of it: 0 none, 1 optimizer states (ZeRO-1,
	 * Megatron-LM's distributed optimizer), 2 and gradients (ZeRO-2);
	 * -1 (sl_hybrid_search only): the search chooses, its result says */
	int shard_states;
	/* which weights are trained: adapters of rank lora_rank on the
	 * matmuls lora_targets (SL_LORA_ bits) names, under lora and qlora */
	sl_finetune finetune;
	int lora_rank;
	unsigned lora_targets;
} sl_recipe;

void sl_recipe_default(sl_recipe *r);
const char *sl_attention_name(sl_attention a);		/* "flash" */
int sl_attention_from_name(const char *s);		/* -1 if unknown */
const char *sl_precision_name(sl_precision p);		/* "bf16" */
int sl_precision_from_name(const char *s);
const char *sl_recompute_name(sl_recompute r);		/* "selective" */
int sl_recompute_from_name(const char *s);
/* One line for reports: "flash attention, bf16 mixed precision, ...". */
const char *sl_recipe_describe(const sl_recipe *r, char *buf, size_t len);
/*
 * What each byte of a parameter's training state is: the parts a recipe
 * keeps per element, each counted in one memory category (parameters:
 * the weight; gradients: its gradient; optimizer: the fp32 master copy of
 * a bf16 weight and Adam's two moments).
 */
typedef enum sl_state_part {
	SL_PART_WEIGHT,		/* the weight compute reads */
	SL_PART_GRAD,		/* its gradient (Megatron-LM's fp32 main gradient) */
	SL_PART_MASTER,		/* fp32 master copy of a weight kept in bf16 */
	SL_PART_ADAM_M,		/* Adam's first moment (exp_avg) */
	SL_PART_ADAM_V,		/* Adam's second moment (exp_avg_sq) */
	SL_PART_COUNT
} sl_state_part;
/* "weight", "grad", "master", "adam_m", "adam_v" */
const char *sl_state_part_name(sl_state_part p);
/* The memory category a part counts in (sl_mem_cat). */
int sl_state_part_cat(sl_state_part p);
/* Bytes per parameter element of part p under r; 0 when r keeps none. */
int sl_recipe_part_bytes(const sl_recipe *r, sl_state_part p);
/*
 * Bytes of training state per parameter element, by memory category
 * (sl_mem_cat: parameters, gradients, optimizer): the parts counted in it;
 * 0 for other categories.
 */
int sl_recipe_state_bytes(const sl_recipe *r, int cat);
/* Whether the recipe freezes the model's weights (LoRA, QLoRA). */
bool sl_recipe_frozen(const sl_recipe *r);
/*
 * Bytes a frozen weight of elems elements takes on a device: its weight
 * precision (sl_recipe_part_bytes), or, quantised (QLoRA's layers'
 * matmuls), bitsandbytes' NF4 layout with double quantisation
 * (sl_nf4_bytes).
 */
int64_t sl_recipe_frozen_bytes(const sl_recipe *r, int64_t elems, bool quantised);
/*
 * bitsandbytes' 4-bit storage of a weight of elems elements
 * (bitsandbytes/functional.py, quantize_4bit, blocksize 64): two values a
 * byte, the fp32 absmax of each block of 64, and the NF4 code (16 fp32);
 * double-quantised (compress_statistics, QLoRA's setting), the absmaxes
 * less their mean as one byte each, blockwise quantised by 256 with an
 * fp32 absmax per 256 blocks, and the mean (one fp32).
 */
int64_t sl_nf4_bytes(int64_t elems, bool double_quant);
/* Bytes per adapter element of part p: PEFT keeps adapters in fp32
 * (get_peft_model(autocast_adapter_dtype=True)): fp32 weight and
 * gradient, Adam's fp32 moments, no master copy. */
int sl_recipe_adapter_part_bytes(sl_state_part p);
/* Bytes per element of an activation the step keeps in floating point:
 * 2 under bf16 recipes, 4 under fp32. */
int sl_recipe_act_bytes(const sl_recipe *r);
/*
 * Gradient accumulation steps of a graph batch of graph_batch samples
 * (one micro-step of the whole mesh): global_batch / graph_batch, 1 when no
 * global batch is given.  -1 when it does not divide.
 */
int64_t sl_recipe_accum_steps(const sl_recipe *r, int64_t graph_batch);
/*
 * Bytes per element each tensor of g is read and written at by the step's
 * kernels (width[t]): the recipe's activation width, parameters in their
 * weight precision, integers as stored, and under autocast (amp) 4 for
 * the tensors autocast leaves in fp32 (embedding outputs, norms, softmax,
 * the loss, and elementwise results of an fp32 input).
 */
void sl_recipe_widths(const sl_recipe *r, const sl_graph *g, uint8_t *width);
/*
 * The optimizer step's bytes read plus written per parameter element a
 * device updates (doc/cost-model.md, "The optimizer step"): AdamW over the
 * fp32 states, the copy to the model's weights where there are fp32
 * master weights, gradient-norm clipping, and the gradient buffer cleared
 * for the next step, as the recipe's framework does each.
 */
double sl_recipe_optim_bytes(const sl_recipe *r);
/*
 * Bytes of gradient per bucket of the data-parallel reduction that runs
 * during the backward pass, for gradients of grad_bytes per element
 * reduced over dp devices, as the recipe's framework buckets them
 * (recipe.c); INT64_MAX when it waits for the end of the backward pass.
 */
int64_t sl_recipe_grad_bucket(const sl_recipe *r, int dp, int grad_bytes);

/* ------------------------------------------------------------------ models */

typedef enum sl_family {
	SL_FAM_GPT, SL_FAM_BERT, SL_FAM_LLAMA,
	SL_FAM_MOE,		/* LLaMA-style blocks whose MLPs are mixtures of experts */
	SL_FAM_COUNT
} sl_family;

/* Tied input and output embeddings: the family's habit, or said. */
typedef enum sl_tie { SL_TIE_DEFAULT, SL_TIE_YES, SL_TIE_NO } sl_tie;

/*
 * The sizes of a generated transformer.  Every member past max_positions is
 * 0 (or false) for "the family's way": GPT and BERT tie their embeddings
 * and have every bias, LLaMA and MoE have none.  sl_gen_fields lists them
 * with their names in model files and on the command line.
 */
typedef struct sl_gen_config {
	sl_family family;
	char name[64];
	int layers;
	int64_t hidden, heads, kv_heads, ffn, vocab, seq;
	int64_t batch;		/* batch dimension of the graph */
	int64_t max_positions;	/* Hugging Face config: the model's longest
				 * sequence, when seq was capped below it (else 0) */
	/* what a Hugging Face config may change of a family's blocks */
	int64_t head_dim;	/* 0: hidden / heads */
	sl_tie tie;
	bool qkv_bias;		/* LLaMA/MoE: biases of q, k and v (Qwen2) */
	bool out_bias;		/* LLaMA/MoE: bias of the attention's output */
	bool mlp_bias;		/* LLaMA/MoE: biases of gate, up and down */
	bool qk_norm;		/* RMSNorm of every query and key head (Qwen3) */
	bool sinks;		/* a learned softmax logit per head (GPT-OSS) */
	int64_t window;		/* sliding-window attention: keys per query; 0 none */
	int window_first;	/* the first layer that slides ... */
	int window_every;	/* ... and every this many after it (0: 1) */
	int64_t type_vocab;	/* BERT token types (0: none) */
	/* mixture of experts (family moe) */
	int64_t experts;	/* routed experts per MoE layer */
	int64_t topk;		/* experts each token is routed to */
	int64_t moe_ffn;	/* hidden size of one expert (0: ffn) */
	int64_t shared_ffn;	/* hidden size of the shared experts together; 0 none */
	bool shared_gate;	/* a sigmoid gate on the shared experts (Qwen2-MoE) */
	bool router_bias;	/* a bias on the router's logits (GPT-OSS) */
	bool score_bias;	/* a bias that only selects experts (DeepSeek-V3) */
	bool expert_bias;	/* biases inside the experts (GPT-OSS) */
	int first_dense;	/* the first layers have a dense MLP of ffn */
	int moe_every;		/* from there, layer l is MoE when l % moe_every
				 * == moe_phase (0: every layer) */
	int moe_phase;
	double capacity;	/* capacity factor; 0: dropless (balanced mean) */
	/* multi-head latent attention (DeepSeek-V2/V3); kv_lora 0: none */
	int64_t q_lora;		/* query compression; 0: a plain query matmul */
	int64_t kv_lora, qk_nope, qk_rope, v_head;
} sl_gen_config;

/* A member of sl_gen_config as model files and the command line name it. */
typedef enum sl_gen_ftype {
	SL_GEN_INT, SL_GEN_COUNT,	/* int64_t member; int member */
	SL_GEN_BOOL, SL_GEN_REAL, SL_GEN_TIE
} sl_gen_ftype;
typedef struct sl_gen_field {
	const char *key;	/* "experts": the generator's key; flag --experts */
	sl_gen_ftype type;
	size_t off;		/* offsetof(sl_gen_config, ...) */
	int64_t min, max;	/* integers: 0 is always "the family's" */
	unsigned families;	/* 1u << sl_family where it applies */
	const char *help;	/* N_(), for gen --help */
} sl_gen_field;
/* The table, ended by a row whose key is NULL. */
extern const sl_gen_field sl_gen_fields[];
/* Sets field f of c from text ("8", "true", "1.25"); SL_EINPUT with a
 * message naming the field when the value is not of its type and bounds. */
int sl_gen_field_set(sl_gen_config *c, const sl_gen_field *f, const char *text,
    sl_error *err);
/* The field named key, or NULL. */
const sl_gen_field *sl_gen_field_find(const char *key);

/*
 * A graph's mixtures of experts as the frameworks describe them (moe.c):
 * experts 0 for a model without.  layer_freq is Megatron-LM's
 * --moe-layer-freq: "1" when every layer is a mixture, else a pattern such
 * as "([0]*3+[1]*58)".  The sizes of latent attention come along (kv_lora
 * 0: none), as Megatron-LM's MLA arguments.
 */
typedef struct sl_moe_arch {
	int64_t experts, topk, moe_ffn, shared_ffn;
	int layers, moe_layers;
	char layer_freq[128];
	double capacity;
	bool gated, shared_gate, router_bias, score_bias, expert_bias;
	int64_t q_lora, kv_lora, qk_nope, qk_rope, v_head;
} sl_moe_arch;
int sl_moe_arch_of(const sl_graph *g, sl_moe_arch *a);

/* Parameters a token's forward pass reads: every parameter but the routed
 * experts', of which top-k of E (sl_graph_active_params).  embedding (may
 * be NULL) gets the elements of tables read only by lookups (a token reads
 * one row of them): publishers count active parameters with them (Mistral,
 * Qwen) or without (DeepSeek, OpenAI). */
int64_t sl_graph_active_params(const sl_graph *g, int64_t *embedding);

/* The 2-layer toy sizes of a family (tests); then override fields. */
void sl_gen_defaults(sl_family fam, sl_gen_config *c);
/* A family's real defaults for every member a user leaves out: GPT-2
 * (12 x 768, 12 heads, vocabulary 50257, sequence 1024), BERT-base (12 x 768,
 * 12 heads, 30522, 512), LLaMA-2-7B (32 x 4096, 32 heads, 32000, 4096);
 * kv_heads = heads, ffn 0 (the family's rule, sl_gen_ffn). */
void sl_gen_family_defaults(sl_family fam, sl_gen_config *c);
/* Feed-forward size when none is given: 4h for GPT and BERT; LLaMA's
 * 2/3 x 4h rounded up to a multiple of 256 (11008 for h = 4096). */
int64_t sl_gen_ffn(sl_family fam, int64_t hidden);
/* Longest sequence a Hugging Face config trains at unless --seq says. */
#define SL_HF_MAX_SEQ 4096
/* Writes c as a generator description (shardlab-model(5)): opened with
 * sl_model_open, its batch follows --micro-batch and the devices like the
 * bundled models'.  Atomically; path "-" = stdout. */
int sl_gen_save(const sl_gen_config *c, const char *path, sl_error *err);
int sl_family_from_name(const char *s);
const char *sl_family_name(sl_family fam);	/* "gpt", ..., "moe" */
/* Checks c as sl_gen does; *field (may be NULL) gets the key of the member
 * the error is about (sl_gen_fields), or "family" or "batch". */
int sl_gen_check(const sl_gen_config *c, const char **field, sl_error *err);
/* Fills c from a Hugging Face config.json (err names the file/line). */
int sl_gen_from_hf_config(const char *path, sl_gen_config *c, sl_error *err);
sl_graph *sl_gen(const sl_gen_config *c, sl_error *err);

typedef struct sl_model_opts {
	int64_t micro_batch;	/* per device; default 1 */
	int devices;		/* mesh size: generated models get batch = micro_batch * devices */
	int64_t seq;		/* training sequence length of generated models; 0: the model's */
} sl_model_opts;

/*
 * Opens a model: a bundled name (data/models/NAME.json), a model JSON file,
 * or a generator description file.  IOPDDL problems are not models: see
 * sl_iopddl_load.  Returns NULL with err set (code SL_EINPUT for bad input).
 */
sl_graph *sl_model_open(const char *arg, const sl_model_opts *o, sl_error *err);
/* The file sl_model_open reads for arg (malloc'd): arg itself when such a
 * file exists, else a bundled model's; NULL when neither. */
char *sl_model_path(const char *arg);
sl_graph *sl_model_load_json(const char *path, sl_error *err);
sl_graph *sl_model_parse_json(const char *text, size_t len, const char *file,
    sl_error *err);
int sl_model_save_json(const sl_graph *g, const char *path, sl_error *err);
/* Names of bundled models, NULL-terminated, static. */
const char *const *sl_bundled_models(void);

/* ---------------------------------------------------------- hardware, mesh */

typedef struct sl_link {
	double bandwidth;	/* bytes/s, per direction */
	double latency;		/* seconds */
} sl_link;

/* Measured matmul throughput at a problem size (hardware profile "gemm"). */
typedef struct sl_gemm_point {
	double flops;		/* 2 m n k of the problem */
	double achieved;	/* FLOP/s measured */
} sl_gemm_point;

#define SL_MAX_GEMM_POINTS 64

typedef struct sl_hw {
	char name[64];
	char description[256];
	char device[64];
	int devices_per_node;
	/*
	 * Memory per device: what plans may use (memory_bytes) is the
	 * device's (capacity_bytes, the profile's "memory_bytes": what the
	 * CUDA driver reports) less what the runtime holds beyond any plan
	 * (reserve_bytes: the CUDA context, library workspaces, communication
	 * buffers, the caching allocator's rounding).
	 */
	int64_t memory_bytes;
	int64_t capacity_bytes;
	int64_t reserve_bytes;
	double flops;		/* dense bf16 peak per device */
	double fp8_flops;	/* dense FP8 peak; 0: no FP8 tensor cores */
	double mem_bandwidth;	/* bytes/s read plus written; 0: unknown (2.0e12 assumed) */
	/* bytes/s the optimizer step's kernels move (fused or foreach AdamW,
	 * the norm and scaling of clipping, master-weight copies), measured
	 * from whole steps; 0: memory_bandwidth x SL_OPTIM_BW_SHARE */
	double optim_bandwidth;
	double matmul_efficiency; /* fraction of peak when no gemm table; 0: 0.7 */
	double attention_flops;	/* fused attention FLOP/s without a table; 0: matmul rate */
	double launch_overhead;	/* seconds: least time of one kernel, issue to issue */
	double unvec_bandwidth;	/* bytes/s of elementwise kernels PyTorch does
				 * not vectorize (dtype-converting copies,
				 * broadcast or strided operands); 0: mem_bandwidth */
	double unaligned_flops;	/* FLOP/s of a matmul whose leading dimensions
				 * are not multiples of 16 bytes; 0: flops / 8 */
	int n_gemm;		/* measured points, by increasing flops */
	sl_gemm_point gemm[SL_MAX_GEMM_POINTS];
	int n_attention;	/* fused attention forward+backward, the same way */
	sl_gemm_point attention[SL_MAX_GEMM_POINTS];
	int n_gemm_fp8;		/* FP8 matmuls, the same way (0: the bf16
				 * table scaled by fp8_flops / flops) */
	sl_gemm_point gemm_fp8[SL_MAX_GEMM_POINTS];
	sl_link intra, inter;
	/* the host: each device's link to host memory (one direction), and
	 * the parameters per second its share of the host's cores update
	 * with CPU Adam while every device of the node does the same
	 * (optimizer offload); 0 when the profile does not say */
	sl_link host;
	double host_adam;
} sl_hw;

/*
 * The share of the copy bandwidth that PyTorch's optimizer kernels reach
 * when a profile has not measured them: an H100's (fused AdamW and
 * clipping of gpt-1.7b and a 1B LLaMA, 2.49e12 of 2.98e12 bytes/s,
 * tests/data/fidelity/steps-h100.jsonl; doc/cost-model.md).
 */
#define SL_OPTIM_BW_SHARE 0.84

typedef struct sl_axis {
	int size;
	sl_link link;
} sl_axis;

typedef struct sl_mesh {
	int n_axes;		/* 1 or 2 */
	sl_axis axes[SL_MAX_AXES];
	int n_devices;
	sl_hw hw;
} sl_mesh;

#define SL_MAX_TOPO_AXES 4

/*
 * What an axis carries, a contract on the strategies its operators take
 * (sl_strategy_roles_ok): dp the batch and ZeRO's sharded states, tp
 * tensor-parallel splits (anything but the batch), pp the stages, cp the
 * sequence (attention's K and V passed round its ring).
 */
typedef enum sl_axis_role {
	SL_AXIS_DP,		/* data (and sharded-data) parallel */
	SL_AXIS_TP,		/* tensor parallel */
	SL_AXIS_PP,		/* pipeline stages */
	SL_AXIS_CP,		/* context parallel: the sequence */
	SL_AXIS_ROLE_COUNT
} sl_axis_role;
const char *sl_axis_role_name(sl_axis_role r);	/* "dp", "tp", "pp", "cp" */

int sl_hw_load(const char *name_or_path, sl_hw *hw, sl_error *err);
/* The file sl_hw_load reads for name_or_path (malloc'd): a bundled
 * profile's for a name, else the name as a file; NULL when neither. */
char *sl_hw_path(const char *name_or_path);
/*
 * The reserve a profile without "reserve_bytes" gets: 3 GiB, a quarter of
 * a device under 12 GiB (hardware.c says why).
 */
int64_t sl_hw_default_reserve(int64_t capacity);
/* "usable 76.18 GiB of 79.18 GiB (reserve 3.00 GiB)": what every report
 * says of a device's memory. */
const char *sl_hw_memory_text(const sl_hw *hw, char *buf, size_t len);
/* The host link and CPU Adam rate of hw, or what is assumed when the
 * profile does not say (doc/cost-model.md, "Optimizer offload"). */
sl_link sl_hw_host_link(const sl_hw *hw);
double sl_hw_host_adam(const sl_hw *hw);
/* Writes hw as a profile file (atomically; "-" is stdout). */
int sl_hw_write(const sl_hw *hw, const char *path, sl_error *err);
/*
 * Replaces the figures of hw that the GPU runner measured (its --profile
 * output at path): device name and memory, the gemm table, memory
 * bandwidth, launch overhead and, with 2 or more GPUs, the intra-node link
 * and node size.  The rest (peak, attention, inter-node link) stays.  The
 * memory plans may use is the device's less a reserve for the runtime
 * (the CUDA context, library workspaces, communication buffers, the
 * allocator's rounding), which *reserve is set to (hw->reserve_bytes).
 */
int sl_hw_apply_measured(sl_hw *hw, const char *path, int64_t *reserve,
    sl_error *err);

const char *const *sl_bundled_hardware(void);
/* "8", "2x4": shape parse; 0 or error. */
int sl_mesh_parse(const char *s, int *n_axes, int shape[SL_MAX_AXES], sl_error *err);
/*
 * Devices are numbered row-major and fill nodes in order.  The inner (last)
 * axis uses the intra-node link when each of its groups lies in one node;
 * the outer axis only when the whole mesh fits one node.  Errors: sizes
 * below 1, more than 65536 devices, or a mesh beyond one node on a profile
 * without an inter-node link.
 */
int sl_mesh_make(const sl_hw *hw, int n_axes, const int *shape, sl_mesh *m,
    sl_error *err);
/* Device id -> coordinates and back (row-major). */
void sl_mesh_coords(const sl_mesh *m, int dev, int coord[SL_MAX_AXES]);

/* ------------------------------------------------------------ cost formulas */

typedef enum sl_coll {
	SL_COLL_ALL_REDUCE, SL_COLL_ALL_GATHER, SL_COLL_REDUCE_SCATTER,
	SL_COLL_ALL_TO_ALL, SL_COLL_COUNT
} sl_coll;
const char *sl_coll_name(sl_coll c);
/*
 * Ring collective time in ns over n devices of a link, B bytes of the full
 * tensor (formulas in doc/cost-model.md).  0 when n <= 1 or bytes <= 0;
 * saturates at INT64_MAX (also for a link without bandwidth).
 */
int64_t sl_coll_time(sl_coll c, int n, int64_t bytes, const sl_link *l);

/* ----------------------------------------------------------- strategy space */

/* Sharding of one tensor: per dimension the mesh axes (bit a = axis a) it is split over. */
typedef struct sl_spec {
	uint8_t split[SL_MAX_RANK];
	uint8_t partial;	/* axes over which values are pending partial sums */
	uint8_t zero;		/* parameters: axes over which states are sharded (ZeRO-3) */
} sl_spec;
/* "S0,R,S1" / "S01,R|P1" / "R,S1|Z0" */
const char *sl_spec_format(const sl_spec *s, int rank, char *buf, size_t len);

typedef struct sl_strategy {
	char name[32];			/* "dp", "col", "dp0.col1", "dp+z" */
	uint8_t loop_axes[SL_MAX_LOOP];	/* axes splitting each loop dim */
	uint8_t zero;			/* axes sharding parameter states */
	sl_spec spec[SL_MAX_OP_TENSORS];/* inputs then outputs */
} sl_strategy;

/*
 * What a loop dimension is to the model: strategies are named after the
 * roles they split ("dp", "dp0.col1"), and the baselines choose by role.
 */
typedef enum sl_loop_role {
	SL_LOOP_NONE,		/* no dimension: an axis that splits nothing */
	SL_LOOP_DP,		/* batch */
	SL_LOOP_SEQ,		/* sequence */
	SL_LOOP_HEAD,		/* attention heads */
	SL_LOOP_ROW,		/* a matmul's contraction */
	SL_LOOP_COL,		/* a matmul's output features, the last dimension */
	SL_LOOP_VOCAB,		/* vocabulary */
	SL_LOOP_HIDDEN,		/* a normalised (unsplittable) last dimension */
	SL_LOOP_BATCH,		/* a further leading dimension */
	SL_LOOP_D2, SL_LOOP_D3,	/* a reshape's kept third and fourth dimensions */
	SL_LOOP_EXPERT,		/* experts of a mixture: expert parallelism */
	SL_LOOP_ROLE_COUNT
} sl_loop_role;
/* "dp", "seq", "head", "row", "col", "vocab", "h", "b", "d2", "d3", "exp";
 * NULL for none. */
const char *sl_loop_role_name(sl_loop_role r);

/* Loop-dimension binding of one operator (from the kind table). */
typedef struct sl_binding {
	int n_loop;
	int64_t size[SL_MAX_LOOP];
	bool splittable[SL_MAX_LOOP];
	sl_loop_role role[SL_MAX_LOOP];
	/* loop dim of each tensor dim, inputs then outputs; -1 = none */
	int8_t map[SL_MAX_OP_TENSORS][SL_MAX_RANK];
} sl_binding;

/*
 * Communication one strategy or edge causes, by collective (ns, bytes
 * moved), and memory of one device by category (bytes), with their sums
 * (tally.c).
 */
typedef struct sl_comm {
	int64_t ns[SL_COLL_COUNT];
	int64_t bytes[SL_COLL_COUNT];
} sl_comm;
int64_t sl_comm_total(const sl_comm *c);
void sl_comm_add(sl_comm *to, const sl_comm *c);

typedef enum sl_mem_cat {
	SL_CAT_PARAMS, SL_CAT_GRADS, SL_CAT_OPTIM, SL_CAT_ACTS, SL_CAT_BUFFERS,
	SL_CAT_COUNT
} sl_mem_cat;
typedef struct sl_mem {
	int64_t params, grads, optim, acts, buffers;
} sl_mem;
int64_t sl_mem_total(const sl_mem *m);
/* "parameters", "gradients", "optimizer", "activations", "buffers" (plan JSON keys). */
const char *sl_mem_cat_name(int cat);
int sl_mem_cat_from_name(const char *s);	/* -1 if unknown */
int64_t sl_mem_get(const sl_mem *m, int cat);
void sl_mem_add(sl_mem *m, int cat, int64_t bytes);

typedef struct sl_space_op {
	const sl_binding *bind;	/* shared as strat is (sl_space.strat_of) */
	int n_strat;
	sl_strategy *strat;
} sl_space_op;

/* An edge of the strategy graph: a tensor from its producer (or owner) to a consumer. */
typedef struct sl_space_edge {
	int tensor;
	int src, dst;		/* operators */
	int src_slot, dst_slot;	/* tensor slot in each operator (inputs then outputs) */
} sl_space_edge;

typedef struct sl_space_opts {
	bool zero;		/* offer ZeRO-3 / OSDP variants (+z); default true */
	/*
	 * Mesh axes that +z leaves replicated (HSDP, torchtitan's
	 * parallelism.data_parallel_replicate_degree, torchtitan/config/
	 * job_config.py; the mesh dimension "dp_replicate" of
	 * torchtitan/distributed/parallel_dims.py): states are sharded over
	 * the other replicating axes only, the parameters are gathered within
	 * that shard group, and the gradient is reduce-scattered there and
	 * its shard all-reduced across these axes.  Default 0: full FSDP.
	 */
	uint8_t zero_replicate;
	sl_recipe recipe;	/* how the step is trained (sl_recipe_default) */
} sl_space_opts;
/* zero on, default recipe. */
void sl_space_opts_default(sl_space_opts *o);

/*
 * A matmul under LoRA (space.c): the projections its adapters target
 * (parts: one adapter each, A of k x r and B of r x its columns; n: their
 * columns summed, of the weight's n), and whether its frozen weight is
 * stored in 4-bit NF4 (QLoRA: every matmul of the layers).
 */
typedef struct sl_adapter {
	int parts;
	int64_t n;
	bool nf4;
} sl_adapter;

typedef struct sl_space {
	const sl_graph *g;
	sl_mesh mesh;
	sl_space_opts opts;
	/* per graph layer: SL_RECOMP_NONE, _SELECTIVE or _FULL (auto resolves
	 * to these per layer); operators outside layers follow none */
	uint8_t *layer_recompute;
	sl_space_op *ops;	/* one per graph operator */
	int n_edges;
	sl_space_edge *edges;
	int *owner;		/* per tensor: operator that holds a parameter's states, or -1 */
	bool *consumed;		/* per tensor: some operator reads it */
	int *saver;		/* per tensor: the first operator that keeps it for
				 * backward (a tensor two operators keep is kept
				 * once), or -1 */
	/* per tensor: whether the step forms its gradient (under LoRA only
	 * what depends on an adapter; else every floating-point tensor that
	 * is not data fed to the step) */
	uint8_t *grad;
	/* per operator: its LoRA adapter and how its weight is stored */
	sl_adapter *adapter;
	uint8_t *width;		/* per tensor: bytes per element the step's
				 * kernels move it at (sl_recipe_widths) */
	bool grads_persist;	/* parameter gradients held through the step
				 * (Megatron-LM's main gradients, or
				 * accumulation over micro-steps) */
	/* cost tables on device 0, filled by sl_space_build */
	int64_t **node_mem, **node_ns;	/* [op][strategy] */
	int64_t **edge_mem, **edge_ns;	/* [edge][s_src * k_dst + s_dst] */
	/* per operator: the first operator of an equal layer alike to it in
	 * everything its costs read (the same strategies and costs), or itself;
	 * holds while every layer recomputes alike */
	int *like;
	/* the rows shared, read-only: per operator, the operator whose strat
	 * array it points at, and whose node_mem and node_ns rows; per edge,
	 * the edge whose table rows it points at (itself when its own) */
	int *strat_of, *node_of, *edge_of;
} sl_space;

sl_space *sl_space_build(const sl_graph *g, const sl_mesh *m,
    const sl_space_opts *o, sl_error *err);
void sl_space_free(sl_space *s);
int sl_space_find_strategy(const sl_space *s, int op, const char *name);
/* Every layer recomputes r (not auto); node tables follow. */
void sl_space_set_recompute(sl_space *sp, sl_recompute r);
/* Every layer's recomputation at once (modes[l]: none, selective or full);
 * runs of equal layers recomputed alike share one computation of their
 * tables.  Nothing is done when nothing changes. */
void sl_space_set_layers_recompute(sl_space *s, const uint8_t *modes);

/*
 * Costs on the device with coordinates coord (NULL = device 0, which always
 * holds the largest shard of every tensor).  Node: memory the operator's
 * strategy puts on the device and the time of collectives it triggers
 * (backward partial-gradient all-reduces, gradient sync, ZeRO gathers).
 * Edge: transient buffer and resharding time between the two strategies.
 */
void sl_node_cost(const sl_space *s, int op, int strat, const int *coord,
    sl_mem *mem, sl_comm *comm);
void sl_edge_cost(const sl_space *s, int edge, int s_src, int s_dst,
    const int *coord, sl_mem *mem, sl_comm *comm);
/* The time of the part of sl_node_cost's communication that serves the
 * operator's parameters (gradient reduction, ZeRO-3 gathers), which can
 * overlap backward compute (eval.c). */
int64_t sl_node_param_comm_ns(const sl_space *s, int op, int strat);
/* Local size of dimension d of a tensor of spec sp on device coord
 * (local.c). */
int64_t sl_local_dim(const sl_mesh *m, const sl_spec *sp, int d, int64_t size,
    const int *coord);
int64_t sl_local_elems(const sl_mesh *m, const sl_spec *sp, const sl_tensor *t,
    const int *coord);

/*
 * Compute of one operator's shard on device coord (NULL = device 0) under
 * its strategy (compute.c): forward and backward kernel time from FLOPs at
 * the profile's matmul throughput and bytes at its memory bandwidth, and
 * the forward time re-run in backward when the operator's layer recomputes.
 */
typedef struct sl_compute {
	int64_t flops_fwd, flops_bwd;	/* useful FLOPs of this shard */
	int64_t fwd_ns, bwd_ns;		/* kernel time, autocast's casts included */
	int64_t recompute_ns;		/* forward re-run in backward (0: kept) */
	/* once per optimizer step: the parameter elements whose states this
	 * operator holds on the device (its ZeRO shard), those the optimizer
	 * updates there (fewer under recipe.shard_states), and the time the
	 * optimizer step takes over them on the device
	 * (sl_recipe_optim_bytes at the memory bandwidth; and the all-gather
	 * of the updated weights under shard_states, unless Megatron-LM
	 * overlaps it with the next forward: gather_ns of optim_ns) */
	int64_t param_elems, optim_elems;
	int64_t optim_ns, gather_ns;
} sl_compute;
void sl_node_compute(const sl_space *s, int op, int strat, const int *coord,
    sl_compute *out);
/* Does the backward pass re-run operator op's forward, or part of it (its
 * layer's recomputation: every operator under full, the attention core
 * under selective with naive attention, under torchtitan's selective what
 * op SAC does not save; sl_op_recompute_share)? */
bool sl_op_recomputed(const sl_space *s, int op);
/* The same rule for an operator of a layer recomputed as mode. */
bool sl_recomputes(const sl_recipe *r, const sl_op *op, sl_recompute mode);
/*
 * torchtitan's selective recomputation (activation_checkpoint.mode
 * "selective", selective_ac_option "op": torchtitan/distributed/
 * activation_checkpoint.py, _apply_op_sac, with the save list of
 * torchtitan/models/llama3/infra/parallelize.py): each transformer block
 * is checkpointed, and its forward keeps the outputs of the operators
 * the policy saves, matrix products (every second one recomputed: the
 * policy counts the block's mm calls and saves the odd ones), attention
 * (SDPA) and reduce-scatters; the backward re-runs the block's other
 * operators.  Under torchtitan a layer recomputed "selective" is this.
 * sl_sac_saved_share is the share of operator v's output the policy
 * saves (a fused qkv is torchtitan's wq, wk, wv: three mm, of which wk's
 * columns are recomputed); 0 outside layers.
 */
bool sl_layer_sac(const sl_recipe *r, const sl_op *op, sl_recompute mode);
/* The same for operator op's layer as the space recomputes it. */
bool sl_op_sac(const sl_space *sp, const sl_op *op);
double sl_sac_saved_share(const sl_graph *g, int v);
/*
 * The share of operator v's forward that the backward pass re-runs when
 * its layer recomputes as mode: 1 under full, and where sl_recomputes
 * says; under torchtitan's selective, what op SAC does not save (1 -
 * sl_sac_saved_share for a matrix product, 0 for attention, 1 for the
 * others).  0 outside layers.
 */
double sl_recompute_share(const sl_recipe *r, const sl_graph *g, int v,
    sl_recompute mode);
/* sl_recompute_share of v in its layer's mode on the space. */
double sl_op_recompute_share(const sl_space *s, int v);
/*
 * Model FLOPs (doc/cost-model.md, "Model FLOPs and MFU"): an operator's
 * forward as Megatron-LM and PaLM count it (2 m n k per matrix product,
 * 4 b h s^2 d for attention, whole score matrix; 0 for other kinds), and
 * a whole forward and backward pass of the graph, three times its
 * forward.  Recomputation is not model work.
 */
double sl_op_model_flops(const sl_graph *g, const sl_op *op);
double sl_model_flops(const sl_graph *g);
/* The same for a step under recipe r (space.c): under LoRA, forward,
 * backward only where a gradient flows (no weight gradient of a frozen
 * weight), and the adapters' products; else sl_model_flops. */
double sl_recipe_model_flops(const sl_graph *g, const sl_recipe *r);
/* Forward FLOPs of causal attention op over batch samples and heads of its
 * query heads (0: the whole operator's). */
double sl_attention_flops(const sl_graph *g, const sl_op *op, int64_t batch,
    int64_t heads);
/*
 * Optimizer offload (DeepSpeed ZeRO-Offload) of elems parameter elements a
 * device holds: *d2h the gradients' copy to host memory (on the stream of
 * the gradient reduction, during backward), *host the CPU Adam step over
 * them and the updated weights' copy back (after it): the profile's host
 * link and CPU Adam rate (sl_hw_host_link, sl_hw_host_adam).
 */
void sl_offload_ns(const sl_hw *hw, const sl_recipe *r, int64_t elems,
    int64_t *d2h, int64_t *host);
/* Achieved matmul FLOP/s for one problem of f FLOPs (the profile's table). */
double sl_gemm_rate(const sl_hw *hw, double f);
/* Time of batch gemms of 2mnk FLOPs each as one kernel at the profile's
 * measured rate, memory bandwidth and launch overhead. */
int64_t sl_gemm_ns(const sl_hw *hw, int64_t m, int64_t n, int64_t k, int64_t batch);
/* Recomputation of one layer: rebuilds the node cost tables of its operators. */
void sl_space_set_layer_recompute(sl_space *s, int layer, sl_recompute r);

/* Objective weight: a term of mem bytes and ns time costs mem + round(alpha*ns/1000). */
int64_t sl_weigh(int64_t mem, int64_t ns, double alpha);

/* ----------------------------------------------------------------- problem */

/*
 * The pairwise min-sum problem every solver sees (the FITEE auxiliary graph,
 * or an IOPDDL problem).  All costs are int64; a solution's objective is the
 * sum of the chosen node costs and chosen edge entries.
 */
typedef struct sl_problem {
	char *name;
	int n;			/* nodes */
	int *k;			/* strategies per node */
	int64_t **cost;		/* cost[v][s] */
	uint8_t **allowed;	/* allowed[v][s]; 1 = may be chosen */
	int m;			/* edges */
	int (*edge)[2];		/* endpoints (u, v), u != v */
	int64_t **ecost;	/* ecost[e][s * k[v] + t] */
	/* optional memory constraint (IOPDDL): live intervals [lo, hi) and usages */
	int64_t (*interval)[2];	/* NULL when none */
	int64_t **usage;	/* usage[v][s] */
	int64_t usage_limit;	/* < 0: none */
	/* repeated-layer structure (models): layer instance per node, -1 none */
	int *layer;
	int *pos;		/* position in layer */
	char **node_name;	/* may be NULL */
	char ***strat_name;	/* may be NULL */
} sl_problem;

sl_problem *sl_problem_new(int n, const int *k, int m, const int (*edge)[2]);
void sl_problem_free(sl_problem *p);
sl_problem *sl_problem_copy(const sl_problem *p);
/* Sum of costs, or INT64_MAX if a choice is out of range or not allowed. */
int64_t sl_problem_score(const sl_problem *p, const int *choice);
/* Peak usage over time of a choice (0 when no intervals). */
int64_t sl_problem_peak_usage(const sl_problem *p, const int *choice);
bool sl_problem_feasible(const sl_problem *p, const int *choice);

/*
 * Pins and forbids.  The command line gives them by operator and strategy
 * name (opi, sti -1), resolved against the space when applied; a front end
 * that holds the space gives them by index (sl_constraints_add_index),
 * applied as they are, the names kept for plan files and for other spaces
 * of the same model (a pipeline stage's).
 */
typedef struct sl_constraint {
	char *op, *strategy;
	int opi, sti;		/* operator and strategy index; -1 by name */
	bool pin;		/* true pin, false forbid */
} sl_constraint;

typedef struct sl_constraints {
	int n, cap;
	sl_constraint *c;
} sl_constraints;

void sl_constraints_add(sl_constraints *cs, const char *op, const char *strat, bool pin);
/* Parses "OP=STRATEGY". */
int sl_constraints_parse(sl_constraints *cs, const char *arg, bool pin, sl_error *err);
/* dst (empty) gets a copy of src. */
void sl_constraints_copy(sl_constraints *dst, const sl_constraints *src);
void sl_constraints_free(sl_constraints *cs);

/*
 * Builds the problem for a weight alpha (bytes per microsecond of
 * communication).  Unknown operators or strategies: SL_EINPUT.  A pin set
 * that leaves an operator no strategy: SL_EINFEASIBLE, naming the operators
 * and strategies involved.
 */
sl_problem *sl_space_problem(const sl_space *s, double alpha,
    const sl_constraints *cs, sl_error *err);
/* Re-weighs an existing problem of this space for another alpha (keeps allowed). */
void sl_space_reweigh(const sl_space *s, double alpha, sl_problem *p);
/* Applies constraints to p->allowed (resets it first). */
int sl_space_constrain(const sl_space *s, sl_problem *p,
    const sl_constraints *cs, sl_error *err);
/* A pin (or forbid) of operator op on strategy st of s, by index. */
void sl_constraints_add_index(sl_constraints *cs, const sl_space *s, int op,
    int st, bool pin);

/* ------------------------------------------------------------------ solvers */

typedef enum sl_solve_status {
	SL_SOLVE_OPTIMAL, SL_SOLVE_FEASIBLE, SL_SOLVE_INFEASIBLE,
	SL_SOLVE_LIMIT,		/* stopped by time limit without a solution */
	SL_SOLVE_CANCELLED, SL_SOLVE_FAILED
} sl_solve_status;
const char *sl_solve_status_name(sl_solve_status s);

typedef enum sl_solver_kind {
	SL_SOLVER_AUTO, SL_SOLVER_DP, SL_SOLVER_ILP, SL_SOLVER_BRUTE,
	SL_SOLVER_ANYTIME
} sl_solver_kind;
const char *sl_solver_name(sl_solver_kind k);
int sl_solver_from_name(const char *s);

/*
 * The time limit in seconds of `--solver ilp` on the command line when none
 * is given (the engine's callers that want a proof pass none).
 */
#define SL_ILP_DEFAULT_TIME_LIMIT 60.0
/* The anytime search's time limit in seconds when none is given. */
#define SL_ANYTIME_DEFAULT_TIME_LIMIT 10.0

/*
 * How a solve runs.  Every solver takes its clock and its cancellation from
 * these (one run: a start, a deadline, the cancel callback polled now and
 * then), and the switches of each solver are fields here.  { 0 } is the
 * default everywhere.
 */
typedef struct sl_solve_opts {
	double time_limit;	/* seconds; <= 0 none */
	/* polled now and then; returning true cancels the solve */
	bool (*cancel)(void *ctx);
	void *cancel_ctx;
	/* progress text (e.g. GLPK's log lines); may be NULL */
	void (*progress)(void *ctx, const char *text);
	void *progress_ctx;
	/* anytime: return the first feasible plan, not the best in the time */
	bool first_plan;
	/* anytime: searches side by side, the best plan kept; 0 one per
	 * processor, at most 4 */
	int threads;
	/* anytime: the search alone, without the enumeration of small
	 * problems or GLPK after it */
	bool search_only;
	/* dp: refuse a problem needing more than this many operations
	 * (entries times strategies); 0 the default, 4e9 */
	double work_cap;
	/* dp (sl_dp_new): plain elimination, repeated layers not folded */
	bool no_fold;
	/* dp (sl_dp_resolve): only p->allowed changed since the last solve
	 * (pins, forbids), so edge costs are not compared again */
	bool allowed_only;
	/* ilp: usage limits as a chain of levels over time whatever the
	 * size (the form large problems get) */
	bool usage_chain;
} sl_solve_opts;

typedef struct sl_solution {
	int n;
	int *choice;		/* strategy per node */
	int64_t objective;	/* sl_problem_score of choice */
	sl_solve_status status;
	sl_solver_kind solver;	/* which solver answered */
	double time_ms;
	bool confirmed;		/* another exact solver reached the same objective */
	/* lower bound on every plan's objective: INT64_MIN none proven,
	 * the objective itself when optimal, INT64_MAX when infeasible */
	int64_t bound;
	double first_ms;	/* time to the first feasible plan; < 0 none */
	char note[512];		/* e.g. "dp refused: width 9; used ilp" */
} sl_solution;

void sl_solution_init(sl_solution *s, int n);
void sl_solution_free(sl_solution *s);

/* Each returns SL_OK (see sol->status) or an error code with err set. */
int sl_solve(const sl_problem *p, sl_solver_kind kind, const sl_solve_opts *o,
    sl_solution *sol, sl_error *err);
int sl_solve_brute(const sl_problem *p, const sl_solve_opts *o,
    sl_solution *sol, sl_error *err);
int sl_solve_ilp(const sl_problem *p, const sl_solve_opts *o,
    sl_solution *sol, sl_error *err);
/*
 * Anytime search for problems the exact solvers cannot take in time (usage
 * limits, wide graphs): a feasible plan at once, improved until
 * o->time_limit (10 s when none), with a lower bound (sol->bound).
 */
int sl_solve_anytime(const sl_problem *p, const sl_solve_opts *o,
    sl_solution *sol, sl_error *err);
/* Whether auto, when the DP refuses p, searches (sl_solve_anytime) rather
 * than asking GLPK for the optimum: p is too large for GLPK in a usual limit. */
bool sl_solve_auto_searches(const sl_problem *p);
/* DP refuses (SL_EINTERNAL, message says why) when it cannot be exact cheaply,
 * and when the problem has a usage limit. */
int sl_solve_dp(const sl_problem *p, const sl_solve_opts *o,
    sl_solution *sol, sl_error *err);

/*
 * GLPK's optimum ilp (its plan scored exactly) against an exact solver's
 * optimum exact: 1 they agree, -1 they disagree (one of them is wrong), 0
 * no opinion: GLPK's plan costs more, past 2^52, where its doubles cannot
 * tell plans a unit apart.
 */
int sl_ilp_verdict(int64_t exact, int64_t ilp);

/* Kept-warm GLPK: built once, re-solved after allowed/cost changes. */
typedef struct sl_ilp sl_ilp;
sl_ilp *sl_ilp_new(const sl_problem *p, const sl_solve_opts *o, sl_error *err);
/* Re-reads p (same structure: n, k, edges) and solves from the previous basis. */
int sl_ilp_resolve(sl_ilp *w, const sl_problem *p, const sl_solve_opts *o,
    sl_solution *sol, sl_error *err);
void sl_ilp_free(sl_ilp *w);
/* GLPK's state is per thread.  sl_ilp_quiet: nothing GLPK says reaches the
 * terminal from the calling thread (a screen may own it); sl_ilp_thread_end:
 * a thread that used GLPK frees its state before it ends. */
void sl_ilp_quiet(void);
void sl_ilp_thread_end(void);

/*
 * Live DP: folded layers and incremental updates.  sl_dp_new finds the
 * elimination order (o: no_fold, work_cap, and the time and cancel it may
 * take; NULL the defaults) and refuses a problem too wide for it.
 */
typedef struct sl_dp sl_dp;
sl_dp *sl_dp_new(const sl_problem *p, const sl_solve_opts *o, sl_error *err);
/* Re-solves after p's costs or allowed changed (same structure); o as for
 * sl_solve_dp, allowed_only when only p->allowed changed. */
int sl_dp_resolve(sl_dp *d, const sl_problem *p, const sl_solve_opts *o,
    sl_solution *sol, sl_error *err);
void sl_dp_free(sl_dp *d);
/*
 * A pool of folded layers shared by several live DPs (the stages of one
 * pipeline search): a layer whose content another solver of the pool
 * eliminated lately is not eliminated again.  Bounded; free it after the
 * solvers that use it.
 */
typedef struct sl_dp_pool sl_dp_pool;
sl_dp_pool *sl_dp_pool_new(void);
void sl_dp_pool_free(sl_dp_pool *pool);
void sl_dp_set_pool(sl_dp *d, sl_dp_pool *pool);
typedef struct sl_dp_info {
	int runs;		/* chains of folded layers */
	int folded_layers;	/* layers reduced to transfer matrices */
	int classes;		/* distinct layer contents held */
	int recomputed;		/* layer matrices computed by the last resolve */
	int outer_nodes;	/* nodes solved outside the chains */
	int width;		/* most neighbours of an eliminated node */
	int64_t max_entries;	/* largest factor built */
} sl_dp_info;
void sl_dp_info_get(const sl_dp *d, sl_dp_info *info);

/*
 * The plan of space s at alpha: p is s's problem weighed at alpha with its
 * constraints, solved by sl_solve (kind, o) or by the live DP d when given.
 * At alpha 0, where memory alone is weighed and plans often tie on it, the
 * plan is among those of least memory one of least communication (the
 * first point of sl_sweep's frontier).  p is re-weighed on the way and left
 * at alpha; d is left solved on it.
 */
int sl_space_solve(const sl_space *s, sl_problem *p, double alpha, sl_dp *d,
    sl_solver_kind kind, const sl_solve_opts *o, sl_solution *sol,
    sl_error *err);

/* Alpha frontier: every distinct optimal plan over alpha in [0, inf). */
typedef struct sl_frontier_point {
	double alpha_lo, alpha_hi;	/* optimal for alpha in [lo, hi]; hi < 0 = inf */
	int64_t mem;			/* memory objective part (device 0, bytes) */
	int64_t comm_ns;		/* communication time per step */
	int64_t step_ns;		/* the evaluator's step time */
	double tokens_per_s, mfu;	/* and what it achieves */
	int *choice;
} sl_frontier_point;

typedef struct sl_frontier {
	int n;
	sl_frontier_point *pt;
} sl_frontier;

/*
 * The frontier of space s under constraints cs, by exact solves of the
 * given kind.  o (NULL: none) may bound the time and cancel: its cancel is
 * polled before every exact solve, and the deadline or a cancel stops the
 * sweep with SL_EINTERNAL and no frontier.
 */
int sl_sweep(const sl_space *s, const sl_constraints *cs, sl_solver_kind kind,
    const sl_solve_opts *o, sl_frontier *f, sl_error *err);
void sl_frontier_free(sl_frontier *f);

/* ------------------------------------------- plans under a memory limit */
/* (fit.c) */

/*
 * What a memory limit limits: the evaluator's sum of what a device holds
 * (the solvers' memory term), or the peak of the step's timeline.
 */
typedef enum sl_fold { SL_FOLD_SUM, SL_FOLD_PEAK, SL_FOLD_COUNT } sl_fold;
const char *sl_fold_name(sl_fold f);	/* "sum", "peak" */

typedef struct sl_fit_opts {
	double alpha;			/* the objective's weight */
	int64_t limit;			/* bytes per device; <= 0: none */
	sl_fold fold;
	sl_solver_kind solver;
	const sl_solve_opts *solve;	/* may be NULL */
	/* also choose which layers recompute in full: the fewest that let a
	 * plan fit, exact over which layers for models of at most
	 * SL_RECOMPUTE_EXHAUSTIVE layers, the first layers otherwise */
	bool recompute;
	/* a live DP the caller keeps on p (the explorer's), or NULL */
	struct sl_dp *live;
} sl_fit_opts;

typedef struct sl_fit {
	/* the plan, scored on p at alpha; status INFEASIBLE when no plan fits
	 * (then the least memory found: choice still set) */
	sl_solution sol;
	int64_t mem;			/* its memory under the fold, largest device */
	bool fits;
	bool exact;			/* no fitting plan has a lower objective */
	bool searched;			/* the optimum at alpha did not fit */
	int64_t bound;			/* no fitting plan scores less (INT64_MIN: none) */
	int n_layers, n_recomputed;	/* with recompute: the layers chosen */
	int solves;
} sl_fit;

/*
 * The plan of least objective at alpha whose memory under the fold fits
 * o->limit, for p (a problem of s: its pins and forbids): the optimum at
 * alpha when it fits; otherwise the search of fit.c between it and the
 * least-memory plan, exact among the plans of the convex frontier of
 * memory and objective, and exact outright when its bound meets the plan
 * (out->exact).  With o->recompute, the fewest fully recomputed layers
 * that let a plan fit, left in s->layer_recompute.  p is left weighed at
 * alpha.
 */
int sl_fit_plan(sl_space *s, sl_problem *p, const sl_fit_opts *o,
    sl_fit *out, sl_error *err);
void sl_fit_free(sl_fit *f);

/*
 * --recompute auto (fit.c, over recompute.c's choice) on the evaluator's
 * sum: sl_fit_plan with o->recompute for capacity bytes per device (the
 * largest device; <= 0: no limit, nothing recomputed).  Leaves the choice
 * in s->layer_recompute and p re-weighed for it.
 */
#define SL_RECOMPUTE_EXHAUSTIVE 12
typedef struct sl_recompute_choice {
	int n_layers, n_recomputed;
	bool fits;		/* false: even full recomputation does not fit */
	int64_t max_total;	/* the largest device of the plan found */
} sl_recompute_choice;
int sl_recompute_auto(sl_space *s, sl_problem *p, double alpha,
    int64_t capacity, sl_solver_kind kind, const sl_solve_opts *o,
    sl_recompute_choice *out, sl_error *err);

/* ------------------------------------------------------------------ IOPDDL */

sl_problem *sl_iopddl_load(const char *path, sl_error *err);
bool sl_iopddl_is_problem(const char *path);	/* by peeking at the content */
int sl_iopddl_save(const sl_problem *p, const char *path, sl_error *err);

/* ---------------------------------------------------------------- evaluator */

typedef struct sl_op_eval {
	sl_mem mem;		/* on device 0: node share plus its input edges' buffers */
	sl_comm comm;		/* node plus its input edges */
} sl_op_eval;

typedef struct sl_eval {
	int n_devices;
	sl_mem *dev;		/* per device */
	int64_t *dev_redundant;	/* per device */
	int64_t max_total;	/* max over devices of the total */
	int64_t redundant;	/* on device 0 */
	sl_comm comm;		/* per step */
	int64_t comm_ns;	/* sum of comm.ns */
	int64_t recompute_ns;	/* forward re-run in backward (device 0) */
	int64_t mem_part, objective;	/* sum of node+edge memory; weighed objective */
	int n_ops;
	sl_op_eval *ops;
	int n_over_capacity;	/* devices over the profile's memory */
	/*
	 * Time of one optimizer step (doc/cost-model.md, "Step time"): kernels
	 * of a micro-step on each device (sl_node_compute), communication not
	 * hidden behind them, gradient accumulation, and what it achieves.
	 */
	int64_t *dev_compute_ns;	/* per device, one micro-step */
	int64_t compute_ns;	/* the slowest device's */
	int64_t exposed_comm_ns;	/* the last micro-step's (with the gradient
				 * reduction): comm_ns less what overlaps */
	int64_t exposed_accum_ns;	/* the same of each micro-step before it
				 * (gradients accumulate, ZeRO-3 still reduces) */
	int64_t accum_steps;	/* micro-steps per optimizer step */
	int64_t optim_ns;	/* the optimizer step (the slowest device) */
	int64_t step_ns;	/* (accum_steps - 1) x (compute_ns + exposed_accum_ns)
				 * + compute_ns + exposed_comm_ns + optim_ns */
	int64_t tokens;		/* per optimizer step */
	double model_flops;	/* per optimizer step (sl_model_flops) */
	double hw_flops;	/* model_flops + the forward passes recomputed */
	double tokens_per_s;
	double mfu;		/* model_flops / (devices x peak x step time) */
	double hfu;		/* hw_flops / (devices x peak x step time) */
} sl_eval;

/* Tokens of one micro-step of g: the elements of its first input when it
 * holds token ids, else all but its last dimension; *samples (may be NULL)
 * its first dimension. */
int64_t sl_graph_tokens(const sl_graph *g, int64_t *samples);
/* The step time from its parts (sl_eval's formula) and what it achieves,
 * again: after a caller changed ev->optim_ns (ZeRO-1 and -2 shard it). */
void sl_eval_restep(const sl_space *s, sl_eval *ev);
/* The optimizer step's time over elems parameter elements on a device of
 * s (sl_recipe_optim_bytes at the profile's memory bandwidth). */
int64_t sl_optim_ns(const sl_space *s, int64_t elems);
/* Scores any assignment (one strategy index per operator). */
int sl_evaluate(const sl_space *s, const int *choice, double alpha,
    sl_eval *ev, sl_error *err);
void sl_eval_free(sl_eval *ev);

/* -------------------------------------------------------------------- plans */

typedef struct sl_plan_meta {
	const char *model_source;	/* what the user named */
	double alpha;
	const sl_solution *sol;
	const sl_constraints *cs;
	int64_t micro_batch;		/* 0: not recorded */
	const char *hw_source;		/* what --hw named; NULL: the profile's name */
} sl_plan_meta;

/* Writes the plan JSON (man shardlab-plan.5) atomically; path "-" = stdout. */
int sl_plan_write(const sl_space *s, const int *choice, const sl_eval *ev,
    const sl_plan_meta *meta, const char *path, sl_error *err);
/* The plan of a problem without a model (IOPDDL): strategy per node, cost,
 * bound, status.  path "-" is standard output. */
int sl_problem_plan_write(const sl_problem *p, const sl_solution *sol,
    const char *path, sl_error *err);

typedef struct sl_plan_file {
	char *model;		/* model name or source */
	char *model_source;
	int n_axes, shape[SL_MAX_AXES];
	char *hardware;
	double alpha;
	int n_ops;
	char **op_name, **strategy;
	bool *pinned;
	sl_constraints cs;	/* pins and forbids recorded in the plan */
	int64_t micro_batch;	/* 0 when the plan does not say */
	sl_recipe recipe;	/* the default when the plan does not say */
	bool has_recipe;
	int n_layer_recompute;	/* per layer, as chosen (auto resolved) */
	uint8_t *layer_recompute;
	char *path;		/* the file read, for messages */
	int *op_line, *op_col;	/* where each op's strategy is written */
	/* a pipeline plan (`shardlab plan --json`, "format":
	 * "shardlab-pipeline"): n_stages > 0, mesh (n_axes, shape) is the
	 * stage sub-mesh, and no model, alpha or operators are recorded */
	int n_stages;
	int pp, virt;
	int schedule;			/* sl_schedule */
	int64_t micro_batches, graph_batch;
	int *stage_layers;
	sl_recompute *stage_recompute;
	char sha256[65];	/* of the model it was made for; "" unknown */
	int model_ops;		/* operators of that model; -1 unknown */
	/*
	 * How a pipeline plan was made, when the file says (older files do
	 * not: has_setup false): the hardware profile's figures, all the
	 * devices, the stage sub-mesh as the search saw it (outer x inner)
	 * with its axes' roles, the whole mesh when --axes named it, the
	 * options and the global batch.
	 */
	bool has_setup;
	bool has_hw, has_zero;		/* hw and zero are the file's */
	sl_hw hw;
	int devices, outer, inner;
	int dp_replicate;		/* HSDP's replicate degree; 1 none */
	sl_axis_role role[SL_MAX_AXES];
	int n_topo, topo_shape[SL_MAX_TOPO_AXES];
	sl_axis_role topo_role[SL_MAX_TOPO_AXES];
	bool zero, offload_optimizer;
	int64_t mem_limit, global_batch;
	/* where the mesh shape, the ops array, the model's sha256 and operator
	 * count are written, for messages */
	int mesh_line, mesh_col, ops_line, ops_col;
	int sha_line, sha_col, count_line, count_col;
} sl_plan_file;

int sl_plan_read(const char *path, sl_plan_file *pf, sl_error *err);
void sl_plan_file_free(sl_plan_file *pf);
/* SL_OK for a whole-model plan; a pipeline plan (stages) is an input error
 * for what runs one plan over the whole model. */
int sl_plan_whole(const sl_plan_file *pf, sl_error *err);
/*
 * Maps a plan file's strategies onto a space: choice[op].  A plan made for a
 * model with another number of operators, or a pipeline plan, is an error.
 */
int sl_plan_choice(const sl_space *s, const sl_plan_file *pf, int *choice,
    sl_error *err);
/*
 * Whether the model changed since the plan was made (its sha256 differs)
 * while the plan still maps onto it: a warning, written into warn ("file:
 * line:col: ...").  false when the plan says nothing or the hashes agree.
 */
bool sl_plan_model_changed(const sl_plan_file *pf, const sl_graph *g,
    char *warn, size_t len);

/* ---------------------------------------------------------------- baselines */

/*
 * Preset plans of other systems, scored by the same evaluator (baseline.c).
 * ZeRO-1 and ZeRO-2 are not strategies of the space: they are the data
 * parallel plan with the optimizer states (and gradients) divided over all
 * devices afterwards, by category, in the evaluator's result.
 */
typedef enum sl_baseline_kind {
	SL_BASE_DP,		/* data parallel, replicated parameters */
	SL_BASE_ZERO1,		/* + optimizer states sharded */
	SL_BASE_ZERO2,		/* + gradients sharded */
	SL_BASE_ZERO3,		/* + parameters sharded (the +z strategies) */
	SL_BASE_MEGATRON,	/* tensor parallel inner axis, data parallel outer */
	SL_BASE_MEGATRON_SP,	/* the same with sequence parallelism */
	SL_BASE_ALPA,		/* least communication */
	SL_BASE_ALPA_BUDGET,	/* least communication under a memory budget */
	SL_BASE_COLOSSAL,	/* least communication under the device memory */
	SL_BASE_COUNT
} sl_baseline_kind;

const char *sl_baseline_name(sl_baseline_kind k);	/* "megatron-sp" */
const char *sl_baseline_title(sl_baseline_kind k);	/* "Megatron-LM + SP" */
int sl_baseline_from_name(const char *s);		/* -1 if unknown */

/* One scored plan: ours or a baseline. */
typedef struct sl_scored_plan {
	char method[32];	/* "ours", or sl_baseline_name */
	char title[64];
	bool applicable;	/* false: note says why; nothing else is set */
	char note[512];		/* how it was built; adjustments made */
	sl_setting needs;	/* not applicable: the setting it lacks, if one */
	int *choice;		/* strategy per operator */
	sl_eval ev;		/* evaluator result (adjusted for ZeRO-1/2) */
	int64_t max_mem, mean_mem;	/* per device, bytes */
	int64_t redundant;	/* on device 0 */
	int64_t comm_ns;	/* per step */
} sl_scored_plan;

void sl_scored_plan_free(sl_scored_plan *p);

typedef struct sl_baseline_opts {
	int64_t mem_budget;	/* Alpa-style budget per device; < 0 none */
	sl_solver_kind solver;	/* for the frontier-based baselines */
} sl_baseline_opts;

/*
 * Builds and scores one baseline.  frontier (may be NULL) is the alpha
 * frontier of s without constraints, shared by the Alpa and Colossal-Auto
 * baselines; when NULL they compute it.  A baseline that does not apply
 * (no budget given, nothing fits) returns SL_OK with applicable false.
 */
int sl_baseline_plan(const sl_space *s, sl_baseline_kind k,
    const sl_baseline_opts *o, const sl_frontier *frontier,
    sl_scored_plan *out, sl_error *err);

/* Scores an assignment into out (method and title given). */
int sl_score_plan(const sl_space *s, const int *choice, double alpha,
    const char *method, const char *title, sl_scored_plan *out, sl_error *err);

/* Ours at alpha (with constraints) first, then every baseline. */
typedef struct sl_comparison {
	int n;
	sl_scored_plan *row;
	double alpha;
} sl_comparison;

int sl_compare(const sl_space *s, double alpha, const sl_constraints *cs,
    const sl_baseline_opts *o, sl_comparison *c, sl_error *err);
void sl_comparison_free(sl_comparison *c);

/*
 * A teaching text about one operator under one strategy (explain.c): the
 * shard of every tensor on every device, the redundant bytes and why, the
 * collectives in forward and backward with sizes and times, and the
 * arithmetic of its memory and time.  choice (may be NULL) is the plan the
 * neighbours come from, for the resharding of its inputs.  Returns a
 * malloc'd string, or NULL with err set.
 */
char *sl_explain(const sl_space *s, const int *choice, int op, int strat,
    sl_error *err);

/* ------------------------------------------------------ GPU launch lists */

/*
 * A launch list is what one training step of a plan does on each device of
 * the mesh: the buffers it allocates (named, by memory category, summing to
 * the evaluator's prediction) and, in order, the kernels (local matmul shapes,
 * memory-traffic kernels) and collectives of the forward and backward pass.
 * The GPU runner (src/runner) executes it; the engine only builds it.
 */
typedef struct sl_alloc {
	char name[96];		/* "fc1.w1.grad", "gelu:saved:h", "h:fc1->fc2" */
	int cat;		/* sl_mem_cat */
	int op;			/* operator it belongs to, -1 none */
	int64_t bytes;
	int kind;		/* a timeline buffer's sl_buf_kind; -1 otherwise */
} sl_alloc;

/* Before launch item at (n_items: after the last), allocate or release
 * timeline buffer buf (an index into sl_launch_dev.tbuf). */
typedef struct sl_launch_event {
	int at, buf;
	bool release;
} sl_launch_event;

typedef enum sl_item_kind { SL_ITEM_GEMM, SL_ITEM_MEMORY, SL_ITEM_COLL } sl_item_kind;
typedef enum sl_phase { SL_PHASE_FWD, SL_PHASE_BWD } sl_phase;

typedef struct sl_launch_item {
	sl_item_kind kind;
	sl_phase phase;
	int op;			/* operator index */
	char name[96];		/* "fc1.fwd", "fc1.dgrad", "fc1.wgrad", "x:fc1->gelu.ag0" */
	/* gemm: C[batch][m,n] = A[m,k] B[k,n], bf16 in, fp32 accumulate */
	int64_t batch, m, n, k;
	int64_t flops;		/* 2 batch m n k */
	/* memory: bytes read plus written; collective: bytes B of the group's tensor */
	int64_t bytes;
	/* collective */
	sl_coll coll;
	int axis, group;	/* mesh axis and its size */
	int64_t ns;		/* modelled time (sl_coll_time) */
} sl_launch_item;

typedef struct sl_launch_dev {
	int id;
	int coord[SL_MAX_AXES];
	int n_alloc;
	sl_alloc *alloc;
	sl_mem alloc_sum;	/* sums of alloc by category */
	sl_mem predicted;	/* the evaluator's figure for this device */
	int n_items;
	sl_launch_item *item;
	int64_t flops;		/* of all gemm items */
	int64_t traffic;	/* bytes of all memory items */
	int64_t comm_ns;	/* cost model's communication per step (nodes + edges) */
	int64_t items_comm_ns;	/* sum of the collective items' ns */
	int64_t compute_ns;	/* roofline estimate: flops / hw peak */
	/* the step's timeline in the default order (timeline.c): its buffers,
	 * transients included, allocated and released around the items in
	 * execution order; replaying the events peaks at tl_peak */
	int n_tbuf, n_event;
	sl_alloc *tbuf;
	sl_launch_event *event;
	int64_t tl_peak;
	sl_mem tbuf_sum;	/* tbuf summed by category */
} sl_launch_dev;

typedef struct sl_launch {
	char model[128];
	char hardware[64];
	sl_mesh mesh;
	int n_devices;
	sl_launch_dev *dev;
	int64_t eval_comm_ns;	/* sl_evaluate's comm_ns (device 0) */
} sl_launch;

/* Builds the launch list of an assignment; checks it against sl_evaluate. */
int sl_launch_build(const sl_space *s, const int *choice, sl_launch *l,
    sl_error *err);
void sl_launch_free(sl_launch *l);
/* Most bytes held while replaying d's events in order (0 without events):
 * the timeline's peak. */
int64_t sl_launch_replay_peak(const sl_launch_dev *d);
#define SL_LAUNCH_VERSION 2
/* JSON ("shardlab-launch", version 2: version 1 plus the timeline's buffers
 * and events), atomically; path "-" = stdout. */
int sl_launch_write_json(const sl_launch *l, const char *path, sl_error *err);
/* The same JSON as a malloc'd string (NULL + err on failure). */
char *sl_launch_to_json(const sl_launch *l, sl_error *err);

/* ------------------------------------------------------ memory over time */
/* (timeline.c: declarations go here) */

/*
 * A timeline is one training step on one device as a sequence of tasks
 * (forward of each operator, the loss, backward split into the input
 * gradient and the weight gradient, the optimizer step) and the buffers
 * alive around them: everything sl_node_items says a step keeps, plus the
 * transients the sum leaves out (tensors between their producer and their
 * last forward reader, activation gradients, ZeRO-3 gathers one layer
 * ahead, resharding copies, the loss's fp32 copy, what a fully recomputed
 * layer re-materialises, the optimizer's work buffer).  Its peak is what
 * the device needs; sl_eval's total is the sum of everything ever held.
 */
typedef enum sl_task_kind {
	SL_TASK_FWD,		/* an operator's forward */
	SL_TASK_LOSS,		/* forward done, backward begins */
	SL_TASK_BWD,		/* input gradient (and all of backward without weights) */
	SL_TASK_WGRAD,		/* weight gradient of an operator that reads parameters */
	SL_TASK_OPTIM,		/* the optimizer step */
	SL_TASK_KIND_COUNT
} sl_task_kind;

typedef struct sl_task {
	sl_task_kind kind;
	int op;			/* operator, -1 for the loss and the optimizer */
	int64_t ns;		/* modelled duration (compute.c), at least 1000 */
} sl_task;

typedef enum sl_buf_kind {
	SL_BUF_STATE,		/* weights and optimizer states: the whole step */
	SL_BUF_GRAD,		/* a parameter's gradient */
	SL_BUF_SAVED,		/* kept for backward (a saved input or output) */
	SL_BUF_AUTOCAST,	/* bf16 copy of an fp32 weight under autocast */
	SL_BUF_EXTRA,		/* attention scores or log-sum-exp */
	SL_BUF_REMAT,		/* re-materialised in backward by full recomputation */
	SL_BUF_WORKING,		/* a tensor nobody keeps, until its last forward reader */
	SL_BUF_ACT_GRAD,	/* an activation's gradient */
	SL_BUF_GATHER,		/* ZeRO-3 parameter gathered for compute */
	SL_BUF_GRAD_FULL,	/* ZeRO-3 full gradient before its reduce-scatter */
	SL_BUF_RESHARD,		/* resharding copy of an edge */
	SL_BUF_LOSS,		/* fp32 logits (forward) or their gradient (backward) */
	SL_BUF_OPTIM_TMP,	/* the optimizer step's work buffer */
	SL_BUF_GRAD_NEW,	/* a weight gradient before it is added into the
				 * accumulated one */
	SL_BUF_DEQUANT,		/* a 4-bit weight dequantised for a matmul (QLoRA) */
	SL_BUF_KIND_COUNT
} sl_buf_kind;
const char *sl_buf_kind_name(sl_buf_kind k);	/* "saved", "working", ... */

typedef struct sl_tl_buf {
	char name[96];		/* "fc1:saved:x", "h1.grad", "w1.gather" */
	sl_buf_kind kind;
	int cat;		/* sl_mem_cat */
	int op, tensor;		/* -1 when none */
	int64_t bytes;
	int first, last;	/* alive from before task order[first] to after order[last] */
} sl_tl_buf;

typedef struct sl_timeline {
	int dev;
	int n_tasks;
	sl_task *task;
	int *order;		/* order[pos]: the task run at position pos */
	int *dep_start, *dep;	/* task t waits for dep[dep_start[t] .. dep_start[t+1]) */
	int n_bufs;
	sl_tl_buf *buf;
	int64_t (*live)[SL_CAT_COUNT];	/* per position: bytes alive during its task */
	int64_t *total;		/* per position: sum of live */
	int64_t peak;		/* max of total */
	int peak_pos;		/* first position reaching it */
	int64_t sum;		/* the evaluator's total for this device (no transients) */
	int64_t peak_default;	/* peak in the default order */
	int64_t peak_optimised;	/* peak in the optimised order (= peak_default if not asked) */
	bool optimised;		/* order is the optimised one */
	bool exact;		/* optimised order proven least-peak over all valid orders */
	/* the simulated caching allocator, on this order */
	int64_t alloc_peak;	/* peak of sizes rounded to 512 bytes */
	int64_t reserved_peak;	/* peak of segments reserved from the device */
	int segments;		/* segments at the end of the step */
	/* private: alloc and free sets of each buffer (task lists) */
	int *a_start, *a_list, *f_start, *f_list;
} sl_timeline;

/*
 * Builds device dev's timeline of a plan in the default order (forward in
 * graph order, backward in reverse, input gradient before weight gradient)
 * and, when optimise, reorders independent tasks to lower the peak (exact
 * search over valid orders on small graphs, a greedy list schedule
 * otherwise, never worse than the default); tl->order is then the
 * optimised order.
 */
int sl_timeline_build(const sl_space *s, const int *choice, int dev,
    bool optimise, sl_timeline *tl, sl_error *err);
void sl_timeline_free(sl_timeline *tl);
/* Adds a buffer held through the whole step (what the device holds beyond
 * the operators the timeline was built for) and recomputes the peaks. */
int sl_timeline_hold(sl_timeline *tl, const char *name, int cat, int64_t bytes);
/* Peak of any order (a permutation of the tasks); -1 when it is not one or
 * breaks a dependency. */
int64_t sl_timeline_peak_of(const sl_timeline *tl, const int *order);
/* Makes order the timeline's order and recomputes everything; SL_EINPUT
 * when it is not a valid order. */
int sl_timeline_set_order(sl_timeline *tl, const int *order, sl_error *err);
/* Buffers alive at position pos, largest first, into idx (n_bufs long);
 * returns how many. */
int sl_timeline_alive(const sl_timeline *tl, int pos, int *idx);
/* "fc1.fwd", "fc1.dgrad", "fc1.wgrad", "loss", "optimizer" */
const char *sl_task_name(const sl_space *s, const sl_task *t, char *buf,
    size_t len);
/* Chrome trace-event JSON (Perfetto, chrome://tracing): operator spans
 * ("X") and one memory counter ("C") per position with a value per
 * category; atomically, path "-" = stdout. */
int sl_timeline_write_trace(const sl_space *s, const sl_timeline *tl,
    const char *path, sl_error *err);
char *sl_timeline_trace_json(const sl_space *s, const sl_timeline *tl,
    sl_error *err);


/* --------------------------------------------- meshes with named axes */
/* (hardware.c) */

/*
 * A mesh of any rank whose axes are named by what they do: "4x2x8" with
 * axes "pp,dp,tp".  Devices are numbered row-major and fill nodes in order;
 * an axis whose groups all lie inside one node gets the intra-node link, any
 * other the inter-node link.  The pp axis is consumed by the pipeline; the
 * other axes (at most SL_MAX_AXES of them) are the sub-mesh each stage's
 * operators are solved on, with the links they have in the whole mesh.
 */

typedef struct sl_topo {
	int n_axes;
	int shape[SL_MAX_TOPO_AXES];
	sl_axis_role role[SL_MAX_TOPO_AXES];
	sl_link link[SL_MAX_TOPO_AXES];
	bool crosses[SL_MAX_TOPO_AXES];	/* some group spans two nodes */
	int n_devices;
	sl_hw hw;
} sl_topo;

/*
 * Parses "--mesh 4x2x8 --axes pp,dp,tp" (axes may be NULL: then the last
 * axis is tp, the one before dp, and a third pp).  At most one pp axis;
 * err says what was expected.
 */
int sl_topo_parse(const char *shape, const char *axes, int *n_axes,
    int shape_out[SL_MAX_TOPO_AXES], sl_axis_role role[SL_MAX_TOPO_AXES],
    sl_error *err);
int sl_topo_make(const sl_hw *hw, int n_axes, const int *shape,
    const sl_axis_role *role, sl_topo *t, sl_error *err);
/* Size of the pp axis (1 when there is none). */
int sl_topo_pp(const sl_topo *t);
/* The link between neighbouring stages (the pp axis; intra when none). */
sl_link sl_topo_pp_link(const sl_topo *t);
/* The stage sub-mesh: every axis but pp, in order, with its link. */
int sl_topo_stage_mesh(const sl_topo *t, sl_mesh *m, sl_error *err);

/* ------------------------------------------------------ pipeline stages */
/* (pipe_*.c) */

typedef enum sl_schedule {
	SL_SCHED_1F1B,		/* one forward one backward (PipeDream-Flush) */
	SL_SCHED_GPIPE,		/* all forwards, then all backwards */
	SL_SCHED_INTERLEAVED,	/* 1F1B over v virtual stages per device */
	SL_SCHED_COUNT
} sl_schedule;
const char *sl_schedule_name(sl_schedule s);	/* "1f1b", "gpipe", "interleaved" */
int sl_schedule_from_name(const char *s);

/*
 * Micro-batches whose activations device d of p keeps at its peak, counted
 * in chunks (a chunk is one of the v virtual stages a device holds; v = 1
 * unless interleaved): GPipe m; 1F1B min(p - d, m); interleaved 1F1B
 * min(v m, 2 (p - d - 1) + (v - 1) p + 1) (Narayanan et al. SC21, as
 * Megatron-LM schedules its warm-up).
 */
int64_t sl_pipe_in_flight(sl_schedule s, int p, int v, int64_t m, int d);
/*
 * The most activation bytes device d of p holds at once, acts[c] those of
 * one micro-batch of its chunk c (stage c p + d), c < v: as the schedule
 * runs, which chunks' micro-batches are in flight changes, and the peak is
 * taken over every state (sl_pipe_in_flight x acts when the chunks' acts
 * are equal).
 */
int64_t sl_pipe_peak_acts(sl_schedule s, int p, int v, int64_t m, int d,
    const int64_t *acts);
/* Bubble share of the pipelined time with equal stages:
 * (p - 1) / (v m + p - 1). */
double sl_pipe_bubble(int p, int v, int64_t m);
/*
 * Pipelined time of m micro-batches over p devices of per-micro-batch times
 * t[d] (each device's chunks summed): m max(t) + (sum(t) - max(t)) / v.
 */
int64_t sl_pipe_time(int p, int v, int64_t m, const int64_t *t);
/*
 * What device d's gradient sync sync[d] (once per step) adds after the
 * pipelined time, the largest over the devices (doc/cost-model.md,
 * "Pipelines"): it runs in buckets, each a share q[d] of it, during the
 * last micro-batch's backward of the device's chunks bwd[d] (q[d] = 1: one
 * bucket, after it), and goes on while the devices before it drain,
 * a chunk's backward each (bwd[e] / v for e < d); the optimizer steps wait
 * for every device's (the gradient norm is taken over all of them).
 */
int64_t sl_pipe_sync_exposed(int p, int v, const int64_t *sync,
    const int64_t *bwd, const double *q);

/* One stage (one chunk of a device under interleaving). */
typedef struct sl_pipe_stage {
	int first_layer, n_layers;	/* graph layers */
	int first_op, n_ops;		/* operators of the full graph */
	int device;			/* pipeline rank holding it */
	sl_recompute recompute;
	int n_strat_ops;		/* = n_ops */
	char (*strategy)[32];		/* per operator of the stage */
	/* parameters, gradients, optimizer; buffers: the largest moment of
	 * its operators and resharding copies, held for a task alone */
	sl_mem states;
	int64_t acts;			/* activations of one micro-batch */
	int64_t micro_ns;		/* compute + comm of one micro-batch, fwd+bwd */
	int64_t compute_ns, comm_ns;	/* parts of micro_ns (comm incl. p2p) */
	int64_t p2p_ns;			/* sends to the neighbouring stages */
	int64_t bwd_ns;			/* of compute_ns, the backward */
	int64_t sync_ns;		/* gradient sync once per step */
	int64_t optim_ns;		/* optimizer step once per step */
} sl_pipe_stage;

/* Per device (pipeline rank). */
typedef struct sl_pipe_dev {
	int64_t in_flight;		/* chunks of micro-batches kept */
	int64_t mem;			/* peak: states + acts */
	int64_t states;			/* its chunks' states and one moment */
	int64_t moment;			/* the largest of its chunks' moments */
	int64_t acts;			/* held at the peak (sl_pipe_peak_acts) */
	int64_t micro_ns;		/* its chunks' micro_ns summed */
} sl_pipe_dev;

typedef struct sl_pipeline {
	int pp, virt;			/* devices in the pipeline, chunks each */
	sl_schedule schedule;
	sl_mesh mesh;			/* the stage sub-mesh */
	sl_link pp_link;
	int64_t graph_batch;		/* samples per micro-batch (whole stage) */
	int64_t micro_batches;		/* m per optimizer step */
	int n_stages;			/* pp * virt */
	sl_pipe_stage *stage;
	sl_pipe_dev *dev;		/* pp */
	/* step = pipelined time + the gradient sync left after it (the
	 * largest device's, sl_pipe_sync_exposed) + the slowest optimizer */
	int64_t step_ns, pipe_ns, bubble_ns, sync_ns, optim_ns;
	int64_t max_mem;
	/* per step, all devices: model and hardware FLOPs (sl_model_flops),
	 * tokens; what they achieve */
	double model_flops, hw_flops;
	int64_t tokens;
	double tokens_per_s, mfu, hfu;
	bool fits;			/* every device under the profile's memory */
	/* the launch: tensor parallel over the inner axis when some layer
	 * operator splits a dimension other than the batch over it, else 1
	 * (then every axis is data parallel) */
	int launch_tp;
	/* context parallel: the axes over which some layer's attention splits
	 * its sequence (K and V passed round a ring), their devices; 1 none */
	int launch_cp;
	unsigned cp_axes;
	/* the experts of a mixture: their layout over the sub-mesh (moe.c;
	 * ep = etp = 1 without experts) */
	struct sl_moe_layout {
		int ep, etp;		/* expert parallel, expert tensor parallel */
		uint8_t ep_axes, etp_axes;
		bool allgather;		/* the dispatcher splits experts, not tokens */
		int n_experts, n_dispatch;	/* operators seen */
		bool uniform;		/* every MoE layer alike */
		bool megatron;		/* ranks as Megatron-LM orders them */
		char why[200];		/* why not, when not */
	} moe;
	/* what each axis of the stage sub-mesh carries (its contract) */
	sl_axis_role role[SL_MAX_AXES];
	int outer, inner;		/* the configuration's sub-mesh (sl_pipe_config) */
	/* HSDP: the data-parallel ranks across which the sharded (+z) states
	 * are replicated, the product of the sub-mesh axes +z leaves out
	 * (sl_space_opts.zero_replicate); 1: sharded over all of them */
	int dp_replicate;
} sl_pipeline;
void sl_pipeline_free(sl_pipeline *pl);

/*
 * Opens the model at a batch of samples and a sequence length (0: the
 * model's): the hybrid search asks for the graph of one micro-batch at each
 * batch size it tries.
 */
typedef sl_graph *(*sl_model_fn)(void *ctx, int64_t batch, int64_t seq,
    sl_error *err);

typedef struct sl_hybrid_opts {
	sl_model_fn model;
	void *model_ctx;
	sl_hw hw;
	int devices;
	sl_space_opts space;		/* recipe: recompute auto = per stage */
	int64_t global_batch;		/* samples per step (0: devices) */
	sl_schedule schedule;
	int virt;			/* interleaved: chunks per device (0: search 2, 4) */
	/* fixed choices (0: searched) */
	int pp, tp;			/* pipeline degree; inner sub-mesh axis */
	int64_t micro_batch;		/* samples per micro-batch per outer rank */
	int64_t mem_limit;		/* per device; <= 0: the profile's memory */
	int slack;			/* stage sizes searched: even split +- slack
					 * layers; < 0: every partition */
	int64_t offload_optimizer;	/* nonzero: optimizer states in host memory */
	/* a mixture's experts under a framework: split by expert over the
	 * data- and context-parallel axes (SL_EP_DATA), over the
	 * tensor-parallel ones (SL_EP_TENSOR: expert tensor parallel 1), both
	 * or neither; -1 (the default): each searched, the fastest kept */
	int ep_axes;
	int64_t model_seq;		/* the model's sequence (for suggestions) */
	/* a fixed mesh (--mesh 4x2x8 --axes pp,dp,tp): its pp axis, sub-mesh
	 * and links replace the searched ones; NULL: searched */
	const sl_topo *topo;
	/* what the user named, recorded in plan files (NULL: the model's
	 * and the profile's names) */
	const char *model_source, *hw_source;
	/* true: every operator and layer of a stage costed and solved on its
	 * own, nothing shared between equal layers, and every stage's problem
	 * built at its own layers (the same answer, slower; for checks) */
	bool plain;
	/* true: a configuration is planned in full even when its first
	 * stages show it can neither win nor join the frontier (the same
	 * answer and frontier, slower; for checks) */
	bool no_stage_bound;
	/*
	 * HSDP (torchtitan's parallelism.data_parallel_replicate_degree,
	 * torchtitan/config/job_config.py): 0, the search tries sharding
	 * over the intra-node part of a data-parallel group that spans
	 * nodes beside sharding over all of it, and keeps the faster; 1,
	 * full sharding only; N, replicate across N groups only (a
	 * configuration that cannot is set aside).  Under torchtitan and
	 * free only, and a configuration's own degree
	 * (sl_pipe_config.dp_replicate) comes first.
	 */
	int dp_replicate;
} sl_hybrid_opts;
void sl_hybrid_opts_default(sl_hybrid_opts *o);
enum { SL_EP_DATA = 1, SL_EP_TENSOR = 2 };

/* One point of the memory / step-time frontier. */
typedef struct sl_hybrid_point {
	int pp, virt, outer, inner;	/* sub-mesh outer x inner */
	int dp_replicate;		/* HSDP's replicate degree; 1 none */
	int64_t micro_batches, graph_batch;
	int64_t max_mem, step_ns;
	bool fits;
} sl_hybrid_point;

/* What a search tried, kept and set aside. */
typedef struct sl_hybrid_result {
	sl_pipeline best;		/* valid when found */
	bool found;
	int n_front;
	sl_hybrid_point *front;		/* Pareto frontier, by memory */
	int64_t configs, stage_solves, cache_hits, partitions;
	int64_t pruned_partitions;	/* configurations searched by bound, not listed */
	int64_t pruned_shapes;		/* tensor parallel beyond a node; chunks uneven */
	int64_t pruned_batches;		/* micro-batches not dividing the batch */
	int64_t pruned_bound;		/* no faster than the best, by a lower bound */
	/* of those, set aside after the fitting plans of their first stages
	 * (the others before any stage was planned) */
	int64_t pruned_stages;
	/* configurations the framework cannot run, and the first one's rule */
	int64_t pruned_framework;
	char framework_why[256];
	/* the least memory any configuration reached (when nothing fits) */
	sl_pipeline least;
	bool have_least;
	/* when no configuration could be evaluated (configs 0): why */
	char why_none[256];
	double time_ms;
	/* recipe.shard_states of best: the search's choice when the options
	 * left it to the search (-1), else theirs */
	int shard_states;
} sl_hybrid_result;
void sl_hybrid_result_free(sl_hybrid_result *r);

/*
 * Evaluates one pipeline: pp degree, v chunks, sub-mesh outer x inner,
 * graph batch per micro-batch, layers per stage (n_stages = pp * v values,
 * summing to the graph's layers) and recomputation per stage; each stage's
 * operators get the exact intra-operator plan that is fastest under the
 * memory its device has, over the frontier of that stage.
 */
/*
 * How a stage's operators are laid out: the fastest plan that fits
 * (planned), or Megatron-LM's per-operator layout taken as it is, tensor
 * parallel on the inner axis without or with sequence parallelism, data
 * parallel on the outer (baseline.c), as published runs were made.
 */
typedef enum sl_stage_layout {
	SL_LAYOUT_PLANNED,
	SL_LAYOUT_MEGATRON,
	SL_LAYOUT_MEGATRON_SP,
	SL_LAYOUT_COUNT
} sl_stage_layout;

typedef struct sl_pipe_config {
	int pp, virt, outer, inner;
	/*
	 * HSDP: the sharded states replicated across dp_replicate groups of
	 * the data-parallel ranks, sharded within each (1: full sharding;
	 * 0: sl_hybrid_opts.dp_replicate's).  Without --axes the sub-mesh is
	 * then dp_replicate x (outer / dp_replicate), both data parallel
	 * (inner 1); with them, the outer of two data-parallel axes, of that
	 * size, is left replicated.
	 */
	int dp_replicate;
	int64_t graph_batch, micro_batches;
	const int *layers;		/* per stage */
	const sl_recompute *recompute;	/* per stage */
	sl_stage_layout layout;		/* default planned */
} sl_pipe_config;
int sl_pipeline_eval(const sl_hybrid_opts *o, const sl_pipe_config *c,
    sl_pipeline *pl, sl_error *err);

/* The hybrid search: least step time under the memory limit. */
int sl_hybrid_search(const sl_hybrid_opts *o, sl_hybrid_result *r,
    sl_error *err);

/* A change that would make a model fit, with its numbers. */
typedef struct sl_fit_change {
	char what[160];			/* "pipeline degree 16" */
	/* the setting changed, when the words leave it implicit (SL_SET_NONE
	 * else), and its new value: "" when the change leaves it free */
	sl_setting setting;
	char value[32];
	int64_t max_mem, step_ns;	/* after the change; 0 when unknown */
	bool fits;
	char why[256];			/* not evaluated: why; "" when evaluated */
} sl_fit_change;
/* Ranks changes: fitting first, by step time; then by memory; then those
 * not evaluated (stable). */
void sl_fit_changes_rank(sl_fit_change *ch, int n);
/*
 * The fewest devices that fit (pipe_suggest.c): the hybrid search run at
 * each device count from a lower bound up to hi (o->devices ignored;
 * hi <= 0: 4 x the lower bound, at least the bound + 63),
 * stopping at the first whose search finds a plan under the memory limit;
 * *devices is that count, *r its search (sl_hybrid_result_free), or 0 and
 * r cleared when none up to hi fits.  Every count is tried in turn, since
 * fitting is not monotone in the count: a count must factor into pipeline
 * x data x tensor degrees that the global batch, the node and the
 * framework allow, which the search decides.  The lower bound: the
 * devices' memory together holds at least one copy of the model's states
 * (one weight of frozen weights, half a byte under QLoRA), *lower.
 */
int sl_hybrid_min_devices(const sl_hybrid_opts *o, int hi, int *devices,
    int *lower, sl_hybrid_result *r, sl_error *err);
/* Ranked as sl_fit_changes_rank. */
int sl_hybrid_suggest(const sl_hybrid_opts *o, sl_fit_change **out, int *n,
    sl_error *err);

/*
 * Where a plan's gain comes from (pipe_account.c): beside the chosen
 * pipeline, the layout Megatron-LM recommends for the same devices and
 * batch (standard: tensor parallel within a node over tp devices, the
 * fewest pipeline stages that fit, sequence parallelism, the largest
 * micro-batch that fits, the least recomputation that fits), and the
 * difference as a chain of single changes from it to the plan, each
 * evaluated in full: the plan's pipeline degree, chunks, sub-mesh and
 * stages; its micro-batch; its recomputation; its per-operator choices
 * (the last step is the chosen plan).
 */
typedef struct sl_pipe_account_item {
	char what[128];
	int64_t step_ns, pipe_ns, bubble_ns, max_mem;
	bool fits;
} sl_pipe_account_item;
typedef struct sl_pipe_account {
	sl_pipeline standard;
	int tp, dp;
	int64_t micro_batch;		/* samples per data-parallel rank */
	sl_recompute recompute;
	int n_items;
	sl_pipe_account_item item[4];
} sl_pipe_account;
int sl_pipe_account_build(const sl_hybrid_opts *o, const sl_pipeline *chosen,
    sl_pipe_account *a, sl_error *err);
void sl_pipe_account_free(sl_pipe_account *a);

/*
 * The layout of a plan's experts (moe.c): sl_moe_layout_add takes each
 * dispatch, experts and combine operator with its strategy, finish checks
 * that they agree and are ranked as Megatron-LM ranks experts.
 */
typedef struct sl_moe_layout sl_moe_layout;
void sl_moe_layout_init(sl_moe_layout *l);
void sl_moe_layout_add(const sl_space *sp, int op, int strat,
    sl_moe_layout *l);
void sl_moe_layout_finish(const sl_mesh *m, sl_moe_layout *l);

/*
 * A pipeline evaluated again and again (the explorer): sl_pipeline_eval
 * with the graphs, spaces and stage plans of earlier calls kept, and pins
 * and forbids inside the stages (an operator outside the layers by name, a
 * layer's operator at its position in every layer).  o must outlive ctx.
 * skipped: constraints naming no operator and strategy of these stages.
 */
typedef struct sl_pipe_ctx sl_pipe_ctx;
sl_pipe_ctx *sl_pipe_ctx_new(const sl_hybrid_opts *o);
void sl_pipe_ctx_free(sl_pipe_ctx *c);
void sl_pipe_ctx_constrain(sl_pipe_ctx *c, const sl_constraints *cs);
int sl_pipe_ctx_eval(sl_pipe_ctx *c, const sl_pipe_config *cfg,
    sl_pipeline *pl, int *skipped, sl_error *err);

/* ------------------------------------------------------------ frameworks */
/* (framework.c) */

/*
 * A model as the frameworks' model arguments describe it, read back from
 * the structure of a graph that shardlab gen builds (GPT pre-LN with tied
 * embeddings, BERT post-LN, LLaMA with RMSNorm, SwiGLU, RoPE and untied
 * output).
 */
typedef struct sl_arch {
	sl_family family;
	int layers;
	int64_t hidden, heads, kv_heads, ffn, vocab;
	int64_t seq;			/* the graph's sequence */
	bool tied;			/* the output layer reads the embedding table */
	bool bias;			/* the linear layers have biases */
	double dropout;			/* attention and hidden dropout */
	/* the mixture's experts and latent attention (experts 0, kv_lora
	 * 0: none); ffn is a dense layer's, or the experts' when every
	 * layer is a mixture */
	sl_moe_arch moe;
} sl_arch;
/* SL_EINPUT (err says why) for a graph of another form. */
int sl_arch_of(const sl_graph *g, sl_arch *a, sl_error *err);

/*
 * A plan as a framework launches it.  Stage j is chunk j / pp of pipeline
 * rank j % pp, as in sl_pipeline.
 */
typedef struct sl_layout {
	sl_framework framework;
	int world;			/* devices */
	int pp, vpp, dp, cp, tp;	/* vpp: chunks per pipeline rank (1 none) */
	sl_schedule schedule;
	int n_stages;			/* pp x vpp */
	const int *stage_layers;	/* per stage; NULL: not yet known */
	const sl_recompute *stage_recompute;	/* per stage; NULL: none */
	int64_t micro_batch;		/* samples per data-parallel rank and micro-batch */
	int64_t micro_batches;		/* per optimizer step */
	int64_t global_batch;		/* micro_batch x dp x micro_batches */
	int64_t seq;			/* 0: the model's */
	sl_precision precision;
	/* state sharding over data parallel: 0 none, 1 optimizer states
	 * (Megatron-LM's distributed optimizer, ZeRO-1), 2 and gradients,
	 * 3 and parameters (ZeRO-3, FSDP) */
	int zero;
	/* of dp, under zero 3: the ranks across which the sharded states
	 * are replicated (HSDP, sl_space_opts.zero_replicate; torchtitan's
	 * data_parallel_replicate_degree), dp / dp_replicate the shard
	 * degree; 0 or 1: sharded over all of dp */
	int dp_replicate;
	bool offload_optimizer;		/* optimizer states in host memory */
	/* a mixture's experts: expert parallel (ranks of data x context
	 * parallel, and of tensor parallel when etp is 1) and expert tensor
	 * parallel degrees, 1 and 1 without; the token dispatcher gathers
	 * every token of the group (allgather) or sends them all-to-all */
	int ep, etp;
	bool allgather;
} sl_layout;
/*
 * Whether the layout's framework accepts it, by its own argument and
 * configuration checks (framework.c names each file); why (may be NULL)
 * gets the rule it breaks.  a may be NULL: the model's rules are skipped.
 * The free framework accepts everything.
 */
bool sl_layout_check(const sl_layout *l, const sl_arch *a, char *why, size_t len);
/*
 * A pipeline as its framework launches it (pipe_export.c): layers and rec are
 * pl->n_stages long and become l's stage arrays.  Tensor parallel is
 * pl->launch_tp, context parallel pl->launch_cp, the rest of the stage
 * sub-mesh data parallel; parameters sharded (+z) are ZeRO-3, else
 * o->space.recipe.shard_states.
 */
int sl_pipeline_layout(const sl_pipeline *pl, const sl_hybrid_opts *o,
    sl_layout *l, int *layers, sl_recompute *rec, sl_error *err);

/*
 * Memory over time of one pipeline stage (pipe_timeline.c): the stage's
 * operators as a graph of their own (activations received from the stage
 * before are its inputs; a parameter another stage owns is held here, as
 * Megatron-LM keeps a copy), on the stage sub-mesh, with the stage's plan
 * and recomputation, its gradients held across the micro-batches, one
 * micro-batch's step on device dev of the sub-mesh; then held through it,
 * what the pipeline device holds beyond that micro-batch: the activations
 * of the other micro-batches in flight at its peak (sl_pipe_dev.acts less
 * this chunk's one) and the states of its other chunks.
 */
typedef struct sl_stage_timeline {
	sl_graph *g;
	sl_space *space;
	int *choice;
	sl_timeline tl;
	int64_t in_flight;		/* the other micro-batches' activations */
	int64_t other_chunks;		/* the states of the device's other chunks */
} sl_stage_timeline;
int sl_pipeline_timeline(const sl_hybrid_opts *o, const sl_pipeline *pl,
    int stage, int dev, bool optimise, sl_stage_timeline *out, sl_error *err);
void sl_stage_timeline_free(sl_stage_timeline *st);
/*
 * The collectives of a stage's parameter states once per optimizer step,
 * on device 0 of its sub-mesh, by kind with their time and bytes
 * (pipe_timeline.c): the gradients' all-reduce, or where
 * recipe.shard_states shards the states their reduce-scatter and the
 * all-gather of the updated weights; ZeRO-3's collectives of every
 * micro-step are not among them.
 */
int sl_pipeline_state_comm(const sl_hybrid_opts *o, const sl_pipeline *pl,
    int stage, sl_comm *out, sl_error *err);

/* Launch descriptions of a pipeline (pipe_export.c): malloc'd text, NULL with
 * err.  Each but json launches with one framework and refuses a plan
 * made for another, or one its framework rejects. */
typedef enum sl_export_kind {
	SL_EXPORT_MEGATRON,	/* a torchrun ... pretrain_gpt.py command */
	SL_EXPORT_DEEPSPEED,	/* a DeepSpeed configuration */
	SL_EXPORT_DTENSOR,	/* a PyTorch DTensor / FSDP2 script */
	SL_EXPORT_JSON,		/* the plan ("shardlab-pipeline") */
	SL_EXPORT_TORCHTITAN,	/* a torchtitan job configuration (TOML) */
	SL_EXPORT_COUNT
} sl_export_kind;
int sl_export_from_name(const char *s);
const char *sl_export_name(sl_export_kind k);
/* The framework an export launches with (free: json, any). */
sl_framework sl_export_framework(sl_export_kind k);
char *sl_pipeline_export(const sl_pipeline *pl, const sl_hybrid_opts *o,
    sl_export_kind k, sl_error *err);

/*
 * Whether strategy st of operator op keeps the contract of the axes' roles
 * (baseline.c): on a dp axis the batch or nothing, on a tp axis anything
 * but the batch, on a cp axis the sequence or nothing (the experts of a
 * mixture may split by expert on either: Megatron-LM's expert parallelism
 * takes its ranks from data and context parallelism); ZeRO's sharded
 * states (+z) over dp and cp axes only.
 */
bool sl_strategy_roles_ok(const sl_space *s, int op, const sl_strategy *st,
    const sl_axis_role *role);
/*
 * The plan framework fw runs on the space (baseline.c), one strategy per
 * operator: on a tp axis Megatron-LM's tensor parallelism with sequence
 * parallelism (torchtitan's plan is the same split: column-parallel q, k,
 * v and first feed-forward matmuls, row-parallel output projections,
 * heads, vocabulary-parallel embedding, output and loss, norms on the
 * sequence), on a dp axis the batch, on a cp axis the sequence; parameters
 * sharded (+z) where shard_params.  A mixture's experts, as Megatron-LM
 * runs them: the router and its gate on the sequence of a tp axis; on the
 * axes of ep_axes (a bit per axis) the experts split by expert, the
 * dispatcher and combine keeping their tokens' split (the all-to-all
 * dispatcher); on a tp axis outside ep_axes the experts split by their
 * width (expert tensor parallel), the tokens gathered before them and
 * reduce-scattered after.  SL_EINPUT, why naming the operator, when an
 * operator has no such strategy.
 */
int sl_framework_choice(const sl_space *s, const sl_axis_role *role,
    unsigned ep_axes, bool shard_params, int *choice, char *why, size_t len);

/*
 * The search's options (plan.c) and the pipeline of a pipeline plan file that
 * records how it was made (has_setup): hardware, devices, recipe, options,
 * batch, and (when it was named) the whole mesh into *topo; then its
 * stages into c, whose layers and recompute point into pf.  The model
 * (o->model) is the caller's to set.  SL_EINPUT for a file that does not
 * say.
 */
int sl_plan_pipe_setup(const sl_plan_file *pf, sl_hybrid_opts *o, sl_topo *topo,
    sl_pipe_config *c, sl_error *err);

/* The precision a framework trains in unless told: megatron for
 * Megatron-LM (--bf16 with fp32 main gradients), amp for torchtitan (bf16
 * compute over fp32 parameters), bf16 otherwise. */
sl_precision sl_framework_precision(sl_framework f);

#ifdef __cplusplus
}
#endif
#endif /* SHARDLAB_H */
