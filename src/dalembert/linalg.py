"""Small dense linear algebra for use *inside* a compiled time step.

For the matrix sizes of a nonholonomic step (n up to a few tens), a LAPACK call or even an XLA
``dot`` costs far more than its arithmetic (docs/benchmarks.md, "Measurements behind the code").
The functions here keep to elementwise arithmetic, which XLA fuses, and fall back to
``jnp.linalg`` beyond :data:`UNROLL_MAX`.

Under ``jax.vmap`` (an ensemble) :func:`solve` and :func:`chord_solve` have their own batching
rule (``jax.custom_batching.custom_vmap``): the members' matrices are eliminated together with the
members on the last axis (:func:`_solve_members`), which XLA vectorises across the members.

Derivatives: :func:`solve` has a JVP rule, d(A⁻¹b) = A⁻¹(db − dA x), whose tangent solve
(:func:`tangent_solve`: LU factors, then substitution) is plain JAX arithmetic linear in the
right-hand side, so that reverse mode can transpose it (a ``custom_vmap`` rule cannot be
transposed). The chord factorisations are used only inside Newton iterations, which are not
differentiated (:func:`dalembert.solvers.newton.newton`).

All functions are pure, jit- and vmap-able, and work in float64. Nothing here forms an explicit
inverse (except :func:`inv`, for a system's small constant matrices).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_batching import custom_vmap
from jax.scipy.linalg import solve_triangular

#: Largest size for which solves and factorisations are unrolled into elementwise arithmetic.
UNROLL_MAX = 10
#: Largest size for which :func:`solve` and :func:`chord_solve` under ``jax.vmap`` eliminate the
#: members' matrices together as unrolled elementwise arithmetic (:func:`_solve_members`); one
#: matrix above :data:`UNROLL_MAX` goes to LAPACK. The members' elimination is faster than
#: LAPACK's batched LU at these sizes and leaves the ensemble's loop in one kernel, so that it
#: splits over the CPU devices (docs/benchmarks.md, "Measurements behind the code").
BATCHED_UNROLL_MAX = 16
#: A single trajectory's solves and chord (simplified Newton) factorisations of size
#: UNROLL_MAX < n ≤ BATCHED_UNROLL_MAX use the ensembles' elimination with one member instead of
#: LAPACK, which is slower at these sizes (docs/high_order.md has the measurement).
SINGLE_AS_MEMBERS = True
#: Threshold of the pivoting test of the batched solve (:func:`_solve_members`): a diagonal pivot
#: is kept when |M_kk| ≥ u·|M_ik| for all i > k (threshold partial pivoting with u = 0.1, as in
#: sparse direct solvers: Duff, Erisman & Reid, *Direct Methods for Sparse Matrices*, §5.4; the
#: growth per stage is at most 1 + 1/u).
PIVOT_THRESHOLD = 0.1
#: Largest size for which :func:`lu_solve` (forward and back substitution with a given factor) is
#: unrolled. Substitution is cheap to unroll (n²/2 multiply-adds, one fusion) and beats LAPACK's
#: two triangular solves, whereas the unrolled elimination of :func:`lu_factor` loses to LAPACK
#: beyond :data:`UNROLL_MAX` (docs/benchmarks.md, "Measurements behind the code").
SUBSTITUTION_UNROLL_MAX = 32


def traced(x) -> bool:
    """Whether ``x`` is a JAX tracer (a value inside ``jit``/``grad``/``vmap``), whose entries
    cannot be inspected in Python: constants of a system built from traced parameters stay JAX
    arrays and skip the checks that need their values."""
    return isinstance(x, jax.core.Tracer)


def inv(A):
    """Inverse of a small constant matrix A (n, n): NumPy float64 for a concrete A, JAX for a
    traced one (a system's parameter under differentiation)."""
    return jnp.linalg.inv(A) if traced(A) else jnp.asarray(np.linalg.inv(np.asarray(A, np.float64)))


def mv(A, x):
    """Matrix-vector product A @ x as multiply-and-sum.  A: (r, c), x: (c,) -> (r,)."""
    return jnp.sum(A * x[None, :], axis=-1)


def vm(x, A):
    """Vector-matrix product x @ A (= Aᵀ x).  x: (r,), A: (r, c) -> (c,)."""
    return jnp.sum(A * x[:, None], axis=0)


def mm(A, B):
    """Matrix product A @ B as multiply-and-sum.  A: (r, k), B: (k, c) -> (r, c)."""
    return jnp.sum(A[:, :, None] * B[None, :, :], axis=1)


def cholesky(A):
    """Lower Cholesky factor L of a symmetric positive definite A (n, n), with A = L Lᵀ.

    A matrix that is not positive definite gives NaN entries (no exception inside a trace);
    callers check finiteness.
    """
    n = A.shape[0]
    if n > UNROLL_MAX:
        return jnp.linalg.cholesky(A)
    L = [[None] * n for _ in range(n)]
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s = s - L[j][k] * L[j][k]
        d = jnp.sqrt(s)
        L[j][j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s = s - L[i][k] * L[j][k]
            L[i][j] = s / d
    zero = jnp.zeros((), A.dtype)
    return jnp.stack([jnp.stack([L[i][j] if j <= i else zero for j in range(n)]) for i in range(n)])


def _forward(T, B, n, unit):
    """Unrolled forward substitution: y_i = (B_i − Σ_{k<i} T(i, k) y_k) / T(i, i) (no division
    when ``unit``); T(i, k) returns the (i, k) entry of the lower-triangular factor."""
    y = [None] * n
    for i in range(n):
        s = B[i]
        for k in range(i):
            s = s - T(i, k) * y[k]
        y[i] = s if unit else s / T(i, i)
    return y


def _backward(T, y, n):
    """Unrolled back substitution: x_i = (y_i − Σ_{k>i} T(i, k) x_k) / T(i, i), stacked (n, ...)."""
    x = [None] * n
    for i in reversed(range(n)):
        s = y[i]
        for k in range(i + 1, n):
            s = s - T(i, k) * x[k]
        x[i] = s / T(i, i)
    return jnp.stack(x)


def cho_solve(L, b):
    """Solve (L Lᵀ) x = b given the Cholesky factor L (n, n).  b: (n,) or (n, k)."""
    n = L.shape[0]
    vec = b.ndim == 1
    B = b[:, None] if vec else b
    if n > UNROLL_MAX:
        y = jnp.linalg.solve(L, B)
        x = jnp.linalg.solve(L.T, y)
        return x[:, 0] if vec else x
    y = _forward(lambda i, k: L[i, k], B, n, unit=False)
    X = _backward(lambda i, k: L[k, i], y, n)
    return X[:, 0] if vec else X


def forward_solve(L, b):
    """Solve L x = b for lower-triangular L (n, n) by forward substitution.  b: (n,) or (n, k)."""
    n = L.shape[0]
    vec = b.ndim == 1
    B = b[:, None] if vec else b
    if n > UNROLL_MAX:
        x = solve_triangular(L, B, lower=True)
    else:
        x = jnp.stack(_forward(lambda i, k: L[i, k], B, n, unit=False))
    return x[:, 0] if vec else x


@jax.custom_jvp
def spd_solve(A, b):
    """A⁻¹b for a symmetric positive definite A (n, n) by its Cholesky factor, as :func:`solve_spd`,
    with the derivative d(A⁻¹b) = A⁻¹(db − dA A⁻¹b) applied by the same factor instead of
    differentiating the factorisation and its substitutions. b: (n,) or (n, k).

    The values are those of :func:`solve_spd`; its derivatives agree to round-off. Both modes and
    higher orders go through the rule (a custom JVP, transposed for reverse mode). On the Whipple
    bicycle (n = 8) the program of a Gonzalez step's Jacobian is ⅓ smaller with it in the
    Hamiltonian ½ pᵀG⁻¹p (docs/benchmarks.md, "The IFToMM uncontrolled bicycle").
    """
    return cho_solve(cholesky(A), b)


@spd_solve.defjvp
def _spd_solve_jvp(primals, tangents):
    A, b = primals
    dA, db = tangents
    L = cholesky(A)
    x = cho_solve(L, b)
    return x, cho_solve(L, db - (mv(dA, x) if x.ndim == 1 else mm(dA, x)))


def solve_spd(A, b):
    """Solve A x = b for symmetric positive definite A (n, n).  b: (n,) or (n, k)."""
    return cho_solve(cholesky(A), b)


@jax.custom_jvp
def solve(A, b):
    """Solve A x = b for a general square A (n, n) by Gaussian elimination with partial pivoting.

    b: (n,) or (n, k).  A singular A gives non-finite entries (callers check finiteness).
    Unrolled for n ≤ :data:`UNROLL_MAX`; for UNROLL_MAX < n ≤ :data:`BATCHED_UNROLL_MAX` the
    ensembles' elimination below with one member (no LAPACK call: measured on the 13-unknown
    discrete-gradient step, see :data:`SINGLE_AS_MEMBERS`); LAPACK (``jnp.linalg.solve``) beyond.

    Under ``jax.vmap`` (an ensemble) with n ≤ :data:`BATCHED_UNROLL_MAX` the members are solved
    together by :func:`_solve_members`: threshold pivoting that keeps the diagonal pivots when
    they pass the test of :data:`PIVOT_THRESHOLD` and otherwise falls back to elimination with
    partial pivoting for the whole batch (unrolled up to :data:`UNROLL_MAX`, a loop above; the
    result agrees with this function's to round-off). No LAPACK call is made under ``vmap`` for
    these sizes.
    """
    n = A.shape[0]
    if n == 1:
        return b / A[0, 0]
    if n <= UNROLL_MAX:
        return _solve_unrolled(A, b)
    return _solve_mid(A, b) if n <= BATCHED_UNROLL_MAX else _lapack(A, b)


@solve.defjvp
def _solve_jvp(primals, tangents):
    """d(A⁻¹b) = A⁻¹ (db − dA x). The tangent is solved by :func:`lu_factor`/:func:`lu_solve`,
    which are plain JAX arithmetic, linear in the right-hand side: reverse mode transposes them
    (the fast solves above have a ``custom_vmap`` batching rule, which JAX cannot transpose)."""
    A, b = primals
    dA, db = tangents
    x = solve(A, b)
    dAx = jnp.einsum("ij,j...->i...", dA, x)
    return x, tangent_solve(A, db - dAx)


def tangent_solve(A, b):
    """Solve A x = b (A (n, n), b (n,) or (n, k)) with operations that JAX can differentiate in
    both modes and transpose in b (LU factors, then substitution): for derivative programs
    (:func:`solve`'s JVP, the implicit-function-theorem solves of Newton steps). Slower under
    ``vmap`` than :func:`solve`, which the time steps themselves use."""
    if A.shape[0] == 1:
        return b / A[0, 0]
    return lu_solve(lu_factor(A), b)


def _lapack(A, b):
    """LAPACK's solve (``jnp.linalg.solve``) for b of shape (n,) or (n, k)."""
    return jnp.linalg.solve(A, b[:, None])[:, 0] if b.ndim == 1 else jnp.linalg.solve(A, b)


def _pivoted(A, b):
    """Unrolled Gaussian elimination with partial pivoting: A (n, n), b (n,) or (n, k)."""
    n = A.shape[0]
    vec = b.ndim == 1
    M = jnp.concatenate([A, b[:, None] if vec else b], axis=1)
    rows = jnp.arange(n)
    for k in range(n - 1):
        col = jnp.where(rows >= k, jnp.abs(M[:, k]), -1.0)
        p = jnp.argmax(col)
        # swap rows k and p (p >= k) with selects only: no dynamic slicing, so that XLA fuses it
        rk, rp = M[k], M[n - 1]
        for i in range(n - 2, k - 1, -1):
            rp = jnp.where(p == i, M[i], rp)
        M = jnp.where((rows == k)[:, None], rp[None, :],
                      jnp.where((rows == p)[:, None], rk[None, :], M))
        f = jnp.where(rows > k, M[:, k] / M[k, k], 0.0)
        M = M - f[:, None] * M[k][None, :]
    X = _backward(lambda i, k: M[i, k], [M[i, n:] for i in range(n)], n)
    return X[:, 0] if vec else X


def _pivoted_loop(A, b):
    """Gaussian elimination with partial pivoting as a ``lax.fori_loop`` over the stages and the
    back substitution: A (n, n), b (n,) or (n, k). The members' fallback of :func:`solve` under
    ``vmap`` for UNROLL_MAX < n ≤ BATCHED_UNROLL_MAX: it makes no LAPACK call and its loop
    bodies compile once (a fraction of a second, against about a second for the unrolled
    :func:`_pivoted`), where speed matters little (the fallback is rare)."""
    n = A.shape[0]
    vec = b.ndim == 1
    M = jnp.concatenate([A, b[:, None] if vec else b], axis=1)
    rows = jnp.arange(n)

    def stage(k, M):
        p = jnp.argmax(jnp.where(rows >= k, jnp.abs(M[:, k]), -1.0))
        rk, rp = M[k], M[p]
        M = M.at[p].set(rk).at[k].set(rp)
        f = jnp.where(rows > k, M[:, k] / M[k, k], 0.0)
        return M - f[:, None] * M[k][None, :]

    M = lax.fori_loop(0, n - 1, stage, M)

    def back(j, X):                       # rows > i of X already hold the solution
        i = n - 1 - j
        s = X[i] - jnp.sum(jnp.where(rows > i, M[i, :n], 0.0)[:, None] * X, axis=0)
        return X.at[i].set(s / M[i, i])

    X = lax.fori_loop(0, n, back, M[:, n:])
    return X[:, 0] if vec else X


def _per_member(x, batched: bool, size: int):
    """x with a leading member axis of length ``size`` (broadcast when it is shared)."""
    return x if batched else jnp.broadcast_to(x, (size,) + x.shape)


def _members_last(one, fallback=None):
    """``one`` (a solve of one matrix: A (n, n), b (n,) or (n, k) -> x) with the ``jax.vmap``
    rule :func:`_solve_members`, whose fallback is ``fallback`` (default ``one``)."""
    fn = custom_vmap(one)

    @fn.def_vmap
    def rule(size, in_batched, A, b):
        return _solve_members(fallback or one, size, in_batched, A, b), True
    return fn


def _solve_members(one, size, in_batched, A, b):
    """``jax.vmap(one)(A, b)`` for the members of an ensemble: A (S, n, n), b (S, n) or (S, n, k).

    Partial pivoting needs a data-dependent row exchange per member, and a vmapped step keeps
    the members on the leading axis, so each matrix entry of all the members is a strided
    vector: the batched pivoted elimination runs at about one scalar operation per entry, and
    LAPACK's batched LU is a call outside XLA's kernels. Here the members go to the last axis,
    every entry is a contiguous vector over the members and the elimination is elementwise
    arithmetic without row exchanges, which XLA vectorises (timings: docs/benchmarks.md,
    "Measurements behind the code"). Each diagonal pivot must
    pass the threshold test |M_kk| ≥ u·max_{i>k} |M_ik| (u = :data:`PIVOT_THRESHOLD`; threshold
    partial pivoting, Duff–Erisman–Reid §5.4), which bounds the growth as partial pivoting's
    (1 + 1/u per stage instead of 2). If it fails for any member, the whole batch is solved
    again by ``one`` (``lax.cond``: only one of the two runs; :func:`solve` passes a pivoted
    elimination without LAPACK calls, unrolled up to :data:`UNROLL_MAX`, :func:`_pivoted_loop`
    above).

    The implicit steps' Newton matrices pass the test with a wide margin: the DLA matrix on the
    chaotic quartic system has pivots ≈ 1/h against constraint entries ≈ w/h, |w| < 1, a case
    where partial pivoting itself would exchange rows as soon as |w| exceeds the pivot ratio;
    a discrete-gradient step's matrix is I + O(h).
    """
    A, b = _per_member(A, in_batched[0], size), _per_member(b, in_batched[1], size)
    X, exchange = _eliminate_members(jnp.moveaxis(A, 0, -1), jnp.moveaxis(b, 0, -1))
    return lax.cond(exchange, lambda: jax.vmap(one)(A, b), lambda: jnp.moveaxis(X, -1, 0))


_solve_unrolled = _members_last(_pivoted)


def _one_member(A, b):
    """One matrix solved as an ensemble of one member (:func:`_solve_members`): threshold-pivoted
    elimination, with the pivoted loop as its fallback; no LAPACK call."""
    return _solve_members(_pivoted_loop, 1, (False, False), A, b)[0]


# under vmap the fallback is a pivoted elimination in a loop, not LAPACK: an ensemble's program
# then holds no LAPACK call, and may run on as many CPU devices as XLA has pool threads
# (engine.ensemble_devices: a LAPACK kernel waits on that pool)
_solve_mid = _members_last(_one_member, fallback=_pivoted_loop)


def _eliminate_members(A, b):
    """Gaussian elimination without row exchanges on members along the last axis.

    A: (n, n, S), b: (n, S) or (n, k, S) -> X of b's shape, and a bool scalar: whether a pivot
    failed the threshold test (:data:`PIVOT_THRESHOLD`) for some member.
    """
    n = A.shape[0]
    cols = [b[i] for i in range(n)] if b.ndim == 2 else [list(b[i]) for i in range(n)]
    width = 1 if b.ndim == 2 else b.shape[1]
    M = [[A[i, j] for j in range(n)] + ([cols[i]] if b.ndim == 2 else cols[i]) for i in range(n)]
    failed = jnp.zeros(A.shape[2:], bool)
    for k in range(n - 1):
        largest = jnp.abs(M[k + 1][k])
        for i in range(k + 2, n):
            largest = jnp.maximum(largest, jnp.abs(M[i][k]))
        failed = failed | (PIVOT_THRESHOLD * largest > jnp.abs(M[k][k]))
        inv = 1.0 / M[k][k]
        for i in range(k + 1, n):
            f = M[i][k] * inv
            M[i] = M[i][:k + 1] + [M[i][j] - f * M[k][j] for j in range(k + 1, n + width)]
    rhs = [M[i][n] if b.ndim == 2 else jnp.stack(M[i][n:]) for i in range(n)]
    return _backward(lambda i, k: M[i][k], rhs, n), jnp.any(failed)


def lu_factor(A):
    """LU factorisation with partial pivoting of a square A (n, n): P A = L U.

    Returns (LU, perm): LU (n, n) holds U on and above the diagonal and the multipliers of the
    unit lower-triangular L below it; perm (n,) int, row i of P A is row perm[i] of A. Unrolled
    elimination for n ≤ :data:`UNROLL_MAX`, LAPACK (``lax.linalg.lu``) beyond. A singular A gives
    non-finite entries in the solves (callers check finiteness). Use with :func:`lu_solve` when
    one matrix is solved against several right-hand sides (e.g. simplified Newton).
    """
    n = A.shape[0]
    if n > UNROLL_MAX:
        lu, _, perm = lax.linalg.lu(A)
        return lu, perm
    M = A
    rows = jnp.arange(n)
    perm = rows
    for k in range(n - 1):
        col = jnp.where(rows >= k, jnp.abs(M[:, k]), -1.0)
        p = jnp.argmax(col)
        rk, rp = M[k], M[n - 1]
        pk, pp = perm[k], perm[n - 1]
        for i in range(n - 2, k - 1, -1):
            rp = jnp.where(p == i, M[i], rp)
            pp = jnp.where(p == i, perm[i], pp)
        M = jnp.where((rows == k)[:, None], rp[None, :],
                      jnp.where((rows == p)[:, None], rk[None, :], M))
        perm = jnp.where(rows == k, pp, jnp.where(rows == p, pk, perm))
        f = jnp.where(rows > k, M[:, k] / M[k, k], 0.0)
        M = M - f[:, None] * jnp.where(rows > k, M[k], 0.0)[None, :]
        M = jnp.where((rows > k)[:, None] & (rows == k)[None, :], f[:, None], M)
    return M, perm


def lu_solve(factor, b):
    """Solve A x = b given ``factor = lu_factor(A)``.  b: (n,) or (n, k)."""
    LU, perm = factor
    n = LU.shape[0]
    vec = b.ndim == 1
    B = b[:, None] if vec else b
    onehot = (perm[:, None] == jnp.arange(n)[None, :]).astype(B.dtype)
    PB = jnp.sum(onehot[:, :, None] * B[None, :, :], axis=1)            # rows of B in order perm
    if n > SUBSTITUTION_UNROLL_MAX:
        Y = lax.linalg.triangular_solve(LU, PB, left_side=True, lower=True, unit_diagonal=True)
        X = lax.linalg.triangular_solve(LU, Y, left_side=True, lower=False)
        return X[:, 0] if vec else X
    y = _forward(lambda i, k: LU[i, k], PB, n, unit=True)
    X = _backward(lambda i, k: LU[i, k], y, n)
    return X[:, 0] if vec else X


def chord_factor(A):
    """Prepare the matrix A (n, n) of simplified (chord) Newton for repeated solves with
    :func:`chord_solve`; the result is opaque.

    One matrix: ``lu_factor(A)``, and each solve is a substitution (for UNROLL_MAX < n ≤
    BATCHED_UNROLL_MAX the matrix itself, eliminated with each solve: :data:`SINGLE_AS_MEMBERS`).
    Under ``jax.vmap`` (an
    ensemble) with n ≤ :data:`BATCHED_UNROLL_MAX`: the members' matrices themselves (with the
    permutation marked −1), which :func:`chord_solve` eliminates afresh with each right-hand
    side by :func:`_solve_members`: faster for the discrete-gradient ensembles
    (docs/benchmarks.md, "Measurements behind the code") though the ≈ 5 eliminations of a step
    cost about what one LAPACK LU and 5 substitutions cost on one core — LAPACK's batched LU runs
    outside XLA's kernels and does not split over the devices.
    """
    return _chord_factor(A)


def chord_solve(factor, b):
    """Solve A x = b given ``factor = chord_factor(A)`` (in the same transformation).
    b: (n,) or (n, k)."""
    return _chord_solve(factor, b)


def _deferred(n: int) -> bool:
    """Whether one matrix of size n is kept unfactored for :func:`chord_solve` (eliminated with
    each right-hand side, as the members of an ensemble are): see :data:`SINGLE_AS_MEMBERS`."""
    return SINGLE_AS_MEMBERS and UNROLL_MAX < n <= BATCHED_UNROLL_MAX


def _chord_factor_one(A):
    n = A.shape[-1]
    if _deferred(n):
        perm_dtype = jax.eval_shape(lu_factor, A)[1].dtype
        return A, jnp.full((n,), -1, perm_dtype)
    return lu_factor(A)


def _chord_solve_one(factor, b):
    M, _ = factor
    return solve(M, b) if _deferred(M.shape[-1]) else lu_solve(factor, b)


_chord_factor = custom_vmap(_chord_factor_one)
_chord_solve = custom_vmap(_chord_solve_one)


@_chord_factor.def_vmap
def _chord_factor_members(size, in_batched, A):
    A = _per_member(A, in_batched[0], size)
    n = A.shape[-1]
    if n > BATCHED_UNROLL_MAX:
        return jax.vmap(lu_factor)(A), (True, True)
    perm_dtype = jax.eval_shape(lu_factor, A[0])[1].dtype
    return (A, jnp.full((size, n), -1, perm_dtype)), (True, True)


@_chord_solve.def_vmap
def _chord_solve_members(size, in_batched, factor, b):
    (M, perm), (in_M, in_perm) = factor, in_batched[0]
    M, perm = _per_member(M, in_M, size), _per_member(perm, in_perm, size)
    b = _per_member(b, in_batched[1], size)
    factored = lambda: jax.vmap(lu_solve)((M, perm), b)  # noqa: E731
    if M.shape[-1] > BATCHED_UNROLL_MAX:
        return factored(), True
    # deferred matrices (perm −1): the members' elimination of :func:`solve` under vmap
    return lax.cond(jnp.any(perm < 0), lambda: jax.vmap(solve)(M, b), factored), True


def max_abs(x):
    """Infinity norm of an array (0 for an empty one)."""
    return jnp.max(jnp.abs(x)) if x.size else jnp.zeros((), jnp.float64)
