#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-core-cosim: the model's cycles against the RTL's on representative programs, not only
# tpu-mkprog's: the compiler's output for a small MLP (Flatten, Gemm, ReLU, Gemm, Softmax;
# tests/compiler/fuzz_corpus/mlp.onnx), one inference run on the N = 4 core (tpu-infer
# --rtl) and one training step (tpu-train --rtl 1: forward, loss, backward, update) on the
# N = 4 core and on the 2-core ring board of N = 8 (the builds make test already has:
# build/sim/core_N4 and board_asm_N8_C2_ring_W64_D2, built on demand otherwise). Traces must
# be identical (the tools check) and the model's CYCLES within CYCLES_TOL percent (default 2)
# of the RTL's: the model dispatches as gen's sequencer does (docs/isa.md "Timing").
# usage: tests/corecosim/cycles.sh [OUT]
set -u
out=${1:-build/tests/corecosim/cycles}
B=${BUILD:-build}/tools
PY=${PYTHON:-/usr/bin/python3}
onnx=tests/compiler/fuzz_corpus/mlp.onnx
tol=${CYCLES_TOL:-2}
rm -rf "$out"; mkdir -p "$out"
st=0
"$PY" -c "
import numpy as np
r = np.random.default_rng(1)
np.save('$out/x.npy', r.standard_normal((16, 3, 4, 4)).astype(np.float32))
np.save('$out/y.npy', r.integers(0, 10, 16).astype(np.int64))" || { echo "FAIL: cycles: numpy"; exit 1; }
check() { # NAME MODEL RTL LOG
    if [ -z "$2" ] || [ -z "$3" ]; then
        echo "FAIL: cycles $1: no cycle counts (model '$2', RTL '$3'):"; tail -n 15 "$4" | sed 's/^/    /'; st=1; return
    fi
    pct=$(awk -v r="$3" -v m="$2" 'BEGIN { printf "%+.2f", 100 * (m - r) / r }')
    if awk -v r="$3" -v m="$2" -v t="$tol" 'BEGIN { d = r - m; if (d < 0) d = -d; exit !(100 * d <= t * r) }'; then
        echo "PASS: cycles $1: model $2, RTL $3 ($pct %)"
    else
        echo "FAIL: cycles $1: model $2, RTL $3 ($pct %, more than $tol % apart)"; st=1
    fi
}
# inference on the N = 4 core
if "$B/tpu-compile" "$onnx" --mxu 4 --cores 1 --batch 4 -o "$out/inf4" >"$out/inf4.log" 2>&1 &&
   "$B/tpu-infer" "$out/inf4" --input "$out/x.npy" --output "$out/inf4.npy" --rtl \
       --work "$out/inf4_work" >"$out/inf4_rtl.log" 2>&1; then
    check "mlp inference N = 4, C = 1" \
        "$(sed -n 's/.*; \([0-9]*\) cycles per run (model).*/\1/p' "$out/inf4_rtl.log" | head -n 1)" \
        "$(sed -n 's/^core_tb: counters: CYCLES=\([0-9]*\).*/\1/p' "$out/inf4_rtl.log" | head -n 1)" \
        "$out/inf4_rtl.log"
else
    echo "FAIL: cycles: mlp inference on the N = 4 core:"; tail -n 15 "$out/inf4.log" "$out/inf4_rtl.log" 2>/dev/null | sed 's/^/    /'; st=1
fi
# one training step: N = 4 core; N = 8 2-core ring board
for cfg in "4 1 ring 4" "8 2 ring 16"; do
    set -- $cfg
    l=$out/train_$1_$2.log
    if "$B/tpu-train" "$onnx" --x-train "$out/x.npy" --y-train "$out/y.npy" --mxu "$1" --cores "$2" \
        --topology "$3" --batch "$4" --steps-per-epoch 1 --rtl 1 --work "$out/train_$1_$2" >"$l" 2>&1; then
        if [ "$2" = 1 ]; then
            r=$(sed -n 's/^core_tb: counters: CYCLES=\([0-9]*\).*/\1/p' "$l" | head -n 1)
        else
            r=$(sed -n 's/^board_tb: board: .*: \([0-9]*\) cycles .*/\1/p' "$l" | head -n 1)
        fi
        check "mlp training step N = $1, C = $2 $3" \
            "$(sed -n 's/.*(model: \([0-9]*\) cycles).*/\1/p' "$l" | head -n 1)" "$r" "$l"
    else
        echo "FAIL: cycles: the training step at N = $1, C = $2:"; tail -n 15 "$l" | sed 's/^/    /'; st=1
    fi
done
echo "test-core-cosim cycles: $([ $st -eq 0 ] && echo PASS || echo FAIL)"
exit $st
