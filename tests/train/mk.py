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
  conv2.onnx   two Conv stages: Conv(1, 2, 3x3) -> ReLU -> Conv(2, 2, 3x3) -> Flatten ->
               Linear(8, 10) -> Softmax on xc.npy (the second conv's input gradient)
  cc.onnx      Conv(2, 3, 3x3, pad 1) -> MaxPool(2) -> ReLU -> Conv(3, 4, 3x3, pad 1) -> ReLU ->
               MaxPool(2) -> AdaptiveAvgPool2d(2) (the identity, as VGG's head at 224) ->
               Flatten -> Linear(16, 10) -> Softmax on xcc.npy [96, 2, 8, 8]
  text.onnx    the text model's shape, small: Embedding(30, 5) -> Conv1d(5, 6, 3, pad 1) ->
               ReLU -> MaxPool1d(2) -> Conv1d(6, 4, 3) -> ReLU -> MaxPool1d(2) -> Flatten ->
               Linear(8, 10) -> Softmax on xt.npy: int64 token ids [96, 12]
  convs2.onnx  Conv(1, 2, 3x3, stride (1, 2)) -> Flatten -> Linear -> Softmax (refused: the
               strides differ and there is no pool to even them)
  cs.onnx      Conv(2, 3, 3x3, pad 1) -> ReLU -> Conv(3, 4, 3x3, stride 2, pad 1) -> ReLU ->
               MaxPool(2) -> Flatten -> Linear(16, 10) -> Softmax on xcc.npy (a strided conv's
               input gradient; its last padded row and column are never read)
  cs2.onnx     Conv(2, 4, 3x3, stride 2) -> Flatten -> Linear(36, 10) -> Softmax on xcc.npy
  res.onnx     ResNet's shape: Conv(2, 4, 3x3, pad 1) -> ReLU -> MaxPool(3, stride 2, pad 1) ->
               [Conv(4, 4) -> ReLU -> Conv(4, 4)] + identity -> ReLU -> [Conv(4, 6, stride 2) ->
               ReLU -> Conv(6, 6, 1x1)] + Conv(4, 6, 1x1, stride 2) -> ReLU ->
               GlobalAveragePool -> Flatten -> Linear(6, 10) -> Softmax on xcc.npy
  bag.onnx     Embedding(30, 4) -> Flatten -> Linear(48, 16) -> ReLU -> Linear(16, 10) ->
               Softmax on xt.npy (the embedding read by a dense layer)
  wide.onnx    Conv(16, 8, 3x3, pad 1) -> ReLU -> MaxPool(2) -> Flatten -> Linear(32, 10) ->
               Softmax on xw.npy [96, 16, 4, 4]: 145 rows of dW x 2 N-tiles at N = 4 (with
               Adam's state 1,450 ACC rows: chunked in a small ACC)
  tiles.onnx   Conv(4, 32, 1x1) -> ReLU -> Flatten -> Linear(128, 10) -> Softmax on xs.npy
               [96, 4, 2, 2]: 8 output tiles at N = 4 (dW in groups of tiles in a small ACC)
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
    export(nn.Sequential(nn.Conv2d(1, 2, 3, stride=(1, 2)), nn.Flatten(), nn.Linear(16, 10), nn.Softmax(dim=1)),
           (2, 1, 6, 6), os.path.join(out, "convs2.onnx"))
    export(nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.Conv2d(3, 4, 3, stride=2, padding=1),
                         nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(), nn.Linear(16, 10), nn.Softmax(dim=1)),
           (2, 2, 8, 8), os.path.join(out, "cs.onnx"))
    export(nn.Sequential(nn.Conv2d(2, 4, 3, stride=2), nn.Flatten(), nn.Linear(36, 10), nn.Softmax(dim=1)),
           (2, 2, 8, 8), os.path.join(out, "cs2.onnx"))
    export(nn.Sequential(nn.Conv2d(16, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(),
                         nn.Linear(32, 10), nn.Softmax(dim=1)), (2, 16, 4, 4), os.path.join(out, "wide.onnx"))
    export(nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.MaxPool2d(2, 2), nn.ReLU(),
                         nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(),
                         nn.Linear(16, 10), nn.Softmax(dim=1)), (2, 2, 8, 8), os.path.join(out, "cc.onnx"))

    # refused in training (fold folds the BatchNormalization, drops the Dropout; training
    # must not): BatchNormalization kept by exporting without constant folding and with the
    # module's mode preserved (eval mode alone fuses it into the Conv), and mlp.onnx
    # with a Dropout(0.5) after its ReLU
    torch.onnx.export(nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                    nn.MaxPool2d(2, 2), nn.Flatten(), nn.Linear(36, 10),
                                    nn.Softmax(dim=1)).eval(),
                      torch.zeros((2, 1, 6, 6)), os.path.join(out, "cnnbn.onnx"), input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "n"}, "y": {0: "n"}},
                      opset_version=14, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE)
    import onnx
    from onnx import helper, numpy_helper
    m = onnx.load(os.path.join(out, "mlp.onnx"))
    relu = [n for n in m.graph.node if n.op_type == "Relu"][0]
    m.graph.initializer.append(numpy_helper.from_array(np.array(0.5, dtype=np.float32), "drop_ratio"))
    idx = list(m.graph.node).index(relu)
    m.graph.node.insert(idx + 1, helper.make_node("Dropout", [relu.output[0] + "_d", "drop_ratio"],
                                                  [relu.output[0]], name="drop"))
    relu.output[0] = relu.output[0] + "_d"
    onnx.save(m, os.path.join(out, "mlpdrop.onnx"))

    class Text(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(30, 5)
            self.c1 = nn.Conv1d(5, 6, 3, padding=1)
            self.c2 = nn.Conv1d(6, 4, 3)
            self.fc = nn.Linear(8, 10)

        def forward(self, ids):
            x = self.emb(ids).transpose(1, 2)
            x = nn.functional.max_pool1d(torch.relu(self.c1(x)), 2)
            x = nn.functional.max_pool1d(torch.relu(self.c2(x)), 2)
            return torch.softmax(self.fc(torch.flatten(x, 1)), dim=1)

    class Res(nn.Module):
        """ResNet's shape, small: a stem Conv -> ReLU -> MaxPool(3, 2, pad 1), a block with
        the identity residual, a block with a strided 1x1 conv on the residual, the average."""
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(2, 4, 3, padding=1)
            self.c1 = nn.Conv2d(4, 4, 3, padding=1)
            self.c2 = nn.Conv2d(4, 4, 3, padding=1)
            self.d1 = nn.Conv2d(4, 6, 3, stride=2, padding=1)
            self.d2 = nn.Conv2d(6, 6, 1)
            self.ds = nn.Conv2d(4, 6, 1, stride=2)
            self.fc = nn.Linear(6, 10)

        def forward(self, x):
            x = nn.functional.max_pool2d(torch.relu(self.stem(x)), 3, 2, 1)
            x = torch.relu(x + self.c2(torch.relu(self.c1(x))))
            x = torch.relu(self.d2(torch.relu(self.d1(x))) + self.ds(x))
            x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
            return torch.softmax(self.fc(x), dim=1)

    export(Res(), (2, 2, 8, 8), os.path.join(out, "res.onnx"))

    class ResBcast(nn.Module):
        """Refused in training: a residual Add of [n, 4, 6, 6] and a broadcast [n, 4, 1, 1]."""
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(1, 4, 3, padding=1)
            self.a = nn.Conv2d(4, 4, 1)
            self.b = nn.Conv2d(4, 4, 6)
            self.fc = nn.Linear(4, 5)

        def forward(self, x):
            x = torch.relu(self.stem(x))
            x = torch.relu(self.a(x) + self.b(x))
            return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    export(ResBcast(), (2, 1, 6, 6), os.path.join(out, "resbcast.onnx"))
    # refused in training: a padded, overlapping MaxPool after the second Conv (its input
    # gradient would scatter overlapping windows)
    export(nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1),
                         nn.ReLU(), nn.MaxPool2d(3, 2, 1), nn.Flatten(), nn.Linear(36, 5)),
           (2, 1, 6, 6), os.path.join(out, "poollate.onnx"))
    export(nn.Sequential(nn.Conv2d(4, 32, 1), nn.ReLU(), nn.Flatten(), nn.Linear(32 * 2 * 2, 10),
                         nn.Softmax(dim=1)), (2, 4, 2, 2), os.path.join(out, "tiles.onnx"))

    class Bag(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(30, 4)
            self.fc1 = nn.Linear(48, 16)
            self.fc2 = nn.Linear(16, 10)

        def forward(self, ids):
            h = torch.relu(self.fc1(torch.flatten(self.emb(ids), 1)))
            return torch.softmax(self.fc2(h), dim=1)

    torch.onnx.export(Bag().eval(), torch.zeros((2, 12), dtype=torch.long), os.path.join(out, "bag.onnx"),
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}, opset_version=14)
    m = Text().eval()
    torch.onnx.export(m, torch.zeros((2, 12), dtype=torch.long), os.path.join(out, "text.onnx"),
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}, opset_version=14)
    rng = np.random.default_rng(1)
    np.save(os.path.join(out, "xw.npy"), rng.standard_normal((96, 16, 4, 4)).astype(np.float32))
    np.save(os.path.join(out, "xs.npy"), np.random.default_rng(3).standard_normal((96, 4, 2, 2)).astype(np.float32))
    np.save(os.path.join(out, "xcc.npy"), rng.standard_normal((96, 2, 8, 8)).astype(np.float32))
    np.save(os.path.join(out, "xt.npy"), rng.integers(0, 30, (96, 12)).astype(np.int64))
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
