"""Discrete Lagrangians L_d(q0, q1, h) ≈ ∫₀ʰ L for a :class:`NonholonomicSystem`.

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


def _euler_a(system):
    def L_d(q0, q1, h):
        return _kinetic(system, q0, q1 - q0, h) - h * system.potential(q0)
    return L_d


def _euler_b(system):
    def L_d(q0, q1, h):
        return _kinetic(system, q1, q1 - q0, h) - h * system.potential(q1)
    return L_d


def _stormer_verlet(system):
    a, b = _euler_a(system), _euler_b(system)

    def L_d(q0, q1, h):
        return 0.5 * (a(q0, q1, h) + b(q0, q1, h))
    return L_d


def _midpoint(system):
    def L_d(q0, q1, h):
        qm = 0.5 * (q0 + q1)
        return _kinetic(system, qm, q1 - q0, h) - h * system.potential(qm)
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
