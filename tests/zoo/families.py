# SPDX-License-Identifier: Apache-2.0
"""Issue 32's census: one model per torchvision 0.14 classification family, exported with torch
1.13 at opset 14 (random weights, seed 0, eval mode, no BatchNorm calibration: the compiler's
answer does not depend on the weights), each at the smallest square input at or above 64x64
that torchvision's model takes and torch exports (below, SIZES), then
`tpu-compile --report-only --mxu 64 --cores 1 --imem-insns 32768` on each. Prints a table:
family, model, input, and either "compiles (N instructions)" or the compiler's one-line
refusal (or the export's error).

Inputs: 64x64 where the model takes it. Inception-v3 needs 75 (its stride-2 stem and
reductions leave no pixel below that). AlexNet's AdaptiveAvgPool2d((6, 6)) exports only when
the feature map divides by 6 (torch 1.13 refuses an adaptive pool that would upsample or
overlap): 224. VGG: tests/zoo/zoo.py's 64x64 form (the 7x7 adaptive pool dropped, the first
Linear taking the 2x2 features), as test-zoo runs it. ViT-B/16 at 64 with image_size=64 (its
position embedding is sized at construction; 64 divides into its 16x16 patches). Swin-T
exports at 64 (it pads its maps to its 7x7 windows itself). MaxViT-T partitions each of its
four stages (input / 4 .. input / 32) into 7x7 windows and grids, so its input is a multiple
of 224: 224.

usage: families.py WORKDIR [FAMILY...] [--build DIR] [--reuse] [--gelu-tanh]
(--reuse: keep an existing MODEL.onnx; --gelu-tanh: the diagnostic above, in build())"""
import os
import re
import subprocess
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo  # noqa: E402

# family: (torchvision builder, input size, extra keyword arguments)
FAMILIES = [
    ("alexnet", "alexnet", 224, {}),
    ("vgg", "vgg11", 64, {}),
    ("resnet", "resnet18", 64, {}),
    ("resnext", "resnext50_32x4d", 64, {}),
    ("wide_resnet", "wide_resnet50_2", 64, {}),
    ("squeezenet", "squeezenet1_1", 64, {}),
    ("densenet", "densenet121", 64, {}),
    ("inception", "inception_v3", 75, {}),
    ("googlenet", "googlenet", 64, {}),
    ("mobilenet_v2", "mobilenet_v2", 64, {}),
    ("mobilenet_v3", "mobilenet_v3_small", 64, {}),
    ("mnasnet", "mnasnet0_5", 64, {}),
    ("shufflenet_v2", "shufflenet_v2_x0_5", 64, {}),
    ("efficientnet", "efficientnet_b0", 64, {}),
    ("efficientnet_v2", "efficientnet_v2_s", 64, {}),
    ("regnet", "regnet_y_400mf", 64, {}),
    ("convnext", "convnext_tiny", 64, {}),
    ("swin", "swin_t", 64, {}),
    ("vit", "vit_b_16", 64, {"image_size": 64}),
    ("maxvit", "maxvit_t", 224, {}),
]


def build(name, size, kw, gelu_tanh=False):
    """torchvision's NAME (seed 0, random weights, eval mode); VGG in zoo.py's 64x64 form.
    gelu_tanh (--gelu-tanh, a diagnostic, not torchvision's model): every nn.GELU made
    GELU(approximate='tanh'), which compiles (`vop gelu`), to see what a family hits after
    the exact GELU's Erf."""
    if name.startswith("vgg"):
        return zoo.build(name, size, calibrate=False)
    torch.manual_seed(0)
    m = getattr(torchvision.models, name)(weights=None, **kw)
    if gelu_tanh:
        for mod in m.modules():
            if isinstance(mod, torch.nn.GELU):
                mod.approximate = "tanh"
    return m.eval()


def export(name, size, kw, path, gelu_tanh=False):
    """NAME at SIZE x SIZE (batch 1) to PATH at opset 14; the error's last line if it fails."""
    try:
        m = build(name, size, kw, gelu_tanh)
        # not under no_grad: there nn.MultiheadAttention takes its fused fast path
        # (aten::_native_multi_head_attention), which torch 1.13 cannot export
        torch.onnx.export(m, torch.rand(1, 3, size, size), path, opset_version=14,
                          input_names=["x"], output_names=["y"])
    except Exception as e:  # noqa: BLE001 (the census reports any export failure)
        return "export failed: " + (str(e).strip().splitlines() or [type(e).__name__])[-1][:160]
    return None


def compile_one(tools, path):
    """(ok, text): the instruction count from the report, or the refusal's last line."""
    p = subprocess.run([os.path.join(tools, "tpu-compile"), path, "--report-only", "--mxu", "64",
                        "--cores", "1", "--imem-insns", "32768"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.stdout.strip().splitlines()
    if p.returncode != 0:
        return False, (out[-1] if out else "exit %d" % p.returncode)[:200]
    m = re.search(r"program (\d+) instructions", p.stdout)
    return True, "compiles (%s instructions)" % (m.group(1) if m else "?")


def main():
    args = sys.argv[1:]
    tools = os.path.join(os.environ.get("BUILD", "build"), "tools")
    if "--build" in args:
        i = args.index("--build")
        tools = os.path.join(args[i + 1], "tools")
        del args[i:i + 2]
    reuse = "--reuse" in args
    gelu_tanh = "--gelu-tanh" in args
    args = [a for a in args if a not in ("--reuse", "--gelu-tanh")]
    work, only = args[0], set(args[1:])
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(1)
    rows = []
    for fam, name, size, kw in FAMILIES:
        if only and fam not in only and name not in only:
            continue
        path = os.path.join(work, name + ".onnx")
        err = None
        if not (reuse and os.path.exists(path)):
            err = export(name, size, kw, path, gelu_tanh)
        ok, text = (False, err) if err else compile_one(tools, path)
        rows.append((fam, name, size, ok, text))
        print("%-16s %-20s %4d  %s  %s" % (fam, name, size, "yes" if ok else "NO ", text),
              flush=True)
    n = sum(1 for r in rows if r[3])
    print("families: %d of %d compile" % (n, len(rows)))


if __name__ == "__main__":
    main()
