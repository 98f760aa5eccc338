"""SPARK Lobatto IIIA–IIIB methods with s stages for the Lagrange–d'Alembert equations.

For ``q̇ = v``, ``ṗ = F(q, v) + μ(q)ᵀλ``, ``p = G(q) v``, ``μ(q) v = ν(q)`` with
F = ∂L/∂q = ½ vᵀ(∂G/∂q)v − ∇V, the s-stage SPARK method of L. O. Jay (BIT 43 (2003) 93–106, with
the Lagrange–d'Alembert form of Jay, "Lagrange–d'Alembert SPARK integrators for nonholonomic
Lagrangian systems", 2009) with the Lobatto IIIA coefficients a (positions), the Lobatto IIIB
coefficients â (momenta, b_i â_ij + b_j a_ji = b_i b_j) and stage multipliers Λ_1 … Λ_s:

    Q_i = q_0 + h Σ_j a_ij V_j,           G(Q_i) V_i = P_i
    P_i = p_0 + h Σ_j â_ij (F(Q_j, V_j) + μ(Q_j)ᵀ Λ_j)                         i = 1 … s
    0 = Σ_j a_ij (μ(Q_j) V_j − ν(Q_j))                                        i = 2 … s
    q_1 = Q_s,   p_1 = p_0 + h Σ_j b_j (F(Q_j, V_j) + μ(Q_j)ᵀ Λ_j),   μ(q_1) G(q_1)⁻¹ p_1 = ν(q_1)

The internal constraints are the stage constraints averaged with the rows 2 … s of the IIIA
matrix (Jay 2003, the s × (s+1) "mean stage constraint" matrix: the same equations, premultiplied
by an invertible matrix); the last column of â is zero, so Λ_s enters only p_1 and is fixed by the
endpoint constraint. For s = 2 this is ``spark-lobatto2`` (:class:`SparkLobatto2`, below),
checked to agree to the Newton tolerance. Order 2s − 2 (4 for s = 3, 6 for s = 4; fitted in
tests/convergence/test_spark.py), symmetric, the node constraint exact; energy is not conserved.
Unknowns (V_1 … V_s, hΛ_1 … hΛ_s), s(n + m), by Newton; any G(q), linear or affine constraints.

Configuration constraints φ(q) = 0 (k rows; ``constraint_matrix`` is then (Φ; μ) and the
multipliers are stacked the same way): their internal stage conditions are at position level,
φ(Q_i) = 0 for i = 2 … s (Q_1 = q_0), and Φ(q_1)G⁻¹p_1 = 0 is the endpoint condition beside the
rolling one — the Lobatto IIIA–IIIB method for holonomic constraints (Jay, SIAM J. Numer. Anal.
33 (1996) 368–387; s = 2 is RATTLE) with the mean stage constraint for the rolling rows, the
mixed case of Jay 2003. Order 2s − 2 for both (fitted in tests/unit/test_holonomic.py).

Reported at the nodes: q_k, p_k, v_k = G⁻¹p_k (on the constraint), and the multiplier Λ_s of the
step that ended at t_k (Lagrange–d'Alembert sign; at t_0 the exact λ(q_0, v_0)).
"""
from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .. import linalg
from ..declarations import Claim, Feature, Invariant
from ..solvers.newton import MAX_ITER, RTOL, newton
from .base import (Method, MomentumState, MultiplierState, Scheme, StepInfo, Traits, holonomic_claim,
                   momentum_init, momentum_observe, multiplier_init, multiplier_observe)
from .comparison import _SOURCE as _CELLEDONI, _impulse_guess


def lobatto_iiia(s: int):
    """(a (s, s), b (s,), c (s,)) of the s-stage Lobatto IIIA method (collocation at the Lobatto
    points: a_ij = ∫_0^{c_i} ℓ_j), in float64. Hairer–Wanner, Solving ODEs II, §IV.5."""
    from numpy.polynomial import legendre as L
    if s < 2:
        raise ValueError("Lobatto methods need s ≥ 2 stages")
    inner = L.Legendre.basis(s - 1).deriv().roots() if s > 2 else np.array([])
    c = np.concatenate([[0.0], (np.sort(np.real(inner)) + 1.0) / 2.0, [1.0]])
    a = np.zeros((s, s))
    for j in range(s):
        others = np.delete(c, j)
        ell = np.poly1d(np.poly(others) / np.prod(c[j] - others))      # Lagrange basis ℓ_j
        integral = np.polyint(ell)
        a[:, j] = integral(c) - integral(0.0)
    return a, a[-1].copy(), c


def lobatto_iiib(s: int):
    """â (s, s) of the s-stage Lobatto IIIB method: b_i â_ij + b_j a_ji = b_i b_j."""
    a, b, _ = lobatto_iiia(s)
    ahat = b[None, :] - (b[None, :] * a.T) / b[:, None]
    ahat[:, -1] = 0.0                   # exactly (a_{s,j} = b_j): Λ_s enters only p_1
    return ahat


@dataclass(frozen=True, eq=False)
class Spark(Method):
    """The s-stage SPARK Lobatto IIIA–IIIB method (see module doc). Build options: rtol, max_iter."""

    stages: int = 3

    def build(self, system, q0, *, rtol: float = RTOL, max_iter: int = MAX_ITER) -> Scheme:
        s = self.stages
        a_np, b_np, c_np = lobatto_iiia(s)
        a, ahat, b = jnp.asarray(a_np), jnp.asarray(lobatto_iiib(s)), jnp.asarray(b_np)
        factor_fn = system.factor_metric
        n = jnp.asarray(q0).shape[0]

        constant = system.constant_metric(q0)
        timed = getattr(system, "explicit_time", False)     # V(q, t), ν(q, t) at the stage times
        k = system.holonomic(jnp.asarray(q0, jnp.float64)).shape[0] if system.has_holonomic else 0

        def holonomic_size(Qi):
            """The size of the terms of φ(Q_i): |Φ(Q_i)| |Q_i| (the round-off floor of its rows)."""
            return linalg.mv(jnp.abs(system.holonomic_jacobian(Qi)), jnp.abs(Qi)) + jnp.abs(system.holonomic(Qi))

        def force(q, v, lam, dt):
            """∂L/∂q + μᵀΛ (+ the non-conservative force at t_k + dt) with ∂L/∂q = ½ vᵀ(∂G/∂q)v − ∇V."""
            f = (-(system.grad_potential(q, dt) if timed else system.grad_potential(q))
                 + linalg.vm(lam, system.constraint_matrix(q)))
            if system.has_force:
                f = f + system.force(q, v, dt)
            if constant:
                return f
            return f + jax.grad(lambda x: 0.5 * jnp.sum(v * linalg.mv(system.mass_matrix(x), v)))(q)

        def step(state, h):
            q, p, lam = state.q, state.p, state.lam
            m = lam.shape[0]

            def unpack(u):
                # the unknowns are V_j and the impulses hΛ_j: Λ enters the equations through hΛ,
                # so the Newton test then weighs both to the size of their effect on p
                return u[:s * n].reshape(s, n), u[s * n:].reshape(s, m) / h

            def stages(u):
                V, Lam = unpack(u)
                Q = q + h * linalg.mm(a, V)
                Fs = jax.vmap(force)(Q, V, Lam, h * jnp.asarray(c_np))      # stage i at t_k + c_i h
                return V, Q, Fs

            def constraint_terms(Qi, Vi, dt):
                """μ(Q)V − ν(Q) (ν(Q, t_k + dt)) and the size of its terms |μ||V| + |ν|."""
                mu = system.constraint_matrix(Qi)
                nu = system.constraint_rhs(Qi, dt) if timed else system.constraint_rhs(Qi)
                return linalg.mv(mu, Vi) - nu, linalg.mv(jnp.abs(mu), jnp.abs(Vi)) + jnp.abs(nu)

            def residual(u):
                """The residual and the sizes of its terms (Newton's ``has_scale``: the stage
                constraints are evaluated at Q = q + h Σ a V, whose rounding when |q| is large — a
                heading that has turned many times — puts a floor under the impulses' updates)."""
                V, Q, Fs = stages(u)
                P = p + h * linalg.mm(ahat, Fs)
                GV = jax.vmap(lambda Qi, Vi: linalg.mv(system.mass_matrix(Qi), Vi))(Q, V)
                g, g_size = jax.vmap(constraint_terms)(Q, V, h * jnp.asarray(c_np))
                g, g_size = linalg.mm(a[1:], g), linalg.mm(jnp.abs(a[1:]), g_size)
                if k:       # configuration rows at position level: φ(Q_i) = 0, i = 2 … s
                    g = g.at[:, :k].set(jax.vmap(system.holonomic)(Q[1:]) / h)
                    g_size = g_size.at[:, :k].set(jax.vmap(holonomic_size)(Q[1:]) / h)
                q1, p1 = Q[-1], p + h * linalg.vm(b, Fs)
                r3, s3 = constraint_terms(q1, factor_fn(q1).solve(p1), h)
                r = jnp.concatenate([(GV - P).ravel(), g.ravel(), r3])
                S = jnp.concatenate([jnp.maximum(jnp.abs(GV), jnp.abs(P)).ravel(), g_size.ravel(), s3])
                return r, S

            v0 = factor_fn(q).solve(p)
            u0 = jnp.concatenate([jnp.tile(v0, s), jnp.tile(h * lam, s)])
            res = newton(residual, u0, jacobian=jax.jacfwd(lambda u: residual(u)[0]), rtol=rtol,
                         max_iter=max_iter, has_scale=True)
            V, Q, Fs = stages(res.x)
            _, Lam = unpack(res.x)
            return MultiplierState(Q[-1], p + h * linalg.vm(b, Fs), Lam[-1]), StepInfo.of(res)

        return Scheme(multiplier_init(system), step, multiplier_observe(factor_fn))


@dataclass(frozen=True, eq=False)
class SparkLobatto2(Method):
    """``spark-lobatto2``, the 2-stage Lobatto IIIA–B SPARK written out by hand for a constant G and
    linear constraints (a "nonholonomic RATTLE", one of the comparison methods of Celledoni et al.
    2019; its equations: :mod:`dalembert.methods.comparison`). With configuration constraints or a
    force it is the general :class:`Spark` with s = 2 (RATTLE for φ). Build options: rtol, max_iter."""

    def build(self, system, q0, *, rtol: float = RTOL, max_iter: int = MAX_ITER) -> Scheme:
        if system.has_holonomic or system.timed:
            return Spark(name=self.name, traits=self.traits, stages=2).build(system, q0, rtol=rtol,
                                                                               max_iter=max_iter)
        factor_fn = system.factor_metric
        f = factor_fn(q0)

        def step(state, h):
            q, p = state
            mu0 = system.constraint_matrix(q)
            pk = p - 0.5 * h * system.grad_potential(q)

            def stage(ell):
                P = pk + linalg.vm(ell, mu0)          # ell = (h/2) Λ1
                W = f.solve(P)
                return P, W, q + h * W

            def F(ell):
                _, W, q1 = stage(ell)
                return linalg.mv(mu0 + system.constraint_matrix(q1), W)

            res = newton(F, _impulse_guess(system, f, mu0, pk), rtol=rtol, max_iter=max_iter)
            P, _, q1 = stage(res.x)
            pstar = P - 0.5 * h * system.grad_potential(q1)
            mu1 = system.constraint_matrix(q1)
            p1 = pstar + linalg.vm(_impulse_guess(system, f, mu1, pstar), mu1)
            return MomentumState(q1, p1), StepInfo(res.converged, res.iterations)

        return Scheme(momentum_init(system), step, momentum_observe(factor_fn))


SPARK_LOBATTO2 = SparkLobatto2(
    name="spark-lobatto2",
    traits=Traits(
        order=2, symmetric=True, implicit=True,
        preserves=(Claim(Invariant.NODE_CONSTRAINT, "node constraint μ(q_k) G⁻¹p_k = 0"),
                   holonomic_claim("configuration constraint φ(q_k) = 0 (the general 2-stage SPARK)")),
        accepts={Feature.HOLONOMIC_CONSTRAINTS, Feature.FORCES, Feature.CONTROLS, Feature.EXPLICIT_TIME},
        node_velocity="v_k = G⁻¹p_k (on the constraint)",
        source=f"{_CELLEDONI}; Jay 2003 (BIT 43:93) 2-stage Lobatto IIIA–B SPARK; constant G, "
               "linear constraints",
        family="spark", integrates=("nonholonomic",),
        explicit_when="one Newton iteration when μ(q1) does not depend on the coordinates the impulse moves"),
    description="2-stage Lobatto IIIA–B SPARK (nonholonomic RATTLE); not energy-preserving.")


def _spark(s: int) -> Spark:
    return Spark(
        name=f"spark-lobatto{s}",
        traits=Traits(
            order=2 * s - 2, symmetric=True, implicit=True,
            preserves=(Claim(Invariant.NODE_CONSTRAINT, "node constraint μ(q_k) G⁻¹p_k = ν(q_k)"),
                       holonomic_claim("configuration constraint φ(q_k) = 0 (at every stage)")),
            accepts={Feature.AFFINE_CONSTRAINTS, Feature.CONFIGURATION_METRIC, Feature.HOLONOMIC_CONSTRAINTS,
                     Feature.FORCES, Feature.CONTROLS, Feature.EXPLICIT_TIME},
            node_velocity="v_k = G⁻¹p_k (on the constraint)",
            source=("L. O. Jay, BIT 43 (2003) 93–106 (SPARK, Lobatto IIIA–IIIB, mean stage constraint); "
                    "Jay, Lagrange–d'Alembert SPARK integrators for nonholonomic Lagrangian systems (2009)"),
            family="spark", integrates=("nonholonomic",)),
        description=f"{s}-stage SPARK Lobatto IIIA–IIIB (order {2 * s - 2}); any G(q), affine constraints; "
                    "Newton on the stage velocities and multipliers.",
        stages=s)


METHODS = (SPARK_LOBATTO2, _spark(3), _spark(4))
