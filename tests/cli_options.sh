#!/bin/sh
# The option table (src/cli/options.c) seen from outside: every subcommand's
# --help, -h and `help NAME` list the same options; the man page's list of
# each subcommand's options (shardlab(1), OPTIONS) is exactly that list; an
# option a subcommand does not list is refused by it; "did you mean" for
# options and subcommands; sizes need their unit, counts do not.
. "$TESTS_SRCDIR/lib.sh"

MAN="$TESTS_SRCDIR/../man/shardlab.1"
[ -r "$MAN" ] || skip "cannot read $MAN"

run help "$SHARDLAB" --help
expect_status 0 help
sed -n 's/^  shardlab \([a-z]*\).*/\1/p' "$TMP/help.out" >"$TMP/cmds"
[ "$(wc -l <"$TMP/cmds")" -ge 12 ] || fail "shardlab --help lists $(wc -l <"$TMP/cmds") subcommands"

# The man page's list: the .It Cm NAME items of the first list of OPTIONS,
# each option as its long name (o, q, h are -o, -q, -h).
awk '
/^\.Sh OPTIONS/ { in_opts = 1; next }
/^\.Sh / { in_opts = 0 }
in_opts && /^\.Bl / { depth++ }
in_opts && /^\.El/ { if (depth == 1) exit; depth-- }
in_opts && depth == 1 && /^\.It Cm / { cmd = $3; next }
in_opts && depth == 1 && /^\.Fl / && cmd != "" {
	for (i = 2; i <= NF; i++) {
		if ($i == ",") continue
		o = $i
		if (o == "o") o = "-output"
		else if (o == "q") o = "-quiet"
		else if (o == "h") o = "-help"
		print cmd, "-" o
	}
}' "$MAN" | sort >"$TMP/man"
[ -s "$TMP/man" ] || fail "no option lists found in the OPTIONS of $MAN"

: >"$TMP/all"
while read -r c; do
	run "h_$c" "$SHARDLAB" "$c" --help
	expect_status 0 "h_$c"
	expect_in "$TMP/h_$c.out" "usage: shardlab $c"
	run "s_$c" "$SHARDLAB" "$c" -h
	expect_status 0 "s_$c"
	run "w_$c" "$SHARDLAB" help "$c"
	expect_status 0 "w_$c"
	cmp -s "$TMP/h_$c.out" "$TMP/s_$c.out" || fail "$c: -h and --help differ"
	cmp -s "$TMP/h_$c.out" "$TMP/w_$c.out" || fail "$c: help $c and $c --help differ"
	# "  -o, --output FILE" or "  --mesh AxB": each option, with whether
	# it takes a value
	sed -n 's/^  \(-[a-z], \)\{0,1\}\(--[a-z-]*\)\( [^ ][^ ]*\)\{0,1\}.*/\2\3/p' \
	    "$TMP/h_$c.out" >"$TMP/o_$c"
	grep -q -- '^--help$' "$TMP/o_$c" || fail "$c --help does not list --help"
	sed 's/ .*//' "$TMP/o_$c" | grep -v -- '^--help$' | sed "s/^/$c /" | sort \
	    >"$TMP/help_$c"
	grep "^$c " "$TMP/man" >"$TMP/man_$c" || true
	n_checks=$((n_checks + 1))
	diff "$TMP/man_$c" "$TMP/help_$c" >"$TMP/diff" ||
		fail "$c: the man page's options (<) and $c --help's (>) differ: $(cat "$TMP/diff")"
	cat "$TMP/o_$c" >>"$TMP/all"
done <"$TMP/cmds"
# the man page lists no subcommand that does not exist
cut -d' ' -f1 "$TMP/man" | sort -u >"$TMP/mancmds"
sort -u "$TMP/cmds" | comm -23 "$TMP/mancmds" - >"$TMP/extra"
[ -s "$TMP/extra" ] && fail "the man page lists options of unknown subcommands: $(cat "$TMP/extra")"

# Every option of another subcommand is refused, by name.
sort -u "$TMP/all" | grep -v -- '^--help$' >"$TMP/union"
[ "$(wc -l <"$TMP/union")" -ge 45 ] || fail "only $(wc -l <"$TMP/union") options in all"
while read -r c; do
	[ "$c" = help ] && continue
	while read -r opt val; do
		grep -q -- "^$opt\( \|$\)" "$TMP/o_$c" && continue
		set -- "$opt"
		[ -n "$val" ] && set -- "$opt" 1
		run na "$SHARDLAB" "$c" "$@"
		expect_status 2 na
		expect_in "$TMP/na.err" "option '$opt' does not apply to '$c'"
	done <"$TMP/union"
done <"$TMP/cmds"

# Did you mean: an option, a subcommand, a value of a choice.
run dym "$SHARDLAB" solve mlp-2layer --devcies 4
expect_status 2 dym
expect_in "$TMP/dym.err" "unknown option '--devcies': did you mean '--devices'?"
run dym2 "$SHARDLAB" solv mlp-2layer
expect_status 2 dym2
expect_in "$TMP/dym2.err" "unknown subcommand 'solv': did you mean 'solve'?"
run dym3 "$SHARDLAB" solve mlp-2layer --solver anytim
expect_status 2 dym3
expect_in "$TMP/dym3.err" "did you mean 'anytime'?"
run dym4 "$SHARDLAB" plan gpt-1.7b --offload-optimiser
expect_status 2 dym4
expect_in "$TMP/dym4.err" "did you mean '--offload-optimizer'?"
# nothing close: no guess
run dym5 "$SHARDLAB" solve mlp-2layer --frobnicate
expect_status 2 dym5
expect_not_in "$TMP/dym5.err" "did you mean"
run amb "$SHARDLAB" timeline mlp-2layer --dev 1
expect_status 2 amb
expect_in "$TMP/amb.err" "'--dev' is ambiguous: --devices, --device"
run flagval "$SHARDLAB" solve mlp-2layer --no-zero=1
expect_status 2 flagval
expect_in "$TMP/flagval.err" "'--no-zero' takes no value"

# A size needs its unit; a count does not.
run nounit "$SHARDLAB" solve mlp-2layer --mem-limit 10
expect_status 2 nounit
expect_in "$TMP/nounit.err" "--mem-limit: '10' has no unit"
run unit "$SHARDLAB" solve mlp-2layer --devices 2 --mem-limit 1GiB
expect_status 0 unit
run bytes "$SHARDLAB" solve mlp-2layer --devices 2 --mem-limit 10B
expect_status 1 bytes
run count "$SHARDLAB" solve mlp-2layer --devices 2 --threads 2 --micro-batch 2
expect_status 0 count
done_ok
