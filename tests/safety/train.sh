#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# usage: tests/safety/train.sh WORK TOOLS GEN -- test-safety's tpu-train part (issue 28):
#   1. no temporary file left after SIGTERM, SIGINT or SIGHUP (--plot's PyTorch reference ended
#      too, --rtl's temporary work folder removed), and none from a SIGKILLed run after the
#      next run (--resume);
#   2. an output that is an input (another spelling, a hard link, --plot's CSV.torch.csv) or
#      another output: refused, exit 2, the input intact; --checkpoint F --resume F
#      (docs/training.md) still works;
#   3. NaN in the data refused at load (exit 2, the file and the element named); a diverging
#      run (--lr 1e3) stops at the first non-finite step (exit 1), no ONNX, the checkpoint kept;
#      --allow-nonfinite goes on as before;
#   4. every output option in a missing folder: exit 2, one line naming the option, before the
#      model is read; --grads-dir DIR/ names DIR.
# A tiny MLP (20 -> 16 -> 5) at --mxu 4, --cores 1: a step takes well under a millisecond.
set -u
W=$1; TOOLS=$2
T="$TOOLS/tpu-train"
PY=/usr/bin/python3
fails=0
ok() { echo "ok $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
mkdir -p "$W"
cat >"$W/mk.py" <<'PYEOF'
import os, sys
import numpy as np, torch, torch.nn as nn
out = sys.argv[1]
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 5), nn.Softmax(dim=1)).eval()
torch.onnx.export(m, torch.zeros((2, 20)), os.path.join(out, "mlp.onnx"), input_names=["x"],
                  output_names=["y"], dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}, opset_version=14)
rng = np.random.default_rng(1)
c = rng.standard_normal((5, 20)) * 1.5
lab = rng.integers(0, 5, 256)
x = (c[lab] + rng.standard_normal((256, 20))).astype(np.float32)
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "y.npy"), lab.astype(np.int64))
x[3, 7] = np.nan
np.save(os.path.join(out, "xnan.npy"), x)
PYEOF
$PY "$W/mk.py" "$W" >"$W/mk.log" 2>&1 || { cat "$W/mk.log"; echo "FAIL making the model"; exit 1; }
D="$W/mlp.onnx --x-train $W/x.npy --y-train $W/y.npy --mxu 4 --cores 1 --batch 8"

# no "*.tmp*" file in folder $1
no_tmp() { [ -z "$(find "$1" -name '*.tmp*')" ]; }
# waits (at most 20 s) until file $1 holds a line matching $2
wait_for() {
    i=0
    while [ $i -lt 200 ]; do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; i=$((i + 1)); done
    return 1
}

# ---- 1. interrupts: a long run (100000 epochs) signalled once it is in its third epoch ----
for sw in TERM:143 INT:130 HUP:129; do  # the signal and the status of dying by it
    sig=${sw%:*}; want=${sw#*:}
    d="$W/sig$sig"; mkdir -p "$d"
    # a shell starts background jobs with SIGINT ignored, and under nohup SIGHUP is ignored
    # too (tpu-train, like any program, keeps an inherited ignore): env restores the defaults
    # shellcheck disable=SC2086
    env --default-signal=INT,HUP "$T" $D --epochs 100000 --csv "$d/c.csv" --checkpoint "$d/c.ckpt" \
        --save-onnx "$d/c.onnx" >"$d/out" 2>"$d/err" &
    pid=$!
    started=yes; wait_for "$d/out" "Epoch 3/" || started=no
    kill -$sig $pid; wait $pid 2>/dev/null; rc=$?
    if [ $started = yes ] && [ $rc -eq $want ] && [ -e "$d/c.ckpt" ] && no_tmp "$d"; then
        ok "tpu-train: SIG$sig during the run (exit $rc): no temporary file left, the checkpoint kept"
    else
        bad "tpu-train: SIG$sig (started: $started, exit $rc): left $(cd "$d" && ls | tr '\n' ' ')"
    fi
done
d="$W/sigKILL"; mkdir -p "$d"
# shellcheck disable=SC2086
"$T" $D --epochs 100000 --csv "$d/c.csv" --checkpoint "$d/c.ckpt" --save-onnx "$d/c.onnx" >"$d/out" 2>"$d/err" &
pid=$!
wait_for "$d/out" "Epoch 3/"
kill -KILL $pid; wait $pid 2>/dev/null
left=$(cd "$d" && ls | grep -c '\.tmp')
# shellcheck disable=SC2086
"$T" $D --epochs 100000 --csv "$d/c.csv" --checkpoint "$d/c.ckpt" --resume "$d/c.ckpt" --save-onnx "$d/c.onnx" \
    --max-steps 2 >"$d/out2" 2>"$d/err2"
rc=$?
if [ "$left" -ge 1 ] && [ $rc -eq 0 ] && grep -q resuming "$d/err2" && no_tmp "$d"; then
    ok "tpu-train: SIGKILL left $left temporary file(s); the --resume run after it removed them"
else
    bad "tpu-train: SIGKILL (left $left), --resume exit $rc: $(cd "$d" && ls | tr '\n' ' ') $(tail -1 "$d/err2")"
fi
# --rtl: the temporary work folder (in $TMPDIR) is removed on SIGTERM too. Needs the verilated
# core (a build of minutes): skipped when it is not there
d="$W/sigRTL"; mkdir -p "$d/tmp"
if [ -x "$(dirname "$TOOLS")/sim/core_N4/core_tb" ]; then
    # shellcheck disable=SC2086
    TMPDIR="$d/tmp" "$T" $D --epochs 100000 --rtl 1 --csv "$d/c.csv" >"$d/out" 2>"$d/err" &
    pid=$!
    wait_for "$d/out" "Epoch 3/"
    kill -TERM $pid; wait $pid 2>/dev/null; rc=$?
    if [ $rc -eq 143 ] && grep -q "on the RTL: every core" "$d/err" && [ -z "$(ls "$d/tmp")" ] && no_tmp "$d"; then
        ok "tpu-train --rtl: SIGTERM removes the temporary work folder"
    else
        bad "tpu-train --rtl: SIGTERM (exit $rc): left $(ls "$d/tmp" "$d" | tr '\n' ' ')"
    fi
else
    echo "ok tpu-train --rtl: SIGTERM and the work folder: skipped (no $(dirname "$TOOLS")/sim/core_N4/core_tb)"
fi
# --plot: the PyTorch reference (models/train_ref.py, a child) is ended with tpu-train, not
# left running to write its files (CSV.torch.csv, the PNG) after tpu-train is gone
d="$W/sigPLOT"; mkdir -p "$d"
# shellcheck disable=SC2086
"$T" $D --epochs 1 --csv "$d/c.csv" --plot "$d/p.png" >"$d/out" 2>"$d/err" &
pid=$!
wait_for "$d/out" "Epoch 1/1" && sleep 0.5
kill -TERM $pid; wait $pid 2>/dev/null; rc=$?
orphan=$(ps -eo pid=,args= | grep "[t]rain_ref.py.*$d/c.csv.torch.csv" | awk '{print $1}')
if [ $rc -eq 143 ] && [ -z "$orphan" ] && no_tmp "$d" && [ ! -e "$d/p.png" ]; then
    ok "tpu-train --plot: SIGTERM ends the PyTorch reference too, no temporary file left"
else
    bad "tpu-train --plot: SIGTERM (exit $rc): reference still running: '$orphan'; left $(cd "$d" && ls | tr '\n' ' ')"
    [ -n "$orphan" ] && kill $orphan
fi

# ---- 2. an output that is an input, or another output ----
d="$W/same"; mkdir -p "$d"
cp "$W/x.npy" "$d/x.npy"; ln "$d/x.npy" "$d/xlink.npy"; cp "$W/mlp.onnx" "$d/m.onnx"
printf 'not yet\n' >"$d/keep"
same() { # label want-in-message opts... : exit 2, one line, the inputs and keep unchanged
    label=$1; want=$2; shift 2
    cp "$W/x.npy" "$d/x.npy"; cp "$W/y.npy" "$d/y.npy"; cp "$W/mlp.onnx" "$d/m.onnx"
    printf 'not yet\n' >"$d/keep"
    timeout 60 "$T" "$d/m.onnx" --x-train "$d/x.npy" --y-train "$d/y.npy" --mxu 4 --cores 1 --batch 8 "$@" \
        >"$d/out" 2>"$d/err"
    rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$d/err")" -eq 1 ] && grep -q -- "$want" "$d/err" &&
       cmp -s "$d/x.npy" "$W/x.npy" && cmp -s "$d/y.npy" "$W/y.npy" && cmp -s "$d/m.onnx" "$W/mlp.onnx" && [ "$(cat "$d/keep")" = "not yet" ] &&
       ! grep -q Epoch "$d/out" && no_tmp "$d"; then
        ok "tpu-train: $label: refused ($(cat "$d/err"))"
    else
        bad "tpu-train: $label: exit $rc, $(cat "$d/err")"
    fi
}
same "--csv the training data" "same file" --csv "$d/x.npy"
same "--save-onnx a hard link to the training data" "same file" --save-onnx "$d/xlink.npy"
same "--checkpoint the model, spelled ./" "same file" --checkpoint "$d/./m.onnx"
same "--csv the --y-train" "same file" --csv "$d/y.npy"
same "--csv and --save-onnx the same file" "same file" --csv "$d/keep" --save-onnx "$d/keep"
same "--csv and --checkpoint the same new file" "same file" --csv "$d/new" --checkpoint "$d/../same/new"
same "--plot the --csv" "same file" --csv "$d/keep" --plot "$d/keep"
# --plot also writes CSV.torch.csv (the PyTorch reference's curves): an input by that name is kept
cp "$W/y.npy" "$d/c.csv.torch.csv"
same "--plot's reference CSV the --y-val" "same file" --x-val "$d/x.npy" --y-val "$d/c.csv.torch.csv" --csv "$d/c.csv" --plot "$d/p.png"
rm -f "$d/c.csv.torch.csv"
# output folders: an input or an output under a name they write
mkdir -p "$d/g" "$d/w"; cp "$W/x.npy" "$d/g/w0.npy"; cp "$W/x.npy" "$d/w/core0_in.npy"
same "--grads-dir holding the --x-val as w0.npy" "would overwrite" --x-val "$d/g/w0.npy" --y-val "$d/y.npy" --grads-dir "$d/g"
same "--grads-dir holding the --csv as loss.npy" "would overwrite" --csv "$d/g/loss.npy" --grads-dir "$d/g/"
# (timeout: the tpu-train of before ran the step and built the RTL)
same "--work holding the --x-val as core0_in.npy" "would overwrite" --x-val "$d/w/core0_in.npy" --y-val "$d/y.npy" \
    --rtl 1 --work "$d/w"
cmp -s "$d/g/w0.npy" "$W/x.npy" && cmp -s "$d/w/core0_in.npy" "$W/x.npy" && ok "tpu-train: the inputs in the output folders intact" ||
    bad "tpu-train: an input in --grads-dir or --work was overwritten"
rm -rf "$d/g" "$d/w"
# the documented way to continue a run: --checkpoint F --resume F
# shellcheck disable=SC2086
"$T" $D --epochs 2 --checkpoint "$d/ck" --max-steps 3 >"$d/o1" 2>"$d/e1" &&
    "$T" $D --epochs 2 --checkpoint "$d/ck" --resume "$d/ck" --max-steps 3 >"$d/o2" 2>"$d/e2"
rc=$?
if [ $rc -eq 0 ] && grep -q "resuming" "$d/e2" && grep -q "stopped after 3 steps" "$d/e2"; then
    ok "tpu-train: --checkpoint F --resume F (the documented way to continue) still works"
else
    bad "tpu-train: --checkpoint F --resume F: exit $rc, $(tail -1 "$d/e2")"
fi

# ---- 3. non-finite data and losses ----
d="$W/nan"; mkdir -p "$d"
"$T" "$W/mlp.onnx" --x-train "$W/xnan.npy" --y-train "$W/y.npy" --mxu 4 --cores 1 --batch 8 \
    --save-onnx "$d/a.onnx" >"$d/out" 2>"$d/err"
rc=$?
if [ $rc -eq 2 ] && [ "$(wc -l <"$d/err")" -eq 1 ] && grep -q "xnan.npy" "$d/err" && grep -q "67" "$d/err" &&
   [ ! -e "$d/a.onnx" ]; then
    ok "tpu-train: NaN in --x-train refused at load ($(cat "$d/err"))"
else
    bad "tpu-train: NaN in --x-train: exit $rc, $(cat "$d/err")"
fi
# the last checkpoint is the last finite step's: resuming it starts at the step that diverged
# shellcheck disable=SC2086
"$T" $D --epochs 3 --lr 1e3 --csv "$d/b.csv" --checkpoint "$d/ck" --save-onnx "$d/b.onnx" >"$d/out" 2>"$d/err"
rc=$?
step=$(sed -n 's/.*error: epoch 1, step \([0-9]*\):.*/\1/p' "$d/err")
# shellcheck disable=SC2086
[ -n "$step" ] && "$T" $D --epochs 3 --lr 1e3 --checkpoint "$d/ck2" --resume "$d/ck" --max-steps 1 --allow-nonfinite \
    >"$d/out2" 2>"$d/err2"
if [ $rc -eq 1 ] && [ -n "$step" ] && [ ! -e "$d/b.onnx" ] && [ ! -e "$d/b.csv" ] &&
   grep -q "resuming .* at epoch 1, step $((step - 1))\$" "$d/err2" && no_tmp "$d"; then
    ok "tpu-train: --lr 1e3 diverges: exit 1, no ONNX or CSV, the checkpoint of step $((step - 1)) kept ($(tail -1 "$d/err"))"
else
    bad "tpu-train: --lr 1e3: exit $rc, onnx $( [ -e "$d/b.onnx" ] && echo written || echo none), $(tail -1 "$d/err")"
fi
"$T" "$W/mlp.onnx" --x-train "$W/xnan.npy" --y-train "$W/y.npy" --mxu 4 --cores 1 --batch 8 \
    --allow-nonfinite --save-onnx "$d/c.onnx" >"$d/out" 2>"$d/err"
rc=$?
if [ $rc -eq 0 ] && [ -e "$d/c.onnx" ] && grep -q "loss: nan" "$d/out"; then
    ok "tpu-train: --allow-nonfinite trains on as before (NaN loss, exit 0)"
else
    bad "tpu-train: --allow-nonfinite: exit $rc, $(tail -1 "$d/err")"
fi

# ---- 4. output paths in a missing folder: exit 2, one line, before any work ----
d="$W/paths"; mkdir -p "$d"
outbad() { # label opts...
    label=$1; shift
    # shellcheck disable=SC2086
    "$T" $D --epochs 2 "$@" >"$d/out" 2>"$d/err"
    rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$d/err")" -eq 1 ] && grep -q -- "^tpu-train: error: $label '.*missing" "$d/err" &&
       ! grep -q Epoch "$d/out" &&
       [ -z "$(ls "$d" | grep -v '^out$\|^err$')" ]; then
        ok "tpu-train: $label in a missing folder: exit 2 before any work ($(cat "$d/err"))"
    else
        bad "tpu-train: $label in a missing folder: exit $rc, $(head -c 300 "$d/err" | tr '\n' '|')"
    fi
}
outbad "--csv" --csv "$d/missing/c.csv"
outbad "--checkpoint" --checkpoint "$d/missing/c.ckpt"
outbad "--save-onnx" --save-onnx "$d/missing/c.onnx"
outbad "--plot" --csv "$d/c.csv" --plot "$d/missing/p.png"
outbad "--grads-dir" --grads-dir "$d/missing/g"
outbad "--work" --rtl 1 --work "$d/missing/w"
# checked when the options are read: before the model (missing here) is even opened
"$T" "$d/nomodel.onnx" --x-train "$W/x.npy" --y-train "$W/y.npy" --save-onnx "$d/missing/c.onnx" >"$d/out" 2>"$d/err"
rc=$?
if [ $rc -eq 2 ] && grep -q -- "--save-onnx '.*missing" "$d/err" && [ ! -e "$d/missing" ]; then
    ok "tpu-train: the output path is checked before the model is read ($(cat "$d/err"))"
else
    bad "tpu-train: output path checked after the inputs: exit $rc, $(head -c 300 "$d/err")"
fi
# a trailing slash names the folder
# shellcheck disable=SC2086
"$T" $D --steps-per-epoch 1 --grads-dir "$d/g/" >"$d/out" 2>"$d/err"
rc=$?
if [ $rc -eq 0 ] && [ -e "$d/g/grad0_w.npy" ]; then
    ok "tpu-train: --grads-dir DIR/ writes into DIR"
else
    bad "tpu-train: --grads-dir DIR/: exit $rc, $(tail -1 "$d/err")"
fi

if [ $fails -ne 0 ]; then echo "test-safety train: $fails FAILED"; exit 1; fi
echo "test-safety train: PASS"
