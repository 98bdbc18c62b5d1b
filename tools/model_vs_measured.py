#!/usr/bin/env python3
"""Check the fusion cost model's CPU predictions against measured kernel times.

Run by hand (never by the test suite); Python 3 standard library only:

    cargo build --release -p hloc
    tools/model_vs_measured.py                                  # the corpus
    tools/model_vs_measured.py corpus target/release/hloc --scaled-dir /tmp/scaled
    tools/model_vs_measured.py --programs softmax,mlp_forward --kernels

For every program it runs `hloc run FILE --inputs inputs.npz --repeat N --profile` (the
inputs recorded with it; one compile cache for the whole run) and reads the profile table
on stderr: per thunk the measured milliseconds per run, the `cpu` description's modelled
milliseconds and model/measured (see `hloc run --help`, `--profile`). It prints one row
per program: thunks with both figures ("compared"), the share of the run time they cover,
the geometric mean of model/measured over them, the summed model over summed measured
time (the program's time as the model predicts it), and the worst thunk (the ratio
farthest from 1, in either direction). Then, over all thunks of all programs: the
geometric mean, the error distribution (share within 2x and within 4x of the measurement)
and the same split by thunk kind (generated kernel, GEMM, other library call) and by
measured time. `--kernels` also lists every compared thunk.

--dir DIR (repeatable) also runs every program found in DIR (one sub-directory per program
with before_optimizations.hlo and inputs.npz: the fresh programs of tools/user_programs*.py),
grouped as "fresh"; `--no-corpus` leaves the corpus out. `--json FILE` writes every
compared thunk (program, label, class, measured and modelled ms) for a before/after
comparison; the summary also splits thunks by class (`gemm.f32`, `gemm.bf16xbf16->f32`,
`library lapack.potrf`, `kernel`, ...).

--kernel-classes DIR splits generated kernels by what they compute (tools/kernel_classes.py:
softmax-like, reduction, transpose, gather, transcendental or plain elementwise, ...; each
program compiled once with `hloc compile --dump-to DIR/PROGRAM`). `--compare OLD.json`
prints, per class, an earlier `--json`'s figures (its own measurement), the new ones, and the
earlier model's prediction against the new measurement (thunks joined by program and label):
old and new model on the same measurement.

--remodel MEASURED.json prices an earlier `--json`'s measurement again with this binary's
model: each program runs once (`--repeat 1`, no trace) for the model's figures, every thunk
keeps the measured time (and class) the JSON holds, and the summary reads the new model
against it; a last table sets the JSON's own model (the old one) beside the new, per kernel
class and per measured time, over the same thunks (joined by program and label). Old and
new model are then compared on one measurement, without timing again.

--fastest measures each thunk by its fastest call (`hloc run --trace`) times its calls per
run, not the mean: on a machine other processes keep busy, a call that waited for a core
is the machine's load, not the kernel's time.

--scaled-dir DIR also runs the realistic-size programs of `tools/bench_vs_xla.py --scaled`
found in DIR (one sub-directory per program with before_optimizations.hlo and
inputs.npz); when some are missing, they are generated there first with JAX, through
`--jax-python` (default /tmp/jaxenv/bin/python; see tools/bench_vs_xla.py for the venv).
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile

import kernel_classes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCALED = [
    "elementwise_16M", "row_sum_4096sq", "col_sum_4096sq", "transpose_4096sq",
    "transpose_rowmajor_4096sq", "softmax_rows_4096sq", "gemm_2048cube_f32",
    "transformer_block_s512", "conv_resnet_nhwc", "conv_nchw_stride2",
]
# A profile row: ms, %, calls, model ms (or -), model/measured (or -), GFLOP/s (or -),
# GB/s (or -), roof % (or -; binaries before it lack the column), the label.
ROW = re.compile(r"^\s*([0-9.]+)\s+([0-9.]+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)"
                 r"(?:\s+(\S+))?  (.+)$")
TOTAL = re.compile(r"^\s*([0-9.]+)\s+100\.0\s+total$")


def kind(label):
    """generated kernel, GEMM, library call or copy, from the thunk's label."""
    if label.startswith("kernel "):
        return "kernel"
    if label.startswith("gemm."):
        return "gemm"
    if label.startswith("library "):
        return "library"
    if label.startswith("streamed "):
        return "streamed"
    return "copy"


def thunk_class(label):
    """The finer class of a thunk for the per-class table: the GEMM's dtypes
    (`gemm.bf16xbf16->f32`), the library routine (`library lapack.potrf`), or the kind."""
    head = label.split(" ")
    if label.startswith("gemm.") or label.startswith("gemv."):
        return head[0]
    if label.startswith("library ") and len(head) > 1:
        return "library " + head[1]
    return kind(label)


def fastest_calls(trace):
    """{label: seconds of its fastest call} from an `hloc run --trace` file."""
    events = json.load(open(trace))
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    best = {}
    for e in events:
        if e.get("ph") == "X":
            best[e["name"]] = min(best.get(e["name"], math.inf), e["dur"] * 1e-6)
    return best


def profile(hloc, hlo, npz, repeat, cache, fastest=False):
    """(rows, total ms) of one `hloc run --profile`, or an error string. A row is
    {label, kind, ms, share, model_ms, ratio}; model_ms and ratio are None for `-`.
    With `fastest`, a thunk's ms per run is its fastest call (from `--trace`) times its
    calls per run, and the ratio the model over that."""
    cmd = [hloc, "run", hlo, "--inputs", npz, "--repeat", str(repeat), "--profile"]
    trace = os.path.join(cache, "trace.json")
    if fastest:
        cmd += ["--trace", trace]
    env = dict(os.environ, HLOC_CACHE_DIR=cache)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1][:100]
    best = fastest_calls(trace) if fastest else {}
    rows, total = [], None
    for line in p.stderr.splitlines():
        t = TOTAL.match(line)
        if t:
            total = float(t.group(1))
            continue
        m = ROW.match(line)
        if not m:
            continue
        num = lambda s: None if s == "-" else float(s)  # noqa: E731
        ms, share, model, ratio = float(m.group(1)), float(m.group(2)), num(m.group(4)), num(m.group(5))
        label = m.group(9)
        # The ms column has 1 us resolution; the ratio is computed from exact times.
        if model is not None and ratio:
            ms = model / ratio
        calls = int(m.group(3))
        if label in best and calls > 0:
            ms = best[label] * 1e3 * calls
            ratio = model / ms if model is not None and ms > 0 else ratio
        rows.append({"label": label, "kind": kind(label), "ms": ms, "share": share,
                     "calls": int(m.group(3)),
                     "model_ms": model, "ratio": ratio, "roof": num(m.group(8) or "-")})
    if total is None:
        return None, "no profile table"
    return (rows, total), None


def remeasured(name, rows, measured):
    """`rows` of one program (this binary's model) with the measured time, calls and class
    of the same thunk in `measured` (an earlier --json), and that JSON's model ratio as
    `old_ratio`; thunks it lacks (a label that changed) are left out."""
    out = []
    for r in rows:
        m = measured.get((name, r["label"]))
        if m is None or r["model_ms"] is None or m["ms"] <= 0:
            continue
        out.append(dict(r, ms=m["ms"], calls=m["calls"], ratio=r["model_ms"] / m["ms"],
                        old_ratio=m["ratio"], **{"class": m["class"]}))
    return out


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def within(ratios, f):
    """Share (percent) of ratios within a factor f of 1."""
    if not ratios:
        return float("nan")
    return 100.0 * sum(1 for r in ratios if 1 / f <= r <= f) / len(ratios)


def distribution(title, ratios):
    """One line: count, geomean, within 2x, within 4x, median."""
    s = sorted(ratios)
    med = s[len(s) // 2] if len(s) % 2 else math.sqrt(s[len(s) // 2 - 1] * s[len(s) // 2])
    return (f"{title:28} {len(ratios):>6} {geomean(ratios):>8.3g} {med:>8.3g} "
            f"{within(ratios, 2):>6.0f}% {within(ratios, 4):>6.0f}% "
            f"{min(ratios):>8.3g} {max(ratios):>8.3g}")


def compare(old, new):
    """Per class (the new run's): the old run's geomean and share within 2x over its own
    thunks of that class, the new run's, and the old model's predictions over the new
    measurement (thunks joined by program and label)."""
    old_by = {(r["program"], r["label"]): r for r in old}
    classes = {}
    for r in new:
        classes.setdefault(r["class"], []).append(r)
    old_classes = {}
    for r in old:
        old_classes.setdefault(r["class"], []).append(r["ratio"])
    print()
    print(f"{'class':34} {'old n':>6} {'old gm':>7} {'old<=2x':>7} {'new n':>6} {'new gm':>7} "
          f"{'new<=2x':>7} {'joined':>6} {'oldm/new':>8} {'<=2x':>5}")
    everything = ("all", new, [r["ratio"] for r in old])
    rows = [(c, rs, old_classes.get(c, [])) for c, rs in sorted(classes.items(),
                                                                  key=lambda x: -len(x[1]))]
    for c, rs, olds in rows + [everything]:
        news = [r["ratio"] for r in rs]
        joined = [old_by[(r["program"], r["label"])]["model_ms"] / r["ms"]
                  for r in rs if (r["program"], r["label"]) in old_by and r["ms"] > 0]
        cell = lambda xs: (f"{len(xs):>6} {geomean(xs):>7.3g} {within(xs, 2):>6.0f}%"  # noqa: E731
                           if xs else f"{0:>6} {'-':>7} {'-':>7}")
        jtxt = (f"{len(joined):>6} {geomean(joined):>8.3g} {within(joined, 2):>4.0f}%"
                if joined else f"{0:>6} {'-':>8} {'-':>5}")
        print(f"{c[:34]:34} {cell(olds)} {cell(news)} {jtxt}")


def same_measurement(rows):
    """The old model (the measured JSON's) against the new, over the same measured thunks:
    per kernel class, kind and measured time, count, geomean and share within 2x."""
    groups = {"all thunks": rows, "generated kernels": [r for r in rows if r["kind"] == "kernel"]}
    for lo, hi, title in ((0, 1e-3, "< 1 us"), (1e-3, 1e-2, "1-10 us"), (1e-2, 1e-1, "10-100 us"),
                          (1e-1, 1e9, ">= 100 us")):
        groups[f"kernels, measured {title}"] = [r for r in rows if r["kind"] == "kernel"
                                                and lo <= r["ms"] < hi]
    for k in ("gemm", "library", "streamed"):
        groups[k] = [r for r in rows if r["kind"] == k]
    for c in sorted({r["class"] for r in rows if r["kind"] == "kernel"}):
        groups[c] = [r for r in rows if r["class"] == c]
    print()
    print(f"{'same measurement':34} {'count':>6} {'old gm':>7} {'old<=2x':>7} {'new gm':>7} "
          f"{'new<=2x':>7}")
    for title, rs in groups.items():
        if not rs:
            continue
        old = [r["old_ratio"] for r in rs]
        new = [r["ratio"] for r in rs]
        print(f"{title[:34]:34} {len(rs):>6} {geomean(old):>7.3g} {within(old, 2):>6.0f}% "
              f"{geomean(new):>7.3g} {within(new, 2):>6.0f}%")


def programs(corpus, names, group):
    """(name, hlo path, npz path, group) of each program to run."""
    out = []
    for n in names:
        d = os.path.join(corpus, n)
        out.append((n, os.path.join(d, "before_optimizations.hlo"), os.path.join(d, "inputs.npz"), group))
    return out


def ensure_scaled(scaled_dir, jax_python):
    """Generates the scaled programs missing from scaled_dir with JAX."""
    missing = [n for n in SCALED if not os.path.exists(os.path.join(scaled_dir, n, "inputs.npz"))]
    if not missing:
        return
    print(f"generating {len(missing)} scaled program(s) in {scaled_dir} with {jax_python}",
          file=sys.stderr)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import bench_vs_xla; "
            "bench_vs_xla.write_scaled(sys.argv[2])")
    subprocess.run([jax_python, "-c", code, os.path.join(ROOT, "tools"), scaled_dir], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", nargs="?", default=os.path.join(ROOT, "corpus"),
                    help="the corpus directory (with MANIFEST.tsv)")
    ap.add_argument("hloc", nargs="?", default=os.path.join(ROOT, "target/release/hloc"),
                    help="the hloc binary (a release build)")
    ap.add_argument("--programs", help="comma-separated program names (default: all)")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--scaled-dir", help="also run the realistic-size programs found here")
    ap.add_argument("--jax-python", default="/tmp/jaxenv/bin/python",
                    help="the Python with JAX that generates missing scaled programs")
    ap.add_argument("--kernels", action="store_true", help="list every compared thunk")
    ap.add_argument("--dir", action="append", default=[],
                    help="also run every program (sub-directory) found here, as 'fresh'")
    ap.add_argument("--no-corpus", action="store_true", help="leave the corpus out")
    ap.add_argument("--json", help="write every compared thunk here")
    ap.add_argument("--kernel-classes", metavar="DIR",
                    help="split generated kernels by what they compute (dumps kept in DIR)")
    ap.add_argument("--fastest", action="store_true",
                    help="measure each thunk by its fastest call (hloc run --trace) times its "
                    "calls per run: other processes on a busy machine slow single calls, "
                    "rarely every one")
    ap.add_argument("--compare", metavar="OLD_JSON",
                    help="per class: an earlier --json's figures against this run's")
    ap.add_argument("--remodel", metavar="MEASURED_JSON",
                    help="price an earlier --json's measured thunks with this binary's model "
                    "(each program run once, not timed again); old and new model side by side")
    a = ap.parse_args()

    names = [l.split("\t")[0] for l in open(os.path.join(a.corpus, "MANIFEST.tsv")).read().splitlines()[1:]]
    todo = [] if a.no_corpus else programs(a.corpus, names, "corpus")
    for d in a.dir:
        found = sorted(n for n in os.listdir(d)
                       if os.path.exists(os.path.join(d, n, "before_optimizations.hlo"))
                       and os.path.exists(os.path.join(d, n, "inputs.npz")))
        todo += programs(d, found, "fresh")
    if a.scaled_dir:
        ensure_scaled(a.scaled_dir, a.jax_python)
        todo += programs(a.scaled_dir, SCALED, "scaled")
    measured = None
    if a.remodel:
        measured = {(r["program"], r["label"]): r for r in json.load(open(a.remodel))}
        held = {r[0] for r in measured}
        todo = [t for t in todo if t[0] in held]
        a.repeat, a.fastest, a.kernel_classes = 1, False, None
    if a.programs:
        wanted = set(a.programs.split(","))
        todo = [t for t in todo if t[0] in wanted]

    # Other processes on the machine slow the large (threaded) kernels most: say how busy
    # it was.
    print(f"load average before: {os.getloadavg()[0]:.1f} (cores: {os.cpu_count()})")
    print(f"{'program':30} {'thunks':>6} {'compared':>8} {'covers':>7} {'geomean':>8} "
          f"{'sum m/m':>8} {'run ms':>9}  worst thunk (model/measured)")
    pooled = {"corpus": [], "fresh": [], "scaled": []}
    program_geomeans = {"corpus": [], "fresh": [], "scaled": []}
    listing = []
    with tempfile.TemporaryDirectory() as cache:
        classifier = (kernel_classes.Classifier(a.hloc, a.kernel_classes,
                                                dict(os.environ, HLOC_CACHE_DIR=cache))
                      if a.kernel_classes else None)
        for name, hlo, npz, group in todo:
            got, err = profile(a.hloc, hlo, npz, a.repeat, cache, a.fastest)
            if err:
                print(f"{name:30} hloc: {err}")
                continue
            rows, total = got
            if measured is not None:
                rows = remeasured(name, rows, measured)
            both = [r for r in rows if r["ratio"]]
            for r in both:
                if "class" in r:
                    continue
                k = classifier.kernel_class(name, hlo, r["label"]) if classifier else None
                r["class"] = k or thunk_class(r["label"])

            pooled[group] += [(name, r) for r in both]
            if not both:
                print(f"{name:30} {len(rows):>6} {0:>8}")
                continue
            g = geomean([r["ratio"] for r in both])
            program_geomeans[group].append(g)
            covers = sum(r["share"] for r in both)
            summed = sum(r["model_ms"] for r in both) / max(sum(r["ms"] for r in both), 1e-12)
            worst = max(both, key=lambda r: abs(math.log(r["ratio"])))
            label = worst["label"]
            if len(label) > 48:
                label = label[:45] + "..."
            print(f"{name:30} {len(rows):>6} {len(both):>8} {covers:>6.1f}% {g:>8.3g} "
                  f"{summed:>8.3g} {total:>9.3f}  {label} ({worst['ratio']:.3g})")
            listing += [(name, r) for r in both]

    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print()
    print(f"{'over thunks':28} {'count':>6} {'geomean':>8} {'median':>8} {'<=2x':>7} {'<=4x':>7} "
          f"{'min':>8} {'max':>8}")
    for group in ("corpus", "fresh", "scaled"):
        rows = [r for _, r in pooled[group]]
        if not rows:
            continue
        print(distribution(f"{group}: all", [r["ratio"] for r in rows]))
        for k in ("kernel", "gemm", "library", "streamed"):
            sel = [r["ratio"] for r in rows if r["kind"] == k]
            if sel:
                print(distribution(f"{group}: {k}", sel))
        for lo, hi, title in ((0, 1e-3, "< 1 us"), (1e-3, 1e-2, "1-10 us"), (1e-2, 1e-1, "10-100 us"),
                              (1e-1, 1.0, "0.1-1 ms"), (1.0, 1e9, ">= 1 ms")):
            sel = [r["ratio"] for r in rows if lo <= r["ms"] < hi]
            if sel:
                print(distribution(f"{group}: measured {title}", sel))
        classes = sorted({r["class"] for r in rows})
        for cl in classes:
            sel = [r["ratio"] for r in rows if r["class"] == cl]
            print(distribution(f"{group}: {cl}"[:28], sel))
        pg = program_geomeans[group]
        if pg:
            print(f"{group}: geomean of the {len(pg)} program geomeans: {geomean(pg):.3g}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump([{"program": n, "label": r["label"], "class": r["class"],
                        "ms": r["ms"], "calls": r["calls"], "model_ms": r["model_ms"],
                        "ratio": r["ratio"], "roof": r["roof"]}
                       for g in pooled.values() for n, r in g], f, indent=0)
    if measured is not None:
        same_measurement([r for g in pooled.values() for _, r in g])
    if a.compare:
        new = [dict(r, program=n) for g in pooled.values() for n, r in g]
        compare(json.load(open(a.compare)), new)
    if a.kernels:
        print()
        print(f"{'program':30} {'measured ms':>12} {'model ms':>10} {'ratio':>8}  thunk")
        for name, r in listing:
            print(f"{name:30} {r['ms']:>12.5f} {r['model_ms']:>10.4f} {r['ratio']:>8.3g}  {r['label']}")


if __name__ == "__main__":
    sys.exit(main())
