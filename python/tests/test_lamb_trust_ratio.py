"""A LAMB step (optax.lamb) runs in milliseconds, not minutes (issue 34's "hang").

`tools/bench_vs_xla.py --python` stalled for over 15 minutes on lamb_transformer_step (two
worker threads busy). The package timed was built at 04:12 on 2026-11-30, before two fixes
of 08:29 and 08:56: LAMB's trust ratio `||w|| / ||u||` is a full reduction of each weight
read through a scalar broadcast by the elementwise update; fusion put the reduction inside
that update's kernel, and the code generator did not hoist it out of the element loop
(`codegen/src/kir/hoist.rs`: the lanes were computed through `let`s and looked carried), so
every element summed the whole weight again (`perf`: 99% in one fusion body). The fusion cost
model now counts a hoisted value once per parallel block (`OpInfo::block_repeats`) and keeps
such a reduction out of a multi-block consumer, and the hoist handles the `let` lanes.

`data/lamb_trust_ratio_step.hlo` is one LAMB step on a single [1024, 256] weight, lowered
with jax 0.10.2 / optax 0.2.8:

    opt = optax.lamb(1e-3)
    def step(w, x, state):
        g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w)))(w)
        upd, state = opt.update(g, state, w)
        return optax.apply_updates(w, upd), state
    w = jnp.ones((1024, 256), jnp.float32) * 0.01
    x = jnp.ones((8, 1024), jnp.float32)
    jax.jit(step).lower(w, x, opt.init(w)).as_text(dialect="hlo")

The 04:12 package ran its one call in 173 s (release build, loaded machine); this tree's
in 0.03 s. The call runs in a child interpreter, so a kernel stuck in a loop fails the
test at the timeout instead of hanging the suite; its outputs are checked against the
reference evaluator.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

import hloc
from conftest import assert_close

HLO = Path(__file__).resolve().parent / "data" / "lamb_trust_ratio_step.hlo"

# Far above a correct run (compile about 1 s in release, a few in the dev profile, the call
# 0.03 s), far below the 173 s of the per-element sums.
TIMEOUT_S = 60


def _inputs() -> list[np.ndarray]:
    """The weight, a batch, the step count and LAMB's moments (the second one positive)."""
    rng = np.random.default_rng(0)
    return [
        (0.05 * rng.standard_normal((1024, 256))).astype(np.float32),
        rng.standard_normal((8, 1024)).astype(np.float32),
        np.array(3, np.int32),
        (0.01 * rng.standard_normal((1024, 256))).astype(np.float32),
        np.abs(0.01 * rng.standard_normal((1024, 256))).astype(np.float32),
    ]


def test_lamb_step_finishes_and_matches_the_reference(tmp_path: Path) -> None:
    args = tmp_path / "args.npz"
    outs = tmp_path / "outs.npz"
    np.savez(args, *_inputs())
    child = (
        "import sys, numpy as np, hloc\n"
        "with np.load(sys.argv[2]) as z:\n"
        "    args = [z[f'arr_{i}'] for i in range(len(z.files))]\n"
        "got = hloc.compile(sys.argv[1])(*args)\n"
        "np.savez(sys.argv[3], *got)\n"
    )
    try:
        r = subprocess.run(
            [sys.executable, "-c", child, str(HLO), str(args), str(outs)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(
            f"one LAMB step did not finish in {TIMEOUT_S} s: a full reduction recomputed "
            "per element or per block (see this file's docstring)"
        ) from None
    assert r.returncode == 0, r.stderr
    with np.load(outs) as z:
        got = [z[f"arr_{i}"] for i in range(len(z.files))]
    want = hloc.run(HLO, *_inputs(), backend="reference")
    assert len(got) == len(want) == 4
    for k, (g, w) in enumerate(zip(got, want)):
        assert_close(g, w, f"output {k}")
    # The step moved the weight (a run that skipped the update would match nothing above,
    # but say so plainly) and counted itself.
    assert int(got[1]) == 4
    assert np.abs(got[0] - _inputs()[0]).max() > 1e-5
