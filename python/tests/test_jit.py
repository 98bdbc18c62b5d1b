"""`hloc.jit` against `jax.jit` on a few jax functions (skipped without jax)."""

from __future__ import annotations

import numpy as np
import pytest

import hloc
from conftest import assert_close

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def mlp(params, x):
    for w, b in params:
        x = jnp.tanh(x @ w + b)
    return x


def stats(x):
    return {"mean": jnp.mean(x, axis=0), "max": jnp.max(x), "soft": jax.nn.softmax(x, axis=-1)}


def scaled(x, s):
    return x * s, jnp.sum(x)


def test_jit_mlp_matches_jax() -> None:
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((8, 16), np.float32), rng.standard_normal(16, np.float32)),
              (rng.standard_normal((16, 4), np.float32), rng.standard_normal(4, np.float32))]
    x = rng.standard_normal((5, 8), np.float32)
    got = hloc.jit(mlp)(params, x)
    assert isinstance(got, np.ndarray)
    assert_close(got, np.asarray(jax.jit(mlp)(params, x)), "mlp")


def test_jit_pytree_outputs_and_cache() -> None:
    f = hloc.jit(stats)
    for shape in [(4, 6), (3, 5), (4, 6)]:
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        got = f(x)
        want = jax.jit(stats)(x)
        assert set(got) == {"mean", "max", "soft"}
        for k in got:
            assert_close(got[k], np.asarray(want[k]), k)


def test_jit_compiles_once_per_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = []
    real = hloc.compile

    def counting(source, **kwargs):
        compiled.append(source)
        return real(source, **kwargs)

    monkeypatch.setattr(hloc, "compile", counting)
    f = hloc.jit(lambda x, y: {"s": x + y[0], "p": x * y[1]})
    a, b = np.ones((2, 3), np.float32), np.ones((3,), np.float32)
    for args in [(a, (a, a)), (a, (a, a)), (b, (b, b)), (a, (a, a)), (a, [a, a]), (a, (a, a.astype(np.int32)))]:
        got = f(*args)
        want = jax.jit(lambda x, y: {"s": x + y[0], "p": x * y[1]})(*args)
        for k in want:
            assert_close(got[k], np.asarray(want[k]), k)
    # New shapes, a new tree structure (list for tuple) and a new dtype each compile once.
    assert len(compiled) == 4


def test_jit_scalars_and_jax_arrays() -> None:
    f = hloc.jit(scaled)
    x = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
    y, s = f(x, 2.0)
    wy, ws = jax.jit(scaled)(x, 2.0)
    assert_close(y, np.asarray(wy), "y")
    assert_close(s, np.asarray(ws), "s")


def test_compile_a_lowered() -> None:
    x = np.ones((3, 3), np.float32)
    lowered = jax.jit(lambda a: a @ a + 1).lower(x)
    exe = hloc.compile(lowered)
    np.testing.assert_allclose(exe(x), x @ x + 1)


def test_jit_weak_python_scalars_keep_the_array_dtype() -> None:
    import ml_dtypes

    def f(x, s):
        return x * s

    x = np.array([1.5, 2.0, -3.0], dtype=ml_dtypes.bfloat16)
    got = hloc.jit(f)(x, 2.0)
    want = np.asarray(jax.jit(f)(x, 2.0))
    assert got.dtype == want.dtype == ml_dtypes.bfloat16
    assert_close(got, want, "bf16 * 2.0")
    assert_close(hloc.jit(f)(np.float32(3), 4), np.asarray(jax.jit(f)(np.float32(3), 4)), "f32 * int")
