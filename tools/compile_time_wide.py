#!/usr/bin/env python3
"""Cold compile times of issue 36 item 9's chain modules (tools/gen_wide_module.py), for
one or more hloc binaries and, with --xla, XLA:CPU.

For every group count and both reduce forms (over dimension 1, where fusion nests the
chain's reductions, and over dimension 0) this writes the module to a temporary folder and
times, as wall seconds,

    hloc compile FILE            with an empty HLOC_CACHE_DIR per run (a cold compile)

for each binary given (--hloc NAME=PATH, repeatable), and XLA:CPU's compile of the same
text in this process (hlo_module_from_text, then compile_and_load, as bench_vs_xla.py).
A run past --timeout seconds is reported as `>T`. Prints a Markdown table.

Usage: tools/compile_time_wide.py --hloc before=/tmp/hloc-old --hloc after=target/release/hloc
           [--groups 250,625,1250,2500] [--dims 1,0] [--xla] [--timeout 900]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_wide_module import module  # noqa: E402


def hloc_seconds(binary, path, timeout):
    """Wall seconds of a cold `hloc compile`, or `>timeout`, or the error's last line."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, HLOC_CACHE_DIR=cache)
        t0 = time.perf_counter()
        try:
            p = subprocess.run([binary, "compile", path, "--progress", "never"],
                               capture_output=True, text=True, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f">{timeout}"
        wall = time.perf_counter() - t0
    if p.returncode != 0:
        return "error: " + (p.stderr.strip().splitlines() or ["?"])[-1][:80]
    return f"{wall:.1f}"


def xla_seconds(text):
    """Wall seconds of XLA:CPU compiling the module text."""
    import jax

    jax.config.update("jax_platforms", "cpu")
    import jax.extend  # noqa: F401
    from jax._src.lib import xla_client as xc

    backend = jax.extend.backend.get_backend("cpu")
    t0 = time.perf_counter()
    mod = xc.hlo.hlo_module_from_text(text)
    comp = xc.XlaComputation(mod.as_serialized_hlo_module_proto())
    mlir = jax._src.lib._jax.mlir.xla_computation_to_mlir_module(comp)
    devs = backend.devices()[:1]
    backend.compile_and_load(mlir, xc.DeviceList(tuple(devs)), xc.CompileOptions())
    return f"{time.perf_counter() - t0:.1f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hloc", action="append", default=[], metavar="NAME=PATH",
                   help="a binary to time (repeatable)")
    p.add_argument("--groups", default="250,625,1250,2500")
    p.add_argument("--dims", default="1,0")
    p.add_argument("--xla", action="store_true", help="also time XLA:CPU's compile")
    p.add_argument("--timeout", type=int, default=900)
    args = p.parse_args()
    binaries = []
    for spec in args.hloc:
        name, _, path = spec.partition("=")
        if not path:
            p.error(f"--hloc takes NAME=PATH, not {spec!r}")
        binaries.append((name, path))
    if not binaries and not args.xla:
        p.error("nothing to time: give --hloc NAME=PATH or --xla")
    head = ["instructions", "reduce over"] + [f"{n} s" for n, _ in binaries]
    if args.xla:
        head.append("XLA:CPU s")
    print("| " + " | ".join(head) + " |")
    print("| " + " | ".join(["---:"] * len(head)) + " |")
    with tempfile.TemporaryDirectory() as work:
        for dim in [int(d) for d in args.dims.split(",")]:
            for groups in [int(g) for g in args.groups.split(",")]:
                text = module(groups, dim, 8, 16)
                path = os.path.join(work, f"wide_{groups}_{dim}.hlo")
                with open(path, "w") as f:
                    f.write(text)
                row = [str(4 * groups + 2), f"dim {dim}"]
                row += [hloc_seconds(b, path, args.timeout) for _, b in binaries]
                if args.xla:
                    row.append(xla_seconds(text))
                print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
