"""Measured activation memory of one pipeline device, for shardlab's schedule
model: the device's chunks of a GPT (the layers of tests/data/fidelity/
torch_gpt.py) run their forward and backward passes in the order Megatron-LM
runs them on that device (GPipe, 1F1B, interleaved 1F1B), on one GPU.  What
other devices would send is stood in for by fresh tensors of the same shape:
received activations (kept, as Megatron-LM keeps them until the backward pass)
and received gradients.  Outputs sent on are freed after the send, as
Megatron-LM's deallocate_pipeline_outputs does.

  python3 torch_pipe.py MODE PLAN.json...    (MODE: bf16 or amp)

PLAN is `shardlab plan ... --export json` (format shardlab-pipeline): its
schedule, pp, virtual_stages, micro_batches and each stage's device, first
layer and layer count.  Prints one JSON line per device: the bytes one
micro-batch's forward pass holds per chunk, the most held between passes
(what shardlab's "activation" peak models) and the allocator's peak, all
above the weights and gradients."""
import json, os, sys
import torch, torch.nn as nn, torch.nn.functional as F
from torch.autograd.variable import Variable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_gpt import Layer  # noqa: E402

dev = "cuda"
H, A, FFN, SEQ, VOCAB, LAYERS = 2304, 24, 9216, 2048, 51200, 24  # gpt-1.7b


class Chunk(nn.Module):
    def __init__(s, first, n, attn="sdpa", p=0.1):
        super().__init__()
        s.first, s.last = first == 0, first + n == LAYERS
        s.layers = nn.ModuleList(Layer(H, A, FFN, 1, attn, p) for _ in range(n))
        if s.first:
            s.wte = nn.Embedding(VOCAB, H)
            s.wpe = nn.Embedding(SEQ, H)
        if s.last:  # the last stage holds its own copy of the tied embedding
            s.lnf = nn.LayerNorm(H)
            s.head = nn.Parameter(torch.randn(VOCAB, H) * 0.02)

    def forward(s, x, tok):
        if s.first:
            x = s.wte(tok) + s.wpe(torch.arange(tok.shape[1], device=tok.device))
        for l in s.layers:
            x = l(x)
        if s.last:
            logits = s.lnf(x) @ s.head.t()
            return F.cross_entropy(logits.float().view(-1, VOCAB), tok.view(-1))
        return x


def order(sched, p, v, m, d):
    """(forward?, chunk, micro-batch) in the order Megatron-LM runs them on
    device d (schedules.py: forward_backward_pipelining_{without,with}_
    interleaving; GPipe is every forward, then every backward)."""
    if sched == "gpipe":
        return [(True, 0, i) for i in range(m)] + [(False, 0, i) for i in range(m)]
    total = m * v
    if sched == "1f1b":
        warm = min(p - d - 1, m)
    else:
        warm = min((p - d - 1) * 2 + (v - 1) * p, total)
    nf, nb = [0] * v, [0] * v
    out = []

    def f(k):
        c = (k % (p * v)) // p
        out.append((True, c, nf[c])); nf[c] += 1

    def b(k):
        c = v - 1 - (k % (p * v)) // p
        out.append((False, c, nb[c])); nb[c] += 1
    for k in range(warm):
        f(k)
    for i in range(total - warm):
        f(warm + i)
        b(i)
    for k in range(total - warm, total):
        b(k)
    return out


def run_device(mode, plan, d):
    p, v, m = plan["pp"], plan["virtual_stages"], plan["micro_batches"]
    sched = plan["schedule"]
    b = plan.get("graph_batch", 1)
    st = [s for j, s in enumerate(plan["stages"]) if j % p == d]
    torch.cuda.empty_cache()
    with torch.device(dev):
        chunks = [Chunk(s["first_layer"], s["layers"]) for s in st]
    if mode == "bf16":
        chunks = [c.to(torch.bfloat16) for c in chunks]
    act = torch.bfloat16 if mode == "bf16" else torch.float32
    tok = torch.randint(0, VOCAB, (b, SEQ), device=dev)
    held = {}

    def fwd(c, i):
        ch = chunks[c]
        x = None if ch.first else torch.randn(b, SEQ, H, dtype=act, device=dev,
                                              requires_grad=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=mode == "amp"):
            y = ch(x, tok)
        shape, dt = y.shape, y.dtype
        if not ch.last:  # sent on: only the graph stays
            y.data = torch.empty((1,), device=dev, dtype=dt)
        held[(c, i)] = (x, y, shape, dt)

    def bwd(c, i):
        x, y, shape, dt = held.pop((c, i))
        if chunks[c].last:
            y.backward()
        else:
            g = torch.randn(shape, dtype=dt, device=dev)
            Variable._execution_engine.run_backward(
                tensors=(y,), grad_tensors=(g,), keep_graph=False,
                create_graph=False, inputs=(), allow_unreachable=True,
                accumulate_grad=True)
        del x, y

    ops = order(sched, p, v, m, d)
    for fw, c, i in ops:  # warm-up: gradients, workspaces, kernels
        (fwd if fw else bwd)(c, i)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    per_chunk = []
    for c in range(v):
        fwd(c, 0)
        torch.cuda.synchronize()
        per_chunk.append(torch.cuda.memory_allocated() - base)
        bwd(c, 0)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    most = 0
    for fw, c, i in ops:
        (fwd if fw else bwd)(c, i)
        torch.cuda.synchronize()
        most = max(most, torch.cuda.memory_allocated() - base)
    peak = torch.cuda.max_memory_allocated() - base
    r = dict(kind="pipeline_device", mode=mode, schedule=sched, pp=p, virtual_stages=v,
             micro_batches=m, batch=b, device=d, layers=[s["layers"] for s in st],
             chunk_held=per_chunk, held_peak=most, peak=peak)
    del chunks, held
    return r


if __name__ == "__main__":
    mode = sys.argv[1]
    print(json.dumps({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                      "cuda": torch.version.cuda}), flush=True)
    for path in sys.argv[2:]:
        plan = json.load(open(path))
        for d in range(plan["pp"]):
            r = run_device(mode, plan, d)
            r["plan"] = os.path.basename(path)
            print(json.dumps(r), flush=True)
