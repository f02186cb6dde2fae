#!/usr/bin/env bash
# A real single-node SLURM cluster on this machine, for `--executor slurm` and its tests.
#
#     tools/slurm-cluster.sh start     start munged, MariaDB, slurmdbd, slurmctld and slurmd; wait for an idle node
#     tools/slurm-cluster.sh stop      stop exactly the daemons this script started, in the reverse order
#     tools/slurm-cluster.sh status    the daemons this script started that still run, and the node's state
#
# Needs root and Debian's packages: slurmctld slurmd slurm-client munge slurmdbd mariadb-server (`.ci/run` installs
# them). No systemd: each daemon is started by hand. Accounting (slurmdbd on MariaDB) is on because submitit reads
# `sacct` to see that a job was cancelled. The settings that matter (slurm.conf below): no cgroups
# (proctrack/linuxproc, task/none), one node as `slurmd -C` describes it, cons_tres with a default memory per CPU
# (without it a job claims the whole node and jobs run one at a time), quick requeue (cred_expire=5, a 1-2 s
# scheduler), and KillWait=3: a cancelled or requeued job is killed 3 s after its SIGTERM (SLURM's default is 30 s,
# and submitit's jobs ignore SIGTERM, so a test job would otherwise go on for half a minute after `scancel`). A daemon that already runs is left alone and is not stopped by `stop`: the state file
# ($STATE/started) lists the pid files of the daemons this script started.
#
# It writes /etc/slurm/slurm.conf and /etc/slurm/slurmdbd.conf only where there is none or where the file is its
# own (first line "# written by linrnn tools/slurm-cluster.sh"); another cluster's configuration is never touched.
# Exit status: 0 started (or already running) / stopped; 1 with one line on stderr saying why it could not.
set -euo pipefail

STATE=${LINRNN_SLURM_STATE:-/var/tmp/linrnn-slurm}
MARK="# written by linrnn tools/slurm-cluster.sh"
CONF=/etc/slurm/slurm.conf
DBD_CONF=/etc/slurm/slurmdbd.conf
CLUSTER=linrnn
DB_PASS=linrnn-slurmdbd
STARTED=$STATE/started

fail() { echo "slurm-cluster: $*" >&2; exit 1; }

running() {   # running PIDFILE: the pid in PIDFILE names a live process
    [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

wait_for() {  # wait_for SECONDS WHAT COMMAND...: retry COMMAND every 0.2 s until it succeeds
    local seconds=$1 what=$2
    shift 2
    local end=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$end" ] || fail "$what did not come up within ${seconds} s (logs in /var/log/slurm, $STATE)"
        sleep 0.2
    done
}

ours_or_absent() {   # the file is absent or was written by this script
    [ ! -e "$1" ] || [ "$(head -n 1 "$1")" = "$MARK" ]
}

write_config() {
    local host node name cpus mem
    host=$(hostname -s)
    node=$(slurmd -C | head -n 1)          # NodeName=... CPUs=... Sockets... RealMemory=...
    name=$(sed -n 's/^NodeName=\([^ ]*\).*/\1/p' <<<"$node")
    cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node")
    mem=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
    mem=$((mem * 95 / 100))                # a little under the machine's total
    node=$(sed "s/ RealMemory=[0-9]*/ RealMemory=$mem/" <<<"$node")
    cat >"$CONF" <<EOF
$MARK
ClusterName=$CLUSTER
SlurmctldHost=$host(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
AuthInfo=cred_expire=5
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=$((mem / cpus / 2))
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_interval=2
ReturnToService=2
KillWait=3
MpiDefault=none
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobCompType=jobcomp/none
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$name Default=YES MaxTime=INFINITE State=UP
EOF
    cat >"$DBD_CONF" <<EOF
$MARK
AuthType=auth/munge
DbdHost=localhost
SlurmUser=slurm
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
PidFile=/run/slurm/slurmdbd.pid
LogFile=/var/log/slurm/slurmdbd.log
EOF
    chown slurm:slurm "$DBD_CONF"
    chmod 600 "$DBD_CONF"
}

start() {
    [ "$(id -u)" = 0 ] || fail "needs root (it starts system daemons)"
    local missing=()
    for cmd in munged mariadbd slurmdbd slurmctld slurmd sinfo sacctmgr; do
        command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
    done
    [ "${#missing[@]}" = 0 ] || fail "missing ${missing[*]}: apt-get install slurmctld slurmd slurm-client munge slurmdbd mariadb-server"
    ours_or_absent "$CONF" || fail "$CONF exists and is not this script's: another cluster is configured here"
    ours_or_absent "$DBD_CONF" || fail "$DBD_CONF exists and is not this script's"
    mkdir -p "$STATE" /run/munge /run/mysqld /run/slurm /var/log/slurm /var/spool/slurmctld /var/spool/slurmd
    chown munge:munge /run/munge
    chown mysql:mysql /run/mysqld
    chown slurm:slurm /run/slurm /var/log/slurm /var/spool/slurmctld
    touch "$STARTED"
    write_config

    if ! running /run/munge/munged.pid; then
        runuser -u munge -- munged --pid-file=/run/munge/munged.pid
        echo /run/munge/munged.pid >>"$STARTED"
    fi
    wait_for 10 munged munge -n

    if ! running /run/mysqld/mysqld.pid; then
        (mariadbd --user=mysql --pid-file=/run/mysqld/mysqld.pid --socket=/run/mysqld/mysqld.sock \
            --skip-networking=0 --bind-address=127.0.0.1 >"$STATE/mariadb.log" 2>&1 &)
        echo /run/mysqld/mysqld.pid >>"$STARTED"
    fi
    wait_for 30 MariaDB mysqladmin --socket=/run/mysqld/mysqld.sock ping
    mysql --socket=/run/mysqld/mysqld.sock -e "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"

    if ! running /run/slurm/slurmdbd.pid; then
        slurmdbd
        echo /run/slurm/slurmdbd.pid >>"$STARTED"
    fi
    wait_for 30 slurmdbd sacctmgr -n list cluster
    sacctmgr -n list cluster format=cluster | grep -qw "$CLUSTER" || sacctmgr -i add cluster "$CLUSTER" >/dev/null

    if ! running /run/slurm/slurmctld.pid; then
        slurmctld
        echo /run/slurm/slurmctld.pid >>"$STARTED"
    fi
    if ! running /run/slurm/slurmd.pid; then
        slurmd
        echo /run/slurm/slurmd.pid >>"$STARTED"
    fi
    wait_for 60 "an idle node" node_idle
    echo "slurm-cluster: started ($(sinfo -h -o '%P %D node(s) %c CPUs %T'))"
}

node_idle() {
    local state
    state=$(sinfo -h -N -o %T 2>/dev/null) || return 1
    case $state in
        idle*|mixed*|allocated*) return 0 ;;
        down*|drain*) scontrol update nodename="$(sinfo -h -N -o %N)" state=resume >/dev/null 2>&1; return 1 ;;
        *) return 1 ;;
    esac
}

stop_group() {   # stop_group PIDFILE...: TERM to each daemon of the group that this script started, then wait for all
    local pidfile pid pids=()
    for pidfile in "$@"; do
        grep -qx "$pidfile" "$STARTED" && running "$pidfile" || continue
        pid=$(cat "$pidfile")
        kill "$pid"
        pids+=("$pid")
    done
    for pid in "${pids[@]}"; do
        for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    done
    return 0
}

stop() {
    [ -f "$STARTED" ] || { echo "slurm-cluster: nothing to stop (this script started no daemon)"; return 0; }
    # the reverse of the start order, the daemons that do not depend on each other together (about 6 s)
    stop_group /run/slurm/slurmd.pid /run/slurm/slurmctld.pid
    stop_group /run/slurm/slurmdbd.pid
    stop_group /run/mysqld/mysqld.pid /run/munge/munged.pid
    rm -f "$STARTED"
    echo "slurm-cluster: stopped"
}

status() {
    [ -f "$STARTED" ] || { echo "slurm-cluster: not started by this script"; return 0; }
    local pidfile
    for pidfile in $(cat "$STARTED"); do
        if running "$pidfile"; then echo "running  $pidfile ($(cat "$pidfile"))"; else echo "gone     $pidfile"; fi
    done
    sinfo -h -N -o '%N %T %c CPUs' 2>/dev/null || true
}

case ${1:-} in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) echo "usage: tools/slurm-cluster.sh start|stop|status" >&2; exit 2 ;;
esac
