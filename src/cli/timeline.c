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
	/* a plan reopens as it was made: its mesh, hardware and recipe */
	if (o.plan != NULL && ((rc = sl_plan_read(o.plan, &pf, &err)) != SL_OK ||
	    (rc = sl_plan_whole(&pf, &err)) != SL_OK ||
	    (rc = cli_plan_apply(&o, &pf, &err)) != SL_OK)) {
		sl_plan_file_free(&pf);
		cli_opts_free(&o);
		return cli_report(&err);
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
			printf(_("trace written to %s\n"), o.trace);
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
	.usage = N_("timeline MODEL [OPTIONS] [--plan FILE] [--device N] [--trace FILE]"),
	.help = N_("memory over one training step: the peak, the order that lowers it, a trace"),
	.run = cmd_timeline,
};
