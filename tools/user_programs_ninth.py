#!/usr/bin/env python3
"""Write a ninth batch of fresh programs as users write them (issue 30's held-out set), in
the form of `tools/user_programs.py`, for `tools/bench_vs_xla.py --dir`.

Run by hand (never by the test suite); needs jax, flax and optax from PyPI:

    python3 tools/user_programs_ninth.py /tmp/up9
    python3 tools/user_programs_ninth.py /tmp/up9 --only sinkhorn_log_ot_while
    python3 tools/bench_vs_xla.py --dir /tmp/up9 --repeat 3

Each program becomes DIR/NAME/before_optimizations.hlo, inputs.npz and outputs.npz (what
XLA:CPU computed), written as `user_programs_eighth.write_program` does (unused arguments
kept). The programs cover what the first eight batches did not: a Mixture-of-Depths router
(per-sequence argsort of router scores, a gather of the top-capacity tokens, a block on
them, a scatter back), an LSTM seq2seq trained with teacher forcing through `nn.scan` and
optax Adam, a bf16 ResNet train step with BatchNorm and Dropout whose mask comes from a
threefry key inside the program, a beam search with `lax.top_k` inside `lax.while_loop`,
a deep-equilibrium (implicit) layer solved by fixed-point iteration to a tolerance, a
spectral-normalized GAN discriminator step (power iteration, hinge loss, Adam), a 1-D
U-Net for audio with stride-2 transposed convolutions and its gradient, a Hyena-style
long convolution through rfft/irfft with its gradient, entropic optimal transport by
log-space Sinkhorn in `lax.while_loop` to a tolerance, a masked autoencoder's random patch
shuffle (argsort of uniform noise, gathers of the kept patches, an unshuffle), a VQ-VAE
codebook lookup with the straight-through estimator, and a bootstrap particle filter with
systematic resampling (`searchsorted` over cumulative weights) in `lax.scan`. Sizes are
chosen so that XLA:CPU takes roughly 5-300 ms on a 2-core machine; nothing is tuned for
hloc.
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


class MlpBlock(nn.Module):
    """A pre-norm transformer block's attention and MLP, used on the routed tokens."""
    d: int = 256
    heads: int = 4

    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm()(x)
        x = x + nn.SelfAttention(num_heads=self.heads)(h)
        h = nn.LayerNorm()(x)
        return x + nn.Dense(self.d)(nn.gelu(nn.Dense(4 * self.d)(h)))


class MixtureOfDepths(nn.Module):
    """Mixture-of-Depths: a router scores every token, the top `capacity` tokens of each
    sequence (by argsort, kept in sequence order) go through the block, the rest skip it;
    the block's output is scaled by the router weight and scattered back."""
    d: int = 256
    capacity: int = 64

    @nn.compact
    def __call__(self, x):
        b, t, _ = x.shape
        score = nn.Dense(1)(x)[..., 0]                                  # [b, t]
        idx = jnp.argsort(-score, axis=-1)[:, :self.capacity]
        idx = jnp.sort(idx, axis=-1)                                    # keep causal order
        sel = jnp.take_along_axis(x, idx[..., None], axis=1)            # [b, c, d]
        w = jnp.take_along_axis(jax.nn.sigmoid(score), idx, axis=1)[..., None]
        y = MlpBlock(self.d)(sel)
        upd = (y - sel) * w
        bi = jnp.arange(b)[:, None]
        return x.at[bi, idx].add(upd)


class MoDStack(nn.Module):
    vocab: int = 2048
    d: int = 256
    layers: int = 4

    @nn.compact
    def __call__(self, toks):
        emb = nn.Embed(self.vocab, self.d)
        x = emb(toks)
        for i in range(self.layers):
            x = MlpBlock(self.d)(x) if i % 2 == 0 else MixtureOfDepths(self.d)(x)
        return emb.attend(nn.LayerNorm()(x))


class ScanLstm(nn.Module):
    """An LSTM over time written with `nn.scan` (parameters broadcast, carry threaded)."""
    hidden: int

    @nn.compact
    def __call__(self, carry, xs):
        cell = nn.scan(nn.LSTMCell, variable_broadcast="params", split_rngs={"params": False},
                       in_axes=1, out_axes=1)(self.hidden)
        return cell(carry, xs)


class LstmSeq2Seq(nn.Module):
    """Encoder LSTM over the source, decoder LSTM over the shifted target (teacher forcing)
    starting from the encoder's final state, a vocabulary head."""
    vocab: int = 2048
    hidden: int = 256

    @nn.compact
    def __call__(self, src, tgt_in):
        emb = nn.Embed(self.vocab, 128)
        b = src.shape[0]
        zero = (jnp.zeros((b, self.hidden)), jnp.zeros((b, self.hidden)))
        state, _ = ScanLstm(self.hidden)(zero, emb(src))
        _, ys = ScanLstm(self.hidden)(state, emb(tgt_in))
        return nn.Dense(self.vocab)(ys)


class BottleneckBlock(nn.Module):
    """A ResNet basic block in bf16 with BatchNorm in train mode and Dropout."""
    ch: int
    strides: int = 1

    @nn.compact
    def __call__(self, x, train):
        conv = lambda c, k, s: nn.Conv(c, (k, k), (s, s), padding="SAME", use_bias=False,
                                       dtype=jnp.bfloat16)
        bn = lambda: nn.BatchNorm(use_running_average=not train, momentum=0.9,
                                  dtype=jnp.bfloat16)
        h = nn.relu(bn()(conv(self.ch, 3, self.strides)(x)))
        h = nn.Dropout(0.1, deterministic=not train)(h)
        h = bn()(conv(self.ch, 3, 1)(h))
        if x.shape[-1] != self.ch or self.strides != 1:
            x = bn()(conv(self.ch, 1, self.strides)(x))
        return nn.relu(x + h)


class SmallResNet(nn.Module):
    @nn.compact
    def __call__(self, x, train=True):
        x = nn.Conv(32, (3, 3), padding="SAME", use_bias=False, dtype=jnp.bfloat16)(x)
        for ch, s in ((32, 1), (64, 2), (64, 1), (128, 2)):
            x = BottleneckBlock(ch, s)(x, train)
        x = x.mean((1, 2))
        x = nn.Dropout(0.2, deterministic=not train)(x)
        return nn.Dense(10, dtype=jnp.bfloat16)(x).astype(jnp.float32)


class DeqCell(nn.Module):
    """The implicit layer's map f(z, x) = LayerNorm(z + relu(W z + U x + b)) W2."""
    d: int = 256

    @nn.compact
    def __call__(self, z, x):
        h = nn.relu(nn.Dense(self.d, use_bias=False)(z) + nn.Dense(self.d)(x))
        return nn.LayerNorm()(z + nn.Dense(self.d)(h) * 0.5)


class SnDiscriminator(nn.Module):
    """A DCGAN-style discriminator with spectral normalization on every layer (power
    iteration, one step per call, its u vectors updated in `batch_stats`)."""

    @nn.compact
    def __call__(self, x, update_stats=True):
        for ch in (64, 128, 256):
            x = nn.SpectralNorm(nn.Conv(ch, (4, 4), (2, 2), padding="SAME"))(
                x, update_stats=update_stats)
            x = nn.leaky_relu(x, 0.2)
        x = x.reshape(x.shape[0], -1)
        return nn.SpectralNorm(nn.Dense(1))(x, update_stats=update_stats)[:, 0]


class Unet1d(nn.Module):
    """A 1-D U-Net over raw audio: stride-2 convolutions down, stride-2 transposed
    convolutions up with skip connections, GELU, a 1-channel output."""
    chans: tuple = (16, 32, 64, 128)

    @nn.compact
    def __call__(self, x):
        skips = []
        for c in self.chans:
            x = nn.gelu(nn.Conv(c, (15,), padding="SAME")(x))
            skips.append(x)
            x = nn.Conv(c, (4,), (2,), padding="SAME")(x)
        x = nn.gelu(nn.Conv(self.chans[-1], (15,), padding="SAME")(x))
        for c, s in zip(reversed(self.chans), reversed(skips)):
            x = nn.ConvTranspose(c, (4,), (2,), padding="SAME")(x)
            x = nn.gelu(nn.Conv(c, (5,), padding="SAME")(jnp.concatenate([x, s], -1)))
        return jnp.tanh(nn.Conv(1, (1,))(x))


class HyenaOperator(nn.Module):
    """A Hyena operator of order 2: three projections, a short depthwise conv, two long
    implicit filters (an MLP of sinusoidal position features with an exponential decay)
    applied by FFT convolution, gated by elementwise products."""
    d: int = 128
    order: int = 2

    @nn.compact
    def __call__(self, u):
        b, t, d = u.shape
        z = nn.Dense((self.order + 1) * d)(u)
        z = nn.Conv((self.order + 1) * d, (3,), padding=[(2, 0)],
                    feature_group_count=(self.order + 1) * d)(z)
        v, *gates = jnp.split(z, self.order + 1, axis=-1)
        pos = jnp.linspace(0.0, 1.0, t)[:, None]
        feats = jnp.concatenate([jnp.sin(pos * jnp.arange(1, 9) * jnp.pi),
                                 jnp.cos(pos * jnp.arange(1, 9) * jnp.pi), pos], -1)
        h = nn.Dense(64)(feats)
        h = jnp.sin(nn.Dense(64)(jnp.sin(h)))
        filt = nn.Dense(self.order * d)(h) * jnp.exp(-pos * jnp.linspace(0.5, 8.0, self.order * d))
        filt = filt.reshape(t, self.order, d)
        n = 2 * t
        for o in range(self.order):
            vf = jnp.fft.rfft(v, n=n, axis=1)
            kf = jnp.fft.rfft(filt[:, o], n=n, axis=0)
            v = jnp.fft.irfft(vf * kf[None], n=n, axis=1)[:, :t] * gates[o]
        return nn.Dense(d)(v)


class HyenaLm(nn.Module):
    vocab: int = 1024
    d: int = 64
    layers: int = 2

    @nn.compact
    def __call__(self, toks):
        x = nn.Embed(self.vocab, self.d)(toks)
        for _ in range(self.layers):
            x = x + HyenaOperator(self.d)(nn.LayerNorm()(x))
            h = nn.LayerNorm()(x)
            x = x + nn.Dense(self.d)(nn.gelu(nn.Dense(2 * self.d)(h)))
        return nn.Dense(self.vocab)(nn.LayerNorm()(x))


class Mae(nn.Module):
    """A masked autoencoder: patchify, keep a random 25% of patches per image (argsort of
    uniform noise from a key inside the program), encode the kept ones, append mask
    tokens, unshuffle by the inverse permutation, decode, MSE on the masked patches."""
    patch: int = 8
    d: int = 192
    dec_d: int = 128
    keep: float = 0.25

    @nn.compact
    def __call__(self, imgs, key):
        b, hh, ww, c = imgs.shape
        p = self.patch
        n = (hh // p) * (ww // p)
        patches = imgs.reshape(b, hh // p, p, ww // p, p, c).transpose(0, 1, 3, 2, 4, 5)
        patches = patches.reshape(b, n, p * p * c)
        pos = self.param("pos", nn.initializers.normal(0.02), (n, self.d))
        x = nn.Dense(self.d)(patches) + pos
        keep = int(n * self.keep)
        noise = jax.random.uniform(key, (b, n))
        shuffle = jnp.argsort(noise, axis=1)
        restore = jnp.argsort(shuffle, axis=1)
        kept = jnp.take_along_axis(x, shuffle[:, :keep, None], axis=1)
        for _ in range(2):
            kept = MlpBlock(self.d, 3)(kept)
        y = nn.Dense(self.dec_d)(nn.LayerNorm()(kept))
        mask_tok = self.param("mask", nn.initializers.normal(0.02), (1, 1, self.dec_d))
        y = jnp.concatenate([y, jnp.broadcast_to(mask_tok, (b, n - keep, self.dec_d))], 1)
        y = jnp.take_along_axis(y, restore[..., None], axis=1)
        y = y + self.param("dec_pos", nn.initializers.normal(0.02), (n, self.dec_d))
        y = MlpBlock(self.dec_d, 4)(y)
        pred = nn.Dense(p * p * c)(y)
        mask = (restore >= keep).astype(jnp.float32)
        err = ((pred - patches) ** 2).mean(-1)
        return (err * mask).sum() / mask.sum()


class VqVae(nn.Module):
    """A convolutional VQ-VAE: encoder, nearest-codebook lookup (argmin of squared
    distances), straight-through gradient, codebook and commitment losses, decoder."""
    codes: int = 512
    dim: int = 64

    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.Conv(32, (4, 4), (2, 2))(x))
        h = nn.relu(nn.Conv(64, (4, 4), (2, 2))(h))
        z = nn.Conv(self.dim, (1, 1))(h)
        book = self.param("codebook", nn.initializers.uniform(1.0 / self.codes),
                          (self.codes, self.dim))
        flat = z.reshape(-1, self.dim)
        dist = ((flat ** 2).sum(1, keepdims=True) - 2 * flat @ book.T
                + (book ** 2).sum(1)[None])
        code = jnp.argmin(dist, axis=1)
        q = book[code].reshape(z.shape)
        vq = ((jax.lax.stop_gradient(z) - q) ** 2).mean()
        commit = ((z - jax.lax.stop_gradient(q)) ** 2).mean()
        q = z + jax.lax.stop_gradient(q - z)
        h = nn.relu(nn.ConvTranspose(64, (4, 4), (2, 2))(q))
        h = nn.relu(nn.ConvTranspose(32, (4, 4), (2, 2))(h))
        rec = nn.Conv(x.shape[-1], (3, 3))(h)
        return ((rec - x) ** 2).mean() + vq + 0.25 * commit, code


def programs():
    """(name, function, args) of every program."""
    out = []

    # Mixture-of-Depths LM: 4 layers (2 full blocks, 2 routed at capacity 64 of 256) on
    # [4, 257] tokens over 2048 words; next-token loss and its gradient.
    mod = MoDStack()
    mtok = ids(900, (4, 257), 2048)
    mp = mod.init(jax.random.PRNGKey(900), mtok)

    def mod_grad(p, toks):
        def loss(p):
            logits = mod.apply(p, toks[:, :-1])
            return optax.softmax_cross_entropy_with_integer_labels(logits, toks[:, 1:]).mean()
        return jax.value_and_grad(loss)(p)
    out.append(("mod_router_argsort_grad", mod_grad, (mp, mtok)))

    # LSTM seq2seq (nn.scan) on [32, 40] source and [32, 32] target tokens, one optax
    # Adam step with global-norm clipping.
    s2s = LstmSeq2Seq()
    ssrc = ids(901, (32, 40), 2048)
    stgt = ids(902, (32, 33), 2048)
    sp = s2s.init(jax.random.PRNGKey(901), ssrc, stgt[:, :-1])
    sopt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))
    sst = sopt.init(sp)

    def s2s_step(p, st, src, tgt):
        def loss(p):
            logits = s2s.apply(p, src, tgt[:, :-1])
            return optax.softmax_cross_entropy_with_integer_labels(logits, tgt[:, 1:]).mean()
        l, g = jax.value_and_grad(loss)(p)
        u, st = sopt.update(g, st, p)
        return optax.apply_updates(p, u), st, l
    out.append(("lstm_seq2seq_scan_adam", s2s_step, (sp, sst, ssrc, stgt)))

    # A bf16 ResNet (4 basic blocks, BatchNorm + Dropout) on [32, 32, 32, 3] images, SGD
    # with momentum; the dropout key is an argument, its bits drawn inside the program.
    rn = SmallResNet()
    rx = normal(903, (32, 32, 32, 3))
    ry = ids(904, (32,), 10)
    rv = rn.init({"params": jax.random.PRNGKey(903), "dropout": jax.random.PRNGKey(0)}, rx)
    ropt = optax.sgd(0.05, momentum=0.9)
    rst = ropt.init(rv["params"])
    rkey = jax.random.key_data(jax.random.PRNGKey(905))

    def resnet_step(p, stats, st, x, y, key):
        def loss(p):
            logits, upd = rn.apply({"params": p, "batch_stats": stats}, x,
                                   rngs={"dropout": jax.random.wrap_key_data(key)},
                                   mutable=["batch_stats"])
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), upd
        (l, upd), g = jax.value_and_grad(loss, has_aux=True)(p)
        u, st = ropt.update(g, st, p)
        return optax.apply_updates(p, u), upd["batch_stats"], st, l
    out.append(("resnet_bn_dropout_bf16_step", resnet_step,
                (rv["params"], rv["batch_stats"], rst, rx, ry, rkey)))

    # Beam search (beam 8, batch 16) over a GRU LM of 4096 tokens: lax.top_k over
    # beam x vocab scores inside lax.while_loop, length-normalized, stopping when every
    # beam ended in EOS or after 48 steps.
    class GruLm(nn.Module):
        @nn.compact
        def __call__(self, h, tok):
            h, y = nn.GRUCell(256)(h, nn.Embed(4096, 128)(tok))
            return h, nn.log_softmax(nn.Dense(4096)(y))
    lm = GruLm()
    bsz, beam, vocab, max_len, eos = 16, 8, 4096, 48, 2
    lmp = lm.init(jax.random.PRNGKey(906), jnp.zeros((1, 256)), jnp.zeros((1,), jnp.int32))
    h0 = normal(907, (bsz, 256), scale=0.5)

    def beam_search(p, h0):
        h = jnp.repeat(h0, beam, 0)
        toks = jnp.ones((bsz * beam,), jnp.int32)
        score = jnp.tile(jnp.array([0.0] + [-1e9] * (beam - 1)), bsz)
        seqs = jnp.zeros((bsz, beam, max_len), jnp.int32)
        done = jnp.zeros((bsz * beam,), bool)

        def cond(c):
            i, _, _, _, _, done = c
            return (i < max_len) & ~done.all()

        def body(c):
            i, h, toks, score, seqs, done = c
            h, lp = lm.apply(p, h, toks)
            lp = jnp.where(done[:, None], jnp.where(jnp.arange(vocab) == eos, 0.0, -1e9), lp)
            cand = (score[:, None] + lp).reshape(bsz, beam * vocab)
            top, idx = jax.lax.top_k(cand, beam)
            src_beam, tok = idx // vocab, (idx % vocab).astype(jnp.int32)
            flat_src = (jnp.arange(bsz)[:, None] * beam + src_beam).reshape(-1)
            seqs = jnp.take_along_axis(seqs, src_beam[..., None], axis=1)
            seqs = jax.lax.dynamic_update_slice(seqs, tok[..., None], (0, 0, i))
            done = done[flat_src] | (tok.reshape(-1) == eos)
            return i + 1, h[flat_src], tok.reshape(-1), top.reshape(-1), seqs, done
        i, _, _, score, seqs, done = jax.lax.while_loop(
            cond, body, (0, h, toks, score, seqs, done))
        lengths = jnp.maximum((seqs != 0).sum(-1), 1).astype(jnp.float32)
        best = jnp.argmax(score.reshape(bsz, beam) / lengths ** 0.6, -1)
        return jnp.take_along_axis(seqs, best[:, None, None], 1)[:, 0], score, i
    out.append(("beam_search_topk_while", beam_search, (lmp, h0)))

    # A deep-equilibrium layer on [256, 256] inputs: z* = f(z*, x) by damped fixed-point
    # iteration in lax.while_loop until the relative residual is under 1e-4 (or 100
    # iterations), then a classifier head; the logits, the residual and the count.
    deq = DeqCell()
    dx = normal(908, (256, 256))
    dp = deq.init(jax.random.PRNGKey(908), jnp.zeros((256, 256)), dx)
    head = normal(909, (256, 10), scale=0.05)

    def deq_solve(p, x, head):
        def cond(c):
            i, _, res = c
            return (i < 100) & (res > 1e-4)

        def body(c):
            i, z, _ = c
            fz = deq.apply(p, z, x)
            nz = 0.5 * z + 0.5 * fz
            return i + 1, nz, jnp.linalg.norm(fz - z) / (jnp.linalg.norm(fz) + 1e-8)
        i, z, res = jax.lax.while_loop(cond, body, (0, jnp.zeros_like(x), jnp.float32(1.0)))
        return z @ head, res, i
    out.append(("deq_fixed_point_while", deq_solve, (dp, dx, head)))

    # A spectral-norm GAN discriminator step: [64, 32, 32, 3] real and fake images,
    # hinge loss, one power iteration per layer, Adam(2e-4, b1=0, b2=0.9).
    disc = SnDiscriminator()
    real = normal(910, (64, 32, 32, 3))
    fake = normal(911, (64, 32, 32, 3), scale=0.5)
    dv = disc.init(jax.random.PRNGKey(910), real)
    gopt = optax.adam(2e-4, b1=0.0, b2=0.9)
    gst = gopt.init(dv["params"])

    def disc_step(p, stats, st, real, fake):
        def loss(p):
            both, upd = disc.apply({"params": p, "batch_stats": stats},
                                   jnp.concatenate([real, fake]), mutable=["batch_stats"])
            r, f = both[:64], both[64:]
            return jax.nn.relu(1 - r).mean() + jax.nn.relu(1 + f).mean(), upd
        (l, upd), g = jax.value_and_grad(loss, has_aux=True)(p)
        u, st = gopt.update(g, st, p)
        return optax.apply_updates(p, u), upd["batch_stats"], st, l
    out.append(("sngan_spectral_norm_step", disc_step,
                (dv["params"], dv["batch_stats"], gst, real, fake)))

    # A 1-D U-Net denoiser over [4, 2048, 1] audio: L1 loss against clean audio, gradient
    # (at [8, 8192] and widths 32-256 XLA took 42 s a run, loaded).
    un = Unet1d()
    noisy = normal(912, (4, 2048, 1))
    clean = normal(913, (4, 2048, 1), scale=0.3)
    up = un.init(jax.random.PRNGKey(912), noisy)

    def unet_grad(p, x, y):
        return jax.value_and_grad(lambda p: jnp.abs(un.apply(p, x) - y).mean())(p)
    out.append(("unet1d_audio_convtranspose_grad", unet_grad, (up, noisy, clean)))

    # A 2-layer Hyena LM (order 2, d 64) over [2, 1024] tokens: next-token loss, gradient.
    hy = HyenaLm()
    htok = ids(914, (2, 1025), 1024)
    hp = hy.init(jax.random.PRNGKey(914), htok[:, :-1])

    def hyena_grad(p, toks):
        def loss(p):
            logits = hy.apply(p, toks[:, :-1])
            return optax.softmax_cross_entropy_with_integer_labels(logits, toks[:, 1:]).mean()
        return jax.value_and_grad(loss)(p)
    out.append(("hyena_fft_long_conv_grad", hyena_grad, (hp, htok)))

    # Entropic OT between 8 pairs of 256-point clouds in 3-d: log-space Sinkhorn with
    # epsilon 0.05 in lax.while_loop until the marginal error is under 1e-3 (or 500
    # sweeps); the transport cost per pair and the sweep count.
    xa = normal(915, (8, 256, 3))
    xb = normal(916, (8, 256, 3)) * 0.8 + 0.3

    def sinkhorn(xa, xb):
        eps = 0.05
        cost = ((xa[:, :, None] - xb[:, None]) ** 2).sum(-1)          # [8, n, m]
        n, m = cost.shape[1:]
        loga, logb = -jnp.log(n) * jnp.ones((8, n)), -jnp.log(m) * jnp.ones((8, m))

        def cond(c):
            i, _, _, err = c
            return (i < 500) & (err > 1e-3)

        def body(c):
            i, f, g, _ = c
            f = eps * (loga - jax.nn.logsumexp((g[:, None] - cost) / eps, axis=2))
            g = eps * (logb - jax.nn.logsumexp((f[:, :, None] - cost) / eps, axis=1))
            rows = jnp.exp(jax.nn.logsumexp((f[:, :, None] + g[:, None] - cost) / eps, 2))
            return i + 1, f, g, jnp.abs(rows - jnp.exp(loga)).sum(-1).max()
        i, f, g, err = jax.lax.while_loop(
            cond, body, (0, jnp.zeros((8, n)), jnp.zeros((8, m)), jnp.float32(jnp.inf)))
        plan = jnp.exp((f[:, :, None] + g[:, None] - cost) / eps)
        return (plan * cost).sum((1, 2)), err, i
    out.append(("sinkhorn_log_ot_while", sinkhorn, (xa, xb)))

    # An MAE pre-training loss and gradient on [32, 64, 64, 3] images (8x8 patches, 64 per
    # image, 16 kept): the shuffle's key is an argument, its noise drawn in the program.
    mae = Mae()
    mimg = normal(917, (32, 64, 64, 3))
    mkey = jax.random.key_data(jax.random.PRNGKey(918))
    map_ = mae.init(jax.random.PRNGKey(917), mimg, jax.random.PRNGKey(918))

    def mae_grad(p, imgs, key):
        return jax.value_and_grad(
            lambda p: mae.apply(p, imgs, jax.random.wrap_key_data(key)))(p)
    out.append(("mae_patch_shuffle_grad", mae_grad, (map_, mimg, mkey)))

    # A VQ-VAE on [8, 32, 32, 3] images (512 codes of 64-d): the loss with the
    # straight-through estimator, its gradient, and the chosen codes (at [32, 64, 64] and
    # widths 64/128 XLA took 109 s a run, loaded: its transposed convolutions' gradients).
    vq = VqVae()
    vx = normal(919, (8, 32, 32, 3))
    vp = vq.init(jax.random.PRNGKey(919), vx)

    def vq_grad(p, x):
        (l, code), g = jax.value_and_grad(lambda p: vq.apply(p, x), has_aux=True)(p)
        return l, g, code
    out.append(("vqvae_codebook_straight_through", vq_grad, (vp, vx)))

    # A bootstrap particle filter for a 4-d nonlinear state-space model: 8192 particles,
    # 100 observations in lax.scan, systematic resampling by searchsorted over the
    # cumulative weights; the filtered means and the log-likelihood. Noise comes from a
    # key argument, drawn per step inside the scan.
    r = np.random.RandomState(920)
    obs = jnp.asarray(r.randn(100, 2), jnp.float32)
    pf_a = jnp.asarray(np.eye(4) * 0.9 + r.randn(4, 4) * 0.05, jnp.float32)
    pf_h = jnp.asarray(r.randn(4, 2) * 0.5, jnp.float32)
    pkey = jax.random.key_data(jax.random.PRNGKey(921))

    def particle_filter(obs, a, hmat, key):
        n = 8192
        key = jax.random.wrap_key_data(key)
        x0 = jax.random.normal(jax.random.fold_in(key, 10_000), (n, 4))

        def step(c, t_y):
            x, ll = c
            t, y = t_y
            k1, k2 = jax.random.split(jax.random.fold_in(key, t))
            x = jnp.tanh(x @ a) + 0.3 * jax.random.normal(k1, x.shape)
            resid = y - jnp.sin(x @ hmat)
            logw = -0.5 * (resid ** 2).sum(-1) / 0.25
            lse = jax.nn.logsumexp(logw)
            w = jnp.exp(logw - lse)
            mean = w @ x
            u = (jax.random.uniform(k2) + jnp.arange(n)) / n
            idx = jnp.searchsorted(jnp.cumsum(w), u)
            x = x[jnp.minimum(idx, n - 1)]
            return (x, ll + lse - jnp.log(n)), mean
        (_, ll), means = jax.lax.scan(step, (x0, jnp.float32(0.0)),
                                      (jnp.arange(100), obs))
        return means, ll
    out.append(("particle_filter_resample_scan", particle_filter, (obs, pf_a, pf_h, pkey)))
    return out


def main():
    write_programs_cli(__doc__, programs(), write_program)


if __name__ == "__main__":
    sys.exit(main())
