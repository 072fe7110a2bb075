# SPDX-License-Identifier: Apache-2.0
"""Trains one of the Fashion-MNIST models (models/nets.py) in fp32 and exports it to ONNX.

usage: /usr/bin/python3 models/train.py {cnn|mlp} --out DIR [--epochs E] [--train-count K]
                                        [--batch-size B] [--seed S] [--threads T]

Writes into DIR (all or nothing: a failed run leaves no model.onnx):
  model.onnx        opset 14, input "x" float32 [N, 1, 28, 28], output "y" float32 [N, 10]
                    (probabilities), N dynamic
  model.pt          the state_dict (models/torch_run.py runs it)
  torch_probs.npy   PyTorch's fp32 probabilities on the 10,000 test images, float32 [10000, 10]
  metrics.json      the settings, training time and the test accuracy
Training: Adam (lr 1e-3), cross-entropy on the logits (the network without its Softmax),
mini-batches in an order drawn from the seed. The same settings on the same machine give
the same bytes (fixed seeds, deterministic algorithms, a fixed thread count).
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fmnist  # noqa: E402
import nets  # noqa: E402

EVAL_CHUNK = 500


def probs_of(net, x, chunk=EVAL_CHUNK):
    """net's probabilities on the float32 numpy array x, in chunks of `chunk` images."""
    out = []
    with torch.no_grad():
        for i in range(0, len(x), chunk):
            out.append(net(torch.from_numpy(x[i:i + chunk])).numpy())
    return np.concatenate(out).astype(np.float32, copy=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", choices=nets.NAMES)
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--train-count", type=int, default=0,
                    help="train on the first K training images (0: all 60,000)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 or 2)")
    a = ap.parse_args()
    if a.epochs < 1 or a.batch_size < 1 or a.train_count < 0 or not 1 <= a.threads <= 2:
        ap.error("--epochs and --batch-size must be >= 1, --train-count >= 0, --threads 1 or 2")

    torch.set_num_threads(a.threads)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)

    try:
        xtr, ytr = fmnist.images("train"), fmnist.labels("train")
        xte, yte = fmnist.images("test"), fmnist.labels("test")
    except fmnist.IdxError as e:
        sys.exit(f"train: error: {e}")
    if a.train_count:
        xtr, ytr = xtr[:a.train_count], ytr[:a.train_count]
    xtr_t, ytr_t = torch.from_numpy(xtr), torch.from_numpy(ytr)

    net = nets.build(a.model)
    logits_net = net[:-1]
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(a.seed)

    t0 = time.monotonic()
    for epoch in range(a.epochs):
        net.train()
        order = torch.randperm(len(xtr_t), generator=gen)
        total, count = 0.0, 0
        for i in range(0, len(order), a.batch_size):
            idx = order[i:i + a.batch_size]
            loss = F.cross_entropy(logits_net(xtr_t[idx]), ytr_t[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
            count += len(idx)
        net.eval()
        acc = float((probs_of(net, xte).argmax(1) == yte).mean())
        print(f"train {a.model}: epoch {epoch + 1}/{a.epochs} loss {total / count:.4f} "
              f"test accuracy {100 * acc:.2f} % ({time.monotonic() - t0:.1f} s)", flush=True)
    train_s = time.monotonic() - t0

    net.eval()
    probs = probs_of(net, xte)
    acc = float((probs.argmax(1) == yte).mean())

    os.makedirs(a.out, exist_ok=True)
    onnx_path = os.path.join(a.out, "model.onnx")
    if os.path.exists(onnx_path):
        os.remove(onnx_path)
    tmp = onnx_path + ".tmp"
    torch.onnx.export(net, torch.zeros(1, 1, 28, 28), tmp, opset_version=14,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}},
                      do_constant_folding=True)
    torch.save(net.state_dict(), os.path.join(a.out, "model.pt"))
    np.save(os.path.join(a.out, "torch_probs.npy"), probs)
    metrics = {
        "model": a.model, "epochs": a.epochs, "train_count": len(xtr), "batch_size": a.batch_size,
        "seed": a.seed, "threads": a.threads, "train_seconds": round(train_s, 1),
        "test_accuracy": acc, "test_count": len(xte),
        "parameters": sum(p.numel() for p in net.parameters()),
        "torch": torch.__version__,
    }
    with open(os.path.join(a.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, onnx_path)
    print(f"train {a.model}: {len(xtr)} images x {a.epochs} epochs in {train_s:.1f} s, "
          f"PyTorch fp32 test accuracy {100 * acc:.2f} % -> {onnx_path}")


if __name__ == "__main__":
    main()
