#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-vpu-cosim-fault: a single flipped bit in one lane of one output vector, as captured by
# the harness, must fail the run (exit 1) and the report must name that vector, lane, the op,
# the inputs and the expected and received words; the same run without the fault passes.
# Usage: sh tests/vpucosim/fault.sh path/to/vpu_tb DIR
set -u
TB=$1; D=$2
fail=0
check() { # DESCRIPTION EXPECTED-RC PATTERN ARGS...
    desc=$1; want=$2; pat=$3; shift 3
    out=$("$TB" --rtl-trace "$D/fault_rtl.trace" --model-trace "$D/fault_model.trace" "$@" 2>&1)
    rc=$?
    if [ $rc -eq "$want" ] && echo "$out" | grep -q -e "$pat"; then
        echo "ok: $desc"
    else
        echo "FAIL: $desc (exit $rc, expected $want; wanted /$pat/)"; echo "$out" | tail -n 5; fail=1
    fi
}
check "clean run passes" 0 "^PASS: L=8 " --mode binary --count 200 --seed 3
for spec in 37,5,3 0,0,31 199,7,0 120,2,22; do
    v=${spec%%,*}; rest=${spec#*,}; lane=${rest%%,*}
    check "bit flip $spec is caught" 1 "first divergence at record $v, .*vector $v, lane $lane (1 differ): expected [0-9a-f]\{8\}, got [0-9a-f]\{8\}; input a [0-9a-f]\{8\}" \
        --mode binary --count 200 --seed 3 --inject-fault "$spec"
done
# a flipped bit in a softmax pass-2 output (e_i) is caught at that vector, before it reaches
# the row's result
check "bit flip in softmax is caught" 1 "first divergence at record" \
    --mode softmax --count 40 --seed 3 --inject-fault 10,1,12
exit $fail
