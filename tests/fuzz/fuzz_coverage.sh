#!/bin/sh
# Proves that the fuzz build instruments the library and the extension, not only the harness:
# each libFuzzer target runs its committed corpus with -runs=0 and must report thousands of
# coverage counters (a harness-only build reports a few dozen) and a coverage after the corpus
# ("INITED cov:") of at least FUZZ_MIN_COV features. TAP output.
b=${top_builddir:-.}
s=${top_srcdir:-.}
min_counters=${FUZZ_MIN_COUNTERS:-2000}
min_cov=${FUZZ_MIN_COV:-200}
n=0
fail=0
echo "1..12"
for t in chunk:chunk frame:frame array:frame bcolz:bcolz sql:sql remote:remote; do
  name=${t%%:*}
  corpus=$s/tests/fuzz/corpus/${t#*:}
  log=$b/tests/fuzz/fuzz_coverage_$name.log
  "$b/tests/fuzz/fuzz_$name" -runs=0 "$corpus" >"$log" 2>&1
  counters=$(sed -n 's/.*Loaded [0-9]* modules *(\([0-9]*\) inline 8-bit counters).*/\1/p' "$log" | head -1)
  cov=$(sed -n 's/.*INITED cov: \([0-9]*\).*/\1/p' "$log" | head -1)
  n=$((n + 1))
  if [ "${counters:-0}" -ge "$min_counters" ]; then
    echo "ok $n - fuzz_$name: $counters coverage counters (>= $min_counters: library and extension instrumented)"
  else
    echo "not ok $n - fuzz_$name: ${counters:-no} coverage counters (< $min_counters), see $log"
    fail=1
  fi
  n=$((n + 1))
  if [ "${cov:-0}" -ge "$min_cov" ]; then
    echo "ok $n - fuzz_$name: the corpus reaches cov $cov (>= $min_cov)"
  else
    echo "not ok $n - fuzz_$name: the corpus reaches cov ${cov:-none} (< $min_cov), see $log"
    fail=1
  fi
done
exit $fail
