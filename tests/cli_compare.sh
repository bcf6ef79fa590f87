#!/bin/sh
# shardlab compare and explain: a row per method with numbers checked by
# hand, the JSON form, bad input, and the explain text of the two-layer MLP
# against its checked-in expected output.
. "$TESTS_SRCDIR/lib.sh"

# field FILE METHOD KEY: KEY of METHOD's row in a compare JSON file (a row
# is a line).
field() {
	grep "\"method\": \"$2\"" "$1" | grep -o "\"$3\": [^,}]*" | head -n 1 |
		sed 's/^[^:]*: //'
}

run cmp "$SHARDLAB" compare mlp-2layer --devices 4 --solver dp --mem-limit 10MiB
expect_status 0 cmp
for m in ours dp zero1 zero2 zero3 megatron megatron-sp alpa alpa-budget colossal-auto; do
	n_checks=$((n_checks + 1))
	grep -q "^$m " "$TMP/cmp.out" || { cat "$TMP/cmp.out"; fail "no row for $m"; }
done
expect_in "$TMP/cmp.out" "ours/thr"

run js "$SHARDLAB" compare mlp-2layer --devices 4 --solver dp --json "$TMP/c.json"
expect_status 0 js
expect_in "$TMP/c.json" '"format": "shardlab-compare"'
expect_eq "$(grep -c '"method":' "$TMP/c.json")" 10 "rows in the JSON"
expect_eq "$(grep -m1 '"method":' "$TMP/c.json" | sed 's/.*"method": "//; s/".*//')" ours "first row"

# Data parallel on 4 devices (batch 8, 2 per device): 16 bytes x 2,097,152
# parameters = 33,554,432 plus saved x[2,512], h1[2,2048], g[2,2048] x 2
# bytes = 18,432: 33,572,864.
expect_eq "$(field "$TMP/c.json" dp max_memory_bytes)" 33572864 "dp memory"
# ZeRO-1: optimizer states 12 x 2,097,152 = 25,165,824 divided by 4 leaves
# 6,291,456, so 18,874,368 less: 14,698,496.  ZeRO-2 also divides the
# gradients, 2 x 2,097,152 = 4,194,304 -> 1,048,576: 11,552,768.
expect_eq "$(field "$TMP/c.json" zero1 max_memory_bytes)" 14698496 "zero1 memory"
expect_eq "$(field "$TMP/c.json" zero2 max_memory_bytes)" 11552768 "zero2 memory"
expect_eq "$(field "$TMP/c.json" zero1 comm_time_ns)" "$(field "$TMP/c.json" dp comm_time_ns)" \
    "zero1 communicates like dp"
# Megatron-LM, tensor parallel 4: fc1 column-, fc2 row-parallel, gelu split
# like fc1: 16 x 2,097,152 / 4 = 8,388,608 of states; saved x[8,512]
# (replicated), h1[8,512] and g[8,512] local, x 2 bytes = 24,576: 8,413,184.
expect_eq "$(field "$TMP/c.json" megatron max_memory_bytes)" 8413184 "megatron memory"
# No budget given: the budget row says so.
expect_eq "$(field "$TMP/c.json" alpa-budget applicable)" false "alpa-budget without a budget"
# Ours at alpha 0 needs no more memory than any row.
ours=$(field "$TMP/c.json" ours max_memory_bytes)
for m in dp zero1 zero2 zero3 megatron megatron-sp alpa colossal-auto; do
	v=$(field "$TMP/c.json" "$m" max_memory_bytes)
	n_checks=$((n_checks + 1))
	[ "$ours" -le "$v" ] || fail "ours $ours above $m $v"
done

# A file that cannot be written: an error, and nothing half-written.
run nowrite "$SHARDLAB" compare mlp-2layer --devices 4 --json "$TMP/no/such/dir/c.json"
expect_status 3 nowrite
n_checks=$((n_checks + 1))
[ ! -e "$TMP/no/such/dir/c.json" ] || fail "a comparison was written"

# Bad input: no model, an unknown operator, an unknown strategy.
run nomodel "$SHARDLAB" compare
expect_status 2 nomodel
run badop "$SHARDLAB" explain mlp-2layer --op nosuch --devices 4
expect_status 2 badop
expect_in "$TMP/badop.err" "nosuch"
run badst "$SHARDLAB" explain mlp-2layer --op fc1 --strategy diagonal --devices 4
expect_status 2 badst
expect_in "$TMP/badst.err" "it has:"
run noop "$SHARDLAB" explain mlp-2layer --devices 4
expect_status 2 noop

# The teaching text, exactly.
run ex "$SHARDLAB" explain mlp-2layer --op fc1 --strategy col --devices 4
expect_status 0 ex
n_checks=$((n_checks + 1))
if ! diff -u "$TESTS_SRCDIR/expected/explain-mlp.txt" "$TMP/ex.out"; then
	fail "explain output differs from tests/expected/explain-mlp.txt"
fi

# Without --strategy it explains the plan's own choice.
run ex2 "$SHARDLAB" explain mlp-2layer --op fc2 --devices 4 --solver dp
expect_status 0 ex2
expect_in "$TMP/ex2.out" "Operator fc2 (matmul)"
expect_in "$TMP/ex2.out" "from the plan at alpha 0"

done_ok
