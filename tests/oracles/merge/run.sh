#!/bin/sh
# Run the merge oracle: JSON cases on stdin, upstream's rendered configs on stdout (README.md).
# Needs Debian's golang-go (1.19) and the machine-config-operator mirror (a bare git dir).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mirror=${MCO_MIRROR:-/work/.mirror/openshift+machine-config-operator/repo}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git --git-dir="$mirror" archive HEAD \
    vendor/github.com/coreos/ignition vendor/github.com/coreos/ign-converter \
    vendor/github.com/coreos/go-semver vendor/github.com/coreos/go-json \
    vendor/github.com/coreos/vcontext vendor/github.com/coreos/go-systemd \
    vendor/github.com/ajeddeloh vendor/github.com/vincent-petithory \
    vendor/github.com/aws/aws-sdk-go-v2/aws/arn vendor/go4.org \
    vendor/github.com/clarketm/json vendor/github.com/ghodss/yaml vendor/gopkg.in/yaml.v2 \
    pkg/controller/common/helpers.go pkg/controller/common/constants.go \
    pkg/controller/common/ignition_converter.go pkg/controller/render/hash.go \
    2>"$work/archive.err" | tar -x -C "$work"  # (git names a large blob absent from the mirror)
mv "$work/vendor" "$work/src"
# The one construct Go 1.19 lacks in these sources (range over an int, Go 1.22), in a
# function nothing here calls: rewritten to the equivalent three-clause loop.
sed -i 's/for i := range length {/for i := 0; i < length; i++ {/' \
    "$work/src/github.com/coreos/go-systemd/v22/unit/option.go"
mkdir -p "$work/src/github.com/openshift/api/machineconfiguration" "$work/src/k8s.io/apimachinery/pkg/apis/meta" \
    "$work/src/k8s.io/klog" "$work/src/mcocommon"
cp -r "$here/stubs/mcfgv1" "$work/src/github.com/openshift/api/machineconfiguration/v1"
cp -r "$here/stubs/metav1" "$work/src/k8s.io/apimachinery/pkg/apis/meta/v1"
cp -r "$here/stubs/runtime" "$work/src/k8s.io/apimachinery/pkg/runtime"
cp -r "$here/stubs/klog" "$work/src/k8s.io/klog/v2"
cp "$here/stubs/mcocommon/export.go" "$work/src/mcocommon/"
common="$work/pkg/controller/common"
sed 's/^package common/package mcocommon/' "$common/ignition_converter.go" > "$work/src/mcocommon/ignition_converter.go"
sed 's/^package common/package mcocommon/' "$common/constants.go" > "$work/src/mcocommon/constants.go"
export GO111MODULE=off GOPATH="$work" GOCACHE="${MCD_ORACLE_GOCACHE:-$work/cache}" GOFLAGS=
go build -o "$work/extract" "$here/extract.go"
"$work/extract" "$work/src/mcocommon/extracted.go" \
    "$common/helpers.go:strToPtr,boolToPtr,MergeMachineConfigs,ignitionMergeSetFilesDefaultCompression,ignitionMergeUnsetFilesDefaultCompression,ValidateIgnition,validateIgn2FileModes,validateIgn3FileModes,InSlice,ValidateMachineConfig,ValidateMachineConfigExtensions,validateExtensions,SupportedExtensions,IgnParseWrapper,ParseAndConvertConfig,removeIgnDuplicateFilesUnitsUsers,dedupePasswdUserSSHKeys,GetBaseImageContainer,GetBaseExtensionsImageContainer" \
    "$work/pkg/controller/render/hash.go:salt,getMachineConfigHashedName,hashData"
go run "$here/main.go"
