#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make bench-train (docs/training.md): the tutorial's training runs on the board C model
# (N = 128, C = 8, batch 64, Adam 1e-3) beside PyTorch fp32 on one thread, with the same data,
# initial weights and batch order: loss/accuracy per epoch, host steps/s of each and their
# ratio, simulated cycles and ms per step at 700 MHz, MXU utilisation.
#   MLP: 10 epochs of 93 steps (one pass over the 60,000 images), validation on 1,280 test
#   images after each; CNN: 5 epochs of TRAIN_CNN_STEPS / 5 steps (default 100 steps; ~3 s a
#   step), validation on 640 images. Per-epoch points so the plot shows curves.
#   The text model (models/text.py, the second tutorial's Embedding -> Conv1D -> MaxPool ->
#   Conv1D -> MaxPool -> Dense(46)) on its generated token sequences (8,192 training, 1,024
#   validation: a topic is recognisable from which keywords occur), TRAIN_TEXT_EPOCHS epochs
#   (default 6) of 128 steps, validation on all 1,024.
# Figures only; copy them into bench/RESULTS.md. TRAIN_RTL=1 also co-simulates one CNN step
# (batch 8: one image per core, about 3,000 instructions) on the gen --mxu 128 --cores 8 board
# with --imem-insns 4096, the core traced at its ports (BOARD_CORE_TRACE_DEPTH=1, as
# bench-board-128) (a ~10 GB, several-minute Verilator build: run nothing else meanwhile; the
# step is ~451 k cycles and that board simulates ~100 cycles/s: about 75 minutes).
set -u
B=${BUILD:-build}
W=$B/bench/train
T=$B/tools/tpu-train
mkdir -p "$W"
PY=/usr/bin/python3
STEPS=${TRAIN_CNN_STEPS:-100}
for m in mlp cnn; do
    [ -f "$W/${m}_init.onnx" ] || $PY models/nets.py $m "$W/${m}_init.onnx" >/dev/null 2>&1
done
run() { # name model extra-args
    name=$1; model=$2; shift 2
    echo "### $name: tpu-train $model --batch 64 $*"
    /usr/bin/time -f "%e s wall, %M KB peak" -o "$W/$name.time" \
        "$T" "$W/$model" --batch 64 --csv "$W/$name.csv" --plot "$W/$name.png" "$@" \
        >"$W/$name.log" 2>&1 || { echo "FAILED: see $W/$name.log"; return; }
    grep -E "instructions|/.* - .*loss|PyTorch fp32" "$W/$name.log"
    echo "(whole command: $(cat "$W/$name.time"); plot $W/$name.png)"
    $PY - "$W/$name.csv" "$W/$name.csv.torch.csv" <<'PY'
import csv, sys
oo = list(csv.DictReader(open(sys.argv[1])))
rr = list(csv.DictReader(open(sys.argv[2])))
o, r = oo[-1], rr[-1]
ot, rt = sum(float(x["wall_s"]) for x in oo), sum(float(x["wall_s"]) for x in rr)
print(f"host time of the training steps: ours {ot:.1f} s, PyTorch fp32 (1 thread) {rt:.1f} s: "
      f"ours at {rt / ot:.3f}x PyTorch's speed; simulated {float(o['cycles_per_step']):.0f} cycles/step = "
      f"{float(o['sim_ms_per_step']):.3f} ms/step at 700 MHz, MXU utilisation {100 * float(o['mxu_util']):.2f} % (busy {100 * float(o['mxu_busy']):.1f} %)")
PY
}
run mlp mlp_init.onnx --dataset fashion-mnist --epochs 10 --steps-per-epoch 93 --val-steps 20
run cnn cnn_init.onnx --dataset fashion-mnist --epochs 5 --steps-per-epoch $((STEPS / 5)) --val-steps 10 --imem-insns 32768
$PY models/text.py "$W" --train 8192 --val 1024 >/dev/null 2>&1 || echo "FAILED: models/text.py"
run text text.onnx --x-train "$W/text_train_x.npy" --y-train "$W/text_train_y.npy" --x-val "$W/text_val_x.npy" \
    --y-val "$W/text_val_y.npy" --epochs "${TRAIN_TEXT_EPOCHS:-6}" --imem-insns 4096
if [ "${TRAIN_RTL:-0}" = 1 ]; then
    echo "### one CNN training step on the RTL board (N = 128, C = 8, batch 8, --imem-insns 4096)"
    BOARD_CORE_TRACE_DEPTH=1 /usr/bin/time -f "%e s wall, %M KB peak" -o "$W/rtl.time" \
        "$T" "$W/cnn_init.onnx" --dataset fashion-mnist --batch 8 --steps-per-epoch 1 --val-steps 0 \
        --imem-insns 4096 --rtl 1 --work "$W/rtl" >"$W/rtl.log" 2>&1 || echo "FAILED: see $W/rtl.log"
    grep -E "board: C=|on the RTL|cycles/step" "$W/rtl.log"
    echo "(whole command, the board build included: $(cat "$W/rtl.time"))"
fi
