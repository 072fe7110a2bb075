# SPDX-License-Identifier: Apache-2.0
# test-safety, tpu-explore (issue 28), SOURCED by tests/safety/tools.sh (". file": it uses
# tools.sh's ok, bad, refused and listing, $W (the scratch folder), $T (build/tools) and $PY, and does not exit):
#  - -o and --png are checked before any work: an existing directory (also "DIR/"), a file in
#    a missing folder, the model itself (by device and inode: a hard link too), --png the
#    same as -o: one line "tpu-explore: error: -o 'PATH': ...", exit 2, no compile started,
#    nothing written (no DIR.tmp);
#  - a good -o writes the CSV and nothing else (no work folder left in $TMPDIR);
#  - SIGTERM and SIGINT in the middle of a sweep: the process ends by the signal, no temporary
#    file or folder is left and no compile keeps running.
# A stand-in tpu-compile (--tools) that records its call and hangs makes "no compile started"
# and "interrupted in the middle" deterministic.

# refused NAME WANT CMD... and listing DIR are tools.sh's

EX_D=$W/explore; mkdir -p "$EX_D/isdir" "$EX_D/tmp" "$EX_D/out"
$PY - "$EX_D/mlp.onnx" <<'PY' || bad "tpu-explore: making the model"
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
rng = np.random.default_rng(1)
def t(name, *shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)
nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("Gemm", ["r", "w2", "b2"], ["z"], transB=1),
         helper.make_node("Softmax", ["z"], ["y"], axis=1)]
g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 20])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
                      [t("w1", 8, 20), t("b1", 8), t("w2", 3, 8), t("b2", 3)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
PY
# stand-in tpu-compiles that say they were called: "fail" fails at once (a bad output must
# be refused before any compile); "slow" hangs (exec: the sleep is the process tpu-explore
# started), so that an interrupt lands in the middle of a sweep
mkdir -p "$EX_D/slow" "$EX_D/fail"
printf '#!/bin/sh\necho $$ >>"%s"\nexec sleep 30\n' "$EX_D/slow/called" >"$EX_D/slow/tpu-compile"
printf '#!/bin/sh\necho $$ >>"%s"\nexit 1\n' "$EX_D/fail/called" >"$EX_D/fail/tpu-compile"
chmod +x "$EX_D/slow/tpu-compile" "$EX_D/fail/tpu-compile"
EX_E=$T/tpu-explore
ex_run() { TMPDIR=$EX_D/tmp "$EX_E" "$EX_D/mlp.onnx" --mxu 8 --cores 1 --batch 4 "$@"; }
for ex_o in "isdir" "isdir/" "nodir/e.csv" "mlp.onnx"; do
    case $ex_o in nodir*) ex_want="'$EX_D/nodir'";; mlp*) ex_want="same file as the model";; *) ex_want="directory";; esac
    refused "tpu-explore -o $ex_o" "$ex_want" ex_run -o "$EX_D/$ex_o" --tools "$EX_D/fail"
    grep -q "^tpu-explore: error: -o '$EX_D/$ex_o'" "$W/r.err" || bad "tpu-explore -o $ex_o: the message does not start with the option and the path"
done
refused "tpu-explore --png nodir/p.png" "'$EX_D/nodir'" ex_run -o "$EX_D/out/e.csv" --png "$EX_D/nodir/p.png" --tools "$EX_D/fail"
refused "tpu-explore --png the same as -o" "same file" ex_run -o "$EX_D/out/e.csv" --png "$EX_D/out/e.csv" --tools "$EX_D/fail"
# the same with the real compiles (the issue's commands): no traceback, no DIR.tmp
for ex_o in "isdir" "nodir/e.csv"; do
    refused "tpu-explore -o $ex_o (real tpu-compile)" "-o '$EX_D/$ex_o'" ex_run -o "$EX_D/$ex_o"
done
ln "$EX_D/mlp.onnx" "$EX_D/hard.onnx"
refused "tpu-explore --png a hard link of the model" "same file as the model" ex_run -o "$EX_D/out/e.csv" --png "$EX_D/hard.onnx" --tools "$EX_D/fail"
[ ! -e "$EX_D/fail/called" ] && ok "tpu-explore: no compile started for a bad output" \
    || bad "tpu-explore compiled before checking its outputs"
ex_left=$(find "$EX_D/isdir" "$EX_D/out" "$EX_D/tmp" -mindepth 1; find "$EX_D" -maxdepth 1 -name '*.tmp*')
[ "$(listing "$EX_D")" = "fail hard.onnx isdir mlp.onnx out slow tmp " ] && [ -z "$ex_left" ] \
    && ok "tpu-explore: nothing written for a bad output (no DIR.tmp)" || bad "tpu-explore left $(listing "$EX_D") $ex_left"
# the real sweep: the CSV is written, and nothing else
ex_run -o "$EX_D/out/e.csv" >/dev/null 2>"$EX_D/err" && [ -s "$EX_D/out/e.csv" ] && [ "$(listing "$EX_D/out")" = "e.csv " ] \
    && [ -z "$(ls -A "$EX_D/tmp")" ] && ok "tpu-explore -o out/e.csv" || bad "tpu-explore -o out/e.csv: $(tail -n 3 "$EX_D/err") $(listing "$EX_D/out")"
# SIGTERM and SIGINT in the middle of a sweep: no temporary file or folder, no compile left
# running, the process ends by the signal. SIGINT is sent to a process that has it at the
# default (a background job of sh ignores it; this python resets it before exec).
for ex_sig in TERM INT; do
    rm -f "$EX_D/slow/called"
    TMPDIR=$EX_D/tmp $PY -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
        "$EX_E" "$EX_D/mlp.onnx" --mxu 8,16 --cores 1 --batch 4 -j 2 -o "$EX_D/out/e.csv" --tools "$EX_D/slow" 2>"$EX_D/err" &
    ex_pid=$!
    ex_i=0; while [ ! -s "$EX_D/slow/called" ] && [ $ex_i -lt 100 ]; do sleep 0.1; ex_i=$((ex_i + 1)); done
    sleep 0.2
    kill -$ex_sig $ex_pid; { wait $ex_pid; ex_rc=$?; } 2>/dev/null
    ex_left=$(find "$EX_D/tmp" "$EX_D/out" -mindepth 1 ! -name e.csv; find "$EX_D" -name '*.tmp*')
    ex_alive=""
    for ex_c in $(cat "$EX_D/slow/called" 2>/dev/null); do kill -0 "$ex_c" 2>/dev/null && ex_alive="$ex_alive $ex_c"; done
    if [ $ex_rc -gt 128 ] && [ -z "$ex_left" ] && [ -z "$ex_alive" ] && [ -s "$EX_D/slow/called" ]; then
        ok "tpu-explore SIG$ex_sig mid-sweep: exit $ex_rc, no temporary left, no compile running"
    else
        bad "tpu-explore SIG$ex_sig: exit $ex_rc, left: $ex_left, compiles still running:$ex_alive; $(tail -n 2 "$EX_D/err")"
        for ex_c in $ex_alive; do kill "$ex_c" 2>/dev/null; done
    fi
done

