# SPDX-License-Identifier: Apache-2.0
"""test-article: models/article.py's three Keras models against Keras' own figures.

  check.py structure   the parameter counts as Keras counts them (parameters + BatchNorm's
                       moving mean and variance) at 5 classes and at Keras' published 1000,
                       the BatchNorm statistics alone, the layers (convs, depthwise convs,
                       biases, BatchNorms and their epsilon, the Dense layers), every stage's
                       output at 192x192, Keras 'same' MaxPools against an explicit -inf pad,
                       the softmax and --logits tops
  check.py macs NAME SIZE REPORT.json
                       the multiply-accumulates of one SIZE x SIZE image counted on the PyTorch
                       model (each Conv: output pixels x out channels x in channels per group x
                       kernel; each Linear: in x out) equal the total tpu-compile --report-only
                       reports for one image (--batch 1, one core): the exported graph is the
                       model, node for node

Every expected figure here is Keras' or derived below from Keras' layer arithmetic, never
taken from the code under test."""
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "models"))
import article  # noqa: E402

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


# Keras' totals (model.count_params(), BatchNorm statistics included). Published for
# keras.applications at 1000 classes: VGG19 143,667,240 (224x224), ResNet152V2 60,380,648,
# Xception 22,910,480. At 5 classes: VGG19 at 192x192 is the article's 112,327,749; the other
# two lose (2048 x 1000 + 1000) - (2048 x 5 + 5) = 2,038,755 in the top's Dense, their only
# layer that depends on the classes (GlobalAveragePooling makes the input size irrelevant).
TOP = (2048 * 1000 + 1000) - (2048 * 5 + 5)
COUNTS_5 = {"vgg19": 112_327_749, "resnet152v2": 60_380_648 - TOP, "xception": 22_910_480 - TOP}
COUNTS_1000 = {"vgg19": (224, 143_667_240), "resnet152v2": (192, 60_380_648), "xception": (192, 22_910_480)}


def resnet_bn_channels():
    """ResNet152V2's BatchNorm channels: each block2 has preact_bn(C_in), _1_bn(f), _2_bn(f);
    block 1 of a stack takes the previous stack's 4f (64 for the first), the rest 4f; post_bn 2048."""
    total, cin = 0, 64
    for f, blocks in ((64, 3), (128, 8), (256, 36), (512, 3)):
        total += cin + (blocks - 1) * 4 * f + blocks * 2 * f
        cin = 4 * f
    return total + 2048


def xception_bn_channels():
    """Xception's: block1 32 + 64; the four strided residuals 128, 256, 728, 1024; one per
    SeparableConv: blocks 2-4 (128, 128), (256, 256), (728, 728); 8 middle blocks x 3 x 728;
    block13 728, 1024; block14 1536, 2048."""
    return (32 + 64 + (128 + 256 + 728 + 1024) + 2 * (128 + 256 + 728) + 8 * 3 * 728
            + 728 + 1024 + 1536 + 2048)


# Every stage's output (H, W, C) at 192x192, from Keras' arithmetic: 'valid' k x k stride s
# gives floor((n - k) / s) + 1, 'same' stride s gives ceil(n / s), ZeroPadding2D(p) adds 2p.
STAGES_192 = {
    # five 'valid' 2x2/2 MaxPools: 192 / 2^5 = 6
    "vgg19": [("block1", (96, 96, 64)), ("block2", (48, 48, 128)), ("block3", (24, 24, 256)),
              ("block4", (12, 12, 512)), ("block5", (6, 6, 512))],
    # conv1: pad 3 -> 198, 7x7/2 -> 96; pool1: pad 1 -> 98, 3x3/2 -> 48; the last block of
    # conv2, conv3, conv4 halves it (pad 1, 3x3/2: 24, 12, 6), conv5 keeps 6
    "resnet152v2": [("conv1", (96, 96, 64)), ("pool1", (48, 48, 64)), ("conv2", (24, 24, 256)),
                    ("conv3", (12, 12, 512)), ("conv4", (6, 6, 1024)), ("conv5", (6, 6, 2048)),
                    ("post", (6, 6, 2048))],
    # block1: 3x3/2 valid -> 95, 3x3 valid -> 93; 'same' /2 pools: 47, 24, 12; block13 -> 6
    "xception": [("block1", (93, 93, 64)), ("block2", (47, 47, 128)), ("block3", (24, 24, 256)),
                 ("block4", (12, 12, 728))] + [(f"block{b}", (12, 12, 728)) for b in range(5, 13)]
                + [("block13", (6, 6, 1024)), ("block14", (6, 6, 2048))],
}


def layers(net):
    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
    return {
        "conv": sum(1 for m in convs if m.groups == 1),
        "depthwise": sum(1 for m in convs if m.groups > 1 and m.groups == m.in_channels == m.out_channels),
        "conv_bias": sum(1 for m in convs if m.bias is not None),
        "bn": [m.eps for m in net.modules() if isinstance(m, nn.BatchNorm2d)],
        "dense": [(m.in_features, m.out_features) for m in net.modules() if isinstance(m, nn.Linear)],
    }


def structure():
    torch.set_num_threads(1)
    nets = {n: article.build(n, 192, 5, init=False) for n in article.NAMES}
    for n, net in nets.items():
        total, trainable, stats = article.keras_count(net)
        check(total == COUNTS_5[n], f"{n} at 5 classes: {total:,} parameters as Keras counts (Keras: {COUNTS_5[n]:,})")
    check(article.keras_count(nets["vgg19"])[2] == 0, "vgg19: no BatchNorm statistics")
    for n, want in (("resnet152v2", 2 * resnet_bn_channels()), ("xception", 2 * xception_bn_channels())):
        got = article.keras_count(nets[n])[2]
        check(got == want, f"{n}: {got:,} BatchNorm statistics (moving mean + variance: {want:,})")
    for n, (size, want) in COUNTS_1000.items():
        got = article.keras_count(article.build(n, size, 1000, init=False))[0]
        check(got == want, f"{n} at 1000 classes, {size}x{size}: {got:,} (Keras' published {want:,})")

    # the layers: VGG19 16 convs with bias, Dense 18432 -> 4096 -> 4096 -> 5; ResNet152V2 155
    # convs (conv1, 3 in each of 50 blocks, 4 conv shortcuts), the biased ones conv1, the 4
    # shortcuts and the 50 _3_convs; 151 BatchNorms (3 per block + post_bn) of epsilon
    # 1.001e-5; Xception 2 + 4 residual + 34 pointwise convs, 34 depthwise, no biases, 40
    # BatchNorms (2 + 4 + 34) of Keras' default epsilon 1e-3
    want = {
        "vgg19": {"conv": 16, "depthwise": 0, "conv_bias": 16, "bn": [],
                  "dense": [(18432, 4096), (4096, 4096), (4096, 5)]},
        "resnet152v2": {"conv": 155, "depthwise": 0, "conv_bias": 55, "bn": [1.001e-5] * 151,
                        "dense": [(2048, 5)]},
        "xception": {"conv": 40, "depthwise": 34, "conv_bias": 0, "bn": [1e-3] * 40, "dense": [(2048, 5)]},
    }
    for n, net in nets.items():
        got = layers(net)
        for k, v in want[n].items():
            g = got[k]
            check(g == v, f"{n} {k}: {len(g) if isinstance(g, list) and k == 'bn' else g}"
                  + ("" if g == v else f" (Keras: {v})"))
        mom = {m.momentum for m in net.modules() if isinstance(m, nn.BatchNorm2d)}
        check(mom <= {0.01}, f"{n}: BatchNorm momentum {sorted(mom)} (Keras' 0.99 is torch's 0.01)")

    for n, net in nets.items():
        got = article.stage_shapes(net, 192)
        for (gn, gs), (wn, ws) in zip(got, STAGES_192[n]):
            check(gn == wn and tuple(gs) == ws, f"{n} {gn}: {'x'.join(map(str, gs))} (Keras: {wn} {'x'.join(map(str, ws))})")
        check(len(got) == len(STAGES_192[n]), f"{n}: {len(got)} stages ({len(STAGES_192[n])})")

    # 'same' MaxPool: torch's pool against Keras' definition (pad total // 2 before, the rest
    # after, with -inf), on every size Xception meets and a few more, odd and even
    g = torch.Generator().manual_seed(1)
    for size in (5, 6, 12, 13, 24, 47, 93):
        pool, out = article.keras_same_maxpool(size, 3, 2)
        x = torch.randn(2, 3, size, size, generator=g) - 4  # mostly negative: a 0 pad would show
        o = -(-size // 2)
        tot = max((o - 1) * 2 + 3 - size, 0)
        ref = F.max_pool2d(F.pad(x, (tot // 2, tot - tot // 2) * 2, value=float("-inf")), 3, 2)
        y = pool(x)
        check(out == o and y.shape == ref.shape and torch.equal(y, ref),
              f"MaxPooling2D(3, 2, 'same') on {size}: {tuple(y.shape[2:])} (Keras {o}x{o}), values equal")
    # a pool that is not Keras' would fail: the symmetric pad 1 on 24 pixels shifts the windows
    x = torch.randn(1, 1, 24, 24, generator=g)
    ref = F.max_pool2d(F.pad(x, (0, 1, 0, 1), value=float("-inf")), 3, 2)
    check(not torch.equal(F.max_pool2d(x, 3, 2, padding=1), ref), "the -inf reference tells a shifted pool apart")

    # ResNetV2's pool1: ZeroPadding2D(1) then a 'valid' 3x3/2 MaxPool, so a pad pixel is 0,
    # not -inf (the input, conv1's output, has no ReLU before it: negative windows see the 0)
    x = torch.randn(1, 64, 96, 96, generator=g) - 2
    y = nets["resnet152v2"].stages.pool1(x)
    ref = F.max_pool2d(F.pad(x, (1, 1, 1, 1), value=0.0), 3, 2)
    check(torch.equal(y, ref) and not torch.equal(y, F.max_pool2d(x, 3, 2, padding=1)),
          "resnet152v2 pool1: ZeroPadding2D(1) + MaxPooling2D(3, 2): zeros, not -inf, in the windows")

    # the tops: probabilities (Keras' softmax) or, with logits=True, their logits
    x = torch.rand(2, 3, 71, 71, generator=g)
    net = article.build("xception", 71, 5, seed=3)
    lnet = article.build("xception", 71, 5, logits=True, seed=3)
    with torch.no_grad():
        p, z = net(x), lnet(x)
    check(p.shape == (2, 5) and torch.allclose(p.sum(1), torch.ones(2)), "xception: softmax over 5 classes")
    check(torch.allclose(torch.softmax(z, 1), p, atol=1e-6), "xception --logits: the same network without the softmax")
    return not failures


def conv_linear_macs(net, size):
    macs = []

    def conv(m, _, y):
        macs.append(y.shape[2] * y.shape[3] * m.out_channels * (m.in_channels // m.groups)
                    * m.kernel_size[0] * m.kernel_size[1])

    def lin(m, _, y):
        macs.append(m.in_features * m.out_features)
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            m.register_forward_hook(conv)
        elif isinstance(m, nn.Linear):
            m.register_forward_hook(lin)
    with torch.no_grad():
        net(torch.zeros(1, 3, size, size))
    return sum(macs), len(macs)


def macs(name, size, report):
    want, n = conv_linear_macs(article.build(name, size, 5, init=False), size)
    r = json.load(open(report))
    got = r["total"]["macs"]
    check(r["batch_per_core"] == 1, f"report of one image per core ({r['batch_per_core']})")
    check(got == want, f"{name} at {size}x{size}: tpu-compile counts {got:,} MACs per image, "
          f"the PyTorch model's {n} Conv/Linear layers {want:,}")
    return not failures


if __name__ == "__main__":
    if sys.argv[1:] == ["structure"]:
        ok = structure()
    elif len(sys.argv) == 5 and sys.argv[1] == "macs":
        ok = macs(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        sys.exit("usage: check.py structure | check.py macs NAME SIZE REPORT.json")
    print(f"{'PASS' if ok else 'FAIL'}: {len(failures)} failure(s)")
    sys.exit(0 if ok else 1)
