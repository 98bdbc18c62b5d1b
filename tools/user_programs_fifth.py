#!/usr/bin/env python3
"""Write a fifth batch of fresh programs as users write them (issue 30's held-out set), in
the form of `tools/user_programs.py`, for `tools/bench_vs_xla.py --dir`.

Run by hand (never by the test suite); needs jax, flax and optax from PyPI:

    python3 tools/user_programs_fifth.py /tmp/up5
    python3 tools/user_programs_fifth.py /tmp/up5 --only lstm_lm_scan128
    python3 tools/bench_vs_xla.py --dir /tmp/up5 --repeat 3

Each program becomes DIR/NAME/before_optimizations.hlo, inputs.npz and outputs.npz (what
XLA:CPU computed), written by `user_programs.write`. The categories are those where the
held-out set found cliffs (a KV-cache decode loop, GroupNorm, an LSTM scan, segment_sum
message passing, a nucleus sampler, an f64 integrator), written afresh: none shares its
code, sizes or structure with /tmp/up2..up4's programs. Sizes are chosen so that XLA:CPU
takes roughly 5-300 ms on a 2-core machine; nothing is tuned for hloc.
"""

import os
import sys

import jax
import jax.numpy as jnp
import flax.linen as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from user_programs import ids, normal, write_program, write_programs_cli  # noqa: E402

X64 = {"f64_pendulum_chain_rk4"}


class DecoderLayer(nn.Module):
    """One pre-norm GPT-2 style decoder layer reading and writing a KV cache at `pos`."""
    d: int
    heads: int

    @nn.compact
    def __call__(self, x, ck, cv, pos):
        b = x.shape[0]
        hd = self.d // self.heads
        h = nn.LayerNorm()(x)
        q, k, v = jnp.split(nn.Dense(3 * self.d)(h), 3, -1)
        q, k, v = (a.reshape(b, self.heads, hd) for a in (q, k, v))
        ck = jax.lax.dynamic_update_slice(ck, k[:, :, None, :], (0, 0, pos, 0))
        cv = jax.lax.dynamic_update_slice(cv, v[:, :, None, :], (0, 0, pos, 0))
        s = jnp.einsum("bhd,bhtd->bht", q, ck) / jnp.sqrt(hd).astype(x.dtype)
        s = jnp.where(jnp.arange(ck.shape[2])[None, None, :] <= pos, s, -1e9)
        a = jnp.einsum("bht,bhtd->bhd", jax.nn.softmax(s, -1), cv).reshape(b, self.d)
        x = x + nn.Dense(self.d)(a)
        x = x + nn.Dense(self.d)(nn.gelu(nn.Dense(4 * self.d)(nn.LayerNorm()(x))))
        return x, ck, cv


class Gpt2Decoder(nn.Module):
    """Token and position embeddings, layers over a cache, a tied output head."""
    vocab: int = 4096
    d: int = 256
    heads: int = 8
    layers: int = 3
    max_len: int = 128

    @nn.compact
    def __call__(self, tok, pos, cache_k, cache_v):
        wte = self.param("wte", nn.initializers.normal(0.02), (self.vocab, self.d))
        wpe = self.param("wpe", nn.initializers.normal(0.01), (self.max_len, self.d))
        x = wte[tok] + wpe[pos]
        ks, vs = [], []
        for i in range(self.layers):
            x, k, v = DecoderLayer(self.d, self.heads)(x, cache_k[i], cache_v[i], pos)
            ks.append(k)
            vs.append(v)
        return nn.LayerNorm()(x) @ wte.T, jnp.stack(ks), jnp.stack(vs)


class UnetDown(nn.Module):
    """A U-Net down block: two GroupNorm-SiLU-conv residual units with a time embedding,
    self-attention at the low resolution, a strided downsampling conv."""
    ch: int = 64

    @nn.compact
    def __call__(self, x, temb):
        h = nn.Conv(self.ch, (3, 3))(x)
        for _ in range(2):
            r = nn.Conv(self.ch, (3, 3))(nn.swish(nn.GroupNorm(num_groups=16)(h)))
            r = r + nn.Dense(self.ch)(nn.swish(temb))[:, None, None, :]
            r = nn.Conv(self.ch, (3, 3))(nn.swish(nn.GroupNorm(num_groups=16)(r)))
            h = h + r
        b, hh, ww, c = h.shape
        a = nn.GroupNorm(num_groups=16)(h).reshape(b, hh * ww, c)
        a = nn.SelfAttention(num_heads=4)(a).reshape(b, hh, ww, c)
        h = h + a
        return nn.Conv(2 * self.ch, (3, 3), strides=(2, 2))(h)


class LstmLM(nn.Module):
    """A two-layer LSTM language model with flax's nn.RNN (scans of 128 steps), dropout-free,
    a tied-free output head and the mean token cross-entropy."""
    vocab: int = 2048
    hidden: int = 192

    @nn.compact
    def __call__(self, toks):
        x = nn.Embed(self.vocab, 128)(toks[:, :-1])
        x = nn.RNN(nn.LSTMCell(self.hidden))(x)
        x = nn.RNN(nn.LSTMCell(self.hidden))(x)
        logits = nn.Dense(self.vocab)(x)
        lp = jax.nn.log_softmax(logits, -1)
        nll = -jnp.take_along_axis(lp, toks[:, 1:, None], -1)[..., 0]
        return nll.mean(), logits[:, -1]


def programs():
    """(name, function, args) of every program."""
    out = []

    # A GPT-2 style greedy decode of 48 tokens with a KV cache, under lax.fori_loop.
    dec = Gpt2Decoder()
    b, layers, heads, max_len, d = 8, 3, 8, 128, 256
    ck0 = jnp.zeros((layers, b, heads, max_len, d // heads))
    prompt = ids(500, (b,), 4096)
    gp = dec.init(jax.random.PRNGKey(500), prompt, 0, ck0, ck0)

    def greedy(p, tok):
        def body(i, c):
            tok, ck, cv, toks = c
            logits, ck, cv = dec.apply(p, tok, i, ck, cv)
            nxt = jnp.argmax(logits, -1).astype(jnp.int32)
            return nxt, ck, cv, toks.at[:, i].set(nxt)
        toks = jnp.zeros((b, 48), jnp.int32)
        return jax.lax.fori_loop(0, 48, body, (tok, ck0, ck0, toks))[3]
    out.append(("gpt2_greedy_decode_loop", greedy, (gp, prompt)))

    unet = UnetDown()
    ux = normal(501, (4, 32, 32, 32))
    ut = normal(502, (4, 128))
    up = unet.init(jax.random.PRNGKey(501), ux, ut)
    out.append(("unet_down_groupnorm_attn", lambda p, x, t: unet.apply(p, x, t), (up, ux, ut)))

    lm = LstmLM()
    toks = ids(503, (16, 129), 2048)
    lp = lm.init(jax.random.PRNGKey(503), toks)

    def lm_loss_grad(p, t):
        (l, last), g = jax.value_and_grad(lambda p: lm.apply(p, t), has_aux=True)(p)
        return l, last, g
    out.append(("lstm_lm_scan128", lm_loss_grad, (lp, toks)))

    # A 3-layer GraphSAGE-style network with edge features: gather sources, an edge MLP,
    # segment_sum / segment_max aggregation by destination, a graph-level readout.
    n_nodes, n_edges, f = 20000, 160000, 64
    gx = normal(504, (n_nodes, f))
    src = ids(505, (n_edges,), n_nodes)
    dst = ids(506, (n_edges,), n_nodes)
    ef = normal(507, (n_edges, 8))
    gparams = {
        "we": normal(508, (3, 8, f), scale=0.3),
        "wm": normal(509, (3, f, f), scale=f ** -0.5),
        "ws": normal(510, (3, 2 * f, f), scale=(2 * f) ** -0.5),
        "graph": ids(511, (n_nodes,), 32),
    }

    def sage(p, x, src, dst, ef):
        deg = jax.ops.segment_sum(jnp.ones_like(dst, jnp.float32), dst, n_nodes)
        for l in range(3):
            m = jax.nn.relu(x[src] @ p["wm"][l] + ef @ p["we"][l])
            mean = jax.ops.segment_sum(m, dst, n_nodes) / jnp.maximum(deg, 1.0)[:, None]
            mx = jax.ops.segment_max(m, dst, n_nodes)
            mx = jnp.where(jnp.isfinite(mx), mx, 0.0)
            x = jax.nn.gelu(jnp.concatenate([x + mean, mx], -1) @ p["ws"][l])
            x = x / (jnp.linalg.norm(x, axis=-1, keepdims=True) + 1e-6)
        return jax.ops.segment_sum(x, p["graph"], 32)
    out.append(("gnn_sage_segment_ops", sage, (gparams, gx, src, dst, ef)))

    # Nucleus (top-p) sampling with temperature and a repetition penalty over a 50257-token
    # vocabulary: sort, cumsum of the sorted probabilities, mask, renormalize, sample with
    # the Gumbel trick, per row of a batch of 32.
    vocab = 50257
    logits = normal(512, (32, vocab), scale=3.0)
    history = ids(513, (32, 64), vocab)
    key = jax.random.PRNGKey(514)

    def nucleus(logits, history, key):
        seen = jnp.zeros_like(logits, bool).at[jnp.arange(32)[:, None], history].set(True)
        logits = jnp.where(seen, jnp.where(logits > 0, logits / 1.3, logits * 1.3), logits)
        logits = logits / 0.8
        order = jnp.argsort(-logits, -1)
        sl = jnp.take_along_axis(logits, order, -1)
        probs = jax.nn.softmax(sl, -1)
        cum = jnp.cumsum(probs, -1)
        keep = (cum - probs) < 0.92
        masked = jnp.where(keep, sl, -jnp.inf)
        g = jax.random.gumbel(key, masked.shape)
        pick = jnp.argmax(masked + g, -1)
        token = jnp.take_along_axis(order, pick[:, None], -1)[:, 0]
        return token, keep.sum(-1), jax.nn.logsumexp(masked, -1)
    out.append(("top_p_nucleus_penalty", nucleus, (logits, history, key)))

    # A chain of 256 coupled pendulums (f64), RK4 over 400 steps under lax.scan, with the
    # energy recorded every step.
    n = 256
    theta0 = jnp.asarray(normal(515, (64, n)) * 0.3, jnp.float32)
    omega0 = jnp.zeros((64, n), jnp.float32)
    out.append(("f64_pendulum_chain_rk4", pendulums, (theta0, omega0)))
    return out


def pendulums(theta0, omega0):
    """RK4 of a chain of coupled pendulums in f64 (the inputs widened inside)."""
    th = theta0.astype(jnp.float64)
    om = omega0.astype(jnp.float64)
    g_l, k, dt = 9.81, 4.0, 1e-3

    def accel(th):
        left = jnp.concatenate([th[:, :1], th[:, :-1]], 1)
        right = jnp.concatenate([th[:, 1:], th[:, -1:]], 1)
        return -g_l * jnp.sin(th) + k * (jnp.sin(left - th) + jnp.sin(right - th))

    def step(c, _):
        th, om = c
        k1t, k1o = om, accel(th)
        k2t, k2o = om + 0.5 * dt * k1o, accel(th + 0.5 * dt * k1t)
        k3t, k3o = om + 0.5 * dt * k2o, accel(th + 0.5 * dt * k2t)
        k4t, k4o = om + dt * k3o, accel(th + dt * k3t)
        th = th + dt / 6 * (k1t + 2 * k2t + 2 * k3t + k4t)
        om = om + dt / 6 * (k1o + 2 * k2o + 2 * k3o + k4o)
        dth = jnp.diff(th, axis=1)
        energy = (0.5 * om ** 2 + g_l * (1 - jnp.cos(th))).sum(1) + k * (1 - jnp.cos(dth)).sum(1)
        return (th, om), energy
    (th, om), energy = jax.lax.scan(step, (th, om), None, length=400)
    return th, om, energy


def write_with_x64(out_dir, name, f, args):
    """`write_program` with 64-bit types on for the programs in `X64` only."""
    jax.config.update("jax_enable_x64", name in X64)
    try:
        write_program(out_dir, name, f, args)
    finally:
        jax.config.update("jax_enable_x64", False)


def main():
    write_programs_cli(__doc__, programs(), write_with_x64)


if __name__ == "__main__":
    sys.exit(main())
