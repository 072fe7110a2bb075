# SPDX-License-Identifier: Apache-2.0
"""Compares a classifier's outputs from our machine with PyTorch's and ONNX Runtime's.

usage: /usr/bin/python3 models/compare.py --onnx MODEL.onnx --input X.npy --labels L.npy
           --ours OURS.npy --torch TORCH.npy [--ort ORT.npy] [--bf16 EMU.npy] [--name NAME]
           [--max-acc-diff POINTS] [--min-agree PCT] [--max-prob-diff P]
           [--ref-min-agree PCT] [--ref-max-prob-diff P]
           [--bf16-min-agree PCT] [--bf16-max-prob-diff P] [--json OUT.json]

Inputs: X.npy float32 with MODEL.onnx's input shape (N images); L.npy integer labels [N];
OURS/TORCH/ORT/EMU.npy float32 [N, C] probabilities (the ONNX output's shape); EMU is
PyTorch with every matmul operand rounded to bf16 (models/torch_run.py --bf16). Reports the
accuracy of each, the share of identical predictions (argmax) for each pair and the largest
absolute probability difference for each pair, then checks:
  ours:      |accuracy - PyTorch's| <= --max-acc-diff points (default 0.5), and the same
             against ORT's; identical predictions with PyTorch and with ORT >= --min-agree
             percent (default 99); max |prob - PyTorch's| and |prob - ORT's| <= --max-prob-diff
             (default: not checked); every value finite
  reference: PyTorch and ORT identical predictions >= --ref-min-agree percent (default 99.9)
             and max |prob difference| <= --ref-max-prob-diff (default 1e-4): the two fp32
             references agree, i.e. the files belong to this model
  bf16:      (with --bf16) ours and the emulation: identical predictions >= --bf16-min-agree
             percent (default 99.9), max |prob difference| <= --bf16-max-prob-diff (default
             1e-3): our machine differs from fp32 by its bf16 operands and little else
Prints a table and "compare NAME: PASS" or "compare NAME: FAIL: <failed checks>"; exit 0 on
PASS, 1 on FAIL, 2 on unusable input (one line "compare: error: ...").
"""
import argparse
import json
import math
import sys

import numpy as np


class InputError(Exception):
    pass


def load_npy(path, what):
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"{what} {path}: cannot read as .npy: {str(e).splitlines()[0]}") from None


def onnx_io(path):
    """(input dims, output dims) of the model's one graph input and output; None = dynamic."""
    try:
        import onnx
    except ImportError:
        raise InputError("the Python onnx module is missing (Debian python3-onnx)") from None
    try:
        m = onnx.load(path)
    except Exception as e:  # onnx raises DecodeError, OSError, ...
        raise InputError(f"{path}: cannot load as ONNX: {str(e).splitlines()[0]}") from None
    g = m.graph
    inits = {i.name for i in g.initializer}
    ins = [i for i in g.input if i.name not in inits]
    if len(ins) != 1 or len(g.output) != 1:
        raise InputError(f"{path}: {len(ins)} inputs and {len(g.output)} outputs, expected 1 and 1")

    def dims(v):
        tt = v.type.tensor_type
        if tt.elem_type != onnx.TensorProto.FLOAT:
            raise InputError(f"{path}: {v.name} is not float32")
        return [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]

    return dims(ins[0]), dims(g.output[0])


def check_shape(arr, dims, what, path, n=None):
    if arr.dtype != np.float32:
        raise InputError(f"{what} {path}: dtype {arr.dtype}, expected float32")
    ok = arr.ndim == len(dims) and all(d is None or d == s for d, s in zip(dims, arr.shape))
    if ok and n is not None and arr.shape[0] != n:
        ok = False
    if not ok:
        want = ", ".join("N" if d is None else str(d) for d in dims)
        raise InputError(f"{what} {path}: shape {list(arr.shape)}, expected [{want}]"
                         + (f" with N = {n}" if n is not None else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--labels", required=True)
    ap.add_argument("--ours", required=True)
    ap.add_argument("--torch", required=True)
    ap.add_argument("--ort")
    ap.add_argument("--bf16", metavar="EMU")
    ap.add_argument("--name", default="")
    ap.add_argument("--max-acc-diff", type=float, default=0.5, metavar="POINTS")
    ap.add_argument("--min-agree", type=float, default=99.0, metavar="PCT")
    ap.add_argument("--max-prob-diff", type=float, default=None, metavar="P")
    ap.add_argument("--ref-min-agree", type=float, default=99.9, metavar="PCT")
    ap.add_argument("--ref-max-prob-diff", type=float, default=1e-4, metavar="P")
    ap.add_argument("--bf16-min-agree", type=float, default=99.9, metavar="PCT")
    ap.add_argument("--bf16-max-prob-diff", type=float, default=1e-3, metavar="P")
    ap.add_argument("--json", metavar="OUT")
    a = ap.parse_args()
    name = a.name or a.onnx

    try:
        in_dims, out_dims = onnx_io(a.onnx)
        x = load_npy(a.input, "input")
        check_shape(x, in_dims, "input", a.input)
        if x.ndim == 0:
            raise InputError(f"input {a.input}: a scalar, expected a batch")
        n = x.shape[0]
        labels = load_npy(a.labels, "labels")
        if labels.dtype.kind not in "iu" or labels.shape != (n,):
            raise InputError(f"labels {a.labels}: {labels.dtype} {list(labels.shape)}, "
                             f"expected integers [{n}]")
        outs = {}
        for key, path in (("ours", a.ours), ("PyTorch", a.torch), ("ORT", a.ort), ("bf16emu", a.bf16)):
            if path is None:
                continue
            y = load_npy(path, key)
            check_shape(y, out_dims, key, path, n)
            if y.ndim != 2:
                raise InputError(f"{key} {path}: {y.ndim} dimensions, expected [N, classes]")
            outs[key] = y
        classes = outs["PyTorch"].shape[1]
        if n and (labels.min() < 0 or labels.max() >= classes):
            raise InputError(f"labels {a.labels}: values outside 0..{classes - 1}")
        for key in ("PyTorch", "ORT", "bf16emu"):
            if key in outs and not np.isfinite(outs[key]).all():
                raise InputError(f"the {key} outputs hold a non-finite value")
    except InputError as e:
        print(f"compare: error: {e}", file=sys.stderr)
        return 2
    if n == 0:
        print("compare: error: no images", file=sys.stderr)
        return 2

    pred = {k: v.argmax(axis=1) for k, v in outs.items()}
    acc = {k: 100.0 * float((p == labels).mean()) for k, p in pred.items()}
    keys = [k for k in ("ours", "PyTorch", "ORT", "bf16emu") if k in outs]
    pairs = [(p, q) for i, p in enumerate(keys) for q in keys[i + 1:]]
    agree, differ, maxdiff = {}, {}, {}
    for p, q in pairs:
        same = pred[p] == pred[q]
        agree[(p, q)] = 100.0 * float(same.mean())
        differ[(p, q)] = int((~same).sum())
        d = np.abs(outs[p].astype(np.float64) - outs[q].astype(np.float64))
        maxdiff[(p, q)] = float(np.nanmax(d)) if np.isfinite(d).any() else math.inf
        if not np.isfinite(d).all():
            maxdiff[(p, q)] = math.inf
    nonfinite = int((~np.isfinite(outs["ours"])).sum())

    print(f"compare {name}: {n} images, {classes} classes")
    print("  accuracy:  " + "  ".join(f"{k} {acc[k]:.2f} %" for k in keys))
    for p, q in pairs:
        print(f"  {p:>7} vs {q:<7}: identical predictions {agree[(p, q)]:6.2f} % "
              f"({differ[(p, q)]} differ), max |prob diff| {maxdiff[(p, q)]:.3g}")
    if nonfinite:
        print(f"  ours: {nonfinite} non-finite values")

    checks = []  # (passed, text)
    for ref in ("PyTorch", "ORT"):
        if ref not in outs:
            continue
        d = abs(acc["ours"] - acc[ref])
        checks.append((d <= a.max_acc_diff,
                       f"|accuracy ours - {ref}| {d:.2f} <= {a.max_acc_diff:g} points"))
        checks.append((agree[("ours", ref)] >= a.min_agree,
                       f"ours vs {ref} identical {agree[('ours', ref)]:.2f} % >= {a.min_agree:g} %"))
        if a.max_prob_diff is not None:
            checks.append((maxdiff[("ours", ref)] <= a.max_prob_diff,
                           f"ours vs {ref} max |prob diff| {maxdiff[('ours', ref)]:.3g} "
                           f"<= {a.max_prob_diff:g}"))
    checks.append((nonfinite == 0, f"ours: {nonfinite} non-finite values"))
    if "ORT" in outs:
        checks.append((agree[("PyTorch", "ORT")] >= a.ref_min_agree,
                       f"PyTorch vs ORT identical {agree[('PyTorch', 'ORT')]:.2f} % "
                       f">= {a.ref_min_agree:g} %"))
        checks.append((maxdiff[("PyTorch", "ORT")] <= a.ref_max_prob_diff,
                       f"PyTorch vs ORT max |prob diff| {maxdiff[('PyTorch', 'ORT')]:.3g} "
                       f"<= {a.ref_max_prob_diff:g}"))
    if "bf16emu" in outs:
        checks.append((agree[("ours", "bf16emu")] >= a.bf16_min_agree,
                       f"ours vs bf16emu identical {agree[('ours', 'bf16emu')]:.2f} % "
                       f">= {a.bf16_min_agree:g} %"))
        checks.append((maxdiff[("ours", "bf16emu")] <= a.bf16_max_prob_diff,
                       f"ours vs bf16emu max |prob diff| {maxdiff[('ours', 'bf16emu')]:.3g} "
                       f"<= {a.bf16_max_prob_diff:g}"))
    for ok, text in checks:
        print(f"  {'ok  ' if ok else 'FAIL'} {text}")

    if a.json:
        doc = {
            "name": name, "images": n, "classes": classes, "accuracy": acc,
            "identical_predictions": {f"{p}-{q}": agree[(p, q)] for p, q in pairs},
            "max_prob_diff": {f"{p}-{q}": maxdiff[(p, q)] for p, q in pairs},
            "checks": [{"ok": ok, "check": t} for ok, t in checks],
        }
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")

    failed = [t for ok, t in checks if not ok]
    if failed:
        print(f"compare {name}: FAIL: " + "; ".join(failed))
        return 1
    print(f"compare {name}: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
