#!/bin/sh
# measure.sh OUTDIR [EXPORTS]: every GPU measurement of this folder in one
# run of at most about nine minutes, each script bounded by what is left:
#   dtensor.txt   torch_dtensor.py on the DTensor exports in EXPORTS
#                 (tp.py, dp.py, tpdp.py and tiny.json, made as
#                 tests/fidelity_dtensor.sh makes them), two or four ranks
#                 (gloo on the CPU when there are fewer GPUs than ranks)
#   steps.jsonl   torch_step.py: whole training steps with the optimizer
#   gemm.jsonl    torch_gemm.py: bf16 and FP8 matmul rates, sustained rates
#   sustained.jsonl  torch_gemm.py --sustained: the table at settled clocks
#   kernels.jsonl torch_kernels.py: kernels, GPU-busy time and host costs
#   moe.jsonl     torch_moe.py: one MoE layer under expert parallelism
#   lora.jsonl    torch_lora.py: LoRA (and QLoRA) steps
#   log.txt       the GPU (nvidia-smi), versions and every script's errors
# MEASURE_ONLY="dtensor steps ..." runs only those parts.  Each script
# alone exits 77 without torch or a GPU; see README.
out=${1:?usage: measure.sh OUTDIR [EXPORTS]}
exports=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
end=$(( $(date +%s) + ${MEASURE_SECONDS:-540} ))
mkdir -p "$out"
log="$out/log.txt"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=2

only=${MEASURE_ONLY:-dtensor steps gemm sustained kernels moe lora}
want() { case " $only " in *" $1 "*) return 0 ;; esac; return 1; }

left() {    # seconds left, at most $1
	l=$(( end - $(date +%s) ))
	[ "$l" -gt "$1" ] && l=$1
	[ "$l" -lt 1 ] && l=1
	echo "$l"
}
step() {    # step NAME SECONDS command...: run it bounded, note how it ended
	name=$1; secs=$(left "$2"); shift 2
	echo "== $name (at most ${secs}s) $(date -u +%H:%M:%S)" >>"$log"
	t0=$(date +%s)
	timeout -k 5 "$secs" "$@"
	rc=$?
	echo "== $name exit $rc after $(( $(date +%s) - t0 ))s" >>"$log"
}

{ date -u; nvidia-smi; nvidia-smi -q -d CLOCK,POWER; "$py" -c \
    'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'; } \
    >>"$log" 2>&1
cd "$here" || exit 2
if [ -n "$exports" ] && want dtensor; then
	for k in tp dp tpdp; do
		[ -f "$exports/$k.py" ] || continue
		n=$(sed -n 's/^PP, DP, CP, TP = \([0-9]*\), \([0-9]*\), \([0-9]*\), \([0-9]*\)$/\1 \2 \3 \4/p' \
		    "$exports/$k.py" | awk '{ print $1 * $2 * $3 * $4 }')
		echo "== dtensor $k on ${n:-2} ranks" >>"$out/dtensor.txt"
		step "dtensor $k" 60 "$py" -m torch.distributed.run \
		    --standalone --nproc_per_node "${n:-2}" torch_dtensor.py \
		    "$exports/$k.py" "$exports/tiny.json" >>"$out/dtensor.txt" 2>&1
	done
fi
want steps && step steps 330 "$py" torch_step.py --deadline 210 >"$out/steps.jsonl" 2>>"$log"
want gemm && step gemm 90 "$py" torch_gemm.py >"$out/gemm.jsonl" 2>>"$log"
want sustained && step sustained 120 "$py" torch_gemm.py --sustained >"$out/sustained.jsonl" 2>>"$log"
want kernels && step kernels 150 "$py" torch_kernels.py >"$out/kernels.jsonl" 2>>"$log"
want moe && step moe 110 "$py" torch_moe.py >"$out/moe.jsonl" 2>>"$log"
want lora && step lora 90 "$py" torch_lora.py >"$out/lora.jsonl" 2>>"$log"
echo "== done $(date -u +%H:%M:%S)" >>"$log"
