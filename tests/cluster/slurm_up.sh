#!/usr/bin/env bash
# A single-node SLURM cluster on localhost for tests/cluster/test_slurm.py: Debian 12's slurm-wlm (22.05) and munge,
# run as root. Installs what is missing, writes /etc/slurm/slurm.conf for this machine's CPUs and memory, starts
# munged, slurmctld and slurmd, and waits until the node is idle (~6 s to install, ~2 s to start, in a Debian 12 container).
# Idempotent: daemons already alive (by their pidfiles) are kept. No cgroups and no accounting (no slurmdbd), so sacct
# does not work: the test profile (tests/cluster/profile) makes the executor plugin poll squeue instead.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
t0=$(date +%s)

missing=""
for p in slurmctld slurmd slurm-client munge; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
t1=$(date +%s)

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# --- munge (no systemd here: apt starts no daemon) ---------------------------
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
chmod 0755 /run/munge
if [ ! -s /etc/munge/munge.key ]; then          # Debian's postinst normally creates it
  mungekey --create --keyfile /etc/munge/munge.key
  chown munge:munge /etc/munge/munge.key; chmod 0400 /etc/munge/munge.key
fi
alive /run/munge/munged.pid || runuser -u munge -- /usr/sbin/munged
munge -n | unmunge >/dev/null                    # sanity check

mkdir -p /run/slurm /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm
chown slurm:slurm /run/slurm /var/lib/slurm/slurmctld /var/log/slurm

# --- slurm.conf --------------------------------------------------------------
CPUS=$(nproc)
MEM=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
MEM=$(( MEM * 95 / 100 ))     # a little under what slurmd -C reports, else the node drains (Low RealMemory)
cat > /etc/slurm/slurm.conf <<EOF
ClusterName=ci
SlurmctldHost=localhost
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# the executor plugin polling squeue needs finished jobs to stay listed:
# MinJobAge >= 3 * slurm-init-seconds-before-status-checks, else it silently goes back to sacct (and hangs)
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
Waittime=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=${CPUS} RealMemory=${MEM} State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
chmod 0644 /etc/slurm/slurm.conf

# --- slurmctld + slurmd (PMIx errors in slurmd's log are harmless: MpiDefault=none) ----------------------------
alive /run/slurm/slurmctld.pid || /usr/sbin/slurmctld -c     # -c: start with an empty job state
alive /run/slurm/slurmd.pid    || /usr/sbin/slurmd -N localhost  # the hostname is not the NodeName, hence -N

st=""
for i in $(seq 60); do
  st=$(sinfo -h -n localhost -o %T 2>/dev/null || true)
  [ "$st" = idle ] && break
  sleep 1
done
if [ "$st" != idle ]; then
  echo "slurm node not idle (state: '$st')" >&2
  sinfo -N -l >&2 || true; tail -n 30 /var/log/slurm/*.log >&2 || true
  exit 1
fi
t2=$(date +%s)
echo "slurm up: install $((t1-t0))s, config+daemons $((t2-t1))s"
for f in /run/munge/munged.pid /run/slurm/slurmctld.pid /run/slurm/slurmd.pid; do
  alive "$f" && echo "  $f: $(cat "$f")"
done
exit 0
