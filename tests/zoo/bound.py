# SPDX-License-Identifier: Apache-2.0
"""The derived error bound of a whole network: docs/conformance.md's per-operator bounds
(tests/conformance/refops.py) composed through the graph, each node's bound taking its inputs'
bounds as their errors (e_a in the dot-product bound, E_x in the activations', ...). It is a
worst case for any execution of the numerics contract: every rounding where the machine may
round, every error amplified by |W| as if all had the same sign. Each element gets its own
bound, in float64.

usage: bound.py MODEL.onnx X.npy OURS.npy [--json OUT]
Prints the largest |ours - exact| / bound (must be <= 1), the bound's median and largest value
relative to the output's largest magnitude, and the exact value's distance to PyTorch's fp32
output when given (--fp32 F.npy). Exit 1 if an element is outside its bound."""
import argparse
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
import refops  # noqa: E402


def op_concat(node, ins):
    ax = refops.attrs(node).get("axis", 0)
    v = np.concatenate([i.v for i in ins], axis=ax)
    e = np.concatenate([i.e for i in ins], axis=ax)
    return refops.Val(v, e, bf=all(i.bf for i in ins), act=any(i.act for i in ins))


def _is_int(v):
    return v is not None and not v.act and v.raw is not None and np.issubdtype(np.asarray(v.raw).dtype, np.integer)


def _int_val(a):
    a = np.asarray(a, np.int64)
    return refops.Val(a.astype(np.float64), raw=a)


def op_shape(node, ins):
    """the input's shape: integers, exact (torch's shape arithmetic, e.g. ShuffleNetV2's
    x.chunk(2, dim=1) computes the Slice's ends from it)"""
    return _int_val(ins[0].v.shape)


def int_arith(node, ins):
    """Gather, Unsqueeze, Cast, Concat, Add, Sub, Mul, Div, Mod of integer constants (shape arithmetic, which the compiler
    folds): exact int64 (Div truncates, as ONNX's), or None for any other input"""
    if not ins or not all(i is None or _is_int(i) for i in ins) or ins[0] is None:
        return None
    r = [np.asarray(i.raw, np.int64) if i is not None else None for i in ins]
    op = node.op_type
    if op == "Gather":
        return _int_val(np.take(r[0], r[1], axis=refops.attrs(node).get("axis", 0)))
    if op == "Unsqueeze":  # opset 13+: the axes an input
        ax = r[1].reshape(-1).tolist() if len(r) > 1 else refops.attrs(node)["axes"]
        y = r[0]
        for a in sorted(int(a) % (y.ndim + len(ax)) for a in ax):
            y = np.expand_dims(y, a)
        return _int_val(y)
    if op == "Cast":
        return _int_val(r[0])
    if op == "Concat":
        return _int_val(np.concatenate(r, axis=refops.attrs(node).get("axis", 0)))
    if op == "Mod":  # fmod 0: the divisor's sign (numpy's), 1: C's
        fm = refops.attrs(node).get("fmod", 0)
        return _int_val(np.fmod(r[0], r[1]) if fm else np.mod(r[0], r[1]))
    if op == "Div":
        q = np.abs(r[0]) // np.abs(r[1])
        return _int_val(np.sign(r[0]) * np.sign(r[1]) * q)
    return _int_val({"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}[op](r[0], r[1]))


def _const(v):
    return v is not None and not v.act


def op_constantofshape(node, ins):
    """ConstantOfShape of an integer shape: its value (default a float 0) everywhere"""
    at = [a for a in node.attribute if a.name == "value"]
    val = numpy_helper.to_array(at[0].t).reshape(-1)[0] if at else np.float32(0)
    r = np.full(np.asarray(ins[0].raw, np.int64).tolist(), val)
    return refops.Val(r.astype(np.float64), raw=r if np.issubdtype(r.dtype, np.integer) else None)


def const_mask_op(node, ins):
    """Equal, Where, Expand of constants (ViT's class token expanded to the batch, as torch
    writes it): exact, or None when an input is an activation"""
    if not all(i is None or _const(i) for i in ins):
        return None
    raw = [np.asarray(i.raw) if i.raw is not None else i.v for i in ins]
    if node.op_type == "Equal":
        return _int_val((raw[0] == raw[1]).astype(np.int64))
    if node.op_type == "Where":
        y = np.where(raw[0].astype(bool), raw[1], raw[2])
        return _int_val(y) if np.issubdtype(y.dtype, np.integer) else refops.Val(y)
    shape = np.broadcast_shapes(ins[0].v.shape, tuple(np.asarray(ins[1].raw, np.int64).tolist()))
    y = np.broadcast_to(raw[0], shape).copy()
    return _int_val(y) if np.issubdtype(y.dtype, np.integer) else refops.Val(y.astype(np.float64))


def const_scatter_not(node, ins):
    """ScatterND (reduction none) and Not of constants (Swin's shift mask, which the compiler
    folds): exact"""
    if not all(i is None or _const(i) for i in ins):
        return no_reference(node, ins)
    raw = [np.asarray(i.raw) if i.raw is not None else i.v for i in ins]
    if node.op_type == "Not":
        return _int_val(np.logical_not(raw[0].astype(bool)).astype(np.int64))
    y = raw[0].copy()
    idx = np.asarray(raw[1], np.int64)
    for k in np.ndindex(*idx.shape[:-1]):
        y[tuple(idx[k])] = raw[2][k]
    return _int_val(y) if np.issubdtype(y.dtype, np.integer) else refops.Val(y.astype(np.float64))


def no_reference(node, ins):
    raise refops.NoReference("no reference for operator %s of an activation" % node.op_type)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("x")
    ap.add_argument("ours")
    ap.add_argument("--fp32")
    ap.add_argument("--json")
    ap.add_argument("--layers", action="store_true", help="print the bound after every node")
    a = ap.parse_args()
    m = onnx.load(a.model)
    g = m.graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for n in g.node:  # Constant nodes: their value
        if n.op_type == "Constant":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    keep = [n for n in g.node if n.op_type != "Constant"]
    del g.node[:]
    g.node.extend(keep)
    refops.OPS.setdefault("Concat", op_concat)
    refops.OPS.setdefault("Shape", op_shape)
    refops.OPS.setdefault("ConstantOfShape", op_constantofshape)
    for name in ("Equal", "Where", "Expand"):
        def masked(node, ins, fn=refops.OPS.get(name, no_reference)):
            y = const_mask_op(node, ins)
            return fn(node, ins) if y is None else y
        refops.OPS[name] = masked
    refops.OPS.setdefault("ScatterND", const_scatter_not)
    refops.OPS.setdefault("Not", const_scatter_not)
    refops.OPS.setdefault("Unsqueeze", no_reference)
    refops.OPS.setdefault("Cast", no_reference)
    refops.OPS.setdefault("Mod", no_reference)
    for name in ("Gather", "Unsqueeze", "Cast", "Concat", "Add", "Sub", "Mul", "Div", "Mod"):
        def folded(node, ins, fn=refops.OPS[name]):
            y = int_arith(node, ins)
            return fn(node, ins) if y is None else y
        refops.OPS[name] = folded
    def unsqueeze_const(node, ins, fn=refops.OPS["Unsqueeze"]):
        """Unsqueeze of a float constant (Swin's mask): exact"""
        if ins[0] is None or ins[0].act or _is_int(ins[0]):
            return fn(node, ins)
        ax = np.asarray(ins[1].raw, np.int64).reshape(-1).tolist()
        y = ins[0].v
        for a in sorted(int(a) % (y.ndim + len(ax)) for a in ax):
            y = np.expand_dims(y, a)
        return refops.Val(y)
    refops.OPS["Unsqueeze"] = unsqueeze_const
    for name in ("Slice", "Reshape", "Transpose"):  # of an integer constant: the integers kept
        def moved(node, ins, fn=refops.OPS[name]):
            y = fn(node, ins)
            if _is_int(ins[0]):
                y = _int_val(np.rint(y.v))
            return y
        refops.OPS[name] = moved
    x = np.load(a.x)
    # per node: the bound relative to the node's largest output magnitude (how it grows
    # with depth)
    growth = []
    for name, fn in list(refops.OPS.items()):
        def wrap(node, ins, fn=fn):
            y = fn(node, ins)
            y.e = np.where(np.isnan(y.e), np.inf, y.e)  # inf x 0 in a vacuous bound
            if y.v.size:  # (an empty shape tensor: nothing to record)
                sc = float(np.abs(y.v).max()) or 1.0
                growth.append((node.name or node.op_type, node.op_type, float(y.e.max()) / sc,
                               float(np.median(y.e)) / sc))
            return y
        refops.OPS[name] = wrap
    y = refops.evaluate(g, x, consts)[0]
    o = np.load(a.ours).astype(np.float64)
    if o.shape != y.v.shape:
        print("bound: shape %s, expected %s" % (o.shape, y.v.shape))
        sys.exit(1)
    err = np.abs(o - y.v)
    ratio = err / y.e
    scale = np.abs(y.v).max()
    r = {"worst_ratio": float(ratio.max()), "max_err": float(err.max()),
         "bound_median": float(np.median(y.e)), "bound_max": float(y.e.max()),
         "out_max": float(scale)}
    if a.fp32:
        r["exact_vs_fp32"] = float(np.abs(np.load(a.fp32).astype(np.float64) - y.v).max())
    print("bound: max |ours - exact| %.3g; bound median %.3g, max %.3g (outputs up to %.3g); "
          "worst |ours - exact| / bound %.3g" % (r["max_err"], r["bound_median"], r["bound_max"],
                                                scale, r["worst_ratio"]))
    # how the bound grows with depth: the first node where it exceeds the largest output
    # magnitude (from there on it guarantees nothing), and the geometric mean growth per
    # dot-product layer (Conv / Gemm / MatMul) before that
    dots = [(i, g_[2]) for i, g_ in enumerate(growth) if g_[1] in ("Conv", "Gemm", "MatMul")]
    first = next((i for i, g_ in enumerate(growth) if g_[2] > 1), None)
    fin = [(i, v) for (i, v) in dots if np.isfinite(v) and (first is None or i <= first)]
    per = (fin[-1][1] / fin[0][1]) ** (1.0 / (len(fin) - 1)) if len(fin) > 1 and fin[0][1] > 0 else float("nan")
    r.update({"nodes": len(growth), "dot_layers": len(dots), "first_vacuous_node": first,
              "first_vacuous_dot_layer": sum(1 for (i, _) in dots if first is not None and i <= first) or None,
              "growth_per_dot_layer": per, "first_layer_rel_bound": dots[0][1] if dots else None})
    print("bound: %d nodes, %d Conv/Gemm; relative bound after the first %.3g, growing x%.3g per "
          "Conv/Gemm; %s" % (len(growth), len(dots), r["first_layer_rel_bound"] or 0, per,
                             "exceeds the outputs from node %d (%s, Conv/Gemm %s of %d) on" % (
                                 first, growth[first][0], r["first_vacuous_dot_layer"], len(dots))
                             if first is not None else "below the outputs throughout"))
    if a.layers:
        for (nm, op, mx, md) in growth:
            print("  %-40s %-20s bound / max|y|: largest %.3g, median %.3g" % (nm, op, mx, md))
    r["layers"] = growth
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f)
    sys.exit(0 if r["worst_ratio"] <= 1 else 1)


if __name__ == "__main__":
    main()
