"""Energy-preserving discrete-gradient (DG) integrators on the almost-Poisson form.

Source: Celledoni, Farré Puiggalí, Høiseth, Martín de Diego, "Energy-preserving integrators
applied to nonholonomic systems" (2019), §3.1–§3.2. For ẋ = Π(x)∇H(x) with Π skew, the scheme (14)
with Π̃ = Π(x̄), x̄ = (x + x')/2,

    x' = x + h Π(x̄) ∇̄H(x, x')                                                    (14)

conserves H exactly for any discrete gradient ∇̄H (Definition 3.1: ∇̄H(x, x')ᵀ(x' − x) =
H(x') − H(x) and ∇̄H(x, x) = ∇H(x)), and is time-symmetric, hence of order 2, when ∇̄H is
symmetric. On the reduced form of a nonholonomic system (ζ = (q, ρ)), the q-rows give the
discrete constraint μ(q̄)(q' − q) = 0 exactly (Remark 3.3) and the node velocity
v = X g_D⁻¹ ρ satisfies μ(q) v = 0 identically.

Discrete gradients (§3.1 of the paper): :func:`avf` (11) by Gauss–Legendre quadrature, :func:`gonzalez`
(12), :func:`itoh_abe` (13) and the symmetrised :func:`itoh_abe_symmetric` (ours, not in the paper;
docs/theory/celledoni2019.md).

Registered methods: ``dg-avf``, ``dg-gonzalez``, ``dg-itoh-abe``, ``dg-itoh-abe-sym``,
``implicit-midpoint``. They integrate an :class:`~dalembert.systems.almost_poisson.AlmostPoissonSystem`
(initial state ``x0``); a :class:`~dalembert.NonholonomicSystem` (initial state ``q0, v0``)
reaches them through the registered view :func:`~dalembert.systems.reduction.almost_poisson`
(a global basis, or an atlas of charts whose anchor the state carries), which the engine applies.
Reported at the nodes: ``x`` (the almost-Poisson state; on an atlas, in the current chart) and,
for a reduced system, ``q`` and ``v = X g_D⁻¹ ρ`` (16a) (plus ``p = G v`` for a
NonholonomicSystem; on an atlas also ``basis_conditioning``, ``chart_switches`` and
``last_chart_switch``, see :class:`DiscreteGradientMethod`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .. import linalg
from ..declarations import Claim, Feature, Invariant
from ..errors import InputError
from ..solvers import newton_module as newton_mod
from ..solvers.newton import MAX_ITER, RTOL, newton
from ..systems.almost_poisson import DEGENERACY_TOL, AlmostPoissonSystem
from ..systems.reduction import NonholonomicReduction
from .discrete_constraints import midpoint_constraint
from .base import Method, Scheme, StepInfo, Traits

#: the node array of the discrete work (the engine's name, :data:`dalembert.engine.forcing.WORK`)
WORK = "work"

#: Default number of Gauss–Legendre nodes of the AVF discrete gradient (our measurement, the paper does
#: not say how it evaluates (11): 5 nodes give 3e-15 on the chaotic system at h = 0.1; 8 leaves a
#: margin; docs/theory/celledoni2019.md).
AVF_NODES = 8

_SOURCE = "Celledoni, Farré Puiggalí, Høiseth, Martín de Diego 2019"

#: The Gonzalez correction is left out where its numerator is below this many ε of the energies
#: (see :func:`gonzalez`; ours).
GONZALEZ_NOISE = 8.0


# ---------------------------------------------------------------------------------------------
# discrete gradients: each returns dg(x, y) -> (N,)
# ---------------------------------------------------------------------------------------------

def avf(H, nodes: int = AVF_NODES):
    """Average-vector-field DG  ∇̄H(x, y) = ∫₀¹ ∇H((1 − ξ)x + ξy) dξ  (Celledoni et al. 2019, eq. (11)).

    Parameters
    ----------
    H : callable (N,) -> scalar, traceable.
    nodes : number of Gauss–Legendre nodes on [0, 1] (exact for polynomial H of degree
        ≤ 2·nodes; for other H, (10a) holds to the quadrature error).

    Returns
    -------
    dg(x (N,), y (N,)) -> (N,), symmetric in (x, y).
    """
    if int(nodes) < 1:
        raise InputError(f"avf: nodes must be ≥ 1; got {nodes}")
    gx, gw = np.polynomial.legendre.leggauss(int(nodes))
    xi = jnp.asarray(0.5 * (gx + 1.0))
    wts = jnp.asarray(0.5 * gw)
    grad = jax.grad(H)

    def dg(x, y):
        pts = x[None, :] + xi[:, None] * (y - x)[None, :]
        return jnp.sum(wts[:, None] * jax.vmap(grad)(pts), axis=0)
    return dg


def gonzalez(H, grad=None):
    """Gonzalez (midpoint) DG  (Celledoni et al. 2019, eq. (12)):

    ∇̄H(x, y) = ∇H(x̄) + [H(y) − H(x) − ∇H(x̄)ᵀΔ] Δ / |Δ|²,  Δ = y − x, x̄ = (x + y)/2,
    and ∇H(x̄) when Δ = 0. Symmetric; |·| is the Euclidean norm of the whole state.

    The correction is also left out where its numerator is at the round-off of H,
    |H(y) − H(x) − ∇H(x̄)ᵀΔ| ≤ :data:`GONZALEZ_NOISE` · ε (|H(x)| + |H(y)| + |∇H(x̄)ᵀΔ|) (ours): (10a)
    then holds to that round-off without it, and the quotient would only amplify the noise by
    1/|Δ| — which stalled Newton on a damped system coming to rest (|Δ| ~ 1e-8 at H ~ 0.03: a
    correction of noise 0.1·|Δ| per component).

    grad : optional callable x -> (N,) used as the base vector instead of ∇H (autodiff). (10a)
        holds for any base vector; only consistency (10b) needs it close to ∇H (Remark 3.5).

    Returns dg(x (N,), y (N,)) -> (N,).
    """
    grad = jax.grad(H) if grad is None else grad

    eps = float(np.finfo(np.float64).eps)

    def dg(x, y):
        d = y - x
        g = grad(0.5 * (x + y))
        d2 = jnp.sum(d * d)
        Hx, Hy, gd = H(x), H(y), jnp.sum(g * d)
        num = Hy - Hx - gd
        noise = GONZALEZ_NOISE * eps * (jnp.abs(Hx) + jnp.abs(Hy) + jnp.abs(gd))
        ok = (d2 > 0.0) & (jnp.abs(num) > noise)
        safe = jnp.where(ok, d2, 1.0)
        return g + jnp.where(ok, num / safe, 0.0) * d
    return dg


def itoh_abe(H, *, small: float = 1e-2, nodes: int = 4):
    """Itoh–Abe coordinate-increment DG (Celledoni et al. 2019, eq. (13), last index N: erratum E5,
    docs/theory/celledoni2019.md#e5):

    ∇̄H(x, y)_i = [H(y_1..y_i, x_{i+1}..x_N) − H(y_1..y_{i−1}, x_i..x_N)] / (y_i − x_i).

    Where |y_i − x_i| ≤ small · max(1, |x_i|, |y_i|) the quotient (which loses digits to
    cancellation, ε|H|/|Δ_i|) is replaced by the same quantity written as an integral,
    ∫₀¹ ∂_iH(z + s Δ_i e_i) ds, evaluated by ``nodes``-point Gauss–Legendre quadrature (error
    O(Δ_i^{2·nodes}); exact for polynomial H of degree ≤ 2·nodes). Both branches satisfy (10a) to
    round-off and (10b) exactly. Not symmetric: the scheme (14) with it is first order.

    Returns dg(x (N,), y (N,)) -> (N,).
    """
    gx, gw = np.polynomial.legendre.leggauss(int(nodes))
    xi = jnp.asarray(0.5 * (gx + 1.0))
    wts = jnp.asarray(0.5 * gw)

    def dg(x, y):
        N = x.shape[0]
        idx = jnp.arange(N)
        out = []
        z = x
        Hz = H(z)
        for i in range(N):
            z_next = jnp.where(idx == i, y, z)
            H_next = H(z_next)
            d = y[i] - x[i]
            tiny = jnp.abs(d) <= small * jnp.maximum(1.0, jnp.maximum(jnp.abs(x[i]), jnp.abs(y[i])))
            quot = (H_next - Hz) / jnp.where(tiny, 1.0, d)
            e = (idx == i).astype(x.dtype)
            zi = z
            dphi = jax.grad(lambda s_, zi=zi, e=e: H(zi + s_ * e))
            integral = jnp.sum(wts * jax.vmap(dphi)(xi * d))
            out.append(jnp.where(tiny, integral, quot))
            z, Hz = z_next, H_next
        return jnp.stack(out)
    return dg


def itoh_abe_symmetric(H, **kw):
    """Symmetrised Itoh–Abe DG ½[∇̄₃H(x, y) + ∇̄₃H(y, x)] (ours, not in the paper;
    docs/theory/celledoni2019.md): symmetric, so (14)
    with it is of order 2. Returns dg(x, y) -> (N,)."""
    ia = itoh_abe(H, **kw)

    def dg(x, y):
        return 0.5 * (ia(x, y) + ia(y, x))
    return dg


def midpoint_gradient(H):
    """∇H(x̄): not a discrete gradient in general; with Π(x̄) it gives the implicit midpoint rule
    (which coincides with the DG methods when H is quadratic, Remark 3.2)."""
    grad = jax.grad(H)
    return lambda x, y: grad(0.5 * (x + y))


_KINDS = {"avf": avf, "gonzalez": gonzalez, "itoh-abe": itoh_abe,
          "itoh-abe-sym": itoh_abe_symmetric, "midpoint": midpoint_gradient}


def discrete_gradient(kind: str, H, **options):
    """The discrete gradient ``kind`` ∈ {avf, gonzalez, itoh-abe, itoh-abe-sym, midpoint} of H.

    ``options``: ``nodes`` for avf. Raises InputError for an unknown kind.
    """
    if kind not in _KINDS:
        raise InputError(f"unknown discrete gradient {kind!r}; choose from: {', '.join(_KINDS)}")
    return _KINDS[kind](H, **options)


# ---------------------------------------------------------------------------------------------
# the integrators
# ---------------------------------------------------------------------------------------------

def dg_step_fn(ap: AlmostPoissonSystem, dg, *, rtol: float = RTOL, max_iter: int = MAX_ITER,
               jacobian: str = "exact", newton_update: str = "simplified", autodiff: str = "rev"):
    """step(x (N,), h) -> (x' (N,), StepInfo): one step of (14) with Π̃ = Π(x̄), by Newton
    (explicit-Euler predictor; our choice, the paper does not specify its solver:
    docs/theory/celledoni2019.md). A chart that degenerates at x̄ or x' (see
    :class:`AlmostPoissonSystem`) marks the step as failed (cause CHART).

    With a dissipation R or a force F (``ap.has_force``), the step is McLachlan, Quispel &
    Robidoux's (1999, §2) discrete-gradient method for ẋ = (Π − R)∇H + F:

        x' = x + h (Π(x̄) − R(x̄)) ∇̄H(x, x') + h F̄,   F̄ = F(x̄, t_k + h/2, u_k; ∇̄H),

    (the reduced force of a nonholonomic system takes its velocity as X(q̄)∇̄_ρH), so that by
    (10a) H(x') − H(x) = −h ∇̄HᵀR∇̄H + h ∇̄HᵀF̄ — exactly, up to ∇̄Hᵀ times the Newton residual:
    the dissipation can only remove energy. ``step.with_work(x, h) -> (x', StepInfo, w)`` also
    returns that discrete work w = h∇̄Hᵀ(−R∇̄H + F̄) (0 unforced). The "frozen" Jacobian adds
    −(h/2)(−R∇²H + ∂F/∂x) at x; "midpoint" uses the whole vector field.

    The Newton test is componentwise and accepts an update at the round-off of the residual's
    terms, ROUNDOFF · ε · max(|x_i|, |x'_i|, h (|Π̃| |∇̄H|)_i) (:func:`~dalembert.solvers.newton.newton`),
    so large states (chaotic quartic with n = 80, |x| ≈ 50) converge at round-off, and a large
    coordinate (a heading of many turns) does not loosen the test of the momenta.

    jacobian : "exact" (autodiff of the residual) or "midpoint" (the Jacobian of the implicit
        midpoint residual y − x − hΠ(x̄)∇H(x̄), which differs by O(h); Newton then converges
        linearly at rate O(h), to the same solution, and compiles much faster for DGs with
        many unrolled evaluations of H such as Itoh–Abe), or "frozen": I − (h/2) Π(x) ∇²H(x),
        the midpoint Jacobian without the derivative of Π, at the step's start (Newton then
        contracts by O(h) per iteration, to the same solution; Π(x) is evaluated once, for the
        predictor and the Jacobian). For the automatic reduction, whose Π holds the
        basis' derivatives, this removes the second derivatives of the basis from the step
        (faster steps and compiles despite more iterations: docs/benchmarks.md, "Measurements
        behind the code").
    newton_update : "simplified" (default: the Jacobian at the predictor, evaluated and factored
        once per step and reused by every iteration — the predictor is O(h²) from the root, so
        the iteration contracts by O(h³) per step for the exact Jacobian) or "full" (a new
        Jacobian and factorisation in every iteration). Both stop on the same test and give the
        same solution to the Newton tolerance. On the 13-dimensional chaotic-quartic form the
        autodiff Jacobian and its factorisation are nearly all of a full-Newton step, so
        "simplified" is several times faster (docs/benchmarks.md, "Measurements behind the code").
    autodiff : "rev" (default) or "fwd": the mode of the exact Jacobian (N outputs, N inputs);
        reverse mode was never slower (docs/benchmarks.md, "Measurements behind the code").
    """
    if jacobian not in ("exact", "midpoint", "frozen"):
        raise InputError(f"jacobian must be 'exact', 'midpoint' or 'frozen'; got {jacobian!r}")
    if newton_update not in ("simplified", "full"):
        raise InputError(f"newton_update must be 'simplified' or 'full'; got {newton_update!r}")
    forced = getattr(ap, "has_force", False)
    external = forced and ap.has_external_force

    def step(x, h):
        y, info, _ = step_with_work(x, h)
        return y, info

    def increment(x, y, h):
        """h((Π − R)(x̄)∇̄H + F̄), the terms' magnitudes for the Newton test, and h∇̄Hᵀ(−R∇̄H + F̄)."""
        xm, g = 0.5 * (x + y), dg(x, y)
        P = ap.structure_matrix(xm) if forced else ap.poisson_matrix(xm)
        dx = linalg.mv(P, g)
        terms = linalg.mv(jnp.abs(P), jnp.abs(g))
        if not forced:
            return h * dx, h * terms, jnp.zeros((), jnp.float64)
        power = jnp.zeros((), jnp.float64)
        if ap.has_dissipation:
            power = -jnp.sum(g * linalg.mv(ap.dissipation(xm), g))
        if external:
            Fbar = ap.force_field(xm, 0.5 * h, g)      # (x̄, t_k + h/2, u_k), ∇̄H for the velocity
            dx, terms = dx + Fbar, terms + jnp.abs(Fbar)
            power = power + jnp.sum(g * Fbar)
        return h * dx, h * terms, h * power

    def step_with_work(x, h):
        def F_scaled(y):
            dx, terms, _ = increment(x, y, h)
            return y - x - dx, jnp.maximum(jnp.maximum(jnp.abs(x), jnp.abs(y)), terms)

        def F(y):
            return F_scaled(y)[0]

        if jacobian == "frozen":   # Π(x) once, for the predictor and the Jacobian
            P0 = ap.structure_matrix(x) if forced else ap.poisson_matrix(x)
            g0 = jax.grad(ap.hamiltonian)(x)
            J0 = jnp.eye(x.shape[0]) - 0.5 * h * linalg.mm(P0, jax.hessian(ap.hamiltonian)(x))
            v0 = linalg.mv(P0, g0)
            if external:            # the force at the step's start and its Jacobian (the gradient's too)
                J0 = J0 - 0.5 * h * jax.jacfwd(lambda z: ap.force_field(z, 0.5 * h))(x)
                v0 = v0 + ap.force_field(x, 0.5 * h, g0)
            y0 = x + h * v0

            def J(y):
                return J0
        else:
            if jacobian == "midpoint":
                J = jax.jacfwd(lambda y: y - x - h * ap.vector_field(0.5 * (x + y)))
            else:
                J = jax.jacrev(F) if autodiff == "rev" else jax.jacfwd(F)
            y0 = x + h * ap.vector_field(x)
        res = newton(F_scaled, y0, jacobian=J, rtol=rtol, max_iter=max_iter,
                     simplified=newton_update == "simplified", has_scale=True)
        y = res.x
        ok, cause = res.converged, res.cause
        if ap._degeneracy is not None:
            chart_ok = (ap.degeneracy(0.5 * (x + y)) > DEGENERACY_TOL) & (ap.degeneracy(y) > DEGENERACY_TOL)
            cause = jnp.where(ok & ~chart_ok, newton_mod.CHART, cause)
            ok = ok & chart_ok
        work = increment(x, y, h)[2] if forced else jnp.zeros((), jnp.float64)
        return y, StepInfo(ok, res.iterations, cause), work
    step.with_work = step_with_work
    return step


class ChartState(NamedTuple):
    """The state of a discrete-gradient method on an atlas (:mod:`dalembert.systems.reduction`):
    x (N,) the reduced state in the chart ``anchor``; steps (int32) taken; switches (int32) of
    chart so far; last_switch (int32) the step index after which the last switch happened (−1);
    work: the discrete work W_k of the dissipation and the force so far (0 unforced)."""

    x: Any
    anchor: Any
    steps: Any
    switches: Any
    last_switch: Any
    work: Any = 0.0


class WorkState(NamedTuple):
    """The state of a discrete-gradient method on a forced system (one chart): x (N,) and the
    discrete work W_k = Σ_j h∇̄Hᵀ(−R∇̄H + F̄) of the steps so far (scalar)."""

    x: Any
    work: Any


def atlas_step_fn(ap, dg_of, **newton_options):
    """step(ChartState, h) -> (ChartState, StepInfo): one step of (14) in the state's chart, then,
    between steps, a switch to the chart anchored at the new configuration when the conditioning
    there is below ``ap.switch_below``: ρ' = X'(q)ᵀ G v, the same (q, v) — so the energy, a
    function of (q, v), is unchanged to round-off. The switch is not part of the one-step map:
    a step that starts right after a switch is the symmetric step (14) of the new chart, but the
    composition across a switch is not time-symmetric (a backward run would switch elsewhere)."""
    def step(state, h):
        chart = ap.in_chart(state.anchor)
        x1, info, w = dg_step_fn(chart, dg_of(chart.hamiltonian), **newton_options).with_work(state.x, h)
        q1 = x1[:ap.n_config]
        switch = chart.degeneracy(x1) < ap.switch_below

        def change(_):
            new = ap.anchor_at(q1)
            return ap.change_chart(x1, state.anchor, new), new

        x1, anchor = lax.cond(switch, change, lambda _: (x1, state.anchor), None)
        k = state.steps
        return ChartState(x1, anchor, k + 1, state.switches + switch.astype(jnp.int32),
                          jnp.where(switch, k, state.last_switch), state.work + w), info
    return step


@dataclass(frozen=True, eq=False)
class DiscreteGradientMethod(Method):
    """Scheme (14) with Π̃ = Π(x̄) and the discrete gradient ``gradient`` (see module doc).

    Build options (``dl.integrate(..., nodes=..., rtol=..., max_iter=..., jacobian=...)``):
    nodes : Gauss–Legendre nodes of the AVF DG (default :data:`AVF_NODES`).
    rtol, max_iter : Newton tolerance and iteration limit.
    jacobian : "exact", "midpoint" or "frozen" (see :func:`dg_step_fn`); default "frozen" for
        the automatic reduction (a :class:`~dalembert.systems.reduction.NonholonomicReduction`,
        whose Π(x) holds the derivatives of the basis: differentiating it again made the
        Jacobian most of the step), "midpoint" for the Itoh–Abe DGs, "exact" otherwise.
    newton_update : "simplified" (default) or "full" (see :func:`dg_step_fn`).

    On a reduced system with an atlas of charts (``ap.atlas``, the automatic reduction of a
    system whose constraint distribution has no global basis it can find) the state is a
    :class:`ChartState` and the chart switches between steps (:func:`atlas_step_fn`); the nodes
    report ``chart_switches`` and ``last_chart_switch`` (the run's metadata lists the switch
    times) and ``basis_conditioning`` (1 at a chart's anchor).
    """

    gradient: str = "gonzalez"

    def build(self, system, x0, *, nodes: int = AVF_NODES, rtol: float = RTOL,
              max_iter: int = MAX_ITER, jacobian: str | None = None,
              newton_update: str = "simplified") -> Scheme:
        ap = system
        opts = {"nodes": nodes} if self.gradient == "avf" else {}

        def dg_of(H):
            return discrete_gradient(self.gradient, H, **opts)

        if jacobian is None:     # see the class doc
            jacobian = ("frozen" if isinstance(ap, NonholonomicReduction)
                        else "midpoint" if self.gradient.startswith("itoh-abe") else "exact")
        newton_options = dict(rtol=rtol, max_iter=max_iter, jacobian=jacobian, newton_update=newton_update)
        dg_of(ap.hamiltonian)                      # unknown DG options fail here, before tracing

        def observe_x(chart, x):
            out = {"x": x}
            if chart.lift is not None:
                q, v = chart.lift(x)
                out["q"], out["v"] = q, v
                if chart.nonholonomic is not None:
                    out["p"] = chart.nonholonomic.momentum(q, v)
            if chart._degeneracy is not None:
                # conditioning of the reduced basis (1 at a chart's anchor; steps fail below
                # DEGENERACY_TOL): kept in Trajectory.extra
                out["basis_conditioning"] = chart.degeneracy(x)
            return out

        forced = getattr(ap, "has_force", False)
        if getattr(ap, "atlas", False):
            def init(x0_, h=None):
                x0_ = jnp.asarray(x0_)
                zero = jnp.array(0, jnp.int32)
                return ChartState(x0_, ap.anchor_at(x0_[:ap.n_config]), zero, zero, jnp.array(-1, jnp.int32),
                                  jnp.zeros((), jnp.float64))

            def observe(state, h=None):
                chart = ap.in_chart(state.anchor)
                out = observe_x(chart, state.x)
                out["energy"] = chart.hamiltonian(state.x)
                out["chart_switches"] = state.switches
                out["last_chart_switch"] = state.last_switch
                if forced:
                    out[WORK] = state.work
                return out

            return Scheme(init, atlas_step_fn(ap, dg_of, **newton_options), observe)

        step = dg_step_fn(ap, dg_of(ap.hamiltonian), **newton_options)
        if forced:               # the state carries the discrete work, reported as the node's "work"
            def init(x0_, h=None):
                return WorkState(jnp.asarray(x0_), jnp.zeros((), jnp.float64))

            def forced_step(state, h):
                x1, info, w = step.with_work(state.x, h)
                return WorkState(x1, state.work + w), info

            def observe(state, h=None):
                out = observe_x(ap, state.x)
                out[WORK] = state.work
                return out
            return Scheme(init, forced_step, observe)

        def init(x0_, h=None):
            return jnp.asarray(x0_)

        return Scheme(init, step, lambda x, h=None: observe_x(ap, x))


def _unforced(system):
    return not getattr(system, "has_force", False)


def _forced(system):
    return getattr(system, "has_force", False)


def _traits(order, symmetric, source, energy=True):
    preserves = ((Claim(Invariant.ENERGY, "energy H (exactly, by the discrete-gradient identity (10a))",
                        condition="systems without dissipation or force", holds_for=_unforced),
                  Claim(Invariant.ENERGY_BALANCE,
                        "energy balance H(x_{k+1}) − H(x_k) = −h∇̄HᵀR∇̄H + h∇̄HᵀF̄ (exactly, by (10a); McLachlan, "
                        "Quispel & Robidoux 1999, §2): traj.work is this discrete work",
                        condition="systems with dissipation or force", holds_for=_forced))
                 if energy else ()) + (
        Claim(Invariant.DISCRETE_CONSTRAINT, "discrete constraint μ(q̄)(q_{k+1} − q_k) = 0 (reduced form, Remark 3.3)",
              discrete_constraint=midpoint_constraint),
        Claim(Invariant.NODE_CONSTRAINT, "node constraint μ(q_k) v_k = 0 (v_k = X g_D⁻¹ ρ_k, reduced form)"))
    return Traits(order=order, symmetric=symmetric, implicit=True, preserves=preserves,
                  node_velocity="v_k = X(q_k) g_D(q_k)⁻¹ ρ_k (16a), from the reduced state ζ_k = (q_k, ρ_k)",
                  source=f"{_SOURCE}, {source}", family="discrete-gradients",
                  integrates=("almost-poisson",),
                  # not EXPLICIT_TIME: the discrete gradient of H(x) has no ∂H/∂t (a V(q, t) or ν(q, t)
                  # of a NonholonomicSystem is refused; a force's time is its own)
                  accepts={Feature.CONFIGURATION_METRIC, Feature.FORCES, Feature.CONTROLS})


def _methods():
    return (
        DiscreteGradientMethod(
            name="dg-avf", gradient="avf",
            traits=_traits(2, True, "(14) with Π(x̄) and the AVF DG (11), Gauss–Legendre quadrature"),
            description="Discrete gradient (14) with the average-vector-field DG; energy-exact, order 2."),
        DiscreteGradientMethod(
            name="dg-gonzalez", gradient="gonzalez",
            traits=_traits(2, True, "(14) with Π(x̄) and the Gonzalez midpoint DG (12)"),
            description="Discrete gradient (14) with Gonzalez's midpoint DG; energy-exact, order 2."),
        DiscreteGradientMethod(
            name="dg-itoh-abe", gradient="itoh-abe",
            traits=_traits(1, False, "(14) with Π(x̄) and the Itoh–Abe DG (13)"),
            description="Discrete gradient (14) with the Itoh–Abe coordinate-increment DG; energy-exact, order 1."),
        DiscreteGradientMethod(
            name="dg-itoh-abe-sym", gradient="itoh-abe-sym",
            traits=_traits(2, True,
                           "(14) with Π(x̄) and the symmetrised Itoh–Abe DG (ours, not in the paper)"),
            description="Discrete gradient (14) with the symmetrised Itoh–Abe DG; energy-exact, order 2."),
        DiscreteGradientMethod(
            name="implicit-midpoint", gradient="midpoint",
            traits=_traits(2, True,
                           "implicit midpoint rule x' = x + hΠ(x̄)∇H(x̄) on the almost-Poisson form "
                           "(Remark 3.2: the DG methods when H is quadratic)", energy=False),
            description="Implicit midpoint rule on the almost-Poisson form (energy-exact only for quadratic H)."),
    )


METHODS = _methods()
