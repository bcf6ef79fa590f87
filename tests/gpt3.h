/*
 * gpt3.h: the generated GPT-3 175B (96 layers, hidden 12288, 96 heads,
 * sequence 2048) that the DP tests and the solver benchmark both use, the
 * generator as the hybrid search's model function, and a pipeline
 * configuration.
 */
#ifndef SL_TESTS_GPT3_H
#define SL_TESTS_GPT3_H

#include "shardlab.h"

#include <stdio.h>
#include <string.h>

static inline void
gpt3_175b_config(sl_gen_config *gc)
{
	sl_gen_defaults(SL_FAM_GPT, gc);
	snprintf(gc->name, sizeof gc->name, "gpt3-175b");
	gc->layers = 96;
	gc->hidden = 12288;
	gc->heads = 96;
	gc->kv_heads = 96;
	gc->ffn = 4 * 12288;
	gc->seq = 2048;
	gc->vocab = 51200;
}

/* sl_model_fn over a generator configuration (ctx): batch, and seq when
 * given, replace the configuration's own. */
static inline sl_graph *
gen_model_fn(void *ctx, int64_t batch, int64_t seq, sl_error *err)
{
	sl_gen_config c = *(const sl_gen_config *)ctx;

	c.batch = batch;
	if (seq > 0)
		c.seq = seq;
	return sl_gen(&c, err);
}

/* The configuration of p stages of v chunks on outer x inner devices each,
 * micro-batches of graph_batch samples, m of them per step. */
static inline void
pipe_config(sl_pipe_config *c, int p, int v, int outer, int inner,
    int64_t graph_batch, int64_t m, const int *layers, const sl_recompute *rec)
{
	*c = (sl_pipe_config){ .pp = p, .virt = v, .outer = outer,
	    .inner = inner, .graph_batch = graph_batch, .micro_batches = m,
	    .layers = layers, .recompute = rec };
}

#endif
