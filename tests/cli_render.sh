#!/bin/sh
# render: each operator with its chosen strategy and its nearest
# alternatives, a narrow picture around one operator, and the format taken
# from the file's name (or refused).
. "$TESTS_SRCDIR/lib.sh"
export LC_ALL=C LANGUAGE=

# Around layer0.qkv on 2x4: three operators, each the chosen strategy, three
# alternatives and a count of the rest; top to bottom, a few hundred points
# wide (it was 4,496 points, every strategy a column).
run svg "$SHARDLAB" render gpt-1.7b --mesh 2x4 --around layer0.qkv -o "$TMP/q.svg"
expect_status 0 svg
width=$(sed -n 's/.*<svg width="\([0-9]*\)pt" height="\([0-9]*\)pt".*/\1/p' "$TMP/q.svg")
[ -n "$width" ] || fail "no width in the SVG"
[ "$width" -le 400 ] || fail "the picture around one operator is ${width} points wide"
n_checks=$((n_checks + 1))
run dot "$SHARDLAB" render gpt-1.7b --mesh 2x4 --around layer0.qkv -o "$TMP/q.dot"
expect_status 0 dot
expect_eq "$(grep -c 'more strategies' "$TMP/q.dot")" 3 "nodes with more strategies"
expect_in "$TMP/q.dot" "37 more strategies"
run all "$SHARDLAB" render gpt-1.7b --mesh 2x4 --around layer0.qkv --all-strategies -o "$TMP/a.dot"
expect_status 0 all
expect_not_in "$TMP/a.dot" "more strategies"
expect_in "$TMP/a.dot" "seq01+z"

# The alternatives of a whole plan at alpha 0: no single change lowers its
# memory (the plan is memory-optimal), and one that keeps the memory never
# lowers the time (among equal memory, the least communication); each
# operator's alternatives come least memory first.
run whole "$SHARDLAB" render gpt-1.7b --mesh 2x4 --all-strategies -o "$TMP/w.dot"
expect_status 0 whole
# one line per alternative: "MEM NS" as signed values in bytes and ns
tr '<' '\n' <"$TMP/w.dot" | sed -n 's/^TD ALIGN="RIGHT">\([-+]\)/\1/p' |
    awk '
	function unit(u) {
		if (u == "B" || u == "ns") return 1
		if (u == "KiB") return 1024
		if (u == "MiB") return 1048576
		if (u == "GiB") return 1073741824
		if (u == "us") return 1e3
		if (u == "ms") return 1e6
		return 1e9
	}
	{ v = substr($0, 2); split(v, p, " "); x = p[1] * unit(p[2]);
	  if (substr($0, 1, 1) == "-") x = -x;
	  if (n % 2 == 0) m = x; else print m, x; n++ }' >"$TMP/deltas"
[ "$(wc -l <"$TMP/deltas")" -ge 200 ] || fail "only $(wc -l <"$TMP/deltas") alternatives read"
awk '$1 < 0 { print "memory lowered by " -$1 " bytes"; exit 1 }
     $1 == 0 && $2 < 0 { print "equal memory, time lowered by " -$2 " ns"; exit 1 }' \
    "$TMP/deltas" >"$TMP/bad" || fail "a single change improves the plan: $(cat "$TMP/bad")"
n_checks=$((n_checks + 1))

# The format from the name: dot, svg, png, pdf; another is refused, nothing
# written.
"$SHARDLAB" render mlp-2layer --devices 2 -o "$TMP/m.png" || fail "render to .png"
expect_eq "$(head -c 4 "$TMP/m.png" | od -An -c | tr -d ' ')" '211PNG' "PNG magic"
"$SHARDLAB" render mlp-2layer --devices 2 -o "$TMP/m.pdf" || fail "render to .pdf"
expect_eq "$(head -c 4 "$TMP/m.pdf")" "%PDF" "PDF magic"
"$SHARDLAB" render mlp-2layer --devices 2 -o "$TMP/m.DOT" || fail "render to .DOT"
expect_in "$TMP/m.DOT" "digraph"
"$SHARDLAB" render mlp-2layer --devices 2 -o "$TMP/m.svg" || fail "render to .svg"
expect_in "$TMP/m.svg" "<svg"
run jpg "$SHARDLAB" render mlp-2layer --devices 2 -o "$TMP/m.jpg"
expect_status 2 jpg
expect_in "$TMP/jpg.err" "cannot tell the format from the name"
[ -e "$TMP/m.jpg" ] && fail "m.jpg written"
run clash "$SHARDLAB" render mlp-2layer --devices 2 --format svg -o "$TMP/c.png"
expect_status 2 clash
expect_in "$TMP/clash.err" "the name says png but --format says svg"
[ -e "$TMP/c.png" ] && fail "c.png written"
run fmt "$SHARDLAB" render mlp-2layer --devices 2 --format pdf -o "$TMP/noext"
expect_status 0 fmt
expect_eq "$(head -c 4 "$TMP/noext")" "%PDF" "--format pdf without an extension"
run stdout "$SHARDLAB" render mlp-2layer --devices 2
expect_status 0 stdout
expect_in "$TMP/stdout.out" "digraph"
done_ok
