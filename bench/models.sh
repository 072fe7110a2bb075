#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make bench-models: host inference speed on the Fashion-MNIST models (tests/models): our
# C model (tpu-infer on a tpu-compile'd model) against PyTorch fp32 on one thread and ONNX
# Runtime on one thread, on the same test images. Prints images/s of each and the ratios;
# never pass/fail on speed. Record what it prints in bench/RESULTS.md.
#   tpu-infer: the whole process (program load, .npy read and write), best of R runs
#   PyTorch:   models/torch_run.py --time R: the forward calls only, 500 images per call
#   ORT:       models/ort_run.js --time R: the session.run calls only, 256 images per call
# Environment: BENCH_MODELS_N (MXU size, default 16), BENCH_MODELS_OPTS (more tpu-compile
# options, default "--cores 1 --batch 64 --imem-insns 16384": one core, 64 images per run, so
# the model's per-run cost is shared), BENCH_MODELS_IMAGES (default 2000),
# BENCH_MODELS_REPEAT (R, default 3), M (build/models), T (build/tools), MODELS_PY.
set -eu
N=${BENCH_MODELS_N:-16}
OPTS=${BENCH_MODELS_OPTS:-"--cores 1 --batch 64 --imem-insns 16384"}
K=${BENCH_MODELS_IMAGES:-2000}
R=${BENCH_MODELS_REPEAT:-3}
M=${M:-build/models}
T=${T:-build/tools}
PY=${MODELS_PY:-/usr/bin/python3}
W=$M/bench
mkdir -p "$W"
$PY models/data.py head "$M/data/test_x.npy" "$W/x_$K.npy" "$K"
echo "Fashion-MNIST inference, $K test images, host: $(nproc) cores, $(uname -m)"
echo "tpu-compile --mxu $N $OPTS"
echo "| model | tpu-infer (C model, N = $N) images/s | PyTorch fp32 1 thread images/s | ORT 1 thread images/s | tpu-infer / PyTorch | tpu-infer / ORT |"
echo "|---|---|---|---|---|---|"
for m in mlp cnn; do
    d=$W/${m}_N$N
    rm -rf "$d"
    # shellcheck disable=SC2086
    "$T/tpu-compile" "$M/$m/model.onnx" --mxu "$N" $OPTS -o "$d" >/dev/null 2>&1 ||
        { echo "| $m | tpu-compile failed | | | | |"; continue; }
    best=""
    i=0
    while [ $i -lt "$R" ]; do
        t0=$(date +%s%N)
        "$T/tpu-infer" "$d" --input "$W/x_$K.npy" --output "$W/ours.npy" 2>/dev/null ||
            { echo "| $m | tpu-infer failed | | | | |"; best=fail; break; }
        t=$(( $(date +%s%N) - t0 ))
        if [ -z "$best" ] || [ "$t" -lt "$best" ]; then best=$t; fi
        i=$((i + 1))
    done
    [ "$best" = fail ] && continue
    ours=$(awk -v k="$K" -v ns="$best" 'BEGIN { printf "%.1f", k / (ns / 1e9) }')
    torch=$($PY models/torch_run.py "$m" "$M/$m" "$W/x_$K.npy" "$W/torch.npy" --threads 1 --time "$R" |
        sed -n 's/.*: \([0-9.]*\) images\/s.*/\1/p')
    ort=$(node models/ort_run.js "$M/$m/model.onnx" "$W/x_$K.npy" "$W/ort.npy" --threads 1 --time "$R" |
        sed -n 's/.*: \([0-9.]*\) images\/s.*/\1/p')
    awk -v m="$m" -v o="$ours" -v t="$torch" -v r="$ort" \
        'BEGIN { printf "| %s | %s | %s | %s | %.3g | %.3g |\n", m, o, t, r, o / t, o / r }'
done
