# SPDX-License-Identifier: Apache-2.0
"""tpu-explore: which configuration to build for a model and an FPGA (docs/compiler.md
"Choose a configuration"). For every MXU size N and core count C asked for, the compiler's
predictor (tpu-compile --report-only: the C model's cycle count of the compiled program, exact
where the model is: within 2 % of the RTL on the programs checked) gives the cycles of one run;
the FPGA resources of that configuration come from the fits of docs/fpga.md (the MXU's
474 N^2 LUT on 7-series / 524 N^2 on UltraScale+, the VPU lane, the core's fixed part, block
RAM for the memories and IMEM, the board's routers); no timing closure is claimed: images/s
are at the --freq-mhz given. Writes a CSV, prints a table, draws throughput against LUTs and
DSPs with the Pareto front (python3-matplotlib) and names the fastest configuration that fits
the part. Memory sizes (--ub-kib, --acc-kib, --wmem-kib, comma-separated lists as gen takes
them; default gen's: 8N, 8N, N*N/64 KiB) are swept too: every combination at every N x C; a
size that gives no whole rows at some N is listed as refused there. The table gives the
seconds of one run of the batch (cycles / clock) beside images/s.

usage: tpu-explore MODEL.onnx [--mxu 8,16,32,64,128] [--cores 1,2,4,8] [--batch B | --per-core K]
                   [--ub-kib K,..] [--acc-kib K,..] [--wmem-kib K,..]
                   [--part xc7a100t|xcku5p|xcu250|xcvu13p] [--freq-mhz F] [--imem-insns I]
                   [-o OUT.csv] [--png OUT.png]
Outputs (-o, --png) are checked before any work: a file name in an existing directory, not a
directory, not the model and not each other (one line "tpu-explore: error: ...", exit 2). A
regular file is written to a temporary file beside it and renamed into place when complete; a
device or FIFO is written in place. SIGTERM, SIGINT or SIGHUP stop the compiles and remove
every temporary file and folder before the process ends by that signal.
Exit status: 0, 1 on a write error, 2 on bad arguments or a model the compiler refuses at
every point."""
import argparse
import concurrent.futures
import importlib.util
import io
import json
import math
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

# Vendor capacities (docs/fpga.md "What fits which FPGA"): family, LUTs, FFs, DSPs, BRAM36.
PARTS = {
    "xc7a100t": ("Artix-7 100T", "xc7", 63400, 126800, 240, 135),
    "xcku5p": ("Kintex UltraScale+ KU5P", "xcup", 216960, 433920, 1824, 480),
    "xcu250": ("Alveo U250", "xcup", 1728000, 3456000, 12288, 2688),
    "xcvu13p": ("Virtex UltraScale+ VU13P", "xcup", 1728000, 3456000, 12288, 2688),
}
# docs/fpga.md: MXU LUT per N^2 (the fused one-stage PE), the VPU lane inside the core, the
# core's fixed part (control, DMA, network unit), per family; the router and links per core.
MXU_LUT_N2 = {"xc7": 474.0, "xcup": 524.0}
LANE_LUT = {"xc7": 7600.0, "xcup": 7600.0 * 7878.0 / 6509.0}
FIXED_LUT = {"xc7": 14600.0, "xcup": 16000.0}
ROUTER_LUT = 1180.0 + 2 * 156.0 + 191.0  # router, two ring links, the AXI4-Lite splitter
LUT_HEADROOM = 0.8                        # routing headroom: 80 % of LUTs usable

EXIT_USAGE = 2  # bad arguments (every tool of the project)
OUT_ALLOWED = "(allowed: a file name in an existing directory)"


def die(msg, code=EXIT_USAGE):
    """One line "tpu-explore: error: MSG" on stderr and exit `code` (2: bad arguments)."""
    print("tpu-explore: error: %s" % msg, file=sys.stderr)
    sys.exit(code)


# What an interrupt must clean up (on_signal): the running tpu-compile processes, the
# temporary files of outputs being written, the compiles' work folder. Guarded by LOCK: the
# compiles run in threads.
LOCK = threading.Lock()
CHILDREN = set()
TEMPS = set()
WORKDIRS = set()
STOPPING = threading.Event()


def cleanup():
    """Stops the compiles, removes the temporary files and folders (idempotent)."""
    STOPPING.set()
    with LOCK:
        children, temps, works = list(CHILDREN), list(TEMPS), list(WORKDIRS)
    for p in children:
        try:
            p.terminate()
        except OSError:
            pass
    for p in children:
        try:
            p.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            p.kill()
    for t in temps:
        try:
            os.unlink(t)
        except OSError:
            pass
    for w in works:
        shutil.rmtree(w, ignore_errors=True)


def on_signal(sig, _frame):
    """SIGTERM, SIGINT, SIGHUP: clean up, then end by the same signal (the exit status says
    so, as for the C tools' tpu_out_clean_on_signals)."""
    cleanup()
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)


def clean_on_signals():
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        if signal.getsignal(sig) != signal.SIG_IGN:  # nohup's and a background job's stay
            signal.signal(sig, on_signal)


def check_out(opt, path, model, taken):
    """An output path, before any work (tpu/cli.h tpu_out_check's rules): a new name in an
    existing writable directory, an existing regular file, or a device or FIFO (written in
    place); not a directory, not the model (same device and inode: another spelling, a hard
    or a symbolic link) and not another output (`taken`: (opt, path) already checked)."""
    if path == "":
        die("%s '': empty %s" % (opt, OUT_ALLOWED))
    if path.endswith("/") or os.path.isdir(path):
        die("%s '%s': is a directory %s" % (opt, path, OUT_ALLOWED))
    real = os.path.realpath(path)  # a symbolic link: the file it points to is written
    parent = os.path.dirname(real) or "."
    if not os.path.isdir(parent):
        die("%s '%s': no such directory '%s' %s" % (opt, path, os.path.dirname(path) or ".",
                                                   OUT_ALLOWED))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        die("%s '%s': cannot be used: %s %s" % (opt, path, e.strerror, OUT_ALLOWED))
    # a regular file or a new name is replaced by a rename: its directory must be writable
    if (st is None or stat.S_ISREG(st.st_mode)) and not os.access(parent, os.W_OK | os.X_OK):
        die("%s '%s': directory '%s' is not writable %s" % (opt, path, parent, OUT_ALLOWED))
    if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISCHR(st.st_mode) or
                               stat.S_ISFIFO(st.st_mode)):
        die("%s '%s': not a regular file, device or FIFO %s" % (opt, path, OUT_ALLOWED))
    for other_opt, other in [("MODEL", model)] + taken:
        try:
            o = os.stat(other)
        except OSError:
            o = None
        if (st is not None and o is not None and (o.st_dev, o.st_ino) == (st.st_dev, st.st_ino)
                or os.path.realpath(other) == real):
            if other_opt == "MODEL":
                die("%s '%s' is the same file as the model '%s': refusing to overwrite an "
                    "input %s" % (opt, path, other, OUT_ALLOWED))
            die("%s '%s' is the same file as %s '%s' (allowed: two different files)" % (
                opt, path, other_opt, other))
    taken.append((opt, path))


def write_out(path, write):
    """Writes an output by write(file object opened for writing text or bytes): a regular
    file or a new name through a temporary file beside it ("NAME.tmpXXXXXX", removed on an
    interrupt) renamed into place only when complete, keeping an existing file's permission
    bits; a device or FIFO in place. A write error: one line, exit 1, nothing replaced."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    tmp = None
    try:
        if st is not None and not stat.S_ISREG(st.st_mode):
            with open(real, "wb") as f:
                write(f)
            return
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(real) + ".tmp",
                                   dir=os.path.dirname(real))
        with LOCK:
            TEMPS.add(tmp)
        with os.fdopen(fd, "wb") as f:
            write(f)
        if st is not None:
            mode = stat.S_IMODE(st.st_mode)
        else:
            mask = os.umask(0)
            os.umask(mask)
            mode = 0o666 & ~mask
        os.chmod(tmp, mode)
        os.replace(tmp, real)
        tmp = None
    except OSError as e:
        die("cannot write '%s': %s" % (path, e.strerror), 1)
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        with LOCK:
            TEMPS.discard(tmp)


# RAMB36 shapes (depth, width): a memory takes the one that needs the fewest blocks.
BRAM36_SHAPES = ((32768, 1), (16384, 2), (8192, 4), (4096, 9), (2048, 18), (1024, 36), (512, 72))


def bram36(depth, width):
    """RAMB36 blocks of a depth x width memory (none below 4096 bits: LUT-RAM, docs/fpga.md)."""
    if depth * width < 4096:
        return 0
    return min(math.ceil(depth / d) * math.ceil(width / w) for d, w in BRAM36_SHAPES)


def resources(n, c, imem, fam, ub_kib=0, acc_kib=0, wm_kib=0):
    """LUT, DSP and BRAM36 of a C-core board of N x N cores (docs/fpga.md's per-N fits).
    Memory sizes in KiB, 0: gen's default (UB 4096 x 16N bits, ACC 2048 x 32N, WMEM 8 tiles
    of N rows x 16N bits; with the defaults UB and ACC take ceil(16N/9) and ceil(32N/18)
    RAMB36, docs/fpga.md; WMEM counted once it is 4096 bits or more)."""
    lut = MXU_LUT_N2[fam] * n * n + LANE_LUT[fam] * n + FIXED_LUT[fam]
    dsp = n * n + 65 * n + 2
    ub_rows = (ub_kib or 8 * n) * 8192 // (16 * n)
    acc_rows = (acc_kib or 8 * n) * 8192 // (32 * n)
    wm_rows = (wm_kib * 8192 // (16 * n)) if wm_kib else 8 * n
    bram = (bram36(ub_rows, 16 * n) + bram36(acc_rows, 32 * n) + bram36(wm_rows, 16 * n) +
            math.ceil(imem * 128 / 36864))
    if c > 1:
        lut += ROUTER_LUT
        dsp += 3
    return c * lut, c * dsp, c * bram


def predict(tools, model, n, c, batch, freq, imem, work, mem=(0, 0, 0)):
    """The compiler's report for one point: dict, or a string saying why not."""
    js = os.path.join(work, "r_%d_%d_%d_%d_%d_%d.json" % ((n, c, batch) + tuple(mem)))
    cmd = [os.path.join(tools, "tpu-compile"), model, "--mxu", str(n), "--cores", str(c),
           "--batch", str(batch), "--imem-insns", str(imem), "--freq-mhz", str(freq),
           "--report-only", "--json", js]
    for opt, v in zip(("--ub-kib", "--acc-kib", "--wmem-kib"), mem):
        if v:
            cmd += [opt, str(v)]
    if STOPPING.is_set():
        return "interrupted"
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with LOCK:
        CHILDREN.add(p)
    try:
        _, err = p.communicate()
    finally:
        with LOCK:
            CHILDREN.discard(p)
    if p.returncode != 0:
        line = (err.strip().splitlines() or ["tpu-compile exit %d" % p.returncode])[-1]
        return line.replace("tpu-compile: error: ", "")
    with open(js) as f:
        return json.load(f)


def pareto(points):
    """Indices of the points not dominated in (fewer LUTs, more images/s)."""
    idx = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front, best = [], -1.0
    for i in idx:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return front


def ints(s, what):
    try:
        v = [int(x) for x in s.split(",") if x != ""]
    except ValueError:
        die("%s '%s': expected comma-separated whole numbers" % (what, s))
    if not v or any(x < 1 for x in v):
        die("%s '%s': expected numbers >= 1" % (what, s))
    return v


def main():
    ap = argparse.ArgumentParser(prog="tpu-explore", description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--mxu", default="8,16,32,64,128")
    ap.add_argument("--cores", default="1,2,4,8")
    ap.add_argument("--batch", type=int, default=0,
                    help="the batch of one run over all cores (default: 16 per core)")
    ap.add_argument("--per-core", type=int, default=16,
                    help="without --batch: images per core in one run (default 16); a larger "
                    "batch runs in chunks of C x K (tpu-infer), the same cycles per chunk")
    ap.add_argument("--ub-kib", default="", help="unified buffer sizes, KiB (default gen's 8N)")
    ap.add_argument("--acc-kib", default="", help="accumulator sizes, KiB (default gen's 8N)")
    ap.add_argument("--wmem-kib", default="",
                    help="weight memory sizes, KiB (default gen's N*N/64: 8 tiles)")
    ap.add_argument("--part", default="xcu250", choices=sorted(PARTS))
    ap.add_argument("--freq-mhz", type=int, default=100)
    ap.add_argument("--imem-insns", type=int, default=32768)
    ap.add_argument("-j", "--jobs", type=int, default=min(os.cpu_count() or 1, 8),
                    help="compiles at once (default: the CPUs, at most 8)")
    ap.add_argument("-o", "--out", default="explore.csv")
    ap.add_argument("--png", default=None)
    ap.add_argument("--tools", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                    "..", "build", "tools"))
    a = ap.parse_args()
    ns, cs = ints(a.mxu, "--mxu"), ints(a.cores, "--cores")
    mems = [(u, ac, w) for u in (ints(a.ub_kib, "--ub-kib") if a.ub_kib else [0])
            for ac in (ints(a.acc_kib, "--acc-kib") if a.acc_kib else [0])
            for w in (ints(a.wmem_kib, "--wmem-kib") if a.wmem_kib else [0])]
    if any(n > 256 for n in ns):
        die("--mxu %s: N must be 1 .. 256" % a.mxu)
    if any(c > 64 for c in cs):
        die("--cores %s: C must be 1 .. 64" % a.cores)
    if a.per_core < 1:
        die("--per-core %d: expected >= 1" % a.per_core)
    if not 1 <= a.jobs <= 256:
        die("--jobs %d: expected 1 .. 256" % a.jobs)
    if not 1 <= a.freq_mhz <= 1000:
        die("--freq-mhz %d: expected 1 .. 1000" % a.freq_mhz)
    if not os.path.isfile(a.model):
        die("%s: no such file" % a.model)
    # every output before any work: a bad path costs nothing and leaves nothing behind
    taken = []
    check_out("-o", a.out, a.model, taken)
    if a.png is not None:
        check_out("--png", a.png, a.model, taken)
        if importlib.util.find_spec("matplotlib") is None:  # say so now, not at the end
            die("--png '%s': matplotlib is not installed (allowed: no --png, or install "
                "python3-matplotlib)" % a.png)
    clean_on_signals()
    name, fam, luts, _ffs, dsps, brams = PARTS[a.part]
    t0 = time.time()
    rows = []
    # The points of one N, memory sizes and images per core run the same program on every
    # core (data-parallel inference: each core its share of the batch, no collectives), so
    # their cycles are equal; one compile with --cores 1 predicts them all and C only scales
    # images/s (tests/compiler/run.sh checks a derived point against a direct compile). A
    # batch that does not split evenly over C is compiled as it is.
    pts = []
    for n in ns:
        for c in cs:
            for mem in mems:
                b = a.batch if a.batch else a.per_core * c
                key = (n, 1, b // c, mem) if b % c == 0 else (n, c, b, mem)
                pts.append((n, c, b, mem, key))
    keys = list(dict.fromkeys(p[4] for p in pts))
    work = tempfile.mkdtemp(prefix="tpu-explore.")
    with LOCK:
        WORKDIRS.add(work)
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
            fut = {k: ex.submit(predict, a.tools, a.model, k[0], k[1], k[2], a.freq_mhz,
                                a.imem_insns, work, k[3]) for k in keys}
            res = {}
            for k in keys:
                res[k] = fut[k].result()
                print("tpu-explore: N = %d, %s%s done" % (
                    k[0], "C = %d" % k[1] if k[1] > 1 else "%d image(s) per core" % k[2],
                    "" if mems == [(0, 0, 0)] else
                    ", UB/ACC/WMEM %s KiB" % "/".join(str(v or "-") for v in k[3])),
                    file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        with LOCK:
            WORKDIRS.discard(work)
    for n, c, b, mem, key in pts:
        r = res[key]
        lut, dsp, bram = resources(n, c, a.imem_insns, fam, *mem)
        fits = lut <= LUT_HEADROOM * luts and dsp <= dsps and bram <= brams
        # the sizes as the report states them (rows), or the KiB asked for
        mk = dict(ub=mem[0], acc=mem[1], wm=mem[2])
        if isinstance(r, str):
            rows.append(dict(n=n, c=c, batch=b, ips=None, note=r, lut=lut, dsp=dsp,
                             bram=bram, fits=fits, **mk))
            continue
        t = r["total"]
        per = r["batch_per_core"]
        hwj = r.get("hw", r)
        mk = dict(ub=hwj.get("ub_rows", 0) * 2 * n / 1024 or mem[0],
                  acc=hwj.get("acc_rows", 0) * 4 * n / 1024 or mem[1],
                  wm=hwj.get("wmem_rows", 0) * 2 * n / 1024 or mem[2])
        rows.append(dict(n=n, c=c, batch=per * c, ips=per * c * a.freq_mhz * 1e6 / t["cycles"],
                         cycles=t["cycles"], cpi=t["cycles"] / per,
                         spb=t["cycles"] / (a.freq_mhz * 1e6),
                         util=t["mxu_util"], insns=r["instructions"], lut=lut,
                         dsp=dsp, bram=bram, fits=fits, note="", **mk))
    secs = time.time() - t0
    ok = [r for r in rows if r["ips"] is not None]
    if not ok:
        for r in rows:
            print("N = %d, C = %d: %s" % (r["n"], r["c"], r["note"]), file=sys.stderr)
        die("the model compiles at no point of the sweep")
    def write_csv(fb):
        f = io.TextIOWrapper(fb, encoding="utf-8", newline="")
        f.write("mxu,cores,ub_kib,acc_kib,wmem_kib,batch,instructions,cycles_per_batch,"
                "cycles_per_image,s_per_batch_at_%dMHz,images_per_s_at_%dMHz,mxu_util,"
                "lut_%s,dsp,bram36,fits_%s,note\n" % (a.freq_mhz, a.freq_mhz, fam, a.part))
        for r in rows:
            mem = "%s,%s,%s" % tuple("%g" % r[k] if r[k] else "" for k in ("ub", "acc", "wm"))
            if r["ips"] is None:
                f.write("%d,%d,%s,%d,,,,,,,%d,%d,%d,%s,\"%s\"\n" % (r["n"], r["c"], mem,
                        r["batch"], r["lut"], r["dsp"], r["bram"], "yes" if r["fits"] else "no",
                        r["note"].replace('"', "'")))
            else:
                f.write("%d,%d,%s,%d,%d,%d,%.1f,%.6f,%.2f,%.5f,%d,%d,%d,%s,\n" % (
                    r["n"], r["c"], mem, r["batch"], r["insns"], r["cycles"], r["cpi"],
                    r["spb"], r["ips"], r["util"], r["lut"], r["dsp"], r["bram"],
                    "yes" if r["fits"] else "no"))
        f.flush()
        f.detach()
    write_out(a.out, write_csv)
    front = pareto([(r["lut"], r["ips"]) for r in ok])
    print("%s on %s (%s: %d LUT, %d DSP, %d BRAM36; 80 %% of LUTs usable), images/s at %d MHz "
          "(no timing closure claimed), %.1f s for %d points (%d compiles, %d at once)" % (
              os.path.basename(a.model), a.part, name, luts, dsps, brams, a.freq_mhz, secs,
              len(rows), len(keys), a.jobs))
    print("%5s %3s %15s %6s %12s %10s %14s %8s %10s %8s %6s %5s %s" % (
        "N", "C", "UB/ACC/WM KiB", "batch", "cycles/img", "s/batch", "images/s", "MXU%", "LUT",
        "DSP", "BRAM", "fits", ""))

    def memtxt(r):
        return "/".join("%g" % r[k] if r[k] else "-" for k in ("ub", "acc", "wm"))
    for i, r in enumerate(rows):
        if r["ips"] is None:
            print("%5d %3d %15s %6d %s" % (r["n"], r["c"], memtxt(r), r["batch"], r["note"][:90]))
            continue
        j = ok.index(r)
        print("%5d %3d %15s %6d %12.0f %10.4f %14.1f %8.2f %10d %8d %6d %5s %s" % (
            r["n"], r["c"], memtxt(r), r["batch"], r["cpi"], r["spb"], r["ips"],
            100 * r["util"], r["lut"], r["dsp"], r["bram"], "yes" if r["fits"] else "no",
            "pareto" if j in front else ""))
    fit = [r for r in ok if r["fits"]]
    if fit:
        best = max(fit, key=lambda r: r["ips"])
        print("fastest that fits %s: N = %d, C = %d, UB/ACC/WMEM %s KiB: %.1f images/s, "
              "%.4f s per batch of %d at %d MHz (%d LUT, %d DSP, %d BRAM36)" % (
                  a.part, best["n"], best["c"], memtxt(best), best["ips"], best["spb"],
                  best["batch"], a.freq_mhz, best["lut"], best["dsp"], best["bram"]))
    else:
        print("no configuration of the sweep fits %s" % a.part)
    if a.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        for ax, key, label in ((axes[0], "lut", "LUT (%s)" % fam), (axes[1], "dsp", "DSP slices")):
            xs = [r[key] for r in ok]
            ys = [r["ips"] for r in ok]
            ax.scatter(xs, ys, c=["tab:green" if r["fits"] else "tab:gray" for r in ok], s=30)
            for r in ok:
                ax.annotate("%dx%d" % (r["n"], r["c"]) + ("" if mems == [(0, 0, 0)] else
                            " %s" % memtxt(r)), (r[key], r["ips"]), fontsize=7)
            fr = pareto([(r[key], r["ips"]) for r in ok])
            ax.plot([ok[i][key] for i in fr], [ok[i]["ips"] for i in fr], "r-", lw=1,
                    label="Pareto front")
            ax.axvline({"lut": LUT_HEADROOM * luts, "dsp": dsps}[key], color="k", ls=":",
                       label="%s capacity" % a.part)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(label)
            ax.set_ylabel("images/s at %d MHz" % a.freq_mhz)
            ax.legend(fontsize=8)
        fig.suptitle("%s: N x C configurations (green: fits %s)" % (os.path.basename(a.model), a.part))
        fig.tight_layout()
        write_out(a.png, lambda f: fig.savefig(f, format="png", dpi=110))
        print("plot: %s" % a.png)


if __name__ == "__main__":
    main()
