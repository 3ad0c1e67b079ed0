#!/bin/sh
# Installs what the remote tests (tests/remote/) need, only what is missing, so it can run every time.
#
#   sh tests/remote/deps.sh [NODE_DIR]
#
# Debian packages (checked with dpkg-query; "apt-get update" runs only when one is missing):
#   nginx-light  a small nginx (HTTP/1.1 with ranges, HTTPS, HTTP/2) that the tests start on 127.0.0.1
#                with their own config file; falls back to the "nginx" package where the release has no
#                nginx-light. The packaged service is never started: while installing, a policy-rc.d
#                that refuses service starts is put in place when the machine has none.
#   openssl      makes the throwaway CA and the server certificate for the HTTPS tests.
#   curl         the command-line client of the infrastructure's self-test and of the benchmark.
#   python3      runs servers.py (the servers, the SigV4-checking front and the fault front).
#   python3-h2   the HTTP/2 protocol for our HTTP/2 server (h2front.py) of the hostile-server test.
#   nodejs, npm  only when there is no "node" (or no "npm") at all: s3rver runs on Node.js.
# npm package (into NODE_DIR, never globally; default: $BUILD/remote-node, $BUILD defaulting to the
# repository's build/ folder, which git ignores):
#   s3rver, pinned below: an S3-API server for s3:// URLs. It does not check SigV4 signatures and gets
#   suffix and multiple ranges wrong; servers.py puts its own signature-checking front before it.
# Prints where s3rver is; servers.py finds it there by itself (or through $S3RVER).
set -e
S3RVER_VERSION=3.7.1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
node_dir=${1:-${BUILD:-$root/build}/remote-node}

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }

missing=""
installed nginx-light || installed nginx || installed nginx-core || missing="$missing nginx"
for p in openssl curl python3 python3-h2; do
  installed "$p" || missing="$missing $p"
done
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"

if [ -n "$missing" ]; then
  $SUDO apt-get update -qq
  pkgs=""
  for p in $missing; do
    if [ "$p" = nginx ]; then
      # nginx-light when the release has it (Debian 12 does), else the plain nginx package.
      if apt-cache policy nginx-light 2>/dev/null | grep -q 'Candidate: [0-9]'; then
        p=nginx-light
      fi
    fi
    pkgs="$pkgs $p"
  done
  echo "installing:$pkgs"
  made_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    # Keep the nginx package from starting its system service on port 80 (code 101: action forbidden).
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  status=0
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $pkgs >/dev/null \
    || status=$?
  [ -n "$made_policy" ] && $SUDO rm -f /usr/sbin/policy-rc.d
  [ "$status" -eq 0 ] || { echo "apt-get install failed ($status)"; exit "$status"; }
fi

echo "node $(node --version)"

# s3rver, pinned, in its own folder.
pkg_json="$node_dir/node_modules/s3rver/package.json"
have=""
[ -f "$pkg_json" ] && have=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkg_json" | head -n 1)
if [ "$have" != "$S3RVER_VERSION" ]; then
  echo "installing s3rver@$S3RVER_VERSION into $node_dir"
  mkdir -p "$node_dir"
  npm install --prefix "$node_dir" "s3rver@$S3RVER_VERSION" --no-audit --no-fund --loglevel=error >/dev/null
fi
echo "s3rver $S3RVER_VERSION: $node_dir/node_modules/.bin/s3rver"
