#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-core-model, part 4: the tpu-board-run command line (docs/board.md "Board jobs, tools
# and co-simulation"): exit codes, one-line errors, the output folder (traces, counters,
# dumps), a deadlock and an error halt on a board. Usage: run_board_cli.sh TPU-BOARD-RUN
# TPU-MKPROG WORKDIR
run=$1; mkprog=$2; out=$3
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }
expect() {
    st=$1; what=$2; text=$3; shift 3
    "$@" >"$out/log" 2>&1; got=$?
    if [ "$got" -ne "$st" ]; then bad "$what: exit $got, expected $st"; sed 's/^/    /' "$out/log"; return 1; fi
    if ! grep -qF -- "$text" "$out/log"; then bad "$what: no '$text' in:"; sed 's/^/    /' "$out/log"; return 1; fi
    ok
}
rm -rf "$out"; mkdir -p "$out"
"$mkprog" allreduce --cores 4 --topology torus --mxu 3 -o "$out/job" >/dev/null ||
    { echo "FAIL: tpu-mkprog allreduce"; exit 1; }

expect 0 "help" "usage: tpu-board-run" "$run" --help
expect 2 "no --mxu" "--mxu ''" "$run" --cores 4 --job "$out/job" --out "$out/o"
expect 2 "bad --cores" "--cores '65' is out of range (allowed: 1..64)" "$run" --mxu 3 --cores 65 --job "$out/job" --out "$out/o"
expect 2 "bad --topology" "--topology 'torus:3x3': R*S = 9 must equal --cores 4 (allowed: torus:RxS, R, S >= 1)" \
    "$run" --mxu 3 --cores 4 --topology torus:3x3 --job "$out/job" --out "$out/o"
expect 2 "unknown --topology" "--topology 'mesh' is not a topology (allowed: ring, torus, torus:RxS with R*S = --cores)" \
    "$run" --mxu 3 --cores 4 --topology mesh --job "$out/job" --out "$out/o"
expect 2 "bad --link-bits" "--link-bits '16' is out of range (allowed: 32..1024)" \
    "$run" --mxu 3 --cores 4 --link-bits 16 --job "$out/job" --out "$out/o"
expect 2 "bad --link-latency" "--link-latency '17' is out of range (allowed: 0..16)" \
    "$run" --mxu 3 --cores 4 --link-latency 17 --job "$out/job" --out "$out/o"
expect 2 "bad --ub-kib" "--ub-kib '1': expected a size giving 1 .. 65536 whole rows of 2N bytes" \
    "$run" --mxu 3 --cores 4 --ub-kib 1 --job "$out/job" --out "$out/o"
expect 2 "no --job" "--job ''" "$run" --mxu 3 --cores 4 --out "$out/o"
expect 2 "missing core file" "cannot read $out/job/core4.args" \
    "$run" --mxu 3 --cores 5 --job "$out/job" --out "$out/o"
expect 2 "too many core files" "holds $out/job/core2.args but --cores is 2" \
    "$run" --mxu 3 --cores 2 --job "$out/job" --out "$out/o"

# the job: every core done, its trace, counters and dumps
expect 0 "allreduce job" "tpu-board-run: done" \
    "$run" --mxu 3 --cores 4 --topology torus --job "$out/job" --out "$out/o"
grep -q "board: 4 cores, torus 2x2" "$out/log" && ok || bad "no board line"
for i in 0 1 2 3; do
    [ "$(head -n 1 "$out/o/core$i.trace")" = "# tpu-core-trace 3" ] && ok || bad "core $i: trace header"
    grep -q "^r [0-9]* [0-9]* 0.0.0.0.0.0 allreduce " "$out/o/core$i.trace" && ok || bad "core $i: no allreduce in the trace"
    grep -qx 'counters: CYCLES=[0-9]* MXU_BUSY=[0-9]* WL_STALL=[0-9]* DMA_BUSY=[0-9]* VPU_BUSY=[0-9]* INSNS=[0-9]* NET_BUSY=[0-9]*' \
        "$out/o/core$i.counters" && ok || bad "core $i: counters file"
    n=$(ls "$out/o/core$i"/*.npy 2>/dev/null | wc -l)
    [ "$n" -ge 1 ] && ok || bad "core $i: no dumps in $out/o/core$i"
done
# every core ends with the same all-reduced bits (the topology one and the ring one)
for f in $(cd "$out/o/core0" && ls *.npy); do
    for i in 1 2 3; do cmp -s "$out/o/core0/$f" "$out/o/core$i/$f" && ok || bad "$f differs on core $i"; done
done
# the same job with other links: same traces and dumps, other cycles
expect 0 "W=256 D=0" "tpu-board-run: done" \
    "$run" --mxu 3 --cores 4 --topology torus --link-bits 256 --link-latency 0 --job "$out/job" --out "$out/o2"
for i in 0 1 2 3; do cmp -s "$out/o/core$i.trace" "$out/o2/core$i.trace" && ok || bad "core $i: the trace depends on the links"; done
cmp -s "$out/o/core0.counters" "$out/o2/core0.counters" && bad "the counters do not depend on the links" || ok

# a deadlock: both cores receive first
mkdir -p "$out/dl"
printf 'recv ub row=0 rows=1 core=1\nhalt\n' >"$out/dl/c0.s"
printf 'nop\nrecv ub row=0 rows=1 core=0\nhalt\n' >"$out/dl/c1.s"
echo "--prog c0.s" >"$out/dl/core0.args"
echo "--prog c1.s" >"$out/dl/core1.args"
expect 1 "deadlock" "core 1 stuck at pc 1: recv ub row=0 rows=1 core=0 (core 0 waits at pc 0: recv ub row=0 rows=1 core=1)" \
    "$run" --mxu 2 --cores 2 --job "$out/dl" --out "$out/dlo"
grep -q "tpu-board-run: core 0: stuck at pc 0: recv ub row=0 rows=1 core=1" "$out/log" && ok || bad "deadlock: core line"
# error 8 on a board: send to a core >= C
printf 'send ub row=0 rows=1 core=2\nhalt\n' >"$out/dl/c0.s"
printf 'halt\n' >"$out/dl/c1.s"
expect 1 "error 8" "tpu-board-run: core 0: error 8 (bad core id) at pc 0: send ub row=0 rows=1 core=2" \
    "$run" --mxu 2 --cores 2 --job "$out/dl" --out "$out/dlo"
[ "$(tail -n 1 "$out/dlo/core0.trace")" = "e 0 0 8" ] && ok || bad "error 8: trace ends with '$(tail -n 1 "$out/dlo/core0.trace")'"
# a dead link (--link-dead L@CYCLE, docs/board.md "Link faults"): on a ring of 2 everything
# from core 0 to core 1 goes east (link 0), from core 1 to core 0 east too (link 2); link 1,
# core 0's west, carries nothing
printf 'send ub row=0 rows=1 core=1\nhalt\n' >"$out/dl/c0.s"
printf 'recv ub row=0 rows=1 core=0\nhalt\n' >"$out/dl/c1.s"
expect 2 "--link-dead syntax" "--link-dead '0' is not LINK@CYCLE" "$run" --mxu 2 --cores 2 --job "$out/dl" --out "$out/ld" --link-dead 0
expect 2 "--link-dead link" "--link-dead '4@0': link 4 does not exist (allowed: 0 .. 3 on this board)" \
    "$run" --mxu 2 --cores 2 --job "$out/dl" --out "$out/ld" --link-dead 4@0
expect 2 "--link-dead torus link" "--link-dead '16@0': link 16 does not exist (allowed: 0 .. 15 on this board)" \
    "$run" --mxu 3 --cores 4 --topology torus --job "$out/job" --out "$out/ld" --link-dead 16@0
# the data lost: the sender gets rid of its 2 flits (the link's replay window), the receiver
# waits and stops with error 9
expect 1 "data lost" "tpu-board-run: core 1: error 9 (a link of the board is dead) at pc 0: recv ub row=0 rows=1 core=0" \
    "$run" --mxu 2 --cores 2 --job "$out/dl" --out "$out/ld" --link-dead 0@0
grep -q "tpu-board-run: core 0: done" "$out/log" && ok || bad "data lost: the sender is not done"
[ "$(tail -n 2 "$out/ld/core1.trace" | tr '\n' ' ')" = "r 0 0 0.0.0.0.0.0 recv ub row=0 rows=1 core=0 e 0 0 9 " ] && ok ||
    bad "data lost: core 1's trace ends with '$(tail -n 2 "$out/ld/core1.trace" | tr '\n' ' ')'"
grep -q "^w " "$out/ld/core1.trace" && bad "data lost: core 1 wrote a row" || ok
# the ready token lost: neither side moves
expect 1 "token lost" "tpu-board-run: core 0: error 9 (a link of the board is dead) at pc 0: send ub row=0 rows=1 core=1" \
    "$run" --mxu 2 --cores 2 --job "$out/dl" --out "$out/ld" --link-dead 2@0
grep -q "tpu-board-run: core 1: error 9 " "$out/log" && ok || bad "token lost: core 1 not error 9"
# a link the pair does not use, and a link that dies after the pair completed
expect 0 "unused link" "tpu-board-run: done" "$run" --mxu 2 --cores 2 --job "$out/dl" --out "$out/ld" --link-dead 1@0
expect 0 "dies later" "tpu-board-run: done" "$run" --mxu 2 --cores 2 --job "$out/dl" --out "$out/ld" --link-dead 0@1000
# the instruction after the collective fails its checks first (pc 1 past a 1-word IMEM: 6)
printf 'send ub row=0 rows=1 core=1\n' >"$out/dl/c0.s"
printf 'recv ub row=0 rows=1 core=0\n' >"$out/dl/c1.s"
expect 1 "error 6 first" "tpu-board-run: core 1: error 6 (pc ran off the end of imem) at pc 1" \
    "$run" --mxu 2 --cores 2 --imem-insns 1 --job "$out/dl" --out "$out/ld" --link-dead 0@0
# tpu-mkprog random-board --coll-rows (the rows of a round's collective): its own kind only
expect 2 "--coll-rows on bcast" "--coll-rows is an option of random-board, not of bcast" \
    "$mkprog" bcast --cores 2 --mxu 2 --coll-rows 4 -o "$out/cr"
expect 2 "--coll-rows 0" "--coll-rows '0' is out of range (allowed: 1..65535)" \
    "$mkprog" random-board --cores 2 --mxu 2 --coll-rows 0 -o "$out/cr"
"$mkprog" random-board --cores 2 --mxu 2 --seed 5 --coll-rows 3 -o "$out/cr" >/dev/null &&
    ! grep -h "rows=\([4-9]\|[1-9][0-9]\)" "$out/cr"/core*.s | grep -q "^\(send\|recv\|bcast\|allreduce\)" &&
    ok || bad "--coll-rows 3: a collective of more rows"
# a bad option in a core's file
echo "--mxu 2" >>"$out/dl/core1.args"
expect 2 "bad core option" "unknown option '--mxu' (allowed: --prog X, --load X, --dump X, --dump-dir X, --hostmem-mib X, --pc-start X); expected a host option of a core job" \
    "$run" --mxu 2 --cores 2 --job "$out/dl" --out "$out/dlo"

# issue 16: one option grammar; a duplicate refused; the reason of a failure named
expect 2 "duplicate --cores" "option '--cores' given twice" "$run" --mxu 3 --cores 4 --cores 4 --job "$out/job" --out "$out/o"
expect 2 "abbreviation" "unknown option '--mx'" "$run" --mx 3 --cores 4 --job "$out/job" --out "$out/o"
expect 2 "--mxu 0x3" "--mxu '0x3' is not a whole number (allowed: 1..256)" "$run" --mxu 0x3 --cores 4 --job "$out/job" --out "$out/o"
expect 2 "--out under /proc" "cannot create the folder '/proc/tpu-x': " "$run" --mxu 3 --cores 4 --job "$out/job" --out /proc/tpu-x
# issue 16 item 7: the cycle limit reaches every core
expect 1 "--max-cycles" "stopped at the cycle limit (--max-cycles 1)" "$run" --mxu 3 --cores 4 --job "$out/job" --out "$out/lim" --max-cycles 1
echo "tpu-board-run CLI: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
