#!/bin/sh
# one_place.sh: rules that live in one place stay there.
#  - JSON files are read by one reader and written by one writer (json.c):
#    no other object of the program, the explorer or the GPU runner calls
#    jansson's loaders or its writers (nm over the built objects), and no
#    other source prints JSON by hand: no format string of a print call
#    opens an object before a quoted key or writes a quoted key and its
#    colon.  The one exception is the IOPDDL problem writer (iopddl.c,
#    iopddl_write), which streams problems of tens of thousands of nodes.
#  - An operator kind is its row of the kind table (kinds.c): the model
#    reader and writer, the launch lists and the baselines switch over no
#    kind, and loop roles are compared as values, not as strings.
#  - The cost model's rules are defined once (space.c, local.c); explain
#    puts its items into words without deriving their bytes again.
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
	nm -u "$o" 2>/dev/null | grep -E ' U (json_load[a-z_]*|json_dump[a-z_]*)$' |
	    sed "s#^ *U #$o: #" >>"$TMP/calls"
done <"$TMP/objs"
[ -s "$TMP/calls" ] && fail "JSON read or written outside json.c: $(cat "$TMP/calls")"
# the check sees the reader where it is
nm -u "$BUILD/src/libshardlab.a" 2>/dev/null | grep -q ' U json_loadb$' ||
	fail "nm does not see json_loadb in $BUILD/src/libshardlab.a"

# JSON printed by hand: FILE:LINE:FUNCTION: TEXT of each format string of a
# print call that writes a piece of an object ("_(" starts a message).
awk '
FNR == 1 { fn = ""; inside = 0 }
/^[A-Za-z_][A-Za-z0-9_]*\(/ { fn = $0; sub(/\(.*/, "", fn) }
{
	line = $0
	if (!inside && line ~ /(^|[^A-Za-z0-9_])(v?[fsd]?printf|fputs|puts|sb_printf|cli_fprintf)[ \t]*\(/) {
		inside = 1
		msg = 0
	}
	if (inside) {
		t = line
		if ((i = index(t, "_(")) > 0) {
			t = substr(t, 1, i - 1)
			msg = 1
		} else if (msg)
			t = ""
		if (t ~ /\{\\"/ || t ~ /\\"[A-Za-z_%][A-Za-z0-9_]*\\": / || t ~ /"\\": /)
			printf "%s:%d:%s: %s\n", FILENAME, FNR, fn, line
		if (line ~ /;[ \t]*(\/\*.*)?$/)
			inside = 0
	}
}' "$SRC"/*.c "$SRC"/cli/*.c "$SRC"/runner/*.c "$SRC"/../ui/*.c >"$TMP/hand" ||
	fail "cannot scan the sources for JSON printed by hand"
# the check sees the one exception where it is
grep -q '/iopddl\.c:[0-9]*:iopddl_write: .*\\"usage_limit\\": ' "$TMP/hand" ||
	fail "the scan does not see the IOPDDL problem writer: $(head -3 "$TMP/hand")"
grep -v -e '/json\.c:' -e '/iopddl\.c:[0-9]*:iopddl_write:' "$TMP/hand" >"$TMP/hand2" &&
	fail "JSON printed by hand outside json.c (build a jansson tree and write it with sl_json_write): $(cat "$TMP/hand2")"

for f in model_json.c launch.c baseline.c; do
	[ -r "$SRC/$f" ] || fail "cannot read $SRC/$f"
	grep -n 'case SL_OP_' "$SRC/$f" >"$TMP/sw" &&
		fail "$f switches over operator kinds (a kind is a row of kinds.c): $(cat "$TMP/sw")"
done
grep -rnE --include='*.c' 'strcmp\([^;]*role\[|strcmp\([^;,()]*, *"(dp|seq|head|row|col|vocab)"\)' \
    "$SRC" >"$TMP/role" &&
	fail "loop roles compared as strings: $(cat "$TMP/role")"
# The cost model's rules, each defined once: whether a tensor has a
# gradient (graph.c, beside the tensor), a tensor's placement along an axis (local.c, with the
# other local sizes); and explain.c puts the model's collectives into words
# rather than deriving them again.
grep -nE '^[a-z_]*needs_grad\(const sl_tensor' \
    "$SRC"/*.c "$SRC"/cli/*.c "$SRC"/../ui/*.c | grep -v '/graph\.c:' >"$TMP/rule" &&
	fail "a rule of graph.c defined again: $(cat "$TMP/rule")"
grep -nE '^[a-z_]*placement\(const sl_spec' \
    "$SRC"/*.c "$SRC"/cli/*.c "$SRC"/../ui/*.c | grep -v '/local\.c:' >"$TMP/rule" &&
	fail "a rule of local.c defined again: $(cat "$TMP/rule")"
grep -q '^sl_needs_grad(const sl_tensor' "$SRC/graph.c" ||
	fail "the scan does not see sl_needs_grad in graph.c"
grep -q '^sl_placement(const sl_spec' "$SRC/local.c" ||
	fail "the scan does not see sl_placement in local.c"
grep -nE 'sl_grad_elem_bytes|sl_local_elems\(.*sl_elem_bytes' "$SRC/explain.c" >"$TMP/ex" &&
	fail "explain.c derives the cost model's bytes again: $(cat "$TMP/ex")"
# Megatron-LM's per-operator layout is one function (baseline.c,
# megatron_layout) for the frameworks' plans and the baselines: no other
# function asks for an operator's Megatron-LM role.
awk '
/^[A-Za-z_][A-Za-z0-9_]*\(/ { fn = $0; sub(/\(.*/, "", fn) }
/megatron_role\(s, / && fn != "megatron_layout" { printf "%s:%d:%s\n", FILENAME, FNR, fn }
' "$SRC"/*.c >"$TMP/mr"
[ -s "$TMP/mr" ] && fail "Megatron-LM's layout written outside megatron_layout: $(cat "$TMP/mr")"
grep -c 'megatron_role(s, choice, v, a, sp, ep)' "$SRC/baseline.c" | grep -qx 1 ||
	fail "the scan does not see megatron_layout's call of megatron_role"
n_checks=12
done_ok
