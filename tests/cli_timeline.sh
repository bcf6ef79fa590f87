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

# Bad input: a device outside the mesh, an unwritable trace.
run dev "$SHARDLAB" timeline mlp-2layer --devices 2 --device 2
expect_status 2 dev
expect_in "$TMP/dev.err" "device 2 is not in the mesh (0 to 1)"
run nodir "$SHARDLAB" timeline mlp-2layer --devices 1 --trace "$TMP/no/such/dir/t.json"
[ "$rc" -ne 0 ] || fail "unwritable trace: exit status 0"
expect_in "$TMP/nodir.err" "$TMP/no/such/dir"
done_ok
