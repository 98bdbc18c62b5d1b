#!/usr/bin/env python3
"""Write a sixth batch of fresh programs as users write them (issue 30's held-out set), in
the form of `tools/user_programs.py`, for `tools/bench_vs_xla.py --dir`.

Run by hand (never by the test suite); needs jax, flax and optax from PyPI:

    python3 tools/user_programs_sixth.py /tmp/up6
    python3 tools/user_programs_sixth.py /tmp/up6 --only kmeans_while
    python3 tools/bench_vs_xla.py --dir /tmp/up6 --repeat 3

Each program becomes DIR/NAME/before_optimizations.hlo, inputs.npz and outputs.npz (what
XLA:CPU computed), written by `user_programs.write_program`. The programs cover what the
first five batches did not: rotary attention with its gradient, a selective state-space
scan (lax.associative_scan), k-means in a while loop, a PPO actor-critic loss, label
smoothing over a large vocabulary, an embedding-bag recommender, a depthwise-separable
convnet train step, a WaveNet of dilated causal convolutions, a VAE train step and a
Gaussian-process marginal likelihood through a Cholesky factor. Sizes are chosen so that
XLA:CPU takes roughly 5-300 ms on a 2-core machine; nothing is tuned for hloc.
"""

import os
import sys

import jax
import jax.numpy as jnp
import flax.linen as nn
import optax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from user_programs import ids, normal, write_program, write_programs_cli  # noqa: E402


def rope(x, base=10000.0):
    """Rotary position embedding over the last axis of [batch, time, heads, head_dim]."""
    t, hd = x.shape[1], x.shape[-1]
    inv = 1.0 / base ** (jnp.arange(0, hd, 2, dtype=jnp.float32) / hd)
    ang = jnp.arange(t, dtype=jnp.float32)[:, None] * inv[None, :]
    cos, sin = jnp.cos(ang)[None, :, None, :], jnp.sin(ang)[None, :, None, :]
    x1, x2 = x[..., ::2], x[..., 1::2]
    return jnp.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).reshape(x.shape)


class RopeBlock(nn.Module):
    """A LLaMA-style block: RMSNorm, causal attention with rotary embeddings, SwiGLU MLP."""
    d: int = 256
    heads: int = 8

    @nn.compact
    def __call__(self, x):
        b, t, _ = x.shape
        hd = self.d // self.heads
        h = nn.RMSNorm()(x)
        q = nn.Dense(self.d, use_bias=False)(h).reshape(b, t, self.heads, hd)
        k = nn.Dense(self.d, use_bias=False)(h).reshape(b, t, self.heads, hd)
        v = nn.Dense(self.d, use_bias=False)(h).reshape(b, t, self.heads, hd)
        q, k = rope(q), rope(k)
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(hd)
        mask = jnp.tril(jnp.ones((t, t), bool))
        s = jnp.where(mask, s, jnp.finfo(s.dtype).min)
        a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v).reshape(b, t, self.d)
        x = x + nn.Dense(self.d, use_bias=False)(a)
        h = nn.RMSNorm()(x)
        g = nn.Dense(int(8 * self.d / 3), use_bias=False)(h)
        u = nn.Dense(int(8 * self.d / 3), use_bias=False)(h)
        return x + nn.Dense(self.d, use_bias=False)(nn.silu(g) * u)


class SelectiveSSM(nn.Module):
    """A Mamba-style selective state-space layer: input-dependent (dt, B, C), a diagonal
    state matrix, the recurrence h_t = exp(dt A) h_{t-1} + dt B x_t by associative scan,
    a causal depthwise conv before it and a gated output."""
    d: int = 128
    state: int = 16

    @nn.compact
    def __call__(self, x):
        xz = nn.Dense(2 * self.d)(x)
        u, z = jnp.split(xz, 2, -1)
        u = nn.Conv(self.d, (4,), padding=((3, 0),), feature_group_count=self.d)(u)
        u = nn.silu(u)
        dt = nn.softplus(nn.Dense(self.d)(u))
        bmat = nn.Dense(self.state)(u)
        cmat = nn.Dense(self.state)(u)
        a = -jnp.exp(self.param("a_log", lambda k, s: jnp.log(
            jnp.broadcast_to(jnp.arange(1, s[1] + 1, dtype=jnp.float32), s)),
            (self.d, self.state)))
        da = jnp.exp(dt[..., None] * a)                       # [b, t, d, n]
        dbu = (dt * u)[..., None] * bmat[:, :, None, :]       # [b, t, d, n]

        def combine(l, r):
            return l[0] * r[0], r[0] * l[1] + r[1]
        _, h = jax.lax.associative_scan(combine, (da, dbu), axis=1)
        y = jnp.einsum("btdn,btn->btd", h, cmat) + u * self.param(
            "dskip", nn.initializers.ones, (self.d,))
        return nn.Dense(x.shape[-1])(y * nn.silu(z))


class PolicyValue(nn.Module):
    """An actor-critic MLP: shared torso, categorical policy logits and a value head."""
    actions: int = 18

    @nn.compact
    def __call__(self, obs):
        h = nn.tanh(nn.Dense(512)(obs))
        h = nn.tanh(nn.Dense(512)(h))
        return nn.Dense(self.actions)(h), nn.Dense(1)(h)[..., 0]


class DepthwiseNet(nn.Module):
    """A MobileNet-style classifier: depthwise 3x3 (feature_group_count = channels) then
    pointwise 1x1 convolutions, BatchNorm-free (LayerNorm over channels), ReLU6."""

    @nn.compact
    def __call__(self, x):
        x = nn.Conv(32, (3, 3), strides=(2, 2))(x)
        for ch, stride in ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1)):
            c = x.shape[-1]
            x = nn.Conv(c, (3, 3), strides=(stride, stride), feature_group_count=c)(x)
            x = jax.nn.relu6(nn.LayerNorm()(x))
            x = jax.nn.relu6(nn.LayerNorm()(nn.Conv(ch, (1, 1))(x)))
        return nn.Dense(100)(x.mean((1, 2)))


class WaveNet(nn.Module):
    """Gated residual blocks of dilated causal 1-D convolutions (kernel 2, dilations
    1..128), skip connections summed, a 256-way mu-law output per sample."""
    ch: int = 64

    @nn.compact
    def __call__(self, x):
        h = nn.Conv(self.ch, (1,))(x)
        skip = 0.0
        for dil in (1, 2, 4, 8, 16, 32, 64, 128):
            f = nn.Conv(2 * self.ch, (2,), kernel_dilation=(dil,), padding=((dil, 0),))(h)
            a, g = jnp.split(f, 2, -1)
            z = jnp.tanh(a) * jax.nn.sigmoid(g)
            skip = skip + nn.Conv(self.ch, (1,))(z)
            if dil < 128:  # the last block's residual would feed nothing
                h = h + nn.Conv(self.ch, (1,))(z)
        s = nn.relu(nn.Conv(self.ch, (1,))(nn.relu(skip)))
        return nn.Conv(256, (1,))(s)


class ConvVae(nn.Module):
    """A convolutional VAE on 32x32x3 images: strided conv encoder, a 64-d latent sampled
    by reparameterization, a transposed-conv decoder; Bernoulli likelihood and KL."""
    latent: int = 64

    @nn.compact
    def __call__(self, x, eps):
        h = nn.relu(nn.Conv(32, (4, 4), strides=(2, 2))(x))
        h = nn.relu(nn.Conv(64, (4, 4), strides=(2, 2))(h))
        h = nn.relu(nn.Conv(128, (4, 4), strides=(2, 2))(h)).reshape(x.shape[0], -1)
        mu = nn.Dense(self.latent)(h)
        logvar = nn.Dense(self.latent)(h)
        z = mu + jnp.exp(0.5 * logvar) * eps
        d = nn.relu(nn.Dense(4 * 4 * 128)(z)).reshape(x.shape[0], 4, 4, 128)
        d = nn.relu(nn.ConvTranspose(64, (4, 4), strides=(2, 2))(d))
        d = nn.relu(nn.ConvTranspose(32, (4, 4), strides=(2, 2))(d))
        logits = nn.ConvTranspose(3, (4, 4), strides=(2, 2))(d)
        rec = optax.sigmoid_binary_cross_entropy(logits, x).sum((1, 2, 3))
        kl = -0.5 * (1 + logvar - mu ** 2 - jnp.exp(logvar)).sum(-1)
        return (rec + kl).mean()


def programs():
    """(name, function, args) of every program."""
    out = []

    # A rotary-embedding transformer block: loss and gradient w.r.t. its parameters.
    blk = RopeBlock()
    rx = normal(600, (8, 256, 256))
    rp = blk.init(jax.random.PRNGKey(600), rx)

    def rope_grad(p, x):
        return jax.value_and_grad(lambda p: (blk.apply(p, x) ** 2).mean())(p)
    out.append(("rope_block_grad", rope_grad, (rp, rx)))

    # A selective state-space layer forward with its associative scan over 512 steps.
    ssm = SelectiveSSM()
    sx = normal(601, (4, 512, 64))
    sp = ssm.init(jax.random.PRNGKey(601), sx)
    out.append(("mamba_selective_scan", lambda p, x: ssm.apply(p, x), (sp, sx)))

    # k-means (Lloyd) on 32768 points of 32 dims with 64 centroids: iterate until the
    # centroids stop moving or 30 iterations, inside lax.while_loop.
    pts = normal(602, (32768, 32))
    c0 = pts[:64]

    def kmeans(x, c):
        def assign(c):
            d = (x ** 2).sum(1)[:, None] - 2 * x @ c.T + (c ** 2).sum(1)[None, :]
            return jnp.argmin(d, 1)

        def body(s):
            c, _, it = s
            a = assign(c)
            cnt = jax.ops.segment_sum(jnp.ones(x.shape[0]), a, 64)
            tot = jax.ops.segment_sum(x, a, 64)
            nc = jnp.where(cnt[:, None] > 0, tot / jnp.maximum(cnt, 1)[:, None], c)
            return nc, jnp.abs(nc - c).max(), it + 1

        def cond(s):
            return (s[1] > 1e-4) & (s[2] < 30)
        c, shift, it = jax.lax.while_loop(cond, body, (c, jnp.inf, 0))
        return c, assign(c), it
    out.append(("kmeans_while", kmeans, (pts, c0)))

    # PPO clipped surrogate + value loss + entropy bonus, gradient and an Adam update.
    pv = PolicyValue()
    obs = normal(603, (4096, 128))
    pp = pv.init(jax.random.PRNGKey(603), obs)
    act = ids(604, (4096,), 18)
    old_lp = normal(605, (4096,), scale=0.3) - 2.9
    adv = normal(606, (4096,))
    ret = normal(607, (4096,))
    ppo_opt = optax.chain(optax.clip_by_global_norm(0.5), optax.adam(3e-4))
    ppo_st = ppo_opt.init(pp)

    def ppo_step(p, st, obs, act, old_lp, adv, ret):
        def loss(p):
            logits, v = pv.apply(p, obs)
            logp = jax.nn.log_softmax(logits)
            lp = jnp.take_along_axis(logp, act[:, None], -1)[:, 0]
            ratio = jnp.exp(lp - old_lp)
            a = (adv - adv.mean()) / (adv.std() + 1e-8)
            pg = -jnp.minimum(ratio * a, jnp.clip(ratio, 0.8, 1.2) * a).mean()
            vf = 0.5 * ((v - ret) ** 2).mean()
            ent = -(jnp.exp(logp) * logp).sum(-1).mean()
            return pg + 0.5 * vf - 0.01 * ent, (pg, vf, ent)
        (l, aux), g = jax.value_and_grad(loss, has_aux=True)(p)
        u, st = ppo_opt.update(g, st, p)
        return optax.apply_updates(p, u), st, l, aux
    out.append(("ppo_actor_critic_step", ppo_step, (pp, ppo_st, obs, act, old_lp, adv, ret)))

    # The output projection of a language model and softmax cross-entropy with label
    # smoothing 0.1 over a 32768-token vocabulary for 256 tokens, gradient w.r.t. hidden states and weights.
    hid = normal(608, (256, 512))
    wout = normal(609, (512, 32768), scale=512 ** -0.5)
    labels = ids(610, (256,), 32768)

    def smoothed_xent(h, w, y):
        def loss(h, w):
            logits = h @ w
            t = optax.smooth_labels(jax.nn.one_hot(y, 32768), 0.1)
            return optax.softmax_cross_entropy(logits, t).mean()
        return jax.value_and_grad(loss, argnums=(0, 1))(h, w)
    out.append(("label_smooth_xent_32k", smoothed_xent, (hid, wout, labels)))

    # A DLRM-style recommender: 8 embedding bags (tables of 20000 x 64, bags of variable
    # length summed by segment_sum), a bottom MLP on dense features, pairwise dot
    # interactions, a top MLP, binary cross-entropy; gradient w.r.t. everything and SGD.
    batch, tables, rows, dim, per_bag = 2048, 8, 20000, 64, 20
    rec = {
        "emb": normal(611, (tables, rows, dim), scale=0.05),
        "bot": [normal(612, (13, 256), scale=13 ** -0.5), normal(613, (256, dim), scale=1 / 16)],
        "top": [normal(614, (dim + 36, 256), scale=0.1), normal(615, (256, 1), scale=1 / 16)],
    }
    dense = normal(616, (batch, 13))
    idx = ids(617, (tables, batch * per_bag), rows)
    bag = jnp.sort(ids(618, (tables, batch * per_bag), batch), axis=1)
    click = ids(619, (batch,), 2).astype(jnp.float32)

    def dlrm_step(p, dense, idx, bag, click):
        def loss(p):
            x = jax.nn.relu(dense @ p["bot"][0]) @ p["bot"][1]
            embs = [jax.ops.segment_sum(p["emb"][t][idx[t]], bag[t], batch)
                    for t in range(tables)]
            f = jnp.stack([x] + embs, 1)                     # [batch, 9, dim]
            inter = jnp.einsum("bid,bjd->bij", f, f)
            iu, ju = jnp.triu_indices(tables + 1, 1)
            z = jnp.concatenate([x, inter[:, iu, ju]], 1)
            logit = (jax.nn.relu(z @ p["top"][0]) @ p["top"][1])[:, 0]
            return optax.sigmoid_binary_cross_entropy(logit, click).mean()
        l, g = jax.value_and_grad(loss)(p)
        return jax.tree_util.tree_map(lambda a, b: a - 0.05 * b, p, g), l
    out.append(("dlrm_embedding_bag_step", dlrm_step, (rec, dense, idx, bag, click)))

    # A depthwise-separable convnet train step with optax.adamw and mixed precision:
    # bf16 compute, f32 master parameters, global-norm clipping.
    dn = DepthwiseNet()
    dimg = normal(620, (16, 48, 48, 3))
    dlab = ids(621, (16,), 100)
    dp = dn.init(jax.random.PRNGKey(620), dimg)
    dopt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3, weight_decay=1e-4))
    dst = dopt.init(dp)

    def dw_step(p, st, x, y):
        def loss(p):
            pb = jax.tree_util.tree_map(lambda a: a.astype(jnp.bfloat16), p)
            logits = dn.apply(pb, x.astype(jnp.bfloat16)).astype(jnp.float32)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        l, g = jax.value_and_grad(loss)(p)
        u, st = dopt.update(g, st, p)
        return optax.apply_updates(p, u), st, l
    out.append(("depthwise_bf16_adamw_step", dw_step, (dp, dst, dimg, dlab)))

    # WaveNet forward over 4 clips of 8192 samples, with the mu-law sample loss.
    wn = WaveNet()
    wav = normal(622, (4, 8192, 1), scale=0.3)
    target = ids(623, (4, 8192), 256)
    wp = wn.init(jax.random.PRNGKey(622), wav)

    def wavenet_loss(p, x, y):
        logits = wn.apply(p, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1], y[:, 1:]).mean()
    out.append(("wavenet_dilated_loss", wavenet_loss, (wp, wav, target)))

    # A conv VAE train step: ELBO gradient and an Adam update.
    vae = ConvVae()
    vx = jax.nn.sigmoid(normal(624, (64, 32, 32, 3)))
    veps = normal(625, (64, 64))
    vp = vae.init(jax.random.PRNGKey(624), vx, veps)
    vopt = optax.adam(1e-3)
    vst = vopt.init(vp)

    def vae_step(p, st, x, eps):
        l, g = jax.value_and_grad(lambda p: vae.apply(p, x, eps))(p)
        u, st = vopt.update(g, st, p)
        return optax.apply_updates(p, u), st, l
    out.append(("vae_conv_train_step", vae_step, (vp, vst, vx, veps)))

    # Gaussian-process regression: RBF kernel hyperparameters fitted by the gradient of
    # the negative log marginal likelihood (Cholesky, triangular solves, log-determinant).
    gx = normal(626, (1024, 8))
    gy = jnp.sin(gx.sum(1)) + 0.1 * normal(627, (1024,))
    hyp = jnp.array([0.0, 0.0, -2.0], jnp.float32)

    def gp_nll_grad(h, x, y):
        def nll(h):
            ls, sf, sn = jnp.exp(h)
            d2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
            k = sf * jnp.exp(-0.5 * d2 / ls ** 2) + (sn + 1e-4) * jnp.eye(x.shape[0])
            c = jnp.linalg.cholesky(k)
            alpha = jax.scipy.linalg.cho_solve((c, True), y)
            return 0.5 * y @ alpha + jnp.log(jnp.diag(c)).sum()
        return jax.value_and_grad(nll)(h)
    out.append(("gp_cholesky_nll_grad", gp_nll_grad, (hyp, gx, gy)))
    return out


def main():
    write_programs_cli(__doc__, programs(), write_program)


if __name__ == "__main__":
    sys.exit(main())
