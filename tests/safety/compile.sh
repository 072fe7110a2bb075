#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-safety, tpu-compile and tpu-infer (issue 28): -o never replaces a folder that holds a
# user's files; "-o DIR/" works, new and existing; recompiling leaves no DIR.old.* or DIR.tmp.*;
# a model.txt with any field out of range or inconsistent with the input, the program or the
# image is refused by tpu-infer built with ASan + UBSan, one line, exit 2; an output that is an
# input (by device and inode) is refused; every bad output path is exit 2 before any work;
# the messages name the bad value.
# usage: sh tests/safety/compile.sh WORK TOOLS GEN (WORK empty; run from the repository root)
set -u
W=$1; T=$2
ASAN=$(dirname "$T")/safety/tpu-infer-asan
# leaks at an early exit are not what this checks: overflows, wild reads, UB
export ASAN_OPTIONS=detect_leaks=0
PY=/usr/bin/python3
fails=0
ok() { echo "ok $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# refused NAME CMD...: exit 2, exactly one line on stderr, no sanitizer report
refused() {
    name=$1; shift
    "$@" >"$W/r.out" 2>"$W/r.err"; rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$W/r.err")" -eq 1 ] && ! grep -q 'Sanitizer\|runtime error' "$W/r.err"; then
        ok "$name: $(cut -c1-200 "$W/r.err")"
    else
        bad "$name: exit $rc: $(head -c 800 "$W/r.err")"
    fi
}

# ---- a 20-8-3 MLP with Softmax, its inputs, and a Gemm with a bias of the wrong shape ----
$PY - "$W" <<'PY' || { bad "making the models"; exit 1; }
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
d = sys.argv[1]
rng = np.random.default_rng(1)
def mlp(b1_shape, name):
    W1 = rng.standard_normal((8, 20)).astype(np.float32); b1 = rng.standard_normal(b1_shape).astype(np.float32)
    W2 = rng.standard_normal((3, 8)).astype(np.float32); b2 = rng.standard_normal(3).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in ((W1, "W1"), (b1, "b1"), (W2, "W2"), (b2, "b2"))]
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["z"], transB=1), helper.make_node("Softmax", ["z"], ["y"], axis=1)]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 20])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), "%s/%s.onnx" % (d, name))
mlp((8,), "mlp")
mlp((5,), "bias5")
np.save(d + "/x4.npy", rng.standard_normal((4, 20)).astype(np.float32))
PY
C="$T/tpu-compile $W/mlp.onnx --mxu 8 --cores 1 --batch 4"
$C -o "$W/m8" >/dev/null 2>&1 || bad "compiling the MLP"

# ---- 1. a folder with a user's files and a model.txt survives -o, untouched ----
P="$W/proj"; mkdir -p "$P/src"; echo n >"$P/model.txt"; echo d >"$P/data.csv"; echo c >"$P/src/main.c"
( cd "$P" && find . -type f | sort | xargs cat ) >"$W/proj.before"
refused "-o on a folder of user files with a model.txt" $C -o "$P"
( cd "$P" && find . -type f | sort | xargs cat ) >"$W/proj.after"
cmp -s "$W/proj.before" "$W/proj.after" && [ -z "$(ls -d "$W"/proj.* 2>/dev/null | grep -v 'proj\.\(before\|after\)')" ] &&
    ok "the user's folder untouched, nothing beside it" || bad "the user's folder changed"
# a folder tpu-compile wrote, plus one file of the user's: refused too
cp -r "$W/m8" "$W/m8u"; echo mine >"$W/m8u/notes.txt"
refused "-o on a compiled model with a user's file in it" $C -o "$W/m8u"
[ -f "$W/m8u/notes.txt" ] && ok "the user's notes.txt kept" || bad "notes.txt lost"
# a model.txt that is not tpu-compile's (no header) among compiled files: refused
cp -r "$W/m8" "$W/m8h"; echo "batch 4" >"$W/m8h/model.txt"
refused "-o on a folder whose model.txt is not tpu-compile's" $C -o "$W/m8h"
# the model given as input inside the folder: refused (it would be replaced with the folder)
cp -r "$W/m8" "$W/m8m"; cp "$W/mlp.onnx" "$W/m8m/"
refused "-o on the folder that holds the input model" $T/tpu-compile "$W/m8m/mlp.onnx" --mxu 8 --cores 1 --batch 4 -o "$W/m8m"
[ -f "$W/m8m/mlp.onnx" ] && ok "the input model kept" || bad "the input model lost"
refused "-o on a regular file" $C -o "$W/x4.npy"

# ---- 3. a trailing slash: new and existing; 4. no DIR.old.* or DIR.tmp.* after recompiling ----
$C -o "$W/new/" >/dev/null 2>"$W/e" && [ -f "$W/new/model.txt" ] && ok "-o new/ (a new folder)" || bad "-o new/: $(cat "$W/e")"
$C -o "$W/new/" >/dev/null 2>"$W/e" && [ -f "$W/new/model.txt" ] && ok "-o new/ (an existing model)" || bad "-o new/ again: $(cat "$W/e")"
mkdir "$W/empty"
$C -o "$W/empty/" >/dev/null 2>"$W/e" && [ -f "$W/empty/model.bin" ] && ok "-o empty/ (an existing empty folder)" || bad "-o empty/: $(cat "$W/e")"
"$T/tpu-infer" "$W/new" --input "$W/x4.npy" --output "$W/y.npy" --work "$W/new/work" 2>"$W/e" || bad "tpu-infer --work new/work: $(cat "$W/e")"
$C -o "$W/new" >/dev/null 2>"$W/e" || bad "recompiling a model with a work folder: $(cat "$W/e")"
left=$(ls -d "$W"/new.* 2>/dev/null)
[ -z "$left" ] && [ ! -e "$W/new/work" ] && [ -f "$W/new/model.txt" ] && ok "recompiled over a work folder: no new.old.* or new.tmp.*" ||
    bad "recompiling left: $left $(ls "$W/new")"
refused "-o in a missing folder" $C -o "$W/nodir/m"
[ ! -e "$W/nodir" ] && ok "nothing created for -o nodir/m" || bad "nodir created"
refused "--json in a missing folder" $T/tpu-compile "$W/mlp.onnx" --mxu 8 --cores 1 --report-only --json "$W/nodir/r.json"
refused "--json onto the input model" $T/tpu-compile "$W/mlp.onnx" --mxu 8 --cores 1 --report-only --json "$W/mlp.onnx"

# ---- 2. model.txt: every field out of range or inconsistent, under ASan + UBSan ----
# mutate NAME SED: a copy of m8 with model.txt edited, run by the ASan tpu-infer
mutate() {
    name=$1; d="$W/mm"; rm -rf "$d"; cp -r "$W/m8" "$d"
    sed -i "$2" "$d/model.txt"
    cmp -s "$d/model.txt" "$W/m8/model.txt" && { bad "$name: the edit changed nothing"; return; }
    refused "model.txt $name" "$ASAN" "$d" --input "$W/x4.npy" --output "$W/q.npy"
}
[ -x "$ASAN" ] || bad "no ASan tpu-infer at $ASAN"
"$ASAN" "$W/m8" --input "$W/x4.npy" --output "$W/q.npy" 2>"$W/e" && ok "the ASan tpu-infer runs the model" || bad "ASan tpu-infer: $(cat "$W/e")"
mutate "batch 16 (input holds 4)" 's/^batch 4$/batch 16/'
mutate "batch 5" 's/^batch 4$/batch 5/'
mutate "batch 0" 's/^batch 4$/batch 0/'
mutate "batch -1" 's/^batch 4$/batch -1/'
mutate "batch 2^40" 's/^batch 4$/batch 1099511627776/'
mutate "geom N 0" 's/^geom 8 /geom 0 /'
mutate "geom N 300" 's/^geom 8 /geom 300 /'
mutate "geom UB rows 0" 's/^geom 8 4096 /geom 8 0 /'
mutate "geom ACC rows 70000" 's/^geom 8 4096 2048 /geom 8 4096 70000 /'
mutate "geom WMEM rows 0" 's/^geom \([0-9]* [0-9]* [0-9]*\) 64 /geom \1 0 /'
mutate "geom IMEM 40000" 's/ 1024$/ 40000/'
mutate "geom IMEM 8 (the program has more)" 's/ 1024$/ 8/'
mutate "axi_data_bits 96" 's/^axi_data_bits .*/axi_data_bits 96/'
mutate "board 2 cores on a 1x1 topology" 's/^board 1 1 1/board 2 1 1/'
mutate "board 65 cores" 's/^board 1 1 1/board 65 65 1/'
mutate "host_bytes 100" 's/^host_bytes .*/host_bytes 100/'
mutate "host_bytes 8 GiB" 's/^host_bytes .*/host_bytes 8589934592/'
mutate "image base past the host memory" 's/^image \([0-9]*\) /image 99999999 /'
mutate "image bytes past the file" 's/^image \([0-9]*\) [0-9]*/image \1 4000/'
mutate "a fill past the host memory" '$a fill 1056000 99999'
mutate "input of 21 columns" 's/^input x 2 4 20 /input x 2 4 21 /'
mutate "input of 5 images" 's/^input x 2 4 20 /input x 2 5 20 /'
mutate "input address past the host memory" 's/^\(input .*\) addr [0-9]*/\1 addr 9999999999/'
mutate "input address -96" 's/^\(input .*\) addr [0-9]*/\1 addr -96/'
mutate "input rows 2" 's/^\(input .*\) rows 4 /\1 rows 2 /'
mutate "output rows 1" 's/^\(output .*\) rows 4 /\1 rows 1 /'
mutate "output of 8 images" 's/^output y 2 4 3 /output y 2 8 3 /'
mutate "an onehot line on a float model" '$a onehot 20'
mutate "an unknown line" '$a cores 2'
mutate "the header" '1s/.*/tpuc-model 2/'

# ---- 7. an output that is an input; 9. bad output paths: exit 2 before any work ----
refused "tpu-infer --output = --input" "$T/tpu-infer" "$W/m8" --input "$W/x4.npy" --output "$W/x4.npy"
ln "$W/x4.npy" "$W/x4link.npy"
refused "tpu-infer --output = a hard link of --input" "$T/tpu-infer" "$W/m8" --input "$W/x4.npy" --output "$W/x4link.npy"
refused "tpu-infer --output = the model's image.npy" "$T/tpu-infer" "$W/m8" --input "$W/x4.npy" --output "$W/m8/image.npy"
$PY -c "import numpy as np, sys; assert (np.load(sys.argv[1]) == np.load(sys.argv[2])).all()" "$W/x4.npy" "$W/x4link.npy" 2>/dev/null &&
    cmp -s "$W/m8/image.npy" "$W/m8m/image.npy" && ok "the inputs unchanged" || bad "an input was overwritten"
refused "tpu-infer --output in a missing folder" "$T/tpu-infer" "$W/m8" --input "$W/x4.npy" --output "$W/nodir/y.npy"
refused "tpu-infer --output a folder" "$T/tpu-infer" "$W/m8" --input "$W/x4.npy" --output "$W/empty/"
refused "tpu-infer no --output: one line" "$T/tpu-infer" "$W/m8" --input "$W/x4.npy"
mkdir -p "$W/userwork"; echo keep >"$W/userwork/mine.txt"
refused "tpu-infer --work on a folder of user files" "$T/tpu-infer" "$W/m8" --input "$W/x4.npy" --output "$W/y.npy" --work "$W/userwork"
[ "$(ls "$W/userwork")" = mine.txt ] && ok "the user's work folder untouched" || bad "userwork changed: $(ls "$W/userwork")"
refused "tpu-infer --work = the model folder" "$T/tpu-infer" "$W/m8" --input "$W/x4.npy" --output "$W/y.npy" --work "$W/m8"
refused "tpu-infer --work in a missing folder" "$T/tpu-infer" "$W/m8" --input "$W/x4.npy" --output "$W/y.npy" --work "$W/nodir/w"
"$T/tpu-infer" "$W/m8" --input "$W/x4.npy" --output "$W/y.npy" --work "$W/w1/" 2>/dev/null &&
    "$T/tpu-infer" "$W/m8" --input "$W/x4.npy" --output "$W/y.npy" --work "$W/w1/" 2>/dev/null &&
    ok "tpu-infer --work w1/ twice" || bad "tpu-infer --work w1/ twice"

# ---- the core's tools: tpu-mkprog -o, tpu-run's --trace and --dump against its inputs ----
refused "tpu-mkprog -o in a missing folder" "$T/tpu-mkprog" mlp --mxu 4 -o "$W/nodir/job"
"$T/tpu-mkprog" mlp --mxu 4 -o "$W/job/" >/dev/null 2>&1 && [ -f "$W/job/prog.s" ] && ok "tpu-mkprog -o job/" || bad "tpu-mkprog -o job/"
cp "$W/job/a.npy" "$W/a.before"
J="$W/job"   # job.args' paths are relative to it
refused "tpu-run --trace onto a --load input" "$T/tpu-run" "@$J/job.args" --mxu 4 --prog "$J/prog.s" --trace "$J/a.npy"
refused "tpu-run --dump onto a --load input" "$T/tpu-run" "@$J/job.args" --mxu 4 --prog "$J/prog.s" --dump "0x7000=$J/a.npy:bf16:12x6"
refused "tpu-run --trace onto --prog" "$T/tpu-run" "@$J/job.args" --mxu 4 --prog "$J/prog.s" --trace "$J/prog.s"
refused "tpu-run --trace in a missing folder" "$T/tpu-run" "@$J/job.args" --mxu 4 --prog "$J/prog.s" --trace "$J/nodir/t"
cmp -s "$W/job/a.npy" "$W/a.before" && ok "tpu-run's input a.npy unchanged" || bad "tpu-run overwrote a.npy"
refused "tpu-board-run --out in a missing folder" "$T/tpu-board-run" --mxu 4 --cores 2 --job "$W/job" --out "$W/nodir/out"

# ---- 10. messages that name the value ----
"$T/tpu-compile" "$W/bias5.onnx" --mxu 8 --cores 1 --batch 4 -o "$W/b5" >/dev/null 2>"$W/e"
grep -q 'C of shape \[5\]:' "$W/e" && ok "a bias of shape [5] named as [5]: $(cat "$W/e")" || bad "bias message: $(cat "$W/e")"
"$T/tpu-infer" "$W/m8" --input "$W/x4.npy" --output "$W/y.npy" --max-cycles 10 >/dev/null 2>"$W/e"
[ $? -eq 1 ] && grep -q 'max-cycles limit of 10 ' "$W/e" && ok "--max-cycles 10 named: $(cat "$W/e")" || bad "--max-cycles message: $(cat "$W/e")"

[ $fails -eq 0 ] || { echo "compile.sh: $fails check(s) failed"; exit 1; }
