"""The tilting rolling disk in centre coordinates, its contact height a configuration constraint.

The disk of :mod:`~dalembert.models.tilting_disk` (radius r, mass m, thin: 𝕀 = (m r²/4)(1 − L_y L_yᵀ)
+ (m r²/2) L_y L_yᵀ) written with the redundant coordinates q = (ψ, ϑ, φ, x_c, y_c, z_c): the Euler
angles yaw ψ, lean ϑ and spin φ of that module, and the centre C = (x_c, y_c, z_c) (m) in space
instead of the contact point. With c_i, s_i the cosine and sine of ψ (i = 1) and ϑ (i = 2), Y_x =
(c1, s1, 0), Y_y = (−s1, c1, 0), L_y = c2 Y_y + s2 e_z, L_z = −s2 Y_y + c2 e_z and the angular velocity
ω = ψ̇ e_z + ϑ̇ Y_x + φ̇ L_y,

    L = ½ m |Ċ|² + ½ ωᵀ𝕀ω − m g z_c,
    G(q) = blockdiag(m r² [[c2²/4 + s2²/2, 0, s2/2], [0, 1/4, 0], [s2/2, 0, 1/2]], m 1₃),

the angle block being J_ωᵀ𝕀J_ω with J_ω = [e_z, Y_x, L_y] (e_z·L_y = s2, Y_x ⊥ e_z, L_y). The material
point of the disk at the contact, C − r L_z, has zero velocity: Ċ − r ω × L_z = 0 with ω × L_z =
(ψ̇ s2 + φ̇) Y_x − ϑ̇ (c2 Y_y + s2 e_z). Its vertical component, ż_c + r s2 ϑ̇ = 0, is the time derivative
of the contact height

    φ_h(q) = z_c − r cos ϑ = 0          (the configuration constraint, k = 1; Φ = (0, r s2, 0, 0, 0, 1)),

and its horizontal components are the rolling constraints μ(q) q̇ = 0 (m = 2):

    μ(q) = [[−r s2 c1, −r c2 s1, −r c1, 1, 0, 0], [−r s2 s1, r c2 c1, −r s1, 0, 1, 0]].

So the same physical motion as ``tilting-disk`` (whose coordinates are the angles and the contact
point, with the height eliminated) from a Lagrangian of another form: a constant translational
metric, a potential linear in z_c, and the height held by a multiplier Λ: the z_c row of
G q̈ = −∇V + ΦᵀΛ + μᵀλ is m z̈_c = −m g + Λ, so Λ is the normal contact force (N, up). The
metric is singular where the disk lies flat (ϑ = ±π/2), like the Euler angles of ``tilting-disk``.
The rolling-disk equations: Neimark & Fufaev, *Dynamics of Nonholonomic Systems* (1972), Ch. III;
configuration constraints in the discrete equations: Marsden & West, Acta Numerica 10 (2001), §3.5.

Reference solution (``Model.reference``): the ``tilting-disk`` system's index-1 ODE by DOP853
(rtol = atol = 1e-13) from the contact-point state of the same disk, mapped to the centre
(:func:`from_contact`): an independent formulation (another Lagrangian, no configuration
constraint). Default data: those of ``tilting-disk`` (lean 0.2 rad, spin 6 rad/s, yaw rate
0.5 rad/s, the contact point at the origin).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..systems import NonholonomicSystem
from .base import Model, ModelSpec, Parameter, map_state, positive, register
from . import tilting_disk

SOURCE = ("Neimark & Fufaev, Dynamics of Nonholonomic Systems, 1972, Ch. III (the rolling disk); "
          "Marsden & West, Acta Numerica 10 (2001) §3.5 (configuration constraints)")


def _system(p) -> NonholonomicSystem:
    """The disk in centre coordinates from parameters {m, r, g} (traceable in them): G, V, μ and
    φ_h (module doc), Φ in closed form."""
    m, r, g = p["m"], p["r"], p["g"]

    def mass_matrix(q):
        c2, s2 = jnp.cos(q[1]), jnp.sin(q[1])
        a, z = m * r * r, 0.0 * c2
        return jnp.stack([
            jnp.stack([a * (0.25 * c2 * c2 + 0.5 * s2 * s2), z, 0.5 * a * s2, z, z, z]),
            jnp.stack([z, 0.25 * a + z, z, z, z, z]),
            jnp.stack([0.5 * a * s2, z, 0.5 * a + z, z, z, z]),
            jnp.stack([z, z, z, m + z, z, z]),
            jnp.stack([z, z, z, z, m + z, z]),
            jnp.stack([z, z, z, z, z, m + z])])

    def constraint_matrix(q):
        c1, s1, c2, s2 = jnp.cos(q[0]), jnp.sin(q[0]), jnp.cos(q[1]), jnp.sin(q[1])
        z, one = 0.0 * c1, 1.0 + 0.0 * c1
        return jnp.stack([jnp.stack([-r * s2 * c1, -r * c2 * s1, -r * c1, one, z, z]),
                          jnp.stack([-r * s2 * s1, r * c2 * c1, -r * s1, z, one, z])])

    def height(q):
        return jnp.stack([q[5] - r * jnp.cos(q[1])])

    def height_jacobian(q):
        z = 0.0 * q[1]
        return jnp.stack([jnp.stack([z, r * jnp.sin(q[1]), z, z, z, 1.0 + z])])

    return NonholonomicSystem(mass_matrix=mass_matrix, potential=lambda q: m * g * q[5],
                              constraint_matrix=constraint_matrix, holonomic_constraints=height,
                              holonomic_jacobian=height_jacobian, name="tilting-disk-centre")


def _to_centre(q, r):
    """(ψ, ϑ, φ, x, y) (contact point) -> (ψ, ϑ, φ, x_c, y_c, z_c) (centre = contact + r L_z)."""
    s1, c1, s2, c2 = jnp.sin(q[0]), jnp.cos(q[0]), jnp.sin(q[1]), jnp.cos(q[1])
    return jnp.concatenate([q[:3], jnp.stack([q[3] + r * s2 * s1, q[4] - r * s2 * c1, r * c2])])


def _to_contact(q, r):
    """(ψ, ϑ, φ, x_c, y_c, z_c) -> (ψ, ϑ, φ, x, y) (contact = centre − r L_z, horizontal part)."""
    s1, c1, s2 = jnp.sin(q[0]), jnp.cos(q[0]), jnp.sin(q[1])
    return jnp.concatenate([q[:3], jnp.stack([q[3] - r * s2 * s1, q[4] + r * s2 * c1])])


def from_contact(r, q, qdot):
    """The centre-coordinate state (q (6,), q̇ (6,)) of the ``tilting-disk`` state (q, q̇) (5,):
    C = (x + r s2 s1, y − r s2 c1, r c2) and its velocity (by forward-mode differentiation).
    Vectorised over leading axes of q, qdot (…, 5) -> (…, 6)."""
    return map_state(lambda x: _to_centre(x, r), q, qdot, 5, 6)


def to_contact(r, q, qdot):
    """The ``tilting-disk`` state (q (5,), q̇ (5,)) of a centre-coordinate state (q, q̇) (6,)
    (the inverse of :func:`from_contact` on φ_h = 0)."""
    a, b = jax.jvp(lambda x: _to_contact(x, r), (jnp.asarray(q, jnp.float64),), (jnp.asarray(qdot, jnp.float64),))
    return np.asarray(a), np.asarray(b)


def _reference(p):
    contact = tilting_disk._system(p)

    def reference(t, q0, v0):
        """{"q", "v"} (N, 6) at times t: the ``tilting-disk`` reference mapped to the centre."""
        qc, vc = to_contact(p["r"], q0, v0)
        sol = contact.reference_solution(qc, vc, t=np.asarray(t, float))
        q, v = from_contact(p["r"], sol["q"], sol["v"])
        return {"q": q, "v": v}
    return reference


def _build(p):
    system = _system(p)
    contact = tilting_disk._system(p)
    qc0 = np.array([0.0, 0.2, 0.0, 0.0, 0.0])
    q0, v0 = from_contact(p["r"], qc0, tilting_disk.initial_velocity(contact, qc0, 0.5, 0.0, 6.0))
    return Model("tilting-disk-centre", p, system, q0, v0, ("psi", "theta", "phi", "x_c", "y_c", "z_c"), SOURCE,
                 path=(3, 4), invariants={"energy": system.energy}, reference=_reference(p),
                 default_method="nh-rattle-4", default_h=0.01, default_t_final=10.0,
                 convergence_methods=("nh-rattle-sym", "nh-rattle-4"),
                 notes="The tilting-disk motion in redundant coordinates: the centre (x_c, y_c, z_c) "
                       "with the contact height z_c = r cos ϑ as a configuration constraint. The "
                       "reference is the tilting-disk ODE mapped to the centre.")


register(ModelSpec(
    "tilting-disk-centre", "Tilting rolling disk in centre coordinates (contact height as a configuration constraint)",
    (Parameter("m", 1.0, "mass", "kg", positive), Parameter("r", 0.5, "radius", "m", positive),
     Parameter("g", 9.81, "gravitational acceleration", "m/s²", positive)),
    _build, SOURCE, "Euler's disk with the centre's height held by a configuration constraint "
    "z_c = r cos ϑ beside the two rolling constraints; reference: the tilting-disk ODE mapped to the centre.",
    system=_system))
