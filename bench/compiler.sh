#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make bench-compiler: the compiled Fashion-MNIST CNN and MLP (tests/models: the tutorial's
# Conv2D(64, 3x3) -> MaxPool 2x2 -> ReLU -> Dense(10) -> Softmax, and 784-256-10), per
# configuration N = 16 and 128, C = 1 and 8: compile time, predicted cycles per image,
# images/s at the clock given (BENCH_FREQ_MHZ, default 100: the constraints' FPGA clock; and
# 700, TPU v2's), end-to-end MXU utilisation and per layer beside the tiling's bound; then
# the model's cycles against the RTL's (core_tb, N = 16, one batch of 8; target within 2 %). N images
# per core (one MXU tile of rows).
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
echo "| model | N | C | batch/core | instructions | compile ms | cycles/image | images/s @ $F MHz | images/s @ 700 MHz | MXU util | matmul-phase util (bound) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for m in cnn mlp; do
    for cfg in "16 1" "16 8" "128 1" "128 8"; do
        set -- $cfg
        n=$1; c=$2; b=$(( (n > 8 ? n : 8) * c ))   # N images per core: one tile of rows
        d=$W/${m}_N${n}_C$c
        t0=$(date +%s%N)
        "$T/tpu-compile" "$M/$m/model.onnx" --mxu "$n" --cores "$c" --batch "$b" --imem-insns 32768 --freq-mhz "$F" -o "$d" >"$d.log" 2>&1 ||
            { echo "| $m | $n | $c | compile failed: $(tail -n 1 "$d.log") |"; continue; }
        ms=$(( ($(date +%s%N) - t0) / 1000000 ))
        $PY - "$d/report.json" "$m" "$n" "$c" "$ms" "$F" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); m, n, c, ms, f = sys.argv[2:7]
n = int(n); f = float(f); t = r["total"]; b = r["batch_per_core"]
mm = [l for l in r["layers"] if l["macs"]]
mmc = sum(l["cycles"] for l in mm)
phase = sum(l["macs"] for l in mm) / (n * n * mmc) if mmc else 0
bound = sum(l["macs"] for l in mm) / sum(l["macs"] / l["shape_bound"] for l in mm if l["shape_bound"])
cpi = t["cycles"] / b
print("| %s | %d | %s | %d | %d | %s | %.0f | %.0f | %.0f | %.2f %% | %.2f %% (%.1f %%) |" % (
    m, n, c, b, r["instructions"], ms, cpi, f * 1e6 * b * int(c) / t["cycles"],
    700e6 * b * int(c) / t["cycles"], 100 * t["mxu_util"], 100 * phase, 100 * bound))
PY
    done
done
echo
echo "Per layer at N = 16, C = 1 (cycles, MXU utilisation, the tiling's bound):"
for m in cnn mlp; do
    $PY - "$W/${m}_N16_C1/report.json" "$m" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for l in r["layers"]:
    print("  %s %-22s %-22s cycles %9d  MXU %6.2f %%  bound %6.2f %%" % (sys.argv[2], l["node"], l["op"], l["cycles"], 100 * l["mxu_util"], 100 * l["shape_bound"]))
PY
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
