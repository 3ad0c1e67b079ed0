#!/bin/sh
# Builds in ./build (or $1) with extra configure arguments after it.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
shift 2>/dev/null || true
cd "$top"
[ -x configure ] || autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
mkdir -p "$dir"
cd "$dir"
# configure's "rm -f core" (for core dumps) complains about our core/ directory: keep its
# output in config.out and show it only when configure fails.
if [ ! -f Makefile ]; then
  "$top/configure" -q "$@" >config.out 2>&1 || { cat config.out; exit 1; }
fi
make -j"$(nproc)" >/dev/null
