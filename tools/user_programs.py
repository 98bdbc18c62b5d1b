#!/usr/bin/env python3
"""Write programs as users write them (flax and optax models, training steps, samplers,
scans) at realistic sizes, for `tools/bench_vs_xla.py --dir`.

Run by hand (never by the test suite); needs jax, flax and optax from PyPI:

    pip install jax flax optax
    python3 tools/user_programs.py /tmp/user-programs            # every program
    python3 tools/user_programs.py /tmp/user-programs --only lstm_lm,moe_einsum
    python3 tools/bench_vs_xla.py --dir /tmp/user-programs

Each program becomes DIR/NAME/before_optimizations.hlo (JAX's module before XLA's
optimizations, as `jax.jit(f).lower(...).as_text(dialect="hlo")` prints it), inputs.npz
(`in0..`, the flattened arguments in parameter order) and outputs.npz (`out0..`, what
XLA:CPU computed). The sizes are chosen so that XLA:CPU takes roughly 5-300 ms on a
2-core machine. None of these programs is in the corpus or tuned for: they measure.
"""

import argparse
import os
import sys

import numpy as np

import jax
import jax.numpy as jnp
import flax.linen as nn
import optax


def rng(seed):
    return np.random.RandomState(seed)


def ids(seed, shape, vocab):
    return jnp.asarray(rng(seed).randint(0, vocab, shape), jnp.int32)


def normal(seed, shape, dtype=jnp.float32, scale=1.0):
    return jnp.asarray(rng(seed).randn(*shape) * scale, dtype)


class LstmLM(nn.Module):
    """Embedding, an LSTM over time (flax's nn.RNN: a scan carrying (c, h)), a head."""
    vocab: int = 1024
    hidden: int = 256

    @nn.compact
    def __call__(self, x):
        x = nn.Embed(self.vocab, 128)(x)
        y = nn.RNN(nn.OptimizedLSTMCell(self.hidden))(x)
        return nn.Dense(self.vocab)(y)


class Block(nn.Module):
    """A pre-norm transformer block (causal self-attention and an MLP)."""
    d: int
    heads: int

    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm()(x)
        mask = nn.make_causal_mask(jnp.ones(x.shape[:2]))
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads)(h, h, mask=mask)
        h = nn.LayerNorm()(x)
        h = nn.Dense(4 * self.d)(h)
        return x + nn.Dense(self.d)(nn.gelu(h))


class Gpt(nn.Module):
    vocab: int = 2048
    d: int = 256
    layers: int = 2
    heads: int = 4
    max_len: int = 128

    @nn.compact
    def __call__(self, tokens):
        x = nn.Embed(self.vocab, self.d)(tokens)
        pos = self.param("pos", nn.initializers.normal(0.02), (self.max_len, self.d))
        x = x + pos[: tokens.shape[1]]
        for _ in range(self.layers):
            x = Block(self.d, self.heads)(x)
        return nn.Dense(self.vocab)(nn.LayerNorm()(x))


class ResBlock(nn.Module):
    """A ResNet basic block in NHWC with batch norm (inference statistics)."""
    c: int

    @nn.compact
    def __call__(self, x):
        h = nn.Conv(self.c, (3, 3))(x)
        h = nn.relu(nn.BatchNorm(use_running_average=True)(h))
        h = nn.Conv(self.c, (3, 3))(h)
        h = nn.BatchNorm(use_running_average=True)(h)
        return nn.relu(x + h)


class UNetBlock(nn.Module):
    """A diffusion U-Net block: GroupNorm, SiLU, a 3x3 convolution, twice, residual."""
    c: int

    @nn.compact
    def __call__(self, x):
        h = nn.Conv(self.c, (3, 3))(nn.silu(nn.GroupNorm(num_groups=32)(x)))
        h = nn.Conv(self.c, (3, 3))(nn.silu(nn.GroupNorm(num_groups=32)(h)))
        return x + h


class Denoiser(nn.Module):
    @nn.compact
    def __call__(self, x, t):
        temb = jnp.concatenate([jnp.sin(t * jnp.arange(1, 33)), jnp.cos(t * jnp.arange(1, 33))])
        h = nn.Dense(512)(jnp.concatenate([x, jnp.broadcast_to(temb, (x.shape[0], 64))], -1))
        h = nn.Dense(512)(nn.silu(h))
        return nn.Dense(x.shape[-1])(nn.silu(h))


# ---------------------------------------------------------------------------
# Second batch (2026-11-29): the held-out models (GPT-2 decode, ResNet-18, ViT, GNN, ...)
# and programs a new user wrote.

def layer_norm(x, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + eps) * g + b


def gpt2_params(seed, vocab, max_len, d, layers):
    r = rng(seed)
    n = lambda *s: jnp.asarray(r.randn(*s) * 0.02, jnp.float32)  # noqa: E731
    z = lambda *s: jnp.zeros(s, jnp.float32)  # noqa: E731
    o = lambda *s: jnp.ones(s, jnp.float32)  # noqa: E731
    return {
        "wte": n(vocab, d), "wpe": n(max_len, d), "lnf_g": o(d), "lnf_b": z(d),
        "layers": [{
            "ln1_g": o(d), "ln1_b": z(d), "w_qkv": n(d, 3 * d), "b_qkv": z(3 * d),
            "w_o": n(d, d), "b_o": z(d), "ln2_g": o(d), "ln2_b": z(d),
            "w_fc": n(d, 4 * d), "b_fc": z(4 * d), "w_proj": n(4 * d, d), "b_proj": z(d),
        } for _ in range(layers)],
    }


def gpt2_decode_step(params, cache_k, cache_v, token, pos, heads):
    """One token of GPT-2 with a KV cache [layers, batch, max_len, heads, head_dim]:
    the new key and value written with dynamic_update_slice at `pos`, attention over the
    cache masked to positions <= pos, tied embeddings for the logits."""
    b = token.shape[0]
    d = params["wte"].shape[1]
    hd = d // heads
    t = cache_k.shape[2]
    x = params["wte"][token] + params["wpe"][pos]
    for i, lp in enumerate(params["layers"]):
        h = layer_norm(x, lp["ln1_g"], lp["ln1_b"])
        q, k, v = jnp.split(h @ lp["w_qkv"] + lp["b_qkv"], 3, axis=-1)
        q = q.reshape(b, heads, hd)
        cache_k = jax.lax.dynamic_update_slice(cache_k, k.reshape(1, b, 1, heads, hd), (i, 0, pos, 0, 0))
        cache_v = jax.lax.dynamic_update_slice(cache_v, v.reshape(1, b, 1, heads, hd), (i, 0, pos, 0, 0))
        att = jnp.einsum("bhd,bthd->bht", q, cache_k[i]) / np.sqrt(hd)
        att = jnp.where(jnp.arange(t)[None, None, :] <= pos, att, -1e10)
        att = jax.nn.softmax(att, axis=-1)
        o = jnp.einsum("bht,bthd->bhd", att, cache_v[i]).reshape(b, d)
        x = x + o @ lp["w_o"] + lp["b_o"]
        h = layer_norm(x, lp["ln2_g"], lp["ln2_b"])
        x = x + jax.nn.gelu(h @ lp["w_fc"] + lp["b_fc"]) @ lp["w_proj"] + lp["b_proj"]
    logits = layer_norm(x, params["lnf_g"], params["lnf_b"]) @ params["wte"].T
    return logits, cache_k, cache_v


class BasicBlock(nn.Module):
    c: int
    stride: int = 1

    @nn.compact
    def __call__(self, x):
        r = x
        y = nn.Conv(self.c, (3, 3), self.stride, padding=1, use_bias=False)(x)
        y = nn.relu(nn.BatchNorm(use_running_average=True)(y))
        y = nn.Conv(self.c, (3, 3), padding=1, use_bias=False)(y)
        y = nn.BatchNorm(use_running_average=True)(y)
        if r.shape != y.shape:
            r = nn.Conv(self.c, (1, 1), self.stride, use_bias=False)(r)
            r = nn.BatchNorm(use_running_average=True)(r)
        return nn.relu(r + y)


class ResNet18(nn.Module):
    classes: int = 1000

    @nn.compact
    def __call__(self, x):
        x = nn.Conv(64, (7, 7), 2, padding=3, use_bias=False)(x)
        x = nn.relu(nn.BatchNorm(use_running_average=True)(x))
        x = nn.max_pool(x, (3, 3), (2, 2), padding="SAME")
        for i, c in enumerate([64, 128, 256, 512]):
            for j in range(2):
                x = BasicBlock(c, 2 if i > 0 and j == 0 else 1)(x)
        return nn.Dense(self.classes)(x.mean(axis=(1, 2)))


class ViT(nn.Module):
    """ViT-S/16-like: patch embedding convolution, class token, pre-norm encoder."""
    d: int = 384
    layers: int = 6
    heads: int = 6
    classes: int = 1000

    @nn.compact
    def __call__(self, img):
        x = nn.Conv(self.d, (16, 16), strides=(16, 16), padding="VALID")(img)
        b = x.shape[0]
        x = x.reshape(b, -1, self.d)
        cls = self.param("cls", nn.initializers.zeros, (1, 1, self.d))
        x = jnp.concatenate([jnp.broadcast_to(cls, (b, 1, self.d)), x], axis=1)
        x = x + self.param("pos", nn.initializers.normal(0.02), (1, x.shape[1], self.d))
        for _ in range(self.layers):
            h = nn.LayerNorm()(x)
            x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads)(h, h)
            h = nn.LayerNorm()(x)
            x = x + nn.Dense(self.d)(nn.gelu(nn.Dense(4 * self.d)(h)))
        return nn.Dense(self.classes)(nn.LayerNorm()(x)[:, 0])


class ConvAutoencoder(nn.Module):
    """Strided convolutions down, transposed convolutions up (NHWC)."""

    @nn.compact
    def __call__(self, x):
        for c in (32, 64, 128):
            x = nn.relu(nn.Conv(c, (3, 3), strides=(2, 2))(x))
        for c in (64, 32):
            x = nn.relu(nn.ConvTranspose(c, (3, 3), strides=(2, 2))(x))
        return nn.sigmoid(nn.ConvTranspose(3, (4, 4), strides=(2, 2))(x))


class SmallCnn(nn.Module):
    """A CIFAR-style classifier."""

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(32, (3, 3))(x))
        x = nn.relu(nn.Conv(64, (3, 3), strides=(2, 2))(x))
        x = nn.relu(nn.Conv(64, (3, 3))(x))
        x = nn.relu(nn.Conv(128, (3, 3), strides=(2, 2))(x))
        x = nn.avg_pool(x, (2, 2), (2, 2))
        x = x.reshape(x.shape[0], -1)
        return nn.Dense(10)(nn.relu(nn.Dense(256)(x)))


# Programs generated with float64 enabled (jax_enable_x64 only while they are lowered and
# run): their arguments are numpy float64 arrays.
X64_PROGRAMS = {"f64_yukawa_nbody"}


def programs_second_batch():
    out = []

    # GPT-2 (4 layers, d 768, 12 heads) decoding one token for 4 sequences at position 700
    # of a 1024-long KV cache.
    L, B, T, D, H = 4, 4, 1024, 768, 12
    gp2 = gpt2_params(40, 8192, T, D, L)
    ck = normal(41, (L, B, T, H, D // H), scale=0.5)
    cv = normal(42, (L, B, T, H, D // H), scale=0.5)
    tok = ids(43, (B,), 8192)
    pos = jnp.asarray(700, jnp.int32)
    out.append(("gpt2_kv_decode",
                lambda p, k, v, t, i: gpt2_decode_step(p, k, v, t, i, H), (gp2, ck, cv, tok, pos)))

    r18 = ResNet18()
    img = normal(44, (4, 128, 128, 3))
    r18p = r18.init(jax.random.PRNGKey(44), img)
    out.append(("resnet18_forward", lambda p, x: r18.apply(p, x), (r18p, img)))

    vit = ViT()
    vimg = normal(45, (2, 224, 224, 3))
    vp = vit.init(jax.random.PRNGKey(45), vimg)
    out.append(("vit_forward", lambda p, x: vit.apply(p, x), (vp, vimg)))

    # A GCN layer then a GAT layer over an edge list: gathers of the source rows,
    # segment_sum (scatter-add) into the destinations, segment_max for the attention
    # softmax, a graph readout.
    N, E, F = 8192, 65536, 128
    src = ids(46, (E,), N)
    dst = ids(47, (E,), N)
    gx = normal(48, (N, F))
    gw = [normal(49 + i, (F, F), scale=F ** -0.5) for i in range(4)]
    ga = normal(53, (2, F), scale=0.1)

    def gnn(x, src, dst, w, a):
        deg = jax.ops.segment_sum(jnp.ones_like(src, jnp.float32), dst, num_segments=N)
        m = jnp.take(x, src, axis=0) @ w[0]
        h = jax.nn.relu(jax.ops.segment_sum(m, dst, num_segments=N) / (deg[:, None] + 1.0) + x @ w[1])
        hw = h @ w[2]
        score = jax.nn.leaky_relu(hw[src] @ a[0] + hw[dst] @ a[1], 0.2)
        smax = jax.ops.segment_max(score, dst, num_segments=N)
        e = jnp.exp(score - smax[dst])
        denom = jax.ops.segment_sum(e, dst, num_segments=N)
        alpha = e / (denom[dst] + 1e-9)
        h = jax.nn.elu(jax.ops.segment_sum(alpha[:, None] * hw[src], dst, num_segments=N))
        return h @ w[3], h.mean(0)
    out.append(("gnn_message_passing", gnn, (gx, src, dst, gw, ga)))

    # float64: four steps of a Yukawa-potential N-body system, energies with log and sin.
    r = rng(54)
    npos = r.rand(1024, 3) * 10.0
    nvel = r.randn(1024, 3) * 0.1
    nmass = r.rand(1024) + 0.5

    def nbody(pos, vel, mass):
        def step(_, s):
            pos, vel = s
            d = pos[:, None, :] - pos[None, :, :]
            r2 = (d * d).sum(-1) + 1e-3
            rr = jnp.sqrt(r2)
            pot = mass[None, :] * jnp.exp(-rr / 2.5) / rr
            f = ((pot * (1.0 / rr + 1.0 / 2.5) / rr)[..., None] * d).sum(1)
            f = f + jnp.sin(pos * 0.3) * 0.01
            vel = vel + 1e-3 * f / mass[:, None]
            return pos + 1e-3 * vel, vel
        pos, vel = jax.lax.fori_loop(0, 4, step, (pos, vel))
        d = pos[:, None, :] - pos[None, :, :]
        r2 = (d * d).sum(-1) + 1e-3
        e_pot = -0.5 * (mass[:, None] * mass[None, :] * jnp.exp(-jnp.sqrt(r2) / 2.5) / jnp.sqrt(r2)).sum()
        e_kin = 0.5 * (mass * (vel * vel).sum(-1)).sum()
        entropy = jnp.log(r2).mean()
        return pos, vel, e_pot + e_kin, entropy
    out.append(("f64_yukawa_nbody", nbody, (npos, nvel, nmass)))

    ae = ConvAutoencoder()
    aimg = normal(55, (8, 128, 128, 3))
    aep = ae.init(jax.random.PRNGKey(55), aimg)
    out.append(("conv_transpose_autoencoder", lambda p, x: ae.apply(p, x), (aep, aimg)))

    # A hand-written GRU under lax.scan (time-major), a head on the last state.
    T_, B_, I_, H_ = 64, 32, 128, 512
    gru_p = {k: normal(56 + i, s, scale=s[0] ** -0.5) for i, (k, s) in enumerate(
        [("wx", (I_, 3 * H_)), ("wh", (H_, 3 * H_)), ("head", (H_, 64))])}
    gru_p["b"] = jnp.zeros((3 * H_,), jnp.float32)
    gxs = normal(60, (T_, B_, I_))

    def gru(p, xs):
        def cell(h, x):
            gx = x @ p["wx"] + p["b"]
            gh = h @ p["wh"]
            rx, zx, nx = jnp.split(gx, 3, -1)
            rh, zh, nh = jnp.split(gh, 3, -1)
            rg = jax.nn.sigmoid(rx + rh)
            z = jax.nn.sigmoid(zx + zh)
            n = jnp.tanh(nx + rg * nh)
            h = (1 - z) * n + z * h
            return h, h
        h, hs = jax.lax.scan(cell, jnp.zeros((xs.shape[1], H_)), xs)
        return h @ p["head"], hs.mean(0)
    out.append(("gru_scan", gru, (gru_p, gxs)))

    # Gray-Scott reaction-diffusion, RK4 under lax.scan, a 5-point Laplacian from jnp.roll.
    ur = rng(61)
    u0 = jnp.asarray(1.0 - 0.5 * ur.rand(256, 256), jnp.float32)
    v0 = jnp.asarray(0.25 * ur.rand(256, 256), jnp.float32)

    def gray_scott(u, v):
        def lap(a):
            return (jnp.roll(a, 1, 0) + jnp.roll(a, -1, 0) + jnp.roll(a, 1, 1)
                    + jnp.roll(a, -1, 1) - 4 * a)

        def f(s):
            u, v = s
            uvv = u * v * v
            return (0.16 * lap(u) - uvv + 0.035 * (1 - u), 0.08 * lap(v) + uvv - 0.095 * v)

        def rk4(s, _):
            h = 0.5
            k1 = f(s)
            k2 = f(jax.tree_util.tree_map(lambda a, k: a + h / 2 * k, s, k1))
            k3 = f(jax.tree_util.tree_map(lambda a, k: a + h / 2 * k, s, k2))
            k4 = f(jax.tree_util.tree_map(lambda a, k: a + h * k, s, k3))
            s = jax.tree_util.tree_map(
                lambda a, b, c, d, e: a + h / 6 * (b + 2 * c + 2 * d + e), s, k1, k2, k3, k4)
            return s, s[1].mean()
        s, trace = jax.lax.scan(rk4, (u, v), None, length=20)
        return s[0], s[1], trace
    out.append(("ode_rk4_gray_scott", gray_scott, (u0, v0)))

    cnn = SmallCnn()
    cimg = normal(62, (32, 32, 32, 3))
    clab = ids(63, (32,), 10)
    cp = cnn.init(jax.random.PRNGKey(62), cimg)
    copt = optax.adam(1e-3)
    cst = copt.init(cp)

    def cnn_step(p, s, x, y):
        def loss(p):
            return optax.softmax_cross_entropy(cnn.apply(p, x), jax.nn.one_hot(y, 10)).mean()
        l, g = jax.value_and_grad(loss)(p)
        u, s = copt.update(g, s, p)
        return optax.apply_updates(p, u), s, l
    out.append(("cnn_train_step", cnn_step, (cp, cst, cimg, clab)))

    # Fresh programs a new user wrote.
    big = normal(64, (1 << 18,))
    rows = normal(65, (64, 4096))
    out.append(("sort_argsort", lambda a, b: (jnp.sort(a), jnp.argsort(b, axis=-1),
                                              jnp.median(b, axis=-1)), (big, rows)))

    spd = normal(66, (32, 256, 256))
    spd = jnp.einsum("bij,bkj->bik", spd, spd) / 256 + jnp.eye(256)
    rhs = normal(67, (32, 256, 8))

    def cholesky_solve(a, b):
        c = jnp.linalg.cholesky(a)
        return jax.scipy.linalg.cho_solve((c, True), b), jnp.log(jnp.diagonal(c, axis1=1, axis2=2)).sum(-1)
    out.append(("linalg_cholesky_solve", cholesky_solve, (spd, rhs)))
    # Kept apart from the Cholesky: XLA:CPU (jaxlib 0.10.2) intermittently deadlocks
    # running a module with both lapack_spotrf_ffi and lapack_sgetrf_ffi on this machine.
    out.append(("linalg_lu_slogdet_inv",
                lambda a: (jnp.linalg.slogdet(a)[1], jnp.linalg.inv(a[0])), (spd,)))

    field = normal(68, (16, 256, 256))

    def spectral(x):
        k = jnp.fft.rfft2(x)
        ky = jnp.fft.fftfreq(256)[:, None]
        kx = jnp.fft.rfftfreq(256)[None, :]
        y = jnp.fft.irfft2(k * jnp.exp(-40.0 * (kx ** 2 + ky ** 2)), s=(256, 256))
        return y, jnp.abs(k).mean(0)
    out.append(("fft_spectral_filter", spectral, (field,)))

    q = normal(69, (4, 512, 8, 64))
    kk = normal(70, (4, 512, 8, 64))
    vv = normal(71, (4, 512, 8, 64))
    t3 = normal(72, (64, 128, 96))
    t4 = normal(73, (96, 128, 256))

    def odd_einsums(q, k, v, a, b):
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / 8.0
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v)
        return o, jnp.einsum("ijk,kjl->li", a, b)
    out.append(("einsum_odd_orders", odd_einsums, (q, kk, vv, t3, t4)))

    keys = jnp.asarray(rng(74).randint(0, 2 ** 31 - 1, (1 << 22,)), jnp.uint32)

    def int_hash_histogram(k):
        h = k ^ (k >> 16)
        h = h * jnp.uint32(0x85EBCA6B)
        h = h ^ (h >> 13)
        h = h * jnp.uint32(0xC2B2AE35)
        h = h ^ (h >> 16)
        bucket = (h % 4096).astype(jnp.int32)
        hist = jnp.bincount(bucket, length=4096)
        return h, hist, jnp.cumsum(hist), (h.astype(jnp.int32) // 7 - (h & 255).astype(jnp.int32)).max()
    out.append(("int_hash_histogram", int_hash_histogram, (keys,)))

    xs = normal(75, (2048, 1024), scale=0.05) + 1.0
    seg = jnp.asarray(np.sort(rng(76).randint(0, 512, 2048)), jnp.int32)

    def scans_segments(x, seg):
        cp = jnp.cumprod(x, axis=0)
        cm = jax.lax.cummax(x, axis=1)
        smax = jax.ops.segment_max(x, seg, num_segments=512, indices_are_sorted=True)
        ssum = jax.ops.segment_sum(x, seg, num_segments=512, indices_are_sorted=True)
        return cp[-1], cm, smax, ssum
    out.append(("cumprod_cummax_segments", scans_segments, (xs, seg)))

    wa = normal(77, (2048, 4096))
    wb = normal(78, (2048, 4096))

    def where_heavy(a, b):
        m = jnp.isfinite(a) & (a > -1.5)
        x = jnp.where(m, jnp.clip(a, -1.0, 1.0), 0.0)
        y = jnp.where(b > 0, jnp.log1p(jnp.abs(b)), -jnp.expm1(-jnp.abs(b)))
        z = jnp.where((x > y) ^ (a < b), x * y, jnp.maximum(x, y))
        z = jnp.nan_to_num(z / (x - y))
        return z, jnp.sum(jnp.where(z > 0, 1, 0)), jnp.argmax(z, axis=1)
    out.append(("where_select_heavy", where_heavy, (wa, wb)))

    bgpt = Gpt(d=512, layers=2, heads=8, max_len=256)
    btoks = ids(79, (2, 256), 2048)
    bgp = jax.tree_util.tree_map(lambda a: a.astype(jnp.bfloat16), bgpt.init(jax.random.PRNGKey(79), btoks))
    out.append(("gpt_bf16_forward", lambda p, t: bgpt.apply(p, t), (bgp, btoks)))
    return out


def programs():
    """(name, function, args) of every program."""
    out = []

    lm = LstmLM()
    toks = ids(0, (16, 64), 1024)
    p = lm.init(jax.random.PRNGKey(0), toks)
    out.append(("lstm_lm", lambda p, x: lm.apply(p, x), (p, toks)))

    gpt = Gpt()
    toks = ids(1, (8, 128), 2048)
    gp = gpt.init(jax.random.PRNGKey(1), toks)
    opt = optax.adamw(1e-3)
    st = opt.init(gp)

    def train_step(params, state, tokens):
        def loss(p):
            logits = gpt.apply(p, tokens[:, :-1])
            return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()
        l, g = jax.value_and_grad(loss)(params)
        upd, state = opt.update(g, state, params)
        return optax.apply_updates(params, upd), state, l
    out.append(("gpt_train_step", train_step, (gp, st, toks)))

    def decode(params, tokens):
        logits = gpt.apply(params, tokens)[:, -1]
        return jax.lax.top_k(logits, 40)
    out.append(("gpt_forward_topk", decode, (gp, toks)))

    x = normal(2, (1024, 256))
    w = normal(3, (8, 256, 512), scale=0.05)
    gate = normal(4, (1024, 8))

    def moe(x, w, gate):
        probs = jax.nn.softmax(gate, -1)
        h = jnp.einsum("td,edf->etf", x, w)
        return jnp.einsum("etf,te->tf", jax.nn.gelu(h), probs)
    out.append(("moe_einsum", moe, (x, w, gate)))

    a = normal(5, (1024, 1024), jnp.bfloat16)
    b = normal(6, (1024, 1024), jnp.bfloat16)
    out.append(("bf16_matmul_f32_acc",
                lambda a, b: jnp.matmul(a, b, preferred_element_type=jnp.float32), (a, b)))

    logits = normal(7, (8, 32000), scale=3.0)
    key = jnp.asarray(jax.random.key_data(jax.random.PRNGKey(7)))

    def top_p(logits, key):
        probs = jax.nn.softmax(logits, -1)
        order = jnp.argsort(-probs, axis=-1)
        sorted_p = jnp.take_along_axis(probs, order, -1)
        keep = jnp.cumsum(sorted_p, -1) - sorted_p < 0.9
        masked = jnp.where(keep, jnp.log(sorted_p), -jnp.inf)
        choice = jax.random.categorical(jax.random.wrap_key_data(key), masked)
        return jnp.take_along_axis(order, choice[:, None], -1)[:, 0]
    out.append(("top_p_sampler", top_p, (logits, key)))

    out.append(("top_k_rows", lambda l: jax.lax.top_k(l, 40), (logits,)))
    out.append(("cumsum_rows", lambda x: jnp.cumsum(x, axis=1), (normal(8, (2048, 2048)),)))

    rb = ResBlock(64)
    img = normal(9, (8, 56, 56, 64))
    rp = rb.init(jax.random.PRNGKey(9), img)
    out.append(("resnet_block", lambda p, x: rb.apply(p, x), (rp, img)))

    ub = UNetBlock(128)
    himg = normal(10, (4, 32, 32, 128))
    up = ub.init(jax.random.PRNGKey(10), himg)
    out.append(("unet_block", lambda p, x: ub.apply(p, x), (up, himg)))

    den = Denoiser()
    xs = normal(11, (64, 128))
    dp = den.init(jax.random.PRNGKey(11), xs, 0.0)

    def sample(params, x):
        def step(x, t):
            eps = den.apply(params, x, t)
            return x - 0.02 * eps, None
        x, _ = jax.lax.scan(step, x, jnp.linspace(1.0, 0.0, 50))
        return x
    out.append(("diffusion_sampler", sample, (dp, xs)))

    def mlp_loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jax.nn.relu(h @ w + b)
        w, b = params[-1]
        return optax.softmax_cross_entropy_with_integer_labels(h @ w + b, y).mean()
    sizes = [784, 1024, 1024, 10]
    mp = [(normal(20 + i, (m, n), scale=m ** -0.5), jnp.zeros((n,)))
          for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:]))]
    adam = optax.adam(1e-3)
    ms = adam.init(mp)
    mx, my = normal(30, (256, 784)), ids(31, (256,), 10)

    def mlp_step(p, s, x, y):
        g = jax.grad(mlp_loss)(p, x, y)
        u, s = adam.update(g, s, p)
        return optax.apply_updates(p, u), s
    out.append(("mlp_adam_step", mlp_step, (mp, ms, mx, my)))
    return out + programs_second_batch()


# Element types numpy's .npy format cannot name are stored as their bit patterns (as
# tools/gen_corpus.py stores them); hloc and tools/bench_vs_xla.py read them back by the
# parameter's type.
AS_BITS = {"bfloat16": np.uint16, "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8}


def storable(a):
    a = np.asarray(a)
    return a.view(AS_BITS[a.dtype.name]) if a.dtype.name in AS_BITS else a


def write(out_dir, name, f, args):
    if name in X64_PROGRAMS:
        jax.config.update("jax_enable_x64", True)
        try:
            return write_program(out_dir, name, f, args)
        finally:
            jax.config.update("jax_enable_x64", False)
    return write_program(out_dir, name, f, args)


def write_program(out_dir, name, f, args):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    jf = jax.jit(f)
    text = jf.lower(*args).as_text(dialect="hlo")
    with open(os.path.join(d, "before_optimizations.hlo"), "w") as fh:
        fh.write(text)
    leaves = jax.tree_util.tree_leaves(args)
    np.savez(os.path.join(d, "inputs.npz"),
             **{f"in{i}": storable(l) for i, l in enumerate(leaves)})
    outs = jax.tree_util.tree_leaves(jf(*args))
    np.savez(os.path.join(d, "outputs.npz"),
             **{f"out{i}": storable(o) for i, o in enumerate(outs)})


def write_programs_cli(doc, programs, write_fn=None, what="program"):
    """The command line every program-writing script shares: `OUT_DIR [--only a,b]`;
    writes each of `programs` (name, function, arguments) with `write_fn`
    (default `write`) and prints its name."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--only", help=f"comma-separated {what} names")
    a = ap.parse_args()
    only = set(a.only.split(",")) if a.only else None
    for name, f, args in programs:
        if only and name not in only:
            continue
        (write_fn or write)(a.out_dir, name, f, args)
        print(name, flush=True)


def main():
    write_programs_cli(__doc__, programs())


if __name__ == "__main__":
    sys.exit(main())
