"""The matmul tables of shardlab's bundled hardware profiles
(data/hardware/*.json, device.gemm and device.gemm_fp8) from torch_gemm.py's
rows measured at settled clocks ("gemm_sustained": each shape run for about
0.3 s after as long a warm-up, the clocks a long training step runs at).

  python3 profile_tables.py GEMM.jsonl PROFILE.json
      the measured GPU's own profile: every shape's bf16 rate as "gemm",
      its FP8 rate as "gemm_fp8" (where measured)
  python3 profile_tables.py GEMM.jsonl PROFILE.json --ceiling C
      a GPU not measured here, whose published maximum achievable matmul
      rate is C TFLOP/s: each distinct problem size F of the measured GPU
      (its shapes' mean time, as the engine merges points of one size) at
      the same time and the same fraction
      of the ceiling, F C / 792.1 FLOPs at R C / 792.1 (792.1 TFLOP/s: the
      H100 SXM's maximum achievable matmul rate, stas00/ml-engineering,
      compute/accelerator/README.md), bf16 only (doc/cost-model.md)

The profile is rewritten in place, its other lines untouched; a profile
without a "gemm" array is left alone with a message.  Exit 2 on bad input.
"""
import json
import re
import sys

H100_CEILING = 792.1


def rows(path):
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except ValueError as e:
                sys.exit("%s:%d: not a JSON line: %s" % (path, n, e))
            if r.get("kind") == "gemm_sustained":
                out.append(r)
    if not out:
        sys.exit("%s: no \"gemm_sustained\" rows (torch_gemm.py --sustained)" % path)
    return out


def array(items, indent="      "):
    return "[\n" + ",\n".join(indent + "{ " + ", ".join(
        '"%s": %s' % (k, v) for k, v in it) + " }" for it in items) + "\n    ]"


def replace(text, key, body):
    pat = re.compile(r'("%s": )\[.*?\n    \]' % key, re.S)
    if pat.search(text):
        return pat.sub(lambda m: m.group(1) + body, text, count=1)
    # a new array after the "gemm" one
    g = re.compile(r'("gemm": \[.*?\n    \])', re.S)
    return g.sub(lambda m: m.group(1) + ',\n    "%s": %s' % (key, body), text, count=1)


def main():
    if len(sys.argv) not in (3, 5) or (len(sys.argv) == 5 and sys.argv[3] != "--ceiling"):
        sys.exit(__doc__)
    rs, prof = rows(sys.argv[1]), sys.argv[2]
    text = open(prof).read()
    if '"gemm": [' not in text:
        print("%s: no \"gemm\" array: left alone" % prof, file=sys.stderr)
        return
    if len(sys.argv) == 3:
        text = replace(text, "gemm", array(
            [(("m", r["m"]), ("n", r["n"]), ("k", r["k"]), ("tflops", "%.1f" % r["tflops"]))
             for r in rs]))
        fp8 = [r for r in rs if r.get("fp8_tflops")]
        if fp8:
            text = replace(text, "gemm_fp8", array(
                [(("m", r["m"]), ("n", r["n"]), ("k", r["k"]),
                  ("tflops", "%.1f" % r["fp8_tflops"])) for r in fp8]))
    else:
        c = float(sys.argv[4]) / H100_CEILING
        by = {}
        for r in rs:
            by.setdefault(2.0 * r["m"] * r["n"] * r["k"], []).append(r["tflops"])
        text = replace(text, "gemm", array(
            [(("flops", "%.4g" % (f * c)), ("tflops", "%.1f" % (len(v) / sum(1 / x for x in v) * c)))
             for f, v in sorted(by.items())]))
    tmp = prof + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    json.load(open(tmp))            # still a JSON document
    import os
    os.replace(tmp, prof)


if __name__ == "__main__":
    main()
