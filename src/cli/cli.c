/*
 * cli.c: the command line.  A table of subcommands over the engine; every
 * subcommand parses the same options (cli_parse), opens its model the same
 * way (cli_open) and reports errors as "shardlab: file:line:col: message".
 * Exit statuses: 0 success, 1 no feasible plan, 2 bad usage or input,
 * 3 internal or solver failure.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- options */

enum {
	OPT_MESH = 256, OPT_DEVICES, OPT_HW, OPT_ALPHA, OPT_PIN, OPT_FORBID,
	OPT_SOLVER, OPT_MEM_LIMIT, OPT_MICRO_BATCH, OPT_TIME_LIMIT, OPT_JSON,
	OPT_FORMAT, OPT_PLAN, OPT_OP, OPT_STRATEGY, OPT_HF_CONFIG, OPT_EMULATE,
	OPT_STEPS, OPT_EXPORT_PROBLEM, OPT_NO_ZERO, OPT_LAYERS, OPT_HIDDEN,
	OPT_HEADS, OPT_KV_HEADS, OPT_FFN, OPT_VOCAB, OPT_SEQ, OPT_BATCH, OPT_NAME,
	OPT_ATTENTION, OPT_PRECISION, OPT_RECOMPUTE, OPT_GLOBAL_BATCH,
	OPT_TRACE, OPT_DEVICE, OPT_DEPTH, OPT_LAYER,
	OPT_AXES, OPT_SCHEDULE, OPT_VIRTUAL, OPT_PP, OPT_TP, OPT_EXPORT,
	OPT_SLACK, OPT_OFFLOAD
};

static const struct option long_opts[] = {
	{ "mesh", required_argument, NULL, OPT_MESH },
	{ "devices", required_argument, NULL, OPT_DEVICES },
	{ "hw", required_argument, NULL, OPT_HW },
	{ "alpha", required_argument, NULL, OPT_ALPHA },
	{ "pin", required_argument, NULL, OPT_PIN },
	{ "forbid", required_argument, NULL, OPT_FORBID },
	{ "solver", required_argument, NULL, OPT_SOLVER },
	{ "mem-limit", required_argument, NULL, OPT_MEM_LIMIT },
	{ "micro-batch", required_argument, NULL, OPT_MICRO_BATCH },
	{ "time-limit", required_argument, NULL, OPT_TIME_LIMIT },
	{ "json", required_argument, NULL, OPT_JSON },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "plan", required_argument, NULL, OPT_PLAN },
	{ "op", required_argument, NULL, OPT_OP },
	{ "around", required_argument, NULL, OPT_OP },
	{ "depth", required_argument, NULL, OPT_DEPTH },
	{ "layer", required_argument, NULL, OPT_LAYER },
	{ "strategy", required_argument, NULL, OPT_STRATEGY },
	{ "hf-config", required_argument, NULL, OPT_HF_CONFIG },
	{ "emulate", no_argument, NULL, OPT_EMULATE },
	{ "steps", required_argument, NULL, OPT_STEPS },
	{ "export-problem", required_argument, NULL, OPT_EXPORT_PROBLEM },
	{ "no-zero", no_argument, NULL, OPT_NO_ZERO },
	{ "layers", required_argument, NULL, OPT_LAYERS },
	{ "hidden", required_argument, NULL, OPT_HIDDEN },
	{ "heads", required_argument, NULL, OPT_HEADS },
	{ "kv-heads", required_argument, NULL, OPT_KV_HEADS },
	{ "ffn", required_argument, NULL, OPT_FFN },
	{ "vocab", required_argument, NULL, OPT_VOCAB },
	{ "seq", required_argument, NULL, OPT_SEQ },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "attention", required_argument, NULL, OPT_ATTENTION },
	{ "precision", required_argument, NULL, OPT_PRECISION },
	{ "recompute", required_argument, NULL, OPT_RECOMPUTE },
	{ "global-batch", required_argument, NULL, OPT_GLOBAL_BATCH },
	{ "trace", required_argument, NULL, OPT_TRACE },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "axes", required_argument, NULL, OPT_AXES },
	{ "schedule", required_argument, NULL, OPT_SCHEDULE },
	{ "virtual-stages", required_argument, NULL, OPT_VIRTUAL },
	{ "pp", required_argument, NULL, OPT_PP },
	{ "tp", required_argument, NULL, OPT_TP },
	{ "export", required_argument, NULL, OPT_EXPORT },
	{ "slack", required_argument, NULL, OPT_SLACK },
	{ "offload-optimizer", no_argument, NULL, OPT_OFFLOAD },
	{ "output", required_argument, NULL, 'o' },
	{ "quiet", no_argument, NULL, 'q' },
	{ NULL, 0, NULL, 0 }
};

/*
 * Which subcommands take which option: an option without a row applies to
 * every subcommand.  One that does not apply is an error, never ignored.
 * "tui" is also the explorer opened without a subcommand.
 */
/* The subcommands that open a model into a strategy space (cli_open). */
#define MODEL_COMMANDS "tui solve sweep compare explain render timeline"
/* How the model is trained: these and show and gen. */
#define RECIPE_COMMANDS MODEL_COMMANDS " show gen plan"
static const struct {
	int opt;
	const char *commands;	/* space-separated subcommand names */
} opt_applies[] = {
	{ OPT_MESH, MODEL_COMMANDS " show plan" },
	{ OPT_DEVICES, MODEL_COMMANDS " show plan" },
	{ OPT_HW, MODEL_COMMANDS " profile plan" },
	{ OPT_ALPHA, "tui solve compare explain render timeline" },
	{ OPT_PIN, "tui solve sweep compare explain render timeline" },
	{ OPT_FORBID, "tui solve sweep compare explain render timeline" },
	{ OPT_SOLVER, "tui solve sweep compare explain render timeline" },
	{ OPT_MEM_LIMIT, "solve compare plan" },
	{ OPT_MICRO_BATCH, RECIPE_COMMANDS },
	{ OPT_SEQ, RECIPE_COMMANDS },
	{ OPT_ATTENTION, RECIPE_COMMANDS },
	{ OPT_PRECISION, RECIPE_COMMANDS },
	{ OPT_RECOMPUTE, RECIPE_COMMANDS },
	{ OPT_GLOBAL_BATCH, RECIPE_COMMANDS },
	{ OPT_TIME_LIMIT, "tui solve render timeline" },
	{ OPT_NO_ZERO, MODEL_COMMANDS " plan" },
	{ OPT_JSON, "solve sweep compare validate plan" },
	{ 'o', "gen render profile plan" },
	{ OPT_FORMAT, "render" },
	{ OPT_PLAN, "tui timeline" },
	{ OPT_OP, "explain render" },		/* --op, --around */
	{ OPT_DEPTH, "render" },
	{ OPT_LAYER, "render" },
	{ OPT_STRATEGY, "explain" },
	{ OPT_HF_CONFIG, "gen" },
	{ OPT_EMULATE, "validate" },
	{ OPT_STEPS, "validate" },
	{ OPT_EXPORT_PROBLEM, "solve" },
	{ OPT_TRACE, "timeline" },
	{ OPT_AXES, "plan" }, { OPT_SCHEDULE, "plan" }, { OPT_VIRTUAL, "plan" },
	{ OPT_PP, "plan" }, { OPT_TP, "plan" }, { OPT_EXPORT, "plan" },
	{ OPT_SLACK, "plan" }, { OPT_OFFLOAD, "plan" },
	{ OPT_DEVICE, "timeline" },
	{ OPT_LAYERS, "gen" }, { OPT_HIDDEN, "gen" }, { OPT_HEADS, "gen" },
	{ OPT_KV_HEADS, "gen" }, { OPT_FFN, "gen" }, { OPT_VOCAB, "gen" },
	{ OPT_BATCH, "gen" }, { OPT_NAME, "gen" },
	{ 'q', "solve compare gen validate render timeline profile" },
};

static bool
opt_applies_to(int opt, const char *cmd)
{
	size_t n = strlen(cmd);

	for (size_t i = 0; i < SL_ARRAY_LEN(opt_applies); i++) {
		const char *p = opt_applies[i].commands;
		if (opt_applies[i].opt != opt)
			continue;
		while ((p = strstr(p, cmd)) != NULL) {
			if ((p == opt_applies[i].commands || p[-1] == ' ') &&
			    (p[n] == ' ' || p[n] == '\0'))
				return true;
			p += n;
		}
		return false;
	}
	return true;
}

/*
 * The subcommand a parse is for: argv[0], or the explorer.  A new
 * subcommand is named here and in the rows of the options it takes.
 */
static const char *
cli_command_name(char **argv)
{
	static const char *const names[] = { "solve", "sweep", "compare",
	    "explain", "show", "gen", "render", "timeline", "validate",
	    "profile", "plan", "help" };

	for (size_t i = 0; argv != NULL && argv[0] != NULL &&
	    i < SL_ARRAY_LEN(names); i++)
		if (strcmp(argv[0], names[i]) == 0)
			return names[i];
	return "tui";
}

static int
parse_int64(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out,
    sl_error *err)
{
	char *end;
	long long v;
	const char *p = s + (*s == '-');

	errno = 0;
	v = strtoll(s, &end, 10);
	if (*p < '0' || *p > '9' || errno != 0 || end == s || *end != '\0' ||
	    v < lo || v > hi)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--%s: expected an integer from %lld to %lld, got '%s'"),
		    opt, (long long)lo, (long long)hi, sl_esc(s));
	*out = v;
	return SL_OK;
}

/* Whether a and b name one existing file. */
static bool
same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return a != NULL && b != NULL && stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	    sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * No output may replace an input of the same command: `solve x.json --json
 * x.json` would lose the model the plan was made from.
 */
static int
cli_check_outputs(const cli_opts *o, sl_error *err)
{
	const struct { const char *opt, *path; } outs[] = {
		{ "--json", o->json }, { "-o", o->output },
		{ "--export-problem", o->export_problem },
	};
	const char *ins[8];
	int n_in = 0;

	for (int i = 0; i < o->n_args && n_in < 5; i++)
		ins[n_in++] = o->args[i];
	ins[n_in++] = o->hf_config;
	ins[n_in++] = o->plan;
	ins[n_in++] = o->hw;
	for (size_t i = 0; i < SL_ARRAY_LEN(outs); i++) {
		if (outs[i].path == NULL || strcmp(outs[i].path, "-") == 0)
			continue;
		for (int j = 0; j < n_in; j++)
			if (same_file(outs[i].path, ins[j]))
				return sl_error_set(err, SL_EINPUT, outs[i].path, 0, 0,
				    _("%s would overwrite an input of the command: choose another file"),
				    outs[i].opt);
		for (size_t j = 0; j < i; j++)
			if (same_file(outs[i].path, outs[j].path) ||
			    (outs[j].path != NULL && strcmp(outs[i].path, outs[j].path) == 0))
				return sl_error_set(err, SL_EINPUT, outs[i].path, 0, 0,
				    _("%s and %s name the same file"), outs[j].opt,
				    outs[i].opt);
	}
	return SL_OK;
}

int
cli_parse(int argc, char **argv, cli_opts *o, sl_error *err)
{
	int c, rc = SL_OK;
	int64_t v;
	const char *cmd = cli_command_name(argv);

	memset(o, 0, sizeof *o);
	o->n_axes = 1;
	o->shape[0] = 4;
	o->shape[1] = 1;
	o->hw = CLI_DEFAULT_HW;
	o->solver = SL_SOLVER_AUTO;
	o->mem_limit = -1;
	o->micro_batch = 1;
	sl_recipe_default(&o->recipe);
	o->steps = 10;
	o->depth = -1;
	o->layer = -1;
	o->slack = 1;
	o->schedule = SL_SCHED_1F1B;
	optind = 0;
	opterr = 0;
	while (rc == SL_OK &&
	    (c = getopt_long(argc, argv, ":o:q", long_opts, NULL)) != -1) {
		const char *name = "";
		for (const struct option *lo = long_opts; lo->name; lo++)
			if (lo->val == c)
				name = lo->name;
		if (c != ':' && c != '?' && !opt_applies_to(c, cmd)) {
			/* the option's own spelling, not its value */
			char shown[64];
			if (name[0] != '\0')
				snprintf(shown, sizeof shown, "--%s", name);
			else
				snprintf(shown, sizeof shown, "-%c", c);
			rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("option '%s' does not apply to '%s' (see shardlab --help)"),
			    shown, cmd);
			break;
		}
		switch (c) {
		case OPT_MESH:
		case OPT_DEVICES:
			o->mesh_arg = optarg;
			if (c == OPT_MESH && strchr(optarg, 'x') != strrchr(optarg, 'x')) {
				/* three or more axes: a pipeline mesh (shardlab plan) */
				int n, sh[SL_MAX_TOPO_AXES];
				sl_axis_role ro[SL_MAX_TOPO_AXES];
				rc = sl_topo_parse(optarg, NULL, &n, sh, ro, err);
				if (rc == SL_OK && n > SL_MAX_AXES)
					o->n_axes = 0;	/* cli_open refuses it */
				o->mesh_set = true;
				break;
			}
			rc = sl_mesh_parse(optarg, &o->n_axes, o->shape, err);
			if (rc == SL_OK && c == OPT_DEVICES && o->n_axes != 1)
				rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
				    _("--devices takes one number; use --mesh AxB for a 2-D mesh"));
			o->mesh_set = true;
			break;
		case OPT_HW:
			o->hw = optarg;
			break;
		case OPT_ALPHA:
			if (!sl_parse_number(optarg, &o->alpha) || o->alpha < 0 ||
			    o->alpha > CLI_MAX_ALPHA)
				rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
				    _("--alpha: expected a decimal number from 0 to %g (bytes per microsecond), got '%s'"),
				    CLI_MAX_ALPHA, sl_esc(optarg));
			break;
		case OPT_PIN:
		case OPT_FORBID:
			rc = sl_constraints_parse(&o->cs, optarg, c == OPT_PIN, err);
			break;
		case OPT_SOLVER: {
			int k = sl_solver_from_name(optarg);
			if (k < 0)
				rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
				    _("--solver: expected auto, dp, ilp, brute or anytime, got '%s'"), sl_esc(optarg));
			else
				o->solver = k;
			break;
		}
		case OPT_MEM_LIMIT:
			o->mem_limit = sl_parse_size(optarg);
			if (o->mem_limit <= 0)
				rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
				    _("--mem-limit: expected a size such as 40GiB or 80GB, got '%s'"),
				    sl_esc(optarg));
			break;
		case OPT_MICRO_BATCH:
			rc = parse_int64(name, optarg, 1, 1 << 20, &o->micro_batch, err);
			o->micro_batch_set = true;
			break;
		case OPT_TIME_LIMIT:
			if (!sl_parse_number(optarg, &o->time_limit) ||
			    !(o->time_limit > 0) || o->time_limit > CLI_MAX_TIME_LIMIT)
				rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
				    _("--time-limit: expected seconds > 0 and at most %d, got '%s'"),
				    CLI_MAX_TIME_LIMIT, sl_esc(optarg));
			break;
		case OPT_JSON: o->json = optarg; break;
		case 'o': o->output = optarg; break;
		case OPT_FORMAT: o->format = optarg; break;
		case OPT_PLAN: o->plan = optarg; break;
		case OPT_TRACE: o->trace = optarg; break;
		case OPT_DEVICE:
			rc = parse_int64(name, optarg, 0, 65535, &v, err);
			o->device = (int)v;
			break;
		case OPT_OP: o->op = optarg; break;
		case OPT_STRATEGY: o->strategy = optarg; break;
		case OPT_HF_CONFIG: o->hf_config = optarg; break;
		case OPT_EMULATE: o->emulate = true; break;
		case OPT_EXPORT_PROBLEM: o->export_problem = optarg; break;
		case OPT_NO_ZERO: o->no_zero = true; break;
		case 'q': o->quiet = true; break;
		case OPT_STEPS:
			rc = parse_int64(name, optarg, 1, 100000, &v, err);
			o->steps = (int)v;
			break;
		case OPT_LAYERS:
			rc = parse_int64(name, optarg, 1, 100000, &v, err);
			o->layers = (int)v;
			break;
		case OPT_HIDDEN: rc = parse_int64(name, optarg, 1, INT32_MAX, &o->hidden, err); break;
		case OPT_HEADS: rc = parse_int64(name, optarg, 1, 1 << 20, &o->heads, err); break;
		case OPT_KV_HEADS: rc = parse_int64(name, optarg, 1, 1 << 20, &o->kv_heads, err); break;
		case OPT_FFN: rc = parse_int64(name, optarg, 1, INT32_MAX, &o->ffn, err); break;
		case OPT_VOCAB: rc = parse_int64(name, optarg, 1, INT32_MAX, &o->vocab, err); break;
		case OPT_SEQ: rc = parse_int64(name, optarg, 1, INT32_MAX, &o->seq, err); break;
		case OPT_BATCH: rc = parse_int64(name, optarg, 1, INT32_MAX, &o->batch, err); break;
		case OPT_NAME: o->name = optarg; break;
		case OPT_ATTENTION:
			if ((v = sl_attention_from_name(optarg)) < 0)
				rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
				    _("--attention: expected flash or naive, got '%s'"), optarg);
			else
				o->recipe.attention = (sl_attention)v;
			break;
		case OPT_PRECISION:
			if ((v = sl_precision_from_name(optarg)) < 0)
				rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
				    _("--precision: expected bf16, megatron, amp or fp32, got '%s'"),
				    optarg);
			else
				o->recipe.precision = (sl_precision)v;
			break;
		case OPT_RECOMPUTE:
			if ((v = sl_recompute_from_name(optarg)) < 0)
				rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
				    _("--recompute: expected none, selective, full or auto, got '%s'"),
				    optarg);
			else
				o->recipe.recompute = (sl_recompute)v;
			break;
		case OPT_GLOBAL_BATCH:
			rc = parse_int64(name, optarg, 1, INT32_MAX, &o->recipe.global_batch, err);
			break;
		case OPT_DEPTH:
			rc = parse_int64(name, optarg, 0, 1000, &v, err);
			o->depth = (int)v;
			break;
		case OPT_LAYER:
			rc = parse_int64(name, optarg, 0, 1000000, &v, err);
			o->layer = (int)v;
			break;
		case OPT_AXES: o->axes = optarg; break;
		case OPT_SCHEDULE:
			if ((v = sl_schedule_from_name(optarg)) < 0)
				rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
				    _("--schedule: expected 1f1b, gpipe or interleaved, got '%s'"),
				    optarg);
			else
				o->schedule = (sl_schedule)v;
			break;
		case OPT_VIRTUAL:
			rc = parse_int64(name, optarg, 1, 64, &v, err);
			o->virt = (int)v;
			break;
		case OPT_PP:
			rc = parse_int64(name, optarg, 1, 65536, &v, err);
			o->pp = (int)v;
			break;
		case OPT_TP:
			rc = parse_int64(name, optarg, 1, 65536, &v, err);
			o->tp = (int)v;
			break;
		case OPT_SLACK:
			rc = parse_int64(name, optarg, -1, 1000, &v, err);
			o->slack = (int)v;
			break;
		case OPT_OFFLOAD: o->offload = true; break;
		case OPT_EXPORT:
			if (sl_export_from_name(optarg) < 0)
				rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
				    _("--export: expected megatron, deepspeed, dtensor or json, got '%s'"),
				    optarg);
			o->export_kind = optarg;
			break;
		case ':':
			rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("option '%s' needs a value"), sl_esc(argv[optind - 1]));
			break;
		default:
			rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("unknown option '%s' (see shardlab --help)"), sl_esc(argv[optind - 1]));
			break;
		}
	}
	o->recipe.micro_batch = o->micro_batch;
	o->recipe.seq = o->seq;
	o->n_args = argc - optind;
	o->args = argv + optind;
	/* GLPK alone can run for hours: asked for by name, it gets a limit */
	if (o->solver == SL_SOLVER_ILP && !(o->time_limit > 0))
		o->time_limit = SL_ILP_DEFAULT_TIME_LIMIT;
	if (rc == SL_OK)
		rc = cli_check_outputs(o, err);
	if (rc != SL_OK)
		/* the pins parsed before the error are not the caller's to free */
		cli_opts_free(o);
	return rc;
}

void
cli_opts_free(cli_opts *o)
{
	sl_constraints_free(&o->cs);
}

int
cli_report(const sl_error *err)
{
	char buf[2048];

	/* names in messages come from files and arguments: escape them */
	fprintf(stderr, "shardlab: %s\n", sl_esc(sl_error_format(err, buf, sizeof buf)));
	return err->code ? err->code : SL_EINTERNAL;
}

void
cli_plan_warn(const sl_plan_file *pf, const sl_graph *g)
{
	char w[1024];

	if (sl_plan_model_changed(pf, g, w, sizeof w))
		fprintf(stderr, _("shardlab: warning: %s\n"), sl_esc(w));
}

/* ---------------------------------------------------------------- opening */

int
cli_open(const cli_opts *o, bool allow_default, cli_session *s, sl_error *err)
{
	const char *arg;
	sl_hw hw;
	sl_model_opts mo;
	sl_space_opts so;
	int rc;

	memset(s, 0, sizeof *s);
	if (o->n_args == 0 && !allow_default)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("a model is needed: a bundled name (%s, ...), a model file or an IOPDDL problem"),
		    CLI_DEFAULT_MODEL);
	if (o->n_args > 1)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("one model at a time: unexpected '%s'"), o->args[1]);
	arg = o->n_args ? o->args[0] : CLI_DEFAULT_MODEL;
	s->source = arg;
	if (access(arg, R_OK) == 0 && sl_iopddl_is_problem(arg)) {
		s->is_iopddl = true;
		s->prob = sl_iopddl_load(arg, err);
		return s->prob ? SL_OK : err->code;
	}
	if ((rc = sl_hw_load(o->hw, &hw, err)) != SL_OK)
		return rc;
	if (o->n_axes == 0)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("mesh \"%s\" has more than %d axes: a mesh with a pipeline axis "
		    "is planned by shardlab plan"), o->mesh_arg, SL_MAX_AXES);
	if ((rc = sl_mesh_make(&hw, o->n_axes, o->shape, &s->mesh, err)) != SL_OK)
		return rc;
	memset(&mo, 0, sizeof mo);
	mo.micro_batch = o->micro_batch;
	mo.devices = s->mesh.n_devices;
	mo.seq = o->seq;
	s->g = sl_model_open(arg, &mo, err);
	if (s->g == NULL)
		return err->code ? err->code : SL_EINPUT;
	if (sl_recipe_accum_steps(&o->recipe, sl_graph_batch(s->g, NULL)) < 0)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--global-batch %lld is not a multiple of the %lld samples of one "
		    "micro-step (micro-batch %lld x %d devices)"),
		    (long long)o->recipe.global_batch,
		    (long long)sl_graph_batch(s->g, NULL), (long long)o->micro_batch,
		    s->mesh.n_devices);
	sl_space_opts_default(&so);
	so.zero = !o->no_zero;
	so.recipe = o->recipe;
	s->space = sl_space_build(s->g, &s->mesh, &so, err);
	if (s->space == NULL)
		return err->code;
	s->prob = sl_space_problem(s->space, o->alpha, &o->cs, err);
	if (s->prob == NULL)
		return err->code;
	if (o->recipe.recompute == SL_RECOMP_AUTO) {
		/* the fewest recomputed layers that fit: --mem-limit, else the device */
		sl_solve_opts sopt = { .time_limit = o->time_limit };
		int64_t cap = o->mem_limit > 0 ? o->mem_limit : s->mesh.hw.memory_bytes;
		int rc2 = sl_recompute_auto(s->space, s->prob, o->alpha, cap, o->solver,
		    &sopt, &s->recompute, err);
		if (rc2 != SL_OK)
			return rc2;
		s->recompute_auto = true;
	}
	return SL_OK;
}

void
cli_close(cli_session *s)
{
	sl_problem_free(s->prob);
	sl_space_free(s->space);
	sl_graph_free(s->g);
	memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------------ solve */

static const char *
B(int64_t v, char *buf)
{
	return sl_format_bytes(v, buf, 32);
}

static const char *
NS(int64_t v, char *buf)
{
	return sl_format_ns(v, buf, 32);
}

/* "recipe: ...", then the batch and sequence a step trains on. */
static void
print_recipe(const sl_space *sp)
{
	const sl_recipe *r = &sp->opts.recipe;
	int64_t seq, b = sl_graph_batch(sp->g, &seq), acc = sl_recipe_accum_steps(r, b);
	char buf[256];

	printf(_("recipe: %s\n"), sl_recipe_describe(r, buf, sizeof buf));
	printf(_("batch: %lld samples per micro-step (micro-batch %lld x %d devices), "
	    "global batch %lld = %lld accumulation steps; sequence %lld\n"),
	    (long long)b, (long long)r->micro_batch, sp->mesh.n_devices,
	    (long long)(b * (acc > 0 ? acc : 1)), (long long)(acc > 0 ? acc : 1),
	    (long long)seq);
}

static void
print_recompute_auto(const sl_recompute_choice *c, int64_t cap)
{
	char b1[32], b2[32];

	if (c->fits)
		printf(_("recompute auto: %d of %d layers recomputed, the fewest for "
		    "%s per device to fit in %s\n"), c->n_recomputed, c->n_layers,
		    B(c->max_total, b1), B(cap, b2));
	else
		printf(_("recompute auto: even with all %d layers recomputed the plan "
		    "needs %s per device, over %s\n"), c->n_layers, B(c->max_total, b1),
		    B(cap, b2));
}

static void
print_mesh(const sl_mesh *m)
{
	if (m->n_axes == 1)
		printf("%d", m->axes[0].size);
	else
		printf("%dx%d", m->axes[0].size, m->axes[1].size);
}

static void
print_solution_line(const sl_solution *sol)
{
	printf(_("solver: %s, %s, %.3f ms"), sl_solver_name(sol->solver),
	    sl_solve_status_name(sol->status), sol->time_ms);
	if (sol->confirmed)
		printf(_(" (confirmed by a second exact solver)"));
	if (sol->note[0])
		printf(" [%s]", sol->note);
	printf("\n");
}

/* 1.65 B, 336.2 M, 4096 */
static const char *
count_str(int64_t n, char *buf)
{
	if (n >= 1000000000)
		snprintf(buf, 32, "%.2f B", (double)n / 1e9);
	else if (n >= 1000000)
		snprintf(buf, 32, "%.2f M", (double)n / 1e6);
	else
		snprintf(buf, 32, "%lld", (long long)n);
	return buf;
}

/* Two layers are alike in a plan when they choose the same strategies. */
static bool
layers_alike(const sl_graph *g, const int *choice, int a, int b)
{
	const sl_layer *la = &g->layers[a], *lb = &g->layers[b];

	if (la->n_ops != lb->n_ops)
		return false;
	for (int i = 0; i < la->n_ops; i++)
		if (choice[la->first_op + i] != choice[lb->first_op + i] ||
		    g->ops[la->first_op + i].kind != g->ops[lb->first_op + i].kind)
			return false;
	return true;
}

/* The kind column: as wide as the longest kind name (cross_entropy). */
#define CLI_KIND_W 13

static void
print_op_row(const sl_space *s, const sl_eval *ev, const int *choice, int v,
    const char *indent, const char *label)
{
	char b1[32], b2[32];

	printf("%s%-*s %-*s %-16s %12s %12s\n", indent,
	    24 - (int)strlen(indent), sl_esc(label), CLI_KIND_W,
	    sl_op_kind_name(s->g->ops[v].kind), sl_esc(s->ops[v].strat[choice[v]].name),
	    B(sl_mem_total(&ev->ops[v].mem), b1),
	    NS(sl_comm_total(&ev->ops[v].comm), b2));
}

static void
mesh_coords_str(const sl_mesh *m, int d, char *buf, size_t len)
{
	int c[SL_MAX_AXES] = { 0 };

	sl_mesh_coords(m, d, c);
	if (m->n_axes == 1)
		snprintf(buf, len, "%d", c[0]);
	else
		snprintf(buf, len, "%d,%d", c[0], c[1]);
}

static void
print_plan(const sl_space *s, const sl_eval *ev, const int *choice)
{
	const sl_graph *g = s->g;
	char b[6][32];

	cli_fprintf(stdout, "\n%-24s %-13s %-16s %12s %12s\n", _("operator"), _("kind"),
	    _("strategy"), _("memory/dev"), _("comm/step"));
	for (int v = 0; v < g->n_ops;) {
		int l = g->ops[v].layer;
		if (l < 0) {
			print_op_row(s, ev, choice, v, "", g->ops[v].name);
			v++;
			continue;
		}
		/* a run of layers that choose alike is printed once */
		int last = l;
		while (last + 1 < g->n_layers && layers_alike(g, choice, l, last + 1) &&
		    g->layers[last + 1].first_op == g->layers[last].first_op + g->layers[last].n_ops)
			last++;
		if (last > l)
			printf("%s .. %s  (%d %s)\n", sl_esc(g->layers[l].name), sl_esc(g->layers[last].name),
			    last - l + 1, _("layers choose alike; figures per layer"));
		else
			printf("%s\n", sl_esc(g->layers[l].name));
		for (int i = 0; i < g->layers[l].n_ops; i++) {
			int u = g->layers[l].first_op + i;
			const char *nm = g->ops[u].name;
			const char *dot = strchr(nm, '.');
			print_op_row(s, ev, choice, u, "  ",
			    (dot && strncmp(nm, g->layers[l].name, dot - nm) == 0) ? dot + 1 : nm);
		}
		v = g->layers[last].first_op + g->layers[last].n_ops;
	}

	/* devices that hold the same, in a row of consecutive devices (as the
	 * explorer shows them) */
	cli_fprintf(stdout, "\n%-9s %-11s %11s %11s %11s %11s %11s %11s\n", _("device"),
	    _("coords"), _("parameters"), _("gradients"), _("optimizer"),
	    _("activations"), _("buffers"), _("total"));
	for (int d = 0, e; d < ev->n_devices; d = e) {
		const sl_mem *m = &ev->dev[d];
		char ds[24], cs[32], c0[12], c1[12];
		int64_t t = sl_mem_total(m);
		for (e = d + 1; e < ev->n_devices &&
		    memcmp(&ev->dev[e], m, sizeof *m) == 0; e++)
			;
		mesh_coords_str(&s->mesh, d, c0, sizeof c0);
		mesh_coords_str(&s->mesh, e - 1, c1, sizeof c1);
		if (e - d > 1) {
			snprintf(ds, sizeof ds, "%d-%d", d, e - 1);
			snprintf(cs, sizeof cs, "%s-%s", c0, c1);
		} else {
			snprintf(ds, sizeof ds, "%d", d);
			snprintf(cs, sizeof cs, "%s", c0);
		}
		printf("%-9s %-11s %11s %11s %11s %11s %11s %11s%s\n", ds, cs,
		    B(m->params, b[0]), B(m->grads, b[1]), B(m->optim, b[2]),
		    B(m->acts, b[3]), B(m->buffers, b[4]), B(t, b[5]),
		    (s->mesh.hw.memory_bytes > 0 && t > s->mesh.hw.memory_bytes) ?
		    _("  over capacity") : "");
	}
	printf("\n%s %s (%s %s)\n", _("max memory per device:"),
	    B(ev->max_total, b[0]), _("capacity"), B(s->mesh.hw.memory_bytes, b[1]));
	printf("%s %s (%lld bytes)\n", _("redundant bytes (device 0):"),
	    B(ev->redundant, b[0]), (long long)ev->redundant);
	printf("%s %s:", _("communication per step:"), NS(ev->comm_ns, b[0]));
	for (int c = 0; c < SL_COLL_COUNT; c++)
		if (ev->comm.ns[c] > 0)
			printf(" %s %s", sl_coll_name(c), NS(ev->comm.ns[c], b[1]));
	printf("\n");
	cli_print_step(stdout, ev);
}

/*
 * A solve that ended without a plan: says why on stderr and returns the exit
 * status (1 only when no plan exists; a limit reached is a failure, 3).
 */
int
cli_no_plan(const sl_solution *sol, double time_limit)
{
	switch (sol->status) {
	case SL_SOLVE_INFEASIBLE:
		fprintf(stderr, _("shardlab: no feasible plan\n"));
		return SL_EINFEASIBLE;
	case SL_SOLVE_LIMIT:
		fprintf(stderr, _("shardlab: the time limit of %g s ran out before the %s solver found a plan (raise --time-limit, or use --solver anytime, which has a plan within a second)\n"),
		    time_limit > 0 ? time_limit : SL_ILP_DEFAULT_TIME_LIMIT,
		    sl_solver_name(sol->solver));
		return SL_EINTERNAL;
	default:
		fprintf(stderr, _("shardlab: the solver stopped without a plan (%s)\n"),
		    sl_solve_status_name(sol->status));
		return SL_EINTERNAL;
	}
}

/* "lower bound: B (gap G%)" when the solver proved one short of optimal. */
static void
print_bound_line(const sl_solution *sol)
{
	if (sol->status != SL_SOLVE_FEASIBLE || sol->bound == INT64_MIN ||
	    sol->bound == INT64_MAX)
		return;
	printf(_("lower bound: %lld (gap %.2f%%)\n"), (long long)sol->bound,
	    sol->objective > 0 ? 100.0 * ((double)sol->objective -
	    (double)sol->bound) / (double)sol->objective : 0.0);
}

/*
 * --time-limit bounds the whole command, reading the problem included (as
 * the contest counts it): the solver gets what reading left, at least a
 * tenth of it.
 */
static int
cmd_solve_iopddl(const cli_opts *o, cli_session *s, const struct timespec *t0)
{
	sl_solve_opts so = { .time_limit = o->time_limit };
	struct timespec now;
	sl_solution sol;
	sl_error err;
	bool to_stdout = o->json != NULL && strcmp(o->json, "-") == 0;
	bool quiet = o->quiet || to_stdout;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (so.time_limit > 0) {
		double used = (double)(now.tv_sec - t0->tv_sec) +
		    (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
		so.time_limit = fmax(o->time_limit - used, o->time_limit / 10);
	}
	sl_error_clear(&err);
	sl_solution_init(&sol, s->prob->n);
	rc = sl_solve(s->prob, o->solver, &so, &sol, &err);
	if (rc != SL_OK) {
		sl_solution_free(&sol);
		return cli_report(&err);
	}
	if (!quiet) {
		printf(_("problem %s: %d nodes, %d edges\n"),
		    sl_esc(s->prob->name ? s->prob->name : "?"), s->prob->n, s->prob->m);
		print_solution_line(&sol);
	}
	if (sol.status == SL_SOLVE_OPTIMAL || sol.status == SL_SOLVE_FEASIBLE) {
		rc = SL_OK;
		if (!quiet) {
			printf(_("objective: %lld\n"), (long long)sol.objective);
			print_bound_line(&sol);
			if (s->prob->usage_limit >= 0)
				printf(_("feasible: %s (peak usage %lld, limit %lld)\n"),
				    sl_problem_feasible(s->prob, sol.choice) ?
				    _("yes") : _("no"),
				    (long long)sl_problem_peak_usage(s->prob,
				    sol.choice), (long long)s->prob->usage_limit);
			printf(_("strategies:"));
			for (int v = 0; v < s->prob->n && v < 64; v++)
				printf(" %d", sol.choice[v]);
			printf("%s\n", s->prob->n > 64 ? " ..." : "");
		}
		if (o->json != NULL &&
		    sl_problem_plan_write(s->prob, &sol, o->json, &err) != SL_OK)
			rc = cli_report(&err);
		else if (o->json != NULL && !quiet)
			printf(_("plan written to %s\n"), o->json);
	} else {
		if (quiet)
			print_solution_line(&sol);
		rc = cli_no_plan(&sol, o->time_limit);
	}
	sl_solution_free(&sol);
	return rc;
}

/* Solves s->prob; SL_OK with a usable solution, else the exit status. */
static int
solve_problem(const cli_opts *o, cli_session *s, sl_solution *sol)
{
	sl_solve_opts so = { .time_limit = o->time_limit };
	sl_error err;
	int rc;

	sl_error_clear(&err);
	sl_solution_init(sol, s->prob->n);
	rc = sl_solve(s->prob, o->solver, &so, sol, &err);
	if (rc != SL_OK)
		return cli_report(&err);
	if (sol->status != SL_SOLVE_OPTIMAL && sol->status != SL_SOLVE_FEASIBLE)
		return cli_no_plan(sol, o->time_limit);
	return SL_OK;
}

/*
 * The plan at the user's alpha needs more than --mem-limit: take, among the
 * plans of the alpha frontier that fit, the one with the least weighed
 * objective at the user's alpha (a Lagrangian choice: exact on the
 * frontier's plans, not over every plan).  No plan fits: exit status 1.
 */
static int
fit_mem_limit(const cli_opts *o, cli_session *s, sl_solution *sol, sl_eval *ev)
{
	sl_frontier f = { 0 };
	sl_error err;
	int best = -1;
	int64_t best_obj = INT64_MAX;
	char b1[32], b2[32];

	sl_error_clear(&err);
	if (sl_sweep(s->space, &o->cs, o->solver, &f, &err) != SL_OK)
		return cli_report(&err);
	for (int i = 0; i < f.n; i++) {
		int64_t obj = sl_weigh(f.pt[i].mem, f.pt[i].comm_ns, o->alpha);
		if (f.pt[i].mem <= o->mem_limit && obj < best_obj) {
			best = i;
			best_obj = obj;
		}
	}
	if (best < 0) {
		fprintf(stderr, _("shardlab: no plan fits in --mem-limit %s per device: the least-memory plan needs %s\n"),
		    B(o->mem_limit, b1), B(f.n ? f.pt[0].mem : ev->max_total, b2));
		sl_frontier_free(&f);
		return SL_EINFEASIBLE;
	}
	memcpy(sol->choice, f.pt[best].choice, s->g->n_ops * sizeof *sol->choice);
	sol->objective = sl_problem_score(s->prob, sol->choice);
	sol->status = SL_SOLVE_FEASIBLE;
	snprintf(sol->note, sizeof sol->note,
	    _("memory limit: frontier plan %d of %d (optimal for alpha %.4g..%.4g)"),
	    best + 1, f.n, f.pt[best].alpha_lo, f.pt[best].alpha_hi);
	sl_eval_free(ev);
	sl_frontier_free(&f);
	if (sl_evaluate(s->space, sol->choice, o->alpha, ev, &err) != SL_OK)
		return cli_report(&err);
	return SL_OK;
}

/* The solvers weigh the sum of what a device holds; the step needs the
 * peak of its timeline.  Both, and the gap, on device 0. */
static void
print_peak(const sl_space *sp, const int *choice)
{
	sl_timeline tl;
	char b1[32], b2[32], b3[32], b4[32];

	if (sl_timeline_build(sp, choice, 0, true, &tl, NULL) != SL_OK)
		return;
	printf(_("memory over time on device 0: peak %s (default order %s), sum %s, gap %+.1f%%; reserved by the caching allocator %s\n"),
	    B(tl.peak, b1), B(tl.peak_default, b2), B(tl.sum, b3),
	    tl.sum > 0 ? 100.0 * (double)(tl.peak - tl.sum) / (double)tl.sum : 0.0,
	    B(tl.reserved_peak, b4));
	sl_timeline_free(&tl);
}

static int
cmd_solve(int argc, char **argv)
{
	cli_opts o;
	cli_session s;
	sl_solution sol;
	sl_eval ev;
	sl_error err;
	struct timespec t0;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	sl_error_clear(&err);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);
	if ((rc = cli_open(&o, false, &s, &err)) != SL_OK) {
		cli_close(&s);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if (s.is_iopddl) {
		rc = cmd_solve_iopddl(&o, &s, &t0);
		goto out;
	}
	if ((rc = solve_problem(&o, &s, &sol)) != SL_OK)
		goto out;
	if ((rc = sl_evaluate(s.space, sol.choice, o.alpha, &ev, &err)) != SL_OK) {
		sl_solution_free(&sol);
		rc = cli_report(&err);
		goto out;
	}
	if (ev.objective != sol.objective) {
		fprintf(stderr, _("shardlab: internal error: the evaluator scores the plan %lld, the solver %lld\n"),
		    (long long)ev.objective, (long long)sol.objective);
		rc = SL_EINTERNAL;
	}
	if (rc == SL_OK && o.mem_limit > 0 && ev.max_total > o.mem_limit)
		rc = fit_mem_limit(&o, &s, &sol, &ev);
	if (rc == SL_OK && o.export_problem != NULL)
		rc = sl_iopddl_save(s.prob, o.export_problem, &err) == SL_OK ? SL_OK :
		    cli_report(&err);
	if (rc == SL_OK && o.json != NULL) {
		sl_plan_meta meta = { .model_source = s.source, .alpha = o.alpha,
		    .sol = &sol, .cs = &o.cs, .micro_batch = o.micro_batch,
		    .hw_source = o.hw };
		if (sl_plan_write(s.space, sol.choice, &ev, &meta, o.json, &err) != SL_OK)
			rc = cli_report(&err);
	}
	if (rc == SL_OK && !(o.json != NULL && strcmp(o.json, "-") == 0) && !o.quiet) {
		char pc[32];
		printf(_("model %s: %d operators, %s parameters; mesh "), sl_esc(s.g->name),
		    s.g->n_ops, count_str(sl_graph_param_count(s.g), pc));
		print_mesh(&s.mesh);
		printf(_(" on %s; alpha %g\n"), sl_esc(s.mesh.hw.name), o.alpha);
		print_recipe(s.space);
		if (s.recompute_auto)
			print_recompute_auto(&s.recompute, o.mem_limit > 0 ? o.mem_limit :
			    s.mesh.hw.memory_bytes);
		print_solution_line(&sol);
		printf(_("objective: %lld\n"), (long long)sol.objective);
		print_plan(s.space, &ev, sol.choice);
		print_peak(s.space, sol.choice);
		if (o.json != NULL)
			printf(_("plan written to %s\n"), o.json);
	}
	sl_eval_free(&ev);
	sl_solution_free(&sol);
out:
	cli_close(&s);
	cli_opts_free(&o);
	return rc;
}

/* ------------------------------------------------------------------ sweep */

/* s as a JSON string: names may hold quotes and control characters. */
static void
json_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(fp, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(fp, "\\u%04x", *p);
		else
			fputc(*p, fp);
	}
	fputc('"', fp);
}

static int
cmd_sweep(int argc, char **argv)
{
	cli_opts o;
	cli_session s;
	sl_frontier f = { 0 };
	sl_error err;
	int rc;
	char b1[32], b2[32], b3[32], b4[32];

	sl_error_clear(&err);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);
	if ((rc = cli_open(&o, false, &s, &err)) != SL_OK || s.is_iopddl) {
		if (rc == SL_OK)
			rc = sl_error_set(&err, SL_EINPUT, s.source, 0, 0,
			    _("sweep needs a model: an IOPDDL problem has no alpha"));
		cli_close(&s);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if ((rc = sl_sweep(s.space, &o.cs, o.solver, &f, &err)) != SL_OK) {
		rc = cli_report(&err);
		goto out;
	}
	if (o.json != NULL) {
		sl_atomic a;
		if ((rc = sl_atomic_open(&a, o.json, &err)) != SL_OK) {
			rc = cli_report(&err);
			goto out;
		}
		fputs("{\"format\": \"shardlab-sweep\", \"version\": 1, \"model\": ", a.fp);
		json_str(a.fp, s.g->name);
		fputs(", \"points\": [", a.fp);
		for (int i = 0; i < f.n; i++) {
			fprintf(a.fp, "%s\n  {\"alpha_lo\": %.17g, \"alpha_hi\": ", i ? "," : "",
			    f.pt[i].alpha_lo);
			if (f.pt[i].alpha_hi < 0)
				fprintf(a.fp, "null");
			else
				fprintf(a.fp, "%.17g", f.pt[i].alpha_hi);
			fprintf(a.fp, ", \"memory_bytes\": %lld, \"comm_time_ns\": %lld, "
			    "\"step_time_ns\": %lld, \"tokens_per_s\": %.6g, \"mfu\": %.6g, "
			    "\"strategies\": {",
			    (long long)f.pt[i].mem, (long long)f.pt[i].comm_ns,
			    (long long)f.pt[i].step_ns, f.pt[i].tokens_per_s, f.pt[i].mfu);
			for (int v = 0; v < s.g->n_ops; v++) {
				fputs(v ? ", " : "", a.fp);
				json_str(a.fp, s.g->ops[v].name);
				fputs(": ", a.fp);
				json_str(a.fp, s.space->ops[v].strat[f.pt[i].choice[v]].name);
			}
			fprintf(a.fp, "}}");
		}
		fprintf(a.fp, "\n]}\n");
		if ((rc = sl_atomic_commit(&a, &err)) != SL_OK) {
			rc = cli_report(&err);
			goto out;
		}
		if (strcmp(o.json, "-") == 0)
			goto out;
	}
	printf(_("alpha frontier of %s on "), sl_esc(s.g->name));
	print_mesh(&s.mesh);
	printf(_(": %d distinct plans\n\n"), f.n);
	cli_fprintf(stdout, "%-4s %-27s %14s %14s %12s %10s %6s\n", "#",
	    _("alpha (bytes/us)"), _("memory/dev"), _("comm/step"), _("step time"),
	    _("tokens/s"), _("MFU"));
	for (int i = 0; i < f.n; i++) {
		char range[64];
		if (f.pt[i].alpha_hi < 0)
			snprintf(range, sizeof range, "%.4g .. inf", f.pt[i].alpha_lo);
		else
			snprintf(range, sizeof range, "%.4g .. %.4g", f.pt[i].alpha_lo,
			    f.pt[i].alpha_hi);
		printf("%-4d %-27s %14s %14s %12s %10s %5.1f%%%s\n", i + 1, range,
		    B(f.pt[i].mem, b1), NS(f.pt[i].comm_ns, b2),
		    NS(f.pt[i].step_ns, b3),
		    sl_format_rate(f.pt[i].tokens_per_s, b4, sizeof b4),
		    100 * f.pt[i].mfu, s.mesh.hw.memory_bytes > 0 &&
		    f.pt[i].mem > s.mesh.hw.memory_bytes ? _("  over capacity") : "");
	}
out:
	sl_frontier_free(&f);
	cli_close(&s);
	cli_opts_free(&o);
	return rc;
}

/* ------------------------------------------------------------------- show */

static void
shape_str(const sl_tensor *t, char *buf, size_t len)
{
	size_t o = snprintf(buf, len, "[");
	for (int i = 0; i < t->rank && o < len; i++)
		o += snprintf(buf + o, len - o, "%s%lld", i ? "," : "", (long long)t->dims[i]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

static int
cmd_show(int argc, char **argv)
{
	cli_opts o;
	sl_graph *g;
	sl_error err;
	sl_model_opts mo;
	char b1[32];

	sl_error_clear(&err);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);
	if (o.n_args != 1) {
		cli_opts_free(&o);
		sl_error_set(&err, SL_EINPUT, NULL, 0, 0, _("usage: shardlab show MODEL"));
		return cli_report(&err);
	}
	if (access(o.args[0], R_OK) == 0 && sl_iopddl_is_problem(o.args[0])) {
		sl_problem *p = sl_iopddl_load(o.args[0], &err);
		int64_t ks = 0;
		if (p == NULL) {
			cli_opts_free(&o);
			return cli_report(&err);
		}
		for (int v = 0; v < p->n; v++)
			ks += p->k[v];
		printf(_("IOPDDL problem %s: %d nodes, %d edges, %.2f strategies per node on average, usage limit %lld\n"),
		    sl_esc(p->name ? p->name : "?"), p->n, p->m, p->n ? (double)ks / p->n : 0.0,
		    (long long)p->usage_limit);
		sl_problem_free(p);
		cli_opts_free(&o);
		return SL_OK;
	}
	memset(&mo, 0, sizeof mo);
	mo.micro_batch = o.micro_batch;
	mo.devices = o.shape[0] * (o.n_axes > 1 ? o.shape[1] : 1);
	mo.seq = o.seq;
	g = sl_model_open(o.args[0], &mo, &err);
	if (g == NULL) {
		cli_opts_free(&o);
		return cli_report(&err);
	}
	printf(_("model %s (%s)\n"), sl_esc(g->name), sl_esc(g->source));
	{
		int per = 0;
		for (int c = SL_CAT_PARAMS; c <= SL_CAT_OPTIM; c++)
			per += sl_recipe_state_bytes(&o.recipe, c);
		printf(_("parameters: %lld (%.3f B), %s of training state at %d bytes each (%s)\n"),
		    (long long)sl_graph_param_count(g), (double)sl_graph_param_count(g) / 1e9,
		    B(sl_mul_sat(per, sl_graph_param_count(g)), b1), per,
		    sl_precision_name(o.recipe.precision));
	}
	printf(_("operators: %d, tensors: %d, layers: %d\n\n"), g->n_ops, g->n_tensors,
	    g->n_layers);
	cli_fprintf(stdout, "%-24s %-14s %-10s %s\n", _("operator"), _("kind"), _("layer"),
	    _("inputs -> outputs"));
	for (int v = 0; v < g->n_ops; v++) {
		const sl_op *op = &g->ops[v];
		printf("%-24s %-14s %-10s ", sl_esc(op->name), sl_op_kind_name(op->kind),
		    op->layer >= 0 ? sl_esc(g->layers[op->layer].name) : "-");
		for (int i = 0; i < op->n_in; i++)
			printf("%s%s", i ? ", " : "", sl_esc(g->tensors[op->in[i]].name));
		printf(" -> ");
		for (int i = 0; i < op->n_out; i++)
			printf("%s%s", i ? ", " : "", sl_esc(g->tensors[op->out[i]].name));
		printf("\n");
	}
	cli_fprintf(stdout, "\n%-28s %-22s %-6s %s\n", _("tensor"), _("shape"), _("dtype"), _("role"));
	for (int t = 0; t < g->n_tensors; t++) {
		char sh[96];
		shape_str(&g->tensors[t], sh, sizeof sh);
		printf("%-28s %-22s %-6s %s\n", sl_esc(g->tensors[t].name), sh,
		    sl_dtype_name(g->tensors[t].dtype), sl_role_name(g->tensors[t].role));
	}
	sl_graph_free(g);
	cli_opts_free(&o);
	return SL_OK;
}

/* -------------------------------------------------------------------- gen */

/* shardlab gen FAMILY --help: the flags with the family's defaults. */
static int
gen_help(const char *family)
{
	int fam = family ? sl_family_from_name(family) : -1;

	printf("%s\n", _("usage: shardlab gen gpt|bert|llama [FLAGS] [--hf-config FILE] [-o FILE]"));
	for (int f = 0; f <= SL_FAM_LLAMA; f++) {
		sl_gen_config c;
		if (fam >= 0 && f != fam)
			continue;
		sl_gen_family_defaults((sl_family)f, &c);
		printf(_("\n%s (defaults of %s):\n"), f == SL_FAM_GPT ? "gpt" :
		    f == SL_FAM_BERT ? "bert" : "llama", c.name);
		printf(_("  --layers N      transformer layers (%d)\n"), c.layers);
		printf(_("  --hidden H      hidden size (%lld)\n"), (long long)c.hidden);
		printf(_("  --heads A       attention heads (%lld)\n"), (long long)c.heads);
		printf(_("  --kv-heads K    key/value heads (grouped-query attention; llama only; default: heads)\n"));
		printf(_("  --ffn F         feed-forward size (default %s)\n"),
		    f == SL_FAM_LLAMA ? _("2/3 x 4 x hidden rounded up to a multiple of 256") :
		    _("4 x hidden"));
		printf(_("  --vocab V       vocabulary (%lld)\n"), (long long)c.vocab);
		printf(_("  --seq S         training sequence length (%lld; a --hf-config trains at min(max_position_embeddings, %d))\n"),
		    (long long)c.seq, SL_HF_MAX_SEQ);
	}
	printf("\n%s\n", _("  --batch B       fix the graph's batch (default: micro-batch x devices, set when the model is opened)\n"
	    "  --name NAME     model name (default: FAMILY-LAYERSxHIDDEN, or the config's name)\n"
	    "  --hf-config F   read the sizes from a Hugging Face config.json of the same family\n"
	    "  -o FILE         write the model there (default: standard output)"));
	return fflush(stdout) == 0 && !ferror(stdout) ? SL_OK : SL_EINTERNAL;
}

static int
cmd_gen(int argc, char **argv)
{
	cli_opts o;
	sl_gen_config c;
	sl_graph *g;
	sl_error err;
	int fam, rc;

	sl_error_clear(&err);
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return gen_help(argc > 1 && argv[1][0] != '-' ? argv[1] : NULL);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);
	if (o.n_args != 1 || (fam = sl_family_from_name(o.args[0])) < 0) {
		sl_error_set(&err, SL_EINPUT, NULL, 0, 0,
		    _("usage: shardlab gen gpt|bert|llama [--layers N] [--hidden H] [--heads A] [--kv-heads K] [--ffn F] [--vocab V] [--seq S] [--batch B] [--name NAME] [--hf-config FILE] [-o FILE] (shardlab gen FAMILY --help lists the defaults)"));
		cli_opts_free(&o);
		return cli_report(&err);
	}
	sl_gen_family_defaults(fam, &c);
	if (o.hf_config != NULL) {
		if (sl_gen_from_hf_config(o.hf_config, &c, &err) != SL_OK) {
			cli_opts_free(&o);
			return cli_report(&err);
		}
		if ((int)c.family != fam) {
			static const char *const fn[] = { "gpt", "bert", "llama" };
			sl_error_set(&err, SL_EINPUT, o.hf_config, 0, 0,
			    _("this config describes a %s-family model, not %s: use "
			    "shardlab gen %s --hf-config %s"), fn[c.family], fn[fam],
			    fn[c.family], o.hf_config);
			cli_opts_free(&o);
			return cli_report(&err);
		}
	}
	if (o.layers) c.layers = o.layers;
	if (o.hidden) c.hidden = o.hidden;
	if (o.heads) {
		/* kv_heads follows heads unless given (or read from a config) */
		if (c.kv_heads == c.heads || c.kv_heads <= 0)
			c.kv_heads = o.heads;
		c.heads = o.heads;
	}
	if (o.kv_heads) c.kv_heads = o.kv_heads;
	if (o.ffn) c.ffn = o.ffn;
	if (o.vocab) c.vocab = o.vocab;
	if (o.seq) {
		c.seq = o.seq;
		c.max_positions = 0;
	}
	if (o.batch) c.batch = o.batch;
	if (o.name)
		snprintf(c.name, sizeof c.name, "%s", o.name);
	else if (o.hf_config == NULL)
		snprintf(c.name, sizeof c.name, "%s-%dx%lld", o.args[0], c.layers,
		    (long long)c.hidden);
	g = sl_gen(&c, &err);
	if (g == NULL) {
		/* sizes from a config: the error is about that file */
		if (o.hf_config != NULL && err.file[0] == '\0')
			snprintf(err.file, sizeof err.file, "%s", o.hf_config);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	/* Without --batch the file describes the generator, so its batch
	 * follows --micro-batch and the devices like the bundled models'. */
	if (o.batch)
		rc = sl_model_save_json(g, o.output ? o.output : "-", &err);
	else
		rc = sl_gen_save(&c, o.output ? o.output : "-", &err);
	if (rc != SL_OK) {
		rc = cli_report(&err);
	} else if (!o.quiet) {
		if (c.max_positions > 0)
			fprintf(stderr, _("shardlab: training sequence %lld: the config "
			    "allows %lld positions, capped at %d (--seq to change)\n"),
			    (long long)c.seq, (long long)c.max_positions, SL_HF_MAX_SEQ);
		if (o.output != NULL)
			fprintf(stderr, _("shardlab: wrote %s: %s, %d operators, %.3f B "
			    "parameters, sequence %lld\n"), o.output, c.name, g->n_ops,
			    (double)sl_graph_param_count(g) / 1e9, (long long)c.seq);
	}
	sl_graph_free(g);
	cli_opts_free(&o);
	return rc;
}

/* ------------------------------------------------------------------- main */

typedef struct cli_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
	const char *help;
} cli_cmd;

static int cmd_help(int argc, char **argv);

static const cli_cmd commands[] = {
	{ "tui", cli_cmd_tui, N_("tui [MODEL] [OPTIONS] [--plan FILE]"),
	  N_("open the explorer (the default without a subcommand)") },
	{ "solve", cmd_solve, N_("solve MODEL [OPTIONS] [--json FILE|-] [--export-problem FILE]"),
	  N_("find the plan with the least memory traded against communication") },
	{ "sweep", cmd_sweep, N_("sweep MODEL [OPTIONS] [--json FILE|-]"),
	  N_("every optimal plan over alpha: the memory/communication Pareto table") },
	{ "compare", cli_cmd_compare, N_("compare MODEL [OPTIONS] [--json FILE|-]"),
	  N_("our plan against data parallel, ZeRO, Megatron-LM, Alpa and Colossal-Auto") },
	{ "explain", cli_cmd_explain, N_("explain MODEL --op NAME [--strategy S] [OPTIONS]"),
	  N_("what one operator's strategy stores, moves and costs, step by step") },
	{ "show", cmd_show, N_("show MODEL"),
	  N_("operators, tensors and parameter count of a model") },
	{ "gen", cmd_gen, N_("gen gpt|bert|llama [FLAGS] [--hf-config FILE] [-o FILE]"),
	  N_("write a model file for a transformer family") },
	{ "render", cli_cmd_render, N_("render MODEL [OPTIONS] --format dot|svg -o FILE"),
	  N_("draw the strategy graph of the chosen plan with Graphviz") },
	{ "timeline", cli_cmd_timeline,
	  N_("timeline MODEL [OPTIONS] [--plan FILE] [--device N] [--trace FILE]"),
	  N_("memory over one training step: the peak, the order that lowers it, a trace") },
	{ "validate", cli_cmd_validate, N_("validate PLAN [--emulate] [--steps N] [--json FILE|-]"),
	  N_("run a plan's training step on local GPUs and compare with the prediction") },
	{ "profile", cli_cmd_profile, N_("profile [--hw BASE] -o FILE"),
	  N_("measure a hardware profile on the local GPUs (needs the GPU runner)") },
	{ "plan", cli_cmd_plan, N_("plan MODEL --devices N | --mesh AxBxC --axes pp,dp,tp [--global-batch B] [OPTIONS] [--export KIND] [-o FILE]"),
	  N_("pipeline, data and tensor parallel degrees, micro-batches, stages and recomputation: the fastest plan that fits") },
	{ "help", cmd_help, N_("help"), N_("this text") },
};

static int
cmd_help(int argc, char **argv)
{
	printf(_("usage: shardlab [SUBCOMMAND] [ARGUMENTS]\n\n"));
	for (size_t i = 0; i < SL_ARRAY_LEN(commands); i++)
		printf("  shardlab %s\n      %s\n", _(commands[i].usage), _(commands[i].help));
	printf(_("\nOPTIONS: --mesh AxB | --devices N, --hw PROFILE, --alpha A (bytes per microsecond),\n"
	    "         --pin OP=STRATEGY, --forbid OP=STRATEGY (repeatable), --solver auto|dp|ilp|brute|anytime,\n"
	    "         --mem-limit SIZE, --time-limit SECONDS, --no-zero\n"
	    "RECIPE:  --attention flash|naive, --precision bf16|megatron|amp|fp32,\n"
	    "         --recompute none|selective|full|auto, --micro-batch B, --global-batch B, --seq S\n"
	    "MODEL:   a bundled model name, a model JSON file, or an IOPDDL problem (.json, .json.gz)\n"
	    "exit status: 0 success, 1 no feasible plan, 2 bad usage or input, 3 internal or solver failure\n"
	    "See shardlab(1), shardlab-model(5) and shardlab-plan(5).\n"));
	return SL_OK;
}

/*
 * Standard output is checked once, after the command: a full disk or a closed
 * pipe is a failed command (status 3), never a silent truncation.
 */
static int
cli_finish(int rc)
{
	bool bad = fflush(stdout) != 0 || ferror(stdout);
	int e = errno;

	if (fclose(stdout) != 0 && !bad) {
		bad = true;
		e = errno;
	}
	if (bad) {
		fprintf(stderr, _("shardlab: cannot write to standard output: %s\n"),
		    strerror(e ? e : EIO));
		return SL_EINTERNAL;
	}
	return rc;
}

static int
cli_dispatch(int argc, char **argv)
{
	if (argc < 2)
		return cli_cmd_tui(0, NULL);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return cmd_help(0, NULL);
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("shardlab %s\n", PACKAGE_VERSION);
		return SL_OK;
	}
	for (size_t i = 0; i < SL_ARRAY_LEN(commands); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	if (argv[1][0] == '-' || access(argv[1], R_OK) == 0)
		return cli_cmd_tui(argc, argv);
	fprintf(stderr, _("shardlab: unknown subcommand '%s' (see shardlab --help)\n"),
	    sl_esc(argv[1]));
	return SL_EINPUT;
}

/* A signal while a file is written: remove the temporary file, then die. */
static void
cli_on_signal(int sig)
{
	sl_atomic_unlink_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

int
main(int argc, char **argv)
{
	static const int sigs[] = { SIGTERM, SIGHUP, SIGINT, SIGPIPE, SIGXFSZ };

	for (size_t i = 0; i < SL_ARRAY_LEN(sigs); i++) {
		struct sigaction sa, old;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = cli_on_signal;
		sigemptyset(&sa.sa_mask);
		/* an ignored signal stays ignored (nohup) */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
	}
	setlocale(LC_ALL, "");
#ifdef ENABLE_NLS
	bindtextdomain(PACKAGE, sl_localedir());
	textdomain(PACKAGE);
#endif
	return cli_finish(cli_dispatch(argc, argv));
}
