#!/usr/bin/env bash
# Make a local Debian base image (python3 + python3-venv from apt: /usr/bin/python3; bookworm's
# is Python 3.11, bullseye's 3.9 for the era image) without pulling from a container registry:
# debootstrap a minimal root file system from a Debian mirror and import it as an image. Use it where no registry can be
# reached:  docker/base-image.sh && podman build --build-arg BASE_IMAGE=localhost/tiny-mlp-bench/base:bookworm ...
#
# Usage: docker/base-image.sh [--engine podman|docker] [--suite SUITE] [--mirror URL] [--force] [--print-mirror] [IMAGE]
#   IMAGE     name to give the image (default $BASE_IMAGE or localhost/tiny-mlp-bench/base:SUITE)
#   --engine  container engine that imports it (default $ENGINE or podman)
#   --suite   Debian release to debootstrap (default bookworm; bullseye for the era image)
#   --mirror  Debian mirror (default $DEBIAN_MIRROR, else the one this machine's apt sources name
#             for SUITE, or for the host's own suite on a Debian host; read from $APT_DIR or /etc/apt)
#   --force   rebuild even when IMAGE already exists
#   --print-mirror  print the mirror it would use, and stop
# Needs root (debootstrap does) and the packages debootstrap and podman (or docker).
set -euo pipefail

image=${BASE_IMAGE:-}
engine=${ENGINE:-podman}
mirror=${DEBIAN_MIRROR:-}
apt_dir=${APT_DIR:-/etc/apt}
suite=bookworm
force=0
print_mirror=0

die() { echo "base-image.sh: error: $*" >&2; exit 1; }
say() { echo "base-image.sh: $*" >&2; }

# The files named, each ended by a blank line, so that a file's last deb822 entry does not run into
# the next file's first.
paragraphs() { local f; for f; do [ -f "$f" ] && { cat "$f"; echo; }; done; return 0; }

# The mirror apt on this machine installs suite $1 from, so that a machine behind an organisation's
# mirror builds from that same mirror: the first URI of an enabled "Types: deb" entry whose Suites
# name the suite in sources.list.d/*.sources (deb822, as Debian 12 writes debian.sources), else the
# URL of a "deb [options] URL suite ..." line in sources.list or sources.list.d/*.list. Prints nothing
# when no entry names the suite. Exact suite names only: bookworm-security is another archive.
apt_mirror() {
    paragraphs "$apt_dir"/sources.list.d/*.sources | awk -v suite="$1" '
        BEGIN { RS = ""; FS = "\n" }
        {
            types = uris = suites = ""; enabled = "yes"
            for (i = 1; i <= NF; i++) {
                if ($i ~ /^[ \t#]/) continue  # a comment, or a continued field (an inline key)
                key = tolower($i); sub(/[ \t]*:.*/, "", key)
                value = $i; sub(/^[^:]*:[ \t]*/, "", value)
                if (key == "types") types = value
                else if (key == "uris") uris = value
                else if (key == "suites") suites = value
                else if (key == "enabled") enabled = tolower(value)
            }
            if (enabled == "no" || (" " types " ") !~ / deb /) next
            n = split(suites, s, /[ \t]+/)
            for (i = 1; i <= n; i++) if (s[i] == suite) { split(uris, u, /[ \t]+/); print u[1]; exit }
        }' | grep . && return
    paragraphs "$apt_dir"/sources.list "$apt_dir"/sources.list.d/*.list | awk -v suite="$1" '
        $1 == "deb" { sub(/^deb[ \t]+(\[[^]]*\][ \t]+)?/, ""); if ($2 == suite) { print $1; exit } }'
}

# The mirror to debootstrap from when none is given: apt's for the suite, else, on a Debian host of
# another release, the one for the host's own suite (a Debian mirror carries every release). The
# suite of another distribution's host (Ubuntu's) is not looked for: its mirror has no Debian.
host_mirror() {
    local found host_suite
    found=$(apt_mirror "$suite")
    if [ -z "$found" ] && grep -qx 'ID=debian' /etc/os-release 2>/dev/null; then
        host_suite=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release)
        [ "$host_suite" = "$suite" ] && host_suite=
        [ -n "$host_suite" ] && found=$(apt_mirror "$host_suite")
    fi
    [ -n "$found" ] || die "no Debian mirror given, and none found in this machine's apt sources: looked in" \
        "$apt_dir/sources.list.d/*.sources for a 'Types: deb' entry whose Suites include $suite${host_suite:+ or $host_suite}," \
        "and in $apt_dir/sources.list and $apt_dir/sources.list.d/*.list for a 'deb URL $suite ...' line." \
        "Name the mirror: --mirror URL or DEBIAN_MIRROR=URL (your organisation's Debian mirror, or a public one)"
    echo "$found"
}

while [ $# -gt 0 ]; do
    case $1 in
        --engine) engine=${2:?--engine needs a value}; shift 2 ;;
        --engine=*) engine=${1#*=}; shift ;;
        --suite) suite=${2:?--suite needs a value}; shift 2 ;;
        --suite=*) suite=${1#*=}; shift ;;
        --mirror) mirror=${2:?--mirror needs a value}; shift 2 ;;
        --mirror=*) mirror=${1#*=}; shift ;;
        --force) force=1; shift ;;
        --print-mirror) print_mirror=1; shift ;;
        -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) image=$1; shift ;;
    esac
done

case $suite in
    bookworm | bullseye) ;;
    *) die "--suite must be bookworm or bullseye (the releases the images are written for), not '$suite'" ;;
esac
image=${image:-localhost/tiny-mlp-bench/base:$suite}
if [ -z "$mirror" ]; then
    mirror=$(host_mirror)
fi
if [ "$print_mirror" = 1 ]; then
    echo "$mirror"
    exit 0
fi

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
