#!/bin/sh
# cli_bounds.sh: what reading an input may take is bounded.  A small
# compressed file of one long array (an IOPDDL problem or a model) inflates
# to text within SHARDLAB_MAX_INPUT, but a tree of its values would take 30
# to 60 times the text: it must stop with status 2 and the position where
# the values passed the limit, in memory bounded by the limit, never abort
# for want of memory.  The bombs run under a memory limit (ulimit -v), so
# that a reader without the bound fails here instead of taking the machine
# down; the scale is small (16 MiB of text, a 256 MiB address space) and the
# same bound holds at any scale.  Also: a gzip file is known by its magic
# bytes, whatever its name, and a SHARDLAB_MAX_INPUT that is not a size is
# an error, not replaced by the default.
. "$TESTS_SRCDIR/lib.sh"

# ulimit -v and AddressSanitizer's shadow memory do not mix: under ASan the
# bombs run without the address-space limit (their memory is bounded all
# the same, and ASan reports what leaks or overflows).
limit=262144
if ldd "$SHARDLAB" 2>/dev/null | grep -q libasan; then
	limit=unlimited
fi

# bomb NAME FILE ARGS...: runs shardlab ARGS under the memory limit with a
# 16 MiB input limit.
bomb() {
	name=$1
	shift
	rc=0
	( ulimit -v "$limit" && SHARDLAB_MAX_INPUT=16MiB exec "$SHARDLAB" "$@" ) \
	    >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null || rc=$?
}

# -- an IOPDDL problem of 3.9 million one-strategy nodes: 15.6 MB of text,
# 0.3 MB compressed
{
	printf '{"problem": {"nodes": {"costs": ['
	yes '[0],' | head -n 3900000 | tr -d '\n'
	printf '[0]]}}}\n'
} | gzip -1 >"$TMP/rows.json.gz"
bomb rows solve "$TMP/rows.json.gz"
expect_status 2 rows
expect_in "$TMP/rows.err" "rows.json.gz:1:524322: problem.nodes.costs[131072]: the problem would take more than 16.00 MiB of memory (SHARDLAB_MAX_INPUT)"

# -- one node of 7.8 million strategies
{
	printf '{"problem": {"nodes": {"costs": [['
	yes '0,' | head -n 7800000 | tr -d '\n'
	printf '0]]}}}\n'
} | gzip -1 >"$TMP/row.json.gz"
bomb row show "$TMP/row.json.gz"
expect_status 2 row
expect_in "$TMP/row.err" "row.json.gz:1:524321: problem.nodes.costs[0][262143]: the problem would take more than 16.00 MiB"

# -- the same within the budget (the default limit): a row of a node's costs
# is kept no further than the most strategies a node may have
{
	printf '{"problem": {"nodes": {"costs": [['
	yes '0,' | head -n 1500000 | tr -d '\n'
	printf '0]]}}}\n'
} | gzip -1 >"$TMP/wide.json.gz"
rc=0
( ulimit -v "$limit" && exec "$SHARDLAB" show "$TMP/wide.json.gz" ) \
    >"$TMP/wide.out" 2>"$TMP/wide.err" </dev/null || rc=$?
expect_status 2 wide
expect_in "$TMP/wide.err" "wide.json.gz:1:34: problem.nodes.costs[0]: a node needs between 1 and 1000000 strategies, found 1500001"

# -- a node's strategies past the edges that name them: the edge's row is
# read no further than the strategies allow (2 x 1), and said so
{
	printf '{"problem": {"nodes": {"costs": [[1], [1, 2]]}, "edges": {"nodes": [[0, 1]], "costs": [['
	yes '0,' | head -n 3000000 | tr -d '\n'
	printf '0]]}}}\n'
} | gzip -1 >"$TMP/edge.json.gz"
bomb edge show "$TMP/edge.json.gz"
expect_status 2 edge
expect_in "$TMP/edge.err" "edge.json.gz:1:88: problem.edges.costs[0]: expected 2 values, found 3000001"

# -- a model (plain text): 7.8 million values in one array
{
	printf '{"format": "shardlab-model", "version": 1, "name": "bomb", "tensors": ['
	yes '0,' | head -n 7800000 | tr -d '\n'
	printf '0], "ops": []}\n'
} >"$TMP/model.json"
bomb model show "$TMP/model.json"
expect_status 2 model
expect_in "$TMP/model.err" "model.json:1:262206: too many values: the document would take more than 16.00 MiB of memory to hold (SHARDLAB_MAX_INPUT)"
expect_not_in "$TMP/model.err" "not valid JSON"

# -- a good problem reads and solves under the same limits
bomb small solve "$TESTS_SRCDIR/../data/iopddl/small.json"
expect_status 0 small
expect_in "$TMP/small.out" "objective: 196"

# -- gzip is known by its magic bytes: a compressed model named .json, a
# compressed problem named .txt, a plain problem named .json.gz
"$SHARDLAB" gen gpt --layers 2 --hidden 64 --heads 4 --vocab 512 --seq 32 \
    -o "$TMP/m.json" -q || fail "gen"
run plain "$SHARDLAB" show "$TMP/m.json"
expect_status 0 plain
gzip -c "$TMP/m.json" >"$TMP/mz.json"
run mz "$SHARDLAB" show "$TMP/mz.json"
expect_status 0 mz
expect_eq "$(cat "$TMP/mz.out")" "$(sed "s#$TMP/m.json#$TMP/mz.json#g" "$TMP/plain.out")" \
    "a compressed model shows as the plain one"
gzip -c "$TESTS_SRCDIR/data/iopddl/example.json" >"$TMP/ex.txt"
run extxt "$SHARDLAB" solve "$TMP/ex.txt"
expect_status 0 extxt
expect_in "$TMP/extxt.out" "objective: 445"
cp "$TESTS_SRCDIR/data/iopddl/example.json" "$TMP/plain.json.gz"
run exgz "$SHARDLAB" solve "$TMP/plain.json.gz"
expect_status 0 exgz
expect_in "$TMP/exgz.out" "objective: 445"

# -- SHARDLAB_MAX_INPUT: a size, or an error naming it
for v in 64x 0 -5 '' 1e400 2TiB; do
	rc=0
	SHARDLAB_MAX_INPUT=$v "$SHARDLAB" show "$TMP/m.json" >"$TMP/env.out" \
	    2>"$TMP/env.err" || rc=$?
	case $v in
	'')
		# unset in effect: the default
		expect_eq "$rc" 0 "SHARDLAB_MAX_INPUT='$v': exit status" ;;
	*)
		expect_eq "$rc" 2 "SHARDLAB_MAX_INPUT='$v': exit status"
		expect_in "$TMP/env.err" "SHARDLAB_MAX_INPUT: expected a size from 1 byte to 1.00 TiB such as 64MiB or 2GB, got '$v'" ;;
	esac
done
SHARDLAB_MAX_INPUT=64 run tiny "$SHARDLAB" show "$TMP/m.json"
expect_status 2 tiny
expect_in "$TMP/tiny.err" "the file is too large"
done_ok
