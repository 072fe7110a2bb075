#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make bench-core: MXU utilisation of the core (docs/isa.md) on matmuls with M >= 8N and
# K, N' >= 4N, measured on the verilated RTL (N = 16) and predicted by the C model (tpu-run;
# N = 16 and 128). Figures, never pass/fail on speed; a run whose RTL trace differs from the
# model's, or whose result differs from tpu-mkprog's own matmul program, is reported FAIL.
#
# Per shape (M, K, N'), with tpu-mkprog's matmul inputs (a.npy, w.npy, its job.args):
#   P1 = prologue: dma_in of A into UB tile-major and of ALL KT*NT weight tiles into WMEM,
#        sync, halt
#   P2 = the same prologue, sync, then the matmul phase (lw of the first tile; per tile, N-tile
#        major: matmul, accumulate from the 2nd K-tile, and the lw of the next tile right after
#        it, as tpu-mkprog schedules it), halt
#   phase cycles = CYCLES(P2) - CYCLES(P1); phase utilisation = MXU_BUSY / phase cycles.
#   P3 = P2 with a dma_out of every N-tile before the halt (model only): its out.npy must equal,
#        byte for byte, the model's result of tpu-mkprog's own matmul program.
#   whole = tpu-mkprog's matmul program itself (DMA and compute interleaved, as generated).
# The RTL runs are compared with the model's trace (tpu-core-cmp: every written row, bit for
# bit) and their dumps with the model's.
#
# usage: bench/core_bench.sh DIR    Environment: CORE_TB (the N=16 core_tb, WMEM of
#   WMEM_ROWS rows), WMEM_ROWS, TPU_RUN, TPU_MKPROG, CORE_CMP.
set -u
out=${1:?usage: $0 DIR}
tb=${CORE_TB:?CORE_TB not set}
wrows=${WMEM_ROWS:?WMEM_ROWS not set}
run=${TPU_RUN:-build/tools/tpu-run}
mkprog=${TPU_MKPROG:-build/tools/tpu-mkprog}
cmp=${CORE_CMP:-build/sim/tpu-core-cmp}
rm -rf "$out"; mkdir -p "$out"
bad=0

# counter VALUE from a log line "...counters: CYCLES=.. MXU_BUSY=.. ..."
ctr() { grep -m1 'counters:' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# gen_progs DIR N M K NP: writes DIR/p1.s, p2.s, p3.s from DIR/prog/job.args' addresses
gen_progs() {
    d=$1; n=$2; m=$3; k=$4; np=$5
    aaddr=$(sed -n 's/^--load \(.*\)=a\.npy$/\1/p' "$d/prog/job.args")
    waddr=$(sed -n 's/^--load \(.*\)=w\.npy$/\1/p' "$d/prog/job.args")
    oaddr=$(sed -n 's/^--dump \(.*\)=out\.npy:.*/\1/p' "$d/prog/job.args")
    awk -v n="$n" -v m="$m" -v k="$k" -v np="$np" -v a="$((aaddr))" -v w="$((waddr))" \
        -v o="$((oaddr))" -v d="$d" 'BEGIN {
        kt = k / n; nt = np / n
        pro = sprintf("# prologue: A (%d x %d) into UB tile-major, all %d weight tiles into WMEM\n", m, k, kt * nt)
        for (t = 0; t < kt; t++)
            pro = pro sprintf("dma_in ub row=%d rows=%d cols=%d addr=%d stride=%d\n", t * m, m, n, a + 2 * t * n, 2 * k)
        for (u = 0; u < nt; u++) for (t = 0; t < kt; t++)
            pro = pro sprintf("dma_in wmem row=%d rows=%d cols=%d addr=%d stride=%d\n", (u * kt + t) * n, n, n, w + 2 * (t * n * np + u * n), 2 * np)
        pro = pro "sync\n"
        ph = "# matmul phase\nlw w=0\n"
        for (u = 0; u < nt; u++) for (t = 0; t < kt; t++) {
            s = u * kt + t
            ph = ph sprintf("matmul ub=%d acc=%d rows=%d%s\n", t * m, u * m, m, t ? " accumulate" : "")
            if (s + 1 < kt * nt) ph = ph sprintf("lw w=%d\n", (s + 1) * n)
        }
        outs = "# results (after the timed phase)\n"
        for (u = 0; u < nt; u++)
            outs = outs sprintf("dma_out acc row=%d rows=%d cols=%d addr=%d stride=%d\n", u * m, m, n, o + 4 * u * n, 4 * np)
        printf "%shalt\n", pro > (d "/p1.s")
        printf "%s%shalt\n", pro, ph > (d "/p2.s")
        printf "%s%s%shalt\n", pro, ph, outs > (d "/p3.s")
    }'
}

# model NAME DIR N PROG EXTRA...: tpu-run, log DIR/NAME.model.log, trace, dumps
model() {
    nm=$1; d=$2; n=$3; p=$4; shift 4
    "$run" --mxu "$n" --wmem-rows "$wrows_n" --acc-rows "$acc_rows" --prog "$p" "@$d/prog/job.args" \
        --trace "$d/$nm.model.trace" --dump-dir "$d/$nm.model" "$@" >"$d/$nm.model.log" 2>&1 ||
        { echo "FAIL: $d: tpu-run $nm"; tail -n 5 "$d/$nm.model.log"; bad=1; }
}
# rtl NAME DIR PROG: core_tb, then the trace and the dumps against the model's
rtl() {
    nm=$1; d=$2; p=$3
    "$tb" --prog "$p" "@$d/prog/job.args" --trace "$d/$nm.rtl.trace" --dump-dir "$d/$nm.rtl" \
        >"$d/$nm.rtl.log" 2>&1 || { echo "FAIL: $d: core_tb $nm"; tail -n 5 "$d/$nm.rtl.log"; bad=1; return; }
    "$cmp" --prog "$p" --mxu 16 "$d/$nm.model.trace" "$d/$nm.rtl.trace" >"$d/$nm.cmp" 2>&1 ||
        { echo "FAIL: $d: $nm traces differ"; head -n 5 "$d/$nm.cmp"; bad=1; }
    for f in "$d/$nm.model"/*.npy; do
        cmp -s "$f" "$d/$nm.rtl/$(basename "$f")" || { echo "FAIL: $d: $nm dump $(basename "$f") differs"; bad=1; }
    done
}

rows=""
for shape in 16:128:64:64 16:256:64:64 16:128:128:128 128:1024:512:512; do
    IFS=: read -r n m k np <<EOF
$shape
EOF
    d=$out/N${n}_${m}x${k}x${np}
    mkdir -p "$d"
    tiles=$(( (k / n) * (np / n) ))
    wrows_n=$(( tiles * n ))
    [ "$n" -eq 16 ] && wrows_n=$wrows
    acc_rows=$(( m * np / n > 2048 ? m * np / n : 2048 ))
    "$mkprog" matmul --mxu "$n" --m "$m" --k "$k" --nout "$np" --wmem-rows "$wrows_n" \
        --acc-rows "$acc_rows" -o "$d/prog" >"$d/mkprog.log" 2>&1 ||
        { echo "FAIL: tpu-mkprog $shape"; cat "$d/mkprog.log"; bad=1; continue; }
    gen_progs "$d" "$n" "$m" "$k" "$np"
    model p1 "$d" "$n" "$d/p1.s"
    model p2 "$d" "$n" "$d/p2.s"
    model p3 "$d" "$n" "$d/p3.s"
    model whole "$d" "$n" "$d/prog/prog.s"
    if ! cmp -s "$d/p3.model/out.npy" "$d/whole.model/out.npy"; then
        echo "FAIL: N=$n $m x $k x $np: the phase program's result differs from tpu-mkprog's matmul"; bad=1
    fi
    if [ "$n" -eq 16 ]; then
        rtl p1 "$d" "$d/p1.s"; rtl p2 "$d" "$d/p2.s"; rtl whole "$d" "$d/prog/prog.s"
        rc1=$(ctr "$d/p1.rtl.log" CYCLES); rc2=$(ctr "$d/p2.rtl.log" CYCLES)
        rbusy=$(ctr "$d/p2.rtl.log" MXU_BUSY); rwl=$(ctr "$d/p2.rtl.log" WL_STALL)
        rwc=$(ctr "$d/whole.rtl.log" CYCLES); rwb=$(ctr "$d/whole.rtl.log" MXU_BUSY)
    else
        rc1=-; rc2=-; rbusy=-; rwl=-; rwc=-; rwb=-
    fi
    mc1=$(ctr "$d/p1.model.log" CYCLES); mc2=$(ctr "$d/p2.model.log" CYCLES)
    mbusy=$(ctr "$d/p2.model.log" MXU_BUSY); mwl=$(ctr "$d/p2.model.log" WL_STALL)
    mwc=$(ctr "$d/whole.model.log" CYCLES); mwb=$(ctr "$d/whole.model.log" MXU_BUSY)
    rows="$rows$n $m $k $np $tiles $rc1 $rc2 $rbusy $rwl $rwc $rwb $mc1 $mc2 $mbusy $mwl $mwc $mwb
"
done

echo "MXU utilisation of the core, matmul phase (all operands on chip) and whole program"
echo "(RTL: verilated N=16 core with a $wrows-row WMEM, ideal AXI slave of latency 4; model: tpu-run)."
echo "N = 128 is predicted by the model only: verilating the N=128 core takes > 15 min and > 12 GB on this machine."
echo "bound = M*tiles / (M*tiles + N + 1 + L + 2), L = 2N (docs/isa.md \"Timing\", pe_stages 1): the first"
echo "lw (N + 1 cycles to its first vector), the array's fill/drain (L), the lw's dispatch and the halt are"
echo "paid once per phase; every later lw hides behind the matmul before it (M >= 3N - 1)."
printf '%s' "$rows" | awk '
function f(x) { return x == "-" ? "-" : x }
function pct(a, b) { return (a == "-" || b == "-" || b == 0) ? "-" : sprintf("%.2f %%", 100 * a / b) }
BEGIN {
    print "| N | M x K x N\x27 | tiles | phase cycles RTL | phase cycles model | model/RTL | MXU_BUSY | WL_STALL RTL / model | phase util RTL | phase util model | bound | whole-program util RTL / model | whole CYCLES RTL / model (model vs RTL) |"
    print "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
}
{
    n = $1; m = $2; busy_ideal = m * $5
    rph = ($6 == "-") ? "-" : $7 - $6; mph = $13 - $12
    ratio = (rph == "-") ? "-" : sprintf("%.4f", mph / rph)
    bound = sprintf("%.2f %%", 100 * busy_ideal / (busy_ideal + n + 1 + 2 * n + 2))
    wd = ($10 == "-") ? "" : sprintf(" (%+.2f %%)", 100 * ($16 - $10) / $10)
    printf "| %d | %d x %d x %d | %d | %s | %d | %s | %s | %s / %s | %s | %s | %s | %s / %s | %s / %s%s |\n",
        n, m, $3, $4, $5, rph, mph, ratio, ($8 == "-" ? $14 : ($8 == $14 ? $8 : $8 "/" $14)),
        $9, $15, pct($8, rph), pct($14, mph), bound, pct($11, $10), pct($17, $16), $10, $16, wd
}'
echo "(phase cycles = CYCLES(prologue + sync + phase + halt) - CYCLES(prologue + sync + halt); every RTL run's trace and dumps equal the model's; folder $out)"
[ $bad -eq 0 ] || { echo "FAIL: see above"; exit 1; }
