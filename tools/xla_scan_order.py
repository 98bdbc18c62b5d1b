#!/usr/bin/env python3
"""XLA:CPU's order for cumulative sums and products (scans), established against jax and recorded.

A scan is a `reduce-window` whose window spans the whole scanned dimension. XLA:CPU's
ReduceWindowRewriter (base length 16, run to a fixed point) rewrites every such window longer
than 16: pad the line with the init value to a multiple of 16, scan each block of 16 (every
output folding its own window in window order), scan the blocks' last totals exclusively
(itself rewritten while longer than 16), and combine each element with its block's exclusive
total. A float cumsum therefore rounds as that tree, not as one chain.

    python3 tools/xla_scan_order.py check
        simulates that order (and the plain left-to-right fold) in numpy and compares both with
        what jax's XLA computes: one line per case, the number of outputs differing from XLA
        (bit patterns). "blocked 0" everywhere confirms the order.
    python3 tools/xla_scan_order.py write hlo-eval/tests/xla_scan_order
        writes the small modules the tests compare with (NAME/before_optimizations.hlo,
        inputs.npz, outputs.npz as tools/user_programs.py writes them).

Run by hand (never by the test suite); needs jax and ml_dtypes.
"""

import argparse
import os
import sys

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from user_programs import write  # noqa: E402

BASE = 16
BF16 = ml_dtypes.bfloat16


def step(op, dt):
    """One rounded step of the reducer, computed in f64 and rounded to dt (exact for
    f32/f16/bf16 add and multiply)."""
    return lambda a, b: dt(op(np.float64(a), np.float64(b)))


def window_folds(line, init, f, reverse):
    out = []
    for i in range(len(line)):
        acc = init
        for v in (line[i:] if reverse else line[:i + 1]):
            acc = f(acc, v)
        out.append(acc)
    return out


def exclusive(line, init, f, reverse):
    n = len(line)
    if n <= BASE:
        out = []
        for i in range(n):
            acc = init
            for v in (line[i + 1:] if reverse else line[:i]):
                acc = f(acc, v)
            out.append(acc)
        return out
    inc = blocked(line, init, f, reverse)
    if reverse:
        return inc[1:] + [init]
    return [init] + inc[:-1]


def blocked(line, init, f, reverse):
    n = len(line)
    if n <= BASE:
        return window_folds(line, init, f, reverse)
    padded = list(line) + [init] * (-n % BASE)
    blocks = [window_folds(padded[b:b + BASE], init, f, reverse)
              for b in range(0, len(padded), BASE)]
    totals = [blk[0] if reverse else blk[-1] for blk in blocks]
    outer = exclusive(totals, init, f, reverse)
    return [f(v, outer[b]) for b, blk in enumerate(blocks) for v in blk][:n]


def chain(line, init, f, reverse):
    """The plain scan: one left-to-right (reversed: right-to-left) chain."""
    out, acc = [], init
    for v in (line[::-1] if reverse else line):
        acc = f(acc, v)
        out.append(acc)
    return out[::-1] if reverse else out


def simulate(x, axis, init, f, reverse, scan):
    xt = np.moveaxis(x, axis, -1)
    flat = xt.reshape(-1, xt.shape[-1])
    out = np.array([scan(list(r), init, f, reverse) for r in flat], dtype=x.dtype)
    return np.moveaxis(out.reshape(xt.shape), -1, axis)


def probabilities(seed, shape, dt=np.float32):
    r = np.random.default_rng(seed)
    x = np.exp(r.standard_normal(shape) * 2.0)
    return (x / x.sum(axis=-1, keepdims=True)).astype(dt)


def signed(seed, shape, dt=np.float32):
    r = np.random.default_rng(seed)
    return (r.standard_normal(shape) * np.exp(r.standard_normal(shape))).astype(dt)


def near_one(seed, shape, dt=np.float32):
    r = np.random.default_rng(seed)
    return (1 + r.standard_normal(shape) / 64).astype(dt)


def exclusive_window(x, axis, reverse):
    """An exclusive scan as a reduce-window padded by the whole length (output n + 1)."""
    n = x.shape[axis]
    dims = [1] * x.ndim
    dims[axis] = n
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, n) if reverse else (n, 0)
    return lax.reduce_window(x, jnp.zeros((), x.dtype), lax.add, dims, [1] * x.ndim, pad)


def cases():
    """(name, jax function, args, simulation (axis, init, op, reverse, exclusive))."""
    add, mul = (lambda a, b: a + b), (lambda a, b: a * b)
    yield ("f32_cumsum_probs_4x3000", lambda a: jnp.cumsum(a, axis=1),
           [probabilities(1, (4, 3000))], (1, 0, add, False, False))
    yield ("f32_cumsum_17", lambda a: jnp.cumsum(a), [signed(2, (17,))],
           (0, 0, add, False, False))
    yield ("f32_cumsum_signed_3x300", lambda a: jnp.cumsum(a, axis=1),
           [signed(3, (3, 300))], (1, 0, add, False, False))
    yield ("f32_cumsum_axis0_300x5", lambda a: jnp.cumsum(a, axis=0),
           [signed(4, (300, 5))], (0, 0, add, False, False))
    yield ("f32_reverse_cumsum_2x1000", lambda a: lax.cumsum(a, axis=1, reverse=True),
           [signed(5, (2, 1000))], (1, 0, add, True, False))
    yield ("f32_cumprod_2x200", lambda a: jnp.cumprod(a, axis=1), [near_one(6, (2, 200))],
           (1, 1, mul, False, False))
    yield ("f32_exclusive_2x100", lambda a: exclusive_window(a, 1, False),
           [signed(7, (2, 100))], (1, 0, add, False, True))
    yield ("f32_exclusive_reverse_2x100", lambda a: exclusive_window(a, 1, True),
           [signed(8, (2, 100))], (1, 0, add, True, True))
    yield ("bf16_cumsum_2x500", lambda a: jnp.cumsum(a, axis=1, dtype=BF16),
           [signed(9, (2, 500), BF16)], (1, 0, add, False, False))
    yield ("f16_cumsum_2x500", lambda a: jnp.cumsum(a, axis=1, dtype=np.float16),
           [signed(10, (2, 500), np.float16)], (1, 0, add, False, False))


def simulated(args, sim, scan):
    axis, init, op, reverse, excl = sim
    x = args[0]
    dt = x.dtype.type
    out = simulate(x, axis, dt(init), step(op, dt), reverse, scan)
    if excl:
        pad = [(0, 0)] * x.ndim
        pad[axis] = (0, 1) if reverse else (1, 0)
        out = np.pad(out, pad, constant_values=dt(init))
    return out


def bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def check():
    for name, f, args, sim in cases():
        got = bits(jax.jit(f)(*args))
        b = bits(simulated(args, sim, blocked))
        c = bits(simulated(args, sim, chain))
        print(f"{name:32} outputs {got.size:6}, blocked {(got != b).sum()}, "
              f"chain {(got != c).sum()}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check")
    w = sub.add_parser("write")
    w.add_argument("out_dir")
    a = ap.parse_args()
    if a.cmd == "check":
        return check()
    for name, f, args, _ in cases():
        write(a.out_dir, name, f, args)
        print(name, flush=True)


if __name__ == "__main__":
    sys.exit(main())
