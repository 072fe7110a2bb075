# SPDX-License-Identifier: Apache-2.0
"""A stand-in for build/tools/tpu-compile and tpu-infer, to develop and test the runner.

    standin.py compile MODEL --mxu N --imem-insns I [--batch B] -o DIR
    standin.py infer DIR --input X.npy --output Y.npy

It is not the compiler: `compile` checks what it can run and copies the model; `infer`
evaluates it with numpy in an emulation of the machine's arithmetic (docs/numerics.md):
activations and weights rounded to bf16 (RNE, DAZ), exact products, one sequential fp32
chain per dot product, FTZ on every fp32 result, biases and VPU steps in fp32, the output
rounded to bf16. The VPU functions use numpy's float32 exp/tanh and math.erf (not the VPU's algorithms),
so its results are close to the machine's but not its bits.

STANDIN_FAULT (environment) makes it misbehave, for the runner's self-test (selftest.sh):
  crash     infer aborts (SIGABRT)
  noout     infer exits 0 without writing the output
  reject2   compile exits 2 with two lines on stderr
  shape     infer writes the output with one element too few
  offset    infer adds 0.1 + |y| / 16 to the output's first element y
  acceptall compile accepts every model (no checks)
"""
import math
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refops  # noqa: E402

F32 = np.float32
TINY32 = F32(2.0 ** -126)


def ftz(a):
    a = np.asarray(a, dtype=F32)
    return np.where(np.abs(a) < TINY32, np.copysign(F32(0), a), a).astype(F32)


def bf16(a):
    """fp32 -> bf16 (RNE, DAZ, canonical NaN), returned as the float32 it widens to."""
    b = np.asarray(a, dtype=F32).view(np.uint32).astype(np.uint64)
    exp = b & 0x7F800000
    b = np.where(exp == 0, b & 0x80000000, b)
    nan = (b & 0x7FFFFFFF) > 0x7F800000
    r = ((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000) & 0xFFFFFFFF
    r = np.where(nan, 0x7FC00000, r)
    return r.astype(np.uint32).view(F32)


def add(a, b):
    return ftz(np.asarray(a, F32) + np.asarray(b, F32))


def mul(a, b):
    return ftz(np.asarray(a, F32) * np.asarray(b, F32))


def chain_w(A, W):
    """A (..., J) @ W (J, M): one fp32 chain per output in ascending j, from -0."""
    acc = np.full(A.shape[:-1] + (W.shape[1],), F32(-0.0), dtype=F32)
    for j in range(A.shape[-1]):
        acc = add(acc, mul(A[..., j, None], W[j]))
    return acc


def chain_matmul(A, B):
    """np.matmul semantics (ndim >= 2), one fp32 chain per output."""
    acc = None
    for k in range(A.shape[-1]):
        p = mul(A[..., :, k:k + 1], B[..., k:k + 1, :])
        acc = p if acc is None else add(acc, p)
    return add(np.full(acc.shape, F32(-0.0), dtype=F32), acc)


def chain_sum(a, axis):
    a = np.moveaxis(np.asarray(a, F32), axis, -1)
    acc = np.full(a.shape[:-1], F32(-0.0), dtype=F32)
    for j in range(a.shape[-1]):
        acc = add(acc, a[..., j])
    return acc


def _sig(x):
    xb = bf16(x)
    E = ftz(np.exp(-np.abs(xb)))
    R = ftz(F32(1) / add(F32(1), E))
    return bf16(np.where(xb >= 0, R, mul(E, R)))


def _tanh(x):
    return bf16(ftz(np.tanh(bf16(x))))


def recurrent(op, a, ins):
    """LSTM / GRU / RNN as the compiler unrolls them (fold_rnn.c): the input projection one
    fp32 chain per element, Wb + Rb summed in fp32, every node's output stored as bf16; per
    step h R_k^T (a chain), the fp32 add, the gate function, the state update in fp32 steps,
    each rounded to bf16. Y, Y_h, Y_c in ONNX's layouts."""
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    H = int(a["hidden_size"])
    layout = int(a.get("layout", 0))
    direction = a.get("direction", "forward")
    lbr = int(a.get("linear_before_reset", 0))
    X, W, R = ins[0], ins[1], ins[2]
    Bs = ins[3] if len(ins) > 3 and ins[3] is not None else None
    xb = bf16(X if layout else np.transpose(X, (1, 0, 2)))
    T = xb.shape[1]
    D = 2 if direction == "bidirectional" else 1
    ys, hs, cs = [], [], []
    for d in range(D):
        xp = chain_w(xb, bf16(W[d].T.astype(F32)))
        if Bs is not None:
            wb, rb = Bs[d][:G * H].astype(F32), Bs[d][G * H:].astype(F32)
            bx = add(wb, rb)
            if op == "GRU" and lbr:
                bx[2 * H:] = wb[2 * H:]
            xp = add(bf16(xp), bx)
        xp = bf16(xp)
        Rt = [bf16(R[d][k * H:(k + 1) * H].T.astype(F32)) for k in range(G)]
        rbh = Bs[d][G * H + 2 * H:].astype(F32) if (Bs is not None and op == "GRU" and lbr) else None
        h = c = None
        y = [None] * T
        for t in (range(T - 1, -1, -1) if (d == 1 or direction == "reverse") else range(T)):
            x = [xp[:, t, k * H:(k + 1) * H] for k in range(G)]

            def pre(k):
                return x[k] if h is None else add(x[k], bf16(chain_w(h, Rt[k])))
            if op == "RNN":
                h = _tanh(pre(0))
            elif op == "LSTM":
                i, o, g = _sig(pre(0)), _sig(pre(1)), _tanh(pre(3))
                ig = bf16(mul(i, g))
                c = ig if c is None else bf16(add(bf16(mul(_sig(pre(2)), c)), ig))
                h = bf16(mul(o, _tanh(c)))
            else:
                z = _sig(pre(0))
                if lbr:
                    hr = None
                    if h is not None:
                        hr = bf16(chain_w(h, Rt[2]))
                        if rbh is not None and np.any(rbh != 0):
                            hr = bf16(add(hr, rbh))
                    elif rbh is not None and np.any(rbh != 0):
                        hr = rbh
                    p = x[2] if hr is None else add(x[2], bf16(mul(_sig(pre(1)), hr)))
                else:
                    p = x[2] if h is None else add(x[2], bf16(chain_w(bf16(mul(_sig(pre(1)), h)), Rt[2])))
                n = _tanh(p)
                h = bf16(add(n, -bf16(mul(z, n)))) if h is None else bf16(add(n, bf16(mul(z, bf16(add(h, -n))))))
            y[t] = h
        ys.append(np.stack(y, 0))
        hs.append(h)
        cs.append(c)
    Y = np.stack(ys, 1)                       # [T, D, B, H]
    Yh = np.stack(hs, 0)
    Yc = np.stack(cs, 0) if op == "LSTM" else None
    if layout:
        Y = np.transpose(Y, (2, 0, 1, 3))
        Yh = np.transpose(Yh, (1, 0, 2))
        Yc = np.transpose(Yc, (1, 0, 2)) if Yc is not None else None
    return [Y, Yh] + ([Yc] if Yc is not None else [])


def emulate(graph, x, consts):
    env = {graph.input[0].name: np.asarray(x, F32)}
    env.update(consts)
    for node in graph.node:
        a = refops.attrs(node)
        ins = [env.get(n) if n else None for n in node.input]
        op = node.op_type
        X = ins[0] if ins else None
        if op == "Constant":
            y = numpy_helper.to_array(node.attribute[0].t)
            env[node.output[0]] = y if np.issubdtype(y.dtype, np.integer) else np.asarray(y, F32)
            continue
        if op in ("Identity", "Dropout"):
            y = X
        elif op == "Relu":
            y = np.maximum(bf16(X), F32(0))
        elif op == "Reshape":
            y = X.reshape(refops.reshape_target(list(X.shape), ins[1].tolist(),
                                                a.get("allowzero", 0)))
        elif op == "Flatten":
            y = X.reshape(refops.flatten_target(list(X.shape), a.get("axis", 1)))
        elif op == "Add":
            y = add(bf16(X), ins[1])
        elif op == "Mul":
            y = mul(bf16(X), ins[1])
        elif op == "Sub":
            y = ftz(bf16(X) - np.asarray(ins[1], F32))
        elif op == "Neg":
            y = -bf16(X)
        elif op in ("HardSigmoid", "HardSwish"):
            al = F32(1.0 / 6.0) if op == "HardSwish" else F32(a.get("alpha", 0.2))
            be = F32(0.5) if op == "HardSwish" else F32(a.get("beta", 0.5))
            xb = bf16(X)
            y = np.minimum(np.maximum(add(mul(xb, al), be), F32(0)), F32(1))
            if op == "HardSwish":
                y = mul(y, xb)
        elif op in ("ReduceSum", "ReduceMean"):
            axes = refops._reduce_axes(node, [refops.Val(X)] + [
                refops.Val(i, raw=i) if i is not None else None for i in ins[1:]], X.ndim)
            if axes is None:
                y = X
            else:
                xb = bf16(X)
                keep = bool(a.get("keepdims", 1))
                moved = np.moveaxis(xb, axes, list(range(xb.ndim - len(axes), xb.ndim)))
                flat = moved.reshape(moved.shape[:xb.ndim - len(axes)] + (-1,))
                y = chain_sum(flat, -1)
                if op == "ReduceMean":
                    y = mul(y, F32(1.0 / flat.shape[-1]))
                if keep:
                    y = y.reshape([1 if k in axes else d for k, d in enumerate(X.shape)])
        elif op == "ReduceMax":
            axes = refops._reduce_axes(node, [refops.Val(X)], X.ndim)
            y = X if axes is None else bf16(X).max(axis=axes, keepdims=bool(a.get("keepdims", 1)))
        elif op == "Div":
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                if node.input[1] in consts:         # x * fp32(1/c)
                    inv = (1.0 / np.asarray(ins[1], np.float64)).astype(F32)
                    y = mul(bf16(X), inv)
                elif node.input[0] in consts:       # recip(x) * c
                    y = mul(ftz(F32(1) / bf16(ins[1])), X)
                else:                               # x * recip(y)
                    y = mul(bf16(X), ftz(F32(1) / bf16(ins[1])))
        elif op in ("Sqrt", "Pow"):
            xb = bf16(X)
            if op == "Pow" and float(np.asarray(ins[1]).reshape(-1)[0]) == 2.0:
                y = mul(xb, xb)
            else:                                   # recip(rsqrt(x)), each correctly rounded
                with np.errstate(divide="ignore", invalid="ignore"):
                    r = ftz((1.0 / np.sqrt(xb.astype(np.float64))).astype(F32))
                    y = ftz(F32(1) / r)
        elif op == "Exp":
            with np.errstate(over="ignore"):
                y = ftz(np.exp(bf16(X)))
        elif op == "LayerNormalization":
            xb = bf16(X)
            axis = int(a.get("axis", -1)) % X.ndim
            lead = xb.shape[:axis]
            flat = xb.reshape(lead + (-1,))
            n = flat.shape[-1]
            kinv = F32(1.0 / n)
            mean = mul(chain_sum(flat, -1), kinv)[..., None]
            d = ftz(flat - mean)
            var = mul(chain_sum(bf16(mul(d, d)), -1), kinv)
            r = ftz((1.0 / np.sqrt(add(var, F32(a.get("epsilon", 1e-5))).astype(np.float64))).astype(F32))
            y = mul(d, r[..., None])
            if len(ins) > 1 and ins[1] is not None:
                y = mul(y, np.asarray(ins[1], F32).reshape(-1))
            if len(ins) > 2 and ins[2] is not None:
                y = add(y, np.asarray(ins[2], F32).reshape(-1))
            y = y.reshape(X.shape)
        elif op == "Clip":
            lo = ins[1] if len(ins) > 1 and ins[1] is not None else a.get("min", -np.inf)
            hi = ins[2] if len(ins) > 2 and ins[2] is not None else a.get("max", np.inf)
            y = np.minimum(np.maximum(bf16(X), F32(lo)), F32(hi))
        elif op == "Sigmoid":
            xb = bf16(X)
            E = ftz(np.exp(-np.abs(xb)))
            R = ftz(F32(1) / add(F32(1), E))
            y = np.where(xb >= 0, R, mul(E, R))
        elif op == "Tanh":
            y = ftz(np.tanh(bf16(X)))
        elif op == "Erf":
            xb = bf16(X)
            y = ftz(np.vectorize(math.erf, otypes=[np.float64])(xb.astype(np.float64)).astype(F32))
        elif op == "Softmax":
            xb = bf16(X)
            axis = a.get("axis", -1)
            m = np.max(xb, axis=axis, keepdims=True)
            e = ftz(np.exp(add(xb, -m)))
            s = np.expand_dims(chain_sum(e, axis), axis)
            y = mul(e, ftz(F32(1) / s))
        elif op in ("Gemm", "MatMul"):
            A, B = X, ins[1]
            if a.get("transA", 0):
                A = A.T
            if a.get("transB", 0):
                B = B.T
            alpha = F32(a.get("alpha", 1.0))
            W = bf16(mul(B, alpha)) if alpha != 1 else bf16(B)
            y = chain_matmul(bf16(A), W)
            if op == "Gemm" and len(ins) > 2 and ins[2] is not None:
                beta = F32(a.get("beta", 1.0))
                y = add(y, mul(ins[2], beta) if beta != 1 else ins[2])
        elif op == "Conv":
            kernel, geo, group, _ = refops.conv_geometry(node, X.shape, ins[1].shape)
            y = refops.conv_apply(bf16(X), bf16(ins[1]), kernel, geo, group,
                                  matmul=chain_w).astype(F32)
            if len(ins) > 2 and ins[2] is not None:
                y = add(y, refops.per_channel(ins[2], y.ndim))
        elif op in ("AveragePool", "GlobalAveragePool"):
            if op == "AveragePool":
                _, kernel, geo = refops.pool_setup(node, X.shape)
                inc = a.get("count_include_pad", 0)
            else:
                kernel = list(X.shape[2:])
                geo = refops.window_geometry(kernel, kernel, None, None, None, "VALID", 0)
                inc = 0
            w = refops.windows(bf16(X), kernel, geo, 0.0, 0.0).astype(F32)
            cnt = refops.avgpool_counts(X.shape, kernel, geo, inc)
            y = mul(chain_sum(w, -1), (1.0 / cnt).astype(F32))
        elif op == "Gather":
            y = np.take(X, np.asarray(ins[1]).astype(np.int64), axis=a.get("axis", 0))
        elif op == "Transpose":
            y = X.transpose(a.get("perm", list(range(X.ndim))[::-1]))
        elif op == "Slice":  # bits moved, as refops.op_slice
            st, en = [np.asarray(i).astype(np.int64).tolist() for i in ins[1:3]]
            ax = np.asarray(ins[3]).astype(np.int64).tolist() if len(ins) > 3 and ins[3] is not None else list(range(len(st)))
            sp = np.asarray(ins[4]).astype(np.int64).tolist() if len(ins) > 4 and ins[4] is not None else [1] * len(st)
            sl = [slice(None)] * X.ndim
            for s_, e_, a_, p_ in zip(st, en, ax, sp):
                sl[a_] = slice(s_, e_, p_)
            y = X[tuple(sl)]
        elif op == "Pad":  # bits moved and bf16(c) written, as refops.op_pad
            n = X.ndim
            if len(ins) > 1 and ins[1] is not None:
                pads = np.asarray(ins[1]).astype(np.int64).tolist()
                c = float(np.asarray(ins[2]).reshape(-1)[0]) if len(ins) > 2 and ins[2] is not None else 0.0
            else:
                pads, c = list(a["pads"]), float(a.get("value", 0.0))
            pw = [(pads[i], pads[i + n]) for i in range(n)]
            mode = a.get("mode", "constant")
            if mode == "constant":
                y = np.pad(bf16(X), pw, mode="constant", constant_values=bf16(np.array([c], F32))[0])
            else:
                y = np.pad(bf16(X), pw, mode=mode)
        elif op == "Concat":  # bits moved
            y = np.concatenate([bf16(i) for i in ins], axis=a.get("axis", 0))
        elif op == "ConvTranspose":  # the products exact, the sums in float64 then fp32
            geo = refops.convtranspose_geometry(node, X.shape, ins[1].shape)
            y = refops.convtranspose_apply(bf16(X).astype(np.float64), bf16(ins[1]).astype(np.float64),
                                           geo).astype(F32)
            if len(ins) > 2 and ins[2] is not None:
                y = add(y, refops.per_channel(ins[2], y.ndim))
        elif op == "MaxPool":
            _, kernel, geo = refops.pool_setup(node, X.shape)
            y = refops.windows(bf16(X), kernel, geo, -np.inf, -np.inf).max(axis=-1).astype(F32)
        elif op == "BatchNormalization":
            nd = X.ndim
            sc, B, mean, var = [refops.per_channel(p.astype(F32), nd) for p in ins[1:5]]
            eps = F32(a.get("epsilon", 1e-5))
            s = ftz(sc / ftz(np.sqrt(add(var, eps))))
            b2 = add(B, -mul(mean, s))
            y = add(mul(bf16(X), s), b2)
        elif op in ("LSTM", "GRU", "RNN"):
            for name, v in zip(node.output, recurrent(op, a, ins)):
                if name:
                    env[name] = v
            continue
        else:
            raise SystemExit("standin: no emulation of %s" % op)
        env[node.output[0]] = np.asarray(y, F32)
    return bf16(env[graph.output[0].name])


def reject(model, msg):
    sys.stderr.write("tpu-compile (stand-in): %s: %s\n" % (model, msg))
    if os.environ.get("STANDIN_FAULT") == "reject2":
        sys.stderr.write("  (a second line)\n")
    sys.exit(2)


def check(model_path, m):
    g = m.graph
    if len(g.output) != 1:
        reject(model_path, "the graph has %d outputs; one is supported" % len(g.output))
    if len(g.input) != 1:
        reject(model_path, "the graph has %d inputs; one is supported" % len(g.input))
    for vi in list(g.input) + list(g.output):
        if vi.type.WhichOneof("value") != "tensor_type":
            reject(model_path, "%s is a %s, not a tensor" % (vi.name, vi.type.WhichOneof("value")))
        if vi.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
            reject(model_path, "%s has element type %s; float is supported" % (
                vi.name, onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type)))
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_value") and d.dim_value == 0:
                reject(model_path, "%s is an empty tensor" % vi.name)
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for n in g.node:
        if n.op_type not in refops.OPS:
            reject(model_path, "operator %s is not supported" % n.op_type)
        a = refops.attrs(n)
        if a.get("training_mode", 0):
            reject(model_path, "%s: training_mode is not supported" % n.op_type)
        if n.op_type == "Pow":
            e = consts.get(n.input[1])
            if e is None or np.asarray(e).size != 1 or float(np.asarray(e).reshape(-1)[0]) not in (2.0, 0.5):
                reject(model_path, "Pow: only a constant exponent 2 or 0.5 is supported")
        if n.op_type == "Range" and any(i not in consts for i in n.input):
            reject(model_path, "Range: supported only on constants (folded at compile time)")
        if n.op_type in ("LSTM", "GRU", "RNN"):
            extra = [k for k in range(4, len(n.input)) if n.input[k]]
            if extra:
                reject(model_path, "%s: sequence_lens, initial states and peepholes are not emulated" % n.op_type)
            x0 = g.input[0].type.tensor_type.shape.dim[0].dim_value
            if not a.get("layout", 0) and n.input[0] == g.input[0].name and x0 > 1:
                reject(model_path, "%s: X sequence-first as the graph input" % n.op_type)
        if n.op_type == "Dropout" and len(n.input) > 2 and n.input[2]:
            if bool(np.asarray(consts[n.input[2]]).item()):
                reject(model_path, "Dropout: training_mode is not supported")


def main(argv):
    if len(argv) < 2 or argv[0] not in ("compile", "infer"):
        sys.stderr.write("usage: standin.py compile MODEL ... -o DIR | infer DIR --input X --output Y\n")
        return 2
    fault = os.environ.get("STANDIN_FAULT", "")
    if argv[0] == "compile":
        model_path = argv[1]
        out = argv[argv.index("-o") + 1]
        m = onnx.load(model_path)
        if fault != "acceptall":
            check(model_path, m)
        if fault == "reject2":
            reject(model_path, "stand-in fault reject2")
        os.makedirs(out, exist_ok=True)
        shutil.copyfile(model_path, os.path.join(out, "model.onnx"))
        return 0
    d = argv[1]
    xin = argv[argv.index("--input") + 1]
    yout = argv[argv.index("--output") + 1]
    if fault == "crash":
        os.abort()
    m = onnx.load(os.path.join(d, "model.onnx"))
    consts = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    y = emulate(m.graph, np.load(xin), consts)
    if fault == "noout":
        return 0
    if fault == "shape":
        y = y.reshape(-1)[:-1]
    if fault == "offset":
        y = y.copy()
        y.reshape(-1)[0] += F32(0.1) + abs(y.reshape(-1)[0]) / F32(16)
    np.save(yout, y.astype(F32))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
