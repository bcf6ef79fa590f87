/*
 * session.c: what every subcommand does around its work: open the model
 * named on the command line (or an IOPDDL problem) into a strategy space and
 * the problem for the options' alpha and pins, and report errors as
 * "shardlab: file:line:col: message".  Exit statuses: 0 success, 1 no
 * feasible plan, 2 bad usage or input, 3 internal or solver failure.
 */
#include "cli.h"

#include <unistd.h>

int
cli_report(const sl_error *err)
{
	char buf[2048];
	sl_error e = *err;

	cli_error_words(err, e.msg, sizeof e.msg);
	/* names in messages come from files and arguments: escape them */
	fprintf(stderr, "shardlab: %s\n", sl_esc(sl_error_format(&e, buf, sizeof buf)));
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
	if (o->hw_figures != NULL)
		hw = *o->hw_figures;
	else if ((rc = sl_hw_load(o->hw, &hw, err)) != SL_OK)
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
		    ngettext("--global-batch %lld is not a multiple of the %lld samples "
		    "of one micro-step (micro-batch %lld x %d device)",
		    "--global-batch %lld is not a multiple of the %lld samples "
		    "of one micro-step (micro-batch %lld x %d devices)",
		    s->mesh.n_devices),
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
		if ((rc = cli_fit(o, s, cli_mem_limit(o, s, true), true, &s->fit,
		    err)) != SL_OK)
			return rc;
		s->fitted = true;
		s->recompute_auto = true;
		s->recompute.n_layers = s->fit.n_layers;
		s->recompute.n_recomputed = s->fit.n_recomputed;
		s->recompute.fits = s->fit.fits;
		s->recompute.max_total = s->fit.mem;
	}
	return SL_OK;
}

int64_t
cli_plan_peak(const sl_space *s, const int *choice, int dev)
{
	sl_timeline tl;
	int64_t peak;

	if (sl_timeline_build(s, choice, dev, false, &tl, NULL) != SL_OK)
		return -1;
	peak = tl.peak;
	sl_timeline_free(&tl);
	return peak;
}

int64_t
cli_mem_limit(const cli_opts *o, const cli_session *s, bool device)
{
	if (o->mem_limit > 0)
		return o->mem_limit;
	return device ? s->mesh.hw.memory_bytes : -1;
}

int
cli_fit(const cli_opts *o, cli_session *s, int64_t limit, bool recompute,
    sl_fit *f, sl_error *err)
{
	sl_solve_opts sopt = { .time_limit = o->time_limit, .threads = o->threads };
	sl_fit_opts fo = { .alpha = o->alpha, .limit = limit, .fold = SL_FOLD_PEAK,
	    .solver = o->solver, .solve = &sopt, .recompute = recompute };

	return sl_fit_plan(s->space, s->prob, &fo, f, err);
}

void
cli_close(cli_session *s)
{
	sl_fit_free(&s->fit);
	sl_problem_free(s->prob);
	sl_space_free(s->space);
	sl_graph_free(s->g);
	memset(s, 0, sizeof *s);
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
		if (sol->solver == SL_SOLVER_ANYTIME)
			/* the search had its say: a plan it found took an
			 * impossible pair, or it found none in the time */
			fprintf(stderr, _("shardlab: the time limit of %g s ran out before the anytime search found a plan without an impossible pair (raise --time-limit)\n"),
			    time_limit > 0 ? time_limit :
			    SL_ANYTIME_DEFAULT_TIME_LIMIT);
		else
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
