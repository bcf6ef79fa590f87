#!/bin/sh
# shardlab solve on IOPDDL contest problems: the small problem shipped in
# data/iopddl and the contest's example reach their optima (the example its
# published 445, strategies 0 0 2 1 0) with every solver, a model's strategy
# graph exported as an IOPDDL problem solves back to the model's objective,
# and bad problem files exit 2 naming the file.
. "$TESTS_SRCDIR/lib.sh"

# The small problem shipped in data/iopddl: with the usage limit of 50 the
# optimum is strategies 0 2 0 2 0 1: node costs 20+35+18+50+22+28 = 173,
# edge entries 10+8+0+5+0+0 = 23, together 196, peak usage 43.  Without the
# limit 1 1 0 1 0 1 (cost 190) would win, but it peaks at 66.
SMALL="$TESTS_SRCDIR/../data/iopddl/small.json"
for s in auto ilp brute; do
	run "small-$s" "$SHARDLAB" solve "$SMALL" --solver "$s"
	expect_status 0 "small-$s"
	expect_in "$TMP/small-$s.out" "objective: 196"
	expect_in "$TMP/small-$s.out" "strategies: 0 2 0 2 0 1"
	expect_in "$TMP/small-$s.out" "peak usage 43, limit 50"
done
# gzip-compressed, it is recognised by its content
gzip -c "$SMALL" >"$TMP/small.json.gz"
run small-gz "$SHARDLAB" solve "$TMP/small.json.gz"
expect_status 0 small-gz
expect_in "$TMP/small-gz.out" "objective: 196"

EX="${SHARED_DIR:-}/iopddl/example.json"
if [ -n "${SHARED_DIR:-}" ] && [ -r "$EX" ]; then

	run auto "$SHARDLAB" solve "$EX"
	expect_status 0 auto
	expect_in "$TMP/auto.out" "objective: 445"
	expect_in "$TMP/auto.out" "strategies: 0 0 2 1 0"

	for s in ilp brute; do
		run "$s" "$SHARDLAB" solve "$EX" --solver "$s"
		expect_status 0 "$s"
		expect_eq "$(grep '^objective:' "$TMP/$s.out")" "objective: 445" "--solver $s"
	done

	# The same problem gzip-compressed is recognised by its content.
	gzip -c "$EX" >"$TMP/example.json.gz"
	run gz "$SHARDLAB" solve "$TMP/example.json.gz" --solver ilp
	expect_status 0 gz
	expect_in "$TMP/gz.out" "objective: 445"
else
	echo "note: SHARED_DIR/iopddl/example.json is not readable (SHARED_DIR='${SHARED_DIR:-}'); the contest's example was not solved"
fi

# A model's strategy graph, exported and solved as a contest problem.
run model "$SHARDLAB" solve mlp-2layer --mesh 2x2 --alpha 1000 --solver ilp \
	--export-problem "$TMP/mlp.json"
if [ "$rc" -eq 0 ] && [ -s "$TMP/mlp.json" ]; then
	run back "$SHARDLAB" solve "$TMP/mlp.json" --solver ilp
	expect_status 0 back
	expect_eq "$(grep '^objective:' "$TMP/back.out")" \
		"$(grep '^objective:' "$TMP/model.out")" "exported problem"
fi

# Bad problems: exit 2, the file named, nothing solved.
printf '{"problem": {"nodes": {"costs": [[1], [2]]}, "edges": {"nodes": [[0, 0]], "costs": [[1]]}}}\n' \
	>"$TMP/self.json"
run self "$SHARDLAB" solve "$TMP/self.json"
expect_status 2 self
expect_in "$TMP/self.err" "self.json"
expect_in "$TMP/self.err" "itself"
printf '{"problem": {"nodes": {"costs": [[1, 2], [3]]}, "edges": {"nodes": [[0, 1]], "costs": [[1, 2, 3]]}}}\n' \
	>"$TMP/size.json"
run size "$SHARDLAB" solve "$TMP/size.json"
expect_status 2 size
expect_in "$TMP/size.err" "size.json"

done_ok
