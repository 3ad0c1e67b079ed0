#!/bin/sh
# Installs what is missing, builds, writes the demo data into ./demo (a year of daily
# temperatures and precipitation, 365 x 180 x 360 float32 each, and a stations table;
# tests/tools/mkdemo) and runs sql/demo.sql in the sqlite3 shell from there, which also draws
# demo/july15.png (copied to docs/july15.png for the README). Set DEMO_SHELL to use another
# sqlite3.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh scripts/deps.sh
sh scripts/build.sh build
if [ ! -f demo/temp.b2nd ] || [ ! -f demo/precip.b2nd ] || [ ! -f demo/stations.sql ] ||
   [ build/tests/tools/mkdemo -nt demo/temp.b2nd ]; then
  echo "writing demo/temp.b2nd and demo/stations.sql ..."
  build/tests/tools/mkdemo demo
fi
cd demo
"${DEMO_SHELL:-sqlite3}" :memory: < ../sql/demo.sql
# The picture the README shows (sql/demo.sql writes it with caterva_png and writefile).
if [ -f july15.png ]; then mkdir -p ../docs && cp july15.png ../docs/july15.png; fi
