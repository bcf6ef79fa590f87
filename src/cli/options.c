/*
 * options.c: the one option parser of the command line.  Every subcommand
 * parses the same options (design.md's contract) into a cli_opts; which of
 * them a subcommand takes is the options list of its row (struct cli_cmd),
 * and an option it does not take is an error, never ignored.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <sys/stat.h>

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
	OPT_SLACK, OPT_OFFLOAD, OPT_THREADS, OPT_FRAMEWORK
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
	{ "threads", required_argument, NULL, OPT_THREADS },
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
	{ "framework", required_argument, NULL, OPT_FRAMEWORK },
	{ "output", required_argument, NULL, 'o' },
	{ "quiet", no_argument, NULL, 'q' },
	{ NULL, 0, NULL, 0 }
};

/*
 * Whether the subcommand takes option opt: its row names one of the
 * option's spellings (--op and --around are one option).
 */
static bool
opt_applies_to(int opt, const struct cli_cmd *cmd)
{
	const char *p = cmd->options;

	while (*p != '\0') {
		size_t n = strcspn(p, " ");
		for (const struct option *lo = long_opts; lo->name; lo++)
			if (lo->val == opt && strlen(lo->name) == n &&
			    strncmp(lo->name, p, n) == 0)
				return true;
		p += n;
		p += strspn(p, " ");
	}
	return false;
}

/*
 * The option names of every row, checked against the parser's table: a
 * misspelt name would silently refuse an option the row means to take.
 * Returns the first unknown name (of at most size - 1 bytes) in bad.
 */
const struct cli_cmd *
cli_unknown_option(char *bad, size_t size)
{
	for (size_t i = 0; i < cli_n_cmds; i++) {
		const char *p = cli_cmds[i]->options;

		while (*p != '\0') {
			size_t n = strcspn(p, " ");
			bool known = false;

			for (const struct option *lo = long_opts; lo->name; lo++)
				known |= strlen(lo->name) == n &&
				    strncmp(lo->name, p, n) == 0;
			if (!known) {
				snprintf(bad, size, "%.*s", (int)n, p);
				return cli_cmds[i];
			}
			p += n;
			p += strspn(p, " ");
		}
	}
	return NULL;
}

/* The subcommand a parse is for: argv[0], or the explorer. */
static const struct cli_cmd *
cli_command_of(char **argv)
{
	for (size_t i = 0; argv != NULL && argv[0] != NULL && i < cli_n_cmds; i++)
		if (strcmp(argv[0], cli_cmds[i]->name) == 0)
			return cli_cmds[i];
	return &cli_cmd_tui;
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
	const struct cli_cmd *cmd = cli_command_of(argv);

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
			    shown, cmd->name);
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
		case OPT_THREADS: {
			int64_t t;
			rc = parse_int64(name, optarg, 1, CLI_MAX_THREADS, &t, err);
			o->threads = (int)t;
			break;
		}
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
		case OPT_FRAMEWORK:
			if ((v = sl_framework_from_name(optarg)) < 0)
				rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
				    _("--framework: expected megatron, torchtitan, deepspeed or free, got '%s'"),
				    sl_esc(optarg));
			else {
				o->recipe.framework = (sl_framework)v;
				o->framework_set = true;
			}
			break;
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
