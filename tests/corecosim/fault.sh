#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-core-cosim-fault: the co-simulation must catch what it is there to catch.
#  - core_tb --inject-fault flips one bit of the first row an instruction writes (as
#    recorded): tpu-core-cmp must fail and name that instruction, the memory, the row, the
#    element, expected (read from the model trace) and got (that value with the bit flipped);
#  - bad programs (every error code of docs/isa.md "Errors") halt the RTL with the model's
#    `e <seq> <pc> <code>` after the same writes (traces identical, both report the error);
#  - the AXI assertion layer fires (--inject-axi shows it one bad WLAST, burst length or
#    changed payload), also on the 512-bit data master of build/sim/core_N<N>_A512 (the
#    wide model test-core-cosim runs);
#    --max-cycles gives a clear timeout; bad harness arguments exit 2.
# usage: tests/corecosim/fault.sh N
set -u
n=${1:-4}
tb=build/sim/core_N$n/core_tb
run=build/tools/tpu-run
mkprog=build/tools/tpu-mkprog
cmp=build/sim/tpu-core-cmp
out=build/tests/corecosim/fault_N$n
rm -rf "$out"; mkdir -p "$out"
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "  ok: $1"; }
bad() { fail=$((fail + 1)); echo "  FAILED: $1"; [ -f "$out/last.log" ] && tail -n 25 "$out/last.log" | sed 's/^/    /'; }
# run EXPECTED_STATUS DESCRIPTION COMMAND...: output in $out/last.log; 0 if the status matched
run() {
    r_want=$1; r_what=$2; shift 2
    "$@" >"$out/last.log" 2>&1
    r_got=$?
    [ "$r_got" -eq "$r_want" ] && return 0
    bad "$r_what: exit status $r_got, expected $r_want ($*)"
    return 1
}
has() { # has DESCRIPTION FIXED-STRING: the last log contains the string
    if grep -qF -- "$2" "$out/last.log"; then ok "$1"; else bad "$1: no '$2' in the output"; fi
}

# ---- injected faults on a matmul program ----
p=$out/mm
"$mkprog" matmul --mxu "$n" --m $((2 * n + 1)) --k $((2 * n + 1)) --nout $((n + 1)) --seed 7 \
    -o "$p" >"$out/last.log" 2>&1 || { bad "tpu-mkprog matmul"; exit 1; }
job="--prog $p/prog.s @$p/job.args"
run 0 "model run" $run --mxu "$n" $job --trace "$p/model.trace" --dump-dir "$p/model" || exit 1
run 0 "clean RTL run" $tb $job --trace "$p/rtl.trace" --dump-dir "$p/rtl" &&
    run 0 "clean run: traces identical" $cmp "$p/model.trace" "$p/rtl.trace" &&
    ok "clean run passes"

# fault MNEMONIC MEM ELEM BIT: the first instruction MNEMONIC that writes MEM
fault() {
    mn=$1; mem=$2; e=$3; b=$4
    # the first write to MEM by an instruction MNEMONIC (retire lines follow their writes;
    # r <seq> <pc> <loop indices> <mnemonic> ...)
    line=$(awk -v mn="$mn" -v mem="$mem" '
        $1 == "w" && $3 == mem && !($2 in first) { first[$2] = $0 }
        $1 == "r" && $5 == mn && ($2 in first) { print first[$2]; exit }' "$p/model.trace")
    sq=$(echo "$line" | awk '{ print $2 }')
    [ -n "$sq" ] && [ -n "$line" ] || { bad "no $mn writing $mem in the model trace"; return; }
    pc=$(awk -v s="$sq" '$1 == "r" && $2 == s { print $3; exit }' "$p/model.trace")
    row=$(echo "$line" | awk '{ print $4 }')
    exp=$(echo "$line" | awk -v e="$e" '{ print $(5 + e) }')
    gotv=$(printf "%0${#exp}x" $(( 0x$exp ^ (1 << b) )))
    what="fault in $mn (seq $sq, pc $pc) $mem row $row element $e bit $b"
    run 0 "$what: RTL run" $tb $job --trace "$p/fault.trace" --dump-dir "$p/rtl" \
        --inject-fault "$sq,$e,$b" || return
    run 1 "$what: the compare fails" $cmp --prog "$p/prog.s" --mxu "$n" "$p/model.trace" \
        "$p/fault.trace" || return
    has "$what: instruction" "dynamic instruction $sq (pc $pc, loop 0.0.0.0.0.0: $mn "
    has "$what: row" "$mem row $row ("
    has "$what: element" "): element $e"
    has "$what: expected" "expected $exp (model)"
    has "$what: got" "got      $gotv (RTL)"
    has "$what: count" "1 of $n elements of the row differ"
}
fault matmul acc 1 30
fault matmul acc 0 31
fault dma_in ub $((n - 1)) 3
fault dma_in wmem 0 15

# ---- bad programs: the same error halt in both ----
# errprog NAME CODE BAD-LINE [host options]: a few good instructions, the bad one, halt
errprog() {
    name=$1; code=$2; badline=$3; shift 3
    d=$out/err_$name; mkdir -p "$d"
    {
        echo "# error $code: $name"
        echo "dma_in ub row=0 rows=2 cols=$n addr=0 stride=$((2 * n))"
        echo "dma_in wmem row=0 rows=$n cols=$n addr=64 stride=$((2 * n))"
        echo "nop"
        echo "$badline"
        echo "dma_in acc row=0 rows=1 cols=$n addr=0 stride=0"
        echo "halt"
    } >"$d/prog.s"
    what="error $code ($name)"
    run 1 "$what: model" $run --mxu "$n" --prog "$d/prog.s" --trace "$d/model.trace" "$@" ||
        return
    run 1 "$what: RTL" $tb --prog "$d/prog.s" --trace "$d/rtl.trace" "$@" || return
    has "$what: RTL reports it" "core_tb: error $code ("
    if tail -n 1 "$d/model.trace" | grep -qx "e 3 3 $code"; then ok "$what: model halts with e 3 3 $code"
    else bad "$what: model trace ends with '$(tail -n 1 "$d/model.trace")', expected 'e 3 3 $code'"; fi
    run 0 "$what: traces identical" $cmp --prog "$d/prog.s" --mxu "$n" "$d/model.trace" \
        "$d/rtl.trace" && ok "$what: traces identical"
}
errprog opcode 1 ".insn 0x000000ff, 0, 0, 0"
errprog reserved 1 ".insn 0x00010021, 0x00010000, 0, 0"
errprog range 2 "dma_in ub row=4095 rows=2 cols=$n addr=0 stride=8"
errprog count 3 ".insn 0x00000010, 0, 0x00010000, 8"
errprog align 4 "dma_in acc row=0 rows=1 cols=$n addr=2 stride=16"
errprog nolw 5 "matmul ub=0 acc=0 rows=1"
errprog axi 7 "dma_in ub row=2 rows=1 cols=$n addr=0x100000 stride=0" --hostmem-mib 1

# code 6: IMEM full of nops (IMEM holds 1024 instructions by default), no halt
d=$out/err_runoff; mkdir -p "$d"
awk 'BEGIN { for (i = 0; i < 1024; i++) print "nop" }' >"$d/prog.s"
if run 1 "error 6: model" $run --mxu "$n" --prog "$d/prog.s" --trace "$d/model.trace" &&
   run 1 "error 6: RTL" $tb --prog "$d/prog.s" --trace "$d/rtl.trace"; then
    has "error 6: RTL reports it" "core_tb: error 6 ("
    run 0 "error 6: traces identical" $cmp "$d/model.trace" "$d/rtl.trace" &&
        ok "error 6: traces identical"
fi

# ---- the harness's own checks ----
# the AXI checker fires (the checker alone is shown a bad value; the run itself is clean)
axi() { # axi KIND MESSAGE
    run 1 "--inject-axi $1" $tb $job --trace "$out/t.trace" --stall 30 --inject-axi "$1" &&
        has "--inject-axi $1 is caught" "$2" && has "--inject-axi $1 counted" "1 AXI protocol violation(s)"
}
axi wlast "m_axi W: wlast 1 on beat 0 of a"
axi len "m_axi AR: len 16: more than 16 beats"
axi hold "m_axi AR: payload changed while valid and not ready"
# the same on a 512-bit data master (64-byte beats), which takes only its own width (its first
# W burst may be one beat long: WLAST shown as 0 there; a changed AR payload may be counted
# twice, once when it changes and once when it changes back)
wb=512
tb64=$tb; tb=build/sim/core_N${n}_A$wb/core_tb
axiw() { # axiw KIND MESSAGE
    run 1 "--inject-axi $1 ($wb bits)" $tb $job --trace "$out/t.trace" --stall 30 --inject-axi "$1" &&
        has "--inject-axi $1 is caught ($wb bits)" "$2" && has "--inject-axi $1 counted ($wb bits)" "AXI protocol violation(s)"
}
axiw wlast "m_axi W: wlast "
axiw len "m_axi AR: len 16: more than 16 beats"
axiw hold "m_axi AR: payload changed while valid and not ready"
run 2 "wrong --axi-data-bits" $tb $job --axi-data-bits 64 &&
    has "wrong --axi-data-bits message" "--axi-data-bits must be the verilated core's AXI data width: 64"
tb=$tb64
run 1 "timeout" $tb $job --trace "$out/t.trace" --max-cycles 5 &&
    has "timeout is reported" "ERROR: timeout: not halted after"
run 2 "bad --stall" $tb $job --stall 95 && has "bad --stall message" "--stall takes a percentage in 0 .. 90: 95"
run 2 "no program" $tb --trace "$out/t.trace" && has "no program message" "--prog FILE is required"
run 2 "bad --inject-fault" $tb $job --inject-fault "1,$n,0" &&
    has "bad --inject-fault message" "--inject-fault takes SEQ or SEQ,ELEM,BIT"

echo "test-core-cosim-fault: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
