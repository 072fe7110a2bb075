#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-cosim-gating: the PEs' clock enables are real (tests/cosim/gating_tb.sv): with X on
# every data input in idle cycles, results are those of a run with random idle data and
# out_data_o never shows an X after the first result. Icarus (every register starts at X).
# Usage: sh tests/cosim/gating.sh GEN [N:S ...]   (default: 1:1 3:1 4:2 3:3 5:3)
set -u
GEN=$1; shift
[ $# -gt 0 ] || set -- 1:1 3:1 4:2 3:3 5:3
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
fail=0
for ns in "$@"; do
    n=${ns%%:*}; s=${ns#*:}; d=$T/n${n}_s$s
    if ! "$GEN" --mxu "$n" --pe-stages "$s" -o "$d" >/dev/null; then
        echo "  FAILED: N=$n S=$s: gen failed"; fail=1; continue
    fi
    files=$(grep -v '^//' "$d/tpu_mxu.f" | sed "s|^|$d/|")
    # shellcheck disable=SC2086
    if ! iverilog -g2012 -DMXU_N="$n" -s gating_tb -o "$d/a.out" "$here/gating_tb.sv" $files \
        >"$d/build.log" 2>&1 || [ -s "$d/build.log" ]; then
        echo "  FAILED: N=$n S=$s: iverilog"; sed 's/^/    /' "$d/build.log"; fail=1; continue
    fi
    seed=$((n * 10 + s))
    vvp -n "$d/a.out" +seed=$seed >"$d/run.log" 2>&1
    if grep -q "^gating N=$n: [0-9]* vectors" "$d/run.log" && ! grep -q FAILED "$d/run.log"; then
        echo "  ok: S=$s $(grep "^gating N=" "$d/run.log")"
    else
        echo "  FAILED: N=$n S=$s (+seed=$seed)"; sed 's/^/    /' "$d/run.log" | head -n 20; fail=1
    fi
done
[ "$fail" -eq 0 ] && echo "cosim-gating: $# passed" || echo "cosim-gating: FAILED"
exit "$fail"
