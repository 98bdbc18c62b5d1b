#!/usr/bin/env python3
"""Generate hloc's HLO test-data corpus from real JAX programs.

Run by hand; nothing in the Rust build or test suite runs this script. It needs
JAX from PyPI (CPU only). jax >= 0.12 needs Python >= 3.12:

    /root/.pyenv/versions/3.12.1/bin/python -m venv /tmp/jaxenv   # any Python >= 3.12
    /tmp/jaxenv/bin/pip install jax jaxlib numpy
    /tmp/jaxenv/bin/python tools/gen_corpus.py [--out corpus]       # regenerate
    /tmp/jaxenv/bin/python tools/gen_corpus.py --verify [--out corpus]  # re-check only

For every program NAME it writes into OUT/NAME/:
  before_optimizations.hlo  jax.jit(f).lower(*args).compiler_ir('hlo')
                            .as_hlo_text(print_large_constants=True)
  after_optimizations.hlo   XLA:CPU's optimized module (what
                            jax.jit(f).lower(*args).compile().as_text() shows, but
                            printed with print_large_constants=True)
  inputs.npz                in0, in1, ... in entry-parameter order (flattened pytree)
  outputs.npz               out0, out1, ... in flattened result order, computed by XLA
plus OUT/MANIFEST.tsv and OUT/README.md.

bf16 arrays are stored as their uint16 bit patterns, f8 arrays as uint8 bit
patterns; MANIFEST.tsv's notes column says which keys are affected. npz files are
written uncompressed (np.savez). All inputs are deterministic (fixed seed per
program). After generating, the script re-runs every program from the saved
inputs in the same way --verify does and checks bit-exact equality.
"""

import argparse
import os
import platform
import re
import shutil
import sys
import zlib

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

import jax.numpy as jnp  # noqa: E402
import jax.scipy as jsp  # noqa: E402
import ml_dtypes  # noqa: E402  (installed with jax)
from jax import lax  # noqa: E402

f32, f64, f16 = np.float32, np.float64, np.float16
i8, i16, i32, i64 = np.int8, np.int16, np.int32, np.int64
u8, u16, u32, u64 = np.uint8, np.uint16, np.uint32, np.uint64
bf16 = ml_dtypes.bfloat16
f8e4m3 = ml_dtypes.float8_e4m3fn
f8e5m2 = ml_dtypes.float8_e5m2

# ---------------------------------------------------------------------------
# Registry

PROGRAMS = []


def program(name, desc):
    """Register `build(rng) -> (f, args)` under `name`."""

    def deco(build):
        PROGRAMS.append((name, desc, build))
        return build

    return deco


def rng_for(name):
    return np.random.RandomState(zlib.crc32(name.encode()) & 0x7FFFFFFF)


def randn(rng, shape, dtype=f32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def uniform(rng, shape, lo, hi, dtype=f32):
    return rng.uniform(lo, hi, shape).astype(dtype)


def dense_init(rng, n_in, n_out, dtype=f32):
    return {
        "w": randn(rng, (n_in, n_out), dtype, 1.0 / np.sqrt(n_in)),
        "b": randn(rng, (n_out,), dtype, 0.1),
    }


# ---------------------------------------------------------------------------
# Shared model pieces


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + eps) * gamma + beta


def mlp_apply(params, x):
    h = x
    for layer in params[:-1]:
        h = jax.nn.relu(h @ layer["w"] + layer["b"])
    return h @ params[-1]["w"] + params[-1]["b"]


def mha(p, x, n_heads, causal):
    b, s, d = x.shape
    hd = d // n_heads

    def split(t):
        return t.reshape(b, s, n_heads, hd).transpose(0, 2, 1, 3)

    q, k, v = split(x @ p["wq"]), split(x @ p["wk"]), split(x @ p["wv"])
    logits = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.float32(hd))
    if causal:
        mask = jnp.tril(jnp.ones((s, s), dtype=bool))
        logits = jnp.where(mask, logits, jnp.finfo(logits.dtype).min)
    w = jax.nn.softmax(logits, axis=-1)
    o = jnp.einsum("bhqk,bhkd->bhqd", w, v).transpose(0, 2, 1, 3).reshape(b, s, d)
    return o @ p["wo"]


def transformer_block(p, x, n_heads=4):
    h = x + mha(p["attn"], layer_norm(x, p["ln1_g"], p["ln1_b"]), n_heads, causal=True)
    m = layer_norm(h, p["ln2_g"], p["ln2_b"])
    m = jax.nn.gelu(m @ p["mlp"]["w1"] + p["mlp"]["b1"], approximate=True)
    return h + m @ p["mlp"]["w2"] + p["mlp"]["b2"]


def transformer_params(rng, d=32, hidden=64):
    s = 1.0 / np.sqrt(d)
    return {
        "attn": {k: randn(rng, (d, d), f32, s) for k in ("wq", "wk", "wv", "wo")},
        "ln1_g": (1.0 + randn(rng, (d,), f32, 0.1)).astype(f32),
        "ln1_b": randn(rng, (d,), f32, 0.1),
        "ln2_g": (1.0 + randn(rng, (d,), f32, 0.1)).astype(f32),
        "ln2_b": randn(rng, (d,), f32, 0.1),
        "mlp": {
            "w1": randn(rng, (d, hidden), f32, s),
            "b1": randn(rng, (hidden,), f32, 0.1),
            "w2": randn(rng, (hidden, d), f32, 1.0 / np.sqrt(hidden)),
            "b2": randn(rng, (d,), f32, 0.1),
        },
    }


def conv_nhwc(x, w, stride=1, padding="SAME"):
    return lax.conv_general_dilated(
        x, w, (stride, stride), padding, dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


def sgd(params, grads, lr=0.1):
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


# ---------------------------------------------------------------------------
# Programs


@program("mlp_forward", "3-layer MLP (relu) forward pass, f32")
def _(rng):
    params = [dense_init(rng, 16, 32), dense_init(rng, 32, 32), dense_init(rng, 32, 10)]
    x = randn(rng, (8, 16))
    return mlp_apply, (params, x)


@program("mlp_train_step", "MLP softmax-cross-entropy value_and_grad + SGD update")
def _(rng):
    params = [dense_init(rng, 16, 32), dense_init(rng, 32, 10)]
    x = randn(rng, (8, 16))
    labels = rng.randint(0, 10, (8,)).astype(i32)

    def loss_fn(params, x, labels):
        logits = mlp_apply(params, x)
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    def step(params, x, labels):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, labels)
        return loss, sgd(params, grads, 0.05)

    return step, (params, x, labels)


@program("attention", "single-head attention softmax(QK^T/sqrt(d))V, batched")
def _(rng):
    q, k, v = (randn(rng, (2, 8, 16)) for _ in range(3))

    def attn(q, k, v):
        s = jnp.einsum("bqd,bkd->bqk", q, k) / jnp.sqrt(jnp.float32(q.shape[-1]))
        return jax.nn.softmax(s, axis=-1) @ v

    return attn, (q, k, v)


@program("transformer_block_forward", "pre-LN causal transformer block: LN, 4-head MHA, GELU MLP, residuals")
def _(rng):
    return transformer_block, (transformer_params(rng), randn(rng, (2, 8, 32)))


@program("transformer_block_train_step", "transformer block MSE loss, value_and_grad, SGD update")
def _(rng):
    p = transformer_params(rng)
    x = randn(rng, (2, 8, 32))
    y = randn(rng, (2, 8, 32))

    def step(p, x, y):
        loss, g = jax.value_and_grad(lambda p: jnp.mean(jnp.square(transformer_block(p, x) - y)))(p)
        return loss, sgd(p, g, 0.01)

    return step, (p, x, y)


@program("layernorm", "layer normalization over the last axis with scale and bias")
def _(rng):
    return layer_norm, (randn(rng, (4, 64), f32, 3.0), randn(rng, (64,)), randn(rng, (64,)))


@program("softmax", "jax.nn.softmax and log_softmax along different axes")
def _(rng):
    return (lambda x: (jax.nn.softmax(x, axis=-1), jax.nn.log_softmax(x, axis=0))), (
        randn(rng, (4, 33), f32, 4.0),
    )


@program("conv_batchnorm", "NHWC conv (SAME) + training-mode batchnorm (batch stats, running-stat update) + relu")
def _(rng):
    x = randn(rng, (2, 8, 8, 3))
    w = randn(rng, (3, 3, 3, 8), f32, 0.3)
    gamma = (1.0 + randn(rng, (8,), f32, 0.1)).astype(f32)
    beta = randn(rng, (8,), f32, 0.1)
    run_mean = np.zeros(8, f32)
    run_var = np.ones(8, f32)

    def f(x, w, gamma, beta, run_mean, run_var):
        y = conv_nhwc(x, w)
        mean = jnp.mean(y, axis=(0, 1, 2))
        var = jnp.var(y, axis=(0, 1, 2))
        yn = (y - mean) / jnp.sqrt(var + 1e-5) * gamma + beta
        m = 0.9
        return jax.nn.relu(yn), m * run_mean + (1 - m) * mean, m * run_var + (1 - m) * var

    return f, (x, w, gamma, beta, run_mean, run_var)


@program("resnet_block_grad", "basic residual block (conv-relu-conv + skip, relu), grad of loss wrt params")
def _(rng):
    p = {
        "w1": randn(rng, (3, 3, 4, 4), f32, 0.25),
        "b1": randn(rng, (4,), f32, 0.1),
        "w2": randn(rng, (3, 3, 4, 4), f32, 0.25),
        "b2": randn(rng, (4,), f32, 0.1),
    }
    x = randn(rng, (2, 6, 6, 4))

    def block(p, x):
        h = jax.nn.relu(conv_nhwc(x, p["w1"]) + p["b1"])
        h = conv_nhwc(h, p["w2"]) + p["b2"]
        return jax.nn.relu(h + x)

    def f(p, x):
        return jax.value_and_grad(lambda p: jnp.sum(block(p, x) ** 2) / x.shape[0])(p)

    return f, (p, x)


@program("scan_cumulative", "lax.scan RNN (tanh) over 10 steps, returns final carry and stacked outputs")
def _(rng):
    w = randn(rng, (4, 4), f32, 0.5)
    u = randn(rng, (3, 4), f32, 0.5)
    h0 = np.zeros(4, f32)
    xs = randn(rng, (10, 3))

    def f(w, u, h0, xs):
        def cell(h, x):
            h = jnp.tanh(h @ w + x @ u)
            return h, jnp.sum(h)

        return lax.scan(cell, h0, xs)

    return f, (w, u, h0, xs)


@program("fori_loop", "power iteration with static trip count + Newton sqrt with traced trip count")
def _(rng):
    a = randn(rng, (6, 6))
    a = (a @ a.T).astype(f32)
    v0 = np.ones(6, f32)
    n = np.int32(7)
    y = uniform(rng, (5,), 0.5, 10.0)

    def f(a, v0, n, y):
        def power(i, v):
            v = a @ v
            return v / jnp.linalg.norm(v)

        v = lax.fori_loop(0, 20, power, v0)
        r = lax.fori_loop(0, n, lambda i, r: 0.5 * (r + y / r), y)
        return v, r

    return f, (a, v0, n, y)


@program("while_loop", "lax.while_loop with data-dependent termination (Collatz step counts, s32)")
def _(rng):
    start = rng.randint(1, 60, (8,)).astype(i32)

    def collatz_steps(n):
        def cond(c):
            return c[0] != 1

        def body(c):
            n, k = c
            return jnp.where(n % 2 == 0, n // 2, 3 * n + 1), k + 1

        return lax.while_loop(cond, body, (n, jnp.int32(0)))[1]

    return jax.vmap(collatz_steps), (start,)


@program("cond", "lax.cond on a data-dependent predicate (two conds, both branches taken)")
def _(rng):
    x = randn(rng, (5,))
    y = randn(rng, (5,))

    def f(x, y):
        a = lax.cond(jnp.sum(x) > 0, lambda x, y: jnp.sin(x) * y, lambda x, y: jnp.cos(x) - y, x, y)
        b = lax.cond(jnp.sum(x) <= 0, lambda x, y: x @ y, lambda x, y: jnp.max(x - y), x, y)
        return a, b

    return f, (x, y)


@program("switch", "lax.switch with 3 branches selected by an s32 input index (clamped), applied twice")
def _(rng):
    x = randn(rng, (4, 3))

    def f(i, x):
        branches = [lambda x: x * 2.0, lambda x: jnp.exp(x), lambda x: jnp.sum(x, axis=1, keepdims=True) - jnp.abs(x)]
        return lax.switch(i, branches, x), lax.switch(i + 5, branches, x)

    return f, (np.int32(1), x)


@program("sort", "multi-operand lax.sort (f32 keys, s32 values), argsort, descending sort along axis 0")
def _(rng):
    keys = np.round(randn(rng, (12,)), 1).astype(f32)  # rounding creates ties
    vals = np.arange(12, dtype=i32)[::-1].copy()
    m = randn(rng, (5, 3))

    def f(keys, vals, m):
        sk, sv = lax.sort((keys, vals), num_keys=1, is_stable=True)
        return sk, sv, jnp.argsort(keys), -jnp.sort(-m, axis=0)

    return f, (keys, vals, m)


@program("top_k", "lax.top_k along the last axis (k=5)")
def _(rng):
    return (lambda x: lax.top_k(x, 5)), (randn(rng, (4, 20)),)


@program("gather", "x[idx] fancy indexing, 2-D advanced indexing, jnp.take along axis 1, take_along_axis")
def _(rng):
    x = randn(rng, (10, 4))
    idx = np.array([3, 0, 9, -1, 5, 3], i32)
    rows = np.array([0, 2, 4], i32)
    cols = np.array([1, 3, 0], i32)
    idx2 = np.array([[2, 0], [1, 1]], i32)
    order = rng.randint(0, 4, (10, 4)).astype(i32)

    def f(x, idx, rows, cols, idx2, order):
        return x[idx], x[rows, cols], jnp.take(x, idx2, axis=1), jnp.take_along_axis(x, order, axis=1)

    return f, (x, idx, rows, cols, idx2, order)


@program("scatter_add", "x.at[idx].add with duplicate indices, .at[].set/.max/.mul, segment_sum")
def _(rng):
    x = randn(rng, (8, 3))
    idx = np.array([1, 5, 1, 7, 0, 5], i32)
    v = randn(rng, (6, 3))
    seg = np.array([0, 0, 1, 3, 3, 3], i32)

    def f(x, idx, v, seg):
        return (
            x.at[idx].add(v),
            x.at[idx[:3], 2].set(v[:3, 0]),
            x.at[idx].max(v),
            x[:, 0].at[idx].mul(v[:, 1]),
            jax.ops.segment_sum(v, seg, num_segments=4),
        )

    return f, (x, idx, v, seg)


@program("dynamic_slice", "lax.dynamic_slice with traced indices (one in range, one clamped)")
def _(rng):
    x = randn(rng, (6, 8))

    def f(x, i, j):
        return lax.dynamic_slice(x, (i, j), (3, 4)), lax.dynamic_slice_in_dim(x, i + 10, 2, axis=0)

    return f, (x, np.int32(2), np.int32(3))


@program("dynamic_update_slice", "lax.dynamic_update_slice with traced indices (in range and clamped)")
def _(rng):
    x = randn(rng, (6, 8))
    upd = randn(rng, (2, 3))

    def f(x, upd, i, j):
        return lax.dynamic_update_slice(x, upd, (i, j)), lax.dynamic_update_slice(x, upd, (i - 4, j + 9))

    return f, (x, upd, np.int32(1), np.int32(4))


@program("cumsum", "jnp.cumsum (f32 and s32), cumprod, lax.cummax, reverse cumsum")
def _(rng):
    x = randn(rng, (4, 6))
    n = rng.randint(-5, 5, (10,)).astype(i32)

    def f(x, n):
        return (
            jnp.cumsum(x, axis=1),
            jnp.cumsum(n),
            jnp.cumprod(x, axis=0),
            lax.cummax(x, axis=1),
            lax.cumsum(x, axis=0, reverse=True),
        )

    return f, (x, n)


@program("rng", "threefry PRNG from a raw u32[2] key input: split, normal, uniform, randint, bernoulli")
def _(rng):
    key = np.array(jax.random.key_data(jax.random.PRNGKey(42)), dtype=u32)

    def f(key):
        k1, k2, k3, k4 = jax.random.split(key, 4)
        return (
            jax.random.normal(k1, (4, 8), f32),
            jax.random.uniform(k2, (16,), f32, -1.0, 1.0),
            jax.random.randint(k3, (10,), 0, 100, i32),
            jax.random.bernoulli(k4, 0.3, (12,)),
        )

    return f, (key,)


@program("rng_bit_generator", "lax.rng_bit_generator (Philox and default algorithms) with a u32[4] key input")
def _(rng):
    key = np.array([1, 2, 3, 4], u32)

    def f(key):
        k1, b1 = lax.rng_bit_generator(key, (8,), dtype=u32, algorithm=lax.RandomAlgorithm.RNG_PHILOX)
        k2, b2 = lax.rng_bit_generator(key, (2, 3), dtype=u32, algorithm=lax.RandomAlgorithm.RNG_THREE_FRY)
        return k1, b1, k2, b2

    return f, (key,)


@program("bf16_matmul", "bf16 matmuls: bf16 result, f32 accumulation (preferred_element_type), bias + relu")
def _(rng):
    x = randn(rng, (8, 16)).astype(bf16)
    w = randn(rng, (16, 8), f32, 0.25).astype(bf16)
    b = randn(rng, (8,), f32, 0.1).astype(bf16)

    def f(x, w, b):
        y = jax.nn.relu(x @ w + b)
        z = jnp.dot(x, w, preferred_element_type=jnp.float32)
        return y, z

    return f, (x, w, b)


@program("f16_elementwise", "f16 elementwise math: exp, sin, sqrt, tanh, mul/add, div, max")
def _(rng):
    x = randn(rng, (4, 8), f16)
    y = uniform(rng, (4, 8), 0.1, 4.0, f16)

    def f(x, y):
        return jnp.exp(x) * y + jnp.sin(x), jnp.sqrt(y) / (1 + jnp.tanh(x) ** 2), jnp.maximum(x, y - 2)

    return f, (x, y)


@program("f64_math", "f64 transcendental ops: exp, log, log1p, expm1, tanh, erf, erfc, erf_inv, atan2, pow, cbrt, lgamma, ...")
def _(rng):
    x = uniform(rng, (12,), 0.05, 3.0, f64)
    y = randn(rng, (12,), f64)
    p = uniform(rng, (12,), -0.95, 0.95, f64)

    def f(x, y, p):
        return (
            jnp.exp(y),
            jnp.log(x),
            jnp.log1p(x),
            jnp.expm1(y),
            jnp.tanh(y),
            jsp.special.erf(y),
            jsp.special.erfc(y),
            jsp.special.erfinv(p),
            jnp.arctan2(y, x),
            jnp.power(x, y),
            jnp.cbrt(y),
            jnp.sin(y) + jnp.cos(y) * jnp.tan(p),
            lax.rsqrt(x),
            jax.nn.sigmoid(y),
            jsp.special.gammaln(x),
            jnp.arcsin(p) + jnp.arccos(p) * jnp.arctan(y) + jnp.sinh(p) * jnp.cosh(p),
        )

    return f, (x, y, p)


@program("int_ops", "integer ops on s32/s64/u32/u8/s8: arith with wraparound, //, %, rem, shifts, bitwise, clz, popcnt")
def _(rng):
    a = rng.randint(-1000, 1000, (10,)).astype(i32)
    b = rng.randint(1, 50, (10,)).astype(i32) * np.where(rng.rand(10) < 0.5, -1, 1).astype(i32)
    c = rng.randint(0, 2**32, (10,), dtype=np.uint64).astype(u32)
    s = rng.randint(0, 40, (10,)).astype(u32)  # includes shift amounts >= 32
    d = rng.randint(-2**40, 2**40, (10,)).astype(i64)
    e = rng.randint(0, 256, (10,)).astype(u8)
    g = rng.randint(-128, 128, (10,)).astype(i8)

    def f(a, b, c, s, d, e, g):
        return (
            a * b + a - b,
            a * jnp.int32(2**30),  # overflow wraps
            a // b,
            a % b,
            lax.rem(a, b),
            lax.div(a, b),
            jnp.abs(a) + jnp.sign(b),
            lax.shift_left(c, s),
            lax.shift_right_logical(c, s),
            lax.shift_right_arithmetic(a, s.astype(i32)),
            (c & 0xFF00FF00) | (c ^ 0x0F0F0F0F),
            ~c,
            lax.clz(c),
            lax.population_count(c),
            lax.clz(d) + lax.population_count(d),
            d * d // (jnp.abs(d) + 1),
            e + e,
            e * 3,
            g - jnp.int8(100),
            jnp.minimum(a, b) + jnp.maximum(a, b),
            a > b,
        )

    return f, (a, b, c, s, d, e, g)


@program("reduce_window", "max pooling 2x2/2 (VALID), avg pooling 3x3/1 (SAME), padded reduce_window sum")
def _(rng):
    x = randn(rng, (2, 6, 6, 3))

    def f(x):
        mx = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        sm = lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME")
        cnt = lax.reduce_window(jnp.ones_like(x), 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME")
        strided = lax.reduce_window(
            x, 0.0, lax.add, (1, 2, 3, 1), (1, 2, 1, 1), ((0, 0), (1, 2), (0, 1), (0, 0)),
            window_dilation=(1, 1, 2, 1),
        )
        return mx, sm / cnt, strided

    return f, (x,)


@program("maxpool_grad", "gradient of max pooling (select-and-scatter)")
def _(rng):
    x = randn(rng, (1, 6, 6, 2))

    def loss(x):
        y = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return jnp.sum(y * y)

    return jax.grad(loss), (x,)


@program("pad", "lax.pad with low/high/negative/interior padding; jnp.pad reflect and edge modes")
def _(rng):
    x = randn(rng, (4, 5))

    def f(x, v):
        return (
            lax.pad(x, v, ((1, -1, 1), (-2, 2, 0))),
            lax.pad(x, jnp.float32(0), ((0, 0, 2), (3, 1, 1))),
            jnp.pad(x, ((2, 1), (1, 2)), mode="reflect"),
            jnp.pad(x, ((1, 0), (0, 3)), mode="edge"),
        )

    return f, (x, np.float32(-7.5))


@program("concatenate_reshape_transpose", "concatenate, reshape, transpose, slicing, reverse, broadcast, roll, tile")
def _(rng):
    a = randn(rng, (2, 3, 4))
    b = randn(rng, (2, 5, 4))

    def f(a, b):
        c = jnp.concatenate([a, b, a], axis=1)
        t = jnp.transpose(c, (2, 0, 1)).reshape(4, -1)
        return (
            t,
            c[:, ::3, 1:3],
            jnp.flip(a, axis=(0, 2)),
            jnp.roll(b, 2, axis=1),
            jnp.tile(a[0, :, :1], (2, 3)),
            jnp.broadcast_to(a[:, None, :, 0], (2, 3, 3)) + a[:, :, 0:1],
            jnp.stack([a[0], a[1]], axis=-1),
        )

    return f, (a, b)


@program("iota_compare_select", "causal mask via iota/compare, tril/triu, where/select, one_hot, logical ops")
def _(rng):
    x = randn(rng, (6, 6))
    labels = np.array([0, 3, 1, 4, 4], i32)

    def f(x, labels):
        i = lax.broadcasted_iota(jnp.int32, (6, 6), 0)
        j = lax.broadcasted_iota(jnp.int32, (6, 6), 1)
        masked = jnp.where(i >= j, x, -jnp.inf)
        band = (jnp.abs(i - j) <= 1) & ~(x > 0.5) | (i == 5)
        return masked, jnp.triu(x, 1), band, jax.nn.one_hot(labels, 5, dtype=jnp.float32), jnp.any(band, axis=0), jnp.all(x > -3)

    return f, (x, labels)


@program("cholesky", "jnp.linalg.cholesky (LAPACK potrf custom-call on CPU), f32 and f64")
def _(rng):
    a = randn(rng, (5, 5), f64)
    a = a @ a.T + 5 * np.eye(5)
    b = randn(rng, (3, 4, 4), f32)
    b = (b @ np.transpose(b, (0, 2, 1)) + 4 * np.eye(4, dtype=f32)).astype(f32)
    return (lambda a, b: (jnp.linalg.cholesky(a), jnp.linalg.cholesky(b))), (a, b)


@program("triangular_solve", "jax.scipy.linalg.solve_triangular: lower, upper+transpose, unit diagonal")
def _(rng):
    l = np.tril(randn(rng, (5, 5))) + 4 * np.eye(5, dtype=f32)
    l = l.astype(f32)
    b = randn(rng, (5, 3))

    def f(l, b):
        return (
            jsp.linalg.solve_triangular(l, b, lower=True),
            jsp.linalg.solve_triangular(l.T, b, lower=False, trans="T"),
            jsp.linalg.solve_triangular(l, b[:, 0], lower=True, unit_diagonal=True),
        )

    return f, (l, b)


@program("linalg_solve", "jnp.linalg.solve (LU getrf custom-call + triangular solves) and inv")
def _(rng):
    a = (randn(rng, (4, 4), f64) + 3 * np.eye(4)).astype(f64)
    b = randn(rng, (4, 2), f64)
    return (lambda a, b: (jnp.linalg.solve(a, b), jnp.linalg.inv(a))), (a, b)


@program("fft", "jnp.fft.fft (complex), rfft, irfft, fft2, ifft")
def _(rng):
    x = randn(rng, (2, 16))
    z = (randn(rng, (2, 8)) + 1j * randn(rng, (2, 8))).astype(np.complex64)

    def f(x, z):
        r = jnp.fft.rfft(x)
        return jnp.fft.fft(z), r, jnp.fft.irfft(r, n=16), jnp.fft.fft2(z), jnp.fft.ifft(x)

    return f, (x, z)


@program("convert_chains", "convert chains f32<->bf16/f16/f8/f64/s32/u8/pred, reduce_precision, bitcast_convert")
def _(rng):
    x = np.concatenate([randn(rng, (12,), f32, 300.0), np.array([0.5, 1.5, 2.5, -2.5, 1e-8, 7e4, -0.0, 65519.0], f32)])
    x = x.astype(f32)

    def f(x):
        return (
            x.astype(bf16).astype(f32),
            x.astype(f16).astype(f32),
            x.astype(f8e4m3),
            x.astype(f8e5m2).astype(f32),
            x.astype(f64) * 1e300,
            x.astype(i32),
            jnp.clip(x, 0, 255).astype(u8),
            x.astype(bool),
            lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10),
            lax.reduce_precision(x, exponent_bits=8, mantissa_bits=7),
            lax.bitcast_convert_type(x, u32),
            lax.bitcast_convert_type(lax.bitcast_convert_type(x, i32) + 1, f32),
            lax.bitcast_convert_type(x, u16),  # f32[n] -> u16[n,2]
            x.astype(bf16),
        )

    return f, (x,)


@program("argmax", "argmax/argmin (variadic reduce) incl. ties and a NaN row; max/min values")
def _(rng):
    x = np.round(randn(rng, (5, 7)), 0).astype(f32)
    x[3, 2] = np.nan
    return (lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0), jnp.argmax(x), jnp.max(x, axis=1))), (x,)


@program("einsum", "einsum with batch dims, contraction over multiple dims, outer product, trace-like diag")
def _(rng):
    a = randn(rng, (2, 3, 4))
    b = randn(rng, (2, 4, 5))
    q = randn(rng, (2, 2, 3, 4))
    k = randn(rng, (2, 2, 6, 4))
    c = randn(rng, (3, 4))

    def f(a, b, q, k, c):
        return (
            jnp.einsum("bij,bjk->bik", a, b),
            jnp.einsum("bhqd,bhkd->bhqk", q, k),
            jnp.einsum("bij,ij->b", a, c),
            jnp.einsum("i,j->ij", c[0], c[1]),
            jnp.einsum("ij,ij->i", c, c),
            jnp.einsum("bij->bji", a) * 2,
        )

    return f, (a, b, q, k, c)


@program("logsumexp", "jax.scipy.special.logsumexp along axes, with -inf entries and weights")
def _(rng):
    x = randn(rng, (4, 6), f32, 10.0)
    x[1, :] = -np.inf
    x[2, 3] = -np.inf
    w = uniform(rng, (4, 6), 0.1, 2.0)
    lse = jsp.special.logsumexp
    return (lambda x, w: (lse(x, axis=1), lse(x, axis=0), lse(x[2:], b=w[2:], axis=1))), (x, w)


@program("clamp_round", "round half-even, round away, floor, ceil, trunc, sign, lax.clamp, jnp.clip")
def _(rng):
    x = np.concatenate([np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.0, 0.0], f32), randn(rng, (8,), f32, 3.0)])
    x = x.astype(f32)

    def f(x):
        return (
            jnp.round(x),
            lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
            jnp.floor(x),
            jnp.ceil(x),
            jnp.trunc(x),
            jnp.sign(x),
            lax.clamp(jnp.float32(-1.0), x, jnp.float32(1.5)),
            jnp.clip(x, -2.0, 2.0),
            jnp.rint(x).astype(jnp.int32),
            jnp.isnan(x / x),
            jnp.isfinite(1.0 / x),
        )

    return f, (x,)


@program("reductions", "sum/prod/max/min/mean/var over axes in f32, s32, pred; jnp.linalg.norm")
def _(rng):
    x = randn(rng, (3, 4, 5))
    n = rng.randint(-3, 4, (4, 5)).astype(i32)

    def f(x, n):
        return (
            jnp.sum(x, axis=(0, 2)),
            jnp.prod(x, axis=1),
            jnp.max(x, axis=0),
            jnp.min(x),
            jnp.mean(x, axis=-1),
            jnp.var(x, axis=1),
            jnp.sum(n, axis=0),
            jnp.max(n),
            jnp.count_nonzero(n > 0, axis=1),
            jnp.linalg.norm(x[0]),
        )

    return f, (x, n)


@program("activations", "common activations: relu, gelu (erf and tanh), silu, softplus, elu, leaky_relu, sigmoid, log_sigmoid")
def _(rng):
    x = randn(rng, (4, 16), f32, 3.0)
    nn = jax.nn
    return (
        lambda x: (
            nn.relu(x),
            nn.gelu(x, approximate=False),
            nn.gelu(x, approximate=True),
            nn.silu(x),
            nn.softplus(x),
            nn.elu(x),
            nn.leaky_relu(x, 0.1),
            nn.sigmoid(x),
            nn.log_sigmoid(x),
            nn.relu6(x),
        )
    ), (x,)


@program("conv_variants", "strided/dilated NCHW conv, depthwise (feature_group_count), 1-D conv, conv_transpose")
def _(rng):
    x = randn(rng, (2, 3, 9, 9))
    w = randn(rng, (6, 3, 3, 3), f32, 0.3)
    xd = randn(rng, (1, 7, 7, 4))
    wd = randn(rng, (3, 3, 1, 4), f32, 0.3)
    x1 = randn(rng, (2, 10, 3))
    w1 = randn(rng, (5, 3, 2), f32, 0.3)
    wt = randn(rng, (3, 3, 4, 2), f32, 0.3)

    def f(x, w, xd, wd, x1, w1, wt):
        a = lax.conv_general_dilated(x, w, (2, 2), ((1, 1), (0, 2)), rhs_dilation=(2, 1))
        b = lax.conv_general_dilated(
            xd, wd, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=4
        )
        c = lax.conv_general_dilated(x1, w1, (1,), "VALID", dimension_numbers=("NWC", "WIO", "NWC"))
        d = lax.conv_transpose(xd, wt, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        e = lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (0, 1)), lhs_dilation=(2, 2))
        return a, b, c, d, e

    return f, (x, w, xd, wd, x1, w1, wt)


@program("remat_grad", "jax.checkpoint'ed 2-layer tanh net, grad wrt weights (opt-barrier)")
def _(rng):
    w1 = randn(rng, (8, 8), f32, 0.3)
    w2 = randn(rng, (8, 4), f32, 0.3)
    x = randn(rng, (3, 8))

    @jax.checkpoint
    def layer(w, h):
        return jnp.tanh(h @ w)

    def loss(w1, w2, x):
        return jnp.sum(layer(w2, layer(w1, x)) ** 2)

    return jax.grad(loss, argnums=(0, 1)), (w1, w2, x)


@program("per_example_grads", "vmap(grad) per-example gradients of a logistic-regression loss")
def _(rng):
    w = randn(rng, (6,))
    b = np.float32(0.1)
    x = randn(rng, (5, 6))
    y = (rng.rand(5) < 0.5).astype(f32)

    def loss(w, b, x, y):
        z = x @ w + b
        return jnp.logaddexp(0.0, z) - y * z

    return jax.vmap(jax.grad(loss, argnums=(0, 1)), in_axes=(None, None, 0, 0)), (w, b, x, y)


@program("adam_step", "Adam optimizer update on a param pytree with an s32 step counter")
def _(rng):
    params = {"w": randn(rng, (4, 3)), "b": randn(rng, (3,))}
    grads = {"w": randn(rng, (4, 3)), "b": randn(rng, (3,))}
    m = {"w": randn(rng, (4, 3), f32, 0.1), "b": randn(rng, (3,), f32, 0.1)}
    v = {"w": uniform(rng, (4, 3), 0.0, 0.1), "b": uniform(rng, (3,), 0.0, 0.1)}
    step = np.int32(3)

    def adam(params, grads, m, v, step, lr=1e-2, b1=0.9, b2=0.999, eps=1e-8):
        t = step + 1
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        mh = jax.tree_util.tree_map(lambda m: m / (1 - b1 ** t.astype(jnp.float32)), m)
        vh = jax.tree_util.tree_map(lambda v: v / (1 - b2 ** t.astype(jnp.float32)), v)
        params = jax.tree_util.tree_map(lambda p, a, b: p - lr * a / (jnp.sqrt(b) + eps), params, mh, vh)
        return params, m, v, t

    return adam, (params, grads, m, v, step)


@program("complex_ops", "complex64 arithmetic: mul, div, abs, angle, conj, exp, real/imag, complex()")
def _(rng):
    z = (randn(rng, (6,)) + 1j * randn(rng, (6,))).astype(np.complex64)
    w = (randn(rng, (6,)) + 1j * randn(rng, (6,))).astype(np.complex64)

    def f(z, w):
        return z * w + z / w, jnp.abs(z), jnp.angle(w), jnp.exp(jnp.conj(z)), lax.complex(jnp.real(z), jnp.imag(w)), jnp.sqrt(z)

    return f, (z, w)


@program("slicing", "static slices with strides, negative steps, x[..., None], squeeze, split")
def _(rng):
    x = randn(rng, (6, 7))

    def f(x):
        a, b, c = jnp.split(x[:, :6], 3, axis=1)
        return x[1:5:2, ::-2], x[-1], x[..., None][:, 3], jnp.squeeze(x[2:3, 4:5]), a + b - c

    return f, (x,)


@program("lax_map", "lax.map over rows (scan without carry) applying a small per-row computation")
def _(rng):
    x = randn(rng, (5, 4))

    def f(x):
        return lax.map(lambda r: jnp.sort(r) * jnp.sum(r ** 2), x)

    return f, (x,)


@program("sort_nan_ints", "jnp.sort of f64 with NaN/inf/-0.0, sort of s64 and u8, stable argsort descending")
def _(rng):
    x = np.array([3.0, np.nan, -np.inf, 0.0, -0.0, np.inf, -1.5, 2.0, np.nan, -7.0], f64)
    n = rng.randint(-100, 100, (9,)).astype(i64)
    c = rng.randint(0, 256, (9,)).astype(u8)

    def f(x, n, c):
        return jnp.sort(x), jnp.sort(n), jnp.sort(c), jnp.argsort(n % 4, descending=True, stable=True)

    return f, (x, n, c)


# ---------------------------------------------------------------------------
# Saving / verifying

HLO_DTYPE = {
    "float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16",
    "float8_e4m3fn": "f8e4m3fn", "float8_e5m2": "f8e5m2",
    "int8": "s8", "int16": "s16", "int32": "s32", "int64": "s64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "bool": "pred", "complex64": "c64", "complex128": "c128",
}
AS_BITS = {"bfloat16": np.uint16, "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8}


def describe(a):
    return "%s[%s]" % (HLO_DTYPE[a.dtype.name], ",".join(str(d) for d in a.shape))


def to_storable(a):
    a = np.asarray(a)
    if a.dtype.name in AS_BITS:
        return a.view(AS_BITS[a.dtype.name])
    return a


def from_storable(stored, like_dtype):
    dt = np.dtype(like_dtype)
    if dt.name in AS_BITS:
        return stored.view(dt)
    return stored


def entry_param_count(hlo_text):
    """Number of parameter(...) instructions in the ENTRY computation."""
    lines = hlo_text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("ENTRY "))
    n = 0
    for l in lines[start + 1:]:
        if l.startswith("}"):
            break
        if re.search(r"\bparameter\(\d+\)", l):
            n += 1
    return n


def build(name, build_fn):
    f, args = build_fn(rng_for(name))
    leaves, treedef = jax.tree_util.tree_flatten(args)
    leaves = [np.asarray(l) for l in leaves]
    for l in leaves:
        assert l.dtype.name in HLO_DTYPE, (name, l.dtype)
    args = jax.tree_util.tree_unflatten(treedef, leaves)
    jf = jax.jit(f, keep_unused=True)
    return jf, args, leaves, treedef


def bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return a.tobytes() == b.tobytes()


def after_text(compiled):
    mods = compiled.runtime_executable().hlo_modules()
    assert len(mods) == 1, len(mods)
    import jaxlib._hlo as _hlo  # where HloPrintOptions lives in jaxlib 0.12

    opts = _hlo.HloPrintOptions()
    opts.print_large_constants = True
    return mods[0].to_string(opts)


def generate(out):
    rows = []
    for name, desc, build_fn in PROGRAMS:
        d = os.path.join(out, name)
        try:
            jf, args, leaves, _ = build(name, build_fn)
            lowered = jf.lower(*args)
            before = lowered.compiler_ir("hlo").as_hlo_text(print_large_constants=True)
            compiled = lowered.compile()
            after = after_text(compiled)
            result = jf(*args)
        except Exception as e:  # noqa: BLE001
            print(f"FAILED {name}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        outs = [np.asarray(o) for o in jax.tree_util.tree_leaves(result)]
        np_before = entry_param_count(before)
        np_after = entry_param_count(after)
        assert np_before == len(leaves) == np_after, (name, np_before, np_after, len(leaves))

        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "before_optimizations.hlo"), "w") as fh:
            fh.write(before)
        with open(os.path.join(d, "after_optimizations.hlo"), "w") as fh:
            fh.write(after)
        np.savez(os.path.join(d, "inputs.npz"), **{f"in{i}": to_storable(a) for i, a in enumerate(leaves)})
        np.savez(os.path.join(d, "outputs.npz"), **{f"out{i}": to_storable(a) for i, a in enumerate(outs)})

        notes = []
        for kind, arrs, prefix in (("in", leaves, "in"), ("out", outs, "out")):
            for i, a in enumerate(arrs):
                if a.dtype.name in AS_BITS:
                    notes.append(f"{prefix}{i}:{a.dtype.name}-as-{np.dtype(AS_BITS[a.dtype.name]).name.replace('uint', 'u')}")
        if "custom-call" in before:
            targets = sorted(set(re.findall(r'custom_call_target="([^"]+)"', before)))
            notes.append("custom-call:" + ",".join(targets))
        rows.append(
            (
                name,
                desc,
                " ".join(f"in{i}:{describe(a)}" for i, a in enumerate(leaves)),
                " ".join(f"out{i}:{describe(a)}" for i, a in enumerate(outs)),
                " ".join(notes) or "-",
            )
        )
        print(f"ok {name}: {len(leaves)} inputs, {len(outs)} outputs")

    with open(os.path.join(out, "MANIFEST.tsv"), "w") as fh:
        fh.write("name\tdescription\tinputs\toutputs\tnotes\n")
        for r in rows:
            fh.write("\t".join(r) + "\n")
    write_readme(out, len(rows))


def verify(out):
    ok = True
    names = {n for n, _, _ in PROGRAMS}
    manifest = [l.split("\t")[0] for l in open(os.path.join(out, "MANIFEST.tsv")).read().splitlines()[1:]]
    assert set(manifest) <= names, set(manifest) - names
    for name, desc, build_fn in PROGRAMS:
        if name not in manifest:
            print(f"not in corpus: {name}")
            continue
        d = os.path.join(out, name)
        errs = []
        for fn in ("before_optimizations.hlo", "after_optimizations.hlo"):
            text = open(os.path.join(d, fn)).read()
            if not text.startswith("HloModule"):
                errs.append(f"{fn} does not start with HloModule")
            if "{...}" in text:
                errs.append(f"{fn} contains elided constant {{...}}")
        before = open(os.path.join(d, "before_optimizations.hlo")).read()
        if "%" in before:
            errs.append("before_optimizations.hlo has % sigils")
        jf, args, leaves, treedef = build(name, build_fn)
        with np.load(os.path.join(d, "inputs.npz")) as z:
            if sorted(z.files, key=lambda k: int(k[2:])) != [f"in{i}" for i in range(len(leaves))]:
                errs.append(f"input keys {z.files}")
            loaded = [from_storable(z[f"in{i}"], l.dtype) for i, l in enumerate(leaves)]
        for i, (a, b) in enumerate(zip(loaded, leaves)):
            if not bits_equal(a, b):
                errs.append(f"in{i} differs from freshly built input")
        if entry_param_count(before) != len(loaded):
            errs.append("entry parameter count mismatch")
        res = [np.asarray(o) for o in jax.tree_util.tree_leaves(jf(*jax.tree_util.tree_unflatten(treedef, loaded)))]
        with np.load(os.path.join(d, "outputs.npz")) as z:
            if len(z.files) != len(res):
                errs.append(f"{len(z.files)} outputs stored, {len(res)} computed")
            for i, r in enumerate(res):
                s = from_storable(z[f"out{i}"], r.dtype)
                if not bits_equal(s, r):
                    errs.append(f"out{i} differs on re-run")
        if errs:
            ok = False
            print(f"VERIFY FAIL {name}: " + "; ".join(errs))
    print("verify:", "all ok" if ok else "FAILURES")
    return ok


def write_readme(out, n):
    import jaxlib

    text = f"""# HLO test corpus

Generated by `tools/gen_corpus.py` from {n} real JAX programs; do not edit by hand.
Regenerate (needs Python >= 3.12 and JAX from PyPI, CPU only):

    python3.12 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax jaxlib numpy
    /tmp/jaxenv/bin/python tools/gen_corpus.py [--out corpus]      # writes, then verifies
    /tmp/jaxenv/bin/python tools/gen_corpus.py --verify             # verify only

Generated with jax {jax.__version__}, jaxlib {jaxlib.__version__}, numpy {np.__version__},
Python {platform.python_version()} on {platform.machine()}, with `jax_enable_x64` on.

## Layout

One directory per program, `NAME/`:

- `before_optimizations.hlo` - HLO as lowered by JAX, before any XLA pass
  (`lower(...).compiler_ir('hlo').as_hlo_text(print_large_constants=True)`; no `%` sigils,
  no metadata).
- `after_optimizations.hlo` - XLA:CPU's optimized, scheduled module (fusions, layouts, `%`
  sigils, metadata, FileNames/FunctionNames/FileLocations/StackFrames tables), printed with
  large constants in full.
- `inputs.npz` - `in0`, `in1`, ...: one array per ENTRY parameter, in parameter order
  (the flattened pytree of the JAX arguments; dict keys sorted). Match by the `N` of
  `parameter(N)`: the ENTRY body does not list parameters in order.
- `outputs.npz` - `out0`, `out1`, ...: XLA:CPU's results in flattened result-tuple order
  (a non-tuple result is `out0`).

`MANIFEST.tsv` (header row, tab separated): name, description, inputs, outputs, notes.
Shapes use HLO type names, e.g. `in0:f32[8,16] in1:s32[]`.

## Conventions

- npz files are uncompressed (`np.savez`, zip "stored"), little-endian `.npy` v1 members.
- bf16 arrays are stored as their `uint16` bit patterns, f8 (`f8e4m3fn`, `f8e5m2`) arrays as
  `uint8` bit patterns; the notes column lists each such key, e.g. `out2:bfloat16-as-u16`.
  Every other dtype (f16, f32, f64, c64, s8..s64, u8..u64, bool/pred) is stored natively.
- Outputs were checked to be bit-identical on re-running the jitted function.
- Programs whose notes say `custom-call:...` call LAPACK (potrf/getrf/trsm) through XLA:CPU FFI
  custom calls (`jax.scipy.linalg.solve_triangular` too: on CPU it becomes a trsm custom-call,
  not `triangular-solve`); their outputs are LAPACK's, bit-exact reproduction is not expected.
"""
    with open(os.path.join(out, "README.md"), "w") as fh:
        fh.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus"))
    ap.add_argument("--verify", action="store_true", help="only verify an existing corpus")
    ap.add_argument("--only", nargs="*", help="restrict to these program names (debugging)")
    a = ap.parse_args()
    out = os.path.normpath(a.out)
    if a.only:
        PROGRAMS[:] = [p for p in PROGRAMS if p[0] in a.only]
    if not a.verify:
        if os.path.isdir(out) and not a.only:
            for entry in os.listdir(out):
                p = os.path.join(out, entry)
                if os.path.isdir(p) and os.path.exists(os.path.join(p, "before_optimizations.hlo")):
                    shutil.rmtree(p)
        os.makedirs(out, exist_ok=True)
        generate(out)
    sys.exit(0 if verify(out) else 1)


if __name__ == "__main__":
    main()
