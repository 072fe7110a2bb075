# SPDX-License-Identifier: Apache-2.0
"""The conformance runner's own test (make test-conformance-selftest), with the stand-in
(standin.py) in place of tpu-compile / tpu-infer, so it needs neither:

  1. every node test of the claimed operators through the stand-in's bf16/fp32 emulation:
     all within their bounds (the bounds are not too tight for an implementation of the
     contract), the expected rejections, and the runner's perturbation check (an element
     pushed past its bound is reported, one at 0.9 of it is not);
  2. each stand-in fault is classified as it must be: a signal, exit 0 without output and
     exit 2 with two stderr lines are 'crashed'; a wrong shape and a wrong value are
     'failed'; models accepted that must be rejected are 'failed'; the run exits 1.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "conformance.py")


def run(extra, fault=None, work=None):
    env = dict(os.environ)
    env.pop("STANDIN_FAULT", None)
    if fault:
        env["STANDIN_FAULT"] = fault
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        jpath = f.name
    cmd = [sys.executable, RUNNER, "--tools", "standin", "--mxu", "4", "--json", jpath,
           "--work", work] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    with open(jpath) as f:
        res = {r["test"]: r for r in json.load(f)}
    os.unlink(jpath)
    return p.returncode, p.stdout.decode(), res


failures = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def main():
    work = os.path.join(os.environ.get("BUILD", "build"), "conformance-selftest")
    rc, out, res = run(["--self-test", "-j", "2"], work=work)
    print(out.splitlines()[-3] if out else "")
    check(rc == 0, "stand-in, all claimed tests: exit 0")
    st = {}
    for r in res.values():
        st.setdefault(r["status"], []).append(r["test"])
    check(not st.get("failed") and not st.get("crashed") and not st.get("error"),
          "stand-in: nothing failed, crashed or errored (%s)" % {k: len(v) for k, v in st.items()})
    check(len(st.get("passed", [])) >= 80, "stand-in: >= 80 tests passed (%d)" % len(st.get("passed", [])))
    for t in ("test_training_dropout", "test_maxpool_with_argmax_2d_precomputed_pads",
              "test_add_uint8", "test_identity_sequence", "test_batchnorm_example_training_mode"):
        check(res[t]["status"] == "rejected", "%s rejected (%s)" % (t, res[t]["detail"][-60:]))
    check("every one reported correctly" in out, "perturbation self-test reported every element")

    few = ["--filter", "^test_(gemm_default_no_bias|relu|softmax_example|conv_with_strides_padding)$"]
    for fault, status, text in (("crash", "crashed", "signal SIGABRT"),
                                ("noout", "crashed", "wrote no"),
                                ("reject2", "crashed", "with 2 lines on stderr"),
                                ("shape", "failed", "output shape"),
                                ("offset", "failed", "outside the bound")):
        rc, out, res = run(few, fault=fault, work=work)
        check(rc == 1, "fault %s: exit 1" % fault)
        for t, r in sorted(res.items()):
            check(r["status"] == status and text in r["detail"],
                  "fault %s: %s %s (%s)" % (fault, t, status, r["detail"][:90]))

    must = ["--filter", "^test_(training_dropout|maxpool_with_argmax_2d_precomputed_pads|add_uint8|"
                        "identity_sequence|batchnorm_example_training_mode)$"]
    rc, out, res = run(must, fault="acceptall", work=work)
    check(rc == 1, "accept-all compiler: exit 1")
    for t, r in sorted(res.items()):
        check(r["status"] == "failed" and "accepted" in r["detail"],
              "accept-all: %s failed (%s)" % (t, r["detail"][:90]))
    print("conformance self-test: %s" % ("PASS" if not failures else "FAIL (%d)" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
