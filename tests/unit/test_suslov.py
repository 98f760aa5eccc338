"""The Suslov problem and the Euler–Poincaré–Suslov integrators.

Spec: shared/papers/suslov-2015-euler-poincare-suslov.md — targets T3–T19, T22 (§5), the exact
solution (§1.6) and errata E1, E2. Expected numbers are the spec's (paper data or its independent
reproduction); references are SciPy DOP853 and formulas written out here, never the code under test.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import dalembert as dl
from dalembert.convergence import fitted_order, roundoff_floor
from dalembert.errors import ConstraintViolationError, InputError, SystemDefinitionError
from dalembert.lie import so3
from dalembert.methods.eps import group_deps_residual
from dalembert.models.suslov import INERTIA, INERTIA_PRINTED, OMEGA0, exact_omega, reconstruct_reference


def final_state(system, method, R0, omega0, h, n, **options):
    """The node after n steps by the engine's functional core (n at run time: one compilation)."""
    from dalembert.engine.run import compiled, final_state as engine_final_state
    out = compiled(engine_final_state, system, method, **options)((R0, omega0), h, int(n))
    out = {k: np.asarray(v) for k, v in out.items()}
    out["converged"] = bool(out["ok"])
    return out

E3 = np.array([0.0, 0.0, 1.0])
SUSLOV = dl.EulerPoincareSuslovSystem(INERTIA, E3, name="suslov-test")
U0 = OMEGA0
E0 = 0.225


# --------------------------------------------------------------------------- helpers
@functools.lru_cache(maxsize=None)
def _runner(system, method, n, opts):
    scheme = dl.methods.get(method).build(system, np.eye(3), **dict(opts))

    def run(R0, w0, h):
        st = scheme.init(R0, w0, h)

        def body(s, _):
            s, info = scheme.step(s, h)
            return s, (scheme.observe(s, h), info.converged)

        _, (obs, ok) = jax.lax.scan(body, st, None, length=n)
        first = scheme.observe(st, h)
        return jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, obs), ok

    return jax.jit(run)


def run(method, h, n, system=SUSLOV, R0=np.eye(3), w0=U0, **opts):
    """Nodes 0..n of ``method``: dict of numpy arrays R (n+1,3,3), omega (n+1,3), lam (n+1,m)."""
    obs, ok = _runner(system, method, n, tuple(sorted(opts.items())))(
        jnp.asarray(R0, jnp.float64), jnp.asarray(w0, jnp.float64), jnp.float64(h))
    assert bool(np.all(ok)), f"{method}: a Newton solve did not converge"
    return {k: np.asarray(v) for k, v in obs.items()}


def rhs_2d(u, I=INERTIA):
    """(P44) in components (spec §1.5), written out independently."""
    w1, w2 = u
    det = I[0, 0] * I[1, 1] - I[0, 1] * I[1, 0]
    c = I[2, 0] * w1 + I[2, 1] * w2
    return np.array([-(I[1, 1] * w2 + I[0, 1] * w1) * c / det, (I[1, 0] * w2 + I[0, 0] * w1) * c / det])


def lam_2d(u, I=INERTIA):
    """(P45) in components (spec §1.5)."""
    w1, w2 = u
    det = I[0, 0] * I[1, 1] - I[0, 1] * I[1, 0]
    c = I[2, 0] * w1 + I[2, 1] * w2
    return (w1 * (I[1, 0] * w1 + I[1, 1] * w2) - w2 * (I[0, 0] * w1 + I[0, 1] * w2)
            + c / det * ((I[2, 1] * I[1, 0] - I[2, 0] * I[1, 1]) * w2 + (I[2, 1] * I[0, 0] - I[2, 0] * I[0, 1]) * w1))


def q_2d(u, I=INERTIA):
    return u[..., 0] * (I[1, 0] * u[..., 0] + I[1, 1] * u[..., 1]) - u[..., 1] * (I[0, 0] * u[..., 0] + I[0, 1] * u[..., 1])


def random_spd(rng):
    B = rng.normal(size=(3, 3))
    return B @ B.T + 0.5 * np.eye(3)


def dop853_2d(u0, t, I=INERTIA):
    sol = solve_ivp(lambda s, u: rhs_2d(u, I), (t[0], t[-1]), u0, method="DOP853", t_eval=t,
                    rtol=1e-13, atol=1e-13)
    return sol.y.T


# --------------------------------------------------------------------------- system (T3)
def test_T3_multiplier_and_vector_field_match_the_3d_solve_and_components():
    rng = np.random.default_rng(0)
    for _ in range(5):
        u = rng.normal(size=2)
        w = np.array([u[0], u[1], 0.0])
        wd = np.asarray(SUSLOV.omega_dot(jnp.asarray(w)))
        lam = float(SUSLOV.multiplier(jnp.asarray(w))[0])
        np.testing.assert_allclose(wd[:2], rhs_2d(u), atol=1e-14)
        assert abs(lam - lam_2d(u)) < 1e-14
        # the 3-D DAE solve  [[𝕀, −e3], [e3ᵀ, 0]] (ω̇, λ) = (𝕀ω×ω, 0)
        M = np.block([[INERTIA, -E3[:, None]], [E3[None, :], np.zeros((1, 1))]])
        x = np.linalg.solve(M, np.concatenate([np.cross(INERTIA @ w, w), [0.0]]))
        np.testing.assert_allclose(wd, x[:3], atol=1e-14)
        assert abs(lam - x[3]) < 1e-14
    # general system (m = 2, random SPD inertia): A ω̇ = 0 and 𝕀ω̇ − 𝕀ω×ω = Aᵀλ
    I = random_spd(rng)
    A = rng.normal(size=(2, 3))
    s = dl.EulerPoincareSuslovSystem(I, A)
    w = s.projector @ rng.normal(size=3)
    wd, lam = np.asarray(s.omega_dot(jnp.asarray(w))), np.asarray(s.multiplier(jnp.asarray(w)))
    np.testing.assert_allclose(A @ w, 0, atol=1e-14)
    np.testing.assert_allclose(A @ wd, 0, atol=1e-13)
    np.testing.assert_allclose(I @ wd - np.cross(I @ w, w), A.T @ lam, atol=1e-13)


def test_model_paper_values_and_printed_inertia_equivalence():
    m = dl.models.get("suslov")
    w = jnp.asarray(m.initial_state["omega0"])
    assert abs(float(m.system.energy(w)) - 0.225) < 1e-15
    assert abs(float(m.system.multiplier(w)[0]) - (-19 / 1100)) < 1e-15     # spec §1.6 table
    np.testing.assert_allclose(np.asarray(m.system.omega_dot(w))[:2], [-0.0709091, 0.0590909], atol=1e-7)
    printed = dl.models.get("suslov", printed_inertia=1)
    assert not printed.system.symmetric
    a = run("eps-midpoint", 0.5, 20, system=m.system)
    b = run("eps-midpoint", 0.5, 20, system=printed.system)
    np.testing.assert_allclose(a["omega"], b["omega"], atol=1e-15)   # E2: identical for a = e3
    np.testing.assert_allclose(a["lam"], b["lam"], atol=1e-15)


# --------------------------------------------------------------------------- exact solution (T4, T5)
ORACLE = [  # spec §1.6, t, ω1, ω2, λ
    (1, 0.3284842975, 0.5529647534, -0.0294155020), (2, 0.2577472134, 0.5940887396, -0.0389908721),
    (5, 0.0705072036, 0.6600912787, -0.0527672310), (10, -0.1287171066, 0.6713529841, -0.0491783643),
    (20, -0.2712629513, 0.6412535190, -0.0351936915), (50, -0.3122497259, 0.6257626985, -0.0294262649)]


def test_T4_exact_solution_oracle_table_and_dop853():
    t = np.array([r[0] for r in ORACLE], float)
    ex = exact_omega(t)
    np.testing.assert_allclose(ex["omega"][:, :2], [r[1:3] for r in ORACLE], atol=1e-10)
    np.testing.assert_allclose(ex["lam"], [r[3] for r in ORACLE], atol=1e-10)
    assert abs(ex["K"] - np.sqrt(23) / 33) < 1e-15
    tt = np.linspace(0, 50, 101)
    np.testing.assert_allclose(exact_omega(tt)["omega"][:, :2], dop853_2d(U0[:2], tt), atol=1e-11)
    rng = np.random.default_rng(1)
    for _ in range(4):
        I = random_spd(rng)
        u0 = rng.normal(size=2)
        w0 = np.array([*u0, 0.0])
        fwd, bwd = np.linspace(0, 15, 31), np.linspace(0, -5, 11)
        np.testing.assert_allclose(exact_omega(fwd, I, w0)["omega"][:, :2], dop853_2d(u0, fwd, I), atol=1e-11)
        np.testing.assert_allclose(exact_omega(bwd, I, w0)["omega"][:, :2], dop853_2d(u0, bwd, I), atol=1e-11)
        ex = exact_omega(fwd, I, w0)
        np.testing.assert_allclose(ex["lam"], [lam_2d(u, I) for u in ex["omega"][:, :2]], atol=1e-12)
    # T5 energy along the exact solution; equilibrium when c0 = 0
    ex = exact_omega(tt)
    E = 0.5 * np.einsum("ni,ij,nj->n", ex["omega"], INERTIA, ex["omega"])
    assert np.max(np.abs(E - E0)) <= 2e-15
    w_eq = np.array([0.1, -0.2, 0.0])        # n·u = 0.2·0.1 − 0.1·0.2 = 0
    np.testing.assert_allclose(exact_omega(tt, INERTIA, w_eq)["omega"], np.broadcast_to(w_eq, (101, 3)), atol=0)


# --------------------------------------------------------------------------- T22, T11, T12, T13, T14
T22 = {  # k: (midpoint u, midpoint λ, VI u, VI λ59, VI λ consistent)
    1: ((0.32864305, 0.55286072), -0.02939130, (0.33648500, 0.54755212), -0.01382956, -0.02177735),
    2: ((0.25801516, 0.59395157), -0.03895915, (0.27324217, 0.58563215), -0.02274475, -0.03158531),
    5: ((0.07080595, 0.66003008), -0.05275854, (0.10091507, 0.65200594), -0.03982444, -0.04898507),
    10: ((-0.12868139, 0.67135632), -0.04918068, (-0.09646679, 0.67103525), -0.04440548, -0.05062944)}


def test_T22_regression_first_steps_at_eps_1():
    mp = run("eps-midpoint", 1.0, 10)
    vi = run("eps-variational", 1.0, 10)
    vi59 = run("eps-variational", 1.0, 10, multiplier="paper59")
    for k, (u_mp, l_mp, u_vi, l59, lcons) in T22.items():
        np.testing.assert_allclose(mp["omega"][k, :2], u_mp, atol=1e-8)
        assert abs(mp["lam"][k, 0] - l_mp) < 1e-8
        np.testing.assert_allclose(vi["omega"][k, :2], u_vi, atol=1e-8)
        np.testing.assert_allclose(vi59["omega"][k], vi["omega"][k], atol=0)
        assert abs(vi59["lam"][k, 0] - l59) < 1e-8
        assert abs(vi["lam"][k, 0] - lcons) < 1e-8
    # the corrected VI multiplier is n·Δu/ε + ½(q' + q) (E1) and (P59) is ½(q' + q)
    u = vi["omega"][:, :2]
    n = INERTIA[2, :2]
    np.testing.assert_allclose(vi["lam"][1:, 0], (u[1:] - u[:-1]) @ n + 0.5 * (q_2d(u[1:]) + q_2d(u[:-1])), atol=1e-13)
    np.testing.assert_allclose(vi59["lam"][1:, 0], 0.5 * (q_2d(u[1:]) + q_2d(u[:-1])), atol=1e-13)


def test_T11_midpoint_energy_exact_at_eps_1():
    mp = run("eps-midpoint", 1.0, 1000)
    E = 0.5 * np.einsum("ni,ij,nj->n", mp["omega"], INERTIA, mp["omega"])
    assert np.max(np.abs(E - E0)) <= 1e-14


@pytest.mark.parametrize("h,n,expected", [(1.0, 100, -2.654e-3), (0.1, 1000, -3.48e-5), (1e-3, 10000, -2.359e-9)])
def test_T12_variational_energy_error(h, n, expected):
    vi = run("eps-variational", h, n)
    E = 0.5 * vi["omega"][-1] @ INERTIA @ vi["omega"][-1]
    assert abs((E - E0) - expected) <= 5e-4 * abs(expected) + 1e-16


def test_T13_midpoint_and_variational_indistinguishable_at_small_eps():
    mp, vi = run("eps-midpoint", 1e-3, 10000), run("eps-variational", 1e-3, 10000)
    assert np.max(np.abs(mp["omega"] - vi["omega"])) <= 1e-7
    ex = exact_omega(np.arange(10001) * 1e-3)
    assert np.max(np.abs(mp["omega"] - ex["omega"])) <= 1e-9       # spec: 3.5e-10
    assert np.max(np.abs(mp["lam"][:, 0] - ex["lam"])) <= 1e-10      # spec: 3.2e-11


@pytest.mark.parametrize("method", ["dreps-euler", "dreps-rk4", "eps-midpoint", "eps-variational"])
def test_T14_T15_group_and_constraint_to_roundoff_after_1e4_steps(method):
    out = run(method, 1.0, 10000)
    assert np.max(np.abs(out["omega"][:, 2])) <= 1e-15
    R = out["R"]
    defect = np.linalg.norm(np.eye(3) - np.einsum("nji,njk->nik", R, R), axis=(1, 2))
    assert defect.max() <= 1e-11
    # unreduced constraint e3·vee(RᵀṘ) with Ṙ = R hat(ω)
    RtRd = np.einsum("nji,njk,nkl->nil", R, R, np.asarray(so3.hat(out["omega"])))
    assert np.max(np.abs(RtRd[:, 1, 0])) <= 1e-13


def test_general_system_two_constraints_exponential_retraction():
    rng = np.random.default_rng(5)
    I, A = random_spd(rng), rng.normal(size=(2, 3))
    s = dl.EulerPoincareSuslovSystem(I, A, name="two-constraints")
    # ω ∈ ker A (1-dimensional): a multiple of A's null vector
    w0 = np.linalg.svd(A)[2][-1] * 0.7
    for method in ("eps-midpoint", "eps-variational", "dreps-rk4"):
        out = run(method, 0.1, 2000, system=s, w0=w0, retraction="exponential")
        assert np.max(np.abs(out["omega"] @ A.T)) <= 1e-13
        R = out["R"][-1]
        assert np.linalg.norm(np.eye(3) - R.T @ R) <= 1e-11
    mp = run("eps-midpoint", 0.1, 2000, system=s, w0=w0)
    E = 0.5 * np.einsum("ni,ij,nj->n", mp["omega"], I, mp["omega"])
    assert np.max(np.abs(E - E[0])) <= 1e-13 * max(1.0, E[0])


# --------------------------------------------------------------------------- orders (T6, T7, T8, T9, T10)
EPS = np.array([0.2, 0.1, 0.05, 0.025, 0.0125])


def _one_step(method, h, **opts):
    return run(method, h, 1, **opts)


@pytest.mark.parametrize("method,p", [("dreps-euler", 1), ("eps-midpoint", 2), ("eps-variational", 2), ("dreps-rk4", 4)])
def test_T6_T8_local_slopes(method, p):
    eu, el = [], []
    hs = 2.0 * EPS[:4] if method == "dreps-rk4" else EPS
    for h in hs:
        out = _one_step(method, h)
        ex = exact_omega(np.array([h]))
        eu.append(np.linalg.norm(out["omega"][1] - ex["omega"][0]))
        el.append(abs(lam_2d(out["omega"][1, :2]) - ex["lam"][0]))
    # errors at the round-off floor say nothing about the order: fit above it, on at least 4 steps
    # (RK4 runs on 2ε, whose smallest local error, 2.6e-14, is 10× above the floor)
    floor = roundoff_floor(np.linalg.norm(U0))
    assert abs(fitted_order(hs, eu, floor=floor, min_points=4) - (p + 1)) <= 0.05, eu
    if method != "eps-variational":       # T8: λ(u^{k+1}) has the same slope (Prop 6.1, s = p)
        assert abs(fitted_order(hs, el, floor=floor, min_points=4) - (p + 1)) <= 0.05, el
        lam = [_one_step(method, h)["lam"][1, 0] for h in hs]
        np.testing.assert_allclose(lam, [lam_2d(_one_step(method, h)["omega"][1, :2]) for h in hs], atol=1e-15)


@pytest.mark.parametrize("method,p", [("dreps-euler", 1), ("eps-midpoint", 2), ("eps-variational", 2), ("dreps-rk4", 4)])
def test_T7_global_slopes_at_T10(method, p):
    errs = []
    for h in EPS:
        n = int(round(10 / h))
        out = final_state(SUSLOV, method, np.eye(3), U0, h, n)     # one compilation for all h
        assert out["converged"]
        errs.append(np.linalg.norm(out["omega"] - exact_omega(np.array([10.0]))["omega"][0]))
    assert abs(fitted_order(EPS, errs) - p) <= 0.1


def test_rk4_predictor_multiplier_raises_the_multiplier_order():
    el = []
    hs = 2.0 * EPS[:4]                    # on EPS the two smallest errors are round-off (8e-16, 3e-18)
    for h in hs:
        out = _one_step("dreps-euler", h, multiplier="rk4-predictor")
        np.testing.assert_allclose(out["omega"][1], _one_step("dreps-euler", h)["omega"][1], atol=0)
        el.append(abs(out["lam"][1, 0] - exact_omega(np.array([h]))["lam"][0]))
    assert abs(fitted_order(hs, el, floor=roundoff_floor(np.linalg.norm(U0)), min_points=4) - 5) <= 0.05, el


def test_T9_paper59_multiplier_is_inconsistent():
    h = 1e-6
    out = _one_step("eps-variational", h, multiplier="paper59")
    O0 = INERTIA[2, :2] @ rhs_2d(U0[:2])        # n·ω̇(0) = c·d = −0.0082727
    assert abs(O0 - (-0.00827273)) < 1e-8
    gap = exact_omega(np.array([h]))["lam"][0] - out["lam"][1, 0]
    assert abs(gap - O0) <= 1e-4 * abs(O0)


def test_T10_consistent_multiplier_slopes():
    e_end, e_mid = [], []
    for h in EPS:
        lam = _one_step("eps-variational", h)["lam"][1, 0]
        e_end.append(abs(lam - exact_omega(np.array([h]))["lam"][0]))
        e_mid.append(abs(lam - exact_omega(np.array([h / 2]))["lam"][0]))
    assert abs(fitted_order(EPS, e_end) - 1) <= 0.05
    assert abs(fitted_order(EPS, e_mid) - 2) <= 0.05


# --------------------------------------------------------------------------- group level (T16–T19)
def _omega_exact_fn(s):
    return exact_omega(np.array([s]))["omega"][0]


def test_T16_T17_reconstruction_local_slope_2_and_constant():
    dist, vel = [], []
    for h in EPS:
        R_ref = reconstruct_reference(np.array([0.0, h]), _omega_exact_fn)[-1]
        R1 = np.asarray(so3.cayley(h * U0))                 # Ω_0 cay(ε ω(t_0)), Ω_0 = I
        dist.append(np.linalg.norm(R_ref - R1))
        w1 = _omega_exact_fn(h)
        vel.append(np.linalg.norm(R_ref @ w1 - R1 @ w1))
    assert abs(fitted_order(EPS, dist) - 2) <= 0.05
    assert abs(fitted_order(EPS, vel) - 2) <= 0.05
    wdot = np.array([*rhs_2d(U0[:2]), 0.0])
    assert abs(dist[-1] / EPS[-1] ** 2 - np.linalg.norm(wdot) / np.sqrt(2)) <= 0.02 * np.linalg.norm(wdot)


@pytest.mark.parametrize("recon,p", [("left", 1), ("midpoint", 2)])
def test_T16_global_group_order(recon, p):
    errs = []
    hs = np.array([0.1, 0.05, 0.025, 0.0125])
    R_ref = reconstruct_reference(np.array([0.0, 5.0]), _omega_exact_fn)[-1]
    for h in hs:
        out = final_state(SUSLOV, "eps-midpoint", np.eye(3), U0, h, int(round(5 / h)), reconstruction=recon)
        errs.append(np.linalg.norm(out["R"] - R_ref))
    assert abs(fitted_order(hs, errs) - p) <= 0.1
    if recon == "left":   # spec Thm 5.2 checks: 1.65e-2 … 2.03e-3
        np.testing.assert_allclose(errs, [1.65e-2, 8.18e-3, 4.07e-3, 2.03e-3], rtol=0.02)


def test_T18_T19_group_level_deps_reproduces_the_variational_trajectory():
    h = 0.5
    vi = run("eps-variational", h, 12)
    R = vi["R"]
    W = np.einsum("nji,njk->nik", R[:-1], R[1:])             # W_k = R_kᵀ R_{k+1}
    for k in range(len(W)):
        np.testing.assert_allclose(W[k], np.asarray(so3.cayley(h * vi["omega"][k])), atol=1e-14)
        assert abs(W[k][0, 1] - W[k][1, 0]) <= 1e-15       # T19: W_k ∈ 𝒮
    resid = jax.jit(functools.partial(group_deps_residual, SUSLOV))
    for k in range(len(W) - 1):
        r = np.asarray(resid(jnp.asarray(W[k]), jnp.asarray(W[k + 1]), h))
        np.testing.assert_allclose(r, -h * vi["lam"][k + 1, 0] * E3, atol=1e-12)


def test_midpoint_reconstruction_local_order_3():
    errs = []
    for h in EPS:
        R_ref = reconstruct_reference(np.array([0.0, h]), _omega_exact_fn)[-1]
        R1 = np.asarray(so3.cayley(0.5 * h * (U0 + _omega_exact_fn(h))))
        errs.append(np.linalg.norm(R_ref - R1))
    assert abs(fitted_order(EPS, errs) - 3) <= 0.1


# --------------------------------------------------------------------------- bad input
def test_bad_inertia_and_constraints():
    with pytest.raises(SystemDefinitionError, match="not symmetric"):
        dl.EulerPoincareSuslovSystem(INERTIA_PRINTED, E3)
    s = dl.EulerPoincareSuslovSystem(INERTIA_PRINTED, E3, allow_nonsymmetric=True)
    assert not s.symmetric
    with pytest.raises(SystemDefinitionError, match="positive definite"):
        dl.EulerPoincareSuslovSystem(np.diag([1.0, -1.0, 1.0]), E3)
    with pytest.raises(SystemDefinitionError, match="shape"):
        dl.EulerPoincareSuslovSystem(np.eye(2), E3)
    with pytest.raises(SystemDefinitionError, match="zero"):
        dl.EulerPoincareSuslovSystem(INERTIA, [[1.0, 0, 0], [0, 0, 0]])
    with pytest.raises(SystemDefinitionError, match="dependent"):
        dl.EulerPoincareSuslovSystem(INERTIA, [[1.0, 2.0, 0], [2.0, 4.0, 0]])
    with pytest.raises(SystemDefinitionError, match="1 or 2"):
        dl.EulerPoincareSuslovSystem(INERTIA, np.eye(3))
    with pytest.raises(SystemDefinitionError, match="non-finite"):
        dl.EulerPoincareSuslovSystem(INERTIA, [np.nan, 0, 1])


def test_bad_initial_state():
    with pytest.raises(ConstraintViolationError) as e:
        SUSLOV.check_initial_state(np.eye(3), [0.4, 0.5, 0.1])
    np.testing.assert_allclose(e.value.residual, [0.1])
    R, w = SUSLOV.check_initial_state(np.eye(3), [0.4, 0.5, 0.1], project=True)
    assert abs(w[2]) < 1e-15 and R.dtype == np.float64
    bad = np.eye(3) + 1e-3
    with pytest.raises(InputError, match=r"distance from SO\(3\)") as e:
        SUSLOV.check_initial_state(bad, U0)
    assert f"{np.linalg.norm(np.eye(3) - bad.T @ bad):.3g}" in str(e.value)
    R, _ = SUSLOV.check_initial_state(bad, U0, project=True)
    assert np.linalg.norm(np.eye(3) - R.T @ R) < 1e-14
    with pytest.raises(InputError, match="det"):
        SUSLOV.check_initial_state(np.diag([1.0, 1.0, -1.0]), U0, project=True)
    with pytest.raises(InputError, match="shape"):
        SUSLOV.check_initial_state(np.eye(3), [0.4, 0.5])
    d = SUSLOV.diagnostics({"R": jnp.eye(3), "omega": jnp.asarray(U0)})
    assert abs(float(d["energy"]) - E0) < 1e-15 and d["constraint_residual"].shape == (1,)


def test_methods_reject_other_systems_and_bad_options():
    sleigh = dl.models.get("chaplygin-sleigh")
    with pytest.raises(InputError, match="integrates euler-poincare-suslov systems"):
        dl.integrate(sleigh.system, "eps-midpoint", q0=sleigh.q0, v0=sleigh.v0, h=0.1, t_final=1.0)
    with pytest.raises(InputError, match="multiplier"):
        dl.methods.get("eps-variational").build(SUSLOV, np.eye(3), multiplier="p59")
    with pytest.raises(InputError, match="reconstruction"):
        dl.methods.get("dreps-rk4").build(SUSLOV, np.eye(3), reconstruction="right")
    for name in ("dreps-euler", "dreps-rk4", "eps-midpoint", "eps-variational"):
        assert dl.methods.available()[name].family == "eps"


# --------------------------------------------------------------------------- through dl.integrate
def test_integrate_protocol_named_state_and_extra_arrays():
    m = dl.models.get("suslov")
    tr = dl.integrate(m.system, "eps-variational", R0=np.eye(3), omega0=[0.4, 0.5, 0.0], h=1.0, t_final=10.0,
                      multiplier="paper59")
    assert tr.R.shape == (11, 3, 3) and tr.omega.shape == (11, 3) and tr.lam.shape == (11, 1)
    for k, (_, _, u_vi, l59, _) in T22.items():
        np.testing.assert_allclose(tr.omega[k, :2], u_vi, atol=1e-8)
        assert abs(tr.lam[k, 0] - l59) < 1e-8
    np.testing.assert_allclose(tr.energy, _energy_of(tr.omega), atol=1e-16)
    np.testing.assert_allclose(tr.constraint_residual[:, 0], tr.omega[:, 2], atol=0)
    with pytest.raises(ConstraintViolationError):
        dl.integrate(m.system, "eps-midpoint", R0=np.eye(3), omega0=[0.4, 0.5, 0.2], h=0.1, t_final=1.0)
    with pytest.raises(InputError, match="distance from SO"):
        dl.integrate(m.system, "eps-midpoint", R0=2 * np.eye(3), omega0=U0, h=0.1, t_final=1.0)
    tr = dl.integrate(m.system, "eps-midpoint", R0=np.eye(3), omega0=[0.4, 0.5, 0.2], h=0.1, t_final=1.0,
                      project=True)
    assert np.max(np.abs(tr.omega[:, 2])) <= 1e-15


def _energy_of(omega):
    return 0.5 * np.einsum("ni,ij,nj->n", omega, INERTIA, omega)


def test_model_exact_solution_R_against_a_fine_run():
    m = dl.models.get("suslov")
    t = np.linspace(0.0, 2.0, 3)
    R_ex, w_ex = m.solution(t)
    np.testing.assert_allclose(w_ex, exact_omega(t)["omega"], atol=0)
    assert np.max(np.abs(np.einsum("nji,njk->nik", R_ex, R_ex) - np.eye(3))) < 1e-12
    out = run("eps-midpoint", 1e-3, 2000, reconstruction="midpoint")
    assert np.linalg.norm(out["R"][-1] - R_ex[-1]) < 1e-6          # second order: ~1e-7 here
    assert np.linalg.norm(out["R"][-1] - R_ex[0]) > 0.5            # it moved
