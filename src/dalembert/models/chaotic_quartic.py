"""McLachlan–Perlmutter's fully chaotic quartic nonholonomic system on R^{2n+1}.

q = (x, w_1..w_n, z_1..z_n), G = I,
V = ½(|q|² + z_1² z_2² + Σ_i w_i² z_i²)           (Celledoni et al. 2019 (19); n ≥ 2),
one constraint ẋ + Σ_i w_i ż_i = 0, i.e. μ(q) = (1, 0_n, wᵀ)                         ((20)).

Initial states: the MP06 family used for the paper's Figure 2 (the paper gives only
"a random initial state with energy 3.06"; erratum E10, docs/theory/celledoni2019.md#e10):
q0 = (cos α, w0, 1, …, 1), q̇0 = sin α e_{w_1}, with w0 = (0.6, 0.4, 0.2) for n = 3 (H = 3.06 for
every α). For other n we take w0_i = 0.2 (n − i + 1), z0 = 1 (then H ≠ 3.06).
Source: Celledoni et al. 2019 §4.1; McLachlan–Perlmutter, J. Nonlinear Sci. 16 (2006).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..systems import AlmostPoissonSystem, NonholonomicSystem
from .base import Model, ModelSpec, Parameter, register

SOURCE = ("McLachlan–Perlmutter 2006; Celledoni, Farré Puiggalí, Høiseth, Martín de Diego 2019 §4.1 "
          "(19)–(21), Figure 2")


def initial_state(n: int, alpha: float):
    """(q0, v0) of the H = 3.06 family (n = 3) for angle α."""
    w0 = 0.2 * np.arange(n, 0, -1)
    q0 = np.concatenate([[np.cos(alpha)], w0, np.ones(n)])
    v0 = np.zeros(2 * n + 1)
    v0[1] = np.sin(alpha)
    return q0, v0


def _potential(n):
    def potential(q):
        w, z = q[1:n + 1], q[n + 1:]
        return 0.5 * (jnp.sum(q * q) + z[0] ** 2 * z[1] ** 2 + jnp.sum(w * w * z * z))
    return potential


def reduced_state(params, q, v):
    """ζ = (x, w, z, ξ, η) from (q, v): ξ = ẇ, η_i = w_i ẋ − ż_i (Celledoni et al. 2019 §4.1).
    (2n+1,) -> (4n+1,)."""
    n = params["n"]
    w = q[1:n + 1]
    return jnp.concatenate([q, v[1:n + 1], w * v[0] - v[n + 1:]])


def almost_poisson_form(params, system=None) -> AlmostPoissonSystem:
    """The hand-derived almost-Poisson form (21) in ζ = (x, w, z, ξ, η) ∈ R^{4n+1}
    (Celledoni et al. 2019 §4.1).

    Basis X_i = ∂w_i, X_{n+i} = w_i ∂x − ∂z_i; g_D = diag(I, I + w wᵀ);
    𝓗 = ½|ξ|² + ½ ηᵀ(I − w wᵀ/(1 + |w|²))η + V; with κ = wᵀη/(1 + |w|²),
    Π = [[0, X], [−Xᵀ, B]], B = [[0, −κ I], [κ I, 0]] (21).
    Velocity: ẇ = ξ, u = (I − w wᵀ/(1 + |w|²))η, ẋ = w·u, ż = −u.
    Source: Celledoni et al. 2019 §4.1, (21), with w_i² for the printed y_i² in ∇𝓗 (erratum E3,
    docs/theory/celledoni2019.md#e3).
    """
    n = params["n"]
    V = _potential(n)

    def split(x):
        return x[:2 * n + 1], x[1:n + 1], x[2 * n + 1:3 * n + 1], x[3 * n + 1:]

    def u_of(w, eta):
        return eta - w * jnp.sum(w * eta) / (1.0 + jnp.sum(w * w))

    def poisson_matrix(x):
        q, w, xi, eta = split(x)
        kappa = jnp.sum(w * eta) / (1.0 + jnp.sum(w * w))
        I = jnp.eye(n)
        Z = jnp.zeros((n, n))
        X = jnp.concatenate([
            jnp.concatenate([jnp.zeros((1, n)), w[None, :]], axis=1),
            jnp.concatenate([I, Z], axis=1),
            jnp.concatenate([Z, -I], axis=1)], axis=0)                  # (2n+1, 2n)
        B = jnp.concatenate([jnp.concatenate([Z, -kappa * I], axis=1),
                             jnp.concatenate([kappa * I, Z], axis=1)], axis=0)
        top = jnp.concatenate([jnp.zeros((2 * n + 1, 2 * n + 1)), X], axis=1)
        return jnp.concatenate([top, jnp.concatenate([-X.T, B], axis=1)], axis=0)

    def hamiltonian(x):
        q, w, xi, eta = split(x)
        return 0.5 * jnp.sum(xi * xi) + 0.5 * jnp.sum(eta * u_of(w, eta)) + V(q)

    def lift(x):
        q, w, xi, eta = split(x)
        u = u_of(w, eta)
        return q, jnp.concatenate([jnp.sum(w * u)[None], xi, -u])

    def constraint(x):
        q, v = lift(x)
        w = q[1:n + 1]
        return (v[0] + jnp.sum(w * v[n + 1:]))[None]

    return AlmostPoissonSystem(poisson_matrix, hamiltonian, "chaotic-quartic/almost-poisson",
                               constraint=constraint, lift=lift,
                               reduce=lambda q, v: reduced_state(params, q, v), nonholonomic=system,
                               n_config=2 * n + 1)


def _build(p):
    n = p["n"]
    potential = _potential(n)

    def mu(q):
        w = q[1:n + 1]
        return jnp.concatenate([jnp.ones((1,)), jnp.zeros(n), w])[None, :]

    system = NonholonomicSystem(mass_matrix=np.eye(2 * n + 1), potential=potential,
                                constraint_matrix=mu, name="chaotic-quartic")
    q0, v0 = initial_state(n, p["alpha"])
    names = ("x",) + tuple(f"w{i + 1}" for i in range(n)) + tuple(f"z{i + 1}" for i in range(n))
    return Model("chaotic-quartic", p, system, q0, v0, names, SOURCE, path=(1, n + 1),
                 invariants={"energy": system.energy}, default_h=0.05, default_t_final=100.0,
                 # chaotic: at t = 50 nh-rattle (h = 0.05) is 0.22 from the reference, nh-rattle-4 1.3e-5
                 default_method="nh-rattle-4",
                 almost_poisson=almost_poisson_form(p, system))


register(ModelSpec(
    "chaotic-quartic", "Fully chaotic quartic nonholonomic system (McLachlan–Perlmutter)",
    (Parameter("n", 3, "number of (w, z) pairs; q ∈ R^{2n+1}", check=lambda x: None if x >= 2 else "must be ≥ 2",
               integer=True),
     Parameter("alpha", 0.7, "angle α of the initial state q0 = (cos α, w0, 1…), q̇0 = sin α e_w1", "rad")),
    _build, SOURCE, "Quartic potential, one nonholonomic constraint; chaotic, energy-conserving."))
