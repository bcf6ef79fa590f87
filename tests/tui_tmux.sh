#!/bin/sh
# tui_tmux.sh: the explorer end to end in a real terminal.  A private tmux
# server runs `shardlab tui`; keys go in with send-keys and the screen comes
# back with capture-pane, polled until the expected text shows (no fixed
# sleeps).  What the explorer shows after a pin, an alpha change and an
# export must be what `shardlab solve` says for the same pins and alpha.
# Needs: tmux (skips without it).

if ! command -v tmux >/dev/null 2>&1; then
	echo "SKIP: tmux not installed"
	exit 77
fi
if [ -z "$SHARDLAB" ] || [ ! -x "$SHARDLAB" ]; then
	echo "SKIP: \$SHARDLAB does not name the built program"
	exit 77
fi

SOCK="shardlab-tui-$$"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tui_tmux.XXXXXX") || exit 99
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
cleanup() {
	T kill-server >/dev/null 2>&1
	rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCK"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

SESS=
NSESS=0
screen() { T capture-pane -p -t "$SESS" 2>/dev/null; }
fail() {
	echo "FAIL: $*"
	echo "--- screen:"
	screen
	exit 1
}

# wait_for TEXT [TENTHS]: until TEXT (a fixed string) is on the screen.
wait_for() {
	n=0
	while [ "$n" -lt "${2:-150}" ]; do
		screen | grep -F -q -- "$1" && return 0
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}

# wait_gone TEXT: until TEXT has left the screen.
wait_gone() {
	n=0
	while [ "$n" -lt 150 ]; do
		screen | grep -F -q -- "$1" || return 0
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}

# start "ENV" ARGS: the explorer at 100x30 in a new session.  The previous
# session is closed only after the new one exists, so the server never
# exits between the two (a new client would race with it).
start() {
	env=$1
	shift
	NSESS=$((NSESS + 1))
	for try in 1 2 3; do
		T new-session -d -s "tui$NSESS" -x 100 -y 30 \
		    "cd '$TMP' && env LC_ALL=C.UTF-8 $env '$SHARDLAB' tui $* ; echo EXITED \$?; sleep 600" &&
		    break
		[ "$try" = 3 ] && fail "tmux new-session"
		sleep 1
	done
	[ -n "$SESS" ] && T kill-session -t "$SESS" >/dev/null 2>&1
	SESS="tui$NSESS"
}

keys() { T send-keys -t "$SESS" "$@"; }

# json_field FILE NAME: a top-level integer field of a plan.
json_field() { sed -n "s/^  \"$2\": \\([0-9-]*\\),*\$/\\1/p" "$1" | head -n 1; }
# dev0_total FILE: device 0's total memory.
dev0_total() {
	sed -n 's/.*{"id": 0,.*"memory_bytes": {"total": \([0-9]*\),.*/\1/p' "$1" | head -n 1
}
# ops FILE: "name=strategy" per operator, in order.
ops() {
	grep '^ *{"name": .*"strategy": ' "$1" |
	    sed 's/^ *{"name": "\([^"]*\)".*"strategy": "\([^"]*\)".*/\1=\2/'
}
# fmt_bytes N: as the program prints bytes (util.c sl_format_bytes).
fmt_bytes() {
	awk -v b="$1" 'BEGIN { split("B KiB MiB GiB TiB PiB", u, " "); v = b; i = 1;
	    while (v >= 1024 && i < 6) { v /= 1024; i++ }
	    if (i == 1) printf "%d B\n", b; else printf "%.2f %s\n", v, u[i] }'
}
# pinned_strategy OP: the strategy named by the "pinned OP = S" message.
pinned_strategy() {
	screen | sed -n "s/.*pinned $1 = \\([^ ]*\\).*/\\1/p" | head -n 1
}

# check_solve MODEL ARGS: the screen shows solve's objective and device 0 total.
check_solve() {
	model=$1
	shift
	"$SHARDLAB" solve "$model" "$@" --json "$TMP/solve.json" >/dev/null 2>&1 ||
	    fail "shardlab solve $model $*"
	obj=$(json_field "$TMP/solve.json" objective)
	tot=$(dev0_total "$TMP/solve.json")
	[ -n "$obj" ] && [ -n "$tot" ] || fail "could not read solve's JSON"
	wait_for "objective $obj" || fail "status line does not show objective $obj ($model $*)"
	wait_for "$(fmt_bytes "$tot")" ||
	    fail "memory bars do not show $(fmt_bytes "$tot") ($model $*)"
}

# ---------------------------------------------------------- two-layer MLP
start "" mlp-2layer
wait_for "Operators (3)" || fail "explorer did not start on mlp-2layer"
wait_for "objective " || fail "no status line"
check_solve mlp-2layer

# Pin the first strategy of fc1 (the row after the layer0 header).
keys j Tab Home p
wait_for "pinned fc1 = " || fail "no pin message"
S=$(pinned_strategy fc1)
[ -n "$S" ] || fail "could not read the pinned strategy"
check_solve mlp-2layer --pin "fc1=$S"
wait_for "changed: fc1" || fail "status line does not say what changed"

# Drag alpha up until the plan changes; the screen must match solve --alpha.
# alpha_at I: the slider's I-th position (0, then 0.1 0.2 0.5 1 2 5 ...).
alpha_at() {
	awk -v i="$1" 'BEGIN { split("1 2 5", m, " ");
	    a = m[(i - 1) % 3 + 1] * 10 ^ (int((i - 1) / 3) - 1);
	    if (a >= 10000 || a < 0.1) printf "%.0e\n", a; else printf "%g\n", a }'
}
changed=no
i=0
while [ "$i" -lt 42 ]; do
	keys ']'
	i=$((i + 1))
	wait_for "alpha = $(alpha_at $i) bytes" 50 || fail "alpha did not move to $(alpha_at $i)"
	if screen | grep -E -q 'changed( \([0-9]+\))?:'; then
		changed=yes
		break
	fi
done
[ "$changed" = yes ] || fail "moving alpha never changed the plan"
A=$(screen | sed -n 's/.*Alpha \([0-9.e+-]*\) B\/us.*/\1/p' | head -n 1)
[ -n "$A" ] || fail "could not read alpha"
check_solve mlp-2layer --pin "fc1=$S" --alpha "$A"

# Export; the file must list the same strategies as solve --json.
keys e
wait_for "Export plan to:" || fail "no export prompt"
keys C-u
keys -l "$TMP/plan.json"
keys Enter
wait_for "plan written to" || fail "export did not report success"
[ -s "$TMP/plan.json" ] || fail "no plan file"
ops "$TMP/plan.json" >"$TMP/ops.tui"
ops "$TMP/solve.json" >"$TMP/ops.solve"
[ -s "$TMP/ops.tui" ] || fail "no operators in the exported plan"
cmp -s "$TMP/ops.tui" "$TMP/ops.solve" || {
	diff "$TMP/ops.tui" "$TMP/ops.solve"
	fail "exported plan differs from shardlab solve --json"
}
ls "$TMP"/.*tmp* >/dev/null 2>&1 && fail "a temporary file was left behind"

# E: the strategy graph around the selection as SVG.
keys E
wait_for "Export graph (SVG) to:" || fail "no SVG export prompt"
keys C-u
keys -l "$TMP/graph.svg"
keys Enter
wait_for "strategy graph written to" || fail "SVG export did not report success"
grep -q "<svg" "$TMP/graph.svg" || fail "the exported graph is not SVG"
grep -q ">fc1<" "$TMP/graph.svg" || fail "the exported graph lacks fc1"

# Resize to 60x20 (still usable), below the minimum, and back.
T resize-window -t "$SESS" -x 60 -y 20
wait_for "Operators (3)" || fail "not redrawn at 60x20"
T resize-window -t "$SESS" -x 50 -y 15
wait_for "terminal too small" || fail "no too-small message at 50x15"
T resize-window -t "$SESS" -x 100 -y 30
wait_for "Operators (3)" || fail "not redrawn at 100x30"
wait_gone "terminal too small" || fail "too-small message stays"

# Help lists the keys; any key closes it.
keys '?'
wait_for "export the plan as JSON" || fail "no help screen"
keys Escape
wait_gone "export the plan as JSON" || fail "help does not close"

# The plan changes after the export: q asks first; n keeps, q y quits.
keys '['
wait_for "alpha = " || fail "alpha did not move"
keys q
wait_for "Quit anyway?" || fail "q did not ask about the unexported plan"
keys n
wait_for "not quitting" || fail "n did not keep the explorer"
keys q
wait_for "Quit anyway?" || fail "second q did not ask"
keys y
wait_for "EXITED 0" || fail "explorer did not exit with status 0"

# ------------------------------------------------------------- gpt-1.7b
start "NO_COLOR=1 TERM=xterm" gpt-1.7b
wait_for "Operators (292)" 300 || fail "explorer did not start on gpt-1.7b"
wait_for "layer0..layer23" || fail "repeated layers not folded"
check_solve gpt-1.7b
keys Tab Home p
wait_for "pinned embed = " || fail "no pin message (gpt-1.7b)"
S=$(pinned_strategy embed)
check_solve gpt-1.7b --pin "embed=$S"
keys q
wait_for "Quit anyway?" || fail "q did not ask (gpt-1.7b)"
keys y
wait_for "EXITED 0" || fail "gpt-1.7b explorer did not exit"

# ------------------------------------------------- validation (v), no GPU
# The stand-in runner (tests/fake_runner.sh) reports 10 MiB by cudaMemGetInfo
# on every device; the memory panel must show it beside the prediction, and
# the error against solve's predicted total.
cp "${TESTS_SRCDIR:-tests}/fake_runner.sh" "$TMP/runner" && chmod 755 "$TMP/runner" ||
    fail "cannot copy the stand-in runner"
start "SHARDLAB_RUNNER=$TMP/runner FAKE_MODE=ok" mlp-2layer --devices 4
wait_for "Operators (3)" || fail "explorer did not start for validation"
check_solve mlp-2layer --devices 4
keys v
wait_for "validated on Stand-in GPU" || fail "validation did not finish"
err=$(awk -v p="$tot" 'BEGIN { printf "%+.1f\n", (p - 10485760) * 100 / 10485760 }')
wait_for "error: memory $err%" || fail "memory panel does not show error $err%"
wait_for "10.00 MiB" || fail "memory panel does not show the measured 10.00 MiB"
keys v
wait_for "GPU: Stand-in GPU x1" || fail "v does not show the report"
keys Escape
wait_gone "GPU: Stand-in GPU x1" || fail "the report does not close"
keys q
wait_for "EXITED 0" || fail "explorer did not exit after validation"

# SIGTERM during a validation ends the runner too.
start "SHARDLAB_RUNNER=$TMP/runner FAKE_MODE=slow" mlp-2layer --devices 4
wait_for "Operators (3)" || fail "explorer did not start for a slow validation"
keys v
wait_for "validating..." || fail "validation did not start"
pid=$(pgrep -n -f "$SHARDLAB tui mlp-2layer" 2>/dev/null)
if [ -n "$pid" ] && pgrep -f "$TMP/runner" >/dev/null 2>&1; then
	kill -TERM "$pid"
	wait_for "EXITED 143" || fail "SIGTERM did not end the explorer during validation"
	n=0
	while pgrep -f "$TMP/runner" >/dev/null 2>&1 && [ "$n" -lt 50 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	pgrep -f "$TMP/runner" >/dev/null 2>&1 && fail "the runner outlived the explorer"
fi

# SIGTERM restores the terminal and ends the program.
start "" mlp-2layer
wait_for "Operators (3)" || fail "explorer did not restart"
pid=$(pgrep -n -f "$SHARDLAB tui mlp-2layer" 2>/dev/null)
if [ -n "$pid" ]; then
	kill -TERM "$pid"
	wait_for "EXITED 143" || fail "SIGTERM did not end the explorer with 143"
	screen | grep -F -q "Operators (3)" && fail "screen not restored after SIGTERM"
fi

# ----------------------------------------------------------- translation
mo=
for d in "$(dirname "$SHARDLAB")/po" "${TESTS_SRCDIR:-tests}/../po"; do
	[ -f "$d/zh_CN.gmo" ] && mo="$d/zh_CN.gmo" && break
done
if [ -n "$mo" ]; then
	mkdir -p "$TMP/locale/zh_CN/LC_MESSAGES"
	cp "$mo" "$TMP/locale/zh_CN/LC_MESSAGES/shardlab.mo"
	start "LANGUAGE=zh_CN.UTF-8 SHARDLAB_LOCALEDIR=$TMP/locale" mlp-2layer
	wait_for "算子 (3)" || fail "zh_CN translation not shown"
	keys q
	wait_for "EXITED 0" || fail "zh_CN explorer did not exit"
else
	echo "note: zh_CN.gmo not built; translation not checked"
fi

echo "PASS"
exit 0
