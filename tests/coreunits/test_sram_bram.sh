#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tpu_sram maps to block RAM: Yosys synth_xilinx (7-series) of the generated tpu_sram at the
# shapes of a UB row (N = 4: 64 bits x 512), an ACC row (N = 4: 128 bits x 2048) and an IMEM
# word (32 bits x 1024) must give only RAMB18E1/RAMB36E1 cells (plus the I/O buffers and the
# clock buffer): no LUT RAM, no flip-flops, no logic (so read-first and the registered read are
# the RAM's own). Usage: test_sram_bram.sh GEN (~12 s)
set -u
GEN=$1
YOSYS=${YOSYS:-yosys}
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
"$GEN" --mxu 4 --cores 1 -o "$T/rtl" || { echo "test-sram-bram: gen failed"; exit 1; }
pass=0 fail=0
for shape in "64 512 9" "128 2048 11" "32 1024 10"; do
    set -- $shape
    if ! "$YOSYS" -q -p "read_verilog -sv $T/rtl/tpu_sram.sv; chparam -set Width $1 -set Depth $2 -set AddrW $3 tpu_sram; synth_xilinx -top tpu_sram; tee -q -o $T/stat.txt stat" >"$T/log" 2>&1; then
        cat "$T/log"; echo "FAIL ${1}x$2: yosys failed"; fail=$((fail + 1)); continue
    fi
    # the cell lines of the stat: "     <type>   <count>"
    cells=$(sed -n '/Number of cells/,/^$/p' "$T/stat.txt" | sed 1d | awk 'NF == 2 { print $1 }')
    rams=$(echo "$cells" | grep -c '^RAMB\(18\|36\)E1$')
    other=$(echo "$cells" | grep -v '^RAMB\(18\|36\)E1$' | grep -v '^[IO]BUF$' | grep -v '^BUFG$' | tr '\n' ' ')
    if [ "$rams" -ge 1 ] && [ -z "$other" ]; then
        echo "PASS ${1} bits x $2: $(sed -n '/Number of cells/,/^$/p' "$T/stat.txt" | grep RAMB | tr -s ' ' | tr '\n' ' ')"
        pass=$((pass + 1))
    else
        echo "FAIL ${1} bits x $2: block RAM cells: $rams, other cells: ${other:-none}"
        fail=$((fail + 1))
    fi
done
echo "test-sram-bram: $pass passed, $fail failed"
[ $fail -eq 0 ]
