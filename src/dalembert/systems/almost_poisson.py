"""Almost-Poisson systems ẋ = Π(x) ∇H(x), and the reduction of a nonholonomic system to one.

Source: Celledoni, Farré Puiggalí, Høiseth, Martín de Diego, "Energy-preserving integrators
applied to nonholonomic systems" (2019), §2.2 and §3.3, restated in
the restatement §2.3–§2.5 (equations (8), (9), (16)–(18)).

* :class:`AlmostPoissonSystem` — a skew matrix field Π(x) (N × N) and a Hamiltonian H(x) on R^N.
  H is a first integral because Π is skew: Ḣ = ∇Hᵀ Π ∇H = 0. ∇H comes from JAX autodiff.
* :func:`almost_poisson` — the automatic reduction of a :class:`NonholonomicSystem`
  (G, V, μ) with linear constraints μ(q) v = 0 to adapted coordinates ζ = (q, ρ) ∈ R^{n+m}:
  a smooth basis X(q) (n × m) of D_q = ker μ(q) from a Householder QR of μ(q)ᵀ with signs frozen
  at an anchor configuration (spec §4.4, Algorithm 1; its derivative by autodiff, so the sign
  erratum 6 does not arise), g_D = Xᵀ G X, ρ = Xᵀ G v (16b), v = X g_D⁻¹ ρ (16a),
  𝓗(q, ρ) = ½ ρᵀ g_D⁻¹ ρ + V(q) (its gradient (18) by autodiff) and
  Π = [[0, X], [−Xᵀ, B]] with B_ab = ((DX_a) X_b − (DX_b) X_a)ᵀ p, p = G v (17).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import linalg
from ..errors import ConstraintViolationError, InputError, SystemError_
from .kind import SystemKind
from .nonholonomic import _as_vector

#: A Householder step whose conditioning (ν + s R_kk)/ν (1 to 2 with the standard signs, 0 where
#: the frozen-sign reflection breaks down) falls below this value counts as degenerate: the basis
#: and its derivatives vary ever faster there and the chart (q, ρ) ends. The window it flags is
#: wide (for the sleigh about ±0.3 rad of heading) so that no step can jump over it.
DEGENERACY_TOL = 0.05
#: Π(x0) counts as skew when max |Π + Πᵀ| ≤ SKEW_RTOL · max(1, max |Π|).
SKEW_RTOL = 1e-12


class AlmostPoissonSystem(SystemKind):
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

    The callables take and return JAX arrays and must be traceable. ``state_names = ("x0",)``:
    ``dl.integrate(system, method, x0=..., ...)``.

    Source: Celledoni et al. 2019, §2.2, (8)–(9) (spec §2.4).
    """

    #: Keyword names of the initial state in ``dl.integrate`` (the system-kind protocol).
    state_names = ("x0",)
    kind = "almost-poisson"
    path_array = "x"

    def __init__(self, poisson_matrix, hamiltonian, name: str = "almost-poisson", *,
                 constraint=None, lift=None, reduce=None, nonholonomic=None, degeneracy=None,
                 n_config: int | None = None):
        for nm, f in (("poisson_matrix", poisson_matrix), ("hamiltonian", hamiltonian)):
            if not callable(f):
                raise InputError(f"AlmostPoissonSystem needs {nm}=lambda x: ... (got {type(f).__name__})")
        for nm, f in (("constraint", constraint), ("lift", lift), ("reduce", reduce),
                      ("degeneracy", degeneracy)):
            if f is not None and not callable(f):
                raise InputError(f"{nm} must be a callable; got {type(f).__name__}")
        self._pi = poisson_matrix
        self._h = hamiltonian
        self._constraint = constraint
        self.lift = lift
        self.reduce = reduce
        self.nonholonomic = nonholonomic
        self._degeneracy = degeneracy
        #: number of configuration coordinates q = x[:n_config] (reduced systems), else None.
        self.n_config = n_config
        self.name = str(name)
        self._checker = None
        self._checker_batch = None
        self._shapes_ok: set = set()

    def __repr__(self):
        return f"AlmostPoissonSystem(name={self.name!r})"

    # --- the data ---------------------------------------------------------------------------
    def poisson_matrix(self, x):
        """Π(x), shape (N, N), skew-symmetric."""
        return jnp.asarray(self._pi(x), dtype=jnp.float64)

    def hamiltonian(self, x):
        """H(x), scalar."""
        return jnp.asarray(self._h(x), dtype=jnp.float64).reshape(())

    def grad_hamiltonian(self, x):
        """∇H(x), shape (N,) (autodiff)."""
        return jax.grad(self.hamiltonian)(x)

    def vector_field(self, x):
        """ẋ = Π(x) ∇H(x), shape (N,)."""
        return linalg.mv(self.poisson_matrix(x), self.grad_hamiltonian(x))

    def energy(self, x):
        """Alias of :meth:`hamiltonian`."""
        return self.hamiltonian(x)

    def constraint_residual(self, x):
        """The constraint residual at x, shape (k,); (0,) for a system without constraint."""
        if self._constraint is None:
            return jnp.zeros((0,), jnp.float64)
        return jnp.asarray(self._constraint(x), dtype=jnp.float64).reshape(-1)

    def degeneracy(self, x):
        """Conditioning measure of the chart at x (scalar; 1 where there is no chart to worry about)."""
        if self._degeneracy is None:
            return jnp.ones((), jnp.float64)
        return jnp.asarray(self._degeneracy(x), dtype=jnp.float64).reshape(())

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
        InputError (x0), SystemError_ (a callable's output), ConstraintViolationError.
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
                    shape = tuple(jax.eval_shape(fn, xs).shape)
                except Exception as exc:  # a user's callable may raise anything
                    raise SystemError_(f"{nm}(x0) raised {type(exc).__name__}: {exc}") from exc
                want = (N, N) if nm == "poisson_matrix" else ()
                if shape != want and not (nm == "hamiltonian" and shape == (1,)):
                    raise SystemError_(f"{nm}(x0) returned shape {shape}; expected {want} for x0 of shape {(N,)}")
            self._shapes_ok.add(N)
        if self._checker is None:
            self._checker = jax.jit(self._values)
        P, H, dH, res, deg = (np.asarray(a) for a in self._checker(jnp.asarray(x)))
        for a, nm in ((P, "poisson_matrix"), (H, "hamiltonian"), (dH, "hamiltonian (gradient)"),
                      (res, "constraint")):
            if not np.all(np.isfinite(a)):
                raise SystemError_(f"{nm}(x0) returned non-finite values: {a}")
        skew = float(np.max(np.abs(P + P.T)))
        if skew > SKEW_RTOL * max(1.0, float(np.max(np.abs(P)))):
            raise SystemError_(f"poisson_matrix(x0) is not skew-symmetric (max |Π + Πᵀ| = {skew:.3e})")
        if not deg > DEGENERACY_TOL:
            raise SystemError_(f"the adapted basis is degenerate at x0 (conditioning {float(deg):.3e})")
        if res.size and np.max(np.abs(res)) > tol * max(1.0, float(np.max(np.abs(x)))):
            raise ConstraintViolationError(
                f"x0 violates the constraint: residual {res} (max {np.max(np.abs(res)):.3e})", res)
        return (x,)

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

    def diagnostics(self, obs: dict) -> dict:
        """Node diagnostics from a method's observation {x, ...}: energy H(x) and
        constraint_residual (k,) (zero-length without a constraint)."""
        x = obs["x"]
        return {"energy": self.hamiltonian(x), "constraint_residual": self.constraint_residual(x)}


# ---------------------------------------------------------------------------------------------
# a smooth basis of ker μ(q): Householder QR of μ(q)ᵀ with frozen signs
# ---------------------------------------------------------------------------------------------

def householder_qr(A, signs=None):
    """Householder QR of A (n × r, r ≤ n) with a given sign vector: A = Q R.

    Parameters
    ----------
    A : (n, r) array (for a basis of ker μ: A = μ(q)ᵀ, r = number of constraints).
    signs : (r,) array of ±1, or None for the standard choice s_k = sign(R_kk) (+1 at 0).
        Frozen signs make Q a smooth function of A (spec §4.4, erratum 6); the derivative of Q
        is then available by autodiff (``jax.jacfwd``).

    Returns
    -------
    (Q (n, n) orthogonal, R (n, r) upper triangular, signs (r,), conditioning) where
    conditioning = min_k (ν_k + s_k R_kk)/ν_k ∈ [0, 2] (≥ 1 with the standard signs; 0 where
    the reflection with these signs degenerates).

    Source: Celledoni et al. 2019, Algorithm 1 (spec §4.4, 0-based restatement).
    """
    n, r = A.shape
    Q = jnp.eye(n, dtype=jnp.float64)
    R = A
    used, cond = [], jnp.asarray(2.0)
    for kk in range(r):
        x = R[kk:, kk]
        nu = jnp.sqrt(jnp.sum(x * x))
        s = (jnp.where(R[kk, kk] >= 0, 1.0, -1.0) if signs is None else jnp.asarray(signs[kk], jnp.float64))
        used.append(s)
        head = R[kk, kk] + s * nu
        wt = jnp.concatenate([jnp.zeros(kk), head[None], R[kk + 1:, kk]])
        om = jnp.sqrt(jnp.sum(wt * wt))
        w = wt / om
        R = R - 2.0 * w[:, None] * linalg.vm(w, R)[None, :]
        Q = Q - 2.0 * linalg.mv(Q, w)[:, None] * w[None, :]
        cond = jnp.minimum(cond, head * s / nu)
    return Q, R, jnp.stack(used) if used else jnp.zeros((0,)), cond


def null_space_basis(constraint_matrix: Callable, signs) -> Callable:
    """q -> (X (n, m), conditioning): the last m = n − r columns of the Householder Q of μ(q)ᵀ.

    X is Euclidean-orthonormal with μ(q) X = 0, smooth in q while the conditioning stays away
    from 0 (signs frozen; see :func:`householder_qr`).
    """
    def basis(q):
        mu = constraint_matrix(q)
        Q, _, _, cond = householder_qr(mu.T, signs)
        return Q[:, mu.shape[0]:], cond
    return basis


# ---------------------------------------------------------------------------------------------
# the automatic reduction
# ---------------------------------------------------------------------------------------------

class ReducedForm(NamedTuple):
    """The functions of the reduction for one sign vector (see :func:`reduced_form`)."""

    frame: Callable           # q -> (X (n, m), conditioning)
    basis: Callable           # q -> X (n, m)
    reduced_metric: Callable  # q -> g_D = Xᵀ G X (m, m)
    velocity: Callable        # (q, ρ) -> v = X g_D⁻¹ ρ (n,)          (16a)
    lift: Callable            # ζ -> (q, v)
    reduce: Callable          # (q, v) -> ζ = (q, Xᵀ G v)               (16b)
    hamiltonian: Callable     # ζ -> ½ ρᵀ g_D⁻¹ ρ + V(q)
    poisson_matrix: Callable  # ζ -> Π(ζ) (n+m, n+m)                    (8), (17)
    constraint: Callable      # ζ -> μ(q) v(ζ) (r,)


def reduced_form(system, n: int, signs, dbasis: Callable | None = None) -> ReducedForm:
    """The reduction of ``system`` to ζ = (q, ρ) with the Householder basis of the given signs.

    ``signs`` may be Python numbers or traced arrays (a method that picks the signs at the
    start of each step, like GONZALEZ-R, passes them traced). ``dbasis(q) -> (n, m, n)``
    replaces the autodiff derivative ∂X^j_a/∂q^i in B (17) (e.g. a finite difference, Remark 3.5).
    Source: spec §2.5, (16)–(18).
    """
    frame = null_space_basis(system.constraint_matrix, signs)

    def basis(q):
        return frame(q)[0]

    def reduced_metric(q):
        X = basis(q)
        return linalg.mm(X.T, linalg.mm(system.mass_matrix(q), X))

    def velocity(q, rho):
        X = basis(q)
        gD = linalg.mm(X.T, linalg.mm(system.mass_matrix(q), X))
        return linalg.mv(X, linalg.solve_spd(gD, rho))

    def lift(x):
        q, rho = x[:n], x[n:]
        return q, velocity(q, rho)

    def reduce(q, v):
        return jnp.concatenate([q, linalg.vm(system.momentum(q, v), basis(q))])

    def hamiltonian(x):
        q, rho = x[:n], x[n:]
        gD = reduced_metric(q)
        return 0.5 * jnp.sum(rho * linalg.solve_spd(gD, rho)) + system.potential(q)

    def poisson_matrix(x):
        q, rho = x[:n], x[n:]
        X = basis(q)
        DX = jax.jacfwd(basis)(q) if dbasis is None else dbasis(q)   # (n, m, n): ∂X^j_a/∂q^i
        p = system.momentum(q, velocity(q, rho))        # (16a)
        M = jnp.sum(DX[:, :, None, :] * X.T[None, None, :, :], axis=-1)   # M[j,a,b] = ((DX_a) X_b)^j
        Mp = jnp.sum(M * p[:, None, None], axis=0)      # (m, m)
        B = Mp - Mp.T                                   # (17)
        top = jnp.concatenate([jnp.zeros((n, n)), X], axis=1)
        bottom = jnp.concatenate([-X.T, B], axis=1)
        return jnp.concatenate([top, bottom], axis=0)

    def constraint(x):
        q, v = lift(x)
        return system.constraint_residual(q, v)

    return ReducedForm(frame, basis, reduced_metric, velocity, lift, reduce, hamiltonian,
                       poisson_matrix, constraint)


def almost_poisson(system, q0, *, signs=None, name: str | None = None) -> AlmostPoissonSystem:
    """The almost-Poisson form of a nonholonomic system in adapted coordinates ζ = (q, ρ).

    Parameters
    ----------
    system : NonholonomicSystem with linear constraints μ(q) v = 0 (n coordinates, r constraints).
    q0 : (n,) a configuration: fixes the dimensions and anchors the basis (the Householder
        signs are the standard ones at q0, frozen everywhere, so X(q) is one smooth field).
    signs : (r,) optional ±1 signs to use instead.
    name : default ``system.name + "/almost-poisson"``.

    Returns
    -------
    AlmostPoissonSystem on R^{n+m} (m = n − r) with ζ = (q, ρ), ρ = Xᵀ G v ∈ R^m, and
    ``lift(ζ) -> (q, v)`` (16a), ``reduce(q, v) -> ζ`` (16b), ``constraint(ζ) = μ(q) v(ζ)``,
    ``degeneracy(ζ)`` (the Householder conditioning at q), ``n_config = n`` and extra attributes
    ``basis(q) -> X (n, m)``, ``reduced_metric(q) -> g_D (m, m)``, ``nonholonomic = system``.

    Raises
    ------
    InputError for affine constraints (not covered by the paper's reduction), or for a
    degenerate basis at q0. Along a path, a degenerate basis (conditioning below
    :data:`DEGENERACY_TOL`; e.g. the Chaplygin sleigh anchored at heading θ0 = 0.1, whose
    frozen-sign reflection breaks down near θ = 3π/2) makes the discrete-gradient steps report failure, so that ``dl.integrate``
    stops with an error naming the step and time.

    Source: Celledoni et al. 2019 §2.2, §3.3, (8), (16)–(18) (spec §2.3–§2.5).
    """
    if system.is_affine:
        raise InputError("almost_poisson: affine constraints μ(q) v = ν(q) are not supported "
                         "(the reduction of Celledoni et al. 2019 assumes linear constraints)")
    q0 = _as_vector(q0, "q0")
    n = q0.size
    mu0 = np.asarray(system.constraint_matrix(jnp.asarray(q0)))
    r = mu0.shape[0]
    if signs is None:
        _, _, s0, c0 = householder_qr(jnp.asarray(mu0.T))
        signs = np.asarray(s0)
    else:
        signs = np.asarray(signs, np.float64).reshape(-1)
        if signs.shape != (r,) or not np.all(np.abs(signs) == 1):
            raise InputError(f"signs must be {r} values ±1; got {signs}")
    signs = tuple(float(s) for s in signs)
    f = reduced_form(system, n, signs)
    c0 = float(f.frame(jnp.asarray(q0))[1])
    if not c0 > DEGENERACY_TOL:
        raise InputError(f"almost_poisson: the basis of ker μ is degenerate at q0 = {q0} "
                         f"(conditioning {c0:.3e}); choose other signs")
    basis, reduced_metric = f.basis, f.reduced_metric
    poisson_matrix, hamiltonian, lift, reduce, constraint = (
        f.poisson_matrix, f.hamiltonian, f.lift, f.reduce, f.constraint)
    basis_c = f.frame

    ap = AlmostPoissonSystem(poisson_matrix, hamiltonian, name or f"{system.name}/almost-poisson",
                             constraint=constraint, lift=lift, reduce=reduce, nonholonomic=system,
                             degeneracy=lambda x: basis_c(x[:n])[1], n_config=n)
    ap.basis = basis
    ap.reduced_metric = reduced_metric
    ap.signs = signs
    return ap


# ---------------------------------------------------------------------------------------------
# the registered view: a NonholonomicSystem as an AlmostPoissonSystem
# ---------------------------------------------------------------------------------------------

def _anchor_signs(system, q0) -> tuple:
    """The standard Householder signs of μ(q0)ᵀ: what the reduction anchored at q0 depends on."""
    mu0 = jnp.asarray(system.constraint_matrix(jnp.asarray(q0, jnp.float64)))
    return tuple(float(s) for s in np.asarray(householder_qr(mu0.T)[2]))


def _view_system(system, q0, v0=None):
    """The almost-Poisson form of ``system`` anchored at q0: one object per sign pattern of the
    anchor (kept with the system), so that runs from every q0 with the same signs share it and
    its compiled programs."""
    from .._cache import cached
    signs = _anchor_signs(system, q0)
    return cached(system, ("almost-poisson view", np.shape(q0), signs),
                  lambda: almost_poisson(system, q0, signs=signs))


def _view_state(ap, q0, v0):
    return (ap.reduce(jnp.asarray(q0), jnp.asarray(v0)),)


from .kind import register_view  # noqa: E402

register_view("nonholonomic", "almost-poisson", _view_system, _view_state,
              "the automatic reduction dl.almost_poisson (Celledoni et al. 2019 §3.3, (16)–(18)), "
              "anchored at the initial configuration")
