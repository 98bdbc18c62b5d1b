"""``hloc.jit``: a decorator like ``jax.jit`` whose calls run hloc-compiled code."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Iterable

import numpy as np


def _as_tuple(x: int | str | Iterable[Any] | None) -> tuple[Any, ...]:
    if x is None:
        return ()
    if isinstance(x, (int, str)):
        return (x,)
    return tuple(x)


def _static_positions_and_names(
    fun: Callable[..., Any], argnums: tuple[int, ...], argnames: tuple[str, ...]
) -> tuple[frozenset[int], frozenset[str]]:
    """The static arguments by position and by name, each completed from the other through
    ``fun``'s signature, as ``jax.jit`` infers them (a parameter named in
    ``static_argnames`` is static when passed by position too, and the reverse)."""
    positions, names = set(argnums), set(argnames)
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):  # no signature (a builtin): take them as given
        return frozenset(positions), frozenset(names)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for i, p in enumerate(positional):
        if p.name in names:
            positions.add(i)
        if i in positions or (i - len(positional)) in positions:
            if p.kind is p.POSITIONAL_OR_KEYWORD:
                names.add(p.name)
    positions = {i if i >= 0 else i + len(positional) for i in positions}
    return frozenset(positions), frozenset(names)


def jit(
    fun: Callable[..., Any] | None = None,
    *,
    static_argnums: int | Iterable[int] | None = None,
    static_argnames: str | Iterable[str] | None = None,
    donate_argnums: int | Iterable[int] | None = None,
) -> Any:
    """Decorate ``fun`` (a JAX-traceable function) to run it compiled by hloc.

    On each call the arguments (pytrees of arrays, as with ``jax.jit``; numpy arrays, jax
    arrays or Python scalars as leaves) are flattened as JAX flattens them; for a new
    signature (tree structure, shapes, dtypes, and the values of static arguments)
    ``fun`` is lowered with ``jax.jit(fun, keep_unused=True).lower`` and compiled with
    :func:`hloc.compile` (cached per signature). The call returns numpy arrays in the
    pytree structure of ``fun``'s outputs. Needs jax.

    ``static_argnums``, ``static_argnames`` and ``donate_argnums`` are ``jax.jit``'s:
    static arguments (hashable Python values) are compiled in, one executable per value;
    donated ones let the module write an output into the argument's bytes (hloc runs it on
    a copy: the caller's array is never changed). ``hloc.jit(static_argnums=1)`` without
    ``fun`` returns the decorator.
    """
    if fun is None:
        return functools.partial(
            jit, static_argnums=static_argnums, static_argnames=static_argnames, donate_argnums=donate_argnums
        )
    try:
        import jax
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("hloc.jit needs jax (pip install jax)") from e
    from . import compile as hloc_compile

    tree_util = jax.tree_util
    positions, names = _static_positions_and_names(fun, _as_tuple(static_argnums), _as_tuple(static_argnames))
    cache: dict[Any, tuple[Any, Any, list[np.dtype]]] = {}
    jitted = jax.jit(
        fun,
        keep_unused=True,
        static_argnums=tuple(sorted(positions)) or None,
        static_argnames=tuple(sorted(names)) or None,
        donate_argnums=_as_tuple(donate_argnums) or None,
    )

    @functools.wraps(fun)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if positions or names:
            dyn_args = tuple(a for i, a in enumerate(args) if i not in positions)
            dyn_kwargs = {k: v for k, v in kwargs.items() if k not in names}
            static = (
                tuple((i, a) for i, a in enumerate(args) if i in positions),
                tuple(sorted((k, v) for k, v in kwargs.items() if k in names)),
            )
        else:
            dyn_args, dyn_kwargs, static = args, kwargs, None
        leaves, treedef = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        arrays = [x if isinstance(x, np.ndarray) else np.asarray(x) for x in leaves]
        # Python scalars are weakly typed for JAX (2.0 * a bf16 array stays bf16): they are
        # lowered as themselves, keyed by their type.
        weak = [isinstance(x, (bool, int, float, complex)) for x in leaves]
        key = (
            treedef,
            tuple(type(x) if w else (a.shape, a.dtype) for x, w, a in zip(leaves, weak, arrays)),
            static,
        )
        try:
            entry = cache.get(key)
        except TypeError as e:
            raise ValueError(f"static arguments of hloc.jit must be hashable, as jax.jit's: {e}") from e
        if entry is None:
            specs = [x if w else jax.ShapeDtypeStruct(a.shape, a.dtype) for x, w, a in zip(leaves, weak, arrays)]
            spec_args, spec_kwargs = tree_util.tree_unflatten(treedef, specs)
            if static is not None:
                # The static values back in their places for the lowering.
                spec_args = list(spec_args)
                for i, a in static[0]:
                    spec_args.insert(i, a)
                spec_kwargs = {**spec_kwargs, **dict(static[1])}
            lowered = jitted.lower(*spec_args, **spec_kwargs)
            exe = hloc_compile(lowered)
            dtypes = [dtype for _, dtype in exe.parameters]
            entry = (exe, lowered.out_tree, dtypes)
            cache[key] = entry
        exe, out_tree, dtypes = entry
        if len(dtypes) == len(arrays):
            # JAX canonicalizes dtypes (float64 -> float32 without x64): pass what it lowered.
            arrays = [a if a.dtype == d else a.astype(d) for a, d in zip(arrays, dtypes)]
        outs = exe(*arrays)
        if not exe.returns_tuple:
            outs = (outs,)
        return tree_util.tree_unflatten(out_tree, list(outs))

    wrapper.lower = jitted.lower  # type: ignore[attr-defined]
    return wrapper
