"""The Whipple–Carvallo bicycle: four rigid bodies, two knife-edge wheels rolling on flat ground.

Bodies and parameters as in Meijaard, Papadopoulos, Ruina & Schwab, "Linearized dynamics equations
for the balance and steer of a bicycle: a benchmark and review", Proc. R. Soc. A 463 (2007) 1955,
§2 and Table 1 (the benchmark values are the defaults): the rear wheel R (radius r_R, mass m_R,
moments I_Rxx = I_Rzz, I_Ryy), the rear frame with rider B (mass centre (x_B, z_B), inertia tensor
with I_Bxz), the front handlebar and fork H ((x_H, z_H), I_Hxz), the front wheel F (r_F, m_F, I_Fxx,
I_Fyy); wheelbase w, trail c, steer-axis tilt λ (rad, from the vertical), gravity g. All positions
and inertia tensors are given, as in the paper, in Meijaard's axes in the reference configuration
(upright, straight ahead, rear contact at the origin): x forward, y to the right, z down.

Coordinates q (n = 8), in Meijaard's axes and sign conventions:

    x, y        the rear contact point P on the ground (m)
    yaw ψ       heading, about the downward z axis (rad; positive turns right)
    roll φ      lean, about the rear frame's forward axis (rad; positive leans right)
    pitch θ     rear frame pitch about its lateral axis (rad; right-handed about y: positive lifts
                the front); 0 in the reference configuration, fixed by the front contact
    steer δ     front frame relative to the rear frame about the steer axis, right-handed about
                the downward steer axis (rad; positive steers right)
    rear_wheel  rear wheel angle relative to the rear frame, about its axle (rad; forward
                rolling makes it decrease, Meijaard's θ̇_R = −v/r_R)
    front_wheel front wheel angle relative to the fork, about its axle (rad; θ̇_F ≈ −v/r_F)

Kinematics (R_a(α): rotation by α about axis a; s = (sin λ, 0, cos λ) the steer axis, pointing down):

    R_B = R_z(ψ) R_x(φ) R_y(θ),  R_H = R_B R_y(λ) R_z(δ) R_y(−λ),  R_R = R_B R_y(θ_R),  R_F = R_H R_y(θ_F),
    rear hub  C_R = P − r_R R_z(ψ) R_x(φ) e_z,
    a rear-frame point with reference position r:   C_R + R_B (r − (0, 0, −r_R)),
    the steer axis' ground point S (reference (w + c, 0, 0)) moves with the frame;
    a front-frame point with reference position r:  S + R_H (r − (w + c, 0, 0)),
    front hub C_F (reference (w, 0, −r_F)); front contact (the rim's lowest point, axle a = R_H e_y)
    Q = C_F + r_F d/|d|, d = e_z − (e_z·a) a.

Lagrangian L = T − V with T = Σ_bodies ½ m |ċ|² + ½ Ωᵀ I Ω (c the mass centre, Ω the body angular
velocity, Ω^ = Rᵀ Ṙ, I the tensor in the reference axes) and V = −g Σ m c_z (z down). The metric
G(q) is assembled from the Jacobians of the mass centres and of the angular velocities, written in
closed form (:func:`velocity_jacobians`, :func:`angular_velocity_jacobians`; the tests check them
against forward-mode autodiff of the positions and rotation matrices), G = Σ m J_cᵀ J_c + J_Ωᵀ I J_Ω
(Ω = Rᵀω the body angular velocity): the library differentiates G and μ again, so an inner
autodiff would nest one level deeper. Constraints:

    φ(q) = Q_z = 0                          (the front contact on the ground; fixes the pitch, k = 1)
    μ(q) v = 0: the horizontal velocity of each wheel's material contact point,
                ċ_W + ω_W × (contact − c_W), x and y components (m = 4)

(the vertical component at the front is Φ v, the derivative of φ; the rear contact's height is
zero by construction). So the system is a ``dalembert.NonholonomicSystem`` with n = 8, k = 1,
m = 4 and 3 degrees of freedom in velocity (roll, steer and forward speed). The equations, their
linearisation about upright straight running (Meijaard et al. 2007 eqs (A20)–(A24)) and the
nonlinear benchmark state of Basu-Mandal, Chatterjee & Papadopoulos (Proc. R. Soc. A 463 (2007)
1983, Table 1) are checked by the experiment ``meijaard2007`` (``dalembert reproduce``).

Initial states: :func:`upright_state` (upright forward motion at a given rear-hub speed with a roll
rate and a steer, as the IFToMM uncontrolled-bicycle manoeuvres start). The default data: 4.6 m/s,
roll rate 0.5 rad/s (the IFToMM manoeuvre M2). The default method is the winner of the IFToMM
energy benchmark among dalembert's methods (experiment ``iftomm-bicycle``, docs/benchmarks.md):
``gonzalez-f`` with ``node_projection=True`` (energy, φ and the rolling constraints at round-off at
every node, at every h tried up to 0.2), ``jacobian_reuse=6`` and ``newton_estimate=True`` (the
Newton matrix kept across steps and the estimated-error test: the same roots, 2× less CPU). The two-step ``nh-rattle`` is unstable on a bicycle (its parasitic mode
grows at the castering mode's rate); the symplectic one-step ``nh-rattle-sym`` runs it too.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..systems import NonholonomicSystem
from .base import Model, ModelSpec, Parameter, positive, register

SOURCE = ("Meijaard, Papadopoulos, Ruina & Schwab, Proc. R. Soc. A 463 (2007) 1955, §2, Table 1 (model and "
          "benchmark parameters); Basu-Mandal, Chatterjee & Papadopoulos, Proc. R. Soc. A 463 (2007) 1983 "
          "(the nonlinear equations' benchmark)")

COORDINATES = ("x", "y", "yaw", "roll", "pitch", "steer", "rear_wheel", "front_wheel")
UNITS = ("m", "m", "rad", "rad", "rad", "rad", "rad", "rad")
X, Y, YAW, ROLL, PITCH, STEER, REAR, FRONT = range(8)
#: the coordinates kept by project="dependent" (all but the pitch) and the speeds (roll, steer, rear wheel)
INDEPENDENT_COORDINATES = (X, Y, YAW, ROLL, STEER, REAR, FRONT)
INDEPENDENT_SPEEDS = (ROLL, STEER, REAR)

#: Meijaard et al. 2007, Table 1 (SI units; λ = π/10 rad)
BENCHMARK = {
    "w": 1.02, "c": 0.08, "lam": np.pi / 10.0, "g": 9.81,
    "rR": 0.3, "mR": 2.0, "IRxx": 0.0603, "IRyy": 0.12,
    "xB": 0.3, "zB": -0.9, "mB": 85.0, "IBxx": 9.2, "IByy": 11.0, "IBzz": 2.8, "IBxz": 2.4,
    "xH": 0.9, "zH": -0.7, "mH": 4.0, "IHxx": 0.05892, "IHyy": 0.06, "IHzz": 0.00708, "IHxz": -0.00756,
    "rF": 0.35, "mF": 3.0, "IFxx": 0.1405, "IFyy": 0.28,
}


def _rx(a):
    c, s, z, o = jnp.cos(a), jnp.sin(a), 0.0 * a, 1.0 + 0.0 * a
    return jnp.stack([jnp.stack([o, z, z]), jnp.stack([z, c, -s]), jnp.stack([z, s, c])])


def _ry(a):
    c, s, z, o = jnp.cos(a), jnp.sin(a), 0.0 * a, 1.0 + 0.0 * a
    return jnp.stack([jnp.stack([c, z, s]), jnp.stack([z, o, z]), jnp.stack([-s, z, c])])


def _rz(a):
    c, s, z, o = jnp.cos(a), jnp.sin(a), 0.0 * a, 1.0 + 0.0 * a
    return jnp.stack([jnp.stack([c, -s, z]), jnp.stack([s, c, z]), jnp.stack([z, z, o])])


def _skew(r):
    z = 0.0 * r[0]
    return jnp.stack([jnp.stack([z, -r[2], r[1]]), jnp.stack([r[2], z, -r[0]]), jnp.stack([-r[1], r[0], z])])


def kinematics(p, q):
    """Positions and orientations of the four bodies at q (8,), parameters p (module doc).

    Returns a dict of arrays (m, Meijaard's axes): "P" rear contact (3,), "C_R", "C_F" hubs, "B", "H"
    the frame's and fork's mass centres, "Q" the front contact, "S" the steer axis' point, "n" the
    rear wheel plane's downward unit vector R_z(ψ) R_x(φ) e_z (3,), and the rotation matrices (3, 3)
    "R_B", "R_H", "R_R", "R_F" (body to space).
    """
    x, y, psi, phi, theta, delta, thR, thF = (q[i] for i in range(8))
    lam, w, c, rR, rF = p["lam"], p["w"], p["c"], p["rR"], p["rF"]
    YL = _rz(psi) @ _rx(phi)                        # yaw and roll: the rear wheel plane
    R_B = YL @ _ry(theta)
    R_H = R_B @ _ry(lam + 0.0 * q[0]) @ _rz(delta) @ _ry(-lam + 0.0 * q[0])
    P = jnp.stack([x, y, 0.0 * x])
    C_R = P - rR * YL[:, 2]
    hub_R = jnp.stack([0.0, 0.0, -rR])

    def frame(r):
        return C_R + R_B @ (r - hub_R)
    S_ref = jnp.stack([w + c, 0.0, 0.0])
    S = frame(S_ref)

    def fork(r):
        return S + R_H @ (r - S_ref)
    C_F = fork(jnp.stack([w, 0.0, -rF]))
    a = R_H[:, 1]
    d = jnp.array([0.0, 0.0, 1.0]) - a[2] * a
    Q = C_F + rF * d / jnp.sqrt(jnp.sum(d * d))
    return {"P": P, "C_R": C_R, "C_F": C_F, "Q": Q, "S": S, "n": YL[:, 2],
            "B": frame(jnp.stack([p["xB"], 0.0, p["zB"]])), "H": fork(jnp.stack([p["xH"], 0.0, p["zH"]])),
            "R_B": R_B, "R_H": R_H, "R_R": R_B @ _ry(thR), "R_F": R_H @ _ry(thF)}


def _inertias(p):
    """{body: (mass, mass-centre key, rotation key, inertia tensor (3, 3) in the reference axes)};
    the wheels' tensors are axisymmetric about their axles, so the frame's and the fork's rotations
    (R_B, R_H) carry them."""
    def tensor(xx, yy, zz, xz):
        z = 0.0 * xx
        return jnp.stack([jnp.stack([xx, z, xz]), jnp.stack([z, yy + z, z]), jnp.stack([xz, z, zz])])
    return {"rear wheel": (p["mR"], "C_R", "R_B", tensor(p["IRxx"], p["IRyy"], p["IRxx"], 0.0 * p["IRxx"])),
            "rear frame": (p["mB"], "B", "R_B", tensor(p["IBxx"], p["IByy"], p["IBzz"], p["IBxz"])),
            "fork": (p["mH"], "H", "R_H", tensor(p["IHxx"], p["IHyy"], p["IHzz"], p["IHxz"])),
            "front wheel": (p["mF"], "C_F", "R_H", tensor(p["IFxx"], p["IFyy"], p["IFxx"], 0.0 * p["IFxx"]))}


_CENTRES = ("C_R", "B", "H", "C_F")


def angular_velocity_jacobians(p, q, k=None):
    """{body: J_ω (3, 8)}: the space-frame angular velocity ω = J_ω(q) q̇ of each body, in closed
    form: ω_B = ψ̇ e_z + φ̇ R_z(ψ) e_x + θ̇ R_B e_y (rear frame), ω_H = ω_B + δ̇ R_B s (fork; s the steer
    axis), ω_R = ω_B + θ̇_R R_B e_y, ω_F = ω_H + θ̇_F R_H e_y (wheels). ``k``: the kinematics at q if
    already computed."""
    k = kinematics(p, q) if k is None else k
    R_B, R_H = k["R_B"], k["R_H"]
    z = jnp.zeros(3)
    e_z = jnp.array([0.0, 0.0, 1.0])
    a1 = jnp.stack([jnp.cos(q[YAW]), jnp.sin(q[YAW]), 0.0 * q[YAW]])
    s = R_B @ jnp.stack([jnp.sin(p["lam"]), 0.0 * p["lam"], jnp.cos(p["lam"])])
    frame = [z, z, e_z, a1, R_B[:, 1], z, z, z]
    fork = frame[:STEER] + [s, z, z]
    cols = {"rear frame": frame, "fork": fork, "rear wheel": frame[:REAR] + [R_B[:, 1], z],
            "front wheel": fork[:FRONT] + [R_H[:, 1]]}
    return {b: jnp.stack(c, axis=1) for b, c in cols.items()}


def velocity_jacobians(p, q, k=None, Jw=None):
    """{point: J (3, 8)}: the velocity ṗ = J(q) q̇ of the mass centres "C_R", "B", "H", "C_F" (and of
    the steer axis' point "S"), in closed form: the rear hub C_R = P − r_R n moves with
    ṅ = (ψ̇ e_z + φ̇ R_z(ψ) e_x) × n; a point p of a body moves with its body point o as ȯ + ω × (p − o)
    (frame: o = C_R; fork: o = S). ``k``, ``Jw``: kinematics and angular-velocity Jacobians at q if
    already computed."""
    k = kinematics(p, q) if k is None else k
    Jw = angular_velocity_jacobians(p, q, k) if Jw is None else Jw
    n = k["n"]
    z = jnp.zeros(3)
    a1 = jnp.stack([jnp.cos(q[YAW]), jnp.sin(q[YAW]), 0.0 * q[YAW]])
    cols = [jnp.array([1.0, 0.0, 0.0]), jnp.array([0.0, 1.0, 0.0]),
            -p["rR"] * jnp.cross(jnp.array([0.0, 0.0, 1.0]), n), -p["rR"] * jnp.cross(a1, n), z, z, z, z]
    J = {"C_R": jnp.stack(cols, axis=1)}
    J["B"] = J["C_R"] - _skew(k["B"] - k["C_R"]) @ Jw["rear frame"]
    J["S"] = J["C_R"] - _skew(k["S"] - k["C_R"]) @ Jw["rear frame"]
    J["H"] = J["S"] - _skew(k["H"] - k["S"]) @ Jw["fork"]
    J["C_F"] = J["S"] - _skew(k["C_F"] - k["S"]) @ Jw["fork"]
    return J


def _system(p) -> NonholonomicSystem:
    """The bicycle from parameters p (the names of :data:`BENCHMARK`; traceable in them)."""
    bodies = _inertias(p)

    def jacobians(q):
        k = kinematics(p, q)
        Jw = angular_velocity_jacobians(p, q, k)
        return k, velocity_jacobians(p, q, k, Jw), Jw

    def mass_matrix(q):
        k, Jc, Jw = jacobians(q)
        G = 0.0
        for name, (m, c, R, I) in bodies.items():
            JO = k[R].T @ Jw[name]                             # body-frame angular velocity
            G = G + m * Jc[c].T @ Jc[c] + JO.T @ I @ JO
        return 0.5 * (G + G.T)

    def potential(q):
        masses = jnp.stack([p["mR"], p["mB"], p["mH"], p["mF"]])         # in the order of _CENTRES
        k = kinematics(p, q)
        return -p["g"] * jnp.sum(masses * jnp.stack([k[c][2] for c in _CENTRES]))

    def contact_velocities(q):
        """(3, 8) each: the velocity of each wheel's material point at its contact, ċ_W + ω_W × (contact − c_W)."""
        k, Jc, Jw = jacobians(q)
        return [Jc[hub] - _skew(k[contact] - k[hub]) @ Jw[wheel]
                for hub, wheel, contact in (("C_R", "rear wheel", "P"), ("C_F", "front wheel", "Q"))]

    def constraint_matrix(q):
        rear, front = contact_velocities(q)
        return jnp.concatenate([rear[:2], front[:2]])

    def front_contact_height(q):
        return kinematics(p, q)["Q"][2:3]

    def front_contact_height_jacobian(q):
        # the contact point slides along the rim's tangent at its lowest point, which is horizontal:
        # dQ_z/dt is the vertical velocity of the wheel's material point there
        return contact_velocities(q)[1][2:3]

    return NonholonomicSystem(mass_matrix=mass_matrix, potential=potential, constraint_matrix=constraint_matrix,
                              holonomic_constraints=front_contact_height,
                              holonomic_jacobian=front_contact_height_jacobian,
                              independent_coordinates=INDEPENDENT_COORDINATES, independent_speeds=INDEPENDENT_SPEEDS,
                              coordinate_names=COORDINATES, units=UNITS, name="whipple-bicycle")


def pitch_on_ground(system, q, iterations: int = 30):
    """q (8,) with its pitch replaced by the one that puts the front contact on the ground, φ(q) = 0
    (Newton on the pitch from the given one; NumPy in, NumPy out). Raises InputError when it does
    not converge (no contact near the given pitch: the bicycle lies on the ground)."""
    from .._cache import cached
    from ..errors import InputError
    q = np.array(q, dtype=float)
    f = cached(system, "pitch Newton", lambda: jax.jit(
        lambda x: (system.holonomic(x)[0], system.holonomic_jacobian(x)[0, PITCH])))
    for _ in range(iterations):
        r, d = (float(a) for a in f(jnp.asarray(q)))
        if abs(r) <= 1e-15:
            return q
        q[PITCH] -= r / d
    if abs(float(f(jnp.asarray(q))[0])) > 1e-13:
        raise InputError(f"whipple-bicycle: no pitch puts the front wheel on the ground at roll {q[ROLL]:.3g}, "
                         f"steer {q[STEER]:.3g} rad; give a smaller roll or steer")
    return q


def upright_state(speed, roll_rate=0.0, steer=0.0, steer_rate=0.0, *, params=None):
    """(q0, v0) (8,) each: upright (roll 0) forward motion along +x at the rear-hub speed ``speed``
    (m/s, the forward velocity of the rear hub and of the rear contact point), roll rate
    ``roll_rate`` (rad/s), steer angle ``steer`` (rad) and steer rate ``steer_rate`` (rad/s), on the
    constraints: the pitch from φ(q) = 0, the other speeds (lateral, yaw, pitch and wheel rates)
    from (Φ; μ) v = 0. As the IFToMM uncontrolled-bicycle manoeuvres start (e.g. M2: 4.6 m/s,
    0.5 rad/s). ``params``: model parameters other than the benchmark's (dict), as for
    ``dl.models.get("whipple-bicycle", **params)``.
    """
    from .base import get
    return _upright(get("whipple-bicycle", **(params or {})).system, speed, roll_rate, steer, steer_rate)


def _upright(system, speed, roll_rate, steer, steer_rate):
    from .._cache import cached
    q = np.zeros(8)
    q[STEER] = float(steer)
    q = pitch_on_ground(system, q)
    C = np.asarray(cached(system, "constraint matrix", lambda: jax.jit(system.constraint_matrix))(jnp.asarray(q)))
    A = np.vstack([C, np.eye(8)[[ROLL, STEER, X]]])           # (Φ; μ) (5 rows), then the given speeds
    b = np.array([0.0] * C.shape[0] + [float(roll_rate), float(steer_rate), float(speed)])
    return q, np.linalg.solve(A, b)                           # (yaw 0: ẋ is the forward velocity)


def lateral_matrix(system, speed):
    """The 4 × 4 matrix A of the linearised lateral motion ż = A z, z = (roll, steer, roll rate,
    steer rate), about upright straight running at the rear-hub speed ``speed`` (m/s): by
    forward-mode autodiff of the system's index-1 equations (``system.acceleration``) along a
    map z -> (q, v) onto the constraints, exact to first order (the pitch along the tangent of
    φ = 0; the other speeds from the constraints at constant forward speed). At first order the
    forward speed and the ignorable coordinates (x, y, yaw, wheel angles) decouple, so A is the matrix of
    Meijaard et al. 2007 eqs (A20)–(A24): [[0, 1], [−M⁻¹(g K0 + v² K2), −M⁻¹ v C1]]. Compiled once
    per system (the speed is an argument)."""
    from .._cache import cached
    return np.asarray(cached(system, "lateral matrix", lambda: jax.jit(jax.jacfwd(
        lambda z, v: _lateral_field(system, z, v))))(jnp.zeros(4), jnp.asarray(speed, jnp.float64)))


def _lateral_field(system, z, speed):
    """ż of the reduced lateral state z = (roll, steer, roll rate, steer rate) (:func:`lateral_matrix`),
    exact to first order about z = 0 (all its Jacobian needs): the configuration moves along the
    tangent of φ = 0 (the pitch by Φ dq = 0, Φ at the upright configuration), the speeds solve the
    constraints at constant forward speed."""
    q0 = jnp.zeros(8)
    Phi = system.holonomic_jacobian(q0)[0]
    q = q0.at[ROLL].set(z[0]).at[STEER].set(z[1]).at[PITCH].set(-(Phi[ROLL] * z[0] + Phi[STEER] * z[1]) / Phi[PITCH])
    C = system.constraint_matrix(q)
    rows = jnp.concatenate([C, jnp.eye(8)[jnp.array([ROLL, STEER])], jnp.eye(8)[X][None]])
    v = jnp.linalg.solve(rows, jnp.concatenate([jnp.zeros(C.shape[0]), z[2:], jnp.stack([speed])]))
    a = system.acceleration(q, v)
    return jnp.concatenate([z[2:], jnp.stack([a[ROLL], a[STEER]])])


def _build(p):
    system = _system(p)
    q0, v0 = _upright(system, 4.6, 0.5, 0.0, 0.0)
    return Model("whipple-bicycle", p, system, q0, v0, COORDINATES, SOURCE, path=(X, Y),
                 invariants={"energy": system.energy}, default_method="gonzalez-f",
                 default_options={"node_projection": True, "jacobian_reuse": 6, "newton_estimate": True},
                 default_h=2e-3,
                 default_t_final=2.0, convergence_methods=("nh-rattle-sym", "nh-rattle-4"),
                 notes="The Whipple–Carvallo bicycle with Meijaard et al.'s (2007) benchmark parameters; default "
                       "data the IFToMM manoeuvre M2 (4.6 m/s, roll rate 0.5 rad/s). Coordinates in Meijaard's "
                       "axes (x forward, y right, z down). Default method gonzalez-f with node_projection=True "
                       "and the Newton matrix kept across steps (jacobian_reuse=6, newton_estimate=True) (the winner of the IFToMM energy benchmark: energy and constraints at round-off).")


def _param(name, doc, unit, check=positive):
    return Parameter(name, float(BENCHMARK[name]), doc, unit, check)


register(ModelSpec(
    "whipple-bicycle", "Whipple–Carvallo bicycle (Meijaard et al. 2007 benchmark)",
    (_param("w", "wheelbase", "m"), _param("c", "trail", "m"),
     _param("lam", "steer-axis tilt from the vertical", "rad", lambda x: None if 0 <= x < np.pi / 2 else "must be in [0, π/2)"),
     _param("g", "gravitational acceleration", "m/s²"),
     _param("rR", "rear wheel radius", "m"), _param("mR", "rear wheel mass", "kg"),
     _param("IRxx", "rear wheel moment about a diameter", "kg m²"),
     _param("IRyy", "rear wheel moment about the axle", "kg m²"),
     _param("xB", "rear frame mass centre, x (forward) in the reference configuration", "m", None),
     _param("zB", "rear frame mass centre, z (down; negative above the ground)", "m", None),
     _param("mB", "rear frame (with rider) mass", "kg"),
     _param("IBxx", "rear frame inertia I_xx (reference axes, about its mass centre)", "kg m²"),
     _param("IByy", "rear frame inertia I_yy", "kg m²"), _param("IBzz", "rear frame inertia I_zz", "kg m²"),
     _param("IBxz", "rear frame product of inertia I_xz", "kg m²", None),
     _param("xH", "front fork mass centre, x", "m", None), _param("zH", "front fork mass centre, z (down)", "m", None),
     _param("mH", "front fork and handlebar mass", "kg"),
     _param("IHxx", "front fork inertia I_xx", "kg m²"), _param("IHyy", "front fork inertia I_yy", "kg m²"),
     _param("IHzz", "front fork inertia I_zz", "kg m²"),
     _param("IHxz", "front fork product of inertia I_xz", "kg m²", None),
     _param("rF", "front wheel radius", "m"), _param("mF", "front wheel mass", "kg"),
     _param("IFxx", "front wheel moment about a diameter", "kg m²"),
     _param("IFyy", "front wheel moment about the axle", "kg m²")),
    _build, SOURCE, "The benchmark bicycle (rear contact, yaw, roll, pitch, steer, wheel angles; the pitch held by "
    "the front contact's height, the rolling of both wheels as 4 velocity constraints).",
    system=_system))
