#!/bin/sh
# Plans over the device's memory: solve refuses them (exit 1, nothing
# written, the changes that would fit), --allow-over-capacity keeps them,
# and compare flags exactly the rows whose memory is over the capacity.
. "$TESTS_SRCDIR/lib.sh"

# gpt-7.5b on one H100: 7,467,786,240 parameters x 16 B = 111.27 GiB of
# states alone, over the 76.18 GiB a plan may use of its 79.18 GiB.  What
# must fit is the peak of the step's timeline, as `timeline` prints it.
run tl "$SHARDLAB" timeline gpt-7.5b --devices 1
peak=$(sed -n 's/^  peak, default order *\([0-9.]* [KMGT]*i*B\).*/\1/p' "$TMP/tl.out")
[ -n "$peak" ] || fail "no peak in: $(cat "$TMP/tl.out")"
run over "$SHARDLAB" solve gpt-7.5b --devices 1 --json "$TMP/over.json"
expect_status 1 over
[ -e "$TMP/over.json" ] && fail "a plan over capacity was written"
expect_in "$TMP/over.err" "the plan needs $peak per device; a device of h100-nvlink (NVIDIA H100 SXM 80GB) has usable 76.18 GiB of 79.18 GiB (reserve 3.00 GiB)"
expect_in "$TMP/over.err" "nothing written (--allow-over-capacity writes it anyway)"
expect_in "$TMP/over.out" "over capacity"
expect_in "$TMP/over.out" "step time, throughput and MFU: none"
expect_not_in "$TMP/over.out" "tokens/s"
# the changes: those that fit first, by step time; never the current setting
expect_in "$TMP/over.out" "changes that would make it fit, best first:"
sed -n '/^changes that would/,$p' "$TMP/over.out" | sed -n 's/^  \(.*\): \(fits\|does not fit\);.*step \(.*\)$/\2|\1/p' >"$TMP/ch"
# (more devices fit; with four, ZeRO-3 shards the optimizer's work too)
expect_eq "$(head -n 1 "$TMP/ch" | cut -d'|' -f1)" "fits" "the first change"
expect_in "$TMP/ch" "fits|--devices 2"
sed -n 's/^  [^:]*: fits;.*step \([0-9.]*\) ms$/\1/p' "$TMP/over.out" >"$TMP/steps"
sort -n -c "$TMP/steps" 2>/dev/null || fail "the changes that fit are not by step time: $(cat "$TMP/steps")"
grep -n 'does not fit' "$TMP/ch" | head -n 1 | cut -d: -f1 >"$TMP/nf"
grep -n '^fits' "$TMP/ch" | tail -n 1 | cut -d: -f1 >"$TMP/lf"
[ -s "$TMP/nf" ] && [ "$(cat "$TMP/nf")" -lt "$(cat "$TMP/lf")" ] &&
	fail "a change that does not fit is listed before one that does: $(cat "$TMP/ch")"
expect_not_in "$TMP/ch" "--devices 1|"
expect_not_in "$TMP/ch" "--hw h100-nvlink"

# asked for anyway: written, exit 0, with a warning
run anyway "$SHARDLAB" solve gpt-7.5b --devices 1 --allow-over-capacity --json "$TMP/anyway.json"
expect_status 0 anyway
expect_in "$TMP/anyway.err" "warning: the plan needs $peak per device"
expect_eq "$(json_int "$TMP/anyway.json" devices_over_capacity)" 1 "devices over capacity in the plan file"
expect_in "$TMP/anyway.out" "tokens/s"

# a plan that fits is unchanged: exit 0, no warning
run fits "$SHARDLAB" solve gpt-7.5b --devices 2
expect_status 0 fits
expect_not_in "$TMP/fits.err" "warning"

# compare: over capacity exactly where the row's memory exceeds the device
# (ZeRO-1 and -2 hold 48.25 and 36.07 GiB of the 76.18 GiB usable on 2x4:
# they fit)
command -v jq >/dev/null 2>&1 || skip "jq is not installed"
run cmp "$SHARDLAB" compare gpt-7.5b --mesh 2x4 --json "$TMP/cmp.json"
expect_status 0 cmp
jq -r '.mesh.device_memory_bytes as $c | .methods[] | select(.applicable) |
    "\(.method) \(.over_capacity) \(.max_memory_bytes > $c)"' "$TMP/cmp.json" >"$TMP/rows"
[ "$(wc -l <"$TMP/rows")" -ge 8 ] || fail "compare: only $(wc -l <"$TMP/rows") rows"
while read -r m flagged over; do
	expect_eq "$flagged" "$over" "compare: $m flagged over capacity"
done <"$TMP/rows"
expect_in "$TMP/rows" "zero1 false false"
expect_in "$TMP/rows" "zero2 false false"
expect_in "$TMP/rows" "dp true true"
run cmpt "$SHARDLAB" compare gpt-7.5b --mesh 2x4
expect_status 0 cmpt
grep '^zero[12] ' "$TMP/cmpt.out" >"$TMP/z12"
expect_not_in "$TMP/z12" "over capacity"
grep '^dp ' "$TMP/cmpt.out" >"$TMP/dp"
expect_in "$TMP/dp" "over capacity"
done_ok
