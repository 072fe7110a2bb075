# SPDX-License-Identifier: Apache-2.0
"""PyTorch fp32 twin of tpu-train (docs/training.md): the same ONNX initial weights, the same
batch order (splitmix64 Fisher-Yates per epoch, as tools/tpu_train.c), cross-entropy averaged
over the global batch, and torch.optim.SGD / Adam with the same settings.

Used by tests/train/ref.py (one step's gradients against the machine's) and by
models/train_ref.py (whole runs: the curves tpu-train's plot puts beside ours)."""
import numpy as np
import onnx
import torch
from onnx import numpy_helper

M64 = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def epoch_orders(n, seed, epochs):
    """The example order of each epoch: the permutation is shuffled again every epoch."""
    perm = list(range(n))
    state = seed & M64
    out = []
    for _ in range(epochs):
        for i in range(n, 1, -1):
            state, r = splitmix64(state)
            j = r % i
            perm[i - 1], perm[j] = perm[j], perm[i - 1]
        out.append(np.array(perm, dtype=np.int64))
    return out


def _pads(n, dim):
    att = {a.name: a for a in n.attribute}
    p = list(att["pads"].ints) if "pads" in att else [0] * (2 * dim)
    return p if dim == 2 else [0, p[0], 0, p[1]]  # t, l, b, r


class Net:
    """The model tpu-train trains, as fp32 parameters: an optional embedding (a Gather of a
    [V, D] table by token ids, transposed to channels-first), Conv stages (a 1-D or 2-D Conv,
    stride 1, pads, ReLU before or after a k x k / stride k MaxPool; 1-D is run as 2-D with
    height 1), then a chain of Gemm/MatMul(+Add) [+ Relu].

    self.embed: the table (a parameter) or None; self.stages: dicts (w, b, pads, pool (kh, kw),
    relu_before, relu_after, dim); self.layers: [W k x o, b or None, relu]; self.plist: every
    layer's (weight, bias) in tpu-train's layer order."""

    def __init__(self, path, logits=False):
        m = onnx.load(path)
        init = {t.name: numpy_helper.to_array(t).astype(np.float32) for t in m.graph.initializer}
        self.layers = []
        self.stages = []
        self.embed = None
        nodes = list(m.graph.node)
        for n in nodes:
            if n.op_type == "Gather" and n.input[0] in init:
                self.embed = torch.tensor(init[n.input[0]], requires_grad=True)
            elif n.op_type == "Conv":
                w = init[n.input[1]]
                dim = w.ndim - 2
                b = init.get(n.input[2]) if len(n.input) > 2 else None
                att = {a.name: a for a in n.attribute}
                st = list(att["strides"].ints) if "strides" in att else [1] * dim
                self.stages.append(dict(w=torch.tensor(w, requires_grad=True),
                                        b=None if b is None else torch.tensor(b, requires_grad=True),
                                        pads=_pads(n, dim), pool=(1, 1), relu_before=False,
                                        relu_after=False, dim=dim,
                                        stride=(st[0], st[1]) if dim == 2 else (1, st[0])))
            elif n.op_type == "MaxPool":
                k = list({a.name: a for a in n.attribute}["kernel_shape"].ints)
                self.stages[-1]["pool"] = (k[0], k[1]) if len(k) == 2 else (1, k[0])
            elif n.op_type == "Relu" and not self.layers:
                c = self.stages[-1]
                c["relu_after" if c["pool"] != (1, 1) else "relu_before"] = True
            elif n.op_type in ("Gemm", "MatMul"):
                w = init[n.input[1]]
                tb = any(a.name == "transB" and a.i for a in n.attribute)
                w = w.T if tb else w
                b = init.get(n.input[2]) if n.op_type == "Gemm" and len(n.input) > 2 else None
                if n.op_type == "MatMul":
                    for a in nodes:
                        if a.op_type == "Add" and n.output[0] in a.input:
                            other = [s for s in a.input if s != n.output[0]][0]
                            b = init.get(other)
                self.layers.append([torch.tensor(np.ascontiguousarray(w), requires_grad=True),
                                    None if b is None else torch.tensor(b.reshape(-1), requires_grad=True),
                                    False])
            elif n.op_type == "Relu":
                self.layers[-1][2] = True
        self.plist = ([(self.embed, None)] if self.embed is not None else []) + \
            [(c["w"], c["b"]) for c in self.stages] + [(w, b) for w, b, _ in self.layers]
        self.params = [p for w, b in self.plist for p in (w, b) if p is not None]
        self.flat_input = self.embed is None and not self.stages

    @staticmethod
    def _w4(c, w=None):
        """The stage's weights as 4-D [co, ci, kh, kw]."""
        w = c["w"] if w is None else w
        return w if c["dim"] == 2 else w.unsqueeze(2)

    def _input4(self, x):
        """The first stage's input, [B, C, H, W] (token ids through the embedding)."""
        if self.embed is not None:
            e = self.embed[torch.as_tensor(np.asarray(x), dtype=torch.long)]  # B, L, D
            return e.transpose(1, 2).unsqueeze(2)
        x = torch.as_tensor(x)
        return x.unsqueeze(2) if x.dim() == 3 else x

    def _stage(self, c, h):
        F = torch.nn.functional
        t, l, bo, r = c["pads"]
        z = F.conv2d(F.pad(h, (l, r, t, bo)), self._w4(c), c["b"], stride=c["stride"])
        if c["relu_before"]:
            z = torch.relu(z)
        if c["pool"] != (1, 1):
            z = F.max_pool2d(z, c["pool"])
        if c["relu_after"]:
            z = torch.relu(z)
        return z

    def _embed_flat(self, x):
        """An embedding read by the dense layers: [B, L x D], (position, dim) order."""
        ids = torch.as_tensor(np.asarray(x), dtype=torch.long)
        return self.embed[ids].reshape(ids.shape[0], -1)

    def features(self, x):
        """The input of the first Gemm: the embedding and conv stages, flattened (NCHW)."""
        if self.flat_input:
            x = torch.as_tensor(x)
            return x.reshape(x.shape[0], -1)
        if not self.stages:
            return self._embed_flat(x)
        h = self._input4(x)
        for c in self.stages:
            h = self._stage(c, h)
        return h.flatten(1)

    def logits(self, x):
        h = self.features(x)
        for w, b, relu in self.layers:
            h = h @ w
            if b is not None:
                h = h + b
            if relu:
                h = torch.relu(h)
        return h

    def step_grads(self, xb, yb):
        """Gradients of one step, the bound of each element and the loss.

        The bound (docs/training.md "How close to PyTorch") is a first-order error budget
        derived from the numerics contract, propagated through the step in float64 with
        u = 2^-8 (one bf16 rounding is at most 2^-9 relative; the factor 2 covers the fp32
        accumulations and the second-order terms) and g = n 2^-24 for an fp32 chain of n:
          inputs         e_h0 = u|x|  (an embedding: u|E|, the table's bf16 copy)
          z = h W + b    e_z = e_h |W| + (u + g_k) |h||W|          (W and h rounded to bf16;
                         a conv: the same with the conv of |h| and |W|)
          pool           e = the largest e_z of the window (a maximum moves by at most that)
          h' = relu(z)   e_h' = e_z + u|h'|                       (stored as bf16)
          p = softmax(z) e_p = 2 p max(e_z)
          dz = (p - y)/B e_dz = e_p / B + u|dz|                   (bf16 for the MXU)
          dx = dz W^T    e_dx = e_dz |W|^T + (u + g_o) |dz||W|^T  (a conv: the transposed conv)
          dy = dx [z>0]  e_dy = (e_dx + u|dx|) [z>0] + (|dx| + e_dx) [|z| <= e_z]  (the mask may flip)
          route          the pooled gradient D to the window's maximum: e = (E + u|D|) there,
                         and |D| + E on every element within 2 e_z of the maximum (it may
                         route there instead)
          dW = h^T dy    e_dW = e_h^T |dy| + |h|^T e_dy + g_b |h|^T |dy|
        and the bound is 2 e_dW (db: the same with h = 1)."""
        F = torch.nn.functional
        u = 2.0 ** -8
        B = len(xb)
        for p in self.params:
            p.grad = None
        # ---- the PyTorch fp32 step, keeping every stage's tensors ----
        hs_in, zs, pooled = [], [], []
        h = None if self.flat_input or not self.stages else self._input4(xb)
        hin0 = h
        for c in self.stages:
            t, l, bo, r = c["pads"]
            hs_in.append(h)
            z = F.conv2d(F.pad(h, (l, r, t, bo)), self._w4(c), c["b"], stride=c["stride"])
            zs.append(z)
            a = torch.relu(z) if c["relu_before"] else z
            m = F.max_pool2d(a, c["pool"]) if c["pool"] != (1, 1) else a
            m.retain_grad()
            pooled.append(m)
            h = torch.relu(m) if c["relu_after"] else m
        if h is not None:
            feat = h.flatten(1)
        elif self.embed is not None:
            feat = self._embed_flat(xb)
        else:
            feat = torch.as_tensor(xb).reshape(B, -1)
        acts, douts = [], []
        h = feat
        for w, b, relu in self.layers:
            acts.append(h)
            z = h @ w
            if b is not None:
                z = z + b
            z.retain_grad()
            douts.append(z)
            h = torch.relu(z) if relu else z
        loss = F.cross_entropy(h, torch.tensor(yb))
        loss.backward()
        npd = lambda t: t.detach().numpy().astype(np.float64)  # noqa: E731
        # ---- forward errors ----
        if self.stages:
            x4 = npd(hin0)
            eh = u * np.abs(x4)
            cst = []  # per stage: (|h| padded, e_h padded, z, e_z, pool parts)
            for si, c in enumerate(self.stages):
                t, l, bo, r = c["pads"]
                W4 = np.abs(npd(self._w4(c)))
                K = W4[0].size
                hp = np.pad(np.abs(x4), ((0, 0), (0, 0), (t, bo), (l, r)))
                ehp = np.pad(eh, ((0, 0), (0, 0), (t, bo), (l, r)))
                cw = lambda a: F.conv2d(torch.tensor(a), torch.tensor(W4), stride=c["stride"]).numpy()  # noqa: E731
                ez = cw(ehp) + (u + K * 2.0 ** -24) * cw(hp)
                z = npd(zs[si])
                kh, kw = c["pool"]
                Bz, C, Ho, Wo = z.shape
                Hq, Wq = Ho // kh, Wo // kw
                ezp = ez[:, :, :Hq * kh, :Wq * kw].reshape(Bz, C, Hq, kh, Wq, kw).max(axis=(3, 5))
                cst.append(dict(hp=hp, ehp=ehp, z=z, ez=ez, ezp=ezp, W4=W4, K=K))
                x4 = npd(pooled[si])
                x4 = np.maximum(x4, 0) if c["relu_after"] else x4
                eh = ezp + u * np.abs(x4)
            eh_feat = eh.reshape(B, -1)
        Ws = [np.abs(npd(w)) for w, _, _ in self.layers]
        H = [np.abs(npd(a)) for a in acts]
        Z = [npd(z) for z in douts]
        ehl = [eh_feat if self.stages else u * H[0]]
        ez = []
        for l, (w, b, relu) in enumerate(self.layers):
            k = Ws[l].shape[0]
            ez.append(ehl[l] @ Ws[l] + (u + k * 2.0 ** -24) * (H[l] @ Ws[l]))
            if l + 1 < len(self.layers):
                ehl.append(ez[l] + u * H[l + 1])
        zl = Z[-1]
        pr = np.exp(zl - zl.max(axis=1, keepdims=True))
        pr /= pr.sum(axis=1, keepdims=True)
        dz = np.abs(npd(douts[-1].grad))
        edy = 2 * pr * ez[-1].max(axis=1, keepdims=True) / B + u * dz
        grads, bounds = [], []
        for l in range(len(self.layers) - 1, -1, -1):
            w, b, _ = self.layers[l]
            D = np.abs(npd(douts[l].grad))
            ew = ehl[l].T @ D + H[l].T @ edy + B * 2.0 ** -24 * (H[l].T @ D)
            eb = edy.sum(axis=0) + B * 2.0 ** -24 * D.sum(axis=0)
            grads.insert(0, (npd(w.grad), None if b is None else npd(b.grad)))
            bounds.insert(0, (2 * ew + 1e-12, 2 * eb + 1e-12))
            o = Ws[l].shape[1]
            dx = D @ Ws[l].T
            edx = edy @ Ws[l].T + (u + o * 2.0 ** -24) * dx
            if l:
                zp = Z[l - 1]
                mask = (zp > 0) if self.layers[l - 1][2] else np.ones_like(zp, dtype=bool)
                flip = (np.abs(zp) <= ez[l - 1]) if self.layers[l - 1][2] else np.zeros_like(mask)
                edy = (edx + u * dx) * mask + (dx + edx) * flip
        if self.embed is not None and not self.stages:
            # the embedding read by the first Gemm: dE = dx rounded to bf16, scatter-added
            ids = np.asarray(xb).astype(np.int64).reshape(-1)
            Dm = self.embed.shape[1]
            eE = (edx + u * np.abs(dx)).reshape(-1, Dm)
            aE = np.abs(dx).reshape(-1, Dm)
            V = self.embed.shape[0]
            et = np.zeros((V, Dm))
            at = np.zeros((V, Dm))
            np.add.at(et, ids, eE)
            np.add.at(at, ids, aE)
            grads.insert(0, (npd(self.embed.grad), None))
            bounds.insert(0, (2 * (et + len(ids) * 2.0 ** -24 * at) + 1e-12, None))
        # ---- the conv stages, last first: E is the error of the pooled gradient ----
        E = edx if self.stages else None
        for si in range(len(self.stages) - 1, -1, -1):
            c, s = self.stages[si], cst[si]
            z, ezc = s["z"], s["ez"]
            Bz, C, Ho, Wo = z.shape
            kh, kw = c["pool"]
            Hq, Wq = Ho // kh, Wo // kw
            Dp = np.abs(npd(pooled[si].grad))  # the gradient at the pool's output
            E = E.reshape(Dp.shape)
            m = npd(pooled[si])
            if c["relu_after"]:
                E = E + (Dp + E) * (np.abs(m) <= s["ezp"])
            zz = np.maximum(z, 0) if c["relu_before"] else z
            zc = zz[:, :, :Hq * kh, :Wq * kw].reshape(Bz, C, Hq, kh, Wq, kw)
            ecc = ezc[:, :, :Hq * kh, :Wq * kw].reshape(Bz, C, Hq, kh, Wq, kw)
            ismax = zc == m[:, :, :, None, :, None]
            near = (m[:, :, :, None, :, None] - zc) <= 2 * np.maximum(ecc, s["ezp"][:, :, :, None, :, None])
            g_up = Dp[:, :, :, None, :, None] * ismax
            e_up = (E + u * Dp)[:, :, :, None, :, None] * ismax + (Dp + E)[:, :, :, None, :, None] * near * ~ismax
            G = np.zeros_like(z)
            EG = np.zeros_like(z)
            G[:, :, :Hq * kh, :Wq * kw] = g_up.reshape(Bz, C, Hq * kh, Wq * kw)
            EG[:, :, :Hq * kh, :Wq * kw] = e_up.reshape(Bz, C, Hq * kh, Wq * kw)
            if c["relu_before"]:
                EG = EG + (G + EG) * (np.abs(z) <= np.maximum(ezc, 2 * u * np.abs(z).max()))
            G = np.abs(G)
            kk = s["W4"].shape[2:]
            wg = lambda a, g: torch.nn.grad.conv2d_weight(torch.tensor(a), s["W4"].shape,  # noqa: E731
                                                          torch.tensor(g), stride=c["stride"]).numpy()
            n = Bz * Ho * Wo
            ew = wg(s["ehp"], G) + wg(s["hp"], EG) + n * 2.0 ** -24 * wg(s["hp"], G)
            eb = EG.sum(axis=(0, 2, 3)) + n * 2.0 ** -24 * G.sum(axis=(0, 2, 3))
            gw = npd(c["w"].grad)
            grads.insert(0, (gw, None if c["b"] is None else npd(c["b"].grad)))
            bounds.insert(0, (2 * ew.reshape(gw.shape) + 1e-12, 2 * eb + 1e-12))
            if si == 0 and self.embed is None:
                break
            # dX = the transposed conv of G; only the interior (not the padding) is used
            t, l, bo, r = c["pads"]
            W4 = torch.tensor(s["W4"])
            Hp, Wp = s["hp"].shape[2], s["hp"].shape[3]
            ct = lambda g: _convT(g, W4, c["stride"], Hp, Wp)  # noqa: E731
            Kt = C * kk[0] * kk[1]
            dxa = ct(G)
            edx = ct(EG) + (u + Kt * 2.0 ** -24) * dxa
            edx = edx[:, :, t:Hp - bo, l:Wp - r]
            dxa = dxa[:, :, t:Hp - bo, l:Wp - r]
            if si > 0:
                E = edx
                continue
            # the embedding: dE rounded to bf16, the table's gradient a scatter-add of its rows
            ids = torch.as_tensor(np.asarray(xb), dtype=torch.long).reshape(-1)
            eE = (edx + u * dxa)[:, :, 0, :].transpose(0, 2, 1).reshape(-1, dxa.shape[1])
            aE = dxa[:, :, 0, :].transpose(0, 2, 1).reshape(-1, dxa.shape[1])
            V = self.embed.shape[0]
            et = np.zeros((V, aE.shape[1]))
            at = np.zeros((V, aE.shape[1]))
            np.add.at(et, ids.numpy(), eE)
            np.add.at(at, ids.numpy(), aE)
            ew = et + len(ids) * 2.0 ** -24 * at
            grads.insert(0, (npd(self.embed.grad), None))
            bounds.insert(0, (2 * ew + 1e-12, None))
        return grads, bounds, float(loss)


def _convT(g, w, stride, hp, wp):
    """The input gradient of a conv: the transposed conv of g, zero-extended to the padded
    input's hp x wp (the rows and columns a strided conv never reads)."""
    d = torch.nn.functional.conv_transpose2d(torch.as_tensor(g), torch.as_tensor(w), stride=stride).numpy()
    out = np.zeros(d.shape[:2] + (hp, wp))
    out[:, :, :d.shape[2], :d.shape[3]] = d
    return out


def bf16(a):
    """fp32 -> bf16 -> fp32 with the contract's rounding (RNE; subnormals flushed to zero)."""
    a = np.asarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    r = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32)
    out = r.view(np.float32).copy()
    out[np.abs(out) < np.float32(2.0 ** -126)] = 0.0
    nan = np.isnan(a)
    out[nan] = np.nan
    return out


def _b64(a):
    return bf16(a).astype(np.float64)


# The machine computes the values it rounds to bf16 in fp32 (MXU and VPU chains, the VPU's
# softmax) where the emulation uses float64; the two differ by far less than FLIP of the value
# (an fp32 chain of n <= 256 terms: n 2^-24 of its terms' magnitude). A value that close to a
# bf16 rounding midpoint may round the other way on the machine: one bf16 ulp (at most 2^-7 of
# it). _rf marks those values so that the check can allow exactly them.
FLIP = 2.0 ** -14


def _rf(a):
    """(bf16(a) as float64, the mask of elements within FLIP of a rounding midpoint)."""
    a = np.asarray(a, dtype=np.float64)
    lo, hi = bf16(a * (1 - FLIP)), bf16(a * (1 + FLIP))
    return bf16(a).astype(np.float64), lo != hi


def emulate_grads(net, xb, yb):
    """The step's gradients as the machine computes them (docs/training.md): the contract's
    bf16 roundings at the same points (the input or the embedding's table, the MXU weights,
    the stored activations, dZ, each dense dY, each routed conv gradient G and the
    embedding's dY), with the sums in float64 instead of the MXU's fp32 chain (the gradient
    at a pool's output is fp32 on the machine, not rounded here either). Per layer: (dW, db,
    h, dy, fh, fdy) with h^T dy = dW as matrices (a conv: its patches and G; the embedding:
    the one-hot rows and dE) and the masks of the elements of h and dy that the machine may
    round the other way (_rf)."""
    F = torch.nn.functional
    B = len(xb)
    Ws = [w.detach().numpy() for w, _, _ in net.layers]
    Bs = [None if b is None else b.detach().numpy().astype(np.float64) for _, b, _ in net.layers]
    ids = None
    if net.embed is not None:
        ids = np.asarray(xb).astype(np.int64).reshape(-1)
        Eb = _b64(net.embed.detach().numpy())
        h = Eb[ids].reshape(B, -1, Eb.shape[1]).transpose(0, 2, 1)[:, :, None, :]
        if not net.stages:
            h = Eb[ids].reshape(B, -1)
    elif net.stages:
        x = np.asarray(xb)
        h = _b64(x if x.ndim == 4 else x[:, :, None, :])
    fh = np.zeros(np.shape(h), dtype=bool) if (net.stages or ids is not None) else None
    st = []
    for c in net.stages:
        t, l, bo, r = c["pads"]
        hp = np.pad(h, ((0, 0), (0, 0), (t, bo), (l, r)))
        fhp = np.pad(fh.astype(np.float64), ((0, 0), (0, 0), (t, bo), (l, r)))
        W4 = _b64(net._w4(c).detach().numpy())
        kh, kw = W4.shape[2], W4.shape[3]
        sh, sw = c["stride"]
        pat = F.unfold(torch.tensor(hp), (kh, kw), stride=(sh, sw)).transpose(1, 2).numpy()  # B, P, K
        fpat = F.unfold(torch.tensor(fhp), (kh, kw), stride=(sh, sw)).transpose(1, 2).numpy() > 0
        Wc = W4.reshape(W4.shape[0], -1)
        z = pat @ Wc.T
        if c["b"] is not None:
            z = z + c["b"].detach().numpy().astype(np.float64)
        Ho, Wo = (hp.shape[2] - kh) // sh + 1, (hp.shape[3] - kw) // sw + 1
        C = Wc.shape[0]
        z = z.transpose(0, 2, 1).reshape(B, C, Ho, Wo)
        if c["relu_before"]:
            z = np.maximum(z, 0)
        ph, pw = c["pool"]
        zc = z[:, :, :Ho // ph * ph, :Wo // pw * pw].reshape(B, C, Ho // ph, ph, Wo // pw, pw)
        m = zc.max(axis=(3, 5))
        pooled = np.maximum(m, 0) if c["relu_after"] else m
        st.append(dict(pat=pat, fpat=fpat, W4=W4, z=z, zc=zc, Ho=Ho, Wo=Wo, C=C, hp_shape=hp.shape))
        h, fh = _rf(pooled)
    if net.stages or ids is not None:
        hs, fhs = [h.reshape(B, -1)], [fh.reshape(B, -1)]
    else:
        hs = [_b64(np.asarray(xb).reshape(B, -1))]
        fhs = [np.zeros(hs[0].shape, dtype=bool)]
    zs = []
    for l, (w, b, relu) in enumerate(net.layers):
        z = hs[l] @ _b64(Ws[l])
        if Bs[l] is not None:
            z = z + Bs[l]
        zs.append(z)
        if l + 1 < len(net.layers):
            hh, ff = _rf(np.maximum(z, 0) if relu else z)
            hs.append(hh)
            fhs.append(ff)
    z = zs[-1]
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    dy, fdy = _rf((p - np.eye(p.shape[1])[yb]) / B)
    out = [None] * len(net.layers)
    dp = None
    for l in range(len(net.layers) - 1, -1, -1):
        out[l] = (hs[l].T @ dy, dy.sum(axis=0) if Bs[l] is not None else None, hs[l], dy, fhs[l], fdy)
        dx = dy @ _b64(Ws[l]).T
        if l:
            if net.layers[l - 1][2]:
                dx = dx * (hs[l] > 0)
            dy, fdy = _rf(dx)
        else:
            dp = dx  # fp32 on the machine: kept exact here
    conv_out = []
    if ids is not None and not net.stages:
        Dm = net.embed.shape[1]
        dE, fdE = _rf(dp.reshape(-1, Dm))
        oh = np.zeros((len(ids), net.embed.shape[0]))
        oh[np.arange(len(ids)), ids] = 1.0
        conv_out.insert(0, (oh.T @ dE, None, oh, dE, np.zeros(oh.shape, dtype=bool), fdE))
    for si in range(len(net.stages) - 1, -1, -1):
        c, s = net.stages[si], st[si]
        C, Ho, Wo, zc = s["C"], s["Ho"], s["Wo"], s["zc"]
        ph, pw = c["pool"]
        if c["relu_after"]:  # the mask of the pooled value (> 0 exactly where its bf16 is)
            dp = dp.reshape(B, C, Ho // ph, Wo // pw) * (zc.max(axis=(3, 5)) > 0)
        dp = dp.reshape(B, C, Ho // ph, Wo // pw)
        # the first maximum of each window (scanned row by row) takes the gradient
        flat = zc.transpose(0, 1, 2, 4, 3, 5).reshape(B, C, Ho // ph, Wo // pw, ph * pw)
        first = flat.argmax(axis=4)
        sel = np.zeros_like(flat)
        np.put_along_axis(sel, first[..., None], 1.0, axis=4)
        g, fg = _rf(dp[..., None] * sel)
        if c["relu_before"]:
            g = g * (flat > 0)
            fg = fg & (flat > 0)
        G = np.zeros((B, C, Ho, Wo))
        G[:, :, :Ho // ph * ph, :Wo // pw * pw] = g.reshape(B, C, Ho // ph, Wo // pw, ph, pw) \
            .transpose(0, 1, 2, 4, 3, 5).reshape(B, C, Ho // ph * ph, Wo // pw * pw)
        FG = np.zeros((B, C, Ho, Wo), dtype=bool)
        FG[:, :, :Ho // ph * ph, :Wo // pw * pw] = fg.reshape(B, C, Ho // ph, Wo // pw, ph, pw) \
            .transpose(0, 1, 2, 4, 3, 5).reshape(B, C, Ho // ph * ph, Wo // pw * pw)
        pat = s["pat"]
        Gf = G.reshape(B, C, -1).transpose(0, 2, 1).reshape(-1, C)
        FGf = FG.reshape(B, C, -1).transpose(0, 2, 1).reshape(-1, C)
        Pf = pat.reshape(-1, pat.shape[2])
        FPf = s["fpat"].reshape(-1, pat.shape[2])
        dwc = (Pf.T @ Gf).T.reshape(c["w"].shape)
        conv_out.insert(0, (dwc, Gf.sum(axis=0) if c["b"] is not None else None, Pf, Gf, FPf, FGf))
        if si == 0 and net.embed is None:
            break
        t, l_, bo, r = c["pads"]
        Hp, Wp = s["hp_shape"][2], s["hp_shape"][3]
        dxa = _convT(G, s["W4"], c["stride"], Hp, Wp)
        dp = dxa[:, :, t:Hp - bo, l_:Wp - r]
        if si > 0:
            continue
        dE, fdE = _rf(dp[:, :, 0, :].transpose(0, 2, 1).reshape(-1, dp.shape[1]))
        oh = np.zeros((len(ids), net.embed.shape[0]))
        oh[np.arange(len(ids)), ids] = 1.0
        conv_out.insert(0, (oh.T @ dE, None, oh, dE, np.zeros(oh.shape, dtype=bool), fdE))
    return conv_out + out


def train_curves(onnx_path, x, y, xv, yv, batch, epochs, steps, optimizer, lr, momentum, seed,
                 logits=False):
    """PyTorch fp32 on the data and batch order tpu-train uses: one row per epoch
    (epoch, loss, accuracy, val_loss, val_accuracy), loss averaged over the epoch's steps as
    Keras (and tpu-train) print it."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = Net(onnx_path, logits)
    opt = (torch.optim.Adam(net.params, lr=lr) if optimizer == "adam"
           else torch.optim.SGD(net.params, lr=lr, momentum=momentum))
    n = len(x)
    xf = torch.tensor(x.reshape(n, -1) if net.flat_input else x)
    yt = torch.tensor(y.astype(np.int64))
    rows = []
    import time
    for ep, perm in enumerate(epoch_orders(n, seed, epochs), 1):
        lsum, correct = 0.0, 0
        t0 = time.perf_counter()
        for s in range(steps):
            idx = torch.tensor(perm[s * batch:(s + 1) * batch])
            z = net.logits(xf[idx])
            loss = torch.nn.functional.cross_entropy(z, yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            lsum += float(loss)
            correct += int((z.argmax(1) == yt[idx]).sum())
        secs = time.perf_counter() - t0
        vl, va = float("nan"), float("nan")
        if xv is not None:
            with torch.no_grad():
                zv = net.logits(torch.tensor(xv.reshape(len(xv), -1) if net.flat_input else xv))
                vl = float(torch.nn.functional.cross_entropy(zv, torch.tensor(yv.astype(np.int64))))
                va = float((zv.argmax(1).numpy() == yv).mean())
        rows.append((ep, lsum / steps, correct / (steps * batch), vl, va, secs))
    return rows


class GraphNet:
    """The DAG form of Net for tpu-train's residual models (ResNet's shape): Conv stages (Conv
    [Relu] [MaxPool, any stride and padding] [Relu]) whose outputs several stages read, residual
    Adds of a stage's raw conv output and another stage's output (then Relu), a
    GlobalAveragePool or Flatten, then Gemm/MatMul [+ Relu] layers and an optional Softmax.

    plist follows tpu-train's layer order (compiler/src/train.c conv_graph: the Conv stages in
    the graph's order, sorted so that a stage comes after the stage it reads and its residual's,
    the lowest-numbered ready stage first; then the dense layers)."""

    def __init__(self, path, logits=False):
        m = onnx.load(path)
        self.init = {t.name: numpy_helper.to_array(t).astype(np.float32) for t in m.graph.initializer}
        # Identity of an initializer (torch's export shares equal folded biases that way): the
        # initializer itself; every Conv/Gemm gets its own copy under its own name, trained
        # apart as tpu-train trains every layer's master apart
        alias = {n.output[0]: n.input[0] for n in m.graph.node if n.op_type == "Identity"}
        self.nodes = [n for n in m.graph.node if not (n.op_type == "Identity" and n.input[0] in self.init)]
        for n in self.nodes:
            for k in range(len(n.input)):
                while n.input[k] in alias and n.input[k] not in self.init:
                    n.input[k] = alias[n.input[k]]
            if n.op_type in ("Conv", "Gemm", "MatMul"):
                for k, tag in ((1, "w"), (2, "b")):
                    if k < len(n.input) and n.input[k] in self.init:
                        self.init[n.name + "/" + tag] = self.init[n.input[k]]
                        n.input[k] = n.name + "/" + tag
        self.input = [i.name for i in m.graph.input if i.name not in self.init][0]
        self.embed = None
        self.flat_input = False
        self.param = {}
        uses = {}
        for n in self.nodes:
            for s in n.input:
                uses.setdefault(s, []).append(n)
        # the stages, as conv_graph forms them
        sout, raw, deps, convs = {}, {}, [], []
        for n in self.nodes:
            if n.op_type == "Conv":
                s = len(convs)
                convs.append(n)
                deps.append([sout[n.input[0]]] if n.input[0] in sout else [])
                cur, plain = n.output[0], True
                while len(uses.get(cur, [])) == 1 and uses[cur][0].op_type in ("Relu", "MaxPool", "AveragePool"):
                    plain = False
                    cur = uses[cur][0].output[0]
                sout[cur] = s
                raw[s] = plain
            elif n.op_type == "Add" and all(i in sout for i in n.input):
                a, b = sout[n.input[0]], sout[n.input[1]]
                cand = [s for s, t in ((a, n.input[0]), (b, n.input[1])) if raw[s] and len(uses[t]) == 1]
                r = max(cand)
                del sout[n.input[0] if r == a else n.input[1]]  # fp32 into the Add, not stored
                deps[r].append(b if r == a else a)
                raw[r] = False
                cur = n.output[0]
                while len(uses.get(cur, [])) == 1 and uses[cur][0].op_type == "Relu":
                    cur = uses[cur][0].output[0]
                sout[cur] = r
        order, done = [], set()
        while len(order) < len(convs):
            s = next(s for s in range(len(convs)) if s not in done and all(d in done for d in deps[s]))
            done.add(s)
            order.append(s)
        self.stored = set(sout)  # the stage outputs, stored as bf16
        self.plist = []
        for s in order:
            n = convs[s]
            w = torch.tensor(self.init[n.input[1]], requires_grad=True)
            b = torch.tensor(self.init[n.input[2]], requires_grad=True) if len(n.input) > 2 else None
            self.param[n.input[1]] = w
            if b is not None:
                self.param[n.input[2]] = b
            self.plist.append((w, b))
        for n in self.nodes:
            if n.op_type in ("Gemm", "MatMul"):
                tb = any(a.name == "transB" and a.i for a in n.attribute)
                w0 = self.init[n.input[1]]
                w = torch.tensor(np.ascontiguousarray(w0.T if tb else w0), requires_grad=True)
                self.param[n.input[1]] = w
                b = None
                if n.op_type == "Gemm" and len(n.input) > 2:
                    b = torch.tensor(self.init[n.input[2]].reshape(-1), requires_grad=True)
                    self.param[n.input[2]] = b
                self.plist.append((w, b))
        self.params = [p for w, b in self.plist for p in (w, b) if p is not None]
        sm = [n for n in self.nodes if n.op_type == "Softmax"]
        self.logits_name = sm[0].input[0] if sm else self.nodes[-1].output[0]

    @staticmethod
    def _att(n):
        return {a.name: a for a in n.attribute}

    def _run(self, x, keep):
        """Forward in fp32; keep: tensor name -> torch tensor (retain_grad on activations)."""
        F = torch.nn.functional
        v = {self.input: torch.as_tensor(x)}
        self.logits_name = None
        for n in self.nodes:
            at = self._att(n)
            ins = [v.get(s) if s in v else self.param.get(s) for s in n.input]
            if n.op_type == "Conv":
                p = list(at["pads"].ints) if "pads" in at else [0, 0, 0, 0]
                st = list(at["strides"].ints) if "strides" in at else [1, 1]
                y = F.conv2d(F.pad(ins[0], (p[1], p[3], p[0], p[2])), ins[1], ins[2] if len(ins) > 2 else None,
                             stride=tuple(st))
            elif n.op_type == "Relu":
                y = torch.relu(ins[0])
            elif n.op_type == "MaxPool":
                k = list(at["kernel_shape"].ints)
                st = list(at["strides"].ints) if "strides" in at else k
                p = list(at["pads"].ints) if "pads" in at else [0, 0, 0, 0]
                y = F.max_pool2d(ins[0], tuple(k), tuple(st), padding=(p[0], p[1]))
            elif n.op_type == "AveragePool":
                y = ins[0]  # 1 x 1, stride 1 (the identity; conv_stage accepts no other)
            elif n.op_type == "Add":
                y = ins[0] + ins[1]
            elif n.op_type == "GlobalAveragePool":
                y = ins[0].mean(dim=(2, 3), keepdim=True)
            elif n.op_type in ("Flatten", "Reshape"):
                y = ins[0].reshape(ins[0].shape[0], -1)
            elif n.op_type == "Gemm":
                w = self.param[n.input[1]]
                y = ins[0] @ w
                if len(n.input) > 2:
                    y = y + self.param[n.input[2]]
            elif n.op_type == "MatMul":
                y = ins[0] @ ins[1]
            elif n.op_type == "Softmax":
                self.logits_name = n.input[0]
                y = torch.softmax(ins[0], dim=-1)
            else:
                raise ValueError(f"GraphNet: {n.op_type} is not supported")
            if y.requires_grad:
                y.retain_grad()
            v[n.output[0]] = y
            keep[n.output[0]] = y
        if self.logits_name is None:
            self.logits_name = self.nodes[-1].output[0]
        return v[self.logits_name]

    def logits(self, x):
        return self._run(x, {})

    def step_grads(self, xb, yb):
        """Gradients, bounds and the loss, as Net.step_grads with its first-order error budget
        (u = 2^-8 per bf16 rounding, n 2^-24 per fp32 chain of n), propagated over the graph:
        forward errors node by node; backward errors in reverse, summed where a tensor has
        several readers (the residual's fan-out). The rules per node are Net.step_grads',
        plus: Add e = e_a + e_b (its gradient and error to both inputs); GlobalAveragePool
        e = mean(e) + (P 2^-24 + u) mean|h| (its gradient D/P on every pixel); a padded or
        overlapping MaxPool routes over every window containing an element (fold of the
        windows). bf16 roundings: the input, the stage outputs (stored), the dense inputs,
        every dZ/dY fed to the MXU and each conv's routed gradient G."""
        F = torch.nn.functional
        u, g24 = 2.0 ** -8, 2.0 ** -24
        B = len(xb)
        for p in self.params:
            p.grad = None
        keep = {}
        z = self._run(np.asarray(xb, dtype=np.float32), keep)
        loss = F.cross_entropy(z, torch.tensor(yb))
        loss.backward()
        npd = lambda t: t.detach().numpy().astype(np.float64)  # noqa: E731
        val = {k: npd(t) for k, t in keep.items()}
        grad = {k: (npd(t.grad) if t.grad is not None else None) for k, t in keep.items()}
        val[self.input] = np.asarray(xb, dtype=np.float64)
        T = lambda a: torch.tensor(a)  # noqa: E731
        # ---- forward errors ----
        e = {self.input: u * np.abs(val[self.input])}
        rd = lambda s: e[s] + (u * np.abs(val[s]) if s in self.stored else 0)  # noqa: E731
        for n in self.nodes:
            at = self._att(n)
            o = n.output[0]
            if n.op_type == "Conv":
                p = list(at["pads"].ints) if "pads" in at else [0, 0, 0, 0]
                st = tuple(at["strides"].ints) if "strides" in at else (1, 1)
                W = np.abs(self.init[n.input[1]].astype(np.float64))
                pad = lambda a: np.pad(a, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))  # noqa: E731
                cw = lambda a: F.conv2d(T(pad(a)), T(W), stride=st).numpy()  # noqa: E731
                e[o] = cw(rd(n.input[0])) + (u + W[0].size * g24) * cw(np.abs(val[n.input[0]]))
            elif n.op_type in ("Relu", "AveragePool", "Flatten", "Reshape"):
                e[o] = e[n.input[0]].reshape(val[o].shape)
            elif n.op_type == "MaxPool":
                k = tuple(at["kernel_shape"].ints)
                st = tuple(at["strides"].ints) if "strides" in at else k
                p = list(at["pads"].ints) if "pads" in at else [0, 0, 0, 0]
                e[o] = F.max_pool2d(T(e[n.input[0]]), k, st, padding=(p[0], p[1])).numpy()
            elif n.op_type == "Add":
                e[o] = rd(n.input[0]) + rd(n.input[1])
            elif n.op_type == "GlobalAveragePool":
                h = val[n.input[0]]
                P = h.shape[2] * h.shape[3]
                e[o] = (rd(n.input[0]).mean(axis=(2, 3), keepdims=True) +
                        (P * g24 + u) * np.abs(h).mean(axis=(2, 3), keepdims=True))
            elif n.op_type in ("Gemm", "MatMul"):
                W = np.abs(npd(self.param[n.input[1]]))
                h = val[n.input[0]]
                e[o] = (e[n.input[0]] + u * np.abs(h)) @ W + (u + W.shape[0] * g24) * (np.abs(h) @ W)
            elif n.op_type == "Softmax":
                e[o] = e[n.input[0]]
        if getattr(self, "debug", False):
            for n in self.nodes:
                o = n.output[0]
                print("fwd", n.op_type, o, "max e", e[o].max(), "max |v|", np.abs(val[o]).max())
        # ---- backward errors: E[t] the error of the gradient at t ----
        zl = val[self.logits_name]
        pr = np.exp(zl - zl.max(axis=1, keepdims=True))
        pr /= pr.sum(axis=1, keepdims=True)
        E = {self.logits_name: 2 * pr * e[self.logits_name].max(axis=1, keepdims=True) / B +
             u * np.abs(grad[self.logits_name])}
        gb = {}
        add = lambda t, a: E.__setitem__(t, E[t] + a if t in E else a)  # noqa: E731
        for n in reversed(self.nodes):
            o = n.output[0]
            if o not in E or n.op_type == "Softmax":
                continue
            at = self._att(n)
            D = np.abs(grad[o])
            Eo = E[o]
            x = n.input[0]
            if n.op_type in ("Gemm", "MatMul"):
                W = np.abs(npd(self.param[n.input[1]]))
                h = np.abs(val[x])
                eh = e[x] + u * h
                ew = eh.T @ D + h.T @ Eo + B * g24 * (h.T @ D)
                eb = Eo.sum(axis=0) + B * g24 * D.sum(axis=0)
                gb[n.input[1]] = 2 * ew + 1e-12
                if len(n.input) > 2 and n.op_type == "Gemm":
                    gb[n.input[2]] = 2 * eb + 1e-12
                if x in grad and grad[x] is not None:
                    add(x, (Eo @ W.T + (u + W.shape[1] * g24) * (D @ W.T) + u * (D @ W.T)).reshape(val[x].shape))
            elif n.op_type in ("Flatten", "Reshape", "AveragePool"):
                add(x, Eo.reshape(val[x].shape))
            elif n.op_type == "Relu":
                zi = val[x]
                # where the mask may flip, the machine passes its own gradient: |D| + its error
                add(x, Eo * (zi > 0) + (D + Eo) * (np.abs(zi) <= np.maximum(e[x], 2 * u * np.abs(zi).max())))
            elif n.op_type == "Add":
                for s in n.input:
                    add(s, Eo)
            elif n.op_type == "GlobalAveragePool":
                h = val[x]
                P = h.shape[2] * h.shape[3]
                add(x, np.broadcast_to(Eo / P, h.shape).copy())
            elif n.op_type == "MaxPool":
                k = tuple(at["kernel_shape"].ints)
                st = tuple(at["strides"].ints) if "strides" in at else k
                p = list(at["pads"].ints) if "pads" in at else [0, 0, 0, 0]
                zi, ei = val[x], e[x]
                Bz, C, H, Wd = zi.shape
                Hp, Wp = H + p[0] + p[2], Wd + p[1] + p[3]
                unf = lambda a, fill: F.unfold(T(np.pad(a, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])), constant_values=fill)),  # noqa: E731
                                               k, stride=st).numpy().reshape(Bz, C, k[0] * k[1], -1)
                Zu, Eu = unf(zi, -np.inf), unf(ei, 0.0)
                m = val[o].reshape(Bz, C, 1, -1)
                em = e[o].reshape(Bz, C, 1, -1)
                Dw = D.reshape(Bz, C, 1, -1)
                Ew = Eo.reshape(Bz, C, 1, -1)
                ismax = Zu == m
                near = (m - Zu) <= 2 * np.maximum(Eu, em)
                contrib = (Ew + u * Dw) * ismax + (Dw + Ew) * (near & ~ismax)
                back = F.fold(T(contrib.reshape(Bz, C * k[0] * k[1], -1)), (Hp, Wp), k, stride=st).numpy()
                add(x, back[:, :, p[0]:p[0] + H, p[1]:p[1] + Wd])
            elif n.op_type == "Conv":
                pp = list(at["pads"].ints) if "pads" in at else [0, 0, 0, 0]
                st = tuple(at["strides"].ints) if "strides" in at else (1, 1)
                W = np.abs(self.init[n.input[1]].astype(np.float64))
                EG = Eo + u * D  # G rounded to bf16
                h = np.abs(val[x])
                pad = lambda a: np.pad(a, ((0, 0), (0, 0), (pp[0], pp[2]), (pp[1], pp[3])))  # noqa: E731
                hp, ehp = pad(h), pad(rd(x))
                wg = lambda a, gg: torch.nn.grad.conv2d_weight(T(a), W.shape, T(gg), stride=st).numpy()  # noqa: E731
                nn_ = Bz = D.shape[0] * D.shape[2] * D.shape[3]
                ew = wg(ehp, D) + wg(hp, EG) + nn_ * g24 * wg(hp, D)
                gb[n.input[1]] = 2 * ew + 1e-12
                if len(n.input) > 2:
                    gb[n.input[2]] = 2 * (EG.sum(axis=(0, 2, 3)) + nn_ * g24 * D.sum(axis=(0, 2, 3))) + 1e-12
                if x != self.input:
                    Kt = W.shape[0] * W.shape[2] * W.shape[3]
                    dxa = _convT(D, W, st, hp.shape[2], hp.shape[3])
                    edx = _convT(EG, W, st, hp.shape[2], hp.shape[3]) + (u + Kt * g24) * dxa
                    add(x, edx[:, :, pp[0]:hp.shape[2] - pp[2], pp[1]:hp.shape[3] - pp[3]])
        grads, bounds = [], []
        name = {id(t): k for k, t in self.param.items()}
        for w, b in self.plist:
            grads.append((npd(w.grad), None if b is None else npd(b.grad)))
            bounds.append((gb[name[id(w)]].reshape(w.shape) if gb[name[id(w)]].size == w.numel() else gb[name[id(w)]],
                           None if b is None else gb[name[id(b)]]))
        return grads, bounds, float(loss)


def emulate_graph(net, xb, yb):
    """emulate_grads for a GraphNet: the step in float64 with the contract's bf16 roundings at
    the machine's points -- the input, every weight (the MXU's bf16 copy), every stage output
    and dense input (stored as bf16), each Gemm's output gradient dY and each conv's output
    gradient G (the MXU reads them as bf16); the residual's and the pools' gradients stay
    unrounded (fp32 on the machine) -- by autograd through rounding nodes. Returns per layer
    (dW, db, h, g, fh, fg, conv) in plist's order: h the layer's (rounded) input, g its rounded
    output gradient, fh/fg the masks of elements the machine may round the other way (_rf),
    conv (stride, pads, ties) or None: dW = h^T g (a conv: conv2d_weight of the padded h and g);
    ties: per output channel, the pooled gradient of the windows with a near-tie maximum."""
    rec = {}

    class RoundF(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return torch.tensor(_b64(a.numpy()))

        @staticmethod
        def backward(ctx, g):
            return g

    class RoundB(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, key):
            ctx.key = key
            return a.clone()

        @staticmethod
        def backward(ctx, g):
            # the gradient at a stage output is the fp32 sum of its readers' gradients (a
            # residual's fan-out), each the end of fp32 chains through every layer above, and
            # the sums may cancel: the machine's value is only taken to be within 2^-8 of this
            # one relative to it (not FLIP; 2^-10 is not enough for ResNet-18's first layers)
            a = g.numpy()
            r = _b64(a)
            f = bf16(a * (1 - 2.0 ** -8)) != bf16(a * (1 + 2.0 ** -8))
            rec[ctx.key] = (r, f)
            return torch.tensor(r), None

    F = torch.nn.functional
    P64 = {k: torch.tensor(_b64(p.detach().numpy()) if p.dim() > 1 else p.detach().numpy().astype(np.float64),
                           requires_grad=True) for k, p in net.param.items()}
    v = {net.input: RoundF.apply(torch.tensor(np.asarray(xb, dtype=np.float64)))}
    flip = {net.input: np.zeros(np.shape(xb), dtype=bool)}
    conv_of, conv_out, tie = {}, {}, {}
    for n in net.nodes:
        at = net._att(n)
        x = v.get(n.input[0])
        if n.op_type == "Conv":
            p = list(at["pads"].ints) if "pads" in at else [0, 0, 0, 0]
            st = tuple(at["strides"].ints) if "strides" in at else (1, 1)
            y = F.conv2d(F.pad(x, (p[1], p[3], p[0], p[2])), P64[n.input[1]],
                         P64[n.input[2]] if len(n.input) > 2 else None, stride=st)
            y = RoundB.apply(y, n.output[0])
            conv_of[n.input[1]] = (n.input[0], n.output[0], st, p)
            conv_out[n.output[0]] = n.output[0]
        elif n.op_type == "Relu":
            y = torch.relu(x)
        elif n.op_type == "MaxPool":
            k = tuple(at["kernel_shape"].ints)
            st = tuple(at["strides"].ints) if "strides" in at else k
            p = list(at["pads"].ints) if "pads" in at else [0, 0, 0, 0]
            y = F.max_pool2d(x, k, st, padding=(p[0], p[1]))
            # windows whose two largest values are within the fp32 chain's error (2^-16 of
            # the maximum: K 2^-24 for K <= 256 terms): the machine may route to the other
            xd = F.pad(x.detach(), (p[1], p[3], p[0], p[2]), value=-np.inf)
            top = F.unfold(xd, k, stride=st).reshape(x.shape[0], x.shape[1], k[0] * k[1], -1).topk(2, dim=2).values
            near = ((top[:, :, 0] - top[:, :, 1]) <= 2.0 ** -12 * top[:, :, 0].abs()) & (top[:, :, 0] > 0)
            src = n.input[0]
            while src not in conv_out:
                src = next(m.input[0] for m in net.nodes if m.output[0] == src)
            y.register_hook(lambda g, near=near.numpy(), c=conv_out[src]:
                            tie.__setitem__(c, (np.abs(g.numpy()).reshape(near.shape) * near).sum(axis=(0, 2))))
        elif n.op_type == "AveragePool":
            y = x
        elif n.op_type == "Add":
            y = x + v[n.input[1]]
        elif n.op_type == "GlobalAveragePool":
            y = x.mean(dim=(2, 3), keepdim=True)
        elif n.op_type in ("Flatten", "Reshape"):
            y = x.reshape(x.shape[0], -1)
        elif n.op_type in ("Gemm", "MatMul"):
            y = x @ P64[n.input[1]]
            if n.op_type == "Gemm" and len(n.input) > 2:
                y = y + P64[n.input[2]]
            y = RoundB.apply(y, n.output[0])
            conv_of[n.input[1]] = (n.input[0], n.output[0], None, None)
        elif n.op_type == "Softmax":
            break
        stored = n.output[0] in net.stored or n.op_type in ("Flatten", "Reshape") or (
            n.op_type == "Relu" and n.input[0] in v and any(
                m.output[0] == n.input[0] and m.op_type in ("Gemm", "MatMul") for m in net.nodes))
        if stored:
            flip[n.output[0]] = _rf(y.detach().numpy())[1]
            y = RoundF.apply(y)
        v[n.output[0]] = y
    z = v[net.logits_name]
    loss = F.cross_entropy(z, torch.tensor(np.asarray(yb)), reduction="sum") / len(xb)
    loss.backward()
    name = {id(t): k for k, t in net.param.items()}
    out = []
    for w, b in net.plist:
        kw = name[id(w)]
        hin, yout, st, p = conv_of[kw]
        g, fg = rec[yout]
        h = v[hin].detach().numpy()
        fh = flip.get(hin, np.zeros(h.shape, dtype=bool))
        out.append((P64[kw].grad.numpy(), None if b is None else P64[name[id(b)]].grad.numpy(),
                    h, g, fh, fg, None if st is None else (st, p, tie.get(yout))))
    return out


def emulate_graph_check(net, emu, grads_dir, mutate="none"):
    """Ours against emulate_graph, per element: the fp32 chain (n 2^-24 of |h|^T|g|, n its
    terms), one bf16 ulp (2^-7) of every term whose h or g the machine may round the other way,
    2^-8 of the largest single term, and for a pooled conv 2 max|h| times the pooled gradient
    of its windows with a near-tie maximum (routed to the other element). Returns the number
    of elements outside."""
    F = torch.nn.functional
    fails = 0
    for l, (ew, eb, h, g, fh, fg, cv) in enumerate(emu):
        ah, ag = np.abs(h), np.abs(g)
        if cv is None:
            n = h.shape[0]
            mag = ah.T @ ag
            flipw = ah.T @ (ag * fg) + (ah * fh).T @ ag
            big = ah.max(axis=0)[:, None] * ag.max(axis=0)[None, :]
        else:
            st, p, ties = cv
            pad = lambda a: np.pad(a.astype(np.float64), ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))  # noqa: E731
            wg = lambda a, gg: torch.nn.grad.conv2d_weight(torch.tensor(pad(a)), ew.shape, torch.tensor(gg), stride=st).numpy()  # noqa: E731
            n = g.shape[0] * g.shape[2] * g.shape[3]
            mag = wg(ah, ag)
            flipw = wg(ah, ag * fg) + wg(ah * fh, ag)
            big = ah.max() * ag.max(axis=(0, 2, 3))[:, None, None, None] * np.ones_like(mag)
            if ties is not None:  # a near-tie routed elsewhere moves |D| from one input to another
                big = big + 2 ** 9 * ah.max() * ties[:, None, None, None]
        mb = ag.sum(axis=0) if cv is None else ag.sum(axis=(0, 2, 3))
        fb = (ag * fg).sum(axis=0) if cv is None else (ag * fg).sum(axis=(0, 2, 3))
        bigb = ag.max(axis=0) if cv is None else ag.max(axis=(0, 2, 3))
        for kind, ref, bnd in (("w", ew, n * 2.0 ** -24 * mag + 2.0 ** -7 * flipw + 2.0 ** -8 * big),
                               ("b", eb, n * 2.0 ** -24 * mb + 2.0 ** -7 * fb + 2.0 ** -8 * bigb)):
            if ref is None:
                continue
            ours = np.load(f"{grads_dir}/grad{l}_{kind}.npy").astype(np.float64).reshape(ref.shape)
            if mutate == "sign":
                ours = -ours
            r = np.abs(ours - ref) / (bnd.reshape(ref.shape) + 1e-30)
            fails += int((r > 1).sum())
            print(f"layer {l} d{kind} vs the bf16 emulation: max |diff| {np.abs(ours - ref).max():.3g}, "
                  f"max |diff|/bound {r.max():.2e}")
    return fails
