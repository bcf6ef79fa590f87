"""A plain PyTorch LoRA step, measured for shardlab's fine-tuning recipes
(`--finetune lora`): LLaMA layers with the shapes of LLaMA-2-7B (hidden
4096, 32 heads, SwiGLU 11008, vocabulary 32000), sequence 512, micro-batch
1, frozen bf16 weights, adapters of rank 16 on q and v in fp32 as PEFT
keeps them (peft/tuners/lora/layer.py, Linear.forward: y = x W + (x A) B
scaled), under bf16 autocast, fused SDPA attention.

Per layer, as torch_gpt.py measures (4 layers less 2, halved): the bytes
held after forward (what the layer keeps for backward), the backward peak
and the forward and backward times; then whole steps of 8 layers with
AdamW over the adapters alone: the states, the peak and the step time.
With bitsandbytes installed the same rows for QLoRA (the layers' matmuls
4-bit NF4, double-quantised, as bnb.nn.Linear4bit stores them).  Prints
JSON lines.  Exits 77 (a skip to automake's test harness) without torch or
a CUDA GPU.

    python3 torch_lora.py > lora-GPU.jsonl
"""
import json, sys, time

try:
    import torch, torch.nn as nn, torch.nn.functional as F
except ImportError:
    print("torch_lora.py: no torch: skipped", file=sys.stderr)
    sys.exit(77)
if not torch.cuda.is_available():
    print("torch_lora.py: no CUDA GPU: skipped", file=sys.stderr)
    sys.exit(77)
try:
    import bitsandbytes as bnb
except ImportError:
    bnb = None

dev = "cuda"
H, NH, FF, S, V, R = 4096, 32, 11008, 512, 32000, 16


def frozen_linear(k, n, quant):
    if quant:
        lin = bnb.nn.Linear4bit(k, n, bias=False, compute_dtype=torch.bfloat16,
                                compress_statistics=True, quant_type="nf4")
        return lin.to(dev)  # quantised on the move to the GPU
    lin = nn.Linear(k, n, bias=False, device=dev, dtype=torch.bfloat16)
    lin.weight.requires_grad_(False)
    return lin


class Adapter(nn.Module):
    """(x A) B scaled: A of k x r (random), B of r x n (zeros), fp32."""

    def __init__(s, k, n):
        super().__init__()
        s.A = nn.Parameter(torch.randn(k, R, device=dev) * 0.01)
        s.B = nn.Parameter(torch.zeros(R, n, device=dev))

    def forward(s, x):
        return (x @ s.A) @ s.B * 2.0


class Layer(nn.Module):
    def __init__(s, quant):
        super().__init__()
        s.n1 = nn.RMSNorm(H, device=dev, dtype=torch.bfloat16).requires_grad_(False)
        s.n2 = nn.RMSNorm(H, device=dev, dtype=torch.bfloat16).requires_grad_(False)
        # q, k, v fused, as shardlab's generator has them; an adapter on
        # q and one on v, as PEFT adapts q_proj and v_proj
        s.qkv = frozen_linear(H, 3 * H, quant)
        s.aq, s.av = Adapter(H, H), Adapter(H, H)
        s.o = frozen_linear(H, H, quant)
        s.gate = frozen_linear(H, FF, quant)
        s.up = frozen_linear(H, FF, quant)
        s.down = frozen_linear(FF, H, quant)

    def forward(s, x):
        b, n, _ = x.shape
        h = s.n1(x)
        q, k, v = s.qkv(h).split(H, dim=-1)
        q = q + s.aq(h)
        v = v + s.av(h)
        q, k, v = (t.reshape(b, n, NH, H // NH).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + s.o(a.transpose(1, 2).reshape(b, n, H))
        y = s.n2(x)
        return x + s.down(F.silu(s.gate(y)) * s.up(y))


class Model(nn.Module):
    def __init__(s, L, quant):
        super().__init__()
        s.emb = nn.Embedding(V, H, device=dev, dtype=torch.bfloat16).requires_grad_(False)
        s.layers = nn.ModuleList([Layer(quant) for _ in range(L)])
        s.norm = nn.RMSNorm(H, device=dev, dtype=torch.bfloat16).requires_grad_(False)
        s.head = nn.Linear(H, V, bias=False, device=dev, dtype=torch.bfloat16).requires_grad_(False)

    def forward(s, tok):
        x = s.emb(tok)
        for l in s.layers:
            x = l(x)
        return F.cross_entropy(s.head(s.norm(x)).float().view(-1, V), tok.view(-1))


def trainable(m):
    return [p for p in m.parameters() if p.requires_grad]


def act_bytes(L, quant):
    torch.cuda.empty_cache()
    m = Model(L, quant)
    tok = torch.randint(0, V, (1, S), device=dev)

    def fwd():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return m(tok)
    fwd().backward()  # warm-up
    for p in trainable(m):
        p.grad = None
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    t0 = time.perf_counter()
    loss = fwd()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    held = torch.cuda.memory_allocated() - base
    torch.cuda.reset_peak_memory_stats()
    loss.backward()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    peak = torch.cuda.max_memory_allocated() - base
    del loss, m
    return held, peak, t1 - t0, t2 - t1


def full_step(L, quant, steps=4):
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    m = Model(L, quant)
    opt = torch.optim.AdamW(trainable(m), lr=1e-4, fused=True)
    tok = torch.randint(0, V, (1, S), device=dev)
    times = []
    for _ in range(steps):
        torch.cuda.synchronize(); t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(tok)
        loss.backward()
        opt.step(); opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize(); times.append(time.perf_counter() - t0)
    states = torch.cuda.memory_allocated()
    r = dict(layers=L, adapter_elems=sum(p.numel() for p in trainable(m)),
             states_allocated=states, peak_allocated=torch.cuda.max_memory_allocated(),
             peak_reserved=torch.cuda.max_memory_reserved(), step_s=min(times[1:]))
    del m, opt
    return r


if __name__ == "__main__":
    print(json.dumps({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                      "bitsandbytes": bnb.__version__ if bnb else None}), flush=True)
    for mode in ("lora", "qlora"):
        quant = mode == "qlora"
        if quant and bnb is None:
            print(json.dumps(dict(kind="skipped", mode=mode, why="no bitsandbytes")), flush=True)
            continue
        h2, p2, f2, b2 = act_bytes(2, quant)
        h4, p4, f4, b4 = act_bytes(4, quant)
        print(json.dumps(dict(kind="per_layer_lora", mode=mode, rank=R, targets="q,v", seq=S,
                              held_per_layer=(h4 - h2) // 2, bwd_peak_per_layer=(p4 - p2) // 2,
                              fwd_s_per_layer=(f4 - f2) / 2, bwd_s_per_layer=(b4 - b2) / 2,
                              held_L2=h2, held_L4=h4)), flush=True)
        r = full_step(8, quant)
        r.update(kind="step_lora", mode=mode, rank=R, targets="q,v", seq=S)
        print(json.dumps(r), flush=True)
