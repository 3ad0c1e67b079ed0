#!/bin/sh
# Replays the frame fuzz corpus through the fuzz target (no libFuzzer needed).
exec "${top_builddir:-.}/tests/fuzz/replay_fuzz_frame" "${top_srcdir:-.}/tests/fuzz/corpus/frame"
