#!/bin/sh
# tui_stages.sh: the explorer's pipeline stages panel (key S) in a real
# terminal.  A plan written by `shardlab plan --json` reopens with its
# stages: the panel shows the plan's step time and each stage's memory as
# the plan command printed them; Right moves the boundary one layer; + and
# - change the pipeline degree; S closes.  Needs: tmux (skips without it).

TUI_NAME=st
. "$TESTS_SRCDIR/tmux_lib.sh"
SESS=st

# The plan, its step time and its stages' memory as the command prints them.
"$SHARDLAB" plan gpt-1.7b --devices 4 --pp 2 --json "$TMP/pp.json" >"$TMP/cli.out" 2>&1 ||
    fail "shardlab plan"
step=$(sed -n 's/^step time \([0-9.]* [mu]*s\):.*/\1/p' "$TMP/cli.out")
mem0=$(awk '$1 == "0" && $2 == "0" {print $(NF-3), $(NF-2)}' "$TMP/cli.out")
mem1=$(awk '$1 == "1" && $2 == "1" {print $(NF-3), $(NF-2)}' "$TMP/cli.out")
[ -n "$step" ] && [ -n "$mem0" ] && [ -n "$mem1" ] || fail "cannot read $TMP/cli.out"

T new-session -d -s st -x 100 -y 30 \
    "env LC_ALL=C.UTF-8 '$SHARDLAB' tui gpt-1.7b --plan '$TMP/pp.json'; sleep 600" ||
    fail "tmux new-session"
wait_for "Pipeline: 2 stages x 2 devices" || fail "the plan did not reopen with its stages"
wait_for "step $step," || fail "expected step time $step"
wait_for "$mem0" || fail "stage 1: expected $mem0"
wait_for "$mem1" || fail "stage 2: expected $mem1"
screen | grep -q -E "12 layers .*12 layers" || fail "expected 12 and 12 layers"
keys Right
wait_for "13 layers" || fail "Right: the boundary one layer on"
screen | grep -q -E "13 layers .*11 layers" || fail "Right: expected 13 and 11 layers"
keys +
wait_for "Pipeline: 4 stages x 1 device" || fail "+: 4 stages"
keys -
wait_for "Pipeline: 2 stages x 2 devices" || fail "-: back to 2 stages"
keys S
sleep 0.3
screen | grep -q -F "Pipeline: " && fail "S closes the panel"
echo "PASS: the plan reopens with its stages and they move"
exit 0
