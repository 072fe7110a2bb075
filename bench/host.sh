#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Host speed of the C model on one large image (issue 18, "Host speed"; make bench-host, also
# run by make bench-models): torchvision ResNet-50 at 224x224 (random weights, BatchNorm
# calibrated, exported by tests/zoo/zoo.py with a dynamic batch), compiled by tpu-compile for
# one core of N = 128 at batch 1, one image on
#   ours:    tpu-infer --time (the C model, one thread): the whole process (reading the
#            compiled model, laying out host memory, the run, writing the output) and the
#            model's run alone, best of R processes;
#   PyTorch: fp32 forward on one thread (torch.set_num_threads(1)), best of R calls after a
#            warm-up (bench/zoo_torch_time.py, the model zoo.py exported, checked against its
#            fp32 output);
#   ORT:     ONNX Runtime (npm onnxruntime-node) with intraOpNumThreads 1, best of R
#            session.run calls after a first one (models/ort_run.js --time R).
# Prints ms per image of each and the ratios (their time / ours: 0.3x = ours takes 3.3 times
# as long), the model's cycles and the sha256 of our output (the bits do not depend on the
# host's speed), the load average before and after. Never pass/fail on speed.
# Environment: HOST_MODEL (resnet50), HOST_SIZE (224), HOST_N (128), HOST_REPEAT (R, 5),
# HOST_OPTS (more tpu-compile options), HOST_PAIRS (alternated ours / ORT pairs, 10; 0: none),
# T (build/tools), W (build/bench/host).
set -u
MODEL=${HOST_MODEL:-resnet50}
SIZE=${HOST_SIZE:-224}
N=${HOST_N:-128}
R=${HOST_REPEAT:-5}
T=${T:-build/tools}
W=${W:-build/bench/host}
PY=/usr/bin/python3
mkdir -p "$W"
echo "Host speed: $MODEL at ${SIZE}x$SIZE, one image, one thread; $(nproc) cores, $(uname -m); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ ! -s "$W/${MODEL}_x1.npy" ] || [ ! -s "$W/$MODEL.onnx" ]; then
    $PY tests/zoo/zoo.py "$W" "$SIZE" 1 "$MODEL" >"$W/export.log" 2>&1 || { tail -n 5 "$W/export.log"; exit 1; }
fi
d=$W/${MODEL}_N$N
if [ ! -s "$d/model.bin" ]; then
    # shellcheck disable=SC2086
    "$T/tpu-compile" "$W/$MODEL.onnx" --mxu "$N" --cores 1 --batch 1 --imem-insns 32768 ${HOST_OPTS:-} \
        -o "$d" >"$W/compile.log" 2>&1 || { tail -n 3 "$W/compile.log"; exit 1; }
fi
best_all="" best_run="" cycles=""
i=0
while [ $i -lt "$R" ]; do
    "$T/tpu-infer" "$d" --input "$W/${MODEL}_x1.npy" --output "$W/ours.npy" --time 2>"$W/ours.log" ||
        { cat "$W/ours.log"; exit 1; }
    a=$(sed -n 's/.*host time \([0-9.]*\) ms in all, \([0-9.]*\) ms in the model.*/\1 \2/p' "$W/ours.log")
    set -- $a
    best_all=$(awk -v b="$best_all" -v x="$1" 'BEGIN { print (b == "" || x < b) ? x : b }')
    best_run=$(awk -v b="$best_run" -v x="$2" 'BEGIN { print (b == "" || x < b) ? x : b }')
    cycles=$(sed -n 's/.*; \([0-9]*\) cycles per run.*/\1/p' "$W/ours.log")
    i=$((i + 1))
done
torch=$($PY bench/zoo_torch_time.py "$MODEL" "$SIZE" "$W/${MODEL}_x1.npy" "$W/${MODEL}_fp32_1.npy" --time "$R" |
    sed -n 's/.*best \([0-9.]*\) ms per call.*/\1/p')
ort=""
if [ -d "${ORT_NODE_MODULES:-build/node/node_modules}/onnxruntime-node" ] && command -v node >/dev/null; then
    ort=$(node models/ort_run.js "$W/$MODEL.onnx" "$W/${MODEL}_x1.npy" "$W/ort.npy" --threads 1 --time "$R" |
        sed -n 's/.*: \([0-9.]*\) images\/s.*/\1/p' | awk '{ printf "%.2f", 1000 / $1 }')
fi
diff=$($PY -c "import numpy as np,sys; print('%.3g' % abs(np.load(sys.argv[1]) - np.load(sys.argv[2])).max())" \
    "$W/ours.npy" "$W/${MODEL}_fp32_1.npy")
echo "tpu-compile --mxu $N --cores 1 --batch 1 --imem-insns 32768: $cycles cycles per image (model);" \
    "output sha256 $(sha256sum "$W/ours.npy" | cut -c1-16), max |ours - PyTorch fp32| = $diff"
echo "| $MODEL ${SIZE}x$SIZE, 1 image | ms per image | PyTorch / this | ORT / this |"
echo "|---|---|---|---|"
row() { awk -v n="$1" -v t="$2" -v p="$torch" -v o="$ort" 'BEGIN {
    pr = (p != "") ? sprintf("%.3gx", p / t) : "-"; orr = (o != "") ? sprintf("%.3gx", o / t) : "-";
    printf "| %s | %.1f | %s | %s |\n", n, t, pr, orr }'; }
row "tpu-infer, C model, whole process (best of $R)" "$best_all"
row "tpu-infer, the model's run alone" "$best_run"
[ -n "$torch" ] && echo "| PyTorch fp32, 1 thread (best of $R calls) | $torch | 1x | |"
[ -n "$ort" ] && echo "| ONNX Runtime, 1 thread (best of $R runs) | $ort | | 1x |"
[ -z "$ort" ] && echo "(ONNX Runtime not installed: make ort-node)"
# alternated pairs (the host's speed moves by 30 % from minute to minute on a shared VM, and
# ours and ORT's best-of-R above come minutes apart): P times one tpu-infer process then ORT's
# best of 3 calls, the ratio ORT / ours of each pair, their median and range
P=${HOST_PAIRS:-10}
if [ -n "$ort" ] && [ "$P" -gt 0 ]; then
    : >"$W/pairs.txt"
    i=0
    while [ $i -lt "$P" ]; do
        o=$("$T/tpu-infer" "$d" --input "$W/${MODEL}_x1.npy" --output "$W/ours.npy" --time 2>&1 |
            sed -n 's/.*host time \([0-9.]*\) ms in all.*/\1/p')
        r=$(node models/ort_run.js "$W/$MODEL.onnx" "$W/${MODEL}_x1.npy" "$W/ort.npy" --threads 1 --time 3 |
            sed -n 's/.*: \([0-9.]*\) images\/s.*/\1/p' | awk '{ printf "%.2f", 1000 / $1 }')
        echo "$o $r" >>"$W/pairs.txt"
        i=$((i + 1))
    done
    $PY - "$W/pairs.txt" <<'PY'
import statistics, sys
p = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 2]
r = sorted(b / a for a, b in p)
print("alternated pairs (%d): ours %.1f .. %.1f ms, ORT %.1f .. %.1f ms; ORT / ours per pair: median %.3fx (%.3f .. %.3f)"
      % (len(p), min(a for a, b in p), max(a for a, b in p), min(b for a, b in p), max(b for a, b in p),
         statistics.median(r), r[0], r[-1]))
PY
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
