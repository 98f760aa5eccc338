"""The model zoo's common shape: parameters with defaults, a bound model, and the registry.

A model module defines a :class:`ModelSpec` (name, parameters, a ``build(params)`` that returns a
:class:`Model`) and registers it. ``dl.models.get(name, **params)`` validates the parameters and
returns the bound model — built once per parameter set, so that compiled code is reused.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import InputError, UnknownNameError, did_you_mean


@dataclass(frozen=True)
class Parameter:
    """A model parameter: default value, meaning, unit, and an optional validity check.

    check : callable value -> error message or None.
    integer : the value must be an integer.
    """

    name: str
    default: float
    doc: str
    unit: str = ""
    check: Callable | None = None
    integer: bool = False


def map_state(fn, q, qdot, n_in: int, n_out: int) -> tuple:
    """(fn(q), its velocity along qdot) as NumPy arrays: a configuration map (n_in,) -> (n_out,)
    and its push-forward by forward-mode differentiation, vectorised over leading axes of q and
    qdot (…, n_in) -> (…, n_out). For models written in two coordinate systems."""
    import jax
    import jax.numpy as jnp
    f = lambda a, b: jax.jvp(fn, (a,), (b,))  # noqa: E731
    q, qdot = jnp.asarray(q, jnp.float64), jnp.asarray(qdot, jnp.float64)
    if q.ndim == 1:
        out = f(q, qdot)
    else:
        out = jax.vmap(f)(q.reshape(-1, n_in), qdot.reshape(-1, n_in))
        out = tuple(a.reshape(q.shape[:-1] + (n_out,)) for a in out)
    return tuple(np.asarray(a) for a in out)


def positive(x):
    return None if x > 0 else "must be > 0"


@dataclass(eq=False)
class Model:
    """A model with its parameters bound.

    name, params : the model name and the parameter values used.
    system : the NonholonomicSystem.
    q0, v0 : (n,) default initial state (constraint-consistent).
    coordinates : names of the n coordinates.
    path : indices of the two coordinates drawn as the configuration path.
    exact_solution : None or callable (t (N,), q0, v0) -> (q (N, n), v (N, n)) in closed form.
    invariants : {name: f(*node arrays named in ``invariant_args``) -> scalar} of quantities
        conserved by the continuous flow (default arguments: q, v).
    invariant_args : names of the Trajectory arrays the invariants take (default ("q", "v")).
    path_array : the Trajectory array whose components ``path`` are drawn (default "q").
    source : where the model and its data come from.
    default_method, default_h, default_t_final : what ``dalembert run MODEL`` uses.
    default_options : the build options of ``default_method`` (e.g. ``{"node_projection": True}``),
        passed with it wherever the default method runs (``dalembert run MODEL`` without
        ``--method``, the gallery's figures, ``default_run``); never to another method.
    almost_poisson : None or the hand-derived AlmostPoissonSystem in adapted coordinates
        ζ = (q, ρ) (Celledoni et al. 2019), with ``reduce(q, v) -> ζ`` and ``lift(ζ) -> (q, v)``.
    """

    name: str
    params: dict
    system: object
    q0: np.ndarray
    v0: np.ndarray
    coordinates: tuple
    source: str
    path: tuple = (0, 1)
    exact_solution: Callable | None = None
    invariants: dict = field(default_factory=dict)
    default_method: str = "nh-rattle"
    default_h: float = 0.01
    default_t_final: float = 10.0
    notes: str = ""
    almost_poisson: object = None
    invariant_args: tuple = ("q", "v")
    path_array: str = "q"
    #: the default initial state as ``{state name: array}`` in the order of
    #: ``system.state_names`` (e.g. {"R0": ..., "omega0": ...}); defaults to {"q0": q0, "v0": v0}
    initial_state: dict | None = None
    #: alternative systems for the same model, ``{name: system}`` (e.g. the rolling ball's
    #: right-trivialised homogeneous form under "reduced")
    forms: dict = field(default_factory=dict)
    #: None or callable (t (N,), **initial state) -> dict of node arrays: the model's own
    #: continuous reference solution (for system kinds the generic reference ODE does not handle)
    reference: Callable | None = None
    #: the methods ``dalembert convergence MODEL`` compares when none are named; None: for a
    #: (q, v) model the GNI family's nh-rattle, gni-euler-a and gni-euler-b (orders 2, 1, 1), else
    #: the default method
    convergence_methods: tuple | None = None
    #: the build options of ``default_method`` (e.g. ``{"node_projection": True}``), used with it
    #: wherever the default method runs (:meth:`options_for`); never given to another method
    default_options: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.convergence_methods is None:
            self.convergence_methods = (("nh-rattle", "gni-euler-a", "gni-euler-b") if self.initial_state is None
                                        else (self.default_method,))
        if self.initial_state is None:
            self.initial_state = {"q0": self.q0, "v0": self.v0}

    def solution(self, t, q0=None, v0=None):
        """(q, v) at times t (t[0] is the initial time, 0): the exact solution where there is
        one, else the reference ODE (DOP853, rtol = atol = 1e-13)."""
        from ..systems.index1_ode import reference_solution
        q0 = self.q0 if q0 is None else np.asarray(q0, float)
        v0 = self.v0 if v0 is None else np.asarray(v0, float)
        t = np.asarray(t, float)
        if self.exact_solution is not None:
            return self.exact_solution(t, q0, v0)
        q, v, _ = reference_solution(self.system, q0, v0, t)
        return q, v

    def options_for(self, method) -> dict:
        """The build options to run ``method`` (a name or a Method) with on this model: a copy of
        :attr:`default_options` for the default method, ``{}`` for any other."""
        name = getattr(method, "name", method)
        return dict(self.default_options) if name == self.default_method else {}

    def state0(self) -> tuple:
        """The default initial state as float64 arrays in ``system.state_names`` order."""
        return tuple(np.asarray(self.initial_state[k], float) for k in self.system.state_names)

    def state_solution(self, t, **state) -> tuple:
        """(named node arrays at times t, label of the source): the exact solution where the model
        has one, else its own reference, else its system kind's reference solution
        (``system.reference_solution``). ``state``: initial-state arrays by name (default the
        model's). Arrays are named as the methods name them (q, v; R, omega; x, R, xdot, xi)."""
        names = list(self.initial_state)
        unknown = set(state) - set(names)
        if unknown:
            raise InputError(f"{self.name}: unknown initial-state names {sorted(unknown)}; the state is "
                             f"{', '.join(names)}")
        x0 = {k: np.asarray(state.get(k, v), float) for k, v in self.initial_state.items()}
        arrays = [type(self.system).state_array(k) for k in names]
        t = np.asarray(t, float)
        for fn, label in ((self.exact_solution, "exact solution"), (self.reference, "the model's reference solution")):
            positional = names == ["q0", "v0"] and fn is self.exact_solution
            if fn is None or not (positional or _takes_names(fn, names)):
                continue
            out = fn(t, *x0.values()) if positional else fn(t, **x0)
            return (dict(out) if isinstance(out, dict) else dict(zip(arrays, out))), label
        return (self.system.reference_solution(*x0.values(), t=t),
                "reference solution (DOP853, rtol = atol = 1e-13)")

    @property
    def has_exact_solution(self) -> bool:
        return self.exact_solution is not None


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


@dataclass(frozen=True)
class ModelSpec:
    """A registered model: ``build(params: dict) -> Model``."""

    name: str
    title: str
    parameters: tuple
    build: Callable
    source: str
    description: str = ""
    #: None or ``params -> system``, traceable in the parameters (for ``jax.grad`` and
    #: ``dl.ensemble(params=...)``): see :func:`factory`
    system: Callable | None = None

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.parameters}

    def resolve(self, params: dict) -> dict:
        """Defaults overridden by ``params``, validated (unknown names, types, ranges)."""
        known = {p.name: p for p in self.parameters}
        out = self.defaults()
        for k, val in params.items():
            if k not in known:
                choices = ", ".join(known) or "(this model has no parameters)"
                raise UnknownNameError(f"model {self.name!r} has no parameter {k!r}{did_you_mean(k, known)}; "
                                       f"valid: {choices}")
            p = known[k]
            try:
                x = float(val)
            except (TypeError, ValueError):
                raise InputError(f"parameter {k} of {self.name} must be a number; got {val!r}") from None
            if not np.isfinite(x):
                raise InputError(f"parameter {k} of {self.name} must be finite; got {val!r}")
            if p.integer:
                if x != int(x):
                    raise InputError(f"parameter {k} of {self.name} must be an integer; got {val!r}")
                x = int(x)
            msg = p.check(x) if p.check else None
            if msg:
                raise InputError(f"parameter {k} of {self.name} {msg}; got {val!r}")
            out[k] = x
        return out


_SPECS: dict[str, ModelSpec] = {}
_BUILT: dict = {}


def register(spec: ModelSpec) -> ModelSpec:
    _SPECS[spec.name] = spec
    return spec


def spec(name: str) -> ModelSpec:
    try:
        return _SPECS[name]
    except KeyError:
        raise UnknownNameError(f"unknown model {name!r}{did_you_mean(name, _SPECS)}; choose from: "
                               f"{', '.join(sorted(_SPECS))}") from None


def get(name: str, **params) -> Model:
    """The model ``name`` with parameters (defaults for the rest); cached per parameter set.

    Raises
    ------
    UnknownNameError (model or parameter name), InputError (bad value).
    """
    s = spec(name)
    p = s.resolve(params)
    key = (name, tuple(sorted(p.items())))
    if key not in _BUILT:
        _BUILT[key] = s.build(p)
    return _BUILT[key]


def factory(name: str) -> Callable:
    """``params -> system`` of the model ``name``: its system built from a dict of parameters
    (missing ones take their defaults) without checks or conversions in Python, so that the
    parameters may be traced — differentiated (``jax.grad`` through :func:`dalembert.solve`,
    docs/gradients.md) or batched (``dl.ensemble(factory, ..., params=...)``). Only the system:
    the exact solution and default data come from :func:`get` with concrete values.

    Raises UnknownNameError (model), InputError (a model without a traceable factory; the message
    lists those that have one).
    """
    s = spec(name)
    if s.system is None:
        have = ", ".join(sorted(n for n, x in _SPECS.items() if x.system is not None))
        raise InputError(f"model {name!r} has no traceable factory (models with one: {have}); build "
                         f"the system yourself from your parameters (docs/gradients.md)")
    known = {p.name for p in s.parameters}

    def make(params=None):
        params = dict(params or {})
        unknown = set(params) - known
        if unknown:
            raise UnknownNameError(f"model {name!r} has no parameter(s) {sorted(unknown)}; valid: "
                                   f"{', '.join(sorted(known))}")
        return s.system({**s.defaults(), **params})
    make.__name__ = f"{name.replace('-', '_')}_factory"
    return make


def available() -> dict:
    """``{name: ModelSpec}`` of the registered models."""
    return dict(_SPECS)
