"""The type stubs (`hloc/_hloc.pyi`) match the extension as it runs: every function and
method the stub declares exists with the same parameters (names, kinds and defaults),
every property exists, and every public name of the extension is in the stub."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import hloc
from hloc import _hloc

STUB = Path(hloc.__file__).with_name("_hloc.pyi")


def _stub_params(fn: ast.FunctionDef) -> list[tuple[str, str, object]]:
    """(name, kind, default) of a stub's parameters, `self` dropped."""
    a = fn.args
    out: list[tuple[str, str, object]] = []
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for p, d in zip(positional, defaults):
        kind = "POSITIONAL_ONLY" if p in a.posonlyargs else "POSITIONAL_OR_KEYWORD"
        out.append((p.arg, kind, ast.literal_eval(d) if d is not None else inspect.Parameter.empty))
    if a.vararg:
        out.append((a.vararg.arg, "VAR_POSITIONAL", inspect.Parameter.empty))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((p.arg, "KEYWORD_ONLY", ast.literal_eval(d) if d is not None else inspect.Parameter.empty))
    if a.kwarg:
        out.append((a.kwarg.arg, "VAR_KEYWORD", inspect.Parameter.empty))
    return [p for p in out if p[0] != "self"]


def _runtime_params(obj: object) -> list[tuple[str, str, object]]:
    sig = inspect.signature(obj)
    return [(p.name, p.kind.name, p.default) for p in sig.parameters.values() if p.name != "self"]


def _compare(fn: ast.FunctionDef, obj: object, what: str) -> None:
    got, want = _runtime_params(obj), _stub_params(fn)
    # The extension's positional-or-keyword parameters may be declared either way.
    norm = lambda ps: [(n, "POSITIONAL" if k in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD") else k, d) for n, k, d in ps]
    assert norm(got) == norm(want), f"{what}: runtime {got}, stub {want}"


def test_stub_matches_the_extension() -> None:
    tree = ast.parse(STUB.read_text())
    declared: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            declared.add(node.name)
            _compare(node, getattr(_hloc, node.name), node.name)
        elif isinstance(node, ast.ClassDef):
            declared.add(node.name)
            cls = getattr(_hloc, node.name)
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    attr = getattr(cls, item.name)
                    props = [d for d in item.decorator_list if isinstance(d, ast.Name) and d.id == "property"]
                    if item.name.startswith("__") and not props:
                        # A slot (`__call__`): Python shows it as (*args, **kwargs).
                        assert callable(attr), item.name
                    elif props:
                        assert not callable(attr) or isinstance(attr, property) or hasattr(attr, "__get__"), item.name
                    else:
                        _compare(item, attr, f"{node.name}.{item.name}")
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    # An exception's instance attributes (`line`, `column`): set on raise.
                    assert issubclass(cls, BaseException), item.target.id
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            declared.add(node.target.id)
            assert hasattr(_hloc, node.target.id)
    public = {n for n in dir(_hloc) if not n.startswith("_")}
    assert public <= declared, f"not in the stub: {sorted(public - declared)}"


def test_package_signatures_as_issue_34_names_them() -> None:
    p = inspect.signature(hloc.compile).parameters
    assert list(p) == ["source", "target", "memory_limit"]
    assert p["target"].kind is p["target"].KEYWORD_ONLY and p["target"].default == "cpu"
    assert p["memory_limit"].kind is p["memory_limit"].KEYWORD_ONLY and p["memory_limit"].default is None
    p = inspect.signature(hloc.run).parameters
    assert p["args"].kind is p["args"].VAR_POSITIONAL and p["backend"].default == "cpu"
    p = inspect.signature(hloc.indexing).parameters
    assert list(p)[:2] == ["source", "instr"] and p["operand"].default is None
    assert p["direction"].default == "out-to-in"
    assert inspect.signature(hloc.fuse).parameters["target"].default == "cpu"
    assert list(inspect.signature(hloc.simplify_map).parameters) == ["text"]
    assert list(inspect.signature(hloc.parse).parameters) == ["source"]
    assert list(inspect.signature(hloc.jit).parameters)[0] == "fun"
