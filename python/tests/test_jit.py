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


def test_jit_static_arguments_by_position_and_name() -> None:
    def power(x, n, *, scale):
        for _ in range(n):
            x = x * scale
        return x

    x = np.arange(4, dtype=np.float32)
    f = hloc.jit(power, static_argnums=1, static_argnames="scale")
    for n, s in [(2, 3.0), (3, 3.0), (2, 0.5)]:
        assert_close(f(x, n, scale=s), np.asarray(jax.jit(power, static_argnums=1, static_argnames="scale")(x, n, scale=s)), f"power {n} {s}")
    # By name only, passed by position: static as with jax.jit.
    g = hloc.jit(static_argnames="n")(lambda x, n: x + n)
    assert_close(g(x, 5), x + 5, "static by name")
    assert_close(g(x, 6), x + 6, "another static value, another executable")
    with pytest.raises(ValueError, match="hashable"):
        g(x, [1])


def test_jit_vmap_scan_grad_of_fresh_functions() -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((7, 3), np.float32)
    b = rng.standard_normal((7, 3), np.float32)
    pairwise = jax.vmap(lambda u, v: jnp.dot(u, v) * 2.0)
    assert_close(hloc.jit(pairwise)(a, b), np.asarray(jax.jit(pairwise)(a, b)), "vmap")

    def running(xs):
        def step(c, x):
            c = c + x
            return c, c * 2
        return jax.lax.scan(step, jnp.zeros(xs.shape[1:], xs.dtype), xs)

    got, want = hloc.jit(running)(a), jax.jit(running)(a)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want):
        assert_close(g, np.asarray(w), "scan")

    def loss(w, x, y):
        return jnp.mean((x @ w - y) ** 2)

    w = rng.standard_normal((3, 1), np.float32)
    y = rng.standard_normal((7, 1), np.float32)
    value, grad = hloc.jit(jax.value_and_grad(loss))(w, a, y)
    want_value, want_grad = jax.jit(jax.value_and_grad(loss))(w, a, y)
    assert_close(value, np.asarray(want_value), "value")
    assert_close(grad, np.asarray(want_grad), "grad")
    out = hloc.jit(lambda d: {"x": d["x"] + 1, "n": None})({"x": a, "n": None})
    assert out["n"] is None
    assert_close(out["x"], a + 1, "None leaves")
