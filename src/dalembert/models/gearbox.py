"""Continuous gearbox driven by an asymmetric pendulum (Modin–Verdier nonholonomically coupled
oscillators).

Q = R³, G = I, H = ½|p|² + V with V = ½(q1² + q2²) + cos q3 − ε sin 2q3 (ε = 1/5 in the paper),
constraint q̇1 + sin q3 q̇2 = 0, μ = (1, sin q3, 0).
The paper prints H = ½|p|² − V; with −V the (q1, q2) motion is repulsive and blows up, so we use
+V (erratum E1, docs/theory/celledoni2019.md#e1).
Default initial state: a circulating one of our choice (the paper does not give its initial values;
docs/theory/celledoni2019.md), H0 = 2.2709667.
Source: Celledoni et al. 2019 §4.4, Figure 4.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..systems import AlmostPoissonSystem, NonholonomicSystem
from .base import Model, ModelSpec, Parameter, register

SOURCE = ("Modin–Verdier 2014; Celledoni, Farré Puiggalí, Høiseth, Martín de Diego 2019 §4.4 with the "
          "H = T + V correction (erratum E1, docs/theory/celledoni2019.md#e1)")
Q0 = np.array([0.4835418947237142, -0.8170087898739087, 0.08228764275297751])
P0 = np.array([0.07179002586923802, -0.8734131349760811, 0.9720667079170427])


def _basis(q3):
    s = jnp.sin(q3)
    c = jnp.sqrt(1.0 + s * s)
    z = jnp.zeros_like(s)
    return jnp.stack([jnp.stack([-s / c, z]), jnp.stack([1.0 / c, z]), jnp.stack([z, 1.0 + z])])


def reduced_state(params, q, v):
    """ζ = (q1, q2, q3, ρ1, ρ2) from (q, v): ρ1 = (−sin q3 q̇1 + q̇2)/√(1 + sin² q3), ρ2 = q̇3.
    q, v: (3,) -> (5,)."""
    X = _basis(q[2])
    return jnp.concatenate([q, jnp.sum(X * v[:, None], axis=0)])


def almost_poisson_form(params, system=None) -> AlmostPoissonSystem:
    """The hand-derived almost-Poisson form in ζ = (q1, q2, q3, ρ1, ρ2) (ours, checked against the
    Lagrange–d'Alembert equations; docs/theory/celledoni2019.md).

    Orthonormal basis X1 = (−sin q3, 1, 0)/c, X2 = e3, c = √(1 + sin² q3): g_D = I, the bracket
    [X1, X2] lies in D^⊥, so B = 0; 𝓗 = ½|ρ|² + V(q); Π = [[0, X], [−Xᵀ, 0]].
    Source: Celledoni et al. 2019 §4.4, with H = T + V (erratum E1, docs/theory/celledoni2019.md#e1).
    """
    eps = params["asymmetry"]

    def potential(q):
        return 0.5 * (q[0] ** 2 + q[1] ** 2) + jnp.cos(q[2]) - eps * jnp.sin(2.0 * q[2])

    def poisson_matrix(x):
        X = _basis(x[2])
        top = jnp.concatenate([jnp.zeros((3, 3)), X], axis=1)
        return jnp.concatenate([top, jnp.concatenate([-X.T, jnp.zeros((2, 2))], axis=1)], axis=0)

    def hamiltonian(x):
        return 0.5 * (x[3] ** 2 + x[4] ** 2) + potential(x[:3])

    def lift(x):
        return x[:3], jnp.sum(_basis(x[2]) * x[None, 3:], axis=1)

    def constraint(x):
        q, v = lift(x)
        return (v[0] + jnp.sin(q[2]) * v[1])[None]

    return AlmostPoissonSystem(poisson_matrix, hamiltonian, "gearbox/almost-poisson",
                               constraint=constraint, lift=lift,
                               reduce=lambda q, v: reduced_state(params, q, v), nonholonomic=system,
                               n_config=3)


def _build(p):
    eps = p["asymmetry"]

    def potential(q):
        return 0.5 * (q[0] ** 2 + q[1] ** 2) + jnp.cos(q[2]) - eps * jnp.sin(2.0 * q[2])

    def mu(q):
        return jnp.stack([jnp.ones_like(q[2]), jnp.sin(q[2]), jnp.zeros_like(q[2])])[None, :]

    system = NonholonomicSystem(mass_matrix=np.eye(3), potential=potential, constraint_matrix=mu,
                                name="gearbox")
    return Model("gearbox", p, system, Q0.copy(), P0.copy(), ("q1", "q2", "q3"), SOURCE,
                 invariants={"energy": system.energy}, default_h=0.1, default_t_final=1000.0,
                 almost_poisson=almost_poisson_form(p, system))


register(ModelSpec(
    "gearbox", "Continuous gearbox driven by an asymmetric pendulum",
    (Parameter("asymmetry", 0.2, "ε in V = ½(q1²+q2²) + cos q3 − ε sin 2q3"),),
    _build, SOURCE, "Two oscillators coupled through a nonholonomic gear to a pendulum."))
