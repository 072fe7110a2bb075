#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-vpu-cosim: runs sim/vpu_tb for each L given (the models must be built):
#   --mode exhaustive,all: every unary op on all 65,536 bf16 inputs, then random binary,
#   unary, broadcast vectors, reductions and softmax rows (docs/vpu.md "RTL", vpu_tb --help).
# Usage: [VPU_COUNT=N] sh tests/vpucosim/cosim.sh SIM_DIR SEED L...   (N: vpu_tb --count, 3000)
set -u
SIM=$1; SEED=$2; shift 2
fail=0
for l in "$@"; do
    d=$SIM/vpu_L$l
    out=$("$d/vpu_tb" --mode exhaustive,all --count "${VPU_COUNT:-3000}" --seed "$SEED" \
        --rtl-trace "$d/cosim_rtl.trace" --model-trace "$d/cosim_model.trace" 2>&1)
    rc=$?
    echo "$out" | tail -n 12
    case "$out" in *"PASS: L=$l "*) ;; *) rc=1 ;; esac
    [ $rc -eq 0 ] || { echo "FAIL: L=$l (traces kept in $d)"; fail=1; }
done
exit $fail
