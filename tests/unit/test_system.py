"""NonholonomicSystem: projectors (R1 of the GNI spec), projections, the index-1 multiplier and
acceleration, constant-metric detection.

Spec: shared/papers/gni-2015-new-developments.md §1.1–§1.3 and target R1.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dalembert as dl

MODELS = ("p1-linear", "p2-affine", "chaplygin-sleigh")
SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
coord = st.floats(min_value=-2.0, max_value=2.0, allow_nan=False)
vec3 = st.tuples(coord, coord, coord).map(np.array)


def _jitted(system):
    """The system's derived matrices at q, as one compiled function per system."""
    def f(q, p):
        return (system.mass_matrix(q), system.constraint_matrix(q), system.projector_Q(q),
                system.projector_P(q), system.reflect(q, p), system.project_momentum(q, p),
                system.constraint_rhs(q))
    return jax.jit(f)


_CACHE = {}


def _derived(name, q, p):
    if name not in _CACHE:
        m = dl.models.get(name)
        _CACHE[name] = (m.system, _jitted(m.system), jax.jit(m.system.project_velocity))
    _, f, _ = _CACHE[name]
    return [np.asarray(a) for a in f(jnp.asarray(q), jnp.asarray(p))]


@pytest.mark.parametrize("name", MODELS)
@SETTINGS
@given(q=vec3, p=vec3)
def test_projector_identities_R1(name, q, p):
    G, mu, Q, P, Rp, _, _ = _derived(name, q, p)
    n = q.size
    Ginv = np.linalg.inv(G)
    tol = 1e-12 * max(1.0, np.linalg.cond(G))
    # Q is the projector onto D^⊥ = G⁻¹ span(μᵀ), P = I − Q onto D = ker μ
    assert np.max(np.abs(Q @ Q - Q)) < tol
    assert np.max(np.abs(P @ P - P)) < tol
    assert np.max(np.abs(P + Q - np.eye(n))) < tol
    assert np.max(np.abs(mu @ P)) < tol
    assert np.max(np.abs(Q @ (Ginv @ mu.T) - Ginv @ mu.T)) < tol  # Q is the identity on D^⊥
    assert np.linalg.matrix_rank(Q, tol=1e-8) == mu.shape[0]
    # G-orthogonality: GQ symmetric
    GQ = G @ Q
    assert np.max(np.abs(GQ - GQ.T)) < tol * np.max(np.abs(G))
    # (P − Q)* = (P − Q)ᵀ: reflect() agrees with the matrices, is an involution and a G⁻¹-isometry
    Rm = (P - Q).T
    assert np.max(np.abs(Rp - Rm @ p)) < tol * max(1.0, np.max(np.abs(p)))
    assert np.max(np.abs(Rm @ Rm - np.eye(n))) < tol
    assert abs(Rp @ Ginv @ Rp - p @ Ginv @ p) < tol * max(1.0, p @ Ginv @ p)
    # μG⁻¹(P−Q)*α = −μG⁻¹α (spec §1.2)
    assert np.max(np.abs(mu @ Ginv @ Rp + mu @ Ginv @ p)) < tol * max(1.0, np.max(np.abs(p)))


@pytest.mark.parametrize("name", MODELS)
@SETTINGS
@given(q=vec3, v=vec3)
def test_project_velocity_is_the_G_orthogonal_projection(name, q, v):
    _derived(name, q, v)  # fills the cache
    system, f, proj = _CACHE[name]
    G, mu, Q, P, _, _, nu = _derived(name, q, v)
    w = np.asarray(proj(jnp.asarray(q), jnp.asarray(v)))
    scale = max(1.0, np.max(np.abs(v)))
    # lands on the (affine) constraint space
    assert np.max(np.abs(mu @ w - nu)) < 1e-12 * scale
    # the correction is G-orthogonal to D: G(v − w) ∈ span(μᵀ), i.e. P*G(v − w) = 0
    assert np.max(np.abs(P.T @ (G @ (v - w)))) < 1e-11 * scale
    # equal to the closed form w = v − G⁻¹μᵀ C⁻¹(μv − ν), computed here with NumPy
    Ginv_muT = np.linalg.solve(G, mu.T)
    w_ref = v - Ginv_muT @ np.linalg.solve(mu @ Ginv_muT, mu @ v - nu)
    assert np.max(np.abs(w - w_ref)) < 1e-11 * scale
    # a projection: projecting again changes nothing
    w2 = np.asarray(proj(jnp.asarray(q), jnp.asarray(w)))
    assert np.max(np.abs(w2 - w)) < 1e-12 * scale


def test_project_momentum_averaged_constraint_affine():
    """project_momentum returns P*p + Q*Π: it satisfies μG⁻¹p̄ = ν (spec §1.3, (27b))."""
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, p = rng.normal(size=3), rng.normal(size=3)
        G, mu, Q, P, _, pbar, nu = _derived("p2-affine", q, p)
        assert np.max(np.abs(mu @ np.linalg.solve(G, pbar) - nu)) < 1e-13
        # the P*-part of p is untouched
        assert np.max(np.abs(P.T @ (pbar - p))) < 1e-13


# ---------------------------------------------------------------------------------------------
# multiplier and acceleration against an independent saddle-point solve
# ---------------------------------------------------------------------------------------------

def _sleigh_numpy(m=1.0, a=1.0, J=8.0):
    """G(q), μ(q) of the Chaplygin sleigh written again here in NumPy (canonical coordinates)."""
    K = J + m * a * a

    def G(q):
        s, c = np.sin(q[2]), np.cos(q[2])
        return np.array([[m, 0, -m * a * s], [0, m, m * a * c], [-m * a * s, m * a * c, K]])

    def mu(q):
        return np.array([[-np.sin(q[2]), np.cos(q[2]), 0.0]])

    return G, mu, (lambda q: 0.0), (lambda q: np.zeros(1)), K


def _p2_numpy(amp=0.5):
    Gc = np.diag([1.0, 2.0, 1.5])
    return ((lambda q: Gc), (lambda q: np.array([[-q[1], 0.0, 1.0]])),
            (lambda q: 0.5 * q @ q + 0.25 * q[0] ** 4), (lambda q: np.array([amp * np.sin(q[0])])))


def _fd(f, q, eps=1e-6):
    """Central finite differences: list of ∂f/∂q_j (same shape as f(q))."""
    out = []
    for j in range(q.size):
        e = np.zeros_like(q)
        e[j] = eps
        out.append((np.asarray(f(q + e)) - np.asarray(f(q - e))) / (2 * eps))
    return out


def _saddle_point(G, mu, V, nu, q, v):
    """Solve [[G, −μᵀ], [μ, 0]] [a; λ] = [f; ν̇ − μ̇v] with f = ∂L/∂q − Ġ v, all derivatives
    by central finite differences; the Lagrange–d'Alembert sign G a = f + μᵀλ."""
    n = q.size
    dG = _fd(G, q)            # dG[j] = ∂G/∂q_j
    dmu = _fd(mu, q)
    dV = np.array(_fd(lambda x: np.array(V(x)), q))
    dnu = _fd(nu, q)
    Gdot = sum(dG[j] * v[j] for j in range(n))
    mudot = sum(dmu[j] * v[j] for j in range(n))
    nudot = sum(dnu[j] * v[j] for j in range(n))
    f = np.array([0.5 * v @ dG[i] @ v for i in range(n)]) - dV - Gdot @ v
    M = mu(q)
    m = M.shape[0]
    K = np.block([[G(q), -M.T], [M, np.zeros((m, m))]])
    sol = np.linalg.solve(K, np.concatenate([f, nudot - mudot @ v]))
    return sol[:n], sol[n:]


@pytest.mark.parametrize("name,np_model", [("chaplygin-sleigh", _sleigh_numpy),
                                           ("p2-affine", _p2_numpy)])
def test_multiplier_and_acceleration_match_saddle_point_solve(name, np_model):
    system = dl.models.get(name).system
    G, mu, V, nu = np_model()[:4]
    lam_f = jax.jit(system.multiplier)
    acc_f = jax.jit(system.acceleration)
    rng = np.random.default_rng(11)
    for _ in range(4):
        q = rng.normal(size=3)
        v = rng.normal(size=3)
        # a state on the constraint (the multiplier formula assumes μv = ν)
        Gq, M = G(q), mu(q)
        Gi_MT = np.linalg.solve(Gq, M.T)
        v = v - Gi_MT @ np.linalg.solve(M @ Gi_MT, M @ v - nu(q))
        a_ref, lam_ref = _saddle_point(G, mu, V, nu, q, v)
        lam = np.asarray(lam_f(jnp.asarray(q), jnp.asarray(v)))
        a = np.asarray(acc_f(jnp.asarray(q), jnp.asarray(v)))
        scale = max(1.0, np.max(np.abs(a_ref)))
        assert np.max(np.abs(lam - lam_ref)) < 1e-7 * max(1.0, np.max(np.abs(lam_ref)))
        assert np.max(np.abs(a - a_ref)) < 1e-7 * scale
        # the acceleration keeps the (affine) constraint: d/dt(μv − ν) = 0
        assert np.max(np.abs(np.asarray(system.constraint_residual(
            jnp.asarray(q), jnp.asarray(v))))) < 1e-12


def test_sleigh_acceleration_matches_reduced_equations():
    """v̇ = a ω², ω̇ = −(m a / K) v ω for v = ẋ1 cos θ + ẋ2 sin θ (2008 spec, Example 3)."""
    m_, a_, J_ = 1.3, 0.7, 2.0
    model = dl.models.get("chaplygin-sleigh", m=m_, a=a_, J=J_)
    K = J_ + m_ * a_ * a_
    acc = jax.jit(model.system.acceleration)
    rng = np.random.default_rng(5)
    for _ in range(4):
        th, vel, w = rng.normal(size=3)
        q = np.array([rng.normal(), rng.normal(), th])
        qd = np.array([vel * np.cos(th), vel * np.sin(th), w])
        qdd = np.asarray(acc(jnp.asarray(q), jnp.asarray(qd)))
        # d/dt v = ẍ1 cosθ + ẍ2 sinθ + ω·(lateral velocity = 0)
        vdot = qdd[0] * np.cos(th) + qdd[1] * np.sin(th)
        lat = -qdd[0] * np.sin(th) + qdd[1] * np.cos(th)
        assert abs(vdot - a_ * w * w) < 1e-12 * max(1, abs(vel), w * w)
        assert abs(qdd[2] + m_ * a_ / K * vel * w) < 1e-12 * max(1, abs(vel * w))
        # derivative of the constraint −ẋ1 sinθ + ẋ2 cosθ = 0 along the motion: lat − v ω = 0
        assert abs(lat - vel * w) < 1e-12 * max(1, abs(vel * w))


# ---------------------------------------------------------------------------------------------
# constant metric detection and its consequence (the explicit fast path)
# ---------------------------------------------------------------------------------------------

def _mu_particle(q):
    return jnp.stack([-q[1], jnp.zeros_like(q[1]), jnp.ones_like(q[1])])[None, :]


def test_constant_metric_detection():
    q = jnp.array([0.1, 0.2, 0.3])
    arr = dl.NonholonomicSystem(mass_matrix=np.diag([1.0, 2.0, 3.0]), constraint_matrix=_mu_particle)
    const_callable = dl.NonholonomicSystem(mass_matrix=lambda q: jnp.diag(jnp.array([1.0, 2.0, 3.0])),
                                           constraint_matrix=_mu_particle)
    dependent = dl.NonholonomicSystem(mass_matrix=lambda q: jnp.diag(jnp.array([1.0, 2.0, 3.0 + q[0] ** 2])),
                                      constraint_matrix=_mu_particle)
    assert arr.constant_metric(q) is True
    assert const_callable.constant_metric(q) is True
    assert dependent.constant_metric(q) is False
    assert dl.models.get("chaplygin-sleigh").system.constant_metric(q) is False
    assert dl.models.get("p1-linear").system.constant_metric(q) is True


@pytest.mark.parametrize("G", [np.diag([1.0, 2.0, 3.0]),
                               np.array([[2.0, 0.3, 0.0], [0.3, 1.5, 0.2], [0.0, 0.2, 1.0]])])
def test_a_constant_metric_factored_once_gives_the_dense_values(G):
    """A constant metric is factored once (NonholonomicSystem.factor_metric; its diagonal kept for
    G b): momentum, energy, multiplier and acceleration against a dense NumPy saddle-point solve,
    and under jax.grad with the metric a traced parameter (not kept with the system)."""
    def mu(q):
        return jnp.stack([jnp.array([1.0, 0.0, -jnp.sin(q[2])])])
    system = dl.NonholonomicSystem(mass_matrix=lambda q: jnp.asarray(G), constraint_matrix=mu,
                                   potential=lambda q: q[0] ** 2 + jnp.cos(q[1]))
    q, v = jnp.array([0.3, -0.2, 0.7]), jnp.array([0.4, 0.5, -0.6])
    v = system.project_velocity(q, v)
    qn, vn = np.asarray(q), np.asarray(v)
    np.testing.assert_allclose(system.momentum(q, v), G @ vn, rtol=1e-15, atol=1e-15)
    assert abs(float(system.energy(q, v)) - (0.5 * vn @ G @ vn + qn[0] ** 2 + np.cos(qn[1]))) < 1e-14
    M = np.array([[1.0, 0.0, -np.sin(qn[2])]])
    f = -np.array([2 * qn[0], -np.sin(qn[1]), 0.0])
    mudot_v = np.array([-np.cos(qn[2]) * vn[2] * vn[2]])
    K = np.block([[G, -M.T], [M, np.zeros((1, 1))]])
    a_ref, lam_ref = np.split(np.linalg.solve(K, np.concatenate([f, -mudot_v])), [3])
    np.testing.assert_allclose(jax.jit(system.multiplier)(q, v), lam_ref, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(jax.jit(system.acceleration)(q, v), a_ref, rtol=1e-12, atol=1e-13)
    assert system.__dict__["_constant_factors"]

    def energy_of(scale):     # the metric a traced parameter: d/ds of ½ vᵀ(sG)v = ½ vᵀGv
        sysp = dl.NonholonomicSystem(mass_matrix=lambda q: scale * jnp.asarray(G), constraint_matrix=mu)
        return sysp.kinetic_energy(q, v) + jnp.sum(sysp.acceleration(q, v))
    g = jax.grad(energy_of)(1.0)
    eps = 1e-6
    fd = (energy_of(1.0 + eps) - energy_of(1.0 - eps)) / (2 * eps)
    assert abs(float(g) - float(fd)) < 1e-7


def test_constant_metric_selects_explicit_fast_path():
    """Constant metric: nh-rattle runs without a single Newton iteration; q-dependent metric
    (sleigh): every step needs Newton."""
    p1 = dl.models.get("p1-linear")
    tr = dl.integrate(p1.system, "nh-rattle", q0=p1.q0, v0=p1.v0, h=0.1, t_final=1.0)
    assert tr.metadata["newton"]["total_iterations"] == 0
    sl = dl.models.get("chaplygin-sleigh")
    tr = dl.integrate(sl.system, "nh-rattle", q0=sl.q0, v0=sl.v0, h=0.1, t_final=1.0)
    assert tr.metadata["newton"]["max_iterations"] >= 1
    assert tr.metadata["newton"]["total_iterations"] >= tr.metadata["n_steps"]


def test_energy_hamiltonian_momentum_consistent():
    """H(q, G v) = E(q, v) and p = G v, at random states of the sleigh (q-dependent metric)."""
    system = dl.models.get("p2-affine").system
    sl = dl.models.get("chaplygin-sleigh").system
    rng = np.random.default_rng(2)
    for s, Gf in ((system, _p2_numpy()[0]), (sl, _sleigh_numpy()[0])):
        for _ in range(3):
            q, v = rng.normal(size=3), rng.normal(size=3)
            p = np.asarray(s.momentum(jnp.asarray(q), jnp.asarray(v)))
            assert np.max(np.abs(p - Gf(q) @ v)) < 1e-13
            E = float(s.energy(jnp.asarray(q), jnp.asarray(v)))
            H = float(s.hamiltonian(jnp.asarray(q), jnp.asarray(p)))
            assert abs(E - H) < 1e-12 * max(1.0, abs(E))



def test_spd_solve_derivatives_are_those_of_the_factorisation():
    """linalg.spd_solve (the Hamiltonian's G⁻¹p, derivative by the factor) against autodiff through
    the Cholesky factorisation (solve_spd): values, forward and reverse first derivatives and the
    second derivative of the sleigh's H(q, p) in q (agreement measured ≤ 1e-15 relative); negative
    control: the rule without its dA term differs by O(1)."""
    from dalembert import linalg
    rng = np.random.default_rng(5)
    B = rng.normal(size=(4, 4))
    A, b = jnp.asarray(B @ B.T + 4 * np.eye(4)), jnp.asarray(rng.normal(size=4))
    dA = jnp.asarray(rng.normal(size=(4, 4)))
    dA = dA + dA.T
    ours = jax.jacfwd(lambda t: linalg.spd_solve(A + t * dA, b))(0.0)
    want = jax.jacfwd(lambda t: linalg.solve_spd(A + t * dA, b))(0.0)
    assert np.max(np.abs(ours - want)) <= 1e-13 * np.max(np.abs(want))
    bad = linalg.solve_spd(A, jnp.zeros(4))            # the rule without −dA x: zero, not the derivative
    assert np.max(np.abs(want - bad)) > 1e-2
    rev = jax.grad(lambda M: jnp.sum(b * linalg.spd_solve(M, b)))(A)
    want = jax.grad(lambda M: jnp.sum(b * linalg.solve_spd(M, b)))(A)
    # (autodiff through the factorisation reads A's lower triangle only: compare along a symmetric dA)
    assert abs(float(jnp.sum((rev - want) * dA))) <= 1e-13 * float(jnp.sum(jnp.abs(want * dA)))
    s = dl.models.get("chaplygin-sleigh").system
    plain = lambda q, p: 0.5 * jnp.sum(p * linalg.solve_spd(s.mass_matrix(q), p)) + s.potential(q)
    pairs = [(jax.jit(d(s.hamiltonian)), jax.jit(d(plain))) for d in (jax.grad, lambda f: jax.jacfwd(jax.grad(f)))]
    for _ in range(3):
        q, p = jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=3))
        for ours_f, plain_f in pairs:
            a, w = np.asarray(ours_f(q, p)), np.asarray(plain_f(q, p))
            assert np.max(np.abs(a - w)) <= 1e-13 * max(1.0, np.max(np.abs(w))), (a, w)
