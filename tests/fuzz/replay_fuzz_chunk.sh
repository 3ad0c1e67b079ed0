#!/bin/sh
# Replays the chunk fuzz corpus through the fuzz target (no libFuzzer needed).
exec "${top_builddir:-.}/tests/fuzz/replay_fuzz_chunk" "${top_srcdir:-.}/tests/fuzz/corpus/chunk"
