#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-core-cmp: tpu-core-cmp on hand-made core trace pairs (no RTL needed). Each variant of
# traces/good.trace is made here by one edit; the tool must report exactly that difference
# (instruction, memory, row, element, expected, got, count) with exit 1, accept what the
# format allows (comments, the interleaving of different rows within an instruction) with
# exit 0, and reject malformed input with exit 2.
set -u
cmp=build/sim/tpu-core-cmp
good=tests/corecosim/traces/good.trace
out=build/tests/corecosim/cmp
mkdir -p "$out"
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "  ok: $1"; }
bad() { fail=$((fail + 1)); echo "  FAILED: $1"; sed 's/^/    /' "$out/last.log"; }

# variant NAME SED-SCRIPT: a copy of good.trace with one edit
variant() { sed "$2" "$good" >"$out/$1.trace"; }
# expect STATUS NAME STRING...: compare good.trace with the variant; the exit status and
# every string (fixed, in the output) must be there
expect() {
    want=$1; name=$2; shift 2
    $cmp "$good" "$out/$name.trace" >"$out/last.log" 2>&1
    got=$?
    if [ "$got" -ne "$want" ]; then bad "$name: exit status $got, expected $want"; return; fi
    for s in "$@"; do
        if ! grep -qF -- "$s" "$out/last.log"; then bad "$name: no '$s' in the output"; return; fi
    done
    ok "$name"
}

variant same ''
expect 0 same "PASS: 19 records identical"

variant comments '/^w 5 acc 0/i # a comment between records
$a # a trailing comment'
expect 0 comments "PASS"

# seq 6's writes to different rows in another order: the same trace
variant interleave '/^w 6 ub 5/d; /^w 6 ub 6/a w 6 ub 5 0001 0002'
expect 0 interleave "PASS"

# the two writes to acc row 7 by seq 6 swapped: their order matters
variant sameroworder 's/^w 6 acc 7 00000001 00000002$/X/; s/^w 6 acc 7 00000003 00000004$/w 6 acc 7 00000001 00000002/; s/^X$/w 6 acc 7 00000003 00000004/'
expect 1 sameroworder "dynamic instruction 6 (pc 5, loop 0.0.0.0.0.0: softmax src=acc:7 dst=ub:5" "acc row 7" \
    "element 0" "expected 00000001 (model)" "got      00000003 (RTL)" \
    "2 of 2 elements of the row differ" "FAIL: 2 of 19 records differ"

variant value 's/^w 5 acc 1 40400000 80000000$/w 5 acc 1 40400000 80000001/'
expect 1 value "first divergence at record 11, dynamic instruction 5 (pc 4, loop 0.0.0.0.0.0: matmul ub=0 acc=0 rows=2)" \
    "acc row 1 (expected line 13, got line 13): element 1" \
    "expected 80000000 (model)" "got      80000001 (RTL)" "1 of 2 elements of the row differ" \
    "FAIL: 1 of 19 records differ"

# a retire line: the loop indices, the pc, the resolved instruction
variant iter 's/^r 4 3 1.0.0.0.0.0 lw w=0$/r 4 3 0.0.0.0.0.0 lw w=0/'
expect 1 iter "first divergence at record 9, dynamic instruction 4 (pc 3, loop 1.0.0.0.0.0: lw w=0)" \
    "loop indices 0.0.0.0.0.0, expected 1.0.0.0.0.0"
variant resolved 's/^r 4 3 1.0.0.0.0.0 lw w=0$/r 4 3 1.0.0.0.0.0 lw w=4/'
expect 1 resolved "dynamic instruction 4 (pc 3, loop 1.0.0.0.0.0: lw w=0)" "instruction 'lw w=4', expected 'lw w=0'"
variant pc 's/^r 4 3 1.0.0.0.0.0 lw w=0$/r 4 2 1.0.0.0.0.0 lw w=0/'
expect 1 pc "dynamic instruction 4 (pc 3, loop 1.0.0.0.0.0: lw w=0)" "pc 2, expected 3"

# --prog: also the instruction as written (its index register)
$cmp --prog tests/corecosim/traces/good.s --mxu 2 "$good" "$out/resolved.trace" >"$out/last.log" 2>&1
if [ $? -eq 1 ] && grep -qF "dynamic instruction 4 (pc 3, loop 1.0.0.0.0.0: lw w=0; as written: lw w=0+x1)" "$out/last.log"; then
    ok "--prog gives the instruction as written"
else bad "--prog gives the instruction as written"; fi
$cmp --prog "$out/nosuch.s" "$good" "$good" >"$out/last.log" 2>&1
if [ $? -eq 2 ] && grep -qF "nosuch.s" "$out/last.log"; then ok "--prog: missing file"
else bad "--prog: missing file"; fi

variant bf16 's/^w 0 ub 1 4040 8000$/w 0 ub 1 4041 8001/'
expect 1 bf16 "dynamic instruction 0 (pc 0, loop 0.0.0.0.0.0: dma_in ub" "ub row 1" "element 0" \
    "expected 4040" "got      4041" "2 of 2 elements"

variant row 's/^w 5 acc 1 /w 5 acc 2 /'
expect 1 row "dynamic instruction 5 (pc 4" "a write to acc row 2 where one to acc row 1 was expected"

# (each instruction's writes are compared in (memory, row) order: the ub row comes first)
variant mem 's/^w 1 wmem 1 /w 1 ub 1 /'
expect 1 mem "dynamic instruction 1 (pc 1" "a write to ub row 1 where one to wmem row 0 was expected"

variant width 's/^w 5 acc 0 3f800000 40000000$/w 5 acc 0 3f800000 40000000 00000000/'
expect 1 width "acc row 0" "3 elements, expected 2"

variant short '/^r 8 7 0.0.0.0.0.0 halt$/d'
expect 1 short "ACTUAL (RTL) trace ends after record 18" \
    "a retire of dynamic instruction 8 (pc 7, loop 0.0.0.0.0.0: halt)" \
    "missing, expected line 21: r 8 7 0.0.0.0.0.0 halt"

variant long '$a w 8 ub 9 0000 0000'
expect 1 long "EXPECTED (model) trace ends after record 19" \
    "extra, got line 22: w 8 ub 9 (2 elements)"

variant missingwrite '/^w 0 ub 1 /d'
expect 1 missingwrite "dynamic instruction 0 (pc 0" "expected a memory write, got a retire"

variant errhalt 's/^r 8 7 0.0.0.0.0.0 halt$/e 8 7 2/'
expect 1 errhalt "dynamic instruction 8 (pc 7, loop 0.0.0.0.0.0: halt)" "expected a retire, got an error halt"

variant mnemonic 's/^r 7 6 0.0.0.0.0.0 sync$/r 7 6 0.0.0.0.0.0 nop/'
expect 1 mnemonic "instruction 'nop', expected 'sync'"

# two error halts with different codes (both files edited)
sed 's/^r 8 7 0.0.0.0.0.0 halt$/e 8 7 2/' "$good" >"$out/err2.trace"
sed 's/^r 8 7 0.0.0.0.0.0 halt$/e 8 7 3/' "$good" >"$out/err3.trace"
$cmp "$out/err2.trace" "$out/err3.trace" >"$out/last.log" 2>&1
if [ $? -eq 1 ] && grep -qF "error code 3, expected 2" "$out/last.log" &&
   grep -qF "dynamic instruction 8 (pc 7, not dispatched: error 2)" "$out/last.log"; then ok "error codes"
else bad "error codes"; fi

variant seq 's/^r 2 2 0.0.0.0.0.0 loop/r 1 2 0.0.0.0.0.0 loop/'
expect 1 seq "first divergence at record 7, dynamic instruction 2 (pc 2" \
    "a record of dynamic instruction 1 where one of 2 was expected"

# malformed input: exit 2 naming the file and line
variant baddigits 's/^w 0 ub 0 3f80 4000$/w 0 ub 0 3f80 04000/'
expect 2 baddigits "baddigits.trace:3: element 1 is not 4 hex digits"
variant badmem 's/^w 0 ub 0 /w 0 vmem 0 /'
expect 2 badmem "badmem.trace:3: expected 'w <seq> ub|acc|wmem <row> <element>...'"
variant badrec 's/^r 3 3 0.0.0.0.0.0 lw w=0$/x 3 3 0.0.0.0.0.0 lw w=0/'
expect 2 badrec "badrec.trace:10: unknown record"
variant badretire 's/^r 7 6 0.0.0.0.0.0 sync$/r 7 6 sync/'
expect 2 badretire "badretire.trace:20: expected 'r <seq> <pc> <i0>.<i1>.<i2>.<i3>.<i4>.<i5> <instruction>'"
variant baditer 's/^r 7 6 0.0.0.0.0.0 sync$/r 7 6 0.0.0.65536.0.0 sync/'
expect 2 baditer "baditer.trace:20: expected 'r <seq> <pc>"
variant baderr 's/^r 8 7 0.0.0.0.0.0 halt$/e 8 2/'
expect 2 baderr "baderr.trace:21: expected 'e <seq> <pc> <code>'"
variant nohdr '1d'
expect 2 nohdr "nohdr.trace:1: not a core trace"
# format 1 (keyed by pc, before loops) is refused in one line
printf '# tpu-core-trace 1\nr 0 halt\n' >"$out/v1.trace"
$cmp "$out/v1.trace" "$good" >"$out/last.log" 2>&1
if [ $? -eq 2 ] && [ "$(wc -l <"$out/last.log")" -eq 1 ] &&
   grep -qF "v1.trace:1: a format 1 core trace (keyed by pc, before loops)" "$out/last.log"; then
    ok "format 1 refused in one line"
else bad "format 1 refused in one line"; fi
# format 2 (four loop levels) likewise
printf '# tpu-core-trace 2\nr 0 0 0.0.0.0 halt\n' >"$out/v2.trace"
$cmp "$out/v2.trace" "$good" >"$out/last.log" 2>&1
if [ $? -eq 2 ] && [ "$(wc -l <"$out/last.log")" -eq 1 ] &&
   grep -qF "v2.trace:1: a format 2 core trace (four loop levels)" "$out/last.log"; then
    ok "format 2 refused in one line"
else bad "format 2 refused in one line"; fi
expect 2 missingfile "missingfile.trace: No such file or directory"
$cmp "$good" >"$out/last.log" 2>&1
if [ $? -eq 2 ] && grep -qF "need two traces" "$out/last.log"; then ok "usage error"
else bad "usage error"; fi
$cmp --frob "$good" "$good" >"$out/last.log" 2>&1
if [ $? -eq 2 ] && grep -qF "unknown option '--frob'" "$out/last.log"; then
    ok "unknown option"
else bad "unknown option"; fi

# issue 16 item 9: two header-only traces are not a pass; item 6: bounded reads; a --job
# that is not there is an error (exit 2), for tpu-core-cmp, tpu-trace-cmp and tpu-board-cmp
# run RUN-STATUS NAME STRING CMD...
run_st() {
    want=$1; name=$2; str=$3; shift 3
    "$@" >"$out/last.log" 2>&1; got=$?
    if [ "$got" -ne "$want" ]; then bad "$name: exit status $got, expected $want"; return; fi
    if ! grep -qF -- "$str" "$out/last.log"; then bad "$name: no '$str' in the output"; return; fi
    ok "$name"
}
printf '# tpu-core-trace 3\n' >"$out/hdr1.trace"; cp "$out/hdr1.trace" "$out/hdr2.trace"
run_st 2 "core header only" "no records in either trace (header only)" $cmp "$out/hdr1.trace" "$out/hdr2.trace"
run_st 2 "core /dev/zero" "/dev/zero:1: line longer than 1 MiB" $cmp /dev/zero "$good"
printf '# tpu-trace 1\n' >"$out/mhdr1.trace"; cp "$out/mhdr1.trace" "$out/mhdr2.trace"
run_st 2 "mxu header only" "no records in either trace (header only)" build/sim/tpu-trace-cmp "$out/mhdr1.trace" "$out/mhdr2.trace"
run_st 2 "mxu /dev/zero" "line longer than 1 MiB" build/sim/tpu-trace-cmp /dev/zero "$out/mhdr1.trace"
mkdir -p "$out/b1" "$out/b2" && cp "$good" "$out/b1/core0.trace" && cp "$good" "$out/b2/core0.trace"
run_st 0 "board cmp" "PASS: 1 cores" build/sim/tpu-board-cmp "$out/b1" "$out/b2"
run_st 2 "board --job missing" "--job '/nonexistent': No such file or directory" build/sim/tpu-board-cmp --job /nonexistent --mxu 4 "$out/b1" "$out/b2"
run_st 2 "core --mxu twice" "option '--mxu' given twice" $cmp --mxu 4 --mxu 4 "$good" "$good"
run_st 2 "core --mxu 0x4" "--mxu '0x4' is not a whole number (allowed: 1..256)" $cmp --mxu 0x4 "$good" "$good"
run_st 2 "board --job twice" "option '--job' given twice" build/sim/tpu-board-cmp --job a --job b "$out/b1" "$out/b2"
run_st 2 "board --job without core0.args" "no core0.args in it" build/sim/tpu-board-cmp --job "$out/b1" --mxu 4 "$out/b1" "$out/b2"

echo "test-core-cmp: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
