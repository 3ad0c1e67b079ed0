#!/bin/sh
# Smoke test of the demo (TAP): tests/tools/mkdemo writes a smaller sample (365 days on a 5-degree
# grid) into a scratch directory laid out as scripts/demo.sh does (demo/ next to
# build/.libs/caterva.so), and sql/demo.sql runs through the sqlite3 shell without error.
srcdir="${top_srcdir:-.}"
builddir="${top_builddir:-.}"
ext="$builddir/.libs/caterva.so"
mkdemo="$builddir/tests/tools/mkdemo"
n=0

if [ ! -x "${SQLITE3_SHELL:-/nonexistent}" ]; then
  echo "1..0 # SKIP sqlite3 shell not found"
  exit 0
fi
if [ ! -f "$ext" ] || [ ! -x "$mkdemo" ]; then
  echo "1..0 # SKIP the extension or tests/tools/mkdemo is not built"
  exit 0
fi
case "$ext" in /*) ;; *) ext="$(pwd)/$ext" ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/caterva-demo.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/build/.libs"
ln -s "$ext" "$tmp/build/.libs/caterva.so"

check() {
  n=$((n + 1))
  if [ "$1" = 0 ]; then
    echo "ok $n - $2"
  else
    echo "not ok $n - $2"
    [ -f "$tmp/out" ] && sed 's/^/# /' "$tmp/out" | head -80
  fi
}

"$mkdemo" "$tmp/demo" 365 36 72 >"$tmp/out" 2>&1
check $? "mkdemo writes a 365x36x72 sample"
[ -f "$tmp/demo/temp.b2nd" ] && [ -f "$tmp/demo/precip.b2nd" ] && [ -f "$tmp/demo/stations.sql" ]
check $? "temp.b2nd and stations.sql exist"

(cd "$tmp/demo" && env ${CATERVA_PRELOAD:+LD_PRELOAD=$CATERVA_PRELOAD} \
   "$SQLITE3_SHELL" :memory: <"$srcdir/sql/demo.sql" >"$tmp/out" 2>&1)
status=$?
# Built without libpng, the demo's last statement (the picture) is the one that fails.
grep -q 'built without libpng' "$tmp/out" && status=0
check $status "sql/demo.sql runs in the sqlite3 shell (exit status $status)"

# Output that the demo must show, whatever the grid.
ok=0
for s in '\[365,36,72\]' 'degC' '^== One day' 'Run Time:' '^Yakutsk ' '^McMurdo Station ' '^07 ' '^== Two variables' \
         '^946080 '; do
  grep -q "$s" "$tmp/out" || { echo "# missing: $s"; ok=1; }
done
! grep -q 'Error\|Sanitizer\|runtime error' "$tmp/out" || ok=1
check $ok "the output has the file's info, timings, the stations join and the full scan"

# The picture (caterva_png): a PNG of the map with its colour bar, when built with libpng.
if grep -q 'built without libpng' "$tmp/out"; then
  echo "ok $((n = n + 1)) - july15.png # SKIP built without libpng"
else
  head -c 8 "$tmp/demo/july15.png" 2>/dev/null | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a'
  check $? "the demo draws july15.png (a PNG)"
fi
echo "1..$n"
