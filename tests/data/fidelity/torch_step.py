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
  bf16  bf16 weights and gradients; fp32 master weights and Adam states
        kept by the step below, the gradients copied to fp32 for the
        update and the update copied back (shardlab --precision bf16)
  fp8   the layers' matmuls in FP8, bf16 weights with fp32 master weights
        and Adam states as for bf16 (shardlab --precision fp8): with
        Transformer Engine where it is installed (te.Linear under
        te.fp8_autocast, DelayedScaling, E4M3 forward, E5M2 backward),
        else torch._scaled_mm with per-tensor dynamic scaling (torchao's
        float8 "tensorwise" recipe: E4M3 input and weight, E5M2 output
        gradient, the transposes the backward gemms need); only on GPUs of
        compute capability 8.9 or newer.  The row's "fp8_impl" says which.

Each row also gives the step's phases, timed with CUDA events inside the
fastest step: forward and backward (fwd_bwd_s), gradient clipping
(clip_s) and the optimizer with its copies (opt_s).

usage: python3 torch_step.py [--deadline SECONDS]   (stop starting new
rows after that long; default 300)

Exits 77 (skipped) without PyTorch, without a CUDA device, or when asked for
FP8 where it cannot run.  Run on a GPU machine:
    python3 torch_step.py > steps-h100.jsonl
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
    return torch.cuda.get_device_capability() >= (8, 9) and (
        te is not None or hasattr(torch, "_scaled_mm"))


FP8_IMPL = "transformer_engine" if te is not None else "torch._scaled_mm tensorwise"
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2


def to_fp8(t, dtype):
    """t scaled so that its largest magnitude is the format's largest, and
    the scale that undoes it (torchao float8 tensorwise)."""
    big = torch.finfo(dtype).max
    amax = t.abs().max().float().clamp(min=1e-12)
    q = (t.float() * (big / amax)).clamp(-big, big).to(dtype)
    return q, (amax / big).reshape(())


class _F8Mm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        xq, sx = to_fp8(x, E4M3)
        wq, sw = to_fp8(w, E4M3)
        ctx.save_for_backward(xq, sx, wq, sw)
        # a row-major, b column-major (w is [out, in] row-major)
        return torch._scaled_mm(xq, wq.t(), scale_a=sx, scale_b=sw,
                                out_dtype=torch.bfloat16)

    @staticmethod
    def backward(ctx, go):
        xq, sx, wq, sw = ctx.saved_tensors
        gq, sg = to_fp8(go, E5M2)
        dx = torch._scaled_mm(gq, wq.t().contiguous().t(), scale_a=sg, scale_b=sw,
                              out_dtype=torch.bfloat16)
        dw = torch._scaled_mm(gq.t().contiguous(), xq.t().contiguous().t(),
                              scale_a=sg, scale_b=sx, out_dtype=torch.bfloat16)
        return dx, dw


class F8Linear(nn.Linear):
    def forward(s, x):
        y = _F8Mm.apply(x.reshape(-1, x.shape[-1]).to(torch.bfloat16),
                        s.weight.to(torch.bfloat16))
        y = y.reshape(*x.shape[:-1], -1)
        return y + s.bias if s.bias is not None else y


def linear(i, o, bias, fp8):
    if fp8 and te is not None:
        return te.Linear(i, o, bias=bias, params_dtype=torch.bfloat16)
    if fp8:
        return F8Linear(i, o, bias=bias)
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
    closure that records four CUDA events (start, after backward, after
    clipping, after the optimizer).  amp: fp32 parameters,
    torch.optim.AdamW over them.  bf16 and fp8: bf16 parameters, fp32
    master copies, AdamW over the masters and the update copied back (the
    copy shardlab counts for master weights)."""
    fused = optimizer == "fused"
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
    if recipe == "amp":
        params = list(m.parameters())
        opt = torch.optim.AdamW(params, lr=1e-4, fused=fused, foreach=not fused)

        def step():
            ev[0].record()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = m(tok)
            loss.backward()
            ev[1].record()
            if clip:
                torch.nn.utils.clip_grad_norm_(params, 1.0)
            ev[2].record()
            opt.step()
            opt.zero_grad(set_to_none=True)
            ev[3].record()
        return step, ev
    m.to(torch.bfloat16)
    params = list(m.parameters())
    master = [p.detach().float().requires_grad_() for p in params]
    opt = torch.optim.AdamW(master, lr=1e-4, fused=fused, foreach=not fused)
    fp8ctx = None
    if recipe == "fp8" and te is not None:
        rec = DelayedScaling(fp8_format=Format.HYBRID, amax_history_len=1024,
                             amax_compute_algo="max")
        fp8ctx = lambda: te.fp8_autocast(enabled=True, fp8_recipe=rec)

    def step():
        ev[0].record()
        if fp8ctx is not None:
            with fp8ctx():
                loss = m(tok)
        else:
            loss = m(tok)
        loss.backward()
        for p, q in zip(params, master):
            q.grad = p.grad.float()
            p.grad = None
        ev[1].record()
        if clip:
            torch.nn.utils.clip_grad_norm_(master, 1.0)
        ev[2].record()
        opt.step()
        opt.zero_grad(set_to_none=True)
        with torch.no_grad():
            torch._foreach_copy_(params, master)
        ev[3].record()
    return step, ev


def measure(cfg, recipe, attn, batch, optimizer, clip, steps=5):
    torch.cuda.empty_cache()
    torch.manual_seed(0)
    with torch.device(dev):     # initialised on the GPU: seconds, not minutes
        m = Model(cfg, attn, recipe == "fp8")
    tok = torch.randint(0, cfg[-1], (batch, cfg[-2]), device=dev)
    step, ev = step_fn(m, recipe, optimizer, clip, tok)
    step()                      # allocations, autotuning, lazy state
    step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    best = None
    for _ in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        t = time.perf_counter() - t0
        if best is None or t < best[0]:
            best = (t, ev[0].elapsed_time(ev[1]) / 1e3,
                    ev[1].elapsed_time(ev[2]) / 1e3, ev[2].elapsed_time(ev[3]) / 1e3)
    r = dict(kind="train_step", family=cfg[0], layers=cfg[1], hidden=cfg[2],
             heads=cfg[3], kv_heads=cfg[4], ffn=cfg[5], seq=cfg[6],
             vocab=cfg[7], precision=recipe, attention=attn,
             micro_batch=batch, optimizer=optimizer, clip_grad=clip,
             params=sum(p.numel() for p in m.parameters()),
             step_s=best[0], fwd_bwd_s=best[1], clip_s=best[2], opt_s=best[3],
             peak_allocated=torch.cuda.max_memory_allocated(),
             peak_reserved=torch.cuda.max_memory_reserved(),
             device_used=(lambda f: f[1] - f[0])(torch.cuda.mem_get_info()))
    if recipe == "fp8":
        r["fp8_impl"] = FP8_IMPL
    del m, step
    return r


# (family, layers, hidden, heads, kv heads, ffn, seq, vocab)
SHAPES = [
    ("gpt", 24, 2304, 24, 24, 9216, 2048, 51200),    # gpt-1.7b
    ("gpt", 12, 1024, 16, 16, 4096, 1024, 50257),    # a GPT-2 medium width
    ("llama", 16, 2048, 16, 4, 5632, 2048, 32000),   # a 1B LLaMA
]

def rows():
    """What is measured, most telling first: every shape under amp with
    fused SDPA at growing micro-batches, the optimizer variants once per
    shape, naive attention, then bf16 and fp8."""
    for cfg in SHAPES:
        for batch in (1, 2, 4, 8):
            yield cfg, "amp", "sdpa", batch, "fused", True
        yield cfg, "amp", "sdpa", 1, "fused", False
        yield cfg, "amp", "sdpa", 1, "foreach", True
    for cfg in SHAPES:
        for batch in (1, 2):
            yield cfg, "amp", "naive", batch, "fused", True
    for recipe in ("bf16", "fp8"):
        for cfg in SHAPES:
            for batch in (1, 4):
                yield cfg, recipe, "sdpa", batch, "fused", True


if __name__ == "__main__":
    deadline = 300.0
    if "--deadline" in sys.argv:
        deadline = float(sys.argv[sys.argv.index("--deadline") + 1])
    start = time.perf_counter()
    print(json.dumps({"gpu": torch.cuda.get_device_name(0),
                      "torch": torch.__version__,
                      "te": getattr(te, "__version__", None),
                      "fp8": FP8_IMPL if have_fp8() else None,
                      "date": time.strftime("%Y-%m-%d")}), flush=True)
    for cfg, recipe, attn, batch, optimizer, clip in rows():
        if recipe == "fp8" and not have_fp8():
            continue
        if time.perf_counter() - start > deadline:
            print(json.dumps(dict(kind="stopped", why="deadline", seconds=deadline)),
                  flush=True)
            break
        try:
            r = measure(cfg, recipe, attn, batch, optimizer, clip)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            print(json.dumps(dict(kind="oom", family=cfg[0], hidden=cfg[2],
                                  precision=recipe, attention=attn,
                                  micro_batch=batch)), flush=True)
            continue
        except Exception as e:      # a recipe this torch cannot run
            torch.cuda.empty_cache()
            print(json.dumps(dict(kind="error", family=cfg[0], hidden=cfg[2],
                                  precision=recipe, attention=attn,
                                  micro_batch=batch, error=repr(e)[:400])), flush=True)
            continue
        print(json.dumps(r), flush=True)
