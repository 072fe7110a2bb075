#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds the SystemC board co-simulation (sim/board_tb.cpp) for one board and prints the
# harness's path on its last line. Incremental: gen runs every time, but Verilator and the C++
# compiler only when what they read changed (ccache through OBJCACHE when set).
#
# usage: sim/board_build.sh asm|flat N C TOPOLOGY W D
#   asm   the assembled board: one verilated tpu_core per (N, W) in
#         build/sim/board_core_N<N>_W<W>/ (shared by every C and topology), one verilated
#         tpu_noc per (C, topology, W, D) in build/sim/board_noc_<C>_<topo>_W<W>_D<D>/, the
#         harness in build/sim/board_asm_N<N>_C<C>_<topo>_W<W>_D<D>/board_tb
#   flat  one verilated tpu_board in build/sim/board_flat_N<N>_C<C>_<topo>_W<W>_D<D>/
#         (small boards only)
#   TOPOLOGY as gen's --topology (ring, torus, torus:RxS)
# Environment: BUILD (default build), GEN, VERILATOR, CXX, OBJCACHE, SIM_OPT (default -O1),
#   CMODEL_LIB, BOARD_JOBS (parallel compile jobs, default nproc), BOARD_CORE_ARGS (extra gen
#   options for the core, e.g. "--acc-kib 1024"; the build folders get a suffix made of them,
#   e.g. board_core_N16_W64_acckib1024), BOARD_CORE_TRACE_DEPTH (the core's --trace-depth,
#   default 3; 1 keeps only the core's ports: at N = 128 the trace code is ~78 % of the core's
#   C++ at depth 3, so the large build uses 1), BOARD_AXI_BITS (the cores' AXI data width, gen's
#   --axi-data-bits; empty: gen's default for N; when given, the core and harness folders get
#   the suffix _A<B>, e.g. board_core_N4_W64_A256).
set -eu
[ $# -eq 6 ] || { echo "usage: $0 asm|flat N C TOPOLOGY W D" >&2; exit 2; }
mode=$1; n=$2; c=$3; topo=$4; w=$5; d=$6
case $mode in asm|flat) ;; *) echo "$0: mode '$mode': expected asm or flat" >&2; exit 2;; esac
BUILD=${BUILD:-build}
GEN=${GEN:-$BUILD/gen/gen}
VERILATOR=${VERILATOR:-verilator}
CXX=${CXX:-g++}
OBJCACHE=${OBJCACHE:-}
SIM_OPT=${SIM_OPT:--O1}
JOBS=${BOARD_JOBS:-$(nproc 2>/dev/null || echo 2)}
CMODEL_LIB=${CMODEL_LIB:-$BUILD/cmodel/libtpucmodel.a}
BOARD_CORE_ARGS=${BOARD_CORE_ARGS:-}
sfx=$(echo "$BOARD_CORE_ARGS" | tr -cd 'A-Za-z0-9')
[ -n "$sfx" ] && sfx=_$sfx
BOARD_AXI_BITS=${BOARD_AXI_BITS:-}
case $BOARD_AXI_BITS in
''|64|128|256|512) ;;
*) echo "$0: BOARD_AXI_BITS '$BOARD_AXI_BITS': expected 64, 128, 256 or 512 (or empty)" >&2; exit 2;;
esac
axi_args=${BOARD_AXI_BITS:+--axi-data-bits $BOARD_AXI_BITS}
[ -n "$BOARD_AXI_BITS" ] && sfx=${sfx}_A$BOARD_AXI_BITS
root=$(pwd)
sim=$BUILD/sim
tname=$(echo "$topo" | tr -d ':')
vinc=$($VERILATOR --getenv VERILATOR_ROOT)/include
VFLAGS="--sc --trace-fst --assert --x-assign unique --x-initial unique -O3"
# The core as sim/core.mk verilates it (-fno-gate: the rows and lanes share their code). The
# NoC's routers are one module each (different ids): unrolling their port loops only 4 deep
# halves its C++ (torus 2x4: 6.6 -> 2.8 MB) and its compile time.
# The flat board: the same, with the NoC unrolled 4 deep (the core's size does not change) and
# +trace recording the board, the NoC's and the cores' ports (11.6 -> 7.2 MB at N = 4, C = 4).
CORE_VF="-fno-gate --unroll-count 1024"
NOC_VF="--unroll-count 4"
FLAT_VF="-fno-gate --unroll-count 4 --trace-depth 2"

# newer OUT IN...: true if OUT is missing or older than any IN
newer() {
    o=$1; shift
    [ -e "$o" ] || return 0
    for i in "$@"; do [ "$i" -nt "$o" ] && return 0; done
    return 1
}

# gen_into DIR ARGS...: gen into DIR/rtl; true (0) if the files changed (or are new)
gen_into() {
    dir=$1; shift
    mkdir -p "$dir"
    rm -rf "$dir/rtl.new"
    "$GEN" "$@" -o "$dir/rtl.new" >/dev/null || { rm -rf "$dir/rtl.new"; echo "$0: gen $* failed" >&2; exit 1; }
    if [ -d "$dir/rtl" ] && diff -r -q "$dir/rtl" "$dir/rtl.new" >/dev/null 2>&1; then
        rm -rf "$dir/rtl.new"; return 1
    fi
    rm -rf "$dir/rtl"; mv "$dir/rtl.new" "$dir/rtl"; return 0
}

# verilate DIR TOP FILELIST VLT RUNTIME [extra flags]: verilate (if the RTL changed) and build
# the model's library, and Verilator's runtime objects when RUNTIME is 1 (one set per harness)
verilate() {
    dir=$1; top=$2; fl=$3; vlt=$4; runtime=$5; shift 5
    vf="$VFLAGS $* --top-module $top"
    if [ ! -f "$dir/obj/V$top.mk" ] || newer "$dir/obj/V$top.mk" "$dir/rtl/$fl" "$dir/rtl/$top.sv" ||
       [ "$(cat "$dir/vflags" 2>/dev/null)" != "$vf" ]; then
        s=$(date +%s); echo "verilating $top in $dir" >&2
        rm -rf "$dir/obj"
        # shellcheck disable=SC2086
        $VERILATOR $VFLAGS "$@" --top-module "$top" --Mdir "$dir/obj" -F "$dir/rtl/$fl" "$dir/rtl/$vlt" \
            >"$dir/verilator.log" 2>&1 || { cat "$dir/verilator.log" >&2; exit 1; }
        echo "$vf" >"$dir/vflags"
        echo "verilated $top in $(( $(date +%s) - s )) s" >&2
    fi
    s=$(date +%s)
    make -s -j"$JOBS" -C "$dir/obj" -f "V$top.mk" OBJCACHE="$OBJCACHE" OPT_FAST="$SIM_OPT" OPT_SLOW="$SIM_OPT" \
        OPT_GLOBAL="$SIM_OPT" "V${top}__ALL.a" \
        $([ "$runtime" = 1 ] && echo verilated.o verilated_fst_c.o verilated_threads.o) \
        >"$dir/build.log" 2>&1 || { cat "$dir/build.log" >&2; exit 1; }
}

# the shape (R x S) gen resolved, from the header of the files it wrote
shape() {
    sed -n 's/^\/\/ board: topology=[a-z]* \([0-9]*\)x\([0-9]*\) .*/\1 \2/p' "$1" | head -n 1
}

if [ "$mode" = asm ]; then
    cdir=$sim/board_core_N${n}_W$w$sfx
    ndir=$sim/board_noc_${c}_${tname}_W${w}_D$d
    hdir=$sim/board_asm_N${n}_C${c}_${tname}_W${w}_D$d$sfx
    (
        flock 9
        # shellcheck disable=SC2086
        gen_into "$cdir" --mxu "$n" --cores 1 --link-bits "$w" $BOARD_CORE_ARGS $axi_args || true
        test -f "$cdir/rtl/tpu_core.f" || { echo "$0: gen wrote no tpu_core.f for N=$n" >&2; exit 1; }
        verilate "$cdir" tpu_core tpu_core.f tpu_core.vlt 1 $CORE_VF --trace-depth "${BOARD_CORE_TRACE_DEPTH:-3}"
    ) 9>"$sim/.board_core_N${n}_W$w$sfx.lock"
    (
        flock 9
        gen_into "$ndir" --mxu 2 --cores "$c" --topology "$topo" --link-bits "$w" --link-latency "$d" || true
        verilate "$ndir" tpu_noc tpu_noc.f tpu_noc.vlt 0 $NOC_VF
    ) 9>"$sim/.board_noc_${c}_${tname}_W${w}_D$d.lock"
    objs="$cdir/obj/Vtpu_core__ALL.a $ndir/obj/Vtpu_noc__ALL.a"
    rt=$cdir/obj
    incs="-I$cdir/obj -I$ndir/obj -I$cdir/rtl"
    hdrs="$cdir/obj/Vtpu_core.h $ndir/obj/Vtpu_noc.h $cdir/rtl/tpu_params.h"
    sh_file=$ndir/rtl/tpu_noc.sv
    defs=""
else
    hdir=$sim/board_flat_N${n}_C${c}_${tname}_W${w}_D$d$sfx
    mkdir -p "$hdir"
    (
        flock 9
        # shellcheck disable=SC2086
        gen_into "$hdir" --mxu "$n" --cores "$c" --topology "$topo" --link-bits "$w" --link-latency "$d" \
            $BOARD_CORE_ARGS $axi_args || true
        test -f "$hdir/rtl/tpu_board.f" || { echo "$0: gen wrote no tpu_board.f for N=$n" >&2; exit 1; }
        verilate "$hdir" tpu_board tpu_board.f tpu_board.vlt 1 $FLAT_VF
    ) 9>"$sim/.board_flat_N${n}_C${c}_${tname}_W${w}_D$d$sfx.lock"
    objs="$hdir/obj/Vtpu_board__ALL.a"
    rt=$hdir/obj
    incs="-I$hdir/obj -I$hdir/rtl"
    hdrs="$hdir/obj/Vtpu_board.h $hdir/rtl/tpu_params.h"
    sh_file=$hdir/rtl/tpu_board.sv
    defs="-DBOARD_FLAT"
fi
set -- $(shape "$sh_file")
rows=$1; cols=$2
case $topo in ring) tdesc=ring;; *) tdesc=torus;; esac
mkdir -p "$hdir"
(
    flock 9
    # shellcheck disable=SC2086
    if newer "$hdir/board_tb.o" sim/board_tb.cpp sim/axi_host_mem.h sim/board_bits.h sim/tb_errors.h sim/tb_trace.h \
             sim/tb_options.h sim/tb_rng.h $hdrs \
             cmodel/include/tpu/host.h cmodel/include/tpu/isa.h "$root/sim/board_build.sh"; then
        s=$(date +%s)
        # shellcheck disable=SC2086
        $OBJCACHE $CXX -std=gnu++17 $SIM_OPT -I"$vinc" -I"$vinc/vltstd" $incs -Icmodel/include -Isim \
            -DVM_COVERAGE=0 -DVM_SC=1 -DVM_TRACE=1 -DVM_TRACE_FST=1 -DVM_TRACE_VCD=0 $defs \
            -DBOARD_C="$c" -DBOARD_ROWS="$rows" -DBOARD_COLS="$cols" -DBOARD_W="$w" -DBOARD_D="$d" \
            -DBOARD_TOPO="\"$tdesc\"" -Wall -Wno-unused-parameter \
            -c sim/board_tb.cpp -o "$hdir/board_tb.o" 2>"$hdir/compile.log" ||
            { cat "$hdir/compile.log" >&2; exit 1; }
        echo "compiled $hdir/board_tb.o in $(( $(date +%s) - s )) s" >&2
    fi
    # shellcheck disable=SC2086
    if newer "$hdir/board_tb" "$hdir/board_tb.o" $objs "$CMODEL_LIB"; then
        # shellcheck disable=SC2086
        $CXX -o "$hdir/board_tb" "$hdir/board_tb.o" $objs "$rt/verilated.o" "$rt/verilated_fst_c.o" \
            "$rt/verilated_threads.o" "$CMODEL_LIB" -lsystemc -lz -lpthread -lm ||
            { echo "$0: linking $hdir/board_tb failed" >&2; exit 1; }
    fi
) 9>"$hdir/.lock"
echo "$hdir/board_tb"
