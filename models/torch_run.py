# SPDX-License-Identifier: Apache-2.0
"""Runs a trained model (models/train.py's DIR/model.pt) with PyTorch on a float32 .npy input.

usage: /usr/bin/python3 models/torch_run.py {cnn|mlp} DIR IN.npy OUT.npy
                                            [--threads T] [--chunk K] [--bf16] [--time R]

  OUT.npy: float32 probabilities [N, 10]. --threads (default 1) torch threads; --chunk K
  (default 500) images per forward call. --bf16: an *approximation* of a bf16-product
  machine, for choosing tolerances before the real one runs: the inputs of every Conv2d and
  Linear (activations and weights) rounded to bfloat16 (nearest even), the arithmetic in fp32.
  --time R: run R times and print "torch: N images in S s: I images/s" (the best run).
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nets  # noqa: E402
from train import probs_of as run  # noqa: E402  (one chunked forward, train.py's)


def bf16(t):
    return t.to(torch.bfloat16).to(torch.float32)


def load(model, folder, emulate_bf16=False):
    net = nets.build(model)
    path = os.path.join(folder, "model.pt")
    try:
        state = torch.load(path, map_location="cpu")
    except (OSError, RuntimeError) as e:
        raise SystemExit(f"torch_run: error: {path}: cannot load: {str(e).splitlines()[0]}")
    try:
        net.load_state_dict(state)
    except RuntimeError as e:
        raise SystemExit(f"torch_run: error: {path}: not a {model} model: {str(e).splitlines()[0]}")
    net.eval()
    if emulate_bf16:
        with torch.no_grad():
            for m in net.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    m.weight.copy_(bf16(m.weight))
                    m.register_forward_pre_hook(lambda _m, inp: (bf16(inp[0]),))
    return net


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", choices=nets.NAMES)
    ap.add_argument("dir")
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=500)
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--time", type=int, default=0, metavar="R")
    a = ap.parse_args()
    if a.threads < 1 or a.chunk < 1 or a.time < 0:
        ap.error("--threads and --chunk must be >= 1, --time >= 0")
    torch.set_num_threads(a.threads)
    try:
        x = np.load(a.input, allow_pickle=False)
    except (OSError, ValueError) as e:
        sys.exit(f"torch_run: error: {a.input}: cannot read: {e}")
    if x.dtype != np.float32 or x.ndim != 4 or x.shape[1:] != (1, 28, 28):
        sys.exit(f"torch_run: error: {a.input}: {x.dtype} {list(x.shape)}, "
                 f"expected float32 [N, 1, 28, 28]")
    x = np.ascontiguousarray(x)
    net = load(a.model, a.dir, a.bf16)
    y = run(net, x, a.chunk)
    if a.time:
        best = None
        for _ in range(a.time):
            t0 = time.perf_counter()
            run(net, x, a.chunk)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        print(f"torch: {len(x)} images in {best:.3f} s: {len(x) / best:.1f} images/s "
              f"({a.threads} thread{'s' if a.threads > 1 else ''}, best of {a.time})")
    np.save(a.output, y)


if __name__ == "__main__":
    main()
