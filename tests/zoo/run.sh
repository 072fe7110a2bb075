#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-zoo (make test-full): torchvision models users bring (docs/compiler.md "Operators"),
# at 64x64 with random weights, through tpu-compile and tpu-infer on the C model:
#   - on 1 and on 2 cores the same bits (the batch split does not change a result);
#   - against PyTorch fp32: the largest difference at most 2x that of PyTorch's own bf16 run
#     of the same network (the error of bf16 arithmetic through the network's depth, measured
#     rather than assumed), plus 1e-3; and the same class wherever PyTorch fp32's top-2
#     margin exceeds twice our largest difference.
# usage: tests/zoo/run.sh WORKDIR [MODEL...]
set -u
W=$1; shift
MODELS=${*:-"resnet18 mobilenet_v2 squeezenet1_1 efficientnet_b0"}
B=${BUILD:-build}/tools
PY=/usr/bin/python3
fails=0
mkdir -p "$W"
$PY tests/zoo/zoo.py "$W" 64 2 $MODELS >"$W/export.log" 2>&1 || { tail -n 20 "$W/export.log"; exit 1; }
for m in $MODELS; do
    for c in 1 2; do
        d="$W/${m}_C$c"
        if ! "$B/tpu-compile" "$W/$m.onnx" --mxu 64 --cores $c --batch 2 --imem-insns 32768 -o "$d" >"$d.log" 2>&1 ||
           ! "$B/tpu-infer" "$d" --input "$W/${m}_x.npy" --output "$d.npy" 2>>"$d.log"; then
            echo "FAIL: $m C=$c: $(tail -n 1 "$d.log")"; fails=$((fails + 1)); continue
        fi
    done
    cmp -s "$W/${m}_C1.npy" "$W/${m}_C2.npy" && echo "ok: $m: the same bits on 1 and 2 cores" ||
        { echo "FAIL: $m: 1 and 2 cores differ"; fails=$((fails + 1)); }
    $PY - "$W/${m}_C1.npy" "$W/${m}_fp32.npy" "$W/${m}_bf16.npy" "$m" <<'PY' || fails=$((fails + 1))
import sys, numpy as np
o, f, b = (np.load(p).astype(np.float64) for p in sys.argv[1:4])
d, db = np.abs(o - f).max(), np.abs(b - f).max()
s = np.sort(f, axis=1)
clear = (s[:, -1] - s[:, -2]) > 2 * d
agree = (o.argmax(1) == f.argmax(1))[clear].all()
ok = d <= 2 * db + 1e-3 and agree
print("%s: %s: max |ours - fp32| %.4g, PyTorch bf16 %.4g (limit %.4g), outputs up to %.3g, classes agree on %d clear rows: %s"
      % ("ok" if ok else "FAIL", sys.argv[4], d, db, 2 * db + 1e-3, np.abs(f).max(), clear.sum(), agree))
sys.exit(0 if ok else 1)
PY
done
echo "test-zoo: $fails failure(s)"
[ $fails -eq 0 ]
