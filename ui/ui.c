/*
 * ui.c: the explorer's state and loop.  Every change of pins, forbids or
 * alpha re-solves at once with the live DP (the problem is updated in place
 * with sl_space_constrain / sl_space_reweigh); a GLPK confirmation of the
 * optimum and the alpha sweep for the Pareto plot run in background threads,
 * a newer request superseding (and cancelling) an older one.  The terminal is
 * restored on every way out: normal exit, atexit, SIGTERM/SIGHUP/SIGINT and
 * a crash (SIGSEGV/SIGABRT/SIGBUS/SIGFPE restore, then re-raise).
 */
#include "ui.h"

#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <term.h>
#include <glpk.h>

/* Problems with more ILP variables than this are not sent to GLPK. */
#define UI_ILP_MAX_VARS 60000
/* Seconds GLPK may spend confirming one plan. */
#define UI_ILP_TIME_LIMIT 60.0

/* The GPU runner's pid while a validation runs, for the crash handler. */
static volatile sig_atomic_t ui_child_pid = -1;

/* ------------------------------------------------------------ alpha scale */

/*
 * Slider positions: 0 is alpha 0, then a 1-2-5 series from 0.1 to 5e12
 * bytes per microsecond, a log scale.
 */
#define UI_ALPHA_DECADES 14
#define UI_ALPHA_MIN_EXP (-1)

int
ui_alpha_positions(void)
{
	return 1 + 3 * UI_ALPHA_DECADES;
}

double
ui_alpha_at(int pos)
{
	static const double mant[3] = { 1, 2, 5 };

	if (pos <= 0)
		return 0;
	if (pos >= ui_alpha_positions())
		pos = ui_alpha_positions() - 1;
	return mant[(pos - 1) % 3] * pow(10, UI_ALPHA_MIN_EXP + (pos - 1) / 3);
}

int
ui_alpha_nearest(double alpha)
{
	int i, best = 0;
	double d, bd = INFINITY;

	if (!(alpha > 0))
		return 0;
	for (i = 1; i < ui_alpha_positions(); i++) {
		d = fabs(log(alpha) - log(ui_alpha_at(i)));
		if (d < bd) {
			bd = d;
			best = i;
		}
	}
	return best;
}

/* --------------------------------------------------------------- accessors */

const char *
ui_op_name(const ui *u, int op)
{
	static char buf[32];	/* only for nameless IOPDDL nodes */

	if (u->space != NULL)
		return u->space->g->ops[op].name;
	if (u->prob->node_name != NULL && u->prob->node_name[op] != NULL)
		return u->prob->node_name[op];
	snprintf(buf, sizeof buf, "node%d", op);
	return buf;
}

const char *
ui_strat_name(const ui *u, int op, int s)
{
	static char buf[32];

	if (u->space != NULL)
		return u->space->ops[op].strat[s].name;
	if (u->prob->strat_name != NULL && u->prob->strat_name[op] != NULL &&
	    u->prob->strat_name[op][s] != NULL)
		return u->prob->strat_name[op][s];
	snprintf(buf, sizeof buf, "s%d", s);
	return buf;
}

int
ui_op_k(const ui *u, int op)
{
	return u->prob->k[op];
}

int
ui_chosen(const ui *u, int op)
{
	if (!u->have_sol || op < 0 || op >= u->n)
		return -1;
	return u->sol.choice[op];
}

bool
ui_plan_changed(const ui *u)
{
	if (!u->have_sol || u->export_choice == NULL)
		return false;
	return memcmp(u->sol.choice, u->export_choice, u->n * sizeof(int)) != 0 ||
	    u->alpha != u->export_alpha;
}

static int
ui_layer_of(const ui *u, int op, int *pos, int *kind)
{
	if (u->space != NULL) {
		const sl_op *o = &u->space->g->ops[op];
		*pos = o->pos;
		*kind = o->kind;
		return o->layer;
	}
	*kind = 0;
	*pos = u->prob->pos != NULL ? u->prob->pos[op] : -1;
	return u->prob->layer != NULL ? u->prob->layer[op] : -1;
}

int
ui_same_position(const ui *u, int op, int *out)
{
	int i, n = 0, pos, kind, l, p2, k2;

	l = ui_layer_of(u, op, &pos, &kind);
	if (l < 0 || pos < 0) {
		out[0] = op;
		return 1;
	}
	for (i = 0; i < u->n; i++) {
		if (ui_layer_of(u, i, &p2, &k2) >= 0 && p2 == pos && k2 == kind)
			out[n++] = i;
	}
	return n;
}

void
ui_message(ui *u, bool error, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(u->msg, sizeof u->msg, fmt, ap);
	va_end(ap);
	u->msg_error = error;
	u->dirty |= UI_D_MSG;
}

/* ------------------------------------------------------------- constraints */

static void
ui_build_constraints(ui *u)
{
	int i, s;

	sl_constraints_free(&u->cs);
	memset(&u->cs, 0, sizeof u->cs);
	for (i = 0; i < u->n; i++) {
		if (u->pin[i] >= 0)
			sl_constraints_add(&u->cs, ui_op_name(u, i),
			    ui_strat_name(u, i, u->pin[i]), true);
		for (s = 0; s < ui_op_k(u, i); s++)
			if (u->forbid[i][s])
				sl_constraints_add(&u->cs, ui_op_name(u, i),
				    ui_strat_name(u, i, s), false);
	}
}

/* IOPDDL problems have no space: apply the pins to allowed directly. */
static int
ui_constrain_direct(ui *u, sl_error *err)
{
	int i, s, left;

	for (i = 0; i < u->n; i++) {
		left = 0;
		for (s = 0; s < ui_op_k(u, i); s++) {
			u->prob->allowed[i][s] = !u->forbid[i][s] &&
			    (u->pin[i] < 0 || u->pin[i] == s);
			left += u->prob->allowed[i][s];
		}
		if (left == 0)
			return sl_error_set(err, SL_EINFEASIBLE, NULL, 0, 0,
			    _("no strategy left for %s"), ui_op_name(u, i));
	}
	return SL_OK;
}

static int
ui_find_op(const ui *u, const char *name)
{
	int i;

	if (u->space != NULL)
		return sl_graph_find_op(u->space->g, name);
	for (i = 0; i < u->n; i++)
		if (strcmp(ui_op_name(u, i), name) == 0)
			return i;
	return -1;
}

static int
ui_find_strat(const ui *u, int op, const char *name)
{
	int s;

	if (u->space != NULL)
		return sl_space_find_strategy(u->space, op, name);
	for (s = 0; s < ui_op_k(u, op); s++)
		if (strcmp(ui_strat_name(u, op, s), name) == 0)
			return s;
	return -1;
}

/* ------------------------------------------------------------ live solving */

int
ui_resolve(ui *u, sl_error *err)
{
	sl_solution sol;
	sl_eval ev;
	sl_solve_opts so;
	int rc, i;

	ui_build_constraints(u);
	if (u->space != NULL)
		rc = sl_space_constrain(u->space, u->prob, &u->cs, err);
	else
		rc = ui_constrain_direct(u, err);
	if (rc != SL_OK)
		return rc;

	sl_solution_init(&sol, u->n);
	if (u->dp != NULL) {
		rc = sl_dp_resolve(u->dp, u->prob, &sol, err);
	} else {
		memset(&so, 0, sizeof so);
		so.time_limit = 30;
		rc = sl_solve(u->prob, u->solver, &so, &sol, err);
	}
	if (rc == SL_OK && sol.status != SL_SOLVE_OPTIMAL &&
	    sol.status != SL_SOLVE_FEASIBLE)
		rc = sl_error_set(err, sol.status == SL_SOLVE_INFEASIBLE ?
		    SL_EINFEASIBLE : SL_EINTERNAL, NULL, 0, 0,
		    _("no plan: solver says %s"),
		    sl_solve_status_name(sol.status));
	if (rc != SL_OK) {
		sl_solution_free(&sol);
		return rc;
	}

	memset(&ev, 0, sizeof ev);
	if (u->space != NULL) {
		rc = sl_evaluate(u->space, sol.choice, u->alpha, &ev, err);
		if (rc != SL_OK) {
			sl_solution_free(&sol);
			return rc;
		}
	}

	/* What changed since the previous plan. */
	if (u->have_sol) {
		memcpy(u->prev_choice, u->sol.choice, u->n * sizeof(int));
		u->n_changed = 0;
		for (i = 0; i < u->n; i++)
			if (sol.choice[i] != u->prev_choice[i])
				u->changed[u->n_changed++] = i;
		sl_solution_free(&u->sol);
	} else {
		memcpy(u->prev_choice, sol.choice, u->n * sizeof(int));
		u->n_changed = 0;
	}
	u->sol = sol;
	u->have_sol = true;
	if (u->have_ev)
		sl_eval_free(&u->ev);
	u->ev = ev;
	u->have_ev = u->space != NULL;
	u->solve_err[0] = '\0';
	/* Without the DP the live answer is already GLPK's (or brute force's). */
	u->confirm = u->dp == NULL ? UI_CONF_NONE :
	    u->ilp_ok ? UI_CONF_RUNNING : UI_CONF_TOO_LARGE;
	ui_graph_invalidate(u);
	u->dirty |= UI_D_ALL;
	ui_request_background(u);
	return SL_OK;
}

/* Re-solves for alpha; false (with a message) when alpha does not apply. */
static bool
ui_set_alpha(ui *u, double alpha)
{
	sl_error err;
	char buf[2048];

	if (u->space == NULL) {
		ui_message(u, true, "%s",
		    _("alpha does not apply: this problem's costs are given"));
		return false;
	}
	u->alpha = alpha;
	u->alpha_pos = ui_alpha_nearest(alpha);
	sl_space_reweigh(u->space, u->alpha, u->prob);
	sl_error_clear(&err);
	if (ui_resolve(u, &err) != SL_OK)
		ui_message(u, true, "%s", sl_error_format(&err, buf, sizeof buf));
	u->dirty |= UI_D_ALPHA;
	return true;
}

void
ui_set_alpha_pos(ui *u, int pos)
{
	if (pos < 0)
		pos = 0;
	if (pos >= ui_alpha_positions())
		pos = ui_alpha_positions() - 1;
	ui_set_alpha(u, ui_alpha_at(pos));
}

/*
 * An alpha inside frontier plan i's range, away from its ends where the
 * neighbouring plan ties: the geometric middle, twice the start of the last
 * (open) range, 0 for the first.
 */
double
ui_front_alpha(const sl_frontier *f, int i)
{
	const sl_frontier_point *p = &f->pt[i];

	if (i == 0 || !(p->alpha_lo > 0))
		return 0;
	if (p->alpha_hi < 0)
		return 2 * p->alpha_lo;
	return sqrt(p->alpha_lo * p->alpha_hi);
}

int
ui_front_index(const ui *u)
{
	int i;

	if (!u->have_front || u->front.n == 0)
		return -1;
	for (i = 0; i < u->front.n; i++) {
		const sl_frontier_point *p = &u->front.pt[i];
		if (u->alpha >= p->alpha_lo &&
		    (p->alpha_hi < 0 || u->alpha <= p->alpha_hi))
			return i;
	}
	return u->alpha <= u->front.pt[0].alpha_lo ? 0 : u->front.n - 1;
}

bool
ui_alpha_step(ui *u, int d)
{
	int i = ui_front_index(u);

	if (i < 0)
		return ui_set_alpha(u, ui_alpha_at(u->alpha_pos + d)), false;
	i += d;
	if (i < 0)
		i = 0;
	if (i >= u->front.n)
		i = u->front.n - 1;
	ui_set_alpha(u, ui_front_alpha(&u->front, i));
	return true;
}

void
ui_alpha_scale(ui *u, double factor)
{
	double a = u->alpha > 0 ? u->alpha * factor :
	    factor > 1 ? ui_alpha_at(1) : 0;

	if (a < ui_alpha_at(1) && factor < 1)
		a = 0;
	if (a > ui_alpha_at(ui_alpha_positions() - 1))
		a = ui_alpha_at(ui_alpha_positions() - 1);
	ui_set_alpha(u, a);
}

/* ------------------------------------------------------- background jobs */

struct ui_cancel {
	struct ui_job *job;
	unsigned gen;
	const ui *u;
};

static bool
ui_cancel_cb(void *ctx)
{
	struct ui_cancel *c = ctx;
	return atomic_load(&c->job->gen) != c->gen || c->job->quit;
}

static void
ui_job_init(struct ui_job *j)
{
	memset(j, 0, sizeof *j);
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	atomic_init(&j->gen, 0);
}

/* Waits for a request; returns its generation, 0 when asked to quit. */
static unsigned
ui_job_take(struct ui_job *j)
{
	unsigned g;

	pthread_mutex_lock(&j->mu);
	while (!j->quit && j->have == 0)
		pthread_cond_wait(&j->cv, &j->mu);
	if (j->quit) {
		pthread_mutex_unlock(&j->mu);
		return 0;
	}
	g = j->have;
	j->have = 0;
	j->busy = true;
	pthread_mutex_unlock(&j->mu);
	return g;
}

static void *
ui_ilp_thread(void *arg)
{
	ui *u = arg;
	struct ui_job *j = &u->ilp_job;
	sl_problem *p;
	sl_solution sol;
	sl_solve_opts so;
	struct ui_cancel c;
	sl_error err;
	unsigned g;
	int rc;

	/* GLPK must never write on the screen the explorer owns. */
	glp_term_out(GLP_OFF);
	while ((g = ui_job_take(j)) != 0) {
		pthread_mutex_lock(&j->mu);
		p = j->prob;
		j->prob = NULL;
		pthread_mutex_unlock(&j->mu);
		sl_error_clear(&err);
		sl_solution_init(&sol, p->n);
		rc = SL_OK;
		if (u->ilp == NULL && (u->ilp = sl_ilp_new(p, &err)) == NULL)
			rc = err.code ? err.code : SL_EINTERNAL;
		if (rc == SL_OK) {
			memset(&so, 0, sizeof so);
			c.job = j;
			c.gen = g;
			c.u = u;
			so.cancel = ui_cancel_cb;
			so.cancel_ctx = &c;
			so.time_limit = UI_ILP_TIME_LIMIT;
			rc = sl_ilp_resolve(u->ilp, p, &so, &sol, &err);
		}
		pthread_mutex_lock(&j->mu);
		j->done = g;
		j->rc = rc;
		j->objective = sol.objective;
		j->status = sol.status;
		j->time_ms = sol.time_ms;
		snprintf(j->msg, sizeof j->msg, "%.255s", err.msg);
		j->busy = false;
		pthread_mutex_unlock(&j->mu);
		sl_solution_free(&sol);
		sl_problem_free(p);
	}
	/* GLPK's memory belongs to the thread that made it. */
	if (u->ilp != NULL) {
		sl_ilp_free(u->ilp);
		u->ilp = NULL;
	}
	glp_free_env();
	return NULL;
}

static void *
ui_sweep_thread(void *arg)
{
	ui *u = arg;
	struct ui_job *j = &u->sweep_job;
	struct ui_cancel c;
	sl_constraints cs;
	sl_frontier f;
	sl_error err;
	unsigned g;
	int rc;

	while ((g = ui_job_take(j)) != 0) {
		pthread_mutex_lock(&j->mu);
		cs = j->cs;
		memset(&j->cs, 0, sizeof j->cs);
		pthread_mutex_unlock(&j->mu);
		sl_error_clear(&err);
		memset(&f, 0, sizeof f);
		/* a newer pin set, or quitting, stops this sweep between solves */
		c.job = j;
		c.gen = g;
		c.u = u;
		rc = sl_sweep_cancellable(u->space, &cs, SL_SOLVER_DP, ui_cancel_cb,
		    &c, &f, &err);
		sl_constraints_free(&cs);
		pthread_mutex_lock(&j->mu);
		if (j->have_front)
			sl_frontier_free(&j->front);
		j->done = g;
		j->rc = rc;
		j->front = f;
		j->have_front = rc == SL_OK;
		if (rc != SL_OK)
			sl_frontier_free(&f);
		snprintf(j->msg, sizeof j->msg, "%.255s", err.msg);
		j->busy = false;
		pthread_mutex_unlock(&j->mu);
	}
	return NULL;
}

static void
ui_copy_constraints(sl_constraints *dst, const sl_constraints *src)
{
	int i;

	memset(dst, 0, sizeof *dst);
	for (i = 0; i < src->n; i++)
		sl_constraints_add(dst, src->c[i].op, src->c[i].strategy,
		    src->c[i].pin);
}

void
ui_request_background(ui *u)
{
	struct ui_job *j;
	unsigned g;

	if (u->ilp_ok && u->dp != NULL) {
		j = &u->ilp_job;
		pthread_mutex_lock(&j->mu);
		g = atomic_load(&j->gen) + 1;
		atomic_store(&j->gen, g);
		if (j->prob != NULL)
			sl_problem_free(j->prob);
		j->prob = sl_problem_copy(u->prob);
		j->have = g;
		u->confirm_gen = g;
		pthread_cond_signal(&j->cv);
		pthread_mutex_unlock(&j->mu);
		if (!j->started)
			j->started = pthread_create(&j->thread, NULL,
			    ui_ilp_thread, u) == 0;
		if (!j->started)
			u->confirm = UI_CONF_FAILED;
	}
	if (u->space != NULL) {
		j = &u->sweep_job;
		pthread_mutex_lock(&j->mu);
		if (atomic_load(&j->gen) != u->cs_gen) {
			atomic_store(&j->gen, u->cs_gen);
			sl_constraints_free(&j->cs);
			ui_copy_constraints(&j->cs, &u->cs);
			j->have = u->cs_gen;
			u->front_busy = true;
			pthread_cond_signal(&j->cv);
		}
		pthread_mutex_unlock(&j->mu);
		if (!j->started)
			j->started = pthread_create(&j->thread, NULL,
			    ui_sweep_thread, u) == 0;
	}
}

static void ui_validate_poll(ui *u);

/* Takes finished background results that still belong to the current plan. */
void
ui_poll_jobs(ui *u)
{
	struct ui_job *j = &u->ilp_job;

	if (j->started) {
		pthread_mutex_lock(&j->mu);
		if (j->done != 0 && j->done == u->confirm_gen &&
		    u->confirm == UI_CONF_RUNNING) {
			if (j->rc != SL_OK || j->status == SL_SOLVE_FAILED)
				u->confirm = UI_CONF_FAILED;
			else if (j->status == SL_SOLVE_LIMIT ||
			    j->status == SL_SOLVE_CANCELLED)
				u->confirm = UI_CONF_LIMIT;
			else if (j->objective == u->sol.objective)
				u->confirm = UI_CONF_YES;
			else
				u->confirm = UI_CONF_DIFFERS;
			u->dirty |= UI_D_STATUS;
		}
		pthread_mutex_unlock(&j->mu);
	}
	j = &u->sweep_job;
	if (j->started) {
		pthread_mutex_lock(&j->mu);
		if (j->done == u->cs_gen && j->done != 0 && !j->busy &&
		    u->front_busy) {
			if (u->have_front)
				sl_frontier_free(&u->front);
			u->front = j->front;
			u->have_front = j->have_front;
			memset(&j->front, 0, sizeof j->front);
			j->have_front = false;
			u->front_busy = false;
			u->dirty |= UI_D_ALPHA;
		}
		pthread_mutex_unlock(&j->mu);
	}
	ui_validate_poll(u);
}

static void
ui_job_stop(struct ui_job *j, bool join)
{
	if (!j->started)
		return;
	pthread_mutex_lock(&j->mu);
	j->quit = true;
	atomic_fetch_add(&j->gen, 1);
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
	if (join)
		pthread_join(j->thread, NULL);
	else
		pthread_detach(j->thread);
	j->started = false;
}

/* ---------------------------------------------------------- GPU validation */

/*
 * v runs the GPU runner (shardlab-runner) on the plan as a child process,
 * exactly as `shardlab validate` does; the main loop polls it every tick, so
 * the explorer stays live while it runs.  The result belongs to the plan
 * that was on screen when it started (vchoice): the memory panel shows the
 * measured figures only while that plan is the current one.
 */

bool
ui_vres_current(const ui *u)
{
	return u->have_vres && u->have_sol && u->vchoice != NULL &&
	    memcmp(u->vchoice, u->sol.choice, u->n * sizeof(int)) == 0;
}

void
ui_validate_cancel(ui *u)
{
	if (!u->vrunning)
		return;
	ui_child_pid = -1;
	cli_validate_cancel(&u->vjob);
	u->vrunning = false;
	u->dirty |= UI_D_MEM;
}

void
ui_vres_errors(const ui *u, double *mem_err, double *time_err, int *failed)
{
	int d;

	*mem_err = *time_err = 0;
	*failed = -1;
	for (d = 0; d < u->vres.n_devices; d++) {
		const cli_vdev *v = &u->vres.dev[d];
		double e;

		if (!v->ok) {
			if (*failed < 0)
				*failed = d;
			continue;
		}
		e = cli_validate_error(sl_mem_total(&v->predicted), v->meminfo_delta);
		if (fabs(e) > fabs(*mem_err))
			*mem_err = e;
		e = cli_validate_error(v->pred_ns, v->step_ns);
		if (fabs(e) > fabs(*time_err))
			*time_err = e;
	}
}

static void
ui_validate_poll(ui *u)
{
	cli_vresult res;
	sl_error err;
	double me, te;
	int rc, failed;

	if (!u->vrunning)
		return;
	sl_error_clear(&err);
	rc = cli_validate_poll(&u->vjob, false, &res, &err);
	if (rc == 1)
		return;
	u->vrunning = false;
	ui_child_pid = -1;
	u->dirty |= UI_D_MEM;
	if (rc != SL_OK) {
		ui_message(u, true, _("validation failed: %s"), err.msg);
		return;
	}
	u->vres = res;
	u->have_vres = true;
	ui_vres_errors(u, &me, &te, &failed);
	if (failed >= 0)
		ui_message(u, true, _("validation: device %d could not run: %s"),
		    failed, u->vres.dev[failed].error);
	else
		ui_message(u, false, _("validated on %s: device memory %+.1f%%, "
		    "step time %+.1f%% (worst device); v shows the report"),
		    u->vres.gpu, me, te);
}

static void
ui_validate_report(ui *u)
{
	char *text = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);

	if (fp == NULL) {
		ui_message(u, true, _("cannot show the report: %s"), strerror(errno));
		return;
	}
	cli_validate_print(fp, u->source, u->space, &u->vres);
	if (fclose(fp) != 0 || text == NULL) {
		free(text);
		ui_message(u, true, _("cannot show the report: %s"), strerror(errno));
		return;
	}
	ui_show_text(u, _("Validation on local GPUs"), text);
}

void
ui_validate(ui *u)
{
	sl_error err;

	if (u->space == NULL) {
		ui_message(u, true, "%s",
		    _("validation needs a model: this problem has no operators to run"));
		return;
	}
	if (u->vrunning) {
		ui_validate_cancel(u);
		ui_message(u, false, "%s", _("validation cancelled"));
		return;
	}
	if (!u->have_sol)
		return;
	if (ui_vres_current(u)) {
		ui_validate_report(u);
		return;
	}
	sl_error_clear(&err);
	if (cli_validate_start(u->space, u->sol.choice, false, 0, &u->vjob,
	    &err) != SL_OK) {
		ui_message(u, true, _("cannot validate: %s"), err.msg);
		return;
	}
	u->vrunning = true;
	ui_child_pid = u->vjob.pid;
	if (u->vchoice == NULL)
		u->vchoice = sl_xmalloc(u->n * sizeof(int));
	memcpy(u->vchoice, u->sol.choice, u->n * sizeof(int));
	if (u->have_vres)
		cli_vresult_free(&u->vres);
	u->have_vres = false;
	u->dirty |= UI_D_MEM;
	ui_message(u, false, "%s", _("validating the plan on the local GPUs "
	    "(v again cancels)..."));
}

/* ----------------------------------------------------------------- set up */

static int64_t
ui_ilp_vars(const sl_problem *p)
{
	int64_t v = 0;
	int i;

	for (i = 0; i < p->n; i++)
		v += p->k[i];
	for (i = 0; i < p->m; i++)
		v += (int64_t)p->k[p->edge[i][0]] * p->k[p->edge[i][1]];
	return v;
}

int
ui_init(ui *u, cli_session *s, const cli_opts *o, sl_error *err)
{
	int i, op, st;
	sl_error e2;

	memset(u, 0, sizeof *u);
	u->ses = s;
	u->space = s->space;
	u->prob = s->prob;
	u->source = s->source;
	u->solver = o->solver;
	u->n = u->prob->n;
	u->alpha = o->alpha;
	u->alpha_pos = ui_alpha_nearest(o->alpha);
	ui_job_init(&u->ilp_job);
	ui_job_init(&u->sweep_job);

	u->pin = sl_xmalloc(u->n * sizeof(int));
	u->forbid = sl_xcalloc(u->n, sizeof(uint8_t *));
	for (i = 0; i < u->n; i++) {
		u->pin[i] = -1;
		u->forbid[i] = sl_xcalloc(ui_op_k(u, i), 1);
	}
	for (i = 0; i < o->cs.n; i++) {
		op = ui_find_op(u, o->cs.c[i].op);
		st = op < 0 ? -1 : ui_find_strat(u, op, o->cs.c[i].strategy);
		if (op < 0 || st < 0)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("unknown operator or strategy: %s=%s"),
			    o->cs.c[i].op, o->cs.c[i].strategy);
		if (o->cs.c[i].pin)
			u->pin[op] = st;
		else
			u->forbid[op][st] = 1;
	}
	u->cs_gen = 1;
	u->prev_choice = sl_xcalloc(u->n, sizeof(int));
	u->changed = sl_xcalloc(u->n, sizeof(int));
	u->export_choice = sl_xcalloc(u->n, sizeof(int));

	if (u->solver == SL_SOLVER_AUTO || u->solver == SL_SOLVER_DP) {
		sl_error_clear(&e2);
		u->dp = sl_dp_new(u->prob, &e2);
		if (u->dp == NULL && u->solver == SL_SOLVER_DP)
			return sl_error_set(err, e2.code ? e2.code : SL_EINTERNAL,
			    NULL, 0, 0, "%s", e2.msg);
		if (u->dp == NULL)
			u->solver = SL_SOLVER_AUTO;
	}
	u->ilp_ok = u->prob->usage_limit < 0 &&
	    ui_ilp_vars(u->prob) <= UI_ILP_MAX_VARS;

	ui_rows_build(u);
	if (ui_resolve(u, err) != SL_OK)
		return err->code;
	/* Tab on a fresh model lands on the strategy the plan chose. */
	st = ui_chosen(u, ui_row_op(u));
	u->strat_cur = st < 0 ? 0 : st;
	memcpy(u->export_choice, u->sol.choice, u->n * sizeof(int));
	u->export_alpha = u->alpha;
	return SL_OK;
}

void
ui_free(ui *u)
{
	int i;

	/*
	 * GLPK and the sweep poll their cancel flags and stop soon; this waits
	 * for them (the caller frees the space they read next).
	 */
	ui_validate_cancel(u);
	ui_timeline_free(u);
	if (u->have_vres)
		cli_vresult_free(&u->vres);
	free(u->vchoice);
	ui_job_stop(&u->ilp_job, true);
	ui_job_stop(&u->sweep_job, true);
	if (u->sweep_job.have_front)
		sl_frontier_free(&u->sweep_job.front);
	sl_constraints_free(&u->sweep_job.cs);
	if (u->ilp_job.prob != NULL)
		sl_problem_free(u->ilp_job.prob);
	if (u->dp != NULL)
		sl_dp_free(u->dp);
	if (u->have_sol)
		sl_solution_free(&u->sol);
	if (u->have_ev)
		sl_eval_free(&u->ev);
	if (u->have_front)
		sl_frontier_free(&u->front);
	sl_constraints_free(&u->cs);
	if (u->forbid != NULL)
		for (i = 0; i < u->n; i++)
			free(u->forbid[i]);
	free(u->forbid);
	free(u->pin);
	free(u->prev_choice);
	free(u->changed);
	free(u->export_choice);
	free(u->text);
	free(u->groups);
	free(u->op_group);
	free(u->rows);
	ui_graph_free(u);
	ui_destroy_windows(u);
}

/* ----------------------------------------------------------------- exports */

int
ui_export_plan(ui *u, const char *path, sl_error *err)
{
	sl_plan_meta meta;

	if (u->space == NULL)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("plans can only be exported for models"));
	memset(&meta, 0, sizeof meta);
	meta.model_source = u->source;
	meta.alpha = u->alpha;
	meta.sol = &u->sol;
	meta.cs = &u->cs;
	if (sl_plan_write(u->space, u->sol.choice, &u->ev, &meta, path,
	    err) != SL_OK)
		return err->code;
	memcpy(u->export_choice, u->sol.choice, u->n * sizeof(int));
	u->export_alpha = u->alpha;
	return SL_OK;
}

int
ui_export_svg(ui *u, const char *path, sl_error *err)
{
	struct Agraph_s *g;
	sl_atomic a;
	int rc, op = ui_row_op(u);

	if (u->space == NULL)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("the strategy graph needs a model"));
	if (sl_atomic_open(&a, path, err) != SL_OK)
		return err->code;
	if (op < 0)
		op = 0;
	g = ui_sgraph_build(u->space, u->sol.choice, &op, 1, 1, UI_SG_RENDER,
	    true);
	rc = ui_sgraph_render(g, "svg", a.fp, err);
	ui_sgraph_free(g);
	if (rc != SL_OK) {
		sl_atomic_abort(&a);
		return rc;
	}
	return sl_atomic_commit(&a, err);
}

/* ------------------------------------------------------ terminal restore */

static volatile sig_atomic_t ui_signalled;
static bool ui_curses_on;
static struct termios ui_saved_tio;
static bool ui_have_tio;
/* Bytes that put the terminal back, computed before any signal can come. */
static char ui_reset_seq[256];
static size_t ui_reset_len;

static void
ui_restore(void)
{
	if (ui_curses_on) {
		ui_curses_on = false;
		endwin();
	}
}

/* Async-signal-safe: write and tcsetattr only. */
static void
ui_restore_raw(void)
{
	ssize_t r;

	if (!ui_curses_on)
		return;
	if (ui_reset_len > 0)
		r = write(STDOUT_FILENO, ui_reset_seq, ui_reset_len);
	if (ui_have_tio)
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &ui_saved_tio);
	(void)r;
}

static void
ui_on_signal(int sig)
{
	ui_signalled = sig;
}

static void
ui_on_crash(int sig)
{
	if (ui_child_pid > 0)
		kill((pid_t)ui_child_pid, SIGTERM);
	ui_restore_raw();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
ui_add_seq(const char *cap)
{
	char *s = tigetstr((char *)cap);
	size_t n;

	if (s == NULL || s == (char *)-1)
		return;
	n = strlen(s);
	if (ui_reset_len + n < sizeof ui_reset_seq) {
		memcpy(ui_reset_seq + ui_reset_len, s, n);
		ui_reset_len += n;
	}
}

static void
ui_signals(void)
{
	struct sigaction sa;
	static const int quit_sigs[] = { SIGTERM, SIGHUP, SIGINT };
	static const int crash_sigs[] = { SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL };
	size_t i;

	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = ui_on_signal;
	for (i = 0; i < SL_ARRAY_LEN(quit_sigs); i++)
		sigaction(quit_sigs[i], &sa, NULL);
	sa.sa_handler = ui_on_crash;
	sa.sa_flags = SA_RESETHAND;
	for (i = 0; i < SL_ARRAY_LEN(crash_sigs); i++)
		sigaction(crash_sigs[i], &sa, NULL);
}

/* ------------------------------------------------------------------- loop */

static void
ui_start_curses(ui *u)
{
	const char *cs;

	ui_have_tio = tcgetattr(STDIN_FILENO, &ui_saved_tio) == 0;
	glp_term_out(GLP_OFF);	/* a live GLPK solve must not write on the screen */
	initscr();
	ui_curses_on = true;
	atexit(ui_restore);
	ui_reset_len = 0;
	ui_add_seq("sgr0");
	ui_add_seq("cnorm");
	ui_add_seq("rmcup");
	ui_signals();
	cbreak();
	noecho();
	nonl();
	set_escdelay(25);
	curs_set(0);
	cs = nl_langinfo(CODESET);
	u->utf8 = cs != NULL && (strcmp(cs, "UTF-8") == 0 ||
	    strcmp(cs, "utf8") == 0);
	ui_screen_setup(u, has_colors() && getenv("NO_COLOR") == NULL);
	ui_layout(u, LINES, COLS);
}

int
ui_run(ui *u)
{
	struct ui_event ev;
	wint_t wch;
	int r, sig;
	WINDOW *in;

	ui_start_curses(u);
	while (!u->quit && ui_signalled == 0) {
		ui_poll_jobs(u);
		ui_draw(u);
		in = u->win[UI_W_STATUS] != NULL ? u->win[UI_W_STATUS] :
		    u->win[UI_W_TITLE];
		keypad(in, TRUE);
		wtimeout(in, 100);
		r = wget_wch(in, &wch);
		if (r == ERR)
			continue;
		ev.fn = r == KEY_CODE_YES;
		ev.key = (int)wch;
		if (ev.fn && ev.key == KEY_RESIZE) {
			ui_layout(u, LINES, COLS);
			continue;
		}
		ui_handle_event(u, ev);
	}
	sig = ui_signalled;
	/* A runner still going would outlive the explorer: stop it. */
	ui_validate_cancel(u);
	ui_restore();
	if (sig != 0) {
		/* Die of the signal, as the caller expects, terminal restored. */
		signal(sig, SIG_DFL);
		raise(sig);
		return 128 + sig;
	}
	return 0;
}

/* ------------------------------------------------------------ entry point */

#ifndef UI_NO_MAIN
static bool
ui_has_flag(int argc, char **argv, const char *flag)
{
	int i;
	size_t n = strlen(flag);

	for (i = 0; i < argc; i++)
		if (strncmp(argv[i], flag, n) == 0 &&
		    (argv[i][n] == '\0' || argv[i][n] == '='))
			return true;
	return false;
}

int
cli_cmd_tui(int argc, char **argv)
{
	cli_opts o;
	cli_session s;
	sl_plan_file pf;
	sl_error err;
	ui u;
	char *empty[1] = { NULL };
	char *plan_args[1];
	int rc, i;
	bool have_pf = false;

	setlocale(LC_ALL, "");
#ifdef ENABLE_NLS
	bindtextdomain(PACKAGE, sl_localedir());
	textdomain(PACKAGE);
#endif
	if (argv == NULL) {
		argc = 0;
		argv = empty;
	}
	memset(&o, 0, sizeof o);
	memset(&s, 0, sizeof s);
	sl_error_clear(&err);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);

	if (o.plan != NULL) {
		memset(&pf, 0, sizeof pf);
		if (sl_plan_read(o.plan, &pf, &err) != SL_OK) {
			cli_opts_free(&o);
			return cli_report(&err);
		}
		have_pf = true;
		if (o.n_args == 0 && (pf.model_source != NULL || pf.model != NULL)) {
			plan_args[0] = pf.model_source != NULL ?
			    pf.model_source : pf.model;
			o.args = plan_args;
			o.n_args = 1;
		}
		if (!o.mesh_set && pf.n_axes > 0) {
			o.n_axes = pf.n_axes;
			for (i = 0; i < pf.n_axes; i++)
				o.shape[i] = pf.shape[i];
			o.mesh_set = true;
		}
		if (!ui_has_flag(argc, argv, "--hw") && pf.hardware != NULL)
			o.hw = pf.hardware;
		if (!ui_has_flag(argc, argv, "--alpha"))
			o.alpha = pf.alpha;
		if (!ui_has_flag(argc, argv, "--micro-batch") && pf.micro_batch > 0)
			o.micro_batch = o.recipe.micro_batch = pf.micro_batch;
		/* the plan's recipe, where the command line says nothing else */
		if (pf.has_recipe) {
			if (!ui_has_flag(argc, argv, "--attention"))
				o.recipe.attention = pf.recipe.attention;
			if (!ui_has_flag(argc, argv, "--precision"))
				o.recipe.precision = pf.recipe.precision;
			if (!ui_has_flag(argc, argv, "--recompute"))
				o.recipe.recompute = pf.recipe.recompute;
			if (!ui_has_flag(argc, argv, "--global-batch"))
				o.recipe.global_batch = pf.recipe.global_batch;
			if (!ui_has_flag(argc, argv, "--seq") && pf.recipe.seq > 0)
				o.seq = o.recipe.seq = pf.recipe.seq;
		}
		for (i = 0; i < pf.cs.n; i++)
			sl_constraints_add(&o.cs, pf.cs.c[i].op,
			    pf.cs.c[i].strategy, pf.cs.c[i].pin);
	}

	rc = cli_open(&o, true, &s, &err);
	if (rc == SL_OK && s.prob == NULL)
		rc = sl_error_set(&err, SL_EINFEASIBLE, NULL, 0, 0, "%s",
		    _("the pins leave no feasible plan"));
	if (rc == SL_OK && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)))
		rc = sl_error_set(&err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("the explorer needs a terminal (use `shardlab solve` in scripts)"));
	if (rc != SL_OK) {
		cli_close(&s);
		if (have_pf)
			sl_plan_file_free(&pf);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if (ui_init(&u, &s, &o, &err) != SL_OK) {
		ui_free(&u);
		cli_close(&s);
		if (have_pf)
			sl_plan_file_free(&pf);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if (have_pf && u.space != NULL) {
		/* The reopened plan is the baseline for "changed". */
		int *c = sl_xmalloc(u.n * sizeof(int));
		sl_error e2;
		sl_error_clear(&e2);
		if (sl_plan_choice(u.space, &pf, c, &e2) == SL_OK) {
			memcpy(u.export_choice, c, u.n * sizeof(int));
			memcpy(u.prev_choice, c, u.n * sizeof(int));
		}
		free(c);
	}
	rc = ui_run(&u);
	/* GLPK and the sweep stop at their next poll; ui_free waits for them. */
	ui_free(&u);
	cli_close(&s);
	if (have_pf)
		sl_plan_file_free(&pf);
	cli_opts_free(&o);
	return rc;
}
#endif
