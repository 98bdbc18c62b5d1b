"""hloc from Python: compile and run XLA HLO with numpy arrays in and out.

    import hloc, jax.numpy as jnp

    @hloc.jit
    def f(x, y):
        return jnp.tanh(x @ y)

    f(np.ones((4, 8), np.float32), np.ones((8, 2), np.float32))   # numpy out

The functions take HLO as text, as a path to a ``.hlo``/``.txt`` file, or as a JAX
``Lowered`` (``jax.jit(f).lower(*args)``):

- :func:`compile` -> :class:`Executable`, called on numpy arrays (the GIL is released while
  compiling and running);
- :func:`run` compiles (cached) and runs once, on the compiled CPU backend or the reference
  evaluator;
- :func:`jit` is a decorator like ``jax.jit`` that runs the function compiled by hloc;
- :func:`parse` -> :class:`Module`; :func:`indexing`, :func:`fuse`, :func:`simplify_map`
  are ``hloc indexing``, ``hloc fuse --explain`` and ``hloc map simplify``.

Errors: :class:`HloError` (a ``ValueError`` with ``.line`` and ``.column``) for HLO that does
not parse or verify, :class:`UnsupportedError` (a ``NotImplementedError``) for an operation
hloc cannot compile, ``MemoryError`` for a program over the memory limit, ``TypeError`` /
``ValueError`` for arguments of the wrong number, dtype or shape.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

from . import _hloc
from ._hloc import Executable, HloError, Module, UnsupportedError
from ._jit import jit

__all__ = [
    "Executable",
    "HloError",
    "Module",
    "UnsupportedError",
    "compile",
    "fuse",
    "indexing",
    "jit",
    "parse",
    "run",
    "simplify_map",
]

__version__ = "0.1.0"

#: How the native extension was compiled: ``"release"`` (``pip install ./python``) or
#: ``"debug"`` (a ``--profile dev`` build, as ``tools/test_python.sh`` makes by default;
#: its runs are several times slower, so ``tools/bench_vs_xla.py --python`` refuses it).
build_profile: str = _hloc.BUILD_PROFILE

_FILE_SUFFIXES = (".hlo", ".txt")


def _source(source: Any) -> tuple[str, str]:
    """The HLO text of ``source`` and a name for error messages.

    ``source`` is HLO text, an ``os.PathLike`` or a str naming an existing ``.hlo``/``.txt``
    file, bytes of HLO text, or a JAX ``Lowered`` (anything with ``.compiler_ir("hlo")`` or
    ``.as_text(dialect="hlo")``).
    """
    if isinstance(source, os.PathLike):
        path = os.fspath(source)
        with open(path, encoding="utf-8") as f:
            return f.read(), str(path)
    if isinstance(source, str):
        # One line ending in .hlo/.txt with no braces names a file (HLO text has an
        # ENTRY computation in braces): a missing one is FileNotFoundError, not a parse
        # error of its name.
        if "\n" not in source and source.endswith(_FILE_SUFFIXES) and "{" not in source:
            with open(source, encoding="utf-8") as f:
                return f.read(), source
        return source, "<string>"
    if isinstance(source, (bytes, bytearray)):
        return bytes(source).decode("utf-8"), "<bytes>"
    compiler_ir = getattr(source, "compiler_ir", None)
    if callable(compiler_ir):
        try:
            ir = compiler_ir("hlo")
        except Exception:  # noqa: BLE001 - fall back to as_text below
            ir = None
        if ir is not None and hasattr(ir, "as_hlo_text"):
            try:
                return ir.as_hlo_text(print_large_constants=True), "<jax>"
            except TypeError:
                return ir.as_hlo_text(), "<jax>"
    as_text = getattr(source, "as_text", None)
    if callable(as_text):
        return as_text(dialect="hlo"), "<jax>"
    raise TypeError(
        "source must be HLO text, a path to a .hlo/.txt file, or a JAX Lowered "
        f"(jax.jit(f).lower(...)), not {type(source).__name__}"
    )


def compile(source: Any, *, target: str = "cpu", memory_limit: int | str | None = None) -> Executable:  # noqa: A001
    """Compile an HLO module and return an :class:`Executable`.

    ``source`` is HLO text (str), a path (``os.PathLike``, or a str naming an existing
    ``.hlo``/``.txt`` file) or a JAX ``Lowered`` (``jax.jit(f).lower(*args)``).

    ``target="cpu"`` (the default) compiles for this CPU: kernels are generated as C, built
    by the system C compiler and cached (``$HLOC_CACHE_DIR``, default ``~/.cache/hloc``);
    call the executable on numpy arrays. ``target="h100"`` or ``"h200"`` compiles for that
    GPU without needing one: the GPU emitters' kernels as one CUDA module, compiled by NVRTC
    for sm_90 (NVRTC must be found: ``pip install nvidia-cuda-nvrtc==13.0.88`` and its
    ``lib/`` on ``LD_LIBRARY_PATH``, else ``RuntimeError`` says so). Such an executable has
    ``.stats``, ``.kernel_source`` (the CUDA module) and ``.kernel_report`` (per kernel its
    launch, thread map, registers and spills) but cannot be called here: calling it raises
    :class:`UnsupportedError` (the CLI runs the CUDA kernels with ``hloc run --backend
    cuda-host``, on a GPU with ``--backend cuda``).

    ``memory_limit`` caps the bytes the executable may allocate: an int, or a size such as
    ``"8G"`` (K/M/G/T are powers of 1024); by default ``$HLOC_MAX_MEMORY``, else half the
    available memory.

    Raises :class:`HloError` when the module does not parse or verify,
    :class:`UnsupportedError` for an operation hloc cannot compile (for the target),
    ``MemoryError`` when the executable would need more than the limit, ``ValueError`` for
    an unknown target. The GIL is released while compiling.
    """
    if target not in ("cpu", "h100", "h200"):
        raise ValueError(f'target must be "cpu", "h100" or "h200", not {target!r}')
    text, name = _source(source)
    return _hloc.compile(text, name, memory_limit, target)


@functools.lru_cache(maxsize=64)
def _compiled(text: str, name: str, memory_limit: int | str | None) -> Executable:
    return _hloc.compile(text, name, memory_limit)


def run(source: Any, *args: Any, backend: str = "cpu", memory_limit: int | str | None = None) -> Any:
    """Run an HLO module once on ``args`` (numpy arrays, one per entry parameter).

    ``backend="cpu"`` compiles the module (compilations are cached per module text) and
    runs it; ``backend="reference"`` interprets it with hloc's exact reference evaluator.
    Returns one numpy array for a non-tuple root, a tuple of arrays for a tuple root.
    ``source`` and ``memory_limit`` are as :func:`compile` takes them.
    """
    text, name = _source(source)
    if backend == "cpu":
        return _compiled(text, name, memory_limit)(*args)
    if backend == "reference":
        return _hloc.evaluate(text, args, name, memory_limit)
    raise ValueError(f'backend must be "cpu" or "reference", not {backend!r}')


def parse(source: Any) -> Module:
    """Parse an HLO module (text, path or JAX ``Lowered``) without verifying it.

    ``str(module)`` prints it, ``module.verify()`` returns None or raises
    :class:`HloError`, ``module.instructions(computation=None)`` lists instruction names.
    Raises :class:`HloError` (with ``.line`` and ``.column``) on a syntax error.
    """
    text, name = _source(source)
    return _hloc.parse(text, name)


def indexing(source: Any, instr: str, *, operand: int | None = None, direction: str = "out-to-in") -> str:
    """The indexing maps of instruction ``instr``, as ``hloc indexing --instr`` prints them.

    ``direction="out-to-in"`` gives, for each operand, the maps from an output element's
    indices to the operand elements it reads; ``"in-to-out"`` the maps from an operand's
    indices to the output elements that read it. ``operand`` restricts the text to one
    operand. Raises ``ValueError`` for an unknown instruction or operand.
    """
    text, name = _source(source)
    return _hloc.indexing(text, instr, operand, direction, name)


def fuse(source: Any, *, target: str = "cpu") -> tuple[str, list[dict]]:
    """Fuse a module for a device description, as ``hloc fuse --target T --explain`` does.

    ``target`` is ``"cpu"``, ``"h100"`` or the path of a device description file. Returns
    the fused module's text and the explain records (one dict per fusion and per unfused
    edge, as ``--explain PATH`` writes them as JSON lines).
    """
    text, name = _source(source)
    fused, lines = _hloc.fuse(text, target, name)
    return fused, [json.loads(line) for line in lines.splitlines() if line.strip()]


def simplify_map(text: str) -> str:
    """Simplify an indexing map written in XLA's syntax to its canonical form.

    ``hloc.simplify_map("(d0) -> (d0 floordiv 8 * 8 + d0 mod 8), domain: d0 in [0, 31]")``
    returns ``"(d0) -> (d0), domain: d0 in [0, 31]"``. Raises :class:`HloError` with the
    line and column of a syntax error.
    """
    return _hloc.simplify_map(text)
