"""Newton's method for the nonlinear equations of implicit steps.

Jit-able and vmap-able: the iteration is a ``lax.while_loop``; the Jacobian comes from
``jax.jacfwd`` unless given; the linear solves are the small unrolled ones of
:mod:`dalembert.linalg`. Differentiable in both modes by the implicit function theorem: the
solve is a ``jax.lax.custom_root``, whose derivative at the root x is
dx = −(∂F/∂x)⁻¹ (∂F/∂θ) dθ for whatever F closes over (one solve with the Jacobian at the root,
never through the iterations; docs/gradients.md). The result carries a convergence flag that
the engine turns into a :class:`~dalembert.errors.ConvergenceError` naming the step (never a
silent NaN).

With ``simplified=True`` (simplified, or chord, Newton) the Jacobian is evaluated and factored
once, at the initial guess, and reused by every iteration: the iteration then converges linearly,
with a rate proportional to the distance of the guess from the root, to the same root (the test
below bounds the last update, and the error is at most rate/(1 − rate) times it). For an implicit
step with an O(h^p) predictor it trades one or two extra (cheap) iterations for all but one
Jacobian and factorisation, which dominate the cost for a dozen or more unknowns. With the default
Jacobian the first update takes F(x0) from the forward pass that forms J(x0) (one evaluation of F
fewer per solve).

Convergence test (DESIGN.md, "Numerical conventions"): ``‖Δx‖∞ ≤ rtol · (1 + ‖x‖∞)`` with
``rtol = 1e-14`` by default, within ``max_iter`` iterations. For a residual that reports the
sizes S_i of its components' terms (``has_scale``) the test is componentwise,
``|Δx_i| ≤ max(rtol (1 + |x_i|), ROUNDOFF · ε · S_i)``: each unknown to its own size (a heading
of 140 rad does not loosen the test of a momentum of size 1), and no tighter than the round-off
of the residual's own terms, which no iteration reduces (a state of size 50 whose terms h Π ∇H
are 10³ cannot reach 1e-14 relative to itself). The round-off of a large component reaches the
others through the Jacobian's inverse, so once the updates stop contracting (one at least half
the previous) ``‖Δx‖∞ ≤ max(ROUNDOFF · ε · max_i S_i, STALL_SLACK · rtol (1 + ‖x‖∞))`` is
accepted too. A solve that
stops without converging reports why (:data:`CAUSES`): a non-finite iterate, divergence, a
tolerance that is not reachable (the updates stalled close to it), or too few iterations.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .. import linalg

#: Default relative tolerance on the Newton update.
RTOL = 1e-14
#: Default maximum number of Newton iterations per solve.
MAX_ITER = 40
#: The round-off floor of the update: ROUNDOFF · ε · (size of the residual's terms).
ROUNDOFF = 32.0
_EPS = float(np.finfo(np.float64).eps)

#: Why a step failed (``NewtonResult.cause``, ``StepInfo.cause``): code -> (what, what helps).
CONVERGED, NOT_REACHABLE, DIVERGED, NON_FINITE, CHART, MAX_ITERATIONS, FAILED, INVARIANT, PARASITIC = range(9)
CAUSES = {
    CONVERGED: ("converged", ""),
    NOT_REACHABLE: ("the Newton tolerance is not reachable (the updates stalled just above it, at "
                    "the round-off of the step's equations)", "pass a larger rtol (e.g. rtol=1e-12)"),
    DIVERGED: ("the Newton iteration diverged", "try a smaller h"),
    NON_FINITE: ("a non-finite value appeared (in the Newton iterates or the new state)",
                 "check the system's functions near this state, or try a smaller h"),
    CHART: ("the chart of the reduced coordinates degenerated within the step",
            "try a smaller h (the atlas switches charts between steps)"),
    MAX_ITERATIONS: ("the Newton iteration did not converge within max_iter iterations "
                     "(still contracting)", "pass a larger max_iter, or try a smaller h"),
    FAILED: ("the step's solver did not converge", "try a smaller h"),
    INVARIANT: ("the system's data broke an invariant at this state (a mass matrix that is not "
                "symmetric, a Poisson matrix that is not skew), checked at the saved nodes and "
                "every check_every steps", "check the system's functions near this state"),
    PARASITIC: ("a parasitic period-2 (sawtooth) mode grew above the stop threshold "
                "(on_parasitic='stop')", "use a DLA or one-step method, or a smaller h "
                "(see dalembert.monitors)"),
}


def describe(cause: int) -> str:
    """'what happened; what helps' for a cause code (:data:`CAUSES`)."""
    what, helps = CAUSES.get(int(cause), CAUSES[FAILED])
    return f"{what}; {helps}" if helps else what
#: With a reported scale, updates that stopped contracting are accepted within this multiple of
#: the tolerance (measured: a tilting disk whose metric has condition number 1.4e3 stalls at
#: 1e-13 relative to the state, above the round-off floor of the residual's terms).
STALL_SLACK = 100.0
#: An update this small relative to the state counts as stalling near the tolerance.
STALL = 1e-8


class NewtonResult(NamedTuple):
    """Outcome of :func:`newton`.

    x : (d,) the last iterate;  converged : bool scalar;  iterations : int scalar;
    cause : int32 scalar, a key of :data:`CAUSES` (CONVERGED when converged).
    """

    x: jnp.ndarray
    converged: jnp.ndarray
    iterations: jnp.ndarray
    cause: jnp.ndarray = None


def newton(
    F: Callable,
    x0,
    *,
    jacobian: Callable | None = None,
    rtol: float = RTOL,
    max_iter: int = MAX_ITER,
    simplified: bool = False,
    has_scale: bool = False,
    estimate: bool = False,
    atol=None,
) -> NewtonResult:
    """Solve F(x) = 0 by Newton's method.

    Parameters
    ----------
    F : callable (d,) -> (d,), traceable; with ``has_scale``, (d,) -> ((d,), S (d,)), S_i the
        size of the terms of the residual's component i (e.g. max(|y_i|, |x_i|, h (|Π| |∇H|)_i)
        for y − x − hΠ∇H).
    x0 : (d,) initial guess.
    jacobian : optional callable (d,) -> (d, d) of the residual; default ``jax.jacfwd``.
    rtol : tolerance of the test ``‖Δx‖∞ ≤ rtol (1 + ‖x‖∞)``.
    max_iter : iteration limit.
    simplified : reuse the Jacobian at x0 (factored once, :func:`~dalembert.linalg.chord_factor`;
        under ``jax.vmap`` the members' matrices are eliminated with each update instead) in
        every iteration (see module doc).
    has_scale : F also returns S; the test is then componentwise, each unknown to its own
        tolerance or round-off floor: ``|Δx_i| ≤ max(rtol (1 + |x_i|), ROUNDOFF · ε · S_i)``.
    estimate : test the estimated error of the returned iterate, η|Δx| with η = θ/(1 − θ) and
        θ = ‖Δx_k‖∞/‖Δx_{k−1}‖∞ the observed contraction (η = 1 for the first update and while
        θ ≥ 1/2), instead of |Δx| itself: the iterate is returned as soon as the
        error left in it is within the tolerance, one iteration earlier than the plain test when
        the iteration contracts fast (Hairer–Wanner, Solving ODEs II, §IV.8, (8.10)–(8.11)).
    atol : optional scalar (traceable, without ``has_scale``): an update ``‖Δx‖∞ ≤ atol`` that
        is no smaller than half the previous one (the iteration stalled) is accepted too — for
        unknowns that are increments of a larger state, whose equations see that state only to
        its ulp).

    Returns
    -------
    NewtonResult(x, converged, iterations, cause).
    """
    Fs = F if has_scale else (lambda x: (F(x), jnp.zeros(())))
    residual = (lambda x: Fs(x)[0]) if has_scale else F
    J = jacobian if jacobian is not None else jax.jacfwd(residual)

    def make_update(x_start):
        """(first, update): the Newton update x ↦ (J⁻¹F(x), S), and for the simplified iteration
        its value at ``x_start`` (None for full Newton, whose loop forms it): J at ``x_start``,
        factored once; with the default Jacobian the first update takes F(x_start) from the pass
        that forms J(x_start) (its primal: one evaluation fewer)."""
        if simplified:
            if jacobian is None:
                J0, rS0 = jax.jacfwd(_with_aux(Fs), has_aux=True)(x_start)
            else:
                J0, rS0 = J(x_start), Fs(x_start)
            factor = linalg.chord_factor(J0)
            return _chord_update(factor, rS0), (lambda x: _chord_update(factor, Fs(x)))
        # (full Newton forms its first update inside the loop: one copy of J and F in the program)
        return None, (lambda x: _full_update(J(x), Fs(x)))

    def test(x, dx, S, it, err0, err_min, err_prev):
        """The convergence test of the update dx at x (``it`` updates before it): the carry
        entries for x_new = x − dx."""
        x_new = x - dx
        size = jnp.max(jnp.abs(x_new))
        err = jnp.max(jnp.abs(dx))
        finite = jnp.isfinite(err) & jnp.isfinite(size)
        err0 = jnp.where(it == 0, err, err0)
        # the error left in x_new: |dx| itself, or with ``estimate`` θ/(1 − θ)|dx| once two updates
        # show a contraction θ = |dx_k| / |dx_{k−1}| < 1 (Hairer–Wanner II, §IV.8, (8.10)–(8.11))
        theta = err / err_prev
        eta = jnp.where((it >= 1) & (theta < 0.5), theta / (1.0 - theta), 1.0) if estimate else 1.0
        if has_scale:   # componentwise: each unknown to its own tolerance or round-off floor
            tol = jnp.maximum(rtol * (1.0 + jnp.abs(x_new)), ROUNDOFF * _EPS * S)
            # the round-off of a large component reaches the others through J⁻¹: once the
            # updates stop contracting, the floor of the largest terms is accepted for all
            # (and so is a stall within STALL_SLACK × rtol: the residual's intermediate terms, e.g.
            # those of an ill-conditioned metric's factor, can exceed the terms S reports)
            stalled = err >= 0.5 * err_prev
            floor = jnp.maximum(ROUNDOFF * _EPS * jnp.max(S), STALL_SLACK * rtol * (1.0 + size))
            ok = jnp.all(eta * jnp.abs(dx) <= tol) | (stalled & (err <= floor))
        else:
            ok = eta * err <= rtol * (1.0 + size)
            if atol is not None:       # stalled (no longer contracting) at or below atol
                ok = ok | ((err >= 0.5 * err_prev) & (err <= atol))
        diverging = (it >= 2) & (err > 1e4 * err0)
        done = ok | ~finite | diverging
        return finite, it + 1, done, err0, jnp.minimum(err_min, err / (1.0 + size)), ok, err

    def body(carry, update):
        # apply the pending update, then form and test the next one
        x, dx, _, it, _, err0, err_min, _, err_prev = carry
        x = x - dx
        dx, S = update(x)
        return (x, dx) + test(x, dx, S, it, err0, err_min, err_prev)

    def cond(carry):
        return (~carry[4]) & (carry[3] < max_iter)

    def iterate(_, x0):
        inf = jnp.array(jnp.inf)
        # (the chord factor is formed here, from iterate's own argument: all that depends on
        # what F closes over stays inside the solve that custom_root does not differentiate)
        first, update = make_update(x0)
        if first is None:   # the loop's first pass applies a zero update and forms J⁻¹F(x0)
            init = (x0, jnp.zeros_like(x0), jnp.array(True), jnp.array(0, jnp.int32), jnp.array(False),
                    inf, inf, jnp.array(False), inf)
        else:
            init = (x0, first[0]) + test(x0, *first, jnp.array(0, jnp.int32), inf, inf, inf)
        x, dx, finite, it, _, err0, err_min, conv, _ = lax.while_loop(cond, lambda c: body(c, update), init)
        x = x - dx
        conv = conv & finite
        cause = jnp.where(conv, CONVERGED,
                          jnp.where(~finite, NON_FINITE,
                                    jnp.where(err_min <= STALL, NOT_REACHABLE,
                                              jnp.where(err_min * 10.0 >= err0 / (1.0 + jnp.max(jnp.abs(x))),
                                                        DIVERGED, MAX_ITERATIONS))))
        # (the flags travel as floats: custom_root gives its aux float tangents, jax 0.10)
        return x, jnp.stack([conv, it, cause]).astype(x.dtype)

    # the root's derivatives by the implicit function theorem (never through the iterations):
    # dx = −(∂F/∂x)⁻¹ (∂F/∂θ) dθ for whatever F closes over (state, h, the system's parameters)
    x, aux = lax.custom_root(residual, x0, iterate, _tangent_solve, has_aux=True)
    aux = lax.stop_gradient(aux)
    return NewtonResult(x, aux[0] > 0.5, aux[1].astype(jnp.int32), aux[2].astype(jnp.int32))


def _with_aux(Fs):
    """x ↦ (r, (r, S)) from one evaluation of Fs, for ``jacfwd(..., has_aux=True)``: the residual
    and its aux (its primal value and the scale) from one trace of F, not one for r and another
    for (r, S)."""
    def f(x):
        r, S = Fs(x)
        return r, (r, S)
    return f


def _chord_update(factor, rS):
    r, S = rS
    return linalg.chord_solve(factor, r), S


def _full_update(J, rS):
    r, S = rS
    return linalg.solve(J, r), S


def _tangent_solve(g, y):
    """Solve g(x) = y for the linear map g (the residual's derivative at the root), with its
    matrix formed column by column and the transposable solve of :func:`linalg.tangent_solve`."""
    J = jax.jacfwd(g)(y)
    return linalg.tangent_solve(J, y)


def newton_kept(F: Callable, jacobian: Callable, x0, J_prev, may_keep, reuse_iter, *, max_iter: int = MAX_ITER,
                **kw) -> tuple:
    """Simplified Newton for F(x) = 0 from x0 with the Newton matrix kept across steps: the
    matrix ``J_prev`` (d, d) of an earlier step is tried first (when ``may_keep``, a bool scalar:
    e.g. it was formed with this step size and its step converged), for at most ``reuse_iter``
    iterations; if that does not converge, the matrix is formed afresh at x0 by ``jacobian``
    ((d,) -> (d, d)) and the solve restarts from x0 with ``max_iter`` iterations (Hairer–Wanner,
    Solving ODEs II, §IV.8: the Jacobian of simplified Newton kept over steps, recomputed when the
    iteration does not converge fast enough). ``kw``: the other options of :func:`newton` (rtol,
    has_scale, estimate, atol). The root and its test are those of the solve with a fresh matrix;
    the cost is one matrix per refresh instead of one per step. Jit-, vmap- and reverse-mode-able
    (the two attempts are a ``lax.scan``, not a while loop).

    Returns (NewtonResult with the iterations of both attempts, the matrix used last (d, d)).
    """
    def attempt(c):
        tries, _, J_old, its = c
        old = (tries == 0) & may_keep
        J = lax.cond(old, lambda: J_old, lambda: lax.stop_gradient(jacobian(x0)))
        res = newton(F, x0, jacobian=lambda _: J, max_iter=jnp.where(old, reuse_iter, max_iter),
                     simplified=True, **kw)
        return tries + 1 + jnp.where(old, 0, 1), res, J, its + res.iterations

    def body(c, _):   # at most two attempts
        done = (c[0] >= 2) | c[1].converged
        return lax.cond(done, lambda c: c, attempt, c), None

    none = NewtonResult(jnp.zeros_like(x0), jnp.array(False), jnp.array(0, jnp.int32), jnp.array(FAILED, jnp.int32))
    (_, res, J, its), _ = lax.scan(body, (jnp.array(0), none, J_prev, jnp.array(0, jnp.int32)), None, length=2)
    return res._replace(iterations=its), J
