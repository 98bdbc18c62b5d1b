#!/usr/bin/env python3
"""Write a third batch of fresh programs as users write them (issue 30's held-out set), in
the form of `tools/user_programs.py`, for `tools/bench_vs_xla.py --dir`.

Run by hand (never by the test suite); needs jax, flax and optax from PyPI:

    python3 tools/user_programs_third.py /tmp/up3
    python3 tools/user_programs_third.py /tmp/up3 --only mixer_bf16_forward
    python3 tools/bench_vs_xla.py --dir /tmp/up3 --repeat 5

Each program becomes DIR/NAME/before_optimizations.hlo, inputs.npz and outputs.npz (what
XLA:CPU computed), written by `user_programs.write`. Sizes are chosen so that XLA:CPU takes
roughly 5-300 ms on a 2-core machine. None of these programs is tuned for hloc: they
measure.
"""

import os
import sys

import jax
import jax.numpy as jnp
import flax.linen as nn
import optax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from user_programs import ids, normal, write, write_programs_cli  # noqa: E402


class MixerBlock(nn.Module):
    """An MLP-Mixer block: a token-mixing MLP over the patches, a channel-mixing MLP."""
    tokens_mlp: int
    channels_mlp: int
    dtype: jnp.dtype = jnp.bfloat16

    @nn.compact
    def __call__(self, x):
        y = nn.LayerNorm(dtype=self.dtype, param_dtype=self.dtype)(x)
        y = jnp.swapaxes(y, 1, 2)
        y = nn.Dense(self.tokens_mlp, dtype=self.dtype, param_dtype=self.dtype)(y)
        y = nn.Dense(x.shape[1], dtype=self.dtype, param_dtype=self.dtype)(nn.gelu(y))
        x = x + jnp.swapaxes(y, 1, 2)
        y = nn.LayerNorm(dtype=self.dtype, param_dtype=self.dtype)(x)
        y = nn.Dense(self.channels_mlp, dtype=self.dtype, param_dtype=self.dtype)(y)
        return x + nn.Dense(x.shape[2], dtype=self.dtype, param_dtype=self.dtype)(nn.gelu(y))


class Mixer(nn.Module):
    """MLP-Mixer (patch 16, bf16 parameters and activations), mean-pooled classifier."""
    layers: int = 4
    d: int = 256

    @nn.compact
    def __call__(self, img):
        bf = jnp.bfloat16
        x = nn.Conv(self.d, (16, 16), strides=(16, 16), dtype=bf, param_dtype=bf)(img)
        x = x.reshape(x.shape[0], -1, self.d)
        for _ in range(self.layers):
            x = MixerBlock(128, 1024)(x)
        x = nn.LayerNorm(dtype=bf, param_dtype=bf)(x).mean(1)
        return nn.Dense(1000, dtype=bf, param_dtype=bf)(x)


class TinyLM(nn.Module):
    """A pre-norm transformer LM computing in bf16 (parameters kept in f32)."""
    vocab: int = 2048
    d: int = 256
    layers: int = 2
    heads: int = 4

    @nn.compact
    def __call__(self, tokens):
        bf = jnp.bfloat16
        x = nn.Embed(self.vocab, self.d, dtype=bf)(tokens)
        mask = nn.make_causal_mask(tokens)
        for _ in range(self.layers):
            h = nn.LayerNorm(dtype=bf)(x)
            x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads, dtype=bf)(h, h, mask=mask)
            h = nn.LayerNorm(dtype=bf)(x)
            h = nn.Dense(4 * self.d, dtype=bf)(h)
            x = x + nn.Dense(self.d, dtype=bf)(nn.gelu(h))
        x = nn.LayerNorm(dtype=bf)(x)
        return nn.Dense(self.vocab, dtype=bf)(x)


class Vae(nn.Module):
    """A convolutional VAE on 28x28 images: encoder to (mean, log variance) of a 32-d
    latent, decoder through two transposed convolutions."""
    latent: int = 32

    def setup(self):
        self.e1 = nn.Conv(32, (3, 3), strides=(2, 2))
        self.e2 = nn.Conv(64, (3, 3), strides=(2, 2))
        self.mu = nn.Dense(self.latent)
        self.logvar = nn.Dense(self.latent)
        self.d1 = nn.Dense(7 * 7 * 64)
        self.t1 = nn.ConvTranspose(64, (3, 3), strides=(2, 2))
        self.t2 = nn.ConvTranspose(32, (3, 3), strides=(2, 2))
        self.out = nn.Conv(1, (3, 3))

    def encode(self, x):
        h = nn.relu(self.e2(nn.relu(self.e1(x))))
        h = h.reshape(h.shape[0], -1)
        return self.mu(h), self.logvar(h)

    def decode(self, z):
        h = nn.relu(self.d1(z)).reshape(z.shape[0], 7, 7, 64)
        h = nn.relu(self.t2(nn.relu(self.t1(h))))
        return self.out(h)

    def __call__(self, x, key):
        mu, logvar = self.encode(x)
        k1, k2 = jax.random.split(key)
        z = mu + jnp.exp(0.5 * logvar) * jax.random.normal(k1, mu.shape)
        recon = nn.sigmoid(self.decode(z))
        # Prior samples, then Bernoulli pixels.
        prior = self.decode(jax.random.normal(k2, mu.shape))
        pixels = jax.random.bernoulli(k2, nn.sigmoid(prior))
        kl = -0.5 * jnp.sum(1 + logvar - mu ** 2 - jnp.exp(logvar), -1)
        return recon, pixels, kl.mean()


class AudioNet(nn.Module):
    """A 1-D convolutional audio classifier (a wav2vec-like feature encoder): strided
    convolutions over the waveform, GroupNorm on the first, GELU, mean-pooled head."""

    @nn.compact
    def __call__(self, wav):
        x = wav[..., None]
        x = nn.Conv(128, (10,), strides=(5,), use_bias=False)(x)
        x = nn.gelu(nn.GroupNorm(num_groups=128)(x))
        for kernel in (3, 3, 3, 2, 2):
            x = nn.gelu(nn.Conv(128, (kernel,), strides=(2,), use_bias=False)(x))
        x = nn.LayerNorm()(x)
        return nn.Dense(35)(x.mean(1))


class ResBlock(nn.Module):
    """A diffusion U-Net residual block: GroupNorm, SiLU, 3x3 conv, a time embedding
    added per channel, again, a 1x1 skip projection; then a strided downsample."""
    out: int

    @nn.compact
    def __call__(self, x, temb):
        h = nn.silu(nn.GroupNorm(num_groups=32)(x))
        h = nn.Conv(self.out, (3, 3))(h)
        h = h + nn.Dense(self.out)(nn.silu(temb))[:, None, None, :]
        h = nn.silu(nn.GroupNorm(num_groups=32)(h))
        h = nn.Conv(self.out, (3, 3))(h)
        skip = nn.Conv(self.out, (1, 1))(x)
        y = h + skip
        return nn.Conv(self.out, (3, 3), strides=(2, 2))(y)


def programs():
    """(name, function, args) of every program."""
    out = []

    mixer = Mixer()
    img = normal(100, (8, 224, 224, 3), jnp.bfloat16)
    mp = mixer.init(jax.random.PRNGKey(100), img)
    out.append(("mixer_bf16_forward", lambda p, x: mixer.apply(p, x), (mp, img)))

    lm = TinyLM()
    toks = ids(101, (8, 129), 2048)
    lp = lm.init(jax.random.PRNGKey(101), toks[:, :-1])
    opt = optax.adamw(3e-4, weight_decay=0.01)
    st = opt.init(lp)

    def lm_step(params, state, tokens):
        def loss(p):
            logits = lm.apply(p, tokens[:, :-1]).astype(jnp.float32)
            return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()
        l, g = jax.value_and_grad(loss)(params)
        upd, state = opt.update(g, state, params)
        return optax.apply_updates(params, upd), state, l
    out.append(("transformer_adamw_bf16_step", lm_step, (lp, st, toks)))

    vae = Vae()
    digits = jnp.asarray(normal(102, (256, 28, 28, 1)) > 0.5, jnp.float32)
    key = jnp.asarray(jax.random.key_data(jax.random.PRNGKey(102)))
    vp = vae.init(jax.random.PRNGKey(103), digits, jax.random.PRNGKey(0))

    def vae_sample(p, x, k):
        return vae.apply(p, x, jax.random.wrap_key_data(k))
    out.append(("vae_sampler", vae_sample, (vp, digits, key)))

    audio = AudioNet()
    wav = normal(104, (16, 16000), scale=0.1)
    ap_ = audio.init(jax.random.PRNGKey(104), wav)
    out.append(("conv1d_audio", lambda p, w: audio.apply(p, w), (ap_, wav)))

    # A GRU language model sampling 32 tokens under lax.scan: embedding, GRUCell, head,
    # top-k (k = 40) and a categorical draw per step.
    vocab, hid, batch, steps = 8192, 384, 16, 32
    cell = nn.GRUCell(hid)
    emb = normal(105, (vocab, 128), scale=0.1)
    cp = cell.init(jax.random.PRNGKey(105), jnp.zeros((batch, hid)), jnp.zeros((batch, 128)))
    head = normal(106, (hid, vocab), scale=hid ** -0.5)
    start = ids(107, (batch,), vocab)
    skey = jnp.asarray(jax.random.key_data(jax.random.PRNGKey(107)))

    def rnn_sample(cp, emb, head, tok, k):
        def step(carry, key):
            h, t = carry
            h, _ = cell.apply(cp, h, emb[t])
            logits = h @ head
            vals, idx = jax.lax.top_k(logits, 40)
            choice = jax.random.categorical(key, vals / 0.8)
            t = jnp.take_along_axis(idx, choice[:, None], 1)[:, 0]
            return (h, t), t
        keys = jax.random.split(jax.random.wrap_key_data(k), steps)
        (h, _), toks = jax.lax.scan(step, (jnp.zeros((batch, hid)), tok), keys)
        return toks.T, h
    out.append(("rnn_topk_sampler", rnn_sample, (cp, emb, head, start, skey)))

    block = ResBlock(128)
    ux = normal(108, (8, 64, 64, 128))
    temb = normal(109, (8, 512))
    bp = block.init(jax.random.PRNGKey(108), ux, temb)
    out.append(("groupnorm_unet_block", lambda p, x, t: block.apply(p, x, t), (bp, ux, temb)))
    return out


def main():
    write_programs_cli(__doc__, programs(), write)


if __name__ == "__main__":
    sys.exit(main())
