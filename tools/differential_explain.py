"""Explanations of tools/differential_campaign.py's disagreements, each checked, not assumed.

A disagreement is explained only when a check recomputes it: the differing elements must
be exactly what a stated rule gives. What no check explains stays a disagreement for a
person to read. The rules (each an XLA:CPU behaviour that departs from HLO's semantics,
where hloc's compiled backend and its evaluator agree with each other):

- `xla-daz`: XLA:CPU runs with denormals-are-zero: a subnormal input reads as ±0. Checked
  by running hloc's compiled backend again on the inputs with their subnormals flushed to
  ±0: every element where hloc and XLA differed must then equal XLA's (for a sort with an
  index operand: XLA's permutation must be hloc's on the flushed keys, and XLA's keys the
  original bits in that order).
- `xla-skips-padded-taps`: for a plain f32 convolution XLA:CPU skips the taps that fall in
  padding or lhs-dilation holes, where HLO multiplies the zero-valued padding (0 · inf =
  NaN; issue 36 item 4, which made both hloc backends multiply). Checked by a float64
  convolution in numpy under both rules: XLA's NaNs must be the skipping rule's and hloc's
  the multiplying rule's.
- `xla-drops-non-identity-init`: a reduce whose init value is not its reducer's identity
  (max with 2.5): XLA:CPU may apply the init value no times (a reduce over size-1
  dimensions becomes a reshape), where HLO folds it in once. Checked by a numpy reduction
  without the init value: it must give XLA's differing elements.
- `xla-differs-from-numpy`: (the fusion family) numpy evaluates the module's ops in the
  module's dtype, maximum and minimum propagating NaN as HLO says, and agrees with hloc's
  compiled backend where XLA:CPU does not. A third implementation sides with hloc; what
  XLA does instead is left to read by hand.
- `reduction-order`: (the fusion family; any two results) HLO leaves a reduction's order
  open. numpy's evaluation summing in 24 orders (pairwise, forward, backward, random)
  moves every differing element beyond the tolerance, and both differing values lie
  within what those orders give: the output is not fixed to the tolerance there (a sum
  cancelling to near zero and then divided by, say).
- `xla-changes-sort-keys`: XLA:CPU's sorted bf16 keys are not a permutation of the input
  keys' bits (it quiets a signaling NaN on the way), so its order and its index operand
  follow other keys. Checked on the bits of the first output.
"""

import itertools

import numpy as np


def _float_kind(a):
    return a.dtype.kind == "f" or a.dtype.name == "bfloat16"


def _flush(a):
    """`a` with its subnormals replaced by a zero of the same sign."""
    if not _float_kind(a):
        return a
    f = a.astype(np.float64)
    tiny = np.finfo(np.float32 if a.dtype.name == "bfloat16" else a.dtype).tiny
    sub = (f != 0) & (np.abs(f) < tiny)
    if not sub.any():
        return a
    out = a.copy()
    out[sub] = np.copysign(0.0, f[sub]).astype(a.dtype)
    return out


# Relative tolerance per dtype, of the element and of the output's largest finite magnitude
# (cancellations): tools/differential_campaign.py's comparison.
RTOL = {"float64": 1e-9, "float32": 1e-4, "float16": 3e-2, "bfloat16": 3e-2}


def mismatches(got, want):
    """Flat indices where `got` does not match `want`: integers and pred exactly; floats
    NaN against NaN (any payload), ±inf exactly, else within RTOL."""
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype.name not in RTOL:
        return np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    with np.errstate(all="ignore"):
        g, w = got.astype(np.float64).reshape(-1), want.astype(np.float64).reshape(-1)
        gn, wn = np.isnan(g), np.isnan(w)
        finite = np.isfinite(g) & np.isfinite(w)
        scale = np.abs(w[np.isfinite(w)]).max(initial=0.0)
        tol = RTOL[want.dtype.name] * (np.abs(w) + max(scale, 1.0))
        ok = (gn & wn) | (~gn & ~wn & (g == w)) | (finite & (np.abs(g - w) <= tol))
    return np.flatnonzero(~ok)


def xla_daz(case, outs, rerun, compare):
    flushed = [_flush(a) for a in case.inputs]
    if all(f is a for f, a in zip(flushed, case.inputs)):
        return False
    again = rerun(flushed)
    if again is None or len(again) != len(outs["xla"]):
        return False
    if case.family == "sort" and len(again) == 2:
        # A sort compares flushed keys but moves the keys' own bits: XLA's permutation
        # must be hloc's on flushed keys, and XLA's keys the inputs in that order.
        perm = np.asarray(outs["xla"][1])
        axis = int(case.meta["axis"])
        moved = np.take_along_axis(np.asarray(case.inputs[0]), perm, axis)
        bits = f"u{moved.dtype.itemsize}"
        return bool((np.asarray(again[1]) == perm).all()
                    and (np.asarray(outs["xla"][0]).view(bits) == moved.view(bits)).all())
    for got, new, want in zip(outs["cpu"], again, outs["xla"]):
        bad = mismatches(got, want)
        new = np.asarray(new).reshape(-1)[bad]
        if mismatches(new, np.asarray(want).reshape(-1)[bad]).size:
            return False
    return True


def conv_nan_masks(case):
    """(multiplying rule's NaN mask, skipping rule's NaN mask) of the case's convolution."""
    x, k = (a.astype(np.float64) for a in case.inputs)
    m = case.meta
    spatial = x.ndim - 2
    batch, cin_all = x.shape[0], x.shape[-1]
    w, ci, co = k.shape[:spatial], k.shape[-2], k.shape[-1]
    g = m["groups"]
    dil = [(n - 1) * d + 1 for n, d in zip(x.shape[1:-1], m["lhs_dilate"])]
    padded = [d + lo + hi for d, lo, hi in zip(dil, m["lo"], m["hi"])]
    wd = [(ww - 1) * r + 1 for ww, r in zip(w, m["rhs_dilate"])]
    out = [(p - q) // s + 1 for p, q, s in zip(padded, wd, m["stride"])]
    mul = np.zeros([batch] + out + [co], bool)
    skip = np.zeros_like(mul)
    for b, *rest in itertools.product(range(batch), *[range(o) for o in out], range(co)):
        o, j = rest[:-1], rest[-1]
        grp = j // (co // g)
        s_mul = s_skip = 0.0
        for tap in itertools.product(*[range(ww) for ww in w]):
            src, inside = [], True
            for d in range(spatial):
                p = o[d] * m["stride"][d] + tap[d] * m["rhs_dilate"][d] - m["lo"][d]
                q, r = divmod(p, m["lhs_dilate"][d])
                inside &= 0 <= p < dil[d] and r == 0
                src.append(q)
            for c in range(ci):
                kv = k[tuple(tap) + (c, j)]
                xv = x[(b, *src, grp * ci + c)] if inside else 0.0
                with np.errstate(all="ignore"):
                    s_mul += xv * kv
                    if inside:
                        s_skip += xv * kv
        mul[(b, *o, j)] = np.isnan(s_mul)
        skip[(b, *o, j)] = np.isnan(s_skip)
    assert cin_all == ci * g
    return mul, skip


def xla_skips_padded_taps(case, outs, rerun, compare):
    if case.family != "convolution":
        return False
    mul, skip = conv_nan_masks(case)
    cpu, xla = (np.asarray(outs[b][0]).astype(np.float64) for b in ("cpu", "xla"))
    return bool((np.isnan(cpu) == mul).all() and (np.isnan(xla) == skip).all()
                and (mul != skip).any())


def xla_changes_sort_keys(case, outs, rerun, compare):
    if case.family != "sort":
        return False
    keys = np.asarray(case.inputs[0])
    bits = f"u{keys.dtype.itemsize}"
    got = np.sort(np.asarray(outs["xla"][0]).view(bits).reshape(-1))
    return bool((got != np.sort(keys.view(bits).reshape(-1))).any())


NUMPY_REDUCE = {"add": np.add, "maximum": np.fmax, "minimum": np.fmin, "multiply": np.multiply,
                "and": np.logical_and, "or": np.logical_or}


def xla_drops_init(case, outs, rerun, compare):
    m = case.meta
    if case.family != "reduce" or m["identity"]:
        return False
    x = np.asarray(case.inputs[0])
    if x.size == 0:
        return False
    # maximum/minimum propagate NaN in HLO: fmax/fmin would drop it, so reduce with a NaN
    # result wherever the input holds one.
    f = NUMPY_REDUCE[m["op"]]
    with np.errstate(all="ignore"):
        without = f.reduce(x.astype(np.float64) if x.dtype.kind != "b" else x,
                           axis=tuple(m["dims"]))
        if m["op"] in ("maximum", "minimum"):
            without = np.where(np.isnan(x.astype(np.float64)).any(axis=tuple(m["dims"])),
                               np.nan, without)
    want = np.asarray(outs["xla"][0])
    without = np.asarray(without).astype(want.dtype)
    bad = mismatches(outs["cpu"][0], want)
    return bool(bad.size) and not mismatches(without.reshape(-1)[bad],
                                             want.reshape(-1)[bad]).size


UNARY = {"negate": np.negative, "abs": np.abs, "exponential": np.exp, "log": np.log,
         "tanh": np.tanh, "sqrt": np.sqrt, "floor": np.floor, "ceil": np.ceil,
         "sign": np.sign, "logistic": lambda x: 1 / (1 + np.exp(-x)), "sine": np.sin,
         "cosine": np.cos}
# HLO's maximum and minimum propagate NaN, as numpy's maximum and minimum do.
BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
          "divide": np.divide, "maximum": np.maximum, "minimum": np.minimum}


ORDERS = 24


def sum_in_order(x, axis, order):
    """A sum along `axis` in x's dtype: numpy's pairwise sum (order 0), one element after
    the other (1), from the far end (2), or one after the other in a random order (3 and
    up, seeded by `order`). HLO leaves a reduction's order open."""
    if order == 0 or x.shape[axis] == 0:
        return np.add.reduce(x, axis=axis)
    if order == 2:
        x = np.flip(x, axis)
    elif order > 2:
        x = np.take(x, np.random.default_rng(order).permutation(x.shape[axis]), axis=axis)
    return np.take(np.cumsum(x, axis=axis, dtype=x.dtype), -1, axis=axis)


def numpy_fusion(case, order=0):
    """The fusion family's module evaluated by numpy in its own dtype: a third
    implementation of HLO's semantics, independent of hloc and XLA; sums in `order`
    ([`sum_in_order`])."""
    vals = dict(zip(case.meta["params"], case.inputs))
    for name, op, args, attr in case.meta["program"]:
        xs = [vals[a] for a in args]
        if op in UNARY:
            v = UNARY[op](xs[0])
        elif op in BINARY:
            v = BINARY[op](*xs)
        elif op == "reduce-add":
            v = sum_in_order(xs[0], attr, order)
        elif op == "reduce-maximum":
            v = np.maximum.reduce(xs[0], axis=attr, initial=-np.inf)
        elif op == "broadcast":
            v = np.broadcast_to(np.expand_dims(xs[0], attr[0]), attr[1])
        elif op == "transpose":
            v = np.transpose(xs[0], attr)
        else:
            raise ValueError(f"no numpy form of {op}")
        vals[name] = np.asarray(v, dtype=xs[0].dtype)
    return [vals[r] for r in case.meta["results"]]


def xla_differs_from_numpy(case, outs, rerun, compare):
    if case.family != "fusion":
        return False
    mine = numpy_fusion(case)
    return not compare(outs["cpu"], mine) and bool(compare(outs["xla"], mine))


def reduction_order(case, outs, differ):
    """At every element where two results differ, numpy's sums in ORDERS orders move the
    result beyond the tolerance, and both differing values lie within what those orders
    give (widened by the tolerance): the output is not fixed to the tolerance there."""
    if case.family != "fusion":
        return False
    runs = [numpy_fusion(case, order) for order in range(ORDERS)]
    for k in range(len(runs[0])):
        want = np.asarray(outs["xla"][k])
        stack = np.stack([np.asarray(r[k], np.float64).reshape(-1) for r in runs])
        lo, hi = stack.min(axis=0), stack.max(axis=0)
        moved = set(mismatches(lo.astype(want.dtype), hi.astype(want.dtype)).tolist())
        scale = max(np.abs(lo[np.isfinite(lo)]).max(initial=0.0), 1.0)
        tol = RTOL.get(want.dtype.name, 0.0) * (np.abs(lo) + scale)
        for pair in differ:
            p, q = pair.split("/")
            bad = mismatches(outs[p][k], outs[q][k])
            if not set(bad.tolist()) <= moved:
                return False
            for v in (outs[p][k], outs[q][k]):
                v = np.asarray(v, np.float64).reshape(-1)[bad]
                if not ((v >= lo[bad] - tol[bad]) & (v <= hi[bad] + tol[bad])).all():
                    return False
    return True


RULES = {"xla-daz": xla_daz, "xla-drops-non-identity-init": xla_drops_init,
         "xla-skips-padded-taps": xla_skips_padded_taps,
         "xla-changes-sort-keys": xla_changes_sort_keys,
         "xla-differs-from-numpy": xla_differs_from_numpy}


def explain(case, outs, differ, rerun, compare):
    """The name of the rule that recomputes the disagreement, or None. `reduction-order`
    may explain any pair; the XLA rules only a difference of XLA against both hloc
    backends (which agree with each other)."""
    with np.errstate(all="ignore"):
        if reduction_order(case, outs, differ):
            return "reduction-order"
        if set(differ) != {"cpu/xla", "reference/xla"}:
            return None
        for name, rule in RULES.items():
            if rule(case, outs, rerun, compare):
                return name
    return None
