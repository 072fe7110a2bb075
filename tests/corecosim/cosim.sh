#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-core-cosim at one N: every tpu-mkprog kind (random: a few seeds) on the verilated core
# against the C model,
# without back-pressure and with 30 % random stalls on every AXI channel (allops also 80 %) (sim/core_case.sh:
# traces identical, dumps identical byte for byte, counters side by side).
# usage: tests/corecosim/cosim.sh N
set -u
n=$1
out=build/tests/corecosim/N$n
st=0
c() { # c NAME STALLS KIND [tpu-mkprog options]
    name=$1; stalls=$2; shift 2
    sh sim/core_case.sh "$n" "$out/$name" "$stalls" "$@" || st=1
}
# matmul: M, K, N' not multiples of N (N > 1), K >= 4N: partial tiles padded by dma_in
c matmul   0,30    matmul --m $((3 * n + 1)) --k $((4 * n + 3)) --nout $((2 * n + 1)) --seed 1
c matmul2  0,30    matmul --m 5 --k $((5 * n - 1)) --nout $((n + 1)) --seed 2 --dist edges
c dense    0,30    dense --seed 3
c mlp      0,30    mlp --seed 4
c allops   0,30,80 allops --seed 5   # every DMA form, also under heavy back-pressure
c manyk    0,30    manyk --seed 6
c vfuncs   0,30    vfuncs --seed 7 --dist edges   # vop log, rsqrt and erf (op 12, 13, 14)
c transpose 0,30   transpose --seed 8 --dist edges   # lw transpose: dY W^T, X^T by identity
# constrained-random programs (tpu-mkprog random, issue 16): three seeds, and the two error
# codes whose end the harness decides (6: IMEM past the program is nop, as the model's; 7: an
# AXI error response)
for s in 1 2 3; do c random$s 0,30 random --seed $((n * 10 + s)); done
c random_e6 0,30 random --seed $((n * 10 + 6)) --error 6
c random_e7 0,30 random --seed $((n * 10 + 7)) --error 7
echo "test-core-cosim N=$n: $([ $st -eq 0 ] && echo PASS || echo FAIL)"
exit $st
