"""PyDy's rattleback example imported through ``dl.from_sympy``, and a comparison of two models of
one system at random configurations.

The model is the construction of PyDy's documentation example ``docs/examples/rattleback.rst``
(github.com/pydy/pydy, BSD licence): Kane & Levinson's rattleback (Int. J. Non-Linear Mech. 17
(1982) 175) — an ellipsoid with semi-axes a, b, c, its mass centre a distance h below the
geometric centre, inertia (A, B, C) with the product D, rolling without slip on the plane z = 0;
body-fixed XYZ angles q1, q2, q3 with body rates u1, u2, u3; a gravity load on the mass centre
and the friction torque −σ ω on the body. Changed for the import (the dynamics are PyDy's):

- PyDy's contact point S has coordinates x1, x2, x3 in the body that its integration loop fills in
  numerically (other dynamicsymbols); here they are the closed form of the contact point that
  PyDy's loop evaluates (Kane & Levinson (1982): x = (a² n1, b² n2, c² n3)/ε with n = N.z in the
  body's axes and ε = −√(a²n1² + b²n2² + c²n3²));
- PyDy places the geometric centre at (xe, ye, ze) from a fixed point (more dynamicsymbols that
  its equations never use) and sets v_Ro = ω × r(Ro from S): here the centre is located from S,
  S is declared at rest (S.set_vel(N, 0)) and Ro.v2pt_theory(S, N, R) — the same velocity.
  ``dl.from_sympy`` then completes the built-in rolling: it adds S's ground coordinates (S_x, S_y),
  takes the velocities from the positions and adds the two slip components as constraints.

Run ``python tests/data/pydy_rattleback.py``: the imported model's index-1 accelerations against
PyDy's own Kane equations (mass_matrix and forcing, with the same contact point) at random states.
"""
from __future__ import annotations

import numpy as np

#: PyDy's example values (Kane & Levinson 1982): m (kg), g (m/s²), a, b, c, h (m), A, B, C, D
#: (kg·m²), the friction coefficient σ (N·m·s).
VALUES = {"m": 1.0, "g": 9.81, "a": 0.2, "b": 0.03, "c": 0.02, "h": 0.01, "A": 2.0e-4, "B": 1.6e-3,
          "C": 1.7e-3, "D": -2.0e-5, "friktion": 1.0e-4}


def pydy_rattleback(friction: bool = True):
    """PyDy's rattleback as a KanesMethod whose ``kanes_equations(bodies, forces)`` were formed.
    Returns (kane, values {name: number}, symbols {"q": [q1, q2, q3], "u": [...], "frames": (N, R),
    "points": (S, Ro)}); ``friction=False`` drops the friction torque."""
    import sympy as sm
    import sympy.physics.mechanics as me

    N, R = sm.symbols("N, R", cls=me.ReferenceFrame)
    S, Ro, Oe = sm.symbols("S, Ro, Oe", cls=me.Point)
    q1, q2, q3, u1, u2, u3 = me.dynamicsymbols("q1, q2, q3, u1, u2, u3")
    h, g, m, A, B, C, D = sm.symbols("h, g, m, A, B, C, D")
    a, b, c = sm.symbols("a, b, c")
    friktion = sm.symbols("friktion")

    R.orient_body_fixed(N, (q1, q2, q3), "XYZ")
    rot = R.ang_vel_in(N)
    R.set_ang_vel(N, u1 * R.x + u2 * R.y + u3 * R.z)
    rot1 = R.ang_vel_in(N)
    # the contact point in the body (PyDy's x11, x21, x31, evaluated by its loop)
    epsilon = -sm.sqrt((a * N.z.dot(R.x)) ** 2 + (b * N.z.dot(R.y)) ** 2 + (c * N.z.dot(R.z)) ** 2)
    contact = a ** 2 * N.z.dot(R.x) / epsilon * R.x + b ** 2 * N.z.dot(R.y) / epsilon * R.y \
        + c ** 2 * N.z.dot(R.z) / epsilon * R.z
    S.set_vel(N, 0)                                     # no slip: S at rest in N momentarily
    Oe.set_pos(S, -contact)                             # the geometric centre
    Ro.set_pos(Oe, -h * R.z)                            # the mass centre
    Ro.v2pt_theory(S, N, R)                             # PyDy: Ro.set_vel(N, ω × Ro.pos_from(S))
    inert = me.inertia(R, A, B, C, D, 0, 0)
    rattleback = me.RigidBody("Rattleback", Ro, R, m, (inert, Ro))
    forces = [(Ro, -m * g * N.z)]
    if friction:
        forces.append((R, -friktion * R.ang_vel_in(N)))
    kd = sm.Matrix([(rot - rot1).dot(uv) for uv in N])
    kane = me.KanesMethod(N, [q1, q2, q3], [u1, u2, u3], kd_eqs=kd)
    kane.kanes_equations([rattleback], forces)
    return kane, dict(VALUES), {"q": [q1, q2, q3], "u": [u1, u2, u3], "frames": (N, R), "points": (S, Ro)}


def import_rattleback(friction: bool = True, **values):
    """``dl.from_sympy`` of :func:`pydy_rattleback` (values overridable by name): n = 5
    coordinates (q1, q2, q3, S_x, S_y), m = 2 rolling constraints, the gravity load as the
    potential, the friction torque as the force."""
    import dalembert as dl

    kane, vals, _ = pydy_rattleback(friction)
    vals.update(values)
    return dl.from_sympy(kane, values=vals, name="pydy-rattleback")


def kane_accelerations(kane, values, syms):
    """(q (3,), u (3,), t) -> u̇ (3,) from PyDy's Kane equations (mass_matrix u̇ = forcing),
    evaluated numerically: the independent reference of the import."""
    import sympy as sm

    subs = {s: values[s.name] for s in kane.mass_matrix.free_symbols | kane.forcing.free_symbols
            if s.name in values}
    args = [syms["q"], syms["u"]]
    M = sm.lambdify(args, kane.mass_matrix.xreplace(subs), "numpy", cse=True)
    F = sm.lambdify(args, kane.forcing.xreplace(subs), "numpy", cse=True)
    return lambda q, u: np.linalg.solve(M(q, u), np.asarray(F(q, u), float).ravel())


def body_rates(q, qdot):
    """The body rates u (3,) of body-fixed XYZ angles q (3,) and their rates q̇ (3,) (PyDy's kd);
    JAX-traceable."""
    import jax.numpy as jnp

    c2, s2, c3, s3 = jnp.cos(q[1]), jnp.sin(q[1]), jnp.cos(q[2]), jnp.sin(q[2])
    return jnp.stack([c2 * c3 * qdot[0] + s3 * qdot[1],
                      -c2 * s3 * qdot[0] + c3 * qdot[1],
                      s2 * qdot[0] + qdot[2]])


def compare_models(a, b, coordinate_map, configurations):
    """How far two NonholonomicSystems are one model, at the given configurations of ``a``.

    ``coordinate_map`` (JAX-traceable) takes a's q (n_a,) to b's q (n_b,); its Jacobian J (by
    autodiff) pulls b back. Returns the maxima over the configurations of: "metric" |G_a − Jᵀ G_b J|
    relative to |G_a|; "potential" the spread of V_a − V_b∘map (J; a constant offset is allowed);
    "constraints" the largest principal-angle sine between the row spaces of μ_a and μ_b J (0 when
    the constraints are the same up to combinations of rows); "gradient" |∇V_a − Jᵀ∇V_b| relative
    to |∇V_a|. Each is ≈ 1e-15 for one model written twice."""
    import jax
    import jax.numpy as jnp

    out = {"metric": 0.0, "potential": 0.0, "constraints": 0.0, "gradient": 0.0}
    offsets = []
    for q in configurations:
        q = jnp.asarray(q, jnp.float64)
        qb = coordinate_map(q)
        J = jax.jacfwd(coordinate_map)(q)
        Ga, Gb = np.asarray(a.mass_matrix(q)), np.asarray(J.T @ b.mass_matrix(qb) @ J)
        out["metric"] = max(out["metric"], float(np.max(np.abs(Ga - Gb)) / np.max(np.abs(Ga))))
        offsets.append(float(a.potential(q)) - float(b.potential(qb)))
        ga = np.asarray(jax.grad(a.potential)(q))
        gb = np.asarray(J.T @ jax.grad(b.potential)(qb))
        out["gradient"] = max(out["gradient"], float(np.max(np.abs(ga - gb)) / max(1e-300, np.max(np.abs(ga)))))
        Ma, Mb = np.asarray(a.constraint_matrix(q)), np.asarray(b.constraint_matrix(qb) @ J)
        Qa, Qb = np.linalg.qr(Ma.T)[0], np.linalg.qr(Mb.T)[0]
        if Qa.shape != Qb.shape:
            out["constraints"] = 1.0
        else:
            # sine of the largest principal angle, |(I − Qa Qaᵀ) Qb|₂ (accurate for small angles)
            sine = np.linalg.norm(Qb - Qa @ (Qa.T @ Qb), 2)
            out["constraints"] = max(out["constraints"], float(sine))
    out["potential"] = float(np.ptp(offsets))
    return out


def main():
    import time

    import jax
    import jax.numpy as jnp

    import dalembert as dl

    t0 = time.perf_counter()
    kane, values, syms = pydy_rattleback()
    t1 = time.perf_counter()
    system = dl.from_sympy(kane, values=values, name="pydy-rattleback")
    t2 = time.perf_counter()
    print(f"PyDy model {t1 - t0:.2f} s, dl.from_sympy {t2 - t1:.2f} s; coordinates {system.coordinate_names}")
    reference = kane_accelerations(kane, values, syms)

    def acceleration(q, v):
        return system.acceleration(q, v)
    acc = jax.jit(acceleration)
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(20):
        q = np.concatenate([rng.uniform(-0.6, 0.6, 3), rng.uniform(-1, 1, 2)])
        qd = rng.uniform(-3, 3, 3)
        mu = np.asarray(system.constraint_matrix(jnp.asarray(q)))       # (2, 5): solve for Ṡ_x, Ṡ_y
        v = np.concatenate([qd, np.linalg.solve(mu[:, 3:], -mu[:, :3] @ qd)])
        a = np.asarray(acc(jnp.asarray(q), jnp.asarray(v)))
        # u = W(q) q̇, so u̇ = W q̈ + Ẇ q̇: the tangent of body_rates along (q̇, q̈)
        u, udot = jax.jvp(body_rates, (jnp.asarray(q[:3]), jnp.asarray(qd)), (jnp.asarray(v[:3]), jnp.asarray(a[:3])))
        ref = reference(q[:3], np.asarray(u))
        worst = max(worst, float(np.max(np.abs(udot - ref)) / np.max(np.abs(ref))))
    print(f"u̇ of the import against PyDy's Kane equations, 20 random states: max relative difference {worst:.2e}")


if __name__ == "__main__":
    main()
