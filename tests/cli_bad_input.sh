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
echo "part 1: $n bad model files, $failed failures"

# ---------------------------------------------------------------- part 2
# The corpus over every input type (tests/bad/README): each case one run of
# shardlab with its own expected status and message fragment.
D=$srcdir/bad
T=$tmp/corpus
mkdir -p "$T"
cp "$srcdir/data/iopddl/example.json" "$T/ex.json"
cp "$srcdir/data/iopddl/chain.json" "$T/chain.json"
cp "${SHARDLAB_DATADIR:-$srcdir/../data}/hardware/h100-nvlink.json" "$T/hw.json"
cp "${SHARDLAB_DATADIR:-$srcdir/../data}/models/mlp-2layer.json" "$T/model.json"
printf '{"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 512, "n_positions": 32, "n_inner": 256}\n' >"$T/hf.json"
if ! "$SHARDLAB" solve mlp-2layer --json "$T/plan.json" -q ||
    ! "$SHARDLAB" gen gpt --hf-config "$T/hf.json" >/dev/null; then
	echo "ERROR: the good inputs of the corpus are not accepted"
	exit 99
fi
n2=0
failed2=0
# A hung case must fail, not hang the suite.
tmo=
command -v timeout >/dev/null 2>&1 && tmo="timeout 60"

# bad STATUS FRAGMENT BASE SED ARGS...: one case (see tests/bad/README).
bad() {
	want_rc=$1 frag=$2 base=$3 script=$4
	shift 4
	n2=$((n2 + 1))
	F=$T/case$n2.json
	if [ "$base" != - ]; then
		if [ "$script" = - ]; then
			cp "$T/$base.json" "$F"
		else
			sed "$script" "$T/$base.json" >"$F"
		fi
		if cmp -s "$F" "$T/$base.json" && [ "$script" != - ]; then
			echo "FAIL: case $n2 ($*): the sed script changed nothing"
			failed2=$((failed2 + 1))
			return
		fi
	fi
	# shellcheck disable=SC2086
	$tmo "$SHARDLAB" "$@" >"$T/stdout" 2>"$T/stderr" </dev/null
	got=$?
	if [ $got -ne "$want_rc" ] || ! grep -q -F -- "$frag" "$T/stderr"; then
		echo "FAIL: case $n2: shardlab $*"
		echo "  expected: exit $want_rc, stderr containing \"$frag\""
		echo "  actual:   exit $got, stderr \"$(head -c 600 "$T/stderr")\""
		failed2=$((failed2 + 1))
	fi
	rm -f "$T/out.dot" "$T/out.png" "$T/x.json"
}

# The table.
while IFS=$tab read -r st frag base script args; do
	case $st in
	'#'* | '') continue ;;
	esac
	F=$T/case$((n2 + 1)).json	# the file bad() will make
	eval "set -- $args"
	bad "$st" "$frag" "$base" "$script" "$@"
done <"$D/cases.tsv"

# Every numeric field of a hardware profile, with values of every wrong kind.
for field in memory_bytes flops devices_per_node bandwidth latency; do
	case $field in
	memory_bytes) pat='"memory_bytes": 85018542080' ;;
	flops) pat='"flops": 989e12' ;;
	devices_per_node) pat='"devices_per_node": 8' ;;
	bandwidth) pat='"bandwidth": 450e9' ;;
	latency) pat='"latency": 3e-6' ;;
	esac
	for v in -1 0 1e-300 1e300 1.5 '"x"' true null '[]' '{}'; do
		case $field:$v in
		latency:0 | bandwidth:1.5 | flops:1.5 | latency:1.5) continue ;;
		esac
		case $v in
		'"x"' | true | null | '[]' | '{}') frag="\"$field\" must be a number" ;;
		-1) frag="\"$field\" must be greater than zero"
		    [ $field = latency ] && frag="\"latency\" must not be negative" ;;
		0) frag="\"$field\" must be greater than zero" ;;
		1e-300 | 1.5) frag="outside the plausible range"
		    case $field in memory_bytes | devices_per_node)
			frag="\"$field\" must be a whole number" ;; esac ;;
		*) frag="outside the plausible range" ;;
		esac
		bad 2 "$frag" hw "0,/$pat/s//${pat%%: *}: $v/" solve mlp-2layer --hw "$T/case$((n2 + 1)).json"
	done
done

# Every size of a Hugging Face config, with values of every wrong kind.
for key in hidden_size n_embd num_hidden_layers n_layer num_attention_heads \
    n_head num_key_value_heads intermediate_size n_inner vocab_size \
    max_position_embeddings n_positions n_ctx; do
	for v in -1 0 1.5 1e300 99999999999 '"64"' true '[]' '{}'; do
		case $key in
		n_embd | n_layer | n_head | n_inner | n_positions | vocab_size)
			script="s/\"$key\": [0-9]*/\"$key\": $v/" ;;
		*) script="s/^{/{\"$key\": $v, /" ;;
		esac
		bad 2 "\"$key\": expected a positive integer" hf "$script" \
		    gen gpt --hf-config "$T/case$((n2 + 1)).json"
	done
done

# Every numeric option, with values that are not plain decimal numbers in
# range (hexadecimal, infinity, NaN, signs, spaces, trailing text).
for opt in alpha:solve time-limit:solve threads:solve micro-batch:solve \
    mem-limit:solve mesh:solve devices:solve layers:gen hidden:gen heads:gen kv-heads:gen \
    ffn:gen vocab:gen seq:gen batch:gen steps:validate; do
	o=${opt%%:*} cmd=${opt#*:}
	for v in 0x10 inf nan -1 '' ' 5' 1e999 abc 5abc; do
		case $o:$v in
		alpha:-1 | alpha:' 5') frag="--alpha" ;;
		mesh:* | devices:*) frag="mesh" ;;
		*) frag="--$o" ;;
		esac
		case $o:$v in
		mesh:-1 | devices:-1) frag="negative" ;;
		esac
		if [ "$cmd" = gen ]; then
			bad 2 "$frag" - - gen gpt "--$o" "$v"
		elif [ "$cmd" = validate ]; then
			bad 2 "$frag" plan - validate "$T/case$((n2 + 1)).json" "--$o" "$v"
		else
			bad 2 "$frag" - - "$cmd" mlp-2layer "--$o" "$v"
		fi
	done
done

# Options on subcommands they do not apply to.
for oc in "gen gpt|--mesh 2x2" "gen gpt|--alpha 5" "gen gpt|--pin x=y" \
    "gen gpt|--solver ilp" "gen gpt|--json $T/x.json" "show mlp-2layer|--alpha 5" \
    "show mlp-2layer|--pin fc1=dp" "show mlp-2layer|--hw h100-nvlink" \
    "sweep mlp-2layer|--alpha 5" "sweep mlp-2layer|--time-limit 5" \
    "sweep mlp-2layer|--mem-limit 1GiB" "solve mlp-2layer|--layers 2" \
    "solve mlp-2layer|--plan x" "solve mlp-2layer|--format svg" \
    "compare mlp-2layer|--time-limit 5" "compare mlp-2layer|--op fc1" \
    "sweep mlp-2layer|--threads 2" "render mlp-2layer|--threads 2" \
    "explain mlp-2layer|--json $T/x.json" "render mlp-2layer|--json $T/x.json" \
    "validate x.json|--alpha 5" "validate x.json|--mesh 2" "solve mlp-2layer|-o x.json" \
    "solve mlp-2layer|--hf-config x.json" "solve mlp-2layer|--emulate" \
    "tui|--export-problem x.json" "show mlp-2layer|-q"; do
	c=${oc%%|*} opt=${oc#*|}
	# shellcheck disable=SC2086
	bad 2 "does not apply to '${c%% *}'" - - $c $opt
done

# Every kind of input given as something that is not a regular file.
mkfifo "$T/fifo" 2>/dev/null
mkdir -p "$T/dir"
: >"$T/empty.json"
for how in /dev/zero "$T/fifo" "$T/dir" "$T/empty.json" "$T/missing.json"; do
	case $how in
	/dev/zero | "$T/fifo") frag="not a regular file" ;;
	"$T/dir") frag="directory" ;;
	"$T/empty.json") frag="empty" ;;
	*) frag="No such file" ;;
	esac
	[ -e "$how" ] || [ "$how" = "$T/missing.json" ] || continue
	m=$frag
	[ "$how" = "$T/missing.json" ] && m="cannot open"
	[ "$how" = "$T/missing.json" ] || [ "$how" = "$T/dir" ] || m=$frag
	case $how in "$T/missing.json") mm="nosuch" ;; *) mm=$m ;; esac
	bad 2 "$m" - - solve "$how" --hw "$T/hw.json"
	bad 2 "$m" - - show "$how"
	bad 2 "$frag" - - solve mlp-2layer --hw "$how"
	bad 2 "$frag" - - validate "$how"
	bad 2 "$frag" - - tui --plan "$how"
	bad 2 "$frag" - - gen gpt --hf-config "$how"
done
# A pipeline plan where a whole-model plan is read: said so, exit 2.
pipe=$srcdir/data/fidelity/pipe/1f1b-v1-m8.json
bad 2 "$pipe: a pipeline plan" - - validate "$pipe"
bad 2 "$pipe: a pipeline plan" - - timeline gpt-1.7b --plan "$pipe" --devices 1
# An input too large for SHARDLAB_MAX_INPUT, plain and inflated from gzip.
head -c 70000 /dev/zero | tr '\0' ' ' >"$T/big.json"
SHARDLAB_MAX_INPUT=64KiB bad 2 "the file is too large" - - show "$T/big.json"
cat "$T/ex.json" "$T/big.json" | gzip -c >"$T/big.json.gz"
SHARDLAB_MAX_INPUT=64KiB bad 2 "inflates to more than" - - solve "$T/big.json.gz"

echo "part 2: $n2 cases, $failed2 failures"
if [ $n2 -lt 300 ]; then
	echo "ERROR: only $n2 cases in the corpus of part 2"
	exit 99
fi
[ $failed -eq 0 ] && [ $failed2 -eq 0 ]
