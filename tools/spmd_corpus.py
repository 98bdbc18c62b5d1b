#!/usr/bin/env python3
"""Writes XLA's partitioned modules of a few small sharded JAX programs into corpus/spmd/.

Each program is jitted over 4 forced host devices (XLA_FLAGS=
--xla_force_host_platform_device_count=4) on a mesh; for program NAME this writes
  NAME.before.hlo  the unpartitioned module JAX hands XLA (with its shardings),
  NAME.hlo         XLA:CPU's module after optimizations (one program per device),
  NAME.npz         per-device inputs in<i>.dev<k> and XLA's per-device outputs
                   out<i>.dev<k> (k: the partition, the device's place in the mesh),
  NAME.global.npz  the global inputs in<i> and XLA's global outputs out<i>, what
                   `hloc run NAME.before.hlo --devices N` (hloc's partitioner) reads and
                   is checked against,
the forms `hloc run FILE --devices N` reads (issue 35). Run: python3 tools/spmd_corpus.py
"""

import os

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
).strip()

import pathlib  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent.parent / "corpus" / "spmd"
AUTO = jax.sharding.AxisType.Auto


def mesh2x2():
    return jax.make_mesh((2, 2), ("data", "model"), axis_types=(AUTO, AUTO))


def mesh4():
    return jax.make_mesh((4,), ("x",), axis_types=(AUTO,))


def tensor_parallel_matmul():
    """x[8,4] sharded (data, model) @ y[4,6] sharded (model, -): partial sums all-reduced."""
    mesh = mesh2x2()

    def f(x, y):
        z = jnp.tanh(x @ y)
        z = jax.lax.with_sharding_constraint(z, NamedSharding(mesh, P("data", None)))
        return z.sum(axis=1)

    shardings = [NamedSharding(mesh, P("data", "model")), NamedSharding(mesh, P("model", None))]
    shapes = [(8, 4), (4, 6)]
    return f, shardings, shapes


def data_parallel_layer():
    """A dense layer on a batch sharded 4 ways, replicated weights; the mean over the batch
    needs an all-reduce."""
    mesh = mesh4()

    def f(x, w, b):
        h = jax.nn.relu(x @ w + b)
        return h, h.mean()

    shardings = [
        NamedSharding(mesh, P("x", None)),
        NamedSharding(mesh, P()),
        NamedSharding(mesh, P()),
    ]
    shapes = [(8, 5), (5, 3), (3,)]
    return f, shardings, shapes


def shard_map_collectives():
    """shard_map with psum, all_gather, ppermute, all_to_all and psum_scatter."""
    mesh = mesh4()

    def body(x):
        s = jax.lax.psum(x, "x")
        g = jax.lax.all_gather(x, "x", tiled=True)
        r = jax.lax.ppermute(x, "x", [(i, (i + 1) % 4) for i in range(4)])
        a = jax.lax.all_to_all(g, "x", 0, 0, tiled=True)
        sc = jax.lax.psum_scatter(g, "x", scatter_dimension=0, tiled=True)
        return s + r, a, sc

    f = jax.shard_map(
        body,
        mesh=mesh,
        in_specs=P("x"),
        out_specs=(P("x"), P("x"), P("x")),
    )
    return f, [NamedSharding(mesh, P("x", None))], [(8, 3)]


PROGRAMS = [tensor_parallel_matmul, data_parallel_layer, shard_map_collectives]


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    devices = jax.devices()
    rng = np.random.default_rng(35)
    for program in PROGRAMS:
        name = program.__name__
        f, shardings, shapes = program()
        args = [
            jax.device_put(rng.standard_normal(s).astype(np.float32), sh)
            for s, sh in zip(shapes, shardings)
        ]
        jf = jax.jit(f)
        lowered = jf.lower(*args)
        compiled = lowered.compile()
        (OUT / f"{name}.before.hlo").write_text(lowered.as_text(dialect="hlo"))
        (OUT / f"{name}.hlo").write_text(compiled.as_text())
        outs = jax.tree_util.tree_leaves(jf(*args))
        arrays = {}
        for kind, values in (("in", args), ("out", outs)):
            for i, v in enumerate(values):
                for shard in v.addressable_shards:
                    k = devices.index(shard.device)
                    arrays[f"{kind}{i}.dev{k}"] = np.asarray(shard.data)
        np.savez(OUT / f"{name}.npz", **arrays)
        whole = {f"in{i}": np.asarray(v) for i, v in enumerate(args)}
        whole.update({f"out{i}": np.asarray(v) for i, v in enumerate(outs)})
        np.savez(OUT / f"{name}.global.npz", **whole)
        print(f"{name}: {len(args)} inputs, {len(outs)} outputs on {len(devices)} devices")


if __name__ == "__main__":
    main()
