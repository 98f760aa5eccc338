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
    """

    name: str
    build: Callable
    potential_weight: float | None = None
    symmetric: bool = False

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


def _euler_a(system):
    def L_d(q0, q1, h):
        return _kinetic(system, q0, q1 - q0, h) - h * _potential(system, q0, 0.0)
    return L_d


def _euler_b(system):
    def L_d(q0, q1, h):
        return _kinetic(system, q1, q1 - q0, h) - h * _potential(system, q1, h)
    return L_d


def _stormer_verlet(system):
    a, b = _euler_a(system), _euler_b(system)

    def L_d(q0, q1, h):
        return 0.5 * (a(q0, q1, h) + b(q0, q1, h))
    return L_d


def _midpoint(system):
    def L_d(q0, q1, h):
        qm = 0.5 * (q0 + q1)
        return _kinetic(system, qm, q1 - q0, h) - h * _potential(system, qm, 0.5 * h)
    return L_d


#: L_d^A = h L(q0, Δq/h)  (FJMdD 2015 (10)): potential and metric at the left node.
euler_a = DiscreteLagrangian("euler-a", _euler_a, potential_weight=1.0)
#: L_d^B = h L(q1, Δq/h)  (FJMdD 2015 (10)): potential and metric at the right node.
euler_b = DiscreteLagrangian("euler-b", _euler_b, potential_weight=0.0)
#: L_d^SV = ½ (L_d^A + L_d^B)  (FJMdD 2015 (16)): the Störmer–Verlet / trapezoidal rule.
stormer_verlet = DiscreteLagrangian("stormer-verlet", _stormer_verlet, potential_weight=0.5,
                                    symmetric=True)
#: L_d^mid = h L((q0+q1)/2, Δq/h): the midpoint rule.
midpoint = DiscreteLagrangian("midpoint", _midpoint, potential_weight=None, symmetric=True)


def resolve(discrete_lagrangian, system):
    """``(L_d, potential_weight)`` for a DiscreteLagrangian or a plain callable L_d(q0, q1, h)."""
    if isinstance(discrete_lagrangian, DiscreteLagrangian):
        return discrete_lagrangian.build(system), discrete_lagrangian.potential_weight
    if callable(discrete_lagrangian):
        return discrete_lagrangian, None
    raise InputError(f"discrete_lagrangian must be a DiscreteLagrangian or a callable L_d(q0, q1, h); "
                     f"got {type(discrete_lagrangian).__name__}")


def discrete_forces(discrete_lagrangian, system):
    """``fd(q0, q1, h) -> (f_d⁻, f_d⁺)``, each (n,) (the scalar 0.0 without a force): the discrete forces of the forced discrete
    Lagrange–d'Alembert principle (Marsden–West, Acta Numerica 2001, §3.2), with which the
    momenta of a step are p_k = −D1 L_d − f_d⁻ and p_{k+1} = D2 L_d + f_d⁺.

    The quadrature follows the rule's potential: with its weight a at the left node (Euler A: 1,
    Störmer–Verlet: ½, Euler B: 0) f_d⁻ = a h f(q0, Δq/h, t_k), f_d⁺ = (1 − a) h f(q1, Δq/h, t_{k+1});
    for the midpoint rule and a user's L_d, f_d⁻ = f_d⁺ = (h/2) f(q̄, Δq/h, t_k + h/2). Both are
    self-adjoint for the symmetric rules (f_d⁻(q1, q0, −h) = −f_d⁺(q0, q1, h)), so that the
    symmetric compositions keep their orders. The times are offsets on the engine's clock
    (:mod:`dalembert.clock`)."""
    a = discrete_lagrangian.potential_weight if isinstance(discrete_lagrangian, DiscreteLagrangian) else None
    if not getattr(system, "has_force", False):          # nothing to add: no operation traced
        return lambda q0, q1, h: (0.0, 0.0)

    def fd(q0, q1, h):
        v = (q1 - q0) / h
        if a is None:
            half = 0.5 * h * system.force(0.5 * (q0 + q1), v, 0.5 * h)
            return half, half
        zero = jnp.zeros_like(q0)
        fm = a * h * system.force(q0, v, 0.0) if a != 0.0 else zero
        fp = (1.0 - a) * h * system.force(q1, v, h) if a != 1.0 else zero
        return fm, fp
    return fd
