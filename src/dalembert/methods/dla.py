"""Classical discrete Lagrange–d'Alembert (DLA) integrator (Cortés–Martínez 2001).

As used for comparison by Ferraro–Iglesias–Martín de Diego 2008
(§5, after Cortés–Martínez [10]): the same discrete Lagrangian as the GNI,
but a *discrete constraint* replaces the reflection. Unknowns (q_{k+1}, λ_k):

    D1 L_d(q_k, q_{k+1}) + D2 L_d(q_{k−1}, q_k) = μ(q_k)ᵀ λ_k
    ω_d(q_k, q_{k+1}) = 0,   default ω_d = μ(q̄)(q_{k+1} − q_k)/h − ν(q̄),  q̄ = (q_k + q_{k+1})/2

In one-step form the state is (q_k, p⁺_k = D2 L_d(q_{k−1}, q_k)), started as the GNI is
(:func:`~dalembert.methods.gni.startup_init`), and the n + m equations are solved by Newton.

Reported at the nodes: q_k; v_k = G⁻¹(P* p⁺_k + Q*Π), the node momentum projected onto the
constraint space (p⁺_k itself satisfies the constraint only to O(h)); no multiplier (λ_k belongs
to the interval [t_k, t_{k+1}]). What DLA keeps exactly is the discrete constraint ω_d = 0.

With configuration constraints φ(q) = 0 (``holonomic_constraints``), the momentum equation gains
Φ(q_k)ᵀΛ_k (the first k rows of ``constraint_matrix``) and φ(q_{k+1}) = 0 joins ω_d = 0 (Marsden–West,
Acta Numerica 2001, §3.5): n + k + m unknowns (q_{k+1}, Λ_k, λ_k).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from .. import linalg
from ..declarations import Claim, Feature, Invariant
from ..solvers.newton import MAX_ITER, RTOL, newton
from . import discrete_lagrangians as dls
from .base import Method, Observation, Scheme, StepInfo, Traits, holonomic_claim, StepRoundoff
from .discrete_constraints import left_point_constraint, midpoint_constraint
from .gni import GNIState, startup_init, reflection_coefficients


#: the configuration constraint, imposed at the new node (a claim where the system has one)
_HOLONOMIC = holonomic_claim("configuration constraint φ(q_{k+1}) = 0 (Marsden–West 2001 §3.5)")


def dla_variant(name: str, discrete_constraint, discrete_lagrangian=None, order: int = 2,
                description: str = "") -> "DLA":
    """A DLA method with the midpoint L_d (default) and another discrete constraint
    (a function ``system -> ω_d(q0, q1, h)``, e.g. :func:`left_point_constraint`)."""
    from . import discrete_lagrangians
    from .base import Traits
    return DLA(name=name, traits=Traits(
        order=order, symmetric=False, implicit=True,
        preserves=(Claim(Invariant.DISCRETE_CONSTRAINT,
                         f"discrete constraint {getattr(discrete_constraint, '__name__', 'ω_d')} = 0",
                         discrete_constraint=discrete_constraint), _HOLONOMIC),
        accepts={Feature.AFFINE_CONSTRAINTS, Feature.CONFIGURATION_METRIC, Feature.HOLONOMIC_CONSTRAINTS,
                 Feature.FORCES, Feature.CONTROLS, Feature.EXPLICIT_TIME},
        node_velocity="G⁻¹(P*p⁺_k + Q*Π): the node momentum D2 L_d(q_{k−1}, q_k) projected",
        source="Cortés–Martínez 2001 as in Ferraro–Iglesias–Martín de Diego, Nonlinearity 21 (2008) "
               "§5, Example 3 (the \"bad\" discrete constraint)", family="dla",
        integrates=("nonholonomic",)),
        description=description, discrete_lagrangian=discrete_lagrangian or discrete_lagrangians.midpoint,
        discrete_constraint=discrete_constraint)


@dataclass(frozen=True, eq=False)
class DLA(Method):
    """Discrete Lagrange–d'Alembert with a discrete Lagrangian and a discrete constraint.

    discrete_lagrangian : DiscreteLagrangian or callable L_d(q0, q1, h).
    discrete_constraint : None (midpoint, above) or a function ``system -> ω_d(q0, q1, h)``.
    """

    discrete_lagrangian: Any = None
    discrete_constraint: Any = None

    def build(self, system, q0, *, rtol: float = RTOL, max_iter: int = MAX_ITER,
              startup: str = "consistent") -> Scheme:
        L_d, _ = dls.resolve(self.discrete_lagrangian, system)
        omega = (self.discrete_constraint or midpoint_constraint)(system)
        factor_fn = system.factor_metric
        D1 = jax.grad(L_d, argnums=0)
        D2 = jax.grad(L_d, argnums=1)
        n = q0.shape[0]
        # configuration constraints (Marsden–West 2001 §3.5): φ(q_{k+1}) = 0 with Φ(q_k)ᵀΛ_k in the
        # momentum equation — the first k rows of constraint_matrix and of the unknown multiplier
        phi = system.holonomic          # shape (0,) without them
        # a force: the forced DLA (Marsden–West 2001 §3.2), D1 L_d + f_d⁻ + p = μᵀλ, p' = D2 L_d + f_d⁺
        fd = dls.discrete_forces(self.discrete_lagrangian, system)

        def step(state, h):
            q, p, g = state.q, state.p, state.g
            mu = system.constraint_matrix(q)
            m = mu.shape[0]

            f = factor_fn(q)

            def F(z):
                x, lam = z[:n], z[n:]
                return jnp.concatenate([D1(q, x, h) + fd(q, x, h)[0] + p - linalg.vm(lam, mu), phi(x),
                                        omega(q, x, h)])

            roundoff = StepRoundoff(system, f, q, p, h)

            def F_scaled(z):     # impulses to their round-off floor (methods.base.StepRoundoff)
                return F(z), roundoff.sizes(z[:n], m)

            s, _ = reflection_coefficients(system, q, p, f)
            x0 = q + h * f.solve(p - linalg.vm(s, mu))
            # the Jacobian in reverse mode (F contains the gradient D1 L_d): faster in a vmapped
            # ensemble and never slower alone (docs/benchmarks.md, "Measurements behind the code")
            # with configuration constraints the impulses are tested against their own round-off
            # floor (their Newton stalled at small h otherwise); without, the max-norm test, which
            # the NumPy baseline loop reproduces iteration for iteration (benchmarks)
            scaled = system.has_holonomic
            res = newton(F_scaled if scaled else F, jnp.concatenate([x0, jnp.zeros(m)]), jacobian=jax.jacrev(F),
                         rtol=rtol, max_iter=max_iter, has_scale=scaled)
            x = res.x[:n]
            return GNIState(x, D2(q, x, h) + fd(q, x, h)[1], g), StepInfo(res.converged, res.iterations)

        def observe(state, h):
            f = factor_fn(state.q)
            s, mu = reflection_coefficients(system, state.q, state.p, f)
            pbar = state.p - linalg.vm(s, mu)
            return Observation(state.q, f.solve(pbar), pbar, None)

        return Scheme(startup_init(system, startup), step, observe)


#: The classical DLA: midpoint L_d, midpoint discrete constraint.
MIDPOINT = DLA(name="dla-midpoint",
    traits=Traits(
        order=2, symmetric=True, implicit=True,
        preserves=(Claim(Invariant.DISCRETE_CONSTRAINT, "discrete constraint μ(q̄)(q_{k+1}−q_k)/h = ν(q̄)",
                         discrete_constraint=midpoint_constraint), _HOLONOMIC),
        accepts={Feature.AFFINE_CONSTRAINTS, Feature.CONFIGURATION_METRIC, Feature.HOLONOMIC_CONSTRAINTS,
                 Feature.FORCES, Feature.CONTROLS, Feature.EXPLICIT_TIME},
        node_velocity="G⁻¹(P*p⁺_k + Q*Π): the node momentum D2 L_d(q_{k−1}, q_k) projected",
        source="Cortés–Martínez 2001 as in Ferraro–Iglesias–Martín de Diego, Nonlinearity 21 "
               "(2008) §5 (midpoint L_d and midpoint discrete constraint)",
        family="dla", integrates=("nonholonomic",)),
    description="Discrete Lagrange–d'Alembert with midpoint L_d and midpoint discrete constraint.",
    discrete_lagrangian=dls.midpoint)

METHODS = (
    MIDPOINT,
    # the left-point constraint is an O(h) approximation of μ(q̄)(q_{k+1} − q_k)/h = ν(q̄):
    # globally first order (the registry's conformance test measures 0.91–1.0)
    dla_variant(
        "dla-left", left_point_constraint, order=1,
        description="DLA with midpoint L_d and the left-point discrete constraint "
                    "μ(q_k)(q_{k+1}−q_k)/h = ν(q_k)."),
)
