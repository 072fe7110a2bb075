# SPDX-License-Identifier: Apache-2.0
"""Fashion-MNIST from its IDX files (Debian's dataset-fashion-mnist package).

The IDX format (http://yann.lecun.com/exdb/mnist/): a big-endian header of two zero bytes,
a type byte (0x08 = unsigned byte), a dimension count, one 32-bit big-endian size per
dimension, then the data in C order. The files here are gzip-compressed.

    images(split) -> float32 [N, 1, 28, 28], pixel / 255.0
    labels(split) -> int64   [N], 0 .. 9
"""
import gzip
import os

import numpy as np

DATA_DIR = os.environ.get("FMNIST_DIR", "/usr/share/datasets/fashion-mnist")
SPLITS = {"train": "train", "test": "t10k"}
CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")


class IdxError(Exception):
    pass


def read_idx(path):
    """Returns the IDX file's unsigned-byte array with its shape; IdxError if malformed."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as e:
        raise IdxError(f"{path}: cannot read: {e}") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise IdxError(f"{path}: not an IDX file (bad magic)")
    if raw[2] != 0x08:
        raise IdxError(f"{path}: IDX element type 0x{raw[2]:02x}, only 0x08 (ubyte) is supported")
    ndim = raw[3]
    if ndim < 1 or len(raw) < 4 + 4 * ndim:
        raise IdxError(f"{path}: truncated IDX header")
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    count = int(np.prod(shape, dtype=np.int64))
    body = raw[4 + 4 * ndim:]
    if len(body) != count:
        raise IdxError(f"{path}: {len(body)} data bytes, the header's shape {shape} needs {count}")
    return np.frombuffer(body, dtype=np.uint8).reshape(shape)


def _path(split, kind):
    if split not in SPLITS:
        raise IdxError(f"unknown split {split!r} (train or test)")
    return os.path.join(DATA_DIR, f"{SPLITS[split]}-{kind}-ubyte.gz")


def images(split):
    a = read_idx(_path(split, "images-idx3"))
    if a.ndim != 3 or a.shape[1:] != (28, 28):
        raise IdxError(f"{split} images: shape {a.shape}, expected [N, 28, 28]")
    return (a.astype(np.float32) / np.float32(255.0)).reshape(-1, 1, 28, 28)


def labels(split):
    a = read_idx(_path(split, "labels-idx1"))
    if a.ndim != 1 or a.max(initial=0) > 9:
        raise IdxError(f"{split} labels: shape {a.shape} or values out of 0..9")
    return a.astype(np.int64)
