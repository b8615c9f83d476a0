#!/bin/sh
# Run the render-hash oracle: JSON cases on stdin, upstream's names on stdout (see README.md).
# Needs Debian's golang-go, golang-gopkg-yaml.v2-dev (2.4.0) and golang-github-ghodss-yaml-dev,
# and the machine-config-operator mirror for Ignition's v3_5 schema.go (its structs only).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mirror=${MCO_MIRROR:-/work/.mirror/openshift+machine-config-operator/repo}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/ign35types"
git --git-dir="$mirror" show HEAD:vendor/github.com/coreos/ignition/v2/config/v3_5/types/schema.go \
    > "$work/src/ign35types/schema.go"
GO111MODULE=off GOPATH="$work:/usr/share/gocode" GOCACHE="$work/cache" GOFLAGS= \
    go run "$here/main.go"
