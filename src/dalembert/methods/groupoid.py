"""The geometric nonholonomic integrator on a Lie groupoid, and the discrete Lagrange–d'Alembert
method on the same groupoid: one implementation whose instances are the GNI on Rⁿ, the Lie-group
GNI and the reduced GNI.

Ferraro, Jiménez, Martín de Diego, Nonlinearity 28 (2015) 871, §8: Definition 8.1 (the discrete
Legendre maps on a Lie groupoid G ⇉ Q, (47)–(48)) and Definition 8.2 (the GNI, (49)–(50)). With a
discrete Lagrangian L_d: G → R, a bundle metric 𝒢 on the algebroid AG, the constraint subbundle
D = ker μ ⊂ AG (μ_x: A_x → R^m) and the projectors P, Q = 1 − P of the 𝒢-orthogonal splitting
A = D ⊕ D⊥, the GNI is, for composable arrows (g_{k−1}, g_k), q_k = β(g_{k−1}) = α(g_k),

    P*_{q_k}(FL⁻_d(g_k) − FL⁺_d(g_{k−1})) = 0,    Q*_{q_k}(FL⁻_d(g_k) + FL⁺_d(g_{k−1})) = 0    (49)

with FL^±_d as in :mod:`dalembert.lie.groupoids`. Written with the reflection (the one-step form
used by every GNI here), and with the affine term of Definition 6.1 / (38) carried over (ν the
constraint's right-hand side, μ(u) = ν; the paper's §8 states the linear case):

    1. target = (P − Q)* p⁺_k + 2 μᵀC⁻¹ν = p⁺_k − 2μᵀs,   s = C⁻¹(μ𝒢⁻¹p⁺_k − ν),  C = μ𝒢⁻¹μᵀ
    2. solve FL⁻_d(e_{q_k}(z)) = target for z ∈ R^d (Newton, from z = h𝒢⁻¹ target; the unknown is
       the groupoid's ``newton_coordinates``: q_{k+1} on the pair groupoid), g_k = e_{q_k}(z)
    3. q_{k+1} = β(g_k),  p⁺_{k+1} = FL⁺_d(g_k),  R_{k+1} = reconstruct(R_k, g_k).

Every derivative is automatic (the Legendre maps are gradients of s ↦ L_d(translated arrow), the
Newton Jacobian their forward-mode derivative): this is the general, slower path; the specialised
modules keep their closed forms and are tested against it (tests/unit/test_groupoid.py).

The three instances (:func:`problem` picks one from the system kind):

* ``NonholonomicSystem`` → the pair groupoid Rⁿ × Rⁿ, L_d(q0, q1) any discrete Lagrangian
  (default the midpoint one: ``gni-midpoint``; with ``discrete_lagrangians.stormer_verlet``:
  ``nh-rattle``). Definition 4.1 / 6.1.
* ``LieNonholonomicSystem`` and ``EulerPoincareSuslovSystem`` → the Lie group G ⇉ {e}, L_d(W) =
  l_d(W) (default Moser–Veselov on SO(3): ``lie-gni-mv``; on another group of an
  ``EulerPoincareSuslovSystem(..., group=G)``, l_d(W) = (1/2h) τ⁻¹(W)ᵀ𝕀τ⁻¹(W) — the Lie-group GNI
  of FIMdD 2008 §4 on G). With constant body constraint covectors D ⊂ 𝔤 is left-invariant and this
  is the groupoid G ⇉ {e} itself; with covectors A(R) depending on R it is the action groupoid
  G × G ⇉ G (the pair groupoid of G in left-trivialised arrows), evaluated as the same product
  with R carried along.
* ``ReducedSystem`` → the Atiyah groupoid M × M × G ⇉ M with the retracted l_d of §7
  (``reduced-gni``, ``lie-gni``), L_d(x0, x1, W) = l_d(x0, x1, τ⁻¹(W)). When the metric, the
  potential or the constraints depend on R (the tilting disk, the sphere's rolling constraint),
  the base is M × G and the arrows those of its pair groupoid ((x0, R0), (x1, R0W)); in FL⁻ the
  variation of the source then moves R0 too (``reconstruct`` of the chart's arrow), which gives
  the −∇_{R_k}ℓ term of :mod:`~dalembert.methods.reduced_gni`.

The discrete Lagrange–d'Alembert method on the groupoid (``groupoid-dla``: the method of
Iglesias-Ponte, Marrero, Martín de Diego, Martínez 2008 that the paper's Fig 1 compares with, in
the form we give it here): the same Legendre maps, FL⁻_d(g_k) = FL⁺_d(g_{k−1}) − μᵀλ_k (the
d'Alembert principle with multipliers λ_k ∈ R^m at q_k), and a discrete constraint on the new
arrow in place of the projector equation Q*(…) = 0,

    ω_d(g_k) = μ(x̄) z/h − ν(x̄) = 0,   z = e⁻¹_{α(g)}(g),  x̄ = ½(α(g) + β(g))

(μ, ν at (x̄, R_k) when they depend on R). On the pair groupoid this is ``dla-midpoint``. We chose
this discrete constraint: the paper does not state the one of its dashed curve.

Start-up: ``"consistent"`` (default) p⁺_0 = 𝒢u_0 − (h/2)μᵀλ(u_0), or ``"legendre"`` p⁺_0 = 𝒢u_0,
as for the specialised GNIs.

Reported at the nodes, named as the kind's specialised method names them: the averaged momentum
p̄_k = P*p⁺_k + Q*Π (satisfies μ𝒢⁻¹p̄_k = ν exactly), the velocity 𝒢⁻¹p̄_k and (GNI only) the
multiplier −(2/h)s.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from .. import linalg
from ..declarations import Claim, Feature, Invariant
from ..errors import InputError
from ..lie.groupoids import AtiyahGroupoid, LieGroupGroupoid, PairGroupoid, point
from ..solvers.newton import MAX_ITER, RTOL, newton
from . import discrete_lagrangians as dls
from .base import Method, Scheme, StepInfo, Traits

_PUB = "Ferraro, Jiménez, Martín de Diego, Nonlinearity 28 (2015) 871"
_STARTUPS = ("consistent", "legendre")


class GroupoidState(NamedTuple):
    """x: the base point q_k (a pytree; (0,) for a Lie group);  R: the reconstruction R_k ((0,) for
    the pair groupoid);  p: (d,) the pre-momentum p⁺_k = FL⁺_d(g_{k−1}) ∈ A*_{q_k}."""

    x: Any
    R: Any
    p: Any


class GroupoidProblem(NamedTuple):
    """A nonholonomic system on a Lie groupoid (Definition 8.1's data).

    groupoid : a :class:`~dalembert.lie.groupoids.LieGroupoid`.
    lagrangian : L_d(g, R, h) -> scalar; R the reconstruction at α(g) (ignored where the data do
        not depend on it).
    metric : (x, R) -> (d, d), the bundle metric 𝒢 on A_x.
    constraint : (x, R) -> (μ (m, d), ν (m,)): D_x = {a : μa = ν}.
    initial : the kind's initial state (x0, R0, u0 … as the kind names them) ->
        (x, R, 𝒢u_0 (d,), λ(u_0) (m,)) — the continuous multiplier for the consistent start-up.
    outputs : (x, R, p̄ (d,), u (d,), λ or None) -> dict of node arrays in the kind's names.
    """

    groupoid: Any
    lagrangian: Callable
    metric: Callable
    constraint: Callable
    initial: Callable
    outputs: Callable


# ---------------------------------------------------------------------------------------------
# the discrete Legendre maps (47)-(48)
# ---------------------------------------------------------------------------------------------
def fl_plus(problem: GroupoidProblem, g, R, h):
    """FL⁺_d(g) ∈ A*_{β(g)}, shape (d,): a ↦ d/ds L_d(g · e_{β(g)}(s a))|₀; R the reconstruction at α(g)."""
    G = problem.groupoid
    x1 = G.target(g)
    zero = jnp.zeros(G.rank(x1))
    return jax.grad(lambda a: problem.lagrangian(G.multiply(g, G.chart(x1, a)), R, h))(zero)


def fl_minus(problem: GroupoidProblem, g, R, h):
    """FL⁻_d(g) ∈ A*_{α(g)}, shape (d,): a ↦ −d/ds L_d(e_{α(g)}(s a)⁻¹ · g)|₀; the reconstruction
    at the moved source is reconstruct(R, e_{α(g)}(s a))."""
    G = problem.groupoid
    x0 = G.source(g)
    zero = jnp.zeros(G.rank(x0))

    def f(a):
        e = G.chart(x0, a)
        return problem.lagrangian(G.multiply(G.inverse(e), g), G.reconstruct(R, e), h)
    return -jax.grad(f)(zero)


def reflection(problem: GroupoidProblem, x, R, p):
    """(s (m,), μ (m, d), Cholesky factor of 𝒢 (d, d)): (P − Q)*p + 2μᵀC⁻¹ν = p − 2μᵀs and
    P*p + Q*Π = p − μᵀs at (x, R)."""
    mu, nu = problem.constraint(x, R)
    L = linalg.cholesky(problem.metric(x, R))
    Z = linalg.cho_solve(L, mu.T)
    s = linalg.solve_spd(linalg.mm(mu, Z), linalg.vm(p, Z) - nu)
    return s, mu, L


def discrete_constraint(problem: GroupoidProblem, g, R, h):
    """ω_d(g) = μ(x̄) z/h − ν(x̄), z = e⁻¹_{α(g)}(g), x̄ = ½(α(g) + β(g)); shape (m,)."""
    G = problem.groupoid
    xm = jax.tree_util.tree_map(lambda a, b: 0.5 * (a + b), G.source(g), G.target(g))
    mu, nu = problem.constraint(xm, R)
    return linalg.mv(mu, G.chart_inverse(g)) / h - nu


# ---------------------------------------------------------------------------------------------
# the instances
# ---------------------------------------------------------------------------------------------
def problem(system, *, discrete_lagrangian=None, retraction: str = "cayley") -> GroupoidProblem:
    """The groupoid instance of a system (module doc): a NonholonomicSystem on the pair groupoid,
    a LieNonholonomicSystem (or an EulerPoincareSuslovSystem, through its view) on SO(3) ⇉ {e},
    a ReducedSystem on the Atiyah groupoid.

    discrete_lagrangian : the kind's form — L_d(q0, q1, h) or a DiscreteLagrangian (pair;
        default the midpoint L_d), a LieDiscreteLagrangian or l_d(W, h) (Lie group; default
        Moser–Veselov), l_d(x0, x1, σ, h) or l_d(x0, x1, R0, σ, h) (Atiyah; default the §7.2
        form of ``reduced-gni``).
    retraction : "cayley" or "exponential" (the chart e(z) = τ(z) of the group part).

    Raises InputError for a system of another kind.
    """
    kinds = type(system).kinds() if hasattr(type(system), "kinds") else ()
    if "nonholonomic" in kinds:
        return _pair_problem(system, discrete_lagrangian)
    if "euler-poincare-suslov" in kinds or "lie-nonholonomic" in kinds:
        return _lie_group_problem(system, discrete_lagrangian, retraction)
    if "reduced" in kinds:
        return _atiyah_problem(system, discrete_lagrangian, retraction)
    raise InputError(f"the groupoid methods integrate nonholonomic, lie-nonholonomic and reduced systems; "
                     f"got a {type(system).__name__}")


def _pair_problem(system, discrete_lagrangian):
    L_d, _ = dls.resolve(discrete_lagrangian if discrete_lagrangian is not None else dls.midpoint, system)
    return pair_problem(system, L_d)


def pair_problem(system, L_d) -> GroupoidProblem:
    """A NonholonomicSystem on the pair groupoid Rⁿ × Rⁿ with the discrete Lagrangian L_d(q0, q1, h)."""

    def initial(q0, v0):
        return q0, point(), system.momentum(q0, v0), system.multiplier(q0, v0)

    return GroupoidProblem(
        PairGroupoid(), lambda g, R, h: L_d(g[0], g[1], h),
        lambda x, R: system.mass_matrix(x),
        lambda x, R: (system.constraint_matrix(x), system.constraint_rhs(x)),
        initial, lambda x, R, pbar, u, lam: {"q": x, "v": u, "p": pbar, "lam": lam})


def _lie_group_problem(system, discrete_lagrangian, retraction):
    """A LieNonholonomicSystem (SO(3), covectors A(R)) or an EulerPoincareSuslovSystem (constant A,
    any matrix Lie group) on the Lie group G ⇉ {e}. Default l_d: Moser–Veselov on SO(3), else
    l_d(W) = (1/2h) τ⁻¹(W)ᵀ𝕀τ⁻¹(W) with the chosen retraction τ."""
    from ..lie import groups
    from .lie_gni import LieDiscreteLagrangian, moser_veselov
    from .reduced_gni import group_retraction
    group = getattr(system, "group", None) or groups.group("SO(3)")
    so3_group = group.name == "SO(3)"
    tau = group_retraction(None if so3_group else group, retraction)
    inertia = jnp.asarray(system.inertia, jnp.float64)
    if discrete_lagrangian is None and so3_group:
        discrete_lagrangian = moser_veselov
    if discrete_lagrangian is None:
        def l_d(W, h):
            c = tau.inverse(W)
            return 0.5 * jnp.sum(c * linalg.mv(inertia, c)) / h
    elif isinstance(discrete_lagrangian, LieDiscreteLagrangian):
        l_d = discrete_lagrangian.build(system.inertia)["l_d"]
    else:
        l_d = discrete_lagrangian
    eps = "euler-poincare-suslov" in type(system).kinds()
    A_fn = (lambda R: system._A) if eps else system.constraint_covectors

    def constraint(x, R):
        A = A_fn(R)
        return A, jnp.zeros(A.shape[0])

    def initial(R0, omega0):
        lam = system.multiplier(omega0) if eps else system.multiplier(R0, omega0)
        return point(), R0, system.momentum(omega0), lam

    return GroupoidProblem(
        LieGroupGroupoid(group, tau), lambda W, R, h: l_d(W, h),
        lambda x, R: inertia, constraint, initial,
        lambda x, R, pbar, u, lam: {"R": R, "omega": u, "mu": pbar, "lam": lam})


def _atiyah_problem(system, discrete_lagrangian, retraction):
    from .reduced_gni import _Kernels
    k = _Kernels(system, retraction, discrete_lagrangian)
    n = system.n

    def initial(x0, R0, xdot0, xi0):
        return x0, R0, system.momentum(x0, xdot0, xi0, R0), system.multiplier(x0, R0, xdot0, xi0)

    return GroupoidProblem(
        AtiyahGroupoid(n, system.group, k.tau, system.left),
        lambda g, R, h: k.l_d(g[0], g[1], R, k.tau.inverse(g[2]), h),
        lambda x, R: system.metric(x, R),
        lambda x, R: (system.constraint_matrix(x, R), system.constraint_rhs(x, R)),
        initial,
        lambda x, R, pbar, u, lam: {"x": x, "R": R, "xdot": u[:n], "xi": u[n:], "momentum": pbar,
                                    "lam": lam})


# ---------------------------------------------------------------------------------------------
# the methods
# ---------------------------------------------------------------------------------------------
def _init(prob: GroupoidProblem, startup: str):
    def init(*args):
        *state, h = (jnp.asarray(a, jnp.float64) for a in args)
        x, R, p, lam = prob.initial(*state)
        if startup == "consistent":
            mu, _ = prob.constraint(x, R)
            p = p - 0.5 * h * linalg.vm(lam, mu)
        return GroupoidState(x, R, p)
    return init


def _orthogonal_reflection(prob):
    def reflect(x, R, p):
        s, mu, L = reflection(prob, x, R, p)
        return p - 2.0 * linalg.vm(s, mu), lambda a: linalg.cho_solve(L, a)
    return reflect


def gni_step(prob: GroupoidProblem, rtol=RTOL, max_iter=MAX_ITER, reflect=None):
    """step(GroupoidState, h) -> (GroupoidState, StepInfo): steps 1–3 of the module doc.

    reflect : optional (x, R, p) -> (target, solve) with solve(a) = 𝒢⁻¹a (the predictor's), for
        another complement of D (``gni``'s ``complement`` option); default the 𝒢-orthogonal one."""
    G = prob.groupoid
    reflect = reflect or _orthogonal_reflection(prob)

    def step(state, h):
        x, R, p = state
        target, solve = reflect(x, R, p)
        res = newton(lambda y: fl_minus(prob, G.arrow_from(x, y), R, h) - target,
                     G.newton_coordinates(x, h * solve(target)), rtol=rtol, max_iter=max_iter)
        g = G.arrow_from(x, res.x)
        return GroupoidState(G.target(g), G.reconstruct(R, g), fl_plus(prob, g, R, h)), StepInfo.of(res)
    return step


def _dla_step(prob: GroupoidProblem, rtol, max_iter):
    G = prob.groupoid

    def step(state, h):
        x, R, p = state
        s, mu, L = reflection(prob, x, R, p)
        d, m = mu.shape[1], mu.shape[0]

        def F(y):
            g = G.arrow_from(x, y[:d])
            return jnp.concatenate([fl_minus(prob, g, R, h) - p + linalg.vm(y[d:], mu),
                                    discrete_constraint(prob, g, R, h)])

        y0 = G.newton_coordinates(x, h * linalg.cho_solve(L, p - linalg.vm(s, mu)))
        res = newton(F, jnp.concatenate([y0, jnp.zeros(m)]), rtol=rtol, max_iter=max_iter)
        g = G.arrow_from(x, res.x[:d])
        return GroupoidState(G.target(g), G.reconstruct(R, g), fl_plus(prob, g, R, h)), StepInfo.of(res)
    return step


def _observe(prob: GroupoidProblem, with_multiplier: bool):
    def observe(state, h):
        x, R, p = state
        s, mu, L = reflection(prob, x, R, p)
        pbar = p - linalg.vm(s, mu)
        out = prob.outputs(x, R, pbar, linalg.cho_solve(L, pbar), -(2.0 / h) * s if with_multiplier else None)
        return {k: v for k, v in out.items() if v is not None}
    return observe


@dataclass(frozen=True, eq=False)
class GroupoidMethod(Method):
    """The GNI (``scheme="gni"``) or the DLA (``scheme="dla"``) on the Lie groupoid of the system's
    kind (module doc).

    Build options: ``discrete_lagrangian`` (see :func:`problem`), ``retraction`` ("cayley" |
    "exponential"; group instances), ``startup`` ("consistent" | "legendre"), ``rtol``,
    ``max_iter`` (Newton). Raises InputError for an unknown start-up or a system of another kind.
    """

    scheme: str = "gni"

    def build(self, system, x0=None, *, discrete_lagrangian=None, retraction: str = "cayley",
              startup: str = "consistent", rtol: float = RTOL, max_iter: int = MAX_ITER) -> Scheme:
        if startup not in _STARTUPS:
            raise InputError(f"unknown startup {startup!r}; choose from: {', '.join(_STARTUPS)}")
        prob = problem(system, discrete_lagrangian=discrete_lagrangian, retraction=retraction)
        step = (gni_step if self.scheme == "gni" else _dla_step)(prob, rtol, max_iter)
        return Scheme(_init(prob, startup), step, _observe(prob, self.scheme == "gni"))


_KINDS = ("nonholonomic", "lie-nonholonomic", "euler-poincare-suslov", "reduced")

#: the groupoid methods take every feature of the three kinds but a non-quadratic l or a
#: non-symmetric inertia (the Lie-group groupoid's metric is 𝕀)
_FEATURES = frozenset({Feature.AFFINE_CONSTRAINTS, Feature.CONFIGURATION_METRIC, Feature.ATTITUDE_POTENTIAL,
                       Feature.RIGHT_TRIVIALISED, Feature.GROUP_NOT_SO3})

METHODS = (
    GroupoidMethod(
        name="groupoid-gni",
        traits=Traits(
            order=2, symmetric=True, implicit=True,
            preserves=(Claim(Invariant.NODE_CONSTRAINT, "averaged-momentum constraint μ𝒢⁻¹p̄_k = ν exactly "
                             "(Definition 8.2: 𝒢((p⁺ + p⁻)/2, μ^a) = 0)"),),
            node_velocity="𝒢⁻¹p̄_k, p̄_k = ½(FL⁺_d(g_{k−1}) + FL⁻_d(g_k)) = P*p⁺_k + Q*Π (the averaged momentum)",
            source=f"{_PUB}, §8, Definitions 8.1–8.2, (47)–(50), on the pair, Lie-group and Atiyah "
                   "groupoids (the GNIs of Definition 4.1/6.1, of FIMdD 2008 §4 and of Definition 7.1)",
            family="groupoid", integrates=_KINDS, accepts=_FEATURES),
        description="The GNI on a Lie groupoid (pair / Lie group / Atiyah, from the system kind); "
                    "autodiff Legendre maps — the general path the specialised GNIs are tested against.",
        scheme="gni"),
    GroupoidMethod(
        name="groupoid-dla",
        traits=Traits(
            order=2, symmetric=True, implicit=True,
            preserves=(Claim(Invariant.DISCRETE_CONSTRAINT, "discrete constraint μ(x̄) e⁻¹(g_k)/h = ν(x̄)"),),
            node_velocity="𝒢⁻¹(P*p⁺_k + Q*Π): the node momentum FL⁺_d(g_{k−1}) projected",
            source="discrete Lagrange–d'Alembert on Lie groupoids (Iglesias-Ponte, Marrero, Martín de "
                   f"Diego, Martínez 2008), the comparison method of {_PUB}, Fig 1; our midpoint "
                   "discrete constraint",
            family="groupoid", integrates=_KINDS, accepts=_FEATURES),
        description="Discrete Lagrange–d'Alembert on the same Lie groupoid (multipliers and a midpoint "
                    "discrete constraint on the new arrow).",
        scheme="dla"),
)
