"""Which registered methods integrate which systems: the system-kind protocol
(:mod:`dalembert.systems.kind`) applied to the method registry."""
from __future__ import annotations

from ..errors import InputError
from ..systems.kind import View, find_view, kind_name
from .base import registry


def resolve(system, method) -> View | None:
    """The view (or None: as it is) through which ``method`` integrates ``system``.

    Raises
    ------
    InputError naming the kinds the method integrates and the methods that integrate this
    system's kind, when neither the system nor a view of it is of a kind the method declares.
    A method that declares no kinds (a user's own Method subclass) is given the system as it is.
    """
    accepted = tuple(method.traits.integrates)
    try:
        return find_view(system, accepted)
    except LookupError:
        pass
    kind = kind_name(system)
    fits = methods_for(system)
    raise InputError(f"method {method.name!r} integrates {' or '.join(accepted)} systems; "
                     f"{getattr(system, 'name', 'this system')!r} is a {kind} system. Methods for "
                     f"{kind} systems: {', '.join(fits) if fits else 'none'}")


def _accepts(method, system) -> bool:
    try:
        find_view(system, tuple(method.traits.integrates))
        return True
    except LookupError:
        return False


def methods_for(system) -> list:
    """Names of the registered methods that integrate ``system`` (directly or through a view)."""
    return [name for name, m in registry().items() if _accepts(m, system)]
