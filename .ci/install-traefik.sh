#!/usr/bin/env bash
# Installs Traefik v3.0.4 into $(go env GOPATH)/bin for the test that runs
# the shipped docs/deploy/forward-auth/traefik.yaml in front of two nodes
# (edge/traefik_test.go), unless it is there already:
#
#   bash .ci/install-traefik.sh
#
# `go install github.com/traefik/traefik/v3/cmd/traefik@VERSION` refuses
# Traefik: its go.mod has replace directives, which go install does not
# accept. Built from its module source as the main module, they apply: the
# module is downloaded (Go's module cache), copied to a writable folder and
# built there with -trimpath, so that a second build anywhere is a hit in Go's
# build cache. The first build takes about 8 minutes of CPU (16 minutes on a
# busy two-core machine) and writes a binary of about 160 MB; that is why
# .ci/run builds it only when WAITROOM_TRAEFIK=1 is set.
#
# Idempotent, as install-go-tool.sh is for helm: nothing is built when
# `traefik version` there says v3.0.4-built (the version this script stamps
# into the binary) or the stamp file beside it names this version. Prints
# the binary's path.
set -euo pipefail

module=github.com/traefik/traefik/v3
version=v3.0.4
built="$version-built"
bin_dir="$(go env GOPATH)/bin"
bin="$bin_dir/traefik"
stamp="$bin_dir/.traefik.version"

if [ -x "$bin" ]; then
  if [ "$(cat "$stamp" 2>/dev/null)" = "$module@$version" ] ||
    "$bin" version 2>/dev/null | grep -q "^Version: *$built\$"; then
    echo "install-traefik: traefik $version ($bin)"
    exit 0
  fi
fi

echo "install-traefik: building $module@$version from its module source"
# The project's own GOFLAGS (-mod=readonly) are for its module, not this one.
export GOFLAGS=-buildvcs=false
src_dir=$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$src_dir" ] || [ ! -d "$src_dir" ]; then
  echo "install-traefik: go mod download gave no module folder for $module@$version" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
# The module cache is read-only; the build needs a main module it may write
# go.sum beside.
cp -R "$src_dir/." "$work/traefik"
chmod -R u+w "$work/traefik"
mkdir -p "$bin_dir"
(
  cd "$work/traefik"
  CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X $module/pkg/version.Version=$built" \
    -o "$work/traefik.bin" ./cmd/traefik
)
mv "$work/traefik.bin" "$bin"
echo "$module@$version" > "$stamp"
echo "install-traefik: traefik $version ($bin)"
