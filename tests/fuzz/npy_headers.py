#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Differential test of the .npy header parser against numpy (issue 16 item 8): COUNT random
# headers built from the tokens a header is made of (keys, values, quotes, blanks, CR, LF,
# comments, commas, parentheses, 'L' suffixes, junk), each written as a version 1.0 file with
# enough data; the repository's reader (NPY_CHECK, tests/fuzz/npy_check.c) must never accept
# one numpy rejects, and must agree on dtype and shape when both accept.
# Usage: npy_headers.py NPY_CHECK COUNT SEED
import os, random, subprocess, sys, tempfile, io
import numpy as np

check, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
BL = [" ", "", "", "  ", "\t", "\n", "\r\n", "\r", "\x0c", " # c\n", "\\\n"]
def bl(): return rng.choice(BL) if rng.random() < 0.3 else rng.choice(["", " "])
def q(s):
    r = rng.random()
    if r < 0.45: return "'%s'" % s
    if r < 0.9: return '"%s"' % s
    return rng.choice(["'%s" % s, "%s'" % s, "'%s\"" % s, "u'%s'" % s, "b'%s'" % s, "'''%s'''" % s])
def num():
    r = rng.random()
    if r < 0.7: return str(rng.choice([0, 1, 2, 3, 4, 7, 16]))
    return rng.choice(["00", "02", "2L", "2l", "-1", "1_0", "0x2", "2.0", "True", "2 3", "+2", "4e0"])
def shape():
    n = rng.choice([0, 1, 1, 2, 2, 2, 3])
    items = [num() for _ in range(n)]
    s = "(" + bl() + ("," + bl()).join(items)
    if n == 1 and rng.random() < 0.8 or n > 1 and rng.random() < 0.3: s += ","
    s += bl() + ")"
    return rng.choice([s] * 9 + ["[" + ",".join(items) + "]", num()])
def value(k):
    if k == "descr": return q(rng.choice(["<u2", "<f4", "<u4", "u2", "<i2", ">u2", "descr", "|u1"]))
    if k == "fortran_order": return rng.choice(["False"] * 6 + ["True", "Falsey", "0", "false", "None"])
    return shape()
def header():
    keys = ["descr", "fortran_order", "shape"]
    if rng.random() < 0.1: keys.append(rng.choice(["descr", "x", "shape"]))
    if rng.random() < 0.05: keys.remove(rng.choice(keys))
    rng.shuffle(keys)
    parts = [bl() + q(k) + bl() + ":" + bl() + value(k) + bl() for k in keys]
    h = bl() + "{" + ",".join(parts) + ("," if rng.random() < 0.5 else "") + bl() + "}"
    h += rng.choice(["", "\n", " \n", "\r\n", "  \r  ", "\n\n", " # c\n", " junk", "}", "\n "])
    if rng.random() < 0.05:
        i = rng.randrange(len(h))
        h = h[:i] + rng.choice(["\x00", "\xe9", ",", "(", "'", ":", "#"]) + h[i:]
    return h

d = tempfile.mkdtemp(prefix="npy-headers-")
files = []
for i in range(count):
    hb = header().encode("latin1")
    p = os.path.join(d, "h%05d.npy" % i)
    with open(p, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(hb).to_bytes(2, "little") + hb + bytes(4 * 64))
    files.append(p)
ours = subprocess.run([check] + files, capture_output=True, text=True, check=True).stdout.split("\n")
bad = both = only_np = 0
for i, p in enumerate(files):
    try:
        a = np.load(p, allow_pickle=False)
        sh = a.shape
        rows, cols = (1, sh[0]) if len(sh) == 1 else (sh + (0, 0))[:2]
        theirs = "ok %s %dx%d %d" % (a.dtype.str, rows, cols, len(sh))
    except Exception:
        theirs = "rej"
    if ours[i] != "rej" and ours[i] != theirs:
        bad += 1
        if bad <= 5:
            with open(p, "rb") as f:
                print("npy_headers.py: FAIL: ours '%s', numpy '%s': %r" % (ours[i], theirs, f.read()[10:200]))
    elif ours[i] != "rej":
        both += 1
    elif theirs != "rej":
        only_np += 1
for p in files: os.remove(p)
os.rmdir(d)
print("npy_headers.py: %d random headers (seed %d): %d accepted by both and equal, %d by numpy only, "
      "%d accepted here but not by numpy or read differently" % (count, seed, both, only_np, bad))
sys.exit(1 if bad else 0)
