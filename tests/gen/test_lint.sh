#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-lint: for each N given, generate the MXU and the core and require that
#   verilator --lint-only -Wall (with the generated tpu_mxu.vlt, tpu_core.vlt) and
#   iverilog -g2012
# both succeed and print nothing at all (no warnings, no "sorry" messages), for tpu_mxu and
# for tpu_core.
# Prints each tool's wall time and, when /usr/bin/time exists, its peak memory.
# Usage: sh tests/gen/test_lint.sh path/to/gen N[:S][/B]...   (S: gen --pe-stages S, default 1;
#        B: gen --axi-data-bits B, default gen's rule for N)
set -u
GEN=$1; shift
VERILATOR=${VERILATOR:-verilator}
T=$(mktemp -d "${TMPDIR:-/tmp}/test-lint.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
# measure LOG CMD...: run CMD with its output in LOG; the peak RSS goes to LOG.mem
if [ -x /usr/bin/time ]; then
    measure() { log=$1; shift; /usr/bin/time -f %M -o "$log.mem" "$@" >"$log" 2>&1; }
else
    measure() { log=$1; shift; echo "?" >"$log.mem"; "$@" >"$log" 2>&1; }
fi
mem() { m=$(tail -n 1 "$1.mem"); case $m in *[!0-9]*|"") echo "? MB";; *) echo "$((m / 1024)) MB";; esac; }
for ns in "$@"; do
    axi=; case $ns in */*) axi=${ns#*/}; ns=${ns%%/*} ;; esac
    n=${ns%%:*}; st=1
    case $ns in *:*) st=${ns#*:} ;; esac
    d=$T/n$n
    if ! "$GEN" --mxu "$n" --pe-stages "$st" ${axi:+--axi-data-bits "$axi"} -o "$d"; then
        echo "FAIL N=$n S=$st${axi:+ B=$axi}: gen failed"; fail=1; continue
    fi
    s=$(date +%s)
    (cd "$d" && measure "$T/v.log" $VERILATOR --lint-only -Wall tpu_mxu.vlt -F tpu_mxu.f --top-module tpu_mxu)
    vrc=$?
    m=$(date +%s)
    (cd "$d" && measure "$T/i.log" iverilog -g2012 -o "$T/a.out" -s tpu_mxu -c tpu_mxu.f)
    irc=$?
    e=$(date +%s)
    res=PASS
    if [ $vrc -ne 0 ] || [ -s "$T/v.log" ]; then res=FAIL; cat "$T/v.log"; fi
    if [ $irc -ne 0 ] || [ -s "$T/i.log" ]; then res=FAIL; head -n 40 "$T/i.log"; fi
    echo "N=$n S=$st: verilator --lint-only -Wall rc=$vrc ($((m - s)) s, $(mem "$T/v.log")), iverilog -g2012 rc=$irc ($((e - m)) s, $(mem "$T/i.log")): $res"
    [ $res = PASS ] || fail=1
    # the core (docs/isa.md), which gen writes when the VPU has N lanes (the default)
    if [ -f "$d/tpu_core.f" ]; then
        s=$(date +%s)
        (cd "$d" && measure "$T/v.log" $VERILATOR --lint-only -Wall tpu_core.vlt -F tpu_core.f --top-module tpu_core)
        vrc=$?
        m=$(date +%s)
        (cd "$d" && measure "$T/i.log" iverilog -g2012 -o "$T/a.out" -s tpu_core -c tpu_core.f)
        irc=$?
        e=$(date +%s)
        res=PASS
        if [ $vrc -ne 0 ] || [ -s "$T/v.log" ]; then res=FAIL; cat "$T/v.log"; fi
        if [ $irc -ne 0 ] || [ -s "$T/i.log" ]; then res=FAIL; head -n 40 "$T/i.log"; fi
        echo "N=$n S=$st${axi:+ B=$axi} core: verilator --lint-only -Wall rc=$vrc ($((m - s)) s, $(mem "$T/v.log")), iverilog -g2012 rc=$irc ($((e - m)) s, $(mem "$T/i.log")): $res"
        [ $res = PASS ] || fail=1
    else
        echo "FAIL N=$n S=$st: gen wrote no tpu_core.f"; fail=1
    fi
    rm -rf "$d"
done
exit $fail
