#!/bin/sh
# shardlab timeline: the two-layer MLP's step on one device against the hand
# calculation of tests/test_timeline.c, the trace file, the plan's record of
# the peak and the order, and bad input.
. "$TESTS_SRCDIR/lib.sh"

# bf16, one device: 2 x 2^20 parameters x 14 bytes of weights and states the
# whole step; the peak is the optimizer step with both 2 MiB gradients and a
# 2 MiB work buffer: 35,651,584.  The sum holds the states, the gradients and
# what is kept (x 8,192 + h1 32,768 + g 32,768): 33,628,160.
run tl "$SHARDLAB" timeline mlp-2layer --devices 1 --trace "$TMP/t.json"
expect_status 0 tl
expect_in "$TMP/tl.out" "peak, optimised order"
expect_in "$TMP/tl.out" "34.00 MiB"
expect_in "$TMP/tl.out" "optimizer"
expect_in "$TMP/tl.out" "trace written to $TMP/t.json"
expect_eq "$(json_int "$TMP/t.json" peak)" 35651584 "trace peak"
expect_eq "$(json_int "$TMP/t.json" sum)" 33628160 "trace sum"
expect_in "$TMP/t.json" '"traceEvents"'
expect_in "$TMP/t.json" '"ph": "C"'
expect_in "$TMP/t.json" '"name": "fc2.wgrad"'

# The trace alone on standard output.
run tls "$SHARDLAB" timeline mlp-2layer --devices 1 --trace -
expect_status 0 tls
expect_in "$TMP/tls.out" '"traceEvents"'
expect_not_in "$TMP/tls.out" "peak, optimised order"

# A solved plan records the sum, the peak, the gap and the order; solve
# prints them.
run sv "$SHARDLAB" solve mlp-2layer --devices 1 --json "$TMP/p.json"
expect_status 0 sv
expect_in "$TMP/sv.out" "memory over time on device 0: peak 34.00 MiB"
expect_eq "$(json_int "$TMP/p.json" peak)" 35651584 "plan peak"
expect_eq "$(json_int "$TMP/p.json" gap)" 2023424 "plan gap"
expect_in "$TMP/p.json" '"order": ["fc1.fwd", "gelu.fwd", "fc2.fwd", "loss",'

# The same plan read back gives the same timeline, on any device.
run rd "$SHARDLAB" timeline mlp-2layer --devices 1 --plan "$TMP/p.json"
expect_status 0 rd
expect_in "$TMP/rd.out" "34.00 MiB"

# A pipeline plan's stage: one micro-batch's step of the stage's device,
# the other micro-batches in flight held through it.  The peak of the
# first stage (1F1B keeps 4 micro-batches of it in flight) is within 2% of
# what the plan counts for its device.
run pp "$SHARDLAB" plan gpt-1.7b --devices 8 --pp 4 --global-batch 32 --json "$TMP/pp.json"
expect_status 0 pp
run st0 "$SHARDLAB" timeline --plan "$TMP/pp.json" --stage 0
expect_status 0 st0
expect_in "$TMP/st0.out" "stage 0 of 4 (layers 0-"
expect_in "$TMP/st0.out" "of the other micro-batches in flight"
plan_mem=$(sed -n 's/.*the plan counts \([0-9.]*\) GiB for the device/\1/p' "$TMP/st0.out")
tl_peak=$(sed -n 's/^  peak, default order *\([0-9.]*\) GiB.*/\1/p' "$TMP/st0.out")
[ -n "$plan_mem" ] && [ -n "$tl_peak" ] || fail "no figures in: $(cat "$TMP/st0.out")"
awk -v a="$tl_peak" -v b="$plan_mem" 'BEGIN { d = (a - b) / b; exit !(d < 0.02 && d > -0.02) }' ||
	fail "stage 0: timeline peak $tl_peak GiB, the plan $plan_mem GiB"
n_checks=$((n_checks + 1))
# a per-operator plan reopened as it was made: its framework and the
# states sharding its search chose (ZeRO-2), not Megatron-LM's defaults
run fp "$SHARDLAB" plan gpt-1.7b --devices 8 --global-batch 32 --framework free --json "$TMP/fp.json"
expect_status 0 fp
expect_in "$TMP/fp.out" "states sharded: optimizer states and gradients over data parallel (ZeRO-2)"
fp_mem=$(sed -n 's/^memory per device: at most \([0-9.]*\) GiB.*/\1/p' "$TMP/fp.out")
run fst "$SHARDLAB" timeline --plan "$TMP/fp.json" --stage 0
expect_status 0 fst
expect_in "$TMP/fst.out" "the plan counts $fp_mem GiB for the device"
run st3 "$SHARDLAB" timeline --plan "$TMP/pp.json" --stage 3 --trace "$TMP/st3.json"
expect_status 0 st3
expect_in "$TMP/st3.json" '"name": "loss"'
# a stage the plan does not have; --stage without a pipeline plan
run st9 "$SHARDLAB" timeline --plan "$TMP/pp.json" --stage 9
expect_status 2 st9
expect_in "$TMP/st9.err" "the plan has 4 stages (0 to 3)"
run stn "$SHARDLAB" timeline mlp-2layer --devices 1 --stage 0
expect_status 2 stn
expect_in "$TMP/stn.err" "--stage follows a stage of a pipeline plan"
run stw "$SHARDLAB" timeline mlp-2layer --devices 1 --plan "$TMP/p.json" --stage 0
expect_status 2 stw
expect_in "$TMP/stw.err" "this plan has no stages"

# Bad input: a device outside the mesh, an unwritable trace.
run dev "$SHARDLAB" timeline mlp-2layer --devices 2 --device 2
expect_status 2 dev
expect_in "$TMP/dev.err" "device 2 is not in the mesh (0 to 1)"
run nodir "$SHARDLAB" timeline mlp-2layer --devices 1 --trace "$TMP/no/such/dir/t.json"
[ "$rc" -ne 0 ] || fail "unwritable trace: exit status 0"
expect_in "$TMP/nodir.err" "$TMP/no/such/dir"
done_ok
