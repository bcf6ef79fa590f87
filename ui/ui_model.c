/*
 * ui_model.c: the explorer's model.  Every change of pins, forbids or alpha
 * re-solves at once with the live DP (the problem is updated in place with
 * sl_space_constrain / sl_space_reweigh); a GLPK confirmation of the optimum
 * and the alpha sweep for the Pareto plot run in background threads, a newer
 * request superseding (and cancelling) an older one; a GPU validation runs
 * as a child process.  Nothing here draws or knows a terminal: the view
 * (ui.c) polls the model and redraws what changed.
 */
#include "ui_model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

/* Problems with more ILP variables than this are not sent to GLPK. */
#define UI_ILP_MAX_VARS 60000
/* Seconds GLPK may spend confirming one plan. */
#define UI_ILP_TIME_LIMIT 60.0
/* Seconds of background search of a problem the DP cannot take when no
 * --time-limit is given. */
#define UI_SEARCH_TIME_LIMIT 60.0

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
ui_op_name(const ui_model *m, int op)
{
	static char buf[32];	/* only for nameless IOPDDL nodes */

	if (m->space != NULL)
		return m->space->g->ops[op].name;
	if (m->prob->node_name != NULL && m->prob->node_name[op] != NULL)
		return m->prob->node_name[op];
	snprintf(buf, sizeof buf, "node%d", op);
	return buf;
}

const char *
ui_strat_name(const ui_model *m, int op, int s)
{
	static char buf[32];

	if (m->space != NULL)
		return m->space->ops[op].strat[s].name;
	if (m->prob->strat_name != NULL && m->prob->strat_name[op] != NULL &&
	    m->prob->strat_name[op][s] != NULL)
		return m->prob->strat_name[op][s];
	snprintf(buf, sizeof buf, "s%d", s);
	return buf;
}

int
ui_op_k(const ui_model *m, int op)
{
	return m->prob->k[op];
}

int
ui_chosen(const ui_model *m, int op)
{
	if (!m->have_sol || op < 0 || op >= m->n)
		return -1;
	return m->sol.choice[op];
}

bool
ui_plan_changed(const ui_model *m)
{
	if (!m->have_sol || m->export_choice == NULL)
		return false;
	return memcmp(m->sol.choice, m->export_choice, m->n * sizeof(int)) != 0 ||
	    m->alpha != m->export_alpha;
}

static int
ui_layer_of(const ui_model *m, int op, int *pos, int *kind)
{
	if (m->space != NULL) {
		const sl_op *o = &m->space->g->ops[op];
		*pos = o->pos;
		*kind = o->kind;
		return o->layer;
	}
	*kind = 0;
	*pos = m->prob->pos != NULL ? m->prob->pos[op] : -1;
	return m->prob->layer != NULL ? m->prob->layer[op] : -1;
}

int
ui_same_position(const ui_model *m, int op, int *out)
{
	int i, n = 0, pos, kind, l, p2, k2;

	l = ui_layer_of(m, op, &pos, &kind);
	if (l < 0 || pos < 0) {
		out[0] = op;
		return 1;
	}
	for (i = 0; i < m->n; i++) {
		if (ui_layer_of(m, i, &p2, &k2) >= 0 && p2 == pos && k2 == kind)
			out[n++] = i;
	}
	return n;
}

/* ------------------------------------------------------------- constraints */

/*
 * The pins and forbids for the engine, by index into the model's space
 * (a problem without one takes them on its allowed sets directly, below).
 */
static void
ui_build_constraints(ui_model *m)
{
	int i, s;

	sl_constraints_free(&m->cs);
	memset(&m->cs, 0, sizeof m->cs);
	if (m->space == NULL)
		return;
	for (i = 0; i < m->n; i++) {
		if (m->pin[i] >= 0)
			sl_constraints_add_index(&m->cs, m->space, i,
			    m->pin[i], true);
		for (s = 0; s < ui_op_k(m, i); s++)
			if (m->forbid[i][s])
				sl_constraints_add_index(&m->cs, m->space, i, s,
				    false);
	}
}

/* IOPDDL problems have no space: apply the pins to allowed directly. */
static int
ui_constrain_direct(ui_model *m, sl_error *err)
{
	int i, s, left;

	for (i = 0; i < m->n; i++) {
		left = 0;
		for (s = 0; s < ui_op_k(m, i); s++) {
			m->prob->allowed[i][s] = !m->forbid[i][s] &&
			    (m->pin[i] < 0 || m->pin[i] == s);
			left += m->prob->allowed[i][s];
		}
		if (left == 0)
			return sl_error_set(err, SL_EINFEASIBLE, NULL, 0, 0,
			    _("no strategy left for %s"), ui_op_name(m, i));
	}
	return SL_OK;
}

static int
ui_find_op(const ui_model *m, const char *name)
{
	int i;

	if (m->space != NULL)
		return sl_graph_find_op(m->space->g, name);
	for (i = 0; i < m->n; i++)
		if (strcmp(ui_op_name(m, i), name) == 0)
			return i;
	return -1;
}

static int
ui_find_strat(const ui_model *m, int op, const char *name)
{
	int s;

	if (m->space != NULL)
		return sl_space_find_strategy(m->space, op, name);
	for (s = 0; s < ui_op_k(m, op); s++)
		if (strcmp(ui_strat_name(m, op, s), name) == 0)
			return s;
	return -1;
}

/* ------------------------------------------------------------ live solving */

/*
 * Makes sol (owned from here on) the live plan: evaluates it on the model and
 * notes which operators changed since the plan before.
 */
static int
ui_model_install(ui_model *m, sl_solution *sol, sl_error *err)
{
	sl_eval ev;
	int rc, i;

	memset(&ev, 0, sizeof ev);
	if (m->space != NULL) {
		rc = sl_evaluate(m->space, sol->choice, m->alpha, &ev, err);
		if (rc != SL_OK) {
			sl_solution_free(sol);
			return rc;
		}
	}

	/* What changed since the previous plan. */
	if (m->have_sol) {
		memcpy(m->prev_choice, m->sol.choice, m->n * sizeof(int));
		m->n_changed = 0;
		for (i = 0; i < m->n; i++)
			if (sol->choice[i] != m->prev_choice[i])
				m->changed[m->n_changed++] = i;
		sl_solution_free(&m->sol);
	} else {
		memcpy(m->prev_choice, sol->choice, m->n * sizeof(int));
		m->n_changed = 0;
	}
	m->sol = *sol;
	m->have_sol = true;
	if (m->have_ev)
		sl_eval_free(&m->ev);
	m->ev = ev;
	m->have_ev = m->space != NULL;
	m->solve_err[0] = '\0';
	return SL_OK;
}

int
ui_model_resolve(ui_model *m, sl_error *err)
{
	sl_solution sol;
	sl_solve_opts so;
	int rc;

	ui_build_constraints(m);
	if (m->space != NULL)
		rc = sl_space_constrain(m->space, m->prob, &m->cs, err);
	else
		rc = ui_constrain_direct(m, err);
	if (rc != SL_OK)
		return rc;

	sl_solution_init(&sol, m->n);
	m->fit_none = m->fit_searched = false;
	if (m->space != NULL && m->mem_limit > 0 && !m->search_ok) {
		/* the plan under the limit: the optimum at alpha when it fits */
		sl_solve_opts fso = { .time_limit = 30 };
		sl_fit_opts fo = { .alpha = m->alpha, .limit = m->mem_limit,
		    .fold = SL_FOLD_PEAK, .solver = m->solver, .solve = &fso,
		    .live = m->dp };
		sl_fit f;
		sl_solution_free(&sol);
		rc = sl_fit_plan(m->ses->space, m->prob, &fo, &f, err);
		sol = f.sol;
		memset(&f.sol, 0, sizeof f.sol);
		m->fit_searched = f.searched;
		m->fit_exact = f.exact;
		if (rc == SL_OK && !f.fits) {
			/* nothing fits: show the least memory, and say so */
			m->fit_none = true;
			m->fit_least = f.mem;
			sol.status = SL_SOLVE_FEASIBLE;
		}
		sl_fit_free(&f);
	} else if (m->dp != NULL) {
		/* at alpha 0, the least communication among equal memory */
		rc = sl_space_solve(m->space, m->prob, m->alpha, m->dp, m->solver,
		    NULL, &sol, err);
	} else if (m->search_ok) {
		/* the first plan now; the search goes on in the background */
		memset(&so, 0, sizeof so);
		so.time_limit = m->search_limit;
		so.first_plan = true;
		rc = sl_solve(m->prob, SL_SOLVER_ANYTIME, &so, &sol, err);
	} else {
		memset(&so, 0, sizeof so);
		so.time_limit = 30;
		rc = sl_space_solve(m->space, m->prob, m->alpha, NULL, m->solver,
		    &so, &sol, err);
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
	if ((rc = ui_model_install(m, &sol, err)) != SL_OK)
		return rc;
	/* Without the DP the live answer is already GLPK's (or brute force's);
	 * a plan fitted under the limit is not the one GLPK would confirm. */
	m->confirm = m->dp == NULL || m->fit_searched || m->fit_none ?
	    UI_CONF_NONE : m->ilp_ok ? UI_CONF_RUNNING : UI_CONF_TOO_LARGE;
	/* An optimum proven within the first second needs no more search. */
	m->search_bound = m->sol.bound;
	m->search_ms = m->sol.time_ms;
	m->search = !m->search_ok ? UI_SEARCH_NONE :
	    m->sol.status == SL_SOLVE_OPTIMAL ? UI_SEARCH_BEST :
	    UI_SEARCH_RUNNING;
	ui_model_request_background(m);
	return SL_OK;
}

int
ui_model_constrain(ui_model *m, const int *ops, int n, int op, int s,
    enum ui_act act, int *cleared, sl_error *err)
{
	int *save_pin, i, k, s2, rc;
	uint8_t **save_forbid;
	const char *sname;
	sl_error e2;

	if (s < 0 || s >= ui_op_k(m, op))
		s = 0;
	sname = ui_strat_name(m, op, s);
	save_pin = sl_xmalloc(n * sizeof(int));
	save_forbid = sl_xcalloc(n, sizeof(uint8_t *));
	*cleared = 0;
	for (i = 0; i < n; i++) {
		k = ui_op_k(m, ops[i]);
		save_pin[i] = m->pin[ops[i]];
		save_forbid[i] = sl_xmalloc(k);
		memcpy(save_forbid[i], m->forbid[ops[i]], k);
		/* the strategy of the same name at every operator */
		for (s2 = 0; s2 < k; s2++)
			if (strcmp(ui_strat_name(m, ops[i], s2), sname) == 0)
				break;
		switch (act) {
		case UI_ACT_PIN:
			if (s2 < k) {
				m->pin[ops[i]] = s2;
				m->forbid[ops[i]][s2] = 0;
			}
			break;
		case UI_ACT_FORBID:
			if (s2 < k) {
				m->forbid[ops[i]][s2] = 1;
				if (m->pin[ops[i]] == s2)
					m->pin[ops[i]] = -1;
			}
			break;
		case UI_ACT_CLEAR:
			for (s2 = 0; s2 < k && !m->forbid[ops[i]][s2]; s2++)
				;
			*cleared += m->pin[ops[i]] >= 0 || s2 < k;
			m->pin[ops[i]] = -1;
			memset(m->forbid[ops[i]], 0, k);
			break;
		}
	}
	m->cs_gen++;
	rc = ui_model_resolve(m, err);
	if (rc != SL_OK) {
		for (i = 0; i < n; i++) {
			m->pin[ops[i]] = save_pin[i];
			memcpy(m->forbid[ops[i]], save_forbid[i], ui_op_k(m, ops[i]));
		}
		m->cs_gen++;
		sl_error_clear(&e2);
		ui_model_resolve(m, &e2);
	}
	for (i = 0; i < n; i++)
		free(save_forbid[i]);
	free(save_forbid);
	free(save_pin);
	return rc;
}

int
ui_model_set_mem_limit(ui_model *m, int64_t limit, sl_error *err)
{
	if (m->space == NULL)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("a memory limit does not apply: this problem's costs are given"));
	m->mem_limit = limit > 0 ? limit : -1;
	return ui_model_resolve(m, err);
}

int
ui_model_set_alpha(ui_model *m, double alpha, sl_error *err)
{
	if (m->space == NULL)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("alpha does not apply: this problem's costs are given"));
	m->alpha = alpha;
	m->alpha_pos = ui_alpha_nearest(alpha);
	sl_space_reweigh(m->space, m->alpha, m->prob);
	return ui_model_resolve(m, err);
}

static void ui_job_stop(struct ui_job *j, bool join);
static void ui_timeline_stop(ui_model *m);

int
ui_model_set_recompute(ui_model *m, sl_recompute r, sl_error *err)
{
	sl_space *sp;
	struct ui_job *j = &m->sweep_job;

	if (m->space == NULL || m->ses == NULL || m->ses->space == NULL)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("recomputation does not apply: this problem's costs are given"));
	if (r == SL_RECOMP_AUTO || m->space->g->n_layers == 0)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("this model has no layers to recompute"));
	/* the sweep and the timeline read the space's tables: stop them
	 * before they change */
	ui_job_stop(j, true);
	ui_timeline_stop(m);
	pthread_mutex_lock(&j->mu);
	j->quit = false;
	j->have = 0;
	j->busy = false;
	pthread_mutex_unlock(&j->mu);
	atomic_store(&j->gen, 0);
	sp = m->ses->space;
	for (int l = 0; l < sp->g->n_layers; l++)
		sl_space_set_layer_recompute(sp, l, r);
	sp->opts.recipe.recompute = r;
	m->recompute = r;
	m->cs_gen++;		/* the frontier of the old costs is gone */
	m->have_front = false;
	sl_space_reweigh(m->space, m->alpha, m->prob);
	return ui_model_resolve(m, err);
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
ui_front_index(const ui_model *m)
{
	int i;

	if (!m->have_front || m->front.n == 0)
		return -1;
	for (i = 0; i < m->front.n; i++) {
		const sl_frontier_point *p = &m->front.pt[i];
		if (m->alpha >= p->alpha_lo &&
		    (p->alpha_hi < 0 || m->alpha <= p->alpha_hi))
			return i;
	}
	return m->alpha <= m->front.pt[0].alpha_lo ? 0 : m->front.n - 1;
}

double
ui_model_alpha_step(const ui_model *m, int d, bool *on_front)
{
	int i = ui_front_index(m), pos;

	*on_front = i >= 0;
	if (i < 0) {
		pos = m->alpha_pos + d;
		pos = pos < 0 ? 0 : pos >= ui_alpha_positions() ?
		    ui_alpha_positions() - 1 : pos;
		return ui_alpha_at(pos);
	}
	i += d;
	if (i < 0)
		i = 0;
	if (i >= m->front.n)
		i = m->front.n - 1;
	return ui_front_alpha(&m->front, i);
}

double
ui_model_alpha_scaled(const ui_model *m, double factor)
{
	double a = m->alpha > 0 ? m->alpha * factor :
	    factor > 1 ? ui_alpha_at(1) : 0;

	if (a < ui_alpha_at(1) && factor < 1)
		a = 0;
	if (a > ui_alpha_at(ui_alpha_positions() - 1))
		a = ui_alpha_at(ui_alpha_positions() - 1);
	return a;
}

/* ------------------------------------------------------- background jobs */

struct ui_cancel {
	struct ui_job *job;
	unsigned gen;
	const ui_model *m;
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
	ui_model *m = arg;
	struct ui_job *j = &m->ilp_job;
	sl_problem *p;
	sl_solution sol;
	sl_solve_opts so;
	struct ui_cancel c;
	sl_error err;
	unsigned g;
	int rc;

	/* GLPK must never write on the screen the explorer owns. */
	sl_ilp_quiet();
	while ((g = ui_job_take(j)) != 0) {
		pthread_mutex_lock(&j->mu);
		p = j->prob;
		j->prob = NULL;
		/* a request since the take replaced the problem: it is its */
		if (j->have != 0) {
			g = j->have;
			j->have = 0;
		}
		if (p == NULL)
			j->busy = false;
		pthread_mutex_unlock(&j->mu);
		if (p == NULL)
			continue;
		sl_error_clear(&err);
		sl_solution_init(&sol, p->n);
		rc = SL_OK;
		if (m->ilp == NULL && (m->ilp = sl_ilp_new(p, NULL, &err)) == NULL)
			rc = err.code ? err.code : SL_EINTERNAL;
		if (rc == SL_OK) {
			memset(&so, 0, sizeof so);
			c.job = j;
			c.gen = g;
			c.m = m;
			so.cancel = ui_cancel_cb;
			so.cancel_ctx = &c;
			so.time_limit = UI_ILP_TIME_LIMIT;
			rc = sl_ilp_resolve(m->ilp, p, &so, &sol, &err);
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
	if (m->ilp != NULL) {
		sl_ilp_free(m->ilp);
		m->ilp = NULL;
	}
	sl_ilp_thread_end();
	return NULL;
}

static void *
ui_sweep_thread(void *arg)
{
	ui_model *m = arg;
	struct ui_job *j = &m->sweep_job;
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
		/* a request since the take replaced the pins: they are its */
		if (j->have != 0) {
			g = j->have;
			j->have = 0;
		}
		pthread_mutex_unlock(&j->mu);
		sl_error_clear(&err);
		memset(&f, 0, sizeof f);
		/* a newer pin set, or quitting, stops this sweep between solves */
		c.job = j;
		c.gen = g;
		c.m = m;
		{
			sl_solve_opts so = { .cancel = ui_cancel_cb,
			    .cancel_ctx = &c };
			rc = sl_sweep(m->space, &cs, SL_SOLVER_DP, &so, &f,
			    &err);
		}
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

/*
 * The background search: the anytime solver on a copy of the problem for the
 * whole limit; a newer plan request (pins, forbids, alpha) cancels it.
 */
static void *
ui_search_thread(void *arg)
{
	ui_model *m = arg;
	struct ui_job *j = &m->search_job;
	sl_problem *p;
	sl_solution sol;
	sl_solve_opts so;
	struct ui_cancel c;
	sl_error err;
	unsigned g;
	int rc;

	sl_ilp_quiet();
	while ((g = ui_job_take(j)) != 0) {
		pthread_mutex_lock(&j->mu);
		p = j->prob;
		j->prob = NULL;
		if (j->have != 0) {
			g = j->have;
			j->have = 0;
		}
		if (p == NULL)
			j->busy = false;
		pthread_mutex_unlock(&j->mu);
		if (p == NULL)
			continue;
		sl_error_clear(&err);
		sl_solution_init(&sol, p->n);
		memset(&so, 0, sizeof so);
		c.job = j;
		c.gen = g;
		c.m = m;
		so.cancel = ui_cancel_cb;
		so.cancel_ctx = &c;
		so.time_limit = m->search_limit;
		so.threads = m->search_threads;
		rc = sl_solve(p, SL_SOLVER_ANYTIME, &so, &sol, &err);
		pthread_mutex_lock(&j->mu);
		j->done = g;
		j->rc = rc;
		j->objective = sol.objective;
		j->status = sol.status;
		j->time_ms = sol.time_ms;
		j->bound = sol.bound;
		free(j->choice);
		j->choice = NULL;
		if (rc == SL_OK && (sol.status == SL_SOLVE_OPTIMAL ||
		    sol.status == SL_SOLVE_FEASIBLE)) {
			j->choice = sl_xmalloc(p->n * sizeof(int));
			memcpy(j->choice, sol.choice, p->n * sizeof(int));
		}
		snprintf(j->msg, sizeof j->msg, "%.255s", err.msg);
		j->busy = false;
		pthread_mutex_unlock(&j->mu);
		sl_solution_free(&sol);
		sl_problem_free(p);
	}
	sl_ilp_thread_end();
	return NULL;
}

/*
 * Memory over time: the timeline of the plan and device asked last.  The
 * build cannot be stopped halfway, but it is O(n log n) in the operators
 * (timeline.c); a request that comes meanwhile is built next, and what was
 * built for an older one is dropped when it is taken (ui_model_poll).
 */
static void *
ui_timeline_thread(void *arg)
{
	ui_model *m = arg;
	struct ui_job *j = &m->tl_job;
	sl_timeline tl;
	sl_error err;
	unsigned g;
	int *choice, dev, rc;

	while ((g = ui_job_take(j)) != 0) {
		pthread_mutex_lock(&j->mu);
		choice = j->choice;
		j->choice = NULL;
		dev = j->dev;
		if (j->have != 0) {
			g = j->have;
			j->have = 0;
		}
		if (choice == NULL)
			j->busy = false;
		pthread_mutex_unlock(&j->mu);
		if (choice == NULL)
			continue;
		sl_error_clear(&err);
		rc = sl_timeline_build(m->space, choice, dev, true, &tl, &err);
		free(choice);
		pthread_mutex_lock(&j->mu);
		if (j->have_tl)
			sl_timeline_free(&j->tl);
		j->have_tl = rc == SL_OK;
		if (rc == SL_OK)
			j->tl = tl;
		j->done = g;
		j->rc = rc;
		sl_error_format(&err, j->msg, sizeof j->msg);
		j->busy = false;
		pthread_mutex_unlock(&j->mu);
	}
	return NULL;
}

bool
ui_model_timeline_current(const ui_model *m, int dev)
{
	return m->have_tl && m->have_sol && m->tl_dev == dev &&
	    memcmp(m->tl_choice, m->sol.choice, m->n * sizeof(int)) == 0;
}

void
ui_model_request_timeline(ui_model *m, int dev)
{
	struct ui_job *j = &m->tl_job;
	unsigned g;

	if (m->space == NULL || !m->have_sol) {
		snprintf(m->tl_err, sizeof m->tl_err, "%s",
		    _("memory over time needs a model and a plan"));
		return;
	}
	/* the one held or being built is for this plan and device */
	if (m->tl_dev == dev && (m->have_tl || m->tl_busy) &&
	    memcmp(m->tl_choice, m->sol.choice, m->n * sizeof(int)) == 0)
		return;
	if (m->tl_choice == NULL)
		m->tl_choice = sl_xmalloc(m->n * sizeof(int));
	memcpy(m->tl_choice, m->sol.choice, m->n * sizeof(int));
	m->tl_dev = dev;
	m->tl_err[0] = '\0';
	if (m->have_tl)
		sl_timeline_free(&m->tl);
	m->have_tl = false;
	pthread_mutex_lock(&j->mu);
	g = atomic_load(&j->gen) + 1;
	atomic_store(&j->gen, g);
	free(j->choice);
	j->choice = sl_xmalloc(m->n * sizeof(int));
	memcpy(j->choice, m->sol.choice, m->n * sizeof(int));
	j->dev = dev;
	j->have = g;
	m->tl_gen = g;
	m->tl_busy = true;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
	if (!j->started)
		j->started = pthread_create(&j->thread, NULL,
		    ui_timeline_thread, m) == 0;
	if (!j->started) {
		m->tl_busy = false;
		snprintf(m->tl_err, sizeof m->tl_err, "%s",
		    _("cannot start a thread to build the timeline"));
	}
}

void
ui_model_request_background(ui_model *m)
{
	struct ui_job *j;
	unsigned g;

	if (m->ilp_ok && m->dp != NULL && m->confirm == UI_CONF_RUNNING) {
		j = &m->ilp_job;
		pthread_mutex_lock(&j->mu);
		g = atomic_load(&j->gen) + 1;
		atomic_store(&j->gen, g);
		if (j->prob != NULL)
			sl_problem_free(j->prob);
		j->prob = sl_problem_copy(m->prob);
		j->have = g;
		m->confirm_gen = g;
		pthread_cond_signal(&j->cv);
		pthread_mutex_unlock(&j->mu);
		if (!j->started)
			j->started = pthread_create(&j->thread, NULL,
			    ui_ilp_thread, m) == 0;
		if (!j->started)
			m->confirm = UI_CONF_FAILED;
	}
	if (m->search == UI_SEARCH_RUNNING) {
		j = &m->search_job;
		pthread_mutex_lock(&j->mu);
		g = atomic_load(&j->gen) + 1;
		atomic_store(&j->gen, g);
		if (j->prob != NULL)
			sl_problem_free(j->prob);
		j->prob = sl_problem_copy(m->prob);
		j->have = g;
		m->search_gen = g;
		pthread_cond_signal(&j->cv);
		pthread_mutex_unlock(&j->mu);
		if (!j->started)
			j->started = pthread_create(&j->thread, NULL,
			    ui_search_thread, m) == 0;
		if (!j->started)
			m->search = UI_SEARCH_FAILED;
	} else if (m->search_job.started) {
		/* the plan is proven optimal: a search still running is moot */
		atomic_fetch_add(&m->search_job.gen, 1);
	}
	if (m->space != NULL) {
		j = &m->sweep_job;
		pthread_mutex_lock(&j->mu);
		if (atomic_load(&j->gen) != m->cs_gen) {
			atomic_store(&j->gen, m->cs_gen);
			sl_constraints_free(&j->cs);
			sl_constraints_copy(&j->cs, &m->cs);
			j->have = m->cs_gen;
			m->front_busy = true;
			pthread_cond_signal(&j->cv);
		}
		pthread_mutex_unlock(&j->mu);
		if (!j->started)
			j->started = pthread_create(&j->thread, NULL,
			    ui_sweep_thread, m) == 0;
	}
}

/* The search's better plan becomes the live one (j->mu held). */
static void
ui_search_take(ui_model *m, struct ui_job *j)
{
	sl_solution sol;
	sl_error err;

	sl_solution_init(&sol, m->n);
	memcpy(sol.choice, j->choice, m->n * sizeof(int));
	sol.objective = j->objective;
	sol.status = j->status;
	sol.solver = SL_SOLVER_ANYTIME;
	sol.time_ms = j->time_ms;
	sol.bound = m->search_bound;
	sl_error_clear(&err);
	if (ui_model_install(m, &sol, &err) == SL_OK)
		m->search = UI_SEARCH_IMPROVED;
	else
		m->search = UI_SEARCH_FAILED;
}

/*
 * Takes finished background results that still belong to the current plan:
 * GLPK's verdict, the frontier of the current pins, a validation's end.
 */
unsigned
ui_model_poll(ui_model *m, sl_error *err)
{
	struct ui_job *j = &m->ilp_job;
	cli_vresult res;
	unsigned what = 0;
	int rc;

	if (j->started) {
		pthread_mutex_lock(&j->mu);
		if (j->done != 0 && j->done == m->confirm_gen &&
		    m->confirm == UI_CONF_RUNNING) {
			if (j->rc != SL_OK || j->status == SL_SOLVE_FAILED)
				m->confirm = UI_CONF_FAILED;
			else if (j->status == SL_SOLVE_LIMIT ||
			    j->status == SL_SOLVE_CANCELLED)
				m->confirm = UI_CONF_LIMIT;
			else if (sl_ilp_verdict(m->sol.objective, j->objective) > 0)
				m->confirm = UI_CONF_YES;
			else if (sl_ilp_verdict(m->sol.objective, j->objective) == 0)
				m->confirm = UI_CONF_PRECISION;
			else
				m->confirm = UI_CONF_DIFFERS;
			what |= UI_M_CONFIRM;
		}
		pthread_mutex_unlock(&j->mu);
	}
	j = &m->sweep_job;
	if (j->started) {
		pthread_mutex_lock(&j->mu);
		if (j->done == m->cs_gen && j->done != 0 && !j->busy &&
		    m->front_busy) {
			if (m->have_front)
				sl_frontier_free(&m->front);
			m->front = j->front;
			m->have_front = j->have_front;
			memset(&j->front, 0, sizeof j->front);
			j->have_front = false;
			m->front_busy = false;
			what |= UI_M_FRONT;
		}
		pthread_mutex_unlock(&j->mu);
	}
	j = &m->search_job;
	if (j->started && m->search == UI_SEARCH_RUNNING) {
		pthread_mutex_lock(&j->mu);
		if (j->done != 0 && j->done == m->search_gen && !j->busy) {
			what |= UI_M_SEARCHED;
			m->search = UI_SEARCH_BEST;
			m->search_ms = j->time_ms;
			if (j->rc != SL_OK || j->choice == NULL) {
				if (j->status != SL_SOLVE_CANCELLED)
					m->search = UI_SEARCH_FAILED;
			} else {
				if (j->bound > m->search_bound)
					m->search_bound = j->bound;
				if (j->objective < m->sol.objective)
					ui_search_take(m, j);
			}
		}
		pthread_mutex_unlock(&j->mu);
	}
	j = &m->tl_job;
	if (j->started && m->tl_busy) {
		pthread_mutex_lock(&j->mu);
		if (j->done == m->tl_gen && !j->busy) {
			m->tl_busy = false;
			if (j->have_tl) {
				m->tl = j->tl;
				m->have_tl = true;
				j->have_tl = false;
			} else
				snprintf(m->tl_err, sizeof m->tl_err, "%s", j->msg);
			what |= UI_M_TIMELINE;
		}
		pthread_mutex_unlock(&j->mu);
	}
	if (m->vrunning) {
		rc = cli_validate_poll(&m->vjob, false, &res, err);
		if (rc != 1) {
			m->vrunning = false;
			what |= UI_M_VALIDATED;
			if (rc == SL_OK) {
				m->vres = res;
				m->have_vres = true;
			}
		}
	}
	return what;
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

/* Stops the timeline's thread and drops what it built or was asked; the
 * next request starts it again. */
static void
ui_timeline_stop(ui_model *m)
{
	struct ui_job *j = &m->tl_job;

	ui_job_stop(j, true);
	pthread_mutex_lock(&j->mu);
	j->quit = false;
	j->have = 0;
	j->busy = false;
	free(j->choice);
	j->choice = NULL;
	if (j->have_tl)
		sl_timeline_free(&j->tl);
	j->have_tl = false;
	pthread_mutex_unlock(&j->mu);
	if (m->have_tl)
		sl_timeline_free(&m->tl);
	m->have_tl = false;
	m->tl_busy = false;
	m->tl_dev = -1;
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
ui_vres_current(const ui_model *m)
{
	return m->have_vres && m->have_sol && m->vchoice != NULL &&
	    memcmp(m->vchoice, m->sol.choice, m->n * sizeof(int)) == 0;
}

void
ui_model_validate_cancel(ui_model *m)
{
	if (!m->vrunning)
		return;
	cli_validate_cancel(&m->vjob);
	m->vrunning = false;
}

void
ui_vres_errors(const ui_model *m, double *mem_err, double *time_err, int *failed)
{
	int d;

	*mem_err = *time_err = 0;
	*failed = -1;
	for (d = 0; d < m->vres.n_devices; d++) {
		const cli_vdev *v = &m->vres.dev[d];
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

int
ui_model_validate_start(ui_model *m, sl_error *err)
{
	if (m->space == NULL)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("validation needs a model: this problem has no operators to run"));
	if (!m->have_sol)
		return sl_error_set(err, SL_EINFEASIBLE, NULL, 0, 0, "%s",
		    _("no plan"));
	if (cli_validate_start(m->space, m->sol.choice, false, 0, &m->vjob,
	    err) != SL_OK)
		return err->code ? err->code : SL_EINTERNAL;
	m->vrunning = true;
	if (m->vchoice == NULL)
		m->vchoice = sl_xmalloc(m->n * sizeof(int));
	memcpy(m->vchoice, m->sol.choice, m->n * sizeof(int));
	if (m->have_vres)
		cli_vresult_free(&m->vres);
	m->have_vres = false;
	return SL_OK;
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
ui_model_init(ui_model *m, cli_session *s, const cli_opts *o, sl_error *err)
{
	int i, op, st;
	sl_error e2;

	memset(m, 0, sizeof *m);
	m->ses = s;
	m->space = s->space;
	m->prob = s->prob;
	m->source = s->source;
	m->solver = o->solver;
	m->n = m->prob->n;
	m->alpha = o->alpha;
	m->alpha_pos = ui_alpha_nearest(o->alpha);
	m->recompute = o->recipe.recompute;
	ui_job_init(&m->ilp_job);
	ui_job_init(&m->sweep_job);
	ui_job_init(&m->search_job);
	ui_job_init(&m->tl_job);
	m->tl_dev = -1;
	m->search_limit = o->time_limit > 0 ? o->time_limit :
	    UI_SEARCH_TIME_LIMIT;
	m->search_threads = o->threads;
	m->mem_limit = o->mem_limit;

	m->pin = sl_xmalloc(m->n * sizeof(int));
	m->forbid = sl_xcalloc(m->n, sizeof(uint8_t *));
	for (i = 0; i < m->n; i++) {
		m->pin[i] = -1;
		m->forbid[i] = sl_xcalloc(ui_op_k(m, i), 1);
	}
	for (i = 0; i < o->cs.n; i++) {
		op = ui_find_op(m, o->cs.c[i].op);
		st = op < 0 ? -1 : ui_find_strat(m, op, o->cs.c[i].strategy);
		if (op < 0 || st < 0)
			return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("unknown operator or strategy: %s=%s"),
			    o->cs.c[i].op, o->cs.c[i].strategy);
		if (o->cs.c[i].pin)
			m->pin[op] = st;
		else
			m->forbid[op][st] = 1;
	}
	m->cs_gen = 1;
	m->prev_choice = sl_xcalloc(m->n, sizeof(int));
	m->changed = sl_xcalloc(m->n, sizeof(int));
	m->export_choice = sl_xcalloc(m->n, sizeof(int));

	if (m->solver == SL_SOLVER_AUTO || m->solver == SL_SOLVER_DP) {
		sl_error_clear(&e2);
		m->dp = sl_dp_new(m->prob, NULL, &e2);
		if (m->dp == NULL && m->solver == SL_SOLVER_DP)
			return sl_error_set(err, e2.code ? e2.code : SL_EINTERNAL,
			    NULL, 0, 0, "%s", e2.msg);
		if (m->dp == NULL)
			m->solver = SL_SOLVER_AUTO;
	}
	m->search_ok = m->dp == NULL && (m->solver == SL_SOLVER_ANYTIME ||
	    (m->solver == SL_SOLVER_AUTO && sl_solve_auto_searches(m->prob)));
	m->ilp_ok = m->prob->usage_limit < 0 &&
	    ui_ilp_vars(m->prob) <= UI_ILP_MAX_VARS;

	if (ui_model_resolve(m, err) != SL_OK)
		return err->code;
	memcpy(m->export_choice, m->sol.choice, m->n * sizeof(int));
	m->export_alpha = m->alpha;
	return SL_OK;
}

void
ui_model_free(ui_model *m)
{
	int i;

	/*
	 * GLPK and the sweep poll their cancel flags and stop soon; this waits
	 * for them (the caller frees the space they read next).
	 */
	ui_model_validate_cancel(m);
	if (m->have_vres)
		cli_vresult_free(&m->vres);
	free(m->vchoice);
	ui_job_stop(&m->ilp_job, true);
	ui_job_stop(&m->sweep_job, true);
	ui_job_stop(&m->search_job, true);
	ui_timeline_stop(m);
	free(m->tl_choice);
	if (m->search_job.prob != NULL)
		sl_problem_free(m->search_job.prob);
	free(m->search_job.choice);
	if (m->sweep_job.have_front)
		sl_frontier_free(&m->sweep_job.front);
	sl_constraints_free(&m->sweep_job.cs);
	if (m->ilp_job.prob != NULL)
		sl_problem_free(m->ilp_job.prob);
	if (m->dp != NULL)
		sl_dp_free(m->dp);
	if (m->have_sol)
		sl_solution_free(&m->sol);
	if (m->have_ev)
		sl_eval_free(&m->ev);
	if (m->have_front)
		sl_frontier_free(&m->front);
	sl_constraints_free(&m->cs);
	if (m->forbid != NULL)
		for (i = 0; i < m->n; i++)
			free(m->forbid[i]);
	free(m->forbid);
	free(m->pin);
	free(m->prev_choice);
	free(m->changed);
	free(m->export_choice);
}

/* ----------------------------------------------------------------- exports */

int
ui_model_export_plan(ui_model *m, const char *path, sl_error *err)
{
	sl_plan_meta meta;

	if (m->space == NULL)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("plans can only be exported for models"));
	memset(&meta, 0, sizeof meta);
	meta.model_source = m->source;
	meta.alpha = m->alpha;
	meta.sol = &m->sol;
	meta.cs = &m->cs;
	if (sl_plan_write(m->space, m->sol.choice, &m->ev, &meta, path,
	    err) != SL_OK)
		return err->code;
	memcpy(m->export_choice, m->sol.choice, m->n * sizeof(int));
	m->export_alpha = m->alpha;
	return SL_OK;
}

