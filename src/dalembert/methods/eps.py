"""Integrators for the Euler–Poincaré–Suslov equations on SO(3) (Jiménez–Scheurle 2015), and on
any matrix Lie group of :mod:`dalembert.lie.groups` (``EulerPoincareSuslovSystem(..., group=G)``:
(𝕀ω) × ω becomes ad*_ω(𝕀ω), hat/Cayley/exp and dτ⁻¹ those of G, "3" below dim G; the Newton
Jacobians are then taken by autodiff).

Jiménez–Scheurle 2015 §4.1, §5.4 and §6 (docs/theory/jimenez-scheurle2015.md). All schemes act on
an :class:`~dalembert.systems.euler_poincare_suslov.EulerPoincareSuslovSystem` (𝕀 ω̇ = 𝕀ω×ω + Aᵀλ,
A ω = 0, Ṙ = R hat(ω)) and follow the DREPS algorithm (Def. 5.6):

1. ω_{k+1} (and a multiplier) from a discretisation of the EPS equations that keeps A ω = 0;
2. the group by a retraction τ (default Cayley), with ``reconstruction=``
   - ``"midpoint"`` (the default of ``dreps-euler``, ``dreps-rk4`` and ``eps-midpoint``; ours, *not
     in the paper*, docs/theory/jimenez-scheurle2015.md#midpoint-reconstruction):
     R_{k+1} = R_k τ(h (ω_k + ω_{k+1})/2), second order in R (measured on the Suslov problem at
     T = 5: R slopes 2.00 for dreps-rk4 and eps-midpoint, 0.94 for dreps-euler, whose ω is first order);
   - ``"left"``: R_{k+1} = R_k τ(h ω_k), the paper's left-endpoint reconstruction (Def. 5.6),
     globally first order in R (Thm 5.2(2), erratum E16, docs/theory/jimenez-scheurle2015.md#e16).
     The default of ``eps-variational``, whose group trajectory (58) it is (R slope 1.03).

Either way R_k ∈ SO(3) to round-off ((40), Prop 5.1) and A ω_k = 0 to round-off (Prop 5.1; Figs 1e,
2e).

Registered methods
------------------
``dreps-euler``, ``dreps-rk4`` ((54)–(55), Prop 6.1): an explicit one-step method Φ of order p (Euler,
classical RK4) for the projected ODE ω̇ = h(ω); ω_{k+1} = P Φ_h(ω_k) (P the 𝕀-orthogonal
projector onto ker A, which removes round-off drift only); multiplier λ_{k+1} = λ(ω_{k+1}), order
(p, p). Option ``multiplier="rk4-predictor"`` (our realisable form of Remark 6.1, erratum E18,
docs/theory/jimenez-scheurle2015.md#e18):
λ_{k+1} = λ(Ψ_h(ω_k)) with Ψ = RK4, multiplier order 4 while ω_{k+1} is unchanged.

``eps-midpoint`` (the paper's "(2,1) DREPS midpoint rule" of §6.2, Figs 1–2; order (2,2) by Prop 6.1,
erratum E4, docs/theory/jimenez-scheurle2015.md#e4):
implicit midpoint with ω̄ = (ω_k + ω_{k+1})/2,
    𝕀(ω_{k+1} − ω_k) = h (𝕀ω̄) × ω̄ + h Aᵀμ ,   A ω_{k+1} = 0,
solved by Newton for (ω_{k+1}, μ); λ_{k+1} = λ(ω_{k+1}) (option ``multiplier="discrete"``: μ,
which approximates λ(t_k + h/2)). It conserves E = ½ωᵀ𝕀ω exactly (to the Newton tolerance) for
any h: E_{k+1} − E_k = ω̄·𝕀Δω = h ω̄·(𝕀ω̄×ω̄) + h μ·Aω̄ = 0.

``eps-variational`` ((56)/(58), Prop 6.2): the discrete EPS equations on 𝔤 for
l̃_d = h l, φ̃_d = ⟨a, ·⟩ and a retraction τ, divided by h²:
    [(dτ⁻¹_{hω_{k+1}})ᵀ 𝕀ω_{k+1} − (dτ⁻¹_{−hω_k})ᵀ 𝕀ω_k] / h = Aᵀλ_{k+1} ,  A ω_{k+1} = 0.
Order 2 in ω (self-adjoint discrete Lagrangian). Multipliers (erratum E1,
docs/theory/jimenez-scheurle2015.md#e1):
``multiplier="consistent"`` (default): λ_{k+1} above — the (56) multiplier with the correct
(3,3) entry of dcay⁻¹; it approximates λ(t_k + h/2) to O(h²) (and λ(t_{k+1}) to O(h));
``multiplier="paper59"``: the paper's printed (59), λ⁽⁵⁹⁾ = λ_{k+1} − (AAᵀ)⁻¹A𝕀(ω_{k+1} − ω_k)/h,
which for a = e3 is ½[q(u_{k+1}) + q(u_k)]; it is inconsistent (error → n·ω̇ ≠ 0, Prop 6.2).
The node velocity ω_k is reported at t_k as in the paper (erratum E15,
docs/theory/jimenez-scheurle2015.md#e15: it is naturally the interval-average velocity ≈ ω(t_k + h/2)).

Torques (``EulerPoincareSuslovSystem(..., force=τ)``, a left-trivialised torque τ(R, ω, t[, u]);
the forced discrete Lagrange–d'Alembert principle, Marsden–West 2001 §3.2, with left-trivialised
discrete forces f_d^± as in Lee, Leok & McClamroch 2005 and Kobilarov & Marsden 2011; ours for
these schemes). The torque may depend on R, so ω and R are advanced together:

* ``dreps-euler``, ``dreps-rk4``: the Runge–Kutta method on (ψ, ω) with R = R_k τ(ψ),
  ψ̇ = (dτ^L_ψ)⁻¹ω, ω̇ = P𝕀⁻¹(ad*_ω(𝕀ω) + τ(R_k τ(ψ), ω, t)) from ψ = 0 (Runge–Kutta–Munthe-Kaas
  with the retraction τ; stage times t_k + c_i h), R_{k+1} = R_k τ(ψ_{k+1}), ω_{k+1} projected as
  above: order p in R and ω (the ``reconstruction`` option does not apply);
* ``eps-midpoint`` (and its compositions): the trapezoidal discrete forces f_d⁻ = (h/2)τ(R_k, ω_k, t_k),
  f_d⁺ = (h/2)τ(R_{k+1}, ω_{k+1}, t_k + h) added to the momentum equation,
  𝕀(ω_{k+1} − ω_k) = h ad*_ω̄(𝕀ω̄) + f_d⁻ + f_d⁺ + hAᵀμ, R_{k+1} = R_k τ(hω̄): the step with −h from
  (R_{k+1}, ω_{k+1}) returns (R_k, ω_k), so it stays self-adjoint (order 2; its compositions 4
  and 6). Newton's Jacobian is then taken by autodiff. The energy balance of the step is
  E_{k+1} − E_k = ω̄·(f_d⁻ + f_d⁺).

The multiplier reported is λ(R_{k+1}, ω_{k+1}) with the torque at t_{k+1} (for ``dreps-*`` with
either ``multiplier`` option; ``eps-midpoint`` with ``multiplier="discrete"`` reports μ).
``eps-variational`` does not take a torque (it refuses it before tracing).

Cross-check (Thm 4.3 / Cor 4.4): :func:`group_deps_residual` evaluates the group-level
discrete EPS equations (29) for l_d(W) = h l(cay⁻¹(W)/h) by autodiff.

Reported at the nodes (``observe``): R (3, 3), omega (3,) and lam (m,) — the continuous-convention
multiplier of the step that ended at t_k (λ(ω_0) at k = 0).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .. import clock, linalg
from ..declarations import Claim, Feature, Invariant
from ..errors import InputError
from ..lie import get_retraction, so3
from ..solvers.newton import MAX_ITER, RTOL, newton
from .base import Method, Scheme, StepInfo, Traits, explicit_info

_PAPER = ("Jiménez & Scheurle, On the discretization of the Euler–Poincaré–Suslov equations in "
          "SO(3) (2015)")


class EPSState(NamedTuple):
    """R: (3, 3) R_k;  omega: (3,) ω_k;  lam: (m,) multiplier reported at t_k."""

    R: Any
    omega: Any
    lam: Any


def is_quadratic(system):
    """True if the system's reduced Lagrangian is ½ωᵀ𝕀ω (always, except for a non-quadratic
    :class:`~dalembert.systems.euler_poincare_suslov.LeftInvariantSystem`)."""
    return getattr(system, "quadratic", True)


def _retraction(system, retraction):
    """The retraction of the system's group: SO(3)'s closed forms (a name or a Retraction), or
    another group's Cayley / exponential map (a name)."""
    if getattr(system, "is_so3", True):
        return get_retraction(retraction)
    if not isinstance(retraction, str):
        raise InputError(f"{system.name} is on {system.group.name}: retraction must be 'cayley' or "
                         f"'exponential'; got {retraction!r}")
    from .reduced_gni import group_retraction
    return group_retraction(system.group, retraction)


def _reconstruct(tau, reconstruction, system=None):
    mm = so3.matmul if getattr(system, "is_so3", True) else jnp.matmul
    if reconstruction == "left":
        return lambda R, w0, w1, h: mm(R, tau.tau(h * w0))
    if reconstruction == "midpoint":
        return lambda R, w0, w1, h: mm(R, tau.tau(0.5 * h * (w0 + w1)))
    raise InputError(f"reconstruction must be 'left' (the paper's, Def. 5.6) or 'midpoint' "
                     f"(ours, not in the paper); got {reconstruction!r}")


def _observe(state, h):
    return {"R": state.R, "omega": state.omega, "lam": state.lam}


def rk4_step(f, w, h):
    """One classical RK4 step for ẇ = f(w)."""
    k1 = f(w)
    k2 = f(w + 0.5 * h * k1)
    k3 = f(w + 0.5 * h * k2)
    k4 = f(w + h * k3)
    return w + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def euler_step(f, w, h):
    """One explicit Euler step for ẇ = f(w)."""
    return w + h * f(w)


# ---------------------------------------------------------------------------------------------
# explicit DREPS ((54)–(55), Prop 6.1)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class DREPS(Method):
    """Explicit DREPS ((54)–(55)): ω_{k+1} = P Φ_h(ω_k), λ_{k+1} = λ(ω_{k+1}) (see module doc).

    ``one_step``: "euler" or "rk4".  Build options: retraction ("cayley" | "exponential" |
    a Retraction), reconstruction ("left" | "midpoint"), multiplier ("node" | "rk4-predictor").
    """

    one_step: str = "euler"

    def build(self, system, x0=None, *, retraction="cayley", reconstruction="midpoint",
              multiplier="node") -> Scheme:
        tau = _retraction(system, retraction)
        recon = _reconstruct(tau, reconstruction, system)
        phi = {"euler": euler_step, "rk4": rk4_step}[self.one_step]
        if multiplier not in ("node", "rk4-predictor"):
            raise InputError(f"multiplier must be 'node' or 'rk4-predictor'; got {multiplier!r}")
        f = system.omega_dot
        forced = getattr(system, "has_force", False)

        def init(R0, omega0, h):
            R0 = jnp.asarray(R0, jnp.float64)
            omega0 = jnp.asarray(omega0, jnp.float64)
            return EPSState(R0, omega0, system.multiplier_at(R0, omega0) if forced else system.multiplier(omega0))

        def forced_step(state, h):
            """RKMK on (ψ, ω) (module doc, "Torques")."""
            R = state.R
            mm = so3.matmul if getattr(system, "is_so3", True) else jnp.matmul

            def rhs(y, c):
                psi, w = y
                with clock.shifted(c * h):
                    return (linalg.mv(tau.dtau_left_inv(psi), w), system.omega_dot_at(mm(R, tau.tau(psi)), w))

            def add(y, a, k):
                return (y[0] + a * k[0], y[1] + a * k[1])
            y0 = (jnp.zeros_like(state.omega), state.omega)
            k1 = rhs(y0, 0.0)
            if self.one_step == "euler":
                psi, w = add(y0, h, k1)
            else:
                k2 = rhs(add(y0, 0.5 * h, k1), 0.5)
                k3 = rhs(add(y0, 0.5 * h, k2), 0.5)
                k4 = rhs(add(y0, h, k3), 1.0)
                psi, w = y0[0], y0[1]
                for a, k in ((1.0, k1), (2.0, k2), (2.0, k3), (1.0, k4)):
                    psi, w = psi + (h * a / 6.0) * k[0], w + (h * a / 6.0) * k[1]
            w1, R1 = system.project(w), mm(R, tau.tau(psi))
            with clock.shifted(h):
                lam = system.multiplier_at(R1, w1)
            return EPSState(R1, w1, lam), explicit_info()

        def step(state, h):
            if forced:
                return forced_step(state, h)
            w1 = system.project(phi(f, state.omega, h))
            if multiplier == "node":
                lam = system.multiplier(w1)
            else:
                lam = system.multiplier(rk4_step(f, state.omega, h))
            R1 = recon(state.R, state.omega, w1, h)
            return EPSState(R1, w1, lam), explicit_info()

        return Scheme(init, step, _observe)


# ---------------------------------------------------------------------------------------------
# implicit midpoint (the paper's "DREPS midpoint rule", §6.2)
# ---------------------------------------------------------------------------------------------
def _solve_newton(F, J, x0, rtol, max_iter):
    res = newton(F, x0, jacobian=J, rtol=rtol, max_iter=max_iter)
    return res.x, StepInfo(res.converged, res.iterations)


def _block(J11, A):
    """[[J11 (d, d), −Aᵀ], [A, 0]] as a (d+m, d+m) matrix (unknowns (ω_{k+1}, hμ))."""
    m = A.shape[0]
    top = jnp.concatenate([J11, -A.T], axis=1)
    bottom = jnp.concatenate([A, jnp.zeros((m, m))], axis=1)
    return jnp.concatenate([top, bottom], axis=0)


@dataclass(frozen=True, eq=False)
class EPSMidpoint(Method):
    """Implicit midpoint rule for the EPS equations (§6.2); exact energy (see module doc).

    Build options: retraction, reconstruction ("left" | "midpoint"), multiplier ("node" |
    "discrete"), rtol, max_iter (Newton).
    """

    def build(self, system, x0=None, *, retraction="cayley", reconstruction="midpoint",
              multiplier="node", rtol=RTOL, max_iter=MAX_ITER) -> Scheme:
        tau = _retraction(system, retraction)
        recon = _reconstruct(tau, reconstruction, system)
        if multiplier not in ("node", "discrete"):
            raise InputError(f"multiplier must be 'node' or 'discrete'; got {multiplier!r}")
        I, A = system._I, system._A
        d = A.shape[1]
        forced = getattr(system, "has_force", False)
        so3_jacobian = getattr(system, "is_so3", True) and not forced

        def init(R0, omega0, h):
            R0 = jnp.asarray(R0, jnp.float64)
            omega0 = jnp.asarray(omega0, jnp.float64)
            return EPSState(R0, omega0, system.multiplier_at(R0, omega0) if forced else system.multiplier(omega0))

        def step(state, h):
            w0 = state.omega
            Iw0 = system.momentum(w0)
            if forced:      # f_d⁻ + f_d⁺ (module doc, "Torques")
                f_minus = 0.5 * h * system.force(state.R, w0)

                def discrete_force(w1):
                    return f_minus + 0.5 * h * system.force(recon(state.R, w0, w1, h), w1, h)
            else:
                def discrete_force(w1):
                    return 0.0

            # unknowns (ω_{k+1}, hμ): the multiplier scaled by h keeps the Newton test meaningful;
            # ad*_ω̄(𝕀ω̄) (= (𝕀ω̄) × ω̄ on SO(3)) is the system's euler_term
            def F(x):
                w1, hmu = x[:d], x[d:]
                r1 = (system.momentum(w1) - Iw0 - h * system.euler_term(0.5 * (w0 + w1)) - linalg.vm(hmu, A)
                      - discrete_force(w1))
                return jnp.concatenate([r1, linalg.mv(A, w1)])

            def Jac(x):
                wb = 0.5 * (w0 + x[:3])
                J11 = I - 0.5 * h * (so3.hat(so3.matvec(I, wb)) - so3.matmul(so3.hat(wb), I))
                return _block(J11, A)

            if forced:
                guess = jnp.concatenate([w0 + h * system.omega_dot_at(state.R, w0),
                                         h * system.multiplier_at(state.R, w0)])
            else:
                guess = jnp.concatenate([w0 + h * system.omega_dot(w0), h * system.multiplier(w0)])
            x, info = _solve_newton(F, Jac if so3_jacobian else None, guess, rtol, max_iter)
            w1 = x[:d]
            R1 = recon(state.R, w0, w1, h)
            if multiplier != "node":
                lam = x[d:] / h
            elif forced:
                with clock.shifted(h):
                    lam = system.multiplier_at(R1, w1)
            else:
                lam = system.multiplier(w1)
            return EPSState(R1, w1, lam), info

        return Scheme(init, step, _observe)


# ---------------------------------------------------------------------------------------------
# variational integrator (discrete EPS on the algebra through a retraction; (56), (58))
# ---------------------------------------------------------------------------------------------
def dual_momentum(tau, I, w, h):
    """(dτ⁻¹_{h w})ᵀ 𝕀 w, shape (d,) — the discrete momentum of (56) divided by h."""
    Iw = so3.matvec(I, w) if w.shape == (3,) else linalg.mv(I, w)
    return linalg.vm(Iw, tau.dtau_inv(h * w))


@dataclass(frozen=True, eq=False)
class EPSVariational(Method):
    """Discrete EPS on so(3) through a retraction ((56)/(58)); see module doc.

    Build options: retraction, reconstruction ("left" | "midpoint"), multiplier ("consistent" |
    "paper59"), rtol, max_iter.
    """

    def build(self, system, x0=None, *, retraction="cayley", reconstruction="left",
              multiplier="consistent", rtol=RTOL, max_iter=MAX_ITER) -> Scheme:
        tau = _retraction(system, retraction)
        recon = _reconstruct(tau, reconstruction, system)
        if multiplier not in ("consistent", "paper59"):
            raise InputError(f"multiplier must be 'consistent' or 'paper59'; got {multiplier!r}")
        I, A = system._I, system._A
        d = A.shape[1]
        AAt = A @ A.T
        quadratic = is_quadratic(system)
        analytic = (tau.name == "cayley" and system.symmetric and quadratic
                    and getattr(system, "is_so3", True))
        if quadratic:
            dual = lambda w, h: dual_momentum(tau, I, w, h)                     # noqa: E731
            prev = lambda w, h: -dual_momentum(tau, I, -w, h)                   # noqa: E731
            dmom = lambda w1, w0: system.momentum(w1 - w0)                      # noqa: E731
        else:   # (56) with ∇l: (dτ⁻¹_{±hω})ᵀ ∂l/∂ω(ω)
            dual = lambda w, h: linalg.vm(system.momentum(w), tau.dtau_inv(h * w))    # noqa: E731
            prev = lambda w, h: linalg.vm(system.momentum(w), tau.dtau_inv(-h * w))   # noqa: E731
            dmom = lambda w1, w0: system.momentum(w1) - system.momentum(w0)         # noqa: E731

        def init(R0, omega0, h):
            R0 = jnp.asarray(R0, jnp.float64)
            omega0 = jnp.asarray(omega0, jnp.float64)
            return EPSState(R0, omega0, system.multiplier(omega0))

        def step(state, h):
            w0 = state.omega
            rhs = prev(w0, h)   # (dτ⁻¹_{−h ω_k})ᵀ ∂l/∂ω(ω_k)

            # unknowns (ω_{k+1}, hλ_{k+1})
            def F(x):
                w1, hlam = x[:d], x[d:]
                r1 = dual(w1, h) - rhs - linalg.vm(hlam, A)
                return jnp.concatenate([r1, linalg.mv(A, w1)])

            if analytic:
                def Jac(x):
                    v = x[:3]
                    Iv = so3.matvec(I, v)
                    J11 = (so3.matmul(so3.dcay_inv(-h * v), I) - 0.5 * h * so3.hat(Iv)
                           + 0.25 * h * h * (so3.outer(v, Iv) + jnp.sum(v * Iv) * jnp.eye(3)))
                    return _block(J11, A)
            else:
                Jac = None
            guess = jnp.concatenate([w0 + h * system.omega_dot(w0), h * system.multiplier(w0)])
            x, info = _solve_newton(F, Jac, guess, rtol, max_iter)
            w1, lam = x[:d], x[d:] / h
            if multiplier == "paper59":
                lam = lam - linalg.solve(AAt, linalg.mv(A, dmom(w1, w0))) / h
            return EPSState(recon(state.R, w0, w1, h), w1, lam), info

        return Scheme(init, step, _observe)


def group_deps_residual(system, W0, W1, h):
    """Group-level discrete EPS residual (29a) for l_d(W) = h·l(cay⁻¹(W)/h)  (Thm 4.3).

    −r*_{W1} l_d'(W1) + ℓ*_{W0} l_d'(W0), with r*_W l_d'(W) ↔ 2 vee(skew(∇l_d(W) Wᵀ)) and
    ℓ*_W l_d'(W) ↔ 2 vee(skew(Wᵀ ∇l_d(W))) (our matrix form of the paper's §4,
    docs/theory/jimenez-scheurle2015.md), ∇l_d the Euclidean gradient of the rational extension of cay⁻¹
    (autodiff). For displacements W_k = cay(h ω_k) of the ``eps-variational`` scheme (Cayley) it equals −h λ_{k+1}·A (λ_(29) = −λ_(56)/h, Cor 4.4).

    W0, W1: (3, 3); h: step. Returns (3,).
    """
    I = system._I

    def ld(W):
        w = so3.cayley_inv(W) / h
        return h * 0.5 * jnp.sum(w * so3.matvec(I, w))

    def skew2(X):
        return so3.vee(X - so3.transpose(X))   # 2 vee(skew X)

    G0, G1 = jax.grad(ld)(W0), jax.grad(ld)(W1)
    return -skew2(so3.matmul(G1, so3.transpose(W1))) + skew2(so3.matmul(so3.transpose(W0), G0))


#: every feature of an EulerPoincareSuslovSystem but a torque: any matrix Lie group, any l, any inertia
EPS_FEATURES = frozenset({Feature.GROUP_NOT_SO3, Feature.NON_QUADRATIC_LAGRANGIAN, Feature.NON_SYMMETRIC_INERTIA})
#: a left-trivialised torque, with or without controls (module doc, "Torques")
TORQUES = frozenset({Feature.FORCES, Feature.CONTROLS})


def eps_traits(order, symmetric, implicit, preserves, node_velocity, source, accepts=EPS_FEATURES):
    return Traits(order=order, symmetric=symmetric, implicit=implicit, preserves=preserves,
                  node_velocity=node_velocity, source=source, family="eps",
                  integrates=("euler-poincare-suslov",), accepts=accepts)


_GROUP = (Claim(Invariant.GROUP_MEMBERSHIP, "R_k ∈ SO(3) (Cayley/exp reconstruction, (40))"),
          Claim(Invariant.NODE_CONSTRAINT, "A ω_k = 0 (reduced constraint)"))


def _unforced(system) -> bool:
    """Whether a claim of the unforced equations (exact energy) holds: no torque."""
    return not getattr(system, "has_force", False)


_NODE = "ω_k at t_k (A ω_k = 0 to round-off); R_k from the reconstruction; lam: see module doc"
_RECON = (" Traits (order, symmetric) describe the ω map. R: second order with the default "
          "reconstruction='midpoint' (ours, not in the paper; first order for dreps-euler, whose ω is), "
          "first order with the paper's left-endpoint reconstruction='left' (Thm 5.2(2)).")
_RECON_VI = (" Traits (order, symmetric) describe the ω map. R: the variational group trajectory (58), "
             "R_{k+1} = R_k τ(h ω_k) (reconstruction='left', the default here), is first order in R "
             "(Thm 5.2(2)); reconstruction='midpoint' (ours) is second order but not the VI's.")

dreps_euler = DREPS(
    name="dreps-euler",
    traits=eps_traits(1, False, False, _GROUP, _NODE,
                      f"{_PAPER}, Def. 5.6 and (54)–(55) with explicit Euler (Prop 6.1)",
                      accepts=EPS_FEATURES | TORQUES),
    description="DREPS with explicit Euler on the projected EPS ODE, λ_{k+1} = λ(ω_{k+1}), Cayley "
                "reconstruction." + _RECON,
    one_step="euler")

dreps_rk4 = DREPS(
    name="dreps-rk4",
    traits=eps_traits(4, False, False, _GROUP, _NODE,
                      f"{_PAPER}, Def. 5.6 and (54)–(55) with classical RK4 (Prop 6.1; the "
                      "paper's reference solver)", accepts=EPS_FEATURES | TORQUES),
    description="DREPS with RK4 on the projected EPS ODE (the paper's reference solver), "
                "λ_{k+1} = λ(ω_{k+1}); option multiplier='rk4-predictor'." + _RECON,
    one_step="rk4")

eps_midpoint = EPSMidpoint(
    name="eps-midpoint",
    traits=eps_traits(2, True, True, _GROUP + (Claim(Invariant.ENERGY, "energy ½ωᵀ𝕀ω (to the Newton tolerance)",
                                                         condition="no torque", holds_for=_unforced),), _NODE,
                      f"{_PAPER}, §6.2 'DREPS midpoint rule', Figs 1–2; order (2,2) "
                      "(erratum E4)", accepts=(EPS_FEATURES - {Feature.NON_QUADRATIC_LAGRANGIAN}) | TORQUES),
    description="Implicit midpoint rule for the EPS equations: exact energy, λ_{k+1} = λ(ω_{k+1})."
                + _RECON)

eps_variational = EPSVariational(
    name="eps-variational",
    traits=eps_traits(2, True, True, _GROUP + (Claim(Invariant.DISCRETE_CONSTRAINT, "discrete constraint: W_k = τ(hω_k) ∈ 𝒮 (Prop 5.2)"),),
                      _NODE + " (ω_k ≈ interval-average velocity, erratum E15)",
                      f"{_PAPER}, (56), (58); multiplier (59) ('paper59') or corrected (erratum E1, "
                      f"'consistent', default); Prop 6.2"),
    description="Variational discrete EPS integrator (l̃_d = h l, Cayley retraction)." + _RECON_VI)

METHODS = (dreps_euler, dreps_rk4, eps_midpoint, eps_variational)
