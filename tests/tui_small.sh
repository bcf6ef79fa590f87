#!/bin/sh
# tui_small.sh: the explorer in small terminals (80x24 and 60x18), through
# a real one.  At both sizes: the memory line keeps the step time (the one
# solve prints, at alpha 0 the least communication among equal memory);
# the slider's knob and the plot's current plan lie on the same side, at
# plan 1 and at the last plan; a cut title ends with an ellipsis; the
# pipeline stages that do not fit are marked and counted; the buffers
# alive in the memory-over-time panel that do not fit are marked; the
# operators list marks the rows below it.  Needs: tmux (skips without it).

TUI_NAME=small
. "$TESTS_SRCDIR/tmux_lib.sh"
NSESS=0

# start W H ARGS: the explorer in a new session of W x H.
start() {
	w=$1 h=$2
	shift 2
	NSESS=$((NSESS + 1))
	T new-session -d -s "sm$NSESS" -x "$w" -y "$h" \
	    "env LC_ALL=C.UTF-8 '$SHARDLAB' tui $*; echo EXITED \$?; sleep 600" ||
	    fail "tmux new-session"
	[ -n "$SESS" ] && T kill-session -t "$SESS" >/dev/null 2>&1
	SESS="sm$NSESS"
}

# The alpha panel, read in characters (each cell one): the slider's row is
# the one below "Alpha: plan"; knob is the column of its knob, cur that of
# the current plan in the plot, mid the middle of the panel (from the
# panels' separator to the right edge).
read_alpha() {
	# one character per cell: the knob `, the current plan ^, the
	# separator |, anything else not ASCII a dot
	screen | LC_ALL=C.UTF-8 sed 's/●/`/g; s/◆/^/g; s/│/|/g; s/[^ -~]/./g' |
	    awk -v W="$1" '
	/Alpha: plan/ { s = NR + 1 }
	NR == s { k = index($0, "`"); sep = index($0, "|") }
	index($0, "^") { c = index($0, "^") }
	END { printf "%d %d %d\n", k - 1, c - 1, (sep + W) / 2 }' >"$TMP/alpha"
	read -r knob cur mid <"$TMP/alpha"
}

# The step time solve gives at alpha 0 (the least communication among the
# plans of least memory), and the last frontier plan's.
"$SHARDLAB" solve gpt-7.5b --mesh 2x4 --alpha 0 >"$TMP/solve.out" 2>&1 || fail "solve"
step=$(sed -n 's/^step time: \([0-9.]* [mu]*s\) = .*/\1/p' "$TMP/solve.out")
[ -n "$step" ] || fail "no step time in $TMP/solve.out"
"$SHARDLAB" sweep gpt-7.5b --mesh 2x4 >"$TMP/sweep.out" 2>&1 || fail "sweep"
nplans=$(sed -n 's/.*: \([0-9]*\) distinct plans$/\1/p' "$TMP/sweep.out")
[ -n "$nplans" ] && [ "$nplans" -ge 3 ] || fail "sweep: '$nplans' plans"

for size in 80x24 60x18; do
	w=${size%x*} h=${size#*x}
	start "$w" "$h" gpt-7.5b --mesh 2x4
	wait_for "step $step" || fail "$size: the memory line without step $step"
	wait_for "Alpha: plan 1 of $nplans" || fail "$size: not at plan 1"
	# the knob (slider row) and the current plan (the plot) on one side
	read_alpha "$w"
	[ "$knob" -ge 0 ] && [ "$cur" -ge 0 ] || fail "$size: knob $knob, plan $cur"
	[ "$knob" -lt "$mid" ] && [ "$cur" -lt "$mid" ] ||
		fail "$size: plan 1 has its knob at $knob and its point at $cur (middle $mid)"
	i=1
	while [ "$i" -lt "$nplans" ]; do
		keys "]"
		i=$((i + 1))
	done
	wait_for "Alpha: plan $nplans of $nplans" || fail "$size: not at the last plan"
	sleep 0.3
	read_alpha "$w"
	[ "$knob" -ge "$mid" ] && [ "$cur" -ge "$mid" ] ||
		fail "$size: the last plan has its knob at $knob and its point at $cur (middle $mid)"
	n_checks=$((n_checks + 3))
	# the memory title cut with an ellipsis, never mid-word without one
	screen | grep -F "Memory per device:" >"$TMP/title" || fail "$size: no memory title"
	if ! grep -q -F "usable 76.18 GiB of 79.18 GiB (reserve 3.00 GiB)" "$TMP/title"; then
		grep -q -F "…" "$TMP/title" || fail "$size: memory title cut without an ellipsis: $(cat "$TMP/title")"
	fi
	# the operators list marks the rows below it
	keys End
	keys Home
	sleep 0.3
	screen | grep -q -E '▼ *$|▼[^│]*$' || screen | grep -q -F "▼" ||
		fail "$size: no mark of rows below the lists"

	# with redundancy: the step time stays
	start "$w" "$h" gpt-1.7b --mesh 2x4
	wait_for "Alpha: plan 1 of" || fail "$size: gpt-1.7b did not start"
	keys "]"
	keys "]"
	wait_for "Alpha: plan 3 of" || fail "$size: not at plan 3"
	sleep 0.3
	screen | grep -F "max " | grep -q -F " step " ||
		fail "$size: the memory line lost the step time"

	# the pipeline: 8 stages, not all of them in view
	start "$w" "$h" gpt-1.7b --devices 8
	wait_for "Alpha: plan 1 of" || fail "$size: gpt-1.7b on 8 did not start"
	keys S
	wait_for "Pipeline: " || fail "$size: no stages panel"
	for k in 1 2 3 4; do
		screen | grep -q -F "Pipeline: 8 stages" && break
		keys +
		sleep 0.5
	done
	wait_for "Pipeline: 8 stages" || fail "$size: + did not reach 8 stages"
	wait_for "▶" || fail "$size: no mark of the stages to the right"
	screen | grep -q -E "stages 1-[0-9] of 8" || fail "$size: no count of the stages shown"
	keys Escape
	sleep 0.3

	# memory over time: the buffers that do not fit are marked and counted
	keys m
	wait_for "Memory over time, device 0: peak" || fail "$size: no timeline"
	wait_for "shown)" || fail "$size: the alive list does not say how many it shows"
	screen | grep -q -F "▼" || fail "$size: no mark of the buffers below"
	for c in "params|parameters" "grads|gradients" "optim|optimizer" \
	    "acts|activations" "buffers"; do
		screen | grep -q -E "[▓█▒░▚] ($c)( |$)" || fail "$size: legend without $c"
	done
	n_checks=$((n_checks + 6))
done
echo "PASS: $n_checks checks"
exit 0
