"""The system-kind protocol: what every kind of continuous model tells the rest of dalembert.

A *system kind* is a class of continuous models with one kind of state — ``NonholonomicSystem``
(q, v) on Rⁿ, ``AlmostPoissonSystem`` x on R^N, ``EulerPoincareSuslovSystem`` and
``LieNonholonomicSystem`` (R, ω) on SO(3), ``ReducedSystem`` (x, R, ẋ, ξ) on Rⁿ × SO(3). Each
subclasses :class:`SystemKind` and declares

* ``kind`` — its name (a subclass of a kind may declare its own: a ``LeftInvariantSystem`` is
  ``"left-invariant"`` and, as a subclass, also ``"euler-poincare-suslov"``; :meth:`kinds`);
* ``state_names`` — the keywords of the initial state in ``dl.integrate`` (``("q0", "v0")``);
* ``path_array`` — the node array that traces the configuration (plots);
* :meth:`check_initial_state` — validated float64 arrays of one initial state;
* :meth:`initial_states_ok` — optionally, a vectorised check of many (ensembles);
* :meth:`diagnostics` — energy, constraint residual and kind-specific values at a node, from
  the named node arrays a method reports (traceable);
* :meth:`reference_solution` — the kind's ground truth at given times, or
  :class:`NoReferenceError`.

Every method declares the kinds it integrates (``Traits.integrates``). A method may also take a
kind it does not integrate through a registered **view** (:func:`register_view`): the
almost-Poisson reduction of a ``NonholonomicSystem`` for the discrete-gradient methods, a
symmetric ``EulerPoincareSuslovSystem`` as a ``LieNonholonomicSystem`` for the Lie-group GNI.
:func:`find_view` picks the view (or none) that makes a system one of the kinds a method
accepts; :func:`dalembert.methods.kinds.resolve` applies it to a method, or raises one
:class:`~dalembert.errors.InputError` naming both sides, before anything is traced.
"""
from __future__ import annotations

import hashlib
import weakref
from typing import Callable, ClassVar, NamedTuple

import jax
import numpy as np

from ..errors import InputError, SystemDefinitionError


def _depends_on_input(fn: Callable, x) -> bool:
    """True if the traced output of ``fn(x)`` depends on ``x`` (jaxpr data-flow analysis).

    Conservative: any equation with a dependent input makes all its outputs dependent, except a
    call of an inner jaxpr (``jax.jit``, :func:`traced_once`), which is followed inside.
    """
    closed = jax.make_jaxpr(fn)(x)
    return any(_dependent_outputs(closed.jaxpr, [True] * len(closed.jaxpr.invars)))


def _dependent_outputs(jaxpr, dependent_inputs) -> list:
    """Which outputs of ``jaxpr`` depend on the inputs flagged in ``dependent_inputs``."""
    dep = {id(v) for v, d in zip(jaxpr.invars, dependent_inputs) if d}
    for eqn in jaxpr.eqns:
        flags = [type(v).__name__ != "Literal" and id(v) in dep for v in eqn.invars]
        if not any(flags):
            continue
        inner = eqn.params.get("jaxpr")
        inner = getattr(inner, "jaxpr", inner)
        if inner is not None and hasattr(inner, "eqns") and len(inner.invars) == len(flags):
            out = _dependent_outputs(inner, flags)
            dep.update(id(v) for v, d in zip(eqn.outvars, out) if d)
        else:
            dep.update(id(v) for v in eqn.outvars)
    return [type(v).__name__ != "Literal" and id(v) in dep for v in jaxpr.outvars]


def traced_once(owner, fn: Callable | None) -> Callable | None:
    """``fn`` (a user's callable) wrapped in ``jax.jit`` once per ``owner`` (a system): its jaxpr
    is traced once per argument shape and reused by every program that calls it (the step, the
    start, the checks, the diagnostics) and by their derivatives and vmaps, which transform the
    jaxpr instead of running the user's Python again. A metric written as ``jax.hessian`` of a
    kinetic energy was traced some 25 times in one first ``dl.integrate`` call otherwise.
    XLA inlines the call, so the compiled step is the same. None stays None."""
    if fn is None:
        return None
    cache = owner.__dict__.setdefault("_traced_once", {})
    hit = cache.get(id(fn))
    if hit is None or hit[0] is not fn:
        hit = cache[id(fn)] = (fn, jax.jit(fn, inline=True))
    return hit[1]


def _positional_count(fn, unknown: int = 3) -> int:
    """How many positional arguments ``fn`` takes without a default (4 for a callable with *args;
    ``unknown`` for one whose signature cannot be read)."""
    import inspect
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return unknown
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return 4
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty for p in params)


def refuse_complex(x, label: str):
    """Raise SystemDefinitionError when the array ``x`` (NumPy, JAX or nested lists) has a complex dtype: a
    cast to float64 would drop its imaginary part silently. ``label`` names it (e.g.
    "suslov: inertia")."""
    try:
        dtype = np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype
    except (TypeError, ValueError):
        return
    if np.issubdtype(dtype, np.complexfloating):
        raise SystemDefinitionError(f"{label} is complex ({dtype}); it must be real: pass a real array "
                           f"(the imaginary part would be dropped)")


def check_spd(M, label: str):
    """Raise SystemDefinitionError unless the concrete matrix M is finite, symmetric (max |M − Mᵀ| ≤
    1e-12 max(1, max |M|)) and positive definite (λ_min > 1e-12 max(1, |λ_max|)); ``label`` names
    it in the message (e.g. "suslov: inertia")."""
    if not np.all(np.isfinite(M)):
        raise SystemDefinitionError(f"{label} has non-finite entries")
    if np.max(np.abs(M - M.T)) > 1e-12 * max(1.0, float(np.max(np.abs(M)))):
        raise SystemDefinitionError(f"{label} is not symmetric")
    eig = np.linalg.eigvalsh(M)
    if eig[0] <= 1e-12 * max(1.0, abs(eig[-1])):
        raise SystemDefinitionError(f"{label} is not positive definite (eigenvalues {eig})")


def checked_group(group, name: str):
    """The matrix Lie group of a system: SO(3) for None, ``group`` itself if it is a
    :class:`~dalembert.lie.groups.MatrixLieGroup`; raises SystemDefinitionError naming the system otherwise."""
    from ..lie.groups import SO, MatrixLieGroup
    group = SO(3) if group is None else group
    if not isinstance(group, MatrixLieGroup):
        raise SystemDefinitionError(f"{name}: group must be a dalembert.lie.groups.MatrixLieGroup (e.g. dl.lie.SE(2)); "
                           f"got {group!r}")
    return group


#: probe states of :meth:`SystemKind.fingerprint` (the initial state and perturbations of it)
FINGERPRINT_PROBES = 3
FINGERPRINT_SEED = 20260339


def _rounded(value) -> str:
    """A value's shape and entries as text, rounded to 11 digits after the point relative to
    max(1, max |finite entry|) (NaN and ±inf as such)."""
    try:
        a = np.asarray(value, np.float64)
    except (TypeError, ValueError):
        return repr(type(value).__name__)
    finite = a[np.isfinite(a)]
    scale = max(1.0, float(np.max(np.abs(finite)))) if finite.size else 1.0
    r = np.round(a / scale, 11) + 0.0                # + 0.0: −0 and 0 alike
    return f"{a.shape} {scale:.11e} " + " ".join(f"{x:.11e}" for x in r.ravel())


class NoReferenceError(InputError):
    """The system kind has no reference solution (use the model's exact solution, or another kind)."""


#: :meth:`SystemKind.kinds` of each class (computed once; weak: a class made at run time may go)
_KINDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class SystemKind:
    """Base of every system kind (see module doc). Subclasses set the class attributes and
    implement :meth:`check_initial_state` and :meth:`diagnostics`."""

    #: the kind's name, e.g. "nonholonomic"
    kind: ClassVar[str] = ""
    #: keyword names of the initial state in ``dl.integrate``
    state_names: ClassVar[tuple] = ()
    #: node array that traces the configuration path (plots)
    path_array: ClassVar[str] = "q"
    #: the node arrays the kind reports, with roles and units
    #: (:class:`~dalembert.declarations.NodeArray`; the first velocity array is the scale of
    #: relative constraint residuals)
    node_arrays: ClassVar[tuple] = ()
    #: the node arrays on which a method's global order is fitted (conformance): the configuration,
    #: or the velocity for kinds whose reconstruction is of lower order than their velocity map
    order_arrays: ClassVar[tuple] = ("q",)
    name: str = "system"

    @classmethod
    def state_array(cls, state_name: str) -> str:
        """The node array an initial-state keyword gives (``"q0"`` → ``"q"``).

        Raises InputError for a name that is not one of the kind's ``state_names``."""
        for a in cls.node_arrays:
            if a.state == state_name:
                return a.name
        raise InputError(f"{state_name!r} is not an initial-state name of a {cls.kind} system; "
                         f"the state is {', '.join(cls.state_names)}")

    @classmethod
    def arrays_with(cls, *roles) -> tuple:
        """Names of the declared node arrays with any of these roles, in declaration order."""
        return tuple(a.name for a in cls.node_arrays if a.role in roles)

    @classmethod
    def kinds(cls) -> tuple:
        """This kind and the kinds it specialises (most specific first), e.g.
        ``("left-invariant", "euler-poincare-suslov")``."""
        got = _KINDS.get(cls)            # (per class: dl.integrate asks several times a call)
        if got is None:
            out = []
            for c in cls.__mro__:
                k = c.__dict__.get("kind")
                if isinstance(k, str) and k and k not in out:
                    out.append(k)
            got = _KINDS[cls] = tuple(out)
        return got

    def check_initial_state(self, *state, project: bool = False) -> tuple:  # pragma: no cover
        """Validated float64 NumPy arrays of one initial state (in ``state_names`` order).

        Raises InputError / ConstraintViolationError naming the problem."""
        raise NotImplementedError

    def initial_states_ok(self, *batches):
        """(B,) bool: which of B initial states pass every value check, in one vectorised call;
        None when the kind has no vectorised check (the members are then checked one by one)."""
        return None

    def diagnostics(self, obs: dict) -> dict:  # pragma: no cover
        """Node diagnostics (traceable) from the named node arrays: at least ``energy`` (scalar)
        and ``constraint_residual`` (k,)."""
        raise NotImplementedError

    def step_check_value(self, obs: dict):
        """A scalar (traceable) that the engine requires to be finite after every step: by default
        the node's ``energy`` (a potential log(x) can go NaN while its gradient, and so the state,
        stays finite). A kind may return something cheaper that is finite exactly when the energy
        of a finite state is (see :meth:`NonholonomicSystem.step_check_value`)."""
        return self.diagnostics(obs).get("energy")

    def features(self, *state0) -> frozenset:
        """The :class:`~dalembert.declarations.Feature` members this system has (affine constraints,
        a configuration-dependent metric, …): a method integrates it only if it accepts every one
        (``Traits.accepts``). ``state0``: one initial state, where deciding a feature needs a
        configuration (whether a callable metric depends on it). Default: none."""
        return frozenset()

    def fingerprint_values(self, *state) -> dict:
        """The values that identify this system's content at one state (:meth:`fingerprint`):
        by default its :meth:`diagnostics` at the node the state gives and, when the kind has
        one, its ``vector_field`` (which involves forces, metric, constraints). A kind may add
        more."""
        obs = {self.state_array(name): x for name, x in zip(self.state_names, state)}
        out = dict(self.diagnostics(obs))
        vf = getattr(self, "vector_field", None)
        if callable(vf):
            out["vector_field"] = vf(*state)
        return out

    def fingerprint(self, *state0) -> str:
        """A hex digest that identifies the system by content (not by name), for checking that a
        checkpoint is resumed with the system that wrote it: its class, kinds and state shapes,
        and :meth:`fingerprint_values` at :data:`FINGERPRINT_PROBES` fixed probe states (the
        initial state ``state0`` and deterministic small perturbations of it), each value
        rounded to 11 digits after the point relative to its array's scale (so that round-off
        does not matter and any change of a callable's values does), and a concrete (N, c)
        control array (``control_array()``), every row, rounded alike. A value that cannot be
        evaluated at a probe counts by its exception's type."""
        import jax

        from .._cache import cached
        state0 = tuple(np.asarray(x, np.float64) for x in state0)
        # one compiled call per probe (eager ops would compile one by one), kept with the system
        evaluate = cached(self, "fingerprint values", lambda: jax.jit(self.fingerprint_values))
        digest = hashlib.sha256()
        digest.update(repr((type(self).__module__, type(self).__qualname__, self.kinds(),
                            [x.shape for x in state0])).encode())
        rng = np.random.default_rng(FINGERPRINT_SEED)
        for k in range(FINGERPRINT_PROBES):
            probe = tuple(x if k == 0 else x + 0.05 * (1.0 + np.abs(x)) * rng.uniform(-1.0, 1.0, x.shape)
                          for x in state0)
            try:
                values = evaluate(*probe)
            except Exception as exc:          # noqa: BLE001 — its type is part of the fingerprint
                digest.update(f"probe {k}: {type(exc).__name__}".encode())
                continue
            for name in sorted(values):
                digest.update(f"probe {k}: {name}: {_rounded(values[name])}".encode())
        controls = getattr(self, "control_array", None)      # every row (the probes see row 0 only)
        u = controls() if callable(controls) else None
        if u is not None:
            digest.update(f"controls: {_rounded(u)}".encode())
        return digest.hexdigest()

    def reference_solution(self, *state, t, rtol: float = 1e-13, atol: float = 1e-13) -> dict:
        """The kind's reference solution at times ``t`` (t[0] = 0): named node arrays with a
        leading axis of len(t), named as the kind's compiled methods name them.

        Raises NoReferenceError when the kind has none."""
        raise NoReferenceError(f"{self.name}: a {self.kind} system has no reference solution in "
                               f"dalembert; use its model's exact solution")


# ---------------------------------------------------------------------------------------------
# views: one kind seen as another
# ---------------------------------------------------------------------------------------------

class View(NamedTuple):
    """A registered conversion from one system kind to another.

    system(source, *state0) -> target system (the state is one validated initial state, for
    anything the conversion must fix, e.g. the chart anchor; concrete arrays).
    state(target, *state) -> the target's initial state (traceable; vmapped for ensembles).
    """

    source: str
    target: str
    system: Callable
    state: Callable
    description: str = ""


_VIEWS: dict = {}


def register_view(source: str, target: str, system: Callable, state: Callable,
                  description: str = "") -> View:
    """Register the view of kind ``source`` as kind ``target`` (see :class:`View`)."""
    v = View(source, target, system, state, description)
    _VIEWS[(source, target)] = v
    return v


def views() -> dict:
    """The registered views: ``{(source, target): View}``."""
    return dict(_VIEWS)


def kind_class(name: str):
    """The SystemKind subclass whose ``kind`` is ``name`` (None when there is none)."""
    todo = [SystemKind]
    while todo:
        cls = todo.pop()
        if cls.__dict__.get("kind") == name:
            return cls
        todo.extend(cls.__subclasses__())
    return None


def kinds_of(system) -> tuple:
    """The kinds of a system object (() for an object that is not a system kind)."""
    k = getattr(type(system), "kinds", None)
    return k() if callable(k) else ()


def kind_name(system) -> str:
    """The system's (first) kind, or its class name for an object that is not a system kind."""
    mine = kinds_of(system)
    return mine[0] if mine else type(system).__name__


def find_view(system, accepted) -> View | None:
    """The view that makes ``system`` one of the ``accepted`` kinds, or None if it is one
    already. Raises LookupError when neither."""
    mine = kinds_of(system)
    if not accepted or set(mine) & set(accepted):
        return None
    for k in mine:
        for target in accepted:
            if (k, target) in _VIEWS:
                return _VIEWS[(k, target)]
    raise LookupError


def refuse_force(force, name: str) -> None:
    """One-line InputError for ``force=`` on a system kind that takes no non-conservative force
    yet (a LeftInvariantSystem with its own reduced Lagrangian l(ω), a HeavyBodySystem); None passes."""
    if force is not None:
        raise InputError(f"{name}: forces and torques are not available on this system kind yet; write it as a "
                         f"dl.EulerPoincareSuslovSystem or dl.LieNonholonomicSystem (force=τ(R, ω, t)), or in "
                         f"generalized coordinates as dl.NonholonomicSystem(..., force=f(q, v, t))")
