"""Left-invariant nonholonomic systems on SO(3): the Euler–Poincaré–Suslov (EPS) equations.

Jiménez & Scheurle, "On the discretization of the Euler–Poincaré–Suslov equations in SO(3)"
(2015), (17) and §5.2, with reduced Lagrangian
l(ω) = ½ ωᵀ𝕀ω and m constant constraint covectors a^α (rows of ``A``, shape (m, 3)):

    𝕀 ω̇ = (𝕀ω) × ω + Aᵀλ ,      A ω = 0 ,      Ṙ = R hat(ω)                    (17), (42)–(43)

Eliminating λ (the paper's §7, (66)–(69)): with f(ω) = 𝕀⁻¹((𝕀ω) × ω) and C = A 𝕀⁻¹ Aᵀ (m×m),

    λ(ω) = −C⁻¹ A f(ω) ,     ω̇ = h(ω) = f(ω) + 𝕀⁻¹Aᵀλ(ω) = P f(ω),   P = I − 𝕀⁻¹AᵀC⁻¹A.

Energy E(ω) = ½ ωᵀ𝕀ω is conserved (for symmetric 𝕀). Sign convention for λ (erratum E13,
docs/theory/jimenez-scheurle2015.md#e13): the one written above, 𝕀ω̇ = 𝕀ω×ω + λa.

Non-symmetric 𝕀 (erratum E2, docs/theory/jimenez-scheurle2015.md#e2): the paper prints a non-symmetric
inertia matrix and uses 𝕀ω as the momentum. Such a matrix is refused unless ``allow_nonsymmetric=True``;
it is then used literally (momentum 𝕀ω in the equations above; E = ½ωᵀ𝕀ω), which for a = e3 is identical
to the symmetric matrix with the same upper-left 2×2 block and third row. Energy conservation, the
variational derivation and the midpoint scheme's exact energy hold only for symmetric 𝕀.

Torques (``force=``): a left-trivialised (body-frame) torque τ(R, ω, t) ∈ 𝔤* (N·m on SO(3)), or
τ(R, ω, t, u) with controls, enters as 𝕀ω̇ = ad*_ω(𝕀ω) + τ + Aᵀλ (the forced Lagrange–d'Alembert
principle), so λ = −C⁻¹A𝕀⁻¹(ad*_ω(𝕀ω) + τ) and ω̇ = P𝕀⁻¹(ad*_ω(𝕀ω) + τ); dE/dt = τ·ω. A torque
that depends on R couples the ω equation to the reconstruction (:meth:`omega_dot_at`).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import linalg
from ..declarations import Feature, NodeArray, Role
from ..errors import ConstraintViolationError, InputError, SystemDefinitionError
from ..lie import so3
from .kind import SystemKind, checked_group, refuse_complex, refuse_force
from .torque import LeftTrivialisedTorque


def _checked_inertia(inertia, name: str, allow_nonsymmetric: bool, d: int = 3):
    """(𝕀 as a NumPy (d, d) array, whether it is symmetric), checked: finite, symmetric unless
    allowed, positive definite symmetric part. Raises SystemDefinitionError."""
    refuse_complex(inertia, f"{name}: inertia")
    I = np.asarray(inertia, dtype=float)
    if I.shape != (d, d):
        raise SystemDefinitionError(f"{name}: inertia must have shape ({d}, {d}); got {I.shape}")
    if not np.all(np.isfinite(I)):
        raise SystemDefinitionError(f"{name}: inertia has non-finite entries")
    asym = float(np.max(np.abs(I - I.T)))
    if asym > 1e-12 * max(1.0, float(np.max(np.abs(I)))) and not allow_nonsymmetric:
        raise SystemDefinitionError(
            f"{name}: inertia is not symmetric (max |𝕀 − 𝕀ᵀ| = {asym:.3g}); a physical inertia "
            f"tensor is symmetric. Pass allow_nonsymmetric=True to use it literally (momentum 𝕀ω), "
            f"as the Jiménez–Scheurle paper does (erratum E2, docs/theory/jimenez-scheurle2015.md#e2)")
    eig = np.linalg.eigvalsh(0.5 * (I + I.T))
    if eig[0] <= 1e-12 * max(1.0, abs(eig[-1])):
        raise SystemDefinitionError(f"{name}: inertia is not positive definite (eigenvalues of its "
                           f"symmetric part: {np.array2string(eig, precision=4)})")
    return I, asym <= 1e-12 * max(1.0, float(np.max(np.abs(I))))


class EulerPoincareSuslovSystem(LeftTrivialisedTorque, SystemKind):
    """An Euler–Poincaré–Suslov system on SO(3) (rigid body with body-fixed velocity constraints).

    Parameters
    ----------
    inertia : (3, 3) inertia tensor 𝕀, symmetric positive definite (kg m²).
    constraint_vectors : (3,) or (m, 3) with m ∈ {1, 2}: the covectors a^α, nonzero and linearly
        independent; the constraints are ⟨a^α, ω⟩ = 0 (body angular velocity ω).
    name : label used in trajectories and reports.
    allow_nonsymmetric : accept a non-symmetric 𝕀 (used literally; see module doc). Its symmetric
        part must still be positive definite.
    group : None (SO(3)) or a :class:`~dalembert.lie.groups.MatrixLieGroup` of dimension d (e.g.
        ``dl.lie.SO(4)``, ``dl.lie.SE(2)``): the Euler–Poincaré–Suslov equations on G,
        𝕀ω̇ = ad*_ω(𝕀ω) + Aᵀλ, Aω = 0, Ṙ = R ω̂ (ω ∈ 𝔤 in the group's hat basis; on SO(3)
        ad*_ω(𝕀ω) = (𝕀ω) × ω). Then inertia is (d, d), the covectors (m, d) with 1 ≤ m < d, R0 an
        (N, N) element of G; ``dreps-*``, ``eps-midpoint`` and ``eps-variational`` integrate it
        with the group's Cayley or exponential map; the SO(3)-only methods refuse it.
    force : optional traceable callable ``force(R, ω, t)`` -> (d,): a left-trivialised (body-frame)
        torque τ (N·m on SO(3)), or ``force(R, ω, t, u)`` with a control u (c,) (then ``controls=``
        or ``dl.integrate/dl.solve(..., controls=U)``); see the module doc. Declares the features
        "non-conservative forces" (and "controls"): ``dreps-euler``, ``dreps-rk4``, ``eps-midpoint``
        and its compositions, and ``reference`` (through the LieNonholonomicSystem view, on SO(3))
        take it; ``traj.work`` is ∫τ·ω dt.
    controls : (N, c) array (one row per step) or callable t -> (c,), optional.

    Attributes
    ----------
    inertia (d, d), A (m, d), m, group, dim (d), state_names = ("R0", "omega0").

    Raises
    ------
    SystemDefinitionError for a non-finite, wrongly shaped, non-symmetric (unless allowed) or not positive
    definite inertia, or zero / dependent / too many constraint vectors. InputError for a force that is
    not callable or controls without a force that takes them (the torque's shape and finiteness are
    checked at the initial state).
    """

    #: Keyword names of the initial state in ``dl.integrate`` (the system-kind protocol).
    state_names = ("R0", "omega0")
    kind = "euler-poincare-suslov"
    node_arrays = (NodeArray("R", Role.GROUP_ELEMENT, "dimensionless", state="R0", symbol="R"),
                   NodeArray("omega", Role.GROUP_VELOCITY, "rad/s", state="omega0", symbol="ω"),
                   NodeArray("lam", Role.MULTIPLIER, symbol="λ"))
    #: the declared order is in ω (R is first order with the left-endpoint reconstruction,
    #: Jiménez–Scheurle 2015 Thm 5.2(2))
    order_arrays = ("omega",)
    #: the constraint vectors A are constant (as LieNonholonomicSystem.constant_constraints says of its A(R))
    constant_constraints = True
    path_array = "omega"

    def __init__(self, inertia, constraint_vectors, name: str = "euler-poincare-suslov", *,
                 allow_nonsymmetric: bool = False, group=None, force=None, controls=None):
        self._init_torque(force, controls, name)
        self.group = group = checked_group(group, name)
        self.is_so3 = group.name == "SO(3)"
        d = self.dim = group.dim
        if linalg.traced(inertia):
            # a parameter under jax.grad/vmap: its values cannot be checked here (check them
            # with a concrete system); taken as symmetric unless allow_nonsymmetric
            refuse_complex(inertia, f"{name}: inertia")
            I = jnp.asarray(inertia, jnp.float64)
            if I.shape != (d, d):
                raise SystemDefinitionError(f"{name}: inertia must have shape ({d}, {d}); got {I.shape}")
            symmetric = not allow_nonsymmetric
        else:
            I, symmetric = _checked_inertia(inertia, name, allow_nonsymmetric, d)
        A = np.asarray(constraint_vectors, dtype=float)
        if A.ndim == 1:
            A = A[None, :]
        if A.ndim != 2 or A.shape[1] != d:
            raise SystemDefinitionError(f"{name}: constraint_vectors must have shape ({d},) or (m, {d}); got {A.shape}")
        m = A.shape[0]
        if not 1 <= m <= d - 1:
            raise SystemDefinitionError(f"{name}: need 1 {'or' if d == 3 else 'to'} {d - 1} constraint vectors "
                               f"(m = {d} leaves only ω = 0); got {m}")
        if not np.all(np.isfinite(A)):
            raise SystemDefinitionError(f"{name}: constraint_vectors have non-finite entries")
        norms = np.linalg.norm(A, axis=1)
        if np.any(norms < 1e-12):
            raise SystemDefinitionError(f"{name}: constraint vector {int(np.argmin(norms))} is zero")
        sv = np.linalg.svd(A / norms[:, None], compute_uv=False)
        if sv[-1] < 1e-10:
            raise SystemDefinitionError(f"{name}: the constraint vectors are linearly dependent "
                               f"(singular values {np.array2string(sv, precision=3)})")
        self.name = name
        self.inertia = I
        self.symmetric = symmetric
        self.A = A
        self.m = m
        xp = jnp if linalg.traced(I) else np
        Iinv = xp.linalg.inv(I)
        C = A @ Iinv @ A.T
        Cinv = xp.linalg.inv(C)
        self._Iinv_np = Iinv
        self._I = jnp.asarray(I)
        self._Iinv = jnp.asarray(Iinv)
        self._A = jnp.asarray(A)
        # λ(ω) = K (𝕀ω × ω), K = −C⁻¹A𝕀⁻¹ (m, 3);  ω̇ = Pf (𝕀ω × ω), Pf = P 𝕀⁻¹ (3, 3)
        self._K = jnp.asarray(-Cinv @ A @ Iinv)
        P = xp.eye(d) - Iinv @ A.T @ Cinv @ A
        self._P = jnp.asarray(P)
        self._Pf = jnp.asarray(P @ Iinv)
        self.projector = P       #: (3, 3) the 𝕀-orthogonal projector onto 𝔤^D = ker A

    def __repr__(self):
        on = "" if self.is_so3 else f" on {self.group.name}"
        return f"<EulerPoincareSuslovSystem {self.name}{on}: m = {self.m}>"

    def _mv(self, M, v):
        return so3.matvec(M, v) if self.is_so3 else linalg.mv(M, v)

    # --- the continuous model (jit-able; vectors (d,), no batching; d = 3 on SO(3)) -------------
    def momentum(self, omega):
        """Body angular momentum ∂l/∂ω = 𝕀ω.  (d,) -> (d,)."""
        return self._mv(self._I, omega)

    def energy(self, omega):
        """E(ω) = ½ ωᵀ𝕀ω (scalar)."""
        return 0.5 * jnp.sum(omega * self.momentum(omega))

    def constraint_residual(self, omega):
        """A ω, shape (m,)."""
        return jnp.sum(self._A * omega[None, :], axis=-1)

    def euler_term(self, omega):
        """ad*_ω(𝕀ω) (= (𝕀ω) × ω on SO(3)), shape (d,)."""
        if self.is_so3:
            return so3.cross(self.momentum(omega), omega)
        return self.group.ad_star(omega, self.momentum(omega))

    def multiplier(self, omega):
        """The continuous multiplier λ(ω) = −C⁻¹ A 𝕀⁻¹((𝕀ω) × ω), shape (m,)  (45), (68)."""
        return jnp.sum(self._K * self.euler_term(omega)[None, :], axis=-1)

    def omega_dot(self, omega):
        """The EPS vector field on 𝔤^D, ω̇ = h(ω) = P 𝕀⁻¹((𝕀ω) × ω), shape (3,)  (44), (69)."""
        return self._mv(self._Pf, self.euler_term(omega))

    def body_torque(self, R, omega):
        """ad*_ω(𝕀ω) + τ(R, ω, t) (the torque at the clock's time; none without one), (d,)."""
        out = self.euler_term(omega)
        return out + self.force(R, omega) if self.has_force else out

    def multiplier_at(self, R, omega):
        """λ(R, ω) = −C⁻¹A𝕀⁻¹(ad*_ω(𝕀ω) + τ), (m,): :meth:`multiplier` with the torque (without
        one, :meth:`multiplier` itself)."""
        if not self.has_force:
            return self.multiplier(omega)
        return jnp.sum(self._K * self.body_torque(R, omega)[None, :], axis=-1)

    def omega_dot_at(self, R, omega):
        """ω̇ = P𝕀⁻¹(ad*_ω(𝕀ω) + τ(R, ω, t)), (d,): :meth:`omega_dot` with the torque (without one,
        :meth:`omega_dot` itself: a non-quadratic l of a LeftInvariantSystem)."""
        if not self.has_force:
            return self.omega_dot(omega)
        return self._mv(self._Pf, self.body_torque(R, omega))

    def acceleration(self, R, omega):
        """ω̇ at the clock's time (the work's Hermite rule), (d,)."""
        return self.omega_dot_at(R, omega)

    def project(self, omega):
        """𝕀-orthogonal projection of ω onto 𝔤^D = {A ω = 0}, shape (d,)."""
        return self._mv(self._P, omega)

    def reconstruction(self, R, omega):
        """Ṙ = R hat(ω), shape (N, N)."""
        if self.is_so3:
            return so3.matmul(R, so3.hat(omega))
        return R @ self.group.hat(omega)

    def vector_field(self, R, omega):
        """(Ṙ, ω̇) of the reduced-plus-reconstruction ODE (with the torque at the clock's time)."""
        return self.reconstruction(R, omega), self.omega_dot_at(R, omega)

    def spatial_velocity(self, R, omega):
        """Spatial angular velocity R ω (Ad_R ω off SO(3); used to compare velocities at
        different base points)."""
        return so3.matvec(R, omega) if self.is_so3 else linalg.mv(self.group.Ad(R), omega)

    # --- the system-kind protocol used by the engine -------------------------------------------
    def features(self, *state0) -> frozenset:
        """GROUP_NOT_SO3, NON_QUADRATIC_LAGRANGIAN (a non-quadratic l), NON_SYMMETRIC_INERTIA
        (``symmetric=False``), FORCES and CONTROLS (a torque)."""
        flags = {Feature.GROUP_NOT_SO3: not self.is_so3,
                 Feature.NON_QUADRATIC_LAGRANGIAN: not getattr(self, "quadratic", True),
                 Feature.NON_SYMMETRIC_INERTIA: not self.symmetric}
        return frozenset({f for f, on in flags.items() if on} | self.torque_features())

    def check_initial_state(self, R0, omega0, *, project: bool = False, tol: float = 1e-10):
        """Validated (R0 (3, 3), omega0 (3,)) as numpy float64 arrays.

        R0 must be a rotation: |I − R0ᵀR0|_F ≤ tol and det R0 > 0. omega0 must satisfy
        ‖A ω0‖∞ ≤ tol · max(1, ‖ω0‖∞). With ``project=True`` a violating ω0 is replaced by its
        𝕀-orthogonal projection onto 𝔤^D and an R0 with det > 0 by its nearest rotation (polar
        factor).

        Raises
        ------
        InputError (shape, non-finite, not a rotation: the message gives its distance from SO(3)),
        ConstraintViolationError (with ``.residual`` = A ω0).
        """
        R = np.asarray(R0, dtype=float)
        w = np.asarray(omega0, dtype=float)
        N, d = self.group.matrix_size, self.dim
        if R.shape != (N, N):
            raise InputError(f"R0 must have shape ({N}, {N}); got {R.shape}")
        if w.shape != (d,):
            raise InputError(f"omega0 must have shape ({d},); got {w.shape}")
        if not (np.all(np.isfinite(R)) and np.all(np.isfinite(w))):
            raise InputError("R0 and omega0 must be finite")
        if not self.is_so3:
            defect = float(self.group.membership_defect(jnp.asarray(R)))
            if defect > tol:
                raise InputError(f"R0 is not an element of {self.group.name}: membership defect "
                                 f"{defect:.3g} (tolerance {tol:g})")
        bad_rotation = so3.rotation_check(R, tol) if self.is_so3 else ""
        if bad_rotation:
            det = float(np.linalg.det(R))
            if project and det > 0:
                U, _, Vt = np.linalg.svd(R)
                R = U @ Vt
            else:
                raise InputError(bad_rotation + f" (tolerance {tol:g}; need det > 0)"
                                 + ("" if det <= 0 else "; pass project=True to use its nearest rotation"))
        res = self.A @ w
        bound = tol * max(1.0, float(np.max(np.abs(w))))
        if np.max(np.abs(res)) > bound:
            if project:
                w = self.projector @ w
            else:
                raise ConstraintViolationError(
                    f"omega0 violates the constraints ⟨a, ω0⟩ = 0: residual "
                    f"{np.array2string(res, precision=3)} (tolerance {bound:.1e}); pass project=True "
                    f"to project it onto the constraint space", res)
        self._check_torque(R, w)
        return R, w

    def diagnostics(self, obs: dict) -> dict:
        """Node diagnostics from an observation {R, omega, ...}: energy ½ωᵀ𝕀ω (scalar),
        constraint_residual A ω (m,), and orthogonality_defect |I − RᵀR|_F (scalar; off SO(3) the
        group's membership defect)."""
        out = {"energy": self.energy(obs["omega"]),
               "constraint_residual": self.constraint_residual(obs["omega"])}
        if "R" in obs:
            out["orthogonality_defect"] = (so3.orthogonality_defect(obs["R"]) if self.is_so3
                                           else self.group.membership_defect(obs["R"]))
        return out

    def reference_diagnostics(self, R, omega) -> dict:
        """Diagnostics of a reference solution (adds the continuous multiplier λ)."""
        d = self.diagnostics({"R": R, "omega": omega})
        d["lam"] = self.multiplier(omega)
        return d


class LeftInvariantSystem(EulerPoincareSuslovSystem):
    """A left-invariant nonholonomic system on SO(3) from a user's reduced Lagrangian l(ω).

    The Euler–Poincaré–Suslov equations for any (regular) reduced Lagrangian and constant body
    constraint covectors (Jiménez–Scheurle 2015, (17)):

        d/dt ∇l(ω) = ∇l(ω) × ω + Aᵀλ ,   A ω = 0 ,   Ṙ = R hat(ω),

    i.e. 𝕀(ω) ω̇ = ∇l(ω) × ω + Aᵀλ with 𝕀(ω) = ∇²l(ω), λ(ω) = −C⁻¹A𝕀(ω)⁻¹(∇l × ω),
    C = A𝕀(ω)⁻¹Aᵀ. Energy E(ω) = ⟨∇l(ω), ω⟩ − l(ω) is conserved. All derivatives by autodiff.

    When l is quadratic (detected: ∇l(ω) = ∇²l(0) ω at random ω, relative 1e-12; or forced by
    ``quadratic=``) the system *is* the :class:`EulerPoincareSuslovSystem` with 𝕀 = ∇²l(0) and every
    SO(3) method runs on it through the same code (identical trajectories). For a non-quadratic l:
    ``dreps-euler``, ``dreps-rk4`` and ``eps-variational`` (the discrete EPS equations (56) with
    ∇l, Jacobian by autodiff) run; ``eps-midpoint`` and the Lie-group GNI (``lie-gni-*``), whose
    equations use the constant inertia 𝕀 (a metric), refuse it with an InputError.

    Parameters
    ----------
    reduced_lagrangian : traceable callable ω (3,) -> scalar l(ω) (J); its Hessian must be
        symmetric positive definite along the motion (at ω = 0 it is checked).
    constraint_vectors : (3,) or (m, 3), m ∈ {1, 2}: the body covectors a^α (as for
        EulerPoincareSuslovSystem).
    name : label;  quadratic : None (detect) or bool.
    potential : None, or a traceable callable R (3, 3) -> scalar V(R) (J): a heavy body. The
        constructor then returns a :class:`HeavyBodySystem` (its own kind; the methods for the
        Euler–Poincaré–Suslov equations, which have no R in them, refuse it).

    Attributes
    ----------
    reduced_lagrangian, quadratic (bool), inertia = ∇²l(0) (3, 3), A (m, 3), projector (the
    ∇²l(0)-orthogonal projector onto ker A: used only to remove round-off drift from ω).

    Raises
    ------
    SystemDefinitionError (as EulerPoincareSuslovSystem, for ∇²l(0) and A; or l not scalar/finite).
    """

    kind = "left-invariant"

    def __new__(cls, *args, potential=None, **kwargs):
        # a potential breaks the left invariance: the system is then a HeavyBodySystem (its own kind)
        if potential is not None and cls is LeftInvariantSystem:
            cls = HeavyBodySystem
        return super().__new__(cls)

    def __init__(self, reduced_lagrangian, constraint_vectors, name: str = "left-invariant", *,
                 quadratic: bool | None = None, potential=None, force=None):
        refuse_force(force, name)
        import jax

        if not callable(reduced_lagrangian):
            raise SystemDefinitionError(f"{name}: reduced_lagrangian must be a callable ω (3,) -> scalar")
        l = reduced_lagrangian
        try:
            val = jnp.asarray(l(jnp.zeros(3)))
            H0 = np.asarray(jax.hessian(l)(jnp.zeros(3)), dtype=float)
        except Exception as exc:  # noqa: BLE001 — report the user's function failing, with its message
            raise SystemDefinitionError(f"{name}: reduced_lagrangian could not be evaluated and differentiated "
                               f"at ω = 0: {exc}") from exc
        if val.shape != ():
            raise SystemDefinitionError(f"{name}: reduced_lagrangian must return a scalar; got shape {val.shape}")
        super().__init__(H0, constraint_vectors, name)
        self.reduced_lagrangian = l
        self._grad_l = jax.grad(l)
        self._hess_l = jax.hessian(l)
        if quadratic is None:
            ws = jnp.asarray(np.random.default_rng(0).normal(size=(4, 3)))
            g = np.asarray(jax.vmap(self._grad_l)(ws))
            lin = np.asarray(ws) @ H0.T
            quadratic = bool(np.max(np.abs(g - lin)) <= 1e-12 * max(1.0, float(np.max(np.abs(lin)))))
        self.quadratic = bool(quadratic)

    def __repr__(self):
        return (f"<LeftInvariantSystem {self.name}: m = {self.m}, "
                f"{'quadratic' if self.quadratic else 'non-quadratic'} l>")

    # the quadratic case inherits the EulerPoincareSuslovSystem methods unchanged (same numbers)
    def momentum(self, omega):
        """∂l/∂ω, shape (3,)."""
        return super().momentum(omega) if self.quadratic else self._grad_l(omega)

    def energy(self, omega):
        """E(ω) = ⟨∂l/∂ω, ω⟩ − l(ω) (= ½ωᵀ𝕀ω for a quadratic l)."""
        if self.quadratic:
            return super().energy(omega)
        return jnp.sum(self._grad_l(omega) * omega) - self.reduced_lagrangian(omega)

    def locked_inertia(self, omega):
        """𝕀(ω) = ∇²l(ω), shape (3, 3)."""
        return self._I if self.quadratic else self._hess_l(omega)

    def multiplier(self, omega):
        """λ(ω) = −C⁻¹A𝕀(ω)⁻¹(∇l × ω), C = A𝕀(ω)⁻¹Aᵀ; shape (m,)."""
        if self.quadratic:
            return super().multiplier(omega)
        return self._split(omega)[1]

    def omega_dot(self, omega):
        """ω̇ = 𝕀(ω)⁻¹(∇l(ω) × ω + Aᵀλ(ω)), shape (3,)."""
        if self.quadratic:
            return super().omega_dot(omega)
        return self._split(omega)[0]

    def _split(self, omega):
        from .. import linalg
        Hl = self._hess_l(omega)
        L = linalg.cholesky(Hl)
        f = linalg.cho_solve(L, self.euler_term(omega))             # 𝕀(ω)⁻¹ (∇l × ω)
        IAt = linalg.cho_solve(L, self._A.T)                        # 𝕀(ω)⁻¹ Aᵀ (3, m)
        lam = -linalg.solve_spd(linalg.mm(self._A, IAt), linalg.mv(self._A, f))
        return f + linalg.mv(IAt, lam), lam


class HeavyBodySystem(LeftInvariantSystem):
    """A rigid body on SO(3) with a quadratic reduced Lagrangian l(ω) = ½ωᵀ𝕀ω, constant body
    constraint covectors A and a potential V(R): a heavy (e.g. gravitating) nonholonomic body.

    Built by ``LeftInvariantSystem(l, A, potential=V)``. The potential breaks the left invariance,
    so the ω equation no longer closes (Jiménez–Scheurle 2015, (17) with the potential term of the
    Lagrange–d'Alembert principle): with the left-trivialised gradient ∇_R V
    (⟨∇_R V, η⟩ = d/ds V(R exp(sη̂))|₀),

        𝕀ω̇ = (𝕀ω) × ω − ∇_R V(R) + Aᵀλ,   Aω = 0,   Ṙ = R hat(ω)

    (for V = mg⟨e₃, Rχ⟩, χ the centre of mass in the body: −∇_R V = mg γ × χ, γ = Rᵀe₃, the heavy
    top). The energy ½ωᵀ𝕀ω + V(R) is conserved.

    Methods: it is of kind ``"heavy-body"``, integrated through the registered view as the
    :class:`~dalembert.systems.reduced.ReducedSystem` on SO(3) with n = 0 (metric 𝕀, constraint
    matrix A, potential V(x, R) = V(R), left trivialization): ``lie-gni``, ``reduced-gni``,
    ``groupoid-gni``, ``reference`` (state ``R0, omega0``; the nodes report ξ = ω as ``xi`` and
    the shape arrays x, ẋ empty).

    Raises SystemDefinitionError for a non-quadratic l or a potential that is not a scalar function of R.
    """

    kind = "heavy-body"

    @classmethod
    def kinds(cls) -> tuple:
        """Only ``("heavy-body",)``: the Euler–Poincaré–Suslov methods must not take it."""
        return ("heavy-body",)

    def __init__(self, reduced_lagrangian, constraint_vectors, name: str = "heavy-body", *,
                 quadratic: bool | None = None, potential=None):
        super().__init__(reduced_lagrangian, constraint_vectors, name, quadratic=quadratic)
        if not self.quadratic:
            raise SystemDefinitionError(f"{name}: a potential needs a quadratic reduced Lagrangian l(ω) = ½ωᵀ𝕀ω "
                               "(the Lie-group GNIs that integrate a heavy body use the metric 𝕀)")
        if not callable(potential):
            raise SystemDefinitionError(f"{name}: potential must be a callable R (3, 3) -> scalar")
        try:
            v = jnp.asarray(potential(jnp.eye(3)))
        except Exception as exc:  # noqa: BLE001 — report the user's function failing, with its message
            raise SystemDefinitionError(f"{name}: potential could not be evaluated at R = I: {exc}") from exc
        if v.shape != () or not np.isfinite(float(v)):
            raise SystemDefinitionError(f"{name}: potential must return a finite scalar; got {v!r}")
        self.potential = potential

    def __repr__(self):
        return f"<HeavyBodySystem {self.name}: m = {self.m}, potential V(R)>"

    def total_energy(self, R, omega):
        """½ωᵀ𝕀ω + V(R) (J)."""
        return self.energy(omega) + self.potential(R)

    def as_reduced(self):
        """The same system as a ReducedSystem on SO(3) with n = 0 (cached)."""
        from .reduced import ReducedSystem
        from .._cache import cached
        V = self.potential
        return cached(self, "reduced view", lambda: ReducedSystem(
            np.asarray(self.inertia), np.asarray(self.A), potential=lambda x, R: V(R),
            trivialization="left", name=self.name))

    def reference_solution(self, R0, omega0, *, t, rtol: float = 1e-13, atol: float = 1e-13) -> dict:
        """R (N, 3, 3), omega (N, 3), lam (N, m) and energy (N,) at times t (DOP853 on the
        ReducedSystem equations of :meth:`as_reduced`)."""
        ref = self.as_reduced().reference_solution(np.zeros(0), R0, np.zeros(0), omega0, t=t, rtol=rtol, atol=atol)
        out = {"R": ref["R"], "omega": ref["xi"]}
        out.update({k: ref[k] for k in ("lam", "energy") if k in ref})
        return out


def _heavy_view_system(body, R0=None, omega0=None):
    return body.as_reduced()


def _heavy_view_state(reduced, R0, omega0):
    z = jnp.zeros((0,), jnp.float64)
    return (z, R0, z, omega0)


from .kind import register_view  # noqa: E402

register_view("heavy-body", "reduced", _heavy_view_system, _heavy_view_state,
              "a heavy body (R, ω) as the ReducedSystem on SO(3) with n = 0 and the potential V(R)")
