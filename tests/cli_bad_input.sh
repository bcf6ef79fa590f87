#!/bin/sh
# cli_bad_input.sh: every file of the bad-input corpus (tests/data/bad) makes
# `shardlab show` exit with status 2 and print "shardlab: FILE:LINE:COL:
# message" on stderr, with the line, column and message of
# tests/expected/bad/errors.tsv; and `shardlab solve FILE --json OUT` fails the
# same way without leaving OUT (or a temporary file beside it) behind.

if [ -z "$SHARDLAB" ] || [ ! -x "$SHARDLAB" ]; then
	echo "SKIP: \$SHARDLAB is not set to the shardlab program (run through make check)"
	exit 77
fi
srcdir=${TESTS_SRCDIR:-$(cd "$(dirname "$0")" && pwd)}
table=$srcdir/expected/bad/errors.tsv
if [ ! -r "$table" ]; then
	echo "ERROR: cannot read $table"
	exit 99
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cli_bad_input.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

n=0
failed=0
tab=$(printf '\t')
while IFS=$tab read -r file line col msg; do
	case $file in
	'#'* | '') continue ;;
	esac
	n=$((n + 1))
	path=$srcdir/data/bad/$file
	want="shardlab: $path:$line:$col: "

	"$SHARDLAB" show "$path" >"$tmp/stdout" 2>"$tmp/stderr"
	rc=$?
	if [ $rc -ne 2 ] || ! grep -F -- "$want" "$tmp/stderr" | grep -q -F -- "$msg"; then
		echo "FAIL: show $file"
		echo "  expected: exit 2, stderr \"$want...$msg...\""
		echo "  actual:   exit $rc, stderr \"$(cat "$tmp/stderr")\""
		failed=$((failed + 1))
	fi

	out=$tmp/out/plan.json
	mkdir -p "$tmp/out"
	"$SHARDLAB" solve "$path" --json "$out" >"$tmp/stdout" 2>"$tmp/stderr"
	rc=$?
	left=$(ls -A "$tmp/out")
	if [ $rc -ne 2 ] || [ -n "$left" ] ||
	    ! grep -F -- "$want" "$tmp/stderr" | grep -q -F -- "$msg"; then
		echo "FAIL: solve $file --json OUT"
		echo "  expected: exit 2, no file written, stderr \"$want...$msg...\""
		echo "  actual:   exit $rc, files written: \"$left\", stderr \"$(cat "$tmp/stderr")\""
		failed=$((failed + 1))
	fi
	rm -rf "$tmp/out"
done <"$table"

if [ $n -lt 12 ]; then
	echo "ERROR: only $n cases in $table"
	exit 99
fi
echo "$n bad inputs, $failed failures"
[ $failed -eq 0 ]
