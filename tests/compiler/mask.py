# SPDX-License-Identifier: Apache-2.0
"""test-compiler-mask (issue 32, attention masks): torch 1.13's masked attention exported at
opset 14, compiled by tpu-compile and run by tpu-infer on the C model, against PyTorch fp32
within the limit tests/compiler/attn.py derives (attn.torch_limit: 2 x the distance of
PyTorch's own bf16 run from its fp32 run + 1e-3; docs/conformance.md "Attention masks").

  causal_f_buf   nn.TransformerEncoderLayer (d_model 16, 2 heads, batch_first, x [2, 5, 16])
                 with src_mask = generate_square_subsequent_mask(5) (float, -inf above the
                 diagonal) held as a buffer: an initializer added to the scores
  causal_b_buf   the same mask as bool (True = masked): torch turns it into the float one
  causal_f_triu  the float mask built in forward() (torch.triu(torch.full(.., -inf), 1)):
                 Trilu of a constant, folded
  causal_b_triu  its bool form (== -inf): Trilu, Equal, Cast to bool, Where(mask, -inf, 0)
  kpm            nn.MultiheadAttention with a bool key_padding_mask buffer: ConstantOfShape,
                 Mul, Equal, Where (the shape), Expand of the bool initializer, Reshape, Cast,
                 Where (-inf, 0)
  kpm_causal_f   the same with the float causal attn_mask (merged by masked_fill: Where)
  kpm_causal_b   both bool (merged by Or)
each at N = 4 and 8. Every mask here is a constant, so tpu-compile folds the mask's nodes
and the program adds a constant [.., L, S] to the scores before the Softmax.

Checked: ours within the limit of PyTorch fp32; the limit says something (PyTorch bf16's own
error < 1/8 of the outputs); the check rejects a wrong answer (the same layer with the mask
dropped, both PyTorch's and ours); a fully masked row (the causal mask with row 0 all -inf;
a batch whose keys are all padding) gives NaN exactly where PyTorch does (exp(-inf) = 0,
then 0/0: docs/vpu.md "Softmax"), the other elements within the limit; masked_fill's form
Where(mask, -inf, x) on an activation (made an Add of x and where(mask, -inf, -0)) followed
by a Softmax over the last axis and over axis 1 (across rows): masked elements exactly +0,
the rest within refops' Softmax bound of the unmasked elements (tests/conformance/refops.py),
a fully masked row NaN, the Softmax with the mask dropped rejected; five hand-written graphs
whose masks fold (Trilu, ConstantOfShape, Equal, Where, Expand, Cast, an Add of two
constants that broadcast) added to x: the same bits as numpy; refusals of one line naming
the node: a key_padding_mask computed from the input (torch's export: Equal of a
ReduceSum of x), the mask as a second graph input (named), a hand-written Equal of the input,
Where with a fill value that is not -inf.

usage: mask.py WORKDIR BUILD_TOOLS     (exit 1 on any failure)
"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn  # noqa: E402  (the helpers: compile_model, run, say, torch_limit, rb_np)
from attn import refops  # noqa: E402

attn.W, attn.TOOLS = sys.argv[1], sys.argv[2]
os.makedirs(attn.W, exist_ok=True)
say = attn.say
S = 5


class Causal(torch.nn.Module):
    """An encoder layer with a causal src_mask: a buffer (float or bool) or built in forward."""

    def __init__(self, kind, inside, mask=None):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0,
                                                      batch_first=True).eval()
        m = torch.nn.Transformer.generate_square_subsequent_mask(S) if mask is None else mask
        self.register_buffer("mask", m == float("-inf") if kind == "bool" else m)
        self.kind, self.inside, self.use_mask = kind, inside, True

    def forward(self, x):
        if not self.use_mask:
            return self.layer(x)
        if self.inside:
            L = x.size(1)
            m = torch.triu(torch.full((L, L), float("-inf")), diagonal=1)
            return self.layer(x, src_mask=m == float("-inf") if self.kind == "bool" else m)
        return self.layer(x, src_mask=self.mask)


class KeyPadding(torch.nn.Module):
    """nn.MultiheadAttention (self-attention) with a bool key_padding_mask buffer [B, S], and
    with the causal attn_mask too ("float": a float attn_mask, the bool key_padding_mask
    merged into it by masked_fill, i.e. Where; "bool": both bool, merged by Or)."""

    def __init__(self, kp, causal=None):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(16, 2, batch_first=True)
        am = None
        if causal:
            am = torch.nn.Transformer.generate_square_subsequent_mask(kp.shape[1])
            if causal == "bool":
                am = am == float("-inf")
        self.register_buffer("kp", kp)
        self.register_buffer("am", am)
        self.use_mask = True

    def forward(self, x):
        return self.attn(x, x, x, key_padding_mask=self.kp if self.use_mask else None,
                         attn_mask=self.am if self.use_mask else None, need_weights=False)[0]


def export(name, m, x):
    p = os.path.join(attn.W, name + ".onnx")
    torch.onnx.export(m, x, p, opset_version=14)
    return p, sorted({n.op_type for n in onnx.load(p).graph.node})


def near(y, ty, lim):
    """(NaN in the same elements, max |y - ty| over the others)"""
    same_nan = y.shape == ty.shape and bool(np.array_equal(np.isnan(y), np.isnan(ty)))
    d = float(np.nanmax(np.abs(y.astype(np.float64) - ty))) if same_nan else float("inf")
    return same_nan, d


def masked(name, m, x, Ns, want_ops=(), full_row=False):
    """m exported, compiled and run at each N against PyTorch fp32 within attn's limit; the
    same check must reject the model with its mask dropped (PyTorch's output and ours)."""
    p, ops = export(name, m, x)
    say(set(want_ops) <= set(ops), "%s: torch 1.13 at opset 14 writes %s" % (name, " ".join(ops)))
    ty, db, lim = attn.torch_limit(m, x)
    nans = int(np.isnan(ty).sum())
    say((nans > 0) == full_row, "%s: PyTorch fp32 gives %d NaN elements (a fully masked row: %s)" % (name, nans, full_row))
    say(db < np.nanmax(np.abs(ty)) / 8, "%s: PyTorch's own bf16 run is %.3g from its fp32 run (outputs up to %.3g): "
        "the limit 2 x that + 1e-3 = %.3g says something" % (name, db, np.nanmax(np.abs(ty)), lim))
    for N in Ns:
        y = attn.run(name, p, x.numpy(), N)
        if y is None:
            continue
        same_nan, d = near(y, ty, lim)
        say(same_nan and d <= lim, "%s N=%d: NaN where PyTorch's (%d), max |ours - PyTorch fp32| = %.3g <= %.3g "
            "(2 x PyTorch bf16's %.3g + 1e-3)" % (name, N, int(np.isnan(y).sum()), d, lim, db))
    # the check can fail: the mask dropped
    m.use_mask = False
    with torch.no_grad():
        tn = m(x).numpy().astype(np.float64)
    pn, _ = export(name + "_nomask", m, x)
    m.use_mask = True
    yn = attn.run(name + "_nomask", pn, x.numpy(), Ns[0])
    for what, w in (("PyTorch", tn), ("ours at N=%d" % Ns[0], yn)):
        if w is None:
            continue
        same_nan, d = near(w, ty, lim)
        why = "%.3g > %.3g" % (d, lim) if same_nan else "NaN elsewhere than PyTorch's"
        say(not same_nan or d > lim, "%s: the check rejects the layer with its mask dropped (%s: %s)" % (name, what, why))


torch.manual_seed(32)
x = torch.randn(2, S, 16)
masked("causal_f_buf", Causal("float", False).eval(), x, (4, 8))
masked("causal_b_buf", Causal("bool", False).eval(), x, (4, 8))
masked("causal_f_triu", Causal("float", True).eval(), x, (4, 8), want_ops=("Trilu",))
masked("causal_b_triu", Causal("bool", True).eval(), x, (4, 8), want_ops=("Trilu", "Equal", "Where"))
kp = torch.zeros(2, S, dtype=torch.bool)
kp[0, 3:] = True
kp[1, 4:] = True
masked("kpm", KeyPadding(kp).eval(), x, (4, 8), want_ops=("ConstantOfShape", "Equal", "Where", "Expand"))
masked("kpm_causal_f", KeyPadding(kp, "float").eval(), x, (4, 8), want_ops=("ConstantOfShape", "Expand"))
masked("kpm_causal_b", KeyPadding(kp, "bool").eval(), x, (4, 8), want_ops=("ConstantOfShape", "Expand", "Or"))
# fully masked rows: NaN, as PyTorch's (exp(-inf - -inf) is NaN)
row0 = torch.nn.Transformer.generate_square_subsequent_mask(S)
row0[0, :] = float("-inf")
masked("row0_masked", Causal("float", False, row0).eval(), x, (4,), full_row=True)
kp_all = kp.clone()
kp_all[0, :] = True
masked("kpm_all", KeyPadding(kp_all).eval(), x, (4,), full_row=True)


# ---- masked_fill's form on an activation: Where(mask, -inf, x) -> Softmax ----
def where_softmax(N, axis):
    """Where(mask, -inf, x) then Softmax over `axis` (-1: the row; 1: across rows, tile_norm's
    lane-by-lane steps): x [2, 3, 6] (axis -1) or its transpose [2, 6, 3] (axis 1)."""
    rs = np.random.RandomState(6)
    mask = rs.rand(3, 6) < 0.4
    mask[1, :] = True  # one fully masked row (of each batch)
    mask[2, :] = False
    xv = (rs.standard_normal((2, 3, 6)) * 2).astype(np.float32)
    if axis == 1:  # the same softmax rows, along axis 1
        mask, xv = np.ascontiguousarray(mask.T), np.ascontiguousarray(xv.transpose(0, 2, 1))
    name = "where_softmax_ax%d" % axis
    X = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(xv.shape))
    Y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    ninf = helper.make_tensor("ninf", onnx.TensorProto.FLOAT, [], [float("-inf")])
    mk = helper.make_tensor("mask", onnx.TensorProto.BOOL, list(mask.shape), mask.ravel().tolist())
    nodes = [helper.make_node("Where", ["mask", "ninf", "x"], ["s"], name="fill"),
             helper.make_node("Softmax", ["s"], ["y"], axis=axis)]
    mdl = helper.make_model(helper.make_graph(nodes, name, [X], [Y], [ninf, mk]),
                            opset_imports=[helper.make_opsetid("", 14)])
    p = os.path.join(attn.W, name + ".onnx")
    onnx.save(mdl, p)
    y = attn.run(name, p, xv, N)
    if y is None:
        return
    xb = attn.rb_np(xv).astype(np.float64)
    if axis == 1:  # back to softmax rows last
        mask, xb, y = mask.T, xb.transpose(0, 2, 1), y.transpose(0, 2, 1)
    node = helper.make_node("Softmax", ["a"], ["b"], axis=-1)

    def check(yy):
        ok, worst = yy.shape == xb.shape, 0.0
        for b in range(2):
            for r in range(3):
                keep = ~mask[r]
                if not keep.any():  # all -inf: NaN (0/0), as PyTorch's
                    ok = ok and bool(np.all(np.isnan(yy[b, r])))
                    continue
                # the graph output is written in fp32 (no bf16 rounding): the Softmax chain's own bound
                ref = refops.op_softmax(node, [refops.Val(xb[b, r, keep], bf=True, act=True)])
                err = np.abs(yy[b, r, keep] - ref.v)
                worst = max(worst, float(np.max(err / ref.e)))
                ok = ok and bool(np.all(err <= ref.e)) and bool(np.all(np.asarray(yy[b, r, ~keep], np.float32).view(np.uint32) == 0))
        return ok, worst

    ok, worst = check(y)
    say(ok, "%s N=%d: Where(mask, -inf, x) then Softmax(axis %d): masked elements +0, a fully masked row NaN, "
        "the rest within the Softmax bound of the unmasked elements (worst %.3g of it)" % (name, N, axis, worst))
    e = np.exp(xb - xb.max(axis=-1, keepdims=True))
    ok_w, _ = check((e / e.sum(axis=-1, keepdims=True)).astype(np.float32))
    say(not ok_w, "%s N=%d: the same check rejects the Softmax with the mask dropped" % (name, N))

for N in (4, 8):
    for axis in (-1, 1):
        where_softmax(N, axis)

# ---- the folded constants against numpy: y = x + (a mask built by the mask operators) ----
def folded(name, xshape, nodes, inits, want):
    """The graph's mask nodes write `m`; y = Add(x, m) (or the nodes write y from x: Where on
    the activation). The graph output is fp32 (vop add of bf16 x and the fp32 constant in
    ACC): the same bits as numpy's float32 bf16(x) + m, want(xb) giving that."""
    X = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(xshape))
    Y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    if not any("y" in nd.output for nd in nodes):
        nodes = nodes + [helper.make_node("Add", ["x", "m"], ["y"])]
    mdl = helper.make_model(helper.make_graph(nodes, name, [X], [Y], inits), opset_imports=[helper.make_opsetid("", 14)])
    p = os.path.join(attn.W, name + ".onnx")
    onnx.save(mdl, p)
    xv = np.random.RandomState(len(name)).standard_normal(xshape).astype(np.float32)
    xb = attn.rb_np(xv)
    w = want(xb).astype(np.float32)
    y = attn.run(name, p, xv, 4)
    say(y is not None and y.shape == w.shape and np.array_equal(y.view(np.uint32), w.view(np.uint32)),
        "%s: the folded mask gives numpy's bits (x + m)" % name)


def i64(name, vals):
    vals = np.asarray(vals, np.int64)
    return helper.make_tensor(name, onnx.TensorProto.INT64, list(vals.shape), vals.ravel().tolist())


def f32(name, vals):
    vals = np.asarray(vals, np.float32)
    return helper.make_tensor(name, onnx.TensorProto.FLOAT, list(vals.shape), vals.ravel().tolist())


rs = np.random.RandomState(5)
base = rs.standard_normal((4, 6)).astype(np.float32)
ones = np.ones((4, 6), np.float32)
# Trilu: the lower triangle below the diagonal (upper = 0, k = -1), and the upper one (k = 2)
folded("trilu_lower", (2, 4, 6), [helper.make_node("Trilu", ["c", "k"], ["m"], upper=0)],
       [f32("c", base), i64("k", -1)], lambda xb: xb + np.tril(base, -1))
folded("trilu_upper", (2, 4, 6), [helper.make_node("Trilu", ["c", "k"], ["m"])],
       [f32("c", base), i64("k", 2)], lambda xb: xb + np.triu(base, 2))
# ConstantOfShape (default: float zeros) == Trilu(ones, 1) -> Where(.., 0.25, -1.5)
folded("cos_equal_where", (2, 4, 6),
       [helper.make_node("ConstantOfShape", ["shp"], ["z"]),
        helper.make_node("Trilu", ["one", "k"], ["t"]),
        helper.make_node("Equal", ["z", "t"], ["e"]),
        helper.make_node("Where", ["e", "p", "q"], ["m"])],
       [i64("shp", [4, 6]), f32("one", ones), i64("k", 1), f32("p", 0.25), f32("q", -1.5)],
       lambda xb: xb + np.where(np.triu(ones, 1) == 0, np.float32(0.25), np.float32(-1.5)))
# Expand of [1, 6] to [3, 1, 6] (broadcast again over x [3, 4, 6]); int64 Equal, Cast to float
folded("expand_cast", (3, 4, 6),
       [helper.make_node("Expand", ["r", "shp"], ["er"]),
        helper.make_node("Equal", ["ia", "ib"], ["e"]),
        helper.make_node("Cast", ["e"], ["ef"], to=1),
        helper.make_node("Add", ["er", "ef"], ["m"])],
       [f32("r", base[:1]), i64("shp", [3, 1, 6]), i64("ia", [[0, 1, 2, 3, 4, 5]]), i64("ib", [[0], [1], [2], [9]])],
       lambda xb: xb + (base[:1][None] + (np.arange(6)[None, :] == np.array([[0], [1], [2], [9]])).astype(np.float32)))
# Where(mask, x, -inf) on the activation (the fill as Y): x kept where the mask is true
keep = rs.rand(4, 6) < 0.5
folded("where_y_fill", (2, 4, 6),
       [helper.make_node("Where", ["mk", "x", "ninf"], ["y"])],
       [helper.make_tensor("mk", onnx.TensorProto.BOOL, [4, 6], keep.ravel().tolist()), f32("ninf", float("-inf"))],
       lambda xb: np.where(keep, xb, np.float32(-np.inf)))

# ---- refused with one line naming the node (exit 2, nothing written) ----
class RunTimeMask(torch.nn.Module):
    """A key_padding_mask computed from the input (x.sum(-1) == 0): Equal of an activation."""

    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x, kp=None):
        kp = x.sum(-1) == 0 if kp is None else kp
        return self.attn(x, x, x, key_padding_mask=kp, need_weights=False)[0]


for name, args, words in (("runtime_kpm", (x,), ["'/Equal'", "run time", "constant"]),
                          ("input_kpm", (x, kp), ["'key_padding_mask'", "element type 9"])):
    p, _ = export("bad_" + name, RunTimeMask().eval(), args)
    d, r = attn.compile_model("bad_" + name, p, 2, 4)
    lines = r.stderr.strip().split("\n")
    say(r.returncode == 2 and len(lines) == 1 and all(w in lines[0] for w in words) and not os.path.exists(d),
        "%s (torch's export) refused: exit %d: %s" % (name, r.returncode, r.stderr.strip()))
X3 = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 4])
Y3 = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
zero = helper.make_tensor("zero", onnx.TensorProto.FLOAT, [], [0.0])
ninf = helper.make_tensor("ninf", onnx.TensorProto.FLOAT, [], [float("-inf")])
half = helper.make_tensor("half", onnx.TensorProto.FLOAT, [], [0.5])
mk = helper.make_tensor("mk", onnx.TensorProto.BOOL, [3, 4], [True, False] * 6)
for name, nodes, inits, words in (
        ("runtime_mask", [helper.make_node("Equal", ["x", "zero"], ["m"], name="eq"),
                          helper.make_node("Where", ["m", "ninf", "x"], ["y"], name="wh")],
         [zero, ninf], ["'eq'", "run time", "constant"]),
        ("fill_half", [helper.make_node("Where", ["mk", "half", "x"], ["y"], name="wh2")],
         [mk, half], ["'wh2'", "not -inf"])):
    m = helper.make_model(helper.make_graph(nodes, name, [X3], [Y3], inits), opset_imports=[helper.make_opsetid("", 14)])
    pp = os.path.join(attn.W, "bad_" + name + ".onnx")
    onnx.save(m, pp)
    d, r = attn.compile_model("bad_" + name, pp, 2, 4)
    lines = r.stderr.strip().split("\n")
    good = (r.returncode == 2 and len(lines) == 1 and lines[0].startswith("tpu-compile: error: ")
            and all(w in lines[0] for w in words) and not os.path.exists(d))
    say(good, "%s refused: exit %d: %s" % (name, r.returncode, r.stderr.strip()))

print("mask: %d failure(s)" % attn.fails)
sys.exit(1 if attn.fails else 0)
