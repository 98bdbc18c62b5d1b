#!/usr/bin/env python3
"""Issue 35's quality bar as a held-out check: fresh sharded JAX programs (none of them in
the corpus the tests read) on 4 and on 8 forced host devices, checked four ways.

Programs (each at sizes where XLA:CPU takes milliseconds): sequence-parallel attention,
an FSDP train step of a small transformer block, a data x model 2-D mesh MLP train step,
a convolution stack with its rows split (halos), a shard_map ring (ppermute) matmul with
a psum_scatter, and a pipeline-ish scan (shard_map stages passing microbatches along a
ring). For N in 4 and 8 this writes into OUT/nN/ (default /tmp/spmd_heldout):
  NAME.before.hlo  the annotated module JAX hands XLA (what hloc partitions),
  NAME.after.hlo   XLA:CPU's per-device module after optimizations,
  NAME.global.npz  the global inputs in<i> and XLA's global outputs out<i>,
  NAME.after.npz   the per-device inputs in<i>.dev<k> and outputs out<i>.dev<k>,
  NAME.xla_ms      XLA's median time (ms) of the jitted program on the N devices,
then checks with hloc (HLOC, default target/release/hloc):
  (1) hloc run NAME.after.hlo --devices N --inputs/--expect NAME.after.npz
  (2) hloc run NAME.before.hlo --devices N --inputs/--expect NAME.global.npz, and
      collective_bytes of `hloc partition --stats` on both modules
  (3) hloc run NAME.before.hlo --devices N --repeat K against XLA's time
  (4) with --mpi EXE (an hloc built with `--features mpi`): one program under
      `mpirun -np 4 EXE run ... --collectives mpi` against XLA's outputs.
Run: python3 tools/spmd_heldout.py [--devices 4,8] [--no-generate] [--no-check]
     [--time K [--before EXE] [--rounds R]] [--only a,b] [--mpi EXE] [--out DIR]
With --time K, hloc (and the --before binary) and XLA are each timed (median of K runs)
one after another per program in the same run.
Generation runs in a child process per device count (the forced device count is fixed
when JAX starts).
"""

import math
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def option(flag, default=None):
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else default


def programs(n):
    """(name, function, shardings, shapes, shardy) of each program on n devices."""
    import jax
    import jax.numpy as jnp
    import optax
    from jax.sharding import NamedSharding, PartitionSpec as P

    auto = jax.sharding.AxisType.Auto
    mesh1 = jax.make_mesh((n,), ("d",), axis_types=(auto,))
    mesh2 = jax.make_mesh((2, n // 2), ("data", "model"), axis_types=(auto, auto))

    def s(mesh, *spec):
        return NamedSharding(mesh, P(*spec))

    def attention(x, wq, wk, wv, wo):
        # Sequence-parallel self-attention: the sequence split over d; keys and values
        # are needed whole by every query block.
        b, t, dm = x.shape
        h = 8
        q = (x @ wq).reshape(b, t, h, dm // h)
        k = (x @ wk).reshape(b, t, h, dm // h)
        v = (x @ wv).reshape(b, t, h, dm // h)
        a = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(dm // h)
        a = jax.nn.softmax(a, axis=-1)
        o = jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(b, t, dm)
        return x + o @ wo

    def block(p, x):
        b, t, dm = x.shape
        h = 4
        mu = x.mean(-1, keepdims=True)
        xn = (x - mu) * jax.lax.rsqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
        q = (xn @ p["wq"]).reshape(b, t, h, dm // h)
        k = (xn @ p["wk"]).reshape(b, t, h, dm // h)
        v = (xn @ p["wv"]).reshape(b, t, h, dm // h)
        a = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(dm // h), -1)
        x = x + jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(b, t, dm) @ p["wo"]
        return x + jax.nn.gelu(x @ p["w1"]) @ p["w2"]

    def fsdp_step(wq, wk, wv, wo, w1, w2, x, y):
        params = dict(wq=wq, wk=wk, wv=wv, wo=wo, w1=w1, w2=w2)
        loss, g = jax.value_and_grad(lambda p: ((block(p, x) - y) ** 2).mean())(params)
        new = jax.tree_util.tree_map(lambda w, d: w - 0.05 * d, params, g)
        return (*[new[k] for k in ("wq", "wk", "wv", "wo", "w1", "w2")], loss)

    opt = optax.adam(1e-3)

    def mlp2d_step(w1, b1, w2, b2, x, y):
        params = dict(w1=w1, b1=b1, w2=w2, b2=b2)

        def loss(p):
            h = jax.nn.relu(x @ p["w1"] + p["b1"])
            return ((h @ p["w2"] + p["b2"] - y) ** 2).mean()

        value, grads = jax.value_and_grad(loss)(params)
        updates, _ = opt.update(grads, opt.init(params), params)
        new = optax.apply_updates(params, updates)
        return new["w1"], new["b1"], new["w2"], new["b2"], value

    dn = ("NHWC", "HWIO", "NHWC")

    def conv_halo(x, k1, k2, k3):
        y = jax.nn.relu(jax.lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn))
        y = jax.nn.relu(jax.lax.conv_general_dilated(y, k2, (1, 1), "SAME", dimension_numbers=dn))
        y = jax.lax.conv_general_dilated(y, k3, (1, 1), ((2, 2), (2, 2)), rhs_dilation=(2, 2),
                                         dimension_numbers=dn)
        return jnp.tanh(y), (y * y).mean()

    ring_perm = [(i, (i + 1) % n) for i in range(n)]

    def ring_body(x, w):
        # A collective matmul by hand: n steps, each multiplying by the weight block held
        # and passing it on; the partial products summed and scattered back by rows.
        def step(i, carry):
            acc, w = carry
            return acc + jnp.tanh(x @ w), jax.lax.ppermute(w, "d", ring_perm)

        zero = jax.lax.pcast(jnp.zeros((x.shape[0], w.shape[1]), jnp.float32), "d", to="varying")
        acc = jax.lax.fori_loop(0, n, step, (zero, w))[0]
        full = jax.lax.all_gather(acc, "d", tiled=True)
        k = 1.0 + jax.lax.axis_index("d").astype(jnp.float32)
        return jax.lax.psum_scatter(jnp.tanh(full) * k, "d", scatter_dimension=0, tiled=True)

    ring = jax.shard_map(ring_body, mesh=mesh1, in_specs=(P("d"), P("d")), out_specs=P("d"))

    def pipe_body(xs, w):
        # Each device one stage (its weight block); microbatches enter at stage 0 and move
        # one stage per tick along the ring; the last stage's results are collected.
        stage = jax.lax.axis_index("d")
        w = w[0]
        m = xs.shape[0]

        def tick(carry, t):
            act, out = carry
            inp = jnp.where(stage == 0, xs[jnp.minimum(t, m - 1)], act)
            y = jnp.tanh(inp @ w)
            k = t - (n - 1)
            done = (stage == n - 1) & (k >= 0)
            out = out.at[jnp.clip(k, 0, m - 1)].set(
                jnp.where(done, y, out[jnp.clip(k, 0, m - 1)]))
            return (jax.lax.ppermute(y, "d", ring_perm), out), None

        zero = jnp.zeros(xs.shape[1:], xs.dtype)
        out0 = jnp.zeros_like(xs)
        (_, out), _ = jax.lax.scan(tick, (zero, out0), jnp.arange(m + n - 1))
        return jax.lax.psum(out, "d")

    pipe = jax.shard_map(pipe_body, mesh=mesh1, in_specs=(P(), P("d")), out_specs=P(),
                         check_vma=False)

    dm = 128
    return [
        ("seq_parallel_attention", attention,
         [s(mesh1, None, "d", None)] + [s(mesh1)] * 4,
         [(2, 512, dm), (dm, dm), (dm, dm), (dm, dm), (dm, dm)], True),
        ("fsdp_transformer_step", fsdp_step,
         [s(mesh1, "d", None)] * 6 + [s(mesh1, "d", None, None)] * 2,
         [(dm, dm), (dm, dm), (dm, dm), (dm, dm), (dm, 4 * dm), (4 * dm, dm),
          (16, 64, dm), (16, 64, dm)], True),
        ("mesh2d_mlp_train_step", mlp2d_step,
         [s(mesh2, None, "model"), s(mesh2, "model"), s(mesh2, "model", None), s(mesh2),
          s(mesh2, "data", None), s(mesh2, "data", None)],
         [(256, 1024), (1024,), (1024, 256), (256,), (512, 256), (512, 256)], True),
        ("conv_rows_halo", conv_halo,
         [s(mesh1, None, "d", None, None), s(mesh1), s(mesh1), s(mesh1)],
         [(4, 128, 64, 8), (3, 3, 8, 16), (3, 3, 16, 16), (3, 3, 16, 8)], True),
        ("ring_psum_scatter", ring,
         [s(mesh1, "d", None), s(mesh1, "d", None)],
         [(1024, 512), (512 * n, 256)], True),
        ("pipeline_scan", pipe,
         [s(mesh1), s(mesh1, "d", None, None)],
         [(16, 64, 256), (n, 256, 256)], True),
    ]


def generate(n, out, only):
    """Child process: XLA's modules, outputs and times of every program on n devices."""
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={n}"
    ).strip()
    import time

    import jax
    import numpy as np

    out.mkdir(parents=True, exist_ok=True)
    devices = jax.devices()
    for name, f, shardings, shapes, shardy in programs(n):
        if only and name not in only:
            continue
        jax.config.update("jax_use_shardy_partitioner", shardy)
        rng = np.random.default_rng([35, n, sum(map(ord, name))])
        # Scaled as initializers scale weights (1 / sqrt(fan-in)): unscaled products
        # saturate tanh, and chained layers amplify rounding past the comparison's
        # tolerance in any evaluation order.
        args = [
            jax.device_put(
                (rng.standard_normal(shape) / math.sqrt(shape[-2] if len(shape) > 1 else 4))
                .astype(np.float32), sh)
            for shape, sh in zip(shapes, shardings)
        ]
        jf = jax.jit(f)
        lowered = jf.lower(*args)
        (out / f"{name}.before.hlo").write_text(lowered.as_text(dialect="hlo"))
        (out / f"{name}.after.hlo").write_text(lowered.compile().as_text())
        outs = jax.tree_util.tree_leaves(jf(*args))
        whole = {f"in{i}": np.asarray(v) for i, v in enumerate(args)}
        whole.update({f"out{i}": np.asarray(v) for i, v in enumerate(outs)})
        np.savez(out / f"{name}.global.npz", **whole)
        per = {}
        for kind, values in (("in", args), ("out", outs)):
            for i, v in enumerate(values):
                for shard in v.addressable_shards:
                    per[f"{kind}{i}.dev{devices.index(shard.device)}"] = np.asarray(shard.data)
        np.savez(out / f"{name}.after.npz", **per)
        times = []
        for _ in range(int(option("--xla-repeat", "20"))):
            t = time.perf_counter()
            jax.block_until_ready(jf(*args))
            times.append((time.perf_counter() - t) * 1e3)
        (out / f"{name}.xla_ms").write_text(f"{sorted(times)[len(times) // 2]:.3f}\n")
        print(f"n{n} {name}: generated", flush=True)


def time_xla(n, out, name, repeat):
    """Child process: XLA's median time (ms) of program `name` on n devices from its
    stored global inputs, after one warm-up run, printed as `xla_ms: X`."""
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={n}"
    ).strip()
    sys.path.insert(0, str(ROOT / "tools"))
    import xla_hlo

    for pname, f, shardings, _, shardy in programs(n):
        if pname != name:
            continue
        ms = xla_hlo.sharded_median_ms(f, shardings, shardy, out / f"{name}.global.npz", repeat)
        print(f"xla_ms: {ms:.3f}")


def xla_ms_now(n, out_root, name, repeat):
    """XLA's time of `name` measured now (a child process with n forced devices)."""
    run = subprocess.run(
        [sys.executable, __file__, "--time-xla", str(n), name, str(repeat), "--out",
         str(out_root)], capture_output=True, text=True)
    m = re.search(r"^xla_ms: ([0-9.]+)$", run.stdout, re.M)
    return float(m.group(1)) if m else None


def hloc(*args, exe):
    return subprocess.run([exe, *args], capture_output=True, text=True, cwd=ROOT)


def matched(run):
    expect = [x for x in run.stdout.splitlines() if x.startswith("expect:")]
    return run.returncode == 0 and bool(expect) and all(" ok " in x for x in expect)


def collective_bytes(run):
    m = re.search(r"^collective_bytes: (\d+)$", run.stdout, re.M)
    return int(m.group(1)) if run.returncode == 0 and m else None


def time_ms(run):
    m = re.search(r"^time: median ([0-9.]+) ms", run.stdout, re.M)
    return float(m.group(1)) if m else None


def why(run):
    return (run.stderr.strip().splitlines() or run.stdout.strip().splitlines() or ["?"])[-1][:100]


def mpirun(exe, np_, *args):
    env = dict(os.environ)
    env.update(OMPI_MCA_btl="self,vader", OMPI_MCA_pml="ob1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none")
    cmd = ["mpirun", "-np", str(np_), "--allow-run-as-root", "--oversubscribe",
           "--timeout", "600", exe, *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def check(counts, out_root, only, exe, repeat, before_exe=None, rounds=1):
    rows, byte_ratios, time_ratios = [], [], []
    for n in counts:
        out = out_root / f"n{n}"
        names = sorted(p.name[: -len(".before.hlo")] for p in out.glob("*.before.hlo"))
        for name in names:
            if only and name not in only:
                continue
            f = lambda ext: str(out / f"{name}.{ext}")  # noqa: E731
            after = hloc("run", f("after.hlo"), "--devices", str(n), "--inputs", f("after.npz"),
                         "--expect", f("after.npz"), "--no-timing", exe=exe)
            before = hloc("run", f("before.hlo"), "--devices", str(n), "--inputs",
                          f("global.npz"), "--expect", f("global.npz"), "--no-timing", exe=exe)
            ours = collective_bytes(hloc("partition", f("before.hlo"), "--devices", str(n),
                                         "--stats", exe=exe))
            xla = collective_bytes(hloc("partition", f("after.hlo"), "--stats", exe=exe))
            if ours is not None and xla is not None:
                byte_ratios.append(max(ours, 1) / max(xla, 1))
            xla_ms = float((out / f"{name}.xla_ms").read_text())
            ht = bt = None
            if repeat and matched(before):
                # hloc, the --before binary and XLA timed one after another in this run
                # (the machine is shared: compare within a run only).
                # Each timed `rounds` times, alternating; the least median kept.
                hts, bts, xts = [], [], []
                for _ in range(rounds):
                    hts.append(time_ms(hloc("run", f("before.hlo"), "--devices", str(n),
                                            "--inputs", f("global.npz"), "--repeat",
                                            str(repeat), exe=exe)))
                    if before_exe:
                        bts.append(time_ms(hloc("run", f("before.hlo"), "--devices", str(n),
                                                "--inputs", f("global.npz"), "--repeat",
                                                str(repeat), exe=before_exe)))
                    xts.append(xla_ms_now(n, out_root, name, repeat))
                least = lambda ts: min((t for t in ts if t), default=None)  # noqa: E731
                ht, bt = least(hts), least(bts)
                xla_ms = least(xts) or xla_ms
                if ht:
                    time_ratios.append(ht / xla_ms)
            note = "; ".join(
                f"{k}: {why(r)}" for k, r in (("after", after), ("before", before))
                if not matched(r)
            )
            fmt = lambda v: "-" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v))  # noqa: E731,E501
            ratio = f"{ht / xla_ms:.2f}" if ht else "-"
            rows.append(
                f"| {n} | {name} | {'yes' if matched(after) else 'NO'} | "
                f"{'yes' if matched(before) else 'NO'} | {fmt(ours)} | {fmt(xla)} | "
                f"{fmt(ht)} | {fmt(bt)} | {xla_ms:.2f} | {ratio} | {note} |"
            )
            print(rows[-1], flush=True)
    table = "\n".join([
        "| N | program | (1) after.hlo matches | (2) before.hlo matches | hloc bytes "
        "| XLA bytes | hloc ms | before ms | XLA ms | hloc/XLA | note |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|",
        *rows,
        "",
        f"geomean hloc/XLA collective_bytes (max(bytes,1)): {geomean(byte_ratios):.3f}"
        f" ({len(byte_ratios)} programs)",
        f"geomean hloc/XLA time: {geomean(time_ratios):.3f} ({len(time_ratios)} programs,"
        f" each the median of {repeat} runs, hloc then XLA in the same run, least of"
        f" {rounds} alternating rounds)",
        "",
    ])
    return table


def mpi_check(out_root, only, exe):
    out = out_root / "n4"
    rows = []
    for p in sorted(out.glob("*.before.hlo")):
        name = p.name[: -len(".before.hlo")]
        if only and name not in only:
            continue
        npz = str(out / f"{name}.global.npz")
        run = mpirun(exe, 4, "run", str(p), "--devices", "4", "--inputs", npz, "--expect", npz,
                     "--no-timing", "--collectives", "mpi")
        rows.append(f"| 4 ranks | {name} | {'yes' if matched(run) else 'NO'} | "
                    f"{'' if matched(run) else why(run)} |")
        print(rows[-1], flush=True)
    return "\n".join(["| MPI | program | matches XLA | note |", "|---|---|---|---|", *rows, ""])


def main():
    counts = [int(x) for x in option("--devices", "4,8").split(",")]
    out_root = pathlib.Path(option("--out", "/tmp/spmd_heldout"))
    only = option("--only")
    only = set(only.split(",")) if only else None
    if option("--time-xla"):
        i = sys.argv.index("--time-xla")
        n, name, repeat = int(sys.argv[i + 1]), sys.argv[i + 2], int(sys.argv[i + 3])
        time_xla(n, out_root / f"n{n}", name, repeat)
        return
    if option("--child"):
        generate(int(option("--child")), out_root / f"n{option('--child')}", only)
        return
    if "--no-generate" not in sys.argv:
        for n in counts:
            args = [sys.executable, __file__, "--child", str(n), "--out", str(out_root)]
            if only:
                args += ["--only", ",".join(sorted(only))]
            subprocess.run(args, check=True)
    exe = os.environ.get("HLOC", str(ROOT / "target" / "release" / "hloc"))
    mpi_exe = option("--mpi")
    if mpi_exe:
        print(mpi_check(out_root, only, mpi_exe))
        return
    if "--no-check" not in sys.argv:
        print(check(counts, out_root, only, exe, int(option("--time", "0")), option("--before"),
                    int(option("--rounds", "1"))))


if __name__ == "__main__":
    main()
