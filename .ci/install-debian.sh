#!/usr/bin/env bash
# Installs a Debian package that tests need, when any of the programs it
# provides is missing from $PATH:
#
#   bash .ci/install-debian.sh PACKAGE PROGRAM...
#
# such as "pebble pebble pebble-challtestsrv" (the local ACME CA of the
# edge's ACME test) or "podman podman" (the container image test).
# Idempotent: does nothing when every program is there. Needs root (or
# sudo) and apt when it has to install. Prints the package's version.
#
# .ci/run calls it before the tests and then sets the test's
# WAITROOM_REQUIRE_* variable, so that the test fails rather than skips if
# the program is missing.
set -euo pipefail

if [ "$#" -lt 2 ]; then
  echo "usage: install-debian.sh PACKAGE PROGRAM..." >&2
  exit 2
fi
package="$1"
shift

missing=""
for bin in "$@"; do
  command -v "$bin" >/dev/null 2>&1 || missing="$missing $bin"
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
  echo "install-debian: installing $package with apt-get (for$missing)"
  log="$(mktemp)"
  trap 'rm -f "$log"' EXIT
  if ! { $sudo apt-get update -qq &&
         $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$package"; } >"$log" 2>&1; then
    echo "install-debian: apt-get failed to install $package:" >&2
    cat "$log" >&2
    exit 1
  fi
  for bin in "$@"; do
    if ! command -v "$bin" >/dev/null 2>&1; then
      echo "install-debian: apt-get installed $package but $bin is still not on \$PATH" >&2
      exit 1
    fi
  done
fi

version="$(dpkg-query -W -f='${Version}' "$package" 2>/dev/null || echo "not from a Debian package")"
echo "install-debian: $package $version ($(command -v "$1"))"
