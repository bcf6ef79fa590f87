/*
 * plan.c: `shardlab plan`, the hybrid search.  Prints what it searched
 * and set aside, the memory / step-time frontier of the configurations, the
 * chosen pipeline stage by stage, and when nothing fits, the changes that
 * would make it fit; --export writes what a framework launches.
 */
#include "cli.h"

#include <stdlib.h>

typedef cli_plan_model plan_model;

static sl_graph *
plan_open(void *ctx, int64_t batch, int64_t seq, sl_error *err)
{
	const plan_model *pm = ctx;
	sl_model_opts mo;

	memset(&mo, 0, sizeof mo);
	mo.micro_batch = batch;
	mo.devices = 1;
	mo.seq = seq;
	return sl_model_open(pm->arg, &mo, err);
}

/* The batch of a model file is fixed; the search needs one that follows. */
static int
check_batch(plan_model *pm, int64_t *seq, sl_error *err)
{
	sl_graph *a = plan_open(pm, 1, 0, err), *b;
	bool same = true;

	if (a == NULL)
		return err->code ? err->code : SL_EINPUT;
	if ((b = plan_open(pm, 2, 0, err)) == NULL) {
		sl_graph_free(a);
		return err->code ? err->code : SL_EINPUT;
	}
	*seq = 0;
	for (int t = 0; t < a->n_tensors && t < b->n_tensors; t++) {
		if (a->tensors[t].rank > 0 && a->tensors[t].dims[0] != b->tensors[t].dims[0])
			same = false;
		if (*seq == 0 && a->tensors[t].role == SL_ROLE_INPUT && a->tensors[t].rank == 2)
			*seq = a->tensors[t].dims[1];
	}
	sl_graph_free(a);
	sl_graph_free(b);
	if (same)
		return sl_error_set(err, SL_EINPUT, pm->arg, 0, 0, "%s",
		    _("shardlab plan needs a model whose batch follows the micro-batch: "
		    "a bundled model, a generator file, or gen's flags in a generator file"));
	return SL_OK;
}

/* "2x4", or "8" for one axis */
static void
mesh_str(int outer, int inner, char *buf, size_t len)
{
	if (outer == 1 || inner == 1)
		snprintf(buf, len, "%d", outer * inner);
	else
		snprintf(buf, len, "%dx%d", outer, inner);
}

/* The experts' layout: expert parallel and expert tensor parallel degrees,
 * the axes of the sub-mesh they take, the dispatcher. */
static void
print_experts(const sl_pipeline *pl, const sl_graph *g)
{
	sl_moe_arch a;
	const sl_moe_layout *l = &pl->moe;
	char ax[2][32];

	sl_moe_arch_of(g, &a);
	for (int k = 0; k < 2; k++) {
		uint8_t m = k == 0 ? l->ep_axes : l->etp_axes;
		size_t o = 0;
		ax[k][0] = '\0';
		for (int i = 0; i < pl->mesh.n_axes && m; i++)
			if (m & (1u << i))
				o += (size_t)snprintf(ax[k] + o, sizeof ax[k] - o, "%s%s",
				    o ? "," : "", i == pl->mesh.n_axes - 1 &&
				    pl->mesh.n_axes > 1 ? _("inner") : _("outer"));
	}
	printf(ngettext("experts: %lld per MoE layer, top-%lld; expert parallel %d",
	    "experts: %lld per MoE layer, top-%lld; expert parallel %d",
	    a.experts), (long long)a.experts, (long long)a.topk, l->ep);
	if (l->ep > 1)
		printf(_(" (%s axis), %lld per device"), ax[0],
		    (long long)(a.experts / l->ep));
	printf(_(", expert tensor parallel %d"), l->etp);
	if (l->etp > 1)
		printf(" (%s)", ax[1]);
	printf(_(", %s dispatcher\n"), l->allgather ? "allgather" : "alltoall");
	if (!l->megatron)
		printf(_("  (Megatron-LM cannot lay the experts out so: %s)\n"), l->why);
}

/*
 * The collectives of the parameter states once a step, as they run
 * (sl_pipeline_state_comm): all-reduce of the gradients, or their
 * reduce-scatter and the all-gather of the updated weights where the
 * states are sharded; for the pipeline rank that moves the most.
 */
static void
print_state_comm(const sl_pipeline *pl, const sl_hybrid_opts *o)
{
	/* in the order they run */
	static const struct {
		sl_coll coll;
		const char *of;
	} what[] = {
		/* TRANSLATORS: after "all-reduce" or "reduce-scatter" */
		{ SL_COLL_ALL_REDUCE, N_("of the gradients, %s (%s)") },
		{ SL_COLL_REDUCE_SCATTER, N_("of the gradients, %s (%s)") },
		/* TRANSLATORS: after "all-gather" */
		{ SL_COLL_ALL_GATHER, N_("of the updated weights, %s (%s)") },
	};
	sl_comm *dev = sl_xcalloc((size_t)pl->pp, sizeof *dev);
	int best = -1;
	int64_t most = 0;
	char b[2][32];

	for (int j = 0; j < pl->n_stages; j++) {
		sl_comm c;
		sl_error err;

		sl_error_clear(&err);
		if (sl_pipeline_state_comm(o, pl, j, &c, &err) != SL_OK)
			goto out;
		sl_comm_add(&dev[pl->stage[j].device], &c);
	}
	for (int d = 0; d < pl->pp; d++) {
		int64_t t = 0;
		for (int k = 0; k < SL_COLL_COUNT; k++)
			t = sl_add_sat(t, dev[d].bytes[k]);
		if (t > most) {
			most = t;
			best = d;
		}
	}
	if (best < 0)
		goto out;
	printf(_("collectives of the states once a step, per device of pipeline rank %d:"),
	    best);
	for (size_t i = 0, n = 0; i < SL_ARRAY_LEN(what); i++) {
		sl_coll k = what[i].coll;
		if (dev[best].bytes[k] <= 0)
			continue;
		printf("%s %s ", n++ ? "," : "", sl_coll_name(k));
		printf(_(what[i].of), cli_bytes(dev[best].bytes[k], b[0]),
		    cli_ns(dev[best].ns[k], b[1]));
	}
	printf("\n");
out:
	free(dev);
}

static void
print_pipeline(const sl_pipeline *pl, const sl_hybrid_opts *o, const sl_graph *g)
{
	char b[6][32], ms[32];
	int outer = pl->mesh.n_axes == 2 ? pl->mesh.axes[0].size : 1;
	int inner = pl->mesh.axes[pl->mesh.n_axes - 1].size;

	char mb[64], sm[64], on[64];

	mesh_str(outer, inner, ms, sizeof ms);
	printf(ngettext("\nchosen plan: %d pipeline stage (%s",
	    "\nchosen plan: %d pipeline stages (%s", pl->pp), pl->pp,
	    sl_schedule_name(pl->schedule));
	if (pl->virt > 1)
		printf(_(", %d chunks per device"), pl->virt);
	if (outer == 1 || inner == 1)
		snprintf(on, sizeof on, ngettext("%d device", "%d devices",
		    outer * inner), outer * inner);
	else
		snprintf(on, sizeof on, _("a %s sub-mesh"), ms);
	snprintf(mb, sizeof mb, ngettext("%lld micro-batch", "%lld micro-batches",
	    pl->micro_batches), (long long)pl->micro_batches);
	snprintf(sm, sizeof sm, ngettext("%lld sample", "%lld samples",
	    pl->graph_batch), (long long)pl->graph_batch);
	/* TRANSLATORS: "), each on 8 devices; 16 micro-batches of 4 samples" */
	printf(_("), each on %s; %s of %s"), on, mb, sm);
	{
		/* what the framework calls the micro-batch: the samples of
		 * one data-parallel rank (pipe_export.c, the layout) */
		sl_layout l;
		int *layers = sl_xmalloc((size_t)pl->n_stages * sizeof *layers);
		sl_recompute *rec = sl_xmalloc((size_t)pl->n_stages * sizeof *rec);

		if (sl_pipeline_layout(pl, o, &l, layers, rec, NULL) == SL_OK &&
		    l.dp > 1) {
			printf(ngettext(" (%lld per data-parallel rank)",
			    " (%lld per data-parallel rank)", l.micro_batch),
			    (long long)l.micro_batch);
			/* HSDP: torchtitan's two data-parallel degrees */
			if (l.zero == 3 && l.dp_replicate > 1)
				printf(_("; HSDP: states sharded over %d ranks, "
				    "replicated %d times (data_parallel_shard_degree %d, "
				    "data_parallel_replicate_degree %d)"),
				    l.dp / l.dp_replicate, l.dp_replicate,
				    l.dp / l.dp_replicate, l.dp_replicate);
		}
		free(layers);
		free(rec);
	}
	printf("\n");
	printf(_("step time %s: pipeline %s (bubble %s, %.1f%%), gradient sync %s "
	    "exposed, optimizer %s\n"),
	    cli_ns(pl->step_ns, b[0]), cli_ns(pl->pipe_ns, b[1]), cli_ns(pl->bubble_ns, b[2]),
	    pl->pipe_ns > 0 ? 100.0 * (double)pl->bubble_ns / (double)pl->pipe_ns : 0.0,
	    cli_ns(pl->sync_ns, b[3]), cli_ns(pl->optim_ns, b[4]));
	print_state_comm(pl, o);
	if (pl->step_ns > 0 && o->hw.flops > 0) {
		printf(_("%s tokens/s; MFU %.1f%%"),
		    sl_format_rate(pl->tokens_per_s, b[0], sizeof b[0]), 100 * pl->mfu);
		/* recomputed forward passes are work the hardware does */
		if (pl->hw_flops > pl->model_flops)
			printf(_(", HFU %.1f%% (with the recomputed forward passes)"),
			    100 * pl->hfu);
		printf("\n");
	}
	{
		char cap[128];
		sl_hw_memory_text(&o->hw, cap, sizeof cap);
		if (o->mem_limit > 0)
			printf(_("memory per device: at most %s of the limit %s (%s)\n"),
			    cli_bytes(pl->max_mem, b[0]), cli_bytes(o->mem_limit, b[1]), cap);
		else
			printf(_("memory per device: at most %s, %s\n"),
			    cli_bytes(pl->max_mem, b[0]), cap);
	}
	if (g != NULL && pl->moe.n_experts > 0)
		print_experts(pl, g);
	cli_fprintf(stdout, "\n%-6s %-7s %-10s %-10s %8s %11s %11s %11s %11s\n", _("stage"),
	    _("pp rank"), _("layers"), _("recompute"), _("mb kept"), _("states"),
	    _("acts/mb"), _("rank peak"), _("time/mb"));
	for (int j = 0; j < pl->n_stages; j++) {
		const sl_pipe_stage *st = &pl->stage[j];
		const sl_pipe_dev *dv = &pl->dev[st->device];
		char lr[32];
		snprintf(lr, sizeof lr, "%d-%d", st->first_layer,
		    st->first_layer + st->n_layers - 1);
		printf("%-6d %-7d %-10s %-10s %8lld %11s %11s %11s %11s\n", j, st->device,
		    lr, sl_recompute_name(st->recompute), (long long)dv->in_flight,
		    cli_bytes(sl_mem_total(&st->states), b[0]), cli_bytes(st->acts, b[1]),
		    cli_bytes(dv->mem, b[2]), cli_ns(st->micro_ns, b[3]));
	}
	printf("%s\n", _("pp rank: the pipeline rank whose devices run the stage; mb kept:\n"
	    "micro-batches whose activations the rank keeps at its peak; states: parameters,\n"
	    "gradients, optimizer states and buffers per device; acts/mb: activations of one\n"
	    "micro-batch; rank peak: the most a device of the rank holds; time/mb: forward\n"
	    "and backward of one micro-batch."));
	if (g == NULL)
		return;
	printf(_("\nper-stage operator plan (the first layer of each stage; its other layers choose alike unless listed):\n"));
	for (int j = 0; j < pl->n_stages; j++) {
		const sl_pipe_stage *st = &pl->stage[j];
		int lay0 = st->first_layer;
		printf(_("stage %d:"), j);
		for (int u = 0; u < st->n_ops; u++) {
			const sl_op *op = &g->ops[st->first_op + u];
			bool show = op->layer < 0 || op->layer == lay0;
			if (!show && op->pos >= 0) {
				/* a later layer choosing otherwise than the first */
				int first = g->layers[lay0].first_op + op->pos - st->first_op;
				show = first >= 0 && first < st->n_ops &&
				    strcmp(st->strategy[first], st->strategy[u]) != 0;
			}
			if (show)
				printf(" %s=%s", sl_esc(op->name), sl_esc(st->strategy[u]));
		}
		printf("\n");
	}
}

/*
 * What the per-operator ideal would do with the same configuration: its
 * step time and memory beside the framework's, and the operators it
 * places otherwise (the first layer of each stage, as above).
 */
static void
print_free(const sl_pipeline *pl, const sl_hybrid_opts *ho, const sl_graph *g)
{
	sl_hybrid_opts fo = *ho;
	sl_pipe_config c;
	sl_pipeline fp;
	sl_error err;
	int *layers = sl_xmalloc((size_t)pl->n_stages * sizeof *layers), n = 0;
	sl_recompute *rec = sl_xmalloc((size_t)pl->n_stages * sizeof *rec);
	char b[4][32];

	/* the framework's state sharding is kept: per-operator placement is
	 * what differs */
	fo.space.recipe.framework = SL_FW_FREE;
	for (int j = 0; j < pl->n_stages; j++) {
		layers[j] = pl->stage[j].n_layers;
		rec[j] = pl->stage[j].recompute;
	}
	c = (sl_pipe_config){ .pp = pl->pp, .virt = pl->virt, .outer = pl->outer,
	    .inner = pl->inner, .dp_replicate = pl->dp_replicate,
	    .graph_batch = pl->graph_batch,
	    .micro_batches = pl->micro_batches, .layers = layers, .recompute = rec };
	sl_error_clear(&err);
	if (sl_pipeline_eval(&fo, &c, &fp, &err) != SL_OK) {
		cli_report(&err);
		free(layers);
		free(rec);
		return;
	}
	printf(_("\nthe per-operator plan (--framework free) of the same stages: step %s "
	    "(%s %s), memory per device at most %s (%s %s)%s\n"),
	    cli_ns(fp.step_ns, b[0]), fp.step_ns <= pl->step_ns ? _("saves") : _("costs"),
	    cli_ns(fp.step_ns <= pl->step_ns ? pl->step_ns - fp.step_ns :
	    fp.step_ns - pl->step_ns, b[1]),
	    cli_bytes(fp.max_mem, b[2]), fp.max_mem <= pl->max_mem ? _("saves") :
	    _("costs"), cli_bytes(fp.max_mem <= pl->max_mem ? pl->max_mem - fp.max_mem :
	    fp.max_mem - pl->max_mem, b[3]), fp.fits ? "" : _("; it does not fit"));
	for (int j = 0, shown = 0; j < pl->n_stages && g != NULL; j++) {
		const sl_pipe_stage *st = &pl->stage[j], *ft = &fp.stage[j];
		int lay0 = st->first_layer;
		bool head = false;
		if (shown == 4) {
			printf(_("  (and the other stages alike)\n"));
			break;
		}
		for (int u = 0; u < st->n_ops && u < ft->n_ops; u++) {
			const sl_op *op = &g->ops[st->first_op + u];
			if ((op->layer >= 0 && op->layer != lay0) ||
			    strcmp(st->strategy[u], ft->strategy[u]) == 0)
				continue;
			if (!head)
				printf(_("  stage %d places otherwise:"), j);
			head = true;
			printf(" %s=%s (%s)", op->name, ft->strategy[u], st->strategy[u]);
			n++;
		}
		if (head) {
			printf("\n");
			shown++;
		}
	}
	if (n == 0)
		printf("%s\n", _("  it places every operator as the framework does"));
	sl_pipeline_free(&fp);
	free(layers);
	free(rec);
}

/*
 * DeepSpeed runs neither tensor nor context parallelism: the frameworks
 * that run them, when their plans are faster or fit where DeepSpeed's
 * does not.
 */
static void
print_better(const sl_hybrid_opts *ho, const sl_hybrid_result *r, bool precision_set)
{
	static const sl_framework others[] = { SL_FW_MEGATRON, SL_FW_TORCHTITAN };

	for (size_t i = 0; i < SL_ARRAY_LEN(others); i++) {
		sl_hybrid_opts oo = *ho;
		sl_hybrid_result rr;
		sl_error err;
		char b[3][32];

		oo.space.recipe.framework = others[i];
		if (!precision_set)
			oo.space.recipe.precision = sl_framework_precision(others[i]);
		oo.space.recipe.shard_states = others[i] == SL_FW_MEGATRON ? 1 : 0;
		sl_error_clear(&err);
		if (sl_hybrid_search(&oo, &rr, &err) != SL_OK)
			continue;
		if (!rr.found || !rr.best.fits) {
			sl_hybrid_result_free(&rr);
			continue;
		}
		if (!r->found && !r->have_least)
			printf(_("%s would run a plan: step %s, memory per device at "
			    "most %s, where DeepSpeed runs none (--framework %s)\n"),
			    sl_framework_title(others[i]), cli_ns(rr.best.step_ns, b[0]),
			    cli_bytes(rr.best.max_mem, b[1]), sl_framework_name(others[i]));
		else if (!r->found || !r->best.fits)
			printf(_("%s would run a better plan: step %s, memory per device "
			    "at most %s, where DeepSpeed's does not fit (--framework %s)\n"),
			    sl_framework_title(others[i]), cli_ns(rr.best.step_ns, b[0]),
			    cli_bytes(rr.best.max_mem, b[1]), sl_framework_name(others[i]));
		else if (rr.best.step_ns < r->best.step_ns)
			/* by how much: the time a step saves, and the ratio of
			 * DeepSpeed's step to it */
			printf(_("%s would run a better plan: step %s, %s (%.2fx) faster "
			    "(pipeline %d, tensor parallel %d, context parallel %d), "
			    "memory per device at most %s (--framework %s)\n"),
			    sl_framework_title(others[i]), cli_ns(rr.best.step_ns, b[0]),
			    cli_ns(r->best.step_ns - rr.best.step_ns, b[1]),
			    (double)r->best.step_ns / (double)rr.best.step_ns,
			    rr.best.pp, rr.best.launch_tp > 1 ? rr.best.launch_tp : 1,
			    rr.best.launch_cp > 1 ? rr.best.launch_cp : 1,
			    cli_bytes(rr.best.max_mem, b[2]), sl_framework_name(others[i]));
		sl_hybrid_result_free(&rr);
	}
}

/* The launch of kind (sl_export_kind) to path ("-": standard output). */
static int
write_export(const sl_pipeline *pl, const sl_hybrid_opts *ho, int kind,
    const char *path, sl_error *err)
{
	sl_atomic a;
	char *text = sl_pipeline_export(pl, ho, kind, err);
	int rc;

	if (text == NULL)
		return err->code ? err->code : SL_EINTERNAL;
	if ((rc = sl_atomic_open(&a, path, err)) != SL_OK) {
		free(text);
		return rc;
	}
	if (fputs(text, a.fp) == EOF) {
		sl_atomic_abort(&a);
		free(text);
		return sl_error_set(err, SL_EINTERNAL, path, 0, 0, "%s",
		    _("cannot write the export"));
	}
	free(text);
	return sl_atomic_commit(&a, err);
}

/*
 * What plan writes, every option that names it used: --json FILE the plan
 * with its stages (--export json's text), --export KIND the launch to -o
 * FILE or standard output, both when both are given; -o without --export
 * names nothing to write, and two outputs on standard output would mix.
 */
static int
plan_outputs(const cli_opts *o, sl_error *err)
{
	bool json_out = o->json != NULL && strcmp(o->json, "-") == 0;
	bool export_out = o->export_kind != NULL &&
	    (o->output == NULL || strcmp(o->output, "-") == 0);

	if (o->output != NULL && o->export_kind == NULL)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("-o names where --export writes: add --export "
		    "megatron|deepspeed|dtensor|json, or write the plan with "
		    "--json FILE"));
	if (json_out && export_out)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("--json - and --export both write to standard output: "
		    "give one of them a file (-o FILE for --export)"));
	return SL_OK;
}

/*
 * --dp-replicate N: torchtitan's parallelism.data_parallel_replicate_degree
 * (torchtitan/config/job_config.py), which FSDP2 runs as HSDP over the
 * ("dp_replicate", "dp_shard") mesh (torchtitan/distributed/
 * parallel_dims.py); N divides the data-parallel ranks, which are the
 * devices over the pipeline and tensor-parallel degrees.
 */
static int
check_replicate(const cli_opts *o, const sl_hybrid_opts *ho, sl_error *err)
{
	sl_framework fw = ho->space.recipe.framework;
	int n = o->dp_replicate, dp = ho->devices;

	if (n <= 1)
		return SL_OK;
	if (fw != SL_FW_TORCHTITAN && fw != SL_FW_FREE)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--dp-replicate %d: %s does not replicate sharded states "
		    "across groups; HSDP needs --framework torchtitan or free"), n,
		    sl_framework_title(fw));
	if (!ho->space.zero)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--dp-replicate %d replicates sharded states, and --no-zero "
		    "shards none"), n);
	if (ho->topo != NULL) {
		dp = 1;
		for (int a = 0; a < ho->topo->n_axes; a++)
			if (ho->topo->role[a] == SL_AXIS_DP)
				dp *= ho->topo->shape[a];
	} else {
		if (ho->pp > 0 && dp % ho->pp == 0)
			dp /= ho->pp;
		if (ho->tp > 0 && dp % ho->tp == 0)
			dp /= ho->tp;
	}
	if (dp % n != 0)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--dp-replicate %d does not divide the %d data-parallel ranks"),
		    n, dp);
	return SL_OK;
}

/*
 * The search's options from the command line's: the model, the hardware,
 * the recipe (the framework --export's or Megatron-LM unless told, its
 * precision and state sharding), the degrees fixed,
 * and the devices, from --devices or --mesh with --axes (into topo).
 */
int
cli_hybrid_opts(const cli_opts *o, cli_plan_model *pm, sl_hybrid_opts *ho,
    sl_topo *topo, sl_error *err)
{
	int rc;

	sl_hybrid_opts_default(ho);
	pm->arg = o->args[0];
	ho->model_source = pm->arg;
	ho->hw_source = o->hw;
	ho->model = plan_open;
	ho->model_ctx = pm;
	if ((rc = sl_hw_load(o->hw, &ho->hw, err)) != SL_OK ||
	    (rc = check_batch(pm, &ho->model_seq, err)) != SL_OK)
		return rc;
	ho->space.zero = !o->no_zero;
	ho->space.recipe = o->recipe;
	ho->space.recipe.micro_batch = 1;
	/* a plan is made for a framework to run: the one --export launches
	 * with, else Megatron-LM, unless told or reopened from a plan file,
	 * whose recipe says how it was made */
	if (o->recipe_from_plan)
		;
	else if (!cli_given(o, "framework")) {
		int k = sl_export_from_name(o->export_kind);
		ho->space.recipe.framework = k >= 0 && sl_export_framework(k) != SL_FW_FREE ?
		    sl_export_framework(k) : SL_FW_MEGATRON;
	}
	/* and trained as that framework trains unless told */
	if (!cli_given(o, "precision") && !o->recipe_from_plan)
		ho->space.recipe.precision = sl_framework_precision(ho->space.recipe.framework);
	/* Megatron-LM's distributed optimizer and DeepSpeed's ZeRO shard the
	 * optimizer states over data parallel */
	if (o->recipe_from_plan)
		;
	else if (ho->space.recipe.framework == SL_FW_MEGATRON ||
	    ho->space.recipe.framework == SL_FW_DEEPSPEED)
		ho->space.recipe.shard_states = 1;
	/* the per-operator search chooses whether to shard them, and the
	 * gradients (ZeRO-1, ZeRO-2), as it chooses ZeRO-3 per operator */
	else if (ho->space.recipe.framework == SL_FW_FREE)
		ho->space.recipe.shard_states = -1;
	ho->global_batch = o->recipe.global_batch;
	ho->schedule = o->schedule;
	ho->virt = o->virt;
	ho->pp = o->pp;
	ho->tp = o->tp;
	ho->slack = o->slack;
	ho->offload_optimizer = o->offload;
	ho->ep_axes = o->expert_axes;
	ho->mem_limit = o->mem_limit;
	ho->micro_batch = o->micro_batch_set ? o->micro_batch : 0;
	ho->dp_replicate = o->dp_replicate;
	if (o->axes != NULL || (o->mesh_arg != NULL && o->n_axes != 1)) {
		int n, sh[SL_MAX_TOPO_AXES];
		sl_axis_role ro[SL_MAX_TOPO_AXES];
		if ((rc = sl_topo_parse(o->mesh_arg ? o->mesh_arg : "4", o->axes, &n,
		    sh, ro, err)) != SL_OK ||
		    (rc = sl_topo_make(&ho->hw, n, sh, ro, topo, err)) != SL_OK)
			return rc;
		ho->topo = topo;
		ho->devices = topo->n_devices;
	} else
		ho->devices = o->n_axes == 1 ? o->shape[0] : o->shape[0] * o->shape[1];
	return check_replicate(o, ho, err);
}

/* What was searched and set aside, and the frontier of what fits. */
static void
print_search(const plan_model *pm, const sl_hybrid_opts *ho,
    const sl_hybrid_result *r)
{
	char rd[256], cap[128], b[2][32], mn[256], nd[64];
	char c1[64], c2[64], c3[64], c4[64], c5[64];
	sl_error err;
	sl_graph *g1;

	/* the model's own name and the sequence trained, not the file */
	sl_error_clear(&err);
	if ((g1 = plan_open((void *)pm, 1, ho->space.recipe.seq, &err)) != NULL)
		cli_model_str(g1, mn, sizeof mn);
	else
		sl_esc_buf(pm->arg, mn, sizeof mn);
	sl_graph_free(g1);
	snprintf(nd, sizeof nd, ngettext("%d device", "%d devices", ho->devices),
	    ho->devices);
	printf(_("model %s on %s of %s, each %s; global batch %lld\n"),
	    mn, nd, sl_esc(ho->hw.name), sl_hw_memory_text(&ho->hw, cap, sizeof cap),
	    (long long)(ho->global_batch > 0 ? ho->global_batch : ho->devices));
	printf(_("training recipe: %s\n"), sl_recipe_describe(&ho->space.recipe, rd, sizeof rd));
	printf(_("framework: %s\n"),
	    sl_framework_title(ho->space.recipe.framework));
	/* the per-operator search chose the states' sharding */
	if (ho->space.recipe.framework == SL_FW_FREE && r->found) {
		static const char *const states[] = {
			N_("none beyond the operators' ZeRO-3 (+z)"),
			N_("optimizer states over data parallel (ZeRO-1)"),
			N_("optimizer states and gradients over data parallel (ZeRO-2)"),
		};
		if (r->shard_states >= 0 && r->shard_states <= 2)
			printf(_("states sharded: %s\n"), _(states[r->shard_states]));
	}
	snprintf(c1, sizeof c1, ngettext("%lld configuration", "%lld configurations",
	    r->configs), (long long)r->configs);
	snprintf(c2, sizeof c2, ngettext("%lld partition", "%lld partitions",
	    r->partitions), (long long)r->partitions);
	snprintf(c3, sizeof c3, ngettext("%lld stage solve", "%lld stage solves",
	    r->stage_solves), (long long)r->stage_solves);
	printf(_("searched %s and %s with %s (%lld answered from the cache) in "
	    "%.0f ms\n"), c1, c2, c3, (long long)r->cache_hits, r->time_ms);
	snprintf(c1, sizeof c1, ngettext("%lld sub-mesh", "%lld sub-meshes",
	    r->pruned_shapes), (long long)r->pruned_shapes);
	snprintf(c2, sizeof c2, ngettext("%lld micro-batch size",
	    "%lld micro-batch sizes", r->pruned_batches), (long long)r->pruned_batches);
	snprintf(c4, sizeof c4, ngettext("%lld configuration", "%lld configurations",
	    r->pruned_partitions), (long long)r->pruned_partitions);
	snprintf(c5, sizeof c5, ngettext("%d layer", "%d layers", ho->slack),
	    ho->slack);
	printf(_("set aside: %lld by a lower bound on the step time, %s "
	    "(tensor parallelism beyond a node, or chunks of unequal layers), "
	    "%s that do not divide the global batch; "
	    "%s searched stage sizes by bound instead of listing them "
	    "(stages within %s of the even split)\n"),
	    (long long)r->pruned_bound, c1, c2, c4, c5);
	if (r->pruned_framework > 0)
		printf(ngettext("%s cannot run %lld configuration (%s)\n",
		    "%s cannot run %lld configurations (the first: %s)\n",
		    r->pruned_framework), sl_framework_title(ho->space.recipe.framework),
		    (long long)r->pruned_framework, r->framework_why);
	if (r->n_front > 0) {
		cli_fprintf(stdout, "\n%s\n%-4s %-3s %-9s %7s %13s %13s\n",
		    _("frontier of memory against step time (configurations that fit):"),
		    "pp", "v", _("sub-mesh"), "m", _("memory/dev"), _("step time"));
		for (int i = 0; i < r->n_front; i++) {
			const sl_hybrid_point *pt = &r->front[i];
			char ms[32];
			mesh_str(pt->outer, pt->inner, ms, sizeof ms);
			/* HSDP: replicate x shard */
			if (pt->dp_replicate > 1)
				snprintf(ms, sizeof ms, _("%dx%d hsdp"), pt->dp_replicate,
				    pt->outer * pt->inner / pt->dp_replicate);
			printf("%-4d %-3d %-9s %7lld %13s %13s\n", pt->pp, pt->virt, ms,
			    (long long)pt->micro_batches, cli_bytes(pt->max_mem, b[0]),
			    cli_ns(pt->step_ns, b[1]));
		}
	}
}

/* --devices min: the step time on 2 and 4 times the fewest devices. */
static void
print_more_devices(const sl_hybrid_opts *ho, const sl_hybrid_result *r)
{
	char b[32];

	printf(ngettext("step time on %d device: %s\n",
	    "step time on %d devices: %s\n", ho->devices), ho->devices,
	    cli_ns(r->best.step_ns, b));
	for (int f = 2; f <= 4; f *= 2) {
		sl_hybrid_opts t = *ho;
		sl_hybrid_result x;
		sl_error err;

		t.devices = ho->devices * f;
		sl_error_clear(&err);
		if (sl_hybrid_search(&t, &x, &err) != SL_OK) {
			printf(_("on %d devices: not planned: %s\n"), t.devices, err.msg);
			continue;
		}
		if (x.found)
			printf(_("on %d devices (%dx): %s (%.2fx as fast)\n"), t.devices, f,
			    cli_ns(x.best.step_ns, b), x.best.step_ns > 0 ?
			    (double)r->best.step_ns / (double)x.best.step_ns : 0.0);
		else
			printf(_("on %d devices (%dx): no plan fits\n"), t.devices, f);
		sl_hybrid_result_free(&x);
	}
	printf("\n");
}

/* A step beside a reference: "1.50 s (-6.2%)". */
static const char *
step_vs(int64_t step, int64_t ref, char *buf, size_t len)
{
	char t[32];

	snprintf(buf, len, "%s (%+.1f%%)", cli_ns(step, t),
	    ref > 0 ? 100.0 * ((double)step / (double)ref - 1) : 0.0);
	return buf;
}

/*
 * Beside the chosen plan, the layout Megatron-LM recommends for the same
 * devices and batch, and where the difference comes from: one change at
 * a time from that layout to the plan (sl_pipe_account_build).
 */
static void
print_account(const sl_pipeline *pl, const sl_hybrid_opts *ho)
{
	sl_pipe_account a;
	sl_error err;
	char b[4][64];
	int64_t usable = ho->mem_limit > 0 ? ho->mem_limit : ho->hw.memory_bytes;
	int64_t prev;

	sl_error_clear(&err);
	if (sl_pipe_account_build(ho, pl, &a, &err) != SL_OK) {
		printf(_("\nMegatron-LM's recommended layout for these devices and batch: "
		    "none to compare with (%s)\n"), err.msg);
		return;
	}
	snprintf(b[3], sizeof b[3], ngettext("%d pipeline stage",
	    "%d pipeline stages", a.standard.pp), a.standard.pp);
	printf(_("\nbeside it, Megatron-LM's recommended layout for the same devices and "
	    "batch: tensor parallel %d within a node%s, %s, data parallel %d, "
	    "micro-batch %lld, recomputation %s: step %s, at most %s per device "
	    "(margin %s)\n"), a.tp,
	    a.tp > 1 ? _(" with sequence parallelism") : "",
	    b[3], a.dp, (long long)a.micro_batch,
	    sl_recompute_name(a.recompute), cli_ns(a.standard.step_ns, b[0]),
	    cli_bytes(a.standard.max_mem, b[1]),
	    cli_bytes(usable - a.standard.max_mem, b[2]));
	printf("%s\n", _("where the difference comes from (one change at a time, from "
	    "that layout to the plan: step and its change, memory per device):"));
	prev = a.standard.step_ns;
	for (int i = 0; i < a.n_items; i++) {
		const sl_pipe_account_item *it = &a.item[i];
		cli_fprintf(stdout, "  %-58s %s, %s%s\n", it->what,
		    step_vs(it->step_ns, prev, b[0], sizeof b[0]),
		    cli_bytes(it->max_mem, b[1]), it->fits ? "" : _(" (does not fit)"));
		prev = it->step_ns;
	}
	printf(_("in all: step %s against Megatron-LM's layout; memory margin %s "
	    "against its %s\n"), step_vs(pl->step_ns, a.standard.step_ns, b[0],
	    sizeof b[0]), cli_bytes(usable - pl->max_mem, b[1]),
	    cli_bytes(usable - a.standard.max_mem, b[2]));
	sl_pipe_account_free(&a);
}

/* Nothing fits: the least memory reached, and the changes that would fit. */
static void
print_no_fit(const sl_hybrid_opts *ho, const sl_hybrid_result *r)
{
	sl_fit_change *ch;
	sl_error err;
	int n;
	char b[2][32];

	sl_error_clear(&err);
	if (r->have_least)
		fprintf(stderr, _("shardlab: no plan fits %s per device; the least memory "
		    "any configuration reached is %s\n"),
		    cli_bytes(ho->mem_limit > 0 ? ho->mem_limit : ho->hw.memory_bytes, b[0]),
		    cli_bytes(r->least.max_mem, b[1]));
	else
		fprintf(stderr, _("shardlab: no plan found: %s\n"), r->why_none);
	if (sl_hybrid_suggest(ho, &ch, &n, &err) != SL_OK) {
		cli_report(&err);
		return;
	}
	cli_print_changes(stdout, ch, n);
	free(ch);
}

static int
cmd_plan(int argc, char **argv)
{
	cli_opts o;
	sl_error err;
	sl_hybrid_opts ho;
	sl_hybrid_result r;
	sl_topo topo;
	plan_model pm;
	bool report;
	int rc;

	sl_error_clear(&err);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);
	if (o.n_args != 1) {
		sl_error_set(&err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("usage: shardlab plan MODEL --devices N|min | --mesh AxBxC --axes pp,dp,tp "
		    "[--global-batch B] [OPTIONS]"));
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if (cli_hybrid_opts(&o, &pm, &ho, &topo, &err) != SL_OK) {
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if (plan_outputs(&o, &err) != SL_OK) {
		cli_opts_free(&o);
		return cli_report(&err);
	}
	/* the report on standard output unless an output takes it */
	report = !(o.json != NULL && strcmp(o.json, "-") == 0) &&
	    !(o.export_kind != NULL && (o.output == NULL ||
	    strcmp(o.output, "-") == 0));
	if (o.devices_min) {
		int n, lower;
		if (o.recipe.global_batch <= 0 || ho.topo != NULL) {
			sl_error_set(&err, SL_EINPUT, NULL, 0, 0, "%s",
			    _("--devices min needs --global-batch B (the samples a "
			    "step trains, whatever the devices) and no --mesh"));
			cli_opts_free(&o);
			return cli_report(&err);
		}
		rc = sl_hybrid_min_devices(&ho, 0, &n, &lower, &r, &err);
		if (rc != SL_OK) {
			cli_opts_free(&o);
			return cli_report(&err);
		}
		if (n == 0) {
			fprintf(stderr, _("shardlab: no device count from %d to %d fits "
			    "(%d: the fewest whose memory holds the model's states once)\n"),
			    lower, lower * 4 > lower + 63 ? lower * 4 : lower + 63, lower);
			cli_opts_free(&o);
			return SL_EINFEASIBLE;
		}
		ho.devices = n;
		if (report) {
			printf(ngettext("fewest devices that fit: %d (tried from %d, the "
			    "fewest whose memory holds the model's states once)\n",
			    "fewest devices that fit: %d (tried from %d, the "
			    "fewest whose memory holds the model's states once)\n", n),
			    n, lower);
			print_more_devices(&ho, &r);
		}
	} else {
		rc = sl_hybrid_search(&ho, &r, &err);
		if (rc != SL_OK) {
			cli_opts_free(&o);
			return cli_report(&err);
		}
	}
	/* the plan is costed, reported and exported with the state
	 * sharding the search chose */
	if (r.found)
		ho.space.recipe.shard_states = r.shard_states;
	if (report)
		print_search(&pm, &ho, &r);
	if (!r.found) {
		print_no_fit(&ho, &r);
		if (ho.space.recipe.framework == SL_FW_DEEPSPEED)
			print_better(&ho, &r, cli_given(&o, "precision"));
		sl_hybrid_result_free(&r);
		cli_opts_free(&o);
		return SL_EINFEASIBLE;
	}
	if (report) {
		sl_graph *g = plan_open(&pm, r.best.graph_batch, ho.space.recipe.seq, &err);
		print_pipeline(&r.best, &ho, g);
		if (ho.space.recipe.framework != SL_FW_FREE)
			print_free(&r.best, &ho, g);
		if (ho.space.recipe.framework == SL_FW_DEEPSPEED)
			print_better(&ho, &r, cli_given(&o, "precision"));
		sl_graph_free(g);
		print_account(&r.best, &ho);
	}
	/* --json FILE: the plan with its stages, as --export json writes it */
	if (o.json != NULL && (rc = write_export(&r.best, &ho, SL_EXPORT_JSON,
	    o.json, &err)) != SL_OK) {
		sl_hybrid_result_free(&r);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if (o.export_kind != NULL && (rc = write_export(&r.best, &ho,
	    sl_export_from_name(o.export_kind), o.output ? o.output : "-",
	    &err)) != SL_OK) {
		sl_hybrid_result_free(&r);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	sl_hybrid_result_free(&r);
	cli_opts_free(&o);
	return SL_OK;
}

const struct cli_cmd cli_cmd_plan = {
	.name = "plan",
	.bit = CLI_C_PLAN,
	.usage = N_("plan MODEL --devices N|min | --mesh AxBxC --axes pp,dp,tp [--global-batch B] [OPTIONS] [--export KIND] [-o FILE]"),
	.help = N_("pipeline, data and tensor parallel degrees, micro-batches, stages and recomputation: the fastest plan that fits"),
	.run = cmd_plan,
};
