/*
 * problem.c: the pairwise min-sum problem every solver sees (a strategy
 * graph built from a model, or an IOPDDL problem): allocation, copying,
 * scoring a choice, peak memory usage over liveness intervals, pins and
 * forbids given by name, solutions, and the names of solvers and statuses.
 */
#include "internal.h"

#include <stdlib.h>

sl_problem *
sl_problem_new(int n, const int *k, int m, const int (*edge)[2])
{
	return sl_problem_new_rows(n, k, m, edge, true);
}

sl_problem *
sl_problem_new_rows(int n, const int *k, int m, const int (*edge)[2],
    bool cost_rows)
{
	sl_problem *p = sl_xcalloc(1, sizeof *p);

	p->n = n;
	p->m = m;
	p->k = sl_xcalloc((size_t)n, sizeof *p->k);
	p->cost = sl_xcalloc((size_t)n, sizeof *p->cost);
	p->allowed = sl_xcalloc((size_t)n, sizeof *p->allowed);
	p->layer = sl_xmalloc((size_t)n * sizeof *p->layer);
	p->pos = sl_xmalloc((size_t)n * sizeof *p->pos);
	for (int v = 0; v < n; v++) {
		p->k[v] = k[v];
		if (cost_rows)
			p->cost[v] = sl_xcalloc((size_t)k[v], sizeof **p->cost);
		p->allowed[v] = sl_xmalloc((size_t)k[v]);
		memset(p->allowed[v], 1, (size_t)k[v]);
		p->layer[v] = -1;
		p->pos[v] = -1;
	}
	p->edge = sl_xcalloc((size_t)m, sizeof *p->edge);
	p->ecost = sl_xcalloc((size_t)m, sizeof *p->ecost);
	for (int e = 0; e < m; e++) {
		int u = edge[e][0], v = edge[e][1];
		p->edge[e][0] = u;
		p->edge[e][1] = v;
		p->ecost[e] = sl_xcalloc((size_t)k[u] * (size_t)k[v],
		    sizeof **p->ecost);
	}
	p->usage_limit = -1;
	return p;
}

void
sl_problem_free(sl_problem *p)
{
	if (p == NULL)
		return;
	for (int v = 0; v < p->n; v++) {
		free(p->cost[v]);
		free(p->allowed[v]);
		if (p->usage != NULL)
			free(p->usage[v]);
		if (p->node_name != NULL)
			free(p->node_name[v]);
		if (p->strat_name != NULL && p->strat_name[v] != NULL) {
			for (int s = 0; s < p->k[v]; s++)
				free(p->strat_name[v][s]);
			free(p->strat_name[v]);
		}
	}
	for (int e = 0; e < p->m; e++)
		free(p->ecost[e]);
	free(p->name);
	free(p->k);
	free(p->cost);
	free(p->allowed);
	free(p->edge);
	free(p->ecost);
	free(p->interval);
	free(p->usage);
	free(p->layer);
	free(p->pos);
	free(p->node_name);
	free(p->strat_name);
	free(p);
}

sl_problem *
sl_problem_copy(const sl_problem *p)
{
	sl_problem *q = sl_problem_new(p->n, p->k, p->m,
	    (const int (*)[2])p->edge);

	q->name = p->name != NULL ? sl_xstrdup(p->name) : NULL;
	for (int v = 0; v < p->n; v++) {
		memcpy(q->cost[v], p->cost[v], (size_t)p->k[v] * sizeof **p->cost);
		memcpy(q->allowed[v], p->allowed[v], (size_t)p->k[v]);
		if (p->layer != NULL)
			q->layer[v] = p->layer[v];
		if (p->pos != NULL)
			q->pos[v] = p->pos[v];
	}
	for (int e = 0; e < p->m; e++)
		memcpy(q->ecost[e], p->ecost[e], (size_t)p->k[p->edge[e][0]] *
		    (size_t)p->k[p->edge[e][1]] * sizeof **p->ecost);
	if (p->interval != NULL) {
		q->interval = sl_xmalloc((size_t)p->n * sizeof *q->interval);
		memcpy(q->interval, p->interval, (size_t)p->n * sizeof *q->interval);
	}
	if (p->usage != NULL) {
		q->usage = sl_xcalloc((size_t)p->n, sizeof *q->usage);
		for (int v = 0; v < p->n; v++) {
			q->usage[v] = sl_xmalloc((size_t)p->k[v] * sizeof **q->usage);
			memcpy(q->usage[v], p->usage[v],
			    (size_t)p->k[v] * sizeof **q->usage);
		}
	}
	q->usage_limit = p->usage_limit;
	if (p->node_name != NULL) {
		q->node_name = sl_xcalloc((size_t)p->n, sizeof *q->node_name);
		for (int v = 0; v < p->n; v++)
			if (p->node_name[v] != NULL)
				q->node_name[v] = sl_xstrdup(p->node_name[v]);
	}
	if (p->strat_name != NULL) {
		q->strat_name = sl_xcalloc((size_t)p->n, sizeof *q->strat_name);
		for (int v = 0; v < p->n; v++) {
			if (p->strat_name[v] == NULL)
				continue;
			q->strat_name[v] = sl_xcalloc((size_t)p->k[v],
			    sizeof **q->strat_name);
			for (int s = 0; s < p->k[v]; s++)
				if (p->strat_name[v][s] != NULL)
					q->strat_name[v][s] =
					    sl_xstrdup(p->strat_name[v][s]);
		}
	}
	return q;
}

static bool
problem_choice_valid(const sl_problem *p, const int *choice)
{
	for (int v = 0; v < p->n; v++)
		if (choice[v] < 0 || choice[v] >= p->k[v] ||
		    !p->allowed[v][choice[v]])
			return false;
	return true;
}

int64_t
sl_problem_score(const sl_problem *p, const int *choice)
{
	int64_t sum = 0;

	if (!problem_choice_valid(p, choice))
		return INT64_MAX;
	for (int v = 0; v < p->n; v++)
		sum = sl_add_sat(sum, p->cost[v][choice[v]]);
	for (int e = 0; e < p->m; e++) {
		int u = p->edge[e][0], v = p->edge[e][1];
		sum = sl_add_sat(sum,
		    p->ecost[e][(size_t)choice[u] * p->k[v] + choice[v]]);
	}
	return sum;
}

struct problem_event {
	int64_t t;
	int64_t delta;
};

static int
problem_event_cmp(const void *a, const void *b)
{
	const struct problem_event *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	/* Intervals are half-open: at equal times, ends before starts. */
	if ((x->delta < 0) != (y->delta < 0))
		return x->delta < 0 ? -1 : 1;
	return 0;
}

/*
 * IOPDDL semantics: at every time t the usage is the sum over the nodes whose
 * interval [lo, hi) contains t; the peak is its maximum.  A sweep over the
 * sorted interval ends.
 */
int64_t
sl_problem_peak_usage(const sl_problem *p, const int *choice)
{
	struct problem_event *ev;
	int64_t cur = 0, peak = 0;
	size_t n = 0;

	if (p->interval == NULL || p->usage == NULL || p->n == 0)
		return 0;
	ev = sl_xmalloc(2 * (size_t)p->n * sizeof *ev);
	for (int v = 0; v < p->n; v++) {
		int64_t u;
		if (choice[v] < 0 || choice[v] >= p->k[v])
			continue;
		u = p->usage[v][choice[v]];
		if (p->interval[v][0] >= p->interval[v][1] || u == 0)
			continue;
		ev[n].t = p->interval[v][0];
		ev[n++].delta = u;
		ev[n].t = p->interval[v][1];
		ev[n++].delta = -u;
	}
	qsort(ev, n, sizeof *ev, problem_event_cmp);
	for (size_t i = 0; i < n; ) {
		int64_t t = ev[i].t;
		/* Apply every event at time t, then look at the level. */
		while (i < n && ev[i].t == t) {
			cur = sl_add_sat(cur, ev[i].delta);
			i++;
		}
		if (cur > peak)
			peak = cur;
	}
	free(ev);
	return peak;
}

bool
sl_problem_feasible(const sl_problem *p, const int *choice)
{
	if (!problem_choice_valid(p, choice))
		return false;
	if (p->usage_limit < 0 || p->interval == NULL || p->usage == NULL)
		return true;
	return sl_problem_peak_usage(p, choice) <= p->usage_limit;
}

/* ------------------------------------------------------------ constraints */

void
sl_constraints_add(sl_constraints *cs, const char *op, const char *strat,
    bool pin)
{
	if (cs->n == cs->cap) {
		cs->cap = cs->cap ? 2 * cs->cap : 8;
		cs->c = sl_xrealloc(cs->c, (size_t)cs->cap * sizeof *cs->c);
	}
	cs->c[cs->n].op = sl_xstrdup(op);
	cs->c[cs->n].strategy = sl_xstrdup(strat);
	cs->c[cs->n].opi = cs->c[cs->n].sti = -1;
	cs->c[cs->n].pin = pin;
	cs->n++;
}

void
sl_constraints_copy(sl_constraints *dst, const sl_constraints *src)
{
	memset(dst, 0, sizeof *dst);
	for (int i = 0; src != NULL && i < src->n; i++) {
		sl_constraints_add(dst, src->c[i].op, src->c[i].strategy,
		    src->c[i].pin);
		dst->c[i].opi = src->c[i].opi;
		dst->c[i].sti = src->c[i].sti;
	}
}

int
sl_constraints_parse(sl_constraints *cs, const char *arg, bool pin,
    sl_error *err)
{
	sl_setting what = pin ? SL_SET_PIN : SL_SET_FORBID;
	const char *eq;
	char *op;

	if (arg == NULL || (eq = strrchr(arg, '=')) == NULL)
		return sl_error_about(err, SL_EINPUT, what,
		    _("expects OP=STRATEGY, got '%s'"), arg ? arg : "");
	if (eq == arg)
		return sl_error_about(err, SL_EINPUT, what,
		    _("'%s': the operator name is empty"), arg);
	if (eq[1] == '\0')
		return sl_error_about(err, SL_EINPUT, what,
		    _("'%s': the strategy name is empty"), arg);
	op = sl_xmalloc((size_t)(eq - arg) + 1);
	memcpy(op, arg, (size_t)(eq - arg));
	op[eq - arg] = '\0';
	sl_constraints_add(cs, op, eq + 1, pin);
	free(op);
	return SL_OK;
}

void
sl_constraints_free(sl_constraints *cs)
{
	if (cs == NULL)
		return;
	for (int i = 0; i < cs->n; i++) {
		free(cs->c[i].op);
		free(cs->c[i].strategy);
	}
	free(cs->c);
	memset(cs, 0, sizeof *cs);
}

/* -------------------------------------------------------------- solutions */

void
sl_solution_init(sl_solution *s, int n)
{
	memset(s, 0, sizeof *s);
	s->n = n;
	s->choice = sl_xcalloc((size_t)(n > 0 ? n : 1), sizeof *s->choice);
	s->objective = INT64_MAX;
	s->status = SL_SOLVE_FAILED;
	s->solver = SL_SOLVER_AUTO;
	s->bound = INT64_MIN;
	s->first_ms = -1;
}

void
sl_solution_free(sl_solution *s)
{
	if (s == NULL)
		return;
	free(s->choice);
	s->choice = NULL;
	s->n = 0;
}

static const char *const problem_status_names[] = {
	[SL_SOLVE_OPTIMAL] = "optimal",
	[SL_SOLVE_FEASIBLE] = "feasible",
	[SL_SOLVE_INFEASIBLE] = "infeasible",
	[SL_SOLVE_LIMIT] = "limit",
	[SL_SOLVE_CANCELLED] = "cancelled",
	[SL_SOLVE_FAILED] = "failed",
};

const char *
sl_solve_status_name(sl_solve_status s)
{
	if ((unsigned)s >= SL_ARRAY_LEN(problem_status_names))
		return "unknown";
	return problem_status_names[s];
}

static const char *const problem_solver_names[] = {
	[SL_SOLVER_AUTO] = "auto",
	[SL_SOLVER_DP] = "dp",
	[SL_SOLVER_ILP] = "ilp",
	[SL_SOLVER_BRUTE] = "brute",
	[SL_SOLVER_ANYTIME] = "anytime",
};

const char *
sl_solver_name(sl_solver_kind k)
{
	if ((unsigned)k >= SL_ARRAY_LEN(problem_solver_names))
		return "unknown";
	return problem_solver_names[k];
}

int
sl_solver_from_name(const char *s)
{
	if (s == NULL)
		return -1;
	for (size_t i = 0; i < SL_ARRAY_LEN(problem_solver_names); i++)
		if (strcmp(s, problem_solver_names[i]) == 0)
			return (int)i;
	return -1;
}
