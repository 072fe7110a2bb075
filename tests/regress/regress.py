#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The regression's job list, its summary and JUnit XML, and its Slurm array script
(make regress, make regress-slurm; tests/regress/suite.mk).

  regress.py list   [options] -o LIST     one job a line: "ID ARGS", replayed from the
                                          repository's root by `sh tests/regress/job.sh ARGS`
  regress.py report LIST RESULTS --summary F --junit F   counts, each failure's replay
                                          command; exit 1 if a job failed or did not run
  regress.py sbatch LIST RESULTS -o SCRIPT [--max-running M]   an sbatch script whose array
                                          task k runs job k (tests/regress/task.sh)

The list is a function of its options only (the random stall and X-initialisation seeds come
from a generator seeded by --base-seed), and a job's ID names all its parameters, so a
larger SEEDS keeps the jobs of a smaller one and their results (resumable).
"""
import argparse
import os
import random
import sys
import xml.etree.ElementTree as ET

STALLS = (10, 30, 50, 80, 90)
LATENCIES = (1, 2, 3, 8, 16, 33, 100, 257, 1000)
LINK_STALLS = (5, 20, 50, 80)       # board_tb --link-stall P (docs/board.md "Link faults")
LINK_FAULTS = ("flip", "flip2", "drop", "stall")


def job_list(a):
    jobs = []
    ns = [int(x) for x in a.ns.split()]
    for n in ns:
        if not 1 <= n <= 8:
            sys.exit("regress.py: N = %d: the regression runs N in 1 .. 8" % n)
        for s in range(1, a.seeds + 1):
            rng = random.Random("%d-%d-%d" % (a.base_seed, n, s))
            # the program on the model and on the RTL, no back-pressure, registers at zero
            jobs.append(("core-N%d-s%d" % (n, s), "core %d %d 0 1 0" % (n, s)))
            # X-initialisation: every register and memory from random bits, XSEEDS seeds
            for _ in range(a.xseeds):
                x = rng.randrange(1, 2**31 - 1)
                jobs.append(("xinit-N%d-s%d-x%d" % (n, s, x), "core %d %d 0 1 %d" % (n, s, x)))
            # AXI back-pressure: a random percentage and stall seed
            for _ in range(a.stall_seeds):
                p = rng.choice(STALLS)
                q = rng.randrange(1, 2**31 - 1)
                jobs.append(("stall-N%d-s%d-p%d-q%d" % (n, s, p, q), "core %d %d %d %d 0" % (n, s, p, q)))
            # AXI latency (--axi-latency L, 1 .. 1000 cycles) with back-pressure; its own seeds,
            # so that the jobs above keep their IDs
            lrng = random.Random("%d-lat-%d-%d" % (a.base_seed, n, s))
            for _ in range(a.latency_seeds):
                lat = lrng.choice(LATENCIES)
                p = lrng.choice(STALLS)
                q = lrng.randrange(1, 2**31 - 1)
                jobs.append(("lat-N%d-s%d-l%d-p%d-q%d" % (n, s, lat, p, q),
                             "core %d %d %d %d 0 --axi-latency %d" % (n, s, p, q, lat)))
    for spec in a.boards.split(",") if a.boards else []:
        n, c, topo = spec.split(":", 2)
        for s in range(1, a.board_seeds + 1):
            rng = random.Random("%d-board-%s-%d" % (a.base_seed, spec, s))
            p = rng.choice(STALLS[:3])
            q = rng.randrange(1, 2**31 - 1)
            jobs.append(("board-N%s-C%s%s-s%d-p%d-q%d" % (n, c, topo.replace(":", ""), s, p, q),
                         "board %s %s %s %d %d %d" % (n, c, topo, s, p, q)))
            # link back-pressure (every link stalled in P % of the cycles) and an injected
            # link fault (replayed by the link): traces identical; their own seeds
            krng = random.Random("%d-link-%s-%d" % (a.base_seed, spec, s))
            # the dead links: distinct ones drawn from the board's links (their own seeds)
            links = int(c) * (4 if topo.startswith("torus") else 2)
            dlinks = random.Random("%d-dead-%s-%d" % (a.base_seed, spec, s)).sample(
                range(links), links)
            for k in range(a.link_seeds):
                ls = krng.choice(LINK_STALLS)
                q = krng.randrange(1, 2**31 - 1)
                jobs.append(("link-N%s-C%s%s-s%d-l%d-q%d" % (n, c, topo.replace(":", ""), s, ls, q),
                             "board %s %s %s %d 20 %d --link-stall %d" % (n, c, topo, s, q, ls)))
                kind = krng.choice(LINK_FAULTS)
                cyc = krng.randrange(500, 6000)
                spec_f = "%s@%d%s" % (kind, cyc, "+%d" % krng.randrange(100, 3000) if kind == "stall" else "")
                q = krng.randrange(1, 2**31 - 1)
                jobs.append(("lfault-N%s-C%s%s-s%d-%s%d-q%d" % (n, c, topo.replace(":", ""), s, kind, cyc, q),
                             "board %s %s %s %d 10 %d --link-stall 10 --link-fault %s" % (n, c, topo, s, q, spec_f)))
                # a link dead from the start: the cores waiting on it halt with error 9, as
                # the model predicts (tpu-board-run --link-dead); different links per program
                dl = dlinks[k % links]
                jobs.append(("ldead-N%s-C%s%s-s%d-l%d%s" % (n, c, topo.replace(":", ""), s, dl,
                                                          "-r%d" % (k // links) if k >= links else ""),
                             "ldead %s %s %s %d %d" % (n, c, topo, s, dl)))
    if a.with_failing:
        # a deliberately failing job (a bit flipped in the first row the core writes): the
        # report must name it with its replay command
        n = ns[0]
        jobs.append(("fault-N%d-s1" % n, "core %d 1 0 1 0 --inject-fault 0" % n))
    return jobs


def read_list(path):
    jobs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                i, _, args = line.partition(" ")
                jobs.append((i, args))
    return jobs


def group(jid):
    parts = jid.split("-")
    return "%s.%s" % (parts[0], parts[1])  # e.g. xinit.N4, board.N4


def report(a):
    jobs = read_list(a.list)
    passed, failed, notrun = [], [], []
    for jid, args in jobs:
        replay = "sh tests/regress/job.sh " + args
        base = os.path.join(a.results, jid)
        if os.path.exists(base + ".pass"):
            passed.append((jid, replay, base))
        elif os.path.exists(base + ".fail"):
            failed.append((jid, replay, base))
        else:
            notrun.append((jid, replay, base))

    def secs(base, ext):
        try:
            with open(base + ext) as f:
                return float(f.readline().strip() or 0)
        except (OSError, ValueError):
            return 0.0

    def log_tail(base, lines=40):
        try:
            with open(base + ".log", errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"

    total_s = sum(secs(b, ".pass") for _, _, b in passed) + sum(secs(b, ".fail") for _, _, b in failed)
    out = ["regression: %d jobs: %d passed, %d failed, %d not run (%.1f s of job time)"
           % (len(jobs), len(passed), len(failed), len(notrun), total_s)]
    groups = {}
    for st, lst in (("pass", passed), ("fail", failed), ("notrun", notrun)):
        for jid, _, _ in lst:
            g = groups.setdefault(group(jid), {"pass": 0, "fail": 0, "notrun": 0})
            g[st] += 1
    for g in sorted(groups):
        c = groups[g]
        out.append("  %-12s %5d passed, %d failed, %d not run" % (g, c["pass"], c["fail"], c["notrun"]))
    for jid, replay, base in failed:
        out.append("FAIL: %s: replay: %s   (log: %s.log)" % (jid, replay, base))
    for jid, replay, base in notrun:
        out.append("NOT RUN: %s: %s" % (jid, replay))
    text = "\n".join(out) + "\n"
    if a.summary:
        with open(a.summary, "w") as f:
            f.write(text)
    sys.stdout.write(text)

    if a.junit:
        root = ET.Element("testsuites", name="tpu-regress", tests=str(len(jobs)),
                          failures=str(len(failed)), errors=str(len(notrun)), time="%.2f" % total_s)
        by = {}
        for st, lst in (("pass", passed), ("fail", failed), ("notrun", notrun)):
            for item in lst:
                by.setdefault(group(item[0]), []).append((st, item))
        for g in sorted(by):
            items = by[g]
            ts = ET.SubElement(root, "testsuite", name="regress." + g, tests=str(len(items)),
                               failures=str(sum(1 for s, _ in items if s == "fail")),
                               errors=str(sum(1 for s, _ in items if s == "notrun")),
                               skipped="0",
                               time="%.2f" % sum(secs(b, "." + s) for s, (_, _, b) in items if s != "notrun"))
            for st, (jid, replay, base) in items:
                tc = ET.SubElement(ts, "testcase", classname="regress." + g, name=jid,
                                   time="%.2f" % (secs(base, "." + st) if st != "notrun" else 0.0))
                if st == "fail":
                    e = ET.SubElement(tc, "failure", message="replay: " + replay, type="regress")
                    e.text = "replay (from the repository's root): %s\n\n%s" % (replay, log_tail(base))
                elif st == "notrun":
                    e = ET.SubElement(tc, "error", message="not run: " + replay, type="notrun")
                    e.text = "the job has no result in %s: %s" % (a.results, replay)
                so = ET.SubElement(tc, "system-out")
                so.text = "replay: " + replay
        tree = ET.ElementTree(root)
        d = os.path.dirname(a.junit)
        if d:
            os.makedirs(d, exist_ok=True)
        tree.write(a.junit, encoding="utf-8", xml_declaration=True)
    return 0 if not failed and not notrun else 1


def sbatch(a):
    jobs = read_list(a.list)
    root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    lst, res = os.path.abspath(a.list), os.path.abspath(a.results)
    arr = "1-%d" % len(jobs) + ("%%%d" % a.max_running if a.max_running else "")
    text = """#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Written by tests/regress/regress.py sbatch (make regress-slurm): the %(k)d jobs of %(lst)s
# as a Slurm job array; task k runs job k (tests/regress/task.sh) and writes its result
# into %(res)s. Submit with `sbatch %(script)s`; when the array is done, `make
# regress-report` (or tests/regress/regress.py report) writes the summary and the JUnit XML.
# The repository and its build/ must be on a file system every node sees.
#SBATCH --job-name=tpu-regress
#SBATCH --array=%(arr)s
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --time=%(time)s
#SBATCH --output=%(res)s/slurm-%%A_%%a.out
cd %(root)s || exit 2
exec nice -n 10 sh tests/regress/task.sh %(res)s %(lst)s "$SLURM_ARRAY_TASK_ID"
""" % {"k": len(jobs), "lst": lst, "res": res, "arr": arr, "root": root,
       "script": os.path.abspath(a.output), "time": a.time_limit}
    os.makedirs(res, exist_ok=True)
    with open(a.output, "w") as f:
        f.write(text)
    os.chmod(a.output, 0o755)
    print("%s: %d array tasks (sbatch --array=%s); results in %s" % (a.output, len(jobs), arr, res))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    l = sub.add_parser("list")
    l.add_argument("--seeds", type=int, default=20, help="random programs per N (seeds 1 .. SEEDS)")
    l.add_argument("--ns", default="2 4 8", help="MXU sizes (1 .. 8)")
    l.add_argument("--xseeds", type=int, default=2, help="X-initialisation runs per program")
    l.add_argument("--stall-seeds", type=int, default=1, help="AXI back-pressure runs per program")
    l.add_argument("--latency-seeds", type=int, default=1, help="AXI latency runs per program")
    l.add_argument("--boards", default="4:2:ring", help="N:C:TOPOLOGY,... boards for random-board")
    l.add_argument("--board-seeds", type=int, default=4, help="random-board programs per board")
    l.add_argument("--link-seeds", type=int, default=1,
                   help="per board program: link back-pressure, link fault and dead link jobs (each)")
    l.add_argument("--base-seed", type=int, default=1, help="seeds the stall and X-init seeds")
    l.add_argument("--with-failing", action="store_true", help="add a deliberately failing job")
    l.add_argument("-o", "--output", required=True)
    r = sub.add_parser("report")
    r.add_argument("list")
    r.add_argument("results")
    r.add_argument("--summary")
    r.add_argument("--junit")
    b = sub.add_parser("sbatch")
    b.add_argument("list")
    b.add_argument("results")
    b.add_argument("-o", "--output", required=True)
    b.add_argument("--max-running", type=int, default=0, help="at most M tasks at once (%%M)")
    b.add_argument("--time-limit", default="00:10:00", help="per task")
    a = p.parse_args()
    if a.cmd == "list":
        jobs = job_list(a)
        d = os.path.dirname(a.output)
        if d:
            os.makedirs(d, exist_ok=True)
        with open(a.output, "w") as f:
            for jid, args in jobs:
                f.write("%s %s\n" % (jid, args))
        print("%s: %d jobs" % (a.output, len(jobs)))
        return 0
    if a.cmd == "report":
        return report(a)
    return sbatch(a)


if __name__ == "__main__":
    sys.exit(main())
