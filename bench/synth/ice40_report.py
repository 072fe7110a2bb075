#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ice40_report.py OUT.md FILE.json...: the nextpnr-ice40 results as a table (stdout + OUT.md)."""
import json
import sys

rows = [json.load(open(f)) for f in sys.argv[2:]]
lines = ["# nextpnr-ice40 (make synth-ice40)", "",
         "MXU inside bench/synth/ice40_wrap.sv (shift registers in and out; 5 pins), "
         "Yosys synth_ice40, nextpnr-ice40 --seed 1, Fmax from nextpnr's timing analysis.", "",
         "| design | device | fits | Fmax (MHz) | logic cells | RAM | DSP (SB_MAC16) | P&R s |",
         "|---|---|---|---|---|---|---|---|"]
for r in rows:
    u = r["utilisation"]
    def f(k):
        return f"{u[k]['used']}/{u[k]['available']}" if k in u else "-"
    lines.append(f"| {r['design']} | {r['device']} | {'yes' if r['fits'] else 'no'} | "
                 f"{r['fmax_mhz'] if r['fmax_mhz'] is not None else '-'} | {f('ICESTORM_LC')} | "
                 f"{f('ICESTORM_RAM')} | {f('ICESTORM_DSP')} | {r['seconds']} |")
text = "\n".join(lines) + "\n"
open(sys.argv[1], "w").write(text)
sys.stdout.write(text)
