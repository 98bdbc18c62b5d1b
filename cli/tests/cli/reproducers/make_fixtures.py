#!/usr/bin/env python3
"""Writes the inputs and expected outputs of reproducers.test: minimized reproducers of
issue 36's wrong or missing answers (items 1-4) and of what its differential campaign
found since, each run on both backends against outputs that come from outside hloc.

Expected outputs are XLA:CPU's where XLA follows HLO's semantics (the zero-sized variadic
reduces, the f32/f16 TOTALORDER sorts, the nested tuples of a root and a conditional), and
numpy's where it does not or cannot run the module: a tuple-shaped entry parameter (PJRT
takes arrays) and a convolution whose taps fall in padding or lhs-dilation holes against
an infinite weight (HLO's padding is zero-valued elements, so 0 * inf = NaN; XLA:CPU
skips those taps for a plain f32 convolution, issue 36 item 4). Needs jax and numpy; run
it from anywhere, it writes next to itself:

    python3 cli/tests/cli/reproducers/make_fixtures.py
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "tools"))
import differential_campaign as campaign  # noqa: E402  (XLA:CPU on HLO text, x64 on)


def save(name, **arrays):
    np.savez(os.path.join(HERE, name), **arrays)


def text(name):
    with open(os.path.join(HERE, name + ".hlo")) as fh:
        return fh.read()


def from_xla(name, inputs):
    outs, err = campaign.xla_run(text(name), inputs)
    if err:
        raise SystemExit(f"{name}: XLA: {err}")
    if inputs:  # a module without parameters runs without --inputs
        save(name + ".in.npz", **{f"in{i}": a for i, a in enumerate(inputs)})
    save(name + ".out.npz", **{f"out{i}": o for i, o in enumerate(outs)})


def bits(dtype, words):
    return np.array(words, {"f32": np.uint32, "f16": np.uint16}[dtype]).view(
        {"f32": np.float32, "f16": np.float16}[dtype])


def conv_multiplying_padding(x, k, lo, hi, lhs_dilate):
    """A 1-D convolution, one feature in and out, HLO's rule: padding and holes are zeros
    that multiply the weight (float64, then f32)."""
    d = np.zeros((len(x) - 1) * lhs_dilate + 1)
    d[::lhs_dilate] = x
    d = np.concatenate([np.zeros(lo), d, np.zeros(hi)])
    with np.errstate(invalid="ignore"):
        out = [sum(d[j + t] * k[t] for t in range(len(k))) for j in range(len(d) - len(k) + 1)]
    return np.array(out, np.float32).reshape(1, -1, 1)


def main():
    from_xla("argmax_zero_sized", [np.zeros((0, 3), np.float32)])
    # Signaling NaNs (0x7f800001, 0xff800001) beside quiet ones, infinities and signed zeros.
    from_xla("product_zero_sized", [np.zeros((21, 0, 35), np.float32)])
    from_xla("sort_nan_payloads_f32", [bits("f32", [
        0x7F800001, 0x7FC00000, 0xFFC00000, 0x80000000, 0, 0x3F800000, 0xFF800001, 0x7F800000])])
    from_xla("sort_nan_payloads_f16", [bits("f16", [
        0x7C01, 0x7E00, 0xFE00, 0x8000, 0, 0x3C00, 0xFC01, 0x7C00])])
    from_xla("sort_nan_payloads_constant", [])
    from_xla("nested_root", [np.array([1.5, -2.0], np.float32)])
    from_xla("conditional_nested", [np.array(True), np.array([0.5, 3.0], np.float32)])
    from_xla("conditional_nested_false", [np.array(False), np.array([0.5, 3.0], np.float32)])
    # The tuple-shaped parameter (f32[2], (s32[3])): keys by path, as hloc run reads them.
    a, b = np.array([1.0, 2.5], np.float32), np.array([3, -4, 5], np.int32)
    save("tuple_parameter.in.npz", **{"in0.0": a, "in0.1.0": b})
    save("tuple_parameter.out.npz", out0=a + a, out1=b * 2, out2=a)
    x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    k = np.array([np.inf, 1.0, 2.0], np.float32)
    save("conv_padding_inf.in.npz", in0=x.reshape(1, 4, 1), in1=k.reshape(3, 1, 1))
    save("conv_padding_inf.out.npz", out0=conv_multiplying_padding(x, k, 1, 1, 1))
    k = np.array([1.0, np.inf, 1.0], np.float32)
    save("conv_dilated_inf.in.npz", in0=x.reshape(1, 4, 1), in1=k.reshape(3, 1, 1))
    save("conv_dilated_inf.out.npz", out0=conv_multiplying_padding(x, k, 0, 0, 2))


if __name__ == "__main__":
    main()
