#!/usr/bin/env bash
# Make a local Debian bookworm base image (python3 + python3-venv from apt: /usr/bin/python3,
# Python 3.11) without pulling from a container registry: debootstrap a minimal root file
# system from a Debian mirror and import it as an image. Use it where docker.io cannot be
# reached:  docker/base-image.sh && podman build --build-arg BASE_IMAGE=localhost/tiny-mlp-bench/base:bookworm ...
#
# Usage: docker/base-image.sh [--engine podman|docker] [--mirror URL] [--force] [IMAGE]
#   IMAGE     name to give the image (default $BASE_IMAGE or localhost/tiny-mlp-bench/base:bookworm)
#   --engine  container engine that imports it (default $ENGINE or podman)
#   --mirror  Debian mirror (default $DEBIAN_MIRROR or http://deb.debian.org/debian)
#   --force   rebuild even when IMAGE already exists
# Needs root (debootstrap does) and the packages debootstrap and podman (or docker).
set -euo pipefail

image=${BASE_IMAGE:-localhost/tiny-mlp-bench/base:bookworm}
engine=${ENGINE:-podman}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
force=0

die() { echo "base-image.sh: error: $*" >&2; exit 1; }
say() { echo "base-image.sh: $*" >&2; }

while [ $# -gt 0 ]; do
    case $1 in
        --engine) engine=${2:?--engine needs a value}; shift 2 ;;
        --engine=*) engine=${1#*=}; shift ;;
        --mirror) mirror=${2:?--mirror needs a value}; shift 2 ;;
        --mirror=*) mirror=${1#*=}; shift ;;
        --force) force=1; shift ;;
        -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) image=$1; shift ;;
    esac
done

case $engine in
    podman | docker) ;;
    *) die "--engine must be podman or docker, not '$engine'" ;;
esac
command -v "$engine" >/dev/null ||
    die "$engine not found; install it (Debian: apt-get install $([ "$engine" = podman ] && echo podman || echo docker.io))"
"$engine" info >/dev/null 2>&1 ||
    die "'$engine info' fails: is the $engine daemon running / is $engine configured? (podman: docker/podman-host-setup.sh)"

if [ "$force" = 0 ] && "$engine" image inspect "$image" >/dev/null 2>&1; then
    say "$image already exists; nothing to do (--force rebuilds it)"
    exit 0
fi

[ "$(id -u)" = 0 ] || die "debootstrap needs root; run this as root (sudo $0 ...)"
command -v debootstrap >/dev/null || die "debootstrap not found; install it: apt-get install debootstrap"

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/tiny-mlp-bench-base.XXXXXX")
cleanup() {
    # An interrupted debootstrap can leave /proc, /sys or /dev mounted in the target:
    # unmount those first, and never let rm cross into another file system.
    if [ -d "$tmp" ]; then
        { grep -o " $tmp/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m" || true; done
        rm -rf --one-file-system "$tmp" || echo "base-image.sh: could not remove $tmp; remove it by hand" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rootfs=$tmp/rootfs
say "debootstrap $suite (minbase + python3, python3-venv, ca-certificates) from $mirror into $rootfs"
start=$(date +%s)
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    "$suite" "$rootfs" "$mirror" >"$tmp/debootstrap.log" 2>&1 || {
    tail -n 30 "$tmp/debootstrap.log" >&2
    die "debootstrap failed (log above); check that $mirror is reachable"
}
say "debootstrap done in $(($(date +%s) - start)) s"

# Keep the image small: no downloaded .debs or package lists (apt-get update restores them).
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/* "$rootfs"/tmp/*
chroot "$rootfs" /usr/bin/python3 -c 'import ensurepip, venv' ||
    die "the new root file system has no working /usr/bin/python3 with venv"

say "importing it as $image with $engine ($(du -sh --one-file-system "$rootfs" | cut -f1) on disk)"
tar --numeric-owner -C "$rootfs" -c . | "$engine" import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' \
    --message "debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates $suite $mirror" \
    - "$image" >/dev/null
say "done: $image ($(($(date +%s) - start)) s in all)"
"$engine" image ls "$image"
