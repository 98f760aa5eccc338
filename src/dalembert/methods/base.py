"""What a method is: a pure one-step map with traits, and the registry that lists them.

A method builds, for a given system, a :class:`Scheme` of three pure functions:

* ``init(q0, v0, h) -> state`` — the internal state at t_0 from constraint-consistent (q0, v0);
* ``step(state, h) -> (state, StepInfo)`` — one step t_k → t_{k+1};
* ``observe(state, h) -> Observation`` — what is reported at the node: q_k, a constraint-consistent
  velocity v_k (each method documents its choice in ``traits.node_velocity``), the momentum p_k
  and, where the method has one, the multiplier λ_k (Lagrange–d'Alembert sign convention).

The engine compiles ``step`` into a ``lax.scan``; no Python runs per step. A new method is one
module that defines a :class:`Method` subclass and its instances in a ``METHODS`` tuple, which
``dalembert.methods`` registers (:func:`register`; a user's own method needs no registration:
pass the object). Its ``traits.integrates`` names the system kinds it takes; the engine refuses
any other kind before ``build`` runs (:func:`dalembert.methods.kinds.resolve`).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

import jax.numpy as jnp

from ..declarations import Claim, Feature, Invariant
from ..errors import UnknownNameError, did_you_mean


class StepInfo(NamedTuple):
    """Per-step solver statistics: converged (bool), iterations (int; 0 for explicit steps) and
    cause (int32: why a step failed, a key of :data:`dalembert.solvers.newton.CAUSES`; None when
    the method does not say)."""

    converged: Any
    iterations: Any
    cause: Any = None

    @classmethod
    def of(cls, res) -> "StepInfo":
        """The StepInfo of a step that is one Newton solve (a NewtonResult)."""
        return cls(res.converged, res.iterations, res.cause)


def has_holonomic(system) -> bool:
    """Whether a system has configuration constraints φ(q) = 0 (``NonholonomicSystem.has_holonomic``;
    False for kinds without them)."""
    return bool(getattr(system, "has_holonomic", False))


class StepRoundoff:
    """The round-off sizes of a step's Newton unknowns, for its componentwise test (``has_scale``),
    from what is fixed at the step's start (q, its momentum p, h), computed once per step.

    :meth:`impulse`: an impulse ℓ moves the new node by h G⁻¹Mᵀℓ (M = constraint_matrix(q)), so
    the node's own round-off, ε|x|, leaves ℓ uncertain by about ε|x| / (h max|G⁻¹Mᵀ|) — a floor that
    grows as h shrinks, above an absolute tolerance rtol(1 + |ℓ|) at small h (measured:
    ``nh-rattle-sym`` with configuration constraints stalled at h = 2e-4 without it).
    :meth:`sizes`: for the unknowns (x (n,), r impulses): the node is uncertain by the rounding of x
    and by h G⁻¹ applied to that of the momenta, ε(|x| + h max|G⁻¹| |p|) (an ill-conditioned
    metric — a bicycle's wheels — makes the second dominate), the impulses by :meth:`impulse` and
    by ε|p| / max|M|."""

    def __init__(self, system, factor, q, p, h):
        M = system.constraint_matrix(q)
        self.q, self.h = q, jnp.abs(h)
        self.c = jnp.maximum(jnp.max(jnp.abs(factor.solve(M.T))), jnp.finfo(jnp.float64).tiny)
        self.ginv = jnp.max(jnp.abs(factor.solve(jnp.eye(q.shape[0], dtype=jnp.float64))))
        self.pmax = jnp.max(jnp.abs(p))
        self.mmax = jnp.maximum(jnp.max(jnp.abs(M)), 1e-300)

    def impulse(self, x):
        """The round-off size of an impulse (scalar) for the new node x (n,)."""
        return jnp.max(jnp.abs(x)) / (self.h * self.c)

    def sizes(self, x, r):
        """Sizes (n + r,) of the unknowns (x, r impulses)."""
        sx = jnp.maximum(jnp.abs(x), jnp.abs(self.q)) + self.h * self.ginv * self.pmax
        return jnp.concatenate([sx, jnp.full(r, self.impulse(x) + self.pmax / self.mmax)])


def holonomic_claim(statement: str) -> Claim:
    """The claim "φ(q_k) = 0 at every node" of a method that imposes configuration constraints,
    measured on systems that have them (:func:`has_holonomic`)."""
    return Claim(Invariant.HOLONOMIC_CONSTRAINT, statement, condition="configuration constraints",
                 holds_for=has_holonomic)


def kahan_add(y, delta, c):
    """``(y + delta, c')`` by Kahan's compensated summation: c is the rounding error of the earlier
    additions still owed to y (carried in the state between steps, zeros at the start). Over N steps
    the round-off of the sum grows like ε·|y| (not N·ε·|y|), which matters when the increments are
    small against the state (angles that grow with t, 10⁷ steps). Arrays of any matching shapes.

    Source: W. Kahan, Comm. ACM 8 (1965) 40; Hairer–Lubich–Wanner, Geometric Numerical Integration
    (2006), §VIII.5, Algorithm 5.1.
    """
    d = delta - c
    t = y + d
    return t, (t - y) - d


def compensated_add(y, delta, c):
    """``(y + delta, c')``: by :func:`kahan_add` when the state carries a compensation c, plainly
    (c' = None) when c is None (a state built without compensations steps as it was built)."""
    return (y + delta, None) if c is None else kahan_add(y, delta, c)


def with_compensation(init):
    """``init(...)`` whose state (a NamedTuple with fields q, p and c) starts with zero
    compensations c = (c_q, c_p) for :func:`compensated_add`."""
    def wrapped(*args):
        st = init(*args)
        return st._replace(c=(jnp.zeros_like(st.q), jnp.zeros_like(st.p)))
    return wrapped


def explicit_info():
    """The StepInfo of an explicit step."""
    return StepInfo(jnp.array(True), jnp.array(0, jnp.int32))


class Observation(NamedTuple):
    """Node values: q (n,), v (n,), p (n,), lam (m,) or None."""

    q: Any
    v: Any
    p: Any
    lam: Any = None


class MomentumState(NamedTuple):
    """q: (n,) configuration q_k;  p: (n,) momentum p_k = G v_k (one-step methods on T*Q)."""

    q: Any
    p: Any


def momentum_init(system):
    """init(q0, v0, h) -> MomentumState(q0, G(q0) v0)."""
    def init(q0, v0, h=None):
        q0 = jnp.asarray(q0)
        return MomentumState(q0, system.momentum(q0, jnp.asarray(v0)))
    return init


class MultiplierState(NamedTuple):
    """A one-step method on D* that keeps the multiplier of its last step (reported, and the next
    Newton guess): q (n,), p (n,) = G v on the constraint, lam (m,); c: None, or the compensations
    (c_q, c_p) of the summed q and p (:func:`compensated_add`)."""

    q: Any
    p: Any
    lam: Any
    c: Any = None


def multiplier_init(system):
    """init(q0, v0, h) -> MultiplierState(q0, G(q0) v0, λ(q0, v0)) (the exact multiplier)."""
    def init(q0, v0, h=None):
        q0, v0 = jnp.asarray(q0), jnp.asarray(v0)
        return MultiplierState(q0, system.momentum(q0, v0), system.multiplier(q0, v0))
    return init


def multiplier_observe(factor_fn):
    """observe(state, h) -> {q, p, v = G⁻¹p, lam} of a :class:`MultiplierState`."""
    def observe(state, h=None):
        return {"q": state.q, "p": state.p, "v": factor_fn(state.q).solve(state.p), "lam": state.lam}
    return observe


def observation_dict(obs) -> dict:
    """A method's observation (a dict, or a NamedTuple such as :class:`Observation`) as a dict
    without the entries that are None."""
    d = dict(obs) if isinstance(obs, dict) else obs._asdict()
    return {k: v for k, v in d.items() if v is not None}


def momentum_observe(factor_fn):
    """observe(state, h) -> {q, p, v = G⁻¹p} with factor_fn(q) a MetricFactor."""
    def observe(state, h=None):
        return {"q": state.q, "p": state.p, "v": factor_fn(state.q).solve(state.p)}
    return observe


@dataclass(frozen=True)
class Scheme:
    """A method bound to a system: pure ``init``, ``step``, ``observe`` (see module doc)."""

    init: Callable
    step: Callable
    observe: Callable
    #: the method's traits say its step is never explicit (implicit, no ``explicit_when``): the
    #: engine then takes the checked loop without tracing the step to find out
    #: (:func:`~dalembert.engine.loop.never_fails`; saves a trace of the step, docs/benchmarks.md)
    never_explicit: bool = False


@dataclass(frozen=True)
class Traits:
    """Queryable properties of a method.

    order : global order of accuracy (in q and in the reported v).
    symmetric : time-symmetric (self-adjoint) for symmetric discrete Lagrangians.
    implicit : needs a nonlinear solve in general (see ``explicit_when``).
    preserves : the structure it keeps exactly (to round-off): a tuple of
        :class:`~dalembert.declarations.Claim` (an :class:`~dalembert.declarations.Invariant`
        with its formula, source and condition).
    node_velocity : what the method reports as v_k.
    source : paper and equation.
    family : method family (module).
    explicit_when : condition under which the step is explicit ('' if never / always).
    integrates : the system kinds it integrates (``SystemKind.kind`` names, e.g.
        ``("nonholonomic",)``); other kinds reach it only through a registered view
        (:mod:`dalembert.systems.kind`). Empty: not declared (the system is passed as it is).
    accepts : the system features (:class:`~dalembert.declarations.Feature`) it integrates; a
        system with any other feature is refused before anything is traced
        (:func:`dalembert.methods.resolve`). None: not declared (no feature is checked; a user's
        own Method).
    two_step : its state is a two-step map (q_k, p⁺_k) with a parasitic period-2 mode, which the
        engine monitors (:mod:`dalembert.monitors`).
    self_adjoint : its step, as a map of its state, is self-adjoint (Φ_{−h} = Φ_h⁻¹), so that
        symmetric compositions raise its order (:func:`~dalembert.methods.compose`). Default:
        symmetric and not two-step.

    Raises TypeError when ``preserves`` holds anything but Claims or ``accepts`` anything but
    Features.
    """

    order: int
    symmetric: bool
    implicit: bool
    preserves: tuple = ()
    node_velocity: str = ""
    source: str = ""
    family: str = ""
    explicit_when: str = ""
    integrates: tuple = ()
    accepts: frozenset | None = None
    two_step: bool = False
    self_adjoint: bool | None = None

    def __post_init__(self):
        bad = [p for p in self.preserves if not isinstance(p, Claim)]
        if bad:
            raise TypeError(f"Traits.preserves holds dalembert.declarations.Claim objects; got {bad[0]!r}")
        if self.accepts is not None:
            object.__setattr__(self, "accepts", frozenset(self.accepts))
            bad = [f for f in self.accepts if not isinstance(f, Feature)]
            if bad:
                raise TypeError(f"Traits.accepts holds dalembert.declarations.Feature members; got {bad[0]!r}")
        if self.self_adjoint is None:
            object.__setattr__(self, "self_adjoint", bool(self.symmetric and not self.two_step))

    def invariants(self) -> tuple:
        """The invariants of :attr:`preserves`, in order, each once."""
        return tuple(dict.fromkeys(c.invariant for c in self.preserves))

    def as_dict(self) -> dict:
        return {
            "order": self.order, "symmetric": self.symmetric, "implicit": self.implicit,
            "explicit_when": self.explicit_when, "preserves": [c.as_dict() for c in self.preserves],
            "node_velocity": self.node_velocity, "source": self.source, "family": self.family,
            "integrates": list(self.integrates),
            "accepts": None if self.accepts is None else sorted(f.label for f in self.accepts),
            "two_step": self.two_step, "self_adjoint": self.self_adjoint,
        }


@dataclass(frozen=True, eq=False)
class Method:
    """Base class of the integrators. Subclasses implement :meth:`build`.

    ``compiled`` is False for methods that do not run in the compiled engine (the SciPy
    reference); those implement :meth:`solve` instead.
    """

    name: str
    traits: Traits
    description: str = ""
    compiled: bool = field(default=True)

    def build(self, system, q0) -> Scheme:  # pragma: no cover - abstract
        raise NotImplementedError

    def options(self) -> dict | None:
        """The build options it takes, ``{name: default}``: the keyword-only parameters of
        :meth:`build` (the engine checks a run's options against them before ``build`` runs);
        None when ``build`` takes ``**options`` (not declared: nothing is checked)."""
        params = inspect.signature(self.build).parameters.values()
        if any(p.kind is p.VAR_KEYWORD for p in params):
            return None
        return {p.name: p.default for p in params if p.kind is p.KEYWORD_ONLY}

    def __repr__(self):
        return f"<method {self.name}: order {self.traits.order}, {self.traits.family}>"


_REGISTRY: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add a method to the registry under ``method.name`` (names are unique)."""
    if method.name in _REGISTRY:
        raise ValueError(f"method {method.name!r} registered twice")
    _REGISTRY[method.name] = method
    return method


def get(name_or_method) -> Method:
    """The registered method of that name (a Method object is returned as is).

    Raises
    ------
    UnknownNameError naming the valid choices.
    """
    if isinstance(name_or_method, Method):
        return name_or_method
    try:
        return _REGISTRY[name_or_method]
    except (KeyError, TypeError):
        raise UnknownNameError(
            f"unknown method {name_or_method!r}{did_you_mean(name_or_method, _REGISTRY)}; choose from: "
            f"{', '.join(sorted(_REGISTRY))}") from None


def available() -> dict:
    """Registered methods: ``{name: Traits}``, in registration order."""
    return {name: m.traits for name, m in _REGISTRY.items()}


def registry() -> dict:
    """Registered methods: ``{name: Method}``, in registration order."""
    return dict(_REGISTRY)
