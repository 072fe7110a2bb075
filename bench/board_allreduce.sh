#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make bench-board-allreduce: one `allreduce` instruction on the board (docs/board.md), C = 8
# cores, torus 2x4 (dimension ordered) and the same board with the `ring` flag (one ring over
# the 8 cores in id order), S = 1 KiB .. 1 MiB of fp32 (n = S / (4N) ACC rows), measured on
# the RTL board (sim/board_tb.cpp, the assembled SystemC co-simulation) and predicted by the
# board C model (tpu-board-run). Figures, never pass/fail on speed; a run that does not halt
# cleanly, or whose results differ from the model's, is reported FAIL.
#
# Per size S and variant (torus, ring), two board jobs, the same program on every core:
#   ar:   dma_in acc row=0 rows=n ...; sync; barrier; allreduce acc row=0 rows=n [ring];
#         [dma_out acc row=0 rows=n cols=N addr=S;] halt
#   base: the same with a `nop` in place of the allreduce
# The host starts the cores one after the other; the barrier lines them up, so the
# allreduce's own cycles on core i are NET_BUSY(ar) - NET_BUSY(base) (counter 6 counts the
# cycles a collective is in progress, waiting included); the figure is the slowest core's.
# Data (random fp32, different on every core): for S <= CHECK_MAX whole rows (dma_in cols=N),
# and the result is dumped (dma_out); above it, a 1 MiB DMA over the 64-bit AXI being slow in
# simulation, one element per row (dma_in cols=1 stride=4: lane 0 from the host, lanes 1..N-1
# the pad value -0), one beat per row, and no dma_out (the allreduce's timing does not depend
# on the data). Every core's result must equal on every core in the model, and with
# BOARD_CMP the RTL's traces (every row each step writes) and dumps must equal the model's
# bit for bit (the model itself is checked against tpu_allreduce_torus/ring by make test).
#
# usage: bench/board_allreduce.sh DIR
# Environment: BOARD_TB (the harness of `sim/board_build.sh asm N 8 torus:2x4 W D`; empty:
#   model only), TPU_BOARD_RUN, N (MXU size the harness was built for, default 16), ACC_KIB
#   (the core's ACC, KiB, as given to gen; default gen's 8N), W (64), D (2),
#   SIZES (bytes, default 1 KiB .. 1 MiB by 4), CHECK_MAX (default 16384), NOC_TB (optional:
#   build/units/noc-ring8/tb, the NoC-only figure of bench-noc-allreduce), BOARD_CMP (optional:
#   tpu-board-cmp; then every RTL run's traces, the row writes of every step, and dumps must
#   equal the model's, at every size: without data both sides reduce zeros).
set -u
out=${1:?usage: $0 DIR}
tb=${BOARD_TB:-}
brun=${TPU_BOARD_RUN:-build/tools/tpu-board-run}
n_mxu=${N:-16}
acc_kib=${ACC_KIB:-$((8 * n_mxu))}
w=${W:-64}
d=${D:-2}
sizes=${SIZES:-1024 4096 16384 65536 262144 1048576}
check_max=${CHECK_MAX:-16384}
noc_tb=${NOC_TB:-}
bcmp=${BOARD_CMP:-}
c=8
topo=torus:2x4
acc_rows=$((acc_kib * 1024 / (4 * n_mxu)))
rm -rf "$out"; mkdir -p "$out/bin"
bad=0
# private copies of the tools: other builds may replace them while this runs
cp "$brun" "$out/bin/tpu-board-run" || exit 2
brun=$out/bin/tpu-board-run
if [ -n "$bcmp" ]; then cp "$bcmp" "$out/bin/tpu-board-cmp" || exit 2; bcmp=$out/bin/tpu-board-cmp; fi

# ctr FILE NAME: a counter from a "counters: CYCLES=.. ..." line
ctr() { grep -m1 'counters:' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# npy FILE ROWS COLS SEED: ROWS x COLS little-endian fp32, random normal values of random
# sign and exponent (2^-8 .. 2^8), an xorshift64 stream seeded by SEED
npy() {
    python3 - "$@" <<'EOF'
import struct, sys
path, rows, cols, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
x = (seed * 0x9E3779B97F4A7C15 + 1) & (2**64 - 1)
def nxt():
    global x
    x ^= (x << 13) & (2**64 - 1); x ^= x >> 7; x ^= (x << 17) & (2**64 - 1)
    return x
words = []
for _ in range(rows * cols):
    r = nxt()
    words.append((r >> 63) << 31 | (119 + (r >> 32) % 17) << 23 | (r & 0x7FFFFF))
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<%dI" % len(words), *words))
EOF
}

# job DIR S N_ROWS RINGFLAG WHAT(ar|base) DATA(0|1): a board job of C cores
job() {
    jd=$1; s=$2; nr=$3; rf=$4; what=$5; data=$6
    mkdir -p "$jd"
    mib=$(( (2 * s + 1048575) / 1048576 ))
    for i in $(seq 0 $((c - 1))); do
        {
            if [ "$data" -eq 1 ]; then
                echo "dma_in acc row=0 rows=$nr cols=$n_mxu addr=0"
            else
                echo "dma_in acc row=0 rows=$nr cols=1 addr=0 stride=4"
            fi
            echo "sync"
            echo "barrier"
            if [ "$what" = ar ]; then echo "allreduce acc row=0 rows=$nr$rf"; else echo "nop"; fi
            [ "$data" -eq 1 ] && echo "dma_out acc row=0 rows=$nr cols=$n_mxu addr=$s"
            echo "halt"
        } >"$jd/core$i.s"
        {
            echo "--prog core$i.s"
            echo "--hostmem-mib $mib"
            echo "--load 0=x$i.npy"
            [ "$data" -eq 1 ] && echo "--dump $s=out.npy:f32:${nr}x$n_mxu"
        } >"$jd/core$i.args"
        if [ "$data" -eq 1 ]; then npy "$jd/x$i.npy" "$nr" "$n_mxu" $((s + i))
        else npy "$jd/x$i.npy" "$nr" 1 $((s + i)); fi
    done
}

# model JOBDIR OUTDIR / rtl JOBDIR OUTDIR: run the job; the log in OUTDIR.log
model() {
    "$brun" --mxu "$n_mxu" --cores $c --topology $topo --link-bits "$w" --link-latency "$d" \
        --acc-kib "$acc_kib" --job "$1" --out "$2" >"$2.log" 2>&1 ||
        { echo "FAIL: tpu-board-run --job $1"; tail -n 5 "$2.log"; bad=1; return 1; }
}
rtl() {
    "$tb" --job "$1" --out "$2" >"$2.log" 2>&1 ||
        { echo "FAIL: board_tb --job $1"; tail -n 5 "$2.log"; bad=1; return 1; }
}

# netbusy OUTA OUTB: "max min" over cores of NET_BUSY(A) - NET_BUSY(B)
netbusy() {
    for i in $(seq 0 $((c - 1))); do
        echo $(( $(ctr "$1/core$i.counters" NET_BUSY) - $(ctr "$2/core$i.counters" NET_BUSY) ))
    done | sort -n | awk 'NR == 1 { mn = $1 } { mx = $1 } END { print mx, mn }'
}

# the NoC-only figures (bench-noc-allreduce: ring of 8, data movement only), by size
noc=""
if [ -n "$noc_tb" ] && [ -x "$noc_tb" ]; then
    "$noc_tb" --rows 1 --cols 8 --allreduce >"$out/noc.log" 2>&1 ||
        { echo "FAIL: $noc_tb --allreduce"; tail -n 5 "$out/noc.log"; bad=1; }
    noc=$(awk -F'|' '$2 ~ /^ *[0-9]+ *$/ { gsub(/ /, "", $2); gsub(/ /, "", $3); print $2 ":" $3 }' "$out/noc.log")
fi

rows=""
for s in $sizes; do
    nr=$((s / (4 * n_mxu)))
    if [ $((nr * 4 * n_mxu)) -ne "$s" ] || [ "$nr" -gt "$acc_rows" ] || [ "$nr" -gt 65535 ]; then
        echo "skip S = $s: n = S / (4N) = $s / $((4 * n_mxu)) must be a whole number of rows <= $acc_rows (ACC) and <= 65535"
        continue
    fi
    data=0; [ "$s" -le "$check_max" ] && data=1
    nocc=$(printf '%s\n' "$noc" | sed -n "s/^$s://p")
    for v in torus ring; do
        rf=""; [ $v = ring ] && rf=" ring"
        dd=$out/S${s}_$v
        job "$dd/ar" "$s" "$nr" "$rf" ar "$data"
        job "$dd/base" "$s" "$nr" "$rf" base "$data"
        if ! model "$dd/ar" "$dd/ar.model" || ! model "$dd/base" "$dd/base.model"; then continue; fi
        read -r mmax _ <<EOF
$(netbusy "$dd/ar.model" "$dd/base.model")
EOF
        if [ "$data" -eq 1 ]; then
            for i in $(seq 1 $((c - 1))); do
                cmp -s "$dd/ar.model/core0/out.npy" "$dd/ar.model/core$i/out.npy" ||
                    { echo "FAIL: S=$s $v: the model's core $i result differs from core 0's"; bad=1; }
            done
        fi
        rmax=-; rmin=-; secs=-; cps=-
        if [ -n "$tb" ]; then
            if rtl "$dd/ar" "$dd/ar.rtl" && rtl "$dd/base" "$dd/base.rtl"; then
                read -r rmax rmin <<EOF
$(netbusy "$dd/ar.rtl" "$dd/base.rtl")
EOF
                if [ -n "$bcmp" ]; then
                    for j in ar base; do
                        "$bcmp" --job "$dd/$j" --mxu "$n_mxu" "$dd/$j.model" "$dd/$j.rtl" >"$dd/$j.cmp" 2>&1 ||
                            { echo "FAIL: S=$s $v $j: the RTL's traces or dumps differ from the model's"; head -n 5 "$dd/$j.cmp"; bad=1; }
                    done
                fi
                secs=$(sed -n 's/^board_tb: [0-9]* cycles simulated in \([0-9.]*\) s (\([0-9]*\) cycles\/s)/\1/p' "$dd/ar.rtl.log")
                cps=$(sed -n 's/^board_tb: [0-9]* cycles simulated in \([0-9.]*\) s (\([0-9]*\) cycles\/s)/\2/p' "$dd/ar.rtl.log")
                if [ "$data" -eq 1 ]; then
                    for i in $(seq 0 $((c - 1))); do
                        cmp -s "$dd/ar.model/core$i/out.npy" "$dd/ar.rtl/core$i/out.npy" ||
                            { echo "FAIL: S=$s $v: core $i's RTL result differs from the model's"; bad=1; }
                    done
                fi
            fi
        fi
        rows="$rows$s $v $nr $rmax $rmin $mmax ${nocc:--} ${secs:--} ${cps:--} $data
"
    done
done

echo "One allreduce on the board: C = 8, torus 2x4 (and the ring flag: one ring of 8 in id order), W = $w, D = $d,"
echo "N = $n_mxu (n = S / $((4 * n_mxu)) ACC rows; ACC $acc_kib KiB). RTL: ${tb:-not run (model only)}."
echo "RTL = NET_BUSY of the slowest core (min over cores in brackets), barrier-aligned start; model = tpu-board-run;"
echo "bound = 2(C-1)/C * S / (W/8); NoC = bench-noc-allreduce (tpu_noc ring of 8, data movement only)."
printf '%s' "$rows" | awk -v w="$w" -v c="$c" '
function pct(a, b) { return (a == "-" || b == "-" || b == 0) ? "-" : sprintf("%.1f %%", 100 * a / b) }
BEGIN {
    print "| S bytes | variant | rows n | RTL cycles | model cycles | model error | bound | bound / RTL | bound / model | NoC only | data | sim s (cycles/s) |"
    print "|---|---|---|---|---|---|---|---|---|---|---|---|"
}
{
    bound = 2 * (c - 1) / c * $1 / (w / 8)
    err = ($4 == "-") ? "-" : sprintf("%+.2f %%", 100 * ($6 - $4) / $4)
    printf "| %d | %s | %d | %s | %d | %s | %.0f | %s | %s | %s | %s | %s |\n", $1, $2, $3,
        ($4 == "-") ? "-" : sprintf("%d (%d)", $4, $5), $6, err, bound, pct(bound, $4),
        pct(bound, $6), ($2 == "ring") ? $7 : "-", $10 ? "whole rows" : "lane 0 of each row",
        ($8 == "-") ? "-" : sprintf("%s (%s)", $8, $9)
}'
echo "(folder $out)"
[ $bad -eq 0 ] || { echo "FAIL: see above"; exit 1; }
