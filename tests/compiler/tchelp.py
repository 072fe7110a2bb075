# SPDX-License-Identifier: Apache-2.0
"""The compile-and-infer step the issue-32 test scripts share (erf.py, ops32.py,
tf_ops.py, attn.py): tpu-compile a model into W/NAME_N<N>, run tpu-infer on x, return the output (or
None after reporting the tool's one-line error through say(False, ...))."""
import os
import subprocess

import numpy as np


def infer(tools, d, x, name, N, say):
    """tpu-infer of the model compiled in d on x; the output, or None"""
    np.save(d + "_x.npy", x)
    r = subprocess.run([os.path.join(tools, "tpu-infer"), d, "--input", d + "_x.npy", "--output",
                        d + "_y.npy"], capture_output=True, text=True)
    if r.returncode:
        say(False, "%s N=%d: tpu-infer: %s" % (name, N, r.stderr.strip()))
        return None
    return np.load(d + "_y.npy")


def compile_infer(tools, w, name, onnx_path, x, N, say):
    """tpu-compile ONNX_PATH for N x N on one core at x's batch, then infer(x)"""
    d = os.path.join(w, "%s_N%d" % (name, N))
    r = subprocess.run([os.path.join(tools, "tpu-compile"), onnx_path, "--mxu", str(N), "--cores",
                        "1", "--batch", str(x.shape[0]), "-o", d], capture_output=True, text=True)
    if r.returncode:
        say(False, "%s N=%d: tpu-compile: %s" % (name, N, r.stderr.strip()))
        return None
    return infer(tools, d, x, name, N, say)
