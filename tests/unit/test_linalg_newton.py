"""dalembert.linalg (small unrolled dense solves) and dalembert.solvers.newton.

Every solve is compared with NumPy/LAPACK on random matrices; Newton is checked for the
quadratic convergence it promises and for reporting failure (converged=False) instead of a silent
NaN on an equation without a real root.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dalembert  # noqa: F401  (enables float64)
from dalembert import linalg
from dalembert.solvers.newton import newton

RNG = np.random.default_rng(20240611)
_solve = linalg.solve
_solve_spd = linalg.solve_spd
_cholesky = linalg.cholesky
_cho_solve = linalg.cho_solve


def _spd(n, rng):
    A = rng.normal(size=(n, n))
    return A @ A.T + n * np.eye(n)


def _rel(x, y):
    return np.max(np.abs(np.asarray(x) - y)) / max(1.0, np.max(np.abs(y)))


@pytest.mark.parametrize("n", [1, 3, 6, linalg.UNROLL_MAX, linalg.UNROLL_MAX + 2])
def test_spd_solves_match_numpy(n):
    A = _spd(n, RNG)
    b = RNG.normal(size=n)
    B = RNG.normal(size=(n, 3))
    L = np.asarray(_cholesky(jnp.asarray(A)))
    # a lower-triangular factor with positive diagonal that reproduces A = L Lᵀ
    assert np.allclose(np.triu(L, 1), 0.0)
    assert np.all(np.diag(L) > 0)
    assert _rel(L @ L.T, A) < 1e-13
    assert _rel(L, np.linalg.cholesky(A)) < 1e-12
    assert _rel(_cho_solve(jnp.asarray(L), jnp.asarray(b)), np.linalg.solve(A, b)) < 1e-12
    assert _rel(_cho_solve(jnp.asarray(L), jnp.asarray(B)), np.linalg.solve(A, B)) < 1e-12
    assert _rel(_solve_spd(jnp.asarray(A), jnp.asarray(b)), np.linalg.solve(A, b)) < 1e-12
    assert _rel(_solve_spd(jnp.asarray(A), jnp.asarray(B)), np.linalg.solve(A, B)) < 1e-12


@pytest.mark.parametrize("n", [1, 3, 6, linalg.UNROLL_MAX + 3])
def test_general_solve_matches_numpy(n):
    A = RNG.normal(size=(n, n)) + 0.5 * np.eye(n)
    b = RNG.normal(size=n)
    B = RNG.normal(size=(n, 2))
    assert _rel(_solve(jnp.asarray(A), jnp.asarray(b)), np.linalg.solve(A, b)) < 1e-10
    assert _rel(_solve(jnp.asarray(A), jnp.asarray(B)), np.linalg.solve(A, B)) < 1e-10


@pytest.mark.parametrize("n,m", [(3, 1), (4, 2)])
def test_general_solve_needs_pivoting_saddle_point(n, m):
    """The KKT matrix [[G, μᵀ], [μ, 0]] has a zero diagonal block: elimination without row
    pivoting divides by zero (or by a tiny number); with partial pivoting the solve is exact."""
    G = _spd(n, RNG)
    mu = RNG.normal(size=(m, n))
    K = np.block([[G, mu.T], [mu, np.zeros((m, m))]])
    # put the zero-diagonal rows first so that the very first pivot is 0
    perm = np.r_[np.arange(n, n + m), np.arange(n)]
    K = K[perm][:, perm]
    assert K[0, 0] == 0.0
    rhs = RNG.normal(size=n + m)
    x = np.asarray(_solve(jnp.asarray(K), jnp.asarray(rhs)))
    assert np.all(np.isfinite(x))
    assert _rel(x, np.linalg.solve(K, rhs)) < 1e-10
    assert np.max(np.abs(K @ x - rhs)) < 1e-10


def _members_needing_and_not_needing_pivoting(n, B, rng):
    """B matrices (n, n): even members diagonally dominant (the batched solve keeps the diagonal
    pivots), odd members KKT matrices with a zero first pivot (only partial pivoting solves them)."""
    A = np.empty((B, n, n))
    for i in range(B):
        if i % 2 == 0:
            A[i] = rng.normal(size=(n, n)) + 3.0 * n * np.eye(n)
        else:
            G = _spd(n - 1, rng)
            mu = rng.normal(size=(1, n - 1))
            A[i] = np.block([[np.zeros((1, 1)), mu], [mu.T, G]])
    return A


@pytest.mark.parametrize("n,rhs", [(2, ()), (2, (3,)), (5, ()), (5, (3,)), (linalg.UNROLL_MAX, (2,)),
                                   (linalg.BATCHED_UNROLL_MAX, (3,))])
def test_vmapped_solve_matches_numpy_with_and_without_pivoting(n, rhs):
    """Under vmap the members are eliminated together without row exchanges when every pivot
    passes the threshold test, and by partial pivoting otherwise: both batches agree with NumPy,
    and with the one-matrix solve."""
    A = _members_needing_and_not_needing_pivoting(n, 8, RNG)
    b = RNG.normal(size=(8, n) + rhs)
    ref = np.linalg.solve(A, b if rhs else b[..., None])
    ref = ref if rhs else ref[..., 0]
    solve_v = jax.jit(jax.vmap(linalg.solve))
    solve_1 = jax.jit(linalg.solve)                     # compiled once (eager dispatch took 40 s at n = 13)
    # diagonal pivots only / a mixed batch, both of 8 members: one compilation (14 s at n = 16)
    for members in (np.arange(8) % 4 * 2, np.arange(8)):
        x = np.asarray(solve_v(jnp.asarray(A[members]), jnp.asarray(b[members])))
        assert _rel(x, ref[members]) < 1e-10
        if n <= linalg.UNROLL_MAX:   # above, the one-matrix solve is LAPACK's, as NumPy's (checked above)
            one = np.stack([np.asarray(solve_1(jnp.asarray(a), jnp.asarray(c)))
                            for a, c in zip(A[members], b[members])])
            assert _rel(x, one) < 1e-12


@pytest.mark.parametrize("n", [1, 4, 13, linalg.BATCHED_UNROLL_MAX + 2])
def test_chord_factor_and_solve_alone_and_under_vmap(n):
    """chord_solve(chord_factor(A), b) solves A x = b for one matrix (an LU factor), under vmap
    (the members' matrices eliminated with each right-hand side; a batch that needs pivoting
    falls back), with a factor shared by all members, and with stacked one-matrix factors."""
    A = _members_needing_and_not_needing_pivoting(n, 6, RNG) if n > 1 else RNG.normal(size=(6, 1, 1)) + 2.0
    b = RNG.normal(size=(6, n))
    ref = np.linalg.solve(A, b[..., None])[..., 0]
    factor_1 = jax.jit(linalg.chord_factor)             # compiled: eager dispatch of the elimination is slow
    solve_1 = jax.jit(lambda a, c: linalg.chord_solve(linalg.chord_factor(a), c))
    one = np.stack([np.asarray(solve_1(jnp.asarray(a), jnp.asarray(c))) for a, c in zip(A, b)])
    assert _rel(one, ref) < 1e-10

    @jax.jit
    @jax.vmap
    def members(a, c):
        f = linalg.chord_factor(a)
        return linalg.chord_solve(f, c), linalg.chord_solve(f, 2.0 * c)

    for sel in (np.arange(6) % 3 * 2, np.arange(6)):            # diagonal pivots only / mixed (one compilation)
        x, x2 = members(jnp.asarray(A[sel]), jnp.asarray(b[sel]))
        assert _rel(x, ref[sel]) < 1e-10
        assert _rel(x2, 2.0 * ref[sel]) < 1e-10
    shared = factor_1(jnp.asarray(A[0]))
    x = jax.jit(jax.vmap(lambda c: linalg.chord_solve(shared, c)))(jnp.asarray(b))
    assert _rel(x, np.linalg.solve(A[0], b.T).T) < 1e-10
    stacked = jax.tree_util.tree_map(lambda *f: jnp.stack(f), *[factor_1(jnp.asarray(a)) for a in A])
    x = jax.jit(jax.vmap(linalg.chord_solve))(stacked, jnp.asarray(b))
    assert _rel(x, ref) < 1e-10


def test_batched_elimination_threshold_test():
    """The no-exchange elimination flags a batch where a pivot fails |a_kk| ≥ u |a_ik|
    (u = PIVOT_THRESHOLD), not one where partial pivoting would merely prefer another row."""
    u = linalg.PIVOT_THRESHOLD
    def flag(rows):
        A = jnp.asarray(np.moveaxis(np.asarray(rows, float), 0, -1))
        return bool(linalg._eliminate_members(A, jnp.ones((2, A.shape[-1])))[1])
    ok = [[1.0, 2.0], [0.5 / u, 1.0]]          # partial pivoting would exchange; the threshold keeps it
    bad = [[1.0, 2.0], [2.0 / u, 1.0]]
    assert not flag([ok, ok])
    assert flag([ok, bad])
    # the flagged batch is still solved correctly (by the pivoted fallback)
    x = jax.vmap(linalg.solve)(jnp.asarray([ok, bad]), jnp.ones((2, 2)))
    assert _rel(x, np.linalg.solve(np.asarray([ok, bad]), np.ones((2, 2, 1)))[..., 0]) < 1e-14


def test_vmapped_solve_broadcasts_unbatched_arguments_and_differentiates():
    A = jnp.asarray(RNG.normal(size=(4, 4)) + 8.0 * np.eye(4))
    b = jnp.asarray(RNG.normal(size=(5, 4)))
    x = jax.vmap(lambda c: linalg.solve(A, c))(b)
    assert _rel(x, np.linalg.solve(np.asarray(A), np.asarray(b).T).T) < 1e-13
    As = jnp.stack([A, 2.0 * A])
    y = jax.vmap(lambda M: linalg.solve(M, b[0]))(As)
    assert _rel(y[1], 0.5 * np.linalg.solve(np.asarray(A), np.asarray(b[0]))) < 1e-13
    # forward- and reverse-mode derivatives through the batched solve: d/ds (A + sI)⁻¹ b
    def f(s):
        return jnp.sum(jax.vmap(lambda M, c: linalg.solve(M + s * jnp.eye(4), c))(As, b[:2]))
    Ainv = [np.linalg.inv(np.asarray(M)) for M in As]
    exact = sum(-np.sum(Ai @ Ai @ np.asarray(c)) for Ai, c in zip(Ainv, b[:2]))
    assert abs(float(jax.jacfwd(f)(0.0)) - exact) < 1e-12 * max(1.0, abs(exact))
    assert abs(float(jax.grad(f)(0.0)) - exact) < 1e-12 * max(1.0, abs(exact))


def test_small_products_match_numpy():
    A = RNG.normal(size=(3, 4))
    B = RNG.normal(size=(4, 2))
    x = RNG.normal(size=4)
    y = RNG.normal(size=3)
    assert _rel(linalg.mv(jnp.asarray(A), jnp.asarray(x)), A @ x) < 1e-14
    assert _rel(linalg.vm(jnp.asarray(y), jnp.asarray(A)), y @ A) < 1e-14
    assert _rel(linalg.mm(jnp.asarray(A), jnp.asarray(B)), A @ B) < 1e-14


def test_cholesky_of_indefinite_matrix_is_not_finite():
    """Documented contract: no exception inside a trace, non-finite entries instead."""
    A = jnp.asarray(np.diag([1.0, -1.0, 2.0]))
    assert not np.all(np.isfinite(np.asarray(linalg.cholesky(A))))


def test_solves_are_jittable_and_agree_with_eager():
    A = _spd(4, RNG)
    b = RNG.normal(size=4)
    f = jax.jit(linalg.solve_spd)
    g = jax.jit(linalg.solve)
    assert _rel(f(jnp.asarray(A), jnp.asarray(b)), np.linalg.solve(A, b)) < 1e-12
    assert _rel(g(jnp.asarray(A), jnp.asarray(b)), np.linalg.solve(A, b)) < 1e-12


# ---------------------------------------------------------------------------------------------
# Newton
# ---------------------------------------------------------------------------------------------

def _F2(x):
    # root (√2, √2); Jacobian [[2x, 2y], [1, -1]] regular near the root
    return jnp.stack([x[0] ** 2 + x[1] ** 2 - 4.0, x[0] - x[1]])


def test_newton_converges_to_root():
    res = newton(_F2, jnp.array([1.0, 2.0]))
    assert bool(res.converged)
    assert np.max(np.abs(np.asarray(res.x) - np.sqrt(2.0))) < 1e-14
    assert int(res.iterations) <= 8


def test_newton_converges_quadratically():
    """Running with max_iter = k returns the k-th iterate; the errors must satisfy
    e_{k+1} ≈ c e_k² with c = |f''/(2 f')| at the root (here 1/(2√2) ≈ 0.354)."""
    F = lambda x: x ** 2 - 2.0  # noqa: E731
    root = np.sqrt(2.0)
    errs = []
    for k in range(1, 7):
        res = newton(F, jnp.array([1.0]), max_iter=k, rtol=0.0)
        assert int(res.iterations) == k
        errs.append(abs(float(res.x[0]) - root))
    errs = np.array(errs)
    ratios = [errs[i + 1] / errs[i] ** 2 for i in range(len(errs) - 1) if errs[i + 1] > 1e-13]
    assert len(ratios) >= 3
    for r in ratios:
        assert 0.25 < r < 0.5, (errs, ratios)
    assert errs[-1] < 1e-15


def test_newton_custom_jacobian_agrees():
    J = lambda x: jnp.array([[2 * x[0], 2 * x[1]], [1.0, -1.0]])  # noqa: E731
    a = newton(_F2, jnp.array([1.0, 2.0]), jacobian=J)
    b = newton(_F2, jnp.array([1.0, 2.0]))
    assert bool(a.converged) and bool(b.converged)
    assert np.max(np.abs(np.asarray(a.x) - np.asarray(b.x))) < 1e-15


@pytest.mark.parametrize("x0", [0.5, 3.0, -1.7])
def test_newton_reports_failure_without_root(x0):
    """x² + 1 = 0 has no real root: Newton must stop within max_iter with converged=False."""
    res = newton(lambda x: x ** 2 + 1.0, jnp.array([x0]), max_iter=25)
    assert not bool(res.converged)
    assert 1 <= int(res.iterations) <= 25


def test_newton_reports_failure_on_non_finite_iterate():
    """A zero derivative at the start gives an infinite update: failure, not a NaN 'success'."""
    res = newton(lambda x: x ** 2 + 1.0, jnp.array([0.0]), max_iter=25)
    assert not bool(res.converged)


def test_newton_is_jittable_and_vmappable():
    solve = jax.jit(jax.vmap(lambda c: newton(lambda x: x ** 2 - c, jnp.array([1.0])).x[0]))
    cs = jnp.array([2.0, 3.0, 5.0])
    assert np.max(np.abs(np.asarray(solve(cs)) - np.sqrt(np.asarray(cs)))) < 1e-14


@pytest.mark.parametrize("n", [1, 3, linalg.UNROLL_MAX, linalg.UNROLL_MAX + 3,
                               linalg.SUBSTITUTION_UNROLL_MAX + 2])
def test_lu_factor_and_solve_match_numpy(n):
    """One factorisation, several right-hand sides (vector and matrix), against LAPACK; P A = L U."""
    A = RNG.normal(size=(n, n)) + n * np.eye(n) * 0.1
    LU, perm = linalg.lu_factor(jnp.asarray(A))
    LU, perm = np.asarray(LU), np.asarray(perm)
    L = np.tril(LU, -1) + np.eye(n)
    U = np.triu(LU)
    assert sorted(perm.tolist()) == list(range(n))
    assert np.max(np.abs(A[perm] - L @ U)) < 1e-12 * max(1.0, np.max(np.abs(A)))
    assert np.all(np.abs(np.tril(L, -1)) <= 1.0 + 1e-15)            # partial pivoting
    for rhs in (RNG.normal(size=n), RNG.normal(size=(n, 2))):
        x = linalg.lu_solve((jnp.asarray(LU), jnp.asarray(perm)), jnp.asarray(rhs))
        assert _rel(x, np.linalg.solve(A, rhs)) < 1e-10


def test_lu_factor_pivots_on_zero_leading_entry():
    """A zero first pivot (KKT-like matrix) is handled by the row exchange."""
    n, m = 4, 2
    G = _spd(n, RNG)
    mu = RNG.normal(size=(m, n))
    K = np.block([[np.zeros((m, m)), mu], [mu.T, G]])
    rhs = RNG.normal(size=n + m)
    x = linalg.lu_solve(linalg.lu_factor(jnp.asarray(K)), jnp.asarray(rhs))
    assert _rel(x, np.linalg.solve(K, rhs)) < 1e-10


def test_simplified_newton_same_root_linear_rate():
    """Simplified (chord) Newton reaches the root of full Newton to the tolerance, with more
    iterations (linear rate) from the same start."""
    a = newton(_F2, jnp.array([1.3, 1.5]), simplified=True)
    b = newton(_F2, jnp.array([1.3, 1.5]))
    assert bool(a.converged) and bool(b.converged)
    assert np.max(np.abs(np.asarray(a.x) - np.asarray(b.x))) < 1e-14
    assert int(a.iterations) > int(b.iterations)
    # the error contracts by a roughly constant factor per iteration (linear convergence)
    root = np.asarray(b.x)
    errs = [np.max(np.abs(np.asarray(newton(_F2, jnp.array([1.3, 1.5]), simplified=True,
                                              max_iter=k, rtol=0.0).x) - root)) for k in range(1, 6)]
    ratios = [errs[i + 1] / errs[i] for i in range(4) if errs[i + 1] > 1e-14]
    assert len(ratios) >= 2 and all(r < 0.5 for r in ratios)
    assert max(ratios) / min(ratios) < 10.0


@pytest.mark.parametrize("simplified", [True, False])
def test_newton_error_estimate_stops_earlier_at_the_same_tolerance(simplified):
    """``estimate``: the iterate is returned once θ/(1 − θ)|Δx| is within the tolerance. Against
    the root computed independently (√2), the returned iterate must still be within the
    tolerance, with fewer iterations than the plain test |Δx| ≤ tol. Negative control: a
    tolerance of 0 cannot be met by the estimate (the loop runs to max_iter)."""
    x0 = jnp.array([1.3, 1.5])
    plain = newton(_F2, x0, simplified=simplified)
    est = newton(_F2, x0, simplified=simplified, estimate=True)
    assert bool(plain.converged) and bool(est.converged)
    assert np.max(np.abs(np.asarray(est.x) - np.sqrt(2.0))) <= 1e-14 * (1 + np.sqrt(2.0))
    assert int(est.iterations) < int(plain.iterations)
    never = newton(_F2, x0, simplified=simplified, estimate=True, rtol=0.0, max_iter=9)
    assert int(never.iterations) == 9


def test_simplified_newton_first_residual_from_the_jacobian_pass():
    """Simplified Newton takes F(x0) from the pass that forms J(x0): the iterates must equal those
    of a user Jacobian (evaluated apart) to round-off, iteration by iteration."""
    J = lambda x: jnp.array([[2 * x[0], 2 * x[1]], [1.0, -1.0]])  # noqa: E731
    for k in range(1, 5):
        a = newton(_F2, jnp.array([1.3, 1.5]), simplified=True, max_iter=k, rtol=0.0)
        b = newton(_F2, jnp.array([1.3, 1.5]), simplified=True, max_iter=k, rtol=0.0, jacobian=J)
        assert int(a.iterations) == int(b.iterations) == k
        assert np.max(np.abs(np.asarray(a.x) - np.asarray(b.x))) < 1e-15


def test_simplified_newton_reports_failure_without_root():
    res = newton(lambda x: x ** 2 + 1.0, jnp.array([0.5]), max_iter=25, simplified=True)
    assert not bool(res.converged)


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 9), st.integers(0, 10_000), st.booleans())
def test_constant_metric_factor_inverse_equals_the_cholesky_solves(n, seed, diagonal):
    """A constant metric applies G⁻¹ as a product with its precomputed inverse (elementwise with
    its diagonal when G is diagonal); it must agree with the two triangular solves of the
    Cholesky factor (and with LAPACK) to round-off."""
    from dalembert.systems.nonholonomic import MetricFactor, constant_metric_factor
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n))
    G = np.diag(rng.uniform(0.1, 10.0, n)) if diagonal else A @ A.T + n * np.eye(n)
    f = constant_metric_factor(G)
    assert (f.inverse_diagonal is not None) == diagonal
    chol = MetricFactor(f.L)                                 # no inverse: the substitution path
    b, B = rng.normal(size=n), rng.normal(size=(n, 3))
    for rhs in (b, B):
        x = np.asarray(f.solve(jnp.asarray(rhs)))
        np.testing.assert_allclose(x, np.asarray(chol.solve(jnp.asarray(rhs))), rtol=0,
                                   atol=1e-13 * max(1.0, np.max(np.abs(x))))
        np.testing.assert_allclose(G @ x, rhs, rtol=0, atol=1e-12 * np.linalg.cond(G))
