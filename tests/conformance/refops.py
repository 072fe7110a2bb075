# SPDX-License-Identifier: Apache-2.0
"""Reference semantics and error bounds of the ONNX operators the compiler claims.

Every value is a Val: `v` is the exact result (float64, computed from the test's own fp32
inputs) and `e` a bound, element by element, on |what the machine may compute - v| under the
numerics contract (docs/numerics.md, docs/vpu.md) and the execution model of
docs/conformance.md. The bound is derived, not chosen: each rounding the machine may do
adds its own term, in the order the machine does it. docs/conformance.md writes the same
formulas down; keep the two in step.

The geometry helpers (pads, strides, windows) are shared with the stand-in (standin.py);
the runner checks this reference against the ONNX test's expected output, so a geometry
mistake here shows up as a reference error, not as a pass.
"""
import math

import numpy as np
from onnx import helper

# ---- constants of the contract ----
UB = 2.0 ** -8            # unit roundoff of fp32 -> bf16 (RNE, 8 significant bits)
U = 2.0 ** -24            # unit roundoff of fp32 (RNE, 24 significant bits)
TINY = 2.0 ** -126        # smallest normal: DAZ/FTZ lose less than this, absolutely
U64 = 2.0 ** -53          # float64, for the reference's own evaluation error
BF16_TO_INF = (2.0 - 2.0 ** -8) * 2.0 ** 127    # |x| >= this rounds to Inf in bf16
FP32_TO_INF = (2.0 - 2.0 ** -24) * 2.0 ** 127   # |x| >= this rounds to Inf in fp32

# VPU function accuracy, in fp32 ulps, as asserted by test-vpu-model (docs/vpu.md,
# "Bounds asserted by make test"): exp, recip <= 0.52; sigmoid <= 3.5; tanh <= 5; erf <= 0.75.
# In bf16 (bf16 in, bf16 out) every function is within 1 bf16 ulp of the exact value.
EXP_ULP32 = 0.52
RECIP_ULP32 = 0.52
SIGMOID_ULP32 = 3.5
TANH_ULP32 = 5.0
ERF_ULP32 = 0.75
RSQRT_ULP32 = 0.52
ULP32_REL = 2.0 ** -23    # one fp32 ulp of z is at most 2^-23 |z| (z normal)
ULP16_REL = 2.0 ** -7     # one bf16 ulp of z is at most 2^-7 |z| (z normal)


def gamma(k, u):
    """Higham's gamma_k = k u / (1 - k u): k roundings of relative size <= u."""
    k = max(int(k), 0)
    return k * u / (1.0 - k * u)


def fn_rel(ulp32):
    """Relative error of a VPU function f at a bf16 input, result stored as bf16 or fp32.

    bf16 result: < 1 bf16 ulp of f(x) <= 2^-7 |f(x)|. fp32 result: <= ulp32 fp32 ulps; if it
    is rounded to bf16 afterwards, + 2^-8 of the fp32 result. The larger of the two."""
    r32 = ulp32 * ULP32_REL
    return max(ULP16_REL, r32 + UB * (1.0 + r32))


class NoReference(Exception):
    """The test's output is not a deterministic function of its inputs (e.g. Dropout in
    training mode): the machine must reject the model."""


class Val:
    """An exact value v and a bound e on the machine's error, element by element.

    bf: the machine's value is a bf16 number (rounding it to bf16 again changes nothing).
    act: derived from the graph input (an activation), not from initializers only.
    raw: the initializer as stored (integer shape tensors, booleans)."""
    __slots__ = ("v", "e", "bf", "act", "raw")

    def __init__(self, v, e=None, bf=False, act=False, raw=None):
        self.v = np.asarray(v, dtype=np.float64)
        self.e = np.zeros_like(self.v) if e is None else np.broadcast_to(
            np.asarray(e, dtype=np.float64), self.v.shape).copy()
        self.bf = bf
        self.act = act
        self.raw = raw

    def like(self, v, e, bf=None, act=None):
        return Val(v, e, self.bf if bf is None else bf, self.act if act is None else act)


# ---- rounding steps (docs/conformance.md "Rounding steps") ----

def rb(x):
    """x rounded fp32 -> bf16 (RNE, DAZ): |err| grows by 2^-8 (|v| + e) + 2^-126."""
    if x.bf:
        return x
    m = np.abs(x.v) + x.e
    e = x.e + UB * m + TINY
    e = np.where(m >= BF16_TO_INF, np.inf, e)
    return Val(x.v, e, bf=True, act=x.act)


def rf(x):
    """One fp32 rounding (an add or a multiply, RNE, FTZ): 2^-24 (|v| + e) + 2^-126."""
    m = np.abs(x.v) + x.e
    e = x.e + U * m + TINY
    e = np.where(m >= FP32_TO_INF, np.inf, e)
    return Val(x.v, e, bf=False, act=x.act)


def vadd(a, b):
    return Val(a.v + b.v, a.e + b.e, act=a.act or b.act)


def vsub(a, b):
    return Val(a.v - b.v, a.e + b.e, act=a.act or b.act)


def vmul(a, b):
    return Val(a.v * b.v, np.abs(a.v) * b.e + np.abs(b.v) * a.e + a.e * b.e,
               act=a.act or b.act)


def vscale(a, c):
    return Val(c * a.v, abs(c) * a.e, act=a.act)


def vsqrt(a):
    lo = np.sqrt(np.maximum(a.v - a.e, 0.0))
    return Val(np.sqrt(a.v), np.sqrt(a.v + a.e) - lo, act=a.act)


def vdiv(a, b):
    d = np.abs(b.v) - b.e
    if np.any(d <= 0):
        e = np.full(np.broadcast(a.v, b.v).shape, np.inf)
    else:
        e = (a.e * np.abs(b.v) + np.abs(a.v) * b.e) / (np.abs(b.v) * d)
    return Val(a.v / b.v, e, act=a.act or b.act)


def vrecip_vpu(a):
    """vpu_recip: <= 0.52 fp32 ulp of 1/a (docs/vpu.md), after propagating a's error."""
    r = vdiv(Val(np.ones_like(a.v)), a)
    rel = RECIP_ULP32 * ULP32_REL
    return Val(r.v, r.e + rel * (np.abs(r.v) + r.e) + TINY, act=a.act)


def vmax_all(vals):
    """Several bounds of the same exact value (one per allowed schedule): the largest."""
    e = vals[0].e
    for x in vals[1:]:
        assert x.v.shape == vals[0].v.shape
        e = np.maximum(e, x.e)
    return Val(vals[0].v, e, bf=all(x.bf for x in vals), act=vals[0].act)


def f64_slack(x, terms=None, k=4):
    """The reference is float64, not exact: add gamma_k(2^-53) of the magnitudes involved."""
    mag = np.abs(x.v) if terms is None else terms
    return Val(x.v, x.e + gamma(k, U64) * mag, bf=x.bf, act=x.act)


# ---- the dot product (docs/conformance.md "Dot products") ----

def dot_bound(L, a, w, K, seed=None):
    """An fp32 chain of K bf16 x bf16 products (any order), optionally seeded.

    L(x, y): the bilinear map (matmul, conv, window sum) applied to arrays; monotone for
    nonnegative arguments. a, w: the operands *after* their rounding to bf16 (their e
    includes it). seed: a Val added into the same chain (bias as accumulator seed)."""
    aa, ww = np.abs(a.v), np.abs(w.v)
    S = L(aa, ww)
    v = L(a.v, w.v)
    # operand errors: |a^ w^ - a w| <= ea |w| + |a| ew + ea ew; product FTZ < 2^-126 each
    e = L(a.e, ww) + L(aa, w.e) + L(a.e, w.e) + K * TINY
    sp = L(aa + a.e, ww + w.e) + K * TINY          # >= sum of |computed products|
    k = K
    if seed is not None:
        v = v + seed.v
        e = e + seed.e
        sp = sp + np.abs(seed.v) + seed.e
        k = K + 1
    g = gamma(k, U)
    e = e + g * sp + k * TINY * (1.0 + g)         # the adds: rounding and FTZ
    e = e + gamma(k + 2, U64) * (S if seed is None else S + np.abs(seed.v))
    return Val(v, e, act=True)


# ---- attributes and geometry ----

def attrs(node):
    d = {}
    for a in node.attribute:
        x = helper.get_attribute_value(a)
        if isinstance(x, bytes):
            x = x.decode()
        d[a.name] = x
    return d


def window_geometry(in_sp, kernel, strides, dilations, pads, auto_pad, ceil_mode):
    """Output size and padding per spatial axis, as the ONNX operator definitions give them.

    Returns out, pad_begin, pad_end, extra: extra is the room past pad_end that a ceil_mode
    window may reach (neither input nor explicit pad)."""
    n = len(in_sp)
    strides = list(strides or [1] * n)
    dilations = list(dilations or [1] * n)
    pads = list(pads or [0] * (2 * n))
    out, pb, pe, extra = [], [], [], []
    for i in range(n):
        ek = (kernel[i] - 1) * dilations[i] + 1
        s = strides[i]
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-in_sp[i] // s)
            tot = max((o - 1) * s + ek - in_sp[i], 0)
            b = tot // 2 if auto_pad == "SAME_UPPER" else tot - tot // 2
            p0, p1 = b, tot - b
        elif auto_pad == "VALID":
            p0 = p1 = 0
            o = (in_sp[i] - ek) // s + 1
        else:
            p0, p1 = pads[i], pads[i + n]
            span = in_sp[i] + p0 + p1 - ek
            if ceil_mode:
                o = -(-span // s) + 1
                if (o - 1) * s >= in_sp[i] + p0:
                    o -= 1
            else:
                o = span // s + 1
        out.append(o)
        pb.append(p0)
        pe.append(p1)
        extra.append(max(0, (o - 1) * s + ek - (in_sp[i] + p0 + p1)))
    return out, pb, pe, extra, strides, dilations


def windows(x, kernel, geo, pad_fill, extra_fill):
    """x (N, C, *sp) -> (N, C, *out, prod(kernel)): the values under each window, in
    row-major kernel order; explicit pads hold pad_fill, the ceil_mode overhang extra_fill."""
    out, pb, pe, extra, strides, dil = geo
    n = len(kernel)
    pad = [(0, 0), (0, 0)] + [(pb[i], pe[i]) for i in range(n)]
    xp = np.pad(x, pad, mode="constant", constant_values=pad_fill)
    if any(extra):
        xp = np.pad(xp, [(0, 0), (0, 0)] + [(0, extra[i]) for i in range(n)],
                    mode="constant", constant_values=extra_fill)
    cols = []
    for off in np.ndindex(*kernel):
        sl = [slice(None), slice(None)]
        for i in range(n):
            st = off[i] * dil[i]
            sl.append(slice(st, st + (out[i] - 1) * strides[i] + 1, strides[i]))
        cols.append(xp[tuple(sl)])
    return np.stack(cols, axis=-1)


def conv_geometry(node, x_shape, w_shape):
    a = attrs(node)
    n = len(x_shape) - 2
    kernel = list(a.get("kernel_shape", w_shape[2:]))
    geo = window_geometry(list(x_shape[2:]), kernel, a.get("strides"), a.get("dilations"),
                          a.get("pads"), a.get("auto_pad", "NOTSET"), 0)
    return kernel, geo, int(a.get("group", 1)), n


def conv_apply(x, w, kernel, geo, group, matmul=None):
    """y[n, m, *o] = sum_{c in m's group, k} win(x)[n, c, *o, k] w[m, c, k]."""
    N, C = x.shape[:2]
    M = w.shape[0]
    cols = windows(x, kernel, geo, 0.0, 0.0)             # (N, C, *out, Kk)
    out = cols.shape[2:-1]
    kk = cols.shape[-1]
    cg, mg = C // group, M // group
    ys = []
    for g in range(group):
        p = cols[:, g * cg:(g + 1) * cg]                 # (N, cg, *out, Kk)
        p = np.moveaxis(p, 1, -2).reshape((N,) + tuple(out) + (cg * kk,))
        wg = w[g * mg:(g + 1) * mg].reshape(mg, cg * kk).T   # (cg*Kk, mg)
        y = (matmul or np.matmul)(p, wg)                 # (N, *out, mg)
        ys.append(np.moveaxis(y, -1, 1))
    return np.concatenate(ys, axis=1)


def pool_setup(node, x_shape):
    a = attrs(node)
    kernel = list(a["kernel_shape"])
    geo = window_geometry(list(x_shape[2:]), kernel, a.get("strides"), a.get("dilations"),
                          a.get("pads"), a.get("auto_pad", "NOTSET"), a.get("ceil_mode", 0))
    return a, kernel, geo


def avgpool_counts(x_shape, kernel, geo, include_pad):
    """Number of elements each window averages over (ONNX: count_include_pad counts the
    explicit pads, never the ceil_mode overhang)."""
    ones = np.ones((1, 1) + tuple(x_shape[2:]))
    c = windows(ones, kernel, geo, 1.0 if include_pad else 0.0, 0.0).sum(axis=-1)
    return np.broadcast_to(c, (x_shape[0], x_shape[1]) + c.shape[2:])


def reshape_target(in_shape, shape, allowzero):
    shape = [int(s) for s in shape]
    out = []
    for i, s in enumerate(shape):
        out.append(in_shape[i] if (s == 0 and not allowzero) else s)
    if -1 in out:
        known = int(np.prod([s for s in out if s != -1]))
        out[out.index(-1)] = int(np.prod(in_shape)) // known if known else 0
    return out


def flatten_target(in_shape, axis):
    if axis < 0:
        axis += len(in_shape)
    return [int(np.prod(in_shape[:axis])), int(np.prod(in_shape[axis:]))]


def per_channel(p, ndim):
    """A (C,) parameter broadcast along axis 1 of an ndim tensor."""
    return p.reshape((1, -1) + (1,) * (ndim - 2))


# ---- the operators: (node, input Vals) -> output Val ----

def _act(x):
    """An operand as the machine holds it: activations in bf16, constants as stored."""
    return rb(x) if x.act else x


def _weight(x):
    """An MXU operand: always bf16 (weights are rounded at compile time)."""
    return rb(x)


def op_identity(node, ins):
    return ins[0]


def op_dropout(node, ins):
    a = attrs(node)
    training = False
    if len(ins) >= 3 and ins[2] is not None:
        training = bool(np.asarray(ins[2].raw if ins[2].raw is not None else ins[2].v).item())
    ratio = a.get("ratio", 0.5)
    if len(ins) >= 2 and ins[1] is not None:
        ratio = float(ins[1].v)
    if training and ratio != 0.0:
        raise NoReference("Dropout in training mode with ratio %g: the output is random" % ratio)
    return ins[0]


def op_reshape(node, ins):
    x = ins[0]
    shape = ins[1].raw if ins[1].raw is not None else ins[1].v
    t = reshape_target(list(x.v.shape), np.asarray(shape).tolist(),
                       attrs(node).get("allowzero", 0))
    return x.like(x.v.reshape(t), x.e.reshape(t))


def op_flatten(node, ins):
    x = ins[0]
    t = flatten_target(list(x.v.shape), attrs(node).get("axis", 1))
    return x.like(x.v.reshape(t), x.e.reshape(t))


def op_relu(node, ins):
    # relu is monotone and 1-Lipschitz, and bf16 rounding is monotone: relu(rb(x)) =
    # rb(relu(x)), so the rounding is left to the consumer / the graph output.
    x = ins[0]
    return x.like(np.maximum(x.v, 0.0), x.e)


def op_add(node, ins):
    a, b = _act(ins[0]), _act(ins[1])
    y = rf(vadd(a, b))                       # one fp32 add
    return f64_slack(y, np.abs(a.v) + np.abs(b.v))


def op_mul(node, ins):
    # bf16 activations (and fp32 constants) multiplied once in fp32 (vop mul, RNE, FTZ)
    a, b = _act(ins[0]), _act(ins[1])
    y = rf(vmul(a, b))
    return f64_slack(y, np.abs(a.v) * np.abs(b.v))


def op_sub(node, ins):
    # as Add: one fp32 subtraction (vop sub) of the bf16 activation(s) and the fp32 constant
    a, b = _act(ins[0]), _act(ins[1])
    y = rf(vsub(a, b))
    return f64_slack(y, np.abs(a.v) + np.abs(b.v))


def op_neg(node, ins):
    # x * -1 in fp32: a sign flip, exact, and rb(-x) = -rb(x): only the input's rounding
    x = ins[0]
    return x.like(-x.v, x.e)


def _hard_sigmoid(x, alpha, alpha32, beta):
    """max(0, min(1, alpha x + beta)) as rf(rf(alpha32 x^) + beta), then the clamp (monotone
    and 1-Lipschitz: no error of its own). alpha32: the fp32 alpha the machine multiplies by
    (HardSwish's 1/6 is rounded); alpha, beta: the operator's values (the exact result)."""
    xr = _act(x)
    al = Val(np.full_like(xr.v, alpha), abs(alpha32 - alpha))
    t = rf(vmul(al, xr))
    t = rf(vadd(t, Val(np.full_like(xr.v, beta))))
    t = f64_slack(t, np.abs(alpha * xr.v) + abs(beta))
    return xr, t.like(np.clip(t.v, 0.0, 1.0), t.e, bf=False)


def op_hardsigmoid(node, ins):
    a = attrs(node)
    alpha, beta = float(a.get("alpha", 0.2)), float(a.get("beta", 0.5))
    return _hard_sigmoid(ins[0], alpha, alpha, beta)[1]


def op_hardswish(node, ins):
    # x * HardSigmoid(x) with alpha = 1/6 (fp32 on the machine), beta = 0.5; one more rf
    xr, h = _hard_sigmoid(ins[0], 1.0 / 6.0, float(np.float32(1.0 / 6.0)), 0.5)
    y = rf(vmul(xr, h))
    return f64_slack(y, np.abs(xr.v) * np.abs(h.v))


def _reduce_axes(node, ins, ndim):
    """The reduced axes (sorted), or None for the identity (noop_with_empty_axes)."""
    a = attrs(node)
    axes = a.get("axes")
    if len(ins) > 1 and ins[1] is not None:
        axes = np.asarray(ins[1].raw if ins[1].raw is not None else ins[1].v).astype(np.int64)
        axes = axes.reshape(-1).tolist()
    if axes is None or len(axes) == 0:
        if a.get("noop_with_empty_axes", 0):
            return None
        axes = list(range(ndim))
    return tuple(sorted(int(ax) % ndim for ax in axes))


def _reduce_sum(node, ins):
    x = ins[0]
    axes = _reduce_axes(node, ins, x.v.ndim)
    if axes is None:
        return x, None
    keep = bool(attrs(node).get("keepdims", 1))
    n = int(np.prod([x.v.shape[k] for k in axes]))

    def L(p, q):
        return (p * q).sum(axis=axes, keepdims=keep)
    # vred sum: n - 1 fp32 adds of the bf16 inputs in a fixed order (any order is covered):
    # the dot product's bound with weights 1 (exact)
    return dot_bound(L, _act(x), Val(np.ones_like(x.v)), n), n


def op_reducesum(node, ins):
    return _reduce_sum(node, ins)[0]


def op_reducemean(node, ins):
    s, n = _reduce_sum(node, ins)
    if n is None:
        return s
    # times fp32(1/n) (a compile-time constant, one rounding) in one fp32 multiply
    r = Val(np.full_like(s.v, 1.0 / n), abs(float(np.float32(1.0 / n)) - 1.0 / n))
    y = rf(vmul(s, r))
    return f64_slack(y, np.abs(y.v))


def op_div(node, ins):
    # x / c: x * fp32(1/c) (1/c rounded once at compile time), one fp32 multiply;
    # c / x and x / y: recip (<= 0.52 ulp) of the divisor, then one fp32 multiply
    a, b = ins[0], ins[1]
    ints = [np.asarray(x.raw) for x in (a, b) if x.raw is not None]
    if len(ints) == 2 and all(np.issubdtype(r.dtype, np.integer) for r in ints):
        # integer Div (test_div_uint8): truncated; the compiler refuses integer tensors
        q = np.trunc(ints[0].astype(np.float64) / ints[1].astype(np.float64))
        return Val(q, np.zeros_like(q), act=a.act or b.act)
    if not b.act:
        c = np.asarray(b.v, dtype=np.float64)
        with np.errstate(divide="ignore"):
            inv = 1.0 / c
            inv32 = (1.0 / c.astype(np.float32)).astype(np.float64)
        k = Val(inv, np.where(np.isfinite(inv), np.abs(inv32 - inv), 0.0))
        xr = _act(a)
        y = rf(vmul(xr, k))
        return f64_slack(Val(xr.v / c, y.e, act=True), np.abs(xr.v * inv))
    r = vrecip_vpu(_act(b))
    ar = _act(a)
    y = rf(vmul(ar, r))
    return f64_slack(Val(ar.v / b.v, y.e, act=True), np.abs(ar.v * r.v))


def op_sqrt(node, ins):
    # recip(rsqrt(x^)): rsqrt <= 0.52 ulp, recip <= 0.52 ulp (of the rounded rsqrt), so the
    # fp32 result is within (1 + 0.52 2^-23)^2 / (1 - 0.52 2^-23)... of sqrt(x^): taken as
    # 2.1 2^-23 relative; the input's error through sqrt's interval
    xr = _act(ins[0])
    s = vsqrt(xr)
    rel = (1.0 + RSQRT_ULP32 * ULP32_REL) / (1.0 - RECIP_ULP32 * ULP32_REL) * (1.0 + RECIP_ULP32 * ULP32_REL) - 1.0
    e = s.e + rel * (np.abs(s.v) + s.e) + TINY
    return f64_slack(Val(s.v, e, act=xr.act))


def op_exp(node, ins):
    # vop exp (<= 0.52 fp32 ulp); the input's error through exp' = exp, largest at x + e
    return _unary_fn(ins[0], np.exp, lambda v, e: np.exp(v + e), EXP_ULP32)


def op_pow(node, ins):
    # the compiler takes a constant exponent 2 (x * x: one fp32 multiply) or 0.5 (Sqrt) and
    # refuses any other; for those the bound is only the reference check's (a loose 2^-7)
    p = np.asarray(ins[1].v, dtype=np.float64)
    if p.size == 1 and not ins[1].act and float(p.reshape(-1)[0]) == 2.0:
        return op_mul(node, [ins[0], ins[0]])
    if p.size == 1 and not ins[1].act and float(p.reshape(-1)[0]) == 0.5:
        return op_sqrt(node, [ins[0]])
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        y = np.power(ins[0].v, p)
    return Val(y, ULP16_REL * np.abs(y) + TINY, act=ins[0].act or ins[1].act)


def op_reducemax(node, ins):
    # vred max / vop max: exact on the bf16 inputs, and max is 1-Lipschitz in the max norm
    x = _act(ins[0])
    axes = _reduce_axes(node, ins, x.v.ndim)
    if axes is None:
        return x
    keep = bool(attrs(node).get("keepdims", 1))
    return Val(x.v.max(axis=axes, keepdims=keep), x.e.max(axis=axes, keepdims=keep), bf=x.bf,
               act=x.act)


def op_layernormalization(node, ins):
    """The compiler's LayerNorm (docs/conformance.md "LayerNorm"): row sums on the MXU (weights
    1, one fp32 chain), mean = s1 * fp32(1/n), d = x^ - mean (fp32), s2 = the sum of bf16(d d),
    var = s2 * fp32(1/n), r = rsqrt(var + fp32(eps)) (0.52 ulp), y = d r * scale + bias,
    each step one fp32 rounding."""
    a = attrs(node)
    x = _act(ins[0])
    nd = x.v.ndim
    axis = int(a.get("axis", -1)) % nd
    eps = float(a.get("epsilon", 1e-5))
    axes = tuple(range(axis, nd))
    n = int(np.prod([x.v.shape[k] for k in axes]))

    def L(p, q):
        return (p * q).sum(axis=axes, keepdims=True)
    ones = Val(np.ones_like(x.v))
    kinv = Val(np.float64(1.0 / n), abs(float(np.float32(1.0 / n)) - 1.0 / n))
    s1 = dot_bound(L, x, ones, n)
    mean = rf(vmul(s1, kinv))
    d = rf(vsub(x, mean))
    q = rb(rf(vmul(d, d)))
    s2 = dot_bound(L, q, ones, n)
    var = rf(vmul(s2, kinv))
    ve = rf(vadd(var, Val(np.float64(eps), abs(float(np.float32(eps)) - eps))))
    r = vdiv(Val(np.ones_like(ve.v)), vsqrt(ve))
    r = Val(r.v, r.e + RSQRT_ULP32 * ULP32_REL * (np.abs(r.v) + r.e) + TINY, act=True)
    y = rf(vmul(d, r))
    mag = np.abs(y.v)
    if len(ins) > 1 and ins[1] is not None:
        y = rf(vmul(y, ins[1]))
        mag = np.abs(y.v)
    if len(ins) > 2 and ins[2] is not None:
        y = rf(vadd(y, ins[2]))
        mag = mag + np.abs(ins[2].v)
    return f64_slack(Val(y.v, y.e, act=True), mag, k=n + 16)


def op_constant(node, ins):
    # a constant of the graph (folded at compile time): exact, not an activation
    from onnx import numpy_helper
    arr = numpy_helper.to_array(node.attribute[0].t)
    return Val(arr.astype(np.float64), raw=arr)


def op_clip(node, ins):
    # max with lo, then min with hi: monotone and 1-Lipschitz, like relu (no rounding of its own)
    x = ins[0]
    at = attrs(node)
    lo, hi = at.get("min", -np.inf), at.get("max", np.inf)
    if len(ins) > 1 and ins[1] is not None:
        lo = float(ins[1].v.reshape(-1)[0])
    if len(ins) > 2 and ins[2] is not None:
        hi = float(ins[2].v.reshape(-1)[0])
    return x.like(np.clip(x.v, lo, hi), x.e)


def _unary_fn(x, f, fprime_max, ulp32):
    x = rb(x) if x.act else x
    v = f(x.v)
    prop = fprime_max(x.v, x.e) * x.e        # mean value theorem, safe max of |f'|
    rel = fn_rel(ulp32)
    e = prop + rel * (np.abs(v) + prop) + TINY
    return f64_slack(Val(v, e, bf=True, act=x.act))


def _nearest0(v, e):
    """The point of [v - e, v + e] nearest to 0."""
    return np.sign(v) * np.maximum(np.abs(v) - e, 0.0)


def sigmoid64(x):
    ex = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + ex), ex / (1.0 + ex))


def op_sigmoid(node, ins):
    def dmax(v, e):
        s = sigmoid64(_nearest0(v, e))       # sigma' = s(1-s), largest nearest 0
        return s * (1.0 - s)
    return _unary_fn(ins[0], sigmoid64, dmax, SIGMOID_ULP32)


def op_tanh(node, ins):
    def dmax(v, e):
        t = np.tanh(_nearest0(v, e))
        return 1.0 - t * t
    return _unary_fn(ins[0], np.tanh, dmax, TANH_ULP32)


_erf64 = np.vectorize(math.erf, otypes=[np.float64])


def op_erf(node, ins):
    """As Sigmoid/Tanh (erf' = 2/sqrt(pi) e^(-x^2), largest at the point nearest 0); an
    infinite input gives +-1 exactly (no propagated error)."""
    x = rb(ins[0]) if ins[0].act else ins[0]
    fin = np.isfinite(x.v)
    v = _erf64(x.v)
    xv, xe = np.where(fin, x.v, 0.0), np.where(fin, x.e, 0.0)
    t = _nearest0(xv, xe)
    prop = 2.0 / math.sqrt(math.pi) * np.exp(-t * t) * xe
    rel = fn_rel(ERF_ULP32)
    e = prop + rel * (np.abs(v) + prop) + TINY
    return f64_slack(Val(v, e, bf=True, act=x.act))


def op_softmax(node, ins):
    a = attrs(node)
    x = rb(ins[0]) if ins[0].act else ins[0]
    axis = a.get("axis", -1)
    if axis < 0:
        axis += x.v.ndim
    n = x.v.shape[axis]
    m = np.max(x.v, axis=axis, keepdims=True)
    ex = np.exp(x.v - m)
    y = ex / np.sum(ex, axis=axis, keepdims=True)
    d = x.e
    D = np.max(d, axis=axis, keepdims=True)
    # input error: |log y_i(x^) - log y_i(x)| <= d_i + D (shift invariance, LSE 1-Lipschitz)
    prop = np.expm1(d + D)
    # the VPU chain: t = x_i - m (one rounding, |t| <= |x_i - m| + d_i + D), exp (0.52 ulp),
    # the sum (n - 1 adds, any order), recip (0.52 ulp), the product (one rounding)
    exp_rel = EXP_ULP32 * ULP32_REL
    rcp_rel = RECIP_ULP32 * ULP32_REL
    th = np.expm1(U * (np.abs(x.v - m) + d + D) + TINY) * (1 + exp_rel) + exp_rel
    # FTZ of an e_j changes s (>= 1: the max gives exactly 1) by < 2^-126 each
    TH = np.max(th, axis=axis, keepdims=True) + n * TINY
    g = gamma(n - 1, U)
    chain = (1 + th) * (1 + rcp_rel) * (1 + U) / ((1 - TH) * (1 - g)) - 1
    e = y * ((1 + prop) * (1 + chain) - 1) + 2 * TINY
    return f64_slack(Val(y, e, act=x.act), k=n + 8)


def _gemm_parts(node, ins):
    a = attrs(node)
    A, B = ins[0], ins[1]
    C = ins[2] if len(ins) > 2 and ins[2] is not None and ins[2].v.size else None
    if a.get("transA", 0):
        A = A.like(A.v.T, A.e.T)
    if a.get("transB", 0):
        B = B.like(B.v.T, B.e.T)
    return A, B, C, float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))


def op_gemm(node, ins):
    A, B, C, alpha, beta = _gemm_parts(node, ins)
    K = A.v.shape[1]
    L = np.matmul
    scheds = []
    bias = None
    if C is not None:
        bias = C if beta == 1.0 else rf(vscale(C, beta))     # beta C in fp32
        bias = Val(np.broadcast_to(bias.v, (A.v.shape[0], B.v.shape[1])),
                   np.broadcast_to(bias.e, (A.v.shape[0], B.v.shape[1])))
    # alpha: on the product (an fp32 multiply), folded into the weights before their
    # rounding, or into the activations before theirs; exact when alpha is a power of two
    # (not flushed), but every schedule is bounded.
    variants = [(rb(A), _weight(B), True)]
    if alpha != 1.0:
        variants.append((rb(A), rb(rf(vscale(B, alpha))), False))
        variants.append((rb(rf(vscale(A, alpha))), _weight(B), False))
    for a_, w_, scale_after in variants:
        d = dot_bound(L, a_, w_, K)
        if scale_after and alpha != 1.0:
            d = rf(vscale(d, alpha))
        if bias is not None:
            scheds.append(rf(vadd(d, bias)))                  # bias add in fp32
            if not (scale_after and alpha != 1.0):             # bias as the chain's seed
                scheds.append(dot_bound(L, a_, w_, K, seed=bias))
        else:
            scheds.append(d)
    return vmax_all(scheds)


def op_matmul(node, ins):
    A, B = ins[0], ins[1]
    K = A.v.shape[-1]
    a_ = rb(A)
    w_ = rb(B)
    return dot_bound(np.matmul, a_, w_, K)


def op_einsum(node, ins):
    # fold_einsum.c: Transposes (bits moved) around one MatMul (docs/conformance.md "Einsum"):
    # a chain of K bf16 x bf16 products in fp32, K the product of the contracted labels'
    # sizes; a one-operand permutation moves bits only. Other equations (sums within one
    # operand, diagonals) are refused by the compiler; their reference is the same chain of
    # K bf16 values (each times 1) so the runner can still check itself against the test.
    eq = attrs(node)["equation"].replace(" ", "")
    lhs, out = eq.split("->") if "->" in eq else (eq, None)
    terms = lhs.split(",")
    sizes = {}
    for t, x in zip(terms, ins):
        labs = [c for c in t.replace("...", "") if c.isalpha()]
        shape = x.v.shape[len(x.v.shape) - len(labs):] if t.startswith("...") else x.v.shape
        for c, n in zip(labs, shape):
            sizes[c] = n
    if out is None:
        out = "".join(sorted(c for c in sizes if lhs.count(c) == 1))
    K = int(np.prod([n for c, n in sizes.items() if c not in out])) if sizes else 1
    if len(ins) == 1:
        x = ins[0]
        if len(out.replace("...", "")) == len(terms[0].replace("...", "")) and "..." not in eq:
            return x.like(np.einsum(eq, x.v), np.einsum(eq, x.e))
        return dot_bound(lambda a, w: np.einsum(eq, a) * w, rb(x), Val(1.0, bf=True), K)
    return dot_bound(lambda a, b: np.einsum(eq, a, b), rb(ins[0]), rb(ins[1]), K)


def op_range(node, ins):
    # a constant (fold_range.c): exact
    s, l, d = (x.raw if x.raw is not None else x.v for x in ins)
    r = np.arange(np.asarray(s).item(), np.asarray(l).item(), np.asarray(d).item(),
                  dtype=np.asarray(s).dtype)
    return Val(r.astype(np.float64), raw=r, act=any(x.act for x in ins))


def op_conv(node, ins):
    X, W = ins[0], ins[1]
    Bv = ins[2] if len(ins) > 2 and ins[2] is not None else None
    kernel, geo, group, _ = conv_geometry(node, X.v.shape, W.v.shape)
    K = (X.v.shape[1] // group) * int(np.prod(kernel))

    def L(x, w):
        return conv_apply(x, w, kernel, geo, group)
    a_, w_ = rb(X), _weight(W)
    if Bv is None:
        return dot_bound(L, a_, w_, K)
    shape = L(a_.v, w_.v).shape
    bias = Val(np.broadcast_to(per_channel(Bv.v, len(shape)), shape),
               np.broadcast_to(per_channel(Bv.e, len(shape)), shape))
    return vmax_all([rf(vadd(dot_bound(L, a_, w_, K), bias)),
                     dot_bound(L, a_, w_, K, seed=bias)])


def _avg(node, X, kernel, geo, include_pad):
    counts = avgpool_counts(X.v.shape, kernel, geo, include_pad)
    K = int(np.prod(kernel))
    inv = Val(1.0 / counts)

    def wsum(x, w):
        # sum over the window of x times a per-output weight w (pads contribute 0)
        return windows(x, kernel, geo, 0.0, 0.0).sum(axis=-1) * w
    x_ = rb(X)
    # (a) on the MXU: weights 1/count (an fp32 constant) rounded to bf16
    a = dot_bound(wsum, x_, rb(rf(inv)), K)
    # (b) on the VPU: fp32 sum of the window, times 1/count (a compile-time fp32 constant
    #     or vpu_recip: <= 0.52 ulp), one fp32 multiply
    s = dot_bound(wsum, x_, Val(np.ones_like(counts)), K)
    r = vrecip_vpu(Val(counts))
    b = rf(vmul(s, r))
    return vmax_all([a, b])


def op_averagepool(node, ins):
    X = ins[0]
    a, kernel, geo = pool_setup(node, X.v.shape)
    return _avg(node, X, kernel, geo, a.get("count_include_pad", 0))


def op_globalaveragepool(node, ins):
    X = ins[0]
    kernel = list(X.v.shape[2:])
    geo = window_geometry(kernel, kernel, None, None, None, "VALID", 0)
    return _avg(node, X, kernel, geo, 0)


def op_maxpool(node, ins):
    # max is monotone and 1-Lipschitz in the max norm; bf16 rounding is monotone, so
    # max(rb(x)) = rb(max(x)): the rounding is left to the consumer / the graph output.
    X = ins[0]
    a, kernel, geo = pool_setup(node, X.v.shape)
    v = windows(X.v, kernel, geo, -np.inf, -np.inf).max(axis=-1)
    e = windows(X.e, kernel, geo, 0.0, 0.0).max(axis=-1)
    return X.like(v, e)


def op_batchnorm(node, ins):
    a = attrs(node)
    if a.get("training_mode", 0):
        raise NoReference("BatchNormalization in training mode (three outputs, batch statistics)")
    X = ins[0]
    nd = X.v.ndim
    scale, B, mean, var = [Val(per_channel(p.v, nd), per_channel(p.e, nd)) for p in ins[1:5]]
    eps = Val(np.float64(np.float32(a.get("epsilon", 1e-5))))
    # the fold, in fp32 at compile time: s = scale / sqrt(var + eps), b' = B - mean s
    s = rf(vdiv(scale, rf(vsqrt(rf(vadd(var, eps))))))
    b2 = rf(vsub(B, rf(vmul(mean, s))))
    x_ = rb(X)
    bshape = x_.v.shape

    def full(p):
        return Val(np.broadcast_to(p.v, bshape), np.broadcast_to(p.e, bshape))
    s_, b2_ = full(s), full(b2)
    # (a1) VPU: x s (fp32 multiply) + b'; (a2) MXU/accumulator: x rb(s) exact, + b'
    a1 = rf(vadd(rf(vmul(x_, s_)), b2_))
    a2 = rf(vadd(vmul(x_, full(rb(s))), b2_))
    # (b) VPU, unfolded: ((x - mean) s) + B
    b = rf(vadd(rf(vmul(rf(vsub(x_, full(mean))), s_)), full(B)))
    y = vmax_all([a1, a2, b])
    return f64_slack(y, np.abs(x_.v * s_.v) + np.abs(full(mean).v * s_.v) + np.abs(full(B).v),
                     k=8)


def op_gather(node, ins):
    # numpy's take (negative indices counted from the end, as ONNX's Gather). An embedding
    # (a constant table, the indices the graph input): the table rounded to bf16 (the MXU's
    # weights) and one exact product per element, so the bound is the output's rounding.
    data, idx = ins[0], ins[1]
    ix = (idx.raw if idx.raw is not None else idx.v).astype(np.int64)
    ax = attrs(node).get("axis", 0)
    v, e = np.take(data.v, ix, axis=ax), np.take(data.e, ix, axis=ax)
    return Val(v, e, bf=data.bf, act=data.act or idx.act)


def op_transpose(node, ins):
    x = ins[0]
    perm = attrs(node).get("perm", list(range(x.v.ndim))[::-1])
    return x.like(x.v.transpose(perm), x.e.transpose(perm))


def _ints(v):
    return np.asarray(v.raw if v.raw is not None else v.v).astype(np.int64).tolist()


def op_slice(node, ins):
    # bits moved (DMA row copies): no rounding, the input's value and bound sliced (opset 10+:
    # starts, ends, axes, steps inputs; numpy's slicing clamps as ONNX's Slice does)
    x = ins[0]
    st, en = _ints(ins[1]), _ints(ins[2])
    ax = _ints(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(len(st)))
    sp = _ints(ins[4]) if len(ins) > 4 and ins[4] is not None else [1] * len(st)
    sl = [slice(None)] * x.v.ndim
    for s_, e_, a_, p_ in zip(st, en, ax, sp):
        sl[a_] = slice(s_, e_, p_)
    sl = tuple(sl)
    return x.like(x.v[sl], x.e[sl])


def op_pad(node, ins):
    # bits moved (DMA row copies) and the constant written (issue 32): no arithmetic. The
    # input's value and bound padded; the constant is held as the machine's bf16 (one
    # rounding: 2^-8 |c| + 2^-126). Opset 2 (attributes) and 11/13 (inputs); edge and
    # reflect computed too (the runner checks the reference against every test).
    x = ins[0]
    a = attrs(node)
    mode = a.get("mode", "constant")
    if len(ins) > 1 and ins[1] is not None:
        pads = _ints(ins[1])
        c = float(ins[2].v.reshape(-1)[0]) if len(ins) > 2 and ins[2] is not None else 0.0
    else:
        pads, c = list(a["pads"]), float(a.get("value", 0.0))
    n = x.v.ndim
    pw = [(pads[i], pads[i + n]) for i in range(n)]
    if mode == "constant":
        cv = rb(Val(np.float64(c)))
        v = np.pad(x.v, pw, mode="constant", constant_values=c)
        e = np.pad(x.e, pw, mode="constant", constant_values=float(cv.e))
    else:
        v, e = np.pad(x.v, pw, mode=mode), np.pad(x.e, pw, mode=mode)
    return Val(v, e, bf=x.bf, act=x.act)


def convtranspose_geometry(node, x_shape, w_shape):
    """kernel, strides, dilations, pads (begin.., end..), output_padding, group as ONNX's
    ConvTranspose defines them (output_shape and auto_pad give the pads)."""
    a = attrs(node)
    n = len(x_shape) - 2
    k = list(a.get("kernel_shape", w_shape[2:]))
    s = list(a.get("strides", [1] * n))
    d = list(a.get("dilations", [1] * n))
    op = list(a.get("output_padding", [0] * n))
    pads = list(a.get("pads", [0] * (2 * n)))
    ap = a.get("auto_pad", "NOTSET")
    osh = a.get("output_shape")
    if osh is not None or ap in ("SAME_UPPER", "SAME_LOWER"):
        osh = list(osh) if osh is not None else [x_shape[2 + i] * s[i] for i in range(n)]
        osh = osh[-n:]
        for i in range(n):
            tot = s[i] * (x_shape[2 + i] - 1) + op[i] + ((k[i] - 1) * d[i] + 1) - osh[i]
            if ap == "SAME_UPPER":
                pads[i], pads[i + n] = tot // 2, tot - tot // 2
            else:
                pads[i], pads[i + n] = tot - tot // 2, tot // 2
    return k, s, d, pads, op, int(a.get("group", 1))


def convtranspose_apply(x, w, geo):
    """y[n, m, o] = sum over c in m's group, kernel offsets k with o = i s + k d - pad of
    x[n, c, i] w[c, m', k]: every input pixel scattered through the kernel."""
    k, s, d, pads, op, group = geo
    n = len(k)
    N, C = x.shape[:2]
    sp = x.shape[2:]
    mg = w.shape[1]
    full = [(sp[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 + op[i] for i in range(n)]
    y = np.zeros((N, mg * group) + tuple(full))
    cg = C // group
    for g in range(group):
        xg, wg = x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg]
        for off in np.ndindex(*k):
            part = np.einsum("nc...,cm->nm...", xg, wg[(slice(None), slice(None)) + off])
            sl = [slice(None), slice(g * mg, (g + 1) * mg)]
            for i in range(n):
                st = off[i] * d[i]
                sl.append(slice(st, st + (sp[i] - 1) * s[i] + 1, s[i]))
            y[tuple(sl)] += part
    # negative pads (an output_shape past the full output): zeros beyond it
    y = np.pad(y, [(0, 0), (0, 0)] + [(max(0, -pads[i]), max(0, -pads[i + n])) for i in range(n)])
    crop = [slice(None), slice(None)] + [
        slice(max(0, pads[i]), y.shape[2 + i] - max(0, pads[i + n])) for i in range(n)]
    return y[tuple(crop)]


def op_convtranspose(node, ins):
    # the machine: a Conv of stride 1 over the input dilated by the stride (zeros between the
    # pixels) and padded: per output element an fp32 chain of C/group x prod(kernel) bf16
    # products (the dilation's zeros exact), bias the seed or one more fp32 add, as op_conv
    X, W = ins[0], ins[1]
    Bv = ins[2] if len(ins) > 2 and ins[2] is not None else None
    geo = convtranspose_geometry(node, X.v.shape, W.v.shape)
    K = (X.v.shape[1] // geo[5]) * int(np.prod(geo[0]))

    def L(x, w):
        return convtranspose_apply(x, w, geo)
    a_, w_ = rb(X), _weight(W)
    if Bv is None:
        return dot_bound(L, a_, w_, K)
    shape = L(a_.v, w_.v).shape
    bias = Val(np.broadcast_to(per_channel(Bv.v, len(shape)), shape),
               np.broadcast_to(per_channel(Bv.e, len(shape)), shape))
    return vmax_all([rf(vadd(dot_bound(L, a_, w_, K), bias)),
                     dot_bound(L, a_, w_, K, seed=bias)])


def op_concat(node, ins):
    # bits moved (DMA row copies into the output's columns): no rounding; but a float
    # constant among activations (ViT's class token) is stored as bf16 at compile time
    ax = attrs(node).get("axis", 0)
    if any(i.act for i in ins):
        ins = [i if i.act else rb(i) for i in ins]
    return Val(np.concatenate([i.v for i in ins], axis=ax), np.concatenate([i.e for i in ins], axis=ax),
               bf=all(i.bf for i in ins), act=any(i.act for i in ins))


# ---- LSTM, GRU, RNN: the compiler's unrolling (compiler/src/fold_rnn.c), node by node ----
# Every node of the unrolled graph is bounded as the operator it becomes (docs/conformance.md
# "LSTM, GRU, RNN"): the input projection a Gemm (or a MatMul, its output rounded to bf16,
# and an Add of the bias: the larger bound), the recurrent product a MatMul by R_k^T rounded
# to bf16, the gate's pre-activation an fp32 Add of two bf16 values, Sigmoid / Tanh as
# op_sigmoid / op_tanh, the state updates Mul / Add / Sub of bf16 values, one fp32 rounding
# each, stored as bf16. Errors compound through h and c from step to step.

def _rnn_sig(x):
    return op_sigmoid(None, [x])


def _rnn_tanh(x):
    return op_tanh(None, [x])


def _rnn_matmul(a, w):
    """a [B, K] (activation) times the constant w [K, M]: a MatMul node, its output bf16."""
    return rb(op_matmul(None, [a, w]))


def _rnn_col(x, k, H):
    return x.like(x.v[..., k * H:(k + 1) * H], x.e[..., k * H:(k + 1) * H])


def _rnn_project(X, Wt, bias):
    """X [B, T, I] times W^T [I, G H] plus the state-free biases, as the compiler's MatMul
    and Add (fused into a Gemm's bias or not): the larger bound, rounded to bf16."""
    B_, T_, I_ = X.v.shape
    X2 = X.like(X.v.reshape(B_ * T_, I_), X.e.reshape(B_ * T_, I_))
    m = rb(op_matmul(None, [X2, Wt]))
    if bias is not None:
        sched = [rb(op_add(None, [m, Val(np.broadcast_to(bias.v, m.v.shape), np.broadcast_to(bias.e, m.v.shape))]))]
        g = op_gemm(helper.make_node("Gemm", ["a", "b", "c"], ["y"]), [X2, Wt, bias])
        sched.append(rb(g))
        m = vmax_all(sched)
    GH = Wt.v.shape[1]
    return m.like(m.v.reshape(B_, T_, GH), m.e.reshape(B_, T_, GH))


def op_rnn_family(cell, node, ins):
    a = attrs(node)
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[cell]
    H = int(a["hidden_size"])
    layout = int(a.get("layout", 0))
    direction = a.get("direction", "forward")
    lbr = int(a.get("linear_before_reset", 0))
    X, W, R = ins[0], ins[1], ins[2]
    Bs = ins[3] if len(ins) > 3 and ins[3] is not None and ins[3].v.size else None
    init = [None, None]                        # initial_h, initial_c: [D, B, H] (layout 1: [B, D, H])
    for k, what in ((4, "sequence_lens"), (5, "initial_h"), (6, "initial_c"), (7, "P")):
        if len(ins) > k and ins[k] is not None and ins[k].v.size:
            if k == 4 and np.all(ins[k].v == (X.v.shape[1] if layout else X.v.shape[0])):
                continue
            if k in (5, 6) and not ins[k].act:
                if np.any(ins[k].v != 0):       # a constant state, held as bf16 as a stored one
                    v0 = ins[k].v if not layout else ins[k].v.transpose(1, 0, 2)
                    init[k - 5] = rb(Val(v0))
                continue
            raise NoReference("%s: %s is not supported by the compiler" % (cell, what))
    xb = X if layout else X.like(X.v.transpose(1, 0, 2), X.e.transpose(1, 0, 2))
    Bn, T_, _ = xb.v.shape
    D = 2 if direction == "bidirectional" else 1
    ys, hs, cs = [], [], []
    for d in range(D):
        Wt = Val(W.v[d].T)
        bias = None
        if Bs is not None:
            wb, rbv = Bs.v[d][:G * H], Bs.v[d][G * H:]
            keep = np.ones(G * H)
            if cell == "GRU" and lbr:
                keep[2 * H:] = 0                     # Rbh stays inside r (h Rh^T + Rbh)
            bias = rf(Val(wb + keep * rbv))          # Wb + Rb summed in fp32 at compile time
            bias = Val(bias.v, bias.e * (keep > 0) + 0.0)
        rbh = Val(Bs.v[d][G * H + 2 * H:]) if (Bs is not None and cell == "GRU" and lbr and np.any(Bs.v[d][G * H + 2 * H:] != 0)) else None
        Rt = [Val(R.v[d][k * H:(k + 1) * H].T) for k in range(G)]
        XP = _rnn_project(xb, Wt, bias)
        h = c = None
        if init[0] is not None:
            h = Val(np.broadcast_to(init[0].v[d], (Bn, H)), np.broadcast_to(init[0].e[d], (Bn, H)), bf=True)
        if init[1] is not None:
            c = Val(np.broadcast_to(init[1].v[d], (Bn, H)), np.broadcast_to(init[1].e[d], (Bn, H)), bf=True)
        y = [None] * T_
        order = range(T_ - 1, -1, -1) if (d == 1 or direction == "reverse") else range(T_)
        for t in order:
            x = [_rnn_col(XP.like(XP.v[:, t], XP.e[:, t]), k, H) for k in range(G)]

            def pre(k):
                return x[k] if h is None else op_add(None, [x[k], _rnn_matmul(h, Rt[k])])
            if cell == "RNN":
                h = _rnn_tanh(pre(0))
            elif cell == "LSTM":
                i_, o_, g_ = _rnn_sig(pre(0)), _rnn_sig(pre(1)), _rnn_tanh(pre(3))
                ig = rb(op_mul(None, [i_, g_]))
                c = ig if c is None else rb(op_add(None, [rb(op_mul(None, [_rnn_sig(pre(2)), c])), ig]))
                h = rb(op_mul(None, [o_, _rnn_tanh(c)]))
            else:
                z = _rnn_sig(pre(0))
                if lbr:
                    hr = None
                    if h is not None:
                        hr = _rnn_matmul(h, Rt[2])
                        if rbh is not None:
                            hr = rb(op_add(None, [hr, Val(np.broadcast_to(rbh.v, hr.v.shape))]))
                    elif rbh is not None:
                        hr = Val(np.broadcast_to(rbh.v, (Bn, H)))
                    p_ = x[2] if hr is None else op_add(None, [x[2], rb(op_mul(None, [_rnn_sig(pre(1)), hr]))])
                else:
                    p_ = x[2] if h is None else op_add(None, [x[2], _rnn_matmul(rb(op_mul(None, [_rnn_sig(pre(1)), h])), Rt[2])])
                n_ = _rnn_tanh(p_)
                if h is None:
                    h = rb(op_sub(None, [n_, rb(op_mul(None, [z, n_]))]))
                else:
                    h = rb(op_add(None, [n_, rb(op_mul(None, [z, rb(op_sub(None, [h, n_]))]))]))
            y[t] = h
        ys.append(y)
        hs.append(h)
        cs.append(c)

    def stack(vals, axis):
        return Val(np.stack([v.v for v in vals], axis), np.stack([v.e for v in vals], axis), bf=True, act=True)
    Y = stack([stack(ys[d], 0) for d in range(D)], 1)          # [T, D, B, H]
    Yh = stack(hs, 0)                                           # [D, B, H]
    Yc = stack(cs, 0) if cell == "LSTM" else None
    if layout:
        Y = Y.like(Y.v.transpose(2, 0, 1, 3), Y.e.transpose(2, 0, 1, 3))
        Yh = Yh.like(Yh.v.transpose(1, 0, 2), Yh.e.transpose(1, 0, 2))
        if Yc is not None:
            Yc = Yc.like(Yc.v.transpose(1, 0, 2), Yc.e.transpose(1, 0, 2))
    return [Y, Yh] + ([Yc] if Yc is not None else [])


def op_lstm(node, ins):
    return op_rnn_family("LSTM", node, ins)


def op_gru(node, ins):
    return op_rnn_family("GRU", node, ins)


def op_rnn(node, ins):
    return op_rnn_family("RNN", node, ins)


# The operators the compiler claims: one table, so that it can grow.
OPS = {
    "Gemm": op_gemm,
    "MatMul": op_matmul,
    "Add": op_add,
    "Relu": op_relu,
    "Sigmoid": op_sigmoid,
    "Tanh": op_tanh,
    "Erf": op_erf,
    "Softmax": op_softmax,
    "Conv": op_conv,
    "MaxPool": op_maxpool,
    "AveragePool": op_averagepool,
    "GlobalAveragePool": op_globalaveragepool,
    "Flatten": op_flatten,
    "Reshape": op_reshape,
    "BatchNormalization": op_batchnorm,
    "Dropout": op_dropout,
    "Identity": op_identity,
    "Mul": op_mul,
    "Clip": op_clip,
    "Gather": op_gather,
    "Transpose": op_transpose,
    "Slice": op_slice,
    "Sub": op_sub,
    "Neg": op_neg,
    "HardSigmoid": op_hardsigmoid,
    "HardSwish": op_hardswish,
    "ReduceMean": op_reducemean,
    "ReduceSum": op_reducesum,
    "ReduceMax": op_reducemax,
    "Div": op_div,
    "Sqrt": op_sqrt,
    "Pow": op_pow,
    "Exp": op_exp,
    "LayerNormalization": op_layernormalization,
    "Constant": op_constant,
    "Pad": op_pad,
    "ConvTranspose": op_convtranspose,
    "Concat": op_concat,
    "Einsum": op_einsum,
    "Range": op_range,
    "LSTM": op_lstm,
    "GRU": op_gru,
    "RNN": op_rnn,
}


def evaluate(graph, x, consts):
    """The graph's outputs as Vals: x the graph input's data, consts name -> ndarray."""
    env = {graph.input[0].name: Val(x, act=True,
                                    raw=x if np.issubdtype(np.asarray(x).dtype, np.integer) else None)}
    for name, arr in consts.items():
        env[name] = Val(arr.astype(np.float64) if arr.dtype != np.bool_ else arr.astype(np.float64),
                        raw=arr)
    for node in graph.node:
        fn = OPS.get(node.op_type)
        if fn is None:
            raise NoReference("no reference for operator %s" % node.op_type)
        ins = [env[n] if n else None for n in node.input]
        y = fn(node, ins)
        if isinstance(y, list):                  # several outputs (LSTM: Y, Y_h, Y_c)
            for name, v in zip(node.output, y):
                if name:
                    env[name] = v
        else:
            env[node.output[0]] = y
    return [rb(env[o.name]) if o.name in env else None for o in graph.output]
