#!/bin/sh
# make soak-write: the write path's differential tests run again and again with other random
# seeds and thread counts -- test_sql_write_diff.py (random statement sequences against a
# plain-table model; CATERVA_WRITE_SEED) and test_sql_write_order.py (chunks left written in
# part and handed to the write-behind worker; CATERVA_ORDER_SEED) -- and a summary line
# "soak: N runs, N failed". A run fails with a failed check, without a plan of at least one
# check (a test that skipped, or stopped early), or with a ThreadSanitizer report on its
# stderr (a build with -fsanitize=thread and SAN_PRELOAD=libtsan); its first failed lines are
# printed with its seed and thread count, to be replayed with the same variables.
# Environment: what TESTS_ENVIRONMENT exports (top_srcdir, top_builddir, PYTHONPATH,
# CATERVA_PRELOAD in sanitizer builds), PYTHON3; SOAK_SEEDS (seeds per thread count, default
# 40), SOAK_FIRST (the first seed, default 20261401), SOAK_THREADS (default "2 4"),
# SOAK_STEPS (statements of each write_diff run, default 4000).
set -u
py=${PYTHON3:-python3}
n=${SOAK_SEEDS:-40}
first=${SOAK_FIRST:-20261401}
steps=${SOAK_STEPS:-4000}
runs=0
failed=0
one() { # one run: label, then the environment assignments and the script
  label=$1
  shift
  out=$(env "$@" 2>&1)
  runs=$((runs + 1))
  if ! printf '%s\n' "$out" | grep -q '^1\.\.[1-9]' ||
    printf '%s\n' "$out" | grep -q '^not ok\|ThreadSanitizer'; then
    failed=$((failed + 1))
    echo "FAILED: $label"
    printf '%s\n' "$out" | grep '^not ok\|^1\.\.\|Error\|error\|ThreadSanitizer' | head -5
  fi
}
for t in ${SOAK_THREADS:-2 4}; do
  i=0
  while [ "$i" -lt "$n" ]; do
    s=$((first + i))
    one "test_sql_write_diff.py CATERVA_WRITE_SEED=$s CATERVA_WRITE_STEPS=$steps CATERVA_THREADS=$t" \
      CATERVA_WRITE_SEED=$s CATERVA_WRITE_STEPS=$steps CATERVA_THREADS=$t \
      "$py" "$top_srcdir/tests/sql/test_sql_write_diff.py"
    one "test_sql_write_order.py CATERVA_ORDER_SEED=$s CATERVA_THREADS=$t" \
      CATERVA_ORDER_SEED=$s CATERVA_THREADS=$t "$py" "$top_srcdir/tests/sql/test_sql_write_order.py"
    i=$((i + 1))
  done
done
echo "soak: $runs runs, $failed failed (seeds $first..$((first + n - 1)), threads ${SOAK_THREADS:-2 4})"
[ "$failed" -eq 0 ]
