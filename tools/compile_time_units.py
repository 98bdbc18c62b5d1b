#!/usr/bin/env python3
"""gcc's CPU time per translation unit of hloc's cold compiles, for one or more binaries.

A loaded machine stretches compile walls 2-10x, so comparing binaries by wall time needs a
quiet machine; the compiler processes' own CPU time (user + sys) barely moves with load. For
each HLO file this cold-compiles it (`hloc compile`, an empty HLOC_CACHE_DIR per run) with
HLOC_CC set to a wrapper that times every compiler process (bash `time`, ms resolution) and
records whether it built a unit (`-c`, or the one-step `-shared` of a one-unit module) or
linked the units. The binaries run alternately, --rounds times; each keeps its best run by
the two-core critical path: the slowest unit's CPU plus the link's. Prints a Markdown table
per file: units, slowest unit + link, the sum of the units + link, each binary's.

  python3 tools/compile_time_units.py --hloc start=/tmp/hloc-start --hloc new=target/release/hloc \\
      --rounds 3 /tmp/up1/resnet_block/before_optimizations.hlo ...
"""

import argparse
import os
import subprocess
import sys
import tempfile

WRAPPER = r"""#!/bin/bash
# Times one compiler process for compile_time_units.py (appends to $CTU_LOG).
if [ "$1" = "--version" ]; then exec "$CTU_CC" "$@"; fi
kind=link; for a in "$@"; do case "$a" in *.c) kind=unit;; esac; done
TIMEFORMAT="%U %S"
{ time "$CTU_CC" "$@" 2>"$CTU_LOG.err.$$"; } 2>"$CTU_LOG.t.$$"
rc=$?
cat "$CTU_LOG.err.$$" >&2
echo "$(cat "$CTU_LOG.t.$$") $kind" >> "$CTU_LOG"
rm -f "$CTU_LOG.err.$$" "$CTU_LOG.t.$$"
exit $rc
"""


def one_compile(binary, path, tmp, cc):
    """(slowest unit + link, sum of units + link, units) in CPU ms, or None on failure."""
    log = os.path.join(tmp, "log")
    if os.path.exists(log):
        os.remove(log)
    cache = tempfile.mkdtemp(dir=tmp)
    env = dict(os.environ, HLOC_CC=os.path.join(tmp, "cc.sh"), CTU_CC=cc, CTU_LOG=log,
               HLOC_CACHE_DIR=cache)
    p = subprocess.run([binary, "compile", path], env=env, capture_output=True, text=True)
    subprocess.run(["rm", "-rf", cache])
    if p.returncode != 0 or not os.path.exists(log):
        return None
    units, link = [], 0.0
    for line in open(log):
        user, sys_, kind = line.split()
        ms = (float(user) + float(sys_)) * 1000
        if kind == "unit":
            units.append(ms)
        else:
            link += ms
    if not units:
        return None
    return max(units) + link, sum(units) + link, len(units)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hloc", action="append", required=True, metavar="NAME=PATH",
                    help="a binary to time (repeatable)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cc", default=os.environ.get("HLOC_CC") or "cc")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    binaries = [tuple(h.split("=", 1)) if "=" in h else (h, h) for h in args.hloc]
    head = "| program | units | " + " | ".join(
        f"{n}: slowest+link / sum+link (ms CPU)" for n, _ in binaries) + " |"
    print(head)
    print("|---|---:|" + "---:|" * len(binaries))
    with tempfile.TemporaryDirectory() as tmp:
        wrapper = os.path.join(tmp, "cc.sh")
        with open(wrapper, "w") as f:
            f.write(WRAPPER)
        os.chmod(wrapper, 0o755)
        for path in args.files:
            best = [None] * len(binaries)
            for _ in range(args.rounds):
                for i, (_, binary) in enumerate(binaries):
                    r = one_compile(binary, path, tmp, args.cc)
                    if r and (best[i] is None or r[0] < best[i][0]):
                        best[i] = r
            name = os.path.basename(os.path.dirname(os.path.abspath(path)))
            units = next((b[2] for b in best if b), "-")
            cells = [f"{b[0]:.0f} / {b[1]:.0f}" if b else "failed" for b in best]
            print(f"| {name} | {units} | " + " | ".join(cells) + " |")
            sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
