#!/bin/sh
# SQL tests through the sqlite3 shell (TAP output).
#
# Each tests/sql/NAME.sql runs in a scratch directory holding the files that
# tests/sql/fixtures.py writes (and `golden`, a link to $CATERVA_GOLDEN); its output, with
# the library's detail after "cannot open ...: <error kind>" cut off, must equal
# tests/sql/NAME.expected. With CATERVA_SQL_UPDATE=1 the .expected files are rewritten.
srcdir="${top_srcdir:-.}"
builddir="${top_builddir:-.}"
ext="$builddir/.libs/caterva"
mkarray="$builddir/tests/tools/mkarray"
py="${PYTHON3:-python3}"
n=0

if [ ! -x "${SQLITE3_SHELL:-/nonexistent}" ]; then
  echo "1..0 # SKIP sqlite3 shell not found"
  exit 0
fi
if [ ! -f "$ext.so" ] || [ ! -x "$mkarray" ]; then
  echo "1..0 # SKIP the extension or tests/tools/mkarray is not built"
  exit 0
fi
case "$ext" in /*) ;; *) ext="$(pwd)/$ext" ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/caterva-sql.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
if ! "$py" "$srcdir/tests/sql/fixtures.py" "$tmp" "$mkarray" "${CATERVA_GOLDEN:-/nonexistent}" \
     >"$tmp/fixtures.log" 2>&1; then
  echo "not ok 1 - writing the fixtures"
  sed 's/^/# /' "$tmp/fixtures.log"
  echo "1..1"
  exit 0
fi
[ -d "${CATERVA_GOLDEN:-/nonexistent}" ] && ln -s "$CATERVA_GOLDEN" "$tmp/golden"

# Run the shell on stdin in the scratch directory.
run_shell() {
  (cd "$tmp" && env ${CATERVA_PRELOAD:+LD_PRELOAD=$CATERVA_PRELOAD} \
     "$SQLITE3_SHELL" -batch :memory: -cmd ".load $ext" 2>&1)
}

for sql in "$srcdir"/tests/sql/*.sql; do
  name=$(basename "$sql" .sql)
  n=$((n + 1))
  if [ "$name" = functions ] && [ ! -d "$tmp/golden" ]; then
    echo "ok $n - $name.sql # SKIP golden files not found"
    continue
  fi
  run_shell <"$sql" | sed 's/\(cannot open "[^"]*": [^:]*\): .*/\1/' >"$tmp/$name.out"
  if [ "${CATERVA_SQL_UPDATE:-0}" = 1 ]; then
    cp "$tmp/$name.out" "$srcdir/tests/sql/$name.expected"
  fi
  if diff -u "$srcdir/tests/sql/$name.expected" "$tmp/$name.out" >"$tmp/$name.diff" 2>&1; then
    echo "ok $n - $name.sql gives $name.expected"
  else
    echo "not ok $n - $name.sql gives $name.expected"
    sed 's/^/# /' "$tmp/$name.diff" | head -60
  fi
done

# A frame with damaged chunk data: every query either answers or fails with an error
# message; the shell never dies of a signal and the sanitizers stay quiet.
n=$((n + 1))
run_shell >"$tmp/damaged.out" <<'SQL'
CREATE VIRTUAL TABLE d USING caterva('damaged.b2nd');
CREATE VIRTUAL TABLE c USING caterva('damaged.b2nd', cache_mb=0);
SELECT count(*), sum(value) FROM d;
SELECT count(*), sum(value) FROM c;
SELECT sum(value) FROM d WHERE d0 IN (1, 20, 40) AND d1 < 30;
SELECT sum(value) FROM d WHERE d0 = 30 AND d1 = 30;
SELECT length(caterva_slice('damaged.b2nd'));
SELECT 'done';
SQL
status=$?
if [ $status -lt 128 ] && grep -q '^done$' "$tmp/damaged.out" &&
   ! grep -q 'Sanitizer\|runtime error' "$tmp/damaged.out"; then
  echo "ok $n - damaged chunk data gives errors, not crashes"
else
  echo "not ok $n - damaged chunk data gives errors, not crashes (status $status)"
  sed 's/^/# /' "$tmp/damaged.out" | head -20
fi
echo "1..$n"
