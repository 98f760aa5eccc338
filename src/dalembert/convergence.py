"""Convergence studies: errors against the exact or reference solution and fitted orders.

The error of a run is measured at the final time, in the max-norm, for q and for the reported
node velocity v (each method's documented choice, compared with v(t) of the exact or reference
solution). The order is the least-squares slope of log(error) against log(h).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import methods as _methods
from .engine import integrate, step_count


def fitted_order(hs, errors) -> float:
    """Least-squares slope of log(errors) vs log(hs)."""
    hs, errors = np.asarray(hs, float), np.asarray(errors, float)
    return float(np.polyfit(np.log(hs), np.log(errors), 1)[0])


@dataclass
class ConvergenceResult:
    """hs (k,), errors_q / errors_v {method: (k,)}, orders_q / orders_v {method: float}."""

    model: str
    t_final: float
    hs: np.ndarray
    errors_q: dict = field(default_factory=dict)
    errors_v: dict = field(default_factory=dict)
    orders_q: dict = field(default_factory=dict)
    orders_v: dict = field(default_factory=dict)
    reference: str = ""

    def as_dict(self) -> dict:
        return {"model": self.model, "t_final": self.t_final, "h": self.hs.tolist(),
                "reference": self.reference,
                "errors_q": {k: v.tolist() for k, v in self.errors_q.items()},
                "errors_v": {k: v.tolist() for k, v in self.errors_v.items()},
                "orders_q": self.orders_q, "orders_v": self.orders_v}


def convergence(model, method_names, hs, t_final=None, q0=None, v0=None, **options) -> ConvergenceResult:
    """Run each method at each step size and fit the orders.

    Parameters
    ----------
    model : a :class:`dalembert.models.Model` (``dl.models.get(...)``).
    method_names : iterable of method names or Method objects.
    hs : step sizes; t_final must be a multiple of each (the final time is ceil(T/h)·h).
    t_final : default the model's default_t_final.
    q0, v0 : initial state (default the model's).
    options : passed to ``integrate``.

    Returns
    -------
    ConvergenceResult.
    """
    if model.q0 is None and q0 is None:
        from .errors import InputError
        raise InputError(f"convergence compares (q, v) states; {model.name} has the state "
                         f"{', '.join(model.initial_state)} (use its experiments instead)")
    T = float(t_final if t_final is not None else model.default_t_final)
    q0 = model.q0 if q0 is None else np.asarray(q0, float)
    v0 = model.v0 if v0 is None else np.asarray(v0, float)
    hs = np.asarray(sorted(hs, reverse=True), float)
    finals = sorted({round(step_count(h, T, 1) * h, 12) for h in hs})
    t_ref = np.array([0.0] + finals)
    q_ref, v_ref = model.solution(t_ref, q0, v0)
    ref = {t: (q_ref[i + 1], v_ref[i + 1]) for i, t in enumerate(finals)}
    res = ConvergenceResult(model.name, T, hs,
                            reference="exact solution" if model.has_exact_solution
                            else "reference ODE (DOP853, rtol=atol=1e-13)")
    for name in method_names:
        m = _methods.get(name)
        eq, ev = [], []
        for h in hs:
            traj = integrate(model.system, m, q0=q0, v0=v0, h=h, t_final=T, progress=False, **options)
            qT, vT = ref[round(traj.t[-1], 12)]
            eq.append(np.max(np.abs(traj.q[-1] - qT)))
            ev.append(np.max(np.abs(traj.v[-1] - vT)))
        res.errors_q[m.name] = np.array(eq)
        res.errors_v[m.name] = np.array(ev)
        res.orders_q[m.name] = fitted_order(hs, eq)
        res.orders_v[m.name] = fitted_order(hs, ev)
    return res
