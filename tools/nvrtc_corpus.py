#!/usr/bin/env python3
"""Compares two hloc binaries' CUDA kernels over the corpus by what ptxas reports: each
binary compiles every `corpus/*/before_optimizations.hlo` for the h100 target (`hloc
compile --target h100 --dump-to`), each `.kernels.cu` goes through NVRTC for sm_90
(tools/nvrtc_report.py's ctypes binding), and kernels are paired by program and name.
Prints the register sum of each side, how many kernels went down, stayed or went up, the
kernels that spill, and the largest increases and decreases. A change to the CUDA printer
is judged by this table, not by one kernel.

    python3 tools/nvrtc_corpus.py --hloc NEW --hloc-before OLD [--corpus corpus]
        [--out /tmp/nvrtc_corpus] [--only PROGRAM ...] [--worst 5]

Exit status 1 when the new binary's kernels spill where the old one's did not."""
import argparse
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nvrtc_report import compile_cu, load_nvrtc, report  # noqa: E402


def kernels_of(hloc, hlo, out_dir):
    """{kernel: (registers, spill stores + loads)} of program `hlo` compiled by `hloc`,
    or None when hloc or NVRTC rejects it."""
    # hloc's own NVRTC step is skipped (no NVRTC on its loader path): the dump is enough.
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    r = subprocess.run(
        [hloc, "compile", hlo, "--target", "h100", "--dump-to", out_dir],
        capture_output=True,
        text=True,
        env=env,
    )
    cus = sorted(glob.glob(os.path.join(out_dir, "*.kernels.cu")))
    if not cus:
        print(f"  {hlo}: no .kernels.cu ({r.stderr.strip()[-200:]})", file=sys.stderr)
        return None
    found = {}
    for cu in cus:
        rc, log, _ = compile_cu(load_nvrtc(), open(cu).read(), "sm_90", [])
        if rc != 0:
            print(f"  {cu}: NVRTC rejected it:\n{log[-2000:]}", file=sys.stderr)
            return None
        for name, regs, _stack, st, ld in report(log):
            found[f"{os.path.basename(cu)}:{name}"] = (regs, st + ld)
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hloc", required=True)
    ap.add_argument("--hloc-before", required=True)
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(__file__), "..", "corpus"))
    ap.add_argument("--out", default="/tmp/nvrtc_corpus")
    ap.add_argument("--only", nargs="*", help="program names (default: every program)")
    ap.add_argument("--worst", type=int, default=5)
    a = ap.parse_args()
    progs = sorted(
        os.path.basename(os.path.dirname(p))
        for p in glob.glob(os.path.join(a.corpus, "*", "before_optimizations.hlo"))
    )
    if a.only:
        progs = [p for p in progs if p in a.only]
    pairs = []  # (program, kernel, before regs, after regs, before spills, after spills)
    for prog in progs:
        hlo = os.path.join(a.corpus, prog, "before_optimizations.hlo")
        old = kernels_of(a.hloc_before, hlo, os.path.join(a.out, "before", prog))
        new = kernels_of(a.hloc, hlo, os.path.join(a.out, "after", prog))
        if old is None or new is None:
            continue
        if set(old) != set(new):
            print(f"  {prog}: different kernels, skipped", file=sys.stderr)
            continue
        for k in sorted(old):
            pairs.append((prog, k.split(":")[1], old[k][0], new[k][0], old[k][1], new[k][1]))
    if not pairs:
        sys.exit("no kernels compared")
    down = sum(1 for p in pairs if p[3] < p[2])
    same = sum(1 for p in pairs if p[3] == p[2])
    up = sum(1 for p in pairs if p[3] > p[2])
    programs = len({p[0] for p in pairs})
    print(f"{len(pairs)} kernels of {programs} programs (sm_90)\n")
    print("| printer | fewer registers | same | more | registers (sum) | spilling kernels |")
    print("|---|---|---|---|---|---|")
    print(f"| before | - | - | - | {sum(p[2] for p in pairs):,} | {sum(1 for p in pairs if p[4])} |")
    print(f"| after | {down} | {same} | {up} | {sum(p[3] for p in pairs):,} | {sum(1 for p in pairs if p[5])} |")
    by_delta = sorted(pairs, key=lambda p: p[3] - p[2])
    for title, rows in [
        ("largest increases", [p for p in reversed(by_delta) if p[3] > p[2]]),
        ("largest decreases", [p for p in by_delta if p[3] < p[2]]),
    ]:
        print(f"\n{title}:\n\n| program | kernel | before | after |\n|---|---|---:|---:|")
        for p in rows[: a.worst]:
            print(f"| {p[0]} | {p[1]} | {p[2]} | {p[3]} |")
    new_spills = [p for p in pairs if p[5] and not p[4]]
    for p in new_spills:
        print(f"NEW SPILL: {p[0]} {p[1]} ({p[5]} bytes)")
    sys.exit(1 if new_spills else 0)


if __name__ == "__main__":
    main()
