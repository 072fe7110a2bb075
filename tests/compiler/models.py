# SPDX-License-Identifier: Apache-2.0
"""Writes the small models and inputs of test-compiler into OUT (deterministic: fixed seeds).

  net.onnx    Conv(stride 2, pad 1) + BatchNorm (folded) + ReLU, Conv(pad 1) + GELU(tanh),
              MaxPool(3, stride 2, pad 1), AvgPool(2), adaptive_avg_pool2d(1), Flatten, Gemm + Tanh
  mlp.onnx    Flatten, Linear(48, 40), ReLU, Linear(40, 10), Softmax  (dynamic batch)
  tiny.onnx   Conv(1 -> 4, 3x3, pad 1) + ReLU, MaxPool(2), Flatten, Linear(4*4*4, 5)  (RTL)
  chain, pools, poolpad, user, grouped, grouped1d: see their classes
  bad/*.onnx  models the compiler must refuse with one line (see run.sh)
with PyTorch's fp32 outputs (<name>_ref.npy) for the inputs (<name>_x.npy).
usage: models.py OUT"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(os.path.join(out, "bad"), exist_ok=True)
torch.manual_seed(0)
torch.set_num_threads(1)


class Net(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.c1 = torch.nn.Conv2d(3, 12, 3, stride=2, padding=1)
        s.bn = torch.nn.BatchNorm2d(12)
        s.c2 = torch.nn.Conv2d(12, 20, 3, padding=1)
        s.mp = torch.nn.MaxPool2d(3, 2, padding=1)
        s.ap = torch.nn.AvgPool2d(2, 2)
        s.fc = torch.nn.Linear(20, 7)

    def forward(s, x):
        x = torch.relu(s.bn(s.c1(x)))
        x = torch.nn.functional.gelu(s.c2(x), approximate="tanh")
        x = s.ap(s.mp(x))
        x = torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return torch.tanh(s.fc(x))


class MLP(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.l1 = torch.nn.Linear(48, 40)
        s.l2 = torch.nn.Linear(40, 10)

    def forward(s, x):
        return torch.softmax(s.l2(torch.relu(s.l1(torch.flatten(x, 1)))), dim=1)


class Chain(torch.nn.Module):
    """Gemm -> Gemm -> Gemm: each output read only by the next Gemm, kept on chip (the middle
    one both reads and writes UB rows; one without bias or activation)."""
    def __init__(s):
        super().__init__()
        s.l1 = torch.nn.Linear(48, 64)
        s.l2 = torch.nn.Linear(64, 32, bias=False)
        s.l3 = torch.nn.Linear(32, 24)

    def forward(s, x):
        return torch.tanh(s.l3(s.l2(torch.relu(s.l1(torch.flatten(x, 1))))))


class Tiny(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.c = torch.nn.Conv2d(1, 4, 3, padding=1)
        s.fc = torch.nn.Linear(4 * 4 * 4, 5)

    def forward(s, x):
        x = torch.nn.functional.max_pool2d(torch.relu(s.c(x)), 2)
        return s.fc(torch.flatten(x, 1))


class Pools(torch.nn.Module):
    """Conv+ReLU+MaxPool(2) and Conv+ReLU+MaxPool(3): both fused into the Conv; the second
    Conv reads the first's pooled output (pixels two rows apart)."""
    def __init__(s):
        super().__init__()
        s.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        s.c2 = torch.nn.Conv2d(8, 6, 3)
        s.fc = torch.nn.Linear(6 * 3 * 3, 5)

    def forward(s, x):
        x = torch.nn.functional.max_pool2d(torch.relu(s.c1(x)), 2)
        x = torch.nn.functional.max_pool2d(torch.relu(s.c2(x)), 3)
        return s.fc(torch.flatten(x, 1))


class PoolPad(torch.nn.Module):
    """The first Conv's pooled windows (IM2COL, grouped): a 3x3 MaxPool in floor mode (29 ->
    9, the last two rows and columns dropped) whose reader pads its input, so the pooled
    pixels are scattered into a clean buffer."""
    def __init__(s):
        super().__init__()
        s.c1 = torch.nn.Conv2d(3, 20, 3, padding=1)
        s.c2 = torch.nn.Conv2d(20, 8, 3, padding=1)
        s.fc = torch.nn.Linear(8 * 9 * 9, 5)

    def forward(s, x):
        x = torch.relu(torch.nn.functional.max_pool2d(s.c1(x), 3))
        x = torch.relu(s.c2(x))
        return s.fc(torch.flatten(x, 1))


class UserForward(torch.nn.Module):
    """What users write in forward(): F.relu6, F.adaptive_avg_pool2d, x * torch.sigmoid(x),
    x.view(x.size(0), -1) (exported as Shape -> Gather -> Unsqueeze -> Concat -> Reshape)."""
    def __init__(s):
        super().__init__()
        s.c = torch.nn.Conv2d(3, 8, 3)
        s.l = torch.nn.Linear(8 * 6 * 6, 5)

    def forward(s, x):
        x = torch.nn.functional.relu6(s.c(x))
        x = torch.nn.functional.adaptive_avg_pool2d(x, 6)
        x = x * torch.sigmoid(x)
        return s.l(x.view(x.size(0), -1))


class Grouped(torch.nn.Module):
    """Grouped convolutions (group > 1, not depthwise): channels per group below, at and above
    N, a stride-2 padded one, one with BatchNorm folded, one with its MaxPool fused, a 1x1."""
    def __init__(s):
        super().__init__()
        s.c1 = torch.nn.Conv2d(8, 12, 3, padding=1, groups=2)      # 4 -> 6 per group
        s.bn = torch.nn.BatchNorm2d(12)
        s.c2 = torch.nn.Conv2d(12, 24, 3, stride=2, padding=1, groups=3)  # 4 -> 8
        s.c3 = torch.nn.Conv2d(24, 24, 2, groups=4)                 # 6 -> 6, then MaxPool 2
        s.c4 = torch.nn.Conv2d(24, 48, 1, groups=8)                 # 3 -> 6
        s.c5 = torch.nn.Conv2d(48, 32, 3, padding=1, groups=2)      # 24 -> 16
        s.l = torch.nn.Linear(32, 7)

    def forward(s, x):
        x = torch.relu(s.bn(s.c1(x)))
        x = torch.relu(s.c2(x))
        x = torch.nn.functional.max_pool2d(torch.relu(s.c3(x)), 2)
        x = s.c5(torch.relu(s.c4(x)))
        return s.l(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


class Grouped1d(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.c1 = torch.nn.Conv1d(6, 12, 3, groups=3)
        s.c2 = torch.nn.Conv1d(12, 8, 3, padding=1, groups=2)
        s.l = torch.nn.Linear(8 * 14, 5)

    def forward(s, x):
        return s.l(torch.flatten(s.c2(torch.relu(s.c1(x))), 1))


class Residual(torch.nn.Module):
    """ResNet's shape at small size, for host-buffer reuse: a stem Conv + padded MaxPool (a
    -Inf filled buffer), three identity blocks of two padded 3x3 Convs (activations of one
    geometry, dead after the block, the same buffers taken again), a strided 1x1 downsample,
    a global average and a Linear."""
    def __init__(s):
        super().__init__()
        s.stem = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        s.b = torch.nn.ModuleList(torch.nn.Conv2d(8, 8, 3, padding=1) for _ in range(6))
        s.down = torch.nn.Conv2d(8, 16, 1, stride=2)
        s.c = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        s.l = torch.nn.Linear(16, 5)

    def forward(s, x):
        x = torch.nn.functional.max_pool2d(torch.relu(s.stem(x)), 3, 2, 1)
        for i in range(3):
            x = torch.relu(x + s.b[2 * i + 1](torch.relu(s.b[2 * i](x))))
        x = torch.relu(s.down(x) + s.c(x))
        return s.l(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


class Strided(torch.nn.Module):
    """Strided Convs and a strided MaxPool read by 1x1 Convs (no padding): their r-space outputs
    are half dropped rows, written densely unless --no-dense; the stride-2 Conv on 19 valid
    output pixels a row runs on its valid rows (one matmul per output row)."""
    def __init__(s):
        super().__init__()
        s.c0 = torch.nn.Conv2d(3, 8, 3, padding=1)
        s.c1 = torch.nn.Conv2d(8, 8, 3, stride=2)
        s.c2 = torch.nn.Conv2d(8, 12, 1)
        s.c3 = torch.nn.Conv2d(12, 12, 1)
        s.l = torch.nn.Linear(12, 5)

    def forward(s, x):
        x = torch.relu(s.c1(torch.relu(s.c0(x))))
        x = torch.relu(s.c2(x))
        x = torch.relu(s.c3(torch.nn.functional.max_pool2d(x, 3, 2)))
        return s.l(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


def export(m, x, name):
    m.eval()
    torch.onnx.export(m, x, os.path.join(out, name + ".onnx"), opset_version=14,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    np.save(os.path.join(out, name + "_x.npy"), x.numpy())
    with torch.no_grad():
        np.save(os.path.join(out, name + "_ref.npy"), m(x).numpy())


net = Net()
net.bn.running_mean.uniform_(-1, 1)
net.bn.running_var.uniform_(0.5, 2)
export(net, torch.randn(6, 3, 17, 19), "net")
export(MLP(), torch.rand(10, 3, 4, 4), "mlp")
export(Chain(), torch.randn(64, 3, 4, 4), "chain")
export(Tiny(), torch.rand(4, 1, 8, 8), "tiny")
export(Pools(), torch.randn(3, 3, 22, 22), "pools")
export(UserForward(), torch.rand(4, 3, 8, 8), "user")
export(PoolPad(), torch.randn(3, 3, 29, 29), "poolpad")
grouped = Grouped()
grouped.bn.running_mean.uniform_(-0.5, 0.5)
grouped.bn.running_var.uniform_(0.5, 2)
export(grouped, torch.randn(4, 8, 14, 14), "grouped")
export(Grouped1d(), torch.randn(4, 6, 16), "grouped1d")
export(Residual(), torch.randn(3, 3, 30, 30), "residual")
export(Strided(), torch.randn(3, 3, 40, 40), "strided")


def model(nodes, inits, inp, outp, opset=14):
    g = helper.make_graph(nodes, "g", inp, outp, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


X = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
W = helper.make_tensor("w", TensorProto.FLOAT, [4, 4], np.ones(16, np.float32))
gemm = helper.make_node("Gemm", ["x", "w"], ["y"], name="fc")
good = model([gemm], [W], [X], [Y])
onnx.save(good, os.path.join(out, "bad", "good.onnx"))
raw = good.SerializeToString()
with open(os.path.join(out, "bad", "truncated.onnx"), "wb") as f:
    f.write(raw[: len(raw) // 2])
with open(os.path.join(out, "bad", "garbage.onnx"), "wb") as f:
    f.write(bytes(np.random.RandomState(1).randint(0, 256, 3000, dtype=np.uint8)))
open(os.path.join(out, "bad", "empty.onnx"), "wb").close()
onnx.save(model([helper.make_node("Sin", ["x"], ["y"], name="e")], [], [X], [Y]),
          os.path.join(out, "bad", "unsupported_op.onnx"))
onnx.save(model([gemm], [W], [X], [Y], opset=18), os.path.join(out, "bad", "opset_new.onnx"))
onnx.save(model([gemm], [W], [X], [Y], opset=6), os.path.join(out, "bad", "opset_old.onnx"))
onnx.save(model([helper.make_node("Gemm", ["x", "w"], ["y"], name="fc", transA=1)], [W], [X], [Y]),
          os.path.join(out, "bad", "bad_attr.onnx"))
# absurd dimensions: an initializer claiming 2^40 elements with no data
big = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 20, 1 << 20])
onnx.save(model([gemm], [big], [X], [Y]), os.path.join(out, "bad", "absurd.onnx"))
ext = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 4])
ext.data_location = TensorProto.EXTERNAL
e = ext.external_data.add()
e.key, e.value = "location", "w.bin"
onnx.save(model([gemm], [ext], [X], [Y]), os.path.join(out, "bad", "external.onnx"))
X2 = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "feat"])
onnx.save(model([gemm], [W], [X2], [Y]), os.path.join(out, "bad", "dynamic_dim.onnx"))
np.save(os.path.join(out, "bad", "x_wrong.npy"), np.zeros((2, 5), np.float32))
np.save(os.path.join(out, "bad", "x_f64.npy"), np.zeros((2, 4), np.float64))
np.save(os.path.join(out, "bad", "x_ok.npy"), np.ones((2, 4), np.float32))
