/*
 * cli.h: what the command-line subcommands share: one table of options
 * and its parser (options.c; --help in help.c), one way to open a model (or
 * an IOPDDL problem) into a strategy space and problem and to report errors
 * (session.c), tables that keep their columns in any language (fmt.c), and
 * the GPU validation job (vjob.c).  Each subcommand lives in its own file
 * and exports its row of the table in main.c (solve.c: cli_cmd_solve).
 */
#ifndef SL_CLI_H
#define SL_CLI_H

#include "shardlab.h"
#include "internal.h"

#include <stddef.h>
#include <stdio.h>
#include <wchar.h>

/*
 * The subcommands, one bit each: the row of an option (options.c) says
 * which subcommands take it.
 */
enum cli_cmd_bit {
	CLI_C_TUI = 1u << 0, CLI_C_SOLVE = 1u << 1, CLI_C_SWEEP = 1u << 2,
	CLI_C_COMPARE = 1u << 3, CLI_C_EXPLAIN = 1u << 4, CLI_C_SHOW = 1u << 5,
	CLI_C_GEN = 1u << 6, CLI_C_RENDER = 1u << 7, CLI_C_TIMELINE = 1u << 8,
	CLI_C_VALIDATE = 1u << 9, CLI_C_PROFILE = 1u << 10, CLI_C_PLAN = 1u << 11,
	CLI_C_HELP = 1u << 12,
	CLI_C_ALL = (1u << 13) - 1
};

/*
 * A subcommand: its name, its bit in the option table, what --help says of
 * it, and the function that runs it (argv[0] is the subcommand's name).
 */
struct cli_cmd {
	const char *name;
	unsigned bit;		/* CLI_C_NAME */
	const char *usage;	/* N_(), after "shardlab " in --help */
	const char *help;	/* N_(), one line */
	int (*run)(int argc, char **argv);
	/* lines after the options in `shardlab NAME --help` (gen: a family's
	 * defaults), or NULL; argv as run gets it */
	void (*more_help)(FILE *fp, int argc, char **argv);
};

extern const struct cli_cmd cli_cmd_tui, cli_cmd_solve, cli_cmd_sweep,
    cli_cmd_compare, cli_cmd_explain, cli_cmd_show, cli_cmd_gen,
    cli_cmd_render, cli_cmd_timeline, cli_cmd_validate, cli_cmd_profile,
    cli_cmd_plan, cli_cmd_help;
/* The table, in the order of shardlab --help (main.c). */
extern const struct cli_cmd *const cli_cmds[];
extern const size_t cli_n_cmds;

/* Most rows of the option table (the bits of cli_opts.given). */
#define CLI_MAX_OPTIONS 256

typedef struct cli_opts {
	/* positional arguments after the subcommand */
	int n_args;
	char **args;
	/* which rows of the option table were given (cli_given) */
	unsigned char given[CLI_MAX_OPTIONS / 8];
	/* the model on its mesh */
	bool mesh_set;			/* --mesh/--devices given, or a plan's */
	int n_axes, shape[SL_MAX_AXES];	/* --mesh AxB | --devices N (default 4) */
	const char *mesh_arg;		/* --mesh/--devices as given */
	bool devices_min;		/* plan --devices min: the fewest that fit */
	const char *hw;			/* --hw (default h100-nvlink) */
	/* a plan file's hardware figures, used instead of loading hw
	 * (cli_plan_apply); NULL: load it */
	const sl_hw *hw_figures;
	/* the recipe is a plan file's (cli_plan_apply): framework, precision
	 * and state sharding as it was made, no framework's defaults */
	bool recipe_from_plan;
	bool no_zero;			/* --no-zero: no ZeRO-3/OSDP variants */
	/* what the solver is asked */
	double alpha;			/* --alpha (default 0) */
	sl_constraints cs;		/* --pin / --forbid */
	sl_solver_kind solver;		/* --solver (default auto) */
	int64_t mem_limit;		/* --mem-limit, -1 none */
	bool allow_over_capacity;	/* --allow-over-capacity (solve) */
	double time_limit;		/* --time-limit seconds, 0 none */
	int threads;			/* --threads N: searches side by side,
					 * 0 one per processor (at most 4) */
	/* how the model is trained: --attention, --precision, --recompute,
	 * --global-batch; --micro-batch and --seq are copied in */
	sl_recipe recipe;
	int64_t micro_batch;		/* --micro-batch (default 1) */
	bool micro_batch_set;		/* --micro-batch was given */
	int64_t seq;			/* --seq, 0 the model's */
	/* plan */
	const char *axes;		/* --axes pp,dp,tp */
	sl_schedule schedule;		/* --schedule (default 1f1b) */
	int virt, pp, tp, slack;	/* --virtual-stages, --pp, --tp, --slack */
	bool offload;			/* --offload-optimizer */
	int expert_axes;		/* --expert-axes: SL_EP_* bits, -1 searched */
	int dp_replicate;		/* --dp-replicate N, 0 searched */
	const char *export_kind;	/* --export megatron|deepspeed|torchtitan|dtensor|json */
	/* outputs */
	const char *json;		/* --json FILE|- */
	const char *output;		/* -o FILE */
	const char *export_problem;	/* --export-problem FILE (solve) */
	const char *format;		/* --format (render) */
	bool all_strategies;		/* --all-strategies (render) */
	bool quiet;			/* -q */
	/* one subcommand's */
	const char *plan;		/* --plan FILE (tui, timeline) */
	const char *op;			/* --op NAME (explain), --around NAME (render) */
	const char *strategy;		/* --strategy S (explain) */
	int depth;			/* --depth N (render), -1 unset */
	int layer;			/* --layer N (render), -1 unset */
	const char *trace;		/* --trace FILE (timeline) */
	int device;			/* --device N (timeline) */
	int stage;			/* --stage N (timeline), -1 unset */
	bool emulate;			/* --emulate (validate) */
	int steps;			/* --steps N (validate) */
	/* gen flags */
	const char *hf_config;		/* --hf-config FILE */
	int layers;
	int64_t hidden, heads, kv_heads, ffn, vocab, batch;
	const char *name;
	/* the generator's other fields (sl_gen_fields: --experts 8, --tie
	 * false, --qkv-bias), in the order given, applied by gen */
	int n_gen;
	struct {
		const sl_gen_field *field;
		const char *value;
	} gen[64];
} cli_opts;

/*
 * The option table (options.c): one row per option, saying what its value
 * is, its bounds, the field of cli_opts it sets, which subcommands take it
 * and its line of --help.  The parser, --help, "did you mean" and the man
 * page's lists (tests/cli_options.sh) all read it.
 */
typedef enum cli_arg {
	CLI_FLAG,	/* no value: sets a bool */
	CLI_TEXT,	/* a file or a name, kept as given (const char *) */
	CLI_INT,	/* a plain decimal integer in [lo, hi] (int or int64_t) */
	CLI_NUMBER,	/* a plain decimal number in [lo, hi] (double) */
	CLI_SIZE,	/* bytes, with a unit: 40GiB, 80GB, 512MiB (int64_t) */
	CLI_CHOICE,	/* one of choices, by from_name (an enum) */
	CLI_CUSTOM	/* parsed by parse */
} cli_arg;

/* What a CLI_TEXT value names, for the check that no output replaces an
 * input (options.c, cli_check_files). */
typedef enum cli_file {
	CLI_F_NONE,
	CLI_F_INPUT,	/* a file read (--plan, --hf-config) */
	CLI_F_PROFILE,	/* a hardware profile: a file or a bundled name */
	CLI_F_OUTPUT	/* a file written, "-" for standard output */
} cli_file;

struct cli_option {
	const char *name;	/* --name */
	char short_name;	/* -c, or 0 */
	cli_arg arg;
	const char *metavar;	/* the value in --help: "N", "FILE" (N_()) */
	double lo, hi;		/* bounds of CLI_INT, CLI_NUMBER, CLI_SIZE */
	bool lo_open;		/* CLI_NUMBER: the value must exceed lo */
	const char *unit;	/* CLI_NUMBER: what it counts, for messages (N_()) */
	const char *choices;	/* CLI_CHOICE: "a|b|c", each read by from_name */
	int (*from_name)(const char *s);	/* -1 if unknown */
	int (*parse)(const struct cli_option *opt, const char *arg,
	    cli_opts *o, sl_error *err);	/* CLI_CUSTOM */
	size_t off, size;	/* the field it sets (CLI_FIELD) */
	unsigned cmds;		/* CLI_C_ bits of the subcommands that take it */
	cli_file file;		/* what its value names (CLI_TEXT) */
	const char *help;	/* N_(), one line of --help */
	/* lines after help in --help (--hw: the bundled profiles), or NULL */
	void (*more_help)(FILE *fp);
};
#define CLI_FIELD(f) .off = offsetof(cli_opts, f), \
	.size = sizeof(((cli_opts *)0)->f)

extern const struct cli_option cli_options[];
extern const size_t cli_n_options;

/* Parses argv (argv[0] names the subcommand; another name is the explorer).
 * Returns SL_OK or SL_EINPUT. */
int cli_parse(int argc, char **argv, cli_opts *o, sl_error *err);
void cli_opts_free(cli_opts *o);
/* Whether the option named (without --) was given; an unknown name is a
 * defect of the caller (false, and said on stderr). */
bool cli_given(const cli_opts *o, const char *name);
/* The subcommand argv[0] names, or the explorer. */
const struct cli_cmd *cli_command_of(char **argv);
/* Whether argv asks for --help (or -h) as an option, not as a value. */
bool cli_help_asked(int argc, char **argv);
/* A defect of the tables, said once at start: a subcommand without its own
 * bit, an option no subcommand takes, a field of the wrong size; NULL when
 * none, else what is wrong (in buf). */
const char *cli_tables_check(char *buf, size_t size);
/* The candidate nearest to word by edits (a letter added, dropped, changed,
 * or two swapped), when close enough to be a likely typo; else NULL. */
const char *cli_nearest(const char *word, const char *const *cands, size_t n);
/* `shardlab CMD --help`: usage, what it does, every option it takes. */
void cli_help_command(FILE *fp, const struct cli_cmd *cmd, int argc, char **argv);
/* Says on stderr that word names no subcommand (and the likely one);
 * returns SL_EINPUT. */
int cli_unknown_command(const char *word);

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
	bool fitted;			/* fit holds the plan under the limit */
	sl_fit fit;
} cli_session;

/* Opens o->args[0] (or the default model when there is none and allow_default). */
int cli_open(const cli_opts *o, bool allow_default, cli_session *s, sl_error *err);
/* The model `plan` searches (its first argument), opened at each batch the
 * search asks for. */
typedef struct cli_plan_model {
	const char *arg;
} cli_plan_model;
/* The hybrid search's options from the command line's, as `plan` takes
 * them (plan.c); topo holds a named mesh's axes. */
int cli_hybrid_opts(const cli_opts *o, cli_plan_model *pm, sl_hybrid_opts *ho,
    sl_topo *topo, sl_error *err);
/* The peak of device dev's timeline under a plan, in the order frameworks
 * run it: what a plan must fit (-1 when it cannot be built). */
int64_t cli_plan_peak(const sl_space *s, const int *choice, int dev);
/* The memory limit the options set: --mem-limit, else, for what must fit
 * the device (recompute auto), the profile's memory; <= 0 none. */
int64_t cli_mem_limit(const cli_opts *o, const cli_session *s, bool device);
/*
 * The plan of s->prob under limit (sl_fit_plan with the options' alpha,
 * solver and time limit); recompute: also the fewest recomputed layers.
 */
int cli_fit(const cli_opts *o, cli_session *s, int64_t limit, bool recompute,
    sl_fit *f, sl_error *err);
void cli_close(cli_session *s);

/* Prints "shardlab: file:line:col: message" to stderr; returns err->code. */
int cli_report(const sl_error *err);
/*
 * The engine's settings (sl_setting) as the command line names them: the
 * option ("--mesh"), and err's message in the command line's words: the
 * option where the message names the setting it is about, and how to mend
 * it with an option after it ("(use --mesh 2x4)").
 */
const char *cli_setting_option(sl_setting s);
const char *cli_error_words(const sl_error *err, char *buf, size_t len);
/* Says why a solve ended without a plan; returns the exit status. */
int cli_no_plan(const sl_solution *sol, double time_limit);
/* Warns on stderr when the plan's model changed since it was made. */
void cli_plan_warn(const sl_plan_file *pf, const sl_graph *g);

/* ---- planfile.c: a plan reopened takes how it was made from its file
 * (mesh, hardware, alpha, micro-batch, recipe, options) into o; a flag
 * given that contradicts it is an error naming both. */
int cli_plan_apply(cli_opts *o, const sl_plan_file *pf, sl_error *err);

/* ---- tmpfile.c: an empty temporary file named shardlab-WHAT-XXXXXX in
 * $TMPDIR (or /tmp). */
int cli_tmpfile(char *buf, size_t len, const char *what, sl_error *err);
/* The signals that end the process by default and can be caught, into
 * sigs (at most n); returns how many.  On each, a front end removes the
 * atomic writer's temporary files (sl_atomic_unlink_all). */
#define CLI_MAX_EXIT_SIGNALS 96
int cli_exit_signals(int *sigs, int n);

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
/* The model as every report names it: "gpt-1.7b (sequence 2048)", its
 * name escaped, and the sequence a step trains on when it has one. */
const char *cli_model_str(const sl_graph *g, char *buf, size_t len);
/* Changes that would make a plan fit (ranked): a heading that says whether
 * any fits, then one line each with its memory and step time or why it
 * could not be evaluated. */
void cli_print_changes(FILE *fp, const sl_fit_change *ch, int n);
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
