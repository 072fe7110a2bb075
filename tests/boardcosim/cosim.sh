#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-board-cosim: sim/board_case.sh over the matrix of tests/boardcosim/suite.mk. The
# harnesses are built first, one at a time (sim/board_build.sh; the core once per N); then the
# checks of tpu-board-cmp (a changed element, a changed dump byte) and of board_tb (an error
# halt with a peer left waiting, a deadlock ended by --max-cycles), and collectives in a loop.
# usage: tests/boardcosim/cosim.sh [test|full]
#   test  (default, make test) the matrix at N = 3 and 4 with gen's default AXI width, then
#         the checks
#   full  (test-board-cosim-full, make test-full) only the cases that need a core of their
#         own (each ~45 s to build): N = 8; N = 4 with 256-bit AXI data; N = 3 with W = 32
set -u
set=${1:-test}
case $set in test|full) ;; *) echo "$0: set '$set': expected test or full" >&2; exit 2;; esac
# The runs are short (a few thousand cycles): compile the models for build time, not speed.
SIM_OPT=${SIM_OPT:--O0}; export SIM_OPT
out=${BUILD:-build}/tests/boardcosim
mkdir -p "$out"
st=0
build() { # N C TOPOLOGY [W D] -> the harness path (BOARD_AXI_BITS from the environment)
    sh sim/board_build.sh asm "$1" "$2" "$3" "${4:-64}" "${5:-2}" 2>"$out/build_$1_$2.log" | tail -n 1
}
all=allreduce+bcast+sendrecv+barrier+dptrain+random-board
# N C TOPOLOGY W D STALLS KINDS (joined by +) [B]. Then: another flit packing (W = 128: 4 fp32
# or 8 bf16 per flit, rows of N = 3 end inside a flit) and chunk edges (C = 3 and 6 do not
# divide the regions), D = 0 and 5, on one N = 3 core. The full set: N = 8; a non-default AXI
# data width B = 256 (gen --axi-data-bits, the model's --axi-data-bits) on every core; W = 32
# (one fp32 per flit) on C = 6 torus:2x3, D = 5.
if [ "$set" = test ]; then
    set -- "4 2 ring 64 2 0,30 plain:dense+$all" "4 4 torus:2x2 64 2 0,30 $all" \
           "4 8 torus:2x4 64 2 0,30 $all" "4 4 ring 64 2 0,30 $all" \
           "3 3 ring 128 0 0,30 collall+random-board" "3 6 torus:2x3 128 5 30 collall+random-board"
else
    set -- "8 2 ring 64 2 0,30 dptrain" "4 2 ring 64 2 0,30 dptrain+plain:mlp 256" \
           "3 6 torus:2x3 32 5 30 collall"
fi
for cfg in "$@"; do
    set -- $cfg
    n=$1; c=$2; topo=$3; w=$4; d=$5; stalls=$6; kinds=$(echo "$7" | tr '+' ' '); axi=${8:-}
    tb=$(BOARD_AXI_BITS=$axi build "$n" "$c" "$topo" "$w" "$d") && [ -x "$tb" ] ||
        { echo "FAIL: building board_tb N=$n C=$c $topo W=$w D=$d${axi:+ B=$axi}"; cat "$out/build_${n}_$c.log"; st=1; continue; }
    tn=$(echo "$topo" | tr -d ':')
    for k in $kinds; do
        kn=$(echo "$k" | tr ':' '_')
        BOARD_AXI_BITS=$axi BOARD_TB=$tb BOARD_W=$w BOARD_D=$d sh sim/board_case.sh "$n" "$c" "$topo" \
            "$out/n${n}_c${c}_${tn}_w${w}_d${d}${axi:+_a$axi}_$kn" "$stalls" "$k" || st=1
    done
done
if [ "$set" = full ]; then
    [ $st -eq 0 ] && echo "test-board-cosim-full: PASS" || echo "test-board-cosim-full: FAIL"
    exit $st
fi
# The collectives run cycle by cycle in the model (docs/board.md "Cycle model"): at stall 0
# the jobs of one kind of collective and core work (allreduce, dptrain, sendrecv, barrier,
# bcast but on the 2x4 torus, collall on the ring of 3) must give every core's CYCLES equal to
# the RTL's.
for j in "$out"/n*_allreduce "$out"/n*_dptrain "$out"/n*_sendrecv "$out"/n*_barrier \
         "$out"/n*_c[24]_*_bcast "$out"/n3_c3_ring_w128_d0_collall; do
    [ -d "$j/rtl_s0" ] && [ -d "$j/model" ] || continue
    r=$(cat "$j"/rtl_s0/core*.counters | sed -n 's/.*CYCLES=\([0-9]*\).*/\1/p' | tr '\n' ' ')
    m=$(cat "$j"/model/core*.counters | sed -n 's/.*CYCLES=\([0-9]*\).*/\1/p' | tr '\n' ' ')
    if [ -n "$r" ] && [ "$r" = "$m" ]; then
        echo "PASS: $(basename "$j") stall=0: every core's CYCLES equal to the model's ($r)"
    else
        echo "FAIL: $(basename "$j") stall=0: CYCLES per core RTL '$r', model '$m'"; st=1
    fi
done
# tpu-board-cmp must name a divergence: element 1 of core 1's first ACC row write and the last
# byte of its dump changed in a copy of the plain:dense run
src=$out/n4_c2_ring_w64_d2_plain_dense
if [ -d "$src/rtl_s0" ]; then
    f=$out/fault; rm -rf "$f"; cp -r "$src/rtl_s0" "$f"
    line=$(grep -n -m1 '^w [0-9]* acc ' "$f/core1.trace" | cut -d: -f1)
    old=$(sed -n "${line}p" "$f/core1.trace" | cut -d' ' -f6)
    new=$(printf '%08x' $(( 0x$old ^ 4 )))
    awk -v l="$line" -v v="$new" 'NR == l { $6 = v } { print }' "$src/rtl_s0/core1.trace" >"$f/core1.trace"
    sq=$(sed -n "${line}p" "$f/core1.trace" | cut -d' ' -f2)
    row=$(sed -n "${line}p" "$f/core1.trace" | cut -d' ' -f4)
    build/sim/tpu-board-cmp --job "$src/job" --mxu 4 "$src/model" "$f" >"$f.log" 2>&1; rc=$?
    if [ $rc -eq 1 ] && grep -q "^tpu-board-cmp: core 1:" "$f.log" &&
       grep -q "dynamic instruction $sq (pc " "$f.log" && grep -q "acc row $row .*element 1" "$f.log" &&
       grep -q "FAIL: 1 of 2 cores differ" "$f.log"; then
        echo "PASS: tpu-board-cmp names the flipped element (core 1, dynamic instruction $sq, acc row $row, element 1)"
    else
        echo "FAIL: tpu-board-cmp on a flipped trace element (exit $rc):"; sed 's/^/    /' "$f.log"; st=1
    fi
    cp "$src/rtl_s0/core1.trace" "$f/core1.trace"
    d=$(ls "$f/core1" | head -n 1)
    pos=$(( $(wc -c <"$f/core1/$d") - 1 ))
    printf '\125' | dd of="$f/core1/$d" bs=1 seek=$pos conv=notrunc 2>/dev/null
    build/sim/tpu-board-cmp "$src/model" "$f" >"$f.log" 2>&1; rc=$?
    if [ $rc -eq 1 ] && grep -q "core 1: dump $d differs at byte $pos" "$f.log"; then
        echo "PASS: tpu-board-cmp names the changed dump byte (core 1, $d, byte $pos)"
    else
        echo "FAIL: tpu-board-cmp on a flipped dump byte (exit $rc):"; sed 's/^/    /' "$f.log"; st=1
    fi
fi
# A core that stops with an error leaves its peer waiting: board_tb stops, names the busy core
# and its PC, and the erring core's trace ends as the model's (e 0 0 8: send to itself); two cores
# that both wait in recv never finish: --max-cycles ends the run with a timeout.
tb=$(build 4 2 ring)
e=$out/errors; rm -rf "$e"; mkdir -p "$e/err" "$e/hang"
printf 'send acc row=0 rows=1 core=0\nhalt\n' >"$e/err/core0.s"
printf 'recv acc row=0 rows=1 core=0\nhalt\n' >"$e/err/core1.s"
printf 'recv acc row=0 rows=1 core=1\nhalt\n' >"$e/hang/core0.s"
printf 'recv acc row=0 rows=1 core=0\nhalt\n' >"$e/hang/core1.s"
for j in err hang; do for i in 0 1; do echo "--prog core$i.s" >"$e/$j/core$i.args"; done; done
"$tb" --job "$e/err" --out "$e/err_rtl" >"$e/err.log" 2>&1; rc=$?
build/tools/tpu-board-run --mxu 4 --cores 2 --topology ring --job "$e/err" --out "$e/err_model" >"$e/err_model.log" 2>&1
if [ $rc -eq 1 ] && grep -q "^board_tb: core 0: error 8 " "$e/err.log" &&
   grep -q "^board_tb: core 1 still busy (STATUS 0x1) at PC 1 " "$e/err.log" &&
   [ "$(tail -n 1 "$e/err_rtl/core0.trace")" = "e 0 0 8" ] &&
   [ "$(grep -v '^#' "$e/err_rtl/core0.trace")" = "$(grep -v '^#' "$e/err_model/core0.trace")" ]; then
    echo "PASS: error 8 on core 0: board_tb stops, core 1 named busy (PC 1, its recv in progress), core 0's trace as the model's"
else
    echo "FAIL: error 8 on core 0 (exit $rc):"; sed 's/^/    /' "$e/err.log"; st=1
fi
"$tb" --job "$e/hang" --out "$e/hang_rtl" --max-cycles 3000 >"$e/hang.log" 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "ERROR: timeout" "$e/hang.log" &&
   [ "$(grep -c '^board_tb: core [01] still busy (STATUS 0x1) at PC 1$' "$e/hang.log")" = 2 ]; then
    echo "PASS: two cores waiting in recv: timeout after --max-cycles, both named busy"
else
    echo "FAIL: deadlock and --max-cycles (exit $rc):"; sed 's/^/    /' "$e/hang.log"; st=1
fi
# Collectives in a loop (docs/isa.md "Loops"): core 0 sends rows 2 i (x1) to core 1, which
# receives them at 10 + 3 i (x3), and both all-reduce row i (x2), for i = 0 .. 2: every
# core's trace, dumps and counters as the model's
lp=$out/loops; rm -rf "$lp"; mkdir -p "$lp/job"
python3 - "$lp/job/f.npy" <<'EOF'
import struct, sys
h = "{'descr': '<f4', 'fortran_order': False, 'shape': (8, 4), }"
h += " " * (63 - (10 + len(h)) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() +
            struct.pack("<32f", *[i + 0.5 for i in range(32)]))
EOF
cat >"$lp/job/core0.s" <<'EOF'
        dma_in acc row=0 rows=20 cols=4 addr=0x1000 stride=16
        stride x1 l0=2
        stride x2 l0=1
        loop 0 count=3 body=3
        send acc row=0+x1 rows=2 core=1
        allreduce acc row=0+x2 rows=1
        nop
        dma_out acc row=0 rows=8 cols=4 addr=0x8000 stride=16
        halt
EOF
cat >"$lp/job/core1.s" <<'EOF'
        dma_in acc row=0 rows=20 cols=4 addr=0x1000 stride=16
        stride x2 l0=1
        stride x3 l0=3
        loop 0 count=3 body=2
        recv acc row=10+x3 rows=2 core=0
        allreduce acc row=0+x2 rows=1
        dma_out acc row=0 rows=20 cols=4 addr=0x8000 stride=16
        halt
EOF
printf -- '--prog core0.s\n--load 0x1000=f.npy\n--dump 0x8000=o0.npy:f32:8x4\n--hostmem-mib 1\n' >"$lp/job/core0.args"
printf -- '--prog core1.s\n--load 0x1000=f.npy\n--dump 0x8000=o1.npy:f32:20x4\n--hostmem-mib 1\n' >"$lp/job/core1.args"
build/tools/tpu-board-run --mxu 4 --cores 2 --topology ring --job "$lp/job" --out "$lp/model" >"$lp/model.log" 2>&1; mrc=$?
"$tb" --job "$lp/job" --out "$lp/rtl" >"$lp/rtl.log" 2>&1; rc=$?
if [ $mrc -eq 0 ] && [ $rc -eq 0 ] &&
   build/sim/tpu-board-cmp --job "$lp/job" --mxu 4 "$lp/model" "$lp/rtl" >"$lp/cmp.log" 2>&1 &&
   cmp -s "$lp/model/core0.counters" "$lp/rtl/core0.counters" &&
   cmp -s "$lp/model/core1.counters" "$lp/rtl/core1.counters"; then
    echo "PASS: send/recv/allreduce in a loop with index registers (C = 2 ring): traces, dumps and counters as the model's (core 1: $(sed 's/^counters: //' "$lp/rtl/core1.counters"))"
else
    echo "FAIL: collectives in a loop (model exit $mrc, board_tb exit $rc):"
    cat "$lp/cmp.log" "$lp/model/core"*.counters "$lp/rtl/core"*.counters 2>/dev/null | sed 's/^/    /'; st=1
fi
[ $st -eq 0 ] && echo "test-board-cosim: PASS" || echo "test-board-cosim: FAIL"
exit $st
