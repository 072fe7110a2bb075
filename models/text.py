# SPDX-License-Identifier: Apache-2.0
"""The second tutorial's text classifier (Reuters newswire topics) in PyTorch, and the integer
token sequences it runs on here.

  Embedding(VOCAB, 7) -> Conv1D(64, 5, ReLU) -> MaxPool1D(2) -> Conv1D(32, 3, ReLU)
  -> MaxPool1D(2) -> Flatten -> Dense(46, softmax)

Reuters newswire has no Debian package, so the sequences are generated (`sequences`): each of
the 46 topics owns KEYS keyword tokens; a sequence of LENGTH tokens is drawn uniformly from
the vocabulary (token 0 is padding, never drawn) and 10 .. 20 of its positions are replaced by
keywords of its topic, so the topic is learnable from which tokens occur (the task a
bag-of-keywords detector solves, which the Conv1D / MaxPool stack can express). Fixed seeds:
the same sequences every time.

The model's input is int64 token ids [N, LENGTH] (ONNX: Gather on the embedding table, then a
Transpose to channels-first for the Conv1d), its output float32 [N, 46] probabilities.

usage: text.py OUT [--batch B] [--seed S] [--train N --val M]: writes OUT/text.onnx (random weights, torch.manual_seed
S), OUT/text_x.npy (int64 ids, B sequences), OUT/text_x32.npy (the same as int32), OUT/text_y.npy
(their topics), OUT/text_fp32.npy (PyTorch fp32 probabilities), OUT/text_bf16.npy (the same
network run by PyTorch in bfloat16); text_x1.npy, text_fp32_1.npy, text_bf16_1.npy: the first
sequence alone. --train/--val also write the training task of tpu-train: OUT/text_train_x.npy,
text_train_y.npy (N sequences, seed S + 2) and text_val_x.npy, text_val_y.npy (M, seed S + 3).
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn

VOCAB = 1000
LENGTH = 100
TOPICS = 46
KEYS = 4


class TextCNN(nn.Module):
    def __init__(self, vocab=VOCAB, length=LENGTH, topics=TOPICS):
        super().__init__()
        self.emb = nn.Embedding(vocab, 7)
        self.c1 = nn.Conv1d(7, 64, 5)
        self.p1 = nn.MaxPool1d(2)
        self.c2 = nn.Conv1d(64, 32, 3)
        self.p2 = nn.MaxPool1d(2)
        n = ((length - 4) // 2 - 2) // 2
        self.fc = nn.Linear(32 * n, topics)

    def logits(self, ids):
        x = self.emb(ids).transpose(1, 2)           # [N, L, 7] -> [N, 7, L]
        x = self.p1(torch.relu(self.c1(x)))
        x = self.p2(torch.relu(self.c2(x)))
        return self.fc(torch.flatten(x, 1))

    def forward(self, ids):
        return torch.softmax(self.logits(ids), dim=1)


def sequences(n, seed=0, vocab=VOCAB, length=LENGTH, topics=TOPICS):
    """n generated token sequences (int64 [n, length]) and their topics (int64 [n])."""
    rng = np.random.RandomState(seed)
    keys = np.random.RandomState(12345).permutation(np.arange(1, vocab))[:topics * KEYS]
    keys = keys.reshape(topics, KEYS)
    y = rng.randint(0, topics, n)
    x = rng.randint(1, vocab, (n, length))
    for i in range(n):
        k = rng.randint(10, 21)
        pos = rng.choice(length, k, replace=False)
        x[i, pos] = keys[y[i], rng.randint(0, KEYS, k)]
    return x.astype(np.int64), y.astype(np.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train", type=int, default=0)
    ap.add_argument("--val", type=int, default=0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    m = TextCNN().eval()
    x, y = sequences(a.batch, seed=a.seed + 1)
    xt = torch.from_numpy(x)
    torch.onnx.export(m, xt, os.path.join(a.out, "text.onnx"), input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    np.save(os.path.join(a.out, "text_x.npy"), x)
    np.save(os.path.join(a.out, "text_x32.npy"), x.astype(np.int32))
    np.save(os.path.join(a.out, "text_y.npy"), y)
    np.save(os.path.join(a.out, "text_x1.npy"), x[:1])
    for name, n, sd in (("train", a.train, a.seed + 2), ("val", a.val, a.seed + 3)):
        if n:
            xs, ys = sequences(n, seed=sd)
            np.save(os.path.join(a.out, f"text_{name}_x.npy"), xs)
            np.save(os.path.join(a.out, f"text_{name}_y.npy"), ys)
    with torch.no_grad():
        np.save(os.path.join(a.out, "text_fp32.npy"), m(xt).numpy())
        np.save(os.path.join(a.out, "text_fp32_1.npy"), m(xt[:1]).numpy())
        mb = m.to(torch.bfloat16)
        np.save(os.path.join(a.out, "text_bf16.npy"), mb(xt).float().numpy())
        np.save(os.path.join(a.out, "text_bf16_1.npy"), mb(xt[:1]).float().numpy())


if __name__ == "__main__":
    main()
