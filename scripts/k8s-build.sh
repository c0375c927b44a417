#!/usr/bin/env bash
# Builds the Kubernetes binaries brig's test cluster runs (kube-apiserver, -controller-manager,
# -scheduler, kubelet, kubectl) from the Go module k8s.io/kubernetes, once per machine, into a
# cache brig owns. Reused while the version and the build flags match (a stamp file holds their
# hash); the Go build cache is deleted after a build (~3 GB). Only the Go module proxy is used.
#
#   scripts/k8s-build.sh            build if missing, print the bin directory
#   scripts/k8s-build.sh kube-router  the NetworkPolicy controller the test cluster runs
#                                   (kube-router, policy controller only), print its path
#   K8S_VERSION=v1.34.4             the version (1.35+ kubelets refuse cgroup v1: stay on 1.34)
#   BRIG_K8S_CACHE=/var/cache/brig/k8s
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.34.4}"
CACHE="${BRIG_K8S_CACHE:-/var/cache/brig/k8s}"
STAGING_VERSION="v0.${K8S_VERSION#v1.}"
CMDS=(cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler cmd/kubelet cmd/kubectl)
MAJOR="${K8S_VERSION#v}"; MAJOR="${MAJOR%%.*}"
MINOR="${K8S_VERSION#v*.}"; MINOR="${MINOR%%.*}"
# Stamped like a release build: an unstamped binary says v0.0.0-master+$Format:%H$ and kubectl
# cannot parse it.
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDFLAGS+=" -X ${pkg}.gitVersion=${K8S_VERSION} -X ${pkg}.gitMajor=${MAJOR} -X ${pkg}.gitMinor=${MINOR}"
  LDFLAGS+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
done
KEY="$(printf '%s\n' "$K8S_VERSION" "$LDFLAGS" "${CMDS[@]}" "$(go env GOVERSION)" | sha256sum | cut -c1-16)"
BIN="$CACHE/$KEY/bin"

say() { echo "k8s-build: $*" >&2; }

# kube-router: `go install` of its own module (no replaces), once per machine, its own cache key.
# v2.1.0 is the one version the module proxy here serves (its release notes list flaws in its
# BGP and proxy parts; the test cluster runs only its policy controller, on loopback).
if [[ "${1:-}" == kube-router ]]; then
  KR_VERSION="${KUBE_ROUTER_VERSION:-v2.1.0}"
  KR_KEY="$(printf '%s\n' kube-router "$KR_VERSION" "$(go env GOVERSION)" | sha256sum | cut -c1-16)"
  KR_BIN="$CACHE/kube-router-$KR_KEY/kube-router"
  if [[ ! -x "$KR_BIN" ]]; then
    command -v go >/dev/null || { say "go is not installed (kube-router is built from its Go module)"; exit 1; }
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/brig-kube-router.XXXXXX")"
    trap 'rm -rf "$WORK"' EXIT
    say "building kube-router $KR_VERSION into $KR_BIN (once per machine; ~100 s on 2 cores)"
    t0=$(date +%s)
    GOFLAGS=-mod=mod GOCACHE="$WORK/gocache" GOBIN="$WORK/bin" GOTOOLCHAIN=local \
      go install -trimpath -ldflags "-s -w" "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KR_VERSION"
    mkdir -p "$(dirname "$KR_BIN")"
    install -m 0755 "$WORK/bin/kube-router" "$KR_BIN"
    say "kube-router built in $(( $(date +%s) - t0 )) s; build cache removed"
  fi
  echo "$KR_BIN"
  exit 0
fi

if [[ -f "$CACHE/$KEY/stamp" ]] && for c in "${CMDS[@]}"; do [[ -x "$BIN/${c#cmd/}" ]] || exit 1; done; then
  echo "$BIN"
  exit 0
fi

command -v go >/dev/null || { say "go is not installed (the binaries are built from Go modules)"; exit 1; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/brig-k8s-build.XXXXXX")"
GOCACHE_DIR="$WORK/gocache"
trap 'rm -rf "$WORK"' EXIT
say "building Kubernetes $K8S_VERSION into $BIN (once per machine; 5–10 min on 2 cores: 557 s on 2026-12-03)"
cd "$WORK"
cat > go.mod <<MOD
module brig.local/k8s-build

go 1.24.0

require k8s.io/kubernetes $K8S_VERSION
MOD
printf 'package main\n\nimport _ "k8s.io/kubernetes/cmd/kubelet/app"\n\nfunc main() {}\n' > main.go
export GOFLAGS=-mod=mod GOCACHE="$GOCACHE_DIR" GOTOOLCHAIN=local
go mod download k8s.io/kubernetes@"$K8S_VERSION"
MODFILE="$(go mod download -json k8s.io/kubernetes@"$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
# k8s.io/kubernetes replaces each staging module with its own tree: a module that requires it
# names the released staging versions instead, one per line of that replace block.
{
  echo
  echo 'replace ('
  sed -n '/^replace (/,/^)/p' "$MODFILE" | sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/.*#\t\1 => \1 '"$STAGING_VERSION"'#p'
  echo ')'
} >> go.mod
[[ "$(grep -c '=> k8s.io/' go.mod)" -ge 20 ]] || { say "could not read the staging replace block from $MODFILE"; exit 1; }
t0=$(date +%s)
mkdir -p "$WORK/bin"
go build -trimpath -ldflags "$LDFLAGS" -o "$WORK/bin/" "${CMDS[@]/#/k8s.io/kubernetes/}"
mkdir -p "$BIN"
for c in "${CMDS[@]}"; do install -m 0755 "$WORK/bin/${c#cmd/}" "$BIN/${c#cmd/}"; done
"$BIN/kubectl" version --client >/dev/null
printf 'version=%s\ngo=%s\nbuilt_in_s=%s\n' "$K8S_VERSION" "$(go env GOVERSION)" "$(( $(date +%s) - t0 ))" > "$CACHE/$KEY/stamp"
say "built in $(( $(date +%s) - t0 )) s; build cache removed"
echo "$BIN"
