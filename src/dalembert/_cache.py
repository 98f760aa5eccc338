"""One caching idiom for the whole package: values computed for an object (a system, a system
factory) are kept *with that object*, through a weak reference, and go when it goes.

``for_object(owner)`` returns the dict of cached values of ``owner`` (created empty on first use);
callers key it by everything that changes the value. An owner that cannot be weakly referenced
gets a dict in a small bounded table instead (the oldest owners are dropped first).
:func:`clear_caches` (``dl.clear_caches()``) empties everything, including JAX's own caches.
"""
from __future__ import annotations

import weakref
from collections import OrderedDict

_BY_OBJECT: "weakref.WeakKeyDictionary[object, dict]" = weakref.WeakKeyDictionary()
#: owners that cannot be weakly referenced: (owner, values), at most this many, oldest dropped
_STRONG_MAX = 32
_STRONG: "OrderedDict[int, tuple]" = OrderedDict()


def for_object(owner) -> dict:
    """The dict of values cached for ``owner`` (kept while ``owner`` lives)."""
    try:
        values = _BY_OBJECT.get(owner)
        if values is None:
            values = _BY_OBJECT[owner] = {}
        return values
    except TypeError:                       # not weakly referenceable (or unhashable)
        entry = _STRONG.get(id(owner))
        if entry is None or entry[0] is not owner:
            entry = (owner, {})
            _STRONG[id(owner)] = entry
            while len(_STRONG) > _STRONG_MAX:
                _STRONG.popitem(last=False)
        return entry[1]


def cached(owner, key, make):
    """``for_object(owner)[key]``, computed by ``make()`` on first use."""
    values = for_object(owner)
    if key not in values:
        values[key] = make()
    return values[key]


def cache_size() -> int:
    """Number of owners with cached values (for tests and diagnostics)."""
    return len(_BY_OBJECT) + len(_STRONG)


def clear_caches() -> None:
    """Drop every compiled program and derived object that dalembert keeps, and JAX's caches.

    Safe at any time; the next run compiles again (a persistent compilation cache, if enabled,
    still serves it).
    """
    import jax

    _BY_OBJECT.clear()
    _STRONG.clear()
    jax.clear_caches()


def hashable(value):
    """A hashable stand-in for an option value, equal for equal values: arrays (NumPy or JAX) by
    dtype, shape and bytes; lists/tuples and dicts element by element; callables and other
    objects by identity (as they are hashed). Used to key caches by build options, e.g.
    ``startup=("second-point", x1, xi0)`` given with NumPy arrays."""
    import numpy as np

    if isinstance(value, dict):
        return ("dict",) + tuple(sorted((str(k), hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(hashable(v) for v in value)
    if hasattr(value, "shape") and hasattr(value, "dtype") and not callable(value):
        a = np.asarray(value)
        return ("array", str(a.dtype), a.shape, a.tobytes())
    try:
        hash(value)
        return value
    except TypeError:
        return ("id", id(value))
