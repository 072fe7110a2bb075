#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-board-flat: the flat build (one verilated tpu_board: the window decoder, the cores and
# the NoC in one model) against the assembled build (verilated cores on a verilated NoC, the
# host on each core's AXI4-Lite port): the same job, every core's trace and every dump must be
# byte-identical (cmp), and both must agree with the model (tpu-board-cmp).
# usage: tests/boardcosim/flat.sh [test|full]
#   test  (default, make test) N = 4: C = 2 ring and C = 4 torus:2x2
#   full  (test-board-flat-full, make test-full) N = 4, C = 2 ring with 256-bit AXI data
#         masters (BOARD_AXI_BITS, the model's --axi-data-bits): two builds of their own (the
#         flat board and the assembled board's core)
set -u
set=${1:-test}
case $set in test|full) ;; *) echo "$0: set '$set': expected test or full" >&2; exit 2;; esac
# The runs are short (a few thousand cycles): compile the models for build time, not speed.
SIM_OPT=${SIM_OPT:--O0}; export SIM_OPT
out=${BUILD:-build}/tests/boardflat$([ "$set" = full ] && echo _full)
cmpt=${BOARD_CMP:-${BUILD:-build}/sim/tpu-board-cmp}
run=${TPU_BOARD_RUN:-${BUILD:-build}/tools/tpu-board-run}
mkprog=${TPU_MKPROG:-${BUILD:-build}/tools/tpu-mkprog}
rm -rf "$out"; mkdir -p "$out"
st=0
n=4
if [ "$set" = test ]; then
    set -- "2 ring allreduce" "4 torus:2x2 allreduce" "4 torus:2x2 barrier"
else
    set -- "2 ring dptrain 256"
fi
for cfg in "$@"; do
    set -- $cfg
    c=$1; topo=$2; kind=$3; axi=${4:-}; tn=$(echo "$topo" | tr -d ':')
    what="N=$n C=$c $topo $kind${axi:+ B=$axi}"
    d=$out/c${c}_${tn}_$kind${axi:+_a$axi}
    mkdir -p "$d"
    fl=$(BOARD_AXI_BITS=$axi sh sim/board_build.sh flat $n "$c" "$topo" 64 2 2>"$d.flat_build.log" | tail -n 1) && [ -x "$fl" ] ||
        { echo "FAIL: $what: building the flat board_tb"; tail -n 40 "$d.flat_build.log"; st=1; continue; }
    as=$(BOARD_AXI_BITS=$axi sh sim/board_build.sh asm $n "$c" "$topo" 64 2 2>"$d.asm_build.log" | tail -n 1) && [ -x "$as" ] ||
        { echo "FAIL: $what: building the assembled board_tb"; tail -n 40 "$d.asm_build.log"; st=1; continue; }
    "$mkprog" "$kind" --mxu $n --cores "$c" --topology "$topo" -o "$d/job" >"$d/mkprog.log" 2>&1 ||
        { echo "FAIL: $what: tpu-mkprog"; cat "$d/mkprog.log"; st=1; continue; }
    "$run" --mxu $n --cores "$c" --topology "$topo" ${axi:+--axi-data-bits "$axi"} --job "$d/job" \
        --out "$d/model" >"$d/model.log" 2>&1
    "$fl" --job "$d/job" --out "$d/flat" >"$d/flat.log" 2>&1; fst=$?
    "$as" --job "$d/job" --out "$d/asm" >"$d/asm.log" 2>&1; ast=$?
    ok=1
    if [ $fst -ne 0 ] || [ $ast -ne 0 ]; then
        echo "FAIL: $what: flat exit $fst, assembled exit $ast"
        grep -h 'ERROR\|error\|still busy' "$d/flat.log" "$d/asm.log" | head -n 10 | sed 's/^/    /'; st=1; continue
    fi
    i=0; files=0
    while [ $i -lt "$c" ]; do
        for f in "core$i.trace" $(cd "$d/asm" && ls "core$i" | sed "s|^|core$i/|"); do
            files=$((files + 1))
            cmp "$d/asm/$f" "$d/flat/$f" >/dev/null 2>&1 || { echo "FAIL: $what: $f differs (cmp $d/asm/$f $d/flat/$f)"; ok=0; }
        done
        i=$((i + 1))
    done
    "$cmpt" "$d/model" "$d/flat" >"$d/cmp.log" 2>&1 || { echo "FAIL: $what: the flat board differs from the model"; tail -n 20 "$d/cmp.log" | sed 's/^/    /'; ok=0; }
    if [ $ok -eq 1 ]; then
        echo "PASS: $what: flat and assembled: $files files byte-identical; the model agrees"
        echo "    flat:      $(grep -m1 '^board_tb: board:' "$d/flat.log" | sed 's/^board_tb: board: //')"
        echo "    assembled: $(grep -m1 '^board_tb: board:' "$d/asm.log" | sed 's/^board_tb: board: //')"
    else
        st=1
    fi
done
name=test-board-flat$([ "$set" = full ] && echo -full)
[ $st -eq 0 ] && echo "$name: PASS" || echo "$name: FAIL"
exit $st
