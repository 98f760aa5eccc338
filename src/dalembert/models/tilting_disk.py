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

The same disk on R² × SO(3) (model ``tilting-disk-so3``, :func:`group_system`): x = (x_c, y_c) the
centre's horizontal position, R turning the body axes into the space axes with the disk's axis
along the body e_2 (R = R_z(ψ) R_x(ϑ) R_y(φ) in the Euler angles above), ξ = RᵀṘ. With k = R[2, :]
(the vertical in body axes) the centre's height is z = r √(k_0² + k_2²) (= r cos ϑ), its
left-trivialised gradient ∇z = −(r k_1/√(k_0² + k_2²)) (k_2, 0, −k_0), so

    G̃(R) = blockdiag(m 1₂, 𝕀_body + m ∇z ∇zᵀ),   𝕀_body = (m r²/4) diag(1, 2, 1),   V(R) = m g z(R),

and the contact point C − r L_z (L_z = (e_z − a_z a)/|e_z − a_z a|, a = R e_2 the axis) has zero
velocity: v_C + r L̂_z R ξ = 0, whose horizontal rows are μ̃(R) = [1₂ | r (L̂_z R)[:2, :]]. A left-
trivialised :class:`~dalembert.systems.reduced.ReducedSystem` whose metric and potential depend on
R; integrated by ``lie-gni`` it has no coordinate singularity except the physical one (the disk flat).

No closed-form solution: the reference is the index-1 ODE solved by DOP853 (rtol = atol = 1e-13).
Default data: r = 0.5 m, m = 1 kg, g = 9.81 m/s², lean 0.2 rad, spinning at 6 rad/s (rolling at
3 m/s) with yaw rate 0.5 rad/s, the contact point at the origin: a gyroscopically stable rolling
disk that wobbles and turns.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..systems import NonholonomicSystem
from .base import Model, ModelSpec, Parameter, positive, register

SOURCE = ("The rolling disc of SymPy's mechanics examples (Kane & Levinson, Dynamics: Theory and "
          "Applications, 1985); Neimark & Fufaev, Dynamics of Nonholonomic Systems, 1972, Ch. III")


def _system(p, force=None, name: str = "tilting-disk") -> NonholonomicSystem:
    """The disk's system from parameters {m, r, g} (traceable in them), with an optional
    generalized force ``force(q, v, t)`` (5,) (Euler's disk's air layer,
    :mod:`~dalembert.models.eulers_disk`). G(q) and μ(q) in closed form (module doc): with s1, c1
    of ψ and s2 of ϑ,

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
                              constraint_matrix=constraint_matrix, name=name, force=force)


def group_system(p):
    """The disk on R² × SO(3) (module doc) from parameters {m, r, g}: a left-trivialised
    ReducedSystem with state (x0 = centre (2,) m, R0 (3, 3), xdot0 (2,) m/s, xi0 (3,) rad/s body)."""
    from ..lie import so3
    from ..systems.reduced import ReducedSystem

    m, r, g = p["m"], p["r"], p["g"]
    inertia = (m * r * r / 4.0) * jnp.diag(jnp.array([1.0, 2.0, 1.0]))

    def height_and_gradient(R):
        k = R[2, :]
        s = jnp.sqrt(k[0] * k[0] + k[2] * k[2])
        return r * s, -(r * k[1] / s) * jnp.stack([k[2], 0.0 * k[1], -k[0]])

    def metric(x, R):
        _, dz = height_and_gradient(R)
        Ggg = inertia + m * so3.outer(dz, dz)
        top = jnp.concatenate([m * jnp.eye(2), jnp.zeros((2, 3))], axis=1)
        return jnp.concatenate([top, jnp.concatenate([jnp.zeros((3, 2)), Ggg], axis=1)], axis=0)

    def potential(x, R):
        return m * g * height_and_gradient(R)[0]

    def constraint_matrix(x, R):
        a = R[:, 1]
        w = jnp.array([0.0, 0.0, 1.0]) - a[2] * a
        Lz = w / jnp.sqrt(jnp.sum(w * w))
        return jnp.concatenate([jnp.eye(2), r * so3.matmul(so3.hat(Lz), R)[:2, :]], axis=1)

    return ReducedSystem(metric, constraint_matrix, potential=potential, shape_dim=2,
                         trivialization="left", name="tilting-disk-so3")


def euler_rotation(q):
    """R = R_z(ψ) R_x(ϑ) R_y(φ) (3, 3) of the Euler-angle state q = (ψ, ϑ, φ, x, y)."""
    c1, s1, c2, s2, c3, s3 = (f(a) for a in q[:3] for f in (jnp.cos, jnp.sin))
    one, z = jnp.ones_like(c1), jnp.zeros_like(c1)
    Rz = jnp.array([[c1, -s1, z], [s1, c1, z], [z, z, one]])
    Rx = jnp.array([[one, z, z], [z, c2, -s2], [z, s2, c2]])
    Ry = jnp.array([[c3, z, s3], [z, one, z], [-s3, z, c3]])
    return Rz @ Rx @ Ry


def centre(q, r):
    """The centre's horizontal position (x + r sin ϑ sin ψ, y − r sin ϑ cos ψ) (2,) (module doc)."""
    return jnp.stack([q[3] + r * jnp.sin(q[1]) * jnp.sin(q[0]), q[4] - r * jnp.sin(q[1]) * jnp.cos(q[0])])


def group_state(p, q, qdot) -> dict:
    """The ``tilting-disk-so3`` state {x0, R0, xdot0, xi0} of the Euler-angle state (q, q̇) (5,):
    the centre and its velocity, R (:func:`euler_rotation`) and ξ = Rᵀω,
    ω = ψ̇ e_z + ϑ̇ Y_x + φ̇ L_y = vee(ṘRᵀ)."""
    from ..lie import so3
    q, qdot = jnp.asarray(q, jnp.float64), jnp.asarray(qdot, jnp.float64)
    R, Rdot = jax.jvp(euler_rotation, (q,), (qdot,))
    x, xdot = jax.jvp(lambda y: centre(y, p["r"]), (q,), (qdot,))
    xi = so3.vee(R.T @ Rdot)
    return {k: np.asarray(v) for k, v in (("x0", x), ("R0", R), ("xdot0", xdot), ("xi0", xi))}


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
                 default_method="nh-rattle-4", default_h=0.01, default_t_final=10.0,
                 notes="Euler angles: singular where the disk lies flat (lean ±π/2). Default nh-rattle-4: "
                       "5e-6 from the reference at t = 10 (nh-rattle at h = 0.005: 5e-3).")


def _build_group(p):
    system = group_system(p)
    euler = _system(p)
    q0 = np.array([0.0, 0.2, 0.0, 0.0, 0.0])
    state = group_state(p, q0, initial_velocity(euler, q0, 0.5, 0.0, 6.0))

    def energy(x, R, xdot, xi):
        return system.energy(x, xdot, xi, R)

    return Model("tilting-disk-so3", p, system, None, None, ("x_c", "y_c"), SOURCE,
                 invariants={"energy": energy}, invariant_args=("x", "R", "xdot", "xi"), path_array="x",
                 default_method="lie-gni", default_h=0.0025, default_t_final=10.0, initial_state=state,
                 notes="The tilting disk on R² × SO(3): x = the centre's horizontal position, R the "
                       "attitude (disk axis = body e_2), ξ = RᵀṘ; the same default motion as tilting-disk. "
                       "Default h = 0.0025: the centre 5e-4 from the reference at t = 10 (2e-3 at h = 0.005).")


register(ModelSpec(
    "tilting-disk", "Tilting rolling disk (Euler's disk; yaw, lean, spin and contact point)",
    (Parameter("m", 1.0, "mass", "kg", positive), Parameter("r", 0.5, "radius", "m", positive),
     Parameter("g", 9.81, "gravitational acceleration", "m/s²", positive)),
    _build, SOURCE, "A thin disk rolling without slipping and free to tilt; reference ODE solution.",
    system=_system))


register(ModelSpec(
    "tilting-disk-so3", "Tilting rolling disk on R² × SO(3) (centre and attitude; no Euler angles)",
    (Parameter("m", 1.0, "mass", "kg", positive), Parameter("r", 0.5, "radius", "m", positive),
     Parameter("g", 9.81, "gravitational acceleration", "m/s²", positive)),
    _build_group, SOURCE, "The tilting disk as a left-trivialised system on R² × SO(3) whose metric and "
    "potential depend on R; reference ODE solution.", system=group_system))
