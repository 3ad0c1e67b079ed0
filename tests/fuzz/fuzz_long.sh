#!/bin/sh
# make fuzz-long: runs one libFuzzer target for FUZZ_SECONDS seconds of wall time (default 3600)
# on a copy of its corpus in FUZZ_DIR/<target>, restarting it after a false timeout, and prints
# the executions of all its runs summed. Meant for volume, at nice 19, on a build without ASan
# (make FUZZ_SAN=undefined); replay the grown corpus in the ASan build afterwards
# (docs/testing.md, "Fuzzing for volume").
# A false timeout: a process stopped (SIGSTOP, as a benchmark lock does) inside an input is
# reported as a timeout when it goes on; the input is run again alone, and when it ends within
# the timeout the run is restarted (the log says so), else the loop stops with the input kept.
# The same holds for a slow input met while the machine was busy: one that ends within the
# timeout alone is not a hang. FUZZ_TIMEOUT: libFuzzer's -timeout in seconds (default 25).
# FUZZ_RSS_MB: libFuzzer's -rss_limit_mb (default 2048; fuzz_sql's growth of an array to a
# million chunks in one INSERT peaked at 2.8 GB before b51e1cb, 0.15 GB since).
# Usage: fuzz_long.sh <corpus dir of the source tree> <target>
set -u
src=$1
t=$2
secs=${FUZZ_SECONDS:-3600}
tmo=${FUZZ_TIMEOUT:-25}
out=${FUZZ_DIR:-fuzz-work}/$t
end=$(($(date +%s) + secs))
case $t in array) seeds=$src/frame ;; *) seeds=$src/$t ;; esac
dict=
[ -f "$src/../fuzz_$t.dict" ] && dict="-dict=$src/../fuzz_$t.dict"
mkdir -p "$out/corpus" "$out/artifacts"
n=0
status=0
while :; do
  left=$((end - $(date +%s)))
  [ "$left" -gt 30 ] || break
  n=$((n + 1))
  log=$out/log-$n
  ./tests/fuzz/fuzz_$t -max_total_time="$left" -print_final_stats=1 -timeout="$tmo" \
    -rss_limit_mb="${FUZZ_RSS_MB:-2048}" $dict -artifact_prefix="$out/artifacts/" "$out/corpus" "$seeds" \
    >"$log" 2>&1
  rc=$?
  [ "$rc" = 0 ] && break
  tu=$(ls -t "$out"/artifacts/timeout-* 2>/dev/null | head -1)
  if [ -n "$tu" ] && grep -q 'ERROR: libFuzzer: timeout' "$log" &&
     timeout "$tmo" ./tests/fuzz/fuzz_$t -runs=1 "$tu" >/dev/null 2>&1; then
    echo "fuzz_long: false timeout, $tu replays alone within $tmo s; restarted" >>"$log"
    mv "$tu" "$tu.false"
    continue
  fi
  echo "fuzz_long: a finding (exit $rc): see $log and $out/artifacts" >&2
  status=1
  break
done
total=$(cat "$out"/log-* | sed -n 's/^stat::number_of_executed_units: *//p' |
        awk '{s += $1} END {print s + 0}')
echo "fuzz_$t: $total executions in $n run(s); logs in $out/log-*"
exit $status
