#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make bench-resnet50-rtl (issue 18 "On the RTL"): one 224x224 ResNet-50 image (torchvision,
# random weights with calibrated BatchNorm: tests/zoo/zoo.py) compiled for one core of
# N = 128 (at N = 32 and 64 the program needs more than gen's 32,768 instructions; at N = 128
# 15,481) and run by tpu-infer --rtl on the verilated core: every trace record and the output
# identical to the C model's, the RTL's cycles equal to the model's. Prints the wall time of
# the Verilator build and of the simulation. The N = 128 core build takes about 10 GB: run
# nothing else that verilates N = 128 meanwhile.
# usage: bench/resnet50_rtl.sh WORKDIR
set -u
W=$1
B=${BUILD:-build}/tools
PY=/usr/bin/python3
mkdir -p "$W"
[ -f "$W/resnet50.onnx" ] || $PY tests/zoo/zoo.py "$W" 224 1 resnet50 >"$W/export.log" 2>&1 ||
    { tail -n 5 "$W/export.log"; exit 1; }
$PY -c "import numpy as np; np.save('$W/x.npy', np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32))"
rm -rf "$W/n128" "$W/work"
t0=$(date +%s)
"$B/tpu-compile" "$W/resnet50.onnx" --mxu 128 --cores 1 --batch 1 --imem-insns 32768 -o "$W/n128" \
    >"$W/compile.log" 2>&1 || { echo "FAILED: $(tail -n 1 "$W/compile.log")"; exit 1; }
t1=$(date +%s)
/usr/bin/time -f "%e s wall, %M KB peak" -o "$W/rtl.time" \
    "$B/tpu-infer" "$W/n128" --input "$W/x.npy" --output "$W/out.npy" --rtl --work "$W/work" >"$W/rtl.log" 2>&1
rc=$?
t2=$(date +%s)
grep -E "instructions;|^total:" "$W/compile.log"
rtl=$(grep -o 'CYCLES=[0-9]*' "$W/rtl.log" | head -n 1 | cut -d= -f2)
model=$(grep -o '[0-9]* cycles per run (model)' "$W/rtl.log" | cut -d' ' -f1)
echo "compile (with the report's model run): $((t1 - t0)) s; tpu-infer --rtl (build + model + RTL): $(cat "$W/rtl.time")"
grep -E "verilat|build" "$W/rtl.log" | tail -n 2
if [ $rc -eq 0 ] && grep -q "infer_rtl: every core's trace and output identical" "$W/rtl.log" && [ -n "$rtl" ] && [ "$rtl" = "$model" ]; then
    echo "ok: ResNet-50 224x224 on the N = 128 core: traces and output identical, RTL $rtl cycles = model $model ($((t2 - t1)) s)"
else
    echo "FAILED: RTL ${rtl:-?} cycles, model ${model:-?}: $(grep -E 'error|differ|FAIL' "$W/rtl.log" | head -n 3 | tr '\n' ' ')"
    exit 1
fi
