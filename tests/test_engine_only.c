/*
 * test_engine_only.c: the wall between the engine and its front ends.  This
 * program links the engine library alone (no curses, no Graphviz) and runs
 * the whole pipeline: generate, enumerate, solve, evaluate, write and read a
 * plan.  Were the engine to call curses or Graphviz, it would not link; the
 * weak references below also catch those libraries creeping into the link.
 */
#include "testutil.h"

#include <stdlib.h>
#include <unistd.h>

extern void *initscr(void) __attribute__((weak));
extern void *gvContext(void) __attribute__((weak));

static void
test_no_ui_libraries(void **state)
{
	assert_null((void *)initscr);
	assert_null((void *)gvContext);
}

static void
test_pipeline(void **state)
{
	sl_gen_config c;
	sl_graph *g;
	sl_hw hw;
	sl_mesh m;
	sl_space *s;
	sl_problem *p;
	sl_solution sol;
	sl_eval ev;
	sl_error err;
	sl_plan_file pf;
	int shape[2] = { 2, 2 }, *back;
	char path[] = "/tmp/shardlab-engine-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	sl_error_clear(&err);
	sl_gen_defaults(SL_FAM_GPT, &c);
	c.batch = 4;
	g = sl_gen(&c, &err);
	assert_non_null(g);
	assert_int_equal(sl_hw_load("h100-nvlink", &hw, &err), SL_OK);
	assert_int_equal(sl_mesh_make(&hw, 2, shape, &m, &err), SL_OK);
	s = sl_space_build(g, &m, NULL, &err);
	assert_non_null(s);
	p = sl_space_problem(s, 0, NULL, &err);
	assert_non_null(p);
	sl_solution_init(&sol, p->n);
	assert_int_equal(sl_solve(p, SL_SOLVER_AUTO, NULL, &sol, &err), SL_OK);
	assert_int_equal(sol.status, SL_SOLVE_OPTIMAL);
	assert_int_equal(sl_evaluate(s, sol.choice, 0, &ev, &err), SL_OK);
	assert_int_equal(ev.objective, sol.objective);
	{
		sl_plan_meta meta = { .model_source = "gen:gpt", .alpha = 0, .sol = &sol };
		assert_int_equal(sl_plan_write(s, sol.choice, &ev, &meta, path, &err), SL_OK);
	}
	assert_int_equal(sl_plan_read(path, &pf, &err), SL_OK);
	back = calloc(g->n_ops, sizeof *back);
	assert_int_equal(sl_plan_choice(s, &pf, back, &err), SL_OK);
	assert_memory_equal(back, sol.choice, g->n_ops * sizeof *back);
	free(back);
	sl_plan_file_free(&pf);
	unlink(path);
	sl_eval_free(&ev);
	sl_solution_free(&sol);
	sl_problem_free(p);
	sl_space_free(s);
	sl_graph_free(g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_ui_libraries),
		cmocka_unit_test(test_pipeline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
