#!/usr/bin/env python3
"""Where does a program's output first differ from XLA's? Probe its intermediate values.

Rewrites a module's ENTRY root into a tuple of the named ENTRY instructions (everything
they do not need is dead), runs that probe module on XLA:CPU (jax's compiler, the same path
as tools/bench_vs_xla.py) and on hloc (the compiled `cpu` backend and the `reference`
evaluator) with the program's inputs, and prints, for every probed value, how many elements
each hloc backend gets bit-for-bit different from XLA, and the largest difference:

    python3 tools/hlo_probe_vs_xla.py DIR NAME [NAME ...] [--hloc PATH] [--keep OUT_DIR]

DIR holds before_optimizations.hlo and inputs.npz (as tools/user_programs*.py write them).
--keep OUT_DIR writes the probe module and XLA's outputs there (before_optimizations.hlo,
inputs.npz, outputs.npz: a test case in the same form, to trim by hand into a committed
one). Walking the probes up the producer chain of a differing output finds the first
instruction whose bits differ (issue 30: transformer_adamw_bf16_step's sign flips).

Run by hand (never by the test suite); needs jax and ml_dtypes.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_vs_xla as bench  # noqa: E402
import xla_hlo  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEF = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(\S+?\[[^\]]*\](?:\{[^}]*\})?|\([^=]*?\))\s+(\w[\w\-]*)\(")


def probe_module(text, names):
    """The module text with the ENTRY root replaced by a tuple of `names`."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("ENTRY "))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("}"))
    types = {}
    for i in range(start + 1, end):
        if lines[i].lstrip().startswith("ROOT "):
            lines[i] = lines[i].replace("ROOT ", "", 1)
        m = DEF.match(lines[i])
        if m:
            types[m.group(2)] = m.group(3)
    missing = [n for n in names if n not in types]
    if missing:
        raise SystemExit(f"not ENTRY instructions: {', '.join(missing)}")
    shape = "(" + ", ".join(types[n] for n in names) + ")"
    root = f"  ROOT probe.root = {shape} tuple({', '.join(names)})"
    lines.insert(end, root)
    head = re.sub(r",\s*entry_computation_layout=\{.*", "", lines[0])
    return "\n".join([head] + lines[1:]) + "\n"


def xla_outputs(text, args):
    """XLA:CPU's outputs of the module text on `args`, as numpy arrays."""
    return xla_hlo.outputs(text, args)


def hloc_outputs(hloc, path, inputs, backend, work):
    out = os.path.join(work, f"{backend}.npz")
    env = dict(os.environ, HLOC_CACHE_DIR=os.path.join(work, "cache"))
    r = subprocess.run([hloc, "run", path, "--inputs", inputs, "--outputs", out,
                        "--backend", backend, "--no-timing"], capture_output=True, text=True,
                       env=env)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1:]
    with np.load(out) as z:
        return [z[f"out{i}"] for i in range(len(z.files))], None


def bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind in "fc" or a.dtype.name == "bfloat16" \
        else a


def compare(got, want):
    """(differing elements, largest absolute difference) of `got` against `want`."""
    want = np.asarray(want)
    got = np.asarray(got)
    if want.dtype.name == "bfloat16" and got.dtype == np.uint16:
        got = got.view(want.dtype)
    if got.shape != want.shape:
        return f"shape {got.shape} vs {want.shape}", ""
    n = int((bits(got).reshape(-1) != bits(want).reshape(-1)).sum())
    if want.dtype.kind in "fc" or want.dtype.name == "bfloat16":
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        d = np.abs(g - w)
        d = d[~(np.isnan(g) & np.isnan(w))]
        return n, f"{d.max():.3g}" if d.size else "0"
    return n, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("names", nargs="+")
    ap.add_argument("--hloc", default=os.path.join(ROOT, "target", "release", "hloc"))
    ap.add_argument("--keep")
    a = ap.parse_args()
    text = probe_module(open(os.path.join(a.dir, "before_optimizations.hlo")).read(), a.names)
    inputs = os.path.join(a.dir, "inputs.npz")
    args = bench.load_inputs(inputs, text)
    want = xla_outputs(text, args)
    work = tempfile.mkdtemp()
    try:
        path = os.path.join(work, "probe.hlo")
        with open(path, "w") as fh:
            fh.write(text)
        got = {b: hloc_outputs(a.hloc, path, inputs, b, work) for b in ("cpu", "reference")}
        for b, (outs, err) in got.items():
            if err:
                print(f"{b}: {err}")
        print(f"{'value':28} {'type':26} {'cpu differ':>11} {'cpu max':>9} "
              f"{'ref differ':>11} {'ref max':>9}")
        for i, n in enumerate(a.names):
            row = f"{n:28} {str(want[i].dtype) + str(list(want[i].shape)):26}"
            for b in ("cpu", "reference"):
                outs = got[b][0]
                c, m = compare(outs[i], want[i]) if outs else ("-", "-")
                row += f" {c:>11} {m:>9}"
            print(row, flush=True)
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
            shutil.copy(path, os.path.join(a.keep, "before_optimizations.hlo"))
            shutil.copy(inputs, os.path.join(a.keep, "inputs.npz"))
            np.savez(os.path.join(a.keep, "outputs.npz"),
                     **{f"out{i}": bits(w) if w.dtype.name == "bfloat16" else w
                        for i, w in enumerate(want)})
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
