"""The balanced rolling ball (Chaplygin sphere) on a table turning at a constant rate.

Ferraro, Jiménez, Martín de Diego, "New developments on the geometric nonholonomic integrator",
Nonlinearity 28 (2015) §7.4, (39)–(46), Figs 1–4, and its preprint (docs/theory/ferraro2015.md).

Physics (§7.4 of the paper). A sphere of radius r (m), mass m (kg) and principal moments of inertia
I1, I2, I3 (kg·m²) about its centre, which is its centre of mass, rolls without slipping on a
horizontal table that turns at the constant rate Θ (rad/s) about the vertical axis through the
origin. Configuration (x, y, R) ∈ R² × SO(3): (x, y) is the centre (= the contact point, in an
inertial frame), R turns the principal axes into the space axes; ω̂ = ṘRᵀ (spatial),
Ω̂ = RᵀṘ (body), ω = RΩ. Lagrangian L = ½m(ẋ² + ẏ²) + ½ΩᵀIΩ, rolling constraints (41)

    ẋ − r ω2 + Θ y = 0,      ẏ + r ω1 − Θ x = 0

(contact-point velocity = table velocity (−Θy, Θx); affine unless Θ = 0).

Systems offered by the models (``dl.ReducedSystem``, state ``x0, R0, xdot0, xi0``):

* ``rolling-ball`` ``.system``: left trivialisation (ξ = Ω, body), constant metric
  diag(m, m, I1, I2, I3), constraint covectors depending on R (ω = RΩ):
  μ̃(x, R) = [[1, 0, −r R[1, :]], [0, 1, r R[0, :]]], ν̃ = (−Θy, Θx) — any inertia; the system of
  ``lie-gni`` (our Lie-group GNI, not in the paper) and of ``gni-exp-chart`` (the paper's §7.4.2).
* ``rolling-ball`` ``.forms["reduced"]`` (only when I1 = I2 = I3): right trivialisation (ξ = ω,
  spatial; legitimate because the homogeneous metric is bi-invariant, erratum E12,
  docs/theory/ferraro2015.md#e12), constant μ̃ = [[1, 0, 0, −r, 0], [0, 1, r, 0, 0]] — the reduced
  affine GNI of §7.4.1 (``reduced-gni``).
* ``rolling-ball-pre``: the preprint's left-invariant reduced model (its §7.4) — body inertia
  with the constraints written in the same (body) ω. **Not the physical Chaplygin sphere
  (erratum E13, docs/theory/ferraro2015.md#e13)**; a consistent synthetic test system only.

Continuous solutions, all in NumPy/SciPy (independent of the integrators):

* :func:`reference_solution` — our unreduced continuous equations (docs/theory/ferraro2015.md) in
  spatial ω, any inertia, any Θ,
  DOP853 at rtol = atol = 1e-13;
* :func:`exact_solution` — the homogeneous ball (I1 = I2 = I3): the contact point runs on a circle
  (our closed form), R(t) by DOP853 on Ṙ = ω̂R;
* :func:`chaplygin_body_solution` — the classical body-frame Chaplygin equations at Θ = 0
  (M = IΩ + mr²γ×(Ω×γ), Ṁ = M×Ω, γ̇ = γ×Ω), to validate the reference;
* :func:`pre_reference_solution` — the continuous equations of the preprint model (the limit of its
  discrete equations; ours).

Validation (:func:`check_inertia`): non-positive r, m, moments are errors (parameter checks);
a violated triangle inequality Ii ≤ Ij + Ik is an error; a mass distribution that does not fit in
the ball, I1 + I2 + I3 > 2mr², is a *warning* (the paper's Fig 3-right case is deliberately
non-physical).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..errors import ConstraintViolationError, InputError
from ..lie.so3 import rotation_check
from .base import Model, ModelSpec, Parameter, positive, register

SOURCE = ("Ferraro, Jiménez, Martín de Diego, Nonlinearity 28 (2015) 871, §7.4 "
          "(39)–(46), Figs 1–4")
PRE_SOURCE = ("Ferraro, Jiménez, Martín de Diego, preprint of 'New developments on the GNI', §7.4 "
              "(erratum E13, docs/theory/ferraro2015.md#e13): NOT the physical Chaplygin sphere")

#: Fig 1/Fig 2 data (§7.4.1): the homogeneous thin shell on a turning table.
FIG1_PARAMS = {"r": 1.0, "m": 1.0, "I1": 2.0 / 3.0, "I2": 2.0 / 3.0, "I3": 2.0 / 3.0, "theta": 1.0}
FIG1_X0 = np.array([1.0, 1.0])
FIG1_XDOT0 = np.array([1.0, 1.0])
FIG1_OMEGA0 = np.array([0.0, 2.0, 0.0])        # spatial; consistent with (41)

#: the preprint's example 2 (its §7.4, Fig 3) — the preprint's left-invariant model.
PRE_PARAMS = {"r": 1.0, "m": 3.0, "I1": 1.0, "I2": 1.1, "I3": 1.2, "theta": 0.2}
PRE_X0 = np.array([1.0, 0.0])
PRE_OMEGA0 = np.array([-0.2, 0.0, 0.4])         # body = spatial at R0 = I

#: Fig 3 (§7.4.2) parameters: left (physical) and right (non-physical; r, Θ and the initial data
#: assumed equal to the left case: erratum E14, docs/theory/ferraro2015.md#e14).
FIG3_PARAMS = {"left": {"r": 1.0, "m": 2.0, "I1": 1.0, "I2": 0.5, "I3": 0.7, "theta": 1.0},
               "right": {"r": 1.0, "m": 1.0, "I1": 10.0, "I2": 10.0, "I3": 1.0, "theta": 1.0}}
FIG3_RHO0 = np.array([0.5, 0.5, 0.5])

_E3 = np.array([0.0, 0.0, 1.0])
_PARAM_NAMES = ("r", "m", "I1", "I2", "I3", "theta")


# ---------------------------------------------------------------------------------------------
# small NumPy helpers
# ---------------------------------------------------------------------------------------------
def _hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _exp(w):
    """Rodrigues' formula (NumPy), for initial data."""
    w = np.asarray(w, float)
    th = float(np.linalg.norm(w))
    W = _hat(w)
    if th < 1e-8:
        return np.eye(3) + W + 0.5 * W @ W
    return np.eye(3) + np.sin(th) / th * W + (1.0 - np.cos(th)) / th ** 2 * W @ W


def _params(params) -> dict:
    """A full parameter dict (r, m, I1, I2, I3, theta) from a dict or a Model (defaults: Fig 1)."""
    p = getattr(params, "params", params)
    p = dict(p or {})
    out = dict(FIG1_PARAMS)
    out.update({k: float(p[k]) for k in _PARAM_NAMES if k in p})
    return out


def _inertia(p):
    return np.array([p["I1"], p["I2"], p["I3"]], float)


def is_homogeneous(params, rtol: float = 1e-14) -> bool:
    """True if I1 = I2 = I3 (to ``rtol`` relative)."""
    I = _inertia(_params(params))
    return bool(np.max(I) - np.min(I) <= rtol * np.max(I))


def check_inertia(params, *, warn: bool = True) -> float:
    """Validate the mass distribution; return the admissibility ratio (I1 + I2 + I3)/(2mr²).

    Raises
    ------
    InputError if r, m or a moment is not > 0, or if a triangle inequality Ii ≤ Ij + Ik fails
    (no rigid body has such moments).

    Warns
    -----
    UserWarning (one line) if I1 + I2 + I3 > 2mr²: the mass cannot all lie inside the ball
    (our admissibility check, docs/theory/ferraro2015.md; the ratio is 1 for a thin spherical
    shell). The integrators work regardless; the paper's Fig 3-right case (I = (10, 10, 1),
    m = r = 1, ratio 10.5) is such a case.
    """
    p = _params(params)
    for k in ("r", "m", "I1", "I2", "I3"):
        if not p[k] > 0:
            raise InputError(f"rolling ball: {k} must be > 0; got {p[k]!r}")
    I = _inertia(p)
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        if I[i] > (I[j] + I[k]) * (1.0 + 1e-12):
            raise InputError(
                f"rolling ball: the moments violate the triangle inequality I{i + 1} ≤ I{j + 1} + I{k + 1} "
                f"({I[i]:g} > {I[j]:g} + {I[k]:g}); no rigid body has these principal moments")
    ratio = float(np.sum(I) / (2.0 * p["m"] * p["r"] ** 2))
    if warn and ratio > 1.0 + 1e-12:
        warnings.warn(
            f"rolling ball: I1 + I2 + I3 = {np.sum(I):g} > 2mr² = {2.0 * p['m'] * p['r'] ** 2:g} "
            f"(ratio {ratio:.4g}): not physically admissible (mass outside the ball); integrating anyway",
            UserWarning, stacklevel=2)
    return ratio


def rolling_residual(params, x, R, xdot, omega):
    """The rolling constraints (41) in spatial ω: (ẋ − rω2 + Θy, ẏ + rω1 − Θx), shape (..., 2).

    R is unused (kept for a uniform signature)."""
    p = _params(params)
    x = np.asarray(x, float)
    xdot = np.asarray(xdot, float)
    w = np.asarray(omega, float)
    r, th = p["r"], p["theta"]
    return np.stack([xdot[..., 0] - r * w[..., 1] + th * x[..., 1],
                     xdot[..., 1] + r * w[..., 0] - th * x[..., 0]], axis=-1)


def check_state(params, x0, R0, xdot0, omega0, *, tol: float = 1e-10):
    """Validated (x0 (2,), R0 (3, 3), xdot0 (2,), omega0 (3,) spatial) as float64 arrays.

    Raises
    ------
    InputError (shapes, non-finite values, R0 not a rotation),
    ConstraintViolationError (the rolling constraint (41) violated; ``.residual`` holds it).
    """
    arrs = []
    for name, a, shape in (("x0", x0, (2,)), ("R0", R0, (3, 3)), ("xdot0", xdot0, (2,)),
                           ("omega0", omega0, (3,))):
        try:
            b = np.asarray(a, float)
        except (TypeError, ValueError):
            raise InputError(f"{name} must be an array of numbers") from None
        if b.shape != shape:
            raise InputError(f"{name} must have shape {shape}; got {b.shape}")
        if not np.all(np.isfinite(b)):
            raise InputError(f"{name} must be finite; got {b}")
        arrs.append(b)
    x, R, xd, w = arrs
    bad_rotation = rotation_check(R, tol)
    if bad_rotation:
        raise InputError(bad_rotation)
    res = rolling_residual(params, x, R, xd, w)
    bound = tol * max(1.0, float(np.max(np.abs(np.concatenate([xd, w])))))
    if np.max(np.abs(res)) > bound:
        raise ConstraintViolationError(
            f"the initial state violates the rolling constraint: (ẋ − rω2 + Θy, ẏ + rω1 − Θx) = "
            f"({res[0]:.3e}, {res[1]:.3e})", res)
    return x, R, xd, w


def energy(params, xdot, omega, R=None):
    """E = ½m|ẋ|² + ½ωᵀJω, J = R diag(I) Rᵀ (J), for arrays (..., 2), (..., 3), (..., 3, 3).

    With R None, ``omega`` is taken as the body angular velocity Ω (E = ½m|ẋ|² + ½ΩᵀIΩ)."""
    p = _params(params)
    I = _inertia(p)
    xdot = np.asarray(xdot, float)
    w = np.asarray(omega, float)
    if R is not None:
        w = np.einsum("...ji,...j->...i", np.asarray(R, float), w)     # Ω = Rᵀω
    return 0.5 * p["m"] * np.sum(xdot ** 2, axis=-1) + 0.5 * np.sum(I * w * w, axis=-1)


# ---------------------------------------------------------------------------------------------
# continuous reference (ours, docs/theory/ferraro2015.md): unreduced, spatial ω, any inertia, any Θ
# ---------------------------------------------------------------------------------------------
_S = np.array([[0.0, 1.0], [-1.0, 0.0], [0.0, 0.0]])     # torque of the contact force: τ = r S λ
_E = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])       # (ω2, −ω1)


def reference_vector_field(params):
    """f(t, y) of the unreduced reference equations, y = (x, y, R (9, row-major), ω (3)) ∈ R¹⁴.

    ẋ = rω2 − Θy, ẏ = Θx − rω1, Ṙ = ω̂R, J = R diag(I) Rᵀ, J ω̇ = τ − ω×Jω, τ = (rλ2, −rλ1, 0),
    (ẍ, ÿ) = λ/m; eliminating λ: (I₂ − r²m E J⁻¹ S) a = r E b + Θ(−ẏ, ẋ), ω̇ = rm J⁻¹ S a + b,
    b = −J⁻¹(ω × Jω).
    """
    p = _params(params)
    r, m, th = p["r"], p["m"], p["theta"]
    I = _inertia(p)

    def f(t, y):
        R = y[2:11].reshape(3, 3)
        w = y[11:14]
        J = (R * I) @ R.T
        Jinv = (R / I) @ R.T
        xd = r * w[1] - th * y[1]
        yd = th * y[0] - r * w[0]
        b = -Jinv @ np.cross(w, J @ w)
        JS = Jinv @ _S
        K = np.eye(2) - r * r * m * (_E @ JS)
        a = np.linalg.solve(K, r * (_E @ b) + th * np.array([-yd, xd]))
        wdot = r * m * (JS @ a) + b
        Rdot = _hat(w) @ R
        return np.concatenate([[xd, yd], Rdot.ravel(), wdot])
    return f


def _dop853(f, y0, t, rtol, atol):
    from scipy.integrate import solve_ivp
    t = np.asarray(t, float)
    if t.ndim != 1 or t.size == 0 or t[0] != 0.0 or np.any(np.diff(t) < 0):
        raise InputError("t must be a non-decreasing 1-D array starting at 0")
    if t[-1] == 0.0:
        return np.asarray(y0, float)[None, :]
    sol = solve_ivp(f, (0.0, float(t[-1])), np.asarray(y0, float), method="DOP853", t_eval=t,
                    rtol=rtol, atol=atol)
    if not sol.success:  # pragma: no cover - DOP853 on a smooth ODE
        raise RuntimeError(f"reference integration failed: {sol.message}")
    return sol.y.T


def _pack(params, x, R, w):
    p = _params(params)
    xd = np.stack([p["r"] * w[:, 1] - p["theta"] * x[:, 1], p["theta"] * x[:, 0] - p["r"] * w[:, 0]], -1)
    xi = np.einsum("nji,nj->ni", R, w)
    return {"x": x, "R": R, "xdot": xd, "omega": w, "xi": xi, "energy": energy(p, xd, xi)}


def reference_solution(params, x0, R0, xdot0, omega0, t, *, rtol: float = 1e-13, atol: float = 1e-13):
    """The ball's motion from the unreduced reference equations by SciPy DOP853 (any inertia, any Θ).

    Parameters
    ----------
    params : dict (or Model) with r, m, I1, I2, I3, theta (missing ones: Fig 1 values).
    x0 (2,), R0 (3, 3), xdot0 (2,), omega0 (3,) spatial : a state satisfying (41).
    t : (N,) non-decreasing times, t[0] = 0.

    Returns
    -------
    dict of arrays: x (N, 2), R (N, 3, 3), xdot (N, 2), omega (N, 3) spatial, xi (N, 3) body
    (= Rᵀω), energy (N,). R is not projected on SO(3) (drift ~1e-13 per unit time).
    """
    x0, R0, xd0, w0 = check_state(params, x0, R0, xdot0, omega0)
    Y = _dop853(reference_vector_field(params), np.concatenate([x0, R0.ravel(), w0]), t, rtol, atol)
    return _pack(params, Y[:, :2], Y[:, 2:11].reshape(-1, 3, 3), Y[:, 11:14])


def exact_solution(params, x0, R0, xdot0, omega0, t, *, rtol: float = 1e-13, atol: float = 1e-13):
    """The homogeneous ball (I1 = I2 = I3 = I) in closed form (ours, docs/theory/ferraro2015.md).

    κ = ΘI/(I + mr²); z = x + iy: z(t) = z0 + ż0 (e^{iκt} − 1)/(iκ) (z0 + ż0 t when κ = 0);
    ω1 = (Θx − ẏ)/r, ω2 = (ẋ + Θy)/r, ω3 constant. The contact point runs on the circle of centre
    z0 + iż0/κ and radius |ż0|/κ. R(t) has no closed form: DOP853 on Ṙ = ω̂(t)R (rtol, atol).

    Returns the dict of :func:`reference_solution` plus ``kappa``, ``centre`` (2,), ``radius``.

    Raises
    ------
    InputError if the inertia is not homogeneous.
    """
    p = _params(params)
    if not is_homogeneous(p):
        raise InputError("the exact rolling-ball solution needs I1 = I2 = I3 (use reference_solution)")
    x0, R0, xd0, w0 = check_state(p, x0, R0, xdot0, omega0)
    r, m, th, I = p["r"], p["m"], p["theta"], p["I1"]
    kappa = th * I / (I + m * r * r)
    t = np.asarray(t, float)
    z0 = complex(x0[0], x0[1])
    zd0 = complex(xd0[0], xd0[1])

    def z_zd(s):
        s = np.asarray(s, float)
        e = np.exp(1j * kappa * s)
        if kappa == 0.0:
            return z0 + zd0 * s, zd0 * np.ones_like(e)
        return z0 + zd0 * (e - 1.0) / (1j * kappa), zd0 * e

    def omega_at(s):
        z, zd = z_zd(s)
        return np.stack([(th * z.real - zd.imag) / r, (zd.real + th * z.imag) / r,
                         np.full(np.shape(z), w0[2])], -1)

    z, zd = z_zd(t)
    x = np.stack([z.real, z.imag], -1)
    w = omega_at(t)

    def f(s, y):
        return (_hat(omega_at(s)) @ y.reshape(3, 3)).ravel()
    R = _dop853(f, R0.ravel(), t, rtol, atol).reshape(-1, 3, 3)
    out = _pack(p, x, R, w)
    out["xdot"] = np.stack([zd.real, zd.imag], -1)
    out["energy"] = 0.5 * m * np.abs(zd) ** 2 + 0.5 * I * np.sum(w * w, -1)
    out["kappa"] = kappa
    if kappa != 0.0:
        c = z0 + 1j * zd0 / kappa
        out["centre"] = np.array([c.real, c.imag])
        out["radius"] = abs(zd0) / abs(kappa)
    return out


def chaplygin_body_solution(params, gamma0, Omega0, t, *, rtol: float = 1e-13, atol: float = 1e-13):
    """The classical body-frame Chaplygin-sphere equations on a fixed table (Θ = 0 only):

        M = IΩ + mr² γ×(Ω×γ),   Ṁ = M × Ω,   γ̇ = γ × Ω,   γ = Rᵀe3 (the vertical in the body),

    by DOP853. Ω is recovered from M by solving (I + mr²(1 − γγᵀ))Ω = M (|γ| = 1).

    Returns dict: Omega (N, 3), gamma (N, 3), M (N, 3).
    """
    p = _params(params)
    r, m = p["r"], p["m"]
    I = np.diag(_inertia(p))
    g0 = np.asarray(gamma0, float)
    W0 = np.asarray(Omega0, float)

    def Omega(M, g):
        return np.linalg.solve(I + m * r * r * (np.eye(3) - np.outer(g, g)), M)

    def f(s, y):
        M, g = y[:3], y[3:]
        W = Omega(M, g)
        return np.concatenate([np.cross(M, W), np.cross(g, W)])

    M0 = I @ W0 + m * r * r * np.cross(g0, np.cross(W0, g0))
    Y = _dop853(f, np.concatenate([M0, g0]), t, rtol, atol)
    Om = np.array([Omega(y[:3], y[3:]) for y in Y])
    return {"Omega": Om, "gamma": Y[:, 3:], "M": Y[:, :3]}


def pre_reference_solution(params, x0, omega0, t, *, rtol: float = 1e-13, atol: float = 1e-13):
    """The continuous equations of the preprint's left-invariant model (the limit of its
    discrete equations; NOT the physical sphere, erratum E13), state (x, y, ω) with ω the body
    angular velocity:

        ẋ = rω2 − Θy,  ẏ = Θx − rω1,
        ω̇1 = (mrΘẋ − (I3 − I2)ω2ω3)/(I1 + mr²),  ω̇2 = (mrΘẏ − (I1 − I3)ω1ω3)/(I2 + mr²),
        ω̇3 = −(I2 − I1)ω1ω2/I3.

    Returns dict: x (N, 2), xdot (N, 2), omega (N, 3), energy (N,) = ½m|ẋ|² + ½ωᵀIω.
    """
    p = _params(params)
    r, m, th = p["r"], p["m"], p["theta"]
    I1, I2, I3 = _inertia(p)

    def f(s, y):
        w1, w2, w3 = y[2:]
        xd = r * w2 - th * y[1]
        yd = th * y[0] - r * w1
        return np.array([xd, yd,
                         (m * r * th * xd - (I3 - I2) * w2 * w3) / (I1 + m * r * r),
                         (m * r * th * yd - (I1 - I3) * w1 * w3) / (I2 + m * r * r),
                         -(I2 - I1) * w1 * w2 / I3])
    Y = _dop853(f, np.concatenate([np.asarray(x0, float), np.asarray(omega0, float)]), t, rtol, atol)
    x, w = Y[:, :2], Y[:, 2:]
    xd = np.stack([r * w[:, 1] - th * x[:, 1], th * x[:, 0] - r * w[:, 0]], -1)
    return {"x": x, "xdot": xd, "omega": w, "energy": energy(p, xd, w)}


# ---------------------------------------------------------------------------------------------
# initial data of the paper's experiments
# ---------------------------------------------------------------------------------------------
def initial_state(params, x0, R0, xdot0, omega0) -> dict:
    """The ReducedSystem initial state {x0, R0, xdot0, xi0} (left: ξ0 = R0ᵀω0 body) from a
    spatial ω0; validated (R0 a rotation, rolling constraint)."""
    x, R, xd, w = check_state(params, x0, R0, xdot0, omega0)
    return {"x0": x, "R0": R, "xdot0": xd, "xi0": R.T @ w}


def rolling_omega(params, x, xdot, omega3: float = 0.0):
    """The spatial ω with given ω3 that satisfies (41) at (x, ẋ):
    ω1 = (Θx − ẏ)/r, ω2 = (ẋ + Θy)/r.  (3,)"""
    p = _params(params)
    r, th = p["r"], p["theta"]
    return np.array([(th * x[0] - xdot[1]) / r, (xdot[0] + th * x[1]) / r, float(omega3)])


def fig1_initial_state(params=None) -> dict:
    """Fig 1/2 data (§7.4.1): (x0, y0) = (1, 1), (ẋ0, ẏ0) = (1, 1), R0 = I, ω from (41) with ω3 = 0
    — ω = (0, 2, 0) for the Fig 1 parameters (r = Θ = 1); other r, Θ give the consistent ω."""
    p = FIG1_PARAMS if params is None else params
    return initial_state(p, FIG1_X0, np.eye(3), FIG1_XDOT0, rolling_omega(p, FIG1_X0, FIG1_XDOT0))


def fig3_initial_state(case: str = "left", ydot0: float = 0.75, theta: float | None = None):
    """(params, state) of Fig 3 (§7.4.2) with our reconstruction of the missing data (erratum E14,
    docs/theory/ferraro2015.md#e14).

    x0 = (1, 0), ẋ0 = (0, ẏ0), R0 = exp(ρ̂0) with ρ0 = (0.5, 0.5, 0.5), spatial
    ω0 = ((Θx0 − ẏ0)/r, (ẋ0 + Θy0)/r, 0) (ω3(0) = 0 assumed): with the default ẏ0 = 0.75 and
    Θ = 1, ω0 = (0.25, 0, 0). ``case``: "left" (I = (1, 0.5, 0.7), m = 2) or "right"
    (I = (10, 10, 1), m = 1; non-physical). ``theta`` overrides Θ (Fig 4: Θ = 0, ẏ0 = 1.6).

    Returns
    -------
    (params dict, {x0, R0, xdot0, xi0}).
    """
    if case not in FIG3_PARAMS:
        raise InputError(f"case must be 'left' or 'right'; got {case!r}")
    p = dict(FIG3_PARAMS[case])
    if theta is not None:
        p["theta"] = float(theta)
    x0 = np.array([1.0, 0.0])
    xd0 = np.array([0.0, float(ydot0)])
    w0 = np.array([(p["theta"] * x0[0] - xd0[1]) / p["r"], (xd0[0] + p["theta"] * x0[1]) / p["r"], 0.0])
    return p, initial_state(p, x0, _exp(FIG3_RHO0), xd0, w0)


def fig4_initial_state():
    """(params, state) of Fig 4 (§7.4.2) as we reconstruct it (erratum E14): the Fig 3-left ball on a
    fixed table (Θ = 0) with ẏ0 = 1.6, ω0 = (−1.6, 0, 0) (rolls about 16 length units in T = 10)."""
    return fig3_initial_state("left", ydot0=1.6, theta=0.0)


def pre_initial_state(params=None) -> dict:
    """The preprint's example 2: (x0, y0) = (1, 0), ω0 = (−0.2, 0, 0.4) (body), R0 = I, ẋ0 from the
    constraints of the preprint model (ẋ0 = rω2 − Θy0, ẏ0 = Θx0 − rω1)."""
    p = _params(PRE_PARAMS if params is None else params)
    x0, w0 = PRE_X0, PRE_OMEGA0
    xd0 = np.array([p["r"] * w0[1] - p["theta"] * x0[1], p["theta"] * x0[0] - p["r"] * w0[0]])
    return {"x0": x0.copy(), "R0": np.eye(3), "xdot0": xd0, "xi0": w0.copy()}


# ---------------------------------------------------------------------------------------------
# the systems
# ---------------------------------------------------------------------------------------------
def ball_system(params, name: str = "rolling-ball"):
    """The left-trivialised ReducedSystem of the ball on R² × SO(3) (any inertia, any Θ)."""
    import jax.numpy as jnp

    from ..systems.reduced import ReducedSystem

    p = _params(params)
    r, th = p["r"], p["theta"]
    metric = np.diag([p["m"], p["m"], p["I1"], p["I2"], p["I3"]])

    def constraint_matrix(x, R):
        one, zero = jnp.ones(()), jnp.zeros(())
        return jnp.stack([jnp.concatenate([jnp.stack([one, zero]), -r * R[1, :]]),
                          jnp.concatenate([jnp.stack([zero, one]), r * R[0, :]])])

    def constraint_rhs(x, R):
        return jnp.stack([-th * x[1], th * x[0]])

    return ReducedSystem(metric, constraint_matrix, constraint_rhs=constraint_rhs, shape_dim=2,
                         trivialization="left", name=name)


def _constant_mu(r):
    return np.array([[1.0, 0.0, 0.0, -r, 0.0], [0.0, 1.0, r, 0.0, 0.0]])


def homogeneous_reduced_system(params, name: str = "rolling-ball-reduced"):
    """The homogeneous ball's reduced form of §7.4.1 (I1 = I2 = I3): right trivialisation
    (ξ = ω spatial), metric diag(m, m, I, I, I), constant μ̃ = [[1,0,0,−r,0],[0,1,r,0,0]],
    ν̃ = (−Θy, Θx)."""
    import jax.numpy as jnp

    from ..systems.reduced import ReducedSystem

    p = _params(params)
    if not is_homogeneous(p):
        raise InputError("the reduced (right-trivialised) form of the ball needs I1 = I2 = I3")
    th = p["theta"]
    mu = _constant_mu(p["r"])
    return ReducedSystem(np.diag([p["m"], p["m"], p["I1"], p["I2"], p["I3"]]), mu,
                         constraint_rhs=lambda x, R: jnp.stack([-th * x[1], th * x[0]]),
                         shape_dim=2, trivialization="right", name=name)


def pre_system(params, name: str = "rolling-ball-pre"):
    """The preprint's left-invariant model (its §7.4): metric diag(m, m, I1, I2, I3), constant
    μ̃ = [[1,0,0,−r,0],[0,1,r,0,0]] in the body ω, ν̃ = (−Θy, Θx). Not the physical sphere."""
    import jax.numpy as jnp

    from ..systems.reduced import ReducedSystem

    p = _params(params)
    th = p["theta"]
    return ReducedSystem(np.diag([p["m"], p["m"], p["I1"], p["I2"], p["I3"]]), _constant_mu(p["r"]),
                         constraint_rhs=lambda x, R: jnp.stack([-th * x[1], th * x[0]]),
                         shape_dim=2, trivialization="left", name=name)


# ---------------------------------------------------------------------------------------------
# the registered models
# ---------------------------------------------------------------------------------------------
def _parameters(defaults):
    return (
        Parameter("r", defaults["r"], "radius of the ball", "m", positive),
        Parameter("m", defaults["m"], "mass of the ball", "kg", positive),
        Parameter("I1", defaults["I1"], "principal moment of inertia about body axis 1 (about the centre)",
                  "kg·m²", positive),
        Parameter("I2", defaults["I2"], "principal moment of inertia about body axis 2", "kg·m²", positive),
        Parameter("I3", defaults["I3"], "principal moment of inertia about body axis 3", "kg·m²", positive),
        Parameter("theta", defaults["theta"], "angular velocity Θ of the table about the vertical "
                  "axis through (0, 0) (Θ = 0: fixed table)", "rad/s"),
    )


def _ball_state_invariants(p):
    if p["theta"] != 0.0:
        return {}
    I = _inertia(p)

    def body_energy(xdot, xi):
        import jax.numpy as jnp
        return 0.5 * p["m"] * jnp.sum(xdot ** 2, -1) + 0.5 * jnp.sum(jnp.asarray(I) * xi * xi, -1)
    return {"energy": body_energy}


def _build_ball(p):
    ratio = check_inertia(p)
    system = ball_system(p)
    forms = {}
    if is_homogeneous(p):
        forms["reduced"] = homogeneous_reduced_system(p)
    state = fig1_initial_state(p)
    hom = is_homogeneous(p)

    def exact(t, x0=None, R0=None, xdot0=None, omega0=None, xi0=None):
        """Homogeneous ball only: dict x, R, xdot, omega (spatial), xi, energy at times t. The
        initial angular velocity is ``omega0`` (spatial) or ``xi0`` (body, the system's state)."""
        s = _defaults(state, x0, R0, xdot0, omega0, xi0)
        return exact_solution(p, *s, t)

    def reference(t, x0=None, R0=None, xdot0=None, omega0=None, xi0=None):
        """The unreduced reference (DOP853, 1e-13): dict x, R, xdot, omega (spatial), xi, energy; initial
        angular velocity ``omega0`` (spatial) or ``xi0`` (body)."""
        s = _defaults(state, x0, R0, xdot0, omega0, xi0)
        return reference_solution(p, *s, t)

    return Model("rolling-ball", p, system, None, None, ("x", "y"), SOURCE,
                 exact_solution=exact if hom else None, invariants=_ball_state_invariants(p),
                 invariant_args=("xdot", "xi"), path_array="x", default_method="lie-gni",
                 default_h=0.01, default_t_final=10.0,
                 notes=("Left-trivialised ReducedSystem on R²×SO(3) (ξ = body Ω); default state: Fig 1 "
                        "((x0, y0) = (1, 1), (ẋ0, ẏ0) = (1, 1), R0 = I, ω = ((Θx0 − ẏ0)/r, (ẋ0 + Θy0)/r, 0) "
                        "from (41): (0, 2, 0) for the Fig 1 parameters). "
                        f"Admissibility (I1+I2+I3)/(2mr²) = {ratio:.4g} (≤ 1 physical). "
                        + ("forms['reduced']: the right-trivialised homogeneous form of §7.4.1 "
                           "(for reduced-gni)." if hom else "")),
                 initial_state=dict(state), forms=forms, reference=reference)


def _defaults(state, x0, R0, xdot0, omega0, xi0=None):
    R = state["R0"] if R0 is None else np.asarray(R0, float)
    if omega0 is not None and xi0 is not None:
        raise InputError("give the initial angular velocity as omega0 (spatial) or xi0 (body), not both")
    xi = state["xi0"] if xi0 is None else np.asarray(xi0, float)
    w = R @ xi if omega0 is None else np.asarray(omega0, float)
    return (state["x0"] if x0 is None else x0, R, state["xdot0"] if xdot0 is None else xdot0, w)


def _build_pre(p):
    check_inertia(p)
    system = pre_system(p)
    state = pre_initial_state(p)

    def reference(t, x0=None, omega0=None):
        """The preprint model's continuous equations: dict x, xdot, omega (body), energy."""
        return pre_reference_solution(p, state["x0"] if x0 is None else x0,
                                      state["xi0"] if omega0 is None else omega0, t)

    return Model("rolling-ball-pre", p, system, None, None, ("x", "y"), PRE_SOURCE,
                 invariant_args=("xdot", "xi"), path_array="x", default_method="lie-gni",
                 default_h=0.01, default_t_final=15.0,
                 notes=("NOT the physical Chaplygin sphere (erratum E13): body inertia with the rolling "
                        "constraints written in the same body ω — a consistent left-invariant test system "
                        "(the preprint's §7.4 example 2 data)."),
                 initial_state=dict(state), reference=reference)


register(ModelSpec(
    "rolling-ball", "Chaplygin sphere (balanced ball) rolling on a turning table (R²×SO(3), affine)",
    _parameters(FIG1_PARAMS), _build_ball, SOURCE,
    "Balanced ball of any inertia on a table turning at rate Θ; exact solution when I1 = I2 = I3; "
    "unreduced reference equations otherwise."))

register(ModelSpec(
    "rolling-ball-pre", "Preprint's left-invariant 'rolling ball' (NOT the physical sphere, erratum E13)",
    _parameters(PRE_PARAMS), _build_pre, PRE_SOURCE,
    "Synthetic left-invariant reduced model of the preprint (its §7.4 example 2 data)."))
