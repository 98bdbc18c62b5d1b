#!/usr/bin/env python3
"""Measure what hloc's generated CPU kernels reach on this machine, next to the cost model's
prediction: the bandwidth of a streaming kernel per working-set size (which cache level it
runs from), the time of a transcendental per element and dtype, and the passes of a
softmax-like row kernel (row max, exp, row sum, divide). These are the facts behind
device/descriptions/cpu.toml's `[memory]`, `[cache]` and `[elementwise]` figures.

Run by hand (never by the test suite); Python 3 standard library only:

    cargo build --release -p hloc
    python3 tools/fit_kernel_rates.py                  # target/release/hloc
    python3 tools/fit_kernel_rates.py /tmp/hloc --repeat 30 --only stream

Each microbenchmark is one HLO module (random inputs) run with
`hloc run --repeat R --profile-json P --trace T`; the figure kept per thunk is its fastest
call in the trace (the runs' best: other processes on the machine slow single calls, rarely
every one), beside the cost model's prediction per call from the profile. The pool runs
each kernel on every core, as in real programs (no pinning). The load average before and
after is printed: rates fitted on a loaded machine are suspect.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stream(ty, n):
    """`y = x * 2 + 1`: one read and one write per element."""
    return f"""HloModule stream
ENTRY e {{
  x = {ty}[{n}] parameter(0)
  c = {ty}[] constant(2)
  b = {ty}[{n}] broadcast(c), dimensions={{}}
  m = {ty}[{n}] multiply(x, b)
  ROOT y = {ty}[{n}] add(m, b)
}}
"""


def unary(op, ty, n):
    """`y = op(x)`: a transcendental per element."""
    return f"""HloModule unary
ENTRY e {{
  x = {ty}[{n}] parameter(0)
  ROOT y = {ty}[{n}] {op}(x)
}}
"""


ADD = """add {
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT s = {ty}[] add(a, b)
}
max {
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT s = {ty}[] maximum(a, b)
}
"""


def row_sum(ty, rows, cols):
    """A row sum: one pass over the matrix."""
    return "HloModule rowsum\n" + ADD.replace("{ty}", ty) + f"""ENTRY e {{
  x = {ty}[{rows},{cols}] parameter(0)
  z = {ty}[] constant(0)
  ROOT r = {ty}[{rows}] reduce(x, z), dimensions={{1}}, to_apply=add
}}
"""


def softmax(ty, rows, cols):
    """`exp(x - max) / sum(exp(x - max))` over rows: jax.nn.softmax."""
    return "HloModule softmax\n" + ADD.replace("{ty}", ty) + f"""ENTRY e {{
  x = {ty}[{rows},{cols}] parameter(0)
  ninf = {ty}[] constant(-inf)
  mx = {ty}[{rows}] reduce(x, ninf), dimensions={{1}}, to_apply=max
  mb = {ty}[{rows},{cols}] broadcast(mx), dimensions={{0}}
  d = {ty}[{rows},{cols}] subtract(x, mb)
  e = {ty}[{rows},{cols}] exponential(d)
  z = {ty}[] constant(0)
  s = {ty}[{rows}] reduce(e, z), dimensions={{1}}, to_apply=add
  sb = {ty}[{rows},{cols}] broadcast(s), dimensions={{0}}
  ROOT y = {ty}[{rows},{cols}] divide(e, sb)
}}
"""


def width(ty):
    return {"f32": 4, "f64": 8, "bf16": 2, "f16": 2}[ty]


def benches():
    """(group, name, module text, elements, bytes moved)."""
    out = []
    for n in (1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24):
        out.append(("stream", f"f32 stream {n * 8 / 1e6:.2f} MB", stream("f32", n), n, 8 * n))
    for ty in ("f32", "f64"):
        for op in ("exponential", "log", "tanh", "logistic", "sine"):
            for n in (1 << 16, 1 << 20):
                out.append(("unary", f"{ty} {op} {n}", unary(op, ty, n), n, 2 * n * width(ty)))
    for rows, cols in ((256, 256), (4096, 1024), (256, 32768), (1024, 4096)):
        n = rows * cols
        out.append(("rowsum", f"f32 row sum {rows}x{cols}", row_sum("f32", rows, cols), n, 4 * n))
        out.append(("softmax", f"f32 softmax {rows}x{cols}", softmax("f32", rows, cols), n, 8 * n))
    out.append(("softmax", "f64 softmax 1024x4096", softmax("f64", 1024, 4096), 1 << 22, 8 << 23))
    return out


def run_one(hloc, text, repeat, tmp, core=None):
    """[(label, best call seconds, model seconds per call)] of one module's thunks."""
    hlo = os.path.join(tmp, "m.hlo")
    with open(hlo, "w") as f:
        f.write(text)
    prof, trace = os.path.join(tmp, "p.json"), os.path.join(tmp, "t.json")
    env = dict(os.environ, HLOC_CACHE_DIR=os.path.join(tmp, "cache"))
    pin = ["taskset", "-c", str(core)] if core is not None else []
    p = subprocess.run(pin + [hloc, "run", hlo, "--repeat", str(repeat), "--profile-json", prof,
                        "--trace", trace], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip()[-300:])
    profile = json.load(open(prof))
    events = json.load(open(trace))
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    best = {}
    for e in events:
        if e.get("ph") == "X":
            best[e["name"]] = min(best.get(e["name"], math.inf), e["dur"] * 1e-6)
    out = []
    for t in profile["thunks"]:
        calls = max(t["calls"], 1)
        model = t["model_ms"] * 1e-3 / calls if t["model_ms"] is not None else None
        out.append((t["label"], best.get(t["label"], t["ms"] * 1e-3 / calls), model))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("hloc", nargs="?", default=os.path.join(ROOT, "target/release/hloc"))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--core", type=int,
                    help="pin each run to this core (the pool then has one thread): per-core "
                    "figures, and the best call is less often one another process interrupted")
    ap.add_argument("--only", help="comma-separated groups (stream, unary, rowsum, softmax)")
    a = ap.parse_args()
    todo = benches()
    if a.only:
        keep = set(a.only.split(","))
        todo = [b for b in todo if b[0] in keep]
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"(cores: {os.cpu_count()})")
    print(f"{'benchmark':32} {'thunks':>6} {'best ms':>9} {'model ms':>9} {'m/meas':>7} "
          f"{'ns/elem':>8} {'GB/s':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for _, name, text, elems, moved in todo:
            try:
                rows = run_one(a.hloc, text, a.repeat, tmp, a.core)
            except RuntimeError as e:
                print(f"{name:32} failed: {e}")
                continue
            rows = [r for r in rows if not r[0].startswith("copy")]
            best = sum(r[1] for r in rows)
            model = sum(r[2] for r in rows) if all(r[2] is not None for r in rows) else None
            ratio = f"{model / best:7.3f}" if model and best > 0 else "      -"
            mtxt = f"{model * 1e3:9.4f}" if model is not None else "        -"
            print(f"{name:32} {len(rows):>6} {best * 1e3:9.4f} {mtxt} {ratio} "
                  f"{best / elems * 1e9:8.3f} {moved / best / 1e9:7.2f}")
            sys.stdout.flush()
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
