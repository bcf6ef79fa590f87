"""Whole training steps for shardlab's step-time model (doc/cost-model.md,
"Step time"): forward, backward, gradient-norm clipping and the AdamW step,
timed on one GPU for several shapes, micro-batches and recipes.  Each line
is a JSON object with the step's configuration as shardlab names it (the
generator's flags, --precision, --attention, --micro-batch, --optimizer,
--no-clip-grad) and what was measured: the fastest of the timed steps and
the peak of allocated memory.  tests/test_compute.c (test_whole_steps)
predicts every row it finds in steps-*.jsonl and holds them to 10%.

Recipes:
  amp   fp32 weights under bf16 autocast (shardlab --precision amp)
  fp8   Transformer Engine: te.Linear layers under te.fp8_autocast
        (DelayedScaling, E4M3 forward, E5M2 backward), bf16 weights with
        fp32 master weights and Adam states kept by the step below
        (shardlab --precision fp8); only on GPUs of compute capability 8.9
        or newer, and only with transformer_engine installed.

Exits 77 (skipped) without PyTorch, without a CUDA device, or when asked for
FP8 where it cannot run.  Run on a GPU machine:
    python3 torch_step.py > steps-$(gpu).jsonl
"""
import json
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("torch_step.py: PyTorch is not installed", file=sys.stderr)
    sys.exit(77)
if not torch.cuda.is_available():
    print("torch_step.py: no CUDA device", file=sys.stderr)
    sys.exit(77)

dev = "cuda"
try:
    import transformer_engine.pytorch as te
    from transformer_engine.common.recipe import DelayedScaling, Format
except ImportError:
    te = None


def have_fp8():
    return te is not None and torch.cuda.get_device_capability() >= (8, 9)


def linear(i, o, bias, fp8):
    if fp8:
        return te.Linear(i, o, bias=bias, params_dtype=torch.bfloat16)
    return nn.Linear(i, o, bias=bias)


class GPTLayer(nn.Module):
    """shardlab's gpt generator: pre-LN, biases, GELU, dropout 0.1."""

    def __init__(s, h, a, ffn, attn, fp8):
        super().__init__()
        s.a, s.attn = a, attn
        s.ln1, s.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        s.qkv = linear(h, 3 * h, True, fp8)
        s.proj = linear(h, h, True, fp8)
        s.fc1 = linear(h, ffn, True, fp8)
        s.fc2 = linear(ffn, h, True, fp8)

    def forward(s, x):
        b, n, _ = x.shape
        q, k, v = s.qkv(s.ln1(x)).view(b, n, 3, s.a, -1).permute(2, 0, 3, 1, 4)
        if s.attn == "sdpa":
            o = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1, is_causal=True)
        else:
            sc = (q @ k.transpose(-1, -2)) / (q.shape[-1] ** 0.5)
            mask = torch.ones(n, n, device=x.device, dtype=torch.bool).triu(1)
            o = F.dropout(sc.masked_fill(mask, float("-inf")).softmax(-1), 0.1) @ v
        x = x + F.dropout(s.proj(o.transpose(1, 2).reshape(b, n, -1)), 0.1)
        return x + F.dropout(s.fc2(F.gelu(s.fc1(s.ln2(x)))), 0.1)


class LlamaLayer(nn.Module):
    """shardlab's llama generator: RMSNorm, grouped-query attention, SwiGLU,
    no biases, no dropout (rotary embeddings are not timed here)."""

    def __init__(s, h, a, kv, ffn, attn, fp8):
        super().__init__()
        s.a, s.kv, s.d, s.attn = a, kv, h // a, attn
        s.n1, s.n2 = nn.RMSNorm(h, eps=1e-5), nn.RMSNorm(h, eps=1e-5)
        s.qkv = linear(h, (a + 2 * kv) * s.d, False, fp8)
        s.o = linear(h, h, False, fp8)
        s.gate = linear(h, ffn, False, fp8)
        s.up = linear(h, ffn, False, fp8)
        s.down = linear(ffn, h, False, fp8)

    def forward(s, x):
        b, n, _ = x.shape
        y = s.qkv(s.n1(x)).view(b, n, s.a + 2 * s.kv, s.d).transpose(1, 2)
        q, k, v = y.split([s.a, s.kv, s.kv], dim=1)
        k = k.repeat_interleave(s.a // s.kv, dim=1)
        v = v.repeat_interleave(s.a // s.kv, dim=1)
        if s.attn == "sdpa":
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            sc = (q @ k.transpose(-1, -2)) / (s.d ** 0.5)
            mask = torch.ones(n, n, device=x.device, dtype=torch.bool).triu(1)
            o = sc.masked_fill(mask, float("-inf")).softmax(-1) @ v
        x = x + s.o(o.transpose(1, 2).reshape(b, n, -1))
        y = s.n2(x)
        return x + s.down(F.silu(s.gate(y)) * s.up(y))


class Model(nn.Module):
    def __init__(s, cfg, attn, fp8):
        super().__init__()
        fam, L, h, a, kv, ffn, seq, vocab = cfg
        s.fam = fam
        s.wte = nn.Embedding(vocab, h)
        if fam == "gpt":
            s.wpe = nn.Embedding(seq, h)
            s.layers = nn.ModuleList(GPTLayer(h, a, ffn, attn, fp8) for _ in range(L))
            s.lnf = nn.LayerNorm(h)
            s.head = None
        else:
            s.layers = nn.ModuleList(LlamaLayer(h, a, kv, ffn, attn, fp8)
                                     for _ in range(L))
            s.lnf = nn.RMSNorm(h, eps=1e-5)
            s.head = nn.Linear(h, vocab, bias=False)

    def forward(s, tok):
        x = s.wte(tok)
        if s.fam == "gpt":
            x = x + s.wpe(torch.arange(tok.shape[1], device=tok.device))
        for l in s.layers:
            x = l(x)
        x = s.lnf(x)
        logits = x @ s.wte.weight.t() if s.head is None else s.head(x)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), tok.view(-1))


def step_fn(m, recipe, optimizer, clip, tok):
    """One training step as shardlab's recipe describes it; returns a
    closure.  amp: fp32 parameters, torch.optim.AdamW over them.  fp8: bf16
    parameters in TE layers, fp32 master copies, AdamW over the masters and
    the update copied back (the copy shardlab counts for master weights)."""
    fused = optimizer == "fused"
    if recipe == "amp":
        params = list(m.parameters())
        opt = torch.optim.AdamW(params, lr=1e-4, fused=fused, foreach=not fused)

        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = m(tok)
            loss.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
        return step
    m.to(torch.bfloat16)
    params = list(m.parameters())
    master = [p.detach().float().requires_grad_() for p in params]
    opt = torch.optim.AdamW(master, lr=1e-4, fused=fused, foreach=not fused)
    rec = DelayedScaling(fp8_format=Format.HYBRID, amax_history_len=1024,
                         amax_compute_algo="max")

    def step():
        with te.fp8_autocast(enabled=True, fp8_recipe=rec):
            loss = m(tok)
        loss.backward()
        for p, q in zip(params, master):
            q.grad = p.grad.float()
            p.grad = None
        if clip:
            torch.nn.utils.clip_grad_norm_(master, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        with torch.no_grad():
            torch._foreach_copy_(params, master)
    return step


def measure(cfg, recipe, attn, batch, optimizer, clip, steps=6):
    torch.cuda.empty_cache()
    torch.manual_seed(0)
    m = Model(cfg, attn, recipe == "fp8").to(dev)
    tok = torch.randint(0, cfg[-1], (batch, cfg[-2]), device=dev)
    step = step_fn(m, recipe, optimizer, clip, tok)
    step()                      # allocations, autotuning, lazy state
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    r = dict(kind="train_step", family=cfg[0], layers=cfg[1], hidden=cfg[2],
             heads=cfg[3], kv_heads=cfg[4], ffn=cfg[5], seq=cfg[6],
             vocab=cfg[7], precision=recipe, attention=attn,
             micro_batch=batch, optimizer=optimizer, clip_grad=clip,
             params=sum(p.numel() for p in m.parameters()),
             step_s=min(times), peak_allocated=torch.cuda.max_memory_allocated())
    del m, step
    return r


# (family, layers, hidden, heads, kv heads, ffn, seq, vocab)
SHAPES = [
    ("gpt", 24, 2304, 24, 24, 9216, 2048, 51200),    # gpt-1.7b
    ("gpt", 12, 1024, 16, 16, 4096, 1024, 50257),    # a GPT-2 medium width
    ("llama", 16, 2048, 16, 4, 5632, 2048, 32000),   # a 1B LLaMA
]

if __name__ == "__main__":
    want_fp8 = "--fp8" in sys.argv
    if want_fp8 and not have_fp8():
        print("torch_step.py: FP8 needs transformer_engine and compute "
              "capability 8.9 or newer", file=sys.stderr)
        sys.exit(77)
    print(json.dumps({"gpu": torch.cuda.get_device_name(0),
                      "torch": torch.__version__,
                      "te": getattr(te, "__version__", None),
                      "date": time.strftime("%Y-%m-%d")}), flush=True)
    recipes = ["amp"] + (["fp8"] if have_fp8() else [])
    for cfg in SHAPES:
        for recipe in recipes:
            for attn in ("sdpa", "naive"):
                for batch in (1, 2, 4):
                    if attn == "naive" and batch > 2 and cfg[6] >= 2048:
                        continue    # the s^2 scores: beyond an 80 GB device
                    for optimizer, clip in (("fused", False), ("fused", True),
                                            ("foreach", True)):
                        try:
                            r = measure(cfg, recipe, attn, batch, optimizer, clip)
                        except torch.cuda.OutOfMemoryError:
                            torch.cuda.empty_cache()
                            continue
                        print(json.dumps(r), flush=True)
