"""``hloc.jit``: a decorator like ``jax.jit`` whose calls run hloc-compiled code."""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np


def jit(fun: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate ``fun`` (a JAX-traceable function) to run it compiled by hloc.

    On each call the arguments (pytrees of arrays, as with ``jax.jit``; numpy arrays, jax
    arrays or Python scalars as leaves) are flattened as JAX flattens them; for a new
    signature (tree structure, shapes, dtypes) ``fun`` is lowered with
    ``jax.jit(fun, keep_unused=True).lower`` and compiled with :func:`hloc.compile`
    (cached per signature). The call returns numpy arrays in the pytree structure of
    ``fun``'s outputs. Needs jax.
    """
    try:
        import jax
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("hloc.jit needs jax (pip install jax)") from e
    from . import compile as hloc_compile

    tree_util = jax.tree_util
    cache: dict[Any, tuple[Any, Any, list[np.dtype]]] = {}
    jitted = jax.jit(fun, keep_unused=True)

    @functools.wraps(fun)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        leaves, treedef = tree_util.tree_flatten((args, kwargs))
        arrays = [x if isinstance(x, np.ndarray) else np.asarray(x) for x in leaves]
        # Python scalars are weakly typed for JAX (2.0 * a bf16 array stays bf16): they are
        # lowered as themselves, keyed by their type.
        weak = [isinstance(x, (bool, int, float, complex)) for x in leaves]
        key = (
            treedef,
            tuple(type(x) if w else (a.shape, a.dtype) for x, w, a in zip(leaves, weak, arrays)),
        )
        entry = cache.get(key)
        if entry is None:
            specs = [x if w else jax.ShapeDtypeStruct(a.shape, a.dtype) for x, w, a in zip(leaves, weak, arrays)]
            spec_args, spec_kwargs = tree_util.tree_unflatten(treedef, specs)
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
