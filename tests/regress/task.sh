#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs job K (1-based line K) of a regression job list (tests/regress/regress.py list) and
# records its result in RESULTS: ID.pass or ID.fail (the seconds it took and its replay
# command), ID.log (its output). A job that passed before is not run again (make regress is
# resumable); a failed one is. Used by GNU parallel (make regress) and by a Slurm array task
# (make regress-slurm: K = $SLURM_ARRAY_TASK_ID).
# usage: sh tests/regress/task.sh RESULTS LIST K
set -u
[ $# -eq 3 ] || { echo "usage: $0 RESULTS LIST K" >&2; exit 2; }
res=$1; list=$2; k=$3
cd "$(dirname "$0")/../.." || exit 2
line=$(sed -n "${k}p" "$list")
[ -n "$line" ] || { echo "$0: $list has no job $k" >&2; exit 2; }
id=${line%% *}; args=${line#* }
if [ -f "$res/$id.pass" ]; then echo "SKIP (passed before): $id"; exit 0; fi
mkdir -p "$res"
rm -f "$res/$id.fail"
start=$(date +%s.%N 2>/dev/null || date +%s)
# shellcheck disable=SC2086
REGRESS_OUT=$res/$id.d sh tests/regress/job.sh $args >"$res/$id.log" 2>&1
st=$?
# the job's functional coverage (tests/regress/tpu_cover.c), kept when its folder goes
if [ -f "$res/$id.d/cover.cov" ]; then mv "$res/$id.d/cover.cov" "$res/$id.cov"; else rm -f "$res/$id.cov"; fi
secs=$(awk -v a="$start" -v b="$(date +%s.%N 2>/dev/null || date +%s)" 'BEGIN { printf "%.2f", b - a }')
if [ $st -eq 0 ]; then
    rm -rf "$res/$id.d"
    printf '%s\nsh tests/regress/job.sh %s\n' "$secs" "$args" >"$res/$id.pass.tmp" && mv "$res/$id.pass.tmp" "$res/$id.pass"
    echo "PASS: $id ($secs s)"
else
    printf '%s\nsh tests/regress/job.sh %s\n' "$secs" "$args" >"$res/$id.fail"
    echo "FAIL: $id ($secs s): replay: sh tests/regress/job.sh $args"
fi
[ $st -eq 0 ]
