#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-vpu-lint: for each L given, generate the VPU (gen --mxu 1 --vpu-lanes L) and require
# that verilator --lint-only -Wall (with the generated tpu_vpu.vlt) and iverilog -g2012 both
# succeed and print nothing at all.
# Usage: sh tests/vpucosim/lint.sh path/to/gen L...
set -u
GEN=$1; shift
VERILATOR=${VERILATOR:-verilator}
T=$(mktemp -d "${TMPDIR:-/tmp}/test-vpu-lint.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
for l in "$@"; do
    d=$T/l$l
    if ! "$GEN" --mxu 1 --vpu-lanes "$l" -o "$d"; then echo "FAIL L=$l: gen failed"; fail=1; continue; fi
    s=$(date +%s)
    (cd "$d" && $VERILATOR --lint-only -Wall tpu_vpu.vlt -F tpu_vpu.f --top-module tpu_vpu) >"$T/v.log" 2>&1
    vrc=$?
    m=$(date +%s)
    (cd "$d" && iverilog -g2012 -o "$T/a.out" -s tpu_vpu -c tpu_vpu.f) >"$T/i.log" 2>&1
    irc=$?
    e=$(date +%s)
    res=PASS
    if [ $vrc -ne 0 ] || [ -s "$T/v.log" ]; then res=FAIL; head -n 40 "$T/v.log"; fi
    if [ $irc -ne 0 ] || [ -s "$T/i.log" ]; then res=FAIL; head -n 40 "$T/i.log"; fi
    echo "L=$l: verilator --lint-only -Wall rc=$vrc ($((m - s)) s), iverilog -g2012 rc=$irc ($((e - m)) s): $res"
    [ $res = PASS ] || fail=1
    rm -rf "$d"
done
exit $fail
