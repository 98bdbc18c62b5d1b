"""Large outputs are handed to numpy without a copy: the array's memory is the run's
output buffer (its `base` an `hloc._hloc.OutputMemory`), given back to the executable when
the array is freed; small outputs are copied. Either way the arrays are the caller's own."""

from __future__ import annotations

import gc

import ml_dtypes
import numpy as np

import hloc

# 512 KiB per f32 output: over the hand-over size (256 KiB); the s32 sum is small.
BIG = """HloModule big
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[256,512] parameter(0)
  n = f32[256,512] negate(x)
  both = f32[256,1024] concatenate(x, n), dimensions={1}
  b = bf16[256,1024] convert(both)
  r = f32[512,512] reshape(both)
  zero = f32[] constant(0)
  zeros = f32[512,512] broadcast(zero), dimensions={}
  p = pred[512,512] compare(r, zeros), direction=GT
  c = c64[256,512] convert(x)
  z = f32[] constant(0)
  s = f32[] reduce(x, z), dimensions={0,1}, to_apply=add_f32
  ROOT t = (f32[256,512], bf16[256,1024], pred[512,512], c64[256,512], f32[]) tuple(n, b, p, c, s)
}
"""


def _base_kind(a: np.ndarray) -> str:
    base = a
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return type(base).__name__


def test_large_outputs_are_the_run_memory_and_the_callers_own() -> None:
    exe = hloc.compile(BIG)
    x = (np.arange(256 * 512, dtype=np.float32).reshape(256, 512) % 7) - 3
    n, b, p, c, s = exe(x)
    for o, (shape, dtype) in zip((n, b, p, c, s), exe.outputs):
        assert o.shape == shape and o.dtype == dtype
        assert o.flags["C_CONTIGUOUS"] and o.flags["WRITEABLE"] and o.flags["ALIGNED"]
        assert not np.shares_memory(o, x)
    assert [_base_kind(o) for o in (n, b, p, c)] == ["OutputMemory"] * 4
    assert _base_kind(s) != "OutputMemory"
    np.testing.assert_array_equal(n, -x)
    both = np.concatenate([x, -x], axis=1)
    np.testing.assert_array_equal(b, both.astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(p, both.reshape(512, 512) > 0)
    np.testing.assert_array_equal(c, x.astype(np.complex64))
    assert float(s) == float(x.sum())
    # Held arrays are not reused by the next run; writes to them stay theirs.
    n[0, 0] = 1234.0
    n2, *_ = exe(x)
    assert not np.shares_memory(n, n2)
    assert n[0, 0] == 1234.0 and n2[0, 0] == -x[0, 0]
    np.testing.assert_array_equal(n[1:], -x[1:])


NEGATE = "HloModule o\nENTRY e {\n  x = f32[300000] parameter(0)\n  ROOT y = f32[300000] negate(x)\n}\n"


def test_a_freed_output_serves_the_next_run() -> None:
    # Its pages are already faulted in: the next run writes there, with its own values.
    exe = hloc.compile(NEGATE)
    x = np.arange(300000, dtype=np.float32)
    y = exe(x)
    address = y.__array_interface__["data"][0]
    del y
    gc.collect()
    y = exe(x + 1)
    assert y.__array_interface__["data"][0] == address
    np.testing.assert_array_equal(y, -(x + 1))


def test_an_output_outliving_its_executable() -> None:
    exe = hloc.compile(NEGATE)
    x = np.arange(300000, dtype=np.float32)
    y = exe(x)
    assert _base_kind(y) == "OutputMemory"
    del exe
    gc.collect()
    np.testing.assert_array_equal(y, -x)
    y += 1
    np.testing.assert_array_equal(y, 1 - x)


def test_small_outputs_are_copies() -> None:
    exe = hloc.compile("HloModule s\nENTRY e {\n  x = f32[1000] parameter(0)\n  ROOT y = f32[1000] negate(x)\n}\n")
    y = exe(np.ones(1000, np.float32))
    assert _base_kind(y) != "OutputMemory"
    np.testing.assert_array_equal(y, -np.ones(1000, np.float32))
