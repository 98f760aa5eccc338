"""Which registered methods integrate which systems: the system-kind protocol
(:mod:`dalembert.systems.kind`) applied to the method registry."""
from __future__ import annotations

from typing import NamedTuple

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


# ---------------------------------------------------------------------------------------------
# method="auto": a documented rule on the system's kind and declared features
# ---------------------------------------------------------------------------------------------
class Recommendation(NamedTuple):
    """``method``: a registered name; ``reason``: one sentence, why (the rule that chose it)."""

    method: str
    reason: str


#: The rule of ``method="auto"``, per system kind: the first :class:`Recommendation` whose method
#: accepts the system (its kind and features, :func:`accepts`) is chosen. Robust one-step self-adjoint methods of order 2 first: for a
#: NonholonomicSystem ``nh-rattle-sym`` rather than the two-step ``nh-rattle``, which is faster
#: (explicit for a constant metric) but can carry a parasitic period-2 mode (the snakeboard at its
#: default step: ``ParasiticModeWarning`` at t = 50) and lost a stable bicycle motion that
#: ``nh-rattle-sym`` keeps (docs/guide/methods.md).
_R = Recommendation
_REFERENCE = _R("reference", "no structure-preserving method accepts this system's features: the index-1 "
                             "ODE by DOP853 at tight tolerance")
AUTO_RULE = {
    "nonholonomic": (
        _R("nh-rattle-sym", "a NonholonomicSystem: the self-adjoint one-step nonholonomic RATTLE (order 2, "
                            "energy bounded, constraints at every node, no parasitic mode; Newton on the m "
                            "impulses per step for a constant metric, on the whole step otherwise)"),
        _REFERENCE),
    "almost-poisson": (
        _R("dg-gonzalez", "an almost-Poisson system: Gonzalez's discrete gradient (energy to round-off, "
                          "order 2)"),),
    "euler-poincare-suslov": (
        _R("eps-midpoint", "an Euler–Poincaré–Suslov system: the midpoint EPS scheme (order 2, constraint at "
                           "every node, energy at every node without a torque; with one, the energy "
                           "balance E − E0 − W at order 2)"),
        _R("eps-variational", "an Euler–Poincaré–Suslov system with a non-quadratic Lagrangian: the "
                              "variational EPS scheme (order 2)")),
    "left-invariant": (
        _R("lie-gni-mv-sym", "a left-invariant system on a Lie group: the self-adjoint Lie-group GNI "
                             "(order 2)"),),
    "lie-nonholonomic": (
        _R("lie-gni-mv-sym", "a nonholonomic system on a Lie group: the self-adjoint Lie-group GNI "
                             "(order 2)"),),
    "reduced": (
        _R("reduced-gni-sym", "a system on Rⁿ × G: the self-adjoint reduced GNI (order 2, any metric, "
                              "affine constraints)"),
        _REFERENCE),
}

AUTO = ("auto", None)


def recommend(system, state0=None) -> Recommendation:
    """The method ``method="auto"`` (or the method left out) picks for ``system``, and why.

    The rule (:data:`AUTO_RULE`): by the system's kind, the first listed method that accepts the
    system's declared features (decided at ``state0``, one validated initial state, where given;
    without it a callable metric counts as configuration-dependent).

    Raises InputError when no registered method integrates the system.
    """
    from .base import registry
    kind = kind_name(system)
    for rec in AUTO_RULE.get(kind, ()):
        method = registry().get(rec.method)
        if method is not None and accepts(method, system, state0):
            return rec
    fits = methods_for(system, state0)
    if fits:
        return Recommendation(fits[0], f"the first registered method that integrates a {kind} system")
    raise InputError(f"no registered method integrates {getattr(system, 'name', 'this system')!r} "
                     f"(a {kind} system); pass a Method object")


def choose(system, method, state0=None):
    """``method`` as a Method: a name or Method as ``dl.methods.get`` takes it, or ``"auto"``/None
    resolved by :func:`recommend`."""
    from .base import get
    if method in AUTO:
        return get(recommend(system, state0).method)
    return get(method)
