"""The staggered (leap-frog) forms of GNI-A, GNI-B and nonholonomic RATTLE, constant metric.

State (q_k, p̃_k, λ̃_k); Ferraro–Jiménez–Martín de Diego 2015, (13), (14), (15) and the maps
F_A, F_B (22), (23) of Theorem 5.4 (the B multiplier comes from (14e) at q_{k+1}, since (23c) does not
determine it: erratum E4, docs/theory/ferraro2015.md#e4):

    p_{k+½}  = p̃_k − (h/2)(∇V(q_k) + μ(q_k)ᵀ λ̃_k)
    q_{k+1}  = q_k + h G⁻¹ p_{k+½}
    λ̃_{k+1} = (2/h) C⁻¹ ( μ G⁻¹ (p_{k+½} − c h ∇V(q_{k+1})) − ν ),  c = 0 (A), 1 (B), ½ (RATTLE)
    p̃_{k+1}  = p_{k+½} − (h/2)(∇V(q_{k+1}) + μ(q_{k+1})ᵀ λ̃_{k+1})

The states live on the manifolds S_A(h) = {μG⁻¹(p̃ + (h/2)∇V) = ν}, S_B(h) = S_A(−h) and
S_RATTLE = {μG⁻¹p̃ = ν}. These forms exist for the adjointness theorem (F_A^h ∘ F_B^{−h} = Id on
S_A(h)) and to show that composing them naively is only first order (Remark 5.5;
docs/theory/ferraro2015.md#e5);
the integrators themselves run in T*Q form (:mod:`dalembert.methods.gni`). λ̃ here has the
Hamiltonian sign (λ̃ = −λ of the Lagrange–d'Alembert equations).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax.numpy as jnp

from .. import linalg
from ..declarations import Feature
from .base import Method, Scheme, Traits, explicit_info
from .gni import constraint_split

#: c of each variant (weight of ∇V(q_{k+1}) in the multiplier equation).
VARIANTS = {"A": 0.0, "B": 1.0, "RATTLE": 0.5}
#: s of each variant in the state manifold μG⁻¹(p̃ + s (h/2) ∇V) = ν.
MANIFOLD_SIGN = {"A": 1.0, "B": -1.0, "RATTLE": 0.0}


class LeapfrogState(NamedTuple):
    q: jnp.ndarray
    p: jnp.ndarray   # p̃_k
    lam: jnp.ndarray  # λ̃_k (Hamiltonian sign)


def make_leapfrog_step(system, q0, variant: str):
    """``step(state, h) -> state`` for variant 'A', 'B' or 'RATTLE' (constant metric only)."""
    if not system.constant_metric(q0):
        raise ValueError("the leap-frog forms (13)-(15) are defined for a constant mass matrix")
    c = VARIANTS[variant]
    factor_fn = system.factor_metric

    def step(state, h):
        q, pt, lt = state
        f = factor_fn(q)
        p_half = pt - 0.5 * h * (system.grad_potential(q) + linalg.vm(lt, system.constraint_matrix(q)))
        q1 = q + h * f.solve(p_half)
        g1 = system.grad_potential(q1)
        mu1, Lc1, nu1 = constraint_split(system, q1, f)
        lt1 = (2.0 / h) * linalg.cho_solve(Lc1, linalg.mv(mu1, f.solve(p_half - c * h * g1)) - nu1)
        return LeapfrogState(q1, p_half - 0.5 * h * (g1 + linalg.vm(lt1, mu1)), lt1)
    return step


def project_to_manifold(system, q0, variant: str, q, p, lam, h):
    """Move (q, p̃) onto S_variant(h) along μᵀ (G-orthogonally); λ̃ is returned unchanged."""
    f = system.factor_metric(q)
    s_sign = MANIFOLD_SIGN[variant]
    g = system.grad_potential(q)
    mu, Lc, nu = constraint_split(system, q, f)
    r = linalg.mv(mu, f.solve(p + s_sign * 0.5 * h * g)) - nu
    return LeapfrogState(q, p - linalg.vm(linalg.cho_solve(Lc, r), mu), lam)


@dataclass(frozen=True, eq=False)
class NaiveLeapfrogComposition(Method):
    """F_A(h/2) then F_B(h/2) composed in the staggered (q, p̃, λ̃) variables: the composition that
    Remark 5.5 (read as in erratum E5, docs/theory/ferraro2015.md#e5) shows to be only first order —
    a counter-example, not registered.
    Starts from (q0, G v0, λ̃ = 0); reports q, p̃ and v = G⁻¹p̃."""

    def build(self, system, q0) -> Scheme:
        step_a = make_leapfrog_step(system, q0, "A")
        step_b = make_leapfrog_step(system, q0, "B")
        factor_fn = system.factor_metric
        m = system.constraint_matrix(jnp.asarray(q0)).shape[0]

        def init(q0_, v0_, h=None):
            return LeapfrogState(q0_, system.momentum(q0_, v0_), jnp.zeros(m))

        def step(state, h):
            return step_b(step_a(state, 0.5 * h), 0.5 * h), explicit_info()

        def observe(state, h=None):
            return {"q": state.q, "p": state.p, "v": factor_fn(state.q).solve(state.p)}
        return Scheme(init, step, observe)


naive_composition = NaiveLeapfrogComposition(
    name="gni-ab-staggered",
    traits=Traits(order=1, symmetric=False, implicit=False,
                  source="Ferraro–Jiménez–Martín de Diego 2015, Remark 5.5 (erratum E5, docs/theory/ferraro2015.md#e5: "
                         "the naive staggered composition is first order)",
                  family="gni", integrates=("nonholonomic",), two_step=True,
                  accepts={Feature.AFFINE_CONSTRAINTS, Feature.CONFIGURATION_METRIC}),
    description="F_A(h/2) ∘ F_B(h/2) in the staggered variables (first order; a counter-example).")
