"""The GNI test problems P1 (linear constraint) and P2 (affine constraint) on R³.

Not from a paper: our own test problems (docs/theory/ferraro2015.md) for the order checks of
Ferraro–Jiménez–Martín de Diego 2015 (Thm 5.2, nonholonomic RATTLE, Remark 5.5) and the
adjointness check of its Thm 5.4:

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

SOURCE = "our test problems P1/P2 for Ferraro–Jiménez–Martín de Diego 2015 (not in the paper; docs/theory/ferraro2015.md)"
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


# --- P3: reduced system on R² × SO(3) with a coupled metric (ours; docs/theory/ferraro2015.md) -----
SOURCE_P3 = ("our test problem P3 (reduced, SO(3), coupled metric) for Ferraro–Jiménez–Martín de Diego 2015 "
             "§7.1–§7.2 (not in the paper; docs/theory/ferraro2015.md)")


def p3_metric():
    """The constant (5, 5) bundle metric of P3: G̃_xx = diag(2, 1), G̃_xg = [[0.1, 0, 0], [0, 0.2, 0]],
    G̃_gg = diag(1, 1.5, 2)."""
    G = np.zeros((5, 5))
    G[:2, :2] = np.diag([2.0, 1.0])
    G[:2, 2:] = [[0.1, 0.0, 0.0], [0.0, 0.2, 0.0]]
    G[2:, :2] = G[:2, 2:].T
    G[2:, 2:] = np.diag([1.0, 1.5, 2.0])
    return G


def _p3_mu(x, R):
    return jnp.stack([jnp.ones_like(x[0]), jnp.zeros_like(x[0]), jnp.zeros_like(x[0]),
                      -0.7 * jnp.ones_like(x[0]), jnp.sin(x[1])])[None, :]


def _build_p3(p):
    from ..systems.reduced import ReducedSystem
    a = p["nu_amplitude"]
    rhs = (lambda x, R: a * jnp.cos(x[:1])) if a != 0 else None
    system = ReducedSystem(p3_metric(), _p3_mu, potential=lambda x: 0.5 * jnp.sum(x * x),
                           constraint_rhs=rhs, trivialization="left",
                           name="p3-reduced" if a == 0 else "p3-reduced-affine")
    x0 = np.array([0.3, -0.5])
    xi0 = np.array([0.4, 0.2, -0.3])
    xdot0 = np.array([0.7 * xi0[1] - np.sin(x0[1]) * xi0[2] + a * np.cos(x0[0]), 0.6])
    return Model(system.name, p, system, None, None, ("x1", "x2"), SOURCE_P3,
                 invariants={"energy": system.energy} if a == 0 else {},
                 invariant_args=("x", "xdot", "xi"), path_array="x",
                 default_method="reduced-gni", default_h=0.01, default_t_final=4.0,
                 notes="x ∈ R², left-trivialised ξ; constraint ẋ1 − 0.7ξ2 + sin(x2)ξ3 = a cos(x1) "
                       "(linear for a = 0); V = ½|x|²; R0 = I (our choice); ẋ0 = (from the "
                       "constraint, 0.6).",
                 initial_state={"x0": x0, "R0": np.eye(3), "xdot0": xdot0, "xi0": xi0})


register(ModelSpec("p3-reduced", "GNI test problem P3: reduced system on R² × SO(3), coupled metric",
                   (Parameter("nu_amplitude", 0.0, "a in the affine term ν̃ = a cos x1 (0: linear)"),),
                   _build_p3, SOURCE_P3,
                   "G̃ with x–g coupling, one constraint ẋ1 − 0.7ξ2 + sin(x2)ξ3 = a cos x1, V = ½|x|²."))
