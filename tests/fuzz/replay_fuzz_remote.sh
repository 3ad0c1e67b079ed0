#!/bin/sh
# Replays the remote fuzz corpus (recorded exchanges and findings) through the fuzz target (no
# libFuzzer, no network: the answers are fed through socketpairs), then each finding whose fix
# gives an error of its own, which that error must name. TAP.
b=${top_builddir:-.}
s=${top_srcdir:-.}
replay=$b/tests/fuzz/replay_fuzz_remote
tmp=$(mktemp -d "${TMPDIR:-/tmp}/replay_fuzz_remote.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
"$replay" "$s/tests/fuzz/corpus/remote" >"$tmp/out"
rc=$?
grep -v '^1\.\.' "$tmp/out"
n=$(grep -c '^\(not \)\{0,1\}ok' "$tmp/out")
fail=0
[ "$rc" = 0 ] || fail=1
# finding (input in tests/fuzz/corpus/remote)   the error its fix gives
while read -r name expect; do
  n=$((n + 1))
  mkdir "$tmp/$n" && cp "$s/tests/fuzz/corpus/remote/$name" "$tmp/$n/"
  if FUZZ_REMOTE_EXPECT="$expect" "$replay" "$tmp/$n" >/dev/null 2>"$tmp/$n.err"; then
    echo "ok $n - $name: '$expect'"
  else
    echo "not ok $n - $name: no error said '$expect'"
    sed 's/^/# /' "$tmp/$n.err" | head -20
    fail=1
  fi
done <<'LIST'
regress_sparse_chunk_header_claims_2g bad compressed size
LIST
echo "1..$n"
exit $fail
