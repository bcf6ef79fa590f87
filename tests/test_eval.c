/*
 * test_eval.c: solved plans against the evaluator and against baseline
 * plans formed by pinning (pure data parallel, Megatron-style tensor
 * parallel).  At alpha = 0 no baseline may use less memory per device; at a
 * large alpha none may communicate less.
 */
#include "testutil.h"
#include "mlp.h"

#define BIG_ALPHA 1e12	/* 1 ns of communication weighs 1 GB */

typedef struct {
	int64_t mem;	/* max memory per device */
	int64_t comm;
	int64_t objective;
} outcome;

/* Solves s at alpha under cs; checks solver and evaluator agree. */
static outcome
solve(const sl_space *s, double alpha, const sl_constraints *cs, sl_solver_kind kind)
{
	sl_error err;
	sl_problem *p;
	sl_solution sol;
	sl_eval ev;
	outcome o;

	sl_error_clear(&err);
	p = sl_space_problem(s, alpha, cs, &err);
	assert_non_null(p);
	sl_solution_init(&sol, p->n);
	assert_int_equal(sl_solve(p, kind, NULL, &sol, &err), SL_OK);
	assert_int_equal(sol.status, SL_SOLVE_OPTIMAL);
	assert_int_equal(sl_problem_score(p, sol.choice), sol.objective);
	assert_int_equal(sl_evaluate(s, sol.choice, alpha, &ev, &err), SL_OK);
	/* the evaluator, walking the model afresh, scores the plan as the solver did */
	assert_int_equal(ev.objective, sol.objective);
	/* device 0 holds the largest shard of everything */
	assert_int_equal(ev.mem_part, sl_mem_total(&ev.dev[0]));
	assert_int_equal(ev.max_total, sl_mem_total(&ev.dev[0]));
	o.mem = ev.max_total;
	o.comm = ev.comm_ns;
	o.objective = sol.objective;
	sl_eval_free(&ev);
	sl_solution_free(&sol);
	sl_problem_free(p);
	return o;
}

/* Pins every operator that has a strategy of role name r (per axis) . */
static void
pin_role(const sl_space *s, sl_constraints *cs, int v, const char *name)
{
	if (sl_space_find_strategy(s, v, name) >= 0)
		sl_constraints_add(cs, s->g->ops[v].name, name, true);
}

static void
dp_pins(const sl_space *s, sl_constraints *cs)
{
	const char *dp = s->mesh.n_axes == 1 ? "dp" : "dp01";

	for (int v = 0; v < s->g->n_ops; v++)
		pin_role(s, cs, v, dp);
}

/* Megatron: column-parallel then row-parallel matmuls, head-split attention,
 * vocabulary-parallel embedding and loss over the inner axis; data parallel
 * over the outer axis on a 2-D mesh. */
static void
megatron_pins(const sl_space *s, sl_constraints *cs)
{
	const sl_graph *g = s->g;
	bool two = s->mesh.n_axes == 2;

	for (int v = 0; v < g->n_ops; v++) {
		const char *nm = g->ops[v].name, *dot = strrchr(nm, '.');
		const char *base = dot ? dot + 1 : nm;
		const char *r = NULL;
		char buf[32];

		if (!strcmp(base, "qkv") || !strcmp(base, "fc1") || !strcmp(base, "lm_head") ||
		    !strcmp(base, "gate") || !strcmp(base, "up"))
			r = "col";
		else if (!strcmp(base, "proj") || !strcmp(base, "fc2") || !strcmp(base, "down"))
			r = "row";
		else if (!strcmp(base, "attn"))
			r = "head";
		else if (!strcmp(base, "embed") || !strcmp(base, "loss"))
			r = "vocab";
		else if (!strcmp(base, "gelu"))
			r = "col";
		if (r == NULL)
			continue;
		if (two)
			snprintf(buf, sizeof buf, "dp0.%s1", r);
		else
			snprintf(buf, sizeof buf, "%s", r);
		pin_role(s, cs, v, buf);
	}
}

static void
compare_to_baselines(const sl_space *s)
{
	sl_constraints dp = { 0 }, mg = { 0 };
	outcome ours0, oursbig, b;

	dp_pins(s, &dp);
	megatron_pins(s, &mg);
	assert_true(dp.n > 0);
	assert_true(mg.n > 0);
	ours0 = solve(s, 0, NULL, SL_SOLVER_AUTO);
	oursbig = solve(s, BIG_ALPHA, NULL, SL_SOLVER_AUTO);

	b = solve(s, 0, &dp, SL_SOLVER_AUTO);
	assert_true(ours0.mem <= b.mem);
	b = solve(s, BIG_ALPHA, &dp, SL_SOLVER_AUTO);
	assert_true(oursbig.comm <= b.comm);

	b = solve(s, 0, &mg, SL_SOLVER_AUTO);
	assert_true(ours0.mem <= b.mem);
	b = solve(s, BIG_ALPHA, &mg, SL_SOLVER_AUTO);
	assert_true(oursbig.comm <= b.comm);

	/* the two ends of the trade-off really differ in the expected directions */
	assert_true(ours0.mem <= oursbig.mem);
	assert_true(oursbig.comm <= ours0.comm);
	sl_constraints_free(&dp);
	sl_constraints_free(&mg);
}

static void
test_mlp_baselines(void **state)
{
	static const int shapes[][3] = { { 1, 2, 1 }, { 1, 4, 1 }, { 2, 2, 2 } };

	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		sl_graph *g = tu_mlp();
		sl_mesh m;
		sl_error err;
		sl_space *s;

		sl_error_clear(&err);
		assert_int_equal(tu_mesh("h100-nvlink", shapes[i][0], shapes[i][1],
		    shapes[i][2], &m), 0);
		s = sl_space_build(g, &m, NULL, &err);
		assert_non_null(s);
		compare_to_baselines(s);
		sl_space_free(s);
		sl_graph_free(g);
	}
}

static sl_graph *
small_gpt(int devices)
{
	sl_gen_config c;
	sl_error err;

	sl_error_clear(&err);
	sl_gen_defaults(SL_FAM_GPT, &c);
	c.layers = 2;
	c.hidden = 256;
	c.heads = 4;
	c.ffn = 1024;
	c.seq = 128;
	c.vocab = 1000;
	c.batch = devices;
	return sl_gen(&c, &err);
}

static void
test_gpt_baselines(void **state)
{
	static const int shapes[][3] = { { 1, 4, 1 }, { 2, 2, 2 } };

	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		sl_graph *g = small_gpt(shapes[i][1] * shapes[i][2]);
		sl_mesh m;
		sl_error err;
		sl_space *s;

		assert_non_null(g);
		sl_error_clear(&err);
		assert_int_equal(tu_mesh("h100-nvlink", shapes[i][0], shapes[i][1],
		    shapes[i][2], &m), 0);
		s = sl_space_build(g, &m, NULL, &err);
		assert_non_null(s);
		compare_to_baselines(s);
		sl_space_free(s);
		sl_graph_free(g);
	}
}

/* Three solvers, one optimum: brute force, DP and GLPK on the MLP. */
static void
test_mlp_three_solvers(void **state)
{
	sl_graph *g = tu_mlp();
	sl_mesh m;
	sl_error err;
	sl_space *s;
	double alphas[] = { 0, 1, 1000, 1e6 };

	sl_error_clear(&err);
	assert_int_equal(tu_mesh("h100-nvlink", 2, 2, 2, &m), 0);
	s = sl_space_build(g, &m, NULL, &err);
	assert_non_null(s);
	for (size_t i = 0; i < 4; i++) {
		outcome a = solve(s, alphas[i], NULL, SL_SOLVER_BRUTE);
		outcome b = solve(s, alphas[i], NULL, SL_SOLVER_DP);
		outcome c = solve(s, alphas[i], NULL, SL_SOLVER_ILP);
		assert_int_equal(a.objective, b.objective);
		assert_int_equal(a.objective, c.objective);
	}
	sl_space_free(s);
	sl_graph_free(g);
}

/* Pins hold, forbids hold, and conflicting pins are refused before solving. */
static void
test_constraints(void **state)
{
	sl_graph *g = tu_mlp();
	sl_mesh m;
	sl_error err;
	sl_space *s;
	sl_constraints cs = { 0 };
	sl_problem *p;
	sl_solution sol;

	sl_error_clear(&err);
	assert_int_equal(tu_mesh("h100-nvlink", 1, 4, 1, &m), 0);
	s = sl_space_build(g, &m, NULL, &err);

	sl_constraints_add(&cs, "fc1", "dp", true);
	sl_constraints_add(&cs, "fc2", "row", false);
	p = sl_space_problem(s, 0, &cs, &err);
	assert_non_null(p);
	sl_solution_init(&sol, p->n);
	assert_int_equal(sl_solve(p, SL_SOLVER_AUTO, NULL, &sol, &err), SL_OK);
	assert_string_equal(s->ops[0].strat[sol.choice[0]].name, "dp");
	assert_string_not_equal(s->ops[2].strat[sol.choice[2]].name, "row");
	sl_solution_free(&sol);
	sl_problem_free(p);

	/* pinned and forbidden at once: infeasible, naming both */
	sl_constraints_add(&cs, "fc1", "dp", false);
	sl_error_clear(&err);
	assert_null(sl_space_problem(s, 0, &cs, &err));
	assert_int_equal(err.code, SL_EINFEASIBLE);
	assert_non_null(strstr(err.msg, "fc1"));
	assert_non_null(strstr(err.msg, "dp"));
	sl_constraints_free(&cs);

	/* two different pins on one operator */
	sl_constraints_add(&cs, "gelu", "dp", true);
	sl_constraints_add(&cs, "gelu", "col", true);
	sl_error_clear(&err);
	assert_null(sl_space_problem(s, 0, &cs, &err));
	assert_int_equal(err.code, SL_EINFEASIBLE);
	assert_non_null(strstr(err.msg, "col"));
	sl_constraints_free(&cs);

	/* unknown names are bad input, listing what exists */
	sl_constraints_add(&cs, "gelu", "nosuch", true);
	sl_error_clear(&err);
	assert_null(sl_space_problem(s, 0, &cs, &err));
	assert_int_equal(err.code, SL_EINPUT);
	assert_non_null(strstr(err.msg, "rep"));
	sl_constraints_free(&cs);
	sl_constraints_add(&cs, "nosuch", "dp", false);
	sl_error_clear(&err);
	assert_null(sl_space_problem(s, 0, &cs, &err));
	assert_int_equal(err.code, SL_EINPUT);
	sl_constraints_free(&cs);

	/* by index, as the explorer gives them: the same allowed sets as by
	 * name, the names kept (and copied) for plan files, a pin against a
	 * forbid caught the same way, an index out of range bad input */
	{
		sl_constraints byname = { 0 }, copy;
		sl_problem *q;
		int dp = sl_space_find_strategy(s, 0, "dp");
		int row = sl_space_find_strategy(s, 2, "row");

		sl_constraints_add(&byname, "fc1", "dp", true);
		sl_constraints_add(&byname, "fc2", "row", false);
		sl_constraints_add_index(&cs, s, 0, dp, true);
		sl_constraints_add_index(&cs, s, 2, row, false);
		assert_string_equal(cs.c[1].op, "fc2");
		assert_string_equal(cs.c[1].strategy, "row");
		sl_constraints_copy(&copy, &cs);
		assert_int_equal(copy.c[1].sti, row);
		p = sl_space_problem(s, 0, &byname, &err);
		q = sl_space_problem(s, 0, &copy, &err);
		assert_non_null(p);
		assert_non_null(q);
		for (int v = 0; v < p->n; v++)
			assert_memory_equal(p->allowed[v], q->allowed[v],
			    (size_t)p->k[v]);
		sl_problem_free(p);
		sl_problem_free(q);
		sl_constraints_add_index(&copy, s, 0, dp, false);
		sl_error_clear(&err);
		assert_null(sl_space_problem(s, 0, &copy, &err));
		assert_int_equal(err.code, SL_EINFEASIBLE);
		assert_non_null(strstr(err.msg, "fc1"));
		copy.c[2].sti = s->ops[0].n_strat;
		sl_error_clear(&err);
		assert_null(sl_space_problem(s, 0, &copy, &err));
		assert_int_equal(err.code, SL_EINPUT);
		sl_constraints_free(&byname);
		sl_constraints_free(&copy);
		sl_constraints_free(&cs);
	}

	sl_space_free(s);
	sl_graph_free(g);
}

/* Strategy names and specs on a 2-D mesh. */
static void
test_strategy_names(void **state)
{
	sl_graph *g = tu_mlp();
	sl_mesh m;
	sl_error err;
	sl_space *s;
	int i;
	char buf[64];

	sl_error_clear(&err);
	assert_int_equal(tu_mesh("h100-nvlink", 2, 2, 4, &m), 0);
	s = sl_space_build(g, &m, NULL, &err);
	/* fc1 loop dims: dp (8), row (512), col (2048) */
	assert_true(sl_space_find_strategy(s, 0, "rep") == 0);
	i = sl_space_find_strategy(s, 0, "dp0.col1");
	assert_true(i >= 0);
	/* w1 [512,2048]: columns over axis 1 */
	assert_string_equal(sl_spec_format(&s->ops[0].strat[i].spec[1], 2, buf, sizeof buf), "R,S1");
	i = sl_space_find_strategy(s, 0, "dp0.row1");
	/* y of a row-parallel matmul is a partial sum over axis 1 */
	assert_string_equal(sl_spec_format(&s->ops[0].strat[i].spec[2], 2, buf, sizeof buf), "S0,R|P1");
	assert_true(sl_space_find_strategy(s, 0, "dp01") >= 0);
	assert_true(sl_space_find_strategy(s, 0, "dp01+z") >= 0);
	i = sl_space_find_strategy(s, 0, "dp0.col1+z");
	assert_string_equal(sl_spec_format(&s->ops[0].strat[i].spec[1], 2, buf, sizeof buf), "R,S1|Z0");
	/* batch 8 cannot be split 8 ways and then some: no dp with col on the same axis */
	assert_true(sl_space_find_strategy(s, 0, "dp1.col1") < 0);
	sl_space_free(s);
	sl_graph_free(g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strategy_names),
		cmocka_unit_test(test_constraints),
		cmocka_unit_test(test_mlp_three_solvers),
		cmocka_unit_test(test_mlp_baselines),
		cmocka_unit_test(test_gpt_baselines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
