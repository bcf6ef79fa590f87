"""More memory references for shardlab's cost model, measured like
torch_gpt.py (bytes held after forward, per layer = (4-layer - 2-layer)/2):
full recomputation (torch.utils.checkpoint per layer), larger micro-batches,
and LLaMA layers (RMSNorm, RoPE, grouped-query attention, SwiGLU, no dropout,
untied head).  Megatron tensor parallelism of degree t is emulated by the
rank-local shard shapes.  Prints JSON lines."""
import json, math, sys, time
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
sys.path.insert(0, __file__.rsplit("/", 1)[0])
from torch_gpt import Layer as GPTLayer

dev = "cuda"
try:
    from torch.nn.attention import sdpa_kernel, SDPBackend
except ImportError:
    sdpa_kernel = None


class LlamaLayer(nn.Module):
    def __init__(s, h, a, kv, ffn, seq, t):
        super().__init__()
        s.a, s.kv, s.d = a // t, max(kv // t, 1), h // a
        s.n1 = nn.RMSNorm(h, eps=1e-5)
        s.q = nn.Linear(h, s.a * s.d, bias=False)
        s.k = nn.Linear(h, s.kv * s.d, bias=False)
        s.v = nn.Linear(h, s.kv * s.d, bias=False)
        s.o = nn.Linear(s.a * s.d, h, bias=False)
        s.n2 = nn.RMSNorm(h, eps=1e-5)
        s.w1 = nn.Linear(h, ffn // t, bias=False)
        s.w3 = nn.Linear(h, ffn // t, bias=False)
        s.w2 = nn.Linear(ffn // t, h, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, s.d, 2).float() / s.d))
        f = torch.outer(torch.arange(seq).float(), inv)
        emb = torch.cat((f, f), -1)
        s.register_buffer("cos", emb.cos(), persistent=False)
        s.register_buffer("sin", emb.sin(), persistent=False)

    def rope(s, x):
        x1, x2 = x.chunk(2, -1)
        return x * s.cos + torch.cat((-x2, x1), -1) * s.sin

    def forward(s, x):
        b, n, _ = x.shape
        y = s.n1(x)
        q = s.rope(s.q(y).view(b, n, s.a, s.d).transpose(1, 2))
        k = s.rope(s.k(y).view(b, n, s.kv, s.d).transpose(1, 2))
        v = s.v(y).view(b, n, s.kv, s.d).transpose(1, 2)
        if sdpa_kernel is not None:
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                   enable_gqa=s.kv != s.a)
        else:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                               enable_gqa=s.kv != s.a)
        x = x + s.o(o.transpose(1, 2).reshape(b, n, -1))
        y = s.n2(x)
        return x + s.w2(F.silu(s.w1(y)) * s.w3(y))


class Net(nn.Module):
    def __init__(s, L, mk, h, vocab, seq, gpt, ckpt):
        super().__init__()
        s.gpt, s.ckpt = gpt, ckpt
        s.wte = nn.Embedding(vocab, h)
        if gpt:
            s.wpe = nn.Embedding(seq, h)
            s.lnf = nn.LayerNorm(h)
        else:
            s.lnf = nn.RMSNorm(h, eps=1e-5)
            s.head = nn.Linear(h, vocab, bias=False)
        s.layers = nn.ModuleList(mk() for _ in range(L))

    def forward(s, tok):
        x = s.wte(tok)
        if s.gpt:
            x = x + s.wpe(torch.arange(tok.shape[1], device=tok.device))
        for l in s.layers:
            x = checkpoint(l, x, use_reentrant=False) if s.ckpt else l(x)
        y = s.lnf(x)
        logits = y @ s.wte.weight.t() if s.gpt else s.head(y)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), tok.view(-1))


def build(kind, L, t, ckpt):
    if kind == "gpt-1.7b":
        h, a, ffn, seq, vocab = 2304, 24, 9216, 2048, 51200
        mk = lambda: GPTLayer(h, a, ffn, t, "sdpa", 0.1)
        return Net(L, mk, h, vocab, seq, True, ckpt), vocab, seq
    if kind == "llama-2-7b":
        h, a, kv, ffn, seq, vocab = 4096, 32, 32, 11008, 4096, 32000
    else:  # llama-2-70b
        h, a, kv, ffn, seq, vocab = 8192, 64, 8, 28672, 4096, 32000
    mk = lambda: LlamaLayer(h, a, kv, ffn, seq, t)
    return Net(L, mk, h, vocab, seq, False, ckpt), vocab, seq


def held(kind, L, t, ckpt, b):
    torch.cuda.empty_cache()
    m, vocab, seq = build(kind, L, t, ckpt)
    m = m.to(dev).to(torch.bfloat16)
    tok = torch.randint(0, vocab, (b, seq), device=dev)
    m(tok).backward()
    for q in m.parameters():
        q.grad = None
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    loss = m(tok)
    torch.cuda.synchronize()
    hb = torch.cuda.memory_allocated() - base
    torch.cuda.reset_peak_memory_stats()
    loss.backward()
    torch.cuda.synchronize()
    pk = torch.cuda.max_memory_allocated() - base
    del loss, m
    return hb, pk


def per_layer(kind, t, ckpt, b):
    try:
        _per_layer(kind, t, ckpt, b)
    except Exception as e:
        print(json.dumps(dict(kind="error", model=kind, tp=t, batch=b, ckpt=ckpt, err=repr(e)[:300])), flush=True)
        torch.cuda.empty_cache()


def _per_layer(kind, t, ckpt, b):
    h2, p2 = held(kind, 2, t, ckpt, b)
    h4, p4 = held(kind, 4, t, ckpt, b)
    r = dict(kind="per_layer_activation", model=kind, mode="bf16", attn="sdpa",
             tp=t, batch=b, recompute="full" if ckpt else "none",
             held_per_layer=(h4 - h2) // 2, bwd_peak_per_layer=(p4 - p2) // 2,
             held_L2=h2, held_L4=h4)
    print(json.dumps(r), flush=True)


def full_step(b, ckpt, steps=3):
    try:
        _full_step(b, ckpt, steps)
    except Exception as e:
        print(json.dumps(dict(kind="error", step=b, ckpt=ckpt, err=repr(e)[:300])), flush=True)
        torch.cuda.empty_cache()


def _full_step(b, ckpt, steps=3):
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    m, vocab, seq = build("gpt-1.7b", 24, 1, ckpt)
    m = m.to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    tok = torch.randint(0, vocab, (b, seq), device=dev)
    times = []
    for i in range(steps):
        torch.cuda.synchronize(); t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(tok)
        loss.backward()
        opt.step(); opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize(); times.append(time.perf_counter() - t0)
    r = dict(kind="full_step_gpt1.7b", attn="sdpa", mode="amp", tp=1, batch=b,
             recompute="full" if ckpt else "none",
             params=sum(q.numel() for q in m.parameters()),
             peak_allocated=torch.cuda.max_memory_allocated(),
             peak_reserved=torch.cuda.max_memory_reserved(), step_s=min(times))
    print(json.dumps(r), flush=True)
    del m, opt


if __name__ == "__main__":
    print(json.dumps({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                      "cuda": torch.version.cuda,
                      "date": time.strftime("%Y-%m-%d")}), flush=True)
    todo = sys.argv[1:] or ["recompute", "batch", "llama", "step"]
    if "recompute" in todo:
        for t in (1, 2, 4, 8):
            per_layer("gpt-1.7b", t, True, 1)
    if "batch" in todo:
        for b in (2, 4):
            per_layer("gpt-1.7b", 1, False, b)
            per_layer("gpt-1.7b", 1, True, b)
    if "llama" in todo:
        for t in (1, 2, 4, 8):
            per_layer("llama-2-7b", t, False, 1)
        per_layer("llama-2-7b", 1, True, 1)
        for t in (2, 4, 8):
            per_layer("llama-2-70b", t, False, 1)
        per_layer("llama-2-70b", 8, True, 1)
    if "step" in todo:
        full_step(1, False)
        full_step(1, True)
        full_step(4, True)
