"""Discrete Lagrangians L_d(q0, q1, h) ≈ ∫₀ʰ L for a :class:`NonholonomicSystem`.

A time-dependent potential V(q, t) is evaluated at the rule's nodes: t_k (left), t_k + h (right),
t_k + h/2 (midpoint), on the engine's clock (the time-dependent discrete Lagrangian
L_d(q0, q1, t_k, h) of Marsden–West, Acta Numerica 2001, §4; the symmetric rules stay
self-adjoint).

The GNI accepts *any* discrete Lagrangian: a callable ``L_d(q0, q1, h) -> scalar`` (traceable,
q0 and q1 of shape (n,), h a scalar), or a :class:`DiscreteLagrangian`, which builds one from a
system. Scaling convention: ``L_d = h·L(...)`` so that momenta are physical (``p ≈ ∂L/∂q̇``);
the 2008 paper's examples omit the factor h, which changes no iterate
(docs/theory/ferraro2008.md).

Source: Ferraro–Jiménez–Martín de Diego 2015, (10), (16) (A, B, Störmer–Verlet); the midpoint
rule of Definition 4.1's examples and of Ferraro–Iglesias–Martín de Diego 2008 §5.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import jax.numpy as jnp

from .. import linalg
from ..errors import InputError


@dataclass(frozen=True)
class DiscreteLagrangian:
    """A named rule that turns a system into ``L_d(q0, q1, h)``.

    name : short name.
    build : system -> L_d.
    potential_weight : for constant-metric systems, the weight a of ∇V at the left node in
        ``−D1 L_d = G Δq/h + a h ∇V(q0)`` (A: 1, B: 0, Störmer–Verlet: ½); None if the rule has
        no explicit fast path (midpoint).
    symmetric : L_d(q0, q1, h) = L_d(q1, q0, −h).
    build_increment : system -> L_inc(q0, Δq, h, q1=None) = L_d(q0, q0 + Δq, h), the rule written
        with the increment Δq = q1 − q0 as its argument (:func:`increment_form`); ``q1``: the right
        node where the caller keeps it (a compensated sum, equal to q0 + Δq to round-off), else
        q0 + Δq; None: from ``build``.
    """

    name: str
    build: Callable
    potential_weight: float | None = None
    symmetric: bool = False
    build_increment: Callable | None = None

    def __call__(self, system):
        return self.build(system)


def _kinetic(system, q, dq, h):
    """h·½ (Δq/h)ᵀ G(q) (Δq/h)."""
    return 0.5 * jnp.sum(dq * linalg.mv(system.mass_matrix(q), dq)) / h


def _potential(system, q, dt):
    """V(q) — V(q, t) at the clock's time + dt where the system has explicit time (the quadrature
    node's time, :mod:`dalembert.clock`)."""
    if getattr(system, "explicit_time", False):
        return system.potential(q, dt)
    return system.potential(q)


# Each rule is written in its increment form L_inc(q0, Δq, h) = L_d(q0, q0 + Δq, h): the
# discrete velocity Δq/h is then the step's own unknown, never the difference of two large
# coordinates (an angle of 10⁵ rad holds Δq only to its ulp, 1.5e-11: the velocity's error
# ulp/h biased the momentum step after step, :func:`increment_form`). The right node is q0 + Δq
# unless the caller passes the one it keeps (``q1``, a compensated sum): the metric and the
# potential are then evaluated at the nodes the state holds, whose difference q1 − q0 is Δq to
# a rounding that telescopes over the steps (q0 + Δq rounds by the same amount at every step
# where Δq is nearly constant).

def _right(q0, dq, q1):
    return q0 + dq if q1 is None else q1


def _euler_a_inc(system):
    def L_inc(q0, dq, h, q1=None):
        return _kinetic(system, q0, dq, h) - h * _potential(system, q0, 0.0)
    return L_inc


def _euler_b_inc(system):
    def L_inc(q0, dq, h, q1=None):
        q1 = _right(q0, dq, q1)
        return _kinetic(system, q1, dq, h) - h * _potential(system, q1, h)
    return L_inc


def _stormer_verlet_inc(system):
    a, b = _euler_a_inc(system), _euler_b_inc(system)

    def L_inc(q0, dq, h, q1=None):
        return 0.5 * (a(q0, dq, h) + b(q0, dq, h, q1))
    return L_inc


def _midpoint_inc(system):
    def L_inc(q0, dq, h, q1=None):
        qm = q0 + 0.5 * (dq if q1 is None else q1 - q0)
        return _kinetic(system, qm, dq, h) - h * _potential(system, qm, 0.5 * h)
    return L_inc


def _from_increment(build_inc):
    """The two-node form L_d(q0, q1, h) = L_inc(q0, q1 − q0, h) of an increment-form rule."""
    def build(system):
        L_inc = build_inc(system)
        return lambda q0, q1, h: L_inc(q0, q1 - q0, h)
    return build


_euler_a, _euler_b = _from_increment(_euler_a_inc), _from_increment(_euler_b_inc)
_stormer_verlet, _midpoint = _from_increment(_stormer_verlet_inc), _from_increment(_midpoint_inc)


#: L_d^A = h L(q0, Δq/h)  (FJMdD 2015 (10)): potential and metric at the left node.
euler_a = DiscreteLagrangian("euler-a", _euler_a, potential_weight=1.0, build_increment=_euler_a_inc)
#: L_d^B = h L(q1, Δq/h)  (FJMdD 2015 (10)): potential and metric at the right node.
euler_b = DiscreteLagrangian("euler-b", _euler_b, potential_weight=0.0, build_increment=_euler_b_inc)
#: L_d^SV = ½ (L_d^A + L_d^B)  (FJMdD 2015 (16)): the Störmer–Verlet / trapezoidal rule.
stormer_verlet = DiscreteLagrangian("stormer-verlet", _stormer_verlet, potential_weight=0.5,
                                    symmetric=True, build_increment=_stormer_verlet_inc)
#: L_d^mid = h L((q0+q1)/2, Δq/h): the midpoint rule.
midpoint = DiscreteLagrangian("midpoint", _midpoint, potential_weight=None, symmetric=True,
                              build_increment=_midpoint_inc)


def resolve(discrete_lagrangian, system):
    """``(L_d, potential_weight)`` for a DiscreteLagrangian or a plain callable L_d(q0, q1, h)."""
    if isinstance(discrete_lagrangian, DiscreteLagrangian):
        return discrete_lagrangian.build(system), discrete_lagrangian.potential_weight
    if callable(discrete_lagrangian):
        return discrete_lagrangian, None
    raise InputError(f"discrete_lagrangian must be a DiscreteLagrangian or a callable L_d(q0, q1, h); "
                     f"got {type(discrete_lagrangian).__name__}")


def increment_form(discrete_lagrangian, system):
    """``L_inc(q0, Δq, h, q1=None)`` = L_d(q0, q0 + Δq, h): the discrete Lagrangian with the step's
    increment as its argument, so that a step solved for Δq (rather than q1) computes the discrete
    velocity Δq/h without the difference q1 − q0 of two large coordinates (whose rounding, ulp(q)/h,
    is biased when Δq is nearly the same every step: Euler's disk's angles grow to 10⁵ rad over
    10⁴ s). ``q1``: the right node the caller keeps (a compensated sum, q0 + Δq to round-off),
    at which the rule evaluates its right-node terms; None: q0 + Δq. A rule's own increment form
    where it has one, else L_d(q0, q0 + Δq, h) (no gain; with ``q1``, L_d(q0, q1, h))."""
    if isinstance(discrete_lagrangian, DiscreteLagrangian) and discrete_lagrangian.build_increment is not None:
        return discrete_lagrangian.build_increment(system)
    L_d, _ = resolve(discrete_lagrangian, system)
    return lambda q0, dq, h, q1=None: L_d(q0, _right(q0, dq, q1), h)


def discrete_forces(discrete_lagrangian, system, increment: bool = False):
    """``fd(q0, q1, h) -> (f_d⁻, f_d⁺)``, each (n,) (the scalar 0.0 without a force): the discrete forces of the forced discrete
    Lagrange–d'Alembert principle (Marsden–West, Acta Numerica 2001, §3.2), with which the
    momenta of a step are p_k = −D1 L_d − f_d⁻ and p_{k+1} = D2 L_d + f_d⁺.

    The quadrature follows the rule's potential: with its weight a at the left node (Euler A: 1,
    Störmer–Verlet: ½, Euler B: 0) f_d⁻ = a h f(q0, Δq/h, t_k), f_d⁺ = (1 − a) h f(q1, Δq/h, t_{k+1});
    for the midpoint rule and a user's L_d, f_d⁻ = f_d⁺ = (h/2) f(q̄, Δq/h, t_k + h/2). Both are
    self-adjoint for the symmetric rules (f_d⁻(q1, q0, −h) = −f_d⁺(q0, q1, h)), so that the
    symmetric compositions keep their orders. The times are offsets on the engine's clock
    (:mod:`dalembert.clock`). ``increment=True``: the same as ``fd(q0, Δq, h, q1=None)`` with the
    increment Δq = q1 − q0 as the second argument and the kept right node ``q1`` where the caller
    passes one (:func:`increment_form`)."""
    a = discrete_lagrangian.potential_weight if isinstance(discrete_lagrangian, DiscreteLagrangian) else None
    if not getattr(system, "has_force", False):          # nothing to add: no operation traced
        return lambda q0, q1, h, q1_kept=None: (0.0, 0.0)

    def fd(q0, x, h, q1_kept=None):
        q1, v = (_right(q0, x, q1_kept), x / h) if increment else (x, (x - q0) / h)
        if a is None:
            half = 0.5 * h * system.force(0.5 * (q0 + q1), v, 0.5 * h)
            return half, half
        zero = jnp.zeros_like(q0)
        fm = a * h * system.force(q0, v, 0.0) if a != 0.0 else zero
        fp = (1.0 - a) * h * system.force(q1, v, h) if a != 1.0 else zero
        return fm, fp
    return fd
