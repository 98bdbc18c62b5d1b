"""Compile HLO text with XLA (jax's PJRT client) and run it: the one way the tools/ scripts
run a module on XLA itself (hlo_probe_vs_xla, fused_on_xla, differential_campaign)."""

import jax
import jax.extend
import numpy as np
from jax._src.lib import xla_client as xc


def execute(text, args, platform="cpu"):
    """XLA's raw results of module `text` on the numpy `args` (one device of `platform`):
    what the loaded executable's `execute` returns, before any conversion to numpy."""
    backend = jax.extend.backend.get_backend(platform)
    mod = xc.hlo.hlo_module_from_text(text)
    comp = xc.XlaComputation(mod.as_serialized_hlo_module_proto())
    mlir = jax._src.lib._jax.mlir.xla_computation_to_mlir_module(comp)
    devs = backend.devices()[:1]
    exe = backend.compile_and_load(mlir, xc.DeviceList(tuple(devs)), xc.CompileOptions())
    return exe.execute([jax.device_put(a, devs[0]) for a in args])


def outputs(text, args, platform="cpu"):
    """[`execute`]'s results as numpy arrays."""
    return [np.asarray(o) for o in execute(text, args, platform)]


def sharded_median_ms(f, shardings, shardy, npz_path, repeat):
    """Median wall time (ms) of XLA:CPU's jitted `f` over `repeat` runs, after one warm-up run,
    on the global inputs in<i> of `npz_path` placed by `shardings` (Shardy or GSPMD as
    `shardy` says): how spmd_vs_xla and spmd_heldout time XLA on forced host devices."""
    import time

    jax.config.update("jax_use_shardy_partitioner", shardy)
    data = np.load(npz_path)
    args = [jax.device_put(data[f"in{i}"], sh) for i, sh in enumerate(shardings)]
    jf = jax.jit(f)
    jax.block_until_ready(jf(*args))
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        jax.block_until_ready(jf(*args))
        times.append((time.perf_counter() - t) * 1e3)
    return sorted(times)[len(times) // 2]
