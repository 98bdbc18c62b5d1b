#!/usr/bin/env python3
"""Time hloc against XLA:CPU on the same HLO modules and inputs, in the same run.

Run by hand (never by the test suite); needs JAX from PyPI (Python >= 3.12):

    /root/.pyenv/versions/3.12.1/bin/python -m venv /tmp/jaxenv
    /tmp/jaxenv/bin/pip install jax jaxlib numpy
    cargo build --release -p hloc
    /tmp/jaxenv/bin/python tools/bench_vs_xla.py                  # the corpus
    /tmp/jaxenv/bin/python tools/bench_vs_xla.py --scaled         # realistic sizes
    /tmp/jaxenv/bin/python tools/bench_vs_xla.py --programs softmax,mlp_forward --repeat 50
    /tmp/jaxenv/bin/python tools/bench_vs_xla.py --dir /tmp/user-programs   # any programs
    /tmp/jaxenv/bin/python tools/bench_vs_xla.py my.hlo other.hlo  # inputs: my.npz or random
    /tmp/jaxenv/bin/python tools/bench_vs_xla.py --hloc-before /tmp/hloc-old --rounds 2  # old vs new

--dir DIR times every folder of DIR holding the module file (--file) and inputs.npz, as
tools/user_programs.py writes them; FILES time HLO files given by path, each with the
inputs FILE.npz or, beside it, inputs.npz (else random normal inputs of the entry's shapes).

For every module it
  - compiles the module text with XLA:CPU (DESIGN §5: hlo_module_from_text, then
    compile_and_load) and times the median of --repeat calls after 3 warm-ups
    (each call includes ~7 us of JAX dispatch);
  - runs `hloc run FILE --inputs in.npz --backend BACKEND --repeat N` with a cold compile
    cache (a fresh HLOC_CACHE_DIR) and reads its `time: median X ms, min Y ms over N runs;
    compile Z ms (cache hit|miss)` line;
and prints one row per module (times in ms, ratio = hloc / XLA, below 1 means hloc is
faster) and the geometric mean of the ratios. Compile times are reported side by side
(XLA's from text to loaded executable, hloc's cold). Runs vary up to 2x between processes
on these machines: compare ratios from one run only.

--hloc-before BIN also times a second hloc binary (the code before a change; --hloc is
the one after it) in the same run, module by module next to the first (which goes first
alternates between modules and rounds), and adds the columns `before ms`, `after/before`,
`before compile` and `compile a/b`, and a line with the geometric means of after/before
for run times and for cold compile times. --rounds N (default 1) times both binaries (and XLA) N
times each per module and keeps each one's best median and best compile time. Without
--hloc-before the output is as before.

--python times both from Python in one process per program, on the same numpy arrays:
hloc's `Executable.__call__` (`hloc.compile(path)`, the package of python/, installed with
`pip install ./python` into the environment running this script; a cold compile cache)
against XLA's compiled executable, each with its per-call overhead (hloc: argument checks
and conversion, the run, the numpy outputs; XLA: JAX's dispatch and the wait for the
results), median of --repeat calls after 3 warm-ups; the same table and geomean. Each
program runs in a child interpreter (this script with a hidden --python-child) so that one
that never finishes is killed after --timeout seconds (default 900), gets a row saying so,
and the rest of the table is still timed.

--scaled builds the realistic-size programs of the brief with JAX (16M-element
elementwise, 4096^2 row and column reductions and transpose, softmax rows, a 2048^3 f32
GEMM, a transformer block at sequence 512, a ResNet 3x3 convolution in NHWC and a strided
one in NCHW) into a temporary directory and times those.
"""

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)
# XLA:CPU unless HLOC_XLA_PLATFORM names another (tools/fused_on_xla.py --platform cuda).
jax.config.update("jax_platforms", os.environ.get("HLOC_XLA_PLATFORM", "cpu"))

import jax.extend  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
from jax._src.lib import lapack  # noqa: E402
from jax._src.lib import xla_client as xc  # noqa: E402

# The LAPACK custom calls JAX emits on the CPU need their kernels registered first.
lapack._lapack.initialize()

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NP_DTYPE = {
    "f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16,
    "f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2,
    "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "pred": np.bool_, "c64": np.complex64, "c128": np.complex128,
}
TIME_LINE = re.compile(
    r"^time: median ([0-9.]+) ms, min ([0-9.]+) ms over (\d+) runs; compile ([0-9.]+) ms \(cache (hit|miss)\)$",
    re.M,
)


def entry_params(text):
    """(HLO element type name, dims) of the ENTRY parameters, by parameter number."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("ENTRY "))
    params = {}
    for l in lines[start + 1:]:
        if l.startswith("}"):
            break
        m = re.search(r"=\s*([a-z0-9]+)\[([^\]]*)\](?:\{[^}]*\})?\s+parameter\((\d+)\)", l)
        if m:
            dims = [int(x) for x in m.group(2).split(",") if x.strip()]
            params[int(m.group(3))] = (m.group(1), dims)
    return [params[i] for i in range(len(params))]


def entry_param_types(text):
    """HLO element type names of the ENTRY parameters, by parameter number."""
    return [t for t, _ in entry_params(text)]


def load_inputs(npz_path, hlo_text):
    """The module's arguments: npz arrays `in0..`, bit patterns viewed as their type."""
    types = entry_param_types(hlo_text)
    with np.load(npz_path) as z:
        args = []
        for i, t in enumerate(types):
            a = z[f"in{i}"]
            want = np.dtype(NP_DTYPE[t])
            if a.dtype != want and a.dtype.itemsize == want.itemsize and want.name in (
                "bfloat16", "float8_e4m3fn", "float8_e5m2"
            ):
                a = a.view(want)
            args.append(a)
    return args


def xla_prepare(hlo_text, args):
    """XLA:CPU's executable of the module text, warmed up on `args`: (a function timing
    `repeat` runs and returning their median ms, compile ms)."""
    backend = jax.extend.backend.get_backend("cpu")
    t0 = time.perf_counter()
    mod = xc.hlo.hlo_module_from_text(hlo_text)
    comp = xc.XlaComputation(mod.as_serialized_hlo_module_proto())
    mlir = jax._src.lib._jax.mlir.xla_computation_to_mlir_module(comp)
    devs = backend.devices()[:1]
    exe = backend.compile_and_load(mlir, xc.DeviceList(tuple(devs)), xc.CompileOptions())
    compile_ms = (time.perf_counter() - t0) * 1e3
    bufs = [jax.device_put(a, devs[0]) for a in args]
    for _ in range(3):
        jax.block_until_ready(exe.execute(bufs))

    def batch(repeat):
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            jax.block_until_ready(exe.execute(bufs))
            times.append((time.perf_counter() - t) * 1e3)
        return float(np.median(times))

    return batch, compile_ms


def xla_time(hlo_text, args, repeat):
    """(median ms, compile ms) of XLA:CPU running the module text on `args`."""
    batch, compile_ms = xla_prepare(hlo_text, args)
    return batch(repeat), compile_ms


def hloc_time(hloc, hlo_path, npz_path, backend, repeat):
    """(median ms, compile ms) from `hloc run --repeat`, or an error string."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, HLOC_CACHE_DIR=cache)
        cmd = [hloc, "run", hlo_path, "--inputs", npz_path, "--backend", backend,
               "--repeat", str(repeat)]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    m = TIME_LINE.search(p.stdout)
    if p.returncode != 0 or not m:
        err = (p.stderr.strip().splitlines() or ["no time line"])[-1]
        return None, None, err[:100]
    return float(m.group(1)), float(m.group(4)), None


def hloc_python_time(hlo_path, args, repeat):
    """(median ms, compile ms, error) of `hloc.Executable.__call__` on `args` in this
    process, compiled with a cold cache."""
    import hloc

    old = os.environ.get("HLOC_CACHE_DIR")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["HLOC_CACHE_DIR"] = cache
        try:
            t0 = time.perf_counter()
            exe = hloc.compile(hlo_path)
            compile_ms = (time.perf_counter() - t0) * 1e3
            for _ in range(3):
                exe(*args)
            times = []
            for _ in range(repeat):
                t = time.perf_counter()
                exe(*args)
                times.append((time.perf_counter() - t) * 1e3)
        except Exception as e:  # noqa: BLE001
            return None, None, f"{type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}"
        finally:
            if old is None:
                os.environ.pop("HLOC_CACHE_DIR", None)
            else:
                os.environ["HLOC_CACHE_DIR"] = old
    return float(np.median(times)), compile_ms, None


def python_child(path, npz, repeat, no_xla):
    """--python-child: times one program in this process, XLA first, then hloc's package,
    printing each result as a JSON line as soon as it is known (the parent reads what came
    before a hang)."""
    import json

    text = open(path).read()
    if not no_xla:
        try:
            xm, xc_ms = xla_time(text, load_inputs(npz, text), repeat)
            print(json.dumps({"xla": [xm, xc_ms]}), flush=True)
        except Exception as e:  # noqa: BLE001
            print(json.dumps({"xla_error": f"{type(e).__name__}: {str(e)[:80]}"}), flush=True)
            return
    hm, hc_ms, err = hloc_python_time(path, load_inputs(npz, text), repeat)
    print(json.dumps({"hloc": [hm, hc_ms, err]}), flush=True)


def python_times(path, npz, repeat, no_xla, timeout):
    """(xla ms, xla compile ms, XLA error, hloc ms, hloc compile ms, hloc error) of one
    program timed by a child interpreter (`--python-child`): XLA and hloc's package still
    run in one process on the same arrays, but a program that never returns (the package
    of 04:12 on 2026-11-30 spent minutes per call of lamb_transformer_step, and the table
    never got past it) is killed after `timeout` seconds and reported as its row."""
    import json

    cmd = [sys.executable, os.path.abspath(__file__), "--python-child", path, npz,
           "--repeat", str(repeat)] + (["--no-xla"] if no_xla else [])
    timed_out = False
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        out, code = p.stdout, p.returncode
        last_err = (p.stderr.strip().splitlines() or [""])[-1]
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        timed_out, code, last_err = True, None, ""
    got = {}
    for line in out.splitlines():
        if line.startswith("{"):
            got.update(json.loads(line))
    xm, xc_ms = got.get("xla", (None, None))
    xerr = got.get("xla_error")
    if "hloc" in got:
        hm, hc_ms, err = got["hloc"]
    elif timed_out:
        hm = hc_ms = None
        err = f"no result in {timeout:.0f} s (killed)"
        if not no_xla and xm is None and xerr is None:
            xerr = err
    else:
        hm = hc_ms = None
        err = f"the child exited with {code}: {last_err[:80]}"
        if not no_xla and xm is None and xerr is None:
            xerr = err
    return xm, xc_ms, xerr, hm, hc_ms, err


def hloc_time_pair(after, before, hlo_path, npz_path, backend, repeat, rounds, index):
    """Times both binaries `rounds` times each, alternating which goes first (by module
    `index` and round); returns each one's best median and best compile time, or its
    last error: (after ms, after compile, after error, before ms, before compile, before
    error)."""
    best = {"after": [None, None, None], "before": [None, None, None]}
    for r in range(max(1, rounds)):
        order = ["after", "before"] if (index + r) % 2 == 0 else ["before", "after"]
        for side in order:
            m, c, err = hloc_time(after if side == "after" else before, hlo_path, npz_path,
                                  backend, repeat)
            b = best[side]
            if err:
                if b[0] is None:
                    b[2] = err
                continue
            b[0] = m if b[0] is None else min(b[0], m)
            b[1] = c if b[1] is None else min(b[1], c)
            b[2] = None
    return tuple(best["after"]) + tuple(best["before"])


def stage_files(files, out_dir, module_name):
    """Copies each HLO file into its own folder of `out_dir` with its inputs (FILE.npz,
    else inputs.npz beside it, else random normal arrays of the entry's shapes); returns
    the folder names."""
    import shutil
    names = []
    for i, f in enumerate(files):
        name = f"{i:02d}_{os.path.splitext(os.path.basename(f))[0]}"
        d = os.path.join(out_dir, name)
        os.makedirs(d)
        shutil.copy(f, os.path.join(d, module_name))
        base = os.path.splitext(f)[0]
        for cand in (base + ".npz", os.path.join(os.path.dirname(f), "inputs.npz")):
            if os.path.exists(cand):
                shutil.copy(cand, os.path.join(d, "inputs.npz"))
                break
        else:
            text = open(f).read()
            np.savez(os.path.join(d, "inputs.npz"), **random_inputs(text))
        names.append(name)
    return names


def random_inputs(text):
    """Normal (floats) or small (integers) random arrays `in0..` for the entry's
    parameters."""
    r = np.random.RandomState(0)
    out = {}
    for i, (t, dims) in enumerate(entry_params(text)):
        dt = np.dtype(NP_DTYPE[t])
        if t in ("bf16", "f8e4m3fn", "f8e5m2"):
            # Stored as bit patterns (.npy cannot name these types); read back by type.
            a = np.asarray(r.randn(*dims)).astype(dt)
            out[f"in{i}"] = a.view(np.uint16 if t == "bf16" else np.uint8)
        elif dt.kind == "f":
            out[f"in{i}"] = np.asarray(r.randn(*dims)).astype(dt)
        elif dt.kind == "b":
            out[f"in{i}"] = np.asarray(r.randint(0, 2, dims)).astype(dt)
        else:
            out[f"in{i}"] = np.asarray(r.randint(0, 8, dims)).astype(dt)
    return out


# ---------------------------------------------------------------------------
# Realistic sizes

def scaled_programs():
    """(name, f, args) of the realistic-size programs."""
    rng = np.random.RandomState(0)
    n = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731

    def attention_block(x, wq, wk, wv, wo, w1, w2, g):
        def ln(v):
            mu = v.mean(-1, keepdims=True)
            var = ((v - mu) ** 2).mean(-1, keepdims=True)
            return (v - mu) * jax.lax.rsqrt(var + 1e-5) * g

        h = ln(x)
        s, d = h.shape
        heads = 8
        q = (h @ wq).reshape(s, heads, d // heads).transpose(1, 0, 2)
        k = (h @ wk).reshape(s, heads, d // heads).transpose(1, 0, 2)
        v = (h @ wv).reshape(s, heads, d // heads).transpose(1, 0, 2)
        a = jax.nn.softmax(q @ k.transpose(0, 2, 1) / math.sqrt(d // heads), axis=-1)
        o = (a @ v).transpose(1, 0, 2).reshape(s, d) @ wo
        x = x + o
        return x + jax.nn.gelu(ln(x) @ w1) @ w2

    d = 512
    return [
        ("elementwise_16M", lambda a, b: jnp.tanh(a) * b + jnp.exp(-a * a), (n(1 << 24), n(1 << 24))),
        ("row_sum_4096sq", lambda a: a.sum(axis=1), (n(4096, 4096),)),
        ("col_sum_4096sq", lambda a: a.sum(axis=0), (n(4096, 4096),)),
        ("transpose_4096sq", lambda a: a.T + 0.0, (n(4096, 4096),)),
        # JAX lowers the one above with a column-major result (a copy, no transpose);
        # this one is rewritten to a row-major result: a real transpose.
        ("transpose_rowmajor_4096sq", lambda a: a.T + 0.0, (n(4096, 4096),)),
        ("softmax_rows_4096sq", lambda a: jax.nn.softmax(a, axis=-1), (n(4096, 4096),)),
        ("gemm_2048cube_f32", lambda a, b: a @ b, (n(2048, 2048), n(2048, 2048))),
        ("transformer_block_s512", attention_block,
         (n(512, d), n(d, d) * 0.05, n(d, d) * 0.05, n(d, d) * 0.05, n(d, d) * 0.05,
          n(d, 4 * d) * 0.05, n(4 * d, d) * 0.05, n(d))),
        # A ResNet 3x3 convolution in NHWC, and a strided one in JAX's default NCHW/OIHW.
        ("conv_resnet_nhwc", lambda x, w: jax.lax.conv_general_dilated(
            x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
         (n(8, 56, 56, 64), n(3, 3, 64, 64) * 0.05)),
        ("conv_nchw_stride2", lambda x, w: jax.lax.conv_general_dilated(
            x, w, (2, 2), ((1, 1), (1, 1))),
         (n(8, 64, 28, 28), n(128, 64, 3, 3) * 0.05)),
    ]


def write_scaled(out_dir):
    """Writes NAME/before_optimizations.hlo and NAME/inputs.npz for each scaled program."""
    names = []
    for name, f, args in scaled_programs():
        d = os.path.join(out_dir, name)
        os.makedirs(d, exist_ok=True)
        text = jax.jit(f).lower(*args).compiler_ir("hlo").as_hlo_text(print_large_constants=True)
        if "_rowmajor" in name:
            text = text.replace("{0,1}", "{1,0}")
        with open(os.path.join(d, "before_optimizations.hlo"), "w") as fh:
            fh.write(text)
        np.savez(os.path.join(d, "inputs.npz"), **{f"in{i}": a for i, a in enumerate(args)})
        names.append(name)
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hloc", default=os.path.join(ROOT, "target/release/hloc"),
                    help="the hloc binary (with --hloc-before: the one after the change)")
    ap.add_argument("--hloc-before",
                    help="also time this hloc binary (before the change) and print after/before")
    ap.add_argument("--no-xla", action="store_true",
                    help="do not time XLA:CPU (its columns read -; for hloc against --hloc-before)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="with --hloc-before: time each binary this many times per module, "
                         "keeping each one's best (default 1)")
    ap.add_argument("--corpus", default=os.path.join(ROOT, "corpus"))
    ap.add_argument("--programs", help="comma-separated program names (default: all)")
    ap.add_argument("--file", default="before_optimizations.hlo",
                    help="which module of each program to time")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--scaled", action="store_true", help="time the realistic-size programs")
    ap.add_argument("--python", action="store_true",
                    help="time hloc's Executable.__call__ (the hloc package) and XLA from "
                         "Python, both in one child interpreter per program")
    ap.add_argument("--timeout", type=float, default=900,
                    help="with --python: seconds a program's child may take (XLA and hloc "
                         "together) before it is killed and reported (default 900)")
    ap.add_argument("--python-child", nargs=2, metavar=("HLO", "NPZ"), help=argparse.SUPPRESS)
    ap.add_argument("--allow-debug-build", action="store_true",
                    help="with --python: time the installed package even if it is not a "
                         "release build")
    ap.add_argument("files", nargs="*", help="HLO files to time (inputs: FILE.npz, else inputs.npz beside it, else random)")
    ap.add_argument("--dir", help="time every program folder of DIR (the module file and inputs.npz)")
    ap.add_argument("--scaled-dir",
                    help="with --scaled: keep the programs in this directory, reusing those "
                         "already there (default: a fresh temporary directory)")
    a = ap.parse_args()
    if a.python_child:
        return python_child(*a.python_child, a.repeat, a.no_xla)

    tmp = None
    if a.scaled and a.scaled_dir and all(
            os.path.exists(os.path.join(a.scaled_dir, n, "inputs.npz")) for n, _, _ in scaled_programs()):
        corpus, names = a.scaled_dir, [n for n, _, _ in scaled_programs()]
    elif a.scaled:
        tmp = a.scaled_dir or tempfile.mkdtemp(prefix="hloc-scaled-")
        corpus, names = tmp, write_scaled(tmp)
    elif a.files:
        tmp = tempfile.mkdtemp(prefix="hloc-files-")
        corpus, names = tmp, stage_files(a.files, tmp, a.file)
    elif a.dir:
        corpus = a.dir
        names = sorted(n for n in os.listdir(a.dir)
                       if os.path.exists(os.path.join(a.dir, n, a.file))
                       and os.path.exists(os.path.join(a.dir, n, "inputs.npz")))
    else:
        corpus = a.corpus
        names = [l.split("\t")[0] for l in open(os.path.join(corpus, "MANIFEST.tsv")).read().splitlines()[1:]]
    if a.programs:
        wanted = a.programs.split(",")
        names = [n for n in names if n in wanted]

    before = a.hloc_before
    if a.python and before:
        ap.error("--python times the installed package: it takes no --hloc-before")
    if a.python:
        import hloc
        # A `--profile dev` build (tools/test_python.sh's default) runs the Rust parts of a
        # program several times slower than the release build `pip install ./python` makes.
        profile = getattr(hloc, "build_profile", "unknown")
        if profile != "release" and not a.allow_debug_build:
            ap.error(f"the installed hloc package is a {profile} build ({hloc.__file__}); "
                     "time a release build (HLOC_PY_PROFILE=release tools/test_python.sh, or "
                     "pip install ./python), or pass --allow-debug-build")
    shown = (f"the hloc package ({getattr(hloc, 'build_profile', 'unknown')} build), "
             "Executable.__call__ from Python") if a.python else a.hloc
    print(f"XLA:CPU from jax {jax.__version__} (jaxlib {jax.lib.__version__}); hloc {shown}"
          + (f"; before: {before}" if before else ""))
    head = f"{'program':32} {'xla ms':>10} {'hloc ms':>10} {'ratio':>7} {'xla compile':>12} {'hloc compile':>13}"
    if before:
        head += f" {'before ms':>10} {'after/before':>12} {'before compile':>14} {'compile a/b':>11}"
    print(head)
    ratios = []
    compile_ratios = []
    ab_ratios = []
    ab_compile_ratios = []
    for i, name in enumerate(names):
        path = os.path.join(corpus, name, a.file)
        npz = os.path.join(corpus, name, "inputs.npz")
        text = open(path).read()
        xm = xc_ms = None
        xla_batch = None
        xla_note = ""
        if a.python:
            xm, xc_ms, xerr, hm, hc_ms, err = python_times(path, npz, a.repeat, a.no_xla,
                                                           a.timeout)
            if xerr:
                print(f"{name:32} XLA failed: {xerr}")
                continue
        elif not a.no_xla:
            try:
                xla_batch, xc_ms = xla_prepare(text, load_inputs(npz, text))
                xm = xla_batch(a.repeat)
            except Exception as e:  # noqa: BLE001
                if not before:
                    print(f"{name:32} XLA failed: {type(e).__name__}: {str(e)[:80]}")
                    continue
                # The binaries are still compared with each other.
                xla_note = f"  XLA failed: {type(e).__name__}: {str(e).splitlines()[0][:60]}"
        if before:
            hm, hc_ms, err, bm, bc_ms, berr = hloc_time_pair(
                a.hloc, before, path, npz, a.backend, a.repeat, a.rounds, i)
            # XLA gets as many rounds as each binary (one above, the rest after them): the
            # best median of each, so a busy second core moves neither side alone.
            if xm is not None and xla_batch is not None:
                for _ in range(max(1, a.rounds) - 1):
                    xm = min(xm, xla_batch(a.repeat))
        elif not a.python:  # --python timed both above, in the child
            hm, hc_ms, err = hloc_time(a.hloc, path, npz, a.backend, a.repeat)
        if before:
            if berr:
                tail = f" {'-':>10} {'-':>12} {'-':>14} {'-':>11}"
            elif err:
                tail = f" {bm:10.4f} {'-':>12} {bc_ms:14.1f} {'-':>11}"
            else:
                ab = max(hm, 0.00005) / max(bm, 0.00005)
                cab = hc_ms / bc_ms if bc_ms > 0 else float("nan")
                ab_ratios.append(ab)
                if bc_ms > 0 and hc_ms > 0:
                    ab_compile_ratios.append(cab)
                tail = f" {bm:10.4f} {ab:12.3f} {bc_ms:14.1f} {cab:11.3f}"
        else:
            tail = ""
        xs = (f"{xm:10.4f}", f"{xc_ms:12.1f}") if xm is not None else (f"{'-':>10}", f"{'-':>12}")
        if err:
            note = f"  hloc: {err}" + (f"; before: {berr}" if before and berr else "")
            print(f"{name:32} {xs[0]} {'-':>10} {'-':>7} {xs[1]} {'-':>13}{tail}{note}{xla_note}")
            continue
        if xm is not None:
            # A run below the timer's resolution (0.1 us) counts as half of it.
            r = max(hm, 0.00005) / xm
            ratios.append(r)
            compile_ratios.append(hc_ms / xc_ms)
            rs = f"{r:7.2f}"
        else:
            rs = f"{'-':>7}"
        note = f"  before: {berr}" if before and berr else ""
        print(f"{name:32} {xs[0]} {hm:10.4f} {rs} {xs[1]} {hc_ms:13.1f}{tail}{note}{xla_note}")
    if ratios:
        g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        gc = math.exp(sum(math.log(r) for r in compile_ratios) / len(compile_ratios))
        print(f"geomean ratio (hloc/XLA) over {len(ratios)} of {len(names)} programs: {g:.3f}; "
              f"compile {gc:.2f}; worst {max(ratios):.2f}; slower than 1.5x: "
              f"{sum(r > 1.5 for r in ratios)}")
    if before and ab_ratios:
        g = math.exp(sum(math.log(r) for r in ab_ratios) / len(ab_ratios))
        gc = (math.exp(sum(math.log(r) for r in ab_compile_ratios) / len(ab_compile_ratios))
              if ab_compile_ratios else float("nan"))
        print(f"geomean after/before over {len(ab_ratios)} of {len(names)} programs: run {g:.3f}, "
              f"compile {gc:.3f}; run range {min(ab_ratios):.2f}-{max(ab_ratios):.2f}"
              + (f"; best of {a.rounds} rounds each" if a.rounds > 1 else ""))
    if tmp:
        print(f"(scaled programs in {tmp})")


if __name__ == "__main__":
    sys.exit(main())
