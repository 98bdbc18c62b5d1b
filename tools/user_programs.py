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
    return out


# Element types numpy's .npy format cannot name are stored as their bit patterns (as
# tools/gen_corpus.py stores them); hloc and tools/bench_vs_xla.py read them back by the
# parameter's type.
AS_BITS = {"bfloat16": np.uint16, "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8}


def storable(a):
    a = np.asarray(a)
    return a.view(AS_BITS[a.dtype.name]) if a.dtype.name in AS_BITS else a


def write(out_dir, name, f, args):
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--only", help="comma-separated program names")
    a = ap.parse_args()
    only = set(a.only.split(",")) if a.only else None
    for name, f, args in programs():
        if only and name not in only:
            continue
        write(a.out_dir, name, f, args)
        print(name, flush=True)


if __name__ == "__main__":
    sys.exit(main())
