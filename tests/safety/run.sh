#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# usage: tests/safety/run.sh WORK TOOLS GEN -- runs every part of test-safety (suite.mk);
# each part prints "ok ..." / "FAIL ..." lines and exits non-zero on a failure.
set -u
work=$1; tools=$(cd "$2" && pwd); gen=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"; work=$(cd "$work" && pwd)
rc=0
for part in compile train tools; do
    [ -f "$here/$part.sh" ] || continue
    mkdir -p "$work/$part"
    echo "== test-safety: $part"
    sh "$here/$part.sh" "$work/$part" "$tools" "$gen" || rc=1
done
exit $rc
