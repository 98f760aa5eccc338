"""Plain NumPy per-step loops of the rolling-ball schemes: the baseline of
benchmarks/rolling_ball_speed.py.

The *same* schemes as the compiled ones, written from the equations of Ferraro–Jiménez–Martín de
Diego 2015 and docs/theory/ferraro2015.md the way a careful NumPy user would: one Python
iteration per step, small arrays, closed forms where those give them, ``np.linalg.solve`` for
the Newton systems, the same Newton test (|Δ|∞ ≤ rtol (1 + |x|∞)) and tolerance as
:mod:`dalembert.solvers.newton`.

* :func:`lie_gni` — our Lie-group GNI, not in the paper (docs/theory/ferraro2015.md) (= ``lie-gni``,
  and ``reduced-gni`` on the left-trivialised ball):
  state (x_k, R_k, p⁺_k ∈ R⁵), body metric G = diag(m, m, I1, I2, I3),
  μ(R) = [[1, 0, −r R_{2,:}], [0, 1, r R_{1,:}]], ν(x) = (−Θy, Θx);
  target = p⁺ − 2μᵀC⁻¹(μG⁻¹p⁺ − ν);  x_{k+1} = x_k + h target_x / m;
  solve (dcay⁻¹_{hΩ})ᵀ𝕀Ω = target_Ω, i.e. 𝕀Ω + (h/2)Ω×𝕀Ω + (h²/4)(Ω·𝕀Ω)Ω = target_Ω (3×3 Newton with
  the analytic Jacobian of the Cayley tangent, paper Appendix); R_{k+1} = R_k cay(hΩ);
  p⁺_{k+1} = (m(x_{k+1} − x_k)/h, 𝕀Ω − (h/2)Ω×𝕀Ω + (h²/4)(Ω·𝕀Ω)Ω).
  Start-up ``"legendre"``: p⁺_0 = G(ẋ_0, Ω_0).
* :func:`exp_chart` — paper §7.4.2 (= ``gni-exp-chart`` with ``startup="legendre"``): q = (x, ρ) ∈ R⁵,
  R = exp(ρ̂), Ω = A(ρ)ρ̇, A = I − aρ̂ + bρ̂² (a = (1 − cos θ)/θ², b = (θ − sin θ)/θ³, θ = |ρ|),
  G(q) = diag(m, m, AᵀIA), μ(q) = [[1, 0, −r (RA)_{2,:}], [0, 1, r (RA)_{1,:}]], ν = (−Θy, Θx);
  L_d = h L(q_k, (q_{k+1} − q_k)/h) (Euler A). Step: p⁻ = p⁺ − 2μᵀC⁻¹(μG⁻¹p⁺ − ν) at q_k; solve
  G(q_k)v − h ∂L/∂q(q_k, v) = p⁻ for v (5×5 Newton, analytic ∂A/∂ρ_j); q_{k+1} = q_k + hv,
  p⁺_{k+1} = G(q_k)v; then the chart re-centring of :mod:`dalembert.methods.exp_chart`: if
  |ρ_{k+1}| > π + 0.5, ρ ← ρ(1 − 2π/|ρ|) and p⁺_ρ ← Dψ⁻¹p⁺_ρ, Dψ = (1 − 2π/θ)I + 2πρρᵀ/θ³.
"""
from __future__ import annotations

import math

import numpy as np

from .numpy_lie import _cayley, _dual_momentum, _dual_momentum_jac, _hat
from .numpy_loops import MAX_ITER, RTOL, NumpyLoopError, newton  # noqa: F401


def lie_gni(inertia, m, r, theta, x0, R0, xdot0, Omega0, h, n_steps, *, rtol=RTOL, max_iter=MAX_ITER):
    """Integrate the ball with the Lie-group GNI (module doc) for ``n_steps`` steps.

    Parameters
    ----------
    inertia : (3,) principal moments (I1, I2, I3);  m, r, theta : mass, radius, table rate Θ.
    x0 : (2,), R0 : (3, 3), xdot0 : (2,), Omega0 : (3,) body angular velocity (consistent state).

    Returns
    -------
    (x (N+1, 2), R (N+1, 3, 3), p (N+1, 5) the pre-momenta p⁺_k, iterations (N,)).

    Raises
    ------
    NumpyLoopError : a Newton solve did not converge.
    """
    I = np.asarray(inertia, float)
    Ginv = 1.0 / np.array([m, m, I[0], I[1], I[2]])
    Im = np.diag(I)
    xs, Rs, ps = np.empty((n_steps + 1, 2)), np.empty((n_steps + 1, 3, 3)), np.empty((n_steps + 1, 5))
    its = np.empty(n_steps, dtype=np.int64)
    x, R = np.array(x0, float), np.array(R0, float)
    Om = np.asarray(Omega0, float)
    p = np.concatenate([m * np.asarray(xdot0, float), I * Om])
    xs[0], Rs[0], ps[0] = x, R, p
    for k in range(n_steps):
        mu = np.zeros((2, 5))
        mu[0, 0] = mu[1, 1] = 1.0
        mu[0, 2:] = -r * R[1]
        mu[1, 2:] = r * R[0]
        nu = np.array([-theta * x[1], theta * x[0]])
        C = (mu * Ginv) @ mu.T
        s = np.linalg.solve(C, mu @ (Ginv * p) - nu)
        tgt = p - 2.0 * (s @ mu)
        x_new = x + h * tgt[:2] / m
        b = tgt[2:]
        # (dcay⁻¹_{hΩ})ᵀ𝕀Ω = b (Cayley tangent, FJMdD 2015 Appendix)
        w, its[k] = newton(lambda w: (_dual_momentum(Im, w, h) - b, _dual_momentum_jac(Im, w, h)),
                           b / I, rtol, max_iter, k)
        p = np.concatenate([m * (x_new - x) / h, _dual_momentum(Im, w, -h)])
        R = R @ _cayley(h * w)
        x = x_new
        xs[k + 1], Rs[k + 1], ps[k + 1] = x, R, p
    return xs, Rs, ps, its


def _ab(th):
    """a, b of A(ρ) and a'(θ)/θ, b'(θ)/θ (series below θ = 1e-3)."""
    if th < 1e-3:
        t2 = th * th
        return (0.5 - t2 / 24 + t2 * t2 / 720, 1 / 6 - t2 / 120 + t2 * t2 / 5040,
                -1 / 12 + t2 / 180, -1 / 60 + t2 / 1260)
    c, s_ = math.cos(th), math.sin(th)
    a = (1 - c) / th ** 2
    b = (th - s_) / th ** 3
    da = s_ / th ** 2 - 2 * (1 - c) / th ** 3
    db = (1 - c) / th ** 3 - 3 * (th - s_) / th ** 4
    return a, b, da / th, db / th


_E = [_hat(e) for e in np.eye(3)]


def _chart_parts(rho):
    """(R = exp(ρ̂), A(ρ), [∂A/∂ρ_j]_j)."""
    th = math.sqrt(rho @ rho)
    a, b, da, db = _ab(th)
    P = _hat(rho)
    P2 = P @ P
    A = np.eye(3) - a * P + b * P2
    if th < 1e-12:
        R = np.eye(3) + P
    else:
        R = np.eye(3) + math.sin(th) / th * P + (1 - math.cos(th)) / th ** 2 * P2
    dA = [-da * rho[j] * P - a * _E[j] + db * rho[j] * P2 + b * (_E[j] @ P + P @ _E[j]) for j in range(3)]
    return R, A, dA


def exp_chart(inertia, m, r, theta, x0, R0, xdot0, Omega0, h, n_steps, *, recentre_at=math.pi + 0.5,
              rtol=RTOL, max_iter=MAX_ITER):
    """Integrate the ball with the exponential-chart GNI (module doc), Legendre start-up.

    Returns
    -------
    (q (N+1, 5) chart points (x, y, ρ), p (N+1, 5) pre-momenta, iterations (N,)).
    """
    from scipy.spatial.transform import Rotation

    I = np.asarray(inertia, float)
    Im = np.diag(I)
    rho = Rotation.from_matrix(np.asarray(R0, float)).as_rotvec()
    _, A, _ = _chart_parts(rho)
    q = np.concatenate([np.asarray(x0, float), rho])
    v = np.concatenate([np.asarray(xdot0, float), np.linalg.solve(A, np.asarray(Omega0, float))])
    G = np.zeros((5, 5))
    G[0, 0] = G[1, 1] = m
    G[2:, 2:] = A.T @ Im @ A
    p = G @ v
    qs, ps = np.empty((n_steps + 1, 5)), np.empty((n_steps + 1, 5))
    its = np.empty(n_steps, dtype=np.int64)
    qs[0], ps[0] = q, p
    mu = np.zeros((2, 5))
    mu[0, 0] = mu[1, 1] = 1.0
    for k in range(n_steps):
        R, A, dA = _chart_parts(q[2:])
        IA = Im @ A
        G[2:, 2:] = A.T @ IA
        RA = R @ A
        mu[0, 2:] = -r * RA[1]
        mu[1, 2:] = r * RA[0]
        nu = np.array([-theta * q[1], theta * q[0]])
        Ginv_muT = np.linalg.solve(G, mu.T)
        C = mu @ Ginv_muT
        s = np.linalg.solve(C, Ginv_muT.T @ p - nu)
        pm = p - 2.0 * (s @ mu)
        def FJ(v):                      # (G v − h ∂L/∂q(q_k, v) − p⁻,  G − h ∂²L/∂q∂v)
            vr = v[2:]
            IAv = Im @ (A @ vr)
            dAv = [dA[j] @ vr for j in range(3)]
            F = G @ v - pm
            F[2:] -= h * np.array([IAv @ dAv[j] for j in range(3)])
            J = G.copy()
            J[2:, 2:] -= h * np.array([IAv @ dA[j] + (Im @ dAv[j]) @ A for j in range(3)])
            return F, J

        v, its[k] = newton(FJ, np.linalg.solve(G, pm), rtol, max_iter, k)
        p = G @ v
        q = q + h * v
        th = math.sqrt(q[2:] @ q[2:])
        if recentre_at is not None and th > recentre_at:
            rho = q[2:]
            D = (1.0 - 2.0 * math.pi / th) * np.eye(3) + 2.0 * math.pi * np.outer(rho, rho) / th ** 3
            q = np.concatenate([q[:2], rho * (1.0 - 2.0 * math.pi / th)])
            p = np.concatenate([p[:2], np.linalg.solve(D, p[2:])])
        qs[k + 1], ps[k + 1] = q, p
    return qs, ps, its
