#!/usr/bin/env bash
# Start or stop a Docker daemon in the background, for hosts without systemd (CI, containers, VMs
# like the project's Debian 12 machines), so that Debian's docker.io can build and run the images.
# CI starts it before the tests and stops it after them.
#
# Usage (as root): docker/dockerd.sh start | stop | status
#   start   start dockerd unless one answers already, and wait until it does (at most 60 s)
#   stop    stop the dockerd this script started (its pid file), and wait for it to exit
#   status  say whether a daemon answers
# Needs Debian's docker.io (apt-get install docker.io): its dockerd and its client /usr/bin/docker.
# Environment: DOCKERD_ROOT (default /var/lib/docker), DOCKERD_LOG (default /var/log/dockerd.log).
set -euo pipefail

root=${DOCKERD_ROOT:-/var/lib/docker}
log=${DOCKERD_LOG:-/var/log/dockerd.log}
pidfile=/run/tiny-mlp-bench-dockerd.pid
# Debian's client: a newer one first on PATH may want plugins Debian does not package.
client=/usr/bin/docker

die() { echo "dockerd.sh: error: $*" >&2; exit 1; }
say() { echo "dockerd.sh: $*" >&2; }
answers() { "$client" info >/dev/null 2>&1; }

start() {
    [ "$(id -u)" = 0 ] || die "dockerd needs root; run this as root (sudo $0 start)"
    command -v dockerd >/dev/null && [ -x "$client" ] || die "dockerd or $client not found: apt-get install docker.io"
    if answers; then
        say "a Docker daemon already answers; nothing to do"
        return
    fi
    mkdir -p "$root" "$(dirname "$log")"
    # cgroupfs: there is no systemd to manage cgroups; the exec root stays beside the pid file.
    nohup dockerd --data-root "$root" --exec-root /run/tiny-mlp-bench-docker --pidfile "$pidfile" \
        --exec-opt native.cgroupdriver=cgroupfs >"$log" 2>&1 &
    for _ in $(seq 60); do
        if answers; then
            say "dockerd is up ($("$client" version --format 'server {{.Server.Version}}'), storage $("$client" info --format '{{.Driver}}'), log $log)"
            return
        fi
        kill -0 $! 2>/dev/null || { tail -n 20 "$log" >&2; die "dockerd exited (log above, in $log)"; }
        sleep 1
    done
    tail -n 20 "$log" >&2
    die "dockerd did not answer within 60 s (log above, in $log)"
}

stop() {
    [ -f "$pidfile" ] || { say "no dockerd started by this script ($pidfile absent); nothing to stop"; return; }
    pid=$(cat "$pidfile")
    # A pid file left by a daemon that died may name another process by now.
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != dockerd ]; then
        say "dockerd ($pid) no longer runs; nothing to stop"
        rm -f "$pidfile"
        return
    fi
    kill "$pid"
    for _ in $(seq 30); do
        kill -0 "$pid" 2>/dev/null || { say "dockerd ($pid) stopped"; return; }
        sleep 1
    done
    die "dockerd ($pid) still runs 30 s after SIGTERM"
}

case ${1:-} in
    start) start ;;
    stop) stop ;;
    status) if answers; then say "a Docker daemon answers"; else say "no Docker daemon answers"; exit 1; fi ;;
    *) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
