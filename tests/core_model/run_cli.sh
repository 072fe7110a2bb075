#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-core-model, part 3: the tpu-run command line (exit codes, messages, @FILE, --trace,
# --dump-dir, error halts). Usage: run_cli.sh TPU-RUN TPU-MKPROG WORKDIR
run=$1; mkprog=$2; out=$3
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }
# expect STATUS WHAT TEXT CMD...: the exit status and a text in stdout+stderr
expect() {
    st=$1; what=$2; text=$3; shift 3
    "$@" >"$out/log" 2>&1; got=$?
    if [ "$got" -ne "$st" ]; then bad "$what: exit $got, expected $st"; sed 's/^/    /' "$out/log"; return 1; fi
    if ! grep -qF -- "$text" "$out/log"; then bad "$what: no '$text' in:"; sed 's/^/    /' "$out/log"; return 1; fi
    ok
}
rm -rf "$out"; mkdir -p "$out"
"$mkprog" dense --mxu 3 -o "$out/job" >/dev/null || { echo "FAIL: tpu-mkprog"; exit 1; }

expect 0 "help" "usage: tpu-run" "$run" --help
expect 2 "no --mxu" "--mxu ''" "$run" --prog "$out/job/prog.s"
expect 2 "bad --mxu" "--mxu '0' is out of range (allowed: 1..256)" "$run" --mxu 0 --prog "$out/job/prog.s"
expect 2 "no --prog" "--prog ''" "$run" --mxu 3
expect 2 "unknown option" "unknown option '--frobnicate'" "$run" --mxu 3 --frobnicate 1
expect 2 "bad --axi-latency" "--axi-latency '0' is out of range (allowed: 1..1000)" "$run" --mxu 3 --axi-latency 0
expect 2 "bad --pe-stages" "--pe-stages '4' is out of range (allowed: 1..3)" "$run" --mxu 3 --pe-stages 4
expect 2 "bad --dispatch" "--dispatch 'fast' is not a dispatch mode (allowed: rtl, serial, overlap)" "$run" --mxu 3 --dispatch fast
expect 2 "missing program file" "tpu-run: error:" "$run" --mxu 3 --prog "$out/none.s"

# a job through @FILE with a dump folder and a trace
expect 0 "dense job" "tpu-run: done" "$run" --mxu 3 --prog "$out/job/prog.s" "@$out/job/job.args" \
    --trace "$out/t.trace" --dump-dir "$out/dumps" &&
    grep -q "CYCLES=" "$out/log" && ok || bad "dense job: no counters line"
[ -s "$out/dumps/out.npy" ] && ok || bad "dense job: no dumps/out.npy"
[ "$(head -n 1 "$out/t.trace")" = "# tpu-core-trace 3" ] && ok || bad "trace header"
tail -n 1 "$out/t.trace" | grep -qx 'r [0-9]* [0-9]* 0.0.0.0.0.0 halt' && ok ||
    bad "trace does not end with the halt's retire line"
# the same job with another AXI latency: same trace, same dump, other CYCLES
expect 0 "latency 40" "tpu-run: done" "$run" --mxu 3 --prog "$out/job/prog.s" "@$out/job/job.args" \
    --trace "$out/t40.trace" --dump-dir "$out/dumps40" --axi-latency 40
cmp -s "$out/t.trace" "$out/t40.trace" && ok || bad "the trace depends on the AXI latency"
cmp -s "$out/dumps/out.npy" "$out/dumps40/out.npy" && ok || bad "the dump depends on the AXI latency"

# error halts: exit 1, the message, the e line
printf 'nop\nmatmul ub=0 acc=0 rows=1\nhalt\n' >"$out/nolw.s"
expect 1 "error 5" "tpu-run: error 5 (matmul before any lw) at pc 1: matmul ub=0 acc=0 rows=1" \
    "$run" --mxu 3 --prog "$out/nolw.s" --trace "$out/e.trace"
[ "$(tail -n 1 "$out/e.trace")" = "e 1 1 5" ] && ok || bad "error 5: trace ends with '$(tail -n 1 "$out/e.trace")'"
printf 'nop\ndma_in ub row=0 rows=1 cols=3 addr=0x100000\nhalt\n' >"$out/axi.s"
expect 1 "error 7" "tpu-run: error 7" "$run" --mxu 3 --prog "$out/axi.s" --hostmem-mib 1
printf 'nop\nnop\n' >"$out/runoff.s"
expect 1 "error 6" "error 6" "$run" --mxu 3 --prog "$out/runoff.s" --imem-insns 4 --trace "$out/e6.trace"
[ "$(tail -n 1 "$out/e6.trace")" = "e 4 4 6" ] && ok || bad "error 6: trace ends with '$(tail -n 1 "$out/e6.trace")'"
# collectives on a core alone (C = 1): no-ops, send/recv error 8, the NET_BUSY counter
printf 'barrier\nallreduce acc row=0 rows=1 ring\nhalt\n' >"$out/coll.s"
expect 0 "collectives alone" "INSNS=3 NET_BUSY=2" "$run" --mxu 3 --prog "$out/coll.s"
printf 'nop\nsend ub row=0 rows=1 core=0\nhalt\n' >"$out/send.s"
expect 1 "error 8" "tpu-run: error 8 (bad core id) at pc 1: send ub row=0 rows=1 core=0" \
    "$run" --mxu 3 --prog "$out/send.s"
# a never-written row is a warning, not an error
printf 'dma_out ub row=7 rows=1 cols=3 addr=0\nhalt\n' >"$out/uninit.s"
expect 0 "uninitialised read" "warning: 1 read(s) of never-written rows, the first by pc 0 (ub row 7)" \
    "$run" --mxu 3 --prog "$out/uninit.s"

# issue 16 items 1, 4, 6, 9: no wrapping address arithmetic, one option grammar, bounded
# inputs, the reason of a failure named
printf 'halt\n' >"$out/h.s"
expect 2 "dump wraps" "outside the largest host memory" "$run" --mxu 4 --prog "$out/h.s" \
    --dump 0x8000000000000000=o.npy:bf16:2x1:0x8000000000000000
expect 2 "dump before the image" "bad address" "$run" --mxu 4 --prog "$out/h.s" --dump 18446744073709551615=o.npy:bf16:1x1
expect 2 "dump past the image" "outside the 1048576-byte host memory" "$run" --mxu 4 --prog "$out/h.s" \
    --hostmem-mib 1 --dump 0xfffff=o.npy:bf16:1x1
expect 0 "--mxu 010 is ten" "N=10 " "$run" --mxu 010 --prog "$out/h.s"
for v in " 16" "+16" "0x40"; do
    expect 2 "--mxu '$v'" "--mxu '$v' is not a whole number (allowed: 1..256)" "$run" --mxu "$v" --prog "$out/h.s"
done
expect 2 "--imem-insns 65536" "--imem-insns '65536' is out of range (allowed: 1..32768)" "$run" --mxu 4 --imem-insns 65536 --prog "$out/h.s"
expect 2 "abbreviation" "unknown option '--mx'" "$run" --mx 4 --prog "$out/h.s"
expect 2 "duplicate --mxu" "option '--mxu' given twice" "$run" --mxu 4 --mxu 4 --prog "$out/h.s"
expect 2 "duplicate --hostmem-mib" "option '--hostmem-mib' given twice" "$run" --mxu 4 --hostmem-mib 1 --hostmem-mib 1 --prog "$out/h.s"
expect 2 "--prog /dev/zero" "/dev/zero: larger than 524288 bytes" "$run" --mxu 4 --prog /dev/zero
expect 2 "@/dev/zero" "/dev/zero: larger than 1048576 bytes" "$run" --mxu 4 --prog "$out/h.s" @/dev/zero
expect 2 "@DIR" "tpu-run: error: @$out: cannot read: Is a directory" "$run" --mxu 4 --prog "$out/h.s" "@$out"
expect 2 "@missing" "tpu-run: error: @$out/none.args: cannot open: No such file or directory" "$run" --mxu 4 --prog "$out/h.s" "@$out/none.args"
expect 2 "--trace /proc" "--trace /proc/tpu-x.trace: cannot write:" "$run" --mxu 4 --prog "$out/h.s" --trace /proc/tpu-x.trace
expect 2 "--dump-dir /proc" "--dump-dir '/proc/tpu-x': cannot create the folder: " "$run" --mxu 3 --prog "$out/job/prog.s" \
    "@$out/job/job.args" --dump-dir /proc/tpu-x
# issue 16 item 7: a run-time bound with a clear message (exit 1, the program not finished)
printf 'lw w=0\nmatmul ub=0 acc=0 rows=60000\nmatmul ub=0 acc=0 rows=60000\nhalt\n' >"$out/long.s"
expect 1 "--max-cycles" "passed the --max-cycles limit of 1000 before pc 3 could dispatch" \
    "$run" --mxu 4 --ub-rows 65536 --acc-rows 65536 --prog "$out/long.s" --max-cycles 1000
expect 0 "--max-cycles 0" "tpu-run: done" "$run" --mxu 4 --ub-rows 65536 --acc-rows 65536 --prog "$out/long.s" --max-cycles 0
expect 0 "default limit" "tpu-run: done" "$run" --mxu 4 --ub-rows 65536 --acc-rows 65536 --prog "$out/long.s"
expect 2 "--max-cycles x" "--max-cycles 'x' is not a whole number" "$run" --mxu 4 --prog "$out/long.s" --max-cycles x
echo "tpu-run CLI: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
