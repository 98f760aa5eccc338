"""Composition of one-step methods that share a state.

Two uses. (1) GNI-A(h/2) then GNI-B(h/2) (``gni-euler-ab``; Ferraro–Jiménez–Martín de Diego 2015,
Remark 5.5): the composition must be done in T*Q variables (state (q, p⁺)), "A first" (the
paper's F_A^{h/2} ∘ F_B^{h/2} read right to left); it is then of order 2 and differs from RATTLE.
Composing the staggered (q, p̃, λ̃) maps instead is only of order 1; see
:mod:`dalembert.methods.gni_leapfrog`. (2) :func:`compose`: symmetric compositions
Φ_{γ_s h} ∘ … ∘ Φ_{γ_1 h} of a self-adjoint method of order 2, of order 4, 6 or 8 (Yoshida,
Suzuki, Kahan–Li, McLachlan), registered for ``nh-rattle-sym``, ``gni-midpoint-sym``
(:mod:`dalembert.methods.gni_symmetric`), ``lie-gni-mv-sym`` (:mod:`dalembert.methods.lie_gni`),
``reduced-gni-sym`` (:mod:`dalembert.methods.reduced_gni`), ``dg-gonzalez``, ``dg-avf`` and ``eps-midpoint`` (whose
step of (R, ω) — implicit midpoint in ω, R_{k+1} = R_k cay(h(ω_k + ω_{k+1})/2) — is self-adjoint as
cay(−ξ) = cay(ξ)⁻¹) (:data:`REGISTERED`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax.numpy as jnp
from jax import lax

from .. import clock
from ..errors import InputError
from .base import Method, Scheme, StepInfo, get


@dataclass(frozen=True, eq=True, repr=False)
class Composition(Method):
    """Apply ``stages = ((method, fraction), ...)`` in order within one step of size h.

    All stages must share the state type (e.g. all GNI). Reported node values are those of the
    first stage's ``observe``, evaluated with the mean of the first and last fractions of h
    (``observe_last``: of the last stage, with its fraction; :func:`compose`).

    Compared (and hashed) by value — name, traits, stages (the same methods with the same
    fractions), ``observe_last`` —, so that two equal compositions (two ``compose`` calls with
    the same arguments) share the compiled programs that the engine keys by method.
    """

    stages: tuple = ()
    observe_last: bool = False
    #: the stages of one base unrolled in the compiled step (:func:`_scanned_step`), not a rolled scan
    unroll: bool = False

    def options(self) -> dict | None:
        """The options every stage takes (each stage is built with them)."""
        per_stage = [m.options() for m, _ in self.stages]
        if not per_stage or any(o is None for o in per_stage):
            return None
        return {k: v for k, v in per_stage[0].items() if all(k in o for o in per_stage)}

    def build(self, system, q0, **options) -> Scheme:
        built = [(m.build(system, q0, **options), float(c)) for m, c in self.stages]
        h_obs = built[-1][1] if self.observe_last else 0.5 * (built[0][1] + built[-1][1])

        timed = getattr(system, "timed", getattr(system, "has_force", False))   # the clock moves on between the stages
        if len({id(m) for m, _ in self.stages}) == 1 and len(built) > 2:
            step = _scanned_step(built[0][0], jnp.asarray([c for _, c in built]), timed,
                                 unroll=len(built) if self.unroll else 1)
        else:
            def step(state, h):
                converged, iterations = jnp.array(True), jnp.array(0, jnp.int32)
                offset = 0.0
                for scheme, c in built:
                    with clock.shifted(offset if timed else 0.0):
                        state, info = scheme.step(state, c * h)
                    offset = offset + c * h
                    converged = converged & info.converged
                    iterations = iterations + info.iterations
                return state, StepInfo(converged, iterations)

        first = built[0][0]
        shown = built[-1][0] if self.observe_last else first
        return Scheme(first.init, step, lambda state, h: shown.observe(state, h_obs * h))


def _scanned_step(scheme, gammas, timed=False, unroll: int = 1):
    """The stages of one method as a ``lax.scan`` over the fractions γ_i: the step is compiled
    once, not once per stage (a 17-stage composition compiles as fast as its base). ``timed``:
    each stage runs on the clock moved on by the fractions before it (:mod:`dalembert.clock`).

    ``unroll``: stages per iteration of the scan (``lax.scan``'s ``unroll``; the same stages, the
    same arithmetic): see :data:`UNROLLED`."""
    starts = jnp.concatenate([jnp.zeros(1), jnp.cumsum(gammas)[:-1]])

    def step(state, h):
        t, k = clock.now()

        def stage(carry, cs):
            state, converged, iterations = carry
            c, start = cs
            if timed:
                with clock.at(t + start * h, k):
                    state, info = scheme.step(state, c * h)
            else:
                state, info = scheme.step(state, c * h)
            return (state, converged & info.converged, iterations + info.iterations), None

        (state, converged, iterations), _ = lax.scan(
            stage, (state, jnp.array(True), jnp.array(0, jnp.int32)), (gammas, starts), unroll=unroll)
        return state, StepInfo(converged, iterations)
    return step


# ---------------------------------------------------------------------------------------------
# symmetric compositions that raise the order
# ---------------------------------------------------------------------------------------------

def _triple_jump(p: int) -> tuple:
    """Yoshida's (1990) triple jump from order p to p + 2: (γ1, γ0, γ1), γ1 = 1/(2 − 2^{1/(p+1)})."""
    g1 = 1.0 / (2.0 - 2.0 ** (1.0 / (p + 1)))
    return (g1, 1.0 - 2.0 * g1, g1)


def _suzuki_fractal(p: int) -> tuple:
    """Suzuki's (1990) 5-stage fractal from order p to p + 2: γ1 = 1/(4 − 4^{1/(p+1)}) four times
    around 1 − 4γ1 (smaller error constant than the triple jump)."""
    g1 = 1.0 / (4.0 - 4.0 ** (1.0 / (p + 1)))
    return (g1, g1, 1.0 - 4.0 * g1, g1, g1)


def _yoshida6a() -> tuple:
    """Yoshida's (1990) 7-stage order-6 composition, solution A (Table 1): w1, w2, w3 and
    w0 = 1 − 2(w1 + w2 + w3), applied as w3 w2 w1 w0 w1 w2 w3."""
    w1, w2, w3 = -1.17767998417887, 0.235573213359357, 0.784513610477560
    w0 = 1.0 - 2.0 * (w1 + w2 + w3)
    return (w3, w2, w1, w0, w1, w2, w3)


def _palindrome(half) -> tuple:
    """γ_1 … γ_r, then γ_{r−1} … γ_1: the symmetric sequence from its first half and middle."""
    return tuple(half) + tuple(reversed(half[:-1]))


#: Kahan–Li (1997) s9odr6a: 9 stages, order 6 (Hairer–Lubich–Wanner 2006, §V.3.2, (3.12)).
_KAHAN_LI_6 = (0.39216144400731413927925056, 0.33259913678935943859974864,
               -0.70624617255763935980996482, 0.08221359629355080023149045,
               0.79854399093482996339895035)
#: Kahan–Li (1997) s17odr8a: 17 stages, order 8 (Hairer–Lubich–Wanner 2006, §V.3.2, (3.14)).
_KAHAN_LI_8 = (0.13020248308889008087881763, 0.56116298177510838456196441,
               -0.38947496264484728640807860, 0.15884190655515560089621075,
               -0.39590389413323757733623154, 0.18453964097831570709183254,
               0.25837438768632204729397911, 0.29501172360931029887096624,
               -0.60550853383003451169892108)
#: McLachlan (1995) 15-stage symmetric composition of order 8 (SIAM J. Sci. Comput. 16, 151–168,
#: Table 3; Hairer–Lubich–Wanner 2006, §V.3.2, (3.13)).
_MCLACHLAN_8 = (0.74167036435061295344822780, -0.40910082580003159399730010,
                0.19075471029623837995387626, -0.57386247111608226665638773,
                0.29906418130365592384446354, 0.33462491824529818378495798,
                0.31529309239676659663205666, -0.79688793935291635401978884)


#: Named coefficient sets for :func:`compose` of a symmetric method of order 2:
#: name -> (order reached, coefficients, source).
COEFFICIENTS = {
    "triple-jump-4": (4, _triple_jump(2), "Yoshida 1990 triple jump"),
    "suzuki-4": (4, _suzuki_fractal(2), "Suzuki 1990 5-stage fractal"),
    "yoshida-6": (6, _yoshida6a(), "Yoshida 1990 7-stage, solution A"),
    "kahan-li-6": (6, _palindrome(_KAHAN_LI_6), "Kahan–Li 1997 s9odr6a"),
    "mclachlan-8": (8, _palindrome(_MCLACHLAN_8), "McLachlan 1995 15-stage order 8"),
    "kahan-li-8": (8, _palindrome(_KAHAN_LI_8), "Kahan–Li 1997 s17odr8a"),
}

def compose(base, coefficients="triple-jump-4", name: str | None = None,
            order: int | None = None, unroll: bool = False) -> Composition:
    """A symmetric composition Φ_{γ_s h} ∘ … ∘ Φ_{γ_1 h} of a symmetric one-step method Φ.

    Parameters
    ----------
    base : a registered name or Method: symmetric (``traits.symmetric``), of order 2, whose
        state steps as a self-adjoint map (Φ_{−h} = Φ_h⁻¹): the one-step families (the discrete
        gradients, ``implicit-midpoint``, the GNIs' D* forms ``nh-rattle-sym``, ``lie-gni-mv-sym``,
        ``reduced-gni-sym``, …), not the two-step GNI families (``traits.self_adjoint`` False:
        their state (q_k, p⁺_k) steps by a reflection then a symplectic map, whose inverse is not
        the step with −h, so the triple jump of ``nh-rattle`` stays of order 2).
    coefficients : a name of :data:`COEFFICIENTS` (``"triple-jump-4"``, ``"suzuki-4"``: order 4;
        ``"yoshida-6"``, ``"kahan-li-6"``: order 6; ``"mclachlan-8"``, ``"kahan-li-8"``: order 8)
        or a palindromic sequence of fractions of h summing to 1.
    name : the method's name (default ``<base>-<order>``).
    order : the order of user coefficients (stated, not verified; default the base's).
    unroll : compile the stages unrolled instead of as a rolled loop over the fractions (same
        arithmetic, same results; faster for a Newton-based base measured so, at the cost of
        compiling the step once per stage: see :data:`UNROLLED`).

    The composed method inherits the base's traits (what it preserves — a composition of
    energy-preserving maps preserves energy — the kinds it integrates, implicitness) with the
    order of the coefficients. Its node is the base's node after the last stage: q, v, p are
    those of the state at t_k; a multiplier reported by the base is that of the last stage.

    Source: H. Yoshida, Phys. Lett. A 150 (1990) 262–268, (4.11)–(4.14) and Table 1 (solution A);
    M. Suzuki, Phys. Lett. A 146 (1990) 319–323, (3.11); W. Kahan, R.-C. Li, Math. Comp. 66
    (1997) 1089–1099 (s9odr6a, s17odr8a); R. I. McLachlan, SIAM J. Sci. Comput. 16 (1995)
    151–168 (the 15-stage order-8 method); E. Hairer, C. Lubich, G. Wanner, Geometric Numerical
    Integration (2006), §II.4 and §V.3.2, (3.11)–(3.14). Blanes–Moan's optimised coefficients are
    for splitting methods (two flows), not for the composition of one method, and are not offered.

    Raises
    ------
    InputError: a base that is not symmetric, not of order 2 for a named set, or of a
    two-step family; coefficients that are not palindromic or do not sum to 1; an unknown name.
    """
    base = get(base)
    tr = base.traits
    if not tr.symmetric:
        raise InputError(f"compose: {base.name} is not symmetric; a symmetric composition raises the order "
                         f"of a symmetric (self-adjoint) method only")
    if not tr.self_adjoint:
        raise InputError(f"compose: {base.name} ({tr.family} family) steps its state (q, p⁺) by a reflection "
                         f"then a symplectic map, which is not a self-adjoint map, so its compositions keep "
                         f"order 2; compose its self-adjoint one-step form instead (nh-rattle-sym, gni-midpoint-sym, "
                         f"lie-gni-mv-sym, reduced-gni-sym; registered: nh-rattle-4/-6/-8, gni-midpoint-4, "
                         f"lie-gni-mv-4/-6, reduced-gni-4), or dg-*, implicit-midpoint, ...")
    if isinstance(coefficients, str):
        if coefficients not in COEFFICIENTS:
            raise InputError(f"compose: unknown coefficients {coefficients!r}; known: {', '.join(COEFFICIENTS)}")
        if tr.order != 2:
            raise InputError(f"compose: {coefficients} raises a method of order 2; {base.name} has order {tr.order}")
        order, gammas, label = COEFFICIENTS[coefficients]
    else:
        gammas = tuple(float(c) for c in coefficients)
        order, label = (order or tr.order), "user coefficients"
        if not gammas or abs(sum(gammas) - 1.0) > 1e-12 or any(
                abs(a - b) > 1e-14 for a, b in zip(gammas, reversed(gammas))):
            raise InputError("compose: coefficients must be palindromic and sum to 1 (a symmetric composition); "
                             f"got {gammas}")
    traits = dataclasses.replace(tr, order=order, source=f"{tr.source}; composed: {label}")
    return Composition(name=name or f"{base.name}-{order}", traits=traits,
                       description=f"{base.name} composed ({label}, {len(gammas)} stages)",
                       stages=tuple((base, g) for g in gammas), observe_last=True, unroll=bool(unroll))


#: The registered compositions: (name, base, coefficients). Suzuki's fractal for order 4 (on the
#: gearbox its error is 100× the triple jump's smaller for 5/3 the stages), Kahan–Li for 6 and 8.
REGISTERED = (
    ("nh-rattle-4", "nh-rattle-sym", "suzuki-4"),
    ("nh-rattle-6", "nh-rattle-sym", "kahan-li-6"),
    ("nh-rattle-8", "nh-rattle-sym", "kahan-li-8"),
    ("gni-midpoint-4", "gni-midpoint-sym", "suzuki-4"),
    ("dg-gonzalez-4", "dg-gonzalez", "suzuki-4"),
    ("dg-gonzalez-6", "dg-gonzalez", "kahan-li-6"),
    ("dg-avf-4", "dg-avf", "suzuki-4"),
    ("eps-midpoint-4", "eps-midpoint", "suzuki-4"),
    ("eps-midpoint-6", "eps-midpoint", "kahan-li-6"),
    ("lie-gni-mv-4", "lie-gni-mv-sym", "suzuki-4"),
    ("lie-gni-mv-6", "lie-gni-mv-sym", "kahan-li-6"),
    ("reduced-gni-4", "reduced-gni-sym", "suzuki-4"),
)


#: Registered compositions compiled with their stages unrolled (``compose(unroll=True)``), where
#: that was measured faster: ``gni-midpoint-4`` on the chaotic quartic (n = 40, CPU time, load
#: 14): its rolled loop of five Newton-based stages cost 1.8–1.95 × 5 steps of ``gni-midpoint-sym``,
#: unrolled 0.98×, for 37 % more compile time (5.6 → 7.7 s). The ``nh-rattle-sym`` compositions
#: (explicit stages) stayed within their stage count rolled (docs/benchmarks.md, "Compositions
#: against their stage count").
UNROLLED = frozenset({"gni-midpoint-4"})


def registered() -> tuple:
    """The compositions of :data:`REGISTERED`, built from the registered bases (call after the
    families are registered)."""
    return tuple(compose(base, coefficients, name=name, unroll=name in UNROLLED)
                 for name, base, coefficients in REGISTERED)
