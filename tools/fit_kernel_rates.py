#!/usr/bin/env python3
"""Measure what hloc's generated CPU kernels reach on this machine, next to the cost model's
prediction: the bandwidth of a streaming kernel per working-set size (which cache level it
runs from), the time of a transcendental per element and dtype, and the passes of a
softmax-like row kernel (row max, exp, row sum, divide). These are the facts behind
device/descriptions/cpu.toml's `[memory]`, `[cache]` and `[elementwise]` figures.

Run by hand (never by the test suite); Python 3 standard library only:

    cargo build --release -p hloc
    python3 tools/fit_kernel_rates.py                  # target/release/hloc
    python3 tools/fit_kernel_rates.py /tmp/hloc --repeat 30 --only stream

Each microbenchmark is one HLO module (random inputs) run with
`hloc run --repeat R --profile-json P --trace T`; the figure kept per thunk is its fastest
call in the trace (the runs' best: other processes on the machine slow single calls, rarely
every one), beside the cost model's prediction per call from the profile. The pool runs
each kernel on every core, as in real programs (no pinning). The load average before and
after is printed: rates fitted on a loaded machine are suspect.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stream(ty, n):
    """`y = x * 2 + 1`: one read and one write per element."""
    return f"""HloModule stream
ENTRY e {{
  x = {ty}[{n}] parameter(0)
  c = {ty}[] constant(2)
  b = {ty}[{n}] broadcast(c), dimensions={{}}
  m = {ty}[{n}] multiply(x, b)
  ROOT y = {ty}[{n}] add(m, b)
}}
"""


def unary(op, ty, n):
    """`y = op(x)`: a transcendental per element."""
    return f"""HloModule unary
ENTRY e {{
  x = {ty}[{n}] parameter(0)
  ROOT y = {ty}[{n}] {op}(x)
}}
"""


ADD = """add {
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT s = {ty}[] add(a, b)
}
max {
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT s = {ty}[] maximum(a, b)
}
"""


def row_sum(ty, rows, cols):
    """A row sum: one pass over the matrix."""
    return "HloModule rowsum\n" + ADD.replace("{ty}", ty) + f"""ENTRY e {{
  x = {ty}[{rows},{cols}] parameter(0)
  z = {ty}[] constant(0)
  ROOT r = {ty}[{rows}] reduce(x, z), dimensions={{1}}, to_apply=add
}}
"""


def softmax(ty, rows, cols):
    """`exp(x - max) / sum(exp(x - max))` over rows: jax.nn.softmax."""
    return "HloModule softmax\n" + ADD.replace("{ty}", ty) + f"""ENTRY e {{
  x = {ty}[{rows},{cols}] parameter(0)
  ninf = {ty}[] constant(-inf)
  mx = {ty}[{rows}] reduce(x, ninf), dimensions={{1}}, to_apply=max
  mb = {ty}[{rows},{cols}] broadcast(mx), dimensions={{0}}
  d = {ty}[{rows},{cols}] subtract(x, mb)
  e = {ty}[{rows},{cols}] exponential(d)
  z = {ty}[] constant(0)
  s = {ty}[{rows}] reduce(e, z), dimensions={{1}}, to_apply=add
  sb = {ty}[{rows},{cols}] broadcast(s), dimensions={{0}}
  ROOT y = {ty}[{rows},{cols}] divide(e, sb)
}}
"""


def dot(lt, rt, ot, m, n, k, batch=1):
    """`[b,m,k] x [b,k,n] -> [b,m,n]` (`batch` 1: no batch dimension): one GEMM."""
    pre, dims = (f"{batch},", "lhs_batch_dims={0}, rhs_batch_dims={0}, ") if batch > 1 else ("", "")
    c = 2 if batch > 1 else 1
    return f"""HloModule dot
ENTRY e {{
  a = {lt}[{pre}{m},{k}] parameter(0)
  b = {rt}[{pre}{k},{n}] parameter(1)
  ROOT d = {ot}[{pre}{m},{n}] dot(a, b), {dims}lhs_contracting_dims={{{c}}}, rhs_contracting_dims={{{c - 1}}}
}}
"""


def dot_nt(ty, m, n, k):
    """`[m,k] x [n,k]^T`: the rhs contracted along its minor dimension (a weight stored `[n, k]`)."""
    return f"""HloModule dotnt
ENTRY e {{
  a = {ty}[{m},{k}] parameter(0)
  b = {ty}[{n},{k}] parameter(1)
  ROOT d = {ty}[{m},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}
}}
"""


def sort_rows(ty, rows, n, with_index):
    """An ascending sort of each row (`jnp.sort`), or keys with an iota (`jnp.argsort`)."""
    lt = "LT" if ty != "s32" else "LT"
    if with_index:
        cmp = f"""cmp {{
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT l = pred[] compare(a, b), direction={lt}
}}
"""
        body = f"""  i = s32[{rows},{n}] iota(), iota_dimension=1
  ROOT s = ({ty}[{rows},{n}], s32[{rows},{n}]) sort(x, i), dimensions={{1}}, to_apply=cmp"""
    else:
        cmp = f"""cmp {{
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT l = pred[] compare(a, b), direction={lt}
}}
"""
        body = f"  ROOT s = {ty}[{rows},{n}] sort(x), dimensions={{1}}, to_apply=cmp"
    return f"HloModule sort\n{cmp}ENTRY e {{\n  x = {ty}[{rows},{n}] parameter(0)\n{body}\n}}\n"


def top_k(rows, n, k):
    """`lax.top_k` of each row."""
    return f"""HloModule topk
ENTRY e {{
  x = f32[{rows},{n}] parameter(0)
  ROOT t = (f32[{rows},{k}], s32[{rows},{k}]) topk(x), k={k}, largest=true
}}
"""


def rfft(batch, n):
    """A 2-D real FFT of `batch` `n x n` planes."""
    return f"""HloModule rfft
ENTRY e {{
  x = f32[{batch},{n},{n}] parameter(0)
  ROOT f = c64[{batch},{n},{n // 2 + 1}] fft(x), fft_type=RFFT, fft_length={{{n},{n}}}
}}
"""


def cumsum(rows, n):
    """`jnp.cumsum` along rows: a reduce-window whose window covers the prefix."""
    return "HloModule cumsum\n" + ADD.replace("{ty}", "f32") + f"""ENTRY e {{
  x = f32[{rows},{n}] parameter(0)
  z = f32[] constant(0)
  ROOT c = f32[{rows},{n}] reduce-window(x, z), window={{size=1x{n} pad=0_0x{n - 1}_0}}, to_apply=add
}}
"""


def lapack(routine, b, m, n, r=8):
    """One LAPACK custom call as JAX emits it (`f32`, `b` matrices of `m x n`, column-major
    as JAX lays them out; `b` 1: no batch dimension), on an input that keeps it on its
    normal path: a matrix made diagonally dominant for `potrf`, `getrf` and the triangle of
    `trsm` (`r` right-hand sides), `orgqr` on `geqrf`'s own result. The bench keeps only the
    call's thunk (the setup's kernels are left out, see `keep`)."""
    pre = f"{b}," if b > 1 else ""
    lay2, lay1 = ("{1,2,0}", "{1,0}") if b > 1 else ("{0,1}", "{0}")
    mat = lambda rows, cols: f"f32[{pre}{rows},{cols}]{lay2}"  # noqa: E731
    vec = lambda n_: f"f32[{pre}{n_}]{lay1}" if b > 1 else f"f32[{n_}]{{0}}"  # noqa: E731
    ints = lambda n_: f"s32[{pre}{n_}]{lay1}" if b > 1 else f"s32[{n_}]{{0}}"  # noqa: E731
    info = f"s32[{b}]{{0}}" if b > 1 else "s32[]"
    rd, cd = ("1", "2") if b > 1 else ("0", "1")
    tgt = lambda name: f'custom_call_target="lapack_s{name}_ffi", api_version=API_VERSION_TYPED_FFI'  # noqa: E731
    # a + m * I: diagonally dominant, so the factorizations take their normal path.
    dominant = f"""  ir = s32[{pre}{m},{n}] iota(), iota_dimension={rd}
  ic = s32[{pre}{m},{n}] iota(), iota_dimension={cd}
  eq = pred[{pre}{m},{n}] compare(ir, ic), direction=EQ
  big = f32[] constant({float(m)})
  zero = f32[] constant(0)
  bb = f32[{pre}{m},{n}] broadcast(big), dimensions={{}}
  zz = f32[{pre}{m},{n}] broadcast(zero), dimensions={{}}
  dg = f32[{pre}{m},{n}] select(eq, bb, zz)
  x = {mat(m, n)} add(a, dg)
"""
    body = {
        "potrf": f"""{dominant}  ROOT c = ({mat(n, n)}, {info}) custom-call(x), {tgt('potrf')}, backend_config={{uplo = 76 : ui8}}""",
        "getrf": f"""{dominant}  ROOT c = ({mat(n, n)}, {ints(n)}, {info}) custom-call(x), {tgt('getrf')}, backend_config={{}}""",
        "trsm": f"""{dominant}  rhs = {mat(n, r)} parameter(1)
  ROOT c = {mat(n, r)} custom-call(x, rhs), {tgt('trsm')}, backend_config={{diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}}""",
        "geqrf": f"""  ROOT c = ({mat(m, n)}, {vec(min(m, n))}) custom-call(a), {tgt('geqrf')}, backend_config={{}}""",
        "orgqr": f"""  q = ({mat(m, n)}, {vec(min(m, n))}) custom-call(a), {tgt('geqrf')}, backend_config={{}}
  v = {mat(m, n)} get-tuple-element(q), index=0
  t = {vec(min(m, n))} get-tuple-element(q), index=1
  ROOT c = {mat(m, n)} custom-call(v, t), {tgt('orgqr')}, backend_config={{}}""",
        "syevd": f"""  ROOT c = ({mat(n, n)}, {vec(n)}, {info}) custom-call(a), {tgt('syevd')}, backend_config={{mode = 86 : ui8, uplo = 76 : ui8}}""",
        "gesdd": f"""  ROOT c = ({mat(m, n)}, {vec(min(m, n))}, {mat(m, min(m, n))}, {mat(min(m, n), n)}, {info}) custom-call(a), {tgt('gesdd')}, backend_config={{mode = 83 : ui8}}""",
    }[routine]
    return f"HloModule {routine}\nENTRY e {{\n  a = {mat(m, n)} parameter(0)\n{body}\n}}\n"


def lapack_benches():
    """(group, name, text, flops, bytes, keep): the LAPACK calls the fresh programs make
    (Cholesky, triangular solves, LU, QR and its `Q`, symmetric eigendecomposition, SVD),
    single matrices and batches of small ones, by LAWN 41's flop counts; `keep` the label
    of the one thunk timed."""
    out = []

    def add(routine, b, m, n, flops, r=8):
        name = f"{routine} [{b}] {m}x{n}" + (f" r={r}" if routine == "trsm" else "")
        out.append(("lapack", name, lapack(routine, b, m, n, r), b * flops,
                    4 * b * m * n, f"library lapack.{routine}"))

    for b, n in ((1, 256), (1, 1024), (32, 64), (32, 256), (16, 16)):
        add("potrf", b, n, n, n ** 3 / 3)
        add("getrf", b, n, n, 2 * n ** 3 / 3)
    for b, n, r in ((1, 1024, 1), (1, 1024, 1024), (1, 256, 256), (32, 256, 8), (16, 128, 8)):
        add("trsm", b, n, n, n * n * r, r)
    for b, m, n in ((1, 256, 256), (1, 1024, 64), (32, 256, 64), (32, 64, 64), (8, 512, 128)):
        big, small = max(m, n), min(m, n)
        add("geqrf", b, m, n, 2 * big * small ** 2 - 2 * small ** 3 / 3)
        add("orgqr", b, m, n, 4 * big * small ** 2 - 2 * (big + small) * small ** 2
            + 4 * small ** 3 / 3)
    for b, n in ((1, 256), (1, 10), (32, 128), (8, 64)):
        add("syevd", b, n, n, 9 * n ** 3)
    for b, m, n in ((64, 512, 16), (16, 128, 32), (32, 128, 96), (1, 256, 256)):
        add("gesdd", b, m, n, 22 * min(m, n) ** 3)
    return out


def width(ty):
    return {"f32": 4, "f64": 8, "bf16": 2, "f16": 2, "s8": 1, "s32": 4}[ty]


def gemm_benches():
    """(group, name, text, multiply-adds, bytes): the GEMM paths of backend-cpu's dispatch
    (faer, the thin and small-row kernels, matrix-vector, the half types widened or on AMX
    tiles, the s8 GEMM), each shape's work for a GFLOP/s figure."""
    out = []

    def add(name, text, b, m, n, k, lt, rt, ot):
        macs = b * m * n * k
        moved = b * (m * k * width(lt) + k * n * width(rt) + m * n * width(ot))
        out.append(("gemm", name, text, macs, moved))

    for s in (32, 64, 128, 256, 512, 1024, 2048):
        add(f"f32 {s}^3", dot("f32", "f32", "f32", s, s, s), 1, s, s, s, "f32", "f32", "f32")
    for m, n, k in ((16, 8192, 384), (32, 1024, 1024), (8, 512, 512), (4096, 8, 288),
                    (1, 4096, 4096), (4096, 1, 4096), (65536, 64, 64), (64, 64, 65536),
                    (256, 4096, 256), (2048, 2048, 64), (128, 30000, 768)):
        add(f"f32 {m}x{n}x{k}", dot("f32", "f32", "f32", m, n, k), 1, m, n, k, "f32", "f32", "f32")
    for m, n, k in ((16, 2304, 768), (512, 512, 512)):
        add(f"f32 nt {m}x{n}x{k}", dot_nt("f32", m, n, k), 1, m, n, k, "f32", "f32", "f32")
    for b, s in ((32, 128), (64, 64), (256, 32)):
        add(f"f32 [{b}] {s}^3", dot("f32", "f32", "f32", s, s, s, b), b, s, s, s, "f32", "f32", "f32")
    # Thin and tiny products: matrix-vector products, outer products (k = 1), batches of
    # them, and narrow contractions (the shapes that read 4-8x off in the fresh programs).
    for b, m, n, k in ((1, 1, 2048, 512), (1, 4096, 1, 128), (64, 64, 1, 128), (1, 1, 1, 4096),
                       (64, 64, 128, 1), (64, 1568, 128, 1), (4096, 128, 1, 1), (1, 16, 128, 10),
                       (8, 1, 1, 64), (1, 8, 1, 4096), (1, 1, 256, 2048)):
        add(f"f32 [{b}] {m}x{n}x{k}", dot("f32", "f32", "f32", m, n, k, b), b, m, n, k,
            "f32", "f32", "f32")
    for s in (256, 1024):
        add(f"f64 {s}^3", dot("f64", "f64", "f64", s, s, s), 1, s, s, s, "f64", "f64", "f64")
    for ty in ("bf16", "f16"):
        for s in (128, 512, 1024, 2048):
            add(f"{ty} {s}^3", dot(ty, ty, ty, s, s, s), 1, s, s, s, ty, ty, ty)
        add(f"{ty}->f32 1024^3", dot(ty, ty, "f32", 1024, 1024, 1024), 1, 1024, 1024, 1024,
            ty, ty, "f32")
        add(f"{ty} 16x8192x384", dot(ty, ty, ty, 16, 8192, 384), 1, 16, 8192, 384, ty, ty, ty)
        add(f"{ty} [32] 128^3", dot(ty, ty, ty, 128, 128, 128, 32), 32, 128, 128, 128, ty, ty, ty)
    for s in (256, 1024):
        add(f"s8 {s}^3", dot("s8", "s8", "s32", s, s, s), 1, s, s, s, "s8", "s8", "s32")
    add("s8 16x4096x1024", dot("s8", "s8", "s32", 16, 4096, 1024), 1, 16, 4096, 1024, "s8", "s8", "s32")
    return out


def library_benches():
    """(group, name, text, elements, bytes): sorts, top-k, an FFT and a cumulative sum."""
    out = []
    for rows, n in ((1, 1 << 20), (64, 4096), (8, 32000)):
        out.append(("library", f"sort f32 [{rows},{n}]", sort_rows("f32", rows, n, False),
                    rows * n, 8 * rows * n))
        out.append(("library", f"argsort f32 [{rows},{n}]", sort_rows("f32", rows, n, True),
                    rows * n, 16 * rows * n))
    for rows, n, k in ((8, 32000, 40), (128, 4096, 8), (1024, 1024, 2)):
        out.append(("library", f"topk [{rows},{n}] k={k}", top_k(rows, n, k), rows * n, 4 * rows * n))
    for b, n in ((16, 256), (4, 1024)):
        out.append(("library", f"rfft [{b},{n},{n}]", rfft(b, n), b * n * n, 12 * b * n * n))
    for rows, n in ((2048, 2048), (8, 32000)):
        out.append(("library", f"cumsum [{rows},{n}]", cumsum(rows, n), rows * n, 8 * rows * n))
    return out


def benches():
    """(group, name, module text, elements, bytes moved)."""
    out = []
    for n in (1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24):
        out.append(("stream", f"f32 stream {n * 8 / 1e6:.2f} MB", stream("f32", n), n, 8 * n))
    for ty in ("f32", "f64"):
        for op in ("exponential", "log", "tanh", "logistic", "sine"):
            for n in (1 << 16, 1 << 20):
                out.append(("unary", f"{ty} {op} {n}", unary(op, ty, n), n, 2 * n * width(ty)))
    for rows, cols in ((256, 256), (4096, 1024), (256, 32768), (1024, 4096)):
        n = rows * cols
        out.append(("rowsum", f"f32 row sum {rows}x{cols}", row_sum("f32", rows, cols), n, 4 * n))
        out.append(("softmax", f"f32 softmax {rows}x{cols}", softmax("f32", rows, cols), n, 8 * n))
    out.append(("softmax", "f64 softmax 1024x4096", softmax("f64", 1024, 4096), 1 << 22, 8 << 23))
    return out + gemm_benches() + library_benches() + lapack_benches()


def run_one(hloc, text, repeat, tmp, core=None):
    """[(label, best call seconds, model seconds per call)] of one module's thunks."""
    hlo = os.path.join(tmp, "m.hlo")
    with open(hlo, "w") as f:
        f.write(text)
    prof, trace = os.path.join(tmp, "p.json"), os.path.join(tmp, "t.json")
    env = dict(os.environ, HLOC_CACHE_DIR=os.path.join(tmp, "cache"))
    pin = ["taskset", "-c", str(core)] if core is not None else []
    p = subprocess.run(pin + [hloc, "run", hlo, "--repeat", str(repeat), "--profile-json", prof,
                        "--trace", trace], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip()[-300:])
    profile = json.load(open(prof))
    events = json.load(open(trace))
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    best = {}
    for e in events:
        if e.get("ph") == "X":
            best[e["name"]] = min(best.get(e["name"], math.inf), e["dur"] * 1e-6)
    out = []
    for t in profile["thunks"]:
        calls = max(t["calls"], 1)
        model = t["model_ms"] * 1e-3 / calls if t["model_ms"] is not None else None
        out.append((t["label"], best.get(t["label"], t["ms"] * 1e-3 / calls), model))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("hloc", nargs="?", default=os.path.join(ROOT, "target/release/hloc"))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--core", type=int,
                    help="pin each run to this core (the pool then has one thread): per-core "
                    "figures, and the best call is less often one another process interrupted")
    ap.add_argument("--only", help="comma-separated groups (stream, unary, rowsum, softmax, "
                    "gemm, library, lapack)")
    ap.add_argument("--match", help="keep only benchmarks whose name contains this")
    ap.add_argument("--json", help="write every benchmark's rows here")
    a = ap.parse_args()
    todo = benches()
    if a.only:
        keep = set(a.only.split(","))
        todo = [b for b in todo if b[0] in keep]
    if a.match:
        todo = [b for b in todo if a.match in b[1]]
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"(cores: {os.cpu_count()})")
    # A GEMM's and a LAPACK call's column is GFLOP/s (a GEMM's 2 flops per multiply-add,
    # LAPACK's LAWN 41 counts), the others' ns per element.
    print(f"{'benchmark':32} {'thunks':>6} {'best ms':>9} {'model ms':>9} {'m/meas':>7} "
          f"{'ns/el|GF/s':>10} {'GB/s':>7}  thunks")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for group, name, text, elems, moved, *keep in todo:
            try:
                rows = run_one(a.hloc, text, a.repeat, tmp, a.core)
            except RuntimeError as e:
                print(f"{name:32} failed: {e}")
                continue
            rows = [r for r in rows if not r[0].startswith("copy")]
            if keep:
                rows = [r for r in rows if r[0].startswith(keep[0])]
            best = sum(r[1] for r in rows)
            model = sum(r[2] for r in rows) if all(r[2] is not None for r in rows) else None
            ratio = f"{model / best:7.3f}" if model and best > 0 else "      -"
            mtxt = f"{model * 1e3:9.4f}" if model is not None else "        -"
            rate = (2 * elems / best / 1e9 if group == "gemm" else elems / best / 1e9
                    if group == "lapack" else best / elems * 1e9)
            labels = "; ".join(r[0] for r in rows)
            print(f"{name:32} {len(rows):>6} {best * 1e3:9.4f} {mtxt} {ratio} "
                  f"{rate:10.3f} {moved / best / 1e9:7.2f}  {labels}")
            sys.stdout.flush()
            results.append({"group": group, "name": name, "best_s": best, "model_s": model,
                            "work": elems, "bytes": moved,
                            "thunks": [{"label": r[0], "best_s": r[1], "model_s": r[2]}
                                       for r in rows]})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"load": os.getloadavg(), "core": a.core, "results": results}, f, indent=1)
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
