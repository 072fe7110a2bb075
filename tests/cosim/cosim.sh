#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# cosim.sh SET N [S]: runs the co-simulation cases of SET (quick | full) on the N x N MXU
# (build/sim/mxu_N<N>/mxu_tb, built by make), one line per case; exits 1 if any fails and
# shows that case's whole output. Traces and logs go to build/tests/cosim/N<N>/.
# With S (the PE depth, gen --pe-stages S, 2 or 3) the model is build/sim/mxu_N<N>_S<S>/
# and the output build/tests/cosim/N<N>_S<S>/; the cases are the same.
set -u
set_name=$1; N=$2; S=${3:-1}
cfg=$N; [ "$S" = 1 ] || cfg=${N}_S$S
tb=build/sim/mxu_N$cfg/mxu_tb
out=build/tests/cosim/N$cfg
mkdir -p "$out"
M8=$((8 * N)); K4=$((4 * N))
# Cases: "dist seed M K N'". edges uses M = 128 >= its 112 scenario rows (matgen.h) and
# N' >= 8 so that every W column pattern appears. Case 8 is the very long accumulation
# (K = 4100 >= 4096): edges' W column 1 is +-1 alternating, so that column is an
# alternating-sign chain of 4100 products through hundreds of K-tiles.
NE=$((N + 3)); [ "$NE" -lt 10 ] && NE=10
KL=$((N > 1 ? N - 1 : 1))
quick="uniform 1 $M8 $K4 $K4
wide 2 $((2 * N + 3)) $((3 * N + 1)) $((2 * N + 1))
normal 3 $((N + 1)) $((2 * N)) $((N + 2))
ints 4 3 $((5 * N + 3)) $N
edges 5 128 $((2 * N + 5)) $NE
edges 6 120 $KL $((2 * N + 1))
uniform 7 1 1 1
edges 8 128 4100 $NE"
full="$quick
wide 11 $M8 $K4 $K4
normal 12 $((3 * N)) $((7 * N + 1)) $((3 * N - 1 > 0 ? 3 * N - 1 : 1))
ints 13 $((4 * N + 1)) $((2 * N + 1)) $((5 * N))
edges 14 256 $((3 * N + 2)) $((N + 9))
edges 15 128 $((N + 1)) 8
uniform 16 $((32 * N)) $K4 $K4"
case "$set_name" in
quick) cases=$quick ;;
full) cases=$full ;;
*) echo "cosim.sh: unknown set $set_name" >&2; exit 2 ;;
esac
i=0; fail=0
while read -r dist seed m k n; do
    i=$((i + 1))
    log="$out/$set_name$i.log"
    args="--m $m --k $k --n $n --dist $dist --seed $seed"
    if "$tb" $args --rtl-trace "$out/$set_name$i.rtl.trace" \
        --model-trace "$out/$set_name$i.model.trace" >"$log" 2>&1; then
        echo "  $(tail -n 1 "$log")"
    else
        fail=$((fail + 1))
        echo "  FAILED: $tb $args"
        sed 's/^/    /' "$log"
    fi
done <<CASES
$cases
CASES
echo "cosim N=$N S=$S $set_name: $((i - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
