"""Models from SymPy mechanics (``dl.from_sympy``): the imported rolling disc and Chaplygin sleigh
equal independently written JAX models (the built-in ``tilting-disk`` and ``chaplygin-sleigh``) to
round-off at random configurations; the imported disc integrates with second order against the
reference ODE with its constraints kept; bad models get errors that say what to do."""
from __future__ import annotations

import numpy as np
import pytest

sm = pytest.importorskip("sympy")
me = pytest.importorskip("sympy.physics.mechanics")

import jax.numpy as jnp  # noqa: E402

import dalembert as dl  # noqa: E402
from dalembert.convergence import fitted_order  # noqa: E402


def rolling_disc():
    """SymPy's rolling disc (yaw q1, lean q2, spin q3) with its contact point (q4, q5) and the two
    rolling constraints, as a LagrangesMethod."""
    q1, q2, q3, q4, q5 = me.dynamicsymbols("q1:6")
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
    disc.potential_energy = m * g * r * sm.cos(q2)
    slip = D.vel(N) + R.ang_vel_in(N).cross(-r * L.z)
    lm = me.LagrangesMethod(me.Lagrangian(N, disc), [q1, q2, q3, q4, q5],
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
    ("time", "depends on time"),
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
        L = T - sm.sin(t) * z
    elif case == "gyroscopic":
        L = T + y * x.diff(t)
    elif case == "not-quadratic":
        L = T + x.diff(t) ** 4
    with pytest.raises(dl.InputError, match=match):
        dl.from_sympy(lagrangian=L, coordinates=[x, y, z], constraints=cons, values=values)


def test_holonomic_constraints_of_a_lagranges_method_are_refused():
    x, y, z, t, T = _particle()
    lm = me.LagrangesMethod(T, [x, y, z], hol_coneqs=[x + y], nonhol_coneqs=[z.diff(t) - y * x.diff(t)])
    with pytest.raises(dl.InputError, match="holonomic"):
        dl.from_sympy(lm)


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
