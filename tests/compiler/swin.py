# SPDX-License-Identifier: Apache-2.0
"""test-compiler-swin (issue 32: Swin's shift mask and MaxViT's Einsum): small torch 1.13
modules exported at opset 14, compiled by tpu-compile and run by tpu-infer on the C model at
N = 4 and 8 (one core).

  mask      Swin's attention mask of a shifted window block (torchvision 0.14's
            shifted_window_attention, its mask code as written there) for a 8x8 map, windows
            of 4, shift 2, its size read from the input's shape: new_zeros, nine slice
            assignments (torch exports each as a ScatterND whose indices two Ranges build),
            view/permute/reshape, the pairwise difference, masked_fill -100 / 0; added to x
            [2, 4, 16, 16] (as torchvision adds it to the scores, per window). Range,
            ScatterND and the rest fold at compile time into one constant: the output is
            x + mask, which is exact in fp32 for bf16 x (|x| < 8, the mask 0 or -100), so
            it must equal numpy's x + mask bit for bit (the mask computed by PyTorch).
  mask_sm   the same mask before a Softmax over the last axis: PyTorch fp32 within 2 x
            PyTorch bf16's own error + 1e-3 (attn.py's torch_limit, docs/conformance.md
            "Attention"), and the same check rejects the output of the network without
            its mask.
  maxvit    MaxViT's attention in miniature (torchvision's RelativePositionalMultiHead-
            SelfAttention without the position bias): x [B, G, P, C] = [2, 3, 7, 16], a
            Linear to q, k, v, heads 2 of 8, einsum("B G H I D, B G H J D -> B G H I J"),
            Softmax, einsum("B G H I J, B G H J D -> B G H I D"), the heads merged, Linear.
  bhqk      "bhqd,bhkd->bhqk", Softmax, "bhqk,bhkd->bhqd" (x [2, 5, 16], 2 heads), a Linear.
  kq        the scores transposed by the equation itself ("bhqd,bhkd->bhkq": a Transpose
            after the MatMul) as the output.
  wconst    einsum("bld,de->ble") and einsum("de,bld->bel") against a parameter (a Gemm
            against a constant; the second with the operands swapped: the constant first).
  windows   MaxViT's window partition of a Conv output (Reshape to [B, C, H/4, 4, W/4, 4],
            Transpose [0, 2, 4, 3, 5, 1], Reshape) and its way back before the next Conv
            (window.c), a Linear on the windows' rows between, x [2, 3, 8, 8].
  For these models: every element within the bound of docs/conformance.md composed
  through the graph (refops.evaluate, the conformance runner's; Einsum: one MatMul's chain
  of K bf16 products in fp32), and PyTorch fp32 within 2 x PyTorch bf16's error + 1e-3; a
  wrong answer (one element moved 1.5 bounds; the heads' scores not transposed, i.e. the
  einsum's operands in the wrong order) rejected by the same checks.
  swinmini  torchvision's SwinTransformerBlock (dim 16, 2 heads, windows 4) without and with
            the shift (2), then PatchMerging, on x [2, 6, 6, 16]: the map padded to 8 x 8
            (a Pad of [B, H, W, C] between Transposes), torch.roll (Slices and a Concat along
            H and W), the mask (Range, ScatterND: folded), qkv[0..2] (a Gather on axis 0 of a
            Transpose), head_dim ** -0.5 (a Pow of constants), F.dropout(p=0) in training
            mode, x[:, 0::2, 1::2] (Slice steps 2) and the Concat of the last axis; PyTorch
            fp32 within 2 x PyTorch bf16's error + 1e-3, the same bits at N = 4 and 8; the
            same check rejects the network with the second block unshifted.
  refused   one line naming the node and the equation, exit 2, nothing written: an ellipsis
            ("...ij,...jk->...ik"), a diagonal ("bii->bi"), a sum within one operand
            ("bij->bi"), an outer product ("bi,bj->bij"), two contracted labels
            ("bij,bij->b"); and a Range of the graph input (computed at run time).

usage: swin.py WORKDIR BUILD_TOOLS     (exit 1 on any failure)
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
os.makedirs(W, exist_ok=True)
FAILS = []
torch.manual_seed(0)
torch.set_num_threads(1)


def say(ok, msg):
    print("%s: %s" % ("ok" if ok else "FAIL", msg), flush=True)
    if not ok:
        FAILS.append(msg)


def export(m, x, name):
    path = os.path.join(W, name + ".onnx")
    torch.onnx.export(m, x, path, opset_version=14, input_names=["x"], output_names=["y"])
    return path


def torch_limit(m, x):
    """PyTorch fp32, its own bf16 run's distance db from it, and the limit 2 db + 1e-3"""
    with torch.no_grad():
        ty = m(x).numpy().astype(np.float64)
        tb = copy.deepcopy(m).to(torch.bfloat16)(x.to(torch.bfloat16)).float().numpy().astype(np.float64)
    db = float(np.abs(tb - ty).max())
    return ty, db, 2 * db + 1e-3


def reference(path, x):
    """refops.evaluate of the model (Constant nodes as constants): exact value and bound"""
    g = onnx.load(path).graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    g2 = helper.make_graph([n for n in g.node if n.op_type != "Constant"], "ref", g.input, g.output)
    return refops.evaluate(g2, x.astype(np.float64), consts)[0]


def within(got, ref):
    got = np.asarray(got, np.float64)
    if got.shape != ref.v.shape:
        return False, math.inf
    err = np.abs(got - ref.v)
    return bool(np.all(err <= ref.e)), float(np.max(err / ref.e))


def bf16(a):
    """float32 values rounded to bf16 (RNE), as float32"""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32)


# ---- Swin's shift mask (torchvision 0.14 swin_transformer.shifted_window_attention) ----
WS, SHIFT = 4, 2


def swin_mask(pad_H, pad_W):
    """the mask as torchvision writes it for a padded map pad_H x pad_W: [nW, L, L]"""
    attn_mask = torch.zeros((pad_H, pad_W))
    h_slices = ((0, -WS), (-WS, -SHIFT), (-SHIFT, None))
    w_slices = ((0, -WS), (-WS, -SHIFT), (-SHIFT, None))
    count = 0
    for h in h_slices:
        for w in w_slices:
            attn_mask[h[0]:h[1], w[0]:w[1]] = count
            count += 1
    num_windows = (pad_H // WS) * (pad_W // WS)
    attn_mask = attn_mask.view(pad_H // WS, WS, pad_W // WS, WS)
    attn_mask = attn_mask.permute(0, 2, 1, 3).reshape(num_windows, WS * WS)
    attn_mask = attn_mask.unsqueeze(1) - attn_mask.unsqueeze(2)
    return attn_mask.masked_fill(attn_mask != 0, float(-100.0)).masked_fill(attn_mask == 0, float(0.0))


class Mask(torch.nn.Module):
    """z [B, pad_H, pad_W, L] (Swin's padded map, L = WS * WS channels) read as the scores
    [B, nW, L, L] of its windows, plus the mask (its size from z's shape, as Swin's)"""
    def __init__(self, softmax, use_mask=True):
        super().__init__()
        self.softmax, self.use_mask = softmax, use_mask

    def forward(self, z):
        B, H, W, C = z.shape
        # Swin's padding to whole windows (0 here), which makes the mask's size a computed
        # shape: torch then writes the slice assignments' indices with Range
        pad_r = (WS - W % WS) % WS
        pad_b = (WS - H % WS) % WS
        z = torch.nn.functional.pad(z, (0, 0, 0, pad_r, 0, pad_b))
        _, pad_H, pad_W, _ = z.shape
        s = z.reshape(B, (pad_H // WS) * (pad_W // WS), WS * WS, C)
        if self.use_mask:
            attn_mask = z.new_zeros((pad_H, pad_W))
            s = s + swin_mask_like(attn_mask, pad_H, pad_W).unsqueeze(0)
        return torch.softmax(s, -1) if self.softmax else s


def swin_mask_like(attn_mask, pad_H, pad_W):
    """swin_mask's steps on attn_mask (z.new_zeros, as torchvision's x.new_zeros)"""
    h_slices = ((0, -WS), (-WS, -SHIFT), (-SHIFT, None))
    w_slices = ((0, -WS), (-WS, -SHIFT), (-SHIFT, None))
    count = 0
    for h in h_slices:
        for w in w_slices:
            attn_mask[h[0]:h[1], w[0]:w[1]] = count
            count += 1
    num_windows = (pad_H // WS) * (pad_W // WS)
    attn_mask = attn_mask.view(pad_H // WS, WS, pad_W // WS, WS)
    attn_mask = attn_mask.permute(0, 2, 1, 3).reshape(num_windows, WS * WS)
    attn_mask = attn_mask.unsqueeze(1) - attn_mask.unsqueeze(2)
    return attn_mask.masked_fill(attn_mask != 0, float(-100.0)).masked_fill(attn_mask == 0, float(0.0))


def mask_tests():
    x = torch.from_numpy(bf16(np.random.RandomState(1).uniform(-7.9, 7.9, (2, 8, 8, WS * WS))))
    path = export(Mask(False), x, "mask")
    ops = [n.op_type for n in onnx.load(path).graph.node]
    say({"Range", "ScatterND"} <= set(ops),
        "mask: torch 1.13 writes Swin's mask with %d Range and %d ScatterND nodes" % (ops.count("Range"), ops.count("ScatterND")))
    with torch.no_grad():
        want = Mask(False)(x).numpy()
        mk = swin_mask(8, 8).numpy()
    say(set(np.unique(mk)) == {0.0, -100.0} and (mk == 0).mean() < 1,
        "mask: PyTorch's mask holds 0 and -100 (%.0f %% zero)" % (100 * (mk == 0).mean()))
    for N in (4, 8):
        y = tchelp.compile_infer(TOOLS, W, "mask", path, x.numpy(), N, say)
        if y is not None:
            same = y.dtype == np.float32 and np.array_equal(y.view(np.uint32), want.view(np.uint32))
            say(same, "mask N=%d: x + the folded mask equals numpy's x + PyTorch's mask bit for bit%s"
                % (N, "" if same else " (max |diff| %.3g)" % float(np.abs(y - want).max())))
    with torch.no_grad():
        say(not np.array_equal(want, Mask(False, use_mask=False)(x).numpy()), "mask: a wrong answer (the mask dropped) is rejected")
    # before a Softmax
    m = Mask(True)
    path = export(m, x, "mask_sm")
    ty, db, lim = torch_limit(m, x)
    with torch.no_grad():
        nomask = Mask(True, use_mask=False)(x).numpy().astype(np.float64)
    say(float(np.abs(nomask - ty).max()) > lim,
        "mask_sm: a wrong answer (the Softmax without the mask) is rejected (%.3g > %.3g)" % (np.abs(nomask - ty).max(), lim))
    for N in (4, 8):
        y = tchelp.compile_infer(TOOLS, W, "mask_sm", path, x.numpy(), N, say)
        if y is not None:
            d = float(np.abs(np.asarray(y, np.float64) - ty).max())
            say(d <= lim, "mask_sm N=%d: max |ours - PyTorch fp32| = %.3g <= %.3g (2 x PyTorch bf16's %.3g + 1e-3)"
                % (N, d, lim, db))


# ---- Einsum ----
class MaxVitAttn(torch.nn.Module):
    """torchvision's MaxViT RelativePositionalMultiHeadSelfAttention, no position bias"""
    def __init__(self, shape, heads, swap=False):
        super().__init__()
        self.B, self.G, self.P, self.C = shape
        self.h, self.d = heads, self.C // heads
        self.q, self.k, self.v = (torch.nn.Linear(self.C, self.C) for _ in range(3))
        self.out = torch.nn.Linear(self.C, self.C)
        self.swap = swap

    def forward(self, x):
        B, G, P, C, H, D = self.B, self.G, self.P, self.C, self.h, self.d
        q, k, v = self.q(x), self.k(x), self.v(x)
        q, k, v = (t.reshape(B, G, P, H, D).permute(0, 1, 3, 2, 4) for t in (q, k, v))
        k = k * D ** -0.5
        s = torch.einsum("B G H I D, B G H J D -> B G H I J", (k, q) if self.swap else (q, k))
        a = torch.softmax(s, dim=-1)
        o = torch.einsum("B G H I J, B G H J D -> B G H I D", a, v)
        return self.out(o.permute(0, 1, 3, 2, 4).reshape(B, G, P, C))


class Bhqk(torch.nn.Module):
    def __init__(self, B, L, C, heads, swap=False):
        super().__init__()
        self.s = (B, L, heads, C // heads)
        self.q, self.k, self.v = (torch.nn.Linear(C, C) for _ in range(3))
        self.out = torch.nn.Linear(C, C)
        self.swap = swap

    def forward(self, x):
        B, L, H, D = self.s
        q, k, v = self.q(x), self.k(x), self.v(x)
        q, k, v = (t.reshape(B, L, H, D).transpose(1, 2) for t in (q, k, v))
        s = torch.einsum("bhqd,bhkd->bhqk", k if self.swap else q, q if self.swap else k) * D ** -0.5
        a = torch.softmax(s, dim=-1)
        o = torch.einsum("bhqk,bhkd->bhqd", a, v)
        return self.out(o.transpose(1, 2).reshape(B, L, H * D))


class Kq(torch.nn.Module):
    """the scores transposed by the equation itself: a Transpose after the MatMul"""
    def __init__(self, B, L, C, heads, plain=False):
        super().__init__()
        self.s = (B, L, heads, C // heads)
        self.q, self.k = torch.nn.Linear(C, C), torch.nn.Linear(C, C)
        self.plain = plain

    def forward(self, x):
        B, L, H, D = self.s
        q, k = (t.reshape(B, L, H, D).transpose(1, 2) for t in (self.q(x), self.k(x)))
        return torch.einsum("bhqd,bhkd->bhqk" if self.plain else "bhqd,bhkd->bhkq", q, k)


class Windows(torch.nn.Module):
    """MaxViT's window partition of a Conv output and its way back (torchvision's
    WindowPartition / WindowDepartition, P = 4) around a Linear, then a Conv"""
    def __init__(self, wrong=False):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.f = torch.nn.Linear(8, 8)
        self.c2 = torch.nn.Conv2d(8, 4, 3, padding=1)
        self.wrong = wrong

    def forward(self, x):
        x = self.c1(x)
        B, C, H, W = x.shape
        P = 4
        x = x.reshape(B, C, H // P, P, W // P, P).permute(0, 2, 4, 3, 5, 1)
        x = self.f(x.reshape(B, (H // P) * (W // P), P * P, C))
        x = x.view(B, H // P, W // P, P, P, C)
        # the way back; wrong: the windows' rows and columns swapped
        x = x.permute(0, 5, 1, 4, 2, 3) if self.wrong else x.permute(0, 5, 1, 3, 2, 4)
        return self.c2(torch.relu(x.reshape(B, C, H, W)))


class WConst(torch.nn.Module):
    def __init__(self, d, e):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(d, e) / math.sqrt(d))
        self.v = torch.nn.Parameter(torch.randn(d, e) / math.sqrt(e))

    def forward(self, x):
        h = torch.relu(torch.einsum("bld,de->ble", x, self.w))
        return torch.einsum("de,ble->bld", self.v, h)


def einsum_test(name, m, x, wrong):
    path = export(m.eval(), x, name)
    ops = [n.op_type for n in onnx.load(path).graph.node]
    if name != "windows":
        say("Einsum" in ops, "%s: %d Einsum nodes in torch's export" % (name, ops.count("Einsum")))
    ref = reference(path, x.numpy())
    ty, db, lim = torch_limit(m, x)
    say(float(np.abs(ty - ref.v).max()) <= 1e-5 * max(1.0, float(np.abs(ref.v).max())),
        "%s: PyTorch fp32 agrees with the float64 reference" % name)
    say(float(ref.e.max()) < float(np.abs(ref.v).max()),
        "%s: the composed bound says something (largest %.3g, outputs up to %.3g)" % (name, ref.e.max(), np.abs(ref.v).max()))
    moved = ref.v.copy()
    moved.flat[3] += 1.5 * ref.e.flat[3]
    say(not within(moved, ref)[0], "%s: a wrong answer (one element moved 1.5 bounds) is rejected" % name)
    if wrong is not None:
        with torch.no_grad():
            wv = wrong(x).numpy().astype(np.float64)
        say(not within(wv, ref)[0] and float(np.abs(wv - ty).max()) > lim,
            "%s: a wrong answer (%s) is rejected by both checks" % (name, "the windows' rows and columns swapped" if name == "windows" else "the operands in the wrong order"))
    for N in (4, 8):
        y = tchelp.compile_infer(TOOLS, W, name, path, x.numpy(), N, say)
        if y is None:
            continue
        ok, worst = within(y, ref)
        say(ok, "%s N=%d: every element within the composed bound (worst %.3g of it)" % (name, N, worst))
        d = float(np.abs(np.asarray(y, np.float64) - ty).max())
        say(d <= lim, "%s N=%d: max |ours - PyTorch fp32| = %.3g <= %.3g (2 x PyTorch bf16's %.3g + 1e-3)"
            % (name, N, d, lim, db))


def einsum_tests():
    m = MaxVitAttn((2, 3, 7, 16), 2)
    bad = copy.deepcopy(m)
    bad.swap = True
    einsum_test("maxvit", m, torch.randn(2, 3, 7, 16), bad)
    m = Bhqk(2, 5, 16, 2)
    bad = copy.deepcopy(m)
    bad.swap = True
    einsum_test("bhqk", m, torch.randn(2, 5, 16), bad)
    m = Kq(2, 5, 16, 2)
    bad = copy.deepcopy(m)
    bad.plain = True
    einsum_test("kq", m, torch.randn(2, 5, 16), bad)
    einsum_test("wconst", WConst(12, 20), torch.randn(2, 5, 12), None)
    bad = Windows(True)
    m = Windows()
    bad.load_state_dict(m.state_dict())
    einsum_test("windows", m, torch.randn(2, 3, 8, 8), bad)


# ---- Swin's blocks (torchvision 0.14's SwinTransformerBlock and PatchMerging) ----
class SwinMini(torch.nn.Module):
    """x [B, 6, 6, 16] (Swin's row-major maps): a block with windows of 4 (the map padded to
    8 x 8), a shifted block (shift 2: torch.roll, the mask), patch merging to [B, 3, 3, 32]"""
    def __init__(self, shift=2):
        super().__init__()
        from torchvision.models.swin_transformer import PatchMerging, SwinTransformerBlock
        self.b1 = SwinTransformerBlock(16, 2, [4, 4], [0, 0], stochastic_depth_prob=0.0)
        self.b2 = SwinTransformerBlock(16, 2, [4, 4], [shift, shift], stochastic_depth_prob=0.0)
        self.m = PatchMerging(16)

    def forward(self, x):
        return self.m(self.b2(self.b1(x)))


def swin_blocks():
    m = SwinMini().eval()
    x = torch.randn(2, 6, 6, 16)
    path = export(m, x, "swinmini")
    ops = [n.op_type for n in onnx.load(path).graph.node]
    say(all(o in ops for o in ("Range", "ScatterND", "Pad", "Concat", "Gather", "Pow", "Dropout")),
        "swinmini: torch's export has Swin's Range, ScatterND, Pad, roll (Slice, Concat), qkv[i] (Gather), Pow, Dropout")
    ty, db, lim = torch_limit(m, x)
    wrong = SwinMini(shift=0).eval()
    wrong.load_state_dict(m.state_dict())
    with torch.no_grad():
        wv = wrong(x).numpy().astype(np.float64)
    say(float(np.abs(wv - ty).max()) > lim,
        "swinmini: a wrong answer (no shift, no mask in the second block) is rejected (%.3g > %.3g)" % (np.abs(wv - ty).max(), lim))
    outs = []
    for N in (4, 8):
        y = tchelp.compile_infer(TOOLS, W, "swinmini", path, x.numpy(), N, say)
        if y is None:
            continue
        outs.append(y)
        d = float(np.abs(np.asarray(y, np.float64) - ty).max())
        say(d <= lim, "swinmini N=%d: max |ours - PyTorch fp32| = %.3g <= %.3g (2 x PyTorch bf16's %.3g + 1e-3)"
            % (N, d, lim, db))
    if len(outs) == 2:
        say(outs[0].tobytes() == outs[1].tobytes(), "swinmini: the same bits at N = 4 and 8")


# ---- refusals ----
def refused(name, nodes, inputs, words):
    X = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, inputs[0])
    Y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    inits = [numpy_helper.from_array(np.ones(s, np.float32), "c%d" % i) for i, s in enumerate(inputs[1:])]
    m = helper.make_model(helper.make_graph(nodes, name, [X], [Y], inits),
                          opset_imports=[helper.make_opsetid("", 14)])
    p = os.path.join(W, name + ".onnx")
    onnx.save(m, p)
    out = os.path.join(W, name + "_out")
    r = subprocess.run([os.path.join(TOOLS, "tpu-compile"), p, "--mxu", "4", "--cores", "1", "-o", out],
                       capture_output=True, text=True)
    lines = r.stderr.strip().split("\n")
    good = (r.returncode == 2 and len(lines) == 1 and lines[0].startswith("tpu-compile: error: ")
            and all(w in lines[0] for w in words) and not os.path.exists(out))
    say(good, "%s refused: exit %d: %s" % (name, r.returncode, r.stderr.strip()))


def refusals():
    for name, eq, shapes, why in (
            ("ellipsis", "...ij,...jk->...ik", [[2, 3, 4], [2, 4, 5]], "ellipsis"),
            ("diagonal", "bii->bi", [[2, 3, 3]], "twice"),
            ("sum1", "bij->bi", [[2, 3, 4]], "summed within one operand"),
            ("outer", "bi,bj->bij", [[2, 3], [2, 4]], "0 contracted labels"),
            ("twok", "bij,bij->b", [[2, 3, 4], [2, 3, 4]], "2 contracted labels")):
        ins = ["x"] + ["c%d" % i for i in range(len(shapes) - 1)]
        refused("einsum_" + name, [helper.make_node("Einsum", ins, ["y"], equation=eq, name="E_" + name)],
                shapes, ["'E_" + name + "'", eq, why])
    # a Range whose limit is computed from the input at run time
    nodes = [helper.make_node("ReduceMax", ["x"], ["l"], axes=[1], keepdims=0, name="lim"),
             helper.make_node("Range", ["c0", "l", "c1"], ["r"], name="R"),
             helper.make_node("Add", ["x", "r"], ["y"])]
    X = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])
    Y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    inits = [numpy_helper.from_array(np.array(0, np.float32), "c0"), numpy_helper.from_array(np.array(1, np.float32), "c1")]
    m = helper.make_model(helper.make_graph(nodes, "range_act", [X], [Y], inits), opset_imports=[helper.make_opsetid("", 14)])
    p = os.path.join(W, "range_act.onnx")
    onnx.save(m, p)
    out = os.path.join(W, "range_act_out")
    r = subprocess.run([os.path.join(TOOLS, "tpu-compile"), p, "--mxu", "4", "--cores", "1", "-o", out],
                       capture_output=True, text=True)
    lines = r.stderr.strip().split("\n")
    say(r.returncode == 2 and len(lines) == 1 and "'R'" in lines[0] and "run time" in lines[0] and not os.path.exists(out),
        "range_act refused: exit %d: %s" % (r.returncode, r.stderr.strip()))


mask_tests()
einsum_tests()
swin_blocks()
refusals()
print("swin: %d failure(s)" % len(FAILS))
sys.exit(1 if FAILS else 0)
