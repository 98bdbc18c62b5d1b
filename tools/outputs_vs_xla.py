#!/usr/bin/env python3
"""Issue 17's correctness bar on the corpus: `hloc run` (CPU backend, cold cache) of every
program, before and after XLA's optimizations, against the outputs XLA itself recorded.

Run by hand (never by the test suite); needs numpy (the JAX environment of
tools/bench_vs_xla.py has it):

    cargo build --release -p hloc
    /tmp/jaxenv/bin/python tools/outputs_vs_xla.py [--hloc PATH] [--corpus DIR] [NAME ...]

For every program of corpus/MANIFEST.tsv and each of its two modules it runs

    hloc run FILE --inputs corpus/NAME/inputs.npz --outputs OUT.npz --backend cpu

with a fresh HLOC_CACHE_DIR, then compares every output with corpus/NAME/outputs.npz at
the bar's tolerance: floats rtol 1e-3 / atol 1e-5, bf16 and f16 2e-2, f8 kinds 1e-1,
integers and pred exact (NaN equal to NaN). Prints one row per module (`ok` with the
output count, or the first difference) and the count that match; exits 1 if any does not.

`--fused` adds a third module per program: what `hloc fuse before_optimizations.hlo
--target cpu` writes (issue 16's bar: `hloc run fused.hlo` matches XLA's outputs).
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tolerance(dtype):
    """(rtol, atol) of a recorded output's dtype, None for exact comparison."""
    name = np.dtype(dtype).name
    if name in ("float32", "float64", "complex64", "complex128"):
        return 1e-3, 1e-5
    if name in ("float16", "bfloat16"):
        return 2e-2, 2e-2
    if name.startswith("float8"):
        return 1e-1, 1e-1
    return None


def first_difference(got, want):
    """None when `got` matches `want`, else where and how they first differ."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} vs {want.shape}"
    tol = tolerance(want.dtype)
    if tol is None:
        g = got.view(want.dtype) if got.dtype.itemsize == want.dtype.itemsize else got
        bad = np.flatnonzero(g.reshape(-1) != want.reshape(-1))
    else:
        kind = np.complex128 if np.iscomplexobj(want) else np.float64
        g = got.astype(kind).reshape(-1)
        w = want.astype(kind).reshape(-1)
        both_nan = np.isnan(g) & np.isnan(w)
        with np.errstate(invalid="ignore"):
            close = (g == w) | (np.abs(g - w) <= tol[1] + tol[0] * np.abs(w))
        bad = np.flatnonzero(~(close | both_nan))
    if bad.size:
        i = int(bad[0])
        return f"element {i}: {got.reshape(-1)[i]} vs {want.reshape(-1)[i]} ({bad.size} differ)"
    return None


def check(hloc, program_dir, module, out_dir):
    """`ok (N outputs)` or the reason the module's outputs differ from XLA's."""
    out = os.path.join(out_dir, "out.npz")
    env = dict(os.environ, HLOC_CACHE_DIR=tempfile.mkdtemp(dir=out_dir))
    path = os.path.join(program_dir, module)
    if module == "fused.hlo":
        path = os.path.join(out_dir, "fused.hlo")
        f = subprocess.run(
            [hloc, "fuse", os.path.join(program_dir, "before_optimizations.hlo"),
             "--target", "cpu"], capture_output=True, text=True)
        if f.returncode != 0:
            return f"hloc fuse exited {f.returncode}: {f.stderr.strip()[:120]}"
        with open(path, "w") as fh:
            fh.write(f.stdout)
    r = subprocess.run(
        [hloc, "run", path,
         "--inputs", os.path.join(program_dir, "inputs.npz"),
         "--outputs", out, "--backend", "cpu"],
        capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return f"hloc exited {r.returncode}: {r.stderr.strip()[:120]}"
    with np.load(out) as got, np.load(os.path.join(program_dir, "outputs.npz")) as want:
        names = sorted(want.files, key=lambda n: int(n[3:]))
        if sorted(got.files) != sorted(want.files):
            return f"outputs {sorted(got.files)} vs XLA's {names}"
        for n in names:
            d = first_difference(got[n], want[n])
            if d:
                return f"{n}: {d}"
    return f"ok ({len(names)} outputs)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hloc", default=os.path.join(ROOT, "target/release/hloc"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "corpus"))
    ap.add_argument("--fused", action="store_true",
                    help="also run what `hloc fuse --target cpu` writes for each program")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    modules = ["before_optimizations.hlo", "after_optimizations.hlo"]
    if a.fused:
        modules.append("fused.hlo")
    with open(os.path.join(a.corpus, "MANIFEST.tsv")) as f:
        names = [l.split("\t")[0] for l in f.read().splitlines()[1:] if l.strip()]
    if a.names:
        names = [n for n in names if n in a.names]
    passed = total = 0
    with tempfile.TemporaryDirectory(prefix="hloc-outputs-") as tmp:
        for name in names:
            for module in modules:
                total += 1
                verdict = check(a.hloc, os.path.join(a.corpus, name), module, tmp)
                passed += verdict.startswith("ok")
                print(f"{name:32} {module[:-4]:22} {verdict}")
    print(f"{passed} of {total} modules match XLA's recorded outputs")
    sys.exit(0 if passed == total else 1)


if __name__ == "__main__":
    main()
