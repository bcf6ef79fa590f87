#!/bin/sh
# cli_files.sh: nothing lost, nothing silent.  What the atomic writer does
# with what a path names (device, FIFO, symbolic link, mode, read-only file,
# an input of the same command, a long name), standard output that cannot be
# written, inputs that are not regular files, a render stopped by a signal,
# and names with control characters on the terminal.
. "$TESTS_SRCDIR/lib.sh"

# A plan's objective line, to compare two runs.
obj() { grep '"objective":' "$1" | head -n 1; }

# -- write-through: a character device stays one (the write fails: status 3)
if [ -w /dev/full ]; then
	run full "$SHARDLAB" solve mlp-2layer --json /dev/full
	expect_status 3 full
	expect_in "$TMP/full.err" "/dev/full"
	[ -c /dev/full ] || fail "/dev/full is no longer a character device"
fi

# -- a FIFO is written through: its reader gets the plan, it stays a FIFO
if mkfifo "$TMP/fifo" 2>/dev/null; then
	# the reader: this shell, on a descriptor opened without waiting
	exec 3<>"$TMP/fifo"
	run fifo "$SHARDLAB" solve mlp-2layer --json "$TMP/fifo" -q
	expect_status 0 fifo
	sed '/^}$/q' <&3 >"$TMP/fifo.got"
	exec 3<&-
	[ -p "$TMP/fifo" ] || fail "the FIFO was replaced by a regular file"
	expect_in "$TMP/fifo.got" '"format": "shardlab-plan"'
	# with no reader: refused at once, not a hang
	run fifo_none "$SHARDLAB" solve mlp-2layer --json "$TMP/fifo"
	expect_status 3 fifo_none
	expect_in "$TMP/fifo_none.err" "a FIFO with no reader"
	# as an input: refused, not read forever
	run fifo_in "$SHARDLAB" solve "$TMP/fifo"
	expect_status 2 fifo_in
	expect_in "$TMP/fifo_in.err" "not a regular file"
fi

# -- a symbolic link is followed: the file it names is replaced, it stays
echo old >"$TMP/target.json"
ln -s target.json "$TMP/link.json"
run link "$SHARDLAB" solve mlp-2layer --json "$TMP/link.json" -q
expect_status 0 link
[ -L "$TMP/link.json" ] || fail "the symbolic link was replaced"
expect_in "$TMP/target.json" '"format": "shardlab-plan"'
ln -s missing.json "$TMP/dangling.json"
run dangling "$SHARDLAB" solve mlp-2layer --json "$TMP/dangling.json"
expect_status 3 dangling
expect_in "$TMP/dangling.err" "symbolic link to a missing file"

# -- the old file's mode is kept
echo old >"$TMP/private.json"
chmod 600 "$TMP/private.json"
run mode "$SHARDLAB" solve mlp-2layer --json "$TMP/private.json" -q
expect_status 0 mode
expect_eq "$(stat -c %a "$TMP/private.json")" 600 "mode of the replaced file"
chmod 640 "$TMP/private.json"
run mode2 "$SHARDLAB" sweep mlp-2layer --json "$TMP/private.json"
expect_eq "$(stat -c %a "$TMP/private.json")" 640 "mode after sweep --json"

# -- a read-only file is not replaced, even by root
echo keep >"$TMP/ro.json"
chmod 444 "$TMP/ro.json"
run ro "$SHARDLAB" solve mlp-2layer --json "$TMP/ro.json"
expect_status 3 ro
expect_in "$TMP/ro.err" "read-only"
expect_eq "$(cat "$TMP/ro.json")" keep "the read-only file"

# -- a directory is refused with its name
mkdir "$TMP/adir"
run dir "$SHARDLAB" solve mlp-2layer --json "$TMP/adir"
expect_status 3 dir
expect_in "$TMP/dir.err" "is a directory"

# -- the output may not be an input: the model is not lost
cp "$SHARDLAB_DATADIR/models/mlp-2layer.json" "$TMP/m.json"
run same "$SHARDLAB" solve "$TMP/m.json" --json "$TMP/m.json"
expect_status 2 same
expect_in "$TMP/same.err" "would overwrite an input"
cmp -s "$TMP/m.json" "$SHARDLAB_DATADIR/models/mlp-2layer.json" ||
	fail "the model was overwritten"
ln "$TMP/m.json" "$TMP/hard.json"
run same2 "$SHARDLAB" solve "$TMP/m.json" --json "$TMP/hard.json"
expect_status 2 same2

# -- every output against every input, by device and inode: a bundled model
# or profile named by its short name is its file (a copy of the data
# directory here, so that a failure loses nothing of the tree), a trace
# over the model or the plan, -o over the Hugging Face config or the model
# rendered, a link to the model; nothing is written
D=$TMP/data
cp -R "$SHARDLAB_DATADIR" "$D"
cp "$TMP/m.json" "$TMP/m.orig"
"$SHARDLAB" solve "$TMP/m.json" --json "$TMP/mp.json" -q || fail "solve"
cp "$TMP/mp.json" "$TMP/mp.orig"
printf '{"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 512, "n_positions": 32}\n' >"$TMP/hf.json"
cp "$TMP/hf.json" "$TMP/hf.orig"
ln -s "$TMP/m.json" "$TMP/mlink.json"
i=0
while IFS='|' read -r what args; do
	i=$((i + 1))
	# shellcheck disable=SC2086
	SHARDLAB_DATADIR=$D run "in$i" "$SHARDLAB" $args
	expect_status 2 "in$i"
	expect_in "$TMP/in$i.err" "$what would overwrite an input of the command ("
done <<CASES
--json|solve mlp-2layer --json $D/models/mlp-2layer.json
--json|solve mlp-2layer --json $D/hardware/h100-nvlink.json
--json|compare mlp-2layer --hw a100-pcie --json $D/hardware/a100-pcie.json
--trace|timeline $TMP/m.json --trace $TMP/m.json
--trace|timeline $TMP/m.json --plan $TMP/mp.json --trace $TMP/mp.json
-o|gen gpt --hf-config $TMP/hf.json -o $TMP/hf.json
-o|render $TMP/m.json --format dot -o $TMP/m.json
--json|solve $TMP/mlink.json --json $TMP/m.json
--export-problem|solve mlp-2layer --export-problem $D/models/mlp-2layer.json
-o|plan gpt-1.7b --devices 8 -o $D/models/gpt-1.7b.json
CASES
cmp -s "$TMP/m.json" "$TMP/m.orig" || fail "the model was overwritten"
cmp -s "$TMP/mp.json" "$TMP/mp.orig" || fail "the plan was overwritten"
cmp -s "$TMP/hf.json" "$TMP/hf.orig" || fail "the config was overwritten"
diff -r "$SHARDLAB_DATADIR" "$D" >/dev/null || fail "the data directory changed"

# -- a 254-character name: the temporary name stays within NAME_MAX
long=$(printf '%0250d' 0).json
run long "$SHARDLAB" solve mlp-2layer --json "$TMP/$long" -q
expect_status 0 long
expect_in "$TMP/$long" '"format": "shardlab-plan"'
expect_eq "$(ls -A "$TMP" | grep -c '^\.')" 0 "temporary files left"

# -- standard output that cannot be written: status 3, said on stderr
if [ -w /dev/full ]; then
	for c in "solve mlp-2layer" "sweep mlp-2layer" "compare mlp-2layer" \
	    "show mlp-2layer" "explain mlp-2layer --op fc1" "gen gpt" "--help" \
	    "help" "--version" "solve mlp-2layer --json -"; do
		n=stdout_$(echo "$c" | tr -c 'a-z0-9\n' _)
		# shellcheck disable=SC2086
		rc=0
		"$SHARDLAB" $c >/dev/full 2>"$TMP/$n.err" || rc=$?
		expect_eq "$rc" 3 "shardlab $c >/dev/full: exit status"
		expect_in "$TMP/$n.err" "No space left on device"
	done
fi

# -- inputs that would never end or never come
run zero "$SHARDLAB" show /dev/zero
expect_status 2 zero
expect_in "$TMP/zero.err" "not a regular file"
head -c 3000000 /dev/zero | tr '\0' ' ' >"$TMP/spaces.json"
SHARDLAB_MAX_INPUT=1MiB run big "$SHARDLAB" show "$TMP/spaces.json"
expect_status 2 big
expect_in "$TMP/big.err" "the file is too large"
{ cat "$TESTS_SRCDIR/data/iopddl/example.json" "$TMP/spaces.json"; } |
	gzip -c >"$TMP/bomb.json.gz"
SHARDLAB_MAX_INPUT=1MiB run bomb "$SHARDLAB" solve "$TMP/bomb.json.gz"
expect_status 2 bomb
expect_in "$TMP/bomb.err" "inflates to more than 1.00 MiB"
# the same within the default limit is a good problem
run unbomb "$SHARDLAB" solve "$TMP/bomb.json.gz"
expect_status 0 unbomb
expect_in "$TMP/unbomb.out" "objective: 445"

# -- render: a full disk is status 3 naming the file; a signal leaves nothing
if [ -w /dev/full ]; then
	run rfull "$SHARDLAB" render mlp-2layer --format svg -o /dev/full
	expect_status 3 rfull
	expect_in "$TMP/rfull.err" "/dev/full"
fi
mkdir "$TMP/r"
"$SHARDLAB" gen gpt --layers 48 -o "$TMP/g48.json" -q
"$SHARDLAB" render "$TMP/g48.json" --format svg -o "$TMP/r/g.svg" \
	>/dev/null 2>&1 &
pid=$!
sleep 1
kill -TERM $pid 2>/dev/null
wait $pid
# whatever the moment of the signal: no temporary file, and a file only
# when it is whole
left=$(ls -A "$TMP/r" | grep -v '^g\.svg$')
expect_eq "$left" "" "files left by a render stopped by SIGTERM"
if [ -e "$TMP/r/g.svg" ]; then
	tail -c 20 "$TMP/r/g.svg" | grep -q '</svg>' || fail "a partial g.svg"
fi

# -- any signal that ends the process by default, caught when the temporary
# file is there (the render lays the graph out after opening it): the file
# is removed (SIGUSR1 and SIGALRM left it)
for sig in USR1 ALRM USR2 VTALRM PROF QUIT XCPU TERM RTMIN RTMAX; do
	kill -l "$sig" >/dev/null 2>&1 || continue
	mkdir "$TMP/s$sig"
	"$SHARDLAB" render "$TMP/g48.json" --format svg -o "$TMP/s$sig/g.svg" \
		>/dev/null 2>&1 &
	pid=$!
	i=0
	while [ -z "$(ls -A "$TMP/s$sig")" ] && [ $i -lt 400 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	seen=$(ls -A "$TMP/s$sig")
	kill -s "$sig" $pid 2>/dev/null
	wait $pid
	case $seen in .g.svg.*) ;; *) fail "SIG$sig: no temporary file to remove (saw '$seen')" ;; esac
	left=$(ls -A "$TMP/s$sig" | grep -v '^g\.svg$')
	expect_eq "$left" "" "files left by a render stopped by SIG$sig"
done

# -- names with control characters never reach the terminal raw
esc=$(printf 'x\033[2J\001y')
run gen_esc "$SHARDLAB" gen gpt --name "$esc" -o "$TMP/esc.json" -q
expect_status 0 gen_esc
for c in show solve sweep compare; do
	run "esc_$c" "$SHARDLAB" "$c" "$TMP/esc.json"
	expect_status 0 "esc_$c"
	expect_in "$TMP/esc_$c.out" 'x\x1b[2J\x01y'
	if grep -q "$(printf '\033')" "$TMP/esc_$c.out"; then
		fail "$c printed an escape character"
	fi
done
run esc_err "$SHARDLAB" solve "$TMP/esc.json" --pin "$(printf 'a\033]0;t\007')=dp"
expect_status 2 esc_err
expect_in "$TMP/esc_err.err" 'a\x1b]0;t\x07'
if grep -q "$(printf '\033')" "$TMP/esc_err.err"; then
	fail "an error message printed an escape character"
fi
# the newer surfaces: a model's name in timeline, a profile's name and the
# model named in plan, a config's _name_or_path in gen, file names in the
# "written to" lines, an operator's name in a render's labels (Graphviz
# dropped the label and printed its bytes raw, and the render exited 0)
noraw() {
	if grep -q "$(printf '\033')" "$1"; then
		fail "$2 printed an escape character: $(od -c "$1" | head -n 5)"
	fi
}
run esc_tl "$SHARDLAB" timeline "$TMP/esc.json" --devices 2
expect_status 0 esc_tl
expect_in "$TMP/esc_tl.out" 'model x\x1b[2J\x01y'
noraw "$TMP/esc_tl.out" timeline
sed 's/"name": "h100-nvlink"/"name": "h\\u001b]0;t\\u0007w"/' \
    "$SHARDLAB_DATADIR/hardware/h100-nvlink.json" >"$TMP/eschw.json"
grep -q 'u001b' "$TMP/eschw.json" || fail "no escape in the profile"
cp "$SHARDLAB_DATADIR/models/gpt-1.7b.json" "$TMP/$esc.json"
run esc_plan "$SHARDLAB" plan "$TMP/$esc.json" --devices 8 --hw "$TMP/eschw.json" --pp 2
expect_status 0 esc_plan
expect_in "$TMP/esc_plan.out" 'on 8 devices of h\x1b]0;t\x07w'
noraw "$TMP/esc_plan.out" plan
printf '{"model_type": "gpt2", "_name_or_path": "org/m\\u001b[31m", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 512, "n_positions": 32}\n' >"$TMP/eschf.json"
run esc_gen "$SHARDLAB" gen gpt --hf-config "$TMP/eschf.json" -o "$TMP/$esc.gen.json"
expect_status 0 esc_gen
expect_in "$TMP/esc_gen.err" 'x\x1b[2J\x01y.gen.json: m\x1b[31m'
noraw "$TMP/esc_gen.err" gen
run esc_written "$SHARDLAB" solve mlp-2layer --json "$TMP/$esc.plan.json"
expect_status 0 esc_written
expect_in "$TMP/esc_written.out" 'plan written to '"$TMP"'/x\x1b[2J\x01y.plan.json'
noraw "$TMP/esc_written.out" "solve --json"
run esc_trace "$SHARDLAB" timeline mlp-2layer --trace "$TMP/$esc.trace.json"
expect_status 0 esc_trace
expect_in "$TMP/esc_trace.out" 'trace written to '"$TMP"'/x\x1b[2J\x01y.trace.json'
noraw "$TMP/esc_trace.out" "timeline --trace"
printf '{"format": "shardlab-model", "version": 1, "name": "r",\n"tensors": [{"name": "x", "shape": [8, 64], "dtype": "bf16", "role": "input"}, {"name": "w", "shape": [64, 64], "dtype": "bf16", "role": "parameter"}, {"name": "h", "shape": [8, 64], "dtype": "bf16", "role": "activation"}],\n"ops": [{"name": "fc\\u001b[2J\\u0001", "kind": "matmul", "inputs": ["x", "w"], "outputs": ["h"]}]}\n' >"$TMP/escop.json"
for f in svg dot; do
	run "esc_render_$f" "$SHARDLAB" render "$TMP/escop.json" --format "$f" -o "$TMP/escop.$f"
	expect_status 0 "esc_render_$f"
	expect_in "$TMP/escop.$f" 'fc\x1b[2J\x01'
	noraw "$TMP/esc_render_$f.err" "render --format $f"
	noraw "$TMP/escop.$f" "the $f file"
done
# the sweep's JSON keeps the name, escaped as JSON
"$SHARDLAB" sweep "$TMP/esc.json" --json "$TMP/sweep.json"
expect_in "$TMP/sweep.json" '"model": "x\u001b[2J\u0001y"'
# a point of the frontier per line, as many as the table shows, and each
# alpha boundary in its shortest exact form: a point's upper end is the next
# one's lower end, character for character
"$SHARDLAB" sweep mlp-2layer --devices 4 >"$TMP/sw.txt"
"$SHARDLAB" sweep mlp-2layer --devices 4 --json "$TMP/sw.json"
n=$(sed -n 's/.*: \([0-9][0-9]*\) distinct plans.*/\1/p' "$TMP/sw.txt")
[ "${n:-0}" -ge 2 ] || fail "sweep: no frontier of two plans: $(cat "$TMP/sw.txt")"
expect_eq "$(grep -c '^    {"alpha_lo": ' "$TMP/sw.json")" "$n" "sweep points, one per line"
hi=$(sed -n 's/^    {"alpha_lo": [^,]*, "alpha_hi": \([^,]*\),.*/\1/p' "$TMP/sw.json" | head -n 1)
lo=$(sed -n 's/^    {"alpha_lo": \([^,]*\),.*/\1/p' "$TMP/sw.json" | sed -n 2p)
case $hi in [0-9]*) ;; *) fail "sweep: the first boundary is '$hi'" ;; esac
expect_eq "$lo" "$hi" "the first boundary written the same twice"

# -- a plan whose model changed since (sha256) but still maps: a warning
cp "$SHARDLAB_DATADIR/models/mlp-2layer.json" "$TMP/m2.json"
"$SHARDLAB" solve "$TMP/m2.json" --json "$TMP/m2plan.json" -q
echo >>"$TMP/m2.json"
run changed "$SHARDLAB" tui --plan "$TMP/m2plan.json"
expect_in "$TMP/changed.err" "the model changed since the plan was made"
expect_in "$TMP/changed.err" "m2plan.json:4:"

# -- options that do not apply, and numbers that are not plain decimals
run noapply "$SHARDLAB" gen gpt --mesh 2x2 --alpha 5 --pin x=y
expect_status 2 noapply
expect_in "$TMP/noapply.err" "option '--mesh' does not apply to 'gen'"
for v in 0x10 inf nan 1e999 ' 1' 1,5; do
	run alpha "$SHARDLAB" solve mlp-2layer --alpha "$v"
	expect_status 2 alpha
	expect_in "$TMP/alpha.err" "--alpha: expected a decimal number"
done
run alpha_ok "$SHARDLAB" solve mlp-2layer --alpha 1.5e3
expect_status 0 alpha_ok
expect_in "$TMP/alpha_ok.out" "alpha 1500"

done_ok
