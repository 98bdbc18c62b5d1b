#!/usr/bin/env python3
"""Write FFT programs as users write them with jax.numpy.fft, at realistic sizes, for
`tools/bench_vs_xla.py --dir` (issue 30's FFT cliff).

Run by hand (never by the test suite); needs jax, flax and optax from PyPI (the writer is
tools/user_programs.py's):

    python3 tools/fft_programs.py /tmp/fft-programs            # every program
    python3 tools/fft_programs.py /tmp/fft-programs --only fft_rfft2_images
    python3 tools/bench_vs_xla.py --dir /tmp/fft-programs

Besides these it writes `fft_spectral_filter` from tools/user_programs.py. Each program
becomes DIR/NAME/before_optimizations.hlo, inputs.npz and outputs.npz (what XLA:CPU
computed). The sizes are chosen so that XLA:CPU takes roughly 5-300 ms on a 2-core
machine.
"""

import argparse
import os
import sys

import numpy as np

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import user_programs  # noqa: E402


def normal(seed, shape, dtype=np.float32):
    return np.asarray(np.random.RandomState(seed).randn(*shape), dtype)


def complex_normal(seed, shape, dtype=np.complex64):
    r = np.random.RandomState(seed)
    return np.asarray(r.randn(*shape) + 1j * r.randn(*shape), dtype)


def programs():
    out = []
    # A 2-D real FFT of a batch of images (power spectra, convolution by FFT).
    out.append(("fft_rfft2_images", lambda x: jnp.fft.rfft2(x),
                (normal(80, (8, 512, 512)),)))
    # Long complex signals, one FFT per row.
    out.append(("fft_c64_rows", lambda z: jnp.fft.fft(z, axis=-1),
                (complex_normal(81, (64, 65536)),)))

    # A filter applied in the frequency domain: rfft, a gain per frequency, irfft.
    def lowpass(x):
        k = jnp.fft.rfft(x, axis=-1)
        f = jnp.fft.rfftfreq(x.shape[-1])
        return jnp.fft.irfft(k * jnp.exp(-(f / 0.05) ** 2), n=x.shape[-1], axis=-1)
    out.append(("fft_irfft_roundtrip", lowpass, (normal(82, (256, 16384)),)))

    # A 3-D FFT of a batch of volumes.
    out.append(("fft_fftn_volumes", lambda z: jnp.fft.fftn(z, axes=(1, 2, 3)),
                (complex_normal(83, (8, 64, 64, 64)),)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--only", help="comma-separated program names")
    a = ap.parse_args()
    only = set(a.only.split(",")) if a.only else None
    todo = programs() + [p for p in user_programs.programs() if p[0] == "fft_spectral_filter"]
    for name, f, args in todo:
        if only and name not in only:
            continue
        user_programs.write(a.out_dir, name, f, args)
        print(name, flush=True)


if __name__ == "__main__":
    sys.exit(main())
