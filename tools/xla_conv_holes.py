#!/usr/bin/env python3
"""What XLA:CPU does with convolution taps on padding and on `lhs_dilate` holes when a
weight is infinite, recorded for the tests (issue 36 item 4).

HLO's padding and base-dilation holes are zero-valued elements, so such a tap adds
`0 * w`: NaN for an infinite weight. The reference evaluator and hloc's compiled backend
follow that rule. XLA:CPU (jax 0.10.2) multiplies the padding's zeros (NaN, as the rule
says) but skips the holes of an input-dilated convolution: with `lhs_dilation`, no output
is NaN, padding taps included.

    python3 tools/xla_conv_holes.py check
        prints, per case, how many outputs are NaN in XLA's result and in the rule's
        (a numpy model: the input zero-stuffed and padded, every tap multiplied), and
        whether the outputs NaN in neither are equal (to 1e-5).
    python3 tools/xla_conv_holes.py write hlo-eval/tests/xla_conv_holes
        writes the cases (NAME/before_optimizations.hlo, inputs.npz, outputs.npz as
        tools/user_programs.py writes them) that runtime's conv_holes test compares with.

Run by hand (never by the test suite); needs jax.
"""

import argparse
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from user_programs import write  # noqa: E402

jax.config.update("jax_platforms", "cpu")


def conv(pad, lhs_dilation):
    """An NCH convolution with `pad` and `lhs_dilation` (1-D, stride 1)."""
    return lambda x, w: lax.conv_general_dilated(
        x, w, window_strides=(1,), padding=[pad], lhs_dilation=(lhs_dilation,),
        dimension_numbers=("NCH", "OIH", "NCH"))


def inputs(seed, x_shape, w_shape, inf_at):
    """Finite random input and kernel, one kernel weight (flat index) infinite."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 1.5, x_shape).astype(np.float32)
    w = rng.uniform(-1.0, 1.0, w_shape).astype(np.float32)
    w.flat[inf_at] = np.inf
    return x, w


# name, padding, lhs_dilation, input [N, C, H], kernel [O, I, K], the infinite weight.
CASES = [
    ("pad_only", (2, 1), 1, (2, 3, 6), (4, 3, 3), 0),
    ("lhs_dilate_holes", (0, 0), 2, (2, 3, 6), (4, 3, 3), 4),
    ("lhs_dilate_and_pad", (2, 0), 2, (1, 3, 9), (7, 3, 2), 3),
]


def rule(x, w, pad, ld):
    """The convolution by the HLO rule: zero-stuffed, zero-padded input, every tap."""
    n, c, h = x.shape
    o, _, k = w.shape
    d = np.zeros((n, c, (h - 1) * ld + 1), np.float32)
    d[:, :, ::ld] = x
    d = np.concatenate([np.zeros((n, c, pad[0]), np.float32), d,
                        np.zeros((n, c, pad[1]), np.float32)], axis=2)
    out = np.zeros((n, o, d.shape[2] - k + 1), np.float32)
    with np.errstate(invalid="ignore"):
        for p in range(out.shape[2]):
            out[:, :, p] = np.einsum("nck,ock->no", d[:, :, p:p + k], w)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["check", "write"])
    ap.add_argument("out_dir", nargs="?")
    a = ap.parse_args()
    for seed, (name, pad, ld, xs, ws, inf_at) in enumerate(CASES):
        x, w = inputs(seed, xs, ws, inf_at)
        f = conv(pad, ld)
        if a.mode == "write":
            if not a.out_dir:
                ap.error("write takes the output folder")
            write(a.out_dir, name, f, (jnp.asarray(x), jnp.asarray(w)))
        y = np.asarray(jax.jit(f)(x, w))
        want = rule(x, w, pad, ld)
        both = ~np.isnan(y) & ~np.isnan(want)
        same = np.isclose(y[both], want[both], rtol=1e-5, atol=1e-5).all()
        print(f"{name}: XLA {int(np.isnan(y).sum())} NaN, rule {int(np.isnan(want).sum())} NaN "
              f"of {y.size}; elsewhere {'equal' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    sys.exit(main())
