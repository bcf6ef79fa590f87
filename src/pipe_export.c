/*
 * pipe_export.c: a pipeline plan as its framework launches it: Megatron-LM's
 * command line, DeepSpeed's configuration, torchtitan's job configuration,
 * a PyTorch DTensor/FSDP2 script, or the plan itself as JSON
 * ("shardlab-pipeline", man shardlab-plan.5).  An export launches exactly
 * the plan that was scored: it refuses a plan made for another framework
 * or one its framework would reject (framework.c), and carries the plan's
 * predicted step time and peak memory per device in a comment.
 */
#include "internal.h"
#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const export_names[SL_EXPORT_COUNT] = {
	[SL_EXPORT_MEGATRON] = "megatron",
	[SL_EXPORT_DEEPSPEED] = "deepspeed",
	[SL_EXPORT_DTENSOR] = "dtensor",
	[SL_EXPORT_JSON] = "json",
	[SL_EXPORT_TORCHTITAN] = "torchtitan",
};

int
sl_export_from_name(const char *s)
{
	for (int i = 0; s != NULL && i < SL_EXPORT_COUNT; i++)
		if (strcmp(s, export_names[i]) == 0)
			return i;
	return -1;
}

const char *
sl_export_name(sl_export_kind k)
{
	return (unsigned)k < SL_EXPORT_COUNT ? export_names[k] : "?";
}

sl_framework
sl_export_framework(sl_export_kind k)
{
	switch (k) {
	case SL_EXPORT_MEGATRON:
		return SL_FW_MEGATRON;
	case SL_EXPORT_DEEPSPEED:
		return SL_FW_DEEPSPEED;
	case SL_EXPORT_DTENSOR:
	case SL_EXPORT_TORCHTITAN:
		/* torchtitan runs PyTorch's own DTensor and FSDP2 */
		return SL_FW_TORCHTITAN;
	default:
		return SL_FW_FREE;
	}
}

/* ------------------------------------------------------------ the layout */

int
sl_pipeline_layout(const sl_pipeline *pl, const sl_hybrid_opts *o,
    sl_layout *l, int *layers, sl_recompute *rec, sl_error *err)
{
	int tp = pl->launch_tp > 1 ? pl->launch_tp : 1;
	int cp = pl->launch_cp > 1 ? pl->launch_cp : 1;
	int sub = pl->mesh.n_devices;

	memset(l, 0, sizeof *l);
	if (pl->n_stages < 1 || sub < 1 || sub % (tp * cp) != 0)
		return sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
		    _("no pipeline to describe"));
	l->framework = o->space.recipe.framework;
	l->pp = pl->pp;
	l->vpp = pl->virt > 1 ? pl->virt : 1;
	l->tp = tp;
	l->cp = cp;
	l->dp = sub / (tp * cp);
	l->world = pl->pp * sub;
	l->schedule = pl->schedule;
	l->n_stages = pl->n_stages;
	for (int j = 0; j < pl->n_stages; j++) {
		layers[j] = pl->stage[j].n_layers;
		rec[j] = pl->stage[j].recompute;
		for (int u = 0; u < pl->stage[j].n_strat_ops; u++)
			if (strstr(pl->stage[j].strategy[u], "+z") != NULL)
				l->zero = 3;
	}
	l->stage_layers = layers;
	l->stage_recompute = rec;
	if (pl->graph_batch % l->dp != 0)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("a micro-batch of %lld samples does not divide over %d "
		    "data-parallel ranks"), (long long)pl->graph_batch, l->dp);
	l->micro_batch = pl->graph_batch / l->dp;
	l->micro_batches = pl->micro_batches;
	l->global_batch = pl->graph_batch * pl->micro_batches;
	l->seq = o->space.recipe.seq;
	l->precision = o->space.recipe.precision;
	if (l->zero == 0)
		l->zero = o->space.recipe.shard_states;
	/* HSDP: the stage sub-mesh's axes +z left replicated
	 * (pipeline_shape) */
	l->dp_replicate = l->zero == 3 && pl->dp_replicate > 1 ? pl->dp_replicate : 1;
	if (l->dp % l->dp_replicate != 0)
		return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("%d replicating ranks do not divide %d data-parallel ranks"),
		    l->dp_replicate, l->dp);
	l->offload_optimizer = o->offload_optimizer != 0;
	/* the experts as the plan lays them out (moe.c) */
	l->ep = pl->moe.ep > 0 ? pl->moe.ep : 1;
	l->etp = pl->moe.etp > 0 ? pl->moe.etp : 1;
	l->allgather = pl->moe.allgather;
	return SL_OK;
}

/* --------------------------------------------------------------- writing */

/* A growing string. */
typedef struct sbuf {
	char *s;
	size_t n, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
sb_printf(sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->s != NULL && b->n + n < b->cap) {
			b->n += n;
			return;
		}
		b->cap = (b->cap + n + 1) * 2;
		b->s = sl_xrealloc(b->s, b->cap);
	}
}

/* What every export needs. */
typedef struct ex {
	const sl_pipeline *pl;
	const sl_hybrid_opts *o;
	const sl_graph *g;
	sl_arch a;
	sl_layout l;
	int64_t seq;
	const char *name;		/* the model's */
	const char *body;		/* the DTensor script's */
	sbuf b;
} ex;

/*
 * The prediction, as `shardlab plan` prints it: the step time and the
 * memory of each pipeline rank (its largest device), then the layout.
 */
static void
ex_header(ex *x, const char *cmt, const char *title)
{
	const sl_pipeline *pl = x->pl;
	char t[32], m[32];

	sb_printf(&x->b, "%s %s\n", cmt, title);
	sb_printf(&x->b, "%s ", cmt);
	sb_printf(&x->b, _("shardlab plan of %s on %d devices of %s, for %s"),
	    x->name, x->l.world, x->o->hw.name,
	    sl_framework_title(x->o->space.recipe.framework));
	sb_printf(&x->b, "\n%s ", cmt);
	sb_printf(&x->b, _("predicted step time %s; peak memory per device %s"),
	    sl_format_ns(pl->step_ns, t, sizeof t),
	    sl_format_bytes(pl->max_mem, m, sizeof m));
	sb_printf(&x->b, " (step_time_ns=%lld peak_bytes=%lld)\n",
	    (long long)pl->step_ns, (long long)pl->max_mem);
	if (pl->pp > 1) {
		sb_printf(&x->b, "%s ", cmt);
		sb_printf(&x->b, "%s", _("peak memory per pipeline rank:"));
		for (int d = 0; d < pl->pp; d++)
			sb_printf(&x->b, "%s %s", d ? "," : "",
			    sl_format_bytes(pl->dev[d].mem, m, sizeof m));
		sb_printf(&x->b, "\n");
	}
	sb_printf(&x->b, "%s ", cmt);
	sb_printf(&x->b, _("pipeline %d (%s), data parallel %d, context parallel %d, "
	    "tensor parallel %d; %lld micro-batches of %lld samples per "
	    "data-parallel rank, global batch %lld, sequence %lld"),
	    x->l.pp, sl_schedule_name(x->l.schedule), x->l.dp, x->l.cp, x->l.tp,
	    (long long)x->l.micro_batches, (long long)x->l.micro_batch,
	    (long long)x->l.global_batch, (long long)x->seq);
	sb_printf(&x->b, "\n");
	if (pl->n_stages > 1) {
		sb_printf(&x->b, "%s ", cmt);
		sb_printf(&x->b, "%s", _("layers per stage:"));
		for (int j = 0; j < pl->n_stages; j++)
			sb_printf(&x->b, " %d", pl->stage[j].n_layers);
		sb_printf(&x->b, "\n");
	}
}

/*
 * Processes per node of a launch: the profile's devices per node, or the
 * largest count under it that divides the devices (every node alike, as
 * torchrun and the deepspeed launcher start them).
 */
static int
per_node(const sl_hw *hw, int world)
{
	int dpn = hw->devices_per_node > 0 && hw->devices_per_node < world ?
	    hw->devices_per_node : world;

	while (dpn > 1 && world % dpn != 0)
		dpn--;
	return dpn;
}

/* ---------------------------------------------------------- Megatron-LM */

/* "t", "t*5" */
static void
layout_run(sbuf *b, int n)
{
	if (n == 1)
		sb_printf(b, "t");
	else if (n > 1)
		sb_printf(b, "t*%d", n);
}

/*
 * The stage layout as Megatron-LM's arguments say it (validate_args in
 * megatron/training/arguments.py, and TransformerConfig.__post_init__ in
 * megatron/core/transformer/transformer_config.py): even stages need
 * nothing (or, interleaved, --num-layers-per-virtual-pipeline-stage);
 * one pipeline of equal middle stages takes the first and last stage's
 * counts; anything else is a --pipeline-model-parallel-layout, stages
 * separated by '|' in the order j = chunk x pp + rank, the embedding (E)
 * before the first layer and the loss (L) after the last
 * (megatron/core/transformer/pipeline_parallel_layer_layout.py).
 */
static void
megatron_stages(ex *x)
{
	const sl_layout *l = &x->l;
	const int *n = l->stage_layers;
	int ns = l->n_stages;
	bool even = true, middle = true;

	if (l->pp <= 1)
		return;
	for (int j = 1; j < ns; j++)
		even &= n[j] == n[0];
	for (int j = 2; j < ns - 1; j++)
		middle &= n[j] == n[1];
	if (even && l->vpp > 1)
		sb_printf(&x->b, "    --num-layers-per-virtual-pipeline-stage %d \\\n", n[0]);
	else if (even)
		return;
	else if (l->vpp == 1 && middle) {
		sb_printf(&x->b, "    --decoder-first-pipeline-num-layers %d \\\n", n[0]);
		sb_printf(&x->b, "    --decoder-last-pipeline-num-layers %d \\\n", n[ns - 1]);
	} else {
		sb_printf(&x->b, "    --pipeline-model-parallel-layout \"E,");
		for (int j = 0; j < ns; j++) {
			if (j > 0)
				sb_printf(&x->b, "|");
			layout_run(&x->b, n[j]);
		}
		sb_printf(&x->b, ",L\" \\\n");
	}
}

/*
 * Latent attention's and a mixture's arguments (megatron/training/
 * arguments.py, _add_mla_args and _add_moe_args, as current Megatron-LM
 * names them; moe.c reads the model back): the experts, top-k, their
 * width, the layers that are mixtures, shared experts, the router's score,
 * the expert parallel and expert tensor parallel sizes, the grouped gemm
 * (bf16 only: validate_args) and the token dispatcher.
 */
static void
megatron_moe(ex *x)
{
	const sl_moe_arch *a = &x->a.moe;
	const sl_layout *l = &x->l;

	if (a->kv_lora > 0) {
		/* qk-head-dim is the part of a head without rope */
		sb_printf(&x->b, "    --multi-latent-attention \\\n");
		if (a->q_lora > 0)
			sb_printf(&x->b, "    --q-lora-rank %lld \\\n", (long long)a->q_lora);
		sb_printf(&x->b, "    --kv-lora-rank %lld --qk-head-dim %lld "
		    "--qk-pos-emb-head-dim %lld --v-head-dim %lld \\\n",
		    (long long)a->kv_lora, (long long)a->qk_nope,
		    (long long)a->qk_rope, (long long)a->v_head);
	}
	if (a->experts == 0)
		return;
	sb_printf(&x->b, "    --num-experts %lld --moe-router-topk %lld "
	    "--moe-ffn-hidden-size %lld \\\n", (long long)a->experts,
	    (long long)a->topk, (long long)a->moe_ffn);
	if (strcmp(a->layer_freq, "1") != 0)
		sb_printf(&x->b, "    --moe-layer-freq \"%s\" \\\n", a->layer_freq);
	if (a->shared_ffn > 0)
		sb_printf(&x->b, "    --moe-shared-expert-intermediate-size %lld \\\n",
		    (long long)a->shared_ffn);
	if (a->score_bias)
		/* aux-loss-free routing selects with a per-expert bias over
		 * the sigmoid score (DeepSeek-V3) */
		sb_printf(&x->b, "    --moe-router-score-function sigmoid "
		    "--moe-router-enable-expert-bias \\\n");
	sb_printf(&x->b, "    --expert-model-parallel-size %d "
	    "--expert-tensor-parallel-size %d \\\n", l->ep, l->etp);
	if (l->precision == SL_PREC_MEGATRON || l->precision == SL_PREC_BF16)
		sb_printf(&x->b, "    --moe-grouped-gemm \\\n");
	sb_printf(&x->b, "    --moe-token-dispatcher-type %s \\\n",
	    l->allgather ? "allgather" : "alltoall");
	if (a->capacity > 0)
		sb_printf(&x->b, "    --moe-expert-capacity-factor %g "
		    "--moe-pad-expert-input-to-capacity \\\n", a->capacity);
}

static void
megatron_model(ex *x)
{
	const sl_arch *a = &x->a;

	sb_printf(&x->b, "    --num-layers %d \\\n", a->layers);
	sb_printf(&x->b, "    --hidden-size %lld \\\n", (long long)a->hidden);
	sb_printf(&x->b, "    --ffn-hidden-size %lld \\\n", (long long)a->ffn);
	sb_printf(&x->b, "    --num-attention-heads %lld \\\n", (long long)a->heads);
	if (a->kv_heads != a->heads && a->moe.kv_lora == 0)
		sb_printf(&x->b, "    --group-query-attention --num-query-groups %lld \\\n",
		    (long long)a->kv_heads);
	sb_printf(&x->b, "    --seq-length %lld \\\n", (long long)x->seq);
	/* arguments.py: max_position_embeddings >= seq_length */
	sb_printf(&x->b, "    --max-position-embeddings %lld \\\n", (long long)x->seq);
	if (a->family == SL_FAM_LLAMA)
		sb_printf(&x->b, "    --normalization RMSNorm --swiglu "
		    "--position-embedding-type rope \\\n");
	if (!a->tied)
		sb_printf(&x->b, "    --untie-embeddings-and-output-weights \\\n");
	if (!a->bias)
		sb_printf(&x->b, "    --disable-bias-linear \\\n");
	sb_printf(&x->b, "    --attention-dropout %g --hidden-dropout %g \\\n",
	    a->dropout, a->dropout);
	if (x->o->space.recipe.attention == SL_ATTN_NAIVE)
		sb_printf(&x->b, "    --attention-backend unfused \\\n");
	/*
	 * The vocabulary: NullTokenizer(n) has n + 1 entries (its end of
	 * document), padded to a multiple of --make-vocab-size-divisible-by
	 * times the tensor-parallel size
	 * (megatron/training/tokenizer/tokenizer.py, _NullTokenizer and
	 * _vocab_size_with_padding).
	 */
	megatron_moe(x);
	if (a->family == SL_FAM_BERT)
		sb_printf(&x->b, "    --bert-no-binary-head \\\n");
	sb_printf(&x->b, "    --tokenizer-type NullTokenizer --vocab-size %lld "
	    "--make-vocab-size-divisible-by 1 \\\n", (long long)(a->vocab - 1));
}

static void
export_megatron(ex *x)
{
	const sl_layout *l = &x->l;
	int dpn = per_node(&x->o->hw, l->world);
	sl_recompute rc = l->stage_recompute[0];

	sb_printf(&x->b, "#!/bin/sh\n");
	ex_header(x, "#", _("Megatron-LM launch (run on every node)"));
	sb_printf(&x->b, "# %s\n", _("data: --mock-data; for a corpus give --data-path "
	    "and its tokenizer instead of the NullTokenizer"));
	/* arguments.py validate_args: tensor or context parallelism needs
	 * CUDA_DEVICE_MAX_CONNECTIONS=1 before Blackwell */
	if (l->tp > 1 || l->cp > 1)
		sb_printf(&x->b, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n");
	sb_printf(&x->b, "torchrun --nproc_per_node %d --nnodes %d "
	    "--node_rank \"${NODE_RANK:-0}\" --master_addr \"${MASTER_ADDR:-localhost}\" "
	    "--master_port \"${MASTER_PORT:-6000}\" \\\n", dpn, l->world / dpn);
	sb_printf(&x->b, "    %s \\\n", x->a.family == SL_FAM_BERT ?
	    "pretrain_bert.py" : "pretrain_gpt.py");
	megatron_model(x);
	sb_printf(&x->b, "    --tensor-model-parallel-size %d \\\n", l->tp);
	if (l->tp > 1)
		sb_printf(&x->b, "    --sequence-parallel \\\n");
	sb_printf(&x->b, "    --pipeline-model-parallel-size %d \\\n", l->pp);
	megatron_stages(x);
	sb_printf(&x->b, "    --context-parallel-size %d \\\n", l->cp);
	sb_printf(&x->b, "    --micro-batch-size %lld \\\n", (long long)l->micro_batch);
	sb_printf(&x->b, "    --global-batch-size %lld \\\n", (long long)l->global_batch);
	/*
	 * Precision (arguments.py, mixed precision): --bf16 keeps fp32 main
	 * gradients (accumulate_allreduce_grads_in_fp32), which is recipe
	 * "megatron"; --grad-reduce-in-bf16 keeps them in bf16 ("bf16"); no
	 * flag trains in fp32.  --fp16 keeps fp16 main gradients and fp32
	 * main weights, with dynamic loss scaling (no --loss-scale): the
	 * scale starts at 2^16 as DeepSpeed's does, halves after --hysteresis
	 * overflowing steps, no lower than --min-loss-scale, and doubles
	 * after --loss-scale-window clean ones (arguments.py,
	 * _add_mixed_precision_args; megatron/core/optimizer/grad_scaler.py,
	 * DynamicGradScaler).
	 */
	if (l->precision == SL_PREC_MEGATRON)
		sb_printf(&x->b, "    --bf16 \\\n");
	else if (l->precision == SL_PREC_FP8)
		/* Transformer Engine's delayed scaling, E4M3 forward and E5M2
		 * gradients, as the step was costed (arguments.py, --fp8-*) */
		sb_printf(&x->b, "    --bf16 --transformer-impl transformer_engine "
		    "--fp8-format hybrid --fp8-amax-history-len 1024 "
		    "--fp8-amax-compute-algo max \\\n");
	else if (l->precision == SL_PREC_BF16)
		sb_printf(&x->b, "    --bf16 --grad-reduce-in-bf16 \\\n");
	else if (l->precision == SL_PREC_FP16)
		sb_printf(&x->b, "    --fp16 --initial-loss-scale 65536 --min-loss-scale 1.0 "
		    "--loss-scale-window 1000 --hysteresis 2 \\\n");
	/* TransformerConfig: full needs a method and a layer count;
	 * selective recomputes the attention core ("core_attn") */
	if (rc == SL_RECOMP_SELECTIVE)
		sb_printf(&x->b, "    --recompute-granularity selective \\\n");
	else if (rc == SL_RECOMP_FULL)
		sb_printf(&x->b, "    --recompute-granularity full --recompute-method "
		    "uniform --recompute-num-layers 1 \\\n");
	/* clipping and the gradients' overlap as the step was costed
	 * (doc/cost-model.md, "Step time") */
	sb_printf(&x->b, "    --optimizer adam --lr 3.0e-4 --min-lr 3.0e-5 "
	    "--lr-decay-style cosine --lr-warmup-iters 10 --weight-decay 0.1 "
	    "--clip-grad %s --adam-beta1 0.9 --adam-beta2 0.95 \\\n",
	    x->o->space.recipe.no_clip_grad ? "0.0" : "1.0");
	/*
	 * The distributed optimizer shards the fp32 main weights and Adam
	 * states over data parallel (megatron/core/optimizer/
	 * distrib_optimizer.py); --overlap-param-gather needs it and
	 * --overlap-grad-reduce (arguments.py).  Offload goes through the
	 * precision-aware optimizer (arguments.py: --optimizer-cpu-offload).
	 */
	if (l->zero >= 1) {
		sb_printf(&x->b, "    --use-distributed-optimizer%s \\\n",
		    x->o->space.recipe.no_grad_overlap ? "" :
		    " --overlap-grad-reduce --overlap-param-gather");
		if (l->offload_optimizer)
			sb_printf(&x->b, "    --optimizer-cpu-offload "
			    "--use-precision-aware-optimizer "
			    "--optimizer-offload-fraction 1.0 \\\n");
	} else if (l->dp > 1 && !x->o->space.recipe.no_grad_overlap)
		sb_printf(&x->b, "    --overlap-grad-reduce \\\n");
	sb_printf(&x->b, "    --train-iters 1000 --log-interval 10 --eval-iters 0 "
	    "--mock-data\n");
}

/* ------------------------------------------------------------ DeepSpeed */

static char *
export_deepspeed(ex *x, sl_error *err)
{
	const sl_layout *l = &x->l;
	sl_recompute rc = l->stage_recompute[0];
	int dpn = per_node(&x->o->hw, l->world);
	json_t *root, *z;
	sbuf c = { 0 };
	char t[32], m[32];

	/*
	 * DeepSpeedConfig (deepspeed/runtime/config.py, _batch_assertion):
	 * train_batch_size = micro x accumulation x data-parallel ranks, the
	 * ranks of PipelineModule's grid that are not stages
	 * (deepspeed/runtime/pipe/topology.py); a pipeline's micro-batches
	 * are its accumulation steps (deepspeed/runtime/pipe/engine.py).
	 */
	root = json_pack("{s:I, s:I, s:I}",
	    "train_batch_size", (json_int_t)l->global_batch,
	    "train_micro_batch_size_per_gpu", (json_int_t)l->micro_batch,
	    "gradient_accumulation_steps", (json_int_t)l->micro_batches);
	/* deepspeed/runtime/precision_config.py: DeepSpeedBF16Config, and
	 * DeepSpeedFP16Config with dynamic loss scaling (loss_scale 0) from
	 * 2^initial_scale_power; config.py refuses both enabled */
	if (l->precision == SL_PREC_FP16)
		json_object_set_new(root, "fp16", json_pack("{s:b, s:i, s:i, s:i, "
		    "s:i, s:i}", "enabled", 1, "loss_scale", 0, "initial_scale_power",
		    16, "loss_scale_window", 1000, "hysteresis", 2, "min_loss_scale", 1));
	else
		json_object_set_new(root, "bf16", json_pack("{s:b}", "enabled",
		    (int)(l->precision != SL_PREC_FP32)));
	z = json_pack("{s:i}", "stage", l->zero);
	if (l->offload_optimizer)
		json_object_set_new(z, "offload_optimizer", json_pack(
		    "{s:s, s:b}", "device", "cpu", "pin_memory", 1));
	json_object_set_new(root, "zero_optimization", z);
	json_object_set_new(root, "optimizer", json_pack("{s:s, s:{s:f, s:[f, f], "
	    "s:f, s:f}}", "type", "AdamW", "params", "lr", 3.0e-4, "betas", 0.9, 0.95,
	    "eps", 1e-8, "weight_decay", 0.1));
	json_object_set_new(root, "gradient_clipping", json_real(1.0));
	json_object_set_new(root, "steps_per_print", json_integer(10));
	/* the prediction and what the file cannot say, as a member that
	 * DeepSpeedConfig does not read */
	sb_printf(&c, _("shardlab plan of %s on %d devices of %s, for DeepSpeed: "
	    "predicted step time %s, peak memory per device %s "
	    "(step_time_ns=%lld peak_bytes=%lld); "), x->name, l->world,
	    x->o->hw.name, sl_format_ns(x->pl->step_ns, t, sizeof t),
	    sl_format_bytes(x->pl->max_mem, m, sizeof m),
	    (long long)x->pl->step_ns, (long long)x->pl->max_mem);
	if (l->pp > 1)
		/* deepspeed/runtime/pipe/module.py: activation_checkpoint_interval
		 * layers per checkpoint, 0 none; partition_method */
		sb_printf(&c, _("stages in code: PipelineModule(layers=[embedding, "
		    "%d blocks, head], num_stages=%d, partition_method=\"type:<block "
		    "class>\", activation_checkpoint_interval=%d); "), x->a.layers,
		    l->pp, rc == SL_RECOMP_FULL ? 1 : 0);
	else if (rc == SL_RECOMP_FULL)
		sb_printf(&c, "%s", _("every block recomputed (for example Hugging "
		    "Face's model.gradient_checkpointing_enable()); "));
	/* the launcher's --num_gpus is per node (deepspeed/launcher/runner.py) */
	sb_printf(&c, _("launch: deepspeed --num_nodes %d --num_gpus %d train.py "
	    "--deepspeed_config FILE"), l->world / dpn, dpn);
	json_object_set_new(root, "comment", json_string(c.s));
	free(c.s);
	if (rc == SL_RECOMP_FULL)
		json_object_set_new(root, "activation_checkpointing", json_pack(
		    "{s:b, s:b, s:b}", "partition_activations", 0,
		    "contiguous_memory_optimization", 0, "cpu_checkpointing", 0));
	{
		char *text = sl_json_format(root);
		if (text == NULL)
			sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
			    _("cannot build the DeepSpeed configuration"));
		return text;
	}
}

/* ----------------------------------------------------------- torchtitan */

static const char *
titan_schedule(const sl_layout *l)
{
	/* torch/distributed/pipelining/schedules.py, by the names
	 * torchtitan's parallelism.pipeline_parallel_schedule takes */
	return l->vpp > 1 ? "Interleaved1F1B" : l->schedule == SL_SCHED_GPIPE ?
	    "GPipe" : "1F1B";
}

/*
 * torchtitan's FeedForward hidden size: int(2 (4 dim) / 3), times
 * ffn_dim_multiplier, rounded up to multiple_of
 * (torchtitan/models/llama3/model/model.py); a multiplier that gives ffn
 * with multiple_of 1.
 */
static double
titan_ffn_multiplier(const sl_arch *a)
{
	int64_t base = 2 * 4 * a->hidden / 3;

	return base > 0 ? ((double)a->ffn + 0.5) / (double)base : 1.0;
}

static void
export_torchtitan(ex *x)
{
	const sl_layout *l = &x->l;
	const sl_arch *a = &x->a;
	sl_recompute rc = l->stage_recompute[0];
	/* HSDP: FSDP2 within data_parallel_shard_degree ranks, replicated
	 * across data_parallel_replicate_degree groups */
	int rep = l->dp_replicate > 1 ? l->dp_replicate : 1;

	ex_header(x, "#", _("torchtitan job configuration (torchtitan/config/job_config.py)"));
	sb_printf(&x->b, "# %s\n#   llama3_configs[\"%s\"] = TransformerModelArgs(dim=%lld, "
	    "n_layers=%d, n_heads=%lld, n_kv_heads=%lld, vocab_size=%lld, "
	    "multiple_of=1, ffn_dim_multiplier=%.17g, max_seq_len=%lld)\n",
	    _("the model's flavor, registered in torchtitan/models/llama3/__init__.py:"),
	    x->name, (long long)a->hidden, a->layers, (long long)a->heads,
	    (long long)a->kv_heads, (long long)a->vocab, titan_ffn_multiplier(a),
	    (long long)x->seq);
	sb_printf(&x->b, "\n[job]\ndump_folder = \"./outputs\"\n"
	    "description = \"%s\"\n", x->name);
	sb_printf(&x->b, "\n[model]\nname = \"llama3\"\nflavor = \"%s\"\n", x->name);
	sb_printf(&x->b, "\n[optimizer]\nname = \"AdamW\"\nlr = 3e-4\n"
	    "\n[lr_scheduler]\nwarmup_steps = 10\n");
	/*
	 * local_batch_size is one data-parallel rank's batch per step;
	 * global_batch_size / (local_batch_size x data parallel) steps are
	 * accumulated, and a pipeline cuts local_batch_size into micro-batches
	 * of pipeline_parallel_microbatch_size (torchtitan/train.py).
	 */
	sb_printf(&x->b, "\n[training]\nlocal_batch_size = %lld\n"
	    "global_batch_size = %lld\nseq_len = %lld\nsteps = 1000\n"
	    "max_norm = 1.0\nmixed_precision_param = \"%s\"\n"
	    "mixed_precision_reduce = \"float32\"\n",
	    (long long)(l->pp > 1 ? l->micro_batch * l->micro_batches : l->micro_batch),
	    (long long)l->global_batch, (long long)x->seq,
	    l->precision == SL_PREC_FP32 ? "float32" : "bfloat16");
	/* ParallelDims (torchtitan/distributed/parallel_dims.py): the
	 * product of the degrees is the world size */
	sb_printf(&x->b, "\n[parallelism]\ndata_parallel_replicate_degree = %d\n"
	    "data_parallel_shard_degree = %d\ntensor_parallel_degree = %d\n"
	    "context_parallel_degree = %d\npipeline_parallel_degree = %d\n",
	    l->zero == 3 ? rep : l->dp, l->zero == 3 ? l->dp / rep : 1, l->tp,
	    l->cp, l->pp);
	/* the cost model gathers sharded parameters in forward and again in
	 * backward: FSDP resharding after forward */
	if (l->zero == 3)
		sb_printf(&x->b, "fsdp_reshard_after_forward = \"always\"\n");
	if (l->tp > 1)
		sb_printf(&x->b, "disable_loss_parallel = false\n");
	if (l->pp > 1) {
		int first = 0;
		sb_printf(&x->b, "pipeline_parallel_schedule = \"%s\"\n"
		    "pipeline_parallel_microbatch_size = %lld\n"
		    "pipeline_parallel_split_points = [", titan_schedule(l),
		    (long long)l->micro_batch);
		for (int j = 0; j + 1 < l->n_stages; j++) {
			first += l->stage_layers[j];
			sb_printf(&x->b, "%s\"layers.%d\"", j ? ", " : "", first);
		}
		sb_printf(&x->b, "]\n");
	}
	/* selective: the operator policy the cost model prices (sl_layer_sac;
	 * torchtitan/distributed/activation_checkpoint.py, _apply_op_sac) */
	sb_printf(&x->b, "\n[activation_checkpoint]\nmode = \"%s\"\n",
	    rc == SL_RECOMP_FULL ? "full" : rc == SL_RECOMP_SELECTIVE ? "selective" :
	    "none");
	if (rc == SL_RECOMP_SELECTIVE)
		sb_printf(&x->b, "selective_ac_option = \"op\"\n");
}

/* -------------------------------------------------------------- DTensor */

/* The script's body (data/launch/dtensor.py), after the plan's constants. */
static char *
dtensor_body(sl_error *err)
{
	const char *dir = sl_datadir();
	char *path = sl_xmalloc(strlen(dir) + 32), *text;
	size_t len;

	sprintf(path, "%s/launch/dtensor.py", dir);
	text = sl_read_file(path, &len, err);
	free(path);
	return text;
}

static void
export_dtensor(ex *x)
{
	const sl_layout *l = &x->l;
	const sl_pipeline *pl = x->pl;
	sl_recompute rc = l->stage_recompute[0];

	ex_header(x, "#", _("PyTorch DTensor / FSDP2 parallelisation"));
	sb_printf(&x->b, "%s", _(
	    "# parallelize(model, mesh) applies the plan to Hugging Face's\n"
	    "# LlamaForCausalLM (model.layers.N.self_attn.q_proj ... mlp.down_proj),\n"
	    "# GPT2LMHeadModel (transformer.h.N.attn.c_attn ...) or torchtitan's LLaMA\n"
	    "# (layers.N.attention.wq ... feed_forward.w3): tensor parallel with\n"
	    "# sequence parallel and a vocabulary-parallel loss, recomputation,\n"
	    "# then FSDP2 on every block and the root.  train_step() runs one\n"
	    "# optimizer step of MICRO_BATCHES micro-batches.\n"));
	sb_printf(&x->b, "PP, DP, CP, TP = %d, %d, %d, %d\nVIRTUAL_STAGES = %d\n",
	    l->pp, l->dp, l->cp, l->tp, l->vpp);
	sb_printf(&x->b, "STAGE_LAYERS = [");
	for (int j = 0; j < l->n_stages; j++)
		sb_printf(&x->b, "%s%d", j ? ", " : "", l->stage_layers[j]);
	sb_printf(&x->b, "]\nSCHEDULE = \"%s\"\n", titan_schedule(l));
	sb_printf(&x->b, "MICRO_BATCH = %lld    # samples per data-parallel rank\n"
	    "MICRO_BATCHES = %lld\nGLOBAL_BATCH = %lld\nSEQ = %lld\n",
	    (long long)l->micro_batch, (long long)l->micro_batches,
	    (long long)l->global_batch, (long long)x->seq);
	sb_printf(&x->b, "RECOMPUTE = \"%s\"\n", rc == SL_RECOMP_FULL ? "full" :
	    rc == SL_RECOMP_SELECTIVE ? "selective" : "none");
	sb_printf(&x->b, "SHARD_PARAMETERS = %s\n", l->zero == 3 ? "True" : "False");
	/* HSDP: the ranks of DP across which the shards are replicated */
	sb_printf(&x->b, "DP_REPLICATE = %d\n",
	    l->zero == 3 && l->dp_replicate > 1 ? l->dp_replicate : 1);
	/* the cost model gathers a sharded parameter for forward and again
	 * for backward (doc/cost-model.md): FSDP2 resharding after forward */
	sb_printf(&x->b, "RESHARD_AFTER_FORWARD = True\n");
	sb_printf(&x->b, "PARAM_DTYPE = \"%s\"\n",
	    l->precision == SL_PREC_FP32 ? "float32" : "bfloat16");
	/* what the plan predicts per pipeline rank (its largest device):
	 * bytes of parameters, gradients and optimizer states, and the peak */
	sb_printf(&x->b, "PREDICTED = dict(step_time_ns=%lld, peak_bytes=%lld, ranks=[",
	    (long long)pl->step_ns, (long long)pl->max_mem);
	for (int d = 0; d < pl->pp; d++) {
		sl_mem s = { 0 };
		for (int j = d; j < pl->n_stages; j += pl->pp) {
			s.params += pl->stage[j].states.params;
			s.grads += pl->stage[j].states.grads;
			s.optim += pl->stage[j].states.optim;
		}
		sb_printf(&x->b, "%s\n    dict(parameters=%lld, gradients=%lld, "
		    "optimizer=%lld, peak=%lld)", d ? "," : "",
		    (long long)s.params, (long long)s.grads, (long long)s.optim,
		    (long long)pl->dev[d].mem);
	}
	sb_printf(&x->b, "])\n");
	sb_printf(&x->b, "\n%s", x->body);
}

/* ------------------------------------------------------------ plan JSON */

/*
 * How the plan was made, for reopening it without the flags that made it
 * (man shardlab-plan.5, PIPELINE PLANS): the model's identity, the
 * hardware profile with its figures, the devices and the sub-mesh with
 * the roles of its axes (and the whole mesh when it was named), the
 * options, and the batches.
 */
static json_t *
pipe_setup_json(ex *x)
{
	const sl_pipeline *pl = x->pl;
	const sl_hybrid_opts *o = x->o;
	json_t *root = json_object(), *axes = json_array(), *mesh;

	if (x->g != NULL)
		json_object_set_new(root, "model", json_pack("{s:o, s:o, s:o, s:I, s:I}",
		    "name", sl_json_str(x->g->name),
		    "source", sl_json_str(o->model_source != NULL ? o->model_source :
		    x->g->source),
		    "sha256", sl_json_str(x->g->sha256[0] != '\0' ? x->g->sha256 : NULL),
		    "parameters", (json_int_t)sl_graph_param_count(x->g),
		    "operators", (json_int_t)x->g->n_ops));
	json_object_set_new(root, "hardware", sl_json_str(o->hw_source != NULL ?
	    o->hw_source : o->hw.name));
	json_object_set_new(root, "hardware_profile", sl_hw_json(&o->hw));
	json_object_set_new(root, "devices", json_integer(x->l.world));
	for (int a = 0; a < pl->mesh.n_axes; a++)
		json_array_append_new(axes, json_string(sl_axis_role_name(pl->role[a])));
	/* replicate: HSDP's degree, which shapes the sub-mesh (stage_mesh) */
	mesh = json_pack("{s:o, s:i, s:i, s:i}", "axes", axes, "outer", pl->outer,
	    "inner", pl->inner, "replicate",
	    pl->dp_replicate > 1 ? pl->dp_replicate : 1);
	if (o->topo != NULL) {
		json_t *sh = json_array(), *ro = json_array();
		for (int a = 0; a < o->topo->n_axes; a++) {
			json_array_append_new(sh, json_integer(o->topo->shape[a]));
			json_array_append_new(ro, json_string(
			    sl_axis_role_name(o->topo->role[a])));
		}
		json_object_set_new(mesh, "topology", json_pack("{s:o, s:o}",
		    "shape", sh, "axes", ro));
	}
	json_object_set_new(root, "mesh_setup", mesh);
	json_object_set_new(root, "options", json_pack("{s:b, s:b, s:o}",
	    "zero", (int)o->space.zero, "offload_optimizer",
	    (int)(o->offload_optimizer != 0), "mem_limit_bytes",
	    o->mem_limit > 0 ? json_integer(o->mem_limit) : json_null()));
	json_object_set_new(root, "global_batch", json_integer(x->l.global_batch));
	json_object_set_new(root, "micro_batch", json_integer(x->l.micro_batch));
	/* torchtitan's two data-parallel degrees (HSDP: FSDP2 within a shard
	 * group, replicated across groups); without sharded parameters every
	 * data-parallel rank replicates */
	{
		int rep = x->l.dp_replicate > 1 ? x->l.dp_replicate : 1;
		bool z3 = x->l.zero == 3;

		json_object_set_new(root, "dp_replicate",
		    json_integer(z3 ? rep : x->l.dp));
		json_object_set_new(root, "dp_shard",
		    json_integer(z3 ? x->l.dp / rep : 1));
	}
	return root;
}

static char *
export_json(ex *x, sl_error *err)
{
	const sl_pipeline *pl = x->pl;
	json_t *root, *stages = json_array(), *shape = json_array();
	char *text;

	for (int i = 0; i < pl->mesh.n_axes; i++)
		json_array_append_new(shape, json_integer(pl->mesh.axes[i].size));
	for (int j = 0; j < pl->n_stages; j++) {
		const sl_pipe_stage *st = &pl->stage[j];
		const sl_pipe_dev *dv = &pl->dev[st->device];
		json_t *ops = json_array();

		for (int u = 0; u < st->n_strat_ops; u++)
			json_array_append_new(ops, sl_json_str(st->strategy[u]));
		json_array_append_new(stages, json_pack(
		    "{s:i, s:i, s:i, s:s, s:I, s:I, s:I, s:o}",
		    "device", st->device, "first_layer", st->first_layer,
		    "layers", st->n_layers,
		    "recompute", sl_recompute_name(st->recompute),
		    "in_flight", (json_int_t)dv->in_flight,
		    "memory_bytes", (json_int_t)dv->mem,
		    "micro_batch_time_ns", (json_int_t)st->micro_ns,
		    "ops", ops));
	}
	root = json_pack("{s:s, s:i, s:s, s:i, s:i, s:{s:o}, s:I, s:I, "
	    "s:I, s:I, s:I, s:b, s:o}",
	    "format", "shardlab-pipeline", "version", 1,
	    "schedule", sl_schedule_name(pl->schedule), "pp", pl->pp,
	    "virtual_stages", pl->virt, "mesh", "shape", shape,
	    "micro_batches", (json_int_t)pl->micro_batches,
	    "graph_batch", (json_int_t)pl->graph_batch,
	    "step_time_ns", (json_int_t)pl->step_ns,
	    "bubble_ns", (json_int_t)pl->bubble_ns,
	    "max_memory_bytes", (json_int_t)pl->max_mem,
	    "fits", (int)pl->fits, "stages", stages);
	json_object_set_new(root, "recipe",
	    sl_plan_recipe_json(&x->o->space.recipe, NULL, 0));
	/* the step's parts and what it achieves (doc/cost-model.md) */
	json_object_set_new(root, "step", json_pack(
	    "{s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o}",
	    "pipeline_ns", (json_int_t)pl->pipe_ns,
	    "sync_ns", (json_int_t)pl->sync_ns,
	    "optimizer_ns", (json_int_t)pl->optim_ns,
	    "tokens", (json_int_t)pl->tokens,
	    "tokens_per_s", sl_json_real(pl->tokens_per_s),
	    "model_flops", sl_json_real(pl->model_flops),
	    "hardware_flops", sl_json_real(pl->hw_flops),
	    "mfu", sl_json_real(pl->mfu), "hfu", sl_json_real(pl->hfu)));
	json_object_update_missing_new(root, pipe_setup_json(x));
	/* the sub-mesh's roles and shape join its "mesh" */
	json_object_update(json_object_get(root, "mesh"),
	    json_object_get(root, "mesh_setup"));
	json_object_del(root, "mesh_setup");
	if ((text = sl_json_format(root)) == NULL)
		sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
		    _("cannot build the JSON export"));
	return text;
}

/* ---------------------------------------------------------------- entry */

char *
sl_pipeline_export(const sl_pipeline *pl, const sl_hybrid_opts *o,
    sl_export_kind k, sl_error *err)
{
	sl_framework fw = sl_export_framework(k);
	int *layers = NULL;
	sl_recompute *rec = NULL;
	ex x;
	char why[256];
	char *out = NULL;

	memset(&x, 0, sizeof x);
	if (pl == NULL || pl->n_stages < 1) {
		sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s", _("no pipeline to export"));
		return NULL;
	}
	if ((unsigned)k >= SL_EXPORT_COUNT) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0, "%s", _("unknown export kind"));
		return NULL;
	}
	x.pl = pl;
	x.o = o;
	layers = sl_xmalloc((size_t)pl->n_stages * sizeof *layers);
	rec = sl_xmalloc((size_t)pl->n_stages * sizeof *rec);
	if (sl_pipeline_layout(pl, o, &x.l, layers, rec, err) != SL_OK)
		goto out;
	if (k == SL_EXPORT_JSON) {
		/* the model's identity at one sample, as the plan reopens it */
		if (o->model != NULL)
			x.g = o->model(o->model_ctx, 1, o->space.recipe.seq, NULL);
		out = export_json(&x, err);
		goto out;
	}
	/* the launch of exactly the plan that was scored */
	if (fw != o->space.recipe.framework) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("a %s launch cannot run a plan made for %s: make the plan "
		    "for %s"), sl_framework_title(fw),
		    sl_framework_title(o->space.recipe.framework),
		    sl_framework_title(fw));
		goto out;
	}
	if (o->model == NULL ||
	    (x.g = o->model(o->model_ctx, pl->graph_batch, o->space.recipe.seq,
	    err)) == NULL) {
		if (err != NULL && err->code == SL_OK)
			sl_error_set(err, SL_EINTERNAL, NULL, 0, 0, "%s",
			    _("no model to export"));
		goto out;
	}
	if (sl_arch_of(x.g, &x.a, err) != SL_OK)
		goto out;
	x.name = x.g->name;
	x.seq = x.l.seq > 0 ? x.l.seq : x.a.seq;
	if (x.a.moe.experts > 0 && !pl->moe.megatron) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("%s cannot run this plan: %s"), sl_framework_title(fw),
		    pl->moe.why);
		goto out;
	}
	if (!sl_layout_check(&x.l, &x.a, why, sizeof why)) {
		sl_error_set(err, SL_EINPUT, NULL, 0, 0,
		    _("%s cannot run this plan: %s"), sl_framework_title(fw), why);
		goto out;
	}
	switch (k) {
	case SL_EXPORT_MEGATRON:
		export_megatron(&x);
		out = x.b.s;
		break;
	case SL_EXPORT_DEEPSPEED:
		out = export_deepspeed(&x, err);
		break;
	case SL_EXPORT_TORCHTITAN:
		if (x.a.family != SL_FAM_LLAMA) {
			sl_error_set(err, SL_EINPUT, NULL, 0, 0,
			    _("torchtitan trains LLaMA-family models; model \"%s\" "
			    "is not one: export it as dtensor"), sl_esc(x.name));
			break;
		}
		export_torchtitan(&x);
		out = x.b.s;
		break;
	case SL_EXPORT_DTENSOR: {
		char *body = dtensor_body(err);
		if (body == NULL)
			break;
		x.body = body;
		export_dtensor(&x);
		free(body);
		out = x.b.s;
		break;
	}
	default:
		break;
	}
	if (out != x.b.s)
		free(x.b.s);
out:
	if (x.g != NULL)
		sl_graph_free((sl_graph *)x.g);
	free(layers);
	free(rec);
	return out;
}
