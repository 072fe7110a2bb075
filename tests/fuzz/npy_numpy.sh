#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-fuzz-replay, the .npy corpus against numpy (issue 16 item 8): every file this
# repository's reader accepts, numpy accepts with the same dtype and shape; every file numpy
# rejects, the reader rejects. (A file numpy accepts in a form the reader does not know is
# counted, not failed: docs/isa.md lists those forms.) Skipped with a message without numpy.
# Usage: npy_numpy.sh NPY_CHECK CORPUS_DIR
set -u
check=$1; dir=$2
py=
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import numpy' >/dev/null 2>&1; then py=$p; break; fi
done
if [ -z "$py" ]; then echo "npy_numpy.sh: numpy cannot be imported: skipped"; exit 0; fi
files=$(find "$dir" -type f | sort)
# shellcheck disable=SC2086
"$check" $files >"${TMPDIR:-/tmp}/npy_c.$$" || exit 1
# shellcheck disable=SC2086
"$py" - $files >"${TMPDIR:-/tmp}/npy_np.$$" <<'PY' || exit 1
import sys, numpy as np
for f in sys.argv[1:]:
    try:
        a = np.load(f, allow_pickle=False)
        shape = a.shape
        rows, cols = (1, shape[0]) if len(shape) == 1 else (shape + (0, 0))[:2]
        print("ok %s %dx%d %d" % (a.dtype.str, rows, cols, len(shape)))
    except Exception:
        print("rej")
PY
bad=0; stricter=0; n=0
exec 3<"${TMPDIR:-/tmp}/npy_np.$$"
for f in $files; do :; done
while IFS= read -r c && IFS= read -r p <&3; do
    n=$((n + 1))
    f=$(echo "$files" | sed -n "${n}p")
    if [ "$c" != rej ] && [ "$c" != "$p" ]; then
        echo "npy_numpy.sh: FAIL: $f: ours '$c', numpy '$p'"; bad=$((bad + 1))
    elif [ "$c" = rej ] && [ "$p" != rej ]; then
        stricter=$((stricter + 1))
    fi
done <"${TMPDIR:-/tmp}/npy_c.$$"
rm -f "${TMPDIR:-/tmp}/npy_c.$$" "${TMPDIR:-/tmp}/npy_np.$$"
echo "npy_numpy.sh: $n files: $bad disagreements; $stricter accepted by numpy only (0-D, other dtypes or forms the reader does not know)"
[ "$bad" -eq 0 ]
