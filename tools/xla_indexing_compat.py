#!/usr/bin/env python3
"""Agreement between hloc and the expectations of XLA's indexing-map and indexing tests.

Usage: tools/xla_indexing_compat.py FILE.cc [FILE.cc ...] [--hloc target/debug/hloc]
                                    [--z3] [--verbose]

The test files (openxla/xla) are not part of this repository: pass local copies of
- xla/hlo/analysis/indexing_map_test.cc: simplifier expectations (a map parsed, simplified,
  compared with the expected text) and composition expectations;
- xla/hlo/analysis/indexing_analysis_test.cc: op and fusion indexing expectations (an HLO
  module, `GetOutputToInputIndexing`/`GetInputToOutputIndexing`, the expected text).
The kind of each file is recognised from its test fixture. Nothing is compiled.

Simplifier cases: every `Parse(...)` followed by `Simplify()` and an expected text
(`MatchIndexingString`/`MatchIndexingMap`), or by `EXPECT_FALSE(...Simplify())` with no
expected text (XLA leaves the map as it is: the input is the expectation), or by
`EXPECT_TRUE(...Simplify())` alone (idempotence: the input is the reference, no node count),
or a parsed map matched without `Simplify()` (XLA normalizes at construction). hloc's answer
is `hloc map simplify INPUT`; it must be equal to XLA's expectation (`hloc map equiv`:
same domain, same results at every point; `--z3` proves what enumeration cannot) and have no
more nodes (variables, constants and operators of the results and constraints, counted the
same way on both texts). Composition cases (`ComposeIndexingMaps(a, b)`) use
`hloc map compose a b` and are compared the same way.

Indexing cases: every `EXPECT_THAT` on the text or the map sets of
`GetOutputToInputIndexing(root[, output_id])` or `GetInputToOutputIndexing(root[, input_id])`
and on a producer-consumer grouping. hloc's answer is `hloc indexing MODULE` (with
`--direction in-to-out --operand K`, `--physical-layout` for `use_physical_layout=true`, or
`--producer P --consumer C`); a grouping of `HloFusionAdaptor::ForInstruction(I)` from a start
(its root, a value inside a fusion, an operand) is `--instr I --grouped --from S`, and
`ComputeEpilogueInputToOutputIndexing(hero, root)` is `--epilogue HERO --to ROOT`. Per
operand the maps are compared as sets (order-insensitive, each of XLA's maps paired with an equal one of
hloc's). Two maps are equal when, for some renumbering of hloc's range variables, they are
equal at every point; runtime variables are matched by the instruction they read and the
map that reads it, compared on XLA's bounds for them, and hloc's map must then only depend on
the clamped value (its value at a runtime value just outside XLA's bounds equals its value at
the nearest bound): runtime variables are compared by what they read and by the clamped values
they can take. Cases using APIs the command line does not offer are counted as not
extracted, with the reason.

Prints the XLA revision each file comes from (parser_compat.revision), then, per file and family, the numbers of cases, extracted cases, equal ones and (for the
simplifier) those with no more nodes than XLA's text, then every failure with its test name.
Standard library only.
"""

import argparse
import itertools
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parser_compat import revision  # noqa: E402  (the revision a copy of XLA comes from)

TIMEOUT_S = 60

# ---------------------------------------------------------------------------
# C++ lexing: just enough to find string literals and matching brackets.

RAW_START = re.compile(r'R"([^ ()\\\t\n]{0,16})\(')


def read_string_literal(src, i):
    """If a string literal starts at i, returns (value, end index); else None."""
    m = RAW_START.match(src, i)
    if m:
        delim = ")" + m.group(1) + '"'
        end = src.find(delim, m.end())
        if end < 0:
            return None
        return src[m.end():end], end + len(delim)
    if i < len(src) and src[i] == '"':
        out, j = [], i + 1
        while j < len(src) and src[j] != '"':
            if src[j] == "\\" and j + 1 < len(src):
                out.append({"n": "\n", "t": "\t"}.get(src[j + 1], src[j + 1]))
                j += 2
            else:
                out.append(src[j])
                j += 1
        return "".join(out), j + 1
    return None


def matching_close(src, i):
    """Index just past the bracket closing the one at i (string literals skipped)."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack, j, n = [], i, len(src)
    while j < n:
        c = src[j]
        if c == '"' or (c == "R" and RAW_START.match(src, j)):
            lit = read_string_literal(src, j)
            if lit:
                j = lit[1]
                continue
        if src.startswith("//", j):
            j = src.find("\n", j)
            j = n if j < 0 else j
            continue
        if c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return j + 1
        j += 1
    return n


def tests(src):
    """(name, body, line) of every TEST_F in the file."""
    for m in re.finditer(r"TEST_F\(\s*(\w+)\s*,\s*(\w+)\s*\)\s*\{", src):
        start = m.end() - 1
        yield m.group(2), src[start:matching_close(src, start)], src.count("\n", 0, m.start()) + 1


def literal_after(src, i):
    """The string literal at or after i (skipping white space), or None."""
    while i < len(src) and src[i].isspace():
        i += 1
    lit = read_string_literal(src, i)
    return lit[0] if lit else None


def call_args(src, i):
    """Top-level comma-separated argument texts of the call whose '(' is at i."""
    end = matching_close(src, i)
    inner, args, depth, cur, j = src[i + 1:end - 1], [], 0, [], 0
    while j < len(inner):
        c = inner[j]
        lit = read_string_literal(inner, j) if c in '"R' else None
        if lit:
            cur.append(inner[j:lit[1]])
            j = lit[1]
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        j += 1
    if "".join(cur).strip():
        args.append("".join(cur).strip())
    return args


# ---------------------------------------------------------------------------
# Running hloc.


class Hloc:
    """Runs the hloc binary; remembers answers (the same map is asked about often)."""

    def __init__(self, path, z3):
        self.path, self.z3, self.cache = path, z3, {}

    def run(self, args, stdin=None):
        key = (tuple(args), stdin)
        if key not in self.cache:
            try:
                p = subprocess.run([self.path] + args, input=stdin, capture_output=True,
                                   text=True, timeout=TIMEOUT_S)
                self.cache[key] = (p.returncode, p.stdout.strip(), p.stderr.strip())
            except subprocess.TimeoutExpired:
                self.cache[key] = (124, "", "timeout")
        return self.cache[key]

    def simplify(self, text):
        rc, out, err = self.run(["map", "simplify", "-"], one_line(text))
        return out if rc == 0 else None, err

    def compose(self, a, b):
        rc, out, err = self.run(["map", "compose", one_line(a), one_line(b)])
        return out if rc == 0 else None, err

    def equiv(self, a, b):
        """'equal', 'different' or 'unknown' (with hloc's line)."""
        rc, out, err = self.run(["map", "equiv", one_line(a), one_line(b)])
        if rc == 3 and self.z3:
            rc, out, err = self.run(["map", "equiv", "--z3", one_line(a), one_line(b)])
        verdict = {0: "equal", 1: "different", 3: "unknown"}.get(rc, "error")
        return verdict, out or err

    def indexing(self, module, args):
        with tempfile.NamedTemporaryFile("w", suffix=".hlo", delete=False) as f:
            f.write(module)
            path = f.name
        try:
            return self.run(["indexing", path] + args)
        finally:
            os.unlink(path)


def one_line(text):
    return " ".join(text.split())


# ---------------------------------------------------------------------------
# Map texts: node counts, headers, renaming.

TOKEN = re.compile(r"\s*(floordiv|ceildiv|mod|min|max|[A-Za-z_]\w*|-?\d+|->|[-+*/(),\[\]{}:])")


def count_nodes(expr):
    """Nodes of an expression text: variables, constants and operators (unary minus as one)."""
    toks = [t for t in TOKEN.findall(expr)]
    pos = [0]

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else None

    def take():
        pos[0] += 1
        return toks[pos[0] - 1]

    def primary():
        t = take()
        if t == "(":
            n = additive()
            take()
            return n
        if t == "-":
            return 1 + primary()
        if t in ("min", "max"):
            take()
            n = additive()
            while peek() == ",":
                take()
                n += 1 + additive()
            take()
            return n
        if t.startswith("-") and len(t) > 1 and t[1:].isdigit():
            return 1
        return 1

    def multiplicative():
        n = primary()
        while peek() in ("*", "/", "floordiv", "ceildiv", "mod"):
            take()
            n += 1 + primary()
        return n

    def additive():
        n = multiplicative()
        while peek() in ("+", "-") or (peek() and re.fullmatch(r"-\d+", peek())):
            if peek() in ("+", "-"):
                take()
            n += 1 + multiplicative()
        return n

    return additive() if toks else 0


def split_top(text, sep=","):
    """Splits at top-level separators (outside brackets)."""
    parts, depth, cur = [], 0, []
    for c in text:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


@dataclass
class MapText:
    """A map's text split into its parts (names kept as written)."""

    dims: list
    syms: list
    rts: list
    results: list
    items: list  # domain items: "name in [a, b]" or "expr in [a, b]"

    @staticmethod
    def parse(text):
        t = one_line(text)
        if t in ("KNOWN EMPTY", "UNDEFINED"):
            return None
        m = re.match(r"\(([^)]*)\)\s*(\[[^\]]*\])?\s*(\{[^}]*\})?\s*->\s*", t)
        if not m:
            return None
        names = lambda g: [x.strip() for x in g.strip("[]{}").split(",") if x.strip()] if g else []
        rest = t[m.end():]
        close = matching_close(rest, 0)
        results = split_top(rest[1:close - 1])
        domain = rest[close:]
        dm = re.match(r"\s*,\s*domain\s*:\s*", domain)
        items = split_top(domain[dm.end():]) if dm else []
        return MapText(names(m.group(1)), names(m.group(2)), names(m.group(3)), results, items)

    def nodes(self):
        exprs = list(self.results)
        bounds = set(self.dims + self.syms + self.rts)
        for it in self.items:
            e = re.sub(r"\s+in\s*\[[^\]]*\]\s*$", "", it)
            if e.strip() not in bounds:
                exprs.append(e)
        return sum(count_nodes(e) for e in exprs)

    def bound(self, name):
        for it in self.items:
            m = re.fullmatch(re.escape(name) + r"\s+in\s*\[\s*(-?\d+)\s*,\s*(-?\d+)\s*\]", it)
            if m:
                return int(m.group(1)), int(m.group(2))
        return None

    def text(self):
        head = "(" + ", ".join(self.dims) + ")"
        if self.syms:
            head += "[" + ", ".join(self.syms) + "]"
        if self.rts:
            head += "{" + ", ".join(self.rts) + "}"
        return head + " -> (" + ", ".join(self.results) + "), domain: " + ", ".join(self.items)

    def renamed(self, mapping):
        """A copy with variables renamed at once (mapping old -> new)."""
        if not mapping:
            return MapText(list(self.dims), list(self.syms), list(self.rts),
                           list(self.results), list(self.items))
        pat = re.compile(r"\b(" + "|".join(map(re.escape, mapping)) + r")\b")
        sub = lambda s: pat.sub(lambda m: mapping[m.group(1)], s)
        return MapText([sub(x) for x in self.dims], [sub(x) for x in self.syms],
                       [sub(x) for x in self.rts], [sub(x) for x in self.results],
                       [sub(x) for x in self.items])


def nodes_of(text):
    mt = MapText.parse(text)
    return 0 if mt is None else mt.nodes()


# ---------------------------------------------------------------------------
# Results.


@dataclass
class Case:
    """One expectation of XLA's tests and how hloc did on it."""

    file: str
    family: str
    name: str
    line: int
    extracted: bool = True
    reason: str = ""
    equal: bool = False
    nodes_ok: object = None  # True/False, or None when not counted
    detail: str = ""


# ---------------------------------------------------------------------------
# indexing_map_test.cc: simplifier and composition expectations.

OTHER_OPS = ("RemoveUnusedVars", "RemoveUnusedSymbols", "RescaleSymbols", "AddConstraint",
             "ConvertSymbolsToDimensions", "ClearConstraints", "ConvertRangeVariablesToDimensions",
             "ComputeResultRanges", "Evaluate", "ConstraintsSatisfied", "RangeEvaluator",
             "GetSymbolicConstraints")


def map_test_cases(path, src, hloc):
    cases = []
    for name, body, line in tests(src):
        vars_ = {}  # name -> dict(kind, text | a/b, simplified, other)
        expectations = []
        events = []
        for m in re.finditer(r"(?:auto|IndexingMap)\s+(\w+)\s*=\s*Parse\(", body):
            events.append((m.start(), "parse", m.group(1), literal_after(body, m.end())))
        for m in re.finditer(r"(?:auto|IndexingMap)\s+(\w+)\s*=\s*ComposeIndexingMaps\(", body):
            a = call_args(body, m.end() - 1)
            events.append((m.start(), "compose", m.group(1), a))
        for m in re.finditer(r"(?:auto|IndexingMap)\s+(\w+)\s*\(", body):
            events.append((m.start(), "constructed", m.group(1), None))
        for m in re.finditer(r"(EXPECT_TRUE|EXPECT_FALSE)?\(?\s*(\w+)\.Simplify\(([^)]*)\)", body):
            events.append((m.start(), "simplify", m.group(2), (m.group(1), m.group(3))))
        for m in re.finditer(r"(\w+)\.(" + "|".join(OTHER_OPS) + r")\(", body):
            events.append((m.start(), "other", m.group(1), m.group(2)))
        for m in re.finditer(r"EXPECT_THAT\(", body):
            args = call_args(body, m.end() - 1)
            if len(args) != 2:
                continue
            target = re.fullmatch(r"(?:ToString\((\w+)\)|(\w+))", args[0])
            mm = re.match(r"(MatchIndexingString|MatchIndexingMap)\(", args[1])
            if not target or not mm:
                continue
            events.append((m.start(), "expect", target.group(1) or target.group(2),
                           literal_after(args[1], mm.end())))
        events.sort(key=lambda e: e[0])
        for _, kind, var, arg in events:
            if kind == "parse" and arg is not None:
                vars_[var] = {"kind": "parse", "text": arg, "simplified": False, "other": None,
                              "verdict": None, "expected": False}
            elif kind == "compose":
                srcs = [vars_.get(a.strip()) for a in arg]
                ok = len(srcs) == 2 and all(s and s["kind"] == "parse" and not s["other"]
                                            and not s["simplified"] for s in srcs)
                vars_[var] = {"kind": "compose" if ok else "other",
                              "a": srcs[0]["text"] if ok else None,
                              "b": srcs[1]["text"] if ok else None, "simplified": False,
                              "other": None if ok else "ComposeIndexingMaps of a constructed map",
                              "verdict": None, "expected": False}
            elif kind == "constructed" and var not in vars_:
                vars_[var] = {"kind": "other", "other": "map built by a C++ constructor",
                              "simplified": False, "verdict": None, "expected": False}
            elif kind == "simplify" and var in vars_:
                v = vars_[var]
                if arg[1].strip():
                    v.setdefault("flags", []).append(arg[1].strip())
                    continue
                if v["simplified"] and arg[0] == "EXPECT_FALSE":
                    v["idempotent"] = True
                v["simplified"] = True
                v["verdict"] = v["verdict"] or arg[0]
            elif kind == "other" and var in vars_:
                vars_[var]["other"] = vars_[var]["other"] or arg
            elif kind == "expect" and var in vars_:
                vars_[var]["expected"] = True
                expectations.append((var, dict(vars_[var]), arg))
        seen = set()
        for var, state, expected in expectations:
            seen.add(var)
            cases.append(map_case(path, name, line, state, expected, hloc))
        for var, state in vars_.items():
            if var in seen or state["kind"] != "parse" or not state["simplified"]:
                continue
            if state["other"]:
                continue
            # No expected text: XLA's answer is the input (EXPECT_FALSE) or unspecified.
            cases.append(map_case(path, name, line, state, None, hloc))
        for var, state in vars_.items():
            if state.get("kind") == "other" and state.get("other") and var not in seen:
                pass
    return cases


def map_case(path, name, line, state, expected, hloc):
    family = "composition" if state["kind"] == "compose" else "simplifier"
    case = Case(path, family, name, line)
    if state["kind"] == "other" or state["other"]:
        case.extracted, case.reason = False, "not a simplification: " + str(state["other"])
        case.family = "other"
        return case
    if state["kind"] == "compose":
        ours, err = hloc.compose(state["a"], state["b"])
    else:
        ours, err = hloc.simplify(state["text"])
    if ours is None:
        case.detail = "hloc failed: " + err
        return case
    reference = expected
    if expected is None:
        reference = state["text"]
        if state.get("idempotent") or state["verdict"] != "EXPECT_FALSE":
            case.reason = "idempotence check (no expected text)"
            again, _ = hloc.simplify(ours)
            if again != ours:
                case.detail = f"not idempotent: {ours} then {again}"
                return case
    if family == "composition":
        # Range variables of a composition are numbered by each tool's own convention.
        case.equal, line_ = access_equal(Access(ours), Access(reference), hloc)
        verdict = "equal" if case.equal else "different"
    else:
        verdict, line_ = hloc.equiv(ours, reference)
        case.equal = verdict == "equal"
    if not case.equal:
        case.detail = f"{verdict}: {line_}\n      hloc: {ours}\n      XLA:  {one_line(reference)}"
    if case.reason.startswith("idempotence"):
        case.nodes_ok = None
    else:
        case.nodes_ok = nodes_of(ours) <= nodes_of(reference)
        if not case.nodes_ok:
            case.detail += (f"\n      nodes {nodes_of(ours)} > {nodes_of(reference)}:"
                            f"\n      hloc: {ours}\n      XLA:  {one_line(reference)}")
    return case


# ---------------------------------------------------------------------------
# Indexing texts: XLA's expected text and hloc's output, as sets of maps per operand.


@dataclass
class Access:
    """One map of an operand and its runtime variables (name -> (producer, map text))."""

    map: str
    rts: dict = field(default_factory=dict)


MAP_START = re.compile(r"\(\s*(?:[\w]+(?:\s*,\s*[\w]+)*)?\s*\)\s*(?:\[[^\]]*\])?\s*"
                       r"(?:\{[^}]*\})?\s*->")


def split_maps(text):
    """Consecutive map texts (each starts with a header `(...)... ->`)."""
    text = text.strip()
    if not text:
        return []
    if text.startswith("KNOWN EMPTY"):
        return ["KNOWN EMPTY"]
    if text.startswith("unknown indexing"):
        return ["UNDEFINED"]
    starts = []
    depth = 0
    for i, c in enumerate(text):
        if depth == 0 and c == "(" and MAP_START.match(text, i):
            starts.append(i)
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
    starts.append(len(text))
    return [text[a:b].strip().rstrip(",") for a, b in zip(starts, starts[1:])]


def parse_accesses(section):
    """Maps (with runtime variables) of one operand section's text."""
    out = []
    parts = re.split(r"runtime variables:", section)
    maps = split_maps(parts[0])
    for k, m in enumerate(maps):
        out.append(Access(m))
    # Runtime variables belong to the last map before them (XLA prints one map per section).
    for rt_part in parts[1:]:
        if not out:
            break
        chunks = re.split(r"\b(rt\d+):", rt_part)
        for name, body in zip(chunks[1::2], chunks[2::2]):
            producer, _, mtext = body.partition(";")
            pname = re.match(r"\s*%?([\w.\-]+)", producer)
            maps_here = split_maps(mtext)
            out[-1].rts[name] = (pname.group(1) if pname else producer.strip(),
                                 maps_here[0] if maps_here else mtext.strip())
        # Maps after the runtime variables (hloc prints them per map).
        tail = chunks[-1]
    return out


def parse_sections(text, header="operand id"):
    """{id: [Access]} of a text made of `<header> = N` sections."""
    sections = {}
    pieces = re.split(r"\b" + header + r" = (\d+)", text)
    for ident, body in zip(pieces[1::2], pieces[2::2]):
        sections[int(ident)] = parse_accesses(body)
    return sections


def parse_hloc_out_to_in(out, output_id):
    """hloc's out-to-in text for one output: {operand: [Access]}."""
    if "output id = " in out and output_id is not None:
        parts = re.split(r"^output id = (\d+)$", out, flags=re.M)
        for ident, body in zip(parts[1::2], parts[2::2]):
            if int(ident) == output_id:
                return hloc_sections(body, "operand id")
        return {}
    return hloc_sections(out, "operand id")


def hloc_sections(text, header):
    """hloc prints one map per line and its runtime variables right after it."""
    sections = {}
    cur = None
    for line in text.splitlines():
        s = line.strip()
        m = re.fullmatch(header + r" = (\d+)", s)
        if m:
            cur = sections.setdefault(int(m.group(1)), [])
            continue
        if cur is None or not s or s == "runtime variables:":
            continue
        rm = re.match(r"(rt\d+): ([^;]*); (.*)", s)
        if rm and cur:
            cur[-1].rts[rm.group(1)] = (rm.group(2).strip(), rm.group(3))
        elif s.startswith("unknown indexing"):
            cur.append(Access("UNDEFINED"))
        else:
            cur.append(Access(s))
    return sections


def parse_hloc_instr_sections(text):
    sections = {}
    cur = None
    for line in text.splitlines():
        s = line.strip()
        m = re.fullmatch(r"instr = (\S+)", s)
        if m:
            cur = sections.setdefault(m.group(1), [])
            continue
        if cur is None or not s or s == "runtime variables:":
            continue
        rm = re.match(r"(rt\d+): ([^;]*); (.*)", s)
        if rm and cur:
            cur[-1].rts[rm.group(1)] = (rm.group(2).strip(), rm.group(3))
        else:
            cur.append(Access("UNDEFINED" if s.startswith("unknown indexing") else s))
    return sections


# ---------------------------------------------------------------------------
# Comparing accesses.


def results_text(m):
    mt = MapText.parse(m)
    return None if mt is None else [one_line(r) for r in mt.results]


def access_equal(ours, xla, hloc):
    """(equal?, detail). See the module docs for what equal means."""
    if ours.map in ("KNOWN EMPTY", "UNDEFINED") or xla.map in ("KNOWN EMPTY", "UNDEFINED"):
        if ours.map == xla.map:
            return True, ""
        if "UNDEFINED" in (ours.map, xla.map):
            return False, f"hloc {ours.map} vs XLA {xla.map}"
        verdict, line = hloc.equiv(ours.map, xla.map)
        return verdict == "equal", line
    o, x = MapText.parse(ours.map), MapText.parse(xla.map)
    if o is None or x is None:
        return False, "unparsable map"
    if len(o.dims) != len(x.dims):
        return False, f"dimension counts differ: {len(o.dims)} vs {len(x.dims)}"
    if len(o.syms) != len(x.syms):
        return False, f"range variable counts differ: {len(o.syms)} vs {len(x.syms)}"
    x, xla = fix_single_valued_rts(x, xla)
    if len(o.dims) != len(x.dims) or len(o.rts) != len(x.rts):
        return False, (f"variable counts differ: {len(o.dims)}d/{len(o.rts)}rt vs "
                       f"{len(x.dims)}d/{len(x.rts)}rt")
    # Canonical names on XLA's side.
    xmap = {n: f"d{i}" for i, n in enumerate(x.dims)}
    xmap.update({n: f"s{i}" for i, n in enumerate(x.syms)})
    xmap.update({n: f"rt{i}" for i, n in enumerate(x.rts)})
    xc = x.renamed({k: v for k, v in xmap.items() if k != v})
    xrts = {xmap.get(k, k): v for k, v in xla.rts.items()}
    last = "no pairing of variables"
    for rt_perm in rt_pairings(o, ours.rts, xc, xrts):
        for sym_perm in itertools.permutations(range(len(o.syms))):
            mapping = {o.syms[i]: f"__s{sym_perm[i]}" for i in range(len(o.syms))}
            mapping.update({o.rts[i]: f"__rt{rt_perm[i]}" for i in range(len(o.rts))})
            oc = o.renamed(mapping).renamed(
                {f"__{k}": k for k in [f"s{i}" for i in range(len(o.syms))] +
                 [f"rt{i}" for i in range(len(o.rts))]})
            oc.syms = [f"s{i}" for i in range(len(o.syms))]
            oc.rts = [f"rt{i}" for i in range(len(o.rts))]
            # Compare on XLA's runtime bounds.
            restricted = with_rt_bounds(oc, xc, 0)
            verdict, line = hloc.equiv(restricted.text(), xc.text())
            if verdict != "equal":
                last = f"{verdict}: {line}\n      hloc: {restricted.text()}\n      XLA:  {xc.text()}"
                continue
            if not oc.rts:
                return True, ""
            widened = with_rt_bounds(oc, xc, 1)
            clamped = clamp_rts(widened, xc)
            verdict, line = hloc.equiv(widened.text(), clamped.text())
            if verdict == "equal":
                return True, ""
            last = (f"runtime values outside XLA's bounds matter ({verdict}: {line})"
                    f"\n      hloc: {oc.text()}\n      XLA:  {xc.text()}")
    return False, last


def fix_single_valued_rts(x, acc):
    """A runtime variable whose bounds hold one value c can only take c: it is the constant c
    (runtime variables are compared by the clamped values they can take)."""
    consts = {}
    for r in x.rts:
        b = x.bound(r)
        if b and b[0] == b[1]:
            consts[r] = str(b[0]) if b[0] >= 0 else f"({b[0]})"
    if not consts:
        return x, acc
    keep = [r for r in x.rts if r not in consts]
    items = [it for it in x.items
             if not re.fullmatch(r"(\w+)\s+in\s*\[.*\]", it) or
             re.fullmatch(r"(\w+)\s+in\s*\[.*\]", it).group(1) not in consts]
    sub = MapText(x.dims, x.syms, x.rts, x.results, items).renamed(consts)
    renum = {r: f"rt{i}" for i, r in enumerate(keep) if r != f"rt{i}"}
    sub.rts = keep
    sub = sub.renamed(renum)
    rts = {renum.get(k, k): v for k, v in acc.rts.items() if k not in consts}
    return sub, Access(sub.text(), rts)


def same_producer(ours, xla):
    """hloc's parser makes repeated instruction names unique with a `.N` suffix."""
    return ours == xla or re.fullmatch(re.escape(xla) + r"\.\d+", ours) is not None


def rt_pairings(o, orts, x, xrts):
    """Permutations p (hloc rt i -> XLA rt p[i]) pairing runtime variables that read the same
    instruction at the same element."""
    n = len(o.rts)
    if n == 0:
        yield ()
        return
    def same(i, j):
        po, pm = orts.get(o.rts[i], ("?", ""))
        px, xm = xrts.get(f"rt{j}", ("?", ""))
        return same_producer(po, px) and results_text(pm) == results_text(xm)
    for perm in itertools.permutations(range(n)):
        if all(same(i, perm[i]) for i in range(n)):
            yield perm


def with_rt_bounds(m, x, widen):
    """m with every runtime variable bounded by XLA's bounds, widened by `widen`."""
    items = []
    for it in m.items:
        mm = re.fullmatch(r"(rt\d+)\s+in\s*\[.*\]", it)
        if mm:
            lo, hi = x.bound(mm.group(1))
            items.append(f"{mm.group(1)} in [{lo - widen}, {hi + widen}]")
        else:
            items.append(it)
    return MapText(m.dims, m.syms, m.rts, m.results, items)


def clamp_rts(m, x):
    """m with every runtime variable replaced by its clamp to XLA's bounds (not in bounds)."""
    mapping = {}
    for r in m.rts:
        lo, hi = x.bound(r)
        mapping[r] = f"min(max({r}, {lo}), {hi})"
    pat = re.compile(r"\b(rt\d+)\b")
    sub = lambda s: pat.sub(lambda mm: mapping[mm.group(1)], s)
    items = [it if re.fullmatch(r"rt\d+\s+in\s*\[.*\]", it) else
             re.sub(r"^(.*?)(\s+in\s*\[[^\]]*\])$", lambda mm: sub(mm.group(1)) + mm.group(2), it)
             for it in m.items]
    return MapText(m.dims, m.syms, m.rts, [sub(r) for r in m.results], items)


def sets_equal(ours, xla, hloc):
    """Per-operand sets: (equal?, detail)."""
    if set(ours) != set(xla):
        return False, f"operands differ: hloc {sorted(ours)} vs XLA {sorted(xla)}"
    for op in sorted(xla):
        o = dedupe(ours[op])
        x = dedupe(xla[op])
        if len(o) != len(x):
            return False, (f"operand {op}: {len(o)} maps vs XLA's {len(x)}:\n      hloc: "
                           + "\n            ".join(a.map for a in o) + "\n      XLA:  "
                           + "\n            ".join(one_line(a.map) for a in x))
        ok, detail = match_all(o, x, hloc)
        if not ok:
            return False, f"operand {op}: {detail}"
    return True, ""


def dedupe(accs):
    """Distinct maps; KNOWN EMPTY maps read nothing, so a set of them is the empty set."""
    out, seen = [], set()
    for a in accs:
        k = one_line(a.map)
        if k == "KNOWN EMPTY":
            continue
        if k not in seen:
            seen.add(k)
            out.append(a)
    return out


def match_all(o, x, hloc):
    """Is there a pairing of o and x with every pair equal?"""
    eq = {}
    detail = ""
    for i, a in enumerate(o):
        for j, b in enumerate(x):
            ok, d = access_equal(a, b, hloc)
            eq[i, j] = ok
            if not ok and not detail:
                detail = d
    for perm in itertools.permutations(range(len(x))):
        if all(eq[i, perm[i]] for i in range(len(o))):
            return True, ""
    return False, detail


# ---------------------------------------------------------------------------
# indexing_analysis_test.cc: op and fusion indexing expectations.


def hlo_root_info(module):
    """(entry root name, [its operand names]) of a module text."""
    entry = re.search(r"ENTRY\s+[%\w.\-]+\s*(?:\([^)]*\)\s*->\s*[^{]*)?\{(.*?)\n\s*\}", module, re.S)
    body = entry.group(1) if entry else module
    m = re.search(r"ROOT\s+%?([\w.\-]+)\s*=\s*(.*)", body, re.S)
    if not m:
        return None, []
    rest = m.group(2)
    op = re.search(r"\s([a-z][\w\-]*)\(", rest)
    if not op:
        return m.group(1), []
    args = call_args(rest, op.end() - 1)
    names = [re.sub(r"^.*?%?([\w.\-]+)$", r"\1", a.strip()) for a in args]
    return m.group(1), names


def analysis_cases(path, src, hloc):
    cases = []
    for name, body, line in tests(src):
        module = None
        for m in re.finditer(r"(ParseAndGetRoot|ParseAndReturnVerifiedModule)\(", body):
            module = literal_after(body, m.end())
            break
        if module is None:
            continue
        root, root_ops = hlo_root_info(module)
        consts = {m.group(1): literal_after(body, m.end())
                  for m in re.finditer(r"constexpr\s+absl::string_view\s+(\w+)\s*=", body)}
        queries = {}  # var -> (args, output id or None) or ("unsupported", reason)
        for m in re.finditer(r"(?:auto|HloInstructionIndexing)\s+(\w+)\s*=\s*"
                             r"(GetOutputToInputIndexing|GetInputToOutputIndexing)\(", body):
            queries[m.group(1)] = query_of(m.group(2), call_args(body, m.end() - 1))
        instr_vars = {"root": root}
        for m in re.finditer(r"(\w+)\s*=\s*root->operand\((\d+)\)", body):
            k = int(m.group(2))
            instr_vars[m.group(1)] = root_ops[k] if k < len(root_ops) else None
        for m in re.finditer(r"(\w+)\s*=\s*\w+->GetInstructionWithName\(\"([^\"]+)\"\)", body):
            instr_vars[m.group(1)] = m.group(2)
        for m in re.finditer(r"HloInstructionAdaptor\s+(\w+)\(\s*\*\s*\w+->"
                             r"GetInstructionWithName\(\"([^\"]+)\"\)", body):
            instr_vars[m.group(1)] = m.group(2)
        for m in re.finditer(r"EXPECT_THAT\(", body):
            args = call_args(body, m.end() - 1)
            if len(args) != 2:
                continue
            case = Case(path, "indexing", name, line)
            cases.append(case)
            target, matcher = args
            run_analysis_case(case, module, target, matcher, queries, consts, instr_vars,
                              body, hloc)
    return cases


def query_of(fn, args):
    direction = "out-to-in" if fn == "GetOutputToInputIndexing" else "in-to-out"
    rest = [re.sub(r"/\*.*?\*/", "", a).strip() for a in args[1:]]
    physical = ["--physical-layout"] if len(rest) >= 2 and rest[1] == "true" else []
    k = int(rest[0]) if rest and rest[0].isdigit() else 0
    if direction == "out-to-in":
        return (["--direction", "out-to-in"] + physical, k)
    return (["--direction", "in-to-out", "--operand", str(k)] + physical, None)


def run_analysis_case(case, module, target, matcher, queries, consts, instr_vars, body, hloc):
    # The indexing object and its expected text.
    tm = re.fullmatch(r"(\w+)\.(ToString\(\)|indexing_maps)", target)
    inline = re.match(r"(GetOutputToInputIndexing|GetInputToOutputIndexing)\(", target)
    if inline:
        q = query_of(inline.group(1), call_args(target, inline.end() - 1))
        form = "ToString()" if target.endswith(".ToString()") else "indexing_maps"
    elif tm and tm.group(1) in queries:
        q, form = queries[tm.group(1)], tm.group(2)
    elif target.startswith("ToString(ComputeEpilogueInputToOutputIndexing("):
        return epilogue_case(case, module, target, matcher, instr_vars, hloc)
    elif tm or re.fullmatch(r"\w+", target):
        var = tm.group(1) if tm else target
        return grouped_case(case, module, var, matcher, body, instr_vars, hloc)
    else:
        case.extracted, case.reason = False, "API without a command-line equivalent: " + target[:60]
        return
    if q[0] == "unsupported":
        case.extracted, case.reason = False, q[1]
        return
    args, output_id = q
    expected = expected_sets(form, matcher, consts)
    if expected is None:
        case.extracted, case.reason = False, "matcher not understood: " + matcher[:60]
        return
    rc, out, err = hloc.indexing(module, args)
    if rc != 0:
        case.detail = "hloc failed: " + err
        return
    if "in-to-out" in args:
        ours = {}
        sections = hloc_sections(out, "output id")
        ours = sections
    else:
        ours = parse_hloc_out_to_in(out, output_id)
    case.equal, case.detail = sets_equal(ours, expected, hloc)
    if not case.equal:
        case.detail += "\n      (hloc " + " ".join(args) + ")"


def expected_sets(form, matcher, consts):
    """XLA's expectation as {operand: [Access]}, or None if not understood."""
    if matcher.strip() == "IsEmpty()":
        return {}
    if form == "ToString()":
        mm = re.match(r"MatchIndexingString\(", matcher)
        if not mm:
            return None
        text = literal_after(matcher, mm.end())
        return parse_sections(text) if text is not None else None
    # indexing_maps: ElementsAre(<per operand>(MatchOperandIndexing(...), ...), ...)
    mm = re.match(r"ElementsAre\(", matcher)
    if not mm:
        return None
    out = {}
    for k, per_op in enumerate(call_args(matcher, mm.end() - 1)):
        pm = re.match(r"(?:Unordered)?ElementsAre\(", per_op)
        if not pm:
            return None
        accs = []
        for item in call_args(per_op, pm.end() - 1):
            im = re.match(r"MatchOperandIndexing\(", item)
            if not im:
                return None
            arg = call_args(item, im.end() - 1)[0]
            text = consts.get(arg.strip()) or literal_after(arg, 0)
            if text is None:
                return None
            accs.extend(parse_accesses(text))
        out[k] = accs
    return out


def grouped_case(case, module, var, matcher, body, instr_vars, hloc):
    """Producer-consumer groupings (`HloFusionAdaptor::ForProducerConsumer`) and
    `GroupIndexingMapsByProducers` of the root's own maps."""
    decl = re.search(r"\b" + var + r"\s*=\s*(\w+)\(", body)
    if not decl:
        case.extracted, case.reason = False, "API without a command-line equivalent"
        return
    fn = decl.group(1)
    pairs = re.findall(r"Pair\(\s*&?([\w.()>\-]+?)\s*,\s*(?:Unordered)?ElementsAre\(", matcher)
    if fn == "GroupIndexingMapsByProducers":
        args = ["--direction", "out-to-in"]
        rc, out, err = hloc.indexing(module, args)
        secs = parse_hloc_out_to_in(out, 0)
        root, ops = hlo_root_info(module)
        ours = {}
        for k, name in enumerate(ops):
            ours.setdefault(name, []).extend(secs.get(k, []))
    elif fn == "ComputeGroupedOutputToInputIndexing":
        adaptor = re.search(r"ForProducerConsumer\((\w+),\s*(\w+)\)", body)
        if not adaptor:
            return region_case(case, module, decl, matcher, body, instr_vars, hloc)
        if "GetRoots()[0]" not in body[decl.start():decl.start() + 200]:
            case.extracted, case.reason = False, ("grouped indexing of a producer-consumer pair "
                                                  "from a non-root (no command-line equivalent)")
            return
        p, c = instr_vars.get(adaptor.group(1)), instr_vars.get(adaptor.group(2))
        rc, out, err = hloc.indexing(module, ["--producer", p, "--consumer", c])
        if rc != 0:
            case.detail = "hloc failed: " + err
            return
        ours = parse_hloc_instr_sections(out)
    else:
        case.extracted, case.reason = False, f"{fn} has no command-line equivalent"
        return
    expected = {}
    for m in re.finditer(r"Pair\(", matcher):
        pa = call_args(matcher, m.end() - 1)
        who = instr_vars.get(pa[0].strip().lstrip("&"))
        if who is None:
            case.extracted, case.reason = False, "instruction not resolved: " + pa[0]
            return
        em = re.match(r"(?:Unordered)?ElementsAre\(", pa[1])
        accs = []
        for item in call_args(pa[1], em.end() - 1):
            im = re.match(r"MatchOperandIndexing\(", item)
            accs.extend(parse_accesses(literal_after(item, im.end())))
        expected[who] = accs
    ours = {k: v for k, v in ours.items() if k in expected or v}
    case.equal, case.detail = sets_equal(ours, expected, hloc)


# ---------------------------------------------------------------------------
# Regions of one instruction or fusion from any start (`HloFusionAdaptor::ForInstruction`),
# and epilogue maps (`ComputeEpilogueInputToOutputIndexing`).


def hlo_structure(module):
    """{instruction name: (opcode, [operand names], called computation or None, computation)}
    and {computation: root name}, of a module text as hloc names it (`hloc fmt`)."""
    instrs, roots, comp = {}, {}, None
    lines = []
    for raw in module.splitlines():
        line = raw.strip()
        if not line or line.startswith("HloModule"):
            continue
        head = re.match(r"(?:ENTRY\s+)?%?([\w.\-]+)\s*(?:\(.*\)\s*->\s*.*)?\{$", line)
        if head and "=" not in line:
            comp = head.group(1)
            continue
        if line == "}":
            continue
        if re.match(r"(ROOT\s+)?%?[\w.\-]+\s*=", line) or not lines:
            lines.append((comp, line))
        else:
            lines[-1] = (lines[-1][0], lines[-1][1] + " " + line)
    for comp, line in lines:
        m = re.match(r"(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)", line)
        if not m:
            continue
        rest = m.group(3)
        op = re.search(r"\s([a-z][\w\-]*)\(", " " + rest)
        if not op:
            continue
        args = call_args(" " + rest, op.end() - 1)
        names = [re.sub(r"^.*?%?([\w.\-]+)$", r"\1", a.strip()) for a in args]
        calls = re.search(r"calls=%?([\w.\-]+)", rest)
        instrs[m.group(2)] = (op.group(1), names, calls.group(1) if calls else None, comp)
        if m.group(1):
            roots[comp] = m.group(2)
    return instrs, roots


def adaptor_resolver(module, body, instr_vars, hloc):
    """A function from an adaptor expression of the test (`fusion_adaptor->GetRoots()[0]`,
    `x.GetOperand(0)`, a variable holding one, `&x.instruction()`, `root->operand(1)`) to
    the name of the instruction it stands for, in hloc's names; and hloc's module text."""
    rc, text, _ = hloc.run(["fmt", "-"], module)
    text = text if rc == 0 else module
    instrs, roots = hlo_structure(text)
    regions = dict(re.findall(r"(\w+)\s*=\s*HloFusionAdaptor::ForInstruction\((\w+)\)", body))
    region_of = {}  # adaptor expression prefix -> region instruction name

    def region_root(var):
        region = instr_vars.get(regions.get(var, ""), None)
        if region is None or region not in instrs:
            return None
        op, _, calls, _ = instrs[region]
        region_of["region"] = region
        return roots.get(calls) if op == "fusion" and calls else region

    def operand(name, k):
        if name is None or name not in instrs:
            return None
        ops = instrs[name][1]
        if k >= len(ops):
            return None
        o = ops[k]
        # A parameter of the region's fused computation stands for the fusion's operand.
        region = region_of.get("region")
        if region and o in instrs and instrs[o][0] == "parameter":
            rop, rops, rcalls, _ = instrs[region]
            if instrs[o][3] == rcalls:
                num = re.search(r"(?<![\w.\-])%?" + re.escape(o) +
                                r"\s*=[^\n]*?\bparameter\((\d+)\)", text)
                if num and int(num.group(1)) < len(rops):
                    return rops[int(num.group(1))]
        return o

    def resolve(expr, depth=0):
        e = expr.strip().lstrip("&").strip()
        e = re.sub(r"\.instruction\(\)$", "", e)
        if depth > 8:
            return None
        m = re.fullmatch(r"(\w+)->GetRoots\(\)\[0\]", e)
        if m:
            return region_root(m.group(1))
        m = re.fullmatch(r"(.+)\.GetOperand\((\d+)\)", e)
        if m:
            return operand(resolve(m.group(1), depth + 1), int(m.group(2)))
        m = re.fullmatch(r"(\w+)->operand\((\d+)\)", e)
        if m:
            return operand(resolve(m.group(1), depth + 1), int(m.group(2)))
        if re.fullmatch(r"\w+", e):
            if e in instr_vars:
                return instr_vars[e]
            d = re.search(r"(?:auto|HloInstructionAdaptor)\s+" + e + r"\s*=\s*([^;]+);", body)
            if d:
                return resolve(d.group(1), depth + 1)
        return None

    return resolve, instrs, roots


def region_case(case, module, decl, matcher, body, instr_vars, hloc):
    """`ComputeGroupedOutputToInputIndexing(*ForInstruction(I), start)`: hloc's
    `--instr I --grouped --from S`."""
    args = call_args(body, decl.end() - 1)
    adaptor = re.fullmatch(r"\*\s*(\w+)", args[0].strip()) if args else None
    regions = dict(re.findall(r"(\w+)\s*=\s*HloFusionAdaptor::ForInstruction\((\w+)\)", body))
    if not adaptor or adaptor.group(1) not in regions:
        case.extracted, case.reason = False, "grouped indexing of an adaptor not understood"
        return
    resolve, _, _ = adaptor_resolver(module, body, instr_vars, hloc)
    region = instr_vars.get(regions[adaptor.group(1)])
    start = resolve(args[1])
    if region is None or start is None:
        case.extracted, case.reason = False, "region or start not resolved: " + args[1][:40]
        return
    rc, out, err = hloc.indexing(module, ["--instr", region, "--grouped", "--from", start])
    if rc != 0:
        case.detail = "hloc failed: " + err
        return
    # XLA's grouping starts from output 0 of the start.
    parts = re.split(r"^output id = (\d+)$", out, flags=re.M)
    if len(parts) > 1:
        out = parts[2]
    ours = parse_hloc_instr_sections(out)
    expected = {}
    for m in re.finditer(r"Pair\(", matcher):
        pa = call_args(matcher, m.end() - 1)
        who = resolve(pa[0])
        if who is None:
            case.extracted, case.reason = False, "instruction not resolved: " + pa[0]
            return
        em = re.match(r"(?:Unordered)?ElementsAre\(", pa[1])
        accs = []
        for item in call_args(pa[1], em.end() - 1):
            im = re.match(r"MatchOperandIndexing\(", item)
            accs.extend(parse_accesses(literal_after(item, im.end())))
        expected[who] = accs
    case.equal, case.detail = sets_equal(ours, expected, hloc)
    if not case.equal:
        case.detail += f"\n      (hloc --instr {region} --grouped --from {start})"


def epilogue_case(case, module, target, matcher, instr_vars, hloc):
    """`ComputeEpilogueInputToOutputIndexing(hero, root)`: hloc's `--epilogue HERO --to ROOT`."""
    inner = target[len("ToString("):]
    args = call_args(inner, inner.index("("))
    hero, root = instr_vars.get(args[0].strip()), instr_vars.get(args[1].strip())
    instrs, _ = hlo_structure(module)
    if hero is None or root is None or hero not in instrs:
        case.extracted, case.reason = False, "epilogue instructions not resolved"
        return
    mm = re.match(r"MatchIndexingString\(", matcher)
    text = literal_after(matcher, mm.end()) if mm else None
    if text is None:
        case.extracted, case.reason = False, "matcher not understood: " + matcher[:60]
        return
    rc, out, err = hloc.indexing(module, ["--epilogue", hero, "--to", root])
    if rc != 0:
        case.detail = "hloc failed: " + err
        return
    ours = hloc_sections(out, "output id")
    case.equal, case.detail = sets_equal(ours, {0: parse_accesses(text)}, hloc)
    if not case.equal:
        case.detail += f"\n      (hloc --epilogue {hero} --to {root})"


# ---------------------------------------------------------------------------
# Deliberate differences: where XLA's expectation is imprecise or wrong and hloc is exact.
# A case listed here is still run; it is reported as a deliberate difference while hloc's
# answer differs, and as a failure of this list when it becomes equal.

DELIBERATE = {
    "ConstraintIntervalSimplification_FloorDivNegativeDivisorNegativeBounds":
        "XLA's interval for a variable bounded by a floordiv constraint with a negative "
        "divisor is shifted (it holds non-solutions and misses solutions); hloc's is exact",
    "DynamicUpdateSliceOp":
        "hloc's update map keeps the window constraint (an output element outside the "
        "updated window reads no update element); XLA's map is a superset",
    "FusionOpWithDynSliceOfDynSlice":
        "XLA bounds each runtime variable with another one's clamp range after "
        "composition (the inner offset gets the outer slice's range); hloc clamps each "
        "offset to its own slice's range",
    "ConvolutionOp_PaddingAndWindowStride":
        "hloc's kernel map excludes the window positions that fall on padding (the "
        "evaluator does not read the kernel there); XLA's kernel map is a superset",
    "ConvolutionOp_LhsDilation":
        "hloc's kernel map excludes the window positions that fall between dilated input "
        "elements; XLA's kernel map is a superset",
    "ConvolutionOp_BatchGroups":
        "hloc reads one batch group per output feature (the group is the output feature "
        "floordiv features per group); XLA's extra range variable reads every group",
    "UnsupportedOps":
        "hloc describes triangular-solve (a superset: the whole matrix of the batch); XLA "
        "says unknown indexing",
    "FusionWithUnsupportedOp":
        "hloc describes triangular-solve (a superset: the whole matrix of the batch); XLA "
        "says unknown indexing",
    "FusionWithRTVarsSimplification_ScalarConstantOutsideOfRangeIsKept":
        "hloc folds the constant offset to its clamped value (a map without runtime "
        "variables); XLA keeps a runtime variable for a known value",
    "FusionWithRTVarsSimplification_Iota":
        "gather start indices from an iota past the operand's last row are clamped to it; "
        "hloc's map has the clamp, XLA's reads out of bounds",
}


# ---------------------------------------------------------------------------
# Report.


def report(cases, verbose):
    fams = {}
    for c in cases:
        fams.setdefault((os.path.basename(c.file), c.family), []).append(c)
    print(f"{'file':28} {'family':12} {'cases':>5} {'extracted':>9} {'equal':>5} "
          f"{'deliberate':>10} {'agreement':>9} {'<= nodes':>8}")
    for (f, fam), cs in sorted(fams.items()):
        ext = [c for c in cs if c.extracted]
        eq = [c for c in ext if c.equal]
        deliberate = [c for c in ext if not c.equal and c.name in DELIBERATE]
        counted = [c for c in ext if c.nodes_ok is not None and c.name not in DELIBERATE]
        nodes = (f"{sum(1 for c in counted if c.nodes_ok and c.equal)}/{len(counted)}"
                 if fam not in ("indexing", "other") else "-")
        judged = len(ext) - len(deliberate)
        pct = f"{100.0 * len(eq) / judged:.1f}%" if judged else "-"
        print(f"{f:28} {fam:12} {len(cs):5} {len(ext):9} {len(eq):5} {len(deliberate):10} "
              f"{pct:>9} {nodes:>8}")
    print("(agreement: equal / (extracted - deliberate differences); <= nodes: equal with no "
          "more nodes than XLA's text, of the cases where XLA's text is the reference)")
    not_ext = [c for c in cases if not c.extracted]
    if not_ext:
        print("\nnot extracted:")
        reasons = {}
        for c in not_ext:
            reasons.setdefault(c.reason, []).append(c.name)
        for r, names in sorted(reasons.items()):
            print(f"  {len(names)} x {r}: {', '.join(sorted(set(names)))}")
    deliberate = [c for c in cases if c.extracted and not c.equal and c.name in DELIBERATE]
    if deliberate:
        print("\ndeliberate differences (XLA imprecise or wrong, hloc exact):")
        for name in sorted({c.name for c in deliberate}):
            n = sum(1 for c in deliberate if c.name == name)
            print(f"  {name} ({n}): {DELIBERATE[name]}")
    fixed = sorted({c.name for c in cases if c.equal and c.name in DELIBERATE})
    for name in fixed:
        print(f"\nlisted as deliberate but now equal (update DELIBERATE): {name}")
    bad = [c for c in cases if c.extracted and c.name not in DELIBERATE
           and (not c.equal or c.nodes_ok is False)]
    if bad:
        print("\nfailures:")
        for c in bad:
            what = "not equal" if not c.equal else "more nodes"
            print(f"  {os.path.basename(c.file)}:{c.line} {c.name} [{c.family}] {what}")
            if verbose:
                print("      " + c.detail.strip())
    if verbose:
        for c in deliberate:
            print(f"\n  {c.name} (deliberate):\n      " + c.detail.strip())
    return 1 if bad or fixed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="local copies of XLA's test files")
    ap.add_argument("--hloc", default="target/debug/hloc")
    ap.add_argument("--z3", action="store_true",
                    help="prove with `hloc map equiv --z3` what enumeration cannot decide")
    ap.add_argument("--verbose", action="store_true", help="print each failure's details")
    a = ap.parse_args()
    hloc = Hloc(a.hloc, a.z3)
    cases = []
    for path in a.files:
        print(f"XLA revision: {revision(path)} ({path})")
        src = open(path, encoding="utf-8").read()
        if "IndexingAnalysisTest" in src:
            cases += analysis_cases(path, src, hloc)
        elif "IndexingMapTest" in src:
            cases += map_test_cases(path, src, hloc)
        else:
            print(f"{path}: not an indexing test file (no known fixture)", file=sys.stderr)
            return 2
    return report(cases, a.verbose)


if __name__ == "__main__":
    sys.exit(main())
