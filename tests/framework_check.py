#!/usr/bin/env python3
"""framework_check.py: an export of `shardlab plan` checked as its framework
checks it.  Each rule restates the framework's own argument or configuration
code, with the file it comes from:

  Megatron-LM  megatron/training/arguments.py (the parser, validate_args),
               megatron/core/transformer/transformer_config.py
               (TransformerConfig.__post_init__),
               megatron/core/transformer/pipeline_parallel_layer_layout.py,
               megatron/core/num_microbatches_calculator.py,
               megatron/core/pipeline_parallel/schedules.py,
               megatron/training/tokenizer/tokenizer.py (_NullTokenizer)
  DeepSpeed    deepspeed/runtime/config.py (DeepSpeedConfig,
               _batch_assertion), deepspeed/runtime/zero/config.py,
               deepspeed/runtime/pipe/engine.py, deepspeed/runtime/pipe/module.py
  torchtitan   torchtitan/config/job_config.py, torchtitan/distributed/
               parallel_dims.py, torchtitan/train.py
  DTensor      torch/distributed/tensor/parallel/style.py, module names of
               transformers' LlamaForCausalLM and GPT2LMHeadModel and of
               torchtitan's LLaMA

usage: framework_check.py KIND FILE --world N [--model JSON]
KIND is megatron, deepspeed, torchtitan or dtensor.  --model gives what the
export must say about the model: {"layers", "hidden", "heads", "kv_heads",
"ffn", "vocab", "seq", "family"}.  It prints the prediction the export
carries (step_time_ns, peak_bytes) and exits 0, or names the broken rule and
exits 1.
"""
import argparse
import ast
import json
import re
import shlex
import sys


class Reject(Exception):
    pass


def need(cond, why):
    if not cond:
        raise Reject(why)


def prediction(text):
    m = re.search(r"step_time_ns=(\d+) peak_bytes=(\d+)", text)
    need(m is not None, "the export carries no predicted step time and peak")
    return int(m.group(1)), int(m.group(2))


# ------------------------------------------------------------ Megatron-LM

# The arguments the export may use, with their types, as the parser of
# megatron/training/arguments.py declares them (store_true: None).
MEGATRON_ARGS = {
    "num-layers": int, "hidden-size": int, "ffn-hidden-size": int,
    "num-attention-heads": int, "group-query-attention": None,
    "num-query-groups": int, "seq-length": int,
    "max-position-embeddings": int, "normalization": str, "swiglu": None,
    "position-embedding-type": str, "untie-embeddings-and-output-weights": None,
    "disable-bias-linear": None, "attention-dropout": float,
    "hidden-dropout": float, "attention-backend": str,
    "bert-no-binary-head": None, "tokenizer-type": str, "vocab-size": int,
    "make-vocab-size-divisible-by": int, "tensor-model-parallel-size": int,
    "sequence-parallel": None, "pipeline-model-parallel-size": int,
    "decoder-first-pipeline-num-layers": int,
    "decoder-last-pipeline-num-layers": int,
    "pipeline-model-parallel-layout": str,
    "num-layers-per-virtual-pipeline-stage": int,
    "num-virtual-stages-per-pipeline-rank": int,
    "context-parallel-size": int, "micro-batch-size": int,
    "global-batch-size": int, "bf16": None, "fp16": None,
    # _add_mixed_precision_args: fp16's loss scaling (None: dynamic)
    "loss-scale": float, "initial-loss-scale": float, "min-loss-scale": float,
    "loss-scale-window": float, "hysteresis": int,
    "grad-reduce-in-bf16": None, "recompute-granularity": str,
    "recompute-method": str, "recompute-num-layers": int, "optimizer": str,
    "lr": float, "min-lr": float, "lr-decay-style": str,
    "lr-warmup-iters": int, "weight-decay": float, "clip-grad": float,
    "adam-beta1": float, "adam-beta2": float,
    "use-distributed-optimizer": None, "overlap-grad-reduce": None,
    "overlap-param-gather": None, "optimizer-cpu-offload": None,
    "use-precision-aware-optimizer": None,
    "optimizer-offload-fraction": float, "train-iters": int,
    # _add_moe_args and _add_mla_args
    "num-experts": int, "moe-router-topk": int, "moe-ffn-hidden-size": int,
    "moe-layer-freq": str, "moe-shared-expert-intermediate-size": int,
    "moe-router-score-function": str, "moe-router-enable-expert-bias": None,
    "expert-model-parallel-size": int, "expert-tensor-parallel-size": int,
    "moe-grouped-gemm": None, "moe-token-dispatcher-type": str,
    "moe-expert-capacity-factor": float,
    "moe-pad-expert-input-to-capacity": None, "multi-latent-attention": None,
    "q-lora-rank": int, "kv-lora-rank": int, "qk-head-dim": int,
    "qk-pos-emb-head-dim": int, "v-head-dim": int,
    "log-interval": int, "eval-iters": int, "mock-data": None,
}
CHOICES = {
    "normalization": {"LayerNorm", "RMSNorm"},
    "position-embedding-type": {"learned_absolute", "rope", "mrope",
                                "relative", "none"},
    "recompute-granularity": {"full", "selective"},
    "recompute-method": {"uniform", "block"},
    "optimizer": {"adam", "sgd", "muon", "dist_muon"},
    "lr-decay-style": {"constant", "linear", "cosine",
                       "inverse-square-root", "WSD"},
    "attention-backend": {"flash", "fused", "unfused", "local", "auto"},
    "moe-router-score-function": {"softmax", "sigmoid"},
    "moe-token-dispatcher-type": {"allgather", "alltoall", "flex"},
}


def moe_layer_freq(text, layers):
    """arguments.py moe_freq_type: an int (every n-th layer) or a Python
    list expression of 0 and 1, one per layer."""
    if re.fullmatch(r"\d+", text):
        n = int(text)
        return [1 if i % n == 0 else 0 for i in range(layers)]
    need(re.fullmatch(r"[\[\]()\d*+, ]+", text) is not None,
         "--moe-layer-freq: invalid pattern %r" % text)
    pat = eval(text, {"__builtins__": {}})
    need(isinstance(pat, list) and len(pat) == layers,
         "Invalid length of moe_layer_pattern: %d, expected %d"
         % (len(pat) if isinstance(pat, list) else -1, layers))
    return pat


def check_experts(a, world, tp, pp, cp, dp, model):
    """A mixture's arguments: validate_args (arguments.py), the expert
    rank generator of initialize_model_parallel (megatron/core/
    parallel_state.py) and TransformerConfig.__post_init__."""
    ep = a.get("expert-model-parallel-size", 1)
    etp = a.get("expert-tensor-parallel-size", tp)
    E = a.get("num-experts")
    if ep > 1:
        need(E is not None, "num_experts must be non None to use expert "
             "model parallelism")
        need(E % ep == 0, "Number of experts should be a multiple of expert "
             "model parallel_size.")
        need(not a.get("fp16"), "Expert parallelism is not supported with "
             "fp16 training.")
    if a.get("moe-grouped-gemm"):
        need(a.get("bf16"), "Currently GroupedGEMM for MoE only supports bf16 "
             "dtype.")
    # parallel_state.py: decoder_world_size % (etp * ep * pp)
    need(world % (etp * ep * pp) == 0, "decoder world_size (%d) is not "
         "divisible by expert_tensor_model_pipeline_parallel size (%d)"
         % (world, etp * ep * pp))
    if E is None:
        return
    need(1 <= a.get("moe-router-topk", 2) <= E, "moe_router_topk above "
         "num_moe_experts")
    if ep > 1 and tp > 1:
        need(a.get("sequence-parallel"), "When using expert parallelism and "
             "tensor parallelism, sequence parallelism must be used.")
    if "moe-expert-capacity-factor" in a:
        need(a.get("moe-token-dispatcher-type", "allgather") in
             ("alltoall", "alltoall_seq"), "moe_expert_capacity_factor only "
             "works with alltoall token dispatcher")
    if a.get("moe-pad-expert-input-to-capacity"):
        need("moe-expert-capacity-factor" in a, "moe_expert_capacity_factor "
             "must be set to use moe_pad_expert_input_to_capacity")
    if a.get("moe-router-enable-expert-bias"):
        need(a.get("moe-router-score-function") == "sigmoid", "Expert bias "
             "for aux-loss-free routing only supports sigmoid score function.")
    ffn = a.get("moe-ffn-hidden-size", a.get("ffn-hidden-size"))
    # TEGroupedMLP: fc1 column-parallel over the expert tensor parallel group
    need(ffn % etp == 0, "moe_ffn_hidden_size %d is not divisible by %d"
         % (ffn, etp))
    freq = moe_layer_freq(a.get("moe-layer-freq", "1"), a["num-layers"])
    if model and "experts" in model:
        need(E == model["experts"], "--num-experts %d, the model has %d"
             % (E, model["experts"]))
        need(a.get("moe-router-topk", 2) == model["topk"], "--moe-router-topk")
        need(ffn == model["moe_ffn"], "--moe-ffn-hidden-size %d, the model "
             "has %d" % (ffn, model["moe_ffn"]))
        need(sum(freq) == model["moe_layers"], "%d MoE layers, the model has %d"
             % (sum(freq), model["moe_layers"]))
        need(a.get("moe-shared-expert-intermediate-size", 0) ==
             model.get("shared_ffn", 0), "shared experts' width")
        need(ep == model.get("ep", ep), "--expert-model-parallel-size %d, "
             "the plan's %d" % (ep, model.get("ep", ep)))


def megatron_command(text):
    """The torchrun line (with its continuations) and the environment."""
    env = {}
    lines = [l for l in text.splitlines() if l and not l.startswith("#")]
    joined = []
    cur = ""
    for l in lines:
        if l.endswith("\\"):
            cur += l[:-1] + " "
        else:
            joined.append(cur + l)
            cur = ""
    cmd = None
    for l in joined:
        words = shlex.split(l)
        if words and words[0] == "export":
            for w in words[1:]:
                k, _, v = w.partition("=")
                env[k] = v
        elif words and words[0] == "torchrun":
            need(cmd is None, "two torchrun commands")
            cmd = words
    need(cmd is not None, "no torchrun command")
    return env, cmd


def parse_megatron(words):
    i = 1
    launcher = {}
    while i < len(words) and words[i].startswith("--"):
        launcher[words[i][2:]] = words[i + 1]
        i += 2
    need(i < len(words) and words[i] in ("pretrain_gpt.py", "pretrain_bert.py"),
         "no pretrain_gpt.py or pretrain_bert.py after torchrun's options")
    script = words[i]
    args = {}
    i += 1
    while i < len(words):
        w = words[i]
        need(w.startswith("--"), "stray word %r" % w)
        name = w[2:]
        need(name in MEGATRON_ARGS, "unknown Megatron-LM argument --%s" % name)
        need(name not in args, "--%s given twice" % name)
        typ = MEGATRON_ARGS[name]
        if typ is None:
            args[name] = True
            i += 1
        else:
            need(i + 1 < len(words), "--%s needs a value" % name)
            try:
                args[name] = typ(words[i + 1])
            except ValueError:
                raise Reject("--%s: %r is not a %s" % (name, words[i + 1],
                                                       typ.__name__))
            if name in CHOICES:
                need(args[name] in CHOICES[name],
                     "--%s: invalid choice %r" % (name, args[name]))
            i += 2
    return launcher, script, args


def layout_stages(layout, pp):
    """pipeline_parallel_layer_layout.py parse_str_to_list and
    validate_layer_layout: stages split by '|', x*n unrolled."""
    s = layout.replace(",", "")
    s = re.sub(r"\(([^)]+)\)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), s)
    s = re.sub(r"(.)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), s)
    stages = []
    for st in s.split("|"):
        for ch in st:
            need(ch in "ELtm", "layout: invalid layer character %r" % ch)
        stages.append(st)
    need(len(stages) % pp == 0,
         "pipeline_model_parallel_layout must be divisible by "
         "pipeline_model_parallel_size")
    flat = "".join(stages)
    need(flat[:1] == "E", "layout: the first layer must be embedding")
    need(flat[-1:] == "L", "layout: the last layer must be loss")
    need(flat.count("E") == 1 and flat.count("L") == 1,
         "layout: embedding and loss exactly once")
    return [st.count("t") for st in stages], len(stages) // pp


def check_megatron(text, world, model):
    env, words = megatron_command(text)
    launcher, script, a = parse_megatron(words)
    need(int(launcher.get("nproc_per_node", 1)) * int(launcher.get("nnodes", 1))
         == world, "torchrun starts %s x %s processes, not %d" % (
             launcher.get("nproc_per_node"), launcher.get("nnodes"), world))
    tp = a.get("tensor-model-parallel-size", 1)
    pp = a.get("pipeline-model-parallel-size", 1)
    cp = a.get("context-parallel-size", 1)
    L = a.get("num-layers")
    # validate_args: world size divisible by the model size
    need(world % (tp * pp * cp) == 0, "world size (%d) is not divisible by "
         "total_model_size (%d)" % (world, tp * pp * cp))
    dp = world // (tp * pp * cp)
    for req in ("num-layers", "hidden-size", "num-attention-heads",
                "max-position-embeddings", "micro-batch-size", "seq-length"):
        need(req in a, "%s argument is None" % req.replace("-", "_"))
    mbs, gbs = a["micro-batch-size"], a.get("global-batch-size",
                                            a["micro-batch-size"] * dp)
    # num_microbatches_calculator.py
    need(gbs % (mbs * dp) == 0, "global batch size (%d) is not divisible by "
         "micro batch size (%d) times data parallel size (%d)" % (gbs, mbs, dp))
    m = gbs // (mbs * dp)
    # validate_args: only one of the layout arguments
    n_layout = sum(k in a for k in ("num-layers-per-virtual-pipeline-stage",
                                    "num-virtual-stages-per-pipeline-rank",
                                    "pipeline-model-parallel-layout"))
    need(n_layout <= 1, "no more than one of --num-layers-per-virtual-pipeline-"
         "stage, --num-virtual-stages-per-pipeline-rank, "
         "--pipeline-model-parallel-layout")
    first = a.get("decoder-first-pipeline-num-layers")
    last = a.get("decoder-last-pipeline-num-layers")
    vpp = None
    stages = None
    if "pipeline-model-parallel-layout" in a:
        need(first is None and last is None, "pipeline_model_parallel_layout "
             "cannot be set with other pipeline layout arguments")
        stages, vpp = layout_stages(a["pipeline-model-parallel-layout"], pp)
        need(sum(stages) == L, "Number of decoder layers %d must match "
             "num_layers %d" % (sum(stages), L))
        vpp = vpp if vpp > 1 else None
    elif "num-layers-per-virtual-pipeline-stage" in a:
        need(first is None and last is None, "please use --num-virtual-stages-"
             "per-pipeline-rank to specify virtual pipeline parallel degree "
             "when enable uneven pipeline parallelism")
        need(L % pp == 0, "number of layers of the model must be divisible "
             "pipeline model parallel size")
        per = L // pp
        n = a["num-layers-per-virtual-pipeline-stage"]
        need(per % n == 0, "number of layers per pipeline stage must be "
             "divisible number of layers per virtual pipeline stage")
        vpp = per // n if per // n > 1 else None
        stages = [n] * (pp * (per // n))
    elif first is not None or last is not None:
        # transformer_config.py __post_init__, uneven pipeline
        rest, mid = L, pp
        if first is not None:
            need(first > 0, "num_layers_in_first_pipeline_stage must be larger than 0")
            rest -= first
            mid -= 1
        if last is not None:
            need(last > 0, "num_layers_in_last_pipeline_stage must be larger than 0")
            rest -= last
            mid -= 1
        need(bool(rest) == bool(mid), "Mismatch: %d middle layers remaining but "
             "%d middle PP stages available." % (rest, mid))
        need(not mid or rest % mid == 0, "number of layers at middle stage: %d "
             "must be divisible by the middle pipeline model parallel size %d"
             % (rest, mid))
        stages = ([first] if first is not None else []) + \
            ([rest // mid] * mid if mid else []) + \
            ([last] if last is not None else [])
    else:
        need(L % pp == 0, "Number of layers should be divisible by the "
             "pipeline-model-parallel size")
        stages = [L // pp] * pp
    if vpp is not None:
        # validate_args with --overlap-p2p-communication (the default)
        need(pp > 1, "When interleaved schedule is used, pipeline-model-"
             "parallel size should be greater than 1")
        # schedules.py forward_backward_pipelining_with_interleaving
        need(m % pp == 0, "number of microbatches (%d) is not divisible by "
             "pipeline-model-parallel-size (%d) when using interleaved "
             "schedule" % (m, pp))
    # TransformerConfig.__post_init__
    heads = a["num-attention-heads"]
    groups = a.get("num-query-groups") if a.get("group-query-attention") else heads
    need(heads % tp == 0, "num_attention_heads (%d) must be a multiple of "
         "tensor_model_parallel_size (%d)." % (heads, tp))
    need(groups % tp == 0, "num_query_groups (%d) must be a multiple of "
         "tensor_model_parallel_size (%d)." % (groups, tp))
    ffn = a.get("ffn-hidden-size", 4 * a["hidden-size"])
    # ColumnParallelLinear: divide(output_size, world_size)
    need(ffn % tp == 0, "ffn_hidden_size %d is not divisible by %d" % (ffn, tp))
    need(a["hidden-size"] % heads == 0, "hidden_size % num_attention_heads")
    # validate_args
    if cp > 1:
        need(a["seq-length"] % (2 * cp) == 0, "seq-length should be a multiple "
             "of 2 * context-parallel-size if context-parallel-size > 1.")
    need(a["max-position-embeddings"] >= a["seq-length"],
         "max_position_embeddings must be greater than or equal to seq_length")
    need(not (a.get("bf16") and a.get("fp16")), "bf16 and fp16 together")
    # loss scaling is fp16's (megatron/training/training.py builds the
    # grad scaler for args.fp16 only): under bf16 or fp32 it is ignored,
    # which an export must not rely on
    for k in ("loss-scale", "initial-loss-scale", "min-loss-scale",
              "loss-scale-window", "hysteresis"):
        if k in a:
            need(a.get("fp16"), "--%s without --fp16" % k)
    if a.get("fp16"):
        # megatron/core/optimizer/grad_scaler.py DynamicGradScaler
        need(a.get("loss-scale") is None or a["loss-scale"] > 0,
             "static loss scale must be positive")
        need(a.get("initial-loss-scale", 2**32) >= a.get("min-loss-scale", 1.0) > 0,
             "initial_scale >= min_scale > 0")
        need(a.get("hysteresis", 2) > 0 and a.get("loss-scale-window", 1000) > 0,
             "hysteresis and growth interval positive")
    if tp > 1 or cp > 1:
        need(env.get("CUDA_DEVICE_MAX_CONNECTIONS") == "1",
             "Using tensor model parallelism or context parallelism require "
             "setting the environment variable CUDA_DEVICE_MAX_CONNECTIONS to 1")
    if a.get("overlap-param-gather"):
        need(a.get("use-distributed-optimizer"), "--overlap-param-gather only "
             "supported with distributed optimizer or megatron fsdp")
        need(a.get("overlap-grad-reduce"), "Must use --overlap-param-gather "
             "with --overlap-grad-reduce")
    if a.get("optimizer-cpu-offload"):
        need(a.get("use-precision-aware-optimizer"), "The optimizer cpu offload "
             "must be used in conjunction with `--use-precision-aware-optimizer`")
    g = a.get("recompute-granularity")
    if g == "selective":
        need("recompute-method" not in a, "recompute method is not yet "
             "supported for selective recomputing granularity")
    if g == "full":
        need("recompute-method" in a, "Using recompute_granularity: full so "
             "recompute_method must be \"block\" or \"uniform\"")
        need("recompute-num-layers" in a, "When using recompute_granularity: "
             "full recompute_num_layers must be between 1 and "
             "num_layers_per_pipeline_rank")
    if a.get("sequence-parallel"):
        need(tp > 1, "sequence parallelism without tensor parallelism is "
             "switched off (the export says what it does not run)")
    need(a.get("tokenizer-type") == "NullTokenizer" and "vocab-size" in a,
         "no tokenizer sized to the model")
    # tokenizer.py: NullTokenizer(n) has n + 1 entries, padded to a multiple
    # of make_vocab_size_divisible_by x tensor parallel
    vocab = a["vocab-size"] + 1
    mult = a.get("make-vocab-size-divisible-by", 128) * tp
    padded = -(-vocab // mult) * mult
    if model:
        need(L == model["layers"], "--num-layers %d, the model has %d" % (L, model["layers"]))
        need(a["hidden-size"] == model["hidden"], "--hidden-size")
        need(heads == model["heads"], "--num-attention-heads")
        need(groups == model["kv_heads"], "key/value heads (--num-query-groups)")
        need(ffn == model["ffn"], "--ffn-hidden-size %d, the model has %d" % (ffn, model["ffn"]))
        need(a["seq-length"] == model["seq"], "--seq-length")
        need(vocab == model["vocab"], "vocabulary %d, the model has %d" % (vocab, model["vocab"]))
        need(padded - vocab < tp, "vocabulary padded by %d" % (padded - vocab))
        if model["family"] == "llama":
            need(a.get("normalization") == "RMSNorm" and a.get("swiglu") and
                 a.get("position-embedding-type") == "rope" and
                 a.get("untie-embeddings-and-output-weights") and
                 a.get("disable-bias-linear"),
                 "a LLaMA needs RMSNorm, SwiGLU, RoPE, untied embeddings and "
                 "no biases")
        need((script == "pretrain_bert.py") == (model["family"] == "bert"),
             "the script for a %s" % model["family"])
    check_experts(a, world, tp, pp, cp, dp, model)
    precision = ("megatron" if a.get("bf16") and not a.get("grad-reduce-in-bf16")
                 else "bf16" if a.get("bf16") else "fp16" if a.get("fp16")
                 else "fp32")
    return dict(tp=tp, pp=pp, cp=cp, dp=dp, stages=stages, vpp=vpp or 1,
                micro_batch=mbs, micro_batches=m, global_batch=gbs,
                precision=precision, recompute=g or "none")


# ------------------------------------------------------------- DeepSpeed

# deepspeed/runtime/zero/config.py (pydantic, extra fields forbidden) and
# offload_config.py: the keys the export may use.
ZERO_KEYS = {"stage", "offload_optimizer", "offload_param", "overlap_comm",
             "contiguous_gradients", "reduce_bucket_size",
             "allgather_bucket_size", "reduce_scatter", "allgather_partitions",
             "stage3_prefetch_bucket_size", "stage3_param_persistence_threshold",
             "stage3_max_live_parameters", "stage3_max_reuse_distance",
             "stage3_gather_16bit_weights_on_model_save", "sub_group_size"}
# deepspeed/runtime/precision_config.py: DeepSpeedFP16Config and
# DeepSpeedBF16Config (DeepSpeedConfigModel: extra fields forbidden)
FP16_KEYS = {"enabled", "auto_cast", "loss_scale", "initial_scale_power",
             "loss_scale_window", "hysteresis", "consecutive_hysteresis",
             "min_loss_scale"}
BF16_KEYS = {"enabled", "immediate_grad_update", "check_grad_overflow"}
OFFLOAD_KEYS = {"device", "pin_memory", "buffer_count", "fast_init", "ratio",
                "nvme_path", "pipeline_read", "pipeline_write"}


def check_deepspeed(text, world, model):
    cfg = json.loads(text)
    stages = 1
    m = re.search(r"num_stages=(\d+)", cfg.get("comment", ""))
    if m:
        stages = int(m.group(1))
    need(world % stages == 0, "%d ranks do not divide into %d stages" % (world, stages))
    # pipe/topology.py PipeDataParallelTopology: every rank not a stage is
    # data parallel; config.py DeepSpeedConfig uses that count
    dp = world // stages
    tb = cfg.get("train_batch_size")
    mb = cfg.get("train_micro_batch_size_per_gpu")
    ga = cfg.get("gradient_accumulation_steps")
    need(all(isinstance(x, int) and x > 0 for x in (tb, mb, ga)),
         "train_batch_size, train_micro_batch_size_per_gpu and "
         "gradient_accumulation_steps must be positive integers")
    # config.py _batch_assertion
    need(tb == mb * ga * dp, "Check batch related parameters. train_batch_size "
         "is not equal to micro_batch_per_gpu * gradient_acc_step * world_size "
         "%d != %d * %d * %d" % (tb, mb, ga, dp))
    z = cfg.get("zero_optimization", {})
    need(set(z) <= ZERO_KEYS, "zero_optimization: unknown %s" % (set(z) - ZERO_KEYS))
    stage = z.get("stage", 0)
    need(stage in (0, 1, 2, 3), "DeepSpeedConfig: Maximum supported ZeRO stage is 3")
    for k in ("offload_optimizer", "offload_param"):
        if k in z:
            need(set(z[k]) <= OFFLOAD_KEYS, "%s: unknown keys" % k)
            need(z[k].get("device") in ("cpu", "nvme", "none"), "%s.device" % k)
            need(stage >= 1, "offload_optimizer needs ZeRO")
    if stages > 1:
        # pipe/engine.py
        need(stage < 2, "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism")
    need(not (cfg.get("fp16", {}).get("enabled") and cfg.get("bf16", {}).get("enabled")),
         "bfloat16 and fp16 modes cannot be simultaneously enabled")
    need(set(cfg.get("fp16", {})) <= FP16_KEYS, "fp16: unknown %s"
         % (set(cfg.get("fp16", {})) - FP16_KEYS))
    need(set(cfg.get("bf16", {})) <= BF16_KEYS, "bf16: unknown %s"
         % (set(cfg.get("bf16", {})) - BF16_KEYS))
    fp16 = cfg.get("fp16", {})
    if fp16.get("enabled"):
        need(isinstance(fp16.get("loss_scale", 0), (int, float)) and
             fp16.get("loss_scale", 0) >= 0, "fp16.loss_scale")
        need(isinstance(fp16.get("initial_scale_power", 16), int), "fp16.initial_scale_power")
        need(fp16.get("min_loss_scale", 1) > 0, "fp16.min_loss_scale")
    if model and stages > 1:
        # pipe/module.py: layers partitioned evenly
        need(model["layers"] % stages == 0, "PipelineModule cannot partition "
             "%d layers evenly over %d stages" % (model["layers"], stages))
    return dict(dp=dp, pp=stages, micro_batch=mb, micro_batches=ga,
                global_batch=tb, zero=stage)


# ------------------------------------------------------------ torchtitan

# torchtitan/config/job_config.py: the sections and fields the export uses
TITAN_KEYS = {
    "job": {"dump_folder", "description"},
    "model": {"name", "flavor", "tokenizer_path"},
    "optimizer": {"name", "lr", "beta1", "beta2", "eps", "weight_decay"},
    "lr_scheduler": {"warmup_steps"},
    "training": {"local_batch_size", "global_batch_size", "seq_len", "steps",
                 "max_norm", "mixed_precision_param", "mixed_precision_reduce",
                 "dataset"},
    "parallelism": {"data_parallel_replicate_degree", "data_parallel_shard_degree",
                    "tensor_parallel_degree", "context_parallel_degree",
                    "pipeline_parallel_degree", "fsdp_reshard_after_forward",
                    "disable_loss_parallel", "pipeline_parallel_schedule",
                    "pipeline_parallel_microbatch_size",
                    "pipeline_parallel_split_points",
                    "pipeline_parallel_layers_per_stage"},
    "activation_checkpoint": {"mode", "selective_ac_option"},
}
# torch/distributed/pipelining/schedules.py, by name
TITAN_SCHEDULES = {"1F1B", "GPipe", "Interleaved1F1B", "LoopedBFS",
                   "InterleavedZeroBubble", "ZBVZeroBubble"}


def check_torchtitan(text, world, model):
    import tomllib
    cfg = tomllib.loads(text)
    for sec, keys in cfg.items():
        need(sec in TITAN_KEYS, "unknown section [%s]" % sec)
        need(set(keys) <= TITAN_KEYS[sec], "[%s]: unknown %s" % (
            sec, set(keys) - TITAN_KEYS[sec]))
    par, tr = cfg.get("parallelism", {}), cfg.get("training", {})
    rep = par.get("data_parallel_replicate_degree", 1)
    shard = par.get("data_parallel_shard_degree", -1)
    tp = par.get("tensor_parallel_degree", 1)
    cp = par.get("context_parallel_degree", 1)
    pp = par.get("pipeline_parallel_degree", 1)
    # parallel_dims.py: -1 takes the ranks left
    if shard == -1:
        need(world % (rep * tp * cp * pp) == 0, "dp_shard cannot be inferred")
        shard = world // (rep * tp * cp * pp)
    need(rep * shard * tp * cp * pp == world, "Invalid parallel dims: "
         "dp_replicate(%d) * dp_shard(%d) * cp(%d) * tp(%d) * pp(%d) != "
         "WORLD_SIZE(%d)" % (rep, shard, cp, tp, pp, world))
    need(par.get("fsdp_reshard_after_forward", "default") in
         ("default", "always", "never"), "fsdp_reshard_after_forward")
    need(tr.get("mixed_precision_param", "bfloat16") in ("bfloat16", "float32"),
         "mixed_precision_param")
    need(tr.get("mixed_precision_reduce", "float32") == "float32",
         "mixed_precision_reduce")
    ac = cfg.get("activation_checkpoint", {})
    need(ac.get("mode", "selective") in ("selective", "full", "none"),
         "activation_checkpoint.mode")
    # torchtitan/distributed/activation_checkpoint.py,
    # _apply_ac_to_transformer_block: "op" or a layer frequency
    opt = ac.get("selective_ac_option", "2")
    need(ac.get("mode", "selective") != "selective" or opt == "op" or
         opt.isdigit(), "Invalid selective AC option: %s" % opt)
    dp = rep * shard
    local = tr.get("local_batch_size", 8)
    gbs = tr.get("global_batch_size", -1)
    if gbs < 0:
        gbs = local * dp
    # train.py: global batch divisible by local batch x data parallel
    need(gbs % (local * dp) == 0, "global batch size must be multiple of "
         "local batch size times data-parallel degree")
    accum = gbs // (local * dp)
    mb = local
    nmb = 1
    if pp > 1:
        sched = par.get("pipeline_parallel_schedule", "1F1B")
        need(sched in TITAN_SCHEDULES, "pipeline_parallel_schedule %r" % sched)
        mbs = par.get("pipeline_parallel_microbatch_size", 1)
        need(local % mbs == 0, "local batch is not a multiple of the "
             "pipeline microbatch size")
        nmb = local // mbs
        mb = mbs
        splits = par.get("pipeline_parallel_split_points", [])
        n_stages = len(splits) + 1
        vpp = n_stages // pp
        need(n_stages % pp == 0, "%d stages over %d ranks" % (n_stages, pp))
        need((vpp > 1) == (sched in ("Interleaved1F1B", "LoopedBFS",
                                    "InterleavedZeroBubble", "ZBVZeroBubble")),
             "schedule %s with %d stages per rank" % (sched, vpp))
        # schedules.py: every stage busy
        need(nmb >= pp, "%d microbatches for %d stages" % (nmb, pp))
        if vpp > 1:
            need(nmb % pp == 0, "Interleaved 1F1B: microbatches a multiple of "
                 "the ranks")
        firsts = [int(re.fullmatch(r"layers\.(\d+)", s).group(1)) for s in splits]
        need(firsts == sorted(set(firsts)) and (not firsts or firsts[0] > 0),
             "split points out of order")
        if model:
            need(not firsts or firsts[-1] < model["layers"], "split point past the last layer")
    if cp > 1:
        need(tr.get("seq_len", 2048) % (2 * cp) == 0, "seq_len a multiple of 2 cp")
    if model:
        need(model["family"] == "llama", "torchtitan trains the LLaMA family")
        need(tr.get("seq_len") == model["seq"], "seq_len")
        need(model["heads"] % tp == 0 and model["kv_heads"] % tp == 0,
             "heads over tensor parallel")
    return dict(tp=tp, pp=pp, cp=cp, dp=dp, micro_batch=mb,
                micro_batches=nmb * accum, global_batch=gbs)


# --------------------------------------------------------------- DTensor

HF_LLAMA = {"input_layernorm", "self_attn", "self_attn.q_proj",
            "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
            "post_attention_layernorm", "mlp", "mlp.gate_proj", "mlp.up_proj",
            "mlp.down_proj", "model.embed_tokens", "model.norm", "lm_head"}
TITAN_LLAMA = {"attention_norm", "attention", "attention.wq", "attention.wk",
               "attention.wv", "attention.wo", "ffn_norm", "feed_forward",
               "feed_forward.w1", "feed_forward.w2", "feed_forward.w3",
               "tok_embeddings", "norm", "output"}


def check_dtensor(text, world, model):
    tree = ast.parse(text)
    consts = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            t = node.targets[0]
            try:
                val = ast.literal_eval(node.value)
            except ValueError:
                continue
            if isinstance(t, ast.Name):
                consts[t.id] = val
            elif isinstance(t, ast.Tuple):
                for e, v in zip(t.elts, val):
                    consts[e.id] = v
    for k in ("PP", "DP", "CP", "TP", "STAGE_LAYERS", "MICRO_BATCH",
              "MICRO_BATCHES", "GLOBAL_BATCH", "SEQ"):
        need(k in consts, "no constant %s" % k)
    need(consts["PP"] * consts["DP"] * consts["CP"] * consts["TP"] == world,
         "the device mesh is not the %d devices" % world)
    # HSDP: dp_replicate x dp_shard is DP (torchtitan/distributed/
    # parallel_dims.py, ParallelDims._validate)
    rep = consts.get("DP_REPLICATE", 1)
    need(rep >= 1 and consts["DP"] % rep == 0,
         "DP_REPLICATE %d does not divide DP %d" % (rep, consts["DP"]))
    need(rep == 1 or consts.get("SHARD_PARAMETERS") is True,
         "DP_REPLICATE without sharded parameters")
    need(consts["GLOBAL_BATCH"] == consts["MICRO_BATCH"] * consts["DP"] *
         consts["MICRO_BATCHES"], "the batch")
    # every key of a parallelize plan names a module of the family
    keys = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k in node.keys:
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    keys.add(k.value)
    plan_keys = {k for k in keys if k not in ("hidden_states",)}
    need(plan_keys <= HF_LLAMA | TITAN_LLAMA, "modules that no model has: %s"
         % sorted(plan_keys - HF_LLAMA - TITAN_LLAMA))
    need("fully_shard(model" in text, "the root is not fully_shard-ed")
    need("MixedPrecisionPolicy" in text, "no mixed precision policy")
    if consts["TP"] > 1:
        need("SequenceParallel()" in text and "loss_parallel" in text,
             "tensor parallel without sequence parallel and a parallel loss")
        need(model is None or model["family"] == "llama",
             "tensor parallel of a %s" % (model or {}).get("family"))
    if model:
        need(sum(consts["STAGE_LAYERS"]) == model["layers"], "stage layers")
        need(consts["SEQ"] == model["seq"], "SEQ")
    return dict(tp=consts["TP"], pp=consts["PP"], cp=consts["CP"],
                dp=consts["DP"], micro_batch=consts["MICRO_BATCH"],
                micro_batches=consts["MICRO_BATCHES"],
                global_batch=consts["GLOBAL_BATCH"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["megatron", "deepspeed", "torchtitan", "dtensor"])
    ap.add_argument("file")
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--model")
    a = ap.parse_args()
    text = open(a.file, encoding="utf-8").read()
    model = json.loads(a.model) if a.model else None
    try:
        got = {"megatron": check_megatron, "deepspeed": check_deepspeed,
               "torchtitan": check_torchtitan, "dtensor": check_dtensor}[a.kind](
                   text, a.world, model)
        step, peak = prediction(text)
    except Reject as e:
        print("%s: %s rejects it: %s" % (a.file, a.kind, e), file=sys.stderr)
        return 1
    got.update(step_time_ns=step, peak_bytes=peak)
    print(json.dumps(got, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
