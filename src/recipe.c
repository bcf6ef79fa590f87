/*
 * recipe.c: the training recipe (attention kernel, precision, recomputation,
 * batches) and the bytes it implies.  Every byte count that depends on the
 * recipe is answered here, so that the cost model, explain, the baselines
 * and the launch lists read one rule (doc/cost-model.md).
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

static const char *const attention_names[SL_ATTN_COUNT] = { "flash", "naive" };
static const char *const precision_names[SL_PREC_COUNT] = {
	"bf16", "megatron", "amp", "fp32", "fp16"
};
static const char *const recompute_names[SL_RECOMP_COUNT] = {
	"none", "selective", "full", "auto"
};
static const char *const framework_names[SL_FW_COUNT] = {
	"free", "megatron", "torchtitan", "deepspeed"
};

/*
 * Bytes per parameter element of each part of its state:
 *   bf16      2 + 2 + 12  fp32 master weight, Adam m and v (ZeRO's 16 Psi)
 *   megatron  2 + 4 + 12  fp32 main gradients (Megatron-LM's grad buffer)
 *   amp       4 + 4 + 8   fp32 weights and gradients, Adam m and v
 *   fp32      4 + 4 + 8
 *   fp16      2 + 2 + 12  as bf16: Megatron-LM's --fp16 keeps fp16 main
 *             gradients (megatron/training/arguments.py sets
 *             accumulate_allreduce_grads_in_fp32 for bf16 only) and fp32
 *             main weights (megatron/core/optimizer/optimizer.py,
 *             Float16OptimizerWithFloat16Params); DeepSpeed's fp16
 *             optimizer likewise (deepspeed/runtime/fp16/fused_optimizer.py)
 * Adam keeps exp_avg and exp_avg_sq in the master's type, fp32
 * (torch/optim/adamw.py; Megatron-LM's distributed optimizer likewise).
 */
static const uint8_t part_bytes[SL_PREC_COUNT][SL_PART_COUNT] = {
	[SL_PREC_BF16] = { 2, 2, 4, 4, 4 },
	[SL_PREC_MEGATRON] = { 2, 4, 4, 4, 4 },
	[SL_PREC_AMP] = { 4, 4, 0, 4, 4 },
	[SL_PREC_FP32] = { 4, 4, 0, 4, 4 },
	[SL_PREC_FP16] = { 2, 2, 4, 4, 4 },
};
static const char *const part_names[SL_PART_COUNT] = {
	"weight", "grad", "master", "adam_m", "adam_v"
};
static const int part_cat[SL_PART_COUNT] = {
	SL_CAT_PARAMS, SL_CAT_GRADS, SL_CAT_OPTIM, SL_CAT_OPTIM, SL_CAT_OPTIM
};

void
sl_recipe_default(sl_recipe *r)
{
	memset(r, 0, sizeof *r);
	r->framework = SL_FW_FREE;
	r->attention = SL_ATTN_FLASH;
	r->precision = SL_PREC_BF16;
	r->recompute = SL_RECOMP_NONE;
	r->micro_batch = 1;
}

void
sl_space_opts_default(sl_space_opts *o)
{
	memset(o, 0, sizeof *o);
	o->zero = true;
	sl_recipe_default(&o->recipe);
}

static int
name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; s != NULL && i < n; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

/* name and from_name of one recipe dimension, over its table of names */
#define RECIPE_NAMES(what, type, names, count)				\
const char *								\
sl_##what##_name(type v)						\
{									\
	return (unsigned)v < (count) ? names[v] : "?";			\
}									\
int									\
sl_##what##_from_name(const char *s)					\
{									\
	return name_index(names, (count), s);				\
}

RECIPE_NAMES(attention, sl_attention, attention_names, SL_ATTN_COUNT)
RECIPE_NAMES(precision, sl_precision, precision_names, SL_PREC_COUNT)
RECIPE_NAMES(recompute, sl_recompute, recompute_names, SL_RECOMP_COUNT)
RECIPE_NAMES(framework, sl_framework, framework_names, SL_FW_COUNT)

const char *
sl_framework_title(sl_framework f)
{
	static const char *const titles[SL_FW_COUNT] = {
		N_("per-operator (free)"), "Megatron-LM", "torchtitan", "DeepSpeed"
	};

	return (unsigned)f < SL_FW_COUNT ? _(titles[f]) : "?";
}

const char *
sl_recipe_describe(const sl_recipe *r, char *buf, size_t len)
{
	static const char *const prec[SL_PREC_COUNT] = {
		N_("bf16 with fp32 master weights and Adam states (16 B/param)"),
		N_("Megatron-LM bf16 with fp32 main gradients (18 B/param)"),
		N_("fp32 weights under bf16 autocast (16 B/param + bf16 copies)"),
		N_("fp32 (16 B/param, 4-byte activations)"),
		N_("fp16 with loss scaling, fp32 master weights and Adam states (16 B/param)"),
	};
	static const char *const att[SL_ATTN_COUNT] = {
		N_("flash attention"), N_("naive attention"),
	};
	static const char *const rec[SL_RECOMP_COUNT] = {
		N_("no recomputation"), N_("selective recomputation"),
		N_("full recomputation"), N_("recomputation chosen per layer"),
	};
	snprintf(buf, len, "%s, %s, %s", _(att[r->attention % SL_ATTN_COUNT]),
	    _(prec[r->precision % SL_PREC_COUNT]),
	    _(rec[r->recompute % SL_RECOMP_COUNT]));
	return buf;
}

const char *
sl_state_part_name(sl_state_part p)
{
	return (unsigned)p < SL_PART_COUNT ? part_names[p] : "?";
}

int
sl_state_part_cat(sl_state_part p)
{
	return (unsigned)p < SL_PART_COUNT ? part_cat[p] : -1;
}

int
sl_recipe_part_bytes(const sl_recipe *r, sl_state_part p)
{
	sl_precision prec = r != NULL ? r->precision : SL_PREC_BF16;

	if ((unsigned)prec >= SL_PREC_COUNT || (unsigned)p >= SL_PART_COUNT)
		return 0;
	return part_bytes[prec][p];
}

int
sl_recipe_state_bytes(const sl_recipe *r, int cat)
{
	int n = 0;

	for (int p = 0; p < SL_PART_COUNT; p++)
		if (part_cat[p] == cat)
			n += sl_recipe_part_bytes(r, (sl_state_part)p);
	return n;
}

int
sl_recipe_act_bytes(const sl_recipe *r)
{
	return r != NULL && r->precision == SL_PREC_FP32 ? 4 : 2;
}

int64_t
sl_recipe_accum_steps(const sl_recipe *r, int64_t graph_batch)
{
	if (r == NULL || r->global_batch <= 0)
		return 1;
	if (graph_batch <= 0 || r->global_batch % graph_batch != 0 ||
	    r->global_batch < graph_batch)
		return -1;
	return r->global_batch / graph_batch;
}
