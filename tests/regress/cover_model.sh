#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The functional coverage of the constrained-random generators on the C model alone (no RTL:
# seconds, not the regression's hour), for work on tpu/randprog.h: tpu-mkprog random at each N
# of NS for seeds 1 .. SEEDS through tpu-run (which must end as job.txt expects), tpu-mkprog random-board on each board of BOARDS
# for seeds 1 .. BOARD_SEEDS through tpu-board-run, fault-free and with one link dead from
# cycle 0 (--link-dead, the link drawn from the seed), each job's coverage by tpu-cover, the
# report in OUT/coverage.txt. The link group's RTL bins (back-pressure, faults, replays) stay
# holes here: make regress measures them.
# usage: sh tests/regress/cover_model.sh OUT [SEEDS [BOARD_SEEDS [NS [BOARDS]]]]
#   defaults: 300 seeds, 30 board seeds, NS "2 4 8", BOARDS "4:2:ring 4:4:torus:2x2"
# Environment: BUILD (default build). Exit 0, 1 when a tool fails, 2 bad arguments.
set -u
[ $# -ge 1 ] || { echo "usage: $0 OUT [SEEDS [BOARD_SEEDS [NS [BOARDS]]]]" >&2; exit 2; }
out=$1; seeds=${2:-300}; bseeds=${3:-30}; ns=${4:-2 4 8}; boards=${5:-4:2:ring 4:4:torus:2x2}
cd "$(dirname "$0")/../.." || exit 2
t=${BUILD:-build}/tools
for x in tpu-mkprog tpu-run tpu-board-run tpu-cover; do
    [ -x "$t/$x" ] || { echo "$0: $t/$x missing (make tools)" >&2; exit 2; }
done
rm -rf "$out"; mkdir -p "$out/res" || exit 2
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
for n in $ns; do
    s=1
    while [ "$s" -le "$seeds" ]; do
        d=$out/c$n-$s
        if "$t/tpu-mkprog" random --mxu "$n" --seed "$s" -o "$d" >/dev/null 2>&1; then
            "$t/tpu-run" --mxu "$n" --prog "$d/prog.s" "@$d/job.args" --trace "$d/m.trace" \
                --dump-dir "$d/m" >"$d/m.log" 2>&1
            st=$?
            # the model ends as job.txt predicts (expect done, or expect error E pc P)
            exp=$(sed -n 's/^expect //p' "$d/job.txt")
            case $exp in
            done) [ $st -eq 0 ] || bad "tpu-run N=$n seed $s: exit $st, expected done" ;;
            error*) set -- $exp
                [ $st -eq 1 ] && tail -n 1 "$d/m.trace" | grep -qx "e [0-9]* $4 $2" ||
                    bad "tpu-run N=$n seed $s: expected error $2 at pc $4: $(tail -n 1 "$d/m.trace")" ;;
            *) bad "tpu-mkprog random N=$n seed $s: no expect line" ;;
            esac
            "$t/tpu-cover" core --mxu "$n" --prog "$d/prog.s" --trace "$d/m.trace" --log "$d/m.log" \
                --args "$d/job.args" --tag "N=$n" -o "$out/res/c$n-$s.cov" || bad "tpu-cover N=$n seed $s"
        else
            bad "tpu-mkprog random --mxu $n --seed $s"
        fi
        rm -rf "$d"
        s=$((s + 1))
    done
done
for spec in $boards; do
    n=${spec%%:*}; rest=${spec#*:}; c=${rest%%:*}; topo=${rest#*:}
    nl=$((c * $(case $topo in torus*) echo 4;; *) echo 2;; esac)))
    tag=$n-$c$(echo "$topo" | tr -d ':')
    s=1
    while [ "$s" -le "$bseeds" ]; do
        d=$out/b$tag-$s
        mkdir -p "$d"
        if "$t/tpu-mkprog" random-board --mxu "$n" --cores "$c" --topology "$topo" --seed "$s" \
            -o "$d/job" >/dev/null 2>&1; then
            "$t/tpu-board-run" --mxu "$n" --cores "$c" --topology "$topo" --job "$d/job" --out "$d/m" \
                >"$d/m.log" 2>&1 || bad "tpu-board-run $spec seed $s"
            "$t/tpu-board-run" --mxu "$n" --cores "$c" --topology "$topo" --job "$d/job" --out "$d/md" \
                --link-dead "$((s % nl))@0" >"$d/md.log" 2>&1
            [ $? -le 1 ] || bad "tpu-board-run $spec seed $s --link-dead $((s % nl))@0"
            for m in m md; do
                "$t/tpu-cover" board --mxu "$n" --cores "$c" --topology "$topo" --job "$d/job" \
                    --model "$d/$m" --tag "board C=$c $topo" -o "$out/res/$m$tag-$s.cov" ||
                    bad "tpu-cover $spec seed $s"
            done
        else
            bad "tpu-mkprog random-board $spec seed $s"
        fi
        rm -rf "$d"
        s=$((s + 1))
    done
done
"$t/tpu-cover" report --holes 200 -o "$out/coverage.txt" "$out/res" || bad "tpu-cover report"
sed -n '1,/^total/p' "$out/coverage.txt"
echo "cover_model: $(grep -c '^hole: ' "$out/coverage.txt") hole(s) listed in $out/coverage.txt, $fails failure(s)"
[ $fails -eq 0 ]
