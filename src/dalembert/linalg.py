"""Small dense linear algebra for use *inside* a compiled time step.

For the matrix sizes of a nonholonomic step (n up to a few tens), a LAPACK call or even an XLA
``dot`` costs far more than its arithmetic: on this project's CPU a ``lax.scan`` step written with
``@`` on 3x3 matrices took 0.58 µs, the same step written with broadcast-multiply-and-sum 0.06 µs
(see DESIGN.md, "Performance notes"). The functions here keep to elementwise arithmetic, which XLA
fuses, and fall back to ``jnp.linalg`` beyond :data:`UNROLL_MAX`.

All functions are pure, jit- and vmap-able, and work in float64. Nothing here forms an explicit
inverse.
"""
from __future__ import annotations

import jax.numpy as jnp
from jax import lax

#: Largest size for which solves and factorisations are unrolled into elementwise arithmetic.
UNROLL_MAX = 10
#: Largest size for which :func:`lu_solve` (forward and back substitution with a given factor) is
#: unrolled. Substitution is cheap to unroll (n²/2 multiply-adds, one fusion): at n = 13 it took
#: 0.23 µs against 0.68 µs for the two LAPACK triangular solves (0.26 against 0.64 µs per member
#: under ``vmap``, B = 200), whereas the unrolled elimination of :func:`lu_factor` loses to LAPACK
#: beyond :data:`UNROLL_MAX` (5.5 against 1.3 µs at n = 13; 19 against 1.3 under ``vmap``).
SUBSTITUTION_UNROLL_MAX = 32


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


def solve_spd(A, b):
    """Solve A x = b for symmetric positive definite A (n, n).  b: (n,) or (n, k)."""
    return cho_solve(cholesky(A), b)


def solve(A, b):
    """Solve A x = b for a general square A (n, n) by Gaussian elimination with partial pivoting.

    b: (n,) or (n, k).  A singular A gives non-finite entries (callers check finiteness).
    """
    n = A.shape[0]
    vec = b.ndim == 1
    B = b[:, None] if vec else b
    if n > UNROLL_MAX:
        x = jnp.linalg.solve(A, B)
        return x[:, 0] if vec else x
    M = jnp.concatenate([A, B], axis=1)
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
    U, Y = M[:, :n], M[:, n:]
    x = [None] * n
    for i in reversed(range(n)):
        s = Y[i]
        for k in range(i + 1, n):
            s = s - U[i, k] * x[k]
        x[i] = s / U[i, i]
    X = jnp.stack(x)
    return X[:, 0] if vec else X


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


def max_abs(x):
    """Infinity norm of an array (0 for an empty one)."""
    return jnp.max(jnp.abs(x)) if x.size else jnp.zeros((), jnp.float64)
