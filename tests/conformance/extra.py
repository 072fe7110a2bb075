# SPDX-License-Identifier: Apache-2.0
"""Node tests in the ONNX backend-test format for what libonnx-testdata (ONNX 1.12) has no test
of: grouped Conv (group > 1 that is not depthwise; Debian's set has group 1 only) and Gather as
an embedding lookup (its Gather tests gather a float input by constant indices; an embedding
gathers a constant table by the integer graph input). Same layout as
/usr/share/libonnx-testdata/data/node: TEST/model.onnx, TEST/test_data_set_0/input_<i>.pb,
output_0.pb; the graph's first input is the one the runner keeps as the input (the others
become initializers). Expected outputs: PyTorch's float32 conv (torch.nn.functional.conv1d /
conv2d with groups) and numpy's take, so the runner's own reference (refops.py) is checked
against a computation it did not write, as with ONNX's tests.

usage: extra.py OUTDIR   (writes OUTDIR/test_*; the same bytes every time)
"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1]
rng = np.random.RandomState(7)


def save(name, nodes, inputs, arrays, out_name, out_arr, opset):
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    vis = []
    for (nm, arr) in zip(inputs, arrays):
        et = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
              np.dtype(np.int32): TensorProto.INT32}[arr.dtype]
        vis.append(helper.make_tensor_value_info(nm, et, list(arr.shape)))
    yv = helper.make_tensor_value_info(out_name, TensorProto.FLOAT, list(out_arr.shape))
    g = helper.make_graph(nodes, name, vis, [yv])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="tests/conformance/extra.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, arr in enumerate(arrays):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(arr, inputs[i]).SerializeToString())
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(out_arr.astype(np.float32), out_name).SerializeToString())


def conv_test(name, xs, ws, group, bias=True, **at):
    x = rng.randn(*xs).astype(np.float32)
    w = (rng.randn(*ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32)
    b = rng.randn(ws[0]).astype(np.float32) if bias else None
    fn = torch.nn.functional.conv2d if len(xs) == 4 else torch.nn.functional.conv1d
    pads = at.get("pads")
    pad = pads[: len(xs) - 2] if pads else 0
    with torch.no_grad():
        y = fn(torch.from_numpy(x), torch.from_numpy(w), None if b is None else torch.from_numpy(b),
               stride=at.get("strides", 1), padding=pad, groups=group).numpy()
    ins = ["x", "w"] + (["b"] if bias else [])
    node = helper.make_node("Conv", ins, ["y"], group=group,
                            kernel_shape=list(ws[2:]), **at)
    save(name, [node], ins, [x, w] + ([b] if bias else []), "y", y, 11)


conv_test("test_conv_group2_pads", (1, 8, 7, 7), (12, 4, 3, 3), 2, pads=[1, 1, 1, 1])
conv_test("test_conv_group3_strides", (2, 12, 9, 9), (24, 4, 3, 3), 3, strides=[2, 2],
          pads=[1, 1, 1, 1])
conv_test("test_conv_group4_no_bias", (1, 16, 6, 6), (8, 4, 2, 2), 4, bias=False)
conv_test("test_conv_group_multiplier", (1, 4, 6, 6), (8, 1, 3, 3), 4)   # 1 -> 2 per group
conv_test("test_conv_group_wide", (1, 40, 5, 5), (24, 20, 3, 3), 2)      # 20 -> 12 per group
conv_test("test_conv_depthwise", (2, 6, 8, 8), (6, 1, 3, 3), 6, pads=[1, 1, 1, 1])
conv_test("test_conv1d_group4", (2, 8, 10), (8, 2, 3), 4, pads=[1, 1])

# embeddings: indices (the graph input, int64 or int32) into a float table (an initializer)
for name, dt, neg, transpose in (("test_gather_embedding", np.int64, False, False),
                                 ("test_gather_embedding_int32_negative", np.int32, True, False),
                                 ("test_gather_embedding_transpose", np.int64, False, True)):
    V, D = 11, 5
    table = rng.randn(V, D).astype(np.float32)
    ids = rng.randint(-V if neg else 0, V, (3, 6)).astype(dt)
    y = np.take(table, ids.astype(np.int64), axis=0)
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e" if transpose else "y"], axis=0)]
    if transpose:
        nodes.append(helper.make_node("Transpose", ["e"], ["y"], perm=[0, 2, 1]))
        y = y.transpose(0, 2, 1)
    save(name, nodes, ["ids", "table"], [ids, table], "y", np.ascontiguousarray(y), 13)
# Sub beyond libonnx's (whose first input is always the graph input minus a constant): a
# constant minus the activation, and two activations; HardSigmoid / HardSwish on a Conv output
# (its channels-last rows) and on a row wider than N; ReduceMean / ReduceSum over the last
# axis (libonnx's reduce tests reduce other axes or all of them). Expected: numpy / PyTorch.
x = rng.randn(3, 4, 5).astype(np.float32)
c = rng.randn(5).astype(np.float32)
save("test_sub_const_first", [helper.make_node("Sub", ["c", "x"], ["y"])], ["x", "c"], [x, c],
     "y", c - x, 14)
save("test_sub_two_activations", [helper.make_node("Relu", ["x"], ["r"]),
                                  helper.make_node("Sub", ["x", "r"], ["y"])],
     ["x"], [x], "y", x - np.maximum(x, 0), 14)
x = (3 * rng.randn(4, 37)).astype(np.float32)
with torch.no_grad():
    y = torch.nn.functional.hardswish(torch.from_numpy(x)).numpy()
save("test_hardswish_wide", [helper.make_node("HardSwish", ["x"], ["y"])], ["x"], [x], "y", y, 14)
for name, op in (("test_conv_hardsigmoid", "HardSigmoid"), ("test_conv_hardswish", "HardSwish")):
    x = rng.randn(2, 3, 7, 7).astype(np.float32)
    w = rng.randn(6, 3, 3, 3).astype(np.float32)
    with torch.no_grad():
        t = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1)
        y = (torch.nn.functional.hardsigmoid(t) if op == "HardSigmoid"
             else torch.nn.functional.hardswish(t)).numpy()
    at = {"alpha": 1.0 / 6.0} if op == "HardSigmoid" else {}
    save(name, [helper.make_node("Conv", ["x", "w"], ["t"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                helper.make_node(op, ["t"], ["y"], **at)], ["x", "w"], [x, w], "y", y, 14)
for name, op, shape, keep, opset in (("test_reduce_mean_last_axis", "ReduceMean", (2, 3, 37), 1, 13),
                                     ("test_reduce_mean_last_axis_do_not_keepdims", "ReduceMean", (3, 45, 20), 0, 13),
                                     ("test_reduce_sum_last_axis_input", "ReduceSum", (3, 45, 20), 0, 13),
                                     ("test_reduce_sum_last_axis_attr", "ReduceSum", (5, 9), 1, 11)):
    x = rng.randn(*shape).astype(np.float32)
    y = (x.astype(np.float64).mean if op == "ReduceMean" else x.astype(np.float64).sum)(
        axis=-1, keepdims=bool(keep)).astype(np.float32)
    if op == "ReduceSum" and opset >= 13:
        save(name, [helper.make_node(op, ["x", "axes"], ["y"], keepdims=keep)], ["x", "axes"],
             [x, np.array([-1], np.int64)], "y", y, opset)
    else:
        save(name, [helper.make_node(op, ["x"], ["y"], axes=[len(shape) - 1], keepdims=keep)],
             ["x"], [x], "y", y, opset)
# a chain of the new operators after a Linear layer (torch: Linear, hardswish, 0.25 - h, neg,
# hardsigmoid, mean over the last axis)
x = rng.randn(6, 16).astype(np.float32)
w = (rng.randn(12, 16) / 4).astype(np.float32)
b = rng.randn(12).astype(np.float32)
with torch.no_grad():
    t = torch.nn.functional.hardswish(torch.from_numpy(x) @ torch.from_numpy(w).T + torch.from_numpy(b))
    y = torch.nn.functional.hardsigmoid(-(0.25 - t)).mean(dim=-1, keepdim=True).numpy()
save("test_chain_new_ops", [helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1),
                            helper.make_node("HardSwish", ["g"], ["h"]),
                            helper.make_node("Sub", ["q", "h"], ["s"]),
                            helper.make_node("Neg", ["s"], ["n"]),
                            helper.make_node("HardSigmoid", ["n"], ["z"], alpha=1.0 / 6.0),
                            helper.make_node("ReduceMean", ["z"], ["y"], axes=[-1], keepdims=1)],
     ["x", "w", "b", "q"], [x, w, b, np.array([0.25], np.float32)], "y", y, 14)
# issue 32's operators: LayerNormalization with only its Y output (libonnx's tests all have
# three outputs, Mean and InvStdDev too), Softmax and reductions over a middle axis, Div, Sqrt,
# Pow, Exp. Expected: PyTorch's float32 layer_norm / softmax / ops, numpy's float64 reductions.
for name, shape, axis, eps, bias in (("test_layer_normalization_y_3d_axis2", (2, 3, 37), 2, 1e-5, True),
                                     ("test_layer_normalization_y_3d_axis1_epsilon", (3, 4, 5), 1, 0.1, True),
                                     ("test_layer_normalization_y_2d_no_bias", (4, 64), 1, 1e-5, False)):
    x = (2 * rng.randn(*shape) + 0.5).astype(np.float32)
    sc = rng.randn(*shape[axis:]).astype(np.float32)
    bb = rng.randn(*shape[axis:]).astype(np.float32)
    with torch.no_grad():
        y = torch.nn.functional.layer_norm(torch.from_numpy(x), shape[axis:], torch.from_numpy(sc),
                                           torch.from_numpy(bb) if bias else None, eps).numpy()
    ins, arrs = (["x", "s", "b"], [x, sc, bb]) if bias else (["x", "s"], [x, sc])
    save(name, [helper.make_node("LayerNormalization", ins, ["y"], axis=axis, epsilon=eps)],
         ins, arrs, "y", y, 17)
for name, shape, axis in (("test_softmax_middle_axis_wide", (2, 7, 37), 1),
                          ("test_softmax_middle_axis_4d", (2, 5, 3, 9), 1),
                          ("test_softmax_axis2_of_4d", (2, 3, 6, 5), 2)):
    x = (3 * rng.randn(*shape)).astype(np.float32)
    with torch.no_grad():
        y = torch.softmax(torch.from_numpy(x), dim=axis).numpy()
    save(name, [helper.make_node("Softmax", ["x"], ["y"], axis=axis)], ["x"], [x], "y", y, 13)
for name, op, shape, axes, keep in (("test_reduce_max_middle_axis", "ReduceMax", (3, 6, 37), [1], 1),
                                    ("test_reduce_mean_axes_1_2", "ReduceMean", (2, 3, 4, 37), [1, 2], 0),
                                    ("test_reduce_sum_axes_2_3", "ReduceSum", (2, 3, 4, 9), [2, 3], 1),
                                    ("test_reduce_max_last_axis_wide", "ReduceMax", (5, 41), [-1], 0)):
    x = rng.randn(*shape).astype(np.float32)
    f = {"ReduceMax": np.max, "ReduceMean": np.mean, "ReduceSum": np.sum}[op]
    y = f(x.astype(np.float64), axis=tuple(axes), keepdims=bool(keep)).astype(np.float32)
    if op == "ReduceSum":
        save(name, [helper.make_node(op, ["x", "axes"], ["y"], keepdims=keep)], ["x", "axes"],
             [x, np.array(axes, np.int64)], "y", y, 13)
    else:
        save(name, [helper.make_node(op, ["x"], ["y"], axes=axes, keepdims=keep)], ["x"], [x], "y", y, 13)
x = rng.randn(5, 23).astype(np.float32)
with torch.no_grad():
    t = torch.from_numpy(x)
    y_div = (t / torch.exp(t)).numpy()
    y_rdiv = (np.float32(2.5) / torch.sigmoid(t)).numpy()
    y_sq = torch.sqrt(torch.relu(t)).numpy()
    y_pow = (torch.relu(t) ** 0.5 + t ** 2).numpy()
save("test_div_two_activations", [helper.make_node("Exp", ["x"], ["e"]),
                                  helper.make_node("Div", ["x", "e"], ["y"])], ["x"], [x], "y", y_div, 14)
save("test_div_const_first", [helper.make_node("Sigmoid", ["x"], ["s"]),
                              helper.make_node("Div", ["c", "s"], ["y"])],
     ["x", "c"], [x, np.array([2.5], np.float32)], "y", y_rdiv, 14)
save("test_sqrt_of_relu", [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Sqrt", ["r"], ["y"])],
     ["x"], [x], "y", y_sq, 14)
save("test_pow_half_and_square", [helper.make_node("Relu", ["x"], ["r"]),
                                  helper.make_node("Pow", ["r", "h"], ["p"]),
                                  helper.make_node("Pow", ["x", "two"], ["q"]),
                                  helper.make_node("Add", ["p", "q"], ["y"])],
     ["x", "h", "two"], [x, np.array(0.5, np.float32), np.array(2.0, np.float32)], "y", y_pow, 15)
# [.., F] with [.., 1] outside the LayerNorm pattern (the column broadcast on the MXU)
x = (2 * rng.randn(3, 5, 37)).astype(np.float32)
with torch.no_grad():
    t = torch.from_numpy(x)
    y_c = torch.relu(t - t.mean(dim=-1, keepdim=True)).numpy()
    y_s = (torch.exp(t) / torch.exp(t).sum(dim=-1, keepdim=True)).numpy()
    y_m = (t.amax(dim=-1, keepdim=True) - t).numpy()
    y_q = (t.mean(dim=-1, keepdim=True) / torch.sigmoid(t)).numpy()
save("test_sub_row_mean_relu", [helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1], keepdims=1),
                                helper.make_node("Sub", ["x", "m"], ["d"]),
                                helper.make_node("Relu", ["d"], ["y"])], ["x"], [x], "y", y_c, 13)
save("test_div_by_row_sum", [helper.make_node("Exp", ["x"], ["e"]),
                             helper.make_node("ReduceSum", ["e", "axes"], ["s"], keepdims=1),
                             helper.make_node("Div", ["e", "s"], ["y"])],
     ["x", "axes"], [x, np.array([-1], np.int64)], "y", y_s, 13)
save("test_row_max_minus_x", [helper.make_node("ReduceMax", ["x"], ["m"], axes=[-1], keepdims=1),
                              helper.make_node("Sub", ["m", "x"], ["y"])], ["x"], [x], "y", y_m, 13)
save("test_row_mean_div_sigmoid", [helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1], keepdims=1),
                                   helper.make_node("Sigmoid", ["x"], ["g"]),
                                   helper.make_node("Div", ["m", "g"], ["y"])], ["x"], [x], "y", y_q, 13)
# Einsum (issue 32, fold_einsum.c): float32 forms of ONNX's float64 tests
# (test_einsum_batch_matmul, test_einsum_transpose) and the equations attention writes: as
# node tests the second operand becomes a constant (a Gemm against it / batched weights)
for name, eq, sa, sb in (("test_einsum_batch_matmul_f32", "bij, bjk -> bik", (5, 2, 3), (5, 3, 4)),
                         ("test_einsum_transpose_f32", "ij->ji", (3, 4), None),
                         ("test_einsum_qk_f32", "bhqd,bhkd->bhqk", (2, 3, 5, 8), (2, 3, 6, 8)),
                         ("test_einsum_maxvit_pv_f32", "B G H I J, B G H J D -> B G H I D",
                          (1, 2, 2, 7, 7), (1, 2, 2, 7, 9)),
                         ("test_einsum_const_first_f32", "ik,bkj->bij", (6, 5), (4, 5, 3))):
    arrs = [rng.randn(*sa).astype(np.float32)] + ([rng.randn(*sb).astype(np.float32)] if sb else [])
    if name == "test_einsum_const_first_f32":  # the graph input second: the operands swap
        arrs = arrs[::-1]
        ins = ["y", "x"]
        y = torch.einsum(eq, torch.from_numpy(arrs[1]), torch.from_numpy(arrs[0])).numpy()
        save(name, [helper.make_node("Einsum", ["x", "y"], ["z"], equation=eq)], ins, arrs, "z", y, 12)
        continue
    ins = ["x", "y"][:len(arrs)]
    y = torch.einsum(eq, *[torch.from_numpy(a) for a in arrs]).numpy()
    save(name, [helper.make_node("Einsum", ins, ["z"], equation=eq)], ins, arrs, "z", y, 12)
print("extra node tests written to", OUT)
