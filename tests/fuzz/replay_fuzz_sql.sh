#!/bin/sh
# Replays the SQL fuzz corpus (an array file and a program of statements each) in-process.
exec "${top_builddir:-.}/tests/fuzz/replay_fuzz_sql" "${top_srcdir:-.}/tests/fuzz/corpus/sql"
