"""Every corpus program through `hloc.compile(path)(*inputs)` against XLA's recorded outputs:
the module JAX lowered, and XLA's optimized one (parameters and outputs in non-row-major
layouts, so arguments and outputs go through the layout permutations)."""

from __future__ import annotations

import pytest

import hloc
from conftest import CORPUS, assert_close, corpus_names, load_npz

NAMES = corpus_names()


@pytest.mark.parametrize("module", ["before_optimizations", "after_optimizations"])
@pytest.mark.parametrize("name", NAMES)
def test_corpus_program_matches_xla(name: str, module: str) -> None:
    d = CORPUS / name
    exe = hloc.compile(d / f"{module}.hlo")
    inputs = load_npz(d / "inputs.npz", "in", [dt for _, dt in exe.parameters])
    for (shape, _), a in zip(exe.parameters, inputs):
        assert a.shape == shape
    got = exe(*inputs)
    if not isinstance(got, tuple):
        got = (got,)
    want = load_npz(d / "outputs.npz", "out", [dt for _, dt in exe.outputs])
    assert len(got) == len(want) == len(exe.outputs)
    for k, (g, w, (shape, dtype)) in enumerate(zip(got, want, exe.outputs)):
        assert g.shape == shape and g.dtype == dtype, (k, g.shape, g.dtype, shape, dtype)
        assert_close(g, w, f"{name} output {k}")


def test_the_corpus_is_there() -> None:
    assert len(NAMES) >= 50
