#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Training runs of two builds, compared byte for byte: the weights after two steps (the saved
# ONNX) and the first step's all-reduced gradients and weights (--grads-dir), over a matrix of
# models, N, cores, optimizers and micro-steps (given explicitly, so both builds run the same
# micro-steps). A change to the training pass that must not change a training step's numerics
# (the loop pass's nests, a WMEM slot order, a buffer's place) must pass it; a change of the
# program text alone is not a difference here (tests/train/same_text.sh is the stricter check
# for a refactoring that must not change the text either).
#   tests/train/same_bits.sh compare REV DIR   REV's tpu-train built in DIR/base, the models
#                                              in DIR/models, both runs, cmp; exit 1 on any
#                                              difference or on a run this tree refuses that
#                                              REV's ran
# (make train-same-bits [BITS_BASE=REV]; a few minutes, not part of make test)
set -eu
PY=/usr/bin/python3
[ "${1:-}" = compare ] && [ $# -eq 3 ] || { echo "usage: same_bits.sh compare REV DIR" >&2; exit 2; }
REV=$2 D=$3
B=${BUILD:-build}
rm -rf "$D/base" "$D/old" "$D/new"
mkdir -p "$D/base" "$D/old" "$D/new"
git archive "$REV" | tar -x -C "$D/base"
(cd "$D/base" && make -s build/tools/tpu-train >/dev/null)
M=$D/models
if [ ! -e "$M/x2.npy" ]; then
    mkdir -p "$M"
    $PY tests/train/mk.py "$M" >"$M/mk.log" 2>&1
    $PY -c "import numpy as np; np.save('$M/x2.npy', np.load('$M/x.npy').reshape(96, 20)); np.save('$M/y5.npy', np.load('$M/y.npy') % 5)"
    $PY models/nets.py cnn "$M/tcnn.onnx"
    $PY models/nets.py mlp "$M/tmlp.onnx"
fi
n=0 same=0 both=0 fits=0 fails=0
one() { # name model data-options... (then the configuration)
    name=$1
    shift
    for side in old new; do
        T=$D/base/build/tools/tpu-train
        [ $side = new ] && T=$B/tools/tpu-train
        o=$D/$side/$name
        mkdir -p "$o"
        if "$T" "$@" --epochs 1 --steps-per-epoch 2 --val-steps 1 --save-onnx "$o/w.onnx" \
            --grads-dir "$o/g" --imem-insns 32768 >"$o/log" 2>&1; then
            echo ok >"$o/rc"
        else
            echo refused >"$o/rc"
        fi
    done
    n=$((n + 1))
    o=$D/old/$name w=$D/new/$name
    if [ "$(cat "$o/rc")" = refused ] && [ "$(cat "$w/rc")" = refused ]; then
        both=$((both + 1))
    elif [ "$(cat "$o/rc")" = refused ]; then
        fits=$((fits + 1)) # runs now where REV's refused: nothing to compare
    elif [ "$(cat "$w/rc")" = refused ]; then
        echo "same_bits.sh: $name: refused here, ran in $REV: $(tail -n 1 "$w/log")"
        fails=$((fails + 1))
    elif cmp -s "$o/w.onnx" "$w/w.onnx" && diff -r "$o/g" "$w/g" >/dev/null; then
        same=$((same + 1))
    else
        echo "same_bits.sh: $name: the weights or gradients differ from $REV's"
        fails=$((fails + 1))
    fi
}
for N in 4 8 16; do
    for C in 1 2; do
        Bt=$((4 * C))
        for cfg in "mlp x" "deep x2" "cnn xc" "cnn2 xc2" "cnn3 xc3" "conv2 xc" "cc xcc" "text xt" \
                   "cs xcc" "res xcc" "bag xt" "wide xw" "tiles xs"; do
            set -- $cfg
            m=$1 x=$2 y=y lg=
            [ $m = deep ] && y=y5 lg=--logits
            one "${m}_n${N}_c${C}_adam" "$M/$m.onnx" --x-train "$M/$x.npy" --y-train "$M/$y.npy" \
                $lg --mxu $N --cores $C --batch $Bt --micro-batch 4 --optimizer adam
            one "${m}_n${N}_c${C}_mom_micro" "$M/$m.onnx" --x-train "$M/$x.npy" --y-train "$M/$y.npy" \
                $lg --mxu $N --cores $C --batch $Bt --micro-batch 1 --optimizer sgd --momentum 0.9
        done
    done
done
# a small ACC: q chunks shorter than a pooled row's q-space (the chunks then cover the valid
# pooled pixels only: train.c q_chunk)
for cfg in "res xcc 2" "res xcc 4" "cs xcc 2" "cs xcc 4" "wide xw 4"; do
    set -- $cfg
    one "${1}_n4_acc$3" "$M/$1.onnx" --x-train "$M/$2.npy" --y-train "$M/y.npy" --mxu 4 --cores 1 \
        --batch 4 --micro-batch 4 --acc-kib $3 --optimizer adam
done
# the tutorial's models on Fashion-MNIST (a Conv with the ReLU after its pool, a wide Gemm)
for N in 8 16; do
    one "tmlp_n${N}" "$M/tmlp.onnx" --dataset fashion-mnist --mxu $N --cores 2 --batch 32 --micro-batch 8
    one "tcnn_n${N}" "$M/tcnn.onnx" --dataset fashion-mnist --mxu $N --cores 2 --batch 4 --micro-batch 1
done
echo "same_bits.sh: $n runs: $same the same bits as $REV's, $fails differ; $fits run only here, $both refused by both"
[ $fails -eq 0 ] && [ $same -gt 0 ]
