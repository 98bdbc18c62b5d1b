#!/usr/bin/env python3
"""Compares hloc's memory statistics over the corpus (issue 32): two hloc binaries
against each other, or one against XLA:CPU's own buffer assignment of the same modules.

Two binaries: runs `BIN compile FILE --stats --no-timing` for every corpus module (before
and after XLA's optimizations) with both and prints buffer_bytes, temp_bytes and
peak_bytes side by side, with the geometric mean of the ratios and the totals.

Against XLA (`--xla`): compiles each `before_optimizations.hlo` with XLA:CPU through JAX
(`hlo_module_from_text`, the path of tools/bench_vs_xla.py) with `xla_dump_to` set, and
reads XLA's figures from its own dumps: total bytes (`Total bytes:` of the
memory-usage report, every allocation: parameters, outputs, constants, thread-local and
the preallocated temp), temp bytes (the `preallocated-temp` allocation of the
buffer-assignment dump, what XLA's `temp_size_in_bytes` reports) and the peak (the live
bytes at the peak step of the live-range dump). hloc's are its `--stats` of the same file:
buffer_bytes, temp_bytes, peak_bytes (same definitions). Prints one row per program with
hloc/XLA ratios, then the geometric means and totals. `--markdown` prints the table in
Markdown for a README. A module whose compares carry `order=TOTAL`, which an older XLA's
parser refuses, is given to XLA without it (marked `*`: it changes how floats compare, not
any buffer's size).

`--xla-cache FILE` keeps XLA's figures per module text (a JSON file keyed by the text's
SHA-256), so a second run compiles nothing with XLA; `--before HLOC` adds a `buffer
before` column (another hloc binary's buffer_bytes of the same module).

usage: tools/memory_stats_compare.py OLD_HLOC NEW_HLOC [--corpus DIR]
       tools/memory_stats_compare.py --xla HLOC [--corpus DIR] [--dir DIR ...] [--markdown]
                                     [--xla-cache FILE] [--before HLOC]
"""
import argparse
import hashlib
import json
import math
import pathlib
import re
import subprocess
import sys
import tempfile

KEYS = ("buffer_bytes", "temp_bytes", "peak_bytes")


def stats(binary, path):
    r = subprocess.run([binary, "compile", str(path), "--stats", "--no-timing"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return None
    out = {}
    for line in r.stdout.splitlines():
        k, _, v = line.partition(":")
        if k.strip() in KEYS:
            out[k.strip()] = int(v.strip())
    return out if len(out) == len(KEYS) else None


def geomean(ratios):
    return math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")


def compare_binaries(a):
    rows = []
    for d in sorted(pathlib.Path(a.corpus).iterdir()):
        for stage in ("before_optimizations", "after_optimizations"):
            f = d / f"{stage}.hlo"
            if not f.exists():
                continue
            o, n = stats(a.old, f), stats(a.new, f)
            if o is None or n is None:
                print(f"{d.name}/{stage}: no stats (old {o is not None}, new {n is not None})",
                      file=sys.stderr)
                continue
            rows.append((f"{d.name}/{stage[:-14]}", o, n))
    print("module\t" + "\t".join(f"{k} old\tnew" for k in KEYS))
    for name, o, n in rows:
        print(name + "\t" + "\t".join(f"{o[k]}\t{n[k]}" for k in KEYS))
    for k in KEYS:
        ratios = [n[k] / o[k] for _, o, n in rows if o[k] > 0 and n[k] > 0]
        to, tn = sum(o[k] for _, o, _ in rows), sum(n[k] for _, _, n in rows)
        print(f"# {k}: geomean new/old {geomean(ratios):.3f} over {len(ratios)}; "
              f"total old {to} new {tn}")


def xla_dump_figures(dump_dir):
    """(total, temp, peak) from XLA's dumps of one module in `dump_dir`."""
    d = pathlib.Path(dump_dir)
    report = next(d.glob("*after_optimizations-memory-usage-report.txt"))
    assignment = next(d.glob("*after_optimizations-buffer-assignment.txt"))
    live = next(d.glob("*after_optimizations-live-range.txt"))
    total = sum(int(m) for m in re.findall(r"^Total bytes: (\d+)", report.read_text(), re.M))
    temp = sum(int(m) for m in re.findall(r"^allocation \d+: size (\d+), preallocated-temp",
                                          assignment.read_text(), re.M))
    peak = 0
    text = live.read_text()
    m = re.search(r"Live ranges at \d+ \(peak\):\n((?:    .*\n)*)", text)
    if m:
        sizes = re.findall(r": (\d+) bytes \(cumulative", m.group(1))
        peak = sum(int(s) for s in sizes)
    return total, temp, peak


def xla_figures(hlo_path, work):
    """XLA:CPU's (total, temp, peak) for the module text at `hlo_path`, and whether the
    text had to drop `order=TOTAL` from its compares (an attribute newer than this XLA's
    parser; it changes how floats compare, not any buffer's size)."""
    import jax
    import jax.extend  # noqa: F401
    from jax._src.lib import xla_client as xc
    backend = jax.extend.backend.get_backend("cpu")
    text = pathlib.Path(hlo_path).read_text()
    edited = False
    try:
        mod = xc.hlo.hlo_module_from_text(text)
    except Exception as e:
        if 'unexpected attribute "order"' not in str(e):
            raise
        text, n = re.subn(r", order=TOTAL\b", "", text)
        edited = n > 0
        mod = xc.hlo.hlo_module_from_text(text)
    comp = xc.XlaComputation(mod.as_serialized_hlo_module_proto())
    mlir = jax._src.lib._jax.mlir.xla_computation_to_mlir_module(comp)
    opts = xc.CompileOptions()
    opts.executable_build_options.debug_options.xla_dump_to = str(work)
    backend.compile_and_load(mlir, xc.DeviceList(tuple(backend.devices()[:1])), opts)
    return xla_dump_figures(work), edited


def compare_xla(a):
    programs = []
    for root in [a.corpus] + a.dir:
        for d in sorted(pathlib.Path(root).iterdir()):
            f = d / "before_optimizations.hlo"
            if f.exists():
                programs.append((d.name, f))
    rows = []
    cache_path = pathlib.Path(a.xla_cache) if a.xla_cache else None
    cache = json.loads(cache_path.read_text()) if cache_path and cache_path.exists() else {}
    before = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, f) in enumerate(programs):
            h = stats(a.hloc, f)
            if h is None:
                print(f"{name}: hloc gave no stats", file=sys.stderr)
                continue
            key = hashlib.sha256(f.read_bytes()).hexdigest()
            if key in cache:
                *x, edited = cache[key]
                x = tuple(x)
            else:
                try:
                    x, edited = xla_figures(f, pathlib.Path(tmp) / str(k))
                except Exception as e:  # XLA refusing a module is reported, not fatal
                    print(f"{name}: XLA: {e}", file=sys.stderr)
                    continue
                cache[key] = [*x, edited]
                if cache_path:
                    cache_path.write_text(json.dumps(cache, indent=0, sort_keys=True))
            if a.before:
                b = stats(a.before, f)
                before[name] = b["buffer_bytes"] if b else None
            rows.append((name + (" *" if edited else ""), h, x))
    cols = ("program", "hloc temp", "XLA temp", "hloc peak", "XLA peak", "hloc buffer",
            "XLA total", "temp", "peak", "buffer") + (("buffer before",) if a.before else ())
    ratio = (lambda n, d: f"{n / d:.3f}" if d > 0 else ("1.000" if n == 0 else "inf"))
    lines = []
    for name, h, (xt, xtemp, xpeak) in rows:
        line = (name, h["temp_bytes"], xtemp, h["peak_bytes"], xpeak, h["buffer_bytes"],
                xt, ratio(h["temp_bytes"], xtemp), ratio(h["peak_bytes"], xpeak),
                ratio(h["buffer_bytes"], xt))
        if a.before:
            b = before.get(name.removesuffix(" *"))
            line += (ratio(b, xt) if b is not None else "-",)
        lines.append(line)
    if a.markdown:
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for line in lines:
            print("| " + " | ".join(str(v) for v in line) + " |")
    else:
        print("\t".join(cols))
        for line in lines:
            print("\t".join(str(v) for v in line))
    summary = []
    for key, xi in (("temp_bytes", 1), ("peak_bytes", 2), ("buffer_bytes", 0)):
        ratios = [h[key] / x[xi] for _, h, x in rows if h[key] > 0 and x[xi] > 0]
        th, tx = sum(h[key] for _, h, _ in rows), sum(x[xi] for _, _, x in rows)
        summary.append(f"# {key}: geomean hloc/XLA {geomean(ratios):.3f} over {len(ratios)}; "
                       f"total hloc {th} XLA {tx} ({th / tx if tx else float('nan'):.3f})")
    if a.before:
        pairs = [(before.get(name.removesuffix(" *")), x[0]) for name, _, x in rows]
        pairs = [(b, xt) for b, xt in pairs if b and xt > 0]
        tb, tx = sum(b for b, _ in pairs), sum(xt for _, xt in pairs)
        summary.append(f"# buffer_bytes before: geomean hloc/XLA "
                       f"{geomean([b / xt for b, xt in pairs]):.3f} over {len(pairs)}; "
                       f"total hloc {tb} XLA {tx} ({tb / tx if tx else float('nan'):.3f})")
    print("\n".join(summary))
    if any(name.endswith(" *") for name, _, _ in rows):
        print("# *: XLA compiled the module without `order=TOTAL` (its parser predates it)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="*", help="OLD_HLOC NEW_HLOC")
    ap.add_argument("--xla", metavar="HLOC", help="compare HLOC against XLA:CPU's dumps")
    ap.add_argument("--corpus", default=str(pathlib.Path(__file__).resolve().parent.parent / "corpus"))
    ap.add_argument("--dir", action="append", default=[],
                    help="more program directories (NAME/before_optimizations.hlo), --xla only")
    ap.add_argument("--markdown", action="store_true", help="--xla: a Markdown table")
    ap.add_argument("--xla-cache", help="--xla: JSON file keeping XLA's figures per module text")
    ap.add_argument("--before", help="--xla: another hloc whose buffer_bytes/XLA is a column")
    a = ap.parse_args()
    if a.xla:
        a.hloc = a.xla
        compare_xla(a)
    elif len(a.binaries) == 2:
        a.old, a.new = a.binaries
        compare_binaries(a)
    else:
        ap.error("give OLD_HLOC NEW_HLOC, or --xla HLOC")


if __name__ == "__main__":
    main()
