/*
 * solve.c: `shardlab solve`, the plan with the least memory traded against
 * communication at the user's alpha (or an IOPDDL problem's least cost):
 * the plan by layer and by device, the step it predicts, and its file.
 */
#include "cli.h"

#include <math.h>
#include <time.h>

/* "recipe: ...", then the batch and sequence a step trains on. */
static void
print_recipe(const sl_space *sp)
{
	const sl_recipe *r = &sp->opts.recipe;
	int64_t seq, b = sl_graph_batch(sp->g, &seq), acc = sl_recipe_accum_steps(r, b);
	char buf[256];

	char ms[64], md[64], ma[64];

	if (acc < 1)
		acc = 1;
	printf(_("recipe: %s\n"), sl_recipe_describe(r, buf, sizeof buf));
	snprintf(ms, sizeof ms, ngettext("%lld sample per micro-step",
	    "%lld samples per micro-step", b), (long long)b);
	snprintf(md, sizeof md, ngettext("micro-batch %lld x %d device",
	    "micro-batch %lld x %d devices", sp->mesh.n_devices),
	    (long long)r->micro_batch, sp->mesh.n_devices);
	snprintf(ma, sizeof ma, ngettext("%lld accumulation step",
	    "%lld accumulation steps", acc), (long long)acc);
	printf(_("batch: %s (%s), global batch %lld = %s; sequence %lld\n"),
	    ms, md, (long long)(b * acc), ma, (long long)seq);
}

static void
print_recompute_auto(const sl_recompute_choice *c, int64_t cap)
{
	char b1[32], b2[32];

	if (c->fits)
		printf(ngettext("recompute auto: %d of %d layer recomputed, the fewest "
		    "for %s per device to fit in %s\n", "recompute auto: %d of %d layers "
		    "recomputed, the fewest for %s per device to fit in %s\n",
		    c->n_layers), c->n_recomputed, c->n_layers,
		    cli_bytes(c->max_total, b1), cli_bytes(cap, b2));
	else
		printf(ngettext("recompute auto: even with its %d layer recomputed the "
		    "plan needs %s per device, over %s\n", "recompute auto: even with all "
		    "%d layers recomputed the plan needs %s per device, over %s\n",
		    c->n_layers), c->n_layers, cli_bytes(c->max_total, b1),
		    cli_bytes(cap, b2));
}

static void
print_solution_line(const sl_solution *sol)
{
	printf(_("solver: %s, %s, %.3f ms"), sl_solver_name(sol->solver),
	    sl_solve_status_name(sol->status), sol->time_ms);
	if (sol->confirmed)
		printf(_(" (confirmed by a second exact solver)"));
	if (sol->note[0])
		printf(" [%s]", sol->note);
	printf("\n");
}

/* 1.65 B, 336.2 M, 4096 */
static const char *
count_str(int64_t n, char *buf)
{
	if (n >= 1000000000)
		snprintf(buf, 32, "%.2f B", (double)n / 1e9);
	else if (n >= 1000000)
		snprintf(buf, 32, "%.2f M", (double)n / 1e6);
	else
		snprintf(buf, 32, "%lld", (long long)n);
	return buf;
}

/* Two layers are alike in a plan when they choose the same strategies. */
static bool
layers_alike(const sl_graph *g, const int *choice, int a, int b)
{
	const sl_layer *la = &g->layers[a], *lb = &g->layers[b];

	if (la->n_ops != lb->n_ops)
		return false;
	for (int i = 0; i < la->n_ops; i++)
		if (choice[la->first_op + i] != choice[lb->first_op + i] ||
		    g->ops[la->first_op + i].kind != g->ops[lb->first_op + i].kind)
			return false;
	return true;
}

/* The kind column: as wide as the longest kind name (cross_entropy). */
#define CLI_KIND_W 13

static void
print_op_row(const sl_space *s, const sl_eval *ev, const int *choice, int v,
    const char *indent, const char *label)
{
	char b1[32], b2[32];

	printf("%s%-*s %-*s %-16s %12s %12s\n", indent,
	    24 - (int)strlen(indent), sl_esc(label), CLI_KIND_W,
	    sl_op_kind_name(s->g->ops[v].kind), sl_esc(s->ops[v].strat[choice[v]].name),
	    cli_bytes(sl_mem_total(&ev->ops[v].mem), b1),
	    cli_ns(sl_comm_total(&ev->ops[v].comm), b2));
}

static void
mesh_coords_str(const sl_mesh *m, int d, char *buf, size_t len)
{
	int c[SL_MAX_AXES] = { 0 };

	sl_mesh_coords(m, d, c);
	if (m->n_axes == 1)
		snprintf(buf, len, "%d", c[0]);
	else
		snprintf(buf, len, "%d,%d", c[0], c[1]);
}

/*
 * The plan by operator and by device.  A device's memory is shown by
 * category as the evaluator sums it; whether it fits is its timeline's
 * peak against the usable memory (peak: of device 0, which holds the
 * largest shard of everything; over: it does not fit).
 */
static void
print_plan(const sl_space *s, const sl_eval *ev, const int *choice,
    int64_t peak, bool over, bool allow_over)
{
	const sl_graph *g = s->g;
	char b[6][32];

	cli_fprintf(stdout, "\n%-24s %-13s %-16s %12s %12s\n", _("operator"), _("kind"),
	    _("strategy"), _("memory/dev"), _("comm/step"));
	for (int v = 0; v < g->n_ops;) {
		int l = g->ops[v].layer;
		if (l < 0) {
			print_op_row(s, ev, choice, v, "", g->ops[v].name);
			v++;
			continue;
		}
		/* a run of layers that choose alike is printed once */
		int last = l;
		while (last + 1 < g->n_layers && layers_alike(g, choice, l, last + 1) &&
		    g->layers[last + 1].first_op == g->layers[last].first_op + g->layers[last].n_ops)
			last++;
		if (last > l)
			printf("%s .. %s  (%d %s)\n", sl_esc(g->layers[l].name), sl_esc(g->layers[last].name),
			    last - l + 1, _("layers choose alike; figures per layer"));
		else
			printf("%s\n", sl_esc(g->layers[l].name));
		for (int i = 0; i < g->layers[l].n_ops; i++) {
			int u = g->layers[l].first_op + i;
			const char *nm = g->ops[u].name;
			const char *dot = strchr(nm, '.');
			print_op_row(s, ev, choice, u, "  ",
			    (dot && strncmp(nm, g->layers[l].name, dot - nm) == 0) ? dot + 1 : nm);
		}
		v = g->layers[last].first_op + g->layers[last].n_ops;
	}

	/* devices that hold the same, in a row of consecutive devices (as the
	 * explorer shows them) */
	cli_fprintf(stdout, "\n%-9s %-11s %11s %11s %11s %11s %11s %11s\n", _("device"),
	    _("coords"), _("parameters"), _("gradients"), _("optimizer"),
	    _("activations"), _("buffers"), _("total"));
	for (int d = 0, e; d < ev->n_devices; d = e) {
		const sl_mem *m = &ev->dev[d];
		char ds[24], cs[32], c0[12], c1[12];
		int64_t t = sl_mem_total(m);
		for (e = d + 1; e < ev->n_devices &&
		    memcmp(&ev->dev[e], m, sizeof *m) == 0; e++)
			;
		mesh_coords_str(&s->mesh, d, c0, sizeof c0);
		mesh_coords_str(&s->mesh, e - 1, c1, sizeof c1);
		if (e - d > 1) {
			snprintf(ds, sizeof ds, "%d-%d", d, e - 1);
			snprintf(cs, sizeof cs, "%s-%s", c0, c1);
		} else {
			snprintf(ds, sizeof ds, "%d", d);
			snprintf(cs, sizeof cs, "%s", c0);
		}
		printf("%-9s %-11s %11s %11s %11s %11s %11s %11s%s\n", ds, cs,
		    cli_bytes(m->params, b[0]), cli_bytes(m->grads, b[1]), cli_bytes(m->optim, b[2]),
		    cli_bytes(m->acts, b[3]), cli_bytes(m->buffers, b[4]), cli_bytes(t, b[5]),
		    (s->mesh.hw.memory_bytes > 0 &&
		    cli_plan_peak(s, choice, d) > s->mesh.hw.memory_bytes) ?
		    _("  over capacity") : "");
	}
	{
		char cap[128];
		printf("\n%s %s, %s %s (%s)\n", _("max memory per device:"),
		    cli_bytes(ev->max_total, b[0]), _("peak"), cli_bytes(peak, b[1]),
		    sl_hw_memory_text(&s->mesh.hw, cap, sizeof cap));
	}
	printf("%s %s (%lld bytes)\n", _("redundant bytes (device 0):"),
	    cli_bytes(ev->redundant, b[0]), (long long)ev->redundant);
	printf("%s %s:", _("communication per step:"), cli_ns(ev->comm_ns, b[0]));
	for (int c = 0; c < SL_COLL_COUNT; c++)
		if (ev->comm.ns[c] > 0)
			printf(" %s %s", sl_coll_name(c), cli_ns(ev->comm.ns[c], b[1]));
	printf("\n");
	if (over && !allow_over)
		printf("%s\n", _("step time, throughput and MFU: none, the plan does not fit in a device's memory"));
	else
		cli_print_step(stdout, ev);
}

/* "lower bound: B (gap G%)" when the solver proved one short of optimal. */
static void
print_bound_line(const sl_solution *sol)
{
	if (sol->status != SL_SOLVE_FEASIBLE || sol->bound == INT64_MIN ||
	    sol->bound == INT64_MAX)
		return;
	printf(_("lower bound: %lld (gap %.2f%%)\n"), (long long)sol->bound,
	    sol->objective > 0 ? 100.0 * ((double)sol->objective -
	    (double)sol->bound) / (double)sol->objective : 0.0);
}

/*
 * --time-limit bounds the whole command, reading the problem included (as
 * the contest counts it): the solver gets what reading left, at least a
 * tenth of it.
 */
static int
cmd_solve_iopddl(const cli_opts *o, cli_session *s, const struct timespec *t0)
{
	sl_solve_opts so = { .time_limit = o->time_limit,
	    .threads = o->threads };
	struct timespec now;
	sl_solution sol;
	sl_error err;
	bool to_stdout = o->json != NULL && strcmp(o->json, "-") == 0;
	bool quiet = o->quiet || to_stdout;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (so.time_limit > 0) {
		double used = (double)(now.tv_sec - t0->tv_sec) +
		    (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
		so.time_limit = fmax(o->time_limit - used, o->time_limit / 10);
	}
	sl_error_clear(&err);
	sl_solution_init(&sol, s->prob->n);
	rc = sl_solve(s->prob, o->solver, &so, &sol, &err);
	if (rc != SL_OK) {
		sl_solution_free(&sol);
		return cli_report(&err);
	}
	if (!quiet) {
		printf(_("problem %s: %d nodes, %d edges\n"),
		    sl_esc(s->prob->name ? s->prob->name : "?"), s->prob->n, s->prob->m);
		print_solution_line(&sol);
	}
	if (sol.status == SL_SOLVE_OPTIMAL || sol.status == SL_SOLVE_FEASIBLE) {
		rc = SL_OK;
		if (!quiet) {
			printf(_("objective: %lld\n"), (long long)sol.objective);
			print_bound_line(&sol);
			if (s->prob->usage_limit >= 0)
				printf(_("feasible: %s (peak usage %lld, limit %lld)\n"),
				    sl_problem_feasible(s->prob, sol.choice) ?
				    _("yes") : _("no"),
				    (long long)sl_problem_peak_usage(s->prob,
				    sol.choice), (long long)s->prob->usage_limit);
			printf(_("strategies:"));
			for (int v = 0; v < s->prob->n && v < 64; v++)
				printf(" %d", sol.choice[v]);
			printf("%s\n", s->prob->n > 64 ? " ..." : "");
		}
		if (o->json != NULL &&
		    sl_problem_plan_write(s->prob, &sol, o->json, &err) != SL_OK)
			rc = cli_report(&err);
		else if (o->json != NULL && !quiet)
			printf(_("plan written to %s\n"), sl_esc(o->json));
	} else {
		if (quiet)
			print_solution_line(&sol);
		rc = cli_no_plan(&sol, o->time_limit);
	}
	sl_solution_free(&sol);
	return rc;
}

/* Solves s->prob; SL_OK with a usable solution (the caller's to free), else
 * the exit status, with nothing held. */
static int
solve_problem(const cli_opts *o, cli_session *s, sl_solution *sol)
{
	sl_solve_opts so = { .time_limit = o->time_limit,
	    .threads = o->threads };
	sl_error err;
	int rc;

	sl_error_clear(&err);
	sl_solution_init(sol, s->prob->n);
	rc = sl_space_solve(s->space, s->prob, o->alpha, NULL, o->solver, &so,
	    sol, &err);
	if (rc != SL_OK)
		rc = cli_report(&err);
	else if (sol->status != SL_SOLVE_OPTIMAL && sol->status != SL_SOLVE_FEASIBLE)
		rc = cli_no_plan(sol, o->time_limit);
	/* no usable solution: the caller has none to free */
	if (rc != SL_OK)
		sl_solution_free(sol);
	return rc;
}

/*
 * The plan at the user's alpha needs more than --mem-limit (or recompute
 * auto had to search below the device's memory): take the plan fitted
 * under the limit (sl_fit_plan), or say that none fits: exit status 1.
 */
static int
use_fitted(const cli_opts *o, cli_session *s, const sl_fit *f, sl_solution *sol,
    sl_eval *ev)
{
	sl_error err;
	char b1[32], b2[32];

	if (!f->fits) {
		fprintf(stderr, _("shardlab: no plan fits in --mem-limit %s per device: the least the search found peaks at %s\n"),
		    cli_bytes(o->mem_limit, b1), cli_bytes(f->mem, b2));
		return SL_EINFEASIBLE;
	}
	memcpy(sol->choice, f->sol.choice, s->g->n_ops * sizeof *sol->choice);
	sol->objective = f->sol.objective;
	sol->status = f->exact ? SL_SOLVE_OPTIMAL : SL_SOLVE_FEASIBLE;
	sol->bound = f->bound;
	sol->confirmed = false;
	if (f->exact)
		snprintf(sol->note, sizeof sol->note,
		    _("memory limit: %d solves, exact"), f->solves);
	else
		snprintf(sol->note, sizeof sol->note,
		    _("memory limit: %d solves, the best plan of the memory/objective frontier"),
		    f->solves);
	sl_error_clear(&err);
	sl_eval_free(ev);
	if (sl_evaluate(s->space, sol->choice, o->alpha, ev, &err) != SL_OK)
		return cli_report(&err);
	return SL_OK;
}

/* The plan under --mem-limit when the optimum at alpha needs more. */
static int
fit_mem_limit(const cli_opts *o, cli_session *s, sl_solution *sol, sl_eval *ev)
{
	sl_fit f;
	sl_error err;
	int rc;

	sl_error_clear(&err);
	/* recompute auto fitted already: under --mem-limit, or the device
	 * (then a plan that does not fit is shown as it is, over capacity) */
	if (s->fitted)
		return (s->fit.fits && s->fit.searched) ||
		    (!s->fit.fits && o->mem_limit > 0) ?
		    use_fitted(o, s, &s->fit, sol, ev) : SL_OK;
	if ((rc = cli_fit(o, s, o->mem_limit, false, &f, &err)) != SL_OK)
		return cli_report(&err);
	rc = use_fitted(o, s, &f, sol, ev);
	sl_fit_free(&f);
	return rc;
}

/* The solvers weigh the sum of what a device holds; the step needs the
 * peak of its timeline.  Both, and the gap, on device 0. */
static void
print_peak(const sl_space *sp, const int *choice)
{
	sl_timeline tl;
	char b1[32], b2[32], b3[32], b4[32];

	if (sl_timeline_build(sp, choice, 0, true, &tl, NULL) != SL_OK)
		return;
	printf(_("memory over time on device 0: peak %s (default order %s), sum %s, gap %+.1f%%; reserved by the caching allocator %s\n"),
	    cli_bytes(tl.peak, b1), cli_bytes(tl.peak_default, b2), cli_bytes(tl.sum, b3),
	    tl.sum > 0 ? 100.0 * (double)(tl.peak - tl.sum) / (double)tl.sum : 0.0,
	    cli_bytes(tl.reserved_peak, b4));
	sl_timeline_free(&tl);
}

/*
 * One change of the command line tried when the plan does not fit: the
 * model opened and solved again with t, the plan's memory and step time.
 */
static void
try_change(const cli_opts *t, sl_fit_change *out)
{
	cli_session s;
	sl_solution sol;
	sl_solve_opts so = { .time_limit = t->time_limit, .threads = t->threads };
	sl_eval ev;
	sl_error err;

	sl_error_clear(&err);
	if (cli_open(t, false, &s, &err) != SL_OK || s.prob == NULL) {
		snprintf(out->why, sizeof out->why, "%.255s", err.msg[0] ? err.msg :
		    _("the constraints leave no plan"));
		cli_close(&s);
		return;
	}
	sl_solution_init(&sol, s.prob->n);
	if (sl_space_solve(s.space, s.prob, t->alpha, NULL, t->solver, &so, &sol,
	    &err) != SL_OK || (sol.status != SL_SOLVE_OPTIMAL &&
	    sol.status != SL_SOLVE_FEASIBLE))
		snprintf(out->why, sizeof out->why, "%.255s", err.msg[0] ? err.msg :
		    sl_solve_status_name(sol.status));
	else if (sl_evaluate(s.space, sol.choice, t->alpha, &ev, &err) != SL_OK)
		snprintf(out->why, sizeof out->why, "%.255s", err.msg);
	else {
		/* what must fit: the peak (device 0 holds the most) */
		out->max_mem = cli_plan_peak(s.space, sol.choice, 0);
		out->step_ns = ev.step_ns;
		out->fits = out->max_mem >= 0 && out->max_mem <= s.mesh.hw.memory_bytes;
		sl_eval_free(&ev);
	}
	sl_solution_free(&sol);
	cli_close(&s);
}

/*
 * The plan needs more memory than a device has: single changes of the
 * command line, each solved, ranked as `plan` ranks its own (fitting first,
 * by step time).  The current setting is never among them.
 */
static void
advise_fit(const cli_opts *o, const cli_session *s)
{
	const char *const *hw = sl_bundled_hardware();
	sl_fit_change ch[8];
	cli_opts t;
	int n = 0;
	int64_t best_mem = 0;
	const char *bigger = NULL;

	memset(ch, 0, sizeof ch);
	if (o->recipe.recompute != SL_RECOMP_FULL &&
	    o->recipe.recompute != SL_RECOMP_AUTO) {
		t = *o;
		t.recipe.recompute = SL_RECOMP_AUTO;
		snprintf(ch[n].what, sizeof ch[n].what, "%s",
		    _("--recompute auto (the fewest layers recomputed that fit)"));
		try_change(&t, &ch[n++]);
	}
	if (o->micro_batch > 1) {
		t = *o;
		t.micro_batch = t.recipe.micro_batch = 1;
		snprintf(ch[n].what, sizeof ch[n].what, "--micro-batch 1");
		try_change(&t, &ch[n++]);
	}
	if (o->no_zero) {
		t = *o;
		t.no_zero = false;
		snprintf(ch[n].what, sizeof ch[n].what, "%s",
		    _("without --no-zero (ZeRO-3 sharded states)"));
		try_change(&t, &ch[n++]);
	}
	/* more devices on the outer (data-parallel) axis */
	for (int f = 2; f <= 4 && o->n_axes >= 1; f *= 2) {
		t = *o;
		t.shape[0] = o->shape[0] * f;
		if (t.n_axes == 1)
			snprintf(ch[n].what, sizeof ch[n].what, "--devices %d",
			    t.shape[0]);
		else
			snprintf(ch[n].what, sizeof ch[n].what, "--mesh %dx%d",
			    t.shape[0], t.shape[1]);
		try_change(&t, &ch[n++]);
	}
	/* the bundled card with the least memory above this one's */
	for (size_t i = 0; hw != NULL && hw[i] != NULL; i++) {
		sl_hw h;
		sl_error e;
		sl_error_clear(&e);
		if (sl_hw_load(hw[i], &h, &e) == SL_OK &&
		    h.memory_bytes > s->mesh.hw.memory_bytes &&
		    (bigger == NULL || h.memory_bytes < best_mem)) {
			bigger = hw[i];
			best_mem = h.memory_bytes;
		}
	}
	if (bigger != NULL) {
		t = *o;
		t.hw = bigger;
		snprintf(ch[n].what, sizeof ch[n].what, "--hw %s", bigger);
		try_change(&t, &ch[n++]);
	}
	sl_fit_changes_rank(ch, n);
	cli_print_changes(stdout, ch, n);
	printf("%s\n", _("  (shardlab plan also tries pipeline stages and optimizer states in host memory)"));
}

static int
cmd_solve(int argc, char **argv)
{
	cli_opts o;
	cli_session s;
	sl_solution sol;
	sl_eval ev;
	sl_error err;
	struct timespec t0;
	bool over = false, over_cap = false;
	int64_t peak = 0;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	sl_error_clear(&err);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);
	if ((rc = cli_open(&o, false, &s, &err)) != SL_OK) {
		cli_close(&s);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if (s.is_iopddl) {
		rc = cmd_solve_iopddl(&o, &s, &t0);
		goto out;
	}
	if ((rc = solve_problem(&o, &s, &sol)) != SL_OK)
		goto out;
	if ((rc = sl_evaluate(s.space, sol.choice, o.alpha, &ev, &err)) != SL_OK) {
		sl_solution_free(&sol);
		rc = cli_report(&err);
		goto out;
	}
	if (ev.objective != sol.objective) {
		fprintf(stderr, _("shardlab: internal error: the evaluator scores the plan %lld, the solver %lld\n"),
		    (long long)ev.objective, (long long)sol.objective);
		rc = SL_EINTERNAL;
	}
	/* what must fit is the step's peak (device 0 holds the most) */
	if (rc == SL_OK)
		peak = cli_plan_peak(s.space, sol.choice, 0);
	if (rc == SL_OK && ((o.mem_limit > 0 && peak > o.mem_limit) ||
	    (s.fitted && s.fit.searched))) {
		rc = fit_mem_limit(&o, &s, &sol, &ev);
		peak = cli_plan_peak(s.space, sol.choice, 0);
	}
	/* over the device's memory: no plan, unless asked for anyway */
	over_cap = s.mesh.hw.memory_bytes > 0 && peak > s.mesh.hw.memory_bytes;
	over = rc == SL_OK && over_cap && !o.allow_over_capacity;
	if (rc == SL_OK && !over && o.export_problem != NULL)
		rc = sl_iopddl_save(s.prob, o.export_problem, &err) == SL_OK ? SL_OK :
		    cli_report(&err);
	if (rc == SL_OK && !over && o.json != NULL) {
		sl_plan_meta meta = { .model_source = s.source, .alpha = o.alpha,
		    .sol = &sol, .cs = &o.cs, .micro_batch = o.micro_batch,
		    .hw_source = o.hw };
		if (sl_plan_write(s.space, sol.choice, &ev, &meta, o.json, &err) != SL_OK)
			rc = cli_report(&err);
	}
	if (rc == SL_OK && !(o.json != NULL && strcmp(o.json, "-") == 0) && !o.quiet) {
		char pc[32];
		char mn[256];
		printf(_("model %s: %d operators, %s parameters; mesh "),
		    cli_model_str(s.g, mn, sizeof mn), s.g->n_ops,
		    count_str(sl_graph_param_count(s.g), pc));
		cli_print_mesh(&s.mesh);
		printf(_(" on %s; alpha %g\n"), sl_esc(s.mesh.hw.name), o.alpha);
		print_recipe(s.space);
		if (s.recompute_auto)
			print_recompute_auto(&s.recompute, o.mem_limit > 0 ? o.mem_limit :
			    s.mesh.hw.memory_bytes);
		print_solution_line(&sol);
		printf(_("objective: %lld\n"), (long long)sol.objective);
		print_plan(s.space, &ev, sol.choice, peak, over_cap,
		    o.allow_over_capacity);
		print_peak(s.space, sol.choice);
		if (o.json != NULL && !over)
			printf(_("plan written to %s\n"), sl_esc(o.json));
	}
	if (over) {
		char b1[32], cap[128];
		fprintf(stderr, _("shardlab: the plan needs %s per device; a device of %s (%s) has %s: %s (--allow-over-capacity writes it anyway)\n"),
		    cli_bytes(peak, b1), sl_esc(s.mesh.hw.name),
		    sl_esc(s.mesh.hw.device),
		    sl_hw_memory_text(&s.mesh.hw, cap, sizeof cap),
		    o.json != NULL || o.export_problem != NULL ?
		    _("nothing written") : _("no plan"));
		if (!o.quiet && !(o.json != NULL && strcmp(o.json, "-") == 0))
			advise_fit(&o, &s);
		rc = SL_EINFEASIBLE;
	} else if (rc == SL_OK && over_cap) {
		char b1[32], cap[128];
		fprintf(stderr, _("shardlab: warning: the plan needs %s per device; a device of %s (%s) has %s: kept as --allow-over-capacity asks\n"),
		    cli_bytes(peak, b1), sl_esc(s.mesh.hw.name),
		    sl_esc(s.mesh.hw.device),
		    sl_hw_memory_text(&s.mesh.hw, cap, sizeof cap));
	}
	sl_eval_free(&ev);
	sl_solution_free(&sol);
out:
	cli_close(&s);
	cli_opts_free(&o);
	return rc;
}

const struct cli_cmd cli_cmd_solve = {
	.name = "solve",
	.bit = CLI_C_SOLVE,
	.usage = N_("solve MODEL [OPTIONS] [--json FILE|-] [--export-problem FILE]"),
	.help = N_("find the plan with the least memory traded against communication"),
	.run = cmd_solve,
};
