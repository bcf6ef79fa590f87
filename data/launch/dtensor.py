# dtensor.py: the body of `shardlab plan --export dtensor`.  The export
# writes the plan's constants (PP, DP, DP_REPLICATE, CP, TP, VIRTUAL_STAGES,
# STAGE_LAYERS,
# SCHEDULE, MICRO_BATCH, MICRO_BATCHES, GLOBAL_BATCH, SEQ, RECOMPUTE,
# SHARD_PARAMETERS, RESHARD_AFTER_FORWARD, PARAM_DTYPE, PREDICTED) and then
# this file.  Every function reads only those constants and its arguments.
from contextlib import nullcontext

import torch
import torch.nn.functional as F
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    checkpoint_wrapper)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel, PrepareModuleInput, RowwiseParallel, SequenceParallel,
    loss_parallel, parallelize_module)

def make_mesh(device_type="cuda"):
    # data parallel as torchtitan lays it out (torchtitan/distributed/
    # parallel_dims.py): FSDP2 shards within dp_shard and, under HSDP,
    # replicates across dp_replicate
    return init_device_mesh(device_type,
                            (PP, DP_REPLICATE, DP // DP_REPLICATE, CP, TP),
                            mesh_dim_names=("pp", "dp_replicate", "dp_shard",
                                            "cp", "tp"))


def naming(model):
    if hasattr(model, "tok_embeddings") and hasattr(model, "layers"):
        return "torchtitan"
    if hasattr(model, "model") and hasattr(model.model, "embed_tokens"):
        return "llama"
    if hasattr(model, "transformer") and hasattr(model.transformer, "wte"):
        return "gpt2"
    raise ValueError("not LlamaForCausalLM, GPT2LMHeadModel or torchtitan's LLaMA")


def blocks(model):
    kind = naming(model)
    if kind == "torchtitan":
        return model.layers
    return model.model.layers if kind == "llama" else model.transformer.h


def _has(model, path):
    """Whether model holds a module at path (a stage may hold None there)."""
    m = model
    for part in path.split("."):
        m = getattr(m, part, None)
        if m is None:
            return False
    return True


def _block_items(model):
    bl = blocks(model)
    return list(bl.items()) if isinstance(bl, torch.nn.ModuleDict) \
        else list(enumerate(bl))


def _set_block(model, key, module):
    bl = blocks(model)
    if isinstance(bl, torch.nn.ModuleDict):
        bl.register_module(key, module)
    else:
        bl[key] = module


# torchtitan/models/llama3/infra/parallelize.py apply_tp, by each naming
def _apply_tp(model, tp):
    kind = naming(model)
    if kind == "gpt2":
        raise ValueError("GPT-2's fused Conv1D c_attn cannot be split by heads")
    emb, norm, out = (("tok_embeddings", "norm", "output") if kind == "torchtitan"
                      else ("model.embed_tokens", "model.norm", "lm_head"))
    top = {norm: SequenceParallel(),
           out: ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1),
                                use_local_output=False),
           emb: RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1))}
    # a pipeline stage holds the embedding, the final norm and the output
    # layer only where they are
    parallelize_module(model, tp, {k: v for k, v in top.items() if _has(model, k)})
    for _, block in _block_items(model):
        if kind == "torchtitan":
            plan = {
                "attention_norm": SequenceParallel(),
                "attention": PrepareModuleInput(input_layouts=(Shard(1), None),
                                                desired_input_layouts=(Replicate(), None)),
                "attention.wq": ColwiseParallel(),
                "attention.wk": ColwiseParallel(),
                "attention.wv": ColwiseParallel(),
                "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
                "ffn_norm": SequenceParallel(),
                "feed_forward": PrepareModuleInput(input_layouts=(Shard(1),),
                                                   desired_input_layouts=(Replicate(),)),
                "feed_forward.w1": ColwiseParallel(),
                "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
                "feed_forward.w3": ColwiseParallel(),
            }
        else:
            plan = {
                "input_layernorm": SequenceParallel(),
                "self_attn": PrepareModuleInput(
                    input_kwarg_layouts={"hidden_states": Shard(1)},
                    desired_input_kwarg_layouts={"hidden_states": Replicate()}),
                "self_attn.q_proj": ColwiseParallel(),
                "self_attn.k_proj": ColwiseParallel(),
                "self_attn.v_proj": ColwiseParallel(),
                "self_attn.o_proj": RowwiseParallel(output_layouts=Shard(1)),
                "post_attention_layernorm": SequenceParallel(),
                "mlp": PrepareModuleInput(input_layouts=(Shard(1),),
                                          desired_input_layouts=(Replicate(),)),
                "mlp.gate_proj": ColwiseParallel(),
                "mlp.up_proj": ColwiseParallel(),
                "mlp.down_proj": RowwiseParallel(output_layouts=Shard(1)),
            }
        parallelize_module(block, tp, plan)


def _apply_fsdp(model, mesh):
    if DP * CP == 1:
        return
    # gradients are reduced over the data- and context-parallel ranks
    # together (torchtitan shards over the flattened dp_shard_cp mesh)
    shard = (mesh["dp_shard", "cp"]._flatten("dp_shard_cp") if CP > 1
             else mesh["dp_shard"])
    if SHARD_PARAMETERS and DP_REPLICATE > 1:
        # HSDP: fully_shard on the 2-D mesh shards over its last
        # dimension and replicates over its first
        dp = mesh["dp_replicate", shard.mesh_dim_names[0]]
    elif DP_REPLICATE > 1:
        dp = mesh["dp_replicate", shard.mesh_dim_names[0]]._flatten("dp_all")
    else:
        dp = shard
    if not SHARD_PARAMETERS:
        from torch.distributed._composable.replicate import replicate
        replicate(model, device_mesh=dp)
        return
    mp = MixedPrecisionPolicy(param_dtype=getattr(torch, PARAM_DTYPE),
                              reduce_dtype=torch.float32)
    for _, block in _block_items(model):
        fully_shard(block, mesh=dp, mp_policy=mp,
                    reshard_after_forward=RESHARD_AFTER_FORWARD)
    # the root: embedding, final norm and output layer
    fully_shard(model, mesh=dp, mp_policy=mp,
                reshard_after_forward=RESHARD_AFTER_FORWARD)


def _op_sac_context():
    """torchtitan's selective recomputation by operator
    (torchtitan/distributed/activation_checkpoint.py, _apply_op_sac, with
    the save list of torchtitan/models/llama3/infra/parallelize.py): a
    block keeps the outputs of its matrix products, attention and
    reduce-scatters, except every second mm, and recomputes the rest."""
    from collections import defaultdict
    from torch.utils.checkpoint import (CheckpointPolicy,
                                        create_selective_checkpoint_contexts)
    save = {torch.ops.aten.mm.default,
            torch.ops.aten._scaled_dot_product_efficient_attention.default,
            torch.ops.aten._scaled_dot_product_flash_attention.default,
            torch.ops._c10d_functional.reduce_scatter_tensor.default}
    meta = defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        key = "recompute" if ctx.is_recompute else "forward"
        if func == torch.ops.aten.mm.default:
            meta[key] += 1
        keep = func in save and not (func == torch.ops.aten.mm.default and
                                     meta[key] % 2 == 0)
        return (CheckpointPolicy.MUST_SAVE if keep
                else CheckpointPolicy.PREFER_RECOMPUTE)
    return create_selective_checkpoint_contexts(policy)


def parallelize(model, mesh):
    """Tensor parallel, recomputation, then FSDP2, as torchtitan orders them."""
    if TP > 1:
        _apply_tp(model, mesh["tp"])
    if RECOMPUTE == "full":
        for key, block in _block_items(model):
            _set_block(model, key, checkpoint_wrapper(block, preserve_rng_state=False))
    elif RECOMPUTE == "selective":
        for key, block in _block_items(model):
            _set_block(model, key, checkpoint_wrapper(
                block, context_fn=_op_sac_context, preserve_rng_state=False))
    _apply_fsdp(model, mesh)
    return model


def stage_model(model, stage):
    """torchtitan's LLaMA cut to the layers of one stage (stage j is chunk
    j // PP of pipeline rank j % PP)."""
    if naming(model) != "torchtitan":
        raise ValueError("pipeline stages are cut from torchtitan's LLaMA")
    first = sum(STAGE_LAYERS[:stage])
    last = first + STAGE_LAYERS[stage]
    if stage != 0:
        model.tok_embeddings = None
    if stage != len(STAGE_LAYERS) - 1:
        model.norm = None
        model.output = None
    for key in list(model.layers.keys()):
        if not first <= int(key) < last:
            del model.layers[key]
    return model


def loss_fn(logits, labels):
    logits = getattr(logits, "logits", logits)
    return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(0, 1))


def pipeline(make_model, mesh, device):
    """This rank's stages and schedule (torch.distributed.pipelining)."""
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining import schedules
    rank = mesh["pp"].get_local_rank()
    stages = []
    for chunk in range(VIRTUAL_STAGES):
        j = chunk * PP + rank
        module = parallelize(stage_model(make_model(), j), mesh)
        stages.append(PipelineStage(module, j, PP * VIRTUAL_STAGES, device,
                                    group=mesh["pp"].get_group()))
    cls = getattr(schedules, "Schedule" + SCHEDULE)
    with loss_parallel() if TP > 1 else nullcontext():
        if VIRTUAL_STAGES > 1:
            return stages, cls(stages, n_microbatches=MICRO_BATCHES, loss_fn=loss_fn)
        return stages, cls(stages[0], n_microbatches=MICRO_BATCHES, loss_fn=loss_fn)


def _step_context(model, mesh, tokens, labels, positions):
    if CP == 1:
        return nullcontext()
    # the sequence dimension of the inputs, the labels and the rotary
    # positions split over mesh["cp"] while the step runs
    from torch.distributed.tensor.experimental import context_parallel
    buffers, dims = [tokens, labels, positions], [1, 1, 1]
    if getattr(model, "freqs_cis", None) is not None:
        buffers.append(model.freqs_cis)
        dims.append(0)
    return context_parallel(mesh["cp"], buffers=buffers, buffer_seq_dims=dims,
                            no_restore_buffers={tokens, labels, positions})


def train_step(model, optimizer, mesh, batches):
    """One optimizer step over MICRO_BATCHES (tokens, labels) pairs of
    MICRO_BATCH x SEQ tokens each (no pipeline: PP == 1)."""
    total = 0.0
    for tokens, labels in batches:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        positions = positions.unsqueeze(0).expand_as(tokens).contiguous()
        with _step_context(model, mesh, tokens, labels, positions):
            with loss_parallel() if TP > 1 else nullcontext():
                if naming(model) == "torchtitan":
                    out = model(tokens)
                elif naming(model) == "llama":
                    out = model(input_ids=tokens, position_ids=positions)
                else:
                    out = model(input_ids=tokens)
                loss = loss_fn(out, labels) / MICRO_BATCHES
                loss.backward()
        total += loss.detach().float()
    optimizer.step()
    optimizer.zero_grad()
    return total
