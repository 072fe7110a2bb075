#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# One regression job (make regress, tests/regress/suite.mk): the command line that the
# summary prints for a failure replays exactly this job from the repository's root.
#
#   sh tests/regress/job.sh core N SEED STALL SSEED XSEED [core_tb options...]
#       tpu-mkprog random --mxu N --seed SEED; the C model (tpu-run) and the verilated core
#       (build/sim/core_N<N>/core_tb --stall STALL --seed SSEED; XSEED > 0 adds
#       +verilator+rand+reset+2 +verilator+seed+XSEED: every register and memory starts from
#       random bits); the model must end as job.txt predicts, the core with the model's exit
#       status, the traces identical (tpu-core-cmp) and every dump identical byte for byte.
#   sh tests/regress/job.sh board N C TOPOLOGY SEED STALL SSEED [board_tb options...]
#       tpu-mkprog random-board on the assembled SystemC board (board_tb --stall STALL --seed
#       SSEED, links W = 64, D = 2; e.g. --link-stall P, --link-fault KIND@CYCLE: docs/board.md
#       "Link faults") against tpu-board-run: every core's trace and dumps identical
#       (tpu-board-cmp), as sim/board_case.sh checks; no link may be declared dead.
#   sh tests/regress/job.sh ldead N C TOPOLOGY SEED LINK
#       the same random-board job with link LINK dead from cycle 0 (board_tb --link-fault
#       stuck@0:LINK; tpu-board-run --link-dead LINK@0): the same exit status, the same cores
#       halted with error 9, every core's trace and dumps identical; board_tb names the dead
#       link exactly when the model stopped a core with error 9.
# Output in $REGRESS_OUT (default build/regress/replay/<the arguments joined by '-'>).
# Environment: TPU_MKPROG, TPU_RUN, CORE_CMP, CORE_TB (default build/sim/core_N<N>/core_tb),
#   TPU_BOARD_RUN, BOARD_CMP, BOARD_TB (default the sim/board_build.sh asm harness for N, C, TOPOLOGY, W = 64, D = 2).
# Exit 0 PASS, 1 FAIL, 2 bad arguments.
set -u
cd "$(dirname "$0")/../.." || exit 2
mkprog=${TPU_MKPROG:-build/tools/tpu-mkprog}
run=${TPU_RUN:-build/tools/tpu-run}
cmp=${CORE_CMP:-build/sim/tpu-core-cmp}
out=${REGRESS_OUT:-build/regress/replay/$(echo "$*" | tr -c 'A-Za-z0-9_\n' '-')}
kind=${1:-}
cover_=${TPU_COVER:-build/tools/tpu-cover}
fail() { echo "FAIL: $*"; exit 1; }
# cover OUT ARGS...: tpu-cover ARGS -o OUT, where it is built (a missing tool only skips coverage)
cover() {
    o=$1; shift
    [ -x "$cover_" ] || { echo "note: $cover_ missing: no coverage for this job"; return 0; }
    "$cover_" "$@" -o "$o" || fail "tpu-cover $*"
}
case $kind in
core)
    [ $# -ge 6 ] || { echo "usage: $0 core N SEED STALL SSEED XSEED [core_tb options...]" >&2; exit 2; }
    n=$2; seed=$3; stall=$4; sseed=$5; xseed=$6; shift 6
    tb=${CORE_TB:-build/sim/core_N$n/core_tb}
    [ -x "$tb" ] || { echo "$0: $tb missing (make $tb)" >&2; exit 2; }
    rm -rf "$out"; mkdir -p "$out"
    "$mkprog" random --mxu "$n" --seed "$seed" -o "$out/prog" >"$out/mkprog.log" 2>&1 ||
        { cat "$out/mkprog.log"; fail "tpu-mkprog random --mxu $n --seed $seed"; }
    exp=$(sed -n 's/^expect //p' "$out/prog/job.txt")
    "$run" --mxu "$n" --prog "$out/prog/prog.s" "@$out/prog/job.args" --trace "$out/model.trace" \
        --dump-dir "$out/model" >"$out/model.log" 2>&1
    mst=$?
    case $exp in
    done) [ $mst -eq 0 ] || { tail -n 5 "$out/model.log"; fail "the model: exit $mst, job.txt expects done"; } ;;
    error*) [ $mst -eq 1 ] || { tail -n 5 "$out/model.log"; fail "the model: exit $mst, job.txt expects $exp"; } ;;
    *) fail "no 'expect' line in $out/prog/job.txt" ;;
    esac
    # functional coverage of this job (tests/regress/tpu_cover.c): the program and the model's
    # trace; the tags name the sweep it runs under
    lat=4; prev=""
    for a in "$@"; do [ "$prev" = "--axi-latency" ] && lat=$a; prev=$a; done
    cover "$out/cover.cov" core --mxu "$n" --prog "$out/prog/prog.s" --trace "$out/model.trace" \
        --log "$out/model.log" --args "$out/prog/job.args" --tag "N=$n" --tag "axi stall $stall%" \
        --tag "axi latency $lat" --tag "x-init $([ "$xseed" -gt 0 ] && echo random || echo zero)"
    xargs_=""
    [ "$xseed" -gt 0 ] && xargs_="+verilator+rand+reset+2 +verilator+seed+$xseed"
    # shellcheck disable=SC2086
    "$tb" --prog "$out/prog/prog.s" "@$out/prog/job.args" --trace "$out/rtl.trace" --dump-dir "$out/rtl" \
        --stall "$stall" --seed "$sseed" "$@" $xargs_ >"$out/rtl.log" 2>&1
    rst=$?
    [ $rst -le 1 ] || { tail -n 20 "$out/rtl.log"; fail "core_tb exit $rst"; }
    if grep -q 'AXI protocol violation\|timeout' "$out/rtl.log"; then
        grep ERROR "$out/rtl.log" | head -n 12; fail "core_tb reports an AXI violation or a timeout"; fi
    [ $rst -eq $mst ] || { grep -E '^core_tb: (error|done)' "$out/rtl.log"; tail -n 2 "$out/model.log"; fail "core_tb exit $rst, tpu-run exit $mst"; }
    # the harness names the X-initialisation seed it ran with in the trace's header
    xs=$(sed -n '2s/.* verilator-seed \([0-9]*\).*/\1/p' "$out/rtl.trace")
    [ "$xseed" -eq 0 ] || [ "$xs" = "$xseed" ] || fail "core_tb ran with X-init seed '$xs', not $xseed"
    "$cmp" --prog "$out/prog/prog.s" --mxu "$n" "$out/model.trace" "$out/rtl.trace" >"$out/cmp.log" 2>&1 ||
        { cat "$out/cmp.log"; fail "the traces differ ($out/model.trace vs $out/rtl.trace)"; }
    for f in "$out"/model/*.npy; do
        [ -e "$f" ] || continue
        cmp -s "$f" "$out/rtl/$(basename "$f")" || fail "dump $(basename "$f") differs (cmp $f $out/rtl/$(basename "$f"))"
    done
    echo "PASS: core N=$n seed=$seed ($exp) stall=$stall/$sseed${xargs_:+ $xargs_} (trace header: verilator-seed $xs): $(sed -n 's/.*PASS: //p' "$out/cmp.log")" ;;
board)
    [ $# -ge 7 ] || { echo "usage: $0 board N C TOPOLOGY SEED STALL SSEED [board_tb options...]" >&2; exit 2; }
    n=$2; c=$3; topo=$4; seed=$5; stall=$6; sseed=$7; shift 7
    lstall=0; prev=""
    for a in "$@"; do [ "$prev" = "--link-stall" ] && lstall=$a; prev=$a; done
    tb=${BOARD_TB:-build/sim/board_asm_N${n}_C${c}_$(echo "$topo" | tr -d ':')_W64_D2/board_tb}
    [ -x "$tb" ] || { echo "$0: $tb missing (sh sim/board_build.sh asm $n $c $topo 64 2)" >&2; exit 2; }
    brun=${TPU_BOARD_RUN:-build/tools/tpu-board-run}
    bcmp=${BOARD_CMP:-build/sim/tpu-board-cmp}
    rm -rf "$out"; mkdir -p "$out"
    "$mkprog" random-board --mxu "$n" --cores "$c" --topology "$topo" --seed "$seed" -o "$out/job" \
        >"$out/mkprog.log" 2>&1 || { cat "$out/mkprog.log"; fail "tpu-mkprog random-board"; }
    "$brun" --mxu "$n" --cores "$c" --topology "$topo" --link-bits 64 --link-latency 2 \
        --job "$out/job" --out "$out/model" >"$out/model.log" 2>&1
    mst=$?
    [ $mst -eq 0 ] && grep -q '^tpu-board-run: done$' "$out/model.log" ||
        { tail -n 5 "$out/model.log"; fail "the board model: exit $mst, random-board expects done"; }
    "$tb" --job "$out/job" --out "$out/rtl" --stall "$stall" --seed "$sseed" "$@" >"$out/rtl.log" 2>&1
    rst=$?
    # coverage: the programs and the model's traces, the links' events in the RTL run
    cover "$out/cover.cov" board --mxu "$n" --cores "$c" --topology "$topo" --job "$out/job" \
        --model "$out/model" --rtl-log "$out/rtl.log" --tag "board C=$c $topo" --tag "board stall $stall%" \
        --tag "link stall $lstall%" --tag "link fault $(case "$*" in *--link-fault*) echo injected;; *) echo none;; esac)"
    [ $rst -le 1 ] || { tail -n 20 "$out/rtl.log"; fail "board_tb exit $rst"; }
    if grep -q 'AXI protocol violation\|timeout\|still busy\|ERROR: link' "$out/rtl.log"; then
        grep 'ERROR\|still busy' "$out/rtl.log" | head -n 12; fail "board_tb reports an AXI violation, a timeout, a busy core or a dead link"; fi
    [ $rst -eq $mst ] || { tail -n 5 "$out/rtl.log"; fail "board_tb exit $rst, tpu-board-run exit $mst"; }
    "$bcmp" --job "$out/job" --mxu "$n" "$out/model" "$out/rtl" >"$out/cmp.log" 2>&1 ||
        { grep -v ': PASS: ' "$out/cmp.log" | head -n 30; fail "the outputs differ ($out/model vs $out/rtl)"; }
    echo "PASS: board N=$n C=$c $topo random-board seed=$seed stall=$stall/$sseed${*:+ $*}: every core's trace and dumps identical; $(sed -n 's/^board_tb: links: //p' "$out/rtl.log")" ;;
ldead)
    [ $# -eq 6 ] || { echo "usage: $0 ldead N C TOPOLOGY SEED LINK" >&2; exit 2; }
    n=$2; c=$3; topo=$4; seed=$5; link=$6
    tb=${BOARD_TB:-build/sim/board_asm_N${n}_C${c}_$(echo "$topo" | tr -d ':')_W64_D2/board_tb}
    [ -x "$tb" ] || { echo "$0: $tb missing (sh sim/board_build.sh asm $n $c $topo 64 2)" >&2; exit 2; }
    brun=${TPU_BOARD_RUN:-build/tools/tpu-board-run}
    bcmp=${BOARD_CMP:-build/sim/tpu-board-cmp}
    rm -rf "$out"; mkdir -p "$out"
    # small rounds: a transfer of hundreds of rows in flight when the link is declared dead
    # stops part-way in the RTL, which the model does not time (docs/board.md "Link faults")
    "$mkprog" random-board --mxu "$n" --cores "$c" --topology "$topo" --seed "$seed" --coll-rows 8 \
        -o "$out/job" >"$out/mkprog.log" 2>&1 || { cat "$out/mkprog.log"; fail "tpu-mkprog random-board"; }
    "$brun" --mxu "$n" --cores "$c" --topology "$topo" --link-bits 64 --link-latency 2 \
        --job "$out/job" --out "$out/model" --link-dead "$link@0" >"$out/model.log" 2>&1
    mst=$?
    [ $mst -le 1 ] || { tail -n 5 "$out/model.log"; fail "the board model: exit $mst"; }
    "$tb" --job "$out/job" --out "$out/rtl" --link-fault "stuck@0:$link" >"$out/rtl.log" 2>&1
    rst=$?
    cover "$out/cover.cov" board --mxu "$n" --cores "$c" --topology "$topo" --job "$out/job" \
        --model "$out/model" --rtl-log "$out/rtl.log" --tag "board C=$c $topo" --tag "link dead"
    [ $rst -le 1 ] || { tail -n 20 "$out/rtl.log"; fail "board_tb exit $rst"; }
    if grep -q 'AXI protocol violation\|timeout\|still busy' "$out/rtl.log"; then
        grep 'ERROR\|still busy' "$out/rtl.log" | head -n 12; fail "board_tb reports an AXI violation, a timeout or a busy core"; fi
    [ $rst -eq $mst ] || { tail -n 5 "$out/rtl.log"; tail -n 5 "$out/model.log"; fail "board_tb exit $rst, tpu-board-run exit $mst"; }
    m9=$(grep -c '^tpu-board-run: core [0-9]*: error 9 ' "$out/model.log")
    r9=$(grep -c '^board_tb: core [0-9]*: error 9 ' "$out/rtl.log")
    [ "$m9" -eq "$r9" ] || fail "$r9 core(s) halted with error 9 on board_tb, $m9 in the model"
    if grep -q "^board_tb: ERROR: link $link " "$out/rtl.log"; then dead=1; else dead=0; fi
    [ $dead -eq $([ "$m9" -gt 0 ] && echo 1 || echo 0) ] ||
        fail "board_tb $([ $dead -eq 1 ] && echo reports || echo does not report) link $link dead, the model stopped $m9 core(s) with error 9"
    "$bcmp" --job "$out/job" --mxu "$n" "$out/model" "$out/rtl" >"$out/cmp.log" 2>&1 ||
        { grep -v ': PASS: ' "$out/cmp.log" | head -n 30; fail "the outputs differ ($out/model vs $out/rtl)"; }
    echo "PASS: ldead N=$n C=$c $topo random-board seed=$seed link $link dead: $m9 core(s) halted with error 9, every core's trace and dumps identical" ;;
*)
    echo "usage: $0 core N SEED STALL SSEED XSEED [core_tb options...] | board N C TOPOLOGY SEED STALL SSEED | ldead N C TOPOLOGY SEED LINK" >&2
    exit 2 ;;
esac
