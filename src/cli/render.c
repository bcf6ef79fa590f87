/*
 * render.c: `shardlab render MODEL [OPTIONS] -o FILE.dot|svg|png|pdf
 * [--around NAME | --layer N] [--depth N] [--all-strategies]`: the
 * strategy graph of the solved plan (the whole model; or the operator NAME,
 * or every operator of layer N, with the operators within N edges of them),
 * built by the same Graphviz builder the explorer draws with (graphviz.c):
 * each operator with its chosen strategy and the nearest alternatives (all
 * of them with --all-strategies), each edge labelled with the resharding
 * buffer and time of the chosen pair.  The drawing is made in
 * memory first; only then is the file created, and written atomically.
 */
#include "graphviz.h"

#include <stdlib.h>
#include <strings.h>

/* The formats render writes: Graphviz's names, which are the files'
 * extensions too. */
static const char *const render_formats[] = { "dot", "svg", "png", "pdf" };

/* The format of path's extension, or NULL when it names none of them. */
static const char *
render_format_of(const char *path)
{
	const char *dot = path != NULL ? strrchr(path, '.') : NULL;

	if (dot == NULL || strchr(dot, '/') != NULL)
		return NULL;
	for (size_t i = 0; i < SL_ARRAY_LEN(render_formats); i++)
		if (strcasecmp(dot + 1, render_formats[i]) == 0)
			return render_formats[i];
	if (strcasecmp(dot + 1, "gv") == 0)
		return "dot";
	return NULL;
}

/*
 * The format to write: --format when given, else -o's extension; standard
 * output is dot unless --format says.  A file whose extension names another
 * format than --format, or none when --format is not given, is refused: a
 * picture is never written under a name that says it is something else.
 */
static int
render_format(const cli_opts *o, const char **format, sl_error *err)
{
	const char *by_name = render_format_of(o->output);
	bool to_file = o->output != NULL && strcmp(o->output, "-") != 0;

	*format = NULL;
	if (o->format != NULL) {
		for (size_t i = 0; i < SL_ARRAY_LEN(render_formats); i++)
			if (strcmp(o->format, render_formats[i]) == 0)
				*format = render_formats[i];
		if (*format == NULL)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("--format: expected dot, svg, png or pdf, got '%s'"),
			    sl_esc(o->format));
		if (to_file && by_name != NULL && strcmp(by_name, *format) != 0)
			return sl_error_set(err, SL_EINPUT, o->output, 0, 0,
			    _("the name says %s but --format says %s: choose one"),
			    by_name, *format);
		return SL_OK;
	}
	if (!to_file) {
		*format = "dot";
		return SL_OK;
	}
	if (by_name == NULL)
		return sl_error_set(err, SL_EINPUT, o->output, 0, 0, "%s",
		    _("cannot tell the format from the name: end it in .dot, .svg, "
		    ".png or .pdf, or give --format"));
	*format = by_name;
	return SL_OK;
}

static int
cmd_render(int argc, char **argv)
{
	cli_opts o;
	cli_session s;
	sl_error err;
	sl_solution sol;
	sl_solve_opts so;
	sl_atomic a;
	struct Agraph_s *g;
	const char *format, *out;
	int rc, *seeds = NULL, n_seeds = 0, depth;

	memset(&o, 0, sizeof o);
	memset(&s, 0, sizeof s);
	sl_error_clear(&err);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);
	out = o.output != NULL ? o.output : "-";
	if (render_format(&o, &format, &err) != SL_OK) {
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if (o.n_args < 1) {
		sl_error_set(&err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("usage: shardlab render MODEL [OPTIONS] -o FILE.dot|svg|png|pdf [--around NAME | --layer N] [--depth N] [--all-strategies]"));
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
	if (o.op != NULL && o.layer >= 0) {
		sl_error_set(&err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("--around and --layer each choose a part: give one of them"));
		goto fail;
	}
	if (o.depth >= 0 && o.op == NULL && o.layer < 0) {
		sl_error_set(&err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("--depth needs --around NAME or --layer N"));
		goto fail;
	}
	seeds = sl_xmalloc((s.g->n_ops + 1) * sizeof(int));
	if (o.op != NULL) {
		if ((seeds[0] = sl_graph_find_op(s.g, o.op)) < 0) {
			sl_error_set(&err, SL_EINPUT, NULL, 0, 0,
			    _("unknown operator '%s'"), o.op);
			goto fail;
		}
		n_seeds = 1;
	} else if (o.layer >= 0) {
		if (o.layer >= s.g->n_layers) {
			sl_error_set(&err, SL_EINPUT, NULL, 0, 0,
			    ngettext("--layer %d: the model has %d layer (0 .. %d)",
			    "--layer %d: the model has %d layers (0 .. %d)",
			    s.g->n_layers), o.layer, s.g->n_layers,
			    s.g->n_layers - 1);
			goto fail;
		}
		for (n_seeds = 0; n_seeds < s.g->layers[o.layer].n_ops; n_seeds++)
			seeds[n_seeds] = s.g->layers[o.layer].first_op + n_seeds;
	}
	/* around an operator its neighbours by default, a layer alone */
	depth = o.depth >= 0 ? o.depth : o.op != NULL ? 1 : 0;
	memset(&so, 0, sizeof so);
	so.time_limit = o.time_limit;
	sl_solution_init(&sol, s.prob->n);
	rc = sl_space_solve(s.space, s.prob, o.alpha, NULL, o.solver, &so, &sol,
	    &err);
	if (rc == SL_OK && sol.status != SL_SOLVE_OPTIMAL &&
	    sol.status != SL_SOLVE_FEASIBLE) {
		rc = cli_no_plan(&sol, o.time_limit);
		sl_solution_free(&sol);
		cli_close(&s);
		cli_opts_free(&o);
		return rc;
	}
	if (rc != SL_OK) {
		sl_solution_free(&sol);
		goto fail;
	}
	/* top to bottom: an operator's neighbours above and below it, so the
	 * picture is as wide as a node, not as the chain */
	g = cli_sgraph_build(s.space, sol.choice, seeds, n_seeds, depth,
	    CLI_SG_RENDER, false, o.all_strategies ? -1 : CLI_SG_ALTS);
	rc = sl_atomic_open(&a, out, &err);
	if (rc == SL_OK) {
		rc = cli_sgraph_render(g, format, a.fp, &err);
		if (rc == SL_OK)
			rc = sl_atomic_commit(&a, &err);
		else
			sl_atomic_abort(&a);
	}
	cli_sgraph_free(g);
	sl_solution_free(&sol);
	if (rc != SL_OK && err.file[0] == '\0')
		/* a Graphviz failure is about the drawing of this file */
		snprintf(err.file, sizeof err.file, "%s", out);
	if (rc != SL_OK)
		goto fail;
	free(seeds);
	cli_close(&s);
	cli_opts_free(&o);
	return SL_OK;
fail:
	free(seeds);
	cli_close(&s);
	cli_opts_free(&o);
	return cli_report(&err);
}

const struct cli_cmd cli_cmd_render = {
	.name = "render",
	.bit = CLI_C_RENDER,
	.usage = N_("render MODEL [OPTIONS] -o FILE.dot|svg|png|pdf [--around NAME | --layer N] [--depth N] [--all-strategies]"),
	.help = N_("draw the strategy graph of the chosen plan with Graphviz"),
	.run = cmd_render,
};
