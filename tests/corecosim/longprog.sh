#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-core-cosim: a program longer than 3072 instructions (what a 16-bit AXI4-Lite address
# could load) on a core with --imem-insns 8192, loaded by core_tb through the 20-bit
# AXI4-Lite window (docs/isa.md "AXI4-Lite slave"), against the C model.
# The program: tpu-mkprog mlp (DMA, matmuls, bias, ReLU, softmax, dma_out) with P one-row
# `vop`s inserted after each of its instructions from the second A load on; they read the
# loaded A rows and write scratch UB rows 3000 .. 3999 that nothing else reads, each with its
# own rows and op, so an instruction written to the wrong IMEM index (an alias of a shorter
# address) changes the trace. The mlp's softmax, dma_out and halt land past instruction 4096.
# Checks: tpu-run and core_tb (stall 0 and 30) end done, the traces are identical
# (tpu-core-cmp), the output dumps byte for byte, INSNS is the program's length on both, and
# the last retired instruction is the halt at the program's last index.
# usage: tests/corecosim/longprog.sh [N [IMEM [PAD]]]   (defaults 4, 8192, 160)
# Environment: BUILD (default build). Exit 0 PASS, 1 FAIL.
set -u
n=${1:-4}; imem=${2:-8192}; pad=${3:-160}
BUILD=${BUILD:-build}
tb=$BUILD/sim/core_N${n}_I$imem/core_tb
run=$BUILD/tools/tpu-run
mkprog=$BUILD/tools/tpu-mkprog
cmp=$BUILD/sim/tpu-core-cmp
d=$BUILD/tests/corecosim/longprog_N${n}_I$imem
name="longprog N=$n IMEM=$imem"
rm -rf "$d"; mkdir -p "$d"
fail() { echo "FAIL: $name: $1"; [ -n "${2:-}" ] && [ -f "$2" ] && tail -n 20 "$2" | sed 's/^/    /'; exit 1; }

"$mkprog" mlp --mxu "$n" --seed 9 -o "$d/prog" >"$d/mkprog.log" 2>&1 ||
    fail "tpu-mkprog failed" "$d/mkprog.log"
mv "$d/prog/prog.s" "$d/prog/mlp.s"
# A's K-tiles are UB rows 2 .. 2 + 2M - 1 (tpu-mkprog mlp, M = 3N, K = 2N): the padding reads
# them once the second A dma_in has been issued (the sequencer's hazard checks order the reads)
arows=$((2 * 3 * n))
awk -v pad="$pad" -v arows="$arows" '
    BEGIN { split("add sub mul max min", op, " "); k = 0; seen = 0 }
    /^[ \t]*(#|$)/ { print; next }
    {
        print
        if ($1 == "dma_in" && $2 == "ub" && $3 != "row=0" && $3 != "row=1") seen++
        if (seen < 2 || $1 == "halt") next
        for (i = 0; i < pad; i++) {
            a = 2 + (k * 7) % arows; b = 2 + (k * 5 + 3) % arows
            printf "vop %s a=ub:%d b=ub:%d dst=ub:%d rows=1\n", op[1 + k % 5], a, b, 3000 + k % 1000
            k++
        }
    }' "$d/prog/mlp.s" >"$d/prog/prog.s" || fail "padding failed"
count=$(grep -cv '^[[:space:]]*\(#\|$\)' "$d/prog/prog.s")
[ "$count" -gt 4096 ] && [ "$count" -le "$imem" ] ||
    fail "the padded program has $count instructions, want 4097 .. $imem"

"$run" --mxu "$n" --imem-insns "$imem" --prog "$d/prog/prog.s" "@$d/prog/job.args" \
    --trace "$d/model.trace" --dump-dir "$d/model" >"$d/model.log" 2>&1 ||
    fail "tpu-run failed" "$d/model.log"
last=$((count - 1))
tail -n 1 "$d/model.trace" | grep -qx "r $last $last 0.0.0.0.0.0 halt" ||
    fail "the model's trace does not end with 'r $last $last 0.0.0.0.0.0 halt'" "$d/model.trace"
grep -q "INSNS[ =:]*$count\b" "$d/model.log" || fail "the model's INSNS is not $count" "$d/model.log"

st=0
for s in 0 30; do
    r=$d/rtl_s$s
    "$tb" --prog "$d/prog/prog.s" "@$d/prog/job.args" --trace "$r.trace" --dump-dir "$r" \
        --stall "$s" --seed "$n$s" >"$r.log" 2>&1
    rst=$?
    what="$name stall=$s"
    if [ $rst -ne 0 ]; then echo "FAIL: $what: core_tb exit $rst"; tail -n 20 "$r.log" | sed 's/^/    /'; st=1; continue; fi
    if ! "$cmp" --prog "$d/prog/prog.s" --mxu "$n" "$d/model.trace" "$r.trace" >"$r.cmp" 2>&1; then
        echo "FAIL: $what: the traces differ ($d/model.trace vs $r.trace)"; sed 's/^/    /' "$r.cmp"; st=1; continue
    fi
    for f in "$d"/model/*.npy; do
        cmp "$f" "$r/$(basename "$f")" >/dev/null 2>&1 ||
            { echo "FAIL: $what: $(basename "$f") differs from the model's"; st=1; }
    done
    grep -q "INSNS[ =:]*$count\b" "$r.log" || { echo "FAIL: $what: core_tb's INSNS is not $count"; grep INSNS "$r.log" | sed 's/^/    /'; st=1; }
done
[ $st -eq 0 ] && echo "PASS: $name: $count instructions (halt at $last) loaded over AXI4-Lite, traces and output identical to the model's (stall 0, 30)"
exit $st
