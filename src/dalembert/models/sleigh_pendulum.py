"""A Chaplygin sleigh carrying a pendulum in the plane, the bob in Cartesian coordinates and the rod
length as a configuration constraint.

The sleigh is that of :mod:`~dalembert.models.chaplygin_sleigh`: blade at (x, y), heading θ,
e = (cos θ, sin θ), mass M with its centre of mass at distance a ahead of the blade and inertia J
about it, the blade not slipping sideways (−ẋ sin θ + ẏ cos θ = 0). A point mass m_b (the bob) at
B = (x_b, y_b) hangs on a massless rigid rod of length ℓ from a pivot P = (x, y) + d e on the sleigh's
axis, moving in the same horizontal plane, with a torsional spring at the pivot that pulls the rod
toward the trailing direction −e. Coordinates q = (x, y, θ, x_b, y_b) (n = 5):

    L = ½[(J + M a²) θ̇² + M(ẋ² + ẏ² + 2 a θ̇(−ẋ sin θ + ẏ cos θ))] + ½ m_b (ẋ_b² + ẏ_b²) − V,
    V = κ (1 − cos α),   cos α = −(B − P)·e / ℓ        (α: the rod's angle from −e),
    φ(q) = (|B − P|² − ℓ²)/(2ℓ) = 0                    (the rod, k = 1; m),
    μ(q) = (−sin θ, cos θ, 0, 0, 0)                     (the blade, m = 1).

The metric is the sleigh's (θ-dependent, positive definite for J > 0) beside m_b 1₂; V is written in
q without the root of |B − P| (it equals κ(1 − cos α) on φ = 0). On φ = 0, Φ's bob block is the
unit vector (B − P)/ℓ, so the bob's equation m_b B̈ = Λ (B − P)/ℓ makes −Λ the rod's tension
(N). The energy ½ q̇ᵀG q̇ + V is conserved; the bob's swing drives the sleigh (from rest, with the
default data, it travels 5.8 m in 20 s).

Reference solution (``Model.reference``): the same mechanism in minimal coordinates s = (x, y, θ, α)
with B = P − ℓ (cos(θ + α), sin(θ + α)): G_s = S + m_b J_Bᵀ J_B (S the sleigh's metric,
J_B = ∂B/∂s), V = κ(1 − cos α), μ_s = (−sin θ, cos θ, 0, 0) — a system without configuration
constraint, whose index-1 ODE is solved by DOP853 (rtol = atol = 1e-13) and mapped to q
(:func:`minimal_system`, :func:`to_minimal`, :func:`from_minimal`).

A model of this package built from two standard parts: the Chaplygin sleigh with the Lagrangian
of ``chaplygin-sleigh`` (Celledoni, Farré Puiggalí, Høiseth & Martín de Diego 2019, §4.2;
Ferraro, Iglesias & Martín de Diego, Nonlinearity 21 (2008), Example 3) and a pendulum in
Cartesian coordinates with its length as a holonomic constraint (constrained mechanical systems:
Hairer, Lubich & Wanner, *Geometric Numerical Integration*, 2nd ed. 2006, VII.1; Marsden & West,
Acta Numerica 10 (2001), §3.5 for the discrete equations). Default data: M = 1 kg, J = 0.1 kg m²,
a = 0.3 m, pivot d = −0.2 m (behind the blade), m_b = 0.5 kg, ℓ = 0.4 m, κ = 0.2 J; the sleigh at
rest at the origin heading along x, the rod 1 rad from trailing and at rest.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..systems import NonholonomicSystem
from .base import Model, ModelSpec, Parameter, map_state, positive, register

SOURCE = ("Celledoni, Farré Puiggalí, Høiseth, Martín de Diego 2019 §4.2 and Ferraro–Iglesias–Martín de "
          "Diego 2008 Example 3 (the sleigh); Hairer, Lubich & Wanner, Geometric Numerical Integration, "
          "2006, VII.1 (constrained mechanical systems); Marsden & West, Acta Numerica 10 (2001) §3.5")


def _sleigh_metric(q, M, a, J):
    s, c = jnp.sin(q[2]), jnp.cos(q[2])
    z = 0.0 * s
    return jnp.stack([jnp.stack([M + z, z, -M * a * s]), jnp.stack([z, M + z, M * a * c]),
                      jnp.stack([-M * a * s, M * a * c, J + M * a * a + z])])


def _system(p) -> NonholonomicSystem:
    """The sleigh and pendulum in q = (x, y, θ, x_b, y_b) from parameters {M, J, a, d, m_b, l,
    kappa} (traceable in them): G, V, μ and φ of the module doc."""
    M, J, a, d, mb, l, kappa = (p[k] for k in ("M", "J", "a", "d", "m_b", "l", "kappa"))

    def mass_matrix(q):
        S = _sleigh_metric(q, M, a, J)
        z = jnp.zeros((3, 2))
        return jnp.concatenate([jnp.concatenate([S, z], axis=1),
                                jnp.concatenate([z.T, mb * jnp.eye(2)], axis=1)], axis=0)

    def rod(q):
        c, s = jnp.cos(q[2]), jnp.sin(q[2])
        return q[3] - q[0] - d * c, q[4] - q[1] - d * s, c, s       # B − P and e

    def potential(q):
        bx, by, c, s = rod(q)
        return kappa * (1.0 + (bx * c + by * s) / l)

    def length(q):
        bx, by, _, _ = rod(q)
        return jnp.stack([(bx * bx + by * by - l * l) / (2.0 * l)])

    def length_jacobian(q):
        bx, by, c, s = rod(q)
        # ∂(B − P)/∂θ = d (sin θ, −cos θ)
        return jnp.stack([jnp.stack([-bx, -by, d * (bx * s - by * c), bx, by])]) / l

    def mu(q):
        z = 0.0 * q[2]
        return jnp.stack([jnp.stack([-jnp.sin(q[2]), jnp.cos(q[2]), z, z, z])])

    return NonholonomicSystem(mass_matrix=mass_matrix, potential=potential, constraint_matrix=mu,
                              holonomic_constraints=length, holonomic_jacobian=length_jacobian,
                              name="sleigh-pendulum")


def minimal_system(p) -> NonholonomicSystem:
    """The same mechanism in minimal coordinates s = (x, y, θ, α) (module doc), from the same
    parameters: no configuration constraint; the rolling constraint μ_s = (−sin θ, cos θ, 0, 0)."""
    M, J, a, d, mb, l, kappa = (p[k] for k in ("M", "J", "a", "d", "m_b", "l", "kappa"))

    def mass_matrix(s_):
        st, ct = jnp.sin(s_[2]), jnp.cos(s_[2])
        sa, ca = jnp.sin(s_[2] + s_[3]), jnp.cos(s_[2] + s_[3])
        z, one = 0.0 * st, 1.0 + 0.0 * st
        JB = jnp.stack([jnp.stack([one, z, -d * st + l * sa, l * sa]),
                        jnp.stack([z, one, d * ct - l * ca, -l * ca])])
        S = jnp.pad(_sleigh_metric(s_, M, a, J), ((0, 1), (0, 1)))
        return S + mb * JB.T @ JB

    def mu(s_):
        z = 0.0 * s_[2]
        return jnp.stack([jnp.stack([-jnp.sin(s_[2]), jnp.cos(s_[2]), z, z])])

    return NonholonomicSystem(mass_matrix=mass_matrix, potential=lambda s_: kappa * (1.0 - jnp.cos(s_[3])),
                              constraint_matrix=mu, name="sleigh-pendulum/minimal")


def _bob(s_, d, l):
    """q = (x, y, θ, x_b, y_b) of s = (x, y, θ, α)."""
    return jnp.concatenate([s_[:3], jnp.stack([s_[0] + d * jnp.cos(s_[2]) - l * jnp.cos(s_[2] + s_[3]),
                                               s_[1] + d * jnp.sin(s_[2]) - l * jnp.sin(s_[2] + s_[3])])])


def from_minimal(p, s, sdot):
    """(q, q̇) (…, 5) of minimal-coordinate states (s, ṡ) (…, 4), q̇ by forward-mode differentiation."""
    return map_state(lambda x: _bob(x, p["d"], p["l"]), s, sdot, 4, 5)


def to_minimal(p, q, qdot):
    """(s, ṡ) (4,) of a state (q, q̇) (5,) on φ = 0, Φ q̇ = 0: α = atan2 of (B − P) against −e,
    α̇ = ((B − P) × (Ḃ − Ṗ))/|B − P|² − θ̇ (a NumPy function of concrete values)."""
    d = p["d"]
    q, qdot = np.asarray(q, float), np.asarray(qdot, float)
    th, thd = q[2], qdot[2]
    e, de = np.array([np.cos(th), np.sin(th)]), np.array([-np.sin(th), np.cos(th)])
    rel = q[3:] - q[:2] - d * e
    reld = qdot[3:] - qdot[:2] - d * thd * de
    # B − P = −ℓ (cos(θ + α), sin(θ + α)): θ + α is the angle of −(B − P)
    alpha = np.arctan2(-rel[1], -rel[0]) - th
    alpha = (alpha + np.pi) % (2.0 * np.pi) - np.pi
    alphad = (rel[0] * reld[1] - rel[1] * reld[0]) / float(rel @ rel) - thd
    return np.concatenate([q[:3], [alpha]]), np.concatenate([qdot[:3], [alphad]])


def _reference(p):
    minimal = minimal_system(p)

    def reference(t, q0, v0):
        """{"q", "v"} (N, 5) at times t: the minimal-coordinate reference mapped to q."""
        s0, sd0 = to_minimal(p, q0, v0)
        sol = minimal.reference_solution(s0, sd0, t=np.asarray(t, float))
        q, v = from_minimal(p, sol["q"], sol["v"])
        return {"q": q, "v": v}
    return reference


def initial_state(p, *, alpha=1.0, speed=0.0, yaw_rate=0.0, alpha_rate=0.0, theta=0.0):
    """(q0, v0) (5,) of the sleigh at the origin heading θ, moving at ``speed`` (m/s) along e with
    ``yaw_rate`` (rad/s), the rod at ``alpha`` (rad) from trailing, turning at ``alpha_rate`` (rad/s)
    relative to the sleigh: consistent with φ = 0, Φ q̇ = 0 and the blade."""
    s = np.array([0.0, 0.0, theta, alpha])
    sd = np.array([speed * np.cos(theta), speed * np.sin(theta), yaw_rate, alpha_rate])
    return from_minimal(p, s, sd)


def _build(p):
    system = _system(p)
    q0, v0 = initial_state(p)
    return Model("sleigh-pendulum", p, system, q0, v0, ("x", "y", "theta", "x_b", "y_b"), SOURCE,
                 invariants={"energy": system.energy}, reference=_reference(p),
                 default_method="nh-rattle-sym", default_h=0.01, default_t_final=20.0,
                 convergence_methods=("nh-rattle-sym", "nh-rattle-4"),
                 notes="The bob in Cartesian coordinates with the rod length as a configuration "
                       "constraint; the reference is the same mechanism in minimal coordinates "
                       "(x, y, θ, α).")


register(ModelSpec(
    "sleigh-pendulum", "Chaplygin sleigh carrying a spring-loaded pendulum (rod length as a configuration constraint)",
    (Parameter("M", 1.0, "mass of the sleigh", "kg", positive),
     Parameter("J", 0.1, "sleigh's moment of inertia about its centre of mass", "kg m²", positive),
     Parameter("a", 0.3, "distance from the blade to the sleigh's centre of mass", "m"),
     Parameter("d", -0.2, "position of the pivot on the sleigh's axis, from the blade (negative: behind)", "m"),
     Parameter("m_b", 0.5, "mass of the bob", "kg", positive),
     Parameter("l", 0.4, "length of the rod", "m", positive),
     Parameter("kappa", 0.2, "stiffness of the torsional spring at the pivot, V = κ(1 − cos α)", "J",
               lambda x: None if x >= 0 else "must be ≥ 0")),
    _build, SOURCE, "A sleigh on a knife edge with a bob on a rod pivoted on it, the bob in "
    "Cartesian coordinates and the rod's length held by a configuration constraint; reference: "
    "the minimal-coordinate form.", system=_system))
