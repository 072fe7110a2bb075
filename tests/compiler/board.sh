#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-compiler-board (make test-full): the tutorial's Fashion-MNIST CNN and the 784-256-10 MLP
# (trained by tests/models on the real data), compiled for the N = 16 board of 8 cores, run on
# the first 64 test images (8 per core) by tpu-infer --rtl: the SystemC board of 8 verilated
# cores against the board model, every core's trace and output identical; and the outputs are
# those of the C model run (the same bits as tpu-infer without --rtl).
# usage: tests/compiler/board.sh WORKDIR MODELS_DIR TEST_X.npy
set -u
W=$1; M=$2; X=$3
B=${BUILD:-build}/tools
fails=0
rm -rf "$W"; mkdir -p "$W"
/usr/bin/python3 -c "import numpy as np, sys; np.save(sys.argv[2], np.load(sys.argv[1])[:64])" "$X" "$W/x64.npy" || exit 1
for m in cnn mlp; do
    d="$W/${m}_N16_C8"
    "$B/tpu-compile" "$M/$m/model.onnx" --mxu 16 --cores 8 --batch 64 --imem-insns 4096 -o "$d" >"$d.log" 2>&1 ||
        { echo "FAIL: $m: compile: $(tail -n 1 "$d.log")"; fails=$((fails + 1)); continue; }
    "$B/tpu-infer" "$d" --input "$W/x64.npy" --output "$d.npy" >"$d.model.log" 2>&1 ||
        { echo "FAIL: $m: the C model run"; fails=$((fails + 1)); continue; }
    if "$B/tpu-infer" "$d" --input "$W/x64.npy" --output "$d.rtl.npy" --rtl --work "$d.work" >"$d.rtl.log" 2>&1; then
        echo "ok: $m: $(grep -h 'traces identical' "$d.rtl.log" | tail -n 1)"
        grep -h "board_tb: board:" "$d.rtl.log" | sed 's/^/    /'
    else
        echo "FAIL: $m on the RTL board"; tail -n 20 "$d.rtl.log"; fails=$((fails + 1))
    fi
    cmp -s "$d.npy" "$d.rtl.npy" && echo "ok: $m: outputs of the --rtl run = the C model's" || { echo "FAIL: $m: outputs differ"; fails=$((fails + 1)); }
done
echo "test-compiler-board: $fails failure(s)"
[ $fails -eq 0 ]
