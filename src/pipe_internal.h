/*
 * pipe_internal.h: what the pipeline's files share and no one else sees.
 *
 * The layers split into contiguous stages; each stage is a slice of the
 * graph whose operators the exact intra-operator solver plans on the stage
 * sub-mesh.  A schedule (GPipe, 1F1B, interleaved 1F1B) decides how many
 * micro-batches each device keeps in flight, which multiplies the stage's
 * activations, and how long the pipeline takes: the micro-batches of the
 * slowest device plus the fill and drain of the others.  The search runs
 * over the pipeline degree, the sub-mesh shape, the micro-batch size, the
 * stage boundaries and recomputation; stage solves are cached by layer
 * count, position class (first, middle, last) and the classes of the
 * layers (runs of alike layers), since stages alike in those are alike in
 * everything.  doc/cost-model.md, "Pipelines", has the formulas.
 *
 *   pipe_schedule.c  schedules: micro-batches in flight, peak, bubble, time
 *   pipe_space.c     per graph and sub-mesh: the space, layer classes, tables
 *   pipe_stage.c     stage types, their solves and plans; the cache (hyb)
 *   pipe_eval.c      one pipeline evaluated, and the degrees it launches with
 *   pipe_search.c    the hybrid search
 *   pipe_suggest.c   what would make a model fit
 *   pipe_export.c    launch arguments and configurations (presentation)
 *   pipe_ctx.c       a pipeline kept for the explorer
 *   pipe_account.c   Megatron-LM's recommended layout, and a plan's gain
 */
#ifndef SL_PIPE_INTERNAL_H
#define SL_PIPE_INTERNAL_H

#include "internal.h"

/* ------------------------------------------------------ the stage cache */

/*
 * One strategy space per micro-batch size and sub-mesh, on the whole
 * graph: a stage is the sub-problem of its operators [a, b) and the edges
 * between them.  Its tables per recomputation are shared by every stage.
 * What a stage adds: the transfers across its boundaries, and the states
 * of a parameter it reads but another stage owns (a tied embedding read by
 * the output layer), which it must hold too.
 */

#define N_RECOMP 3	/* none, selective, full */

/* Recomputation by index (pipe_space.c), and the index of one. */
extern const sl_recompute recomp_of[N_RECOMP];
int recomp_index(sl_recompute r);

/*
 * Per operator and strategy of the whole graph, under one recomputation.
 * rep[v]: an operator whose rows are v's, value for value (the operator at
 * the same position of layer 1, when checked equal; else v itself).
 */
/*
 * The time terms of one operator under one strategy (pipe_space.c): per
 * micro-batch its compute (forward, backward and recomputed forward, of
 * which bwd is the backward and the recomputation) and communication
 * besides the gradient sync; once per step the data-parallel gradient
 * all-reduce (sync; with optimizer offload, the gradients' copy to the
 * host as well), the optimizer step (optim: on the device, or the host's
 * and the weights' copy back) and the parameter elements it updates.
 */
typedef struct op_time {
	int64_t compute, comm, bwd;
	int64_t sync, optim, pelems;
} op_time;

typedef struct stage_tab {
	bool ready;
	sl_mem **mem;
	op_time **time;
	int *rep;
	int *of;		/* the operator whose rows v points at (v: its own) */
	/*
	 * ndiff[v]: how many of the operators before v have rows other than
	 * under the recomputation before this one (lazy, tab_same_prev).
	 */
	int *ndiff;
} stage_tab;

/*
 * A space and its tables.  erep[e]: an edge whose tables are e's, value for
 * value (the edge into the same slot of layer 1's operator, when checked
 * equal; else e).  Stages of equal layers share their rows through these,
 * and the solver then reads each distinct layer once (solve_dp.c).
 */
typedef struct space_entry {
	int64_t batch;
	int outer, inner;
	int rep;		/* HSDP's replicate degree (stage_mesh); 1 none */
	sl_space *sp;
	int cur_r;
	int *cand;		/* per operator: the layer-1 operator to check */
	int *erep;
	/*
	 * Per space edge: the row its stage problems' views of it point at
	 * (lazy).  Every solve fills the rows its view keeps first
	 * (type_solve), so the stage problems of a space share them.
	 */
	int64_t **erow;
	/*
	 * Per layer: the first layer of its run of alike layers (every
	 * operator alike, space.c sp->like, and wired alike); middle stages
	 * share a type only over layers of equal classes.  uniform: one run.
	 */
	int *lcls;
	bool uniform;
	stage_tab tab[N_RECOMP];
	/* what each axis of the sub-mesh carries (space_roles) */
	sl_axis_role role[SL_MAX_AXES];
	/* the plan of the framework (sl_framework_choice), once asked for */
	int *fw_choice;
	int fw_rc;
	char fw_why[256];
	/* its stage types by layer count, chained through stage_type.snext */
	struct stage_type **by_n;
	struct space_entry *next;
} space_entry;

/*
 * A stage's plan under one recomputation and one budget: its memory ks
 * states + k acts (k in flight; ks 1, or v for the v alike chunks of an
 * interleaved device, chunk_budget) within cap.
 */
typedef struct stage_plan {
	int r;
	int64_t ks, k, cap;
	bool ok;		/* some plan fits cap */
	int *choice;		/* per operator of the stage */
	sl_mem states;		/* params, grads, optim, buffers (acts 0) */
	int64_t acts, compute, comm, p2p, bwd;
	int64_t sync, optim, pelems;	/* once per step (op_time) */
} stage_plan;

/* An operator slot of the stage that costs extra: a boundary transfer or
 * a foreign parameter's states. */
typedef struct extra {
	int op, slot;		/* op: index in the stage */
	bool p2p;
} extra;

typedef struct stage_type {
	space_entry *se;
	bool first, last;
	int l0, n_layers;	/* l0: the layers of the stage that built it */
	int a, b;		/* operators */
	sl_problem *prob;
	int *edge;		/* stage edge -> space edge */
	int n_extra;
	extra *ex;
	int64_t **xmem[N_RECOMP], **xp2p;	/* [op][strategy]: extras (lazy) */
	/*
	 * The problem's own rows, and views in which operators and edges with
	 * equal tables (and no extras) point at the first such row of the
	 * stage: type_solve fills that row alone.  prim: the operators and
	 * edges whose rows the views hold.
	 */
	int64_t **own_cost, **own_ecost;
	int64_t **view_cost[N_RECOMP], **view_ecost;
	int *prim[N_RECOMP], nprim[N_RECOMP], *eprim, neprim;
	sl_dp *dp;
	int *fast[N_RECOMP];	/* the fastest plan, whatever its memory */
	int n_plan, cap_plan;
	stage_plan *plan;
	struct stage_type *next;	/* every type (hyb.types) */
	struct stage_type *snext;	/* its space's, of its layer count */
} stage_type;

typedef struct graph_entry {
	int64_t batch;
	sl_graph *g;
	int *last_reader;	/* per tensor: the last operator reading it, -1 */
	struct graph_entry *next;
} graph_entry;

typedef struct hyb {
	const sl_hybrid_opts *o;
	graph_entry *graphs;
	space_entry *spaces;
	stage_type *types;
	sl_dp_pool *pool;	/* layers the stages' solvers share */
	int64_t solves, hits;
	bool own_layers;	/* a stage type serves only its own layers */
	/* every strategy's entries of the stage tables, not only the
	 * framework's plan's (space_tab): a stage in Megatron-LM's layout
	 * (sl_pipe_config.layout) reads its own plan's, without sequence
	 * parallelism too */
	bool all_tabs;
	/* the model as a framework describes it; NULL when it is not one
	 * the frameworks run (sl_arch_of) */
	const sl_arch *arch;
} hyb;

/* ------------------------------------------------------ pipe_space.c */

void space_free(space_entry *e);
/* The graph of micro-batch batch (built once), and its entry. */
sl_graph *hyb_graph(hyb *h, int64_t batch, sl_error *err);
const graph_entry *hyb_graph_entry(const hyb *h, const sl_graph *g);
/*
 * The sub-mesh outer x inner of a stage (under HSDP, rep > 1 without
 * named axes: rep x outer / rep), and the link between stages.
 */
int stage_mesh(const hyb *h, int outer, int inner, int rep, sl_mesh *m,
    sl_error *err);
sl_link pp_link(const hyb *h, int outer, int inner);
/* A configuration's replicate degree (sl_pipe_config.dp_replicate, 0: the
 * options'), 1 for none. */
int hyb_rep(const hyb *h, int rep);
/* The axes of stage mesh m (roles role) that HSDP's rep leaves out of +z;
 * 0 when none has that size (or rep <= 1). */
uint8_t stage_zrep(const hyb *h, int rep, const sl_mesh *m,
    const sl_axis_role *role);
/* Whether a configuration can replicate across rep groups; why not. */
bool stage_rep_ok(const hyb *h, int outer, int inner, int rep, char *why,
    size_t len);
/* The space of micro-batch batch on sub-mesh outer x inner under HSDP's
 * rep (built once). */
space_entry *hyb_space(hyb *h, int64_t batch, int outer, int inner, int rep,
    sl_error *err);
stage_tab *space_tab(const hyb *h, space_entry *e, int r);
/*
 * The roles of a stage sub-mesh: --axes' when named, else data parallel
 * outer and tensor parallel inner.  They bind the strategies (the contract
 * of sl_axis_role) when named or when a framework runs the plan.
 */
void space_roles(const hyb *h, int outer, int inner, int rep, sl_axis_role *role);
bool roles_bind(const hyb *h);
/* The framework's plan of the whole graph on the space; NULL (err set)
 * when it has none. */
const int *space_fw_choice(const hyb *h, space_entry *e, sl_error *err);
/* The axes of mesh m over which a framework's experts split by expert
 * (sl_hybrid_opts.ep_axes), a bit each, by the axes' roles. */
unsigned space_ep_axes(const hyb *h, const sl_axis_role *role, const sl_mesh *m);
bool tab_same_prev(const hyb *h, space_entry *e, int r, int a, int b);

/* ------------------------------------------------------ pipe_stage.c */

void hyb_free(hyb *h);
void hyb_drop_space(hyb *h, int64_t batch, int outer, int inner, int rep);
void hyb_drop_solvers(hyb *h);
void stage_ops(const sl_graph *g, int l0, int n, int *a, int *b);
/* The type of the stage of layers [l0, l0 + n) (built once). */
stage_type *hyb_type(hyb *h, int64_t batch, int outer, int inner, int rep,
    int l0, int n, sl_error *err);
void type_extras(const hyb *h, stage_type *t, int r);
/* Allows the strategies the axes' roles admit (all when they bind none). */
void type_allow_roles(const hyb *h, stage_type *t);
void stage_plan_totals(const stage_type *t, const stage_tab *tb, int r,
    const int *c, stage_plan *sp);
/* Memory with ks states and k acts; time of one micro-batch; the time it
 * adds once per step (its gradient sync and optimizer). */
int64_t stage_plan_mem(const stage_plan *p, int64_t ks, int64_t k);
int64_t stage_plan_micro(const stage_plan *p);
int64_t stage_plan_once(const stage_plan *p);
const stage_plan *type_plan(hyb *h, stage_type *t, int r, int64_t ks, int64_t k,
    int64_t m, int64_t cap, sl_error *err);

/* ------------------------------------------------------ pipe_eval.c */

/* A device's sums over its chunks: one micro-batch's backward, and once
 * per step its gradient sync, optimizer and parameter elements. */
typedef struct dev_sums {
	int64_t bwd, sync, optim, pelems;
} dev_sums;
/* The step's sync and optimizer (pl->sync_ns, pl->optim_ns) of p devices
 * of v chunks from their sums. */
void pipe_sync(const hyb *h, sl_pipeline *pl, int p, int v, const dev_sums *dt);

bool device_alike(const hyb *h, const space_entry *se, int p, int v, int d,
    const int *layers, int n);
void chunk_budget(const hyb *h, int v, int64_t K, bool alike, int64_t *ks,
    int64_t *k, int64_t *cap);
int pipeline_eval(hyb *h, const sl_pipe_config *c, sl_pipeline *pl, sl_error *err);

#endif /* SL_PIPE_INTERNAL_H */
