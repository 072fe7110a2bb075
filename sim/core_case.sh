#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# One core co-simulation case (docs/isa.md "Co-simulation"), used by make core-run and
# tests/corecosim: tpu-mkprog writes the program and its data, tpu-run (the C model) runs it
# writing the model trace and dumps, core_tb (the verilated core) runs it once per stall
# setting writing the RTL trace and dumps; the traces must be identical (tpu-core-cmp) and
# every dump identical byte for byte; the RTL's counters are printed beside the model's.
#
# usage: sim/core_case.sh N DIR STALLS KIND [tpu-mkprog options...]
#   STALLS  comma-separated --stall percentages for core_tb, e.g. 0,30
# Environment: CORE_AXI_BITS (the AXI data width B when not N's default: tpu-run and core_tb
#   get --axi-data-bits B, and CORE_TB defaults to build/sim/core_N<N>_A<B>/core_tb), CORE_TB
#   (default build/sim/core_N<N>/core_tb), TPU_RUN, TPU_MKPROG, CORE_CMP,
#   CORE_TB_ARGS (extra core_tb options). Exit 0 PASS, 1 FAIL.
set -u
[ $# -ge 4 ] || { echo "usage: $0 N DIR STALLS KIND [tpu-mkprog options...]" >&2; exit 2; }
n=$1; dir=$2; stalls=$3; kind=$4; shift 4
axi=${CORE_AXI_BITS:-}
tb=${CORE_TB:-build/sim/core_N$n${axi:+_A$axi}/core_tb}
run=${TPU_RUN:-build/tools/tpu-run}
mkprog=${TPU_MKPROG:-build/tools/tpu-mkprog}
cmp=${CORE_CMP:-build/sim/tpu-core-cmp}
name="N=$n${axi:+ B=$axi} $kind${*:+ $*}"
rm -rf "$dir"; mkdir -p "$dir"

fail() { echo "FAIL: $name: $1"; [ -n "${2:-}" ] && [ -f "$2" ] && tail -n 30 "$2" | sed 's/^/    /'; exit 1; }

"$mkprog" "$kind" --mxu "$n" "$@" -o "$dir/prog" >"$dir/mkprog.log" 2>&1 ||
    fail "tpu-mkprog failed" "$dir/mkprog.log"
"$run" --mxu "$n" ${axi:+--axi-data-bits "$axi"} --prog "$dir/prog/prog.s" "@$dir/prog/job.args" --trace "$dir/model.trace" \
    --dump-dir "$dir/model" >"$dir/model.log" 2>&1
mst=$?
[ $mst -le 1 ] || fail "tpu-run failed (exit $mst)" "$dir/model.log"
mctr=$(grep -m1 -E 'CYCLES' "$dir/model.log" | sed 's/^tpu-run: counters: //; s/^ *//')

st=0
for s in $(echo "$stalls" | tr ',' ' '); do
    r=$dir/rtl_s$s
    # shellcheck disable=SC2086
    "$tb" --prog "$dir/prog/prog.s" "@$dir/prog/job.args" --trace "$r.trace" --dump-dir "$r" \
        --stall "$s" --seed "$n$s" ${axi:+--axi-data-bits "$axi"} ${CORE_TB_ARGS:-} >"$r.log" 2>&1
    rst=$?
    what="$name stall=$s"
    if [ $rst -gt 1 ]; then echo "FAIL: $what: core_tb failed (exit $rst)"; tail -n 30 "$r.log" | sed 's/^/    /'; st=1; continue; fi
    if grep -q 'AXI protocol violation\|timeout' "$r.log"; then
        echo "FAIL: $what: core_tb reports:"; grep 'ERROR' "$r.log" | head -n 12 | sed 's/^/    /'; st=1; continue
    fi
    if [ $rst -ne $mst ]; then
        echo "FAIL: $what: core_tb exit $rst, tpu-run exit $mst"
        grep -E '^core_tb: (error|done)' "$r.log" | sed 's/^/    rtl:   /'; tail -n 3 "$dir/model.log" | sed 's/^/    model: /'
        st=1
    fi
    if ! "$cmp" --prog "$dir/prog/prog.s" --mxu "$n" "$dir/model.trace" "$r.trace" >"$r.cmp" 2>&1; then
        echo "FAIL: $what: the traces differ ($dir/model.trace vs $r.trace)"; sed 's/^/    /' "$r.cmp"; st=1; continue
    fi
    nd=0
    for f in "$dir"/model/*.npy; do
        [ -e "$f" ] || continue
        nd=$((nd + 1))
        if ! cmp "$f" "$r/$(basename "$f")" >/dev/null 2>&1; then
            echo "FAIL: $what: dump $(basename "$f") differs (cmp $f $r/$(basename "$f"))"; st=1
        fi
    done
    # the DMA's cycle model is exact: without back-pressure DMA_BUSY is the model's
    rd_=$(grep -m1 'counters:' "$r.log" | sed -n 's/.*DMA_BUSY=\([0-9]*\).*/\1/p')
    md_=$(echo "$mctr" | sed -n 's/.*DMA_BUSY=\([0-9]*\).*/\1/p')
    if [ "$s" = 0 ] && [ "$rd_" != "$md_" ]; then
        echo "FAIL: $what: DMA_BUSY: RTL '$rd_', model '$md_' (no back-pressure: they must be equal)"; st=1
    fi
    [ $st -eq 0 ] || continue
    recs=$(sed -n 's/.*PASS: \([0-9]*\) records.*/\1/p' "$r.cmp")
    echo "PASS: $what: $recs trace records, $nd dumps identical"
    echo "    rtl:   $(grep -m1 'counters:' "$r.log" | sed 's/^core_tb: counters: //')"
    echo "    model: $mctr"
    echo "    rtl:   $(grep -m1 'utilisation' "$r.log" | sed 's/^core_tb: //; s/;.*//'); $(grep -m1 'cycles simulated' "$r.log" | sed 's/^core_tb: //')"
    rc_=$(grep -m1 'counters:' "$r.log" | sed -n 's/.*CYCLES=\([0-9]*\).*/\1/p')
    mc_=$(echo "$mctr" | sed -n 's/.*CYCLES=\([0-9]*\).*/\1/p')
    if [ -n "$rc_" ] && [ -n "$mc_" ] && [ "$mc_" -gt 0 ]; then
        echo "    CYCLES: RTL $rc_, model $mc_ ($(awk -v r="$rc_" -v m="$mc_" 'BEGIN { printf "%+.1f", 100 * (r - m) / m }') % vs the model's prediction$([ "$s" = 0 ] || echo ', which assumes no back-pressure'))"
        # the model's dispatch is gen's sequencer's (docs/isa.md "Timing"): without
        # back-pressure its CYCLES must be the RTL's within CORE_CYCLES_TOL percent (default 2)
        if [ "$s" = 0 ] && ! awk -v r="$rc_" -v m="$mc_" -v t="${CORE_CYCLES_TOL:-2}" \
            'BEGIN { d = r - m; if (d < 0) d = -d; exit !(100 * d <= t * r) }'; then
            echo "FAIL: $what: CYCLES: RTL $rc_, model $mc_: more than ${CORE_CYCLES_TOL:-2} % apart"; st=1
        fi
    fi
done
exit $st
