#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-core-cosim at one N with a non-default AXI data width B (gen --axi-data-bits B, the
# core built as build/sim/core_N<N>_A<B>): the DMA-heavy tpu-mkprog kinds (odd sizes, rows at
# every byte offset of a beat, rows of many beats) against the model at the same width,
# without back-pressure and with 30 % stalls (sim/core_case.sh: traces and dumps identical,
# DMA_BUSY equal to the model's at stall 0); and the model's trace at B is its trace at N's
# default width, byte for byte (only the timing depends on the width).
# usage: tests/corecosim/axi.sh N B
set -u
n=$1; b=$2
out=build/tests/corecosim/N${n}_A$b
run=${TPU_RUN:-build/tools/tpu-run}
st=0
c() { # c NAME STALLS KIND [tpu-mkprog options]
    name=$1; stalls=$2; shift 2
    CORE_AXI_BITS=$b sh sim/core_case.sh "$n" "$out/$name" "$stalls" "$@" || { st=1; return; }
    d=$out/$name
    "$run" --mxu "$n" --prog "$d/prog/prog.s" "@$d/prog/job.args" --trace "$d/model_default.trace" \
        --dump-dir "$d/model_default" >"$d/model_default.log" 2>&1
    if cmp -s "$d/model.trace" "$d/model_default.trace"; then
        echo "    model trace at $b bits = model trace at the default width ($(grep -m1 -o 'axi_data_bits=[0-9]*' "$d/model_default.log"))"
    else
        echo "FAIL: N=$n B=$b $name: the model's trace depends on the AXI data width"; st=1
    fi
}
# matmul: M, K, N' not multiples of N, host rows of 2K bytes: every offset in a beat
c matmul  0,30 matmul --m $((3 * n + 1)) --k $((4 * n + 3)) --nout $((2 * n + 1)) --seed 11
c mlp     0,30 mlp --seed 12
c allops  0,30 allops --seed 13   # every DMA form, rows of 6 and 12 bytes
c manyk   0,30 manyk --seed 14    # long host rows, bursts across 4 KiB
echo "test-core-cosim N=$n B=$b: $([ $st -eq 0 ] && echo PASS || echo FAIL)"
exit $st
