#!/usr/bin/env python3
"""Write training steps lowered with `donate_argnums` (issue 32: donated parameters), as
JAX users write them, for `tools/memory_stats_compare.py --xla HLOC --corpus DIR` and
`hloc run DIR/NAME/before_optimizations.hlo --inputs ... --expect ...`.
Run by hand (never by the test suite); needs jax and optax from PyPI:
    python3 tools/donated_steps.py /tmp/donated_steps
    python3 tools/memory_stats_compare.py --xla target/release/hloc --corpus /tmp/donated_steps

Each program becomes DIR/NAME/before_optimizations.hlo (`jit(...).lower(...)`'s HLO, with
its `input_output_alias`), inputs.npz (in0, in1, ...: the arguments' leaves) and
outputs.npz (out0, ...: what XLA:CPU computed). The optimizer steps donate parameters and
optimizer state, as training loops do (`donate_argnums=(0, 1)`); `*_kept` is the same
step without donation, for the difference donation makes. JAX writes the moments of a
weight used as `x @ w` in `{0,1}` (the transposed gradient's layout) although their
parameters are `{1,0}`: the case of issue 32's aliased-output layouts.
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax


def write(out_dir, name, jf, args):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "before_optimizations.hlo"), "w") as fh:
        fh.write(jf.lower(*args).as_text(dialect="hlo"))
    leaves = jax.tree_util.tree_leaves(args)
    np.savez(os.path.join(d, "inputs.npz"), **{f"in{i}": np.asarray(x) for i, x in enumerate(leaves)})
    outs = jax.tree_util.tree_leaves(jf(*args))
    np.savez(os.path.join(d, "outputs.npz"), **{f"out{i}": np.asarray(o) for i, o in enumerate(outs)})


def mlp_loss(p, x, y):
    h = x
    for i, (w, b) in enumerate(p):
        h = h @ w + b
        if i < len(p) - 1:
            h = jax.nn.relu(h)
    return jnp.mean((h - y) ** 2)


def optimizer_step(opt):
    def step(p, s, x, y):
        g = jax.grad(mlp_loss)(p, x, y)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s
    return step


def sgd(w, b, x, y):
    def loss(w, b):
        return jnp.mean((jnp.tanh(x @ w + b) - y) ** 2)
    gw, gb = jax.grad(loss, argnums=(0, 1))(w, b)
    return w - 0.1 * gw, b - 0.1 * gb


def cnn_loss(p, x, y):
    dn = ("NHWC", "HWIO", "NHWC")
    h = jax.lax.conv_general_dilated(x, p["k1"], (1, 1), "SAME", dimension_numbers=dn)
    h = jax.nn.relu(h)
    h = jax.lax.conv_general_dilated(h, p["k2"], (1, 1), "SAME", dimension_numbers=dn)
    return jnp.mean((h.mean(axis=(1, 2)) @ p["w"] - y) ** 2)


def cnn_step(p, x, y):
    g = jax.grad(cnn_loss)(p, x, y)
    return jax.tree.map(lambda a, b: a - 0.01 * b, p, g)


def programs():
    k = jax.random.PRNGKey(0)
    keys = jax.random.split(k, 8)
    yield "sgd_step_donated", jax.jit(sgd, donate_argnums=(0, 1)), (
        jax.random.normal(keys[0], (8, 4)) * 0.5, jnp.zeros((4,)),
        jax.random.normal(keys[1], (16, 8)), jnp.zeros((16, 4)))
    p = [(jax.random.normal(keys[2 + i], (256, 256)) * 0.05, jnp.zeros((256,))) for i in range(3)]
    x = jax.random.normal(keys[5], (64, 256))
    y = jax.random.normal(keys[6], (64, 256)) * 0.1
    for opt_name, opt in (("adam", optax.adam(1e-3)), ("adamw", optax.adamw(1e-3, weight_decay=1e-2))):
        s = opt.init(p)
        step = optimizer_step(opt)
        yield f"mlp_{opt_name}_step_donated", jax.jit(step, donate_argnums=(0, 1)), (p, s, x, y)
        yield f"mlp_{opt_name}_step_kept", jax.jit(step), (p, s, x, y)
    pc = {"k1": jax.random.normal(keys[7], (3, 3, 8, 16)) * 0.1,
          "k2": jnp.ones((3, 3, 16, 16)) * 0.05, "w": jnp.ones((16, 10)) * 0.1}
    xc = jax.random.normal(keys[0], (8, 16, 16, 8))
    yc = jnp.zeros((8, 10))
    yield "cnn_sgd_step_donated", jax.jit(cnn_step, donate_argnums=(0,)), (pc, xc, yc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    a = ap.parse_args()
    for name, jf, args in programs():
        # The donated arguments are consumed by the call: give each call its own copies.
        fresh = jax.tree.map(jnp.array, args)
        write(a.out_dir, name, jf, fresh)
        print(name)


if __name__ == "__main__":
    main()
