"""The reference solution of a NonholonomicSystem: the index-1 Lagrange–d'Alembert ODE integrated
with SciPy's DOP853.

State y = (q, v) with q̇ = v, v̇ = a(q, v) from :meth:`NonholonomicSystem.acceleration`
(``G a = f + μᵀλ``, ``μ a + μ̇ v = ν̇``; Ferraro–Jiménez–Martín de Diego 2015 (2) and (17)), at
rtol = atol = 1e-13 by default. The right-hand side is compiled once per system with ``jax.jit``
(kept with the system). The velocity constraint is not re-projected: its drift is reported in the
trajectory's ``constraint_residual`` (typically ≲ 1e-12).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import clock
from .._cache import cached
from ..errors import ConvergenceError


def _rhs(system, n):
    """The compiled right-hand side (t, y = (q, v)) -> (v, a(q, v, t)), shape (2n,): a system with a
    force is evaluated on the clock at t (:mod:`dalembert.clock`; the step index of a control
    array from :meth:`~dalembert.NonholonomicSystem.step_index`)."""
    def make():
        def f(t, y):
            q, v = y[:n], y[n:]
            with clock.at(t, system.step_index(t) if getattr(system, "timed", False) else 0):
                return jnp.concatenate([v, system.acceleration(q, v)])
        return jax.jit(f)
    return cached(system, ("index-1 rhs", n), make)


def reference_solution(system, q0, v0, t, *, rtol: float = 1e-13, atol: float = 1e-13,
                       method: str = "DOP853"):
    """Integrate the index-1 ODE and return (q, v) at the times t.

    Parameters
    ----------
    system : NonholonomicSystem.
    q0, v0 : (n,) consistent initial state at t[0].
    t : (N+1,) increasing output times.
    rtol, atol : SciPy tolerances.  method : a SciPy ``solve_ivp`` method name.

    Returns
    -------
    q, v : numpy arrays of shape (N+1, n); and the SciPy result (for nfev).

    Raises
    ------
    ConvergenceError if SciPy reports a failure.
    """
    from scipy.integrate import solve_ivp  # imported here: SciPy's import slows start-up

    q0 = np.asarray(q0, np.float64)
    n = q0.size
    rhs = _rhs(system, n)
    t = np.asarray(t, np.float64)
    y0 = np.concatenate([q0, np.asarray(v0, np.float64)])
    sol = solve_ivp(lambda tau, y: np.asarray(rhs(tau, y)), (t[0], t[-1]), y0, method=method,
                    t_eval=t, rtol=rtol, atol=atol)
    if not sol.success:
        raise ConvergenceError(f"reference ODE solver failed: {sol.message}", step=-1,
                               time=float(sol.t[-1]) if sol.t.size else float(t[0]))
    return sol.y[:n].T, sol.y[n:].T, sol
