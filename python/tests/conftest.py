"""Shared helpers of the hloc pytest suite: the corpus and the output comparison."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"


def corpus_names() -> list[str]:
    """Every corpus program (a directory with before_optimizations.hlo and its npz files)."""
    if not CORPUS.is_dir():
        return []
    return sorted(
        p.name
        for p in CORPUS.iterdir()
        if (p / "before_optimizations.hlo").is_file() and (p / "outputs.npz").is_file()
    )


def load_npz(path: os.PathLike, prefix: str, dtypes: list[np.dtype]) -> list[np.ndarray]:
    """Arrays PREFIX0, PREFIX1, ... of an npz, bit patterns (bf16 as uint16, f8 as uint8)
    viewed as the given dtypes."""
    with np.load(path) as z:
        arrays = [z[f"{prefix}{i}"] for i in range(len(dtypes))]
    return [a.view(d) if a.dtype != d and a.dtype.itemsize == d.itemsize else a for a, d in zip(arrays, dtypes)]


def tolerance(dtype: np.dtype) -> tuple[float, float] | None:
    """(rtol, atol) of issue 17's bar for a dtype; None for an exact comparison."""
    name = np.dtype(dtype).name
    if name in ("float32", "float64", "complex64", "complex128"):
        return 1e-3, 1e-5
    if name in ("float16", "bfloat16"):
        return 2e-2, 2e-2
    if name.startswith("float8"):
        return 1e-1, 1e-1
    return None


def assert_close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """`got` equals `want` within the dtype's tolerance (NaN equal to NaN)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs {want.shape}"
    tol = tolerance(want.dtype)
    if tol is None:
        g = got.view(want.dtype) if got.dtype.itemsize == want.dtype.itemsize else got
        assert np.array_equal(g, want), f"{what}: differs"
        return
    kind = np.complex128 if np.iscomplexobj(want) or np.iscomplexobj(got) else np.float64
    np.testing.assert_allclose(
        got.astype(kind), want.astype(kind), rtol=tol[0], atol=tol[1], equal_nan=True, err_msg=what
    )
