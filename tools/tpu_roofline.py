# SPDX-License-Identifier: Apache-2.0
"""The roofline of a compiled model (tpu-compile --report-only --plot PNG): every layer of
report.json as a point, its arithmetic intensity (useful MACs per byte its DMAs move) against
the MACs per cycle it achieves on one core, under the roofs of the MXU (N^2 MACs a cycle) and
of the AXI port (its width in bytes a cycle, times the intensity). The colour says which unit
bounds the layer (report.json "limit": the highest floor of MXU, DMA and VPU); the layers that
take most of the cycles are named.
usage: tpu_roofline.py REPORT.json OUT.png"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"mxu": "tab:blue", "dma": "tab:red", "vpu": "tab:green"}


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: tpu_roofline.py REPORT.json OUT.png\n")
        return 2
    with open(argv[1]) as f:
        rep = json.load(f)
    n = rep["mxu"]
    bw = rep["axi_data_bits"] / 8.0  # bytes a cycle
    peak = float(n * n)
    # the layers with MACs (a pool or an Add has no intensity: they are in the title's count)
    pts = [l for l in rep["layers"] if l["cycles"] > 0 and l["macs"] > 0]
    other = sum(l["cycles"] for l in rep["layers"] if l["macs"] == 0)
    fig, ax = plt.subplots(figsize=(9, 6))
    xs = [l["macs"] / max(l["dma_bytes"], 1) for l in pts]
    lo = min(xs + [peak / bw]) / 4
    hi = max(xs + [peak / bw]) * 4
    ridge = peak / bw
    ax.plot([lo, ridge, hi], [bw * lo, peak, peak], color="black", linewidth=1.5,
            label="roof: min(N^2, %g B/cycle x intensity)" % bw)
    for unit, colour in COLOURS.items():
        sel = [(x, l) for x, l in zip(xs, pts) if l["limit"] == unit]
        if sel:
            ax.scatter([x for x, _ in sel], [l["macs"] / l["cycles"] for _, l in sel],
                       s=[10 + 200 * l["cycles"] / rep["total"]["cycles"] for _, l in sel],
                       color=colour, alpha=0.7, label="bound by %s" % unit.upper())
    t = rep["total"]
    top = sorted(zip(xs, pts), key=lambda p: -p[1]["cycles"])[:6]
    # the slowest layers named in a column (lower right, above the legend), a line to each
    for j, (x, l) in enumerate(sorted(top, key=lambda p: -p[1]["macs"] / p[1]["cycles"])):
        ax.annotate("%s (%.1f %%)" % (l["node"][-34:], 100.0 * l["cycles"] / t["cycles"]),
                    (x, l["macs"] / l["cycles"]), xytext=(0.60, 0.50 - 0.045 * j),
                    textcoords="axes fraction", fontsize=7,
                    arrowprops=dict(arrowstyle="-", lw=0.5, color="gray"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity: useful MACs per DMA byte")
    ax.set_ylabel("MACs per cycle (one core)")
    t = rep["total"]
    ax.set_title("N = %d, %d core(s), %d per core: %d cycles, MXU %.1f %%; layers without MACs "
                 "(pools, Adds) %.1f %% of the cycles\n(marker area: a layer's share of the "
                 "cycles)" % (n, rep["cores"], rep["batch_per_core"], t["cycles"],
                              100.0 * t["mxu_util"], 100.0 * other / max(t["cycles"], 1)),
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    out = argv[2]
    tmp = out + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
