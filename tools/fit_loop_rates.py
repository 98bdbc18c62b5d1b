#!/usr/bin/env python3
"""Fit the `[loops]` rates of device/descriptions/cpu.toml: what a contraction (a dot or a
convolution) costs when hloc's elemental emitter runs it as a loop, one accumulator per
output element summed in order (no library call).

Run by hand (never by the test suite); Python 3 standard library only:

    cargo build --release -p hloc
    python3 tools/fit_loop_rates.py                    # target/release/hloc
    python3 tools/fit_loop_rates.py /tmp/hloc --runs 5

Each microbenchmark is one HLO module whose only thunk is such a loop kernel (a depthwise
convolution, its weight gradient, an integer dot; the forms the fresh programs run as loops),
run with `hloc run --repeat R --profile-json` pinned to one core (`taskset -c CORE`: the
runtime's pool then has one thread, so the kernel's time is one core's). Before every run the
script waits (up to --wait seconds) until some core has been idle (< --busy percent busy
over one second, from /proc/stat) and pins the run there; it keeps the fastest of --runs runs
and prints the core's busy share before the run and the load average, so a reader can see
how quiet the measurement was.

What is fitted (the cost model's `fusion::cost_contraction`):
- `contraction_{f32,f64,half,int}_flops_per_unit`: the rate of the forms whose taps stay in
  the first-level cache (the depthwise convolutions: the sum's dependency chain, one
  multiply-add per FMA latency, is all that limits them), per operand type: the median of
  those benchmarks' flops per second;
- `far_tap_s`: the seconds of one tap whose operand moves by a page or more per step of the
  innermost loop (a depthwise weight gradient summed over the batch: every tap a cache and
  TLB miss the prefetchers do not follow), from those benchmarks' time per tap beyond the
  chain's.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def depthwise(ty, n, h, c, k, stride=1):
    """A depthwise convolution `[n,h,h,c] * [k,k,1,c]` (feature_group_count = c), 'same'
    padding: the innermost loop walks the window's columns, `c` elements apart."""
    pad = (k - 1) // 2
    hi = k - 1 - pad
    o = (h + stride - 1) // stride
    return f"""HloModule dw
ENTRY e {{
  x = {ty}[{n},{h},{h},{c}] parameter(0)
  w = {ty}[{k},{k},1,{c}] parameter(1)
  ROOT y = {ty}[{n},{o},{o},{c}] convolution(x, w), window={{size={k}x{k} stride={stride}x{stride} pad={pad}_{hi}x{pad}_{hi}}}, dim_labels=b01f_01io->b01f, feature_group_count={c}
}}
"""


def depthwise_grad(ty, n, h, c, k):
    """A depthwise convolution's weight gradient (batch_group_count = c): each of the
    `k*k*c` outputs sums `n*h*h` taps; the innermost loop walks the batch, a whole image
    apart."""
    pad = (k - 1) // 2
    hi = k - 1 - pad
    return f"""HloModule dwg
ENTRY e {{
  x = {ty}[{n},{h},{h},{c}] parameter(0)
  g = {ty}[{n},{h},{h},{c}] parameter(1)
  ROOT dw = {ty}[{k},{k},1,{c}] convolution(x, g), window={{size={h}x{h} pad={pad}_{hi}x{pad}_{hi}}}, dim_labels=f01b_i01o->01bf, batch_group_count={c}
}}
"""


def int_dot(m, k, n):
    """An `s32` dot (no library GEMM takes integers): a contiguous row of the lhs against a
    column of the rhs."""
    return f"""HloModule idot
ENTRY e {{
  x = s32[{m},{k}] parameter(0)
  y = s32[{k},{n}] parameter(1)
  ROOT t = s32[{m},{n}] dot(x, y), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


# (name, class, module text): class `near` (taps in the first-level cache) per type, `far`
# (page-strided taps).
BENCHES = [
    ("dw3x3_f32", "near.f32", depthwise("f32", 8, 32, 128, 3)),
    ("dw7x7_f32", "near.f32", depthwise("f32", 4, 56, 96, 7)),
    ("dw3x3s2_f32", "near.f32", depthwise("f32", 16, 24, 64, 3, 2)),
    ("dw3x3_f64", "near.f64", depthwise("f64", 8, 32, 128, 3)),
    ("dw7x7_f64", "near.f64", depthwise("f64", 4, 56, 96, 7)),
    ("dw3x3_bf16", "near.half", depthwise("bf16", 16, 24, 128, 3)),
    ("dw7x7_bf16", "near.half", depthwise("bf16", 4, 56, 96, 7)),
    ("dot_s32", "near.int", int_dot(256, 512, 256)),
    ("dwgrad3_f32", "far", depthwise_grad("f32", 8, 32, 128, 3)),
    ("dwgrad3_bf16", "far", depthwise_grad("bf16", 16, 24, 128, 3)),
    ("dwgrad7_f32", "far", depthwise_grad("f32", 4, 56, 96, 7)),
]


def core_busy(seconds=1.0):
    """Busy share (percent) of every core over `seconds`, from /proc/stat."""
    def sample():
        out = {}
        for line in open("/proc/stat"):
            if line.startswith("cpu") and line[3].isdigit():
                f = line.split()
                vals = list(map(int, f[1:]))
                idle = vals[3] + vals[4]
                out[int(f[0][3:])] = (sum(vals), idle)
        return out
    a = sample()
    time.sleep(seconds)
    b = sample()
    busy = {}
    for c in a:
        total = b[c][0] - a[c][0]
        idle = b[c][1] - a[c][1]
        busy[c] = 100.0 * (1 - idle / total) if total > 0 else 100.0
    return busy


def idle_core(limit, wait):
    """(core, its busy percent): the first core under `limit` percent busy, waiting up to
    `wait` seconds; else the least busy one."""
    deadline = time.time() + wait
    while True:
        busy = core_busy()
        core = min(busy, key=busy.get)
        if busy[core] < limit or time.time() > deadline:
            return core, busy[core]


def run_one(hloc, path, repeat, core, cache):
    """(ms per call, flops per call) of the module's slowest kernel thunk."""
    with tempfile.NamedTemporaryFile(suffix=".json") as j:
        cmd = ["taskset", "-c", str(core), hloc, "run", path, "--repeat", str(repeat),
               "--profile", "--profile-json", j.name]
        env = dict(os.environ, HLOC_CACHE_DIR=cache)
        subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=600)
        prof = json.load(open(j.name))
    kernels = [t for t in prof["thunks"] if t["label"].startswith("kernel ")]
    t = max(kernels, key=lambda t: t["ms"])
    return t["ms"] / t["calls"], t["flops"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("hloc", nargs="?", default=os.path.join(ROOT, "target/release/hloc"))
    ap.add_argument("--runs", type=int, default=3, help="runs per benchmark (the fastest is kept)")
    ap.add_argument("--repeat", type=int, default=5, help="calls per run")
    ap.add_argument("--busy", type=float, default=15.0, help="percent busy a core may be")
    ap.add_argument("--wait", type=float, default=60.0, help="seconds to wait for an idle core")
    ap.add_argument("--json", help="write the measurements here")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache")
        for name, cls, text in BENCHES:
            path = os.path.join(tmp, name + ".hlo")
            with open(path, "w") as f:
                f.write(text)
            # Compile once (cached) so the timed runs see no compile.
            run_one(a.hloc, path, 1, 0, cache)
            best = None
            busies = []
            for _ in range(a.runs):
                core, busy = idle_core(a.busy, a.wait)
                busies.append(busy)
                ms, flops = run_one(a.hloc, path, a.repeat, core, cache)
                if best is None or ms < best[0]:
                    best = (ms, flops)
            ms, flops = best
            rate = flops / (ms * 1e-3)
            taps = flops / 2.0
            rows.append({"name": name, "class": cls, "ms": ms, "flops": flops,
                         "flops_per_s": rate, "tap_ns": ms * 1e6 / taps,
                         "core_busy_before": busies, "load": os.getloadavg()[0]})
            print(f"{name:14} {cls:10} {ms:10.3f} ms {flops / 1e6:10.2f} MFLOP "
                  f"{rate / 1e9:8.3f} GFLOP/s/core {ms * 1e6 / taps:8.3f} ns/tap  "
                  f"(core busy before: {', '.join(f'{b:.0f}%' for b in busies)}; "
                  f"load {os.getloadavg()[0]:.1f})", flush=True)
    print()
    print("[loops]")
    for ty in ("f32", "f64", "half", "int"):
        sel = [r["flops_per_s"] for r in rows if r["class"] == "near." + ty]
        if sel:
            print(f"contraction_{ty}_flops_per_unit = {statistics.median(sel):.3g}")
    near_f32 = statistics.median(r["tap_ns"] for r in rows if r["class"] == "near.f32")
    far = [r["tap_ns"] - near_f32 for r in rows if r["class"] == "far"]
    if far:
        print(f"far_tap_s = {statistics.median(far) * 1e-9:.3g}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
