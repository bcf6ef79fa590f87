# lib.sh: helpers for the command-line tests (sourced).  Each check prints
# what was expected and what came, and the script exits 1 at the first
# failure; 77 means skipped (with the reason on stdout).
set -u
: "${SHARDLAB:?SHARDLAB must name the shardlab binary}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/shardlab-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
n_checks=0

fail() {
	echo "FAIL: $*"
	exit 1
}

skip() {
	echo "SKIP: $*"
	exit 77
}

# run NAME CMD...: runs CMD, keeping stdout in $TMP/NAME.out, stderr in
# $TMP/NAME.err and the exit status in $rc.
run() {
	name=$1
	shift
	rc=0
	"$@" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null || rc=$?
}

# expect_status N NAME: the last run of NAME exited with N.
expect_status() {
	n_checks=$((n_checks + 1))
	[ "$rc" -eq "$1" ] || {
		echo "--- stdout"; head -n 40 "$TMP/$2.out"
		echo "--- stderr"; head -n 40 "$TMP/$2.err"
		fail "$2: expected exit status $1, got $rc"
	}
}

# expect_in FILE TEXT: FILE contains TEXT (fixed string).
expect_in() {
	n_checks=$((n_checks + 1))
	grep -qF -- "$2" "$1" || {
		echo "--- $1"; head -n 60 "$1"
		fail "expected '$2' in $1"
	}
}

expect_not_in() {
	n_checks=$((n_checks + 1))
	if grep -qF -- "$2" "$1"; then
		fail "did not expect '$2' in $1"
	fi
}

# expect_eq ACTUAL EXPECTED WHAT
expect_eq() {
	n_checks=$((n_checks + 1))
	[ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"
}

# json_int FILE KEY: the first integer value of "KEY" in a JSON file (a
# line may hold a whole record: the first on it counts).
json_int() {
	grep -o "\"$2\": *-\{0,1\}[0-9][0-9]*" "$1" | head -n 1 | sed 's/.*: *//'
}

done_ok() {
	echo "PASS: $n_checks checks"
	exit 0
}
