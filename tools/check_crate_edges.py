#!/usr/bin/env python3
"""Fails when a workspace crate depends on a crate it may not depend on.

The allowed edges are the `crate-edges` block of ARCHITECTURE.md (one line per crate:
`name: the workspace crates it may depend on`, `*` for any). A normal dependency must be
listed; a dev-dependency may also be `hlo-eval` (the oracle of every test) or `testkit`.
A workspace crate missing from the block fails too, so a new crate states its place.
Reads `cargo metadata`; standard library only.
"""
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEV_ALWAYS = {"hlo-eval", "testkit"}


def allowed_edges():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    m = re.search(r"```crate-edges\n(.*?)```", text, re.S)
    if not m:
        sys.exit("check_crate_edges: ARCHITECTURE.md has no ```crate-edges block")
    edges = {}
    for line in m.group(1).splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, deps = line.partition(":")
        edges[name.strip()] = set(deps.split())
    return edges


def main():
    meta = json.loads(
        subprocess.check_output(
            ["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=ROOT
        )
    )
    members = {p["name"] for p in meta["packages"]}
    edges = allowed_edges()
    errors = []
    for pkg in sorted(meta["packages"], key=lambda p: p["name"]):
        name = pkg["name"]
        if name not in edges:
            errors.append(f"{name}: not in the crate-edges block of ARCHITECTURE.md")
            continue
        allowed = edges[name]
        for dep in pkg["dependencies"]:
            d = dep["name"]
            if d not in members or d == name:
                continue
            ok = "*" in allowed or d in allowed
            if dep["kind"] == "dev":
                ok = ok or d in DEV_ALWAYS
            if not ok:
                kind = "dev-dependency" if dep["kind"] == "dev" else "dependency"
                errors.append(f"{name} -> {d}: {kind} not allowed by ARCHITECTURE.md")
    for e in errors:
        print(f"check_crate_edges: {e}", file=sys.stderr)
    if errors:
        sys.exit(1)
    print(f"check_crate_edges: {len(members)} crates, every edge allowed")


if __name__ == "__main__":
    main()
