#!/bin/sh
# Installs what is missing, builds, and runs the whole test suite twice: once normally and
# once with AddressSanitizer + UndefinedBehaviorSanitizer. Ends with "N passed, N failed".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh scripts/deps.sh || exit 1
# the servers of the remote-array tests: nginx, openssl, curl, and s3rver from npm into build/
sh tests/remote/deps.sh "$top/build/remote-node" >/dev/null || exit 1
passed=0
failed=0
status=0
run_suite() {
  dir=$1
  shift
  sh scripts/build.sh "$dir" "$@" || { echo "build in $dir failed"; failed=$((failed + 1)); status=1; return; }
  # $only: the tests to run (all when empty)
  (cd "$dir" && make -j"$(nproc)" check ${only:+"TESTS=$only"} >check.out 2>&1)
  rc=$?
  grep -E "^(FAIL|ERROR|XPASS):" "$dir/check.out"
  grep -E "^# (TOTAL|PASS|SKIP|FAIL|ERROR):" "$dir/check.out" | sed "s|^|[$dir] |"
  p=$(sed -n 's/^# PASS: *//p' "$dir/check.out")
  f=$(sed -n 's/^# FAIL: *//p' "$dir/check.out")
  e=$(sed -n 's/^# ERROR: *//p' "$dir/check.out")
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-0} + ${e:-0}))
  if [ $rc -ne 0 ]; then
    status=1
    [ -z "$p$f$e" ] && { tail -30 "$dir/check.out"; failed=$((failed + 1)); }
  fi
}
only=
run_suite build
run_suite build-san --enable-asan --enable-ubsan
# The build without libcurl (a documented configuration): it must build, refuse remote paths
# saying so, and read every golden file.
only="tests/sql/test_sql_nocurl.py tests/interop/test_sql_golden.py tests/sql/test_sql.sh"
run_suite build-nocurl --without-curl
echo "$passed passed, $failed failed"
exit $status
