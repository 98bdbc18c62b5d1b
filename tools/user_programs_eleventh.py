#!/usr/bin/env python3
"""Write an eleventh batch of fresh programs as users write them (issue 30's held-out set),
in the form of `tools/user_programs.py`, for `tools/bench_vs_xla.py --dir`.

Run by hand (never by the test suite); needs jax, flax and optax from PyPI:

    python3 tools/user_programs_eleventh.py /tmp/up11
    python3 tools/user_programs_eleventh.py /tmp/up11 --only fno_1d_burgers_adam_step
    python3 tools/bench_vs_xla.py --dir /tmp/up11 --repeat 3

Each program becomes DIR/NAME/before_optimizations.hlo, inputs.npz and outputs.npz (what
XLA:CPU computed), written as `user_programs_eighth.write_program` does (unused arguments
kept). The programs cover kinds the first ten batches did not: a linear-chain CRF tagger
(forward algorithm as a logsumexp scan, the gold-path score, Viterbi decoding by a max scan
and a reverse backtrack scan) trained by Adam, Transformer-XL attention with a segment
memory and the pad-and-reshape relative shift, float16 training with dynamic loss scaling
(the update and the scale chosen by whether every gradient is finite), grouped-query
attention decoding with RoPE into a ring KV cache (`fori_loop`, writes at `pos % window`),
a capsule network's dynamic routing by agreement with a margin loss, a neural spline flow
(rational-quadratic coupling layers, bins found by `searchsorted`), Metropolis sweeps of
a checkerboard Ising model in `fori_loop`, a D2Q9 lattice-Boltzmann flow past a cylinder,
a ConvLSTM video predictor (convolutions inside a scan) with its gradient, Hamiltonian
Monte Carlo chains for Bayesian logistic regression (leapfrog gradients inside a scan
inside a scan, under vmap), a 1-D Fourier neural operator (rfft, complex einsum over
kept modes, irfft) trained by Adam, and an oblivious decision-tree ensemble (CatBoost-style:
feature gathers, bit-packed leaf indices, leaf gathers) scored with its log loss.
Sizes are chosen so that XLA:CPU takes roughly 5-300 ms on a 2-core machine; nothing is
tuned for hloc.
"""

import os
import sys

import numpy as np

import jax
import jax.numpy as jnp
import flax.linen as nn
import optax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from user_programs import ids, normal, write_programs_cli  # noqa: E402
from user_programs_eighth import write_program  # noqa: E402


# --- a linear-chain CRF tagger -------------------------------------------------------

class Emitter(nn.Module):
    """Token embeddings through a small MLP to per-tag emission scores."""
    vocab: int = 4096
    tags: int = 48

    @nn.compact
    def __call__(self, tok):
        h = nn.Embed(self.vocab, 128)(tok)
        h = nn.tanh(nn.Dense(256)(h))
        return nn.Dense(self.tags)(h)                                  # [b, t, tags]


def crf_log_partition(emit, trans, mask):
    """The forward algorithm over time: alpha_t = logsumexp(alpha + trans) + emit_t, kept
    where the step is inside the sequence."""
    def step(alpha, x):
        e, m = x
        nxt = jax.nn.logsumexp(alpha[:, :, None] + trans[None], axis=1) + e
        return jnp.where(m[:, None], nxt, alpha), None
    alpha, _ = jax.lax.scan(step, emit[:, 0], (jnp.swapaxes(emit[:, 1:], 0, 1),
                                               jnp.swapaxes(mask[:, 1:], 0, 1)))
    return jax.nn.logsumexp(alpha, -1)


def crf_gold_score(emit, trans, tags, mask):
    e = jnp.take_along_axis(emit, tags[..., None], -1)[..., 0]
    t = trans[tags[:, :-1], tags[:, 1:]]
    return (e * mask).sum(-1) + (t * mask[:, 1:]).sum(-1)


def viterbi(emit, trans, mask):
    """Max-product forward scan keeping back-pointers, then a reverse scan following them."""
    def fwd(score, x):
        e, m = x
        cand = score[:, :, None] + trans[None]
        best = cand.max(1) + e
        bp = cand.argmax(1)
        return jnp.where(m[:, None], best, score), jnp.where(m[:, None], bp,
                                                              jnp.arange(trans.shape[0]))
    score, bps = jax.lax.scan(fwd, emit[:, 0], (jnp.swapaxes(emit[:, 1:], 0, 1),
                                                jnp.swapaxes(mask[:, 1:], 0, 1)))
    last = score.argmax(-1)

    def back(tag, bp):
        prev = jnp.take_along_axis(bp, tag[:, None], 1)[:, 0]
        return prev, prev
    _, path = jax.lax.scan(back, last, bps, reverse=True)
    return jnp.concatenate([jnp.swapaxes(path, 0, 1), last[:, None]], 1)


# --- Transformer-XL --------------------------------------------------------------------

def rel_shift(x):
    """Transformer-XL's relative shift: pad a zero column, fold, drop the first row."""
    b, h, q, k = x.shape
    x = jnp.pad(x, ((0, 0), (0, 0), (0, 0), (1, 0)))
    x = x.reshape(b, h, k + 1, q)
    return x[:, :, 1:].reshape(b, h, q, k)


class RelAttnLayer(nn.Module):
    d: int = 256
    heads: int = 8

    @nn.compact
    def __call__(self, x, mem, pos_emb):
        b, q, d = x.shape
        hd = d // self.heads
        cat = jnp.concatenate([mem, x], 1)                             # [b, k, d]
        k = cat.shape[1]
        h = nn.LayerNorm()(cat)
        qkv = nn.Dense(3 * d, use_bias=False)(h)
        qh, kh, vh = jnp.split(qkv, 3, -1)
        qh = qh[:, -q:].reshape(b, q, self.heads, hd)
        kh = kh.reshape(b, k, self.heads, hd)
        vh = vh.reshape(b, k, self.heads, hd)
        r = nn.Dense(d, use_bias=False)(pos_emb).reshape(k, self.heads, hd)
        u = self.param("u", nn.initializers.zeros, (self.heads, hd))
        v = self.param("v", nn.initializers.zeros, (self.heads, hd))
        ac = jnp.einsum("bqhd,bkhd->bhqk", qh + u, kh)
        bd = rel_shift(jnp.einsum("bqhd,khd->bhqk", qh + v, r))
        mask = jnp.arange(k)[None] <= (jnp.arange(q)[:, None] + k - q)
        s = jnp.where(mask, (ac + bd) / np.sqrt(hd), -1e30)
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), vh).reshape(b, q, d)
        x = x + nn.Dense(d)(o)
        return x + nn.Dense(d)(nn.gelu(nn.Dense(4 * d)(nn.LayerNorm()(x))))


class TransformerXl(nn.Module):
    vocab: int = 4096
    d: int = 256
    layers: int = 2

    @nn.compact
    def __call__(self, tok, mems):
        x = nn.Embed(self.vocab, self.d)(tok)
        q = tok.shape[1]
        k = q + mems.shape[2]
        pos = jnp.arange(k - 1, -1, -1.0)
        inv = 1.0 / (10000 ** (jnp.arange(0, self.d, 2) / self.d))
        ang = pos[:, None] * inv[None]
        pos_emb = jnp.concatenate([jnp.sin(ang), jnp.cos(ang)], -1)
        new_mems = []
        for i in range(self.layers):
            new_mems.append(x)
            x = RelAttnLayer(self.d)(x, jax.lax.stop_gradient(mems[i]), pos_emb)
        return nn.Dense(self.vocab)(nn.LayerNorm()(x)), jnp.stack(new_mems)


# --- float16 training with dynamic loss scaling ----------------------------------------

class HalfMlp(nn.Module):
    """An MLP with LayerNorm whose compute and parameters are float16 (the f32 master
    copy is cast by the step)."""

    @nn.compact
    def __call__(self, x):
        for w in (1024, 1024, 512):
            x = nn.gelu(nn.LayerNorm(dtype=jnp.float16)(nn.Dense(w, dtype=jnp.float16)(x)))
        return nn.Dense(10, dtype=jnp.float16)(x)


# --- GQA decode with RoPE and a ring KV cache ------------------------------------------

def rope(x, pos):
    """Rotary embedding of [..., heads, hd] at absolute positions `pos` (shape [b])."""
    hd = x.shape[-1]
    inv = 1.0 / (10000 ** (jnp.arange(0, hd, 2) / hd))
    ang = pos[:, None].astype(jnp.float32) * inv[None]                 # [b, hd/2]
    cos = jnp.cos(ang)[:, None]
    sin = jnp.sin(ang)[:, None]
    x1, x2 = x[..., ::2], x[..., 1::2]
    return jnp.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).reshape(x.shape)


def rms_norm(x, w):
    return x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w


# --- capsules --------------------------------------------------------------------------

def squash(s, axis=-1):
    n2 = (s * s).sum(axis, keepdims=True)
    return n2 / (1 + n2) * s / jnp.sqrt(n2 + 1e-8)


class CapsNet(nn.Module):
    """Sabour et al. 2017 at half width: a 9x9 convolution of 128 maps, primary capsules
    (a strided 9x9 convolution to 16 maps of 8-D capsules), 10 digit capsules of 16-D by 3
    iterations of routing by agreement."""

    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.Conv(128, (9, 9), padding="VALID")(x))         # [b, 20, 20, 128]
        p = nn.Conv(16 * 8, (9, 9), strides=2, padding="VALID")(h)     # [b, 6, 6, 128]
        b = x.shape[0]
        u = squash(p.reshape(b, -1, 8))                                # [b, 576, 8]
        w = self.param("w", nn.initializers.normal(0.05), (u.shape[1], 10, 16, 8))
        uhat = jnp.einsum("nkdc,bnc->bnkd", w, u)                      # [b, 576, 10, 16]
        logits = jnp.zeros(uhat.shape[:3])
        for i in range(3):
            c = jax.nn.softmax(logits, -1)
            v = squash((c[..., None] * uhat).sum(1))                   # [b, 10, 16]
            if i < 2:
                logits = logits + jnp.einsum("bnkd,bkd->bnk", uhat, v)
        return v


# --- neural spline flow ---------------------------------------------------------------

def rq_spline(x, w, h, d, bound=3.0):
    """Rational-quadratic spline (Durkan et al. 2019) on [-bound, bound], identity
    outside; returns y and log|dy/dx|. w, h: [..., K] unnormalised widths and heights;
    d: [..., K-1] unnormalised inner derivatives."""
    k = w.shape[-1]
    w = jax.nn.softmax(w, -1) * (1 - 1e-3 * k) + 1e-3
    h = jax.nn.softmax(h, -1) * (1 - 1e-3 * k) + 1e-3
    cw = jnp.pad(jnp.cumsum(w, -1), [(0, 0)] * (w.ndim - 1) + [(1, 0)])
    ch = jnp.pad(jnp.cumsum(h, -1), [(0, 0)] * (h.ndim - 1) + [(1, 0)])
    cw = 2 * bound * cw - bound
    ch = 2 * bound * ch - bound
    dd = jnp.pad(jax.nn.softplus(d) + 1e-3, [(0, 0)] * (d.ndim - 1) + [(1, 1)],
                 constant_values=1.0)
    inside = jnp.abs(x) < bound
    xc = jnp.clip(x, -bound + 1e-6, bound - 1e-6)
    flat_cw = cw.reshape(-1, k + 1)
    idx = jax.vmap(lambda c, v: jnp.searchsorted(c, v, side="right") - 1)(
        flat_cw, xc.reshape(-1))
    idx = jnp.clip(idx, 0, k - 1).reshape(x.shape)[..., None]
    g = lambda a: jnp.take_along_axis(a, idx, -1)[..., 0]              # noqa: E731
    x0, y0, wk, hk = g(cw), g(ch), g(cw[..., 1:] - cw[..., :-1]), g(ch[..., 1:] - ch[..., :-1])
    d0, d1 = g(dd[..., :-1]), g(dd[..., 1:])
    s = hk / wk
    t = (xc - x0) / wk
    tt = t * (1 - t)
    den = s + (d1 + d0 - 2 * s) * tt
    y = y0 + hk * (s * t * t + d0 * tt) / den
    dy = s * s * (d1 * t * t + 2 * s * tt + d0 * (1 - t) ** 2) / (den * den)
    return jnp.where(inside, y, x), jnp.where(inside, jnp.log(dy), 0.0)


class SplineCoupling(nn.Module):
    dim: int = 16
    bins: int = 8
    flip: bool = False

    @nn.compact
    def __call__(self, x):
        half = self.dim // 2
        a, b = (x[:, half:], x[:, :half]) if self.flip else (x[:, :half], x[:, half:])
        h = nn.relu(nn.Dense(256)(a))
        h = nn.relu(nn.Dense(256)(h))
        prm = nn.Dense(half * (3 * self.bins - 1), kernel_init=nn.initializers.zeros)(h)
        prm = prm.reshape(x.shape[0], half, 3 * self.bins - 1)
        w, hh, d = jnp.split(prm, [self.bins, 2 * self.bins], -1)
        y, ld = rq_spline(b, w, hh, d)
        out = jnp.concatenate([y, a], 1) if self.flip else jnp.concatenate([a, y], 1)
        return out, ld.sum(-1)


class SplineFlow(nn.Module):
    @nn.compact
    def __call__(self, x):
        logdet = 0.0
        for i in range(4):
            x, ld = SplineCoupling(flip=bool(i % 2))(x)
            logdet = logdet + ld
        logp = -0.5 * (x * x).sum(-1) - 0.5 * x.shape[1] * np.log(2 * np.pi)
        return logp + logdet


# --- Fourier neural operator ------------------------------------------------------------

class SpectralConv1d(nn.Module):
    ch: int
    modes: int

    @nn.compact
    def __call__(self, x):                                            # [b, n, c]
        scale = 1.0 / (self.ch * self.ch)
        wr = self.param("wr", nn.initializers.uniform(scale), (self.ch, self.ch, self.modes))
        wi = self.param("wi", nn.initializers.uniform(scale), (self.ch, self.ch, self.modes))
        xf = jnp.fft.rfft(x, axis=1)[:, : self.modes]                  # [b, m, c] complex
        yf = jnp.einsum("bmi,iom->bmo", xf, wr + 1j * wi)
        n = x.shape[1]
        yf = jnp.pad(yf, ((0, 0), (0, n // 2 + 1 - self.modes), (0, 0)))
        return jnp.fft.irfft(yf, n=n, axis=1)


class Fno1d(nn.Module):
    ch: int = 64
    modes: int = 16

    @nn.compact
    def __call__(self, a):
        n = a.shape[1]
        grid = jnp.broadcast_to(jnp.linspace(0, 1, n)[None, :, None], a.shape)
        x = nn.Dense(self.ch)(jnp.concatenate([a, grid], -1))
        for i in range(4):
            y = SpectralConv1d(self.ch, self.modes)(x) + nn.Dense(self.ch)(x)
            x = nn.gelu(y) if i < 3 else y
        return nn.Dense(1)(nn.gelu(nn.Dense(128)(x)))


def adam_step(opt, loss_fn):
    def step(p, st, *batch):
        l, g = jax.value_and_grad(loss_fn)(p, *batch)
        u, st = opt.update(g, st, p)
        return optax.apply_updates(p, u), st, l
    return step


def programs():
    out = []

    # A CRF tagger: [32, 128] tokens with lengths 40-128, 48 tags; the NLL (log partition
    # by the forward algorithm minus the gold path score), its gradient and Adam(1e-3);
    # the Viterbi paths under the updated parameters.
    emitter = Emitter()
    ctok = ids(1100, (32, 128), 4096)
    ctags = ids(1101, (32, 128), 48)
    clen = jnp.asarray(np.random.RandomState(1102).randint(40, 129, 32), jnp.int32)
    cparams = {"emit": emitter.init(jax.random.PRNGKey(1100), ctok),
               "trans": normal(1103, (48, 48), scale=0.1)}
    copt = optax.adam(1e-3)
    cst = copt.init(cparams)

    def crf_step(p, st, tok, tags, lens):
        mask = jnp.arange(tok.shape[1])[None] < lens[:, None]

        def nll(p):
            emit = emitter.apply(p["emit"], tok)
            return (crf_log_partition(emit, p["trans"], mask)
                    - crf_gold_score(emit, p["trans"], tags, mask.astype(emit.dtype))).mean()
        l, g = jax.value_and_grad(nll)(p)
        u, st = copt.update(g, st, p)
        p = optax.apply_updates(p, u)
        path = viterbi(emitter.apply(p["emit"], tok), p["trans"], mask)
        return p, st, l, jnp.where(mask, path, -1)
    out.append(("crf_nll_viterbi_adam", crf_step, (cparams, cst, ctok, ctags, clen)))

    # Transformer-XL: a [6, 128] segment attending to a 128-step memory per layer (two
    # layers, d 256, 8 heads), relative positions by the pad-and-reshape shift; the LM
    # loss's gradient, Adam(2.5e-4), and the new memories.
    txl = TransformerXl()
    xtok = ids(1104, (6, 129), 4096)
    xmem = normal(1105, (2, 6, 128, 256), scale=0.5)
    xp = txl.init(jax.random.PRNGKey(1104), xtok[:, :-1], xmem)
    xopt = optax.adam(2.5e-4)
    xst = xopt.init(xp)

    def txl_step(p, st, tok, mems):
        def loss(p):
            logits, new = txl.apply(p, tok[:, :-1], mems)
            return optax.softmax_cross_entropy_with_integer_labels(
                logits, tok[:, 1:]).mean(), new
        (l, new), g = jax.value_and_grad(loss, has_aux=True)(p)
        u, st = xopt.update(g, st, p)
        return optax.apply_updates(p, u), st, l, new
    out.append(("transformer_xl_relshift_mem_step", txl_step, (xp, xst, xtok, xmem)))

    # float16 training with dynamic loss scaling (the jmp recipe): f32 master parameters
    # cast to f16, the loss scaled by 2^15, gradients unscaled in f32; if every gradient is
    # finite, an Adam step and (after 4 good steps) a doubled scale, else the old state and
    # a halved scale. Batch [512, 784], an MLP 1024-1024-512-10.
    hm = HalfMlp()
    hx = normal(1106, (512, 784))
    hy = ids(1107, (512,), 10)
    hp = hm.init(jax.random.PRNGKey(1106), hx.astype(jnp.float16))
    hp = jax.tree_util.tree_map(lambda a: a.astype(jnp.float32), hp)
    hopt = optax.adam(1e-3)
    hst = hopt.init(hp)
    hscale = jnp.float32(2.0 ** 15)
    hgood = jnp.int32(3)

    def f16_step(p, st, scale, good, x, y):
        def loss(p):
            p16 = jax.tree_util.tree_map(lambda a: a.astype(jnp.float16), p)
            logits = hm.apply(p16, x.astype(jnp.float16)).astype(jnp.float32)
            l = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
            return (l * scale).astype(jnp.float16), l
        (_, l), g = jax.value_and_grad(loss, has_aux=True)(p)
        g = jax.tree_util.tree_map(lambda a: a.astype(jnp.float32) / scale, g)
        finite = jnp.all(jnp.stack([jnp.isfinite(a).all()
                                    for a in jax.tree_util.tree_leaves(g)]))
        u, nst = hopt.update(g, st, p)
        np_ = optax.apply_updates(p, u)
        pick = lambda a, b: jax.tree_util.tree_map(                   # noqa: E731
            lambda x, y: jnp.where(finite, x, y), a, b)
        grow = finite & (good + 1 >= 4)
        nscale = jnp.where(finite, jnp.where(grow, scale * 2, scale), scale / 2)
        ngood = jnp.where(finite & ~grow, good + 1, 0)
        return pick(np_, p), pick(nst, st), nscale, ngood, l, finite
    out.append(("f16_dynamic_loss_scale_step", f16_step, (hp, hst, hscale, hgood, hx, hy)))

    # Grouped-query decoding: 4 layers, d 512, 8 query heads sharing 2 KV heads (hd 64),
    # SwiGLU, RMSNorm, RoPE at absolute positions; 32 greedy tokens from position 300 into
    # a 256-slot ring cache per layer (written at pos % 256), batch 4.
    r = np.random.RandomState(1108)
    gl, gd, gqh, gkv, ghd, gw, gv = 4, 512, 8, 2, 64, 256, 8192

    def gw_(shape, fan):
        return jnp.asarray(r.randn(*shape) / np.sqrt(fan), jnp.float32)
    gparams = {
        "emb": gw_((gv, gd), 1.0) * 0.02,
        "layers": [{"n1": jnp.ones(gd), "n2": jnp.ones(gd),
                    "wq": gw_((gd, gqh * ghd), gd), "wk": gw_((gd, gkv * ghd), gd),
                    "wv": gw_((gd, gkv * ghd), gd), "wo": gw_((gqh * ghd, gd), gd),
                    "w1": gw_((gd, 1024), gd), "w3": gw_((gd, 1024), gd),
                    "w2": gw_((1024, gd), 1024)} for _ in range(gl)],
        "nf": jnp.ones(gd), "head": gw_((gd, gv), gd)}
    gcache = normal(1109, (gl, 2, 4, gw, gkv, ghd), scale=0.5)
    gtok = ids(1110, (4,), gv)

    def gqa_decode(p, cache, tok):
        b = tok.shape[0]

        def step(i, c):
            cache, tok, toks = c
            pos = jnp.full((b,), 300, jnp.int32) + i
            slot = (300 + i) % gw
            x = p["emb"][tok]
            for li, lp in enumerate(p["layers"]):
                h = rms_norm(x, lp["n1"])
                q = rope((h @ lp["wq"]).reshape(b, gqh, ghd), pos)
                k = rope((h @ lp["wk"]).reshape(b, gkv, ghd), pos)
                v = (h @ lp["wv"]).reshape(b, gkv, ghd)
                kc = jax.lax.dynamic_update_slice(cache[li, 0], k[:, None], (0, slot, 0, 0))
                vc = jax.lax.dynamic_update_slice(cache[li, 1], v[:, None], (0, slot, 0, 0))
                cache = cache.at[li].set(jnp.stack([kc, vc]))
                qg = q.reshape(b, gkv, gqh // gkv, ghd)
                s = jnp.einsum("bkgd,bskd->bkgs", qg, kc) / np.sqrt(ghd)
                o = jnp.einsum("bkgs,bskd->bkgd", jax.nn.softmax(s, -1), vc)
                x = x + o.reshape(b, gqh * ghd) @ lp["wo"]
                h = rms_norm(x, lp["n2"])
                x = x + (jax.nn.silu(h @ lp["w1"]) * (h @ lp["w3"])) @ lp["w2"]
            logits = rms_norm(x, p["nf"]) @ p["head"]
            tok = jnp.argmax(logits, -1).astype(jnp.int32)
            return cache, tok, toks.at[:, i].set(tok)
        cache, tok, toks = jax.lax.fori_loop(
            0, 32, step, (cache, tok, jnp.zeros((b, 32), jnp.int32)))
        return toks, cache
    out.append(("gqa_rope_ring_cache_decode", gqa_decode, (gparams, gcache, gtok)))

    # A capsule network on [4, 28, 28, 1] digits: routing by agreement (3 iterations),
    # the margin loss on the digit capsules' lengths, its gradient and Adam(1e-3).
    caps = CapsNet()
    kx = jnp.asarray(np.random.RandomState(1111).rand(4, 28, 28, 1), jnp.float32)
    ky = ids(1112, (4,), 10)
    kp = caps.init(jax.random.PRNGKey(1111), kx)
    kopt = optax.adam(1e-3)
    kst = kopt.init(kp)

    def margin_loss(p, x, y):
        n = jnp.sqrt((caps.apply(p, x) ** 2).sum(-1) + 1e-8)           # [b, 10]
        t = jax.nn.one_hot(y, 10)
        return (t * jnp.maximum(0.9 - n, 0) ** 2
                + 0.5 * (1 - t) * jnp.maximum(n - 0.1, 0) ** 2).sum(-1).mean()
    out.append(("capsnet_dynamic_routing_step", adam_step(kopt, margin_loss),
                (kp, kst, kx, ky)))

    # A neural spline flow: 4 rational-quadratic coupling layers (8 bins, a 256-256 MLP
    # conditioner each) on [2048, 16] samples; the NLL's gradient and Adam(5e-4).
    sf = SplineFlow()
    r = np.random.RandomState(1113)
    sx = jnp.asarray(np.concatenate([r.randn(2048, 8) * 0.5,
                                     np.sin(r.randn(2048, 8)) * 1.5], 1), jnp.float32)
    sp = sf.init(jax.random.PRNGKey(1113), sx)
    # Random (not zero) last layers, so the splines are not the identity.
    sp = jax.tree_util.tree_map_with_path(
        lambda path, a: a + 0.01 * jax.random.normal(
            jax.random.PRNGKey(len(str(path))), a.shape), sp)
    sopt = optax.adam(5e-4)
    sst = sopt.init(sp)
    out.append(("neural_spline_flow_nll_step",
                adam_step(sopt, lambda p, x: -sf.apply(p, x).mean()), (sp, sst, sx)))

    # A checkerboard Metropolis sampler: 4 Ising lattices of 256x256 at temperatures
    # 1.5-3.0, 32 sweeps (two half-sweeps each) in fori_loop, threefry uniforms per
    # half-sweep; the final spins, magnetisation and energy per site.
    ispins = jnp.asarray(np.where(np.random.RandomState(1114).rand(4, 256, 256) < 0.5,
                                  -1.0, 1.0), jnp.float32)
    ibeta = jnp.asarray(1.0 / np.array([1.5, 2.0, 2.27, 3.0]), jnp.float32)
    ikey = jax.random.PRNGKey(1115)

    def ising(s, beta, key):
        ii, jj = np.indices((256, 256))
        colour = jnp.asarray((ii + jj) % 2)

        def nb(s):
            return (jnp.roll(s, 1, 1) + jnp.roll(s, -1, 1)
                    + jnp.roll(s, 1, 2) + jnp.roll(s, -1, 2))

        def sweep(i, s):
            for c in range(2):
                u = jax.random.uniform(jax.random.fold_in(key, 2 * i + c), s.shape)
                de = 2 * s * nb(s)
                flip = (u < jnp.exp(-beta[:, None, None] * de)) & (colour == c)
                s = jnp.where(flip, -s, s)
            return s
        s = jax.lax.fori_loop(0, 32, sweep, s)
        return s, s.mean((1, 2)), -(s * nb(s)).mean((1, 2)) / 2
    out.append(("ising_checkerboard_metropolis", ising, (ispins, ibeta, ikey)))

    # A D2Q9 lattice-Boltzmann channel flow past a cylinder on a 64x192 grid: BGK
    # collision (tau 0.6), streaming by roll, bounce-back on the obstacle, an inflow
    # velocity at the left edge; 50 steps in fori_loop; the velocity field and vorticity.
    cx = np.array([0, 1, 0, -1, 0, 1, -1, -1, 1])
    cy = np.array([0, 0, 1, 0, -1, 1, 1, -1, -1])
    wts = jnp.asarray([4 / 9] + [1 / 9] * 4 + [1 / 36] * 4, jnp.float32)
    opp = np.array([0, 3, 4, 1, 2, 7, 8, 5, 6])
    yy, xx = np.indices((64, 192))
    lobst = jnp.asarray((xx - 40) ** 2 + (yy - 32) ** 2 < 8 ** 2)
    lf0 = jnp.asarray(np.asarray(wts)[:, None, None] * (1 + 0.01 * np.random.RandomState(
        1116).randn(9, 64, 192)), jnp.float32)

    def lbm(f, obst):
        cxf = jnp.asarray(cx, jnp.float32)[:, None, None]
        cyf = jnp.asarray(cy, jnp.float32)[:, None, None]

        def equilibrium(rho, ux, uy):
            cu = 3 * (cxf * ux + cyf * uy)
            return rho * wts[:, None, None] * (1 + cu + 0.5 * cu * cu
                                               - 1.5 * (ux * ux + uy * uy))

        def step(_, f):
            rho = f.sum(0)
            ux = (f * cxf).sum(0) / rho
            uy = (f * cyf).sum(0) / rho
            ux = ux.at[:, 0].set(0.08)
            uy = uy.at[:, 0].set(0.0)
            feq = equilibrium(rho, ux, uy)
            fc = f - (f - feq) / 0.6
            fc = jnp.where(obst[None], f[opp], fc)
            return jnp.stack([jnp.roll(jnp.roll(fc[i], cx[i], 1), cy[i], 0)
                              for i in range(9)])
        f = jax.lax.fori_loop(0, 50, step, f)
        rho = f.sum(0)
        ux = (f * cxf).sum(0) / rho
        uy = (f * cyf).sum(0) / rho
        vort = (jnp.roll(uy, -1, 1) - jnp.roll(uy, 1, 1)) - (jnp.roll(ux, -1, 0)
                                                              - jnp.roll(ux, 1, 0))
        return ux, uy, vort
    out.append(("lattice_boltzmann_d2q9", lbm, (lf0, lobst)))

    # A ConvLSTM next-frame predictor: 10 frames of [2, 16, 16, 1], a 3x3 ConvLSTM with 16
    # features (flax's ConvLSTMCell under nn.RNN), a 1x1 readout; the next-frame MSE's
    # gradient and Adam(1e-3).
    class ConvLstmPredictor(nn.Module):
        @nn.compact
        def __call__(self, frames):
            h = nn.RNN(nn.ConvLSTMCell(16, (3, 3)))(frames)
            return nn.Conv(1, (1, 1))(h)
    clp = ConvLstmPredictor()
    t_ = np.arange(11)[:, None, None]
    yy, xx = np.indices((16, 16))
    r = np.random.RandomState(1117)
    ox, oy = r.randint(2, 14, (2, 2))
    vid = np.stack([np.exp(-((xx[None] - (ox[b] + 1.5 * t_) % 16) ** 2
                             + (yy[None] - (oy[b] + t_) % 16) ** 2) / 4.0)
                    for b in range(2)])[..., None]
    cvid = jnp.asarray(vid + 0.05 * r.randn(*vid.shape), jnp.float32)  # [2, 11, 16, 16, 1]
    clpp = clp.init(jax.random.PRNGKey(1117), cvid[:, :10])
    clopt = optax.adam(1e-3)
    clst = clopt.init(clpp)
    out.append(("convlstm_video_predict_step",
                adam_step(clopt, lambda p, v: ((clp.apply(p, v[:, :-1]) - v[:, 1:]) ** 2).mean()),
                (clpp, clst, cvid)))

    # Hamiltonian Monte Carlo for Bayesian logistic regression: 2048 points, 64 features,
    # 8 chains (vmap) of 24 iterations (scan), 12 leapfrog steps each (fori_loop with the
    # log posterior's gradient), Metropolis acceptance; posterior means and accept rates.
    r = np.random.RandomState(1118)
    bx = jnp.asarray(r.randn(2048, 64), jnp.float32)
    bw = r.randn(64) * 0.5
    by = jnp.asarray(r.rand(2048) < 1 / (1 + np.exp(-np.asarray(bx) @ bw)), jnp.float32)
    binit = normal(1119, (8, 64), scale=0.1)
    bkeys = jax.random.split(jax.random.PRNGKey(1120), 8)

    def hmc(x, y, init, keys):
        def logp(w):
            z = x @ w
            return (y * z - jax.nn.softplus(z)).sum() - 0.5 * (w * w).sum()
        grad = jax.grad(logp)

        def chain(w0, key):
            def it(w, k):
                k1, k2 = jax.random.split(k)
                m = jax.random.normal(k1, w.shape)
                eps = 0.01

                def leap(_, c):
                    q, p = c
                    p = p + 0.5 * eps * grad(q)
                    q = q + eps * p
                    return q, p + 0.5 * eps * grad(q)
                q, p = jax.lax.fori_loop(0, 12, leap, (w, m))
                log_acc = logp(q) - 0.5 * (p * p).sum() - logp(w) + 0.5 * (m * m).sum()
                acc = jnp.log(jax.random.uniform(k2)) < log_acc
                w = jnp.where(acc, q, w)
                return w, (w, acc)
            _, (ws, accs) = jax.lax.scan(it, w0, jax.random.split(key, 24))
            return ws[8:].mean(0), accs.mean()
        return jax.vmap(chain)(init, keys)
    out.append(("hmc_bayes_logreg_chains", hmc, (bx, by, binit, bkeys)))

    # A 1-D Fourier neural operator on Burgers-like data: [24, 1024] initial conditions to
    # solutions, 4 spectral layers of 64 channels and 16 modes (complex weights); the
    # relative L2 loss's gradient and Adam(1e-3).
    fno = Fno1d()
    r = np.random.RandomState(1121)
    xs_ = np.linspace(0, 2 * np.pi, 1024, endpoint=False)
    coef = r.randn(24, 8, 1) / (1 + np.arange(8)[None, :, None])
    fa = (coef * np.sin(np.arange(1, 9)[None, :, None] * xs_[None, None])).sum(1)
    fu = np.roll(fa, 16, 1) * np.exp(-0.1) + 0.1 * np.tanh(fa)
    fa = jnp.asarray(fa[..., None], jnp.float32)
    fu = jnp.asarray(fu[..., None], jnp.float32)
    fp = fno.init(jax.random.PRNGKey(1121), fa)
    fopt = optax.adam(1e-3)
    fst = fopt.init(fp)

    def rel_l2(p, a, u):
        pred = fno.apply(p, a)
        return (jnp.linalg.norm((pred - u).reshape(24, -1), axis=1)
                / jnp.linalg.norm(u.reshape(24, -1), axis=1)).mean()
    out.append(("fno_1d_burgers_adam_step", adam_step(fopt, rel_l2), (fp, fst, fa, fu)))

    # An oblivious tree ensemble (CatBoost's form): 512 trees of depth 8 over 128 features,
    # every tree one feature and threshold per level; [4096] rows scored by gathering the
    # tested features, packing the comparisons into a leaf index, gathering leaf values;
    # the sigmoid probabilities and the log loss against labels.
    r = np.random.RandomState(1122)
    tfeat = jnp.asarray(r.randint(0, 128, (512, 8)), jnp.int32)
    tthr = jnp.asarray(r.randn(512, 8) * 0.7, jnp.float32)
    tleaf = jnp.asarray(r.randn(512, 256) * 0.05, jnp.float32)
    tx = normal(1123, (4096, 128))
    ty = jnp.asarray(r.rand(4096) < 0.5, jnp.float32)

    def trees(feat, thr, leaf, x, y):
        v = x[:, feat]                                                 # [n, trees, depth]
        bits = (v > thr[None]).astype(jnp.int32)
        idx = (bits << jnp.arange(8, dtype=jnp.int32)).sum(-1)         # [n, trees]
        score = jnp.take_along_axis(leaf[None], idx[..., None], -1)[..., 0].sum(-1)
        prob = jax.nn.sigmoid(score)
        loss = optax.sigmoid_binary_cross_entropy(score, y).mean()
        return prob, loss
    out.append(("oblivious_tree_ensemble_logloss", trees, (tfeat, tthr, tleaf, tx, ty)))
    return out


def main():
    write_programs_cli(__doc__, programs(), write_program)


if __name__ == "__main__":
    sys.exit(main())
