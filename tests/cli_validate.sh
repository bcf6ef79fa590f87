#!/bin/sh
# shardlab validate: bad plans exit 2; a missing runner and a missing GPU
# each exit 3 with their own message and write nothing; the report (table and
# --json) is checked against a stand-in runner with known measurements; a
# runner that fails or crashes is reported, not followed.  The real run on a
# GPU (emulated ranks) needs one: without it the script ends with a skip.
. "$TESTS_SRCDIR/lib.sh"

MSG_BAD_RUNNER="shardlab: SHARDLAB_RUNNER names"
MSG_NO_GPU="shardlab: no CUDA-capable GPU found: validation needs one"

# Megatron MLP on 4 devices.  Every device predicts parameters 1,048,576,
# gradients 1,048,576, optimizer 6,291,456, activations 24,576: 8,413,184.
# Its step timeline adds transients, 557,056 bytes of buffers: the gradients
# of h1, g and y and the working y (8 x 512 bf16 = 8,192 each) and the
# optimizer's work buffer, the size of the largest gradient (512 x 512 bf16 =
# 524,288); so the runner allocates 8,970,240 over the step.  The peak is at
# the optimizer step: parameters, gradients and optimizer states (8,388,608)
# and the work buffer, 8,912,896.
run plan "$SHARDLAB" solve mlp-2layer --devices 4 --pin fc1=col --pin gelu=col \
	--pin fc2=row --json "$TMP/plan.json"
expect_status 0 plan

# ---------------------------------------------------------------- bad input
run noarg "$SHARDLAB" validate
expect_status 2 noarg
expect_in "$TMP/noarg.err" "usage: shardlab validate"

run missing "$SHARDLAB" validate "$TMP/nope.json"
expect_status 2 missing
expect_in "$TMP/missing.err" "nope.json"

printf '{"format": "shardlab-plan", "version": 1,\n "model": 3}\n' >"$TMP/bad.json"
run bad "$SHARDLAB" validate "$TMP/bad.json"
expect_status 2 bad
expect_in "$TMP/bad.err" "bad.json:"

# a model's name where the plan goes: say what validate takes
run model "$SHARDLAB" validate mlp-2layer
expect_status 2 model
expect_in "$TMP/model.err" "'mlp-2layer' is a model, not a plan"
expect_in "$TMP/model.err" "shardlab solve mlp-2layer --json plan.json"

sed 's/"strategy": "row"/"strategy": "diagonal"/' "$TMP/plan.json" >"$TMP/unknown.json"
run unknown "$SHARDLAB" validate "$TMP/unknown.json"
expect_status 2 unknown
expect_in "$TMP/unknown.err" "diagonal"

# ----------------------------------------------------------- missing runner
run norunner env SHARDLAB_RUNNER="$TMP/no-such-runner" "$SHARDLAB" validate \
	"$TMP/plan.json" --json "$TMP/r0.json"
expect_status 3 norunner
expect_in "$TMP/norunner.err" "$MSG_BAD_RUNNER $TMP/no-such-runner, which is not an executable program"
expect_not_in "$TMP/norunner.err" "not built"
[ ! -e "$TMP/r0.json" ] || fail "a report was written without a runner"

# ------------------------------------------------- stand-in runner (no GPU)
command -v jq >/dev/null 2>&1 ||
	skip "no jq: the stand-in runner cannot replay the launch list's events"
# It records its arguments and answers as FAKE_MODE says: the real runner's
# "no CUDA device found", a failure, a crash, or a result with known figures.
cp "$TESTS_SRCDIR/fake_runner.sh" "$TMP/runner"
chmod +x "$TMP/runner"
fake() {
	mode=$1
	shift
	run "$mode" env SHARDLAB_RUNNER="$TMP/runner" FAKE_MODE="$mode" \
		FAKE_LOG="$TMP/$mode.log" "$SHARDLAB" validate "$@"
}

fake nogpu "$TMP/plan.json" --json "$TMP/r1.json"
expect_status 3 nogpu
expect_in "$TMP/nogpu.err" "$MSG_NO_GPU"
expect_not_in "$TMP/nogpu.err" "not built"
# the answer comes at once: no "running the plan" before it
expect_not_in "$TMP/nogpu.err" "running the plan"
[ ! -e "$TMP/r1.json" ] || fail "a report was written without a GPU"

fake fail "$TMP/plan.json"
expect_status 3 fail
expect_in "$TMP/fail.err" "ncclCommInitAll failed"

fake crash "$TMP/plan.json"
expect_status 3 crash
expect_in "$TMP/crash.err" "killed by signal"

fake ok "$TMP/plan.json" --emulate --steps 7 --json "$TMP/report.json"
expect_status 0 ok
expect_in "$TMP/ok.log" "steps=7 emulate=yes"
expect_in "$TMP/ok.log" "launch=ok"
expect_in "$TMP/ok.out" "Stand-in GPU"
expect_in "$TMP/ok.out" "communication modelled"
# allocated bytes equal the prediction (the step's 8,970,240): 0 % in every
# category
expect_eq "$(grep -c '^ *[0-3]  memory total  *8.55 MiB  *8.55 MiB  *+0.00%' "$TMP/ok.out")" 4 \
	"total rows at 0%"
# cudaMemGetInfo 10 MiB against 8,413,184 predicted: (8413184-10485760)/10485760
expect_in "$TMP/ok.out" "-19.77%"
# the stand-in replays the events: it holds at most the timeline's peak
expect_eq "$(grep -c '^ *[0-3]  timeline peak  *8.50 MiB  *8.50 MiB  *+0.00%  measured (held by the runner)' \
	"$TMP/ok.out")" 4 "timeline peak rows"
# peak in step: the timeline's 8,912,896 against cudaMemGetInfo's 12 MiB
expect_eq "$(grep -c '^ *[0-3]  peak in step .* -29.17%' "$TMP/ok.out")" 4 "peak in step rows"
# time: predicted compute at peak plus 18.03 us modelled, against 100 us
expect_in "$TMP/ok.out" "step time"
expect_in "$TMP/report.json" '"format": "shardlab-validation"'
expect_in "$TMP/report.json" '"communication": "modelled"'
expect_in "$TMP/report.json" '"meminfo_delta_bytes": 10485760'
expect_eq "$(json_int "$TMP/report.json" total | head -n 1)" 8413184 "predicted total"
expect_eq "$(jq '[.devices[].predicted.step_allocated_bytes.total] | unique' -c "$TMP/report.json")" "[8970240]" "step allocations"
expect_eq "$(json_int "$TMP/report.json" peak_bytes)" 8912896 "predicted peak"
expect_eq "$(json_int "$TMP/report.json" peak_held_bytes)" 8912896 "measured peak"
expect_in "$TMP/report.json" '"device_memory": -19.7'
expect_in "$TMP/report.json" '"timeline_peak": 0'

# --json - writes the report to standard output only
fake ok "$TMP/plan.json" --json -
expect_status 0 ok
expect_in "$TMP/ok.out" '"format": "shardlab-validation"'
expect_not_in "$TMP/ok.out" "step time"

# The runner reads the launch list the command wrote: per device it would
# allocate the predicted 8,413,184 bytes and launch fc1 fwd and wgrad (x is
# data: no dgrad), fc2 fwd, dgrad and wgrad, and one all-reduce (fc2's
# output is a partial sum over the 4 devices).
if [ -x "${SHARDLAB_RUNNER:-}" ]; then
	run dry "$SHARDLAB_RUNNER" --dry-run "$TMP/ok.log.launch"
	expect_status 0 dry
	# (a device is a line: both of its totals are on it)
	expect_eq "$(grep -o '"total": 8413184' "$TMP/dry.out" | wc -l | tr -d ' ')" 8 \
	    "allocated and predicted totals"
	expect_eq "$(grep -c '"gemms": 5' "$TMP/dry.out")" 4 "gemms per device"
	expect_eq "$(grep -c '"collectives": 1' "$TMP/dry.out")" 4 "collectives per device"
	# version 2: the timeline's events, replayed to its peak
	expect_eq "$(grep -c '"replay_peak_bytes": 8912896' "$TMP/dry.out")" 4 "replayed peaks"
	expect_eq "$(grep -c '"timeline_peak_bytes": 8912896' "$TMP/dry.out")" 4 "timeline peaks"
	printf '{"format": "shardlab-launch", "version": 3}\n' >"$TMP/v2.json"
	run dry2 "$SHARDLAB_RUNNER" --dry-run "$TMP/v2.json"
	expect_status 2 dry2
	expect_in "$TMP/dry2.err" "not a shardlab launch list"
fi

echo "ok: $n_checks checks of validate without a GPU"

# ------------------------------------------------------------ the real thing
[ -x "${SHARDLAB_RUNNER:-}" ] ||
	skip "no GPU runner built (configure found no CUDA/NCCL): no GPU run"
run probe "$SHARDLAB_RUNNER" --probe
if [ "$rc" -ne 0 ]; then
	expect_status 3 probe
	expect_in "$TMP/probe.err" "no CUDA device found"
	run real "$SHARDLAB" validate "$TMP/plan.json" --json "$TMP/r2.json"
	expect_status 3 real
	expect_in "$TMP/real.err" "$MSG_NO_GPU"
	[ ! -e "$TMP/r2.json" ] || fail "a report was written without a GPU"
	skip "no GPU: the real validation run was not exercised"
fi
run real "$SHARDLAB" validate "$TMP/plan.json" --emulate --steps 3 --json "$TMP/real.json"
expect_status 0 real
expect_eq "$(grep -c '^ *[0-3]  memory total .* +0.00%' "$TMP/real.out")" 4 "allocated = predicted"
expect_in "$TMP/real.json" '"mode": "emulated"'
echo "ok: real validation run on $(sed -n 's/^GPU: //p' "$TMP/real.out")"
