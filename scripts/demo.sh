#!/bin/sh
# Installs what is missing, builds, and runs the demo in the sqlite3 shell.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh scripts/deps.sh
sh scripts/build.sh build
if [ -f sql/demo.sql ] && [ -x build/tests/make_demo ]; then
  mkdir -p demo
  build/tests/make_demo demo
  cd demo && sqlite3 -cmd ".load ../build/.libs/caterva" demo.db < ../sql/demo.sql
else
  sqlite3 :memory: ".load build/.libs/caterva" "SELECT 'caterva extension ' || caterva_version() || ' loaded';"
fi
