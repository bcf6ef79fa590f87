#!/bin/sh
# bench_iopddl.sh DIR: solves every contest instance in DIR (the IOPDDL
# public subset, asplos-2025-iopddl-*.json.gz) at its contest time limit,
# read from DIR/README.md with the best known cost, and prints cost, ratio
# to the best known, time to the first feasible plan, lower bound, wall
# time and peak memory (maximum resident set size).
#
# Environment: SHARDLAB (the program), BENCH_SCALE (multiplies every time
# limit, default 1), BENCH_SOLVER (default auto).  A benchmark, not a test:
# it asserts nothing.
set -u
DIR=${1:-../shared/iopddl}
SHARDLAB=${SHARDLAB:-./shardlab}
SCALE=${BENCH_SCALE:-1}
SOLVER=${BENCH_SOLVER:-auto}
README="$DIR/README.md"
if [ ! -r "$README" ]; then
	echo "bench-iopddl: $README is not readable; set SHARED_DIR" >&2
	exit 77
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench-iopddl.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
TIME=
[ -x /usr/bin/time ] && TIME=/usr/bin/time

num() { sed -n "s/.*\"$2\": *\(-\{0,1\}[0-9.][0-9.e+]*\).*/\1/p" "$1" | head -n 1; }

printf '%-8s %6s %6s %16s %16s %8s %9s %16s %8s %8s %9s\n' \
	instance nodes limit cost "best known" ratio "first ms" bound gap \
	"wall s" "RSS MB"
# rows of the README's table: | file | model | mesh | nodes | edges | avg | limit | best | xla |
grep '^| asplos-2025-iopddl-' "$README" | while IFS='|' read -r _ file _ _ nodes _ _ limit best _; do
	file=$(echo "$file" | tr -d ' ')
	nodes=$(echo "$nodes" | tr -d ' ,')
	limit=$(echo "$limit" | tr -d ' s')
	best=$(echo "$best" | tr -d ' ,')
	name=$(echo "$file" | sed 's/asplos-2025-iopddl-\(.*\)\.json\.gz/\1/')
	[ -r "$DIR/$file" ] || continue
	lim=$(awk -v l="$limit" -v s="$SCALE" 'BEGIN { printf "%g", l * s }')
	t0=$(date +%s.%N)
	if [ -n "$TIME" ]; then
		$TIME -f %M -o "$TMP/rss" "$SHARDLAB" solve "$DIR/$file" \
			--solver "$SOLVER" --time-limit "$lim" --json "$TMP/plan.json" \
			>"$TMP/out" 2>"$TMP/err"
	else
		"$SHARDLAB" solve "$DIR/$file" --solver "$SOLVER" \
			--time-limit "$lim" --json "$TMP/plan.json" >"$TMP/out" 2>"$TMP/err"
		echo 0 >"$TMP/rss"
	fi
	rc=$?
	t1=$(date +%s.%N)
	if [ "$rc" -ne 0 ] || [ ! -s "$TMP/plan.json" ]; then
		printf '%-8s %6s %6s  no plan (exit %d): %s\n' "$name" "$nodes" \
			"$lim" "$rc" "$(tail -n 1 "$TMP/err")"
		continue
	fi
	cost=$(num "$TMP/plan.json" cost)
	bound=$(num "$TMP/plan.json" bound)
	first=$(num "$TMP/plan.json" first_plan_ms)
	rss=$(tail -n 1 "$TMP/rss")
	awk -v n="$name" -v nodes="$nodes" -v lim="$lim" -v c="$cost" \
	    -v b="$best" -v f="$first" -v lb="${bound:-}" -v t0="$t0" \
	    -v t1="$t1" -v rss="$rss" 'BEGIN {
		gap = lb == "" ? "-" : sprintf("%.1f%%", 100 * (c - lb) / c);
		printf "%-8s %6s %6s %16s %16s %8.4f %9.1f %16s %8s %8.1f %9.0f\n",
		    n, nodes, lim, c, b, c / b, f, lb == "" ? "-" : lb, gap,
		    t1 - t0, rss / 1024 }'
	rm -f "$TMP/plan.json"
done
