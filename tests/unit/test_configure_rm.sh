#!/bin/sh
# configure's rm (configure.ac, issue 39): autoconf's tests run "rm -f core ..." to remove core
# dumps, which met our core/ folder ("rm: cannot remove 'core': Is a directory", 25 times in a
# configure run in the source tree). The generated configure defines an rm that leaves "core"
# out while core is a directory; this runs that very function (TAP).
conf="${top_srcdir:-.}/configure"
n=0
check() {
  n=$((n + 1))
  if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}
if [ ! -f "$conf" ]; then
  echo "1..0 # SKIP no configure script at $conf"
  exit 0
fi
fn=$(sed -n '/^rm () {$/,/^}$/p' "$conf")
[ -n "$fn" ]
check $? "configure defines its rm"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/caterva-rm.XXXXXX") || exit 99
trap 'command rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99
mkdir core && touch conftest.err "two words" core.conftest.1
out=$(eval "$fn"; rm -f core conftest.err "two words" core.conftest.* 2>&1)
[ -z "$out" ] && [ -d core ] && [ ! -e conftest.err ] && [ ! -e "two words" ] && [ ! -e core.conftest.1 ]
check $? "rm -f core ... with a core directory: silent, the directory kept, the other files removed"
out=$(command rm -f core 2>&1)
[ -n "$out" ]
check $? "the plain rm -f core complains about the directory (what configure's rm avoids): $out"
command rm -rf core && touch core
(eval "$fn"; rm -f core conftest.err)
[ ! -e core ]
check $? "without a core directory, a core file is removed as before"
echo "1..$n"
