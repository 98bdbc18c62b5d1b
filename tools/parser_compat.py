#!/usr/bin/env python3
"""Agreement between hloc and XLA's HLO parser on the modules of XLA's parser tests.

Usage: tools/parser_compat.py PATH/TO/hlo_parser_test.cc [--hloc target/release/hloc]
                              [--verbose] [--dump DIR]

The test file (openxla/xla, xla/hlo/parser/hlo_parser_test.cc) is not part of this
repository: pass a copy of it. The script reads, without compiling anything:

- the round-trip tables (`CreateTestCases`, `CreateShortTestCases`,
  `CreateNonRoundtripTestCases`): every module there is expected to parse and verify;
- every `TEST`/`TEST_F` body that hands a string to `ParseAndReturnVerifiedModule` or
  `ParseAndReturnUnverifiedModule`: the string is resolved from the body's string
  variables (raw strings, concatenated literals, `absl::StrCat`, `absl::StrFormat` with
  literal arguments) and the expectation is read from the assertion around the call
  (`ASSERT_OK_AND_ASSIGN`, `TF_EXPECT_OK`, `EXPECT_EQ(absl::OkStatus(), ...)`, `.ok()`
  checks: success; `EXPECT_NE(absl::OkStatus(), ...)`, `ExpectHasSubstr`, `StatusIs`,
  `HasSubstr`, `ASSERT_FALSE(...ok())`: failure). Strings built in loops (or changed
  in any way the reader cannot follow) are counted as not extracted.

Then each module is run through `hloc fmt` and `hloc verify`. hloc accepts a module when
`fmt` succeeds and, where XLA also verified it (`ParseAndReturnVerifiedModule` or the
tables), `verify` succeeds too; hloc rejects a module when `fmt` or `verify` fails. A run
that does not end with exit status 0, 1 or 2 within the time limit (a crash, a hang) is
listed on its own and counts as a disagreement.

Prints the XLA revision the copy comes from (`revision`: its git checkout, or a REVISION
file beside it), the agreement table and the disagreements. Standard library only.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

TIMEOUT_S = 20


@dataclass
class Case:
    """One module of the test file and what XLA's test expects of it."""

    name: str
    text: str
    expect_ok: bool
    verified: bool
    line: int
    outcome: str = ""
    detail: str = ""
    extra: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------
# C++ lexing: just enough to find string literals, comments and matching braces.


def skip_ws_comments(src, i):
    """Index of the next character that is not white space or inside a comment."""
    n = len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j + 1
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            break
    return i


RAW_START = re.compile(r'(?:u8|u|U|L)?R"([^ ()\\\t\n]{0,16})\(')


def read_string_literal(src, i):
    """If a string literal starts at i, returns (value, end index); else None."""
    m = RAW_START.match(src, i)
    if m:
        delim = ")" + m.group(1) + '"'
        start = m.end()
        end = src.find(delim, start)
        if end < 0:
            return None
        return src[start:end], end + len(delim)
    if i < len(src) and src[i] == '"':
        out = []
        j = i + 1
        escapes = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "'": "'",
                   "0": "\0", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "?": "?"}
        while j < len(src) and src[j] != '"':
            if src[j] == "\\" and j + 1 < len(src):
                out.append(escapes.get(src[j + 1], src[j + 1]))
                j += 2
            else:
                out.append(src[j])
                j += 1
        return "".join(out), j + 1
    return None


def read_concatenated_literals(src, i):
    """Adjacent string literals starting at i (C++ concatenates them)."""
    parts = []
    j = skip_ws_comments(src, i)
    while True:
        lit = read_string_literal(src, j)
        if lit is None:
            break
        parts.append(lit[0])
        j = skip_ws_comments(src, lit[1])
    if not parts:
        return None
    return "".join(parts), j


def matching_close(src, i, open_ch, close_ch):
    """Index just past the bracket closing the one at i (strings and comments skipped)."""
    depth = 0
    j = i
    n = len(src)
    while j < n:
        if src.startswith("//", j) or src.startswith("/*", j):
            j = skip_ws_comments(src, j)
            continue
        lit = read_string_literal(src, j) if src[j] in 'R"uUL' else None
        if lit is not None and (src[j] == '"' or RAW_START.match(src, j)):
            j = lit[1]
            continue
        if src[j] == "'" and j + 2 < n:
            k = src.find("'", j + 2 if src[j + 1] == "\\" else j + 1)
            j = n if k < 0 else k + 1
            continue
        c = src[j]
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return n


def split_top_level(src):
    """Splits an argument list's text at its top-level commas."""
    parts, depth, start, j = [], 0, 0, 0
    while j < len(src):
        if src[j] in 'R"':
            lit = read_string_literal(src, j)
            if lit is not None and (src[j] == '"' or RAW_START.match(src, j)):
                j = lit[1]
                continue
        c = src[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(src[start:j])
            start = j + 1
        j += 1
    parts.append(src[start:])
    return [p.strip() for p in parts]


def line_of(src, i):
    return src.count("\n", 0, i) + 1


# ---------------------------------------------------------------------------
# The round-trip tables.


def table_cases(src):
    cases = []
    for fn, nonroundtrip in (("CreateTestCases", False), ("CreateShortTestCases", False),
                             ("CreateNonRoundtripTestCases", True)):
        m = re.search(r"\b" + fn + r"\s*\(\s*\)\s*\{", src)
        if not m:
            continue
        body_end = matching_close(src, m.end() - 1, "{", "}")
        vec = src.find("({", m.end(), body_end)
        if vec < 0:
            continue
        j = vec + 2
        while j < body_end:
            j = skip_ws_comments(src, j)
            if j >= body_end or src[j] != "{":
                j += 1
                continue
            end = matching_close(src, j, "{", "}")
            entry = src[j + 1:end - 1]
            strings = []
            k = 0
            while k < len(entry):
                k = skip_ws_comments(entry, k)
                lit = read_concatenated_literals(entry, k)
                if lit is not None:
                    strings.append(lit[0])
                    k = lit[1]
                else:
                    k += 1
            if len(strings) >= 2:
                cases.append(Case(name=strings[0], text=strings[1], expect_ok=True,
                                  verified=True, line=line_of(src, j)))
            j = end
    return cases


# ---------------------------------------------------------------------------
# TEST / TEST_F bodies.

TEST_HEAD = re.compile(r"\bTEST(?:_F|_P)?\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)\s*\{")
STRING_VAR = re.compile(
    r"(?:const\s+)?(?:std::string|char\s*\*\s*const|char\s*\*|absl::string_view|"
    r"string_view|char)\s+(?:const\s+)?(\w+)\s*(?:\[\s*\])?\s*=\s*")
PARSE_CALL = re.compile(r"\bParseAndReturn(Verified|Unverified)Module\s*\(")
FAIL_MARKS = ("EXPECT_NE(absl::OkStatus()", "ExpectHasSubstr", "StatusIs(", "HasSubstr(",
              "ASSERT_FALSE(", "EXPECT_FALSE(", "Not(IsOk", "!module.status().ok()",
              "!result.status().ok()", "IsOkAndHolds(false")
# Success whatever the statement checks; success only when it checks `.ok()`.
OK_MARKS = ("ASSERT_OK_AND_ASSIGN", "TF_ASSERT_OK_AND_ASSIGN", "TF_EXPECT_OK(",
            "TF_ASSERT_OK(", "ASSERT_OK(", "EXPECT_OK(", "EXPECT_EQ(absl::OkStatus()",
            "ASSERT_EQ(absl::OkStatus()", "IsOk()")
OK_IF_OK_CALL = ("EXPECT_TRUE(", "ASSERT_TRUE(")


def statements(body):
    """Top-level statements of a function body: (start, end) pairs."""
    out, depth, start, j = [], 0, 0, 0
    while j < len(body):
        if body[j] in 'R"':
            lit = read_string_literal(body, j)
            if lit is not None and (body[j] == '"' or RAW_START.match(body, j)):
                j = lit[1]
                continue
        if body.startswith("//", j) or body.startswith("/*", j):
            j = skip_ws_comments(body, j)
            continue
        c = body[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == ";" and depth <= 0:
            out.append((start, j + 1))
            start = j + 1
        j += 1
    return out


def resolve(expr, env):
    """The string an argument expression denotes, or None."""
    expr = expr.strip()
    lit = read_concatenated_literals(expr, 0)
    if lit is not None and skip_ws_comments(expr, lit[1]) == len(expr):
        return lit[0]
    if re.fullmatch(r"\w+", expr):
        return env.get(expr)
    m = re.fullmatch(r"(?:absl::)?StrCat\s*\((.*)\)", expr, re.S)
    if m:
        parts = [resolve(p, env) for p in split_top_level(m.group(1))]
        return None if any(p is None for p in parts) else "".join(parts)
    m = re.fullmatch(r"(?:absl::)?StrFormat\s*\((.*)\)", expr, re.S)
    if m:
        args = [resolve(p, env) for p in split_top_level(m.group(1))]
        if not args or any(a is None for a in args):
            return None
        fmt, rest = args[0], list(args[1:])
        out = re.sub(r"%s", lambda _: rest.pop(0) if rest else "%s", fmt)
        return out
    m = re.fullmatch(r"std::string\s*\((.*)\)", expr, re.S)
    if m:
        return resolve(m.group(1), env)
    return None


def classify(stmt, later, var):
    """Expectation (True: parses, False: fails) for the call in `stmt`, or None."""
    head = stmt.lstrip()
    if head.startswith(("ASSERT_OK_AND_ASSIGN", "TF_ASSERT_OK_AND_ASSIGN")):
        return True

    def verdict(s):
        if any(mk in s for mk in FAIL_MARKS):
            return False
        if any(mk in s for mk in OK_MARKS) or \
                (any(mk in s for mk in OK_IF_OK_CALL) and ".ok()" in s):
            return True
        return None

    found = verdict(stmt)
    if found is not None or var is None:
        return found
    for s in later:
        if re.search(r"\b" + re.escape(var) + r"\b", s):
            found = verdict(s)
            if found is not None:
                return found
    return None


def test_cases(src):
    cases, skipped = [], []
    for m in TEST_HEAD.finditer(src):
        suite, name = m.group(1), m.group(2)
        body_start = m.end() - 1
        body_end = matching_close(src, body_start, "{", "}")
        body = src[body_start + 1:body_end - 1]
        if not PARSE_CALL.search(body):
            continue
        env = {}
        stmts = [body[a:b] for a, b in statements(body)]
        calls_seen = 0
        for idx, stmt in enumerate(stmts):
            vm = STRING_VAR.search(stmt)
            if vm and not PARSE_CALL.search(stmt):
                value = resolve(stmt[vm.end():].rstrip().rstrip(";"), env)
                if value is not None:
                    env[vm.group(1)] = value
                continue
            vm2 = re.match(r"\s*(\w+)\s*=\s*(.*);\s*$", stmt, re.S)
            if vm2 and vm2.group(1) in env and not PARSE_CALL.search(stmt):
                value = resolve(vm2.group(2), env)
                if value is not None:
                    env[vm2.group(1)] = value
                continue
            # `var += expr;` on its own appends once; any other change to a known string
            # (an append inside a loop, a reassignment the resolver cannot read) leaves
            # its value unknown, so a call on it counts as built at run time.
            vm3 = re.match(r"\s*(\w+)\s*\+=\s*(.*);\s*$", stmt, re.S)
            if vm3 and vm3.group(1) in env and not PARSE_CALL.search(stmt):
                value = resolve(vm3.group(2), env)
                if value is not None:
                    env[vm3.group(1)] += value
                else:
                    del env[vm3.group(1)]
                continue
            for var in [v for v in env if re.search(
                    r"\b" + re.escape(v) + r"\s*(?:\+=|=(?!=)|\.append\s*\()", stmt)]:
                del env[var]
            for cm in PARSE_CALL.finditer(stmt):
                calls_seen += 1
                close = matching_close(stmt, cm.end() - 1, "(", ")")
                args = split_top_level(stmt[cm.end():close - 1])
                text = resolve(args[0], env) if args else None
                label = f"{suite}.{name}" + (f"#{calls_seen}" if calls_seen > 1 else "")
                if text is None:
                    skipped.append((label, "module text built at run time"))
                    continue
                am = re.match(r"\s*(?:auto|absl::StatusOr<[^=]*>|absl::Status|"
                              r"const\s+auto)\s*&?\s*(\w+)\s*=", stmt)
                expect = classify(stmt, stmts[idx + 1:], am.group(1) if am else None)
                if expect is None:
                    skipped.append((label, "expectation not recognised"))
                    continue
                cases.append(Case(name=label, text=text, expect_ok=expect,
                                  verified=cm.group(1) == "Verified",
                                  line=line_of(src, body_start)))
        if calls_seen == 0:
            skipped.append((f"{suite}.{name}", "no call found"))
    return cases, skipped


# ---------------------------------------------------------------------------
# Running hloc.


def run(hloc, sub, path):
    try:
        p = subprocess.run([hloc, sub, path], capture_output=True, text=True,
                           timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"no answer within {TIMEOUT_S} s"
    out = (p.stderr or "") + (p.stdout or "")
    return p.returncode, out


def first_error(out):
    for line in out.splitlines():
        if "error" in line.lower() or ": " in line:
            return line.strip()[:200]
    return out.strip().splitlines()[0][:200] if out.strip() else ""


def evaluate(case, hloc, tmpdir, index):
    path = os.path.join(tmpdir, f"case_{index:04d}.hlo")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(case.text)
    rc, out = run(hloc, "fmt", path)
    if rc not in (0, 1, 2):
        case.outcome, case.detail = "crash", f"fmt: exit {rc}: {first_error(out)}"
        return
    if rc != 0:
        accepted, case.detail = False, "fmt: " + first_error(out)
    else:
        rc2, out2 = run(hloc, "verify", path)
        if rc2 not in (0, 1, 2):
            case.outcome, case.detail = "crash", f"verify: exit {rc2}: {first_error(out2)}"
            return
        if rc2 != 0:
            accepted, case.detail = (not case.verified and case.expect_ok), \
                "verify: " + first_error(out2)
            if not case.expect_ok:
                accepted = False
        else:
            accepted = True
    if case.expect_ok:
        case.outcome = "both-accept" if accepted else "xla-only-accepts"
    else:
        case.outcome = "both-reject" if not accepted else "hloc-only-accepts"


def revision(path):
    """The XLA revision a copy of XLA's files at `path` (a folder, or a file in one) comes
    from: the HEAD of the git checkout of XLA holding it, else the text of a REVISION file
    in that folder (write the commit into it when copying files), else `unknown`."""
    root = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    try:
        p = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel", "HEAD"],
                           capture_output=True, text=True, timeout=10)
        lines = p.stdout.split()
        # Only a checkout of XLA itself counts (not this repository holding a copy).
        if p.returncode == 0 and len(lines) == 2 and \
                os.path.isdir(os.path.join(lines[0], "xla", "hlo")):
            return lines[1]
    except (OSError, subprocess.TimeoutExpired):
        pass
    for name in ("REVISION", "revision.txt"):
        f = os.path.join(root, name)
        if os.path.exists(f):
            with open(f, encoding="utf-8") as fh:
                words = fh.read().split()
            if words:
                return " ".join(words)
    return "unknown (no git checkout of XLA, no REVISION file beside the copy)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("test_file", help="a copy of xla/hlo/parser/hlo_parser_test.cc")
    ap.add_argument("--hloc", default=os.path.join("target", "release", "hloc"),
                    help="the hloc binary (default: target/release/hloc)")
    ap.add_argument("--verbose", action="store_true",
                    help="also list the cases on which both agree")
    ap.add_argument("--dump", metavar="DIR",
                    help="write every extracted module to DIR as NAME.hlo")
    args = ap.parse_args()

    with open(args.test_file, encoding="utf-8") as f:
        src = f.read()
    if not os.path.exists(args.hloc):
        sys.exit(f"{args.hloc} not found: build it with `cargo build --release -p hloc`")

    print(f"XLA revision: {revision(args.test_file)} ({args.test_file})")
    cases = table_cases(src)
    more, skipped = test_cases(src)
    cases += more
    if not cases:
        sys.exit("no module found: is this XLA's hlo_parser_test.cc?")
    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
        for c in cases:
            with open(os.path.join(args.dump, re.sub(r"[^\w.#-]", "_", c.name) + ".hlo"),
                      "w", encoding="utf-8", newline="") as f:
                f.write(c.text)

    with tempfile.TemporaryDirectory(prefix="parser_compat_") as tmp:
        for i, c in enumerate(cases):
            evaluate(c, args.hloc, tmp, i)

    groups = {}
    for c in cases:
        groups.setdefault(c.outcome, []).append(c)
    total = len(cases)
    agree = len(groups.get("both-accept", [])) + len(groups.get("both-reject", []))
    rows = [
        ("accepted by both", "both-accept"),
        ("rejected by both", "both-reject"),
        ("XLA accepts, hloc rejects", "xla-only-accepts"),
        ("XLA rejects, hloc accepts", "hloc-only-accepts"),
        ("hloc crashed or hung", "crash"),
    ]
    print(f"modules: {total} ({sum(1 for c in cases if c.expect_ok)} expected to parse, "
          f"{sum(1 for c in cases if not c.expect_ok)} expected to fail); "
          f"not extracted: {len(skipped)}")
    print()
    print(f"{'outcome':<30} {'modules':>8}")
    for label, key in rows:
        print(f"{label:<30} {len(groups.get(key, [])):>8}")
    print(f"{'agreement':<30} {100.0 * agree / total:>7.1f}%  ({agree}/{total})")
    for label, key in rows[2:]:
        if groups.get(key):
            print()
            print(f"{label}:")
            for c in groups[key]:
                print(f"  {c.name} (line {c.line}): {c.detail}")
    if args.verbose:
        for label, key in rows[:2]:
            print()
            print(f"{label}:")
            for c in groups.get(key, []):
                print(f"  {c.name}" + (f": {c.detail}" if c.detail else ""))
    if skipped:
        print()
        print("not extracted:")
        for name, why in skipped:
            print(f"  {name}: {why}")


if __name__ == "__main__":
    main()
