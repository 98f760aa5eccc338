"""Reference solutions: the index-1 Lagrange–d'Alembert ODE integrated with SciPy's DOP853.

State y = (q, v) with q̇ = v, v̇ = a(q, v) from :meth:`NonholonomicSystem.acceleration`
(``G a = f + μᵀλ``, ``μ a + μ̇ v = ν̇``; spec ``gni-2015-new-developments.md`` §1.1 and §8),
at rtol = atol = 1e-13 by default (DESIGN.md, "Reference solutions"). The right-hand side is
compiled once with ``jax.jit``. The velocity constraint is not re-projected: its drift is
reported in the trajectory's ``constraint_residual`` (typically ≲ 1e-12).
"""
from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ConvergenceError
from .base import Method

_RHS_CACHE: dict = {}


def _rhs(system, n):
    key = (id(system), n)
    if key not in _RHS_CACHE:
        def f(y):
            q, v = y[:n], y[n:]
            return jnp.concatenate([v, system.acceleration(q, v)])
        _RHS_CACHE[key] = (system, jax.jit(f))  # keep the system alive with its entry
    return _RHS_CACHE[key][1]


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
    from scipy.integrate import solve_ivp  # imported here: it costs 0.4 s at start-up

    q0 = np.asarray(q0, np.float64)
    n = q0.size
    rhs = _rhs(system, n)
    t = np.asarray(t, np.float64)
    y0 = np.concatenate([q0, np.asarray(v0, np.float64)])
    sol = solve_ivp(lambda _t, y: np.asarray(rhs(y)), (t[0], t[-1]), y0, method=method,
                    t_eval=t, rtol=rtol, atol=atol)
    if not sol.success:
        raise ConvergenceError(f"reference ODE solver failed: {sol.message}", step=-1,
                               time=float(sol.t[-1]) if sol.t.size else float(t[0]))
    return sol.y[:n].T, sol.y[n:].T, sol


@dataclass(frozen=True, eq=False)
class Reference(Method):
    """The index-1 ODE with DOP853 at rtol = atol = 1e-13 (ground truth for tests/experiments)."""

    def solve(self, system, *state, rtol: float = 1e-13, atol: float = 1e-13,
              ode_method: str = "DOP853"):
        """(q, v, info) at times t from ``solve(system, q0, v0, t)``; see :func:`reference_solution`.

        For system kinds whose state is not (q, v) — a ReducedSystem (state x0, R0, xdot0, xi0) or a
        LieNonholonomicSystem (R0, omega0) — returns ``(arrays, info)`` with the node arrays named
        as the kind's compiled methods name them (x, R, xdot, xi / R, omega), from the kind's own
        DOP853 reference (:func:`dalembert.systems.reduced.reference_solution`,
        :func:`dalembert.systems.lie_nonholonomic.reference_solution`).

        Raises InputError for other system kinds.
        """
        *x0s, t = state
        kind = getattr(system, "kind", None)
        info = {"rtol": rtol, "atol": atol, "ode_method": "DOP853"}
        if kind == "reduced":
            from ..systems.reduced import reference_solution as reduced_reference
            out = reduced_reference(system, *x0s, t, rtol=rtol, atol=atol)
            return {k: np.asarray(out[k]) for k in ("x", "R", "xdot", "xi")}, info
        if kind == "lie-nonholonomic":
            from ..systems.lie_nonholonomic import reference_solution as lie_reference
            R, omega = lie_reference(system, *x0s, t, rtol=rtol, atol=atol)
            return {"R": np.asarray(R), "omega": np.asarray(omega)}, info
        if len(x0s) != 2 or not hasattr(system, "acceleration") or \
                tuple(getattr(system, "state_names", ("q0", "v0"))) != ("q0", "v0"):
            from ..errors import InputError
            names = ", ".join(getattr(system, "state_names", ()))
            raise InputError(f"method 'reference' integrates (q, v) systems, ReducedSystem and "
                             f"LieNonholonomicSystem through dl.integrate; "
                             f"{getattr(system, 'name', 'this system')} has state ({names}): use the "
                             f"reference or exact solution of its model")
        q0, v0 = x0s
        q, v, sol = reference_solution(system, q0, v0, t, rtol=rtol, atol=atol, method=ode_method)
        return q, v, {"nfev": int(sol.nfev), "rtol": rtol, "atol": atol, "ode_method": ode_method}
