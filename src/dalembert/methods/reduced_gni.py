"""The reduced geometric nonholonomic integrator on shape × group, R^n × SO(3), with a retraction.

Ferraro, Jiménez, Martín de Diego, Nonlinearity 28 (2015) 871, Definition 7.1 (30) and its affine
form (38) with the corrected sign (erratum E6, docs/theory/ferraro2015.md#e6), the retracted
Legendre maps of §7.1 (Lemma 9.5; erratum E11, docs/theory/ferraro2015.md#e11) and the
reconstruction of Remark 7.2 (erratum E12, docs/theory/ferraro2015.md#e12).

On another matrix Lie group G (``ReducedSystem(..., group=G)``, e.g. SE(2), SO(4); n = 0 allowed)
the same scheme runs with G's Cayley or exponential map and their right-trivialised tangents in
place of SO(3)'s; "3" below is then dim G.

System: a :class:`~dalembert.systems.reduced.ReducedSystem` (metric G̃(x), constraints
μ̃(x, R)u = ν̃(x, R), trivialised velocities u = (ẋ, ξ)). With a retraction τ (Cayley default,
exponential available) and the retracted discrete Lagrangian l_d(x_k, x_{k+1}, σ_k), σ_k = hξ_k,
the discrete Legendre maps are (left trivialization; covectors in R^{n+3} = T*_x M × g*)

    FL⁻(x_k, x_{k+1}, σ) = ( −D1 l_d ,  (dτ⁻¹_{σ})ᵀ  D_σ l_d )     over x_k
    FL⁺(x_k, x_{k+1}, σ) = (  D2 l_d ,  (dτ⁻¹_{−σ})ᵀ D_σ l_d )     over x_{k+1}

(right trivialization: the signs of the dτ arguments are swapped). One step in T*-form, state
(x_k, R_k, FL⁺_k):

    1. target = (P − Q)*_{(x_k,R_k)} FL⁺_k + 2 μ̃ᵀC̃⁻¹ν̃(x_k, R_k),   C̃ = μ̃G̃⁻¹μ̃ᵀ  (solves)
    2. solve FL⁻(x_k, x_{k+1}, hξ_k) = target for (x_{k+1}, ξ_k)
    3. FL⁺_{k+1} = FL⁺(x_k, x_{k+1}, hξ_k);  R_{k+1} = R_k τ(hξ_k) (left) or τ(hξ_k) R_k (right).

Default l_d (the SV/midpoint type of the paper's §7.2), with Δx = x_{k+1} − x_k, u = (Δx/h, σ/h),
x̄ the midpoint:
``l_d = (h/2) uᵀ G̃(x̄) u − (h/2)(V(x_k) + V(x_{k+1}))``. A user l_d is a traceable callable
``l_d(x0, x1, sigma, h)`` (build option ``discrete_lagrangian``); its derivatives come from
autodiff and the step is a Newton solve in (x_{k+1}, ξ_k).

Metric or potential depending on R (left trivialization; the unreduced system on R^n × SO(3)):
the discrete Lagrangian L_d((x_k, R_k), (x_{k+1}, R_{k+1})) is written ℓ(x_k, x_{k+1}, R_k, σ_k)
with R_{k+1} = R_k τ(σ_k); the default is the symmetric trapezoidal-in-R form

    ℓ = (h/4) uᵀ(G̃(x̄, R_k) + G̃(x̄, R_{k+1}))u − (h/2)(V(x_k, R_k) + V(x_{k+1}, R_{k+1})),

which is the l_d above when nothing depends on R. Varying R_k at fixed R_{k+1} moves σ and R_k
together, so the g*-part of FL⁻ gains the left-trivialised gradient of ℓ in R_k at fixed σ:
FL⁻_g = (dτ⁻¹_σ)ᵀ D_σ ℓ − ∇_{R_k} ℓ; FL⁺ keeps its form (varying R_{k+1} moves σ only). This is
the discrete Legendre transform of a Lie-group variational integrator (left-trivialised
D_1 L_d, D_2 L_d) used in the GNI's Definition 6.1. A user l_d for such a system takes
``(x0, x1, R0, sigma, h)``.

Fast path (constant metric, default l_d): the x-part of step 2 is linear,
Δx/h = G̃_xx⁻¹(a − G̃_xg ξ) with a = target_x − (h/2)V_x(x_k), and the group part is a 3×3 Newton
solve of (dτ⁻¹_{±hξ})ᵀ (b + S ξ) = target_g, S = G̃_gg − G̃_gx G̃_xx⁻¹ G̃_xg, b = G̃_gx G̃_xx⁻¹ a.

Non-conservative forces (``ReducedSystem(force=...)``, F = (f_x, τ) in the trivialised
velocities): the forced discrete Lagrange–d'Alembert principle (Marsden–West, Acta Numerica 2001,
§3.2) replaces FL⁻ by FL⁻ − f_d⁻ and FL⁺ by FL⁺ + f_d⁺, with the trapezoidal discrete forces of the
SV-type l_d, f_d⁻ = (h/2)F(x_k, R_k, Δx/h, ξ_k, t_k), f_d⁺ = (h/2)F(x_{k+1}, R_{k+1}, Δx/h, ξ_k,
t_{k+1}) (:meth:`_Kernels.discrete_forces`; the torque is trivialised at R_k and R_{k+1} as the
g*-parts of FL∓ are). The step then runs the general Newton in (x_{k+1}, ξ_k) (no fast path: a
force that depends on the velocity makes the x-part nonlinear). Symmetric, so ``reduced-gni-4``
keeps order 4.

Start-up (build option ``startup``):
* ``"legendre"``: FL⁺_0 = G̃ u_0. On a consistent state the first reflection is the
  identity (as in the paper's affine GNI, §6; docs/theory/ferraro2015.md).
* ``"consistent"`` (default, as for :mod:`dalembert.methods.gni` and :mod:`dalembert.methods.lie_gni`):
  FL⁺_0 = G̃ u_0 − (h/2) μ̃ᵀλ(x_0, R_0, u_0) (λ the continuous multiplier); it
  removes the O(h) period-2 component (in the constraint-force direction) that the Legendre
  start-up seeds. **Prefer it for long runs**: that period-2 ("parasitic") mode is not damped and
  can grow. Measured on P3 (h = 0.002, T = 200): Legendre — the sawtooth of λ grows from 0.8 to
  4.5e3 and the energy error reaches 0.54 (of E = 0.57) near t = 142 before it decays again;
  consistent — seed 2e-6, energy error ≤ 3e-7 up to t = 200 (the mode still grows at the same
  rate, ≈ 0.07 per unit time, from its smaller seed).
* ``"two-point"``: the paper's x_1 = x_0 + h ẋ_0, ξ_0 = ξ(0). Realised through the involution:
  FL⁺_0 = (P − Q)*(FL⁻(x_0, x_1, hξ_0) − 2μ̃ᵀC̃⁻¹ν̃), so that the first step reproduces x_1, ξ_0.
  **It caps the observed order at 1** (erratum E15, docs/theory/ferraro2015.md#e15).
* ``("second-point", x1, xi0)``: a user-supplied second point (x1 (n,), ξ_0 (3,)) by the same
  mechanism (pass tuples in ``dl.integrate`` so that the options stay hashable).

Reported at the nodes (``observe``): x (n,), R (3, 3); xdot (n,), xi (3,) = G̃⁻¹p̄_k from the
averaged momentum p̄_k = ½(FL⁺_k + FL⁻_k) = P*FL⁺_k + Q*Π, which satisfies μ̃u = ν̃ exactly ((32), (38b));
momentum = p̄_k (n+3,); lam = −(2/h) C̃⁻¹(μ̃G̃⁻¹FL⁺_k − ν̃) (the continuous multiplier to O(h²)
with the consistent start-up, sign of the ReducedSystem equations; with the Legendre start-up it
carries an O(1) period-2 component).

``lie-gni`` is the same scheme restricted to left trivialization (our construction, not in the
paper; docs/theory/ferraro2015.md): the Lie-group GNI
for systems whose constraints depend on R (the Chaplygin sphere on a rotating table); it is
registered with the Lie-group GNIs, in :mod:`dalembert.methods.lie_gni`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import linalg
from ..declarations import Claim, Feature, Invariant
from ..errors import InputError
from ..lie.retraction import Retraction, get_retraction
from ..systems.reduced import positional_parameters
from ..solvers.newton import MAX_ITER, RTOL, newton
from .base import Method, Scheme, StepInfo, Traits

_PUB = "Ferraro, Jiménez, Martín de Diego, Nonlinearity 28 (2015) 871"
_STARTUPS = ("legendre", "consistent", "two-point", "second-point")


class ReducedGNIState(NamedTuple):
    """x: (n,) x_k;  R: (3, 3) R_k;  p: (n+3,) the pre-momentum FL⁺_k."""

    x: Any
    R: Any
    p: Any


def sv_discrete_lagrangian(system):
    """The default retracted l_d(x0, x1, σ, h) = (h/2) uᵀG̃(x̄)u − (h/2)(V(x0) + V(x1)),
    u = ((x1 − x0)/h, σ/h), x̄ = (x0 + x1)/2 (FJMdD 2015 §7.2; midpoint metric when G̃ depends on x)."""
    def l_d(x0, x1, sigma, h):
        u = jnp.concatenate([(x1 - x0) / h, sigma / h])
        G = system.metric(0.5 * (x0 + x1))
        return 0.5 * h * jnp.sum(u * linalg.mv(G, u)) - 0.5 * h * (system.potential(x0) + system.potential(x1))
    return l_d


def group_retraction(group, retraction):
    """The retraction ``"cayley"`` or ``"exponential"`` of the system's group (SO(3): the closed forms
    of :mod:`dalembert.lie.retraction`; another :class:`~dalembert.lie.groups.MatrixLieGroup`: its
    cay / exp with their right-trivialised tangents)."""
    named = get_retraction(retraction)                # validates the name
    if group is None or group.name == "SO(3)":
        return named
    if named.name == "cayley":
        return Retraction("cayley", group.cayley, group.cayley_inv, group.dcay, group.dcay_inv)
    return Retraction("exponential", group.exp, group.log, group.dexp, group.dexp_inv)


def group_discrete_lagrangian(system, tau):
    """The default ℓ(x0, x1, R0, σ, h) of a system whose metric or potential depends on R (module
    doc): trapezoidal in R, midpoint in x; R1 = R0 τ(σ) (left trivialization)."""
    def l_d(x0, x1, R0, sigma, h):
        R1 = R0 @ tau.tau(sigma)
        u = jnp.concatenate([(x1 - x0) / h, sigma / h])
        xm = 0.5 * (x0 + x1)
        Gu = linalg.mv(system.metric(xm, R0) + system.metric(xm, R1), u)
        return 0.25 * h * jnp.sum(u * Gu) - 0.5 * h * (system.potential(x0, R0) + system.potential(x1, R1))
    return l_d


def _parse_startup(startup, n, d=3):
    if isinstance(startup, str):
        if startup not in _STARTUPS[:3]:
            raise InputError(f"unknown startup {startup!r}; choose from: legendre, consistent, two-point, "
                             "('second-point', x1, xi0)")
        return startup, None
    if isinstance(startup, (tuple, list)) and len(startup) == 3 and startup[0] == "second-point":
        x1 = np.asarray(startup[1], float)
        xi0 = np.asarray(startup[2], float)
        if x1.shape != (n,) or xi0.shape != (d,) or not (np.all(np.isfinite(x1)) and np.all(np.isfinite(xi0))):
            raise InputError(f"startup ('second-point', x1, xi0): need finite x1 ({n},) and xi0 ({d},); "
                             f"got {x1.shape}, {xi0.shape}")
        return "second-point", (jnp.asarray(x1), jnp.asarray(xi0))
    raise InputError(f"unknown startup {startup!r}; choose from: legendre, consistent, two-point, "
                     "('second-point', x1, xi0)")


def takes_group_lagrangian(l_d) -> bool:
    """Whether a user l_d takes (x0, x1, R0, sigma, h) (five positional parameters)."""
    return positional_parameters(l_d, required=False) >= 5


class _Kernels:
    """The pieces of a reduced GNI bound to one system, retraction and l_d (shared with
    :mod:`~dalembert.methods.reduced_rattle`)."""

    def __init__(self, system, retraction, l_d):
        self.system = system
        self.tau = group_retraction(getattr(system, "group", None), retraction)
        self.n = system.n
        self.custom = l_d is not None
        #: ℓ depends on R_k (the metric or potential depends on R): FL⁻ gains −∇_{R_k}ℓ
        self.group_dependent = system.group_dependent
        if self.group_dependent:
            if self.custom and not takes_group_lagrangian(l_d):
                raise InputError(f"{system.name}: its metric or potential depends on R, so a "
                                 "discrete_lagrangian must take (x0, x1, R0, sigma, h)")
            self.l_d = l_d if self.custom else group_discrete_lagrangian(system, self.tau)
        else:
            base = l_d if self.custom else sv_discrete_lagrangian(system)
            self.l_d = lambda x0, x1, R0, sigma, h: base(x0, x1, sigma, h)
        #: a non-conservative force: the forced Legendre maps (:meth:`discrete_forces`), general Newton
        self.forced = getattr(system, "has_force", False)
        self.fast = (system.constant_metric and not self.custom and not self.group_dependent and system.n > 0
                     and not self.forced)
        self.sign = 1.0 if system.left else -1.0
        if system.constant_metric:
            G = np.asarray(system.metric_matrix)
            n = self.n
            Gxx, Gxg, Ggg = G[:n, :n], G[:n, n:], G[n:, n:]
            K = np.linalg.solve(Gxx, Gxg)
            self.G = jnp.asarray(G)
            self.LG = jnp.asarray(np.linalg.cholesky(G))
            self.Gxg = jnp.asarray(Gxg)
            self.Lxx = jnp.asarray(np.linalg.cholesky(Gxx))
            self.S = jnp.asarray(Ggg - Gxg.T @ K)
            self.K = jnp.asarray(K)

    # --- metric pieces -------------------------------------------------------------------------
    def chol(self, x, R):
        return self.LG if self.system.constant_metric else linalg.cholesky(self.system.metric(x, R))

    def gram(self, x, R):
        """(μ̃ (m, n+3), G̃⁻¹μ̃ᵀ (n+3, m), C̃ = μ̃G̃⁻¹μ̃ᵀ (m, m)) at (x, R), by solves."""
        mu = self.system.constraint_matrix(x, R)
        Z = linalg.cho_solve(self.chol(x, R), mu.T)
        return mu, Z, linalg.mm(mu, Z)

    def reflection_coefficient(self, x, R, p):
        """s = C̃⁻¹(μ̃G̃⁻¹p − ν̃) (m,) and μ̃ (m, n+3): (P−Q)*p + 2μ̃ᵀC̃⁻¹ν̃ = p − 2μ̃ᵀs."""
        mu, Z, C = self.gram(x, R)
        s = linalg.solve_spd(C, linalg.vm(p, Z) - self.system.constraint_rhs(x, R))
        return s, mu

    def reflect(self, x, R, p):
        s, mu = self.reflection_coefficient(x, R, p)
        return p - 2.0 * linalg.vm(s, mu)

    def velocity(self, x, R, p):
        return linalg.cho_solve(self.chol(x, R), p)

    # --- Legendre maps -------------------------------------------------------------------------
    def group_minus(self, sigma, d_sigma):
        """g*-part of FL⁻: (dτ⁻¹_{±σ})ᵀ D_σ l_d (+ left, − right)."""
        return linalg.vm(d_sigma, self.tau.dtau_inv(self.sign * sigma))

    def group_plus(self, sigma, d_sigma):
        """g*-part of FL⁺: (dτ⁻¹_{∓σ})ᵀ D_σ l_d."""
        return linalg.vm(d_sigma, self.tau.dtau_inv(-self.sign * sigma))

    def fl_minus(self, x0, x1, R0, xi, h):
        d1, ds = jax.grad(self.l_d, argnums=(0, 3))(x0, x1, R0, h * xi, h)
        g = self.group_minus(h * xi, ds)
        if self.group_dependent:
            g = g - self.system.group.left_gradient(lambda S: self.l_d(x0, x1, S, h * xi, h), R0)
        return jnp.concatenate([-d1, g])

    def fl_plus(self, x0, x1, R0, xi, h):
        d2, ds = jax.grad(self.l_d, argnums=(1, 3))(x0, x1, R0, h * xi, h)
        return jnp.concatenate([d2, self.group_plus(h * xi, ds)])

    def discrete_forces(self, x0, x1, R0, xi, h):
        """(f_d⁻, f_d⁺), each (n+3,): the discrete forces of the forced discrete Lagrange–d'Alembert
        principle (Marsden–West, Acta Numerica 2001, §3.2), trivialised on the group as the
        Legendre maps are (f_d⁻ at R_k, f_d⁺ at R_{k+1}): the trapezoidal rule of the SV-type l_d,
        f_d⁻ = (h/2) F(x_k, R_k, Δx/h, ξ_k, t_k), f_d⁺ = (h/2) F(x_{k+1}, R_{k+1}, Δx/h, ξ_k, t_{k+1}),
        F = (f_x, τ) the system's force. Self-adjoint: the reversed step (x_{k+1} → x_k with −h, the
        same ξ since τ(−σ) = τ(σ)⁻¹) has f_d⁻ = −f_d⁺ of the forward one, so the symmetric
        compositions keep their orders."""
        sys = self.system
        v = (x1 - x0) / h
        R1 = self.reconstruct(R0, xi, h)
        return 0.5 * h * sys.force(x0, R0, v, xi, 0.0), 0.5 * h * sys.force(x1, R1, v, xi, h)

    def forced_fl_minus(self, x0, x1, R0, xi, h):
        """FL⁻ − f_d⁻ (the momentum p_k of the forced step; FL⁻ without a force)."""
        out = self.fl_minus(x0, x1, R0, xi, h)
        return out - self.discrete_forces(x0, x1, R0, xi, h)[0] if self.forced else out

    def forced_fl_plus(self, x0, x1, R0, xi, h):
        """FL⁺ + f_d⁺ (the momentum p_{k+1} of the forced step; FL⁺ without a force)."""
        out = self.fl_plus(x0, x1, R0, xi, h)
        return out + self.discrete_forces(x0, x1, R0, xi, h)[1] if self.forced else out

    def reconstruct(self, R, xi, h):
        W = self.tau.tau(h * xi)
        return R @ W if self.system.left else W @ R

    # --- the implicit solve: FL⁻(x_k, x_{k+1}, hξ) = target ---------------------------------------
    def solve_group(self, a, tg, h, rtol, max_iter):
        """Constant metric, default l_d: ξ with (dτ⁻¹_{±hξ})ᵀ D_σ l_d = tg, where the x-momentum
        a = G̃_xx Δx/h + G̃_xg ξ is given, so Δx/h = w − Kξ (w = G̃_xx⁻¹a, K = G̃_xx⁻¹G̃_xg) and
        D_σ l_d = b + Sξ (b = G̃_gx w). Newton in ξ (3 unknowns) from ξ = S⁻¹(tg − b).

        Returns (ξ, w, b, converged, iterations)."""
        w = linalg.cho_solve(self.Lxx, a)
        b = linalg.vm(w, self.Gxg)

        def F(xi):
            return self.group_minus(h * xi, b + linalg.mv(self.S, xi)) - tg

        res = newton(F, linalg.solve_spd(self.S, tg - b), rtol=rtol, max_iter=max_iter)
        return res.x, w, b, res.converged, res.iterations

    def fast_map(self, x, target, xi, h):
        """Constant metric, default l_d: the step from x_k with FL⁻'s x-part equal to
        ``target[:n]`` and group velocity ξ — (x_{k+1}, FL⁺_{k+1} (n+3,), the residual of FL⁻'s
        g*-part against ``target[n:]`` (3,)); Δx/h = G̃_xx⁻¹a − Kξ, a = target_x − (h/2)V_x(x_k), and
        D_σ l_d = b + Sξ, b = G̃_gx G̃_xx⁻¹a (see :meth:`solve_group`)."""
        sys = self.system
        n = self.n
        a = target[:n] - 0.5 * h * sys.potential_gradient(x)
        w = linalg.cho_solve(self.Lxx, a)
        mom = linalg.vm(w, self.Gxg) + linalg.mv(self.S, xi)
        x1 = x + h * (w - linalg.mv(self.K, xi))
        p1 = jnp.concatenate([a - 0.5 * h * sys.potential_gradient(x1), self.group_plus(h * xi, mom)])
        return x1, p1, self.group_minus(h * xi, mom) - target[n:]

    def solve_fast(self, x, target, h, rtol, max_iter):
        """Constant metric, default l_d: (x_{k+1}, ξ_k, FL⁺_{k+1}, converged, iterations)."""
        n = self.n
        a = target[:n] - 0.5 * h * self.system.potential_gradient(x)
        xi, _, _, conv, it = self.solve_group(a, target[n:], h, rtol, max_iter)
        x1, p1, _ = self.fast_map(x, target, xi, h)
        return x1, xi, p1, conv, it

    def solve_general(self, x, R, target, h, rtol, max_iter):
        """Any metric or l_d: Newton in z = (x_{k+1}, ξ_k) from the explicit predictor."""
        n = self.n
        u = self.velocity(x, R, target)
        z0 = jnp.concatenate([x + h * u[:n], u[n:]])

        def F(z):
            return self.forced_fl_minus(x, z[:n], R, z[n:], h) - target

        res = newton(F, z0, rtol=rtol, max_iter=max_iter)
        x1, xi = res.x[:n], res.x[n:]
        return x1, xi, self.forced_fl_plus(x, x1, R, xi, h), res.converged, res.iterations

    def solve(self, x, R, target, h, rtol, max_iter):
        if self.fast:
            return self.solve_fast(x, target, h, rtol, max_iter)
        return self.solve_general(x, R, target, h, rtol, max_iter)

    # --- start-up ------------------------------------------------------------------------------
    def initial_momentum(self, startup, extra, x0, R0, xdot0, xi0, h):
        sys = self.system
        p0 = sys.momentum(x0, xdot0, xi0, R0)
        if startup == "legendre":
            return p0
        if startup == "consistent":
            lam = sys.multiplier(x0, R0, xdot0, xi0)
            return p0 - 0.5 * h * linalg.vm(lam, sys.constraint_matrix(x0, R0))
        x1, xi_0 = (x0 + h * xdot0, xi0) if startup == "two-point" else extra
        flm = self.forced_fl_minus(x0, x1, R0, xi_0, h)
        # FL⁺_0 = (P − Q)*(FL⁻_0 − 2μ̃ᵀC̃⁻¹ν̃): the reflection is an involution, so step 1 maps it
        # back to FL⁻_0 and reproduces (x_1, ξ_0)
        mu, Z, C = self.gram(x0, R0)
        q = flm - 2.0 * linalg.vm(linalg.solve_spd(C, sys.constraint_rhs(x0, R0)), mu)
        return q - 2.0 * linalg.vm(linalg.solve_spd(C, linalg.vm(q, Z)), mu)


@dataclass(frozen=True, eq=False)
class ReducedGNI(Method):
    """The reduced GNI (module doc) for a :class:`~dalembert.systems.reduced.ReducedSystem`.

    Build options: ``startup`` ("legendre" | "consistent" | "two-point" |
    ("second-point", x1, xi0)), ``retraction`` ("cayley" | "exponential"),
    ``discrete_lagrangian`` (None: the SV/midpoint l_d; or a callable l_d(x0, x1, sigma, h), or
    l_d(x0, x1, R0, sigma, h) for a system whose metric or potential depends on R),
    ``rtol``, ``max_iter`` (Newton).
    """

    def build(self, system, x0=None, *, startup="consistent", retraction="cayley",
              discrete_lagrangian=None, rtol: float = RTOL, max_iter: int = MAX_ITER) -> Scheme:
        mode, extra = _parse_startup(startup, system.n, getattr(system, "group_dim", 3))
        if discrete_lagrangian is not None and not callable(discrete_lagrangian):
            raise InputError(f"discrete_lagrangian must be a callable l_d(x0, x1, sigma, h); got {discrete_lagrangian!r}")
        k = _Kernels(system, retraction, discrete_lagrangian)
        n = system.n

        def init(x0, R0, xdot0, xi0, h):
            x0, R0, xdot0, xi0 = (jnp.asarray(a, jnp.float64) for a in (x0, R0, xdot0, xi0))
            return ReducedGNIState(x0, R0, k.initial_momentum(mode, extra, x0, R0, xdot0, xi0, h))

        def step(state, h):
            x, R, p = state
            target = k.reflect(x, R, p)
            x1, xi, p1, conv, it = k.solve(x, R, target, h, rtol, max_iter)
            return ReducedGNIState(x1, k.reconstruct(R, xi, h), p1), StepInfo(conv, it)

        def observe(state, h):
            x, R, p = state
            s, mu = k.reflection_coefficient(x, R, p)
            pbar = p - linalg.vm(s, mu)
            u = k.velocity(x, R, pbar)
            return {"x": x, "R": R, "xdot": u[:n], "xi": u[n:], "momentum": pbar, "lam": -(2.0 / h) * s}

        return Scheme(init, step, observe)


class ReducedMultiplierState(NamedTuple):
    """x: (n,) x_k;  R: (d, d) R_k;  p: (n+d,) the momentum p_k on D* (μ̃G̃⁻¹p_k = ν̃);
    lam: (m,) the multiplier of the last step (reported, and the next Newton guess)."""

    x: Any
    R: Any
    p: Any
    lam: Any


@dataclass(frozen=True, eq=False)
class SymmetricReducedGNI(Method):
    """The reduced GNI's retracted discrete Lagrangian with one constraint impulse per step: a
    self-adjoint map of (x_k, R_k, p_k) on D* = {μ̃(x, R)G̃⁻¹p = ν̃(x, R)}, the base of
    ``reduced-gni-4``.

    The two-step form (:class:`ReducedGNI`) steps (x_k, R_k, FL⁺_k) by the reflection (P − Q)*
    and then FL⁻ = target; its adjoint is "map, then reflection", so its compositions stay of
    order 2. Here the momentum equation of Definition 7.1 ((30), (38); Ferraro, Jiménez, Martín
    de Diego 2015) has the impulse ℓ ∈ R^m of a step split equally between its two nodes, as in
    :mod:`~dalembert.methods.gni_symmetric` (our construction):

        FL⁻(x_k, x_{k+1}, hξ_k) = p_k − μ̃(x_k, R_k)ᵀ ℓ
        p_{k+1} = FL⁺(x_k, x_{k+1}, hξ_k) − μ̃(x_{k+1}, R_{k+1})ᵀ ℓ,   R_{k+1} = R_k τ(hξ_k) (left)
        μ̃(x_{k+1}, R_{k+1}) G̃⁻¹ p_{k+1} = ν̃(x_{k+1}, R_{k+1})       unknowns x_{k+1}, ξ_k, ℓ

    **Self-adjoint.** The default l_d is symmetric, l_d(x1, x0, −σ, −h) = −l_d(x0, x1, σ, h), and
    the retractions satisfy τ(−σ) = τ(σ)⁻¹, so FL⁻ of the reversed step is FL⁺ of the forward one
    and stepping back from (x_{k+1}, R_{k+1}, p_{k+1}) with −h gives the same equations with
    ℓ → −ℓ. Hence order 2, and the symmetric compositions reach 4, 6 and 8.

    Newton on z = (x_{k+1}, ξ_k, ℓ), n + d + m unknowns (d = dim G), from the last step's
    multiplier: ℓ₀ = −(h/2)λ, (Δx/h, ξ) = G̃⁻¹(p_k − μ̃ᵀℓ₀); with a constant metric and the
    default l_d (``fast_path``, the default), x_{k+1} is linear in (ξ, ℓ) and the Newton unknowns
    are (ξ_k, ℓ), d + m of them, with FL∓ in closed form.

    Reported at the nodes: x (n,), R; xdot (n,), xi (d,) = G̃⁻¹p_k (μ̃u = ν̃ to round-off);
    momentum = p_k; lam = −(2/h)ℓ of the step that ended at t_k (O(h²) approximation of
    λ(t_k − h/2); at t_0 the exact λ).

    Build options: ``retraction`` ("cayley" | "exponential"), ``discrete_lagrangian`` (as
    :class:`ReducedGNI`; it must be symmetric for the map to be self-adjoint), ``fast_path``
    (default True; False: the general Newton), ``rtol``, ``max_iter`` (Newton).
    """

    def build(self, system, x0=None, *, retraction="cayley", discrete_lagrangian=None,
              fast_path: bool = True, rtol: float = RTOL, max_iter: int = MAX_ITER) -> Scheme:
        if discrete_lagrangian is not None and not callable(discrete_lagrangian):
            raise InputError(f"discrete_lagrangian must be a callable l_d(x0, x1, sigma, h); got {discrete_lagrangian!r}")
        k = _Kernels(system, retraction, discrete_lagrangian)
        n = system.n
        d = getattr(system, "group_dim", 3)

        def init(x0, R0, xdot0, xi0, h=None):
            x0, R0, xdot0, xi0 = (jnp.asarray(a, jnp.float64) for a in (x0, R0, xdot0, xi0))
            return ReducedMultiplierState(x0, R0, system.momentum(x0, xdot0, xi0, R0),
                                          system.multiplier(x0, R0, xdot0, xi0))

        def constraint(x1, R1, p1):
            return linalg.mv(system.constraint_matrix(x1, R1), k.velocity(x1, R1, p1)) - system.constraint_rhs(x1, R1)

        def general(x, R, p, mu0, ell0, h):
            """Newton on z = (x_{k+1}, ξ_k, ℓ); FL∓ by autodiff of l_d."""
            def advance(z):
                x1, xi, ell = z[:n], z[n:n + d], z[n + d:]
                R1 = k.reconstruct(R, xi, h)
                return x1, R1, k.forced_fl_plus(x, x1, R, xi, h) - linalg.vm(ell, system.constraint_matrix(x1, R1))

            def F(z):
                return jnp.concatenate([k.forced_fl_minus(x, z[:n], R, z[n:n + d], h) - p + linalg.vm(z[n + d:], mu0),
                                        constraint(*advance(z))])

            u = k.velocity(x, R, p - linalg.vm(ell0, mu0))
            res = newton(F, jnp.concatenate([x + h * u[:n], u[n:], ell0]), rtol=rtol, max_iter=max_iter)
            return advance(res.x), res.x[n + d:], res

        def fast(x, R, p, mu0, ell0, h):
            """Constant metric, default l_d (as ReducedGNI's fast path): for a given ℓ the x-part
            of FL⁻ = p_k − μ̃ᵀℓ is linear in ξ (:meth:`_Kernels.fast_map`); Newton on (ξ, ℓ),
            d + m unknowns, in closed form."""
            def advance(z):
                xi, ell = z[:d], z[d:]
                x1, p1, group_residual = k.fast_map(x, p - linalg.vm(ell, mu0), xi, h)
                R1 = k.reconstruct(R, xi, h)
                return (x1, R1, p1 - linalg.vm(ell, system.constraint_matrix(x1, R1))), group_residual

            def F(z):
                (x1, R1, p1), group_residual = advance(z)
                return jnp.concatenate([group_residual, constraint(x1, R1, p1)])

            u = k.velocity(x, R, p - linalg.vm(ell0, mu0))
            res = newton(F, jnp.concatenate([u[n:], ell0]), rtol=rtol, max_iter=max_iter)
            return advance(res.x)[0], res.x[d:], res

        solve = fast if (k.fast and fast_path) else general

        def step(state, h):
            x, R, p, lam = state
            (x1, R1, p1), ell, res = solve(x, R, p, system.constraint_matrix(x, R), -0.5 * h * lam, h)
            return ReducedMultiplierState(x1, R1, p1, -(2.0 / h) * ell), StepInfo.of(res)

        def observe(state, h=None):
            x, R, p, lam = state
            u = k.velocity(x, R, p)
            return {"x": x, "R": R, "xdot": u[:n], "xi": u[n:], "momentum": p, "lam": lam}

        return Scheme(init, step, observe)


#: every feature of a ReducedSystem: the reduced GNI takes any metric, potential, trivialization and
#: matrix Lie group, and affine constraints (38)
REDUCED_FEATURES = frozenset({Feature.AFFINE_CONSTRAINTS, Feature.CONFIGURATION_METRIC, Feature.ATTITUDE_POTENTIAL,
                              Feature.RIGHT_TRIVIALISED, Feature.GROUP_NOT_SO3})
#: reduced-gni and reduced-gni-sym take a force too (the forced Legendre maps; general Newton), and
#: its control (u_k held over step k, read on the engine's clock)
FORCED_FEATURES = REDUCED_FEATURES | {Feature.FORCES, Feature.CONTROLS}


def _traits(source, extra=(), accepts=REDUCED_FEATURES):
    return Traits(
        order=2, symmetric=True, implicit=True,
        preserves=(Claim(Invariant.NODE_CONSTRAINT, "averaged-momentum constraint μ̃G̃⁻¹p̄_k = ν̃ (affine) exactly"),
                   Claim(Invariant.GROUP_MEMBERSHIP, "R_k ∈ SO(3) to round-off")) + tuple(extra),
        node_velocity="G̃⁻¹p̄_k, p̄_k = ½(FL⁺_k + FL⁻_k) = P*FL⁺_k + Q*Π (averaged momentum), second "
                      "order with the default start-up (the paper's startup='two-point' caps the observed "
                      "order at 1: erratum E15)",
        source=source, family="reduced-gni", integrates=("reduced",), two_step=True, accepts=accepts,
        explicit_when="")


METHODS = (
    ReducedGNI(
        name="reduced-gni",
        traits=_traits(f"{_PUB}, Definition 7.1 (30) and affine (38) with erratum E6; retracted "
                       "Legendre maps §7.1 (Lemma 9.5, erratum E11); reconstruction Remark 7.2 (erratum E12); "
                       "SV-type l_d of §7.2 (errata: docs/theory/ferraro2015.md); forces: forced discrete "
                       "Legendre maps FL⁻ − f_d⁻, FL⁺ + f_d⁺ (Marsden–West 2001 §3.2, trapezoidal f_d^±)",
                       accepts=FORCED_FEATURES),
        description="Reduced GNI on R^n × SO(3) with a retraction (Cayley default): reflect FL⁺ with "
                    "(P−Q)* (+2Q*Π), solve FL⁻ = target for (x_{k+1}, ξ_k), reconstruct R."),
    SymmetricReducedGNI(
        name="reduced-gni-sym",
        traits=Traits(
            order=2, symmetric=True, implicit=True,
            preserves=(Claim(Invariant.NODE_CONSTRAINT, "node constraint μ̃G̃⁻¹p_k = ν̃ (affine) to round-off"),
                       Claim(Invariant.GROUP_MEMBERSHIP, "R_k ∈ SO(3) to round-off")),
            node_velocity="G̃⁻¹p_k, p_k on D* (the node's momentum)",
            source=f"{_PUB}, Definition 7.1 (30)/(38) with one impulse per step split equally between "
                   "the nodes (our construction); retracted Legendre maps §7.1; SV-type l_d of §7.2; "
                   "forces: forced discrete Legendre maps (Marsden–West 2001 §3.2, trapezoidal f_d^±)",
            family="reduced-gni-symmetric", integrates=("reduced",), accepts=FORCED_FEATURES),
        description="Reduced GNI with one impulse per step: a self-adjoint map on D*, the base of "
                    "reduced-gni-4; any trivialization, Newton on (x_{k+1}, ξ_k, ℓ)."),
)
