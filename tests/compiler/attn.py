# SPDX-License-Identifier: Apache-2.0
"""test-compiler 2n (issue 32, attention): torch 1.13's nn.TransformerEncoderLayer (ReLU,
dropout 0, eval mode, random weights) exported at opset 14, compiled by tpu-compile and run
by tpu-infer on the C model, against PyTorch fp32 within the bound derived from the numerics
contract.

  enc32   d_model 32, 2 heads, feed-forward 64, batch_first=True, x [2, 5, 32]; N = 4, 8, 16
  enc64   d_model 64, 4 heads, feed-forward 128, the default layout (sequence first),
          x [6, 3, 64]; N = 8, 16

The graph torch writes: Transpose [1, 0, 2] (batch_first only), the in-projection MatMul + Add,
three Slices of it (q, k, v), Reshapes and Transposes of the heads, q / sqrt(d_head), a
Transpose [1, 2, 0] of k (read in place by q k^T's transposed weight loads), MatMul q k^T and
MatMul p v of two activations, Softmax, the heads merged (Transpose, Reshape), the
out-projection Gemm, residual Adds, two LayerNorm patterns, the ReLU feed-forward.

The bound (tests/conformance/refops.py, docs/conformance.md "MatMul of two activations"):
the per-operator bounds composed through the graph (refops.evaluate, each node's inputs
carrying their errors); the LayerNorm patterns are bounded as the compiler computes them (one
LayerNorm node: refops.op_layernormalization), so the reference graph is torch's export of the
same module at opset 17, which writes LayerNormalization there and the same nodes elsewhere
(checked). Every output element must lie within its bound of the exact value (float64), and
PyTorch's fp32 result within the same bound plus its own distance to the exact value.

Every node, too (per_node): the model cut after each node, the node's refops bound applied to
the bf16 values it read (no input error), the machine's output within it; the bound is tight
there (about one bf16 rounding plus the operator's own error) and a MatMul's output with its
heads rotated is rejected.

The test can fail: the same check is applied to wrong answers, which it must reject: PyTorch's
output with one element moved by 1.5 times its bound, and the layer computed with its heads
merged in the wrong order (a head split/merge bug); and the bound must say something (its
largest value below 1/8 of the output's largest magnitude).

Also: the same model on 2 cores (the batch split) is refused with one line naming the node;
an encoder with the exact GELU (Erf) runs within 2 x PyTorch bf16's error + 1e-3; MatMul / Transpose / Slice special cases against numpy (exact
data movement: the same bits).

With "full" (make test-compiler-attn-full, in make test-full): larger layers only,
  enc128  d_model 128, 4 heads, feed-forward 512, batch_first, x [2, 32, 128]; N = 16
  bert    d_model 768, 12 heads, feed-forward 3072 (BERT-base's layer), batch_first,
          x [1, 128, 768]; N = 128
with the same checks and IMEM 32768.

usage: attn.py WORKDIR BUILD_TOOLS [full]     (exit 1 on any failure)
"""
import copy
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

# tests/compiler/mask.py imports the helpers below and sets W and TOOLS itself
MAIN = __name__ == "__main__"
W, TOOLS = (sys.argv[1], sys.argv[2]) if MAIN else (None, None)
FULL = MAIN and len(sys.argv) > 3 and sys.argv[3] == "full"
IMEM = ["--imem-insns", "32768"] if FULL else []
if MAIN:
    os.makedirs(W, exist_ok=True)
torch.manual_seed(32)
fails = 0


def say(ok, msg):
    global fails
    print(("ok: " if ok else "FAIL: ") + msg)
    if not ok:
        fails += 1


def compile_model(name, onnx_path, batch, N, cores=1):
    d = os.path.join(W, "%s_N%d_C%d" % (name, N, cores))
    r = subprocess.run([os.path.join(TOOLS, "tpu-compile"), onnx_path, "--mxu", str(N), "--cores",
                        str(cores), "--batch", str(batch), "-o", d] + IMEM,
                       capture_output=True, text=True)
    return d, r


def run(name, onnx_path, x, N):
    d, r = compile_model(name, onnx_path, x.shape[0], N)
    if r.returncode:
        say(False, "%s N=%d: tpu-compile: %s" % (name, N, r.stderr.strip()))
        return None
    return tchelp.infer(TOOLS, d, x, name, N, say)


def within(got, ref):
    """(every element within its bound, the worst |got - exact| / bound)"""
    err = np.abs(got.astype(np.float64) - ref.v)
    ratio = np.where(ref.e > 0, err / np.where(ref.e > 0, ref.e, 1), np.where(err > 0, np.inf, 0))
    ok = got.shape == ref.v.shape and bool(np.all(err <= ref.e))
    return ok, float(np.nanmax(ratio))


# ---- the reference: refops with the shape computations torch writes ----
def _int_val(raw):
    raw = np.asarray(raw, dtype=np.int64)
    return refops.Val(raw.astype(np.float64), raw=raw)


def _shape(node, ins):
    return _int_val(ins[0].v.shape)


def _int_or(op, f):
    """Integer constant arithmetic (the head size, the slice bounds) exactly; else refops'."""
    def fn(node, ins):
        if all(i is not None and i.raw is not None and np.issubdtype(np.asarray(i.raw).dtype, np.integer)
               for i in ins):
            return _int_val(f(np.asarray(ins[0].raw), np.asarray(ins[1].raw)))
        return op(node, ins)
    return fn


def _gather(node, ins):
    if ins[0].raw is not None:
        return _int_val(np.take(np.asarray(ins[0].raw), np.asarray(ins[1].raw),
                                axis=refops.attrs(node).get("axis", 0)))
    return refops.op_gather(node, ins)


LOCAL = dict(refops.OPS)
LOCAL.update({"Shape": _shape, "Gather": _gather,
              "Add": _int_or(refops.op_add, lambda a, b: a + b),
              "Mul": _int_or(refops.op_mul, lambda a, b: a * b),
              "Div": _int_or(refops.op_div, lambda a, b: a // b)})


def reference(path, x):
    """refops.evaluate of the model at `path` (Constant nodes as constants)."""
    g = onnx.load(path).graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    g2 = helper.make_graph([n for n in g.node if n.op_type != "Constant"], "ref", g.input, g.output)
    saved = dict(refops.OPS)
    refops.OPS.clear()
    vac = []
    for k, fn in LOCAL.items():
        def wrap(node, ins, fn=fn):
            y = fn(node, ins)
            y.e = np.where(np.isnan(y.e), np.inf, y.e)  # inf x 0 in a vacuous bound
            if y.raw is None and not vac and y.v.size and y.e.max() > np.abs(y.v).max():
                vac.append(node.name)
            return y
        refops.OPS[k] = wrap
    try:
        return refops.evaluate(g2, x.astype(np.float64), consts)[0], (vac or ["none"])[0]
    finally:
        refops.OPS.clear()
        refops.OPS.update(saved)


def rb_np(a):
    """float32 -> bf16 -> float32 (RNE, subnormals to zero), as the machine stores a tensor."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    u = np.where((u & 0x7F800000) == 0, u & 0x80000000, u).astype(np.uint32)
    return u.view(np.float32)


def per_node(name, path, x, N):
    """Every node of the layer against its own derived bound, given the bf16 values it read.

    The model at `path` is cut after each node whose output is an activation (that tensor
    made the graph output, the nodes it needs kept) and run: the machine's value of every
    intermediate. Node n's reference is its refops operator applied to the bf16 roundings of
    the machine's values of its inputs (what the whole model's node reads from host memory)
    with no input error; the machine's output, rounded to bf16 as the whole model stores it,
    must lie within that operator's bound plus the rounding. Returns (nodes checked, worst
    |ours - exact| / bound, the node of the worst)."""
    m = onnx.load(path)
    g = m.graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    nodes = [n for n in g.node if n.op_type != "Constant"]
    # which tensors are activations, and the constants' (shape computations') values
    env = {g.input[0].name: refops.Val(x.astype(np.float64), act=True)}
    for k, v in consts.items():
        env[k] = refops.Val(v.astype(np.float64), raw=v)
    for n in nodes:
        env[n.output[0]] = LOCAL[n.op_type](n, [env[i] if i else None for i in n.input])
    act = {n.output[0] for n in nodes if env[n.output[0]].act and env[n.output[0]].raw is None}
    prod = {n.output[0]: n for n in nodes}
    mach = {g.input[0].name: x.astype(np.float32)}
    for n in nodes:
        t = n.output[0]
        if t not in act:
            continue
        need, stack = set(), [t]
        while stack:  # the nodes t depends on
            u = stack.pop()
            if u in prod and u not in need:
                need.add(u)
                stack.extend(i for i in prod[u].input if i)
        keep = [k for k in g.node if k.op_type == "Constant" or k.output[0] in need]
        cut = helper.make_model(helper.make_graph(keep, "cut", g.input, [helper.make_tensor_value_info(t, onnx.TensorProto.FLOAT, None)],
                                                  g.initializer), opset_imports=m.opset_import)
        cp = os.path.join(W, "%s_cut.onnx" % name)
        onnx.save(cut, cp)
        y = run("%s_cut" % name, cp, x, N)
        if y is None:
            return 0, float("inf"), t
        mach[t] = y
    worst, where, count = 0.0, None, 0
    for n in nodes:
        t = n.output[0]
        if t not in act:
            continue
        ins = []
        for i in n.input:
            if not i:
                ins.append(None)
            elif i in mach:  # an activation: the bf16 the node reads, exact as given
                ins.append(refops.Val(rb_np(mach[i]).astype(np.float64), bf=True, act=True))
            else:
                ins.append(env[i])
        ref = refops.rb(LOCAL[n.op_type](n, ins))
        got = rb_np(mach[t]).astype(np.float64)
        err = np.abs(got - ref.v)
        r = float(np.max(np.where(ref.e > 0, err / np.where(ref.e > 0, ref.e, 1), np.where(err > 0, np.inf, 0))))
        say(r <= 1, "%s N=%d: node %s (%s) within its own bound given its inputs (worst %.3f of it)" % (name, N, n.name, n.op_type, r))
        if n.op_type == "MatMul" and all(i in mach for i in n.input):  # the check can fail
            rot = rb_np(np.roll(mach[t], 1, axis=0)).astype(np.float64)
            ok_rot = bool(np.all(np.abs(rot - ref.v) <= ref.e))
            say(not ok_rot, "%s N=%d: node %s: the same check rejects its output with the heads rotated" % (name, N, n.name))
        count += 1
        if r >= worst:
            worst, where = r, n.name
    return count, worst, where


def merged_wrong(m, x, batch_first):
    """The layer with its heads merged in reverse order (a mutation the bound must catch)."""
    if batch_first:
        x = x.transpose(0, 1)
    S, B, D = x.shape
    H = m.self_attn.num_heads
    dh = D // H
    qkv = torch.nn.functional.linear(x, m.self_attn.in_proj_weight, m.self_attn.in_proj_bias)
    q, k, v = qkv.chunk(3, dim=-1)
    q = q.reshape(S, B * H, dh).transpose(0, 1) / dh ** 0.5
    k = k.reshape(S, B * H, dh).transpose(0, 1)
    v = v.reshape(S, B * H, dh).transpose(0, 1)
    o = torch.softmax(q @ k.transpose(1, 2), dim=-1) @ v          # [B*H, S, dh]
    o = o.reshape(B, H, S, dh).flip(1).reshape(B * H, S, dh)      # heads reversed
    o = o.transpose(0, 1).reshape(S, B, D)
    a = m.self_attn.out_proj(o)
    h1 = m.norm1(x + a)
    y = m.norm2(h1 + m.linear2(torch.relu(m.linear1(h1))))
    return y.transpose(0, 1) if batch_first else y


def torch_limit(m, x):
    """PyTorch's fp32 output of module m on x, the distance db of its own bf16 run (weights,
    buffers and activations bfloat16) from it, and the limit 2 db + 1e-3 that ours must meet
    (docs/conformance.md "Attention"). Elements that are NaN in both runs (a fully masked
    row) are left out of db."""
    with torch.no_grad():
        ty = m(x).numpy().astype(np.float64)
        tb = copy.deepcopy(m).to(torch.bfloat16)(x.to(torch.bfloat16)).float().numpy().astype(np.float64)
    db = float(np.nanmax(np.abs(tb - ty)))
    return ty, db, 2 * db + 1e-3


def encoder(name, d, heads, ff, batch_first, shape, Ns):
    m = torch.nn.TransformerEncoderLayer(d, heads, dim_feedforward=ff, dropout=0.0,
                                         batch_first=batch_first).eval()
    x = torch.randn(*shape)
    p14 = os.path.join(W, name + ".onnx")
    p17 = os.path.join(W, name + "_17.onnx")
    torch.onnx.export(m, x, p14, opset_version=14)
    torch.onnx.export(m, x, p17, opset_version=17)
    ops14 = [n.op_type for n in onnx.load(p14).graph.node]
    ops17 = [n.op_type for n in onnx.load(p17).graph.node]
    say({"MatMul", "Transpose", "Slice", "Reshape", "Softmax"} <= set(ops14) and "LayerNormalization" not in ops14,
        "%s: torch 1.13 at opset 14 writes %d nodes: %s" % (name, len(ops14), " ".join(sorted(set(ops14)))))
    # the opset-17 export is the opset-14 one with each LayerNorm pattern as one node
    ln = ["ReduceMean", "Sub", "Constant", "Pow", "ReduceMean", "Constant", "Add", "Sqrt", "Div", "Mul", "Add"]
    s14 = " ".join(ops14).replace(" ".join(ln), "LayerNormalization")
    say(s14 == " ".join(ops17), "%s: the opset-17 export (the reference graph) differs only by its LayerNormalization nodes" % name)
    ty, db, lim = torch_limit(m, x)
    with torch.no_grad():
        wrong = merged_wrong(m, x, batch_first).numpy().astype(np.float64)
    ref, first_vacuous = reference(p17, x.numpy())
    ref = refops.rb(ref)
    tex = np.abs(ty - ref.v).max() / np.abs(ref.v).max()
    say(tex < 1e-5, "%s: PyTorch fp32 agrees with the float64 reference (%.2g relative)" % (name, tex))
    # the composed bound is a valid worst case, but vacuous from the attention scores on:
    # every rounding amplified by sum |w| |a| with the same sign, then by exp in the Softmax
    print("info: %s: the composed bound exceeds the outputs from node %s on (largest %.3g, "
          "outputs up to %.3g): the yardstick below is the meaningful check" % (
              name, first_vacuous, ref.e.max(), np.abs(ref.v).max()))
    say(db < np.abs(ty).max() / 8, "%s: PyTorch's own bf16 run is %.3g from its fp32 run (outputs up to %.3g): "
        "the limit 2 x that + 1e-3 = %.3g says something" % (name, db, np.abs(ty).max(), lim))
    for N in Ns:
        y = run(name, p14, x.numpy(), N)
        if y is None:
            continue
        ok, worst = within(y, ref)
        say(ok, "%s N=%d: every element within the composed bound (worst %.3g of it)" % (name, N, worst))
        d_t = np.abs(y.astype(np.float64) - ty).max()
        say(y.shape == ty.shape and d_t <= lim, "%s N=%d: max |ours - PyTorch fp32| = %.3g <= %.3g (2 x PyTorch bf16's %.3g + 1e-3)"
            % (name, N, d_t, lim, db))
    # every node within its own bound (the opset-17 export, compiled as the opset-14 one is:
    # the same program, checked bit for bit on the whole layer)
    y14 = run(name, p14, x.numpy(), Ns[0])
    y17 = run(name + "_17", p17, x.numpy(), Ns[0])
    say(y14 is not None and y17 is not None and np.array_equal(y14.view(np.uint32), y17.view(np.uint32)),
        "%s N=%d: the opset-17 export (LayerNormalization) gives the bits of the opset-14 one (the pattern)" % (name, Ns[0]))
    cnt, worst, where = per_node(name + "_17", p17, x.numpy(), Ns[0])
    print("info: %s N=%d: %d nodes each within its own bound, worst %.3f of it (%s)" % (name, Ns[0], cnt, worst, where))
    moved = ty.copy()
    moved[(0,) * ty.ndim] += 1.5 * lim
    for what, w in (("one element moved by 1.5 limits", moved), ("heads merged in reverse order", wrong)):
        d_w = np.abs(w - ty).max()
        say(d_w > lim, "%s: the check rejects a wrong answer (%s: %.3g > %.3g)" % (name, what, d_w, lim))
    return p14


if MAIN:  # imported (tests/compiler/mask.py): the helpers above only
    if FULL:
        encoder("enc128", 128, 4, 512, True, (2, 32, 128), (16,))
        encoder("bert", 768, 12, 3072, True, (1, 128, 768), (128,))
        print("attn (full): %d failure(s)" % fails)
        sys.exit(1 if fails else 0)
    p32 = encoder("enc32", 32, 2, 64, True, (2, 5, 32), (4, 8, 16))
    encoder("enc64", 64, 4, 128, False, (6, 3, 64), (8, 16))


    # ---- exact data movement and a MatMul of two activations against numpy ----
    def small(name, nodes, xshape, inits, check):
        X = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(xshape))
        Y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
        mdl = helper.make_model(helper.make_graph(nodes, name, [X], [Y], inits),
                                opset_imports=[helper.make_opsetid("", 14)])
        pp = os.path.join(W, name + ".onnx")
        onnx.save(mdl, pp)
        x = (np.random.RandomState(len(name)).standard_normal(xshape) * 3).astype(np.float32)
        xb = (x.view(np.uint32) + 0x7FFF + ((x.view(np.uint32) >> 16) & 1)) & 0xFFFF0000  # RNE to bf16
        xb = xb.astype(np.uint32).view(np.float32)
        for N in (4, 8):
            y = run(name, pp, x, N)
            if y is not None:
                check(name, N, xb, y)


    def same_bits(want):
        def ck(name, N, xb, y):
            w = want(xb).astype(np.float32)
            say(y.shape == w.shape and np.array_equal(y.view(np.uint32), w.view(np.uint32)),
                "%s N=%d: the same bits as numpy's %s of the bf16 input" % (name, N, name))
        return ck


    # a 4-D permutation moving the last axis (the MXU's transposed load times the identity) and
    # one keeping it (DMA row copies)
    small("transpose_0312", [helper.make_node("Transpose", ["x"], ["y"], perm=[0, 3, 1, 2])], (2, 5, 3, 11), [],
          same_bits(lambda a: a.transpose(0, 3, 1, 2)))
    small("transpose_0213", [helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 1, 3])], (2, 5, 3, 11), [],
          same_bits(lambda a: a.transpose(0, 2, 1, 3)))
    st = helper.make_tensor("st", onnx.TensorProto.INT64, [2], [1, 2])
    en = helper.make_tensor("en", onnx.TensorProto.INT64, [2], [4, 100])
    axs = helper.make_tensor("ax", onnx.TensorProto.INT64, [2], [1, -1])
    small("slice", [helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"])], (2, 5, 19), [st, en, axs],
          same_bits(lambda a: a[:, 1:4, 2:]))


    def mm_check(name, N, xb, y):
        # x [2, 7, 9] times its own transpose [2, 9, 7]: products of bf16 values, the exact
        # result in float64 and the bound of one fp32 chain of K = 9 products (refops.dot_bound)
        a = refops.Val(xb.astype(np.float64), act=True)
        ref = refops.dot_bound(np.matmul, a, refops.Val(a.v.transpose(0, 2, 1), act=True), 9)
        ok, worst = within(y, refops.rb(ref))
        say(ok, "%s N=%d: x x^T within the bound of one fp32 chain (worst %.3f of it)" % (name, N, worst))


    small("matmul_xxt", [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
                         helper.make_node("MatMul", ["x", "t"], ["y"])], (2, 7, 9), [], mm_check)

    # ---- refused with one line naming the node (exit 2, nothing written) ----
    d, r = compile_model("enc32_cores2", p32, 2, 8, cores=2)
    lines = r.stderr.strip().split("\n")
    say(r.returncode == 2 and len(lines) == 1 and "'/self_attn/Transpose'" in lines[0] and "--cores 1" in lines[0]
        and not os.path.exists(d), "enc32 on 2 cores refused: exit %d: %s" % (r.returncode, r.stderr.strip()))
    mg = torch.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, activation="gelu", batch_first=True).eval()
    pg = os.path.join(W, "enc_gelu.onnx")
    xg = torch.randn(1, 3, 16)
    torch.onnx.export(mg, xg, pg, opset_version=14)
    tyg, dbg, limg = torch_limit(mg, xg)
    yg = run("enc_gelu", pg, xg.numpy(), 8)
    if yg is not None:
        dg = float(np.abs(yg.astype(np.float64) - tyg).max())
        say(yg.shape == tyg.shape and dg <= limg, "encoder with the exact GELU (Erf) N=8: max |ours - PyTorch fp32| = "
            "%.3g <= %.3g (2 x PyTorch bf16's %.3g + 1e-3)" % (dg, limg, dbg))
    X3 = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 4])
    Y3 = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    s2 = helper.make_tensor("s", onnx.TensorProto.INT64, [1], [0])
    e2 = helper.make_tensor("e", onnx.TensorProto.INT64, [1], [4])
    a2 = helper.make_tensor("a", onnx.TensorProto.INT64, [1], [2])
    a12 = helper.make_tensor("a12", onnx.TensorProto.INT64, [2], [1, 2])
    p2 = helper.make_tensor("p", onnx.TensorProto.INT64, [1], [2])
    for name, nodes, inits, words in (
            ("perm_bad", [helper.make_node("Transpose", ["x"], ["y"], name="tp", perm=[0, 2, 2])], [], ["'tp'", "permutation"]),
            ("slice_step", [helper.make_node("Slice", ["x", "s", "e", "a", "p"], ["y"], name="sl")], [s2, e2, a2, p2], ["'sl'", "steps"]),
            ("matmul_1d", [helper.make_node("ReduceSum", ["x", "a12"], ["r"], keepdims=0),
                           helper.make_node("MatMul", ["x", "r"], ["y"], name="mm1")], [a12], ["'mm1'", "at least 2"])):
        m = helper.make_model(helper.make_graph(nodes, name, [X3], [Y3], inits), opset_imports=[helper.make_opsetid("", 13)])
        pp = os.path.join(W, "bad_" + name + ".onnx")
        onnx.save(m, pp)
        d, r = compile_model("bad_" + name, pp, 2, 4)
        lines = r.stderr.strip().split("\n")
        good = (r.returncode == 2 and len(lines) == 1 and lines[0].startswith("tpu-compile: error: ")
                and all(w in lines[0] for w in words) and not os.path.exists(d))
        say(good, "%s refused: exit %d: %s" % (name, r.returncode, r.stderr.strip()))

    print("attn: %d failure(s)" % fails)
    sys.exit(1 if fails else 0)
