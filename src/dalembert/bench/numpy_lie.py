"""Plain NumPy per-step loops of dalembert's SO(3) schemes: the baseline of benchmarks/so3_speed.py.

Each loop is the *same* scheme as the compiled one — same equations, start-up, Newton guess, test
(‖Δx‖∞ ≤ rtol (1 + ‖x‖∞)) and tolerance — written the way a careful NumPy user would: one Python
iteration per step on (3,)/(3, 3) arrays, cross products and the Cayley map written out by
components (``np.cross`` and ``scipy`` are slower on 3-vectors), analytic Jacobians,
``np.linalg.solve`` for the Newton systems, 𝕀⁻¹ and the projector formed once. It stores the state
(R_k and ω_k, or R_k and μ⁺_k) at every node; node values are computed afterwards by
:func:`node_values` (dalembert computes them inside its loop: the comparison favours NumPy).

Schemes (system: constant inertia 𝕀 (3, 3) symmetric, constant body covectors A (m, 3); see
:mod:`dalembert.methods.eps`, :mod:`dalembert.methods.lie_gni`):

* ``dreps-euler`` / ``dreps-rk4`` (Jiménez–Scheurle 2015, (54)–(55), Prop 6.1): ω_{k+1} = P Φ_h(ω_k),
  f(ω) = P𝕀⁻¹((𝕀ω) × ω); R_{k+1} = R_k cay(h (ω_k + ω_{k+1})/2) (the default midpoint reconstruction);
* ``eps-midpoint`` (the "DREPS midpoint rule" of its §6.2): Newton on (ω_{k+1}, hμ) of
  𝕀(ω_{k+1} − ω_k) = h 𝕀ω̄ × ω̄ + Aᵀhμ, A ω_{k+1} = 0, from (ω_k + h f(ω_k), h λ(ω_k)); R by the
  midpoint reconstruction;
* ``eps-variational`` ((56)/(58), Cayley): Newton on (ω_{k+1}, hλ) of
  (dcay⁻¹_{hω_{k+1}})ᵀ𝕀ω_{k+1} − (dcay⁻¹_{−hω_k})ᵀ𝕀ω_k = Aᵀhλ, A ω_{k+1} = 0; R_{k+1} = R_k cay(hω_k);
* ``lie-gni-mv`` / ``lie-gni-cayley`` (Ferraro et al. 2008, (7)): μ⁻ = μ⁺ − 2Aᵀ C⁻¹A𝕀⁻¹μ⁺,
  Newton on w (W = cay(w)) for l_d'^R(W) = μ⁻ from w = h𝕀⁻¹μ⁻; R_{k+1} = R_k W,
  μ⁺_{k+1} = l_d'^L(W); start-up μ⁺_0 = 𝕀ω_0 − (h/2)Aᵀλ(ω_0) ("consistent").
  MV: l_d'^R = vee(W J_d − J_d Wᵀ)/h, l_d'^L = vee(J_d W − Wᵀ J_d)/h, J_d = ½tr𝕀 Id − 𝕀;
  Cayley l_d = (1/2h) wᵀ𝕀w: l_d'^R = (dcay⁻¹_w)ᵀ𝕀w/h, l_d'^L = (dcay⁻¹_{−w})ᵀ𝕀w/h.
"""
from __future__ import annotations

import numpy as np

from .numpy_loops import MAX_ITER, RTOL, NumpyLoopError, newton  # noqa: F401  (one Newton for all loops)

#: The SO(3) schemes with a NumPy loop.
METHODS = ("dreps-euler", "dreps-rk4", "eps-midpoint", "eps-variational", "lie-gni-mv",
           "lie-gni-cayley")


def _cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def _hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _vee(X):
    return np.array([X[2, 1], X[0, 2], X[1, 0]])


def _cayley(w):
    """cay(w) = I + (ŵ + ŵ²/2)/(1 + |w|²/4)."""
    W = _hat(w)
    return np.eye(3) + (W + 0.5 * (W @ W)) / (1.0 + 0.25 * (w @ w))


class _Parts:
    """The constant pieces of an EPS system: 𝕀, 𝕀⁻¹, A, P𝕀⁻¹ (the field), P, K (λ = K(𝕀ω × ω))."""

    def __init__(self, inertia, A):
        I = np.asarray(inertia, float)
        A = np.atleast_2d(np.asarray(A, float))
        Iinv = np.linalg.inv(I)
        Cinv = np.linalg.inv(A @ Iinv @ A.T)
        P = np.eye(3) - Iinv @ A.T @ Cinv @ A
        self.I, self.Iinv, self.A, self.P = I, Iinv, A, P
        self.Pf = P @ Iinv
        self.K = -Cinv @ A @ Iinv
        self.m = A.shape[0]

    def field(self, w):
        return self.Pf @ _cross(self.I @ w, w)

    def multiplier(self, w):
        return self.K @ _cross(self.I @ w, w)


def _dreps_loop(s, R, w, h, n, rk4):
    Rs, Ws = np.empty((n + 1, 3, 3)), np.empty((n + 1, 3))
    Rs[0], Ws[0] = R, w
    f, P = s.field, s.P
    for k in range(n):
        if rk4:
            k1 = f(w)
            k2 = f(w + 0.5 * h * k1)
            k3 = f(w + 0.5 * h * k2)
            k4 = f(w + h * k3)
            w1 = P @ (w + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4))
        else:
            w1 = P @ (w + h * f(w))
        R = R @ _cayley(0.5 * h * (w + w1))
        w = w1
        Rs[k + 1], Ws[k + 1] = R, w
    return Rs, Ws, 0


def _block(J11, A):
    m = A.shape[0]
    J = np.zeros((3 + m, 3 + m))
    J[:3, :3] = J11
    J[:3, 3:] = -A.T
    J[3:, :3] = A
    return J


def _eps_loop(s, R, w, h, n, rtol, max_iter, residual, midpoint):
    """The loop shared by the implicit EPS schemes: at each step solve residual(ω_k) = (F, J) on
    x = (ω_{k+1}, hλ) by Newton from the explicit-Euler guess, then R_{k+1} = R_k cay(hω̄) with
    ω̄ = (ω_k + ω_{k+1})/2 (``midpoint``) or ω_k."""
    Rs, Ws = np.empty((n + 1, 3, 3)), np.empty((n + 1, 3))
    Rs[0], Ws[0] = R, w
    total = 0
    for k in range(n):
        w0 = w
        guess = np.concatenate([w0 + h * s.field(w0), h * s.multiplier(w0)])
        x, it = newton(residual(w0), guess, rtol, max_iter, k)
        total += it
        w = x[:3]
        R = R @ _cayley(h * (0.5 * (w0 + w) if midpoint else w0))
        Rs[k + 1], Ws[k + 1] = R, w
    return Rs, Ws, total


def _eps_midpoint_loop(s, R, w, h, n, rtol, max_iter):
    I, A = s.I, s.A

    def residual(w0):
        Iw0 = I @ w0

        def FJ(x):
            w1, hmu = x[:3], x[3:]
            wb = 0.5 * (w0 + w1)
            return (np.concatenate([I @ w1 - Iw0 - h * _cross(I @ wb, wb) - hmu @ A, A @ w1]),
                    _block(I - 0.5 * h * (_hat(I @ wb) - _hat(wb) @ I), A))
        return FJ

    return _eps_loop(s, R, w, h, n, rtol, max_iter, residual, midpoint=True)


def _dual_momentum(I, w, h):
    """(dcay⁻¹_{hw})ᵀ𝕀w = 𝕀w + (h/2) w × 𝕀w + (h²/4) w (w·𝕀w)."""
    Iw = I @ w
    return Iw + (0.5 * h) * _cross(w, Iw) + (0.25 * h * h) * (w @ Iw) * w


def _dual_momentum_jac(I, w, h):
    """∂/∂w of :func:`_dual_momentum` (𝕀 symmetric)."""
    Iw = I @ w
    return (I + (0.5 * h) * (_hat(w) @ I - _hat(Iw))
            + (0.25 * h * h) * ((w @ Iw) * np.eye(3) + 2.0 * np.outer(w, Iw)))


def _eps_variational_loop(s, R, w, h, n, rtol, max_iter):
    I, A = s.I, s.A

    def residual(w0):
        rhs = _dual_momentum(I, w0, -h)           # (dcay⁻¹_{−hω_k})ᵀ𝕀ω_k

        def FJ(x):
            w1, hlam = x[:3], x[3:]
            return (np.concatenate([_dual_momentum(I, w1, h) - rhs - hlam @ A, A @ w1]),
                    _block(_dual_momentum_jac(I, w1, h), A))
        return FJ

    return _eps_loop(s, R, w, h, n, rtol, max_iter, residual, midpoint=False)


def _lie_gni_loop(s, R, w, h, n, lagrangian, rtol, max_iter):
    I, Iinv, A = s.I, s.Iinv, s.A
    IinvAt = Iinv @ A.T
    Cinv = np.linalg.inv(A @ IinvAt)
    mu = I @ w - (0.5 * h) * (s.multiplier(w) @ A)       # consistent start-up
    Rs, Ms = np.empty((n + 1, 3, 3)), np.empty((n + 1, 3))
    Rs[0], Ms[0] = R, mu
    total = 0
    if lagrangian == "mv":
        Jd = 0.5 * np.trace(I) * np.eye(3) - I
        E = np.eye(3)

        def F_of(mum):
            def F(x):
                W = _cayley(x)
                WJ = W @ Jd
                return _vee(WJ - WJ.T) / h - mum
            return F

        def J(x):
            # d/dx vee(W J_d − J_d Wᵀ) along z: vee(X W J_d + J_d Wᵀ X), X = hat(dcay_x z)
            W = _cayley(x)
            WJ = W @ Jd
            D = (E + 0.5 * _hat(x)) / (1.0 + 0.25 * (x @ x))
            cols = []
            for j in range(3):
                X = _hat(D[:, j])
                cols.append(_vee(X @ WJ + WJ.T @ X))
            return np.stack(cols, axis=1) / h

        def dL(x):
            W = _cayley(x)
            JW = Jd @ W
            return _vee(JW - JW.T) / h
    else:
        def F_of(mum):
            def F(x):
                return _dual_momentum(I, x, 1.0) / h - mum
            return F

        def J(x):
            return _dual_momentum_jac(I, x, 1.0) / h

        def dL(x):
            return _dual_momentum(I, x, -1.0) / h
    for k in range(n):
        mum = mu - 2.0 * ((Cinv @ (A @ (Iinv @ mu))) @ A)
        F = F_of(mum)
        x, it = newton(lambda x: (F(x), J(x)), h * (Iinv @ mum), rtol, max_iter, k)
        total += it
        R = R @ _cayley(x)
        mu = dL(x)
        Rs[k + 1], Ms[k + 1] = R, mu
    return Rs, Ms, total


def integrate(inertia, constraint_vectors, method, R0, omega0, h, n_steps, *, rtol=RTOL,
              max_iter=MAX_ITER):
    """Run a NumPy loop of an SO(3) scheme (default options of the compiled method).

    Parameters
    ----------
    inertia : (3, 3) symmetric 𝕀;  constraint_vectors : (m, 3) or (3,) A;  method : one of
    :data:`METHODS`;  R0 (3, 3), omega0 (3,) : a consistent initial state;  h : step;
    n_steps : number of steps;  rtol, max_iter : Newton test and limit.

    Returns
    -------
    R : (N+1, 3, 3);  second : (N+1, 3) ω_k (EPS schemes) or μ⁺_k (Lie GNI);  iterations : total
    Newton iterations.

    Raises
    ------
    NumpyLoopError (Newton failure / non-finite state), KeyError (unknown method).
    """
    s = _Parts(inertia, constraint_vectors)
    R, w, h, n = np.array(R0, float), np.array(omega0, float), float(h), int(n_steps)
    if method in ("dreps-euler", "dreps-rk4"):
        return _dreps_loop(s, R, w, h, n, method == "dreps-rk4")
    if method == "eps-midpoint":
        return _eps_midpoint_loop(s, R, w, h, n, rtol, max_iter)
    if method == "eps-variational":
        return _eps_variational_loop(s, R, w, h, n, rtol, max_iter)
    if method in ("lie-gni-mv", "lie-gni-cayley"):
        return _lie_gni_loop(s, R, w, h, n, "mv" if method == "lie-gni-mv" else "cayley",
                             rtol, max_iter)
    raise KeyError(f"no NumPy loop for method {method!r}; available: {', '.join(METHODS)}")


def node_values(inertia, constraint_vectors, method, second):
    """The reported node velocity ω_k (N+1, 3): ω_k itself for the EPS schemes, 𝕀⁻¹P*μ⁺_k (the
    averaged momentum) for the Lie GNI. Vectorised (not part of the timing)."""
    if not method.startswith("lie-gni"):
        return np.asarray(second)
    s = _Parts(inertia, constraint_vectors)
    A, Iinv = s.A, s.Iinv
    C = A @ Iinv @ A.T
    coef = np.linalg.solve(C, (second @ Iinv.T @ A.T).T).T     # (N+1, m)
    return (second - coef @ A) @ Iinv.T
