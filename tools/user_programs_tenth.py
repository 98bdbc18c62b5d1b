#!/usr/bin/env python3
"""Write a tenth batch of fresh programs as users write them (issue 30's held-out set), in
the form of `tools/user_programs.py`, for `tools/bench_vs_xla.py --dir`.

Run by hand (never by the test suite); needs jax, flax and optax from PyPI:

    python3 tools/user_programs_tenth.py /tmp/up10
    python3 tools/user_programs_tenth.py /tmp/up10 --only nerf_volume_render_grad
    python3 tools/bench_vs_xla.py --dir /tmp/up10 --repeat 3

Each program becomes DIR/NAME/before_optimizations.hlo, inputs.npz and outputs.npz (what
XLA:CPU computed), written as `user_programs_eighth.write_program` does (unused arguments
kept). The programs cover what the first nine batches did not: a bidirectional LSTM over
time-major inputs (`nn.Bidirectional` of two `nn.RNN(time_major=True)`, the layout class of
issue 30's wrong answer) trained by Adam, NeRF volume rendering (positional encoding, an
MLP per sample, transmittance by an exclusive `cumprod`) with its gradient, REINFORCE on a
rollout of `jax.random.categorical` actions in `lax.scan` with reverse-scan returns, a
Shampoo-style step (Kronecker-factored preconditioners, inverse 4th roots through `eigh`,
norm grafting), expert-choice MoE routing (`lax.top_k` over tokens per expert, a gather,
per-expert einsums, a scatter-add back) with its gradient, a DiT with adaLN-Zero
conditioning trained on half the patches (MaskDiT: argsort of noise, token gather) by
AdamW, speculative decoding (a draft LM proposes tokens, the target scores them at once,
accept by p/q, resample from the residual) in `lax.while_loop`, batched least squares
(`vmap(jnp.linalg.lstsq)`, `solve`, `pinv`, `slogdet`), float16 BERT encoder inference,
a WGAN-GP critic step (the gradient penalty differentiated again: a double backward
through convolutions), MAML's meta-gradient through five inner SGD steps (grad of grad
under `vmap`), and a neural ODE solved by `jax.experimental.ode.odeint` (adaptive
Dormand-Prince in while loops) with its adjoint gradient. Sizes are chosen so that XLA:CPU
takes roughly 5-300 ms on a 2-core machine; nothing is tuned for hloc.
"""

import os
import sys

import numpy as np

import jax
import jax.numpy as jnp
import flax.linen as nn
import optax
from jax.experimental.ode import odeint

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from user_programs import ids, normal, write_programs_cli  # noqa: E402
from user_programs_eighth import write_program  # noqa: E402


class BiLstmClassifier(nn.Module):
    """A bidirectional LSTM over [time, batch, features] (time-major, as speech and
    sequence-tagging code often keeps it), mean-pooled over time, a linear head."""
    hidden: int = 128
    classes: int = 10

    @nn.compact
    def __call__(self, x):
        fwd = nn.RNN(nn.OptimizedLSTMCell(self.hidden), time_major=True)
        bwd = nn.RNN(nn.OptimizedLSTMCell(self.hidden), time_major=True, reverse=True,
                     keep_order=True)
        y = nn.Bidirectional(fwd, bwd, time_major=True)(x)            # [t, b, 2h]
        return nn.Dense(self.classes)(y.mean(0))


def posenc(x, bands):
    """NeRF's positional encoding: x and sin/cos of x at `bands` octaves."""
    freqs = 2.0 ** jnp.arange(bands) * jnp.pi
    xb = x[..., None, :] * freqs[:, None]
    return jnp.concatenate([x, jnp.sin(xb).reshape(*x.shape[:-1], -1),
                            jnp.cos(xb).reshape(*x.shape[:-1], -1)], -1)


class NerfMlp(nn.Module):
    """A small NeRF field: density from encoded positions, colour from the feature and the
    encoded view direction."""
    width: int = 64

    @nn.compact
    def __call__(self, pts, dirs):
        h = posenc(pts, 10)
        for _ in range(3):
            h = nn.relu(nn.Dense(self.width)(h))
        sigma = nn.relu(nn.Dense(1)(h))[..., 0]
        h = jnp.concatenate([nn.Dense(self.width)(h), posenc(dirs, 4)], -1)
        rgb = nn.sigmoid(nn.Dense(3)(nn.relu(nn.Dense(self.width // 2)(h))))
        return sigma, rgb


class Policy(nn.Module):
    actions: int = 16

    @nn.compact
    def __call__(self, obs):
        h = nn.tanh(nn.Dense(128)(obs))
        h = nn.tanh(nn.Dense(128)(h))
        return nn.Dense(self.actions)(h)


class Mlp3(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(256)(x))
        x = nn.relu(nn.Dense(256)(x))
        return nn.Dense(10)(x)


class ExpertChoiceMoe(nn.Module):
    """Expert-choice routing (Zhou et al. 2022): every expert takes its `capacity` best
    tokens by router score (top-k over tokens, not over experts), runs its FFN on them,
    and the gated outputs are scatter-added back to their tokens."""
    experts: int = 8
    d: int = 256
    ff: int = 512
    capacity_factor: int = 2

    @nn.compact
    def __call__(self, x):
        b, t, d = x.shape
        xs = x.reshape(b * t, d)
        n = b * t
        cap = n * self.capacity_factor // self.experts
        probs = jax.nn.softmax(nn.Dense(self.experts, use_bias=False)(xs), -1)   # [n, e]
        gates, idx = jax.lax.top_k(probs.T, cap)                                 # [e, cap]
        sel = xs[idx]                                                             # [e, cap, d]
        w1 = self.param("w1", nn.initializers.lecun_normal(), (self.experts, d, self.ff))
        w2 = self.param("w2", nn.initializers.lecun_normal(), (self.experts, self.ff, d))
        h = nn.gelu(jnp.einsum("ecd,edf->ecf", sel, w1))
        y = jnp.einsum("ecf,efd->ecd", h, w2) * gates[..., None]
        out = jnp.zeros_like(xs).at[idx.reshape(-1)].add(y.reshape(-1, d))
        return x + out.reshape(b, t, d)


class EcMoeLm(nn.Module):
    @nn.compact
    def __call__(self, x):
        for _ in range(2):
            h = nn.LayerNorm()(x)
            x = x + nn.SelfAttention(num_heads=4)(h)
            x = ExpertChoiceMoe()(nn.LayerNorm()(x))
        return x


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = jnp.exp(-np.log(10000.0) * jnp.arange(half) / half)
    a = t[:, None] * freqs[None]
    return jnp.concatenate([jnp.cos(a), jnp.sin(a)], -1)


class DitBlock(nn.Module):
    """A DiT block with adaLN-Zero: the condition regresses shift, scale and gate for
    both the attention and the MLP branch (the regression initialised to zero)."""
    d: int
    heads: int

    @nn.compact
    def __call__(self, x, c):
        mod = nn.Dense(6 * self.d, kernel_init=nn.initializers.normal(0.02))(nn.silu(c))
        s1, sc1, g1, s2, sc2, g2 = jnp.split(mod[:, None], 6, -1)
        h = nn.LayerNorm(use_scale=False, use_bias=False)(x) * (1 + sc1) + s1
        x = x + g1 * nn.SelfAttention(num_heads=self.heads)(h)
        h = nn.LayerNorm(use_scale=False, use_bias=False)(x) * (1 + sc2) + s2
        return x + g2 * nn.Dense(self.d)(nn.gelu(nn.Dense(4 * self.d)(h)))


class MaskedDit(nn.Module):
    """A DiT over 2x2 patches of latents, trained (MaskDiT-style) on a random half of the
    patches: the kept patches are chosen by argsort of uniform noise and gathered."""
    d: int = 192
    depth: int = 3
    heads: int = 4
    patch: int = 2

    @nn.compact
    def __call__(self, x, t, key):
        b, hh, ww, ch = x.shape
        p = self.patch
        n = (hh // p) * (ww // p)
        tok = x.reshape(b, hh // p, p, ww // p, p, ch).transpose(0, 1, 3, 2, 4, 5)
        tok = tok.reshape(b, n, p * p * ch)
        h = nn.Dense(self.d)(tok)
        h = h + self.param("pos", nn.initializers.normal(0.02), (1, n, self.d))
        keep = jnp.argsort(jax.random.uniform(key, (b, n)), -1)[:, : n // 2]
        h = jnp.take_along_axis(h, keep[..., None], 1)
        target = jnp.take_along_axis(tok, keep[..., None], 1)
        c = nn.Dense(self.d)(nn.silu(nn.Dense(self.d)(timestep_embedding(t, self.d))))
        for _ in range(self.depth):
            h = DitBlock(self.d, self.heads)(h, c)
        return nn.Dense(p * p * ch)(nn.LayerNorm()(h)), target


class TinyLm(nn.Module):
    """A causal transformer LM over a fixed-length token buffer (recomputed in full each
    call, as a first speculative-decoding implementation does)."""
    vocab: int
    d: int
    layers: int
    length: int

    @nn.compact
    def __call__(self, toks):
        x = nn.Embed(self.vocab, self.d)(toks)
        x = x + self.param("pos", nn.initializers.normal(0.02), (self.length, self.d))
        mask = nn.make_causal_mask(toks)
        for _ in range(self.layers):
            h = nn.LayerNorm()(x)
            x = x + nn.SelfAttention(num_heads=4)(h, mask=mask)
            h = nn.LayerNorm()(x)
            x = x + nn.Dense(self.d)(nn.gelu(nn.Dense(4 * self.d)(h)))
        return nn.Dense(self.vocab)(nn.LayerNorm()(x))


class BertLayer(nn.Module):
    d: int
    heads: int
    dtype: object

    @nn.compact
    def __call__(self, x, mask):
        dense = lambda n: nn.Dense(n, dtype=self.dtype, param_dtype=self.dtype)
        ln = lambda: nn.LayerNorm(dtype=self.dtype, param_dtype=self.dtype)
        a = nn.MultiHeadDotProductAttention(num_heads=self.heads, dtype=self.dtype,
                                            param_dtype=self.dtype)(x, x, mask=mask)
        x = ln()(x + a)
        return ln()(x + dense(self.d)(nn.gelu(dense(4 * self.d)(x))))


class F16Bert(nn.Module):
    """A BERT encoder held and run in float16 (parameters and activations), a pooler and a
    classification head, with a padding mask."""
    vocab: int = 8192
    d: int = 256
    heads: int = 4
    layers: int = 4
    length: int = 128

    @nn.compact
    def __call__(self, toks, lens):
        f16 = jnp.float16
        x = nn.Embed(self.vocab, self.d, dtype=f16, param_dtype=f16)(toks)
        x = x + self.param("pos", nn.initializers.normal(0.02), (self.length, self.d), f16)
        x = nn.LayerNorm(dtype=f16, param_dtype=f16)(x)
        valid = jnp.arange(self.length)[None] < lens[:, None]
        mask = nn.make_attention_mask(valid, valid)
        for _ in range(self.layers):
            x = BertLayer(self.d, self.heads, f16)(x, mask)
        pooled = jnp.tanh(nn.Dense(self.d, dtype=f16, param_dtype=f16)(x[:, 0]))
        return x, nn.Dense(4, dtype=f16, param_dtype=f16)(pooled)


class Critic(nn.Module):
    """A DCGAN-style WGAN critic without normalization (the gradient penalty forbids
    BatchNorm), LeakyReLU, a linear output."""

    @nn.compact
    def __call__(self, x):
        for ch in (64, 128, 256):
            x = nn.leaky_relu(nn.Conv(ch, (4, 4), (2, 2), padding="SAME")(x), 0.2)
        return nn.Dense(1)(x.reshape(x.shape[0], -1))[:, 0]


class OdeFunc(nn.Module):
    @nn.compact
    def __call__(self, y, t):
        h = jnp.concatenate([y, jnp.broadcast_to(t, y.shape[:-1] + (1,))], -1)
        h = nn.softplus(nn.Dense(128)(h))
        h = nn.softplus(nn.Dense(128)(h))
        return nn.Dense(y.shape[-1])(h)


def programs():
    out = []

    # A bidirectional LSTM classifier (hidden 128 each way) over [96, 32, 64] time-major
    # features: cross-entropy, Adam step; new parameters, optimizer state and the loss.
    bl = BiLstmClassifier()
    bx = normal(1000, (96, 32, 64))
    by = ids(1001, (32,), 10)
    bp = bl.init(jax.random.PRNGKey(1000), bx)
    bopt = optax.adam(1e-3)
    bst = bopt.init(bp)

    def bilstm_step(p, st, x, y):
        def loss(p):
            return optax.softmax_cross_entropy_with_integer_labels(bl.apply(p, x), y).mean()
        l, g = jax.value_and_grad(loss)(p)
        u, st = bopt.update(g, st, p)
        return optax.apply_updates(p, u), st, l
    out.append(("bilstm_time_major_adam", bilstm_step, (bp, bst, bx, by)))

    # NeRF volume rendering of 1024 rays with 32 stratified samples each (the jitter is an
    # argument): alpha compositing with an exclusive cumprod transmittance, an MSE against
    # target colours, its gradient; also the rendered depth.
    nerf = NerfMlp()
    r = np.random.RandomState(1002)
    origins = jnp.asarray(r.randn(1024, 3) * 0.1, jnp.float32)
    dirs = r.randn(1024, 3)
    dirs = jnp.asarray(dirs / np.linalg.norm(dirs, axis=-1, keepdims=True), jnp.float32)
    jitter = jnp.asarray(r.rand(1024, 32), jnp.float32)
    target = jnp.asarray(r.rand(1024, 3), jnp.float32)
    np_ = nerf.init(jax.random.PRNGKey(1002), jnp.zeros((1, 3)), jnp.zeros((1, 3)))

    def nerf_grad(p, o, d, jit, tgt):
        near, far, ns = 2.0, 6.0, 32
        edges = jnp.linspace(near, far, ns + 1)
        z = edges[:-1] + (edges[1:] - edges[:-1]) * jit                  # [rays, ns]
        pts = o[:, None] + d[:, None] * z[..., None]

        def loss(p):
            sigma, rgb = nerf.apply(p, pts, jnp.broadcast_to(d[:, None], pts.shape))
            delta = jnp.concatenate([z[:, 1:] - z[:, :-1], jnp.full_like(z[:, :1], 1e10)], -1)
            alpha = 1.0 - jnp.exp(-sigma * delta)
            trans = jnp.cumprod(jnp.concatenate(
                [jnp.ones_like(alpha[:, :1]), 1.0 - alpha + 1e-10], -1), -1)[:, :-1]
            w = alpha * trans
            color = (w[..., None] * rgb).sum(1)
            depth = (w * z).sum(1)
            return ((color - tgt) ** 2).mean(), depth
        (l, depth), g = jax.value_and_grad(loss, has_aux=True)(p)
        return l, g, depth
    out.append(("nerf_volume_render_grad", nerf_grad, (np_, origins, dirs, jitter, target)))

    # REINFORCE: 256 environments of a 8-d point-mass task for 100 steps in lax.scan,
    # actions drawn by jax.random.categorical from a policy MLP (key argument), discounted
    # returns by a reverse scan, a mean baseline, the policy gradient and an Adam step.
    pol = Policy()
    pp = pol.init(jax.random.PRNGKey(1003), jnp.zeros((1, 8)))
    moves = normal(1004, (16, 8), scale=0.5)
    goal = normal(1005, (8,))
    s0 = normal(1006, (256, 8))
    rkey = jax.random.key_data(jax.random.PRNGKey(1007))
    popt = optax.adam(3e-4)
    pst = popt.init(pp)

    def reinforce(p, st, s0, moves, goal, key):
        key = jax.random.wrap_key_data(key)

        def step(s, k):
            logits = pol.apply(p, s)
            a = jax.random.categorical(jax.random.fold_in(key, k), logits)
            s2 = 0.9 * s + 0.1 * moves[a] + 0.01 * jax.random.normal(
                jax.random.fold_in(key, k + 1000), s.shape)
            rew = -((s2 - goal) ** 2).sum(-1)
            return s2, (s, a, rew)
        _, (obs, acts, rews) = jax.lax.scan(step, s0, jnp.arange(100))

        def disc(g, r):
            g = r + 0.99 * g
            return g, g
        _, rets = jax.lax.scan(disc, jnp.zeros_like(rews[0]), rews, reverse=True)
        adv = rets - rets.mean()

        def loss(p):
            logp = jax.nn.log_softmax(pol.apply(p, obs))
            chosen = jnp.take_along_axis(logp, acts[..., None], -1)[..., 0]
            return -(chosen * adv).mean()
        l, g = jax.value_and_grad(loss)(p)
        u, st = popt.update(g, st, p)
        return optax.apply_updates(p, u), st, l, rews.sum(0).mean()
    out.append(("reinforce_categorical_scan", reinforce, (pp, pst, s0, moves, goal, rkey)))

    # A Shampoo-style step on a 256-256-256-10 MLP (batch 512): per weight matrix the
    # statistics L += G G^T and R += G^T G, the preconditioned update L^-1/4 G R^-1/4 by
    # eigh, grafted to the gradient's norm; biases by SGD.
    mlp = Mlp3()
    sx = normal(1008, (512, 256))
    sy = ids(1009, (512,), 10)
    sp = mlp.init(jax.random.PRNGKey(1008), sx)
    sstats = jax.tree_util.tree_map(
        lambda w: (1e-4 * jnp.eye(w.shape[0]), 1e-4 * jnp.eye(w.shape[1])) if w.ndim == 2
        else jnp.zeros(()), sp)

    def inv_root(m, p=4, eps=1e-6):
        w, v = jnp.linalg.eigh(m)
        return (v * (jnp.maximum(w, 0.0) + eps) ** (-1.0 / p)) @ v.T

    def shampoo(p, stats, x, y):
        def loss(p):
            return optax.softmax_cross_entropy_with_integer_labels(mlp.apply(p, x), y).mean()
        l, g = jax.value_and_grad(loss)(p)

        def upd(w, gw, s):
            if gw.ndim != 2:
                return w - 0.1 * gw, s
            lm, rm = s
            lm = 0.95 * lm + gw @ gw.T
            rm = 0.95 * rm + gw.T @ gw
            pg = inv_root(lm) @ gw @ inv_root(rm)
            pg = pg * (jnp.linalg.norm(gw) / (jnp.linalg.norm(pg) + 1e-12))
            return w - 0.1 * pg, (lm, rm)
        flat_w, tree = jax.tree_util.tree_flatten(p)
        flat_g = tree.flatten_up_to(g)
        flat_s = tree.flatten_up_to(stats)
        res = [upd(w, gw, s) for w, gw, s in zip(flat_w, flat_g, flat_s)]
        return (jax.tree_util.tree_unflatten(tree, [a for a, _ in res]),
                jax.tree_util.tree_unflatten(tree, [b for _, b in res]), l)
    out.append(("shampoo_eigh_precond_step", shampoo, (sp, sstats, sx, sy)))

    # A 2-layer transformer with expert-choice MoE FFNs (8 experts, capacity 2x) over
    # [4, 256, 256] tokens: an MSE against a target, the loss and its gradient.
    ec = EcMoeLm()
    ex = normal(1010, (4, 256, 256))
    ey = normal(1011, (4, 256, 256), scale=0.5)
    ep = ec.init(jax.random.PRNGKey(1010), ex)

    def ec_grad(p, x, y):
        return jax.value_and_grad(lambda p: ((ec.apply(p, x) - y) ** 2).mean())(p)
    out.append(("expert_choice_moe_grad", ec_grad, (ep, ex, ey)))

    # A masked DiT training step on [8, 32, 32, 4] latents (256 patches, half kept):
    # noised by a cosine schedule at given timesteps, the epsilon-prediction MSE on the
    # kept patches, AdamW. The noise and the mask key are arguments.
    dit = MaskedDit()
    lat = normal(1012, (8, 32, 32, 4))
    eps = normal(1013, (8, 32, 32, 4))
    tsteps = jnp.asarray(np.random.RandomState(1014).randint(0, 1000, 8), jnp.float32)
    dkey = jax.random.key_data(jax.random.PRNGKey(1015))
    dp = dit.init(jax.random.PRNGKey(1012), lat, tsteps, jax.random.PRNGKey(1015))
    dopt = optax.adamw(1e-4, weight_decay=0.01)
    dst = dopt.init(dp)

    def dit_step(p, st, x0, noise, t, key):
        key = jax.random.wrap_key_data(key)
        abar = jnp.cos((t / 1000 + 0.008) / 1.008 * jnp.pi / 2) ** 2
        xt = jnp.sqrt(abar)[:, None, None, None] * x0 + \
            jnp.sqrt(1 - abar)[:, None, None, None] * noise

        def loss(p):
            # The model's target is the noise: patchify it the same way.
            pred, _ = dit.apply(p, xt, t, key)
            _, tgt = dit.apply(p, noise, t, key)
            return ((pred - jax.lax.stop_gradient(tgt)) ** 2).mean()
        l, g = jax.value_and_grad(loss)(p)
        u, st = dopt.update(g, st, p)
        return optax.apply_updates(p, u), st, l
    out.append(("masked_dit_adaln_step", dit_step, (dp, dst, lat, eps, tsteps, dkey)))

    # Speculative decoding: a 1-layer draft LM (d 64) proposes 4 tokens at a time, a
    # 2-layer target (d 128) scores the buffer once, each proposal is accepted with
    # probability min(1, p/q), the first rejection resampled from max(0, p - q); 4
    # sequences of 64 tokens from an 8-token prompt, in lax.while_loop.
    vocab, length, k = 512, 64, 4
    draft = TinyLm(vocab, 64, 1, length)
    tgt_lm = TinyLm(vocab, 128, 2, length)
    prompt = jnp.zeros((4, length), jnp.int32).at[:, :8].set(ids(1016, (4, 8), vocab))
    qp = draft.init(jax.random.PRNGKey(1016), prompt)
    tp = tgt_lm.init(jax.random.PRNGKey(1017), prompt)
    skey = jax.random.key_data(jax.random.PRNGKey(1018))

    def speculative(qp, tp, buf, key):
        key = jax.random.wrap_key_data(key)
        b = buf.shape[0]
        pos_ids = jnp.arange(length)

        def at(logits, pos):
            return jnp.take_along_axis(logits, pos[:, None, None], 1)[:, 0]

        def cond(c):
            it, buf, pos = c
            return (pos.min() < length - k - 1) & (it < 64)

        def body(c):
            it, buf0, pos0 = c
            kit = jax.random.fold_in(key, it)
            # Rows already done keep their buffer; they are scored at a clamped position.
            active = pos0 < length - k - 1
            pos = jnp.minimum(pos0, length - k - 1)
            buf = buf0

            def propose(j, c):
                buf, qs = c
                q = jax.nn.softmax(at(draft.apply(qp, buf), pos + j - 1))
                tok = jax.random.categorical(jax.random.fold_in(kit, j), jnp.log(q + 1e-20))
                buf = jnp.where(pos_ids[None] == (pos + j)[:, None], tok[:, None], buf)
                return buf, qs.at[:, j].set(q)
            buf, qs = jax.lax.fori_loop(0, k, propose, (buf, jnp.zeros((b, k, vocab))))
            plog = tgt_lm.apply(tp, buf)
            ps = jax.vmap(lambda j: jax.nn.softmax(at(plog, pos + j - 1)), out_axes=1)(
                jnp.arange(k + 1))                                         # [b, k+1, v]
            toks = jnp.take_along_axis(buf, pos[:, None] + jnp.arange(k)[None], 1)
            pt = jnp.take_along_axis(ps[:, :k], toks[..., None], -1)[..., 0]
            qt = jnp.take_along_axis(qs, toks[..., None], -1)[..., 0]
            u = jax.random.uniform(jax.random.fold_in(kit, 99), (b, k))
            n_acc = jnp.cumprod(u < pt / qt, -1).sum(-1)                   # [b]
            p_n = jnp.take_along_axis(ps, n_acc[:, None, None], 1)[:, 0]
            q_n = jnp.take_along_axis(
                jnp.concatenate([qs, jnp.zeros((b, 1, vocab))], 1), n_acc[:, None, None], 1)[:, 0]
            resid = jnp.maximum(p_n - q_n, 0.0)
            resid = resid / jnp.maximum(resid.sum(-1, keepdims=True), 1e-20)
            fix = jax.random.categorical(jax.random.fold_in(kit, 98), jnp.log(resid + 1e-20))
            end = pos + n_acc
            buf = jnp.where(pos_ids[None] == end[:, None], fix[:, None], buf)
            buf = jnp.where(pos_ids[None] > end[:, None], 0, buf)
            return (it + 1, jnp.where(active[:, None], buf, buf0),
                    jnp.where(active, end + 1, pos0))
        it, buf, pos = jax.lax.while_loop(cond, body, (0, buf, jnp.full((b,), 8)))
        return buf, pos, it
    out.append(("speculative_decode_while", speculative, (qp, tp, prompt, skey)))

    # Batched least squares and friends: 64 Chebyshev fits by vmap(lstsq) over [512, 16]
    # designs, 16 [128, 128] solves, pinv of 16 [128, 32] matrices, slogdet of the normal
    # matrices; the residual norms and summaries.
    r = np.random.RandomState(1019)
    xs = jnp.asarray(r.rand(64, 512) * 2 - 1, jnp.float32)
    ys = jnp.asarray(np.sin(3 * np.asarray(xs)) + 0.05 * r.randn(64, 512), jnp.float32)
    am = jnp.asarray(r.randn(16, 128, 128) + 12 * np.eye(128), jnp.float32)
    bm = jnp.asarray(r.randn(16, 128, 8), jnp.float32)
    pm = jnp.asarray(r.randn(16, 128, 32), jnp.float32)

    def linalg(xs, ys, am, bm, pm):
        # A Chebyshev basis (T_k(x) = cos(k arccos x)): well conditioned, unlike powers.
        design = jnp.cos(jnp.arccos(xs)[..., None] * jnp.arange(16))      # [64, 512, 16]
        coef = jax.vmap(lambda a, y: jnp.linalg.lstsq(a, y)[0])(design, ys)
        fit_err = jnp.linalg.norm(jnp.einsum("bnk,bk->bn", design, coef) - ys, axis=-1)
        sol = jnp.linalg.solve(am, bm)
        solve_err = jnp.abs(am @ sol - bm).max((1, 2))
        pinv = jnp.linalg.pinv(pm)
        proj = jnp.abs(pm @ pinv @ pm - pm).max((1, 2))
        sign, logdet = jnp.linalg.slogdet(jnp.swapaxes(pm, 1, 2) @ pm)
        return coef, fit_err, solve_err, proj, sign * logdet
    out.append(("linalg_lstsq_solve_pinv", linalg, (xs, ys, am, bm, pm)))

    # float16 BERT inference: 4 layers, d 256, over [8, 128] tokens with per-sequence
    # lengths; the hidden states and the classifier logits (both f16).
    bert = F16Bert()
    btok = ids(1020, (8, 128), 8192)
    blen = jnp.asarray(np.random.RandomState(1021).randint(32, 129, 8), jnp.int32)
    bparams = bert.init(jax.random.PRNGKey(1020), btok, blen)
    out.append(("f16_bert_encoder_inference", lambda p, t, n: bert.apply(p, t, n),
                (bparams, btok, blen)))

    # A WGAN-GP critic step on [8, 32, 32, 3] real and generated images: the Wasserstein
    # loss plus 10 (|grad_x D(x_hat)| - 1)^2 at random interpolates (epsilon an argument),
    # differentiated with respect to the critic's parameters; Adam(1e-4, 0.5, 0.9).
    critic = Critic()
    wreal = normal(1022, (8, 32, 32, 3))
    wfake = normal(1023, (8, 32, 32, 3), scale=0.7)
    weps = jnp.asarray(np.random.RandomState(1024).rand(8, 1, 1, 1), jnp.float32)
    cp = critic.init(jax.random.PRNGKey(1022), wreal)
    copt = optax.adam(1e-4, b1=0.5, b2=0.9)
    cst = copt.init(cp)

    def wgan_gp(p, st, real, fake, e):
        def loss(p):
            xh = e * real + (1 - e) * fake
            gx = jax.grad(lambda x: critic.apply(p, x).sum())(xh)
            gp = ((jnp.sqrt((gx ** 2).sum((1, 2, 3)) + 1e-12) - 1) ** 2).mean()
            return critic.apply(p, fake).mean() - critic.apply(p, real).mean() + 10 * gp
        l, g = jax.value_and_grad(loss)(p)
        u, st = copt.update(g, st, p)
        return optax.apply_updates(p, u), st, l
    out.append(("wgan_gp_double_backward", wgan_gp, (cp, cst, wreal, wfake, weps)))

    # MAML on sinusoid regression: 64 tasks of 64 support and 64 query points, a 1-128-128-1
    # MLP, 5 inner SGD steps (lr 0.01) per task under vmap, the query loss's meta-gradient
    # (second order) and an Adam step.
    r = np.random.RandomState(1025)
    amp = r.uniform(0.1, 5.0, (64, 1))
    phase = r.uniform(0, np.pi, (64, 1))
    sx_ = r.uniform(-5, 5, (64, 64))
    qx_ = r.uniform(-5, 5, (64, 64))
    tasks = tuple(jnp.asarray(a, jnp.float32)[..., None] for a in (
        sx_, amp * np.sin(sx_ + phase), qx_, amp * np.sin(qx_ + phase)))

    def init_mlp(key, sizes=(1, 128, 128, 1)):
        ks = jax.random.split(key, len(sizes) - 1)
        return [(jax.random.normal(k, (a, b)) * np.sqrt(2.0 / a), jnp.zeros(b))
                for k, a, b in zip(ks, sizes[:-1], sizes[1:])]

    def mlp_fwd(ps, x):
        for w, b in ps[:-1]:
            x = jax.nn.relu(x @ w + b)
        w, b = ps[-1]
        return x @ w + b

    mp = init_mlp(jax.random.PRNGKey(1026))
    mopt = optax.adam(1e-3)
    mst = mopt.init(mp)

    def maml(p, st, sx, sy, qx, qy):
        def task_loss(p, sx, sy, qx, qy):
            inner = lambda p: ((mlp_fwd(p, sx) - sy) ** 2).mean()
            for _ in range(5):
                g = jax.grad(inner)(p)
                p = jax.tree_util.tree_map(lambda w, gw: w - 0.01 * gw, p, g)
            return ((mlp_fwd(p, qx) - qy) ** 2).mean()

        def meta_loss(p):
            return jax.vmap(task_loss, in_axes=(None, 0, 0, 0, 0))(p, sx, sy, qx, qy).mean()
        l, g = jax.value_and_grad(meta_loss)(p)
        u, st = mopt.update(g, st, p)
        return optax.apply_updates(p, u), st, l
    out.append(("maml_sinusoid_meta_grad", maml, (mp, mst) + tasks))

    # A neural ODE: [256, 32] states integrated by odeint (adaptive dopri5, rtol 1e-4) over
    # 8 output times through a softplus MLP; an MSE against targets, and the gradient by
    # odeint's adjoint (a second adaptive solve backwards).
    ode = OdeFunc()
    y0 = normal(1027, (256, 32))
    ytgt = normal(1028, (8, 256, 32), scale=0.5)
    op = ode.init(jax.random.PRNGKey(1027), y0, jnp.float32(0.0))
    ts = jnp.linspace(0.0, 1.0, 8)

    def node_grad(p, y0, ts, tgt):
        def loss(p):
            ys = odeint(lambda y, t, p: ode.apply(p, y, t), y0, ts, p, rtol=1e-4, atol=1e-4)
            return ((ys - tgt) ** 2).mean()
        return jax.value_and_grad(loss)(p)
    out.append(("neural_odeint_adjoint_grad", node_grad, (op, y0, ts, ytgt)))
    return out


def main():
    write_programs_cli(__doc__, programs(), write_program)


if __name__ == "__main__":
    sys.exit(main())
