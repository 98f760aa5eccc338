"""Plain NumPy per-step loops of dalembert's schemes: the baseline of the speed benchmark.

Each loop is the *same* scheme as the compiled one in :mod:`dalembert.methods` — same equations,
same start-up, same reflection, Newton with the same test and tolerance — written the way a
careful NumPy user would write it: one Python iteration per step, small ``numpy`` arrays, closed
forms for ∇V, ∇²V and ∂μ/∂q, ``np.linalg.solve`` for the Newton systems, a division instead of a
solve when there is one constraint, G⁻¹ formed once (the benchmark models have a constant metric)
and skipped when G = I. It stores q_k and p⁺_k at every node; the node diagnostics (v_k, energy)
are computed afterwards, vectorised, by :func:`node_values` (dalembert computes them inside its
loop, so the comparison favours NumPy slightly).

Schemes (state (q_k, p⁺_k); Ferraro–Jiménez–Martín de Diego 2015 Def 4.1, (8), §5 and Def 6.1; see
:mod:`dalembert.methods.gni`, :mod:`dalembert.methods.dla`):

* reflection: s = C⁻¹(μ G⁻¹ p⁺_k − ν), C = μ G⁻¹ μᵀ;  p⁻_k = (P − Q)*p⁺_k + 2Q*Π = p⁺_k − 2 μᵀ s;
* explicit GNI (constant G; a = ½ nh-rattle, 1 gni-euler-a, 0 gni-euler-b):
  p_½ = p⁻_k − a h ∇V(q_k),  q_{k+1} = q_k + h G⁻¹ p_½,  p⁺_{k+1} = p_½ − (1 − a) h ∇V(q_{k+1});
* gni-euler-ab: gni-euler-a with h/2, then gni-euler-b with h/2;
* gni-midpoint: solve G(x − q)/h + (h/2)∇V((q + x)/2) = p⁻_k by Newton (Jacobian
  G/h + (h/4)∇²V), p⁺_{k+1} = G(x − q)/h − (h/2)∇V((q + x)/2);
* dla-midpoint: solve for (x, λ): D1 L_d(q, x) + p⁺_k − μ(q)ᵀλ = 0, μ(q̄)(x − q)/h = 0, by Newton
  from (q + h G⁻¹(p⁺_k − μᵀs), 0), with the analytic Jacobian.

Start-up: ``"legendre"`` p⁺_0 = G v_0, or ``"consistent"`` p⁺_0 = G v_0 − (h/2)μᵀλ(q_0, v_0) with
the multiplier of the index-1 form (whichever dalembert's methods use; see
:func:`dalembert_startup`). The models' constraints are linear (ν = 0).
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

#: Newton tolerance and iteration limit (the same as :mod:`dalembert.solvers.newton`).
RTOL = 1e-14
MAX_ITER = 40

#: The schemes with a NumPy loop.
METHODS = ("nh-rattle", "gni-euler-a", "gni-euler-b", "gni-euler-ab", "gni-midpoint",
           "dla-midpoint")

_POTENTIAL_WEIGHT = {"nh-rattle": 0.5, "gni-euler-a": 1.0, "gni-euler-b": 0.0}


class NumpyLoopError(RuntimeError):
    """A NumPy loop's Newton solve did not converge or a state became non-finite."""


def newton(FJ, x, rtol, max_iter, k):
    """Newton's method of the NumPy loops, with the test of :mod:`dalembert.solvers.newton`:
    stop when |Δ|∞ ≤ rtol (1 + |x|∞).

    FJ : x -> (F(x), J(x)) (the residual and its Jacobian, computed together);  k : the step
    number for the error message.  Returns (x, iterations).

    Raises
    ------
    NumpyLoopError : non-finite iterate, or no convergence in ``max_iter`` iterations.
    """
    for it in range(max_iter):
        F, J = FJ(x)
        dx = np.linalg.solve(J, F)
        x = x - dx
        err, size = np.abs(dx).max(), np.abs(x).max()
        if not (math.isfinite(err) and math.isfinite(size)):
            raise NumpyLoopError(f"step {k}: Newton produced non-finite values")
        if err <= rtol * (1.0 + size):
            return x, it + 1
    raise NumpyLoopError(f"step {k}: Newton did not converge in {max_iter} iterations")


@dataclass(frozen=True)
class NumpyModel:
    """A nonholonomic model written in NumPy: constant metric, linear constraints μ(q) v = 0.

    G : (n, n) constant kinetic metric.
    potential : q -> float;  grad_potential : q -> (n,);  hess_potential : q -> (n, n).
    constraint_matrix : q -> (m, n) μ(q);  constraint_jacobian : q -> (m, n, n), ∂μ_ij/∂q_k.
    """

    name: str
    G: np.ndarray
    potential: Callable
    grad_potential: Callable
    hess_potential: Callable
    constraint_matrix: Callable
    constraint_jacobian: Callable

    @property
    def n(self) -> int:
        return self.G.shape[0]


# ---------------------------------------------------------------------------------------------
# the benchmark models
# ---------------------------------------------------------------------------------------------

def gearbox(asymmetry: float = 0.2) -> NumpyModel:
    """The gearbox of :mod:`dalembert.models.gearbox`: V = ½(q1² + q2²) + cos q3 − ε sin 2q3,
    μ = (1, sin q3, 0), G = I."""
    eps = float(asymmetry)
    sin, cos = math.sin, math.cos

    def potential(q):
        return 0.5 * (q[0] * q[0] + q[1] * q[1]) + cos(q[2]) - eps * sin(2.0 * q[2])

    def grad(q):
        return np.array([q[0], q[1], -sin(q[2]) - 2.0 * eps * cos(2.0 * q[2])])

    def hess(q):
        return np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0],
                         [0.0, 0.0, -cos(q[2]) + 4.0 * eps * sin(2.0 * q[2])]])

    def mu(q):
        return np.array([[1.0, sin(q[2]), 0.0]])

    def dmu(q):
        d = np.zeros((1, 3, 3))
        d[0, 1, 2] = cos(q[2])
        return d

    return NumpyModel("gearbox", np.eye(3), potential, grad, hess, mu, dmu)


def chaotic_quartic(n: int = 3) -> NumpyModel:
    """The quartic system of :mod:`dalembert.models.chaotic_quartic` on R^{2n+1}:
    q = (x, w, z), V = ½(|q|² + z1² z2² + Σ w_i² z_i²), μ = (1, 0_n, wᵀ), G = I."""
    n = int(n)
    dim = 2 * n + 1
    W = slice(1, n + 1)
    Z = slice(n + 1, dim)
    iw = np.arange(1, n + 1)
    iz = np.arange(n + 1, dim)

    def potential(q):
        w, z = q[W], q[Z]
        return 0.5 * (q @ q + z[0] ** 2 * z[1] ** 2 + (w * w) @ (z * z))

    def grad(q):
        w, z = q[W], q[Z]
        g = q.copy()
        g[W] += w * z * z
        g[Z] += w * w * z
        g[n + 1] += z[0] * z[1] * z[1]
        g[n + 2] += z[0] * z[0] * z[1]
        return g

    def hess(q):
        w, z = q[W], q[Z]
        H = np.eye(dim)
        H[iw, iw] += z * z
        H[iz, iz] += w * w
        H[iw, iz] = H[iz, iw] = 2.0 * w * z
        H[n + 1, n + 1] += z[1] * z[1]
        H[n + 2, n + 2] += z[0] * z[0]
        H[n + 1, n + 2] = H[n + 2, n + 1] = 2.0 * z[0] * z[1]
        return H

    def mu(q):
        row = np.zeros((1, dim))
        row[0, 0] = 1.0
        row[0, Z] = q[W]
        return row

    def dmu(q):
        d = np.zeros((1, dim, dim))
        d[0, iz, iw] = 1.0
        return d

    return NumpyModel("chaotic-quartic", np.eye(dim), potential, grad, hess, mu, dmu)


_MODELS = {"gearbox": gearbox, "chaotic-quartic": chaotic_quartic}


def get(name: str, **params) -> NumpyModel:
    """The NumPy version of a benchmark model (``gearbox``, ``chaotic-quartic``)."""
    if name not in _MODELS:
        raise KeyError(f"no NumPy version of model {name!r}; available: {', '.join(_MODELS)}")
    return _MODELS[name](**params)


# ---------------------------------------------------------------------------------------------
# pieces shared by the loops
# ---------------------------------------------------------------------------------------------

def _metric(model):
    """(G⁻¹, is_identity) — G is constant: invert it once, outside the loop."""
    G = np.asarray(model.G, float)
    identity = bool(np.array_equal(G, np.eye(G.shape[0])))
    return np.linalg.inv(G), identity


def multiplier(model, q, v):
    """λ(q, v) (m,) of the index-1 form: C λ = −μ̇ v + μ G⁻¹ ∇V (constant G, linear μ)."""
    Ginv, _ = _metric(model)
    mu = model.constraint_matrix(q)
    mudot = np.einsum("ijk,k->ij", model.constraint_jacobian(q), v)
    C = mu @ Ginv @ mu.T
    return np.linalg.solve(C, -mudot @ v + mu @ (Ginv @ model.grad_potential(q)))


def initial_momentum(model, q0, v0, h, startup="legendre"):
    """p⁺_0: ``"legendre"`` G v0, ``"consistent"`` G v0 − (h/2) μ(q0)ᵀ λ(q0, v0)."""
    q0, v0 = np.asarray(q0, float), np.asarray(v0, float)
    p0 = model.G @ v0
    if startup == "consistent":
        p0 = p0 - 0.5 * h * (multiplier(model, q0, v0) @ model.constraint_matrix(q0))
    elif startup != "legendre":
        raise ValueError(f"unknown startup {startup!r}")
    return p0


def dalembert_startup(method) -> str:
    """The start-up the compiled method uses by default ('legendre' if it has no option)."""
    from .. import methods as _methods
    m = _methods.get(method)
    build = m.build
    if hasattr(m, "stages"):
        build = m.stages[0][0].build
    p = inspect.signature(build).parameters.get("startup")
    return p.default if p is not None else "legendre"


def node_values(model, q, p):
    """Reported node values from stored states: p̄_k = P*p⁺_k (m,n: linear constraints) and
    v_k = G⁻¹ p̄_k; q, p (N, n) -> (v, p̄), each (N, n). Vectorised (not part of the timing)."""
    Ginv, _ = _metric(model)
    q, p = np.atleast_2d(q), np.atleast_2d(p)
    pbar = np.empty_like(p)
    for k in range(q.shape[0]):
        mu = model.constraint_matrix(q[k])
        Gmu = mu @ Ginv
        s = np.linalg.solve(Gmu @ mu.T, Gmu @ p[k])
        pbar[k] = p[k] - s @ mu
    return pbar @ Ginv.T, pbar


def index1_rhs(model):
    """f(t, y) for ``solve_ivp``: y = (q, v), q̇ = v, G v̇ = −∇V + μᵀλ, λ from the index-1 form."""
    Ginv, identity = _metric(model)
    n = model.n
    grad, mu_f, dmu_f = model.grad_potential, model.constraint_matrix, model.constraint_jacobian

    def rhs(t, y):
        q, v = y[:n], y[n:]
        f = -grad(q)
        mu = mu_f(q)
        mudot_v = dmu_f(q) @ v @ v          # (m, n, n)·v·v = μ̇ v
        Gf = f if identity else Ginv @ f
        Gmu = mu if identity else mu @ Ginv
        C = Gmu @ mu.T
        rhs_l = -mudot_v - mu @ Gf
        lam = rhs_l / C[0, 0] if C.shape[0] == 1 else np.linalg.solve(C, rhs_l)
        a = Gf + (lam @ Gmu)
        return np.concatenate([v, a])
    return rhs


# ---------------------------------------------------------------------------------------------
# the loops
# ---------------------------------------------------------------------------------------------

def _explicit_loop(model, q, p, h, n_steps, stages):
    """Explicit GNI stages ((a, fraction of h), ...) per step; returns Q, P (N+1, n)."""
    Ginv, identity = _metric(model)
    grad, mu_f = model.grad_potential, model.constraint_matrix
    n = q.size
    Q = np.empty((n_steps + 1, n))
    P = np.empty((n_steps + 1, n))
    Q[0], P[0] = q, p
    g = grad(q)
    for k in range(n_steps):
        for a, c in stages:
            hc = c * h
            mu = mu_f(q)
            Gmu = mu if identity else mu @ Ginv
            C = Gmu @ mu.T
            r = Gmu @ p
            s = r / C[0, 0] if C.shape[0] == 1 else np.linalg.solve(C, r)
            p_half = p - 2.0 * (s @ mu) - (a * hc) * g
            q = q + hc * (p_half if identity else Ginv @ p_half)
            g = grad(q)
            p = p_half - ((1.0 - a) * hc) * g
        Q[k + 1], P[k + 1] = q, p
    bad = ~(np.isfinite(Q).all(axis=1) & np.isfinite(P).all(axis=1))
    if bad.any():  # checked once, afterwards: non-finite values propagate
        raise NumpyLoopError(f"step {int(np.argmax(bad)) - 1}: non-finite state")
    return Q, P, 0


def _gni_midpoint_loop(model, q, p, h, n_steps, rtol, max_iter):
    Ginv, identity = _metric(model)
    G = model.G
    grad, hess, mu_f = model.grad_potential, model.hess_potential, model.constraint_matrix
    n = q.size
    Q = np.empty((n_steps + 1, n))
    P = np.empty((n_steps + 1, n))
    Q[0], P[0] = q, p
    Gh = G / h
    iterations = 0
    solve = np.linalg.solve
    for k in range(n_steps):
        mu = mu_f(q)
        Gmu = mu if identity else mu @ Ginv
        C = Gmu @ mu.T
        r = Gmu @ p
        s = r / C[0, 0] if C.shape[0] == 1 else solve(C, r)
        p_minus = p - 2.0 * (s @ mu)

        def FJ(x):
            qm = 0.5 * (q + x)
            dq = x - q
            return ((dq / h if identity else Gh @ dq) + (0.5 * h) * grad(qm) - p_minus,
                    Gh + (0.25 * h) * hess(qm))

        x, it = newton(FJ, q + h * (p_minus if identity else Ginv @ p_minus), rtol, max_iter, k)
        iterations += it
        dq = x - q
        p = (dq / h if identity else Gh @ dq) - (0.5 * h) * grad(0.5 * (q + x))
        q = x
        Q[k + 1], P[k + 1] = q, p
    return Q, P, iterations


def _dla_midpoint_loop(model, q, p, h, n_steps, rtol, max_iter):
    Ginv, identity = _metric(model)
    G = model.G
    grad, hess = model.grad_potential, model.hess_potential
    mu_f, dmu_f = model.constraint_matrix, model.constraint_jacobian
    n = q.size
    m = mu_f(q).shape[0]
    Q = np.empty((n_steps + 1, n))
    P = np.empty((n_steps + 1, n))
    Q[0], P[0] = q, p
    Gh = G / h
    iterations = 0
    solve = np.linalg.solve
    J = np.zeros((n + m, n + m))
    F = np.empty(n + m)
    for k in range(n_steps):
        mu = mu_f(q)
        Gmu = mu if identity else mu @ Ginv
        C = Gmu @ mu.T
        r = Gmu @ p
        s = r / C[0, 0] if C.shape[0] == 1 else solve(C, r)
        pp = p - s @ mu
        J[:n, n:] = -mu.T

        def FJ(z):
            x, lam = z[:n], z[n:]
            qm = 0.5 * (q + x)
            dq = x - q
            mum = mu_f(qm)
            F[:n] = -(dq / h if identity else Gh @ dq) - (0.5 * h) * grad(qm) + p - lam @ mu
            F[n:] = mum @ dq / h
            J[:n, :n] = -Gh - (0.25 * h) * hess(qm)
            J[n:, :n] = mum / h + (0.5 / h) * (dq @ dmu_f(qm))
            return F, J

        z, it = newton(FJ, np.concatenate([q + h * (pp if identity else Ginv @ pp), np.zeros(m)]),
                       rtol, max_iter, k)
        iterations += it
        x = z[:n]
        dq = x - q
        p = (dq / h if identity else Gh @ dq) - (0.5 * h) * grad(0.5 * (q + x))
        q = x
        Q[k + 1], P[k + 1] = q, p
    return Q, P, iterations


def integrate(model, method: str, q0, v0, h: float, n_steps: int, *, startup: str = "legendre",
              rtol: float = RTOL, max_iter: int = MAX_ITER):
    """Run a NumPy loop.

    Parameters
    ----------
    model : NumpyModel (see :func:`get`).
    method : one of :data:`METHODS`.
    q0, v0 : (n,) constraint-consistent initial state.
    h : step;  n_steps : number of steps.
    startup : "legendre" or "consistent" (see :func:`initial_momentum`).
    rtol, max_iter : Newton test ‖Δ‖∞ ≤ rtol (1 + ‖x‖∞) and iteration limit.

    Returns
    -------
    q, p : (n_steps + 1, n) nodes q_k and pre-momenta p⁺_k;  iterations : total Newton iterations.

    Raises
    ------
    NumpyLoopError (Newton failure / non-finite state), KeyError (unknown method).
    """
    q = np.array(q0, dtype=float)
    p = initial_momentum(model, q, v0, h, startup)
    h = float(h)
    n_steps = int(n_steps)
    if method in _POTENTIAL_WEIGHT:
        return _explicit_loop(model, q, p, h, n_steps, ((_POTENTIAL_WEIGHT[method], 1.0),))
    if method == "gni-euler-ab":
        return _explicit_loop(model, q, p, h, n_steps, ((1.0, 0.5), (0.0, 0.5)))
    if method == "gni-midpoint":
        return _gni_midpoint_loop(model, q, p, h, n_steps, rtol, max_iter)
    if method == "dla-midpoint":
        return _dla_midpoint_loop(model, q, p, h, n_steps, rtol, max_iter)
    raise KeyError(f"no NumPy loop for method {method!r}; available: {', '.join(METHODS)}")
