#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make bench: prints figures and ratios (never pass/fail on speed). Copy what it prints into
# bench/RESULTS.md with the date and the machine. Sizes: BENCH_NS (default "16 32 64 128")
# are the array sizes whose Verilator build is measured; N = 128 needs ~11 GB and ~20 min.
# It also runs bench-board-128 (the gen --mxu 128 --cores 8 board: ~6 min build, ~10 GB) and,
# on that build, bench-train-rtl (one CNN training step on the RTL board: ~55 min).
set -u
MAKE=${MAKE:-make}
NS=${BENCH_NS:-"16 32 64 128"}
B=build
mkdir -p $B/bench
say() { printf '\n## %s\n' "$*"; }

say "Machine"
echo "$(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GB; $(verilator --version); $(gcc --version | head -1)"

say "gen time: gen --mxu 128 --cores 8 (best of 5)"
$MAKE -s $B/gen/gen >/dev/null
best=999999
for i in 1 2 3 4 5; do
    rm -rf $B/bench/gen128
    t0=$(date +%s%N); $B/gen/gen --mxu 128 --cores 8 -o $B/bench/gen128 >/dev/null
    t=$(( ($(date +%s%N) - t0) / 1000000 )); [ $t -lt $best ] && best=$t
done
echo "gen --mxu 128 --cores 8: ${best} ms, $(cat $B/bench/gen128/* | wc -c) bytes in $(ls $B/bench/gen128 | wc -l) files"

say "Verilator build of the MXU harness (cold: no ccache, fresh directory), one at a time"
echo "| N | wall s | peak RSS MB |"
echo "|---|---|---|"
for n in $NS; do
    rm -rf $B/sim/mxu_N$n
    /usr/bin/time -f "%e %M" -o $B/bench/build_N$n.time \
        $MAKE -s OBJCACHE= $B/sim/mxu_N$n/mxu_tb >$B/bench/build_N$n.log 2>&1 \
        || { echo "| $n | build failed, see $B/bench/build_N$n.log | |"; continue; }
    # /usr/bin/time reports the largest child's RSS: the verilator or g++ process
    awk -v n=$n '{printf "| %s | %.0f | %.0f |\n", n, $1, $2/1024}' $B/bench/build_N$n.time
done

say "Co-simulation speed and MXU utilisation (M = 4N and 8N square: M = K = N')"
echo "| N | M=K=N' | cycles | ideal | utilisation | cycles/s | PE-cycles/s |"
echo "|---|---|---|---|---|---|---|"
for n in $NS; do
    tb=$B/sim/mxu_N$n/mxu_tb
    [ -x $tb ] || continue
    for f in 4 8; do
        d=$((f * n))
        # N = 128 at 8N would take hours of simulation: 4N only there
        [ $n -ge 128 ] && [ $f -eq 8 ] && continue
        out=$($tb --m $d --k $d --n $d --dist uniform --seed 1 --rtl-trace $B/bench/rtl.trace --model-trace $B/bench/model.trace 2>&1 | grep -E '^(PASS|FAIL)')
        echo "$out" | awk -v n=$n -v d=$d '{
            for (i = 1; i <= NF; i++) {
                if ($i == "cycles" && $(i+1) == "(ideal") { cyc = $(i-1); ideal = $(i+2); sub(/\),?/, "", ideal) }
                if ($i == "utilisation") { u = $(i+1); sub(/,/, "", u) }
                if ($i ~ /^\(/ && $(i+1) ~ /^cycles\/s\)/) { cps = substr($i, 2) }
            }
            printf "| %s | %s | %s | %s | %s | %s | %.3g |%s\n", n, d, cyc, ideal, u, cps, cps * n * n, ($1 == "PASS:" ? "" : " FAIL")
        }'
    done
done

say "C model matmul (bit-exact) vs OpenBLAS sgemm, single thread"
$MAKE -s bench-model

say "VPU accuracy over all 65,536 bf16 inputs vs MPFR"
$MAKE -s bench-vpu-accuracy 2>&1 | tail -n 12

# the board: one allreduce vs the ring bound (N = 16, 8 cores), then the headline 128 x 8
# board from nothing (build time, peak memory, a 128^3 matmul on 8 cores; ~10 GB, run alone)
for t in bench-vpu-speed bench-core bench-compiler bench-models bench-train bench-article bench-noc-allreduce bench-board-allreduce bench-board-128 bench-train-rtl bench-resnet50-rtl synth-est; do
    if $MAKE -n $t >/dev/null 2>&1; then say "$t"; $MAKE -s $t; fi
done
