#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Link faults and link back-pressure on the assembled board (docs/board.md "Link faults"):
# a board job (tpu-mkprog KIND, default random-board) on the model and on board_tb with
#   - link back-pressure (--link-stall P, each P of STALLS, with core-port --stall 20),
#   - each fault kind on every link from cycle CYCLE: flip, flip2, drop, and a long stall of
#     2,000 cycles (--link-fault),
# every run: exit 0, every armed fault hit and reported by the links (faults or replays
# counted), every core's trace and dumps identical to the model's (tpu-board-cmp); then a
# permanent fault (stuck on link 0 from cycle 0): the link is declared dead, board_tb names it
# and exits 1, the cores whose collective waited on it halt with error 9 (STATUS, ERR_CODE, the
# trace's e line), and every core's trace and dumps equal the model's with --link-dead 0@0.
# usage: sim/board_linkfault.sh N C TOPOLOGY DIR [STALLS] [KIND SEED]
# Environment: BOARD_TB (default: built by sim/board_build.sh asm N C TOPOLOGY 64 2),
#   TPU_BOARD_RUN, TPU_MKPROG, BOARD_CMP, LINKFAULT_CYCLE (default 3000: inside the first
#   collectives of the random-board jobs).
# Exit 0 PASS, 1 FAIL.
set -u
[ $# -ge 4 ] || { echo "usage: $0 N C TOPOLOGY DIR [STALLS] [KIND SEED]" >&2; exit 2; }
n=$1; c=$2; topo=$3; dir=$4; stalls=${5:-10,50}; kind=${6:-random-board}; seed=${7:-3}
cd "$(dirname "$0")/.." || exit 2
run=${TPU_BOARD_RUN:-build/tools/tpu-board-run}
mkprog=${TPU_MKPROG:-build/tools/tpu-mkprog}
cmp=${BOARD_CMP:-build/sim/tpu-board-cmp}
at=${LINKFAULT_CYCLE:-3000}
name="N=$n C=$c $topo $kind seed=$seed"
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $name: $*"; fail=$((fail + 1)); }
tb=${BOARD_TB:-}
mkdir -p "$(dirname "$dir")"
if [ -z "$tb" ]; then
    tb=$(sh sim/board_build.sh asm "$n" "$c" "$topo" 64 2 2>"$dir.build.log" | tail -n 1) ||
        { echo "FAIL: building board_tb failed"; tail -n 30 "$dir.build.log"; exit 1; }
    [ -x "$tb" ] || { echo "FAIL: building board_tb gave no harness: $(tail -n 5 "$dir.build.log")"; exit 1; }
fi
rm -rf "$dir"; mkdir -p "$dir"
# random-board with small rounds (--coll-rows 8): the permanent fault below is compared with
# the model, which does not time a large transfer the dead link stops part-way
rows=""; [ "$kind" = random-board ] && rows="--coll-rows 8"
# shellcheck disable=SC2086
"$mkprog" "$kind" --mxu "$n" --cores "$c" --topology "$topo" --seed "$seed" $rows -o "$dir/job" \
    >"$dir/mkprog.log" 2>&1 || { cat "$dir/mkprog.log"; echo "FAIL: tpu-mkprog"; exit 1; }
"$run" --mxu "$n" --cores "$c" --topology "$topo" --link-bits 64 --link-latency 2 \
    --job "$dir/job" --out "$dir/model" >"$dir/model.log" 2>&1 ||
    { tail -n 5 "$dir/model.log"; echo "FAIL: the board model"; exit 1; }

# one_run TAG EXPECT-ARMED board_tb-options...: exit 0, outputs identical to the model's
one_run() {
    tag=$1; want=$2; shift 2
    r=$dir/rtl_$tag
    "$tb" --job "$dir/job" --out "$r" "$@" >"$r.log" 2>&1
    st=$?
    if [ $st -ne 0 ]; then bad "$tag: board_tb exit $st"; grep 'ERROR\|still busy\|error' "$r.log" | head -n 8; return; fi
    links=$(grep '^board_tb: links:' "$r.log")
    armed=$(echo "$links" | sed -n 's/.* \([0-9]*\) fault(s) armed, \([0-9]*\) hit.*/\1 \2/p')
    a=${armed% *}; h=${armed#* }
    flt=$(echo "$links" | sed -n 's/.*; \([0-9]*\) flit(s) found.*/\1/p')
    rep=$(echo "$links" | sed -n 's/.*, \([0-9]*\) replay(s).*/\1/p')
    if [ "$want" = faults ]; then
        # faults were armed on every link; those on links that carried flits afterwards were
        # hit and reported (h > 0), and the links replayed; the traces below show nothing
        # slipped through
        [ -n "$a" ] && [ "$a" -gt 0 ] && [ "$h" -gt 0 ] && [ "$rep" -gt 0 ] && [ -n "$flt" ] ||
            { bad "$tag: $links"; return; }
    fi
    "$cmp" --job "$dir/job" --mxu "$n" "$dir/model" "$r" >"$r.cmp" 2>&1 ||
        { bad "$tag: outputs differ from the model's"; grep -v ': PASS: ' "$r.cmp" | head -n 10; return; }
    echo "PASS: $name $tag: $(echo "$links" | sed 's/^board_tb: //'); traces and dumps identical"
    ok
}
for p in $(echo "$stalls" | tr ',' ' '); do
    one_run "linkstall$p" none --stall 20 --seed "$p$seed" --link-stall "$p"
done
for k in flip flip2 drop; do
    one_run "$k" faults --link-fault "$k@$at" --seed 7
done
one_run "longstall" none --link-fault "stall@$at+2000" --link-stall 5 --seed 7
one_run "faults+stall" faults --link-fault "flip@$at,drop@$((at * 3)),flip2@$((at * 5))" \
    --link-stall 30 --stall 20 --seed 9

# a permanent fault: the link gives up and says so, the cores waiting on it halt with error 9,
# board_tb fails; the model, told that link 0 is dead, ends every core the same way
r=$dir/rtl_stuck
"$tb" --job "$dir/job" --out "$r" --link-fault "stuck@0:0" >"$r.log" 2>&1
st=$?
"$run" --mxu "$n" --cores "$c" --topology "$topo" --link-bits 64 --link-latency 2 \
    --job "$dir/job" --out "$dir/model_dead" --link-dead 0@0 >"$dir/model_dead.log" 2>&1
mst=$?
e9=$(grep -c '^board_tb: core [0-9]*: error 9 (a link of the board is dead) at pc' "$r.log")
t9=$(for f in "$r"/core*.trace; do tail -n 1 "$f"; done | grep -c '^e [0-9]* [0-9]* 9$')
if [ $st -ne 1 ] || ! grep -q '^board_tb: ERROR: link 0 (core 0.s output port 1) is dead since cycle' "$r.log"; then
    bad "stuck: board_tb exit $st (expected 1 with a dead link 0): $(grep 'ERROR\|links:' "$r.log" | head -n 3)"
elif [ "$e9" -eq 0 ] || [ "$t9" -ne "$e9" ] || grep -q 'still busy' "$r.log"; then
    bad "stuck: $e9 core(s) halted with error 9 in STATUS/ERR_CODE, $t9 trace(s) end with it (expected the same, > 0, no core busy)"
elif [ $mst -ne 1 ] || [ "$(grep -c '^tpu-board-run: core [0-9]*: error 9 ' "$dir/model_dead.log")" -ne "$e9" ]; then
    bad "stuck: the model with --link-dead 0@0: exit $mst, $(grep -c 'error 9' "$dir/model_dead.log") core(s) with error 9, the RTL $e9"
elif ! "$cmp" --job "$dir/job" --mxu "$n" "$dir/model_dead" "$r" >"$r.cmp" 2>&1; then
    bad "stuck: outputs differ from the model's with --link-dead 0@0"; grep -v ': PASS: ' "$r.cmp" | head -n 10
else
    echo "PASS: $name stuck: $(grep 'ERROR: link' "$r.log" | head -n 1 | sed 's/^board_tb: //'); $e9 core(s) halted with error 9, traces and dumps identical to the model's (--link-dead 0@0)"; ok
fi
echo "board_linkfault $name: $pass passed, $fail failed"
[ $fail -eq 0 ]
