#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-board-cosim: sim/board_case.sh over the matrix of tests/boardcosim/suite.mk. The
# harnesses are built first, one at a time (sim/board_build.sh; the core once per N).
set -u
out=${BUILD:-build}/tests/boardcosim
mkdir -p "$out"
st=0
build() { # N C TOPOLOGY -> the harness path
    sh sim/board_build.sh asm "$1" "$2" "$3" 64 2 2>"$out/build_$1_$2.log" | tail -n 1
}
for cfg in "4 2 ring" "4 4 torus:2x2" "4 8 torus:2x4" "4 4 ring" "8 2 ring"; do
    set -- $cfg
    tb=$(build "$1" "$2" "$3") && [ -x "$tb" ] ||
        { echo "FAIL: building board_tb N=$1 C=$2 $3"; cat "$out/build_$1_$2.log"; st=1; continue; }
    tn=$(echo "$3" | tr -d ':')
    if [ "$1" = 8 ]; then kinds="dptrain"; else kinds="allreduce bcast sendrecv barrier dptrain"; fi
    [ "$1 $2 $3" = "4 2 ring" ] && kinds="plain:dense $kinds"
    for k in $kinds; do
        kn=$(echo "$k" | tr ':' '_')
        BOARD_TB=$tb sh sim/board_case.sh "$1" "$2" "$3" "$out/n$1_c$2_${tn}_$kn" 0,30 "$k" || st=1
    done
done
[ $st -eq 0 ] && echo "test-board-cosim: PASS" || echo "test-board-cosim: FAIL"
exit $st
