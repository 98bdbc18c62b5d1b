#!/usr/bin/env python3
"""Compares the memory statistics of two hloc binaries over the corpus (issue 32).

Runs `BIN compile FILE --stats --no-timing` for every corpus module (before and after
XLA's optimizations) with both binaries and prints buffer_bytes, temp_bytes and
peak_bytes side by side, with the geometric mean of the ratios and the totals.

usage: tools/memory_stats_compare.py OLD_HLOC NEW_HLOC [--corpus DIR]
"""
import argparse
import math
import pathlib
import subprocess
import sys

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--corpus", default=str(pathlib.Path(__file__).resolve().parent.parent / "corpus"))
    a = ap.parse_args()
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
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
        to, tn = sum(o[k] for _, o, _ in rows), sum(n[k] for _, _, n in rows)
        print(f"# {k}: geomean new/old {geo:.3f} over {len(ratios)}; total old {to} new {tn}")


if __name__ == "__main__":
    main()
