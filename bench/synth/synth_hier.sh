#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The per-submodule breakdown of a design: one Yosys synth_xilinx run WITHOUT -flatten (out
# of context, no I/O or clock buffers), then `stat -json` of every module; report.py hier
# sums each submodule's subtree and writes NAME_FAMILY.hier.json.
#   synth_hier.sh NAME FAMILY TOP OUTDIR FILE.sv...
# The hierarchy stops cross-module optimisation (constants and unused outputs are not
# propagated through ports), so the total is a little above the flattened run's
# (synth_xilinx.sh, the figures of the table); the breakdown is what this run is for.
set -eu
name=$1; fam=$2; top=$3; out=$4; shift 4
mkdir -p "$out"
b="$out/${name}_$fam.hier"
start=$(date +%s)
yosys -q -l "$b.log" -p "read_verilog -sv $*; \
synth_xilinx -top $top -family $fam -noiopad -noclkbuf; \
tee -q -o $b.stat.json stat -json" >/dev/null
secs=$(( $(date +%s) - start ))
python3 "$(dirname "$0")/report.py" hier "$name" "$fam" "$top" "$b" "$secs" >"$b.json"
echo "synth (hierarchical) $name ($fam, top $top): $secs s -> $b.json"
