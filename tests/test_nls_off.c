/*
 * test_nls_off.c: the engine built without NLS (configure --disable-nls).
 * This program compiles explain.c again without config.h, so ENABLE_NLS is
 * not defined, and links it ahead of the library's copy: its plurals then
 * come from internal.h's fallback for ngettext, the one place the engine
 * and the front ends both see.  Were the fallback missing, explain.c would
 * call ngettext undeclared (an int where a pointer goes: GCC 14 rejects
 * the file) or not build at all.  The check: on 3 devices the 8 rows of x
 * split 3, 3, 2, and the explanation names "devices 0-1" and "device 2".
 */
#include "testutil.h"
#include "mlp.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#ifdef ENABLE_NLS
#error "test_nls_off.c must be built without ENABLE_NLS"
#endif
#ifndef ngettext
#error "internal.h defines no ngettext fallback without NLS"
#endif

static void
test_fallback(void **state)
{
	assert_string_equal(ngettext("%d layer", "%d layers", 1), "%d layer");
	assert_string_equal(ngettext("%d layer", "%d layers", 0), "%d layers");
	assert_string_equal(ngettext("%d layer", "%d layers", 2), "%d layers");
	assert_string_equal(_("plain"), "plain");
}

static void
test_explain_plurals(void **state)
{
	sl_graph *g = tu_mlp();
	sl_mesh m;
	sl_error err;
	sl_space *s;
	char *t;
	int *choice;

	sl_error_clear(&err);
	assert_int_equal(tu_mesh("h100-nvlink", 1, 3, 1, &m), 0);
	s = sl_space_build(g, &m, NULL, &err);
	assert_non_null(s);
	choice = calloc((size_t)g->n_ops, sizeof *choice);
	/* fc1 split over the batch: x's 8 rows as 3, 3, 2 */
	choice[0] = sl_space_find_strategy(s, 0, "dp");
	assert_true(choice[0] >= 0);
	t = sl_explain(s, choice, 0, choice[0], &err);
	assert_non_null(t);
	assert_non_null(strstr(t, "devices 0-1: [3, 512]"));
	assert_non_null(strstr(t, "device 2: [2, 512]"));
	free(t);
	free(choice);
	sl_space_free(s);
	sl_graph_free(g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fallback),
		cmocka_unit_test(test_explain_plurals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
