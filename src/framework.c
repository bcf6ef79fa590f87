/*
 * framework.c: what Megatron-LM, torchtitan and DeepSpeed can run.  A plan
 * made for a framework is described as that framework launches it (an
 * sl_layout: degrees, batches, stage layers, recomputation, precision,
 * state sharding), and each framework's own argument and configuration
 * checks are restated here, each with the file it comes from, so that the
 * search offers only what the framework accepts and every export passes
 * its checks as written.  The model itself is read back from the graph
 * the generator built (sl_arch_of), in the terms the frameworks' model
 * arguments use.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the model */

/* The first operator of layer l of kind k (from its start), or NULL. */
static const sl_op *
layer_op(const sl_graph *g, int l, sl_op_kind k, int nth)
{
	const sl_layer *ly = &g->layers[l];

	for (int i = 0; i < ly->n_ops; i++) {
		const sl_op *op = &g->ops[ly->first_op + i];
		if (op->kind == k && nth-- == 0)
			return op;
	}
	return NULL;
}

static int
arch_fail(const sl_graph *g, sl_error *err, const char *why)
{
	return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
	    _("model \"%s\" is not a GPT, BERT or LLaMA as shardlab gen builds "
	    "them (%s): a framework's launch cannot describe it; export it as "
	    "json"), sl_esc(g->name), why);
}

/* The first matmul of layer l's dense feed-forward (gen.c names it gate
 * in a SwiGLU, fc1 otherwise), or NULL. */
static const sl_op *
ffn_matmul(const sl_graph *g, int l)
{
	const sl_layer *ly = &g->layers[l];

	for (int i = 0; i < ly->n_ops; i++) {
		const sl_op *op = &g->ops[ly->first_op + i];
		const char *dot = strrchr(op->name, '.');
		const char *n = dot != NULL ? dot + 1 : op->name;
		if (op->kind == SL_OP_MATMUL &&
		    (strcmp(n, "gate") == 0 || strcmp(n, "fc1") == 0))
			return op;
	}
	return NULL;
}

int
sl_arch_of(const sl_graph *g, sl_arch *a, sl_error *err)
{
	const sl_op *emb = NULL, *att, *first, *ffn_op = NULL;
	int64_t seq = 0;
	const sl_op *ex;

	memset(a, 0, sizeof *a);
	if (g == NULL || g->n_layers < 1)
		return arch_fail(g, err, _("no layers"));
	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].kind == SL_OP_EMBEDDING && g->ops[i].layer < 0) {
			emb = &g->ops[i];
			break;
		}
	if (emb == NULL || g->tensors[emb->in[1]].rank != 2)
		return arch_fail(g, err, _("no token embedding"));
	a->vocab = g->tensors[emb->in[1]].dims[0];
	a->hidden = g->tensors[emb->in[1]].dims[1];
	(void)sl_graph_batch(g, &seq);
	a->seq = seq;
	a->layers = g->n_layers;
	if ((att = layer_op(g, 0, SL_OP_ATTENTION, 0)) == NULL)
		return arch_fail(g, err, _("layer 0 has no attention"));
	a->heads = att->heads;
	a->kv_heads = att->kv_heads > 0 ? att->kv_heads : att->heads;
	a->dropout = att->p;
	first = &g->ops[g->layers[0].first_op];
	/* a mixture's layers hold their SwiGLU inside the experts */
	ex = layer_op(g, 0, SL_OP_EXPERTS, 0);
	(void)sl_moe_arch_of(g, &a->moe);
	if (layer_op(g, 0, SL_OP_RMSNORM, 0) != NULL &&
	    (layer_op(g, 0, SL_OP_SILU, 0) != NULL || (ex != NULL && ex->gated)))
		a->family = SL_FAM_LLAMA;
	else if (first->kind == SL_OP_LAYERNORM)
		a->family = SL_FAM_GPT;				/* pre-LN */
	else if (first->kind == SL_OP_MATMUL)
		a->family = SL_FAM_BERT;			/* post-LN */
	else
		return arch_fail(g, err, _("its layers are neither pre- nor post-norm"));
	/* the feed-forward width of the first dense layer; a model of
	 * mixtures alone, its experts' */
	for (int l = 0; l < g->n_layers && ffn_op == NULL; l++)
		if (layer_op(g, l, SL_OP_EXPERTS, 0) == NULL)
			ffn_op = ffn_matmul(g, l);
	if (ffn_op != NULL && g->tensors[ffn_op->in[1]].rank == 2) {
		a->ffn = g->tensors[ffn_op->in[1]].dims[1];
		a->bias = ffn_op->n_in == 3;
	} else if (a->moe.experts > 0) {
		a->ffn = a->moe.moe_ffn;
		a->bias = a->moe.expert_bias;
	} else
		return arch_fail(g, err, _("no feed-forward matmul in layer 0"));
	/* tied: the output layer reads the embedding table transposed */
	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].kind == SL_OP_MATMUL && g->ops[i].layer < 0 &&
		    g->ops[i].in[1] == emb->in[1])
			a->tied = true;
	if (a->heads < 1 || a->hidden % a->heads != 0 || a->seq < 1)
		return arch_fail(g, err, _("its attention heads do not divide the hidden size"));
	return SL_OK;
}

/* --------------------------------------------------------------- checks */

/* Sets why (printf) and returns false. */
static bool no(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool
no(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why != NULL && len > 0) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return false;
}

/* Whether every stage recomputes as the first does. */
static bool
uniform_recompute(const sl_layout *l)
{
	for (int j = 1; l->stage_recompute != NULL && j < l->n_stages; j++)
		if (l->stage_recompute[j] != l->stage_recompute[0])
			return false;
	return true;
}

static bool
even_stages(const sl_layout *l)
{
	for (int j = 1; l->stage_layers != NULL && j < l->n_stages; j++)
		if (l->stage_layers[j] != l->stage_layers[0])
			return false;
	return true;
}

/* What every framework needs of the batch and the degrees. */
static bool
check_common(const sl_layout *l, const sl_arch *a, char *why, size_t len)
{
	int sum = 0;

	if (l->pp < 1 || l->dp < 1 || l->tp < 1 || l->cp < 1 || l->vpp < 1 ||
	    (int64_t)l->pp * l->dp * l->tp * l->cp != l->world)
		return no(why, len, _("pipeline %d x data %d x context %d x tensor %d "
		    "is not the %d devices"), l->pp, l->dp, l->cp, l->tp, l->world);
	if (l->micro_batch < 1 || l->micro_batches < 1 ||
	    l->global_batch != l->micro_batch * l->dp * l->micro_batches)
		return no(why, len, _("a global batch of %lld is not %lld samples x %d "
		    "data-parallel ranks x %lld micro-batches"),
		    (long long)l->global_batch, (long long)l->micro_batch, l->dp,
		    (long long)l->micro_batches);
	if (l->n_stages != l->pp * l->vpp)
		return no(why, len, _("%d stages are not %d pipeline ranks x %d chunks"),
		    l->n_stages, l->pp, l->vpp);
	for (int j = 0; l->stage_layers != NULL && j < l->n_stages; j++) {
		if (l->stage_layers[j] < 1)
			return no(why, len, _("stage %d holds no layer"), j);
		sum += l->stage_layers[j];
	}
	if (l->stage_layers != NULL && a != NULL && sum != a->layers)
		return no(why, len, _("the stages hold %d layers of %d"), sum, a->layers);
	return true;
}

/*
 * Tensor parallelism splits the attention heads, the key/value groups and
 * the feed-forward width evenly: Megatron-LM's TransformerConfig
 * (megatron/core/transformer/transformer_config.py, __post_init__: heads
 * and num_query_groups multiples of tensor_model_parallel_size), its
 * ColumnParallelLinear (megatron/core/tensor_parallel/layers.py: divide()
 * of the output size), and torchtitan's attention (n_heads // tp local
 * heads, torchtitan/models/llama3/model/model.py) alike.
 */
static bool
check_tp(const sl_layout *l, const sl_arch *a, char *why, size_t len)
{
	if (l->tp <= 1 || a == NULL)
		return true;
	if (a->heads % l->tp != 0)
		return no(why, len, _("%lld attention heads are not a multiple of "
		    "tensor parallel %d"), (long long)a->heads, l->tp);
	if (a->kv_heads % l->tp != 0)
		return no(why, len, _("%lld key/value heads are not a multiple of "
		    "tensor parallel %d"), (long long)a->kv_heads, l->tp);
	if (a->ffn % l->tp != 0)
		return no(why, len, _("feed-forward width %lld is not a multiple of "
		    "tensor parallel %d"), (long long)a->ffn, l->tp);
	return true;
}

/*
 * A mixture's experts under Megatron-LM (moe.c names its rules):
 * arguments.py validate_args, the experts a multiple of the expert
 * parallel size; parallel_state.py initialize_model_parallel, the decoder's
 * ranks (world / pp) a multiple of expert tensor x expert parallel (the
 * expert ranks are a second decomposition of the same devices); the
 * experts' width a multiple of expert tensor parallel (megatron/core/
 * transformer/moe/experts.py, TEGroupedMLP's column-parallel fc1);
 * transformer_config.py, the capacity factor only with the all-to-all
 * dispatcher.
 */
static bool
check_experts(const sl_layout *l, const sl_arch *a, char *why, size_t len)
{
	int ep = l->ep > 0 ? l->ep : 1, etp = l->etp > 0 ? l->etp : 1;
	const sl_moe_arch *m = a != NULL ? &a->moe : NULL;

	if (m == NULL || m->experts == 0)
		return ep == 1 ? true : no(why, len, "%s", _("expert parallelism "
		    "needs a model with experts"));
	if (m->experts % ep != 0)
		return no(why, len, _("%lld experts are not a multiple of expert "
		    "parallel %d"), (long long)m->experts, ep);
	if (m->moe_ffn % etp != 0)
		return no(why, len, _("the experts' width %lld is not a multiple of "
		    "expert tensor parallel %d"), (long long)m->moe_ffn, etp);
	if (l->pp < 1 || l->world % l->pp != 0 ||
	    (l->world / l->pp) % (etp * ep) != 0)
		return no(why, len, _("the %d devices of a pipeline stage are not a "
		    "multiple of expert tensor parallel %d x expert parallel %d"),
		    l->pp > 0 ? l->world / l->pp : l->world, etp, ep);
	if (m->capacity > 0 && l->allgather)
		return no(why, len, "%s", _("a capacity factor needs the all-to-all "
		    "token dispatcher"));
	return true;
}

/*
 * Context parallelism splits each sequence into 2 cp chunks, two per rank,
 * for a balanced causal mask: Megatron-LM validate_args
 * (megatron/training/arguments.py: "seq-length should be a multiple of
 * 2 * context-parallel-size"), and PyTorch's context_parallel() load
 * balancing (torch/distributed/tensor/experimental/_attention.py).
 */
static bool
check_cp(const sl_layout *l, const sl_arch *a, char *why, size_t len)
{
	int64_t seq = l->seq > 0 ? l->seq : a != NULL ? a->seq : 0;

	if (l->cp > 1 && seq % (2 * l->cp) != 0)
		return no(why, len, _("sequence %lld is not a multiple of 2 x context "
		    "parallel %d"), (long long)seq, l->cp);
	return true;
}

static bool
check_megatron(const sl_layout *l, const sl_arch *a, char *why, size_t len)
{
	if (!check_tp(l, a, why, len) || !check_cp(l, a, why, len) ||
	    !check_experts(l, a, why, len))
		return false;
	/* megatron/core/pipeline_parallel/schedules.py,
	 * get_forward_backward_func: no pipeline, 1F1B, or interleaved 1F1B */
	if (l->pp > 1 && l->schedule == SL_SCHED_GPIPE)
		return no(why, len, "%s", _("Megatron-LM has no GPipe schedule "
		    "(1F1B or interleaved 1F1B)"));
	if (l->vpp > 1) {
		/* arguments.py validate_args: the interleaved schedule with
		 * --overlap-p2p-communication (the default) needs 2 or more
		 * pipeline ranks */
		if (l->pp < 2)
			return no(why, len, "%s", _("the interleaved schedule needs 2 or "
			    "more pipeline ranks"));
		/* schedules.py forward_backward_pipelining_with_interleaving:
		 * "number of microbatches is not divisible by
		 * pipeline-model-parallel-size" */
		if (l->micro_batches % l->pp != 0)
			return no(why, len, _("interleaving: %lld micro-batches are not a "
			    "multiple of %d pipeline ranks"), (long long)l->micro_batches,
			    l->pp);
	}
	/* transformer_config.py __post_init__: one --recompute-granularity
	 * (and --recompute-method, --recompute-num-layers) for every stage */
	if (!uniform_recompute(l))
		return no(why, len, "%s", _("stages recompute differently; "
		    "Megatron-LM's recomputation granularity is one for all"));
	/* --bf16 and --fp16 keep the weights in half precision
	 * (arguments.py, params_dtype); there is no fp32-weights autocast */
	if (l->precision == SL_PREC_AMP)
		return no(why, len, "%s", _("Megatron-LM has no fp32-weights "
		    "autocast: precision megatron, bf16, fp8, fp16 or fp32"));
	/* arguments.py validate_args: "Expert parallelism is not supported
	 * with fp16 training." */
	if (l->precision == SL_PREC_FP16 && l->ep > 1)
		return no(why, len, "%s", _("Megatron-LM runs no expert "
		    "parallelism in fp16"));
	/* its distributed optimizer shards optimizer states (and, with
	 * Megatron-FSDP, more): ZeRO-3 parameters are not offered */
	if (l->zero > 1)
		return no(why, len, "%s", _("Megatron-LM's distributed optimizer "
		    "shards optimizer states only"));
	/* arguments.py: --optimizer-cpu-offload with
	 * --use-precision-aware-optimizer, in the distributed optimizer */
	if (l->offload_optimizer && l->zero < 1)
		return no(why, len, "%s", _("optimizer offload needs the distributed "
		    "optimizer"));
	return true;
}

static bool
check_torchtitan(const sl_layout *l, const sl_arch *a, char *why, size_t len)
{
	if (!check_tp(l, a, why, len) || !check_cp(l, a, why, len))
		return false;
	/* the export writes torchtitan's llama3 model (torchtitan/models/
	 * llama3), which has neither experts nor latent attention */
	if (a != NULL && (a->moe.experts > 0 || a->moe.kv_lora > 0))
		return no(why, len, "%s", _("torchtitan's LLaMA model, which its "
		    "launch describes, has no experts or latent attention"));
	/*
	 * DTensor's ColwiseParallel and RowwiseParallel take nn.Linear and
	 * nn.Embedding (torch/distributed/tensor/parallel/style.py); Hugging
	 * Face's GPT-2 projects q, k and v with one Conv1D and BERT splits
	 * heads by their global count, so only the LLaMA family (torchtitan's
	 * own, and LlamaForCausalLM's view(-1, head_dim)) splits its heads.
	 */
	if ((l->tp > 1 || l->cp > 1) && a != NULL && a->family != SL_FAM_LLAMA)
		return no(why, len, "%s", _("tensor and context parallelism of "
		    "PyTorch's parallel styles need a LLaMA-family model"));
	if (l->pp > 1) {
		/* torch/distributed/pipelining/schedules.py: every stage
		 * busy needs as many micro-batches as ranks; Interleaved1F1B
		 * runs them in rounds of the ranks */
		if (l->micro_batches < l->pp)
			return no(why, len, _("%lld micro-batches are fewer than %d "
			    "pipeline ranks"), (long long)l->micro_batches, l->pp);
		if (l->vpp > 1 && l->micro_batches % l->pp != 0)
			return no(why, len, _("interleaving: %lld micro-batches are not a "
			    "multiple of %d pipeline ranks"), (long long)l->micro_batches,
			    l->pp);
	}
	/* torchtitan/config/job_config.py ActivationCheckpoint.mode: one
	 * mode for the model; its "selective" (selective_ac_option "op")
	 * saves by operator policy, which is what selective costs under
	 * torchtitan (sl_layer_sac) */
	if (!uniform_recompute(l))
		return no(why, len, "%s", _("stages recompute differently; "
		    "activation_checkpoint.mode is one for all"));
	/* training.mixed_precision_param bfloat16 or float32 over fp32
	 * parameters (FSDP2's MixedPrecisionPolicy): its Literal has no
	 * float16, and torchtitan has no loss scaler */
	if (l->precision != SL_PREC_AMP && l->precision != SL_PREC_FP32)
		return no(why, len, "%s", _("torchtitan keeps fp32 parameters: "
		    "precision amp (bfloat16 compute) or fp32"));
	/* FSDP2 shards parameters (data_parallel_shard_degree), or DDP
	 * replicates them, which torchtitan's parallelize applies only
	 * without other parallelism (torchtitan/models/llama3/infra/
	 * parallelize.py: "DDP has not supported > 1D parallelism") */
	if (l->zero == 1 || l->zero == 2)
		return no(why, len, "%s", _("FSDP2 shards parameters with their "
		    "states, not the states alone"));
	/* with context parallel it shards over the flattened dp_shard_cp mesh */
	if (l->zero == 0 && l->cp > 1)
		return no(why, len, "%s", _("with context parallelism torchtitan "
		    "shards parameters over it (FSDP over dp_shard x cp)"));
	if (l->zero == 0 && l->dp > 1 && (l->tp > 1 || l->pp > 1 || l->cp > 1))
		return no(why, len, "%s", _("replicated data parallel (DDP) with "
		    "other parallelism is not supported: shard the parameters"));
	/* training.enable_cpu_offload moves parameters and gradients too */
	if (l->offload_optimizer)
		return no(why, len, "%s", _("torchtitan offloads parameters, gradients "
		    "and optimizer states together, not the optimizer alone"));
	return true;
}

static bool
check_deepspeed(const sl_layout *l, const sl_arch *a, char *why, size_t len)
{
	/*
	 * A PipelineModule's grid (deepspeed/runtime/pipe/topology.py,
	 * PipeDataParallelTopology) counts every rank that is not a stage as
	 * data parallel, and DeepSpeedConfig's batch identity
	 * (deepspeed/runtime/config.py, _batch_assertion) uses that count:
	 * tensor or context parallel ranks would break it.
	 */
	if (l->tp > 1 || l->cp > 1)
		return no(why, len, "%s", _("DeepSpeed's configuration has no tensor "
		    "or context parallelism"));
	/* deepspeed/moe/layer.py: MoE(ep_size=...) is set in the model's
	 * code, which a configuration does not reach */
	if (l->ep > 1)
		return no(why, len, "%s", _("DeepSpeed's configuration has no expert "
		    "parallelism"));
	if (l->pp > 1) {
		/* deepspeed/runtime/pipe/engine.py: "ZeRO-2 and ZeRO-3 are
		 * incompatible with pipeline parallelism" */
		if (l->zero > 1)
			return no(why, len, "%s", _("ZeRO-2 and ZeRO-3 are incompatible "
			    "with pipeline parallelism"));
		/* deepspeed/runtime/pipe/schedule.py TrainSchedule: one 1F1B
		 * schedule of one stage per rank */
		if (l->vpp > 1 || l->schedule != SL_SCHED_1F1B)
			return no(why, len, "%s", _("DeepSpeed pipelines run 1F1B with "
			    "one stage per rank"));
		/* deepspeed/runtime/pipe/module.py _partition_layers: the
		 * stages are even, by count or parameters */
		if (!even_stages(l) || (a != NULL && a->layers % l->pp != 0))
			return no(why, len, "%s", _("PipelineModule partitions layers "
			    "evenly"));
	}
	/* PipelineModule(activation_checkpoint_interval=...): every stage
	 * alike, whole layers */
	if (!uniform_recompute(l))
		return no(why, len, "%s", _("stages recompute differently; "
		    "activation_checkpoint_interval is one for all"));
	if (l->n_stages > 0 && l->stage_recompute != NULL &&
	    l->stage_recompute[0] == SL_RECOMP_SELECTIVE)
		return no(why, len, "%s", _("DeepSpeed recomputes whole layers"));
	/* bf16 {"enabled": true} and fp16 {"enabled": true} (with its loss
	 * scaler) keep fp32 master weights and states
	 * (deepspeed/runtime/precision_config.py) */
	if (l->precision != SL_PREC_BF16 && l->precision != SL_PREC_FP16 &&
	    l->precision != SL_PREC_FP32)
		return no(why, len, "%s", _("DeepSpeed trains in bf16 or fp16 with "
		    "fp32 master weights, or in fp32"));
	/* deepspeed/runtime/zero/config.py: offload_optimizer with ZeRO 1-3 */
	if (l->offload_optimizer && l->zero < 1)
		return no(why, len, "%s", _("optimizer offload needs ZeRO"));
	(void)a;
	return true;
}

bool
sl_layout_check(const sl_layout *l, const sl_arch *a, char *why, size_t len)
{
	if (why != NULL && len > 0)
		why[0] = '\0';
	if (!check_common(l, a, why, len))
		return false;
	switch (l->framework) {
	case SL_FW_MEGATRON:
		return check_megatron(l, a, why, len);
	case SL_FW_TORCHTITAN:
		return check_torchtitan(l, a, why, len);
	case SL_FW_DEEPSPEED:
		return check_deepspeed(l, a, why, len);
	default:
		return true;
	}
}

/* ------------------------------------------------ defaults by framework */

sl_precision
sl_framework_precision(sl_framework f)
{
	switch (f) {
	case SL_FW_MEGATRON:
		/* --bf16: bf16 weights, fp32 main gradients (arguments.py:
		 * accumulate_allreduce_grads_in_fp32 for bf16) */
		return SL_PREC_MEGATRON;
	case SL_FW_TORCHTITAN:
		/* mixed_precision_param bfloat16 over fp32 parameters */
		return SL_PREC_AMP;
	default:
		return SL_PREC_BF16;
	}
}
