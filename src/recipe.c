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
	"bf16", "megatron", "amp", "fp32", "fp8", "fp16"
};
static const char *const recompute_names[SL_RECOMP_COUNT] = {
	"none", "selective", "full", "auto"
};
static const char *const optimizer_names[SL_OPTIM_COUNT] = { "fused", "foreach" };
static const char *const framework_names[SL_FW_COUNT] = {
	"free", "megatron", "torchtitan", "deepspeed"
};
static const char *const finetune_names[SL_FT_COUNT] = {
	"none", "full", "lora", "qlora"
};

/*
 * Bytes per parameter element of each part of its state:
 *   bf16      2 + 2 + 12  fp32 master weight, Adam m and v (ZeRO's 16 Psi)
 *   megatron  2 + 4 + 12  fp32 main gradients (Megatron-LM's grad buffer)
 *   amp       4 + 4 + 8   fp32 weights and gradients, Adam m and v
 *   fp32      4 + 4 + 8
 *   fp8       2 + 4 + 12  as megatron: Transformer Engine under Megatron-LM
 *             keeps bf16 weights with fp32 main gradients (its FP8 copies
 *             of the weights are buffers, space.c)
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
	[SL_PREC_FP8] = { 2, 4, 4, 4, 4 },
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
	r->finetune = SL_FT_NONE;
	r->lora_rank = SL_LORA_DEFAULT_RANK;
	r->lora_targets = SL_LORA_DEFAULT;
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
RECIPE_NAMES(optimizer, sl_optimizer, optimizer_names, SL_OPTIM_COUNT)
RECIPE_NAMES(framework, sl_framework, framework_names, SL_FW_COUNT)
RECIPE_NAMES(finetune, sl_finetune, finetune_names, SL_FT_COUNT)

/* The adapter targets: our short name, PEFT's LLaMA module name. */
static const struct {
	const char *name, *peft;
	unsigned bit;
} lora_targets[] = {
	{ "q", "q_proj", SL_LORA_Q }, { "k", "k_proj", SL_LORA_K },
	{ "v", "v_proj", SL_LORA_V }, { "o", "o_proj", SL_LORA_O },
	{ "gate", "gate_proj", SL_LORA_GATE }, { "up", "up_proj", SL_LORA_UP },
	{ "down", "down_proj", SL_LORA_DOWN },
};

bool
sl_lora_targets_parse(const char *s, unsigned *out, char *why, size_t len)
{
	unsigned t = 0;

	if (s == NULL || *s == '\0') {
		snprintf(why, len, "%s", _("no target named"));
		return false;
	}
	while (*s != '\0') {
		size_t n = strcspn(s, ","), i;
		/* "all-linear" is PEFT's word for every linear of the layers */
		if ((n == 3 && strncmp(s, "all", 3) == 0) ||
		    (n == 10 && strncmp(s, "all-linear", 10) == 0))
			t |= SL_LORA_ALL;
		else {
			for (i = 0; i < SL_ARRAY_LEN(lora_targets); i++)
				if ((strlen(lora_targets[i].name) == n &&
				    strncmp(s, lora_targets[i].name, n) == 0) ||
				    (strlen(lora_targets[i].peft) == n &&
				    strncmp(s, lora_targets[i].peft, n) == 0))
					break;
			if (i == SL_ARRAY_LEN(lora_targets)) {
				snprintf(why, len, _("unknown target '%.*s' (expected q, k, v, "
				    "o, gate, up, down or all)"), (int)(n < 64 ? n : 64), s);
				return false;
			}
			t |= lora_targets[i].bit;
		}
		s += n;
		if (*s == ',' && *++s == '\0') {
			snprintf(why, len, "%s", _("a comma with no target after it"));
			return false;
		}
	}
	*out = t;
	return true;
}

const char *
sl_lora_targets_format(unsigned t, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	if ((t & SL_LORA_ALL) == SL_LORA_ALL) {
		snprintf(buf, len, "all");
		return buf;
	}
	for (size_t i = 0; i < SL_ARRAY_LEN(lora_targets); i++)
		if ((t & lora_targets[i].bit) && o < len)
			o += snprintf(buf + o, len - o, "%s%s", o ? "," : "",
			    lora_targets[i].name);
	return buf;
}

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
		N_("FP8 matmuls (Transformer Engine), bf16 weights with fp32 main gradients (18 B/param)"),
		N_("fp16 with loss scaling, fp32 master weights and Adam states (16 B/param)"),
	};
	static const char *const att[SL_ATTN_COUNT] = {
		N_("flash attention"), N_("naive attention"),
	};
	static const char *const rec[SL_RECOMP_COUNT] = {
		N_("no recomputation"), N_("selective recomputation"),
		N_("full recomputation"), N_("recomputation chosen per layer"),
	};
	char t[64], ft[192];

	if (sl_recipe_frozen(r)) {
		/* the frozen weights hold no master copy and no Adam states:
		 * the precision's bytes per parameter would mislead */
		sl_lora_targets_format(r->lora_targets, t, sizeof t);
		if (r->finetune == SL_FT_QLORA)
			/* TRANSLATORS: "QLoRA rank 16 on q,v over frozen ..." */
			snprintf(ft, sizeof ft, _("QLoRA rank %d on %s over frozen "
			    "4-bit NF4 weights (%s elsewhere), fp32 adapters and their "
			    "Adam states"), r->lora_rank, t,
			    sl_recipe_part_bytes(r, SL_PART_WEIGHT) == 4 ? "fp32" :
			    "bf16");
		else
			snprintf(ft, sizeof ft, _("LoRA rank %d on %s over frozen %s "
			    "weights, fp32 adapters and their Adam states"),
			    r->lora_rank, t,
			    sl_recipe_part_bytes(r, SL_PART_WEIGHT) == 4 ? "fp32" :
			    "bf16");
	} else
		snprintf(ft, sizeof ft, "%s%s", _(prec[r->precision % SL_PREC_COUNT]),
		    r->finetune == SL_FT_FULL ? _(", full fine-tuning") : "");
	snprintf(buf, len, "%s, %s, %s", _(att[r->attention % SL_ATTN_COUNT]), ft,
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

bool
sl_recipe_frozen(const sl_recipe *r)
{
	return r != NULL && (r->finetune == SL_FT_LORA || r->finetune == SL_FT_QLORA);
}

int64_t
sl_nf4_bytes(int64_t elems, bool double_quant)
{
	int64_t blocks = sl_ceil_div(elems, 64);

	if (elems <= 0)
		return 0;
	/* packed values, the NF4 code (get_4bit_type: 16 fp32) */
	int64_t b = sl_add_sat(sl_ceil_div(elems, 2), 16 * 4);
	if (!double_quant)
		return sl_add_sat(b, sl_mul_sat(blocks, 4));
	/* uint8 absmaxes, an fp32 absmax per 256 of them, the fp32 offset;
	 * the nested code (256 fp32) is one map shared by every weight */
	return sl_add_sat(b, sl_add_sat(blocks,
	    sl_add_sat(sl_mul_sat(sl_ceil_div(blocks, 256), 4), 4)));
}

int64_t
sl_recipe_frozen_bytes(const sl_recipe *r, int64_t elems, bool quantised)
{
	if (quantised)
		return sl_nf4_bytes(elems, true);
	return sl_mul_sat(elems, sl_recipe_part_bytes(r, SL_PART_WEIGHT));
}

int
sl_recipe_adapter_part_bytes(sl_state_part p)
{
	static const uint8_t b[SL_PART_COUNT] = { 4, 4, 0, 4, 4 };

	return (unsigned)p < SL_PART_COUNT ? b[p] : 0;
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

static bool
is_float(sl_dtype dt)
{
	return dt == SL_DT_F32 || dt == SL_DT_F16 || dt == SL_DT_BF16;
}

/*
 * What autocast leaves in fp32 (torch/csrc/autograd/autocast_mode.cpp, the
 * CUDA lists): a norm, a softmax or the loss computes in fp32 and returns
 * fp32; an embedding of fp32 weights returns fp32; an elementwise operator
 * promotes to fp32 when one of its inputs is (the residual stream: a bf16
 * projection added to an fp32 residual is fp32).  Matmuls and attention
 * return bf16.
 */
static bool
amp_fp32_out(const sl_graph *g, const sl_op *op, const uint8_t *width)
{
	switch (op->kind) {
	case SL_OP_EMBEDDING:
	case SL_OP_LAYERNORM:
	case SL_OP_RMSNORM:
	case SL_OP_SOFTMAX:
	case SL_OP_CROSS_ENTROPY:
		return true;
	case SL_OP_MATMUL:
	case SL_OP_BMM:
	case SL_OP_ATTENTION:
		return false;
	default:
		for (int i = 0; i < op->n_in; i++) {
			const sl_tensor *t = &g->tensors[op->in[i]];
			if (t->role != SL_ROLE_PARAMETER && is_float(t->dtype) &&
			    width[op->in[i]] == 4)
				return true;
		}
		return false;
	}
}

void
sl_recipe_widths(const sl_recipe *r, const sl_graph *g, uint8_t *width)
{
	int act = sl_recipe_act_bytes(r);
	bool changed = true;

	for (int t = 0; t < g->n_tensors; t++) {
		const sl_tensor *x = &g->tensors[t];
		int w = sl_dtype_size(x->dtype);

		if (is_float(x->dtype))
			w = x->role == SL_ROLE_PARAMETER ?
			    sl_recipe_state_bytes(r, SL_CAT_PARAMS) :
			    w > act ? w : act;
		width[t] = (uint8_t)w;
	}
	if (r->precision != SL_PREC_AMP)
		return;
	/* producers first; passes until nothing changes (one, in graph order) */
	for (int pass = 0; changed && pass <= g->n_ops; pass++) {
		changed = false;
		for (int v = 0; v < g->n_ops; v++) {
			const sl_op *op = &g->ops[v];
			for (int j = 0; j < op->n_out; j++) {
				int t = op->out[j];
				uint8_t w = width[t];
				if (is_float(g->tensors[t].dtype) && amp_fp32_out(g, op, width))
					w = 4;
				if (w != width[t]) {
					width[t] = w;
					changed = true;
				}
			}
		}
	}
}

/*
 * The optimizer step per parameter element a device updates, bytes read
 * plus written, with W, G and O the recipe's weight, gradient and
 * optimizer-state bytes (O = 12 with fp32 master weights, 8 without):
 *
 *   fused AdamW (apex/TE FusedAdam, multi_tensor_adam; PyTorch's fused
 *   _fused_adamw): reads the gradient and the fp32 weight (master or
 *   parameter), m and v, writes the three back: G + 24;
 *   foreach AdamW (torch/optim/adamw.py, _multi_tensor_adamw): eight
 *   passes, decay p (r/w), m.lerp_(g) (r m, g, w m), v.mul_ (r/w),
 *   v.addcmul_(g, g) (r v, g, w v), sqrt(v) to a temporary (r, w), its
 *   division and its epsilon (r/w each), p.addcdiv_(m, tmp) (r p, m, tmp,
 *   w p): 72 + 2G;
 *   with master weights, the copy to the model's weights: 4 + W (Megatron-
 *   LM's _copy_main_params_to_model_params, DeepSpeed's and FSDP's the
 *   same);
 *   clipping the gradients' norm (every framework clips at 1.0 by default):
 *   the norm reads them (G); PyTorch's clip_grad_norm_ then multiplies
 *   every gradient by the clamped coefficient (torch/nn/utils/
 *   clip_grad.py, _foreach_mul_: 2G), Megatron-LM only when the norm is
 *   above the limit (megatron/core/optimizer/clip_grads.py,
 *   clip_grad_by_total_norm_fp32), which a converged run rarely is;
 *   Megatron-LM clears its contiguous gradient buffer for the next step
 *   (zero_grad_buffer: G written); PyTorch sets gradients to None.
 */
double
sl_recipe_optim_bytes(const sl_recipe *r)
{
	int w = sl_recipe_state_bytes(r, SL_CAT_PARAMS);
	int gb = sl_recipe_state_bytes(r, SL_CAT_GRADS);
	int ob = sl_recipe_state_bytes(r, SL_CAT_OPTIM);
	bool megatron = r->framework == SL_FW_MEGATRON ||
	    r->precision == SL_PREC_MEGATRON || r->precision == SL_PREC_FP8;
	double b;

	b = r->optimizer == SL_OPTIM_FOREACH ? 72.0 + 2.0 * gb : 24.0 + gb;
	if (ob > 8)
		b += 4 + w;
	if (!r->no_clip_grad)
		b += megatron ? gb : 3.0 * gb;	/* the norm; scaled */
	if (megatron)
		b += gb;			/* the buffer cleared */
	return b;
}

/*
 * Gradient buckets: a bucket's reduction starts once every gradient in it
 * is ready, on its own stream, while backward goes on.
 *   Megatron-LM: max(40M, 1M x dp) parameters a bucket when
 *   --overlap-grad-reduce (megatron/core/distributed/
 *   distributed_data_parallel.py, DistributedDataParallelConfig.bucket_size);
 *   PyTorch DDP: bucket_cap_mb 25 MiB (torch/nn/parallel/distributed.py;
 *   FSDP2 reduce-scatters each module's gradients, a layer, much the same
 *   size and order);
 *   DeepSpeed: reduce_bucket_size 5e8 elements (deepspeed/runtime/zero/
 *   config.py), in effect one bucket for the models here.
 */
int64_t
sl_recipe_grad_bucket(const sl_recipe *r, int dp, int grad_bytes)
{
	if (r->no_grad_overlap)
		return INT64_MAX;
	switch (r->framework) {
	case SL_FW_MEGATRON:
		return (int64_t)grad_bytes * (dp > 40 ? (int64_t)dp * 1000000 : 40000000);
	case SL_FW_DEEPSPEED:
		return (int64_t)grad_bytes * 500000000;
	default:
		return (int64_t)25 << 20;
	}
}

bool
sl_fp8_matmul(const sl_space *sp, const sl_op *op)
{
	return sp->opts.recipe.precision == SL_PREC_FP8 &&
	    op->kind == SL_OP_MATMUL && op->layer >= 0 && op->n_in >= 2 &&
	    sp->g->tensors[op->in[1]].role == SL_ROLE_PARAMETER;
}
