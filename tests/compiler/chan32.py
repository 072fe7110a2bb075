# SPDX-License-Identifier: Apache-2.0
"""test-compiler-chan32 (issue 32, ShuffleNetV2 and MNASNet): channel moves and the spatial
mean on Conv/pool outputs (channels-last in memory), in torch 1.13 models at opset 14 with a
dynamic batch (torch's shape arithmetic: Shape, Gather, Div, ..., folded by the compiler):

  shuffle   Conv2d 3x3, ReLU, x.chunk(2, dim=1) (two Slices of the channels), Conv2d 1x1 on
            the second half, torch.cat, channel_shuffle(2) (Reshape to 5-D, Transpose
            [0, 2, 1, 3, 4], Reshape back), a padded Conv2d 3x3 reading it,
            channel_shuffle(3), x.mean([2, 3]) (ReduceMean keepdims 0: a GlobalAveragePool
            and a Reshape), Linear
  slice     Conv2d 3x3, channel_shuffle(2), x[:, 1:6] (a Slice of 5 of the 8 channels),
            x.mean([2, 3], keepdim=True) as the graph output ([B, 5, 1, 1], fp32)
  tokens    ViT's token rows in miniature: a Conv 2x2 stride 2 patchify, flatten(2).transpose(1, 2)
            (a Reshape and Transpose of a Conv output: its pixels as rows), torch.cat of the
            class token expanded to the batch (a folded constant) and the patch rows, a
            position embedding added, Linear, ReLU, x[:, 0] (a Gather of one row), Linear;
            wrong answer: x[:, 1]
  modpad    Swin's window padding in miniature: F.pad of a Conv output (4x3 from 6x5) on the
            right and bottom to a multiple of 4, the pads computed from its shape with %
            (Mod of constants, folded), then a Conv; wrong answer: the padding on the left
            and top
  relayout  ConvNeXt's block in miniature (ReLU for its GELU): Conv2d 2x2 stride 2, a
            depthwise Conv2d 7x7, permute(0, 2, 3, 1) (Transpose of a Conv output: its pixels
            as rows), LayerNorm, Linear, ReLU, Linear, permute(0, 3, 1, 2) (rows back into a
            Conv layout), times a per-channel gamma, plus the stem's output, ReLU (the graph
            output, [B, 8, 5, 5]); wrong answer: the permute back swapping H and W. Its
            composed bound is vacuous here (LayerNorm's over 8 channels), so it is also held
            to attn.py's limit: |ours - PyTorch fp32| <= 2 x PyTorch bf16's own + 1e-3, which
            the wrong answer must exceed

At N = 4 and 8 (channel runs cut at N lanes), batch 3: every element within the bound of
docs/conformance.md composed through the graph (tests/zoo/bound.py; the channel moves are
bit copies, the mean GlobalAveragePool's sum times fp32(1/(H W)), within ReduceMean's
bound), PyTorch fp32 within the same bound of the exact value, the same bits at both N. A
wrong answer, the same network with its channel shuffles left out (PyTorch's output), is
rejected by the same check.

usage: chan32.py WORKDIR BUILD_TOOLS     (exit 1 on any failure)"""
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

W, TOOLS = sys.argv[1], sys.argv[2]
BOUND = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "zoo", "bound.py")
os.makedirs(W, exist_ok=True)
torch.manual_seed(32)
fails = 0


def say(ok, msg):
    global fails
    print(("ok: " if ok else "FAIL: ") + msg)
    if not ok:
        fails += 1


def channel_shuffle(x, groups):
    """torchvision's (shufflenetv2.py)"""
    b, c, h, w = x.size()
    x = x.view(b, groups, c // groups, h, w)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(b, -1, h, w)


class Shuffle(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(4, 4, 1)
        self.c3 = torch.nn.Conv2d(8, 6, 3, padding=1)
        self.fc = torch.nn.Linear(6, 5)
        self.shuffle = True

    def forward(self, x):
        y = F.relu(self.c1(x))
        a, b = y.chunk(2, dim=1)
        y = torch.cat((a, F.relu(self.c2(b))), 1)
        y = channel_shuffle(y, 2) if self.shuffle else y
        y = self.c3(y)
        y = channel_shuffle(y, 3) if self.shuffle else y
        return self.fc(y.mean([2, 3]))


class Relayout(torch.nn.Module):
    """ConvNeXt's block in miniature (ReLU for its GELU): the permutes around LayerNorm and
    the Linear layers; wrong: the way back swaps H and W (permute(0, 3, 2, 1))"""
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 2, stride=2)
        self.dw = torch.nn.Conv2d(8, 8, 7, padding=3, groups=8)
        self.ln = torch.nn.LayerNorm(8)
        self.l1 = torch.nn.Linear(8, 16)
        self.l2 = torch.nn.Linear(16, 8)
        self.gamma = torch.nn.Parameter(torch.rand(8, 1, 1))
        self.shuffle = True

    def forward(self, x):
        y = self.stem(x)
        z = self.dw(y).permute(0, 2, 3, 1)
        z = self.l2(F.relu(self.l1(self.ln(z))))
        z = z.permute(0, 3, 1, 2) if self.shuffle else z.permute(0, 3, 2, 1)
        return F.relu(y + self.gamma * z)


class Tokens(torch.nn.Module):
    """ViT's token rows in miniature: the patch rows of a Conv (flatten(2).transpose(1, 2)),
    the class token expanded and concatenated before them, a position embedding added, a
    Linear and ReLU on every row, x[:, 0] into the head; wrong: x[:, 1]"""
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Conv2d(3, 8, 2, stride=2)
        self.cls = torch.nn.Parameter(torch.rand(1, 1, 8))
        self.pos = torch.nn.Parameter(torch.rand(1, 10, 8) * 0.1)
        self.mlp = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(8, 5)
        self.shuffle = True

    def forward(self, x):
        p = self.proj(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(x.shape[0], -1, -1), p], dim=1) + self.pos
        t = F.relu(self.mlp(t))
        return self.head(t[:, 0] if self.shuffle else t[:, 1])


class ModPad(torch.nn.Module):
    """Swin's window padding in miniature: F.pad of a Conv output to a multiple of 4 on the
    right and bottom, the pads computed from the shape with % (a Mod of constants, folded),
    then a Conv; wrong: the padding on the left and top"""
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 4, 3)
        self.c2 = torch.nn.Conv2d(4, 5, 3)
        self.shuffle = True

    def forward(self, x):
        y = self.c1(x)
        _, _, h, w = y.shape
        ph, pw = (4 - h % 4) % 4, (4 - w % 4) % 4
        return self.c2(F.pad(y, (0, pw, 0, ph) if self.shuffle else (pw, 0, ph, 0)))


class Slice(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3)
        self.shuffle = True

    def forward(self, x):
        y = self.c1(x)
        y = channel_shuffle(y, 2) if self.shuffle else y
        return y[:, 1:6].mean([2, 3], keepdim=True)


def run(name, onnx_path, x, N):
    d = os.path.join(W, "%s_N%d" % (name, N))
    r = subprocess.run([os.path.join(TOOLS, "tpu-compile"), onnx_path, "--mxu", str(N), "--cores", "1",
                        "--batch", str(x.shape[0]), "-o", d], capture_output=True, text=True)
    if r.returncode:
        say(False, "%s N=%d: tpu-compile: %s" % (name, N, r.stderr.strip()))
        return None
    r = subprocess.run([os.path.join(TOOLS, "tpu-infer"), d, "--input", os.path.join(W, name + "_x.npy"),
                        "--output", d + "_y.npy"], capture_output=True, text=True)
    if r.returncode:
        say(False, "%s N=%d: tpu-infer: %s" % (name, N, r.stderr.strip()))
        return None
    return d + "_y.npy"


def bound(name, out, fp32=None):
    """bound.py's verdict (exit 0: every element within the composed bound) and its first line"""
    cmd = [sys.executable, BOUND, os.path.join(W, name + ".onnx"), os.path.join(W, name + "_x.npy"), out]
    cmd += ["--fp32", fp32] if fp32 else []
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode == 0, (r.stdout.strip().splitlines() or [r.stderr.strip()[-200:]])[0]


for name, m in (("shuffle", Shuffle()), ("slice", Slice()), ("relayout", Relayout()), ("tokens", Tokens()),
                ("modpad", ModPad())):
    m.eval()
    x = torch.rand(3, 3, 10, 10) if name == "relayout" else torch.rand(3, 3, 6, 6) if name == "tokens" else torch.rand(3, 3, 6, 5)
    p = os.path.join(W, name + ".onnx")
    torch.onnx.export(m, x, p, opset_version=14, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    np.save(os.path.join(W, name + "_x.npy"), x.numpy())
    with torch.no_grad():
        np.save(os.path.join(W, name + "_fp32.npy"), m(x).numpy())
        m.shuffle = False
        np.save(os.path.join(W, name + "_wrong.npy"), m(x).numpy())
    outs = [run(name, p, x.numpy(), N) for N in (4, 8)]
    for N, o in zip((4, 8), outs):
        if o is None:
            continue
        ok, line = bound(name, o)
        say(ok, "%s N=%d: every element within the derived bound (%s)" % (name, N, line))
    ok, line = bound(name, os.path.join(W, name + "_fp32.npy"))
    say(ok, "%s: PyTorch fp32 within the derived bound (%s)" % (name, line))
    if all(outs):
        a, b = np.load(outs[0]), np.load(outs[1])
        say(a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32)),
            "%s: the same bits at N = 4 and 8" % name)
    if name == "relayout":
        f = np.load(os.path.join(W, name + "_fp32.npy")).astype(np.float64)
        with torch.no_grad():
            m.shuffle = True
            bf = m.to(torch.bfloat16)(x.to(torch.bfloat16)).float().numpy()
        lim = 2 * np.abs(bf - f).max() + 1e-3
        for N, o in zip((4, 8), outs):
            d = np.abs(np.load(o) - f).max() if o else float("inf")
            say(d <= lim, "relayout N=%d: |ours - PyTorch fp32| %.3g <= %.3g (2 x PyTorch bf16's + 1e-3)" % (N, d, lim))
        d = np.abs(np.load(os.path.join(W, name + "_wrong.npy")) - f).max()
        say(d > lim, "relayout: the H/W-swapped answer is %.3g from PyTorch fp32, beyond %.3g" % (d, lim))
        continue
    ok, line = bound(name, os.path.join(W, name + "_wrong.npy"))
    say(not ok, "%s: the check rejects the network %s (%s)" % (
        name, {"relayout": "with H and W swapped on the way back", "tokens": "reading x[:, 1]",
               "modpad": "padding on the left and top"}.get(
            name, "without its channel shuffles"), line))

print("test-compiler-chan32: %d failure(s)" % fails)
sys.exit(1 if fails else 0)
