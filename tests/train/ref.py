# SPDX-License-Identifier: Apache-2.0
"""PyTorch fp32 reference of one training step of tpu-train (docs/training.md), to check the
machine's gradients: the same ONNX initial weights, the same first batch (tpu-train's
splitmix64 Fisher-Yates order), cross-entropy averaged over the global batch.

usage: ref.py MODEL.onnx X.npy Y.npy --batch B --seed S --grads DIR [--logits] [--mutate M]
  compares DIR/grad<l>_{w,b}.npy (tpu-train --grads-dir) with PyTorch's gradients element by
  element against the bound of docs/training.md; exit 0 within, 1 outside (the worst element
  printed), 2 usage. --mutate transposes/negates ours first (the test must then fail).
"""
import argparse
import os
import sys

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models"))
import trainref  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onnx")
    ap.add_argument("x")
    ap.add_argument("y")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--grads", required=True)
    ap.add_argument("--logits", action="store_true")
    ap.add_argument("--mutate", choices=["none", "batch", "sign"], default="none")
    ap.add_argument("--opt", choices=["sgd", "adam"], help="also check the weights after the step (DIR/w<l>.npy)")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.0)
    ap.add_argument("--graph", action="store_true",
                    help="a residual model (trainref.GraphNet: its bound and its bf16 emulation, emulate_graph)")
    a = ap.parse_args()
    x = np.load(a.x).astype(np.float32)
    y = np.load(a.y).astype(np.int64)
    net = (trainref.GraphNet if a.graph else trainref.Net)(a.onnx, a.logits)
    perm = trainref.epoch_orders(len(x), a.seed, 1)[0]
    idx = perm[: a.batch]
    if a.mutate == "batch":  # the gradient of another batch: must not pass
        idx = perm[a.batch: 2 * a.batch] if len(perm) >= 2 * a.batch else perm[::-1][: a.batch]
    xb = x[idx].reshape(a.batch, -1) if net.flat_input else x[idx]
    grads, bounds, loss = net.step_grads(xb, y[idx])
    worst = (0.0, None)
    fails = 0
    for l, (gw, gb) in enumerate(grads):
        for kind, ref, bnd in (("w", gw, bounds[l][0]), ("b", gb, bounds[l][1])):
            if ref is None:
                continue
            ours = np.load(os.path.join(a.grads, f"grad{l}_{kind}.npy")).astype(np.float64)
            if a.mutate == "sign":
                ours = -ours
            if ours.size == ref.size:
                ours = ours.reshape(ref.shape)
            if ours.shape != ref.shape:
                print(f"layer {l} {kind}: shape {ours.shape}, expected {ref.shape}")
                return 1
            err = np.abs(ours - ref)
            ratio = err / bnd
            k = np.unravel_index(np.argmax(ratio), ratio.shape)
            if ratio[k] > worst[0]:
                worst = (float(ratio[k]), f"layer {l} d{kind}{list(k)}: ours {ours[k]:.6g}, "
                         f"PyTorch {ref[k]:.6g}, |diff| {err[k]:.3g}, bound {bnd[k]:.3g}")
            fails += int((ratio > 1).sum())
            print(f"layer {l} d{kind}: max |diff| {err.max():.3g}, max |diff|/bound {ratio.max():.3f}")
    # the contract's roundings emulated (float64 sums): ours must agree to the fp32 chain's
    # rounding, 2^-20 of |h|^T|dy|, plus one bf16 ulp (2^-7) of every term whose h or dy the
    # machine may round the other way (fp32 where the emulation has float64: within
    # trainref.FLIP of a rounding midpoint), plus 2^-8 of the largest single term
    if a.graph:
        efail = trainref.emulate_graph_check(net, trainref.emulate_graph(net, xb, y[idx]), a.grads, a.mutate)
        if efail:
            print(f"FAIL: {efail} gradient elements differ from the contract's emulation")
            fails += efail
    emu = [] if a.graph else trainref.emulate_grads(net, xb, y[idx])
    efail = 0
    for l, (ew, eb, h, dy, fh, fdy) in enumerate(emu):
        mag_w = np.abs(h).T @ np.abs(dy)
        mag_b = np.abs(dy).sum(axis=0)
        flip_w = np.abs(h).T @ (np.abs(dy) * fdy) + (np.abs(h) * fh).T @ np.abs(dy)
        flip_b = (np.abs(dy) * fdy).sum(axis=0)
        for kind, ref, mag, flip in (("w", ew, mag_w, flip_w), ("b", eb, mag_b, flip_b)):
            if ref is None:
                continue
            ours = np.load(os.path.join(a.grads, f"grad{l}_{kind}.npy")).astype(np.float64)
            if a.mutate == "sign":
                ours = -ours
            ours = ours.reshape(ref.shape)
            bnd = 2.0 ** -20 * mag + 2.0 ** -7 * flip + 2.0 ** -8 * (np.abs(h).max(axis=0)[:, None] * np.abs(dy).max(axis=0)[None, :]
                                                  if kind == "w" else np.abs(dy).max(axis=0)) + 1e-30
            if bnd.shape != ref.shape:  # a conv: (K, C) -> [C, ci, kh, kw]
                bnd = bnd.T.reshape(ref.shape)
            r = np.abs(ours - ref) / bnd
            efail += int((r > 1).sum())
            print(f"layer {l} d{kind} vs the bf16 emulation: max |diff| {np.abs(ours - ref).max():.3g}, "
                  f"max |diff|/bound {r.max():.2e}")
    if efail:
        print(f"FAIL: {efail} gradient elements differ from the contract's emulation")
        fails += efail
    if a.opt:
        # the weights after the first step: PyTorch's optimizer on PyTorch's gradient. SGD
        # (momentum's first step is the plain step): |diff| <= lr bound_g + 2 ulp(w). Adam's
        # first step is lr m/(sqrt(v)+eps) = lr g/(|g|+eps'): where |g| exceeds the gradient
        # bound the sign is certain and |diff| <= 2^-16 lr + 2 ulp(w) (the VPU's rsqrt and
        # recip are accurate to a few fp32 ulps); elsewhere <= 2.01 lr.
        import torch
        opt = (torch.optim.Adam(net.params, lr=a.lr) if a.opt == "adam"
               else torch.optim.SGD(net.params, lr=a.lr, momentum=a.momentum))
        opt.step()
        wf = 0
        for l, (w, b) in enumerate(net.plist):
            for kind, t, g, bnd in (("w", w, grads[l][0], bounds[l][0]), ("b", b, grads[l][1], bounds[l][1])):
                if t is None:
                    continue
                ref = t.detach().numpy().astype(np.float64)
                ours = np.load(os.path.join(a.grads, f"{kind}{l}.npy")).astype(np.float64).reshape(ref.shape)
                ulp = np.abs(ref) * 2.0 ** -23 + 1e-45
                if a.opt == "sgd":
                    tol = a.lr * bnd + 2 * ulp
                else:
                    tol = np.where(np.abs(g) > bnd, 2.0 ** -16 * a.lr + 2 * ulp, 2.01 * a.lr)
                r = np.abs(ours - ref) / tol
                wf += int((r > 1).sum())
                print(f"layer {l} {kind} after the {a.opt} step: max |diff| {np.abs(ours - ref).max():.3g}, "
                      f"max |diff|/bound {r.max():.3f}")
        if wf:
            print(f"FAIL: {wf} weights after the step outside the bound")
            fails += wf
    ours_loss = float(np.load(os.path.join(a.grads, "loss.npy")).reshape(-1)[0])
    print(f"loss: ours {ours_loss:.6f}, PyTorch {loss:.6f}")
    if worst[1]:
        print("worst:", worst[1])
    if fails:
        print(f"FAIL: {fails} gradient elements outside the bound")
        return 1
    print("PASS: every gradient element within the bound")
    return 0


if __name__ == "__main__":
    sys.exit(main())
