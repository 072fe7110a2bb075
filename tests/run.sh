#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs each named make target as one test suite, prints a line per suite and a closing
# "N passed, N failed" line; exits 1 if any suite failed. Each suite's output goes to
# build/test-logs/<suite>.log and is shown in full when the suite fails.
set -u
MAKE=${MAKE:-make}
mkdir -p build/test-logs
pass=0; fail=0; failed=""
for t in "$@"; do
    log="build/test-logs/$t.log"
    start=$(date +%s)
    if $MAKE --no-print-directory "$t" >"$log" 2>&1; then
        pass=$((pass + 1)); res=PASS
    else
        fail=$((fail + 1)); res=FAIL; failed="$failed $t"
    fi
    echo "== $t: $res ($(( $(date +%s) - start )) s)"
    if [ "$res" = FAIL ]; then
        echo "---- $log (last 60 lines) ----"; tail -n 60 "$log"; echo "----"
    fi
done
[ -n "$failed" ] && echo "failed suites:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
