/*
 * test_ui_model.c: the explorer's model without a screen.  This program
 * links ui/ui_model.c with the engine and no curses or Graphviz (a model
 * that reached for them would not link) and drives it as the keys do: pins
 * and forbids re-solve the plan, a change that leaves no plan is undone,
 * clearing counts what it cleared, and the alpha steps visit the frontier's
 * plans in order.  Figures are the engine's or a hand calculation.
 */
#include "ui_model.h"
#include "testutil.h"

#include <stdlib.h>
#include <unistd.h>


struct fixture {
	cli_session s;
	cli_opts o;
	ui_model m;
};

static int
open_model(struct fixture *f, const char *model, int ndev)
{
	sl_hw hw;
	sl_model_opts mo = { 0 };
	sl_space_opts so = { .zero = true };
	sl_error err;
	static char *args[1];

	memset(f, 0, sizeof *f);
	sl_error_clear(&err);
	f->o.n_axes = 1;
	f->o.shape[0] = ndev;
	f->o.hw = "h100-nvlink";
	f->o.solver = SL_SOLVER_AUTO;
	f->o.micro_batch = 1;
	f->o.mem_limit = -1;
	args[0] = (char *)model;
	f->o.args = args;
	f->o.n_args = 1;
	if (sl_hw_load(f->o.hw, &hw, &err) != SL_OK ||
	    sl_mesh_make(&hw, 1, &ndev, &f->s.mesh, &err) != SL_OK)
		return -1;
	mo.micro_batch = 1;
	mo.devices = ndev;
	f->s.source = model;
	if ((f->s.g = sl_model_open(model, &mo, &err)) == NULL ||
	    (f->s.space = sl_space_build(f->s.g, &f->s.mesh, &so, &err)) == NULL ||
	    (f->s.prob = sl_space_problem(f->s.space, 0, NULL, &err)) == NULL ||
	    ui_model_init(&f->m, &f->s, &f->o, &err) != SL_OK) {
		print_error("%s\n", err.msg);
		return -1;
	}
	return 0;
}

static void
close_model(struct fixture *f)
{
	ui_model_free(&f->m);
	sl_problem_free(f->s.prob);
	sl_space_free(f->s.space);
	sl_graph_free(f->s.g);
}

static int
op_of(struct fixture *f, const char *name)
{
	int op = sl_graph_find_op(f->s.g, name);

	assert_true(op >= 0);
	return op;
}

static int
strat_of(struct fixture *f, int op, const char *name)
{
	int s = sl_space_find_strategy(f->s.space, op, name);

	assert_true(s >= 0);
	return s;
}

/* Pins every operator of the MLP replicated, one at a time, as p does. */
static void
test_pins_resolve(void **state)
{
	struct fixture f;
	sl_solution bf;
	sl_error err;
	const char *ops[3] = { "fc1", "gelu", "fc2" };
	/* w1, w2: 512*2048 elements x 16 B each; saved: x 8x512, h1 and g
	 * 8x2048, all bf16. */
	const int64_t hand = 2 * 512 * 2048 * 16LL + (8 * 512 + 2 * 8 * 2048) * 2LL;
	int i, op, cleared;

	assert_int_equal(open_model(&f, "mlp-2layer", 4), 0);
	assert_true(f.m.have_sol);
	sl_error_clear(&err);
	sl_solution_init(&bf, f.m.n);
	assert_int_equal(sl_solve_brute(f.s.prob, NULL, &bf, &err), SL_OK);
	assert_int_equal(f.m.sol.objective, bf.objective);
	sl_solution_free(&bf);
	assert_false(ui_plan_changed(&f.m));

	for (i = 0; i < 3; i++) {
		op = op_of(&f, ops[i]);
		assert_int_equal(ui_model_constrain(&f.m, &op, 1, op,
		    strat_of(&f, op, "rep"), UI_ACT_PIN, &cleared, &err), SL_OK);
		assert_int_equal(f.m.sol.choice[op], strat_of(&f, op, "rep"));
	}
	assert_int_equal(f.m.cs.n, 3);
	assert_int_equal(sl_mem_total(&f.m.ev.dev[0]), hand);
	assert_int_equal(sl_mem_total(&f.m.ev.dev[3]), hand);
	assert_true(ui_plan_changed(&f.m));

	/* u on fc2: one operator had a pin */
	op = op_of(&f, "fc2");
	assert_int_equal(ui_model_constrain(&f.m, &op, 1, op, 0, UI_ACT_CLEAR,
	    &cleared, &err), SL_OK);
	assert_int_equal(cleared, 1);
	assert_int_equal(f.m.pin[op], -1);
	assert_int_equal(f.m.cs.n, 2);
	/* again: nothing left to clear */
	assert_int_equal(ui_model_constrain(&f.m, &op, 1, op, 0, UI_ACT_CLEAR,
	    &cleared, &err), SL_OK);
	assert_int_equal(cleared, 0);
	close_model(&f);
}

/* Forbidding the last strategy of an operator is undone, with the reason. */
static void
test_infeasible_undone(void **state)
{
	struct fixture f;
	sl_error err;
	int op, s, k, n, cleared;
	int64_t before;

	assert_int_equal(open_model(&f, "mlp-2layer", 4), 0);
	op = op_of(&f, "gelu");
	k = f.s.space->ops[op].n_strat;
	for (s = 0; s < k - 1; s++) {
		sl_error_clear(&err);
		assert_int_equal(ui_model_constrain(&f.m, &op, 1, op, s,
		    UI_ACT_FORBID, &cleared, &err), SL_OK);
	}
	before = f.m.sol.objective;
	assert_int_equal(f.m.sol.choice[op], k - 1);
	sl_error_clear(&err);
	assert_int_not_equal(ui_model_constrain(&f.m, &op, 1, op, k - 1,
	    UI_ACT_FORBID, &cleared, &err), SL_OK);
	assert_true(err.msg[0] != '\0');
	for (s = 0, n = 0; s < k; s++)
		n += f.m.forbid[op][s];
	assert_int_equal(n, k - 1);
	assert_true(f.m.have_sol);
	assert_int_equal(f.m.sol.objective, before);
	close_model(&f);
}

/* P at every layer: the same position in all 24 layers of gpt-1.7b. */
static void
test_every_layer(void **state)
{
	struct fixture f;
	sl_error err;
	int op, *ops, n, i, s, cleared;

	assert_int_equal(open_model(&f, "gpt-1.7b", 4), 0);
	op = op_of(&f, "layer0.qkv");
	ops = calloc(f.m.n, sizeof(int));
	n = ui_same_position(&f.m, op, ops);
	assert_int_equal(n, 24);
	for (i = 0; i < n; i++)
		assert_int_equal(f.s.g->ops[ops[i]].layer, i);
	s = strat_of(&f, op, "dp");
	sl_error_clear(&err);
	assert_int_equal(ui_model_constrain(&f.m, ops, n, op, s, UI_ACT_PIN,
	    &cleared, &err), SL_OK);
	for (i = 0; i < n; i++)
		assert_string_equal(ui_strat_name(&f.m, ops[i],
		    f.m.sol.choice[ops[i]]), "dp");
	assert_int_equal(ui_model_constrain(&f.m, ops, n, op, s, UI_ACT_CLEAR,
	    &cleared, &err), SL_OK);
	assert_int_equal(cleared, 24);
	free(ops);
	close_model(&f);
}

/*
 * The frontier arrives from the background sweep; stepping from alpha 0
 * visits each of its plans in order, each with its memory and time, and
 * stops at the last.
 */
static void
test_alpha_steps(void **state)
{
	struct fixture f;
	sl_error err;
	bool on;
	unsigned what = 0;
	int i, n;

	assert_int_equal(open_model(&f, "gpt-1.7b", 8), 0);
	for (i = 0; i < 6000 && !(what & UI_M_FRONT); i++) {
		what |= ui_model_poll(&f.m, &err);
		if (!(what & UI_M_FRONT))
			usleep(10000);
	}
	assert_true(f.m.have_front);
	n = f.m.front.n;
	assert_true(n >= 3);
	sl_error_clear(&err);
	assert_int_equal(ui_model_set_alpha(&f.m, ui_model_alpha_scaled(&f.m, 0),
	    &err), SL_OK);
	assert_true(f.m.alpha == 0);
	for (i = 0; i < n; i++) {
		assert_int_equal(ui_front_index(&f.m), i);
		assert_int_equal(f.m.ev.mem_part, f.m.front.pt[i].mem);
		assert_int_equal(f.m.ev.comm_ns, f.m.front.pt[i].comm_ns);
		assert_int_equal(ui_model_set_alpha(&f.m,
		    ui_model_alpha_step(&f.m, 1, &on), &err), SL_OK);
		assert_true(on);
	}
	assert_int_equal(ui_front_index(&f.m), n - 1);
	/* ten times larger from 0 starts the log scale at 0.1 */
	assert_true(ui_model_alpha_scaled(&f.m, 0) == 0);
	close_model(&f);
}

/* Polls until the background search of f ends (at most a minute). */
static unsigned
wait_search(struct fixture *f)
{
	sl_error err;
	unsigned what = 0;

	sl_error_clear(&err);
	for (int i = 0; i < 6000 && f->m.search == UI_SEARCH_RUNNING; i++) {
		what |= ui_model_poll(&f->m, &err);
		if (f->m.search == UI_SEARCH_RUNNING)
			usleep(10000);
	}
	return what;
}

/*
 * A problem the DP does not take is searched: the live plan is the search's
 * first plan, the search goes on in the background and its better plan
 * replaces the live one; a pin supersedes a running search.  Three nodes,
 * each "light" (usage 1; cost 100, 100 and 50) or "heavy" (usage 2, cost 1),
 * one time step, limit 5: at most two heavy, so the optimum keeps the third
 * light, 1 + 1 + 50 = 52, and 100 + 1 + 1 = 102 with the first pinned
 * light.  The search starts from the least-usage plan (250).  Two more
 * nodes (n 5) of 1,100 strategies that cost nothing and use no memory keep the
 * problem beyond the anytime solver's exact shortcuts (enumeration below
 * 2e5 assignments, GLPK below 2,000 strategies under a short limit), so
 * that the search itself runs.
 */
static sl_problem *
three_nodes(int n)
{
	int k[5] = { 2, 2, 2, 1100, 1100 };
	sl_problem *p = sl_problem_new(n, k, 0, NULL);

	p->interval = calloc(5, sizeof *p->interval);
	p->usage = calloc(5, sizeof *p->usage);
	for (int v = 3; v < n; v++)
		p->usage[v] = calloc(1100, sizeof **p->usage);
	for (int v = 0; v < 3; v++) {
		p->cost[v][0] = v == 2 ? 50 : 100;
		p->cost[v][1] = 1;
		p->interval[v][0] = 0;
		p->interval[v][1] = 1;
		p->usage[v] = calloc(2, sizeof **p->usage);
		p->usage[v][0] = 1;
		p->usage[v][1] = 2;
	}
	p->usage_limit = 5;
	return p;
}

static void
test_background_search(void **state)
{
	struct fixture f;
	int op = 0, cleared;
	sl_problem *p = three_nodes(3);
	sl_solution bf;
	sl_error err;
	unsigned what;

	sl_solution_init(&bf, 3);
	sl_error_clear(&err);
	assert_int_equal(sl_solve_brute(p, NULL, &bf, &err), SL_OK);
	assert_int_equal(bf.objective, 52);
	sl_solution_free(&bf);
	sl_problem_free(p);
	p = three_nodes(5);

	memset(&f, 0, sizeof f);
	f.o.solver = SL_SOLVER_ANYTIME;
	f.o.time_limit = 0.5;
	f.s.prob = p;
	f.s.source = "three.json";
	assert_int_equal(ui_model_init(&f.m, &f.s, &f.o, &err), SL_OK);
	assert_true(f.m.search_ok);
	assert_true(f.m.have_sol);
	assert_true(f.m.sol.objective >= 52);
	what = wait_search(&f);
	assert_true(what & UI_M_SEARCHED);
	assert_int_equal(f.m.sol.objective, 52);
	assert_true(f.m.search == UI_SEARCH_IMPROVED ||
	    f.m.search == UI_SEARCH_BEST);
	assert_true(sl_problem_feasible(p, f.m.sol.choice));

	/* pin the first node light: a new search for the new problem */
	assert_int_equal(ui_model_constrain(&f.m, &op, 1, op, 0, UI_ACT_PIN,
	    &cleared, &err), SL_OK);
	assert_int_equal(f.m.sol.choice[0], 0);
	wait_search(&f);
	assert_int_equal(f.m.sol.objective, 102);
	assert_int_equal(f.m.sol.choice[0], 0);
	assert_true(f.m.search == UI_SEARCH_IMPROVED ||
	    f.m.search == UI_SEARCH_BEST);
	ui_model_free(&f.m);
	sl_problem_free(p);
}

/*
 * M sets a memory limit: each re-solve is then the plan fitted under it
 * (sl_fit_plan, as solve --mem-limit takes it), the same plan, pins and
 * alpha included; a limit below every plan leaves the least-memory plan
 * with fit_none; no limit gives the optimum at alpha back.
 */
static void
test_mem_limit(void **state)
{
	struct fixture f;
	sl_error err;
	int64_t free_mem, least;
	sl_fit r;
	sl_fit_opts fo = { .alpha = 1e7, .fold = SL_FOLD_PEAK,
	    .solver = SL_SOLVER_DP };

	(void)state;
	assert_int_equal(open_model(&f, "gpt-1.7b", 4), 0);
	sl_error_clear(&err);
	assert_int_equal(ui_model_set_alpha(&f.m, 1e7, &err), SL_OK);
	free_mem = f.m.ev.max_total;
	/* the least memory of any plan: a limit of one byte fits none */
	assert_int_equal(ui_model_set_mem_limit(&f.m, 1, &err), SL_OK);
	assert_true(f.m.fit_none);
	least = f.m.fit_least;
	{
		/* the least found is the peak of the plan shown */
		sl_timeline tl;
		assert_int_equal(sl_timeline_build(f.m.space, f.m.sol.choice, 0,
		    false, &tl, &err), SL_OK);
		assert_int_equal(tl.peak, least);
		sl_timeline_free(&tl);
	}
	assert_true(f.m.ev.max_total < free_mem);
	/* half way between the least peak found and the optimum's: fitted,
	 * the plan sl_fit_plan gives */
	assert_int_equal(ui_model_set_mem_limit(&f.m, 0, &err), SL_OK);
	{
		sl_timeline tl;
		assert_int_equal(sl_timeline_build(f.m.space, f.m.sol.choice, 0,
		    false, &tl, &err), SL_OK);
		fo.limit = least + (tl.peak - least) / 2;
		sl_timeline_free(&tl);
	}
	assert_int_equal(ui_model_set_mem_limit(&f.m, fo.limit, &err), SL_OK);
	assert_false(f.m.fit_none);
	assert_true(f.m.fit_searched);
	assert_int_equal(sl_fit_plan(f.s.space, f.s.prob, &fo, &r, &err), SL_OK);
	assert_true(r.fits);
	assert_memory_equal(r.sol.choice, f.m.sol.choice, f.m.n * sizeof(int));
	assert_int_equal(r.sol.objective, f.m.sol.objective);
	sl_fit_free(&r);
	/* no limit: the optimum at alpha again */
	assert_int_equal(ui_model_set_mem_limit(&f.m, 0, &err), SL_OK);
	assert_int_equal(f.m.ev.max_total, free_mem);
	assert_false(f.m.fit_searched);
	close_model(&f);
}

/* Polls until the timeline asked for has come (at most a minute). */
static unsigned
wait_timeline(struct fixture *f)
{
	sl_error err;
	unsigned what = 0;

	sl_error_clear(&err);
	for (int i = 0; i < 6000 && f->m.tl_busy; i++) {
		what |= ui_model_poll(&f->m, &err);
		if (f->m.tl_busy)
			usleep(10000);
	}
	return what;
}

/*
 * Memory over time is built off the caller's thread: asking returns before
 * the timeline is there, polling brings the one sl_timeline_build makes for
 * the plan and device, asking again for them builds nothing, another
 * device or a change of the costs (recomputation) builds anew.
 */
static void
test_timeline_background(void **state)
{
	struct fixture f;
	sl_timeline want;
	sl_error err;
	unsigned gen;

	assert_int_equal(open_model(&f, "gpt-1.7b", 8), 0);
	assert_false(ui_model_timeline_current(&f.m, 3));
	ui_model_request_timeline(&f.m, 3);
	/* asked, not built here: the flag is up until a poll takes it */
	assert_true(f.m.tl_busy);
	assert_false(f.m.have_tl);
	assert_true(wait_timeline(&f) & UI_M_TIMELINE);
	assert_true(f.m.have_tl);
	assert_true(ui_model_timeline_current(&f.m, 3));
	sl_error_clear(&err);
	assert_int_equal(sl_timeline_build(f.m.space, f.m.sol.choice, 3, true,
	    &want, &err), SL_OK);
	assert_int_equal(f.m.tl.dev, 3);
	assert_int_equal(f.m.tl.peak, want.peak);
	assert_int_equal(f.m.tl.peak_pos, want.peak_pos);
	assert_int_equal(f.m.tl.n_tasks, want.n_tasks);
	assert_memory_equal(f.m.tl.order, want.order, want.n_tasks * sizeof(int));
	sl_timeline_free(&want);

	gen = f.m.tl_gen;
	ui_model_request_timeline(&f.m, 3);
	assert_int_equal(f.m.tl_gen, gen);
	assert_false(f.m.tl_busy);

	/* another device, asked twice before it is built: the last one comes */
	ui_model_request_timeline(&f.m, 5);
	ui_model_request_timeline(&f.m, 0);
	assert_true(wait_timeline(&f) & UI_M_TIMELINE);
	assert_true(ui_model_timeline_current(&f.m, 0));
	assert_int_equal(f.m.tl.dev, 0);

	/* new costs: the timeline of the old ones is dropped */
	assert_int_equal(ui_model_set_recompute(&f.m, SL_RECOMP_FULL, &err), SL_OK);
	assert_false(ui_model_timeline_current(&f.m, 0));
	ui_model_request_timeline(&f.m, 0);
	assert_true(wait_timeline(&f) & UI_M_TIMELINE);
	assert_int_equal(sl_timeline_build(f.m.space, f.m.sol.choice, 0, true,
	    &want, &err), SL_OK);
	assert_int_equal(f.m.tl.peak, want.peak);
	sl_timeline_free(&want);
	close_model(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pins_resolve),
		cmocka_unit_test(test_infeasible_undone),
		cmocka_unit_test(test_every_layer),
		cmocka_unit_test(test_alpha_steps),
		cmocka_unit_test(test_background_search),
		cmocka_unit_test(test_mem_limit),
		cmocka_unit_test(test_timeline_background),
	};
	const char *dd = getenv("SHARDLAB_DATADIR");
	char path[4096];

	if (dd == NULL) {
		snprintf(path, sizeof path, "%s/../data",
		    getenv("TESTS_SRCDIR") ? getenv("TESTS_SRCDIR") : "tests");
		setenv("SHARDLAB_DATADIR", path, 1);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
