/*
 * sweep.c: `shardlab sweep`, every optimal plan over alpha, as the
 * memory/communication Pareto table or JSON.
 */
#include "cli.h"
#include "json.h"

#include <jansson.h>

/* The frontier as a document (man shardlab-sweep.1, "JSON"). */
static json_t *
sweep_json(const cli_session *s, const sl_frontier *f)
{
	json_t *points = json_array();

	for (int i = 0; i < f->n; i++) {
		json_t *st = json_object();

		for (int v = 0; v < s->g->n_ops; v++)
			json_object_set_new(st, s->g->ops[v].name, json_string(
			    s->space->ops[v].strat[f->pt[i].choice[v]].name));
		json_array_append_new(points, json_pack(
		    "{s:o, s:o, s:I, s:I, s:I, s:o, s:o, s:o}",
		    "alpha_lo", sl_json_real(f->pt[i].alpha_lo),
		    "alpha_hi", f->pt[i].alpha_hi < 0 ? json_null() :
		    sl_json_real(f->pt[i].alpha_hi),
		    "memory_bytes", (json_int_t)f->pt[i].mem,
		    "comm_time_ns", (json_int_t)f->pt[i].comm_ns,
		    "step_time_ns", (json_int_t)f->pt[i].step_ns,
		    "tokens_per_s", sl_json_real(f->pt[i].tokens_per_s),
		    "mfu", sl_json_real(f->pt[i].mfu), "strategies", st));
	}
	return json_pack("{s:s, s:i, s:s, s:o}", "format", "shardlab-sweep",
	    "version", 1, "model", s->g->name, "points", points);
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
	if ((rc = sl_sweep(s.space, &o.cs, o.solver, NULL, &f, &err)) != SL_OK) {
		rc = cli_report(&err);
		goto out;
	}
	if (o.json != NULL) {
		if ((rc = sl_json_write(sweep_json(&s, &f), o.json,
		    _("cannot write the sweep"), &err)) != SL_OK) {
			rc = cli_report(&err);
			goto out;
		}
		if (strcmp(o.json, "-") == 0)
			goto out;
	}
	{
		char mn[256];
		printf(_("alpha frontier of %s on "), cli_model_str(s.g, mn, sizeof mn));
	}
	cli_print_mesh(&s.mesh);
	{
		char cap[128];
		printf(ngettext(": %d distinct plan\n", ": %d distinct plans\n",
		    f.n), f.n);
		printf(_("memory per device: %s\n\n"),
		    sl_hw_memory_text(&s.mesh.hw, cap, sizeof cap));
	}
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
		    cli_bytes(f.pt[i].mem, b1), cli_ns(f.pt[i].comm_ns, b2),
		    cli_ns(f.pt[i].step_ns, b3),
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

const struct cli_cmd cli_cmd_sweep = {
	.name = "sweep",
	.bit = CLI_C_SWEEP,
	.usage = N_("sweep MODEL [OPTIONS] [--json FILE|-]"),
	.help = N_("every optimal plan over alpha: the memory/communication Pareto table"),
	.run = cmd_sweep,
};
