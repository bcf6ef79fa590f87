#!/bin/sh
# shardlab profile: without -o it is a usage error (2); a missing runner and
# a missing GPU each exit 3 with their own message and write nothing; with a
# stand-in runner (tests/fake_runner.sh, known measurements) the profile it
# writes carries them, keeps the base profile's other figures, and loads.
# Measuring a real GPU needs one: without it the script ends with a skip.
. "$TESTS_SRCDIR/lib.sh"

MSG_NO_RUNNER="shardlab: the GPU runner was not built (configure found no CUDA/NCCL; see --with-cuda)"
MSG_NO_GPU="shardlab: no CUDA-capable GPU found: profiling needs one"

run noout "$SHARDLAB" profile
expect_status 2 noout
expect_in "$TMP/noout.err" "usage: shardlab profile"

run badbase "$SHARDLAB" profile --hw no-such-gpu -o "$TMP/p.json"
expect_status 2 badbase
expect_in "$TMP/badbase.err" "no-such-gpu"

run norunner env SHARDLAB_RUNNER="$TMP/no-such-runner" "$SHARDLAB" profile \
	-o "$TMP/p0.json"
expect_status 3 norunner
expect_in "$TMP/norunner.err" "$MSG_NO_RUNNER"
[ ! -e "$TMP/p0.json" ] || fail "a profile was written without a runner"

cp "$TESTS_SRCDIR/fake_runner.sh" "$TMP/runner"
chmod +x "$TMP/runner"
fake() {
	mode=$1
	shift
	run "$mode" env SHARDLAB_RUNNER="$TMP/runner" FAKE_MODE="$mode" \
		FAKE_LOG="$TMP/$mode.log" "$SHARDLAB" profile "$@"
}

fake nogpu -o "$TMP/p1.json"
expect_status 3 nogpu
expect_in "$TMP/nogpu.err" "$MSG_NO_GPU"
[ ! -e "$TMP/p1.json" ] || fail "a profile was written without a GPU"

fake fail -o "$TMP/p2.json"
expect_status 3 fail
expect_in "$TMP/fail.err" "ncclCommInitAll failed"
[ ! -e "$TMP/p2.json" ] || fail "a profile was written after a failure"

# The stand-in measures 100 and 200 TFLOP/s, 2e12 B/s, a 4 us floor, and a
# link of 100 GB/s and 5 us between its 2 GPUs (fake_runner.sh).
fake ok --hw a100-pcie -o "$TMP/stand-in.json"
expect_status 0 ok
expect_in "$TMP/ok.log" "profile=yes"
expect_in "$TMP/ok.out" "wrote $TMP/stand-in.json: Stand-in GPU, 2 gemm sizes (100 to 200 TFLOP/s), memory 2.00 TB/s, launch floor 4.00 us"
expect_in "$TMP/ok.out" "node: 2 devices, link 100.0 GB/s, latency 5.00 us"
expect_in "$TMP/stand-in.json" '"name": "stand-in"'
expect_in "$TMP/stand-in.json" '"name": "Stand-in GPU"'
# its 80 GiB less the 3 GiB the runtime holds beyond a plan
expect_in "$TMP/ok.out" "memory for plans: 77.00 GiB per device (80.00 GiB less 3.00 GiB for the CUDA context, libraries, communication buffers and the allocator)"
# the device's memory, and the reserve plans leave
expect_in "$TMP/stand-in.json" '"memory_bytes": 85899345920, "reserve_bytes": 3221225472,'
expect_in "$TMP/stand-in.json" '"memory_bandwidth": 2e12,'
expect_in "$TMP/stand-in.json" '"launch_overhead": 4e-6,'
expect_in "$TMP/stand-in.json" '"tflops": 200.0'
expect_in "$TMP/stand-in.json" '"bandwidth": 1e11,'
# kept from the base profile: its peak, attention rate and inter-node link
expect_in "$TMP/stand-in.json" '"flops": 3.12e14,'
expect_in "$TMP/stand-in.json" '"attention_flops": 1.7e14,'
expect_in "$TMP/stand-in.json" '(memory less 3.00 GiB for the runtime); peak, attention and inter-node link from a100-pcie'
# and shardlab plans with it
run use "$SHARDLAB" solve mlp-2layer --devices 2 --hw "$TMP/stand-in.json"
expect_status 0 use
expect_in "$TMP/use.out" "on stand-in"

# One GPU: no collective measured, the base's link and node size stay.
run one env SHARDLAB_RUNNER="$TMP/runner" FAKE_GPUS=1 "$SHARDLAB" profile \
	--hw a100-pcie -o "$TMP/one.json"
expect_status 0 one
expect_in "$TMP/one.out" "node: 8 devices, link 25.0 GB/s, latency 5.00 us"

# A base whose peak is below what was measured is the wrong base.
run low env SHARDLAB_RUNNER="$TMP/runner" "$SHARDLAB" profile --hw v100-nvlink \
	-o "$TMP/low.json"
expect_status 2 low
expect_in "$TMP/low.err" "above the peak of 125.0 TFLOP/s"
[ ! -e "$TMP/low.json" ] || fail "a profile was written from the wrong base"

echo "ok: $n_checks checks of profile without a GPU"

# ------------------------------------------------------------ the real thing
[ -x "${SHARDLAB_RUNNER:-}" ] ||
	skip "no GPU runner built (configure found no CUDA/NCCL): no GPU measured"
run probe "$SHARDLAB_RUNNER" --probe
if [ "$rc" -ne 0 ]; then
	run real "$SHARDLAB" profile -o "$TMP/real.json"
	expect_status 3 real
	expect_in "$TMP/real.err" "$MSG_NO_GPU"
	[ ! -e "$TMP/real.json" ] || fail "a profile was written without a GPU"
	skip "no GPU: the real profile run was not exercised"
fi
run real "$SHARDLAB" profile -o "$TMP/real.json"
expect_status 0 real
run realuse "$SHARDLAB" solve gpt-1.7b --devices 1 --hw "$TMP/real.json"
expect_status 0 realuse
echo "ok: measured $(sed -n 's/^wrote [^:]*: //p' "$TMP/real.out")"
