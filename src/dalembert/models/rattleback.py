"""The rattleback of Kane & Levinson (1982): an ellipsoid rolling without slipping on a plane.

A rigid body whose lower surface is the ellipsoid x₁²/a² + x₂²/b² + x₃²/c² = 1 (body axes, origin O
at the ellipsoid's centre), mass m, mass centre G at h e₃ from O (e₃ pointing towards the contact
at rest), central inertia 𝕀 = [[A, D, 0], [D, B, 0], [0, 0, C]] (D ≠ 0 misaligns the principal axes
of inertia from those of curvature: the spin reversal). Coordinates as in PyDy's example
(docs/examples/rattleback, ``ellipsoid_no_slip.py``): q = (ψ, φ, θ, x, y), yaw ψ about the
vertical N_z, roll φ about the yawed x axis, pitch θ about the rolled y axis (body-fixed 3-1-2,
rotation C = R_z(ψ) R_x(φ) R_y(θ), body to space), (x, y) (m) the contact point on the plane. The
space frame's N_z points DOWN (along gravity), as in PyDy.

With μ = Cᵀ N_z (the downward vertical in body components), the contact point is the point of the
ellipsoid with outward normal μ, P − O = (a²μ₁, b²μ₂, c²μ₃)/ε, ε = |(aμ₁, bμ₂, cμ₃)| (Kane &
Levinson 1982, eqs. 16–18), and ρ = G − P = h e₃ − (P − O). The mass centre in space is
r_G(q) = (x, y, 0) + C ρ(q) and the body angular velocity ω = Cᵀ(ψ̇ N_z + φ̇ Y_x + θ̇ L_y) = J_ω(q) q̇.

    T = ½ m |J_G(q) q̇|² + ½ (J_ω q̇)ᵀ 𝕀 (J_ω q̇),   G(q) = m J_Gᵀ J_G + J_ωᵀ 𝕀 J_ω,
    V = −m g (r_G)_z          (the height of G above the plane is −(r_G)_z),

J_G = ∂r_G/∂q by automatic differentiation. Rolling: the material point at the contact has zero
velocity, J_G q̇ + C (ω × (−ρ)) = 0; its vertical component vanishes identically (the contact
height stays zero for a convex body touching the plane), its two horizontal components are the
constraints μ(q) q̇ = 0 (m = 2, three degrees of freedom).

Friction (parameter ``friction`` = σ, N·m·s): the air-resistance torque −σω of Kane & Levinson
(1982, eqs. 47–49) and PyDy's example (σ = 1e-4 there), as the generalized force
f(q, q̇) = J_ωᵀ(−σ ω) (N·m, since all angle coordinates are in rad and x, y get no torque).

Reduced form (``forms["reduced"]``, :func:`reduced_system`; states mapped by :func:`reduced_state`):
the same body as a left-trivialised ``ReducedSystem`` on R² × SO(3) (contact point, attitude, body
ω), with the friction torque −σξ in the body frame as its force.

Reference solution (``Model.reference``, mapped to q and q̇ by :func:`euler_state`): the body-frame Newton–Euler equations about the mass
centre with the rolling constraint eliminated (:func:`newton_euler_rhs`: orientation by a unit
quaternion, (𝕀 + m(|ρ|²1 − ρρᵀ)) ω̇ = τ − ω × 𝕀ω − m ρ × (ω × ρ̇ + ω × (ω × ρ) − g μ),
μ̇ = μ × ω, ẋ_P = (C d(P − O)/dt)_{x,y}) integrated by SciPy's DOP853 at rtol = atol = 1e-13: an
independent formulation (no Euler angles, no Lagrangian).

Default data: Kane & Levinson's (1982) rattleback as in PyDy's example: a = 0.2, b = 0.03,
c = 0.02, h = 0.01 m, m = 1 kg, A = 2e-4, B = 1.6e-3, C = 1.7e-3, D = −2e-5 kg·m², g = 9.81 m/s²;
initial roll and pitch 0.5°, body angular velocity (0, 0, −5) rad/s, yaw 0, contact at the origin.

Sources: T. R. Kane, D. A. Levinson, Realistic mathematical modeling of the rattleback,
Int. J. Non-Linear Mech. 17 (1982) 175–186; PyDy, examples/rattleback (ellipsoid_no_slip.py,
cpp/ellipsoid_sim.cc).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..systems import NonholonomicSystem
from .base import Model, ModelSpec, Parameter, positive, register

SOURCE = ("Kane & Levinson, Int. J. Non-Linear Mech. 17 (1982) 175–186; PyDy examples/rattleback "
          "(ellipsoid_no_slip.py, parameters of cpp/ellipsoid_sim.cc)")
NAMES = ("yaw", "roll", "pitch", "x", "y")
UNITS = ("rad", "rad", "rad", "m", "m")


def nonnegative(x):
    return None if x >= 0 else "must be >= 0"


def _rz(a):
    c, s = jnp.cos(a), jnp.sin(a)
    z, o = 0.0 * a, 1.0 + 0.0 * a
    return jnp.stack([jnp.stack([c, -s, z]), jnp.stack([s, c, z]), jnp.stack([z, z, o])])


def _rx(a):
    c, s = jnp.cos(a), jnp.sin(a)
    z, o = 0.0 * a, 1.0 + 0.0 * a
    return jnp.stack([jnp.stack([o, z, z]), jnp.stack([z, c, -s]), jnp.stack([z, s, c])])


def _ry(a):
    c, s = jnp.cos(a), jnp.sin(a)
    z, o = 0.0 * a, 1.0 + 0.0 * a
    return jnp.stack([jnp.stack([c, z, s]), jnp.stack([z, o, z]), jnp.stack([-s, z, c])])


def rotation(q):
    """C(q) = R_z(ψ) R_x(φ) R_y(θ) (3, 3): body components to space components (N_z down)."""
    return _rz(q[0]) @ _rx(q[1]) @ _ry(q[2])


def contact_offset(p, mu):
    """P − O (3,) (m, body frame): the ellipsoid's point with outward normal μ (Kane & Levinson eqs. 16–18)."""
    ax = jnp.stack([p["a"], p["b"], p["c"]])
    eps = jnp.sqrt(jnp.sum((ax * mu) ** 2))
    return ax * ax * mu / eps


def inertia(p):
    """The central inertia (3, 3) (kg·m²) [[A, D, 0], [D, B, 0], [0, 0, C]]."""
    z = 0.0 * p["A"]
    return jnp.stack([jnp.stack([p["A"], p["D"], z]), jnp.stack([p["D"], p["B"], z]),
                      jnp.stack([z, z, p["C"]])])


def _rho(p, q):
    """ρ = G − P (3,) (body frame) at the configuration q."""
    mu = rotation(q)[2, :]                                  # Cᵀ N_z
    return jnp.stack([0.0 * p["h"], 0.0 * p["h"], p["h"]]) - contact_offset(p, mu)


def _mass_centre(p, q):
    """r_G (3,) (m, space frame, N_z down): (x, y, 0) + C ρ."""
    return jnp.stack([q[3], q[4], 0.0 * q[3]]) + rotation(q) @ _rho(p, q)


def angular_velocity_map(q):
    """J_ω(q) (3, 5): ω (body frame, rad/s) = J_ω q̇."""
    Y = _rz(q[0])
    L = Y @ _rx(q[1])
    cols = jnp.stack([jnp.array([0.0, 0.0, 1.0]), Y[:, 0], L[:, 1]], axis=1)   # N_z, Y_x, L_y
    Jw = rotation(q).T @ cols
    return jnp.concatenate([Jw, jnp.zeros((3, 2))], axis=1)


def _skew(w):
    """[w]ₓ (3, 3): [w]ₓ u = w × u."""
    z = 0.0 * w[0]
    return jnp.stack([jnp.stack([z, -w[2], w[1]]), jnp.stack([w[2], z, -w[0]]), jnp.stack([-w[1], w[0], z])])


def _contact_geometry(p, mu):
    """(ρ (3,), s (3,), Ds (3, 3)) in the body frame for the downward vertical μ (3,) in body axes:
    s = P − O (:func:`contact_offset`, diag(a², b², c²) μ / ε with ε = |diag(a, b, c) μ|),
    ρ = G − P = (0, 0, h) − s, and Ds = (diag(a², b², c²) − s sᵀ)/ε the derivative of s with
    respect to μ."""
    ax = jnp.stack([p["a"], p["b"], p["c"]])
    s = contact_offset(p, mu)
    rho = jnp.stack([0.0 * p["h"], 0.0 * p["h"], p["h"]]) - s
    Ds = (jnp.diag(ax * ax) - jnp.outer(s, s)) / jnp.sqrt(jnp.sum((ax * mu) ** 2))
    return rho, s, Ds


def velocity_maps(p, q):
    """(J_G (3, 5), J_ω (3, 5), C (3, 3), ρ (3,)): ṙ_G = J_G q̇ (space frame), ω = J_ω q̇ (body).

    In closed form: r_G = (x, y, 0) + C ρ(μ) with Ċ = C[ω]ₓ, μ̇ = μ × ω = [μ]ₓ ω and
    ρ̇ = −Ds(μ) μ̇, Ds = (diag(a², b², c²) − s sᵀ)/ε the derivative of s = P − O, so
    J_G = [0 | e_x e_y] − C ([ρ]ₓ + Ds [μ]ₓ) J_ω (checked against automatic differentiation of
    r_G in the tests)."""
    C = rotation(q)
    Jw = angular_velocity_map(q)
    mu = C[2, :]
    rho, s, Ds = _contact_geometry(p, mu)
    E = jnp.zeros((3, 5)).at[0, 3].set(1.0).at[1, 4].set(1.0)
    JG = E - C @ (_skew(rho) + Ds @ _skew(mu)) @ Jw
    return JG, Jw, C, rho


def _system(p) -> NonholonomicSystem:
    """The rattleback from parameters {a, b, c, h, m, A, B, C, D, g, friction} (traceable)."""
    m, g, sigma = p["m"], p["g"], p["friction"]
    I = inertia(p)

    def mass_matrix(q):
        JG, Jw, _, _ = velocity_maps(p, q)
        return m * JG.T @ JG + Jw.T @ I @ Jw

    def potential(q):
        return -m * g * _mass_centre(p, q)[2]

    def constraint_matrix(q):
        # the contact's material point: ṙ_G + C(ω × (−ρ)) = ṙ_G + C[ρ]ₓ ω, horizontal rows
        JG, Jw, C, rho = velocity_maps(p, q)
        return (JG + C @ _skew(rho) @ Jw)[:2]

    force = None
    if not (isinstance(sigma, (int, float)) and sigma == 0.0):
        def force(q, v, t):
            Jw = angular_velocity_map(q)
            return Jw.T @ (-sigma * (Jw @ v))

    return NonholonomicSystem(mass_matrix=mass_matrix, potential=potential,
                              constraint_matrix=constraint_matrix, name="rattleback",
                              coordinate_names=NAMES, units=UNITS, force=force)


def initial_state(system, p, roll=np.deg2rad(0.5), pitch=np.deg2rad(0.5), omega=(0.0, 0.0, -5.0), yaw=0.0):
    """(q0, v0) (5,) on the constraints from the Euler angles (rad) and the body angular velocity
    ω (3,) (rad/s): q̇ solves [J_ω; μ] q̇ = [ω; 0]."""
    q0 = np.array([yaw, roll, pitch, 0.0, 0.0])
    A = np.vstack([np.asarray(angular_velocity_map(jnp.asarray(q0)))[:, :],
                   np.asarray(system.constraint_matrix(jnp.asarray(q0)))])
    v0 = np.linalg.solve(A, np.concatenate([np.asarray(omega, float), [0.0, 0.0]]))
    return q0, v0


# ---------------------------------------------------------------------------------------------
# the same body on R² × SO(3): a left-trivialised ReducedSystem (forms["reduced"])
# ---------------------------------------------------------------------------------------------

def _reduced_maps(p, R):
    """(J (3, 5), ρ (3,), s (3,)) at the attitude R (body to space, N_z down): ṙ_G = J (ẋ, ξ) with
    (ẋ (2,), ξ (3,) the body angular velocity) and ρ = G − P, s = P − O (body frame). From
    r_G = (x, y, 0) + Rρ(μ), μ = Rᵀ N_z, Ṙ = Rξ̂, μ̇ = μ × ξ, ρ̇ = −Ds μ̇ (as :func:`velocity_maps`
    with J_ω replaced by the identity): J = [E | −R([ρ]ₓ + Ds [μ]ₓ)]."""
    mu = R[2, :]
    rho, s, Ds = _contact_geometry(p, mu)
    E = jnp.zeros((3, 2)).at[0, 0].set(1.0).at[1, 1].set(1.0)
    return jnp.concatenate([E, -R @ (_skew(rho) + Ds @ _skew(mu))], axis=1), rho, s


def reduced_system(p):
    """The rattleback as a left-trivialised :class:`~dalembert.systems.reduced.ReducedSystem` on
    R² × SO(3): x = (x, y) the contact point on the plane (m), R = C the attitude (body to space,
    N_z down), ξ = RᵀṘ the body angular velocity (rad/s).

        G̃(R) = m JᵀJ + blockdiag(0₂, 𝕀)  (5 × 5),   V(R) = −m g (Rρ)_z,
        μ̃(R) = (J + [0 | R[ρ]ₓ])_{x,y rows} = [I₂ | −(R Ds [μ]ₓ)_{x,y}]   (the contact at rest),

    J from :func:`_reduced_maps`. With ``friction`` σ > 0 the force is PyDy's torque −σω in body
    components: ``force = (0, −σξ)`` (N·m). The same body as the Euler-angle model
    (:func:`reduced_state` maps its states), written without coordinates on SO(3)."""
    from ..systems.reduced import ReducedSystem
    m, g, sigma = p["m"], p["g"], p["friction"]
    I = inertia(p)

    def metric(x, R):
        J, _, _ = _reduced_maps(p, R)
        top = jnp.zeros((2, 5))
        return m * J.T @ J + jnp.concatenate([top, jnp.concatenate([jnp.zeros((3, 2)), I], axis=1)], axis=0)

    def potential(x, R):
        _, rho, _ = _reduced_maps(p, R)
        return -m * g * (R @ rho)[2]

    def constraint_matrix(x, R):
        J, rho, _ = _reduced_maps(p, R)
        return (J + jnp.concatenate([jnp.zeros((3, 2)), R @ _skew(rho)], axis=1))[:2]

    force = None
    if not (isinstance(sigma, (int, float)) and sigma == 0.0):
        def force(x, R, xdot, xi, t):
            return jnp.zeros(2), -sigma * xi

    return ReducedSystem(metric, constraint_matrix, potential=potential, shape_dim=2, trivialization="left",
                         name="rattleback-so3", force=force)


def reduced_state(q, v):
    """{x0, R0, xdot0, xi0} of the reduced form from an Euler-angle state (q, q̇) (5,):
    x = (q₃, q₄), R = C(q), ẋ = (q̇₃, q̇₄), ξ = J_ω(q) q̇."""
    q, v = jnp.asarray(q, jnp.float64), jnp.asarray(v, jnp.float64)
    return {"x0": np.asarray(q[3:5]), "R0": np.asarray(rotation(q)), "xdot0": np.asarray(v[3:5]),
            "xi0": np.asarray(angular_velocity_map(q) @ v)}


# ---------------------------------------------------------------------------------------------
# the independent reference: body-frame Newton–Euler with the rolling constraint (NumPy)
# ---------------------------------------------------------------------------------------------

def _quat_to_matrix(e):
    w, x, y, z = e / np.linalg.norm(e)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _quat_mul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def euler_to_quaternion(q):
    """The unit quaternion (w, x, y, z) of R_z(ψ) R_x(φ) R_y(θ)."""
    ax = lambda ang, i: np.concatenate([[np.cos(ang / 2)], np.sin(ang / 2) * np.eye(3)[i]])  # noqa: E731
    return _quat_mul(_quat_mul(ax(q[0], 2), ax(q[1], 0)), ax(q[2], 1))


def newton_euler_vertical_rhs(p, xp=np):
    """f(μ, ω) → (μ̇, ω̇) (3,), (3,): the closed part of the Newton–Euler equations (module doc) in
    the downward vertical μ = Cᵀ N_z (body components, |μ| = 1) and the body angular velocity ω
    (rad/s), μ̇ = μ × ω and
    (𝕀 + m(|ρ|²1 − ρρᵀ)) ω̇ = −σω − ω × 𝕀ω − m ρ × (ω × ρ̇ + ω × (ω × ρ) − g μ)
    (Kane & Levinson 1982, eqs. 23, 26, 47–70 in matrix form); neither the yaw nor the contact's
    position enters. ``xp`` is the array module (NumPy, or ``jax.numpy`` to differentiate it)."""
    a2 = xp.asarray(np.array([p["a"], p["b"], p["c"]]) ** 2)
    I = xp.asarray(np.array([[p["A"], p["D"], 0.0], [p["D"], p["B"], 0.0], [0.0, 0.0, p["C"]]]))
    m, g, h, sigma = p["m"], p["g"], p["h"], p["friction"]
    e3 = xp.asarray(np.array([0.0, 0.0, h]))

    def rhs(mu, w):
        eps = xp.sqrt(xp.sum(a2 * mu * mu))
        s = a2 * mu / eps
        mudot = xp.cross(mu, w)
        epsdot = xp.sum(a2 * mu * mudot) / eps
        sdot = a2 * (mudot * eps - mu * epsdot) / eps ** 2
        rho = e3 - s
        rhodot = -sdot
        M = I + m * (rho @ rho * xp.eye(3) - xp.outer(rho, rho))
        rhs_w = (-sigma * w - xp.cross(w, I @ w)
                 - m * xp.cross(rho, xp.cross(w, rhodot) + xp.cross(w, xp.cross(w, rho)) - g * mu))
        return mudot, xp.linalg.solve(M, rhs_w)
    return rhs


def newton_euler_rhs(p):
    """f(t, y) for y = (quaternion (4), ω (3) body, x_P, y_P): Kane & Levinson's (1982) equations
    (eqs. 23, 26, 47–70 in matrix form) derived independently as Newton–Euler about G; ω̇ from
    :func:`newton_euler_vertical_rhs`."""
    a2 = np.array([p["a"], p["b"], p["c"]]) ** 2
    closed = newton_euler_vertical_rhs(p)

    def rhs(t, y):
        e, w = y[:4], y[4:7]
        C = _quat_to_matrix(e)
        mu = C[2, :]
        eps = np.sqrt(np.sum(a2 * mu * mu))
        mudot, wdot = closed(mu, w)
        epsdot = np.sum(a2 * mu * mudot) / eps
        sdot = a2 * (mudot * eps - mu * epsdot) / eps ** 2
        edot = 0.5 * _quat_mul(e, np.concatenate([[0.0], w]))
        xdot = (C @ sdot)[:2]
        return np.concatenate([edot, wdot, xdot])
    return rhs


def newton_euler_energy(p, y):
    """E (J) of a Newton–Euler state y (9,): ½ m|ω × ρ|² + ½ ωᵀ𝕀ω − m g ρ·μ."""
    a2 = np.array([p["a"], p["b"], p["c"]]) ** 2
    I = np.array([[p["A"], p["D"], 0.0], [p["D"], p["B"], 0.0], [0.0, 0.0, p["C"]]])
    C = _quat_to_matrix(y[:4])
    w, mu = y[4:7], C[2, :]
    rho = np.array([0.0, 0.0, p["h"]]) - a2 * mu / np.sqrt(np.sum(a2 * mu * mu))
    vG = np.cross(w, rho)
    return 0.5 * p["m"] * vG @ vG + 0.5 * w @ I @ w - p["m"] * p["g"] * rho @ mu


def newton_euler_solution(p, q0, v0, t, rtol=1e-13, atol=1e-13, events=None):
    """The Newton–Euler states (N, 9) at times t (t[0] the initial time) from the Euler-angle
    state (q0, v0) (DOP853), and the dense solution (SciPy's OdeSolution). ``events``: SciPy's
    ``solve_ivp`` events g(t, y); with a terminal one the run stops there and only the times up to
    it are returned."""
    from scipy.integrate import solve_ivp
    q0 = np.asarray(q0, float)
    w0 = np.asarray(angular_velocity_map(jnp.asarray(q0))) @ np.asarray(v0, float)
    y0 = np.concatenate([euler_to_quaternion(q0), w0, q0[3:5]])
    t = np.asarray(t, float)
    sol = solve_ivp(newton_euler_rhs(p), (t[0], t[-1]), y0, method="DOP853", t_eval=t, rtol=rtol, atol=atol,
                    dense_output=True, events=events)
    if not sol.success:
        raise RuntimeError(f"rattleback Newton–Euler reference failed: {sol.message}")
    return sol.y.T, sol.sol


def euler_state(p, y, yaw_near=0.0):
    """(q (5,), q̇ (5,)) of a Newton–Euler state y (9,): the angles of C = R_z(ψ) R_x(φ) R_y(θ)
    (ψ the branch nearest ``yaw_near``), q̇ of the angles from ω = J_ω q̇, the contact's velocity
    from the rolling constraint."""
    C = _quat_to_matrix(y[:4])
    psi = np.arctan2(-C[0, 1], C[1, 1])
    psi += 2 * np.pi * np.round((yaw_near - psi) / (2 * np.pi))
    q = np.array([psi, np.arcsin(C[2, 1]), np.arctan2(-C[2, 0], C[2, 2]), y[7], y[8]])
    Jw = np.asarray(angular_velocity_map(jnp.asarray(q)))[:, :3]
    v = np.concatenate([np.linalg.solve(Jw, y[4:7]), newton_euler_rhs(p)(0.0, y)[7:9]])
    return q, v


def _reference(p):
    def reference(t, q0, v0):
        """{"q", "v"} (N, 5) at times t by Newton–Euler (DOP853, rtol = atol = 1e-13), the yaw
        followed continuously on a grid of 0.01 s."""
        t = np.asarray(t, float)
        y, dense = newton_euler_solution(p, q0, v0, t)
        grid = np.unique(np.concatenate([np.arange(t[0], t[-1], 0.01), t]))
        yaw, near = float(np.asarray(q0)[0]), {}
        for tk in grid:                    # the dense output only chooses the yaw's branch
            yaw = euler_state(p, dense(tk), yaw)[0][0]
            near[tk] = yaw
        out = [euler_state(p, yk, near[tk]) for tk, yk in zip(t, y)]
        return {"q": np.stack([a for a, _ in out]), "v": np.stack([b for _, b in out])}
    return reference


def _build(p):
    system = _system(p)
    q0, v0 = initial_state(system, p)
    return Model("rattleback", p, system, q0, v0, NAMES, SOURCE, path=(3, 4), reference=_reference(p),
                 forms={"reduced": reduced_system(p)},
                 invariants={"energy": system.energy} if p["friction"] == 0 else {},
                 default_method="nh-rattle-sym", default_h=0.001, default_t_final=5.0,
                 convergence_methods=("nh-rattle-sym", "nh-rattle-4"),
                 notes="Kane & Levinson's (1982) rattleback as in PyDy's example: spun with body "
                       "ω₃ = −5 rad/s it reverses its spin; friction=1e-4 adds PyDy's torque −σω. "
                       "N_z points down. Reference: body-frame Newton–Euler (quaternions), DOP853.")


register(ModelSpec(
    "rattleback", "Kane–Levinson rattleback (ellipsoid rolling without slip; spin reversal)",
    (Parameter("a", 0.2, "ellipsoid semi-axis along body x", "m", positive),
     Parameter("b", 0.03, "ellipsoid semi-axis along body y", "m", positive),
     Parameter("c", 0.02, "ellipsoid semi-axis along body z", "m", positive),
     Parameter("h", 0.01, "mass centre offset from the ellipsoid centre towards the contact", "m"),
     Parameter("m", 1.0, "mass", "kg", positive),
     Parameter("A", 2e-4, "central moment of inertia about body x", "kg·m²", positive),
     Parameter("B", 1.6e-3, "central moment of inertia about body y", "kg·m²", positive),
     Parameter("C", 1.7e-3, "central moment of inertia about body z", "kg·m²", positive),
     Parameter("D", -2e-5, "product of inertia (x, y)", "kg·m²"),
     Parameter("g", 9.81, "gravitational acceleration", "m/s²", positive),
     Parameter("friction", 0.0, "air-resistance coefficient σ of the torque −σω", "N·m·s", nonnegative)),
    _build, SOURCE, "Kane & Levinson's rattleback in PyDy's Euler angles (yaw, roll, pitch) and contact "
    "point; optional friction torque −σω; reference: body-frame Newton–Euler with quaternions.",
    system=_system))
