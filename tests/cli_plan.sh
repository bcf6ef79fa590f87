#!/bin/sh
# shardlab plan: the hybrid search from the command line.  A two-stage
# plan of GPT 7.5B on 2 x (2 x 4) devices exported as the Megatron-LM
# arguments and DeepSpeed configuration a hand-written launch uses
# (tests/expected), a search over devices, nothing fitting, and bad input.
. "$TESTS_SRCDIR/lib.sh"

TWO="gpt-7.5b --mesh 2x2x4 --axes pp,dp,tp --global-batch 32 --micro-batch 1 \
--recompute full --hw a100-sxm --slack 0 --mem-limit 24GB"

# Megatron-LM: TP 4 inside a node, PP 2, DP 2, micro-batch 1 of 32; its
# comment predicts what the report says
run mgr "$SHARDLAB" plan $TWO
run mg "$SHARDLAB" plan $TWO --export megatron
expect_status 0 mg
grep -v '^#' "$TMP/mg.out" > "$TMP/mg.args"
step=$(sed -n 's/^step time \([0-9.]* [mu]*s\):.*/\1/p' "$TMP/mgr.out")
peak=$(sed -n 's/^memory per device: at most \([0-9.]* [KMGT]*i*B\) .*/\1/p' "$TMP/mgr.out")
expect_in "$TMP/mg.out" "# predicted step time $step; peak memory per device $peak"
n_checks=$((n_checks + 1))
cmp -s "$TMP/mg.args" "$TESTS_SRCDIR/expected/plan_megatron_2stage.txt" ||
	{ diff "$TESTS_SRCDIR/expected/plan_megatron_2stage.txt" "$TMP/mg.args"; fail "megatron arguments"; }

# DeepSpeed runs no tensor parallelism: 2 stages of 8 data-parallel ranks,
# 32 = 1 per GPU x 4 accumulation steps x 8 data-parallel ranks, ZeRO-1
DS="gpt-7.5b --mesh 2x8 --axes pp,dp --global-batch 32 --micro-batch 1 \
--recompute full --hw a100-sxm --slack 0"
run ds "$SHARDLAB" plan $DS --export deepspeed -o "$TMP/ds.json"
expect_status 0 ds
n_checks=$((n_checks + 1))
grep -v '"comment"' "$TMP/ds.json" > "$TMP/ds.cfg"
cmp -s "$TMP/ds.cfg" "$TESTS_SRCDIR/expected/plan_deepspeed_2stage.json" ||
	{ diff "$TESTS_SRCDIR/expected/plan_deepspeed_2stage.json" "$TMP/ds.cfg"; fail "deepspeed json"; }
# the prediction in its comment is the plan's, as the report prints it
step=$(sed -n 's/^step time \([0-9.]* [mu]*s\):.*/\1/p' "$TMP/ds.out")
peak=$(sed -n 's/^memory per device: at most \([0-9.]* [KMGT]*i*B\) .*/\1/p' "$TMP/ds.out")
expect_in "$TMP/ds.json" "predicted step time $step, peak memory per device $peak"
# with -o the report is printed too, for DeepSpeed (the export's framework)
expect_in "$TMP/ds.out" "chosen plan: 2 pipeline stages"
expect_in "$TMP/ds.out" "framework: DeepSpeed"
# a plan made for one framework is not launched with another
run dsx "$SHARDLAB" plan $TWO --framework megatron --export deepspeed
expect_status 2 dsx
expect_in "$TMP/dsx.err" "a DeepSpeed launch cannot run a plan made for Megatron-LM"

# the stage table: 18 layers each, stage 0 keeps 2 micro-batches, stage 1 one
run rep "$SHARDLAB" plan $TWO
expect_status 0 rep
expect_in "$TMP/rep.out" "0      0       0-17       full              2"
expect_in "$TMP/rep.out" "1      1       18-35      full              1"
# beside it, the per-operator plan of the same stages
expect_in "$TMP/rep.out" "the per-operator plan (--framework free) of the same stages: step"

# per-layer plan JSON with stages; DTensor source
run js "$SHARDLAB" plan $TWO --export json -o "$TMP/p.json"
expect_status 0 js
expect_in "$TMP/p.json" '"format": "shardlab-pipeline"'
expect_eq "$(grep -c '"first_layer"' "$TMP/p.json")" 2 "stages in the plan JSON"
run js2 "$SHARDLAB" plan $TWO --json "$TMP/p2.json"
expect_status 0 js2
n_checks=$((n_checks + 1))
cmp -s "$TMP/p.json" "$TMP/p2.json" || fail "--json and --export json differ"
# no option ignored: --json with --export writes both, -o without --export
# is refused, and two outputs on standard output are refused, nothing run
run both "$SHARDLAB" plan $DS --export deepspeed -o "$TMP/ds2.json" --json "$TMP/p3.json"
expect_status 0 both
n_checks=$((n_checks + 1))
cmp -s "$TMP/ds.json" "$TMP/ds2.json" || fail "--export beside --json"
run pds "$SHARDLAB" plan $DS --framework deepspeed --json "$TMP/pds.json"
expect_status 0 pds
n_checks=$((n_checks + 1))
cmp -s "$TMP/pds.json" "$TMP/p3.json" || fail "--json beside --export"
run both2 "$SHARDLAB" plan $TWO --export megatron --json "$TMP/p4.json"
expect_status 0 both2
grep -v '^#' "$TMP/both2.out" >"$TMP/both2.args"
n_checks=$((n_checks + 1))
cmp -s "$TMP/both2.args" "$TESTS_SRCDIR/expected/plan_megatron_2stage.txt" ||
	fail "--export megatron beside --json"
n_checks=$((n_checks + 1))
cmp -s "$TMP/p.json" "$TMP/p4.json" || fail "--json beside --export megatron"
run onlyo "$SHARDLAB" plan $TWO -o "$TMP/o.json"
expect_status 2 onlyo
expect_in "$TMP/onlyo.err" "-o names where --export writes"
[ -e "$TMP/o.json" ] && fail "-o without --export wrote a file"
run twostd "$SHARDLAB" plan $TWO --export megatron --json -
expect_status 2 twostd
expect_in "$TMP/twostd.err" "--json - and --export both write to standard output"
# the DTensor script launches with torchtitan, whose tensor parallelism
# needs a LLaMA (PyTorch's parallel styles split nn.Linear by heads)
run dt "$SHARDLAB" plan llama-7b --mesh 2x2x4 --axes pp,dp,tp --global-batch 32 \
	--export dtensor
expect_status 0 dt
expect_in "$TMP/dt.out" 'PP, DP, CP, TP = 2, 2, 1, 4'
expect_in "$TMP/dt.out" 'for torchtitan'
run dtg "$SHARDLAB" plan $TWO --export dtensor
expect_status 1 dtg
expect_in "$TMP/dtg.err" "need a LLaMA-family model"

# context parallel: a LLaMA of 2 key/value heads, 16384 tokens and 2 samples
# on 2 x (2 x 4) with an axis named cp: every layer splits the sequence over
# it (attention's K and V round a ring) and the batch over the dp axis:
# Megatron-LM's CP 4, DP 2, TP 1
run cpg "$SHARDLAB" gen llama --layers 4 --hidden 1024 --heads 8 --kv-heads 2 \
	--seq 16384 --vocab 32000 -o "$TMP/cp.json"
expect_status 0 cpg
CP="$TMP/cp.json --mesh 2x2x4 --axes pp,dp,cp --global-batch 2 --hw a100-sxm"
run cpm "$SHARDLAB" plan $CP --export megatron
expect_status 0 cpm
grep -v '^#' "$TMP/cpm.out" > "$TMP/cpm.args"
n_checks=$((n_checks + 1))
cmp -s "$TMP/cpm.args" "$TESTS_SRCDIR/expected/plan_megatron_cp.txt" ||
	{ diff "$TESTS_SRCDIR/expected/plan_megatron_cp.txt" "$TMP/cpm.args"; fail "megatron arguments with context parallelism"; }
expect_in "$TMP/cpm.out" "context parallel 4"
# torchtitan's pipeline schedules keep every stage busy: 2 micro-batches
run cpd "$SHARDLAB" plan $CP --global-batch 4 --export dtensor
expect_status 0 cpd
expect_in "$TMP/cpd.out" 'PP, DP, CP, TP = 2, 2, 4, 1'
expect_in "$TMP/cpd.out" 'context_parallel(mesh["cp"]'
# DeepSpeed runs no context parallelism: nothing to plan, and why
run cps "$SHARDLAB" plan $CP --export deepspeed
expect_status 1 cps
expect_in "$TMP/cps.err" "DeepSpeed runs none of the configurations"
expect_in "$TMP/cps.err" "no tensor or context parallelism"
# the two-stage plan above has none
expect_in "$TMP/mg.out" "context parallel 1,"

# a search over 16 devices: a frontier and a chosen plan
run srch "$SHARDLAB" plan gpt-1.7b --devices 16 --global-batch 64 --hw a100-sxm
expect_status 0 srch
expect_in "$TMP/srch.out" "frontier of memory against step time"
expect_in "$TMP/srch.out" "chosen plan:"

# nothing fits 1 GB: exit 1 and the changes tried, closest first
run nf "$SHARDLAB" plan gpt-1.7b --devices 2 --global-batch 8 --mem-limit 1GB
expect_status 1 nf
expect_in "$TMP/nf.err" "no plan fits"
expect_in "$TMP/nf.out" "optimizer states offloaded to host memory"
# none of them fits: the list does not claim they would
expect_in "$TMP/nf.out" "no change tried, alone or with others, makes it fit; the closest, least memory first:"
expect_not_in "$TMP/nf.out" "changes that would make it fit"
expect_not_in "$TMP/nf.out" "?"

# nothing could be evaluated (no micro-batch of 2 per rank divides a global
# batch of 3): the reason, never "?"; a change that evaluates nothing either
# says why it was not evaluated
run nb "$SHARDLAB" plan gpt-1.7b --devices 2 --global-batch 3 --micro-batch 2
expect_status 1 nb
expect_in "$TMP/nb.err" "no plan found: every configuration was set aside: 0 sub-meshes"
expect_in "$TMP/nb.err" "3 micro-batch sizes that do not divide the global batch"
expect_in "$TMP/nb.out" "changes that would make it fit, best first:"
expect_in "$TMP/nb.out" "micro-batch of 1 sample per data-parallel rank: fits;"
expect_in "$TMP/nb.out" "8 devices: not evaluated: every configuration was set aside: 0 sub-meshes (tensor parallelism beyond a node, or chunks of unequal layers), 10 micro-batch sizes"
expect_not_in "$TMP/nb.out" "?"
expect_not_in "$TMP/nb.err" "?"
# the fitting change first, those not evaluated last
test "$(grep -n ': fits;' "$TMP/nb.out" | cut -d: -f1)" -lt \
    "$(grep -n 'not evaluated' "$TMP/nb.out" | head -1 | cut -d: -f1)" ||
    fail "a change that fits is not listed before those not evaluated"

# no change can be evaluated either (a tensor-parallel degree of 16 on at
# most 8 devices): said so instead of a list of unknowns
run nn "$SHARDLAB" plan gpt-1.7b --devices 2 --tp 16
expect_status 1 nn
expect_in "$TMP/nn.err" "no plan found: no pipeline degree and sub-mesh match 2 devices, 24 layers"
expect_in "$TMP/nn.out" "no change tried could be evaluated, so none is known to make it fit:"
expect_in "$TMP/nn.out" "8 devices: not evaluated: no pipeline degree and sub-mesh match 8 devices"
expect_not_in "$TMP/nn.out" "changes that would make it fit"
expect_not_in "$TMP/nn.out" "?"

# --axes is a contract, for the per-operator search too: the axis named tp
# (the outer one here) carries no batch split, the one named dp nothing else
run ax "$SHARDLAB" plan gpt-1.7b --framework free --mesh 2x4 --axes tp,dp \
	--global-batch 16 --json "$TMP/ax.json"
expect_status 0 ax
expect_not_in "$TMP/ax.json" '"dp0'
expect_not_in "$TMP/ax.json" '.dp0'
expect_not_in "$TMP/ax.json" 'col1'
expect_in "$TMP/ax.json" '"col0.dp1"'

# bad input: exit 2 with a message naming what was expected
run b1 "$SHARDLAB" plan gpt-1.7b --mesh 2x2x2 --axes pp,dp
expect_status 2 b1
expect_in "$TMP/b1.err" "names 2 axes"
run b2 "$SHARDLAB" plan gpt-1.7b --mesh 2x2x2 --axes pp,xx,tp
expect_status 2 b2
expect_in "$TMP/b2.err" "expected names pp, dp, tp or cp"
run b2t "$SHARDLAB" plan gpt-1.7b --mesh 2x2x2 --axes pp,tp,tp
expect_status 2 b2t
expect_in "$TMP/b2t.err" "at most one tp axis"
run b3 "$SHARDLAB" solve gpt-1.7b --mesh 2x2x2
expect_status 2 b3
expect_in "$TMP/b3.err" "shardlab plan"
run b4 "$SHARDLAB" plan gpt-1.7b --devices 8 --export nccl
expect_status 2 b4
expect_in "$TMP/b4.err" "--export: expected megatron"
run b5 "$SHARDLAB" plan gpt-1.7b --devices 8 --framework jax
expect_status 2 b5
expect_in "$TMP/b5.err" "--framework: expected megatron, torchtitan, deepspeed or free, got 'jax'"
# a pipeline plan of more devices than a mesh may have (65536 stages of
# 65536 devices: the explorer multiplied them in an int) is refused where
# it says so, in every reader of plans
{
	printf '{"format": "shardlab-pipeline", "version": 1, "schedule": "1f1b", '
	printf '"pp": 65536, "virtual_stages": 1, "mesh": {"shape": [65536]}, '
	printf '"micro_batches": 8, "graph_batch": 1, "stages": ['
	yes '{"layers": 1, "recompute": "none"},' | head -n 65535 | tr -d '\n'
	printf '{"layers": 1, "recompute": "none"}]}\n'
} >"$TMP/huge.json"
for c in "tui gpt-1.7b --plan" "timeline gpt-1.7b --devices 1 --plan" validate; do
	# shellcheck disable=SC2086
	run huge "$SHARDLAB" $c "$TMP/huge.json"
	expect_status 2 huge
	expect_in "$TMP/huge.err" "huge.json:1:73: 65536 pipeline stages of 65536 devices each are more than 65536 devices"
done

# the framework: Megatron-LM unless told, said in the report and recorded
# in the plan file's recipe
expect_in "$TMP/rep.out" "framework: Megatron-LM"
expect_in "$TMP/p.json" '"recipe": {"framework": "megatron"'
run fw "$SHARDLAB" plan $TWO --framework free --json "$TMP/fw.json"
expect_status 0 fw
expect_in "$TMP/fw.out" "framework: per-operator (free)"
expect_in "$TMP/fw.json" '"recipe": {"framework": "free"'


# --devices min: the fewest devices that fit, and 2x and 4x that count.
# LLaMA-7B trained under Megatron-LM on RTX 4090s: 6.74 B parameters x 18
# bytes need 6 cards of 21 GiB for the states alone, and 6 fit.
run dmin "$SHARDLAB" plan llama-7b --devices min --global-batch 64 --hw rtx4090-pcie --seq 1024
expect_status 0 dmin
expect_in "$TMP/dmin.out" "fewest devices that fit: 6 (tried from 6,"
expect_in "$TMP/dmin.out" "on 12 devices (2x): "
expect_in "$TMP/dmin.out" "on 24 devices (4x): "
expect_in "$TMP/dmin.out" "on 6 devices of rtx4090-pcie"
# QLoRA: one card
run dminq "$SHARDLAB" plan llama-7b --devices min --global-batch 64 --hw rtx4090-pcie --seq 1024 --finetune qlora
expect_status 0 dminq
expect_in "$TMP/dminq.out" "fewest devices that fit: 1 "
expect_in "$TMP/dminq.out" "step time on 1 device: "
run dminb "$SHARDLAB" plan llama-7b --devices min
expect_status 2 dminb
expect_in "$TMP/dminb.err" "--devices min needs --global-batch"
run dmins "$SHARDLAB" solve llama-7b --devices min
expect_status 2 dmins
expect_in "$TMP/dmins.err" "--devices min is for plan"


# Advice that reaches a fit: LLaMA-7B on one 24 GB card.  Fully fine-tuned
# nothing alone but LoRA or QLoRA fits; pre-trained, no single change fits
# and combinations are tried; the current setting is never offered.
run adv "$SHARDLAB" plan llama-7b --devices 1 --global-batch 8 --hw rtx4090-pcie --seq 1024 --finetune full
expect_status 1 adv
expect_in "$TMP/adv.out" "changes that would make it fit, best first:"
expect_in "$TMP/adv.out" "  LoRA rank 8 on its targets: fits; memory"
expect_in "$TMP/adv.out" "  QLoRA rank 8 on its targets: fits; memory"
expect_not_in "$TMP/adv.out" "does not fit"
expect_not_in "$TMP/adv.out" "micro-batch of 1 sample"
run adv2 "$SHARDLAB" plan llama-7b --devices 1 --global-batch 8 --hw rtx4090-pcie --seq 1024
expect_status 1 adv2
expect_in "$TMP/adv2.out" "  4 devices + optimizer states offloaded to host memory: fits; memory"
expect_in "$TMP/adv2.out" "(a100-40gb-sxm): fits; memory"
expect_not_in "$TMP/adv2.out" "does not fit"
# ranked by step time
awk '/: fits;/ { s = $NF; v = s + 0; if (s ~ /ms$/) v /= 1000; if (n++ && v < last) bad = 1; last = v }
    END { exit bad }' "$TMP/adv2.out" || fail "the changes that fit are not ranked by step time"

done_ok
