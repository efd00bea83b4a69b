#!/usr/bin/env bash
# Installs a Go program the tests need, at a pinned version, into
# $(go env GOPATH)/bin, unless that exact version is there already:
#
#   bash .ci/install-go-tool.sh NAME MODULE/cmd/NAME VERSION
#
# such as "helm helm.sh/helm/v3/cmd/helm v3.22.0" (the Helm chart's lint and
# template test); not Traefik, whose go.mod go install refuses (see
# install-traefik.sh). A stamp file beside the binary records the version, so a second
# run on the same machine costs nothing; the first compiles the program
# (helm: about three minutes on two cores). Prints the binary's path.
set -euo pipefail

if [ "$#" -ne 3 ]; then
  echo "usage: install-go-tool.sh NAME PACKAGE VERSION" >&2
  exit 2
fi
name="$1" pkg="$2" version="$3"
bin_dir="$(go env GOPATH)/bin"
stamp="$bin_dir/.$name.version"
if [ -x "$bin_dir/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$pkg@$version" ]; then
  echo "install-go-tool: $name $version ($bin_dir/$name)"
  exit 0
fi
echo "install-go-tool: installing $pkg@$version"
# The project's own GOFLAGS (-mod=readonly) are for its module, not this one.
GOFLAGS= GOBIN="$bin_dir" go install "$pkg@$version"
echo "$pkg@$version" > "$stamp"
echo "install-go-tool: $name $version ($bin_dir/$name)"
