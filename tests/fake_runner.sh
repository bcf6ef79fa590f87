#!/bin/sh
# fake_runner.sh: a stand-in for shardlab-runner, for tests on machines
# without a GPU.  It takes the runner's arguments, records them in $FAKE_LOG
# (and the launch list in $FAKE_LOG.launch), and answers as $FAKE_MODE says:
#   nogpu   the real runner's "no CUDA device found", status 3
#   fail    an NCCL failure, status 3
#   crash   killed by SIGSEGV
#   slow    sleeps until killed (to test cancelling)
#   (else)  a result for $FAKE_DEVICES devices (default 4), each with the
#           allocations of the Megatron MLP plan on 4 devices (8,413,184
#           bytes), 10 MiB by cudaMemGetInfo and a step of 100 us.
#           When the launch list carries the timeline's events (version 2)
#           and jq is there, it replays them as the real runner does: the
#           allocations are the timeline's buffers by category, and
#           peak_held_bytes is the most bytes held after any event.
#
# With --profile it answers as the runner's profile mode does, for
# $FAKE_GPUS GPUs (default 2): gemms of 1000^3 in 20 us (100 TFLOP/s) and
# 2000^3 in 80 us (200 TFLOP/s), a copy of 1e9 bytes in 1 ms (2e12 B/s read
# plus written), a 4 us launch floor, and all-reduces that take
# B / 100 GB/s + 10 us over 2 GPUs (a link of 100 GB/s and 5 us).
out=; steps=; emulate=no; launch=; profile=no
while [ $# -gt 0 ]; do
	case $1 in
	--profile) profile=yes ;;
	--out) out=$2; shift ;;
	--steps) steps=$2; shift ;;
	--emulate) emulate=yes ;;
	*) launch=$1 ;;
	esac
	shift
done
log=${FAKE_LOG:-/dev/null}
echo "steps=$steps emulate=$emulate profile=$profile" >"$log"
grep -q '"format": *"shardlab-launch"' "$launch" && echo "launch=ok" >>"$log"
[ "$log" = /dev/null ] || cp "$launch" "$log.launch"
case ${FAKE_MODE:-ok} in
nogpu) echo "shardlab-runner: no CUDA device found (CUDA driver version is insufficient)" >&2; exit 3 ;;
fail) echo "shardlab-runner: ncclCommInitAll failed: unhandled system error" >&2; exit 3 ;;
crash) kill -SEGV $$ ;;
slow) while :; do sleep 1; done ;;
esac
if [ $profile = yes ]; then
	printf '{"format": "shardlab-profile-run", "version": 1,
"gpu": {"name": "Stand-in GPU", "count": %d, "memory_bytes": 85899345920},
"gemm": [{"m": 1000, "n": 1000, "k": 1000, "s": 2e-05},
 {"m": 2000, "n": 2000, "k": 2000, "s": 8e-05}],
"copy": {"bytes": 1000000000, "s": 0.001}, "launch_s": 4e-06,
"all_reduce": [{"bytes": 1000000, "s": 2e-05}, {"bytes": 100000000, "s": 0.00101}]}\n' \
	    "${FAKE_GPUS:-2}" >"$out"
	exit 0
fi
# A device of a list with events: its buffers by category and the replay's peak.
replay() {
	jq -c --argjson d "$1" '.devices[$d] as $v |
	  [$v.timeline_buffers[].bytes] as $b |
	  (reduce $v.timeline_buffers[] as $x ({"parameters": 0, "gradients": 0,
	    "optimizer": 0, "activations": 0, "buffers": 0};
	    .[$x.category] += $x.bytes)) as $cat |
	  (reduce $v.events[] as $e ({"h": 0, "p": 0};
	    if $e.alloc != null then .h += $b[$e.alloc] | .p = ([.p, .h] | max)
	    else .h -= $b[$e.free] end)) as $r |
	  {"id": $d, "gpu": 0, "ok": true,
	   "memory_bytes": ($cat + {"total": ($cat | add)}),
	   "allocations": ([$v.events[] | select(.alloc != null)] | length),
	   "overhead_bytes": 0, "meminfo_delta_bytes": 10485760,
	   "meminfo_peak_bytes": 12582912, "peak_held_bytes": $r.p,
	   "step_time_ns": 100000, "step_min_ns": 90000, "compute_time_ns": 81973,
	   "comm_time_ns": 18027, "comm": "modelled"}' "$launch"
}
events=no
command -v jq >/dev/null 2>&1 && grep -q '"events":' "$launch" && events=yes
dev() {
	if [ $events = yes ]; then
		replay "$1"
		return
	fi
	printf '{"id": %d, "gpu": 0, "ok": true, "memory_bytes": {"total": 8413184,
 "parameters": 1048576, "gradients": 1048576, "optimizer": 6291456,
 "activations": 24576, "buffers": 0}, "allocations": 12, "overhead_bytes": 0,
 "meminfo_delta_bytes": 10485760, "meminfo_peak_bytes": 12582912,
 "step_time_ns": 100000, "step_min_ns": 90000, "compute_time_ns": 81973,
 "comm_time_ns": 18027, "comm": "modelled"}' "$1"
}
{
	printf '{"format": "shardlab-validation-run", "version": 1,
"gpu": {"name": "Stand-in GPU", "count": 1, "memory_bytes": 85899345920},
"mode": "emulated", "steps": %s, "warmup": 3, "devices": [' "${steps:-10}"
	d=0
	while [ "$d" -lt "${FAKE_DEVICES:-4}" ]; do
		[ "$d" -gt 0 ] && printf ','
		dev "$d"
		d=$((d + 1))
	done
	printf ']}\n'
} >"$out"
