#!/usr/bin/env python3
"""hloc's SPMD partitioner against XLA's on a few sharded JAX MLP layers (issue 35).

Each program is jitted on 8 forced host devices (XLA_FLAGS=
--xla_force_host_platform_device_count=8); for program NAME this writes into
corpus/spmd_xla/
  NAME.before.hlo  the annotated module JAX hands XLA (what hloc partitions),
  NAME.after.hlo   XLA:CPU's per-device module after optimizations (XLA's partitioning),
  NAME.global.npz  the global inputs in<i> and XLA's global outputs out<i>,
then runs hloc (HLOC, default target/debug/hloc):
  hloc partition NAME.before.hlo --devices 8 --stats   hloc's collectives and bytes
  hloc partition NAME.after.hlo --stats                XLA's, counted the same way
  hloc run NAME.before.hlo --devices 8 --inputs NAME.global.npz --expect NAME.global.npz
and writes the table (kinds and bytes per device per run, and whether hloc's run matches
XLA's global outputs) to corpus/spmd_xla/collectives.md, printing it too.
Run: python3 tools/spmd_vs_xla.py [--no-generate] [--only NAME,NAME] [--time K]
With --mpi EXE (an hloc built with `--features mpi`): each program under
`mpirun -np 8 --oversubscribe EXE run ... --collectives mpi` against XLA's outputs and
against EXE's in-process run bit for bit (corpus/spmd_xla/mpi.md).
"""

import os

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
).strip()

import math  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "corpus" / "spmd_xla"
DEVICES = 8


def programs():
    """(name, function, shardings, shapes) of each program."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec as P

    auto = jax.sharding.AxisType.Auto
    mesh8 = jax.make_mesh((8,), ("d",), axis_types=(auto,))
    mesh2x4 = jax.make_mesh((2, 4), ("data", "model"), axis_types=(auto, auto))

    def mlp(x, w1, w2):
        h = jax.nn.relu(x @ w1)
        y = h @ w2
        return y, (y * y).mean()

    def s(mesh, *spec):
        return NamedSharding(mesh, P(*spec))

    shapes = [(32, 16), (16, 64), (64, 16)]
    return [
        # Batch split 8 ways, weights replicated: only the loss's mean is all-reduced.
        ("data_parallel_mlp", mlp, [s(mesh8, "d", None), s(mesh8), s(mesh8)], shapes),
        # Megatron: w1's columns and w2's rows split, one all-reduce of the output.
        (
            "tensor_parallel_mlp",
            mlp,
            [s(mesh8), s(mesh8, None, "d"), s(mesh8, "d", None)],
            shapes,
        ),
        # FSDP: batch and every weight's first dimension split; weights gathered to use.
        (
            "fsdp_mlp",
            mlp,
            [s(mesh8, "d", None), s(mesh8, "d", None), s(mesh8, "d", None)],
            shapes,
        ),
        # A 2x4 mesh: batch over data, the hidden dimension over model.
        (
            "mesh_2x4_mlp",
            mlp,
            [s(mesh2x4, "data", None), s(mesh2x4, None, "model"), s(mesh2x4, "model", None)],
            shapes,
        ),
        # A constraint after a replicated computation: backward propagation slices it.
        (
            "constrained_tanh",
            lambda x, w: jax.lax.with_sharding_constraint(
                jnp.tanh(x) @ w, s(mesh8, "d", None)
            ).sum(axis=1),
            [s(mesh8), s(mesh8)],
            [(32, 16), (16, 8)],
        ),
        # The split moves from rows to columns at a constraint: one all-to-all.
        (
            "moved_split",
            lambda x: jax.lax.with_sharding_constraint(jnp.tanh(x), s(mesh8, None, "d")) * 2.0,
            [s(mesh8, "d", None)],
            [(32, 16)],
        ),
    ]


def shard_map_programs():
    """(name, function, shardings, shapes, shardy) of the shard_map programs: manual regions
    whose bodies name their collectives (psum, all_gather, ppermute, psum_scatter,
    all_to_all, axis_index), in the Shardy form JAX writes by default and in the GSPMD form
    (SPMDFullToShardShape / SPMDShardToFullShape, shardy=False)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec as P

    auto = jax.sharding.AxisType.Auto
    mesh8 = jax.make_mesh((8,), ("d",), axis_types=(auto,))
    mesh2x4 = jax.make_mesh((2, 4), ("data", "model"), axis_types=(auto, auto))

    def s(mesh, *spec):
        return NamedSharding(mesh, P(*spec))

    def collectives(x):
        total = jax.lax.psum(x, "d")
        gathered = jax.lax.all_gather(x, "d", tiled=True)
        shifted = jax.lax.ppermute(x, "d", [(i, (i + 1) % 8) for i in range(8)])
        swapped = jax.lax.all_to_all(gathered, "d", 0, 0, tiled=True)
        scattered = jax.lax.psum_scatter(gathered, "d", scatter_dimension=0, tiled=True)
        return total + shifted, swapped, scattered

    def psum_mlp(x, w1, w2):
        h = jax.nn.relu(x @ w1)
        y = h @ w2
        return y, jax.lax.psum((y * y).sum(), "d") / (x.shape[0] * 8 * y.shape[1])

    def megatron(x, w1, w2):
        h = jax.nn.relu(x @ w1)
        y = jax.lax.psum(h @ w2, "model")
        mean = jax.lax.pmean(y.sum(axis=1), "data")
        return y, mean

    def ring(x, w):
        # Two steps of a ring: each device multiplies its block by the weights it holds,
        # then passes the weights on (collective matmul by hand).
        perm = [(i, (i + 1) % 8) for i in range(8)]
        acc = x @ w
        w = jax.lax.ppermute(w, "d", perm)
        acc = acc + jnp.tanh(x @ w)
        idx = jax.lax.axis_index("d").astype(jnp.float32)
        return acc * (1.0 + idx)

    def sandwich(x, w):
        # Auto-sharded ops around a manual region: the partitioner reshards into and out
        # of it.
        body = jax.shard_map(
            lambda a: jax.lax.psum_scatter(a, "d", scatter_dimension=1, tiled=True),
            mesh=mesh8,
            in_specs=P(None, None),
            out_specs=P(None, "d"),
        )
        return jnp.tanh(body(jnp.tanh(x) @ w)).sum(axis=0)

    def ring_loop(x, w):
        # The ring as a fori_loop: the body's collective-permute runs once per trip (a
        # while loop inside the manual region).
        perm = [(i, (i + 1) % 8) for i in range(8)]

        def step(i, carry):
            acc, w = carry
            return acc + jnp.tanh(x @ w), jax.lax.ppermute(w, "d", perm)

        zero = jax.lax.pcast(jnp.zeros((x.shape[0], w.shape[1]), jnp.float32), "d", to="varying")
        return jax.lax.fori_loop(0, 8, step, (zero, w))[0]

    def scan_shard_map(x, ws):
        # A scan over layers whose step is a shard_map: the while loop's body holds a
        # manual region and its psum (per-device ops inside a loop).
        def layer(a, w):
            y = jnp.tanh(a @ w * (1.0 / jnp.sqrt(w.shape[0])))
            return y - jax.lax.pmean(y.mean(axis=0, keepdims=True), "d")

        step = jax.shard_map(layer, mesh=mesh8, in_specs=(P("d"), P()), out_specs=P("d"))
        h, _ = jax.lax.scan(lambda h, w: (step(h, w), None), x, ws)
        return h

    def partial_megatron(x, w1, w2):
        # Manual on "model" only ("data" stays automatic): each model shard multiplies its
        # columns of w1 and rows of w2 and psums over "model"; the batch split over "data"
        # comes from x's sharding outside the region.
        def body(x, w1, w2):
            h = jax.nn.relu(x @ w1)
            return jax.lax.psum(h @ w2, "model")

        f = jax.shard_map(
            body,
            mesh=mesh2x4,
            in_specs=(P(), P(None, "model"), P("model", None)),
            out_specs=P(),
            axis_names={"model"},
        )
        return jnp.tanh(f(jnp.tanh(x), w1, w2))

    def partial_collectives(x):
        # Manual on "model": all_gather, ppermute, psum_scatter and axis_index over
        # "model" on a value whose rows "data" splits outside.
        def body(a):
            g = jax.lax.all_gather(a, "model", axis=1, tiled=True)
            n = jax.lax.ppermute(a, "model", [(i, (i + 1) % 4) for i in range(4)])
            r = jax.lax.psum_scatter(g, "model", scatter_dimension=1, tiled=True)
            k = jax.lax.axis_index("model").astype(jnp.float32)
            return g.sum(axis=1, keepdims=True) + 0.0 * k, n * (1.0 + k) + r

        f = jax.shard_map(
            body,
            mesh=mesh2x4,
            in_specs=P(None, "model"),
            out_specs=(P(None, "model"), P(None, "model")),
            axis_names={"model"},
        )
        a, b = f(x * 2.0)
        return a, jnp.tanh(b)

    def partial_axis_index(x):
        # axis_index over the manual "model" inside a partially manual body: JAX lowers it
        # as a region manual on every axis nested in the body (GSPMD: its exit goes to a
        # sharding with a manual subgroup), whose value meets the body's rows split over
        # "data".
        def body(a):
            k = jax.lax.axis_index("model").astype(jnp.float32)
            r = jnp.arange(a.shape[0], dtype=jnp.float32)[:, None]
            return a * (1.0 + k) + r * k

        f = jax.shard_map(
            body,
            mesh=mesh2x4,
            in_specs=P(None, "model"),
            out_specs=P(None, "model"),
            axis_names={"model"},
        )
        return jnp.tanh(f(jnp.tanh(x)))

    def nested(x):
        # A shard_map over "data" inside one over "model" (the inner one's boundaries
        # name the axis the outer one leaves automatic), with axis_index of both axes.
        def inner(b):
            j = jax.lax.axis_index("data").astype(jnp.float32)
            return jax.lax.psum(b, "data") + j

        def body(a):
            k = jax.lax.axis_index("model").astype(jnp.float32)
            c = jax.shard_map(
                inner, in_specs=P("data", None), out_specs=P("data", None),
                axis_names={"data"},
            )(a * (1.0 + k))
            return c * 0.5 + a

        f = jax.shard_map(
            body,
            mesh=mesh2x4,
            in_specs=P(None, "model"),
            out_specs=P(None, "model"),
            axis_names={"model"},
        )
        return jnp.tanh(f(jnp.tanh(x)))

    mesh2x2x2 = jax.make_mesh((2, 2, 2), ("a", "b", "c"), axis_types=(auto, auto, auto))

    def partial_in_partial(x):
        # A shard_map manual on "b" inside one manual on "a", "c" automatic in both: the
        # inner body runs per ("a", "b") coordinate, with axis_index of both axes.
        def inner(y):
            j = jax.lax.axis_index("b").astype(jnp.float32)
            return jax.lax.psum(y, "b") + j

        def body(a):
            k = jax.lax.axis_index("a").astype(jnp.float32)
            z = jax.shard_map(
                inner, in_specs=P("b", None), out_specs=P("b", None), axis_names={"b"}
            )(a * (1.0 + k))
            return jnp.tanh(z) + a

        f = jax.shard_map(
            body,
            mesh=mesh2x2x2,
            in_specs=P(None, "a"),
            out_specs=P(None, "a"),
            axis_names={"a"},
        )
        return jnp.tanh(f(jnp.tanh(x)))

    return [
        (
            "shard_map_collectives",
            jax.shard_map(collectives, mesh=mesh8, in_specs=P("d"),
                          out_specs=(P("d"), P("d"), P("d"))),
            [s(mesh8, "d", None)],
            [(16, 3)],
            True,
        ),
        (
            "shard_map_psum_mlp",
            jax.shard_map(psum_mlp, mesh=mesh8, in_specs=(P("d"), P(), P()),
                          out_specs=(P("d"), P())),
            [s(mesh8, "d", None), s(mesh8), s(mesh8)],
            [(32, 16), (16, 64), (64, 16)],
            True,
        ),
        (
            "shard_map_megatron_2x4",
            jax.shard_map(megatron, mesh=mesh2x4,
                          in_specs=(P("data"), P(None, "model"), P("model", None)),
                          out_specs=(P("data", None), P())),
            [s(mesh2x4, "data", None), s(mesh2x4, None, "model"), s(mesh2x4, "model", None)],
            [(32, 16), (16, 64), (64, 16)],
            True,
        ),
        (
            "shard_map_ring_gspmd",
            jax.shard_map(ring, mesh=mesh8, in_specs=(P("d"), P("d")), out_specs=P("d")),
            [s(mesh8, "d", None), s(mesh8, "d", None)],
            [(32, 8), (64, 8)],
            False,
        ),
        (
            "shard_map_sandwich",
            sandwich,
            [s(mesh8), s(mesh8)],
            [(16, 12), (12, 32)],
            True,
        ),
        (
            "shard_map_ring_loop",
            jax.shard_map(ring_loop, mesh=mesh8, in_specs=(P("d"), P("d")), out_specs=P("d")),
            [s(mesh8, "d", None), s(mesh8, "d", None)],
            [(32, 8), (64, 4)],
            True,
        ),
        (
            "scan_shard_map",
            scan_shard_map,
            [s(mesh8, "d", None), s(mesh8)],
            [(64, 16), (4, 16, 16)],
            True,
        ),
        # Partially manual shard_maps (manual on "model", automatic on "data"), in
        # Shardy's form and in GSPMD's (manual subgroups: last_tile_dims={manual, ...}).
        (
            "shard_map_partial_megatron",
            partial_megatron,
            [s(mesh2x4, "data", None), s(mesh2x4), s(mesh2x4)],
            [(16, 32), (32, 64), (64, 8)],
            True,
        ),
        (
            "shard_map_partial_gspmd",
            partial_megatron,
            [s(mesh2x4, "data", None), s(mesh2x4), s(mesh2x4)],
            [(16, 32), (32, 64), (64, 8)],
            False,
        ),
        (
            "shard_map_partial_collectives",
            partial_collectives,
            [s(mesh2x4, "data", None)],
            [(8, 16)],
            True,
        ),
        (
            "shard_map_partial_axis_index",
            partial_axis_index,
            [s(mesh2x4, "data", None)],
            [(8, 16)],
            False,
        ),
        (
            "shard_map_nested",
            nested,
            [s(mesh2x4, "data", None)],
            [(8, 16)],
            True,
        ),
        (
            "shard_map_nested_gspmd",
            nested,
            [s(mesh2x4, "data", None)],
            [(8, 16)],
            False,
        ),
        (
            "shard_map_partial_in_partial",
            partial_in_partial,
            [s(mesh2x2x2, None, ("a", "c"))],
            [(8, 16)],
            True,
        ),
        (
            "shard_map_partial_in_partial_gspmd",
            partial_in_partial,
            [s(mesh2x2x2, None, ("a", "c"))],
            [(8, 16)],
            False,
        ),
    ]


def windowed_programs():
    """(name, function, shardings, shapes) of the programs with ops beyond dots and
    elementwise ops (issue 35's second step): a CNN with its rows split (halos), the same
    CNN batch-split, a data-parallel train step with optax's global-norm clipping, and a
    scan over stacked layers (a while loop whose carry stays split)."""
    import jax
    import jax.numpy as jnp
    import optax
    from jax.sharding import NamedSharding, PartitionSpec as P

    auto = jax.sharding.AxisType.Auto
    mesh8 = jax.make_mesh((8,), ("d",), axis_types=(auto,))

    def s(*spec):
        return NamedSharding(mesh8, P(*spec))

    dn = ("NHWC", "HWIO", "NHWC")

    def cnn(x, k1, k2):
        y = jax.nn.relu(jax.lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn))
        y = jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        y = jax.lax.conv_general_dilated(y, k2, (1, 1), "SAME", dimension_numbers=dn)
        return jnp.tanh(y), (y * y).mean()

    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-2))

    def train_step(w1, b1, w2, x, y):
        params = {"w1": w1, "b1": b1, "w2": w2}

        def loss(p):
            h = jnp.tanh(x @ p["w1"] + p["b1"])
            return ((h @ p["w2"] - y) ** 2).mean()

        value, grads = jax.value_and_grad(loss)(params)
        updates, _ = opt.update(grads, opt.init(params), params)
        new = optax.apply_updates(params, updates)
        return new["w1"], new["b1"], new["w2"], value

    def scan_layers(x, ws, bs):
        def layer(h, wb):
            # Weights scaled as initializers scale them (1/sqrt(fan_in)): unscaled
            # normal weights saturate tanh and amplify rounding past the comparison's
            # tolerance within six layers, in any evaluation order.
            w, b = wb
            return jnp.tanh(h @ w * (1.0 / jnp.sqrt(w.shape[0])) + b), None

        h, _ = jax.lax.scan(layer, x, (ws, bs))
        return h, h.sum()

    return [
        (
            "cnn_rows_split",
            cnn,
            [s(None, "d", None, None), s(), s()],
            [(2, 64, 16, 3), (3, 3, 3, 8), (3, 3, 8, 8)],
        ),
        (
            "cnn_batch_split",
            cnn,
            [s("d", None, None, None), s(), s()],
            [(16, 16, 16, 3), (3, 3, 3, 8), (3, 3, 8, 8)],
        ),
        (
            "dp_train_step_clipped",
            train_step,
            [s(), s(), s(), s("d", None), s("d", None)],
            [(16, 64), (64,), (64, 8), (64, 16), (64, 8)],
        ),
        (
            "scan_layers",
            scan_layers,
            [s("d", None), s(), s()],
            [(64, 32), (6, 32, 32), (6, 32)],
        ),
    ]


def all_programs():
    """Every program as (name, function, shardings, shapes, shardy)."""
    plain = [(*p, True) for p in programs()]
    windowed = [(*p, True) for p in windowed_programs()]
    return plain + shard_map_programs() + windowed


def generate(only=None):
    import jax
    import numpy as np

    OUT.mkdir(parents=True, exist_ok=True)
    shared = np.random.default_rng(35)
    windowed = {p[0] for p in windowed_programs()}
    for name, f, shardings, shapes, shardy in all_programs():
        # The first programs draw from one generator in order (as they always have); the
        # windowed ones each from their own, so that `--only` regenerates one alone.
        rng = np.random.default_rng([35, sum(map(ord, name))]) if name in windowed else shared
        if only and name not in only:
            continue
        jax.config.update("jax_use_shardy_partitioner", shardy)
        args = [
            jax.device_put(rng.standard_normal(shape).astype(np.float32), sh)
            for shape, sh in zip(shapes, shardings)
        ]
        jf = jax.jit(f)
        lowered = jf.lower(*args)
        (OUT / f"{name}.before.hlo").write_text(lowered.as_text(dialect="hlo"))
        (OUT / f"{name}.after.hlo").write_text(lowered.compile().as_text())
        outs = jax.tree_util.tree_leaves(jf(*args))
        whole = {f"in{i}": np.asarray(v) for i, v in enumerate(args)}
        whole.update({f"out{i}": np.asarray(v) for i, v in enumerate(outs)})
        np.savez(OUT / f"{name}.global.npz", **whole)


def hloc(*args, exe=None):
    exe = exe or os.environ.get("HLOC", str(ROOT / "target" / "debug" / "hloc"))
    return subprocess.run([exe, *args], capture_output=True, text=True, cwd=ROOT)


def stats(text):
    """(bytes, {kind: (count, bytes)}) of `hloc partition --stats` output."""
    m = re.search(r"^collective_bytes: (\d+)$", text, re.M)
    kinds = {
        k: (int(c), int(b))
        for k, c, b in re.findall(r"^  (\S+): (\d+) run\(s\), (\d+) bytes$", text, re.M)
    }
    return (int(m.group(1)) if m else None), kinds


def kinds_text(kinds):
    return ", ".join(f"{c} {k}" for k, (c, _) in sorted(kinds.items())) or "none"


def option(flag):
    """The value after `flag` on the command line, or None."""
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else None


def xla_time_ms(name, repeat):
    """Median wall time (ms) of XLA:CPU's jitted program NAME on the 8 forced host devices,
    from the global inputs of NAME.global.npz placed by the program's shardings, after one
    warm-up run."""
    sys.path.insert(0, str(ROOT / "tools"))
    import xla_hlo

    for n, f, shardings, _, shardy in all_programs():
        if n != name:
            continue
        return xla_hlo.sharded_median_ms(f, shardings, shardy, OUT / f"{name}.global.npz", repeat)
    return None


def hloc_time_ms(name, repeat, exe=None):
    """hloc's `time: median X ms` for `run NAME.before.hlo --devices 8 --repeat K`."""
    npz = f"corpus/spmd_xla/{name}.global.npz"
    run = hloc(
        "run", f"corpus/spmd_xla/{name}.before.hlo", "--devices", str(DEVICES),
        "--inputs", npz, "--repeat", str(repeat), exe=exe,
    )
    m = re.search(r"^time: median ([0-9.]+) ms", run.stdout, re.M)
    return float(m.group(1)) if m else None


def mpirun(exe, *args):
    """`mpirun -np 8 EXE ARGS` on shared memory: as root (containers), with more ranks than
    cores (--oversubscribe: 8 ranks on this machine's cores), ended after 10 minutes."""
    env = dict(os.environ)
    env.update(
        OMPI_MCA_btl="self,vader",
        OMPI_MCA_pml="ob1",
        OMPI_MCA_btl_vader_single_copy_mechanism="none",
    )
    cmd = [
        "mpirun", "-np", str(DEVICES), "--allow-run-as-root", "--oversubscribe",
        "--timeout", "600", exe, *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)


def npz_bits(path):
    """{name: (dtype, shape, bytes)} of an npz: equal dicts are equal bits."""
    import numpy as np

    with np.load(path) as z:
        return {k: (str(z[k].dtype), z[k].shape, z[k].tobytes()) for k in z.files}


def time_line(stdout):
    m = re.search(r"^time: median ([0-9.]+) ms", stdout, re.M)
    return float(m.group(1)) if m else None


def mpi_table(names, exe, repeat, rounds):
    """Each program run by `exe` (built with `--features mpi`) in process and under
    `mpirun -np 8 ... --collectives mpi`, both against XLA's global outputs (--expect)
    and against each other bit for bit (--outputs); with --time K, the median of K runs
    of each, least of R rounds, alternating."""
    import tempfile

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="spmd_mpi_"))
    rows = []
    ratios = []
    for name in names:
        before = f"corpus/spmd_xla/{name}.before.hlo"
        npz = f"corpus/spmd_xla/{name}.global.npz"
        common = ["run", before, "--devices", str(DEVICES), "--inputs", npz, "--expect", npz]
        inproc_npz, mpi_npz = tmp / f"{name}.inprocess.npz", tmp / f"{name}.mpi.npz"
        inproc = hloc(*common, "--no-timing", "--outputs", str(inproc_npz), exe=exe)
        mpi = mpirun(exe, *common, "--no-timing", "--outputs", str(mpi_npz),
                     "--collectives", "mpi")

        def matched(run):
            expect = [line for line in run.stdout.splitlines() if line.startswith("expect:")]
            return run.returncode == 0 and bool(expect) and all(" ok " in x for x in expect)

        same = (
            inproc.returncode == 0 and mpi.returncode == 0
            and inproc_npz.exists() and mpi_npz.exists()
            and npz_bits(inproc_npz) == npz_bits(mpi_npz)
        )
        same_stdout = mpi.stdout == inproc.stdout
        note = ""
        if mpi.returncode != 0:
            note = (mpi.stderr.strip().splitlines() or ["?"])[-1][:120]
        timing = ""
        if repeat:
            its, mts = [], []
            for _ in range(rounds):
                its.append(time_line(hloc(*common[:-2], "--repeat", str(repeat), exe=exe).stdout))
                mts.append(time_line(mpirun(exe, *common[:-2], "--repeat", str(repeat),
                                            "--collectives", "mpi").stdout))
            least = lambda ts: min((t for t in ts if t is not None), default=None)  # noqa: E731
            it, mt = least(its), least(mts)
            if it and mt:
                ratios.append(mt / it)
            fmt = lambda t: f"{t:.2f}" if t is not None else "-"  # noqa: E731
            timing = f" {fmt(it)} | {fmt(mt)} |"
        rows.append(
            f"| {name} | {'yes' if matched(inproc) else 'NO'} | {'yes' if matched(mpi) else 'NO'} "
            f"| {'yes' if same else 'NO'} | {'yes' if same_stdout else 'NO'} |{timing} {note} |"
        )
    lines = [
        f"# MPI against in-process, {DEVICES} ranks (tools/spmd_vs_xla.py --mpi)",
        "",
        f"`mpirun -np {DEVICES} --oversubscribe hloc run NAME.before.hlo --devices {DEVICES}"
        " --collectives mpi` (one rank per device, shared memory) against the same binary's"
        " in-process run.",
        "",
        "| program | in-process matches XLA | MPI matches XLA | outputs equal in bits "
        "| stdout equal |" + (" in-process ms | MPI ms |" if repeat else "") + " note |",
        "|---|---|---|---|---|" + ("---|---|" if repeat else "") + "---|",
        *rows,
        "",
    ]
    if ratios:
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        lines.append(
            f"geomean MPI/in-process time: {geo:.3f} ({len(ratios)} programs, median of"
            f" {repeat} runs each, least of {rounds} alternating rounds)"
        )
        lines.append("")
    return "\n".join(lines)


def main():
    """Options: --no-generate (use the stored modules), --only a,b (generate and report
    only these programs), --time K (also time hloc and XLA, median of K runs each),
    --rounds R (time each R times, interleaved, keeping the smallest median: the machine
    is shared), --before PATH (also time that hloc binary in the same rounds), --mpi PATH
    (instead: that hloc, built with `--features mpi`, under `mpirun -np 8` against its
    in-process run; writes corpus/spmd_xla/mpi.md)."""
    only = option("--only")
    only = set(only.split(",")) if only else None
    if "--no-generate" not in sys.argv:
        generate(only)
    repeat = int(option("--time") or 0)
    rounds = int(option("--rounds") or 1)
    before_exe = option("--before")
    names = [p[0] for p in all_programs() if not only or p[0] in only]
    mpi_exe = option("--mpi")
    if mpi_exe:
        table = mpi_table(names, mpi_exe, repeat, rounds)
        (OUT / "mpi.md").write_text(table)
        print(table)
        return
    rows = []
    ratios = []
    times = []
    before_times = []
    for name in names:
        before = f"corpus/spmd_xla/{name}.before.hlo"
        after = f"corpus/spmd_xla/{name}.after.hlo"
        npz = f"corpus/spmd_xla/{name}.global.npz"
        ours = hloc("partition", before, "--devices", str(DEVICES), "--stats")
        xla = hloc("partition", after, "--stats")
        run = hloc(
            "run", before, "--devices", str(DEVICES), "--inputs", npz, "--expect", npz,
            "--no-timing",
        )
        ob, ok = stats(ours.stdout) if ours.returncode == 0 else (None, {})
        xb, xk = stats(xla.stdout) if xla.returncode == 0 else (None, {})
        expect = [line for line in run.stdout.splitlines() if line.startswith("expect:")]
        matched = run.returncode == 0 and expect and all(" ok " in line for line in expect)
        if ob is None:
            note = (ours.stderr.strip().splitlines() or ["?"])[-1]
        else:
            note = ""
        if ob is not None and xb:
            ratios.append(max(ob, 1) / max(xb, 1))
        timing = ""
        if repeat:
            hts, xts, bts = [], [], []
            for _ in range(rounds):
                if before_exe:
                    bts.append(hloc_time_ms(name, repeat, exe=before_exe))
                hts.append(hloc_time_ms(name, repeat))
                xts.append(xla_time_ms(name, repeat))
            least = lambda ts: min((t for t in ts if t is not None), default=None)  # noqa: E731
            ht, xt, bt = least(hts), least(xts), least(bts)
            if ht and xt:
                times.append(ht / xt)
            if ht and bt:
                before_times.append(ht / bt)
            fmt = lambda t: f"{t:.2f}" if t is not None else "-"  # noqa: E731
            timing = f" {fmt(ht)} | {fmt(xt)} |" + (f" {fmt(bt)} |" if before_exe else "")
        rows.append(
            f"| {name} | {kinds_text(ok)} | {ob if ob is not None else 'error'} | "
            f"{kinds_text(xk)} | {xb if xb is not None else 'error'} | "
            f"{'yes' if matched else 'NO'} |{timing} {note} |"
        )
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
    table = "\n".join(
        [
            f"# hloc's partitioner against XLA's, {DEVICES} devices (tools/spmd_vs_xla.py)",
            "",
            "Bytes per device per run: each collective counts the larger of its result and",
            "its operands (hloc partition --stats on both modules).",
            "",
            "| program | hloc collectives | hloc bytes | XLA collectives | XLA bytes "
            "| hloc run matches XLA |"
            + (" hloc ms | XLA ms |" if repeat else "")
            + (" before ms |" if repeat and before_exe else "")
            + " note |",
            "|---|---|---|---|---|---|"
            + ("---|---|" if repeat else "")
            + ("---|" if repeat and before_exe else "")
            + "---|",
            *rows,
            "",
            f"geomean hloc/XLA collective_bytes (max(bytes,1)): {geo:.3f}",
            *(
                [
                    "geomean hloc/XLA time: "
                    + f"{math.exp(sum(map(math.log, times)) / len(times)):.3f}"
                    + f" ({len(times)} programs, median of {repeat} runs each,"
                    + f" least of {rounds} interleaved rounds)"
                ]
                if times
                else []
            ),
            *(
                [
                    "geomean hloc/before time: "
                    + f"{math.exp(sum(map(math.log, before_times)) / len(before_times)):.3f}"
                ]
                if before_times
                else []
            ),
            "",
        ]
    )
    (OUT / "collectives.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
