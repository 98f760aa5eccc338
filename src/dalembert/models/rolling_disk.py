"""The vertical rolling disk: q = (x1, x2, θ, φ), G = diag(m, m, J_θ, J_φ), V = 0.

Constraints (rolling without slipping): ẋ1 = r φ̇ cos θ, ẋ2 = r φ̇ sin θ.
Source: Celledoni et al. 2019, the running example of §2–3 (docs/theory/celledoni2019.md).

Exact solution: θ̇ and φ̇ are constant; θ = θ0 + θ̇ t, φ = φ0 + φ̇ t,
x1 = x1₀ + (r φ̇/θ̇)(sin θ − sin θ0), x2 = x2₀ − (r φ̇/θ̇)(cos θ − cos θ0) (straight line if θ̇ = 0).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..systems import AlmostPoissonSystem, NonholonomicSystem
from .base import Model, ModelSpec, Parameter, positive, register

SOURCE = "Celledoni, Farré Puiggalí, Høiseth, Martín de Diego (2019) §2–3 (running example)"


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


def reduced_state(params, q, v):
    """ζ = (x1, x2, θ, φ, ρ1, ρ2) from (q, v): ρ = Xᵀ G v = (m r (cos θ ẋ1 + sin θ ẋ2) + J_φ φ̇, J_θ θ̇).
    q, v: (4,) -> (6,)."""
    m, r, jt, jp = params["m"], params["r"], params["J_theta"], params["J_phi"]
    c, s = jnp.cos(q[2]), jnp.sin(q[2])
    return jnp.concatenate([q, jnp.stack([m * r * (c * v[0] + s * v[1]) + jp * v[3], jt * v[2]])])


def almost_poisson_form(params, system=None) -> AlmostPoissonSystem:
    """The hand-derived almost-Poisson form in ζ = (x1, x2, θ, φ, ρ1, ρ2) (Celledoni et al. 2019 §2–3).

    X1 = (r cos θ, r sin θ, 0, 1), X2 = (0, 0, 1, 0); all structure functions vanish (B = 0);
    𝓗 = ½[ρ1²/(m r² + J_φ) + ρ2²/J_θ]; Π15 = r cos θ, Π25 = r sin θ, Π36 = 1, Π45 = 1,
    skew-completed. Velocity: v = X g_D⁻¹ ρ.
    Source: Celledoni et al. 2019 §2–3, with X3, X4 in cos θ, sin θ where the paper prints cos φ, sin φ
    (erratum E2, docs/theory/celledoni2019.md#e2).
    """
    m, r, jt, jp = params["m"], params["r"], params["J_theta"], params["J_phi"]
    k1 = m * r * r + jp

    def poisson_matrix(x):
        c, s = jnp.cos(x[2]), jnp.sin(x[2])
        z = jnp.zeros_like(c)
        X = jnp.stack([jnp.stack([r * c, z]), jnp.stack([r * s, z]), jnp.stack([z, 1.0 + z]),
                       jnp.stack([1.0 + z, z])])
        top = jnp.concatenate([jnp.zeros((4, 4)), X], axis=1)
        return jnp.concatenate([top, jnp.concatenate([-X.T, jnp.zeros((2, 2))], axis=1)], axis=0)

    def hamiltonian(x):
        return 0.5 * (x[4] ** 2 / k1 + x[5] ** 2 / jt)

    def lift(x):
        c, s = jnp.cos(x[2]), jnp.sin(x[2])
        y1, y2 = x[4] / k1, x[5] / jt
        return x[:4], jnp.stack([r * c * y1, r * s * y1, y2, y1])

    def constraint(x):
        q, v = lift(x)
        c, s = jnp.cos(q[2]), jnp.sin(q[2])
        return jnp.stack([v[0] - r * c * v[3], v[1] - r * s * v[3]])

    return AlmostPoissonSystem(poisson_matrix, hamiltonian, "vertical-rolling-disk/almost-poisson",
                               constraint=constraint, lift=lift,
                               reduce=lambda q, v: reduced_state(params, q, v), nonholonomic=system,
                               n_config=4)


def _system(p) -> NonholonomicSystem:
    """The disk's system from parameters {m, r, J_theta, J_phi} (traceable in them)."""
    m, r, jt, jp = p["m"], p["r"], p["J_theta"], p["J_phi"]

    def mu(q):
        c, s = jnp.cos(q[2]), jnp.sin(q[2])
        z = jnp.zeros_like(c)
        return jnp.stack([jnp.stack([1.0 + z, z, z, -r * c]), jnp.stack([z, 1.0 + z, z, -r * s])])

    return NonholonomicSystem(mass_matrix=jnp.diag(jnp.stack([m, m, jt, jp]).astype(jnp.float64)),
                              constraint_matrix=mu, name="vertical-rolling-disk")


def _build(p):
    r = p["r"]
    system = _system(p)
    th0, thd, phd = 0.3, 0.7, 1.3
    q0 = np.array([0.0, 0.0, th0, 0.0])
    v0 = np.array([r * phd * np.cos(th0), r * phd * np.sin(th0), thd, phd])
    return Model("vertical-rolling-disk", p, system, q0, v0, ("x1", "x2", "theta", "phi"), SOURCE,
                 exact_solution=_exact(r),
                 invariants={"energy": system.energy, "theta-rate": lambda q, v: v[2],
                             "phi-rate": lambda q, v: v[3]},
                 default_h=0.05, default_t_final=20.0, almost_poisson=almost_poisson_form(p, system))


register(ModelSpec(
    "vertical-rolling-disk", "Vertical rolling disk",
    (Parameter("m", 1.0, "mass", "kg", positive), Parameter("r", 1.0, "radius", "m", positive),
     Parameter("J_theta", 0.25, "moment of inertia about the vertical axis", "kg m²", positive),
     Parameter("J_phi", 0.5, "moment of inertia about the rolling axis", "kg m²", positive)),
    _build, SOURCE, "A disk rolling upright without slipping on a plane; exact solution.",
    system=_system))
