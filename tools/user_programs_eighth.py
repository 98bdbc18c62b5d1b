#!/usr/bin/env python3
"""Write an eighth batch of fresh programs as users write them (issue 30's held-out set), in
the form of `tools/user_programs.py`, for `tools/bench_vs_xla.py --dir`.

Run by hand (never by the test suite); needs jax, flax and optax from PyPI:

    python3 tools/user_programs_eighth.py /tmp/up8
    python3 tools/user_programs_eighth.py /tmp/up8 --only ctc_loss_grad
    python3 tools/bench_vs_xla.py --dir /tmp/up8 --repeat 3

Each program becomes DIR/NAME/before_optimizations.hlo, inputs.npz and outputs.npz (what
XLA:CPU computed), written as `user_programs.write_program` does but keeping unused
arguments (with 64-bit types on for the f64 programs only). The programs cover what the
first seven batches did not: a Conformer block (depthwise 1-D conv, GLU, BatchNorm in
train mode, attention) with its gradient, a T5 encoder with bucketed relative-position
bias trained by optax Adafactor, a Perceiver (cross-attention from latents to a long input
array, latent self-attention, a query decoder), a PNA-style graph network aggregating with
segment max/min/mean/std, a RealNVP normalizing flow's NLL with its log-determinant and
gradient, a GRU seq2seq greedy decoder with attention in lax.while_loop, optax's CTC loss
(a scan of logsumexp) with its gradient, Gaussian-mixture EM in f64 with batched Cholesky,
an optical-flow image warp with bilinear sampling (gathers) and its gradient, value
iteration on a random MDP to convergence in lax.while_loop, an int8-quantized MLP (s8 dots
into s32, dynamic per-row scales), and batched eigh/SVD/QR (ZCA whitening, spectral norms,
orthogonalization). Sizes are chosen so that XLA:CPU takes roughly 5-300 ms on a 2-core
machine; nothing is tuned for hloc.
"""

import os
import sys

import numpy as np

import jax
import jax.numpy as jnp
import flax.linen as nn
import optax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from user_programs import ids, normal, storable, write_programs_cli  # noqa: E402

# Programs lowered and run with jax_enable_x64 on (their arguments are float64 arrays).
X64 = {"gmm_em_f64"}


class ConformerBlock(nn.Module):
    """A Conformer block: half-step FFN, MHSA, a convolution module (pointwise conv to 2d,
    GLU, depthwise 1-D conv of width 31, BatchNorm in train mode, swish, pointwise conv),
    a second half-step FFN, a final LayerNorm."""
    d: int = 144
    heads: int = 4
    kernel: int = 31

    @nn.compact
    def __call__(self, x):
        def ffn(x):
            h = nn.Dense(4 * self.d)(nn.LayerNorm()(x))
            return nn.Dense(self.d)(nn.swish(h))
        x = x + 0.5 * ffn(x)
        h = nn.LayerNorm()(x)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads)(h, h)
        h = nn.Dense(2 * self.d)(nn.LayerNorm()(x))
        h = nn.glu(h, axis=-1)
        h = nn.Conv(self.d, (self.kernel,), padding="SAME", feature_group_count=self.d)(h)
        h = nn.swish(nn.BatchNorm(use_running_average=False, momentum=0.9)(h))
        x = x + nn.Dense(self.d)(h)
        x = x + 0.5 * ffn(x)
        return nn.LayerNorm()(x)


def t5_bucket(rel, num_buckets=32, max_distance=128):
    """T5's bidirectional relative-position bucket: exact for small offsets, logarithmic
    beyond, sign in the top half."""
    nb = num_buckets // 2
    ret = (rel > 0).astype(jnp.int32) * nb
    n = jnp.abs(rel)
    max_exact = nb // 2
    large = max_exact + (jnp.log(n.astype(jnp.float32) / max_exact + 1e-6)
                         / np.log(max_distance / max_exact) * (nb - max_exact)).astype(jnp.int32)
    large = jnp.minimum(large, nb - 1)
    return ret + jnp.where(n < max_exact, n, large)


class RmsNorm(nn.Module):
    @nn.compact
    def __call__(self, x):
        s = self.param("scale", nn.initializers.ones, (x.shape[-1],))
        return x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * s


class T5Layer(nn.Module):
    """A T5 encoder layer: RMSNorm, attention without scaling plus the shared position
    bias, a gated-GELU feed-forward."""
    d: int = 256
    heads: int = 4

    @nn.compact
    def __call__(self, x, bias):
        b, t, _ = x.shape
        hd = self.d // self.heads
        h = RmsNorm()(x)
        q, k, v = (nn.Dense(self.d, use_bias=False)(h).reshape(b, t, self.heads, hd)
                   for _ in range(3))
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) + bias[None]
        a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v).reshape(b, t, self.d)
        x = x + nn.Dense(self.d, use_bias=False)(a)
        h = RmsNorm()(x)
        g = nn.gelu(nn.Dense(2 * self.d, use_bias=False)(h)) * nn.Dense(
            2 * self.d, use_bias=False)(h)
        return x + nn.Dense(self.d, use_bias=False)(g)


class T5Encoder(nn.Module):
    vocab: int = 8192
    d: int = 256
    heads: int = 4
    layers: int = 2

    @nn.compact
    def __call__(self, toks):
        t = toks.shape[1]
        emb = nn.Embed(self.vocab, self.d)
        pos = jnp.arange(t)
        buckets = t5_bucket(pos[None, :] - pos[:, None])
        table = self.param("rel_bias", nn.initializers.normal(0.1), (32, self.heads))
        bias = table[buckets].transpose(2, 0, 1)                      # [heads, t, t]
        x = emb(toks)
        for _ in range(self.layers):
            x = T5Layer(self.d, self.heads)(x, bias)
        return emb.attend(RmsNorm()(x) * self.d ** -0.5)


class CrossAttend(nn.Module):
    heads: int = 1

    @nn.compact
    def __call__(self, q, kv):
        a = nn.MultiHeadDotProductAttention(num_heads=self.heads)(
            nn.LayerNorm()(q), nn.LayerNorm()(kv))
        q = q + a
        return q + nn.Dense(q.shape[-1])(nn.gelu(nn.Dense(q.shape[-1])(nn.LayerNorm()(q))))


class Perceiver(nn.Module):
    """Perceiver IO: a learned latent array cross-attends to the inputs (with Fourier
    position features), two latent self-attention blocks, then output queries
    cross-attend to the latents."""
    latents: int = 256
    d: int = 256
    out_queries: int = 512

    @nn.compact
    def __call__(self, x):
        b, n, _ = x.shape
        freqs = jnp.arange(1, 17, dtype=jnp.float32)
        p = jnp.linspace(-1.0, 1.0, n)[:, None] * freqs * jnp.pi
        feats = jnp.concatenate([jnp.sin(p), jnp.cos(p)], -1)             # [n, 32]
        x = jnp.concatenate([x, jnp.broadcast_to(feats, (b, n, 32))], -1)
        x = nn.Dense(self.d)(x)
        lat = self.param("latents", nn.initializers.normal(0.02), (self.latents, self.d))
        z = CrossAttend(1)(jnp.broadcast_to(lat, (b,) + lat.shape), x)
        for _ in range(2):
            z = CrossAttend(8)(z, z)
        oq = self.param("queries", nn.initializers.normal(0.02), (self.out_queries, self.d))
        o = CrossAttend(1)(jnp.broadcast_to(oq, (b,) + oq.shape), z)
        return nn.Dense(10)(o)


class PnaLayer(nn.Module):
    """A PNA-style layer: messages from an MLP of (source, destination) features,
    aggregated by segment mean, max, min and std, scaled by log-degree, then a linear
    update with a residual."""
    dim: int = 64

    @nn.compact
    def __call__(self, x, src, dst, deg):
        n = x.shape[0]
        m = nn.relu(nn.Dense(self.dim)(jnp.concatenate([x[src], x[dst]], -1)))
        cnt = jnp.maximum(deg, 1.0)[:, None]
        mean = jax.ops.segment_sum(m, dst, n) / cnt
        sq = jax.ops.segment_sum(m * m, dst, n) / cnt
        std = jnp.sqrt(jnp.maximum(sq - mean * mean, 0.0) + 1e-5)
        mx = jax.ops.segment_max(m, dst, n)
        mn = jax.ops.segment_min(m, dst, n)
        mx = jnp.where(deg[:, None] > 0, mx, 0.0)
        mn = jnp.where(deg[:, None] > 0, mn, 0.0)
        agg = jnp.concatenate([mean, mx, mn, std], -1)
        s = jnp.log(deg + 1.0)[:, None] / 2.0
        h = jnp.concatenate([x, agg, agg * s], -1)
        return x + nn.relu(nn.Dense(self.dim)(h))


class Coupling(nn.Module):
    """A RealNVP affine coupling layer: the masked half predicts scale (tanh-bounded) and
    shift of the other half; returns y and log|det J|."""
    mask: tuple
    hidden: int = 256

    @nn.compact
    def __call__(self, x):
        m = jnp.asarray(self.mask, jnp.float32)
        h = nn.relu(nn.Dense(self.hidden)(x * m))
        h = nn.relu(nn.Dense(self.hidden)(h))
        s = jnp.tanh(nn.Dense(x.shape[-1])(h)) * (1 - m)
        t = nn.Dense(x.shape[-1])(h) * (1 - m)
        y = x * m + (1 - m) * (x * jnp.exp(s) + t)
        return y, s.sum(-1)


class RealNvp(nn.Module):
    dim: int = 64
    layers: int = 8

    @nn.compact
    def __call__(self, x):
        logdet = jnp.zeros(x.shape[0])
        for i in range(self.layers):
            mask = tuple(float((j + i) % 2) for j in range(self.dim))
            x, ld = Coupling(mask)(x)
            logdet = logdet + ld
        return x, logdet


class Seq2Seq(nn.Module):
    """A GRU encoder and a GRU decoder with Luong (dot) attention over encoder states."""
    vocab: int = 2048
    hidden: int = 256

    def setup(self):
        self.src_emb = nn.Embed(self.vocab, 128)
        self.tgt_emb = nn.Embed(self.vocab, 128)
        self.enc = nn.RNN(nn.GRUCell(self.hidden))
        self.dec = nn.GRUCell(self.hidden)
        self.comb = nn.Dense(self.hidden)
        self.out = nn.Dense(self.vocab)

    def encode(self, src):
        return self.enc(self.src_emb(src))

    def step(self, h, tok, enc):
        h, y = self.dec(h, self.tgt_emb(tok))
        a = jax.nn.softmax(jnp.einsum("bh,bth->bt", y, enc), -1)
        ctx = jnp.einsum("bt,bth->bh", a, enc)
        return h, self.out(jnp.tanh(self.comb(jnp.concatenate([y, ctx], -1))))

    def __call__(self, src, tok):
        enc = self.encode(src)
        return self.step(enc[:, -1], tok, enc)


class AcousticModel(nn.Module):
    """Two 1-D convolutions over 80-d filterbank frames, a dense layer, per-frame logits
    over 64 classes (blank 0)."""

    @nn.compact
    def __call__(self, x):
        x = nn.gelu(nn.Conv(256, (5,))(x))
        x = nn.gelu(nn.Conv(256, (5,))(x))
        return nn.Dense(64)(nn.gelu(nn.Dense(256)(x)))


def gmm_em(x, means, covs, weights):
    """Ten EM steps of a full-covariance Gaussian mixture in f64: the E-step's
    log-densities through batched Cholesky factors and triangular solves, responsibilities
    by logsumexp, the M-step's weighted means and covariances (with a ridge)."""
    n, d = x.shape
    k = means.shape[0]

    def loglik(means, covs, weights):
        chol = jnp.linalg.cholesky(covs)                               # [k, d, d]
        diff = x[None] - means[:, None]                                # [k, n, d]
        sol = jax.scipy.linalg.solve_triangular(
            chol, diff.transpose(0, 2, 1), lower=True)                 # [k, d, n]
        maha = (sol ** 2).sum(1)                                       # [k, n]
        logdet = 2 * jnp.log(jnp.diagonal(chol, axis1=1, axis2=2)).sum(-1)
        return (jnp.log(weights)[:, None] - 0.5 * (maha + logdet[:, None]
                                                   + d * jnp.log(2 * jnp.pi)))

    def step(_, s):
        means, covs, weights, _ = s
        lp = loglik(means, covs, weights)
        lse = jax.nn.logsumexp(lp, 0)
        r = jnp.exp(lp - lse[None])                                    # [k, n]
        nk = r.sum(1) + 1e-10
        means = (r @ x) / nk[:, None]
        diff = x[None] - means[:, None]
        covs = jnp.einsum("kn,kni,knj->kij", r, diff, diff) / nk[:, None, None]
        covs = covs + 1e-6 * jnp.eye(d)[None]
        return means, covs, nk / n, lse.mean()
    return jax.lax.fori_loop(0, 10, step, (means, covs, weights, jnp.float64(0.0)))


def bilinear_warp(img, flow):
    """Warp img [b, h, w, c] by flow [b, h, w, 2] with bilinear sampling (four gathers
    from the flattened image, clamped at the borders), as optical-flow models do."""
    b, h, w, c = img.shape
    gy, gx = jnp.meshgrid(jnp.arange(h, dtype=jnp.float32),
                          jnp.arange(w, dtype=jnp.float32), indexing="ij")
    x = jnp.clip(gx[None] + flow[..., 0], 0.0, w - 1.0)
    y = jnp.clip(gy[None] + flow[..., 1], 0.0, h - 1.0)
    x0, y0 = jnp.floor(x), jnp.floor(y)
    x1, y1 = jnp.minimum(x0 + 1, w - 1), jnp.minimum(y0 + 1, h - 1)
    wx, wy = (x - x0)[..., None], (y - y0)[..., None]
    flat = img.reshape(b, h * w, c)

    def at(yy, xx):
        i = (yy * w + xx).astype(jnp.int32).reshape(b, h * w, 1)
        return jnp.take_along_axis(flat, i, axis=1).reshape(b, h, w, c)
    top = at(y0, x0) * (1 - wx) + at(y0, x1) * wx
    bot = at(y1, x0) * (1 - wx) + at(y1, x1) * wx
    return top * (1 - wy) + bot * wy


def quantize_rows(x):
    """Symmetric dynamic int8 quantization, one scale per row."""
    s = jnp.maximum(jnp.abs(x).max(-1, keepdims=True), 1e-8) / 127.0
    return jnp.clip(jnp.round(x / s), -127, 127).astype(jnp.int8), s


def int8_linear(x, wq, ws, b):
    xq, xs = quantize_rows(x)
    acc = jax.lax.dot(xq, wq, preferred_element_type=jnp.int32)
    return acc.astype(jnp.float32) * xs * ws[None] + b


def programs():
    """(name, function, args) of every program."""
    out = []

    # A Conformer block on [4, 256, 144] (speech frames): loss, gradient and the updated
    # BatchNorm statistics.
    cf = ConformerBlock()
    cfx = normal(800, (4, 256, 144))
    cfv = cf.init(jax.random.PRNGKey(800), cfx)

    def conformer_grad(params, stats, x):
        def loss(p):
            y, upd = cf.apply({"params": p, "batch_stats": stats}, x, mutable=["batch_stats"])
            return (y ** 2).mean(), upd["batch_stats"]
        (l, st), g = jax.value_and_grad(loss, has_aux=True)(params)
        return l, g, st
    out.append(("conformer_block_grad", conformer_grad,
                (cfv["params"], cfv["batch_stats"], cfx)))

    # A T5-style encoder (2 layers, bucketed relative-position bias, tied embeddings over
    # 8192 tokens) on [4, 128] tokens; one optax Adafactor step on a token-prediction loss.
    t5 = T5Encoder()
    t5tok = ids(801, (4, 128), 8192)
    t5lab = ids(802, (4, 128), 8192)
    t5p = t5.init(jax.random.PRNGKey(801), t5tok)
    ada = optax.adafactor(1e-2)
    t5st = ada.init(t5p)

    def t5_step(p, st, toks, lab):
        def loss(p):
            return optax.softmax_cross_entropy_with_integer_labels(
                t5.apply(p, toks), lab).mean()
        l, g = jax.value_and_grad(loss)(p)
        u, st = ada.update(g, st, p)
        return optax.apply_updates(p, u), st, l
    out.append(("t5_relbias_adafactor_step", t5_step, (t5p, t5st, t5tok, t5lab)))

    # A Perceiver over 4 inputs of 2048 points of 64 features: 256 latents of width 256,
    # 512 output queries, forward logits.
    pc = Perceiver()
    pcx = normal(803, (4, 2048, 64))
    pcp = pc.init(jax.random.PRNGKey(803), pcx)
    out.append(("perceiver_cross_attn", lambda p, x: pc.apply(p, x), (pcp, pcx)))

    # A two-layer PNA-style graph network on 4096 nodes and 49152 random edges: a
    # regression loss and its gradient (segment max/min backpropagate through ties).
    class Pna(nn.Module):
        @nn.compact
        def __call__(self, x, src, dst, deg):
            x = nn.Dense(64)(x)
            x = PnaLayer()(x, src, dst, deg)
            x = PnaLayer()(x, src, dst, deg)
            return nn.Dense(1)(x)[:, 0]
    nodes, edges = 4096, 49152
    psrc = ids(804, (edges,), nodes)
    pdst = ids(805, (edges,), nodes)
    pdeg = jnp.zeros(nodes).at[pdst].add(1.0)
    pnx = normal(806, (nodes, 32))
    pny = normal(807, (nodes,))
    pna = Pna()
    pnp = pna.init(jax.random.PRNGKey(804), pnx, psrc, pdst, pdeg)

    def pna_grad(p, x, src, dst, deg, y):
        return jax.value_and_grad(
            lambda p: ((pna.apply(p, x, src, dst, deg) - y) ** 2).mean())(p)
    out.append(("pna_segment_max_min", pna_grad, (pnp, pnx, psrc, pdst, pdeg, pny)))

    # RealNVP: 8 affine coupling layers (MLPs of width 256) on 1024 samples of 64-d data;
    # the negative log-likelihood under a standard normal base and its gradient.
    flow = RealNvp()
    fx = normal(808, (1024, 64))
    fp = flow.init(jax.random.PRNGKey(808), fx)

    def flow_nll(p, x):
        def nll(p):
            z, logdet = flow.apply(p, x)
            logp = -0.5 * (z ** 2).sum(-1) - 0.5 * z.shape[-1] * jnp.log(2 * jnp.pi)
            return -(logp + logdet).mean()
        return jax.value_and_grad(nll)(p)
    out.append(("realnvp_flow_nll_grad", flow_nll, (fp, fx)))

    # Greedy seq2seq decoding: a GRU encoder over [32, 48] source tokens, then a decoder
    # with attention in lax.while_loop, stopping when every sequence has emitted EOS or
    # after 64 tokens.
    s2s = Seq2Seq()
    ssrc = ids(809, (32, 48), 2048)
    sbos = jnp.ones((32,), jnp.int32)
    s2p = s2s.init(jax.random.PRNGKey(809), ssrc, sbos)

    def greedy(p, src, bos):
        enc = s2s.apply(p, src, method=Seq2Seq.encode)
        eos, max_len = 2, 64

        def cond(c):
            i, _, _, done, _ = c
            return (i < max_len) & ~done.all()

        def body(c):
            i, h, tok, done, outs = c
            h, logits = s2s.apply(p, h, tok, enc, method=Seq2Seq.step)
            nxt = jnp.where(done, 0, jnp.argmax(logits, -1).astype(jnp.int32))
            outs = jax.lax.dynamic_update_slice(outs, nxt[:, None], (0, i))
            return i + 1, h, nxt, done | (nxt == eos), outs
        init = (jnp.int32(0), enc[:, -1], bos, jnp.zeros((32,), bool),
                jnp.zeros((32, max_len), jnp.int32))
        i, _, _, _, outs = jax.lax.while_loop(cond, body, init)
        return i, outs
    out.append(("seq2seq_greedy_while", greedy, (s2p, ssrc, sbos)))

    # CTC: a small conv acoustic model over [8, 400, 80] filterbanks, optax.ctc_loss
    # against label sequences of up to 60 (right-padded), frames padded per utterance;
    # mean loss and gradient.
    am = AcousticModel()
    cx = normal(810, (8, 400, 80))
    clens = ids(811, (8,), 100) + 300
    cpad = (jnp.arange(400)[None] >= clens[:, None]).astype(jnp.float32)
    clab = ids(812, (8, 60), 63) + 1
    llens = ids(813, (8,), 30) + 30
    lpad = (jnp.arange(60)[None] >= llens[:, None]).astype(jnp.float32)
    amp = am.init(jax.random.PRNGKey(810), cx)

    def ctc_grad(p, x, xpad, lab, lpad):
        return jax.value_and_grad(
            lambda p: optax.ctc_loss(am.apply(p, x), xpad, lab, lpad).mean())(p)
    out.append(("ctc_loss_grad", ctc_grad, (amp, cx, cpad, clab, lpad)))

    # Gaussian-mixture EM (f64): 4096 points in 16-d, 16 full-covariance components,
    # 10 iterations in lax.fori_loop.
    r = np.random.RandomState(814)
    centers = r.randn(16, 16) * 3
    gx = centers[r.randint(0, 16, 4096)] + r.randn(4096, 16)
    gm = gx[r.choice(4096, 16, replace=False)]
    gc = np.broadcast_to(np.eye(16) * 4.0, (16, 16, 16)).copy()
    gw = np.full((16,), 1 / 16)
    out.append(("gmm_em_f64", gmm_em, (gx, gm, gc, gw)))

    # An optical-flow photometric loss: warp the second of [4, 192, 256, 3] frame pairs
    # by the flow with bilinear sampling, Charbonnier loss plus a smoothness term;
    # gradient w.r.t. the flow.
    im1 = normal(815, (4, 192, 256, 3))
    im2 = normal(816, (4, 192, 256, 3))
    fl = normal(817, (4, 192, 256, 2), scale=3.0)

    def warp_loss(flow, a, b):
        def loss(flow):
            d = bilinear_warp(b, flow) - a
            photo = jnp.sqrt(d * d + 1e-6).mean()
            sm = (jnp.abs(jnp.diff(flow, axis=1)).mean() + jnp.abs(jnp.diff(flow, axis=2)).mean())
            return photo + 0.1 * sm
        return jax.value_and_grad(loss)(flow)
    out.append(("image_warp_bilinear_grad", warp_loss, (fl, im1, im2)))

    # Value iteration on a random MDP of 512 states and 4 actions (dense transitions),
    # gamma 0.9, in lax.while_loop until the Bellman residual is under 1e-4 (or 400
    # sweeps); the values, the greedy policy and the sweep count.
    r = np.random.RandomState(818)
    logits = r.randn(4, 512, 512) * 2
    trans = np.exp(logits - logits.max(-1, keepdims=True))
    trans = jnp.asarray(trans / trans.sum(-1, keepdims=True), jnp.float32)
    rew = normal(819, (512, 4))

    def value_iteration(p, rew):
        def q_of(v):
            return rew + 0.9 * jnp.einsum("ast,t->sa", p, v)

        def cond(c):
            i, _, res = c
            return (i < 400) & (res > 1e-4)

        def body(c):
            i, v, _ = c
            nv = q_of(v).max(-1)
            return i + 1, nv, jnp.abs(nv - v).max()
        i, v, _ = jax.lax.while_loop(cond, body, (0, jnp.zeros(512), jnp.float32(jnp.inf)))
        return v, jnp.argmax(q_of(v), -1), i
    out.append(("value_iteration_while", value_iteration, (trans, rew)))

    # int8 inference: a 3-layer MLP (1024 -> 4096 -> 4096 -> 1024) with per-column int8
    # weights and dynamically quantized activations, s8 x s8 -> s32 dots, GELU in f32,
    # a softmax over 1024 classes, batch 512.
    dims = [1024, 4096, 4096, 1024]
    qp = []
    for i in range(3):
        w = normal(820 + i, (dims[i], dims[i + 1]), scale=dims[i] ** -0.5)
        ws = jnp.abs(w).max(0) / 127.0
        qp.append((jnp.clip(jnp.round(w / ws), -127, 127).astype(jnp.int8), ws,
                   normal(830 + i, (dims[i + 1],), scale=0.1)))
    qx = normal(833, (512, 1024))

    def int8_mlp(qp, x):
        for i, (wq, ws, b) in enumerate(qp):
            x = int8_linear(x, wq, ws, b)
            if i < 2:
                x = nn.gelu(x)
        return jax.nn.softmax(x, -1)
    out.append(("int8_quantized_mlp", int8_mlp, (qp, qx)))

    # Batched linear algebra: ZCA whitening of 32 feature batches (eigh of 128x128
    # covariances), the singular values of 32 [128, 96] weight matrices scaled by each
    # batch's top variance (SVD), and a QR orthogonalization of 32 [256, 64] bases scaled
    # by the resulting spectral norms. Each factorization depends on the previous one:
    # jax 0.10.2's XLA:CPU hung (all threads in futex waits) when eigh, QR and SVD were
    # independent in one program, so the chain keeps XLA's reference run finishing.
    lx = normal(834, (32, 1024, 128))
    lq = normal(835, (32, 256, 64))
    lw = normal(836, (32, 128, 96))

    def linalg_batch(x, a, w):
        xc = x - x.mean(1, keepdims=True)
        cov = jnp.einsum("bni,bnj->bij", xc, xc) / x.shape[1]
        evals, evecs = jnp.linalg.eigh(cov)
        # ZCA (V diag(1/sqrt(l)) V^T): unlike PCA's rotation, free of eigenvector signs.
        zca = jnp.einsum("bij,bj,bkj->bik", evecs, jax.lax.rsqrt(evals + 1e-5), evecs)
        white = jnp.einsum("bni,bik->bnk", xc, zca)
        s = jnp.linalg.svd(w * evals[:, -1:, None], compute_uv=False)
        q, rr = jnp.linalg.qr(a * s[:, :1, None])
        return white, s, q, jnp.abs(jnp.diagonal(rr, axis1=1, axis2=2))
    out.append(("batched_eigh_qr_svd", linalg_batch, (lx, lq, lw)))
    return out


def write_program(out_dir, name, f, args):
    """`user_programs.write_program`, but jitted with `keep_unused=True`: optax Adafactor's
    state holds placeholder leaves the step never reads, which a plain `jax.jit` drops
    from the module's parameters, so `inputs.npz` (every leaf, in order) would no longer
    line up with them."""
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    jf = jax.jit(f, keep_unused=True)
    with open(os.path.join(d, "before_optimizations.hlo"), "w") as fh:
        fh.write(jf.lower(*args).as_text(dialect="hlo"))
    leaves = jax.tree_util.tree_leaves(args)
    np.savez(os.path.join(d, "inputs.npz"),
             **{f"in{i}": storable(a) for i, a in enumerate(leaves)})
    outs = jax.tree_util.tree_leaves(jf(*args))
    np.savez(os.path.join(d, "outputs.npz"),
             **{f"out{i}": storable(o) for i, o in enumerate(outs)})


def write_with_x64(out_dir, name, f, args):
    """`write_program` with 64-bit types on for the programs in `X64` only."""
    jax.config.update("jax_enable_x64", name in X64)
    try:
        if name in X64:
            args = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), args)
        write_program(out_dir, name, f, args)
    finally:
        jax.config.update("jax_enable_x64", False)


def main():
    write_programs_cli(__doc__, programs(), write_with_x64)


if __name__ == "__main__":
    sys.exit(main())
