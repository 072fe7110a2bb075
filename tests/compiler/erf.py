# SPDX-License-Identifier: Apache-2.0
"""test-compiler-erf (issue 32, the exact GELU): ONNX Erf on the VPU's `vop erf`, compiled by
tpu-compile and run by tpu-infer on the C model, at N = 4 and 8.

  erf    one Erf node on x [4, 48]: bf16 values across every segment of the VPU's erf (0, +-0,
         subnormals, tiny, 1/2, 1, 2, 3.9, 4, large, Inf) and random ones of both signs
  gelu   torch 1.13's export (opset 14) of Linear(24, 40), nn.GELU() (the exact GELU:
         x * 0.5 * (1 + Erf(x / 1.4142135))), Linear(40, 12), x [4, 24]; folded into one
         Gelu(erf) node (the report says so)
  cgelu  Conv2d(3, 8, 3, padding 1), nn.GELU(), Conv2d(8, 4, 3, padding 1) on x [2, 3, 6, 6]:
         the Gelu(erf) node on a Conv output (image rows, a padded buffer for the next Conv)
  gelu2  the same pattern written with the 0.5 first, x * ((1 + Erf(x / sqrt 2)) * 0.5), on
         x [6, 20] (folded too), and once with Erf's output read again outside the pattern
         (gelu(x) + erf(x / sqrt 2): not folded, the nodes run one by one)

The tolerance, from the numerics contract (docs/conformance.md "Erf"; refops.op_erf):
an Erf node reads a bf16 activation x~ with error E_x from the exact x, and writes
y = fl(erf_VPU(x~)): erf_VPU is within 0.75 fp32 ulp of erf (test-vpu-model), <= 2^-23 * 0.75
|y| relatively, and the store to bf16 adds <= 2^-8 of it; in bf16 in / bf16 out the contract
measures < 1 bf16 ulp (2^-7 relative). So
    |y - erf(x)| <= max|erf'| on [x - E_x, x + E_x] * E_x + r (|erf(x)| + prop) + 2^-126,
    r = max(2^-7, 0.75 * 2^-23 + 2^-8 (1 + 0.75 * 2^-23)),  max|erf'| = 2/sqrt(pi) e^(-t^2)
at t, the point of the interval nearest 0. Composed through the graph (refops.evaluate: Gemm's
dot-product bound, Div by a constant, Add, Mul: docs/conformance.md), every output element
must be within its bound of the float64 value of the exact network. For the lone Erf node
(E_x = 0: the inputs are bf16 values) the contract says more: the VPU's erf is correctly
rounded for every bf16 input (docs/vpu.md "erf"), so each (fp32) output rounded to bf16 must
be erf(x) rounded to bf16, bit for bit.
Also PyTorch fp32 against ours: within 2 x PyTorch bf16's own error + 1e-3 (test-zoo's limit).

It can fail: the same checks reject wrong answers: tanh(x) for erf(x), |erf(x)| (the sign
lost), erf(x) one bf16 ulp off in one element, and the GELU network's output with one
element moved by 1.5 times its bound.

usage: erf.py WORKDIR BUILD_TOOLS     (exit 1 on any failure)
"""
import copy
import math
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
FAILS = []


def say(ok, msg):
    print("%s: %s" % ("ok" if ok else "FAIL", msg), flush=True)
    if not ok:
        FAILS.append(msg)


def run(name, path, x, N):
    return tchelp.compile_infer(TOOLS, W, name, path, x, N, say)


def reference(path, x):
    """refops.evaluate of the model (Constant nodes as constants): the exact value and bound"""
    g = onnx.load(path).graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    g2 = helper.make_graph([n for n in g.node if n.op_type != "Constant"], "ref", g.input, g.output)
    return refops.evaluate(g2, x.astype(np.float64), consts)[0]


def within(got, ref):
    """(every element within its bound, the worst |got - exact| / bound)"""
    got = np.asarray(got, np.float64)
    if got.shape != ref.v.shape:
        return False, math.inf
    err = np.where(got == ref.v, 0.0, np.abs(got - ref.v))  # equal infinities: no error
    ok = bool(np.all(err <= ref.e))
    return ok, float(np.max(err / ref.e))


def bf16_round(a):
    """float64 -> the nearest bf16 (RNE), as float64; FTZ below 2^-126"""
    f = np.asarray(a, np.float64).astype(np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    r = u.astype(np.uint32).view(np.float32).astype(np.float64)
    return np.where(np.abs(r) < 2.0 ** -126, np.copysign(0.0, r), r)


def erf_node():
    X = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4, 48])
    Y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4, 48])
    m = helper.make_model(helper.make_graph([helper.make_node("Erf", ["x"], ["y"], name="erf")],
                                            "erf", [X], [Y]),
                          opset_imports=[helper.make_opsetid("", 13)])
    path = os.path.join(W, "erf.onnx")
    onnx.save(m, path)
    edges = [0.0, -0.0, 1e-30, -1e-30, 2.0 ** -126, 1e-3, 0.25, 0.4999, 0.5, -0.5, 0.75, 1.0,
             -1.0, 1.5, 2.0, -2.0, 2.5, 3.0, 3.5, 3.9, -3.9, 4.0, -4.0, 10.0, 1e30, -1e30,
             math.inf, -math.inf]
    rng = np.random.RandomState(5)
    x = np.concatenate([np.array(edges), rng.randn(4 * 48 - len(edges)) * 1.5])
    x = bf16_round(x).reshape(4, 48).astype(np.float32)
    x[0, 4] = np.float32(1e-40)  # a subnormal: DAZ, erf = +0
    ref = reference(path, x)
    # the contract's measured property: correctly rounded in bf16 (subnormal inputs are 0)
    xd = np.where(np.abs(x) < 2.0 ** -126, np.copysign(0.0, x), x.astype(np.float64))
    cr = bf16_round(np.vectorize(math.erf)(xd))
    cr = np.where(xd == 0, np.copysign(0.0, xd), cr)
    wrong = {"tanh(x)": bf16_round(np.tanh(xd)), "|erf(x)|": np.abs(cr),
             "one element 1 bf16 ulp off": cr.copy()}
    wrong["one element 1 bf16 ulp off"][1, 3] *= 1 + 2.0 ** -7
    for name, w in wrong.items():
        ok, _ = within(w, ref)
        say(not (ok and np.array_equal(w, cr)), "erf: a wrong answer (%s) is rejected" % name)
    for N in (4, 8):
        y = run("erf", path, x, N)
        if y is None:
            continue
        ok, worst = within(y, ref)
        say(ok, "erf N=%d: every element within its bound (worst %.3g of it)" % (N, worst))
        yb = bf16_round(y)
        same = np.array_equal(yb, cr) and np.array_equal(np.signbit(yb), np.signbit(cr))
        bad = np.argwhere((yb != cr) | (np.signbit(yb) != np.signbit(cr)))
        say(same, "erf N=%d: every output rounded to bf16 is erf(x) correctly rounded to bf16%s" % (
            N, "" if same else " (first difference at %s: %r, expected %r)" % (
                bad[0].tolist(), float(yb[tuple(bad[0])]), float(cr[tuple(bad[0])]))))


def gelu_net(name, m, x):
    """torch's export of module m (with nn.GELU()) on x: folded, within the composed bound and
    PyTorch's limit at N = 4 and 8"""
    path = os.path.join(W, name + ".onnx")
    torch.onnx.export(m, x, path, opset_version=14, input_names=["x"], output_names=["y"])
    ops = [n.op_type for n in onnx.load(path).graph.node]
    say("Erf" in ops, "%s: torch 1.13 writes the exact GELU with Erf: %s" % (name, " ".join(ops)))
    say(folded(path, 4) == 1, "%s: the pattern is one Gelu(erf) node in the report" % name)
    with torch.no_grad():
        ty = m(x).numpy().astype(np.float64)
        tb = copy.deepcopy(m).to(torch.bfloat16)(x.to(torch.bfloat16)).float().numpy().astype(np.float64)
    db = float(np.abs(tb - ty).max())
    lim = 2 * db + 1e-3
    ref = reference(path, x.numpy())
    say(float(np.abs(ty - ref.v).max()) <= 1e-5 * float(np.abs(ref.v).max()),
        "%s: PyTorch fp32 agrees with the float64 reference" % name)
    say(float(ref.e.max()) < float(np.abs(ref.v).max()) / 4,
        "%s: the composed bound says something (largest %.3g, outputs up to %.3g)"
        % (name, ref.e.max(), np.abs(ref.v).max()))
    moved = ref.v.copy()
    moved.flat[5] += 1.5 * ref.e.flat[5]
    say(not within(moved, ref)[0], "%s: a wrong answer (one element moved 1.5 bounds) is rejected" % name)
    for N in (4, 8):
        y = run(name, path, x.numpy(), N)
        if y is None:
            continue
        ok, worst = within(y, ref)
        say(ok, "%s N=%d: every element within the composed bound (worst %.3g of it)" % (name, N, worst))
        d = float(np.abs(np.asarray(y, np.float64) - ty).max())
        say(d <= lim, "%s N=%d: max |ours - PyTorch fp32| = %.3g <= %.3g (2 x PyTorch bf16's %.3g + 1e-3)"
            % (name, N, d, lim, db))


def folded(path, N):
    """the number of Gelu(erf) layers in tpu-compile's report"""
    r = subprocess.run([os.path.join(TOOLS, "tpu-compile"), path, "--mxu", str(N), "--report-only"],
                       capture_output=True, text=True)
    return sum(1 for line in r.stdout.splitlines() if "Gelu(erf)" in line)


def gelu_hand():
    """x * ((1 + Erf(x * fp32(1/sqrt 2))) * 0.5), and that plus Erf's output"""
    k = np.float32(1.0 / math.sqrt(2.0))
    cst = [helper.make_tensor(nm, onnx.TensorProto.FLOAT, [], [v])
           for nm, v in (("k", k), ("one", 1.0), ("half", 0.5))]
    nodes = [helper.make_node("Mul", ["x", "k"], ["t"]), helper.make_node("Erf", ["t"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["a", "half"], ["h"]),
             helper.make_node("Mul", ["x", "h"], ["y"])]
    unf = nodes[:4] + [helper.make_node("Mul", ["x", "h"], ["g"]), helper.make_node("Add", ["g", "e"], ["y"])]
    X = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [6, 20])
    Y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [6, 20])
    x = (np.random.RandomState(9).randn(6, 20) * 3).astype(np.float32)
    for name, nn, nfold in (("gelu2", nodes, 1), ("gelu2_unfolded", unf, 0)):
        path = os.path.join(W, name + ".onnx")
        onnx.save(helper.make_model(helper.make_graph(nn, name, [X], [Y], cst),
                                    opset_imports=[helper.make_opsetid("", 13)]), path)
        say(folded(path, 4) == nfold, "%s: %d Gelu(erf) node(s) in the report, expected %d" % (name, folded(path, 4), nfold))
        ref = reference(path, x)
        for N in (4, 8):
            y = run(name, path, x, N)
            if y is None:
                continue
            ok, worst = within(y, ref)
            say(ok, "%s N=%d: every element within the composed bound (worst %.3g of it)" % (name, N, worst))


def main():
    os.makedirs(W, exist_ok=True)
    torch.set_num_threads(1)
    erf_node()
    torch.manual_seed(3)
    gelu_net("gelu", torch.nn.Sequential(torch.nn.Linear(24, 40), torch.nn.GELU(),
                                         torch.nn.Linear(40, 12)).eval(), torch.randn(4, 24) * 1.5)
    torch.manual_seed(4)
    gelu_net("cgelu", torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.GELU(),
                                          torch.nn.Conv2d(8, 4, 3, padding=1)).eval(),
             torch.randn(2, 3, 6, 6))
    gelu_hand()
    print("test-compiler-erf: %s" % ("PASS" if not FAILS else "FAIL (%d)" % len(FAILS)))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
