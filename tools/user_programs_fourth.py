#!/usr/bin/env python3
"""Write a fourth batch of fresh programs as users write them (issue 30's held-out set), in
the form of `tools/user_programs.py`, for `tools/bench_vs_xla.py --dir`.

Run by hand (never by the test suite); needs jax, flax and optax from PyPI:

    python3 tools/user_programs_fourth.py /tmp/up4
    python3 tools/user_programs_fourth.py /tmp/up4 --only moe_top2_bf16
    python3 tools/bench_vs_xla.py --dir /tmp/up4 --repeat 5

Each program becomes DIR/NAME/before_optimizations.hlo, inputs.npz and outputs.npz (what
XLA:CPU computed), written by `user_programs.write`. Sizes are chosen so that XLA:CPU takes
roughly 5-300 ms on a 2-core machine. None of these programs is tuned for hloc (nor shares
a program with the earlier batches): they measure.
"""

import os
import sys

import jax
import jax.numpy as jnp
import flax.linen as nn
import optax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from user_programs import ids, normal, write, write_programs_cli  # noqa: E402


class Top2Moe(nn.Module):
    """A mixture-of-experts feed-forward layer in bf16 with top-2 routing and expert
    capacity (GShard style): a router in f32, dispatch and combine tensors, per-expert
    GELU MLPs as batched einsums."""
    experts: int = 8
    d_ff: int = 512
    capacity: int = 256

    @nn.compact
    def __call__(self, x):
        bf = jnp.bfloat16
        t, d = x.shape
        e, c = self.experts, self.capacity
        logits = nn.Dense(e, use_bias=False)(x.astype(jnp.float32))
        probs = jax.nn.softmax(logits, -1)
        gate, idx = jax.lax.top_k(probs, 2)
        gate = gate / gate.sum(-1, keepdims=True)
        mask = jax.nn.one_hot(idx, e, dtype=jnp.int32)                  # [t, 2, e]
        # Slot of each (token, choice) in its expert: first choices before second ones.
        flat = mask.transpose(1, 0, 2).reshape(2 * t, e)
        pos = (jnp.cumsum(flat, 0) - 1).reshape(2, t, e).transpose(1, 0, 2)
        keep = (pos < c) & (mask > 0)
        slot = jax.nn.one_hot(jnp.where(keep, pos, -1), c, dtype=bf)   # [t, 2, e, c]
        dispatch = slot.sum(1)
        combine = (slot * gate[:, :, None, None].astype(bf)).sum(1)
        w1 = self.param("w1", nn.initializers.lecun_normal(), (e, d, self.d_ff), bf)
        w2 = self.param("w2", nn.initializers.lecun_normal(), (e, self.d_ff, d), bf)
        xe = jnp.einsum("tec,td->ecd", dispatch, x)
        h = nn.gelu(jnp.einsum("ecd,edf->ecf", xe, w1))
        ye = jnp.einsum("ecf,efd->ecd", h, w2)
        return jnp.einsum("tec,ecd->td", combine, ye), probs.mean(0)


class Denoiser(nn.Module):
    """A small convolutional noise predictor: sinusoidal time embedding, two residual
    blocks with GroupNorm and SiLU."""
    ch: int = 32

    @nn.compact
    def __call__(self, x, t):
        half = 16
        freqs = jnp.exp(-jnp.log(10000.0) * jnp.arange(half) / half)
        temb = jnp.concatenate([jnp.sin(t * freqs), jnp.cos(t * freqs)])
        temb = nn.Dense(self.ch)(nn.silu(nn.Dense(self.ch)(temb)))
        h = nn.Conv(self.ch, (3, 3))(x)
        for _ in range(2):
            r = nn.Conv(self.ch, (3, 3))(nn.silu(nn.GroupNorm(num_groups=8)(h)))
            r = r + temb
            r = nn.Conv(self.ch, (3, 3))(nn.silu(nn.GroupNorm(num_groups=8)(r)))
            h = h + r
        return nn.Conv(x.shape[-1], (3, 3))(nn.silu(h))


class Vit(nn.Module):
    """A small ViT classifier: 4x4 patches, a class token, learned positions, pre-norm
    blocks."""
    d: int = 128
    layers: int = 3
    heads: int = 4
    classes: int = 10

    @nn.compact
    def __call__(self, img):
        x = nn.Conv(self.d, (4, 4), strides=(4, 4))(img)
        x = x.reshape(x.shape[0], -1, self.d)
        cls = self.param("cls", nn.initializers.zeros, (1, 1, self.d))
        x = jnp.concatenate([jnp.broadcast_to(cls, (x.shape[0], 1, self.d)), x], 1)
        x = x + self.param("pos", nn.initializers.normal(0.02), x.shape[1:])
        for _ in range(self.layers):
            h = nn.LayerNorm()(x)
            x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads)(h, h)
            h = nn.LayerNorm()(x)
            x = x + nn.Dense(self.d)(nn.gelu(nn.Dense(4 * self.d)(h)))
        return nn.Dense(self.classes)(nn.LayerNorm()(x[:, 0]))


class BnCnn(nn.Module):
    """A CNN with BatchNorm in train mode (batch statistics, running averages updated)."""

    @nn.compact
    def __call__(self, x, train: bool = True):
        for ch in (32, 64, 128):
            x = nn.Conv(ch, (3, 3), use_bias=False)(x)
            x = nn.BatchNorm(use_running_average=not train, momentum=0.9)(x)
            x = nn.relu(x)
            x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = x.mean((1, 2))
        return nn.Dense(10)(x)


def programs():
    """(name, function, args) of every program."""
    out = []

    moe = Top2Moe()
    tokens = normal(200, (1024, 256), jnp.bfloat16)
    mp = moe.init(jax.random.PRNGKey(200), tokens)
    out.append(("moe_top2_bf16", lambda p, x: moe.apply(p, x), (mp, tokens)))

    # DDIM sampling (eta = 0) over 8 steps of a 1000-step linear beta schedule, under
    # lax.fori_loop.
    den = Denoiser()
    noise = normal(201, (4, 32, 32, 3))
    dp = den.init(jax.random.PRNGKey(201), noise, jnp.zeros(()))
    betas = jnp.linspace(1e-4, 0.02, 1000)
    abar = jnp.cumprod(1.0 - betas)

    def ddim(p, x):
        ts = jnp.linspace(999, 0, 8).astype(jnp.int32)

        def step(i, x):
            t, tn = ts[i], jnp.where(i + 1 < 8, ts[jnp.minimum(i + 1, 7)], -1)
            a = abar[t]
            an = jnp.where(tn >= 0, abar[jnp.maximum(tn, 0)], 1.0)
            eps = den.apply(p, x, t.astype(jnp.float32))
            x0 = (x - jnp.sqrt(1 - a) * eps) / jnp.sqrt(a)
            return jnp.sqrt(an) * x0 + jnp.sqrt(1 - an) * eps
        return jax.lax.fori_loop(0, 8, step, x)
    out.append(("ddim_sampler", ddim, (dp, noise)))

    vit = Vit()
    imgs = normal(202, (16, 32, 32, 3))
    labels = ids(203, (16,), 10)
    vp = vit.init(jax.random.PRNGKey(202), imgs)
    vopt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3, weight_decay=0.05))
    vst = vopt.init(vp)

    def vit_step(params, state, x, y):
        def loss(p):
            return optax.softmax_cross_entropy_with_integer_labels(vit.apply(p, x), y).mean()
        l, g = jax.value_and_grad(loss)(params)
        upd, state = vopt.update(g, state, params)
        return optax.apply_updates(params, upd), state, l
    out.append(("vit_adamw_clip_step", vit_step, (vp, vst, imgs, labels)))

    cnn = BnCnn()
    cx = normal(204, (32, 32, 32, 3))
    cy = ids(205, (32,), 10)
    cv = cnn.init(jax.random.PRNGKey(204), cx)
    copt = optax.sgd(0.05, momentum=0.9)
    cst = copt.init(cv["params"])

    def bn_step(params, stats, state, x, y):
        def loss(p):
            logits, upd = cnn.apply({"params": p, "batch_stats": stats}, x,
                                    mutable=["batch_stats"])
            ce = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
            return ce, upd["batch_stats"]
        (l, stats), g = jax.value_and_grad(loss, has_aux=True)(params)
        upd, state = copt.update(g, state, params)
        return optax.apply_updates(params, upd), stats, state, l
    out.append(("cnn_batchnorm_train", bn_step, (cv["params"], cv["batch_stats"], cst, cx, cy)))

    # One beam-search decode step: a one-layer decoder over the beams' last tokens,
    # log-softmax over a 32000-token vocabulary, scores of every extension, the best
    # 2 x beam per batch row, parents and finished beams tracked.
    batch, beam, vocab, hid, length = 16, 8, 32000, 256, 24
    emb = normal(206, (vocab, hid), scale=0.05)
    w = normal(207, (hid, hid), scale=hid ** -0.5)
    head = normal(208, (hid, vocab), scale=hid ** -0.5)
    seqs = ids(209, (batch, beam, length), vocab)
    scores = normal(210, (batch, beam))
    step_no = jnp.asarray(12, jnp.int32)

    def beam_step(emb, w, head, seqs, scores, t):
        last = jax.lax.dynamic_index_in_dim(seqs, t - 1, 2, keepdims=False)
        h = jnp.tanh(emb[last] @ w)
        logp = jax.nn.log_softmax(h @ head, -1)                 # [b, beam, vocab]
        cand = (scores[:, :, None] + logp).reshape(batch, beam * vocab)
        top, flat = jax.lax.top_k(cand, 2 * beam)
        parent, token = flat // vocab, flat % vocab
        finished = token == 2                                    # an end-of-sequence id
        alive = jnp.where(finished, -1e9, top)
        best, pick = jax.lax.top_k(alive, beam)
        parent = jnp.take_along_axis(parent, pick, 1)
        token = jnp.take_along_axis(token, pick, 1)
        new = jnp.take_along_axis(seqs, parent[:, :, None], 1)
        new = jax.lax.dynamic_update_index_in_dim(new, token[:, :, None], t, 2)
        done = jnp.where(finished, top, -1e9).max(-1)
        return new, best, done
    out.append(("beam_search_step", beam_step, (emb, w, head, seqs, scores, step_no)))

    # CLIP-style contrastive loss and its gradient: two projection towers, normalized
    # embeddings, a learned temperature, symmetric cross-entropy over the batch.
    n, di, dt_, dp_ = 1024, 768, 512, 512
    img_f = normal(211, (n, di))
    txt_f = normal(212, (n, dt_))
    cparams = {
        "wi": normal(213, (di, dp_), scale=di ** -0.5),
        "wt": normal(214, (dt_, dp_), scale=dt_ ** -0.5),
        "logit_scale": jnp.asarray(2.659, jnp.float32),
    }

    def clip_loss_grad(p, a, b):
        def loss(p):
            ia = a @ p["wi"]
            tb = b @ p["wt"]
            ia = ia / jnp.linalg.norm(ia, axis=-1, keepdims=True)
            tb = tb / jnp.linalg.norm(tb, axis=-1, keepdims=True)
            logits = jnp.exp(p["logit_scale"]) * ia @ tb.T
            lbl = jnp.arange(n)
            li = optax.softmax_cross_entropy_with_integer_labels(logits, lbl).mean()
            lt = optax.softmax_cross_entropy_with_integer_labels(logits.T, lbl).mean()
            return (li + lt) / 2
        return jax.value_and_grad(loss)(p)
    out.append(("clip_contrastive_loss", clip_loss_grad, (cparams, img_f, txt_f)))
    return out


def main():
    write_programs_cli(__doc__, programs(), write)


if __name__ == "__main__":
    sys.exit(main())
