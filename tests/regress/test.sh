#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-regress: a small regression through the same scripts as make regress (N = 4: 10
# random programs on the model and the RTL, each also with 3 X-initialisation seeds, one
# back-pressure seed and one AXI latency seed; 2 random-board jobs on N = 4, C = 2 ring, each
# also with link back-pressure, with an injected link fault and with a link dead from the start)
# plus one deliberately failing job (--inject-fault 0). Checks: the counts in the summary; the failing job, and only it, is
# reported with its replay command, and that command fails again while a passed job's replays
# and passes; the JUnit XML parses (xml.etree) with one testcase per job and the failure's
# replay command in it; a second run reruns only the failed job (resumable).
# usage: sh tests/regress/test.sh DIR
set -u
dir=$1
cd "$(dirname "$0")/../.." || exit 2
rm -rf "$dir"
mkdir -p "$(dirname "$dir")" || exit 2 # $dir.log beside it (a fresh build directory has no build/tests)
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
args="--seeds 10 --ns 4 --xseeds 3 --stall-seeds 1 --latency-seeds 1 --boards 4:2:ring --board-seeds 2 --with-failing"
# 10 x (1 + 3 + 1 + 1) core jobs, 2 board jobs, 2 link back-pressure, 2 link fault and 2 dead
# link jobs, 1 failing job
k=69
# shellcheck disable=SC2086
REGRESS_JOBS=2 sh tests/regress/regress.sh "$dir" $args >"$dir.log" 2>&1
st=$?
cat "$dir.log"
[ $st -eq 1 ] && ok || bad "regress.sh exit $st with a failing job (expected 1)"
[ "$(wc -l <"$dir/list.txt")" -eq $k ] && ok || bad "$(wc -l <"$dir/list.txt") jobs listed, expected $k"
grep -q "^regression: $k jobs: $((k - 1)) passed, 1 failed, 0 not run" "$dir/summary.txt" && ok ||
    bad "summary: $(head -n 1 "$dir/summary.txt")"
replay=$(sed -n 's/^FAIL: fault-N4-s1: replay: \(.*\)   (log: .*/\1/p' "$dir/summary.txt")
[ "$replay" = "sh tests/regress/job.sh core 4 1 0 1 0 --inject-fault 0" ] && ok ||
    bad "the failing job's replay command: '$replay'"
[ "$(grep -c '^FAIL: ' "$dir/summary.txt")" -eq 1 ] && ok || bad "more than one failure reported"
# the replay command fails again, with the divergence; a passed job's replays and passes
REGRESS_OUT=$dir/replay_fail $replay >"$dir/replay_fail.log" 2>&1 && bad "the replay of the failing job passed" ||
    { grep -q 'first divergence at record 1' "$dir/replay_fail.log" && ok || bad "the replay names no divergence"; }
p=$(sed -n '2p' "$dir/results/$(sed -n '2s/ .*//p' "$dir/list.txt").pass")
REGRESS_OUT=$dir/replay_pass $p >"$dir/replay_pass.log" 2>&1 && ok || bad "replay of a passed job: $p: $(tail -n 3 "$dir/replay_pass.log")"
# JUnit XML
/usr/bin/python3 - "$dir/junit.xml" "$k" <<'PY' && ok || bad "junit.xml"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
k = int(sys.argv[2])
assert root.tag == "testsuites", root.tag
cases = root.findall("./testsuite/testcase")
assert len(cases) == k and int(root.get("tests")) == k, (len(cases), root.get("tests"))
fails = [c for c in cases if c.find("failure") is not None]
assert len(fails) == 1 and int(root.get("failures")) == 1, len(fails)
f = fails[0]
assert f.get("name") == "fault-N4-s1", f.get("name")
assert "sh tests/regress/job.sh core 4 1 0 1 0 --inject-fault 0" in f.find("failure").get("message")
assert "first divergence" in f.find("failure").text
groups = {s.get("name"): int(s.get("tests")) for s in root.findall("testsuite")}
assert groups == {"regress.board.N4": 2, "regress.core.N4": 10, "regress.fault.N4": 1, "regress.lat.N4": 10,
                  "regress.stall.N4": 10, "regress.xinit.N4": 30, "regress.link.N4": 2,
                  "regress.lfault.N4": 2, "regress.ldead.N4": 2}, groups
print("junit.xml: %d testcases in %d testsuites, 1 failure with its replay command" % (len(cases), len(groups)))
PY
# resumable: the second run runs the failing job only
# shellcheck disable=SC2086
REGRESS_JOBS=2 sh tests/regress/regress.sh "$dir" $args >"$dir.rerun.log" 2>&1
grep -q "^regress: $k jobs, $((k - 1)) results passed before (not rerun)" "$dir.rerun.log" && ok ||
    bad "rerun: $(grep '^regress: ' "$dir.rerun.log" | head -n 1)"
[ "$(awk 'NR > 1' "$dir/parallel.log" | wc -l)" -eq $k ] && ok || bad "parallel's joblog"
n_ran=$(grep -c '^FAIL: fault-N4-s1 (' "$dir.rerun.log")
[ "$n_ran" -eq 1 ] && ok || bad "rerun: the failing job was not rerun"
# X-init seeds: 3 different ones per program, as core_tb wrote them in its trace's header
x=$(grep -h 'trace header: verilator-seed' "$dir/results"/xinit-N4-s1-*.log | grep -o 'header: verilator-seed [0-9]*' | sort -u | wc -l)
[ "$x" -eq 3 ] && ok || bad "X-init seeds of program 1: $x different (expected 3)"
# functional coverage (tests/regress/tpu_cover.c): one coverage file per job, the table and
# the holes printed by regress.sh; the tool itself on a hand-written program and trace
cov=${TPU_COVER:-build/tools/tpu-cover}
grep -q "^coverage: $k coverage files (one per job)" "$dir/coverage.txt" && ok ||
    bad "coverage.txt: $(head -n 1 "$dir/coverage.txt" 2>/dev/null)"
for g in insn error hazard port rows dma coll state loop link sweep total; do
    grep -q "^$g  *[0-9]" "$dir/coverage.txt" || bad "coverage.txt has no '$g' row"
done
grep -q '^hole: ' "$dir/coverage.txt" && ok || bad "coverage.txt lists no hole"
# the link and lfault jobs' RTL runs: back-pressure and a reported fault (docs/board.md)
grep -q '^link  *6  *[2-6] ' "$dir/coverage.txt" && ok || bad "coverage.txt: $(grep '^link' "$dir/coverage.txt")"
grep -q '^regress: coverage in ' "$dir.log" && ok || bad "regress.sh did not print the coverage"
mkdir -p "$dir/cover"
cat >"$dir/cover/t.s" <<'EOF'
dma_in ub row=0 rows=4 cols=4 addr=0x1000 stride=8
vop relu a=ub:3 dst=acc:0 rows=1
dma_out acc row=0 rows=1 cols=1 addr=0x3fffffc stride=0
sync
halt
EOF
printf '# tpu-core-trace 3\nr 0 0 0.0.0.0.0.0 dma_in ub row=0 rows=4 cols=4 addr=0x1000 stride=8\nr 1 1 0.0.0.0.0.0 vop relu a=ub:3 dst=acc:0 rows=1\nr 2 2 0.0.0.0.0.0 dma_out acc row=0 rows=1 cols=1 addr=0x3fffffc stride=0\nr 3 3 0.0.0.0.0.0 sync\nr 4 4 0.0.0.0.0.0 halt\n' >"$dir/cover/t.trace"
"$cov" core --mxu 4 --prog "$dir/cover/t.s" --trace "$dir/cover/t.trace" --tag mytag -o "$dir/cover/t.cov" &&
"$cov" report "$dir/cover/t.cov" >"$dir/cover/report.txt" && ok || bad "tpu-cover on a hand-written job"
tab=$(printf '\t')
for b in "insn:vop relu a=ub dst=acc:1" "hazard:RAW DMA->VPU ub:1" "hazard:RAW VPU->DMA acc:1" \
         "rows:vop ub read last:0" "rows:vop ub read one:1" "dma:dma_out last host byte:1" \
         "dma:dma_out cols=1:1" "state:outcome done:1" "sweep:mytag:1"; do
    c=${b##*:}; key=$(echo "${b%:*}" | sed "s/:/$tab/")
    got=$(grep -c "^$key$tab" "$dir/cover/t.cov")
    [ "$got" -eq "$c" ] && ok || bad "tpu-cover: bin '$key' hit $got times in t.cov, expected $c"
done
grep -q '^insn  *[0-9]*  *5 ' "$dir/cover/report.txt" && ok || bad "report: $(grep '^insn' "$dir/cover/report.txt")"
# the loop group (docs/isa.md "Loops") on a nest run by the model (trace format 2): a hoisted
# level 1, then a sibling level 1 re-armed in the outer body, two bodies ending at the lw
cat >"$dir/cover/l.s" <<'EOF'
dma_in ub row=0 rows=8 cols=4 addr=0x1000 stride=0
dma_in wmem row=0 rows=8 cols=4 addr=0x1000 stride=0
stride x1 l0=1 l1=-1 l2=0
stride x2 l3=4
loop 0 count=2 skip=2 body=4
loop 1 count=3 skip=2 body=1
nop
vop relu a=ub:2+x1 dst=ub:2+x1 rows=1
loop 1 count=1 body=1
lw w=0+x2
halt
EOF
${TPU_RUN:-build/tools/tpu-run} --mxu 4 --prog "$dir/cover/l.s" --trace "$dir/cover/l.trace" >"$dir/cover/l.log" 2>&1 &&
"$cov" core --mxu 4 --prog "$dir/cover/l.s" --trace "$dir/cover/l.trace" -o "$dir/cover/l.cov" && ok ||
    bad "tpu-cover on a loop nest"
for b in "loop:level 0 armed:1" "loop:level 1 armed:3" "loop:nest depth 1:5" "loop:nest depth 2:5" \
         "loop:hoisted inner loop (armed once, outside its outer body):1" \
         "loop:re-armed inner loop (armed at its place in the outer body):2" \
         "loop:sibling loops at one level (two bodies in one outer body):1" \
         "loop:bodies of two levels ending at the same instruction:2" "loop:stride l1 negative:1" \
         "loop:stride l3 positive:1" "loop:register on vop a:4" "loop:register on lw w:2" \
         "loop:negative register value on an operand:4" "insn:loop:4" "insn:vop relu a=ub dst=ub:4"; do
    c=${b##*:}; key=$(echo "${b%:*}" | sed "s/:/$tab/")
    got=$(grep -c "^$key$tab$c\$" "$dir/cover/l.cov")
    [ "$got" -eq 1 ] && ok || bad "tpu-cover: bin '$key' in l.cov: $(grep "^$key$tab" "$dir/cover/l.cov"), expected $c hits"
done
# modulo registers (docs/isa.md "Loops", the modulus form): set, cleared, a row and a host
# address that wrapped, a row that wrapped below 0
cat >"$dir/cover/m.s" <<'EOF'
dma_in ub row=0 rows=16 cols=4 addr=0x1000 stride=0
stride x1 l0=4
stride x1 mod=16
stride x2 l0=-2
stride x2 mod=8
stride x3 l0=8
stride x3 mod=64
loop 0 count=5 body=3
dma_in wmem row=8+x1 rows=4 cols=4 addr=0x1020+x3 stride=8
lw w=8+x1
vop relu a=ub:1+x2 dst=ub:1+x2 rows=1
stride x1 mod=0
halt
EOF
${TPU_RUN:-build/tools/tpu-run} --mxu 4 --prog "$dir/cover/m.s" --trace "$dir/cover/m.trace" >"$dir/cover/m.log" 2>&1 &&
"$cov" core --mxu 4 --prog "$dir/cover/m.s" --trace "$dir/cover/m.trace" -o "$dir/cover/m.cov" && ok ||
    bad "tpu-cover on modulo registers"
# x1: 8, 12, 0, 4, 8 (the dma_in's and lw's rows wrap at t = 2, 3, 4); x2: 1, 15, 13, 11, 9
# (below 0 from t = 1: a and dst); x3: (0x1020 + 8 t) mod 64: 32, 40, 48, 56, 0 (each
# address changed by the mask)
for b in "loop:modulus form dispatched (stride xR mod=M, M = 2^k):3" \
         "loop:modulus cleared (stride xR mod=0, k = 0):1" \
         "loop:a row operand that wrapped (its register's modulus changed the row):10" \
         "loop:a host address that wrapped (its register's modulus changed the address):5"; do
    c=${b##*:}; key=$(echo "${b%:*}" | sed "s/:/$tab/")
    got=$(grep -c "^$key$tab$c\$" "$dir/cover/m.cov")
    [ "$got" -eq 1 ] && ok || bad "tpu-cover: bin '$key' in m.cov: $(grep "^$key$tab" "$dir/cover/m.cov"), expected $c hits"
done
# the regression's programs (tpu-mkprog random) use the modulus form and wrap operands
for b in "modulus form dispatched" "a row operand that wrapped" "a host address that wrapped"; do
    grep -q "^loop$tab$b" "$dir"/results/*.cov && ok ||
        bad "no job of the regression hit the loop bin '$b' (tpu-mkprog random's modulo registers)"
done
# the bins come from the ISA: every mnemonic, each legal flag combination (a new flag shows up)
"$cov" bins --mxu 4 >"$dir/cover/bins.txt" || bad "tpu-cover bins"
for m in nop sync halt loop stride dma_in dma_out lw matmul vop vred softmax send recv bcast barrier allreduce; do
    grep -q "^insn$tab$m\( \|\$\)" "$dir/cover/bins.txt" || bad "tpu-cover bins: no insn bin for $m"
done
echo "test-regress: coverage: $(grep '^total' "$dir/coverage.txt")"
echo "test-regress: $pass passed, $fail failed"
[ $fail -eq 0 ]
