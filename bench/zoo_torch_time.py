# SPDX-License-Identifier: Apache-2.0
"""PyTorch fp32 forward time of a torchvision model built exactly as tests/zoo/zoo.py builds
it (seed 0, random weights, BatchNorm calibrated on 4 random batches of 8, eval), on one
thread, on the images of IN.npy: a warm-up call, then R timed calls; prints
"torch: B image(s): best T ms per call (R calls, 1 thread)" and checks the output against
REF.npy (zoo.py's fp32 output for the same images) when given, so the model timed is the
model exported.
usage: zoo_torch_time.py NAME SIZE IN.npy [REF.npy] [--time R]"""
import sys
import time

import os

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "zoo"))
import zoo  # noqa: E402  (tests/zoo/zoo.py: the models as the zoo exports them)

args = [a for a in sys.argv[1:]]
reps = 5
if "--time" in args:
    i = args.index("--time")
    reps = int(args[i + 1])
    del args[i:i + 2]
name, size, inp = args[0], int(args[1]), args[2]
ref = args[3] if len(args) > 3 else None
torch.set_num_threads(1)
m = zoo.build(name, size)
x = torch.from_numpy(np.load(inp))
best = None
with torch.no_grad():
    y = m(x)  # warm-up
    for _ in range(reps):
        t0 = time.perf_counter()
        y = m(x)
        dt = time.perf_counter() - t0
        best = dt if best is None or dt < best else best
if ref is not None:
    r = np.load(ref)
    d = float(np.abs(y.numpy() - r).max())
    if d > 1e-4:
        sys.exit(f"zoo_torch_time: the model differs from the exported one (max diff {d})")
print(f"torch: {x.shape[0]} image(s): best {best * 1e3:.2f} ms per call ({reps} calls, 1 thread)")
