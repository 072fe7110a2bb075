# SPDX-License-Identifier: Apache-2.0
"""test-compiler 2m (issue 32, the first chunk): torch 1.13 models with a LayerNorm and with
the operators a TransformerEncoderLayer needs beside attention, compiled and run by our tools
and compared with PyTorch fp32 within a bound derived from the numerics contract.

  ln       nn.LayerNorm(37) at opset 14 (torch writes ReduceMean, Sub, Pow, ReduceMean, Add,
           Sqrt, Div, Mul, Add; fold.c matches it into one LayerNorm node)
  ln17     nn.LayerNorm((4, 9)) at opset 17 (torch writes LayerNormalization, axis -2)
  ops      Linear, Softmax over a middle axis, Exp, Sqrt, Div of two activations, Pow 2,
           ReduceMean and ReduceMax over a middle axis, x / 3 (a Div by a constant)
  special  Sqrt of 0, -0, +Inf, 4, 0.25 (exact) and of a subnormal (DAZ: 0), Exp of -Inf (0),
           +-0 (1), +Inf, e (1 bf16 ulp), x / relu(x) (-1 / +0 = -Inf, 0 / 0 and Inf / Inf NaN)

The bound (tests/conformance/refops.py, docs/conformance.md): for `ops` the per-operator
bounds composed through the graph (refops.evaluate, each node's inputs carrying their
errors); for `ln` and `ln17` the bound of the compiler's LayerNorm lowering
(refops.op_layernormalization: the MXU row sums, one fp32 rounding per VPU step, rsqrt's 0.52
ulp), the input rounded to bf16 first. Every output element must lie within its bound of the
exact value (float64), and PyTorch's fp32 result within the same bound plus its own fp32
error of the exact value (|torch - exact| itself is checked below 1e-5 relative).

The test can fail: each bound is also applied to a wrong answer (PyTorch's output with one
element moved by 1.5 times its bound, and for the LayerNorm the output of a LayerNorm without
its bias), which must be reported as outside the bound; and the bound must say something (its
largest value below 1/8 of the output's largest magnitude).

usage: tf_ops.py WORKDIR BUILD_TOOLS     (exit 1 on any failure)
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
import refops  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tchelp  # noqa: E402

W, TOOLS = sys.argv[1], sys.argv[2]
os.makedirs(W, exist_ok=True)
torch.manual_seed(3)
fails = 0


def say(ok, msg):
    global fails
    print(("ok: " if ok else "FAIL: ") + msg)
    if not ok:
        fails += 1


def run(name, onnx_path, x, N, cores=1):
    d = os.path.join(W, "%s_N%d_C%d" % (name, N, cores))
    r = subprocess.run([os.path.join(TOOLS, "tpu-compile"), onnx_path, "--mxu", str(N), "--cores",
                        str(cores), "--batch", str(x.shape[0]), "-o", d], capture_output=True, text=True)
    if r.returncode:
        say(False, "%s N=%d: tpu-compile: %s" % (name, N, r.stderr.strip()))
        return None
    return tchelp.infer(TOOLS, d, x, name, N, say)


def within(got, ref):
    """(every element within its bound, the worst |got - exact| / bound)"""
    err = np.abs(got.astype(np.float64) - ref.v)
    ratio = np.where(ref.e > 0, err / np.where(ref.e > 0, ref.e, 1), np.where(err > 0, np.inf, 0))
    ok = got.shape == ref.v.shape and bool(np.all((err <= ref.e) | (np.isnan(got) & np.isnan(ref.v))))
    return ok, float(np.nanmax(ratio))


def check(name, ref, torch_y, outs, wrong):
    """ref: the refops Val (exact value, bound); outs: N -> our output; wrong: a wrong answer."""
    tex = np.abs(torch_y.astype(np.float64) - ref.v).max() / max(np.abs(ref.v).max(), 1e-30)
    say(tex < 1e-5, "%s: PyTorch fp32 agrees with the float64 reference (%.2g relative)" % (name, tex))
    say(ref.e.max() < np.abs(ref.v).max() / 8,
        "%s: the bound says something (largest %.3g, outputs up to %.3g)" % (name, ref.e.max(), np.abs(ref.v).max()))
    first = None
    for N, y in outs:
        if y is None:
            continue
        ok, worst = within(y, ref)
        d_t = np.abs(y.astype(np.float64) - torch_y).max()
        say(ok, "%s %s: every element within the derived bound (worst %.3f of it); max |ours - PyTorch| = %.3g"
            % (name, N, worst, d_t))
        okt = bool(np.all(np.abs(y.astype(np.float64) - torch_y) <= ref.e + np.abs(torch_y - ref.v)))
        say(okt, "%s %s: within the bound of PyTorch fp32" % (name, N))
        if first is None:
            first = y
        else:
            say(np.array_equal(first.view(np.uint32), y.view(np.uint32)), "%s %s: the same bits as at the first N" % (name, N))
    for what, w in wrong:
        ok, worst = within(w, ref)
        say(not ok, "%s: the check rejects a wrong answer (%s: %.1f times the bound)" % (name, what, worst))


def vin(x):
    return refops.Val(x.astype(np.float64), act=True)


# ---- ln: nn.LayerNorm(37) at opset 14: the pattern ----
ln = torch.nn.LayerNorm(37)
with torch.no_grad():
    ln.weight.normal_()
    ln.bias.normal_()
x = (torch.randn(3, 5, 37) * 2 + 0.7)
p = os.path.join(W, "ln.onnx")
torch.onnx.export(ln, x, p, opset_version=14)
ops = [n.op_type for n in onnx.load(p).graph.node]
say(ops == ["ReduceMean", "Sub", "Constant", "Pow", "ReduceMean", "Constant", "Add", "Sqrt", "Div", "Mul", "Add"],
    "ln: torch 1.13 writes the LayerNorm pattern: " + " ".join(ops))
with torch.no_grad():
    ty = ln(x).numpy().astype(np.float64)
node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1, epsilon=ln.eps)
sv = refops.Val(ln.weight.detach().numpy().astype(np.float64))
bv = refops.Val(ln.bias.detach().numpy().astype(np.float64))
ref = refops.rb(refops.op_layernormalization(node, [vin(x.numpy()), sv, bv]))
with torch.no_grad():
    nobias = (ln(x) - ln.bias).numpy().astype(np.float64)
moved = ty.copy()
moved[1, 2, 3] = ref.v[1, 2, 3] + 1.5 * ref.e[1, 2, 3]
outs = [("N=%d" % N, run("ln", p, x.numpy(), N)) for N in (4, 8, 16)]
outs.append(("N=8 C=2", run("ln", p, x.numpy(), 8, cores=2)))
check("ln", ref, ty, outs, [("one element moved", moved), ("LayerNorm without its bias", nobias)])
for N in (4, 8, 16):
    s = open(os.path.join(W, "ln_N%d_C1" % N, "model.s")).read()
    say("LayerNorm(pattern)" in s and "vop rsqrt" in s, "ln N=%d: one LayerNorm node (rsqrt, MXU row sums)" % N)

# ---- ln17: LayerNormalization-17 over the last two axes ----
ln2 = torch.nn.LayerNorm((4, 9), eps=1e-3)
with torch.no_grad():
    ln2.weight.normal_()
    ln2.bias.normal_()
x2 = torch.randn(2, 6, 4, 9) * 3
p2 = os.path.join(W, "ln17.onnx")
torch.onnx.export(ln2, x2, p2, opset_version=17)
ops = [n.op_type for n in onnx.load(p2).graph.node]
say(ops == ["LayerNormalization"], "ln17: torch 1.13 at opset 17 writes " + " ".join(ops))
node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-2, epsilon=1e-3)
ref2 = refops.rb(refops.op_layernormalization(node, [vin(x2.numpy()), refops.Val(ln2.weight.detach().numpy().astype(np.float64)),
                                                     refops.Val(ln2.bias.detach().numpy().astype(np.float64))]))
with torch.no_grad():
    ty2 = ln2(x2).numpy().astype(np.float64)
    nob2 = (ln2(x2) - ln2.bias).numpy().astype(np.float64)
check("ln17", ref2, ty2, [("N=%d" % N, run("ln17", p2, x2.numpy(), N)) for N in (4, 8)], [("without its bias", nob2)])


# ---- ops: the other new operators, composed ----
class Ops(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        y = self.fc(x)                          # MatMul + Add on [B, 6, 16]
        a = torch.softmax(y, dim=1)             # Softmax over the middle axis
        b = torch.exp(y * 0.25)                 # Mul by a constant, Exp
        c = torch.sqrt(b)                       # Sqrt
        d = a / c                               # Div of two activations
        e = d ** 2                              # Pow 2
        f = e.mean(dim=1) + torch.amax(d, dim=1)  # ReduceMean, ReduceMax over axis 1, Add
        return f / 3.0                          # Div by a constant


om = Ops()
x3 = torch.randn(4, 6, 16)
p3 = os.path.join(W, "ops.onnx")
torch.onnx.export(om, x3, p3, opset_version=14)
g = onnx.load(p3).graph
ops = sorted(set(n.op_type for n in g.node))
say({"Softmax", "Exp", "Sqrt", "Div", "Pow", "ReduceMean", "ReduceMax"} <= set(ops), "ops: the model holds " + " ".join(ops))
consts = {}
for t in g.initializer:
    consts[t.name] = numpy_helper.to_array(t)
for n in g.node:  # Constant nodes (the 0.25, 2, 3 torch writes) as constants of the graph
    if n.op_type == "Constant":
        consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
g2 = helper.make_graph([n for n in g.node if n.op_type != "Constant"], "ops", g.input, g.output)
ref3 = refops.evaluate(g2, x3.numpy().astype(np.float64), consts)[0]
with torch.no_grad():
    ty3 = om(x3).numpy().astype(np.float64)
moved3 = ty3.copy()
moved3[2, 5] = ref3.v[2, 5] - 1.5 * ref3.e[2, 5]
check("ops", ref3, ty3, [("N=%d" % N, run("ops", p3, x3.numpy(), N)) for N in (4, 8, 16)], [("one element moved", moved3)])

# ---- special values (IEEE's: the expected values are written from the definitions) ----
X = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 6])
Y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 6])
for name, nodes, inits, xv, want in (
        ("sqrt_special", [helper.make_node("Sqrt", ["x"], ["y"])], [],
         [0.0, -0.0, np.inf, 4.0, 0.25, 1e-40], [0.0, -0.0, np.inf, 2.0, 0.5, 0.0]),  # 1e-40: DAZ
        ("exp_special", [helper.make_node("Exp", ["x"], ["y"])], [],
         [-np.inf, 0.0, -0.0, np.inf, -200.0, 1.0], [0.0, 1.0, 1.0, np.inf, 0.0, np.e]),
        ("div_zero", [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Div", ["x", "r"], ["y"])], [],
         [1.0, -1.0, 0.0, 2.0, np.inf, 3.0], [1.0, -np.inf, np.nan, 1.0, np.nan, 1.0])):  # x / relu(x)
    m = helper.make_model(helper.make_graph(nodes, name, [X], [Y], inits), opset_imports=[helper.make_opsetid("", 14)])
    pp = os.path.join(W, name + ".onnx")
    onnx.save(m, pp)
    y = run(name, pp, np.array([xv], np.float32), 4)
    if y is None:
        continue
    want = np.array([want], np.float32)
    if name == "exp_special":  # e rounded: within 1 bf16 ulp (the input 1.0 is exact in bf16)
        with np.errstate(invalid="ignore"):
            same = np.array_equal(np.isnan(y), np.isnan(want)) and np.all(
                (y == want) | (np.abs(y - want) <= 2.0 ** -7 * np.abs(want)))
    else:
        same = np.array_equal(np.isnan(y), np.isnan(want)) and np.array_equal(
            np.where(np.isnan(y), 0, y).view(np.uint32), np.where(np.isnan(want), 0, want).view(np.uint32))
    say(bool(same), "%s: %s -> %s (expected %s)" % (name, xv, y[0].tolist(), want[0].tolist()))

# ---- refused with one line naming the node (exit 2, nothing written) ----
X3 = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 4, 5])
Y3 = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
c3 = helper.make_tensor("three", onnx.TensorProto.FLOAT, [], [3.0])
sc = helper.make_tensor("s", onnx.TensorProto.FLOAT, [5], [1.0] * 5)
for name, node, inits, opset, words in (
        ("pow3", helper.make_node("Pow", ["x", "three"], ["y"], name="cube"), [c3], 14, ["'cube'", "exponent 3"]),
        ("reduce_gap", helper.make_node("ReduceMean", ["x"], ["y"], name="rm", axes=[1, 3]), [], 13, ["'rm'", "not contiguous"]),
        ("reduce_batch", helper.make_node("ReduceMax", ["x"], ["y"], name="rb", axes=[0]), [], 13, ["'rb'", "batch"]),
        ("softmax_attr", helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1, extra=2), [], 13, ["'sm'", "'extra'"]),
        ("softmax_batch", helper.make_node("Softmax", ["x"], ["y"], name="sm0", axis=0), [], 13, ["'sm0'", "batch"]),
        ("ln_stash", helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln0", stash_type=0), [sc], 17, ["'ln0'", "stash_type 0"]),
        ("ln_attr", helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln1", foo=1), [sc], 17, ["'ln1'", "'foo'"]),
        ("sqrt_attr", helper.make_node("Sqrt", ["x"], ["y"], name="sq", bar=1.0), [], 14, ["'sq'", "'bar'"])):
    m = helper.make_model(helper.make_graph([node], name, [X3], [Y3], inits), opset_imports=[helper.make_opsetid("", opset)])
    pp = os.path.join(W, "bad_" + name + ".onnx")
    onnx.save(m, pp)
    out = os.path.join(W, "bad_" + name)
    r = subprocess.run([os.path.join(TOOLS, "tpu-compile"), pp, "--mxu", "4", "--cores", "1", "-o", out],
                       capture_output=True, text=True)
    lines = r.stderr.strip().split("\n")
    good = (r.returncode == 2 and len(lines) == 1 and lines[0].startswith("tpu-compile: error: ")
            and all(w in lines[0] for w in words) and not os.path.exists(out))
    say(good, "%s refused: exit %d: %s" % (name, r.returncode, r.stderr.strip()))

print("tf_ops: %d failure(s)" % fails)
sys.exit(1 if fails else 0)
