"""The DTensor export of `shardlab plan --framework torchtitan --export dtensor`
run for one optimizer step on a tiny LLaMA written with Hugging Face's module
names (model.embed_tokens, model.layers.N.self_attn.q_proj ... mlp.down_proj,
model.norm, lm_head), in plain PyTorch, on two or more ranks: NCCL with a GPU
per rank, else gloo ranks on the CPU.

usage: torchrun --nproc_per_node N torch_dtensor.py EXPORT.py MODEL.json

EXPORT.py is the export (its constants and parallelize()), MODEL.json the
generator description the plan was made for (shardlab gen ... -o).  Every rank
builds the same model from one seed; rank 0 also runs the unsharded step on
the same batch.  Checks, and prints as JSON lines:
  - the loss of the parallel step equals the unsharded one within bf16
    tolerance (the first step's loss, before any update);
  - each rank's bytes of parameters, gradients and optimizer states (its
    local shards after the step) equal the plan's (PREDICTED).
Exits 0 when both hold, 1 otherwise, 77 when torch lacks what the export
needs (DeviceMesh, DTensor parallel styles, FSDP2: torch 2.4 or later).
"""
import collections
import json
import math
import os
import sys

try:
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.distributed.fsdp import fully_shard  # noqa: F401
    from torch.distributed.device_mesh import init_device_mesh  # noqa: F401
    from torch.distributed.tensor import DTensor
except ImportError as e:
    print("SKIP: torch with DTensor and FSDP2 (2.4 or later) is needed: %s" % e)
    sys.exit(77)


class RMSNorm(nn.Module):
    def __init__(s, h, eps=1e-5):
        super().__init__()
        s.weight = nn.Parameter(torch.ones(h))
        s.eps = eps

    def forward(s, x):
        v = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(v + s.eps)).type_as(x) * s.weight


def rope(x, cos, sin):
    x1, x2 = x.chunk(2, -1)
    return x * cos + torch.cat((-x2, x1), -1) * sin


class Attention(nn.Module):
    """LlamaAttention's names; its heads follow from the local width
    (view(..., -1, head_dim)), as transformers' does."""

    def __init__(s, h, a, kv):
        super().__init__()
        s.d, s.rep = h // a, a // kv
        s.q_proj = nn.Linear(h, a * s.d, bias=False)
        s.k_proj = nn.Linear(h, kv * s.d, bias=False)
        s.v_proj = nn.Linear(h, kv * s.d, bias=False)
        s.o_proj = nn.Linear(a * s.d, h, bias=False)

    def forward(s, hidden_states, position_ids=None, cos=None, sin=None):
        b, t, _ = hidden_states.shape
        q = s.q_proj(hidden_states).view(b, t, -1, s.d).transpose(1, 2)
        k = s.k_proj(hidden_states).view(b, t, -1, s.d).transpose(1, 2)
        v = s.v_proj(hidden_states).view(b, t, -1, s.d).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        k = k.repeat_interleave(s.rep, dim=1)
        v = v.repeat_interleave(s.rep, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return s.o_proj(o.transpose(1, 2).reshape(b, t, -1))


class MLP(nn.Module):
    def __init__(s, h, f):
        super().__init__()
        s.gate_proj = nn.Linear(h, f, bias=False)
        s.up_proj = nn.Linear(h, f, bias=False)
        s.down_proj = nn.Linear(f, h, bias=False)

    def forward(s, x):
        return s.down_proj(F.silu(s.gate_proj(x)) * s.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(s, h, a, kv, f):
        super().__init__()
        s.input_layernorm = RMSNorm(h)
        s.self_attn = Attention(h, a, kv)
        s.post_attention_layernorm = RMSNorm(h)
        s.mlp = MLP(h, f)

    def forward(s, x, cos, sin):
        x = x + s.self_attn(hidden_states=s.input_layernorm(x), cos=cos, sin=sin)
        return x + s.mlp(s.post_attention_layernorm(x))


class Inner(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.embed_tokens = nn.Embedding(c["vocab"], c["hidden"])
        s.layers = nn.ModuleList(DecoderLayer(c["hidden"], c["heads"], c["kv_heads"],
                                              c["ffn"]) for _ in range(c["layers"]))
        s.norm = RMSNorm(c["hidden"])
        d = c["hidden"] // c["heads"]
        s.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d)),
                          persistent=False)


# transformers' ModelOutput is a pytree node (transformers/utils/generic.py
# registers it), so FSDP2 finds the logits in it and hooks their backward;
# a namedtuple is one too.  A plain object would hide them: the root's
# pre-backward all-gather would never run.
CausalLMOutput = collections.namedtuple("CausalLMOutput", ["logits"])


class LlamaForCausalLM(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.model = Inner(c)
        s.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False)

    def forward(s, input_ids=None, position_ids=None):
        h = s.model.embed_tokens(input_ids)
        f = torch.outer(position_ids[0].float(), s.model.inv_freq)
        emb = torch.cat((f, f), -1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        for layer in s.model.layers:
            h = layer(h, cos, sin)

        return CausalLMOutput(s.lm_head(s.model.norm(h)))


def local_bytes(t):
    t = t.to_local() if isinstance(t, DTensor) else t
    return t.numel() * t.element_size()


def main():
    export, model_file = sys.argv[1], sys.argv[2]
    spec = json.load(open(model_file))["generator"]
    c = dict(layers=spec["layers"], hidden=spec["hidden"], heads=spec["heads"],
             kv_heads=spec.get("kv_heads", spec["heads"]),
             ffn=spec.get("ffn") or 256 * math.ceil(2 * 4 * spec["hidden"] / 3 / 256),
             vocab=spec["vocab"])
    cuda = torch.cuda.is_available() and torch.cuda.device_count() >= int(
        os.environ.get("WORLD_SIZE", "1"))
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    plan = {}
    exec(compile(open(export).read(), export, "exec"), plan)
    if plan["PP"] > 1:
        print("SKIP: the export pipelines torchtitan's LLaMA; this model has "
              "Hugging Face's names")
        sys.exit(77)
    mesh = plan["make_mesh"]("cuda" if cuda else "cpu")
    seq = plan["SEQ"]
    torch.manual_seed(1234)
    ref = LlamaForCausalLM(c)
    model = LlamaForCausalLM(c)
    model.load_state_dict(ref.state_dict())
    model.to(device)
    # one micro-batch per data-parallel rank, the same on every rank of
    # its tensor- and context-parallel group
    g = torch.Generator().manual_seed(99)
    n = plan["MICRO_BATCH"] * plan["DP"] * plan["MICRO_BATCHES"]
    tokens = torch.randint(0, c["vocab"], (n, seq + 1), generator=g)
    # the data-parallel rank over the export's dp_replicate x dp_shard
    # dimensions (torchtitan/distributed/parallel_dims.py names them so)
    if "dp" in mesh.mesh_dim_names:
        dp_rank = mesh["dp"].get_local_rank()
    else:
        dp_rank = (mesh["dp_replicate"].get_local_rank() * mesh["dp_shard"].size()
                   + mesh["dp_shard"].get_local_rank())
    mine = tokens.view(plan["MICRO_BATCHES"], plan["DP"], plan["MICRO_BATCH"],
                       seq + 1)[:, dp_rank]
    batches = [(m[:, :-1].contiguous().to(device), m[:, 1:].contiguous().to(device))
               for m in mine]
    plan["parallelize"](model, mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    # the gradients as the step holds them, read before train_step's
    # zero_grad() frees them
    grad_bytes = [0]
    odd_grads = []
    zero_grad = opt.zero_grad

    def counting_zero_grad(*a, **k):
        grad_bytes[0] = sum(local_bytes(p.grad) for p in model.parameters()
                            if p.grad is not None)
        # a gradient held at another size than its parameter's shard
        for name, p in model.named_parameters():
            if p.grad is not None and local_bytes(p.grad) != local_bytes(p):
                odd_grads.append(dict(name=name, parameter=local_bytes(p),
                                      gradient=local_bytes(p.grad),
                                      placements=str(getattr(p.grad, "placements", None))))
        return zero_grad(*a, **k)
    opt.zero_grad = counting_zero_grad
    loss = plan["train_step"](model, opt, mesh, batches)
    if isinstance(loss, DTensor):
        loss = loss.full_tensor()
    loss = torch.as_tensor(float(loss), device=device)
    dist.all_reduce(loss)
    loss = float(loss) / plan["DP"] / (plan["CP"] * plan["TP"])
    # the plan's bytes: the states of this rank's shards after the step
    got = dict(parameters=0, gradients=0, optimizer=0)
    for p in model.parameters():
        got["parameters"] += local_bytes(p)
    got["gradients"] = grad_bytes[0]
    for st in opt.state.values():
        for k in ("exp_avg", "exp_avg_sq"):
            got["optimizer"] += local_bytes(st[k])
    if rank == 0 and odd_grads:
        print(json.dumps(dict(what="gradients unlike their parameters", rank=0,
                              tensors=odd_grads)))
    pred = plan["PREDICTED"]["ranks"][0]
    gathered = [None] * world
    dist.all_gather_object(gathered, got)
    ok = True
    if rank == 0:
        # the unsharded step on the same global batch, in the export's
        # precision
        dt = getattr(torch, plan["PARAM_DTYPE"])
        ref.to(device)
        ro = torch.optim.AdamW(ref.parameters(), lr=1e-4)
        total = 0.0
        for mb in range(plan["MICRO_BATCHES"]):
            t = tokens.view(plan["MICRO_BATCHES"], -1, seq + 1)[mb].to(device)
            pos = torch.arange(seq, device=device)[None].expand(t.shape[0], seq)
            with torch.autocast(device.type, dtype=dt, enabled=dt != torch.float32):
                out = ref(input_ids=t[:, :-1], position_ids=pos)
            l = F.cross_entropy(out.logits.flatten(0, 1).float(), t[:, 1:].flatten())
            (l / plan["MICRO_BATCHES"]).backward()
            total += float(l) / plan["MICRO_BATCHES"]
        ro.step()
        tol = 2e-2 * max(1.0, abs(total))
        print(json.dumps(dict(what="loss", parallel=loss, unsharded=total,
                              tolerance=tol, ok=abs(loss - total) <= tol)))
        ok &= abs(loss - total) <= tol
        for r, gb in enumerate(gathered):
            row = dict(what="bytes", rank=r, measured=gb, predicted=dict(
                parameters=pred["parameters"], gradients=pred["gradients"],
                optimizer=pred["optimizer"]))
            # the plan counts the largest shard of each tensor (device 0);
            # a rank holds at most that
            row["ok"] = all(gb[k] <= pred[k] and gb[k] >= 0.99 * pred[k]
                            for k in ("parameters", "gradients", "optimizer"))
            print(json.dumps(row))
            ok &= row["ok"]
    flag = torch.tensor([1 if ok else 0], device=device)
    dist.broadcast(flag, 0)
    dist.destroy_process_group()
    sys.exit(0 if int(flag) else 1)


if __name__ == "__main__":
    main()
