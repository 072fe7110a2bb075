# SPDX-License-Identifier: Apache-2.0
"""Exports torchvision models (random weights, BatchNorm statistics calibrated on random
images so that activations stay of order 1) at a small input with a dynamic batch, with
PyTorch's fp32 outputs and the outputs of the same network run by PyTorch in bf16 (weights and
activations bfloat16): the reference for how far any bf16 machine lands from fp32.
usage: zoo.py OUT SIZE BATCH MODEL..."""
import os
import sys

import numpy as np
import torch
import torchvision

out, size, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out, exist_ok=True)
torch.set_num_threads(1)
for name in sys.argv[4:]:
    torch.manual_seed(0)
    m = getattr(torchvision.models, name)(weights=None)
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.momentum = None  # a plain average of the calibration batches
    m.train()
    with torch.no_grad():
        for _ in range(4):
            m(torch.rand(8, 3, size, size))
    m.eval()
    x = torch.rand(batch, 3, size, size)
    torch.onnx.export(m, x, os.path.join(out, name + ".onnx"), input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    np.save(os.path.join(out, name + "_x.npy"), x.numpy())
    with torch.no_grad():
        np.save(os.path.join(out, name + "_fp32.npy"), m(x).numpy())
        np.save(os.path.join(out, name + "_bf16.npy"),
                m.to(torch.bfloat16)(x.to(torch.bfloat16)).float().numpy())
    print(name, "exported")
