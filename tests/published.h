/*
 * published.h: training runs that Megatron-LM's authors published, with the
 * layouts they were run at, and shardlab's prediction of each: forced to
 * the published layout (tensor, pipeline and data parallel degrees,
 * interleaved chunks, micro-batch, global batch, recomputation, Megatron-
 * LM's per-operator layout), not searched.  The test (test_published.c)
 * holds the predictions to the published step times; the benchmark
 * (bench/bench_published.c) prints the table of doc/validation.md.
 *
 *   Narayanan et al., "Efficient Large-Scale Language Model Training on
 *   GPU Clusters Using Megatron-LM", SC21, Table 1: weak scaling from 1.7B
 *   to 1T parameters on Selene (DGX A100 80GB, 8 HDR InfiniBand adapters a
 *   node), fp16, full recomputation of every layer, sequence 2048,
 *   vocabulary 51,200; the layouts of Megatron-LM's examples/sc21/
 *   run_table_1.sh and CONFIG.sh (micro-batch, DDP implementation:
 *   PyTorch's for the pipeline-free rows, Megatron-LM's local one,
 *   reducing after backward, for the others; chunks per device from
 *   --num-layers-per-virtual-pipeline-stage).  Published: achieved
 *   TFLOP/s per GPU counted as 96 B s l h^2 (1 + s/6h + V/16lh) a step.
 *   The fp16 model's gradients were reduced in fp16 by both DDPs then
 *   (--accumulate-allreduce-grads-in-fp32 off), under fp32 master weights
 *   and Adam states: the bf16 recipe's bytes.
 *
 *   Korthikanti et al., "Reducing Activation Recomputation in Large
 *   Transformer Models", 2022, Tables 3 and 5: 22B to 1T on A100 80GB,
 *   tensor parallel 8, no data parallelism, micro-batches of 1 sample,
 *   global batches of 4, 64, 280 and 512; end-to-end iteration time with
 *   full recomputation
 *   (without sequence parallelism) and with sequence parallelism and
 *   selective recomputation; bf16 with fp32 main gradients (Megatron-LM
 *   forces them under bf16).  The paper does not say the schedule's
 *   chunks: one per device here.
 */
#ifndef SL_TESTS_PUBLISHED_H
#define SL_TESTS_PUBLISHED_H

#include "gpt3.h"

#include <stdlib.h>

typedef struct pub_row {
	const char *source;	/* "SC21 T1", "K22 T5" */
	const char *name;	/* "1.7B" */
	int layers, hidden, heads;
	int tp, pp, v, mbs, gbs, gpus;
	sl_recompute recompute;
	sl_stage_layout layout;
	bool overlap;		/* the data-parallel reduction overlaps backward */
	sl_precision precision;
	double tflops;		/* published per GPU (SC21), 0 when a time */
	double step_s;		/* published iteration time (Korthikanti), or 0 */
} pub_row;

#define SC21(n, l, h, a, t, p, v, mb, gb, g, tf) \
	{ "SC21 T1", n, l, h, a, t, p, v, mb, gb, g, SL_RECOMP_FULL, \
	    SL_LAYOUT_MEGATRON, (p) == 1, SL_PREC_BF16, tf, 0 }
#define K22(n, l, h, a, p, gb, g, rc, lay, s) \
	{ "K22 T5", n, l, h, a, 8, p, 1, 1, gb, g, rc, lay, true, \
	    SL_PREC_MEGATRON, 0, s }

static const pub_row pub_rows[] = {
	SC21("1.7B", 24, 2304, 24, 1, 1, 1, 16, 512, 32, 137),
	SC21("3.6B", 30, 3072, 32, 2, 1, 1, 16, 512, 64, 138),
	SC21("7.5B", 36, 4096, 32, 4, 1, 1, 16, 512, 128, 142),
	SC21("18.4B", 40, 6144, 48, 8, 1, 1, 8, 1024, 256, 135),
	SC21("39.1B", 48, 8192, 64, 8, 2, 1, 4, 1536, 512, 138),
	SC21("76.1B", 60, 10240, 80, 8, 4, 3, 2, 1792, 1024, 140),
	SC21("145.6B", 80, 12288, 96, 8, 8, 2, 2, 2304, 1536, 148),
	SC21("310.1B", 96, 16384, 128, 8, 16, 2, 1, 2160, 1920, 155),
	SC21("529.6B", 105, 20480, 128, 8, 35, 3, 1, 2520, 2520, 163),
	SC21("1008.0B", 128, 25600, 160, 8, 64, 1, 1, 3072, 3072, 163),
	K22("22B full", 48, 6144, 64, 1, 4, 8, SL_RECOMP_FULL, SL_LAYOUT_MEGATRON, 1.42),
	K22("175B full", 96, 12288, 96, 8, 64, 64, SL_RECOMP_FULL, SL_LAYOUT_MEGATRON, 18.13),
	K22("530B full", 105, 20480, 128, 35, 280, 280, SL_RECOMP_FULL, SL_LAYOUT_MEGATRON, 49.05),
	K22("1T full", 128, 25600, 160, 64, 512, 512, SL_RECOMP_FULL, SL_LAYOUT_MEGATRON, 94.42),
	K22("22B sel+SP", 48, 6144, 64, 1, 4, 8, SL_RECOMP_SELECTIVE, SL_LAYOUT_MEGATRON_SP, 1.10),
	K22("175B sel+SP", 96, 12288, 96, 8, 64, 64, SL_RECOMP_SELECTIVE, SL_LAYOUT_MEGATRON_SP, 13.75),
	K22("530B sel+SP", 105, 20480, 128, 35, 280, 280, SL_RECOMP_SELECTIVE, SL_LAYOUT_MEGATRON_SP, 37.83),
	K22("1T sel+SP", 128, 25600, 160, 64, 512, 512, SL_RECOMP_SELECTIVE, SL_LAYOUT_MEGATRON_SP, 71.49),
};
#define N_PUB_ROWS ((int)(sizeof pub_rows / sizeof pub_rows[0]))

/* The published step time in seconds: Korthikanti's as given; SC21's from
 * its FLOPs per step (96 B s l h^2 (1 + s/6h + V/16lh)) at the published
 * rate per GPU. */
static inline double
pub_step_s(const pub_row *r)
{
	double B = r->gbs, s = 2048, l = r->layers, h = r->hidden, V = 51200;

	if (r->step_s > 0)
		return r->step_s;
	return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h)) /
	    (r->tflops * 1e12 * r->gpus);
}

/*
 * Evaluates row r at its published layout on the a100-sxm profile: the
 * generated GPT (sequence 2048, vocabulary 51,200, feed-forward 4h, naive
 * attention with Megatron-LM's fused softmax), Megatron-LM's mixed
 * precision and step, pp x v stages of equal layers, each of the tp x dp
 * devices' sub-mesh in the row's Megatron-LM layout.
 */
static inline int
pub_eval(const pub_row *r, sl_gen_config *gc, sl_pipeline *pl, sl_error *err)
{
	sl_hybrid_opts o;
	sl_pipe_config c;
	int ns = r->pp * r->v, dp = r->gpus / (r->tp * r->pp), rc;
	int *layers = malloc(ns * sizeof *layers);
	sl_recompute *rec = malloc(ns * sizeof *rec);

	sl_gen_defaults(SL_FAM_GPT, gc);
	snprintf(gc->name, sizeof gc->name, "gpt-%s", r->name);
	gc->layers = r->layers;
	gc->hidden = r->hidden;
	gc->heads = gc->kv_heads = r->heads;
	gc->ffn = 4 * (int64_t)r->hidden;
	gc->seq = 2048;
	gc->vocab = 51200;
	sl_hybrid_opts_default(&o);
	if ((rc = sl_hw_load("a100-sxm", &o.hw, err)) != SL_OK) {
		free(layers);
		free(rec);
		return rc;
	}
	o.model = gen_model_fn;
	o.model_ctx = gc;
	o.devices = r->gpus;
	o.global_batch = r->gbs;
	o.space.zero = false;
	o.space.recipe.framework = SL_FW_MEGATRON;
	o.space.recipe.precision = r->precision;
	o.space.recipe.attention = SL_ATTN_NAIVE;
	o.space.recipe.recompute = r->recompute;
	o.space.recipe.no_grad_overlap = !r->overlap;
	o.schedule = r->v > 1 ? SL_SCHED_INTERLEAVED : SL_SCHED_1F1B;
	o.mem_limit = (int64_t)1 << 60;	/* their layouts ran: memory is not asked */
	for (int j = 0; j < ns; j++) {
		layers[j] = r->layers / ns + (j < r->layers % ns);
		rec[j] = r->recompute;
	}
	pipe_config(&c, r->pp, r->v, dp, r->tp, (int64_t)r->mbs * dp,
	    r->gbs / ((int64_t)r->mbs * dp), layers, rec);
	c.layout = r->layout;
	rc = sl_pipeline_eval(&o, &c, pl, err);
	free(layers);
	free(rec);
	return rc;
}

#endif
