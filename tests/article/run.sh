#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-article: the article's three Keras models in PyTorch (models/article.py).
#  1. check.py structure: Keras' parameter counts (5 and 1000 classes), the layers, every
#     stage's output at 192x192, the 'same' and zero-padded MaxPools, the tops
#  2. models/article.py's errors: one line, exit 2, no file written
#  3. Xception at 71x71 (Keras' smallest input for it) exported and compiled,
#     tpu-compile --mxu 16 --batch 1 --report-only: the compiler takes the graph (depthwise
#     convs, 'same' pools as ceil_mode MaxPools, residual Adds) and counts the PyTorch
#     model's MACs, layer for layer
# usage: run.sh WORKDIR   (T: the tools, default build/tools; PY: /usr/bin/python3)
set -eu
W=${1:-build/test-article}
T=${T:-build/tools}
PY=${PY:-/usr/bin/python3}
mkdir -p "$W"
fail() { echo "run.sh: FAIL: $*" >&2; exit 1; }

$PY tests/article/check.py structure || fail "check.py structure"

# bad arguments: one line on stderr naming the value, exit 2, nothing written
rm -f "$W/bad.onnx"
for args in "resnet152 $W/bad.onnx" "xception $W/bad.onnx --size 70" "vgg19 $W/no/such/dir/bad.onnx"; do
    rc=0
    # shellcheck disable=SC2086  # the arguments are split on purpose
    $PY models/article.py $args >"$W/bad.out" 2>"$W/bad.err" || rc=$?
    lines=$(grep -cv 'Warning\|warnings.warn\|^ *_C\._jit' "$W/bad.err" || true)
    [ "$rc" = 2 ] && [ "$lines" = 1 ] && grep -q '^article.py: error: ' "$W/bad.err" &&
        [ ! -e "$W/bad.onnx" ] && [ ! -e "$W/bad.onnx.tmp" ] ||
        fail "article.py $args: exit $rc, $lines error line(s): $(cat "$W/bad.err")"
    echo "ok   article.py $args: $(cat "$W/bad.err")"
done

$PY models/article.py xception "$W/xception71.onnx" --size 71 >"$W/export.log" 2>&1 ||
    { cat "$W/export.log"; fail "export"; }
"$T/tpu-compile" "$W/xception71.onnx" --mxu 16 --batch 1 --report-only --json "$W/xception71.json" \
    >"$W/xception71.txt" 2>"$W/xception71.err" || { cat "$W/xception71.err"; fail "tpu-compile xception71"; }
echo "ok   tpu-compile xception71.onnx --mxu 16 --batch 1 --report-only: $(grep '^total' "$W/xception71.txt")"
$PY tests/article/check.py macs xception 71 "$W/xception71.json" || fail "MACs"
echo "test-article: PASS"
