# SPDX-License-Identifier: Apache-2.0
"""The two Fashion-MNIST models, as PyTorch modules. Both take float32 [N, 1, 28, 28]
(pixel / 255) and end in Softmax over the 10 classes; the last module is the Softmax, so
net[:-1] gives the logits (what training's cross-entropy uses).

  cnn: the TensorFlow tutorial's CNN: Conv2d(1, 64, 3x3, no padding) -> MaxPool2d(2, 2)
       -> ReLU -> Flatten -> Linear(64*13*13, 10) -> Softmax(dim=1)
  mlp: Flatten -> Linear(784, 256) -> ReLU -> Linear(256, 10) -> Softmax(dim=1)
"""
import torch.nn as nn

NAMES = ("cnn", "mlp")


def build(name):
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 64, kernel_size=3, padding=0),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(64 * 13 * 13, 10),
            nn.Softmax(dim=1),
        )
    if name == "mlp":
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, 256),
            nn.ReLU(),
            nn.Linear(256, 10),
            nn.Softmax(dim=1),
        )
    raise ValueError(f"unknown model {name!r} (one of {', '.join(NAMES)})")


def export_untrained(name, path, seed=1):
    """The model with PyTorch's default initialisation (torch.manual_seed(seed)), exported
    like train.py exports the trained one: input x [N, 1, 28, 28], output y, dynamic N,
    opset 14. The initial weights tpu-train starts from."""
    import torch
    torch.manual_seed(seed)
    net = build(name).eval()
    tmp = path + ".tmp.onnx"
    torch.onnx.export(net, torch.zeros(1, 1, 28, 28), tmp, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}}, opset_version=14)
    import os
    os.replace(tmp, path)


if __name__ == "__main__":
    import sys
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in NAMES:
        sys.exit("usage: nets.py cnn|mlp OUT.onnx [SEED]: the untrained model, exported")
    export_untrained(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else 1)
