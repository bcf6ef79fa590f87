#!/bin/sh
# one_place.sh: rules that live in one place stay there.
#  - JSON files are read by one reader and written by one writer (json.c):
#    no other object of the program, the explorer or the GPU runner calls
#    jansson's loaders or its file writers (nm over the built objects).
#  - An operator kind is its row of the kind table (kinds.c): the model
#    reader and writer, the launch lists and the baselines switch over no
#    kind, and loop roles are compared as values, not as strings.
. "$TESTS_SRCDIR/lib.sh"

SRC="$TESTS_SRCDIR/../src"
BUILD="$(dirname "$SHARDLAB")"

command -v nm >/dev/null 2>&1 || skip "nm (binutils) is not installed"
find "$BUILD/src" "$BUILD/ui" -name '*.o' >"$TMP/objs" 2>/dev/null
n=$(wc -l <"$TMP/objs")
[ "$n" -ge 30 ] || skip "only $n objects built under $BUILD"
: >"$TMP/calls"
while read -r o; do
	case $(basename "$o") in
	json.o | *-json.o) continue ;;
	esac
	nm -u "$o" 2>/dev/null | grep -E ' U (json_load[a-z_]*|json_dumpf|json_dump_file|json_dumpfd)$' |
	    sed "s#^ *U #$o: #" >>"$TMP/calls"
done <"$TMP/objs"
[ -s "$TMP/calls" ] && fail "JSON read or written outside json.c: $(cat "$TMP/calls")"
# the check sees the reader where it is
nm -u "$BUILD/src/libshardlab.a" 2>/dev/null | grep -q ' U json_loadb$' ||
	fail "nm does not see json_loadb in $BUILD/src/libshardlab.a"

for f in model_json.c launch.c baseline.c; do
	[ -r "$SRC/$f" ] || fail "cannot read $SRC/$f"
	grep -n 'case SL_OP_' "$SRC/$f" >"$TMP/sw" &&
		fail "$f switches over operator kinds (a kind is a row of kinds.c): $(cat "$TMP/sw")"
done
grep -rnE --include='*.c' 'strcmp\([^;]*role\[|strcmp\([^;,()]*, *"(dp|seq|head|row|col|vocab)"\)' \
    "$SRC" >"$TMP/role" &&
	fail "loop roles compared as strings: $(cat "$TMP/role")"
n_checks=5
done_ok
