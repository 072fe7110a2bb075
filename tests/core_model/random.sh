#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-core-model, constrained-random programs (issue 16): tpu-mkprog random at N = 1, 2, 3,
# 4, 8, 16 over many seeds (one in three ends in an error chosen by the seed) and every error
# code forced at each N; each program runs on the C model (tpu-run) and must end as the
# generator predicted in job.txt: "tpu-run: done" for "expect done", "error E ... at pc P"
# for "expect error E pc P", and its trace must end with that record; no row is read before
# it is written (the prologue writes every row). Loop nests (docs/isa.md "Loops") and the
# malformed loops (--error 10, --error 2|3 --loop-error) included; matmul acc_mode=first:lL
# at every level, and a reserved acc_first ending in error 1. The same seed gives
# the same program. Usage: random.sh TPU-MKPROG TPU-RUN WORKDIR [SEEDS]
set -u
mkprog=$1; run=$2; out=$3; seeds=${4:-40}
pass=0; fail=0; errs=0
rm -rf "$out"; mkdir -p "$out"
check() { # check DIR N "SIZES" [mkprog args...]: SIZES (memory options) go to both tools
    d=$1; n=$2; sizes=$3; shift 3
    # shellcheck disable=SC2086
    if ! "$mkprog" random --mxu "$n" -o "$d" $sizes "$@" >"$d.log" 2>&1; then
        echo "FAIL: tpu-mkprog random --mxu $n $*: $(cat "$d.log")"; fail=$((fail + 1)); return; fi
    exp=$(sed -n 's/^expect //p' "$d/job.txt")
    # shellcheck disable=SC2086
    "$run" --mxu "$n" $sizes --prog "$d/prog.s" "@$d/job.args" --trace "$d/t.trace" --dump-dir "$d/o" \
        >"$d.run" 2>&1; st=$?
    case "$exp" in
    done)
        if [ $st -eq 0 ] && grep -q '^tpu-run: done$' "$d.run" && tail -n 1 "$d/t.trace" | grep -q '^r [0-9]* [0-9]* [0-9.]* halt$' &&
            ! grep -q 'never-written' "$d.run"; then
            pass=$((pass + 1))
        else echo "FAIL: tpu-mkprog random --mxu $n $*: expected done, exit $st:"; tail -n 3 "$d.run"; fail=$((fail + 1)); fi ;;
    error*)
        set -- $exp; code=$2; pc=$4
        if [ $st -eq 1 ] && grep -q "^tpu-run: error $code (.*) at pc $pc\( (dynamic instruction [0-9]*)\)\{0,1\}: " "$d.run" &&
            tail -n 1 "$d/t.trace" | grep -qx "e [0-9]* $pc $code"; then
            pass=$((pass + 1)); errs=$((errs + 1))
        else echo "FAIL: $d (N=$n): expected error $code at pc $pc, exit $st:"; tail -n 2 "$d.run"; tail -n 1 "$d/t.trace"; fail=$((fail + 1)); fi ;;
    *) echo "FAIL: $d: no 'expect' line in job.txt"; fail=$((fail + 1)) ;;
    esac
    rm -rf "$d/o"
}
for n in 1 2 3 4 8 16; do
    s=1
    while [ $s -le "$seeds" ]; do
        check "$out/n$n-s$s" "$n" "" --seed "$s"
        s=$((s + 1))
    done
    for e in 0 1 2 3 4 5 6 7 8 10; do
        check "$out/n$n-e$e" "$n" "" --seed "$((n * 100 + e))" --error "$e"
    done
    # the malformed loops: count/skip/body 0 (3), a stride out of the memory in a later
    # iteration (2), bad nests (10, above); a few seeds each for their forms
    for s in 1 2 3; do
        check "$out/n$n-l2-$s" "$n" "" --seed "$((n * 100 + s))" --error 2 --loop-error
        check "$out/n$n-l3-$s" "$n" "" --seed "$((n * 100 + s))" --error 3 --loop-error
        check "$out/n$n-l10-$s" "$n" "" --seed "$((n * 100 + 50 + s))" --error 10
    done
    check "$out/n$n-straight" "$n" "" --seed "$n" --no-loops
done
# small memories: rows at their boundaries meet more often
for s in 1 2 3 4 5 6 7 8; do
    check "$out/small$s" 4 "--ub-rows 8 --acc-rows 8 --wmem-rows 4 --imem-insns 64" --seed "$s"
    check "$out/tiny$s" 2 "--ub-rows 2 --acc-rows 3 --wmem-rows 2 --imem-insns 16" --seed "$s" --hostmem-mib 1
done
check "$out/big" 2 "--ub-rows 65536 --acc-rows 65536 --wmem-rows 65536" --seed 7
# random-board: programs that cannot deadlock on boards of 1 .. 8 cores (ring and torus),
# every core must end done on the board model
brun=$(dirname "$run")/tpu-board-run
for ct in "1 ring" "2 ring" "3 ring" "4 torus" "6 torus:2x3" "8 torus:2x4"; do
    set -- $ct; cores=$1; topo=$2
    for s in 1 2 3; do
        for n in 2 3; do
            d=$out/b$n-c$cores-s$s
            if "$mkprog" random-board --mxu "$n" --cores "$cores" --topology "$topo" --seed "$s" -o "$d" >"$d.log" 2>&1 &&
                "$brun" --mxu "$n" --cores "$cores" --topology "$topo" --job "$d" --out "$d.out" >"$d.run" 2>&1 &&
                grep -q '^tpu-board-run: done$' "$d.run" && ! grep -q 'never-written' "$d.run"; then
                pass=$((pass + 1))
            else echo "FAIL: random-board --mxu $n --cores $cores --topology $topo --seed $s:"; tail -n 3 "$d.log" "$d.run"; fail=$((fail + 1)); fi
            rm -rf "$d.out"
        done
    done
done
# matmul acc_mode=first:lL (docs/isa.md "Loops"): the programs above draw every level
for l in 0 1 2 3; do
    if cat "$out"/n*-s*/prog.s | grep -q "^ *matmul .* acc_mode=first:l$l\$"; then pass=$((pass + 1))
    else echo "FAIL: no random program above has a matmul acc_mode=first:l$l"; fail=$((fail + 1)); fi
done
# error 1 from a reserved acc_first (beside accumulate, or level 4 .. 6): one error-1 program
# in two with loops on; the first seed that draws it must end in error 1 at its pc
s=1; af=0
while [ $s -le 20 ] && [ $af -eq 0 ]; do
    check "$out/af$s" 4 "" --seed "$s" --error 1
    grep -q '^\.insn 0x[0-9a-f]*21, .*reserved' "$out/af$s/prog.s" && af=1
    s=$((s + 1))
done
[ $af -eq 1 ] && pass=$((pass + 1)) ||
    { echo "FAIL: random --error 1 drew no reserved matmul acc_first in 20 seeds"; fail=$((fail + 1)); }
# --no-loops: straight-line programs (no loop, stride, index register or acc_mode=first)
"$mkprog" random --mxu 4 --seed 5 --no-loops -o "$out/nl" >/dev/null &&
    ! grep -q '^ *loop \|^ *stride \|+x[1-7]\|acc_mode=first\|reserved' "$out/nl/prog.s" &&
    pass=$((pass + 1)) || { echo "FAIL: random --no-loops wrote a loop, a stride, a register or acc_mode=first"; fail=$((fail + 1)); }
# the same seed, the same program; another seed, another program
"$mkprog" random --mxu 4 --seed 77 -o "$out/d1" >/dev/null && "$mkprog" random --mxu 4 --seed 77 -o "$out/d2" >/dev/null &&
    cmp -s "$out/d1/prog.s" "$out/d2/prog.s" && pass=$((pass + 1)) || { echo "FAIL: random is not deterministic"; fail=$((fail + 1)); }
"$mkprog" random --mxu 4 --seed 78 -o "$out/d3" >/dev/null && ! cmp -s "$out/d1/prog.s" "$out/d3/prog.s" &&
    pass=$((pass + 1)) || { echo "FAIL: --seed does not change the program"; fail=$((fail + 1)); }
echo "random programs: $pass passed ($errs ended in their predicted error), $fail failed"
[ "$fail" -eq 0 ]
