/*
 * test_graph.c: graph construction and validation: every rule of
 * sl_graph_validate gives its own error, naming the operator.
 */
#include "testutil.h"
#include "mlp.h"

static int
T(sl_graph *g, const char *n, int r, int64_t a, int64_t b, int64_t c, sl_role role)
{
	int64_t d[3] = { a, b, c };
	sl_error err;

	sl_error_clear(&err);
	return sl_graph_add_tensor(g, n, r, d, SL_DT_BF16, role, &err);
}

static void
expect_invalid(sl_graph *g, const char *needle)
{
	sl_error err;

	sl_error_clear(&err);
	assert_int_equal(sl_graph_validate(g, "m.json", &err), SL_EINPUT);
	if (strstr(err.msg, needle) == NULL)
		fail_msg("expected '%s' in '%s'", needle, err.msg);
	assert_string_equal(err.file, "m.json");
	sl_graph_free(g);
}

static void
test_mlp_valid(void **state)
{
	sl_graph *g = tu_mlp();

	assert_non_null(g);
	assert_int_equal(g->n_ops, 3);
	assert_int_equal(g->n_layers, 2);
	assert_int_equal(g->ops[1].layer, 0);
	assert_int_equal(g->ops[1].pos, 1);
	assert_int_equal(g->ops[2].pos, 0);
	assert_int_equal(sl_graph_param_count(g), 2 * 512 * 2048);
	assert_int_equal(g->tensors[sl_graph_find_tensor(g, "g")].producer, 1);
	sl_graph_free(g);
}

static void
test_shape_mismatch(void **state)
{
	sl_graph *g = sl_graph_new("m");
	sl_error err;
	int x = T(g, "x", 2, 8, 512, 0, SL_ROLE_INPUT);
	int w = T(g, "w", 2, 500, 64, 0, SL_ROLE_PARAMETER);
	int y = T(g, "y", 2, 8, 64, 0, SL_ROLE_ACTIVATION);
	int in[2] = { x, w };

	sl_error_clear(&err);
	assert_true(sl_graph_add_op(g, "fc", SL_OP_MATMUL, 2, in, 1, &y, NULL, &err) >= 0);
	g->ops[0].src_line = 7;
	g->ops[0].src_col = 5;
	sl_error_clear(&err);
	assert_int_equal(sl_graph_validate(g, "m.json", &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "inner dimensions differ"));
	assert_int_equal(err.line, 7);
	assert_int_equal(err.column, 5);
	sl_graph_free(g);
}

static void
test_cycle(void **state)
{
	sl_graph *g = sl_graph_new("m");
	sl_error err;
	int a = T(g, "a", 2, 4, 4, 0, SL_ROLE_ACTIVATION);
	int b = T(g, "b", 2, 4, 4, 0, SL_ROLE_ACTIVATION);

	sl_error_clear(&err);
	sl_graph_add_op(g, "f", SL_OP_GELU, 1, &a, 1, &b, NULL, &err);
	sl_graph_add_op(g, "h", SL_OP_GELU, 1, &b, 1, &a, NULL, &err);
	expect_invalid(g, "cycle");
}

static void
test_unproduced(void **state)
{
	sl_graph *g = sl_graph_new("m");
	sl_error err;
	int a = T(g, "a", 2, 4, 4, 0, SL_ROLE_ACTIVATION);
	int b = T(g, "b", 2, 4, 4, 0, SL_ROLE_ACTIVATION);

	sl_error_clear(&err);
	sl_graph_add_op(g, "f", SL_OP_GELU, 1, &a, 1, &b, NULL, &err);
	expect_invalid(g, "no operator writes it");
}

static void
test_two_writers(void **state)
{
	sl_graph *g = sl_graph_new("m");
	sl_error err;
	int x = T(g, "x", 2, 4, 4, 0, SL_ROLE_INPUT);
	int b = T(g, "b", 2, 4, 4, 0, SL_ROLE_ACTIVATION);

	sl_error_clear(&err);
	sl_graph_add_op(g, "f", SL_OP_GELU, 1, &x, 1, &b, NULL, &err);
	sl_graph_add_op(g, "h", SL_OP_RELU, 1, &x, 1, &b, NULL, &err);
	expect_invalid(g, "another operator writes too");
}

static void
test_bad_dims(void **state)
{
	sl_graph *g = sl_graph_new("m");
	sl_error err;
	int x = T(g, "x", 2, 4, -3, 0, SL_ROLE_INPUT);
	int b = T(g, "b", 2, 4, -3, 0, SL_ROLE_ACTIVATION);

	sl_error_clear(&err);
	sl_graph_add_op(g, "f", SL_OP_GELU, 1, &x, 1, &b, NULL, &err);
	expect_invalid(g, "expected a positive integer");

	g = sl_graph_new("m");
	x = T(g, "x", 3, (int64_t)1 << 30, (int64_t)1 << 30, (int64_t)1 << 30, SL_ROLE_INPUT);
	b = T(g, "b", 3, (int64_t)1 << 30, (int64_t)1 << 30, (int64_t)1 << 30, SL_ROLE_ACTIVATION);
	sl_graph_add_op(g, "f", SL_OP_GELU, 1, &x, 1, &b, NULL, &err);
	expect_invalid(g, "too large");
}

static void
test_duplicates_and_arity(void **state)
{
	sl_graph *g = sl_graph_new("m");
	sl_error err;
	int x = T(g, "x", 2, 4, 4, 0, SL_ROLE_INPUT);
	int b = T(g, "b", 2, 4, 4, 0, SL_ROLE_ACTIVATION);
	int in[2] = { x, x };

	assert_int_equal(T(g, "x", 2, 1, 1, 0, SL_ROLE_INPUT), -1);
	sl_error_clear(&err);
	assert_true(sl_graph_add_op(g, "f", SL_OP_GELU, 2, in, 1, &b, NULL, &err) >= 0);
	sl_error_clear(&err);
	assert_int_equal(sl_graph_add_op(g, "f", SL_OP_GELU, 1, in, 1, &b, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "twice"));
	expect_invalid(g, "needs 1 inputs");
}

static void
test_layers_contiguous(void **state)
{
	sl_graph *g = sl_graph_new("m");
	sl_error err;
	int x = T(g, "x", 2, 4, 4, 0, SL_ROLE_INPUT);
	int a = T(g, "a", 2, 4, 4, 0, SL_ROLE_ACTIVATION);
	int b = T(g, "b", 2, 4, 4, 0, SL_ROLE_ACTIVATION);
	int c = T(g, "c", 2, 4, 4, 0, SL_ROLE_ACTIVATION);

	sl_error_clear(&err);
	assert_true(sl_graph_add_op(g, "f", SL_OP_GELU, 1, &x, 1, &a, "L0", &err) >= 0);
	assert_true(sl_graph_add_op(g, "h", SL_OP_GELU, 1, &a, 1, &b, "L1", &err) >= 0);
	assert_int_equal(sl_graph_add_op(g, "k", SL_OP_GELU, 1, &b, 1, &c, "L0", &err), -1);
	assert_non_null(strstr(err.msg, "together"));
	sl_graph_free(g);
}

static void
test_kind_names(void **state)
{
	for (int k = 0; k < SL_OP_KIND_COUNT; k++)
		assert_int_equal(sl_op_kind_from_name(sl_op_kind_name(k)), k);
	assert_int_equal(sl_op_kind_from_name("conv2d"), -1);
	assert_int_equal(sl_dtype_from_name("bf16"), SL_DT_BF16);
	assert_int_equal(sl_dtype_size(SL_DT_F32), 4);
	assert_int_equal(sl_role_from_name("parameter"), SL_ROLE_PARAMETER);
}

static void
test_attention_shapes(void **state)
{
	sl_graph *g = sl_graph_new("m");
	sl_error err;
	/* GQA: 8 query heads, 2 kv heads, head dim 16: qkv = (8 + 4) x 16 = 192 */
	int q = T(g, "qkv", 3, 2, 32, 192, SL_ROLE_INPUT);
	int o = T(g, "o", 3, 2, 32, 128, SL_ROLE_ACTIVATION);

	sl_error_clear(&err);
	sl_graph_add_op(g, "attn", SL_OP_ATTENTION, 1, &q, 1, &o, NULL, &err);
	g->ops[0].heads = 8;
	g->ops[0].kv_heads = 2;
	assert_int_equal(sl_graph_validate(g, "m", &err), SL_OK);
	g->ops[0].kv_heads = 3;
	expect_invalid(g, "kv_heads must divide heads");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mlp_valid),
		cmocka_unit_test(test_shape_mismatch),
		cmocka_unit_test(test_cycle),
		cmocka_unit_test(test_unproduced),
		cmocka_unit_test(test_two_writers),
		cmocka_unit_test(test_bad_dims),
		cmocka_unit_test(test_duplicates_and_arity),
		cmocka_unit_test(test_layers_contiguous),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_attention_shapes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
