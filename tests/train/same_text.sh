#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The training pass's output over a matrix of models and configurations, one file per
# configuration (step_text: the assembly text, each instruction's phase and layer, the update
# part's pc, the host layout; with the loop pass and without). Run it with the step_text of
# two builds and diff the directories: a refactoring of compiler/src/train.c must leave every
# byte as it was.
#   make build/tests/step_text            (in each tree; see tests/train/suite.mk)
#   tests/train/same_text.sh models DIR   (once: the models, tests/train/mk.py and others)
#   tests/train/same_text.sh run OLD/build/tests/step_text DIR DIR/old
#   tests/train/same_text.sh run NEW/build/tests/step_text DIR DIR/new
#   diff -r DIR/old DIR/new && echo same
# ResNet-18 (64x64, --logits) at N = 8 and 16 has millions of instructions: those files keep
# only the output's sha256 and size. All of it in one command (make train-same-text
# [TEXT_BASE=REV]; a few minutes, ResNet-18 at N = 8 the most of it):
#   tests/train/same_text.sh compare REV DIR   REV's tree (git archive) built in DIR/base,
#                                              the models in DIR/models (once), then both
#                                              runs and diff -r; exit 1 on any difference
set -eu
PY=/usr/bin/python3
case $1 in
compare)
    REV=$2 D=$3
    B=${BUILD:-build}
    rm -rf "$D/base" "$D/old" "$D/new"
    mkdir -p "$D/base"
    git archive "$REV" | tar -x -C "$D/base"
    cp tests/train/step_text.c "$D/base/tests/train/" # the same printer for both
    (cd "$D/base" && make -s build/compiler/libtpuc.a build/cmodel/libtpucmodel.a >/dev/null &&
        ${CC:-cc} -std=c11 -O2 -ffp-contract=off -D_POSIX_C_SOURCE=200809L -Icmodel/include \
            -Icompiler/include tests/train/step_text.c build/compiler/libtpuc.a \
            build/cmodel/libtpucmodel.a -lprotobuf-c -lm -o build/step_text)
    [ -e "$D/models/resnet18.onnx" ] || sh "$0" models "$D/models"
    sh "$0" run "$D/base/build/step_text" "$D/models" "$D/old"
    sh "$0" run "$B/tests/step_text" "$D/models" "$D/new"
    if diff -r "$D/old" "$D/new" >"$D/diff.txt"; then
        echo "same_text.sh: the training pass's output is the same bytes as $REV's"
        exit 0
    fi
    echo "same_text.sh: differs from $REV's: $(grep -c '^diff\|^Only' "$D/diff.txt") outputs ($D/diff.txt)"
    exit 1 ;;
models)
    M=$2
    mkdir -p "$M"
    $PY tests/train/mk.py "$M" >"$M/mk.log" 2>&1
    $PY models/nets.py cnn "$M/tcnn.onnx"
    $PY models/nets.py mlp "$M/tmlp.onnx"
    mkdir -p "$M/textmodel"
    $PY models/text.py "$M/textmodel" >"$M/textmodel.log" 2>&1
    mv "$M/textmodel/text.onnx" "$M/textmodel.onnx"
    $PY tests/zoo/zoo.py "$M" 64 1 --export-only resnet18 >"$M/zoo.log" 2>&1
    exit 0 ;;
run) ;;
*) echo "usage: same_text.sh models DIR | run STEP_TEXT DIR OUT | compare REV DIR" >&2; exit 2 ;;
esac
S=$2 M=$3 O=$4
mkdir -p "$O"
n=0
one() { # name model opts...  (each with the loop pass and without)
    name=$1 model=$2
    shift 2
    for lp in loops straight; do
        f="$O/$name.$lp"
        if [ $lp = straight ]; then set -- "$@" --no-loops; fi
        if [ "${BIG:-0}" = 1 ]; then
            "$S" "$M/$model" "$@" >"$f.tmp"
            { sha256sum <"$f.tmp"; wc -c <"$f.tmp"; } >"$f"
            rm -f "$f.tmp"
        else
            "$S" "$M/$model" "$@" >"$f"
        fi
        n=$((n + 1))
    done
}
I="--imem-insns 32768"
for N in 8 16 128; do
    for C in 1 2; do
        B=$((8 * C))
        one "tmlp_n${N}_c${C}_sgd" tmlp.onnx --mxu $N --cores $C --batch $B --optimizer sgd $I
        one "tmlp_n${N}_c${C}_mom" tmlp.onnx --mxu $N --cores $C --batch $B --optimizer sgd --momentum 0.9 $I
        one "tmlp_n${N}_c${C}_adam" tmlp.onnx --mxu $N --cores $C --batch $B --optimizer adam $I --save-grads
        one "tmlp_n${N}_c${C}_micro" tmlp.onnx --mxu $N --cores $C --batch $B --micro-batch 2 --optimizer adam $I
        one "tmlp_n${N}_c${C}_micro_mom" tmlp.onnx --mxu $N --cores $C --batch $B --micro-batch 4 --optimizer sgd --momentum 0.9 $I
        one "tmlp_n${N}_c${C}_eval" tmlp.onnx --mxu $N --cores $C --batch $B --optimizer adam --eval-only $I
        one "tcnn_n${N}_c${C}" tcnn.onnx --mxu $N --cores $C --batch $B --optimizer adam $I
        one "tcnn_n${N}_c${C}_sgd" tcnn.onnx --mxu $N --cores $C --batch $B --optimizer sgd $I --save-grads
        one "tcnn_n${N}_c${C}_micro" tcnn.onnx --mxu $N --cores $C --batch $B --micro-batch 2 --optimizer sgd --momentum 0.9 $I
        one "tcnn_n${N}_c${C}_auto" tcnn.onnx --mxu $N --cores $C --batch $((32 * C)) --optimizer adam
        one "textm_n${N}_c${C}" textmodel.onnx --mxu $N --cores $C --batch $B --optimizer adam $I
        one "textm_n${N}_c${C}_micro" textmodel.onnx --mxu $N --cores $C --batch $B --micro-batch 2 --optimizer sgd $I
        for m in mlp cnn cnn2 cnn3 conv2 cc text cs cs2 res bag wide tiles; do
            one "${m}_n${N}_c${C}" $m.onnx --mxu $N --cores $C --batch $B --optimizer sgd --momentum 0.9 $I
            one "${m}_n${N}_c${C}_adam_micro" $m.onnx --mxu $N --cores $C --batch $B --micro-batch 2 --optimizer adam $I
        done
        one "deep_n${N}_c${C}" deep.onnx --mxu $N --cores $C --batch $B --optimizer sgd --logits $I
        BIG=$([ $N -lt 128 ] && echo 1 || echo 0) one "resnet18_n${N}_c${C}" resnet18.onnx --logits --mxu $N --cores $C --batch $C --optimizer sgd $I
    done
done
# small memories: chunked dW, groups of output tiles, chosen micro-steps
one wide_n4_acc8 wide.onnx --mxu 4 --cores 2 --batch 4 --optimizer adam --acc-kib 8 $I
one tiles_n4_acc1 tiles.onnx --mxu 4 --cores 2 --batch 4 --optimizer adam --acc-kib 1 $I
one res_n4_acc8 res.onnx --mxu 4 --cores 1 --batch 6 --optimizer adam --acc-kib 8 $I
one mlp_n8_ub1 mlp.onnx --mxu 8 --cores 2 --batch 16 --ub-kib 1 --optimizer sgd $I
one cnn2_n8_torus cnn2.onnx --mxu 8 --cores 4 --topology torus --batch 12 --micro-batch 1 --optimizer adam --imem-insns 8192
echo "same_text.sh: $n outputs in $O"
