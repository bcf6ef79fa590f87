/*
 * pipe_export.c: a pipeline plan as what a framework is launched with:
 * Megatron-LM arguments, a DeepSpeed configuration, a PyTorch DTensor /
 * FSDP2 script, or shardlab's own JSON.  Presentation only: the search
 * never reads these.
 */
#include "internal.h"
#include "json.h"

#include <stdlib.h>

static const char *const export_names[SL_EXPORT_COUNT] = {
	"megatron", "deepspeed", "dtensor", "json"
};

int
sl_export_from_name(const char *s)
{
	for (int i = 0; s != NULL && i < SL_EXPORT_COUNT; i++)
		if (strcmp(s, export_names[i]) == 0)
			return i;
	return -1;
}

/* A growing string. */
typedef struct sbuf {
	char *s;
	size_t n, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
sb_printf(sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->s != NULL && b->n + n < b->cap) {
			b->n += n;
			return;
		}
		b->cap = (b->cap + n + 1) * 2;
		b->s = sl_xrealloc(b->s, b->cap);
	}
}

/* What every export says the same way. */
typedef struct launch_shape {
	int tp, pp, dp, cp, vpp;	/* vpp: layers per virtual stage, 0 none */
	int64_t mbs, gbs, accum;
	bool sp;			/* sequence parallel (with tensor parallel) */
	const char *granularity;	/* NULL: none */
	int recompute_layers;		/* full: layers per stage recomputed */
	bool uneven;			/* stages of unequal layer counts */
	bool mixed_recompute;		/* stages recompute differently */
	bool expressible;
	int64_t megatron_gap_ns;	/* per step: Megatron plan minus ours */
} launch_shape;

static void
shape_of(const sl_pipeline *pl, const sl_hybrid_opts *o, launch_shape *ls)
{
	int inner = pl->launch_tp > 1 ? pl->launch_tp : 1;
	int cp = pl->launch_cp > 1 ? pl->launch_cp : 1;
	int outer = pl->mesh.n_devices / (inner * cp);
	int64_t gap = 0;

	/* tensor parallel on the inner axis, context parallel on the axes
	 * attention splits the sequence over, the rest data parallel */
	memset(ls, 0, sizeof *ls);
	if (outer < 1)
		outer = 1;
	ls->tp = inner;
	ls->cp = cp;
	ls->dp = outer;
	ls->pp = pl->pp;
	ls->vpp = pl->virt > 1 ? pl->stage[0].n_layers : 0;
	ls->gbs = pl->graph_batch * pl->micro_batches;
	ls->mbs = pl->graph_batch / (outer > 0 ? outer : 1);
	ls->accum = pl->micro_batches;
	ls->sp = inner > 1;	/* as megatron_choice lays the stages out */
	ls->expressible = true;
	for (int j = 0; j < pl->n_stages; j++) {
		const sl_pipe_stage *st = &pl->stage[j];
		if (st->n_layers != pl->stage[0].n_layers)
			ls->uneven = true;
		if (st->recompute != pl->stage[0].recompute)
			ls->mixed_recompute = true;
		if (!st->expressible)
			ls->expressible = false;
		if (st->megatron_ns > 0)
			gap += st->megatron_ns - st->micro_ns;
	}
	ls->megatron_gap_ns = sl_mul_sat(gap > 0 ? gap : 0, pl->micro_batches);
	switch (pl->stage[0].recompute) {
	case SL_RECOMP_SELECTIVE:
		ls->granularity = "selective";
		break;
	case SL_RECOMP_FULL:
		ls->granularity = "full";
		ls->recompute_layers = 1;
		break;
	default:
		break;
	}
	(void)o;
}

static void
notes(sbuf *b, const sl_pipeline *pl, const launch_shape *ls, const char *cmt)
{
	char t1[32];

	if (ls->uneven) {
		sb_printf(b, "%s %s", cmt, _("stages hold unequal layer counts:"));
		for (int j = 0; j < pl->n_stages; j++)
			sb_printf(b, " %d", pl->stage[j].n_layers);
		sb_printf(b, "\n%s %s\n", cmt,
		    _("(Megatron-LM: --decoder-first-pipeline-num-layers and "
		    "--decoder-last-pipeline-num-layers, where the release has them)"));
	}
	if (ls->mixed_recompute)
		sb_printf(b, "%s %s\n", cmt,
		    _("stages recompute differently; the arguments give the first "
		    "stage's setting"));
	if (!ls->expressible)
		sb_printf(b, "%s %s %s %s\n", cmt,
		    _("the plan chooses per operator what the framework cannot say; "
		    "the nearest expressible plan is the one below, which the cost "
		    "model predicts slower by"),
		    sl_format_ns(ls->megatron_gap_ns, t1, sizeof t1), _("per step"));
	if (ls->cp > 1) {
		sb_printf(b, "%s ", cmt);
		sb_printf(b, _("context parallel: attention splits the sequence over %d "
		    "devices, K and V passed round a ring"), ls->cp);
		sb_printf(b, "\n");
		if (!ls->expressible)
			sb_printf(b, "%s %s\n", cmt,
			    _("(the comparison above is with a plan without context parallelism)"));
	}
}

/* root as text in the writer's layout (json.c). */
static char *
export_json(json_t *root, sl_error *err)
{
	char *text = sl_json_format(root);

	if (text == NULL)
		sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
		    _("cannot build the JSON export"));
	return text;
}

/* Megatron-LM's arguments (megatron/training/arguments.py). */
static void
export_megatron(sbuf *b, const sl_pipeline *pl, const sl_hybrid_opts *o,
    const launch_shape *ls)
{
	notes(b, pl, ls, "#");
	sb_printf(b, "--tensor-model-parallel-size %d \\\n", ls->tp);
	sb_printf(b, "--pipeline-model-parallel-size %d \\\n", ls->pp);
	if (ls->vpp > 0)
		sb_printf(b, "--num-layers-per-virtual-pipeline-stage %d \\\n", ls->vpp);
	if (ls->sp)
		sb_printf(b, "--sequence-parallel \\\n");
	sb_printf(b, "--context-parallel-size %d \\\n", ls->cp);
	if (ls->granularity != NULL) {
		sb_printf(b, "--recompute-granularity %s \\\n", ls->granularity);
		if (ls->recompute_layers > 0)
			sb_printf(b, "--recompute-method uniform \\\n"
			    "--recompute-num-layers %d \\\n", ls->recompute_layers);
	}
	sb_printf(b, "--micro-batch-size %lld \\\n", (long long)ls->mbs);
	sb_printf(b, "--global-batch-size %lld \\\n", (long long)ls->gbs);
	/* the step as it was costed: gradients reduced during backward
	 * (doc/cost-model.md, "Step time"), clipping as the recipe says */
	if (o->space.recipe.no_clip_grad)
		sb_printf(b, "--clip-grad 0.0 \\\n");
	sb_printf(b, "--use-distributed-optimizer%s\n",
	    o->space.recipe.no_grad_overlap ? "" : " \\");
	if (!o->space.recipe.no_grad_overlap)
		sb_printf(b, "--overlap-grad-reduce\n");
}

/*
 * DeepSpeed's configuration file; the stages themselves are given to
 * PipelineModule(num_stages=pp) in code (man shardlab(1)).
 */
static char *
export_deepspeed(const sl_pipeline *pl, const sl_hybrid_opts *o,
    const launch_shape *ls, sl_error *err)
{
	int zero = ls->dp > 1 || o->offload_optimizer ? 1 : 0;
	json_t *root, *z;

	z = json_pack("{s:i}", "stage", zero);
	if (o->offload_optimizer)
		json_object_set_new(z, "offload_optimizer", json_pack(
		    "{s:s, s:b}", "device", "cpu", "pin_memory", 1));
	root = json_pack("{s:I, s:I, s:I, s:{s:b}, s:o}",
	    "train_batch_size", (json_int_t)ls->gbs,
	    "train_micro_batch_size_per_gpu", (json_int_t)ls->mbs,
	    "gradient_accumulation_steps", (json_int_t)ls->accum,
	    "bf16", "enabled",
	    (int)(o->space.recipe.precision != SL_PREC_FP32),
	    "zero_optimization", z);
	if (pl->stage[0].recompute == SL_RECOMP_FULL)
		json_object_set_new(root, "activation_checkpointing",
		    json_pack("{s:b, s:b, s:b}", "partition_activations",
		    (int)(ls->tp > 1), "contiguous_memory_optimization", 0,
		    "cpu_checkpointing", 0));
	json_object_set_new(root, "pipeline", json_pack("{s:b, s:b}",
	    "pipe_partitioned", (int)(ls->tp > 1),
	    "grad_partitioned", (int)(ls->tp > 1)));
	return export_json(root, err);
}

/* A PyTorch DTensor / FSDP2 script. */
static void
export_dtensor(sbuf *b, const sl_pipeline *pl, const launch_shape *ls)
{
	notes(b, pl, ls, "#");
	if (ls->cp > 1)
		sb_printf(b, "# PyTorch DTensor / FSDP2 plan: %d pipeline stages of a "
		    "%d x %d x %d (dp x cp x tp) mesh\n", ls->pp, ls->dp, ls->cp, ls->tp);
	else
		sb_printf(b, "# PyTorch DTensor / FSDP2 plan: %d pipeline stages of a "
		    "%d x %d (dp x tp) mesh\n", ls->pp, ls->dp, ls->tp);
	sb_printf(b, "from torch.distributed.device_mesh import init_device_mesh\n"
	    "from torch.distributed.tensor.parallel import (\n"
	    "    ColwiseParallel, RowwiseParallel, parallelize_module)\n"
	    "from torch.distributed.fsdp import fully_shard\n\n");
	if (ls->cp > 1)
		sb_printf(b, "from torch.distributed.tensor.experimental "
		    "import context_parallel\n");
	if (ls->cp > 1)
		sb_printf(b, "mesh = init_device_mesh(\"cuda\", (%d, %d, %d, %d), "
		    "mesh_dim_names=(\"pp\", \"dp\", \"cp\", \"tp\"))\n",
		    ls->pp, ls->dp, ls->cp, ls->tp);
	else
		sb_printf(b, "mesh = init_device_mesh(\"cuda\", (%d, %d, %d), "
		    "mesh_dim_names=(\"pp\", \"dp\", \"tp\"))\n", ls->pp, ls->dp, ls->tp);
	sb_printf(b, "STAGE_LAYERS = [");
	for (int j = 0; j < pl->n_stages; j++)
		sb_printf(b, "%s%d", j ? ", " : "", pl->stage[j].n_layers);
	sb_printf(b, "]\nMICRO_BATCHES = %lld\n\n", (long long)pl->micro_batches);
	sb_printf(b, "def parallelize_layer(layer):\n");
	if (ls->tp > 1)
		sb_printf(b, "    parallelize_module(layer, mesh[\"tp\"], {\n"
		    "        \"attn.qkv\": ColwiseParallel(),\n"
		    "        \"attn.proj\": RowwiseParallel(),\n"
		    "        \"mlp.fc1\": ColwiseParallel(),\n"
		    "        \"mlp.fc2\": RowwiseParallel(),\n"
		    "    })\n");
	/* gradients are summed over the data- and context-parallel
	 * ranks together (torchtitan flattens the two the same way) */
	sb_printf(b, "    fully_shard(layer, mesh=%s, "
	    "reshard_after_forward=False)\n", ls->cp > 1 ?
	    "mesh[\"dp\", \"cp\"]._flatten(\"dp_cp\")" : "mesh[\"dp\"]");
	sb_printf(b, "    return layer\n");
	if (ls->cp > 1)
		sb_printf(b, "\n# each step: the sequence dimension (1) of the inputs and\n"
		    "# labels split over mesh[\"cp\"] while the step runs\n"
		    "def step_context(tokens, labels):\n"
		    "    return context_parallel(mesh[\"cp\"], buffers=[tokens, labels],\n"
		    "                            buffer_seq_dims=[1, 1])\n");
}

/* shardlab's own pipeline plan ("format": "shardlab-pipeline"). */
static char *
export_pipeline_json(const sl_pipeline *pl, const sl_hybrid_opts *o,
    sl_error *err)
{
	json_t *root, *stages = json_array(), *shape = json_array();

	for (int i = 0; i < pl->mesh.n_axes; i++)
		json_array_append_new(shape,
		    json_integer(pl->mesh.axes[i].size));
	for (int j = 0; j < pl->n_stages; j++) {
		const sl_pipe_stage *st = &pl->stage[j];
		const sl_pipe_dev *dv = &pl->dev[st->device];
		json_t *ops = json_array();

		for (int u = 0; u < st->n_strat_ops; u++)
			json_array_append_new(ops,
			    sl_json_str(st->strategy[u]));
		json_array_append_new(stages, json_pack(
		    "{s:i, s:i, s:i, s:s, s:I, s:I, s:I, s:o}",
		    "device", st->device, "first_layer", st->first_layer,
		    "layers", st->n_layers,
		    "recompute", sl_recompute_name(st->recompute),
		    "in_flight", (json_int_t)dv->in_flight,
		    "memory_bytes", (json_int_t)dv->mem,
		    "micro_batch_time_ns", (json_int_t)st->micro_ns,
		    "ops", ops));
	}
	root = json_pack("{s:s, s:i, s:s, s:i, s:i, s:{s:o}, s:I, s:I, "
	    "s:I, s:I, s:I, s:b, s:o}",
	    "format", "shardlab-pipeline", "version", 1,
	    "schedule", sl_schedule_name(pl->schedule), "pp", pl->pp,
	    "virtual_stages", pl->virt, "mesh", "shape", shape,
	    "micro_batches", (json_int_t)pl->micro_batches,
	    "graph_batch", (json_int_t)pl->graph_batch,
	    "step_time_ns", (json_int_t)pl->step_ns,
	    "bubble_ns", (json_int_t)pl->bubble_ns,
	    "max_memory_bytes", (json_int_t)pl->max_mem,
	    "fits", (int)pl->fits, "stages", stages);
	json_object_set_new(root, "recipe",
	    sl_plan_recipe_json(&o->space.recipe, NULL, 0));
	/* the step's parts and what it achieves (doc/cost-model.md) */
	json_object_set_new(root, "step", json_pack(
	    "{s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o}",
	    "pipeline_ns", (json_int_t)pl->pipe_ns,
	    "sync_ns", (json_int_t)pl->sync_ns,
	    "optimizer_ns", (json_int_t)pl->optim_ns,
	    "tokens", (json_int_t)pl->tokens,
	    "tokens_per_s", sl_json_real(pl->tokens_per_s),
	    "model_flops", sl_json_real(pl->model_flops),
	    "hardware_flops", sl_json_real(pl->hw_flops),
	    "mfu", sl_json_real(pl->mfu), "hfu", sl_json_real(pl->hfu)));
	return export_json(root, err);
}

char *
sl_pipeline_export(const sl_pipeline *pl, const sl_hybrid_opts *o,
    sl_export_kind k, sl_error *err)
{
	launch_shape ls;
	sbuf b = { 0 };

	if (pl == NULL || pl->n_stages < 1) {
		sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s", _("no pipeline to export"));
		return NULL;
	}
	shape_of(pl, o, &ls);
	switch (k) {
	case SL_EXPORT_MEGATRON:
		export_megatron(&b, pl, o, &ls);
		return b.s;
	case SL_EXPORT_DEEPSPEED:
		return export_deepspeed(pl, o, &ls, err);
	case SL_EXPORT_DTENSOR:
		export_dtensor(&b, pl, &ls);
		return b.s;
	case SL_EXPORT_JSON:
		return export_pipeline_json(pl, o, err);
	default:
		sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s", _("unknown export kind"));
		return NULL;
	}
}
