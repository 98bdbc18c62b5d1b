#!/usr/bin/env python3
"""Write one-GEMM programs of the small and narrow shapes that issue 30's fresh programs
lose time in, for `tools/bench_vs_xla.py --dir` (hloc against XLA:CPU, per shape).

Run by hand (never by the test suite); needs jax from PyPI:

    python3 tools/gemm_shapes.py /tmp/gemm-shapes
    python3 tools/bench_vs_xla.py --dir /tmp/gemm-shapes --repeat 10
    python3 tools/bench_vs_xla.py --dir /tmp/gemm-shapes --hloc-before /tmp/hloc-old

A recurrent step's GEMMs are timed as they run there: inside a `lax.scan` whose step
slices its operand out of a stacked input and writes (or, for a weight gradient, adds)
its product into a stacked or carried result, so neither compiler can hoist the product
out of the loop, and the per-call costs (threads, packing, dispatch) count as in the
programs. Each folder is DIR/NAME/before_optimizations.hlo, inputs.npz and outputs.npz
(XLA's result, for `tools/outputs_vs_xla.py`), written by `user_programs.write_program`.
"""

import argparse
import os
import sys

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from user_programs import normal, write_program  # noqa: E402


def scan_xw(steps, m, k, n):
    """`steps` products `x_t[m, k] @ w[k, n]` in a scan (an RNN step's `h @ W`)."""
    def f(xs, w):
        def step(c, x):
            return c, x @ w
        return jax.lax.scan(step, 0.0, xs)[1]
    return f, (normal(1, (steps, m, k)), normal(2, (k, n), scale=0.1))


def scan_wgrad(steps, batch, a, b):
    """A weight gradient summed over `steps`: `acc += x_t[batch, a]^T @ dy_t[batch, b]`
    (m = a, n = b, k = batch), as a scan's backward pass accumulates it."""
    def f(xs, dys):
        def step(acc, xd):
            x, dy = xd
            return acc + x.T @ dy, None
        return jax.lax.scan(step, jnp.zeros((a, b), jnp.float32), (xs, dys))[0]
    return f, (normal(3, (steps, batch, a)), normal(4, (steps, batch, b)))


def scan_dx(steps, m, n, k):
    """`steps` products `dy_t[m, k] @ w[n, k]^T` (the backward pass's input gradient)."""
    def f(dys, w):
        def step(c, dy):
            return c, dy @ w.T
        return jax.lax.scan(step, 0.0, dys)[1]
    return f, (normal(5, (steps, m, k)), normal(6, (n, k), scale=0.1))


def plain(m, k, n):
    """One product `x[m, k] @ w[k, n]` (an im2col convolution's GEMM)."""
    return (lambda x, w: x @ w), (normal(7, (m, k)), normal(8, (k, n), scale=0.1))


def plain_t(m, k, n):
    """One product `x[m, k] @ w[n, k]^T` (tied embeddings' logits, a `[out, in]` weight)."""
    return (lambda x, w: x @ w.T), (normal(7, (m, k)), normal(8, (n, k), scale=0.1))


def conv3x3(batch, hw, cin, cout):
    """A 3x3 NHWC convolution, stride 1, same padding (ddim_sampler's)."""
    def f(x, w):
        return jax.lax.conv_general_dilated(
            x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return f, (normal(9, (batch, hw, hw, cin)), normal(10, (3, 3, cin, cout), scale=0.1))


def shapes():
    """(name, function, arguments) of every shape."""
    return [
        # lstm_lm_scan128: 16 sequences, 192 hidden, 128 inputs, 128 steps.
        ("lstm_h_m16_n192_k192", *scan_xw(128, 16, 192, 192)),
        ("lstm_x_m16_n192_k128", *scan_xw(128, 16, 128, 192)),
        ("lstm_dx_m16_n128_k192", *scan_dx(128, 16, 128, 192)),
        ("lstm_wgrad_m192_n192_k16", *scan_wgrad(128, 16, 192, 192)),
        ("lstm_wgrad_m128_n192_k16", *scan_wgrad(128, 16, 128, 192)),
        # lstm_lm: 16 sequences, 256 hidden (4 gates), 128 inputs, 64 steps.
        ("lstm_lm_h_m16_n1024_k256", *scan_xw(64, 16, 256, 1024)),
        ("lstm_lm_x_m16_n1024_k128", *scan_xw(64, 16, 128, 1024)),
        # gru_scan: 32 sequences, 512 hidden (3 gates), 128 inputs, 64 steps.
        ("gru_h_m32_n1536_k512", *scan_xw(64, 32, 512, 1536)),
        ("gru_x_m32_n1536_k128", *scan_xw(64, 32, 128, 1536)),
        # ddim_sampler: 3x3 convolutions of 32 channels at 4x32x32.
        ("ddim_gemm_m4096_n32_k288", *plain(4096, 288, 32)),
        ("ddim_conv3x3_4x32x32x32", *conv3x3(4, 32, 32, 32)),
        ("ddim_conv3x3_to_rgb", *conv3x3(4, 32, 32, 3)),
    ]


def small_m_shapes():
    """(name, function, arguments) of the small-m set (`--set small-m`): a decode step's
    or an RNN step's few rows against a weight in either layout, `[k, n]` (`x @ w`) and
    `[n, k]` (`x @ w.T`), m in {1, 2, 4, 8, 16, 32}."""
    out = []
    for n, k in [(768, 768), (3072, 768), (768, 3072), (50257, 768), (192, 192), (1536, 512)]:
        for m in [1, 2, 4, 8, 16, 32]:
            out.append((f"xw_m{m}_n{n}_k{k}", *plain(m, k, n)))
            out.append((f"xwt_m{m}_n{n}_k{k}", *plain_t(m, k, n)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--only", help="comma-separated shape names")
    ap.add_argument("--set", choices=["recurrent", "small-m"], default="recurrent",
                    help="the recurrent and convolution shapes (default) or the small-m set")
    a = ap.parse_args()
    only = set(a.only.split(",")) if a.only else None
    chosen = small_m_shapes() if a.set == "small-m" else shapes()
    for name, f, args in chosen:
        if only and name not in only:
            continue
        write_program(a.out_dir, name, f, args)
        print(name, flush=True)


if __name__ == "__main__":
    sys.exit(main())
