"""Discrete constraints ω_d(q_k, q_{k+1}, h) = 0: what the DLA methods impose on each step, and
what a method's ``DISCRETE_CONSTRAINT`` claim (:class:`~dalembert.declarations.Claim`) is measured by
on consecutive nodes.

Each is a function ``system -> ω_d(q0, q1, h)`` returning (m,) for a
:class:`~dalembert.systems.NonholonomicSystem`: the rolling constraints μ(q)v = ν(q) only (a
system's configuration constraints φ(q) = 0 are imposed at the node, not discretised).
"""
from __future__ import annotations

from typing import Callable

from .. import linalg


def midpoint_constraint(system) -> Callable:
    """ω_d(q0, q1, h) = μ(q̄)(q1 − q0)/h − ν(q̄), q̄ = (q0 + q1)/2: shape (m,)."""
    mu, nu = _rolling(system)
    timed = getattr(system, "explicit_time", False)     # ν(q, t) at t_k + h/2 (the clock's offset)

    def omega(q0, q1, h):
        qm = 0.5 * (q0 + q1)
        return linalg.mv(mu(qm), q1 - q0) / h - (nu(qm, 0.5 * h) if timed else nu(qm))
    return omega


def left_point_constraint(system) -> Callable:
    """ω_d(q0, q1, h) = μ(q0)(q1 − q0)/h − ν(q0): the left-point ("bad") discrete constraint of
    Ferraro–Iglesias–Martín de Diego 2008 Example 3 (the paper's "(x2 − x1) sin θ1 − (y2 − y1) cos θ1
    = 0"); shape (m,). Consistent, but its error is 1–2 orders larger than the midpoint one (the
    paper's claim on Fig. 5)."""
    mu, nu = _rolling(system)
    timed = getattr(system, "explicit_time", False)

    def omega(q0, q1, h):
        return linalg.mv(mu(q0), q1 - q0) / h - (nu(q0, 0.0) if timed else nu(q0))
    return omega


def _rolling(system):
    """(μ, ν) of the rolling constraints: ``rolling_matrix``/``rolling_rhs`` where the system
    separates them from its configuration constraints, else ``constraint_matrix``/``constraint_rhs``."""
    return (getattr(system, "rolling_matrix", system.constraint_matrix),
            getattr(system, "rolling_rhs", system.constraint_rhs))
