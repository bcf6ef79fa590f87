/*
 * cli_render.c: `shardlab render MODEL [OPTIONS] --format dot|svg -o FILE
 * [--op NAME]`: the strategy graph of the solved plan (the whole model, or
 * the operator NAME and its neighbours), built by the same Graphviz builder
 * the explorer draws with (ui/ui_graph.c).  The file is written atomically.
 */
#include "cli.h"
#include "ui.h"

#include <stdlib.h>
#include <strings.h>

static const char *
render_format_from_path(const char *path)
{
	const char *dot = path != NULL ? strrchr(path, '.') : NULL;

	if (dot != NULL && strcasecmp(dot, ".svg") == 0)
		return "svg";
	return "dot";
}

int
cli_cmd_render(int argc, char **argv)
{
	cli_opts o;
	cli_session s;
	sl_error err;
	sl_solution sol;
	sl_solve_opts so;
	sl_atomic a;
	struct Agraph_s *g;
	const char *format, *out;
	int rc, center = -1;

	memset(&o, 0, sizeof o);
	memset(&s, 0, sizeof s);
	sl_error_clear(&err);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);
	out = o.output != NULL ? o.output : "-";
	format = o.format != NULL ? o.format : render_format_from_path(o.output);
	if (strcmp(format, "dot") != 0 && strcmp(format, "svg") != 0) {
		sl_error_set(&err, SL_EINPUT, NULL, 0, 0,
		    _("unknown format '%s' (expected dot or svg)"), format);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if (o.n_args < 1) {
		sl_error_set(&err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("usage: shardlab render MODEL [OPTIONS] --format dot|svg -o FILE [--op NAME]"));
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if ((rc = cli_open(&o, false, &s, &err)) != SL_OK) {
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if (s.is_iopddl || s.space == NULL) {
		sl_error_set(&err, SL_EINPUT, s.source, 0, 0, "%s",
		    _("render needs a model, not an IOPDDL problem"));
		goto fail;
	}
	if (s.prob == NULL) {
		sl_error_set(&err, SL_EINFEASIBLE, NULL, 0, 0, "%s",
		    _("the pins leave no feasible plan"));
		goto fail;
	}
	if (o.op != NULL && (center = sl_graph_find_op(s.g, o.op)) < 0) {
		sl_error_set(&err, SL_EINPUT, NULL, 0, 0,
		    _("unknown operator '%s'"), o.op);
		goto fail;
	}
	memset(&so, 0, sizeof so);
	so.time_limit = o.time_limit;
	sl_solution_init(&sol, s.prob->n);
	rc = sl_solve(s.prob, o.solver, &so, &sol, &err);
	if (rc == SL_OK && sol.status != SL_SOLVE_OPTIMAL &&
	    sol.status != SL_SOLVE_FEASIBLE)
		rc = sl_error_set(&err, SL_EINFEASIBLE, NULL, 0, 0,
		    _("no plan: solver says %s"), sl_solve_status_name(sol.status));
	if (rc != SL_OK) {
		sl_solution_free(&sol);
		goto fail;
	}
	g = ui_sgraph_build(s.space, sol.choice, center, 1, UI_SG_RENDER, true);
	rc = sl_atomic_open(&a, out, &err);
	if (rc == SL_OK) {
		rc = ui_sgraph_render(g, format, a.fp, &err);
		if (rc == SL_OK)
			rc = sl_atomic_commit(&a, &err);
		else
			sl_atomic_abort(&a);
	}
	ui_sgraph_free(g);
	sl_solution_free(&sol);
	if (rc != SL_OK)
		goto fail;
	cli_close(&s);
	cli_opts_free(&o);
	return SL_OK;
fail:
	cli_close(&s);
	cli_opts_free(&o);
	return cli_report(&err);
}
