#!/usr/bin/env bash
# Make sure a Docker engine answers. A running engine is left alone; otherwise install
# Debian's docker.io when dockerd is missing and start it with no bridge, no iptables and
# no masquerading (children run with NetworkMode none, so no network is ever needed).
set -euo pipefail

log() { printf 'engine: %s\n' "$*" >&2; }

sock_path() {
  case "${DOCKER_HOST:-}" in
    unix://*) printf '%s\n' "${DOCKER_HOST#unix://}" ;;
    "") printf '%s\n' /var/run/docker.sock ;;
    *) printf '\n' ;;
  esac
}

answers() {
  local sock; sock=$(sock_path)
  if [ -z "$sock" ]; then
    # A TCP DOCKER_HOST: ask with the client if there is one.
    command -v docker >/dev/null 2>&1 && docker version --format '{{.Server.Version}}' >/dev/null 2>&1
    return
  fi
  [ -S "$sock" ] || return 1
  curl -sf --max-time 3 --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1
}

if answers; then
  log "a Docker engine already answers at ${DOCKER_HOST:-unix:///var/run/docker.sock}; leaving it alone"
  exit 0
fi

if [ -n "${DOCKER_HOST:-}" ] && [ "$(sock_path)" != /var/run/docker.sock ]; then
  log "DOCKER_HOST=$DOCKER_HOST does not answer, and this script only starts a local engine at /var/run/docker.sock."
  log "Start that engine, or unset DOCKER_HOST to let this script start one."
  exit 1
fi

if [ "$(id -u)" != 0 ]; then
  log "no Docker engine answers and starting one needs root. Run as root, or start dockerd yourself."
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  log "dockerd is missing: installing Debian's docker.io (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null || { log "apt-get update failed; install docker.io by hand"; exit 1; }
  apt-get install -y -qq docker.io >/dev/null || { log "apt-get install docker.io failed; install it by hand"; exit 1; }
fi
command -v curl >/dev/null 2>&1 || { export DEBIAN_FRONTEND=noninteractive; apt-get install -y -qq curl >/dev/null; }

logfile=/var/log/brig-dockerd.log
log "starting dockerd in the background (--bridge=none --iptables=false --ip-masq=false), log at $logfile"
# Leave a stale pid file from a killed engine out of the way.
if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then rm -f /var/run/docker.pid; fi
# The previous engine's log is kept beside (why it ended is often the question).
if [ -f "$logfile" ]; then mv -f "$logfile" "$logfile.1"; fi
# Its own session: an engine started from a shell, a make or a test job must not end when that
# job's process group is killed (a timed-out command took the engine of everyone with it).
setsid nohup dockerd --bridge=none --iptables=false --ip-masq=false --host=unix:///var/run/docker.sock \
  >"$logfile" 2>&1 </dev/null &
pid=$!

for i in $(seq 1 60); do
  if answers; then
    log "engine answers after ~$((i / 2)) s (dockerd pid $pid)"
    exit 0
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    log "dockerd exited at start; the last lines of $logfile:"
    tail -n 15 "$logfile" >&2 || true
    exit 1
  fi
  sleep 0.5
done
log "dockerd did not answer within 30 s; see $logfile"
exit 1
