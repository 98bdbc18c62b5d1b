#!/usr/bin/env python3
"""Write one-op programs of every op class issue 30 names, at realistic sizes, for
`tools/bench_vs_xla.py --dir` (hloc against XLA:CPU in the same run, per op class): every
dot form (plain, transposed operands, batched, two contracting dimensions, an einsum with
its free dimensions interleaved, matrix-vector, outer product) in f32, bf16 (f32
accumulation) and s8 (s32 accumulation); convolutions in NHWC and NCHW, strided, depthwise
and transposed; top-k, sort and argsort; cumulative sum, product and max; argmax.

Run by hand (never by the test suite); needs jax from PyPI:

    python3 tools/op_class_programs.py /tmp/op-classes
    python3 tools/bench_vs_xla.py --dir /tmp/op-classes --repeat 10
    python3 tools/bench_vs_xla.py --dir /tmp/op-classes --hloc-before /tmp/hloc-old

Each folder is DIR/NAME/before_optimizations.hlo, inputs.npz and outputs.npz (XLA's result,
for `tools/outputs_vs_xla.py`), written by `user_programs.write_program`. The names start
with the class (`dot_`, `conv_`, `topk_`, `sort_`, `scan_`, `argmax_`) so the table groups.
"""

import os
import sys

import jax
import jax.numpy as jnp
from jax import lax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from user_programs import normal, rng, write_program, write_programs_cli  # noqa: E402


def ints(seed, shape, dtype=jnp.int8):
    """Small integers (s8 operands of an integer dot)."""
    return jnp.asarray(rng(seed).randint(-8, 8, size=shape), dtype)


def dot_forms(ty, tag):
    """(name, f, args) of every dot form of operand type `ty`: f32 sums for float operands,
    s32 for s8 ones (each lambda binds this call's `dot`)."""
    acc = jnp.int32 if ty == jnp.int8 else jnp.float32

    def arr(seed, shape):
        return ints(seed, shape, ty) if ty == jnp.int8 else normal(seed, shape, ty)

    def dot(a, b, dims):
        return lax.dot_general(a, b, dims, preferred_element_type=acc)

    return [
        (f"dot_{tag}_nn_1024", lambda a, b: dot(a, b, (((1,), (0,)), ((), ()))),
         (arr(1, (1024, 1024)), arr(2, (1024, 1024)))),
        (f"dot_{tag}_tn_1024", lambda a, b: dot(a, b, (((0,), (0,)), ((), ()))),
         (arr(3, (1024, 1024)), arr(4, (1024, 1024)))),
        (f"dot_{tag}_nt_1024", lambda a, b: dot(a, b, (((1,), (1,)), ((), ()))),
         (arr(5, (1024, 1024)), arr(6, (1024, 1024)))),
        (f"dot_{tag}_batched_16x256", lambda a, b: dot(a, b, (((2,), (1,)), ((0,), (0,)))),
         (arr(7, (16, 256, 256)), arr(8, (16, 256, 256)))),
        # A weight gradient of a [batch, seq, features] activation: two contracting dims.
        (f"dot_{tag}_two_contracting", lambda a, b: dot(a, b, (((0, 1), (0, 1)), ((), ()))),
         (arr(9, (16, 128, 512)), arr(10, (16, 128, 512)))),
        # A mixture of experts' `td,edf->etf`: the free dims interleave.
        (f"dot_{tag}_einsum_td_edf", lambda a, b: jnp.einsum(
            "td,edf->etf", a, b, preferred_element_type=acc),
         (arr(11, (512, 256)), arr(12, (8, 256, 512)))),
        (f"dot_{tag}_matvec_4096", lambda a, b: dot(a, b, (((1,), (0,)), ((), ()))),
         (arr(13, (4096, 4096)), arr(14, (4096,)))),
        (f"dot_{tag}_outer_2048", lambda a, b: dot(a, b, (((), ()), ((), ()))),
         (arr(15, (2048,)), arr(16, (2048,)))),
    ]


def dots():
    """(name, f, args) of every dot form, per operand type."""
    out = []
    for ty, tag in ((jnp.float32, "f32"), (jnp.bfloat16, "bf16"), (jnp.int8, "s8")):
        out += dot_forms(ty, tag)
    return out


def convs():
    """(name, f, args) of convolutions in the layouts and forms users write."""
    def conv(x, w, stride, dn, groups=1):
        return lax.conv_general_dilated(x, w, (stride, stride), "SAME", dimension_numbers=dn,
                                        feature_group_count=groups)
    return [
        ("conv_nhwc_3x3", lambda x, w: conv(x, w, 1, ("NHWC", "HWIO", "NHWC")),
         (normal(21, (8, 56, 56, 64)), normal(22, (3, 3, 64, 64), scale=0.1))),
        ("conv_nchw_3x3_s2", lambda x, w: conv(x, w, 2, ("NCHW", "OIHW", "NCHW")),
         (normal(23, (8, 64, 56, 56)), normal(24, (128, 64, 3, 3), scale=0.1))),
        ("conv_nhwc_depthwise_7x7", lambda x, w: conv(x, w, 1, ("NHWC", "HWIO", "NHWC"), 96),
         (normal(25, (8, 56, 56, 96)), normal(26, (7, 7, 1, 96), scale=0.1))),
        ("conv_nhwc_bf16_3x3", lambda x, w: conv(x, w, 1, ("NHWC", "HWIO", "NHWC")),
         (normal(27, (8, 56, 56, 64), jnp.bfloat16),
          normal(28, (3, 3, 64, 64), jnp.bfloat16, 0.1))),
        ("conv_transpose_nhwc_s2", lambda x, w: lax.conv_transpose(
            x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
         (normal(29, (8, 28, 28, 64)), normal(30, (3, 3, 64, 32), scale=0.1))),
        ("conv_1d_audio", lambda x, w: lax.conv_general_dilated(
            x, w, (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC")),
         (normal(31, (8, 16000, 32)), normal(32, (9, 32, 32), scale=0.1))),
    ]


def selections_and_scans():
    """(name, f, args) of top-k, sorts, scans and argmax at realistic sizes."""
    return [
        ("topk_40_of_32000x64", lambda x: lax.top_k(x, 40), (normal(41, (64, 32000)),)),
        ("topk_1_of_32000x64", lambda x: lax.top_k(x, 1), (normal(42, (64, 32000)),)),
        ("sort_1m_f32", lambda x: jnp.sort(x), (normal(43, (1 << 20,)),)),
        ("sort_argsort_rows_64x32000", lambda x: jnp.argsort(x, axis=-1),
         (normal(44, (64, 32000)),)),
        ("scan_cumsum_rows_2048sq", lambda x: jnp.cumsum(x, axis=1), (normal(45, (2048, 2048)),)),
        ("scan_cumsum_cols_2048sq", lambda x: jnp.cumsum(x, axis=0), (normal(46, (2048, 2048)),)),
        ("scan_cumprod_rows_1024sq", lambda x: jnp.cumprod(x, axis=1),
         (normal(47, (1024, 1024), scale=0.01) + 1.0,)),
        ("scan_cummax_rows_2048sq", lambda x: lax.cummax(x, axis=1), (normal(48, (2048, 2048)),)),
        ("argmax_rows_64x32000", lambda x: jnp.argmax(x, axis=-1), (normal(49, (64, 32000)),)),
        ("argmax_cols_4096sq", lambda x: jnp.argmax(x, axis=0), (normal(50, (4096, 4096)),)),
    ]


def programs():
    return dots() + convs() + selections_and_scans()


def main():
    write_programs_cli(__doc__, programs(), write_program)


if __name__ == "__main__":
    sys.exit(main())
