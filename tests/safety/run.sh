#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# usage: tests/safety/run.sh WORK TOOLS GEN -- runs every part of test-safety (suite.mk);
# each part prints "ok ..." / "FAIL ..." lines and exits non-zero on a failure; the closing
# line counts the checks of all parts.
set -u
work=$1; tools=$(cd "$2" && pwd); gen=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"; work=$(cd "$work" && pwd)
rc=0
for part in compile train tools; do
    mkdir -p "$work/$part"
    echo "== test-safety: $part"
    sh "$here/$part.sh" "$work/$part" "$tools" "$gen" >"$work/$part.log" 2>&1 || rc=1
    cat "$work/$part.log"
done
pass=$(cat "$work"/*.log | grep -c '^ok')
fail=$(cat "$work"/*.log | grep -c '^FAIL')
[ $rc -eq 0 ] || [ "$fail" -gt 0 ] || fail=1  # a part that failed without a FAIL line
echo "test-safety: $pass passed, $fail failed"
exit $rc
