#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the sweep back-end's integration test.
#
#   .ci/slurm-up.sh        install (apt) if needed, configure, start munged, slurmctld and
#                          slurmd, wait until the node is idle; prints the env to export
#   .ci/slurm-up.sh down   stop the daemons this script started
#
# Runs as root on a container or VM where systemd may not run: the daemons are started
# directly. No accounting database: job states come from squeue/scontrol while jobs are
# known to slurmctld and from the job-completion log (sacct --completion) afterwards.
# Everything it writes lives under $SLURM_CI_DIR (default /tmp/kagent-slurm) and
# /etc/slurm/slurm.conf.
set -euo pipefail

DIR=${SLURM_CI_DIR:-/tmp/kagent-slurm}
TIMEOUT=${SLURM_UP_TIMEOUT:-120} # seconds to wait for the node to become idle
CONF=/etc/slurm/slurm.conf

log() { echo "slurm-up: $*" >&2; }
die() { log "$*"; for f in "$DIR"/log/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done; exit 1; }

stop() {
  for name in slurmd slurmctld munged; do
    local pidf="$DIR/run/$name.pid"
    if [ -s "$pidf" ]; then
      local pid
      pid=$(cat "$pidf")
      if kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
      fi
      rm -f "$pidf"
    fi
  done
}

if [ "${1:-}" = down ]; then
  stop
  log "stopped"
  exit 0
fi

[ "$(id -u)" = 0 ] || { log "must run as root"; exit 1; }

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  log "installing slurmctld slurmd slurm-client munge"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
fi

stop # a previous run's daemons, if any
mkdir -p "$DIR"/{run,log,ctld,spool} /etc/slurm /run/munge /var/lib/munge /var/log/munge
rm -rf "$DIR"/ctld/* "$DIR"/spool/*

# munge: a key, and the daemon as root (--force: root-owned key and dirs are fine here).
if [ ! -s /etc/munge/munge.key ]; then
  if command -v mungekey >/dev/null; then
    mungekey --create --keyfile=/etc/munge/munge.key --force
  else
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
  fi
fi
chown root:root /etc/munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
chmod 0700 /etc/munge /var/lib/munge /var/log/munge
chmod 0400 /etc/munge/munge.key
chmod 0755 /run/munge
munged --force --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" \
  --socket=/run/munge/munge.socket.2 || die "munged did not start"
for _ in $(seq 50); do munge -n </dev/null >/dev/null 2>&1 && break; sleep 0.1; done
munge -n </dev/null | unmunge >/dev/null || die "munge does not work"

# slurm.conf: one node named after this host, reachable on 127.0.0.1.
HOST=$(hostname -s)
CPUS=$(nproc)
MEM=$(awk '/MemTotal/ {printf "%d", $2/1024*0.9}' /proc/meminfo)
cat >"$CONF" <<EOF
# Written by kagent's .ci/slurm-up.sh: a one-node cluster for tests.
ClusterName=kagentci
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdParameters=config_overrides
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.log
MinJobAge=3600
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$HOST NodeAddr=127.0.0.1 NodeHostname=$HOST CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF

slurmctld -i || die "slurmctld did not start"
slurmd -N "$HOST" || die "slurmd did not start"

# Wait until the node is idle.
deadline=$((SECONDS + TIMEOUT))
state=
while [ $SECONDS -lt $deadline ]; do
  state=$(sinfo -h -N -n "$HOST" -o '%T' 2>/dev/null | head -n1 || true)
  case "$state" in
    idle|mixed|allocated) break ;;
    down*|drain*) scontrol update NodeName="$HOST" State=RESUME >/dev/null 2>&1 || true ;;
  esac
  sleep 1
done
case "$state" in idle|mixed|allocated) ;; *) false ;; esac || die "node $HOST is not idle after ${TIMEOUT}s (state: ${state:-unknown})"
log "cluster up: node $HOST, $CPUS CPUs, state $state (logs in $DIR/log)"
