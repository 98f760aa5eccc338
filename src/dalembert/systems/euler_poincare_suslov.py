"""Left-invariant nonholonomic systems on SO(3): the Euler–Poincaré–Suslov (EPS) equations.

Jiménez & Scheurle, "On the discretization of the Euler–Poincaré–Suslov equations in SO(3)"
(``shared/papers/suslov-2015-euler-poincare-suslov.md`` §1.2, §1.5), with reduced Lagrangian
l(ω) = ½ ωᵀ𝕀ω and m constant constraint covectors a^α (rows of ``A``, shape (m, 3)):

    𝕀 ω̇ = (𝕀ω) × ω + Aᵀλ ,      A ω = 0 ,      Ṙ = R hat(ω)                  (P17), (P42)–(P43)

Eliminating λ (spec §1.2, (P66)–(P69)): with f(ω) = 𝕀⁻¹((𝕀ω) × ω) and C = A 𝕀⁻¹ Aᵀ (m×m),

    λ(ω) = −C⁻¹ A f(ω) ,     ω̇ = h(ω) = f(ω) + 𝕀⁻¹Aᵀλ(ω) = P f(ω),   P = I − 𝕀⁻¹AᵀC⁻¹A.

Energy E(ω) = ½ ωᵀ𝕀ω is conserved (for symmetric 𝕀). Sign convention for λ (erratum E13): the
one written above, 𝕀ω̇ = 𝕀ω×ω + λa.

Non-symmetric 𝕀 (erratum E2): the paper prints a non-symmetric inertia matrix and uses 𝕀ω as the
momentum. Such a matrix is refused unless ``allow_nonsymmetric=True``; it is then used literally
(momentum 𝕀ω in the equations above; E = ½ωᵀ𝕀ω), which for a = e3 is identical to the symmetric
matrix with the same upper-left 2×2 block and third row. Energy conservation, the variational
derivation and the midpoint scheme's exact energy hold only for symmetric 𝕀.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..errors import ConstraintViolationError, InputError, SystemError_
from ..lie import so3


class EulerPoincareSuslovSystem:
    """An Euler–Poincaré–Suslov system on SO(3) (rigid body with body-fixed velocity constraints).

    Parameters
    ----------
    inertia : (3, 3) inertia tensor 𝕀, symmetric positive definite (kg m²).
    constraint_vectors : (3,) or (m, 3) with m ∈ {1, 2}: the covectors a^α, nonzero and linearly
        independent; the constraints are ⟨a^α, ω⟩ = 0 (body angular velocity ω).
    name : label used in trajectories and reports.
    allow_nonsymmetric : accept a non-symmetric 𝕀 (used literally; see module doc). Its symmetric
        part must still be positive definite.

    Attributes
    ----------
    inertia (3, 3), A (m, 3), m, state_names = ("R0", "omega0").

    Raises
    ------
    SystemError_ for a non-finite, wrongly shaped, non-symmetric (unless allowed) or not positive
    definite inertia, or zero / dependent / too many constraint vectors.
    """

    #: Keyword names of the initial state in ``dl.integrate`` (the system-kind protocol).
    state_names = ("R0", "omega0")
    kind = "euler-poincare-suslov"

    def __init__(self, inertia, constraint_vectors, name: str = "euler-poincare-suslov", *,
                 allow_nonsymmetric: bool = False):
        I = np.asarray(inertia, dtype=float)
        if I.shape != (3, 3):
            raise SystemError_(f"{name}: inertia must have shape (3, 3); got {I.shape}")
        if not np.all(np.isfinite(I)):
            raise SystemError_(f"{name}: inertia has non-finite entries")
        asym = float(np.max(np.abs(I - I.T)))
        if asym > 1e-12 * max(1.0, float(np.max(np.abs(I)))) and not allow_nonsymmetric:
            raise SystemError_(
                f"{name}: inertia is not symmetric (max |𝕀 − 𝕀ᵀ| = {asym:.3g}); a physical inertia "
                f"tensor is symmetric. Pass allow_nonsymmetric=True to use it literally (momentum 𝕀ω), "
                f"as the Jiménez–Scheurle paper does (erratum E2)")
        eig = np.linalg.eigvalsh(0.5 * (I + I.T))
        if eig[0] <= 1e-12 * max(1.0, abs(eig[-1])):
            raise SystemError_(f"{name}: inertia is not positive definite (eigenvalues of its "
                               f"symmetric part: {np.array2string(eig, precision=4)})")
        A = np.asarray(constraint_vectors, dtype=float)
        if A.ndim == 1:
            A = A[None, :]
        if A.ndim != 2 or A.shape[1] != 3:
            raise SystemError_(f"{name}: constraint_vectors must have shape (3,) or (m, 3); got {A.shape}")
        m = A.shape[0]
        if not 1 <= m <= 2:
            raise SystemError_(f"{name}: need 1 or 2 constraint vectors (m = 3 leaves only ω = 0); got {m}")
        if not np.all(np.isfinite(A)):
            raise SystemError_(f"{name}: constraint_vectors have non-finite entries")
        norms = np.linalg.norm(A, axis=1)
        if np.any(norms < 1e-12):
            raise SystemError_(f"{name}: constraint vector {int(np.argmin(norms))} is zero")
        sv = np.linalg.svd(A / norms[:, None], compute_uv=False)
        if sv[-1] < 1e-10:
            raise SystemError_(f"{name}: the constraint vectors are linearly dependent "
                               f"(singular values {np.array2string(sv, precision=3)})")
        self.name = name
        self.inertia = I
        self.symmetric = asym <= 1e-12 * max(1.0, float(np.max(np.abs(I))))
        self.A = A
        self.m = m
        Iinv = np.linalg.inv(I)
        C = A @ Iinv @ A.T
        Cinv = np.linalg.inv(C)
        self._Iinv_np = Iinv
        self._I = jnp.asarray(I)
        self._Iinv = jnp.asarray(Iinv)
        self._A = jnp.asarray(A)
        # λ(ω) = K (𝕀ω × ω), K = −C⁻¹A𝕀⁻¹ (m, 3);  ω̇ = Pf (𝕀ω × ω), Pf = P 𝕀⁻¹ (3, 3)
        self._K = jnp.asarray(-Cinv @ A @ Iinv)
        P = np.eye(3) - Iinv @ A.T @ Cinv @ A
        self._P = jnp.asarray(P)
        self._Pf = jnp.asarray(P @ Iinv)
        self.projector = P       #: (3, 3) the 𝕀-orthogonal projector onto 𝔤^D = ker A

    def __repr__(self):
        return f"<EulerPoincareSuslovSystem {self.name}: m = {self.m}>"

    # --- the continuous model (jit-able; vectors (3,), no batching) ----------------------------
    def momentum(self, omega):
        """Body angular momentum ∂l/∂ω = 𝕀ω.  (3,) -> (3,)."""
        return so3.matvec(self._I, omega)

    def energy(self, omega):
        """E(ω) = ½ ωᵀ𝕀ω (scalar)."""
        return 0.5 * jnp.sum(omega * self.momentum(omega))

    def constraint_residual(self, omega):
        """A ω, shape (m,)."""
        return jnp.sum(self._A * omega[None, :], axis=-1)

    def euler_term(self, omega):
        """ad*_ω(𝕀ω) = (𝕀ω) × ω, shape (3,)."""
        return so3.cross(self.momentum(omega), omega)

    def multiplier(self, omega):
        """The continuous multiplier λ(ω) = −C⁻¹ A 𝕀⁻¹((𝕀ω) × ω), shape (m,)  (P45), (P68)."""
        return jnp.sum(self._K * self.euler_term(omega)[None, :], axis=-1)

    def omega_dot(self, omega):
        """The EPS vector field on 𝔤^D, ω̇ = h(ω) = P 𝕀⁻¹((𝕀ω) × ω), shape (3,)  (P44), (P69)."""
        return so3.matvec(self._Pf, self.euler_term(omega))

    def project(self, omega):
        """𝕀-orthogonal projection of ω onto 𝔤^D = {A ω = 0}, shape (3,)."""
        return so3.matvec(self._P, omega)

    def reconstruction(self, R, omega):
        """Ṙ = R hat(ω), shape (3, 3)."""
        return so3.matmul(R, so3.hat(omega))

    def vector_field(self, R, omega):
        """(Ṙ, ω̇) of the reduced-plus-reconstruction ODE."""
        return self.reconstruction(R, omega), self.omega_dot(omega)

    def spatial_velocity(self, R, omega):
        """Spatial angular velocity R ω (used to compare velocities at different base points)."""
        return so3.matvec(R, omega)

    # --- the system-kind protocol used by the engine -------------------------------------------
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
        if R.shape != (3, 3):
            raise InputError(f"R0 must have shape (3, 3); got {R.shape}")
        if w.shape != (3,):
            raise InputError(f"omega0 must have shape (3,); got {w.shape}")
        if not (np.all(np.isfinite(R)) and np.all(np.isfinite(w))):
            raise InputError("R0 and omega0 must be finite")
        defect = float(np.linalg.norm(np.eye(3) - R.T @ R))
        det = float(np.linalg.det(R))
        if defect > tol or det <= 0:
            if project and det > 0:
                U, _, Vt = np.linalg.svd(R)
                R = U @ Vt
            else:
                raise InputError(
                    f"R0 is not a rotation: distance from SO(3) |I − R0ᵀR0|_F = {defect:.3g}, "
                    f"det R0 = {det:.6g} (tolerance {tol:g}; need det > 0)"
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
        return R, w

    def diagnostics(self, obs: dict) -> dict:
        """Node diagnostics from an observation {R, omega, ...}: energy ½ωᵀ𝕀ω (scalar),
        constraint_residual A ω (m,), and orthogonality_defect |I − RᵀR|_F (scalar)."""
        out = {"energy": self.energy(obs["omega"]),
               "constraint_residual": self.constraint_residual(obs["omega"])}
        if "R" in obs:
            out["orthogonality_defect"] = so3.orthogonality_defect(obs["R"])
        return out

    def reference_diagnostics(self, R, omega) -> dict:
        """Diagnostics of a reference solution (adds the continuous multiplier λ)."""
        d = self.diagnostics({"R": R, "omega": omega})
        d["lam"] = self.multiplier(omega)
        return d
