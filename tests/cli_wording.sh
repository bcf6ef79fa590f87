#!/bin/sh
# The reports' words: counts of one in the singular, the model named by its
# own name with the sequence it trains on (never by the file it came from),
# the stage table's columns named for what they hold, and the DP's note
# saying what it counted.
. "$TESTS_SRCDIR/lib.sh"
export LC_ALL=C LANGUAGE=

# One device, one micro-step.
run one "$SHARDLAB" solve gpt-1.7b --devices 1 --allow-over-capacity
expect_status 0 one
expect_in "$TMP/one.out" "model gpt-1.7b (sequence 2048): "
expect_in "$TMP/one.out" "batch: 1 sample per micro-step (micro-batch 1 x 1 device), global batch 1 = 1 accumulation step; sequence 2048"
expect_in "$TMP/one.out" "step time: "
expect_in "$TMP/one.out" " = 1 micro-step x (compute "
expect_not_in "$TMP/one.out" "(s)"
# the DP's note: layers folded into chains, and the layer matrices it built
expect_in "$TMP/one.out" "[dp: 24 layers folded in 1 chain, "
expect_in "$TMP/one.out" " built]"
expect_not_in "$TMP/one.out" "recomputed]"
run acc "$SHARDLAB" solve gpt-1.7b --devices 8 --global-batch 32
expect_status 0 acc
expect_in "$TMP/acc.out" "batch: 8 samples per micro-step (micro-batch 1 x 8 devices), global batch 32 = 4 accumulation steps"
expect_in "$TMP/acc.out" " = 4 micro-steps x (compute "

# plan (the per-operator search: 4 heads do not split over Megatron-LM's 8):
# one stage, one micro-batch of 8 samples; a model file is named by
# the model's name, not the file's
"$SHARDLAB" gen gpt --layers 4 --hidden 256 --heads 4 --seq 128 --vocab 1000 \
    --name tiny-gpt -o "$TMP/m.json" 2>/dev/null || fail "gen"
run p1 "$SHARDLAB" plan "$TMP/m.json" --devices 8 --global-batch 8 --pp 1 --micro-batch 1 --tp 8 \
    --framework free
expect_status 0 p1
expect_in "$TMP/p1.out" "model tiny-gpt (sequence 128) on 8 devices of "
expect_not_in "$TMP/p1.out" "$TMP/m.json"
expect_in "$TMP/p1.out" "chosen plan: 1 pipeline stage (1f1b), each on 8 devices; 8 micro-batches of 1 sample"
# one search each for the states unsharded, ZeRO-1 and ZeRO-2
expect_in "$TMP/p1.out" "searched 3 configurations and 3 partitions with 3 stage solves ("
expect_in "$TMP/p1.out" "states sharded: "
# the singular: Megatron-LM's one configuration, its layout taken as it is
run p1m "$SHARDLAB" plan "$TMP/m.json" --devices 4 --global-batch 4 --pp 1 --micro-batch 1 --tp 4 \
    --framework megatron
expect_status 0 p1m
expect_in "$TMP/p1m.out" "searched 1 configuration and 1 partition with 0 stage solves ("
expect_not_in "$TMP/p1m.out" "states sharded: "
# a micro-batch over data-parallel ranks: what the framework calls the
# micro-batch is one rank's share (4 x 2 sub-mesh, tensor parallel 2: data
# parallel 4; 4 micro-batches of 8 samples = 32)
run p2 "$SHARDLAB" plan "$TMP/m.json" --devices 8 --global-batch 32 --pp 1 --tp 2 --micro-batch 2
expect_status 0 p2
expect_in "$TMP/p2.out" "; 4 micro-batches of 8 samples (2 per data-parallel rank)"
# Megatron-LM's distributed optimizer: the collectives as they run
expect_in "$TMP/p2.out" "collectives of the states once a step, per device of pipeline rank 0: reduce-scatter of the gradients, "
expect_in "$TMP/p2.out" ", all-gather of the updated weights, "
expect_not_in "$TMP/p2.out" "all-reduce of the gradients"

expect_in "$TMP/p1.out" "(stages within 1 layer of the even split)"
# the stage table's columns and what they mean
head_line=$(grep '^stage ' "$TMP/p1.out" | head -n 1)
for col in "pp rank" layers recompute "mb kept" states acts/mb "rank peak" time/mb; do
	case $head_line in
	*"$col"*) n_checks=$((n_checks + 1)) ;;
	*) fail "stage table without the column '$col': $head_line" ;;
	esac
done
expect_not_in "$TMP/p1.out" " device  "
expect_in "$TMP/p1.out" "pp rank: the pipeline rank whose devices run the stage"
run p2 "$SHARDLAB" plan gpt-1.7b --devices 8 --global-batch 8 --pp 1 --micro-batch 8
expect_status 0 p2
expect_in "$TMP/p2.out" "each on 8 devices; 1 micro-batch of 8 samples"
run p3 "$SHARDLAB" plan gpt-1.7b --devices 8 --global-batch 64 --pp 2
expect_status 0 p3
expect_in "$TMP/p3.out" "chosen plan: 2 pipeline stages ("

# every report names the model and its sequence
run sw "$SHARDLAB" sweep gpt-1.7b --devices 2
expect_status 0 sw
expect_in "$TMP/sw.out" "alpha frontier of gpt-1.7b (sequence 2048) on 2: "
run cmp "$SHARDLAB" compare gpt-1.7b --devices 2
expect_status 0 cmp
expect_in "$TMP/cmp.out" "model gpt-1.7b (sequence 2048): 1.65 B parameters"
run tl "$SHARDLAB" timeline gpt-1.7b --devices 1
expect_status 0 tl
expect_in "$TMP/tl.out" "model gpt-1.7b (sequence 2048): 292 operators on 1 device"
run ex "$SHARDLAB" explain gpt-1.7b --op layer0.qkv --devices 2 --seq 1024
expect_status 0 ex
expect_in "$TMP/ex.out" "model gpt-1.7b (sequence 1024)"
expect_in "$TMP/ex.out" "Mesh: 1-D, 2 devices"
run ex1 "$SHARDLAB" explain mlp-2layer --op fc1 --devices 1
expect_status 0 ex1
# features, not tokens: no sequence to name
expect_in "$TMP/ex1.out" "model mlp-2layer"
expect_not_in "$TMP/ex1.out" "sequence"
expect_in "$TMP/ex1.out" "Mesh: 1-D, 1 device ("
run sh "$SHARDLAB" show gpt-1.7b --seq 512
expect_status 0 sh
expect_in "$TMP/sh.out" "model gpt-1.7b (sequence 512), from "
done_ok
