"""The rolling ball (Chaplygin sphere on a turning table): model, continuous solutions, projectors,
exponential chart, the printed discrete equations and structure of the ball's integrators.

Spec: shared/papers/gni-2015-new-developments.md — §4, §4.1, §5.1–§5.4, targets R1, R3, R5, R10,
R11, errata 10–15. Expected values are the spec's (paper data or its independent reproduction);
matrices and formulas are typed here from the spec, never taken from the code under test.
"""
import warnings

import numpy as np
import pytest

import dalembert as dl
from dalembert.errors import ConstraintViolationError, InputError
from dalembert.lie import so3
from dalembert.methods import exp_chart
from dalembert.models import rolling_ball as rb


# --------------------------------------------------------------------------- helpers
def _hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _vee(A):
    return np.array([A[2, 1], A[0, 2], A[1, 0]])


def _expm(w):
    th = np.linalg.norm(w)
    W = _hat(w)
    return np.eye(3) + np.sin(th) / th * W + (1 - np.cos(th)) / th ** 2 * W @ W


def _cay_inv(W):
    """cay⁻¹(W) = 2 vee(W − Wᵀ)/(1 + tr W) for arrays (..., 3, 3)."""
    A = W - np.swapaxes(W, -1, -2)
    return 2.0 * np.stack([A[..., 2, 1], A[..., 0, 2], A[..., 1, 0]], -1) / (1.0 + np.trace(W, axis1=-2, axis2=-1))[..., None]


def _random_rotation(rng):
    return _expm(rng.normal(size=3))


def _omega0(state):
    return state["R0"] @ state["xi0"]


FIG1 = rb.FIG1_PARAMS


# --------------------------------------------------------------------------- model and data
def test_model_defaults_are_the_fig1_data_and_satisfy_the_rolling_constraint():
    m = dl.models.get("rolling-ball")
    assert {k: m.params[k] for k in ("r", "m", "I1", "I2", "I3", "theta")} == pytest.approx(
        {"r": 1, "m": 1, "I1": 2 / 3, "I2": 2 / 3, "I3": 2 / 3, "theta": 1})
    st = m.initial_state
    assert set(st) == {"x0", "R0", "xdot0", "xi0"}
    np.testing.assert_allclose(st["x0"], [1, 1])
    np.testing.assert_allclose(st["xdot0"], [1, 1])
    np.testing.assert_allclose(_omega0(st), [0, 2, 0])
    # (41): ẋ − rω2 + Θy = 0, ẏ + rω1 − Θx = 0
    w = _omega0(st)
    assert abs(st["xdot0"][0] - w[1] + st["x0"][1]) < 1e-15
    assert abs(st["xdot0"][1] + w[0] - st["x0"][0]) < 1e-15
    assert m.default_method == "lie-gni"
    x, R, xd, xi = m.system.check_initial_state(**st)      # the system accepts it
    assert "reduced" in m.forms and m.forms["reduced"].trivialization == "right"
    assert m.system.trivialization == "left"
    assert "reduced" not in dl.models.get("rolling-ball", I1=1.0, I2=0.5, I3=0.7, m=2.0).forms
    # other r, Θ: the default state is made consistent with (41) (ω from the constraint)
    m2 = dl.models.get("rolling-ball", theta=0.0, r=2.0, m=0.5)
    x, R, xd, xi = m2.system.check_initial_state(**m2.initial_state)
    np.testing.assert_allclose(R @ xi, [-0.5, 0.5, 0.0])


def test_fig3_and_pre_initial_data():
    p, st = rb.fig3_initial_state()
    assert (p["I1"], p["I2"], p["I3"], p["m"], p["theta"]) == (1.0, 0.5, 0.7, 2.0, 1.0)
    np.testing.assert_allclose(st["R0"], _expm(np.array([0.5, 0.5, 0.5])), atol=1e-15)
    np.testing.assert_allclose(_omega0(st), [0.25, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(st["xdot0"], [0.0, 0.75])
    pre = dl.models.get("rolling-ball-pre")
    assert "NOT the physical" in pre.source or "not the physical" in pre.notes.lower()
    assert (pre.params["I1"], pre.params["I2"], pre.params["I3"], pre.params["m"], pre.params["theta"]) == \
        (1.0, 1.1, 1.2, 3.0, 0.2)
    np.testing.assert_allclose(pre.initial_state["xdot0"], [0.0, 0.4])   # y1 = y0 + 0.4h (spec §5.4)
    pre.system.check_initial_state(**pre.initial_state)


def test_admissibility_values_of_the_paper_cases():
    """Spec §4: homogeneous 2 = 2 (thin shell), Fig 3-left 2.2 ≤ 4, Fig 3-right 21 > 2, PRE 3.3 ≤ 6."""
    assert rb.check_inertia(FIG1) == pytest.approx(1.0)
    assert rb.check_inertia(rb.FIG3_PARAMS["left"]) == pytest.approx(2.2 / 4)
    assert rb.check_inertia(rb.PRE_PARAMS) == pytest.approx(3.3 / 6)
    with pytest.warns(UserWarning, match="not physically admissible"):
        assert rb.check_inertia(rb.FIG3_PARAMS["right"]) == pytest.approx(21 / 2)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("name, value", [("m", 0.0), ("r", -1.0), ("I1", 0.0), ("I3", -0.5)])
def test_non_positive_parameters_are_rejected(name, value):
    with pytest.raises(InputError, match=name):
        dl.models.get("rolling-ball", **{name: value})


def test_triangle_inequality_violation_is_an_error():
    with pytest.raises(InputError, match="triangle"):
        dl.models.get("rolling-ball", I1=1.0, I2=0.2, I3=0.3)
    with pytest.raises(InputError, match="triangle"):
        rb.check_inertia({"I1": 0.1, "I2": 0.1, "I3": 0.5})


def test_inadmissible_mass_distribution_warns_but_builds():
    with pytest.warns(UserWarning, match="not physically admissible"):
        m = dl.models.get("rolling-ball", I1=10.0, I2=10.0, I3=1.0, m=0.9999)   # Fig 3-right-like
    assert m.system is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rb.check_inertia(rb.FIG3_PARAMS["left"])          # admissible: no warning


def test_initial_state_violating_the_rolling_constraint_is_an_error_with_residual():
    m = dl.models.get("rolling-ball")
    st = dict(m.initial_state, xdot0=np.array([1.0, 0.0]))
    with pytest.raises(ConstraintViolationError) as exc:
        dl.integrate(m.system, "lie-gni", h=0.1, t_final=0.2, **st)
    np.testing.assert_allclose(np.abs(exc.value.residual).max(), 1.0)
    with pytest.raises(ConstraintViolationError) as exc:
        rb.reference_solution(FIG1, st["x0"], st["R0"], st["xdot0"], _omega0(st), [0.0, 1.0])
    np.testing.assert_allclose(exc.value.residual, [0.0, -1.0])
    # the opt-in projection gives a consistent state
    x, R, xd, xi = m.system.check_initial_state(**st, project=True)
    assert np.abs(rb.rolling_residual(FIG1, x, R, xd, R @ xi)).max() < 1e-12


def test_R0_not_a_rotation_is_an_error():
    m = dl.models.get("rolling-ball")
    st = dict(m.initial_state, R0=np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(InputError, match="rotation"):
        dl.integrate(m.system, "lie-gni", h=0.1, t_final=0.2, **st)
    with pytest.raises(InputError, match="rotation"):
        rb.reference_solution(FIG1, st["x0"], 1.01 * np.eye(3), st["xdot0"], [0, 2, 0], [0.0, 1.0])


def test_exact_solution_needs_homogeneous_inertia():
    p, st = rb.fig3_initial_state()
    with pytest.raises(InputError, match="I1 = I2 = I3"):
        rb.exact_solution(p, st["x0"], st["R0"], st["xdot0"], _omega0(st), [0.0, 1.0])
    assert dl.models.get("rolling-ball", **p).exact_solution is None


# --------------------------------------------------------------------------- continuous solutions
def test_exact_homogeneous_solution_check_values():
    """Spec §4.1: κ = 0.4, centre (−1.5, 3.5), radius 3.5355; at t = 10 (x, y) = (−5.02612, 3.24210),
    ω = (−3.61567, 3.34526, 0), E = 9.08795; E(0) = 2.3333."""
    ex = dl.models.get("rolling-ball").exact_solution(np.array([0.0, 10.0]))
    assert ex["kappa"] == pytest.approx(0.4)
    np.testing.assert_allclose(ex["centre"], [-1.5, 3.5], atol=1e-14)
    assert ex["radius"] == pytest.approx(3.5355, abs=5e-5)
    np.testing.assert_allclose(ex["x"][-1], [-5.02612, 3.24210], atol=5e-6)
    np.testing.assert_allclose(ex["omega"][-1], [-3.61567, 3.34526, 0.0], atol=5e-6)
    assert ex["energy"][0] == pytest.approx(7 / 3, abs=1e-14)
    assert ex["energy"][-1] == pytest.approx(9.08795, abs=5e-6)


def test_exact_homogeneous_solution_agrees_with_the_reference_equations():
    """The closed form (spec §4.1) against the unreduced §4.1 ODE (DOP853 1e-13), generic R0, ω3 ≠ 0."""
    rng = np.random.default_rng(1)
    R0 = _random_rotation(rng)
    p = dict(FIG1, theta=0.7, m=1.3, r=0.8)
    x0, xd0 = np.array([0.3, -0.4]), np.array([0.5, 1.2])
    w0 = np.array([(p["theta"] * x0[0] - xd0[1]) / p["r"], (xd0[0] + p["theta"] * x0[1]) / p["r"], 0.9])
    t = np.linspace(0.0, 10.0, 51)
    ex = rb.exact_solution(p, x0, R0, xd0, w0, t)
    ref = rb.reference_solution(p, x0, R0, xd0, w0, t)
    for k in ("x", "xdot", "omega", "R"):
        assert np.abs(ex[k] - ref[k]).max() <= 1e-9, k
    assert np.abs(ex["energy"] - ref["energy"]).max() <= 1e-9
    # the contact point is on the circle of centre z0 + iż0/κ, radius |ż0|/κ
    d = np.linalg.norm(ref["x"] - ex["centre"], axis=1)
    np.testing.assert_allclose(d, ex["radius"], atol=1e-9)


def test_reference_equations_agree_with_the_classical_body_equations_at_theta_0():
    """Spec §4.1 validation (a): Ω = Rᵀω of the §4.1 ODE vs M = IΩ + mr²γ×(Ω×γ), Ṁ = M×Ω,
    γ̇ = γ×Ω (Ω difference 6e-11 at T = 10 in the spec); here ≤ 1e-9."""
    p, st = rb.fig4_initial_state()
    assert p["theta"] == 0.0
    t = np.linspace(0.0, 10.0, 11)
    ref = rb.reference_solution(p, st["x0"], st["R0"], st["xdot0"], _omega0(st), t)
    cl = rb.chaplygin_body_solution(p, st["R0"].T @ [0, 0, 1.0], st["xi0"], t)
    Omega_ref = np.einsum("kji,kj->ki", ref["R"], ref["omega"])
    assert np.abs(Omega_ref - cl["Omega"]).max() <= 1e-9
    gamma_ref = np.einsum("kji,j->ki", ref["R"], [0, 0, 1.0])
    assert np.abs(gamma_ref - cl["gamma"]).max() <= 1e-9
    # spec §5.3 (Fig 4 reconstruction): rolls ~16 units, final (0.0656, 15.936), E0 = 3.654254, conserved
    np.testing.assert_allclose(ref["x"][-1], [0.0656, 15.936], atol=5e-4)
    assert ref["energy"][0] == pytest.approx(3.654254, abs=1e-6)
    assert np.ptp(ref["energy"]) < 1e-10


def test_reference_fig3_left_values():
    """Spec §5.3 [OURS]: Fig 3-left at T = 10: (x, y) = (−3.99882, 0.58335), E = 5.14927,
    E(0) = 0.589215."""
    p, st = rb.fig3_initial_state()
    ref = rb.reference_solution(p, st["x0"], st["R0"], st["xdot0"], _omega0(st), np.array([0.0, 10.0]))
    np.testing.assert_allclose(ref["x"][-1], [-3.99882, 0.58335], atol=1e-5)
    np.testing.assert_allclose(ref["energy"], [0.589215, 5.14927], atol=1e-5)


def test_reference_agrees_with_the_reduced_system_index1_equations():
    """Two independent derivations: the §4.1 ODE (spatial ω, NumPy) and the ReducedSystem's
    autodiff index-1 equations of the model's left-trivialised system."""
    from dalembert.systems.reduced import reference_solution as rs_reference
    p, st = rb.fig3_initial_state()
    m = dl.models.get("rolling-ball", **p)
    t = np.array([0.0, 1.0, 2.0])
    a = rb.reference_solution(p, st["x0"], st["R0"], st["xdot0"], _omega0(st), t)
    b = rs_reference(m.system, st["x0"], st["R0"], st["xdot0"], st["xi0"], t)
    assert np.abs(a["x"] - b["x"]).max() < 1e-10
    assert np.abs(a["omega"] - b["omega"]).max() < 1e-10


def test_pre_reference_matches_the_spec_values():
    """Spec §5.4 [OURS]: PRE example 2 continuous reference at T = 15:
    (x, y) = (−2.01171, 5.59208), ω = (−0.72071, 0.68852, 0.61159)."""
    ref = dl.models.get("rolling-ball-pre").reference(np.array([0.0, 15.0]))
    np.testing.assert_allclose(ref["x"][-1], [-2.01171, 5.59208], atol=1e-5)
    np.testing.assert_allclose(ref["omega"][-1], [-0.72071, 0.68852, 0.61159], atol=1e-5)


# --------------------------------------------------------------------------- R1: projectors
def _Q_of(G, mu):
    C = mu @ np.linalg.solve(G, mu.T)
    return np.linalg.solve(G, mu.T) @ np.linalg.solve(C, mu)


def test_R1_projector_equals_matrix_43_for_diagonal_inertia():
    """Q of (43)/PRE (44) (spec §5.1): I2 in the x/ω2 block, I1 in the y/ω1 block."""
    p = {"r": 0.7, "m": 1.9, "I1": 0.5, "I2": 0.6, "I3": 0.7, "theta": 0.3}
    r, m, I1, I2 = p["r"], p["m"], p["I1"], p["I2"]
    d1, d2 = m * r * r + I1, m * r * r + I2
    Q43 = np.array([[I2 / d2, 0, 0, -r * I2 / d2, 0],
                    [0, I1 / d1, r * I1 / d1, 0, 0],
                    [0, m * r / d1, m * r * r / d1, 0, 0],
                    [-m * r / d2, 0, 0, m * r * r / d2, 0],
                    [0, 0, 0, 0, 0]])
    x = np.array([0.2, -0.5])
    for system in (dl.models.get("rolling-ball-pre", **p).system, dl.models.get("rolling-ball", **p).system):
        G = np.asarray(system.metric(x))
        mu = np.asarray(system.constraint_matrix(x, np.eye(3)))
        np.testing.assert_allclose(_Q_of(G, mu), Q43, atol=1e-14)


def test_R1_projector_properties_at_random_rotations():
    p = {"r": 0.7, "m": 1.9, "I1": 0.5, "I2": 0.6, "I3": 0.7, "theta": 0.3}
    system = dl.models.get("rolling-ball", **p).system
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, R = rng.normal(size=2), _random_rotation(rng)
        G = np.asarray(system.metric(x))
        mu = np.asarray(system.constraint_matrix(x, R))
        Q = _Q_of(G, mu)
        P = np.eye(5) - Q
        np.testing.assert_allclose(Q @ Q, Q, atol=1e-14)
        np.testing.assert_allclose(mu @ P, 0, atol=1e-14)
        np.testing.assert_allclose(G @ Q, (G @ Q).T, atol=1e-14)
        Ref = (P - Q).T                                       # (P − Q)* on covectors
        np.testing.assert_allclose(Ref @ Ref, np.eye(5), atol=1e-14)
        Gi = np.linalg.inv(G)
        np.testing.assert_allclose(Ref.T @ Gi @ Ref, Gi, atol=1e-14)
        # the system's affine reflection is (P − Q)*p + 2μᵀC⁻¹ν and an involution
        pv = rng.normal(size=5)
        nu = np.asarray(system.constraint_rhs(x, R))
        C = mu @ Gi @ mu.T
        expect = Ref @ pv + 2 * mu.T @ np.linalg.solve(C, nu)
        got = np.asarray(system.reflect(x, R, pv))
        np.testing.assert_allclose(got, expect, atol=1e-13)
        np.testing.assert_allclose(np.asarray(system.reflect(x, R, got)), pv, atol=1e-13)


# --------------------------------------------------------------------------- R3: exponential chart
def _spec_Omega(rho, rd):
    th = np.linalg.norm(rho)
    return ((np.cos(th) - 1) / th ** 2 * np.cross(rho, rd) - (np.sin(th) - th) / th ** 3 * (rho @ rd) * rho
            + np.sin(th) / th * rd)


def _spec_omega(rho, rd):
    th = np.linalg.norm(rho)
    return ((np.cos(th) - 1) / th ** 2 * np.cross(rd, rho) - (np.sin(th) - th) / th ** 3 * (rho @ rd) * rho
            + np.sin(th) / th * rd)


def test_R3_exponential_coordinate_velocities_match_finite_differences():
    rng = np.random.default_rng(3)
    eps = 1e-5
    for scale in (0.3, 1.5, 3.0, 4.0):
        rho = scale * rng.normal(size=3) / np.sqrt(3)
        rd = rng.normal(size=3)
        R = _expm(rho)
        Rdot = (_expm(rho + eps * rd) - _expm(rho - eps * rd)) / (2 * eps)
        Omega_fd, omega_fd = _vee(R.T @ Rdot), _vee(Rdot @ R.T)
        assert np.abs(_spec_Omega(rho, rd) - Omega_fd).max() <= 1e-8
        assert np.abs(_spec_omega(rho, rd) - omega_fd).max() <= 1e-8
        assert np.abs(np.asarray(exp_chart.body_velocity(rho, rd)) - Omega_fd).max() <= 1e-8
        assert np.abs(np.asarray(exp_chart.spatial_velocity(rho, rd)) - omega_fd).max() <= 1e-8


def test_chart_recentring_is_the_same_rotation_and_keeps_the_body_momentum():
    rng = np.random.default_rng(4)
    rho = rng.normal(size=3)
    rho *= 3.9 / np.linalg.norm(rho)
    rho2 = np.asarray(exp_chart.recentre(rho))
    assert np.linalg.norm(rho2) == pytest.approx(2 * np.pi - 3.9)
    np.testing.assert_allclose(_expm(rho2), _expm(rho), atol=1e-14)
    # the chart-change Jacobian maps chart velocities to chart velocities of the same motion
    rd = rng.normal(size=3)
    D = np.asarray(exp_chart.recentre_jacobian(rho))
    np.testing.assert_allclose(_spec_Omega(rho2, D @ rd), _spec_Omega(rho, rd), atol=1e-12)


def test_exp_chart_system_pulls_back_metric_and_constraints():
    """G(q) = JᵀG̃J, μ(q) = μ̃(x, exp ρ̂)J: the chart's kinetic energy and constraint residual equal
    the reduced ones at (ẋ, Ω = A(ρ)ρ̇)."""
    p, st = rb.fig3_initial_state()
    red = dl.models.get("rolling-ball", **p).system
    nh = exp_chart.exp_chart_system(red)
    rng = np.random.default_rng(5)
    q, v = rng.normal(size=5), rng.normal(size=5)
    R = _expm(q[2:])
    Om = _spec_Omega(q[2:], v[2:])
    u = np.concatenate([v[:2], Om])
    T_chart = 0.5 * v @ np.asarray(nh.mass_matrix(q)) @ v
    assert T_chart == pytest.approx(0.5 * u @ np.diag([2, 2, 1, 0.5, 0.7]) @ u, rel=1e-13)
    res_chart = np.asarray(nh.constraint_residual(q, v))
    w = R @ Om
    expect = [v[0] - w[1] + q[1], v[1] + w[0] - q[0]]          # (41), r = Θ = 1
    np.testing.assert_allclose(res_chart, expect, atol=1e-13)
    with pytest.raises(InputError, match="left"):
        exp_chart.exp_chart_system(dl.models.get("rolling-ball").forms["reduced"])


# --------------------------------------------------------------------------- R5: printed equations
def _pub_equations(x, R, h, p):
    """The five printed PUB §5.1 equations at interior nodes (right trivialisation: cay(hω_k) =
    R_{k+1}R_kᵀ); returns (N−2, 5)."""
    I, m, r, th = p["I1"], p["m"], p["r"], p["theta"]
    w = _cay_inv(np.einsum("kij,klj->kil", R[1:], R[:-1])) / h
    wk, wm = w[1:], w[:-1]
    xk1, xk, xkm = x[2:], x[1:-1], x[:-2]
    sk, sm = np.sum(wk ** 2, 1), np.sum(wm ** 2, 1)
    O1 = I * h * h / 4 * (wk[:, 1] * sk - wm[:, 1] * sm)
    O2 = -I * h * h / 4 * (wk[:, 0] * sk - wm[:, 0] * sm)
    O3 = I * h * h / 4 * (wk[:, 2] * sk - wm[:, 2] * sm)
    O4 = -r * h * h / 8 * (wk[:, 1] * sk + wm[:, 1] * sm)
    O5 = r * h * h / 8 * (wk[:, 0] * sk + wm[:, 0] * sm)
    dd = (xk1 - 2 * xk + xkm) / h
    cd = (xk1 - xkm) / (2 * h)
    return np.stack([
        m * r * dd[:, 0] + I * (wk[:, 1] - wm[:, 1]) + O1,
        m * r * dd[:, 1] - I * (wk[:, 0] - wm[:, 0]) + O2,
        I * (wk[:, 2] - wm[:, 2]) + O3,
        cd[:, 0] + th * xk[:, 1] - r * (wk[:, 1] + wm[:, 1]) / 2 + O4,
        cd[:, 1] - th * xk[:, 0] + r * (wk[:, 0] + wm[:, 0]) / 2 + O5], 1)


def _pre_equations(x, R, h, p):
    """The five printed PRE §5.4 equations (left trivialisation: cay(hω_k) = R_kᵀR_{k+1})."""
    I1, I2, I3, m, r, th = p["I1"], p["I2"], p["I3"], p["m"], p["r"], p["theta"]
    w = _cay_inv(np.einsum("kji,kjl->kil", R[:-1], R[1:])) / h
    a, b = w[1:], w[:-1]
    na = I1 * a[:, 0] ** 2 + I2 * a[:, 1] ** 2 + I3 * a[:, 2] ** 2
    nb = I1 * b[:, 0] ** 2 + I2 * b[:, 1] ** 2 + I3 * b[:, 2] ** 2
    hh = h * h
    O1 = hh / 4 * (a[:, 1] * na - b[:, 1] * nb)
    O2 = -hh / 4 * (a[:, 0] * na - b[:, 0] * nb)
    O3 = hh / 4 * (a[:, 2] * na - b[:, 2] * nb)
    O4 = -hh * r / (8 * I2) * (a[:, 1] * na + b[:, 1] * nb)
    O5 = hh * r / (8 * I1) * (a[:, 0] * na + b[:, 0] * nb)
    xk1, xk, xkm = x[2:], x[1:-1], x[:-2]
    dd = (xk1 - 2 * xk + xkm) / h
    cd = (xk1 - xkm) / (2 * h)
    return np.stack([
        m * r * dd[:, 0] + I2 * (a[:, 1] - b[:, 1]) + h / 2 * (I1 - I3) * (a[:, 0] * a[:, 2] + b[:, 0] * b[:, 2]) + O1,
        m * r * dd[:, 1] - I1 * (a[:, 0] - b[:, 0]) - h / 2 * (I3 - I2) * (a[:, 1] * a[:, 2] + b[:, 1] * b[:, 2]) + O2,
        I3 * (a[:, 2] - b[:, 2]) + h / 2 * (I2 - I1) * (a[:, 0] * a[:, 1] + b[:, 0] * b[:, 1]) + O3,
        cd[:, 0] + th * xk[:, 1] - r * (a[:, 1] + b[:, 1]) / 2
        - r * h / 4 * (I1 - I3) / I2 * (a[:, 0] * a[:, 2] - b[:, 0] * b[:, 2]) + O4,
        cd[:, 1] - th * xk[:, 0] + r * (a[:, 0] + b[:, 0]) / 2
        + r * h / 4 * (I3 - I2) / I1 * (a[:, 1] * a[:, 2] - b[:, 1] * b[:, 2]) + O5], 1)


def test_R5_printed_PUB_equations_vanish_on_the_reduced_gni_trajectory():
    m = dl.models.get("rolling-ball")
    st = dict(m.initial_state, xi0=_omega0(m.initial_state))
    st["xi0"] = st["xi0"] + np.array([0.0, 0.0, 0.7])               # a spin: ω3 ≠ 0 exercises O3
    h = 0.1
    tr = dl.integrate(m.forms["reduced"], "reduced-gni", h=h, t_final=10.0, **st)
    res = _pub_equations(tr.x, tr.R, h, m.params)
    assert res.shape[0] == 99
    assert np.abs(res).max() <= 1e-12
    # a wrong sign of Π (erratum 6) would leave 2Θy_k in the 4th equation: the test can fail
    assert np.abs(res[:, 3] - 2 * m.params["theta"] * tr.x[1:-1, 1]).max() > 1e-2


def test_R5_printed_PRE_equations_vanish_on_the_preprint_model():
    pre = dl.models.get("rolling-ball-pre")
    h = 0.05
    tr = dl.integrate(pre.system, "reduced-gni", h=h, t_final=5.0, **pre.initial_state)
    res = _pre_equations(tr.x, tr.R, h, pre.params)
    assert np.abs(res).max() <= 1e-12


# --------------------------------------------------------------------------- R10, R11, SO(3)
def test_R10_averaged_momentum_constraint_residual_for_the_three_schemes():
    p, st = rb.fig3_initial_state()
    m = dl.models.get("rolling-ball", **p)
    for method in ("lie-gni", "gni-exp-chart"):
        tr = dl.integrate(m.system, method, h=0.02, t_final=10.0, **st)
        assert np.abs(tr.constraint_residual).max() <= 1e-12, method
        # the model's own (41) in spatial ω at the reported nodes
        assert np.abs(rb.rolling_residual(p, tr.x, tr.R, tr.xdot, tr.omega)).max() <= 1e-12, method
    h0 = dl.models.get("rolling-ball")
    st0 = dict(h0.initial_state, xi0=_omega0(h0.initial_state))
    tr = dl.integrate(h0.forms["reduced"], "reduced-gni", h=0.1, t_final=10.0, **st0)
    assert np.abs(tr.constraint_residual).max() <= 1e-12


def test_R11_homogeneous_ball_fixed_table_discrete_energy_is_exact():
    """Spec §5.2/R11: E⁻_k = ½m|Δx_k/h|² + ½I|ω_k|²(1 + h²|ω_k|²/4)² constant to ≤ 1e-12 relative
    (T8 of the paper; bi-invariant metric, left-invariant l_d) — here over 10⁴ steps at h = 0.1,
    which also checks R_k ∈ SO(3) after 10⁴ steps."""
    m = dl.models.get("rolling-ball", theta=0.0)
    I, mass, h = m.params["I1"], m.params["m"], 0.1
    st = {"x0": np.array([1.0, 1.0]), "R0": np.eye(3), "xdot0": np.array([1.0, 1.0]),
          "xi0": np.array([-1.0, 1.0, 0.5])}                       # ẋ = rω2, ẏ = −rω1
    tr = dl.integrate(m.forms["reduced"], "reduced-gni", h=h, t_final=1000.0, **st)
    assert tr.x.shape[0] == 10001
    w = _cay_inv(np.einsum("kij,klj->kil", tr.R[1:], tr.R[:-1])) / h
    dx = np.diff(tr.x, axis=0) / h
    s = np.sum(w * w, 1)
    E = 0.5 * mass * np.sum(dx * dx, 1) + 0.5 * I * s * (1 + h * h * s / 4) ** 2
    assert np.abs(E - E[0]).max() / E[0] <= 1e-12
    # D is right-invariant too, so the energy of the averaged momentum is also constant (spec §3 T8)
    assert np.ptp(tr.energy) / tr.energy[0] <= 1e-12
    assert tr.orthogonality_defect.max() <= 1e-12


def test_lie_gni_stays_on_SO3_for_10k_steps():
    p, st = rb.fig3_initial_state()
    # chunk_steps=1024: the run reuses the compiled chunk of the other lie-gni runs on this system
    tr = dl.integrate(dl.models.get("rolling-ball", **p).system, "lie-gni", h=0.01, t_final=100.0,
                      chunk_steps=1024, **st)
    assert tr.t.size == 10001
    assert tr.t[-1] == pytest.approx(100.0)
    assert tr.orthogonality_defect.max() <= 1e-12
    dets = np.linalg.det(tr.R)
    np.testing.assert_allclose(dets, 1.0, atol=1e-12)


def test_lie_gni_and_right_trivialised_reduced_gni_agree_on_the_homogeneous_ball():
    m = dl.models.get("rolling-ball")
    st = m.initial_state
    st_right = dict(st, xi0=_omega0(st))
    a = dl.integrate(m.system, "lie-gni", h=0.05, t_final=10.0, **st)
    b = dl.integrate(m.forms["reduced"], "reduced-gni", h=0.05, t_final=10.0, **st_right)
    assert np.abs(a.x - b.x).max() <= 1e-12
    assert np.abs(a.omega - b.omega).max() <= 1e-12
    assert np.abs(a.R - b.R).max() <= 1e-12
    assert np.abs(a.x - m.exact_solution(a.t)["x"]).max() > 1e-4     # not trivially the same numbers
