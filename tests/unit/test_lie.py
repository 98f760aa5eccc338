"""SO(3) and retractions: Suslov spec T1, T21, T24 and GNI-2015 spec R2.

Spec: shared/papers/suslov-2015-euler-poincare-suslov.md §2.1, §5 (T1, T21, T24);
shared/papers/gni-2015-new-developments.md §2.10, §6 (R2). References: scipy.linalg.expm, numpy
solves, central finite differences and the defining series — never the code under test.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st

from dalembert import lie
from dalembert.errors import UnknownNameError
from dalembert.lie import so3

SETTINGS = settings(max_examples=25, deadline=None)
coord = st.floats(min_value=-3.0, max_value=3.0, allow_nan=False)
vec = st.tuples(coord, coord, coord).map(lambda t: np.array(t, float))
# rotation vectors for exp/log: |w| < 3 (< π), including tiny ones (series branch)
scale = st.sampled_from([1e-9, 1e-4, 1e-2, 0.19, 0.21, 1.0])
small_or_not = st.tuples(vec, scale | st.floats(0.0, 1.0)).map(lambda t: t[0] * t[1] / max(1.0, np.linalg.norm(t[0]) / 2.9))
RETRACTIONS = [lie.cayley, lie.exponential]


def np_hat(w):
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]], float)


def np_vee(A):
    return np.array([A[2, 1], A[0, 2], A[1, 0]])


def rand_rot(seed):
    rng = np.random.default_rng(seed)
    return scipy.linalg.expm(np_hat(rng.normal(size=3)))


J = {name: jax.jit(getattr(so3, name)) for name in
     ("hat", "vee", "cayley", "cayley_inv", "dcay", "dcay_inv", "exp", "log", "dexp", "dexp_inv",
      "orthogonality_defect", "distance")}


def right_fd(tau, w, z, s=1e-6):
    """vee((τ(w + s z) − τ(w − s z))/(2s) · τ(w)ᵀ): the right-trivialised derivative by FD."""
    Rp, Rm, R = (np.asarray(tau(jnp.asarray(x))) for x in (w + s * z, w - s * z, w))
    return np_vee((Rp - Rm) / (2 * s) @ R.T)


# ---------------------------------------------------------------- hat / vee / ad / Ad
@SETTINGS
@given(vec, vec)
def test_hat_vee_cross_and_bracket(x, y):
    X, Y = np.asarray(J["hat"](x)), np.asarray(J["hat"](y))
    np.testing.assert_allclose(X, np_hat(x), atol=0)
    np.testing.assert_allclose(np.asarray(J["vee"](X)), x, atol=0)
    np.testing.assert_allclose(X @ y, np.cross(x, y), atol=1e-14)
    np.testing.assert_allclose(X @ Y - Y @ X, np_hat(np.cross(x, y)), atol=1e-13)


@SETTINGS
@given(vec, vec, vec, st.integers(0, 1000))
def test_ad_Ad_and_coadjoint_duality(w, p, z, seed):
    R = rand_rot(seed)
    # ad*_w p is the dual of ad_w: <ad*_w p, z> = <p, [w, z]>
    assert abs(np.dot(np.asarray(so3.ad_star(w, p)), z) - np.dot(p, np.cross(w, z))) < 1e-12
    np.testing.assert_allclose(np.asarray(so3.ad(w)) @ z, np.cross(w, z), atol=1e-13)
    # Ad_R z = vee(R hat(z) Rᵀ) and Ad*_R is its dual
    np.testing.assert_allclose(np.asarray(so3.Ad(R)) @ z, np_vee(R @ np_hat(z) @ R.T), atol=1e-13)
    assert abs(np.dot(np.asarray(so3.Ad_star(R, p)), z) - np.dot(p, np_vee(R @ np_hat(z) @ R.T))) < 1e-12


# ---------------------------------------------------------------- Cayley (T1, R2)
@SETTINGS
@given(vec)
def test_cayley_group_and_closed_form(w):
    C = np.asarray(J["cayley"](w))
    W = np_hat(w)
    closed = np.linalg.solve(np.eye(3) - W / 2, np.eye(3) + W / 2)
    np.testing.assert_allclose(C, closed, atol=1e-13)
    np.testing.assert_allclose(C.T @ C, np.eye(3), atol=1e-13)
    assert abs(np.linalg.det(C) - 1.0) < 1e-13
    np.testing.assert_allclose(C @ np.asarray(J["cayley"](-w)), np.eye(3), atol=1e-13)
    np.testing.assert_allclose(np.asarray(J["cayley_inv"](C)), w, atol=1e-12 * (1 + np.dot(w, w)))


@SETTINGS
@given(vec, vec)
def test_dcay_inverse_fd_and_adjoint_identities(w, z):
    D, Di = np.asarray(J["dcay"](w)), np.asarray(J["dcay_inv"](w))
    np.testing.assert_allclose(D @ Di, np.eye(3), atol=1e-13)
    np.testing.assert_allclose(D, np.linalg.inv(Di), atol=1e-13)
    np.testing.assert_allclose(right_fd(so3.cayley, w, z), D @ z, atol=1e-9)
    C = np.asarray(J["cayley"](w))
    Dim = np.asarray(J["dcay_inv"](-w))
    # dcay⁻¹_w cay(w) = dcay⁻¹_{−w}  and  (dcay⁻¹_w)ᵀ = dcay⁻¹_{−w}
    np.testing.assert_allclose(Di @ C, Dim, atol=1e-12)
    np.testing.assert_allclose(Di.T, Dim, atol=1e-14)
    # derivative of the inverse: D cay⁻¹(R)[δR] = dcay⁻¹_w vee(δR Rᵀ), δR = hat(z) R
    _, d = jax.jvp(so3.cayley_inv, (jnp.asarray(C),), (jnp.asarray(np_hat(z) @ C),))
    np.testing.assert_allclose(np.asarray(d), Di @ z, atol=1e-11 * (1 + np.dot(w, w)))


def test_dcay_inv_at_eps_w_has_unit_33_entry():
    """T2 / erratum E1: dcay⁻¹_{εw} with w3 = 0 has (3,3) entry 1 (the paper prints 0)."""
    eps, w1, w2 = 0.3, 0.4, -0.7
    M = np.asarray(so3.dcay_inv(eps * np.array([w1, w2, 0.0])))
    P57 = np.array([[1 + eps**2 * w1**2 / 4, eps**2 * w1 * w2 / 4, -eps * w2 / 2],
                    [eps**2 * w1 * w2 / 4, 1 + eps**2 * w2**2 / 4, eps * w1 / 2],
                    [eps * w2 / 2, -eps * w1 / 2, 1.0]])
    np.testing.assert_allclose(M, P57, atol=1e-15)


# ---------------------------------------------------------------- exponential (R2)
@SETTINGS
@given(small_or_not)
def test_exp_matches_expm_and_log_inverts(w):
    E = np.asarray(J["exp"](w))
    np.testing.assert_allclose(E, scipy.linalg.expm(np_hat(w)), atol=2e-15 * (1 + np.linalg.norm(w)) ** 2)
    np.testing.assert_allclose(E @ np.asarray(J["exp"](-w)), np.eye(3), atol=1e-14)
    np.testing.assert_allclose(np.asarray(J["log"](E)), w, atol=1e-12)


def test_log_near_pi_and_at_identity():
    n = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])
    for th in (np.pi - 1e-3, np.pi - 1e-7, np.pi):
        R = scipy.linalg.expm(np_hat(th * n))
        w = np.asarray(J["log"](R))
        np.testing.assert_allclose(scipy.linalg.expm(np_hat(w)), R, atol=1e-9)
        assert abs(np.linalg.norm(w) - th) < 1e-8
    np.testing.assert_allclose(np.asarray(J["log"](np.eye(3))), 0.0, atol=0)


def _series(w, coeff, terms=60):
    A, P, S = np_hat(w), np.eye(3), np.zeros((3, 3))
    for j in range(terms):
        S = S + coeff(j) * P
        P = P @ A
    return S


@SETTINGS
@given(small_or_not, vec)
def test_dexp_series_closed_form_inverse_and_fd(w, z):
    D, Di = np.asarray(J["dexp"](w)), np.asarray(J["dexp_inv"](w))
    fact = scipy.special.factorial
    np.testing.assert_allclose(D, _series(w, lambda j: 1.0 / fact(j + 1)), atol=1e-14)
    if np.linalg.norm(w) < 2.5:     # the Bernoulli series converges for |w| < 2π; keep it fast
        B = scipy.special.bernoulli(80)    # scipy: B1 = −1/2
        np.testing.assert_allclose(Di, _series(w, lambda j: B[j] / fact(j), 80), atol=1e-12)
    np.testing.assert_allclose(Di @ D, np.eye(3), atol=1e-13)
    np.testing.assert_allclose(right_fd(so3.exp, w, z), D @ z, atol=1e-9)


def test_exp_coefficients_continuous_across_series_switch_and_differentiable_at_zero():
    n = np.array([0.3, -0.5, 0.81]) / np.linalg.norm([0.3, -0.5, 0.81])
    for f in (so3.exp, so3.dexp, so3.dexp_inv):
        a, b = np.asarray(f(n * (0.2 - 1e-12))), np.asarray(f(n * (0.2 + 1e-12)))
        np.testing.assert_allclose(a, b, atol=1e-14)
    # the series branch (|w| < 0.2) is accurate to round-off over its whole range
    W = n[None, :] * np.linspace(1e-3, 0.2, 200)[:, None]
    E, D, Di = (np.asarray(f(W)) for f in (so3.exp, so3.dexp, so3.dexp_inv))
    for k in range(len(W)):
        np.testing.assert_allclose(E[k], scipy.linalg.expm(np_hat(W[k])), atol=1e-15)
        np.testing.assert_allclose(Di[k] @ D[k], np.eye(3), atol=1e-15)
    Jac = np.asarray(jax.jacfwd(so3.exp)(jnp.zeros(3)))     # d exp(ŵ)/dw at 0 = the hat basis
    assert np.all(np.isfinite(Jac))
    for i in range(3):
        np.testing.assert_allclose(Jac[:, :, i], np_hat(np.eye(3)[i]), atol=1e-15)


# ---------------------------------------------------------------- retraction objects, Lemma 9.5
@pytest.mark.parametrize("tau", RETRACTIONS, ids=lambda r: r.name)
def test_retraction_objects(tau):
    rng = np.random.default_rng(7)
    for _ in range(10):
        w, eta = rng.uniform(-1.2, 1.2, 3), rng.normal(size=3)
        R, Rm = np.asarray(tau(w)), np.asarray(tau.tau(-w))
        np.testing.assert_allclose(R @ Rm, np.eye(3), atol=1e-14)
        np.testing.assert_allclose(np.asarray(tau.inverse(R)), w, atol=1e-12)
        np.testing.assert_allclose(np.asarray(tau.dtau(w)) @ np.asarray(tau.dtau_inv(w)), np.eye(3), atol=1e-13)
        np.testing.assert_allclose(right_fd(tau.tau, w, eta), np.asarray(tau.dtau(w)) @ eta, atol=1e-9)
        # left trivialisation: τ(w)ᵀ d/ds τ(w + s η) = hat(dτ^L_w η)
        Rp, Rn = np.asarray(tau(w + 1e-6 * eta)), np.asarray(tau(w - 1e-6 * eta))
        left = np_vee(R.T @ (Rp - Rn) / 2e-6)
        np.testing.assert_allclose(left, np.asarray(tau.dtau_left(w)) @ eta, atol=1e-9)
        # Lemma 9.5: (53) dτ_w η = Ad_{τ(w)} dτ_{−w} η ; (54) dτ⁻¹_w η = dτ⁻¹_{−w} Ad_{τ(−w)} η
        np.testing.assert_allclose(np.asarray(tau.dtau(w)) @ eta, R @ np.asarray(tau.dtau(-w)) @ eta, atol=1e-14)
        np.testing.assert_allclose(np.asarray(tau.dtau_inv(w)) @ eta,
                                   np.asarray(tau.dtau_inv(-w)) @ (Rm @ eta), atol=1e-14)


def test_get_retraction():
    assert lie.get_retraction("cay") is lie.cayley and lie.get_retraction("exponential") is lie.exponential
    assert lie.get_retraction(lie.cayley) is lie.cayley
    with pytest.raises(UnknownNameError, match="cayley"):
        lie.get_retraction("quaternion")


# ---------------------------------------------------------------- batching / vmap
def test_batched_and_vmapped_agree_with_single():
    rng = np.random.default_rng(3)
    W = rng.normal(size=(4, 5, 3))
    for f in (so3.hat, so3.cayley, so3.dcay, so3.dcay_inv, so3.exp, so3.dexp, so3.dexp_inv):
        batched = np.asarray(f(W))
        single = np.stack([[np.asarray(f(W[i, j])) for j in range(5)] for i in range(4)])
        np.testing.assert_allclose(batched, single, atol=1e-15)
        np.testing.assert_allclose(np.asarray(jax.vmap(jax.vmap(f))(W)), single, atol=1e-15)
    Rs = np.asarray(so3.cayley(W))
    np.testing.assert_allclose(np.asarray(so3.cayley_inv(Rs)), W, atol=1e-12)
    Ws = W / np.maximum(1.0, np.linalg.norm(W, axis=-1, keepdims=True) / 3.0)
    np.testing.assert_allclose(np.asarray(so3.log(np.asarray(so3.exp(Ws)))), Ws, atol=1e-12)


# ---------------------------------------------------------------- T21, T24
@SETTINGS
@given(vec, st.floats(0.01, 1.0))
def test_T21_truncated_exponential_leaves_the_group(w, eps):
    X = eps * np_hat(w)
    T = np.eye(3) + X + X @ X / 2
    X4 = np.linalg.matrix_power(X, 4)
    expected = np.linalg.norm(X4) / 4          # TᵀT = I + X⁴/4 for skew X
    measured = float(J["orthogonality_defect"](T))
    assert abs(measured - expected) <= 1e-14 + 1e-12 * expected
    assert float(J["orthogonality_defect"](np.asarray(J["cayley"](eps * w)))) < 1e-14 * (1 + np.dot(w, w))


@SETTINGS
@given(st.integers(0, 10**6), st.integers(0, 10**6))
def test_T24_frobenius_distance_identity(s1, s2):
    A, B = rand_rot(s1), rand_rot(s2)
    d = float(J["distance"](A, B))
    assert abs(d - np.linalg.norm(np.eye(3) - A.T @ B)) < 1e-14
    # |I − AᵀB| = |A − B| holds for exact rotations; the sampled ones are orthogonal only to
    # round-off, which shows when A = B (d ≈ |I − AᵀA| instead of 0)
    defect = np.linalg.norm(np.eye(3) - A.T @ A) + np.linalg.norm(np.eye(3) - B.T @ B)
    assert abs(d - np.linalg.norm(A - B)) < 1e-14 + defect
    # the trace form, compared squared (its square root amplifies round-off near d = 0); the
    # two differ by tr(AAᵀBBᵀ) − 3, at most √3 times the defect (hypothesis found A = B)
    assert abs(d ** 2 - 2 * np.trace(np.eye(3) - A.T @ B)) < 3e-14 * (1 + d ** 2) + 2 * defect
