"""ReducedSystem (R^n × SO(3), trivialised velocities) and the reduced GNI methods: the continuous
equations, construction and input errors, the engine path, and exact properties of the schemes
(R10 averaged-momentum constraint, R16 RATTLE (37) ≡ projector form (30), left vs right
trivialization for a bi-invariant metric, start-up by the involution).

Spec: shared/papers/gni-2015-new-developments.md §2.5–§2.11, §5.5 (P3), §6 (R10, R16), §7 errata 6–12.
"""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.convergence import fitted_order
from dalembert.errors import ConstraintViolationError, ConvergenceError, InputError, SystemDefinitionError
from dalembert.lie import so3
from dalembert.monitors import ParasiticModeWarning
from dalembert.methods.reduced_gni import sv_discrete_lagrangian
from dalembert.models.test_problems import p3_metric
from dalembert.systems.index1_ode import reference_solution as index1_reference
from dalembert.systems.reduced import reference_solution


def p3(a=0.0):
    return dl.models.get("p3-reduced", nu_amplitude=a)


def run(model_or_system, method, h, t_final, state=None, **opts):
    system = getattr(model_or_system, "system", model_or_system)
    state = state if state is not None else model_or_system.initial_state
    return dl.integrate(system, method, h=h, t_final=t_final, **state, **opts)


def rotation(seed=0):
    w = np.random.default_rng(seed).normal(size=3)
    return np.asarray(so3.exp(jnp.asarray(w)))


# --- the continuous model -------------------------------------------------------------------------

def test_constructor_infers_dimensions_and_exports():
    s = p3().system
    assert isinstance(s, dl.ReducedSystem)
    assert (s.n, s.m, s.dim, s.trivialization) == (2, 1, 5, "left")
    assert s.state_names == ("x0", "R0", "xdot0", "xi0")
    assert not s.affine and p3(0.3).system.affine
    # shape_dim from a constant constraint matrix when the metric is a callable
    G = jnp.asarray(p3_metric())
    s2 = dl.ReducedSystem(lambda x: G, np.array([1.0, 0, 0, 0, 0]))
    assert (s2.n, s2.m) == (2, 1) and not s2.constant_metric


def test_free_rigid_body_part_is_euler():
    """Block-diagonal metric, constraint on x only: the group part is Euler's equations
    𝕀ξ̇ = (𝕀ξ) × ξ (left) and 𝕀ξ̇ = ξ × (𝕀ξ) (right, spatial)."""
    I = np.array([1.0, 2.0, 3.5])
    G = np.diag(np.concatenate([[2.0, 1.0], I]))
    xi = np.array([0.3, -0.7, 0.4])
    for triv, sign in (("left", 1.0), ("right", -1.0)):
        s = dl.ReducedSystem(G, [1.0, 0, 0, 0, 0], potential=lambda x: 0.5 * jnp.sum(x * x), trivialization=triv)
        a = np.asarray(s.acceleration(jnp.array([0.1, 0.2]), jnp.eye(3), jnp.array([0.0, 0.5]), jnp.asarray(xi)))
        np.testing.assert_allclose(a[2:], sign * np.cross(I * xi, xi) / I, atol=1e-14)
        assert abs(a[0]) < 1e-14 and abs(a[1] + 0.2) < 1e-14   # ẍ1 = 0 (constrained), ẍ2 = −V_x2


def test_multiplier_keeps_the_constraint_along_the_flow():
    """d/dt(μ̃u − ν̃) = 0 along the index-1 vector field (x-, R-dependent and affine constraints)."""
    A = jnp.asarray(np.random.default_rng(1).normal(size=(3,)))
    s = dl.ReducedSystem(p3_metric(), lambda x, R: jnp.concatenate([jnp.array([1.0, jnp.sin(x[0])]),
                                                                      linalg_mv(R, A)])[None, :],
                         potential=lambda x: jnp.cos(x[0]) + x[1] ** 2,
                         constraint_rhs=lambda x, R: jnp.array([0.3 * x[1] + R[0, 1]]))
    x, R = jnp.array([0.2, -0.4]), jnp.asarray(rotation(2))
    xd, xi = s.project(x, R, jnp.array([0.3, 0.1]), jnp.array([0.2, -0.5, 0.7]))
    xdot, Rdot, xdd, xid = s.vector_field(x, R, xd, xi)
    d = jax.jvp(lambda *a: s.constraint_residual(*a), (x, R, xd, xi), (xdot, Rdot, xdd, xid))[1]
    assert np.max(np.abs(np.asarray(d))) < 1e-13
    assert np.max(np.abs(np.asarray(s.constraint_residual(x, R, xd, xi)))) < 1e-14


def linalg_mv(R, a):
    return jnp.sum(R * a[None, :], axis=-1)


def test_reference_conserves_energy_and_constraint_on_p3():
    m = p3()
    t = np.linspace(0.0, 4.0, 9)
    r = reference_solution(m.system, *m.initial_state.values(), t)
    E = [float(m.system.energy(x, xd, xi)) for x, xd, xi in zip(r["x"], r["xdot"], r["xi"])]
    assert np.ptp(E) < 1e-11
    res = [float(m.system.constraint_residual(x, R, xd, xi)[0]) for x, R, xd, xi in
           zip(r["x"], r["R"], r["xdot"], r["xi"])]
    assert np.max(np.abs(res)) < 1e-11
    assert np.max([np.linalg.norm(np.eye(3) - R.T @ R) for R in r["R"]]) < 1e-11


def bi_invariant_pair(R0):
    """The same mechanical system written left (constraint in ω = Rξ) and right (constant in ω)."""
    G = np.diag([2.0, 1.0, 0.7, 0.7, 0.7])

    def V(x):
        return 0.5 * jnp.sum(x * x) + 0.1 * x[0] ** 3

    def mu_spatial(x):
        return jnp.stack([jnp.array([1.0, 0.0, 0.0, -0.7, jnp.sin(x[1])]),
                          jnp.array([0.0, 1.0, 0.4, 0.0, 0.2])])

    def mu_left(x, R):
        M = mu_spatial(x)
        return jnp.concatenate([M[:, :2], jnp.sum(M[:, 2:, None] * R[None, :, :], axis=1)], axis=1)

    nu = lambda x, R: jnp.array([0.2 * jnp.cos(x[0]), 0.0])  # noqa: E731
    left = dl.ReducedSystem(G, mu_left, potential=V, constraint_rhs=nu, shape_dim=2, trivialization="left")
    right = dl.ReducedSystem(G, lambda x, R: mu_spatial(x), potential=V, constraint_rhs=nu, shape_dim=2,
                             trivialization="right")
    x0 = np.array([0.3, -0.5])
    omega0 = np.array([0.4, 0.2, -0.3])
    xdot0 = np.array([0.7 * omega0[1] - np.sin(x0[1]) * omega0[2] + 0.2 * np.cos(x0[0]),
                      -0.4 * omega0[0] - 0.2 * omega0[2]])
    return left, right, (x0, R0, xdot0, R0.T @ omega0), (x0, R0, xdot0, omega0)


def test_left_and_right_trivializations_agree_for_bi_invariant_metric():
    R0 = rotation(3)
    left, right, sl, sr = bi_invariant_pair(R0)
    names = ("x0", "R0", "xdot0", "xi0")
    for method in ("reduced-gni", "reduced-rattle"):
        a = dl.integrate(left, method, h=0.05, t_final=3.0, **dict(zip(names, sl)))
        b = dl.integrate(right, method, h=0.05, t_final=3.0, **dict(zip(names, sr)))
        assert np.max(np.abs(a.x - b.x)) < 1e-12
        assert np.max(np.abs(a.R - b.R)) < 1e-12
        assert np.max(np.abs(a.omega - b.omega)) < 1e-12
        assert np.max(np.abs(a.energy - b.energy)) < 1e-12
    # the continuous references (Ṙ = Rξ̂ vs ξ̂R, ṁ = m×ξ vs ξ×m) agree as well
    t = np.linspace(0, 3.0, 7)
    ra, rb = reference_solution(left, *sl, t), reference_solution(right, *sr, t)
    np.testing.assert_allclose(ra["x"], rb["x"], atol=1e-10)
    np.testing.assert_allclose(ra["omega"], rb["omega"], atol=1e-10)
    np.testing.assert_allclose(ra["R"], rb["R"], atol=1e-10)


# --- construction and input errors ------------------------------------------------------------------

def test_bad_systems():
    G = p3_metric()
    mu = np.array([1.0, 0, 0, -0.7, 0.3])
    bad = G.copy()
    bad[4, 4] = -1.0
    with pytest.raises(SystemDefinitionError, match="positive definite"):
        dl.ReducedSystem(bad, mu)
    ns = G.copy()
    ns[0, 1] = 0.5
    with pytest.raises(SystemDefinitionError, match="not symmetric"):
        dl.ReducedSystem(ns, mu)
    with pytest.raises(SystemDefinitionError, match="metric"):
        dl.ReducedSystem(lambda x: jnp.eye(4), mu)
    with pytest.raises(SystemDefinitionError, match="constraint_matrix"):
        dl.ReducedSystem(G, lambda x, R: jnp.ones((1, 4)))
    with pytest.raises(SystemDefinitionError, match="constraint_matrix"):
        dl.ReducedSystem(G, lambda x, R: undefined_name)  # noqa: F821
    with pytest.raises(SystemDefinitionError, match="rank deficient"):
        dl.ReducedSystem(G, np.stack([mu, 2 * mu]))
    with pytest.raises(SystemDefinitionError, match="potential"):
        dl.ReducedSystem(G, mu, potential=lambda x: x)
    with pytest.raises(SystemDefinitionError, match="constraint_rhs"):
        dl.ReducedSystem(G, mu, constraint_rhs=lambda x, R: jnp.zeros(2))
    with pytest.raises(SystemDefinitionError, match="trivialization"):
        dl.ReducedSystem(G, mu, trivialization="body")
    with pytest.raises(SystemDefinitionError, match="shape_dim"):
        dl.ReducedSystem(lambda x: jnp.asarray(G), lambda x, R: jnp.asarray(mu)[None])


def test_bad_initial_states():
    m = p3()
    st = dict(m.initial_state)
    R = st["R0"].copy()
    R[0, 0] = 1.01
    with pytest.raises(InputError, match="not a rotation"):
        run(m, "reduced-gni", 0.1, 1.0, state=dict(st, R0=R))
    with pytest.raises(InputError, match="R0"):
        run(m, "reduced-gni", 0.1, 1.0, state=dict(st, R0=np.eye(2)))
    with pytest.raises(ConstraintViolationError) as exc:
        run(m, "reduced-gni", 0.1, 1.0, state=dict(st, xdot0=np.array([0.5, 0.6])))
    assert abs(exc.value.residual[0] - (0.5 - st["xdot0"][0])) < 1e-14
    tr = run(m, "reduced-gni", 0.1, 1.0, state=dict(st, xdot0=np.array([0.5, 0.6])), project=True)
    assert np.max(np.abs(tr.constraint_residual)) < 1e-14
    for h in (0.0, -0.1, np.nan):
        with pytest.raises(InputError):
            run(m, "reduced-gni", h, 1.0)
    with pytest.raises(InputError, match="startup"):
        run(m, "reduced-gni", 0.1, 1.0, startup="euler")
    with pytest.raises(dl.UnknownNameError, match="retraction"):
        run(m, "reduced-gni", 0.1, 1.0, retraction="quaternion")


def test_methods_refuse_the_wrong_system():
    m = p3()
    G = jnp.asarray(p3_metric())
    sx = dl.ReducedSystem(lambda x: G * (1.0 + 0.1 * x[0] ** 2), np.array([1.0, 0, 0, -0.7, 0.2]))
    with pytest.raises(InputError, match="does not accept systems with configuration-dependent metric.*reduced-gni"):
        dl.integrate(sx, "reduced-rattle", h=0.1, t_final=1.0, x0=np.zeros(2), R0=np.eye(3),
                     xdot0=np.array([0.14, 0.0]), xi0=np.array([0.0, 0.2, 0.0]))
    right = dl.ReducedSystem(p3_metric(), np.array([1.0, 0, 0, -0.7, 0.2]), trivialization="right")
    with pytest.raises(InputError, match="does not accept systems with right trivialisation.*reduced-gni"):
        dl.integrate(right, "lie-gni", h=0.1, t_final=1.0, x0=np.zeros(2), R0=np.eye(3),
                     xdot0=np.array([0.14, 0.0]), xi0=np.array([0.0, 0.2, 0.0]))
    p1 = dl.models.get("p1-linear")
    with pytest.raises(InputError, match="integrates reduced systems; 'p1-linear' is a nonholonomic"):
        dl.integrate(p1.system, "reduced-gni", h=0.1, t_final=1.0, q0=p1.q0, v0=p1.v0)
    # the engine's 'reference' method runs a ReducedSystem through its DOP853 reference_solution
    tr = run(m, "reference", 0.1, 1.0)
    assert tr.x.shape == (11, 2) and tr.R.shape == (11, 3, 3)
    assert np.abs(tr.constraint_residual).max() <= 1e-10


def test_newton_failure_at_huge_h_keeps_the_partial_trajectory():
    m = p3()
    with pytest.raises(ConvergenceError) as exc:
        run(m, "reduced-gni", 10.0, 200.0)
    e = exc.value
    assert e.step >= 1 and e.time == e.step * 10.0
    assert "step" in str(e) and e.trajectory is not None
    assert len(e.trajectory.t) == e.step + 1 and np.all(np.isfinite(e.trajectory.x))


# --- the engine path and exact properties of the schemes ------------------------------------------------

def test_integrate_through_the_engine():
    m = p3()
    tr = run(m, "reduced-gni", 0.05, 1.0)
    N = 21
    assert tr.t.shape == (N,)
    assert tr.x.shape == (N, 2) and tr.R.shape == (N, 3, 3) and tr.xi.shape == (N, 3)
    assert tr.xdot.shape == (N, 2) and tr.omega.shape == (N, 3)
    assert tr.energy.shape == (N,) and tr.constraint_residual.shape == (N, 1)
    np.testing.assert_allclose(tr.x[0], m.initial_state["x0"])
    np.testing.assert_allclose(tr.xi[0], m.initial_state["xi0"], atol=1e-15)   # Legendre start-up
    np.testing.assert_allclose(tr.omega, np.einsum("kij,kj->ki", tr.R, tr.xi), atol=1e-15)
    assert tr.metadata["method"] == "reduced-gni" and tr.metadata["traits"]["order"] == 2
    assert tr.metadata["newton"]["max_iterations"] <= 6
    assert "lie-gni" in dl.methods.available() and "reduced-rattle" in dl.methods.available()


@pytest.mark.parametrize("a", [0.0, 0.3])
@pytest.mark.parametrize("method", ["reduced-gni", "reduced-rattle"])
def test_R10_averaged_momentum_constraint_exact(a, method):
    tr = run(p3(a), method, 0.1, 8.0)
    assert np.max(np.abs(tr.constraint_residual)) <= 1e-12
    assert np.max(tr.orthogonality_defect) <= 1e-12


def _numpy_rattle_37(system, state, h, n_steps, lam0):
    """Algorithm (37) of Ferraro et al. 2015 §7.2 (left trivialization, Cayley, constant metric, the
    SV-type l_d) written out in NumPy, with SciPy's fsolve for ξ: shares no solve with the library.
    λ̃_0 = −lam0 (0: the Legendre start-up). Returns the node arrays x, R, xdot, xi."""
    from scipy.optimize import fsolve
    n = system.n
    G = np.asarray(system.metric_matrix)
    Gxx, Gxg, Ggx, Ggg = G[:n, :n], G[:n, n:], G[n:, :n], G[n:, n:]

    def hat(w):
        return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])

    def cay(w):
        return np.linalg.solve(np.eye(3) - hat(w) / 2, np.eye(3) + hat(w) / 2)

    def dcay_inv(w):
        return np.eye(3) - hat(w) / 2 + np.outer(w, w) / 4

    def mu(x, R):
        return np.asarray(system.constraint_matrix(x, R))

    def nu(x, R):
        return np.asarray(system.constraint_rhs(x, R))

    def Vx(x):
        return np.asarray(system.potential_gradient(x))

    def solve_xi(x, pt, lt, M):
        p_next = pt - 0.5 * h * (Vx(x) + mu(x, np.eye(3))[:, :n].T @ lt)      # μ's x-part does not use R

        def F(xi):
            dx = np.linalg.solve(Gxx, p_next - Gxg @ xi)                       # Δx/h
            return dcay_inv(h * xi).T @ (Ggx @ dx + Ggg @ xi) - M
        return fsolve(F, np.linalg.solve(Ggg, M), xtol=1e-13)

    x, R = np.asarray(state["x0"], float), np.asarray(state["R0"], float)
    p0 = G @ np.concatenate([state["xdot0"], state["xi0"]])
    lt = -np.asarray(lam0, float)
    M = p0[n:] - 0.5 * h * mu(x, R)[:, n:].T @ lt
    pt = p0[:n]
    xi = solve_xi(x, pt, lt, M)
    out = {k: [] for k in ("x", "R", "xdot", "xi")}
    for k in range(n_steps + 1):
        pbar = np.concatenate([pt, M + 0.5 * h * mu(x, R)[:, n:].T @ lt])
        u = np.linalg.solve(G, pbar)
        for key, val in (("x", x), ("R", R), ("xdot", u[:n]), ("xi", u[n:])):
            out[key].append(val)
        if k == n_steps:
            break
        mx = mu(x, R)
        p_half = pt - 0.5 * h * (Vx(x) + mx[:, :n].T @ lt)                     # (37a)
        x1 = x + h * np.linalg.solve(Gxx, p_half - Gxg @ xi)                    # (37c)
        W = cay(h * xi)
        R1 = R @ W
        Mp = W.T @ M
        g1 = Vx(x1)
        m1 = mu(x1, R1)
        fl_plus = np.concatenate([p_half - 0.5 * h * g1, Mp])
        C = m1 @ np.linalg.solve(G, m1.T)
        lt = (2.0 / h) * np.linalg.solve(C, m1 @ np.linalg.solve(G, fl_plus) - nu(x1, R1))   # (37d)
        pt = p_half - 0.5 * h * (g1 + m1[:, :n].T @ lt)                           # (37e)
        M = Mp - h * m1[:, n:].T @ lt                                              # (37b+f)
        x, R = x1, R1
        xi = solve_xi(x, pt, lt, M)
    return {k: np.array(v) for k, v in out.items()}


@pytest.mark.parametrize("a", [0.0, 0.3])
@pytest.mark.parametrize("startup", ["legendre", "consistent"])
def test_R16_rattle_reproduces_projector_form(a, startup):
    """R16: RATTLE (37), written out independently in NumPy/SciPy (no solve shared with the library),
    equals the projector form (30) (``reduced-gni``) and the library's ``reduced-rattle`` along whole
    trajectories."""
    m = p3(a)
    st = m.initial_state
    lam0 = (np.asarray(m.system.multiplier(st["x0"], st["R0"], st["xdot0"], st["xi0"]))
            if startup == "consistent" else np.zeros(m.system.m))
    for h in (0.1, 0.025):
        g = run(m, "reduced-gni", h, 4.0, startup=startup)
        r = run(m, "reduced-rattle", h, 4.0, startup=startup)
        ref = _numpy_rattle_37(m.system, st, h, int(round(4.0 / h)), lam0) if h == 0.1 else None
        for name in ("x", "R", "xdot", "xi"):
            if ref is not None:
                assert np.max(np.abs(getattr(g, name) - ref[name])) <= 1e-11, (name, h)
            assert np.max(np.abs(getattr(g, name) - getattr(r, name))) <= 1e-12, (name, h)


def test_user_discrete_lagrangian_matches_the_fast_path():
    """The default l_d passed as a user callable (autodiff, Newton in (x_{k+1}, ξ_k)) gives the
    closed-form fast path's trajectory; an x-dependent metric runs the general path."""
    m = p3(0.3)
    ld = sv_discrete_lagrangian(m.system)
    a = run(m, "reduced-gni", 0.05, 2.0)
    b = run(m, "reduced-gni", 0.05, 2.0, discrete_lagrangian=ld)
    assert np.max(np.abs(a.x - b.x)) < 1e-12 and np.max(np.abs(a.R - b.R)) < 1e-12


@pytest.mark.parametrize("startup", ["two-point", "second-point"])
def test_startup_by_involution_reproduces_the_second_point(startup):
    """The first step from FL⁺_0 = (P−Q)*(FL⁻_0 − 2μ̃ᵀC̃⁻¹ν̃) lands on the prescribed (x_1, ξ_0)."""
    m = p3(0.3)
    st = m.initial_state
    h = 0.1
    if startup == "two-point":
        x1, xi0 = st["x0"] + h * st["xdot0"], st["xi0"]
        opt = "two-point"
    else:
        x1, xi0 = st["x0"] + np.array([0.01, 0.07]), np.array([0.35, 0.25, -0.2])
        opt = ("second-point", tuple(x1), tuple(xi0))
    tr = run(m, "reduced-gni", h, 2 * h, startup=opt)
    np.testing.assert_allclose(tr.x[1], x1, atol=1e-14)
    np.testing.assert_allclose(tr.R[1], st["R0"] @ np.asarray(so3.cayley(jnp.asarray(h * np.asarray(xi0)))),
                               atol=1e-14)
    assert np.max(np.abs(tr.constraint_residual)) < 1e-13


def test_lie_gni_is_reduced_gni_restricted_to_left():
    m = p3(0.3)
    a = run(m, "reduced-gni", 0.1, 2.0)
    b = run(m, "lie-gni", 0.1, 2.0)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.R, b.R)
    assert dl.Invariant.REGULAR_CHART in dl.methods.available()["lie-gni"].invariants()


@pytest.mark.parametrize("method", ["reduced-gni", "reduced-rattle"])
def test_reported_multiplier_is_the_continuous_one(method):
    """With the consistent start-up, lam_k ≈ λ(x_k, R_k, u_k) of the index-1 equations (O(h²))."""
    m = p3(0.3)
    tr = run(m, method, 0.01, 2.0, startup="consistent")
    lam = np.asarray(jax.vmap(m.system.multiplier)(tr.x, tr.R, tr.xdot, tr.xi))
    assert np.max(np.abs(tr.lam - lam)) < 1e-4 * np.max(np.abs(lam))


# --- a metric and a potential that depend on R (the left-trivialised unreduced system) -----------
def test_left_gradient_is_the_derivative_along_R_exp():
    """The left-trivialised gradient on SO(3) (the group interface's left_gradient, which the
    ReducedSystem equations and the GNI's FL⁻ use) against central differences of f(R exp(εη̂))."""
    rng = np.random.default_rng(3)
    R = np.asarray(so3.exp(jnp.asarray(rng.normal(size=3))))
    A = jnp.asarray(rng.normal(size=(3, 3)))

    def f(S):
        return jnp.sum(A * S) ** 2 + jnp.sin(S[2, 1])

    grad = np.asarray(dl.lie.SO(3).left_gradient(f, jnp.asarray(R)))
    eps = 1e-6
    fd = [(f(R @ so3.exp(eps * e)) - f(R @ so3.exp(-eps * e))) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(grad, fd, rtol=1e-8, atol=1e-9)


def test_group_dependence_is_read_from_the_signature_and_checked():
    """metric(x, R) and potential(x, R) are recognised; the right trivialization, reduced-rattle,
    a four-argument discrete Lagrangian and an energy without R are refused with messages."""
    G = np.diag([1.0, 2.0, 3.0, 4.0])
    mu = np.array([[1.0, 0.0, 0.0, 0.5]])
    pot = lambda x, R: R[2, 2] + x[0] ** 2                       # noqa: E731
    s = dl.ReducedSystem(lambda x, R: jnp.asarray(G) * (2.0 + R[0, 0]), mu, potential=pot)
    assert s.group_metric and s.group_potential and s.group_dependent and s.n == 1
    plain = dl.ReducedSystem(lambda x: jnp.asarray(G), mu, potential=lambda x: x[0] ** 2, shape_dim=1)
    assert not plain.group_dependent
    with pytest.raises(SystemDefinitionError, match="trivialization='left'"):
        dl.ReducedSystem(G, mu, potential=pot, trivialization="right")
    with pytest.raises(InputError, match="depends on R; pass R"):
        s.energy(np.zeros(1), np.zeros(1), np.zeros(3))
    state = dict(x0=np.zeros(1), R0=np.eye(3), xdot0=np.zeros(1), xi0=np.array([1.0, 0.0, 0.0]))
    with pytest.raises(InputError, match="reduced-gni"):
        dl.integrate(dl.ReducedSystem(G, mu, potential=pot), "reduced-rattle", h=0.1, t_final=0.2, **state)
    with pytest.raises(InputError, match=r"\(x0, x1, R0, sigma, h\)"):
        dl.integrate(s, "lie-gni", h=0.1, t_final=0.2, discrete_lagrangian=lambda a, b, c, h: 0.0, **state)


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_tilting_disk_on_so3_equals_the_euler_angle_disk():
    """Two independent formulations of the tilting disk: on R² × SO(3) with G̃(R), V(R) and the
    ∇_R l term of the left-trivialised equations, and in Euler angles (NonholonomicSystem). From a
    state off the default (other parameters, lean, lean rate), the energies agree and both
    reference solutions (DOP853, 1e-13) agree on R and the centre to 1e-9 over t ∈ [0, 2]; the
    Lie-group GNI on the R² × SO(3) form converges to them at order 2 with the constraint kept."""
    from dalembert.models import tilting_disk as td
    p = {"m": 1.3, "r": 0.4, "g": 9.81}
    euler = dl.models.factory("tilting-disk")(p)
    group = dl.models.factory("tilting-disk-so3")(p)
    q0 = np.array([0.3, 0.5, 0.2, 0.1, -0.2])
    v0 = td.initial_velocity(euler, q0, -0.4, 0.3, 7.0)
    state = td.group_state(p, q0, v0)
    assert group.energy(state["x0"], state["xdot0"], state["xi0"], state["R0"]) == pytest.approx(
        float(euler.energy(q0, v0)), rel=1e-14)
    t = np.linspace(0.0, 2.0, 5)
    ref = group.reference_solution(**state, t=t)
    q, _, _ = index1_reference(euler, q0, v0, t)
    R_euler = np.array([np.asarray(td.euler_rotation(jnp.asarray(a))) for a in q])
    x_euler = np.array([np.asarray(td.centre(jnp.asarray(a), p["r"])) for a in q])
    assert np.max(np.abs(ref["R"] - R_euler)) < 1e-9 and np.max(np.abs(ref["x"] - x_euler)) < 1e-9
    errors = []
    for h in (0.02, 0.01, 0.005):
        tr = dl.integrate(group, "lie-gni", h=h, t_final=2.0, save_every=int(round(0.5 / h)), **state)
        assert tr.max_constraint_residual < 1e-13
        errors.append(max(np.max(np.abs(tr.R[-1] - R_euler[-1])), np.max(np.abs(tr.x[-1] - x_euler[-1]))))
    slope = fitted_order([0.02, 0.01, 0.005], errors)
    assert abs(slope - 2.0) < 0.15, (errors, slope)


# --- another group: the Chaplygin sleigh on SE(2) -------------------------------------------------
def test_chaplygin_sleigh_on_se2_with_lie_gni():
    """The sleigh as a left-invariant system on SE(2) alone (n = 0; ξ = (v1, v2, ω) body, metric
    [[m, 0, 0], [0, m, ma], [0, ma, J + ma²]], constraint v2 = 0) integrated by lie-gni converges at
    order 2 to the canonical-coordinate model's exact solution (contact point and heading), from a
    state off the default; the constraint holds to round-off and g_k stays in SE(2)."""
    m, a, J = 1.0, 0.5, 1.0
    G = np.array([[m, 0.0, 0.0], [0.0, m, m * a], [0.0, m * a, J + m * a * a]])
    sleigh = dl.ReducedSystem(G, np.array([[0.0, 1.0, 0.0]]), group=dl.lie.SE(2), name="sleigh-se2")
    assert sleigh.n == 0 and sleigh.group_dim == 3
    model = dl.models.get("chaplygin-sleigh", m=m, a=a, J=J)
    th0, v, w = 0.3, 0.8, 1.5
    q0 = np.array([0.2, -0.1, th0])
    v0 = np.array([v * np.cos(th0), v * np.sin(th0), w])
    g0 = np.array([[np.cos(th0), -np.sin(th0), q0[0]], [np.sin(th0), np.cos(th0), q0[1]], [0.0, 0.0, 1.0]])
    state = dict(x0=np.zeros(0), R0=g0, xdot0=np.zeros(0), xi0=np.array([v, 0.0, w]))
    hs, errors = [0.05, 0.025, 0.0125], []
    for h in hs:
        # the reflection scheme's parasitic mode on the sleigh (the attracting regime, FIMdD 2008 §7.1)
        # starts growing near t = 5.5 at h = 0.05: the monitor reports it on SE(2) as on R³
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ParasiticModeWarning)
            tr = dl.integrate(sleigh, "lie-gni", h=h, t_final=10.0, save_every=int(round(0.5 / h)), **state)
        if h == 0.05:
            assert any(issubclass(w.category, ParasiticModeWarning) for w in caught)
        q, _ = model.exact_solution(tr.t, q0, v0)
        heading = np.unwrap(np.arctan2(tr.R[:, 1, 0], tr.R[:, 0, 0]))
        errors.append(max(np.max(np.abs(tr.R[:, :2, 2] - q[:, :2])), np.max(np.abs(heading - q[:, 2]))))
        assert tr.max_constraint_residual < 1e-14 and np.max(tr.extra["orthogonality_defect"]) < 1e-13
    assert abs(fitted_order(hs, errors) - 2.0) < 0.2, errors
    with pytest.raises(InputError, match="SO\\(3\\)"):
        dl.integrate(sleigh, "reduced-rattle", h=0.1, t_final=0.2, **state)


def test_generalized_suslov_problem_on_so4():
    """The generalized Suslov problem on SO(4) (a rigid body in R⁴ with a left-invariant inertia
    operator and the constraint ⟨e_1, ξ⟩ = 0 on the body velocity; n = 0): lie-gni converges at
    order 2 to the reference (DOP853 on the same equations), keeps the constraint to round-off and
    g_k in SO(4); over t = 200 from two initial states its energy error stays below 1e-4 (no drift)."""
    inertia = np.diag([1.0, 1.3, 1.7, 2.2, 2.9, 3.4])
    suslov4 = dl.ReducedSystem(inertia, np.eye(6)[:1], group=dl.lie.SO(4), name="suslov-so4")
    hs = [0.04, 0.02, 0.01]
    for xi0 in (np.array([0.0, 0.7, -0.4, 0.9, 0.3, -0.6]), np.array([0.0, -1.2, 0.2, 0.1, 0.8, 0.5])):
        state = dict(x0=np.zeros(0), R0=np.eye(4), xdot0=np.zeros(0), xi0=xi0)
        ref = suslov4.reference_solution(**state, t=np.array([0.0, 2.0]))
        errors = []
        for h in hs:
            tr = dl.integrate(suslov4, "lie-gni", h=h, t_final=2.0, **state)
            errors.append(max(np.max(np.abs(tr.R[-1] - ref["R"][-1])), np.max(np.abs(tr.xi[-1] - ref["xi"][-1]))))
        assert abs(fitted_order(hs, errors) - 2.0) < 0.15, errors
        long = dl.integrate(suslov4, "lie-gni", h=0.01, t_final=200.0, save_every=7, **state)
        assert long.max_constraint_residual < 1e-14 and np.max(long.extra["orthogonality_defect"]) < 1e-12
        assert long.max_relative_energy_error < 1e-4
