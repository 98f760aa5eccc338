"""Newton's method for the nonlinear equations of implicit steps.

Jit-able and vmap-able: the iteration is a ``lax.while_loop``; the Jacobian comes from
``jax.jacfwd`` unless given; the linear solves are the small unrolled ones of
:mod:`dalembert.linalg`. The result carries a convergence flag that the engine turns into a
:class:`~dalembert.errors.ConvergenceError` naming the step (never a silent NaN).

With ``simplified=True`` (simplified, or chord, Newton) the Jacobian is evaluated and factored
once, at the initial guess, and reused by every iteration: the iteration then converges linearly,
with a rate proportional to the distance of the guess from the root, to the same root (the test
below bounds the last update, and the error is at most rate/(1 − rate) times it). For an implicit
step with an O(h^p) predictor it trades one or two extra (cheap) iterations for all but one
Jacobian and factorisation, which dominate the cost for a dozen or more unknowns.

Convergence test (DESIGN.md, "Numerical conventions"): ``‖Δx‖∞ ≤ rtol · (1 + ‖x‖∞)`` with
``rtol = 1e-14`` by default, within ``max_iter`` iterations; a non-finite iterate stops the
iteration as a failure.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from .. import linalg

#: Default relative tolerance on the Newton update.
RTOL = 1e-14
#: Default maximum number of Newton iterations per solve.
MAX_ITER = 40


class NewtonResult(NamedTuple):
    """Outcome of :func:`newton`.

    x : (d,) the last iterate;  converged : bool scalar;  iterations : int scalar.
    """

    x: jnp.ndarray
    converged: jnp.ndarray
    iterations: jnp.ndarray


def newton(
    F: Callable,
    x0,
    *,
    jacobian: Callable | None = None,
    rtol: float = RTOL,
    max_iter: int = MAX_ITER,
    simplified: bool = False,
) -> NewtonResult:
    """Solve F(x) = 0 by Newton's method.

    Parameters
    ----------
    F : callable (d,) -> (d,), traceable.
    x0 : (d,) initial guess.
    jacobian : optional callable (d,) -> (d, d); default ``jax.jacfwd(F)``.
    rtol : tolerance of the test ``‖Δx‖∞ ≤ rtol (1 + ‖x‖∞)``.
    max_iter : iteration limit.
    simplified : reuse the Jacobian at x0 (factored once, :func:`~dalembert.linalg.chord_factor`;
        under ``jax.vmap`` the members' matrices are eliminated with each update instead) in
        every iteration (see module doc).

    Returns
    -------
    NewtonResult(x, converged, iterations).
    """
    J = jacobian if jacobian is not None else jax.jacfwd(F)

    if simplified:
        factor = linalg.chord_factor(J(x0))

        def update(x):
            return linalg.chord_solve(factor, F(x))
    else:
        def update(x):
            return linalg.solve(J(x), F(x))

    def body(carry):
        x, _, it, _ = carry
        dx = update(x)
        x_new = x - dx
        size = jnp.max(jnp.abs(x_new))
        err = jnp.max(jnp.abs(dx))
        finite = jnp.isfinite(err) & jnp.isfinite(size)
        done = (err <= rtol * (1.0 + size)) | ~finite
        return x_new, finite, it + 1, done

    def cond(carry):
        _, _, it, done = carry
        return (~done) & (it < max_iter)

    init = (x0, jnp.array(True), jnp.array(0, jnp.int32), jnp.array(False))
    x, finite, it, done = lax.while_loop(cond, body, init)
    return NewtonResult(x, done & finite, it)
