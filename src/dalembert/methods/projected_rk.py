"""An explicit Runge–Kutta method on the index-1 Lagrange–d'Alembert equations, with the velocity
projected back onto the constraint after every step: high order and no Newton solve, the
constraint kept to round-off.

The index-1 form is q̇ = v, G(q) v̇ = f(q, v) + μ(q)ᵀλ(q, v) with the multiplier λ of Ferraro–
Jiménez–Martín de Diego 2015 (17) (:meth:`~dalembert.systems.NonholonomicSystem.acceleration`).
A step of an explicit Runge–Kutta method (A, b, c) of order p on y = (q, v) gives (q_{k+1}, ṽ);
its constraint residual μ(q_{k+1})ṽ − ν(q_{k+1}) is O(h^{p+1}) (the exact flow keeps it zero), and
the step ends with the orthogonal projection in the kinetic metric,

    v_{k+1} = ṽ − G⁻¹μᵀ C⁻¹ (μ ṽ − ν),   C = μ G⁻¹ μᵀ   (at q_{k+1}),

a change of the same O(h^{p+1}), so the order stays p (Hairer–Lubich–Wanner, Geometric Numerical
Integration, §IV.4, standard projection; here only v is projected because a nonholonomic
constraint does not restrict q). The tableau (build option ``tableau``) is Prince–Dormand's
13-stage method of order 8, RK8(7)13M (Prince & Dormand, J. Comput. Appl. Math. 7 (1981) 67–75,
its 8th-order weights; the default), or Dormand–Prince's 12-stage DOP853 (Hairer–Nørsett–Wanner,
Solving ODEs I, §II.10, the coefficients as SciPy ships them). Both are checked against the
order conditions in the tests. With fixed steps the 13-stage method is the cheaper one to a
given error: on the vertical rolling disk over t = 1000 its error is 17× smaller at the same step
(2.3e-7 vs 4.1e-6 at h = 1), for 8 % more work per step (docs/high_order.md).

What it keeps and what it does not: the constraint at every node to round-off (as the GNI and
the discrete gradients do); not the energy (its error is O(h⁸) and grows with t, where the
symmetric compositions ``nh-rattle-8`` keep it bounded), not time symmetry, not the GNI's
averaged momentum. It is the fastest way to a small final error on smooth problems
(docs/high_order.md): no Newton solve, fixed steps, one m × m solve per stage and per
projection. For long runs where the energy must stay bounded, use a symmetric composition.

Reported at the nodes: q_k, v_k (projected), p_k = G v_k and λ(q_k, v_k) of (17). The increments
of q are summed by Kahan's method (option ``compensated``, default True): q holds angles that grow
with t; v is bounded and projected at every step.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np
from jax import lax

from .. import clock, linalg
from ..declarations import Claim, Feature, Invariant
from ..errors import InputError
from .base import Method, Scheme, StepInfo, Traits, compensated_add, explicit_info, holonomic_claim


class ProjectedState(NamedTuple):
    """q (n,), v (n,) on the constraint, and the compensation of q (None: plain sums)."""

    q: Any
    v: Any
    c: Any = None


def dop853_tableau() -> tuple:
    """(A (12, 12), b (12,), c (12,)) of Dormand–Prince's 8th-order method (DOP853)."""
    from scipy.integrate._ivp import dop853_coefficients as dc
    s = dc.N_STAGES
    return np.array(dc.A[:s, :s], float), np.array(dc.B, float), np.array(dc.C[:s], float)


#: Prince–Dormand RK8(7)13M (Prince & Dormand 1981, the rational coefficients as published): the
#: rows of A below the diagonal for stages 2 … 13, then the weights b of the 8th-order solution.
_PD8_A = (
    "1/18",
    "1/48 1/16",
    "1/32 0 3/32",
    "5/16 0 -75/64 75/64",
    "3/80 0 0 3/16 3/20",
    "29443841/614563906 0 0 77736538/692538347 -28693883/1125000000 23124283/1800000000",
    "16016141/946692911 0 0 61564180/158732637 22789713/633445777 545815736/2771057229 "
    "-180193667/1043307555",
    "39632708/573591083 0 0 -433636366/683701615 -421739975/2616292301 100302831/723423059 "
    "790204164/839813087 800635310/3783071287",
    "246121993/1340847787 0 0 -37695042795/15268766246 -309121744/1061227803 -12992083/490766935 "
    "6005943493/2108947869 393006217/1396673457 123872331/1001029789",
    "-1028468189/846180014 0 0 8478235783/508512852 1311729495/1432422823 -10304129995/1701304382 "
    "-48777925059/3047939560 15336726248/1032824649 -45442868181/3398467696 3065993473/597172653",
    "185892177/718116043 0 0 -3185094517/667107341 -477755414/1098053517 -703635378/230739211 "
    "5731566787/1027545527 5232866602/850066563 -4093664535/808688257 3962137247/1805957418 "
    "65686358/487910083",
    "403863854/491063109 0 0 -5068492393/434740067 -411421997/543043805 652783627/914296604 "
    "11173962825/925320556 -13158990841/6184727034 3936647629/1978049680 -160528059/685178525 "
    "248638103/1413531060 0",
)
_PD8_B = ("14005451/335480064 0 0 0 0 -59238493/1068277825 181606767/758867731 561292985/797845732 "
          "-1041891430/1371343529 760417239/1151165299 118820643/751138087 -528747749/2220607170 1/4")


def _fractions(row: str) -> list:
    return [float(Fraction(x)) for x in row.split()]


def prince_dormand8_tableau() -> tuple:
    """(A (13, 13), b (13,), c (13,)) of Prince–Dormand's 13-stage method of order 8,
    RK8(7)13M (Prince & Dormand 1981), with c_i = Σ_j a_ij."""
    A = np.zeros((13, 13))
    for i, row in enumerate(_PD8_A):
        a = _fractions(row)
        A[i + 1, :len(a)] = a
    return A, np.array(_fractions(_PD8_B)), A.sum(axis=1)


#: the tableaus of the build option ``tableau``
TABLEAUS = {"prince-dormand-8": prince_dormand8_tableau, "dop853": dop853_tableau}


def project(system, q, v):
    """v − G⁻¹μᵀ C⁻¹ (μ v − ν) at q, shape (n,): the orthogonal projection in the kinetic metric,
    written as a correction of v — the projection of
    :meth:`~dalembert.systems.NonholonomicSystem.project_velocity`, which goes through the momentum,
    G⁻¹(P*(G v)), without that round trip. The two forms measured alike on the vertical rolling
    disk (t = 1000, h = 0.5 … 0.05): constraint residual 1e-17 … 2e-16, and the same drift of the
    conserved φ̇ (2e-11 … 2e-10, docs/high_order.md) — the drift is the projection's, not its
    rounding."""
    C, Gmu = system.constraint_gram(q)
    r = system.constraint_residual(q, v)
    return v - linalg.mv(Gmu, linalg.solve_spd(C, r))


def rk_increment(f, y, h, tableau, timed: bool = False):
    """h Σ b_i k_i of one explicit Runge–Kutta step of ``f`` from ``y``, the stages as a
    ``lax.scan`` (the right-hand side is compiled once, not once per stage: a fraction of the
    compile time, docs/benchmarks.md, "Measurements behind the code") with the stage sums written
    elementwise (a dot in the loop body keeps XLA:CPU from compiling the loop into one kernel,
    engine.xla). ``timed``: ``f(y, dt)`` is called with the stage's time offset c_i·h."""
    A, b, c = tableau
    s = len(b)

    def stage(K, i):
        yi = y + h * jnp.sum(jnp.asarray(A)[i][:, None] * K, axis=0)
        return K.at[i].set(f(yi, h * jnp.asarray(c)[i]) if timed else f(yi)), None

    K, _ = lax.scan(stage, jnp.zeros((s,) + y.shape, y.dtype), jnp.arange(s))
    return h * jnp.sum(jnp.asarray(b)[:, None] * K, axis=0)


@dataclass(frozen=True, eq=False)
class ProjectedRK(Method):
    """An explicit Runge–Kutta method on the index-1 form with the velocity projected onto the
    constraint after each step (module docstring).

    Build options: ``compensated`` (default True: q summed by Kahan's method); ``tableau``, a key
    of :data:`TABLEAUS` (default ``"prince-dormand-8"``; ``"dop853"``).

    Raises InputError: an unknown tableau."""

    def build(self, system, q0, *, compensated: bool = True, tableau: str = "prince-dormand-8") -> Scheme:
        if tableau not in TABLEAUS:
            raise InputError(f"{self.name}: unknown tableau {tableau!r}; choose one of {', '.join(TABLEAUS)}")
        tab = TABLEAUS[tableau]()
        n = int(np.shape(q0)[0])

        timed = system.timed

        def f(y, dt=0.0):
            q, v = y[:n], y[n:]
            with clock.shifted(dt):          # a force, V(q, t), ν(q, t) at the stage's time (no-op without)
                return jnp.concatenate([v, system.acceleration(q, v)])

        def init(q0, v0, h=None):
            q0, v0 = jnp.asarray(q0), jnp.asarray(v0)
            return ProjectedState(q0, v0, jnp.zeros_like(q0) if compensated else None)


        def step(state, h):
            dy = rk_increment(f, jnp.concatenate([state.q, state.v]), h, tab, timed)
            q1, c = compensated_add(state.q, dy[:n], state.c)
            info = explicit_info()
            if system.has_holonomic:        # q onto φ = 0 first (SHAKE's correction in the kinetic metric)
                res = system.project_configuration(q1)
                q1, info = res.x, StepInfo.of(res)
            with clock.shifted(h):          # ν(q, t) at the new node
                v1 = project(system, q1, state.v + dy[n:])
            return ProjectedState(q1, v1, c), info

        def observe(state, h=None):
            return {"q": state.q, "v": state.v, "p": system.momentum(state.q, state.v),
                    "lam": system.multiplier(state.q, state.v)}

        return Scheme(init, step, observe)


METHODS = (
    ProjectedRK(
        name="rk8-projected",
        traits=Traits(
            order=8, symmetric=False, implicit=False,
            preserves=(Claim(Invariant.NODE_CONSTRAINT, "node constraint μ(q_k) v_k = ν(q_k)"),
                       holonomic_claim("configuration constraint φ(q_k) = 0 (projection)")),
            accepts={Feature.AFFINE_CONSTRAINTS, Feature.CONFIGURATION_METRIC, Feature.HOLONOMIC_CONSTRAINTS,
                     Feature.FORCES, Feature.CONTROLS, Feature.EXPLICIT_TIME},
            node_velocity="v_k, projected onto the constraint in the kinetic metric",
            source="Prince–Dormand RK8(7)13M (J. Comput. Appl. Math. 7, 1981) or DOP853 "
                   "(Hairer–Nørsett–Wanner, Solving ODEs I, §II.10) on the index-1 form, "
                   "Ferraro–Jiménez–Martín de Diego 2015 (17); projection of v "
                   "(Hairer–Lubich–Wanner, GNI, §IV.4)",
            family="projected-rk", integrates=("nonholonomic",)),
        description="Explicit 13-stage Runge–Kutta of order 8 (Prince–Dormand) on the index-1 form, v "
                    "projected onto the constraint after each step: constraint to round-off, no "
                    "Newton; energy not kept (O(h⁸) drift): the fastest to a small final error on "
                    "smooth problems; for bounded energy over long runs use nh-rattle-8."),
)
