#!/bin/sh
# The command line's basics: help, version, show, gen, and usage errors.
. "$TESTS_SRCDIR/lib.sh"

run help "$SHARDLAB" --help
expect_status 0 help
for c in tui solve sweep compare explain show gen render validate; do
	expect_in "$TMP/help.out" "shardlab $c"
done

run version "$SHARDLAB" --version
expect_status 0 version
expect_in "$TMP/version.out" "shardlab "

run unknown "$SHARDLAB" frobnicate
expect_status 2 unknown
expect_in "$TMP/unknown.err" "unknown subcommand 'frobnicate'"

run badopt "$SHARDLAB" solve mlp-2layer --no-such-option
expect_status 2 badopt
expect_in "$TMP/badopt.err" "unknown option '--no-such-option'"

run badmesh "$SHARDLAB" solve mlp-2layer --mesh 2xq
expect_status 2 badmesh

run badalpha "$SHARDLAB" solve mlp-2layer --alpha -1
expect_status 2 badalpha
expect_in "$TMP/badalpha.err" "--alpha"

run nomodel "$SHARDLAB" solve no-such-model
expect_status 2 nomodel
expect_in "$TMP/nomodel.err" "no-such-model"

# show: parameter count of the MLP is 2 x 512 x 2048
run show "$SHARDLAB" show mlp-2layer
expect_status 0 show
expect_in "$TMP/show.out" "parameters: 2097152"
expect_in "$TMP/show.out" "fc1"

# gpt-1.7b: 12 L h^2 (1 + 13/(12h) + (V+s)/(12 L h)) = 1,650,333,696 (+ final norm)
run show17 "$SHARDLAB" show gpt-1.7b
expect_status 0 show17
p=$(sed -n 's/^parameters: \([0-9]*\).*/\1/p' "$TMP/show17.out")
[ "$p" -ge 1633830359 ] && [ "$p" -le 1666837033 ] ||
	fail "gpt-1.7b parameters $p not within 1% of 1,650,333,696"

# gen writes a model that loads and solves
run gen "$SHARDLAB" gen gpt --layers 2 --hidden 128 --heads 4 --seq 64 --vocab 500 --batch 4 -o "$TMP/g.json"
expect_status 0 gen
[ -s "$TMP/g.json" ] || fail "gen wrote nothing"
run gensolve "$SHARDLAB" solve "$TMP/g.json" --devices 4
expect_status 0 gensolve
expect_in "$TMP/gensolve.out" "objective:"

run genbad "$SHARDLAB" gen transformerxl
expect_status 2 genbad
# Run from its build tree, before make install and from anywhere, the
# program finds the bundled data by itself (the README's quick start).
run nodatadir sh -c 'cd / && env -u SHARDLAB_DATADIR "$0" show mlp-2layer' "$SHARDLAB"
expect_status 0 nodatadir
expect_in "$TMP/nodatadir.out" "parameters: 2097152"
done_ok
