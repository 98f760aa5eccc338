"""The reflection GNI of Ferraro–Iglesias–Martín de Diego 2008 (spec gni-2008-momentum-energy.md):
the Lie-group form on SO(3) (§2.2–§2.5, targets T18, T19, T21, T23, T24), and the reflection
form on R^n against the paper's closed forms (T3, T4)."""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.convergence import fitted_order
from dalembert.lie import so3
from dalembert.methods.lie_gni import (LieGNI, _traits, cayley_lagrangian, moser_veselov, moser_veselov_with,
                                       solve_right_momentum, trivialised_derivatives)
from dalembert.systems.lie_nonholonomic import LieNonholonomicSystem, reference_solution

B = jnp.array([1.0, 0.5, -0.3])
C = jnp.array([0.2, -0.4, 2.0])
RNG = np.random.default_rng(2008)


def noninvariant(inertia):
    return LieNonholonomicSystem(inertia, lambda R: (C + R @ B)[None, :], "noninvariant")


SYS_ID = noninvariant(np.eye(3))
SYS_123 = noninvariant(np.diag([1.0, 2.0, 3.0]))
SYS_RIGHT = LieNonholonomicSystem(np.eye(3), lambda R: (R.T @ B)[None, :], "right-invariant")


# not the identity: with R0 = I and 𝕀 = Id the free rotation satisfies A(R) = c + R b for all t
R0 = np.asarray(jax.jit(so3.exp)(jnp.array([0.4, -0.3, 0.8])))


def w0_of(system, w=(0.3, 1.0, -0.5)):
    return np.asarray(system.project(jnp.asarray(R0), jnp.asarray(w, jnp.float64)))


def run(system, method, n, h=0.05):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dl.integrate(system, method, R0=R0, omega0=w0_of(system), h=h, t_final=n * h)


def rel_range(e):
    return float(np.ptp(e) / abs(e[0]))


def random_rotation():
    return np.asarray(so3.exp(jnp.asarray(RNG.normal(size=3))))


# --- trivialised derivatives and the solver ----------------------------------------------------

@pytest.mark.parametrize("ld", [moser_veselov, cayley_lagrangian], ids=["mv", "cayley"])
def test_left_right_derivatives_related_by_coadjoint_T21(ld):
    parts = ld.build(np.diag([1.0, 2.0, 3.0]))
    dR_auto, dL_auto = trivialised_derivatives(parts["l_d"])
    dR, dL = parts.get("dR", dR_auto), parts.get("dL", dL_auto)
    h = 0.3
    f = jax.jit(jax.vmap(lambda W: (dR(W, h), dL(W, h), dR_auto(W, h), dL_auto(W, h))))
    Ws = jnp.asarray(np.stack([random_rotation() for _ in range(20)]))
    r, l, ra, la = (np.asarray(x) for x in f(Ws))
    np.testing.assert_allclose(l, np.einsum("kji,kj->ki", np.asarray(Ws), r), atol=1e-13)
    # closed forms (MV) agree with autodiff of l_d itself
    np.testing.assert_allclose(r, ra, atol=1e-13)
    np.testing.assert_allclose(l, la, atol=1e-13)


@pytest.mark.parametrize("ld", [moser_veselov, cayley_lagrangian], ids=["mv", "cayley"])
def test_cayley_coordinate_closed_forms_match_autodiff(ld):
    """The closed forms the step uses (dR_cay, its Jacobian, dL_cay) against autodiff of l_d."""
    I = np.array([[1.0, 0.1, 0.2], [0.1, 2.0, 0.1], [0.2, 0.1, 3.0]])
    parts = ld.build(I)
    dR_auto, dL_auto = trivialised_derivatives(parts["l_d"])
    h = 0.3
    ws = jnp.asarray(RNG.normal(size=(20, 3)))

    def both(w):
        auto = lambda v: dR_auto(so3.cayley(v), h)
        return (parts["dR_cay"](w, h), auto(w), parts["dR_cay_jac"](w, h), jax.jacfwd(auto)(w),
                parts["dL_cay"](w, h), dL_auto(so3.cayley(w), h))
    r, ra, j, ja, l, la = (np.asarray(x) for x in jax.jit(jax.vmap(both))(ws))
    np.testing.assert_allclose(r, ra, atol=1e-12)
    np.testing.assert_allclose(j, ja, atol=1e-11)
    np.testing.assert_allclose(l, la, atol=1e-12)


def test_mv_solver_matches_spherical_closed_form():
    """J_d = c·Id: W = exp(φ n̂) with sin φ · n = h μ / (2c) (spec §2.2)."""
    c, h = 0.7, 0.2
    ld = moser_veselov_with(c * np.eye(3))
    dR = ld.build(np.eye(3))["dR"]
    mu = jnp.array([0.4, -1.1, 2.0])
    W, ok, it = solve_right_momentum(dR, np.eye(3), mu, h)
    s = h * np.asarray(mu) / (2 * c)
    phi = np.arcsin(np.linalg.norm(s))
    W_exact = np.asarray(so3.exp(jnp.asarray(phi * s / np.linalg.norm(s))))
    assert bool(ok)
    np.testing.assert_allclose(np.asarray(W), W_exact, atol=1e-14)


# --- Theorem 1 and beyond ------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["lie-gni-mv", "lie-gni-cayley"])
def test_theorem1_energy_bi_invariant_metric_noninvariant_D_T18(method):
    tr = run(SYS_ID, method, 1000)
    # the constraint force is not trivial: the continuous multiplier at the start is not small
    assert abs(float(SYS_ID.multiplier(jnp.asarray(R0), jnp.asarray(w0_of(SYS_ID)))[0])) > 0.05
    assert rel_range(tr.energy_post) < 1e-12
    # the reflection is an isometry: ½|μ⁺|² = ½|μ⁻|² at every node
    mu_plus = 2 * tr.mu - tr.mu_minus
    np.testing.assert_allclose(0.5 * np.sum(mu_plus ** 2, axis=1), tr.energy_post, rtol=1e-13)


def test_moser_veselov_energy_any_inertia_T24_and_negative_controls_T23():
    assert rel_range(run(SYS_123, "lie-gni-mv", 1000).energy_post) < 1e-12
    assert rel_range(run(SYS_123, "lie-gni-cayley", 1000).energy_post) > 1e-4
    mism = LieGNI(name="mv-mismatched", traits=_traits(1, "T23"),
                  discrete_lagrangian=moser_veselov_with(np.diag([0.3, 0.7, 1.1])))
    assert rel_range(run(SYS_123, mism, 1000).energy_post) > 1e-2


def test_right_invariant_D_average_momentum_T19():
    tr = run(SYS_RIGHT, "lie-gni-mv", 1000)
    assert rel_range(tr.energy) < 1e-12                     # ½|μ̃_k|²
    sig = tr.spatial_momentum                               # R_k μ̃_k
    assert np.max(np.abs(sig - sig[0])) < 1e-12
    assert np.max(np.abs(tr.constraint_residual)) < 1e-13   # a(R_k)·ω_k = 0


def test_group_membership_after_1e4_steps_and_node_constraint():
    tr = run(SYS_123, "lie-gni-mv", 10_000, h=0.01)
    assert np.max(tr.orthogonality_defect) < 1e-12
    dets = np.linalg.det(tr.R)
    assert np.max(np.abs(dets - 1)) < 1e-12
    assert np.max(np.abs(tr.constraint_residual)) < 1e-13


# --- accuracy against an independent reference ---------------------------------------------------

@pytest.mark.parametrize("method", ["lie-gni-mv", "lie-gni-cayley"])
def test_order_two_against_reference_ode(method):
    T = 2.0
    w0 = w0_of(SYS_123)
    Rr, wr = reference_solution(SYS_123, R0, w0, np.array([0.0, T]))
    errs = []
    hs = [0.1, 0.05, 0.025]
    for h in hs:
        tr = dl.integrate(SYS_123, method, R0=R0, omega0=w0, h=h, t_final=T)
        errs.append(np.linalg.norm(tr.R[-1] - Rr[-1]) + np.linalg.norm(tr.omega[-1] - wr[-1]))
    p = fitted_order(hs, errs)
    assert 1.9 < p < 2.1, (errs, p)


def test_lie_gni_on_the_suslov_problem_is_second_order_against_the_exact_solution():
    from dalembert.models.suslov import exact_omega
    mdl = dl.models.get("suslov")
    st = mdl.initial_state
    errs, hs, T = [], [0.1, 0.05, 0.025], 5.0
    for h in hs:
        tr = dl.integrate(mdl.system, "lie-gni-mv", h=h, t_final=T, **st)
        errs.append(np.max(np.abs(tr.omega[-1] - exact_omega(np.array([T]))["omega"][-1])))
        assert np.max(np.abs(tr.constraint_residual)) < 1e-13
    p = fitted_order(hs, errs)
    assert 1.9 < p < 2.1, (errs, p)


def test_rejects_other_systems_and_bad_initial_state():
    with pytest.raises(dl.errors.InputError):
        dl.integrate(dl.models.get("nonholonomic-particle").system, "lie-gni-mv", R0=np.eye(3),
                     omega0=np.zeros(3), h=0.1, t_final=1.0)
    with pytest.raises(dl.errors.ConstraintViolationError):
        dl.integrate(SYS_123, "lie-gni-mv", R0=np.eye(3), omega0=np.array([1.0, 0.0, 0.0]), h=0.1, t_final=1.0)


# --- the reflection form on R^n (the foundation's GNI) against the paper's closed forms -------------

def p9_closed_form(q0, q1, n):
    """(P9) of the paper, iterated in NumPy: y2 = 2y1 − y0, B = 2(y1Δx0 − Δz0)/(1 + y1²),
    x2 − 2x1 + x0 = −y1 B, z2 − 2z1 + z0 = B."""
    q = [np.asarray(q0, float), np.asarray(q1, float)]
    for _ in range(n - 1):
        (x0, y0, z0), (x1, y1, z1) = q[-2], q[-1]
        Bk = 2 * (y1 * (x1 - x0) - (z1 - z0)) / (1 + y1 ** 2)
        q.append(np.array([2 * x1 - x0 - y1 * Bk, 2 * y1 - y0, 2 * z1 - z0 + Bk]))
    return np.array(q)


@pytest.mark.parametrize("method", ["nh-rattle", "gni-midpoint"])
def test_reflection_gni_equals_the_papers_closed_form_P9_T3(method):
    mdl = dl.models.get("nonholonomic-particle")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = dl.integrate(mdl.system, method, q0=[0.0, -2.0, 0.0], v0=[1.0, 1.0, -2.0], h=0.1, t_final=40.0)
    ref = p9_closed_form(tr.q[0], tr.q[1], len(tr.t) - 1)
    assert np.max(np.abs(tr.q - ref)) < 1e-13 * np.max(np.abs(ref))
    # energy ½|Δq_k/h|² exactly constant (T6) and the centred constraint at every node (T5)
    dq = np.diff(tr.q, axis=0) / 0.1
    E = 0.5 * np.sum(dq ** 2, axis=1)
    assert np.ptp(E) / E[0] < 1e-12
    centred = (tr.q[2:, 2] - tr.q[:-2, 2]) - tr.q[1:-1, 1] * (tr.q[2:, 0] - tr.q[:-2, 0])
    assert np.max(np.abs(centred)) < 1e-12


def test_multiplier_form_P5_equals_combined_form_on_the_sleigh_T4():
    """Example 3, first step from the printed (q0, q1), h = 1: (P5) solved as n + m equations gives
    the same q2 as the reflection; λ = 2C⁻¹μM⁻¹p⁺ = ∓0.0136638 (spec; sign of our μ is opposite)."""
    from dalembert.experiments.ferraro2008 import run_from_two_nodes
    from dalembert.methods import discrete_lagrangians as dls
    from dalembert.models.chaplygin_sleigh import ferraro2008_example3
    d = ferraro2008_example3()
    sysm = dl.models.get("chaplygin-sleigh", **d["params"]).system
    L_d = dls.midpoint.build(sysm)
    D1, D2 = jax.grad(L_d, 0), jax.grad(L_d, 1)
    q0, q1, h = jnp.asarray(d["q0"]), jnp.asarray(d["q1"]), 1.0
    mu = sysm.constraint_matrix(q1)
    G = sysm.mass_matrix(q1)

    def F(z):
        x, lam = z[:3], z[3:]
        return jnp.concatenate([D1(q1, x, h) + D2(q0, q1, h) - lam @ mu,
                                mu @ jnp.linalg.solve(G, D1(q1, x, h) - D2(q0, q1, h))])
    newton = jax.jit(lambda z: jax.lax.fori_loop(0, 30, lambda _, z: z - jnp.linalg.solve(jax.jacfwd(F)(z), F(z)), z))
    z = newton(jnp.concatenate([2 * q1 - q0, jnp.zeros(1)]))
    assert np.max(np.abs(F(z))) < 1e-14
    q_gni, _ = run_from_two_nodes(sysm, "gni-midpoint", d["q0"], d["q1"], h, 2)
    np.testing.assert_allclose(np.asarray(z[:3]), q_gni[2], atol=1e-12)
    pplus = D2(q0, q1, h)
    lam_formula = 2 * np.linalg.solve(mu @ np.linalg.solve(G, mu.T), mu @ np.linalg.solve(G, pplus))
    np.testing.assert_allclose(float(z[3]), float(lam_formula[0]), atol=1e-12)
    assert abs(abs(float(z[3])) - 0.0136638) < 5e-7


@pytest.mark.slow
def test_body_algorithm_equals_the_coordinate_gni_in_euler_angles_T20():
    """The Lie-group GNI (body form, §2.2) and the foundation's GNI on R³ (ZYX Euler angles q, metric
    Eᵀ𝕀E, constraint A(R(q))E, L_d(q0, q1) = l_d(R(q0)ᵀR(q1)), all derivatives by autodiff) give the
    same rotations R_k, started from the same (R0, ω0) with the same consistent start-up."""
    def Rz(a):
        c, s = jnp.cos(a), jnp.sin(a)
        return jnp.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])

    def Ry(a):
        c, s = jnp.cos(a), jnp.sin(a)
        return jnp.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])

    def Rx(a):
        c, s = jnp.cos(a), jnp.sin(a)
        return jnp.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])

    def rot(q):
        return Rz(q[0]) @ Ry(q[1]) @ Rx(q[2])

    def E(q):   # body angular velocity ω = E(q) q̇, q = (ψ, θ, φ)
        st, ct, sf, cf = jnp.sin(q[1]), jnp.cos(q[1]), jnp.sin(q[2]), jnp.cos(q[2])
        return jnp.array([[-st, 0.0, 1.0], [ct * sf, cf, 0.0], [ct * cf, -sf, 0.0]])

    qt = jnp.array([0.7, -0.4, 1.1])            # E against its definition vee(Rᵀ ∂R/∂q_i)
    dR = jax.jacfwd(rot)(qt)
    E_ad = jnp.stack([so3.vee(rot(qt).T @ dR[:, :, i]) for i in range(3)], axis=1)
    np.testing.assert_allclose(np.asarray(E(qt)), np.asarray(E_ad), atol=1e-15)

    I = jnp.asarray(SYS_123.inertia)
    coord = dl.NonholonomicSystem(mass_matrix=lambda q: E(q).T @ I @ E(q),
                                  constraint_matrix=lambda q: SYS_123.constraint_covectors(rot(q)) @ E(q),
                                  name="euler-angles")
    mv = moser_veselov.build(SYS_123.inertia)["l_d"]
    method = dl.methods.gni(lambda q0, q1, h: mv(rot(q0).T @ rot(q1), h), name="gni-euler-angles-mv")
    q0 = np.array([0.3, -0.2, 0.5])
    Rq0 = np.asarray(rot(jnp.asarray(q0)))
    w0 = np.asarray(SYS_123.project(jnp.asarray(Rq0), jnp.array([0.3, 1.0, -0.5])))
    v0 = np.linalg.solve(np.asarray(E(jnp.asarray(q0))), w0)
    h, T = 0.05, 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = dl.integrate(coord, method, q0=q0, v0=v0, h=h, t_final=T)
        b = dl.integrate(SYS_123, "lie-gni-mv", R0=Rq0, omega0=w0, h=h, t_final=T)
    Ra = np.asarray(jax.vmap(rot)(jnp.asarray(a.q)))
    assert np.max(np.abs(Ra - b.R)) < 1e-11
    # the multipliers agree too (the same constraint force, in two coordinate systems)
    np.testing.assert_allclose(a.lam[:, 0], b.lam[:, 0], atol=1e-9)
