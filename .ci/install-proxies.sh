#!/usr/bin/env bash
# Installs the reverse proxies the forward-auth tests put in front of
# waitroom (edge/proxies_test.go): Debian's nginx at /usr/sbin/nginx and
# caddy at /usr/bin/caddy (or the binaries $WAITROOM_NGINX and
# $WAITROOM_CADDY name, which must exist). Idempotent: does nothing when
# both are there. Needs root (or sudo) and apt when it has to install.
# Prints their versions.
#
# The tests start their own nginx and caddy on free loopback ports, with
# their own configuration, prefix and pid file; they never use a system
# service. The packages' install scripts would start one (nginx on port
# 80), so services are kept from starting while they are installed.
#
# .ci/run calls it before the tests and then exports
# WAITROOM_REQUIRE_PROXIES=1, so that the tests fail rather than skip if
# a proxy is missing.
set -euo pipefail

nginx_bin="${WAITROOM_NGINX:-/usr/sbin/nginx}"
caddy_bin="${WAITROOM_CADDY:-/usr/bin/caddy}"

for v in WAITROOM_NGINX WAITROOM_CADDY; do
  if [ -n "${!v:-}" ] && [ ! -x "${!v}" ]; then
    echo "install-proxies: $v=${!v} is not an executable file" >&2
    exit 1
  fi
done

need=()
[ -x "$nginx_bin" ] || need+=(nginx)
[ -x "$caddy_bin" ] || need+=(caddy)

if [ "${#need[@]}" -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-proxies: ${need[*]} missing and there is no apt-get to install them; install them, or set WAITROOM_NGINX and WAITROOM_CADDY" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo="sudo"
    else
      echo "install-proxies: installing ${need[*]} needs root (or sudo)" >&2
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
  echo "install-proxies: installing ${need[*]} with apt-get"
  if ! { $sudo apt-get update -qq &&
         $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; } >"$log" 2>&1; then
    echo "install-proxies: apt-get failed to install ${need[*]}:" >&2
    cat "$log" >&2
    exit 1
  fi
  for b in "$nginx_bin" "$caddy_bin"; do
    if [ ! -x "$b" ]; then
      echo "install-proxies: apt-get ran but $b is still missing" >&2
      exit 1
    fi
  done
fi

echo "install-proxies: $("$nginx_bin" -v 2>&1) ($nginx_bin)"
echo "install-proxies: caddy $("$caddy_bin" version 2>&1 | head -n 1) ($caddy_bin)"
