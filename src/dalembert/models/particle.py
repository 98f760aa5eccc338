"""The nonholonomic particle in R³: L = ½(ẋ² + ẏ² + ż²), constraint ż = y ẋ.

Source: Ferraro–Iglesias–Martín de Diego, Nonlinearity 21 (2008), Example 1 (§5); the ∂y
translation is a horizontal symmetry, so ẏ is conserved (and the GNI keeps
y_{k+1} − 2y_k + y_{k−1} = 0 exactly: Cor 3 and (9b) of the paper).

Exact solution (our derivation, not in the paper; docs/theory/ferraro2008.md): y = y0 + v_y t,
ẋ = c/√(1+y²) with c = ẋ0 √(1+y0²), x = x0 + (c/v_y)(asinh y − asinh y0), z = z0 + (c/v_y)(√(1+y²) − √(1+y0²));
for v_y = 0 the motion is linear. The energy ½(c² + v_y²) is constant.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..systems import NonholonomicSystem
from .base import Model, ModelSpec, register

SOURCE = ("Ferraro, Iglesias-Ponte, Martín de Diego, Nonlinearity 21 (2008), Example 1 "
          "(§5)")


def exact_solution(t, q0, v0):
    """(q, v) of shape (N, 3) at times t (N,), from a consistent (q0, v0) at t = 0."""
    t = np.asarray(t, float)[:, None]
    x0, y0, z0 = q0
    xd0, vy, _ = v0
    c = xd0 * np.sqrt(1 + y0 ** 2)
    y = y0 + vy * t[:, 0]
    xd = c / np.sqrt(1 + y ** 2)
    if abs(vy) > 1e-12:
        x = x0 + (c / vy) * (np.arcsinh(y) - np.arcsinh(y0))
        z = z0 + (c / vy) * (np.sqrt(1 + y ** 2) - np.sqrt(1 + y0 ** 2))
    else:
        x = x0 + xd0 * t[:, 0]
        z = z0 + y0 * xd0 * t[:, 0]
    q = np.stack([x, y, z], axis=1)
    v = np.stack([xd, np.full_like(y, vy), y * xd], axis=1)
    return q, v


def _mu(q):
    return jnp.stack([-q[1], jnp.zeros_like(q[1]), jnp.ones_like(q[1])])[None, :]


def _build(p):
    system = NonholonomicSystem(mass_matrix=np.eye(3), constraint_matrix=_mu,
                                name="nonholonomic-particle")
    return Model("nonholonomic-particle", p, system, np.array([0.0, 0.0, 0.0]),
                 np.array([1.0, 0.5, 0.0]), ("x", "y", "z"), SOURCE, path=(0, 2),
                 exact_solution=exact_solution,
                 invariants={"energy": system.energy, "y-momentum": lambda q, v: v[1]},
                 default_h=0.05, default_t_final=20.0)


register(ModelSpec("nonholonomic-particle", "Nonholonomic particle (ż = y ẋ)", (), _build, SOURCE,
                   "Free particle in R³ with the constraint ż = y ẋ; exact solution; ∂y is a "
                   "horizontal symmetry."))
