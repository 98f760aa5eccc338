"""The comparison methods of Celledoni et al. 2019 on a NonholonomicSystem: SI-DLA, I-DLA, SPARK.

The paper only names them; the definitions are our reconstructions (docs/theory/celledoni2019.md)
(from McLachlan–Perlmutter 2006 (MP06) as
transcribed in O. Verdier's odelab, and from Jay 2003). All three keep the state (q_k, p_k) with
p = G v, and none conserves energy: their energy error is a random walk with variance
≈ 1e-4 h⁴ t on the chaotic quartic system (Celledoni et al. 2019 §4.1.3, Figure 2, after MP06).

Supported systems: constant mass matrix G (checked by tracing ``mass_matrix``; the reconstructed
forms are for G = I, the constant-G forms below follow by p = G v) and linear constraints μ(q) v = 0.
Anything else raises :class:`~dalembert.errors.InputError`. (For a q-dependent G, the classical
I-DLA is the registered ``dla-midpoint``, which is the same scheme with a Newton solve for any G.)

* ``si-dla`` (MP06 eq. 4.18; drift–kick–drift):
  q½ = q0 + (h/2) G⁻¹p0,  p1 = p0 − h∇V(q½) + μ(q½)ᵀ(hλ),  q1 = q½ + (h/2) G⁻¹p1,
  μ(q1) G⁻¹p1 = 0.  Unknown hλ ∈ R^m by Newton (one iteration when μ(q1) does not depend on the
  coordinates the impulse moves, as in the chaotic system and the gearbox). Order 2, symmetric,
  endpoint constraint exact; energy not conserved.
* ``i-dla`` (our reconstruction; docs/theory/celledoni2019.md#e11). Default ``constraint="discrete"``:
  the classical DLA with the midpoint discrete Lagrangian L_d = hL(q̄, (q1 − q0)/h) and the midpoint
  discrete constraint:
  G(q1 − q0)/h + (h/2)∇V(q̄) = p0 + μ(q0)ᵀλ,  μ(q̄)(q1 − q0) = 0,
  p1 = G(q1 − q0)/h − (h/2)∇V(q̄), q̄ = (q0 + q1)/2; unknowns (q1, hλ) by Newton. Only the
  *discrete* constraint is kept; the node momentum p_k = D2 L_d(q_{k−1}, q_k) violates
  μ(q_k)G⁻¹p_k = 0 at O(h)·O(1) (0.18 in our run of the chaotic system). Option
  ``constraint="endpoint"``: implicit midpoint with the constraint force at q̄ and the endpoint constraint,
  q1 = q0 + (h/2)G⁻¹(p0 + p1),  p1 = p0 − h∇V(q̄) + μ(q̄)ᵀ(hλ),  μ(q1)G⁻¹p1 = 0.
  Both are order 2 and symmetric. The classical variant is built from the registered
  ``dla-midpoint`` with ``startup="legendre"`` (p_0 = G v_0): the same scheme, with this method's
  outputs (raw p_k and ``discrete_constraint``).
* ``spark-lobatto2`` (defined and registered with its siblings in :mod:`dalembert.methods.spark`,
  family ``spark``; Jay 2003: 2-stage Lobatto IIIA–B SPARK; a "nonholonomic RATTLE"):
  P = p0 + (h/2)(−∇V(q0) + μ(q0)ᵀΛ1),  q1 = q0 + h G⁻¹P,  (μ(q0) + μ(q1)) G⁻¹P = 0;
  p1 = P + (h/2)(−∇V(q1) + μ(q1)ᵀΛ2),  μ(q1)G⁻¹p1 = 0. The first block is solved for hΛ1 by
  Newton (m unknowns), the second is an m × m linear solve. Order 2, symmetric, endpoint
  constraint exact.

Reported at the nodes: q_k, p_k and v_k = G⁻¹p_k, except for the classical I-DLA, which reports
p_k (the raw node momentum), v_k = G⁻¹P*p_k (its G-orthogonal projection onto the constraint
space, so that ``constraint_residual`` is ~0 — the raw violation is μ(q_k)G⁻¹p_k, from ``traj.p``)
and the extra array ``discrete_constraint`` = μ(q̄)(q_k − q_{k−1})/h of the step that ended at
t_k (0 at t_0).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .. import linalg
from ..declarations import Claim, Invariant
from ..errors import InputError
from ..solvers.newton import MAX_ITER, RTOL, newton
from .discrete_constraints import midpoint_constraint
from .base import Method, MomentumState, Scheme, StepInfo, Traits, momentum_init, momentum_observe
from .dla import MIDPOINT as dla_midpoint

_SOURCE = ("Celledoni, Farré Puiggalí, Høiseth, Martín de Diego 2019 §4.1 (comparison methods, "
           "our reconstructions: docs/theory/celledoni2019.md)")


class DLAState(NamedTuple):
    """dla: the state of the classical DLA (``dla-midpoint``: q_k, node momentum
    p_k = D2 L_d(q_{k−1}, q_k), ∇V(q_k));  d: (m,) discrete constraint μ(q̄)(q_k − q_{k−1})/h of
    the last step (0 at the start)."""

    dla: Any
    d: Any


def _impulse_guess(system, f, mu, pstar):
    """hλ that makes μ G⁻¹(p* + μᵀhλ) = 0 with μ frozen: −C⁻¹ μG⁻¹p*, C = μG⁻¹μᵀ."""
    C = linalg.mm(mu, f.solve(mu.T))
    return -linalg.solve_spd(C, linalg.mv(mu, f.solve(pstar)))


@dataclass(frozen=True, eq=False)
class SIDLA(Method):
    """SI-DLA (see module doc). Build options: rtol, max_iter (Newton on the impulse)."""

    def build(self, system, q0, *, rtol: float = RTOL, max_iter: int = MAX_ITER) -> Scheme:
        factor_fn = system.factor_metric
        f = factor_fn(q0)

        def step(state, h):
            q, p = state
            qh = q + 0.5 * h * f.solve(p)
            pstar = p - h * system.grad_potential(qh)
            mu_h = system.constraint_matrix(qh)

            def p1_q1(ell):
                p1 = pstar + linalg.vm(ell, mu_h)
                return p1, qh + 0.5 * h * f.solve(p1)

            def F(ell):
                p1, q1 = p1_q1(ell)
                return linalg.mv(system.constraint_matrix(q1), f.solve(p1))

            res = newton(F, _impulse_guess(system, f, mu_h, pstar), rtol=rtol, max_iter=max_iter)
            p1, q1 = p1_q1(res.x)
            return MomentumState(q1, p1), StepInfo(res.converged, res.iterations)

        return Scheme(momentum_init(system), step, momentum_observe(factor_fn))


@dataclass(frozen=True, eq=False)
class IDLA(Method):
    """I-DLA (see module doc). Build options: ``constraint`` "discrete" (default, classical DLA)
    or "endpoint"; rtol, max_iter (Newton on (q1, hλ))."""

    def build(self, system, q0, *, constraint: str = "discrete", rtol: float = RTOL,
              max_iter: int = MAX_ITER) -> Scheme:
        if constraint not in ("discrete", "endpoint"):
            raise InputError(f"{self.name}: constraint must be 'discrete' or 'endpoint'; got {constraint!r}")
        factor_fn = system.factor_metric
        f = factor_fn(q0)
        n = jnp.asarray(q0).shape[0]

        if constraint == "endpoint":
            def step(state, h):
                q, p = state
                m = system.constraint_matrix(q).shape[0]

                def p1_of(x, ell):
                    qb = 0.5 * (q + x)
                    return p - h * system.grad_potential(qb) + linalg.vm(ell, system.constraint_matrix(qb))

                def F(u):
                    x, ell = u[:n], u[n:]
                    p1 = p1_of(x, ell)
                    return jnp.concatenate([x - q - 0.5 * h * f.solve(p + p1),
                                            linalg.mv(system.constraint_matrix(x), f.solve(p1))])

                u0 = jnp.concatenate([q + h * f.solve(p), jnp.zeros(m)])
                res = newton(F, u0, rtol=rtol, max_iter=max_iter)
                x, ell = res.x[:n], res.x[n:]
                return MomentumState(x, p1_of(x, ell)), StepInfo(res.converged, res.iterations)

            return Scheme(momentum_init(system), step, momentum_observe(factor_fn))

        # the classical variant is the registered DLA (midpoint L_d, midpoint discrete
        # constraint) started with p_0 = G v_0 (its "legendre" start-up); this wrapper only adds
        # the discrete-constraint output and reports the raw node momentum
        dla = dla_midpoint.build(system, q0, rtol=rtol, max_iter=max_iter,
                                                 startup="legendre")

        def init(q0_, v0_, h=None):
            s0 = dla.init(jnp.asarray(q0_), jnp.asarray(v0_), h)
            return DLAState(s0, jnp.zeros(system.constraint_matrix(s0.q).shape[0]))

        def step(state, h):
            new, info = dla.step(state.dla, h)
            q, x = state.dla.q, new.q
            d = linalg.mv(system.constraint_matrix(0.5 * (q + x)), x - q) / h
            return DLAState(new, d), info

        def observe(state, h=None):
            obs = dla.observe(state.dla, h)            # v = G⁻¹P*p_k (projected node momentum)
            return {"q": obs.q, "p": state.dla.p, "v": obs.v, "discrete_constraint": state.d}

        return Scheme(init, step, observe)


def _traits(preserves, node_velocity, source, explicit_when=""):
    return Traits(order=2, symmetric=True, implicit=True, preserves=preserves,
                  node_velocity=node_velocity, source=source, family="comparison", integrates=("nonholonomic",),
                  accepts=frozenset(),
                  explicit_when=explicit_when)


def _methods():
    return (
        SIDLA(
            name="si-dla",
            traits=_traits(
                (Claim(Invariant.NODE_CONSTRAINT, "node constraint μ(q_k) G⁻¹p_k = 0"),),
                "v_k = G⁻¹p_k (on the constraint)",
                f"{_SOURCE}; McLachlan–Perlmutter 2006 eq. (4.18); constant G, linear constraints",
                "one Newton iteration when μ(q1) does not depend on the coordinates the impulse moves"),
            description="Semi-implicit DLA (drift–kick–drift) with the endpoint constraint; not energy-preserving."),
        IDLA(
            name="i-dla",
            traits=_traits(
                (Claim(Invariant.DISCRETE_CONSTRAINT, "discrete constraint μ(q̄)(q_{k+1} − q_k) = 0 (default)",
                       options=(("constraint", "discrete"),), discrete_constraint=midpoint_constraint),
                 Claim(Invariant.NODE_CONSTRAINT, "node constraint with constraint='endpoint'",
                       options=(("constraint", "endpoint"),))),
                "v_k = G⁻¹P*p_k, the projected node momentum (default; raw p_k in traj.p); "
                "v_k = G⁻¹p_k with constraint='endpoint'",
                f"{_SOURCE}; classical DLA with the midpoint L_d and the endpoint "
                "alternative; constant G, linear constraints"),
            description="Implicit DLA, midpoint L_d: discrete midpoint constraint (default) or endpoint constraint."),
    )


METHODS = _methods()
