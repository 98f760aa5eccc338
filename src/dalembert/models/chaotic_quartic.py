"""McLachlan–Perlmutter's fully chaotic quartic nonholonomic system on R^{2n+1}.

q = (x, w_1..w_n, z_1..z_n), G = I,
V = ½(|q|² + z_1² z_2² + Σ_i w_i² z_i²)           (discrete-gradients-2019.md (19); n ≥ 2),
one constraint ẋ + Σ_i w_i ż_i = 0, i.e. μ(q) = (1, 0_n, wᵀ)                         ((20)).

Initial states: the MP06 family used for the paper's Figure 2 (spec §7.1, erratum 10):
q0 = (cos α, w0, 1, …, 1), q̇0 = sin α e_{w_1}, with w0 = (0.6, 0.4, 0.2) for n = 3 (H = 3.06 for
every α). For other n we take w0_i = 0.2 (n − i + 1), z0 = 1 (then H ≠ 3.06).
Source: Celledoni et al. 2019 §4.1; McLachlan–Perlmutter, J. Nonlinear Sci. 16 (2006).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..systems import NonholonomicSystem
from .base import Model, ModelSpec, Parameter, register

SOURCE = ("McLachlan–Perlmutter 2006; Celledoni, Farré Puiggalí, Høiseth, Martín de Diego 2019 §4.1 "
          "(discrete-gradients-2019.md §7.1)")


def initial_state(n: int, alpha: float):
    """(q0, v0) of the H = 3.06 family (n = 3) for angle α."""
    w0 = 0.2 * np.arange(n, 0, -1)
    q0 = np.concatenate([[np.cos(alpha)], w0, np.ones(n)])
    v0 = np.zeros(2 * n + 1)
    v0[1] = np.sin(alpha)
    return q0, v0


def _build(p):
    n = p["n"]

    def potential(q):
        w, z = q[1:n + 1], q[n + 1:]
        return 0.5 * (jnp.sum(q * q) + z[0] ** 2 * z[1] ** 2 + jnp.sum(w * w * z * z))

    def mu(q):
        w = q[1:n + 1]
        return jnp.concatenate([jnp.ones((1,)), jnp.zeros(n), w])[None, :]

    system = NonholonomicSystem(mass_matrix=np.eye(2 * n + 1), potential=potential,
                                constraint_matrix=mu, name="chaotic-quartic")
    q0, v0 = initial_state(n, p["alpha"])
    names = ("x",) + tuple(f"w{i + 1}" for i in range(n)) + tuple(f"z{i + 1}" for i in range(n))
    return Model("chaotic-quartic", p, system, q0, v0, names, SOURCE, path=(1, n + 1),
                 invariants={"energy": system.energy}, default_h=0.05, default_t_final=100.0)


register(ModelSpec(
    "chaotic-quartic", "Fully chaotic quartic nonholonomic system (McLachlan–Perlmutter)",
    (Parameter("n", 3, "number of (w, z) pairs; q ∈ R^{2n+1}", check=lambda x: None if x >= 2 else "must be ≥ 2",
               integer=True),
     Parameter("alpha", 0.7, "angle α of the initial state q0 = (cos α, w0, 1…), q̇0 = sin α e_w1", "rad")),
    _build, SOURCE, "Quartic potential, one nonholonomic constraint; chaotic, energy-conserving."))
