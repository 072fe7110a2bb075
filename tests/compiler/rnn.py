# SPDX-License-Identifier: Apache-2.0
"""test-compiler-rnn (issue 32, LSTM / GRU / RNN): torch 1.13's recurrent classifiers exported at
opset 14, compiled by tpu-compile (fold_rnn.c unrolls each LSTM / GRU / RNN node over the
sequence) and run by tpu-infer on the C model, against PyTorch fp32 and ONNX Runtime.

  lstm2     nn.LSTM(6, 16, num_layers=2, batch_first=True), y[:, -1] -> Linear(16, 4)
  lstm2_t24 the same at T = 24 (4 x the sequence: the bound's growth with T)
  gru       nn.GRU(6, 16, batch_first=True) (linear_before_reset = 1, as torch exports it)
  bilstm    nn.LSTM(6, 8, bidirectional=True, batch_first=True), y[:, -1] -> Linear(16, 4)
  bigru_r   nn.GRU(6, 8, bidirectional=True) and nn.RNN (tanh) stacked, both batch_first
  lstm2_hn  lstm2 with the last hidden state h_n[-1] -> Linear (torch: a Concat of the layers'
            Y_h on axis 0 and a Gather)
  bigru_hn  nn.GRU(6, 8, num_layers=2, bidirectional=True), h_n[-1] -> Linear
  lstm2_static  lstm2 exported with a fixed batch (h0 from Shape nodes, the batch in constants)
  lstm2_h0, bigru_h0  lstm2 and a 2-layer bidirectional GRU with a learned initial state
            (h0, and c0 for the LSTM: parameters expanded to the batch, folded by tpu-compile)
x [3, T, 6] (T = 6 unless named), random weights (torch's init, the recurrent layers' scaled by
2: make()), at N = 8 and 16 at gen's other defaults (8 cores: the batch of 3 split one image a core)
and at N = 8 on one core.

The tolerance, derived from the numerics contract (docs/numerics.md; docs/compiler.md
"Numerics"). emulate() writes the graph fold_rnn.c unrolls, in float64 from the module's own
weights, with a perturbation d_i at every place the contract lets the machine round:
  - relative, v (1 + d), |d| <= u_b = 2^-8: the input, every weight (W^T, R_k^T, the
    Linear's) and a learned initial state rounded to bf16, and every node's output stored as
    bf16 (the projection, each h R_k^T, each gate, each Mul / Add / Sub of the state update);
  - relative, |d| <= u = 2^-24: each fp32 add or multiply on the VPU (the gate's
    pre-activation x_k + h R_k^T, the products and sums of c_t = f c + i g,
    h_t = o tanh(c_t), GRU's n + z (h - n)), and Wb + Rb summed at compile time;
  - relative, |d| <= 3.5 or 5 x 2^-23: the VPU's sigmoid and tanh (docs/vpu.md);
  - additive, |d| <= gamma_K sum_k |a_k w_k|: the fp32 chain of each dot product of K terms.
With every d_i = 0 it is the exact result y. Its derivative by each d_i (autograd, float64,
at d = 0) gives rounding i's first-order effect on each logit, c_i = |dy/dd_i| max|d_i|; the
effects of early roundings pass through every later step (the compounding: a step's error
is the previous one's times the cell's Jacobian plus the step's own), so the sum over sites
grows with T. Two tolerances follow:
  - the first-order worst case, sum_i c_i (every rounding in the worst direction): ours must be
    within it (checked), but it is ~5x larger than the errors any run makes;
  - the test's tolerance, LAMBDA sqrt(sum_i c_i^2), LAMBDA = 5: under the standard model of
    rounding errors as independent and of mean zero (Higham and Mary, "A new approach to
    probabilistic rounding error analysis", SISC 2019), Hoeffding's inequality bounds the
    chance that one logit exceeds it by 2 exp(-LAMBDA^2 / 2) = 7.5e-6;
both times 1.25, a margin for the terms of second order (products of two roundings, each of
relative size u_b times the amplification the derivatives show: a few percent of the first-
order terms here; a margin, not a proof). refops' composed worst-case bound (each
node's bound taken as its inputs' errors, absolute values at every step: the conformance
runner's) is printed too: it multiplies by about sum_k |R_jk| max f' each step and is
vacuous after a few steps (1e11 at T = 6).
Checked: ours within the tolerance (and the worst case) of the exact value; PyTorch fp32 and
ONNX Runtime (when `make ort-node` installed it) within it too, and |ours - PyTorch| <= the
tolerance + PyTorch's own measured distance from the exact value; the same bits at N = 8
and 16, on 1 and 8 cores, and in tpu-infer's chunks (batch 2, 3 images in two runs) (every
dot product one fp32 chain in ascending K, the rest elementwise, each image on its own);
the GRU and the bidirectional LSTM on the verilated N = 4 core (traces and outputs
identical). The check can fail: the same models with LSTM's i and f gates swapped (in W, R
and B), GRU's z and r, the direction reversed, and the learned initial h set to zero are
compiled and run and rejected by the same check against PyTorch (and fold_rnn.c with its o
and f gates swapped, or GRU's z and r, fails 9 and 6 checks: tried once by hand).
Eight hand-written nodes (T = 3) against refops' composed bound, tight at that length: a
bidirectional LSTM of layout 1 (Y the graph output), a reverse GRU of layout 1 with
linear_before_reset 0 (Y_h), a bidirectional GRU with linear_before_reset 1 (Y_h), a reverse
LSTM's Y_c, a bidirectional RNN without B (Y [T, 2, B, H]), a bidirectional LSTM of layout 1
with initial_h and initial_c (Y_h), a GRU with linear_before_reset 0 and initial_h (Y), a
reverse RNN without B with initial_h (Y_h).
Refusals of one line, exit 2, nothing written: ragged sequence_lens, activations other than
the defaults (LSTM, GRU), direction 'sideways', clip, input_forget, peepholes, an initial_h
that differs between batch elements, layout 2, X the graph input sequence-first ([T, B, I]
with T > 1: T would be the program's batch), a sequence of 1025 steps, a layout-0 Y_h as the
graph output on 8 cores (its batch is axis 1). Instruction counts at N = 8 (rolled and
straight-line) of lstm2 at T = 6, 12, 24 and 48 are printed: the loop pass rolls the
identical time steps.

usage: rnn.py WORKDIR BUILD_TOOLS     (exit 1 on any failure)
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper, TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
import refops  # noqa: E402

W, TOOLS = sys.argv[1], sys.argv[2]
os.makedirs(W, exist_ok=True)
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
ORT_MODULES = os.environ.get("ORT_NODE_MODULES", os.path.join(REPO, "build", "node", "node_modules"))
HAVE_ORT = os.path.isdir(os.path.join(ORT_MODULES, "onnxruntime-node")) and shutil.which("node")
fails = 0


def say(ok, msg):
    global fails
    print(("ok: " if ok else "FAIL: ") + msg)
    if not ok:
        fails += 1


# ---- the models ----

class Classifier(torch.nn.Module):
    """Recurrent layers, then a Linear of the last step's output y[:, -1] or (hn) of the last
    hidden state h_n[-1] (the last layer's last direction: the reverse one's is its state
    after step 0)."""

    def __init__(self, cells, hn=False, init=False):
        super().__init__()
        self.rnns = torch.nn.ModuleList(cells)
        self.hn = hn
        last = cells[-1]
        self.fc = torch.nn.Linear(last.hidden_size * (2 if last.bidirectional and not hn else 1), 4)
        # init: a learned initial state of the first recurrent module, expanded to the batch
        self.h0 = self.c0 = None
        if init:
            r = cells[0]
            n = r.num_layers * (2 if r.bidirectional else 1)
            self.h0 = torch.nn.Parameter(torch.randn(n, 1, r.hidden_size) * 0.5)
            if isinstance(r, torch.nn.LSTM):
                self.c0 = torch.nn.Parameter(torch.randn(n, 1, r.hidden_size) * 0.5)

    def forward(self, x):
        for k, r in enumerate(self.rnns):
            if k == 0 and self.h0 is not None:
                h0 = self.h0.expand(-1, x.shape[0], -1).contiguous()
                s0 = (h0, self.c0.expand(-1, x.shape[0], -1).contiguous()) if self.c0 is not None else h0
                x, h = r(x, s0)
            else:
                x, h = r(x)
        if self.hn:
            return self.fc((h[0] if isinstance(h, tuple) else h)[-1])
        return self.fc(x[:, -1])


def make(name):
    """The classifier, its recurrent weights at twice torch's initial scale (U(-2/sqrt(H),
    2/sqrt(H))): the gates then spread over (0, 1) as a trained network's do, instead of
    all sitting near 0.5, so that a wrong gate shows in the logits."""
    torch.manual_seed(32)
    if name in ("lstm2", "lstm2_t24", "lstm2_static"):
        m = Classifier([torch.nn.LSTM(6, 16, num_layers=2, batch_first=True)])
    elif name == "gru":
        m = Classifier([torch.nn.GRU(6, 16, batch_first=True)])
    elif name == "bilstm":
        m = Classifier([torch.nn.LSTM(6, 8, bidirectional=True, batch_first=True)])
    elif name == "lstm2_hn":
        m = Classifier([torch.nn.LSTM(6, 16, num_layers=2, batch_first=True)], hn=True)
    elif name == "bigru_hn":
        m = Classifier([torch.nn.GRU(6, 8, num_layers=2, bidirectional=True, batch_first=True)], hn=True)
    elif name == "lstm2_h0":
        m = Classifier([torch.nn.LSTM(6, 16, num_layers=2, batch_first=True)], init=True)
    elif name == "bigru_h0":
        m = Classifier([torch.nn.GRU(6, 8, num_layers=2, bidirectional=True, batch_first=True)], init=True)
    elif name == "bigru_r":
        m = Classifier([torch.nn.GRU(6, 8, bidirectional=True, batch_first=True),
                        torch.nn.RNN(16, 8, batch_first=True)])
    else:
        raise KeyError(name)
    with torch.no_grad():
        for r in m.rnns:
            for p in r.parameters():
                p.mul_(2.0)
    return m


def export(name, m, x):
    """torch 1.13's export at opset 14, the batch dynamic (a *_static name: fixed, so torch
    computes h0's batch from Shape nodes and writes the batch into constants)."""
    p = os.path.join(W, name + ".onnx")
    dyn = {} if name.endswith("_static") else {"x": {0: "batch"}}
    torch.onnx.export(m.eval(), x, p, opset_version=14, input_names=["x"], output_names=["logits"],
                      dynamic_axes=dyn)
    return p


# ---- the tolerance: the first-order effect of every rounding the machine makes ----
# The unrolled graph of fold_rnn.c, emulated in float64 from the module's own weights, with a
# perturbation at every place the numerics contract lets the machine round (Sites): a
# relative one v (1 + d), |d| <= u_b = 2^-8 (a value stored as bf16, a weight rounded at
# compile time) or u = 2^-24 (an fp32 add or multiply), r 2^-23 (a VPU function: sigmoid 3.5
# ulp, tanh 5 ulp), and an additive one for the fp32 chain of a dot product of K terms,
# |d| <= gamma_K sum_k |a_k w_k|. With every d = 0 it is the exact result; the derivative of
# each output by each d (autograd, float64) is that rounding's effect to first order, so the
# machine's error is at most sum |dy/dd| max|d| + O(u_b^2) (the first-order worst case); the
# tolerance is LAMBDA sqrt(sum (|dy/dd| max|d|)^2) (the module's docstring).

UB, U = 2.0 ** -8, 2.0 ** -24
LAMBDA = 5.0      # P(|error| > LAMBDA sqrt(sum c_i^2)) <= 2 exp(-LAMBDA^2 / 2) = 7.5e-6 per element
SLACK = 1.25      # the second-order terms (below)
SIG_R, TANH_R = 3.5 * 2.0 ** -23, 5.0 * 2.0 ** -23


def gamma(k):
    return k * U / (1 - k * U)


class Sites:
    def __init__(self):
        self.terms = []

    def rel(self, v, u):
        d = torch.zeros_like(v, requires_grad=True)
        self.terms.append((d, torch.full_like(v, u)))
        return v * (1 + d)

    def add(self, v, bound):
        d = torch.zeros_like(v, requires_grad=True)
        self.terms.append((d, bound.detach()))
        return v + d

    def store(self, v):      # a node's output: fp32 rounding, then stored as bf16
        return self.rel(self.rel(v, U), UB)


def _dot(S, a, w):
    """a [.., K] (bf16 values) times w [K, M] (bf16 weights): one fp32 chain per element."""
    return S.add(a @ w, gamma(w.shape[0]) * (a.abs() @ w.abs()))


def _w(S, w):                # a weight rounded to bf16 at compile time
    return S.rel(w.detach().double(), UB)


def _cell(S, kind, xb, lay, sfx, H, h0=None, c0=None):
    """One direction of one layer: xb [B, T, I] (bf16 values), lay the torch module, h0 / c0
    its initial state [H] or None (zero); the step outputs [B, T, H] (bf16 values), in time
    order."""
    Wih, Whh = getattr(lay, "weight_ih_" + sfx), getattr(lay, "weight_hh_" + sfx)
    bih, bhh = getattr(lay, "bias_ih_" + sfx).detach().double(), getattr(lay, "bias_hh_" + sfx).detach().double()
    G = Wih.shape[0] // H
    B_, T_, _ = xb.shape
    if kind == "GRU":        # torch's r z n: r, z take b_ih + b_hh, n b_ih (b_hn inside r (..))
        bx = torch.cat([S.rel(bih[:2 * H] + bhh[:2 * H], U), bih[2 * H:]])
    else:
        bx = S.rel(bih + bhh, U)
    xp = S.store(S.rel(_dot(S, xb, _w(S, Wih).t()), UB) + bx)    # MatMul (bf16), Add of the bias
    Rt = [_w(S, Whh[k * H:(k + 1) * H]).t() for k in range(G)]
    rev = sfx.endswith("_reverse")
    B_ = xb.shape[0]
    # a constant initial state is held as bf16, as a stored one
    h = None if h0 is None else S.rel(h0.detach().double().expand(B_, H), UB)
    c = None if c0 is None else S.rel(c0.detach().double().expand(B_, H), UB)
    ys = [None] * T_
    for t in (range(T_ - 1, -1, -1) if rev else range(T_)):
        x = [xp[:, t, k * H:(k + 1) * H] for k in range(G)]

        def pre(k):
            return x[k] if h is None else S.rel(x[k] + S.rel(_dot(S, h, Rt[k]), UB), U)

        def sig(v):
            return S.rel(S.rel(torch.sigmoid(v), SIG_R), UB)

        def tanh(v):
            return S.rel(S.rel(torch.tanh(v), TANH_R), UB)
        if kind == "RNN":
            h = tanh(pre(0))
        elif kind == "LSTM":                       # torch's i f g o
            i, o, g = sig(pre(0)), sig(pre(3)), tanh(pre(2))
            ig = S.store(i * g)
            c = ig if c is None else S.store(S.store(sig(pre(1)) * c) + ig)
            h = S.store(o * tanh(c))
        else:
            z = sig(pre(1))
            r = sig(pre(0))
            hn = bhh[2 * H:] if h is None else S.store(S.rel(_dot(S, h, Rt[2]), UB) + bhh[2 * H:])
            n = tanh(S.rel(x[2] + S.store(r * hn), U))
            h = S.store(n - S.store(z * n)) if h is None else S.store(n + S.store(z * S.store(h - n)))
        ys[t] = h
    return torch.stack(ys, 1)


def emulate(m, x):
    """(the exact logits, the tolerance per element) of Classifier m on x."""
    S = Sites()
    y = S.rel(torch.tensor(x, dtype=torch.float64), UB)          # the input as bf16
    for k, r in enumerate(m.rnns):
        kind = type(r).__name__
        nd = 2 if r.bidirectional else 1

        def st(p, layer, d):
            return None if (k or p is None) else p[layer * nd + d, 0]
        for layer in range(r.num_layers):
            outs = [_cell(S, kind, y, r, "l%d" % layer, r.hidden_size, st(m.h0, layer, 0), st(m.c0, layer, 0))]
            if r.bidirectional:
                outs.append(_cell(S, kind, y, r, "l%d_reverse" % layer, r.hidden_size, st(m.h0, layer, 1),
                                  st(m.c0, layer, 1)))
            y = torch.cat(outs, 2)
    H = m.rnns[-1].hidden_size
    hl = (y[:, 0, H:] if m.rnns[-1].bidirectional else y[:, -1]) if m.hn else y[:, -1]
    out = S.rel(_dot(S, hl, _w(S, m.fc.weight).t()) + m.fc.bias.detach().double(), U)
    wc = torch.zeros_like(out)
    sq = torch.zeros_like(out)
    flat = out.reshape(-1)
    for j in range(flat.numel()):
        grads = torch.autograd.grad(flat[j], [d for d, _ in S.terms], retain_graph=True, allow_unused=True)
        c = [g.abs() * b for g, (_, b) in zip(grads, S.terms) if g is not None]
        wc.view(-1)[j] = sum(ci.sum() for ci in c)
        sq.view(-1)[j] = sum((ci * ci).sum() for ci in c)
    # the tolerance: LAMBDA sqrt(sum c_i^2) (Hoeffding), plus the second-order slack
    return out.detach().numpy(), SLACK * LAMBDA * np.sqrt(sq.numpy()), SLACK * wc.numpy(), len(S.terms)


# ---- tools ----

def compile_run(tag, path, x, N, cores=None, extra=()):
    """Compiled at N (and gen's other defaults: 8 cores, unless `cores`) and run on x."""
    d = os.path.join(W, "%s_N%d%s" % (tag, N, "" if cores is None else "_C%d" % cores))
    cc = [] if cores is None else ["--cores", str(cores)]
    r = subprocess.run([os.path.join(TOOLS, "tpu-compile"), path, "--mxu", str(N), "--batch", str(x.shape[0]),
                        "-o", d] + cc + list(extra), capture_output=True, text=True)
    if r.returncode:
        say(False, "%s N=%d: tpu-compile: %s" % (tag, N, r.stderr.strip()))
        return None, None
    np.save(d + "_x.npy", x)
    r = subprocess.run([os.path.join(TOOLS, "tpu-infer"), d, "--input", d + "_x.npy", "--output", d + "_y.npy"],
                       capture_output=True, text=True)
    if r.returncode:
        say(False, "%s N=%d: tpu-infer: %s" % (tag, N, r.stderr.strip()))
        return None, None
    return np.load(d + "_y.npy"), json.load(open(os.path.join(d, "report.json")))


def ort_run(path, x):
    xi = path[:-5] + "_ortx.npy"
    yo = path[:-5] + "_orty.npy"
    np.save(xi, x)
    env = dict(os.environ, ORT_NODE_MODULES=ORT_MODULES)
    r = subprocess.run(["node", os.path.join(REPO, "models", "ort_run.js"), path, xi, yo], capture_output=True,
                       text=True, env=env)
    if r.returncode:
        say(False, "%s: ONNX Runtime: %s" % (os.path.basename(path), r.stderr.strip()))
        return None
    return np.load(yo)


def check(name, T, Ns=(8, 16)):
    """The classifier exported, compiled and run at each N; ours, PyTorch fp32 and ONNX Runtime
    against the exact value within the tolerance."""
    m = make(name)
    x = torch.randn(3, T, 6)
    p = export(name, m, x)
    ops = sorted({n.op_type for n in onnx.load(p).graph.node})
    with torch.no_grad():
        ty = m(x).numpy().astype(np.float64)
    ex, tol, wc, nsites = emulate(m, x.numpy())
    dt = np.abs(ty - ex)               # PyTorch's own fp32 error, measured
    say(bool(np.all(dt <= tol)), "%s (T = %d): tolerance up to %.3g on outputs up to %.3g (%d rounding sites; the "
        "first-order worst case %.3g, refops' composed bound %.3g); PyTorch fp32 within %.1g of the exact value; "
        "torch writes %s" % (name, T, tol.max(), np.abs(ex).max(), nsites, wc.max(), composed_bound(p, x.numpy()),
                             dt.max(), " ".join(ops)))
    outs = {}
    for N in Ns:
        y, rep = compile_run(name, p, x.numpy(), N)
        if y is None:
            continue
        outs[N] = y
        e = np.abs(y.astype(np.float64) - ex)
        d = np.abs(y.astype(np.float64) - ty)
        ok = bool(np.all(e <= tol)) and bool(np.all(d <= tol + dt)) and bool(np.all(e <= wc))
        say(ok, "%s N=%d: |ours - exact| at most %.2g of the tolerance (%.2g of the first-order worst case); "
            "|ours - PyTorch fp32| %.3g; %d instructions (%d straight-line)"
            % (name, N, float(np.max(e / tol)), float(np.max(e / wc)), d.max(), rep["instructions"],
               rep["straight_line_instructions"]))
    y1, _ = compile_run(name, p, x.numpy(), Ns[0], cores=1)
    if len(outs) == 2 and y1 is not None:
        say(outs[Ns[0]].tobytes() == outs[Ns[1]].tobytes() == y1.tobytes(),
            "%s: the same bits at N = %d and %d on 8 cores and at N = %d on 1" % (name, Ns[0], Ns[1], Ns[0]))
    if HAVE_ORT and outs:
        yo = ort_run(p, x.numpy())
        if yo is not None:
            y = outs[Ns[0]]
            do = np.abs(yo.astype(np.float64) - ex)
            ok = bool(np.all(do <= tol)) and bool(np.all(np.abs(y - yo) <= tol + do))
            say(ok, "%s: ONNX Runtime within %.1g of the exact value, |ours - ORT| %.3g" % (name, do.max(), np.abs(y - yo).max()))
    return dict(m=m, x=x, p=p, ex=ex, tol=tol, ty=ty)


def wrong(name, r, how):
    """The exported model with two gates swapped (in W, R and B) or the direction reversed,
    compiled and run: the check against PyTorch fp32 must reject it."""
    mo = onnx.load(r["p"])
    inits = {t.name: t for t in mo.graph.initializer}
    if how == "h0":                                        # the learned initial state dropped
        t = inits["h0"]
        t.CopyFrom(numpy_helper.from_array(np.zeros_like(numpy_helper.to_array(t)), "h0"))
    for n in mo.graph.node if how != "h0" else []:
        if n.op_type not in ("LSTM", "GRU"):
            continue
        if how == "gates":
            H = [a.i for a in n.attribute if a.name == "hidden_size"][0]
            G = 4 if n.op_type == "LSTM" else 3
            a0, a1 = (0, 2) if n.op_type == "LSTM" else (0, 1)   # LSTM i <-> f, GRU z <-> r
            for k, wname in enumerate(n.input[1:4]):
                t = inits[wname]
                arr = numpy_helper.to_array(t).copy()
                for blk in range(2 if k == 2 else 1):            # B holds Wb and Rb
                    o = blk * G * H
                    s0, s1 = slice(o + a0 * H, o + (a0 + 1) * H), slice(o + a1 * H, o + (a1 + 1) * H)
                    tmp = arr[:, s0].copy()
                    arr[:, s0] = arr[:, s1]
                    arr[:, s1] = tmp
                t.CopyFrom(numpy_helper.from_array(arr, t.name))
        else:
            n.attribute.append(helper.make_attribute("direction", "reverse"))
        break
    pw = r["p"][:-5] + "_wrong_%s.onnx" % how
    onnx.save(mo, pw)
    y, _ = compile_run(name + "_wrong_" + how, pw, r["x"].numpy(), 8)
    if y is None:
        return
    d = np.abs(y.astype(np.float64) - r["ty"])
    lim = r["tol"] + np.abs(r["ty"] - r["ex"])
    what = {"gates": "LSTM's i and f swapped" if "lstm" in name else "GRU's z and r swapped",
            "reverse": "the direction reversed", "h0": "its initial h zero"}[how]
    say(bool(np.any(d > lim)), "%s with %s: rejected by the same check (|ours - PyTorch| up to %.3g, %.1f x the "
        "tolerance)" % (name, what, d.max(), float(np.max(d / lim))))


# ---- refops' composed worst-case bound over the exported graph (the conformance runner's) ----

def _ints(v):
    return np.asarray(v.raw if v.raw is not None else v.v).astype(np.int64)


def _int_val(a):
    a = np.asarray(a, dtype=np.int64)
    return refops.Val(a.astype(np.float64), raw=a)


def _is_int(v):
    return v is not None and v.raw is not None and np.issubdtype(np.asarray(v.raw).dtype, np.integer)


def _shape_op(node, ins):
    """torch's shape computations (on integers), ConstantOfShape, Expand, Squeeze; None: refops'"""
    a = refops.attrs(node)
    op = node.op_type
    if op == "Shape":
        return _int_val(ins[0].v.shape)
    if op == "Gather" and _is_int(ins[0]):
        return _int_val(np.take(_ints(ins[0]), _ints(ins[1]), axis=a.get("axis", 0)))
    if op == "Unsqueeze" and _is_int(ins[0]):
        return _int_val(np.expand_dims(_ints(ins[0]), tuple(_ints(ins[1]).tolist())))
    if op == "Concat" and all(_is_int(i) for i in ins):
        return _int_val(np.concatenate([_ints(i) for i in ins], axis=a.get("axis", 0)))
    if op == "ConstantOfShape":
        t = a.get("value")
        val = numpy_helper.to_array(t).reshape(-1)[0] if t is not None else np.float32(0)
        if np.issubdtype(np.asarray(val).dtype, np.integer):
            return _int_val(np.full(_ints(ins[0]).tolist(), int(val)))
        return refops.Val(np.full(_ints(ins[0]).tolist(), float(val)))
    if all(i is None or _is_int(i) for i in ins) and op in ("Reshape", "Mul", "Add", "Equal", "Where"):
        v = [None if i is None else _ints(i) for i in ins]
        if op == "Reshape":
            return _int_val(v[0].reshape(refops.reshape_target(list(v[0].shape), v[1].tolist(), 0)))
        if op == "Where":
            return _int_val(np.where(v[0] != 0, v[1], v[2]))
        return _int_val({"Mul": np.multiply, "Add": np.add, "Equal": np.equal}[op](v[0], v[1]))
    if op == "Expand":
        x = ins[0]
        sh = np.broadcast_shapes(x.v.shape, tuple(_ints(ins[1]).tolist()))
        return x.like(np.broadcast_to(x.v, sh).copy(), np.broadcast_to(x.e, sh).copy())
    if op == "Squeeze":
        x = ins[0]
        ax = tuple(_ints(ins[1]).tolist()) if len(ins) > 1 and ins[1] is not None else None
        return x.like(np.squeeze(x.v, ax), np.squeeze(x.e, ax))
    return None


def reference(path, x):
    """The graph's output as a refops.Val (exact value, worst-case bound)."""
    g = onnx.load(path).graph
    env = {g.input[0].name: refops.Val(x.astype(np.float64), act=True)}
    for t in g.initializer:
        arr = numpy_helper.to_array(t)
        env[t.name] = refops.Val(arr.astype(np.float64), raw=arr if arr.dtype.kind in "iu" else None)
    for n in g.node:
        if n.op_type == "Constant":
            arr = numpy_helper.to_array(n.attribute[0].t)
            env[n.output[0]] = refops.Val(arr.astype(np.float64), raw=arr if arr.dtype.kind in "iu" else None)
            continue
        ins = [env[i] if i else None for i in n.input]
        y = _shape_op(n, ins)
        if y is None:
            y = refops.OPS[n.op_type](n, ins)
        if isinstance(y, list):
            for name, v in zip(n.output, y):
                if name:
                    env[name] = v
        else:
            env[n.output[0]] = y
    return env[g.output[0].name]


def composed_bound(p, x):
    """refops' worst-case bound composed node by node (the conformance runner's), its largest
    element: valid, but each step multiplies it by about sum |R| max|f'| (no cancellation)."""
    with np.errstate(all="ignore"):
        return float(reference(p, x).e.max())


res = {}
for name, T in (("lstm2", 6), ("gru", 6), ("bilstm", 6), ("bigru_r", 6), ("lstm2_hn", 6), ("bigru_hn", 6),
                ("lstm2_static", 6), ("lstm2_h0", 6), ("bigru_h0", 6), ("lstm2_t24", 24)):
    res[name] = check(name, T)
for name in ("lstm2", "gru", "bilstm"):
    wrong(name, res[name], "gates")
wrong("lstm2", res["lstm2"], "reverse")
wrong("lstm2_h0", res["lstm2_h0"], "h0")
wrong("bigru_h0", res["bigru_h0"], "h0")

# tpu-infer's chunks: lstm2 compiled for 2 images on one core runs the 3 in two runs (the
# last padded with zeros): the same bits as one run of 3
r0 = res["lstm2"]
d = os.path.join(W, "lstm2_chunks")
rc = subprocess.run([os.path.join(TOOLS, "tpu-compile"), r0["p"], "--mxu", "8", "--cores", "1", "--batch", "2", "-o",
                     d], capture_output=True, text=True).returncode
yc = None
if rc == 0:
    np.save(d + "_x.npy", r0["x"].numpy())
    if subprocess.run([os.path.join(TOOLS, "tpu-infer"), d, "--input", d + "_x.npy", "--output", d + "_y.npy"],
                      capture_output=True, text=True).returncode == 0:
        yc = np.load(d + "_y.npy")
y1 = np.load(os.path.join(W, "lstm2_N8_C1_y.npy"))
say(yc is not None and yc.tobytes() == y1.tobytes(), "lstm2 compiled for batch 2 on one core, 3 images in two runs: "
    "the same bits as one run of 3")

# on the verilated N = 4 core (scripts/infer_rtl.sh): every trace record and the output
# identical to the C model's
for name in ("gru", "bilstm"):
    d = os.path.join(W, name + "_rtl")
    xr = res[name]["x"].numpy()
    r = subprocess.run([os.path.join(TOOLS, "tpu-compile"), res[name]["p"], "--mxu", "4", "--cores", "1", "--batch",
                        str(xr.shape[0]), "-o", d], capture_output=True, text=True)
    if r.returncode == 0:
        np.save(d + "_x.npy", xr)
        r = subprocess.run([os.path.join(TOOLS, "tpu-infer"), d, "--input", d + "_x.npy", "--output", d + "_y.npy",
                            "--rtl"], capture_output=True, text=True)
    out = (r.stdout + r.stderr).strip().splitlines()
    say(r.returncode == 0 and any("identical to the model's" in ln for ln in out),
        "%s on the N = 4 core's RTL: %s" % (name, [ln for ln in out if "infer_rtl" in ln or "error" in ln][-1:]))

# the bound's growth with the sequence: lstm2 at T = 6 and 24
e6, e24 = res["lstm2"]["tol"].max(), res["lstm2_t24"]["tol"].max()
say(e24 > e6, "the tolerance grows with T: lstm2's logits %.3g at T = 6, %.3g at T = 24" % (e6, e24))

# instruction counts at N = 8 (the rolled program and the straight-line one)
for T in (6, 12, 24, 48):
    m = make("lstm2")
    p = export("lstm2_count_t%d" % T, m, torch.randn(3, T, 6))
    d = os.path.join(W, "count_t%d.json" % T)
    r = subprocess.run([os.path.join(TOOLS, "tpu-compile"), p, "--mxu", "8", "--cores", "1", "--batch", "3",
                        "--imem-insns", "32768", "--report-only", "--json", d], capture_output=True, text=True)
    if r.returncode:
        say(False, "lstm2 T=%d: tpu-compile --report-only: %s" % (T, r.stderr.strip()))
        continue
    j = json.load(open(d))
    print("count: lstm2 (2 layers, H 16) T = %d at N = 8: %d instructions, %d straight-line, %d loops"
          % (T, j["instructions"], j["straight_line_instructions"], j["loops"]))


# ---- hand-written nodes: layout 1, reverse, GRU's linear_before_reset 0, Y as the graph
#      output; against refops' composed bound (T = 3: tight, the conformance runner's) ----

def node_model(op, G, attrs, out, out_shape, layout, x_shape, H=5, with_b=True, seed=3, init=False):
    """init: initial_h (and an LSTM's initial_c), one random row per direction repeated over
    the batch ([D, B, H], layout 1 [B, D, H])."""
    rng = np.random.default_rng(seed)
    D = 2 if attrs.get("direction") == "bidirectional" else 1
    I = x_shape[2]
    inits = [numpy_helper.from_array((rng.standard_normal((D, G * H, I)) * 0.6).astype(np.float32), "W"),
             numpy_helper.from_array((rng.standard_normal((D, G * H, H)) * 0.6).astype(np.float32), "R")]
    ins = ["xt" if not layout else "x", "W", "R"]
    if with_b or init:
        if with_b:
            inits.append(numpy_helper.from_array((rng.standard_normal((D, 2 * G * H)) * 0.3).astype(np.float32), "B"))
        ins.append("B" if with_b else "")
    if init:
        ins.append("")                                       # sequence_lens
        for nm in (["h0", "c0"] if op == "LSTM" else ["h0"]):
            row = rng.standard_normal((D, 1, H)).astype(np.float32)
            st = np.repeat(row, x_shape[0], axis=1)          # [D, B, H]
            inits.append(numpy_helper.from_array(st.transpose(1, 0, 2).copy() if layout else st, nm))
            ins.append(nm)
    nodes = []
    if not layout:
        nodes.append(helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]))
    outs = ["Y", "", ""][:3 if op == "LSTM" else 2]
    outs[out] = "out"
    nodes.append(helper.make_node(op, ins, outs, hidden_size=H, layout=layout, **attrs))
    g = helper.make_graph(nodes, op, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, out_shape)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])


def node_check(tag, model, cores=None):
    p = os.path.join(W, "node_%s.onnx" % tag)
    onnx.save(model, p)
    shp = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(7).standard_normal(shp).astype(np.float32)
    ref = refops.rb(reference(p, x))
    y, _ = compile_run("node_" + tag, p, x, 8, cores=cores)
    if y is None:
        return
    r = np.abs(y.astype(np.float64) - ref.v) / ref.e
    say(y.shape == ref.v.shape and bool(np.all(r <= 1)), "%s: every element within refops' bound (worst %.2g of it; "
        "the bound up to %.2g on values up to %.2g)" % (tag, r.max(), ref.e.max(), np.abs(ref.v).max()))


B3, T3 = 3, 3
node_check("lstm_layout1_bidirectional_Y", node_model("LSTM", 4, {"direction": "bidirectional"}, 0,
                                                      [B3, T3, 2, 5], 1, (B3, T3, 4)))
node_check("gru_layout1_reverse_lbr0_Yh", node_model("GRU", 3, {"direction": "reverse"}, 1, [B3, 1, 5], 1,
                                                     (B3, T3, 4)))
node_check("gru_lbr1_bidirectional_Yh", node_model("GRU", 3, {"direction": "bidirectional", "linear_before_reset": 1},
                                                   1, [2, B3, 5], 0, (B3, T3, 4)), cores=1)
node_check("lstm_reverse_Yc", node_model("LSTM", 4, {"direction": "reverse"}, 2, [1, B3, 5], 0, (B3, T3, 4)),
           cores=1)
node_check("lstm_layout1_bidirectional_initial_hc_Yh", node_model("LSTM", 4, {"direction": "bidirectional"}, 1,
                                                                [B3, 2, 5], 1, (B3, T3, 4), init=True))
node_check("gru_lbr0_initial_h_Y", node_model("GRU", 3, {}, 0, [T3, 1, B3, 5], 0, (B3, T3, 4), init=True), cores=1)
node_check("rnn_reverse_initial_h_no_bias_Yh", node_model("RNN", 1, {"direction": "reverse"}, 1, [1, B3, 5], 0,
                                                          (B3, T3, 4), with_b=False, init=True), cores=1)
node_check("rnn_bidirectional_Y_no_bias", node_model("RNN", 1, {"direction": "bidirectional"}, 0, [T3, 2, B3, 5], 0,
                                                     (B3, T3, 4), with_b=False), cores=1)


# ---- refusals: one line, exit 2, nothing written ----

def lstm_model(attrs=None, extra_inputs=(), inits_extra=(), op="LSTM", G=4, T=2):
    I, H, B = 3, 4, 2
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.standard_normal((1, G * H, I)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.standard_normal((1, G * H, H)).astype(np.float32), "R")]
    inits += list(inits_extra)
    tp = helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2])
    n = helper.make_node(op, ["xt", "W", "R"] + list(extra_inputs), ["", "Y_h"], hidden_size=H, **(attrs or {}))
    g = helper.make_graph([tp, n], "r", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, T, I])],
                          [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, B, H])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])


def refused(tag, model, want, cores=1):
    p = os.path.join(W, "bad_%s.onnx" % tag)
    onnx.save(model, p)
    d = os.path.join(W, "bad_%s_out" % tag)
    shutil.rmtree(d, ignore_errors=True)
    r = subprocess.run([os.path.join(TOOLS, "tpu-compile"), p, "--mxu", "8", "--cores", str(cores), "--batch", "2",
                        "-o", d], capture_output=True, text=True)
    lines = r.stderr.strip().splitlines()
    ok = r.returncode == 2 and len(lines) == 1 and want in lines[0] and not os.path.exists(d)
    say(ok, "refused %s: %s" % (tag, lines[0] if lines else "(accepted, exit %d)" % r.returncode))


z = np.zeros((1, 2, 4), np.float32)
refused("ragged", lstm_model(extra_inputs=["", "sl"], inits_extra=[numpy_helper.from_array(np.array([2, 1], np.int32), "sl")]),
        "sequence_lens[1] = 1")
refused("relu", lstm_model({"activations": ["Relu", "Tanh", "Tanh"]}), "activations 'Relu,Tanh,Tanh'")
refused("sideways", lstm_model({"direction": "sideways"}), "direction 'sideways'")
refused("clip", lstm_model({"clip": 3.0}), "clip 3")
refused("input_forget", lstm_model({"input_forget": 1}), "input_forget 1")
refused("layout2", lstm_model({"layout": 2}), "layout 2")
refused("peepholes", lstm_model(extra_inputs=["", "", "", "", "P"],
                                inits_extra=[numpy_helper.from_array(np.ones((1, 12), np.float32), "P")]), "P (peepholes)")
zv = z.copy()
zv[0, 1] = 0.5
refused("initial_h", lstm_model(extra_inputs=["", "", "h0"], inits_extra=[numpy_helper.from_array(zv, "h0")]),
        "initial_h differs between batch elements 0 and 1")
refused("gru_acts", lstm_model({"activations": ["Sigmoid", "Relu"]}, op="GRU", G=3), "activations 'Sigmoid,Relu'")
refused("long", lstm_model(T=1025), "a sequence of 1025 steps: at most 1024")
refused("yh_8_cores", lstm_model(), "Y_h, layout 0 [num_directions, B, H], is the graph output", cores=8)
seqfirst = lstm_model()
seqfirst.graph.node.pop(0)
seqfirst.graph.node[0].input[0] = "x"
refused("sequence_first", seqfirst, "X is the graph input in layout 0")

print("test-compiler-rnn: %s" % ("FAIL (%d)" % fails if fails else "PASS"))
sys.exit(1 if fails else 0)
