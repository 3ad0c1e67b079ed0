#!/bin/sh
# Replays the bcolz fuzz corpus (meta files, chunk files, JSON) through the fuzz target.
exec "${top_builddir:-.}/tests/fuzz/replay_fuzz_bcolz" "${top_srcdir:-.}/tests/fuzz/corpus/bcolz"
