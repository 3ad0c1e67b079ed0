#!/bin/sh
# Installs the Debian 12 packages the project needs, when any is missing.
set -e
pkgs="build-essential autoconf automake libtool pkg-config libsqlite3-dev sqlite3 libmsgpack-dev
      libzstd-dev liblz4-dev zlib1g-dev python3 python3-numpy libpng-dev
      libsnappy-dev libblosc-dev libnetcdf-dev netcdf-bin libcurl4-openssl-dev
      python3-xarray python3-pandas python3-dask python3-distributed python3-cftime"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
