#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-regress-slurm: the regression's job list as a Slurm job array (make regress-slurm) on a
# single-node Slurm started here: a private munged (own key and socket), slurmctld and slurmd
# on localhost from a minimal slurm.conf (one node, proctrack/linuxproc, task/none, no
# cgroups, no accounting, private ports and spool folders), all run as root in the
# background. A 4-task array (N = 4, seed 1: the program, 2 X-initialisation seeds, one
# back-pressure seed) is submitted with the sbatch script that regress.py writes; the test
# waits (bounded) for the array, then checks every task's result file and the report, and
# stops the daemons it started (by their process ids).
# Prints "SKIP: ..." and exits 0 when Slurm or munge is not installed, or when the daemons or
# the node do not come up here (the logs' last lines are printed).
# usage: sh tests/regress/slurm_test.sh DIR
set -u
dir=$1
cd "$(dirname "$0")/../.." || exit 2

skip() { echo "SKIP: test-regress-slurm: $*"; cleanup; exit 0; }
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do
        i=0; while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        kill -9 "$p" 2>/dev/null
    done
    pids=""
}
trap cleanup EXIT INT TERM
for t in munged slurmctld slurmd sbatch squeue sinfo; do
    command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] ||
        { echo "SKIP: test-regress-slurm: $t is not installed (Debian packages slurm-wlm, munge)"; exit 0; }
done
PATH=$PATH:/usr/sbin
[ "$(id -u)" -eq 0 ] || { echo "SKIP: test-regress-slurm: the daemons are started as root (uid $(id -u) here)"; exit 0; }
rm -rf "$dir"; mkdir -p "$dir"; chmod 700 "$dir"
d=$(cd "$dir" && pwd)
mkdir -p "$d/munge" "$d/state" "$d/spool"; chmod 700 "$d/munge"
host=$(hostname -s 2>/dev/null || hostname)
cpus=$(nproc 2>/dev/null || echo 1)
# private ports: the first free pair from 16817 (a Slurm already running here keeps its own)
port=16817
while [ $port -lt 16900 ]; do
    if ! (ss -ltn 2>/dev/null || netstat -ltn 2>/dev/null) | grep -q ":$port \|:$((port + 1)) "; then break; fi
    port=$((port + 2))
done

# munge: a key of our own and a socket of our own
dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 2>/dev/null; chmod 400 "$d/munge/munge.key"
munged --force --key-file="$d/munge/munge.key" --socket="$d/munge/munge.socket" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" --seed-file="$d/munge/munged.seed" \
    >"$d/munged.out" 2>&1 || skip "munged did not start: $(tail -n 3 "$d/munged.out" "$d/munge/munged.log" 2>/dev/null | tr '\n' ' ')"
i=0; while [ ! -s "$d/munge/munged.pid" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$d/munge/munged.pid" ] && pids="$(cat "$d/munge/munged.pid")" || skip "munged wrote no pid file"

cat >"$d/slurm.conf" <<CONF
# a single-node Slurm for tests/regress/slurm_test.sh
ClusterName=tpuregress
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.socket
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=regress Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$d/slurm.conf"
slurmctld -D -i -f "$d/slurm.conf" >"$d/slurmctld.out" 2>&1 &
pids="$! $pids"
slurmd -D -f "$d/slurm.conf" -N "$host" >"$d/slurmd.out" 2>&1 &
pids="$! $pids"
logs() { tail -n 4 "$d/slurmctld.out" "$d/slurmctld.log" "$d/slurmd.out" "$d/slurmd.log" 2>/dev/null | sed 's/^/    /'; }
# the node must come up idle within 40 s
i=0; state=""
while [ $i -lt 80 ]; do
    state=$(sinfo -h -N -o '%t' 2>/dev/null | head -n 1)
    case $state in idle*|mix*|alloc*) break ;; esac
    sleep 0.5; i=$((i + 1))
done
case $state in
idle*|mix*|alloc*) echo "slurm: slurmctld and slurmd up on $host (ports $port, $((port + 1))), node $state" ;;
*) logs; skip "the Slurm node did not come up (state '${state:-none}' after 40 s): Slurm cannot start here" ;;
esac

# the job list (4 jobs) and its sbatch script, as make regress-slurm writes them
/usr/bin/python3 tests/regress/regress.py list --seeds 1 --ns 4 --xseeds 2 --stall-seeds 1 --latency-seeds 0 --boards "" \
    -o "$d/list.txt" || exit 1
/usr/bin/python3 tests/regress/regress.py sbatch "$d/list.txt" "$d/results" -o "$d/regress.sbatch" || exit 1
k=$(wc -l <"$d/list.txt")
start=$(date +%s)
jid=$(sbatch --parsable "$d/regress.sbatch" 2>"$d/sbatch.err") || { cat "$d/sbatch.err"; logs; echo "FAIL: sbatch"; exit 1; }
jid=${jid%%;*}
echo "slurm: submitted array job $jid (--array=1-$k)"
# bounded wait: 180 s
i=0
while [ $i -lt 360 ]; do
    [ -z "$(squeue -h -j "$jid" -o '%i' 2>/dev/null)" ] && break
    sleep 0.5; i=$((i + 1))
done
left=$(squeue -h -j "$jid" -o '%i %t %R' 2>/dev/null)
wall=$(( $(date +%s) - start ))
cleanup
trap - EXIT INT TERM
st=0
if [ -n "$left" ]; then echo "FAIL: the array did not finish in 180 s:"; echo "$left" | sed 's/^/    /'; st=1; fi
npass=$(find "$d/results" -name '*.pass' 2>/dev/null | wc -l)
nout=$(find "$d/results" -name "slurm-${jid}_*.out" 2>/dev/null | wc -l)
[ "$npass" -eq "$k" ] || { echo "FAIL: $npass of $k array tasks wrote a passed result"; st=1; }
[ "$nout" -eq "$k" ] || { echo "FAIL: $nout of $k task output files (slurm-${jid}_<k>.out)"; st=1; }
/usr/bin/python3 tests/regress/regress.py report "$d/list.txt" "$d/results" --summary "$d/summary.txt" \
    --junit "$d/junit.xml" || st=1
/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as ET; r = ET.parse(sys.argv[1]).getroot(); assert int(r.get("tests")) == int(sys.argv[2]) and r.get("failures") == "0"' \
    "$d/junit.xml" "$k" || { echo "FAIL: junit.xml"; st=1; }
[ $st -eq 0 ] || { for f in "$d"/results/slurm-*.out; do [ -f "$f" ] && { echo "$f:"; tail -n 5 "$f"; }; done; logs; }
echo "test-regress-slurm: array job $jid: $npass of $k tasks passed in ${wall} s: $([ $st -eq 0 ] && echo PASS || echo FAIL)"
exit $st
