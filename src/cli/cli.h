/*
 * cli.h: what the command-line subcommands share: one option parser for the
 * options of design.md's contract (options.c), one way to open a model (or
 * an IOPDDL problem) into a strategy space and problem and to report errors
 * (session.c), tables that keep their columns in any language (fmt.c), and
 * the GPU validation job (vjob.c).  Each subcommand lives in its own file
 * and exports its row of the table in main.c (solve.c: cli_cmd_solve).
 */
#ifndef SL_CLI_H
#define SL_CLI_H

#include "shardlab.h"
#include "internal.h"

#include <stdio.h>
#include <wchar.h>

#ifndef ENABLE_NLS
#define ngettext(a, b, n) ((n) == 1 ? (a) : (b))
#endif

/*
 * A subcommand.  options names the long options it takes, space-separated
 * (one spelling of each: "op" admits --around too, "output" -o, "quiet"
 * -q); any other option is refused by cli_parse.
 */
struct cli_cmd {
	const char *name;
	const char *usage;	/* N_(), after "shardlab " in --help */
	const char *help;	/* N_(), one line */
	const char *options;
	int (*run)(int argc, char **argv);
};

/* Options that travel together in the rows. */
#define CLI_O_MESH "mesh devices"
/* how the model is trained (sl_recipe) */
#define CLI_O_RECIPE "micro-batch seq attention precision recompute global-batch"
/* what the solver is asked: constraints and the solver */
#define CLI_O_SOLVE "pin forbid solver"

extern const struct cli_cmd cli_cmd_tui, cli_cmd_solve, cli_cmd_sweep,
    cli_cmd_compare, cli_cmd_explain, cli_cmd_show, cli_cmd_gen,
    cli_cmd_render, cli_cmd_timeline, cli_cmd_validate, cli_cmd_profile,
    cli_cmd_plan, cli_cmd_help;
/* The table, in the order of shardlab --help (main.c). */
extern const struct cli_cmd *const cli_cmds[];
extern const size_t cli_n_cmds;
/* The row naming an option the parser does not know (its name in bad), or
 * NULL when every row's names are known. */
const struct cli_cmd *cli_unknown_option(char *bad, size_t size);

typedef struct cli_opts {
	/* positional arguments after the subcommand */
	int n_args;
	char **args;
	/* common options */
	bool mesh_set;
	int n_axes, shape[SL_MAX_AXES];	/* --mesh AxB | --devices N (default 4) */
	const char *hw;			/* --hw (default h100-nvlink) */
	double alpha;			/* --alpha (default 0) */
	sl_constraints cs;		/* --pin / --forbid */
	sl_solver_kind solver;		/* --solver (default auto) */
	int64_t mem_limit;		/* --mem-limit, -1 none */
	int64_t micro_batch;		/* --micro-batch (default 1) */
	bool micro_batch_set;		/* --micro-batch was given */
	double time_limit;		/* --time-limit seconds, 0 none */
	int threads;			/* --threads N: searches side by side,
					 * 0 one per processor (at most 4) */
	bool no_zero;			/* --no-zero: no ZeRO-3/OSDP variants */
	sl_recipe recipe;		/* --attention, --precision, --recompute,
					 * --global-batch, --micro-batch, --seq */
	/* outputs and per-command options */
	const char *json;		/* --json FILE|- */
	const char *output;		/* -o FILE */
	const char *format;		/* --format */
	const char *plan;		/* --plan FILE (tui) */
	const char *op;			/* --op NAME (explain), --around NAME (render) */
	int depth;			/* --depth N (render), -1 unset */
	int layer;			/* --layer N (render), -1 unset */
	const char *strategy;		/* --strategy S (explain) */
	const char *hf_config;		/* --hf-config FILE (gen) */
	bool emulate;			/* --emulate (validate) */
	int steps;			/* --steps N (validate) */
	const char *export_problem;	/* --export-problem FILE (solve) */
	const char *trace;		/* --trace FILE (timeline) */
	int device;			/* --device N (timeline) */
	bool quiet;			/* -q */
	/* plan */
	const char *mesh_arg;		/* --mesh/--devices as given */
	const char *axes;		/* --axes pp,dp,tp */
	sl_schedule schedule;		/* --schedule (default 1f1b) */
	int virt, pp, tp, slack;	/* --virtual-stages, --pp, --tp, --slack */
	bool offload;			/* --offload-optimizer */
	const char *export_kind;	/* --export megatron|deepspeed|dtensor|json */
	bool framework_set;		/* --framework given (recipe.framework) */
	/* gen flags */
	int layers;
	int64_t hidden, heads, kv_heads, ffn, vocab, seq, batch;
	const char *name;
} cli_opts;

/* Parses argv (argv[0] names the subcommand; another name is the explorer).
 * Returns SL_OK or SL_EINPUT. */
int cli_parse(int argc, char **argv, cli_opts *o, sl_error *err);
void cli_opts_free(cli_opts *o);

/* An opened model: graph, mesh, space, and the problem for o->alpha and pins. */
typedef struct cli_session {
	bool is_iopddl;
	sl_graph *g;			/* NULL for IOPDDL */
	sl_mesh mesh;
	sl_space *space;		/* NULL for IOPDDL */
	sl_problem *prob;		/* NULL if the constraints were infeasible */
	const char *source;		/* what the user named */
	bool recompute_auto;		/* --recompute auto chose s->recompute */
	sl_recompute_choice recompute;
} cli_session;

/* Opens o->args[0] (or the default model when there is none and allow_default). */
int cli_open(const cli_opts *o, bool allow_default, cli_session *s, sl_error *err);
void cli_close(cli_session *s);

/* Prints "shardlab: file:line:col: message" to stderr; returns err->code. */
int cli_report(const sl_error *err);
/* Says why a solve ended without a plan; returns the exit status. */
int cli_no_plan(const sl_solution *sol, double time_limit);
/* Warns on stderr when the plan's model changed since it was made. */
void cli_plan_warn(const sl_plan_file *pf, const sl_graph *g);

/* ---- tmpfile.c: an empty temporary file named shardlab-WHAT-XXXXXX in
 * $TMPDIR (or /tmp). */
int cli_tmpfile(char *buf, size_t len, const char *what, sl_error *err);

/* ---- fmt.c */
/* fprintf whose %Ns widths count display columns (wide translations). */
int cli_fprintf(FILE *fp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The evaluator's step time, tokens per second and MFU, two lines. */
void cli_print_step(FILE *fp, const sl_eval *ev);
/* Columns a terminal gives a character and a UTF-8 string: what cannot be
 * printed counts one (the explorer shows it as '?'). */
int cli_wc_width(wchar_t c);
int cli_text_width(const char *s);
/* sl_format_bytes and sl_format_ns into a buffer of 32 bytes. */
const char *cli_bytes(int64_t v, char *buf);
const char *cli_ns(int64_t v, char *buf);
/* The mesh's shape on standard output: "8" or "4x2". */
void cli_print_mesh(const sl_mesh *m);

#define CLI_DEFAULT_MODEL "gpt-1.7b"
/* Bounds of --alpha (bytes per microsecond) and --time-limit (seconds). */
#define CLI_MAX_ALPHA 1e12
#define CLI_MAX_TIME_LIMIT 604800
/* Most searches side by side (--threads). */
#define CLI_MAX_THREADS 64
#define CLI_DEFAULT_HW "h100-nvlink"

/*
 * GPU validation in the background (vjob.c): start runs the GPU
 * runner as a child process on the plan (s, choice); poll returns 1 while it
 * runs, then SL_OK with res filled (measured beside predicted, per device)
 * or an error saying what is missing (runner not built, no GPU) or failed.
 */
typedef struct cli_vdev {
	bool ok;
	char error[256];
	sl_mem predicted, measured;	/* measured: the runner's allocations */
	int64_t meminfo_delta, meminfo_peak, overhead;	/* cudaMemGetInfo, scratch */
	/* the timeline's peak (0: the list had no events), the most the
	 * runner held replaying them (-1: it did not replay them), and what the
	 * step allocates (the timeline's buffers, transients included) */
	int64_t pred_peak, held_peak;
	sl_mem step_alloc;
	int64_t pred_ns, step_ns, compute_ns, comm_ns;
	bool comm_measured;		/* false: communication modelled */
} cli_vdev;

typedef struct cli_vresult {
	char gpu[256], mode[16];	/* mode "nccl" or "emulated" */
	int n_gpus, steps, warmup, n_devices;
	int64_t gpu_memory;
	cli_vdev *dev;
} cli_vresult;

typedef struct cli_vjob {
	int pid, err_fd;
	char launch_path[512], result_path[512];
	char errbuf[2048];
	size_t errlen;
	int n_devices;
	sl_mem *predicted;
	int64_t *pred_ns, *pred_peak;
	sl_mem *step_alloc;	/* with events: the timeline's buffers by category */
} cli_vjob;

const char *cli_validate_runner(void);	/* NULL when not built/installed */
int cli_validate_start(const sl_space *s, const int *choice, bool emulate,
    int steps, cli_vjob *job, sl_error *err);
int cli_validate_poll(cli_vjob *job, bool block, cli_vresult *res, sl_error *err);
void cli_validate_cancel(cli_vjob *job);
void cli_vresult_free(cli_vresult *res);
/* Reads the runner's result file for n_devices (the predictions beside). */
int cli_vresult_read(const char *path, int n_devices, const sl_mem *predicted,
    const int64_t *pred_ns, cli_vresult *res, sl_error *err);
/* What the runner is predicted to allocate: with the timeline's events the
 * step's buffers (step_alloc), else the plan's prediction. */
const sl_mem *cli_vdev_alloc(const cli_vdev *v);
/* (predicted - measured) / measured, in percent. */
double cli_validate_error(int64_t predicted, int64_t measured);
/* The report table of `shardlab validate` (also the explorer's v report). */
void cli_validate_print(FILE *fp, const char *plan, const sl_space *s,
    const cli_vresult *res);

#endif
