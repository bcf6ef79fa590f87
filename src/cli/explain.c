/*
 * explain.c: `shardlab explain`, the teaching text of one operator's
 * strategy (built by the engine's explain.c) in the plan at the user's alpha.
 */
#include "cli.h"

#include <stdlib.h>

static int
cmd_explain(int argc, char **argv)
{
	cli_opts o;
	cli_session s;
	sl_solution sol;
	sl_error err;
	int rc, op, st;
	char *text;
	bool have_sol = false;
	sl_problem *prob = NULL;

	sl_error_clear(&err);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);
	if (o.op == NULL) {
		cli_opts_free(&o);
		sl_error_set(&err, SL_EINPUT, NULL, 0, 0, "%s",
		    _("usage: shardlab explain MODEL --op NAME [--strategy S] [OPTIONS]"));
		return cli_report(&err);
	}
	if ((rc = cli_open(&o, false, &s, &err)) != SL_OK || s.is_iopddl) {
		if (rc == SL_OK)
			rc = sl_error_set(&err, SL_EINPUT, s.source, 0, 0, "%s",
			    _("explain needs a model: an IOPDDL problem has no tensors"));
		cli_close(&s);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	if ((op = sl_graph_find_op(s.g, o.op)) < 0) {
		rc = sl_error_set(&err, SL_EINPUT, NULL, 0, 0,
		    _("--op: model %s has no operator named '%s' (see shardlab show %s)"),
		    s.g->name, o.op, s.source);
		rc = cli_report(&err);
		goto out;
	}
	if (o.strategy != NULL) {
		if ((st = sl_space_find_strategy(s.space, op, o.strategy)) < 0) {
			char list[512];
			size_t n = 0;
			list[0] = '\0';
			for (int j = 0; j < s.space->ops[op].n_strat && n < sizeof list - 40; j++)
				n += snprintf(list + n, sizeof list - n, "%s%s", j ? ", " : "",
				    s.space->ops[op].strat[j].name);
			sl_error_set(&err, SL_EINPUT, NULL, 0, 0,
			    _("--strategy: operator '%s' has no strategy '%s' on this mesh (it has: %s)"),
			    o.op, o.strategy, list);
			rc = cli_report(&err);
			goto out;
		}
		/* the neighbours come from the best plan around this choice */
		sl_constraints_add(&o.cs, o.op, o.strategy, true);
		if ((prob = sl_space_problem(s.space, o.alpha, &o.cs, &err)) == NULL) {
			rc = cli_report(&err);
			goto out;
		}
	}
	sl_solution_init(&sol, s.prob->n);
	have_sol = true;
	rc = sl_space_solve(s.space, prob != NULL ? prob : s.prob, o.alpha, NULL,
	    o.solver, NULL, &sol, &err);
	if (rc != SL_OK) {
		rc = cli_report(&err);
		goto out;
	}
	if (sol.status != SL_SOLVE_OPTIMAL && sol.status != SL_SOLVE_FEASIBLE) {
		fprintf(stderr, _("shardlab: no plan to take the neighbours from (%s)\n"),
		    sl_solve_status_name(sol.status));
		rc = SL_EINFEASIBLE;
		goto out;
	}
	st = sol.choice[op];
	if ((text = sl_explain(s.space, sol.choice, op, st, &err)) == NULL) {
		rc = cli_report(&err);
		goto out;
	}
	{
		char mn[256];
		printf(_("model %s\n"), cli_model_str(s.g, mn, sizeof mn));
	}
	/* line by line: the names inside are escaped, the newlines kept */
	for (char *line = text, *nl; *line != '\0'; line = nl + 1) {
		if ((nl = strchr(line, '\n')) == NULL)
			nl = line + strlen(line) - 1;
		else
			*nl = '\0';
		printf("%s\n", sl_esc(line));
		if (nl[1] == '\0')
			break;
	}
	if (o.strategy != NULL)
		printf(_("\n(neighbours from the best plan at alpha %g with %s pinned to %s)\n"),
		    o.alpha, o.op, o.strategy);
	else
		printf(_("\n(the strategy and its neighbours from the plan at alpha %g)\n"),
		    o.alpha);
	free(text);
out:
	if (have_sol)
		sl_solution_free(&sol);
	sl_problem_free(prob);
	cli_close(&s);
	cli_opts_free(&o);
	return rc;
}

const struct cli_cmd cli_cmd_explain = {
	.name = "explain",
	.bit = CLI_C_EXPLAIN,
	.usage = N_("explain MODEL --op NAME [--strategy S] [OPTIONS]"),
	.help = N_("what one operator's strategy stores, moves and costs, step by step"),
	.run = cmd_explain,
};
