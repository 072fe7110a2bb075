#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-zoo-rtl (make test-full; issue 18 "On the RTL"): ResNet-18 and MobileNetV2 at 64x64
# (random weights, tests/zoo/zoo.py), one image each, compiled for one core of N = 32 with a
# 32,768-instruction IMEM (at N = 16 their programs need 43,346 and 33,813 instructions, more
# than gen allows) and run on the verilated core by tpu-infer --rtl: every trace record and the
# output identical to the model's, and the RTL's cycles equal to the model's. Measured: ResNet-18
# 2,045,051 cycles (29,111 instructions) in 189 s, MobileNetV2 1,661,186 (17,605) in 54 s, the
# core_N32_I32768 build included in the first; session 15's compiler (a5f5c49): ResNet-18
# 1,729,481 cycles (27,603 instructions), MobileNetV2 1,565,731 (17,930), 262 s for both.
# usage: tests/zoo/rtl.sh WORKDIR
set -u
W=$1
B=${BUILD:-build}/tools
PY=/usr/bin/python3
fails=0
mkdir -p "$W"
$PY tests/zoo/zoo.py "$W" 64 1 resnet18 mobilenet_v2 >"$W/export.log" 2>&1 || { tail -n 20 "$W/export.log"; exit 1; }
$PY -c "import numpy as np; np.save('$W/x.npy', np.random.default_rng(0).standard_normal((1, 3, 64, 64)).astype(np.float32))"
for m in resnet18 mobilenet_v2; do
    rm -rf "$W/$m" "$W/work_$m"
    if ! "$B/tpu-compile" "$W/$m.onnx" --mxu 32 --cores 1 --batch 1 --imem-insns 32768 -o "$W/$m" >"$W/$m.compile.log" 2>&1; then
        echo "FAIL: $m: $(tail -n 1 "$W/$m.compile.log")"; fails=$((fails + 1)); continue
    fi
    if "$B/tpu-infer" "$W/$m" --input "$W/x.npy" --output "$W/$m.out.npy" --rtl --work "$W/work_$m" >"$W/$m.rtl.log" 2>&1 &&
        grep -q "infer_rtl: every core's trace and output identical" "$W/$m.rtl.log"; then
        rtl=$(grep -o 'CYCLES=[0-9]*' "$W/$m.rtl.log" | head -n 1 | cut -d= -f2)
        model=$(grep -o '[0-9]* cycles per run (model)' "$W/$m.rtl.log" | cut -d' ' -f1)
        if [ -n "$rtl" ] && [ "$rtl" = "$model" ]; then
            echo "ok: $m on the N = 32 core: traces and output identical, $rtl cycles (model $model)"
        else
            echo "FAIL: $m: RTL $rtl cycles, model $model"; fails=$((fails + 1))
        fi
    else
        echo "FAIL: $m: $(grep -E 'error|differ|FAIL' "$W/$m.rtl.log" | head -n 3 | tr '\n' ' ')"; fails=$((fails + 1))
    fi
done
[ $fails -eq 0 ] && echo "test-zoo-rtl: PASS" || { echo "test-zoo-rtl: $fails FAILED"; exit 1; }
