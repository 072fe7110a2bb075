#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-train (docs/training.md "Tests"): tpu-train on small models at N = 4 and 8, C = 1, 2
# and 4 (ring and torus).
#   1. The first step's all-reduced gradients against PyTorch fp32 (the derived bound) and
#      against the contract's bf16 emulation (tight), and the weights after the step against
#      torch.optim's SGD, SGD with momentum and Adam. The checks must fail for a gradient of
#      another batch and for a negated one.
#   2. A learnable task (5 Gaussian blobs): the loss falls, validation accuracy >= 90 %; the
#      exported ONNX holds the trained weights, and PyTorch and ONNX Runtime (when installed)
#      evaluate it to our accuracy.
#   3. Bad input: one line, exit 2, no CSV or ONNX written.
# tpu-train itself checks after every step that every core's weights and optimizer state are
# the same bytes (exit 1 otherwise).
# usage: tests/train/run.sh WORKDIR
set -u
W=$1
B=${BUILD:-build}/tools
PY=/usr/bin/python3
fails=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }
rm -rf "$W"; mkdir -p "$W"
$PY tests/train/mk.py "$W" >"$W/mk.log" 2>&1 || { cat "$W/mk.log"; exit 1; }
T="$B/tpu-train"

# ---- 1. gradients and one optimizer step ----
step() { # name model opts...
    name=$1; model=$2; shift 2
    rm -rf "$W/g_$name"
    if ! "$T" "$W/$model" --x-train "$W/x.npy" --y-train "$W/y.npy" --epochs 1 --steps-per-epoch 1 \
        --grads-dir "$W/g_$name" "$@" >"$W/run_$name.log" 2>&1; then
        bad "$name: tpu-train failed: $(tail -1 "$W/run_$name.log")"; return
    fi
}
check() { # name model batch refopts...
    name=$1; model=$2; batch=$3; shift 3
    if $PY tests/train/ref.py "$W/$model" "$W/x.npy" "$W/y.npy" --batch "$batch" --grads "$W/g_$name" "$@" \
        >"$W/ref_$name.log" 2>&1; then
        ok "$name: $(grep -c 'bound' "$W/ref_$name.log") checks within their bounds ($(grep '^loss' "$W/ref_$name.log"))"
    else
        bad "$name: $(grep -E 'FAIL|worst' "$W/ref_$name.log" | tr '\n' ' ')"
    fi
}
step sgd_n8_c2 mlp.onnx --mxu 8 --cores 2 --batch 16 --optimizer sgd --lr 0.1
check sgd_n8_c2 mlp.onnx 16 --opt sgd --lr 0.1
step mom_n8_c1 mlp.onnx --mxu 8 --cores 1 --batch 12 --optimizer sgd --lr 0.05 --momentum 0.9
check mom_n8_c1 mlp.onnx 12 --opt sgd --lr 0.05 --momentum 0.9
step adam_n4_torus mlp.onnx --mxu 4 --cores 4 --topology torus --batch 24 --optimizer adam
check adam_n4_torus mlp.onnx 24 --opt adam --lr 0.001
# micro-steps (gradient accumulation): the step's gradient summed over 2 and 3 runs
step sgd_n8_c2_micro mlp.onnx --mxu 8 --cores 2 --batch 16 --micro-batch 4 --optimizer sgd --lr 0.1
check sgd_n8_c2_micro mlp.onnx 16 --opt sgd --lr 0.1
step adam_n4_torus_micro mlp.onnx --mxu 4 --cores 4 --topology torus --batch 24 --micro-batch 2 --optimizer adam
check adam_n4_torus_micro mlp.onnx 24 --opt adam --lr 0.001
# micro-steps chosen by tpu-train: 8 rows per core do not fit a 1 KiB UB at once; it picks
# 4 micro-steps of 2 rows, says so in one line, and trains exactly as --micro-batch 2 does
step sgd_auto_micro mlp.onnx --mxu 8 --cores 2 --batch 16 --ub-kib 1 --optimizer sgd --lr 0.1
step sgd_given_micro mlp.onnx --mxu 8 --cores 2 --batch 16 --ub-kib 1 --micro-batch 2 --optimizer sgd --lr 0.1
check sgd_auto_micro mlp.onnx 16 --opt sgd --lr 0.1
d=""
for f in "$W/g_sgd_given_micro"/*.npy; do cmp -s "$f" "$W/g_sgd_auto_micro/$(basename "$f")" || d="$d $(basename "$f")"; done
if [ -z "$d" ] && [ -e "$W/g_sgd_auto_micro/grad0_w.npy" ] &&
    [ "$(grep -c 'do not fit UB, ACC or IMEM' "$W/run_sgd_auto_micro.log")" = 1 ] &&
    grep -q "^tpu-train: the step's 8 rows per core do not fit UB, ACC or IMEM at once; 4 micro-steps of 2 rows (--micro-batch 2)$" "$W/run_sgd_auto_micro.log"; then
    ok "micro-steps chosen (4 of 2 rows at --ub-kib 1), said in one line, the same gradients and weights as --micro-batch 2"
else
    bad "chosen micro-steps: differ:$d; $(grep 'micro' "$W/run_sgd_auto_micro.log" | head -2)"
fi
$PY - "$W" <<'PYEOF' || bad "deep.onnx: x.npy reshaped for a model without Flatten"
import sys, numpy as np
w = sys.argv[1]
np.save(w + "/x2.npy", np.load(w + "/x.npy").reshape(96, 20))
PYEOF
# labels 0..9 on a 5-class model are refused: use labels mod 5
$PY - "$W" <<'PYEOF'
import sys, numpy as np
w = sys.argv[1]
np.save(w + "/y5.npy", np.load(w + "/y.npy") % 5)
PYEOF
"$T" "$W/deep.onnx" --x-train "$W/x2.npy" --y-train "$W/y5.npy" --epochs 1 --steps-per-epoch 1 --grads-dir "$W/g_deep" \
    --mxu 4 --cores 4 --topology ring --batch 32 --optimizer sgd --lr 0.2 --logits >"$W/run_deep.log" 2>&1 \
    || bad "deep: tpu-train failed: $(tail -1 "$W/run_deep.log")"
if $PY tests/train/ref.py "$W/deep.onnx" "$W/x2.npy" "$W/y5.npy" --batch 32 --grads "$W/g_deep" --logits --opt sgd --lr 0.2 >"$W/ref_deep.log" 2>&1; then
    ok "deep (3 layers, no bias, logits, N = 4, 4-core ring): $(grep -c bound "$W/ref_deep.log") checks within their bounds"
else
    bad "deep: $(grep -E 'FAIL|worst' "$W/ref_deep.log" | tr '\n' ' ')"
fi
# the CNNs: the conv's routed gradient and the dense layer after it
cnn() { # name model x opts...
    name=$1; model=$2; xx=$3; shift 3
    rm -rf "$W/g_$name"
    if "$T" "$W/$model" --x-train "$W/$xx" --y-train "$W/y.npy" --epochs 1 --steps-per-epoch 1 \
        --grads-dir "$W/g_$name" "$@" >"$W/run_$name.log" 2>&1; then
        if $PY tests/train/ref.py "$W/$model" "$W/$xx" "$W/y.npy" --batch "$BATCH" --grads "$W/g_$name" --opt "$OPT" --lr "$LR" ${GRAPH:+--graph} >"$W/ref_$name.log" 2>&1; then
            ok "$name: $(grep -c 'bound' "$W/ref_$name.log") checks within their bounds ($(grep '^loss' "$W/ref_$name.log"))"
        else
            bad "$name: $(grep -E 'FAIL|worst' "$W/ref_$name.log" | tr '\n' ' ')"
        fi
    else
        bad "$name: tpu-train failed: $(tail -1 "$W/run_$name.log")"
    fi
}
BATCH=8 OPT=sgd LR=0.1 cnn cnn_n8_c2 cnn.onnx xc.npy --mxu 8 --cores 2 --batch 8 --optimizer sgd --lr 0.1 --imem-insns 4096
BATCH=12 OPT=adam LR=0.001 cnn cnn2_n8_torus cnn2.onnx xc2.npy --mxu 8 --cores 4 --topology torus --batch 12 --optimizer adam --imem-insns 8192
BATCH=8 OPT=sgd LR=0.1 cnn cnn3_n4_c2 cnn3.onnx xc3.npy --mxu 4 --cores 2 --batch 8 --optimizer sgd --lr 0.1 --imem-insns 8192
BATCH=6 OPT=sgd LR=0.05 cnn cnn2_n8_c1 cnn2.onnx xc2.npy --mxu 8 --cores 1 --batch 6 --optimizer sgd --lr 0.05 --imem-insns 8192
# Conv stages after the first (their input gradient) and the embedding (its scatter-add)
BATCH=8 OPT=sgd LR=0.1 cnn conv2_n8_c2 conv2.onnx xc.npy --mxu 8 --cores 2 --batch 8 --optimizer sgd --lr 0.1 --imem-insns 8192
BATCH=8 OPT=adam LR=0.001 cnn cc_n8_torus cc.onnx xcc.npy --mxu 8 --cores 4 --topology torus --batch 8 --optimizer adam --imem-insns 32768
BATCH=8 OPT=sgd LR=0.1 cnn text_n8_c2 text.onnx xt.npy --mxu 8 --cores 2 --batch 8 --optimizer sgd --lr 0.1 --imem-insns 32768
BATCH=8 OPT=sgd LR=0.1 cnn cs_n8_c2 cs.onnx xcc.npy --mxu 8 --cores 2 --batch 8 --optimizer sgd --lr 0.1 --momentum 0.9 --imem-insns 32768
BATCH=8 OPT=sgd LR=0.1 cnn cs2_n4_ring cs2.onnx xcc.npy --mxu 4 --cores 4 --batch 8 --optimizer sgd --lr 0.1 --imem-insns 32768
BATCH=8 OPT=sgd LR=0.1 cnn bag_n8_c2 bag.onnx xt.npy --mxu 8 --cores 2 --batch 8 --optimizer sgd --lr 0.1 --imem-insns 32768
BATCH=6 OPT=adam LR=0.001 cnn text_n4_c1 text.onnx xt.npy --mxu 4 --cores 1 --batch 6 --optimizer adam --imem-insns 32768
# ResNet's shape: a padded overlapping MaxPool, residual Adds (identity and a strided 1x1
# conv), a stage read by two, the GlobalAveragePool (trainref.GraphNet, its bf16 emulation)
GRAPH=1 BATCH=8 OPT=sgd LR=0.1 cnn res_n8_c2 res.onnx xcc.npy --mxu 8 --cores 2 --batch 8 --optimizer sgd --lr 0.1 --imem-insns 32768
GRAPH=1 BATCH=6 OPT=adam LR=0.001 cnn res_n4_c1 res.onnx xcc.npy --mxu 4 --cores 1 --batch 6 --optimizer adam --acc-kib 8 --imem-insns 32768
GRAPH=1 BATCH=8 OPT=sgd LR=0.1 cnn res_n8_micro res.onnx xcc.npy --mxu 8 --cores 2 --batch 8 --micro-batch 2 --optimizer sgd --lr 0.1 --imem-insns 32768
# micro-steps through Conv stages (dW and dX) and the embedding
BATCH=12 OPT=adam LR=0.001 cnn cnn2_torus_micro cnn2.onnx xc2.npy --mxu 8 --cores 4 --topology torus --batch 12 --micro-batch 1 --optimizer adam --imem-insns 8192
BATCH=8 OPT=sgd LR=0.1 cnn text_n8_c2_micro text.onnx xt.npy --mxu 8 --cores 2 --batch 8 --micro-batch 2 --optimizer sgd --lr 0.1 --momentum 0.9 --imem-insns 32768

# the exported text model: the embedding table and both Conv1d's weights where ONNX keeps them
if "$T" "$W/text.onnx" --x-train "$W/xt.npy" --y-train "$W/y.npy" --mxu 8 --cores 2 --batch 8 --epochs 1 \
    --steps-per-epoch 1 --imem-insns 32768 --grads-dir "$W/g_text_exp" --save-onnx "$W/text_trained.onnx" \
    >"$W/text_exp.log" 2>&1 && $PY - "$W" <<'PYEOF' >"$W/text_exp.chk" 2>&1
import sys, numpy as np
sys.path.insert(0, "models")
import trainref
w = sys.argv[1]
net = trainref.Net(w + "/text_trained.onnx")
init = trainref.Net(w + "/text.onnx")
n = 0
for l, ((a, b), (a0, _)) in enumerate(zip(net.plist, init.plist)):
    ours = np.load(f"{w}/g_text_exp/w{l}.npy").reshape(a.shape)
    assert np.array_equal(a.detach().numpy(), ours), f"layer {l}: the exported weights differ"
    assert not np.array_equal(a.detach().numpy(), a0.detach().numpy()), f"layer {l}: not updated"
    n += 1
print(n)
PYEOF
then ok "the text model's exported ONNX holds the trained table and weights of all $(cat "$W/text_exp.chk") layers"
else bad "the text model's export: $(tail -2 "$W/text_exp.chk" "$W/text_exp.log" 2>/dev/null | tr '\n' ' ')"; fi

# a conv's dW in chunks of rows (the ACC too small for it whole): the same bytes as whole
rm -rf "$W/gw_64" "$W/gw_8"
for acc in 64 8; do
    "$T" "$W/wide.onnx" --x-train "$W/xw.npy" --y-train "$W/y.npy" --epochs 1 --steps-per-epoch 1 --batch 4 --mxu 4 \
        --cores 2 --optimizer adam --grads-dir "$W/gw_$acc" --imem-insns 32768 --acc-kib $acc >"$W/wide_$acc.log" 2>&1
done
d=""
for f in "$W"/gw_64/*.npy; do cmp -s "$f" "$W/gw_8/$(basename "$f")" || d="$d $(basename "$f")"; done
n64=$(grep -o '[0-9]* instructions' "$W/wide_64.log"); n8=$(grep -o '[0-9]* instructions' "$W/wide_8.log")
if [ -z "$d" ] && [ -n "$n8" ] && [ "$n8" != "$n64" ] && [ -e "$W/gw_8/grad0_w.npy" ]; then
    ok "a conv's dW in row chunks (--acc-kib 8: $n8, whole: $n64): every gradient and weight the same bytes"
else
    bad "chunked conv dW: differ:$d ($n64 / $n8) $(tail -1 "$W/wide_8.log")"
fi
if $PY tests/train/ref.py "$W/wide.onnx" "$W/xw.npy" "$W/y.npy" --batch 4 --grads "$W/gw_8" --opt adam --lr 0.001 >"$W/ref_wide.log" 2>&1; then
    ok "wide (chunked dW): $(grep -c bound "$W/ref_wide.log") checks within their bounds"
else
    bad "wide: $(grep -E 'FAIL|worst' "$W/ref_wide.log" | tr '\n' ' ')"
fi
# ... and in groups of output tiles (not even N + 1 rows of all 8 tiles fit: Adam at 3 KiB,
# 2 tiles a chunk; SGD with momentum over micro-steps at 2 KiB): the same bytes as whole
for cfg in "adam 3 2" "sgd 2 1 0.9"; do
    set -- $cfg
    rm -rf "$W/gt_$1_32" "$W/gt_$1_$2"
    for acc in 32 $2; do
        "$T" "$W/tiles.onnx" --x-train "$W/xs.npy" --y-train "$W/y.npy" --epochs 1 --steps-per-epoch 2 --batch 4 --mxu 4 \
            --cores 2 --optimizer $1 ${4:+--momentum $4} --micro-batch $3 --grads-dir "$W/gt_$1_$acc" \
            --imem-insns 32768 --acc-kib $acc >"$W/tiles_$1_$acc.log" 2>&1
    done
    d=""
    for f in "$W/gt_$1_32"/*.npy; do cmp -s "$f" "$W/gt_$1_$2/$(basename "$f")" || d="$d $(basename "$f")"; done
    nw=$(grep -o '[0-9]* instructions' "$W/tiles_$1_32.log"); ng=$(grep -o '[0-9]* instructions' "$W/tiles_$1_$2.log")
    if [ -z "$d" ] && [ -n "$ng" ] && [ "$ng" != "$nw" ] && [ -e "$W/gt_$1_$2/grad0_w.npy" ]; then
        ok "a conv's dW in groups of output tiles ($1, --acc-kib $2: $ng, whole: $nw): two steps, every gradient and weight the same bytes"
    else
        bad "tile-grouped conv dW ($1): differ:$d ($nw / $ng) $(tail -1 "$W/tiles_$1_$2.log")"
    fi
done
BATCH=4 OPT=adam LR=0.001 cnn wide_micro wide.onnx xw.npy --mxu 4 --cores 2 --batch 4 --micro-batch 1 --optimizer adam --imem-insns 32768 --acc-kib 8

# tpu-compile --train --report-only predicts the step: the same cycles as tpu-train's step
for cfg in "text.onnx xt.npy 8 2 ring 4" "cc.onnx xcc.npy 8 4 torus 8" "mlp.onnx x.npy 4 2 ring 8" \
           "cnn2.onnx xc2.npy 8 2 ring 8 2"; do
    set -- $cfg
    pred=$(${BUILD:-build}/tools/tpu-compile "$W/$1" --train --mxu $3 --cores $4 --topology $5 --batch $6 ${7:+--micro-batch $7} \
        --imem-insns 32768 --report-only --json "$W/pred_$1.json" 2>"$W/pred_$1.err" | grep -o '^total: [0-9]*' | cut -d' ' -f2)
    ran=$("$T" "$W/$1" --x-train "$W/$2" --y-train "$W/y.npy" --mxu $3 --cores $4 --topology $5 --batch $6 ${7:+--micro-batch $7} \
        --steps-per-epoch 1 --imem-insns 32768 2>&1 | grep -o '[0-9]* cycles/step' | cut -d' ' -f1)
    if [ -n "$pred" ] && [ "$pred" = "$ran" ] && $PY -c "
import json, sys
r = json.load(open('$W/pred_$1.json'))
s = sum(l['forward_cycles'] + l['backward_cycles'] + l['allreduce_update_cycles'] for l in r['layers']) + r['other_cycles']
assert r['cycles_per_step'] == $pred and s == sum(r['phases'].values()) and s <= $pred, (s, r['phases'])"; then
        ok "tpu-compile --train predicts $1 (N = $3, C = $4 $5): $pred cycles per step = tpu-train's"
    else
        bad "tpu-compile --train on $1: predicted '$pred', tpu-train ran '$ran' cycles per step $(cat "$W/pred_$1.err")"
    fi
done

# a step longer than IMEM is predicted in segments (tpu-compile --report-only of a large model):
# forced here with short segments, the estimate within 1 % of the whole step's exact cycles
# (straight-line programs: a looped one, docs/compiler.md "Loops", is always run whole)
exact=$(${BUILD:-build}/tools/tpu-compile "$W/cc.onnx" --train --mxu 8 --cores 4 --topology torus --batch 8 \
    --imem-insns 32768 --no-loops --report-only 2>/dev/null | grep -o '^total: [0-9]*' | cut -d' ' -f2)
TPUC_REPORT_SEGMENT=300 ${BUILD:-build}/tools/tpu-compile "$W/cc.onnx" --train --mxu 8 --cores 4 --topology torus \
    --batch 8 --imem-insns 32768 --no-loops --report-only >"$W/pred_seg.log" 2>&1
segd=$(grep -o '^total: [0-9]*' "$W/pred_seg.log" | cut -d' ' -f2)
if [ -n "$exact" ] && [ -n "$segd" ] && grep -q "in [0-9]* segments" "$W/pred_seg.log" &&
   $PY -c "import sys; e, s = $exact, $segd; sys.exit(0 if s >= e and s - e <= 0.01 * e else 1)"; then
    ok "a step predicted in segments of 300 instructions: $segd cycles, the whole step $exact ($(grep -o 'in [0-9]* segments' "$W/pred_seg.log"))"
else
    bad "segmented prediction: '$segd' against '$exact': $(tail -1 "$W/pred_seg.log")"
fi

# the loop pass (docs/compiler.md "Loops"): the looped step program gives the gradients and
# weights of the straight-line one bit for bit (the same micro-steps: a large IMEM for both)
for e in 0 1; do
    rm -rf "$W/g_loops$e"
    TPUC_NO_LOOPS=$e "$T" "$W/cnn.onnx" --x-train "$W/xc.npy" --y-train "$W/y.npy" --epochs 1 --steps-per-epoch 2 \
        --mxu 8 --cores 2 --batch 16 --imem-insns 32768 --grads-dir "$W/g_loops$e" >"$W/run_loops$e.log" 2>&1 ||
        bad "loops: tpu-train (TPUC_NO_LOOPS=$e) failed: $(tail -1 "$W/run_loops$e.log")"
done
d=""
for f in "$W/g_loops1"/*.npy; do cmp -s "$f" "$W/g_loops0/$(basename "$f")" || d="$d $(basename "$f")"; done
if [ -z "$d" ] && [ -e "$W/g_loops0/grad0_w.npy" ]; then
    ok "loops: the CNN's step looped ($(grep -o '[0-9]* instructions per step' "$W/run_loops0.log")) and straight-line ($(grep -o '[0-9]* instructions per step' "$W/run_loops1.log")): the same gradients and weights"
else
    bad "loops: gradients differ from the straight-line step:$d"
fi

for m in batch sign; do
    if $PY tests/train/ref.py "$W/mlp.onnx" "$W/x.npy" "$W/y.npy" --batch 16 --grads "$W/g_sgd_n8_c2" --mutate $m >/dev/null 2>&1; then
        bad "the gradient check passes a mutated gradient ($m)"
    else
        ok "the gradient check fails a mutated gradient ($m)"
    fi
    if $PY tests/train/ref.py "$W/res.onnx" "$W/xcc.npy" "$W/y.npy" --batch 8 --grads "$W/g_res_n8_c2" --graph --mutate $m >/dev/null 2>&1; then
        bad "the gradient check passes a mutated gradient of the residual model ($m)"
    else
        ok "the gradient check fails a mutated gradient of the residual model ($m)"
    fi
    if $PY tests/train/ref.py "$W/text.onnx" "$W/xt.npy" "$W/y.npy" --batch 8 --grads "$W/g_text_n8_c2" --mutate $m >/dev/null 2>&1; then
        bad "the gradient check passes a mutated gradient of the text model ($m)"
    else
        ok "the gradient check fails a mutated gradient of the text model ($m)"
    fi
done

# micro-steps chosen by predicted cycles: the tutorial's CNN at N = 64 (8 rows per core) fits
# one micro-step, but its dW then shares ACC with Adam's state and takes more passes; the
# choice names both predictions, and tpu-compile with each --micro-batch must agree
$PY models/nets.py cnn "$W/tcnn.onnx" >/dev/null 2>&1
TC="$B/tpu-compile $W/tcnn.onnx --train --mxu 64 --cores 2 --batch 16 --report-only"
line=$($TC 2>&1 | grep 'micro-step' | head -n 1)
c8=$($TC --micro-batch 8 2>/dev/null | sed -n 's/^total: \([0-9]*\) cycles.*/\1/p')
c4=$($TC --micro-batch 4 2>/dev/null | sed -n 's/^total: \([0-9]*\) cycles.*/\1/p')
if [ -n "$c8" ] && [ -n "$c4" ] && [ "$c4" -lt "$c8" ] &&
    [ "$line" = "tpu-compile: the step's 8 rows per core fit in 1 micro-step(s), but 2 micro-steps of 4 rows run faster (predicted $c4 cycles, not $c8; --micro-batch 4)" ]; then
    ok "micro-steps chosen by predicted cycles (the tutorial CNN at N = 64: 2 of 4 rows, $c4 cycles, not 1: $c8), said in one line"
else
    bad "micro-steps by predicted cycles: '$line' (--micro-batch 4: $c4, 8: $c8 cycles)"
fi

# predicting, the choice keeps to IMEM as tpu-train's does: the same CNN at N = 32 fits UB and
# ACC in 2 micro-steps of 4 rows, a step of more than 1,024 instructions; at the default IMEM
# the tools take 4 of 2 rows, which it holds, and with --imem-insns 4096 the 2 of 4
TC="$B/tpu-compile $W/tcnn.onnx --train --mxu 32 --cores 2 --batch 16 --report-only"
n1=$($TC 2>&1 | sed -n 's/.*training step of \([0-9]*\) instructions.*/\1/p')
l1=$($TC 2>&1 | grep -c '4 micro-steps of 2 rows')
n4=$($TC --imem-insns 4096 2>&1 | sed -n 's/.*training step of \([0-9]*\) instructions.*/\1/p')
l4=$($TC --imem-insns 4096 2>&1 | grep -c '2 micro-steps of 4 rows')
# and when no count holds (N = 16, 300 instructions), the fewest that fit UB and ACC, said so
l3=$("$B/tpu-compile" "$W/tcnn.onnx" --train --mxu 16 --cores 2 --batch 16 --report-only --imem-insns 300 2>&1 |
    grep -c "^tpu-compile: the step's 8 rows per core need more than IMEM's 300 instructions at every micro-step count tried; predicted at 4 micro-step(s) of 2 rows (--micro-batch 2), which only a larger --imem-insns holds$")
if [ -n "$n1" ] && [ -n "$n4" ] && [ "$n1" -le 1024 ] && [ "$n4" -gt 1024 ] && [ "$l1" = 1 ] && [ "$l4" = 1 ] && [ "$l3" = 1 ]; then
    ok "predicting, the micro-steps keep to IMEM (N = 32: 4 of 2 rows, $n1 instructions; 2 of 4 rows, $n4, at --imem-insns 4096; none at 300, said so)"
else
    bad "micro-steps and IMEM: $n1 instructions ($l1), at --imem-insns 4096 $n4 ($l4), none holds: $l3"
fi

# ---- 2. it learns; the exported model ----
if "$T" "$W/deep.onnx" --x-train "$W/bx.npy" --y-train "$W/by.npy" --x-val "$W/vx.npy" --y-val "$W/vy.npy" --logits \
    --mxu 8 --cores 2 --batch 32 --epochs 3 --optimizer adam --lr 0.01 --csv "$W/curve.csv" --save-onnx "$W/trained.onnx" \
    >"$W/learn.log" 2>&1; then
    if $PY - "$W" <<'PYEOF'
import csv, sys, os
import numpy as np
w = sys.argv[1]
sys.path.insert(0, "models")
import trainref, torch
rows = list(csv.DictReader(open(w + "/curve.csv")))
l0, l1, va = float(rows[0]["loss"]), float(rows[-1]["loss"]), float(rows[-1]["val_accuracy"])
assert len(rows) == 3, rows
assert l1 < l0 and va >= 0.9, f"loss {l0} -> {l1}, val accuracy {va}"
net = trainref.Net(w + "/trained.onnx", True)
x, y = np.load(w + "/vx.npy"), np.load(w + "/vy.npy")
acc = float((net.logits(torch.tensor(x)).argmax(1).numpy() == y).mean())
assert abs(acc - va) <= 0.02, f"PyTorch on the exported model: {acc}, ours {va}"
init = trainref.Net(w + "/deep.onnx", True)
assert any(not np.array_equal(a[0].detach().numpy(), b[0].detach().numpy()) for a, b in zip(net.layers, init.layers))
print(f"loss {l0:.4f} -> {l1:.4f}, val accuracy {va:.4f}, PyTorch on the exported ONNX {acc:.4f}")
PYEOF
    then ok "learns: $(tail -1 "$W/learn.log" | cut -c1-120)"
    else bad "learning or the exported model: see $W/learn.log"; fi
else
    bad "the learning run failed: $(tail -1 "$W/learn.log")"
fi
ORT_DIR=${BUILD:-build}/node
if [ -d "$ORT_DIR/node_modules/onnxruntime-node" ] && command -v node >/dev/null; then
    $PY -c "import numpy as np; np.save('$W/vx4.npy', np.load('$W/vx.npy'))"
    if NODE_PATH="$ORT_DIR/node_modules" node models/ort_run.js "$W/trained.onnx" "$W/vx4.npy" "$W/ort.npy" >/dev/null 2>&1 &&
        $PY -c "
import numpy as np, sys
p = np.load('$W/ort.npy'); y = np.load('$W/vy.npy')
a = float((p.argmax(1) == y).mean()); assert a >= 0.9, a; print(a)" >"$W/ort.log" 2>&1; then
        ok "ONNX Runtime evaluates the exported model: accuracy $(cat "$W/ort.log")"
    else bad "ONNX Runtime on the exported model: $(tail -1 "$W/ort.log" 2>/dev/null)"; fi
else
    echo "skip: ONNX Runtime not installed (make ort-node)"
fi

# ---- 2c. checkpoint and resume: a run stopped twice (--max-steps) and resumed ends with the
# same ONNX bytes and CSV (but the wall times) as the run straight through; a checkpoint of
# another configuration, a truncated and a corrupted one are refused, nothing written ----
CK="$W/ck"; rm -rf "$CK"; mkdir -p "$CK"
CKA="$W/deep.onnx --x-train $W/bx.npy --y-train $W/by.npy --x-val $W/vx.npy --y-val $W/vy.npy --logits --mxu 8 --cores 2 --batch 32 --micro-batch 8 --epochs 3 --steps-per-epoch 4 --optimizer adam --lr 0.01"
# shellcheck disable=SC2086
"$T" $CKA --csv "$CK/a.csv" --save-onnx "$CK/a.onnx" >"$CK/a.log" 2>&1
# shellcheck disable=SC2086
"$T" $CKA --csv "$CK/b.csv" --save-onnx "$CK/b.onnx" --checkpoint "$CK/ck" --max-steps 5 >"$CK/b1.log" 2>&1
s1=$?; [ -e "$CK/b.csv" ] || [ -e "$CK/b.onnx" ] && s1="$s1 (wrote outputs)"
cp "$CK/ck" "$CK/ck_e2s1"
# shellcheck disable=SC2086
"$T" $CKA --csv "$CK/b.csv" --save-onnx "$CK/b.onnx" --checkpoint "$CK/ck" --resume "$CK/ck" --max-steps 3 >"$CK/b2.log" 2>&1
s2=$?
# shellcheck disable=SC2086
"$T" $CKA --csv "$CK/b.csv" --save-onnx "$CK/b.onnx" --checkpoint "$CK/ck" --resume "$CK/ck" >"$CK/b3.log" 2>&1
s3=$?
cut -d, -f1-9 "$CK/a.csv" >"$CK/a.c" 2>/dev/null; cut -d, -f1-9 "$CK/b.csv" >"$CK/b.c" 2>/dev/null
if [ "$s1 $s2 $s3" = "0 0 0" ] && grep -q "stopped after 5 steps" "$CK/b1.log" && grep -q "resuming .* at epoch 2, step 1" "$CK/b2.log" &&
   cmp -s "$CK/a.onnx" "$CK/b.onnx" && cmp -s "$CK/a.c" "$CK/b.c" && [ "$(wc -l <"$CK/b.c")" -eq 4 ]; then
    ok "checkpoint and resume: stopped after 5 and 8 of 12 steps, resumed: the ONNX and the curves identical to the run straight through"
else
    bad "checkpoint and resume: exits $s1 / $s2 / $s3; $(tail -1 "$CK/b3.log")"
fi
# ---- 2d. validation changes nothing in training: the same run with validation after every
# epoch and without (--val-steps 0) exports the same ONNX bytes, with micro-steps and without
# (the forward program validation runs shares the step's host image: it once advanced Adam's
# step counter per validation batch, the tutorial's batch-32 run 1.5 points off PyTorch) ----
VA="$W/deep.onnx --x-train $W/bx.npy --y-train $W/by.npy --x-val $W/vx.npy --y-val $W/vy.npy --logits --mxu 8 --cores 2 --batch 16 --epochs 3 --steps-per-epoch 2 --optimizer adam --lr 0.01"
vres=""
for mb in 8 4; do
    # shellcheck disable=SC2086
    "$T" $VA --micro-batch $mb --save-onnx "$CK/v$mb.onnx" >"$CK/v$mb.log" 2>&1 &&
        "$T" $VA --micro-batch $mb --val-steps 0 --save-onnx "$CK/n$mb.onnx" >"$CK/n$mb.log" 2>&1 &&
        cmp -s "$CK/v$mb.onnx" "$CK/n$mb.onnx" || vres="$vres micro-batch $mb;"
done
if [ -z "$vres" ]; then
    ok "validation after every epoch leaves training unchanged: the same ONNX bytes as without (with and without micro-steps)"
else
    bad "validation changed the trained weights:$vres see $CK/v*.log"
fi
ckbad() { # label expected ckpt extra-args
    label=$1; want=$2; f=$3; shift 3
    rm -f "$CK/x.csv"
    # shellcheck disable=SC2086
    "$T" $CKA --csv "$CK/x.csv" --resume "$f" "$@" >"$CK/x.out" 2>"$CK/x.err"
    rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$CK/x.err")" -eq 1 ] && grep -q "$want" "$CK/x.err" && [ ! -e "$CK/x.csv" ]; then
        ok "refused: $label"
    else
        bad "$label: exit $rc: $(cat "$CK/x.err")"
    fi
}
ckbad "a checkpoint of another batch order (--seed 2)" "written for another model" "$CK/ck_e2s1" --seed 2
head -c 1000 "$CK/ck_e2s1" >"$CK/ck_trunc"
ckbad "a truncated checkpoint" "truncated" "$CK/ck_trunc"
$PY -c "
b = bytearray(open('$CK/ck_e2s1', 'rb').read()); b[200] ^= 1; open('$CK/ck_flip', 'wb').write(b)"
ckbad "a checkpoint with one bit flipped" "checksum mismatch" "$CK/ck_flip"
ckbad "a file that is not a checkpoint" "not a tpu-train checkpoint" "$W/deep.onnx"

# ---- 2b. the RTL: two steps co-simulated on the 2-core ring board (N = 8) and one on the
# N = 4 core (C = 1): every core's trace and host memory identical to the model's ----
if [ "${RTL:-1}" = 1 ]; then
    for cfg in "8 2 sgd mlp.onnx x.npy 16" "4 1 adam mlp.onnx x.npy 16" "8 2 adam cnn.onnx xc.npy 4" \
               "8 2 sgd text.onnx xt.npy 4" "8 2 adam cc.onnx xcc.npy 2 2048" "8 2 sgd cs.onnx xcc.npy 2 2048" \
               "4 1 adam wide.onnx xw.npy 1 8192 8" "8 2 adam bag.onnx xt.npy 4" "8 2 adam cnn2.onnx xc2.npy 4 8192 64 1" \
               "8 2 adam res.onnx xcc.npy 2 8192"; do
        set -- $cfg
        if "$T" "$W/$4" --x-train "$W/$5" --y-train "$W/y.npy" --mxu $1 --cores $2 --batch $6 ${7:+--imem-insns $7} ${8:+--acc-kib $8} ${9:+--micro-batch $9} \
            --steps-per-epoch 2 --optimizer $3 --momentum 0 --rtl 2 --work "$W/rtl_${4%.onnx}_$1_$2" >"$W/rtl_${4%.onnx}_$1_$2.log" 2>&1; then
            ok "RTL $4 N = $1, C = $2, $3: $(grep -c 'on the RTL: every core' "$W/rtl_${4%.onnx}_$1_$2.log") runs identical to the model ($(grep -o 'model: [0-9]* cycles' "$W/rtl_${4%.onnx}_$1_$2.log" | head -1); RTL $(grep -o 'board: C=[^:]*: [0-9]* cycles\|CYCLES=[0-9]*' "$W/rtl_${4%.onnx}_$1_$2.log" | head -1))"
        else
            bad "RTL $4 N = $1, C = $2: $(grep -E 'error|FAIL|differ' "$W/rtl_${4%.onnx}_$1_$2.log" | head -3 | tr '\n' ' ')"
        fi
    done
fi

# ---- 3. bad input ----
badrun() { # label expected-substring args...
    label=$1; want=$2; shift 2
    rm -f "$W/bad.csv" "$W/bad.onnx"
    "$T" "$@" --csv "$W/bad.csv" --save-onnx "$W/bad.onnx" >"$W/bad.out" 2>"$W/bad.err"
    rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$W/bad.err")" -eq 1 ] && grep -q "$want" "$W/bad.err" && [ ! -e "$W/bad.csv" ] && [ ! -e "$W/bad.onnx" ]; then
        ok "refused: $label"
    else
        bad "$label: exit $rc, stderr: $(cat "$W/bad.err")"
    fi
}
badrun "a Conv of strides (1, 2) without a pool" "node '/0/Conv' (Conv): training mode: the conv's strides times the pool's must be the same" "$W/convs2.onnx" --x-train "$W/xc.npy" --y-train "$W/y.npy" --mxu 8 --cores 2 --batch 16
$PY -c "import numpy as np; x = np.load('$W/xt.npy'); x[5, 3] = 30; np.save('$W/xt_bad.npy', x)"
badrun "a token id outside the vocabulary" "training example 5: token id 30, the embedding has ids 0 .. 29" "$W/text.onnx" --x-train "$W/xt_bad.npy" --y-train "$W/y.npy" --mxu 8 --cores 2 --batch 4
badrun "label out of range" "label .* the model has 5 classes" "$W/deep.onnx" --logits --x-train "$W/x2.npy" --y-train "$W/y.npy" --mxu 8 --cores 2 --batch 16
badrun "batch not a multiple of the cores" "must be a multiple of --cores 4" "$W/mlp.onnx" --x-train "$W/x.npy" --y-train "$W/y.npy" --mxu 8 --cores 4 --batch 10
badrun "unknown optimizer" "expected sgd or adam" "$W/mlp.onnx" --x-train "$W/x.npy" --y-train "$W/y.npy" --optimizer rmsprop
badrun "logits model without --logits" "needs a final Softmax" "$W/deep.onnx" --x-train "$W/x2.npy" --y-train "$W/y5.npy" --mxu 8 --cores 2 --batch 16
badrun "labels and examples differ" "labels of shape \\[96\\], expected \\[640\\]" "$W/deep.onnx" --logits --x-train "$W/bx.npy" --y-train "$W/y.npy" --mxu 8 --cores 2 --batch 16
badrun "float labels" "expected '<i8', '<i4' or '|u1'" "$W/mlp.onnx" --x-train "$W/x.npy" --y-train "$W/x.npy" --mxu 8 --cores 2 --batch 16
badrun "no data" "no data" "$W/mlp.onnx"
badrun "BatchNormalization in training" "node '/1/BatchNormalization' (BatchNormalization): not supported in training mode" "$W/cnnbn.onnx" --x-train "$W/xc.npy" --y-train "$W/y.npy" --mxu 8 --cores 2 --batch 16
badrun "a residual Add with a broadcast input" "node '/Add' (Add): training mode: the residual Add's inputs differ in shape" "$W/resbcast.onnx" --logits --x-train "$W/xc.npy" --y-train "$W/y5.npy" --mxu 8 --cores 2 --batch 16
badrun "a padded, overlapping MaxPool after the second Conv" "node '/2/Conv': training mode: a padded or overlapping MaxPool after a Conv that needs its input gradient" "$W/poollate.onnx" --logits --x-train "$W/xc.npy" --y-train "$W/y5.npy" --mxu 8 --cores 2 --batch 16
badrun "Dropout in training" "node 'drop' (Dropout): not supported in training mode" "$W/mlpdrop.onnx" --x-train "$W/x.npy" --y-train "$W/y.npy" --mxu 8 --cores 2 --batch 16
${BUILD:-build}/tools/tpu-compile "$W/mlp.onnx" --train -o "$W/nope" >"$W/bad.out" 2>"$W/bad.err"
if [ $? -eq 2 ] && grep -q "train goes with --report-only" "$W/bad.err" && [ ! -e "$W/nope" ]; then
    ok "refused: tpu-compile --train without --report-only"
else
    bad "tpu-compile --train -o: $(cat "$W/bad.err")"
fi
# an output that cannot be written is refused before any training
"$T" "$W/mlp.onnx" --x-train "$W/x.npy" --y-train "$W/y.npy" --cores 1 --batch 16 --steps-per-epoch 1 \
    --save-onnx /proc/none/x.onnx >"$W/bad.out" 2>"$W/bad.err"
if [ $? -eq 2 ] && [ "$(wc -l <"$W/bad.err")" -eq 1 ] && ! grep -q Epoch "$W/bad.out"; then
    ok "refused before training: an unwritable --save-onnx"
else
    bad "unwritable --save-onnx: $(cat "$W/bad.err")"
fi
if [ $fails -ne 0 ]; then echo "test-train: $fails FAILED"; exit 1; fi
echo "test-train: PASS"
