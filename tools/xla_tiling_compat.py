#!/usr/bin/env python3
"""Agreement between hloc's tiling and XLA's expectations in XLA's tiling tests.

Usage: tools/xla_tiling_compat.py --xla DIR [--hloc target/release/hloc] [--verbose]

DIR holds copies of XLA's test files (openxla/xla; not part of this repository), at
their paths below xla/codegen/tiling/ or flat:

- symbolic_tile_test.cc: SymbolicTile::FromIndexingMap of an op's output->operand map
  (`hloc tile FILE --instr ROOT --operand K`) or of a map built in the test
  (`hloc tile MAPFILE --map`);
- symbolic_tile_analysis_test.cc: the analysis of a fusion (`hloc tile FILE --fusion F`:
  tileable or not, its constraints) and its tiled computation for tile sizes
  (`hloc tile FILE --fusion F --tile-sizes ...`, a dot's contracting sizes as
  `--tile-sizes DOT=...`, with `--regions` for SymbolicTileAnalysisRegionsTest, whose
  instructions under a contraction are numbered over programs x contraction steps);
- experimental/tile_propagation_test.cc: tile propagation to the operands or the outputs
  of one instruction (`hloc tile FILE --instr I --to-operands|--to-output ...`);
- experimental/reshape_tile_propagation_test.cc: the table of tiles propagated to a
  reshape's output, which XLA checks equivalent to the input tile or expects an error for
  (`hloc tile FILE --instr r --to-output --operand 0 --tile T --space-extents ...
  --space-tile-sizes ...`); hloc's tile is equal when it reads the same elements (row-major
  linear indices) as the input tile at every sampled tile id.

Every expectation the script can read is one case; the others are counted as not
extracted, with the reason. A case is equal when hloc's answer means the same as XLA's:
a symbolic tile by the elements its offsets, sizes and strides give at sampled tile sizes
where both admit the sizes, and by which sampled sizes its constraints admit; a tiled
instruction by its tile sizes, its strides (along dimensions of more than one element)
and its tile-offsets map evaluated over the points of XLA's domain; a propagated tile by
the index (or masked) of every position of every dimension at sampled tile ids, tile
sizes and runtime values; constraints by the sampled sizes they admit; `no tile` and
`not tileable` answers by their presence. XLA's texts are read, never copied anywhere.

The first line of the output names the XLA revision read (parser_compat.revision); a file
whose first lines name `commit HEX` (an excerpt) is also reported with that commit. XLA's maps
are read in both printings: `floordiv`/`mod` and, since 2026, `/` and `%`; the participant
of an all-gather's tile both as `replica_id [E]` and as a `replica ids { offsets [E] sizes
[1] ... }` tile (one replica read, else a difference). A propagation's instruction and tile
may be named through the test's locals (`const HloInstruction* scan = root->operand(0);`,
`Tile t = GetTestTile(*tiling_space, {4, 8});`, `const Tile& c = operands[0];`); a form the
script cannot read is listed as not extracted, with the name it could not resolve. A tile
from an earlier propagation the test checks nothing of is propagated when a later case
needs it; tile sizes built in a vector (`std::vector<int64_t> v(tiling_space->
num_dimensions(), 1); v[1] = 2;`) are read. XLA's tile propagation walks a scan's scanned
dimension in steps (the carry holding the earlier ones), so a module with a scan is tiled
with `hloc tile --scan-steps`, and one with a ragged dot with `hloc tile --group-steps`
(its programs walk the groups, tiles relative to the step's group); a tile of no dimensions for another output of an
instruction names no tile ids in hloc's space of that output.

Where hloc's propagated tile differs from XLA's, the operand tiles of ops whose read sets
`xla_tiling_exact.py` enumerates from the op's definition (convolutions) are checked
against that enumeration at every sample where the two differ: when hloc's tile is exactly
the set read there, the case is counted in its own column (`hloc exact`: XLA's tile reads
more, or misses elements the program reads), otherwise it is a plain difference that
names the enumerated set.

Standard library only.
"""

import argparse
import itertools
import os
import random
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parser_compat import (  # noqa: E402  (shared C++ lexing helpers)
    TEST_HEAD, matching_close, read_concatenated_literals, revision, split_top_level)
from xla_tiling_exact import oracle as exact_read_oracle  # noqa: E402

TIMEOUT_S = 30
# Prefix of a difference where hloc answers (a tile, an analysis) and XLA does not.
MORE = "hloc-only: "
# Prefix of a difference where hloc's tile is exactly the set read (enumerated from the
# op's definition, `xla_tiling_exact.py`) and XLA's is not.
EXACT = "hloc exact: "
SAMPLE_SEED = 15


@dataclass
class Case:
    """One expectation of a test and how hloc answered it."""

    family: str
    name: str
    args: list
    expect: object
    compare: object
    files: dict = field(default_factory=dict)
    produces: str = ""  # the test's variable holding this answer (for later `@VAR[K]` tiles)
    # The propagations of the test so far, by variable, for `@VAR[K]` tiles whose answer
    # no earlier case asked for (a propagation the test checks nothing of).
    steps: dict = field(default_factory=dict)
    outcome: str = ""
    detail: str = ""


# ---------------------------------------------------------------------------
# Affine expressions (XLA's syntax): parse once, evaluate on integer points.

TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z_0-9]*)|(.))")


def tokenize(text):
    out = []
    for num, ident, op in TOKEN.findall(text):
        if num:
            out.append(("n", int(num)))
        elif ident:
            out.append(("k" if ident in ("floordiv", "ceildiv", "mod", "min", "max")
                        else "v", ident))
        elif op.strip():
            out.append(("o", op))
    return out


class ExprParser:
    """Recursive descent over tokens into nested tuples."""

    def __init__(self, text):
        self.t = tokenize(text)
        self.i = 0

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else (None, None)

    def take(self, kind=None, val=None):
        k, v = self.peek()
        if (kind and k != kind) or (val is not None and v != val):
            raise ValueError(f"expected {val or kind}, got {v!r}")
        self.i += 1
        return v

    def expr(self):
        e = self.term()
        while self.peek() in (("o", "+"), ("o", "-")):
            op = self.take()
            e = (op, e, self.term())
        return e

    def term(self):
        e = self.unary()
        while True:
            k, v = self.peek()
            if (k, v) in (("o", "*"), ("o", "/"), ("o", "%")) or \
                    (k == "k" and v in ("floordiv", "ceildiv", "mod")):
                self.take()
                # XLA's printer writes `/` for floordiv (and `%` for mod) since 2026.
                op = {"/": "floordiv", "%": "mod"}.get(v, v)
                e = (op, e, self.unary())
            else:
                return e

    def unary(self):
        if self.peek() == ("o", "-"):
            self.take()
            return ("neg", self.unary())
        return self.atom()

    def atom(self):
        k, v = self.peek()
        if k == "n":
            self.take()
            return ("c", v)
        if k == "v":
            self.take()
            return ("v", v)
        if k == "k" and v in ("min", "max"):
            self.take()
            self.take("o", "(")
            a = self.expr()
            self.take("o", ",")
            b = self.expr()
            self.take("o", ")")
            return (v, a, b)
        if (k, v) == ("o", "("):
            self.take()
            e = self.expr()
            self.take("o", ")")
            return e
        raise ValueError(f"unexpected {v!r}")


def parse_expr(text):
    p = ExprParser(text)
    e = p.expr()
    if p.i != len(p.t):
        raise ValueError(f"trailing text in `{text}`")
    return e


def ev(e, env):
    op = e[0]
    if op == "c":
        return e[1]
    if op == "v":
        return env[e[1]]
    if op == "neg":
        return -ev(e[1], env)
    a, b = ev(e[1], env), ev(e[2], env)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "floordiv":
        return a // b
    if op == "ceildiv":
        return -((-a) // b)
    if op == "mod":
        return a % b
    if op == "min":
        return min(a, b)
    return max(a, b)


def norm(text):
    return re.sub(r"\s+", " ", text).strip()


def bracket_items(text, open_ch="(", close_ch=")"):
    """Items of `(a, b, c)` at top level."""
    text = text.strip()
    assert text[0] == open_ch and text[-1] == close_ch, text
    inner = text[1:-1].strip()
    return [] if not inner else split_top_level(inner)


def parse_constraints(text):
    """DNF: list of conjunctions of (expr, lo, hi); [[]] is `always`."""
    text = norm(text)
    if text in ("", "none", "always satisfied"):
        return [[]]
    if text == "unsatisfiable":
        return []
    out = []
    for conj in text.split("||"):
        cs = []
        for c in conj.split("&&"):
            m = re.fullmatch(r"\s*(.*) in \[\s*(-?\d+)\s*,\s*(-?\d+)\s*\]\s*", c)
            cs.append((parse_expr(m.group(1)), int(m.group(2)), int(m.group(3))))
        out.append(cs)
    return out


def holds(dnf, env):
    for conj in dnf:
        try:
            if all(lo <= ev(e, env) <= hi for e, lo, hi in conj):
                return True
        except ZeroDivisionError:
            continue
    return False


# ---------------------------------------------------------------------------
# Maps `(d0){rt0} -> (...), domain: ...` and their values.


@dataclass
class Map:
    dims: list
    syms: list
    rts: list
    results: list
    bounds: dict
    constraints: list


def parse_map(text):
    text = norm(text)
    head, rest = text.split("->", 1)
    m = re.fullmatch(r"\s*\(([^)]*)\)\s*(?:\[([^\]]*)\])?\s*(?:\{([^}]*)\})?\s*", head)
    names = [[n.strip() for n in (g or "").split(",") if n.strip()] for g in m.groups()]
    rest = rest.strip()
    close = matching_close(rest, 0, "(", ")")
    results = [parse_expr(r) for r in bracket_items(rest[:close])]
    bounds, constraints = {}, []
    dom = rest[close:].strip()
    if dom.startswith(","):
        dom = dom[1:].strip()
    if dom.startswith("domain:"):
        for item in split_top_level(dom[len("domain:"):]):
            if not item:
                continue
            mm = re.fullmatch(r"(.*) in \[\s*(-?\d+)\s*,\s*(-?\d+)\s*\]", item.strip())
            lhs = mm.group(1).strip()
            if re.fullmatch(r"[A-Za-z_]\w*", lhs):
                bounds[lhs] = (int(mm.group(2)), int(mm.group(3)))
            else:
                constraints.append((parse_expr(lhs), int(mm.group(2)), int(mm.group(3))))
    return Map(names[0], names[1], names[2], results, bounds, constraints)


def points(ranges, limit, rng):
    """All points of a box of (lo, hi) ranges when small, else a sample with corners."""
    total = 1
    for lo, hi in ranges:
        total *= hi - lo + 1
    if total <= limit:
        return list(itertools.product(*[range(lo, hi + 1) for lo, hi in ranges]))
    out = [tuple(lo for lo, _ in ranges), tuple(hi for _, hi in ranges)]
    out += [tuple(rng.randint(lo, hi) for lo, hi in ranges) for _ in range(limit)]
    return out


# ---------------------------------------------------------------------------
# Symbolic tiles (`Symbolic tile with ...`).


FIELDS = ("offset_map:", "size_map:", "stride_map:", "constraints:", "rt_vars:")


def parse_symbolic_tile(text):
    """Dict of the tile's parts, or None for `no symbolic tile`."""
    text = norm(text)
    if text.startswith("no symbolic tile"):
        return None
    assert text.startswith("Symbolic tile with"), text
    pos = sorted((text.find(f), f) for f in FIELDS if text.find(f) >= 0)
    parts = {}
    for k, (p, f) in enumerate(pos):
        end = pos[k + 1][0] if k + 1 < len(pos) else len(text)
        parts[f[:-1]] = text[p + len(f):end].strip()

    def amap(t):
        head, body = t.split("->", 1)
        m = re.fullmatch(r"\s*\(([^)]*)\)\s*(?:\[([^\]]*)\])?\s*", head)
        dims = [n.strip() for n in m.group(1).split(",") if n.strip()]
        syms = [n.strip() for n in (m.group(2) or "").split(",") if n.strip()]
        return dims, syms, [parse_expr(r) for r in bracket_items(body.strip())]

    dims, syms, offsets = amap(parts["offset_map"])
    _, _, sizes = amap(parts["size_map"])
    _, _, strides = amap(parts["stride_map"])
    rt = []
    for item in split_top_level(parts.get("rt_vars", "")):
        mm = re.fullmatch(r"\s*(\w+) in \[\s*(-?\d+)\s*,\s*(-?\d+)\s*\]\s*", item)
        if mm:
            rt.append((mm.group(1), int(mm.group(2)), int(mm.group(3))))
    return {"dims": dims, "syms": syms, "offsets": offsets, "sizes": sizes,
            "strides": strides, "constraints": parse_constraints(parts.get("constraints", "")),
            "rt": rt}


def size_samples(bound):
    """Tile sizes to try along a dimension of `bound` elements."""
    vals = {1, bound}
    p = 2
    while p < bound:
        vals.add(p)
        p *= 2
    for v in (3, 5, 6, bound - 1, (bound + 1) // 2):
        if 1 <= v <= bound:
            vals.add(v)
    return sorted(vals)


def elements(offset, size, stride, cap=64):
    return [offset + k * stride for k in range(min(size, cap))] + [("size", size)]


def compare_symbolic(xla, got, dims_bounds):
    """None when equal, else a reason."""
    if xla is None or got is None:
        return None if xla is None and got is None else \
            MORE + "XLA has no tile, hloc has one" if xla is None else \
            "XLA has a tile, hloc has none"
    if len(xla["offsets"]) != len(got["offsets"]):
        return "different ranks"
    rng = random.Random(SAMPLE_SEED)
    grid = points([(0, len(size_samples(b)) - 1) for b in dims_bounds], 3000, rng)
    samples = [tuple(size_samples(b)[i] for b, i in zip(dims_bounds, p)) for p in grid]
    fixed = {}
    if len(xla["rt"]) != len(got["rt"]):
        # hloc folds a runtime value with one possible value into the offsets.
        fixed = {n: lo for n, lo, hi in xla["rt"] if lo == hi}
        xla = dict(xla, rt=[r for r in xla["rt"] if r[1] != r[2]])
    if len(xla["rt"]) != len(got["rt"]):
        return f"{len(got['rt'])} runtime variables, XLA {len(xla['rt'])}"
    rt_ranges = [(lo, hi) for _, lo, hi in xla["rt"]]
    rt_points = points(rt_ranges, 8, rng) if rt_ranges else [()]
    for s in samples:
        denv = {f"d{i}": v for i, v in enumerate(s)}
        a, b = holds(xla["constraints"], denv), holds(got["constraints"], denv)
        if a != b:
            return f"constraints differ at tile sizes {list(s)}: XLA admits {a}, hloc {b}"
        if not a:
            continue
        for rt in rt_points:
            ex = dict(denv, **fixed, **{n: v for (n, _, _), v in zip(xla["rt"], rt)})
            eg = dict(denv, **{f"s{i}": v for i, v in enumerate(rt)})
            for j in range(len(xla["offsets"])):
                try:
                    want = elements(ev(xla["offsets"][j], ex), ev(xla["sizes"][j], ex),
                                    ev(xla["strides"][j], ex))
                    have = elements(ev(got["offsets"][j], eg), ev(got["sizes"][j], eg),
                                    ev(got["strides"][j], eg))
                except (KeyError, ZeroDivisionError) as e:
                    return f"cannot evaluate dimension {j}: {e!r}"
                if want != have:
                    return f"dimension {j} at tile sizes {list(s)}: XLA reads " \
                           f"{want[:4]}.. hloc {have[:4]}.."
    return None


# ---------------------------------------------------------------------------
# Propagated tiles (`(tid_0){rt_0} -> offsets [..] sizes [..] strides [..] upper bounds [..]`).

# The participant a tile reads: `replica_id [EXPR]` (7974f7e0), or, in newer revisions, a
# tile of its own over the replicas, `replica ids { offsets [..] sizes [..] strides [..]
# upper bounds [..] }`.
TILE_RE = re.compile(r"\(([^)]*)\)\s*(?:\{([^}]*)\})?\s*->\s*offsets\s*(\[.*?\])\s*sizes\s*"
                     r"(\[.*?\])\s*strides\s*(\[.*?\])\s*upper bounds\s*(\[.*?\])"
                     r"(?:\s*replica_id\s*(\[.*?\]))?"
                     r"(?:\s*replica ids\s*\{\s*offsets\s*(\[.*?\])\s*sizes\s*(\[.*?\])\s*"
                     r"strides\s*\[.*?\]\s*upper bounds\s*\[.*?\]\s*\})?\s*$")


def parse_tile(text):
    text = norm(text)
    if text.startswith("no tile"):
        return None
    m = TILE_RE.fullmatch(text)
    if not m:
        raise ValueError(f"not a tile: {text}")
    lists = [[parse_expr(x) for x in bracket_items(g, "[", "]")] for g in m.groups()[2:6]]
    replica_text = m.group(7) or m.group(8)
    replica = [parse_expr(x) for x in bracket_items(replica_text, "[", "]")] if replica_text \
        else []
    # How many replicas the tile reads (the newer printing's replica tile size; one before).
    replicas = parse_expr(bracket_items(m.group(9), "[", "]")[0]) if m.group(9) else None
    rts = [n.strip() for n in (m.group(2) or "").split(",") if n.strip()]
    return {"offsets": lists[0], "sizes": lists[1], "strides": lists[2], "ub": lists[3],
            "replica": replica[0] if replica else None, "replicas": replicas, "rts": rts}


def split_xla_tiles(text):
    """XLA's `0) TILE 1) TILE ...` into tiles."""
    text = norm(text)
    parts = re.split(r"(?:^|\s)(\d+)\)\s+(?=\()", " " + text)
    return [parse_tile(parts[k + 1]) for k in range(1, len(parts) - 1, 2)]


def split_hloc_tiles(out):
    tiles, cur = [], None
    for line in out.splitlines():
        if re.match(r"(operand|output) id = \d+$", line.strip()):
            if cur is not None:
                tiles.append(parse_tile(cur))
            cur = ""
        elif cur is not None:
            cur += " " + line
    if cur is not None:
        tiles.append(parse_tile(cur))
    return tiles


def positions(tile, env, cap=48):
    """Per dimension: the indices the tile reads (its unmasked positions, in order). Masked
    positions read nothing, so two tiles that differ only in them read the same elements:
    XLA keeps a requested size along a dimension of one element and masks the rest, hloc
    gives that dimension size 1."""
    out = []
    for o, s, st, ub in zip(tile["offsets"], tile["sizes"], tile["strides"], tile["ub"]):
        off, size, stride, upper = ev(o, env), ev(s, env), ev(st, env), ev(ub, env)
        out.append([off + k * stride for k in range(min(size, cap))
                    if 0 <= off + k * stride < upper])
    return out


def product_positions(per):
    """Per-dimension positions of a product set, with every dimension emptied when one
    is empty (the set is then empty whatever the others list)."""
    return [[] for _ in per] if any(not p for p in per) else [list(p) for p in per]


def compare_tiles(xla, got, names, extents, concrete, exact=None, rt_bounds=None):
    """None when every tile of `got` (hloc's) reads what XLA's does at 300 sampled tile
    ids, sizes and runtime values; else why not. With `exact(k, env)` (the positions operand
    `k` must read, `xla_tiling_exact.py`), a sample where they differ and hloc's tile reads
    exactly the enumerated set is counted instead of failing, and the answer is then a
    reason starting with EXACT. `rt_bounds[k]`, where given, is the range of XLA's runtime
    value `rt_k` (`runtime_bounds`): it is sampled inside it, the only values XLA's tile is
    defined for, and hloc's runtime values (which fold a value of one possible value) are
    paired in order with XLA's of several."""
    exact_at = []
    if xla is None or got is None:
        if len(xla or []) != len(got or []) or (xla is None) != (got is None):
            return f"XLA {'no tiles' if xla is None else f'{len(xla)} tiles'}, hloc " \
                   f"{'no tiles' if got is None else f'{len(got)} tiles'}"
        return None
    if len(xla) != len(got):
        return f"XLA {len(xla)} tiles, hloc {len(got)}"
    rng = random.Random(SAMPLE_SEED)
    for _ in range(300):
        env = {}
        for i, d in enumerate(extents):
            ts = concrete[i] if concrete else rng.choice([1, 2, 3, 4, 8, 16, 64])
            env[f"ts_{i}"] = ts
            # Tile ids of tiles that start inside the space.
            env[f"tid_{i}"] = rng.randint(0, max(0, -(-d // ts) - 1))
        for n in names:
            if n not in env:
                env[n] = rng.choice([0, 1, 3, 7])
        for k, (lo, hi) in enumerate(rt_bounds or []):
            env[f"rt_{k}"] = rng.randint(lo, hi)
        for k, (a, b) in enumerate(zip(xla, got)):
            if (a is None) != (b is None):
                return f"tile {k}: XLA {'none' if a is None else 'a tile'}, hloc " \
                       f"{'none' if b is None else 'a tile'}"
            if a is None:
                continue
            if len(a["offsets"]) != len(b["offsets"]):
                return f"tile {k}: ranks {len(a['offsets'])} and {len(b['offsets'])}"
            benv, aenv = env, env
            body = repr([a[f] for f in ("offsets", "sizes", "strides", "ub")])
            used = sorted(set(re.findall(r"\brt_\d+\b", body)),
                          key=lambda n: int(n[3:]))
            several = [u for u in used if rt_bounds and int(u[3:]) < len(rt_bounds)
                       and rt_bounds[int(u[3:])][0] < rt_bounds[int(u[3:])][1]]
            if rt_bounds and a["rts"] and len(several) == len(b["rts"]):
                # XLA's runtime values inside their bounds; hloc's, the ones of several
                # values among them, in order.
                benv = dict(env, **{h: env[u] for u, h in zip(several, b["rts"])})
            elif a["rts"] and len(used) == len(b["rts"]) and used != b["rts"]:
                # XLA numbers a runtime value per offset operand (constants included); hloc
                # folds constants: pair the values both tiles read, in order.
                aenv = dict(env, **{u: env[h] for u, h in zip(used, b["rts"])})
            if a["replica"] is not None:
                # XLA names the participant (replica) a tile reads by an expression of the
                # tile ids; hloc by a runtime value of its own (the one XLA's tile lacks).
                extra = [n for n in b["rts"] if n not in a["rts"]]
                if len(extra) != 1:
                    return f"tile {k}: XLA reads replica_id, hloc has no participant value"
                try:
                    if a["replicas"] is not None and ev(a["replicas"], env) != 1:
                        return f"tile {k}: XLA's tile reads {ev(a['replicas'], env)} " \
                               "replicas, hloc one participant"
                    benv = dict(env, **{extra[0]: ev(a["replica"], env)})
                except (KeyError, ZeroDivisionError) as e:
                    return f"tile {k}: cannot evaluate XLA's replica_id: {e!r}"
            try:
                pa, pb = positions(a, aenv), positions(b, benv)
            except (KeyError, ZeroDivisionError) as e:
                return f"tile {k}: cannot evaluate: {e!r}"
            if pa != pb:
                why = f"tile {k} at {env}: XLA {pa} hloc {pb}"
                want = exact(k, env) if exact is not None else None
                if want is None or product_positions(pb) != product_positions(want):
                    if want is not None:
                        why += f" (enumerated: {want})"
                    return why[:400]
                exact_at.append((why, all(set(y) <= set(x) for x, y in
                                          zip(product_positions(pa), product_positions(pb)))))
    if exact_at:
        narrower = sum(n for _, n in exact_at)
        return (f"{EXACT}hloc's tile is the enumerated set at all {len(exact_at)} samples "
                f"where XLA's differs (XLA's reads more at {narrower}, misses read elements "
                f"at {len(exact_at) - narrower}); e.g. {exact_at[0][0]}")[:400]
    return None


# ---------------------------------------------------------------------------
# Tiled instructions (`NAME: tile_sizes=(..), tile_strides=(..), tile_offsets_indexing=MAP`).


def parse_tiled_lines(out):
    """name -> list of (sizes, strides, Map)."""
    res = {}
    for line in out.splitlines():
        m = re.match(r"(\S+): tile_sizes=\(([^)]*)\), tile_strides=\(([^)]*)\), "
                     r"tile_offsets_indexing=(.*)$", line)
        if not m:
            continue
        ints = lambda g: [int(x) for x in g.split(",") if x.strip()]  # noqa: E731
        res.setdefault(m.group(1), []).append(
            (ints(m.group(2)), ints(m.group(3)), parse_map(m.group(4).replace("pid_0", "d0"))))
    return res


def compare_tiled(want, have, extents=None):
    """`extents`: the instruction's dimensions, when known. Positions past a dimension are
    masked in both conventions, so sizes are compared clamped to it."""
    sizes, strides, xmap = want
    hsizes, hstrides, hmap = have
    if extents is not None and len(extents) == len(sizes) == len(hsizes):
        sizes = [min(s, e) for s, e in zip(sizes, extents)]
        hsizes = [min(s, e) for s, e in zip(hsizes, extents)]
    if sizes != hsizes:
        return f"tile sizes {hsizes}, XLA {sizes}"
    for k, (a, b) in enumerate(zip(strides, hstrides)):
        if sizes[k] > 1 and a != b:
            return f"stride of dimension {k}: hloc {b}, XLA {a}"
    if len(xmap.results) != len(hmap.results):
        return "offset maps of different ranks"
    pid = xmap.dims[0] if xmap.dims else "d0"
    ranges = [xmap.bounds.get(pid, (0, 0))] + [xmap.bounds[r] for r in xmap.rts]
    hpid = hmap.bounds.get("d0", (0, 0))
    if hpid[0] > ranges[0][0] or hpid[1] < ranges[0][1]:
        return f"program ids {list(hpid)}, XLA {list(ranges[0])}"
    if len(hmap.rts) != len(xmap.rts):
        return f"{len(hmap.rts)} runtime variables, XLA {len(xmap.rts)}"
    rng = random.Random(SAMPLE_SEED)
    pts = points(ranges, 4000, rng)
    for perm in itertools.permutations(range(len(hmap.rts))):
        bad = None
        for p in pts:
            env = {pid: p[0], **{r: v for r, v in zip(xmap.rts, p[1:])}}
            if not all(lo <= ev(e, env) <= hi for e, lo, hi in xmap.constraints):
                continue
            henv = {"d0": p[0], **{hmap.rts[perm[i]]: v for i, v in enumerate(p[1:])}}
            a = [ev(e, env) for e in xmap.results]
            b = [ev(e, henv) for e in hmap.results]
            if a != b:
                bad = f"offsets at {env}: hloc {b}, XLA {a}"
                break
        if bad is None:
            return None
    return bad


# ---------------------------------------------------------------------------
# Reading test bodies.


def tests(src):
    """(suite, name, body) of every TEST/TEST_F/TEST_P."""
    for m in TEST_HEAD.finditer(src):
        end = matching_close(src, m.end() - 1, "{", "}")
        yield m.group(1), m.group(2), src[m.end():end - 1]


def calls(body, names):
    """(name, start, argument text) of every call to one of `names`, in order."""
    pat = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\s*\(")
    for m in pat.finditer(body):
        close = matching_close(body, m.end() - 1, "(", ")")
        yield m.group(1), m.start(), body[m.end():close - 1]


def literal(text):
    lit = read_concatenated_literals(text, 0)
    return lit[0] if lit else None


def ints(text):
    return [int(x) for x in re.findall(r"-?\d+", text)]


def loop_ranges(body):
    """(start, end, var, values) of `for (int V = A; V <= B; V++) {...}` loops."""
    out = []
    for m in re.finditer(r"for\s*\(\s*int\s+(\w+)\s*=\s*(\d+)\s*;\s*\w+\s*(<=|<)\s*(\d+)"
                         r"[^)]*\)\s*\{", body):
        end = matching_close(body, m.end() - 1, "{", "}")
        hi = int(m.group(4)) + (1 if m.group(3) == "<=" else 0)
        out.append((m.start(), end, m.group(1), list(range(int(m.group(2)), hi))))
    return out


# HLO text: enough to name instructions, their operands and the computations' roots.

INSTR_RE = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*((?:\(|[a-z][a-z0-9]*\[|"
                      r"token\b|[a-z]+\().*)$")


def hlo_computations(text):
    """name -> {"root": name, "instrs": {name: (opcode, [operands], line)}}, and the entry."""
    comps, entry, cur = {}, None, None
    lines = re.sub(r"//[^\n]*", "", text).split("\n")
    joined, buf = [], ""
    for line in lines:  # join continuation lines of an instruction
        if INSTR_RE.match(line) or re.match(r"\s*(ENTRY\s+)?%?[\w.\-]+\s*(\(.*\))?\s*"
                                            r"(->\s*\S.*)?\{\s*$", line) or \
                line.strip() in ("}", "})") or line.strip().startswith("HloModule"):
            if buf:
                joined.append(buf)
            buf = line
        else:
            buf += " " + line.strip()
    joined.append(buf)
    for line in joined:
        h = re.match(r"\s*(ENTRY\s+)?%?([\w.\-]+)\s*(\(.*\))?\s*(->\s*\S.*)?\{\s*$", line)
        if h and "=" not in line.split("{")[0]:
            cur = {"root": None, "instrs": {}}
            comps[h.group(2)] = cur
            if h.group(1):
                entry = h.group(2)
            continue
        m = INSTR_RE.match(line)
        if not m or cur is None:
            continue
        name, rest = m.group(2), m.group(3)
        om = re.search(r"\b([a-z][a-z\-]*)\(", rest)
        opcode = om.group(1) if om else ""
        operands = []
        if om:
            close = matching_close(rest, om.end() - 1, "(", ")")
            for a in split_top_level(rest[om.end():close - 1]):
                a = a.strip()
                if a:
                    operands.append(a.split()[-1].lstrip("%"))
        cur["instrs"][name] = (opcode, operands, rest)
        if m.group(1):
            cur["root"] = name
    for c in comps.values():
        if c["root"] is None and c["instrs"]:
            c["root"] = list(c["instrs"])[-1]
    return comps, entry


def shape_dims(rest):
    m = re.match(r"\s*\(?\s*\w+\[([^\]]*)\]", rest)
    return [int(x) for x in m.group(1).split(",") if x.strip()] if m else []


def called(rest):
    m = re.search(r"calls=%?([\w.\-]+)", rest)
    return m.group(1) if m else None


# ---------------------------------------------------------------------------
# Family 1: SymbolicTile::FromIndexingMap.


def symbolic_tile_cases(src, hloc):
    cases, skipped = [], []
    for suite, name, body in tests(src):
        body = re.sub(r"(?m)^\s*//[^\n]*$", "", body)  # comments (with quotes) between arguments
        hlo = None
        for _, _, args in calls(body, ["ParseAndGetRoot"]):
            hlo = canonical(hloc, literal(args))
        map_text, dims_bounds = None, None
        for _, _, args in calls(body, ["FromTensorSizes"]):
            a = split_top_level(args)
            inner = re.search(r"ParseSymbolicMap\s*\(", a[0])
            mtext = literal(a[0][inner.end():])
            dims, syms = ints(a[1]), ints(a[2])
            mm = parse_map(mtext + ", domain:")
            dom = [f"{d} in [0, {n - 1}]" for d, n in zip(mm.dims, dims)]
            dom += [f"{s} in [0, {n - 1}]" for s, n in zip(mm.syms, syms)]
            for _, _, cargs in calls(body, ["AddConstraint"]):
                ca = split_top_level(cargs)
                e = literal(ca[0][re.search(r"ParseSymbolicExpr\s*\(", ca[0]).end():])
                lo, hi = ints(ca[1])
                dom.append(f"{e} in [{lo}, {hi}]")
            map_text = mtext + ", domain: " + ", ".join(dom)
            dims_bounds = dims
        root_name, root_dims = None, None
        if hlo is not None:
            comps, entry = hlo_computations(hlo)
            root_name = comps[entry]["root"]
            root_dims = shape_dims(comps[entry]["instrs"][root_name][2])
        loops = loop_ranges(body)
        found = 0
        for macro, start, args in calls(body, ["EXPECT_THAT", "EXPECT_EQ", "EXPECT_FALSE"]):
            if "FromIndexingMap" not in args and not re.match(r"\s*symbolic_tile\s*,", args):
                continue
            found += 1
            if "EvaluateAffineMap" in args:
                skipped.append((f"{suite}.{name}", "stride values at given sizes (the "
                                "sampled comparison of the tile covers them)"))
                continue
            a = split_top_level(args)
            arg = a[0]
            if arg.strip() == "symbolic_tile":
                decl = re.search(r"symbolic_tile\s*=\s*SymbolicTile::FromIndexingMap\s*\(", body)
                arg = body[decl.start():matching_close(body, decl.end() - 1, "(", ")")]
            expect_text = None
            if len(a) > 1 and "MatchSymbolicTileString" in a[1]:
                expect_text = literal(a[1][a[1].find("MatchSymbolicTileString(") + 24:])
            elif not (macro == "EXPECT_FALSE" or (len(a) > 1 and "nullopt" in a[1])):
                skipped.append((f"{suite}.{name}", "expectation not recognised"))
                continue
            label = f"{suite}.{name}"
            if "indexing_maps[" in arg:
                idx = re.search(r"indexing_maps\[(\w+)\]", arg).group(1)
                values = [int(idx)] if idx.isdigit() else next(
                    (v for s, e, var, v in loops if s <= start < e and var == idx), None)
                for k in values:
                    args_ = ["--instr", root_name, "--operand", str(k)]
                    cases.append(Case("symbolic_tile", f"{label}[operand {k}]", args_,
                                      expect_text, ("symbolic", root_dims),
                                      files={"hlo": hlo}))
            elif map_text is not None:
                cases.append(Case("symbolic_tile", label, ["--map"], expect_text,
                                  ("symbolic", dims_bounds), files={"map": map_text}))
            else:
                skipped.append((label, "no map or module found"))
        if found == 0:
            skipped.append((f"{suite}.{name}", "no FromIndexingMap expectation"))
    return cases, skipped


# ---------------------------------------------------------------------------
# Family 3: experimental tile propagation.


def space_dims(comps, entry, instr):
    """Extents of the tiling space of `instr`: its (first) output, then a dot's (scaled or
    ragged dot's) contracting or a reduce's reduced dimensions, or a convolution's window
    and input-feature dimensions."""
    instrs = comps[entry]["instrs"]
    opcode, ops, rest = instrs[instr]
    dims = shape_dims(rest)
    operand0 = shape_dims(instrs[ops[0]][2]) if ops and ops[0] in instrs else []
    if opcode in ("dot", "scaled-dot", "ragged-dot"):
        m = re.search(r"lhs_contracting_dims=\{([^}]*)\}", rest)
        g = re.search(r"rhs_group_dims=\{(\d+)\}", rest)
        if opcode == "ragged-dot" and g and len(ops) > 1 and ops[1] in instrs:
            # In group steps (`hloc tile --group-steps`) the non-contracting form walks
            # its groups ahead of its contraction.
            dims.append(shape_dims(instrs[ops[1]][2])[int(g.group(1))])
        dims += [operand0[d] for d in ints(m.group(1))] if m else []
    elif opcode == "reduce":
        dims += [operand0[d] for d in ints(re.search(r"dimensions=\{([^}]*)\}", rest).group(1))]
    elif opcode == "convolution" and len(ops) == 2 and ops[1] in instrs:
        # The window's sizes, then the kernel's input features (its `i` label).
        size = re.search(r"size=([\dx]+)", rest)
        labels = re.search(r"dim_labels=\w+_(\w+)->", rest)
        kernel = shape_dims(instrs[ops[1]][2])
        if size and labels and "i" in labels.group(1):
            dims += [int(x) for x in size.group(1).split("x")]
            dims.append(kernel[labels.group(1).index("i")])
    return dims


def space_rank(comps, entry, instr):
    return len(space_dims(comps, entry, instr))


def test_tile(rank_space, dims, upper=None):
    """XLA's GetTestTile: offsets tid_i * ts_i, sizes ts_i, strides i + 1."""
    tids = ", ".join(f"tid_{i}" for i in range(rank_space))
    r = range(len(dims))
    ub = upper if upper is not None else [str(d) for d in dims]
    return (f"({tids}) -> offsets [{', '.join(f'tid_{i} * ts_{i}' for i in r)}] "
            f"sizes [{', '.join(f'ts_{i}' for i in r)}] "
            f"strides [{', '.join(str(i + 1) for i in r)}] upper bounds [{', '.join(ub)}]")


def dims_of_expr(expr, comps, entry, root):
    """Dimensions named by `root->shape()`, `root->operand(K)->shape()`, GetFirstShape(root)
    or written out (`GetTestTile(*tiling_space, {4, 8})`)."""
    lit = re.search(r"GetTestTile\s*\([^,]*,\s*\{([\d,\s]*)\}", expr)
    if lit:
        return ints(lit.group(1))
    m = re.search(r"root->operand\((\d+)\)->shape", expr)
    instrs = comps[entry]["instrs"]
    if m:
        return shape_dims(instrs[instrs[root][1][int(m.group(1))]][2])
    return shape_dims(instrs[root][2])


def resolve_tile_var(body, expr):
    """The expression a test's local tile variable stands for (`Tile t = EXPR;`,
    `const Tile& t = EXPR;`, `auto t = EXPR;`, followed through up to 4 names); the
    expression itself when it is no such name."""
    for _ in range(4):
        if not re.fullmatch(r"\w+", expr):
            break
        m = re.search(r"(?:const\s+)?(?:Tile|auto)\s*&?\s+" + expr + r"\s*=\s*([^;]*);", body)
        if not m:
            break
        expr = m.group(1).strip()
    return expr


def instr_of_expr(expr, body, comps, entry, root):
    """The instruction `*root`, `*root->operand(K)`, `*(root->operand(K))` or a local
    `const HloInstruction* x = root->operand(K);` names; None for other forms."""
    e = expr.strip().lstrip("*").strip()
    while e.startswith("(") and e.endswith(")"):
        e = e[1:-1].strip()
    if e != "root" and re.fullmatch(r"\w+", e):
        m = re.search(r"HloInstruction\s*\*\s*" + e + r"\s*=\s*([^;]*);", body)
        if not m:
            return None
        e = m.group(1).strip()
    if e == "root":
        return root
    om = re.fullmatch(r"root->operand\((\d+)\)", e)
    return comps[entry]["instrs"][root][1][int(om.group(1))] if om else None


def propagation_cases(src, hloc):
    cases, skipped = [], []
    # The parameterized reshape table: to operands of the root from the test tile.
    for m in re.finditer(r"ValuesIn<ReshapeTestCase>\s*\(\s*\{", src):
        end = matching_close(src, m.end() - 1, "{", "}")
        j = m.end()
        while j < end:
            k = src.find("{", j, end)
            if k < 0:
                break
            e = matching_close(src, k, "{", "}")
            parts = split_top_level(src[k + 1:e - 1])
            j = e
            vals = [literal(p) for p in parts]
            if len(vals) == 7 and vals[0] is not None and vals[6] is not None:
                cases.append(reshape_to_output_case(vals[0], parts, vals[6]))
                continue
            if len(vals) != 3 or any(v is None for v in vals):
                skipped.append((f"ReshapeTilePropagationTest/{vals[0]}",
                                "entry of another form"))
                continue
            label, hlo, expected = vals
            hlo = canonical(hloc, hlo)
            comps, entry = hlo_computations(hlo)
            root = comps[entry]["root"]
            dims = shape_dims(comps[entry]["instrs"][root][2])
            tile = test_tile(space_rank(comps, entry, root), dims)
            cases.append(Case("propagation", f"ReshapeTilePropagationTest/{label}",
                              ["--instr", root, "--to-operands", "--tile", tile],
                              split_xla_tiles(expected) if expected.strip() else None,
                              ("tiles", space_dims(comps, entry, root), None),
                              files={"hlo": hlo}))
    for suite, name, body in tests(src):
        if suite == "ReshapeTilePropagationTest":
            continue
        hlo = next((literal(a) for _, _, a in calls(body, ["ParseAndGetRoot"])), None)
        if hlo is None:
            skipped.append((f"{suite}.{name}", "no module"))
            continue
        hlo = canonical(hloc, hlo)
        comps, entry = hlo_computations(hlo)
        root = comps[entry]["root"]
        sizes = None
        am = re.search(r"AssignTileSizes\s*\(\s*\{([^}]*)\}", body) or \
            vector_tile_sizes(body, comps, entry, root)
        upper = None
        um = re.search(r"upper_bounds\s*\{\s*(.*?)\}\s*;", body, re.S)
        if um:
            u = um.group(1)
            c = re.search(r"CreateSymbolicConstant\((-?\d+)", u)
            d = re.search(r"CreateDimExpr\((\d+)[^)]*\)\s*\*\s*(\d+)", u)
            upper = [c.group(1)] if c else [f"tid_{d.group(1)} * {d.group(2)}"] if d else None
        consts = {}
        for cm in re.finditer(r"constexpr absl::string_view (\w+)\s*=\s*", body):
            consts[cm.group(1)] = literal(body[cm.end():])
        results = {}
        argv_var = {}
        steps = {}
        unread = []
        n = 0
        for macro, start, args in calls(body, ["PropagateTileToInput",
                                               "PropagateTileToOutput", "EXPECT_THAT",
                                               "EXPECT_EQ"]):
            if macro.startswith("Propagate"):
                a = split_top_level(args)
                # `VAR = Propagate...(...)` or `ASSERT_OK_AND_ASSIGN(auto VAR, Propagate...(...))`
                vm = re.search(r"(\w+)\s*[=,]\s*(?:\n\s*)?$", body[max(0, start - 80):start])
                instr = instr_of_expr(a[1], body, comps, entry, root)
                if instr is None:
                    unread.append(f"instruction `{a[1].strip()}`")
                    continue
                tile_name = a[2].strip()
                tile_expr = resolve_tile_var(body, tile_name)
                prev = re.fullmatch(r"(\w+)\[(\d+)\]", tile_expr)
                if "tiled_roots()[0]" in tile_expr:
                    tile = None
                elif prev:
                    # The tile an earlier propagation of this test gave (run before this one).
                    tile = f"@{suite}.{name}:{prev.group(1)}[{prev.group(2)}]"
                elif "GetTestTile" in tile_expr:
                    dims = dims_of_expr(tile_expr, comps, entry, root)
                    tile = test_tile(space_rank(comps, entry, root), dims,
                                     upper if tile_name == "tile" else None)
                else:
                    unread.append(f"tile `{tile_name}`")
                    continue
                k = a[3].strip().split("=")[-1].strip("*/ ")
                if macro == "PropagateTileToInput":
                    argv = ["--instr", instr, "--to-operands"]
                    if k not in ("", "0"):
                        argv += ["--output", k]
                        tile = rank0_tile(tile)
                    if tile is not None:
                        argv += ["--tile", tile]
                    elif sizes_before(body, start, am):
                        argv += ["--tile-sizes", am.group(1).replace(" ", "")]
                else:
                    argv = ["--instr", instr, "--to-output", "--operand", k, "--tile", tile]
                if re.search(r"\bscan\(", hlo):
                    # XLA's tile propagation walks a scan's scanned dimension in steps.
                    argv.append("--scan-steps")
                if re.search(r"\bragged-dot\(", hlo):
                    # ... and a ragged dot's groups, its rows relative to the step's group.
                    argv.append("--group-steps")
                close = matching_close(body, body.index("(", start), "(", ")")
                if re.match(r"\s*,\s*StatusIs\(", body[close:]):
                    # EXPECT_THAT(Propagate...(...), StatusIs(...)): XLA has no tile.
                    n += 1
                    cases.append(Case("propagation", f"{suite}.{name}#{n}", argv, None,
                                      ("tiles", space_dims(comps, entry, root), None),
                                      files={"hlo": hlo}))
                    continue
                if vm:
                    results[vm.group(1)] = argv
                    argv_var[id(argv)] = f"{suite}.{name}:{vm.group(1)}"
                    steps[f"{suite}.{name}:{vm.group(1)}"] = argv
                continue
            a = split_top_level(args)
            if len(a) < 2 or a[0].strip() not in results:
                continue
            n += 1
            if "nullopt" in a[1]:
                expected = None
            else:
                lit = re.search(r"MatchToString\s*\(", a[1])
                text = literal(a[1][lit.end():])
                if text is None:
                    text = consts.get(a[1][lit.end():].split(")")[0].strip())
                expected = split_xla_tiles(text)
            argv = results[a[0].strip()]
            concrete = ints(argv[argv.index("--tile-sizes") + 1]) \
                if "--tile-sizes" in argv else None
            cases.append(Case("propagation", f"{suite}.{name}#{n}", argv, expected,
                              ("tiles", space_dims(comps, entry, root), concrete),
                              files={"hlo": hlo}, produces=argv_var.get(id(argv), ""),
                              steps=dict(steps)))
        if n == 0:
            why = f"not read: {', '.join(unread)}" if unread else "no propagation expectation"
            skipped.append((f"{suite}.{name}", why))
    return cases, skipped


def reshape_to_output_case(label, parts, expected):
    """An entry {name, input shape, tile sizes, strides, offsets, output shape, expected} of
    the reshape table: a tile of the operand of `reshape` (offsets tid_i * size unless
    given, sizes ts_i unless given) propagated to its output."""
    def ilist(p):
        return ints(re.sub(r"/\*.*?\*/", "", p))
    shape, sizes, strides, offsets, out_shape = (ilist(p) for p in parts[1:6])
    r = range(len(shape))
    dims = lambda d: ",".join(str(x) for x in d)  # noqa: E731
    size = [str(sizes[i]) if sizes else f"ts_{i}" for i in r]
    off = [str(offsets[i]) if len(offsets) == len(shape) else f"tid_{i} * {size[i]}" for i in r]
    tile = (f"({', '.join(f'tid_{i}' for i in r)}) -> offsets [{', '.join(off)}] "
            f"sizes [{', '.join(size)}] strides [{', '.join(str(x) for x in strides)}] "
            f"upper bounds [{', '.join(str(x) for x in shape)}]")
    hlo = (f"HloModule m\nENTRY e {{\n  p0 = f32[{dims(shape)}] parameter(0)\n"
           f"  ROOT r = f32[{dims(out_shape)}] reshape(p0)\n}}\n")
    return Case("propagation", f"ReshapeTilePropagationTest/{label}",
                ["--instr", "r", "--to-output", "--operand", "0", "--tile", tile,
                 "--space-extents", dims(shape)]
                + (["--space-tile-sizes", dims(sizes)] if sizes else []),
                split_xla_tiles(expected) if expected.strip() else None,
                ("tiles", shape, sizes or None), files={"hlo": hlo})


def reshape_examples_cases(src, hloc):
    """The entries {name, shape, to_shape, tile sizes, offsets, strides, upper bounds,
    expected error} of ReshapeExamplesTilePropagationTest: the input tile (symbolic sizes
    where none are given) propagated to the output of `reshape`."""
    cases, skipped = [], []
    dims = lambda d: ",".join(str(x) for x in d)  # noqa: E731
    for m in re.finditer(r"ValuesIn<ReshapeTestCase>\s*\(\s*\{", src):
        end = matching_close(src, m.end() - 1, "{", "}")
        j = m.end()
        while j < end:
            k = src.find("{", j, end)
            if k < 0:
                break
            e = matching_close(src, k, "{", "}")
            parts = [re.sub(r"/\*.*?\*/", "", p) for p in split_top_level(src[k + 1:e - 1])]
            j = e
            if len(parts) != 8:
                skipped.append((f"ReshapeExamples/{literal(parts[0])}", "entry of another form"))
                continue
            name = literal(parts[0])
            shape, to_shape, sizes, strides = (ints(parts[i]) for i in (1, 2, 3, 5))
            offsets = [literal(x) for x in split_top_level(parts[4].strip()[1:-1])]
            upper = [literal(x) for x in split_top_level(parts[6].strip()[1:-1])]
            error = literal(parts[7])
            r = range(len(shape))
            size = [str(sizes[i]) if sizes else f"ts_{i}" for i in r]
            tile = (f"({', '.join(f'tid_{i}' for i in r)}) -> offsets [{', '.join(offsets)}] "
                    f"sizes [{', '.join(size)}] strides [{', '.join(str(x) for x in strides)}] "
                    f"upper bounds [{', '.join(upper)}]")
            hlo = (f"HloModule m\nENTRY e {{\n  p0 = f32[{dims(shape)}] parameter(0)\n"
                   f"  ROOT r = f32[{dims(to_shape)}] reshape(p0)\n}}\n")
            args = ["--instr", "r", "--to-output", "--operand", "0", "--tile", tile,
                    "--space-extents", dims(shape)]
            if sizes:
                args += ["--space-tile-sizes", dims(sizes)]
            cases.append(Case("reshape", f"ReshapeExamples/{name}", args, error or None,
                              ("equivalent", shape, to_shape, sizes or None, tile),
                              files={"hlo": hlo}))
    return cases, skipped


def linear_elements(tile, env, shape):
    """The row-major linear indices of the elements `tile` reads at `env`."""
    pos = positions(tile, env, cap=1 << 16)
    weights = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        weights[i] = weights[i + 1] * shape[i + 1]
    return sorted(sum(w * x for w, x in zip(weights, p)) for p in itertools.product(*pos))


def compare_equivalent(case, out):
    """An answer to a reshape table entry: equal when hloc's output tile reads the linear
    elements the input tile reads (or both fail)."""
    _, shape, to_shape, sizes, tile_text = case.compare
    got = split_hloc_tiles(out)
    if not got or got[0] is None:
        if case.expect is not None:
            return None
        return "hloc: " + next((l for l in out.splitlines() if l.startswith("no tile")), "?")
    src = parse_tile(tile_text)
    rng = random.Random(SAMPLE_SEED)
    for _ in range(200):
        env = {}
        for i, d in enumerate(shape):
            ts = sizes[i] if sizes else rng.choice([1, 2, 3, 4, 8])
            env[f"ts_{i}"] = ts
            env[f"tid_{i}"] = rng.randint(0, max(0, -(-d // ts) - 1))
        a, b = linear_elements(src, env, shape), linear_elements(got[0], env, to_shape)
        if a != b:
            return f"at {env}: the input tile reads {a[:16]}, hloc's output tile {b[:16]}"
    return None if case.expect is None else \
        MORE + f"hloc propagates (checked equivalent), XLA: {case.expect}"


def sizes_before(body, start, am):
    return am is not None and am.start() < start


class VectorSizes:
    """A match-like value for tile sizes built in a vector variable."""

    def __init__(self, text, start):
        self.text, self.pos = text, start

    def group(self, _):
        return self.text

    def start(self):
        return self.pos


def vector_tile_sizes(body, comps, entry, root):
    """`std::vector<int64_t> V(tiling_space->num_dimensions(), X); V[i] = Y; ...
    AssignTileSizes(V)`: the sizes as `X,Y,...` (the space's rank from the root's output and
    own dimensions), at the position of the AssignTileSizes call; else None."""
    m = re.search(r"AssignTileSizes\s*\(\s*(\w+)\s*\)", body)
    if not m:
        return None
    var = re.escape(m.group(1))
    d = re.search(var + r"\s*\(\s*tiling_space->num_dimensions\(\)\s*,\s*(\d+)\s*\)", body)
    if not d:
        return None
    sizes = [int(d.group(1))] * space_rank(comps, entry, root)
    for a in re.finditer(var + r"\[(\d+)\]\s*=\s*(\d+)\s*;", body[:m.start()]):
        i = int(a.group(1))
        if i >= len(sizes):
            return None
        sizes[i] = int(a.group(2))
    return VectorSizes(",".join(map(str, sizes)), m.start())


def rank0_tile(tile):
    """A tile with no dimensions written over XLA's space (`(tid_0) -> offsets [] ...`)
    for another output of an instruction: over hloc's space of that output, which has no
    dimensions either, it names no tile ids."""
    if tile is None or not re.search(r"->\s*offsets\s*\[\s*\]", tile):
        return tile
    return re.sub(r"^\([^)]*\)", "()", tile.strip())


# ---------------------------------------------------------------------------
# Family 2: SymbolicTileAnalysis and its tiled computations.

NOT_EXTRACTED = (
    ("ForProducerConsumer", "producer-consumer fusion adaptor (no hloc form)"),
    ("FakeEmitterSpecificConstraints", "emitter-specific constraints (XLA's Triton)"),
    ("TransposedDotTiledHloSchedule", "transposed dot schedule (another program order)"),
)


class Fusion:
    """The module of an analysis test: the entry root fusion and its computations."""

    def __init__(self, hlo):
        self.comps, entry = hlo_computations(hlo)
        self.name = self.comps[entry]["root"]
        self.comp = called(self.comps[entry]["instrs"][self.name][2])
        self.root = self.comps[self.comp]["root"] if self.comp in self.comps else None

    def instr(self, comp, name):
        return self.comps[comp]["instrs"][name]

    def step(self, loc, k):
        """The instruction operand k of `loc` (comp, name) reads."""
        comp, name = loc
        return comp, self.instr(comp, name)[1][k]

    def tuple_root(self, k):
        opcode, ops, _ = self.instr(self.comp, self.root)
        return (self.comp, ops[k]) if opcode == "tuple" else (self.comp, self.root)

    def nested_root(self, loc):
        comp, name = loc
        c = called(self.instr(comp, name)[2])
        return c, self.comps[c]["root"]


def hlo_var(fusion, expr, hvars):
    """The (comp, name) of an `HloInstruction*` expression."""
    expr = re.sub(r"\s+", "", expr)
    m = re.match(r"(?:module->entry_computation\(\)->root_instruction\(\)->"
                 r"fused_expression_root\(\)|(\w+))((?:->operand\(\d+\))*)$", expr)
    if not m:
        return None
    loc = (fusion.comp, fusion.root) if m.group(1) is None else hvars.get(m.group(1))
    for k in re.findall(r"operand\((\d+)\)", m.group(2) or ""):
        loc = fusion.step(loc, int(k)) if loc else None
    return loc


def tiled_var(fusion, expr, tvars, cvars):
    """The (comp, name) a `TiledHloInstruction*` expression denotes, or None."""
    expr = re.sub(r"\s+", "", expr)
    expr = re.sub(r"^\*", "", expr)
    m = re.fullmatch(r"static_cast<[^>]*>\((.*)\)", expr)
    if m:
        expr = m.group(1)
    m = re.match(r"(GetFirstRoot\(\w+\)|roots\[(\d+)\]|parameter_tiling\[(\d+)\]|"
                 r"(\w+)->called_computation\(\)->GetRoots\(\)(?:\[0\]|\.front\(\))|"
                 r"(\w+)->GetRoots\(\)(?:\[0\]|\.front\(\))|(\w+))", expr)
    if not m:
        return None
    g = m.groups()
    if g[0].startswith("GetFirstRoot"):
        loc = fusion.tuple_root(0)
    elif g[1] is not None:
        loc = fusion.tuple_root(int(g[1]))
    elif g[2] is not None:
        loc = next(((fusion.comp, n) for n, (op, _, r) in
                    fusion.comps[fusion.comp]["instrs"].items()
                    if op == "parameter" and re.search(rf"parameter\({g[2]}\)", r)), None)
    elif g[3] is not None:
        base = tvars.get(g[3])
        loc = fusion.nested_root(base) if base else None
    elif g[4] is not None:
        loc = cvars.get(g[4])
    else:
        loc = tvars.get(g[5])
    for k in re.findall(r"->operand\((\d+)\)", expr[m.end():]):
        loc = fusion.step(loc, int(k)) if loc else None
    return loc


def tiling_args(fusion, text, hvars):
    """hloc's --tile-sizes arguments for a `Tiling(...)` expression."""
    entries = re.findall(r"\{\s*([\w>\-()]+)\s*,\s*(?:FlatTiling\()?\{([^{}]*)\}", text)
    if not entries:
        return None
    root_opcode, _, root_rest = fusion.instr(fusion.comp, fusion.root)
    out = []
    for target, sizes in entries:
        loc = hlo_var(fusion, target, hvars)
        sizes = [s.strip() for s in sizes.split(",") if s.strip()]
        if loc is None:
            return None
        opcode, _, rest = fusion.instr(*loc)
        contracting = 0
        if opcode in ("dot", "scaled-dot", "ragged-dot"):
            cm = re.search(r"lhs_contracting_dims=\{([^}]*)\}", rest)
            contracting = len(ints(cm.group(1))) if cm else 0
        on_root = loc == (fusion.comp, fusion.root) or (
            root_opcode == "tuple" and loc[1] in fusion.instr(*loc[:1] + (fusion.root,))[1])
        if contracting:
            out += ["--tile-sizes", f"{loc[1]}=" + ",".join(sizes[:contracting])]
            sizes = sizes[contracting:]
            if not on_root:
                continue
        if on_root:
            out = ["--tile-sizes", ",".join(sizes)] + out
    return out


def canonical(hloc, hlo):
    """The module as hloc prints it (`hloc fmt`): instruction names made unique the way
    hloc's (and XLA's) parser does, so names resolve to what `hloc tile` prints."""
    with tempfile.NamedTemporaryFile("w", suffix=".hlo", delete=False) as f:
        f.write(hlo)
    try:
        p = subprocess.run([hloc, "fmt", f.name], capture_output=True, text=True,
                           timeout=TIMEOUT_S)
    finally:
        os.unlink(f.name)
    return p.stdout if p.returncode == 0 and p.stdout.strip() else hlo


def analysis_cases(src, hloc):
    cases, skipped = [], []
    for suite, name, body in tests(src):
        label = f"{suite}.{name}"
        reason = next((r for key, r in NOT_EXTRACTED if key in body), None)
        if "ParseAndReturnVerifiedModule" not in body:
            skipped.append((label, "no module (candidate tile sizes of XLA's search)"))
            continue
        if reason:
            skipped.append((label, reason))
            continue
        hlo = None
        for _, _, args in calls(body, ["ParseAndReturnVerifiedModule"]):
            hlo = literal(args)
            if hlo is None:
                km = re.search(re.escape(args.strip()) + r"\s*=\s*", body)
                hlo = literal(body[km.end():]) if km else None
        hlo = canonical(hloc, hlo)
        fusion = Fusion(hlo)
        files = {"hlo": hlo}
        consts = dict(re.findall(r"constexpr int(?:64_t)? (\w+) = (\d+);", body))
        hvars, tvars, cvars, tilings, matchers, status_vars = {}, {}, {}, {}, {}, {}
        current = None  # hloc arguments of the tiled computation in use
        n_before = len(cases)

        def add(kind, expect, args, what):
            # XLA's regions mode numbers the instructions under a dot's contraction over
            # programs x contraction steps: hloc's `--regions`, for nested tilings.
            if suite == "SymbolicTileAnalysisRegionsTest" and any("=" in a for a in args):
                args = args + ["--regions"]
            cases.append(Case("analysis", f"{label}#{len(cases) - n_before + 1} ({what})",
                              args, expect, (kind,), files=files))

        for stmt in re.split(r";\s*\n", body):
            s = re.sub(r"^\s*//[^\n]*\n", "", stmt.strip() + "\n", flags=re.M).strip()
            sn = re.sub(r"\s+", " ", s)
            m = re.match(r"(?:const )?HloInstruction\* (?:const )?(\w+) = (.*)$", sn)
            if m:
                hvars[m.group(1)] = hlo_var(fusion, m.group(2), hvars)
                continue
            for k, v in consts.items():
                sn = re.sub(r"\b" + k + r"\b", v, sn)
            m = re.match(r"(?:const )?(?:Tiling|auto) (\w+)(?: = |\()(Tiling.*|\{.*)$", sn)
            if m and "Tiling" in sn:
                tilings[m.group(1)] = tiling_args(fusion, m.group(2), hvars)
                continue
            m = re.match(r"auto (\w+) = MatchTiledHloInstruction\((.*)\)$", sn, re.S)
            if m:
                matchers[m.group(1)] = m.group(2)
                continue
            sm = re.match(r"(?:EXPECT|ASSERT)_THAT\((\w+)(?:\.status\(\))?, StatusIs\(", sn)
            if sm and sm.group(1) in status_vars:
                if status_vars[sm.group(1)] is not None:
                    add("not_tileable", True, ["--fusion", fusion.name] +
                        status_vars[sm.group(1)], "tiling rejected")
                else:
                    skipped.append((label, "tiling not resolved"))
                continue
            if "ComputeTiledComputation(" in sn:
                arg = split_top_level(sn[sn.find("ComputeTiledComputation(") + 24:])[0]
                arg = re.sub(r"/\*.*?\*/", "", arg).strip()
                current = tilings.get(arg) or tiling_args(fusion, arg, hvars)
                vm = re.match(r"auto (\w+) = analysis->ComputeTiledComputation", sn)
                if vm:
                    status_vars[vm.group(1)] = current
                if "StatusIs" in sn and current is not None:
                    add("not_tileable", True, ["--fusion", fusion.name] + current,
                        "tiling rejected")
                elif "constraints_are_known_satisfied=*/true" in sn and "TF_EXPECT_OK" in sn:
                    skipped.append((label, "tile sizes promised to satisfy the constraints"))
                continue
            m = re.match(r"(?:const )?(?:TiledHloInstruction|auto)\s*\*?\s*(?:const )?"
                         r"\*?\s*(\w+) = (.*)$", sn)
            if m and "called_computation()" in m.group(2) and "GetRoots" not in m.group(2):
                base = tiled_var(fusion, m.group(2).split("->called_computation")[0],
                                 tvars, cvars)
                cvars[m.group(1)] = fusion.nested_root(base) if base else None
                if cvars[m.group(1)]:
                    cvars[m.group(1)] = (cvars[m.group(1)][0], cvars[m.group(1)][1])
                continue
            if m and "runtime_variables()" in m.group(2):
                nm = re.search(re.escape(m.group(1)) + r"->hlo\(\)->name\(\),\s*\"([^\"]+)\"",
                               body)
                tvars[m.group(1)] = (fusion.comp, nm.group(1)) if nm else None
                continue
            if m and ("operand(" in m.group(2) or "GetFirstRoot" in m.group(2) or
                      "GetRoots" in m.group(2) or "parameter_tiling" in m.group(2)):
                tvars[m.group(1)] = tiled_var(fusion, m.group(2), tvars, cvars)
                continue
            if "TryAnalyzeModule" in sn and ("EXPECT_FALSE" in sn or "EXPECT_TRUE" in sn):
                add("tileable", "EXPECT_TRUE" in sn, ["--fusion", fusion.name],
                    "analysis succeeds" if "EXPECT_TRUE" in sn else "analysis fails")
                continue
            if "holds_alternative<FusionDecision>" in sn:
                add("tileable", False, ["--fusion", fusion.name], "analysis fails")
                continue
            if "MatchConstraintExpressionString" in sn:
                text = literal(sn[sn.find("MatchConstraintExpressionString(") + 32:])
                add("constraints", text, ["--fusion", fusion.name], "constraints")
                continue
            if "IsAlwaysSatisfied" in sn:
                add("constrained", "EXPECT_FALSE" in sn, ["--fusion", fusion.name],
                    "constraints not trivial")
                continue
            if "ParametersSatisfyConstraints" in sn:
                arg = sn[sn.find("ParametersSatisfyConstraints(") + 29:]
                arg = split_top_level(arg)[0].rstrip(")").strip()
                t = tilings.get(arg) or tiling_args(fusion, arg, hvars)
                hv = re.search(r"IsOkAndHolds\((true|false)\)", sn)
                if hv and t:
                    add("admits", (t, hv.group(1) == "true"), ["--fusion", fusion.name],
                        "sizes admitted")
                else:
                    skipped.append((label, "constraint check of another form"))
                continue
            if "FlattenTilings" in sn and "EXPECT_EQ" in sn:
                want = [ints(x) for x in re.findall(r"\{([\d, ]+)\}", sn.split("vector")[-1])]
                add("valid_tilings", want, ["--fusion", fusion.name], "valid tilings")
                continue
            if "valid_tilings, Not(IsEmpty())" in sn:
                add("valid_tilings", "nonempty", ["--fusion", fusion.name], "valid tilings")
                continue
            m = re.match(r"(?:EXPECT|ASSERT)_THAT\((\*?[^,]+), (MatchTiledHloInstruction\((.*)\)|"
                         r"(\w+))\)$", sn, re.S)
            if m and current is not None and (m.group(3) or m.group(4) in matchers):
                loc = tiled_var(fusion, m.group(1), tvars, cvars)
                margs = split_top_level(m.group(3) or matchers[m.group(4)])
                sizes = ints(re.sub(r"/\*.*?\*/", "", margs[0]))
                strides = ints(re.sub(r"/\*.*?\*/", "", margs[1]))
                mtext = re.sub(r"/\*.*?\*/", "", margs[2]).strip()
                mtext = literal(mtext) if not mtext.startswith("absl::Substitute") else None
                if loc is None or mtext is None:
                    skipped.append((label, "tiled instruction not resolved"))
                    continue
                add("tiled", (loc[1], (sizes, strides, parse_map(mtext))),
                    ["--fusion", fusion.name] + current, f"tile of {loc[1]}")
                continue
            m = re.match(r"EXPECT_THAT\((\w+)->tile_strides\(\), ElementsAre\(([^)]*)\)\)$", sn)
            if m and current is not None:
                loc = tiled_var(fusion, m.group(1), tvars, cvars)
                if loc:
                    add("strides", (loc[1], ints(m.group(2))),
                        ["--fusion", fusion.name] + current, f"strides of {loc[1]}")
                continue
            m = re.match(r"EXPECT_EQ\((\w+), (\w+)\)$", sn)
            if m and m.group(1) in tvars and m.group(2) in tvars and current is not None:
                a, b = tvars[m.group(1)], tvars[m.group(2)]
                if a and b and a == b:
                    add("one_tile", a[1], ["--fusion", fusion.name] + current,
                        f"one tile of {a[1]}")
                continue
            if "tile_offsets_indexing().status(), IsOk()" in sn and current is not None:
                add("one_tile", fusion.root, ["--fusion", fusion.name] + current,
                    f"tile of {fusion.root}")
                continue
            if re.match(r"(EXPECT|ASSERT)_(THAT|EQ|NE|TRUE|FALSE)", s) and \
                    "analysis.has_value()" not in sn and "opt_analysis.has_value()" not in sn:
                skipped.append((label, "checks XLA's internal structure (" +
                                re.sub(r"\(.*", "", sn)[:30] + ": " + sn[12:60] + ")"))
        if len(cases) == n_before and "has_value()" in body:
            add("tileable", True, ["--fusion", fusion.name], "analysis succeeds")
    return cases, skipped


# ---------------------------------------------------------------------------
# Running hloc and judging its answers.


def run_hloc(hloc, case, tmpdir, index):
    path = os.path.join(tmpdir, f"case_{index:04d}.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(case.files.get("hlo") or case.files.get("map"))
    try:
        p = subprocess.run([hloc, "tile", path] + case.args, capture_output=True,
                           text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"no answer within {TIMEOUT_S} s"
    if p.returncode != 0:
        return None, f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[:300]}"
    return p.stdout, None


def first_symbolic_tile(out):
    chunks = re.split(r"(?=Symbolic tile with|no symbolic tile)", out)
    chunks = [c for c in chunks if c.startswith(("Symbolic tile with", "no symbolic tile"))]
    text = re.sub(r"\noutput id = \d+.*", "", chunks[0], flags=re.S) if chunks else ""
    return parse_symbolic_tile(text)


def analysis_parts(out):
    """(root dims, constraints DNF) of an analysis text, or None when not tileable."""
    if not out.startswith("symbolic tile analysis"):
        return None
    dims = ints(out.splitlines()[0].split("root dimensions")[1])
    return dims, parse_constraints(out.splitlines()[1][len("constraints:"):])


def candidates(dims):
    """XLA's candidate tile sizes: powers of two below each dimension, and the dimension."""
    per = [sorted({1 << k for k in range(64) if (1 << k) < d} | {d}) for d in dims]
    return [list(p) for p in itertools.product(*per)]


def judge(case, out):
    """None when hloc's answer `out` means the same as XLA's expectation, else why not."""
    kind = case.compare[0]
    if kind == "equivalent":
        return compare_equivalent(case, out)
    if kind == "symbolic":
        xla = parse_symbolic_tile(case.expect) if case.expect is not None else None
        got = first_symbolic_tile(out)
        bounds = case.compare[1] or []
        return compare_symbolic(xla, got, bounds)
    if kind == "tiles":
        got = split_hloc_tiles(out)
        if case.expect is None:
            return None if any(t is None for t in got) else MORE + "hloc propagates, XLA not"
        if any(t is None for t in got):
            return "hloc: " + next(l for l in out.splitlines() if l.startswith("no tile"))
        names = sorted(set(re.findall(r"\brt_\d+\b", out + " ".join(case.args))))
        return compare_tiles(case.expect, got, names, case.compare[1], case.compare[2],
                             exact_oracle(case), runtime_bounds(case))
    if kind == "not_tileable":
        return None if out.startswith("not tileable") else MORE + "hloc tiles it, XLA not"
    parts = analysis_parts(out)
    if kind == "tileable":
        if (parts is not None) == case.expect:
            return None
        if parts is not None:
            return MORE + "hloc analyses it, XLA does not"
        return "hloc: " + out.strip().splitlines()[0][:200] if out.strip() else "no output"
    if kind in ("constraints", "constrained", "admits", "valid_tilings"):
        if parts is None:
            return "hloc: " + out.strip()[:200]
        dims, dnf = parts
        env = lambda s: {f"d{i}": v for i, v in enumerate(s)}  # noqa: E731
        if kind == "constrained":
            return None if (dnf != [[]]) == case.expect else "constraints differ in triviality"
        if kind == "admits":
            targs, want = case.expect
            sizes = ints(targs[1])
            return None if holds(dnf, env(sizes)) == want else f"hloc admits {sizes}: {not want}"
        if kind == "valid_tilings":
            valid = [c for c in candidates(dims) if holds(dnf, env(c))]
            if case.expect == "nonempty":
                return None if valid else "no candidate satisfies hloc's constraints"
            return None if valid == case.expect else f"hloc's valid tilings {valid}"
        xdnf = parse_constraints(case.expect)
        grid = points([(0, len(size_samples(d)) - 1) for d in dims], 5000,
                      random.Random(SAMPLE_SEED))
        for p in grid:
            s = [size_samples(d)[i] for d, i in zip(dims, p)]
            if holds(xdnf, env(s)) != holds(dnf, env(s)):
                return f"at tile sizes {s}: XLA admits {holds(xdnf, env(s))}, hloc " \
                       f"{holds(dnf, env(s))}"
        return None
    if out.startswith("not tileable"):
        return "hloc: " + out.strip()[:200]
    lines = parse_tiled_lines(out)
    if kind == "one_tile":
        n = len(lines.get(case.expect, []))
        return None if n == 1 else f"hloc has {n} tiles of {case.expect}"
    if kind == "strides":
        name, strides = case.expect
        for sizes, have, _ in lines.get(name, []):
            if all(a == b or s <= 1 for a, b, s in zip(strides, have, sizes)):
                return None
        return f"hloc's strides of {name}: {[h for _, h, _ in lines.get(name, [])]}"
    name, want = case.expect
    have = lines.get(name, [])
    if not have:
        return f"hloc has no tile of {name}"
    extents = instruction_dims(case, name)
    reasons = [compare_tiled(want, h, extents) for h in have]
    return None if any(r is None for r in reasons) else "; ".join(reasons)[:400]


def exact_oracle(case):
    """The enumerated read sets of a propagation to the operands of an op
    `xla_tiling_exact.py` knows, else None."""
    if "--to-operands" not in case.args or "--instr" not in case.args or \
            "--output" in case.args:
        return None
    return exact_read_oracle(case.files.get("hlo", ""),
                             case.args[case.args.index("--instr") + 1])


def runtime_bounds(case):
    """The ranges of XLA's runtime values of a propagation to the operands of a dynamic
    slice, else None. XLA's tiling space holds one runtime value per offset operand, in
    order, a constant's included, each bounded by the starts that keep the slice inside its
    operand (`[0, dim - size]`); its tile reads the value unclamped, being defined for values
    inside those bounds only (the op clamps the others to them)."""
    if "--to-operands" not in case.args or "--instr" not in case.args:
        return None
    name = case.args[case.args.index("--instr") + 1]
    text = case.files.get("hlo", "")
    m = re.search(r"(?:^|\s)%?" + re.escape(name) +
                  r"\s*=\s*[a-z0-9]+\[[0-9,\s]*\]\S*\s+dynamic-slice\(([^)]*)\),\s*"
                  r"dynamic_slice_sizes=\{([^}]*)\}", text)
    if not m:
        return None
    source = instruction_dims(case, m.group(1).split(",")[0].strip().lstrip("%"))
    sizes = ints(m.group(2))
    if source is None or len(source) != len(sizes):
        return None
    return [(0, max(0, d - n)) for d, n in zip(source, sizes)]


def instruction_dims(case, name):
    """The dimensions of instruction `name` in the case's module text, or None."""
    pattern = re.compile(r"(?:^|\s)%?" + re.escape(name) + r"\s*=\s*[a-z0-9]+\[([0-9,\s]*)\]")
    for text in case.files.values():
        m = pattern.search(text if isinstance(text, str) else "")
        if m:
            return [int(x) for x in m.group(1).split(",") if x.strip()]
    return None


FILES = (("symbolic_tile", "symbolic_tile_test.cc", symbolic_tile_cases),
         ("analysis", "symbolic_tile_analysis_test.cc", analysis_cases),
         ("propagation", "experimental/tile_propagation_test.cc", propagation_cases),
         ("reshape", "experimental/reshape_tile_propagation_test.cc", reshape_examples_cases))


def named_commit(text):
    """The commit an excerpt names in its first lines (`commit HEX`), or None."""
    m = re.search(r"\bcommit\s+([0-9a-f]{7,40})\b", "\n".join(text.splitlines()[:6]))
    return m.group(1) if m else None


def resolve_tiles(case, answers, run=None):
    """Replaces an argument `@VAR[K]` by tile K of the answer an earlier case of the same test
    stored in VAR; (None, None) when done, (None, reason) when that answer is missing."""
    for i, a in enumerate(case.args):
        m = re.fullmatch(r"@(.+)\[(\d+)\]", a)
        if not m:
            continue
        out = answers.get(m.group(1))
        if out is None and m.group(1) in case.steps and run is not None:
            step = Case(case.family, m.group(1), list(case.steps[m.group(1)]), None, None,
                        files=case.files)
            out, err = run(step)
            if err is not None:
                return None, f"the tile {a[1:]} comes from a propagation hloc refused: {err}"
            answers[m.group(1)] = out
        if out is None:
            return None, f"the tile {a[1:]} comes from an answer hloc did not give"
        tiles, cur = [], None
        for line in out.splitlines():
            if re.match(r"(operand|output) id = \d+$", line.strip()):
                cur = len(tiles)
                tiles.append("")
            elif cur is not None:
                tiles[cur] += line.strip()
        k = int(m.group(2))
        if k >= len(tiles) or tiles[k].startswith("no tile"):
            return None, f"hloc has no tile {a[1:]}"
        step = case.steps.get(m.group(1), [])
        if "--tile-sizes" in step and case.compare and case.compare[0] == "tiles" and \
                case.compare[2] is None:
            # The tile has that step's concrete sizes: tile ids are sampled over them.
            case.compare = (case.compare[0], case.compare[1],
                            ints(step[step.index("--tile-sizes") + 1]))
        case.args[i] = tiles[k]
    return None, None


def find_file(root, rel):
    for cand in (os.path.join(root, rel), os.path.join(root, os.path.basename(rel)),
                 os.path.join(root, "xla", "codegen", "tiling", rel)):
        if os.path.exists(cand):
            return cand
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xla", required=True, help="folder with copies of XLA's test files")
    ap.add_argument("--hloc", default=os.path.join("target", "release", "hloc"),
                    help="the hloc binary (default: target/release/hloc)")
    ap.add_argument("--verbose", action="store_true", help="also list equal cases")
    args = ap.parse_args()
    if not os.path.exists(args.hloc):
        sys.exit(f"{args.hloc} not found: build it with `cargo build --release -p hloc`")
    rows, exit_code = [], 0
    print(f"XLA revision: {revision(args.xla)} ({args.xla})")
    with tempfile.TemporaryDirectory() as tmp:
        index = 0
        for family, rel, extract in FILES:
            path = find_file(args.xla, rel)
            if path is None:
                print(f"{rel}: not found under {args.xla}")
                exit_code = 2
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            commit = named_commit(text)
            if commit:
                print(f"{rel}: an excerpt at XLA commit {commit}")
            cases, skipped = extract(text, args.hloc)
            equal = more = exact = 0
            failures = []
            answers = {}
            for case in cases:
                index += 1
                out, err = resolve_tiles(
                    case, answers, lambda c: run_hloc(args.hloc, c, tmp, index))
                if err is None:
                    out, err = run_hloc(args.hloc, case, tmp, index)
                if case.produces and out is not None:
                    answers[case.produces] = out
                try:
                    why = err if err is not None else judge(case, out)
                except (ValueError, KeyError, IndexError, AssertionError,
                        ZeroDivisionError) as e:
                    why = f"answer not understood: {e!r}"[:300]
                if why is None:
                    equal += 1
                    if args.verbose:
                        print(f"  equal  {case.name}")
                else:
                    more += why.startswith(MORE)
                    exact += why.startswith(EXACT)
                    failures.append((case.name, why))
            total = len(cases) + len(skipped)
            rows.append((rel, total, len(cases), equal, more, exact))
            print(f"== {rel}: {total} expectations, {len(cases)} extracted, {equal} equal"
                  f" ({100.0 * equal / max(1, len(cases)):.1f}% of extracted), {more} where"
                  f" only hloc answers, {exact} where hloc's tile is exact and XLA's not")
            for name, why in failures:
                print(f"  DIFFERS {name}: {why}")
            reasons = {}
            for name, why in skipped:
                reasons.setdefault(why, []).append(name)
            for why, names in sorted(reasons.items()):
                print(f"  not extracted ({len(names)}): {why}: {', '.join(sorted(set(names)))}")
    print()
    print(f"{'file':40} {'expectations':>12} {'extracted':>9} {'equal':>6} {'%':>6}"
          f" {'hloc-only':>9} {'% with':>7} {'hloc exact':>10} {'% equal or exact':>16}")
    for rel, total, n, eq, more, ex in rows:
        print(f"{rel:40} {total:12} {n:9} {eq:6} {100.0 * eq / max(1, n):6.1f} {more:9}"
              f" {100.0 * (eq + more) / max(1, n):7.1f} {ex:10}"
              f" {100.0 * (eq + ex) / max(1, n):16.1f}")
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
