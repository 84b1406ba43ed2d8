#!/usr/bin/env bash
# Configure rootful podman on a host without systemd as PID 1 and with a low open-files hard
# limit (a container/VM sandbox such as the project's Debian 12 machines), so that plain
# `podman run` and `podman build` work with no extra flags. Out of the box podman 4.3 there
# fails with "error setting rlimit type 7: operation not permitted" (it raises nofile above
# the host's hard limit) and may pick the systemd cgroup manager, which needs a running systemd.
#
# Writes a containers.conf drop-in (read by podman >= 4.0 / containers-common after
# /etc/containers/containers.conf) with: runtime runc, cgroup manager cgroupfs, no default
# ulimits. It writes the file only when it is absent or was written by this script (marker
# line), and refuses otherwise. It installs nothing: apt-get install podman runc first.
#
# Usage (as root): docker/podman-host-setup.sh [--print | --remove]
#   --print   show the drop-in that would be written, change nothing
#   --remove  delete the drop-in if this script wrote it
set -euo pipefail

conf_dir=${CONTAINERS_CONF_D:-/etc/containers/containers.conf.d}
conf=$conf_dir/50-tiny-mlp-bench.conf
marker="# Written by tiny-mlp-bench docker/podman-host-setup.sh; it may rewrite or remove this file."

die() { echo "podman-host-setup.sh: error: $*" >&2; exit 1; }
say() { echo "podman-host-setup.sh: $*" >&2; }

content() {
    cat <<EOF
$marker
# Rootful podman on a host without systemd as PID 1 and with a low nofile hard limit.
[containers]
# Podman's default raises nofile above the host's hard limit, which fails here.
default_ulimits = []

[engine]
# Cgroups managed directly: the systemd manager needs systemd running as PID 1.
cgroup_manager = "cgroupfs"
# Debian's runc package; crun is podman's default but not necessarily installed.
runtime = "runc"
EOF
}

ours() { [ -f "$conf" ] && head -n 1 "$conf" | grep -qxF "$marker"; }

case ${1:-} in
    --print) content; exit 0 ;;
    --remove)
        [ -e "$conf" ] || { say "$conf does not exist; nothing to do"; exit 0; }
        ours || die "$conf was not written by this script; leaving it alone"
        rm -f "$conf"
        say "removed $conf"
        exit 0 ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    "") ;;
    *) die "unknown argument '$1' (see --help)" ;;
esac

[ "$(id -u)" = 0 ] || die "run as root: it writes $conf for rootful podman"
command -v podman >/dev/null || die "podman not found; install it first: apt-get install podman runc"
command -v runc >/dev/null || die "runc not found; install it first: apt-get install runc"

if [ -e "$conf" ] && ! ours; then
    die "$conf exists and was not written by this script (no marker line); refusing to overwrite it. Merge these settings by hand or move it away:
$(content)"
fi

mkdir -p "$conf_dir"
if ours && [ "$(cat "$conf")" = "$(content)" ]; then
    say "$conf is already up to date"
else
    tmp=$(mktemp "$conf_dir/.tiny-mlp-bench.XXXXXX")
    content >"$tmp"
    chmod 0644 "$tmp"
    mv -f "$tmp" "$conf"
    say "wrote $conf"
fi

# Settings in /etc/containers/containers.conf, if any, are read first and overridden by the
# drop-in; show what podman now uses.
podman info --format 'podman {{.Version.Version}}: runtime {{.Host.OCIRuntime.Name}}, cgroup manager {{.Host.CgroupManager}} (cgroups {{.Host.CgroupsVersion}})' ||
    die "podman info failed with the new settings"
