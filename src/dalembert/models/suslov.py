"""The Suslov problem: a rigid body with a fixed point whose body angular velocity has no
component along a body-fixed axis a = e3 (Jiménez–Scheurle 2015 §5.2, §6.2).

System: :class:`~dalembert.systems.euler_poincare_suslov.EulerPoincareSuslovSystem` with
l(ω) = ½ωᵀ𝕀ω and ⟨e3, ω⟩ = 0. Paper data (§6.2, Figs 1–2): the printed inertia
[[1, .1, .2], [.1, 1, .2], [.2, .1, 1]] is not symmetric (erratum E2,
docs/theory/jimenez-scheurle2015.md#e2); since ω3 = 0 only the upper-left 2×2 block and the third
row enter, so the literal computation equals the symmetric, positive definite
𝕀* = [[1, .1, .2], [.1, 1, .1], [.2, .1, 1]] — the default here (``printed_inertia=1`` uses the
printed matrix literally, through ``allow_nonsymmetric``). Initial state ω(0) = (0.4, 0.5, 0),
R(0) = I (not given in the paper; erratum E14, docs/theory/jimenez-scheurle2015.md#e14).

Exact solution (our derivation, not in the paper; docs/theory/jimenez-scheurle2015.md; valid for
symmetric I_m): with u = (ω1, ω2),
I_m the upper 2×2 block, n = (𝕀31, 𝕀32), J = [[0,−1],[1,0]], c = n·u, d = nᵀI_m⁻¹Ju:
ċ = cd, ḋ = −c²/|I_m|, K² = c²/|I_m| + d², so d = −K tanh(Kt + C0), c = c0 cosh C0 sech(Kt + C0),
C0 = artanh(−d0/K), and u = M⁻¹(c, d) with M = [nᵀ; nᵀI_m⁻¹J]; λ = q(u) + cd,
q(u) = u1 (I_m u)_2 − u2 (I_m u)_1. R(t) has no closed form: :func:`exact_solution` integrates
Ṙ = R hat(ω_exact(t)) with DOP853 (rtol = atol = 1e-13).
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..systems.euler_poincare_suslov import EulerPoincareSuslovSystem
from .base import Model, ModelSpec, Parameter, register

SOURCE = ("F. Jiménez & J. Scheurle, On the discretization of the Euler–Poincaré–Suslov equations "
          "in SO(3) (2015) §5.2, §6.2; symmetric inertia: erratum E2")

#: the inertia matrix as printed in the paper (not symmetric: 𝕀23 = 0.2, 𝕀32 = 0.1)
INERTIA_PRINTED = np.array([[1.0, 0.1, 0.2], [0.1, 1.0, 0.2], [0.2, 0.1, 1.0]])
#: its symmetric equivalent for a = e3 (erratum E2, docs/theory/jimenez-scheurle2015.md#e2): the default
INERTIA = np.array([[1.0, 0.1, 0.2], [0.1, 1.0, 0.1], [0.2, 0.1, 1.0]])
A = np.array([0.0, 0.0, 1.0])
OMEGA0 = np.array([0.4, 0.5, 0.0])
R0 = np.eye(3)
_J = np.array([[0.0, -1.0], [1.0, 0.0]])


def _sech(x):
    e = np.exp(-np.abs(x))
    return 2.0 * e / (1.0 + e * e)


def exact_omega(t, inertia=INERTIA, omega0=OMEGA0):
    """Closed-form reduced solution of the Suslov problem with a = e3 (our derivation;
    docs/theory/jimenez-scheurle2015.md).

    Parameters
    ----------
    t : (N,) times (either sign; the initial time is 0).
    inertia : (3, 3) with symmetric upper 2×2 block I_m; only I_m and the third row are used.
    omega0 : (3,) with omega0[2] = 0.

    Returns
    -------
    dict with omega (N, 3), lam (N,) (the multiplier, convention 𝕀ω̇ = 𝕀ω×ω + λe3), c (N,),
    d (N,), and the constants K, C0.
    """
    t = np.asarray(t, float)
    I = np.asarray(inertia, float)
    w0 = np.asarray(omega0, float)
    if abs(w0[2]) > 1e-12 * max(1.0, np.max(np.abs(w0))):
        raise InputError(f"omega0 must satisfy ω3 = 0; got ω3 = {w0[2]:.3g}")
    Im, n = I[:2, :2], I[2, :2]
    if np.max(np.abs(Im - Im.T)) > 1e-14:
        raise InputError("the exact Suslov solution needs a symmetric upper 2×2 inertia block")
    det = float(np.linalg.det(Im))
    u0 = w0[:2]
    Imi_J = np.linalg.solve(Im, _J)
    c0 = float(n @ u0)
    d0 = float(n @ Imi_J @ u0)
    K = float(np.sqrt(c0 * c0 / det + d0 * d0))
    if abs(c0) <= 1e-15 * np.linalg.norm(n) * np.linalg.norm(u0):   # on the equilibrium line c = 0
        c = np.zeros_like(t)
        d = np.full_like(t, d0)
        u = np.broadcast_to(u0, t.shape + (2,)).copy()
        C0 = np.nan
    else:
        C0 = float(np.arctanh(-d0 / K))
        x = K * t + C0
        d = -K * np.tanh(x)
        c = c0 * np.cosh(C0) * _sech(x)
        M = np.stack([n, n @ Imi_J])
        u = np.linalg.solve(M, np.stack([c, d]))
        u = u.T
    p = u @ Im.T
    q = u[:, 0] * p[:, 1] - u[:, 1] * p[:, 0]
    omega = np.concatenate([u, np.zeros(t.shape + (1,))], axis=-1)
    return {"omega": omega, "lam": q + c * d, "c": c, "d": d, "K": K, "C0": C0}


def reconstruct_reference(t, omega_fn, R0=R0, rtol=1e-13, atol=1e-13):
    """R(t) from Ṙ = R hat(ω(t)) by DOP853 (rtol, atol), for a callable ω(t) -> (3,).

    t : (N,) increasing from 0 (t[0] may be 0).  Returns (N, 3, 3).
    """
    from scipy.integrate import solve_ivp

    def f(s, y):
        R = y.reshape(3, 3)
        w = omega_fn(s)
        W = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
        return (R @ W).ravel()

    t = np.asarray(t, float)
    sol = solve_ivp(f, (0.0, float(t[-1])), np.asarray(R0, float).ravel(), method="DOP853",
                    t_eval=t, rtol=rtol, atol=atol)
    return sol.y.T.reshape(-1, 3, 3)


def _build(p):
    printed = bool(p["printed_inertia"])
    inertia = INERTIA_PRINTED if printed else INERTIA
    system = EulerPoincareSuslovSystem(inertia, A, name="suslov", allow_nonsymmetric=printed)
    I_exact = INERTIA   # identical for a = e3 (erratum E2)

    def exact_solution(t, R0=None, omega0=None, _R0_default=R0):
        """(R (N, 3, 3), omega (N, 3)) at times t ≥ 0: ω in closed form (ours), R by
        DOP853 on Ṙ = R hat(ω_exact(t)) (no closed form exists)."""
        R0v = _R0_default if R0 is None else np.asarray(R0, float)
        w0 = OMEGA0 if omega0 is None else np.asarray(omega0, float)
        omega = exact_omega(t, I_exact, w0)["omega"]
        R = reconstruct_reference(
            t, lambda s: exact_omega(np.array([s]), I_exact, w0)["omega"][0], R0v)
        return R, omega

    return Model("suslov", p, system, None, None, ("omega1", "omega2", "omega3"), SOURCE,
                 exact_solution=exact_solution, invariants={"energy": system.energy},
                 invariant_args=("omega",), path_array="omega",
                 default_method="eps-midpoint", default_h=0.01, default_t_final=10.0,
                 notes="Reduced state ω with ω3 = 0; R(0) = I (not given in the paper). The "
                       "default inertia is the symmetric equivalent of the printed one (erratum E2).",
                 initial_state={"R0": R0.copy(), "omega0": OMEGA0.copy()})


register(ModelSpec(
    "suslov", "Suslov problem: rigid body with ⟨e3, ω⟩ = 0 (Euler–Poincaré–Suslov on SO(3))",
    (Parameter("printed_inertia", 0, "1: the paper's printed non-symmetric 𝕀 used literally; "
               "0: its symmetric equivalent 𝕀* (erratum E2)", integer=True,
               check=lambda x: None if x in (0, 1) else "must be 0 or 1"),),
    _build, SOURCE, "Jiménez–Scheurle 2015 benchmark; exact reduced solution (ours, not in the paper)."))
