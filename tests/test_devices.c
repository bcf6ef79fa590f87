/*
 * test_devices.c: the fewest devices that fit (pipe_suggest.c,
 * sl_hybrid_min_devices) against a brute-force count: the hybrid search
 * run at every device count from 1, the first that finds a plan under the
 * memory limit.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt3.h"

/* The first count from 1 to hi whose search fits, 0 for none. */
static int
brute_min(sl_hybrid_opts *o, int hi, int64_t *step_ns)
{
	for (int n = 1; n <= hi; n++) {
		sl_hybrid_result r;
		sl_error err;
		bool found;

		sl_error_clear(&err);
		o->devices = n;
		assert_int_equal(sl_hybrid_search(o, &r, &err), SL_OK);
		found = r.found;
		if (found)
			*step_ns = r.best.step_ns;
		sl_hybrid_result_free(&r);
		if (found)
			return n;
	}
	return 0;
}

static void
check_case(sl_family fam, int layers, int64_t batch, int64_t mem,
    sl_finetune ft, sl_framework fw, int expect_lo, int expect_hi)
{
	sl_gen_config gc;
	sl_hybrid_opts o;
	sl_hybrid_result r;
	sl_error err;
	int n, lower, brute;
	int64_t step = 0;

	sl_gen_defaults(fam, &gc);
	gc.layers = layers;
	/* GPT-2 small's layers; LLaMA layers of 1024 */
	gc.hidden = fam == SL_FAM_GPT ? 768 : 1024;
	gc.heads = gc.kv_heads = fam == SL_FAM_GPT ? 12 : 16;
	gc.ffn = fam == SL_FAM_GPT ? 3072 : 2816;
	gc.vocab = fam == SL_FAM_GPT ? 50257 : 32000;
	gc.seq = 1024;
	sl_error_clear(&err);
	sl_hybrid_opts_default(&o);
	assert_int_equal(sl_hw_load("a100-sxm", &o.hw, &err), SL_OK);
	o.model = gen_model_fn;
	o.model_ctx = &gc;
	o.global_batch = batch;
	o.mem_limit = mem;
	o.space.recipe.finetune = ft;
	o.space.recipe.lora_rank = 16;
	/* as plan sets a framework's recipe (cli/plan.c, cli_hybrid_opts) */
	o.space.recipe.framework = fw;
	o.space.recipe.precision = sl_framework_precision(fw);
	o.space.recipe.shard_states = fw == SL_FW_FREE ? -1 :
	    fw == SL_FW_MEGATRON || fw == SL_FW_DEEPSPEED;
	assert_int_equal(sl_hybrid_min_devices(&o, 0, &n, &lower, &r, &err), SL_OK);
	brute = brute_min(&o, lower * 4 > lower + 63 ? lower * 4 : lower + 63, &step);
	fprintf(stderr, "# %d layers, batch %lld, %lld bytes: fewest %d (brute force "
	    "%d), lower bound %d\n", layers, (long long)batch, (long long)mem, n,
	    brute, lower);
	assert_int_equal(n, brute);
	assert_true(lower <= n);
	/* the case is one where the answer is neither 1 nor the bound alone */
	assert_in_range(n, expect_lo, expect_hi);
	assert_true(r.found);
	assert_int_equal(r.best.step_ns, step);
	sl_hybrid_result_free(&r);
}

/*
 * Counts are legal where the search finds a configuration: devices = pipeline
 * x sub-mesh, the data-parallel degree dividing the global batch, the
 * framework's rules (Megatron-LM: tensor parallelism dividing the heads
 * within a node; per-operator plans: any sub-mesh).  Fitting is not monotone
 * in the count, which is why every count is tried.
 */
static void
test_min_devices(void **state)
{
	(void)state;
	/* GPT-2 small's layers under 400 MB: 7 devices per-operator, the
	 * states alone needing 4 */
	check_case(SL_FAM_GPT, 8, 24, 400000000, SL_FT_NONE, SL_FW_FREE, 5, 12);
	check_case(SL_FAM_GPT, 8, 24, 400000000, SL_FT_NONE, SL_FW_MEGATRON, 5, 24);
	check_case(SL_FAM_LLAMA, 6, 16, 800000000, SL_FT_NONE, SL_FW_FREE, 3, 8);
	/* LoRA leaves the frozen weights alone: fewer devices */
	check_case(SL_FAM_LLAMA, 6, 16, 400000000, SL_FT_LORA, SL_FW_FREE, 2, 6);
	check_case(SL_FAM_LLAMA, 6, 16, 400000000, SL_FT_LORA, SL_FW_MEGATRON, 2, 8);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_min_devices),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
