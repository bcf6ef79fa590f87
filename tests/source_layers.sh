#!/bin/sh
# source_layers.sh: the source tree keeps its three layers apart, read from
# the #include lines of the sources.
#  - src/ is the engine library alone: every src/*.c is one of the library's
#    sources in Makefile.am, and no engine file (src/, src/runner/) includes
#    a header of the command line (src/cli/) or of the explorer (ui/), nor
#    curses or Graphviz.
#  - src/cli/ is the command line: no file of it includes curses or a header
#    of ui/, except tui.c, the explorer's row, which includes explorer.h (its
#    one entry point) and nothing else of ui/.
#  - No front-end file (src/cli/, ui/) includes GLPK's header: the solver is
#    the engine's, reached through src/shardlab.h.
#  - Every subcommand file exports its row, cli_cmd_NAME in NAME.c, and the
#    table of main.c lists each row once.
#  - The file map atop src/shardlab.h names every engine source.
#  - No engine string names a command-line option (the front ends do).
#  - Comments cite doc/*.md files that exist, and no design document outside.
# (engine_wall.sh checks the engine's objects; this checks its sources.)
. "$TESTS_SRCDIR/lib.sh"

TOP=$(cd "$TESTS_SRCDIR/.." && pwd)
[ -d "$TOP/src/cli" ] && [ -d "$TOP/ui" ] || skip "no sources under $TOP"

# The headers a file includes, one per line, as written.
includes() {
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]\([^>"]*\)[>"].*/\1/p' "$1"
}

# Header names of each layer (as a '|' alternation for grep -E).
names() {
	for h in "$@"; do
		[ -f "$h" ] && printf '%s\n' "${h##*/}"
	done | sed 's/\./\\./g' | paste -sd '|' -
}
CLI_H=$(names "$TOP"/src/cli/*.h)
UI_H=$(names "$TOP"/ui/*.h)
[ -n "$CLI_H" ] && [ -n "$UI_H" ] || fail "no headers found in src/cli or ui"
CURSES='(n?curses(w)?/)?(n?curses|term|panel)\.h'
GRAPHVIZ='(graphviz/)?(gvc|cgraph|cdt)\.h'
GLPK='glpk\.h'

: >"$TMP/bad"
n_engine=0 n_cli=0 n_ui=0 n_inc=0

# check FILE PATTERN WHY: FILE includes nothing matching PATTERN.
check() {
	includes "$1" >"$TMP/inc"
	n_inc=$((n_inc + $(wc -l <"$TMP/inc")))
	grep -Ex "(.*/)?($2)" "$TMP/inc" | while read -r h; do
		echo "${1#"$TOP"/} includes $h: $3"
	done >>"$TMP/bad"
}

for f in "$TOP"/src/*.c "$TOP"/src/*.h "$TOP"/src/runner/*.c "$TOP"/src/runner/*.h; do
	[ -f "$f" ] || continue
	n_engine=$((n_engine + 1))
	check "$f" "$CLI_H|$UI_H|cli/.*|ui/.*" "the engine knows no front end"
	check "$f" "$CURSES|$GRAPHVIZ" "the engine draws nothing"
done
for f in "$TOP"/src/cli/*.c "$TOP"/src/cli/*.h; do
	[ -f "$f" ] || continue
	n_cli=$((n_cli + 1))
	if [ "${f##*/}" = tui.c ]; then
		ui_h=$(printf '%s' "$UI_H" | tr '|' '\n' | grep -vxF 'explorer\.h' | paste -sd '|' -)
		check "$f" "$ui_h" "tui.c reaches the explorer through explorer.h alone"
	else
		check "$f" "$UI_H" "only tui.c reaches the explorer"
	fi
	check "$f" "$CURSES" "the command line uses no curses"
	check "$f" "$GLPK" "GLPK is behind the engine's header"
done
for f in "$TOP"/ui/*.c "$TOP"/ui/*.h; do
	[ -f "$f" ] || continue
	n_ui=$((n_ui + 1))
	check "$f" "$GLPK" "GLPK is behind the engine's header"
done
[ "$n_engine" -ge 20 ] || fail "read only $n_engine engine files"
[ "$n_cli" -ge 15 ] || fail "read only $n_cli command-line files"
[ "$n_ui" -ge 5 ] || fail "read only $n_ui explorer files"
[ "$n_inc" -ge 200 ] || fail "found only $n_inc #include lines"
n_checks=$((n_checks + 1))
[ -s "$TMP/bad" ] && fail "layers crossed:
$(cat "$TMP/bad")"

# src/ holds the engine alone: each of its .c files is a library source.
sed -n '/^src_libshardlab_a_SOURCES/,/^[^	]/p' "$TOP/Makefile.am" >"$TMP/lib"
n_checks=$((n_checks + 1))
grep -q 'src/util\.c' "$TMP/lib" || fail "no engine sources read from Makefile.am"
for f in "$TOP"/src/*.c; do
	grep -q "src/${f##*/}" "$TMP/lib" ||
		fail "src/${f##*/} is not an engine source: front-end code goes to src/cli/"
done

# The engine's header maps its files: each src/*.c has its line there.
sed -n '1,/^\*\//p' "$TOP/src/shardlab.h" >"$TMP/map"
n_checks=$((n_checks + 1))
for f in "$TOP"/src/*.c; do
	grep -q "^ \*   ${f##*/} " "$TMP/map" ||
		fail "src/${f##*/} is missing from the file map of src/shardlab.h"
done

# The engine names no command-line option in its words: it names the
# setting (sl_setting) and the front end its option.  pipe_export.c alone
# writes options: the frameworks' own (Megatron-LM's --tensor-model-...).
n_checks=$((n_checks + 1))
for f in "$TOP"/src/*.c; do
	[ "${f##*/}" = pipe_export.c ] && continue
	grep -n '"[^"]*--[a-z][^"]*"' "$f" | sed "s#^#src/${f##*/}:#"
done >"$TMP/flags"
[ -s "$TMP/flags" ] && fail "engine strings name command-line options:
$(cat "$TMP/flags")"

# Comments cite the documents of this tree: every doc/NAME.md that a
# source names exists, and none names a design document elsewhere.
n_checks=$((n_checks + 1))
for f in "$TOP"/src/*.[ch] "$TOP"/src/cli/*.[ch] "$TOP"/src/runner/*.[ch] \
    "$TOP"/ui/*.[ch]; do
	[ -f "$f" ] || continue
	grep -o 'doc/[a-z-]*\.md' "$f" | sort -u | while read -r d; do
		[ -f "$TOP/$d" ] || echo "${f#"$TOP"/} cites $d, which is not in the tree"
	done
	grep -n '[^/a-z]design\.md' "$f" | sed "s#^#${f#"$TOP"/}:#"
done >"$TMP/docs"
[ -s "$TMP/docs" ] && fail "comments cite documents outside the tree:
$(cat "$TMP/docs")"

# Each row is exported by the file of its name and listed once in main.c.
MAIN="$TOP/src/cli/main.c"
n_rows=0
for f in "$TOP"/src/cli/*.c; do
	row=$(sed -n 's/^const struct cli_cmd cli_cmd_\([a-z_]*\) = {.*/\1/p' "$f")
	[ -n "$row" ] || continue
	n_rows=$((n_rows + 1))
	base=${f##*/}
	expect_eq "$row.c" "$base" "the row exported by src/cli/$base"
	expect_eq "$(grep -c "^[[:space:]]*&cli_cmd_$row,\$" "$MAIN")" 1 \
		"cli_cmd_$row in the table of main.c"
done
expect_eq "$(grep -c '^[[:space:]]*&cli_cmd_[a-z_]*,$' "$MAIN")" "$n_rows" \
	"rows in main.c's table"
[ "$n_rows" -ge 13 ] || fail "found only $n_rows subcommand rows"
done_ok
