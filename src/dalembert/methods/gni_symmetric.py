"""The GNI's discrete Lagrangian with one constraint impulse per step: a self-adjoint map on D*.

The registered GNIs (:mod:`dalembert.methods.gni`) step the state (q_k, p⁺_k): a reflection
(P − Q)* then the symplectic map of L_d. That map is not self-adjoint (its adjoint is "symplectic
map, then reflection"), so the symmetric compositions of :mod:`dalembert.methods.composition`
do not raise its order (measured: the triple jump of ``nh-rattle`` stays of order 2). This module
gives the same discrete Lagrangians a one-step form on the constraint manifold
D* = {(q, p) : μ(q) G(q)⁻¹ p = ν(q)} with one unknown impulse ℓ ∈ R^m per step, split equally
between the two nodes:

    −D1 L_d(q_k, q_{k+1}, h) = p_k − μ(q_k)ᵀ ℓ
    p_{k+1} = D2 L_d(q_k, q_{k+1}, h) − μ(q_{k+1})ᵀ ℓ
    μ(q_{k+1}) G(q_{k+1})⁻¹ p_{k+1} = ν(q_{k+1})                     (unknowns q_{k+1}, ℓ)

This is the GNI's momentum equation D1 L_d + D2 L_d = −h μᵀλ of Ferraro–Jiménez–Martín de Diego
2015, (9a) and (27a) (with the two nodes' halves of the impulse equal, ℓ = −(h/2)λ_k, instead of
linked through the reflection (8)/(26)) and the node constraint (9b)/(27b) at the new node. For
L_d^SV and a constant G it is "half kick, drift, half kick" with the impulse of the step at both
ends — McLachlan–Perlmutter's nonholonomic RATTLE (Ferraro et al. 2015 (15)) with the two
multipliers λ̃_k, λ̃_{k+1} of a step set equal, which removes the multiplier from the state.

**Self-adjoint.** For a symmetric L_d (L_d(q0, q1, h) = −L_d(q1, q0, −h)), stepping back from
(q_{k+1}, p_{k+1}) with −h gives the same equations with ℓ → −ℓ, and the constraint at the far
node holds on D*: Φ_{−h} = Φ_h⁻¹ on D*. Hence order 2, and the compositions of Yoshida, Suzuki,
Kahan–Li and McLachlan raise it to 4, 6 and 8 (``nh-rattle-4`` …, ``gni-midpoint-4``).

**Cost.** With a constant G and L_d = L_d^SV the drift is explicit and the Newton unknowns are the
m impulses only (a simplified Newton iteration: one m×m Jacobian per step, stopped on the
estimated error θ/(1 − θ)|Δℓ| of the returned impulse, :func:`~dalembert.solvers.newton.newton`'s
``estimate``); otherwise Newton on
(q_{k+1}, ℓ), n + m unknowns: about twice the cost of a ``nh-rattle`` step (explicit, one m×m
solve; docs/benchmarks.md, "Measurements behind the code").

Reported at the nodes: q_k, p_k (on D*), v_k = G⁻¹p_k (the constraint holds to round-off) and the
multiplier λ = −(2/h) ℓ of the step that ended at t_k (Lagrange–d'Alembert sign convention; an
O(h²) approximation of λ(t_k − h/2); at t_0 the exact λ(q_0, v_0); the state keeps it as the next
Newton guess, not as part of the map).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .. import linalg
from ..declarations import Claim, Feature, Invariant
from ..errors import InputError
from ..solvers.newton import _EPS, MAX_ITER, RTOL, newton, newton_kept
from . import discrete_lagrangians as dls
from .gni import net_gradient
from .base import (Method, MultiplierState, Scheme, StepInfo, Traits, compensated_add, holonomic_claim, StepRoundoff,
                   multiplier_init, multiplier_observe, with_compensation)


def _constraint(system, f, q, p, dt=0.0):
    """μ(q) G⁻¹ p − ν(q) (ν(q, t) at the clock's time + dt: h at the step's new node), shape (m,)."""
    nu = system.constraint_rhs(q, dt) if getattr(system, "explicit_time", False) else system.constraint_rhs(q)
    return linalg.mv(system.constraint_matrix(q), f.solve(p)) - nu


def _kick_drift_kick(system, factor_fn, a, rtol, max_iter, simplified=False):
    """Constant G, L_d with potential weight a at the left node: Newton on ℓ only. The updates
    are increments, Δq = h G⁻¹(p_k + Δ₁) with Δ₁ = −a h ∇V(q_k) − μ(q_k)ᵀℓ and
    Δp = Δ₁ − (1 − a) h ∇V(q_{k+1}) − μ(q_{k+1})ᵀℓ, summed by Kahan's method when the state carries
    compensations (``compensated``, the default; a state built without them steps plainly)."""
    def step(state, h):
        q, p, lam = state.q, state.p, state.lam
        c = getattr(state, "c", None)           # (a KeptMatrixState carries none)
        cq0, cp0 = (None, None) if c is None else c
        f = factor_fn(q)
        mu0 = system.constraint_matrix(q)
        g0 = a * h * net_gradient(system, q, 0.0)

        def advance(ell):
            d1 = -g0 - linalg.vm(ell, mu0)
            q1, cq = compensated_add(q, h * f.solve(p + d1), cq0)
            dp = d1 - (1.0 - a) * h * net_gradient(system, q1, h) - linalg.vm(ell, system.constraint_matrix(q1))
            p1, cp = compensated_add(p, dp, cp0)
            return q1, p1, cq, cp

        # the constraint is solved at the summed (compensated) node, the one the state keeps
        res = newton(lambda ell: _constraint(system, f, *advance(ell)[:2], h), -0.5 * h * lam,
                     rtol=rtol, max_iter=max_iter, simplified=simplified, estimate=True)
        q1, p1, cq, cp = advance(res.x)
        return MultiplierState(q1, p1, -(2.0 / h) * res.x, None if c is None else (cq, cp)), StepInfo.of(res)
    return step


def _holonomic_newton_step(system, factor_fn, L_d, rtol, max_iter, fd, reuse=0, estimate=False):
    """With configuration constraints φ(q) = 0 (k rows; ``constraint_matrix`` is (Φ; μ)): RATTLE for
    φ beside the one-impulse form for μ — the left node's impulse is (Λ_k, ℓ), the right node's
    (Λ'_k, ℓ), with φ(q_{k+1}) = 0 and (Φ; μ)(q_{k+1}) G⁻¹p_{k+1} = (0; ν): Newton on
    (q_{k+1}, (Λ'_k, ℓ), Λ_k), n + m + 2k unknowns (Marsden–West 2001 §3.5; Hairer–Lubich–Wanner
    VII.1 for RATTLE). Self-adjoint: stepping back with −h exchanges Λ and Λ'. The reported
    multiplier is −(2/h)ℓ for the rolling rows and −(Λ + Λ')/h for the configuration rows.
    ``reuse`` k ≥ 1: simplified Newton with the matrix kept across steps (:func:`_solve`)."""
    D1 = jax.grad(L_d, argnums=0)
    D2 = jax.grad(L_d, argnums=1)

    def step(state, h):
        q, p, lam = state.q, state.p, state.lam
        n = q.shape[0]
        k = system.holonomic(q).shape[0]
        r = lam.shape[0]
        M0 = system.constraint_matrix(q)

        def left(ell, Lam):
            return jnp.concatenate([Lam, ell[k:]])

        def p_next(x, ell):
            return D2(q, x, h) + fd(q, x, h)[1] - linalg.vm(ell, system.constraint_matrix(x))

        f0 = factor_fn(q)
        roundoff = StepRoundoff(system, f0, q, p, h)

        def F(u):
            x, ell, Lam = u[:n], u[n:n + r], u[n + r:]
            res = jnp.concatenate([-D1(q, x, h) - fd(q, x, h)[0] - p + linalg.vm(left(ell, Lam), M0),
                                   _constraint(system, factor_fn(x), x, p_next(x, ell), h),
                                   system.holonomic(x)])
            return res, roundoff.sizes(x, r + k)

        ell0 = -0.5 * h * lam
        x0 = q + h * f0.solve(p - linalg.vm(ell0, M0))
        res, kept = _solve(F, jnp.concatenate([x0, ell0, ell0[:k]]), state, h, reuse, rtol=rtol, max_iter=max_iter,
                        has_scale=True, estimate=estimate)
        x, ell, Lam = res.x[:n], res.x[n:n + r], res.x[n + r:]
        lam1 = jnp.concatenate([-(Lam + ell[:k]) / h, -(2.0 / h) * ell[k:]])
        return _state(x, p_next(x, ell), lam1, kept), StepInfo.of(res)
    return step


#: Newton matrices a state with ``jacobian_reuse`` keeps, one per step size: the stages of a
#: symmetric composition step with a few distinct fractions of h (the triple jump two, Kahan–Li's
#: s9odr6a five), and each reuses the matrix of the last stage with its own fraction (more
#: fractions than slots, s17odr8a's nine, share them round robin and miss more often)
KEPT_SLOTS = 8


class KeptMatrixState(NamedTuple):
    """The state of ``nh-rattle-sym`` / ``gni-midpoint-sym`` with ``jacobian_reuse``: q, p (n,),
    lam (m,) as :class:`~dalembert.methods.base.MultiplierState`; J (K, d, d) the Newton matrices
    kept (d unknowns of the step, K = :data:`KEPT_SLOTS`), h (K,) the step size each was formed
    with, keep (K,) bool whether it may be tried (False at the start and after a step with that h
    that did not converge), slot (int) the next slot a matrix for a new step size goes to (round
    robin)."""

    q: Any
    p: Any
    lam: Any
    J: Any
    h: Any
    keep: Any
    slot: Any


def _solve(F, u0, state, h, reuse, *, max_iter, has_scale=False, **kw):
    """The step's Newton solve from u0: full Newton (``reuse`` 0, the default: a Jacobian per
    iteration), or simplified Newton with a kept matrix (``reuse`` = k ≥ 1: the state's matrix
    formed with this h, tried for at most k iterations, then a fresh one at u0;
    :func:`~dalembert.solvers.newton.newton_kept`). Returns (NewtonResult, the new state's
    (J, h, keep, slot) or None)."""
    if not reuse:
        return newton(F, u0, max_iter=max_iter, has_scale=has_scale, **kw), None
    residual = (lambda u: F(u)[0]) if has_scale else F
    h = jnp.asarray(h, state.h.dtype)
    match = state.h == h
    found = jnp.any(match & state.keep)
    i = jnp.where(found, jnp.argmax(match & state.keep), state.slot)
    res, J = newton_kept(F, jax.jacfwd(residual), u0, state.J[i], found, reuse, max_iter=max_iter,
                         has_scale=has_scale, **kw)
    kept = (state.J.at[i].set(J), state.h.at[i].set(h), state.keep.at[i].set(res.converged),
            jnp.where(found, state.slot, (state.slot + 1) % state.h.shape[0]))
    return res, kept


def _state(q, p, lam, kept):
    """The new state: MultiplierState, or KeptMatrixState when the step keeps matrices."""
    if kept is None:
        return MultiplierState(q, p, lam)
    return KeptMatrixState(q, p, lam, *kept)


def _kept_matrix_init(init, d):
    """``init`` whose state also carries KEPT_SLOTS zero (d, d) matrices not to be kept."""
    def wrapped(q0, v0, h=None):
        s0 = init(q0, v0, h)
        dt = s0.p.dtype
        return KeptMatrixState(s0.q, s0.p, s0.lam, jnp.zeros((KEPT_SLOTS, d, d), dt), jnp.zeros(KEPT_SLOTS, dt),
                               jnp.zeros(KEPT_SLOTS, bool), jnp.array(0, jnp.int32))
    return wrapped


def _newton_step(system, factor_fn, L_inc, rtol, max_iter, fd, reuse=0, estimate=False):
    """Any G(q) and L_d: Newton on (Δq, ℓ), Δq = q_{k+1} − q_k, with the rule in its increment
    form L_inc(q, Δq, h) = L_d(q, q + Δq, h) (:func:`~dalembert.methods.discrete_lagrangians.increment_form`)
    and ``fd(q, Δq, h)`` the discrete forces in the same form: D1 L_d = ∂_q L_inc − ∂_Δq L_inc,
    D2 L_d = ∂_Δq L_inc. The discrete velocity Δq/h is the unknown itself: solved for q_{k+1},
    (q_{k+1} − q_k)/h carried the rounding of q_{k+1}, ulp(q)/h, into the momentum at every step,
    biased where Δq is nearly constant (Euler's disk in its relative equilibrium, its angles at
    10⁵ rad: the energy drifted 1e-6 relative in 50 s; docs/long_runs.md). Newton's test is
    rtol (1 + ‖(Δq, ℓ)‖∞), or updates that stopped contracting below ε‖q‖∞ (about q's ulp, where
    F's configuration terms stall; solved for q_{k+1} the test was rtol (1 + ‖q_{k+1}‖∞), 1e-9 at
    10⁵ rad, and the last update's remainder drifted the energy 1e-8 in 50 s at h = 0.005).

    The new momentum is kept as an increment too: adding the two momentum equations,
    p_{k+1} = p_k + Δp with Δp = D1 L_d + D2 L_d + f_d⁻ + f_d⁺ − (μ(q_k) + μ(q_{k+1}))ᵀℓ
    = ∂_q L_inc + f_d⁻ + f_d⁺ − (μ(q_k) + μ(q_{k+1}))ᵀℓ (the same map), whose rounding is ε
    times the size of Δp's terms (O(h) forces) instead of ε|p_{k+1}|; the rounding of
    D2 L_d − μ(q_{k+1})ᵀℓ, the same every step where the motion repeats itself in a rotating frame
    (Euler's disk in its relative equilibrium), drifted the tilt α linearly, 1.5e-15 rad per
    step (docs/long_runs.md). When the state carries compensations (``compensated``, the default)
    q_k + Δq and p_k + Δp are Kahan sums, and the node constraint is solved at the summed
    (q_{k+1}, p_{k+1}), the one the state keeps."""
    def step(state, h):
        q, p, lam = state.q, state.p, state.lam
        c = getattr(state, "c", None)           # (a KeptMatrixState carries none)
        cq0, cp0 = (None, None) if c is None else c
        n = q.shape[0]
        mu0 = system.constraint_matrix(q)

        def node(q0, d, x_fixed):
            """(q_{k+1}, c_q'): the right node the state keeps, q0 + Δq (a Kahan sum with the
            compensation), or ``x_fixed`` with the compensation of its offset from q0 + Δq − c_q
            (its value, with the derivatives of q0 + Δq)"""
            if c is None:
                return q0 + d, None
            y = d - cq0
            t = q0 + y
            if x_fixed is not None:
                t = x_fixed + (t - jax.lax.stop_gradient(t))
            return t, (t - q0) - y

        def residual_and_next(d, ell, x_fixed=None):
            x, cq = node(q, d, x_fixed)
            # (∂_q, ∂_Δq) L_inc from one reverse pass, the right node moving with q0 and Δq
            gq, gd = jax.grad(lambda q0, dd: L_inc(q0, dd, h, None if c is None else node(q0, dd, x_fixed)[0]),
                              argnums=(0, 1))(q, d)
            fm, fp = fd(q, d, h, None if c is None else x)
            dp = gq + fm + fp - linalg.vm(ell, mu0 + system.constraint_matrix(x))
            p1, cp = compensated_add(p, dp, cp0)
            return jnp.concatenate([gd - gq - fm - p + linalg.vm(ell, mu0),
                                    _constraint(system, factor_fn(x), x, p1, h)]), (x, p1, cq, cp)

        ell0 = -0.5 * h * lam
        u0 = jnp.concatenate([h * factor_fn(q).solve(p - linalg.vm(ell0, mu0)), ell0])
        # (F's configuration terms see q + Δq only to ulp(q): an update that stalls below ε‖q‖∞ is accepted)
        F = (lambda u: residual_and_next(u[:n], u[n:])[0])
        res, kept = _solve(F, u0, state, h, reuse, rtol=rtol, max_iter=max_iter, atol=_EPS * jnp.max(jnp.abs(q)),
                           estimate=estimate)
        if c is not None:
            # the node where that iteration stalled, held: Newton on Δq at the kept node converges
            # (a constant: the step's derivatives are those of the moving node, by the implicit function theorem)
            x_fixed = jax.lax.stop_gradient(node(q, res.x[:n], None)[0])
            res2 = newton(lambda u: residual_and_next(u[:n], u[n:], x_fixed)[0], res.x, rtol=rtol,
                          max_iter=max_iter)
            res = res2._replace(converged=res.converged & res2.converged, iterations=res.iterations + res2.iterations,
                                cause=jnp.where(res.converged, res2.cause, res.cause))
        else:
            x_fixed = None
        ell = res.x[n:]
        x, p1, cq, cp = residual_and_next(res.x[:n], ell, x_fixed)[1]
        if kept is not None:
            return _state(x, p1, -(2.0 / h) * ell, kept), StepInfo.of(res)
        return (MultiplierState(x, p1, -(2.0 / h) * ell, None if c is None else (cq, cp)),
                StepInfo.of(res))
    return step


@dataclass(frozen=True, eq=False)
class SymmetricGNI(Method):
    """The self-adjoint one-step form of the GNI on D* (see the module docstring).

    Build options: ``fast_path`` (default True: the kick–drift–kick form when G is constant and
    L_d has a potential weight, e.g. L_d^SV), ``rtol``, ``max_iter`` (Newton), ``simplified``
    (default True: on the kick–drift–kick path, the m × m Jacobian is evaluated once per step, at
    the guess from the last step's multiplier — cheaper than a full iteration, same tolerance;
    False: a full Newton iteration), ``compensated`` (default True: on the kick–drift–kick path,
    the increments of q and p are summed by Kahan's method, :func:`~dalembert.methods.base.kahan_add`),
    ``compensated_newton`` (default False: on the Newton path for any G(q), without configuration
    constraints, Kahan sums of q_k + Δq and p_k + Δp, and Newton finished at the kept node: Euler's
    disk over 10⁴ s, α drifts 5.2e-11 rad against 2.3e-7 without; it costs about 40 % more a step
    and a second Newton loop in the compiled step, docs/long_runs.md).
    On the Newton paths (a q-dependent G, configuration constraints): ``jacobian_reuse`` (default
    0, off: full Newton, a Jacobian per iteration): an int k ≥ 1 solves the step by simplified
    Newton with the matrix kept across steps — the matrix of an earlier step (same h) is tried
    first, for at most k iterations, and formed afresh at the guess when they do not converge (the
    state then carries one per step size, up to :data:`KEPT_SLOTS`, so that the stages of a
    composition each reuse their own, :class:`KeptMatrixState`); ``newton_estimate`` (default False): the
    Newton test on the estimated error θ/(1 − θ)|Δu| (:func:`~dalembert.solvers.newton.newton`,
    ``estimate``). Both: Hairer–Wanner, Solving ODEs II, §IV.8; the same roots to the Newton
    tolerance (on the IFToMM bicycle: docs/benchmarks.md). ``compensated_newton`` and
    ``jacobian_reuse`` are not taken together (InputError).
    """

    discrete_lagrangian: Any = None

    def build(self, system, q0, *, fast_path: bool = True, rtol: float = RTOL,
              max_iter: int = MAX_ITER, simplified: bool = True, compensated: bool = True,
              compensated_newton: bool = False, jacobian_reuse: int = 0,
              newton_estimate: bool = False) -> Scheme:
        if not (isinstance(jacobian_reuse, int) and 0 <= jacobian_reuse <= max_iter):
            raise InputError(f"jacobian_reuse must be an int from 0 (off) to max_iter = {max_iter}; "
                             f"got {jacobian_reuse!r}")
        if compensated_newton and jacobian_reuse:
            raise InputError("compensated_newton=True and jacobian_reuse are not taken together; "
                             "pass one of them")
        L_d, a = dls.resolve(self.discrete_lagrangian, system)
        fd = dls.discrete_forces(self.discrete_lagrangian, system)
        factor_fn = system.factor_metric
        init = multiplier_init(system)
        velocity_force = system.has_force and system.force_depends_on_velocity(q0, jnp.zeros_like(q0))
        q0 = jnp.asarray(q0)
        n, m = q0.shape[0], system.constraint_matrix(q0).shape[0]
        if system.has_holonomic:
            step = _holonomic_newton_step(system, factor_fn, L_d, rtol, max_iter, fd, jacobian_reuse, newton_estimate)
            d = n + m + system.holonomic(q0).shape[0]
        elif fast_path and a is not None and system.constant_metric(q0) and not velocity_force:
            step = _kick_drift_kick(system, factor_fn, a, rtol, max_iter, simplified)
            if compensated:
                init = with_compensation(init)
            d = 0     # (one m × m solve per step: nothing to keep)
        else:
            step = _newton_step(system, factor_fn, dls.increment_form(self.discrete_lagrangian, system), rtol,
                                max_iter, dls.discrete_forces(self.discrete_lagrangian, system, increment=True),
                                jacobian_reuse, newton_estimate)
            d = n + m
            if compensated_newton:
                init = with_compensation(init)
        if jacobian_reuse and d:
            init = _kept_matrix_init(init, d)
        return Scheme(init, step, multiplier_observe(factor_fn))


_SRC = ("Ferraro, Jiménez, Martín de Diego, Nonlinearity 28 (2015) 871, (9a)/(27a) with one impulse "
        "per step split equally between the nodes, (9b)/(27b) at the new node")


def _traits(source, explicit_when=""):
    return Traits(
        order=2, symmetric=True, implicit=True, explicit_when=explicit_when,
        preserves=(Claim(Invariant.NODE_CONSTRAINT, "node constraint μ(q_k) G⁻¹p_k = ν(q_k)"),
                   holonomic_claim("configuration constraint φ(q_k) = 0 (RATTLE)")),
        accepts={Feature.AFFINE_CONSTRAINTS, Feature.CONFIGURATION_METRIC, Feature.HOLONOMIC_CONSTRAINTS,
                 Feature.FORCES, Feature.CONTROLS, Feature.EXPLICIT_TIME},
        node_velocity="v_k = G⁻¹p_k (on the constraint)", source=source,
        family="gni-symmetric", integrates=("nonholonomic",))


METHODS = (
    SymmetricGNI(
        name="nh-rattle-sym",
        traits=_traits(f"{_SRC}; L_d^SV (15)"),
        description="Nonholonomic RATTLE with one impulse per step: a self-adjoint map on D*, "
                    "the base of nh-rattle-4/-6/-8; never explicit (Newton on the m impulses only when "
                    "G is constant, on the whole step otherwise).",
        discrete_lagrangian=dls.stormer_verlet),
    SymmetricGNI(
        name="gni-midpoint-sym",
        traits=_traits(f"{_SRC}; L_d = h L((q0+q1)/2, (q1−q0)/h)"),
        description="GNI with the midpoint L_d and one impulse per step: a self-adjoint map on D*, "
                    "the base of gni-midpoint-4; any G(q).",
        discrete_lagrangian=dls.midpoint),
)
