"""The geometric nonholonomic integrator (GNI) on R^n, for any discrete Lagrangian.

Definition 4.1 / 6.1 of Ferraro, Jiménez, Martín de Diego, "New developments on the geometric
nonholonomic integrator", Nonlinearity 28 (2015), (7)–(9) and (26)–(27), in its one-step form on T*Q
(our implementation form, equivalent to (8); docs/theory/ferraro2015.md):

    state (q_k, p⁺_k),  p⁺_k = D2 L_d(q_{k−1}, q_k)
    1. p⁻_k = (P − Q)*_{q_k} p⁺_k + 2 Q*_{q_k} Π(q_k)           (reflection; (8), (26))
    2. solve −D1 L_d(q_k, q_{k+1}, h) = p⁻_k for q_{k+1}         (Newton; Jacobian −D12 L_d)
    3. p⁺_{k+1} = D2 L_d(q_k, q_{k+1}, h)

Start-up (option ``startup``): ``"consistent"`` (default) p⁺_0 = G v_0 − (h/2)μᵀλ(q_0, v_0), or
``"legendre"`` p⁺_0 = G v_0 (the paper's p⁺_0 = p_0; then the reported multiplier oscillates with
period 2); see :func:`startup_init`.

Reported at the nodes: q_k; the averaged momentum p̄_k = (p⁺_k + p⁻_k)/2 = P* p⁺_k + Q* Π, which
satisfies the constraint exactly ((9b), (27b)); v_k = G⁻¹ p̄_k; and the multiplier
λ_k = −(2/h) C⁻¹ (μ G⁻¹ p⁺_k − ν) in the Lagrange–d'Alembert sign convention (from (9a):
D1 L_d + D2 L_d = −h μᵀ λ).

Fast path: when G is constant and L_d is Euler A, Euler B or Störmer–Verlet, step 2 is explicit
(closed forms of §5 and §6 of the paper; docs/theory/ferraro2015.md): with a the weight of ∇V at the
left node,
``p_{k+½} = p⁻_k − a h ∇V(q_k)``, ``q_{k+1} = q_k + h G⁻¹ p_{k+½}``,
``p⁺_{k+1} = p_{k+½} − (1 − a) h ∇V(q_{k+1})`` — one m×m solve per step.
With L_d^SV this is McLachlan–Perlmutter's nonholonomic RATTLE (Remark 5.1, §6.1).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import linalg
from ..declarations import Claim, Feature, Invariant
from ..solvers.newton import MAX_ITER, RTOL, newton
from . import discrete_lagrangians as dls
from .base import (Method, Observation, Scheme, StepInfo, Traits, compensated_add, explicit_info,
                   holonomic_claim, StepRoundoff, with_compensation)


class GNIState(NamedTuple):
    """q: (n,) node q_k;  p: (n,) pre-momentum p⁺_k;  g: (n,) ∇V(q_k) (used by the fast path);
    c: None, or the compensations (c_q, c_p) of the summed q and p (``compensated=True``)."""

    q: Any
    p: Any
    g: Any
    c: Any = None


def constraint_split(system, q, factor):
    """The pieces of the reflection at q: (μ (m, n), Cholesky factor of C = μG⁻¹μᵀ, ν (m,))."""
    mu = system.constraint_matrix(q)
    C = linalg.mm(mu, factor.solve(mu.T))
    return mu, linalg.cholesky(C), system.constraint_rhs(q)


def reflection_coefficients(system, q, p, factor):
    """s = C⁻¹ (μ G⁻¹ p − ν), shape (m,), and μ (m, n): then (P−Q)*p + 2Q*Π = p − 2 μᵀ s."""
    mu, Lc, nu = constraint_split(system, q, factor)
    s = linalg.cho_solve(Lc, linalg.mv(mu, factor.solve(p)) - nu)
    return s, mu


def affine_reflection(system, q, p, factor=None, coefficients=reflection_coefficients):
    """(P − Q)*p + 2 Q*Π at q, shape (n,): the GNI momentum jump ((8), (26)); an involution.
    ``coefficients``: the (s, μ) of another complement (:func:`complement_coefficients`)."""
    f = factor if factor is not None else system.factor_metric(q)
    s, mu = coefficients(system, q, p, f)
    return p - 2.0 * linalg.vm(s, mu)


def complement_coefficients(system, complement):
    """The reflection coefficients for a user-chosen complement of D (Ferraro–Iglesias–Martín de
    Diego 2008 §4.1, §4.5; docs/theory/ferraro2008.md; Theorem 2 holds for any complement, Theorem 1
    and "constraints in average" only for the metric-orthogonal one).

    complement : callable q (n,) -> Z (n, m) whose columns span the complement W_q of D_q = ker μ(q)
        (μ(q) Z(q) must be invertible). Then Q = Z(μZ)⁻¹μ projects onto W_q along D_q and
        Q*p = μᵀ s with s = (μZ)⁻ᵀ Zᵀ p, so (P − Q)*p = p − 2μᵀs. With Z = G⁻¹μᵀ this is the default.

    Returns coefficients(system, q, p, factor) -> (s (m,), μ (m, n)), the signature of
    :func:`reflection_coefficients`. Linear constraints only (ν = 0).
    """
    def coefficients(system, q, p, factor):
        mu = system.constraint_matrix(q)
        Z = jnp.asarray(complement(q), jnp.float64)
        return linalg.solve(linalg.mm(mu, Z).T, linalg.vm(p, Z)), mu
    return coefficients


def _check_complement(system, complement, q0):
    from ..errors import InputError
    if not callable(complement):
        raise InputError(f"complement must be a callable q -> (n, m) matrix; got {type(complement).__name__}")
    q0 = jnp.asarray(q0, jnp.float64)
    if system.is_affine:
        raise InputError("complement: a user-chosen complement is supported for linear constraints "
                         "only (ν = 0)")
    mu = np.asarray(system.constraint_matrix(q0))
    Z = np.asarray(complement(q0), float)
    if Z.shape != mu.shape[::-1]:
        raise InputError(f"complement(q) must have shape (n, m) = {mu.shape[::-1]}; got {Z.shape}")
    sv = np.linalg.svd(mu @ Z, compute_uv=False)
    if not np.all(np.isfinite(sv)) or sv[-1] <= 1e-10 * max(1.0, sv[0]):
        raise InputError("complement: μ(q0) Z(q0) is singular — the columns of Z do not span a "
                         f"complement of D at q0 (singular values {np.array2string(sv, precision=3)})")


def gni_observe(system, factor_fn, coefficients=reflection_coefficients):
    """observe(state, h) for any scheme whose state is (q_k, p⁺_k, ...) (GNI and DLA).

    coefficients : the (s, μ) of the complement (default D⊥; :func:`complement_coefficients` for
    another one, and then v_k = G⁻¹P*p⁺_k need not satisfy the constraint).
    """
    def observe(state, h):
        f = factor_fn(state.q)
        s, mu = coefficients(system, state.q, state.p, f)
        pbar = state.p - linalg.vm(s, mu)
        return Observation(state.q, f.solve(pbar), pbar, -(2.0 / h) * s)
    return observe


STARTUPS = ("consistent", "legendre")


def startup_init(system, startup: str = "consistent"):
    """init(q0, v0, h) -> GNIState for the two-step schemes' start-up.

    ``"consistent"`` (default): p⁺_0 = G v0 − (h/2) μᵀ λ(q0, v0), the value D2 L_d(q(−h), q(0))
    takes on the exact motion to O(h²) (the constraint impulse of the half interval before t_0;
    our start-up, not in the paper: docs/theory/ferraro2008.md). The multiplier output λ_k is then
    second order.
    ``"legendre"``: p⁺_0 = G v0, the paper's p⁺_0 = p_0. Positions keep their order, but the
    reported λ_k starts a period-2 oscillation (about 0 and 2λ alternately) that never decays.
    Both give the same reported v_0 (P* removes the μᵀλ term).
    """
    if startup not in STARTUPS:
        from ..errors import InputError
        raise InputError(f"unknown startup {startup!r}; choose from: {', '.join(STARTUPS)}")

    def init(q0, v0, h):
        p0 = system.momentum(q0, v0)
        if startup == "consistent":
            p0 = p0 - 0.5 * h * linalg.vm(system.multiplier(q0, v0), system.constraint_matrix(q0))
        return GNIState(q0, p0, net_gradient(system, q0, 0.0))
    return init


def net_gradient(system, q, dt):
    """∇V(q, t + dt) − f(q, t + dt): the potential's gradient less a force that does not depend on v
    (what the explicit kicks use; ∇V without a force). Shape (n,)."""
    g = system.grad_potential(q, dt) if getattr(system, "explicit_time", False) else system.grad_potential(q)
    if getattr(system, "has_force", False):
        g = g - system.force(q, jnp.zeros_like(q), dt)
    return g


@dataclass(frozen=True, eq=False)
class GNI(Method):
    """The GNI with a given discrete Lagrangian (see the module docstring).

    Build options (``dl.integrate(..., fast_path=..., rtol=..., max_iter=...)``):
    fast_path : use the explicit closed form when it applies (default True).
    compensated : on the explicit path, add the increments of q and p to the state by Kahan's
        compensated summation (:func:`~dalembert.methods.base.kahan_add`; default True): the
        round-off of long runs grows like ε|q| instead of N ε|q| (docs/long_runs.md).
    rtol, max_iter : Newton tolerance and iteration limit.
    startup : "consistent" (default) or "legendre"; see :func:`startup_init`.
    complement : None (default: the metric-orthogonal complement D⊥) or a callable
        q -> Z (n, m) whose columns span another complement of D (linear constraints only); see
        :func:`complement_coefficients`. Theorem 2 (momentum equation) still holds; energy
        (Theorem 1), "constraints in average" and stability do not (our measurement:
        docs/theory/ferraro2008.md). Raises InputError when μ(q0)Z(q0) is singular or the shapes are wrong.
    """

    discrete_lagrangian: Any = None

    def build(self, system, q0, *, fast_path: bool = True, rtol: float = RTOL,
              max_iter: int = MAX_ITER, startup: str = "consistent", complement=None,
              compensated: bool = True) -> Scheme:
        L_d, a = dls.resolve(self.discrete_lagrangian, system)
        if not isinstance(self.discrete_lagrangian, dls.DiscreteLagrangian):   # a user's callable
            _check_scalar_output(L_d, q0, self.name)
        factor_fn = system.factor_metric
        explicit = fast_path and a is not None and system.constant_metric(q0)
        coeff = reflection_coefficients
        if complement is not None:
            if system.has_holonomic:
                from ..errors import InputError
                raise InputError(f"{self.name}: complement= is not supported with configuration constraints; "
                                 "leave it out (the metric-orthogonal complement of (Φ; μ) is used)")
            _check_complement(system, complement, q0)
            coeff = complement_coefficients(system, complement)
        init = startup_init(system, startup)
        fd = dls.discrete_forces(self.discrete_lagrangian, system)
        if system.has_force and system.force_depends_on_velocity(q0, jnp.zeros_like(q0)):
            explicit = False                  # f(q, v) makes the drift implicit
        if system.has_holonomic or (system.has_force and not explicit):
            step = _shake_step(system, factor_fn, L_d, a if explicit else None, rtol, max_iter, fd)
        elif explicit:
            step = _explicit_step(system, factor_fn, a, coeff)
            if compensated:
                init = with_compensation(init)
        else:
            step = _newton_step(system, factor_fn, L_d, rtol, max_iter, coeff)
        return Scheme(init, step, gni_observe(system, factor_fn, coeff))


def _check_scalar_output(L_d, q0, name):
    """Raise InputError unless L_d(q0, q1, h) is a scalar for q0, q1 of q0's shape (abstract
    evaluation: nothing is computed)."""
    import jax

    from ..errors import InputError
    q = jax.ShapeDtypeStruct(np.shape(q0), jnp.float64)
    h = jax.ShapeDtypeStruct((), jnp.float64)
    try:
        out = jax.eval_shape(L_d, q, q, h)
    except TypeError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"{name}: the discrete Lagrangian L_d(q0, q1, h) fails for q0, q1 of shape "
                         f"{np.shape(q0)} ({first})") from None
    if getattr(out, "shape", None) != ():
        raise InputError(f"{name}: the discrete Lagrangian L_d(q0, q1, h) must return a scalar; it "
                         f"returns {type(out).__name__} of shape {getattr(out, 'shape', None)}")


def _explicit_step(system, factor_fn, a, coefficients=reflection_coefficients):
    """Reflect, kick, drift, kick as increments: Δ₁ = −2μᵀs − a h ∇V(q_k) (reflection and first
    kick), q_{k+1} = q_k + h G⁻¹(p⁺_k + Δ₁), p⁺_{k+1} = p⁺_k + Δ₁ − (1 − a) h ∇V(q_{k+1}); the
    two sums are Kahan's when the state carries compensations (``compensated``, the default), plain
    for a state built without (e.g. GNIState(q, p, g) by hand)."""
    def step(state, h):
        q, p, g, c = state
        cq, cp = (None, None) if c is None else c
        f = factor_fn(q)
        s, mu = coefficients(system, q, p, f)
        d1 = -2.0 * linalg.vm(s, mu) - a * h * g
        q1, cq = compensated_add(q, h * f.solve(p + d1), cq)
        g1 = net_gradient(system, q1, h)
        p1, cp = compensated_add(p, d1 - (1.0 - a) * h * g1, cp)
        return GNIState(q1, p1, g1, None if c is None else (cq, cp)), explicit_info()
    return step


def _shake_step(system, factor_fn, L_d, a, rtol, max_iter, fd):
    """With configuration constraints φ(q) = 0 (k rows; ``constraint_matrix`` is (Φ; μ), so the
    reflection acts on both and the averaged momentum satisfies Φ(q_k)v_k = 0 and μ(q_k)v_k = ν):
    reflect, then SHAKE — solve −D1 L_d(q_k, q_{k+1}, h) = p⁻_k − Φ(q_k)ᵀΛ, φ(q_{k+1}) = 0 for
    (q_{k+1}, Λ), and p⁺_{k+1} = D2 L_d(q_k, q_{k+1}, h): the discrete Euler–Lagrange equations with
    a holonomic constraint (Marsden–West 2001, §3.5; SHAKE, Ryckaert–Ciccotti–Berendsen 1977)
    beside the GNI's nonholonomic reflection. ``a`` (constant G and an L_d with a potential weight:
    the drift is explicit) makes the unknowns the k impulses Λ only; otherwise Newton on
    (q_{k+1}, Λ), n + k unknowns. The reported multiplier stays −(2/h)s of the reflection of p⁺_k
    (both kinds of rows: p⁺_k = D2 L_d carries the half-step impulse of each).

    With a force, the discrete forces ``fd`` enter as in the forced discrete Lagrange–d'Alembert
    principle: −D1 L_d − f_d⁻ = p⁻_k − ΦᵀΛ, p⁺_{k+1} = D2 L_d + f_d⁺ (Marsden–West 2001, §3.2;
    ``a`` given only for a force that does not depend on v: the kick then uses ∇V − f).
    Without configuration constraints (k = 0) this is the forced GNI step (Newton on q_{k+1})."""
    D1 = jax.grad(L_d, argnums=0)
    D2 = jax.grad(L_d, argnums=1)

    def step(state, h):
        q, p, g = state.q, state.p, state.g
        f = factor_fn(q)
        pm = affine_reflection(system, q, p, f)
        Phi = system.holonomic_jacobian(q)
        roundoff = StepRoundoff(system, f, q, pm, h)
        k = Phi.shape[0]
        if a is not None:
            base = pm - a * h * g

            def drift(Lam):
                return q + h * f.solve(base - linalg.vm(Lam, Phi))

            def G(Lam):
                x = drift(Lam)
                return system.holonomic(x), jnp.full(k, roundoff.impulse(x))

            res = newton(G, jnp.zeros(k), rtol=rtol, max_iter=max_iter, has_scale=True)
            x = drift(res.x)
            g1 = net_gradient(system, x, h)
            p1 = base - linalg.vm(res.x, Phi) - (1.0 - a) * h * g1
            return GNIState(x, p1, g1), StepInfo.of(res)
        n = q.shape[0]

        def F(u):
            x, Lam = u[:n], u[n:]
            res = jnp.concatenate([-D1(q, x, h) - fd(q, x, h)[0] - pm + linalg.vm(Lam, Phi), system.holonomic(x)])
            return res, roundoff.sizes(x, k)

        res = newton(F, jnp.concatenate([q + h * f.solve(pm), jnp.zeros(k)]), rtol=rtol, max_iter=max_iter,
                     has_scale=True)
        x = res.x[:n]
        return GNIState(x, D2(q, x, h) + fd(q, x, h)[1], g), StepInfo.of(res)
    return step


def _newton_step(system, factor_fn, L_d, rtol, max_iter, coefficients=reflection_coefficients):
    """The implicit step: the pair-groupoid instance of the groupoid GNI
    (:func:`dalembert.methods.groupoid.gni_step`; FL⁻ = −D1 L_d, FL⁺ = D2 L_d, Newton in
    q_{k+1} − q_k) with this module's reflection (any complement); as fast as a direct form
    (benchmarks/groupoid.py)."""
    from . import groupoid

    def reflect(x, R, p):
        f = factor_fn(x)
        return affine_reflection(system, x, p, f, coefficients), f.solve

    inner = groupoid.gni_step(groupoid.pair_problem(system, L_d), rtol, max_iter, reflect)

    def step(state, h):
        st, info = inner(groupoid.GroupoidState(state.q, groupoid.point(), state.p), h)
        return GNIState(st.x, st.p, state.g), info
    return step


def gni(discrete_lagrangian, name: str = "gni-custom", order: int = 2, symmetric: bool = True,
        source: str = "user discrete Lagrangian") -> GNI:
    """A GNI method with a user's discrete Lagrangian, usable in ``dl.integrate``.

    Parameters
    ----------
    discrete_lagrangian : callable ``L_d(q0, q1, h) -> scalar`` (traceable; q0, q1 of shape (n,))
        or a :class:`~dalembert.methods.discrete_lagrangians.DiscreteLagrangian`.
        Use ``L_d = h·L(...)`` scaling so that momenta are physical.
    name, order, symmetric, source : reported in the traits (the order is what you claim; the
        convergence tool measures it).

    Example
    -------
    >>> Ld = lambda q0, q1, h: 0.5 * jnp.sum((q1 - q0) ** 2) / h - h * V(0.5 * (q0 + q1))
    >>> traj = dl.integrate(sys, dl.methods.gni(Ld), q0=q0, v0=v0, h=0.01, t_final=1.0)
    """
    _check_discrete_lagrangian(discrete_lagrangian)
    return GNI(name=name, traits=_gni_traits(order, symmetric, source, explicit_when=""),
               discrete_lagrangian=discrete_lagrangian)


def _check_discrete_lagrangian(L_d):
    """Raise InputError (one line, saying what to pass) unless ``L_d`` is a DiscreteLagrangian or
    a callable that takes (q0, q1, h)."""
    import inspect

    from ..errors import InputError
    from ..systems.kind import SystemKind
    what = ("dl.methods.gni takes a discrete Lagrangian: a callable L_d(q0, q1, h) -> scalar, e.g. "
            "lambda q0, q1, h: h * L((q0 + q1) / 2, (q1 - q0) / h), or a DiscreteLagrangian "
            "(dl.methods.discrete_lagrangians.midpoint)")
    if isinstance(L_d, dls.DiscreteLagrangian):
        return
    if isinstance(L_d, str):
        raise InputError(f"{what}; got the string {L_d!r} (a registered method is dl.methods.get(name))")
    if isinstance(L_d, (Method, SystemKind)) or not callable(L_d):
        raise InputError(f"{what}; got {type(L_d).__name__}")
    try:
        sig = inspect.signature(L_d)
    except (TypeError, ValueError):        # a builtin or C callable: not introspectable
        return
    try:
        sig.bind(0, 0, 0)
    except TypeError:
        raise InputError(f"{what}; got a callable with parameters {sig}, which does not take (q0, q1, h)") from None


def _gni_traits(order, symmetric, source, explicit_when):
    return Traits(
        order=order, symmetric=symmetric, implicit=True, explicit_when=explicit_when,
        preserves=(Claim(Invariant.NODE_CONSTRAINT, "node constraint μ(q_k) v_k = ν(q_k) (averaged momentum)"),
                   Claim(Invariant.MOMENTUM_MAP,
                         "nonholonomic momentum of horizontal symmetries (G-invariant L_d)"),
                   holonomic_claim("configuration constraint φ(q_k) = 0 (SHAKE)")),
        accepts={Feature.AFFINE_CONSTRAINTS, Feature.CONFIGURATION_METRIC, Feature.HOLONOMIC_CONSTRAINTS,
                 Feature.FORCES, Feature.CONTROLS, Feature.EXPLICIT_TIME},
        two_step=True,
        node_velocity="G⁻¹ p̄_k, p̄_k = (p⁺_k + p⁻_k)/2 = P*p⁺_k + Q*Π (the averaged momentum)",
        source=source, family="gni", integrates=("nonholonomic",))


# ---------------------------------------------------------------------------------------------
# the registered GNIs
# ---------------------------------------------------------------------------------------------
_PUB = "Ferraro, Jiménez, Martín de Diego, Nonlinearity 28 (2015) 871"


def _registered():
    from .composition import Composition

    nh_rattle = GNI(
        name="nh-rattle",
        traits=_gni_traits(2, True, f"McLachlan–Perlmutter nonholonomic RATTLE/SHAKE = GNI with L_d^SV; "
                           f"{_PUB}, (15), Remark 5.1, §6.1 (affine)", "constant mass matrix"),
        description="Nonholonomic RATTLE: half kick, reflect, half kick (GNI with the Störmer–Verlet L_d).",
        discrete_lagrangian=dls.stormer_verlet)
    euler_a = GNI(
        name="gni-euler-a",
        traits=_gni_traits(1, False, f"{_PUB}, (10)-(11), (13); implemented from L_d^A (erratum E1, "
                           "docs/theory/ferraro2015.md#e1)",
                           "constant mass matrix"),
        description="GNI extension of symplectic Euler A: reflect, then kick (potential at the left node).",
        discrete_lagrangian=dls.euler_a)
    euler_b = GNI(
        name="gni-euler-b",
        traits=_gni_traits(1, False, f"{_PUB}, (10), (12), (14); implemented from L_d^B (erratum E1, "
                           "docs/theory/ferraro2015.md#e1)",
                           "constant mass matrix"),
        description="GNI extension of symplectic Euler B: kick, then reflect (potential at the right node).",
        discrete_lagrangian=dls.euler_b)
    euler_ab = Composition(
        name="gni-euler-ab",
        traits=_gni_traits(2, True, f"{_PUB}, Remark 5.5 (T*Q composition, A first: erratum E5, "
                           "docs/theory/ferraro2015.md#e5)",
                           "constant mass matrix"),
        description="GNI-A(h/2) then GNI-B(h/2) in T*Q variables: second order, not RATTLE.",
        stages=((euler_a, 0.5), (euler_b, 0.5)))
    midpoint = GNI(
        name="gni-midpoint",
        traits=_gni_traits(2, True, f"{_PUB}, Definition 4.1 with L_d = h L((q0+q1)/2, (q1-q0)/h)", ""),
        description="GNI with the midpoint discrete Lagrangian; Newton for any G(q).",
        discrete_lagrangian=dls.midpoint)
    return (nh_rattle, euler_a, euler_b, euler_ab, midpoint)


METHODS = _registered()
