"""One mixture-of-experts layer under expert parallelism, measured for
shardlab's cost model: the MoE block of shardlab's moe generator (RMSNorm,
the gate's logits over E experts, the router's fp32 softmax and top-k,
the tokens permuted into expert order [E, c, h], the experts as batched
SwiGLU matmuls, un-permuted and weighed, the residual), bf16.

One GPU plays one rank of an expert-parallel group of degree ep by its local
shapes, as the dense scripts here play a tensor-parallel rank: it routes its
own b x s tokens (balanced: token t goes to experts t k .. t k + k - 1 mod E,
so every expert gets c = s k / E of each sample, the dropless balanced share
shardlab costs), holds E / ep experts, and receives for them the c tokens of
every sample of each of the ep ranks; the all-to-all that would bring them
(and take the outputs back) is a copy of the tokens it sent, to the same
shapes.  With etp > 1 the experts' hidden size is split too (expert tensor
parallelism: f / etp per rank).

Per layer, as torch_gpt.py measures (4 layers less 2, halved): the bytes held
after forward (what the layer keeps for backward), the peak of backward, and
the forward and backward times.  Prints JSON lines.  Exits 77 (a skip to
automake's test harness) without torch or a CUDA GPU.

    python3 torch_moe.py > moe-GPU.jsonl
"""
import json, sys, time

try:
    import torch, torch.nn as nn, torch.nn.functional as F
except ImportError:
    print("torch_moe.py: no torch: skipped", file=sys.stderr)
    sys.exit(77)
if not torch.cuda.is_available():
    print("torch_moe.py: no CUDA GPU: skipped", file=sys.stderr)
    sys.exit(77)

dev = "cuda"


class SwiGLU(torch.autograd.Function):
    """silu(a) * g of fc1's output [.., 2f] keeping only that output, as
    Megatron-LM's fused kernel does (megatron/core/fusions/
    fused_bias_swiglu.py, SwiGLUFunction): fc2 then keeps its input, so a
    token's expert keeps 2f + f values, what shardlab counts."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        a, g = x.chunk(2, dim=-1)
        return F.silu(a) * g

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            x = x.detach().requires_grad_()
            a, g = x.chunk(2, dim=-1)
            y = F.silu(a) * g
        return torch.autograd.grad(y, x, dy)[0]


class MoELayer(nn.Module):
    """One rank's share of an MoE layer: h hidden, E experts of width f,
    top-k, the rank holding E / ep experts (f / etp of each)."""

    def __init__(s, h, E, f, k, ep, etp):
        super().__init__()
        s.E, s.k, s.ep = E, k, ep
        s.El = E // ep
        s.fl = f // etp
        s.norm = nn.RMSNorm(h, eps=1e-5)
        s.gate = nn.Linear(h, E, bias=False)
        s.w1 = nn.Parameter(torch.randn(s.El, h, 2 * s.fl) * 0.02)
        s.w2 = nn.Parameter(torch.randn(s.El, s.fl, h) * 0.02)

    def forward(s, x):
        b, n, h = x.shape
        T = b * n
        y = s.norm(x).reshape(T, h)
        # router: fp32 scores (softmax keeps them), top-k weights
        scores = F.softmax(s.gate(y).float(), dim=-1)
        tok = torch.arange(T, device=x.device)
        idx = (tok[:, None] * s.k + torch.arange(s.k, device=x.device)) % s.E
        w = scores.gather(1, idx).to(x.dtype)                 # [T, k]
        # dispatch: tokens in expert order, [E, c, h] with c = T k / E
        order = torch.argsort(idx.reshape(-1), stable=True)   # int64 map
        c = T * s.k // s.E
        sent = y[order // s.k].reshape(s.E, c, h)
        # the all-to-all: this rank's experts receive c tokens from each
        # of the ep ranks (a copy of the same shapes)
        mine = sent[: s.El]
        recv = torch.cat([mine] * s.ep, dim=1)                # [El, ep c, h]
        # the experts: batched SwiGLU, fc1 (h -> 2 f), fc2 (f -> h)
        out = torch.bmm(SwiGLU.apply(torch.bmm(recv, s.w1)), s.w2)
        # back: this rank's tokens from every expert (a copy again)
        back = torch.cat([out[:, :c]] * s.ep, dim=0)          # [E, c, h]
        # combine: un-permute and weigh
        z = torch.zeros_like(back.reshape(-1, h))
        z = z.index_copy(0, order, back.reshape(-1, h)).reshape(T, s.k, h)
        z = (z * w[:, :, None]).sum(1)
        return x + z.reshape(b, n, h)


def per_layer(L, cfg, ep, etp, b):
    """Held after forward, backward peak, forward and backward ms."""
    h, E, f, k, n = cfg
    torch.cuda.empty_cache()
    with torch.device(dev):     # initialised on the GPU: seconds, not minutes
        m = nn.Sequential(*[MoELayer(h, E, f, k, ep, etp) for _ in range(L)])
    m = m.to(torch.bfloat16)
    x = torch.randn(b, n, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
    m(x).float().sum().backward()      # warm-up: cuBLAS workspaces, kernels
    for q in m.parameters():
        q.grad = None
    x.grad = None
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    t0 = time.perf_counter()
    out = m(x).float().sum()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    held = torch.cuda.memory_allocated() - base
    torch.cuda.reset_peak_memory_stats()
    out.backward()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    peak = torch.cuda.max_memory_allocated() - base
    del out, m
    return held, peak, (t1 - t0) * 1e3, (t2 - t1) * 1e3


def grouped_gemm(El, m, h, f, reps=10):
    """FLOP/s of the experts' fc1 as one batched gemm of El problems."""
    a = torch.randn(El, m, h, device=dev, dtype=torch.bfloat16)
    w = torch.randn(El, h, 2 * f, device=dev, dtype=torch.bfloat16)
    torch.bmm(a, w)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        torch.bmm(a, w)
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / reps
    return 2.0 * El * m * h * 2 * f / dt


if __name__ == "__main__":
    # Mixtral-8x7B's MoE block at sequence 4096, one sample per rank:
    # hidden 4096, 8 experts of 14336, top-2
    cfg = (4096, 8, 14336, 2, 4096)
    print(json.dumps({"gpu": torch.cuda.get_device_name(0),
                      "torch": torch.__version__,
                      "model": "moe h 4096, E 8, f 14336, top-2, seq 4096"}),
          flush=True)
    for ep, etp in ((1, 1), (2, 1), (4, 1), (8, 1), (4, 2), (8, 2)):
        h2, p2, f2, b2 = per_layer(2, cfg, ep, etp, 1)
        h4, p4, f4, b4 = per_layer(4, cfg, ep, etp, 1)
        print(json.dumps(dict(kind="moe_layer", ep=ep, etp=etp, batch=1,
                              held_per_layer=(h4 - h2) // 2,
                              bwd_peak_per_layer=(p4 - p2) // 2,
                              fwd_ms_per_layer=(f4 - f2) / 2,
                              bwd_ms_per_layer=(b4 - b2) / 2,
                              held_L2=h2, held_L4=h4)), flush=True)
    for El, m in ((8, 1024), (4, 2048), (1, 8192), (32, 128), (32, 512)):
        print(json.dumps(dict(kind="grouped_gemm", experts=El, tokens=m,
                              h=4096, f=14336,
                              flops=grouped_gemm(El, m, 4096, 14336))),
              flush=True)
