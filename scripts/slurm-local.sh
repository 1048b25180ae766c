#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for `mplab sweep --executor
# slurm` and its tests (root).
#
#   bash scripts/slurm-local.sh up      # install if missing, configure, start
#   bash scripts/slurm-local.sh down    # stop the daemons, remove the state
#   bash scripts/slurm-local.sh status
#   export SLURM_CONF=/run/mplab-slurm/slurm.conf   # then sbatch, squeue, mplab
#
# It keeps to itself: its configuration, state and logs live under
# /run/mplab-slurm, its daemons listen on ports 6917/6918 (not Slurm's
# 6817/6818), and it never touches /etc/slurm. Slurm clients find it through
# SLURM_CONF. munge (Slurm's authentication) is shared: an munged already
# running is used, otherwise one is started with the packaged key.
set -euo pipefail

DIR=/run/mplab-slurm
CONF=$DIR/slurm.conf
HOST=$(hostname -s)

die() { echo "slurm-local: $*" >&2; exit 1; }

install_packages() {
  local need=()
  command -v slurmctld >/dev/null 2>&1 || need+=(slurmctld)
  command -v slurmd >/dev/null 2>&1 || need+=(slurmd)
  command -v sbatch >/dev/null 2>&1 || need+=(slurm-client)
  command -v munged >/dev/null 2>&1 || need+=(munge)
  if [ ${#need[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || die "missing ${need[*]}: run as root to install them"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}

munge_up() {
  if munge -n </dev/null >/dev/null 2>&1; then
    return 0
  fi
  [ -f /etc/munge/munge.key ] || { mkdir -p /etc/munge; dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null; }
  local owner=root
  id munge >/dev/null 2>&1 && owner=munge
  chown "$owner" /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown "$owner" /run/munge /var/lib/munge /var/log/munge
  chmod 755 /run/munge
  if [ "$owner" = munge ]; then
    runuser -u munge -- /usr/sbin/munged
  else
    /usr/sbin/munged --force
  fi
  for _ in $(seq 50); do
    munge -n </dev/null >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  die "munged did not start"
}

write_conf() {
  local cpus mem
  cpus=$(nproc)
  # What Slurm may hand out: the machine's memory less 1 GiB, in MB.
  mem=$(awk '/MemTotal/ { m = int($2 / 1024) - 1024; print (m > 512 ? m : 512) }' /proc/meminfo)
  mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
  cat >"$CONF" <<EOF
# mplab's one-node test cluster (scripts/slurm-local.sh); not for production.
ClusterName=mplab
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=6917
SlurmdPort=6918
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
MaxArraySize=10001
MinJobAge=30
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
}

up() {
  [ "$(id -u)" = 0 ] || die "needs root"
  install_packages
  munge_up
  if [ -f "$DIR/slurmctld.pid" ] && kill -0 "$(cat "$DIR/slurmctld.pid")" 2>/dev/null; then
    echo "slurm-local: already up (SLURM_CONF=$CONF)"
    return 0
  fi
  write_conf
  export SLURM_CONF=$CONF
  slurmctld -f "$CONF" -i
  slurmd -f "$CONF"
  # Ready when the node takes jobs.
  for _ in $(seq 100); do
    if sinfo -h -N -o '%T' 2>/dev/null | grep -Eq '^(idle|mixed|allocated)'; then
      echo "slurm-local: up: node $HOST, $(nproc) CPUs; export SLURM_CONF=$CONF"
      return 0
    fi
    scontrol update nodename="$HOST" state=resume >/dev/null 2>&1 || true
    sleep 0.2
  done
  echo "--- slurmctld.log"; tail -20 "$DIR/log/slurmctld.log" 2>/dev/null || true
  echo "--- slurmd.log"; tail -20 "$DIR/log/slurmd.log" 2>/dev/null || true
  die "the node did not come up"
}

down() {
  local pidf pid
  if [ -f "$CONF" ]; then
    SLURM_CONF=$CONF scancel --full --quiet -u "$(id -un)" 2>/dev/null || true
  fi
  for pidf in "$DIR/slurmd.pid" "$DIR/slurmctld.pid"; do
    [ -f "$pidf" ] || continue
    pid=$(cat "$pidf")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  # Job steps the daemons leave behind.
  pkill -f "slurmstepd: \[" 2>/dev/null || true
  rm -rf "$DIR"
  echo "slurm-local: down"
}

status() {
  if [ -f "$CONF" ]; then
    SLURM_CONF=$CONF sinfo -N && SLURM_CONF=$CONF squeue
  else
    echo "slurm-local: not up"
    return 1
  fi
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) die "usage: $0 up|down|status" ;;
esac
