#!/usr/bin/env python3
"""Fails when the source files of a workspace crate form a circle of imports.

For every crate (`cargo metadata --no-deps`) and every target of it (library, binaries,
tests, examples, benches) the modules are found from the target's root file through its
`mod x;` declarations; a module is its file (`mod.rs`, or `foo.rs` with a `foo/` folder, is
the parent of the files in that folder; a `mod x { ... }` written inline belongs to the file
it is written in). The files of a crate are the nodes of a graph with an edge A -> B when
A names an item of B:

  * a `use` of `crate::...`, `self::...`, `super::...` (relative to the module A's code is
    in, inline modules included) or of a module in scope (`use child::X` in a parent);
  * a path in code: `crate::x::f()`, `super::Foo`, `self::child::g()`, `child::h()` or
    `alias::f()` where `alias` is a module brought in by a `use`;
  * a name brought in by a glob (`use super::*`): each identifier of A that looks like an
    item (capitalized, or called: `f(`, `f::<T>(`, `m!`) and that the glob's module defines or
    imports.

A path is followed through re-exports to the file that defines the item (`crate::Foo`
where lib.rs says `pub use analysis::Foo` is an edge to analysis.rs, not to lib.rs), and a
path into a module that does not visibly define the name (an item a macro generates, an enum
variant) counts as the module's file. What is not an edge:

  * a parent declaring its children (`mod x;`, `pub mod x;`): that is structure;
  * a `pub use` / `pub(crate) use` by which a parent module (lib.rs, main.rs, mod.rs, foo.rs
    with foo/) re-exports items of its own descendants: that is the facade, and every user of
    the re-export gets its edge to the defining file instead. Any other use of a child's
    items by its parent (`use child::X`, `child::f()`) is an edge parent -> child, and a
    child using its parent's items (`super::Foo`) is an edge child -> parent;
  * a `use` that names a module (`use super::structure;`): its uses in code are the edges;
  * external crates, std, and anything that does not resolve to a file of the crate.

Comments, string and character literals are blanked before scanning (doc examples do not
count). Not seen: inherent methods called on a type whose `impl` lives in another file, and
macros reached by textual scope (`macro_rules!` above a `mod x;`) rather than by path.

Each strongly connected component (Tarjan) of more than one file is a circle, printed as
`crate: a.rs -> b.rs -> a.rs` (a closed walk through all its files, paths relative to the
crate) with the first lines that make each edge; the exit status is then 1. Otherwise one
summary line. `--crates a,b` restricts the check to those crates (package or folder names);
`--edges` also prints every edge with the lines that make it; `--self-test` checks the
lexer and the edges of a small crate written to a temporary folder. Standard library only.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile
from collections import deque

ROOT = pathlib.Path(__file__).resolve().parent.parent

KEYWORDS = {
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
    "extern", "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod",
    "move", "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super",
    "trait", "true", "type", "unsafe", "use", "where", "while", "union", "macro_rules",
}
ITEM_KEYWORDS = {"fn", "struct", "enum", "trait", "type", "const", "static", "union"}
PATH_STARTS = {"crate", "self", "super"}
EVIDENCE_PER_EDGE = 2


# ----------------------------------------------------------------------------------------
# Lexing


def strip_comments_and_strings(text):
    """Blanks comments, string and char literals, keeping line breaks (and so line numbers).

    A string becomes `""` and a char `''`; lifetimes and labels (`'a`) are kept.
    """
    out = []
    i, n = 0, len(text)

    def keep_newlines(a, b):
        out.append("\n" * text.count("\n", a, b))

    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "/" and nxt == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            keep_newlines(i, j)
            out.append(" ")
            i = j
            continue
        prev_ident = i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")
        if not prev_ident:
            m = re.compile(r'(?:b|c)?r(#*)"').match(text, i)
            if m:
                close = '"' + m.group(1)
                j = text.find(close, m.end())
                j = n if j < 0 else j + len(close)
                keep_newlines(i, j)
                out.append('""')
                i = j
                continue
            if c in "bc" and nxt == '"':
                i += 1
                c = '"'
            elif c == "b" and nxt == "'":
                i += 1
                c = "'"
                nxt = text[i + 1] if i + 1 < n else ""
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            keep_newlines(i, j)
            out.append('""')
            i = j
            continue
        if c == "'":
            end = -1
            if nxt == "\\":
                end = text.find("'", i + 3)
            elif i + 2 < n and text[i + 2] == "'":
                end = i + 2
            if end >= 0:
                out.append("''")
                i = end + 1
                continue
        out.append(c)
        i += 1
    return "".join(out)


TOKEN_RE = re.compile(
    r"""(?P<ws>\s+)
      | (?P<ident>(?:r\#)?[A-Za-z_][A-Za-z0-9_]*)
      | (?P<life>'[A-Za-z_][A-Za-z0-9_]*)
      | (?P<lit>""|''|[0-9][A-Za-z0-9_]*(?:\.[0-9][A-Za-z0-9_]*)?)
      | (?P<path>::)
      | (?P<punct>.)""",
    re.X | re.S,
)


def tokenize(clean):
    """Tokens of blanked source as (kind, text, line); kinds: ident, lit, ::, punct."""
    tokens, line = [], 1
    for m in TOKEN_RE.finditer(clean):
        kind, text = m.lastgroup, m.group()
        if kind == "ws":
            line += text.count("\n")
            continue
        if kind == "life":
            continue
        if kind == "ident" and text.startswith("r#"):
            text = text[2:]
        tokens.append(("::" if kind == "path" else kind, text, line))
    return tokens


# ----------------------------------------------------------------------------------------
# Parsing one file


class Import:
    """One name brought in by a `use`: `segs` (the path), `name` (None for a glob)."""

    def __init__(self, scope, segs, name, line, public):
        self.scope, self.segs, self.name, self.line, self.public = (
            scope, segs, name, line, public)


class ParsedFile:
    """What a file declares and refers to; module paths are relative to the file's module.

    `scopes` maps an inline module path (a tuple, () for the file itself) to its
    `children` (declared with `mod x;`, as file modules), `inline` (`mod x { }`), `defs`
    (item names), `imports` (name -> [Import]) and `globs` ([Import]); `refs` lists the
    paths in code as (scope, segments, line).
    """

    def __init__(self, path):
        self.path = path
        self.scopes = {}
        self.refs = []
        self.all_imports = []
        self._parse(tokenize(strip_comments_and_strings(path.read_text())))

    def scope(self, key):
        """The declarations of inline module `key`, created empty on first use."""
        if key not in self.scopes:
            self.scopes[key] = {
                "children": set(), "inline": set(), "defs": set(), "imports": {},
                "globs": [],
            }
        return self.scopes[key]

    def _parse(self, toks):
        self.scope(())
        frames = []  # one per open brace: a module name, or None for any other block
        pending_mod = None
        public = False
        i, n = 0, len(toks)
        while i < n:
            kind, text, line = toks[i]
            mods = tuple(f for f in frames if f is not None)
            at_module_level = all(f is not None for f in frames)
            if kind == "punct" and text == "{":
                frames.append(pending_mod)
                pending_mod = None
                i += 1
                continue
            if kind == "punct" and text == "}":
                if frames:
                    frames.pop()
                i += 1
                continue
            if kind == "ident" and text == "pub":
                public = True
                i += 1
                if i < n and toks[i][1] == "(":
                    depth = 0
                    while i < n:
                        depth += {"(": 1, ")": -1}.get(toks[i][1], 0)
                        i += 1
                        if depth == 0:
                            break
                continue
            if kind == "ident" and text == "use":
                i = self._parse_use(toks, i + 1, mods, public)
                public = False
                continue
            public = False
            if kind == "ident" and text == "mod" and i + 1 < n and toks[i + 1][0] == "ident":
                name = toks[i + 1][1]
                after = toks[i + 2][1] if i + 2 < n else ""
                if after == ";" and at_module_level:
                    self.scope(mods)["children"].add(name)
                elif after == "{":
                    pending_mod = name
                    if at_module_level:
                        self.scope(mods)["inline"].add(name)
                        self.scope(mods + (name,))
                i += 2
                continue
            if kind == "ident" and at_module_level and i + 1 < n:
                name_tok = None
                if text in ITEM_KEYWORDS:
                    j = i + 1
                    while j < n and toks[j][1] in ("mut", "fn", "unsafe", "async", "extern"):
                        j += 1
                    name_tok = toks[j] if j < n else None
                elif text == "macro_rules" and toks[i + 1][1] == "!" and i + 2 < n:
                    name_tok = toks[i + 2]
                if name_tok and name_tok[0] == "ident" and name_tok[1] not in KEYWORDS | {"_"}:
                    self.scope(mods)["defs"].add(name_tok[1])
            if kind == "ident":
                i = self._parse_ref(toks, i, mods)
                continue
            i += 1

    def _parse_ref(self, toks, i, mods):
        """Records the path that starts at token i (if any); returns the next index."""
        n = len(toks)
        prev = toks[i - 1][1] if i > 0 else ""
        if prev in (".", "::") or (prev == "$" and toks[i][1] != "crate"):
            return i + 1
        segs, line, j = [toks[i][1]], toks[i][2], i + 1
        while j + 1 < n and toks[j][0] == "::" and toks[j + 1][0] == "ident":
            segs.append(toks[j + 1][1])
            j += 2
        if len(segs) > 1:
            if segs[0] not in KEYWORDS or segs[0] in PATH_STARTS:
                self.refs.append((mods, tuple(segs), line))
            return j
        name = segs[0]
        if name in KEYWORDS or prev in ITEM_KEYWORDS or prev in ("mod", "let"):
            return j
        after = toks[j][1] if j < n else ""
        if name[0].isupper() or after in ("(", "!", "::"):
            self.refs.append((mods, (name,), line))
        return j

    def _parse_use(self, toks, i, mods, public):
        """Parses a use tree starting at token i; returns the index after its `;`."""
        n = len(toks)
        line = toks[i][2] if i < n else 0

        def tree(i, prefix):
            segs = list(prefix)
            if i < n and toks[i][0] == "::":
                segs.append("::")  # `use ::name`: an external crate
                i += 1
            while i < n:
                kind, text, _ = toks[i]
                if text == "*":
                    self._add_import(mods, Import(mods, tuple(segs), None, line, public))
                    return i + 1
                if text == "{":
                    i += 1
                    while i < n and toks[i][1] != "}":
                        i = tree(i, segs)
                        if i < n and toks[i][1] == ",":
                            i += 1
                    return i + 1
                if kind != "ident":
                    return i
                if text == "self" and segs:
                    name = segs[-1]
                else:
                    segs.append(text)
                    name = text
                i += 1
                if i < n and toks[i][0] == "::":
                    i += 1
                    continue
                if i + 1 < n and toks[i][1] == "as":
                    name = toks[i + 1][1]
                    i += 2
                self._add_import(mods, Import(mods, tuple(segs), name, line, public))
                return i
            return i

        i = tree(i, ())
        while i < n and toks[i][1] != ";":
            i += 1
        return i + 1

    def _add_import(self, mods, imp):
        scope = self.scope(mods)
        if imp.name is None:
            scope["globs"].append(imp)
        else:
            scope["imports"].setdefault(imp.name, []).append(imp)
        self.all_imports.append(imp)


# ----------------------------------------------------------------------------------------
# One target: its module tree and name resolution


class Target:
    """The module tree of one crate target, and paths resolved against it."""

    def __init__(self, root, parse):
        self.parse = parse
        self.file_of = {}  # module path -> file (Path), inline modules included
        self.file_mods = {}  # file -> its module path
        self.scope_of = {}  # module path -> (ParsedFile, inline path within it)
        self._memo = {}
        self._add_file((), root, root.parent)

    def _add_file(self, modpath, path, child_dir):
        if path in self.file_mods:
            return
        parsed = self.parse(path)
        self.file_mods[path] = modpath
        for inline, scope in parsed.scopes.items():
            self.file_of[modpath + inline] = path
            self.scope_of[modpath + inline] = (parsed, inline)
        for inline, scope in parsed.scopes.items():
            base = child_dir.joinpath(*inline)
            for child in sorted(scope["children"]):
                flat, nested = base / f"{child}.rs", base / child / "mod.rs"
                if flat.exists():
                    self._add_file(modpath + inline + (child,), flat, base / child)
                elif nested.exists():
                    self._add_file(modpath + inline + (child,), nested, base / child)

    def is_module(self, modpath):
        """Whether `modpath` names a module of this target."""
        return modpath in self.scope_of

    def member(self, modpath, name, seen=frozenset()):
        """What `name` is inside module `modpath`: ("mod", path), ("item", file) or None."""
        key = (modpath, name)
        if key in seen:
            return None
        seen = seen | {key}
        parsed, inline = self.scope_of[modpath]
        scope = parsed.scopes[inline]
        if name in scope["children"] or name in scope["inline"]:
            if self.is_module(modpath + (name,)):
                return ("mod", modpath + (name,))
        if name in scope["defs"]:
            return ("item", self.file_of[modpath])
        for imp in scope["imports"].get(name, []):
            found = self.resolve(modpath, imp.segs, seen)
            if found:
                return found
        for imp in scope["globs"]:
            found = self.resolve(modpath, imp.segs, seen)
            if found and found[0] == "mod":
                inner = self.member(found[1], name, seen)
                if inner:
                    return inner
        return None

    def resolve(self, ctx, segs, seen=frozenset()):
        """Resolves path `segs` written in module `ctx`: ("mod", path), ("item", file), None."""
        if not segs or segs[0] == "::":
            return None
        memo_key = (ctx, segs)
        if not seen and memo_key in self._memo:
            return self._memo[memo_key]
        result = self._resolve(ctx, list(segs), seen)
        if not seen:
            self._memo[memo_key] = result
        return result

    def _resolve(self, ctx, rest, seen):
        if rest[0] == "crate":
            cur, rest = (), rest[1:]
        elif rest[0] in ("self", "super"):
            cur = ctx
            while rest and rest[0] in ("self", "super"):
                if rest.pop(0) == "super":
                    if not cur:
                        return None
                    cur = cur[:-1]
        else:
            found = self.member(ctx, rest[0], seen)
            if found is None or found[0] == "item":
                return found
            cur, rest = found[1], rest[1:]
        if not self.is_module(cur):
            return None
        for name in rest:
            found = self.member(cur, name, seen)
            if found is None:
                return ("item", self.file_of[cur])
            if found[0] == "item":
                return found
            cur = found[1]
        return ("mod", cur)

    def edges(self):
        """Yields (from file, to file, line, text) for every reference across files."""
        for path, modpath in self.file_mods.items():
            parsed = self.parse(path)
            for imp in parsed.all_imports:
                # A glob of a module counts through the identifiers that use it; a glob of
                # an enum (`use crate::x::Kind::*`) is an edge to the enum's file.
                found = self.resolve(modpath + imp.scope, imp.segs)
                if not found or found[0] != "item" or found[1] == path:
                    continue
                if imp.public and self._is_descendant(found[1], modpath):
                    continue
                yield path, found[1], imp.line, "use " + "::".join(imp.segs)
            for inline, segs, line in parsed.refs:
                found = self.resolve(modpath + inline, segs)
                if found and found[0] == "item" and found[1] != path:
                    yield path, found[1], line, "::".join(segs)

    def _is_descendant(self, path, modpath):
        target = self.file_mods.get(path)
        return target is not None and target[: len(modpath)] == modpath and target != modpath


# ----------------------------------------------------------------------------------------
# Circles


def strongly_connected(nodes, succ):
    """Tarjan's strongly connected components of the graph `succ` (node -> set of nodes)."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = [0]
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(succ.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(succ.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                comps.append(comp)
    return comps


def shortest_path(succ, src, goals, allowed):
    """The shortest path from src to the nearest node of `goals`, through `allowed` nodes."""
    prev = {src: None}
    queue = deque([src])
    while queue:
        node = queue.popleft()
        for nxt in sorted(succ.get(node, ())):
            if nxt in allowed and nxt not in prev:
                prev[nxt] = node
                if nxt in goals:
                    path = [nxt]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return path[::-1]
                queue.append(nxt)
    return None


def closed_walk(succ, comp):
    """A closed walk through every node of strongly connected `comp`, first node repeated:
    from the smallest node, on to the nearest node not yet visited, and back."""
    members = set(comp)
    walk = [min(comp)]
    unvisited = members - {walk[0]}
    while unvisited:
        path = shortest_path(succ, walk[-1], unvisited, members)
        walk += path[1:]
        unvisited -= set(path)
    return walk + shortest_path(succ, walk[-1], {walk[0]}, members)[1:]


# ----------------------------------------------------------------------------------------
# Self-test


SELF_TEST_CRATE = {
    "lib.rs": "mod a;\nmod b;\nmod p;\nmod user;\npub use p::Thing;\n",
    "a.rs": "use crate::b::B;\npub struct A;\nfn f(_: B) {}\n",
    "b.rs": (
        "pub struct B;\n"
        "// crate::user::nothing\n"
        "fn g() { let _ = crate::a::A; let _ = \"crate::p::Thing\"; let _ = '\\''; }\n"
    ),
    "p/mod.rs": (
        "mod c;\nmod d;\npub use c::Thing;\n"
        "pub(crate) fn helper() {}\nfn uses() { d::run(); }\n"
    ),
    "p/c.rs": (
        "pub struct Thing;\n"
        "#[cfg(test)]\nmod tests {\n    use super::*;\n    fn t() { let _ = Thing; }\n}\n"
    ),
    "p/d.rs": "use super::*;\npub fn run() { helper(); }\n",
    "user.rs": "use crate::Thing;\nfn u(_: Thing) {}\n",
}


def self_test():
    """Checks the lexer and the edges of a small crate; exits 1 on a mismatch."""
    src = "let a = '\"'; x::<'a>(); /* c /* n */ crate::no */ r#\"crate::s\"# 'l: loop {} b'\\\\' y"
    stripped = strip_comments_and_strings(src)
    want = "let a = ''; x::<'a>();   \"\" 'l: loop {} '' y"
    failures = [] if stripped == want else [f"strip: {stripped!r} != {want!r}"]
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        for rel, text in SELF_TEST_CRATE.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        cache = {}

        def parse(path):
            return cache.setdefault(path, ParsedFile(path))

        target = Target(root / "lib.rs", parse)
        edges = {
            (a.relative_to(root).as_posix(), b.relative_to(root).as_posix())
            for a, b, _, _ in target.edges()
        }
        want_edges = {
            ("a.rs", "b.rs"),
            ("b.rs", "a.rs"),
            ("p/mod.rs", "p/d.rs"),
            ("p/d.rs", "p/mod.rs"),
            ("user.rs", "p/c.rs"),
        }
        if edges != want_edges:
            failures.append(f"edges: {sorted(edges)} != {sorted(want_edges)}")
        succ = {}
        for a, b in edges:
            succ.setdefault(a, set()).add(b)
        comps = sorted(sorted(c) for c in strongly_connected(sorted(succ), succ) if len(c) > 1)
        if comps != [["a.rs", "b.rs"], ["p/d.rs", "p/mod.rs"]]:
            failures.append(f"circles: {comps}")
    for f in failures:
        print(f"check_file_cycles: self-test: {f}", file=sys.stderr)
    if failures:
        sys.exit(1)
    print("check_file_cycles: self-test passed")


# ----------------------------------------------------------------------------------------
# Driver


def crates(selected):
    """(name, folder, [target root files]) of the workspace crates, restricted to `selected`."""
    meta = json.loads(
        subprocess.check_output(
            ["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=ROOT
        )
    )
    found = []
    for pkg in sorted(meta["packages"], key=lambda p: p["name"]):
        folder = pathlib.Path(pkg["manifest_path"]).parent
        if selected and pkg["name"] not in selected and folder.name not in selected:
            continue
        roots = [pathlib.Path(t["src_path"]) for t in pkg["targets"]]
        found.append((pkg["name"], folder, roots))
    if selected:
        known = {name for name, _, _ in found} | {f.name for _, f, _ in found}
        missing = sorted(set(selected) - known)
        if missing:
            sys.exit(f"check_file_cycles: no such crate: {', '.join(missing)}")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--crates", help="comma-separated crates to check (default: all)")
    parser.add_argument("--edges", action="store_true", help="print every edge and why")
    parser.add_argument("--self-test", action="store_true", help="check the checker, then exit")
    args = parser.parse_args()
    if args.self_test:
        self_test()
        return
    selected = set(filter(None, (args.crates or "").split(",")))

    cache = {}

    def parse(path):
        if path not in cache:
            cache[path] = ParsedFile(path)
        return cache[path]

    circles, n_files, n_edges = [], 0, 0
    for name, folder, roots in crates(selected):
        succ, evidence, files = {}, {}, set()
        for root in roots:
            target = Target(root, parse)
            files.update(target.file_mods)
            for src, dst, line, text in target.edges():
                succ.setdefault(src, set()).add(dst)
                lines = evidence.setdefault((src, dst), [])
                if (line, text) not in lines:
                    lines.append((line, text))
        n_files += len(files)
        n_edges += sum(len(s) for s in succ.values())

        def rel(p):
            return p.relative_to(folder).as_posix()

        if args.edges:
            for (src, dst), why in sorted(evidence.items()):
                shown = ", ".join(f"{line}: {text}" for line, text in sorted(why)[:3])
                print(f"{name}: {rel(src)} -> {rel(dst)}  ({shown})")

        for comp in strongly_connected(sorted(files), succ):
            if len(comp) < 2:
                continue
            walk = closed_walk(succ, comp)
            lines = [f"{name}: " + " -> ".join(rel(p) for p in walk)]
            for src, dst in zip(walk, walk[1:]):
                for line, text in sorted(evidence[(src, dst)])[:EVIDENCE_PER_EDGE]:
                    lines.append(f"    {rel(src)}:{line}: {text}  (-> {rel(dst)})")
            circles.append("\n".join(lines))
    for circle in circles:
        print(circle)
    scope = f"{len(selected)} crate(s)" if selected else "all crates"
    if circles:
        print(
            f"check_file_cycles: {len(circles)} circle(s) of files in {scope} "
            f"({n_files} files, {n_edges} edges)",
            file=sys.stderr,
        )
        sys.exit(1)
    print(f"check_file_cycles: {scope}, {n_files} files, {n_edges} edges, no circle of files")


if __name__ == "__main__":
    main()
