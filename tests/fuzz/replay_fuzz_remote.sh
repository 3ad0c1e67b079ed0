#!/bin/sh
# Replays the remote fuzz corpus (recorded exchanges and findings) through the fuzz target (no
# libFuzzer, no network: the answers are fed through a socketpair).
exec "${top_builddir:-.}/tests/fuzz/replay_fuzz_remote" "${top_srcdir:-.}/tests/fuzz/corpus/remote"
