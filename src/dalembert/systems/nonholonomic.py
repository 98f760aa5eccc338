"""Nonholonomic mechanical systems on R^n.

A :class:`NonholonomicSystem` is the data (G, V, μ, ν) of a mechanical Lagrangian
``L(q, v) = ½ vᵀ G(q) v − V(q)`` with linear (``μ(q) v = 0``) or affine (``μ(q) v = ν(q)``)
velocity constraints. Everything else is derived with JAX autodiff: ∇V, the time derivative of
μ along a motion, the kinetic-metric projectors P and Q, the reflection (P − Q)*, the multiplier
λ(q, v) of the index-1 form and the Lagrange–d'Alembert acceleration.

Conventions (Ferraro–Jiménez–Martín de Diego 2015, "New developments on the geometric
nonholonomic integrator", §1–§2 and §6; see docs/theory/ferraro2015.md):

* Lagrange–d'Alembert equations ((2) of the paper): ``d/dt(∂L/∂q̇) − ∂L/∂q = μ(q)ᵀ λ``, ``μ(q) q̇ = ν(q)``.
  The multiplier ``λ`` reported by this module always has this sign.
* ``C(q) = μ G⁻¹ μᵀ`` (m × m, SPD when the rows of μ are independent).
* Projectors on velocities: ``Q = G⁻¹ μᵀ C⁻¹ μ``, ``P = I − Q``; on momenta (covectors)
  ``Q* = Qᵀ = μᵀ C⁻¹ μ G⁻¹``, ``P* = I − Q*``. They are G-orthogonal. All are applied by linear
  solves, never through explicit inverses.
* Affine constraints: ``Π = G Y`` with ``μ Y = ν``; only ``Q*Π = μᵀ C⁻¹ ν`` is ever needed
  (§6 of the paper; the identity is ours, docs/theory/ferraro2015.md).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .. import linalg
from ..declarations import Feature, NodeArray, Role
from ..errors import ConstraintViolationError, InputError, SystemDefinitionError
from .kind import SystemKind, _depends_on_input, _positional_count, refuse_complex, traced_once
from .torque import StateForce


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------

#: Value checks of an initial state (:meth:`NonholonomicSystem.check`; compiled, with margins, in
#: :meth:`NonholonomicSystem._passes_values`, which ``initial_states_ok`` vmaps): max |G − Gᵀ| ≤ SYMMETRY_RTOL · max(1, max |G|);
#: λ_min(G) > DEFINITENESS_RTOL · |λ_max(G)|; σ_min(μ) > RANK_RTOL · σ_max(μ).
SYMMETRY_RTOL = 1e-12
DEFINITENESS_RTOL = 1e-14
RANK_RTOL = 1e-10
#: ``project=True`` warns when it changes the given velocity by more than this (relative, max norm)
PROJECTION_WARN = 0.05


def _as_vector(x, name: str) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be an array of numbers: {exc}") from None
    if a.ndim != 1 or a.size == 0:
        raise InputError(f"{name} must be a non-empty 1-D array; got shape {a.shape}")
    if not np.isfinite(a).all():
        raise InputError(f"{name} contains non-finite values: {a}")
    return a


def _shape_of(fn, name: str, q):
    """Output shape of a user callable at q, by tracing only (nothing is compiled or run)."""
    try:
        out = jax.eval_shape(fn, jax.ShapeDtypeStruct(q.shape, jnp.float64))
    except Exception as exc:  # a user's callable may raise anything
        raise SystemDefinitionError(f"{name}(q0) raised {type(exc).__name__}: {exc}") from exc
    _expect_real(out, name)
    return tuple(out.shape)


def _indices(idx, name: str):
    """A tuple of distinct non-negative ints, or None (InputError otherwise)."""
    if idx is None:
        return None
    try:
        out = tuple(int(i) for i in np.asarray(idx, dtype=np.int64).ravel())
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a sequence of integer indices; got {idx!r}") from None
    if len(set(out)) != len(out) or any(i < 0 for i in out):
        raise InputError(f"{name} must hold distinct non-negative indices; got {list(out)}")
    return out


def _strings(x, name: str):
    """A tuple of str, or None (InputError for anything else)."""
    if x is None:
        return None
    if isinstance(x, str) or not all(isinstance(s, str) for s in x):
        raise InputError(f"{name} must be a sequence of strings, one per coordinate; got {x!r}")
    return tuple(x)


def _dependent(idx, n: int, count: int, name: str, what: str):
    """The complement of the independent indices ``idx`` in range(n), of size ``count``."""
    if idx is None:
        raise InputError(f'project="dependent" needs the system\'s {name}=[...] ({n - count} indices of the '
                         f"{what} to keep); or pass project=True to project in the kinetic metric")
    if any(i >= n for i in idx) or len(idx) != n - count:
        raise InputError(f"{name} must hold {n - count} distinct indices below {n} (n = {n} minus {count} "
                         f"constraints); got {list(idx)}")
    return np.array(sorted(set(range(n)) - set(idx)), dtype=np.int64)


def _expect_real(out, name: str):
    """A callable's traced output must be real: a complex one would lose its imaginary part
    silently where the integrator casts to float64."""
    if jnp.issubdtype(out.dtype, jnp.complexfloating):
        raise SystemDefinitionError(f"{name}(q0) returns complex values ({out.dtype}); the system's functions "
                           f"must be real-valued")


def _expect_shape(shape, name: str, expected: tuple, what: str, q):
    if shape != expected:
        raise SystemDefinitionError(
            f"{name}(q0) returned shape {shape}; expected {expected} ({what}) "
            f"for q0 of shape {np.shape(q)}")


def _expect_finite(x, name: str):
    if not np.isfinite(x).all():
        raise SystemDefinitionError(f"{name}(q0) returned non-finite values: {x}")


@dataclass(frozen=True)
class MetricFactor:
    """A factored kinetic metric G(q) = L Lᵀ, used to apply G⁻¹.

    ``inverse``: G⁻¹ (n, n) when it is known once for all (a constant metric: see
    :func:`constant_metric_factor`); G⁻¹b is then one matrix-vector product instead of two
    unrolled substitutions, whose chains of partial sums XLA:CPU evaluates once per output
    component when it fuses them (docs/benchmarks.md, "Measurements behind the code").
    """

    L: jnp.ndarray
    inverse: jnp.ndarray | None = None
    #: (n,) the diagonal of G⁻¹ when G is a constant diagonal matrix: G⁻¹b is then n products
    #: instead of n² (XLA keeps the products with the zero entries of ``inverse``; timings:
    #: docs/benchmarks.md, "Measurements behind the code").
    inverse_diagonal: jnp.ndarray | None = None
    #: (n,) the diagonal of G itself for a constant diagonal G (G b is then n products)
    diagonal: jnp.ndarray | None = None

    def solve(self, b):
        """G⁻¹ b for b of shape (n,) or (n, k)."""
        if self.inverse_diagonal is not None:
            d = self.inverse_diagonal
            return d * b if b.ndim == 1 else d[:, None] * b
        if self.inverse is not None:
            return linalg.mv(self.inverse, b) if b.ndim == 1 else linalg.mm(self.inverse, b)
        return linalg.cho_solve(self.L, b)


def constant_metric_factor(G) -> MetricFactor:
    """The MetricFactor of a constant metric G (n, n): its Cholesky factor and its inverse, both
    computed once, in NumPy float64 (G⁻¹ = L⁻ᵀL⁻¹), and for a diagonal G the diagonal of G⁻¹.
    A traced G (a parameter under ``jax.grad``) is factored in JAX, as a full matrix."""
    if linalg.traced(G):
        L = jnp.linalg.cholesky(G)
        return MetricFactor(L, linalg.cho_solve(L, jnp.eye(G.shape[0])), None)
    G = np.asarray(G, np.float64)
    L = np.linalg.cholesky(G)
    Linv = np.linalg.solve(L, np.eye(G.shape[0]))
    diagonal = np.count_nonzero(G - np.diag(np.diag(G))) == 0
    return MetricFactor(jnp.asarray(L), jnp.asarray(Linv.T @ Linv),
                        jnp.asarray(1.0 / np.diag(G)) if diagonal else None,
                        jnp.asarray(np.diag(G).copy()) if diagonal else None)


# ---------------------------------------------------------------------------------------------
# the system
# ---------------------------------------------------------------------------------------------

class NonholonomicSystem(StateForce, SystemKind):
    """A mechanical system on R^n with linear or affine nonholonomic constraints.

    Parameters
    ----------
    mass_matrix : callable q -> (n, n), or an (n, n) array
        Kinetic metric G(q), symmetric positive definite (kg, kg·m, kg·m² blocks as the
        coordinates require). An array, or a callable whose output does not depend on q (found
        by tracing), marks the metric as constant, which enables the explicit fast paths.
    potential : callable q -> scalar or (q, t) -> scalar, optional
        Potential energy V(q) (J), or V(q, t) with explicit time t (s) (a moving well, a driven
        spring); decided by the number of positional arguments. Default 0.
    constraint_matrix : callable q -> (m, n)
        Constraint covectors μ(q) as rows; 1 ≤ m < n, rows independent.
    constraint_rhs : callable q -> (m,) or (q, t) -> (m,), optional
        ν(q) for affine constraints μ(q) v = ν(q) (e.g. a turning table), or ν(q, t) with
        explicit time (a belt or a table driven by a given law); decided by the number of
        positional arguments. Default: linear.
    holonomic_constraints : callable q -> (k,), optional
        Configuration constraints φ(q) = 0 beside the rolling ones (a closed chain, a contact
        height, a redundant coordinate). The motion then satisfies φ(q) = 0, Φ(q) v = 0 and
        μ(q) v = ν(q); (Φ; μ) must have full row rank k + m < n.
    holonomic_jacobian : callable q -> (k, n), optional
        Φ(q) = ∂φ/∂q; default: by automatic differentiation of ``holonomic_constraints``.
    independent_coordinates, independent_speeds : sequences of indices, optional
        The coordinates (n − k of them) and speeds (n − k − m) that an initial state given with
        ``project="dependent"`` keeps as given; the others are solved for (φ(q0) = 0 by Newton
        on the k dependent coordinates; (Φ; μ) v0 = (0; ν) for the k + m dependent speeds),
        as Kane's q_ind/q_dep and u_ind/u_dep. Checked at the initial state: the dependent
        columns of Φ and of (Φ; μ) must be invertible there.
    name : str
        Used in messages, metadata and file names.
    force : callable, optional
        Generalized non-conservative force, shape (n,), in the coordinates' own units (N for
        lengths, N·m for angles): ``force(q, v, t)``, or ``force(q, v, t, u)`` with a control
        u (c,) (then ``controls=``). It enters G q̈ = f_V + force + μᵀλ, in the methods that
        accept forces through the forced discrete Lagrange–d'Alembert principle (Marsden–West,
        Acta Numerica 2001, §3.2; Kane, Marsden, Ortiz, West 2000), and the work it does is
        ``traj.work``. Traceable, like the other callables.
    controls : (N, c) array or callable t -> (c,), optional
        The control signal of a ``force(q, v, t, u)``: one row per step (held over the step, u_k
        on [t_k, t_{k+1})), or a function of time. :meth:`with_controls` gives the same system
        with other controls (``dl.integrate(..., controls=U)`` and ``dl.solve(..., controls=U)``
        use it; under ``jax.grad`` U may be traced).
    coordinate_names : sequence of n str, optional
        Names of the coordinates (e.g. ``["x", "y", "θ"]``), used by plots, summaries and saved
        files (``metadata["coordinate_names"]``); default ``q[0]``, ``q[1]``, ….
    units : sequence of n str, optional
        The coordinates' units (e.g. ``["m", "m", "rad"]``; velocities are these per second),
        used the same way (``metadata["units"]``); default "system units".

    With configuration constraints, the velocity-level rows come first: ``constraint_matrix(q)``
    is (Φ(q); μ(q)) of shape (k + m, n), ``constraint_rhs(q)`` is (0; ν(q)), the node arrays
    ``constraint_residual`` (k + m,) and ``lam`` (k + m,) hold the k rows of Φ v and of the
    configuration multipliers Λ first, then the m rolling ones; ``holonomic_residual`` (k,) is
    φ(q) at the node. The Lagrange–d'Alembert equations are
    G q̈ = f + Φᵀ Λ + μᵀ λ (Marsden–West, Acta Numerica 2001, §3.5 for the discrete form).

    Explicit time (V(q, t), ν(q, t)): the system declares ``Feature.EXPLICIT_TIME``; the methods
    that accept it evaluate V and ν at the times of their quadrature nodes (the engine's clock,
    :mod:`dalembert.clock`; runs start at ``t0``), the others refuse before tracing. Energy is then
    not conserved: along the Lagrange–d'Alembert equations
    dE/dt = f·v + λᵀν(q, t) + ∂V/∂t (E = T + V(q, t); the constraint force μᵀλ does the power
    λᵀμv = λᵀν), and ``traj.work`` is the integral of that supply (:mod:`dalembert.engine.forcing`).

    The callables take and return JAX arrays and must be traceable (``jnp``, not ``np``).
    Checks of shapes, symmetry, positive definiteness and rank are made by :meth:`check` at the
    initial state (the engine calls it), with messages naming the offending callable.

    Source: Ferraro, Jiménez, Martín de Diego, Nonlinearity 28 (2015) §1–§2, §6.
    """

    #: Keyword names of the initial state in ``dl.integrate`` (the system-kind protocol).
    state_names = ("q0", "v0")
    kind = "nonholonomic"
    path_array = "q"
    node_arrays = (NodeArray("q", Role.CONFIGURATION, state="q0", symbol="q"),
                   NodeArray("v", Role.VELOCITY, "system units per s", state="v0", symbol="v"),
                   NodeArray("p", Role.MOMENTUM, symbol="p"),
                   NodeArray("lam", Role.MULTIPLIER, symbol="λ"))
    #: the force, its controls and the zero without one (:class:`~dalembert.systems.torque.StateForce`):
    #: a generalized force of shape (n,), like q; a copy with other controls recompiles its projection
    controlled_signature = "force(q, v, t, u)"
    zero_force_like = 0
    control_caches = ("_project_q_fn",)

    def __init__(self, mass_matrix, potential=None, constraint_matrix=None,
                 constraint_rhs=None, name: str = "system", *, holonomic_constraints=None,
                 holonomic_jacobian=None, independent_coordinates=None, independent_speeds=None,
                 coordinate_names=None, units=None, force=None, controls=None):
        if constraint_matrix is None:
            raise InputError("NonholonomicSystem needs constraint_matrix=lambda q: ... (shape (m, n))")
        if callable(mass_matrix):
            self._mass_fn = mass_matrix
            self._mass_const = None
        else:
            # (a traced array, a parameter under jax.grad, stays a JAX value)
            refuse_complex(mass_matrix, "mass_matrix")
            G = (jnp.asarray(mass_matrix, jnp.float64) if linalg.traced(mass_matrix)
                 else np.asarray(mass_matrix, dtype=np.float64))
            if G.ndim != 2 or G.shape[0] != G.shape[1]:
                raise SystemDefinitionError(f"mass_matrix must be a callable or a square array; got shape {G.shape}")
            self._mass_const = jnp.asarray(G)
            self._mass_fn = lambda q: self._mass_const
        for nm, f in (("potential", potential), ("constraint_matrix", constraint_matrix),
                      ("constraint_rhs", constraint_rhs), ("holonomic_constraints", holonomic_constraints),
                      ("holonomic_jacobian", holonomic_jacobian)):
            if f is not None and not callable(f):
                raise InputError(f"{nm} must be a callable taking q; got {type(f).__name__}")
        self._potential = potential
        self._mu = constraint_matrix
        self._nu = constraint_rhs
        # explicit time: V(q, t), ν(q, t) (two positional arguments; a callable whose signature
        # cannot be read is taken as V(q), ν(q))
        self._potential_takes_t = potential is not None and _positional_count(potential, 1) >= 2
        self._nu_takes_t = constraint_rhs is not None and _positional_count(constraint_rhs, 1) >= 2
        if holonomic_jacobian is not None and holonomic_constraints is None:
            raise InputError("holonomic_jacobian is given without holonomic_constraints; pass "
                             "holonomic_constraints=lambda q: ... (shape (k,)) too")
        self._phi = holonomic_constraints
        self._Phi = holonomic_jacobian
        self.independent = {"coordinates": _indices(independent_coordinates, "independent_coordinates"),
                            "speeds": _indices(independent_speeds, "independent_speeds")}
        self.name = str(name)
        self.labels = {"coordinate_names": _strings(coordinate_names, "coordinate_names"),
                       "units": _strings(units, "units")}
        if force is not None and not callable(force):
            raise InputError(f"force must be a callable force(q, v, t) or force(q, v, t, u); got {type(force).__name__}")
        self._force = force
        self._init_controls(force is not None and _positional_count(force) >= 4, controls, self.name)
        self._constant_metric: bool | None = None if self._mass_const is None else True

    # --- repr / identity -----------------------------------------------------------------
    def __repr__(self):
        kind = "affine" if self.is_affine else "linear"
        return f"NonholonomicSystem(name={self.name!r}, constraints={kind})"

    @property
    def is_affine(self) -> bool:
        """True if the constraints are affine, μ(q) v = ν(q)."""
        return self._nu is not None

    def features(self, *state0) -> frozenset:
        """AFFINE_CONSTRAINTS when ν is given; CONFIGURATION_METRIC when G depends on q (decided by
        tracing ``mass_matrix`` at state0's q0; without a state, a callable metric not yet traced
        counts as configuration-dependent)."""
        out = {Feature.AFFINE_CONSTRAINTS} if self.is_affine else set()
        if self.has_holonomic:
            out.add(Feature.HOLONOMIC_CONSTRAINTS)
        if self.has_force:
            out |= {Feature.FORCES} | self.control_features()
        if self.explicit_time:
            out.add(Feature.EXPLICIT_TIME)
        if self._constant_metric is None and not state0:
            out.add(Feature.CONFIGURATION_METRIC)
        elif not self.constant_metric(state0[0] if state0 else None):
            out.add(Feature.CONFIGURATION_METRIC)
        return frozenset(out)

    @property
    def explicit_time(self) -> bool:
        """True if the potential or the constraints' right-hand side depends on t (V(q, t), ν(q, t))."""
        return self._potential_takes_t or self._nu_takes_t

    @property
    def timed(self) -> bool:
        """True if the system reads the engine's clock (a force, V(q, t) or ν(q, t)): it is then
        stepped on the clock and its work is accounted (:mod:`dalembert.engine.forcing`)."""
        return self.has_force or self.explicit_time

    @property
    def has_supply(self) -> bool:
        """True if energy enters other than by the force: affine constraints (power λᵀν) or V(q, t)
        (power ∂V/∂t); :meth:`supply` is then not identically zero."""
        return self.is_affine or self._potential_takes_t

    def _clock_time(self, dt):
        from .. import clock
        return clock.now()[0] + dt

    @property
    def has_holonomic(self) -> bool:
        """True if the system has configuration constraints φ(q) = 0."""
        return self._phi is not None

    def constant_metric(self, q) -> bool:
        """True if G does not depend on q (decided once, by tracing ``mass_matrix`` at q)."""
        if self._constant_metric is None:
            self._constant_metric = not _depends_on_input(traced_once(self, self._mass_fn), jnp.asarray(q))
        return self._constant_metric

    # --- the data ---------------------------------------------------------------------------
    def mass_matrix(self, q):
        """G(q), shape (n, n)."""
        return jnp.asarray(traced_once(self, self._mass_fn)(q), dtype=jnp.float64)

    def potential(self, q, dt=0.0):
        """V(q), scalar (J); V(q, t) at the clock's time + dt for a time-dependent potential."""
        if self._potential is None:
            return jnp.zeros((), jnp.float64)
        if self._potential_takes_t:
            return jnp.asarray(traced_once(self, self._potential)(q, self._clock_time(dt)), dtype=jnp.float64).reshape(())
        return jnp.asarray(traced_once(self, self._potential)(q), dtype=jnp.float64).reshape(())

    def grad_potential(self, q, dt=0.0):
        """∇V(q) (at the clock's time + dt), shape (n,)."""
        if self._potential is None:
            return jnp.zeros_like(q)
        return jax.grad(self.potential)(q, dt)

    def potential_rate(self, q, dt=0.0):
        """∂V/∂t (q, t) at the clock's time + dt (W), scalar; 0 for V(q)."""
        if not self._potential_takes_t:
            return jnp.zeros((), jnp.float64)
        return jax.grad(lambda tau: self.potential(q, dt + tau))(jnp.zeros((), jnp.float64))

    def supply(self, q, v, dt=0.0):
        """The power fed in other than by the force, at (q, v) and the clock's time + dt (W):
        λ(q, v)ᵀν(q, t) + ∂V/∂t. From G q̈ = ∂L/∂q − Ġv + f + μᵀλ and μv = ν:
        dE/dt = f·v + λᵀμv + ∂V/∂t = f·v + λᵀν + ∂V/∂t (E = T + V). Scalar; 0 without affine
        constraints and explicit time in V."""
        if not self.has_supply:
            return jnp.zeros((), jnp.float64)
        from .. import clock
        with clock.shifted(dt):
            out = self.potential_rate(q)
            if self.is_affine:
                out = out + jnp.sum(self.multiplier(q, v) * self.constraint_rhs(q))
        return out

    def rolling_matrix(self, q):
        """μ(q), shape (m, n): the velocity (rolling) constraints as given."""
        return jnp.asarray(traced_once(self, self._mu)(q), dtype=jnp.float64)

    def rolling_rhs(self, q, dt=0.0):
        """ν(q) (ν(q, t) at the clock's time + dt), shape (m,); zeros for linear constraints."""
        if self._nu is None:
            return jnp.zeros(self.rolling_matrix(q).shape[0], jnp.float64)
        if self._nu_takes_t:
            return jnp.asarray(traced_once(self, self._nu)(q, self._clock_time(dt)), dtype=jnp.float64).reshape(-1)
        return jnp.asarray(traced_once(self, self._nu)(q), dtype=jnp.float64).reshape(-1)

    def holonomic(self, q):
        """φ(q), shape (k,) (k = 0 without configuration constraints)."""
        if self._phi is None:
            return jnp.zeros(0, jnp.float64)
        return jnp.asarray(traced_once(self, self._phi)(q), dtype=jnp.float64).reshape(-1)

    def holonomic_jacobian(self, q):
        """Φ(q) = ∂φ/∂q, shape (k, n): given, or by forward-mode autodiff of φ."""
        if self._Phi is not None:
            return jnp.asarray(traced_once(self, self._Phi)(q), dtype=jnp.float64).reshape(-1, jnp.shape(q)[0])
        if self._phi is None:
            return jnp.zeros((0, jnp.shape(q)[0]), jnp.float64)
        return jax.jacfwd(self.holonomic)(q)

    def constraint_matrix(self, q):
        """The velocity constraints' matrix, shape (k + m, n): (Φ(q); μ(q)) — μ(q) alone, (m, n),
        without configuration constraints."""
        mu = self.rolling_matrix(q)
        if self._phi is None:
            return mu
        return jnp.concatenate([self.holonomic_jacobian(q), mu], axis=0)

    def constraint_rhs(self, q, dt=0.0):
        """The velocity constraints' right-hand side (at the clock's time + dt), shape (k + m,): (0; ν(q))."""
        nu = self.rolling_rhs(q, dt)
        if self._phi is None:
            return nu
        return jnp.concatenate([jnp.zeros(self.holonomic(q).shape[0], jnp.float64), nu])

    def project_configuration(self, q, *, rtol: float = 1e-14, max_iter: int = 40):
        """The configuration on φ = 0 reached from q along G(q)⁻¹Φ(q)ᵀ (the kinetic metric's
        closest point to first order; SHAKE's correction): q + G⁻¹ΦᵀΛ with φ(q + G⁻¹ΦᵀΛ) = 0 by
        Newton on Λ (k,). Returns a :class:`~dalembert.solvers.newton.NewtonResult` whose ``x``
        is the projected q (n,) (traceable)."""
        from ..solvers.newton import newton
        f = self.factor_metric(q)
        GPhi = f.solve(self.holonomic_jacobian(q).T)
        res = newton(lambda lam: self.holonomic(q + linalg.mv(GPhi, lam)),
                     jnp.zeros(GPhi.shape[1], jnp.float64), rtol=rtol, max_iter=max_iter)
        return res._replace(x=q + linalg.mv(GPhi, res.x))

    # --- derived quantities -----------------------------------------------------------------
    def factor_metric(self, q) -> MetricFactor:
        """Cholesky factor of G(q), to apply G⁻¹ by solves; for a constant metric the factor
        computed once (:meth:`constant_factor`), so that G⁻¹b is a product, not a factorisation
        and two substitutions at every call (on a large system the factorisation is almost all of
        the multiplier's cost: docs/benchmarks.md, "Measurements behind the code")."""
        const = self.constant_factor(q)
        return const if const is not None else MetricFactor(linalg.cholesky(self.mass_matrix(q)))

    def constant_factor(self, q) -> MetricFactor | None:
        """The MetricFactor of a constant metric (None if G depends on q): factored once, in
        NumPy, with its inverse and, for a diagonal G, the diagonals of G and G⁻¹
        (:func:`constant_metric_factor`); kept with the system per number of coordinates. A
        metric traced from an outer transformation (a parameter under ``jax.grad``) is factored in
        JAX at each call and not kept."""
        n = int(jnp.shape(q)[0])
        if not self.constant_metric(np.zeros(n)):
            return None
        cache = self.__dict__.setdefault("_constant_factors", {})
        if n not in cache:
            with jax.ensure_compile_time_eval():
                G = self.mass_matrix(jnp.zeros(n, jnp.float64))
                if linalg.traced(G):
                    return constant_metric_factor(G)
                cache[n] = constant_metric_factor(G)
        return cache[n]

    def constraint_gram(self, q, factor: MetricFactor | None = None):
        """C(q) = μ G⁻¹ μᵀ, shape (m, m), and G⁻¹μᵀ, shape (n, m)."""
        f = factor if factor is not None else self.factor_metric(q)
        mu = self.constraint_matrix(q)
        Gmu = f.solve(mu.T)
        return linalg.mm(mu, Gmu), Gmu

    def momentum(self, q, v):
        """p = G(q) v, shape (n,)."""
        const = self.constant_factor(q)
        if const is not None and const.diagonal is not None:
            return const.diagonal * v     # n products, not n² (the same values: the others are zeros)
        return linalg.mv(self.mass_matrix(q), v)

    def kinetic_energy(self, q, v):
        """T = ½ vᵀ G(q) v (J). For a constant diagonal G, ½ Σ gᵢ vᵢ²: on a large system the
        dense form at every saved node costs many steps (docs/benchmarks.md, "Measurements behind
        the code")."""
        return 0.5 * jnp.sum(v * self.momentum(q, v))

    def energy(self, q, v):
        """E = T + V (J), scalar (V at the clock's time for V(q, t))."""
        return self.kinetic_energy(q, v) + self.potential(q)

    def hamiltonian(self, q, p):
        """H(q, p) = ½ pᵀ G⁻¹ p + V(q) (J). For a q-dependent metric G⁻¹p is
        :func:`~dalembert.linalg.spd_solve`, whose derivatives are applied by the factor, not
        differentiated through it: ∂H/∂q = −½ vᵀ(∂G/∂q)v + ∇V with v = G⁻¹p (the methods that
        differentiate H, and differentiate it again for their Newton matrices, get smaller programs)."""
        if self.constant_factor(q) is not None:
            return 0.5 * jnp.sum(p * self.factor_metric(q).solve(p)) + self.potential(q)
        return 0.5 * jnp.sum(p * linalg.spd_solve(self.mass_matrix(q), p)) + self.potential(q)

    def constraint_residual(self, q, v, dt=0.0):
        """μ(q) v − ν(q) (ν at the clock's time + dt), shape (m,)."""
        return linalg.mv(self.constraint_matrix(q), v) - self.constraint_rhs(q, dt)

    def projector_Q(self, q):
        """Q = G⁻¹ μᵀ C⁻¹ μ (n, n): the G-orthogonal projector onto D^⊥ (acts on velocities)."""
        C, Gmu = self.constraint_gram(q)
        return linalg.mm(Gmu, linalg.solve_spd(C, self.constraint_matrix(q)))

    def projector_P(self, q):
        """P = I − Q (n, n): the G-orthogonal projector onto D = ker μ(q) (acts on velocities)."""
        return jnp.eye(q.shape[0]) - self.projector_Q(q)

    def reflect(self, q, p):
        """(P − Q)* p = p − 2 μᵀ C⁻¹ μ G⁻¹ p: the GNI reflection of a momentum (FJMdD 2015 §2, (8))."""
        f = self.factor_metric(q)
        mu = self.constraint_matrix(q)
        C, _ = self.constraint_gram(q, f)
        return p - 2.0 * linalg.vm(linalg.solve_spd(C, linalg.mv(mu, f.solve(p))), mu)

    def project_momentum(self, q, p, dt=0.0):
        """P* p + Q* Π (n,): the constraint-consistent part of a momentum (FJMdD 2015 (9b), (27b));
        ν at the clock's time + dt."""
        f = self.factor_metric(q)
        mu = self.constraint_matrix(q)
        C, _ = self.constraint_gram(q, f)
        r = linalg.mv(mu, f.solve(p)) - self.constraint_rhs(q, dt)
        return p - linalg.vm(linalg.solve_spd(C, r), mu)

    def project_velocity(self, q, v):
        """The G-orthogonal projection of v onto {μ(q) v = ν(q)}, shape (n,)."""
        p = self.project_momentum(q, self.momentum(q, v))
        return self.factor_metric(q).solve(p)

    def constraint_derivative(self, q, v):
        """d/dt μ(q(t)) along q̇ = v, shape (m, n)  (μ_q[v, ·] of FJMdD 2015 §5)."""
        return jax.jvp(self.constraint_matrix, (q,), (v,))[1]

    def generalized_force(self, q, v):
        """f(q, v) = ∂L/∂q − (dG/dt) v (+ the non-conservative force at the clock's time): the
        right-hand side of G q̈ = f + μᵀλ, shape (n,)."""
        Gdot = jax.jvp(self.mass_matrix, (q,), (v,))[1]
        dT_dq = jax.grad(lambda x: 0.5 * jnp.sum(v * linalg.mv(self.mass_matrix(x), v)))(q)
        return dT_dq - self.grad_potential(q) - linalg.mv(Gdot, v) + self.force(q, v)

    def multiplier(self, q, v):
        """λ(q, v), shape (m,): the Lagrange–d'Alembert multiplier of the index-1 form.

        From ``G a = f + μᵀλ`` and ``μ a + μ̇ v = ν̇``:
        ``C λ = ν̇ − μ̇ v − μ G⁻¹ f`` (FJMdD 2015 (17); the affine variant is ours,
        docs/theory/ferraro2015.md).
        """
        fac = self.factor_metric(q)
        C, _ = self.constraint_gram(q, fac)
        mu = self.constraint_matrix(q)
        f = self.generalized_force(q, v)
        # ν̇ = ∂ν/∂q v + ∂ν/∂t (the clock's offset as the time direction)
        nudot = jax.jvp(self.constraint_rhs, (q, jnp.zeros((), jnp.float64)),
                        (v, jnp.ones((), jnp.float64)))[1]
        rhs = nudot - linalg.mv(self.constraint_derivative(q, v), v) - linalg.mv(mu, fac.solve(f))
        return linalg.solve_spd(C, rhs)

    def acceleration(self, q, v):
        """q̈ of the Lagrange–d'Alembert equations (index-1 form), shape (n,)."""
        lam = self.multiplier(q, v)
        f = self.generalized_force(q, v) + linalg.vm(lam, self.constraint_matrix(q))
        return self.factor_metric(q).solve(f)

    # --- the system-kind protocol used by the engine -------------------------------------
    def fingerprint_values(self, q, v) -> dict:
        """Energy, constraint residual, the acceleration q̈ (metric, potential gradient, forces,
        constraints) and ν(q) at (q, v) (:meth:`SystemKind.fingerprint`)."""
        return {**self.diagnostics({"q": q, "v": v}), "acceleration": self.acceleration(q, v),
                "constraint_rhs": self.constraint_rhs(q)}

    def check_initial_state(self, q0, v0, *, project: bool = False):
        """Validated (q0, v0) as float64 arrays (see :meth:`check`); the engine's entry point."""
        return self.check(q0, v0, project=project)

    def data_ok(self, obs: dict):
        """Whether the system's data keep their invariants at a node (bool scalar, traceable):
        G(q) symmetric to :data:`SYMMETRY_RTOL` (a q-dependent metric only; a constant one was
        checked once). Checked by the engine at every saved node: a metric that becomes
        non-symmetric during a run would otherwise give a silently wrong energy."""
        q = obs["q"]
        if self.constant_metric(np.zeros(jnp.shape(q))):
            return jnp.asarray(True)
        G = self.mass_matrix(q)
        return jnp.max(jnp.abs(G - G.T)) <= SYMMETRY_RTOL * jnp.maximum(1.0, jnp.max(jnp.abs(G)))

    def diagnostics(self, obs: dict) -> dict:
        """Node diagnostics from a method's observation {q, v, ...}: energy (J),
        constraint_residual (k + m,) (Φ(q)v rows first, then μ(q)v − ν(q)) and, with configuration
        constraints, holonomic_residual (k,) = φ(q)."""
        out = {"energy": self.energy(obs["q"], obs["v"]),
               "constraint_residual": self.constraint_residual(obs["q"], obs["v"])}
        if self._phi is not None:
            out["holonomic_residual"] = self.holonomic(obs["q"])
        return out

    def step_check_value(self, obs: dict):
        """V(q) + Σ G(q): finite exactly when the energy ½vᵀGv + V of a finite node is (for finite
        v), without the node velocity — for the GNI that is the projection of p⁺, a large share of
        an explicit step (docs/benchmarks.md, "Measurements behind the code"). The sum of G
        is a constant that XLA folds when the metric is constant."""
        q = obs["q"]
        return self.potential(q) + jnp.sum(self.mass_matrix(q))

    def reference_solution(self, q0, v0, *, t, rtol: float = 1e-13, atol: float = 1e-13) -> dict:
        """q, v (N, n), p = G v (N, n) and the continuous multiplier λ (N, m) at times t, from the
        index-1 ODE by DOP853 (:func:`dalembert.systems.index1_ode.reference_solution`)."""
        from .._cache import cached
        from .index1_ode import reference_solution
        q, v, _ = reference_solution(self, q0, v0, t, rtol=rtol, atol=atol)
        extra = cached(self, "reference extras", lambda: jax.jit(jax.vmap(
            lambda q, v: {"p": self.momentum(q, v), "lam": self.multiplier(q, v)})))
        return {"q": q, "v": v, **extra(jnp.asarray(q), jnp.asarray(v))}

    # --- validation -------------------------------------------------------------------------
    def _values(self, q, t=0.0):
        """(G, V, μ, ν, ∇V, φ) at q and time t (V(q, t), ν(q, t)): what the value checks look at
        (μ, ν stacked with Φ, 0 and φ of size 0 without configuration constraints)."""
        from .. import clock
        with clock.at(t, 0):
            return (self.mass_matrix(q), self.potential(q), self.constraint_matrix(q), self.constraint_rhs(q),
                    self.grad_potential(q), self.holonomic(q))

    def _evaluate_all(self, q):
        """:meth:`_values` in one compiled call (eager JAX ops would compile one by one), at the
        clock's time (the run's t0: the engine checks an initial state on its clock)."""
        from .. import clock
        if getattr(self, "_eval_all", None) is None:
            self._eval_all = jax.jit(self._values)
        return self._eval_all(q, np.float64(clock.now()[0]))

    #: Margins of :meth:`_passes`: it accepts a state only with this factor to spare on each value
    #: check of :meth:`check` (tolerances ×1/2, λ_min and σ_min ×100 above their bounds), so that
    #: the round-off of its compiled evaluation (other than NumPy's) never accepts a state that
    #: :meth:`check` refuses; a state nearer a bound goes through :meth:`check`'s own checks.
    _TOLERANCE_MARGIN, _SPECTRAL_MARGIN = 0.5, 100.0

    def _passes_values(self, q, v, t, tol):
        """Whether (q, v) passes every value check of :meth:`check`, each with the margins
        :attr:`_TOLERANCE_MARGIN` / :attr:`_SPECTRAL_MARGIN` (traceable: a bool scalar)."""
        G, V, mu, nu, dV, phi = self._values(q, t)
        ok = jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in (G, V, mu, nu, dV, phi)]))
        G = jnp.where(ok, G, jnp.eye(G.shape[-1]))          # keep the LAPACK calls finite
        mu = jnp.where(ok, mu, 1.0)
        a, s = self._TOLERANCE_MARGIN, self._SPECTRAL_MARGIN
        scale = jnp.maximum(1.0, jnp.max(jnp.abs(G)))
        ok &= jnp.max(jnp.abs(G - G.T)) <= a * SYMMETRY_RTOL * scale
        eig = jnp.linalg.eigvalsh(G)
        ok &= eig[0] > s * DEFINITENESS_RTOL * jnp.maximum(jnp.abs(eig[-1]), 1e-300)
        sv = jnp.linalg.svd(mu, compute_uv=False)
        ok &= sv[-1] > s * RANK_RTOL * jnp.maximum(sv[0], 1e-300)
        if phi.size:
            ok &= jnp.max(jnp.abs(phi)) <= a * tol * jnp.maximum(1.0, jnp.max(jnp.abs(q)))
        res = mu @ v - jnp.reshape(nu, (-1,))
        return ok & (jnp.max(jnp.abs(res)) <= a * tol * jnp.maximum(1.0, jnp.max(jnp.abs(v))))

    def _passes(self, q, v0, tol) -> np.ndarray | None:
        """v0 as a float64 array when (q, v0) passes every value check of :meth:`check` with a
        margin (:meth:`_passes_values`, one compiled call at the clock's time), else None — then
        :meth:`check`'s own checks decide, and name what fails. The common case of a valid
        initial state costs one compiled call instead of that and a dozen NumPy/LAPACK calls."""
        try:
            v = np.asarray(v0, dtype=np.float64)
        except (TypeError, ValueError):
            return None
        if v.shape != q.shape or not np.isfinite(v).all():
            return None
        from .. import clock
        if getattr(self, "_passes_all", None) is None:
            self._passes_all = jax.jit(self._passes_values)
        return v if bool(self._passes_all(q, v, np.float64(clock.now()[0]), np.float64(tol))) else None

    def initial_states_ok(self, q0s, v0s, *, tol: float = 1e-10):
        """Which of B initial states pass every value check of :meth:`check` with the margins of
        :meth:`_passes` (after its shape checks passed for one of them): a (B,) bool array,
        computed in one vectorised call.

        For ``dl.ensemble``: the members flagged False are checked one by one (for the error
        message, or the projection); the others are used as given. Conservative: False also for
        inputs this cannot judge (wrong shapes).
        """
        q = np.asarray(q0s, np.float64)
        v = np.asarray(v0s, np.float64)
        if q.ndim != 2 or v.shape != q.shape or q.shape[1] not in self.__dict__.get("_shapes_ok", ()):
            return np.zeros(q.shape[0] if q.ndim else 0, bool)
        if self._phi is not None:     # the configuration constraints are checked member by member
            return np.zeros(q.shape[0], bool)
        if getattr(self, "_passes_batch", None) is None:   # the test of _passes, vmapped
            self._passes_batch = jax.jit(jax.vmap(self._passes_values, in_axes=(0, 0, None, None)))
        from .. import clock
        return np.asarray(self._passes_batch(q, v, np.float64(clock.now()[0]), np.float64(tol)))

    @staticmethod
    def _timed_callable(fn, takes_t):
        """fn as a function of q alone (at t = 0 for a function of (q, t): shapes only)."""
        if fn is None or not takes_t:
            return fn
        return lambda x: fn(x, jnp.zeros((), jnp.float64))

    def _check_shapes(self, q):
        """The output shapes of the callables for a q of this length (by tracing only); a
        length that passed once is not traced again (ensembles check every member)."""
        n = q.size
        if n in self.__dict__.setdefault("_shapes_ok", set()):
            return
        qj = jnp.asarray(q)
        _expect_shape(_shape_of(lambda x: jnp.asarray(traced_once(self, self._mass_fn)(x)), "mass_matrix", qj), "mass_matrix", (n, n),
                      "the kinetic metric G(q)", q)
        vshape = _shape_of(self._timed_callable(traced_once(self, self._potential), self._potential_takes_t)
                           or (lambda x: 0.0 * x[0]), "potential", qj)
        if vshape not in ((), (1,)):
            _expect_shape(vshape, "potential", (), "a scalar", q)
        mshape = _shape_of(lambda x: jnp.asarray(traced_once(self, self._mu)(x)), "constraint_matrix", qj)
        if len(mshape) != 2 or mshape[1] != n:
            raise SystemDefinitionError(
                f"constraint_matrix(q0) returned shape {mshape}; expected (m, {n}) "
                f"(one row per constraint) for q0 of shape {q.shape}")
        m = mshape[0]
        k = 0
        if self._phi is not None:
            kshape = _shape_of(traced_once(self, self._phi), "holonomic_constraints", qj)
            if len(kshape) != 1 or kshape[0] < 1:
                raise SystemDefinitionError(f"holonomic_constraints(q0) returned shape {kshape}; expected (k,) with "
                                   f"k ≥ 1 (one entry per configuration constraint φ_i(q) = 0)")
            k = kshape[0]
            if self._Phi is not None:
                _expect_shape(_shape_of(traced_once(self, self._Phi), "holonomic_jacobian", qj), "holonomic_jacobian", (k, n),
                              "Φ(q) = ∂φ/∂q, one row per configuration constraint", q)
        if not 1 <= m or k + m >= n:
            raise SystemDefinitionError(f"constraint_matrix(q0) has {m} rows" + (f" and holonomic_constraints {k}" if k else "")
                               + f"; need 1 ≤ m and k + m < n = {n}")
        if self._nu is not None:
            _expect_shape(_shape_of(self._timed_callable(traced_once(self, self._nu), self._nu_takes_t), "constraint_rhs", qj),
                          "constraint_rhs", (m,),
                          "ν(q), one entry per constraint", q)
        self._shapes_ok.add(n)

    def check(self, q0, v0=None, *, project: bool = False, tol: float = 1e-10):
        """Validate the system at an initial state and return it as float64 arrays.

        Checks: q0 and v0 finite 1-D of equal length; G(q0) of shape (n, n), finite, symmetric
        (to 1e-12 relative) and positive definite; V(q0) a finite scalar; μ(q0) of shape (m, n)
        with 1 ≤ m < n and independent rows; ν(q0) of shape (m,); ∇V(q0) finite; with
        configuration constraints, φ(q0) of shape (k,), (Φ; μ) of full row rank k + m < n and
        ``‖φ(q0)‖∞ ≤ tol · max(1, ‖q0‖∞)``; and
        ``‖μ(q0) v0 − ν(q0)‖∞ ≤ tol · max(1, ‖v0‖∞)`` (with Φ(q0) v0 = 0).

        Parameters
        ----------
        q0, v0 : (n,) initial configuration and velocity.
        project : if True, a q0 off φ = 0 is moved onto it (:meth:`project_configuration`, the
            kinetic metric's SHAKE correction) and a violating v0 is replaced by its G-orthogonal
            projection onto the constraint space instead of raising; a projection that changes v0
            by more than :data:`PROJECTION_WARN` (relative) warns. ``"dependent"``: keep the
            system's ``independent_coordinates`` and ``independent_speeds`` as given and solve for
            the others (φ(q0) = 0, then (Φ; μ) v0 = (0; ν)); no warning, since what was specified
            is kept.
        tol : constraint tolerance (default 1e-10).

        Returns
        -------
        (q0, v0) as numpy float64 arrays (v0 projected if asked).

        Raises
        ------
        InputError, SystemDefinitionError, ConstraintViolationError
        """
        q = _as_vector(q0, "q0")
        n = q.size
        for key, value in self.labels.items():
            if value is not None and len(value) != n:
                raise InputError(f"{key} has {len(value)} entries but q0 has {n} coordinates; give one per coordinate")
        self._check_shapes(q)
        # a valid state: nothing to project, no error to name. Not on the system's first check: the
        # one-call test is a second compiled program (with its LAPACK calls, 0.3–0.4 s to compile),
        # worth it for a system checked again and again, not for a first call (whose checks compile
        # _evaluate_all below, which they need anyway)
        if isinstance(project, bool) and v0 is not None and getattr(self, "_eval_all", None) is not None:
            v = self._passes(q, v0, tol)
            if v is not None:
                if self.has_force:
                    self._check_force(q, v)
                return q, v
        # (the compiled call takes the NumPy array: an eager jnp.asarray is a dispatch per array)
        G, V, mu, nu, dV, phi = (np.asarray(x) for x in self._evaluate_all(q))
        for x, nm in ((G, "mass_matrix"), (V, "potential"), (mu, "constraint_matrix"),
                      (nu, "constraint_rhs"), (dV, "potential (gradient)"), (phi, "holonomic_constraints")):
            _expect_finite(x, nm)
        if project not in (True, False, "dependent"):
            raise InputError(f'project must be True, False or "dependent"; got {project!r}')
        if project == "dependent":
            dep_q = _dependent(self.independent["coordinates"], n, phi.size, "independent_coordinates",
                               "coordinates")
            dep_v = _dependent(self.independent["speeds"], n, mu.shape[0], "independent_speeds", "speeds")
        if project == "dependent" and phi.size and np.max(np.abs(phi)) > tol * max(1.0, float(np.max(np.abs(q)))):
            q = self._solve_dependent_q(q, dep_q)
            G, V, mu, nu, dV, phi = (np.asarray(x) for x in self._evaluate_all(q))
        elif phi.size and np.max(np.abs(phi)) > tol * max(1.0, float(np.max(np.abs(q)))):
            if not project:
                raise ConstraintViolationError(
                    f"q0 is off the configuration constraints: |φ(q0)| = {np.max(np.abs(phi)):.3e}; give a q0 "
                    f"with φ(q0) = 0 or pass project=True (CLI: --project) to move it onto φ = 0 in the "
                    f"kinetic metric", phi)
            res = self._project_q(q)
            if not bool(res.converged):
                raise InputError(f"project=True: could not bring q0 onto φ = 0 (|φ| = "
                                 f"{np.max(np.abs(np.asarray(self.holonomic(res.x)))):.3e} after "
                                 f"{int(res.iterations)} Newton steps); give a q0 nearer the constraint")
            q = np.asarray(res.x)
            G, V, mu, nu, dV, phi = (np.asarray(x) for x in self._evaluate_all(q))
        scale = max(1.0, float(np.max(np.abs(G))))
        if np.max(np.abs(G - G.T)) > SYMMETRY_RTOL * scale:
            raise SystemDefinitionError(
                f"mass_matrix(q0) is not symmetric (max |G - Gᵀ| = {np.max(np.abs(G - G.T)):.3e})")
        eig = np.linalg.eigvalsh(G)
        if eig[0] <= DEFINITENESS_RTOL * max(abs(eig[-1]), 1e-300):
            raise SystemDefinitionError(
                f"mass_matrix(q0) is not positive definite (eigenvalues {eig}); "
                "the kinetic metric must be symmetric positive definite")
        sv = np.linalg.svd(mu, compute_uv=False)
        if sv[-1] <= RANK_RTOL * max(sv[0], 1e-300):
            if self._phi is not None:
                raise SystemDefinitionError(
                    f"the configuration and rolling constraints are dependent at q0: (Φ(q0); μ(q0)) is "
                    f"rank-deficient (singular values {sv}); drop the rows that repeat another")
            raise SystemDefinitionError(
                f"constraint_matrix(q0) is rank-deficient (singular values {sv}); "
                "its rows must be independent")
        if v0 is None:
            return q, None
        v = _as_vector(v0, "v0")
        if v.size != n:
            raise InputError(f"v0 has length {v.size} but q0 has length {n}")
        if self.has_force:
            self._check_force(q, v)
        res = mu @ v - nu
        bound = tol * max(1.0, float(np.max(np.abs(v))))
        if np.max(np.abs(res)) > bound:
            if not project:
                raise ConstraintViolationError(
                    f"v0 violates the constraints: |μ(q0) v0 − ν(q0)| = {np.max(np.abs(res)):.3e} "
                    f"> {bound:.1e} (residual {res}); pass project=True (CLI: --project) to project "
                    "v0 onto the constraint space in the kinetic metric", res)
            given = v
            if project == "dependent":
                v = v.copy()
                A = mu[:, dep_v]
                sv = np.linalg.svd(A, compute_uv=False)
                if sv[-1] <= RANK_RTOL * max(sv[0], 1e-300):
                    raise InputError(f"project=\"dependent\": the speeds {dep_v.tolist()} are not determined by "
                                     f"the others at q0 (the columns of (Φ; μ) for them are singular, singular "
                                     f"values {np.array2string(sv, precision=3)}); choose other independent_speeds")
                v[dep_v] = np.linalg.solve(A, nu - np.delete(mu, dep_v, axis=1) @ np.delete(v, dep_v))
                return q, v
            v = np.asarray(self.project_velocity(jnp.asarray(q), jnp.asarray(v)))
            change = float(np.max(np.abs(v - given))) / max(float(np.max(np.abs(given))), 1e-300)
            if change > PROJECTION_WARN:
                warnings.warn(f"project=True changed v0 by {100 * change:.0f}% (max |Δv| / max |v0|): "
                              f"{np.array2string(given, precision=4)} -> {np.array2string(v, precision=4)}; "
                              f"give a v0 on the constraints to keep what you specified", UserWarning, stacklevel=4)
        return q, v

    def _check_force(self, q, v):
        """InputError unless force(q0, v0, t) (and its control) is a finite array of shape (n,)."""
        with jax.ensure_compile_time_eval():
            try:
                out = self.force(jnp.asarray(q), jnp.asarray(v))
            except (TypeError, ValueError, IndexError) as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise InputError(f"force(q0, v0, t{', u' if self._force_takes_u else ''}) fails ({first}); it must "
                                 f"return an array of shape ({q.size},)") from None
        if jnp.shape(out) != (q.size,):
            raise InputError(f"force(q0, v0, t) returned shape {jnp.shape(out)}; expected ({q.size},), one "
                             f"generalized force per coordinate")
        if linalg.traced(out):           # traced controls (dl.solve under jax.grad): shapes only
            return
        f = np.asarray(out)
        if not np.all(np.isfinite(f)):
            raise InputError(f"force(q0, v0, t) is not finite ({np.array2string(f, precision=3)}); check the force "
                             f"(and the controls) at the initial state")

    def _solve_dependent_q(self, q, dep):
        """q with its coordinates ``dep`` (k indices) solved from φ(q) = 0 (the project's Newton,
        :func:`~dalembert.solvers.newton.newton`), the others as given (``project="dependent"``);
        InputError when Φ[:, dep] is singular at q or Newton fails."""
        from ..solvers.newton import newton
        sv = np.linalg.svd(np.asarray(self.holonomic_jacobian(jnp.asarray(q)))[:, dep], compute_uv=False)
        if not np.all(np.isfinite(sv)) or sv[-1] <= RANK_RTOL * max(sv[0], 1e-300):
            raise InputError(f'project="dependent": the coordinates {dep.tolist()} are not determined by the '
                             f"others at q (the columns of Φ for them are singular, singular values "
                             f"{np.array2string(sv, precision=3)}); choose other independent_coordinates")
        x = jnp.asarray(q)
        res = jax.jit(lambda y: newton(lambda z: self.holonomic(x.at[dep].set(z)), y, rtol=1e-14, max_iter=50))(x[dep])
        out = np.asarray(x.at[dep].set(res.x))
        if not bool(res.converged):
            raise InputError(f'project="dependent": Newton on the coordinates {dep.tolist()} did not reach φ = 0 '
                             f"(|φ| = {np.max(np.abs(np.asarray(self.holonomic(jnp.asarray(out))))):.3e} after "
                             f"{int(res.iterations)} steps); give a q0 nearer the constraint")
        return out

    def _project_q(self, q):
        """:meth:`project_configuration` compiled once per system (its Newton is a while loop)."""
        if getattr(self, "_project_q_fn", None) is None:
            self._project_q_fn = jax.jit(lambda x: self.project_configuration(x))
        return self._project_q_fn(q)
