#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tpu-infer --rtl: runs one chunk of a compiled model on the verilated hardware it was compiled
# for and compares every core's trace and output with the C model's (docs/compiler.md
# "Co-simulation"). C = 1: core_tb (sim/core.mk, built for the model's memory sizes); C > 1: the
# SystemC board (sim/board_build.sh asm). Builds on demand, like make run.
#
# usage: scripts/infer_rtl.sh DIR WORK
#   DIR   the compiled model (model.txt, model.bin, image.npy)
#   WORK  tpu-infer's work folder: core<i>.args, input<i>.npy, model/core<i>.trace and
#         model/core<i>/output<i>.npy (the C model's run); the RTL's go to WORK/rtl/
# Environment: BUILD (default build), RTL_STALL (AXI back-pressure percent for the harness,
#   default 0). Exit 0 identical, 1 different or failed, 2 usage.
set -u
[ $# -eq 2 ] || { echo "usage: $0 DIR WORK" >&2; exit 2; }
dir=$1; work=$2
BUILD=${BUILD:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 2
set -- $(sed -n 's/^geom //p' "$dir/model.txt")
n=$1; ub=$2; acc=$3; wm=$4; imem=$5
axi=$(sed -n 's/^axi_data_bits //p' "$dir/model.txt")
set -- $(sed -n 's/^board //p' "$dir/model.txt")
c=$1; tr=$2; tc=$3
insns=$(( $(wc -c <"$dir/model.bin") / 16 ))
# the AXI4-Lite window reaches every IMEM size gen allows (docs/isa.md "AXI4-Lite slave"): the
# program only has to fit the IMEM it was compiled for
if [ "$insns" -gt "$imem" ]; then
    echo "infer_rtl: the program has $insns instructions, the model's IMEM holds $imem" >&2
    exit 1
fi
# gen's sizes for this model: only what differs from gen's defaults
key="N$n"; gargs=""
defaxi=64; [ "$n" -gt 16 ] && defaxi=128; [ "$n" -gt 32 ] && defaxi=256; [ "$n" -gt 64 ] && defaxi=512
[ "$axi" != "$defaxi" ] && { key="${key}_A$axi"; gargs="$gargs --axi-data-bits $axi"; }
[ "$imem" != 1024 ] && { key="${key}_I$imem"; gargs="$gargs --imem-insns $imem"; }
[ "$ub" != 4096 ] && { k=$(( ub * 2 * n / 1024 )); key="${key}_U$k"; gargs="$gargs --ub-kib $k"; }
[ "$acc" != 2048 ] && { k=$(( acc * 4 * n / 1024 )); key="${key}_Q$k"; gargs="$gargs --acc-kib $k"; }
[ "$wm" != $(( 8 * n )) ] && { k=$(( wm * 2 * n / 1024 )); key="${key}_W$k"; gargs="$gargs --wmem-kib $k"; }
mkdir -p "$work/rtl"
stall=${RTL_STALL:-0}
make -s --no-print-directory BUILD="$BUILD" "$BUILD/sim/tpu-board-cmp" >/dev/null || exit 1
if [ "$c" = 1 ]; then
    tb=$BUILD/sim/core_$key/core_tb
    echo "infer_rtl: building $tb (gen --mxu $n$gargs)" >&2
    make -s --no-print-directory BUILD="$BUILD" "$tb" >&2 || exit 1
    mkdir -p "$work/rtl/core0"
    "$tb" "@$work/core0.args" --trace "$work/rtl/core0.trace" --dump-dir "$work/rtl/core0" \
        --stall "$stall" >"$work/rtl/core_tb.log" 2>&1
    rc=$?
    tail -n 12 "$work/rtl/core_tb.log" >&2
    [ $rc -eq 0 ] || { echo "infer_rtl: core_tb failed (exit $rc)" >&2; exit 1; }
else
    topo=ring; [ "$tr" != 1 ] && topo="torus:${tr}x$tc"
    make -s --no-print-directory BUILD="$BUILD" "$BUILD/gen/gen" "$BUILD/cmodel/libtpucmodel.a" >&2 || exit 1
    tb=$(BOARD_CORE_ARGS="$(echo "$gargs" | sed 's/--axi-data-bits [0-9]*//')" \
         BOARD_AXI_BITS=$([ "$axi" != "$defaxi" ] && echo "$axi") \
         sh sim/board_build.sh asm "$n" "$c" "$topo" 64 2 | tail -n 1) || exit 1
    "$tb" --job "$work" --out "$work/rtl" --stall "$stall" >"$work/rtl/board_tb.log" 2>&1
    rc=$?
    tail -n $(( c + 4 )) "$work/rtl/board_tb.log" >&2
    [ $rc -eq 0 ] || { echo "infer_rtl: board_tb failed (exit $rc)" >&2; exit 1; }
fi
"$BUILD/sim/tpu-board-cmp" --job "$work" --mxu "$n" "$work/model" "$work/rtl" >&2 || exit 1
echo "infer_rtl: every core's trace and output identical to the model's ($c core(s), N = $n)" >&2
