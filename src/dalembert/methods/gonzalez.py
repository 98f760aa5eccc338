"""Gonzalez discrete-gradient methods in canonical coordinates: GONZALEZ-F and GONZALEZ-R.

Source: Celledoni, Farré Puiggalí, Høiseth, Martín de Diego 2019, §3.3, (15), Algorithm 1,
Remarks 3.4–3.5. Both take a
:class:`~dalembert.NonholonomicSystem` with linear constraints and keep the state (q_k, p_k),
p = G v.

* ``gonzalez-f`` (15): the full-space Gonzalez DG of H(q, p) = ½pᵀG⁻¹p + V with multipliers.
  Unknowns (q', p', λ) ∈ R^{2n+r}:
  (z' − z)/h = J ∇̄H(z, z') + (0; μ(q̄)ᵀλ),  μ(q̄) ∇̄_pH(z, z') = 0,  q̄ = (q + q')/2 (the paper leaves q̄
  undefined: erratum E7, docs/theory/celledoni2019.md#e7).
  Energy-exact and second order, but the constraint μ(q)G⁻¹p = 0 is **not** kept: it drifts
  (this is what the paper's Figure 4 shows). Reported: q_k, p_k, v_k = G⁻¹p_k. With configuration
  constraints φ(q) = 0 their impulse acts along Φ̄(q, q'), the Gonzalez discrete gradient of φ,
  and φ(q') = 0 is imposed at the node (Gonzalez, Physica D 132, 1999; Betsch, Comput. Methods
  Appl. Mech. Engrg. 195, 2006, for mixed constraints): H(z') − H(z) = Λ·(φ(q') − φ(q)) = 0, so
  the energy stays exact and φ holds at every node; Φ(q)v and μ(q)v hold at the midpoint, O(h²)
  at the nodes.
* ``gonzalez-r`` (§3.3, Algorithm 1): the reduced Gonzalez method (14) on the almost-Poisson form, run from
  canonical data only. Each step takes the Householder basis X of ker μ with the standard signs at
  q_k (frozen for the step), ρ = Xᵀp (16b), solves ζ' = ζ + hΠ(ζ̄)∇̄₂𝓗(ζ, ζ') with B from (17),
  and maps back p' = G(q')X(q')g_D(q')⁻¹ρ' (16a). Energy-exact, endpoint constraint exact,
  discrete constraint μ(q̄)(q' − q) = 0, order 2. Build option ``basis_derivative="fd"``: the
  Remark 3.5 variant, ∂X/∂q^i ≈ [X(q̄ + h e_i) − X(q̄ − h e_i)]/(2h) in B (17) and in the base
  vector (18a) of the Gonzalez DG (order 2, energy and constraints still exact).
  Reported: q_k, p_k, v_k = G⁻¹p_k (which satisfies the constraint).

Both solve their step by simplified Newton (the Jacobian at the predictor, factored once per step;
:func:`~dalembert.solvers.newton.newton`), as the DG methods do: the Jacobian of these residuals
(through the Householder basis for gonzalez-r) dominates the cost of a step. gonzalez-f forms it in
forward mode (reverse with ``autodiff="rev"``) from a predictor on the constraints (the explicit
Euler step with its momentum projected onto them); timings in docs/benchmarks.md ("The IFToMM
uncontrolled bicycle").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .. import linalg
from ..declarations import Claim, Feature, Invariant
from ..errors import InputError
from ..solvers.newton import MAX_ITER, RTOL, newton, newton_kept
from ..solvers import newton_module as newton_mod
from ..systems.almost_poisson import DEGENERACY_TOL
from ..systems.reduction import HouseholderFrame, reduced_form
from .base import (Method, MomentumState, Scheme, StepInfo, Traits, holonomic_claim, momentum_init,
                   momentum_observe)
from .discrete_constraints import midpoint_constraint
from .discrete_gradients import gonzalez

_SOURCE = "Celledoni, Farré Puiggalí, Høiseth, Martín de Diego 2019"


@dataclass(frozen=True, eq=False)
class GonzalezF(Method):
    """GONZALEZ-F, scheme (15) (see module doc). Build options: rtol, max_iter (Newton),
    ``node_projection`` (default False, the paper's scheme): after each step, p_{k+1} is projected
    G-orthogonally onto the node constraints (Φ; μ)(q_{k+1}) G⁻¹p = 0 and rescaled to its kinetic
    energy before the projection, so that both kinds of constraint hold at the node as well as
    the energy (Hairer–Lubich–Wanner, Geometric Numerical Integration, §IV.4, projection onto
    several invariants; the rescaling keeps linear constraints); ``autodiff`` "fwd" (default) or
    "rev", the mode of the Newton matrix's autodiff (the same iterates to round-off; forward was
    faster on every model measured: the bicycle 2×, the sleigh and the tilting disk 1.4–1.6×);
    ``jacobian_reuse`` (default 0, off): an int k ≥ 1 keeps the Newton matrix across steps — the
    matrix of an earlier step (same h) is tried first, for at most k simplified-Newton iterations,
    and formed afresh at the predictor when they do not converge (the state then carries the
    matrix, :class:`GonzalezFState`); ``newton_estimate`` (default False): the Newton test on the
    estimated error θ/(1 − θ)|Δu| of the iterate (:func:`~dalembert.solvers.newton.newton`,
    ``estimate``), which stops one or two iterations earlier. Both: Hairer–Wanner, Solving ODEs
    II, §IV.8; the same roots to the Newton tolerance, so the energy stays at round-off (on the
    IFToMM bicycle, 20 s of M2: the step's CPU time 2–4× less, docs/benchmarks.md).
    Order 2, not self-adjoint."""

    def build(self, system, q0, *, rtol: float = RTOL, max_iter: int = MAX_ITER,
              node_projection: bool = False, autodiff: str = "fwd", jacobian_reuse: int = 0,
              newton_estimate: bool = False) -> Scheme:
        if autodiff not in ("fwd", "rev"):
            raise InputError(f"autodiff must be 'fwd' or 'rev'; got {autodiff!r}")
        if not (isinstance(jacobian_reuse, int) and 0 <= jacobian_reuse <= max_iter):
            raise InputError(f"jacobian_reuse must be an int from 0 (off) to max_iter = {max_iter}; "
                             f"got {jacobian_reuse!r}")
        jac = jax.jacfwd if autodiff == "fwd" else jax.jacrev
        n = jnp.asarray(q0).shape[0]

        def H(z):
            return system.hamiltonian(z[:n], z[n:])

        grad = jax.grad(H)
        dg = gonzalez(H)
        # configuration constraints φ(q) = 0 (k rows, first in constraint_matrix): their impulse acts
        # along Φ̄(q, q'), the Gonzalez discrete gradient of each φ_i, and φ(q') = 0 is imposed, so
        # that H' − H = Λ·(φ(q') − φ(q)) = 0 (Gonzalez, Physica D 132 (1999); Betsch, CMAME 195 (2006))
        k = int(system.holonomic(jnp.asarray(q0)).shape[0])
        phi_dgs = [gonzalez(lambda q, i=i: system.holonomic(q)[i]) for i in range(k)]

        def step(state, h):
            z = jnp.concatenate([state.q, state.p])
            r = system.constraint_matrix(state.q).shape[0]

            def F_scaled(u):   # u = (q', p', hλ): the impulse hλ keeps the unknowns' round-off O(ε)
                zp, lam_h = u[:2 * n], u[2 * n:]
                mu = system.constraint_matrix(0.5 * (state.q + zp[:n]))
                g = dg(z, zp)
                gq, gp = g[:n], g[n:]
                if k:
                    mu = jnp.concatenate([jnp.stack([d(state.q, zp[:n]) for d in phi_dgs]), mu[k:]])
                    cons = jnp.concatenate([system.holonomic(zp[:n]), linalg.mv(mu[k:], gp)])
                else:
                    cons = linalg.mv(mu, gp)
                res = jnp.concatenate([zp[:n] - state.q - h * gp,
                                       zp[n:] - state.p + h * gq - linalg.vm(lam_h, mu), cons])
                # the size of each unknown's terms, for the round-off floor of the Newton test
                sq = jnp.maximum(jnp.maximum(jnp.abs(zp[:n]), jnp.abs(state.q)), h * jnp.abs(gp))
                sp = jnp.maximum(jnp.maximum(jnp.abs(zp[n:]), jnp.abs(state.p)), h * jnp.abs(gq))
                return res, jnp.concatenate([sq, sp, jnp.full(r, jnp.max(sp))])

            def F(u):
                return F_scaled(u)[0]

            g0 = grad(z)
            u0 = _predictor(system, state.q + h * g0[n:], state.p - h * g0[:n], r)
            # the Gonzalez quotients' round-off grows like ε|H|/|Δz|: with configuration
            # constraints a componentwise test
            kw = dict(rtol=rtol, estimate=newton_estimate, **({"has_scale": True} if k else {}))
            Fn = F_scaled if k else F
            if not jacobian_reuse:
                res = newton(Fn, u0, jacobian=jac(F), max_iter=max_iter, simplified=True, **kw)
            else:
                res, J = newton_kept(Fn, jac(F), u0, state.J, state.keep & (state.h == h), jacobian_reuse,
                                     max_iter=max_iter, **kw)
            q1, p1 = res.x[:n], res.x[n:2 * n]
            if node_projection:
                p1 = _energy_preserving_projection(system, q1, p1)
            if jacobian_reuse:
                return (GonzalezFState(q1, p1, J, jnp.asarray(h, J.dtype), res.converged),
                        StepInfo.of(res))
            return MomentumState(q1, p1), StepInfo.of(res)

        init = momentum_init(system)
        if jacobian_reuse:
            d = 2 * n + int(system.constraint_matrix(jnp.asarray(q0)).shape[0])
            base_init = init

            def init(q0_, v0_, h=None):
                s0 = base_init(q0_, v0_, h)
                return GonzalezFState(s0.q, s0.p, jnp.zeros((d, d), s0.p.dtype),
                                      jnp.zeros((), s0.p.dtype), jnp.array(False))
        return Scheme(init, step, momentum_observe(system.factor_metric))


class GonzalezFState(NamedTuple):
    """The state of ``gonzalez-f`` with ``jacobian_reuse``: q, p (n,) as :class:`MomentumState`;
    J (2n + r, 2n + r) the Newton matrix of the last step at which one was formed, h the step
    size it was formed with, keep (bool) whether it may be tried on the next step (False at the
    start and after a step that did not converge)."""

    q: Any
    p: Any
    J: Any
    h: Any
    keep: Any


def _predictor(system, q1, p1, r):
    """The Newton guess (q', p', hλ) (2n + r,) from the explicit Euler step (q1, p1): p1 projected
    G-orthogonally onto the velocity constraints at q1, (Φ; μ)(q1) G⁻¹p = 0, p1 + Mᵀs, and hλ = s,
    the impulse that does it. Without it (hλ = 0 and the unconstrained Euler momentum) the guess is
    O(h) from the root in p and hλ, with it O(h²): on the Whipple bicycle (h = 0.04) 8–9 simplified
    Newton iterations per step become 5 (docs/benchmarks.md, "The IFToMM uncontrolled bicycle")."""
    if r == 0:
        return jnp.concatenate([q1, p1])
    f = system.factor_metric(q1)
    M = system.constraint_matrix(q1)
    s = -linalg.solve_spd(linalg.mm(M, f.solve(M.T)), linalg.mv(M, f.solve(p1)))
    return jnp.concatenate([q1, p1 + linalg.vm(s, M), s])


def _energy_preserving_projection(system, q, p):
    """p projected G-orthogonally onto M(q) G⁻¹ p = 0 (M = constraint_matrix, linear constraints)
    and rescaled to the kinetic energy it had: T(q, p_new) = T(q, p), M G⁻¹ p_new = 0. Shape (n,)."""
    f = system.factor_metric(q)
    M = system.constraint_matrix(q)
    s = linalg.solve_spd(linalg.mm(M, f.solve(M.T)), linalg.mv(M, f.solve(p)))
    pp = p - linalg.vm(s, M)
    t0, t1 = jnp.sum(p * f.solve(p)), jnp.sum(pp * f.solve(pp))
    return pp * jnp.sqrt(jnp.where(t1 > 0, t0 / jnp.where(t1 > 0, t1, 1.0), 1.0))


def _grad_18(system, f, n, dbasis):
    """∇𝓗(ζ) from (18a, b) with a given ∂X (Celledoni et al. 2019 §3.3):
    ∂𝓗/∂q_i = −½ vᵀ(∂_iG)v − pᵀ(∂_iX)y + ∂_iV, ∂𝓗/∂ρ = y, where y = g_D⁻¹ρ, v = Xy, p = Gv."""
    def grad(x):
        q, rho = x[:n], x[n:]
        X = f.basis(q)
        y = linalg.solve_spd(f.reduced_metric(q), rho)
        v = linalg.mv(X, y)
        p = system.momentum(q, v)
        dG = jax.jacfwd(system.mass_matrix)(q)                   # (n, n, n): ∂G_jk/∂q_i at [j, k, i]
        t1 = -0.5 * jnp.sum(dG * v[:, None, None] * v[None, :, None], axis=(0, 1))
        t2 = jnp.sum(dbasis(q) * p[:, None, None] * y[None, :, None], axis=(0, 1))
        return jnp.concatenate([t1 - t2 + system.grad_potential(q), y])
    return grad


@dataclass(frozen=True, eq=False)
class GonzalezR(Method):
    """GONZALEZ-R (see module doc). Build options: ``basis_derivative`` "autodiff" (default) or
    "fd" (Remark 3.5, increment h); rtol, max_iter (Newton)."""

    def build(self, system, q0, *, basis_derivative: str = "autodiff", rtol: float = RTOL,
              max_iter: int = MAX_ITER) -> Scheme:
        if basis_derivative not in ("autodiff", "fd"):
            raise InputError(f"basis_derivative must be 'autodiff' or 'fd'; got {basis_derivative!r}")
        n = jnp.asarray(q0).shape[0]

        frame = HouseholderFrame(system.constraint_matrix)

        def step(state, h):
            q, p = state
            signs = frame.anchor_at(q)                                    # standard signs at q_k
            if basis_derivative == "fd":
                eye = jnp.eye(n)

                def dbasis(x):
                    cols = [(frame.basis(x + h * eye[i], signs) - frame.basis(x - h * eye[i], signs))
                            / (2.0 * h) for i in range(n)]
                    return jnp.stack(cols, axis=-1)
                f = reduced_form(system, n, frame, signs,
                                 bracket=lambda y, X, p_: frame.bracket(y, signs, X, p_, dbasis))
                dg = gonzalez(f.hamiltonian, grad=_grad_18(system, f, n, dbasis))
            else:
                f = reduced_form(system, n, frame, signs)
                dg = gonzalez(f.hamiltonian)
            x = jnp.concatenate([q, linalg.vm(p, f.basis(q))])             # (16b)

            def F(y):
                return y - x - h * linalg.mv(f.poisson_matrix(0.5 * (x + y)), dg(x, y))

            y0 = x + h * linalg.mv(f.poisson_matrix(x), jax.grad(f.hamiltonian)(x))
            res = newton(F, y0, jacobian=jax.jacrev(F), rtol=rtol, max_iter=max_iter, simplified=True)
            q1, v1 = f.lift(res.x)
            chart_ok = (f.conditioning(0.5 * (q + q1)) > DEGENERACY_TOL) & (f.conditioning(q1) > DEGENERACY_TOL)
            cause = jnp.where(res.converged & ~chart_ok, newton_mod.CHART, res.cause)
            return (MomentumState(q1, system.momentum(q1, v1)),                        # (16a)
                    StepInfo(res.converged & chart_ok, res.iterations, cause))

        return Scheme(momentum_init(system), step, momentum_observe(system.factor_metric))


def _methods():
    return (
        GonzalezF(
            name="gonzalez-f",
            traits=Traits(
                order=2, symmetric=True, implicit=True,
                preserves=(Claim(Invariant.ENERGY, "energy H(q, p) (exactly, Gonzalez discrete gradient)"),
                           holonomic_claim("configuration constraint φ(q_k) = 0, its impulse along the discrete "
                                           "gradient Φ̄ (Gonzalez 1999)"),
                           Claim(Invariant.NODE_CONSTRAINT, "node constraints (Φ; μ)(q_k) G⁻¹p_k = 0 (the "
                                 "energy-preserving node projection)", options=(("node_projection", True),))),
                accepts={Feature.CONFIGURATION_METRIC, Feature.HOLONOMIC_CONSTRAINTS},
                node_velocity="v_k = G⁻¹p_k (does NOT satisfy the constraint: it drifts)",
                source=f"{_SOURCE}, (15) with the Gonzalez DG (12); q̄ the midpoint "
                       "(erratum E7, docs/theory/celledoni2019.md#e7)",
                family="discrete-gradients", integrates=("nonholonomic",)),
            description="Full-space Gonzalez DG with multipliers: energy-exact, constraint drifts."),
        GonzalezR(
            name="gonzalez-r",
            traits=Traits(
                order=2, symmetric=True, implicit=True,
                preserves=(Claim(Invariant.ENERGY, "energy H(q, p) (exactly, Gonzalez discrete gradient)"),
                           Claim(Invariant.NODE_CONSTRAINT, "node constraint μ(q_k) G⁻¹p_k = 0 (16a)"),
                           Claim(Invariant.DISCRETE_CONSTRAINT,
                                 "discrete constraint μ(q̄)(q_{k+1} − q_k) = 0 (Remark 3.3)",
                                 discrete_constraint=midpoint_constraint)),
                accepts={Feature.CONFIGURATION_METRIC},
                node_velocity="v_k = G⁻¹p_k, p_k = G X g_D⁻¹ ρ_k (16a): on the constraint",
                source=f"{_SOURCE}, §3.3, Algorithm 1 (sign of the ∂Q update corrected: erratum E6, "
                       "docs/theory/celledoni2019.md#e6), (16)–(18), Remark 3.5 (option)",
                family="discrete-gradients", integrates=("nonholonomic",)),
            description="Reduced Gonzalez method run in canonical coordinates with a Householder basis."),
    )


METHODS = _methods()
