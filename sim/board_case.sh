#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# One board co-simulation case (docs/board.md "Board jobs, tools and co-simulation"), used by
# make board-run and tests/boardcosim: tpu-mkprog writes the board job, tpu-board-run (the C
# model) runs it, board_tb (the SystemC board, assembled from verilated cores and a verilated
# NoC) runs it once per stall setting; every core's trace and dumps must be identical
# (tpu-board-cmp). The RTL's board cycles are printed beside the model's.
#
# usage: sim/board_case.sh N C TOPOLOGY DIR STALLS KIND [tpu-mkprog options...]
#   STALLS  comma-separated --stall percentages for board_tb, e.g. 0,30
#   KIND    a board kind of tpu-mkprog (allreduce, bcast, sendrecv, barrier, dptrain, collall),
#           or plain:K for the core kind K (dense, mlp, ...) generated per core with seeds
#           1, 2, ..., C (independent programs, no collective: a check of the harness alone)
# Environment: BOARD_TB (default: built by sim/board_build.sh asm), BOARD_W (64), BOARD_D (2),
#   BOARD_AXI_BITS (the cores' AXI data width; empty: N's default; given to sim/board_build.sh
#   and tpu-board-run --axi-data-bits), TPU_BOARD_RUN, TPU_MKPROG, BOARD_CMP, BOARD_TB_ARGS
#   (extra board_tb options).
# Exit 0 PASS, 1 FAIL.
set -u
[ $# -ge 6 ] || { echo "usage: $0 N C TOPOLOGY DIR STALLS KIND [tpu-mkprog options...]" >&2; exit 2; }
n=$1; c=$2; topo=$3; dir=$4; stalls=$5; kind=$6; shift 6
w=${BOARD_W:-64}; d=${BOARD_D:-2}
run=${TPU_BOARD_RUN:-build/tools/tpu-board-run}
mkprog=${TPU_MKPROG:-build/tools/tpu-mkprog}
cmp=${BOARD_CMP:-build/sim/tpu-board-cmp}
axi=${BOARD_AXI_BITS:-}
name="N=$n C=$c $topo${axi:+ B=$axi} $kind${*:+ $*}"
fail() { echo "FAIL: $name: $1"; [ -n "${2:-}" ] && [ -f "$2" ] && tail -n 30 "$2" | sed 's/^/    /'; exit 1; }

mkdir -p "$(dirname "$dir")"
tb=${BOARD_TB:-}
if [ -z "$tb" ]; then
    tb=$(sh sim/board_build.sh asm "$n" "$c" "$topo" "$w" "$d" 2>"$dir.build.log" | tail -n 1) ||
        fail "building board_tb failed" "$dir.build.log"
    rm -f "$dir.build.log"
fi
rm -rf "$dir"; mkdir -p "$dir"
job=$dir/job
case $kind in
plain:*)
    k=${kind#plain:}; mkdir -p "$job"; i=0
    while [ $i -lt "$c" ]; do
        "$mkprog" "$k" --mxu "$n" --seed $((i + 1)) "$@" -o "$job/c$i" >>"$dir/mkprog.log" 2>&1 ||
            fail "tpu-mkprog $k failed" "$dir/mkprog.log"
        { echo "--prog c$i/prog.s"; grep -v '^#' "$job/c$i/job.args" | sed "s|=\([A-Za-z0-9_]\)|=c$i/\1|"; } \
            >"$job/core$i.args"
        i=$((i + 1))
    done ;;
*)
    "$mkprog" "$kind" --mxu "$n" --cores "$c" --topology "$topo" "$@" -o "$job" >"$dir/mkprog.log" 2>&1 ||
        fail "tpu-mkprog failed" "$dir/mkprog.log" ;;
esac
"$run" --mxu "$n" --cores "$c" --topology "$topo" --link-bits "$w" --link-latency "$d" \
    ${axi:+--axi-data-bits "$axi"} --job "$job" --out "$dir/model" >"$dir/model.log" 2>&1
mst=$?
[ $mst -le 1 ] || fail "tpu-board-run failed (exit $mst)" "$dir/model.log"
mcyc=$(sed -n 's/.*cycles \([0-9]*\) (the slowest core).*/\1/p' "$dir/model.log" | head -n 1)

st=0
for s in $(echo "$stalls" | tr ',' ' '); do
    r=$dir/rtl_s$s
    # shellcheck disable=SC2086
    "$tb" --job "$job" --out "$r" --stall "$s" --seed "$n$c$s" ${BOARD_TB_ARGS:-} >"$r.log" 2>&1
    rst=$?
    what="$name stall=$s"
    if [ $rst -gt 1 ]; then echo "FAIL: $what: board_tb failed (exit $rst)"; tail -n 30 "$r.log" | sed 's/^/    /'; st=1; continue; fi
    if grep -q 'AXI protocol violation\|timeout\|still busy' "$r.log"; then
        echo "FAIL: $what: board_tb reports:"; grep 'ERROR\|still busy' "$r.log" | head -n 12 | sed 's/^/    /'; st=1; continue
    fi
    if [ $rst -ne $mst ]; then
        echo "FAIL: $what: board_tb exit $rst, tpu-board-run exit $mst"
        grep -E '^board_tb: (core [0-9]+: error|done)' "$r.log" | sed 's/^/    rtl:   /'
        tail -n 3 "$dir/model.log" | sed 's/^/    model: /'
        st=1
    fi
    if ! "$cmp" --job "$job" --mxu "$n" "$dir/model" "$r" >"$r.cmp" 2>&1; then
        echo "FAIL: $what: the outputs differ ($dir/model vs $r)"; grep -v ': PASS: \|^tpu-board-cmp: core [0-9]*:$' "$r.cmp" | head -n 30 | sed 's/^/    /'; st=1; continue
    fi
    [ $st -eq 0 ] || continue
    rcyc=$(sed -n 's/^board_tb: board: .*: \([0-9]*\) cycles .*/\1/p' "$r.log")
    echo "PASS: $what: $(sed -n 's/^tpu-board-cmp: PASS: \([0-9]* cores\)/\1/p' "$r.cmp")"
    echo "    rtl:   $(grep -m1 '^board_tb: board:' "$r.log" | sed 's/^board_tb: board: //')"
    if [ -n "$rcyc" ] && [ -n "$mcyc" ] && [ "$mcyc" -gt 0 ]; then
        echo "    cycles: RTL $rcyc, model $mcyc ($(awk -v r="$rcyc" -v m="$mcyc" 'BEGIN { printf "%+.1f", 100 * (r - m) / m }') % vs the model's prediction$([ "$s" = 0 ] || echo ', which assumes no back-pressure'))"
    fi
done
exit $st
