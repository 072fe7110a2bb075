# SPDX-License-Identifier: Apache-2.0
"""Exports torchvision models (random weights, BatchNorm statistics calibrated on random
images so that activations stay of order 1) at a small input with a dynamic batch, with
PyTorch's fp32 outputs and the outputs of the same network run by PyTorch in bf16 (weights and
activations bfloat16): the reference for how far any bf16 machine lands from fp32.
For each model: NAME.onnx, NAME_x.npy (BATCH images), NAME_x1.npy (the first of them alone),
NAME_fp32.npy / NAME_bf16.npy (the batch) and NAME_fp32_1.npy / NAME_bf16_1.npy (one image).

VGG at a small input: torchvision's VGG ends its features with AdaptiveAvgPool2d((7, 7)), which
at 64x64 would have to upsample a 2x2 map to 7x7 (torch 1.13 cannot export that); here the pool
is dropped and the classifier's first Linear takes the 512 x 2 x 2 features (2048 -> 4096, the
rest of the network unchanged). At 224x224 the model is torchvision's as it is.
NAME_gelu_tanh (e.g. convnext_tiny_gelu_tanh): torchvision's NAME with every nn.GELU made
GELU(approximate='tanh') (`vop gelu`): the stand-in used before the exact GELU's Erf
compiled, kept for comparisons.
--export-only (bench/article.sh, for the predictor): only NAME.onnx, no BatchNorm calibration
and no reference outputs (the predicted cycles do not depend on the weights or the data).
usage: zoo.py OUT SIZE BATCH [--export-only] MODEL..."""
import os
import sys

import numpy as np
import torch
import torchvision


def build(name, size, calibrate=True):
    """torchvision's NAME for SIZE x SIZE images, seed 0, random weights, BatchNorm statistics
    calibrated on 4 random batches of 8 (unless calibrate is False), in eval mode."""
    torch.manual_seed(0)
    tanh = name.endswith("_gelu_tanh")  # NAME with every nn.GELU the tanh form (no Erf)
    name = name[:-len("_gelu_tanh")] if tanh else name
    # ViT's position embedding is sized for its input (torchvision's image_size)
    kw = {"image_size": size} if name.startswith("vit_") else {}
    if name == "inception_v3":  # its auxiliary head (training only) needs 299x299 in train()
        kw["aux_logits"] = False
    m = getattr(torchvision.models, name)(weights=None, **kw)
    if name.startswith("vit_"):
        # torchvision starts the class token and the head at zero (the output would be 0)
        with torch.no_grad():
            m.class_token.normal_(0, 1)
            m.heads.head.weight.normal_(0, 0.02)
    for mod in m.modules():
        if tanh and isinstance(mod, torch.nn.GELU):
            mod.approximate = "tanh"
    if name.startswith("vgg") and size < 224:
        f = size // 32
        m.avgpool = torch.nn.Identity()
        m.classifier[0] = torch.nn.Linear(512 * f * f, 4096)
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.momentum = None  # a plain average of the calibration batches
    if calibrate:
        m.train()
        with torch.no_grad():
            for _ in range(4):
                m(torch.rand(8, 3, size, size))
    m.eval()
    return m


def main():
    out, size, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    names = sys.argv[4:]
    export_only = "--export-only" in names
    names = [n for n in names if n != "--export-only"]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    for name in names:
        export(name, size, batch, out, export_only)


def export(name, size, batch, out, export_only):
    m = build(name, size, not export_only)
    x = torch.rand(batch, 3, size, size)
    torch.onnx.export(m, x, os.path.join(out, name + ".onnx"), input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    if export_only:
        print(name, "exported")
        return
    np.save(os.path.join(out, name + "_x.npy"), x.numpy())
    np.save(os.path.join(out, name + "_x1.npy"), x[:1].numpy())
    with torch.no_grad():
        np.save(os.path.join(out, name + "_fp32.npy"), m(x).numpy())
        np.save(os.path.join(out, name + "_fp32_1.npy"), m(x[:1]).numpy())
        mb = m.to(torch.bfloat16)
        np.save(os.path.join(out, name + "_bf16.npy"), mb(x.to(torch.bfloat16)).float().numpy())
        np.save(os.path.join(out, name + "_bf16_1.npy"), mb(x[:1].to(torch.bfloat16)).float().numpy())
    print(name, "exported")


if __name__ == "__main__":
    main()
