# SPDX-License-Identifier: Apache-2.0
"""ONNX conformance: Debian's libonnx-testdata node tests through tpu-compile and tpu-infer.

Run it with /usr/bin/python3 (Debian's python3-onnx and numpy). For every node test whose
operators are all claimed (refops.OPS, or --ops), and every --mxu N:
  1. the model is rewritten: the first graph input stays the input, every other graph input
     becomes an initializer holding that test's data (the compiler binds weights at compile
     time: the MXU is weight-stationary);
  2. tpu-compile MODEL --mxu N --imem-insns I [--batch B] -o DIR, then
     tpu-infer DIR --input in.npy --output out.npy;
  3. the result is classified: passed (every element within its bound), failed (an element
     outside its bound, or a model accepted that must be rejected), rejected (tpu-compile
     exit 2 with exactly one line on stderr), crashed (any other exit status, a signal, a
     timeout, no output), error (the runner's own reference disagrees with the ONNX
     expected output: the runner is wrong, not the compiler).
The bound of every element is computed in float64 from the test's own inputs by refops.py,
as derived in docs/conformance.md. Exit status 1 if any test failed, crashed or errored.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import refops  # noqa: E402

DATA = "/usr/share/libonnx-testdata/data/node"
STATUSES = ("passed", "failed", "rejected", "crashed", "error")


# ---- the tests ----

def load_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def discover(data, ops, pattern, names):
    """Node tests whose every node is one of ops (and at least one node and one input)."""
    tests = []
    for name in sorted(os.listdir(data)):
        d = os.path.join(data, name)
        if not name.startswith("test_") or not os.path.isfile(os.path.join(d, "model.onnx")):
            continue
        if names is not None and name not in names:
            continue
        if pattern and not re.search(pattern, name):
            continue
        m = onnx.load(os.path.join(d, "model.onnx"))
        types = [n.op_type for n in m.graph.node]
        if types and set(types) <= set(ops) and len(m.graph.input) > 0:
            # (a graph with no input, test_constant, gives a machine nothing to run)
            tests.append((name, d, sorted(set(types), key=types.index)))
    return tests


def read_list(path):
    """name [rest of line] per line; '#' comments."""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                parts = line.split(None, 1)
                out[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return out


def value_kind(vi):
    k = vi.type.WhichOneof("value")
    if k != "tensor_type":
        return k
    return onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type)


def prepare(test_dir, set_dir, work):
    """The rewritten model and the input file. Returns a dict of facts about the test."""
    m = onnx.load(os.path.join(test_dir, "model.onnx"))
    g = m.graph
    info = {"inputs": [value_kind(i) for i in g.input],
            "outputs": [value_kind(o) for o in g.output],
            "x": None, "consts": {}, "expected": None, "batch": None}
    tensors = all(k in onnx.TensorProto.DataType.keys() for k in info["inputs"] + info["outputs"])
    if tensors:
        data = [load_tensor(os.path.join(set_dir, "input_%d.pb" % i)) for i in range(len(g.input))]
        for i in range(1, len(g.input)):
            t = numpy_helper.from_array(data[i], name=g.input[i].name)
            g.initializer.append(t)
            info["consts"][g.input[i].name] = data[i]
        del g.input[1:]
        if m.ir_version < 4:            # initializers outside the inputs need IR >= 4
            m.ir_version = 4
        info["x"] = data[0]
        info["expected"] = load_tensor(os.path.join(set_dir, "output_0.pb"))
        dims = g.input[0].type.tensor_type.shape.dim
        if dims and not dims[0].HasField("dim_value"):
            info["batch"] = int(data[0].shape[0])
        x0 = np.asarray(data[0])
        # integer token ids (an embedding Gather's indices) stay integers; the rest float32
        np.save(os.path.join(work, "in.npy"), x0 if x0.dtype in (np.int64, np.int32) else x0.astype(np.float32))
    onnx.save(m, os.path.join(work, "model.onnx"))
    return m, info


def run(cmd, timeout):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"), time.time() - t0
    except subprocess.TimeoutExpired:
        return None, "", "timeout after %d s" % timeout, time.time() - t0


def describe_exit(rc):
    if rc is None:
        return "timeout"
    if rc < 0:
        try:
            return "signal %s" % signal.Signals(-rc).name
        except ValueError:
            return "signal %d" % -rc
    return "exit %d" % rc


def first_lines(s, n=2):
    lines = [l for l in s.splitlines() if l.strip()]
    return " / ".join(lines[:n]) + (" ..." if len(lines) > n else "")


# ---- the comparison ----

def fmt(x):
    return "%.9g" % x


def compare(got, ref, expected):
    """got (float32 array), ref (refops.Val of the graph output), expected (ONNX output).
    Returns (status, worst ratio, detail)."""
    v, e = ref.v, ref.e
    if got.shape != v.shape:
        return "failed", None, "output shape %s, expected %s" % (list(got.shape), list(v.shape))
    if v.size == 0:
        return "passed", 0.0, "empty output"
    g = got.astype(np.float64)
    err = np.abs(g - v)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(np.isnan(g) | np.isinf(g), np.inf, err / e)
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    i = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    worst = float(ratio[i])
    nbad = int(np.sum(ratio > 1.0))
    where = "[%s]" % ",".join(str(int(j)) for j in i)
    detail = "worst %s: got %s, expected %s (exact %s), |err| %.3g > bound %.3g" % (
        where, fmt(got[i]), fmt(expected[i]) if expected is not None else "-", fmt(v[i]),
        err[i], e[i])
    if nbad:
        return "failed", worst, "%d of %d elements outside the bound; %s" % (nbad, v.size, detail)
    # elements whose bound is as large as the output's largest magnitude are not checked in
    # any useful sense (e.g. Softmax of a row that bf16 cannot tell apart): say so
    scale = float(np.max(np.abs(v)))
    nvac = int(np.sum(e >= scale)) if scale > 0 else 0
    vac = ("%d of %d elements unchecked (bound >= the output's largest magnitude %.3g); " % (
        nvac, v.size, scale)) if nvac else ""
    return "passed", worst, vac + detail.replace(" > ", " <= ")


def perturb_check(got, ref, expected):
    """The self-test: moving an element just past its bound must fail, just inside must not.
    Returns a list of problems (empty if the check works)."""
    problems = []
    v, e = ref.v, ref.e
    finite = np.isfinite(e) & (e < 1e30)
    if not np.any(finite):
        return problems
    flat = np.flatnonzero(finite.reshape(-1))
    picks = sorted(set([int(flat[0]), int(flat[-1]), int(flat[len(flat) // 2])]))
    for k in picks:
        i = np.unravel_index(k, v.shape)
        base = float(got[i])
        sgn = 1.0 if base >= v[i] else -1.0
        # outside: push away from the exact value by more than the bound
        bad = got.copy()
        x = np.float32(v[i] + sgn * (abs(base - v[i]) + e[i] * (1 + 2.0 ** -10)))
        while abs(float(x) - v[i]) <= e[i]:
            x = np.nextafter(x, np.float32(sgn * np.inf))
        bad[i] = x
        st, _, det = compare(bad, ref, expected)
        if st != "failed" or ("[%s]" % ",".join(str(int(j)) for j in i)) not in det:
            problems.append("element %s pushed to %s (bound %.3g) not reported: %s %s" % (
                list(i), fmt(x), e[i], st, det))
        # inside: the exact value rounded to fp32 plus 0.9 of the bound passes, when the rest
        # of the output passes
        st0, _, _ = compare(got, ref, expected)
        if st0 == "passed":
            ok = got.copy()
            y = np.float32(v[i] + sgn * 0.9 * e[i])
            if abs(float(y) - v[i]) <= e[i]:
                ok[i] = y
                st, _, det = compare(ok, ref, expected)
                if st != "passed":
                    problems.append("element %s at 0.9 of its bound reported %s: %s" % (list(i), st, det))
    return problems


# ---- one test at one N ----

def run_one(test, N, args):
    name, tdir, ops = test
    res = {"test": name, "ops": ops, "N": N, "status": None, "worst": None, "detail": "",
           "time": 0.0, "selftest": None}
    sets = sorted(d for d in os.listdir(tdir) if d.startswith("test_data_set_"))
    details, worst = [], None
    status = "passed"
    for s in sets:
        work = os.path.join(args.work, "N%d" % N, name, s)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        try:
            model, info = prepare(tdir, os.path.join(tdir, s), work)
        except Exception as ex:  # a test the runner cannot read
            return dict(res, status="error", detail="runner: %s: %s" % (type(ex).__name__, ex))
        # the runner's reference against the ONNX expected output (every test, accepted or not)
        ref, noref = None, None
        if info["x"] is not None:
            try:
                ref = refops.evaluate(model.graph, info["x"], info["consts"])[0]
            except refops.NoReference as ex:
                noref = str(ex)
            if ref is not None:
                exp = info["expected"]
                rst, _, rdet = compare(exp.astype(np.float32), ref, exp)
                if rst != "passed":
                    return dict(res, status="error",
                                detail="runner reference disagrees with the ONNX expected output: " + rdet)
        prog = os.path.join(work, "prog")
        # one core: the node tests check an operator's semantics (data-parallel runs are
        # checked by test-compiler and test-models)
        cmd = args.compile + [os.path.join(work, "model.onnx"), "--mxu", str(N), "--cores", "1",
                              "--imem-insns", str(args.imem_insns)]
        cmd += args.compile_opt
        if info["batch"] is not None:
            cmd += ["--batch", str(info["batch"])]
        cmd += ["-o", prog]
        rc, out, err, dt = run(cmd, args.timeout)
        res["time"] += dt
        err = err.replace(os.path.join(work, "model.onnx"), "model.onnx")
        if rc == 2:
            lines = err.splitlines()
            if len(lines) == 1 and lines[0].strip():
                return dict(res, status="rejected", detail=lines[0].strip())
            return dict(res, status="crashed",
                        detail="tpu-compile exit 2 with %d lines on stderr (one expected): %s" % (
                            len(lines), first_lines(err)))
        if rc != 0:
            return dict(res, status="crashed", detail="tpu-compile %s: %s" % (
                describe_exit(rc), first_lines(err)))
        # accepted: some models must not be
        why = None
        if len(info["outputs"]) != 1:
            why = "accepted a model with %d outputs (tpu-infer writes one)" % len(info["outputs"])
        elif info["outputs"][0] != "FLOAT" or (info["inputs"][0] != "FLOAT" and not (
                info["inputs"][0] in ("INT64", "INT32") and all(
                    n.op_type == "Gather" and list(n.input).index(model.graph.input[0].name) == 1
                    for n in model.graph.node if model.graph.input[0].name in n.input))):
            why = "accepted a model whose input/output is %s (the machine computes in bf16/fp32)" % (
                "/".join(info["inputs"][:1] + info["outputs"]))
        if why is None and noref is not None:
            why = "accepted a model that must be rejected: %s" % noref
        if why is not None:
            return dict(res, status="failed", detail=why)
        exp = info["expected"]
        ypath = os.path.join(work, "out.npy")
        cmd = args.infer + [prog, "--input", os.path.join(work, "in.npy"), "--output", ypath]
        if args.rtl:
            # also on the verilated core: every trace record and the output identical to the
            # model's run (tpu-infer --rtl exits 1 otherwise)
            cmd += ["--rtl", "--work", os.path.join(work, "rtl")]
        rc, out, err, dt = run(cmd, args.timeout)
        res["time"] += dt
        if rc != 0:
            return dict(res, status="crashed", detail="tpu-infer %s: %s" % (
                describe_exit(rc), first_lines(err)))
        if not os.path.isfile(ypath):
            return dict(res, status="crashed", detail="tpu-infer exit 0 but wrote no %s" % ypath)
        try:
            got = np.load(ypath)
        except Exception as ex:
            return dict(res, status="crashed", detail="tpu-infer output unreadable: %s" % ex)
        if got.dtype != np.float32:
            st, w, det = "failed", None, "output dtype %s, float32 expected" % got.dtype
        else:
            st, w, det = compare(got, ref, exp)
        if args.self_test and got.dtype == np.float32 and got.shape == ref.v.shape:
            res["selftest"] = perturb_check(got, ref, exp)
        if len(sets) > 1:
            det = "%s: %s" % (s, det)
        details.append(det)
        if w is not None:
            worst = w if worst is None else max(worst, w)
        if st != "passed":
            status = st
            details = [det]
            break
    return dict(res, status=status, worst=worst, detail="; ".join(details))


# ---- reports ----

def md_escape(s):
    return s.replace("|", "\\|")


def write_table(path, results, Ns, expect, cmdline, ops):
    byname = {}
    for r in results:
        byname.setdefault(r["test"], {})[r["N"]] = r
    ops = [o for o in ops if any(o in r["ops"] for r in results)]
    lines = ["<!-- SPDX-License-Identifier: Apache-2.0 -->",
             "<!-- generated by `%s`, do not edit -->" % cmdline,
             "",
             "# ONNX node tests of the claimed operators: results",
             "",
             "How the tests are run and what the bound is: [conformance.md](conformance.md). "
             "`worst` is the largest |got - exact| / bound over the output (passed: <= 1).",
             "",
             "## Per operator",
             "",
             "| operator | N | tests | passed | failed | rejected | crashed | error |",
             "|---|---|---|---|---|---|---|---|"]
    for op in ops:
        for N in Ns:
            rs = [r for r in results if r["N"] == N and op in r["ops"]]
            c = {s: sum(1 for r in rs if r["status"] == s) for s in STATUSES}
            lines.append("| %s | %d | %d | %d | %d | %d | %d | %d |" % (
                op, N, len(rs), c["passed"], c["failed"], c["rejected"], c["crashed"], c["error"]))
    lines += ["", "## Every test", "",
              "Expected: `pass`, or `reject` with the reason the compiler should reject it "
              "(tests/conformance/expect.txt).", ""]
    head = "| test | operator | " + " | ".join("N = %d" % N for N in Ns) + " | worst | detail | expected |"
    lines += [head, "|" + "---|" * (4 + len(Ns) + 1)]
    for name in sorted(byname):
        rs = byname[name]
        any_r = next(iter(rs.values()))
        ws = [r["worst"] for r in rs.values() if r["worst"] is not None]
        worst = "%.3f" % max(ws) if ws else "-"
        # the detail of the first N that did not pass, else of the first N
        pick = next((rs[N] for N in Ns if N in rs and rs[N]["status"] != "passed"), rs[min(rs)])
        det = pick["detail"] if pick["status"] != "passed" else (
            pick["detail"].split("; ")[0] if "unchecked" in pick["detail"] else "")
        same = len({(r["status"], r["detail"]) for r in rs.values()}) == 1
        if pick["status"] != "passed" and len(Ns) > 1 and not same:
            det = "N = %d: %s" % (pick["N"], det)
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            name, ", ".join(any_r["ops"]),
            " | ".join(rs[N]["status"] if N in rs else "-" for N in Ns),
            worst, md_escape(det), md_escape(expect.get(name, "pass"))))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mxu", type=int, action="append", help="MXU size N (repeatable; default 8)")
    ap.add_argument("--ops", default=",".join(refops.OPS),
                    help="comma-separated operators claimed (default: all of refops.OPS)")
    ap.add_argument("--filter", default="", help="regular expression on test names")
    ap.add_argument("--list", help="file of test names to run (one per line, # comments)")
    ap.add_argument("--table", help="write the markdown table here")
    ap.add_argument("--json", help="write the results as JSON here")
    ap.add_argument("--data", default=DATA, help="node test directory (default %(default)s)")
    ap.add_argument("--work", default="build/conformance", help="work directory (default %(default)s)")
    ap.add_argument("--tools", default="build/tools",
                    help="directory of tpu-compile and tpu-infer, or 'standin' (default %(default)s)")
    ap.add_argument("--imem-insns", type=int, default=32768)
    ap.add_argument("--rtl", action="store_true",
                    help="run each test on the verilated core too (tpu-infer --rtl): traces compared")
    ap.add_argument("--compile-opt", action="append", default=[],
                    help="an extra tpu-compile argument, e.g. --compile-opt=--cores --compile-opt=1")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per tool run")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="tests run side by side (1 or 2)")
    ap.add_argument("--self-test", action="store_true",
                    help="also check, on every output, that an element pushed past its bound "
                         "is reported and one at 0.9 of it is not")
    ap.add_argument("--strict", action="store_true",
                    help="a rejected test expected to pass (expect.txt) fails the run")
    ap.add_argument("--expect", default=os.path.join(HERE, "expect.txt"))
    ap.add_argument("--cmdline", help="the command recorded in the table's header")
    args = ap.parse_args()
    Ns = args.mxu or [8]
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    unknown = [o for o in ops if o not in refops.OPS]
    if unknown:
        ap.error("no reference for operator(s) %s (add them to refops.OPS)" % ", ".join(unknown))
    if args.tools == "standin":
        st = [sys.executable, os.path.join(HERE, "standin.py")]
        args.compile, args.infer = st + ["compile"], st + ["infer"]
    else:
        args.compile = [os.path.join(args.tools, "tpu-compile")]
        args.infer = [os.path.join(args.tools, "tpu-infer")]
        for t in (args.compile[0], args.infer[0]):
            if not os.access(t, os.X_OK):
                print("conformance: %s not found (build it first)" % t, file=sys.stderr)
                return 2
    args.jobs = max(1, min(args.jobs, 2))
    names = set(read_list(args.list)) if args.list else None
    expect = read_list(args.expect) if os.path.isfile(args.expect) else {}
    tests = discover(args.data, ops, args.filter, names)
    if names is not None:
        missing = sorted(names - {t[0] for t in tests})
        if missing:
            print("conformance: not found or not of the claimed operators: %s" % ", ".join(missing),
                  file=sys.stderr)
            return 2
    if not tests:
        print("conformance: no test selected", file=sys.stderr)
        return 2
    jobs = [(t, N) for N in Ns for t in tests]
    print("conformance: %d tests x N = %s, tools %s" % (
        len(tests), ", ".join(map(str, Ns)), args.tools), flush=True)
    t0 = time.time()
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        for r in ex.map(lambda tn: run_one(tn[0], tn[1], args), jobs):
            results.append(r)
            w = "" if r["worst"] is None else " worst %.3f" % r["worst"]
            det = r["detail"] if r["status"] != "passed" else (
                r["detail"].split("; ")[0] if "unchecked" in r["detail"] else "")
            print("%-52s N=%-3d %-8s%s %s (%.1f s)" % (r["test"], r["N"], r["status"], w, det,
                                                      r["time"]), flush=True)
    # summary per operator
    print("\n%-20s %4s %6s %7s %7s %9s %8s %6s" % ("operator", "N", "tests", "passed", "failed",
                                                  "rejected", "crashed", "error"))
    for op in ops:
        for N in Ns:
            rs = [r for r in results if r["N"] == N and op in r["ops"]]
            if not rs:
                continue
            c = {s: sum(1 for r in rs if r["status"] == s) for s in STATUSES}
            print("%-20s %4d %6d %7d %7d %9d %8d %6d" % (op, N, len(rs), c["passed"], c["failed"],
                                                     c["rejected"], c["crashed"], c["error"]))
    total = {s: sum(1 for r in results if r["status"] == s) for s in STATUSES}
    print("total: %s (%.0f s)" % (", ".join("%d %s" % (total[s], s) for s in STATUSES),
                                  time.time() - t0))
    bad = [r for r in results if r["status"] in ("failed", "crashed", "error")]
    unexpected = [r for r in results if r["status"] == "rejected"
                  and not expect.get(r["test"], "pass").startswith("reject")]
    if unexpected:
        print("rejected but expected to pass (expect.txt):")
        for r in unexpected:
            print("  %s N=%d: %s" % (r["test"], r["N"], r["detail"]))
    st_problems = []
    if args.self_test:
        checked = sum(1 for r in results if r["selftest"] is not None)
        for r in results:
            for p in r["selftest"] or []:
                st_problems.append("%s N=%d: %s" % (r["test"], r["N"], p))
        print("self-test: %d outputs perturbed past their bound (and to 0.9 of it): %s" % (
            checked, "every one reported correctly" if not st_problems else
            "%d PROBLEMS" % len(st_problems)))
        for p in st_problems:
            print("  " + p)
        if checked == 0:
            st_problems.append("no output to perturb")
    if args.table:
        write_table(args.table, results, Ns, expect, args.cmdline or " ".join(sys.argv), ops)
        print("table: %s" % args.table)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
    ok = not bad and not st_problems and not (args.strict and unexpected)
    print("conformance: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
