"""Structural properties of the GNI family and of nonholonomic RATTLE.

Targets from shared/papers/gni-2015-new-developments.md §6 (R8 adjointness, R10 node constraint,
R12 horizontal-symmetry momentum) and shared/papers/gni-2008-momentum-energy.md (Thm 1 energy,
Cor 3, T7 DLA energy), plus agreement of independent formulations: the explicit fast path and
the Newton path; the T*Q form and the staggered (q, p̃, λ̃) leap-frog form of RATTLE.
"""
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert import linalg
from dalembert.convergence import fitted_order as slope
from dalembert.methods import Method, Scheme
from dalembert.methods import gni_leapfrog as lf
from dalembert.methods.gni import GNIState

T = 5.0
HS = [0.1 * 2.0 ** -j for j in range(5)]
COMPILED = ["nh-rattle", "gni-euler-a", "gni-euler-b", "gni-euler-ab", "gni-midpoint", "dla-midpoint"]


def _maxdiff(a, b):
    return max(float(jnp.max(jnp.abs(x - y))) for x, y in zip(a, b))


# ---------------------------------------------------------------------------------------------
# R8: adjointness of GNI-A and GNI-B
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def p1():
    return dl.models.get("p1-linear")


@pytest.fixture(scope="module")
def leapfrog_maps(p1):
    q0 = jnp.asarray(p1.q0)
    FA = jax.jit(lf.make_leapfrog_step(p1.system, q0, "A"))
    FB = jax.jit(lf.make_leapfrog_step(p1.system, q0, "B"))
    proj = jax.jit(lambda v, q, p, lam, h: lf.project_to_manifold(p1.system, q0, v, q, p, lam, h),
                   static_argnums=0)
    return FA, FB, proj


def test_R8_leapfrog_adjointness_on_state_manifolds(leapfrog_maps):
    """F_A^h ∘ F_B^{−h} = Id on S_A(h) and F_B^h ∘ F_A^{−h} = Id on S_B(h) (Thm 5.4, erratum 4)."""
    FA, FB, proj = leapfrog_maps
    rng = np.random.default_rng(8)
    worst_on, worst_off = 0.0, np.inf
    for _ in range(12):
        h = float(rng.uniform(0.02, 0.1))
        q, p, lam = (jnp.asarray(rng.normal(size=k)) for k in (3, 3, 1))
        sA = proj("A", q, p, lam, h)
        sB = proj("B", q, p, lam, h)
        worst_on = max(worst_on, _maxdiff(FA(FB(sA, -h), h), sA), _maxdiff(FB(FA(sB, -h), h), sB))
        # negative control: off the manifold the identity fails by O(1)
        s = lf.LeapfrogState(q, p, lam)
        worst_off = min(worst_off, _maxdiff(FA(FB(s, -h), h), s))
    assert worst_on <= 1e-13
    assert worst_off > 1e-3


def _reflect_state(system):
    def C(st):
        return GNIState(st.q, system.reflect(st.q, st.p), st.g)
    return C


@pytest.mark.parametrize("fast_path", [True, False])
def test_R8_TQ_adjointness_identity(p1, fast_path):
    """In T*Q variables GNI-A = Ψ^A_h ∘ R and GNI-B = Ψ^B_h ∘ R with R = (P−Q)* (an involution)
    and Ψ^A_h ∘ Ψ^B_{−h} = Id (symplectic Euler A/B are adjoint). Hence
    (GNI-A_h)⁻¹ = R ∘ Ψ^B_{−h} = C ∘ GNI-B_{−h} ∘ C  with C(q, p) = (q, (P−Q)*p):
    GNI-A_h ∘ C ∘ GNI-B_{−h} ∘ C = Id on all of T*Q (and the same with A and B swapped)."""
    system = p1.system
    q0 = jnp.asarray(p1.q0)
    A = dl.methods.get("gni-euler-a").build(system, q0, fast_path=fast_path)
    B = dl.methods.get("gni-euler-b").build(system, q0, fast_path=fast_path)
    C = _reflect_state(system)

    @jax.jit
    def roundtrips(st, h):
        ab = A.step(C(B.step(C(st), -h)[0]), h)[0]
        ba = B.step(C(A.step(C(st), -h)[0]), h)[0]
        no_c = A.step(B.step(st, -h)[0], h)[0]
        return ab, ba, no_c

    rng = np.random.default_rng(4)
    for _ in range(6):
        h = float(rng.uniform(0.02, 0.1))
        q, p = jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=3))
        st = GNIState(q, p, system.grad_potential(q))
        ab, ba, no_c = roundtrips(st, h)
        assert _maxdiff(ab[:2], st[:2]) <= 1e-13
        assert _maxdiff(ba[:2], st[:2]) <= 1e-13
        # without the reflections the composition is not the identity
        assert _maxdiff(no_c[:2], st[:2]) > 1e-4


def test_gni_midpoint_self_adjoint_on_sleigh():
    """Symmetric L_d: (GNI_h)⁻¹ = C ∘ GNI_{−h} ∘ C, here with a q-dependent metric (Newton)."""
    sl = dl.models.get("chaplygin-sleigh")
    M = dl.methods.get("gni-midpoint").build(sl.system, jnp.asarray(sl.q0))
    C = _reflect_state(sl.system)
    f = jax.jit(lambda st, h: M.step(C(M.step(C(st), -h)[0]), h)[0])
    rng = np.random.default_rng(9)
    for _ in range(5):
        h = float(rng.uniform(0.02, 0.2))
        q, p = jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=3))
        st = GNIState(q, p, jnp.zeros(3))
        assert _maxdiff(f(st, h)[:2], st[:2]) <= 1e-13


# ---------------------------------------------------------------------------------------------
# R10: the node constraint holds to round-off for every compiled method
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model_name", ["p1-linear", "p2-affine", "chaplygin-sleigh"])
@pytest.mark.parametrize("method", COMPILED)
def test_R10_node_constraint_residual(model_name, method):
    m = dl.models.get(model_name)
    h = 0.1
    tr = dl.integrate(m.system, method, q0=m.q0, v0=m.v0, h=h, t_final=T)
    assert len(tr) == int(round(T / h)) + 1
    assert tr.max_constraint_residual <= 1e-12
    # recompute μ(q)v − ν(q) independently of the stored residual
    res = jax.vmap(m.system.constraint_residual)(jnp.asarray(tr.q), jnp.asarray(tr.v))
    assert float(jnp.max(jnp.abs(res))) <= 1e-12
    # ... and the trajectory is not trivially constant
    assert np.max(np.abs(tr.q[-1] - tr.q[0])) > 1e-2


# ---------------------------------------------------------------------------------------------
# R12 / Cor 3 and Thm 1 on the nonholonomic particle (2008 spec, Example 1)
# ---------------------------------------------------------------------------------------------

# setup B of the 2008 spec: y crosses 0 at t = 5, so μ(q) turns substantially
PARTICLE_Q0 = np.array([0.0, -5.0, 0.0])
PARTICLE_V0 = np.array([1.0, 1.0, -5.0])
PARTICLE_H = 0.1


def _particle_run(method):
    m = dl.models.get("nonholonomic-particle")
    return dl.integrate(m.system, method, q0=PARTICLE_Q0, v0=PARTICLE_V0, h=PARTICLE_H, t_final=10.0)


def _discrete_energy(tr):
    """E_k = ½|Δq_k/h|² = H(q_k, p⁻_k) for G = I, V = 0 (the quantity of Thm 1)."""
    dq = np.diff(tr.q, axis=0) / PARTICLE_H
    return 0.5 * np.sum(dq * dq, axis=1)


@pytest.mark.parametrize("method", ["nh-rattle", "gni-midpoint"])
def test_R12_particle_horizontal_symmetry_and_energy(method):
    tr = _particle_run(method)
    y = tr.q[:, 1]
    # Cor 3: ∂y is a horizontal symmetry, so y_{k+1} − 2y_k + y_{k−1} = 0
    assert np.max(np.abs(y[2:] - 2 * y[1:-1] + y[:-2])) <= 1e-12
    assert np.max(np.abs(tr.v[:, 1] - PARTICLE_V0[1])) <= 1e-12
    # Thm 1 (R³ abelian, flat metric, V = 0): ½|p⁻_k|² is constant
    E = _discrete_energy(tr)
    assert np.ptp(E) / E[0] <= 1e-12
    # the discrete energy is a consistent approximation of the true one, ½(c² + v_y²) = 13.5
    assert abs(E[0] - 13.5) < 1e-2


def test_T7_particle_dla_energy_not_constant():
    """The DLA comparator does not keep ½|Δq/h|² (2008 spec T7: range ≈ 1.6e-2 on setup B)."""
    tr = _particle_run("dla-midpoint")
    E = _discrete_energy(tr)
    assert np.ptp(E) / E[0] > 1e-6
    assert np.ptp(E) > 1e-4
    # ... although it does keep the horizontal-symmetry momentum (same (P4a) equation)
    y = tr.q[:, 1]
    assert np.max(np.abs(y[2:] - 2 * y[1:-1] + y[:-2])) <= 1e-12


# ---------------------------------------------------------------------------------------------
# two independent formulations: explicit fast path vs Newton path
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model_name,method", [("gearbox", "nh-rattle"), ("p2-affine", "nh-rattle"),
                                               ("p2-affine", "gni-euler-b")])
def test_fast_path_equals_newton_path(model_name, method):
    m = dl.models.get(model_name)
    kw = dict(q0=m.q0, v0=m.v0, h=0.05, t_final=10.0)
    fast = dl.integrate(m.system, method, **kw)
    slow = dl.integrate(m.system, method, fast_path=False, **kw)
    assert len(fast) == 201
    assert fast.metadata["newton"]["total_iterations"] == 0
    assert slow.metadata["newton"]["total_iterations"] >= 200
    # relative to the size of the state (the gearbox pendulum angle q3 grows to ≈15 on [0, 10])
    assert np.max(np.abs(fast.q - slow.q)) <= 1e-12 * max(1.0, np.max(np.abs(fast.q)))
    assert np.max(np.abs(fast.v - slow.v)) <= 1e-12 * max(1.0, np.max(np.abs(fast.v)))
    # λ = −(2/h)C⁻¹(...) amplifies the round-off by 2/h
    assert np.max(np.abs(fast.lam - slow.lam)) <= 1e-12 * (2 / 0.05) * max(1, np.max(np.abs(fast.lam)))


# ---------------------------------------------------------------------------------------------
# time reversibility of nonholonomic RATTLE
# ---------------------------------------------------------------------------------------------

def test_nh_rattle_time_reversible_in_TQ_form():
    """GNI-SV = Verlet ∘ R with Verlet reversible and R an involution: from (q_N, −R p⁺_N)
    the same scheme walks back through (q_k, −p⁻_k) and ends at (q_0, −p⁻_0)."""
    m = dl.models.get("gearbox")
    system = m.system
    sch = dl.methods.get("nh-rattle").build(system, jnp.asarray(m.q0))
    n, h = 200, 0.05

    @jax.jit
    def run(st):
        return jax.lax.fori_loop(0, n, lambda i, s: sch.step(s, h)[0], st)

    st0 = sch.init(jnp.asarray(m.q0), jnp.asarray(m.v0), h)
    stN = run(st0)
    assert float(jnp.max(jnp.abs(stN.q - st0.q))) > 0.5
    back = run(GNIState(stN.q, -system.reflect(stN.q, stN.p), stN.g))
    assert float(jnp.max(jnp.abs(back.q - st0.q))) <= 1e-12
    assert float(jnp.max(jnp.abs(back.p + system.reflect(st0.q, st0.p)))) <= 1e-12


def test_nh_rattle_reversal_through_public_api_is_second_order():
    """Restarting dl.integrate from (q_N, −v_N) uses the Legendre start-up p⁺ = G v, which is
    O(h) off the state the exact reversal needs, so q_0 is recovered to O(h²)."""
    m = dl.models.get("gearbox")
    hs = [0.1, 0.05, 0.025]
    eq = []
    for h in hs:
        fw = dl.integrate(m.system, "nh-rattle", q0=m.q0, v0=m.v0, h=h, t_final=10.0)
        bw = dl.integrate(m.system, "nh-rattle", q0=fw.q[-1], v0=-fw.v[-1], h=h, t_final=10.0)
        eq.append(np.max(np.abs(bw.q[-1] - m.q0)))
    assert eq[-1] < 1e-4
    assert slope(hs, eq) >= 1.9


# ---------------------------------------------------------------------------------------------
# multipliers
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class ConsistentStart(Method):
    """A GNI whose start-up is p⁺_0 = G v_0 − (h/2) μᵀ λ(q_0, v_0) (2008 spec §2.1 (ii); the
    (q, p⁺) image of the 2015 spec's RATTLE start-up p̃_0 = p_0, λ̃_0 = λ_H), built here from the
    Legendre start-up, independently of the library's default ``startup="consistent"``."""

    base: Any = None

    def build(self, system, q0, **options):
        sch = self.base.build(system, q0, startup="legendre", **options)

        def init(q0, v0, h):
            st = sch.init(q0, v0, h)
            lam = system.multiplier(q0, v0)
            return st._replace(p=st.p - 0.5 * h * linalg.vm(lam, system.constraint_matrix(q0)))
        return Scheme(init, sch.step, sch.observe)


_RATTLE = dl.methods.get("nh-rattle")
RATTLE_CONSISTENT = ConsistentStart(name="nh-rattle-consistent-start", traits=_RATTLE.traits,
                                    base=_RATTLE)


def _lam_errors(method, model):
    errs, errs_q = [], []
    for h in HS:
        tr = dl.integrate(model.system, method, q0=model.q0, v0=model.v0, h=h, t_final=T)
        ref = dl.integrate(model.system, "reference", q0=model.q0, v0=model.v0, h=h, t_final=T)
        assert np.max(np.abs(ref.t - tr.t)) < 1e-12
        errs.append(np.max(np.abs(tr.lam - ref.lam)))     # ref.lam = system.multiplier(q(t), v(t))
        errs_q.append(np.max(np.abs(tr.q[-1] - ref.q[-1])))
    return np.array(errs), np.array(errs_q)


def test_gni_multiplier_converges_to_reference(p1):
    """The default start-up of the library is the consistent one: λ_k is second order."""
    errs, _ = _lam_errors("nh-rattle", p1)
    assert errs[-1] < 1e-3
    assert slope(HS, errs) >= 1.8


def test_gni_multiplier_converges_with_consistent_start_up(p1):
    """With the consistent start-up the very same step/observe functions give λ_k of order 2,
    and q errors equal the spec's [OURS] numbers for RATTLE with p̃_0 = p_0, λ̃_0 = λ_exact
    (gni-2015 spec §5.5: 3.25e-3, 8.11e-4, 2.02e-4, 5.06e-5, 1.27e-5)."""
    errs, errs_q = _lam_errors(RATTLE_CONSISTENT, p1)
    assert slope(HS, errs) >= 1.8
    assert errs[-1] < 1e-3
    anchors = np.array([3.25e-3, 8.11e-4, 2.02e-4, 5.06e-5, 1.27e-5])
    assert np.all(np.abs(errs_q / anchors - 1.0) < 0.01), errs_q
    # λ_0 is the exact multiplier
    tr = dl.integrate(p1.system, RATTLE_CONSISTENT, q0=p1.q0, v0=p1.v0, h=0.1, t_final=0.1)
    lam0 = np.asarray(p1.system.multiplier(jnp.asarray(p1.q0), jnp.asarray(p1.v0)))
    assert np.max(np.abs(tr.lam[0] - lam0)) < 1e-13


def test_rattle_TQ_form_equals_leapfrog_form(p1):
    """Two independent formulations of nonholonomic RATTLE: the T*Q GNI with L_d^SV (fast
    path) and the staggered (q, p̃, λ̃) form (15) with the spec's start-up. Same q_k; the T*Q
    averaged momentum P*p⁺_k equals p̃_k; the reported λ_k equals −λ̃_k."""
    system = p1.system
    h, n = 0.05, 100
    q0, v0 = jnp.asarray(p1.q0), jnp.asarray(p1.v0)
    F = lf.make_leapfrog_step(system, q0, "RATTLE")

    @jax.jit
    def leapfrog():
        s0 = lf.LeapfrogState(q0, system.momentum(q0, v0), -system.multiplier(q0, v0))

        def body(s, _):
            s = F(s, h)
            return s, s
        return jax.lax.scan(body, s0, None, length=n)[1]

    lfq = leapfrog()
    tr = dl.integrate(system, RATTLE_CONSISTENT, q0=p1.q0, v0=p1.v0, h=h, t_final=n * h)
    assert np.max(np.abs(tr.q[1:] - np.asarray(lfq.q))) <= 1e-13
    assert np.max(np.abs(tr.p[1:] - np.asarray(lfq.p))) <= 1e-13
    assert np.max(np.abs(tr.lam[1:] + np.asarray(lfq.lam))) <= 1e-11


def test_startup_options_differ_only_in_the_multiplier(p1):
    """Legendre (p⁺_0 = G v_0) and consistent start-ups report the same v_0; the Legendre one
    reports λ_0 = 0 and then the period-2 oscillation (λ_k ≈ 0, 2λ alternately), the consistent
    one λ_0 = λ(q_0, v_0); positions of both are second order and differ by O(h²)."""
    h = 0.0125
    leg = dl.integrate(p1.system, "nh-rattle", q0=p1.q0, v0=p1.v0, h=h, t_final=1.0, startup="legendre")
    con = dl.integrate(p1.system, "nh-rattle", q0=p1.q0, v0=p1.v0, h=h, t_final=1.0)
    np.testing.assert_allclose(leg.v[0], con.v[0], atol=1e-15)
    assert np.max(np.abs(leg.lam[0])) < 1e-13
    lam_true = np.asarray(p1.system.multiplier(jnp.asarray(p1.q0), jnp.asarray(p1.v0)))
    np.testing.assert_allclose(con.lam[0], lam_true, atol=1e-13)
    # the Legendre multiplier alternates about the consistent one with an O(1) amplitude
    alternating = 0.5 * (leg.lam[2:-1:2, 0] - leg.lam[1:-2:2, 0])
    assert np.min(np.abs(alternating)) > 0.3 * np.min(np.abs(con.lam[:, 0]))
    assert 0 < np.max(np.abs(leg.q - con.q)) < 10 * h ** 2


def test_unknown_startup_is_rejected(p1):
    with pytest.raises(dl.InputError, match="unknown startup"):
        dl.integrate(p1.system, "nh-rattle", q0=p1.q0, v0=p1.v0, h=0.1, t_final=1.0, startup="magic")


# --- R4: the paper's printed two-step forms hold on computed trajectories ------------------------
def _r4_system(affine):
    """A user system (not in the zoo): constant non-diagonal M, a quartic potential, one turning
    constraint covector μ(q) = (sin q2, −cos q2, 0.3) and, for (28), ν(q) = 0.2 cos q0."""
    M = np.array([[1.0, 0.2, 0.0], [0.2, 2.0, 0.1], [0.0, 0.1, 0.5]])

    def V(q):
        return 0.5 * jnp.sum(q * q) + 0.1 * q[0] ** 4

    def mu(q):
        return jnp.stack([jnp.sin(q[2]), -jnp.cos(q[2]), 0.3 + 0.0 * q[0]])[None, :]

    nu = (lambda q: 0.2 * jnp.cos(q[:1])) if affine else None
    return dl.NonholonomicSystem(M, V, mu, nu, name="r4-user"), M, V, mu, nu


@pytest.mark.parametrize("method, form, affine", [("gni-euler-a", "A", False), ("gni-euler-b", "B", False),
                                                  ("nh-rattle", "SV", False), ("nh-rattle", "SV", True)])
def test_R4_printed_two_step_forms_hold_on_computed_trajectories(method, form, affine):
    """FJMdD 2015 (11), (12), SHAKE and the affine SHAKE (28), evaluated on the node positions q_k of
    a computed trajectory (nothing from the method's internals): some λ̃_k makes
    q_{k+1} − 2q_k + q_{k−1} = −h²M⁻¹(V_q(q_k) + μ(q_k)ᵀλ̃_k) hold (the residual off the range of
    M⁻¹μᵀ is ≤ 1e-13), and μ(q_k)[(q_{k+1} − q_{k−1})/(2h) ± (h/2)M⁻¹V_q(q_k)] = ν(q_k) (A: +, B: −,
    SV: no V term) to ≤ 1e-13. Negative control: the trajectory does not satisfy another variant's form."""
    system, M, V, mu, nu = _r4_system(affine)
    h = 0.05
    q0 = np.array([0.3, -0.2, 0.4])
    q = dl.integrate(system, method, q0=q0, v0=np.array([0.5, 0.1, 1.0]), h=h, t_final=10.0, project=True).q
    Minv = np.linalg.inv(M)
    grad = jax.jit(jax.vmap(jax.grad(V)))
    mus = np.asarray(jax.vmap(mu)(jnp.asarray(q)))[:, 0, :]                      # (N, 3)
    Vq = np.asarray(grad(jnp.asarray(q)))
    nus = np.asarray(jax.vmap(nu)(jnp.asarray(q)))[:, 0] if affine else np.zeros(len(q))
    qm, qk, qp = q[:-2], q[1:-1], q[2:]
    # first equation: r = (q_{k+1} − 2q_k + q_{k−1})/h² + M⁻¹V_q must be −M⁻¹μᵀλ̃ for some λ̃
    r = (qp - 2 * qk + qm) / h ** 2 + Vq[1:-1] @ Minv.T
    d = mus[1:-1] @ Minv.T                                                       # M⁻¹μᵀ, one column
    off = r - (np.sum(r * d, 1) / np.sum(d * d, 1))[:, None] * d
    assert np.max(np.abs(off)) * h ** 2 <= 1e-13

    def constraint_form(sign):
        w = (qp - qm) / (2 * h) + sign * 0.5 * h * Vq[1:-1] @ Minv.T
        return np.abs(np.sum(mus[1:-1] * w, 1) - nus[1:-1])

    signs = {"A": 1.0, "B": -1.0, "SV": 0.0}
    assert np.max(constraint_form(signs[form])) <= 1e-13
    other = "B" if form == "A" else "A"
    assert np.max(constraint_form(signs[other])) > 1e-6                        # the forms are distinct
