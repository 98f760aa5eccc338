"""The GNI test problems P1 (linear constraint) and P2 (affine constraint) on R³.

Not from a paper: the test problems of the GNI specification
(``shared/papers/gni-2015-new-developments.md`` §5.5) used for the order checks R6, R7, R9 and
the adjointness check R8:

P1: G = diag(1, 2, 1.5), V = ½|q|² + ¼x⁴, constraint ż = y ẋ (μ = [−y, 0, 1]),
    q0 = (0.5, 0.3, −0.2), v0 = (0.8, −0.4, 0.24), T = 5.
P2: P1 with the affine constraint ż − y ẋ = 0.5 sin x (ν = 0.5 sin x); v0's z-component is
    adjusted to 0.24 + 0.5 sin 0.5 so that the initial state is consistent.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..systems import NonholonomicSystem
from .base import Model, ModelSpec, Parameter, register

SOURCE = "GNI spec (gni-2015-new-developments.md) §5.5, test problems P1/P2"
_G = np.diag([1.0, 2.0, 1.5])


def _potential(q):
    return 0.5 * jnp.sum(q * q) + 0.25 * q[0] ** 4


def _mu(q):
    return jnp.stack([-q[1], jnp.zeros_like(q[1]), jnp.ones_like(q[1])])[None, :]


def _energy(system):
    return system.energy


def _build_p1(p):
    system = NonholonomicSystem(mass_matrix=_G, potential=_potential, constraint_matrix=_mu,
                                name="p1-linear")
    return Model("p1-linear", p, system, np.array([0.5, 0.3, -0.2]), np.array([0.8, -0.4, 0.24]),
                 ("x", "y", "z"), SOURCE, invariants={"energy": system.energy},
                 default_h=0.01, default_t_final=5.0)


def _build_p2(p):
    amp = p["amplitude"]
    system = NonholonomicSystem(mass_matrix=_G, potential=_potential, constraint_matrix=_mu,
                                constraint_rhs=lambda q: amp * jnp.sin(q[:1]), name="p2-affine")
    v0 = np.array([0.8, -0.4, 0.24 + amp * np.sin(0.5)])
    return Model("p2-affine", p, system, np.array([0.5, 0.3, -0.2]), v0, ("x", "y", "z"), SOURCE,
                 default_h=0.01, default_t_final=5.0,
                 notes="affine constraint: the energy is not conserved by the continuous flow")


register(ModelSpec("p1-linear", "GNI test problem P1 (linear constraint ż = y ẋ)", (), _build_p1,
                   SOURCE, "M = diag(1,2,1.5), V = ½|q|² + ¼x⁴."))
register(ModelSpec("p2-affine", "GNI test problem P2 (affine constraint ż − y ẋ = a sin x)",
                   (Parameter("amplitude", 0.5, "a in ν(q) = a sin x"),), _build_p2, SOURCE,
                   "P1 with an affine constraint."))
