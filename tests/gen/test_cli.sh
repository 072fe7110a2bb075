#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-gen-cli: the gen command line. Usage: sh tests/gen/test_cli.sh path/to/gen
#  - every class of bad input: exit 2, exactly one line on stderr that starts with
#    "gen: error: " and names the bad value, nothing on stdout, and the output directory and
#    its parent exactly as before (no new files, no temporary directory left behind);
#  - --help and --version; defaults; N = 1, 3, 256 generate all the files (FILES);
#  - the same command twice gives the same bytes, whatever path gen is run by;
#  - every file starts with the header: SPDX line, "generated" line, the command line,
#    the version and the resolved parameters.
set -u
GEN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
FILES="tpu_bf16_mul.sv tpu_fp32_add.sv tpu_pe.sv tpu_mxu_row.sv tpu_mxu.sv tpu_mxu.f tpu_mxu.vlt tpu_params.h
tpu_fp32_mul.sv tpu_fp32_maxmin.sv tpu_vpu_delay.sv tpu_vpu_exp.sv tpu_vpu_recip.sv tpu_vpu_red_node.sv
tpu_vpu_log.sv tpu_vpu_rsqrt.sv tpu_vpu_rom_log.sv tpu_vpu_rom_rsqrt.sv tpu_vpu_rom_erf.sv
tpu_vpu_lane.sv tpu_vpu_rom_exp2.sv tpu_vpu_rom_recip.sv tpu_vpu.sv tpu_vpu.f tpu_vpu.vlt
tpu_sram.sv tpu_core_regs.sv tpu_core_dma.sv tpu_core_seq.sv tpu_core_mx.sv tpu_core_vctl.sv
tpu_core_coll.sv tpu_core.sv tpu_core.f tpu_core.vlt tpu_isa_pkg.sv
tpu_board.sv tpu_board_axil.sv tpu_board.f tpu_board.vlt
tpu_rst_sync.sv tpu_top.sv tpu_top.f
tpu_link.sv tpu_router.sv tpu_noc.sv tpu_noc.f tpu_noc.vlt"
# FPGA constraints and the FuseSoC core: '#' comments, checked by tests/fpga/test_constraints.sh
HASH_FILES="tpu_top.xdc tpu_top.sdc tpu_top.pcf tpu.core"
# gen's manifest of the files it wrote into the directory (docs/fpga.md)
MANIFEST=tpu_manifest.txt
T=$(mktemp -d "${TMPDIR:-/tmp}/test-gen-cli.XXXXXX") || exit 1
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
cd "$T" || exit 1
mkdir gen-bin && ln -s "$GEN" gen-bin/gen   # so that "gen" is on PATH as itself
PATH=$T/gen-bin:$PATH
pass=0; fail=0

ok()   { pass=$((pass + 1)); }
bad()  { fail=$((fail + 1)); echo "FAIL: $*"; }

# A picture of the scratch area: every path, and every regular file's checksum.
snapshot() {
    find "$T/w" | LC_ALL=C sort | while IFS= read -r p; do
        if [ -f "$p" ]; then echo "$p $(cksum <"$p")"; else echo "$p"; fi
    done
}

# expect_fail DESCRIPTION EXPECTED-SUBSTRING ARGS... : run gen ARGS in $T/w
expect_fail() {
    desc=$1; want=$2; shift 2
    before=$(snapshot)
    (cd "$T/w" && gen "$@" >"$T/out" 2>"$T/err"); rc=$?
    after=$(snapshot)
    lines=$(wc -l <"$T/err")
    msg=$(cat "$T/err")
    if [ "$rc" -ne 2 ]; then bad "$desc: exit $rc, expected 2 (stderr: $msg)"; return; fi
    if [ "$lines" -ne 1 ] || [ -n "$(tail -c 1 "$T/err")" ]; then
        bad "$desc: stderr is not exactly one line: $msg"; return; fi
    case "$msg" in "gen: error: "*) ;; *) bad "$desc: stderr does not start with 'gen: error: ': $msg"; return;; esac
    case "$msg" in *"$want"*) ;; *) bad "$desc: stderr does not name $want: $msg"; return;; esac
    if [ -s "$T/out" ]; then bad "$desc: wrote to stdout"; return; fi
    if [ "$before" != "$after" ]; then
        bad "$desc: the output area changed:"; echo "$before" >"$T/b"; echo "$after" >"$T/a"
        diff "$T/b" "$T/a"; return; fi
    ok
}

# ---- Bad input: nothing written ----
mkdir -p w/out && echo keep >w/out/existing.txt && echo file >w/plainfile
for o in "-o out" "-o new"; do   # into an existing directory and into a new one
    # shellcheck disable=SC2086
    set -- $o
    expect_fail "--mxu 0 ($o)"         "'0' is out of range (allowed: 1..256)" --mxu 0 "$@"
    expect_fail "--mxu 257 ($o)"       "'257' is out of range (allowed: 1..256)" --mxu 257 "$@"
    expect_fail "--mxu abc ($o)"       "'abc' is not a whole number (allowed: 1..256)" --mxu abc "$@"
    expect_fail "--mxu -1 ($o)"        "'-1' is out of range (allowed: 1..256)" --mxu -1 "$@"
    expect_fail "--mxu=-5 ($o)"        "'-5'" --mxu=-5 "$@"
    expect_fail "--mxu 8x ($o)"        "'8x' is not a whole number" --mxu 8x "$@"
    expect_fail "--mxu ' 8' ($o)"      "' 8' is not a whole number" --mxu " 8" "$@"
    expect_fail "--mxu +8 ($o)"        "'+8' is not a whole number" --mxu +8 "$@"
    expect_fail "--mxu 0x10 ($o)"      "'0x10' is not a whole number" --mxu 0x10 "$@"
    expect_fail "--mxu 1.5 ($o)"       "'1.5' is not a whole number" --mxu 1.5 "$@"
    expect_fail "--vpu-lanes 0 ($o)"   "--vpu-lanes '0' is out of range (allowed: 1..256)" --vpu-lanes 0 "$@"
    expect_fail "--vpu-lanes 257 ($o)" "--vpu-lanes '257' is out of range (allowed: 1..256)" --vpu-lanes 257 "$@"
    expect_fail "--mxu overflow ($o)"  "'99999999999999999999999999' is out of range" --mxu 99999999999999999999999999 "$@"
    expect_fail "--mxu 4294967312 ($o)" "'4294967312' is out of range" --mxu 4294967312 "$@"
    expect_fail "--mxu '' ($o)"        "--mxu '' is not a whole number" --mxu "" "$@"
    expect_fail "--mxu= ($o)"          "--mxu '' is not a whole number" --mxu= "$@"
    expect_fail "--cores 0 ($o)"       "--cores '0' is out of range (allowed: 1..64)" --cores 0 "$@"
    expect_fail "--ub-kib 0 ($o)"      "--ub-kib '0' is out of range (allowed: 1..16777216)" --ub-kib 0 "$@"
    expect_fail "--ub-kib 5 N=3 ($o)"  "--ub-kib '5' is not a whole number of 6-byte rows (allowed: KiB giving 1..65536 whole rows at this N)" --mxu 3 --ub-kib 5 "$@"
    expect_fail "--acc-kib 512 N=1 ($o)" "--acc-kib '512' gives 131072 rows of 4 bytes (allowed: KiB giving 1..65536 whole rows at this N)" --mxu 1 --acc-kib 512 "$@"
    expect_fail "--wmem-kib x ($o)"    "--wmem-kib 'x' is not a whole number (allowed: 1..16777216)" --wmem-kib x "$@"
    expect_fail "--imem-insns 0 ($o)"  "--imem-insns '0' is out of range (allowed: 1..32768)" --imem-insns 0 "$@"
    expect_fail "--imem-insns 32769 ($o)" "--imem-insns '32769' is out of range (allowed: 1..32768)" --imem-insns 32769 "$@"
    expect_fail "--cores 65 ($o)"      "--cores '65' is out of range (allowed: 1..64)" --cores 65 "$@"
    expect_fail "--cores x ($o)"       "--cores 'x' is not a whole number" --cores x "$@"
    expect_fail "--pe-stages 4 ($o)"   "--pe-stages '4' is out of range (allowed: 1..3)" --pe-stages 4 "$@"
    expect_fail "--pe-stages 0 ($o)"   "--pe-stages '0' is out of range" --pe-stages 0 "$@"
    expect_fail "unknown long ($o)"    "'--frobnicate'" --frobnicate "$@"
    expect_fail "unknown long= ($o)"   "'--frobnicate=3'" --frobnicate=3 "$@"
    expect_fail "unknown short ($o)"   "'-x'" -x "$@"
    expect_fail "value to --version ($o)" "'--version=1'" --version=1 "$@"
    expect_fail "extra argument ($o)"  "'extra'" "$@" extra
    expect_fail "extra after -- ($o)"  "'more'" "$@" -- more
    expect_fail "bad value after good ($o)" "'7y'" --mxu 8 --cores 7y "$@"
    # the board (docs/board.md): topology shapes, link width and latency
    expect_fail "torus 3x3 at C=8 ($o)"  "--topology 'torus:3x3': R*S = 9 must equal --cores 8" --cores 8 --topology torus:3x3 "$@"
    expect_fail "torus 2x4 at C=6 ($o)"  "--topology 'torus:2x4': R*S = 8 must equal --cores 6" --cores 6 --topology torus:2x4 "$@"
    expect_fail "torus 0x8 ($o)"         "--topology 'torus:0x8': R*S = 0 must equal --cores 8" --topology torus:0x8 "$@"
    expect_fail "torus 2x ($o)"          "--topology 'torus:2x' is not a torus shape" --topology torus:2x "$@"
    expect_fail "torus 2x4x1 ($o)"       "--topology 'torus:2x4x1' is not a torus shape" --topology torus:2x4x1 "$@"
    expect_fail "torus:-2x-4 ($o)"       "--topology 'torus:-2x-4' is not a torus shape" --topology torus:-2x-4 "$@"
    expect_fail "topology mesh ($o)"     "--topology 'mesh' is not a topology (allowed: ring, torus, torus:RxS" --topology mesh "$@"
    expect_fail "topology '' ($o)"       "--topology '' is not a topology" --topology "" "$@"
    expect_fail "--link-bits 31 ($o)"    "--link-bits '31' is out of range (allowed: 32..1024)" --link-bits 31 "$@"
    expect_fail "--link-bits 1025 ($o)"  "--link-bits '1025' is out of range (allowed: 32..1024)" --link-bits 1025 "$@"
    expect_fail "--link-bits w ($o)"     "--link-bits 'w' is not a whole number" --link-bits w "$@"
    expect_fail "--link-latency 17 ($o)" "--link-latency '17' is out of range (allowed: 0..16)" --link-latency 17 "$@"
    expect_fail "--link-latency -1 ($o)" "--link-latency '-1' is out of range (allowed: 0..16)" --link-latency -1 "$@"
    # the core's AXI4 data master width (docs/isa.md "AXI4 master (data)")
    for b in 32 100 1024 0 0x40 x ""; do
        expect_fail "--axi-data-bits '$b' ($o)" "--axi-data-bits '$b' is not an AXI data width (allowed: 64, 128, 256, 512)" --axi-data-bits "$b" "$@"
    done
done
# issue 16 item 4: one grammar in every tool: exact names, each option once
expect_fail "abbreviation --mx"        "unknown option '--mx'" --mx 4 -o out
expect_fail "abbreviation --out"       "unknown option '--out'" --mxu 4 --out out
expect_fail "--mxu twice"              "option '--mxu' given twice" --mxu 4 --mxu 4 -o out
expect_fail "-o twice"                 "option '-o' given twice" --mxu 4 -o out -o new
# issue 16 item 5: memory sizes of a core that is not written are refused, not ignored
expect_fail "--ub-kib with L != N"     "--ub-kib sizes a memory of the core, which is written only when --vpu-lanes equals --mxu (got --vpu-lanes 2, --mxu 4)" --mxu 4 --vpu-lanes 2 --ub-kib 16 -o out
expect_fail "--imem-insns with L != N" "--imem-insns sizes a memory of the core" --mxu 4 --imem-insns 64 --vpu-lanes 3 -o out
expect_fail "missing --axi-data-bits value" "option '--axi-data-bits' needs a value (allowed: 64, 128, 256, 512)" -o out --axi-data-bits
expect_fail "missing value at end"     "option '--mxu' needs a value" -o out --mxu
expect_fail "missing -o value"         "option '-o' needs a value" --mxu 4 -o
expect_fail "missing -o"               "missing -o DIR" --mxu 4
expect_fail "no arguments"             "missing -o DIR"
expect_fail "empty -o"                 "-o '' is empty" -o ""
expect_fail "parent missing"           "'nodir/sub'" -o nodir/sub/out
expect_fail "parent named"             "cannot be created: no parent directory 'nodir/sub'" -o nodir/sub/out
expect_fail "cdir parent named"        "cannot be resolved: no parent directory 'nodir2'" -o out --constraints-dir nodir2/c
expect_fail "parent is a file"         "'plainfile/out'" -o plainfile/out
expect_fail "output is a file"         "'plainfile' exists and is not a directory" -o plainfile
mkdir -p w/clash/tpu_mxu.sv   # a directory where a file must go: refused before any rename
expect_fail "directory in the way"     "'tpu_mxu.sv'" -o clash
rmdir w/clash/tpu_mxu.sv
# Not writable. Root ignores permission bits, so also use a place no one can create in.
expect_fail "output under /proc"       "'/proc/gen-test-out'" -o /proc/gen-test-out
if [ "$(id -u)" != 0 ]; then
    mkdir -p w/ro && chmod 555 w/ro
    expect_fail "read-only parent"     "'ro/out'" -o ro/out
    mkdir -p w/ro2 && chmod 555 w/ro2
    expect_fail "read-only output dir" "'ro2'" -o ro2
else
    echo "note: running as root: the permission-bit cases are covered by /proc only"
fi

# ---- --help, --version ----
if gen --help >out 2>err && grep -q '^Usage: gen \[--mxu N\]' out && [ ! -s err ] \
   && grep -q -- '--cores' out && grep -q -- '--pe-stages' out && grep -q -- '-o' out; then ok
else bad "--help"; fi
if gen -h >out 2>err && grep -q '^Usage: gen' out; then ok; else bad "-h"; fi
if [ "$(gen --version 2>err)" = "gen 0.1.0" ] && [ ! -s err ]; then ok; else bad "--version"; fi

# ---- Successful runs ----
header_ok() {  # header_ok DIR "command line" "parameters line"
    for f in $FILES; do
        case "$3:$f" in  # no core (and no board) when the VPU does not have N lanes
        *vpu_lanes=3\ *:tpu_core_[svmc]*.sv|*vpu_lanes=3\ *:tpu_core.*|*vpu_lanes=3\ *:tpu_board*|*vpu_lanes=3\ *:tpu_isa_pkg.sv) continue ;;
        esac
        [ -f "$1/$f" ] || { bad "$1/$f missing"; return; }
        h=$(head -n 5 "$1/$f")
        exp="// SPDX-License-Identifier: Apache-2.0
// generated by gen -- do not edit
// command: $2
// gen version: 0.1.0
// parameters: $3"
        [ "$h" = "$exp" ] || { bad "$1/$f header:"; echo "$h"; echo "expected:"; echo "$exp"; return; }
    done
    ok
}
param() { sed -n "s/^#define $2  *\([^ ]*\).*/\1/p" "$1/tpu_params.h"; }

for n in 1 3 256; do
    l=$((2 * n)); b=$((2 * n - 2))
    if (cd w && gen --mxu $n --cores 3 -o n$n 2>"$T/err"); then ok; else bad "--mxu $n: $(cat "$T/err")"; fi
    header_ok w/n$n "gen --mxu $n --cores 3 -o n$n" "N=$n cores=3 pe_stages=1 latency_L=$l busy_cycles_B=$b vpu_lanes=$n freq_mhz=100"
    [ "$(ls -A w/n$n | LC_ALL=C sort | tr '\n' ' ')" = "$(echo $FILES $HASH_FILES $MANIFEST | tr ' ' '\n' | LC_ALL=C sort | tr '\n' ' ')" ] \
        && ok || bad "--mxu $n: not exactly the files of FILES: $(ls -A w/n$n)"
    [ "$(param w/n$n TPU_MXU_N)" = $n ] && [ "$(param w/n$n TPU_MXU_LATENCY)" = $l ] \
        && [ "$(param w/n$n TPU_MXU_BUSY_CYCLES)" = $b ] && [ "$(param w/n$n TPU_CORES)" = 3 ] \
        && [ "$(param w/n$n TPU_PE_STAGES)" = 1 ] && [ "$(param w/n$n TPU_GEN_VERSION)" = '"0.1.0"' ] \
        && [ "$(param w/n$n TPU_VPU_LANES)" = $n ] \
        && ok || bad "--mxu $n: tpu_params.h values"
done

# --pe-stages 2 and 3: the timing in the headers and tpu_params.h (docs/mxu.md: S = 2:
# L = 2N + 1, B = 2N - 2; S = 3: L = 3N + 1, B = 3N - 3), the two-stage adder's file (S = 3
# only) in the file lists.
for sn in "2 1" "2 5" "3 1" "3 5" "3 256"; do
    set -- $sn; s=$1; n=$2
    if [ $s = 2 ]; then l=$((2 * n + 1)); b=$((2 * n - 2)); else l=$((3 * n + 1)); b=$((3 * n - 3)); fi
    d=s${s}n$n
    if (cd w && gen --mxu $n --pe-stages $s -o $d 2>"$T/err"); then ok; else bad "--pe-stages $s --mxu $n: $(cat "$T/err")"; fi
    header_ok w/$d "gen --mxu $n --pe-stages $s -o $d" "N=$n cores=8 pe_stages=$s latency_L=$l busy_cycles_B=$b vpu_lanes=$n freq_mhz=100"
    [ "$(param w/$d TPU_MXU_LATENCY)" = $l ] && [ "$(param w/$d TPU_MXU_BUSY_CYCLES)" = $b ] \
        && [ "$(param w/$d TPU_PE_STAGES)" = $s ] && ok || bad "--pe-stages $s --mxu $n: tpu_params.h values"
    grep -q "L = AddStages\*N + N + MulStages = $l " w/$d/tpu_mxu.sv && grep -q "B = AddStages\*(N-1) + N-1 = $b " w/$d/tpu_mxu.sv \
        && ok || bad "--pe-stages $s --mxu $n: L, B in the tpu_mxu.sv header"
    # the pipelined PEs cut their fused multiply-accumulate into stages themselves: no
    # separate pipelined adder module is written or listed
    [ ! -e w/$d/tpu_fp32_add_pipe.sv ] && ! grep -rq 'fp32_add_pipe' w/$d && ok || bad "S=$s: a tpu_fp32_add_pipe"
    rm -rf w/$d
done

# Defaults: N = 128, cores = 8; the output directory is created; --opt=value forms.
(cd w && gen -o def) && header_ok w/def "gen -o def" "N=128 cores=8 pe_stages=1 latency_L=256 busy_cycles_B=254 vpu_lanes=128 freq_mhz=100"
# The resolved core and board parameters follow the parameters line (lines 6 and 7), and
# --freq-mhz is recorded (docs/fpga.md).
if [ "$(sed -n 6,7p w/def/tpu_core.sv)" = "// core: ub_rows=4096 acc_rows=2048 wmem_rows=1024 imem_insns=1024 axi_data_bits=512
// board: topology=torus 2x4 link_bits=64 link_latency=2" ]; then ok; else bad "default header core/board lines: $(sed -n 6,7p w/def/tpu_core.sv)"; fi
(cd w && gen --mxu 2 --cores 3 --freq-mhz 250 --vpu-lanes 1 -o fq) \
    && [ "$(sed -n 5,7p w/fq/tpu_mxu.sv)" = "// parameters: N=2 cores=3 pe_stages=1 latency_L=4 busy_cycles_B=2 vpu_lanes=1 freq_mhz=250
// board: topology=ring 1x3 link_bits=64 link_latency=2
//" ] && ok || bad "--freq-mhz 250 header: $(sed -n 5,7p w/fq/tpu_mxu.sv 2>&1)"
rm -rf w/fq
(cd w && gen --mxu=5 --cores=2 --pe-stages=1 --output=eq) \
    && header_ok w/eq "gen --mxu=5 --cores=2 --pe-stages=1 --output=eq" "N=5 cores=2 pe_stages=1 latency_L=10 busy_cycles_B=8 vpu_lanes=5 freq_mhz=100"

(cd w && gen --mxu 4 --vpu-lanes 3 -o lanes) \
    && header_ok w/lanes "gen --mxu 4 --vpu-lanes 3 -o lanes" "N=4 cores=8 pe_stages=1 latency_L=8 busy_cycles_B=6 vpu_lanes=3 freq_mhz=100"

# The core's memory sizes (docs/isa.md "Memories"): rows = KiB * 1024 / row bytes, in
# tpu_params.h and in tpu_core.sv; the defaults; no core when the VPU does not have N lanes.
core_sizes_ok() {  # core_sizes_ok DIR UB ACC WMEM IMEM
    for kv in "UB_ROWS $2" "ACC_ROWS $3" "WMEM_ROWS $4" "IMEM_INSNS $5"; do
        set -- "$1" $kv
        grep -q "^#define TPU_CORE_$2 *$3 " "$1/tpu_params.h" || return 1
    done
}
(cd w && gen --mxu 3 --ub-kib 24 --acc-kib 12 --wmem-kib 3 --imem-insns 100 -o sizes) \
    && core_sizes_ok w/sizes 4096 1024 512 100 \
    && grep -q "localparam int AccRows   = 1024;" w/sizes/tpu_core.sv && ok || bad "core sizes from the options"
(cd w && gen --mxu 5 -o sizes5) && core_sizes_ok w/sizes5 4096 2048 40 1024 && ok || bad "core default sizes"
[ ! -e w/lanes/tpu_core.sv ] && [ ! -e w/lanes/tpu_core.f ] && ! grep -q TPU_CORE_ w/lanes/tpu_params.h \
    && ok || bad "--vpu-lanes 3 at N = 4 still wrote the core"

# The AXI4 data master's width (docs/isa.md "AXI4 master (data)"): by default the smallest
# power of two >= 4N bits, clamped to 64..512 (the table written out here, not computed), in
# the core header line, tpu_params.h and the ports of tpu_core, tpu_top and tpu_board.
axi_ok() {  # axi_ok DIR B
    grep -q "^// core: .* axi_data_bits=$2\$" "$1/tpu_core.sv" \
        && grep -q "^#define TPU_CORE_AXI_DATA_BITS *$2 " "$1/tpu_params.h" \
        && grep -q "parameter int AxiDataW = $2 " "$1/tpu_core.sv" \
        && grep -q "parameter int DataW    = $2 " "$1/tpu_core_dma.sv" \
        && grep -q "parameter int AxiDataW = $2 " "$1/tpu_board.sv" \
        && grep -q "output logic \[$(($2 - 1)):0\] *m_axi_wdata," "$1/tpu_top.sv" \
        && grep -q "output logic \[$(($2 / 8 - 1)):0\] *m_axi_wstrb," "$1/tpu_top.sv" \
        && grep -q "input  logic \[$(($2 - 1)):0\] *m_axi_rdata," "$1/tpu_top.sv"
}
for nb in "1 64" "3 64" "16 64" "17 128" "32 128" "33 256" "64 256" "65 512" "100 512" "128 512" "256 512"; do
    set -- $nb
    (cd w && gen --mxu $1 --cores 2 -o axi$1) && axi_ok w/axi$1 $2 && ok || bad "--mxu $1: default AXI data width is not $2"
    rm -rf w/axi$1
done
for nb in "4 128" "4 256" "2 512" "128 64"; do
    set -- $nb
    (cd w && gen --mxu $1 --cores 2 --axi-data-bits $2 -o axi$1) && axi_ok w/axi$1 $2 && ok || bad "--mxu $1 --axi-data-bits $2"
    rm -rf w/axi$1
done

# Same command, same bytes: twice, by name, by relative and absolute path, into an existing
# directory (files replaced, other files kept).
(cd w && gen --mxu 7 --cores 4 -o same) && cp -r w/same w/same.1
(cd w && "$GEN" --mxu 7 --cores 4 -o same) && diff -r w/same.1 w/same >/dev/null && ok || bad "absolute path gives other bytes"
(cd w && ../gen-bin/gen --mxu 7 --cores 4 -o same) && diff -r w/same.1 w/same >/dev/null && ok || bad "relative path gives other bytes"
echo mine >w/same/notes.txt
(cd w && gen --mxu 7 --cores 4 -o same) && [ "$(cat w/same/notes.txt)" = mine ] && ok || bad "other files in DIR were touched"
rm w/same/notes.txt && diff -r w/same.1 w/same >/dev/null && ok || bad "second run differs"
[ -z "$(find w -name '.gen-tmp-*')" ] && ok || bad "temporary directories left: $(find w -name '.gen-tmp-*')"

# issue 16 item 4: "010" is ten, as in every tool (decimal digits only); 064 is 64
(cd w && gen --mxu 010 --axi-data-bits 064 -o dec) && header_ok w/dec "gen --mxu 010 --axi-data-bits 064 -o dec" "N=10 cores=8 pe_stages=1 latency_L=20 busy_cycles_B=18 vpu_lanes=10 freq_mhz=100" \
    && axi_ok w/dec 64 && ok || bad "--mxu 010 --axi-data-bits 064"
rm -rf w/dec
# issue 16 item 5: gen's files in an existing DIR are exactly what this configuration writes:
# the core's files of an earlier N = 4 run (listed in its manifest) are gone after an
# MXU-and-VPU-only run; other files stay, even one named like gen's (issue 28: tpu_old.sv is
# the user's, the manifest does not list it)
(cd w && gen --mxu 4 -o stale) && echo mine >w/stale/notes.txt && echo x >w/stale/tpu_old.sv
(cd w && gen --mxu 4 --vpu-lanes 2 -o stale2) && (cd w && gen --mxu 4 --vpu-lanes 2 -o stale) \
    && [ ! -e w/stale/tpu_core.sv ] && [ "$(cat w/stale/tpu_old.sv)" = x ] && [ "$(cat w/stale/notes.txt)" = mine ] \
    && rm w/stale/notes.txt w/stale/tpu_old.sv && [ "$(ls w/stale)" = "$(ls w/stale2)" ] && ok || bad "stale files of an earlier configuration left in DIR: $(ls w/stale | head -50 | tr '\n' ' ')"
rm -rf w/stale w/stale2
# issue 28: the manifest is untrusted. A run into a folder whose manifest lists the core's
# files removes them (the control case); one whose manifest is not gen's (the header changed)
# removes nothing; names with '/' or "..", a directory, a symbolic link, a name not of gen's
# kind and the manifest itself are never removed; a 10 MB or binary manifest: no crash,
# nothing removed.
mf_hdr() { head -n 2 w/mf0/tpu_manifest.txt; }
(cd w && gen --mxu 4 -o mf0) && grep -qx tpu_core.sv w/mf0/tpu_manifest.txt && ok || bad "no manifest listing tpu_core.sv in w/mf0"
cp -r w/mf0 w/mf1 && sed -i 's/do not edit/do edit/' w/mf1/tpu_manifest.txt
(cd w && gen --mxu 4 --vpu-lanes 2 -o mf1) && [ -e w/mf1/tpu_core.sv ] && ok || bad "a manifest without gen's header removed tpu_core.sv"
mkdir -p w/mf2/sub w/mf2/tpu_dir.sv w/victim && echo v >w/victim/tpu_v.sv && echo s >w/mf2/sub/tpu_s.sv \
    && echo t >w/mf2/target.txt && ln -s target.txt w/mf2/tpu_lnk.sv && echo n >w/mf2/notes.txt && echo m >w/mf2/tpu_mine.sv
{ mf_hdr; printf '%s\n' ../victim/tpu_v.sv sub/tpu_s.sv .. . tpu_dir.sv tpu_lnk.sv notes.txt target.txt \
    "$T/w/victim/tpu_v.sv" tpu_manifest.txt ' tpu_mine.sv' 'tpu_mine.sv '; } >w/mf2/tpu_manifest.txt
(cd w && gen --mxu 2 -o mf2) && [ -f w/victim/tpu_v.sv ] && [ -f w/mf2/sub/tpu_s.sv ] && [ -d w/mf2/tpu_dir.sv ] \
    && [ -L w/mf2/tpu_lnk.sv ] && [ -f w/mf2/target.txt ] && [ -f w/mf2/notes.txt ] && [ -f w/mf2/tpu_mine.sv ] \
    && [ -f w/mf2/tpu_manifest.txt ] && ok || bad "a hostile manifest removed something: $(ls -A w/mf2 w/victim | tr '\n' ' ')"
cp -r w/mf0 w/mf3 && { mf_hdr; head -c 10000000 /dev/urandom; printf '\ntpu_core.sv\n'; } >w/mf3/tpu_manifest.txt
(cd w && gen --mxu 4 --vpu-lanes 2 -o mf3 2>"$T/err") && [ -e w/mf3/tpu_core.sv ] && ok || bad "a 10 MB manifest: $(cat "$T/err")"
cp -r w/mf0 w/mf4 && { mf_hdr; printf 'tpu_\000core.sv\n\377\376\ntpu_mxu.f'; } >w/mf4/tpu_manifest.txt && echo x >w/mf4/tpu_.sv
(cd w && gen --mxu 4 --vpu-lanes 2 -o mf4 2>"$T/err") && [ -e w/mf4/tpu_core.sv ] && [ -e w/mf4/tpu_.sv ] && [ -e w/mf4/tpu_mxu.f ] \
    && ok || bad "a binary manifest: $(cat "$T/err")"
rm -rf w/mf0 w/mf1 w/mf2 w/mf3 w/mf4 w/victim
# a --constraints-dir loses only stale constraint files, never other generated files
(cd w && gen --mxu 2 -o other) && echo x >w/other/tpu_top.pcf.old && (cd w && gen --mxu 2 -o cs --constraints-dir other) \
    && [ -e w/other/tpu_mxu.sv ] && [ -e w/other/tpu_top.xdc ] && ok || bad "--constraints-dir removed files that are not constraints"
rm -rf w/other w/cs

# The command line is recorded as typed, quoted where a shell needs it, on one line.
mkdir -p "w/a b"
(cd w && gen --mxu 2 -o "a b/o'q") && header_ok "w/a b/o'q" "gen --mxu 2 -o 'a b/o'\\''q'" "N=2 cores=8 pe_stages=1 latency_L=4 busy_cycles_B=2 vpu_lanes=2 freq_mhz=100"

# A new directory gets the usual mode (mkdtemp's 0700 is not left on it).
(umask 022; cd w && gen --mxu 2 -o modes) && [ "$(stat -c %a w/modes)" = 755 ] && ok || bad "new DIR mode $(stat -c %a w/modes)"

# The board interconnect (docs/board.md): the topology, shape, link width and latency tpu_noc.sv
# was built for, and its routers' port count.
noc_ok() {  # noc_ok "gen args" "topology line" ports
    d=noc$(echo "$1" | tr -dc 'a-z0-9')
    if (cd w && gen --mxu 1 $1 -o $d 2>"$T/err") && grep -q "^// Topology: $2" w/$d/tpu_noc.sv \
        && grep -q "parameter int NPorts   = $3," w/$d/tpu_noc.sv; then ok
    else bad "gen $1: tpu_noc.sv is not '$2' with $3 ports: $(cat "$T/err")"; fi
}
noc_ok "--cores 8"                               "torus, 2 x 4 (core id = row \\* 4 + column), 64-bit links, 2 register" 5
noc_ok "--cores 8 --topology ring"               "ring, 1 x 8 (core id = row \\* 8 + column), 64-bit links" 3
noc_ok "--cores 4"                               "ring, 1 x 4" 3
noc_ok "--cores 6 --topology torus"              "torus, 2 x 3" 5
noc_ok "--cores 6 --topology torus:3x2"          "torus, 3 x 2" 5
noc_ok "--cores 7 --topology torus"              "torus, 1 x 7" 5
noc_ok "--cores 64 --topology torus"             "torus, 8 x 8" 5
noc_ok "--cores 1 --link-bits 1024 --link-latency 16" "ring, 1 x 1 (core id = row \\* 1 + column), 1024-bit links, 16 register" 3
noc_ok "--cores 2 --link-bits 32 --link-latency 0" "ring, 1 x 2 (core id = row \\* 2 + column), 32-bit links, 0 register" 3

echo "test-gen-cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
