# SPDX-License-Identifier: Apache-2.0
"""test-compiler-ops32 (issue 32, "the rest of torchvision"): Pad, Concat of many inputs and
ConvTranspose in torch 1.13 models (opset 14), compiled and run by our tools and compared
with PyTorch fp32 within a bound derived from the numerics contract.

  pad_const   Conv2d, F.pad (1, 2, 3, 0) with the constant 0.75 (the graph output): a Pad
              node lowered by DMA (tile_pad.c)
  pad_pool    Conv2d, F.pad of -0.5, MaxPool2d(2): a Pad node before a pool
  pad_fold    Conv2d, ReLU, F.pad of zeros (1, 1, 2, 0), Conv2d: the Pad folded into the second
              Conv's pads (no Pad layer in the report)
  avgpool     Conv2d, F.avg_pool2d(3, 1, padding 1) (torch writes Pad + AveragePool, as in
              Inception-v3): folded into the pool, which then counts the padding
  concat12    torch.cat of the input and 11 Conv2d outputs (DenseNet's dense block): a Concat
              of 12 inputs, read as a tree of Concats of at most 8
  concat65    a Concat of 65 Conv 1x1 outputs (two levels of the tree), built with onnx.helper
  dcgan       a DCGAN generator in miniature: ConvTranspose2d(8, 16, 4, 1, 0) + BN + ReLU,
              ConvTranspose2d(16, 8, 4, 2, 1) + BN + ReLU, ConvTranspose2d(8, 3, 4, 2, 1) + Tanh
              (1x1 latent -> 4x4 -> 8x8 -> 16x16)
  convt1d     ConvTranspose1d(3, 4, 3, stride 3, padding 1, output_padding 2)
  refused     reflect and edge Pad, negative pads, a Pad of the channels, an infinite constant,
              ConvTranspose with group 3, dilations 2, output_shape, 3-D, output_padding >=
              stride: exit 2, one line naming the node and the value, nothing written; and
              tpu-compile --train of a stride-1 ConvTranspose (training has none)

The bound: tests/conformance/refops.py's per-operator bounds (op_pad, op_concat,
op_convtranspose; docs/conformance.md) composed through the graph, each node's inputs
carrying their errors; a BatchNormalization folded into the ConvTranspose before it is
folded here the same way (its weights given the fold's fp32 error). Every output element
must lie within its bound of the exact value (float64), and PyTorch's fp32 result within the
same bound plus its own fp32 error of the exact value.

The test can fail: each bound is also applied to a wrong answer (PyTorch's output with one
element moved by 1.5 times its bound; for the Pads, the output with the constant 0 instead;
for the DCGAN the output of the generator with its last kernel not flipped), which must be
reported as outside the bound; and the bound must say something (its largest value below
1/8 of the output's largest magnitude).

usage: ops32.py WORKDIR BUILD_TOOLS     (exit 1 on any failure)
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
import refops  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tchelp  # noqa: E402

W, TOOLS = sys.argv[1], sys.argv[2]
os.makedirs(W, exist_ok=True)
torch.manual_seed(32)
fails = 0
Val = refops.Val


def say(ok, msg):
    global fails
    print(("ok: " if ok else "FAIL: ") + msg)
    if not ok:
        fails += 1


def run(name, onnx_path, x, N):
    return tchelp.compile_infer(TOOLS, W, name, onnx_path, x, N, say)


def report_of(name, N):
    with open(os.path.join(W, "%s_N%d" % (name, N), "report.txt")) as f:
        return f.read()


def within(got, ref):
    """(every element within its bound, the worst |got - exact| / bound)"""
    if got.shape != ref.v.shape:
        return False, float("inf")
    err = np.abs(got.astype(np.float64) - ref.v)
    ratio = np.where(ref.e > 0, err / np.where(ref.e > 0, ref.e, 1), np.where(err > 0, np.inf, 0))
    return bool(np.all(err <= ref.e)), float(np.max(ratio))


def check(name, ref, torch_y, outs, wrong):
    """ref: the refops Val (exact value, bound); outs: (label, our output); wrong: wrong answers."""
    tex = np.abs(torch_y - ref.v).max() / max(np.abs(ref.v).max(), 1e-30)
    say(tex < 1e-5, "%s: PyTorch fp32 agrees with the float64 reference (%.2g relative)" % (name, tex))
    say(ref.e.max() < np.abs(ref.v).max() / 8,
        "%s: the bound says something (largest %.3g, outputs up to %.3g)" % (name, ref.e.max(), np.abs(ref.v).max()))
    first = None
    for label, y in outs:
        if y is None:
            continue
        ok, worst = within(y, ref)
        d_t = np.abs(y.astype(np.float64) - torch_y).max() if y.shape == torch_y.shape else float("inf")
        say(ok, "%s %s: every element within the derived bound (worst %.3f of it); max |ours - PyTorch| = %.3g"
            % (name, label, worst, d_t))
        okt = y.shape == torch_y.shape and bool(np.all(np.abs(y.astype(np.float64) - torch_y) <= ref.e + np.abs(torch_y - ref.v)))
        say(okt, "%s %s: within the bound of PyTorch fp32" % (name, label))
        if first is None:
            first = y
        else:
            say(np.array_equal(first.view(np.uint32), y.view(np.uint32)), "%s %s: the same bits as at the first N" % (name, label))
    moved = torch_y.copy()
    i = np.unravel_index(np.argmax(ref.e), ref.e.shape)
    moved[i] = ref.v[i] + 1.5 * ref.e[i]
    for what, w in [("one element moved by 1.5 bounds", moved)] + wrong:
        ok, worst = within(w, ref)
        say(not ok, "%s: the check rejects a wrong answer (%s: %.1f times the bound)" % (name, what, worst))


def vin(x):
    return Val(np.asarray(x, np.float64), act=True)


def cval(t):
    return Val(t.detach().numpy().astype(np.float64))


def export(name, m, x):
    p = os.path.join(W, name + ".onnx")
    torch.onnx.export(m, x, p, opset_version=14)
    return p


def conv_ref(c, X):
    n = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=list(c.padding) * 2, strides=list(c.stride))
    return refops.op_conv(n, [X, cval(c.weight), cval(c.bias)])


def pad_ref(X, pads_torch, value):
    """F.pad's (left, right, top, bottom) of an [B, C, H, W] as ONNX's Pad."""
    l, r, t, b = pads_torch
    n = helper.make_node("Pad", ["x", "p", "v"], ["y"], mode="constant")
    return refops.op_pad(n, [X, Val(np.array([0, 0, t, l, 0, 0, b, r]), raw=np.array([0, 0, t, l, 0, 0, b, r])),
                             Val(np.array(value))])


def ops_of(p):
    return [n.op_type for n in onnx.load(p).graph.node]


# ---- pad_const, pad_pool: Pads kept as nodes (the constant 0.75 as the graph output; -0.5
#      before a MaxPool, which needs it written: a zero Pad is not its -Inf padding) ----
class PadConstA(torch.nn.Module):
    """the graph output a Pad itself (no Slice after it)"""
    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, x):
        return F.pad(self.c(x), (1, 2, 3, 0), value=0.75)


class PadConstB(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, x):
        return F.max_pool2d(F.pad(self.c(x), (1, 1, 1, 1), value=-0.5), 2)


c0 = torch.nn.Conv2d(3, 5, 3)
x = torch.randn(2, 3, 9, 7)
X = vin(x.numpy())
for name, m, pads in (("pad_const", PadConstA(c0), (1, 2, 3, 0)), ("pad_pool", PadConstB(c0), (1, 1, 1, 1))):
    p = export(name, m, x)
    say("Pad" in ops_of(p), "%s: torch writes %s" % (name, " ".join(sorted(set(ops_of(p))))))
    value = 0.75 if name == "pad_const" else -0.5
    ref = pad_ref(conv_ref(c0, X), pads, value)
    if name == "pad_pool":
        ref = refops.op_maxpool(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2]), [ref])
    ref = refops.rb(ref)
    with torch.no_grad():
        ty = m(x).numpy().astype(np.float64)
        if name == "pad_const":
            zero = F.pad(c0(x), pads, value=0.0).numpy()
        else:
            zero = F.max_pool2d(F.pad(c0(x), pads, value=0.0), 2).numpy()
    outs = [("N=%d" % N, run(name, p, x.numpy(), N)) for N in (4, 8)]
    if outs[0][1] is not None:
        say("Pad" in report_of(name, 4), "%s: the Pad runs as its own layer" % name)
    check(name, ref, ty, outs, [("the constant 0 instead of %g" % value, zero)])


# ---- pad_fold: a zero Pad before a Conv goes into the Conv's pads ----
class PadFold(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 6, 3)
        self.c2 = torch.nn.Conv2d(6, 4, 3)

    def forward(self, x):
        return self.c2(F.pad(torch.relu(self.c1(x)), (1, 1, 2, 0)))


m = PadFold()
with torch.no_grad():
    m.c2.weight.abs_()   # (no cancellation in the second Conv: the bound stays small against it)
p = export("pad_fold", m, x)
r1 = refops.op_relu(helper.make_node("Relu", ["x"], ["y"]), [conv_ref(m.c1, X)])
ref = refops.rb(conv_ref(m.c2, pad_ref(r1, (1, 1, 2, 0), 0.0)))
with torch.no_grad():
    ty = m(x).numpy().astype(np.float64)
    nopad = m.c2(F.pad(torch.relu(m.c1(x)), (0, 2, 2, 0))).numpy()   # the padding on one side
outs = [("N=%d" % N, run("pad_fold", p, x.numpy(), N)) for N in (4, 8)]
if outs[0][1] is not None:
    rep = report_of("pad_fold", 4)
    say("Pad" not in rep and rep.count("Conv") >= 2, "pad_fold: no Pad layer (folded into the Conv's pads)")
check("pad_fold", ref, ty, outs, [("the left pad moved to the right", nopad)])


# ---- avgpool: torch's Pad + AveragePool (Inception-v3's branch pools) ----
class AvgPad(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = torch.nn.Conv2d(3, 6, 3)

    def forward(self, x):
        return F.avg_pool2d(torch.relu(self.c(x)), 3, stride=1, padding=1)


m = AvgPad()
p = export("avgpool", m, x)
say(ops_of(p)[-2:] == ["Pad", "AveragePool"], "avgpool: torch writes " + " ".join(ops_of(p)))
r1 = refops.op_relu(helper.make_node("Relu", ["x"], ["y"]), [conv_ref(m.c, X)])
ref = refops.rb(refops.op_averagepool(helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                                       count_include_pad=1), [r1]))
with torch.no_grad():
    ty = m(x).numpy().astype(np.float64)
    excl = F.avg_pool2d(torch.relu(m.c(x)), 3, stride=1, padding=1, count_include_pad=False).numpy()
outs = [("N=%d" % N, run("avgpool", p, x.numpy(), N)) for N in (4, 8)]
if outs[0][1] is not None:
    say("Pad" not in report_of("avgpool", 4), "avgpool: no Pad layer (folded into the AveragePool)")
check("avgpool", ref, ty, outs, [("the padding not counted", excl)])


# ---- concat12: a dense block's Concat of 12 inputs ----
class Dense(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cs = torch.nn.ModuleList([torch.nn.Conv2d(3, 2 + i % 3, 3, padding=1) for i in range(11)])

    def forward(self, x):
        return torch.cat([x] + [c(x) for c in self.cs], 1)


m = Dense()
p = export("concat12", m, x)
cat = [n for n in onnx.load(p).graph.node if n.op_type == "Concat"]
say(len(cat) == 1 and len(cat[0].input) == 12, "concat12: one Concat of %d inputs" % len(cat[0].input))
ref = refops.rb(refops.op_concat(helper.make_node("Concat", ["a"], ["y"], axis=1),
                                 [X] + [conv_ref(c, X) for c in m.cs]))
with torch.no_grad():
    ty = m(x).numpy().astype(np.float64)
    swapped = torch.cat([x] + [c(x) for c in m.cs][::-1], 1).numpy()
check("concat12", ref, ty, [("N=%d" % N, run("concat12", p, x.numpy(), N)) for N in (4, 8)],
      [("the inputs in reverse order", swapped)])


# ---- concat65: 65 inputs (two levels of Concats of 8) ----
xs = torch.randn(2, 4, 3, 5)
ws = [torch.randn(1 + k % 2, 4, 1, 1) * 0.5 for k in range(65)]
nodes, inits = [], []
for k, w in enumerate(ws):
    inits.append(numpy_helper.from_array(w.numpy(), "w%d" % k))
    nodes.append(helper.make_node("Conv", ["x", "w%d" % k], ["c%d" % k], name="conv%d" % k))
nodes.append(helper.make_node("Concat", ["c%d" % k for k in range(65)], ["y"], name="cat65", axis=1))
g65 = helper.make_graph(nodes, "concat65", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 4, 3, 5])],
                        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], inits)
p = os.path.join(W, "concat65.onnx")
onnx.save(helper.make_model(g65, opset_imports=[helper.make_opsetid("", 14)]), p)
XS = vin(xs.numpy())
ref = refops.evaluate(g65, xs.numpy().astype(np.float64), {"w%d" % k: w.numpy() for k, w in enumerate(ws)})[0]
with torch.no_grad():
    outs_t = [F.conv2d(xs, w) for w in ws]
    ty = torch.cat(outs_t, 1).numpy().astype(np.float64)
    dropped = torch.cat(outs_t[:64] + [outs_t[63]], 1).numpy()
check("concat65", ref, ty, [("N=%d" % N, run("concat65", p, xs.numpy(), N)) for N in (4, 8)],
      [("input 64 replaced by input 63", dropped)])


# ---- dcgan: ConvTranspose2d k4 s2 p1 + BN + ReLU, ending in Tanh ----
class Gen(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.t1 = torch.nn.ConvTranspose2d(8, 16, 4, 1, 0, bias=False)
        self.b1 = torch.nn.BatchNorm2d(16)
        self.t2 = torch.nn.ConvTranspose2d(16, 8, 4, 2, 1, bias=False)
        self.b2 = torch.nn.BatchNorm2d(8)
        self.t3 = torch.nn.ConvTranspose2d(8, 3, 4, 2, 1, bias=False)

    def forward(self, z):
        h = torch.relu(self.b1(self.t1(z)))
        h = torch.relu(self.b2(self.t2(h)))
        return torch.tanh(self.t3(h))


g = Gen()
with torch.no_grad():
    for b in (g.b1, g.b2):
        b.running_mean.normal_(0, 0.2)
        b.running_var.uniform_(0.5, 1.5)
        b.weight.normal_(1, 0.2)
        b.bias.normal_(0, 0.2)
g.eval()
z = torch.randn(3, 8, 1, 1)
p = export("dcgan", g, z)
say([o for o in ops_of(p) if o != "Constant"] == ["ConvTranspose", "BatchNormalization", "Relu", "ConvTranspose",
                                                  "BatchNormalization", "Relu", "ConvTranspose", "Tanh"],
    "dcgan: torch writes " + " ".join(ops_of(p)))


def bn_folded(t, b):
    """the ConvTranspose's weights [Cin, Cout, k, k] and bias with the BN folded in fp32 (as
    fold.c does, on the flipped kernel: the same products); the fold's error in the bound"""
    s = (b.weight / torch.sqrt(b.running_var + b.eps)).detach().numpy().astype(np.float32)
    w = (t.weight.detach().numpy() * s[None, :, None, None]).astype(np.float32)
    bb = (b.bias.detach().numpy() - b.running_mean.detach().numpy() * s).astype(np.float32)
    return (Val(w.astype(np.float64), 4 * refops.U * np.abs(w)),
            Val(bb.astype(np.float64), 4 * refops.U * np.abs(bb) + refops.TINY))


def convt(Xv, Wv, Bv, s, p):
    n = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[s, s], pads=[p] * 4)
    return refops.op_convtranspose(n, [Xv, Wv, Bv] if Bv is not None else [Xv, Wv])


relu = helper.make_node("Relu", ["x"], ["y"])
w1, bb1 = bn_folded(g.t1, g.b1)
w2, bb2 = bn_folded(g.t2, g.b2)
h = refops.op_relu(relu, [convt(vin(z.numpy()), w1, bb1, 1, 0)])
h = refops.op_relu(relu, [convt(h, w2, bb2, 2, 1)])
ref = refops.rb(refops.op_tanh(helper.make_node("Tanh", ["x"], ["y"]), [convt(h, cval(g.t3.weight), None, 2, 1)]))
with torch.no_grad():
    ty = g(z).numpy().astype(np.float64)
    hh = torch.relu(g.b2(g.t2(torch.relu(g.b1(g.t1(z))))))
    # the wrong answer: the last layer as a Conv over the dilated input without flipping the kernel
    dil = torch.zeros(3, 8, 15, 15)
    dil[:, :, ::2, ::2] = hh
    noflip = torch.tanh(F.conv2d(F.pad(dil, (2, 2, 2, 2)), g.t3.weight.transpose(0, 1))).numpy()
outs = [("N=%d" % N, run("dcgan", p, z.numpy(), N)) for N in (4, 8, 16)]
say(outs[0][1] is None or outs[0][1].shape == (3, 3, 16, 16), "dcgan: a 16x16 RGB image per latent")
check("dcgan", ref, ty, outs, [("the last kernel not flipped", noflip)])


# ---- convt1d: ConvTranspose1d with output_padding ----
ct = torch.nn.ConvTranspose1d(3, 4, 3, stride=3, padding=1, output_padding=2)
x1 = torch.randn(2, 3, 6)
p = export("convt1d", ct, x1)
n1 = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[3], pads=[1, 1], output_padding=[2])
ref = refops.rb(refops.op_convtranspose(n1, [vin(x1.numpy()), cval(ct.weight), cval(ct.bias)]))
with torch.no_grad():
    ty = ct(x1).numpy().astype(np.float64)
    noop = np.concatenate([torch.nn.functional.conv_transpose1d(x1, ct.weight, ct.bias, 3, 1).numpy(),
                           np.zeros((2, 4, 2), np.float32)], 2)   # output_padding's columns as zeros
check("convt1d", ref, ty, [("N=%d" % N, run("convt1d", p, x1.numpy(), N)) for N in (4, 8)],
      [("output_padding's columns zero", noop)])


# ---- refused with one line naming the node and the value (exit 2, nothing written) ----
X4 = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 4, 5])
Y4 = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
wct = numpy_helper.from_array(np.ones((3, 2, 3, 3), np.float32), "w")
wct5 = numpy_helper.from_array(np.ones((3, 2, 3, 3, 3), np.float32), "w")


def pads_t(v):
    return numpy_helper.from_array(np.array(v, np.int64), "p")


inf = numpy_helper.from_array(np.array(np.inf, np.float32), "v")
X5 = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 4, 5, 6])
for name, nd, inits, xin, words in (
        ("reflect", helper.make_node("Pad", ["x", "p"], ["y"], name="pr", mode="reflect"), [pads_t([0, 0, 1, 1, 0, 0, 1, 1])], X4, ["'pr'", "'reflect'"]),
        ("edge", helper.make_node("Pad", ["x", "p"], ["y"], name="pe", mode="edge"), [pads_t([0, 0, 1, 1, 0, 0, 1, 1])], X4, ["'pe'", "'edge'"]),
        ("negative", helper.make_node("Pad", ["x", "p"], ["y"], name="pn"), [pads_t([0, 0, 1, -1, 0, 0, 1, 1])], X4, ["'pn'", "pads[3] = -1"]),
        ("channels", helper.make_node("Pad", ["x", "p"], ["y"], name="pc"), [pads_t([0, 2, 0, 0, 0, 0, 0, 0])], X4, ["'pc'", "pads[1] = 2"]),
        ("inf", helper.make_node("Pad", ["x", "p", "v"], ["y"], name="pi"), [pads_t([0, 0, 1, 1, 0, 0, 1, 1]), inf], X4, ["'pi'", "inf"]),
        ("ct_group", helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="tg", group=3), [wct], X4, ["'tg'", "group 3"]),
        ("ct_dil", helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="td", dilations=[2, 2]), [wct], X4, ["'td'", "dilations 2"]),
        ("ct_shape", helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="ts", output_shape=[9, 9]), [wct], X4, ["'ts'", "output_shape"]),
        ("ct_3d", helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="t3"), [wct5], X5, ["'t3'", "5 dimensions"]),
        ("ct_opad", helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="to", strides=[2, 2], output_padding=[2, 0]), [wct], X4, ["'to'", "output_padding 2"])):
    mm = helper.make_model(helper.make_graph([nd], name, [xin], [Y4], inits), opset_imports=[helper.make_opsetid("", 13)])
    pp = os.path.join(W, "bad_" + name + ".onnx")
    onnx.save(mm, pp)
    out = os.path.join(W, "bad_" + name)
    r = subprocess.run([os.path.join(TOOLS, "tpu-compile"), pp, "--mxu", "4", "--cores", "1", "-o", out],
                       capture_output=True, text=True)
    lines = r.stderr.strip().split("\n")
    good = (r.returncode == 2 and len(lines) == 1 and lines[0].startswith("tpu-compile: error: ")
            and all(w in lines[0] for w in words) and not os.path.exists(out))
    say(good, "%s refused: exit %d: %s" % (name, r.returncode, r.stderr.strip()))

# ---- training has no ConvTranspose: refused by its Pad, even at stride 1 ----
class CT1(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.t = torch.nn.ConvTranspose2d(3, 4, 3, 1, 1)
        self.f = torch.nn.Linear(4 * 5 * 5, 10)

    def forward(self, x):
        return torch.softmax(self.f(torch.relu(self.t(x)).flatten(1)), 1)


p = export("train_ct", CT1(), torch.randn(2, 3, 5, 5))
r = subprocess.run([os.path.join(TOOLS, "tpu-compile"), p, "--train", "--batch", "2", "--cores", "1", "--mxu", "8",
                    "--report-only"], capture_output=True, text=True)
lines = r.stderr.strip().split("\n")
say(r.returncode == 2 and len(lines) == 1 and "dilated" in lines[0] and "training" in lines[0],
    "train_ct: tpu-compile --train refuses a ConvTranspose: exit %d: %s" % (r.returncode, r.stderr.strip()))

print("ops32: %d failure(s)" % fails)
sys.exit(1 if fails else 0)
