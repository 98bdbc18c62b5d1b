#!/usr/bin/env python3
"""The compile-time module of issue 36 item 9: a chain of transpose -> exp -> reduce ->
broadcast groups, four instructions each (2,500 groups: 10,000 instructions).

Each group takes the previous group's [A, B] array x and computes

    t = transpose(x)            [B, A]
    e = exponential(t)          [B, A]
    r = reduce(e, 0, dims={D})  the row sums (D=1: [B]) or the column sums (D=0: [A])
    b = broadcast(r)            back to x's shape [A, B], r along the dimension it came from

so every group maps [A, B] to [A, B] and every reduction reads the one before it through a
broadcast and a transpose. With D=1 each row sum is constant along the next group's reduced
dimension: fusion folds the whole chain into nested reductions that loop-invariant hoisting
must untangle (what made this module slow to compile). The
parameter, the zero and the add computation are the only instructions outside the groups.

Usage: tools/gen_wide_module.py [--groups N] [--reduce-dim 0|1] [--rows A] [--cols B] [-o FILE]
Prints to stdout without -o. Standard library only.
"""

import argparse
import sys


def module(groups: int, reduce_dim: int, rows: int, cols: int) -> str:
    """The HLO text of `groups` groups reducing over `reduce_dim`, starting from [rows, cols]."""
    if reduce_dim not in (0, 1):
        raise ValueError("reduce_dim is 0 or 1")
    lines = [
        f"HloModule wide_chain_{groups}_dim{reduce_dim}",
        "",
        "add {",
        "  a = f32[] parameter(0)",
        "  b = f32[] parameter(1)",
        "  ROOT s = f32[] add(a, b)",
        "}",
        "",
        "ENTRY main {",
        f"  x0 = f32[{rows},{cols}] parameter(0)",
        "  zero = f32[] constant(0)",
    ]
    a, b = rows, cols
    prev = "x0"
    for g in range(groups):
        # t is [b, a]; the reduction keeps t's dimension `kept`, which is x's dimension
        # 1 - kept, so the broadcast puts it back there.
        kept = 1 - reduce_dim
        r_len = (b, a)[kept]
        last = g == groups - 1
        lines += [
            f"  t{g} = f32[{b},{a}] transpose({prev}), dimensions={{1,0}}",
            f"  e{g} = f32[{b},{a}] exponential(t{g})",
            f"  r{g} = f32[{r_len}] reduce(e{g}, zero), dimensions={{{reduce_dim}}}, to_apply=add",
            f"  {'ROOT ' if last else ''}b{g} = f32[{a},{b}] broadcast(r{g}), dimensions={{{1 - kept}}}",
        ]
        prev = f"b{g}"
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--groups", type=int, default=2500, help="groups of four instructions")
    p.add_argument("--reduce-dim", type=int, default=1, choices=(0, 1))
    p.add_argument("--rows", type=int, default=8)
    p.add_argument("--cols", type=int, default=16)
    p.add_argument("-o", "--output", help="file to write (default: stdout)")
    args = p.parse_args()
    if args.groups < 1 or args.rows < 1 or args.cols < 1:
        p.error("--groups, --rows and --cols must be positive")
    text = module(args.groups, args.reduce_dim, args.rows, args.cols)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
