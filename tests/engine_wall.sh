#!/bin/sh
# engine_wall.sh: the engine library reports and never prints, and knows
# nothing of curses or Graphviz.  Every object of src/libshardlab.a is read
# with nm: none may call the C library's printing to the terminal (printf,
# puts, putchar, perror, vprintf) or any curses or Graphviz function.
# util.o alone may name stdout and stderr: "-" as an output path is standard
# output, and running out of memory is said on stderr before aborting.
. "$TESTS_SRCDIR/lib.sh"

command -v nm >/dev/null 2>&1 || skip "nm (binutils) is not installed"
LIB="$(dirname "$SHARDLAB")/src/libshardlab.a"
[ -r "$LIB" ] || skip "$LIB not built"

nm -A -u "$LIB" >"$TMP/undef" 2>"$TMP/nm.err" || fail "nm failed: $(cat "$TMP/nm.err")"
n=$(grep -c ' U ' "$TMP/undef")
[ "$n" -gt 100 ] || fail "nm listed only $n undefined symbols in $LIB"
objs=$(sed -n 's/^[^:]*:\([^:]*\.o\):.*/\1/p' "$TMP/undef" | sort -u | wc -l)
[ "$objs" -ge 20 ] || fail "nm read only $objs objects of $LIB"

grep -E ' U (printf|__printf_chk|puts|putchar|perror|vprintf|__vprintf_chk)$' \
	"$TMP/undef" >"$TMP/print" && fail "engine objects print: $(cat "$TMP/print")"
grep -E ' U (initscr|newterm|endwin|wrefresh|doupdate|newwin|waddnstr|mvwaddnstr|wgetch|wget_wch|keypad|start_color|ag[a-z_]+|gv[A-Z][A-Za-z]+)$' \
	"$TMP/undef" >"$TMP/ui" && fail "engine objects use curses or Graphviz: $(cat "$TMP/ui")"
grep -E ' U (stdout|stderr)$' "$TMP/undef" | grep -v ':util\.o:' >"$TMP/std" &&
	fail "engine objects write to the terminal: $(cat "$TMP/std")"
n_checks=5
done_ok
