#!/usr/bin/env python3
"""Issue 36's differential campaign: random modules on hloc's compiled backend, hloc's
reference evaluator and XLA:CPU, on the same inputs, every result classified.

    python3 tools/differential_campaign.py [--n 500] [--seed 0] [--hloc PATH] [--out DIR]
        [--families sort,argmax,...] [--timeout 120] [--xla-default] [--reclassify]

Modules come from tools/differential_gen.py (seed i draws family i mod 12 and the rest
from i). Each is run three ways: `hloc run --backend cpu`, `hloc run --backend reference`
(both with their own HLOC_CACHE_DIR under OUT) and XLA:CPU through jax's compiler (the path
of tools/bench_vs_xla.py; without XLA's bf16/f16 excess precision unless --xla-default).
Outputs are compared pairwise: integers and pred exactly; floats NaN against NaN (any
payload), ±inf exactly, else within a dtype tolerance (f64 1e-9, f32 1e-4, f16 and bf16
3e-2, relative, plus that share of the output's largest magnitude for cancellations).
Results:

- a **crash** is an hloc exit that is neither 0 nor a clean error (1, 2): a signal, a panic
  message or a timeout. The bar is 0.
- a **reject** is a clean error of one side (its message kept); both hloc backends and XLA
  rejecting means the generator wrote an invalid module.
- a **disagreement** names the pair, the output, the element count and the first index
  with the values. Where XLA alone differs, tools/differential_explain.py tries its rules
  (each recomputes the difference: XLA's denormals-are-zero, its skipped padding taps,
  ...); a disagreement a rule reproduces is classed `explained: RULE`, any other stays
  `differ: PAIRS` for a person to read.

OUT/results.jsonl has one line per module; OUT/SEED/ keeps every module that crashed,
was rejected or disagreed (module.hlo, inputs.npz, xla.npz, cpu.npz, reference.npz: rerun
it by hand with `hloc run OUT/SEED/module.hlo --inputs OUT/SEED/inputs.npz
--check-reference`). `--reclassify` judges OUT's saved disagreements again (after a rule
changed) without running the modules again. The summary table (per family: modules, each
class) goes to stdout. Run by hand at low priority (`nice -n 10`), never by the test
suite; needs jax.
"""

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import time

import ml_dtypes
import numpy as np

# XLA keeps bf16/f16 intermediates in f32 by default (xla_allow_excess_precision); HLO
# rounds each op's result to its type, as hloc's backends do. The campaign compares
# against XLA without the excess precision unless --xla-default asks for XLA as JAX runs it.
if "--xla-default" not in sys.argv:
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_allow_excess_precision=false").strip()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import differential_explain  # noqa: E402
import differential_gen as gen  # noqa: E402
import jax  # noqa: E402
import xla_hlo  # noqa: E402

jax.config.update("jax_enable_x64", True)  # f64 and s64 arguments stay 64-bit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RTOL = differential_explain.RTOL


def xla_run(text, args):
    """XLA:CPU's outputs (a flat list: nested tuples flattened in order), or its error."""
    try:
        return xla_hlo.outputs(text, args), None
    except Exception as e:  # noqa: BLE001 - XLA's errors are all reported, by class
        return None, f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"


def hloc_run(hloc, work, backend, timeout, inputs="inputs"):
    """(outputs, error, crash) of `hloc run` on work/module.hlo with work/INPUTS.npz."""
    out = os.path.join(work, f"{backend}.{inputs}.npz" if inputs != "inputs" else f"{backend}.npz")
    env = dict(os.environ, HLOC_CACHE_DIR=os.path.join(os.path.dirname(work), f"cache-{backend}"))
    cmd = [hloc, "run", os.path.join(work, "module.hlo"), "--inputs",
           os.path.join(work, f"{inputs}.npz"), "--outputs", out, "--backend", backend,
           "--no-timing", "--progress", "never"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, f"timeout after {timeout} s"
    err = r.stderr.strip()
    if r.returncode not in (0, 1, 2) or "panicked" in err or "RUST_BACKTRACE" in err:
        return None, None, f"exit {r.returncode}: {err[-400:]}"
    if r.returncode != 0:
        lines = [line for line in err.splitlines() if line.startswith(("error", "hloc"))]
        return None, (lines or err.splitlines() or ["(no message)"])[-1][:300], None
    with np.load(out) as z:
        return [z[f"out{i}"] for i in range(len(z.files))], None, None


def as_dtype(got, want):
    """`got` viewed as `want`'s dtype where hloc wrote raw bits (bf16 as uint16)."""
    got = np.asarray(got)
    if got.dtype != want.dtype and got.dtype.itemsize == want.dtype.itemsize \
            and want.dtype.kind not in "biu":
        return got.view(want.dtype)
    return got


def difference(got, want):
    """None when `got` matches `want` (see the module doc), else a description."""
    with np.errstate(all="ignore"):
        return _difference(got, want)


def _difference(got, want):
    want = np.asarray(want)
    got = as_dtype(got, want)
    if got.shape != want.shape:
        return {"kind": "shape", "detail": f"{got.shape} vs {want.shape}"}
    if want.size == 0:
        return None
    bad = differential_explain.mismatches(got, want)
    kind = "value"
    if want.dtype.name in RTOL:
        g, w = got.astype(np.float64).reshape(-1), want.astype(np.float64).reshape(-1)
        kinds = set()
        for i in bad[:64]:
            if np.isnan(g[i]) != np.isnan(w[i]):
                kinds.add("nan")
            elif not (np.isfinite(g[i]) and np.isfinite(w[i])):
                kinds.add("inf")
            else:
                kinds.add("value")
        kind = "+".join(sorted(kinds)) or "value"
    if bad.size == 0:
        return None
    i = int(bad[0])
    return {"kind": kind, "count": int(bad.size), "of": int(want.size),
            "index": [int(j) for j in np.unravel_index(i, want.shape)] if want.ndim else [],
            "got": repr(got.reshape(-1)[i]), "want": repr(want.reshape(-1)[i])}


def compare(a, b):
    """Per output differences of two output lists ({} when they agree)."""
    if len(a) != len(b):
        return {"count": f"{len(a)} vs {len(b)} outputs"}
    diffs = {}
    for i, (x, y) in enumerate(zip(a, b)):
        d = difference(x, y)
        if d:
            diffs[f"out{i}"] = d
    return diffs


def run_case(seed, hloc, out_dir, timeout):
    c = gen.case(seed)
    work = os.path.join(out_dir, str(seed))
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "module.hlo"), "w") as fh:
        fh.write(c.text)
    np.savez(os.path.join(work, "inputs.npz"),
             **{f"in{i}": a for i, a in enumerate(c.inputs)})
    rec = {"seed": seed, "family": c.family, "notes": c.notes}
    t0 = time.perf_counter()
    xla, rec["xla_error"] = xla_run(c.text, c.inputs)
    outs = {"xla": xla}
    for b in ("cpu", "reference"):
        outs[b], rec[f"{b}_error"], rec[f"{b}_crash"] = hloc_run(hloc, work, b, timeout)
    rec["seconds"] = round(time.perf_counter() - t0, 2)
    if xla is not None:  # hloc writes bf16 as raw 16-bit words: view them as XLA's types
        for b in ("cpu", "reference"):
            if outs[b] is not None and len(outs[b]) == len(xla):
                outs[b] = [as_dtype(g, w) for g, w in zip(outs[b], xla)]
    judge(rec, c, outs, hloc, work, timeout)
    if rec["class"] == "agree":
        shutil.rmtree(work)
    elif xla is not None:
        np.savez(os.path.join(work, "xla.npz"), **{f"out{i}": a for i, a in enumerate(xla)})
    return rec


def judge(rec, case, outs, hloc, work, timeout):
    """Compares the three results pairwise and sets rec's differ, class and explained."""
    pairs = {}
    for p, q in (("cpu", "xla"), ("reference", "xla"), ("cpu", "reference")):
        if outs[p] is not None and outs[q] is not None:
            d = compare(outs[p], outs[q])
            if d:
                pairs[f"{p}/{q}"] = d
    rec["differ"] = pairs
    rec["class"] = classify(rec)
    rec["explained"] = None
    if pairs:
        def rerun(inputs):
            np.savez(os.path.join(work, "flushed.npz"),
                     **{f"in{i}": a for i, a in enumerate(inputs)})
            got = hloc_run(hloc, work, "cpu", timeout, "flushed")[0]
            return got and [as_dtype(g, w) for g, w in zip(got, outs["xla"])]
        rec["explained"] = differential_explain.explain(case, outs, pairs, rerun, compare)
        if rec["explained"]:
            rec["class"] = "explained: " + rec["explained"]


def reclassify(out_dir, hloc, timeout):
    """Judges again every module of OUT/results.jsonl that did not agree, from its saved
    outputs (the explanations changed, not the runs); rewrites results.jsonl."""
    path = os.path.join(out_dir, "results.jsonl")
    recs = [json.loads(line) for line in open(path)]
    for rec in recs:
        work = os.path.join(out_dir, str(rec["seed"]))
        saved = [os.path.join(work, f"{b}.npz") for b in ("xla", "cpu", "reference")]
        if not rec["differ"] or not all(os.path.exists(f) for f in saved):
            continue  # agreement, a crash or a reject: nothing to judge again
        case = gen.case(rec["seed"])
        outs = {}
        for b in ("xla", "cpu", "reference"):
            f = os.path.join(work, f"{b}.npz")
            with np.load(f) as z:  # np.savez writes bf16 as 2-byte voids
                outs[b] = [z[f"out{i}"].view(ml_dtypes.bfloat16) if z[f"out{i}"].dtype.kind == "V"
                           else z[f"out{i}"] for i in range(len(z.files))]
        for b in ("cpu", "reference"):
            outs[b] = [as_dtype(g, w) for g, w in zip(outs[b], outs["xla"])]
        judge(rec, case, outs, hloc, work, timeout)
    with open(path, "w") as fh:
        for rec in recs:
            fh.write(json.dumps(rec) + "\n")
    return recs


def classify(rec):
    if rec["cpu_crash"] or rec["reference_crash"]:
        return "crash"
    errs = [rec["xla_error"], rec["cpu_error"], rec["reference_error"]]
    if all(errs):
        return "invalid module (all reject)"
    if any(errs):
        who = [n for n, e in zip(("xla", "cpu", "reference"), errs) if e]
        return "rejected by " + "+".join(who)
    if rec["differ"]:
        return "differ: " + " ".join(sorted(rec["differ"]))
    return "agree"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hloc", default=os.path.join(ROOT, "target", "release", "hloc"))
    ap.add_argument("--out", default="/tmp/differential_campaign")
    ap.add_argument("--families", help="comma-separated: only these (others' seeds skipped)")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--reclassify", action="store_true",
                    help="judge OUT's saved disagreements again (no new runs but the checks')")
    ap.add_argument("--xla-default", action="store_true",
                    help="XLA with its default excess precision for bf16/f16 (see above)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    only = set(a.families.split(",")) if a.families else None
    names = sorted(gen.FAMILIES)
    if only and not only <= set(names):
        raise SystemExit(f"unknown families {only - set(names)}; have {names}")
    table = collections.defaultdict(collections.Counter)
    if a.reclassify:
        for rec in reclassify(a.out, a.hloc, a.timeout):
            table[rec["family"]][rec["class"]] += 1
            report(rec)
        summary(table)
        return
    with open(os.path.join(a.out, "results.jsonl"), "a") as log:
        for seed in range(a.seed, a.seed + a.n):
            if only and names[seed % len(names)] not in only:
                continue
            rec = run_case(seed, a.hloc, a.out, a.timeout)
            log.write(json.dumps(rec) + "\n")
            log.flush()
            table[rec["family"]][rec["class"]] += 1
            report(rec)
    summary(table)


def report(rec):
    if rec["class"] != "agree":
        what = rec["differ"] or [rec[k] for k in ("xla_error", "cpu_error", "reference_error",
                                                   "cpu_crash", "reference_crash")]
        print(f"seed {rec['seed']} {rec['family']} ({rec['notes']}): {rec['class']} "
              f"{json.dumps(what)[:600]}", flush=True)


def summary(table):
    classes = sorted({k for c in table.values() for k in c})
    print(f"\n| family | modules | {' | '.join(classes)} |")
    print("|---|---:|" + "---:|" * len(classes))
    total = collections.Counter()
    for fam in sorted(table):
        total.update(table[fam])
        row = [str(table[fam][k]) for k in classes]
        print(f"| {fam} | {sum(table[fam].values())} | {' | '.join(row)} |")
    print(f"| all | {sum(total.values())} | {' | '.join(str(total[k]) for k in classes)} |")


if __name__ == "__main__":
    sys.exit(main())
