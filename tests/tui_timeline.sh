#!/bin/sh
# tui_timeline.sh: the explorer's memory-over-time panel (key m) in a real
# terminal.  A private tmux server runs `shardlab tui`; the panel's peak and
# the task at it must be what `shardlab timeline` prints for the same plan,
# p must jump there and list the largest buffer alive first, and < > must
# change the device.  Needs: tmux (skips without it).

TUI_NAME=tl
. "$TESTS_SRCDIR/tmux_lib.sh"
SESS=tl

# What the command line says for the same model and mesh.
"$SHARDLAB" timeline mlp-2layer --devices 2 >"$TMP/cli.out" 2>&1 ||
    fail "shardlab timeline"
peak=$(sed -n 's/^  peak, optimised order  *\([0-9.]* [KMG]*i*B\).*/\1/p' "$TMP/cli.out")
at=$(sed -n 's/^  peak at  *\([^ ]*\)$/\1/p' "$TMP/cli.out")
largest=$(sed -n '/^largest alive at the peak:/{n;p;}' "$TMP/cli.out" | awk '{print $NF}')
[ -n "$peak" ] && [ -n "$at" ] && [ -n "$largest" ] || fail "cannot read $TMP/cli.out"

T new-session -d -s tl -x 110 -y 34 \
    "env LC_ALL=C.UTF-8 '$SHARDLAB' tui mlp-2layer --devices 2; sleep 600" ||
    fail "tmux new-session"
wait_for "mlp-2layer" || fail "the explorer did not start"
keys m
wait_for "Memory over time, device 0: peak $peak at $at" ||
    fail "panel: expected peak $peak at $at"
keys Home
wait_for "(1 of " || fail "Home: the first task"
keys p
wait_for "$at (" || fail "p: the task at the peak"
screen | grep -A1 -F "$at (" | tail -n 1 | grep -q -F "$largest" ||
    fail "p: expected $largest first"
keys '>'
wait_for "Memory over time, device 1:" || fail "> : device 1"
keys x
sleep 0.3
screen | grep -q -F "Memory over time" && fail "a key other than the panel's closes it"
echo "PASS: panel agrees with shardlab timeline"
exit 0
