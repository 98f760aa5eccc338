"""Left-invariant mechanical systems on SO(3) with an arbitrary (possibly R-dependent) constraint
distribution.

Ferraro, Iglesias-Ponte, Martín de Diego, "Momentum and energy preserving integrators for
nonholonomic dynamics", Nonlinearity 21 (2008) §4.1–§4.4. Reduced Lagrangian l(ω) = ½ ωᵀ𝕀ω
(left-invariant metric, body angular velocity ω, Ṙ = R hat(ω)); the constraint distribution is
D_R = {R hat(ξ) : A(R) ξ = 0} with A(R) the (m, 3) matrix whose rows are the *body* constraint
covectors. A may depend on R — e.g. ``A(R) = (Rᵀb)ᵀ`` (spatial angular velocity ⊥ b: D right-invariant,
the paper's §4.4) or any smooth non-invariant field (as in its Thm 1). With a constant A this is the
Euler–Poincaré–Suslov system.

Equations of motion (Lagrange–d'Alembert in body coordinates, λ with the sign of the
paper's §2):

    𝕀 ω̇ = (𝕀ω) × ω + A(R)ᵀ λ ,     A(R) ω = 0 ,     Ṙ = R hat(ω).

Differentiating the constraint, ``Ȧ ω + A ω̇ = 0`` with Ȧ = dA(R)[R hat(ω)], gives
``C λ = −Ȧ ω − A 𝕀⁻¹((𝕀ω) × ω)``, C = A 𝕀⁻¹ Aᵀ. The energy ½ωᵀ𝕀ω is conserved.

With a left-trivialised torque τ(R, ω, t) (``force=``, body frame, N·m; the forced
Lagrange–d'Alembert principle) the equations become 𝕀ω̇ = (𝕀ω) × ω + τ + Aᵀλ,
C λ = −Ȧω − A𝕀⁻¹((𝕀ω) × ω + τ), and dE/dt = τ·ω (the constraint force does no work).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import linalg
from ..errors import ConstraintViolationError, InputError, SystemDefinitionError
from ..lie import so3
from .. import clock
from ..declarations import NodeArray, Role
from .kind import SystemKind, check_spd, refuse_complex, traced_once
from .torque import LeftTrivialisedTorque


def _checked_inertia(inertia, name: str) -> np.ndarray:
    """𝕀 as a NumPy (3, 3) array, checked finite, symmetric, positive definite (SystemDefinitionError)."""
    refuse_complex(inertia, f"{name}: inertia")
    I = np.asarray(inertia, dtype=float)
    if I.shape != (3, 3):
        raise SystemDefinitionError(f"{name}: inertia must be a finite (3, 3) array; got shape {I.shape}")
    check_spd(I, f"{name}: inertia")
    return I


class LieNonholonomicSystem(LeftTrivialisedTorque, SystemKind):
    """A left-invariant rigid body on SO(3) with constraints A(R) ω = 0.

    Parameters
    ----------
    inertia : (3, 3) symmetric positive definite 𝕀 (the left-invariant metric; kg m²).
    constraint_covectors : (m, 3) or (3,) array (constant body covectors: the Suslov case), or a
        traceable callable R (3, 3) -> (m, 3) (or (3,)) of body covectors, 1 ≤ m ≤ 2, rows
        independent.
    name : label used in trajectories and reports.
    force : optional traceable callable ``force(R, ω, t)`` -> (3,): a left-trivialised
        (body-frame) torque τ (N·m), or ``force(R, ω, t, u)`` with a control u (c,) (then
        ``controls=``, or ``dl.integrate/dl.solve(..., controls=U)``). Declares the features
        "non-conservative forces" (and "controls"); the methods that accept them use the forced
        discrete Lagrange–d'Alembert principle; ``traj.work`` is ∫τ·ω dt
        (:class:`~dalembert.systems.torque.LeftTrivialisedTorque`).
    controls : (N, c) array (one row per step) or callable t -> (c,), optional.

    Raises InputError for a force that is not callable, or controls without a force that takes
    them; the torque's shape and finiteness are checked at the initial state.

    System-kind protocol: ``state_names = ("R0", "omega0")``, :meth:`check_initial_state`,
    :meth:`diagnostics` (energy ½ωᵀ𝕀ω, constraint_residual A(R)ω, orthogonality_defect).
    """

    state_names = ("R0", "omega0")
    kind = "lie-nonholonomic"
    path_array = "omega"
    node_arrays = (NodeArray("R", Role.GROUP_ELEMENT, "dimensionless", state="R0", symbol="R"),
                   NodeArray("omega", Role.GROUP_VELOCITY, "rad/s", state="omega0", symbol="ω"),
                   NodeArray("lam", Role.MULTIPLIER, symbol="λ"))
    #: the declared order is in ω (R is first order with the left-endpoint reconstruction,
    #: Jiménez–Scheurle 2015 Thm 5.2(2))
    order_arrays = ("omega",)

    def __init__(self, inertia, constraint_covectors, name: str = "lie-nonholonomic", *, force=None,
                 controls=None):
        self._init_torque(force, controls, str(name))
        if linalg.traced(inertia):     # a parameter under jax.grad/vmap: shape checked only
            refuse_complex(inertia, f"{name}: inertia")
            I = jnp.asarray(inertia, jnp.float64)
            if I.shape != (3, 3):
                raise SystemDefinitionError(f"{name}: inertia must have shape (3, 3); got {I.shape}")
        else:
            I = _checked_inertia(inertia, name)
        self.name = str(name)
        self.inertia = I
        self._I = jnp.asarray(I)
        self._Iinv = linalg.inv(I)
        if callable(constraint_covectors):
            self._A_fn = constraint_covectors
            self.constant_constraints = False
        else:
            A = np.asarray(constraint_covectors, dtype=float)
            A = A[None, :] if A.ndim == 1 else A
            Aj = jnp.asarray(A)
            self._A_fn = lambda R: Aj
            self.constant_constraints = True
        A0 = np.asarray(self.constraint_covectors(jnp.eye(3)))
        if A0.ndim != 2 or A0.shape[1] != 3 or not 1 <= A0.shape[0] <= 2:
            raise SystemDefinitionError(f"{name}: constraint_covectors must give shape (m, 3), m ∈ {{1, 2}}; "
                               f"got {A0.shape}")
        self.m = A0.shape[0]

    def __repr__(self):
        return f"<LieNonholonomicSystem {self.name}: m = {self.m}>"

    # --- the model (jit-able, unbatched) ----------------------------------------------------------
    def constraint_covectors(self, R):
        """A(R), shape (m, 3): the body constraint covectors at R."""
        A = jnp.asarray(traced_once(self, self._A_fn)(jnp.asarray(R, jnp.float64)), jnp.float64)
        return A[None, :] if A.ndim == 1 else A

    def momentum(self, omega):
        """Body momentum 𝕀ω, (3,)."""
        return linalg.mv(self._I, omega)

    def velocity(self, mu):
        """𝕀⁻¹ μ, (3,)."""
        return linalg.mv(self._Iinv, mu)

    def energy(self, omega):
        """½ ωᵀ𝕀ω."""
        return 0.5 * jnp.sum(omega * self.momentum(omega))

    def hamiltonian(self, mu):
        """½ μᵀ𝕀⁻¹μ of a body momentum."""
        return 0.5 * jnp.sum(mu * self.velocity(mu))

    def constraint_residual(self, R, omega):
        """A(R) ω, shape (m,)."""
        return linalg.mv(self.constraint_covectors(R), omega)

    def gram(self, R):
        """(A (m, 3), C = A 𝕀⁻¹ Aᵀ (m, m)) at R."""
        A = self.constraint_covectors(R)
        return A, linalg.mm(A, linalg.mm(self._Iinv, A.T))

    def reflect(self, R, mu):
        """(P − Q)* μ = μ − 2 Aᵀ C⁻¹ A 𝕀⁻¹ μ on body covectors (the paper's §4.1–§4.2, Q̂*)."""
        A, C = self.gram(R)
        s = linalg.solve_spd(C, linalg.mv(A, self.velocity(mu)))
        return mu - 2.0 * linalg.vm(s, A)

    def project_momentum(self, R, mu):
        """P* μ = μ − Aᵀ C⁻¹ A 𝕀⁻¹ μ, (3,)."""
        A, C = self.gram(R)
        s = linalg.solve_spd(C, linalg.mv(A, self.velocity(mu)))
        return mu - linalg.vm(s, A)

    def project(self, R, omega):
        """𝕀-orthogonal projection of ω onto ker A(R), (3,)."""
        return self.velocity(self.project_momentum(R, self.momentum(omega)))

    def body_torque(self, R, omega):
        """(𝕀ω) × ω + τ(R, ω, t) (τ the torque at the clock's time; none without one), (3,)."""
        out = so3.cross(self.momentum(omega), omega)
        return out + self.force(R, omega) if self.has_force else out

    def multiplier(self, R, omega):
        """Continuous multiplier λ(R, ω), (m,): C λ = −Ȧω − A𝕀⁻¹((𝕀ω) × ω + τ) (module doc)."""
        A, C = self.gram(R)
        Rdot = so3.matmul(R, so3.hat(omega))
        Adot = jax.jvp(self.constraint_covectors, (R,), (Rdot,))[1]
        rhs = -linalg.mv(Adot, omega) - linalg.mv(A, self.velocity(self.body_torque(R, omega)))
        return linalg.solve_spd(C, rhs)

    def vector_field(self, R, omega):
        """(Ṙ (3, 3), ω̇ (3,)) of the Lagrange–d'Alembert equations (with the torque at the
        clock's time)."""
        lam = self.multiplier(R, omega)
        A = self.constraint_covectors(R)
        wdot = self.velocity(self.body_torque(R, omega) + linalg.vm(lam, A))
        return so3.matmul(R, so3.hat(omega)), wdot

    def reconstruction(self, R, omega):
        """Ṙ = R hat(ω), (3, 3)."""
        return so3.matmul(R, so3.hat(omega))

    def acceleration(self, R, omega):
        """ω̇ (3,) at the clock's time (the work's Hermite rule)."""
        return self.vector_field(R, omega)[1]

    def features(self, *state0) -> frozenset:
        """FORCES (and CONTROLS) with a torque."""
        return frozenset(self.torque_features())

    # --- the system-kind protocol -------------------------------------------------------------------
    def check_initial_state(self, R0, omega0, *, project: bool = False, tol: float = 1e-10):
        """Validated (R0 (3, 3), omega0 (3,)) as float64 numpy arrays.

        R0 must be a rotation (|I − R0ᵀR0|_F ≤ tol, det > 0); ‖A(R0) ω0‖∞ ≤ tol·max(1, ‖ω0‖∞),
        unless ``project=True`` (then ω0 is projected 𝕀-orthogonally onto ker A(R0)).

        Raises
        ------
        InputError, ConstraintViolationError
        """
        R = np.asarray(R0, dtype=float)
        w = np.asarray(omega0, dtype=float)
        if R.shape != (3, 3) or w.shape != (3,):
            raise InputError(f"R0 must have shape (3, 3) and omega0 shape (3,); got {R.shape}, {w.shape}")
        if not (np.all(np.isfinite(R)) and np.all(np.isfinite(w))):
            raise InputError("R0 and omega0 must be finite")
        bad_rotation = so3.rotation_check(R, tol)
        if bad_rotation:
            raise InputError(bad_rotation)
        res = np.asarray(self.constraint_residual(jnp.asarray(R), jnp.asarray(w)))
        bound = tol * max(1.0, float(np.max(np.abs(w))))
        if np.max(np.abs(res)) > bound:
            if not project:
                raise ConstraintViolationError(
                    f"omega0 violates the constraints: |A(R0) ω0| = {np.max(np.abs(res)):.3e} > {bound:.1e}; "
                    "pass project=True to project it", res)
            w = np.asarray(self.project(jnp.asarray(R), jnp.asarray(w)))
        self._check_torque(R, w)
        return R, w

    def diagnostics(self, obs: dict) -> dict:
        """energy ½ωᵀ𝕀ω, constraint_residual A(R)ω (m,), orthogonality_defect |I − RᵀR|_F."""
        return {"energy": self.energy(obs["omega"]),
                "constraint_residual": self.constraint_residual(obs["R"], obs["omega"]),
                "orthogonality_defect": so3.orthogonality_defect(obs["R"])}

    def reference_diagnostics(self, R, omega) -> dict:
        d = self.diagnostics({"R": R, "omega": omega})
        d["lam"] = self.multiplier(R, omega)
        return d

    def reference_solution(self, R0, omega0, *, t, rtol: float = 1e-13, atol: float = 1e-13) -> dict:
        """R (N, 3, 3), omega (N, 3) at times t by DOP853 (:func:`reference_solution`)."""
        R, omega = reference_solution(self, R0, omega0, t, rtol=rtol, atol=atol)
        return {"R": np.asarray(R), "omega": np.asarray(omega)}


def reference_solution(system: LieNonholonomicSystem, R0, omega0, t, rtol: float = 1e-13,
                       atol: float = 1e-13):
    """(R (N, 3, 3), omega (N, 3)) at times t (t[0] the start: the run's t0) by SciPy DOP853 on
    (R, ω) ∈ R^12, a torque evaluated on the clock at each right-hand side's time.

    R is not kept on SO(3) by the ODE solver; at these tolerances its drift is ~1e-13 per unit time.
    """
    from scipy.integrate import solve_ivp

    from .._cache import cached

    def rhs(tau, y):
        with clock.at(tau, system.step_index(tau) if system.timed else 0):
            return jnp.concatenate([a.ravel() for a in system.vector_field(y[:9].reshape(3, 3), y[9:])])
    f = cached(system, "reference rhs", lambda: jax.jit(rhs))
    y0 = np.concatenate([np.asarray(R0, float).ravel(), np.asarray(omega0, float)])
    t = np.asarray(t, float)
    sol = solve_ivp(lambda tau, y: np.asarray(f(tau, jnp.asarray(y))), (t[0], t[-1]), y0, method="DOP853",
                    t_eval=t, rtol=rtol, atol=atol)
    Y = sol.y.T
    return Y[:, :9].reshape(-1, 3, 3), Y[:, 9:]


# ---------------------------------------------------------------------------------------------
# the registered view: a symmetric Euler–Poincaré–Suslov system as a LieNonholonomicSystem
# ---------------------------------------------------------------------------------------------

def _view_system(eps, R0=None, omega0=None):
    """The LieNonholonomicSystem with the constant covectors of an EPS system (the same
    equations; kept with the EPS system). Raises InputError for a non-quadratic reduced
    Lagrangian or a non-symmetric inertia (the reflection needs the metric 𝕀)."""
    from .._cache import cached
    if not getattr(eps, "is_so3", True):
        raise InputError(f"the Lie-group GNI (lie-gni-mv, lie-gni-cayley) is written on SO(3); system "
                         f"{eps.name!r} is on {eps.group.name}. groupoid-gni is the Lie-group GNI on any "
                         f"group (Cayley discrete Lagrangian); or use dreps-euler, dreps-rk4, eps-midpoint, "
                         f"eps-variational")
    if not getattr(eps, "quadratic", True):
        raise InputError(f"the Lie-group GNI needs a quadratic reduced Lagrangian l(ω) = ½ωᵀ𝕀ω (the "
                         f"reflection uses the metric 𝕀 and l_d is built from it); system "
                         f"{eps.name!r} has a non-quadratic l. Use dreps-euler, dreps-rk4 or "
                         f"eps-variational")
    if not eps.symmetric:
        raise InputError(f"the Lie-group GNI needs a symmetric inertia; system {eps.name!r} has none")
    def make():
        lie = LieNonholonomicSystem(eps.inertia, eps.A, eps.name)
        # the torque and its controls as they are (a copy made by with_controls keeps its grid)
        lie._force, lie._force_takes_u = eps._force, eps._force_takes_u
        lie._controls, lie._control_grid = eps._controls, eps._control_grid
        return lie
    return cached(eps, "lie-nonholonomic view", make)


def _view_state(lie, R0, omega0):
    return (R0, omega0)


from .kind import register_view  # noqa: E402

register_view("euler-poincare-suslov", "lie-nonholonomic", _view_system, _view_state,
              "constant constraint covectors A as the R-dependent covectors of a "
              "LieNonholonomicSystem (the same equations)")
