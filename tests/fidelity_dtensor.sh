#!/bin/sh
# fidelity_dtensor.sh: the DTensor export of a plan run for real.  A tiny
# LLaMA with Hugging Face's module names (tests/data/fidelity/torch_dtensor.py)
# takes one optimizer step on two ranks under the export's parallelize() --
# tensor parallel with sequence parallel and a vocabulary-parallel loss,
# FSDP2 on the blocks and the root -- and on one rank unsharded: the losses
# agree within bf16 tolerance and each rank holds the parameter, gradient and
# optimizer bytes the plan predicts.  NCCL with a GPU per rank, else gloo on
# the CPU.  Needs python3 with torch 2.4 or later and torchrun: skips
# without them.
. "$TESTS_SRCDIR/lib.sh"

PY=${PYTHON:-python3}
command -v "$PY" >/dev/null 2>&1 || skip "python3 is not installed"
"$PY" -c 'from torch.distributed.fsdp import fully_shard; from torch.distributed.tensor import DTensor' \
    >/dev/null 2>&1 || skip "torch with DTensor and FSDP2 (2.4 or later) is not installed"
command -v torchrun >/dev/null 2>&1 || skip "torchrun is not installed"

"$SHARDLAB" gen llama --layers 2 --hidden 256 --heads 4 --kv-heads 2 --vocab 1024 \
    --seq 128 --name llama-tiny -o "$TMP/tiny.json" >/dev/null 2>&1 || fail "gen"
# tensor parallel 2: sequence parallel, loss parallel, no pipeline
run tp "$SHARDLAB" plan "$TMP/tiny.json" --mesh 1x1x2 --axes pp,dp,tp --global-batch 2 \
    --framework torchtitan --export dtensor -o "$TMP/tp.py"
expect_status 0 tp
# data parallel 2: FSDP2 alone
run dp "$SHARDLAB" plan "$TMP/tiny.json" --mesh 1x2 --axes pp,dp --global-batch 4 \
    --framework torchtitan --export dtensor -o "$TMP/dp.py"
expect_status 0 dp
for k in tp dp; do
	n_checks=$((n_checks + 1))
	OMP_NUM_THREADS=1 torchrun --nproc_per_node 2 \
	    "$TESTS_SRCDIR/data/fidelity/torch_dtensor.py" "$TMP/$k.py" "$TMP/tiny.json" \
	    >"$TMP/$k.run" 2>&1 || { cat "$TMP/$k.run"; fail "$k: the step does not match the plan"; }
	cat "$TMP/$k.run"
done
echo "PASS: $n_checks checks"
exit 0
