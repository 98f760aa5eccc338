"""Mechanical systems on shape × group, Q = R^n × G (G = SO(3) by default, or any matrix Lie group of
:mod:`dalembert.lie.groups`: SO(n), SE(2), SE(3)), in trivialised velocities.

Ferraro, Jiménez, Martín de Diego, "New developments on the geometric nonholonomic integrator",
Nonlinearity 28 (2015) 871, §7.1–§7.3 and Remark 7.2 (with errata E6 and E12,
docs/theory/ferraro2015.md#e6 and #e12; the Lie-group GNI on R^n × SO(3) is ours,
docs/theory/ferraro2015.md).

Below "3" is the group's dimension d and R its element (an N × N matrix). Velocities are
trivialised: u = (ẋ, ξ) ∈ R^{n+3} with ξ = RᵀṘ (body, ``trivialization="left"``; R⁻¹Ṙ in general)
or ξ = ṘRᵀ (spatial, ``"right"``; legitimate for a reduction only when the metric is
bi-invariant, Ferraro et al. 2015, Remark 7.2). The Lagrangian is

    l(x, R, ẋ, ξ) = ½ uᵀ G̃(x, R) u − V(x, R),   G̃ = [[G̃_xx, G̃_xg], [G̃_gx, G̃_gg]]  ((n+3) × (n+3), SPD),

and the (possibly affine) constraints are μ̃(x, R) u = ν̃(x, R) with μ̃ = [μ | η] (m × (n+3)).
When nothing depends on R this is a genuine reduced system on TM × g (§7.1–§7.3); when the
constraints, the metric or the potential depend on R, it is the left-trivialised unreduced system
on R^n × SO(3) (the rolling ball of §7.4, μ̃(R) = [[1, 0, −r R[1, :]], [0, 1, r R[0, :]]],
ν̃ = (−Θy, Θx); a tilting disk, whose centre's height, hence its kinetic and potential energy,
depends on R). An R-dependent metric or potential needs the left trivialization.

Equations of motion (Lagrange–d'Alembert; λ with the sign of G u̇ = f + μᵀλ), p = G̃u = (p_x, m):

    d/dt p_x = ∂_x l + μᵀλ,
    d/dt m   = ± ad*_ξ m + ∇_R l + ηᵀλ      (+ left: ṁ = m × ξ;  − right: ṁ = ξ × m on SO(3)),
    Ṙ = R ξ̂ (left)  or  ξ̂ R (right),     μ̃(x, R) u = ν̃(x, R),

with ∂_x l = ½ uᵀ ∂_x G̃ u − V_x and ∇_R l the left-trivialised gradient of l in R at fixed u
(⟨∇_R l, η⟩ = d/dε l(x, R exp(εη̂), u); zero when G̃ and V do not depend on R): the
Euler–Poincaré equation with a configuration-dependent Lagrangian, from δξ = η̇ + ξ × η.
Differentiating the constraint along the flow (x- and R-dependence of μ̃, ν̃ by autodiff) gives the
index-1 system  G̃ u̇ = f + μ̃ᵀλ,  C̃ λ = ν̃̇ − μ̃̇ u − μ̃ G̃⁻¹ f,  C̃ = μ̃ G̃⁻¹ μ̃ᵀ
(f collects the ad* term, ∂_x l, ∇_R l and −(dG̃/dt) u).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import clock, linalg
from ..declarations import Feature, NodeArray, Role
from ..errors import ConstraintViolationError, ConvergenceError, InputError, SystemDefinitionError
from ..lie import so3
from .kind import SystemKind, check_spd, checked_group, refuse_complex, traced_once
from .torque import ControlledForce

_TRIVIALIZATIONS = ("left", "right")


def positional_parameters(fn, *, required: bool = True) -> int:
    """How many positional parameters a user callable takes (``required``: only those without a
    default); 0 when its signature cannot be read."""
    import inspect
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 0
    return sum(q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD) and not (required and q.default is not q.empty)
               for q in params)


def takes_group(fn) -> bool:
    """Whether a user callable is written as f(x, R) (two or more positional parameters without
    defaults) rather than f(x). Callables whose signature cannot be read count as f(x)."""
    return positional_parameters(fn) >= 2


def _callable_output(fn, args, what, name):
    try:
        out = fn(*args)
    except Exception as exc:  # noqa: BLE001 - report which callable failed
        raise SystemDefinitionError(f"{name}: evaluating {what} failed: {type(exc).__name__}: {exc}") from exc
    refuse_complex(out, f"{name}: {what}")
    try:
        return np.asarray(out, dtype=float)
    except Exception as exc:  # noqa: BLE001 - report which callable failed
        raise SystemDefinitionError(f"{name}: evaluating {what} failed: {type(exc).__name__}: {exc}") from exc


class ReducedSystem(ControlledForce, SystemKind):
    """A mechanical system on R^n × G in trivialised velocities (module doc); below, 3 and (3, 3)
    stand for the group's dimension d and its matrix size (N, N) when ``group`` is not SO(3).

    Parameters
    ----------
    metric : (n+3, n+3) symmetric positive definite array (constant blocks xx, xg, gg), or a
        traceable callable x (n,) -> (n+3, n+3), or (x (n,), R (3, 3)) -> (n+3, n+3) for a metric
        that depends on the group variable (read from the callable's signature: two positional
        parameters; left trivialization only). Units: kinetic energy per squared velocity.
    constraint_matrix : (m, n+3) array (or (n+3,) for m = 1), or a traceable callable
        (x (n,), R (3, 3)) -> (m, n+3): rows μ̃^a = [μ^a | η^a]; rows independent, 1 ≤ m ≤ n+2.
    potential : callable x (n,) -> scalar V(x), or (x, R) -> scalar V(x, R) (left trivialization
        only; e.g. gravity on a body whose height depends on R); default 0. Units: J.
    constraint_rhs : None (linear constraints) or a callable (x, R) -> (m,): ν̃; the constraint
        is μ̃(x, R)(ẋ, ξ) = ν̃(x, R) (affine when given).
    shape_dim : n; inferred from a constant metric (size − 3) or a constant constraint matrix
        (columns − 3); required when both are callables.
    group : a :class:`~dalembert.lie.groups.MatrixLieGroup` (default SO(3)), e.g. ``dl.lie.SE(2)``;
        with it n = 0 (no shape) is allowed: a system on G alone (the Chaplygin sleigh on SE(2)).
    trivialization : ``"left"`` (ξ = RᵀṘ, body; R_{k+1} = R_k τ(hξ_k)) or ``"right"``
        (ξ = ṘRᵀ, spatial; R_{k+1} = τ(hξ_k) R_k, Remark 7.2 with erratum E12,
        docs/theory/ferraro2015.md#e12).
    name : label used in trajectories and reports.
    holonomic_constraints : not supported: any value other than None raises InputError naming
        the way to write a configuration constraint (a ``NonholonomicSystem`` in coordinates).
    force : optional traceable callable ``force(x, R, xdot, xi, t) -> (f_x, tau)``: the
        non-conservative force on the shape, f_x (n,), in the shape coordinates' own units (N for
        lengths), and the torque on the group, tau (3,), trivialised as ξ is (left: body frame,
        N·m about the body axes; right: spatial frame), so that the power is f_x·ẋ + tau·ξ (W).
        It enters G̃u̇ = f + (f_x, tau) + μ̃ᵀλ, the forced discrete Lagrange–d'Alembert principle of
        the methods that accept forces (discrete forces f_d^± = (h/2)(f_x, tau) at the step's ends,
        Marsden–West, Acta Numerica 2001, §3.2, left-trivialised on the group) and the reference;
        ``traj.work`` is its work (:mod:`dalembert.engine.forcing`). Example: PyDy's rattleback
        friction, ``lambda x, R, xd, xi, t: (jnp.zeros(2), -1e-4 * xi)``. A sixth positional
        parameter is a control: ``force(x, R, xdot, xi, t, u)`` with u (c,), the conventions of
        ``NonholonomicSystem(force=f(q, v, t, u))`` (:class:`~dalembert.systems.torque.ControlledForce`).
    controls : the control signal of a force that takes u: an (N, c) array, one row per step
        (u_k held over step k), or a callable t -> (c,); usually given to ``dl.integrate`` or
        ``dl.solve(..., controls=U)`` instead (:meth:`with_controls`).

    Attributes ``group_metric`` and ``group_potential`` say whether G̃ and V depend on R.

    System-kind protocol: ``state_names = ("x0", "R0", "xdot0", "xi0")``,
    :meth:`check_initial_state`, :meth:`diagnostics` (energy, constraint_residual (m,),
    orthogonality_defect, omega = the spatial angular velocity).

    Raises
    ------
    InputError : ``force`` not a callable; ``controls`` given to a force that takes none, not a
        finite 2-D array (or of the wrong number of rows for the run); at the initial state
        (:meth:`check_initial_state`) a force that fails, does not return a pair of shapes
        ((n,), (3,)), or is not finite.
    SystemDefinitionError (an InputError) : metric not symmetric / not positive definite / wrong shape,
        a callable that fails or returns the wrong shape, rank-deficient constraint matrix,
        unknown trivialization, undeterminable shape_dim, an R-dependent metric or potential
        with the right trivialization.
    """

    state_names = ("x0", "R0", "xdot0", "xi0")
    kind = "reduced"
    controlled_signature = "force(x, R, xdot, xi, t, u)"
    path_array = "x"
    node_arrays = (NodeArray("x", Role.CONFIGURATION, state="x0", symbol="x"),
                   NodeArray("R", Role.GROUP_ELEMENT, "dimensionless", state="R0", symbol="R"),
                   NodeArray("omega", Role.GROUP_VELOCITY, "rad/s", symbol="ω (spatial)"),
                   NodeArray("xdot", Role.VELOCITY, "system units per s", state="xdot0", symbol="ẋ"),
                   NodeArray("xi", Role.GROUP_VELOCITY, "rad/s", state="xi0", symbol="ξ"),
                   NodeArray("momentum", Role.MOMENTUM, symbol="p"),
                   NodeArray("lam", Role.MULTIPLIER, symbol="λ"))
    #: the smaller of the two slopes counts
    order_arrays = ("x", "R")

    def __init__(self, metric, constraint_matrix, potential=None, constraint_rhs=None,
                 shape_dim=None, trivialization: str = "left", name: str = "reduced", group=None,
                 holonomic_constraints=None, force=None, controls=None):
        self.name = str(name)
        if force is not None:
            if not callable(force):
                raise InputError(f"{name}: force must be a callable force(x, R, xdot, xi, t[, u]) -> (f_x (n,), "
                                 f"tau (3,)); got {type(force).__name__}")
        self._external = force
        self._init_controls(force is not None and positional_parameters(force) >= 6, controls, name)
        if holonomic_constraints is not None:
            raise InputError(f"{name}: ReducedSystem takes no configuration constraints (lie-gni, reduced-gni "
                             "and reduced-rattle impose none); write the system in coordinates as "
                             "dl.NonholonomicSystem(..., holonomic_constraints=phi), which nh-rattle-sym, "
                             "spark-lobatto3 and gonzalez-f integrate")
        self.group = group = checked_group(group, name)
        self.is_so3 = group.name == "SO(3)"
        d = self.group_dim = group.dim
        min_n = 0
        if trivialization not in _TRIVIALIZATIONS:
            raise SystemDefinitionError(f"{name}: unknown trivialization {trivialization!r}; choose from: left, right")
        self.trivialization = trivialization
        self.left = trivialization == "left"

        # --- dimensions -------------------------------------------------------------------------
        if shape_dim is None:
            if not callable(metric):
                G = np.asarray(metric, dtype=float)
                if G.ndim != 2 or G.shape[0] != G.shape[1] or G.shape[0] < d + min_n:
                    raise SystemDefinitionError(f"{name}: metric must be a square (n+{d}, n+{d}) array with n ≥ {min_n}; "
                                       f"got shape {G.shape}")
                shape_dim = G.shape[0] - d
            elif not callable(constraint_matrix):
                mu = np.atleast_2d(np.asarray(constraint_matrix, dtype=float))
                shape_dim = mu.shape[1] - d
            else:
                raise SystemDefinitionError(f"{name}: shape_dim (n) is required when metric and constraint_matrix "
                                   "are both callables")
        if int(shape_dim) != shape_dim or shape_dim < min_n:
            raise SystemDefinitionError(f"{name}: shape_dim must be an integer ≥ {min_n}; got {shape_dim!r}")
        n = self.n = int(shape_dim)
        N = self.dim = n + d
        x_test = np.zeros(n)
        R_test = np.eye(group.matrix_size)

        # --- metric ----------------------------------------------------------------------------
        self.constant_metric = not callable(metric)
        self.group_metric = not self.constant_metric and takes_group(metric)
        self.group_potential = potential is not None and takes_group(potential)
        if (self.group_metric or self.group_potential) and not self.left:
            raise SystemDefinitionError(f"{name}: a metric or potential that depends on R needs "
                               "trivialization='left' (the right-trivialised form is a reduction, "
                               "valid only for R-independent, bi-invariant metrics)")
        if self.constant_metric:
            refuse_complex(metric, f"{name}: metric")
            G = np.asarray(metric, dtype=float)
            self._check_metric(G, "metric")
            Gj = jnp.asarray(G)
            self._metric_fn = lambda x, R: Gj
            self.metric_matrix = G
        else:
            self._metric_fn = metric if self.group_metric else (lambda x, R: metric(x))
            what = "metric(x, R)" if self.group_metric else "metric(x)"
            G = _callable_output(self._metric_fn, (jnp.asarray(x_test), jnp.asarray(R_test)), what, name)
            self._check_metric(G, f"{what} at x = 0" + (", R = I" if self.group_metric else ""))
            self.metric_matrix = None

        # --- potential -------------------------------------------------------------------------
        if potential is None:
            self._V_fn = lambda x, R: jnp.zeros((), jnp.float64)
        else:
            self._V_fn = potential if self.group_potential else (lambda x, R: potential(x))
        what = "potential(x, R)" if self.group_potential else "potential(x)"
        V0 = _callable_output(self._V_fn, (jnp.asarray(x_test), jnp.asarray(R_test)), what, name)
        if V0.shape != ():
            raise SystemDefinitionError(f"{name}: {what} must return a scalar; got shape {V0.shape}")

        # --- constraints -----------------------------------------------------------------------
        self.constant_constraints = not callable(constraint_matrix)
        if self.constant_constraints:
            mu = np.atleast_2d(np.asarray(constraint_matrix, dtype=float))
            muj = jnp.asarray(mu)
            self._mu_fn = lambda x, R: muj
        else:
            self._mu_fn = constraint_matrix
            mu = np.atleast_2d(_callable_output(constraint_matrix, (jnp.asarray(x_test), jnp.asarray(R_test)),
                                                "constraint_matrix(x, R)", name))
        if mu.ndim != 2 or mu.shape[1] != N:
            raise SystemDefinitionError(f"{name}: constraint_matrix must have shape (m, n+{d}) = (m, {N}); got {mu.shape}")
        m = self.m = mu.shape[0]
        if not 1 <= m <= N - 1:
            raise SystemDefinitionError(f"{name}: need 1 ≤ m ≤ n+{d - 1} = {N - 1} constraints; got m = {m}")
        if not np.all(np.isfinite(mu)):
            raise SystemDefinitionError(f"{name}: constraint_matrix has non-finite entries")
        sv = np.linalg.svd(mu, compute_uv=False)
        if sv[-1] <= 1e-10 * max(1.0, sv[0]):
            raise SystemDefinitionError(f"{name}: constraint_matrix is rank deficient at x = 0, R = I "
                               f"(singular values {sv}); its rows must be independent")

        self.affine = constraint_rhs is not None
        if self.affine:
            self._nu_fn = constraint_rhs
            nu = np.atleast_1d(_callable_output(constraint_rhs, (jnp.asarray(x_test), jnp.asarray(R_test)),
                                                "constraint_rhs(x, R)", name))
            if nu.shape != (m,):
                raise SystemDefinitionError(f"{name}: constraint_rhs must return shape (m,) = ({m},); got {nu.shape}")
        else:
            self._nu_fn = lambda x, R: jnp.zeros((m,), jnp.float64)

    def _check_metric(self, G, what):
        N = self.dim
        if G.shape != (N, N):
            raise SystemDefinitionError(f"{self.name}: {what} must have shape (n+{self.group_dim}, n+{self.group_dim}) = "
                               f"({N}, {N}); got {G.shape}")
        check_spd(G, f"{self.name}: {what}")

    def __repr__(self):
        return (f"<ReducedSystem {self.name}: R^{self.n} × {self.group.name}, m = {self.m}, {self.trivialization}"
                f"{', affine' if self.affine else ''}{', G̃(x, R)' if self.group_metric else ''}"
                f"{', V(x, R)' if self.group_potential else ''}>")

    @property
    def group_dependent(self) -> bool:
        """Whether the metric or the potential depends on R (then l is not left-invariant)."""
        return self.group_metric or self.group_potential

    def _group_arg(self, R, needed, what):
        if R is None:
            if needed:
                raise InputError(f"{self.name}: the {what} depends on R; pass R")
            return jnp.eye(self.group.matrix_size, dtype=jnp.float64)
        return jnp.asarray(R, jnp.float64)

    # --- the model (jit-able, unbatched) --------------------------------------------------------
    def metric(self, x, R=None):
        """G̃(x, R), shape (n+3, n+3) (R (3, 3) needed only when ``group_metric``)."""
        R = self._group_arg(R, self.group_metric, "metric")
        return jnp.asarray(traced_once(self, self._metric_fn)(jnp.asarray(x, jnp.float64), R), jnp.float64)

    def metric_blocks(self, x, R=None):
        """(G̃_xx (n, n), G̃_xg (n, 3), G̃_gg (3, 3)) at (x, R)."""
        G = self.metric(x, R)
        n = self.n
        return G[:n, :n], G[:n, n:], G[n:, n:]

    def constraint_matrix(self, x, R):
        """μ̃(x, R) = [μ | η], shape (m, n+3)."""
        mu = jnp.asarray(traced_once(self, self._mu_fn)(jnp.asarray(x, jnp.float64), jnp.asarray(R, jnp.float64)), jnp.float64)
        return mu.reshape(self.m, self.dim)

    def constraint_rhs(self, x, R):
        """ν̃(x, R), shape (m,) (zeros for linear constraints)."""
        nu = jnp.asarray(traced_once(self, self._nu_fn)(jnp.asarray(x, jnp.float64), jnp.asarray(R, jnp.float64)), jnp.float64)
        return nu.reshape(self.m)

    def potential(self, x, R=None):
        """V(x, R), scalar (R needed only when ``group_potential``)."""
        R = self._group_arg(R, self.group_potential, "potential")
        return jnp.asarray(traced_once(self, self._V_fn)(jnp.asarray(x, jnp.float64), R), jnp.float64)

    def potential_gradient(self, x, R=None):
        """V_x(x, R), shape (n,)."""
        return jax.grad(self.potential)(jnp.asarray(x, jnp.float64), R)

    @staticmethod
    def velocity_vector(xdot, xi):
        """u = (ẋ, ξ), shape (n+3,)."""
        return jnp.concatenate([jnp.asarray(xdot, jnp.float64), jnp.asarray(xi, jnp.float64)])

    def momentum(self, x, xdot, xi, R=None):
        """p = G̃(x, R)(ẋ, ξ), shape (n+3,): (p_x, m) with m the trivialised angular momentum."""
        return linalg.mv(self.metric(x, R), self.velocity_vector(xdot, xi))

    def energy(self, x, xdot, xi, R=None):
        """½ uᵀG̃(x, R)u + V(x, R) (J); R needed when ``group_dependent``."""
        u = self.velocity_vector(xdot, xi)
        return 0.5 * jnp.sum(u * linalg.mv(self.metric(x, R), u)) + self.potential(x, R)

    def constraint_residual(self, x, R, xdot, xi):
        """μ̃(x, R) u − ν̃(x, R), shape (m,)."""
        u = self.velocity_vector(xdot, xi)
        return linalg.mv(self.constraint_matrix(x, R), u) - self.constraint_rhs(x, R)

    def spatial_angular_velocity(self, R, xi):
        """ω = Rξ = Ad_R ξ (left trivialization) or ξ (right), shape (3,): the spatial velocity."""
        xi = jnp.asarray(xi, jnp.float64)
        if not self.left:
            return xi
        return linalg.mv(R, xi) if self.is_so3 else self.group.Ad(R) @ xi

    def gram(self, x, R, G=None):
        """(μ̃ (m, n+3), G̃⁻¹μ̃ᵀ (n+3, m), C̃ = μ̃G̃⁻¹μ̃ᵀ (m, m)) at (x, R), by solves."""
        G = self.metric(x, R) if G is None else G
        mu = self.constraint_matrix(x, R)
        Z = linalg.solve_spd(G, mu.T)
        return mu, Z, linalg.mm(mu, Z)

    def reflect(self, x, R, p):
        """(P − Q)* p + 2 μ̃ᵀC̃⁻¹ν̃ at (x, R) ((38) with the sign of Π corrected: erratum E6,
        docs/theory/ferraro2015.md#e6), shape (n+3,)."""
        mu, Z, C = self.gram(x, R)
        s = linalg.solve_spd(C, linalg.vm(p, Z) - self.constraint_rhs(x, R))
        return p - 2.0 * linalg.vm(s, mu)

    def project_momentum(self, x, R, p):
        """P* p + Q*Π = p − μ̃ᵀC̃⁻¹(μ̃G̃⁻¹p − ν̃): the constraint-consistent momentum, (n+3,)."""
        mu, Z, C = self.gram(x, R)
        s = linalg.solve_spd(C, linalg.vm(p, Z) - self.constraint_rhs(x, R))
        return p - linalg.vm(s, mu)

    def project(self, x, R, xdot, xi):
        """G̃-orthogonal projection of (ẋ, ξ) onto {μ̃u = ν̃}: (ẋ (n,), ξ (3,))."""
        G = self.metric(x, R)
        p = self.project_momentum(x, R, linalg.mv(G, self.velocity_vector(xdot, xi)))
        u = linalg.solve_spd(G, p)
        return u[:self.n], u[self.n:]

    def _Rdot(self, R, xi):
        X = self.group.hat(xi)
        return R @ X if self.left else X @ R

    def _force(self, x, R, xdot, xi):
        """f = (∂_x l, ±ad*_ξ m + ∇_R l) − (dG̃/dt)u (the non-constraint right-hand side of G̃u̇)."""
        u = self.velocity_vector(xdot, xi)
        G = self.metric(x, R)
        m = linalg.mv(G, u)[self.n:]

        def lagrangian(y, S):
            return 0.5 * jnp.sum(u * linalg.mv(self.metric(y, S), u)) - self.potential(y, S)

        dldx = jax.grad(lagrangian)(x, R)
        if self.constant_metric:
            dGu = jnp.zeros_like(u)
        else:
            dGu = jax.jvp(lambda y, S: linalg.mv(self.metric(y, S), u), (x, R),
                          (u[:self.n], self._Rdot(R, u[self.n:])))[1]
        adstar = self.group.ad_star(xi, m) if self.left else -self.group.ad_star(xi, m)
        if self.group_dependent:
            adstar = adstar + self.group.left_gradient(lambda S: lagrangian(x, S), R)
        out = jnp.concatenate([dldx, adstar]) - dGu
        return out + self.force(x, R, xdot, xi) if self.has_force else out

    # --- the non-conservative force ---------------------------------------------------------------
    @property
    def has_force(self) -> bool:
        """True if the system has a non-conservative force or torque (``force=``)."""
        return self._external is not None

    @property
    def timed(self) -> bool:
        """True if the system reads the engine's clock (a force): it is then stepped on the clock and
        its work is accounted (:mod:`dalembert.engine.forcing`)."""
        return self.has_force

    #: no V(x, t) or ν̃(x, t) on this kind (their time is the force's only)
    explicit_time = False

    def force(self, x, R, xdot, xi, dt=0.0):
        """(f_x, τ) concatenated, shape (n+3,), at the clock's time + dt (:mod:`dalembert.clock`):
        the generalized force in the trivialised velocities u = (ẋ, ξ); zeros without one. A
        force that takes a control gets u = :meth:`control` (the current step's row)."""
        if self._external is None:
            return jnp.zeros((self.dim,), jnp.float64)
        t = clock.now()[0] + dt
        args = "x, R, xdot, xi, t" + (", u" if self.controlled else "")
        out = (self._external(x, R, xdot, xi, t, self.control(dt)) if self.controlled
               else self._external(x, R, xdot, xi, t))
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise InputError(f"{self.name}: force({args}) must return a pair (f_x ({self.n},), "
                             f"tau ({self.group_dim},)); got {type(out).__name__}")
        fx, tau = (jnp.asarray(a, jnp.float64) for a in out)
        if fx.shape != (self.n,) or tau.shape != (self.group_dim,):
            raise InputError(f"{self.name}: force({args}) returned shapes {fx.shape} and {tau.shape}; "
                             f"expected f_x ({self.n},) and tau ({self.group_dim},) (the torque in the "
                             f"{'body' if self.left else 'spatial'} frame)")
        return jnp.concatenate([fx, tau])

    def _check_force(self, x, R, xd, xi):
        """InputError unless force(x0, R0, ẋ0, ξ0, t0[, u]) is finite with the right shapes."""
        args = "x0, R0, xdot0, xi0, t" + (", u" if self.controlled else "")
        with jax.ensure_compile_time_eval():
            try:
                out = self.force(*(jnp.asarray(a) for a in (x, R, xd, xi)))
            except InputError:
                raise
            except (TypeError, ValueError, IndexError) as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise InputError(f"{self.name}: force({args}) fails ({first}); it must return "
                                 f"(f_x ({self.n},), tau ({self.group_dim},))") from None
        if linalg.traced(out):
            return
        f = np.asarray(out)
        if not np.all(np.isfinite(f)):
            raise InputError(f"{self.name}: force({args}) is not finite "
                             f"(f_x, tau = {np.array2string(f, precision=3)}); check the force (and the controls) "
                             f"at the initial state")

    @property
    def has_supply(self) -> bool:
        """True if energy enters other than by the force: affine constraints (power λᵀν̃)."""
        return self.affine

    def power(self, x, R, xdot, xi, dt=0.0):
        """P = f_x·ẋ + τ·ξ + λᵀν̃ (W) at the clock's time + dt: the power of the force and (affine
        constraints) of the constraint force, λ the index-1 multiplier; dE/dt = P along the
        equations of motion (E = ½uᵀG̃u + V)."""
        u = self.velocity_vector(xdot, xi)
        p = jnp.sum(self.force(x, R, xdot, xi, dt) * u)
        if self.affine:
            with clock.shifted(dt):
                p = p + jnp.sum(self.multiplier(x, R, xdot, xi) * self.constraint_rhs(x, R))
        return p

    # the engine's work hooks (:mod:`dalembert.engine.forcing`): the node is ((x, R), (ẋ, ξ))
    @staticmethod
    def work_node(obs: dict):
        """((x, R), (ẋ, ξ)) of a node observation: what the work quadrature reads."""
        return (obs["x"], obs["R"]), (obs["xdot"], obs["xi"])

    def power_and_rate(self, c, u, dt, *, rate: bool = True):
        """(P, Ṗ) at a node c = (x, R), u = (ẋ, ξ): the power :meth:`power` at the clock's time + dt
        and its time derivative along the motion, Ṗ = d/ds P(x + sẋ, R(I + sξ̂), ẋ + sẍ, ξ + sξ̇, t + s)
        at s = 0 (first order in s is all the tangent needs), by forward-mode autodiff (the Hermite
        work rule of order 4); (P, None) with ``rate=False`` (the trapezoidal rule below order 4)."""
        (x, R), (xd, xi) = c, u
        if not rate:
            return self.power(x, R, xd, xi, dt), None
        with clock.shifted(dt):
            a = self.acceleration(x, R, xd, xi)
        X = self.group.hat(xi)
        Rdot = R @ X if self.left else X @ R

        def p(s):
            return self.power(x + s * xd, R + s * Rdot, xd + s * a[:self.n], xi + s * a[self.n:], dt + s)
        return jax.jvp(p, (jnp.zeros((), jnp.float64),), (jnp.ones((), jnp.float64),))

    def multiplier(self, x, R, xdot, xi):
        """Continuous multiplier λ (m,): C̃λ = ν̃̇ − μ̃̇u − μ̃G̃⁻¹f (module doc)."""
        x = jnp.asarray(x, jnp.float64)
        R = jnp.asarray(R, jnp.float64)
        u = self.velocity_vector(xdot, xi)
        G = self.metric(x, R)
        mu, Z, C = self.gram(x, R, G)
        f = self._force(x, R, xdot, xi)
        tangent = (u[:self.n], self._Rdot(R, u[self.n:]))
        mudot = jax.jvp(self.constraint_matrix, (x, R), tangent)[1]
        nudot = jax.jvp(self.constraint_rhs, (x, R), tangent)[1]
        rhs = nudot - linalg.mv(mudot, u) - linalg.vm(f, Z)
        return linalg.solve_spd(C, rhs)

    def acceleration(self, x, R, xdot, xi):
        """u̇ = (ẍ, ξ̇), shape (n+3,), of the index-1 equations."""
        x = jnp.asarray(x, jnp.float64)
        R = jnp.asarray(R, jnp.float64)
        lam = self.multiplier(x, R, xdot, xi)
        mu = self.constraint_matrix(x, R)
        f = self._force(x, R, xdot, xi)
        return linalg.solve_spd(self.metric(x, R), f + linalg.vm(lam, mu))

    def vector_field(self, x, R, xdot, xi):
        """(ẋ (n,), Ṙ (3, 3), ẍ (n,), ξ̇ (3,)) of the index-1 equations."""
        a = self.acceleration(x, R, xdot, xi)
        return jnp.asarray(xdot, jnp.float64), self._Rdot(R, jnp.asarray(xi, jnp.float64)), a[:self.n], a[self.n:]

    # --- the system-kind protocol -------------------------------------------------------------------
    def features(self, *state0) -> frozenset:
        """AFFINE_CONSTRAINTS (ν̃ given), CONFIGURATION_METRIC (a callable metric),
        ATTITUDE_POTENTIAL (V depends on R), RIGHT_TRIVIALISED, GROUP_NOT_SO3, FORCES (``force=``),
        CONTROLS (a force that takes u)."""
        flags = {Feature.AFFINE_CONSTRAINTS: self.affine, Feature.CONFIGURATION_METRIC: not self.constant_metric,
                 Feature.ATTITUDE_POTENTIAL: self.group_potential, Feature.RIGHT_TRIVIALISED: not self.left,
                 Feature.GROUP_NOT_SO3: not self.is_so3, Feature.FORCES: self.has_force,
                 Feature.CONTROLS: self.has_force and self.controlled}
        return frozenset(f for f, on in flags.items() if on)

    def check_initial_state(self, x0, R0, xdot0, xi0, *, project: bool = False, tol: float = 1e-10):
        """Validated (x0 (n,), R0 (3, 3), xdot0 (n,), xi0 (3,)) as float64 numpy arrays.

        R0 must be a rotation (|I − R0ᵀR0|_F ≤ tol, det > 0); the constraint residual
        ‖μ̃u0 − ν̃‖∞ must be ≤ tol·max(1, ‖u0‖∞) unless ``project=True`` (then u0 is projected
        G̃-orthogonally onto the affine constraint set).

        Raises
        ------
        InputError (shapes, non-finite values, R0 not a rotation, metric not SPD at x0),
        ConstraintViolationError (with ``.residual``); InputError for a force that fails or is
        not finite at the initial state (at the clock's time: the run's t0).
        """
        n, d, Ng = self.n, self.group_dim, self.group.matrix_size
        x = np.asarray(x0, dtype=float)
        R = np.asarray(R0, dtype=float)
        xd = np.asarray(xdot0, dtype=float)
        xi = np.asarray(xi0, dtype=float)
        if x.shape != (n,) or R.shape != (Ng, Ng) or xd.shape != (n,) or xi.shape != (d,):
            raise InputError(f"{self.name}: expected x0 ({n},), R0 ({Ng}, {Ng}), xdot0 ({n},), xi0 ({d},); got "
                             f"{x.shape}, {R.shape}, {xd.shape}, {xi.shape}")
        if not all(np.all(np.isfinite(a)) for a in (x, R, xd, xi)):
            raise InputError(f"{self.name}: the initial state must be finite")
        if self.is_so3:
            bad_rotation = so3.rotation_check(R, tol)
        else:
            defect = float(self.group.membership_defect(jnp.asarray(R)))
            bad_rotation = (f"R0 is not in {self.group.name} (defect {defect:.2e} > {tol:.0e})"
                            if defect > tol else "")
        if bad_rotation:
            raise InputError(f"{self.name}: {bad_rotation}")
        if not self.constant_metric:
            self._check_metric(np.asarray(self.metric(jnp.asarray(x), jnp.asarray(R))), "metric(x0, R0)")
        if self.has_force:
            self._check_force(x, R, xd, xi)
        res = np.asarray(self.constraint_residual(jnp.asarray(x), jnp.asarray(R), jnp.asarray(xd), jnp.asarray(xi)))
        bound = tol * max(1.0, float(np.max(np.abs(np.concatenate([xd, xi])))))
        if np.max(np.abs(res)) > bound:
            if not project:
                raise ConstraintViolationError(
                    f"{self.name}: the initial velocity violates the constraints: |μ̃u0 − ν̃| = "
                    f"{np.max(np.abs(res)):.3e} > {bound:.1e}; pass project=True to project it", res)
            xd, xi = (np.asarray(a) for a in self.project(jnp.asarray(x), jnp.asarray(R), jnp.asarray(xd),
                                                           jnp.asarray(xi)))
        return x, R, xd, xi

    def diagnostics(self, obs: dict) -> dict:
        """From node arrays x, R, xdot, xi: energy, constraint_residual (m,),
        orthogonality_defect |I − RᵀR|_F, omega (3,) the spatial angular velocity."""
        x, R, xd, xi = obs["x"], obs["R"], obs["xdot"], obs["xi"]
        return {"energy": self.energy(x, xd, xi, R),
                "constraint_residual": self.constraint_residual(x, R, xd, xi),
                "orthogonality_defect": (so3.orthogonality_defect(R) if self.is_so3
                                         else self.group.membership_defect(R)),
                "omega": self.spatial_angular_velocity(R, xi)}

    def reference_solution(self, x0, R0, xdot0, xi0, *, t, rtol: float = 1e-13,
                           atol: float = 1e-13) -> dict:
        """x, R, xdot, xi at times t from the index-1 equations by DOP853 (:func:`reference_solution`)."""
        out = reference_solution(self, x0, R0, xdot0, xi0, t, rtol=rtol, atol=atol)
        return {k: np.asarray(out[k]) for k in ("x", "R", "xdot", "xi")}


def _rhs_fn(system):
    from .._cache import cached
    n, Ng = system.n, system.group.matrix_size
    q = Ng * Ng

    def make():
        def f(t, y):
            x, R, xd, xi = y[:n], y[n:n + q].reshape(Ng, Ng), y[n + q:2 * n + q], y[2 * n + q:]
            # a force reads the time of the ODE solver (and a control array the row of its step)
            with clock.at(t, system.step_index(t) if system.timed else 0):
                parts = system.vector_field(x, R, xd, xi)
            return jnp.concatenate([a.ravel() for a in parts])
        return jax.jit(f)
    return cached(system, "reference rhs", make)


def reference_solution(system: ReducedSystem, x0, R0, xdot0, xi0, t, rtol: float = 1e-13,
                       atol: float = 1e-13) -> dict:
    """The index-1 equations (module doc) integrated by SciPy DOP853 on (x, R, ẋ, ξ) ∈ R^{2n+12}.

    Parameters
    ----------
    system : ReducedSystem.  x0 (n,), R0 (3, 3), xdot0 (n,), xi0 (3,): a consistent state at t[0]
        (a force is evaluated at the solver's times, so t[0] is the run's t0).
    t : (N,) increasing output times.  rtol, atol : SciPy tolerances.

    Returns
    -------
    dict with x (N, n), R (N, 3, 3), xdot (N, n), xi (N, 3), omega (N, 3) (spatial), t (N,).
    R is not kept on SO(3) by the ODE solver (drift ~1e-13 per unit time at these tolerances).

    Raises
    ------
    ConvergenceError if SciPy reports a failure.
    """
    from scipy.integrate import solve_ivp

    n, Ng = system.n, system.group.matrix_size
    q = Ng * Ng
    f = _rhs_fn(system)
    y0 = np.concatenate([np.asarray(x0, float).ravel(), np.asarray(R0, float).ravel(),
                         np.asarray(xdot0, float).ravel(), np.asarray(xi0, float).ravel()])
    t = np.asarray(t, float)
    sol = solve_ivp(lambda tau, y: np.asarray(f(tau, jnp.asarray(y))), (t[0], t[-1]), y0, method="DOP853",
                    t_eval=t, rtol=rtol, atol=atol)
    if not sol.success:
        raise ConvergenceError(f"reference ODE solver failed: {sol.message}", step=-1,
                               time=float(sol.t[-1]) if sol.t.size else float(t[0]))
    Y = sol.y.T
    out = {"t": t, "x": Y[:, :n], "R": Y[:, n:n + q].reshape(-1, Ng, Ng), "xdot": Y[:, n + q:2 * n + q],
           "xi": Y[:, 2 * n + q:]}
    out["omega"] = np.asarray(jax.vmap(system.spatial_angular_velocity)(jnp.asarray(out["R"]), jnp.asarray(out["xi"])))
    return out
