/*
 * gpt3.h: the generated GPT-3 175B (96 layers, hidden 12288, 96 heads,
 * sequence 2048) that the DP tests and the solver benchmark both use.
 */
#ifndef SL_TESTS_GPT3_H
#define SL_TESTS_GPT3_H

#include "shardlab.h"

#include <stdio.h>

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

#endif
