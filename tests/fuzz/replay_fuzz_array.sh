#!/bin/sh
# Replays the frame fuzz corpus through the array-level fuzz target (no libFuzzer needed).
exec "${top_builddir:-.}/tests/fuzz/replay_fuzz_array" "${top_srcdir:-.}/tests/fuzz/corpus/frame"
