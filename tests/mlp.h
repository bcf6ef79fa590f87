/* mlp.h: the two-layer MLP of the hand calculations, built without the loader. */
#ifndef SL_TESTS_MLP_H
#define SL_TESTS_MLP_H

#include "shardlab.h"
#include <stdlib.h>
#include <string.h>

/* x[8,512] -> fc1 (w1[512,2048]) -> h1 -> gelu -> g -> fc2 (w2[2048,512]) -> y[8,512], bf16. */
static inline sl_graph *
tu_mlp(void)
{
	sl_error err;
	sl_graph *g = sl_graph_new("mlp-2layer");
	int64_t dx[2] = { 8, 512 }, dw1[2] = { 512, 2048 }, dh[2] = { 8, 2048 },
	    dw2[2] = { 2048, 512 };
	int x, w1, h, gg, w2, y;

	sl_error_clear(&err);
	x = sl_graph_add_tensor(g, "x", 2, dx, SL_DT_BF16, SL_ROLE_INPUT, &err);
	w1 = sl_graph_add_tensor(g, "w1", 2, dw1, SL_DT_BF16, SL_ROLE_PARAMETER, &err);
	h = sl_graph_add_tensor(g, "h1", 2, dh, SL_DT_BF16, SL_ROLE_ACTIVATION, &err);
	gg = sl_graph_add_tensor(g, "g", 2, dh, SL_DT_BF16, SL_ROLE_ACTIVATION, &err);
	w2 = sl_graph_add_tensor(g, "w2", 2, dw2, SL_DT_BF16, SL_ROLE_PARAMETER, &err);
	y = sl_graph_add_tensor(g, "y", 2, dx, SL_DT_BF16, SL_ROLE_ACTIVATION, &err);
	{
		int in1[2] = { x, w1 }, in2[1] = { h }, in3[2] = { gg, w2 };
		sl_graph_add_op(g, "fc1", SL_OP_MATMUL, 2, in1, 1, &h, "layer0", &err);
		sl_graph_add_op(g, "gelu", SL_OP_GELU, 1, in2, 1, &gg, "layer0", &err);
		sl_graph_add_op(g, "fc2", SL_OP_MATMUL, 2, in3, 1, &y, "layer1", &err);
	}
	if (err.code != SL_OK || sl_graph_validate(g, "mlp", &err) != SL_OK) {
		sl_graph_free(g);
		return NULL;
	}
	return g;
}

/* A mesh on a bundled profile; dies loudly when the profile is missing. */
static inline int
tu_mesh(const char *hw, int n_axes, int a, int b, sl_mesh *m)
{
	sl_error err;
	sl_hw h;
	int shape[2] = { a, b };

	sl_error_clear(&err);
	if (sl_hw_load(hw, &h, &err) != SL_OK)
		return -1;
	return sl_mesh_make(&h, n_axes, shape, m, &err);
}

/* choice[] from strategy names, one per operator; -1 entries when missing. */
static inline void
tu_choose(const sl_space *s, const char *const *names, int *choice)
{
	for (int v = 0; v < s->g->n_ops; v++)
		choice[v] = sl_space_find_strategy(s, v, names[v]);
}

#endif
