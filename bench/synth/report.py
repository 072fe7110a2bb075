#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Yosys synth_xilinx results as JSON, and the JSON files as a readable table.

  report.py run NAME FAMILY TOP BASE SECONDS   BASE.{stat.json,mem.json,log} -> JSON on stdout
  report.py hier NAME FAMILY TOP BASE SECONDS  BASE.stat.json (hierarchical run) -> per-
                                               submodule breakdown as JSON on stdout
  report.py table OUT.md FILE.json...          table (+ MXU extrapolation, + the breakdowns
                                               of *.hier.json) to stdout and OUT.md
  report.py check FILE.json...                 the DSP and block-RAM checks of test-fpga-dsp

Counting (what the table's columns are):
  LUT    LUT1..LUT6 and INV cells (Vivado counts an INV as a LUT1)
  FF     FD* flip-flops;  DSP  DSP48E1 / DSP48E2;  carry  CARRY4 (xc7) / CARRY8 (xcup)
  BRAM   block RAM in 36 Kb units (RAMB18 = 0.5);  LUTRAM  distributed RAM and SRL cells
  levels yosys `ltp -noff` on the flattened netlist: cells on the longest path between
         flip-flops/ports (each CARRY4/CARRY8 and MUXF7/8 counts as one level)
  memories  $mem_v2 cells inferred before memory mapping; a RAM (one with a write port) is
         *BRAM-eligible* when it holds >= 4096 bits and all its read ports are clocked:
         such a memory must come out as block RAM, not LUTs: the check requires at least
         ceil(bits / 36 Kb) RAMB36 (two RAMB18 count as one) per such RAM (the core's UB,
         ACC and IMEM, tpu_sram; the PE and MXU have none, so it is vacuous there).
         ROMs (no write port: the VPU's exp2/recip tables) are listed but not checked:
         Yosys 0.23's memory_libmap cost model maps a 256 x 31 registered ROM to ~100
         LUT6 rather than a RAMB18, a choice, not an error (docs/fpga.md).
  hier   report.py hier: a hierarchical run (synth_hier.sh), each submodule's subtree
"""
import json
import math
import os
import re
import sys

BRAM_MIN_BITS = 4096
LUTRAM = ("RAM16X1", "RAM32X1", "RAM64X1", "RAM128X1", "RAM256X1", "RAM32M", "RAM64M",
          "SRL16", "SRLC16", "SRLC32")


def rtlil_int(v):
    """An RTLIL parameter value: 256, or 32'00000000000000000000000100000000."""
    if "'" in v:
        return int(v.split("'")[1].replace("x", "0").replace("z", "0"), 2)
    return int(v)


def run(name, fam, top, base, secs):
    stat = json.load(open(base + ".stat.json"))["design"]["num_cells_by_type"]
    log = open(base + ".log").read()
    m = re.findall(r"Longest topological path in \S+ \(length=(\d+)\)", log)
    lcs = re.findall(r"Estimated number of LCs:\s+(\d+)", log)
    ver = re.search(r"Yosys (\d+\.\d+)", log)
    cells = {k: int(v) for k, v in stat.items()}
    lut = sum(v for k, v in cells.items() if re.fullmatch(r"LUT[1-6]|INV", k))
    ff = sum(v for k, v in cells.items() if k.startswith("FD"))
    dsp = sum(v for k, v in cells.items() if k.startswith("DSP48"))
    bram = sum(v * (1.0 if "36" in k else 0.5) for k, v in cells.items()
               if k.startswith("RAMB"))
    uram = cells.get("URAM288", 0)
    lutram = sum(v for k, v in cells.items() if k.startswith(LUTRAM))
    carry = sum(v for k, v in cells.items() if k.startswith("CARRY"))
    muxf = sum(v for k, v in cells.items() if k.startswith("MUXF"))
    mems = []
    if os.path.exists(base + ".mem.il"):
        # RTLIL dump of the $mem_v2 cells: "cell $mem_v2 NAME" then "parameter \\P V" lines
        cur = None
        for line in open(base + ".mem.il"):
            t = line.split()
            if len(t) >= 3 and t[0] == "cell" and t[1] in ("$mem_v2", "$mem"):
                cur = {"name": t[2]}
                mems.append(cur)
            elif cur is not None and len(t) >= 3 and t[0] == "parameter":
                cur[t[1].lstrip("\\")] = t[2]
            elif t and t[0] == "end":
                cur = None
        for i, c in enumerate(mems):
            size, width = rtlil_int(c["SIZE"]), rtlil_int(c["WIDTH"])
            rd = rtlil_int(c.get("RD_PORTS", "1"))
            wr = rtlil_int(c.get("WR_PORTS", "0"))
            clk_en = c.get("RD_CLK_ENABLE", "0").split("'")[-1]
            sync = rd > 0 and set(clk_en[-rd:]) == {"1"}
            mems[i] = {"name": c["name"], "words": size, "width": width,
                       "bits": size * width, "read_ports": rd, "write_ports": wr,
                       "sync_read": sync, "rom": wr == 0,
                       "bram_eligible": size * width >= BRAM_MIN_BITS and sync and wr > 0}
    eligible = sum(1 for x in mems if x["bram_eligible"])
    # A RAMB36 holds 36 Kb (32 Kb of data plus parity): the BRAM-eligible RAMs need at least
    # ceil(bits / 36864) blocks each; fewer blocks means some of them went to LUTs or FFs.
    bram_min = sum(math.ceil(x["bits"] / 36864) for x in mems if x["bram_eligible"])
    return {
        "name": name, "family": fam, "top": top,
        "tool": "yosys " + (ver.group(1) if ver else "?") + " synth_xilinx -family " + fam +
                " -flatten -noiopad -noclkbuf",
        "seconds": secs, "lut": lut, "ff": ff, "dsp": dsp, "bram36": bram, "uram": uram,
        "lutram": lutram, "carry": carry, "muxf": muxf,
        "lc_estimate": int(lcs[-1]) if lcs else None,
        "levels": int(m[-1]) if m else None,
        "memories": mems, "bram_eligible_memories": eligible,
        "bram36_min": bram_min,
        "bram_check_ok": bram + uram >= bram_min,
        "cells": cells,
    }


def counts(cells):
    """The table's resource columns from a {cell type: count} dict."""
    return {
        "lut": sum(v for k, v in cells.items() if re.fullmatch(r"LUT[1-6]|INV", k)),
        "ff": sum(v for k, v in cells.items() if k.startswith("FD")),
        "dsp": sum(v for k, v in cells.items() if k.startswith("DSP48")),
        "bram36": sum(v * (1.0 if "36" in k else 0.5) for k, v in cells.items()
                      if k.startswith("RAMB")),
        "lutram": sum(v for k, v in cells.items() if k.startswith(LUTRAM)),
        "carry": sum(v for k, v in cells.items() if k.startswith("CARRY")),
    }


def base_name(mod):
    """tpu_pe from \\tpu_pe, $paramod$<hash>\\tpu_pe or $paramod\\tpu_pe\\N=s32'..."""
    parts = mod.lstrip("\\").split("\\")
    return parts[1] if parts[0].startswith("$paramod") and len(parts) > 1 else parts[-1]


def hier(name, fam, top, base, secs):
    """Per-submodule breakdown of a hierarchical run: for the top and each of its children
    (and the children's children), the instance count and the subtree's resources."""
    # Yosys 0.23's stat -json of a hierarchy writes the hierarchy's text table into its
    # "design" member (not JSON): only the "modules" object is read.
    text = open(base + ".stat.json").read()
    mods, _ = json.JSONDecoder().raw_decode(text, text.index("{", text.index('"modules":')))
    # a submodule's cell type is its module's name without RTLIL's leading backslash
    own = {m.lstrip("\\"): {k: int(v) for k, v in d["num_cells_by_type"].items()}
           for m, d in mods.items()}
    memo = {}

    def total(m):
        if m not in memo:
            acc = {}
            for t, v in own[m].items():
                if t in own:
                    for k2, v2 in total(t).items():
                        acc[k2] = acc.get(k2, 0) + v * v2
                else:
                    acc[t] = acc.get(t, 0) + v
            memo[m] = acc
        return memo[m]

    topm = next(m for m in own if base_name(m) == top)
    rows = []

    def walk(m, path, depth, inst):
        r = {"path": path, "module": base_name(m), "instances": inst}
        r.update(counts(total(m)))
        rows.append(r)
        if depth < 2:
            for t, v in sorted(own[m].items(), key=lambda x: base_name(x[0])):
                if t in own:
                    walk(t, path + "/" + base_name(t), depth + 1, v)

    walk(topm, top, 0, 1)
    return {"name": name, "family": fam, "top": top, "seconds": secs,
            "tool": "yosys synth_xilinx -family " + fam + " -noiopad -noclkbuf (hierarchical)",
            "modules": rows}


def fmt(v):
    if isinstance(v, float):
        return ("%.1f" % v).rstrip("0").rstrip(".")
    return str(v)


def quad_fit(points):
    """Coefficients (a, b, c) of a N^2 + b N + c through three (N, value) points."""
    (x1, y1), (x2, y2), (x3, y3) = points
    d = (x1 - x2) * (x1 - x3) * (x2 - x3)
    a = (x3 * (y2 - y1) + x2 * (y1 - y3) + x1 * (y3 - y2)) / d
    b = (x3 * x3 * (y1 - y2) + x2 * x2 * (y3 - y1) + x1 * x1 * (y2 - y3)) / d
    c = (x2 * x3 * (x2 - x3) * y1 + x3 * x1 * (x3 - x1) * y2 + x1 * x2 * (x1 - x2) * y3) / d
    return a, b, c


# Vendor data sheet capacities (docs/fpga.md names the sources): LUTs, FFs, DSPs, BRAM36.
DEVICES = [
    ("Artix-7 100T (XC7A100T)", "xc7", 63400, 126800, 240, 135),
    ("Kintex UltraScale+ KU5P", "xcup", 216960, 433920, 1824, 480),
    ("Alveo U250 (XCU250)", "xcup", 1728000, 3456000, 12288, 2688),
    ("Virtex UltraScale+ VU13P", "xcup", 1728000, 3456000, 12288, 2688),
]


def table(out, files):
    rows = [json.load(open(f)) for f in files]
    hiers = [r for r in rows if "modules" in r]
    rows = [r for r in rows if "modules" not in r]
    rows.sort(key=lambda r: (r["family"], r["name"]))
    lines = ["# Synthesis estimates (make synth-est)", "",
             "Yosys synth_xilinx, out of context (no I/O buffers), flattened. "
             "LUT includes INV; BRAM in 36 Kb blocks; levels = yosys `ltp -noff` "
             "(cells on the longest combinational path). bench/synth/report.py explains "
             "every column.", "",
             "| design | family | LUT | FF | DSP | BRAM36 | LUTRAM | carry | MUXF | levels "
             "| Yosys LC est. | BRAM-eligible mems | synth s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| " + " | ".join(fmt(x) for x in (
            r["name"], r["family"], r["lut"], r["ff"], r["dsp"], r["bram36"], r["lutram"],
            r["carry"], r["muxf"], r["levels"], r["lc_estimate"],
            r["bram_eligible_memories"], r["seconds"])) + " |")
    # Extrapolation of the MXU from the measured sizes (a N^2 + b N + c through 3 points).
    for fam in ("xc7", "xcup"):
        pts = {}
        for r in rows:
            mm = re.fullmatch(r"mxu_n(\d+)", r["name"])
            if mm and r["family"] == fam:
                pts[int(mm.group(1))] = r
        ns = sorted(pts)[-3:]
        if len(ns) < 3:
            continue
        fits = {k: quad_fit([(n, pts[n][k]) for n in ns]) for k in ("lut", "ff")}
        lines += ["", f"## MXU extrapolated ({fam}): a N^2 + b N + c through N = "
                  + ", ".join(map(str, ns)) + " (measured); DSP = N^2", "",
                  "| N | LUT | FF | DSP |", "|---|---|---|---|"]
        est = {}
        for n in (8, 16, 32, 64, 128, 256):
            v = {k: max(0, round(a * n * n + b * n + c)) for k, (a, b, c) in fits.items()}
            v["dsp"] = n * n
            est[n] = v
            lines.append(f"| {n} | {v['lut']} | {v['ff']} | {v['dsp']} |")
        lines += ["", f"Fit coefficients: " + "; ".join(
            f"{k} = {a:.1f} N^2 + {b:.1f} N + {c:.1f}" for k, (a, b, c) in fits.items()),
            ""]
        lane = next((r for r in rows if r["name"] == "vpu_lane" and r["family"] == fam), None)
        lines += ["| device | LUT | FF | DSP | BRAM36 | largest N (MXU alone, 80 % LUT/FF, "
                  "100 % DSP) | limited by | largest N, MXU + N-lane VPU | limited by |",
                  "|---|---|---|---|---|---|---|---|---|"]

        def largest(lut, ff, dsp, with_vpu):
            best, lim = 0, ""
            for n in range(1, 257):
                v = {k: max(0, a * n * n + b * n + c) for k, (a, b, c) in fits.items()}
                v["dsp"] = n * n
                if with_vpu:
                    for k in ("lut", "ff", "dsp"):
                        v[k] += n * lane[k]
                over = [name for name, use, cap in (("LUT", v["lut"], 0.8 * lut),
                                                    ("FF", v["ff"], 0.8 * ff),
                                                    ("DSP", v["dsp"], dsp)) if use > cap]
                if over:
                    return best, ", ".join(over)
                best = n
            return best, lim

        for dev, dfam, lut, ff, dsp, bram in DEVICES:
            if dfam != fam:
                continue
            best, lim = largest(lut, ff, dsp, False)
            vb, vl = largest(lut, ff, dsp, True) if lane else ("-", "no VPU lane run")
            lines.append(f"| {dev} | {lut} | {ff} | {dsp} | {bram} | {best} | {lim} | {vb} | {vl} |")
        # The core per N: the MXU fit + N lanes + the core's fixed part F (everything else:
        # control, DMA, network unit, memories, measured as core_n2 - MXU fit(2) - 2 lanes),
        # F taken either constant or growing as N/2 (all of it row-wide: an upper bound).
        # DSP = N^2 + 65 N + 2 (PEs, lanes, sequencer); BRAM36 = ceil(16N/9) + ceil(32N/18)
        # + 4 (UB 4096 x 16N as 4K x 9, ACC 2048 x 32N as 2K x 18, IMEM 4 x 1K x 32).
        core = next((r for r in rows if r["name"] == "core_n2" and r["family"] == fam), None)
        if core is None or lane is None:
            continue
        fx = {k: core[k] - (a * 4 + b * 2 + c) - 2 * lane[k] for k, (a, b, c) in fits.items()}

        def core_at(n, grow):
            s = n / 2 if grow else 1
            v = {k: a * n * n + b * n + c + n * lane[k] + fx[k] * s
                 for k, (a, b, c) in fits.items()}
            v["dsp"] = n * n + 65 * n + 2
            v["bram"] = math.ceil(16 * n / 9) + math.ceil(32 * n / 18) + 4
            return v

        lines += ["", f"## The core per N ({fam}), extrapolated from core_n2: MXU fit + N lanes "
                  f"+ fixed part F (LUT {round(fx['lut'])}, FF {round(fx['ff'])} at N = 2) "
                  "constant / growing as N/2", "",
                  "| N | LUT | FF | DSP | BRAM36 |", "|---|---|---|---|---|"]
        for n in (2, 4, 8, 16, 32, 64, 128):
            v0, v1 = core_at(n, False), core_at(n, True)
            lines.append(f"| {n} | {round(v0['lut'])} - {round(v1['lut'])} | "
                         f"{round(v0['ff'])} - {round(v1['ff'])} | {v0['dsp']} | {v0['bram']} |")
        lines += ["", "| device | largest core N (F constant) | limited by | "
                  "(F growing as N/2) | limited by |", "|---|---|---|---|---|"]
        for dev, dfam, lut, ff, dsp, bram in DEVICES:
            if dfam != fam:
                continue
            res = []
            for grow in (False, True):
                best, lim = 0, ""
                for n in range(1, 257):
                    v = core_at(n, grow)
                    over = [nm for nm, use, cap in (("LUT", v["lut"], 0.8 * lut),
                                                    ("FF", v["ff"], 0.8 * ff),
                                                    ("DSP", v["dsp"], dsp),
                                                    ("BRAM", v["bram"], bram)) if use > cap]
                    if over:
                        lim = ", ".join(over)
                        break
                    best = n
                res += [best, lim]
            lines.append(f"| {dev} | {res[0]} | {res[1]} | {res[2]} | {res[3]} |")
    for h in sorted(hiers, key=lambda r: (r["name"], r["family"])):
        lines += ["", f"## {h['name']} ({h['family']}) per submodule: hierarchical run, "
                  "subtree totals per instance (no cross-module optimisation)", "",
                  "| instance path (module) | instances | LUT | FF | DSP | BRAM36 | LUTRAM "
                  "| carry |", "|---|---|---|---|---|---|---|---|"]
        for m in h["modules"]:
            lines.append("| " + " | ".join(fmt(x) for x in (
                m["path"], m["instances"], m["lut"], m["ff"], m["dsp"], m["bram36"],
                m["lutram"], m["carry"])) + " |")
    text = "\n".join(lines) + "\n"
    with open(out, "w") as f:
        f.write(text)
    sys.stdout.write(text)


def check(files):
    bad = 0
    for f in files:
        r = json.load(open(f))
        want = {"xc7": "DSP48E1", "xcup": "DSP48E2"}[r["family"]]
        if r["top"] == "tpu_pe":
            n = r["cells"].get(want, 0)
            ok = n == 1 and r["dsp"] == 1
            print(f"{'ok ' if ok else 'FAIL'} {r['name']} {r['family']}: {n} {want} "
                  "(the significand multiply must map to exactly one DSP)")
            bad += not ok
        ok = r["bram_check_ok"]
        roms = sum(1 for m in r["memories"] if m.get("rom"))
        print(f"{'ok ' if ok else 'FAIL'} {r['name']} {r['family']}: "
              f"{r['bram_eligible_memories']} BRAM-eligible RAMs, {roms} ROMs "
              f"({len(r['memories'])} memories inferred), {fmt(r['bram36'])} BRAM36 blocks"
              f" (the RAMs need >= {r.get('bram36_min', 0)})"
              + ("" if r["bram_eligible_memories"] else " (no RAM in this design: vacuous)"))
        bad += not ok
    return 1 if bad else 0


def main():
    a = sys.argv[1:]
    if a and a[0] == "run" and len(a) == 6:
        json.dump(run(a[1], a[2], a[3], a[4], int(a[5])), sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif a and a[0] == "hier" and len(a) == 6:
        json.dump(hier(a[1], a[2], a[3], a[4], int(a[5])), sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif a and a[0] == "table" and len(a) >= 3:
        table(a[1], a[2:])
    elif a and a[0] == "check" and len(a) >= 2:
        sys.exit(check(a[1:]))
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
