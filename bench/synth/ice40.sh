#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# nextpnr-ice40 place and route of the N x N MXU in the serialising wrapper ice40_wrap.sv.
#   ice40.sh N DEVICE OUTDIR FILE.sv...     DEVICE: up5k (package sg48) or hx8k (ct256)
# N may be N_S<S> (the files were generated with --pe-stages S): the design is then named
# mxu_n<N>_s<S>.
# Yosys synth_ice40, then nextpnr-ice40 with a fixed seed and no pin constraints (the core is
# out of context; --pcf-allow-unconstrained lets nextpnr place the five pins anywhere). The
# Fmax is nextpnr's own timing analysis of the routed design (--timing-allow-fail: the 12 MHz
# target is only a goal for the placer; "fits" means placed and routed). Writes
# OUTDIR/ice40_mxu_nN_DEVICE.{yosys.log,nextpnr.log,report.json,json}.
set -eu
cfg=$1; dev=$2; out=$3; shift 3
n=${cfg%%_S*}
name=mxu_n$n; case $cfg in *_S*) name=mxu_n${n}_s${cfg#*_S} ;; esac
here=$(cd "$(dirname "$0")" && pwd)
case $dev in
    up5k) pkg=sg48; dsp=-dsp ;;   # the UP5K has SB_MAC16 DSPs: the significand product uses one
    hx8k) pkg=ct256; dsp= ;;
    *) echo "ice40.sh: device up5k or hx8k, not '$dev'" >&2; exit 2 ;;
esac
mkdir -p "$out"
b="$out/ice40_${name}_$dev"
start=$(date +%s)
yosys -q -l "$b.yosys.log" -p "read_verilog -sv -DMXU_N=$n $here/ice40_wrap.sv $*; \
synth_ice40 $dsp -top ice40_wrap -json $b.netlist.json" >/dev/null
status=0
timeout 900 nextpnr-ice40 --"$dev" --package $pkg --json "$b.netlist.json" \
    --pcf-allow-unconstrained --timing-allow-fail --freq 12 --seed 1 --report "$b.report.json" \
    >"$b.nextpnr.log" 2>&1 || status=$?
secs=$(( $(date +%s) - start ))
python3 - "$b" "$name" "$dev" "$secs" "$status" >"$b.json" <<'PY'
import json, re, sys
b, name, dev, secs, status = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
log = open(b + ".nextpnr.log").read()
fmax = re.findall(r"Max frequency for clock\s+'[^']*':\s+([\d.]+) MHz", log)
util = {m.group(1): (int(m.group(2)), int(m.group(3)))
        for m in re.finditer(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)", log, re.M)}
r = {"design": name, "device": dev, "fits": status == 0 and bool(fmax),
     "fmax_mhz": float(fmax[-1]) if fmax else None, "seconds": secs,
     "tool": "yosys synth_ice40 + nextpnr-ice40 --seed 1 (ice40_wrap.sv serialising wrapper)",
     "utilisation": {k: {"used": u, "available": a} for k, (u, a) in util.items()}}
json.dump(r, sys.stdout, indent=1)
print()
PY
echo "ice40 $name $dev: $(python3 -c "import json;r=json.load(open('$b.json'));print(r['fmax_mhz'],'MHz', r['utilisation'].get('ICESTORM_LC'))") ($secs s)"
