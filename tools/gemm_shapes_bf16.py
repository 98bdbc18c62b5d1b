#!/usr/bin/env python3
"""Write one-GEMM `bf16 x bf16` programs (f32 or bf16 results) at the shapes of issue 30's
bf16 models, for `tools/bench_vs_xla.py --dir` (hloc against XLA:CPU, per shape).

Run by hand (never by the test suite); needs jax from PyPI:

    python3 tools/gemm_shapes_bf16.py /tmp/gemm-bf16
    python3 tools/bench_vs_xla.py --dir /tmp/gemm-bf16 --hloc-before /tmp/hloc-old --repeat 5

Each name says the product: `m x k @ k x n` (batched: `b` products), `_t` when the rhs is
stored `[n, k]` (x @ W^T), `_f32`/`_bf16` the result type (`preferred_element_type`). The
GFLOP/s of a shape is `2 b m n k / time`. A separate file from tools/gemm_shapes.py (the f32
shapes) so the two lists stay independent. Folders as `user_programs.write_program` writes
them: DIR/NAME/before_optimizations.hlo, inputs.npz and outputs.npz (XLA's result).
"""

import os
import sys

import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from user_programs import normal, write_program, write_programs_cli  # noqa: E402


def matmul(b, m, k, n, out, rhs_t=False):
    """`b` products `x[m, k] @ w[k, n]` (or `w[n, k]^T`) in bf16, summed in f32, result `out`."""
    bf = jnp.bfloat16
    xs = normal(1, ((b,) if b > 1 else ()) + (m, k), bf)
    ws = normal(2, ((b,) if b > 1 else ()) + ((n, k) if rhs_t else (k, n)), bf, scale=0.1)

    def f(x, w):
        if rhs_t:
            w = jnp.swapaxes(w, -1, -2)
        if out == jnp.bfloat16:
            # A bf16 result straight from the dot (f32 sums rounded once), as models write it.
            return jnp.matmul(x, w)
        return jnp.matmul(x, w, preferred_element_type=jnp.float32)
    return f, (xs, ws)


def shapes():
    """(name, function, arguments) of every shape."""
    f32, bf = jnp.float32, jnp.bfloat16
    return [
        # tools/user_programs.py's bf16_matmul_f32_acc and larger squares.
        ("sq_1024_f32", *matmul(1, 1024, 1024, 1024, f32)),
        ("sq_2048_f32", *matmul(1, 2048, 2048, 2048, f32)),
        ("sq_512_bf16", *matmul(1, 512, 512, 512, bf)),
        # gpt_bf16_forward: [512, 512] tokens x the MLP and projections.
        ("gpt_mlp_512x512x2048_bf16", *matmul(1, 512, 512, 2048, bf)),
        ("gpt_mlp_512x2048x512_bf16", *matmul(1, 512, 2048, 512, bf)),
        # gpt_bf16_forward's attention: 16 heads of [256, 64] x [64, 256].
        ("attn_16x256x64x256_bf16_t", *matmul(16, 256, 64, 256, bf, rhs_t=True)),
        # mixer_bf16_forward: [8 x 196, 256] x [256, 1024] and the token mix.
        ("mixer_1568x256x1024_bf16", *matmul(1, 1568, 256, 1024, bf)),
        ("mixer_8x256x196x128_bf16", *matmul(8, 256, 196, 128, bf)),
        # Edges: extents that are not multiples of the tiles (16 rows, 32 contracted).
        ("odd_1000x999x1001_f32", *matmul(1, 1000, 999, 1001, f32)),
        ("wt_1024x1024x1024_f32_t", *matmul(1, 1024, 1024, 1024, f32, rhs_t=True)),
        # Issue 30's AVX512-BF16 microbench (session 56): a wide product and a batch of
        # short contractions.
        ("wide_2048x1024x4096_f32", *matmul(1, 2048, 1024, 4096, f32)),
        ("batch_16x256x64x256_bf16", *matmul(16, 256, 64, 256, bf)),
        # A thin product: a decode step's [16, 1024] x [1024, 4096].
        ("thin_16x1024x4096_bf16", *matmul(1, 16, 1024, 4096, bf)),
    ]


def main():
    write_programs_cli(__doc__, shapes(), write_program, what="shape")


if __name__ == "__main__":
    sys.exit(main())
