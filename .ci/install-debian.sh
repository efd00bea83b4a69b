#!/usr/bin/env bash
# Installs a Debian package that tests need, when any of the programs it
# provides is missing:
#
#   bash .ci/install-debian.sh PACKAGE PROGRAM...
#
# A PROGRAM is a name looked up on $PATH ("pebble") or an absolute path
# ("/usr/sbin/nginx"). Such as "pebble pebble pebble-challtestsrv" (the
# local ACME CA of the edge's ACME test) or "podman podman" (the container
# image test); install-browser.sh and install-proxies.sh use it too.
# Idempotent: does nothing when every program is there. Needs root (or
# sudo) and apt when it has to install. Prints the package's version.
#
# Tests start the programs themselves, on free loopback ports with their
# own configuration; they never use a system service. Some packages' install
# scripts would start one (nginx on port 80), so services are kept from
# starting while the package is installed.
#
# .ci/run calls it (or the scripts above) before the tests and then sets the
# test's WAITROOM_REQUIRE_* variable, so that the test fails rather than
# skips if the program is missing.
set -euo pipefail

if [ "$#" -lt 2 ]; then
  echo "usage: install-debian.sh PACKAGE PROGRAM..." >&2
  exit 2
fi
package="$1"
shift

# found PROGRAM: whether the program is there, by path or on $PATH.
found() {
  case "$1" in
    /*) [ -x "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

missing=""
for bin in "$@"; do
  found "$bin" || missing="$missing $bin"
done

if [ -n "$missing" ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-debian: $package is needed for$missing and there is no apt-get to install it" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo="sudo"
    else
      echo "install-debian: installing $package needs root (or sudo)" >&2
      exit 1
    fi
  fi
  log="$(mktemp)"
  policy=/usr/sbin/policy-rc.d
  made_policy=""
  cleanup() {
    rm -f "$log"
    if [ -n "$made_policy" ]; then $sudo rm -f "$policy"; fi
  }
  trap cleanup EXIT
  if [ ! -e "$policy" ]; then
    # 101: "action not allowed": invoke-rc.d starts no service.
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod 755 "$policy"
    made_policy=1
  fi
  echo "install-debian: installing $package with apt-get (for$missing)"
  if ! { $sudo apt-get update -qq &&
         $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$package"; } >"$log" 2>&1; then
    echo "install-debian: apt-get failed to install $package:" >&2
    cat "$log" >&2
    exit 1
  fi
  for bin in "$@"; do
    if ! found "$bin"; then
      echo "install-debian: apt-get installed $package but $bin is still missing" >&2
      exit 1
    fi
  done
fi

version="$(dpkg-query -W -f='${Version}' "$package" 2>/dev/null || echo "not from a Debian package")"
where="$1"
case "$where" in /*) ;; *) where="$(command -v "$where")" ;; esac
echo "install-debian: $package $version ($where)"
