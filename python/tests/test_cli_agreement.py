"""The functions print what the commands print: `hloc.indexing` as `hloc indexing`,
`hloc.fuse` as `hloc fuse --explain`, `hloc.simplify_map` as `hloc map simplify` (needs the
`hloc` binary: $HLOC_BIN, else the target directory's debug or release build; skipped
without one)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import hloc
from conftest import CORPUS, ROOT


def _binary() -> str | None:
    if os.environ.get("HLOC_BIN"):
        return os.environ["HLOC_BIN"]
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    for profile in ("debug", "release"):
        b = target / profile / "hloc"
        if b.is_file():
            return str(b)
    return None


BIN = _binary()
pytestmark = pytest.mark.skipif(BIN is None, reason="no hloc binary built")
SOFTMAX = CORPUS / "softmax" / "before_optimizations.hlo"


def cli(*args: str) -> str:
    assert BIN is not None
    return subprocess.run([BIN, *args], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("direction", ["out-to-in", "in-to-out"])
@pytest.mark.parametrize("operand", [None, 0])
def test_indexing_matches_the_command(direction: str, operand: int | None) -> None:
    instr = "reduce_max.14"
    args = ["indexing", str(SOFTMAX), "--instr", instr, "--direction", direction]
    if operand is not None:
        args += ["--operand", str(operand)]
    assert hloc.indexing(SOFTMAX, instr, operand=operand, direction=direction) == cli(*args)


def test_fuse_matches_the_command(tmp_path: Path) -> None:
    explain = tmp_path / "explain.jsonl"
    text = cli("fuse", str(SOFTMAX), "--target", "cpu", "--explain", str(explain))
    fused, records = hloc.fuse(SOFTMAX)
    assert fused == text
    assert records == [json.loads(line) for line in explain.read_text().splitlines() if line.strip()]


def test_simplify_map_matches_the_command() -> None:
    m = "(d0) -> (d0 floordiv 8 * 8 + d0 mod 8), domain: d0 in [0, 31]"
    assert hloc.simplify_map(m) + "\n" == cli("map", "simplify", m)
