#!/usr/bin/env python3
"""Write a seventh batch of fresh programs as users write them (issue 30's held-out set), in
the form of `tools/user_programs.py`, for `tools/bench_vs_xla.py --dir`.

Run by hand (never by the test suite); needs jax, flax and optax from PyPI:

    python3 tools/user_programs_seventh.py /tmp/up7
    python3 tools/user_programs_seventh.py /tmp/up7 --only gat_segment_softmax
    python3 tools/bench_vs_xla.py --dir /tmp/up7 --repeat 3

Each program becomes DIR/NAME/before_optimizations.hlo, inputs.npz and outputs.npz (what
XLA:CPU computed), written by `user_programs.write_program`. The programs cover what the
first six batches did not: a ConvNeXt block (depthwise 7x7, LayerNorm, inverted MLP) with
its gradient, a BERT masked-LM loss gathering the masked positions, Swin shifted-window
attention with a relative position bias, a neural ODE integrated by hand-written RK4 in
lax.fori_loop, Gumbel-max categorical sampling in a scan, a MoCo InfoNCE loss against a
queue of 65536 negatives, a graph attention network with a segment softmax, an optax LAMB
step on a transformer, a 3-D convolutional video network, and DP-SGD's per-example
gradients (jax.vmap of grad) clipped and noised. Sizes are chosen so that XLA:CPU takes
roughly 5-300 ms on a 2-core machine; nothing is tuned for hloc.
"""

import os
import sys

import jax
import jax.numpy as jnp
import flax.linen as nn
import optax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from user_programs import ids, normal, write_program, write_programs_cli  # noqa: E402


class ConvNeXtBlock(nn.Module):
    """ConvNeXt: depthwise 7x7 conv, LayerNorm, 4x pointwise MLP with GELU, layer scale,
    residual."""
    dim: int = 96

    @nn.compact
    def __call__(self, x):
        h = nn.Conv(self.dim, (7, 7), padding=3, feature_group_count=self.dim)(x)
        h = nn.LayerNorm(epsilon=1e-6)(h)
        h = nn.gelu(nn.Dense(4 * self.dim)(h))
        h = nn.Dense(self.dim)(h)
        gamma = self.param("gamma", nn.initializers.constant(1e-1), (self.dim,))
        return x + gamma * h


class BertLayer(nn.Module):
    """A post-LN BERT encoder layer with a padding mask."""
    d: int = 256
    heads: int = 4

    @nn.compact
    def __call__(self, x, pad):
        mask = nn.make_attention_mask(pad, pad)
        a = nn.MultiHeadDotProductAttention(num_heads=self.heads)(x, x, mask=mask)
        x = nn.LayerNorm()(x + a)
        h = nn.Dense(self.d)(nn.gelu(nn.Dense(4 * self.d)(x)))
        return nn.LayerNorm()(x + h)


class BertMlm(nn.Module):
    vocab: int = 30522
    d: int = 256
    layers: int = 2

    @nn.compact
    def __call__(self, toks, pad, masked_pos):
        emb = nn.Embed(self.vocab, self.d)
        pos = self.param("pos", nn.initializers.normal(0.02), (toks.shape[1], self.d))
        x = nn.LayerNorm()(emb(toks) + pos[None])
        for _ in range(self.layers):
            x = BertLayer(self.d)(x, pad)
        # Only the masked positions go through the head: gather them first.
        h = jnp.take_along_axis(x, masked_pos[..., None], axis=1)    # [b, m, d]
        h = nn.LayerNorm()(nn.gelu(nn.Dense(self.d)(h)))
        bias = self.param("out_bias", nn.initializers.zeros, (self.vocab,))
        return emb.attend(h) + bias                                   # tied weights


def relative_position_index(w):
    """Swin's [w*w, w*w] index into the (2w-1)^2 bias table."""
    c = jnp.stack(jnp.meshgrid(jnp.arange(w), jnp.arange(w), indexing="ij")).reshape(2, -1)
    rel = (c[:, :, None] - c[:, None, :]).transpose(1, 2, 0) + (w - 1)
    return rel[..., 0] * (2 * w - 1) + rel[..., 1]


class SwinBlock(nn.Module):
    """A Swin Transformer block: (shifted) 7x7 window attention with a learned relative
    position bias and the shifted-window mask, then an MLP; pre-LN, residuals."""
    dim: int = 96
    heads: int = 3
    window: int = 7
    shift: int = 0

    @nn.compact
    def __call__(self, x):
        b, hgt, wid, c = x.shape
        w, hd = self.window, self.dim // self.heads
        h = nn.LayerNorm()(x)
        if self.shift:
            h = jnp.roll(h, (-self.shift, -self.shift), (1, 2))
        win = h.reshape(b, hgt // w, w, wid // w, w, c).transpose(0, 1, 3, 2, 4, 5)
        win = win.reshape(-1, w * w, c)
        qkv = nn.Dense(3 * c)(win).reshape(win.shape[0], w * w, 3, self.heads, hd)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        s = jnp.einsum("nqhd,nkhd->nhqk", q, k) * hd ** -0.5
        table = self.param("rel_bias", nn.initializers.normal(0.02),
                           ((2 * w - 1) ** 2, self.heads))
        bias = table[relative_position_index(w).reshape(-1)].reshape(w * w, w * w, -1)
        s = s + bias.transpose(2, 0, 1)[None]
        if self.shift:
            img = jnp.zeros((hgt, wid), jnp.int32)
            cnt = 0
            for hs in (slice(0, -w), slice(-w, -self.shift), slice(-self.shift, None)):
                for ws in (slice(0, -w), slice(-w, -self.shift), slice(-self.shift, None)):
                    img = img.at[hs, ws].set(cnt)
                    cnt += 1
            mw = img.reshape(hgt // w, w, wid // w, w).transpose(0, 2, 1, 3).reshape(-1, w * w)
            m = jnp.where(mw[:, :, None] == mw[:, None, :], 0.0, -100.0)   # [nw, ww, ww]
            s = s.reshape(b, -1, self.heads, w * w, w * w) + m[None, :, None]
            s = s.reshape(-1, self.heads, w * w, w * w)
        a = jnp.einsum("nhqk,nkhd->nqhd", jax.nn.softmax(s, -1), v).reshape(-1, w * w, c)
        a = nn.Dense(c)(a).reshape(b, hgt // w, wid // w, w, w, c).transpose(0, 1, 3, 2, 4, 5)
        a = a.reshape(b, hgt, wid, c)
        if self.shift:
            a = jnp.roll(a, (self.shift, self.shift), (1, 2))
        x = x + a
        return x + nn.Dense(c)(nn.gelu(nn.Dense(4 * c)(nn.LayerNorm()(x))))


class OdeFunc(nn.Module):
    """Time-conditioned MLP dynamics f(t, y) of a neural ODE."""
    hidden: int = 256

    @nn.compact
    def __call__(self, t, y):
        h = jnp.concatenate([y, jnp.full(y.shape[:-1] + (1,), t)], -1)
        h = nn.softplus(nn.Dense(self.hidden)(h))
        h = nn.softplus(nn.Dense(self.hidden)(h))
        return nn.Dense(y.shape[-1])(h)


class GatLayer(nn.Module):
    """A GAT layer: per-head linear map, attention logits from source and destination
    scores, LeakyReLU, softmax over each node's incoming edges (a segment softmax), a
    weighted segment sum of the messages."""
    out: int = 32
    heads: int = 4

    @nn.compact
    def __call__(self, x, src, dst):
        n = x.shape[0]
        h = nn.Dense(self.heads * self.out, use_bias=False)(x).reshape(n, self.heads, self.out)
        a_s = self.param("att_src", nn.initializers.glorot_uniform(), (self.heads, self.out))
        a_d = self.param("att_dst", nn.initializers.glorot_uniform(), (self.heads, self.out))
        e = (h * a_s).sum(-1)[src] + (h * a_d).sum(-1)[dst]           # [E, heads]
        e = nn.leaky_relu(e, 0.2)
        e = e - jax.ops.segment_max(e, dst, n)[dst]
        p = jnp.exp(e)
        p = p / (jax.ops.segment_sum(p, dst, n)[dst] + 1e-16)
        msg = h[src] * p[..., None]
        return jax.ops.segment_sum(msg, dst, n) + self.param(
            "bias", nn.initializers.zeros, (self.heads, self.out))


class PreLnBlock(nn.Module):
    d: int = 256
    heads: int = 8

    @nn.compact
    def __call__(self, x):
        t = x.shape[1]
        h = nn.LayerNorm()(x)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads)(
            h, h, mask=nn.make_causal_mask(jnp.ones((x.shape[0], t))))
        return x + nn.Dense(self.d)(nn.gelu(nn.Dense(4 * self.d)(nn.LayerNorm()(x))))


class TinyLm(nn.Module):
    vocab: int = 4096
    d: int = 256
    layers: int = 3

    @nn.compact
    def __call__(self, toks):
        x = nn.Embed(self.vocab, self.d)(toks)
        x = x + self.param("pos", nn.initializers.normal(0.02), (toks.shape[1], self.d))
        for _ in range(self.layers):
            x = PreLnBlock(self.d)(x)
        return nn.Dense(self.vocab)(nn.LayerNorm()(x))


class VideoNet(nn.Module):
    """A small 3-D CNN for video clips: 3x3x3 convolutions, a temporal-spatial stride, a
    (1,3,3) spatial and a (3,1,1) temporal factorized pair (R(2+1)D), global pooling."""

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(32, (3, 3, 3))(x))
        x = nn.relu(nn.Conv(64, (3, 3, 3), strides=(2, 2, 2))(x))
        x = nn.relu(nn.Conv(64, (1, 3, 3))(x))
        x = nn.relu(nn.Conv(64, (3, 1, 1))(x))
        x = nn.relu(nn.Conv(128, (3, 3, 3), strides=(1, 2, 2))(x))
        return nn.Dense(10)(x.mean((1, 2, 3)))


def programs():
    """(name, function, args) of every program."""
    out = []

    # A ConvNeXt block on [4, 56, 56, 96]: loss and gradient w.r.t. parameters and input.
    cb = ConvNeXtBlock()
    cx = normal(700, (4, 56, 56, 96))
    cp = cb.init(jax.random.PRNGKey(700), cx)

    def convnext_grad(p, x):
        return jax.value_and_grad(lambda p, x: (cb.apply(p, x) ** 2).mean(), (0, 1))(p, x)
    out.append(("convnext_block_grad", convnext_grad, (cp, cx)))

    # A BERT masked-LM loss: 2 encoder layers over [8, 128] tokens with padding, 20 masked
    # positions per sequence gathered before the tied 30522-token head, weighted
    # cross-entropy (padding masks count 0).
    bert = BertMlm()
    btok = ids(701, (8, 128), 30522)
    lens = ids(702, (8,), 64) + 64
    bpad = jnp.arange(128)[None, :] < lens[:, None]
    bpos = ids(703, (8, 20), 64)
    blab = ids(704, (8, 20), 30522)
    bw = (ids(705, (8, 20), 10) > 0).astype(jnp.float32)
    bp = bert.init(jax.random.PRNGKey(701), btok, bpad, bpos)

    def mlm_loss(p, toks, pad, pos, lab, w):
        def loss(p):
            logits = bert.apply(p, toks, pad, pos)
            xe = optax.softmax_cross_entropy_with_integer_labels(logits, lab)
            return (xe * w).sum() / w.sum()
        return jax.value_and_grad(loss)(p)
    out.append(("bert_mlm_masked_gather", mlm_loss, (bp, btok, bpad, bpos, blab, bw)))

    # Two Swin blocks (regular then shifted windows) on a [4, 56, 56, 96] feature map.
    class SwinPair(nn.Module):
        @nn.compact
        def __call__(self, x):
            return SwinBlock(shift=3)(SwinBlock(shift=0)(x))
    sw = SwinPair()
    swx = normal(706, (4, 56, 56, 96))
    swp = sw.init(jax.random.PRNGKey(706), swx)
    out.append(("swin_shifted_window_attn", lambda p, x: sw.apply(p, x), (swp, swx)))

    # A neural ODE: 1024 trajectories of a 32-d state through a time-conditioned MLP,
    # 40 fixed RK4 steps from t=0 to 1 written by hand in lax.fori_loop, the final state
    # and a running integral of |y|^2 (a kinetic regularizer).
    of = OdeFunc()
    y0 = normal(707, (1024, 32))
    op = of.init(jax.random.PRNGKey(707), 0.0, y0)

    def node_solve(p, y0):
        n, dt = 40, 1.0 / 40

        def f(t, y):
            return of.apply(p, t, y)

        def step(i, s):
            y, reg = s
            t = i * dt
            k1 = f(t, y)
            k2 = f(t + dt / 2, y + dt / 2 * k1)
            k3 = f(t + dt / 2, y + dt / 2 * k2)
            k4 = f(t + dt, y + dt * k3)
            y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            return y, reg + dt * (y ** 2).sum(-1).mean()
        return jax.lax.fori_loop(0, n, step, (y0, jnp.float32(0.0)))
    out.append(("neural_ode_rk4_fori", node_solve, (op, y0)))

    # Autoregressive sampling from a GRU over a 512-token vocabulary: 64 steps in a
    # lax.scan, each split the key, sample with temperature through Gumbel-max
    # (jax.random.categorical), feed the token back; also the Gumbel-softmax relaxation's
    # soft one-hot averaged over steps.
    class Sampler(nn.Module):
        vocab: int = 512
        hidden: int = 256

        def setup(self):
            self.emb = nn.Embed(self.vocab, 128)
            self.cell = nn.GRUCell(self.hidden)
            self.head = nn.Dense(self.vocab)

        def __call__(self, h, tok):
            h, y = self.cell(h, self.emb(tok))
            return h, self.head(y)
    smp = Sampler()
    sh0 = jnp.zeros((64, 256))
    stok0 = ids(708, (64,), 512)
    sprm = smp.init(jax.random.PRNGKey(708), sh0, stok0)
    skey = jax.random.PRNGKey(709)

    def sample(p, h, tok, key):
        def body(c, _):
            h, tok, key, soft = c
            key, k1, k2 = jax.random.split(key, 3)
            h, logits = smp.apply(p, h, tok)
            tok = jax.random.categorical(k1, logits / 0.8)
            g = -jnp.log(-jnp.log(jax.random.uniform(k2, logits.shape, minval=1e-9, maxval=1.0)))
            soft = soft + jax.nn.softmax((logits + g) / 0.5)
            return (h, tok, key, soft), tok
        (h, tok, key, soft), toks = jax.lax.scan(
            body, (h, tok, key, jnp.zeros((64, 512))), None, length=64)
        return toks.T, soft / 64
    out.append(("gumbel_sampling_scan", sample, (sprm, sh0, stok0, skey)))

    # MoCo's InfoNCE: 512 queries against their positive keys and a queue of 65536
    # negatives (128-d, normalized), temperature 0.07; gradient w.r.t. the queries'
    # projection and the new queue after enqueueing the keys.
    mq = {"w": normal(710, (256, 128), scale=1 / 16), "b": jnp.zeros((128,))}
    feats = normal(711, (512, 256))
    keys = normal(712, (512, 128))
    queue = normal(713, (65536, 128))
    queue = queue / jnp.linalg.norm(queue, axis=1, keepdims=True)

    def moco(p, x, k, queue):
        def loss(p):
            q = x @ p["w"] + p["b"]
            q = q / jnp.linalg.norm(q, axis=1, keepdims=True)
            kn = k / jnp.linalg.norm(k, axis=1, keepdims=True)
            pos = (q * kn).sum(1, keepdims=True)
            neg = q @ queue.T
            logits = jnp.concatenate([pos, neg], 1) / 0.07
            return optax.softmax_cross_entropy_with_integer_labels(
                logits, jnp.zeros(x.shape[0], jnp.int32)).mean()
        l, g = jax.value_and_grad(loss)(p)
        kn = k / jnp.linalg.norm(k, axis=1, keepdims=True)
        return l, g, jnp.concatenate([kn, queue[:-k.shape[0]]], 0)
    out.append(("moco_infonce_queue", moco, (mq, feats, keys, queue)))

    # A two-layer GAT on a random graph of 16384 nodes and 262144 edges (plus self-loops),
    # node classification loss and its gradient.
    class Gat(nn.Module):
        @nn.compact
        def __call__(self, x, src, dst):
            h = nn.elu(GatLayer(32, 4)(x, src, dst).reshape(x.shape[0], -1))
            return GatLayer(16, 1)(h, src, dst)[:, 0]
    nodes, edges = 16384, 262144
    gsrc = jnp.concatenate([ids(714, (edges,), nodes), jnp.arange(nodes, dtype=jnp.int32)])
    gdst = jnp.concatenate([ids(715, (edges,), nodes), jnp.arange(nodes, dtype=jnp.int32)])
    gx = normal(716, (nodes, 64))
    gy = ids(717, (nodes,), 16)
    gat = Gat()
    gp = gat.init(jax.random.PRNGKey(714), gx, gsrc, gdst)

    def gat_grad(p, x, src, dst, y):
        return jax.value_and_grad(lambda p: optax.softmax_cross_entropy_with_integer_labels(
            gat.apply(p, x, src, dst), y).mean())(p)
    out.append(("gat_segment_softmax", gat_grad, (gp, gx, gsrc, gdst, gy)))

    # An optax LAMB step (with warmup-cosine schedule) on a 3-layer causal LM.
    lm = TinyLm()
    ltok = ids(718, (8, 129), 4096)
    lp = lm.init(jax.random.PRNGKey(718), ltok[:, :-1])
    sched = optax.warmup_cosine_decay_schedule(0.0, 1e-3, 100, 10000)
    lopt = optax.lamb(sched, weight_decay=0.01)
    lst = lopt.init(lp)

    def lamb_step(p, st, toks):
        def loss(p):
            logits = lm.apply(p, toks[:, :-1])
            return optax.softmax_cross_entropy_with_integer_labels(logits, toks[:, 1:]).mean()
        l, g = jax.value_and_grad(loss)(p)
        u, st = lopt.update(g, st, p)
        return optax.apply_updates(p, u), st, l
    out.append(("lamb_transformer_step", lamb_step, (lp, lst, ltok)))

    # A 3-D CNN on 4 clips of 16 frames of 64x64 RGB: forward logits and class probabilities.
    vn = VideoNet()
    vx = normal(719, (4, 16, 64, 64, 3))
    vp = vn.init(jax.random.PRNGKey(719), vx)
    out.append(("video_conv3d_forward", lambda p, x: jax.nn.softmax(vn.apply(p, x)), (vp, vx)))

    # DP-SGD: per-example gradients of a small CNN on 64 MNIST-size images by
    # jax.vmap(jax.grad), each clipped to norm 1.0, summed, Gaussian noise added, averaged,
    # and an SGD update.
    class Cnn(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.avg_pool(nn.relu(nn.Conv(16, (5, 5))(x)), (2, 2), (2, 2))
            x = nn.avg_pool(nn.relu(nn.Conv(32, (5, 5))(x)), (2, 2), (2, 2))
            return nn.Dense(10)(nn.relu(nn.Dense(128)(x.reshape(x.shape[0], -1))))
    dn = Cnn()
    dx = normal(720, (64, 28, 28, 1))
    dy = ids(721, (64,), 10)
    dp = dn.init(jax.random.PRNGKey(720), dx[:1])
    dkey = jax.random.PRNGKey(722)

    def dpsgd_step(p, x, y, key):
        def loss(p, x, y):
            logits = dn.apply(p, x[None])
            return optax.softmax_cross_entropy_with_integer_labels(logits, y[None]).mean()
        g = jax.vmap(jax.grad(loss), (None, 0, 0))(p, x, y)
        leaves = jax.tree_util.tree_leaves(g)
        norms = jnp.sqrt(sum((l.reshape(l.shape[0], -1) ** 2).sum(1) for l in leaves))
        scale = jnp.minimum(1.0, 1.0 / (norms + 1e-6))
        keys = jax.random.split(key, len(leaves))
        treedef = jax.tree_util.tree_structure(g)
        noisy = [(l * scale.reshape((-1,) + (1,) * (l.ndim - 1))).sum(0)
                 + 1.1 * jax.random.normal(k, l.shape[1:]) for l, k in zip(leaves, keys)]
        gmean = jax.tree_util.tree_unflatten(treedef, [n / x.shape[0] for n in noisy])
        return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, gmean), norms
    out.append(("dpsgd_per_example_clip", dpsgd_step, (dp, dx, dy, dkey)))
    return out


def main():
    write_programs_cli(__doc__, programs(), write_program)


if __name__ == "__main__":
    sys.exit(main())
