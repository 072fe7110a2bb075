# SPDX-License-Identifier: Apache-2.0
"""Models and data for test-train (tests/train/run.sh), written into OUTDIR:
  mlp.onnx     Flatten -> Linear(20, 24) -> ReLU -> Linear(24, 10) -> Softmax
  deep.onnx    Linear(20, 13) -> ReLU -> Linear(13, 17, no bias) -> ReLU -> Linear(17, 5)
               (logits: trained with --logits)
  conv.onnx    Conv -> ReLU -> Flatten -> Linear -> Softmax (after the Flatten a Gemm: trainable)
  cnn.onnx     the tutorial's shape, small: Conv(1, 4, 3x3, pad 1) -> MaxPool(2) -> ReLU ->
               Flatten -> Linear(36, 10) -> Softmax, on x.npy as [96, 1, 6, 6]... (xc.npy)
  cnn2.onnx    Conv(2, 3, 3x3) -> ReLU -> MaxPool(2) (floor: 5x5 -> 2x2) -> Flatten ->
               Linear(12, 16) -> ReLU -> Linear(16, 10) -> Softmax, on xc2.npy [96, 2, 7, 7]
  cnn3.onnx    Conv(3, 4, 3x3, pad 1) -> ReLU -> MaxPool(2) -> Flatten -> Linear(16, 10) ->
               Softmax on xc3.npy [96, 3, 5, 5]: kernel width x channels = 9 > N (lane tiles)
  conv2.onnx   two Convs (refused: only the first layer may be a Conv)
  x.npy, y.npy 96 examples [96, 1, 4, 5], labels 0..9 (random: for gradient checks)
  bx.npy, by.npy, vx.npy, vy.npy  a learnable task: 5 Gaussian blobs in 20 dimensions
               (640 training, 160 validation examples), labels 0..4
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn


def export(m, shape, path):
    m.eval()
    torch.onnx.export(m, torch.zeros(shape), path, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}, opset_version=14)


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    export(nn.Sequential(nn.Flatten(), nn.Linear(20, 24), nn.ReLU(), nn.Linear(24, 10),
                         nn.Softmax(dim=1)), (2, 1, 4, 5), os.path.join(out, "mlp.onnx"))
    export(nn.Sequential(nn.Linear(20, 13), nn.ReLU(), nn.Linear(13, 17, bias=False), nn.ReLU(),
                         nn.Linear(17, 5)), (2, 20), os.path.join(out, "deep.onnx"))
    export(nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 2 * 3, 10),
                         nn.Softmax(dim=1)), (2, 1, 4, 5), os.path.join(out, "conv.onnx"))
    export(nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.MaxPool2d(2, 2), nn.ReLU(), nn.Flatten(),
                         nn.Linear(36, 10), nn.Softmax(dim=1)), (2, 1, 6, 6), os.path.join(out, "cnn.onnx"))
    export(nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(),
                         nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 10), nn.Softmax(dim=1)),
           (2, 2, 7, 7), os.path.join(out, "cnn2.onnx"))
    export(nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(),
                         nn.Linear(16, 10), nn.Softmax(dim=1)), (2, 3, 5, 5), os.path.join(out, "cnn3.onnx"))
    export(nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Conv2d(2, 2, 3), nn.Flatten(),
                         nn.Linear(8, 10), nn.Softmax(dim=1)), (2, 1, 6, 6), os.path.join(out, "conv2.onnx"))
    rng = np.random.default_rng(1)
    np.save(os.path.join(out, "xc.npy"), rng.standard_normal((96, 1, 6, 6)).astype(np.float32))
    np.save(os.path.join(out, "xc2.npy"), rng.standard_normal((96, 2, 7, 7)).astype(np.float32))
    np.save(os.path.join(out, "xc3.npy"), rng.standard_normal((96, 3, 5, 5)).astype(np.float32))
    np.save(os.path.join(out, "x.npy"), rng.standard_normal((96, 1, 4, 5)).astype(np.float32))
    np.save(os.path.join(out, "y.npy"), rng.integers(0, 10, 96).astype(np.int64))
    centers = rng.standard_normal((5, 20)) * 1.5
    for name, n in (("b", 640), ("v", 160)):
        lab = rng.integers(0, 5, n)
        x = centers[lab] + rng.standard_normal((n, 20))
        np.save(os.path.join(out, f"{name}x.npy"), x.astype(np.float32))
        np.save(os.path.join(out, f"{name}y.npy"), lab.astype(np.int32))


if __name__ == "__main__":
    main(sys.argv[1])
