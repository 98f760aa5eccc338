"""The integrators and their registry.

Registered names (fixed): ``nh-rattle``, ``gni-euler-a``, ``gni-euler-b``, ``gni-euler-ab``,
``gni-midpoint``, ``dla-midpoint``, ``reference``. ``available()`` lists them with their traits;
``get(name)`` returns one; :func:`gni` makes a GNI from a user's discrete Lagrangian.
"""
from __future__ import annotations

from . import discrete_lagrangians
from .base import Method, Observation, Scheme, StepInfo, Traits, available, get, register
from .composition import Composition
from .discrete_lagrangians import DiscreteLagrangian
from .dla import DLA, midpoint_constraint
from .gni import GNI, _gni_traits, gni
from .reference import Reference, reference_solution

_PUB = "Ferraro, Jiménez, Martín de Diego, Nonlinearity 28 (2015) 871"

nh_rattle = register(GNI(
    name="nh-rattle",
    traits=_gni_traits(2, True, f"McLachlan–Perlmutter nonholonomic RATTLE/SHAKE = GNI with L_d^SV; "
                       f"{_PUB}, (15), Remark 5.1, §6.1 (affine)", "constant mass matrix"),
    description="Nonholonomic RATTLE: half kick, reflect, half kick (GNI with the Störmer–Verlet L_d).",
    discrete_lagrangian=discrete_lagrangians.stormer_verlet))

gni_euler_a = register(GNI(
    name="gni-euler-a",
    traits=_gni_traits(1, False, f"{_PUB}, (10)-(11), (13), erratum 1 (implemented from L_d^A)",
                       "constant mass matrix"),
    description="GNI extension of symplectic Euler A: reflect, then kick (potential at the left node).",
    discrete_lagrangian=discrete_lagrangians.euler_a))

gni_euler_b = register(GNI(
    name="gni-euler-b",
    traits=_gni_traits(1, False, f"{_PUB}, (10), (12), (14), erratum 1 (implemented from L_d^B)",
                       "constant mass matrix"),
    description="GNI extension of symplectic Euler B: kick, then reflect (potential at the right node).",
    discrete_lagrangian=discrete_lagrangians.euler_b))

gni_euler_ab = register(Composition(
    name="gni-euler-ab",
    traits=_gni_traits(2, True, f"{_PUB}, Remark 5.5 with errata 5 (T*Q composition, A first)",
                       "constant mass matrix"),
    description="GNI-A(h/2) then GNI-B(h/2) in T*Q variables: second order, not RATTLE.",
    stages=((gni_euler_a, 0.5), (gni_euler_b, 0.5))))

gni_midpoint = register(GNI(
    name="gni-midpoint",
    traits=_gni_traits(2, True, f"{_PUB}, Definition 4.1 with L_d = h L((q0+q1)/2, (q1-q0)/h)", ""),
    description="GNI with the midpoint discrete Lagrangian; Newton for any G(q).",
    discrete_lagrangian=discrete_lagrangians.midpoint))

dla_midpoint = register(DLA(
    name="dla-midpoint",
    traits=Traits(
        order=2, symmetric=True, implicit=True,
        preserves=("discrete constraint μ(q̄)(q_{k+1}−q_k)/h = ν(q̄)",),
        node_velocity="G⁻¹(P*p⁺_k + Q*Π): the node momentum D2 L_d(q_{k−1}, q_k) projected",
        source="Cortés–Martínez 2001 as in Ferraro–Iglesias–Martín de Diego, Nonlinearity 21 "
               "(2008) §2.6 / §5 (midpoint L_d and midpoint discrete constraint)",
        family="dla"),
    description="Discrete Lagrange–d'Alembert with midpoint L_d and midpoint discrete constraint.",
    discrete_lagrangian=discrete_lagrangians.midpoint))

reference = register(Reference(
    name="reference",
    traits=Traits(
        order=8, symmetric=False, implicit=False,
        preserves=(),
        node_velocity="v(t_k) of the index-1 ODE (constraint drift at the 1e-13 level)",
        source="index-1 Lagrange–d'Alembert ODE, SciPy DOP853, rtol = atol = 1e-13",
        family="reference"),
    description="Ground truth: the index-1 ODE integrated by DOP853 at rtol = atol = 1e-13.",
    compiled=False))

__all__ = [
    "Method", "Traits", "Scheme", "StepInfo", "Observation", "available", "get", "register",
    "GNI", "gni", "DLA", "Composition", "Reference", "DiscreteLagrangian", "discrete_lagrangians",
    "midpoint_constraint", "reference_solution",
]

# --- discrete-gradient methods on the almost-Poisson form (Celledoni et al. 2019) -------------
from . import discrete_gradients  # noqa: E402
from .discrete_gradients import DiscreteGradientMethod  # noqa: E402,F401

for _m in discrete_gradients._methods():
    register(_m)

# Euler–Poincaré–Suslov integrators on SO(3) (Jiménez–Scheurle 2015): dreps-euler, dreps-rk4,
# eps-midpoint, eps-variational
from . import eps  # noqa: E402
for _m in eps.METHODS:
    register(_m)

# --- Gonzalez methods in canonical coordinates (Celledoni et al. 2019 §3.3): gonzalez-f, gonzalez-r
from . import gonzalez  # noqa: E402

for _m in gonzalez._methods():
    register(_m)

# --- comparison methods of Celledoni et al. 2019 (§5 of the spec): si-dla, i-dla, spark-lobatto2
from . import comparison  # noqa: E402

for _m in comparison._methods():
    register(_m)

# --- Ferraro–Iglesias–Martín de Diego 2008: DLA with the left-point ("bad") discrete constraint,
# and the reflection GNI on SO(3) (lie-gni-mv, lie-gni-cayley)
from .dla import dla_variant, left_point_constraint  # noqa: E402,F401

dla_left = register(dla_variant(
    "dla-left", left_point_constraint,
    description="DLA with midpoint L_d and the left-point discrete constraint μ(q_k)(q_{k+1}−q_k)/h = ν(q_k)."))
from . import lie_gni  # noqa: E402
from .lie_gni import LieGNI, lie_gni as make_lie_gni  # noqa: E402,F401

for _m in lie_gni.METHODS:
    register(_m)

# --- the unreduced GNI in exponential coordinates (Ferraro et al. 2015 §7.4.2): gni-exp-chart
from . import exp_chart  # noqa: E402

for _m in exp_chart.METHODS:
    register(_m)

# --- reduced GNI on shape × group (Ferraro–Jiménez–Martín de Diego 2015 §7): reduced-gni, lie-gni,
# reduced-rattle
from . import reduced_gni, reduced_rattle  # noqa: E402

for _m in reduced_gni.METHODS + reduced_rattle.METHODS:
    register(_m)
