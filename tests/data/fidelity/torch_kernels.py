"""What a training step's time is made of, kernel by kernel, for shardlab's
compute model (src/compute.c: each kernel the longest of its FLOP time,
its memory time and the launch floor): for a few of torch_step.py's steps,
one step under torch.profiler after two warm-ups gives the number of GPU
kernels, the time the GPU is busy (the union of the kernels' intervals)
against the step's wall time, and the kernels that take longest; then the
host's cost of issuing eager operations (autograd recording, the backward
engine, autocast), timed on tiny tensors where the host, not the GPU,
bounds the rate.  JSON lines.  Exits 77 without torch or a CUDA GPU.

    python3 torch_kernels.py > kernels-GPU.jsonl
"""
import json
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch_kernels.py: no torch: skipped", file=sys.stderr)
    sys.exit(77)
if not torch.cuda.is_available():
    print("torch_kernels.py: no CUDA GPU: skipped", file=sys.stderr)
    sys.exit(77)
sys.path.insert(0, ".")
import torch_step as S                      # noqa: E402
from torch.profiler import ProfilerActivity, profile   # noqa: E402

dev = "cuda"


def busy(intervals):
    """Length of the union of [start, end) intervals."""
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def one(cfg, recipe, attn, batch):
    torch.cuda.empty_cache()
    torch.manual_seed(0)
    with torch.device(dev):
        m = S.Model(cfg, attn, recipe == "fp8")
    tok = torch.randint(0, cfg[-1], (batch, cfg[-2]), device=dev)
    step, _ = S.step_fn(m, recipe, "fused", True, tok)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    step()
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kern, names = [], {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.end > e.time_range.start:
            s, t = e.time_range.start, e.time_range.end     # microseconds
            kern.append((s, t))
            n = names.setdefault(e.name[:90], [0, 0.0])
            n[0] += 1
            n[1] += t - s
    cpu_ops = sum(1 for e in prof.events()
                  if e.device_type == torch.autograd.DeviceType.CPU and e.name.startswith("aten::"))
    top = sorted(names.items(), key=lambda kv: -kv[1][1])[:25]
    span = (max(t for _, t in kern) - min(s for s, _ in kern)) if kern else 0
    print(json.dumps(dict(kind="step_kernels", family=cfg[0], layers=cfg[1], hidden=cfg[2],
                          heads=cfg[3], kv_heads=cfg[4], ffn=cfg[5], seq=cfg[6], vocab=cfg[7],
                          precision=recipe, attention=attn, micro_batch=batch,
                          optimizer="fused", clip_grad=True, wall_s=wall,
                          kernels=len(kern), gpu_busy_s=busy(kern) / 1e6,
                          gpu_span_s=span / 1e6, aten_ops=cpu_ops,
                          top=[dict(name=k, count=v[0], s=v[1] / 1e6) for k, v in top])),
          flush=True)
    del m, step, prof


def host_costs():
    """Microseconds of host time per eager operation, on 1-element tensors."""
    n = 4000
    x = torch.ones(8, device=dev)
    r = {}

    def rate(fn):
        fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n * 1e6
    with torch.no_grad():
        r["op_no_grad_us"] = rate(lambda: [x.mul(1.0) for _ in range(n)])
    w = torch.ones(8, device=dev, requires_grad=True)

    def chain():
        y = w
        for _ in range(n):
            y = y * 1.0001
        return y
    r["op_autograd_us"] = rate(chain)
    y = chain().sum()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    y.backward()
    torch.cuda.synchronize()
    r["backward_node_us"] = (time.perf_counter() - t0) / n * 1e6
    lin = torch.nn.Linear(16, 16, device=dev)
    z = torch.ones(4, 16, device=dev, requires_grad=True)
    r["linear_autograd_us"] = rate(lambda: [lin(z) for _ in range(n)])
    with torch.autocast("cuda", dtype=torch.bfloat16):
        r["linear_autocast_us"] = rate(lambda: [lin(z) for _ in range(n)])
    # a kernel launch with nothing around it (the floor a C runner sees)
    a = torch.ones(8, device=dev)
    r["add_inplace_no_grad_us"] = rate(lambda: [a.add_(1.0) for _ in range(n)])
    print(json.dumps(dict(kind="host_costs", **r)), flush=True)


if __name__ == "__main__":
    print(json.dumps({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                      "date": time.strftime("%Y-%m-%d")}), flush=True)
    host_costs()
    gpt17, gpt2m, llama1b = S.SHAPES
    for cfg, recipe, attn, batch in ((gpt2m, "amp", "sdpa", 1), (gpt2m, "amp", "sdpa", 8),
                                     (gpt17, "amp", "sdpa", 1), (gpt17, "amp", "naive", 1),
                                     (gpt17, "bf16", "sdpa", 1), (llama1b, "amp", "sdpa", 1),
                                     (llama1b, "amp", "naive", 1), (gpt2m, "amp", "naive", 1)):
        try:
            one(cfg, recipe, attn, batch)
        except Exception as e:
            print(json.dumps(dict(kind="error", family=cfg[0], hidden=cfg[2], precision=recipe,
                                  attention=attn, micro_batch=batch, error=repr(e)[:400])),
                  flush=True)
