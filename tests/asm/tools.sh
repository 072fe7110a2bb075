#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-asm, the tools: every tpu-mkprog kind at several N assembles with --check silent (no
# instruction the core would reject, lw before matmul, job.args loads files that exist), and
# disassembling the binary and assembling that text gives the same bytes; the tools' errors.
# Usage: tools.sh BUILD/tools
set -eu
T=$1
W=$(mktemp -d /tmp/tpu-test-tools-XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "tools.sh: FAIL: $*" >&2; exit 1; }
n_ok=0
for n in 1 2 3 4 8; do
    for kind in matmul dense mlp allops manyk transpose; do
        d=$W/$kind-$n
        "$T/tpu-mkprog" "$kind" --mxu "$n" --seed "$n" -o "$d" || fail "tpu-mkprog $kind --mxu $n"
        "$T/tpu-as" --mxu "$n" --check "$d/prog.s" -o "$d/prog.bin" 2>"$d/as.err" ||
            fail "tpu-as $d/prog.s: $(cat "$d/as.err")"
        [ ! -s "$d/as.err" ] || fail "tpu-as --check $d/prog.s: $(cat "$d/as.err")"
        "$T/tpu-dis" "$d/prog.bin" | sed 's/^[0-9]*: //' >"$d/dis.s"
        "$T/tpu-as" "$d/dis.s" -o "$d/dis.bin" || fail "disassembly of $kind N=$n does not assemble"
        cmp -s "$d/prog.bin" "$d/dis.bin" || fail "disassembly of $kind N=$n gives other bits"
        grep -q '^--dump ' "$d/job.args" || fail "$d/job.args has no --dump"
        for f in $(sed -n 's/^--load [^=]*=//p' "$d/job.args"); do
            [ -f "$d/$f" ] || fail "$d/job.args loads $f, which is not there"
        done
        n_ok=$((n_ok + 1))
    done
done
# one and two WMEM slots: each weight tile's dma_in comes before its lw
for w in 4 8; do
    d=$W/slots$w
    "$T/tpu-mkprog" manyk --mxu 4 --wmem-rows $w -o "$d" || fail "tpu-mkprog --wmem-rows $w"
    "$T/tpu-as" --mxu 4 --wmem-rows $w --check "$d/prog.s" -o "$d/prog.bin" 2>"$d/as.err" &&
        [ ! -s "$d/as.err" ] || fail "--wmem-rows $w: $(cat "$d/as.err")"
    awk '/^dma_in wmem/ { for (i = 1; i <= NF; i++) if ($i ~ /^row=/) { split($i, a, "="); loaded[a[2]] = 1 } }
         /^lw / { split($2, a, "="); if (!(a[2] in loaded)) bad = 1; delete loaded[a[2]] }
         END { exit bad }' "$d/prog.s" || fail "--wmem-rows $w: an lw reads a slot not reloaded since its last lw"
done
# allops covers every instruction, VPU op, reduction and DMA memory
a=$W/allops-4/prog.s
for pat in '^nop' '^sync' '^halt' '^lw ' '^matmul .*rows=[0-9]*$' '^matmul .* accumulate' \
    '^dma_in ub' '^dma_in acc' '^dma_in wmem' '^dma_out ub' '^dma_out acc' '^softmax ' \
    '^vred sum' '^vred max' '^vred min' \
    '^vop add a=acc:[0-9]* b=ub:[0-9]* dst' '^vop sub a=acc:[0-9]* b=acc:[0-9]* dst' \
    '^vop mul a=ub:[0-9]* b=ub:[0-9]* dst' '^vop max a=acc:[0-9]* b=ub:[0-9]* bcast' \
    '^vop min a=acc:[0-9]* b=acc:[0-9]* bcast' '^vop add a=ub:[0-9]* b=ub:[0-9]* bcast' \
    '^vop cvt ' '^vop relu ' '^vop exp ' '^vop tanh ' '^vop sigmoid ' '^vop gelu ' '^vop recip '; do
    grep -q -- "$pat" "$a" || fail "allops has no line matching '$pat'"
done
# same seed, same files; another seed, other data
"$T/tpu-mkprog" mlp --mxu 4 --seed 7 -o "$W/s1" && "$T/tpu-mkprog" mlp --mxu 4 --seed 7 -o "$W/s2"
for f in prog.s job.args a.npy w1.npy w2.npy b1.npy b2.npy; do
    cmp -s "$W/s1/$f" "$W/s2/$f" || fail "tpu-mkprog is not deterministic: $f"
done
"$T/tpu-mkprog" mlp --mxu 4 --seed 8 -o "$W/s3"
! cmp -s "$W/s1/a.npy" "$W/s3/a.npy" || fail "tpu-mkprog --seed does not change the data"
# errors: clear message, nonzero exit, no output file
expect_err() { # expect_err "message part" cmd...
    msg=$1; shift
    if "$@" >"$W/out" 2>"$W/err"; then fail "$* succeeded"; fi
    grep -qF -- "$msg" "$W/err" || fail "$*: expected '$msg', got: $(cat "$W/err")"
}
printf 'nop\nlw w=70000\n' >"$W/bad.s"
expect_err "bad.s:2:6: error: value 70000 out of range for 'w'" "$T/tpu-as" "$W/bad.s" -o "$W/bad.bin"
[ ! -e "$W/bad.bin" ] || fail "tpu-as wrote an output file despite errors"
expect_err "no -o" "$T/tpu-as" "$W/bad.s"
expect_err "--mxu '0' is out of range (allowed: 1..256)" "$T/tpu-as" --mxu 0 "$W/bad.s" -o "$W/x.bin"
printf 'matmul ub=0 acc=0 rows=1\nlw w=0\n' >"$W/warn.s"
"$T/tpu-as" --mxu 4 --check "$W/warn.s" -o "$W/warn.bin" 2>"$W/err" || fail "tpu-as --check failed on warnings"
grep -qF "instruction 0 (matmul ub=0 acc=0 rows=1): the core stops with error 5" "$W/err" ||
    fail "tpu-as --check: no code-5 warning: $(cat "$W/err")"
printf 'vop add a=acc:0 b=acc:8 dst=acc:16 rows=12\nvop relu a=ub:4 dst=ub:4 rows=9\nvop add a=ub:0 b=ub:0 bcast dst=ub:0 rows=4\n' >"$W/ovl.s"
"$T/tpu-as" --mxu 4 --check "$W/ovl.s" -o "$W/ovl.bin" 2>"$W/err" || fail "tpu-as --check failed on warnings"
grep -qF "instruction 0 (vop add a=acc:0 b=acc:8 dst=acc:16 rows=12): dst partly overlaps b: undefined" "$W/err" &&
    [ "$(wc -l <"$W/err")" -eq 1 ] || fail "tpu-as --check: the partial-overlap warning (and only it) expected: $(cat "$W/err")"
# lw transpose (flags[0]): bytes, tpu-dis round trip, --check silent; flags[1] is error 1
printf 'lw w=4 transpose\nmatmul ub=0 acc=0 rows=1\nlw transpose w=0\nhalt\n' >"$W/lwt.s"
"$T/tpu-as" --mxu 4 --check "$W/lwt.s" -o "$W/lwt.bin" 2>"$W/err" && [ ! -s "$W/err" ] ||
    fail "tpu-as --check lw transpose: $(cat "$W/err")"
[ "$(od -An -tx1 -N8 "$W/lwt.bin" | tr -d ' \n')" = 2001000004000000 ] ||
    fail "tpu-as: lw w=4 transpose is not bytes 20 01 00 00 04 00 00 00"
"$T/tpu-dis" "$W/lwt.bin" | sed 's/^[0-9]*: //' >"$W/lwt2.s"
grep -qx 'lw w=4 transpose' "$W/lwt2.s" && grep -qx 'lw w=0 transpose' "$W/lwt2.s" ||
    fail "tpu-dis: lw transpose: $(cat "$W/lwt2.s")"
"$T/tpu-as" "$W/lwt2.s" -o "$W/lwt2.bin" && cmp -s "$W/lwt.bin" "$W/lwt2.bin" ||
    fail "tpu-dis | tpu-as: lw transpose does not round-trip"
printf '.insn 0x220, 0, 0, 0\nhalt\n' >"$W/lwr.s"
"$T/tpu-as" --mxu 4 --check "$W/lwr.s" -o "$W/lwr.bin" 2>"$W/err" || fail "tpu-as --check lwr.s"
grep -qF "the core stops with error 1" "$W/err" || fail "tpu-as --check: lw flags[1] not error 1: $(cat "$W/err")"
printf '1234567' >"$W/odd.bin"
expect_err "not a multiple of 16" "$T/tpu-dis" "$W/odd.bin"
expect_err "unknown KIND 'conv'" "$T/tpu-mkprog" conv --mxu 4 -o "$W/c"
expect_err "no --mxu" "$T/tpu-mkprog" matmul -o "$W/c"
expect_err "--dist 'cauchy'" "$T/tpu-mkprog" matmul --mxu 4 --dist cauchy -o "$W/c"
expect_err "A needs UB rows" "$T/tpu-mkprog" matmul --mxu 4 --m 3000 -o "$W/c"
expect_err "the program has 1602 instructions, more than IMEM's 1024" "$T/tpu-mkprog" manyk --mxu 2 --k 800 -o "$W/c"
[ ! -e "$W/c/prog.s" ] && [ ! -e "$W/c/.prog.s.tmp" ] || fail "tpu-mkprog left a program after an error"
expect_err "needs ACC rows" "$T/tpu-mkprog" matmul --mxu 4 --m 100 --nout 100 --acc-rows 200 -o "$W/c"
printf 'lw w=0x1234\nhalt\n' >"$W/raw.s"
"$T/tpu-as" "$W/raw.s" -o "$W/raw.bin"
[ "$(wc -c <"$W/raw.bin")" -eq 32 ] || fail "tpu-as: 2 instructions are not 32 bytes"
[ "$(od -An -tx1 -N8 "$W/raw.bin" | tr -d ' \n')" = 2000000034120000 ] ||
    fail "tpu-as: lw w=0x1234 is not bytes 20 00 00 00 34 12 00 00"
"$T/tpu-dis" --raw "$W/raw.bin" | grep -q '^0: lw w=4660 .*# 00000020 00001234 00000000 00000000$' ||
    fail "tpu-dis --raw: $("$T/tpu-dis" --raw "$W/raw.bin")"
"$T/tpu-as" --help | grep -q "usage: tpu-as" || fail "tpu-as --help"
"$T/tpu-dis" --help | grep -q "usage: tpu-dis" || fail "tpu-dis --help"
"$T/tpu-mkprog" --help | grep -q "usage: tpu-mkprog" || fail "tpu-mkprog --help"
# ---- issue 16 items 3, 4, 6, 9: one option grammar, outputs, bounded inputs ----
expect_st() { # expect_st STATUS "message part" cmd...
    st=$1; msg=$2; shift 2
    if "$@" >"$W/out" 2>"$W/err"; then got=0; else got=$?; fi
    [ "$got" -eq "$st" ] || fail "$*: exit $got, expected $st: $(cat "$W/err")"
    grep -qF -- "$msg" "$W/err" || fail "$*: expected '$msg', got: $(cat "$W/err")"
    [ "$(wc -l <"$W/err")" -eq 1 ] || fail "$*: more than one line: $(cat "$W/err")"
}
printf 'halt\n' >"$W/h.s"
"$T/tpu-as" "$W/h.s" -o "$W/h.bin" || fail "tpu-as h.s"
# numbers: decimal digits only, 010 is ten in every tool; no blank, sign or 0x
"$T/tpu-mkprog" matmul --mxu 010 -o "$W/m10" && grep -q '^mxu 10$' "$W/m10/job.txt" ||
    fail "tpu-mkprog --mxu 010 is not 10"
"$T/tpu-as" --mxu 010 --check "$W/m10/prog.s" -o "$W/m10.bin" 2>"$W/err" && [ ! -s "$W/err" ] ||
    fail "tpu-as --mxu 010 is not 10: $(cat "$W/err")"
for v in " 16" "+16" "0x40" "16k" ""; do
    expect_st 2 "--mxu '$v' is not a whole number (allowed: 1..256)" "$T/tpu-as" --mxu "$v" "$W/h.s" -o "$W/x.bin"
    expect_st 2 "--mxu '$v' is not a whole number (allowed: 1..256)" "$T/tpu-mkprog" matmul --mxu "$v" -o "$W/x"
done
expect_st 2 "--mxu '257' is out of range (allowed: 1..256)" "$T/tpu-as" --mxu 257 "$W/h.s" -o "$W/x.bin"
expect_st 2 "--imem-insns '32769' is out of range (allowed: 1..32768)" "$T/tpu-mkprog" matmul --mxu 4 --imem-insns 32769 -o "$W/x"
# no abbreviations, duplicates refused
expect_st 2 "unknown option '--mx'" "$T/tpu-as" --mx 4 "$W/h.s" -o "$W/x.bin"
expect_st 2 "unknown option '--ra'" "$T/tpu-dis" --ra "$W/h.bin"
expect_st 2 "unknown option '--mx'" "$T/tpu-mkprog" matmul --mx 4 -o "$W/x"
expect_st 2 "option '--mxu' given twice" "$T/tpu-as" --mxu 4 --mxu 8 "$W/h.s" -o "$W/x.bin"
expect_st 2 "option '-o' given twice" "$T/tpu-as" "$W/h.s" -o "$W/x.bin" -o "$W/y.bin"
expect_st 2 "option '--seed' given twice" "$T/tpu-mkprog" matmul --mxu 4 --seed 1 --seed 2 -o "$W/x"
expect_st 2 "option '--cores' given twice" "$T/tpu-mkprog" allreduce --mxu 4 --cores 2 --cores 4 -o "$W/x"
[ ! -e "$W/x" ] && [ ! -e "$W/x.bin" ] || fail "a usage error wrote an output"
# outputs: a FIFO and a device are written in place, a symbolic link is followed
mkfifo "$W/fifo"
cat "$W/fifo" >"$W/fifo.out" & reader=$!
"$T/tpu-as" "$W/h.s" -o "$W/fifo" || fail "tpu-as -o FIFO"
wait $reader
[ -p "$W/fifo" ] || fail "tpu-as -o FIFO replaced the FIFO"
cmp -s "$W/fifo.out" "$W/h.bin" || fail "tpu-as -o FIFO: other bytes through the FIFO"
"$T/tpu-as" "$W/h.s" -o /dev/null || fail "tpu-as -o /dev/null"
[ -c /dev/null ] || fail "tpu-as -o /dev/null replaced the device"
ln -s h2.bin "$W/link.bin"
"$T/tpu-as" "$W/h.s" -o "$W/link.bin" && [ -L "$W/link.bin" ] && cmp -s "$W/h2.bin" "$W/h.bin" ||
    fail "tpu-as -o SYMLINK: the link is not kept or its target not written"
mkdir "$W/adir"
# a bad -o is a usage error found before any work (issue 28): exit 2
expect_st 2 "adir': is a directory" "$T/tpu-as" "$W/h.s" -o "$W/adir"
expect_st 1 "/proc/tpu-x.bin: cannot write:" "$T/tpu-as" "$W/h.s" -o /proc/tpu-x.bin
# bounded inputs
expect_st 1 "/dev/zero: larger than 67108864 bytes, expected an assembly source" "$T/tpu-as" /dev/zero -o "$W/x.bin"
expect_st 1 "/dev/zero: larger than 524288 bytes" "$T/tpu-dis" /dev/zero
# tpu-mkprog leaves nothing behind when it fails
expect_st 1 "needs ACC rows" "$T/tpu-mkprog" matmul --mxu 4 --m 100 --nout 100 --acc-rows 200 -o "$W/partial"
[ ! -e "$W/partial" ] || fail "tpu-mkprog left $(ls "$W/partial") after an error"
mkdir "$W/keep" && echo keep >"$W/keep/mine.txt"
expect_st 1 "more than IMEM" "$T/tpu-mkprog" manyk --mxu 2 --k 800 -o "$W/keep"
[ "$(ls -A "$W/keep")" = mine.txt ] || fail "tpu-mkprog left $(ls -A "$W/keep") in an existing folder"
expect_st 1 "core 0's program has" "$T/tpu-mkprog" dptrain --mxu 4 --cores 2 --imem-insns 3 -o "$W/bpartial"
[ ! -e "$W/bpartial" ] || fail "tpu-mkprog (board kind) left $(ls "$W/bpartial") after an error"
echo "tools.sh: $n_ok generated programs assemble, pass --check and round-trip; tool errors ok"
