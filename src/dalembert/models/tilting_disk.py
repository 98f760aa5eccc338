"""A thin disk rolling without slipping on a horizontal plane, free to tilt (Euler's disk).

Coordinates q = (ψ, ϑ, φ, x, y) as in SymPy's rolling-disc example: the yaw ψ about the vertical
e_z (frame Y), the lean ϑ about Y_x (frame L), the spin φ about the disk's axis L_y, and the
contact point (x, y). With c_i, s_i the cosine and sine of ψ (i = 1) and ϑ (i = 2):
Y_x = (c1, s1, 0), Y_y = (−s1, c1, 0), L_y = c2 Y_y + s2 e_z, L_z = −s2 Y_y + c2 e_z (contact →
centre); the centre C = (x, y, 0) + r L_z; the angular velocity ω = ψ̇ e_z + ϑ̇ Y_x + φ̇ L_y.

L = ½ m |Ċ|² + ½ ωᵀ𝕀ω − m g r cos ϑ, 𝕀 = (m r²/4)(1 − L_y L_yᵀ) + (m r²/2) L_y L_yᵀ; so
G(q) = m J_Cᵀ J_C + J_ωᵀ 𝕀 J_ω with J_C = ∂C/∂q and J_ω = [e_z, Y_x, L_y, 0, 0], worked out in
closed form in :func:`_system` (the vector form is the test's independent check; a SymPy import
of the same disk is the other). Rolling: the material point of the disk at the contact has zero
velocity, Ċ + ω × (−r L_z) = 0, whose horizontal components are the two constraints
μ(q) q̇ = 0 (the vertical one holds identically). The metric is singular at ϑ = ±π/2 (the disk flat, ψ and φ
about the same axis): the Euler angles' singularity.

No closed-form solution: the reference is the index-1 ODE solved by DOP853 (rtol = atol = 1e-13).
Default data: r = 0.5 m, m = 1 kg, g = 9.81 m/s², lean 0.2 rad, spinning at 6 rad/s (rolling at
3 m/s) with yaw rate 0.5 rad/s, the contact point at the origin: a gyroscopically stable rolling
disk that wobbles and turns.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..systems import NonholonomicSystem
from .base import Model, ModelSpec, Parameter, positive, register

SOURCE = ("The rolling disc of SymPy's mechanics examples (Kane & Levinson, Dynamics: Theory and "
          "Applications, 1985); Neimark & Fufaev, Dynamics of Nonholonomic Systems, 1972, Ch. III")


def _system(p) -> NonholonomicSystem:
    """The disk's system from parameters {m, r, g} (traceable in them). G(q) and μ(q) in closed
    form (module doc): with s1, c1 of ψ and s2 of ϑ,

        G = m r² [[(1 + 5 s2²)/4, 0, s2/2], [0, 5/4, 0], [s2/2, 0, 1/2]] in (ψ, ϑ, φ),
        G[(ψ, ϑ), (x, y)] = m r [[s2 c1, s2 s1], [c2 s1, −c2 c1]], G[(x, y), (x, y)] = m 1,
        μ = [[0, 0, −r c1, 1, 0], [0, 0, −r s1, 0, 1]]

    (ẋ = r φ̇ cos ψ, ẏ = r φ̇ sin ψ: the contact point moves along Y_x at the rolling speed).
    """
    m, r, g = p["m"], p["r"], p["g"]

    def mass_matrix(q):
        c1, s1, c2, s2 = jnp.cos(q[0]), jnp.sin(q[0]), jnp.cos(q[1]), jnp.sin(q[1])
        a, b, z = m * r * r, m * r, 0.0 * c1
        return jnp.stack([
            jnp.stack([a * (1.0 + 5.0 * s2 * s2) / 4.0, z, a * s2 / 2.0, b * s2 * c1, b * s2 * s1]),
            jnp.stack([z, 1.25 * a + z, z, b * c2 * s1, -b * c2 * c1]),
            jnp.stack([a * s2 / 2.0, z, 0.5 * a + z, z, z]),
            jnp.stack([b * s2 * c1, b * c2 * s1, z, m + z, z]),
            jnp.stack([b * s2 * s1, -b * c2 * c1, z, z, m + z])])

    def constraint_matrix(q):
        c1, s1 = jnp.cos(q[0]), jnp.sin(q[0])
        z = 0.0 * c1
        return jnp.stack([jnp.stack([z, z, -r * c1, 1.0 + z, z]), jnp.stack([z, z, -r * s1, z, 1.0 + z])])

    return NonholonomicSystem(mass_matrix=mass_matrix, potential=lambda q: m * g * r * jnp.cos(q[1]),
                              constraint_matrix=constraint_matrix, name="tilting-disk")


def initial_velocity(system, q0, yaw_rate, lean_rate, spin_rate):
    """q̇0 (5,) with the given angle rates and the contact velocity the rolling constraint
    requires: μ's (x, y) block is the identity, so (ẋ, ẏ) = −μ[:, :3] (ψ̇, ϑ̇, φ̇)."""
    mu = np.asarray(system.constraint_matrix(jnp.asarray(q0)))
    w = np.array([yaw_rate, lean_rate, spin_rate], float)
    return np.concatenate([w, -mu[:, :3] @ w])


def _build(p):
    system = _system(p)
    q0 = np.array([0.0, 0.2, 0.0, 0.0, 0.0])
    v0 = initial_velocity(system, q0, 0.5, 0.0, 6.0)
    return Model("tilting-disk", p, system, q0, v0, ("psi", "theta", "phi", "x", "y"), SOURCE,
                 path=(3, 4), invariants={"energy": system.energy},
                 default_method="nh-rattle", default_h=0.01, default_t_final=10.0,
                 notes="Euler angles: singular where the disk lies flat (lean ±π/2).")


register(ModelSpec(
    "tilting-disk", "Tilting rolling disk (Euler's disk; yaw, lean, spin and contact point)",
    (Parameter("m", 1.0, "mass", "kg", positive), Parameter("r", 0.5, "radius", "m", positive),
     Parameter("g", 9.81, "gravitational acceleration", "m/s²", positive)),
    _build, SOURCE, "A thin disk rolling without slipping and free to tilt; reference ODE solution.",
    system=_system))
