"""The reflection ("momentum-jump") GNI on the Lie group SO(3) with a left-invariant discrete
Lagrangian, for any constraint distribution.

Ferraro, Iglesias-Ponte, Martín de Diego, Nonlinearity 21 (2008) §4.1–§4.4, (7). Discrete Lagrangian
L_d(R_k, R_{k+1}) = l_d(W_k), W_k = R_kᵀR_{k+1}; trivialised derivatives (§4.1 of the paper;
docs/theory/ferraro2008.md)

    <l_d'^R(W), ξ> = d/ds l_d(exp(sξ̂) W),    <l_d'^L(W), η> = d/ds l_d(W exp(sη̂)),
    l_d'^L(W) = Ad*_W l_d'^R(W) = Wᵀ l_d'^R(W).

Algorithm in body coordinates (state: R_k and the pre-momentum μ⁺_k = l_d'^L(W_{k−1})):

    μ⁻_k = (Id − 2 Q̂*(R_k)) μ⁺_k,   Q̂* = Aᵀ(A𝕀⁻¹Aᵀ)⁻¹A𝕀⁻¹  (A = A(R_k), the reflection)
    solve l_d'^R(W_k) = μ⁻_k for W_k ∈ SO(3)                 (Newton on W = cay(w), or closed form)
    R_{k+1} = R_k W_k,   μ⁺_{k+1} = l_d'^L(W_k).

Theorem 1: with 𝕀 ∝ Id (bi-invariant metric) and *any* left-invariant l_d and any D, the energy
½|μ⁻_k|²_{𝕀⁻¹} (= ½|μ⁺_k|²_{𝕀⁻¹}, the reflection is an isometry) is exactly constant. Beyond the
paper (our result, docs/theory/ferraro2008.md): the Moser–Veselov l_d conserves it for any 𝕀 and any D. With D
right-invariant as well (§4.4), the average momentum μ̃_k = ½(μ⁺_k + μ⁻_k) = P̂*μ⁺_k has constant
norm and constant spatial form R_k μ̃_k.

Discrete Lagrangians (L_d = h·L scaling, so momenta are physical):
``moser_veselov``: l_d(W) = −(1/h) tr(W J_d), J_d = ½ tr(𝕀) Id − 𝕀; closed-form derivatives
l_d'^R = vee(W J_d − J_d Wᵀ)/h, l_d'^L = vee(J_d W − Wᵀ J_d)/h (ours, checked by finite differences;
docs/theory/ferraro2008.md);
``cayley_lagrangian``: l_d(W) = (1/2h) cay⁻¹(W)ᵀ 𝕀 cay⁻¹(W) (derivatives by autodiff).

Start-up from (R0, ω0): ``startup="consistent"`` (default) μ⁺_0 = 𝕀ω0 − (h/2) A(R0)ᵀλ(R0, ω0),
or ``"legendre"`` μ⁺_0 = 𝕀ω0 (the paper does not say how to start; our start-ups,
docs/theory/ferraro2008.md).

Reported at the nodes (``observe``): R (3, 3); omega = 𝕀⁻¹μ̃_k (satisfies A(R_k)ω_k = 0 exactly);
mu = μ̃_k; mu_minus = μ⁻_k (post-momentum); energy_post = ½μ⁻_kᵀ𝕀⁻¹μ⁻_k (the Theorem 1 energy);
spatial_momentum = R_k μ̃_k; lam = −(2/h) C⁻¹A𝕀⁻¹μ⁺_k (≈ the continuous multiplier).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import linalg
from ..declarations import Claim, Feature, Invariant
from ..errors import InputError
from ..lie import so3
from ..solvers.newton import MAX_ITER, RTOL, newton
from .base import Method, Scheme, StepInfo, Traits
from .reduced_gni import _PUB as _FJMD2015, REDUCED_FEATURES, ReducedGNI, _traits as _reduced_traits

_PAPER = ("Ferraro, Iglesias-Ponte, Martín de Diego, Nonlinearity 21 (2008) §4.1–§4.4, (7), Thm 1")


class LieGNIState(NamedTuple):
    """R: (3, 3) R_k;  mu: (3,) the pre-momentum μ⁺_k (body)."""

    R: Any
    mu: Any


@dataclass(frozen=True)
class LieDiscreteLagrangian:
    """A left-invariant discrete Lagrangian on SO(3), built from the inertia.

    build : inertia (3, 3) -> dict with ``l_d(W, h)`` and optionally closed forms ``dR(W, h)``,
        ``dL(W, h)`` (the trivialised derivatives, (3,)) and, in the Cayley coordinate w of
        W = cay(w) that the Newton solve uses, ``dR_cay(w, h)`` = l_d'^R(cay(w)) (3,), its Jacobian
        ``dR_cay_jac(w, h)`` (3, 3) and ``dL_cay(w, h)`` = l_d'^L(cay(w)) (3,). Missing pieces are
        taken by autodiff (correct, but several times slower inside the compiled step).
    """

    name: str
    build: Callable


def _cayley_build(inertia):
    """l_d(W) = (1/2h) wᵀ𝕀w, w = cay⁻¹(W). Closed forms (dcay⁻¹_w = I − ŵ/2 + wwᵀ/4, so3.dcay_inv):
    l_d'^R(cay(w)) = (dcay⁻¹_w)ᵀ𝕀w/h = [𝕀w + ½ w × 𝕀w + ¼ (w·𝕀w) w]/h,
    l_d'^L(cay(w)) = (dcay⁻¹_{−w})ᵀ𝕀w/h = [𝕀w − ½ w × 𝕀w + ¼ (w·𝕀w) w]/h (𝕀 symmetric)."""
    I = jnp.asarray(inertia, jnp.float64)

    def l_d(W, h):
        w = so3.cayley_inv(W)
        return 0.5 * jnp.sum(w * linalg.mv(I, w)) / h

    def _moment(w, h, sign):
        Iw = so3.matvec(I, w)
        return (Iw + (0.5 * sign) * so3.cross(w, Iw) + 0.25 * jnp.sum(w * Iw) * w) / h

    def dR_cay_jac(w, h):
        Iw = so3.matvec(I, w)
        return (I + 0.5 * (so3.matmul(so3.hat(w), I) - so3.hat(Iw))
                + 0.25 * (jnp.sum(w * Iw) * jnp.eye(3) + 2.0 * so3.outer(w, Iw))) / h

    return {"l_d": l_d, "dR_cay": lambda w, h: _moment(w, h, 1.0), "dR_cay_jac": dR_cay_jac,
            "dL_cay": lambda w, h: _moment(w, h, -1.0)}


def _mv_parts(Jd):
    Jd = jnp.asarray(Jd, jnp.float64)

    def l_d(W, h):
        return -jnp.trace(so3.matmul(W, Jd)) / h

    def dR(W, h):
        return so3.vee(so3.matmul(W, Jd) - so3.matmul(Jd, so3.transpose(W))) / h

    def dL(W, h):
        return so3.vee(so3.matmul(Jd, W) - so3.matmul(so3.transpose(W), Jd)) / h

    def dR_cay_jac(w, h):
        # d/dw vee(W J_d − J_d Wᵀ) = (tr(M) I − M) dcay_w with M = W J_d, W = cay(w)
        # (vee(û M + Mᵀû) = (tr(M) I − M) u and d cay(w)[z] = hat(dcay_w z) cay(w))
        M = so3.matmul(so3.cayley(w), Jd)
        trM = M[0, 0] + M[1, 1] + M[2, 2]
        return so3.matmul(trM * jnp.eye(3) - M, so3.dcay(w)) / h

    # in the Cayley coordinate without forming W: W = I + c(ŵ + ŵ²/2), c = 4/(4 + |w|²), so
    # W J_d − J_d Wᵀ = c(ŵJ_d + J_dŵ) + (c/2)(ŵ²J_d − J_dŵ²), whose vee is
    # c[(tr J_d I − J_d) w + ½ (J_d w) × w] (and J_d W − Wᵀ J_d the same with − ½): the identity
    # parts cancel exactly instead of in floating point (|J_d| ε / h of round-off, which at the
    # short stages of a composition kept Newton from its tolerance)
    trace_part = jnp.trace(Jd) * jnp.eye(3) - Jd

    def _cayley_moment(w, h, sign):
        c = 4.0 / (4.0 + jnp.sum(w * w))
        return (c / h) * (so3.matvec(trace_part, w) + (0.5 * sign) * so3.cross(so3.matvec(Jd, w), w))

    return {"l_d": l_d, "dR": dR, "dL": dL,
            "dR_cay": lambda w, h: _cayley_moment(w, h, 1.0), "dR_cay_jac": dR_cay_jac,
            "dL_cay": lambda w, h: _cayley_moment(w, h, -1.0)}


def _mv_build(inertia):
    I = jnp.asarray(inertia, jnp.float64)
    return _mv_parts(0.5 * jnp.trace(I) * jnp.eye(3) - I)


def moser_veselov_with(J_d) -> LieDiscreteLagrangian:
    """The MV form l_d(W) = −(1/h) tr(W J_d) with a given (3, 3) J_d, whatever the system's inertia
    (e.g. a mismatched J_d, our negative control for the energy: docs/theory/ferraro2008.md)."""
    J_d = np.asarray(J_d, float)
    return LieDiscreteLagrangian(f"moser-veselov(J_d = {np.array2string(J_d, precision=3)})",
                                 lambda inertia: _mv_parts(J_d))


#: Moser–Veselov l_d(W) = −(1/h) tr(W J_d), J_d = ½ tr(𝕀) Id − 𝕀.
moser_veselov = LieDiscreteLagrangian("moser-veselov", _mv_build)
#: l_d(W) = (1/2h) cay⁻¹(W)ᵀ 𝕀 cay⁻¹(W): a consistent left-invariant l_d that is not MV.
cayley_lagrangian = LieDiscreteLagrangian("cayley", _cayley_build)


def trivialised_derivatives(l_d):
    """(dR, dL) of a callable l_d(W, h) by autodiff: l_d'^R(W) = ∇_ξ l_d(exp(ξ̂)W)|₀,
    l_d'^L(W) = ∇_η l_d(W exp(η̂))|₀ (each (3,))."""
    z = jnp.zeros(3)

    def dR(W, h):
        return jax.grad(lambda xi: l_d(so3.matmul(so3.cayley(xi), W), h))(z)

    def dL(W, h):
        return jax.grad(lambda eta: l_d(so3.matmul(W, so3.cayley(eta)), h))(z)
    return dR, dL


def _derivatives(parts):
    dR, dL = trivialised_derivatives(parts["l_d"])
    return parts.get("dR", dR), parts.get("dL", dL)


def _cayley_coordinate_parts(parts):
    """(dR_cay, dR_cay_jac or None, dL_cay) in the Cayley coordinate (see LieDiscreteLagrangian)."""
    dR, dL = _derivatives(parts)
    dR_cay = parts.get("dR_cay", lambda w, h: dR(so3.cayley(w), h))
    dL_cay = parts.get("dL_cay", lambda w, h: dL(so3.cayley(w), h))
    return dR_cay, parts.get("dR_cay_jac"), dL_cay


def solve_right_momentum(dR, inertia, mu, h, rtol=RTOL, max_iter=MAX_ITER, *, in_cayley=False,
                         jacobian=None, return_coordinate=False):
    """W ∈ SO(3) with l_d'^R(W) = μ by Newton on w, W = cay(w), from w = h𝕀⁻¹μ.

    dR : l_d'^R as a function of W (or of w with ``in_cayley=True``); jacobian : optional
    w -> (3, 3) Jacobian of w ↦ l_d'^R(cay(w)) (default: forward-mode autodiff).
    Returns (W (3, 3), converged, iterations), or (w (3,), converged, iterations) with
    ``return_coordinate=True``.
    """
    Iinv = linalg.inv(inertia)

    def F(w):
        return (dR(w, h) if in_cayley else dR(so3.cayley(w), h)) - mu

    J = None if jacobian is None else (lambda w: jacobian(w, h))
    res = newton(F, h * linalg.mv(Iinv, mu), jacobian=J, rtol=rtol, max_iter=max_iter)
    x = res.x if return_coordinate else so3.cayley(res.x)
    return x, res.converged, res.iterations


@dataclass(frozen=True, eq=False)
class LieGNI(Method):
    """The Lie-group GNI (module doc) for a :class:`~dalembert.systems.lie_nonholonomic.LieNonholonomicSystem`
    (or an ``EulerPoincareSuslovSystem``: constant covectors).

    **Torques** (``force=``, a left-trivialised torque τ(R, ω, t[, u]); the forced discrete
    Lagrange–d'Alembert principle, Marsden–West 2001 §3.2, left-trivialised as in Lee, Leok &
    McClamroch 2005; trapezoidal, ours for this scheme): the discrete forces f_d⁻ = (h/2)τ(R_k, ω_k, t_k)
    and f_d⁺ = (h/2)τ(R_{k+1}, ω_{k+1}, t_k + h), ω the node velocity 𝕀⁻¹P̂*μ⁺, enter the momentum
    equations as l_d'^R(W_k) = μ⁻_k + f_d⁻ and μ⁺_{k+1} = l_d'^L(W_k) + f_d⁺ (p_k = −D₁L_d − f_d⁻,
    p_{k+1} = D₂L_d + f_d⁺). A torque that depends on ω makes the second one implicit (Newton on
    μ⁺_{k+1}, 3 unknowns); one that does not keeps it explicit.

    Build options: startup ("consistent" | "legendre"), rtol, max_iter (Newton).
    """

    discrete_lagrangian: Any = None

    def build(self, system, x0=None, *, startup: str = "consistent", rtol: float = RTOL,
              max_iter: int = MAX_ITER) -> Scheme:
        system = _as_lie_system(system, self.name)
        if startup not in ("consistent", "legendre"):
            raise InputError(f"unknown startup {startup!r}; choose from: consistent, legendre")
        parts = self.discrete_lagrangian.build(system.inertia)
        dR_cay, dR_cay_jac, dL_cay = _cayley_coordinate_parts(parts)
        I = system.inertia
        # a torque that depends on ω makes the f_d⁺ kick implicit (decided by tracing at R0)
        velocity_torque = system.has_force and system.force_depends_on_velocity(
            jnp.eye(3) if x0 is None else x0, jnp.zeros(3))

        def init(R0, omega0, h):
            R0 = jnp.asarray(R0, jnp.float64)
            omega0 = jnp.asarray(omega0, jnp.float64)
            mu = system.momentum(omega0)
            if startup == "consistent":
                mu = mu - 0.5 * h * linalg.vm(system.multiplier(R0, omega0), system.constraint_covectors(R0))
            return LieGNIState(R0, mu)

        forced = getattr(system, "has_force", False)

        def node_velocity(R, mu):
            """𝕀⁻¹μ̃ = 𝕀⁻¹P̂*(R)μ⁺ (the reported node velocity)."""
            return system.velocity(system.project_momentum(R, mu))

        def step(state, h):
            R, mu = state
            mu_minus = system.reflect(R, mu)
            if forced:      # + f_d⁻ = (h/2)τ(R_k, ω_k, t_k) (class doc)
                mu_minus = mu_minus + 0.5 * h * system.force(R, node_velocity(R, mu))
            w, conv, it = solve_right_momentum(dR_cay, I, mu_minus, h, rtol, max_iter, in_cayley=True,
                                               jacobian=dR_cay_jac, return_coordinate=True)
            R1, mu1 = so3.matmul(R, so3.cayley(w)), dL_cay(w, h)
            if forced:      # + f_d⁺ = (h/2)τ(R_{k+1}, ω_{k+1}, t_k + h), ω_{k+1} from μ⁺_{k+1} itself
                def kick(m):
                    return mu1 + 0.5 * h * system.force(R1, node_velocity(R1, m), h)
                if velocity_torque:
                    res = newton(lambda m: m - kick(m), kick(mu1), rtol=rtol, max_iter=max_iter)
                    mu1, conv, it = res.x, conv & res.converged, it + res.iterations
                else:
                    mu1 = kick(mu1)
            return LieGNIState(R1, mu1), StepInfo(conv, it)

        def observe(state, h):
            R, mu = state
            A, C = system.gram(R)
            s = linalg.solve_spd(C, linalg.mv(A, system.velocity(mu)))
            mu_avg = mu - linalg.vm(s, A)
            mu_minus = mu - 2.0 * linalg.vm(s, A)
            return {"R": R, "omega": system.velocity(mu_avg), "mu": mu_avg, "mu_minus": mu_minus,
                    "energy_post": system.hamiltonian(mu_minus),
                    "spatial_momentum": linalg.mv(R, mu_avg), "lam": -(2.0 / h) * s}

        return Scheme(init, step, observe)


class LieMultiplierState(NamedTuple):
    """R: (3, 3) R_k;  mu: (3,) the body momentum μ_k on D* (A(R_k)𝕀⁻¹μ_k = 0);  lam: (m,) the
    multiplier of the last step (reported, and the next Newton guess)."""

    R: Any
    mu: Any
    lam: Any


@dataclass(frozen=True, eq=False)
class SymmetricLieGNI(Method):
    """The Lie-group GNI's discrete Lagrangian with one constraint impulse per step: a self-adjoint
    map of (R_k, μ_k) on D* = {A(R)𝕀⁻¹μ = 0}, the base of the compositions ``lie-gni-mv-4/-6``.

    The two-step form above steps (R_k, μ⁺_k) by the reflection (Id − 2Q̂*) and then the Lie–Poisson
    map of l_d; as for the vector-space GNI its adjoint is "map, then reflection", so its
    compositions stay of order 2. Here the momentum equation of (7) (Ferraro, Iglesias-Ponte,
    Martín de Diego 2008, §4.1–§4.2: l_d'^R(W_k) = μ⁻_k, μ⁺_{k+1} = l_d'^L(W_k), the impulse of the
    step in the direction of A) has its impulse ℓ ∈ R^m split equally between the two nodes:

        l_d'^R(W_k) = μ_k − A(R_k)ᵀ ℓ
        μ_{k+1} = l_d'^L(W_k) − A(R_{k+1})ᵀ ℓ,   R_{k+1} = R_k W_k
        A(R_{k+1}) 𝕀⁻¹ μ_{k+1} = 0                         unknowns W_k = cay(w) (3), ℓ (m)

    **Self-adjoint.** For a symmetric l_d, l_d(Wᵀ, −h) = −l_d(W, h) (the Moser–Veselov and the
    Cayley l_d are), l_d'^R(Wᵀ, −h) = l_d'^L(W, h); stepping back from (R_{k+1}, μ_{k+1}) with −h
    gives W' = W_kᵀ and the same equations with ℓ → −ℓ. Hence order 2, and the symmetric
    compositions reach 4, 6 and 8 (:func:`~dalembert.methods.composition.compose`). As in
    :mod:`~dalembert.methods.gni_symmetric` (the vector-space D* form, our construction).

    **Energy** (ours). With the Moser–Veselov l_d, H(l_d'^R(W)) = H(l_d'^L(W)) for H(μ) = ½μᵀ𝕀⁻¹μ
    and any 𝕀 (the property behind the two-step form's Theorem 1 energy). On D* the cross terms of
    H(μ_k − A_kᵀℓ) and H(μ_{k+1} + A_{k+1}ᵀℓ) vanish (A_k𝕀⁻¹μ_k = 0 at each node), so
    H(μ_{k+1}) − H(μ_k) = H(A_kᵀℓ) − H(A_{k+1}ᵀℓ): zero when the covectors are constant (the
    Suslov case; measured 2e-14 over t = 100 at h = 0.2), O(h³) a step otherwise. The compositions
    keep it too. Unlike the two-step form, the one-step map has no period-2 (parasitic) mode to
    excite (docs/long_runs.md).

    Newton on u = (w, ℓ), 3 + m unknowns, from the last step's multiplier: ℓ₀ = −(h/2)λ,
    w₀ = h𝕀⁻¹(μ_k − A(R_k)ᵀℓ₀).

    Reported at the nodes: R (3, 3); omega = 𝕀⁻¹μ_k (A(R_k)ω_k = 0 to round-off); mu = μ_k;
    spatial_momentum = R_k μ_k; lam = −(2/h)ℓ of the step that ended at t_k (an O(h²)
    approximation of λ(t_k − h/2); at t_0 the exact λ(R_0, ω_0)).

    **Torques** (``force=``, a left-trivialised torque τ(R, ω, t[, u]); the forced discrete
    Lagrange–d'Alembert principle, Marsden–West 2001 §3.2, with left-trivialised discrete forces as
    in Lee, Leok & McClamroch 2005 and Kobilarov & Marsden 2011; trapezoidal, ours for this map):
    f_d⁻ = (h/2)τ(R_k, 𝕀⁻¹μ_k, t_k) is added to the first equation's right-hand side and
    f_d⁺ = (h/2)τ(R_{k+1}, 𝕀⁻¹μ_{k+1}, t_k + h) to the second's, μ_{k+1} then an unknown of Newton
    (3 + m + 3 unknowns). Stepping back with −h still returns (R_k, μ_k) (the discrete forces change
    sign with h and swap ends), so the map stays self-adjoint: order 2, its compositions 4 and 6.

    Build options: rtol, max_iter (Newton).
    """

    discrete_lagrangian: Any = None

    def build(self, system, x0=None, *, rtol: float = RTOL, max_iter: int = MAX_ITER) -> Scheme:
        system = _as_lie_system(system, self.name)
        parts = self.discrete_lagrangian.build(system.inertia)
        dR_cay, _, dL_cay = _cayley_coordinate_parts(parts)
        forced = getattr(system, "has_force", False)
        m = system.m

        def init(R0, omega0, h=None):
            R0 = jnp.asarray(R0, jnp.float64)
            omega0 = jnp.asarray(omega0, jnp.float64)
            return LieMultiplierState(R0, system.momentum(omega0), system.multiplier(R0, omega0))

        def step(state, h):
            R, mu, lam = state
            A0 = system.constraint_covectors(R)
            f_minus = 0.5 * h * system.force(R, system.velocity(mu)) if forced else 0.0

            def advance(w, ell, mu1=None):
                R1 = so3.matmul(R, so3.cayley(w))
                out = dL_cay(w, h) - linalg.vm(ell, system.constraint_covectors(R1))
                if mu1 is not None:        # + f_d⁺ at (R_{k+1}, ω_{k+1}, t_k + h)
                    out = out + 0.5 * h * system.force(R1, system.velocity(mu1), h)
                return R1, out

            def F(u):
                w, ell = u[:3], u[3:3 + m]
                mu1 = u[3 + m:] if forced else None
                R1, mu1_new = advance(w, ell, mu1)
                out = [dR_cay(w, h) - mu - f_minus + linalg.vm(ell, A0),
                       system.constraint_residual(R1, system.velocity(mu1_new))]
                if forced:
                    out.append(mu1 - mu1_new)
                return jnp.concatenate(out)

            ell0 = -0.5 * h * lam
            w0 = h * system.velocity(mu - linalg.vm(ell0, A0))
            u0 = jnp.concatenate([w0, ell0] + ([mu + 2.0 * f_minus] if forced else []))
            res = newton(F, u0, rtol=rtol, max_iter=max_iter)
            w, ell = res.x[:3], res.x[3:3 + m]
            R1, mu1 = advance(w, ell, res.x[3 + m:] if forced else None)
            return LieMultiplierState(R1, mu1, -(2.0 / h) * ell), StepInfo.of(res)

        def observe(state, h=None):
            R, mu, lam = state
            return {"R": R, "omega": system.velocity(mu), "mu": mu,
                    "spatial_momentum": linalg.mv(R, mu), "lam": lam}

        return Scheme(init, step, observe)


def _as_lie_system(system, name):
    """The LieNonholonomicSystem the method integrates: ``system`` itself, or (when ``build`` is
    called directly rather than through the engine, which applies registered views first) the
    registered view of an Euler–Poincaré–Suslov system."""
    from ..systems.kind import find_view
    view = find_view(system, ("lie-nonholonomic",))
    return system if view is None else view.system(system)


def lie_gni(discrete_lagrangian, name: str = "lie-gni-custom", order: int = 2) -> LieGNI:
    """A Lie-group GNI with a :class:`LieDiscreteLagrangian` (or a callable l_d(W, h), whose
    derivatives are then taken by autodiff), usable in ``dl.integrate``."""
    if not isinstance(discrete_lagrangian, LieDiscreteLagrangian):
        f = discrete_lagrangian
        discrete_lagrangian = LieDiscreteLagrangian(name, lambda inertia: {"l_d": f})
    return LieGNI(name=name, traits=_traits(order, f"{_PAPER}; l_d = {discrete_lagrangian.name}"),
                  discrete_lagrangian=discrete_lagrangian)


def constant_covectors(system) -> bool | None:
    """Whether the constraint covectors of a system are constant (the Suslov case), None when the
    system does not say."""
    return getattr(system, "constant_constraints", None)


def _unforced_constant_covectors(system) -> bool | None:
    """Whether the energy claim of the one-impulse map holds: constant covectors and no torque."""
    if getattr(system, "has_force", False):
        return False
    return constant_covectors(system)


def _traits(order, source, extra=()):
    return Traits(
        order=order, symmetric=True, implicit=True,
        preserves=(Claim(Invariant.NODE_CONSTRAINT, "node constraint A(R_k) ω_k = 0 (averaged momentum)"),
                   Claim(Invariant.GROUP_MEMBERSHIP, "R_k ∈ SO(3) to round-off"),
                   Claim(Invariant.ENERGY, "energy ½|μ⁻_k|² for a bi-invariant metric, any left-invariant l_d, "
                         "any D (Thm 1)", condition="bi-invariant metric, no torque", node_quantity=False))
        + tuple(extra),
        node_velocity="𝕀⁻¹μ̃_k, μ̃_k = ½(μ⁺_k + μ⁻_k) = P̂*μ⁺_k (the averaged body momentum)",
        source=source + "; torques by trapezoidal left-trivialised discrete forces", family="lie-gni",
        integrates=("lie-nonholonomic",), two_step=True, accepts=frozenset({Feature.FORCES, Feature.CONTROLS}))


METHODS = (
    LieGNI(name="lie-gni-mv",
           traits=_traits(2, f"{_PAPER}; Moser–Veselov l_d", extra=(
               Claim(Invariant.ENERGY, "energy ½|μ⁻_k|²_{𝕀⁻¹} for any inertia and any D (MV l_d; beyond the "
                     "paper, docs/theory/ferraro2008.md)", condition="no torque",
                     holds_for=lambda system: not getattr(system, "has_force", False), node_quantity=False),)),
           description="Reflection GNI on SO(3) with the Moser–Veselov discrete Lagrangian.",
           discrete_lagrangian=moser_veselov),
    LieGNI(name="lie-gni-cayley",
           traits=_traits(2, f"{_PAPER}; l_d = (1/2h) cay⁻¹(W)ᵀ𝕀 cay⁻¹(W)"),
           description="Reflection GNI on SO(3) with the Cayley discrete Lagrangian (energy exact only "
                       "for a bi-invariant metric).",
           discrete_lagrangian=cayley_lagrangian),
    SymmetricLieGNI(
        name="lie-gni-mv-sym",
        traits=Traits(
            order=2, symmetric=True, implicit=True,
            preserves=(Claim(Invariant.NODE_CONSTRAINT, "node constraint A(R_k) ω_k = 0 (ω_k = 𝕀⁻¹μ_k on D*)"),
                       Claim(Invariant.GROUP_MEMBERSHIP, "R_k ∈ SO(3) to round-off"),
                       Claim(Invariant.ENERGY, "energy ½ωᵀ𝕀ω for constant covectors A (the Suslov case), any "
                             "inertia (MV l_d; ours: see the class doc)",
                             condition="constant covectors A, no torque", holds_for=_unforced_constant_covectors)),
            node_velocity="𝕀⁻¹μ_k, μ_k on D* (the node's momentum)",
            source=f"{_PAPER}; (7) with one impulse per step split equally between the nodes (our "
                   "construction); Moser–Veselov l_d; torques by trapezoidal left-trivialised discrete forces",
            family="lie-gni-symmetric", integrates=("lie-nonholonomic",),
            accepts=frozenset({Feature.FORCES, Feature.CONTROLS})),
        description="Lie-group GNI (Moser–Veselov l_d) with one impulse per step: a self-adjoint map "
                    "on D*, the base of lie-gni-mv-4/-6.",
        discrete_lagrangian=moser_veselov),
    # the reduced GNI (:mod:`dalembert.methods.reduced_gni`) on a left trivialization: the
    # Lie-group GNI for constraints that depend on R, registered here by its name
    ReducedGNI(
        name="lie-gni",
        traits=_reduced_traits(f"{_FJMD2015}, Definition 6.1 on R²×SO(3) in left-trivialised coordinates "
                               "with a Cayley step (our construction, not in the paper)",
                               extra=(Claim(Invariant.REGULAR_CHART, "no chart singularity"),),
                               accepts=REDUCED_FEATURES - {Feature.RIGHT_TRIVIALISED}),
        description="Lie-group GNI for R-dependent constraints (left trivialization): recommended for the "
                    "sphere; second order, no chart singularity."),
)
