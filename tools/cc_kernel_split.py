#!/usr/bin/env python3
"""Where the C compiler's time goes, kernel by kernel, and the share of convolution patch
(im2col) kernels in it.

For each HLO file: `hloc compile --dump-to` (a fresh HLOC_CACHE_DIR), then every kernel of
the dumped C is compiled alone after the file's prelude (everything before the first
kernel) with hloc's flags (`-O2 -ftree-vectorize -fvect-cost-model=dynamic -march=native
-fno-math-errno -fPIC -std=gnu11 -c`); its gcc CPU time (user + system, best of
--rounds) minus the prelude's alone is the kernel's. A kernel is a patch kernel when its
fused computation (in the dumped after_optimizations module) builds im2col patches: a
`gather` of iota-computed indices (conv-to-gemm since the tap loop) or a `concatenate`
of `pad`s or `slice`s (the stack of one pad(slice) per tap before it). CPU time, not
wall: other builds on the machine stretch wall times, not the compiler's own work.

  python3 tools/cc_kernel_split.py --hloc target/release/hloc /tmp/up1/resnet18_forward/*.hlo
"""

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile

FLAGS = [
    "-O2",
    "-ftree-vectorize",
    "-fvect-cost-model=dynamic",
    "-march=native",
    "-fno-math-errno",
    "-fPIC",
    "-std=gnu11",
    "-c",
]

KERNEL_START = re.compile(r"^static .*\bvoid hloc_k\d+_")


def cpu_of(cmd):
    """CPU seconds (user + system) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compile_cpu(cc, text, rounds, tmp):
    src = os.path.join(tmp, "k.c")
    with open(src, "w") as f:
        f.write(text)
    obj = os.path.join(tmp, "k.o")
    return min(cpu_of([cc, *FLAGS, "-o", obj, src]) for _ in range(rounds))


def split_kernels(c_text):
    """(prelude, [(fusion name, kernel text)]): a kernel runs from its first `static ...
    void hloc_kN_` line to the next one."""
    lines = c_text.splitlines(keepends=True)
    starts = []
    for i, line in enumerate(lines):
        if KERNEL_START.match(line):
            name = re.match(r"^static .*\bvoid (hloc_k\d+)_", line).group(1)
            if not starts or starts[-1][1] != name:
                starts.append((i, name))
    prelude = "".join(lines[: starts[0][0]]) if starts else c_text
    kernels = []
    for n, (i, _) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        # Identical kernels are aliases of the first (not compiled again): left out.
        body = "".join(l for l in lines[i:end] if "__attribute__((alias(" not in l)
        m = re.search(r"^\s*// fusion (\S+)", body, re.M)
        kernels.append((m.group(1) if m else "?", body))
    return prelude, kernels


def patch_fusions(module_text):
    """Names of the fusion instructions whose computations build im2col patches."""
    comps = {}
    current = None
    for line in module_text.splitlines():
        m = re.match(r"^(?:ENTRY )?%?([\w.\-]+)\s.*\{\s*$", line)
        if m:
            current = m.group(1)
            comps[current] = []
        elif current is not None:
            comps[current].append(line)
    patchy = set()
    for name, body in comps.items():
        text = "\n".join(body)
        gather = " gather(" in text and " iota()" in text
        stack = " concatenate(" in text and text.count(" pad(") + text.count(" slice(") >= 1
        if gather or stack:
            patchy.add(name)
    fusions = set()
    for body in comps.values():
        for line in body:
            m = re.match(r"^\s*(?:ROOT )?%?([\w.\-]+) = .* fusion\(.*calls=%?([\w.\-]+)", line)
            if m and m.group(2) in patchy:
                fusions.add(m.group(1))
    return fusions


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hloc", default="target/release/hloc")
    ap.add_argument("--cc", default=os.environ.get("HLOC_CC") or "cc")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    print("| program | kernels | patch kernels | gcc CPU ms (kernels alone) | patch ms | patch share |")
    print("|---|---:|---:|---:|---:|---:|")
    for f in args.files:
        prog = os.path.basename(os.path.dirname(os.path.abspath(f)))
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, HLOC_CACHE_DIR=os.path.join(tmp, "cache"))
            dump = os.path.join(tmp, "dump")
            subprocess.run(
                [args.hloc, "compile", f, "--dump-to", dump],
                check=True,
                env=env,
                stdout=subprocess.DEVNULL,
            )
            names = os.listdir(dump)
            c_file = next(os.path.join(dump, n) for n in names if n.endswith(".kernels.c"))
            after = next(
                os.path.join(dump, n) for n in names if n.endswith(".after_optimizations.txt")
            )
            prelude, kernels = split_kernels(open(c_file).read())
            patches = patch_fusions(open(after).read())
            base = compile_cpu(args.cc, prelude, args.rounds, tmp)
            total = patch = 0.0
            count = 0
            for name, body in kernels:
                t = max(0.0, compile_cpu(args.cc, prelude + body, args.rounds, tmp) - base)
                total += t
                if name in patches:
                    patch += t
                    count += 1
            share = patch / total if total else 0.0
            print(
                f"| {prog} | {len(kernels)} | {count} | {total * 1e3:.0f} | {patch * 1e3:.0f} | {share:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    sys.exit(main())
