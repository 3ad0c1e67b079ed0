#!/bin/sh
# make fuzz: runs every libFuzzer target for FUZZ_SECONDS seconds, FUZZ_JOBS at a time, each on a
# copy of its committed corpus in FUZZ_DIR/<target> (new inputs are added there, never to the
# source tree), then prints the executions each reached. Crashes go to FUZZ_DIR/<target>/crash-*.
# Usage: fuzz_run.sh <corpus dir of the source tree> [target ...]
set -u
src=$1
shift
secs=${FUZZ_SECONDS:-30}
jobs=${FUZZ_JOBS:-1}
out=${FUZZ_DIR:-fuzz-work}
targets=${*:-chunk frame array bcolz sql remote}
mkdir -p "$out"
corpus_of() {
  case $1 in array) echo frame ;; *) echo "$1" ;; esac
}
run_one() {
  t=$1
  mkdir -p "$out/$t/corpus" "$out/$t/artifacts"
  # the grown corpus first (libFuzzer writes new inputs to the first directory)
  dict=
  [ -f "$src/../fuzz_$t.dict" ] && dict="-dict=$src/../fuzz_$t.dict"
  ./tests/fuzz/fuzz_$t -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    $dict -artifact_prefix="$out/$t/artifacts/" "$out/$t/corpus" "$src/$(corpus_of "$t")" \
    >"$out/$t/log" 2>&1
  echo "$?" >"$out/$t/rc"
}
running=0
for t in $targets; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait
    running=0
  fi
done
wait
status=0
printf '%-8s %12s %10s %8s %s\n' target executions exec/s cov result
for t in $targets; do
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t/log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/$t/log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$out/$t/log" | tail -1 | cut -d' ' -f2)
  rc=$(cat "$out/$t/rc" 2>/dev/null || echo 1)
  res=ok
  [ "$rc" = 0 ] || { res="FAILED (see $out/$t/log and $out/$t/artifacts)"; status=1; }
  printf '%-8s %12s %10s %8s %s\n' "$t" "${execs:-?}" "${speed:-?}" "${cov:-?}" "$res"
done
exit $status
