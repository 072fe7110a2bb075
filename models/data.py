# SPDX-License-Identifier: Apache-2.0
"""The test set as .npy files, and the first rows of a .npy file.

usage: /usr/bin/python3 models/data.py testset OUTDIR
         writes OUTDIR/test_x.npy (float32 [10000, 1, 28, 28], pixel / 255) and
         OUTDIR/test_y.npy (int64 [10000]) from the Fashion-MNIST t10k IDX files
       /usr/bin/python3 models/data.py head IN.npy OUT.npy K
         writes IN's first K rows (axis 0) to OUT.npy, same dtype
"""
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fmnist  # noqa: E402


def save(path, a):
    tmp = path + ".tmp.npy"
    np.save(tmp, np.ascontiguousarray(a))
    os.replace(tmp, path)


def main(argv):
    if len(argv) == 3 and argv[1] == "testset":
        try:
            x, y = fmnist.images("test"), fmnist.labels("test")
        except fmnist.IdxError as e:
            sys.exit(f"data: error: {e}")
        os.makedirs(argv[2], exist_ok=True)
        save(os.path.join(argv[2], "test_y.npy"), y)
        save(os.path.join(argv[2], "test_x.npy"), x)
        return 0
    if len(argv) == 5 and argv[1] == "head":
        try:
            k = int(argv[4])
            a = np.load(argv[2], allow_pickle=False)
        except (ValueError, OSError) as e:
            sys.exit(f"data: error: {argv[2]} or K {argv[4]!r}: {str(e).splitlines()[0]}")
        if a.ndim == 0 or not 0 < k <= a.shape[0]:
            sys.exit(f"data: error: {argv[2]}: shape {list(a.shape)} has no {k} first rows")
        save(argv[3], a[:k])
        return 0
    print("usage: data.py testset OUTDIR | data.py head IN.npy OUT.npy K", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
