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


class Net:
    """The model tpu-train trains, as fp32 parameters: an optional first Conv (stride 1, pads)
    with ReLU and a k x k / stride k MaxPool, then a chain of Gemm/MatMul(+Add) [+ Relu]."""

    def __init__(self, path, logits=False):
        m = onnx.load(path)
        init = {t.name: numpy_helper.to_array(t).astype(np.float32) for t in m.graph.initializer}
        self.layers = []  # [W k x o, b or None, relu]
        self.conv = None  # dict(w, b, pads, pk, relu_before, relu_after)
        nodes = list(m.graph.node)
        for i, n in enumerate(nodes):
            if n.op_type == "Conv":
                att = {a.name: a for a in n.attribute}
                pads = list(att["pads"].ints) if "pads" in att else [0, 0, 0, 0]
                b = init.get(n.input[2]) if len(n.input) > 2 else None
                self.conv = dict(w=torch.tensor(init[n.input[1]], requires_grad=True),
                                 b=None if b is None else torch.tensor(b, requires_grad=True),
                                 pads=pads, pk=1, relu_before=False, relu_after=False)
            elif n.op_type == "MaxPool":
                att = {a.name: a for a in n.attribute}
                self.conv["pk"] = int(att["kernel_shape"].ints[0])
            elif n.op_type == "Relu" and not self.layers:
                self.conv["relu_after" if self.conv["pk"] > 1 else "relu_before"] = True
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
        self.params = [p for w, b, _ in self.layers for p in (w, b) if p is not None]
        if self.conv:
            self.params = [p for p in (self.conv["w"], self.conv["b"]) if p is not None] + self.params

    def features(self, x):
        """The input of the first Gemm: the conv, pool and ReLU, flattened (NCHW order)."""
        c = self.conv
        if not c:
            return x.reshape(x.shape[0], -1)
        t, l, bo, r = c["pads"]
        h = torch.nn.functional.conv2d(torch.nn.functional.pad(x, (l, r, t, bo)), c["w"], c["b"])
        if c["relu_before"]:
            h = torch.relu(h)
        if c["pk"] > 1:
            h = torch.nn.functional.max_pool2d(h, c["pk"])
        if c["relu_after"]:
            h = torch.relu(h)
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
          inputs         e_h0 = u|x|
          z = h W + b    e_z = e_h |W| + (u + g_k) |h||W|          (W and h rounded to bf16)
          h' = relu(z)   e_h' = e_z + u|h'|                       (stored as bf16)
          p = softmax(z) e_p = 2 p max(e_z)
          dz = (p - y)/B e_dz = e_p / B + u|dz|                   (bf16 for the MXU)
          dx = dz W^T    e_dx = e_dz |W|^T + (u + g_o) |dz||W|^T
          dy = dx [z>0]  e_dy = (e_dx + u|dx|) [z>0] + |dx| [|z| <= e_z]  (the mask may flip)
          dW = h^T dy    e_dW = e_h^T |dy| + |h|^T e_dy + g_b |h|^T |dy|
        and the bound is 2 e_dW (db: the same with h = 1)."""
        x = torch.tensor(xb)
        for p in self.params:
            p.grad = None
        acts, douts = [], []
        h = self.features(x)
        if self.conv:
            h.retain_grad()
            feat = h
        for w, b, relu in self.layers:
            acts.append(h)
            z = h @ w
            if b is not None:
                z = z + b
            z.retain_grad()
            douts.append(z)
            h = torch.relu(z) if relu else z
        loss = torch.nn.functional.cross_entropy(h, torch.tensor(yb))
        loss.backward()
        u = 2.0 ** -8
        B = xb.shape[0]
        Ws = [np.abs(w.detach().numpy().astype(np.float64)) for w, _, _ in self.layers]
        H = [np.abs(a.detach().numpy().astype(np.float64)) for a in acts]
        Z = [z.detach().numpy().astype(np.float64) for z in douts]
        eh = [u * H[0]]
        ez = []
        for l, (w, b, relu) in enumerate(self.layers):
            k = Ws[l].shape[0]
            ez.append(eh[l] @ Ws[l] + (u + k * 2.0 ** -24) * (H[l] @ Ws[l]))
            if l + 1 < len(self.layers):
                eh.append(ez[l] + u * H[l + 1])
        if self.conv:
            eh[0] = self._conv_feature_error(x, u)
            for l in range(len(self.layers)):
                k = Ws[l].shape[0]
                ez[l] = eh[l] @ Ws[l] + (u + k * 2.0 ** -24) * (H[l] @ Ws[l])
                if l + 1 < len(self.layers):
                    eh[l + 1] = ez[l] + u * H[l + 1]
        zl = Z[-1]
        pr = np.exp(zl - zl.max(axis=1, keepdims=True))
        pr /= pr.sum(axis=1, keepdims=True)
        dz = np.abs(douts[-1].grad.numpy().astype(np.float64))
        edy = 2 * pr * ez[-1].max(axis=1, keepdims=True) / B + u * dz
        grads, bounds = [None] * len(self.layers), [None] * len(self.layers)
        for l in range(len(self.layers) - 1, -1, -1):
            w, b, _ = self.layers[l]
            D = np.abs(douts[l].grad.numpy().astype(np.float64))
            ew = eh[l].T @ D + H[l].T @ edy + B * 2.0 ** -24 * (H[l].T @ D)
            eb = edy.sum(axis=0) + B * 2.0 ** -24 * D.sum(axis=0)
            grads[l] = (w.grad.numpy().astype(np.float64),
                        None if b is None else b.grad.numpy().astype(np.float64))
            bounds[l] = (2 * ew + 1e-12, 2 * eb + 1e-12)
            if l == 0 and self.conv:
                o = Ws[0].shape[1]
                dx = D @ Ws[0].T
                edx = edy @ Ws[0].T + (u + o * 2.0 ** -24) * dx
                cw, cb = self._conv_bounds(x, feat, edx, eh[0], u)
                grads.insert(0, (self.conv["w"].grad.numpy().astype(np.float64),
                                 None if self.conv["b"] is None else self.conv["b"].grad.numpy().astype(np.float64)))
                bounds.insert(0, (cw, cb))
            if l:
                o = Ws[l].shape[1]
                dx = D @ Ws[l].T
                edx = edy @ Ws[l].T + (u + o * 2.0 ** -24) * dx
                zp = Z[l - 1]
                mask = (zp > 0) if self.layers[l - 1][2] else np.ones_like(zp, dtype=bool)
                flip = (np.abs(zp) <= ez[l - 1]) if self.layers[l - 1][2] else np.zeros_like(mask)
                edy = (edx + u * dx) * mask + dx * flip
        return grads, bounds, float(loss)

    def _conv_parts(self, x):
        """float64 numpy: the padded input's patches [B, P, K] (K in the weight's (ci, kh, kw)
        order), the conv output z [B, C, Ho, Wo] and the window maxima positions."""
        c = self.conv
        t, l, bo, r = c["pads"]
        xp = torch.nn.functional.pad(x, (l, r, t, bo)).double()
        kh, kw = c["w"].shape[2], c["w"].shape[3]
        pat = torch.nn.functional.unfold(xp, (kh, kw)).transpose(1, 2).numpy()  # B, P, K
        z = torch.nn.functional.conv2d(xp, c["w"].detach().double(),
                                       None if c["b"] is None else c["b"].detach().double()).numpy()
        return pat, z

    def _conv_feature_error(self, x, u):
        """e_h of the first Gemm's input: the conv's error (patches and weights rounded to
        bf16, the fp32 chain), through ReLU and the pool (a maximum moves by at most the
        largest error of its window), then the bf16 rounding of the stored activation."""
        c = self.conv
        pat, z = self._conv_parts(x)
        W = np.abs(c["w"].detach().numpy().astype(np.float64)).reshape(z.shape[1], -1)  # C, K
        K = W.shape[1]
        ez = (2 * u + K * 2.0 ** -24) * (np.abs(pat) @ W.T)  # B, P, C
        B, C, Ho, Wo = z.shape
        ez = ez.transpose(0, 2, 1).reshape(B, C, Ho, Wo)
        k = c["pk"]
        if k > 1:
            ez = ez[:, :, :Ho // k * k, :Wo // k * k].reshape(B, C, Ho // k, k, Wo // k, k).max(axis=(3, 5))
        f = np.abs(self.features(x).detach().numpy().astype(np.float64)).reshape(B, C, -1)
        self._ez_conv = ez
        return (ez + u * f.reshape(ez.shape)).reshape(B, -1)

    def _conv_bounds(self, x, feat, edx, eh_feat, u):
        """Bounds of the conv's dW and db: the gradient at the pooled output carries e_dx (and
        flips of the ReLU after the pool where |pooled| <= its error); routed to the window's
        maximum, a window whose other elements come within twice the error of the maximum may
        route it elsewhere (|dP| counted on every such element); the routed gradient is
        rounded to bf16 (u), the patches too; fp32 chains over B*P terms."""
        c = self.conv
        pat, z = self._conv_parts(x)
        B, C, Ho, Wo = z.shape
        k = c["pk"]
        D = np.abs(feat.grad.numpy().astype(np.float64)).reshape(B, C, Ho // k, Wo // k)
        E = edx.reshape(B, C, Ho // k, Wo // k)
        zz = np.maximum(z, 0) if c["relu_before"] else z
        zc = zz[:, :, :Ho // k * k, :Wo // k * k].reshape(B, C, Ho // k, k, Wo // k, k)
        m = zc.max(axis=(3, 5))
        ezp = self._ez_conv
        if c["relu_after"]:
            E = E + D * (np.abs(m) <= ezp)
        near = (m[:, :, :, None, :, None] - zc) <= 2 * ezp[:, :, :, None, :, None]
        G = np.zeros_like(z)
        EG = np.zeros_like(z)
        ismax = zc == m[:, :, :, None, :, None]
        g_up = (D[:, :, :, None, :, None] * ismax).reshape(B, C, Ho // k * k, Wo // k * k)
        e_up = ((E + u * D)[:, :, :, None, :, None] * ismax + D[:, :, :, None, :, None] * near * ~ismax)
        G[:, :, :Ho // k * k, :Wo // k * k] = g_up
        EG[:, :, :Ho // k * k, :Wo // k * k] = e_up.reshape(B, C, Ho // k * k, Wo // k * k)
        if c["relu_before"]:
            EG = EG + np.abs(G) * (np.abs(z) <= 2 * u * np.abs(z).max())
        Gf = G.reshape(B, C, -1).transpose(0, 2, 1)  # B, P, C
        EGf = EG.reshape(B, C, -1).transpose(0, 2, 1)
        Pa = np.abs(pat)
        n = Pa.shape[0] * Pa.shape[1]
        ew = np.einsum("bpk,bpc->ck", Pa, EGf) + np.einsum("bpk,bpc->ck", u * Pa, np.abs(Gf)) \
            + n * 2.0 ** -24 * np.einsum("bpk,bpc->ck", Pa, np.abs(Gf))
        eb = EGf.sum(axis=(0, 1)) + n * 2.0 ** -24 * np.abs(Gf).sum(axis=(0, 1))
        return 2 * ew.reshape(c["w"].shape) + 1e-12, 2 * eb + 1e-12


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


def emulate_grads(net, xb, yb):
    """The step's gradients as the machine computes them (docs/training.md): the contract's
    bf16 roundings at the same points (the input, the MXU weights, the hidden activations,
    dZ and each dY), with the sums in float64 instead of the MXU's fp32 chain."""
    B = xb.shape[0]
    Ws = [w.detach().numpy() for w, _, _ in net.layers]
    Bs = [None if b is None else b.detach().numpy().astype(np.float64) for _, b, _ in net.layers]
    c = net.conv
    if c:
        t, l, bo, r = c["pads"]
        xp = torch.nn.functional.pad(torch.tensor(bf16(xb).astype(np.float64)), (l, r, t, bo))
        kh, kw = c["w"].shape[2], c["w"].shape[3]
        pat = torch.nn.functional.unfold(xp, (kh, kw)).transpose(1, 2).numpy()  # B, P, K
        Wc = bf16(c["w"].detach().numpy()).astype(np.float64).reshape(c["w"].shape[0], -1)
        z = pat @ Wc.T  # B, P, C
        if c["b"] is not None:
            z = z + c["b"].detach().numpy().astype(np.float64)
        Ho, Wo = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
        C = Wc.shape[0]
        z = z.transpose(0, 2, 1).reshape(B, C, Ho, Wo)
        if c["relu_before"]:
            z = np.maximum(z, 0)
        k = c["pk"]
        zc = z[:, :, :Ho // k * k, :Wo // k * k].reshape(B, C, Ho // k, k, Wo // k, k)
        m = zc.max(axis=(3, 5))
        pooled = np.maximum(m, 0) if c["relu_after"] else m
        hs, zs = [bf16(pooled.reshape(B, -1)).astype(np.float64)], []
    else:
        hs, zs = [bf16(xb).astype(np.float64)], []
    for l, (w, b, relu) in enumerate(net.layers):
        z = hs[l] @ bf16(Ws[l]).astype(np.float64)
        if Bs[l] is not None:
            z = z + Bs[l]
        zs.append(z)
        if l + 1 < len(net.layers):
            hs.append(bf16(np.maximum(z, 0) if relu else z).astype(np.float64))
    z = zs[-1]
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    dy = bf16((p - np.eye(p.shape[1])[yb]) / B).astype(np.float64)
    out = [None] * len(net.layers)
    for l in range(len(net.layers) - 1, -1, -1):
        out[l] = (hs[l].T @ dy, dy.sum(axis=0) if Bs[l] is not None else None, hs[l], dy)
        if l == 0 and c:
            dp = dy @ bf16(Ws[0]).astype(np.float64).T  # fp32 on the machine: kept exact here
            if c["relu_after"]:
                dp = dp * (hs[0] > 0)
            dp = dp.reshape(B, C, Ho // k, Wo // k)
            # the first maximum of each window (scanned row by row) takes the gradient
            flat = zc.transpose(0, 1, 2, 4, 3, 5).reshape(B, C, Ho // k, Wo // k, k * k)
            first = flat.argmax(axis=4)
            sel = np.zeros_like(flat)
            np.put_along_axis(sel, first[..., None], 1.0, axis=4)
            g = bf16(dp[..., None] * sel).astype(np.float64)
            if c["relu_before"]:
                g = g * (flat > 0)
            G = np.zeros((B, C, Ho, Wo))
            G[:, :, :Ho // k * k, :Wo // k * k] = g.reshape(B, C, Ho // k, Wo // k, k, k) \
                .transpose(0, 1, 2, 4, 3, 5).reshape(B, C, Ho // k * k, Wo // k * k)
            Gf = G.reshape(B, C, -1).transpose(0, 2, 1).reshape(-1, C)
            Pf = pat.reshape(-1, pat.shape[2])
            dwc = (Pf.T @ Gf).T.reshape(c["w"].shape)
            out.insert(0, (dwc, Gf.sum(axis=0) if c["b"] is not None else None, Pf, Gf))
        if l:
            dx = dy @ bf16(Ws[l]).astype(np.float64).T
            if net.layers[l - 1][2]:
                dx = dx * (hs[l] > 0)
            dy = bf16(dx).astype(np.float64)
    return out


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
    xf = torch.tensor(x if net.conv else x.reshape(n, -1))
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
                zv = net.logits(torch.tensor(xv if net.conv else xv.reshape(len(xv), -1)))
                vl = float(torch.nn.functional.cross_entropy(zv, torch.tensor(yv.astype(np.int64))))
                va = float((zv.argmax(1).numpy() == yv).mean())
        rows.append((ep, lsum / steps, correct / (steps * batch), vl, va, secs))
    return rows
