"""Almost-Poisson systems ẋ = Π(x) ∇H(x), and their dissipative and forced form
ẋ = (Π(x) − R(x)) ∇H(x) + F(x, t[, u]).

Sources: Celledoni, Farré Puiggalí, Høiseth, Martín de Diego, "Energy-preserving integrators
applied to nonholonomic systems" (2019), §2.2, equations (8)–(9); McLachlan, Quispel & Robidoux,
"Geometric integration using discrete gradients", Phil. Trans. R. Soc. A 357 (1999) 1021–1045,
§2 (the linear-gradient form ẋ = L(x)∇H(x) with L = Π − R, R symmetric positive semidefinite).

:class:`AlmostPoissonSystem` — a skew matrix field Π(x) (N × N) and a Hamiltonian H(x) on R^N.
H is a first integral because Π is skew: Ḣ = ∇Hᵀ Π ∇H = 0. ∇H comes from JAX autodiff. With a
dissipation R(x) (symmetric positive semidefinite) and a force F (e.g. B(x)u: an input matrix
and a control), Ḣ = −∇HᵀR∇H + ∇HᵀF: the dissipation only removes energy, the force supplies it.
The automatic reduction of a nonholonomic system to this form, on an atlas of charts, is
:mod:`dalembert.systems.reduction` (``dl.almost_poisson``); it carries the system's force.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import linalg
from ..errors import ConstraintViolationError, InputError, SystemDefinitionError
from ..declarations import NodeArray, Role
from .kind import SystemKind, _positional_count, traced_once
from .nonholonomic import _as_vector, _expect_real
from .torque import ControlledForce

#: A chart whose conditioning measure (1 at its anchor, 0 where its basis of the constraint
#: distribution degenerates; see :mod:`dalembert.systems.reduction`) falls below this value at a
#: step's midpoint or end makes the step fail: the basis and its derivatives vary ever faster
#: there. The reductions switch charts long before (at 0.5), so that no step reaches it.
DEGENERACY_TOL = 0.05
#: Π(x0) counts as skew when max |Π + Πᵀ| ≤ SKEW_RTOL · max(1, max |Π|); R(x0) as symmetric
#: positive semidefinite when max |R − Rᵀ| and −(its least eigenvalue) are ≤ SKEW_RTOL · max(1, max |R|).
SKEW_RTOL = 1e-12


class AlmostPoissonSystem(ControlledForce, SystemKind):
    """ẋ = Π(x) ∇H(x) on R^N with Π skew-symmetric (an almost-Poisson bracket {f, g} = ∇fᵀΠ∇g).

    Parameters
    ----------
    poisson_matrix : callable x (N,) -> (N, N)
        The structure matrix Π(x), skew-symmetric (checked at the initial state).
    hamiltonian : callable x (N,) -> scalar
        The energy H(x); ∇H is computed by autodiff.
    name : str
        Used in messages and metadata.
    constraint : callable x -> (k,), optional
        A residual the continuous flow keeps at zero, reported as ``constraint_residual``
        (for a reduced nonholonomic system: μ(q) v(x)). Default: none (a zero-length array).
    lift : callable x -> (q (n,), v (n,)), optional
        For a reduced nonholonomic system, the configuration and velocity of a state (16a);
        methods then report ``q`` and ``v`` at the nodes as well.
    reduce : callable (q, v) -> x, optional
        The inverse of ``lift`` on the constraint space (16b).
    nonholonomic : NonholonomicSystem, optional
        The system this one reduces (for references and diagnostics).
    degeneracy : callable x -> scalar, optional
        A measure ≥ 0 of the conditioning of the coordinate chart (the reduced basis); below
        :data:`DEGENERACY_TOL` the chart is degenerate and integrators stop with an error.
    dissipation : callable x (N,) -> (N, N), optional
        R(x), symmetric positive semidefinite (checked at the initial state): the term −R(x)∇H(x)
        of ẋ = (Π − R)∇H + F, which removes energy at the rate ∇HᵀR∇H ≥ 0 (units of H per unit
        of time). The discrete-gradient methods take it as −R(x̄)∇̄H, so that their energy can
        never increase through it (McLachlan, Quispel & Robidoux 1999, §2).
    force : callable, optional
        F(x, t) -> (N,), or F(x, t, u) -> (N,) with a control u (c,) (then ``controls=``): a
        term of ẋ that supplies energy at the rate ∇HᵀF. An input matrix B(x) (N, c) is
        ``force=lambda x, t, u: B(x) @ u``. The discrete-gradient methods evaluate it at the
        step's midpoint state and time, F̄ = F(x̄, t_k + h/2, u_k).
    controls : (N_steps, c) array or callable t -> (c,), optional
        The control signal of F(x, t, u), as for :class:`~dalembert.NonholonomicSystem`: one row
        per step (held over [t_k, t_{k+1})), or a function of time; :meth:`with_controls`.

    The callables take and return JAX arrays and must be traceable. ``state_names = ("x0",)``:
    ``dl.integrate(system, method, x0=..., ...)``. With a dissipation or a force, a run reports
    ``traj.work`` (N+1,): the energy W_k the dissipation and the force have supplied up to node k
    (negative for a loss), so that E_k − E_0 − W_k is the energy balance residual.

    Raises InputError for a non-callable argument, ``controls`` without a force that takes one.

    Sources: Celledoni et al. 2019, §2.2, (8)–(9); McLachlan, Quispel & Robidoux 1999, §2.
    """

    #: Keyword names of the initial state in ``dl.integrate`` (the system-kind protocol).
    state_names = ("x0",)
    kind = "almost-poisson"
    path_array = "x"
    node_arrays = (NodeArray("x", Role.STATE, state="x0", symbol="x"),
                   NodeArray("q", Role.CONFIGURATION, symbol="q"),
                   NodeArray("v", Role.VELOCITY, "system units per s", symbol="v"),
                   NodeArray("p", Role.MOMENTUM, symbol="p"))
    #: True for a reduced system on an atlas of charts (:mod:`dalembert.systems.reduction`).
    atlas = False
    #: the force F(x, t, u) and its controls (:class:`~dalembert.systems.torque.ControlledForce`)
    controlled_signature = "force(x, t, u)"

    def __init__(self, poisson_matrix, hamiltonian, name: str = "almost-poisson", *,
                 constraint=None, lift=None, reduce=None, nonholonomic=None, degeneracy=None,
                 n_config: int | None = None, skew_by_construction: bool = False,
                 dissipation=None, force=None, controls=None, force_field=None):
        for nm, f in (("poisson_matrix", poisson_matrix), ("hamiltonian", hamiltonian)):
            if not callable(f):
                raise InputError(f"AlmostPoissonSystem needs {nm}=lambda x: ... (got {type(f).__name__})")
        for nm, f in (("constraint", constraint), ("lift", lift), ("reduce", reduce),
                      ("degeneracy", degeneracy), ("dissipation", dissipation), ("force", force)):
            if f is not None and not callable(f):
                raise InputError(f"{nm} must be a callable; got {type(f).__name__}")
        self._dissipation = dissipation
        self._force = force
        self._init_controls(force is not None and _positional_count(force) >= 3, controls, name)
        #: (x, dt, g) -> F: the force at x, the clock's time + dt, with g standing for ∇H(x) where
        #: the force depends on it (the automatic reduction's velocity v = X g_ρ); internal
        self._force_field = force_field
        self._pi = poisson_matrix
        self._h = hamiltonian
        self._constraint = constraint
        self.lift = lift
        self.reduce = reduce
        self.nonholonomic = nonholonomic
        self._degeneracy = degeneracy
        #: number of configuration coordinates q = x[:n_config] (reduced systems), else None.
        self.n_config = n_config
        #: Π is skew exactly, by how it is built (the automatic reduction's [[0, X], [−Xᵀ, M − Mᵀ]]):
        #: the engine's check of its skewness at every node (:meth:`data_ok`) is then skipped
        self.skew_by_construction = bool(skew_by_construction)
        self.name = str(name)
        self._checker = None
        self._checker_batch = None
        self._shapes_ok: set = set()

    def __repr__(self):
        return f"AlmostPoissonSystem(name={self.name!r})"

    # --- the data ---------------------------------------------------------------------------
    def poisson_matrix(self, x):
        """Π(x), shape (N, N), skew-symmetric."""
        return jnp.asarray(traced_once(self, self._pi)(x), dtype=jnp.float64)

    def hamiltonian(self, x):
        """H(x), scalar."""
        return jnp.asarray(traced_once(self, self._h)(x), dtype=jnp.float64).reshape(())

    def grad_hamiltonian(self, x):
        """∇H(x), shape (N,) (autodiff)."""
        return jax.grad(self.hamiltonian)(x)

    def vector_field(self, x):
        """ẋ = (Π(x) − R(x)) ∇H(x) + F(x, t), shape (N,) (t the clock's time,
        :mod:`dalembert.clock`; without dissipation and force, Π(x)∇H(x))."""
        g = self.grad_hamiltonian(x)
        out = linalg.mv(self.structure_matrix(x), g)
        if self.has_external_force:
            out = out + self.force_field(x, 0.0, g)
        return out

    # --- dissipation, force and controls ----------------------------------------------------
    @property
    def has_force(self) -> bool:
        """True with a dissipation or a force: the engine then runs the clock and reports the work."""
        return self._dissipation is not None or self.has_external_force

    @property
    def has_dissipation(self) -> bool:
        """True with a dissipation R(x)."""
        return self._dissipation is not None

    @property
    def has_external_force(self) -> bool:
        """True with a force F (the user's ``force=``, or the reduced force of a nonholonomic system)."""
        return self._force is not None or self._force_field is not None

    def dissipation(self, x):
        """R(x), shape (N, N), symmetric positive semidefinite (zeros without one)."""
        if self._dissipation is None:
            return jnp.zeros((x.shape[0], x.shape[0]), jnp.float64)
        return jnp.asarray(traced_once(self, self._dissipation)(x), dtype=jnp.float64)

    def structure_matrix(self, x):
        """Π(x) − R(x), shape (N, N) (Π(x) without a dissipation)."""
        P = self.poisson_matrix(x)
        return P - self.dissipation(x) if self._dissipation is not None else P

    def force_field(self, x, dt=0.0, grad=None):
        """F at x and the clock's time + dt, shape (N,) (zeros without a force). ``grad`` (N,)
        stands for ∇H(x) in a force that depends on it (the reduced force of a nonholonomic system,
        whose velocity is v = X(q) ∇_ρH: the discrete-gradient methods pass ∇̄H); default ∇H(x)."""
        if self._force_field is not None:
            return jnp.asarray(self._force_field(x, dt, self.grad_hamiltonian(x) if grad is None else grad),
                               jnp.float64)
        if self._force is None:
            return jnp.zeros_like(x)
        return self._call_force(x, dt=dt)

    def features(self, *state0) -> frozenset:
        """FORCES with a dissipation or a force; CONTROLS with a force that takes a control."""
        from ..declarations import Feature
        out = set()
        if self.has_force:
            out.add(Feature.FORCES)
        return frozenset(out | self.control_features())

    def energy(self, x):
        """Alias of :meth:`hamiltonian`."""
        return self.hamiltonian(x)

    def constraint_residual(self, x):
        """The constraint residual at x, shape (k,); (0,) for a system without constraint."""
        if self._constraint is None:
            return jnp.zeros((0,), jnp.float64)
        return jnp.asarray(traced_once(self, self._constraint)(x), dtype=jnp.float64).reshape(-1)

    def degeneracy(self, x):
        """Conditioning measure of the chart at x (scalar; 1 where there is no chart to worry about)."""
        if self._degeneracy is None:
            return jnp.ones((), jnp.float64)
        return jnp.asarray(traced_once(self, self._degeneracy)(x), dtype=jnp.float64).reshape(())

    # --- the system-kind protocol used by the engine -------------------------------------
    def _values(self, x):
        """(Π, H, ∇H, constraint residual, chart conditioning) at x: what the value checks look at."""
        return (self.poisson_matrix(x), self.hamiltonian(x), self.grad_hamiltonian(x),
                self.constraint_residual(x), self.degeneracy(x))

    def check_initial_state(self, x0, *, project: bool = False, tol: float = 1e-10):
        """Validate the system at x0 and return ``(x0,)`` as a numpy float64 array.

        Checks: x0 finite and 1-D; Π(x0) of shape (N, N), finite and skew
        (max |Π + Πᵀ| ≤ 1e-12 · max(1, max |Π|)); H(x0) a finite scalar; ∇H(x0) finite; the
        chart not degenerate; the constraint residual (if any) ≤ tol · max(1, ‖x0‖∞).

        Raises
        ------
        InputError (x0), SystemDefinitionError (a callable's output), ConstraintViolationError.
        ``project`` is accepted for the protocol; an almost-Poisson state cannot be projected
        (reduced states satisfy their constraint by construction).
        """
        x = _as_vector(x0, "x0")
        N = x.size
        if N not in self._shapes_ok:        # traced once per length (ensembles check every member)
            xs = jax.ShapeDtypeStruct((N,), jnp.float64)
            for nm, fn in (("poisson_matrix", self.poisson_matrix),
                           ("hamiltonian", lambda y: jnp.asarray(self._h(y)))):
                try:
                    out = jax.eval_shape(fn, xs)
                except Exception as exc:  # a user's callable may raise anything
                    raise SystemDefinitionError(f"{nm}(x0) raised {type(exc).__name__}: {exc}") from exc
                _expect_real(out, nm)
                shape = tuple(out.shape)
                want = (N, N) if nm == "poisson_matrix" else ()
                if shape != want and not (nm == "hamiltonian" and shape == (1,)):
                    raise SystemDefinitionError(f"{nm}(x0) returned shape {shape}; expected {want} for x0 of shape {(N,)}")
            self._shapes_ok.add(N)
        if self._checker is None:
            self._checker = jax.jit(self._values)
        P, H, dH, res, deg = (np.asarray(a) for a in self._checker(jnp.asarray(x)))
        for a, nm in ((P, "poisson_matrix"), (H, "hamiltonian"), (dH, "hamiltonian (gradient)"),
                      (res, "constraint")):
            if not np.all(np.isfinite(a)):
                raise SystemDefinitionError(f"{nm}(x0) returned non-finite values: {a}")
        skew = float(np.max(np.abs(P + P.T)))
        if skew > SKEW_RTOL * max(1.0, float(np.max(np.abs(P)))):
            raise SystemDefinitionError(f"poisson_matrix(x0) is not skew-symmetric (max |Π + Πᵀ| = {skew:.3e})")
        if not deg > DEGENERACY_TOL:
            raise SystemDefinitionError(f"the adapted basis is degenerate at x0 (conditioning {float(deg):.3e})")
        if res.size and np.max(np.abs(res)) > tol * max(1.0, float(np.max(np.abs(x)))):
            raise ConstraintViolationError(
                f"x0 violates the constraint: residual {res} (max {np.max(np.abs(res)):.3e})", res)
        if self._dissipation is not None or self._force is not None:
            self._check_forcing(x)
        return (x,)

    def _check_forcing(self, x):
        """R(x0) of shape (N, N), finite, symmetric positive semidefinite (to SKEW_RTOL); F(x0)
        of shape (N,) and finite (SystemDefinitionError otherwise)."""
        N = x.size
        for nm, fn, want in (("dissipation", self._dissipation, (N, N)),
                             ("force", (lambda y: self.force_field(y)) if self._force is not None else None, (N,))):
            if fn is None:
                continue
            try:
                out = np.asarray(jax.jit(fn)(jnp.asarray(x)))
            except InputError:
                raise
            except Exception as exc:  # a user's callable may raise anything
                raise SystemDefinitionError(f"{nm}(x0) raised {type(exc).__name__}: {exc}") from exc
            if out.shape != want:
                raise SystemDefinitionError(f"{nm}(x0) returned shape {out.shape}; expected {want} for x0 of shape {(N,)}")
            if not np.all(np.isfinite(out)):
                raise SystemDefinitionError(f"{nm}(x0) returned non-finite values: {out}")
            if nm == "dissipation":
                scale = SKEW_RTOL * max(1.0, float(np.max(np.abs(out))))
                asym = float(np.max(np.abs(out - out.T)))
                if asym > scale:
                    raise SystemDefinitionError(f"dissipation(x0) is not symmetric (max |R − Rᵀ| = {asym:.3e})")
                least = float(np.min(np.linalg.eigvalsh(0.5 * (out + out.T))))
                if least < -scale:
                    raise SystemDefinitionError(f"dissipation(x0) is not positive semidefinite (least eigenvalue "
                                                f"{least:.3e}): R must only remove energy; put a supply in force=")

    def initial_states_ok(self, x0s, *, tol: float = 1e-10):
        """Which of B initial states pass every value check of :meth:`check_initial_state`
        (after its shape checks passed for one of them): a (B,) bool array, computed in one
        vectorised call (for ``dl.ensemble``; members flagged False are checked one by one)."""
        x = np.asarray(x0s, np.float64)
        if x.ndim != 2 or x.shape[1] not in self._shapes_ok:
            return np.zeros(x.shape[0] if x.ndim else 0, bool)
        if self._checker_batch is None:
            self._checker_batch = jax.jit(jax.vmap(self._values))
        P, H, dH, res, deg = (np.asarray(a) for a in self._checker_batch(jnp.asarray(x)))
        B = x.shape[0]
        ok = np.isfinite(x).all(1)
        for a in (P, H, dH, res):
            ok &= np.isfinite(a.reshape(B, -1)).all(1)
        skew = np.abs(P + np.swapaxes(P, 1, 2)).reshape(B, -1).max(1)
        ok &= skew <= SKEW_RTOL * np.maximum(1.0, np.abs(P).reshape(B, -1).max(1))
        ok &= np.asarray(deg).reshape(B) > DEGENERACY_TOL
        if res.size:
            ok &= np.abs(res.reshape(B, -1)).max(1) <= tol * np.maximum(1.0, np.abs(x).max(1))
        return ok

    def data_ok(self, obs: dict):
        """Whether Π(x) is skew at a node, to :data:`SKEW_RTOL` (bool scalar, traceable). Checked
        by the engine at every saved node: a Π that loses its skew-symmetry during a run would
        otherwise give a silently wrong energy. True without computing Π when Π is skew by
        construction (on a user's tilting disk through the automatic reduction, evaluating Π at
        every node was a quarter of the compiled program)."""
        if self.skew_by_construction:
            return jnp.asarray(True)
        P = self.poisson_matrix(obs["x"])
        return jnp.max(jnp.abs(P + P.T)) <= SKEW_RTOL * jnp.maximum(1.0, jnp.max(jnp.abs(P)))

    def diagnostics(self, obs: dict) -> dict:
        """Node diagnostics from a method's observation {x, ...}: energy H(x) and
        constraint_residual (k,) (zero-length without a constraint)."""
        x = obs["x"]
        return {"energy": self.hamiltonian(x), "constraint_residual": self.constraint_residual(x)}
