/*
 * timeline.c: `shardlab timeline`, memory over one training step of a
 * plan (solved, or read with --plan) on one device: the sum the solvers
 * optimise beside the peak of the timeline in the default and the
 * optimised order, the caching allocator's reserved memory, what is alive
 * at the peak, and a Chrome trace-event file (--trace).  The engine builds
 * everything (timeline.c); this file prints.
 */
#include "cli.h"

#include <stdlib.h>

static double
pct(int64_t a, int64_t b)
{
	return b > 0 ? 100.0 * (double)(a - b) / (double)b : 0.0;
}

/* The plan: --plan FILE (pf) mapped onto the session's space, or solved. */
static int
timeline_choice(const cli_opts *o, const sl_plan_file *pf, cli_session *s,
    int *choice, sl_error *err)
{
	if (pf != NULL) {
		int rc = sl_plan_choice(s->space, pf, choice, err);
		if (rc == SL_OK)
			cli_plan_warn(pf, s->g);
		return rc;
	}
	{
		sl_solve_opts so = { .time_limit = o->time_limit };
		sl_solution sol;
		int rc;
		sl_solution_init(&sol, s->prob->n);
		rc = sl_space_solve(s->space, s->prob, o->alpha, NULL, o->solver,
		    &so, &sol, err);
		if (rc == SL_OK && sol.status != SL_SOLVE_OPTIMAL &&
		    sol.status != SL_SOLVE_FEASIBLE)
			rc = sl_error_set(err, SL_EINFEASIBLE, NULL, 0, 0,
			    _("no plan (%s)"), sl_solve_status_name(sol.status));
		if (rc == SL_OK)
			memcpy(choice, sol.choice, s->g->n_ops * sizeof *choice);
		sl_solution_free(&sol);
		return rc;
	}
}

static void
print_timeline(const sl_space *sp, const sl_timeline *tl)
{
	char b1[32], b2[32], b3[32], name[128], rd[160];
	int *idx = sl_xmalloc((tl->n_bufs ? tl->n_bufs : 1) * sizeof *idx);
	int n;

	printf(_("recipe: %s\n"), sl_recipe_describe(&sp->opts.recipe, rd, sizeof rd));
	printf(_("device %d: %d tasks, %d buffers; %s\n"), tl->dev, tl->n_tasks,
	    tl->n_bufs, sl_hw_memory_text(&sp->mesh.hw, name, sizeof name));
	cli_fprintf(stdout, "  %-34s %s\n", _("sum of everything held"), cli_bytes(tl->sum, b1));
	cli_fprintf(stdout, "  %-34s %s (%+.1f%%)\n", _("peak, default order"),
	    cli_bytes(tl->peak_default, b1), pct(tl->peak_default, tl->sum));
	cli_fprintf(stdout, "  %-34s %s (%+.1f%%, %s)\n", _("peak, optimised order"),
	    cli_bytes(tl->peak_optimised, b1), pct(tl->peak_optimised, tl->sum),
	    tl->exact ? _("least over all orders") : _("greedy schedule"));
	cli_fprintf(stdout, "  %-34s %s\n", _("peak at"),
	    sl_task_name(sp, &tl->task[tl->order[tl->peak_pos]], name, sizeof name));
	cli_fprintf(stdout, "  %-34s %s, %s %s, %s %s\n", _("caching allocator"),
	    cli_bytes(tl->alloc_peak, b1), _("reserved"), cli_bytes(tl->reserved_peak, b2),
	    _("fragmentation"), cli_bytes(tl->reserved_peak - tl->alloc_peak, b3));
	printf(_("at the peak, by category:"));
	for (int c = 0; c < SL_CAT_COUNT; c++)
		printf(" %s %s%s", sl_mem_cat_name(c), cli_bytes(tl->live[tl->peak_pos][c], b1),
		    c + 1 < SL_CAT_COUNT ? "," : "\n");
	n = sl_timeline_alive(tl, tl->peak_pos, idx);
	printf(_("largest alive at the peak:\n"));
	for (int i = 0; i < n && i < 8; i++)
		printf("  %12s  %-12s %s\n", cli_bytes(tl->buf[idx[i]].bytes, b1),
		    sl_buf_kind_name(tl->buf[idx[i]].kind), tl->buf[idx[i]].name);
	free(idx);
}

/*
 * --stage N of a pipeline plan (--plan FILE from `plan --json`): the plan's
 * pipeline evaluated again as it was made, and the stage's device followed
 * over one micro-batch's step with what it holds beyond it.
 */
static int
timeline_stage(cli_opts *o, const sl_plan_file *pf, sl_error *err)
{
	cli_plan_model pm;
	sl_hybrid_opts ho;
	sl_topo topo;
	sl_pipe_config cfg;
	sl_pipeline pl;
	sl_stage_timeline st;
	int rc;

	if (o->n_args == 0 && pf->model_source != NULL) {
		static char *arg[1];
		arg[0] = pf->model_source;
		o->args = arg;
		o->n_args = 1;
	}
	if (o->n_args != 1)
		return sl_error_set(err, SL_EINPUT, o->plan, 0, 0, "%s",
		    _("a pipeline plan that does not name its model: give it, as in "
		    "shardlab timeline MODEL --plan FILE --stage N"));
	if (o->stage >= pf->n_stages)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("--stage %d: the plan has %d stages (0 to %d)"), o->stage,
		    pf->n_stages, pf->n_stages - 1);
	if ((rc = cli_hybrid_opts(o, &pm, &ho, &topo, err)) != SL_OK)
		return rc;
	ho.schedule = pf->schedule;
	ho.global_batch = sl_mul_sat(pf->graph_batch, pf->micro_batches);
	ho.offload_optimizer = pf->offload_optimizer;
	cfg = (sl_pipe_config){ .pp = pf->pp, .virt = pf->virt,
	    .outer = pf->has_setup ? pf->outer : pf->n_axes == 2 ? pf->shape[0] : 1,
	    .inner = pf->has_setup ? pf->inner : pf->shape[pf->n_axes == 2 ? 1 : 0],
	    .dp_replicate = pf->has_setup ? pf->dp_replicate : 1,
	    .graph_batch = pf->graph_batch, .micro_batches = pf->micro_batches,
	    .layers = pf->stage_layers, .recompute = pf->stage_recompute };
	if ((rc = sl_pipeline_eval(&ho, &cfg, &pl, err)) != SL_OK)
		return rc;
	if ((rc = sl_pipeline_timeline(&ho, &pl, o->stage, o->device, true, &st,
	    err)) != SL_OK) {
		sl_pipeline_free(&pl);
		return rc;
	}
	if (o->trace != NULL)
		rc = sl_timeline_write_trace(st.space, &st.tl, o->trace, err);
	if (rc == SL_OK && !o->quiet && !(o->trace != NULL &&
	    strcmp(o->trace, "-") == 0)) {
		const sl_pipe_stage *s = &pl.stage[o->stage];
		const sl_pipe_dev *dv = &pl.dev[s->device];
		char mn[256], b1[32], b2[32], b3[32];
		printf(_("model %s: stage %d of %d (layers %d-%d), pipeline device %d, "
		    "%s\n"), cli_model_str(st.g, mn, sizeof mn), o->stage, pl.n_stages,
		    s->first_layer, s->first_layer + s->n_layers - 1, s->device,
		    sl_schedule_name(pl.schedule));
		printf(_("one micro-batch's step; held through it: %s of the "
		    "other micro-batches in flight, %s of the device's other "
		    "chunks; the plan counts %s for the device\n"),
		    cli_bytes(st.in_flight, b1), cli_bytes(st.other_chunks, b2),
		    cli_bytes(dv->mem, b3));
		print_timeline(st.space, &st.tl);
		if (o->trace != NULL)
			printf(_("trace written to %s\n"), o->trace);
	}
	sl_stage_timeline_free(&st);
	sl_pipeline_free(&pl);
	return rc;
}

static int
cmd_timeline(int argc, char **argv)
{
	cli_opts o;
	cli_session s;
	sl_timeline tl;
	sl_plan_file pf;
	sl_error err;
	int *choice = NULL, rc;

	sl_error_clear(&err);
	memset(&s, 0, sizeof s);
	memset(&pf, 0, sizeof pf);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);
	/* a plan reopens as it was made: its mesh, hardware and recipe; a
	 * pipeline plan's stage with --stage */
	if (o.stage >= 0 && o.plan == NULL) {
		sl_error_set(&err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("--stage follows a stage of a pipeline plan: give the plan "
		    "with --plan FILE (shardlab plan --json FILE)"));
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if (o.plan != NULL && ((rc = sl_plan_read(o.plan, &pf, &err)) != SL_OK ||
	    (o.stage < 0 && (rc = sl_plan_whole(&pf, &err)) != SL_OK) ||
	    (rc = cli_plan_apply(&o, &pf, &err)) != SL_OK)) {
		sl_plan_file_free(&pf);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if (o.stage >= 0) {
		if (pf.n_stages == 0)
			rc = sl_error_set(&err, SL_EINPUT, o.plan, 0, 0, "%s",
			    _("--stage: this plan has no stages (a whole-model plan: "
			    "leave --stage out)"));
		else
			rc = timeline_stage(&o, &pf, &err);
		sl_plan_file_free(&pf);
		cli_opts_free(&o);
		return rc == SL_OK ? SL_OK : cli_report(&err);
	}
	if ((rc = cli_open(&o, false, &s, &err)) != SL_OK) {
		cli_close(&s);
		sl_plan_file_free(&pf);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if (s.is_iopddl) {
		rc = sl_error_set(&err, SL_EINPUT, s.source, 0, 0,
		    _("an IOPDDL problem has no training step: timeline needs a model"));
		goto out;
	}
	choice = sl_xmalloc(s.g->n_ops * sizeof *choice);
	if ((rc = timeline_choice(&o, o.plan != NULL ? &pf : NULL, &s, choice,
	    &err)) != SL_OK)
		goto out;
	if ((rc = sl_timeline_build(s.space, choice, o.device, true, &tl, &err)) != SL_OK)
		goto out;
	if (o.trace != NULL)
		rc = sl_timeline_write_trace(s.space, &tl, o.trace, &err);
	if (rc == SL_OK && !o.quiet && !(o.trace != NULL && strcmp(o.trace, "-") == 0)) {
		char mn[256], nd[64];
		snprintf(nd, sizeof nd, ngettext("%d device", "%d devices",
		    s.mesh.n_devices), s.mesh.n_devices);
		printf(_("model %s: %d operators on %s\n"),
		    cli_model_str(s.g, mn, sizeof mn), s.g->n_ops, nd);
		print_timeline(s.space, &tl);
		if (o.trace != NULL)
			printf(_("trace written to %s\n"), sl_esc(o.trace));
	}
	sl_timeline_free(&tl);
out:
	free(choice);
	cli_close(&s);
	sl_plan_file_free(&pf);
	cli_opts_free(&o);
	return rc == SL_OK ? SL_OK : cli_report(&err);
}

const struct cli_cmd cli_cmd_timeline = {
	.name = "timeline",
	.bit = CLI_C_TIMELINE,
	.usage = N_("timeline MODEL [OPTIONS] [--plan FILE [--stage N]] [--device N] [--trace FILE]"),
	.help = N_("memory over one training step: the peak, the order that lowers it, a trace"),
	.run = cmd_timeline,
};
