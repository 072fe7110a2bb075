#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make bench-compiler: the compiled Fashion-MNIST CNN and MLP (tests/models: the tutorial's
# Conv2D(64, 3x3) -> MaxPool 2x2 -> ReLU -> Dense(10) -> Softmax, and 784-256-10), per
# configuration N = 16 and 128, C = 1 and 8: compile time, predicted cycles per image,
# images/s at the clock given (BENCH_FREQ_MHZ, default 100: the constraints' FPGA clock; and
# 700, TPU v2's), end-to-end MXU utilisation, each matmul phase's utilisation beside its shape
# bound (issue 14: within 10 %) and the model's cycles over its matmul phases' (issue 14: at
# most 1.5x), and what the model's cycles over its matmul phases could at best be with every
# unit's work fully overlapped (the busiest unit's cycles over the phases: the DMA and VPU
# each run one instruction at a time, so no schedule of the same program goes below it),
# per layer what each unit is busy; then the model's cycles against the RTL's
# (core_tb, N = 16, one batch of 8; target within 2 %). N and 4N images per core (one and four
# MXU tiles of rows).
# Figures only, never pass/fail on speed. Record them in bench/RESULTS.md.
# Environment: M (build/models: the .onnx files), T (build/tools), BENCH_COMPILER_RTL (1: run
# the RTL comparison, default 1).
set -u
M=${M:-build/models}
T=${T:-build/tools}
F=${BENCH_FREQ_MHZ:-100}
W=build/bench/compiler
PY=/usr/bin/python3
mkdir -p "$W"
echo "| model | N | C | batch/core | instructions | compile ms | cycles/image | images/s @ $F MHz | images/s @ 700 MHz | MXU util | matmul phases: util / shape bound, per layer | model / matmul phases | fully overlapped: busiest unit / matmul phases |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for m in cnn mlp; do
    for cfg in "16 1 1" "16 8 1" "16 1 4" "128 1 1" "128 8 1" "128 1 4"; do
        set -- $cfg
        n=$1; c=$2; b=$(( (n > 8 ? n : 8) * c * $3 ))   # N (or 4N) images per core: one (four) tile(s) of rows
        d=$W/${m}_N${n}_C${c}_B$b
        t0=$(date +%s%N)
        "$T/tpu-compile" "$M/$m/model.onnx" --mxu "$n" --cores "$c" --batch "$b" --imem-insns 32768 --freq-mhz "$F" -o "$d" >"$d.log" 2>&1 ||
            { echo "| $m | $n | $c | compile failed: $(tail -n 1 "$d.log") |"; continue; }
        ms=$(( ($(date +%s%N) - t0) / 1000000 ))
        $PY - "$d/report.json" "$m" "$n" "$c" "$ms" "$F" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); m, n, c, ms, f = sys.argv[2:7]
n = int(n); f = float(f); t = r["total"]; b = r["batch_per_core"]
mm = [l for l in r["layers"] if l["k"]]
phases = ", ".join("%.1f / %.1f %%" % (100 * l["phase_util"], 100 * l["shape_bound_padded"]) for l in mm)
mxc = sum(l["mx_cycles"] for l in mm)
dma = sum(l["dma_cycles"] for l in r["layers"])
vpu = sum(l["vpu_cycles"] for l in r["layers"])
unit = "DMA" if dma >= vpu and dma >= mxc else "VPU" if vpu >= mxc else "MXU"
cpi = t["cycles"] / b
print("| %s | %d | %s | %d | %d | %s | %.0f | %.0f | %.0f | %.2f %% | %s | %.2fx | %.2fx (%s) |" % (
    m, n, c, b, r["instructions"], ms, cpi, f * 1e6 * b * int(c) / t["cycles"],
    700e6 * b * int(c) / t["cycles"], 100 * t["mxu_util"], phases, t["cycles"] / mxc if mxc else 0,
    max(dma, vpu, mxc) / mxc if mxc else 0, unit))
PY
    done
done
echo
echo "Per layer at N = 16, C = 1, batch 16 and 64 (cycles; MXU utilisation, the matmul phase's, the shape bound; each unit's busy share of the layer's cycles):"
for m in cnn mlp; do
    for b in 16 64; do
        $PY - "$W/${m}_N16_C1_B$b/report.json" "$m" "$b" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for l in r["layers"]:
    print("  %s B=%-3s %-22s %-18s cycles %8d  MXU %6.2f %%  phase %6.2f %%  shape %6.2f %%  mx %5.1f %%  dma %5.1f %%  vpu %5.1f %%" % (
        sys.argv[2], sys.argv[3], l["node"], l["op"], l["cycles"], 100 * l["mxu_util"], 100 * l["phase_util"],
        100 * l["shape_bound_padded"], 100 * l["mx_cycles"] / l["cycles"], 100 * l["dma_cycles"] / l["cycles"],
        100 * l["vpu_cycles"] / l["cycles"]))
PY
    done
done
if [ "${BENCH_COMPILER_RTL:-1}" = 1 ]; then
    echo
    echo "Model against RTL cycles (core_tb, N = 16, 8 images; ideal AXI slave):"
    echo "| model | model cycles | RTL cycles | RTL / model |"
    echo "|---|---|---|---|"
    $PY -c "import numpy as np; np.save('$W/x8.npy', np.load('$M/data/test_x.npy')[:8])" 2>/dev/null ||
        $PY -c "import numpy as np; np.save('$W/x8.npy', np.random.RandomState(0).rand(8,1,28,28).astype(np.float32))"
    for m in cnn mlp; do
        d=$W/${m}_rtl
        "$T/tpu-compile" "$M/$m/model.onnx" --mxu 16 --cores 1 --batch 8 --imem-insns 4096 -o "$d" >/dev/null 2>&1 || { echo "| $m | compile failed | | |"; continue; }
        "$T/tpu-infer" "$d" --input "$W/x8.npy" --output "$d.npy" --rtl --work "$d.work" >"$d.rtl.log" 2>&1 ||
            { echo "| $m | RTL run failed ($d.rtl.log) | | |"; continue; }
        mc=$(sed -n 's/.*; \([0-9]*\) cycles per run (model)/\1/p' "$d.rtl.log")
        rc=$(sed -n 's/^core_tb: counters: CYCLES=\([0-9]*\) .*/\1/p' "$d.rtl.log")
        echo "| $m | $mc | $rc | $(echo "$rc $mc" | awk '{printf "%.4f", $1 / $2}') |"
    done
fi
