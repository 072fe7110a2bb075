#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# One Yosys synth_xilinx run, out of context (no I/O buffers, no clock buffer), flattened.
#   synth_xilinx.sh NAME FAMILY TOP OUTDIR FILE.sv...
# FAMILY: xc7 (7-series: DSP48E1, RAMB18E1/36E1) or xcup (UltraScale+: DSP48E2, RAMB*E2).
# The synthesis is split at the map_memory label so that the memories the design infers
# ($mem_v2 cells, with size and read-port clocking) are dumped (RTLIL) to NAME_FAMILY.mem.il
# before they are mapped; the final cell counts go to NAME_FAMILY.stat.json, the log (with
# the ltp -noff longest path) to NAME_FAMILY.log, and report.py turns them into
# NAME_FAMILY.json. The files must be Yosys-0.23-readable (flatten_packed.py).
set -eu
name=$1; fam=$2; top=$3; out=$4; shift 4
mkdir -p "$out"
b="$out/${name}_$fam"
opts="-top $top -family $fam -flatten -noiopad -noclkbuf"
start=$(date +%s)
yosys -q -l "$b.log" -p "read_verilog -sv $*; \
synth_xilinx $opts -run :map_memory; \
tee -q -o $b.mem.il dump t:\$mem_v2 t:\$mem; \
synth_xilinx $opts -run map_memory:; \
tee -q -o $b.stat.json stat -json; tee -a $b.log stat -tech xilinx; ltp -noff * t:FD* %d t:RAMB* %d t:SRL* %d" >/dev/null
secs=$(( $(date +%s) - start ))
python3 "$(dirname "$0")/report.py" run "$name" "$fam" "$top" "$b" "$secs" >"$b.json"
echo "synth $name ($fam, top $top): $secs s -> $b.json"
