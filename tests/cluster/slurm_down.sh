#!/usr/bin/env bash
# Stop the daemons slurm_up.sh starts, by the PIDs in their pidfiles (and nothing else).
for f in /run/slurm/slurmd.pid /run/slurm/slurmctld.pid /run/munge/munged.pid; do
  if [ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; then
    pid=$(cat "$f"); kill "$pid"
    for i in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    echo "stopped $f ($pid)"
  fi
done
