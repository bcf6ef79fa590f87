"""Matmul rates for shardlab's hardware profiles (data/hardware/*.json,
device.gemm and device.gemm_fp8): bf16 and FP8 (torch._scaled_mm, E4M3
operands with per-tensor scales, bf16 output) at the shapes of the bundled
profiles' tables, timed as torch_compute.py times them (CUDA events, 20
products after 5 warm-ups, random normal operands); then the sustained rate
of two shapes run back to back for several seconds (the clock a long step
runs at, which a short burst does not show).  JSON lines.  Exits 77
without torch or a CUDA GPU.

    python3 torch_gemm.py > gemm-GPU.jsonl

With --sustained, the table alone, each shape timed over about 0.3 s after
as long a warm-up (rows of kind "gemm_sustained"): the rates
of a GPU whose clocks have settled under load, as in a long training step.
"""
import json
import sys
import time

try:
    import torch
except ImportError:
    print("torch_gemm.py: no torch: skipped", file=sys.stderr)
    sys.exit(77)
if not torch.cuda.is_available():
    print("torch_gemm.py: no CUDA GPU: skipped", file=sys.stderr)
    sys.exit(77)

dev = "cuda"
FP8 = torch.cuda.get_device_capability() >= (8, 9) and hasattr(torch, "_scaled_mm")


def bench(fn, it=20, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
    e0.record()
    for _ in range(it):
        fn()
    e1.record()
    torch.cuda.synchronize()
    return e0.elapsed_time(e1) / it / 1e3


def operands(m, n, k):
    a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, k, device=dev, dtype=torch.bfloat16)   # [out, in]
    return a, b


def fp8_fn(a, b):
    s = torch.ones((), device=dev, dtype=torch.float32)
    aq = a.to(torch.float8_e4m3fn)
    bq = b.to(torch.float8_e4m3fn)
    return lambda: torch._scaled_mm(aq, bq.t(), scale_a=s, scale_b=s,
                                    out_dtype=torch.bfloat16)


print(json.dumps({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                  "fp8": FP8, "date": time.strftime("%Y-%m-%d")}), flush=True)
SHAPES = ((2304, 2304), (6912, 2304), (9216, 2304), (2304, 9216), (4096, 4096),
          (14336, 4096), (4096, 14336), (12288, 12288), (288, 2304), (1152, 2304))
SUSTAINED = "--sustained" in sys.argv


def timed(fn, f):
    """bench(), or over about 0.3 s after as long a warm-up."""
    if not SUSTAINED:
        return bench(fn)
    n = min(20000, max(5, int(0.3 / (f / 700e12 + 5e-6))))
    return bench(fn, it=n, warm=n)


for m in (512, 2048, 8192, 32768):
    for n, k in SHAPES:
        a, b = operands(m, n, k)
        f = 2 * m * n * k
        t = timed(lambda: a @ b.t(), f)
        row = dict(kind="gemm_sustained" if SUSTAINED else "gemm", m=m, n=n, k=k,
                   s=t, tflops=f / t / 1e12)
        if FP8:
            t8 = timed(fp8_fn(a, b), 2 * f)
            row.update(fp8_s=t8, fp8_tflops=f / t8 / 1e12)
        print(json.dumps(row), flush=True)
        del a, b
if SUSTAINED:
    sys.exit(0)
# sustained: each shape for about 8 s, the rate of every second
for m, n, k in ((8192, 8192, 8192), (16384, 9216, 2304)):
    a, b = operands(m, n, k)
    fns = [("bf16", lambda: a @ b.t())] + ([("fp8", fp8_fn(a, b))] if FP8 else [])
    for name, fn in fns:
        rates = []
        t_end = time.perf_counter() + 8
        while time.perf_counter() < t_end:
            t = bench(fn, it=max(1, int(0.5 / max(2 * m * n * k / 700e12, 1e-6))), warm=1)
            rates.append(round(2 * m * n * k / t / 1e12, 1))
        print(json.dumps(dict(kind="sustained", dtype=name, m=m, n=n, k=k,
                              tflops_each_half_second=rates)), flush=True)
    del a, b
