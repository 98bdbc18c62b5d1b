"""The API as issue 34 names it: compile, Executable, run, parse, indexing, fuse,
simplify_map, and every error path."""

from __future__ import annotations

import gc
import pathlib
import sys
import threading
import weakref

import ml_dtypes
import numpy as np
import pytest

import hloc
from conftest import CORPUS

ADD = """HloModule add
ENTRY e {
  x = f32[2,3] parameter(0)
  y = f32[2,3] parameter(1)
  ROOT s = f32[2,3] add(x, y)
}
"""

PAIR = """HloModule pair
ENTRY e {
  x = f32[4] parameter(0)
  n = s32[] parameter(1)
  neg = f32[4] negate(x)
  c = s32[] add(n, n)
  ROOT t = (f32[4], s32[]) tuple(neg, c)
}
"""

BF16 = """HloModule b
ENTRY e {
  x = bf16[3] parameter(0)
  ROOT y = bf16[3] multiply(x, x)
}
"""

BAD_SYNTAX = """HloModule bad
ENTRY e {
  x = f32[2] parameter(0)
  ROOT y = f32[2] add(x, x
}
"""

BAD_SHAPE = """HloModule bad
ENTRY e {
  x = f32[2] parameter(0)
  ROOT y = f32[3] negate(x)
}
"""


def test_compile_and_call() -> None:
    exe = hloc.compile(ADD)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = exe(x, x)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, 2 * x)
    assert exe.parameters == [((2, 3), np.dtype(np.float32))] * 2
    assert exe.outputs == [((2, 3), np.dtype(np.float32))]
    assert not exe.returns_tuple


def test_stats_keys() -> None:
    stats = hloc.compile(ADD).stats
    assert set(stats) == {"kernels", "library_calls", "compile", "cache", "buffer_bytes", "temp_bytes", "peak_bytes"}
    assert stats["cache"] in ("hit", "miss")
    assert isinstance(stats["compile"], float)


def test_tuple_root_and_scalars() -> None:
    exe = hloc.compile(PAIR)
    neg, c = exe(np.ones(4, np.float32), 21)
    np.testing.assert_array_equal(neg, -np.ones(4, np.float32))
    assert c.shape == () and c.dtype == np.int32 and int(c) == 42
    assert exe.returns_tuple
    neg2, c2 = exe(np.ones(4, np.float32), np.int32(5))
    assert int(c2) == 10


def test_non_contiguous_and_array_like_inputs() -> None:
    exe = hloc.compile(ADD)
    big = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = big[:2, :3]  # a strided view
    assert not x.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(exe(x, x), 2 * np.ascontiguousarray(x))

    class Wrapped:
        def __array__(self, dtype=None, copy=None):
            return np.ones((2, 3), np.float32)

    np.testing.assert_array_equal(exe(Wrapped(), Wrapped()), 2 * np.ones((2, 3), np.float32))


def test_bf16_is_ml_dtypes() -> None:
    exe = hloc.compile(BF16)
    assert exe.parameters == [((3,), np.dtype(ml_dtypes.bfloat16))]
    x = np.array([1.5, -2, 3], dtype=ml_dtypes.bfloat16)
    y = exe(x)
    assert y.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(y.astype(np.float32), np.array([2.25, 4, 9], np.float32))


def test_sources_path_pathlike_and_text() -> None:
    path = CORPUS / "mlp_forward" / "before_optimizations.hlo"
    a = hloc.compile(path)
    b = hloc.compile(str(path))
    c = hloc.compile(path.read_text())
    assert a.parameters == b.parameters == c.parameters


def test_run_cpu_and_reference() -> None:
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    cpu = hloc.run(ADD, x, x)
    ref = hloc.run(ADD, x, x, backend="reference")
    np.testing.assert_array_equal(cpu, ref)
    neg, c = hloc.run(PAIR, np.ones(4, np.float32), 3, backend="reference")
    assert int(c) == 6
    with pytest.raises(ValueError):
        hloc.run(ADD, x, x, backend="gpu")


def test_parse_module() -> None:
    m = hloc.parse(PAIR)
    assert "ROOT" in str(m)
    assert m.verify() is None
    assert m.instructions() == ["x", "n", "neg", "c", "t"]
    assert m.instructions("e") == m.instructions()
    with pytest.raises(KeyError):
        m.instructions("nope")
    bad = hloc.parse(BAD_SHAPE)
    with pytest.raises(hloc.HloError) as e:
        bad.verify()
    assert e.value.line == 4


def test_parse_error_has_line_and_column() -> None:
    with pytest.raises(hloc.HloError) as e:
        hloc.parse(BAD_SYNTAX)
    assert isinstance(e.value, ValueError)
    assert e.value.line == 5 and e.value.column == 1
    assert "^" in str(e.value)
    with pytest.raises(hloc.HloError):
        hloc.compile(BAD_SYNTAX)
    with pytest.raises(hloc.HloError) as e:
        hloc.compile(BAD_SHAPE)
    assert e.value.line == 4


def test_wrong_arguments() -> None:
    exe = hloc.compile(ADD)
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeError, match="2 argument"):
        exe(x)
    with pytest.raises(TypeError, match=r"argument 1.*float32.*float64"):
        exe(x, x.astype(np.float64))
    with pytest.raises(ValueError, match=r"argument 0.*f32\[2,3\].*\(3, 2\)"):
        exe(np.zeros((3, 2), np.float32), x)


def test_unsupported_op() -> None:
    text = """HloModule u
ENTRY e {
  x = f32[4] parameter(0)
  ROOT y = f32[4] custom-call(x), custom_call_target="no_such_target"
}
"""
    with pytest.raises(hloc.UnsupportedError) as e:
        hloc.compile(text)
    assert isinstance(e.value, NotImplementedError)
    assert "custom-call" in str(e.value)


def test_memory_limit() -> None:
    with pytest.raises(MemoryError, match="bytes"):
        hloc.compile(ADD, memory_limit=16)
    with pytest.raises(MemoryError):
        hloc.run(ADD, np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32), backend="reference", memory_limit=8)
    assert hloc.compile(ADD, memory_limit="1M").stats["buffer_bytes"] <= 1 << 20
    with pytest.raises(ValueError):
        hloc.compile(ADD, memory_limit="lots")


def test_bad_source_and_target() -> None:
    with pytest.raises(TypeError):
        hloc.compile(42)
    with pytest.raises(ValueError):
        hloc.compile(ADD, target="tpu")
    with pytest.raises(FileNotFoundError):
        hloc.compile(pathlib.Path("/no/such/file.hlo"))


def test_indexing() -> None:
    text = """HloModule t
ENTRY e {
  p = f32[4,8] parameter(0)
  ROOT t = f32[8,4] transpose(p), dimensions={1,0}
}
"""
    out = hloc.indexing(text, "t")
    assert out.startswith("operand id = 0")
    assert "(d0, d1) -> (d1, d0)" in out
    assert "operand id = 0" in hloc.indexing(text, "t", operand=0)
    assert "(d0, d1) -> (d1, d0)" in hloc.indexing(text, "t", direction="in-to-out")
    with pytest.raises(ValueError):
        hloc.indexing(text, "nope")
    with pytest.raises(ValueError):
        hloc.indexing(text, "t", operand=3)
    with pytest.raises(ValueError):
        hloc.indexing(text, "t", direction="sideways")


def test_fuse() -> None:
    fused, records = hloc.fuse(CORPUS / "softmax" / "before_optimizations.hlo")
    assert "fusion(" in fused
    assert records and all(isinstance(r, dict) for r in records)
    assert any("fusion" in r for r in records)
    with pytest.raises(ValueError):
        hloc.fuse(ADD, target="no-such-device")


def test_simplify_map() -> None:
    m = "(d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16), domain: d0 in [0, 6], d1 in [0, 14]"
    assert hloc.simplify_map(m) == "(d0, d1) -> (d0, d1), domain: d0 in [0, 6], d1 in [0, 14]"
    with pytest.raises(hloc.HloError) as e:
        hloc.simplify_map("(d0) -> (d0 +), domain: d0 in [0, 3]")
    assert e.value.line == 1 and e.value.column is not None


def test_docstrings() -> None:
    for f in (hloc.compile, hloc.run, hloc.jit, hloc.parse, hloc.indexing, hloc.fuse, hloc.simplify_map):
        assert f.__doc__ and len(f.__doc__) > 40, f
    for c in (hloc.Executable, hloc.Module, hloc.HloError, hloc.UnsupportedError):
        assert c.__doc__, c
    assert hloc.Executable.__call__.__doc__
    assert "memory_limit" in hloc.compile.__doc__


def test_threads_run_in_parallel() -> None:
    exe = hloc.compile(CORPUS / "mlp_forward" / "before_optimizations.hlo")
    from conftest import load_npz

    inputs = load_npz(CORPUS / "mlp_forward" / "inputs.npz", "in", [d for _, d in exe.parameters])
    want = exe(*inputs)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(50):
                np.testing.assert_array_equal(exe(*inputs), want)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_no_leak_over_1000_calls() -> None:
    exe = hloc.compile(PAIR)
    x = np.ones(4, np.float32)
    before_x = sys.getrefcount(x)
    for _ in range(50):
        exe(x, 1)
    gc.collect()
    import tracemalloc

    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    for _ in range(1000):
        out = exe(x, 1)
    del out
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename"))
    assert grown < 64 * 1024, grown
    assert sys.getrefcount(x) == before_x
    out = exe(x, 1)
    refs = [weakref.ref(o) for o in out]
    del out
    assert all(r() is None for r in refs), "outputs outlive their last reference"
