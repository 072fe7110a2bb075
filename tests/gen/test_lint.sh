#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-lint: for each N given, generate the MXU and require that
#   verilator --lint-only -Wall (with the generated tpu_mxu.vlt) and
#   iverilog -g2012
# both succeed and print nothing at all (no warnings, no "sorry" messages).
# Usage: sh tests/gen/test_lint.sh path/to/gen N...
set -u
GEN=$1; shift
VERILATOR=${VERILATOR:-verilator}
T=$(mktemp -d "${TMPDIR:-/tmp}/test-lint.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
for n in "$@"; do
    d=$T/n$n
    if ! "$GEN" --mxu "$n" -o "$d"; then echo "FAIL N=$n: gen failed"; fail=1; continue; fi
    s=$(date +%s)
    (cd "$d" && $VERILATOR --lint-only -Wall tpu_mxu.vlt -F tpu_mxu.f --top-module tpu_mxu) >"$T/v.log" 2>&1
    vrc=$?
    m=$(date +%s)
    (cd "$d" && iverilog -g2012 -o "$T/a.out" -s tpu_mxu -c tpu_mxu.f) >"$T/i.log" 2>&1
    irc=$?
    e=$(date +%s)
    res=PASS
    if [ $vrc -ne 0 ] || [ -s "$T/v.log" ]; then res=FAIL; cat "$T/v.log"; fi
    if [ $irc -ne 0 ] || [ -s "$T/i.log" ]; then res=FAIL; head -n 40 "$T/i.log"; fi
    echo "N=$n: verilator --lint-only -Wall rc=$vrc ($((m - s)) s), iverilog -g2012 rc=$irc ($((e - m)) s): $res"
    [ $res = PASS ] || fail=1
    rm -rf "$d"
done
exit $fail
