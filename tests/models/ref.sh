#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-models-ref: the reference side of tests/models, without our machine.
#  - PyTorch's fp32 test accuracy of each trained model is above its floor (metrics.json)
#  - ONNX Runtime (models/ort_run.js) on the 10,000 test images agrees with PyTorch
#    (compare.py with ORT standing in for ours passes, every threshold at the issue's values)
#  - compare.py fails (exit 1) on wrong outputs: classes rotated, 2 % of predictions
#    changed, one probability off by 0.06 (with --max-prob-diff 0.05), a NaN, another
#    model's ORT outputs, fp32 outputs against the bf16 emulation (--bf16); and stops (exit 2, one line) on a wrong shape, dtype or label count
#  - ort_run.js: its .npy writer gives numpy's bytes (read back and rewritten), chunked and
#    whole runs give the same bytes, and each bad input gives one error line, no output file
# Environment: M (build/models), MODELS_PY (/usr/bin/python3).
set -eu
M=${M:-build/models}
PY=${MODELS_PY:-/usr/bin/python3}
W=$(mktemp -d /tmp/tpu-test-models-XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "ref.sh: FAIL: $*" >&2; exit 1; }
D=$M/data
ok=0

# ---- PyTorch accuracy floors (the trained models: mlp 88.26 %, cnn 89.95 % here) ----
for spec in mlp:87.5 cnn:89.0; do
    m=${spec%%:*}; floor=${spec#*:}
    acc=$($PY -c "import json; print(100 * json.load(open('$M/$m/metrics.json'))['test_accuracy'])")
    echo "PyTorch fp32 $m: test accuracy $acc % (floor $floor %)"
    $PY -c "import sys; sys.exit(0 if $acc >= $floor else 1)" || fail "$m accuracy $acc % < $floor %"
    ok=$((ok + 1))
done

# ---- ORT on the whole test set, against PyTorch ----
for m in mlp cnn; do
    t0=$(date +%s%N)
    node models/ort_run.js "$M/$m/model.onnx" "$D/test_x.npy" "$M/$m/ort_probs.npy" || fail "ort_run $m"
    echo "ORT $m: 10000 images in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
    $PY models/compare.py --name "$m ORT-as-ours" --onnx "$M/$m/model.onnx" --input "$D/test_x.npy" \
        --labels "$D/test_y.npy" --ours "$M/$m/ort_probs.npy" --torch "$M/$m/torch_probs.npy" \
        --ort "$M/$m/ort_probs.npy" --max-acc-diff 0.5 --min-agree 99 --max-prob-diff 1e-4 \
        --json "$M/$m/ort_compare.json" || fail "ORT against PyTorch, $m"
    ok=$((ok + 1))
done

# ---- compare.py must be able to fail ----
m=mlp
$PY models/data.py head "$D/test_x.npy" "$W/x.npy" 1000
$PY models/data.py head "$D/test_y.npy" "$W/y.npy" 1000
$PY models/data.py head "$M/$m/torch_probs.npy" "$W/t.npy" 1000
$PY models/data.py head "$M/$m/ort_probs.npy" "$W/o.npy" 1000
$PY models/data.py head "$M/cnn/ort_probs.npy" "$W/other.npy" 1000
$PY models/torch_run.py $m "$M/$m" "$W/x.npy" "$W/bf16.npy" --bf16
$PY - "$W" <<'EOF'
import sys
import numpy as np
w = sys.argv[1]
t = np.load(f"{w}/t.npy")
np.save(f"{w}/rot.npy", np.roll(t, 1, axis=1))                    # every class moved by one
s = t.copy()
rows = np.arange(0, len(s), 50)                                   # 2 %: top two swapped
top2 = np.argsort(s[rows], axis=1)[:, -2:]
a, b = s[rows, top2[:, 0]].copy(), s[rows, top2[:, 1]].copy()
s[rows, top2[:, 0]], s[rows, top2[:, 1]] = b, a
np.save(f"{w}/swap2pct.npy", s)
p = t.copy(); p[7, 3] += np.float32(0.06)                          # one probability off by 0.06
np.save(f"{w}/off006.npy", p)
q = t.copy(); q[5, 5] = np.nan
np.save(f"{w}/nan.npy", q)
np.save(f"{w}/shape.npy", t[:, :9].copy())                         # [1000, 9]
np.save(f"{w}/f64.npy", t.astype(np.float64))
np.save(f"{w}/short.npy", t[:999].copy())
EOF
cmp_run() {  # cmp_run EXPECTED_STATUS PATTERN OURS [ORT] [options...]
    want=$1; pat=$2; ours=$3; ort=$4; shift 4
    set +e
    $PY models/compare.py --name "$m check" --onnx "$M/$m/model.onnx" --input "$W/x.npy" --labels "$W/y.npy" \
        --ours "$ours" --torch "$W/t.npy" --ort "$ort" "$@" >"$W/cmp.out" 2>"$W/cmp.err"
    st=$?
    set -e
    [ $st -eq "$want" ] || { cat "$W/cmp.out" "$W/cmp.err"; fail "compare.py on $ours: exit $st, expected $want"; }
    if [ "$want" -eq 2 ]; then
        [ "$(wc -l <"$W/cmp.err")" -eq 1 ] || fail "compare.py on $ours: error not one line"
        grep -q "^compare: error: .*$pat" "$W/cmp.err" || fail "compare.py on $ours: error '$(cat "$W/cmp.err")' lacks '$pat'"
        last=$(cat "$W/cmp.err")
    else
        grep -q "$pat" "$W/cmp.out" || { cat "$W/cmp.out"; fail "compare.py on $ours: no '$pat'"; }
        last=$(tail -n 1 "$W/cmp.out")
        case "$want:$last" in
            "0:compare $m check: PASS" | "1:compare $m check: FAIL: "*) ;;
            *) fail "compare.py on $ours: closing line '$last'" ;;
        esac
    fi
    echo "compare.py $(basename "$ours") $*: exit $st as expected: $last"
    ok=$((ok + 1))
}
cmp_run 0 "ok   ours vs PyTorch identical" "$W/o.npy" "$W/o.npy" --max-prob-diff 1e-4
cmp_run 0 "ok   ours vs PyTorch identical" "$W/off006.npy" "$W/o.npy"                       # no probability tolerance given
cmp_run 1 "FAIL |accuracy ours - PyTorch|" "$W/rot.npy" "$W/o.npy"
cmp_run 1 "FAIL ours vs PyTorch identical 98.00 % >= 99 %" "$W/swap2pct.npy" "$W/o.npy"
cmp_run 0 "ok   ours vs PyTorch identical" "$W/swap2pct.npy" "$W/o.npy" --min-agree 98 --max-acc-diff 2
cmp_run 1 "FAIL ours vs PyTorch max |prob diff| 0.06" "$W/off006.npy" "$W/o.npy" --max-prob-diff 0.05
cmp_run 1 "FAIL ours: 1 non-finite values" "$W/nan.npy" "$W/o.npy"
cmp_run 1 "FAIL PyTorch vs ORT identical" "$W/t.npy" "$W/other.npy"
cmp_run 0 "ok   ours vs bf16emu max |prob diff| 0 <= 0.001" "$W/bf16.npy" "$W/o.npy" --bf16 "$W/bf16.npy"
cmp_run 1 "FAIL ours vs bf16emu max |prob diff| 0.00" "$W/o.npy" "$W/o.npy" --bf16 "$W/bf16.npy"
cmp_run 2 "shape \[1000, 9\], expected \[N, 10\]" "$W/shape.npy" "$W/o.npy"
cmp_run 2 "dtype float64, expected float32" "$W/f64.npy" "$W/o.npy"
cmp_run 2 "shape \[999, 10\], expected \[N, 10\] with N = 1000" "$W/short.npy" "$W/o.npy"
cmp_run 2 "cannot read as .npy" "$W/missing.npy" "$W/o.npy"

# ---- ort_run.js: .npy bytes, chunking, errors ----
$PY - "$W" <<'EOF'
import sys
import numpy as np
w = sys.argv[1]
rng = np.random.default_rng(1)
for name, shape in (("s0", ()), ("s1", (7,)), ("s2", (3, 5)), ("s4", (2, 1, 3, 4)), ("z", (0, 10))):
    np.save(f"{w}/{name}.npy", rng.standard_normal(shape).astype(np.float32))
np.save(f"{w}/bad_f64.npy", np.zeros((2, 1, 28, 28)))
np.save(f"{w}/bad_i64.npy", np.zeros((2, 1, 28, 28), dtype=np.int64))
np.save(f"{w}/bad_be.npy", np.zeros((2, 1, 28, 28), dtype=">f4"))
np.save(f"{w}/bad_fortran.npy", np.asfortranarray(np.zeros((2, 1, 28, 28), dtype=np.float32)))
np.save(f"{w}/bad_shape.npy", np.zeros((2, 1, 27, 28), dtype=np.float32))
raw = open(f"{w}/s4.npy", "rb").read()
open(f"{w}/bad_trunc.npy", "wb").write(raw[:-3])
open(f"{w}/bad_magic.npy", "wb").write(b"NUMPY" + raw[5:])
EOF
for f in s0 s1 s2 s4 z; do
    node -e "const n = require('./models/ort_run.js'); const a = n.readNpy(process.argv[1]); n.writeNpy(process.argv[2], a.shape, a.data);" \
        "$W/$f.npy" "$W/$f.js.npy" || fail "ort_run.js readNpy/writeNpy on $f.npy"
    cmp -s "$W/$f.npy" "$W/$f.js.npy" || fail "ort_run.js writeNpy: $f.npy not byte-identical to numpy's"
done
echo "ort_run.js .npy reader and writer: numpy's bytes for shapes (), (7,), (3, 5), (2, 1, 3, 4), (0, 10)"
ok=$((ok + 1))
$PY models/data.py head "$D/test_x.npy" "$W/x64.npy" 64
for c in 0 7 256; do
    node models/ort_run.js "$M/cnn/model.onnx" "$W/x64.npy" "$W/c$c.npy" --chunk $c || fail "ort_run --chunk $c"
done
{ cmp -s "$W/c0.npy" "$W/c7.npy" && cmp -s "$W/c0.npy" "$W/c256.npy"; } || fail "ort_run: --chunk 0, 7, 256 differ"
echo "ort_run.js: --chunk 0, 7 and 256 give the same bytes"
ok=$((ok + 1))
ort_err() {  # ort_err PATTERN EXPECTED_STATUS args...
    pat=$1; want=$2; shift 2
    rm -f "$W/out.npy"
    set +e
    node models/ort_run.js "$@" >"$W/ort.out" 2>"$W/ort.err"
    st=$?
    set -e
    [ $st -eq "$want" ] || fail "ort_run $*: exit $st, expected $want"
    [ "$(wc -l <"$W/ort.err")" -eq 1 ] || { cat "$W/ort.err"; fail "ort_run $*: error not one line"; }
    grep -q "^ort_run: error: .*$pat" "$W/ort.err" || fail "ort_run $*: '$(cat "$W/ort.err")' lacks '$pat'"
    [ ! -e "$W/out.npy" ] || fail "ort_run $*: wrote an output despite the error"
    echo "ort_run.js: $(cat "$W/ort.err")"
    ok=$((ok + 1))
}
X=$M/mlp/model.onnx
ort_err "dtype '<f8', only float32" 1 "$X" "$W/bad_f64.npy" "$W/out.npy"
ort_err "dtype '<i8', only float32" 1 "$X" "$W/bad_i64.npy" "$W/out.npy"
ort_err "dtype '>f4', only float32" 1 "$X" "$W/bad_be.npy" "$W/out.npy"
ort_err "Fortran-order array" 1 "$X" "$W/bad_fortran.npy" "$W/out.npy"
ort_err "data bytes, shape (2, 1, 3, 4) needs 96" 1 "$X" "$W/bad_trunc.npy" "$W/out.npy"
ort_err "not a .npy file" 1 "$X" "$W/bad_magic.npy" "$W/out.npy"
ort_err "cannot read: ENOENT" 1 "$X" "$W/nothere.npy" "$W/out.npy"
ort_err "run on .* failed" 1 "$X" "$W/bad_shape.npy" "$W/out.npy"
ort_err "nothere.onnx: no such file" 1 "$W/nothere.onnx" "$W/x64.npy" "$W/out.npy"
ort_err "ONNX Runtime cannot load it" 1 "$W/bad_magic.npy" "$W/x64.npy" "$W/out.npy"
ort_err "usage" 2 "$X" "$W/x64.npy"
ort_err "unknown option --fast" 2 "$X" "$W/x64.npy" "$W/out.npy" --fast
ort_err "--chunk needs a count" 2 "$X" "$W/x64.npy" "$W/out.npy" --chunk
ORT_NODE_MODULES=$W/none; export ORT_NODE_MODULES     # the last case: ORT is "missing" from here on
ort_err "onnxruntime-node is not installed in" 1 "$X" "$W/x64.npy" "$W/out.npy"

echo "$ok passed, 0 failed"
