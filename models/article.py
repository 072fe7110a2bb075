# SPDX-License-Identifier: Apache-2.0
"""The three Keras models the article trains on a TPU v2-8 (5 Flowers classes, 192x192x3, batch
128), in PyTorch, layer for layer as keras.applications builds them with weights=None,
include_top=True:

  vgg19        tf.keras.applications.VGG19(weights=None, input_shape=[192, 192, 3], classes=5)
  resnet152v2  tf.keras.applications.ResNet152V2(...)   (the same arguments)
  xception     tf.keras.applications.Xception(...)

What is Keras' and kept here: kernel sizes, strides, the use_bias flags, Keras 'same' padding
(its split puts the odd pixel after: Xception's stride-2 MaxPools on 24 and 12 pixels pad 0
before and 1 after, which is torch's ceil_mode; on 93 and 47 pixels 1 and 1), ResNetV2's explicit
ZeroPadding2D layers (nn.ZeroPad2d: before pool1 it is a zero pad, not MaxPool's -inf),
BatchNormalization's epsilon (ResNetV2 1.001e-5, Xception Keras' default 1e-3) and momentum
(Keras 0.99 = torch 0.01), the pooling, the tops (VGG19: Flatten, Dense 4096 + ReLU twice,
Dense + softmax; the others: GlobalAveragePooling2D, Dense + softmax) and Keras' initial
values (glorot_uniform kernels, zero biases, BatchNorm gamma 1, beta 0, moving mean 0,
moving variance 1). What differs: the layout is torch's NCHW, so VGG19's Flatten orders the
6x6x512 features channel-first where Keras' is channel-last (a fixed permutation of the first
Dense's 18,432 input rows: the same network up to that relabelling, the same counts); and the
random draws are torch's, not TensorFlow's.

Keras counts BatchNorm's moving mean and variance among a model's parameters (non-trainable);
keras_count() does the same (parameters + every BatchNorm's running_mean and running_var), and
KERAS_PARAMS holds Keras' totals at classes=5:
  VGG19        112,327,749 (the article's figure);
  ResNet152V2  58,341,893 = 60,380,648 (Keras' published total, 1000 classes) - 2,038,755;
  Xception     20,871,725 = 22,910,480 (published, 1000 classes) - 2,038,755;
where 2,038,755 = (2048 x 1000 + 1000) - (2048 x 5 + 5) is what the top's Dense on 2,048 pooled
features loses from 1000 classes to 5 (nothing else depends on the classes or, in these two, on
the input size). At 1000 classes the builders give the published totals themselves (and VGG19 at
224x224 Keras' 143,667,240): tests/article/check.py asserts all six.

Each model is stages (a named nn.Sequential; models/README.md lists their output shapes)
then a head ending in nn.Softmax; build(..., logits=True) leaves the Softmax out (what
`tpu-compile --train --logits` takes)."""
import collections
import math

import torch
import torch.nn as nn

NAMES = ("vgg19", "resnet152v2", "xception")
TOP_1000_TO_5 = (2048 * 1000 + 1000) - (2048 * 5 + 5)  # 2,038,755
KERAS_PARAMS = {
    "vgg19": 112_327_749,
    "resnet152v2": 60_380_648 - TOP_1000_TO_5,  # 58,341,893
    "xception": 22_910_480 - TOP_1000_TO_5,     # 20,871,725
}
KERAS_PARAMS_1000 = {"vgg19": 143_667_240, "resnet152v2": 60_380_648, "xception": 22_910_480}


class Net(nn.Module):
    """stages (nn.Sequential of named stages) then head; forward is head(stages(x))."""

    def __init__(self, stages, head):
        super().__init__()
        self.stages = nn.Sequential(collections.OrderedDict(stages))
        self.head = head

    def forward(self, x):
        return self.head(self.stages(x))


def keras_same_maxpool(size, k, s):
    """MaxPooling2D(k, strides=s, padding='same') on size x size pixels, and its output size.
    Keras pads total = max((out - 1) s + k - size, 0) with out = ceil(size / s), total // 2
    before and the rest after, with pixels no window takes (-inf). Equal pads are torch's
    padding; one more after is torch's ceil_mode, whose last window reaches exactly as far."""
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    before, after = total // 2, total - total // 2
    pool = nn.MaxPool2d(k, s, padding=before, ceil_mode=after > before)
    got = math.ceil((size + 2 * before - k) / s) + 1 if after > before else (size + 2 * before - k) // s + 1
    if after > before and (got - 1) * s >= size + before:
        got -= 1  # torch drops a last window that would start in the right padding
    if got != out:
        raise ValueError(f"MaxPool2D({k}, {s}, 'same') on {size} pixels: torch gives {got}, Keras {out}")
    return pool, out


# ---- VGG19 (keras.applications.vgg19) ----

def vgg19(size=192, classes=5):
    """Five blocks of 3x3 'same' Conv2D + bias + ReLU (2, 2, 4, 4, 4 of 64, 128, 256, 512, 512
    filters), each ending in MaxPooling2D(2, 2) 'valid'; Flatten, Dense 4096 + ReLU twice,
    Dense(classes) + softmax."""
    stages, cin = [], 3
    for b, (n, c) in enumerate(((2, 64), (2, 128), (4, 256), (4, 512), (4, 512)), 1):
        layers = []
        for _ in range(n):
            layers += [nn.Conv2d(cin, c, 3, padding=1), nn.ReLU()]
            cin = c
        layers.append(nn.MaxPool2d(2, 2))
        stages.append((f"block{b}", nn.Sequential(*layers)))
        size //= 2
    head = nn.Sequential(nn.Flatten(), nn.Linear(512 * size * size, 4096), nn.ReLU(),
                         nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, classes), nn.Softmax(dim=1))
    return Net(stages, head)


# ---- ResNet152V2 (keras.applications.resnet_v2, resnet.ResNet(preact=True, use_bias=True)) ----

def bn(c, eps):
    return nn.BatchNorm2d(c, eps=eps, momentum=0.01)


class Block2(nn.Module):
    """resnet.block2: preact = ReLU(BN(x)); shortcut = Conv2D(4f, 1, stride) + bias of preact
    (conv_shortcut), MaxPooling2D(1, stride) of x (stride > 1) or x; then Conv2D(f, 1) no bias,
    BN, ReLU, ZeroPadding2D(1), Conv2D(f, 3, stride) no bias, BN, ReLU, Conv2D(4f, 1) + bias;
    out = shortcut + that."""

    def __init__(self, cin, f, stride=1, conv_shortcut=False, eps=1.001e-5):
        super().__init__()
        self.preact_bn, self.preact_relu = bn(cin, eps), nn.ReLU()
        self.conv_shortcut = conv_shortcut
        if conv_shortcut:
            self.shortcut = nn.Conv2d(cin, 4 * f, 1, stride)
        else:
            self.shortcut = nn.MaxPool2d(1, stride) if stride > 1 else nn.Identity()
        self.body = nn.Sequential(
            nn.Conv2d(cin, f, 1, bias=False), bn(f, eps), nn.ReLU(),
            nn.ZeroPad2d(1), nn.Conv2d(f, f, 3, stride, bias=False), bn(f, eps), nn.ReLU(),
            nn.Conv2d(f, 4 * f, 1))

    def forward(self, x):
        p = self.preact_relu(self.preact_bn(x))
        return self.shortcut(p if self.conv_shortcut else x) + self.body(p)


def stack2(cin, f, blocks, stride1=2):
    """resnet.stack2: block 1 with a conv shortcut, blocks 2 .. n-1 plain, block n of stride1."""
    layers = [Block2(cin, f, conv_shortcut=True)]
    layers += [Block2(4 * f, f) for _ in range(2, blocks)]
    layers.append(Block2(4 * f, f, stride=stride1))
    return nn.Sequential(*layers)


def resnet152v2(size=192, classes=5):
    """ZeroPadding2D(3), Conv2D(64, 7, 2) + bias, ZeroPadding2D(1), MaxPooling2D(3, 2) 'valid';
    stack2 of 64 x 3, 128 x 8, 256 x 36 blocks (the last block of each stride 2) and 512 x 3
    (stride 1); post BN + ReLU; GlobalAveragePooling2D, Dense(classes) + softmax."""
    del size  # every layer's shape follows the input; nothing is sized by it
    stages = [
        ("conv1", nn.Sequential(nn.ZeroPad2d(3), nn.Conv2d(3, 64, 7, 2))),
        ("pool1", nn.Sequential(nn.ZeroPad2d(1), nn.MaxPool2d(3, 2))),
        ("conv2", stack2(64, 64, 3)),
        ("conv3", stack2(256, 128, 8)),
        ("conv4", stack2(512, 256, 36)),
        ("conv5", stack2(1024, 512, 3, stride1=1)),
        ("post", nn.Sequential(bn(2048, 1.001e-5), nn.ReLU())),
    ]
    head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, classes), nn.Softmax(dim=1))
    return Net(stages, head)


# ---- Xception (keras.applications.xception) ----

XEPS = 1e-3  # Keras BatchNormalization's default epsilon, which xception.py keeps


def sepconv(cin, cout):
    """SeparableConv2D(cout, 3, padding='same', use_bias=False): a 3x3 depthwise conv
    (depth_multiplier 1), then a 1x1 conv; no bias in either."""
    return nn.Sequential(nn.Conv2d(cin, cin, 3, padding=1, groups=cin, bias=False),
                         nn.Conv2d(cin, cout, 1, bias=False))


class XDown(nn.Module):
    """Entry-flow blocks 2-4 and block 13: residual = BN(Conv2D(c2, 1, strides 2, 'same', no
    bias)(x)); x = [ReLU], SepConv c1, BN, ReLU, SepConv c2, BN, MaxPooling2D(3, 2, 'same');
    out = x + residual. Block 2 has no ReLU first (its input is block 1's ReLU output)."""

    def __init__(self, cin, c1, c2, size, first_relu=True):
        super().__init__()
        self.residual = nn.Sequential(nn.Conv2d(cin, c2, 1, 2, bias=False), bn(c2, XEPS))
        pool, self.out_size = keras_same_maxpool(size, 3, 2)
        layers = [nn.ReLU()] if first_relu else []
        layers += [sepconv(cin, c1), bn(c1, XEPS), nn.ReLU(), sepconv(c1, c2), bn(c2, XEPS), pool]
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x) + self.residual(x)


class XMiddle(nn.Module):
    """Middle-flow blocks 5-12: three times ReLU, SepConv 728, BN; out = that + x."""

    def __init__(self, c=728):
        super().__init__()
        self.body = nn.Sequential(*[m for _ in range(3) for m in (nn.ReLU(), sepconv(c, c), bn(c, XEPS))])

    def forward(self, x):
        return self.body(x) + x


def xception(size=192, classes=5):
    """block1: Conv2D(32, 3, 2) 'valid', BN, ReLU, Conv2D(64, 3) 'valid', BN, ReLU (no biases);
    blocks 2, 3, 4 (128, 256, 728 filters) and 13 (728 then 1024) halve the size with a 'same'
    MaxPool and a strided 1x1 residual; blocks 5-12 the middle flow; block14: SepConv 1536, BN,
    ReLU, SepConv 2048, BN, ReLU; GlobalAveragePooling2D, Dense(classes) + softmax."""
    s = (size - 3) // 2 + 1 - 2  # block1's two 'valid' 3x3 convs, the first of stride 2
    stages = [("block1", nn.Sequential(nn.Conv2d(3, 32, 3, 2, bias=False), bn(32, XEPS), nn.ReLU(),
                                       nn.Conv2d(32, 64, 3, bias=False), bn(64, XEPS), nn.ReLU()))]
    cin = 64
    for b, c, first_relu in ((2, 128, False), (3, 256, True), (4, 728, True)):
        blk = XDown(cin, c, c, s, first_relu)
        stages.append((f"block{b}", blk))
        s, cin = blk.out_size, c
    stages += [(f"block{b}", XMiddle()) for b in range(5, 13)]
    stages.append(("block13", XDown(728, 728, 1024, s)))
    stages.append(("block14", nn.Sequential(sepconv(1024, 1536), bn(1536, XEPS), nn.ReLU(),
                                            sepconv(1536, 2048), bn(2048, XEPS), nn.ReLU())))
    head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, classes), nn.Softmax(dim=1))
    return Net(stages, head)


BUILDERS = {"vgg19": vgg19, "resnet152v2": resnet152v2, "xception": xception}


def keras_init(net):
    """Keras' initial values: glorot_uniform kernels (the limit sqrt(6 / (fan_in + fan_out))
    is the same for torch's depthwise layout, whose fans are Keras' swapped), zero biases;
    BatchNorm's are torch's defaults, which are Keras' (gamma 1, beta 0, mean 0, variance 1)."""
    for m in net.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return net


def build(name, size=192, classes=5, logits=False, seed=0, init=True):
    """NAME for size x size x 3 images and CLASSES classes, in eval mode; seed for the draws;
    logits: without the final Softmax; init=False keeps torch's default draws (faster, for
    counting)."""
    if name not in BUILDERS:
        raise ValueError(f"unknown model {name!r} (one of {', '.join(NAMES)})")
    torch.manual_seed(seed)
    net = BUILDERS[name](size, classes)
    if init:
        keras_init(net)
    if logits:
        net.head = net.head[:-1]
    return net.eval()


def keras_count(net):
    """Keras' count_params(): the parameters plus every BatchNorm's moving mean and variance;
    returned as (total, trainable, non-trainable)."""
    trainable = sum(p.numel() for p in net.parameters())
    stats = sum(m.running_mean.numel() + m.running_var.numel()
                for m in net.modules() if isinstance(m, nn.BatchNorm2d))
    return trainable + stats, trainable, stats


def stage_shapes(net, size):
    """[(stage name, (H, W, C))] for one size x size image, in Keras' HWC order."""
    out, x = [], torch.zeros(1, 3, size, size)
    with torch.no_grad():
        for name, stage in net.stages.named_children():
            x = stage(x)
            out.append((name, (x.shape[2], x.shape[3], x.shape[1])))
    return out


def export(name, path, size=192, classes=5, logits=False, seed=0):
    """NAME exported in eval mode as tests/zoo/zoo.py exports: input x [batch, 3, size, size],
    output y [batch, classes] (probabilities, or logits), dynamic batch, opset 14. The file is
    written under a temporary name and renamed, so PATH is whole or absent."""
    import os
    net = build(name, size, classes, logits, seed)
    tmp = path + ".tmp"
    try:
        torch.onnx.export(net, torch.zeros(1, 3, size, size), tmp, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, opset_version=14)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


USAGE = ("usage: article.py NAME OUT.onnx [--size S] [--classes K] [--logits] [--seed S] | "
         f"article.py --summary [--size S] [--classes K]; NAME one of {', '.join(NAMES)}; "
         "defaults --size 192 --classes 5 --seed 0")


def die(msg):
    """One line on stderr, exit 2; nothing is written."""
    import sys
    print(f"article.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return
    opts = {"--size": 192, "--classes": 5, "--seed": 0}
    pos, logits, i = [], False, 0
    while i < len(argv):
        a = argv[i]
        if a in opts:
            if i + 1 == len(argv):
                die(f"{a} needs an integer value")
            try:
                opts[a] = int(argv[i + 1])
            except ValueError:
                die(f"{a} {argv[i + 1]!r}: an integer is needed")
            i += 2
            continue
        if a == "--logits":
            logits = True
        elif a.startswith("-") and a != "--summary":
            die(f"unknown option {a!r} (--size, --classes, --seed, --logits, --summary)")
        else:
            pos.append(a)
        i += 1
    size, classes = opts["--size"], opts["--classes"]
    # Keras' own floor is 71x71 for Xception (32x32 for VGG19 and ResNetV2); 71 for all three here
    if not 71 <= size <= 4096:
        die(f"--size {size}: 71 .. 4096 allowed")
    if not 1 <= classes <= 1_000_000:
        die(f"--classes {classes}: 1 .. 1000000 allowed")
    if pos == ["--summary"]:
        for name in NAMES:
            net = build(name, size, classes, init=False)
            total, tr, st = keras_count(net)
            print(f"{name}: {total:,} parameters as Keras counts ({tr:,} trainable, {st:,} BatchNorm "
                  f"statistics); stages: " + ", ".join(f"{n} {h}x{w}x{c}" for n, (h, w, c) in stage_shapes(net, size)))
        return
    if len(pos) != 2:
        die(f"expected NAME OUT.onnx, got {' '.join(pos) or 'nothing'} ({USAGE})")
    if pos[0] not in NAMES:
        die(f"model {pos[0]!r}: one of {', '.join(NAMES)}")
    import os
    d = os.path.dirname(pos[1]) or "."
    if not os.path.isdir(d):
        die(f"{pos[1]}: the folder {d} does not exist")  # before minutes of building the model
    try:
        export(pos[0], pos[1], size, classes, logits, opts["--seed"])
    except OSError as e:
        die(f"{pos[1]}: {e.strerror or e}")


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
