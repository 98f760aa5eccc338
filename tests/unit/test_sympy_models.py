"""Models from SymPy mechanics (``dl.from_sympy``): the imported rolling disc and Chaplygin sleigh
equal independently written JAX models (the built-in ``tilting-disk`` and ``chaplygin-sleigh``) to
round-off at random configurations; the imported disc integrates with second order against the
reference ODE with its constraints kept; bad models get errors that say what to do."""
from __future__ import annotations

import numpy as np
import pytest

sm = pytest.importorskip("sympy")
me = pytest.importorskip("sympy.physics.mechanics")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import dalembert as dl  # noqa: E402
from dalembert.convergence import fitted_order  # noqa: E402


def rolling_disc(damping=False, gravity_load=False):
    """SymPy's rolling disc (yaw q1, lean q2, spin q3) with its contact point (q4, q5) and the two
    rolling constraints, as a LagrangesMethod; with ``damping`` its forcelist holds the loads of
    disc_kane's damping (a viscous torque, a driving torque A sin(w t), a drag on the centre);
    with ``gravity_load`` gravity is the load −m g N.z on the centre instead of the disc's
    potential energy in L."""
    q1, q2, q3, q4, q5 = me.dynamicsymbols("q1:6")
    t = me.dynamicsymbols._t
    r, m, g = sm.symbols("r m g", positive=True)
    N = me.ReferenceFrame("N")
    Y = N.orientnew("Y", "Axis", [q1, N.z])
    L = Y.orientnew("L", "Axis", [q2, Y.x])
    R = L.orientnew("R", "Axis", [q3, L.y])
    O = me.Point("O")
    O.set_vel(N, 0)
    D = O.locatenew("D", q4 * N.x + q5 * N.y + r * L.z)
    D.set_vel(N, D.pos_from(O).dt(N))
    disc = me.RigidBody("disc", D, R, m, (me.inertia(L, m / 4 * r ** 2, m / 2 * r ** 2, m / 4 * r ** 2), D))
    disc.potential_energy = 0 if gravity_load else m * g * r * sm.cos(q2)
    slip = D.vel(N) + R.ang_vel_in(N).cross(-r * L.z)
    loads = [me.Force(disc, -m * g * N.z)] if gravity_load else []
    if damping:
        c, b, A, w = sm.symbols("c b A w", positive=True)
        loads += [me.Torque(R, -c * R.ang_vel_in(N)), (R, A * sm.sin(w * t) * L.y), (D, -b * (D.vel(N) & N.x) * N.x)]
    lm = me.LagrangesMethod(me.Lagrangian(N, disc), [q1, q2, q3, q4, q5], forcelist=loads or None,
                            nonhol_coneqs=[slip.dot(N.x), slip.dot(N.y)], frame=N)
    return lm, {r: 0.5, m: 1.0, g: 9.81}


def sleigh_kane(m=1.0, a=1.0, J=8.0):
    """The Chaplygin sleigh with Kane's generalised speeds u ≠ q̇ (u1, u2 the velocity along and
    across the blade, u3 the heading rate) and the no-slip constraint u2 = 0, as a System."""
    x, y, th = me.dynamicsymbols("x y theta")
    u1, u2, u3 = me.dynamicsymbols("u1:4")
    t = me.dynamicsymbols._t
    N = me.ReferenceFrame("N")
    B = N.orientnew("B", "Axis", [th, N.z])
    O = me.Point("O")
    O.set_vel(N, 0)
    P = O.locatenew("P", x * N.x + y * N.y)                  # the blade
    P.set_vel(N, u1 * B.x + u2 * B.y)
    B.set_ang_vel(N, u3 * N.z)
    Gc = P.locatenew("G", a * B.x)
    Gc.v2pt_theory(P, N, B)
    body = me.RigidBody("sleigh", Gc, B, m, (me.inertia(B, 0, 0, J), Gc))
    system = me.System(N, O)
    system.add_coordinates(x, y, th)
    system.add_speeds(u1, u2, u3)
    kdes = [(x.diff(t) * sm.cos(th) + y.diff(t) * sm.sin(th)) - u1,
            (-x.diff(t) * sm.sin(th) + y.diff(t) * sm.cos(th)) - u2, th.diff(t) - u3]
    system.add_kdes(*kdes)
    system.add_bodies(body)
    system.add_nonholonomic_constraints(u2)
    return system


RNG = np.random.default_rng(7)


def test_imported_rolling_disc_equals_the_builtin_tilting_disk():
    lm, values = rolling_disc()
    s = dl.from_sympy(lm, values=values, name="sympy-disc")
    builtin = dl.models.get("tilting-disk").system
    for _ in range(5):
        q = jnp.asarray(RNG.uniform(-1.2, 1.2, 5))
        for f in ("mass_matrix", "constraint_matrix", "potential"):
            a, b = np.asarray(getattr(s, f)(q)), np.asarray(getattr(builtin, f)(q))
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-13 * max(1.0, np.max(np.abs(b))))
    assert not s.is_affine


@pytest.mark.parametrize("method", ["nh-rattle", "gni-midpoint", pytest.param("dg-gonzalez", marks=pytest.mark.full)])
def test_imported_rolling_disc_converges_with_order_two(method):
    """Against the reference ODE (DOP853) at t = 1: fitted order 2 ± 0.15, constraint ≤ 1e-12 at
    every node; the discrete gradient (through the automatic almost-Poisson reduction) keeps the
    energy to round-off."""
    lm, values = rolling_disc()
    s = dl.from_sympy(lm, values=values)
    model = dl.models.get("tilting-disk")
    T, hs = 1.0, (0.02, 0.01, 0.005)
    ref = s.reference_solution(model.q0, model.v0, t=np.array([0.0, T]))["q"][-1]
    errs, worst_c = [], 0.0
    for h in hs:
        tr = dl.integrate(s, method, q0=model.q0, v0=model.v0, h=h, t_final=T, progress=False)
        errs.append(float(np.max(np.abs(tr.q[-1] - ref))))
        worst_c = max(worst_c, float(np.max(np.abs(tr.constraint_residual))))
    assert abs(fitted_order(np.array(hs), errs) - 2.0) <= 0.15
    assert worst_c <= 1e-12
    if method.startswith("dg-"):
        e = np.asarray(tr.energy)
        assert np.max(np.abs(e - e[0])) <= 1e-12 * abs(e[0])


def test_sleigh_from_kane_speeds_equals_the_builtin_sleigh():
    """u ≠ q̇: the kinematic differential equations rewrite T and the constraint through q̇."""
    s = dl.from_sympy(sleigh_kane(m=1.0, a=1.0, J=8.0))
    builtin = dl.models.get("chaplygin-sleigh", m=1.0, a=1.0, J=8.0).system
    for _ in range(5):
        q = jnp.asarray(RNG.uniform(-3, 3, 3))
        np.testing.assert_allclose(np.asarray(s.mass_matrix(q)), np.asarray(builtin.mass_matrix(q)),
                                   rtol=0, atol=1e-13)
        mu_s, mu_b = np.asarray(s.constraint_matrix(q)), np.asarray(builtin.constraint_matrix(q))
        np.testing.assert_allclose(mu_s, mu_b * np.sign(mu_s[0, 1] * mu_b[0, 1]), rtol=0, atol=1e-14)
        assert float(s.potential(q)) == 0.0


def test_lagrangian_expression_with_an_affine_constraint():
    """A particle in a plane whose velocity along x must equal y (μ = (1, 0), ν = y)."""
    x, y = me.dynamicsymbols("x y")
    t = me.dynamicsymbols._t
    k = sm.Symbol("k")
    L = (x.diff(t) ** 2 + y.diff(t) ** 2) / 2 - k * y ** 2 / 2
    s = dl.from_sympy(lagrangian=L, coordinates=[x, y], constraints=[x.diff(t) - y], values={"k": 2.0})
    q = jnp.array([0.3, -0.7])
    np.testing.assert_allclose(np.asarray(s.constraint_matrix(q)), [[1.0, 0.0]])
    np.testing.assert_allclose(np.asarray(s.constraint_rhs(q)), [-0.7])
    np.testing.assert_allclose(float(s.potential(q)), 0.49)


def _particle():
    x, y, z = me.dynamicsymbols("x y z")
    t = me.dynamicsymbols._t
    return x, y, z, t, sum(c.diff(t) ** 2 for c in (x, y, z)) / 2


@pytest.mark.parametrize("case, match", [
    ("nonlinear", "not linear in the velocities"),
    ("holonomic", "holonomic"),
    ("free", "symbols without values in the Lagrangian: c"),
    ("time", "kinetic energy .* depends on time explicitly"),
    ("time-mu", "constraints' matrix .* depends on time explicitly"),
    ("time-phi", "configuration constraint depends on time explicitly"),
    ("gyroscopic", "linear in q̇"),
    ("not-quadratic", "not mechanical"),
])
def test_bad_models_get_errors_that_say_what_to_do(case, match):
    x, y, z, t, T = _particle()
    L, cons, values = T, [z.diff(t) - y * x.diff(t)], {}
    if case == "nonlinear":
        cons = [x.diff(t) ** 2 + y.diff(t) ** 2 - 1]
    elif case == "holonomic":
        cons = [x ** 2 + y ** 2 - 1]
    elif case == "free":
        L = T - sm.Symbol("c") * z
    elif case == "time":
        L = T * (2 + sm.sin(t))                     # a metric G(t): not V(q, t)
    elif case == "time-mu":
        cons = [z.diff(t) - sm.cos(t) * x.diff(t)]  # μ(t): only ν(q, t) may hold t
    elif case == "time-phi":
        L, cons = T, [z.diff(t) - y * x.diff(t), x - sm.sin(t)]
    elif case == "gyroscopic":
        L = T + y * x.diff(t)
    elif case == "not-quadratic":
        L = T + x.diff(t) ** 4
    with pytest.raises(dl.InputError, match=match):
        if case == "time-phi":
            dl.from_sympy(lagrangian=L, coordinates=[x, y, z], constraints=cons[:1], holonomic_constraints=cons[1:])
        else:
            dl.from_sympy(lagrangian=L, coordinates=[x, y, z], constraints=cons, values=values)


# --- explicit time: V(q, t) and ν(q, t) --------------------------------------------------------

#: the knife edge's mass and inertia, the moving well (stiffness, radius, rate) and the belt's
#: speed law u(t) = U sin(Ω t)
_SKATE = {"m": 1.3, "J": 0.3, "k": 2.0, "A": 0.5, "w": 1.3, "U": 0.7, "W": 2.0}


def skate_with_time(case):
    """A knife edge (skate) on the plane, coordinates (x, y, θ), in one of two time-dependent
    settings written with SymPy: ``"well"`` — a LagrangesMethod with the harmonic well
    V = ½k|r − c(t)|², c(t) = A (cos wt, sin wt), in L (t = dynamicsymbols._t) and the blade's
    constraint −sin θ ẋ + cos θ ẏ = 0; ``"belt"`` — a System (u = q̇) on a belt moving along x at
    u(t) = U sin Wt: the blade does not slip relative to the belt, −sin θ (ẋ − u(t)) + cos θ ẏ = 0
    (ν(q, t) = −sin θ u(t)), in the fixed well ½k|r|² as the body's potential_energy."""
    x, y, th = me.dynamicsymbols("x y theta")
    t = me.dynamicsymbols._t
    m, J, k, A, w, U, W = sm.symbols("m J k A w U W", positive=True)
    N = me.ReferenceFrame("N")
    B = N.orientnew("B", "Axis", [th, N.z])
    O = me.Point("O")
    O.set_vel(N, 0)
    C = O.locatenew("C", x * N.x + y * N.y)
    C.set_vel(N, C.pos_from(O).dt(N))
    body = me.RigidBody("skate", C, B, m, (me.inertia(B, 0, 0, J), C))
    blade = C.vel(N).dot(B.y)
    if case == "well":
        body.potential_energy = k * ((x - A * sm.cos(w * t)) ** 2 + (y - A * sm.sin(w * t)) ** 2) / 2
        return me.LagrangesMethod(me.Lagrangian(N, body), [x, y, th], nonhol_coneqs=[blade], frame=N)
    body.potential_energy = k * (x ** 2 + y ** 2) / 2
    system = me.System(N, O)
    system.add_coordinates(x, y, th)
    system.add_speeds(*[c.diff(t) for c in (x, y, th)])
    system.add_bodies(body)
    system.add_nonholonomic_constraints(blade + sm.sin(th) * U * sm.sin(W * t))
    return system


def skate_by_hand(case):
    """The same knife edge as a NonholonomicSystem written by hand with V(q, t) or ν(q, t)."""
    p = _SKATE
    G = np.diag([p["m"], p["m"], p["J"]])

    def mu(q):
        return jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]])
    if case == "well":
        def well(q, t):
            c = p["A"] * jnp.array([jnp.cos(p["w"] * t), jnp.sin(p["w"] * t)])
            return 0.5 * p["k"] * jnp.sum((q[:2] - c) ** 2)
        return dl.NonholonomicSystem(G, well, mu)
    return dl.NonholonomicSystem(G, lambda q: 0.5 * p["k"] * (q[0] ** 2 + q[1] ** 2), mu,
                                 lambda q, t: jnp.array([-jnp.sin(q[2]) * p["U"] * jnp.sin(p["W"] * t)]))


@pytest.mark.parametrize("case", ["well", "belt"])
def test_explicit_time_in_the_potential_and_the_constraints(case):
    """A moving well V(q, t) (LagrangesMethod) and a belt ν(q, t) (System) are compiled as
    V(q, t) / ν(q, t): the import declares explicit time, and its index-1 accelerations equal the
    hand-written system's at random (q, v, t) to 1e-13 relative (measured 0: the same
    floating-point operations). Negative
    control: at t + 0.5 the accelerations differ by more than 0.05 (the time dependence is real)."""
    s = dl.from_sympy(skate_with_time(case), values=_SKATE)
    hand = skate_by_hand(case)
    assert s.explicit_time and hand.explicit_time
    rng = np.random.default_rng(21)
    worst = 0.0
    for _ in range(4):
        q, v, t = rng.uniform(-1.5, 1.5, 3), rng.uniform(-2, 2, 3), rng.uniform(0, 10)
        a_ref = _dalembert_accelerations(hand, q, v, t)
        worst = max(worst, float(np.max(np.abs(_dalembert_accelerations(s, q, v, t) - a_ref)) / np.max(np.abs(a_ref))))
        assert np.max(np.abs(_dalembert_accelerations(hand, q, v, t + 0.5) - a_ref)) > 0.05
    assert worst <= 1e-13, worst




def test_sleigh_from_a_kanes_method_with_values_by_name():
    """A KanesMethod (dependent speed u2, velocity constraint u2 = 0) whose constants are
    positive symbols, given values by name."""
    x, y, th = me.dynamicsymbols("x y theta")
    u1, u2, u3 = me.dynamicsymbols("u1:4")
    t = me.dynamicsymbols._t
    m, a, J = sm.symbols("m a J", positive=True)
    N = me.ReferenceFrame("N")
    B = N.orientnew("B", "Axis", [th, N.z])
    O = me.Point("O")
    O.set_vel(N, 0)
    P = O.locatenew("P", x * N.x + y * N.y)
    P.set_vel(N, u1 * B.x + u2 * B.y)
    B.set_ang_vel(N, u3 * N.z)
    Gc = P.locatenew("G", a * B.x)
    Gc.v2pt_theory(P, N, B)
    body = me.RigidBody("sleigh", Gc, B, m, (me.inertia(B, 0, 0, J), Gc))
    kdes = [(x.diff(t) * sm.cos(th) + y.diff(t) * sm.sin(th)) - u1,
            (-x.diff(t) * sm.sin(th) + y.diff(t) * sm.cos(th)) - u2, th.diff(t) - u3]
    km = me.KanesMethod(N, q_ind=[x, y, th], u_ind=[u1, u3], u_dependent=[u2], kd_eqs=kdes,
                        velocity_constraints=[u2], bodies=[body])
    s = dl.from_sympy(km, values={"m": 2.0, "a": 0.5, "J": 3.0})
    builtin = dl.models.get("chaplygin-sleigh", m=2.0, a=0.5, J=3.0).system
    for _ in range(3):
        q = jnp.asarray(RNG.uniform(-3, 3, 3))
        np.testing.assert_allclose(np.asarray(s.mass_matrix(q)), np.asarray(builtin.mass_matrix(q)),
                                   rtol=0, atol=1e-13)
        np.testing.assert_allclose(np.asarray(s.constraint_matrix(q)), np.asarray(builtin.constraint_matrix(q)),
                                   rtol=0, atol=1e-14)


# --- configuration constraints ---------------------------------------------------------------

def disc_with_height():
    """The rolling disc with its centre height z as a sixth coordinate (the centre at
    (q4, q5, 0) + r L.z horizontally, at height z) and the contact with the ground as a
    configuration constraint φ = z − r cos(lean) = 0 (LagrangesMethod hol_coneqs), beside the two
    rolling constraints."""
    q1, q2, q3, q4, q5, z = me.dynamicsymbols("q1:6 z")
    r, m, g = sm.symbols("r m g", positive=True)
    N = me.ReferenceFrame("N")
    Y = N.orientnew("Y", "Axis", [q1, N.z])
    L = Y.orientnew("L", "Axis", [q2, Y.x])
    R = L.orientnew("R", "Axis", [q3, L.y])
    O = me.Point("O")
    O.set_vel(N, 0)
    # the centre: above the contact point (q4, q5) by r L.z horizontally, at height z
    D = O.locatenew("D", q4 * N.x + q5 * N.y + r * L.z - r * sm.cos(q2) * N.z + z * N.z)
    D.set_vel(N, D.pos_from(O).dt(N))
    disc = me.RigidBody("disc", D, R, m, (me.inertia(L, m / 4 * r ** 2, m / 2 * r ** 2, m / 4 * r ** 2), D))
    disc.potential_energy = m * g * z
    slip = D.vel(N) + R.ang_vel_in(N).cross(-r * L.z)
    lm = me.LagrangesMethod(me.Lagrangian(N, disc), [q1, q2, q3, q4, q5, z],
                            hol_coneqs=[z - r * sm.cos(q2)],
                            nonhol_coneqs=[slip.dot(N.x), slip.dot(N.y)], frame=N)
    return lm, {r: 0.5, m: 1.0, g: 9.81}


def test_lagranges_method_configuration_constraint_is_read():
    """hol_coneqs becomes φ (k = 1) with its Jacobian; the time derivative that LagrangesMethod
    keeps among its constraint equations is not a second (dependent) velocity constraint; on
    φ = 0 the metric restricted to the constraint distribution equals the built-in disk's."""
    lm, values = disc_with_height()
    s = dl.from_sympy(lm, values=values)
    builtin = dl.models.get("tilting-disk").system
    r = 0.5
    for _ in range(4):
        q5 = RNG.uniform(-1.2, 1.2, 5)
        q = jnp.asarray(np.append(q5, r * np.cos(q5[1])))             # on φ = 0
        assert abs(float(s.holonomic(q)[0])) <= 1e-15
        Phi = np.asarray(s.holonomic_jacobian(q))
        np.testing.assert_allclose(Phi, [[0, r * np.sin(q5[1]), 0, 0, 0, 1]], atol=1e-15)
        assert np.asarray(s.rolling_matrix(q)).shape == (2, 6)
        # velocities of the 6-coordinate model on φ = 0: ż = −r sin(lean) lean rate
        E = np.vstack([np.eye(5), [0, -r * np.sin(q5[1]), 0, 0, 0]])  # (6, 5): v6 = E v5
        np.testing.assert_allclose(E.T @ np.asarray(s.mass_matrix(q)) @ E,
                                   np.asarray(builtin.mass_matrix(jnp.asarray(q5))), rtol=0, atol=1e-13)
        np.testing.assert_allclose(np.asarray(s.rolling_matrix(q)) @ E,
                                   np.asarray(builtin.constraint_matrix(jnp.asarray(q5))), rtol=0, atol=1e-14)
        np.testing.assert_allclose(float(s.potential(q)), float(builtin.potential(jnp.asarray(q5))), atol=1e-13)


def test_system_holonomic_constraints_are_read():
    """A System's holonomic constraints become φ; its nonholonomic constraints the rolling rows
    (the System's velocity_constraints, which add φ's time derivative, are not read)."""
    x, y, z = me.dynamicsymbols("x y z")
    t = me.dynamicsymbols._t
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    P = O.locatenew("P", x * N.x + y * N.y + z * N.z)
    P.set_vel(N, P.pos_from(O).dt(N))
    system = me.System(N, O)
    system.add_coordinates(x, y, z)
    system.add_speeds(*[c.diff(t) for c in (x, y, z)])
    system.add_bodies(me.Particle("p", P, sm.Integer(2)))
    system.add_holonomic_constraints(x ** 2 + y ** 2 + z ** 2 - 1)
    system.add_nonholonomic_constraints(z.diff(t) - y * x.diff(t))
    s = dl.from_sympy(system)
    q = jnp.array([0.3, -0.4, 0.2])
    np.testing.assert_allclose(float(s.holonomic(q)[0]), 0.09 + 0.16 + 0.04 - 1, atol=1e-15)
    np.testing.assert_allclose(np.asarray(s.holonomic_jacobian(q)), [[0.6, -0.8, 0.4]], atol=1e-15)
    np.testing.assert_allclose(np.asarray(s.rolling_matrix(q)), [[0.4, 0.0, 1.0]], atol=1e-15)
    np.testing.assert_allclose(np.asarray(s.mass_matrix(q)), 2 * np.eye(3), atol=1e-15)


def test_configuration_constraints_of_an_expression_model():
    """holonomic_constraints= beside constraints=; a velocity-free expression in constraints=
    is refused with the keyword to use."""
    x, y, z, t, T = _particle()
    s = dl.from_sympy(lagrangian=T, coordinates=[x, y, z], constraints=[z.diff(t) - y * x.diff(t)],
                      holonomic_constraints=[x + y])
    np.testing.assert_allclose(np.asarray(s.holonomic_jacobian(jnp.zeros(3))), [[1.0, 1.0, 0.0]])
    with pytest.raises(dl.InputError, match="holonomic_constraints="):
        dl.from_sympy(lagrangian=T, coordinates=[x, y, z], constraints=[x + y, z.diff(t) - y * x.diff(t)])
    with pytest.raises(dl.InputError, match="configuration constraint 0 .* involves the velocities"):
        dl.from_sympy(lagrangian=T, coordinates=[x, y, z], constraints=[z.diff(t)],
                      holonomic_constraints=[x.diff(t)])


# --- built-in rolling: completed or refused --------------------------------------------------

def kane_disc_docs(spin_axis_inertia=None):
    """SymPy's documentation rolling disc (rollingdisc_example_kane): the body-frame angular
    velocity components as speeds, the centre located from a contact point C with zero velocity
    and its velocity by v2pt_theory from C with the disc's frame — the rolling built into the
    kinematics; no contact coordinates, no velocity constraints. Gravity as potential_energy.
    Source: SymPy documentation, physics/mechanics/examples/rollingdisc_example_kane (BSD)."""
    q1, q2, q3 = me.dynamicsymbols("q1 q2 q3")
    u1, u2, u3 = me.dynamicsymbols("u1 u2 u3")
    r, m, g = sm.symbols("r m g", positive=True)
    N = me.ReferenceFrame("N")
    Y = N.orientnew("Y", "Axis", [q1, N.z])
    L = Y.orientnew("L", "Axis", [q2, Y.x])
    R = L.orientnew("R", "Axis", [q3, L.y])
    w_R_N_qd = R.ang_vel_in(N)
    R.set_ang_vel(N, u1 * L.x + u2 * L.y + u3 * L.z)
    C = me.Point("C")
    C.set_vel(N, 0)
    Dmc = C.locatenew("Dmc", r * L.z)
    Dmc.v2pt_theory(C, N, R)
    I = me.inertia(L, m / 4 * r ** 2, m / 2 * r ** 2, m / 4 * r ** 2)
    kd = [me.dot(R.ang_vel_in(N) - w_R_N_qd, uv) for uv in L]
    body = me.RigidBody("BodyD", Dmc, R, m, (I, Dmc))
    body.potential_energy = m * g * r * sm.cos(q2)
    km = me.KanesMethod(N, q_ind=[q1, q2, q3], u_ind=[u1, u2, u3], kd_eqs=kd, bodies=[body])
    return km, {r: 0.5, m: 1.0, g: 9.81}


def _row_space_equal(A, B, atol):
    """The rows of A and B span the same space (each projects to zero on the other's complement)."""
    for X, Y in ((A, B), (B, A)):
        Q, _ = np.linalg.qr(Y.T)
        assert np.max(np.abs(X.T - Q @ (Q.T @ X.T))) <= atol


def test_built_in_rolling_of_the_docs_kane_disc_is_completed():
    """The contact point's coordinates C_x, C_y and the two slip constraints are added; the
    completed model is the built-in tilting disk (an independent closed form): same G and V, and
    constraint rows spanning the same space, at random configurations."""
    km, values = kane_disc_docs()
    s = dl.from_sympy(km, values=values)
    assert s.coordinate_names == ("q1", "q2", "q3", "C_x", "C_y")
    builtin = dl.models.get("tilting-disk").system
    for _ in range(5):
        q = jnp.asarray(RNG.uniform(-1.2, 1.2, 5))
        np.testing.assert_allclose(np.asarray(s.mass_matrix(q)), np.asarray(builtin.mass_matrix(q)),
                                   rtol=0, atol=1e-13)
        np.testing.assert_allclose(float(s.potential(q)), float(builtin.potential(q)), atol=1e-13)
        _row_space_equal(np.asarray(s.constraint_matrix(q)), np.asarray(builtin.constraint_matrix(q)), 1e-13)


def test_lagrangian_with_the_rolling_substituted_in_is_refused():
    """SymPy's documentation Lagrange disc (rollingdisc_example_lagrange): the Lagrangian of the
    built-in kinematics (v2pt_theory from a contact point with zero velocity) has no contact
    coordinates and no constraints; the free Lagrangian cannot be recovered from it."""
    q1, q2, q3 = me.dynamicsymbols("q1 q2 q3")
    r, m, g = sm.symbols("r m g", positive=True)
    N = me.ReferenceFrame("N")
    Y = N.orientnew("Y", "Axis", [q1, N.z])
    L = Y.orientnew("L", "Axis", [q2, Y.x])
    R = L.orientnew("R", "Axis", [q3, L.y])
    C = me.Point("C")
    C.set_vel(N, 0)
    Dmc = C.locatenew("Dmc", r * L.z)
    Dmc.v2pt_theory(C, N, R)
    body = me.RigidBody("BodyD", Dmc, R, m, (me.inertia(L, m / 4 * r ** 2, m / 2 * r ** 2, m / 4 * r ** 2), Dmc))
    body.potential_energy = m * g * r * sm.cos(q2)
    lm = me.LagrangesMethod(me.Lagrangian(N, body), [q1, q2, q3])
    with pytest.raises(dl.InputError, match="rolling substituted in .* cannot be recovered"):
        dl.from_sympy(lm, values={r: 0.5, m: 1.0, g: 9.81})


# --- SymPy's Whipple bicycle ------------------------------------------------------------------

def whipple_bicycle(loads=False):
    """SymPy's Whipple bicycle as it stands: the construction code of ``test_bicycle`` in SymPy's
    ``sympy/physics/mechanics/tests/test_kane3.py`` (SymPy, BSD licence; "crudely ported from
    Autolev"), with the benchmark parameters of Meijaard, Papadopoulos, Ruina & Schwab, Proc. R.
    Soc. A 463 (2007) 1955, as converted there. The rear contact point has zero velocity and the
    bodies' velocities come by v2pt_theory from it, the wheel rates u3, u6 have no angle
    coordinates (the rolling is built into the kinematics); the front contact point's velocity
    (three components, the vertical one the derivative of the configuration constraint) are the
    velocity constraints and its height the configuration constraint (dependent pitch q4).
    Changed unless ``loads``: Kane's equations are formed without the gravity loads, whose
    potential −Σ F·r (r from the rear contact) is returned instead; with ``loads`` they are formed
    as in test_kane3 (``kanes_equations(BL, FL)``). Returns (KanesMethod, values {symbol: number},
    potential V(q))."""
    from sympy import acos, cos, pi, sin, sqrt, symbols
    from sympy.physics.mechanics import (KanesMethod, Point, ReferenceFrame, RigidBody, dot, dynamicsymbols,
                                         inertia)
    q1, q2, q4, q5 = dynamicsymbols('q1 q2 q4 q5')
    q1d, q2d, q4d, q5d = dynamicsymbols('q1 q2 q4 q5', 1)
    u1, u2, u3, u4, u5, u6 = dynamicsymbols('u1 u2 u3 u4 u5 u6')
    WFrad, WRrad, htangle, forkoffset = symbols('WFrad WRrad htangle forkoffset')
    forklength, framelength, forkcg1 = symbols('forklength framelength forkcg1')
    forkcg3, framecg1, framecg3, Iwr11 = symbols('forkcg3 framecg1 framecg3 Iwr11')
    Iwr22, Iwf11, Iwf22, Iframe11 = symbols('Iwr22 Iwf11 Iwf22 Iframe11')
    Iframe22, Iframe33, Iframe31, Ifork11 = symbols('Iframe22 Iframe33 Iframe31 Ifork11')
    Ifork22, Ifork33, Ifork31, g = symbols('Ifork22 Ifork33 Ifork31 g')
    mframe, mfork, mwf, mwr = symbols('mframe mfork mwf mwr')
    N = ReferenceFrame('N')
    Y = N.orientnew('Y', 'Axis', [q1, N.z])
    R = Y.orientnew('R', 'Axis', [q2, Y.x])
    Frame = R.orientnew('Frame', 'Axis', [q4 + htangle, R.y])
    WR = ReferenceFrame('WR')
    TempFrame = Frame.orientnew('TempFrame', 'Axis', [-htangle, Frame.y])
    Fork = Frame.orientnew('Fork', 'Axis', [q5, Frame.x])
    TempFork = Fork.orientnew('TempFork', 'Axis', [-htangle, Fork.y])
    WF = ReferenceFrame('WF')
    WR_cont = Point('WR_cont')
    WR_mc = WR_cont.locatenew('WR_mc', WRrad * R.z)
    Steer = WR_mc.locatenew('Steer', framelength * Frame.z)
    Frame_mc = WR_mc.locatenew('Frame_mc', - framecg1 * Frame.x + framecg3 * Frame.z)
    Fork_mc = Steer.locatenew('Fork_mc', - forkcg1 * Fork.x + forkcg3 * Fork.z)
    WF_mc = Steer.locatenew('WF_mc', forklength * Fork.x + forkoffset * Fork.z)
    WF_cont = WF_mc.locatenew('WF_cont', WFrad * (dot(Fork.y, Y.z) * Fork.y - Y.z).normalize())
    Y.set_ang_vel(N, u1 * Y.z)
    R.set_ang_vel(Y, u2 * R.x)
    WR.set_ang_vel(Frame, u3 * Frame.y)
    Frame.set_ang_vel(R, u4 * Frame.y)
    Fork.set_ang_vel(Frame, u5 * Fork.x)
    WF.set_ang_vel(Fork, u6 * Fork.y)
    WR_cont.set_vel(N, 0)
    WR_mc.v2pt_theory(WR_cont, N, WR)
    Steer.v2pt_theory(WR_mc, N, Frame)
    Frame_mc.v2pt_theory(WR_mc, N, Frame)
    Fork_mc.v2pt_theory(Steer, N, Fork)
    WF_mc.v2pt_theory(Steer, N, Fork)
    WF_cont.v2pt_theory(WF_mc, N, WF)
    Frame_I = (inertia(TempFrame, Iframe11, Iframe22, Iframe33, 0, 0, Iframe31), Frame_mc)
    Fork_I = (inertia(TempFork, Ifork11, Ifork22, Ifork33, 0, 0, Ifork31), Fork_mc)
    WR_I = (inertia(Frame, Iwr11, Iwr22, Iwr11), WR_mc)
    WF_I = (inertia(Fork, Iwf11, Iwf22, Iwf11), WF_mc)
    BodyFrame = RigidBody('BodyFrame', Frame_mc, Frame, mframe, Frame_I)
    BodyFork = RigidBody('BodyFork', Fork_mc, Fork, mfork, Fork_I)
    BodyWR = RigidBody('BodyWR', WR_mc, WR, mwr, WR_I)
    BodyWF = RigidBody('BodyWF', WF_mc, WF, mwf, WF_I)
    kd = [q1d - u1, q2d - u2, q4d - u4, q5d - u5]
    conlist_speed = [WF_cont.vel(N) & Y.x, WF_cont.vel(N) & Y.y, WF_cont.vel(N) & Y.z]
    conlist_coord = [WF_cont.pos_from(WR_cont) & Y.z]
    FL = [(Frame_mc, -mframe * g * Y.z),
          (Fork_mc, -mfork * g * Y.z),
          (WF_mc, -mwf * g * Y.z),
          (WR_mc, -mwr * g * Y.z)]
    BL = [BodyFrame, BodyFork, BodyWR, BodyWF]
    KM = KanesMethod(N, q_ind=[q1, q2, q5],
                     q_dependent=[q4], configuration_constraints=conlist_coord,
                     u_ind=[u2, u3, u5],
                     u_dependent=[u1, u4, u6], velocity_constraints=conlist_speed,
                     kd_eqs=kd,
                     constraint_solver="CRAMER")
    KM.kanes_equations(BL, FL) if loads else KM.kanes_equations(BL)      # (test_kane3: with FL)
    potential = -sum(F & P.pos_from(WR_cont) for P, F in FL)
    PaperRadRear = 0.3
    PaperRadFront = 0.35
    HTA = (pi / 2 - pi / 10).evalf()
    TrailPaper = 0.08
    rake = (-(TrailPaper * sin(HTA) - (PaperRadFront * cos(HTA)))).evalf()
    PaperWb = 1.02
    PaperFrameCgX = 0.3
    PaperFrameCgZ = 0.9
    PaperForkCgX = 0.9
    PaperForkCgZ = 0.7
    FrameLength = (PaperWb * sin(HTA) - (rake - (PaperRadFront - PaperRadRear) * cos(HTA))).evalf()
    FrameCGNorm = ((PaperFrameCgZ - PaperRadRear - (PaperFrameCgX / sin(HTA)) * cos(HTA)) * sin(HTA)).evalf()
    FrameCGPar = (PaperFrameCgX / sin(HTA) + (PaperFrameCgZ - PaperRadRear - PaperFrameCgX / sin(HTA) * cos(HTA))
                  * cos(HTA)).evalf()
    tempa = (PaperForkCgZ - PaperRadFront)
    tempb = (PaperWb - PaperForkCgX)
    tempc = (sqrt(tempa ** 2 + tempb ** 2)).evalf()
    PaperForkL = (PaperWb * cos(HTA) - (PaperRadFront - PaperRadRear) * sin(HTA)).evalf()
    ForkCGNorm = (rake + (tempc * sin(pi / 2 - HTA - acos(tempa / tempc)))).evalf()
    ForkCGPar = (tempc * cos((pi / 2 - HTA) - acos(tempa / tempc)) - PaperForkL).evalf()
    val_dict = {WFrad: PaperRadFront, WRrad: PaperRadRear, htangle: HTA, forkoffset: rake,
                forklength: PaperForkL, framelength: FrameLength, forkcg1: ForkCGPar, forkcg3: ForkCGNorm,
                framecg1: FrameCGNorm, framecg3: FrameCGPar, Iwr11: 0.0603, Iwr22: 0.12, Iwf11: 0.1405,
                Iwf22: 0.28, Ifork11: 0.05892, Ifork22: 0.06, Ifork33: 0.00708, Ifork31: 0.00756,
                Iframe11: 9.2, Iframe22: 11, Iframe33: 2.8, Iframe31: -2.4, mfork: 4, mframe: 85, mwf: 3,
                mwr: 2, g: 9.81}
    return KM, val_dict, potential


#: Rear and front wheel radii of the benchmark (m), Meijaard et al. 2007 Table 1.
R_REAR, R_FRONT = 0.3, 0.35


def bicycle_state(system, speed, roll_rate):
    """(q0, v0) of the imported bicycle: upright, straight, forward speed `speed` (m/s) along
    +N.x, roll rate `roll_rate` (rad/s). In SymPy's model the forward direction is +x with z up,
    so the wheel rates are +speed/r (Meijaard's θ̇_R = −v/r_R is for his axes, z down)."""
    names = system.coordinate_names
    q0, v0 = np.zeros(len(names)), np.zeros(len(names))
    v0[names.index("q2")] = roll_rate
    v0[names.index("WR_cont_x")] = speed
    v0[names.index("angle_u3")] = speed / R_REAR
    v0[names.index("angle_u6")] = speed / R_FRONT
    return q0, v0


def meijaard_eigenvalues(speed, g=9.81):
    """Eigenvalues (1/s) of the benchmark's linearised equations M q̈ + v C1 q̇ + (g K0 + v² K2) q = 0
    (q = (roll, steer)) with the coefficient matrices that Meijaard et al. 2007 publish for the
    benchmark parameters (to 14 digits) — an independent closed form; they give the paper's
    eigenvalues at v = 5 m/s, −14.078390, −0.775342 ± 4.464868i, −0.322866 (checked in
    test_whipple_bicycle_linearisation_equals_meijaards)."""
    M = np.array([[80.81722, 2.31941332208709], [2.31941332208709, 0.29784188199686]])
    C1 = np.array([[0.0, 33.86641391492494], [-0.85035641456978, 1.68540397397560]])
    K0 = np.array([[-80.95, -2.59951685249872], [-2.59951685249872, -0.80329488458618]])
    K2 = np.array([[0.0, 76.59734589573222], [0.0, 2.65431523794604]])
    A = np.block([[np.zeros((2, 2)), np.eye(2)],
                  [-np.linalg.solve(M, g * K0 + speed ** 2 * K2), -np.linalg.solve(M, speed * C1)]])
    return np.linalg.eigvals(A)


def linearised_eigenvalues(system, speeds):
    """Eigenvalues of the imported system's index-1 equations of motion (the saddle-point system
    [[G, −Cᵀ], [C, 0]] (q̈, λ) = (∂L/∂q − Ġq̇, −Ċq̇), C = (Φ; μ)), linearised by forward-mode
    autodiff about the upright straight run at each of `speeds` (m/s): a list of arrays of 2n
    values."""
    import jax
    n = len(system.coordinate_names)

    def field(x):
        q, v = x[:n], x[n:]
        G, C = system.mass_matrix(q), system.constraint_matrix(q)
        dG = jax.jvp(system.mass_matrix, (q,), (v,))[1]
        dT = jax.grad(lambda y: 0.5 * v @ system.mass_matrix(y) @ v)(q)
        dC = jax.jvp(system.constraint_matrix, (q,), (v,))[1]
        r = C.shape[0]
        K = jnp.block([[G, -C.T], [C, jnp.zeros((r, r))]])
        rhs = jnp.concatenate([dT - jax.grad(system.potential)(q) - dG @ v, -dC @ v])
        return jnp.concatenate([v, jnp.linalg.solve(K, rhs)[:n]])

    jac = jax.jit(jax.jacfwd(field))
    return [np.linalg.eigvals(np.asarray(jac(jnp.asarray(np.concatenate(bicycle_state(system, v, 0.0))))))
            for v in speeds]


def fitted_weave(t, roll, t_start):
    """(σ, ω) of roll(t) ≈ e^{σt}(a cos ωt + b sin ωt) + c e^{λt} on t ≥ t_start (the weave and the
    capsize mode; the castering mode, λ ≈ −13 /s, has decayed), by nonlinear least squares from
    a guess that uses only the data (ω from the zero crossings, σ = λ = −1)."""
    from scipy.optimize import least_squares
    sel = t >= t_start
    t, y = t[sel] - t_start, roll[sel]
    crossings = t[1:][np.sign(y[1:]) != np.sign(y[:-1])]
    omega0 = np.pi / np.mean(np.diff(crossings)) if len(crossings) > 2 else 4.0

    def model(p):
        s, w, a, b, c, lam = p
        return np.exp(s * t) * (a * np.cos(w * t) + b * np.sin(w * t)) + c * np.exp(lam * t)

    fit = least_squares(lambda p: model(p) - y, [-1.0, omega0, y[0], 0.0, 0.0, -1.0], xtol=1e-14, ftol=1e-14)
    return fit.x[0], fit.x[1], float(np.max(np.abs(fit.fun)))


@pytest.fixture(scope="module")
def bicycle():
    km, values, potential = whipple_bicycle()
    return dl.from_sympy(km, values=values, potential=potential, name="whipple-sympy")


def test_whipple_bicycle_is_completed(bicycle):
    """The rear contact point's coordinates and the wheel angles are added (n = 8); the rear
    slip (2 rows) joins the front contact's horizontal slip (2 rows); the front contact's vertical
    velocity, the derivative of φ, is dropped (m = 4, k = 1); G is symmetric positive definite at
    random configurations; φ vanishes upright at zero pitch (the test's geometry)."""
    s = bicycle
    assert s.coordinate_names == ("q1", "q2", "q5", "q4", "WR_cont_x", "WR_cont_y", "angle_u3", "angle_u6")
    q = jnp.zeros(8)
    assert np.asarray(s.rolling_matrix(q)).shape == (4, 8)
    assert np.asarray(s.holonomic_jacobian(q)).shape == (1, 8)
    assert abs(float(s.holonomic(q)[0])) <= 1e-14
    for _ in range(3):
        qr = jnp.asarray(RNG.uniform(-0.5, 0.5, 8))
        G = np.asarray(s.mass_matrix(qr))
        np.testing.assert_allclose(G, G.T, rtol=0, atol=1e-12)
        assert np.linalg.eigvalsh(G)[0] > 0.05
        C = np.asarray(s.constraint_matrix(qr))
        assert np.linalg.svd(C, compute_uv=False)[-1] > 0.1        # (Φ; μ) of full rank 5


def test_whipple_bicycle_linearisation_equals_meijaards(bicycle):
    """The linearised equations of the imported, completed model have Meijaard's four eigenvalues
    (computed from the paper's coefficient matrices) at 4.6 and 5 m/s — measured to 1.4e-13 —
    and 12 zero eigenvalues (ignorable coordinates, the conserved constraint values) — measured
    ≤ 7.1e-8, the square root of round-off of the Jordan blocks of φ."""
    published_5 = np.array([-14.078390, -0.775342 + 4.464868j, -0.775342 - 4.464868j, -0.322866])
    np.testing.assert_allclose(np.sort_complex(meijaard_eigenvalues(5.0)), np.sort_complex(published_5), atol=1e-6)
    for speed, ev in zip((4.6, 5.0), linearised_eigenvalues(bicycle, (4.6, 5.0))):
        physical = ev[np.abs(ev) > 1e-3]
        assert len(physical) == 4
        for lam in meijaard_eigenvalues(speed):
            assert np.min(np.abs(physical - lam)) <= 1e-9
        assert np.max(np.abs(ev[np.abs(ev) <= 1e-3])) <= 1e-6


def _bicycle_run(system, roll_rate, h, t_final, method="nh-rattle-sym"):
    q0, v0 = bicycle_state(system, 4.6, roll_rate)
    opts = {"rtol": 1e-11} if method == "nh-rattle-sym" else {}
    return dl.integrate(system, method, q0=q0, v0=v0, h=h, t_final=t_final, progress=False, **opts)


def _energy_metric(tr):
    E = np.asarray(tr.energy)
    return 100.0 * (E.max() - E.min()) / E[0]


@pytest.mark.full
def test_whipple_bicycle_runs_with_nh_rattle_sym(bicycle):
    """In the full suite only: the first compile of nh-rattle-sym on this model takes 38–137 s on
    the 2-core machine (a trivial system with n = 8, k = 1, m = 4 takes 24 s), beyond the CI
    budget; the whole test took 115 s at load average 3–5 and 242 s at 9. nh-rattle-sym runs with
    rtol=1e-11 (its Newton test on the unknowns' max-norm cannot reach 1e-14 here, see
    docs/sympy.md).
    (a) The benchmark manoeuvre (4.6 m/s, roll rate 0.5 rad/s), h = 1e-3, 1 s: max |φ| ≤ 1e-10
    (measured 2.9e-15), rolling residual ≤ 1e-12 (6.0e-13), energy metric ≤ 2e-5 % (6.6e-6 %,
    bounded: the same over 20 s). (b) Independent check: a small roll rate (0.05 rad/s, linear
    regime), h = 5e-3, 3 s: the weave eigenvalue fitted to the roll angle on t ≥ 0.5 s equals
    Meijaard's at the run's mean forward speed to |Δσ| ≤ 2e-3, |Δω| ≤ 4e-3 /s (measured 4.9e-4 and
    1.3e-3, the O(h²) error of the method: 3.0e-3 and 5.4e-3 at h = 1e-2); the roll envelope
    decays (e^{−0.378·2} = 0.47 from the first to the third second). Negative control: Meijaard's
    weave at 1 cm/s faster is 0.011 (σ) and 0.015 /s (ω) away, outside the tolerance."""
    tr = _bicycle_run(bicycle, 0.5, 1e-3, 1.0)
    assert np.max(np.abs(tr.holonomic_residual)) <= 1e-10
    assert np.max(np.abs(tr.constraint_residual)) <= 1e-12
    assert _energy_metric(tr) <= 2e-5
    tr = _bicycle_run(bicycle, 0.05, 5e-3, 3.0)
    t, roll = np.asarray(tr.t), np.asarray(tr.q)[:, bicycle.coordinate_names.index("q2")]
    speed = np.mean(np.asarray(tr.v)[t >= 0.5, bicycle.coordinate_names.index("angle_u3")] * R_REAR)
    sigma, omega, _ = fitted_weave(t, roll, 0.5)
    weave = next(x for x in meijaard_eigenvalues(speed) if x.imag > 0)
    assert abs(sigma - weave.real) <= 2e-3 and abs(omega - weave.imag) <= 4e-3
    other = next(x for x in meijaard_eigenvalues(speed + 0.01) if x.imag > 0)
    assert abs(sigma - other.real) > 2e-3 or abs(omega - other.imag) > 4e-3
    first, third = np.max(np.abs(roll[t < 1.0])), np.max(np.abs(roll[t >= 2.0]))
    assert 0.35 <= third / first <= 0.6


@pytest.mark.full
@pytest.mark.parametrize("method", ["nh-rattle-sym", "gonzalez-f"])
def test_whipple_bicycle_benchmark_20_s(bicycle, method):
    """The IFToMM manoeuvre M2 for 20 s, h = 1e-3 (docs/sympy.md has the numbers): φ at round-off
    (measured 2.9e-15 for both), the rolling residual at the nodes (nh-rattle-sym 1.8e-11, growing
    with the Newton tolerance rtol (1 + ‖u‖∞) as the wheel angles grow; gonzalez-f holds it at the
    midpoint velocity, O(h²) at the nodes), the energy metric (nh-rattle-sym 6.6e-6 %, bounded;
    gonzalez-f at round-off), the roll decaying (max |roll| over the last 2 s below 1e-3 of the
    first 2 s: measured 6.5e-4), and the weave fitted on t ≥ 6 s equal to Meijaard's at the
    forward speed reached (4.6224 m/s: the roll's energy goes into forward motion) to 2e-3."""
    tr = _bicycle_run(bicycle, 0.5, 1e-3, 20.0, method)
    assert np.max(np.abs(tr.holonomic_residual)) <= 1e-12
    metric = _energy_metric(tr)
    if method == "gonzalez-f":
        assert metric <= 1e-10
        assert np.max(np.abs(tr.constraint_residual)) <= 1e-5
    else:
        assert metric <= 2e-5
        assert np.max(np.abs(tr.constraint_residual)) <= 1e-10
    t, roll = np.asarray(tr.t), np.asarray(tr.q)[:, bicycle.coordinate_names.index("q2")]
    assert np.max(np.abs(roll[t >= 18.0])) <= 1e-3 * np.max(np.abs(roll[t < 2.0]))
    speed = np.mean(np.asarray(tr.v)[t >= 6.0, bicycle.coordinate_names.index("angle_u3")] * R_REAR)
    sigma, omega, _ = fitted_weave(t, roll, 6.0)
    weave = next(x for x in meijaard_eigenvalues(speed) if x.imag > 0)
    assert abs(sigma - weave.real) <= 2e-3 and abs(omega - weave.imag) <= 2e-3


def disc_without_spin_angle(a=None):
    """The rolling disc written like the Whipple bicycle's wheels: yaw and lean with u = q̇, the
    spin rate u3 without an angle coordinate (the disc's frame is not oriented, only its angular
    velocity set), the centre by v2pt_theory from a zero-velocity contact point. Moments of
    inertia (a, m r²/2, m r²/4) about (L.x, L.y, L.z): axisymmetric about the spin axis L.y when
    a = m r²/4 (the default)."""
    q1, q2 = me.dynamicsymbols("q1 q2")
    u1, u2, u3 = me.dynamicsymbols("u1:4")
    t = me.dynamicsymbols._t
    r, m, g = sm.symbols("r m g", positive=True)
    N = me.ReferenceFrame("N")
    Y = N.orientnew("Y", "Axis", [q1, N.z])
    L = Y.orientnew("L", "Axis", [q2, Y.x])
    Y.set_ang_vel(N, u1 * N.z)
    L.set_ang_vel(Y, u2 * Y.x)
    R = me.ReferenceFrame("R")
    R.set_ang_vel(L, u3 * L.y)
    C = me.Point("C")
    C.set_vel(N, 0)
    Dmc = C.locatenew("Dmc", r * L.z)
    Dmc.v2pt_theory(C, N, R)
    body = me.RigidBody("disc", Dmc, R, m, (me.inertia(L, m * r ** 2 / 4 if a is None else a, m * r ** 2 / 2,
                                                      m * r ** 2 / 4), Dmc))
    body.potential_energy = m * g * r * sm.cos(q2)
    km = me.KanesMethod(N, q_ind=[q1, q2], u_ind=[u1, u2, u3], kd_eqs=[q1.diff(t) - u1, q2.diff(t) - u2],
                        bodies=[body])
    return km, {r: 0.5, m: 1.0, g: 9.81}


def test_wheel_rate_without_angle_is_completed_or_refused():
    """Axisymmetric disc: the spin angle and the contact point are added and the model is the
    tilting disk (coordinates permuted: yaw, lean, C_x, C_y, spin); a disc that is not
    axisymmetric about the spin axis (its angle would matter) is refused with how to rewrite —
    judged with the values given for the inertia's symbols."""
    km, values = disc_without_spin_angle()
    s = dl.from_sympy(km, values=values)
    assert s.coordinate_names == ("q1", "q2", "C_x", "C_y", "angle_u3")
    perm = [0, 1, 4, 2, 3]                          # tilting-disk order (yaw, lean, spin, x, y)
    P = np.eye(5)[perm]                             # q_builtin = P q_imported
    builtin = dl.models.get("tilting-disk").system
    for _ in range(4):
        q = RNG.uniform(-1.2, 1.2, 5)
        qb = jnp.asarray(P @ q)
        np.testing.assert_allclose(P @ np.asarray(s.mass_matrix(jnp.asarray(q))) @ P.T,
                                   np.asarray(builtin.mass_matrix(qb)), rtol=0, atol=1e-13)
        np.testing.assert_allclose(float(s.potential(jnp.asarray(q))), float(builtin.potential(qb)), atol=1e-13)
        _row_space_equal(np.asarray(s.constraint_matrix(jnp.asarray(q))) @ P.T,
                         np.asarray(builtin.constraint_matrix(qb)), 1e-13)
    a = sm.Symbol("a", positive=True)         # axisymmetric or not by the value given
    km, values = disc_without_spin_angle(a=a)
    assert dl.from_sympy(km, values={**values, "a": 0.0625}).coordinate_names[-1] == "angle_u3"
    with pytest.raises(dl.InputError, match="u3 has no kinematic differential equation and disc is not "
                                            "axisymmetric .* add the angle as a coordinate"):
        dl.from_sympy(km, values={**values, "a": 0.1})


def test_built_in_rolling_that_is_not_one_contact_slip_is_refused():
    """A second body whose velocity is the derivative of its position from the same contact
    point (honest) beside the disc's built-in rolling: the velocity differences are not one slip
    velocity, and the message says how to rewrite the model."""
    km, values = kane_disc_docs()
    disc = km.bodies[0]
    N = km._inertial
    C = next(iter(disc.masscenter._pos_dict))
    L = disc.masscenter.pos_from(C).args[0][1]
    P = disc.masscenter.locatenew("P", 0.1 * L.x)
    P.set_vel(N, P.pos_from(C).dt(N))
    kd_eqs = [qd - u_expr for qd, u_expr in km.kindiffdict().items()]
    km2 = me.KanesMethod(N, q_ind=list(km.q), u_ind=list(km.u), kd_eqs=kd_eqs,
                         bodies=[disc, me.Particle("p", P, sm.Float(0.2))])
    with pytest.raises(dl.InputError, match="not the time derivatives of their positions .* not the same for every "
                                            "body .*P.set_vel"):
        dl.from_sympy(km2, values=values)


@pytest.mark.full
def test_two_step_nh_rattle_loses_the_bicycle_to_its_parasitic_mode(bicycle):
    """The cause of nh-rattle's failure on a bicycle: at 5 m/s (roll rate 0.5 rad/s, h = 1e-3) the
    two-step scheme's parasitic period-2 component grows at 0.0136 per step — 13.6 /s, the rate of
    the benchmark's castering mode (−13.3 /s) with its sign reversed: the parasitic component
    follows the time-reversed linearisation, so the most strongly damped mode becomes the fastest
    growing one, whatever h (a smaller h does not help). The monitor sees it (relative amplitude
    above 1e-2) at step 1014, onset 845, long before the failure at step 2282 (the bicycle has
    fallen: roll 1.5 rad); the error says so and names the one-step methods. The same start with
    nh-rattle-sym keeps the roll decaying (negative control)."""
    q0, v0 = bicycle_state(bicycle, 5.0, 0.5)
    roll = bicycle.coordinate_names.index("q2")
    with pytest.warns(Warning), pytest.raises(dl.ConvergenceError) as err:
        dl.integrate(bicycle, "nh-rattle", q0=q0, v0=v0, h=1e-3, t_final=6.0, progress=False, rtol=1e-11)
    rep = err.value.trajectory.metadata["parasitic_mode"]
    assert rep["step"] < err.value.step - 500 and 0.012 <= rep["growth_rate"] <= 0.015
    assert "parasitic period-2 mode was growing" in str(err.value) and "nh-rattle-sym" in str(err.value)
    sym = dl.integrate(bicycle, "nh-rattle-sym", q0=q0, v0=v0, h=1e-3, t_final=6.0, progress=False, rtol=1e-11)
    r = np.abs(np.asarray(sym.q)[:, roll])
    assert r[-1000:].max() < 0.1 * r[:1000].max()          # measured 0.105 → 0.008


# --- loads: forces on points, torques on frames ----------------------------------------------

def disc_kane(potential_energy=False, damping=True):
    """SymPy's rolling disc as a KanesMethod with u = q̇ (q1 yaw, q2 lean, q3 spin, q4, q5 the
    contact point; dependent speeds u4, u5 from the two rolling constraints), whose
    ``kanes_equations`` take loads: gravity on the centre; with ``damping`` also a viscous torque
    −c ω on the disc, a driving torque A sin(w t) about its axle and a horizontal drag −b ẋ_D on
    its centre. ``potential_energy``: the disc also carries its gravity potential m g r cos q2 (the
    usual PyDy model: loads for Kane's equations, the potential for the energy)."""
    q = me.dynamicsymbols("q1:6")
    u = me.dynamicsymbols("u1:6")
    t = me.dynamicsymbols._t
    r, m, g, c, b, A, w = sm.symbols("r m g c b A w", positive=True)
    N = me.ReferenceFrame("N")
    Y = N.orientnew("Y", "Axis", [q[0], N.z])
    L = Y.orientnew("L", "Axis", [q[1], Y.x])
    R = L.orientnew("R", "Axis", [q[2], L.y])
    O = me.Point("O")
    O.set_vel(N, 0)
    D = O.locatenew("D", q[3] * N.x + q[4] * N.y + r * L.z)
    to_u = {qi.diff(t): ui for qi, ui in zip(q, u)}
    D.set_vel(N, D.pos_from(O).dt(N).xreplace(to_u))
    R.set_ang_vel(N, R.ang_vel_in(N).xreplace(to_u))
    disc = me.RigidBody("disc", D, R, m, (me.inertia(L, m / 4 * r ** 2, m / 2 * r ** 2, m / 4 * r ** 2), D))
    if potential_energy:
        disc.potential_energy = m * g * r * sm.cos(q[1])
    slip = D.vel(N) + R.ang_vel_in(N).cross(-r * L.z)
    km = me.KanesMethod(N, q_ind=q, u_ind=u[:3], u_dependent=u[3:], kd_eqs=[qi.diff(t) - ui for qi, ui in zip(q, u)],
                        velocity_constraints=[slip.dot(N.x), slip.dot(N.y)])
    loads = [me.Force(disc, -m * g * N.z)]
    if damping:
        loads += [me.Torque(R, -c * R.ang_vel_in(N)), (R, A * sm.sin(w * t) * L.y), (D, -b * (D.vel(N) & N.x) * N.x)]
    km.kanes_equations([disc], loads)
    values = {r: 0.5, m: 1.0, g: 9.81, c: 0.1, b: 0.3, A: 0.7, w: 2.0}
    return km, values, (q, u, t), (N, R, D, disc)


def kane_accelerations(km, values, syms):
    """u̇ (o,) at (q, u, t) from SymPy's own equations mass_matrix_full ẋ = forcing_full (x = (q, u)),
    evaluated numerically: the independent reference."""
    q, u, t = syms
    M = sm.lambdify([q, u, t], km.mass_matrix_full.xreplace(values), "numpy", cse=True)
    F = sm.lambdify([q, u, t], km.forcing_full.xreplace(values), "numpy", cse=True)
    return lambda qq, uu, tt: np.linalg.solve(M(qq, uu, tt), np.asarray(F(qq, uu, tt), float).ravel())[len(q):]


def _dalembert_accelerations(system, q, v, t):
    """q̈ (n,) of the system's index-1 equations at (q, v) and time t (one compile per system)."""
    fn = getattr(system, "_test_acceleration", None)
    if fn is None:
        def acceleration(q, v, t):
            with dl.clock.at(t, 0):
                return system.acceleration(q, v)
        fn = system._test_acceleration = jax.jit(acceleration)
    return np.asarray(fn(jnp.asarray(q), jnp.asarray(v), jnp.asarray(t, jnp.float64)))


def _random_disc_states(system, count, rng):
    """(q, v on the rolling constraints, t) with v1 … v3 random and v4, v5 solved for."""
    for _ in range(count):
        q = rng.uniform(-1.2, 1.2, 5)
        mu = np.asarray(system.constraint_matrix(jnp.asarray(q)))
        vi = rng.uniform(-2, 2, 3)
        yield q, np.concatenate([vi, np.linalg.solve(mu[:, 3:], -mu[:, :3] @ vi)]), rng.uniform(0, 10)


@pytest.mark.parametrize("potential_energy", [False, True])
def test_kane_loads_give_sympys_own_equations(potential_energy):
    """The damped, driven rolling disc (gravity, a viscous torque, a torque A sin(w t), a drag
    force) imported from its KanesMethod: dalembert's index-1 accelerations equal SymPy's
    mass_matrix_full / forcing_full at random states and times (measured 7e-16 relative). The
    gravity load becomes the potential m g r cos q2 — once, also when the disc carries that
    potential_energy too (the case from_sympy used to refuse); the other loads the force."""
    km, values, syms, _ = disc_kane(potential_energy=potential_energy)
    s = dl.from_sympy(km, values=values)
    reference = kane_accelerations(km, values, syms)
    rng = np.random.default_rng(11)
    for q, v, t in _random_disc_states(s, 4, rng):
        a_ref = reference(q, v, t)
        a = _dalembert_accelerations(s, q, v, t)
        assert np.max(np.abs(a - a_ref)) <= 1e-12 * np.max(np.abs(a_ref))
        np.testing.assert_allclose(float(s.potential(jnp.asarray(q))), 9.81 * 0.5 * np.cos(q[1]), rtol=1e-14)
    assert s.has_force


def test_gravity_counted_twice_is_refused_and_the_control_differs():
    """Negative control of the rule above: gravity given twice on purpose — the loads and a second
    potential= — doubles the potential (so the comparison above can fail); a potential_energy
    that is not the loads' potential up to a constant is refused."""
    km, values, syms, (N, R, D, disc) = disc_kane(potential_energy=True)
    q2 = syms[0][1]
    twice = dl.from_sympy(km, values=values, potential=disc.potential_energy)
    q = jnp.array([0.1, 0.4, 0.2, 0.0, 0.0])
    np.testing.assert_allclose(float(twice.potential(q)), 2 * 9.81 * 0.5 * np.cos(0.4), rtol=1e-14)
    disc.potential_energy = disc.potential_energy / 2 + sm.sin(q2) ** 2
    with pytest.raises(dl.InputError, match="disc has a potential_energy .* differs from it"):
        dl.from_sympy(km, values=values)


def test_gravity_load_alone_is_a_potential():
    """Gravity alone: no force (has_force False), V = m g r cos q2, and SymPy's equations."""
    km, values, syms, _ = disc_kane(damping=False)
    s = dl.from_sympy(km, values=values)
    assert not s.has_force
    reference = kane_accelerations(km, values, syms)
    for q, v, t in _random_disc_states(s, 2, np.random.default_rng(13)):
        a_ref = reference(q, v, t)
        assert np.max(np.abs(_dalembert_accelerations(s, q, v, t) - a_ref)) <= 1e-12 * np.max(np.abs(a_ref))


def test_lagranges_method_loads_equal_the_kane_import():
    """The same loads in the LagrangesMethod disc's forcelist (which from_sympy used to ignore),
    its gravity in the Lagrangian or as a load in the forcelist (then the potential): the same
    potential and force as the KanesMethod import at random states and times."""
    km, values, _, _ = disc_kane()
    s_k = dl.from_sympy(km, values=values)
    for gravity_load in (False, True):
        lm, _ = rolling_disc(damping=True, gravity_load=gravity_load)
        s_l = dl.from_sympy(lm, values=values)
        for q, v, t in _random_disc_states(s_k, 3, np.random.default_rng(14)):
            qj, vj = jnp.asarray(q), jnp.asarray(v)
            with dl.clock.at(t, 0):
                f_l, f_k = np.asarray(s_l.force(qj, vj)), np.asarray(s_k.force(qj, vj))
            assert np.max(np.abs(f_k)) > 0.1
            np.testing.assert_allclose(f_l, f_k, rtol=0, atol=1e-13)
            np.testing.assert_allclose(float(s_l.potential(qj)), float(s_k.potential(qj)), rtol=0, atol=1e-13)


def sleigh_with_loads(c=0.2, b=0.5, F0=1.5, w=3.0, drive=None):
    """The Chaplygin sleigh of sleigh_kane (u ≠ q̇) with a viscous torque −c u3 on the body, a
    drag −b u1 along the blade at the blade's point and a driving force F0 cos(w t) along the
    blade at the mass centre (Torque, tuple and Force loads); ``drive``: a dynamicsymbol that
    replaces F0 cos(w t) (a specified input, for controls=)."""
    system = sleigh_kane(m=1.0, a=1.0, J=8.0)
    t = me.dynamicsymbols._t
    (body,) = system.bodies
    u1, _, u3 = system.u
    B = body.frame
    P = next(iter(body.masscenter._pos_dict))                     # the blade's point
    system.add_loads(me.Torque(body, -c * u3 * system.frame.z), (P, -b * u1 * B.x),
                     me.Force(body, (F0 * sm.cos(w * t) if drive is None else drive) * B.x))
    return system


def test_driven_damped_sleigh_equals_a_hand_written_forced_system():
    """The sleigh with loads against the built-in sleigh's G and μ with the generalized force
    written by hand, Q = ((f(t) − b u1) cos θ, (f(t) − b u1) sin θ, −c θ̇), u1 = ẋ cos θ + ẏ sin θ,
    f(t) = F0 cos(w t): nh-rattle trajectories over 2 s (h = 0.01) agree to 1e-12 (measured 9.6e-14
    in q, 2.0e-13 in v: the implicit step's Newton tolerance, the force depending on v); the force is time-dependent and does work (the energy changes by O(1)). The drive as
    a specified input F(t) in controls= with the signal u(t) = F0 cos(w t): the same force along
    the path."""
    c, b, F0, w = 0.2, 0.5, 1.5, 3.0
    s = dl.from_sympy(sleigh_with_loads(c, b, F0, w))
    builtin = dl.models.get("chaplygin-sleigh", m=1.0, a=1.0, J=8.0).system

    def force(q, v, t):
        u1 = v[0] * jnp.cos(q[2]) + v[1] * jnp.sin(q[2])
        push = F0 * jnp.cos(w * t) - b * u1
        return jnp.stack([push * jnp.cos(q[2]), push * jnp.sin(q[2]), -c * v[2]])

    hand = dl.NonholonomicSystem(builtin.mass_matrix, constraint_matrix=builtin.constraint_matrix, force=force)
    q0, v0 = np.array([0.1, -0.2, 0.3]), np.array([np.cos(0.3), np.sin(0.3), 0.8])
    runs = [dl.integrate(x, "nh-rattle", q0=q0, v0=v0, h=0.01, t_final=2.0, progress=False) for x in (s, hand)]
    assert np.max(np.abs(runs[0].q - runs[1].q)) <= 1e-12
    assert np.max(np.abs(runs[0].v - runs[1].v)) <= 1e-12
    drive = me.dynamicsymbols("F")
    controlled = dl.from_sympy(sleigh_with_loads(c, b, F0, w, drive=drive), controls=[drive])
    controlled = controlled.with_controls(lambda t: jnp.stack([F0 * jnp.cos(w * t)]))
    for q, v, t in zip(runs[0].q[::50], runs[0].v[::50], runs[0].t[::50]):
        with dl.clock.at(t, 0):
            np.testing.assert_allclose(np.asarray(controlled.force(q, v)), np.asarray(s.force(q, v)), rtol=0,
                                       atol=1e-15)
    e = np.asarray(runs[0].energy)
    assert np.max(np.abs(e - e[0])) > 0.1


def knife_on_incline():
    """A knife edge (x, y on an inclined plane, heading θ; u = q̇) with a gravity load −m g N.z:
    the uniform load becomes V = −m g sin(α) x. Returns (System, values, the plane's frame)."""
    x, y, th = me.dynamicsymbols("x y theta")
    t = me.dynamicsymbols._t
    m, J, g, al = sm.symbols("m J g alpha", positive=True)
    N = me.ReferenceFrame("N")
    P = N.orientnew("P", "Axis", [al, N.y])                     # the plane, tilted by α about N.y
    B = P.orientnew("B", "Axis", [th, P.z])
    O = me.Point("O")
    O.set_vel(N, 0)
    C = O.locatenew("C", x * P.x + y * P.y)
    C.set_vel(N, C.pos_from(O).dt(N))
    system = me.System(N, O)
    system.add_coordinates(x, y, th)
    system.add_speeds(*[c.diff(t) for c in (x, y, th)])
    system.add_bodies(me.RigidBody("knife", C, B, m, (me.inertia(B, 0, 0, J), C)))
    system.add_loads(me.Force(C, -m * g * N.z))
    system.add_nonholonomic_constraints(C.vel(N).dot(B.y))
    return system, {m: 2.0, J: 0.3, g: 9.81, al: 0.4}, P


def test_gravity_load_as_potential_keeps_energy_with_an_energy_conserving_method():
    """Only gravity acts: no force, V = −m g sin(α) x, and dg-gonzalez keeps the energy over t = 10
    to 1e-12 relative (measured 3.9e-14) while the potential alone changes by O(1) (the knife
    runs downhill: the energy is not trivially constant)."""
    system, values, plane = knife_on_incline()
    s = dl.from_sympy(system, values=values)
    assert not s.has_force
    q = jnp.array([0.3, -0.2, 0.7])
    np.testing.assert_allclose(float(s.potential(q)), -2.0 * 9.81 * np.sin(0.4) * 0.3, rtol=1e-14)
    q0, v0 = np.array([0.0, 0.0, 0.3]), np.array([np.cos(0.3), np.sin(0.3), 1.0])
    tr = dl.integrate(s, "dg-gonzalez", q0=q0, v0=v0, h=0.01, t_final=10.0, progress=False)
    e = np.asarray(tr.energy)
    assert np.max(np.abs(e - e[0])) <= 1e-12 * np.max(np.abs(e))
    V = np.asarray(jax.vmap(s.potential)(jnp.asarray(tr.q)))
    assert np.max(np.abs(V - V[0])) > 1.0


@pytest.mark.parametrize("case, match", [
    ("unknown point", "point Z of load 1 has no velocity in N"),
    ("unknown frame", "frame Z of load 1 is not oriented relative to N"),
    ("not a load", "load 1 .* is not a Force, a Torque or a"),
    ("not a vector", "load 1 on C is 3.0 .* not a Vector"),
    ("body in a tuple", "load 1 acts on knife .* neither a Point nor a ReferenceFrame"),
    ("foreign symbols", "the load has functions of time that are neither coordinates nor their rates: F.*controls="),
    ("unused control", "the controls G appear in no load"),
])
def test_bad_loads_get_one_line_errors(case, match):
    system, values, plane = knife_on_incline()
    N, (body,) = system.frame, system.bodies
    C = body.masscenter
    load = {"unknown point": (me.Point("Z"), N.x), "unknown frame": (me.ReferenceFrame("Z"), N.z),
            "not a load": (C, N.x, N.y), "not a vector": (C, 3.0), "body in a tuple": (body, N.x),
            "foreign symbols": (C, me.dynamicsymbols("F") * N.x), "unused control": (C, -C.vel(N))}[case]
    controls = [me.dynamicsymbols("G")] if case == "unused control" else []
    with pytest.raises(dl.InputError, match=match) as err:
        dl.from_sympy(system, values=values, loads=[load], controls=controls)   # load 1, after the gravity
    assert "\n" not in str(err.value)


@pytest.mark.full
def test_whipple_bicycle_with_its_gravity_loads(bicycle):
    """SymPy's bicycle as test_kane3 forms it, with its four gravity loads (constant in N, at the
    mass centres, the rolling built in): the loads become the potential the fixture passes as
    potential= (equal at random configurations, 1e-12 J; measured ~1e-13) and no force. In the
    full suite: the second bicycle import costs 3–4 s."""
    km, values, _ = whipple_bicycle(loads=True)
    s = dl.from_sympy(km, values=values)
    assert not s.has_force and s.coordinate_names == bicycle.coordinate_names
    for _ in range(3):
        q = jnp.asarray(RNG.uniform(-0.5, 0.5, 8))
        np.testing.assert_allclose(float(s.potential(q)), float(bicycle.potential(q)), rtol=0, atol=1e-12)


# --- PyDy's rattleback and the comparison of two models --------------------------------------

def _pydy_rattleback_module():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "data" / "pydy_rattleback.py"
    spec = importlib.util.spec_from_file_location("pydy_rattleback", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compare_models_sees_one_model_and_a_different_one():
    """tests/data/pydy_rattleback.compare_models (for the imports of the field's models against
    the built-in ones): the imported SymPy disc against the built-in tilting-disk, identity map —
    metric, potential, its gradient and the constraints' row spaces equal (≤ 1e-12; measured
    ≤ 2.5e-16); against a disk of another radius (negative control) all four differ (measured
    0.08–0.48)."""
    compare = _pydy_rattleback_module().compare_models
    lm, values = rolling_disc()
    s = dl.from_sympy(lm, values=values)
    qs = [RNG.uniform(-1.2, 1.2, 5) for _ in range(4)]
    same = compare(s, dl.models.get("tilting-disk").system, lambda q: q, qs)
    assert max(same.values()) <= 1e-12
    other = compare(s, dl.models.get("tilting-disk", r=0.6).system, lambda q: q, qs)
    assert min(other.values()) >= 1e-2


@pytest.mark.full
def test_pydy_rattleback_imports_with_its_loads():
    """PyDy's rattleback example (tests/data/pydy_rattleback.py: its KanesMethod with the gravity
    load and the friction torque −σω, the contact point in closed form): from_sympy completes the
    built-in rolling (S_x, S_y added, m = 2), gravity becomes the potential and the friction the
    force; its accelerations equal PyDy's Kane equations at random states to 1e-11 relative
    (measured 1.8e-12 over 20 states; against a 40-digit evaluation of Kane's equations the
    import is within 1.1e-13 and PyDy's float evaluation within 3e-15: the index-1 form's
    round-off, cond(G) ≈ 6e3). In the full suite: building PyDy's model and the import take about
    2 s of CPU each (5–12 s wall on the loaded 2-core machine)."""
    rb = _pydy_rattleback_module()
    kane, values, syms = rb.pydy_rattleback()
    s = dl.from_sympy(kane, values=values)
    assert s.coordinate_names == ("q1", "q2", "q3", "S_x", "S_y") and s.has_force and not s.has_holonomic
    reference = rb.kane_accelerations(kane, values, syms)
    acc = jax.jit(s.acceleration)
    rng = np.random.default_rng(0)
    for _ in range(6):
        q = np.concatenate([rng.uniform(-0.6, 0.6, 3), rng.uniform(-1, 1, 2)])
        qd = rng.uniform(-3, 3, 3)
        mu = np.asarray(s.constraint_matrix(jnp.asarray(q)))
        v = np.concatenate([qd, np.linalg.solve(mu[:, 3:], -mu[:, :3] @ qd)])
        a = acc(jnp.asarray(q), jnp.asarray(v))
        u, udot = jax.jvp(rb.body_rates, (jnp.asarray(q[:3]), jnp.asarray(qd)), (jnp.asarray(v[:3]), a[:3]))
        ref = reference(q[:3], np.asarray(u))
        assert np.max(np.abs(np.asarray(udot) - ref)) <= 1e-11 * np.max(np.abs(ref))


def test_system_actuators_are_loads():
    """A System's actuators give their loads (SymPy's System.form_eoms reads them so): a torque
    actuator −c θ̇ about the plane's normal on the knife edge, reacting on the plane, is the
    generalized force (0, 0, −c θ̇) beside the gravity potential."""
    system, values, plane = knife_on_incline()
    (body,) = system.bodies
    theta = system.q[2]
    c = 0.3
    system.add_actuators(me.TorqueActuator(-c * theta.diff(me.dynamicsymbols._t), plane.z, body.frame, plane))
    s = dl.from_sympy(system, values=values)
    q, v = jnp.array([0.3, -0.2, 0.7]), jnp.array([0.4, -0.1, 1.3])
    np.testing.assert_allclose(np.asarray(s.force(q, v)), [0.0, 0.0, -c * 1.3], rtol=0, atol=1e-15)


# --- the imported Whipple bicycle equals the built-in whipple-bicycle ---------------------------

#: SymPy's bicycle (test_kane3: x forward, z up, y to the left; the import's coordinates q1 yaw about
#: N.z, q2 roll about the yaw frame's x, q5 steer about the frame's x — the steer axis, pointing
#: forward and down —, q4 pitch about the roll frame's y, the rear contact WR_cont_x, WR_cont_y and
#: the wheel angles about the left-pointing axles) to the built-in model's (x, y, yaw, roll, pitch,
#: steer, rear_wheel, front_wheel) in Meijaard's axes (x forward, y right, z down): the change of
#: axes is the half turn about x, so angles about x (roll) and about the steer axis (the same
#: physical axis) keep their sign, angles about y and z (pitch, yaw, the wheels) and the y
#: coordinate change it.
_BIKE_ORDER = [4, 5, 0, 1, 3, 2, 6, 7]
_BIKE_SIGN = np.array([1.0, -1.0, -1.0, 1.0, -1.0, 1.0, -1.0, -1.0])


def _sympy_to_builtin(q, sign=_BIKE_SIGN):
    return jnp.asarray(sign) * q[jnp.asarray(_BIKE_ORDER)]


def _moore_to_builtin(q):
    """PyDy's bicycle (Moore's axes: x forward, y right, z down, as Meijaard's; coordinates q3 yaw,
    q4 roll, q7 steer, q5 pitch of the frame whose z axis is the steer axis — λ upright —, the rear
    contact dn_x, dn_y, the wheel angles about the right-pointing axles) to the built-in model's."""
    return jnp.stack([q[4], q[5], q[0], q[1], q[3] - np.pi / 10, q[2], q[6], q[7]])


def _bicycle_configurations(system, count, rng, pitch0=0.0):
    """Random configurations of an imported bicycle on φ = 0: the first three angles (yaw, roll,
    steer; |·| ≤ 0.6 rad), the rear contact (|·| ≤ 2 m) and the wheel angles (|·| ≤ 3 rad) at random,
    the pitch (coordinate 3) solved for from `pitch0` by Newton's method on the front contact's
    height (to round-off)."""
    height = jax.jit(lambda q: (system.holonomic(q)[0], system.holonomic_jacobian(q)[0, 3]))
    out = []
    for _ in range(count):
        q = np.concatenate([rng.uniform(-0.6, 0.6, 4), rng.uniform(-2, 2, 2), rng.uniform(-3, 3, 2)])
        q[3] = pitch0
        for _ in range(30):
            f, d = height(jnp.asarray(q))
            q[3] -= float(f) / float(d)
        out.append(q)
    return out


def _check_bicycle_equals_builtin(system, count, seed, to_builtin=_sympy_to_builtin, pitch0=0.0):
    """compare_models of the import against the built-in model at `count` configurations on φ = 0
    (coordinates mapped by `to_builtin`): metric and potential gradient (relative), potential up to
    a constant (relative to |V|), the rolling rows' row spaces (sine of the largest principal
    angle), and the configuration constraint — the built-in φ vanishes at the import's
    configurations (m) and the two Φ rows are parallel. Returns the measured values."""
    builtin = dl.models.get("whipple-bicycle").system
    qs = _bicycle_configurations(system, count, np.random.default_rng(seed), pitch0)
    out = _pydy_rattleback_module().compare_models(system, builtin, to_builtin, qs)
    scale = max(abs(float(builtin.potential(to_builtin(jnp.asarray(q))))) for q in qs)
    out["potential"] /= scale
    out["holonomic"] = out["holonomic_jacobian"] = 0.0
    for q in qs:
        qb = to_builtin(jnp.asarray(q))
        out["holonomic"] = max(out["holonomic"], abs(float(builtin.holonomic(qb)[0])))
        a = np.asarray(system.holonomic_jacobian(jnp.asarray(q)))[0]
        b = np.asarray(builtin.holonomic_jacobian(qb) @ jax.jacfwd(to_builtin)(jnp.asarray(q)))[0]
        a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
        out["holonomic_jacobian"] = max(out["holonomic_jacobian"], float(np.linalg.norm(a - np.sign(a @ b) * b)))
    return out


def test_sympy_whipple_bicycle_equals_the_builtin_model(bicycle):
    """SymPy's Whipple bicycle (test_kane3, imported and completed by from_sympy) is the built-in
    ``whipple-bicycle`` (written independently in JAX in Meijaard's axes), with the coordinates
    mapped as above, at 3 random configurations on the constraint: metric, potential gradient,
    potential (up to a constant), the rolling rows' row space, φ and the direction of Φ agree to
    1e-12 (measured: metric 1.9e-15, gradient 4.8e-15, potential 2.9e-16, rolling rows 4.0e-15,
    |φ| 2.8e-15 m, Φ 1.9e-15). Negative control: with the steer's sign flipped the metric differs
    by more than 1e-3. CPU time 6.7 s (mostly the built-in model's first evaluations) besides the
    module's bicycle fixture (3.0 s)."""
    got = _check_bicycle_equals_builtin(bicycle, 3, 5)
    assert max(got.values()) <= 1e-12, got
    q = _bicycle_configurations(bicycle, 1, np.random.default_rng(6))
    flipped = _BIKE_SIGN * np.array([1, 1, 1, 1, 1, -1, 1, 1])
    wrong = _pydy_rattleback_module().compare_models(
        bicycle, dl.models.get("whipple-bicycle").system, lambda x: _sympy_to_builtin(x, flipped), q)
    assert wrong["metric"] > 1e-3, wrong


@pytest.mark.full
def test_sympy_whipple_bicycle_with_gravity_loads_equals_the_builtin_model():
    """The same comparison for test_kane3's bicycle as it stands — Kane's equations formed with the
    gravity loads (kanes_equations(BL, FL)), which from_sympy turns into the potential — at 10
    configurations: all to 1e-12 (measured: metric 1.9e-15, gradient 5.0e-15, potential 7.2e-16,
    rolling rows 4.2e-15, |φ| 3.1e-15 m — test_kane3's geometry is evaluated to 15 digits —, Φ
    2.0e-15)."""
    km, values, _ = whipple_bicycle(loads=True)
    got = _check_bicycle_equals_builtin(dl.from_sympy(km, values=values), 10, 8)
    assert max(got.values()) <= 1e-12, got


def _pydy_bicycle_module():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "data" / "pydy_bicycle.py"
    spec = importlib.util.spec_from_file_location("pydy_bicycle", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.full
def test_pydy_carvallo_whipple_bicycle_equals_the_builtin_model():
    """PyDy's Carvallo–Whipple example (tests/data/pydy_bicycle.py: Moore's formulation with the
    benchmark converted to his parameters, gravity loads and three specified torques, built-in
    rolling from the rear contact) through from_sympy — completed to n = 8, k = 1, m = 4, the torques
    as controls — equals the built-in model at 10 configurations on φ = 0, to 1e-12 (measured:
    metric 8.3e-16, gradient 7.3e-16, potential 4.3e-16, rolling rows 1.6e-15, |φ| 2.8e-16 m, Φ
    5.3e-16). In the full suite: building PyDy's model and importing it take 3.5–3.7 s CPU."""
    system = _pydy_bicycle_module().import_bicycle()
    assert system.coordinate_names == ("q3", "q4", "q7", "q5", "dn_x", "dn_y", "angle_u6", "angle_u8")
    assert np.asarray(system.rolling_matrix(jnp.zeros(8))).shape == (4, 8)
    got = _check_bicycle_equals_builtin(system, 10, 9, _moore_to_builtin, np.pi / 10)
    assert max(got.values()) <= 1e-12, got


@pytest.mark.full
def test_pydy_carvallo_whipple_bicycle_accelerations_equal_pydys():
    """The PyDy bicycle's import, its three torques as controls, against PyDy's own Kane equations
    (mass_matrix_full ẋ = forcing_full, x = (q, u), evaluated numerically): at 4 random states on
    the constraints (φ = 0; roll, steer and rear-wheel rates random, the other rates from (Φ; μ))
    with random torques, dalembert's index-1 accelerations are PyDy's u̇ to 1e-12 relative (measured
    2.1e-14). The lambdify of PyDy's equations takes 6 s CPU."""
    kane, values, torques = _pydy_bicycle_module().pydy_bicycle()
    system = dl.from_sympy(kane, values=values, controls=torques)
    q, u, tsym = list(kane.q), list(kane.u), sm.symbols("T0:3")
    subs = {x: values[x.name] for x in kane.mass_matrix_full.free_symbols | kane.forcing_full.free_symbols
            if x.name in values}
    subs.update(dict(zip(torques, tsym)))
    M = sm.lambdify([q, u, tsym], kane.mass_matrix_full.xreplace(subs), "numpy", cse=True)
    F = sm.lambdify([q, u, tsym], kane.forcing_full.xreplace(subs), "numpy", cse=True)

    @jax.jit
    def acceleration(q, v, torque):
        with dl.clock.at(0.0, 0):
            return system.with_controls(lambda t: torque).acceleration(q, v)
    rng = np.random.default_rng(3)
    ind, dep = [1, 2, 6], [0, 3, 4, 5, 7]                      # roll, steer, rear wheel; the others
    worst = 0.0
    for x in _bicycle_configurations(system, 4, rng, np.pi / 10):
        torque = rng.uniform(-2, 2, 3)
        C = np.asarray(system.constraint_matrix(jnp.asarray(x)))
        v = np.zeros(8)
        v[ind] = rng.uniform(-2, 2, 3)
        v[dep] = np.linalg.solve(C[:, dep], -C[:, ind] @ v[ind])
        a = np.asarray(acceleration(jnp.asarray(x), jnp.asarray(v), jnp.asarray(torque)))
        # PyDy's order: q = (q3, q4, q7, q5), u = (u4, u6, u7, u3, u5, u8)
        order = [1, 6, 2, 0, 3, 7]
        ref = np.linalg.solve(M(x[:4], v[order], torque), np.asarray(F(x[:4], v[order], torque), float).ravel())[4:]
        worst = max(worst, float(np.max(np.abs(a[order] - ref)) / np.max(np.abs(ref))))
    assert worst <= 1e-12, worst
