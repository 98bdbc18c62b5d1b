#!/usr/bin/env python3
"""Does XLA itself accept and run the modules `hloc fuse` writes? Per corpus program.

Run by hand (never by the test suite); needs JAX from PyPI (see tools/bench_vs_xla.py):

    cargo build --release -p hloc
    /tmp/jaxenv/bin/python tools/fused_on_xla.py [--target cpu|h100] [NAME ...]

For every program of corpus/MANIFEST.tsv it runs

    hloc fuse corpus/NAME/before_optimizations.hlo --target TARGET > OUT/NAME.fused.hlo

then has XLA:CPU parse that text (hlo_module_from_text), compile it and run it on the
recorded inputs (corpus/NAME/inputs.npz), and compares every output with XLA's recorded
outputs of the original program (corpus/NAME/outputs.npz) with the corpus tolerance:
floats rtol 1e-3 / atol 1e-5, bf16 and f16 2e-2, f8 kinds 1e-1, integers and pred exact
(NaN equal to NaN). Prints one row per program (stage reached and the first mismatch) and
the count that pass every stage (issue 16's bar: XLA parses, compiles and runs fused.hlo and
matches).

Caveat: JAX's Python API compiles only StableHLO, so the text goes HLO -> MLIR -> HLO, and
that round trip drops the layouts of nested computations and the fusions' backend configs:
XLA's own after_optimizations.hlo modules abort the same way on several programs (e.g. pad,
while_loop); `--xla-own` runs those through the same route, to show what it can carry.
Programs run in a worker process that reports each one as it finishes; when XLA aborts
the process on a module it cannot handle, that row says so and a new worker goes on with
the rest.

`--platform cuda` runs XLA:GPU instead (on a machine with JAX's CUDA build), with
`--from-dir DIR` taking the modules from DIR/NAME.fused.hlo (written earlier, e.g. by
`hloc fuse --target h100`) where hloc itself is not installed. LAPACK custom calls of the
corpus (cholesky, linalg_solve, ...) exist on the CPU only.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

# The platform must be chosen before JAX starts (bench_vs_xla reads it).
for _k, _a in enumerate(sys.argv):
    if _a == "--platform" and _k + 1 < len(sys.argv):
        os.environ["HLOC_XLA_PLATFORM"] = sys.argv[_k + 1]

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_vs_xla as bx  # noqa: E402  (sets up JAX and the LAPACK kernels)
from outputs_vs_xla import first_difference as compare  # noqa: E402  (the corpus tolerance)

import xla_hlo  # noqa: E402


def leaves(x):
    """The flattened outputs of an executable's result."""
    if isinstance(x, (list, tuple)):
        out = []
        for e in x:
            out.extend(leaves(e))
        return out
    return [x]


def run_on_xla(text, args):
    """Outputs of XLA:CPU compiling and running module `text` on `args`; raises on failure."""
    platform = os.environ.get("HLOC_XLA_PLATFORM", "cpu")
    return [np.asarray(o) for o in leaves(xla_hlo.execute(text, args, platform))]


def check_one(hloc, corpus, target, out, name, xla_own=False, from_dir=None):
    """(stage, detail) of one program: `ok` when XLA runs the fused module and matches.
    With `xla_own`, the module is XLA:CPU's own optimized one (after_optimizations.hlo),
    through the same route: what the route itself can carry."""
    src = os.path.join(corpus, name, "before_optimizations.hlo")
    if xla_own:
        text = open(os.path.join(corpus, name, "after_optimizations.hlo")).read()
    elif from_dir:
        text = open(os.path.join(from_dir, f"{name}.fused.hlo")).read()
    else:
        p = subprocess.run([hloc, "fuse", src, "--target", target], capture_output=True,
                           text=True)
        if p.returncode != 0:
            return "hloc fuse", p.stderr.strip()[:100]
        text = p.stdout
    with open(os.path.join(out, f"{name}.fused.hlo"), "w") as fh:
        fh.write(text)
    args = bx.load_inputs(os.path.join(corpus, name, "inputs.npz"), open(src).read())
    try:
        got = run_on_xla(text, args)
    except Exception as e:  # noqa: BLE001
        msg = str(e).strip().splitlines()[0][:100] if str(e).strip() else ""
        return "xla", f"{type(e).__name__}: {msg}"
    with np.load(os.path.join(corpus, name, "outputs.npz")) as z:
        want = [z[f"out{i}"] for i in range(len(z.files))]
    if len(got) != len(want):
        return "outputs", f"{len(got)} outputs, XLA recorded {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        d = compare(g, w)
        if d:
            return "outputs", f"out{i}: {d}"
    return "ok", f"{len(got)} outputs match"


def worker(a, names, out):
    """Checks `names` in order in this process, printing START and RESULT lines as it
    goes (flushed, so that a driver sees how far it got when XLA aborts it)."""
    for name in names:
        print(f"START\t{name}", flush=True)
        stage, detail = check_one(a.hloc, a.corpus, a.target, out, name, a.xla_own, a.from_dir)
        print(f"RESULT\t{name}\t{stage}\t{detail}", flush=True)


def run_all(a, names, out):
    """(name, stage, detail) of every program: workers over the remaining names, a new
    one after each abort."""
    rows = {}
    left = list(names)
    while left:
        before = len(rows)
        p = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--worker", ",".join(left), "--hloc", a.hloc,
             "--corpus", a.corpus, "--target", a.target, "--out", out, "--platform", a.platform]
            + (["--xla-own"] if a.xla_own else [])
            + (["--from-dir", a.from_dir] if a.from_dir else []),
            capture_output=True, text=True)
        started = None
        for line in p.stdout.splitlines():
            f = line.split("\t", 3)
            if f[0] == "START":
                started = f[1]
            elif f[0] == "RESULT" and len(f) == 4:
                rows[f[1]] = (f[2], f[3])
                started = None
        if started is not None:
            check = [l for l in p.stderr.splitlines() if "Check failed" in l or "Error" in l]
            rows[started] = ("xla abort",
                             (check[0].strip() if check else f"exit {p.returncode}")[:120])
        elif len(rows) == before:
            # The worker died before it started any program (or said nothing): count it
            # against the first one so that the loop moves on.
            rows[left[0]] = ("worker", f"exit {p.returncode}: {p.stderr.strip()[-120:]}")
        left = [n for n in left if n not in rows]
    return [(n, *rows[n]) for n in names]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hloc", default=os.path.join(bx.ROOT, "target/release/hloc"))
    ap.add_argument("--corpus", default=os.path.join(bx.ROOT, "corpus"))
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--out", help="keep the fused modules here (default: a temporary directory)")
    ap.add_argument("--xla-own", action="store_true",
                    help="run XLA:CPU's own after_optimizations.hlo through the same route "
                         "instead (what the route can carry)")
    ap.add_argument("--platform", default="cpu", help="cpu (XLA:CPU) or cuda (XLA:GPU)")
    ap.add_argument("--from-dir", help="take DIR/NAME.fused.hlo instead of running hloc fuse")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="hloc-fused-")
    os.makedirs(out, exist_ok=True)
    if a.worker:
        worker(a, a.worker.split(","), out)
        return 0
    names = a.names or [
        line.split("\t")[0]
        for line in open(os.path.join(a.corpus, "MANIFEST.tsv")).read().splitlines()[1:]
    ]
    print(f"{'program':32} {'stage':10} detail", flush=True)
    passed = 0
    for name, stage, detail in run_all(a, names, out):
        passed += stage == "ok"
        print(f"{name:32} {stage:10} {detail}")
    what = "XLA's own optimized modules" if a.xla_own else "fused modules"
    xla = "XLA:GPU" if a.platform == "cuda" else "XLA:CPU"
    print(f"{passed} of {len(names)} {what} parse, compile, run and match on {xla} "
          f"(modules in {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
