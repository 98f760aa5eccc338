"""The integrators and their registry.

Each family module defines its methods in a ``METHODS`` tuple; this package registers them, in
the order of :data:`FAMILIES`. ``available()`` lists the registered names with their traits (the
list is generated below, at import); ``get(name)`` returns one; ``dalembert list`` prints them
with the system kinds each integrates. :func:`gni` makes a GNI from a user's discrete
Lagrangian; a user's own :class:`Method` object is passed to ``dl.integrate`` as it is.
"""
from __future__ import annotations

from . import (comparison, discrete_gradients, discrete_lagrangians, dla, eps, exp_chart, gni as _gni,
               gni_symmetric, gonzalez, groupoid, kinds, lie_gni, projected_rk, reduced_gni, reduced_rattle,
               reference as _reference, spark)
from .base import (Method, Observation, Scheme, StepInfo, Traits, available, get, register,
                   registry)
from .composition import COEFFICIENTS, Composition, compose
from .kinds import methods_for
from .composition import registered as registered_compositions
from .discrete_gradients import DiscreteGradientMethod
from .discrete_lagrangians import DiscreteLagrangian
from .dla import DLA, dla_variant, left_point_constraint, midpoint_constraint
from .gni import GNI, gni
from .lie_gni import LieGNI, lie_gni as make_lie_gni
from .reference import Reference, reference_solution

#: The method families, in registration order: GNI and DLA (Ferraro et al. 2008, 2015), the
#: reference ODE, the discrete gradients and Gonzalez methods and the comparison methods
#: (Celledoni et al. 2019), the Euler–Poincaré–Suslov integrators (Jiménez–Scheurle 2015), the
#: Lie-group GNI, the exponential-chart GNI and the reduced GNI on shape × group, and the GNI and DLA
#: on a Lie groupoid whose instances these are (Ferraro et al.), and an explicit Runge–Kutta method
#: with the velocity projected onto the constraint (the fastest to a small error, not symmetric).
FAMILIES = (_gni, gni_symmetric, dla, _reference, discrete_gradients, eps, gonzalez, comparison, spark, lie_gni,
            exp_chart, reduced_gni, reduced_rattle, groupoid, projected_rk)

for _family in FAMILIES:
    for _m in _family.METHODS:
        register(_m)
#: then the symmetric compositions of registered methods (``nh-rattle-4``, ``dg-gonzalez-4``, …)
for _m in registered_compositions():
    register(_m)

__doc__ += "\nRegistered methods (name: order, family; kinds integrated):\n\n" + "\n".join(
    f"* ``{name}``: order {t.order}, {t.family}; {', '.join(t.integrates)}"
    for name, t in available().items()) + "\n"

def accepting(system, state0=None) -> list:
    """Names of the registered methods that integrate ``system`` — its kind, directly or through a
    registered view, and every feature it has (``system.features()`` against ``traits.accepts``);
    ``state0``: one initial state (in ``system.state_names`` order), where a feature needs one to be
    decided (whether a callable metric depends on q). The same list ``dalembert list --model X``
    prints and a refusal names."""
    return methods_for(system, state0)


__all__ = ["accepting",
    "compose", "COEFFICIENTS",
    "Method", "Traits", "Scheme", "StepInfo", "Observation", "available", "get", "register",
    "registry", "GNI", "gni", "DLA", "Composition", "Reference", "DiscreteLagrangian",
    "DiscreteGradientMethod", "LieGNI", "make_lie_gni", "discrete_lagrangians",
    "midpoint_constraint", "left_point_constraint", "dla_variant", "reference_solution", "FAMILIES",
]
