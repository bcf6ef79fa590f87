/*
 * options.c: the command line's option table and its one parser.  Every
 * option is one row of cli_options: its name, what its value is and its
 * bounds, the field of cli_opts it sets, the subcommands that take it and
 * its line of --help.  cli_parse reads argv through that table alone; an
 * option the subcommand does not take is an error, never ignored.  Adding an
 * option is one row here and the field it sets in cli.h.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

/* --------------------------------------------------------- custom values */

/*
 * --mesh AxB and --devices N.  Three or four axes (AxBxC) are a pipeline mesh
 * for `plan`, kept as given (mesh_arg) for sl_topo_parse there.
 */
static int
parse_mesh(const struct cli_option *opt, const char *arg, cli_opts *o,
    sl_error *err)
{
	bool devices = strcmp(opt->name, "devices") == 0;
	int rc;

	o->mesh_arg = arg;
	o->mesh_set = true;
	o->devices_min = false;
	/* plan --devices min: counted by the search (plan.c refuses it
	 * elsewhere) */
	if (devices && strcmp(arg, "min") == 0) {
		o->devices_min = true;
		o->n_axes = 1;
		o->shape[0] = 1;
		return SL_OK;
	}
	if (!devices && strchr(arg, 'x') != strrchr(arg, 'x')) {
		int n, sh[SL_MAX_TOPO_AXES];
		sl_axis_role ro[SL_MAX_TOPO_AXES];

		rc = sl_topo_parse(arg, NULL, &n, sh, ro, err);
		if (rc == SL_OK && n > SL_MAX_AXES)
			o->n_axes = 0;	/* cli_open refuses it */
		return rc;
	}
	rc = sl_mesh_parse(arg, &o->n_axes, o->shape, err);
	if (rc == SL_OK && devices && o->n_axes != 1)
		rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--devices takes one number; use --mesh AxB for a 2-D mesh"));
	return rc;
}

/* --pin OP=STRATEGY and --forbid OP=STRATEGY, repeatable. */
static int
parse_constraint(const struct cli_option *opt, const char *arg, cli_opts *o,
    sl_error *err)
{
	return sl_constraints_parse(&o->cs, arg, strcmp(opt->name, "pin") == 0,
	    err);
}

/* --export: checked here, kept by name for plan.c. */
static int
parse_export(const struct cli_option *opt, const char *arg, cli_opts *o,
    sl_error *err)
{
	(void)opt;
	if (sl_export_from_name(arg) < 0)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--export: expected megatron, deepspeed, torchtitan, dtensor or json, got '%s'"),
		    sl_esc(arg));
	o->export_kind = arg;
	return SL_OK;
}

/* --expert-axes none|dp|tp|dp,tp (SL_EP_* bits). */
static int
parse_expert_axes(const struct cli_option *opt, const char *arg, cli_opts *o,
    sl_error *err)
{
	static const char *const names[] = { "none", "dp", "tp", "dp,tp" };

	(void)opt;
	for (int i = 0; i < 4; i++)
		if (strcmp(arg, names[i]) == 0 ||
		    (i == 3 && strcmp(arg, "tp,dp") == 0)) {
			o->expert_axes = i;
			return SL_OK;
		}
	return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
	    _("--expert-axes: expected none, dp, tp or dp,tp, got '%s'"),
	    sl_esc(arg));
}

/*
 * A field of the generator (gen.c, sl_gen_fields) named as the option is,
 * '-' for '_': kept with its value ("true" for a flag) for gen to set after
 * the family's defaults and the Hugging Face config; its bounds and its
 * type are the generator's.
 */
static int
parse_gen_field(const struct cli_option *opt, const char *arg, cli_opts *o,
    sl_error *err)
{
	char key[32];
	const sl_gen_field *f;
	sl_gen_config probe;

	snprintf(key, sizeof key, "%s", opt->name);
	for (char *p = key; *p != '\0'; p++)
		if (*p == '-')
			*p = '_';
	if ((f = sl_gen_field_find(key)) == NULL)
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0,
		    _("--%s: no generator field %s"), opt->name, key);
	if (arg == NULL)
		arg = "true";
	memset(&probe, 0, sizeof probe);
	if (sl_gen_field_set(&probe, f, arg, err) != SL_OK) {
		/* the message names the field; say it as the option */
		const char *rest = strchr(err->msg, ':');
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "--%s%.900s", opt->name, rest ? rest : "");
		memcpy(err->msg, msg, sizeof msg);
		return SL_EINPUT;
	}
	if (o->n_gen >= (int)SL_ARRAY_LEN(o->gen))
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--%s: too many generator options"), opt->name);
	o->gen[o->n_gen].field = f;
	o->gen[o->n_gen].value = arg;
	o->n_gen++;
	return SL_OK;
}

/* --lora-targets q,v (SL_LORA_ bits). */
static int
parse_lora_targets(const struct cli_option *opt, const char *arg, cli_opts *o,
    sl_error *err)
{
	char why[160];

	(void)opt;
	if (!sl_lora_targets_parse(arg, &o->recipe.lora_targets, why, sizeof why))
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--lora-targets: %s"), why);
	return SL_OK;
}

/* The bundled hardware profiles under --hw in --help, with what each is. */
static void
help_hw(FILE *fp)
{
	const char *const *names = sl_bundled_hardware();

	for (size_t i = 0; names[i] != NULL; i++) {
		sl_hw hw;
		sl_error err;

		sl_error_clear(&err);
		if (sl_hw_load(names[i], &hw, &err) == SL_OK)
			cli_fprintf(fp, "%28s%-16s %d x %s\n", "", names[i],
			    hw.devices_per_node, hw.device);
		else
			cli_fprintf(fp, "%28s%s\n", "", names[i]);
	}
}

/* ------------------------------------------------------------- the table */

/* Subcommands that take a model on a mesh (show: the model alone). */
#define C_MODEL (CLI_C_TUI | CLI_C_SOLVE | CLI_C_SWEEP | CLI_C_COMPARE | \
	CLI_C_EXPLAIN | CLI_C_RENDER | CLI_C_TIMELINE | CLI_C_PLAN)
/* ... that solve the strategy graph with constraints */
#define C_SOLVING (CLI_C_TUI | CLI_C_SOLVE | CLI_C_SWEEP | CLI_C_COMPARE | \
	CLI_C_EXPLAIN | CLI_C_RENDER | CLI_C_TIMELINE)
/* ... that take a training recipe (gen: the generator's defaults) */
#define C_RECIPE (C_MODEL | CLI_C_SHOW | CLI_C_GEN)

/*
 * In the order of --help.  Bounds are those the engine can represent (a
 * device index fits 16 bits, a size an int32 dimension) and what a user
 * could mean; a count takes a plain number, a size needs its unit.
 */
const struct cli_option cli_options[] = {
	/* the model on its mesh */
	{ .name = "mesh", .arg = CLI_CUSTOM, .metavar = N_("AxB"),
	  .parse = parse_mesh, CLI_FIELD(shape), .cmds = C_MODEL | CLI_C_SHOW,
	  .help = N_("a mesh of A x B devices, outer axis first (plan: AxBxC with --axes)") },
	{ .name = "devices", .arg = CLI_CUSTOM, .metavar = N_("N"),
	  .parse = parse_mesh, CLI_FIELD(shape), .cmds = C_MODEL | CLI_C_SHOW,
	  .help = N_("one axis of N devices (default 4; plan: min, the fewest that fit)") },
	{ .name = "hw", .arg = CLI_TEXT, .metavar = N_("PROFILE"),
	  CLI_FIELD(hw), .cmds = C_MODEL | CLI_C_PROFILE, .more_help = help_hw,
	  .file = CLI_F_PROFILE,
	  .help = N_("a hardware profile file or a bundled one (default h100-nvlink):") },
	{ .name = "no-zero", .arg = CLI_FLAG, CLI_FIELD(no_zero), .cmds = C_MODEL,
	  .help = N_("leave the ZeRO-3/OSDP strategies out of the search") },
	/* what the solver is asked */
	{ .name = "alpha", .arg = CLI_NUMBER, .metavar = N_("A"),
	  .lo = 0, .hi = CLI_MAX_ALPHA, .unit = N_("bytes per microsecond"),
	  CLI_FIELD(alpha), .cmds = C_SOLVING & ~CLI_C_SWEEP,
	  .help = N_("bytes per device worth one microsecond of communication (default 0: memory alone)") },
	{ .name = "pin", .arg = CLI_CUSTOM, .metavar = N_("OP=STRATEGY"),
	  .parse = parse_constraint, CLI_FIELD(cs), .cmds = C_SOLVING,
	  .help = N_("fix an operator's strategy (repeatable)") },
	{ .name = "forbid", .arg = CLI_CUSTOM, .metavar = N_("OP=STRATEGY"),
	  .parse = parse_constraint, CLI_FIELD(cs), .cmds = C_SOLVING,
	  .help = N_("exclude a strategy of an operator (repeatable)") },
	{ .name = "solver", .arg = CLI_CHOICE, .choices = "auto|dp|ilp|brute|anytime",
	  .from_name = sl_solver_from_name, CLI_FIELD(solver), .cmds = C_SOLVING,
	  .help = N_("the solver (default auto)") },
	{ .name = "mem-limit", .arg = CLI_SIZE, .metavar = N_("SIZE"),
	  .lo = 1, .hi = 9e18, CLI_FIELD(mem_limit),
	  .cmds = CLI_C_TUI | CLI_C_SOLVE | CLI_C_COMPARE | CLI_C_PLAN,
	  .help = N_("memory per device a plan may use, with its unit: 40GiB, 80GB") },
	{ .name = "allow-over-capacity", .arg = CLI_FLAG,
	  CLI_FIELD(allow_over_capacity), .cmds = CLI_C_SOLVE,
	  .help = N_("a plan over the device's memory is still written, exit status 0") },
	{ .name = "time-limit", .arg = CLI_NUMBER, .metavar = N_("SECONDS"),
	  .lo = 0, .lo_open = true, .hi = CLI_MAX_TIME_LIMIT, .unit = N_("seconds"),
	  CLI_FIELD(time_limit),
	  .cmds = CLI_C_TUI | CLI_C_SOLVE | CLI_C_RENDER | CLI_C_TIMELINE,
	  .help = N_("stop GLPK or the anytime search after this long") },
	{ .name = "threads", .arg = CLI_INT, .metavar = N_("N"),
	  .lo = 1, .hi = CLI_MAX_THREADS, CLI_FIELD(threads),
	  .cmds = CLI_C_TUI | CLI_C_SOLVE,
	  .help = N_("anytime searches side by side (default one per processor, at most 4)") },
	/* how the model is trained */
	{ .name = "micro-batch", .arg = CLI_INT, .metavar = N_("B"),
	  .lo = 1, .hi = 1 << 20, CLI_FIELD(micro_batch), .cmds = C_RECIPE,
	  .help = N_("samples per device per micro-step (default 1)") },
	{ .name = "global-batch", .arg = CLI_INT, .metavar = N_("B"),
	  .lo = 1, .hi = INT32_MAX, CLI_FIELD(recipe.global_batch), .cmds = C_RECIPE,
	  .help = N_("samples per optimizer step: gradient accumulation follows") },
	{ .name = "seq", .arg = CLI_INT, .metavar = N_("S"),
	  .lo = 1, .hi = INT32_MAX, CLI_FIELD(seq), .cmds = C_RECIPE,
	  .help = N_("training sequence length (default the model's)") },
	{ .name = "attention", .arg = CLI_CHOICE, .choices = "flash|naive",
	  .from_name = sl_attention_from_name, CLI_FIELD(recipe.attention),
	  .cmds = C_RECIPE,
	  .help = N_("fused attention, or one that keeps the score matrix (default flash)") },
	{ .name = "precision", .arg = CLI_CHOICE, .choices = "bf16|megatron|amp|fp32|fp8|fp16",
	  .from_name = sl_precision_from_name, CLI_FIELD(recipe.precision),
	  .cmds = C_RECIPE,
	  .help = N_("the mixed-precision recipe (default bf16; plan: the framework's)") },
	{ .name = "recompute", .arg = CLI_CHOICE, .choices = "none|selective|full|auto",
	  .from_name = sl_recompute_from_name, CLI_FIELD(recipe.recompute),
	  .cmds = C_RECIPE,
	  .help = N_("activation recomputation (default none; auto: chosen per layer)") },
	{ .name = "optimizer", .arg = CLI_CHOICE, .choices = "fused|foreach",
	  .from_name = sl_optimizer_from_name, CLI_FIELD(recipe.optimizer),
	  .cmds = C_RECIPE,
	  .help = N_("AdamW as one fused kernel or PyTorch's foreach passes (default fused)") },
	{ .name = "no-clip-grad", .arg = CLI_FLAG, CLI_FIELD(recipe.no_clip_grad),
	  .cmds = C_RECIPE,
	  .help = N_("no gradient-norm clipping (its passes over the gradients)") },
	{ .name = "no-overlap-grad-reduce", .arg = CLI_FLAG,
	  CLI_FIELD(recipe.no_grad_overlap), .cmds = C_RECIPE,
	  .help = N_("reduce data-parallel gradients after the backward pass, not in buckets during it") },
	{ .name = "framework", .arg = CLI_CHOICE,
	  .choices = "megatron|torchtitan|deepspeed|free",
	  .from_name = sl_framework_from_name, CLI_FIELD(recipe.framework),
	  .cmds = CLI_C_PLAN,
	  .help = N_("the framework that runs the plan (default megatron, or --export's; free: any per-operator plan)") },
	{ .name = "finetune", .arg = CLI_CHOICE, .choices = "full|lora|qlora",
	  .from_name = sl_finetune_from_name, CLI_FIELD(recipe.finetune),
	  .cmds = C_RECIPE & ~(CLI_C_SHOW | CLI_C_GEN),
	  .help = N_("fine-tune every weight, or LoRA adapters over frozen weights (qlora: 4-bit NF4 weights)") },
	{ .name = "lora-rank", .arg = CLI_INT, .metavar = N_("R"),
	  .lo = 1, .hi = 65536, CLI_FIELD(recipe.lora_rank),
	  .cmds = C_RECIPE & ~(CLI_C_SHOW | CLI_C_GEN),
	  .help = N_("the adapters' rank under --finetune lora or qlora (default 8)") },
	{ .name = "lora-targets", .arg = CLI_CUSTOM, .metavar = N_("q,v"),
	  .parse = parse_lora_targets, CLI_FIELD(recipe.lora_targets),
	  .cmds = C_RECIPE & ~(CLI_C_SHOW | CLI_C_GEN),
	  .help = N_("the matmuls that get adapters: q, k, v, o, gate, up, down or all (default q,v)") },
	/* the hybrid search (plan) */
	{ .name = "axes", .arg = CLI_TEXT, .metavar = N_("pp,dp,tp"),
	  CLI_FIELD(axes), .cmds = CLI_C_PLAN,
	  .help = N_("what each axis of --mesh carries (pp, dp, tp, cp), outer first") },
	{ .name = "pp", .arg = CLI_INT, .metavar = N_("P"),
	  .lo = 1, .hi = 65536, CLI_FIELD(pp), .cmds = CLI_C_PLAN,
	  .help = N_("fix the pipeline degree") },
	{ .name = "tp", .arg = CLI_INT, .metavar = N_("T"),
	  .lo = 1, .hi = 65536, CLI_FIELD(tp), .cmds = CLI_C_PLAN,
	  .help = N_("fix the inner (tensor) axis of each stage's sub-mesh") },
	{ .name = "schedule", .arg = CLI_CHOICE, .choices = "1f1b|gpipe|interleaved",
	  .from_name = sl_schedule_from_name, CLI_FIELD(schedule), .cmds = CLI_C_PLAN,
	  .help = N_("the pipeline schedule (default 1f1b)") },
	{ .name = "virtual-stages", .arg = CLI_INT, .metavar = N_("V"),
	  .lo = 1, .hi = 64, CLI_FIELD(virt), .cmds = CLI_C_PLAN,
	  .help = N_("chunks per device under the interleaved schedule (default 2 and 4 tried)") },
	{ .name = "slack", .arg = CLI_INT, .metavar = N_("N"),
	  .lo = -1, .hi = 1000, CLI_FIELD(slack), .cmds = CLI_C_PLAN,
	  .help = N_("stage sizes within N layers of the even split (default 1; -1 every one)") },
	{ .name = "offload-optimizer", .arg = CLI_FLAG, CLI_FIELD(offload),
	  .cmds = CLI_C_PLAN,
	  .help = N_("keep the optimizer states in host memory") },
	{ .name = "expert-axes", .arg = CLI_CUSTOM, .metavar = "none|dp|tp|dp,tp",
	  .parse = parse_expert_axes, CLI_FIELD(expert_axes), .cmds = CLI_C_PLAN,
	  .help = N_("where a mixture's experts split by expert: the data- and context-parallel axes, the tensor-parallel ones (expert tensor parallel 1), both or none (default each searched)") },
	{ .name = "dp-replicate", .arg = CLI_INT, .metavar = N_("N"),
	  .lo = 1, .hi = 65536, CLI_FIELD(dp_replicate), .cmds = CLI_C_PLAN,
	  .help = N_("HSDP: shard the states within data-parallel groups and replicate them across N groups (torchtitan, free; default searched, 1 full sharding)") },
	{ .name = "export", .arg = CLI_CUSTOM,
	  .metavar = "megatron|deepspeed|torchtitan|dtensor|json", .parse = parse_export,
	  CLI_FIELD(export_kind), .cmds = CLI_C_PLAN,
	  .help = N_("write the launch of the plan for its framework (to -o FILE, or standard output)") },
	/* outputs */
	{ .name = "json", .arg = CLI_TEXT, .metavar = N_("FILE|-"), CLI_FIELD(json),
	  .file = CLI_F_OUTPUT,
	  .cmds = CLI_C_SOLVE | CLI_C_SWEEP | CLI_C_COMPARE | CLI_C_PLAN |
	      CLI_C_VALIDATE,
	  .help = N_("write the result as JSON (- standard output, instead of the table)") },
	{ .name = "export-problem", .arg = CLI_TEXT, .metavar = N_("FILE"),
	  CLI_FIELD(export_problem), .cmds = CLI_C_SOLVE, .file = CLI_F_OUTPUT,
	  .help = N_("write the strategy graph as an IOPDDL problem") },
	{ .name = "output", .short_name = 'o', .arg = CLI_TEXT, .metavar = N_("FILE"),
	  CLI_FIELD(output), .file = CLI_F_OUTPUT,
	  .cmds = CLI_C_GEN | CLI_C_RENDER | CLI_C_PROFILE | CLI_C_PLAN,
	  .help = N_("write the output to FILE") },
	{ .name = "format", .arg = CLI_TEXT, .metavar = "dot|svg|png|pdf",
	  CLI_FIELD(format), .cmds = CLI_C_RENDER,
	  .help = N_("the picture's format (default -o's extension; dot to standard output)") },
	{ .name = "all-strategies", .arg = CLI_FLAG, CLI_FIELD(all_strategies),
	  .cmds = CLI_C_RENDER,
	  .help = N_("every strategy of each operator, not the nearest alternatives only") },
	/* one subcommand's */
	{ .name = "plan", .arg = CLI_TEXT, .metavar = N_("FILE"), CLI_FIELD(plan),
	  .file = CLI_F_INPUT,
	  .cmds = CLI_C_TUI | CLI_C_TIMELINE,
	  .help = N_("a plan file to reopen, with its pins and forbids") },
	{ .name = "op", .arg = CLI_TEXT, .metavar = N_("NAME"), CLI_FIELD(op),
	  .cmds = CLI_C_EXPLAIN | CLI_C_RENDER,
	  .help = N_("the operator to explain (render: to draw around)") },
	{ .name = "around", .arg = CLI_TEXT, .metavar = N_("NAME"), CLI_FIELD(op),
	  .cmds = CLI_C_EXPLAIN | CLI_C_RENDER,
	  .help = N_("draw the operator NAME and its neighbours (as --op)") },
	{ .name = "strategy", .arg = CLI_TEXT, .metavar = N_("S"), CLI_FIELD(strategy),
	  .cmds = CLI_C_EXPLAIN,
	  .help = N_("the strategy to explain (default the plan's)") },
	{ .name = "layer", .arg = CLI_INT, .metavar = N_("N"),
	  .lo = 0, .hi = 1000000, CLI_FIELD(layer), .cmds = CLI_C_RENDER,
	  .help = N_("draw layer N (counted from 0)") },
	{ .name = "depth", .arg = CLI_INT, .metavar = N_("N"),
	  .lo = 0, .hi = 1000, CLI_FIELD(depth), .cmds = CLI_C_RENDER,
	  .help = N_("and the operators within N edges (default 1 around, 0 for a layer)") },
	{ .name = "device", .arg = CLI_INT, .metavar = N_("N"),
	  .lo = 0, .hi = 65535, CLI_FIELD(device), .cmds = CLI_C_TIMELINE,
	  .help = N_("the device whose memory is followed (default 0)") },
	{ .name = "stage", .arg = CLI_INT, .metavar = N_("N"),
	  .lo = 0, .hi = 65535, CLI_FIELD(stage), .cmds = CLI_C_TIMELINE,
	  .help = N_("the stage of a pipeline plan (--plan) whose device is followed") },
	{ .name = "trace", .arg = CLI_TEXT, .metavar = N_("FILE|-"), CLI_FIELD(trace),
	  .file = CLI_F_OUTPUT,
	  .cmds = CLI_C_TIMELINE,
	  .help = N_("write a Chrome trace (Perfetto, chrome://tracing)") },
	{ .name = "emulate", .arg = CLI_FLAG, CLI_FIELD(emulate),
	  .cmds = CLI_C_VALIDATE,
	  .help = N_("run the ranks one after another on the GPUs there are") },
	{ .name = "steps", .arg = CLI_INT, .metavar = N_("N"),
	  .lo = 1, .hi = 100000, CLI_FIELD(steps), .cmds = CLI_C_VALIDATE,
	  .help = N_("training steps measured (default 10)") },
	/* the generator (gen) */
	{ .name = "hf-config", .arg = CLI_TEXT, .metavar = N_("FILE"),
	  CLI_FIELD(hf_config), .cmds = CLI_C_GEN, .file = CLI_F_INPUT,
	  .help = N_("read the sizes from a Hugging Face config.json of the family") },
	{ .name = "layers", .arg = CLI_INT, .metavar = N_("N"),
	  .lo = 1, .hi = 100000, CLI_FIELD(layers), .cmds = CLI_C_GEN,
	  .help = N_("transformer layers") },
	{ .name = "hidden", .arg = CLI_INT, .metavar = N_("H"),
	  .lo = 1, .hi = INT32_MAX, CLI_FIELD(hidden), .cmds = CLI_C_GEN,
	  .help = N_("hidden size") },
	{ .name = "heads", .arg = CLI_INT, .metavar = N_("A"),
	  .lo = 1, .hi = 1 << 20, CLI_FIELD(heads), .cmds = CLI_C_GEN,
	  .help = N_("attention heads") },
	{ .name = "kv-heads", .arg = CLI_INT, .metavar = N_("K"),
	  .lo = 1, .hi = 1 << 20, CLI_FIELD(kv_heads), .cmds = CLI_C_GEN,
	  .help = N_("key/value heads (grouped-query attention; llama; default the heads)") },
	{ .name = "ffn", .arg = CLI_INT, .metavar = N_("F"),
	  .lo = 1, .hi = INT32_MAX, CLI_FIELD(ffn), .cmds = CLI_C_GEN,
	  .help = N_("feed-forward size (default the family's rule)") },
	{ .name = "vocab", .arg = CLI_INT, .metavar = N_("V"),
	  .lo = 1, .hi = INT32_MAX, CLI_FIELD(vocab), .cmds = CLI_C_GEN,
	  .help = N_("vocabulary") },
	{ .name = "batch", .arg = CLI_INT, .metavar = N_("B"),
	  .lo = 1, .hi = INT32_MAX, CLI_FIELD(batch), .cmds = CLI_C_GEN,
	  .help = N_("fix the graph's batch (default micro-batch x devices when opened)") },
	{ .name = "name", .arg = CLI_TEXT, .metavar = N_("NAME"), CLI_FIELD(name),
	  .cmds = CLI_C_GEN,
	  .help = N_("the model's name (default FAMILY-LAYERSxHIDDEN, or the config's)") },
	/* the generator's fields beyond the sizes above (gen.c sl_gen_fields) */
#define GEN_OPT(nm, mv, h) { .name = nm, .arg = CLI_CUSTOM, .metavar = mv, \
	  .parse = parse_gen_field, .cmds = CLI_C_GEN, .help = h }
#define GEN_FLAG(nm, h) { .name = nm, .arg = CLI_FLAG, \
	  .parse = parse_gen_field, .cmds = CLI_C_GEN, .help = h }
	GEN_OPT("head-dim", N_("D"), N_("width of an attention head (default hidden / heads)")),
	GEN_OPT("tie", N_("true|false"), N_("the head reads the embedding table (default: gpt, bert)")),
	GEN_FLAG("qkv-bias", N_("biases of the query, key and value matmuls (llama, moe)")),
	GEN_FLAG("out-bias", N_("bias of the attention's output matmul")),
	GEN_FLAG("mlp-bias", N_("biases of the MLP's gate, up and down")),
	GEN_FLAG("qk-norm", N_("RMSNorm of every query and key head")),
	GEN_FLAG("sinks", N_("a learned softmax logit per head")),
	GEN_OPT("window", N_("W"), N_("sliding-window attention: keys each query sees")),
	GEN_OPT("window-first", N_("L"), N_("the first layer that slides (default 0)")),
	GEN_OPT("window-every", N_("N"), N_("then every N-th layer slides (default 1)")),
	GEN_OPT("type-vocab", N_("T"), N_("bert: token types (default 2)")),
	GEN_OPT("experts", N_("E"), N_("moe: routed experts per MoE layer (default 8)")),
	GEN_OPT("topk", N_("K"), N_("moe: experts each token is routed to (default 2)")),
	GEN_OPT("moe-ffn", N_("F"), N_("moe: hidden size of one expert (default --ffn)")),
	GEN_OPT("shared-ffn", N_("F"), N_("moe: hidden size of the shared experts together")),
	GEN_FLAG("shared-gate", N_("moe: a sigmoid gate on the shared experts")),
	GEN_FLAG("router-bias", N_("moe: a bias on the router's logits")),
	GEN_FLAG("score-bias", N_("moe: a per-expert bias that only selects experts")),
	GEN_FLAG("expert-bias", N_("moe: biases inside every expert")),
	GEN_OPT("first-dense", N_("L"), N_("moe: the first L layers have a dense MLP of --ffn")),
	GEN_OPT("moe-every", N_("N"), N_("moe: then layer l is MoE when l % N == --moe-phase")),
	GEN_OPT("moe-phase", N_("P"), N_("moe: see --moe-every (default 0)")),
	GEN_OPT("capacity", N_("F"), N_("moe: capacity factor (default 0: dropless)")),
	GEN_OPT("kv-lora", N_("R"), N_("latent attention: key/value compression rank")),
	GEN_OPT("q-lora", N_("R"), N_("latent attention: query compression rank (0 none)")),
	GEN_OPT("qk-nope", N_("D"), N_("latent attention: query/key width without rope")),
	GEN_OPT("qk-rope", N_("D"), N_("latent attention: rotary width (one key, all heads)")),
	GEN_OPT("v-head", N_("D"), N_("latent attention: value width per head")),
#undef GEN_OPT
#undef GEN_FLAG
	/* every subcommand's */
	{ .name = "quiet", .short_name = 'q', .arg = CLI_FLAG, CLI_FIELD(quiet),
	  .cmds = CLI_C_SOLVE | CLI_C_COMPARE | CLI_C_GEN | CLI_C_RENDER |
	      CLI_C_TIMELINE | CLI_C_PROFILE | CLI_C_VALIDATE,
	  .help = N_("print nothing but errors") },
	/* answered before parsing (cli_help_asked) */
	{ .name = "help", .short_name = 'h', .arg = CLI_FLAG, .cmds = CLI_C_ALL,
	  .help = N_("this text") },
};
const size_t cli_n_options = SL_ARRAY_LEN(cli_options);

/* getopt_long's value of a row: its index past the characters. */
#define OPT_VAL(i) (256 + (int)(i))

/* ------------------------------------------------------- getopt's tables */

static struct option long_opts[SL_ARRAY_LEN(cli_options) + 1];
static char short_opts[2 * SL_ARRAY_LEN(cli_options) + 2];

/* getopt_long's view of the table, built once. */
static void
opts_build(void)
{
	size_t n = 1;

	if (long_opts[0].name != NULL)
		return;
	short_opts[0] = ':';	/* a missing value is ':', not '?' */
	for (size_t i = 0; i < cli_n_options; i++) {
		const struct cli_option *r = &cli_options[i];
		long_opts[i].name = r->name;
		long_opts[i].has_arg = r->arg == CLI_FLAG ? no_argument :
		    required_argument;
		long_opts[i].flag = NULL;
		long_opts[i].val = OPT_VAL(i);
		if (r->short_name != 0) {
			short_opts[n++] = r->short_name;
			if (r->arg != CLI_FLAG)
				short_opts[n++] = ':';
		}
	}
	short_opts[n] = '\0';
}

/* The row of getopt_long's value c, or NULL for '?' and ':'. */
static const struct cli_option *
opts_row(int c)
{
	if (c >= OPT_VAL(0) && c < OPT_VAL(cli_n_options))
		return &cli_options[c - OPT_VAL(0)];
	for (size_t i = 0; c > 0 && c < 256 && i < cli_n_options; i++)
		if (cli_options[i].short_name == c)
			return &cli_options[i];
	return NULL;
}

/* --------------------------------------------------------------- checks */

const struct cli_cmd *
cli_command_of(char **argv)
{
	for (size_t i = 0; argv != NULL && argv[0] != NULL && i < cli_n_cmds; i++)
		if (strcmp(argv[0], cli_cmds[i]->name) == 0)
			return cli_cmds[i];
	return &cli_cmd_tui;
}

const char *
cli_tables_check(char *buf, size_t size)
{
	unsigned seen = 0;

	if (cli_n_options > CLI_MAX_OPTIONS) {
		snprintf(buf, size, "%zu options, at most %d", cli_n_options,
		    CLI_MAX_OPTIONS);
		return buf;
	}
	for (size_t i = 0; i < cli_n_cmds; i++) {
		unsigned b = cli_cmds[i]->bit;
		if (b == 0 || (b & (b - 1)) != 0 || (b & seen) != 0 ||
		    (b & ~(unsigned)CLI_C_ALL) != 0) {
			snprintf(buf, size, "subcommand '%s' has no bit of its own",
			    cli_cmds[i]->name);
			return buf;
		}
		seen |= b;
	}
	for (size_t i = 0; i < cli_n_options; i++) {
		const struct cli_option *r = &cli_options[i];
		size_t want = 0;

		switch (r->arg) {
		/* a flag sets a bool, or its parse function sets what it sets */
		case CLI_FLAG: want = strcmp(r->name, "help") && r->parse == NULL ?
		    sizeof(bool) : 0; break;
		case CLI_TEXT: want = sizeof(const char *); break;
		case CLI_INT: want = r->hi <= INT_MAX && r->lo >= INT_MIN ?
		    r->size : sizeof(int64_t); break;
		case CLI_NUMBER: want = sizeof(double); break;
		case CLI_SIZE: want = sizeof(int64_t); break;
		case CLI_CHOICE: want = sizeof(int); break;
		case CLI_CUSTOM: want = r->size; break;
		}
		if ((r->cmds & seen) == 0 || r->size != want ||
		    (r->arg == CLI_INT && r->size != sizeof(int) &&
		    r->size != sizeof(int64_t)) ||
		    (r->arg == CLI_CHOICE && (r->from_name == NULL || r->choices == NULL)) ||
		    (r->arg == CLI_CUSTOM && r->parse == NULL) ||
		    (r->arg == CLI_NUMBER && r->unit == NULL) ||
		    ((r->arg == CLI_INT || r->arg == CLI_NUMBER || r->arg == CLI_SIZE) &&
		    !(r->lo <= r->hi))) {
			snprintf(buf, size, "the row of option '%s' is inconsistent",
			    r->name);
			return buf;
		}
	}
	return NULL;
}

bool
cli_given(const cli_opts *o, const char *name)
{
	for (size_t i = 0; i < cli_n_options; i++)
		if (strcmp(cli_options[i].name, name) == 0)
			return (o->given[i / 8] >> (i % 8)) & 1;
	fprintf(stderr, "shardlab: internal error: no option '%s'\n", name);
	return false;
}

/* --------------------------------------------------------- did you mean */

/*
 * Edits from a to b, a transposition of neighbours counting one (the
 * optimal string alignment distance): "devcies" is one from "devices".
 */
static size_t
edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t *d;
	size_t r;

	if (la > 64 || lb > 64)
		return SIZE_MAX;
	d = malloc((la + 1) * (lb + 1) * sizeof *d);
	if (d == NULL)
		return SIZE_MAX;
#define D(i, j) d[(i) * (lb + 1) + (j)]
	for (size_t i = 0; i <= la; i++)
		D(i, 0) = i;
	for (size_t j = 0; j <= lb; j++)
		D(0, j) = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t c = D(i - 1, j - 1) + (a[i - 1] != b[j - 1]);
			if (D(i - 1, j) + 1 < c)
				c = D(i - 1, j) + 1;
			if (D(i, j - 1) + 1 < c)
				c = D(i, j - 1) + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && D(i - 2, j - 2) + 1 < c)
				c = D(i - 2, j - 2) + 1;
			D(i, j) = c;
		}
	r = D(la, lb);
#undef D
	free(d);
	return r;
}

const char *
cli_nearest(const char *word, const char *const *cands, size_t n)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX, len = strlen(word);
	/* one edit in a short word, a third of the letters in a long one */
	size_t limit = len < 6 ? 1 + (len >= 4) : len / 3;

	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(word, cands[i]);
		if (d < best_d) {
			best_d = d;
			best = cands[i];
		}
	}
	return best_d <= limit ? best : NULL;
}

/*
 * The message for an option getopt_long did not know (arg as given, with
 * its value after '=' when there is one): ambiguous between several, or
 * likely a typo of the subcommand's option (or another's).
 */
static int
opts_unknown(const char *arg, const struct cli_cmd *cmd, sl_error *err)
{
	char word[80], list[512];
	const char *cands[SL_ARRAY_LEN(cli_options)];
	const char *near;
	size_t n = 0, n_all = 0, len;

	if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("unknown option '%s' (see shardlab %s --help)"), sl_esc(arg),
		    cmd->name);
	len = strcspn(arg + 2, "=");
	snprintf(word, sizeof word, "%.*s", (int)(len < 79 ? len : 79), arg + 2);
	/* a prefix of several (getopt_long takes a prefix of one) */
	list[0] = '\0';
	for (size_t i = 0; i < cli_n_options; i++)
		if (strncmp(cli_options[i].name, word, strlen(word)) == 0) {
			size_t l = strlen(list);
			snprintf(list + l, sizeof list - l, "%s--%s", n ? ", " : "",
			    cli_options[i].name);
			n++;
		}
	if (n > 1)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("option '--%s' is ambiguous: %s"), sl_esc(word), list);
	/* the subcommand's own options first, then any */
	n = 0;
	for (size_t i = 0; i < cli_n_options; i++)
		if ((cli_options[i].cmds & cmd->bit) != 0)
			cands[n++] = cli_options[i].name;
	near = cli_nearest(word, cands, n);
	if (near == NULL) {
		for (size_t i = 0; i < cli_n_options; i++)
			cands[n_all++] = cli_options[i].name;
		near = cli_nearest(word, cands, n_all);
	}
	if (near != NULL)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("unknown option '%s': did you mean '--%s'? (see shardlab %s --help)"),
		    sl_esc(arg), near, cmd->name);
	return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
	    _("unknown option '%s' (see shardlab %s --help)"), sl_esc(arg),
	    cmd->name);
}

/* --------------------------------------------------------------- values */

/* "a, b or c" of a choices row "a|b|c". */
static const char *
choices_list(const char *choices, char *buf, size_t len)
{
	const char *last = strrchr(choices, '|');
	char head[256];

	if (last == NULL) {
		snprintf(buf, len, "%s", choices);
		return buf;
	}
	head[0] = '\0';
	for (const char *p = choices; p < last; ) {
		size_t w = strcspn(p, "|"), l = strlen(head);
		snprintf(head + l, sizeof head - l, "%s%.*s", l ? ", " : "",
		    (int)w, p);
		p += w + 1;
	}
	snprintf(buf, len, _("%s or %s"), head, last + 1);
	return buf;
}

/* The nearest of a choices row's names to arg, or NULL. */
static const char *
choices_nearest(const char *choices, const char *arg, char *buf, size_t len)
{
	const char *cands[32];
	char copy[256];
	size_t n = 0;
	const char *near;

	snprintf(copy, sizeof copy, "%s", choices);
	for (char *p = strtok(copy, "|"); p != NULL && n < 32; p = strtok(NULL, "|"))
		cands[n++] = p;
	near = cli_nearest(arg, cands, n);
	if (near == NULL)
		return NULL;
	snprintf(buf, len, "%s", near);
	return buf;
}

static int
value_int(const struct cli_option *r, const char *s, void *field, sl_error *err)
{
	char *end;
	long long v;
	const char *p = s + (*s == '-');

	errno = 0;
	v = strtoll(s, &end, 10);
	if (*p < '0' || *p > '9' || errno != 0 || end == s || *end != '\0' ||
	    (double)v < r->lo || (double)v > r->hi)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--%s: expected an integer from %lld to %lld, got '%s'"),
		    r->name, (long long)r->lo, (long long)r->hi, sl_esc(s));
	if (r->size == sizeof(int)) {
		int i = (int)v;
		memcpy(field, &i, sizeof i);
	} else {
		int64_t i = v;
		memcpy(field, &i, sizeof i);
	}
	return SL_OK;
}

static int
value_number(const struct cli_option *r, const char *s, double *out,
    sl_error *err)
{
	double v;

	if (sl_parse_number(s, &v) && (r->lo_open ? v > r->lo : v >= r->lo) &&
	    v <= r->hi) {
		*out = v;
		return SL_OK;
	}
	if (r->lo_open)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--%s: expected a decimal number above %g and at most %g (%s), got '%s'"),
		    r->name, r->lo, r->hi, _(r->unit), sl_esc(s));
	return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
	    _("--%s: expected a decimal number from %g to %g (%s), got '%s'"),
	    r->name, r->lo, r->hi, _(r->unit), sl_esc(s));
}

/*
 * A size needs its unit: --mem-limit 10 would otherwise be ten bytes, which
 * nobody means.  "10B" says bytes.
 */
static int
value_size(const struct cli_option *r, const char *s, int64_t *out,
    sl_error *err)
{
	size_t n = sl_decimal_len(s);
	int64_t v = sl_parse_size(s);

	if (n > 0 && v >= 0 && s[n + strspn(s + n, " ")] == '\0')
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--%s: '%s' has no unit: write %sGiB, %sGB or, for bytes, %sB"),
		    r->name, sl_esc(s), sl_esc(s), sl_esc(s), sl_esc(s));
	if (v < 0 || (double)v < r->lo || (double)v > r->hi)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--%s: expected a size such as 40GiB or 80GB, got '%s'"),
		    r->name, sl_esc(s));
	*out = v;
	return SL_OK;
}

static int
value_choice(const struct cli_option *r, const char *s, int *out, sl_error *err)
{
	char list[256], near[64];
	int v = r->from_name(s);

	if (v >= 0) {
		*out = v;
		return SL_OK;
	}
	choices_list(r->choices, list, sizeof list);
	if (choices_nearest(r->choices, s, near, sizeof near) != NULL)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--%s: expected %s, got '%s': did you mean '%s'?"),
		    r->name, list, sl_esc(s), near);
	return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
	    _("--%s: expected %s, got '%s'"), r->name, list, sl_esc(s));
}

/* Sets the field of row r from its value (NULL for a flag). */
static int
opts_set(const struct cli_option *r, const char *arg, cli_opts *o, sl_error *err)
{
	void *field = (char *)o + r->off;
	int iv = 0, rc = SL_OK;

	switch (r->arg) {
	case CLI_FLAG:
		if (r->parse != NULL)
			rc = r->parse(r, NULL, o, err);
		else if (r->size == sizeof(bool))
			*(bool *)field = true;
		break;
	case CLI_TEXT:
		memcpy(field, &arg, sizeof arg);
		break;
	case CLI_INT:
		rc = value_int(r, arg, field, err);
		break;
	case CLI_NUMBER:
		rc = value_number(r, arg, (double *)field, err);
		break;
	case CLI_SIZE:
		rc = value_size(r, arg, (int64_t *)field, err);
		break;
	case CLI_CHOICE:
		if ((rc = value_choice(r, arg, &iv, err)) == SL_OK)
			memcpy(field, &iv, sizeof iv);
		break;
	case CLI_CUSTOM:
		rc = r->parse(r, arg, o, err);
		break;
	}
	return rc;
}

/* ----------------------------------------------------------------- files */

/* Whether a and b name one existing file. */
static bool
same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return a != NULL && b != NULL && stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	    sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The value of a CLI_TEXT row. */
static const char *
opts_text(const struct cli_option *r, const cli_opts *o)
{
	const char *s;

	memcpy(&s, (const char *)o + r->off, sizeof s);
	return s;
}

/*
 * No output may replace an input of the same command: `solve x.json --json
 * x.json` would lose the model the plan was made from, and `solve
 * mlp-2layer --json data/models/mlp-2layer.json` the bundled model.  The
 * command's inputs are named to the engine (sl_input_note) as the files
 * they will be read from: the positional arguments (a model, a plan, a
 * bundled model's file), the rows that name an input, the profile --hw
 * names or the default.  Then every output row given goes through the one
 * check (sl_output_check, which the atomic writer repeats for every file it
 * writes, the explorer's included), and no two outputs name one file.
 */
static int
cli_check_files(const cli_opts *o, const struct cli_cmd *cmd, sl_error *err)
{
	const struct cli_option *out[8];
	char shown[8][40];
	int n_out = 0, rc;

	for (int i = 0; i < o->n_args; i++) {
		char *p = sl_model_path(o->args[i]);
		sl_input_note(p);
		free(p);
	}
	for (size_t i = 0; i < cli_n_options; i++) {
		const struct cli_option *r = &cli_options[i];
		const char *v;
		char *p;

		if (r->file == CLI_F_NONE || !(r->cmds & cmd->bit))
			continue;
		v = opts_text(r, o);
		if (r->file == CLI_F_PROFILE) {
			/* read given or not: --hw's default is an input too */
			sl_input_note(p = sl_hw_path(v));
			free(p);
		} else if (r->file == CLI_F_INPUT)
			sl_input_note(v);
		else if (v != NULL && strcmp(v, "-") != 0 && n_out < 8) {
			if (r->short_name != 0)
				snprintf(shown[n_out], sizeof shown[n_out], "-%c",
				    r->short_name);
			else
				snprintf(shown[n_out], sizeof shown[n_out], "--%s",
				    r->name);
			out[n_out++] = r;
		}
	}
	for (int i = 0; i < n_out; i++) {
		const char *path = opts_text(out[i], o);

		if ((rc = sl_output_check(path, shown[i], err)) != SL_OK)
			return rc;
		for (int j = 0; j < i; j++) {
			const char *other = opts_text(out[j], o);
			if (strcmp(path, other) == 0 || same_file(path, other))
				return sl_error_set(err, SL_EINPUT, path, 0, 0,
				    _("%s and %s name the same file"), shown[j],
				    shown[i]);
		}
	}
	return SL_OK;
}

/* ---------------------------------------------------------------- parse */

bool
cli_help_asked(int argc, char **argv)
{
	char **copy;
	bool asked = false;
	int c;

	if (argc < 1 || argv == NULL)
		return false;
	/* getopt_long permutes argv: look at a copy */
	if ((copy = malloc(((size_t)argc + 1) * sizeof *copy)) == NULL)
		return false;
	memcpy(copy, argv, (size_t)argc * sizeof *copy);
	copy[argc] = NULL;
	opts_build();
	optind = 0;
	opterr = 0;
	while (!asked && (c = getopt_long(argc, copy, short_opts, long_opts,
	    NULL)) != -1) {
		const struct cli_option *r = opts_row(c);
		asked = r != NULL && strcmp(r->name, "help") == 0;
	}
	free(copy);
	optind = 0;
	return asked;
}

int
cli_parse(int argc, char **argv, cli_opts *o, sl_error *err)
{
	int c, rc = SL_OK;
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
	o->stage = -1;
	o->layer = -1;
	o->slack = 1;
	o->schedule = SL_SCHED_1F1B;
	o->expert_axes = -1;
	opts_build();
	optind = 0;
	opterr = 0;
	while (rc == SL_OK &&
	    (c = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
		const struct cli_option *r = opts_row(c);
		char shown[80];

		if (c == ':') {
			rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("option '%s' needs a value"), sl_esc(argv[optind - 1]));
		} else if (r == NULL && (r = opts_row(optopt)) != NULL &&
		    optopt >= OPT_VAL(0)) {
			/* --flag=value */
			rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("option '--%s' takes no value"), r->name);
		} else if (r == NULL) {
			/* -x alone or in a group: optind may not have moved */
			if (optopt > 0 && optopt < 256)
				snprintf(shown, sizeof shown, "-%c", optopt);
			else
				snprintf(shown, sizeof shown, "%s", argv[optind - 1]);
			rc = opts_unknown(shown, cmd, err);
		} else if ((r->cmds & cmd->bit) == 0) {
			/* the option's own spelling, not its value */
			rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("option '--%s' does not apply to '%s' (see shardlab %s --help)"),
			    r->name, cmd->name, cmd->name);
		} else {
			size_t i = (size_t)(r - cli_options);
			o->given[i / 8] |= (unsigned char)(1u << (i % 8));
			rc = opts_set(r, optarg, o, err);
		}
	}
	o->micro_batch_set = cli_given(o, "micro-batch");
	o->recipe.micro_batch = o->micro_batch;
	o->recipe.seq = o->seq;
	o->n_args = argc - optind;
	o->args = argv + optind;
	/* GLPK alone can run for hours: asked for by name, it gets a limit */
	if (o->solver == SL_SOLVER_ILP && !(o->time_limit > 0))
		o->time_limit = SL_ILP_DEFAULT_TIME_LIMIT;
	if (rc == SL_OK && o->devices_min && cmd->bit != CLI_C_PLAN)
		rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--devices min is for plan; '%s' takes a number"), cmd->name);
	/* the adapters' options mean nothing without adapters */
	if (rc == SL_OK && !sl_recipe_frozen(&o->recipe) && !cli_given(o, "plan") &&
	    (cli_given(o, "lora-rank") || cli_given(o, "lora-targets")))
		rc = sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("--lora-rank and --lora-targets need --finetune lora or qlora"));
	if (rc == SL_OK)
		rc = cli_check_files(o, cmd, err);
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
