#!/bin/sh
# tui_tmux.sh: the explorer end to end in a real terminal.  A private tmux
# server runs `shardlab tui`; keys go in with send-keys and the screen comes
# back with capture-pane, polled until the expected text shows (no fixed
# sleeps).  What the explorer shows after a pin, an alpha change and an
# export must be what `shardlab solve` says for the same pins and alpha.
# Needs: tmux (skips without it).

TUI_NAME=tui
. "$TESTS_SRCDIR/tmux_lib.sh"
NSESS=0

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
	"$SHARDLAB" solve "$model" "$@" --json "$TMP/solve.json" >/dev/null 2>"$TMP/solve.err" ||
	    fail "shardlab solve $model $* (exit $?): $(tail -n 5 "$TMP/solve.err")"
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

# The alpha slider steps through the frontier: from alpha 0 each ] shows the
# next plan of `shardlab sweep` (with the same pin), in order, and each is
# what `shardlab solve` finds at an alpha inside that plan's range: the
# geometric middle of [lo, hi], twice lo for the last, 0 for the first.
"$SHARDLAB" sweep mlp-2layer --pin "fc1=$S" --json "$TMP/sweep.json" >/dev/null 2>&1 ||
    fail "shardlab sweep mlp-2layer --pin fc1=$S"
sed -n 's/.*"alpha_lo": \([^,]*\), "alpha_hi": \([^,]*\), "memory_bytes": \([0-9]*\),.*/\1 \2 \3/p' \
    "$TMP/sweep.json" >"$TMP/front"
M=$(wc -l <"$TMP/front")
[ "$M" -ge 2 ] || fail "the sweep found $M plans: nothing to step through"
keys 0
wait_for "alpha 0: memory only" || fail "0 did not set alpha 0"
wait_for "plan 1 of $M" || fail "alpha 0 is not the first of $M frontier plans"
i=1
while read -r lo hi mem; do
	if [ "$i" -gt 1 ]; then
		keys ']'
		wait_for "plan $i of $M" || fail "] did not step to frontier plan $i of $M"
	fi
	A=$(awk -v i="$i" -v lo="$lo" -v hi="$hi" 'BEGIN {
	    if (i == 1) a = 0; else if (hi == "null") a = 2 * lo; else a = sqrt(lo * hi);
	    printf "%.17g\n", a }')
	check_solve mlp-2layer --pin "fc1=$S" --alpha "$A"
	i=$((i + 1))
done <"$TMP/front"
keys ']'
wait_for "plan $M of $M" || fail "] past the last plan left the frontier"
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
wait_for "1 ms of communication per step is worth" || fail "alpha did not move"
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
# Tab then x on a fresh model explains the strategy the plan chose.
C=$(ops "$TMP/solve.json" | sed -n 's/^embed=//p')
[ -n "$C" ] || fail "solve chose no strategy for embed"
keys Tab x
wait_for "Operator embed (embedding), strategy $C" ||
    fail "x after Tab does not explain the chosen embed=$C"
keys Escape
wait_gone "Operator embed (embedding)" || fail "explain does not close"
keys Tab
# Help at 80x24: every key can be reached, the scroll position shows.
T resize-window -t "$SESS" -x 80 -y 24
keys '?'
wait_for "lines 1-" || fail "help at 80x24 does not say that it scrolls"
keys NPage NPage NPage
wait_for "quit (asks first" || fail "the last key of the help cannot be reached"
keys Escape
T resize-window -t "$SESS" -x 100 -y 30
# (k, not Home: with TERM=xterm inside tmux, Home is not xterm's sequence)
keys Tab k k k k k k k k k k k k p
wait_for "pinned embed = " || fail "no pin message (gpt-1.7b)"
S=$(pinned_strategy embed)
check_solve gpt-1.7b --pin "embed=$S"
keys_until "Quit anyway?" q || fail "q did not ask (gpt-1.7b)"
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
# From the build tree the explorer finds its catalogues beside it: with the
# user's language Chinese it speaks Chinese without SHARDLAB_LOCALEDIR, and at
# 80x24 the operators panel's border stays in one column (display columns,
# as wc -L counts them in a UTF-8 locale).
if [ -f "$(dirname "$SHARDLAB")/locale/zh_CN/LC_MESSAGES/shardlab.mo" ] &&
    [ "$(printf '算子' | LC_ALL=C.UTF-8 wc -L)" = 4 ]; then
	start "LANGUAGE=zh_CN" mlp-2layer
	# drawn first, then resized: a resize before the first draw could be
	# lost on a loaded machine, leaving tmux's cut of the old screen
	wait_for "算子 (3)" || fail "zh_CN translation not shown from the build tree"
	T resize-window -t "$SESS" -x 80 -y 24
	sleep 0.3
	wait_for "算子 (3)" || fail "zh_CN explorer not redrawn at 80x24"
	sleep 0.3
	screen | head -n 21 | tail -n 20 | while IFS= read -r line; do
		printf '%s\n' "$line" | sed 's/│.*//' | LC_ALL=C.UTF-8 wc -L
	done | sort -u >"$TMP/widths"
	[ "$(wc -l <"$TMP/widths")" = 1 ] || {
		cat "$TMP/widths"
		fail "zh_CN: the operators panel's border is not in one column"
	}
	keys q
	wait_for "EXITED 0" || fail "zh_CN explorer did not exit"
else
	echo "note: zh_CN catalogue not in the build tree; translation not checked"
fi

echo "PASS"
exit 0
