#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make bench-board-128: the headline board, `gen --mxu N --cores 8` (torus 2x4, W = 64,
# D = 2), as the assembled SystemC co-simulation (sim/board_build.sh asm: one verilated N x N
# tpu_core shared by the 8 core instances, one verilated tpu_noc, sim/board_tb.cpp).
#  1. Build it from nothing in its own build tree (no ccache unless OBJCACHE is set), under
#     /usr/bin/time -v: wall time and peak memory (the largest process: Verilator or cc1plus).
#  2. Run a 128 x 128 x 128 matmul on all 8 cores at once (tpu-mkprog matmul, a different
#     seed per core), on the RTL board and on the board model (tpu-board-run): simulated
#     cycles, wall time, cycles/s, the model's cycles and its error. Every core's result must
#     equal the model's bit for bit (else FAIL).
# Figures, never pass/fail on speed. N = 128 is the headline (heavy: ~12 GB, run it alone);
# the same script at N = 16 checks that it works.
#
# usage: bench/board_128.sh N DIR
# Environment: GEN, CMODEL_LIB, TPU_MKPROG, TPU_BOARD_RUN, VERILATOR, OBJCACHE (default
#   empty: a cold build), SIM_OPT, KEEP=1 (reuse DIR/build instead of building from nothing;
#   with BOARD_TB = the harness built there, no build at all: the figures of DIR/build.time),
#   BOARD_CORE_TRACE_DEPTH (default 1 at N >= 64, else 3),
#   M K NOUT (the matmul, default 128 each), BOARD_CMP (optional: tpu-board-cmp, then the
#   traces must equal the model's too), IMEM (the cores' --imem-insns, default 4096: the
#   CNN training step of make bench-train-rtl, about 3,000 instructions, runs on this build
#   rather than verilating its own; the matmul needs far fewer).
set -u
n_mxu=${1:?usage: $0 N DIR}
out=${2:?usage: $0 N DIR}
gen=${GEN:-build/gen/gen}
lib=${CMODEL_LIB:-build/cmodel/libtpucmodel.a}
mkprog=${TPU_MKPROG:-build/tools/tpu-mkprog}
brun=${TPU_BOARD_RUN:-build/tools/tpu-board-run}
m=${M:-128}; k=${K:-128}; np=${NOUT:-128}
c=8; topo=torus:2x4; w=64; d=2
imem=${IMEM:-4096}
case $gen in /*) ;; *) gen=$(pwd)/$gen;; esac
case $lib in /*) ;; *) lib=$(pwd)/$lib;; esac
mkdir -p "$out"
rm -rf "$out/job" "$out/model" "$out/rtl"
[ "${KEEP:-0}" = 1 ] || rm -rf "$out/build"
mkdir -p "$out/build/sim"
bad=0

# 1. the build, timed (a private copy of the build script: the shell reads a script as it
#    runs it, and the build takes long enough for someone to edit sim/board_build.sh)
if [ "${KEEP:-0}" = 1 ] && [ -n "${BOARD_TB:-}" ]; then
    echo "reusing $BOARD_TB and the build figures of $out/build.time"
    tb=$BOARD_TB
else
    echo "building the assembled board N=$n_mxu C=$c $topo W=$w D=$d IMEM=$imem in $out/build (OBJCACHE='${OBJCACHE:-}')"
    cp sim/board_build.sh "$out/board_build.sh"
    # +trace at N >= 64 records the core's ports only (--trace-depth 1): at depth 3 the trace
    # code is ~78 % of the N = 128 core's C++ (31 of 40 MB).
    tdepth=${BOARD_CORE_TRACE_DEPTH:-}
    [ -n "$tdepth" ] || { if [ "$n_mxu" -ge 64 ]; then tdepth=1; else tdepth=3; fi; }
    BOARD_CORE_TRACE_DEPTH=$tdepth BOARD_CORE_ARGS="--imem-insns $imem" \
    BUILD=$out/build GEN=$gen CMODEL_LIB=$lib OBJCACHE=${OBJCACHE:-} /usr/bin/time -v \
        -o "$out/build.time" sh "$out/board_build.sh" asm "$n_mxu" $c $topo $w $d >"$out/build.log" 2>&1 ||
        { echo "FAIL: sim/board_build.sh asm $n_mxu $c $topo $w $d"; tail -n 20 "$out/build.log"; exit 1; }
    tb=$(tail -n 1 "$out/build.log")
fi
wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$out/build.time")
rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$out/build.time")
vl=$(sed -n 's/^verilated tpu_core in \([0-9]*\) s/\1/p' "$out/build.log")

# 2. the job: core i runs tpu-mkprog's matmul with seed i+1
mkdir -p "$out/job"
for i in $(seq 0 $((c - 1))); do
    "$mkprog" matmul --mxu "$n_mxu" --m "$m" --k "$k" --nout "$np" --seed $((i + 1)) \
        -o "$out/job/mm$i" >"$out/job/mm$i.log" 2>&1 ||
        { echo "FAIL: tpu-mkprog matmul (core $i)"; cat "$out/job/mm$i.log"; exit 1; }
    {
        echo "--prog mm$i/prog.s"
        echo "--hostmem-mib 4"
        sed -n "s#^\(--load [^=]*=\)#\1mm$i/#p; s#^\(--dump [^=]*=\)#\1mm$i/#p" "$out/job/mm$i/job.args"
    } >"$out/job/core$i.args"
done
"$brun" --mxu "$n_mxu" --cores $c --topology $topo --link-bits $w --link-latency $d \
    --job "$out/job" --out "$out/model" >"$out/model.log" 2>&1 ||
    { echo "FAIL: tpu-board-run"; tail -n 5 "$out/model.log"; bad=1; }
"$tb" --job "$out/job" --out "$out/rtl" --max-cycles 100000000 >"$out/rtl.log" 2>&1 ||
    { echo "FAIL: board_tb"; tail -n 5 "$out/rtl.log"; bad=1; }
for i in $(seq 0 $((c - 1))); do
    cmp -s "$out/model/core$i/out.npy" "$out/rtl/core$i/out.npy" ||
        { echo "FAIL: core $i: the RTL's out.npy differs from the model's"; bad=1; }
done

if [ -n "${BOARD_CMP:-}" ]; then
    "$BOARD_CMP" --job "$out/job" --mxu "$n_mxu" "$out/model" "$out/rtl" >"$out/cmp.log" 2>&1 ||
        { echo "FAIL: the RTL's traces or dumps differ from the model's"; head -n 5 "$out/cmp.log"; bad=1; }
fi
ctr() { grep -m1 'counters:' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
maxc() { for i in $(seq 0 $((c - 1))); do ctr "$1/core$i.counters" "$2"; done | sort -n | tail -n 1; }
rc=$(maxc "$out/rtl" CYCLES); mc=$(maxc "$out/model" CYCLES)
sim=$(sed -n 's/^board_tb: \([0-9]*\) cycles simulated in \([0-9.]*\) s (\([0-9]*\) cycles\/s)/\1 \2 \3/p' "$out/rtl.log")
read -r scyc ssec scps <<EOF
${sim:-- - -}
EOF
echo "| N | build wall (h:mm:ss) | verilate core s | peak RSS | matmul | RTL cycles (slowest core) | model cycles | model error | simulated cycles | sim wall s | cycles/s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
awk -v n="$n_mxu" -v wall="$wall" -v vl="${vl:--}" -v rss="$rss" -v mm="$m x $k x $np on 8 cores" \
    -v rc="${rc:--}" -v mc="${mc:--}" -v sc="$scyc" -v ss="$ssec" -v cps="$scps" 'BEGIN {
    err = (rc == "-" || mc == "-") ? "-" : sprintf("%+.2f %%", 100 * (mc - rc) / rc)
    printf "| %d | %s | %s | %.2f GiB | %s | %s | %s | %s | %s | %s | %s |\n", n, wall, vl,
        rss / 1048576, mm, rc, mc, err, sc, ss, cps
}'
echo "(harness $tb; build log $out/build.log, /usr/bin/time -v in $out/build.time)"
[ $bad -eq 0 ] || { echo "FAIL: see above"; exit 1; }
