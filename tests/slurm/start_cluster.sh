#!/usr/bin/env bash
# Start a one-node Slurm cluster on this machine for tests/test_slurm.py (CI runs it as root).
# Needs Debian's slurm-wlm and munge. The node declares one GPU GRES backed by /dev/null, so
# jobs that ask for a GPU schedule (and then find no CUDA device, which they record honestly).
# It writes /etc/slurm/slurm.conf and refuses to replace one it did not write.
set -euo pipefail
marker="# written by tiny-mlp-bench tests/slurm/start_cluster.sh"
conf=/etc/slurm/slurm.conf
if [ -f "$conf" ] && ! grep -qF "$marker" "$conf"; then
    echo "error: $conf exists and was not written by this script; not touching a real cluster" >&2
    exit 1
fi
for tool in slurmctld slurmd munged sinfo; do
    command -v "$tool" >/dev/null || { echo "error: $tool not found: apt-get install slurm-wlm munge" >&2; exit 1; }
done

host=$(hostname -s)
cpus=$(nproc)
memory_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
cat > "$conf" <<CONF
$marker
ClusterName=tinybench
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# What runs on this kind of host (no cgroup control in the container):
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ReturnToService=2
GresTypes=gpu
NodeName=$host CPUs=$cpus RealMemory=$memory_mb Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# A gres.conf line with File= is what makes the fake GPU schedulable (Count= alone left it INVAL).
echo "NodeName=$host Name=gpu File=/dev/null" > /etc/slurm/gres.conf

chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
pgrep -x munged >/dev/null || su -s /bin/sh munge -c /usr/sbin/munged
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 60); do
    if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
        sinfo
        exit 0
    fi
    sleep 1
done
echo "error: the Slurm node did not become idle; see /var/log/slurm/*.log" >&2
sinfo >&2 || true
exit 1
