#!/bin/sh
# dtensor_bytes.sh: the bytes a DTensor export's ranks held, measured, against
# the plan.  tests/data/fidelity/dtensor-h200.txt is torch_dtensor.py run on
# the three exports below (PyTorch 2.11, gloo ranks, 2026-11-27): a tiny
# LLaMA under tensor parallel 2 (where the vocabulary-parallel embedding's
# gradient is held whole, sl_whole_grad_axes), FSDP2 over 2 ranks, and both
# on 4.  Each rank's parameter, gradient and optimizer bytes after the step
# must be at most the plan's (the largest shard of each tensor) and at least
# 99% of it, as torch_dtensor.py checks them; this holds the plan to the
# measurement where no GPU or torch is.
. "$TESTS_SRCDIR/lib.sh"

command -v python3 >/dev/null 2>&1 || skip "python3 is not installed"
M=$TESTS_SRCDIR/data/fidelity/dtensor-h200.txt
"$SHARDLAB" gen llama --layers 2 --hidden 256 --heads 4 --kv-heads 2 --vocab 1024 \
    --seq 128 --name llama-tiny -o "$TMP/tiny.json" >/dev/null 2>&1 || fail "gen"
for k in "tp 1x1x2 2" "dp 1x2 4" "tpdp 1x2x2 4"; do
	set -- $k
	case $1 in dp) axes=pp,dp ;; *) axes=pp,dp,tp ;; esac
	run "$1" "$SHARDLAB" plan "$TMP/tiny.json" --mesh "$2" --axes "$axes" \
	    --global-batch "$3" --framework torchtitan --export dtensor -o "$TMP/$1.py"
	expect_status 0 "$1"
	n_checks=$((n_checks + 1))
	python3 - "$TMP/$1.py" "$M" "$1" <<'PY' || fail "$1: measured bytes are not the plan's"
import json, re, sys
export, measured, name = sys.argv[1:]
src = open(export).read()
pred = eval(re.search(r"PREDICTED = (dict\(.*?\]\))", src, re.S).group(1))["ranks"][0]
rows, cur = [], None
for line in open(measured):
    if line.startswith("== dtensor "):
        cur = line.split()[2]
    elif line.startswith("{") and cur == name:
        r = json.loads(line)
        if r.get("what") == "bytes":
            rows.append(r["measured"])
if not rows:
    sys.exit("no measured rows for %s in %s" % (name, measured))
ok = True
for i, got in enumerate(rows):
    for k in ("parameters", "gradients", "optimizer"):
        if not (0.99 * pred[k] <= got[k] <= pred[k]):
            print("%s rank %d %s: measured %d, plan %d" % (name, i, k, got[k], pred[k]))
            ok = False
print("%s: %d ranks hold the plan's bytes (gradients %d)" % (name, len(rows), pred["gradients"]))
sys.exit(0 if ok else 1)
PY
done
echo "PASS: $n_checks checks"
exit 0
