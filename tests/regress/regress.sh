#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make regress: writes the job list (tests/regress/regress.py list with REGRESS_LIST_ARGS),
# runs its jobs with GNU parallel (REGRESS_JOBS at a time, under nice -n 10; a job that passed
# before is skipped: tests/regress/task.sh), then the summary and the JUnit XML.
# usage: sh tests/regress/regress.sh DIR [regress.py list options...]
#   DIR/list.txt the jobs, DIR/results/ one result per job, DIR/summary.txt, DIR/junit.xml,
#   DIR/parallel.log (GNU parallel's --joblog)
# Environment: REGRESS_JOBS (default 2). Exit 0 when every job passed.
set -u
[ $# -ge 1 ] || { echo "usage: $0 DIR [regress.py list options...]" >&2; exit 2; }
dir=$1; shift
cd "$(dirname "$0")/../.." || exit 2
command -v parallel >/dev/null 2>&1 || { echo "$0: GNU parallel is missing (apt-get install parallel)" >&2; exit 2; }
mkdir -p "$dir/results"
/usr/bin/python3 tests/regress/regress.py list "$@" -o "$dir/list.txt" || exit 2
k=$(wc -l <"$dir/list.txt")
before=0
while read -r id _; do [ -f "$dir/results/$id.pass" ] && before=$((before + 1)); done <"$dir/list.txt"
echo "regress: $k jobs, $before results passed before (not rerun), ${REGRESS_JOBS:-2} at a time"
start=$(date +%s)
seq 1 "$k" | nice -n 10 parallel --will-cite -j "${REGRESS_JOBS:-2}" --joblog "$dir/parallel.log" \
    sh tests/regress/task.sh "$dir/results" "$dir/list.txt" {} | grep -v '^SKIP' | grep -v '^PASS' || true
echo "regress: ran in $(( $(date +%s) - start )) s (wall)"
/usr/bin/python3 tests/regress/regress.py report "$dir/list.txt" "$dir/results" \
    --summary "$dir/summary.txt" --junit "$dir/junit.xml"
st=$?
# functional coverage over every job's program and model trace (tests/regress/tpu_cover.c)
cov=${TPU_COVER:-build/tools/tpu-cover}
if [ -x "$cov" ]; then
    "$cov" report --holes "${REGRESS_HOLES:-12}" -o "$dir/coverage.txt" "$dir/results" &&
        { cat "$dir/coverage.txt"; echo "regress: coverage in $dir/coverage.txt (all holes: $cov report --holes 100000 $dir/results)"; } ||
        { echo "regress: tpu-cover report failed"; st=1; }
else
    echo "regress: $cov missing: no coverage report"
fi
exit $st
