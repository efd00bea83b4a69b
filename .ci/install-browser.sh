#!/usr/bin/env bash
# Installs the browser that edge/browsertest drives: Debian's chromium at
# /usr/bin/chromium (or the one $WAITROOM_CHROMIUM names, which must exist).
# Idempotent: does nothing when the browser is there. Needs root (or sudo)
# and apt when it has to install. Prints the browser's version.
#
# .ci/run calls it before the tests and then exports WAITROOM_REQUIRE_BROWSER=1,
# so that the browser tests fail rather than skip if it is missing.
set -euo pipefail

browser="${WAITROOM_CHROMIUM:-/usr/bin/chromium}"

if [ -n "${WAITROOM_CHROMIUM:-}" ] && [ ! -x "$browser" ]; then
  echo "install-browser: WAITROOM_CHROMIUM=$browser is not an executable file" >&2
  exit 1
fi

if [ ! -x "$browser" ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-browser: $browser is missing and there is no apt-get to install chromium; install it, or set WAITROOM_CHROMIUM" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo="sudo"
    else
      echo "install-browser: installing chromium needs root (or sudo)" >&2
      exit 1
    fi
  fi
  echo "install-browser: installing chromium with apt-get"
  log="$(mktemp)"
  trap 'rm -f "$log"' EXIT
  if ! { $sudo apt-get update -qq &&
         $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } >"$log" 2>&1; then
    echo "install-browser: apt-get failed to install chromium:" >&2
    cat "$log" >&2
    exit 1
  fi
  if [ ! -x "$browser" ]; then
    echo "install-browser: apt-get installed chromium but $browser is still missing" >&2
    exit 1
  fi
fi

# The Debian launcher script can print shell noise on stderr; the version is
# on stdout.
version="$("$browser" --version 2>/dev/null || true)"
if [ -z "$version" ]; then
  echo "install-browser: $browser does not run (--version printed nothing)" >&2
  exit 1
fi
echo "install-browser: $version ($browser)"
