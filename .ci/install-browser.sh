#!/usr/bin/env bash
# Installs the browser that edge/browsertest drives: Debian's chromium at
# /usr/bin/chromium (or the one $WAITROOM_CHROMIUM names, which must exist),
# through install-debian.sh. Prints the browser's version.
#
# .ci/run calls it before the tests and then exports WAITROOM_REQUIRE_BROWSER=1,
# so that the browser tests fail rather than skip if it is missing.
set -euo pipefail

browser="${WAITROOM_CHROMIUM:-/usr/bin/chromium}"

if [ -n "${WAITROOM_CHROMIUM:-}" ] && [ ! -x "$browser" ]; then
  echo "install-browser: WAITROOM_CHROMIUM=$browser is not an executable file" >&2
  exit 1
fi
bash "$(dirname "$0")/install-debian.sh" chromium "$browser"

# The Debian launcher script can print shell noise on stderr; the version is
# on stdout.
version="$("$browser" --version 2>/dev/null || true)"
if [ -z "$version" ]; then
  echo "install-browser: $browser does not run (--version printed nothing)" >&2
  exit 1
fi
echo "install-browser: $version ($browser)"
