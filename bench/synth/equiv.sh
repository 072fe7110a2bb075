#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Check that flatten_packed.py (the Yosys 0.23 front-end workaround of the synthesis flow)
# keeps the circuit: simulate the generated top and its flattened copy side by side in Icarus
# with the same random inputs every cycle (reset pulsed at the start) and compare every output
# bit, X included (!==), every cycle.
#   equiv.sh GEN_DIR FILELIST TOP CYCLES WORKDIR
# GEN_DIR: a gen output directory; FILELIST: tpu_mxu.f or tpu_vpu.f in it; TOP: its top.
# EQUIV_PARAMS="P=V ..." (optional) overrides parameters of TOP in both instances (e.g. a
# small Depth, so that random addresses hit written words).
# Prints "equiv TOP: N cycles, outputs identical" or fails with the first mismatches.
set -eu
gdir=$1; flist=$2; top=$3; cycles=$4; work=$5
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work/flat"
files=$(grep -v '^//' "$gdir/$flist" | sed "s|^|$gdir/|")
# shellcheck disable=SC2086
python3 "$here/flatten_packed.py" "$work/flat" $files
# The flattened copy's modules are renamed fl_tpu_* so both designs live in one simulation.
for f in "$work"/flat/*.sv; do
    sed -E 's/\btpu_([a-z0-9_]+)\b/fl_tpu_\1/g' "$f" >"$f.tmp" && mv "$f.tmp" "$f"
done
python3 - "$work/flat/$(basename "$(grep -l "module fl_$top\b" "$work"/flat/*.sv)")" "$top" "$cycles" "${EQUIV_PARAMS:-}" >"$work/tb.sv" <<'EOF'
import re, sys
path, top, cycles = sys.argv[1], sys.argv[2], int(sys.argv[3])
over = dict(kv.split("=", 1) for kv in sys.argv[4].split())
text = open(path).read()
hdr = text[text.index("module fl_" + top):]
hdr = hdr[:hdr.index(");")]
# Port widths are evaluated with the module's parameter defaults (`parameter int N = 2`).
params = {}
for m in re.finditer(r"\bparameter\s+int\s+([A-Za-z_]\w*)\s*=\s*([^,)]+)", hdr):
    params[m.group(1)] = m.group(2).strip()
params.update(over)
pinst = "#(" + ", ".join(f".{k}({v})" for k, v in over.items()) + ") " if over else ""
def ev(e):
    e = re.sub(r"\b[A-Za-z_]\w*\b", lambda w: "(" + params.get(w.group(0), w.group(0)) + ")", e)
    if re.search(r"[A-Za-z_$]", e):
        sys.exit("equiv.sh: cannot evaluate the width expression " + e)
    return eval(e)
ports = []
for m in re.finditer(r"\b(input|output)\s+logic\s*(?:\[([^\]]+):0\])?\s*([A-Za-z_]\w*)", hdr):
    ports.append((m.group(1), ev(m.group(2)) + 1 if m.group(2) else 1, m.group(3)))
ins = [p for p in ports if p[0] == "input" and p[2] not in ("clk_i", "rst_ni")]
outs = [p for p in ports if p[0] == "output"]
print("`timescale 1ns/1ps\nmodule tb;")
print("  reg clk_i = 0, rst_ni = 0;\n  integer cyc, errs = 0;")
for _, w, n in ins:
    print(f"  reg [{w-1}:0] {n};")
for _, w, n in outs:
    print(f"  wire [{w-1}:0] a_{n}, b_{n};")
def conns(prefix):
    c = [".clk_i(clk_i)"] + ([".rst_ni(rst_ni)"] if "rst_ni" in [p[2] for p in ports] else [])
    c += [f".{n}({n})" for _, _, n in ins] + [f".{n}({prefix}_{n})" for _, _, n in outs]
    return ", ".join(c)
print(f"  {top} {pinst}u_a ({conns('a')});")
print(f"  fl_{top} {pinst}u_b ({conns('b')});")
print("  initial begin")
print(f"    for (cyc = 0; cyc < {cycles}; cyc = cyc + 1) begin")
for _, w, n in ins:
    k = (w + 31) // 32
    print(f"      {n} = {{{', '.join(['$random'] * k)}}};")
print("      if (cyc == 2) rst_ni = 1;")
print("      #1 clk_i = 1; #1 clk_i = 0;")
for _, w, n in outs:
    print(f"      if (a_{n} !== b_{n}) begin errs = errs + 1;")
    print(f"        if (errs < 5) $display(\"cycle %0d: {n} differs: %h vs %h\", cyc, a_{n}, b_{n}); end")
print("    end")
print(f"    if (errs == 0) $display(\"equiv {top}: {cycles} cycles, outputs identical\");")
print("    else begin $display(\"equiv %0d mismatches\", errs); $fatal(1); end")
print("    $finish;\n  end\nendmodule")
EOF
# shellcheck disable=SC2086
# the flattened copies in the file list's order too (a package before the modules that use it)
flat=$(for f in $files; do echo "$work/flat/$(basename "$f")"; done)
# shellcheck disable=SC2086
iverilog -g2012 -o "$work/tb.vvp" -s tb "$work/tb.sv" $files $flat
# The designs' own assertions may fire under random inputs (a protocol a real neighbour
# keeps): both copies print them alike; they are counted here, not shown (in equiv.log).
# A simulation that does not end within EQUIV_TIMEOUT seconds (default 120) fails the check
# instead of hanging the suite (Icarus 11.0 can loop forever in one time step on some
# always_comb blocks: gen/emit_core_seq.c says which and how the sequencer avoids them).
rc=0
timeout "${EQUIV_TIMEOUT:-120}" vvp -n "$work/tb.vvp" >"$work/equiv.log" 2>&1 || rc=$?
if [ "$rc" = 124 ]; then
    echo "equiv $top: vvp did not finish within ${EQUIV_TIMEOUT:-120} s ($work/equiv.log)" >&2
    exit 1
fi
grep -v -e '^ERROR: ' -e '^ *Time: [0-9]* *Scope: ' "$work/equiv.log" || true
n=$(grep -c '^ERROR: ' "$work/equiv.log" || true)
[ "$n" = 0 ] || echo "($n assertion messages of the two copies under random inputs: $work/equiv.log)"
grep -q "outputs identical" "$work/equiv.log"
