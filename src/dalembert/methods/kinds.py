"""Which registered methods integrate which systems: the system-kind protocol
(:mod:`dalembert.systems.kind`) applied to the method registry."""
from __future__ import annotations

from ..errors import InputError
from ..systems.kind import View, find_view, kind_name
from .base import registry


def resolve(system, method, state0=None) -> View | None:
    """The view (or None: as it is) through which ``method`` integrates ``system``.

    ``state0``: one validated initial state of ``system``; with it, the system's features
    (:meth:`SystemKind.features`) are checked against the method's ``traits.accepts`` too.

    Raises
    ------
    InputError naming the kinds the method integrates and the methods that integrate this
    system's kind, when neither the system nor a view of it is of a kind the method declares;
    or naming the features of the system the method does not accept and the methods that accept
    the system. A method that declares no kinds (a user's own Method subclass) is given the
    system as it is; one that declares no ``accepts`` is given any features.
    """
    accepted = tuple(method.traits.integrates)
    try:
        view = find_view(system, accepted)
    except LookupError:
        kind = kind_name(system)
        fits = methods_for(system, state0)
        raise InputError(f"method {method.name!r} integrates {' or '.join(accepted)} systems; "
                         f"{getattr(system, 'name', 'this system')!r} is a {kind} system. Methods for "
                         f"this system: {', '.join(fits) if fits else 'none'}") from None
    if state0 is not None:
        missing = missing_features(method, system, state0)
        if missing:
            fits = methods_for(system, state0)
            raise InputError(f"method {method.name!r} does not accept systems with "
                             f"{' or '.join(sorted(f.label for f in missing))}, which "
                             f"{getattr(system, 'name', 'this system')!r} has. Methods that accept this system: "
                             f"{', '.join(fits) if fits else 'none'}")
    return view


def missing_features(method, system, state0=()) -> frozenset:
    """The features of ``system`` (with one initial state ``state0``) that ``method`` does not
    accept (empty when it declares no ``accepts``)."""
    accepts = method.traits.accepts
    features = getattr(system, "features", None)
    if accepts is None or features is None:
        return frozenset()
    return frozenset(features(*(state0 or ()))) - accepts


def accepts(method, system, state0=None) -> bool:
    """Whether ``method`` integrates ``system`` (its kind, directly or through a view, and its
    features; see :func:`resolve`)."""
    try:
        find_view(system, tuple(method.traits.integrates))
    except LookupError:
        return False
    return not missing_features(method, system, state0)


def methods_for(system, state0=None) -> list:
    """Names of the registered methods that integrate ``system`` (directly or through a view)
    and accept its features (decided at ``state0`` where given)."""
    return [name for name, m in registry().items() if accepts(m, system, state0)]
