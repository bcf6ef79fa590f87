#!/bin/sh
# cli_export.sh: every export of `shardlab plan` passes its framework's own
# checks as tests/framework_check.py restates them (Megatron-LM's
# validate_args and TransformerConfig, DeepSpeed's DeepSpeedConfig and
# PipelineEngine, torchtitan's job configuration and ParallelDims, the
# module names of each DTensor target), over bundled and generated models,
# recomputation, precision, schedules, uneven stages, context parallelism
# and optimizer offload; and the step time and peak memory in each
# export's comment are the plan's (its JSON, written by the same search).
# Needs python3 (3.11 for tomllib): skips without it.
. "$TESTS_SRCDIR/lib.sh"

PY=${PYTHON:-python3}
command -v "$PY" >/dev/null 2>&1 || skip "python3 is not installed"
"$PY" -c 'import tomllib' 2>/dev/null || skip "python3 has no tomllib (3.11 or later)"
CHECK="$TESTS_SRCDIR/framework_check.py"

"$SHARDLAB" gen llama --layers 6 --hidden 1024 --heads 16 --kv-heads 4 \
    --ffn 2816 --vocab 32000 --seq 4096 --name llama-gqa -o "$TMP/gqa.json" \
    >/dev/null 2>&1 || fail "gen llama-gqa"
"$SHARDLAB" gen gpt --layers 10 --hidden 1024 --heads 16 --vocab 50304 \
    --seq 2048 --name gpt-10 -o "$TMP/gpt10.json" >/dev/null 2>&1 || fail "gen gpt-10"
"$SHARDLAB" gen llama --layers 4 --hidden 1024 --heads 8 --kv-heads 2 \
    --seq 16384 --vocab 32000 --name llama-long -o "$TMP/long.json" \
    >/dev/null 2>&1 || fail "gen llama-long"

# what each export must say about its model (the checker's --model)
model() {
	case $1 in
	gpt-1.7b) echo '{"layers":24,"hidden":2304,"heads":24,"kv_heads":24,"ffn":9216,"vocab":51200,"seq":2048,"family":"gpt"}' ;;
	gpt-7.5b) echo '{"layers":36,"hidden":4096,"heads":32,"kv_heads":32,"ffn":16384,"vocab":51200,"seq":2048,"family":"gpt"}' ;;
	llama-7b) echo '{"layers":32,"hidden":4096,"heads":32,"kv_heads":32,"ffn":11008,"vocab":32000,"seq":2048,"family":"llama"}' ;;
	bert-large) echo '{"layers":24,"hidden":1024,"heads":16,"kv_heads":16,"ffn":4096,"vocab":30522,"seq":512,"family":"bert"}' ;;
	*gqa.json) echo '{"layers":6,"hidden":1024,"heads":16,"kv_heads":4,"ffn":2816,"vocab":32000,"seq":4096,"family":"llama"}' ;;
	*gpt10.json) echo '{"layers":10,"hidden":1024,"heads":16,"kv_heads":16,"ffn":4096,"vocab":50304,"seq":2048,"family":"gpt"}' ;;
	*long.json) echo '{"layers":4,"hidden":1024,"heads":8,"kv_heads":2,"ffn":2816,"vocab":32000,"seq":16384,"family":"llama"}' ;;
	esac
}

n_case=0
# case KIND WORLD MODEL ARGS...: the plan's export of KIND passes its
# framework's checks, with the plan's prediction in its comment
case_() {
	kind=$1 world=$2 m=$3
	shift 3
	n_case=$((n_case + 1))
	f="$TMP/case$n_case"
	"$SHARDLAB" plan "$m" "$@" --export "$kind" -o "$f.out" >"$f.log" 2>&1 ||
		{ cat "$f.log"; fail "case $n_case: plan $m $* --export $kind"; }
	"$SHARDLAB" plan "$m" "$@" --framework "$fw" --json "$f.json" >/dev/null 2>&1 ||
		fail "case $n_case: plan $m $* --json"
	got=$("$PY" "$CHECK" "$kind" "$f.out" --world "$world" --model "$(model "$m")") ||
		{ cat "$f.out"; fail "case $n_case ($kind, $m $*): rejected"; }
	n_checks=$((n_checks + 1))
	want=$(sed -n 's/^  "step_time_ns": \([0-9]*\),$/\1/p' "$f.json")
	case $got in
	*"\"step_time_ns\": $want,"*) ;;
	*) fail "case $n_case: the export predicts $got; the plan's step is $want ns" ;;
	esac
	want=$(sed -n 's/^  "max_memory_bytes": \([0-9]*\),$/\1/p' "$f.json")
	case $got in
	*"\"peak_bytes\": $want,"*) ;;
	*) fail "case $n_case: the export predicts $got; the plan's peak is $want B" ;;
	esac
}

# ---- Megatron-LM
fw=megatron
case_ megatron 8 gpt-1.7b --devices 8 --global-batch 16
case_ megatron 16 gpt-7.5b --mesh 2x2x4 --axes pp,dp,tp --global-batch 32 --recompute full
case_ megatron 16 gpt-7.5b --mesh 4x4 --axes pp,tp --global-batch 32 --recompute selective \
    --attention naive
case_ megatron 8 llama-7b --devices 8 --global-batch 16 --precision bf16
case_ megatron 8 llama-7b --devices 8 --global-batch 16 --precision fp32 --recompute auto
# fp16 with dynamic loss scaling, and its pipeline
case_ megatron 8 llama-7b --devices 8 --global-batch 16 --precision fp16
case_ megatron 16 gpt-1.7b --mesh 2x2x4 --axes pp,dp,tp --global-batch 32 --precision fp16 \
    --recompute selective
case_ megatron 16 "$TMP/gqa.json" --devices 16 --global-batch 32 --hw h100-2node-ib
case_ megatron 8 bert-large --devices 8 --global-batch 64
# uneven stages: 10 layers over 4 stages, 24 over 5 (one first and last
# count, or a layout)
case_ megatron 8 "$TMP/gpt10.json" --mesh 4x2 --axes pp,tp --global-batch 16 --slack -1
case_ megatron 10 gpt-1.7b --mesh 5x2 --axes pp,tp --global-batch 20 --slack 1
# interleaved 1F1B: 4 ranks x 2 chunks
case_ megatron 16 gpt-7.5b --mesh 4x4 --axes pp,tp --global-batch 32 \
    --schedule interleaved --virtual-stages 3
# context parallel over a named axis
case_ megatron 16 "$TMP/long.json" --mesh 2x2x4 --axes pp,dp,cp --global-batch 4
# optimizer states in host memory
case_ megatron 8 llama-7b --devices 8 --global-batch 16 --offload-optimizer

# ---- DeepSpeed
fw=deepspeed
case_ deepspeed 8 gpt-1.7b --devices 8 --global-batch 32
case_ deepspeed 16 gpt-7.5b --mesh 2x8 --axes pp,dp --global-batch 32 --recompute full
case_ deepspeed 16 llama-7b --devices 16 --global-batch 64 --hw h100-2node-ib
case_ deepspeed 8 llama-7b --devices 8 --global-batch 16 --offload-optimizer
case_ deepspeed 8 llama-7b --devices 8 --global-batch 16 --precision fp32 --recompute auto
case_ deepspeed 8 llama-7b --devices 8 --global-batch 16 --precision fp16 --offload-optimizer
case_ deepspeed 16 gpt-1.7b --mesh 4x4 --axes pp,dp --global-batch 32 --precision fp16

# ---- torchtitan (its job configuration, and the DTensor script)
fw=torchtitan
for k in torchtitan dtensor; do
	case_ $k 8 llama-7b --devices 8 --global-batch 16
	case_ $k 16 llama-7b --mesh 2x2x4 --axes pp,dp,tp --global-batch 32
	case_ $k 16 "$TMP/gqa.json" --devices 16 --global-batch 64 --hw h100-2node-ib \
	    --recompute full
	case_ $k 8 "$TMP/long.json" --mesh 2x2x2 --axes pp,cp,tp --global-batch 4
	case_ $k 16 llama-7b --mesh 4x4 --axes pp,tp --global-batch 32 \
	    --schedule interleaved --virtual-stages 2 --precision fp32
done
case_ dtensor 8 gpt-1.7b --devices 8 --global-batch 16

# ---- every framework on 16 devices (two nodes): gpt-1.7b and llama-7b with
# uneven stages, context parallel, interleaving, recomputation, precision
# and offload
fw=megatron
# 24 layers over 16 stages: a --pipeline-model-parallel-layout
case_ megatron 16 gpt-1.7b --mesh 16x1 --axes pp,dp --global-batch 64 --hw h100-2node-ib
case_ megatron 16 gpt-1.7b --mesh 2x2x4 --axes pp,cp,tp --global-batch 64
case_ megatron 16 gpt-1.7b --mesh 4x4 --axes pp,tp --global-batch 64 \
    --schedule interleaved --virtual-stages 2 --recompute full
case_ megatron 16 llama-7b --devices 16 --global-batch 64 --offload-optimizer --precision fp16
fw=deepspeed
case_ deepspeed 16 gpt-1.7b --mesh 4x4 --axes pp,dp --global-batch 64 --recompute full \
    --precision fp16
case_ deepspeed 16 llama-7b --devices 16 --global-batch 64 --offload-optimizer
fw=torchtitan
case_ torchtitan 16 llama-7b --mesh 2x2x4 --axes pp,cp,tp --global-batch 64
case_ torchtitan 16 llama-7b --mesh 8x2 --axes pp,tp --global-batch 64 --slack 1
# 6 layers over 4 stages
case_ torchtitan 16 "$TMP/gqa.json" --mesh 4x4 --axes pp,tp --global-batch 64
case_ dtensor 16 llama-7b --devices 16 --global-batch 64 --recompute full --precision fp32
case_ dtensor 16 llama-7b --mesh 4x4 --axes pp,dp --global-batch 64 --schedule gpipe

# ---- torchtitan's selective recomputation: the operator policy
# (activation_checkpoint.py, _apply_op_sac), in the TOML and the script
case_ torchtitan 8 llama-7b --devices 8 --global-batch 16 --recompute selective
expect_in "$f.out" 'mode = "selective"'
expect_in "$f.out" 'selective_ac_option = "op"'
case_ dtensor 16 llama-7b --mesh 2x8 --axes dp,tp --global-batch 32 --recompute selective
expect_in "$f.out" 'RECOMPUTE = "selective"'

# ---- HSDP: the search's own choice across two nodes, and --dp-replicate
# (torchtitan's data_parallel_replicate_degree), in the TOML, the DTensor
# script and the plan line; a plan reopened (timeline --plan) counts the
# same peak
case_ torchtitan 16 llama-7b --devices 16 --global-batch 64 --hw h100-2node-ib --pp 1
expect_in "$f.out" "data_parallel_replicate_degree = 2"
expect_in "$f.out" "data_parallel_shard_degree = 8"
case_ dtensor 16 llama-7b --devices 16 --global-batch 64 --hw h100-2node-ib \
    --dp-replicate 4 --tp 1
expect_in "$f.out" "DP_REPLICATE = 4"
run hsdp "$SHARDLAB" plan llama-7b --devices 16 --global-batch 64 --hw h100-2node-ib \
    --pp 1 --framework torchtitan --json "$TMP/hsdp.json"
expect_status 0 hsdp
expect_in "$TMP/hsdp.out" "HSDP: states sharded over 8 ranks, replicated 2 times"
expect_in "$TMP/hsdp.out" "2x8 hsdp"
expect_eq "$(json_int "$TMP/hsdp.json" replicate)" 2 "the plan's replicate degree"
peak=$(sed -n 's/^memory per device: at most \([0-9.]* [KMGT]*i*B\),.*/\1/p' "$TMP/hsdp.out")
run hsdpt "$SHARDLAB" timeline --plan "$TMP/hsdp.json" --stage 0
expect_status 0 hsdpt
expect_in "$TMP/hsdpt.out" "the plan counts $peak for the device"
run hsdp1 "$SHARDLAB" plan llama-7b --devices 16 --global-batch 64 --hw h100-2node-ib \
    --pp 1 --framework torchtitan --dp-replicate 1
expect_status 0 hsdp1
expect_not_in "$TMP/hsdp1.out" "HSDP"
run hsdpmg "$SHARDLAB" plan llama-7b --devices 16 --global-batch 64 --dp-replicate 2
expect_status 2 hsdpmg
expect_in "$TMP/hsdpmg.err" "HSDP needs --framework torchtitan or free"
run hsdp3 "$SHARDLAB" plan llama-7b --devices 16 --global-batch 64 --dp-replicate 3 \
    --framework torchtitan
expect_status 2 hsdp3
expect_in "$TMP/hsdp3.err" "--dp-replicate 3 does not divide the 16 data-parallel ranks"
run hsdpz "$SHARDLAB" plan llama-7b --devices 16 --global-batch 64 --dp-replicate 2 \
    --framework torchtitan --no-zero
expect_status 2 hsdpz
expect_in "$TMP/hsdpz.err" "--no-zero"

# ---- what a framework cannot run: refused, saying why
run ttgpt "$SHARDLAB" plan gpt-1.7b --devices 8 --global-batch 16 --export torchtitan
expect_status 2 ttgpt
expect_in "$TMP/ttgpt.err" "torchtitan trains LLaMA-family models"
run ttoff "$SHARDLAB" plan llama-7b --devices 8 --global-batch 16 --framework torchtitan \
    --offload-optimizer
expect_status 1 ttoff
expect_in "$TMP/ttoff.err" "not the optimizer alone"
run mgamp "$SHARDLAB" plan llama-7b --devices 8 --global-batch 16 --precision amp
expect_status 1 mgamp
expect_in "$TMP/mgamp.err" "Megatron-LM has no fp32-weights autocast"
run ttfp16 "$SHARDLAB" plan llama-7b --devices 8 --global-batch 16 --framework torchtitan \
    --precision fp16
expect_status 1 ttfp16
expect_in "$TMP/ttfp16.err" "torchtitan keeps fp32 parameters"
run mgg "$SHARDLAB" plan gpt-1.7b --mesh 2x4 --axes pp,tp --global-batch 16 \
    --schedule gpipe
expect_status 1 mgg
expect_in "$TMP/mgg.err" "Megatron-LM has no GPipe schedule"
run dsev "$SHARDLAB" plan "$TMP/gpt10.json" --mesh 4x2 --axes pp,dp --global-batch 16 \
    --framework deepspeed
expect_status 1 dsev
expect_in "$TMP/dsev.err" "PipelineModule partitions layers evenly"
# where tensor parallelism wins, DeepSpeed's plan names the frameworks that
# run a better one and by how much: their step is their own plan's, and the
# ratio is DeepSpeed's step over it
run better "$SHARDLAB" plan llama-7b --devices 8 --global-batch 4 --framework deepspeed \
    --json "$TMP/better-ds.json"
expect_status 0 better
"$SHARDLAB" plan llama-7b --devices 8 --global-batch 4 --framework megatron \
    --json "$TMP/better-mg.json" >"$TMP/better-mg.out" 2>&1 || fail "plan --framework megatron"
line=$(grep "^Megatron-LM would run a better plan: " "$TMP/better.out") ||
	fail "plan --framework deepspeed does not say Megatron-LM runs a better plan"
mg=$(sed -n 's/^step time \([0-9.]* [mu]*s\):.*/\1/p' "$TMP/better-mg.out")
case $line in
*"plan: step $mg, "*"(pipeline 1, tensor parallel "[248]", "*"--framework megatron)") ;;
*) fail "the better plan is not Megatron-LM's plan of step $mg with tensor parallel: $line" ;;
esac
"$PY" - "$TMP/better-ds.json" "$TMP/better-mg.json" "$line" <<'PYEOF' ||
import json, re, sys
ds = json.load(open(sys.argv[1]))["step_time_ns"]
mg = json.load(open(sys.argv[2]))["step_time_ns"]
m = re.search(r", ([0-9.]+) ms \(([0-9.]+)x\) faster", sys.argv[3])
assert m, sys.argv[3]
assert ds > mg, (ds, mg)
assert abs(float(m.group(1)) - (ds - mg) / 1e6) < 0.006, (m.group(1), ds, mg)
assert m.group(2) == "%.2f" % (ds / mg), (m.group(2), ds / mg)
PYEOF
	fail "the better plan's saving is not DeepSpeed's step less Megatron-LM's"
# a tensor-parallel axis DeepSpeed cannot run: the frameworks that can
run ptnone "$SHARDLAB" plan llama-7b --mesh 2x4 --axes pp,tp --global-batch 16 \
    --framework deepspeed
expect_status 1 ptnone
expect_in "$TMP/ptnone.out" "Megatron-LM would run a plan: "
expect_in "$TMP/ptnone.out" "where DeepSpeed runs none (--framework megatron)"
# a free plan is launched with no framework: JSON only
run free "$SHARDLAB" plan gpt-1.7b --devices 8 --global-batch 16 --framework free \
    --export megatron
expect_status 2 free
expect_in "$TMP/free.err" "a Megatron-LM launch cannot run a plan made for per-operator (free)"

echo "PASS: $n_case exports accepted, $n_checks checks"
exit 0
