/* fuzz_model.c: libFuzzer target for the model JSON parser. */
#include "shardlab.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sl_error err;
	sl_graph *g;

	sl_error_clear(&err);
	g = sl_model_parse_json((const char *)data, size, "fuzz.json", &err);
	if (g != NULL) {
		sl_error e2;
		sl_hw hw;
		sl_mesh m;
		int shape[2] = { 2, 2 };
		sl_space *s;

		sl_error_clear(&e2);
		/* a parsed model must go through the cost model without trouble */
		memset(&hw, 0, sizeof hw);
		hw.devices_per_node = 8;
		hw.intra.bandwidth = hw.inter.bandwidth = 1e11;
		hw.intra.latency = hw.inter.latency = 1e-6;
		if (g->n_ops <= 64 && sl_mesh_make(&hw, 2, shape, &m, &e2) == SL_OK &&
		    (s = sl_space_build(g, &m, NULL, &e2)) != NULL)
			sl_space_free(s);
		sl_graph_free(g);
	}
	return 0;
}
