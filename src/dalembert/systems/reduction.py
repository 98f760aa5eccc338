"""The automatic reduction of a nonholonomic system to almost-Poisson form, on a global basis or
on an atlas of charts.

Source: Celledoni, Farré Puiggalí, Høiseth, Martín de Diego, "Energy-preserving integrators
applied to nonholonomic systems" (2019), §2.2, §3.3, (8), (16)–(18), Algorithm 1.

A :class:`~dalembert.NonholonomicSystem` (G, V, μ) with linear constraints μ(q) v = 0
(n coordinates, r constraints, m = n − r) becomes an almost-Poisson system in adapted
coordinates ζ = (q, ρ) ∈ R^{n+m} once a basis X(q) (n × m) of D_q = ker μ(q) is chosen:
g_D = Xᵀ G X, ρ = Xᵀ G v (16b), v = X g_D⁻¹ ρ (16a), 𝓗(q, ρ) = ½ ρᵀ g_D⁻¹ ρ + V(q) and
Π = [[0, X], [−Xᵀ, B]] with B_ab = pᵀ(D_{X_b}X_a − D_{X_a}X_b) = −pᵀ[X_a, X_b], p = G v (17).

A system with a non-conservative force f(q, v, t[, u]) (``NonholonomicSystem(force=...)``) is
carried with it: ρ = Xᵀp, ṗ = −∂H/∂q + f + μᵀλ and μX = 0 give ζ̇ = Π∇𝓗 + F with
F(ζ) = (0, X(q)ᵀ f(q, X(q)∇_ρ𝓗, t)) (v = X∇_ρ𝓗 = X g_D⁻¹ρ). For a viscous force f = −D(q)v this
is the dissipative form −R∇𝓗 with R = [[0, 0], [0, XᵀDX]], positive semidefinite when D is
(McLachlan, Quispel & Robidoux 1999, §2); the discrete-gradient methods evaluate v at
X(q̄)∇̄_ρ𝓗, so that the discrete work is h ∇̄𝓗ᵀF̄ = h v̄·f̄ = f̄·(q_{k+1} − q_k) (the last to the Newton tolerance).

A smooth basis on all of Q need not exist, and one chosen from μ(q) alone (as Algorithm 1's
Householder QR with frozen signs) degenerates somewhere along a turning motion. The bases here
are **frames** X(q; a), with a chart parameter a (the anchor):

* :class:`ProjectionFrame` — the atlas used when nothing better is known: X̂(q; a) = P(q) a,
  P(q) = I − μᵀ(μμᵀ)⁻¹μ the Euclidean projector onto ker μ(q), with the anchor a (n × m) an
  orthonormal basis of ker μ(q_a) (the Householder one at the chart's anchor configuration q_a),
  made G-orthonormal, X = X̂ L⁻ᵀ with L Lᵀ = X̂ᵀ G X̂ (so g_D = I and 𝓗 = ½ ρᵀρ + V(q):
  rounding a large coordinate does not move the energy; see :func:`reduced_form`). Its
  conditioning det(aᵀ P(q) a) = Π cos² θ_i (θ_i the principal angles between ker μ(q) and
  ker μ(q_a)) is 1 at the anchor and 0 where the chart ends. B (17) by forward-mode derivatives
  of X along the m basis vectors (:func:`jvp_bracket`).
* :class:`BasisFrame` — a global basis, no charts: one the user gives (``basis=``), or the one the
  constraint rows allow when r columns of μ are constant with a nonsingular r × r block C
  (X = [I; −C⁻¹ μ_rest(q)] in those columns; e.g. the rolling disk, the gearbox, the quartic).
  B (17) by forward-mode derivatives of X along the m basis vectors.

:func:`almost_poisson` builds a :class:`NonholonomicReduction`, an
:class:`~dalembert.AlmostPoissonSystem` whose methods take the chart as an argument. The
discrete-gradient integrators carry the anchor in their state (never a constant of the compiled
program) and switch to a chart anchored at the current configuration, between steps, when the
conditioning falls below :data:`SWITCH_BELOW` (see :mod:`dalembert.methods.discrete_gradients`).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import linalg
from ..errors import InputError, SystemDefinitionError
from .almost_poisson import AlmostPoissonSystem
from .nonholonomic import _as_vector

#: An atlas chart is left (for one anchored at the current configuration, conditioning 1) when
#: its conditioning falls below this value (principal angle 45° for one constraint).
SWITCH_BELOW = 0.5
#: Random configurations at which the columns of μ are compared to find constant ones.
CONSTANT_COLUMN_PROBES = 16


# ---------------------------------------------------------------------------------------------
# Householder QR with frozen signs (Algorithm 1; used by GONZALEZ-R and for the atlas anchors)
# ---------------------------------------------------------------------------------------------

def householder_qr(A, signs=None):
    """Householder QR of A (n × r, r ≤ n) with a given sign vector: A = Q R.

    Parameters
    ----------
    A : (n, r) array (for a basis of ker μ: A = μ(q)ᵀ, r = number of constraints).
    signs : (r,) array of ±1, or None for the standard choice s_k = sign(R_kk) (+1 at 0).
        Frozen signs make Q a smooth function of A (Algorithm 1's sign choice); the derivative of Q
        is then available by autodiff (``jax.jacfwd``).

    Returns
    -------
    (Q (n, n) orthogonal, R (n, r) upper triangular, signs (r,), conditioning) where
    conditioning = min_k (ν_k + s_k R_kk)/ν_k ∈ [0, 2] (≥ 1 with the standard signs; 0 where
    the reflection with these signs degenerates).

    Source: Celledoni et al. 2019, Algorithm 1 (0-based).
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
# frames: a basis X(q; a) of ker μ(q) with a chart parameter a
# ---------------------------------------------------------------------------------------------

class ProjectionFrame:
    """The atlas X(q; a) = P(q) a (see module doc). Anchor a: (n, m), orthonormal, μ(q_a) a = 0."""

    is_global = False
    g_orthonormal = True       # reduced_form uses X = X̂ L⁻ᵀ

    def __init__(self, constraint_matrix: Callable, n: int, r: int):
        self.mu, self.n, self.m = constraint_matrix, n, n - r

    def anchor_at(self, q):
        """The anchor of the chart at q: the Householder basis of ker μ(q) (standard signs), (n, m)."""
        mu = self.mu(q)
        return householder_qr(mu.T)[0][:, mu.shape[0]:]

    def basis(self, q, a):
        """X̂ = P(q) a = a − μᵀ (μμᵀ)⁻¹ μ a, shape (n, m) (G-orthonormalised by :func:`reduced_form`)."""
        mu = self.mu(q)
        return a - linalg.mm(mu.T, linalg.solve_spd(linalg.mm(mu, mu.T), linalg.mm(mu, a)))

    def conditioning(self, q, a):
        """det(aᵀ P(q) a) = det(μ(I − a aᵀ)μᵀ) / det(μμᵀ) ∈ [0, 1] (the product of cos² of the
        principal angles between ker μ(q) and span a)."""
        mu = self.mu(q)
        Z = linalg.mm(mu, a)
        S = linalg.mm(mu, mu.T)
        num = jnp.prod(jnp.diag(linalg.cholesky(S - linalg.mm(Z, Z.T))))
        den = jnp.prod(jnp.diag(linalg.cholesky(S)))
        return jnp.where(jnp.isfinite(num), (num / den) ** 2, 0.0)


class HouseholderFrame:
    """Algorithm 1's basis: the Householder null-space basis of μ(q)ᵀ with frozen signs (the
    anchor: (r,) ±1, possibly traced). B (17) from the forward-mode Jacobian of X (n directions).
    Used by GONZALEZ-R, which takes the standard signs at the start of each step."""

    is_global = False

    def __init__(self, constraint_matrix: Callable):
        self.mu = constraint_matrix

    def anchor_at(self, q):
        return householder_qr(self.mu(q).T)[2]

    def basis(self, q, signs):
        return null_space_basis(self.mu, signs)(q)[0]

    def conditioning(self, q, signs):
        return null_space_basis(self.mu, signs)(q)[1]

    def bracket(self, q, signs, X, p, dbasis: Callable | None = None):
        """B (17); ``dbasis(q) -> (n, m, n)`` replaces the autodiff ∂X^j_a/∂q^i (Remark 3.5)."""
        DX = jax.jacfwd(lambda y: self.basis(y, signs))(q) if dbasis is None else dbasis(q)
        M = jnp.sum(DX[:, :, None, :] * X.T[None, None, :, :], axis=-1)   # M[j,a,b] = ((DX_a) X_b)^j
        Mp = jnp.sum(M * p[:, None, None], axis=0)
        return Mp - Mp.T


class BasisFrame:
    """A global basis X(q) (no charts; the anchor is a zero-length array). ``g_orthonormal``:
    :func:`reduced_form` uses it G-orthonormalised (set by :func:`almost_poisson` for the
    solved-columns basis of a q-dependent metric)."""

    is_global = True
    g_orthonormal = False

    def __init__(self, basis: Callable, n: int, m: int, description: str, dual: Callable | None = None):
        self._basis, self.n, self.m, self.description = basis, n, m, description
        self._dual = dual

    def anchor_at(self, q):
        return jnp.zeros((0,), jnp.float64)

    def basis(self, q, a=None):
        return jnp.asarray(self._basis(q), jnp.float64)

    def conditioning(self, q, a=None):
        return jnp.ones((), jnp.float64)

    def dual(self, q, a, X, rho):
        """b with Xᵀ b = ρ: the frame's own (``dual(q, ρ)``) or X (XᵀX)⁻¹ ρ (an m × m solve)."""
        if self._dual is not None:
            return self._dual(q, rho)
        return linalg.mv(X, linalg.solve_spd(linalg.mm(X.T, X), rho))

    def bracket(self, q, a, X, p):
        """B (17) from the derivatives of X along its own columns (:func:`jvp_bracket`)."""
        return jvp_bracket(self.basis, q, X, p)


def jvp_bracket(basis: Callable, q, X, p):
    """B (17), B_ab = pᵀ(D_{X_b}X_a − D_{X_a}X_b), of the basis ``basis(q) -> X (n, m)`` from m
    forward-mode derivatives of X along its own columns. q, p: (n,); X = basis(q). Returns (m, m)."""
    DX = jax.vmap(lambda w: jax.jvp(basis, (q,), (w,))[1])(X.T)   # [b] = D_{X_b} X (n, m)
    M = jnp.sum(DX * p[None, :, None], axis=1).T                  # M[a, b] = pᵀ D_{X_b} X_a
    return M - M.T


def solved_columns_frame(constraint_matrix: Callable, q0, r: int, *, probes: int = CONSTANT_COLUMN_PROBES,
                         seed: int = 0):
    """A :class:`BasisFrame` X = [I; −C⁻¹ μ_rest(q)] when r columns of μ are the same at q0 and at
    ``probes`` random configurations around it and form a nonsingular block C (chosen by QR with
    column pivoting among the constant columns); None otherwise.

    A column taken as constant is exactly equal (bitwise) at every probe, so only a function
    that is constant on all of them but not everywhere could fool the test."""
    import scipy.linalg

    q0 = np.asarray(q0, np.float64)
    n = q0.size
    rng = np.random.default_rng(seed)
    scale = 1.0 + np.abs(q0)
    pts = [q0] + [q0 + s * scale * rng.standard_normal(n) for s in (0.5, 3.0) for _ in range(probes // 2)]
    mus = np.asarray(jax.jit(jax.vmap(constraint_matrix))(jnp.asarray(np.stack(pts))))
    mus = mus[np.isfinite(mus).all(axis=(1, 2))]
    if len(mus) < 3:
        return None
    const = np.flatnonzero(np.all(mus == mus[0][None], axis=(0, 1)))
    if const.size < r:
        return None
    C_all = mus[0][:, const]
    _, R, piv = scipy.linalg.qr(C_all, pivoting=True, mode="economic")
    if abs(R[r - 1, r - 1]) <= 1e-10 * max(1.0, abs(R[0, 0])):
        return None
    dep = np.sort(const[piv[:r]])
    free = np.setdiff1d(np.arange(n), dep)
    C = mus[0][:, dep]
    m = n - r
    E_free = np.eye(n)[:, free]                                  # (n, m)
    # X = E_free − E_dep C⁻¹ μ(q) E_free: dense products (no scatter in the step's program)
    K = jnp.asarray(np.eye(n)[:, dep] @ np.linalg.inv(C))        # (n, r)
    E_free = jnp.asarray(E_free)

    def basis(q):
        return E_free - linalg.mm(K, linalg.mm(constraint_matrix(q), E_free))

    def dual(q, rho):            # Xᵀ E_free ρ = ρ, as Kᵀ E_free = 0
        return linalg.mv(E_free, rho)
    return BasisFrame(basis, n, m, f"solved for the constant columns {dep.tolist()} of μ", dual)


# ---------------------------------------------------------------------------------------------
# the reduction in one chart
# ---------------------------------------------------------------------------------------------

class ReducedForm(NamedTuple):
    """The functions of the reduction in one chart (see :func:`reduced_form`)."""

    basis: Callable           # q -> X (n, m)
    conditioning: Callable    # q -> scalar (1 at the anchor, 0 where the chart ends)
    reduced_metric: Callable  # q -> g_D = Xᵀ G X (m, m)
    velocity: Callable        # (q, ρ) -> v = X g_D⁻¹ ρ (n,)          (16a)
    lift: Callable            # ζ -> (q, v)
    reduce: Callable          # (q, v) -> ζ = (q, Xᵀ G v)               (16b)
    hamiltonian: Callable     # ζ -> ½ ρᵀ g_D⁻¹ ρ + V(q)
    poisson_matrix: Callable  # ζ -> Π(ζ) (n+m, n+m)                    (8), (17)
    constraint: Callable      # ζ -> μ(q) v(ζ) (r,)
    force_field: Callable     # (ζ, dt, g) -> (0, Xᵀ f(q, X g_ρ, t + dt)) (n+m,)   (forced reduction)


def reduced_form(system, n: int, frame, anchor=None, *, basis: Callable | None = None,
                 bracket: Callable | None = None, metric_factor=None) -> ReducedForm:
    """The reduction of ``system`` to ζ = (q, ρ) in the chart ``anchor`` of ``frame``
    (Celledoni et al. 2019 (16)–(18)). ``basis(q)`` and ``bracket(q, X, p)`` replace the frame's
    (GONZALEZ-R passes Remark 3.5's finite-difference B).

    The velocity (16a) v = X g_D⁻¹ ρ: with ``metric_factor`` (the precomputed
    :class:`~dalembert.systems.nonholonomic.MetricFactor` of a constant metric G) it is computed
    without the m × m metric g_D: with any b such that Xᵀ b = ρ (the frame's ``dual``), v is the
    velocity in ker μ with G v = b − μᵀλ, λ = (μ G⁻¹ μᵀ)⁻¹ μ G⁻¹ b — then Xᵀ G v = Xᵀ b = ρ as
    μ X = 0. Only r × r systems appear, which keeps cheap the second derivatives that the Newton
    Jacobian of a step takes (docs/benchmarks.md, "Measurements behind the code"). For a
    q-dependent G the m × m solve with g_D = Xᵀ G X is the cheaper one (m < n). 𝓗 = ½ vᵀ p + V
    with p = G v.

    A frame with ``g_orthonormal`` (the projection atlas) is used G-orthonormalised, X = X̂ L⁻ᵀ
    (X̂ the frame's basis, L Lᵀ = X̂ᵀ G X̂), so that g_D = I, v = X ρ and 𝓗 = ½ ρᵀρ + V(q) — the
    choice of the paper's own examples (§4.2). The kinetic energy is then a function of ρ alone:
    rounding the stored q (a heading of many turns, |θ| ≫ 1, is stored to ε|θ|) no longer changes
    𝓗, which otherwise makes the energy of a DG method random-walk by ε|θ| |∂𝓗/∂θ| per step.
    B (17) then by forward-mode derivatives of X along its columns (:func:`jvp_bracket`)."""
    orthonormal = getattr(frame, "g_orthonormal", False)
    if orthonormal:
        def basis(q):
            Xh = frame.basis(q, anchor)
            L = linalg.cholesky(linalg.mm(Xh.T, linalg.mm(system.mass_matrix(q), Xh)))
            return linalg.forward_solve(L, Xh.T).T

        def bracket(q, X, p):
            return jvp_bracket(basis, q, X, p)
    else:
        basis = (lambda q: frame.basis(q, anchor)) if basis is None else basis
        bracket = (lambda q, X, p: frame.bracket(q, anchor, X, p)) if bracket is None else bracket

    def reduced_metric(q):
        X = basis(q)
        return linalg.mm(X.T, linalg.mm(system.mass_matrix(q), X))

    def state(q, rho):
        """(X, v, p) at ζ = (q, ρ) (16a)."""
        X = basis(q)
        if orthonormal or metric_factor is None:
            G = system.mass_matrix(q)
            v = linalg.mv(X, rho if orthonormal else linalg.solve_spd(linalg.mm(X.T, linalg.mm(G, X)), rho))
            return X, v, linalg.mv(G, v)
        b = frame.dual(q, anchor, X, rho)
        mu = system.constraint_matrix(q)
        Gmu = metric_factor.solve(mu.T)
        C = linalg.mm(mu, Gmu)
        Gb = metric_factor.solve(b)
        lam = linalg.solve_spd(C, linalg.mv(mu, Gb))
        return X, Gb - linalg.mv(Gmu, lam), b - linalg.vm(lam, mu)

    def velocity(q, rho):
        return state(q, rho)[1]

    def lift(x):
        q, rho = x[:n], x[n:]
        return q, velocity(q, rho)

    def reduce(q, v):
        return jnp.concatenate([q, linalg.vm(system.momentum(q, v), basis(q))])

    def hamiltonian(x):
        q, rho = x[:n], x[n:]
        if orthonormal:                                   # g_D = I: a function of ρ alone
            return 0.5 * jnp.sum(rho * rho) + system.potential(q)
        _, v, p = state(q, rho)
        return 0.5 * jnp.sum(v * p) + system.potential(q)

    def poisson_matrix(x):
        q, rho = x[:n], x[n:]
        X, _, p = state(q, rho)
        B = bracket(q, X, p)                                          # (17)
        top = jnp.concatenate([jnp.zeros((n, n)), X], axis=1)
        return jnp.concatenate([top, jnp.concatenate([-X.T, B], axis=1)], axis=0)

    def constraint(x):
        return system.constraint_residual(*lift(x))

    def force_field(x, dt, g):
        """The reduced force: ρ = Xᵀ G v gives ρ̇ = Xᵀ(d/dt(Gv)) + (d/dt Xᵀ) G v, and the force
        enters d/dt(Gv) additively, so ρ̇ gains Xᵀ f (the constraint force μᵀλ drops out, μX = 0);
        q̇ gains nothing. The velocity is v = X g_ρ, with g = ∇𝓗 (then v = X g_D⁻¹ ρ (16a)) or a
        discrete gradient ∇̄𝓗 (then v̄ = X(q̄) ∇̄_ρ𝓗 = (q_{k+1} − q_k)/h on a step of (14))."""
        q = x[:n]
        X = basis(q)
        f = system.force(q, linalg.mv(X, g[n:]), dt)
        return jnp.concatenate([jnp.zeros((n,), jnp.float64), linalg.vm(f, X)])

    return ReducedForm(basis, lambda q: frame.conditioning(q, anchor), reduced_metric, velocity,
                       lift, reduce, hamiltonian, poisson_matrix, constraint, force_field)


def _chart_system(system, n, form: ReducedForm, name, degeneracy: bool) -> AlmostPoissonSystem:
    ap = AlmostPoissonSystem(form.poisson_matrix, form.hamiltonian, name, constraint=form.constraint,
                             lift=form.lift, reduce=form.reduce, nonholonomic=system, n_config=n,
                             degeneracy=(lambda x: form.conditioning(x[:n])) if degeneracy else None,
                             skew_by_construction=True,
                             force_field=form.force_field if system.has_force else None)
    ap.basis, ap.reduced_metric = form.basis, form.reduced_metric
    return ap


# ---------------------------------------------------------------------------------------------
# the reduced system
# ---------------------------------------------------------------------------------------------

class NonholonomicReduction(AlmostPoissonSystem):
    """The almost-Poisson form of a nonholonomic system in adapted coordinates ζ = (q, ρ), on a
    frame (see module doc). Made by :func:`almost_poisson`.

    Every function of ζ takes an optional ``anchor`` (the chart; default: the chart anchored at
    ζ's own configuration, :meth:`anchor_at`). For a global frame the anchor is ignored.
    ``atlas`` is True when the frame has charts: the discrete-gradient integrators then carry the
    anchor in their state (:meth:`in_chart`, :meth:`change_chart`).

    Attributes: ``frame``, ``nonholonomic`` (the system), ``n_config`` (n), ``switch_below``.
    """

    def __init__(self, system, n: int, frame, name: str, q0=None):
        self.frame = frame
        q0 = jnp.zeros(n) if q0 is None else jnp.asarray(q0, jnp.float64)
        self._factor = system.constant_factor(q0)
        self.atlas = not frame.is_global
        self.switch_below = SWITCH_BELOW
        self._n = n
        super().__init__(self._default_poisson, self._default_h, name,
                         constraint=lambda x: self.form(x).constraint(x),
                         lift=lambda x: self.form(x).lift(x), reduce=self._reduce,
                         nonholonomic=system,
                         degeneracy=(lambda x: self.form(x).conditioning(x[:n])) if self.atlas else None,
                         n_config=n, skew_by_construction=True,
                         force_field=(lambda x, dt, g: self.form(x).force_field(x, dt, g))
                         if system.has_force else None)

    def __repr__(self):
        return f"NonholonomicReduction(name={self.name!r}, atlas={self.atlas})"

    # --- charts ---------------------------------------------------------------------------
    def anchor_at(self, q):
        """The anchor of the chart at configuration q ((n, m) for the atlas; (0,) for a global frame)."""
        return self.frame.anchor_at(jnp.asarray(q))

    def chart(self, anchor) -> ReducedForm:
        """The reduction's functions in the chart ``anchor``."""
        return reduced_form(self.nonholonomic, self._n, self.frame, anchor, metric_factor=self._factor)

    def form(self, x, anchor=None) -> ReducedForm:
        return self.chart(self.anchor_at(x[:self._n]) if anchor is None and self.atlas else anchor)

    def in_chart(self, anchor) -> AlmostPoissonSystem:
        """A plain :class:`AlmostPoissonSystem` of ζ in the chart ``anchor`` (its ``degeneracy``
        is the chart's conditioning). Cheap: build it inside a traced step."""
        return _chart_system(self.nonholonomic, self._n, self.chart(anchor), self.name, self.atlas)

    def change_chart(self, x, old, new):
        """ζ in chart ``old`` -> the same (q, v) in chart ``new``: (q, X_new(q)ᵀ G v)."""
        return self.chart(new).reduce(*self.chart(old).lift(x))

    # --- functions of ζ (chart anchored at ζ's configuration unless given) ------------------
    def _default_poisson(self, x):
        return self.form(x).poisson_matrix(x)

    def _default_h(self, x):
        return self.form(x).hamiltonian(x)

    def _reduce(self, q, v, anchor=None):
        a = self.anchor_at(q) if anchor is None and self.atlas else anchor
        return self.chart(a).reduce(q, v)

    def basis(self, q, anchor=None):
        """X(q) (n, m) in the chart ``anchor`` (default: anchored at q; G-orthonormal on an atlas)."""
        q = jnp.asarray(q)
        return self.chart(self.anchor_at(q) if anchor is None and self.atlas else anchor).basis(q)

    def reduced_metric(self, q, anchor=None):
        """g_D = Xᵀ G X (m, m) (the identity, to round-off, on an atlas)."""
        q = jnp.asarray(q)
        return self.chart(self.anchor_at(q) if anchor is None and self.atlas else anchor).reduced_metric(q)

    def diagnostics(self, obs: dict) -> dict:
        """energy (the method's, if it reports one in its chart; else 𝓗(ζ)) and the constraint
        residual μ(q) v from the node's (q, v) when reported."""
        if "q" in obs and "v" in obs:
            res = self.nonholonomic.constraint_residual(obs["q"], obs["v"])
        else:
            res = self.constraint_residual(obs["x"])
        energy = obs["energy"] if "energy" in obs else self.hamiltonian(obs["x"])
        return {"energy": energy, "constraint_residual": res}


def almost_poisson(system, q0, *, basis: Callable | None = None, frame: str = "auto",
                   name: str | None = None) -> NonholonomicReduction:
    """The almost-Poisson form of a nonholonomic system in adapted coordinates ζ = (q, ρ).

    Parameters
    ----------
    system : NonholonomicSystem with linear constraints μ(q) v = 0 (n coordinates, r constraints).
    q0 : (n,) a configuration: fixes the dimensions (and the probes of the constant-column test).
    basis : optional callable q (n,) -> X (n, m), a smooth basis of ker μ(q) on the whole region
        of interest (a global basis: no charts). Checked at q0 (shape, μ(q0) X = 0, full rank).
    frame : "auto" (default: ``basis`` if given, else the solved-columns basis when r columns
        of μ are constant with a nonsingular block, else the atlas), "atlas" or "columns".
    name : default ``system.name + "/almost-poisson"``.

    The solved-columns basis is used as it is for a constant metric G, and G-orthonormalised,
    X = X̂ L⁻ᵀ with L Lᵀ = X̂ᵀ G X̂ (still global), for a q-dependent one: 𝓗 = ½ ρᵀρ + V(q) then
    needs no derivative of G, which otherwise put fourth derivatives of a user's kinetic energy
    into the Newton Jacobian (slower to compile and less accurate: docs/reduction.md). A given
    ``basis`` is used as given.

    Returns
    -------
    NonholonomicReduction on R^{n+m} (m = n − r) with ζ = (q, ρ), ρ = Xᵀ G v ∈ R^m, and
    ``lift(ζ) -> (q, v)`` (16a), ``reduce(q, v) -> ζ`` (16b), ``constraint(ζ) = μ(q) v(ζ)``,
    ``basis(q)``, ``reduced_metric(q)``, ``nonholonomic = system``, ``n_config = n``. With the
    atlas, ρ is in the chart anchored at ζ's own configuration unless an ``anchor`` is given.

    Raises
    ------
    InputError for affine constraints (not covered by the paper's reduction), a potential
    V(q, t) with explicit time, an unknown
    ``frame``, ``frame="columns"`` when μ has no constant nonsingular block, or a ``basis`` that is
    not a basis of ker μ(q0).

    Source: Celledoni et al. 2019 §2.2, §3.3, (8), (16)–(18).
    """
    if system.is_affine:
        raise InputError("almost_poisson: affine constraints μ(q) v = ν(q) are not supported "
                         "(the reduction of Celledoni et al. 2019 assumes linear constraints)")
    if getattr(system, "explicit_time", False):
        raise InputError("almost_poisson: a potential V(q, t) is not supported (the reduced Hamiltonian H(x) "
                         "has no explicit time); integrate the NonholonomicSystem itself")
    if frame not in ("auto", "atlas", "columns"):
        raise InputError(f"almost_poisson: frame must be 'auto', 'atlas' or 'columns'; got {frame!r}")
    q0 = _as_vector(q0, "q0")
    n = q0.size
    mu0 = np.asarray(system.constraint_matrix(jnp.asarray(q0)))
    r = mu0.shape[0]
    if basis is not None:
        fr = BasisFrame(basis, n, n - r, "given")
        _check_basis(fr, mu0, q0, n, r)
    else:
        fr = solved_columns_frame(system.constraint_matrix, q0, r) if frame != "atlas" else None
        if fr is not None and not system.constant_metric(jnp.asarray(q0)):
            fr.g_orthonormal = True       # see the docstring: ρ in the G-orthonormalised basis
        if fr is None and frame == "columns":
            raise InputError("almost_poisson: frame='columns' needs r columns of μ(q) that do not "
                             "depend on q and form a nonsingular block; use frame='atlas'")
        if fr is None:
            fr = ProjectionFrame(system.constraint_matrix, n, r)
    return NonholonomicReduction(system, n, fr, name or f"{system.name}/almost-poisson", q0)


def _check_basis(frame, mu0, q0, n, r):
    try:
        X = np.asarray(frame.basis(jnp.asarray(q0)))
    except Exception as exc:  # a user's callable may raise anything
        raise SystemDefinitionError(f"basis(q0) raised {type(exc).__name__}: {exc}") from exc
    if X.shape != (n, n - r):
        raise InputError(f"basis(q0) returned shape {X.shape}; expected {(n, n - r)} (n × (n − r))")
    if not np.all(np.isfinite(X)):
        raise InputError(f"basis(q0) returned non-finite values: {X}")
    scale = max(1.0, float(np.max(np.abs(X)))) * max(1.0, float(np.max(np.abs(mu0))))
    if np.max(np.abs(mu0 @ X)) > 1e-10 * scale:
        raise InputError(f"basis(q0) is not in ker μ(q0): max |μ X| = {np.max(np.abs(mu0 @ X)):.3e}")
    if np.linalg.matrix_rank(X) < n - r:
        raise InputError(f"basis(q0) has rank {np.linalg.matrix_rank(X)} < {n - r}: not a basis")


# ---------------------------------------------------------------------------------------------
# the registered view: a NonholonomicSystem as an AlmostPoissonSystem
# ---------------------------------------------------------------------------------------------

def _view_system(system, q0, v0=None):
    """The almost-Poisson form of ``system`` (one object per system and dimension, kept with the
    system: every initial state shares it and its compiled programs; the chart is in the state)."""
    from .._cache import cached
    return cached(system, ("almost-poisson view", np.shape(q0)), lambda: almost_poisson(system, q0))


def _view_state(ap, q0, v0):
    return (ap.reduce(jnp.asarray(q0), jnp.asarray(v0)),)


from .kind import register_view  # noqa: E402

register_view("nonholonomic", "almost-poisson", _view_system, _view_state,
              "the automatic reduction dl.almost_poisson (Celledoni et al. 2019 §3.3, (16)–(18)), "
              "on a global basis or an atlas of charts")
