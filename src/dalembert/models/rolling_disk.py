"""The vertical rolling disk: q = (x1, x2, θ, φ), G = diag(m, m, J_θ, J_φ), V = 0.

Constraints (rolling without slipping): ẋ1 = r φ̇ cos θ, ẋ2 = r φ̇ sin θ.
Source: ``shared/papers/discrete-gradients-2019.md`` §7.0 (Celledoni et al. 2019, running example).

Exact solution: θ̇ and φ̇ are constant; θ = θ0 + θ̇ t, φ = φ0 + φ̇ t,
x1 = x1₀ + (r φ̇/θ̇)(sin θ − sin θ0), x2 = x2₀ − (r φ̇/θ̇)(cos θ − cos θ0) (straight line if θ̇ = 0).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..systems import NonholonomicSystem
from .base import Model, ModelSpec, Parameter, positive, register

SOURCE = "Celledoni, Farré Puiggalí, Høiseth, Martín de Diego (2019) §2–3 (discrete-gradients-2019.md §7.0)"


def _exact(r):
    def exact_solution(t, q0, v0):
        t = np.asarray(t, float)
        x10, x20, th0, ph0 = q0
        thd, phd = v0[2], v0[3]
        th = th0 + thd * t
        ph = ph0 + phd * t
        if abs(thd) > 1e-12:
            x1 = x10 + r * phd / thd * (np.sin(th) - np.sin(th0))
            x2 = x20 - r * phd / thd * (np.cos(th) - np.cos(th0))
        else:
            x1 = x10 + r * phd * np.cos(th0) * t
            x2 = x20 + r * phd * np.sin(th0) * t
        q = np.stack([x1, x2, th, ph], axis=1)
        v = np.stack([r * phd * np.cos(th), r * phd * np.sin(th), np.full_like(t, thd),
                      np.full_like(t, phd)], axis=1)
        return q, v
    return exact_solution


def _build(p):
    m, r, jt, jp = p["m"], p["r"], p["J_theta"], p["J_phi"]

    def mu(q):
        c, s = jnp.cos(q[2]), jnp.sin(q[2])
        z = jnp.zeros_like(c)
        return jnp.stack([jnp.stack([1.0 + z, z, z, -r * c]), jnp.stack([z, 1.0 + z, z, -r * s])])

    system = NonholonomicSystem(mass_matrix=np.diag([m, m, jt, jp]), constraint_matrix=mu,
                                name="vertical-rolling-disk")
    th0, thd, phd = 0.3, 0.7, 1.3
    q0 = np.array([0.0, 0.0, th0, 0.0])
    v0 = np.array([r * phd * np.cos(th0), r * phd * np.sin(th0), thd, phd])
    return Model("vertical-rolling-disk", p, system, q0, v0, ("x1", "x2", "theta", "phi"), SOURCE,
                 exact_solution=_exact(r),
                 invariants={"energy": system.energy, "theta-rate": lambda q, v: v[2],
                             "phi-rate": lambda q, v: v[3]},
                 default_h=0.05, default_t_final=20.0)


register(ModelSpec(
    "vertical-rolling-disk", "Vertical rolling disk",
    (Parameter("m", 1.0, "mass", "kg", positive), Parameter("r", 1.0, "radius", "m", positive),
     Parameter("J_theta", 0.25, "moment of inertia about the vertical axis", "kg m²", positive),
     Parameter("J_phi", 0.5, "moment of inertia about the rolling axis", "kg m²", positive)),
    _build, SOURCE, "A disk rolling upright without slipping on a plane; exact solution."))
