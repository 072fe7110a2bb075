#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-board-lint: gen's tpu_board (with tpu_board_axil, the cores and the NoC) must be silent
# under verilator --lint-only -Wall (with tpu_board.vlt) and iverilog -g2012.
# usage: sh tests/boardcosim/lint.sh path/to/gen
set -u
GEN=$1
VERILATOR=${VERILATOR:-verilator}
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
for cfg in "2 2 ring" "2 4 torus:2x2" "2 3 ring" "2 2 ring 256"; do
    set -- $cfg
    d=$T/n$1_c$2_$#
    what="N=$1 C=$2 $3${4:+ axi_data_bits=$4}"
    if ! "$GEN" --mxu "$1" --cores "$2" --topology "$3" ${4:+--axi-data-bits "$4"} -o "$d" >/dev/null; then
        echo "FAIL $what: gen failed"; fail=1; continue
    fi
    if (cd "$d" && $VERILATOR --lint-only -Wall tpu_board.vlt -F tpu_board.f --top-module tpu_board) >"$T/v.log" 2>&1 &&
       [ ! -s "$T/v.log" ]; then
        echo "ok   $what: verilator --lint-only -Wall tpu_board: clean"
    else
        echo "FAIL $what: verilator --lint-only -Wall tpu_board:"; head -n 40 "$T/v.log"; fail=1
    fi
    if (cd "$d" && iverilog -g2012 -s tpu_board -o "$T/b.vvp" -c tpu_board.f) >"$T/i.log" 2>&1 &&
       [ ! -s "$T/i.log" ]; then
        echo "ok   $what: iverilog -g2012 tpu_board: clean"
    else
        echo "FAIL $what: iverilog -g2012 tpu_board:"; head -n 40 "$T/i.log"; fail=1
    fi
    # the shape is tied to constants, core i gets core_id_i = i
    if grep -q "parameter int Rows  = $(sed -n 's/^\/\/ board: topology=[a-z]* \([0-9]*\)x.*/\1/p' "$d/tpu_board.sv")," "$d/tpu_board.sv" &&
       grep -q "core_id_i       (6'(i))" "$d/tpu_board.sv" && grep -q "begin : g_core" "$d/tpu_board.sv"; then
        echo "ok   $what: g_core[i].u_core with core_id_i = i and the shape as constants"
    else
        echo "FAIL $what: tpu_board.sv lacks the g_core loop, core_id_i = i or the shape"; fail=1
    fi
done
[ $fail -eq 0 ] && echo "test-board-lint: PASS" || echo "test-board-lint: FAIL"
exit $fail
