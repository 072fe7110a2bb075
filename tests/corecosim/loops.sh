#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-core-cosim: loops and index registers (docs/isa.md "Loops") on the verilated N = 4 core
# against the C model. Cases:
#   matmul   tests/asm/loop_matmul.s (A, B loaded by two dma_in before it, C dumped after it)
#   rearm    the same matmul with its inner loop re-armed at the head of the outer body
#            (one cycle more per outer iteration; the same C, byte for byte)
#   deep     4 levels (two hoisted, two re-armed), all seven registers, negative strides,
#            VPU and DMA operands (rows and a host address) advanced by them
#   xhigh    deep on the registers x8 .. x15: the same results as deep's
#   six      all 6 levels (levels 1 and 4 hoisted, the others re-armed), the strides of levels
#            3 .. 5 set by one stride instruction, a matmul with acc_mode=first:l5; the routing
#            ub[100 + q] = relu(a[p]) (q: p's six bits reversed) checked from the dump
#   range    a stride takes a vop's dst row past UB's end in the third iteration: error 2
#   negative a negative stride takes a row below 0 in the fourth iteration: error 2
#   nest     a loop whose body leaves its outer level's body: error 10
#   imemend  a loop whose body runs past the IMEM: error 10
#   count0   loop count=0: error 3
#   first    the matmul with acc_mode=first:l1 in place of the -0 fill (the same C)
#   afbad    a matmul with acc_first and flags[0] both set: error 1 (reserved)
#   lvbad    a loop of level 6 (no such level): error 1 (reserved)
#   mod      modulo index registers (stride's modulus form): a ring of 4 WMEM slots (mod=16)
#            through which 10 weight tiles stream (dma_in wmem, lw), their host addresses
#            mod 128, UB rows wrapping below 0 (mod=8), a vop dst wrapping (mod=64), then
#            mod=0 and exact rows again; the dumps equal those of the same program written
#            straight-line (mod_straight, run on the model and the RTL too)
#   modbad   a stride modulus form with k = 17 (reserved): error 1
# Each case: tpu-run and core_tb (stall 0; matmul and deep also stall 30) end the same way,
# the traces are identical (tpu-core-cmp), the dumps byte for byte, at stall 0 all seven
# counters (CYCLES, ..., INSNS, NET_BUSY) equal the model's, and an error halt is reported
# alike (code, pc and dynamic instruction).
# usage: tests/corecosim/loops.sh   Environment: BUILD (default build). Exit 0 PASS, 1 FAIL.
set -u
n=4
BUILD=${BUILD:-build}
tb=$BUILD/sim/core_N$n/core_tb
run=$BUILD/tools/tpu-run
cmp=$BUILD/sim/tpu-core-cmp
out=$BUILD/tests/corecosim/loops_N$n
rm -rf "$out"; mkdir -p "$out"
st=0

# inputs (python3's standard library only): a.npy 16 x 4 bf16 (UB), b.npy 24 x 4 bf16 (WMEM),
# f.npy 16 x 4 fp32 (ACC), negzero.npy one fp32 -0 word
python3 - "$out" <<'EOF' || { echo "FAIL: loops: cannot write the inputs"; exit 1; }
import random, struct, sys
def npy(path, descr, rows, cols, words):
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }" % (descr, rows, cols)
    hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
    fmt = "<%d%s" % (len(words), "H" if descr == "<u2" else "I")
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + struct.pack(fmt, *words))
r = random.Random(7)
bf = lambda: (r.randrange(2) << 15) | (r.randrange(120, 131) << 7) | r.randrange(128)
f32 = lambda: (r.randrange(2) << 31) | (r.randrange(120, 131) << 23) | r.randrange(1 << 23)
d = sys.argv[1]
npy(d + "/a.npy", "<u2", 16, 4, [bf() for _ in range(64)])
npy(d + "/b.npy", "<u2", 24, 4, [bf() for _ in range(96)])
npy(d + "/f.npy", "<u4", 16, 4, [f32() for _ in range(64)])
npy(d + "/negzero.npy", "<u4", 1, 1, [0x80000000])
npy(d + "/a64.npy", "<u2", 64, 4, [bf() for _ in range(256)])
EOF
cat >"$out/job.args" <<'EOF'
--load 0x1000=a.npy
--load 0x2000=b.npy
--load 0x3000=f.npy
--load 0x100=negzero.npy
--load 0x10000=a64.npy
--hostmem-mib 1
EOF

# case NAME STALLS EXPECT-EXIT [extra job options]: $out/NAME.s against the model
case_() {
    name=$1; stalls=$2; want=$3; shift 3
    d=$out/$name; mkdir -p "$d"
    { cat "$out/job.args"; for o in "$@"; do echo "$o"; done; } >"$d/job.args"
    cp "$out"/*.npy "$d/"
    "$run" --mxu $n --prog "$out/$name.s" "@$d/job.args" --trace "$d/model.trace" \
        --dump-dir "$d/model" >"$d/model.log" 2>&1
    mst=$?
    if [ $mst -ne "$want" ]; then
        echo "FAIL: loops $name: tpu-run exit $mst, expected $want"; tail -n 5 "$d/model.log" | sed 's/^/    /'; st=1; return
    fi
    mctr=$(grep -m1 'counters:' "$d/model.log" | sed 's/^tpu-run: counters: //')
    for s in $(echo "$stalls" | tr ',' ' '); do
        r=$d/rtl_s$s; what="loops $name stall=$s"
        "$tb" --prog "$out/$name.s" "@$d/job.args" --trace "$r.trace" --dump-dir "$r" \
            --stall "$s" --seed "1$s" >"$r.log" 2>&1
        rst=$?
        if [ $rst -ne $mst ] || grep -q 'AXI protocol violation\|timeout' "$r.log"; then
            echo "FAIL: $what: core_tb exit $rst, tpu-run exit $mst"; tail -n 6 "$r.log" | sed 's/^/    /'; st=1; continue
        fi
        if ! "$cmp" --prog "$out/$name.s" --mxu $n "$d/model.trace" "$r.trace" >"$r.cmp" 2>&1; then
            echo "FAIL: $what: the traces differ"; sed 's/^/    /' "$r.cmp"; st=1; continue
        fi
        for f in "$d"/model/*.npy; do
            [ -e "$f" ] || continue
            cmp -s "$f" "$r/$(basename "$f")" ||
                { echo "FAIL: $what: dump $(basename "$f") differs"; st=1; continue 2; }
        done
        rctr=$(grep -m1 'counters:' "$r.log" | sed 's/^core_tb: counters: //')
        if [ "$s" = 0 ] && [ "$rctr" != "$mctr" ]; then
            echo "FAIL: $what: counters differ"; echo "    rtl:   $rctr"; echo "    model: $mctr"; st=1; continue
        fi
        if [ "$want" = 1 ]; then # the error line names the same pc and dynamic instruction
            me=$(grep -m1 '^tpu-run: error' "$d/model.log" | sed 's/^tpu-run: //')
            re_=$(grep -m1 '^core_tb: error' "$r.log" | sed 's/^core_tb: //')
            [ "$me" = "$re_" ] || { echo "FAIL: $what: core_tb says '$re_', tpu-run '$me'"; st=1; continue; }
        fi
        end=$(tail -n 1 "$r.trace")
        echo "PASS: $what: $(sed -n 's/.*PASS: \([0-9]*\) records.*/\1/p' "$r.cmp") trace records identical, ends '$(echo "$end" | cut -c1-48)'"
        echo "    rtl:   $rctr"
        [ "$s" = 0 ] && echo "    model: $mctr (equal)"
    done
}

# -- matmul: docs/isa.md's example, its A and B loaded first, C dumped after
{
    echo "dma_in ub row=0 rows=16 cols=4 addr=0x1000 stride=8"
    echo "dma_in wmem row=0 rows=24 cols=4 addr=0x2000 stride=8"
    grep -v '^ *halt' tests/asm/loop_matmul.s
    echo "dma_out acc row=0 rows=24 cols=4 addr=0x4000 stride=16"
    echo "halt"
} >"$out/matmul.s"
case_ matmul 0,30 0 "--dump 0x4000=c.npy:f32:24x4"

# -- rearm: the same with the inner loop at the head of the outer body
sed 's/^\( *loop 0 count=3\) skip=NT-\. body=END-NT+1 .*/\1 skip=1 body=END-./; s/^\( *loop 1 count=2\) skip=NT-\. body=2 .*/HEAD: \1 skip=1 body=2/' \
    "$out/matmul.s" >"$out/rearm.s"
grep -q '^HEAD: *loop 1' "$out/rearm.s" || { echo "FAIL: loops rearm: the sed did not apply"; st=1; }
case_ rearm 0 0 "--dump 0x4000=c.npy:f32:24x4"
if cmp -s "$out/matmul/model/c.npy" "$out/rearm/model/c.npy"; then
    echo "PASS: loops rearm: C identical to the hoisted matmul's"
else echo "FAIL: loops rearm: C differs from the hoisted matmul's"; st=1; fi

# -- first: the matmul without the -0 fill, its matmul acc_mode=first:l1 (overwrite in each
#    N-tile's first K-chunk): the same C, byte for byte
sed 's/^\( *dma_in acc row=0 rows=24 cols=1 addr=NEGZERO stride=0\)/#\1/; s/rows=8 accumulate/rows=8 acc_mode=first:l1/' \
    "$out/matmul.s" >"$out/first.s"
grep -q 'acc_mode=first:l1' "$out/first.s" && grep -q '^#.*NEGZERO' "$out/first.s" ||
    { echo "FAIL: loops first: the sed did not apply"; st=1; }
case_ first 0,30 0 "--dump 0x4000=c.npy:f32:24x4"
if cmp -s "$out/matmul/model/c.npy" "$out/first/model/c.npy"; then
    echo "PASS: loops first: C identical to the -0 filled matmul's"
else echo "FAIL: loops first: C differs from the -0 filled matmul's"; st=1; fi

# -- afbad: acc_first with flags[0] set (a reserved encoding, written as a raw word): error 1
{
    echo "dma_in ub row=0 rows=16 cols=4 addr=0x1000 stride=8"
    echo "lw w=0"
    echo ".insn 0x00080321 0 0 0   # matmul rows=8 flags=3: acc_first 1 and accumulate"
    echo "halt"
} >"$out/afbad.s"
case_ afbad 0 1

# -- lvbad: a loop of level 6 (flags[2:0] = 6; levels are 0 .. 5): error 1
{
    echo "nop"
    echo ".insn 0x00020603 1 1 0   # loop 6 count=2 skip=1 body=1"
    echo "nop"
    echo "halt"
} >"$out/lvbad.s"
case_ lvbad 0 1

# -- mod: modulo index registers (docs/isa.md "Loops", the modulus form); b.npy also at host 0
cat >"$out/mod.s" <<'EOF'
        dma_in ub row=0 rows=64 cols=4 addr=0x10000 stride=8   # every UB row dumped written
        stride x1 l0=4                    # WMEM: a ring of 4 slots of N = 4 rows
        stride x1 mod=16
        stride x2 l0=32                   # host: tile t at (0x40 + 32 t) mod 128
        stride x2 mod=128
        stride x3 l0=4                    # ACC: out tile t at rows 4 t (no modulus)
        stride x4 l0=-3                   # UB: (2 - 3 t) mod 8, below 0 from t = 1
        stride x4 mod=8
        stride x13 l0=4                   # UB: (48 + 4 t) mod 64, past 63 from t = 4
        stride x13 mod=64
        loop 0 count=10 skip=1 body=4
        dma_in wmem row=8+x1 rows=4 cols=4 addr=0x40+x2 stride=8
        lw w=8+x1
        matmul ub=2+x4 acc=0+x3 rows=4
        vop relu a=acc:0+x3 dst=ub:48+x13 rows=4
        stride x4 mod=0                   # none again: 20 - 3 i exactly (20, 17)
        loop 0 count=2 body=1
        vop exp a=ub:20+x4 dst=ub:20+x4 rows=1
        dma_out acc row=0 rows=40 cols=4 addr=0x4000 stride=16
        dma_out ub row=0 rows=64 cols=4 addr=0x6000 stride=8
        halt
EOF
python3 - "$out" <<'EOF' || { echo "FAIL: loops mod: cannot write mod_straight.s"; exit 1; }
import sys
o = ["dma_in ub row=0 rows=64 cols=4 addr=0x10000 stride=8"]
for t in range(10):
    o += ["dma_in wmem row=%d rows=4 cols=4 addr=0x%x stride=8" % ((8 + 4 * t) % 16, (0x40 + 32 * t) % 128),
          "lw w=%d" % ((8 + 4 * t) % 16),
          "matmul ub=%d acc=%d rows=4" % ((2 - 3 * t) % 8, 4 * t),
          "vop relu a=acc:%d dst=ub:%d rows=4" % (4 * t, (48 + 4 * t) % 64)]
o += ["vop exp a=ub:20 dst=ub:20 rows=1", "vop exp a=ub:17 dst=ub:17 rows=1",
      "dma_out acc row=0 rows=40 cols=4 addr=0x4000 stride=16",
      "dma_out ub row=0 rows=64 cols=4 addr=0x6000 stride=8", "halt"]
open(sys.argv[1] + "/mod_straight.s", "w").write("\n".join(o) + "\n")
EOF
case_ mod 0,30 0 "--load 0x0=b.npy" "--dump 0x4000=mc.npy:f32:40x4" "--dump 0x6000=mu.npy:bf16:64x4"
case_ mod_straight 0 0 "--load 0x0=b.npy" "--dump 0x4000=mc.npy:f32:40x4" "--dump 0x6000=mu.npy:bf16:64x4"
for f in mc mu; do
    if [ -s "$out/mod/model/$f.npy" ] && cmp -s "$out/mod/model/$f.npy" "$out/mod_straight/model/$f.npy" &&
       cmp -s "$out/mod/rtl_s0/$f.npy" "$out/mod_straight/rtl_s0/$f.npy"; then
        echo "PASS: loops mod: $f identical to the straight-line program's (model and RTL)"
    else echo "FAIL: loops mod: $f differs from the straight-line program's"; st=1; fi
done

# -- modbad: the modulus form with k = 17 (2^17: reserved, as k = 17 .. 31): error 1 at pc 2
{
    echo "nop"
    echo "stride x2 mod=8"
    echo ".insn 0x00002104 17 0 0   # stride x1 mod=2^17: reserved k"
    echo "halt"
} >"$out/modbad.s"
case_ modbad 0 1

# -- deep: i_l in 0..1 for l = 0..3, k = 8 i0 + 4 i1 + 2 i2 + i3 and its permutation
#    p = i0 + 2 i1 + 4 i2 + 8 i3 (both 0..15): acc[16 + p] = ub[k] + ub[15 - k];
#    acc[47 - p] = acc[16 + p] * acc[16 + p] + f[k] (f: ACC rows 0..15); out row 15 - p =
#    acc[47 - p] (host 0x8000 + 16 (15 - p)); also ub[20 + k] = relu(ub[k])
cat >"$out/deep.s" <<'EOF'
        dma_in ub row=0 rows=16 cols=4 addr=0x1000 stride=8
        dma_in acc row=0 rows=16 cols=4 addr=0x3000 stride=16
        stride x1 l0=8 l1=4 l2=2          # k
        stride x1 l3=1
        stride x2 l0=-8 l1=-4 l2=-2       # -k
        stride x2 l3=-1
        stride x3 l0=1 l1=2 l2=4          # p
        stride x3 l3=8
        stride x4 l0=1 l1=2 l2=4          # p (a second register)
        stride x4 l3=8
        stride x5 l0=-1 l1=-2 l2=-4       # -p
        stride x5 l3=-8
        stride x6 l0=-1 l1=-2 l2=-4       # -p
        stride x6 l3=-8
        stride x7 l0=-16 l1=-32 l2=-64    # -16 p bytes
        stride x7 l3=-128
        loop 0 count=2 skip=B0-. body=E-B0+1
        loop 1 count=2 skip=B1-. body=E-B1+1   # hoisted: armed once
B0:     nop
B1:     loop 2 count=2 skip=1 body=E-B2+1      # re-armed in every level-1 iteration
B2:     loop 3 count=2 skip=1 body=E-B3+1      # re-armed in every level-2 iteration
B3:     vop add a=ub:0+x1 b=ub:15+x2 dst=acc:16+x3 rows=1
        vop mul a=acc:16+x4 b=acc:16+x3 dst=acc:47+x5 rows=1
        vop add a=acc:47+x5 b=acc:0+x1 dst=acc:47+x6 rows=1
        vop relu a=ub:0+x1 dst=ub:20+x1 rows=1
E:      dma_out acc row=47+x6 rows=1 cols=4 addr=0x80F0+x7 stride=16
        dma_out ub row=20 rows=16 cols=4 addr=0x9000 stride=8
        halt
EOF
case_ deep 0,30 0 "--dump 0x8000=out.npy:f32:16x4" "--dump 0x9000=relu.npy:bf16:16x4"

# -- xhigh: the deep case's nest on registers x8 .. x15 (a selector's fourth bit: w2[30] and
#    w2[31] for a DMA's address and row, w3 bits 23, 27, 31 for the others, flags[4] for a
#    stride), the same results as deep's (compared below)
sed 's/x1\b/x8/g; s/x2\b/x9/g; s/x3\b/x10/g; s/x4\b/x11/g; s/x5\b/x13/g; s/x6\b/x14/g; s/x7\b/x15/g' \
    "$out/deep.s" >"$out/xhigh.s"
grep -q 'x15' "$out/xhigh.s" && ! grep -q 'x[1-7]\b' "$out/xhigh.s" ||
    { echo "FAIL: loops xhigh: the sed did not apply"; st=1; }
case_ xhigh 0,30 0 "--dump 0x8000=out.npy:f32:16x4" "--dump 0x9000=relu.npy:bf16:16x4"
for f in out relu; do
    if cmp -s "$out/deep/model/$f.npy" "$out/xhigh/model/$f.npy"; then
        echo "PASS: loops xhigh: $f identical to deep's (x1 .. x7)"
    else echo "FAIL: loops xhigh: $f differs from deep's"; st=1; fi
done

# -- six: i_l in 0..1 for l = 0..5; p = 32 i0 + 16 i1 + 8 i2 + 4 i3 + 2 i4 + i5, q its bits
#    reversed, r = q mod 32 (i5 left out): ub[100 + q] = relu(a64[p]); acc[64 + r] =
#    ub[100 + q] W, overwritten when i5 = 0 and accumulated when i5 = 1 (acc_mode=first:l5),
#    written out to host 0xA000 + 16 r after each matmul (the last write holds the sum)
cat >"$out/six.s" <<'EOF'
        dma_in ub row=0 rows=64 cols=4 addr=0x10000 stride=8
        dma_in wmem row=0 rows=4 cols=4 addr=0x2000 stride=8
        lw w=0
        stride x1 l0=32 l1=16 l2=8        # p
        stride x1 l3=4 l4=2 l5=1
        stride x2 l0=1 l1=2 l2=4          # q
        stride x2 l3=8 l4=16 l5=32
        stride x3 l0=1 l1=2 l2=4          # r
        stride x3 l3=8 l4=16
        stride x4 l0=16 l1=32 l2=64       # 16 r bytes
        stride x4 l3=128 l4=256
        loop 0 count=2 skip=B0-. body=E-B0+1
        loop 1 count=2 skip=B1-. body=E-B1+1   # hoisted: armed once
B0:     nop
B1:     loop 2 count=2 skip=1 body=E-B2+1      # re-armed in every level-1 iteration
B2:     loop 3 count=2 skip=2 body=E-B3+1      # re-armed in every level-2 iteration
        loop 4 count=2 skip=1 body=E-B3+1      # hoisted under level 3
B3:     loop 5 count=2 skip=1 body=E-B5+1      # re-armed in every level-4 iteration
B5:     vop relu a=ub:0+x1 dst=ub:100+x2 rows=1
        matmul ub=100+x2 acc=64+x3 rows=1 acc_mode=first:l5
E:      dma_out acc row=64+x3 rows=1 cols=4 addr=0xA000+x4 stride=16
        dma_out ub row=100 rows=64 cols=4 addr=0xC000 stride=8
        halt
EOF
case_ six 0,30 0 "--dump 0xA000=six.npy:f32:32x4" "--dump 0xC000=relu6.npy:bf16:64x4"
python3 - "$out" <<'EOF' || st=1
import struct, sys
d = sys.argv[1]
def words(path, size):
    b = open(path, "rb").read()
    n = struct.unpack("<H", b[8:10])[0]
    body = b[10 + n:]
    return list(struct.unpack("<%d%s" % (len(body) // size, "H" if size == 2 else "I"), body))
a, got = words(d + "/a64.npy", 2), words(d + "/six/model/relu6.npy", 2)
relu = lambda x: 0 if x & 0x8000 else x
bad = [(p, q) for p in range(64) for q in [int(format(p, "06b")[::-1], 2)]
       if got[4 * q:4 * q + 4] != [relu(x) for x in a[4 * p:4 * p + 4]]]
if bad:
    print("FAIL: loops six: ub[100 + q] != relu(a[p]) for (p, q) in", bad[:4]); sys.exit(1)
print("PASS: loops six: the 64 relu rows routed by six levels as written")
EOF

# -- range: dst = 100 + 2000 i0 leaves UB (4096 rows) at i0 = 2 (4100 + 4 rows)
cat >"$out/range.s" <<'EOF'
        dma_in ub row=0 rows=4 cols=4 addr=0x1000 stride=8
        stride x1 l0=2000
        loop 0 count=4 body=2
        vop relu a=ub:0 dst=ub:100+x1 rows=4
        nop
        halt
EOF
case_ range 0 1

# -- negative: a = 100 - 40 i0 is below 0 at i0 = 3
cat >"$out/negative.s" <<'EOF'
        dma_in ub row=0 rows=104 cols=4 addr=0x1000 stride=8
        stride x3 l0=-40
        loop 0 count=5 body=2
        vop exp a=ub:100+x3 dst=acc:120+x3 rows=4
        dma_out acc row=121+x3 rows=2 cols=4 addr=0x8000 stride=16
        halt
EOF
case_ negative 0 1

# -- nest: loop 1's body (pc 3 .. 7) leaves level 0's (pc 2 .. 3): error 10 at pc 2
cat >"$out/nest.s" <<'EOF'
        nop
        loop 0 count=2 skip=1 body=2
        loop 1 count=2 skip=1 body=5
        nop
        nop
        halt
EOF
case_ nest 0 1

# -- imemend: the body ends past the IMEM (1024 instructions), after a DMA in flight
cat >"$out/imemend.s" <<'EOF'
        dma_in ub row=0 rows=16 cols=4 addr=0x1000 stride=8
        loop 0 count=1 skip=1 body=1023
        halt
EOF
case_ imemend 0 1

# -- count0: error 3
cat >"$out/count0.s" <<'EOF'
        nop
        loop 0 count=0 body=1
        nop
        halt
EOF
case_ count0 0 1

for c in range negative nest imemend count0 modbad; do
    echo "    $c: $(tail -n 1 "$out/$c/model.trace") (model), $(tail -n 1 "$out/$c/rtl_s0.trace" 2>/dev/null) (RTL)"
done
echo "test-core-cosim loops N=$n: $([ $st -eq 0 ] && echo PASS || echo FAIL)"
exit $st
