#!/usr/bin/env bash
# Installs the local ACME CA that the edge's ACME test obtains certificates
# from: Debian's pebble package (pebble and pebble-challtestsrv on $PATH).
# Idempotent: does nothing when both are there. Needs root (or sudo) and apt
# when it has to install.
#
# .ci/run calls it before the tests and then exports WAITROOM_REQUIRE_PEBBLE=1,
# so that the ACME test fails rather than skips if pebble is missing.
set -euo pipefail

if ! command -v pebble >/dev/null 2>&1 || ! command -v pebble-challtestsrv >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-pebble: pebble is missing and there is no apt-get to install it; install Debian's pebble package or put pebble and pebble-challtestsrv on \$PATH" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo="sudo"
    else
      echo "install-pebble: installing pebble needs root (or sudo)" >&2
      exit 1
    fi
  fi
  echo "install-pebble: installing pebble with apt-get"
  log="$(mktemp)"
  trap 'rm -f "$log"' EXIT
  if ! { $sudo apt-get update -qq &&
         $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pebble; } >"$log" 2>&1; then
    echo "install-pebble: apt-get failed to install pebble:" >&2
    cat "$log" >&2
    exit 1
  fi
  for bin in pebble pebble-challtestsrv; do
    if ! command -v "$bin" >/dev/null 2>&1; then
      echo "install-pebble: apt-get installed pebble but $bin is still not on \$PATH" >&2
      exit 1
    fi
  done
fi

# pebble has no --version flag; the package says which one it is.
version="$(dpkg-query -W -f='${Version}' pebble 2>/dev/null || echo "not from a Debian package")"
echo "install-pebble: pebble $version ($(command -v pebble))"
