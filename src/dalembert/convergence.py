"""Convergence studies: errors against the exact or reference solution and fitted orders.

The error of a run is measured at the final time, in the max-norm, for q and for the reported
node velocity v (each method's documented choice, compared with v(t) of the exact or reference
solution). The order is the least-squares slope of log(error) against log(h).

Every model is compared on its first two state arrays, named after the model's
``initial_state`` without the trailing 0 (q0 → q, v0 → v; R0 → R, omega0 → omega), against
:meth:`~dalembert.models.base.Model.state_solution`. The result's ``labels`` name the two arrays;
``errors_q``/``orders_q`` hold the first, ``errors_v``/``orders_v`` the second.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import methods as _methods
from .engine import integrate, step_count


#: an error below this multiple of the machine epsilon (times the solution's scale) is round-off
ROUNDOFF_FACTOR = 10.0


def roundoff_floor(scale=1.0, factor: float = ROUNDOFF_FACTOR) -> float:
    """factor · ε · max(1, |scale|): the size below which an error is round-off, not truncation."""
    return float(factor * np.finfo(float).eps * max(1.0, float(np.max(np.abs(scale)))))


def fitted_order(hs, errors, *, floor: float = 0.0, min_points: int | None = None) -> float:
    """Least-squares slope of log(errors) vs log(hs) over the errors above ``floor``.

    An error at the round-off floor (e.g. :func:`roundoff_floor`) says nothing about the order and
    pulls a high-order fit up or down; pass ``floor`` to drop such errors and ``min_points`` (at
    least 2) for how many must remain (default: all of them).

    Raises
    ------
    ValueError if an error is not finite, or fewer than ``min_points`` errors are above ``floor``.
    """
    hs, errors = np.asarray(hs, float), np.asarray(errors, float)
    if not np.all(np.isfinite(errors)):
        raise ValueError(f"the errors must be finite to fit an order: {errors}")
    min_points = errors.size if min_points is None else max(2, int(min_points))
    keep = errors > floor
    if keep.sum() < min_points:
        raise ValueError(f"only {int(keep.sum())} of {errors.size} errors are above {floor:.1e} "
                         f"(need {min_points} to fit an order): {errors}")
    return float(np.polyfit(np.log(hs[keep]), np.log(errors[keep]), 1)[0])


@dataclass
class ConvergenceResult:
    """hs (k,), errors_q / errors_v {method: (k,)}, orders_q / orders_v {method: float}.

    labels : the names of the two compared state arrays (("q", "v"), or e.g. ("R", "omega")).
    """

    model: str
    t_final: float
    hs: np.ndarray
    errors_q: dict = field(default_factory=dict)
    errors_v: dict = field(default_factory=dict)
    orders_q: dict = field(default_factory=dict)
    orders_v: dict = field(default_factory=dict)
    reference: str = ""
    labels: tuple = ("q", "v")

    def as_dict(self) -> dict:
        return {"model": self.model, "t_final": self.t_final, "h": self.hs.tolist(),
                "reference": self.reference, "labels": list(self.labels),
                "errors_q": {k: v.tolist() for k, v in self.errors_q.items()},
                "errors_v": {k: v.tolist() for k, v in self.errors_v.items()},
                "orders_q": self.orders_q, "orders_v": self.orders_v}


def convergence(model, method_names, hs, t_final=None, q0=None, v0=None, *, initial_state=None,
                **options) -> ConvergenceResult:
    """Run each method at each step size and fit the orders.

    Parameters
    ----------
    model : a :class:`dalembert.models.Model` (``dl.models.get(...)``), or a system of your own
        (any system kind, e.g. a ``NonholonomicSystem``) with its initial state (``q0``, ``v0``
        or ``initial_state``) and ``t_final``: it is then compared with its kind's reference
        solution (``system.reference_solution``; for a ``NonholonomicSystem`` the index-1 ODE by
        DOP853, rtol = atol = 1e-13).
    method_names : iterable of method names or Method objects.
    hs : step sizes; t_final must be a multiple of each (the final time is ceil(T/h)·h).
    t_final : default the model's default_t_final.
    q0, v0 : initial state of a (q, v) model (shorthand for ``initial_state={"q0": .., "v0": ..}``).
    initial_state : {name: array} overriding entries of the model's ``initial_state``
        (e.g. {"omega0": ...} for ``suslov``).
    options : passed to ``integrate``.

    The first two state arrays are compared (q and v; R and ω; x and R) at the final time, in the
    max-norm, against :meth:`Model.state_solution` (exact, the model's reference, or the system
    kind's reference solution).

    Returns
    -------
    ConvergenceResult.

    Raises
    ------
    InputError : fewer than two state arrays, unknown initial-state names, a kind without a
        reference solution; for a system of your own, a missing initial state or t_final.
    """
    from .errors import InputError
    from .models.base import Model
    from .systems.kind import SystemKind
    if isinstance(model, SystemKind):
        model = _user_model(model, t_final, q0, v0, initial_state)
        q0 = v0 = initial_state = None
    if not isinstance(model, Model):
        got = f"the string {model!r}" if isinstance(model, str) else type(model).__name__
        hint = f"dl.models.get({model!r})" if isinstance(model, str) else "dl.models.get(name)"
        raise InputError(f"dl.convergence: model must be a model of the zoo, e.g. {hint} (it carries the "
                         f"system, initial state and reference solution; dl.models.available() lists "
                         f"them), or a system of your own with q0=, v0=, t_final=; got {got}")
    if isinstance(method_names, (str, _methods.Method)):
        method_names = [method_names]
    try:
        hs_list = [float(h) for h in np.ravel(np.asarray(hs, dtype=object))] if hs is not None else []
    except (TypeError, ValueError):
        raise InputError(f"dl.convergence: hs must be step sizes (numbers); got {hs!r}") from None
    if not all(np.isfinite(h) and h > 0 for h in hs_list):
        raise InputError(f"dl.convergence: every step size must be finite and > 0; got {hs_list}")
    if len(set(hs_list)) < 2:
        raise InputError(f"dl.convergence: an order is fitted to the errors of at least two different step "
                         f"sizes; got hs = {hs_list}: pass e.g. hs=[0.1, 0.05, 0.025]")
    overrides = dict(initial_state or {})
    overrides.update({k: v for k, v in (("q0", q0), ("v0", v0)) if v is not None})
    names = list(model.initial_state)
    if len(names) < 2:
        raise InputError(f"{model.name}: convergence compares two state arrays; the state is {names}")
    arrays = [type(model.system).state_array(k) for k in names[:2]]
    T = float(t_final if t_final is not None else model.default_t_final)
    hs = np.asarray(sorted(hs, reverse=True), float)
    finals = sorted({round(step_count(h, T, 1) * h, 12) for h in hs})
    sol, reference = model.state_solution(np.array([0.0] + finals), **overrides)
    missing = [a for a in arrays if a not in sol]
    if missing:
        raise InputError(f"{model.name}: the solution has no arrays {missing}")
    x0 = {k: np.asarray(overrides.get(k, v), float) for k, v in model.initial_state.items()}
    ref = {t: [np.asarray(sol[a])[i + 1] for a in arrays] for i, t in enumerate(finals)}
    res = ConvergenceResult(model.name, T, hs, reference=reference, labels=tuple(arrays))
    for name in method_names:
        m = _methods.get(name)
        errs = ([], [])
        for h in hs:
            traj = integrate(model.system, m, h=h, t_final=T, progress=False, **x0, **options)
            target = ref[round(traj.t[-1], 12)]
            for e, a, r in zip(errs, arrays, target):
                e.append(np.max(np.abs(np.asarray(getattr(traj, a))[-1] - r)))
        res.errors_q[m.name], res.errors_v[m.name] = np.array(errs[0]), np.array(errs[1])
        res.orders_q[m.name] = fitted_order(hs, errs[0])
        res.orders_v[m.name] = fitted_order(hs, errs[1])
    return res



def _user_model(system, t_final, q0, v0, initial_state):
    """A :class:`~dalembert.models.base.Model` around a user's system for :func:`convergence`:
    its initial state from ``q0``/``v0`` or ``initial_state``, no exact solution (the kind's
    reference solution is the comparison)."""
    from .errors import InputError
    from .models.base import Model
    names = tuple(system.state_names)
    state = dict(initial_state or {})
    state.update({k: v for k, v in (("q0", q0), ("v0", v0)) if v is not None})
    missing = [k for k in names if k not in state]
    if missing or t_final is None:
        need = ", ".join(f"{k}=..." for k in missing) + (", t_final=..." if t_final is None else "")
        raise InputError(f"dl.convergence of a system of your own needs its initial state and final time: "
                         f"pass {need.lstrip(', ')}")
    unknown = sorted(set(state) - set(names))
    if unknown:
        raise InputError(f"dl.convergence: unknown initial-state names {unknown}; {system.name} takes "
                         f"{', '.join(names)}")
    x0 = {k: np.asarray(state[k], float) for k in names}
    first = x0[names[0]]
    return Model(name=getattr(system, "name", "system"), params={}, system=system, q0=first,
                 v0=x0[names[1]] if len(names) > 1 else first,
                 coordinates=tuple(f"{names[0][:-1]}[{i}]" for i in range(first.size)),
                 source="a system of your own", default_t_final=float(t_final), initial_state=x0,
                 default_method="auto")
