#!/bin/sh
# The manual pages as groff reads them: every page formats with no warning
# at all (-ww): no unknown macro, no character groff cannot set (a raw
# non-ASCII glyph must be written as an escape such as \[u2026]), no
# broken list.
. "$TESTS_SRCDIR/lib.sh"
command -v groff >/dev/null 2>&1 || skip "groff is not installed (Debian: groff-base)"
pages=0
for page in "$TESTS_SRCDIR"/../man/*.[1-9]; do
	[ -e "$page" ] || continue
	LC_ALL=C groff -ww -mandoc -Tutf8 -z "$page" >"$TMP/out" 2>"$TMP/err"
	[ -s "$TMP/err" ] && fail "groff warns about $(basename "$page"): $(head -n 3 "$TMP/err")"
	pages=$((pages + 1))
done
[ "$pages" -ge 3 ] || fail "only $pages manual pages found"
echo "PASS: $pages manual pages format without a warning"
