"""Convergence studies: errors against the exact or reference solution and fitted orders.

The error of a run is measured at the final time, in the max-norm, for q and for the reported
node velocity v (each method's documented choice, compared with v(t) of the exact or reference
solution). The order is the least-squares slope of log(error) against log(h).

Models whose state is not (q, v) (e.g. ``suslov``: R (3, 3), ω (3,)) are compared on their first
two state arrays, named after the model's ``initial_state`` without the trailing 0 (R0 → R,
omega0 → omega), against the model's ``exact_solution`` or else its ``reference`` — whichever takes
the initial state by its names (``fn(t, R0=..., omega0=...)``) and returns the arrays in the
state's order or as a dict by array name; otherwise an InputError says so. The result's
``labels`` name the two arrays; ``errors_q``/``orders_q`` hold the first, ``errors_v``/``orders_v``
the second.
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
    model : a :class:`dalembert.models.Model` (``dl.models.get(...)``).
    method_names : iterable of method names or Method objects.
    hs : step sizes; t_final must be a multiple of each (the final time is ceil(T/h)·h).
    t_final : default the model's default_t_final.
    q0, v0 : initial state (default the model's) of a (q, v) model.
    initial_state : for other models, {name: array} overriding entries of the model's
        ``initial_state`` (e.g. {"omega0": ...} for ``suslov``).
    options : passed to ``integrate``.

    Returns
    -------
    ConvergenceResult.

    Raises
    ------
    InputError : a non-(q, v) model without an exact or reference solution, or with fewer than two
        state arrays; unknown initial-state names.
    """
    if model.q0 is None and q0 is None:
        return _convergence_state(model, method_names, hs, t_final, initial_state or {}, options)
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


def _array_name(state_name: str) -> str:
    return state_name[:-1] if state_name.endswith("0") and len(state_name) > 1 else state_name


def _takes_names(fn, names) -> bool:
    """True if ``fn`` accepts every name in ``names`` as a keyword argument."""
    import inspect
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return True
    return all(n in params and params[n].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                  inspect.Parameter.KEYWORD_ONLY) for n in names)


def _convergence_state(model, method_names, hs, t_final, overrides, options) -> ConvergenceResult:
    """convergence() for a model whose state is not (q, v) (see the module docstring)."""
    from .errors import InputError
    names = list(model.initial_state)
    unknown = set(overrides) - set(names)
    if unknown:
        raise InputError(f"{model.name}: unknown initial-state names {sorted(unknown)}; the state is "
                         f"{', '.join(names)}")
    if len(names) < 2:
        raise InputError(f"{model.name}: convergence compares two state arrays; the state is {names}")
    x0 = {k: np.asarray(overrides.get(k, v), float) for k, v in model.initial_state.items()}
    arrays = [_array_name(k) for k in names[:2]]
    T = float(t_final if t_final is not None else model.default_t_final)
    hs = np.asarray(sorted(hs, reverse=True), float)
    finals = sorted({round(step_count(h, T, 1) * h, 12) for h in hs})
    t_ref = np.array([0.0] + finals)
    candidates = [(model.exact_solution, "exact solution"), (model.reference, "the model's reference solution")]
    usable = [(f, label) for f, label in candidates if f is not None and _takes_names(f, names)]
    if not usable:
        raise InputError(
            f"{model.name}: convergence needs an exact or reference solution that takes the initial "
            f"state by its names ({', '.join(names)}); "
            + ("this model has none" if all(f is None for f, _ in candidates)
               else "this model's solution takes other arguments (not supported yet)"))
    fn, reference = usable[0]
    out = fn(t_ref, **x0)
    sol = dict(out) if isinstance(out, dict) else dict(zip([_array_name(k) for k in names], out))
    missing = [a for a in arrays if a not in sol]
    if missing:
        raise InputError(f"{model.name}: the solution has no arrays {missing}")
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
