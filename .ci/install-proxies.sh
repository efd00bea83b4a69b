#!/usr/bin/env bash
# Installs the reverse proxies the forward-auth tests put in front of
# waitroom (edge/proxies_test.go) and `waitroom bench` compares waitroom
# with (cmd/waitroom/internal/bench): Debian's nginx at /usr/sbin/nginx,
# caddy at /usr/bin/caddy and haproxy at /usr/sbin/haproxy (or the binaries
# $WAITROOM_NGINX, $WAITROOM_CADDY and $WAITROOM_HAPROXY name, which must
# exist), through install-debian.sh, which keeps the packages' system
# services from starting: the tests start their own proxies on free
# loopback ports. Prints their versions.
#
# .ci/run calls it before the tests and then exports
# WAITROOM_REQUIRE_PROXIES=1, so that the tests fail rather than skip if
# a proxy is missing.
set -euo pipefail

nginx_bin="${WAITROOM_NGINX:-/usr/sbin/nginx}"
caddy_bin="${WAITROOM_CADDY:-/usr/bin/caddy}"
haproxy_bin="${WAITROOM_HAPROXY:-/usr/sbin/haproxy}"

for v in WAITROOM_NGINX WAITROOM_CADDY WAITROOM_HAPROXY; do
  if [ -n "${!v:-}" ] && [ ! -x "${!v}" ]; then
    echo "install-proxies: $v=${!v} is not an executable file" >&2
    exit 1
  fi
done
here="$(dirname "$0")"
bash "$here/install-debian.sh" nginx "$nginx_bin"
bash "$here/install-debian.sh" caddy "$caddy_bin"
bash "$here/install-debian.sh" haproxy "$haproxy_bin"

echo "install-proxies: $("$nginx_bin" -v 2>&1) ($nginx_bin)"
echo "install-proxies: caddy $("$caddy_bin" version 2>&1 | head -n 1) ($caddy_bin)"
echo "install-proxies: $("$haproxy_bin" -v 2>&1 | head -n 1) ($haproxy_bin)"
