#!/usr/bin/env python3
"""Kernel counts and modelled bytes of `hloc fuse` against XLA:CPU, per corpus program.

For every program of corpus/MANIFEST.tsv this runs

    hloc fuse corpus/NAME/before_optimizations.hlo --target cpu --explain OUT/NAME.jsonl

and compares the fused module with XLA:CPU's own corpus/NAME/after_optimizations.hlo:

- kernels: fusion instructions plus every other op that is not bookkeeping (parameter,
  constant, tuple, get-tuple-element, bitcast, while, conditional, call, after-all,
  add-dependency, opt-barrier, partition-id, replica-id, domain), counted in ENTRY and in
  the computations ENTRY runs through while, conditional and call (recursively);
- bytes: per kernel, its output bytes plus the bytes of each distinct operand once.

Prints one row per program and the geometric means of ours / XLA's for both (issue 16's
target: both <= 1.0). It also checks that the explain report has one fusion record per
fusion and one edge record per kernel -> kernel edge of those computations.

Usage: tools/fusion_vs_xla.py [--hloc PATH] [--corpus DIR] [--out DIR] [--target cpu|h100] [NAME ...]
Standard library only.
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile

BOOKKEEPING = {
    "parameter", "constant", "tuple", "get-tuple-element", "bitcast", "while",
    "conditional", "call", "after-all", "add-dependency", "opt-barrier",
    "partition-id", "replica-id", "domain",
}
CONTROL_FLOW = {"while", "conditional", "call"}
ELEMENT_BYTES = {
    "pred": 1, "s2": 1, "s4": 1, "s8": 1, "u2": 1, "u4": 1, "u8": 1, "s16": 2, "u16": 2,
    "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8,
    "c64": 8, "c128": 16, "token": 0, "opaque": 0,
}
ARRAY = re.compile(r"\b([a-z]+[0-9]*[a-z0-9]*)\[([^\]]*)\]")
CALLEE_ATTRS = re.compile(
    r"\b(?:calls|to_apply|body|condition|true_computation|false_computation)=%?([\w.\-]+)")
BRANCHES = re.compile(r"\bbranch_computations=\{([^}]*)\}")


def shape_bytes(shape):
    """Bytes of a shape string (tuples summed; f8 kinds count one byte)."""
    total = 0
    for ty, dims in ARRAY.findall(shape):
        if ty.startswith("f8") or ty.startswith("f4") or ty.startswith("f6"):
            size = 1
        elif ty in ELEMENT_BYTES:
            size = ELEMENT_BYTES[ty]
        else:
            continue
        n = 1
        for d in dims.split(","):
            d = d.strip().lstrip("<=")
            if d and d != "?":
                n *= int(d)
        total += n * size
    return total


def split_top(s, sep=","):
    """Splits on `sep` outside brackets."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur:
        out.append("".join(cur))
    return out


def matching(s, i):
    """Index of the bracket closing the one at s[i]."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] in "([{":
            depth += 1
        elif s[j] in ")]}":
            depth -= 1
            if depth == 0:
                return j
    return len(s) - 1


def parse_instruction(line):
    """(name, shape, opcode, operand names, attribute text) of one instruction line."""
    text = line.strip()
    if text.startswith("ROOT "):
        text = text[5:]
    name, _, rest = text.partition(" = ")
    name = name.strip().lstrip("%")
    rest = rest.strip()
    # The shape: a tuple in parentheses or one array token (with an optional layout).
    if rest.startswith("("):
        end = matching(rest, 0)
        shape, rest = rest[: end + 1], rest[end + 1:].strip()
    else:
        m = re.match(r"[^\s(]+(\{[^}]*\})?", rest)
        shape, rest = rest[: m.end()], rest[m.end():].strip()
        if shape.endswith("}") is False and rest.startswith("{"):
            end = matching(rest, 0)
            shape, rest = shape + rest[: end + 1], rest[end + 1:].strip()
    m = re.match(r"([\w\-]+)\(", rest)
    if not m:
        return None
    opcode = m.group(1)
    open_at = m.end() - 1
    close = matching(rest, open_at)
    inside, attrs = rest[open_at + 1: close], rest[close + 1:]
    operands = []
    if opcode != "constant":
        for arg in split_top(inside):
            arg = re.sub(r"/\*.*?\*/", "", arg).strip()
            if arg:
                operands.append(arg.split()[-1].lstrip("%"))
    return name, shape, opcode, operands, attrs


def parse_module(text):
    """{computation: [instructions]} and the entry computation's name."""
    comps, entry, cur = {}, None, None
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("//"):
            continue
        if s.endswith("{") and " = " not in s.split("(")[0] and not s.startswith("HloModule"):
            is_entry = s.startswith("ENTRY ")
            head = s[6:] if is_entry else s
            cname = head.split()[0].split("(")[0].lstrip("%")
            cur = comps.setdefault(cname, [])
            if is_entry:
                entry = cname
            continue
        if s == "}":
            cur = None
            continue
        if cur is not None and " = " in s:
            inst = parse_instruction(s)
            if inst:
                cur.append(inst)
    return comps, entry


def control_flow_computations(comps, entry):
    order, seen = [entry], {entry}
    i = 0
    while i < len(order):
        for _, _, opcode, _, attrs in comps.get(order[i], []):
            if opcode not in CONTROL_FLOW:
                continue
            callees = CALLEE_ATTRS.findall(attrs)
            for b in BRANCHES.findall(attrs):
                callees += [x.strip().lstrip("%") for x in b.split(",") if x.strip()]
            for c in callees:
                if c in comps and c not in seen:
                    seen.add(c)
                    order.append(c)
        i += 1
    return order


def measure(text):
    """(kernels, bytes, fusions, kernel edges) of a module."""
    comps, entry = parse_module(text)
    kernels = nbytes = fusions = 0
    edges = set()
    for cname in control_flow_computations(comps, entry):
        shapes = {name: shape for name, shape, _, _, _ in comps[cname]}
        opcodes = {name: op for name, _, op, _, _ in comps[cname]}
        for name, shape, opcode, operands, _ in comps[cname]:
            if opcode in BOOKKEEPING:
                continue
            kernels += 1
            fusions += opcode == "fusion"
            nbytes += shape_bytes(shape)
            for o in dict.fromkeys(operands):
                nbytes += shape_bytes(shapes.get(o, ""))
                if opcodes.get(o) not in BOOKKEEPING and o in opcodes:
                    edges.add((o, name))
    return kernels, nbytes, fusions, edges


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hloc", default=os.path.join(root, "target", "debug", "hloc"))
    ap.add_argument("--corpus", default=os.path.join(root, "corpus"))
    ap.add_argument("--out", default=None, help="where fused modules and reports go")
    ap.add_argument("--target", default="cpu", help="device description (XLA's side is always XLA:CPU)")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="fusion_vs_xla.")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(args.corpus, "MANIFEST.tsv")) as f:
        names = [l.split("\t")[0] for l in f.read().splitlines()[1:] if l.strip()]
    if args.names:
        names = [n for n in names if n in args.names]
    rows, k_ratios, b_ratios, failures = [], [], [], []
    print(f"{'program':34} {'kern':>5} {'xla':>5} {'ratio':>6} {'bytes':>10} {'xla':>10} {'ratio':>6}  explain")
    for name in names:
        before = os.path.join(args.corpus, name, "before_optimizations.hlo")
        after = os.path.join(args.corpus, name, "after_optimizations.hlo")
        explain = os.path.join(out, name + ".jsonl")
        r = subprocess.run([args.hloc, "fuse", before, "--target", args.target, "--explain", explain],
                           capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"{name}: hloc fuse exited {r.returncode}: {r.stderr.strip()[:300]}")
            continue
        with open(os.path.join(out, name + ".fused.hlo"), "w") as f:
            f.write(r.stdout)
        ours = measure(r.stdout)
        with open(after) as f:
            theirs = measure(f.read())
        with open(explain) as f:
            records = [json.loads(l) for l in f if l.strip()]
        rec_fusions = sum(1 for x in records if "fusion" in x)
        rec_edges = {(x["producer"], x["consumer"]) for x in records if "fusion" not in x}
        covered = rec_fusions == ours[2] and ours[3] <= rec_edges
        kr = ours[0] / theirs[0] if theirs[0] else float("nan")
        br = ours[1] / theirs[1] if theirs[1] else float("nan")
        k_ratios.append(kr)
        b_ratios.append(br)
        print(f"{name:34} {ours[0]:5} {theirs[0]:5} {kr:6.2f} {ours[1]:10} {theirs[1]:10} {br:6.2f}  "
              f"{'ok' if covered else 'INCOMPLETE'}")
        if not covered:
            failures.append(f"{name}: explain report incomplete")
    print(f"\ngeomean kernels ours/xla: {geomean(k_ratios):.3f}")
    print(f"geomean bytes   ours/xla: {geomean(b_ratios):.3f}")
    print(f"programs: {len(k_ratios)} measured, {len(failures)} failures; outputs in {out}")
    for f in failures:
        print("FAIL " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
