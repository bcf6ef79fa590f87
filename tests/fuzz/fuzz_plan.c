/*
 * fuzz_plan.c: libFuzzer target for mapping a plan onto a model: the input
 * is read as a plan and mapped onto the strategy space of the bundled
 * mlp-2layer on 4 devices (its first valid plan is in tests/fuzz/corpus).
 */
#include "fuzz_common.h"
#include "shardlab.h"

#include <stdlib.h>

static sl_graph *g;
static sl_space *sp;

static void
setup(void)
{
	sl_model_opts mo = { .micro_batch = 1, .devices = 4 };
	sl_space_opts so = { .zero = true };
	int shape[1] = { 4 };
	sl_mesh mesh;
	sl_error err;
	sl_hw hw;

	sl_error_clear(&err);
	if (sl_hw_load("h100-nvlink", &hw, &err) != SL_OK ||
	    sl_mesh_make(&hw, 1, shape, &mesh, &err) != SL_OK ||
	    (g = sl_model_open("mlp-2layer", &mo, &err)) == NULL ||
	    (sp = sl_space_build(g, &mesh, &so, &err)) == NULL) {
		fprintf(stderr, "fuzz_plan: %s\n", err.msg);
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], warn[1024];
	int fd, choice[64];
	sl_plan_file pf;
	sl_error err;

	if (g == NULL)
		setup();
	if ((fd = fuzz_file(data, size, path, sizeof path)) < 0)
		return 0;
	sl_error_clear(&err);
	if (sl_plan_read(path, &pf, &err) == SL_OK) {
		sl_error_clear(&err);
		if (g->n_ops <= 64 && sl_plan_choice(sp, &pf, choice, &err) == SL_OK)
			(void)sl_plan_model_changed(&pf, g, warn, sizeof warn);
		sl_plan_file_free(&pf);
	}
	close(fd);
	return 0;
}
