#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-cosim-fault: the checks must catch what they are there to catch.
#  - mxu_tb --inject-fault flips one bit of one captured RTL output: the run must fail and
#    name the right tile, kt, nt, row, column, expected (from the model trace) and got
#    (expected with that bit flipped), in hex and decimal;
#  - mxu_tb --inject-drop withholds one vector: out_valid_o must be reported missing;
#  - a replay with the same +verilator+seed gives the same RTL trace;
#  - bad harness arguments exit 2;
#  - tpu-trace-cmp on hand-made trace pairs (value, cycle, short/long, key, width, malformed).
set -u
N=4
tb=build/sim/mxu_N$N/mxu_tb
cmp=build/sim/tpu-trace-cmp
tr=tests/cosim/traces
out=build/tests/cosim/fault
mkdir -p "$out"
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "  ok: $1"; }
bad() { fail=$((fail + 1)); echo "  FAILED: $1"; [ -f "$out/last.log" ] && sed 's/^/    /' "$out/last.log"; }

# run EXPECTED_STATUS DESCRIPTION COMMAND...: output in $out/last.log
run() {
    want=$1; what=$2; shift 2
    "$@" >"$out/last.log" 2>&1
    got=$?
    if [ "$got" -eq "$want" ]; then return 0; fi
    bad "$what: exit status $got, expected $want ($*)"
    return 1
}
has() { # has DESCRIPTION FIXED-STRING: the last log contains the string
    if grep -qF -- "$2" "$out/last.log"; then ok "$1"; else bad "$1: no '$2' in the output"; fi
}

shape="--m 6 --k 10 --n 6 --dist uniform --seed 21"  # KT = 3, NT = 2: tiles 0..5
traces="--rtl-trace $out/rtl.trace --model-trace $out/model.trace"

run 0 "clean run passes" $tb $shape $traces && ok "clean run passes"

# fault TILE ROW COL BIT KT NT: the value expected is read from the model trace
fault() {
    t=$1; r=$2; c=$3; b=$4; kt=$5; nt=$6
    what="fault tile $t row $r column $c bit $b"
    run 1 "$what" $tb $shape $traces --inject-fault "$t,$r,$c,$b" || return
    exp=$(awk -v t="$t" -v r="$r" -v c="$c" \
        '$1 !~ /^#/ && $3 == t && $6 == r { print $(7 + c); exit }' "$out/model.trace")
    gotv=$(printf '%08x' $(( 0x$exp ^ (1 << b) )))
    has "$what: location" "mxu tile $t (kt $kt, nt $nt) row $r, column $c"
    has "$what: expected" "expected $exp ("
    has "$what: got" "got      $gotv ("
    has "$what: summary" "FAIL: N=$N M=6 K=10 N'=6"
}
fault 2 3 1 30 2 0   # the last K-tile of N-tile 0: exponent bit
fault 0 0 0 31 0 0   # the first output: sign bit; the corrupted seed then feeds tile 1
fault 5 0 3 0 2 1    # column 3 of N-tile 1 is padding (N' = 6): raw outputs are compared too
fault 4 5 2 22 1 1   # a middle K-tile, last row: top fraction bit

run 1 "dropped vector" $tb $shape $traces --inject-drop 1,2 &&
    has "dropped vector is reported" "out_valid_o is 0, expected the output of tile 1 row 2"

# The same +verilator+seed replays the same run (X-initialisation included).
run 0 "replay 1" $tb $shape --rtl-trace "$out/replay1.trace" --model-trace "$out/m1.trace" \
    +verilator+seed+12345 &&
    has "seed is printed" "+verilator+seed+12345"
run 0 "replay 2" $tb $shape --rtl-trace "$out/replay2.trace" --model-trace "$out/m2.trace" \
    +verilator+seed+12345 &&
    if cmp -s "$out/replay1.trace" "$out/replay2.trace"; then ok "replay gives the same RTL trace"
    else bad "replay gives a different RTL trace"; fi

run 2 "unknown distribution" $tb --dist bogus && has "unknown distribution: message" "unknown distribution"
run 2 "fault outside the tiles" $tb $shape $traces --inject-fault 6,0,0,0 && ok "fault outside the tiles"
run 2 "zero size" $tb --m 0 && ok "zero size"
run 2 "unknown option" $tb --frobnicate 1 && ok "unknown option"

# tpu-trace-cmp on hand-made pairs
run 0 "cmp identical" $cmp $tr/good.trace $tr/good.trace && has "cmp identical" "PASS: 4 records identical"
run 0 "cmp comments ignored" $cmp $tr/good.trace $tr/comments.trace && ok "cmp comments ignored"
run 1 "cmp value" $cmp $tr/good.trace $tr/value.trace &&
    has "cmp value: where" "cycle 11, mxu tile 1 (kt 1, nt 0) row 0, column 1" &&
    has "cmp value: expected" "expected 00800000 (1.17549435e-38)" &&
    has "cmp value: got" "got      00800001 (1.17549449e-38)"
run 1 "cmp cycle" $cmp $tr/good.trace $tr/cycle.trace &&
    has "cmp cycle: timing" "expected at cycle 7, got at cycle 8"
run 0 "cmp cycle ignored" $cmp $tr/good.trace $tr/cycle.trace --ignore-cycles && ok "cmp --ignore-cycles"
run 1 "cmp short" $cmp $tr/good.trace $tr/short.trace &&
    has "cmp short" "has fewer records (3) than $tr/good.trace (4)"
run 1 "cmp long" $cmp $tr/good.trace $tr/long.trace && has "cmp long" "has more records (5)"
run 1 "cmp key" $cmp $tr/good.trace $tr/key.trace && has "cmp key" "row 5"
run 1 "cmp width" $cmp $tr/good.trace $tr/width.trace && has "cmp width" "expected 2 values, got 3"
run 2 "cmp malformed" $cmp $tr/good.trace $tr/bad.trace && has "cmp malformed" "bad.trace:6:"
run 2 "cmp no header" $cmp $tr/nohdr.trace $tr/good.trace && has "cmp no header" "tpu-trace 1"
run 2 "cmp missing file" $cmp $tr/good.trace $out/does-not-exist.trace && ok "cmp missing file"
run 2 "cmp one argument" $cmp $tr/good.trace && ok "cmp one argument"
run 2 "cmp unknown option" $cmp --frobnicate $tr/good.trace $tr/good.trace && ok "cmp unknown option"
lines=$(wc -l <"$out/last.log")
[ "$lines" -eq 1 ] && ok "cmp errors are one line" || bad "cmp error is $lines lines"

echo "cosim-fault: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
