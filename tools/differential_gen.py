"""Random HLO modules for tools/differential_campaign.py (issue 36's quality bar).

Each family writes one module as HLO text with its inputs, drawn from a `random.Random`:
the same seed gives the same module and inputs, so a disagreement is reproduced by its
seed. The families cover what issue 36's campaign found and what its quality bar names:
variadic reduces (argmax) incl. zero-sized ones, TOTALORDER sorts over NaN payloads,
nested tuples through loops and conditionals, convolutions over padding and dilation
holes with non-finite kernels, and elementwise / reduce / dot / gather / scatter / while
/ shape ops. Inputs mix ordinary values with the special ones (NaN with payloads, ±inf,
±0, subnormals) where the op's result is defined for them.

A module is `Case(family, text, inputs, notes)`; `inputs` are numpy arrays in parameter
order (keys in0, in1, ... in the .npz). Only the text format XLA's parser and hloc's
accept is written; every computation is defined before its use.
"""

import dataclasses
import random

import ml_dtypes
import numpy as np

NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16,
      "s32": np.int32, "s8": np.int8, "pred": np.bool_}
FLOATS = ("f32", "f16", "bf16", "f64")


@dataclasses.dataclass
class Case:
    family: str
    text: str
    inputs: list
    notes: str = ""
    # What an explanation of a disagreement needs to recompute (a convolution's window).
    meta: dict = dataclasses.field(default_factory=dict)


def shape_text(dtype, dims):
    return f"{dtype}[{','.join(str(d) for d in dims)}]"


class Module:
    """HLO text under construction: helper computations, then the ENTRY's instructions."""

    def __init__(self, rng):
        self.rng = rng
        self.comps = []
        self.lines = []
        self.params = []
        self.count = 0
        self.types = {}

    def name(self, stem="v"):
        self.count += 1
        return f"{stem}.{self.count}"

    def param(self, dtype, dims, array):
        n = self.name("p")
        self.lines.append(f"  {n} = {shape_text(dtype, dims)} parameter({len(self.params)})")
        self.params.append(array)
        self.types[n] = (dtype, tuple(dims))
        return n

    def op(self, dtype, dims, rhs, stem="v"):
        n = self.name(stem)
        self.lines.append(f"  {n} = {shape_text(dtype, dims)} {rhs}")
        self.types[n] = (dtype, tuple(dims))
        return n

    def raw(self, type_text, rhs, stem="t"):
        n = self.name(stem)
        self.lines.append(f"  {n} = {type_text} {rhs}")
        return n

    def const(self, dtype, value):
        return self.op(dtype, (), f"constant({value})", "c")

    def binary_comp(self, dtype, opcode):
        """A scalar computation (dtype, dtype) -> dtype applying `opcode`."""
        n = f"{opcode}_{dtype}.{len(self.comps)}"
        self.comps.append(
            f"{n} {{\n  a = {dtype}[] parameter(0)\n  b = {dtype}[] parameter(1)\n"
            f"  ROOT r = {dtype}[] {opcode}(a, b)\n}}\n")
        return n

    def text(self, root):
        body = "\n".join(self.lines)
        body = body.replace(f"  {root} =", f"  ROOT {root} =", 1)
        return "HloModule campaign\n\n" + "\n".join(self.comps) + f"\nENTRY main {{\n{body}\n}}\n"


# ---------------------------------------------------------------------------- inputs

SPECIAL_F32_BITS = [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FA00000, 0x7FC00123,
                    0x7F800000, 0xFF800000, 0x00000000, 0x80000000, 0x00000001, 0x80000001]


def special_values(dtype):
    """NaNs with payloads (quiet and signaling), ±inf, ±0 and the smallest subnormals."""
    if dtype == "f32":
        return np.array(SPECIAL_F32_BITS, np.uint32).view(np.float32)
    if dtype == "f64":
        bits = [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0x7FF4000000000000,
                0x7FF0000000000000, 0xFFF0000000000000, 0, 1 << 63, 1]
        return np.array(bits, np.uint64).view(np.float64)
    bits = [0x7E00, 0xFE00, 0x7C01, 0x7D00, 0x7C00, 0xFC00, 0, 0x8000, 1] if dtype == "f16" else \
        [0x7FC0, 0xFFC0, 0x7F81, 0x7FA0, 0x7F80, 0xFF80, 0, 0x8000, 1]
    return np.array(bits, np.uint16).view(NP[dtype])


def array(rng, dtype, dims, special=0.0, lo=-3.0, hi=3.0, ints=(-20, 20)):
    """A random array; a `special` share of float elements are special values."""
    n = int(np.prod(dims)) if dims else 1
    if dtype == "pred":
        a = np.array([rng.random() < 0.5 for _ in range(n)], np.bool_)
    elif dtype in ("s32", "s8"):
        a = np.array([rng.randint(*ints) for _ in range(n)], NP[dtype])
    else:
        vals = [rng.uniform(lo, hi) for _ in range(n)]
        # Some repeated values, so ties in sorts, argmaxes and compares happen.
        if n > 2:
            for _ in range(n // 4):
                vals[rng.randrange(n)] = vals[rng.randrange(n)]
        a = np.array(vals, np.float64).astype(NP[dtype])
        if special > 0:
            sp = special_values(dtype)
            for i in range(n):
                if rng.random() < special:
                    a[i] = sp[rng.randrange(len(sp))]
    return a.reshape(dims)


def dims_of(rng, rank, lo=1, hi=6, zero=0.0):
    return [0 if rng.random() < zero else rng.randint(lo, hi) for _ in range(rank)]


# ---------------------------------------------------------------------------- families

FLOAT_UNARY = ["negate", "abs", "exponential", "log", "tanh", "sqrt", "floor", "ceil", "sign",
               "logistic", "sine", "cosine", "round-nearest-even", "exponential-minus-one",
               "log-plus-one", "rsqrt", "round-nearest-afz", "cbrt"]
FLOAT_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "atan2",
                "power", "remainder"]
INT_UNARY = ["negate", "abs", "not", "sign"]
INT_BINARY = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and",
              "or", "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical"]


def elementwise(rng):
    m = Module(rng)
    dtype = rng.choice(FLOATS + ("s32",))
    # Some shapes long enough for the vector loops (16 f32 lanes) and their remainders.
    dims = dims_of(rng, rng.randint(0, 3), hi=rng.choice([6, 6, 40]), zero=0.05)
    special = rng.choice([0.0, 0.1, 0.3]) if dtype != "s32" else 0
    vals = [m.param(dtype, dims, array(rng, dtype, dims, special, ints=(-40, 40)))
            for _ in range(rng.randint(1, 3))]
    if dtype == "s32":
        # Division by zero, INT_MIN / -1 and shifts past the width are defined in HLO.
        vals.append(m.param(dtype, dims, array(rng, dtype, dims, ints=(-2, 40))))
    for _ in range(rng.randint(2, 7)):
        kind = rng.random()
        if kind < 0.4:
            ops = INT_UNARY if dtype == "s32" else FLOAT_UNARY
            vals.append(m.op(dtype, dims, f"{rng.choice(ops)}({rng.choice(vals)})"))
        elif kind < 0.8:
            ops = INT_BINARY if dtype == "s32" else FLOAT_BINARY
            vals.append(m.op(dtype, dims,
                             f"{rng.choice(ops)}({rng.choice(vals)}, {rng.choice(vals)})"))
        elif kind < 0.9:
            d = rng.choice(["LT", "GT", "EQ", "NE", "GE", "LE"])
            a, b = rng.choice(vals), rng.choice(vals)
            c = m.op("pred", dims, f"compare({a}, {b}), direction={d}")
            vals.append(m.op(dtype, dims, f"select({c}, {rng.choice(vals)}, {rng.choice(vals)})"))
        else:
            lo, hi = sorted([rng.choice(vals), rng.choice(vals)])
            vals.append(m.op(dtype, dims, f"clamp({lo}, {rng.choice(vals)}, {hi})"))
    if dtype in ("f16", "bf16") and rng.random() < 0.5:
        vals.append(m.op("f32", dims, f"convert({vals[-1]})"))
    root = vals[-1]
    if rng.random() < 0.3:
        last, prev = (shape_text(*m.types[v]) for v in vals[-2:][::-1])
        root = m.raw(f"({last}, {prev})", f"tuple({vals[-1]}, {vals[-2]})")
    return Case("elementwise", m.text(root), m.params, f"{dtype}{dims}")


REDUCERS = {"add": "0", "maximum": "-inf", "minimum": "inf", "multiply": "1"}


def reduce(rng):
    m = Module(rng)
    dtype = rng.choice(FLOATS + ("s32", "pred"))
    rank = rng.randint(1, 3)
    dims = dims_of(rng, rank, hi=rng.choice([6, 6, 40]), zero=0.15)
    red = sorted(rng.sample(range(rank), rng.randint(1, rank)))
    x = m.param(dtype, dims, array(rng, dtype, dims, rng.choice([0, 0, 0.1]), lo=-2, hi=2,
                                   ints=(-5, 5)))
    if dtype == "pred":
        op, init = rng.choice([("and", "true"), ("or", "false")])
    else:
        op = rng.choice(list(REDUCERS))
        init = REDUCERS[op]
        if dtype == "s32" and init in ("inf", "-inf"):
            init = "2147483647" if init == "inf" else "-2147483648"
        if rng.random() < 0.2 and dtype != "s32":
            init = rng.choice(["nan", "2.5", "-0"])
    c = m.const(dtype, init)
    out = [d for i, d in enumerate(dims) if i not in red]
    comp = m.binary_comp(dtype, op)
    r = m.op(dtype, out, f"reduce({x}, {c}), dimensions={{{','.join(map(str, red))}}}, "
             f"to_apply={comp}")
    meta = {"op": op, "init": init, "dims": red, "identity": init == REDUCERS.get(op, init)}
    return Case("reduce", m.text(r), m.params, f"{op} {dtype}{dims} over {red}", meta)


def argmax_comp(m, dtype):
    """Prefer NaN, then the larger value, then the lower index: a total order, so the
    answer does not depend on the reduction's order."""
    n = f"argmax_{dtype}.{len(m.comps)}"
    m.comps.append(f"""{n} {{
  av = {dtype}[] parameter(0)
  ai = s32[] parameter(1)
  bv = {dtype}[] parameter(2)
  bi = s32[] parameter(3)
  an = pred[] compare(av, av), direction=NE
  bn = pred[] compare(bv, bv), direction=NE
  one_nan = pred[] xor(an, bn)
  both_nan = pred[] and(an, bn)
  eq = pred[] compare(av, bv), direction=EQ
  tie = pred[] or(both_nan, eq)
  lower = pred[] compare(ai, bi), direction=LT
  gt = pred[] compare(av, bv), direction=GT
  tie_pick = pred[] and(tie, lower)
  not_tie = pred[] not(tie)
  gt_pick = pred[] and(not_tie, gt)
  same_kind = pred[] or(tie_pick, gt_pick)
  not_one = pred[] not(one_nan)
  by_value = pred[] and(not_one, same_kind)
  by_nan = pred[] and(one_nan, an)
  take_a = pred[] or(by_nan, by_value)
  v = {dtype}[] select(take_a, av, bv)
  i = s32[] select(take_a, ai, bi)
  ROOT r = ({dtype}[], s32[]) tuple(v, i)
}}
""")
    return n


def argmax(rng):
    m = Module(rng)
    dtype = rng.choice(("f32", "f16", "bf16", "s32"))
    rank = rng.randint(1, 3)
    dims = dims_of(rng, rank, hi=rng.choice([6, 6, 40]), zero=0.25)
    axis = rng.randrange(rank)
    x = m.param(dtype, dims, array(rng, dtype, dims, rng.choice([0, 0.1]), ints=(-3, 3)))
    idx = m.op("s32", dims, f"iota(), iota_dimension={axis}")
    init = m.const(dtype, "-inf" if dtype != "s32" else "-2147483648")
    zero = m.const("s32", rng.choice(["0", "-1"]))
    out = [d for i, d in enumerate(dims) if i != axis]
    comp = argmax_comp(m, dtype)
    r = m.raw(f"({shape_text(dtype, out)}, {shape_text('s32', out)})",
              f"reduce({x}, {idx}, {init}, {zero}), dimensions={{{axis}}}, to_apply={comp}")
    return Case("argmax", m.text(r), m.params, f"{dtype}{dims} axis {axis}")


def sort(rng):
    m = Module(rng)
    dtype = rng.choice(FLOATS)
    rank = rng.randint(1, 2)
    dims = dims_of(rng, rank, hi=rng.choice([9, 9, 70]), zero=0.05)
    axis = rng.randrange(rank)
    keys = m.param(dtype, dims, array(rng, dtype, dims, rng.choice([0.2, 0.5])))
    direction = rng.choice(["LT", "GT"])
    n = f"cmp.{len(m.comps)}"
    with_values = rng.random() < 0.6
    extra = "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n" if with_values else ""
    m.comps.append(f"{n} {{\n  a = {dtype}[] parameter(0)\n  b = {dtype}[] parameter(1)\n{extra}"
                   f"  ROOT r = pred[] compare(a, b), direction={direction}, type=TOTALORDER\n}}\n")
    if with_values:
        idx = m.op("s32", dims, f"iota(), iota_dimension={axis}")
        r = m.raw(f"({shape_text(dtype, dims)}, {shape_text('s32', dims)})",
                  f"sort({keys}, {idx}), dimensions={{{axis}}}, is_stable=true, to_apply={n}")
    else:
        r = m.op(dtype, dims, f"sort({keys}), dimensions={{{axis}}}, is_stable=true, to_apply={n}")
    return Case("sort", m.text(r), m.params, f"{dtype}{dims} axis {axis} {direction}",
                {"axis": axis})


def tuples(rng):
    """Nested tuples in a while loop's state, a conditional's result and the root."""
    m = Module(rng)
    dims = dims_of(rng, rng.randint(1, 2))
    f = shape_text("f32", dims)
    a = m.param("f32", dims, array(rng, "f32", dims))
    b = m.param("f32", dims, array(rng, "f32", dims))
    trips = rng.randint(0, 4)
    state = f"(s32[], ({f}, ({f})), {f})"
    inner = f"({f}, ({f}))"
    m.comps.append(f"""cond.0 {{
  p = {state} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant({trips})
  ROOT c = pred[] compare(i, n), direction=LT
}}

body.0 {{
  p = {state} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  t = {inner} get-tuple-element(p), index=1
  x = {f} get-tuple-element(t), index=0
  u = ({f}) get-tuple-element(t), index=1
  y = {f} get-tuple-element(u), index=0
  z = {f} get-tuple-element(p), index=2
  half = f32[] constant(0.5)
  hb = {f} broadcast(half), dimensions={{}}
  x1 = {f} multiply(x, hb)
  x2 = {f} add(x1, y)
  y1 = {f} {rng.choice(['tanh', 'negate', 'sine'])}(x)
  z1 = {f} maximum(z, x2)
  nest1 = ({f}) tuple(y1)
  t1 = {inner} tuple(x2, nest1)
  ROOT s = {state} tuple(i1, t1, z1)
}}

then.0 {{
  p = {inner} parameter(0)
  x = {f} get-tuple-element(p), index=0
  e = {f} exponential(x)
  u = ({f}) get-tuple-element(p), index=1
  ROOT r = ({f}, ({f}, ({f}))) tuple(e, p)
}}

else.0 {{
  p = {f} parameter(0)
  n = {f} negate(p)
  u = ({f}) tuple(p)
  t = {inner} tuple(n, u)
  ROOT r = ({f}, ({f}, ({f}))) tuple(p, t)
}}
""")
    zero = m.const("s32", "0")
    u = m.raw(f"({f})", f"tuple({b})")
    t = m.raw(inner, f"tuple({a}, {u})")
    s = m.raw(state, f"tuple({zero}, {t}, {b})")
    w = m.raw(state, f"while({s}), condition=cond.0, body=body.0")
    wt = m.raw(inner, f"get-tuple-element({w}), index=1")
    wz = m.op("f32", dims, f"get-tuple-element({w}), index=2")
    p = m.param("pred", [], np.array(rng.random() < 0.5))
    c = m.raw(f"({f}, ({f}, ({f})))",
              f"conditional({p}, {wt}, {wz}), true_computation=then.0, false_computation=else.0")
    i = m.raw("s32[]", f"get-tuple-element({w}), index=0")
    r = m.raw(f"(({f}, ({f}, ({f}))), s32[], {inner})", f"tuple({c}, {i}, {wt})")
    return Case("tuples", m.text(r), m.params, f"{dims} trips {trips}")


def conv_out(n, w, stride, lo, hi, ld, rd):
    padded = (n - 1) * ld + 1 + lo + hi if n > 0 else lo + hi
    wd = (w - 1) * rd + 1
    return max(0, (padded - wd) // stride + 1) if padded >= wd else 0


def convolution(rng):
    m = Module(rng)
    dtype = rng.choice(("f32", "f32", "f16"))
    spatial = rng.randint(1, 2)
    groups = rng.choice([1, 1, 2])
    batch, ci, co = rng.randint(1, 2), rng.randint(1, 3), rng.randint(1, 2) * groups
    while True:
        n = [rng.randint(1, 7) for _ in range(spatial)]
        w = [rng.randint(1, 3) for _ in range(spatial)]
        st = [rng.randint(1, 2) for _ in range(spatial)]
        lo = [rng.randint(0, 2) for _ in range(spatial)]
        hi = [rng.randint(0, 2) for _ in range(spatial)]
        ld = [rng.choice([1, 1, 2]) for _ in range(spatial)]
        rd = [rng.choice([1, 1, 2]) for _ in range(spatial)]
        out = [conv_out(*a) for a in zip(n, w, st, lo, hi, ld, rd)]
        if all(o > 0 for o in out):
            break
    sp = "01"[:spatial]
    lhs_dims = [batch] + n + [ci * groups]
    rhs_dims = w + [ci, co]
    out_dims = [batch] + out + [co]
    x = m.param(dtype, lhs_dims, array(rng, dtype, lhs_dims))
    k_special = rng.choice([0.0, 0.2])
    k = array(rng, dtype, rhs_dims)
    if k_special:
        flat = k.reshape(-1)
        for i in range(flat.size):
            if rng.random() < k_special:
                flat[i] = rng.choice([np.inf, -np.inf, np.nan])
    kk = m.param(dtype, rhs_dims, k)
    x_ = "x".join
    window = (f"size={x_(map(str, w))} stride={x_(map(str, st))} "
              f"pad={x_(f'{a}_{b}' for a, b in zip(lo, hi))} "
              f"lhs_dilate={x_(map(str, ld))} rhs_dilate={x_(map(str, rd))}")
    r = m.op(dtype, out_dims,
             f"convolution({x}, {kk}), window={{{window}}}, dim_labels=b{sp}f_{sp}io->b{sp}f, "
             f"feature_group_count={groups}")
    note = f"{dtype} {window} groups {groups}" + (" non-finite kernel" if k_special else "")
    meta = {"stride": st, "lo": lo, "hi": hi, "lhs_dilate": ld, "rhs_dilate": rd,
            "groups": groups}
    return Case("convolution", m.text(r), m.params, note, meta)


def dot(rng):
    m = Module(rng)
    kind = rng.choice(["f32", "f32", "f64", "bf16", "s32", "s8"])
    in_t = kind
    out_t = {"s8": "s32"}.get(kind, kind)
    nb = rng.randint(0, 1)
    b = dims_of(rng, nb, hi=3)
    mm, nn, kk = rng.randint(1, 6), rng.randint(1, 6), rng.randint(0 if rng.random() < .1 else 1, 8)
    lhs, rhs = b + [mm, kk], b + [kk, nn]
    lc, rc = nb + 1, nb
    if rng.random() < 0.5:  # a transposed rhs
        rhs, rc = b + [nn, kk], nb + 1
    x = m.param(in_t, lhs, array(rng, in_t, lhs, ints=(-100, 100) if in_t == "s8" else (-20, 20)))
    y = m.param(in_t, rhs, array(rng, in_t, rhs, ints=(-100, 100) if in_t == "s8" else (-20, 20)))
    bd = ",".join(map(str, range(nb)))
    r = m.op(out_t, b + [mm, nn],
             f"dot({x}, {y}), lhs_batch_dims={{{bd}}}, lhs_contracting_dims={{{lc}}}, "
             f"rhs_batch_dims={{{bd}}}, rhs_contracting_dims={{{rc}}}")
    return Case("dot", m.text(r), m.params, f"{in_t}->{out_t} lhs {lhs} rhs {rhs}")


def gather(rng):
    m = Module(rng)
    dtype = rng.choice(("f32", "s32", "bf16"))
    n, d = rng.randint(1, 6), rng.randint(1, 5)
    k, s = rng.randint(0 if rng.random() < .1 else 1, 6), rng.randint(1, d)
    x = m.param(dtype, [n, d], array(rng, dtype, [n, d]))
    # Starts past either end are clamped into the operand.
    idx = np.array([[rng.randint(-2, n + 2), rng.randint(-2, d + 2)] for _ in range(k)],
                   np.int32).reshape(k, 2)
    i = m.param("s32", [k, 2], idx)
    r = m.op(dtype, [k, s], f"gather({x}, {i}), offset_dims={{1}}, collapsed_slice_dims={{0}}, "
             f"start_index_map={{0,1}}, index_vector_dim=1, slice_sizes={{1,{s}}}")
    return Case("gather", m.text(r), m.params, f"{dtype}[{n},{d}] {k} starts, slice {s}")


def scatter(rng):
    m = Module(rng)
    dtype = rng.choice(("f32", "s32"))
    n, d, k = rng.randint(1, 6), rng.randint(1, 4), rng.randint(0, 6)
    x = m.param(dtype, [n, d], array(rng, dtype, [n, d]))
    op = rng.choice(["add", "maximum", "assign"])
    if op == "assign":  # distinct rows: the order of duplicate writes is not defined
        rows = rng.sample(range(-2, n + 2), min(k, n + 4))
        k = len(rows)
    else:
        rows = [rng.randint(-2, n + 1) for _ in range(k)]
    i = m.param("s32", [k, 1], np.array(rows, np.int32).reshape(k, 1))
    # Integer updates for add, so the order of duplicate updates cannot change the sum.
    u = m.param(dtype, [k, d], array(rng, "s32" if op == "add" else dtype, [k, d])
                .astype(NP[dtype]))
    if op == "assign":
        comp = f"assign.{len(m.comps)}"
        m.comps.append(f"{comp} {{\n  a = {dtype}[] parameter(0)\n  b = {dtype}[] parameter(1)\n"
                       f"  ROOT r = {dtype}[] copy(b)\n}}\n")
    else:
        comp = m.binary_comp(dtype, op)
    r = m.op(dtype, [n, d], f"scatter({x}, {i}, {u}), update_window_dims={{1}}, "
             f"inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, "
             f"index_vector_dim=1, to_apply={comp}")
    return Case("scatter", m.text(r), m.params, f"{op} {dtype}[{n},{d}] rows {rows}")


def while_loop(rng):
    """A counted loop writing row i of a buffer from a running value (dynamic-update-slice,
    dynamic-slice with the counter), the trip count a parameter."""
    m = Module(rng)
    n, d = rng.randint(1, 5), rng.randint(1, 4)
    trips = rng.randint(0, n + 2)
    f, row = f"f32[{n},{d}]", f"f32[1,{d}]"
    state = f"(s32[], {f}, f32[{d}], s32[])"
    m.comps.append(f"""cond.0 {{
  p = {state} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=3
  ROOT c = pred[] compare(i, n), direction=LT
}}

body.0 {{
  p = {state} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  buf = {f} get-tuple-element(p), index=1
  v = f32[{d}] get-tuple-element(p), index=2
  n = s32[] get-tuple-element(p), index=3
  zero = s32[] constant(0)
  prev = {row} dynamic-slice(buf, i, zero), dynamic_slice_sizes={{1,{d}}}
  pv = f32[{d}] reshape(prev)
  v1 = f32[{d}] {rng.choice(['add', 'multiply', 'maximum', 'subtract'])}(v, pv)
  v2 = f32[{d}] {rng.choice(['tanh', 'sine', 'negate', 'exponential'])}(v1)
  r = {row} reshape(v2)
  buf1 = {f} dynamic-update-slice(buf, r, i, zero)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT s = {state} tuple(i1, buf1, v2, n)
}}
""")
    b = m.param("f32", [n, d], array(rng, "f32", [n, d]))
    v = m.param("f32", [d], array(rng, "f32", [d]))
    t = m.param("s32", [], np.array(trips, np.int32))
    zero = m.const("s32", "0")
    s = m.raw(state, f"tuple({zero}, {b}, {v}, {t})")
    w = m.raw(state, f"while({s}), condition=cond.0, body=body.0")
    o = m.op("f32", [n, d], f"get-tuple-element({w}), index=1")
    return Case("while", m.text(o), m.params, f"[{n},{d}] trips {trips} (row index clamps past n)")


def shape_ops(rng):
    m = Module(rng)
    dtype = rng.choice(("f32", "s32", "f16"))
    dims = dims_of(rng, 2, hi=6, zero=0.1)
    x = m.param(dtype, dims, array(rng, dtype, dims, rng.choice([0, 0.1])))
    which = rng.choice(["pad", "slice", "concat", "reverse", "transpose", "reduce-window",
                        "dynamic-slice", "dus", "broadcast"])
    if which == "pad":
        cfg = [(rng.randint(-1, 2), rng.randint(-1, 2), rng.randint(0, 2)) for _ in dims]
        out = [lo + hi + dd + max(dd - 1, 0) * it for (lo, hi, it), dd in zip(cfg, dims)]
        if any(o < 0 for o in out):
            cfg = [(0, 1, 0) for _ in dims]
            out = [dd + 1 for dd in dims]
        v = m.const(dtype, rng.choice(["0", "-1", "7"]))
        padding = "x".join(f"{a}_{b}_{c}" for a, b, c in cfg)
        r = m.op(dtype, out, f"pad({x}, {v}), padding={padding}")
    elif which == "slice":
        sl, out = [], []
        for dd in dims:
            a = rng.randint(0, dd)
            b = rng.randint(a, dd)
            s = rng.randint(1, 3)
            sl.append(f"[{a}:{b}:{s}]")
            out.append((b - a + s - 1) // s)
        r = m.op(dtype, out, f"slice({x}), slice={{{', '.join(sl)}}}")
    elif which == "concat":
        ax = rng.randrange(2)
        d2 = list(dims)
        d2[ax] = rng.randint(0, 4)
        y = m.param(dtype, d2, array(rng, dtype, d2))
        out = list(dims)
        out[ax] = 2 * dims[ax] + d2[ax]
        r = m.op(dtype, out, f"concatenate({x}, {y}, {x}), dimensions={{{ax}}}")
    elif which == "reverse":
        r = m.op(dtype, dims, f"reverse({x}), dimensions={{{rng.choice(['0', '1', '0,1'])}}}")
    elif which == "transpose":
        r = m.op(dtype, dims[::-1], f"transpose({x}), dimensions={{1,0}}")
    elif which == "reduce-window":
        w = [rng.randint(1, 3) for _ in dims]
        st = [rng.randint(1, 2) for _ in dims]
        pads = [(rng.randint(0, 1), rng.randint(0, 1)) for _ in dims]
        out = [conv_out(dd, ww, s, lo, hi, 1, 1) for dd, ww, s, (lo, hi) in zip(dims, w, st, pads)]
        op = rng.choice(["add", "maximum"])
        init = {"add": "0", "maximum": "-inf" if dtype != "s32" else "-2147483648"}[op]
        c = m.const(dtype, init)
        comp = m.binary_comp(dtype, op)
        window = (f"size={'x'.join(map(str, w))} stride={'x'.join(map(str, st))} "
                  f"pad={'x'.join(f'{a}_{b}' for a, b in pads)}")
        r = m.op(dtype, out, f"reduce-window({x}, {c}), window={{{window}}}, to_apply={comp}")
    elif which in ("dynamic-slice", "dus"):
        sizes = [rng.randint(0, dd) for dd in dims]
        starts = [m.param("s32", [], np.array(rng.randint(-3, dd + 3), np.int32)) for dd in dims]
        if which == "dynamic-slice":
            r = m.op(dtype, sizes, f"dynamic-slice({x}, {', '.join(starts)}), "
                     f"dynamic_slice_sizes={{{','.join(map(str, sizes))}}}")
        else:
            u = m.param(dtype, sizes, array(rng, dtype, sizes))
            r = m.op(dtype, dims, f"dynamic-update-slice({x}, {u}, {', '.join(starts)})")
    else:
        extra = rng.randint(1, 3)
        out = [extra] + list(dims)
        r = m.op(dtype, out, f"broadcast({x}), dimensions={{1,2}}")
    return Case("shape_ops", m.text(r), m.params, f"{which} {dtype}{dims}")


def fusion(rng):
    """What fusion joins: elementwise chains, reductions broadcast back (softmax-like),
    transposes, on shapes long enough for vector loops and a final reduction."""
    m = Module(rng)
    dtype = rng.choice(("f32", "f32", "f64"))
    rank = rng.randint(2, 3)
    dims = [rng.choice([1, 3, 8, 16, 17, 33, 64]) for _ in range(rank)]
    while int(np.prod(dims)) > 40000:
        dims[rng.randrange(rank)] = 8
    special = rng.choice([0.0, 0.0, 0.02])
    pool = {tuple(dims): [m.param(dtype, dims, array(rng, dtype, dims, special))
                          for _ in range(rng.randint(1, 2))]}
    cur = pool[tuple(dims)][-1]
    # The ops again as numpy can run them (tools/differential_explain.py's own evaluation):
    # (result, op, operands, attribute).
    prog = []
    for _ in range(rng.randint(3, 8)):
        same = pool.setdefault(tuple(dims), [cur])
        kind = rng.random()
        if kind < 0.3:
            op = rng.choice(FLOAT_UNARY[:12])
            new = m.op(dtype, dims, f"{op}({cur})")
            prog.append((new, op, [cur], None))
        elif kind < 0.55:
            op = rng.choice(["add", "subtract", "multiply", "maximum", "minimum", "divide"])
            other = rng.choice(same)
            new = m.op(dtype, dims, f"{op}({cur}, {other})")
            prog.append((new, op, [cur, other], None))
        elif kind < 0.8:
            d = rng.randrange(rank)
            op = rng.choice(["add", "maximum"])
            c = m.const(dtype, REDUCERS[op])
            keep = [x for i, x in enumerate(dims) if i != d]
            r = m.op(dtype, keep, f"reduce({cur}, {c}), dimensions={{{d}}}, "
                     f"to_apply={m.binary_comp(dtype, op)}")
            prog.append((r, "reduce-" + op, [cur], d))
            b = m.op(dtype, dims, f"broadcast({r}), dimensions="
                     f"{{{','.join(str(i) for i in range(rank) if i != d)}}}")
            prog.append((b, "broadcast", [r], (d, list(dims))))
            op = rng.choice(['subtract', 'divide', 'add'])
            new = m.op(dtype, dims, f"{op}({cur}, {b})")
            prog.append((new, op, [cur, b], None))
        else:
            perm = list(range(rank))
            rng.shuffle(perm)
            dims = [dims[i] for i in perm]
            new = m.op(dtype, dims, f"transpose({cur}), dimensions={{{','.join(map(str, perm))}}}")
            prog.append((new, "transpose", [cur], perm))
        cur = new
        pool.setdefault(tuple(dims), []).append(cur)
    root = cur
    if rng.random() < 0.5:
        d = rng.randrange(rank)
        c = m.const(dtype, "0")
        keep = [x for i, x in enumerate(dims) if i != d]
        r = m.op(dtype, keep, f"reduce({cur}, {c}), dimensions={{{d}}}, "
                 f"to_apply={m.binary_comp(dtype, 'add')}")
        prog.append((r, "reduce-add", [cur], d))
        root = m.raw(f"({shape_text(dtype, dims)}, {shape_text(dtype, keep)})",
                     f"tuple({cur}, {r})")
    results = [cur] + ([r] if root != cur else [])
    params = [line.split()[0] for line in m.lines if "parameter(" in line]
    meta = {"program": prog, "params": params, "results": results}
    return Case("fusion", m.text(root), m.params, f"{dtype}{dims}", meta)


FAMILIES = {f.__name__: f for f in (elementwise, fusion, reduce, argmax, sort, tuples,
                                    convolution, dot, gather, scatter, while_loop, shape_ops)}


def case(seed):
    """The module of `seed`: families in turn, the rest of the draw from the seed."""
    names = sorted(FAMILIES)
    rng = random.Random(seed)
    return FAMILIES[names[seed % len(names)]](rng)
