#!/usr/bin/env python3
"""Agreement between `hloc indexing --coalescing` and the expectations of XLA's coalescing test.

Usage: tools/xla_coalescing_compat.py PATH/TO/coalescing_analysis_test.cc
                                      [--hloc target/debug/hloc] [--target h100|h200]
                                      [--verbose]

The test file (openxla/xla, xla/service/gpu/model/coalescing_analysis_test.cc, also under
third_party/xla in TensorFlow's tree) is not part of this repository: pass a local copy
(write the commit into a REVISION file beside it). Nothing is compiled.

Cases: every `TEST_F(CoalescingTest, ...)` that hands an HLO string to
`IsReadCoalescedPerOperand` and compares the result with `ElementsAre(...)`: XLA's verdict
for each operand of the ENTRY root (a fusion), under the thread map of the emitter XLA gives
it. The other tests are counted as not extracted, with the reason: a module built through
the C++ API, `IsReadCoalescedHeuristic` (the fusion planner's guess for an unfused producer,
made without a thread map) and the `CoalescingForTiledHloTest` family (Triton tiles, not an
emitter's threads).

hloc's answer is `hloc indexing MODULE --instr ROOT --coalescing --target T`: per operand and
per map, the first warp's 128-byte transactions and the ideal count. The verdict is XLA's rule
(`EstimateCoalescingViaMemoryTransactionsCount` in coalescing_analysis.cc) applied to those
counts: coalesced when there are no transactions (the warp does not read the operand) or when
ideal > 0.9 x transactions. An operand is coalesced when every map of it is, over every output
of a multi-output fusion; an operand hloc lists no map for (not read, or a scalar) is
coalesced, as in XLA; `unknown indexing` is not coalesced, as XLA treats an undefined map.
A map hloc does not count (runtime-dependent addresses, too many points) gives no verdict,
which counts as a disagreement.

Prints the XLA revision, one line per case (XLA's verdicts, hloc's, and hloc's counts per
operand), the agreement per operand and per case, and the tests not extracted.
Standard library only.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parser_compat import revision  # noqa: E402  (the revision a copy of XLA comes from)
from xla_indexing_compat import call_args, read_string_literal, tests  # noqa: E402

TIMEOUT_S = 60
# XLA's kIsCoalescedThreshold: coalesced when ideal > THRESHOLD x transactions.
THRESHOLD = 0.9


@dataclass
class Case:
    """One extracted test: the module, its root and XLA's verdict per operand."""

    name: str
    line: int
    module: str
    expected: list
    hloc: list = field(default_factory=list)
    counts: list = field(default_factory=list)
    error: str = ""
    output: str = ""


def string_vars(body):
    """Name -> value of every `NAME = R"(...)"` (or plain literal) in a test body."""
    out = {}
    for m in re.finditer(r"(\w+)\s*=\s*(?=R\"|\")", body):
        lit = read_string_literal(body, m.end())
        if lit:
            out[m.group(1)] = lit[0]
    return out


def bools(text):
    """The booleans of an `ElementsAre(true, false, ...)` text, or None."""
    m = re.fullmatch(r"\s*ElementsAre\((.*)\)\s*", text, re.S)
    if not m:
        return None
    words = [w.strip() for w in m.group(1).split(",")]
    if any(w not in ("true", "false") for w in words):
        return None
    return [w == "true" for w in words]


def extract(src):
    """(cases, not extracted as (name, line, reason)) of the file."""
    cases, skipped = [], []
    for name, body, line in tests(src):
        if "IsTiledReadCoalescedPerOperand" in body or \
                "EffectiveBandwidthUtilizationRatePerOperand" in body:
            skipped.append((name, line, "Triton tile heuristic (tile sizes, no emitter threads)"))
            continue
        if "IsReadCoalescedHeuristic(" in body:
            skipped.append((name, line, "fusion planner's heuristic for an unfused producer "
                                        "(no thread map)"))
            continue
        found = False
        for m in re.finditer(r"EXPECT_THAT\s*\(", body):
            args = call_args(body, m.end() - 1)
            if len(args) != 2:
                continue
            call = re.fullmatch(r"IsReadCoalescedPerOperand\s*\((.*)\)", args[0], re.S)
            if not call:
                continue
            found = True
            var = call.group(1).strip()
            module = string_vars(body).get(var)
            expected = bools(args[1])
            if module is None:
                skipped.append((name, line, "module built through the C++ API"))
            elif expected is None:
                skipped.append((name, line, f"expectation not a list of booleans: {args[1]}"))
            else:
                cases.append(Case(name, line, module, expected))
        if not found:
            skipped.append((name, line, "no IsReadCoalescedPerOperand expectation"))
    return cases, skipped


def entry_root(module):
    """The name of the ENTRY computation's ROOT instruction."""
    m = re.search(r"\bENTRY\b[^{]*\{", module)
    if not m:
        return None
    r = re.search(r"\bROOT\s+%?([\w.\-]+)\s*=", module[m.end():])
    return r.group(1) if r else None


LINE = re.compile(r"^\s*(?:output id = (\d+) )?operand id = (\d+)(?: map (\d+))?: (.*)$")
COUNTED = re.compile(r"(\d+) loads, (\d+) transactions, ideal (\d+)")


def map_verdict(text):
    """(verdict, short count text) of one map's coalescing line: True, False or None."""
    m = COUNTED.match(text)
    if m:
        t, ideal = int(m.group(2)), int(m.group(3))
        return (t == 0 or ideal > THRESHOLD * t), f"{t}/{ideal}"
    if "unknown indexing" in text:
        return False, "undef"
    if "runtime values" in text:
        return None, "rt"
    return None, "n/c"


def verdicts(output, arity):
    """hloc's verdict and counts per operand from `hloc indexing --coalescing` output."""
    lines = output.split("coalescing:", 1)
    if len(lines) != 2:
        return None, None
    per = [[] for _ in range(arity)]
    for line in lines[1].splitlines():
        m = LINE.match(line)
        if m and int(m.group(2)) < arity:
            per[int(m.group(2))].append(map_verdict(m.group(4)))
    out, counts = [], []
    for maps in per:
        vs = [v for v, _ in maps]
        if any(v is None for v in vs):
            out.append(None)
        else:
            out.append(all(vs))
        counts.append(",".join(c for _, c in maps) or "-")
    return out, counts


def arity_of(module, root):
    """Number of operands of the ENTRY root `root` (its operand list, top-level commas)."""
    m = re.search(r"\bROOT\s+%?" + re.escape(root) + r"\s*=", module)
    i = module.find("(", module.find(" fusion", m.end()) if m else -1)
    if not m or i < 0:
        return None
    return len(call_args(module, i))


def run_case(case, hloc, target):
    root = entry_root(case.module)
    if root is None:
        case.error = "no ENTRY root"
        return
    arity = arity_of(case.module, root) or len(case.expected)
    with tempfile.NamedTemporaryFile("w", suffix=".hlo", delete=False) as f:
        f.write(case.module)
        path = f.name
    try:
        p = subprocess.run([hloc, "indexing", path, "--instr", root, "--coalescing",
                            "--target", target], capture_output=True, text=True,
                           timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        case.error = "timeout"
        return
    finally:
        os.unlink(path)
    case.output = p.stdout + p.stderr
    if p.returncode != 0:
        case.error = f"exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}"
        return
    got, counts = verdicts(p.stdout, arity)
    if got is None:
        case.error = "no coalescing section"
        return
    case.hloc, case.counts = got, counts


def word(v):
    return {True: "T", False: "F", None: "?"}[v]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", help="local copy of XLA's coalescing_analysis_test.cc")
    ap.add_argument("--hloc", default="target/debug/hloc")
    ap.add_argument("--target", default="h100", choices=["h100", "h200"])
    ap.add_argument("--verbose", action="store_true",
                    help="print hloc's coalescing report of every disagreeing case")
    a = ap.parse_args()
    src = open(a.file, encoding="utf-8").read()
    if "CoalescingTest" not in src:
        print(f"{a.file}: not XLA's coalescing test (no CoalescingTest fixture)",
              file=sys.stderr)
        return 2
    print(f"XLA revision: {revision(a.file)} ({a.file})")
    print(f"hloc: {a.hloc} --target {a.target}; verdict: ideal > {THRESHOLD} x transactions")
    cases, skipped = extract(src)
    ops_total = ops_equal = cases_equal = 0
    print(f"\n{'case':40} {'XLA':10} {'hloc':10} transactions/ideal per operand")
    for c in cases:
        run_case(c, a.hloc, a.target)
        if c.error:
            c.hloc = [None] * len(c.expected)
        got = c.hloc + [None] * (len(c.expected) - len(c.hloc))
        equal = [x == h for x, h in zip(c.expected, got)]
        ops_total += len(equal)
        ops_equal += sum(equal)
        cases_equal += all(equal)
        mark = "" if all(equal) else "  DIFFERS"
        detail = c.error or " ".join(c.counts)
        print(f"{c.name:40} {''.join(map(word, c.expected)):10} "
              f"{''.join(map(word, got)):10} {detail}{mark}")
        if a.verbose and not all(equal):
            section = c.output.split("coalescing:", 1)[-1]
            print("    " + section.strip().replace("\n", "\n    "))
    pct = 100.0 * ops_equal / ops_total if ops_total else 0.0
    print(f"\noperands: {ops_equal}/{ops_total} agree ({pct:.1f}%); "
          f"cases: {cases_equal}/{len(cases)} agree on every operand")
    if skipped:
        print(f"not extracted ({len(skipped)}):")
        for name, line, why in skipped:
            print(f"  {name} (line {line}): {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
