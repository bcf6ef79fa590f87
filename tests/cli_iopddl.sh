#!/bin/sh
# shardlab solve on IOPDDL contest problems: the example reaches its published
# optimum (445, strategies 0 0 2 1 0) with every solver, a model's strategy
# graph exported as an IOPDDL problem solves back to the model's objective,
# and bad problem files exit 2 naming the file.
. "$TESTS_SRCDIR/lib.sh"

EX="${SHARED_DIR:-}/iopddl/example.json"
[ -n "${SHARED_DIR:-}" ] && [ -r "$EX" ] ||
	skip "SHARED_DIR/iopddl/example.json is not readable (SHARED_DIR='${SHARED_DIR:-}')"

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
