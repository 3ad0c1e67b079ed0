#!/bin/sh
# The extension loads into the sqlite3 shell and answers.
ext="${top_builddir:-.}/.libs/caterva"
if [ ! -x "${SQLITE3_SHELL:-/nonexistent}" ]; then
  echo "1..0 # SKIP sqlite3 shell not found"
  exit 0
fi
out=$(env ${CATERVA_PRELOAD:+LD_PRELOAD=$CATERVA_PRELOAD} "$SQLITE3_SHELL" :memory: ".load $ext" "SELECT caterva_version();" 2>&1)
if [ -n "$out" ] && [ "$out" = "$(grep -m1 PACKAGE_VERSION "${top_builddir:-.}/config.h" | sed 's/.*"\(.*\)"/\1/')" ]; then
  echo "ok 1 - .load caterva; caterva_version() = $out"
else
  echo "not ok 1 - .load caterva failed: $out"
fi
echo "1..1"
