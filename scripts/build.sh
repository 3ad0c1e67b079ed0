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
[ -f Makefile ] || "$top/configure" -q "$@"
make -j"$(nproc)" >/dev/null
