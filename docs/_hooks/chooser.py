"""The method chooser's words: for each registered method, when to use it and what a step costs.

The order and the preserved quantities of the chooser table come from the registry (the method's
traits); these two columns are advice, written here. The hook (generate.py) warns — which fails
``mkdocs build --strict`` — for a registered method without an entry, so a new method gets its
line when it is registered.

Cost, in the unknowns of one step (n coordinates, m rolling constraints, k configuration
constraints; G the kinetic metric): *explicit* (no nonlinear solve; at most small linear solves),
*Newton on m* (the impulses only), *Newton on n + m* (the whole step), and the unknowns of the
other system kinds where they differ (3 + m for a body on SO(3); 2n − m for the almost-Poisson
state of the discrete gradients).
"""
from __future__ import annotations

EXPLICIT = "explicit"
M = "Newton on m"
NM = "Newton on n + m"
GNI = ("explicit (one m × m solve) if G is constant, Newton on the k impulses with configuration "
       "constraints; else Newton on n (n + k)")
SYM = "Newton on m if G is constant; else Newton on n + m"
DG = "Newton on 2n − m (the almost-Poisson state)"
EPS = "Newton on 3 + m (ω, impulses)"
LIE = "Newton on 3 (the rotation step; one m × m solve)"
LIE_SYM = "Newton on 3 + m (the rotation step, impulses)"
REDUCED = "Newton on 3 (ξ; x explicit) with the default l_d; else on n + 3"
REDUCED_SYM = "Newton on 3 + m with the default l_d; else on n + 3 + m"

#: {method: (use when, cost)}
CHOOSER = {
    # --- NonholonomicSystem (q, v) ---
    "nh-rattle": ("order 2 at the least cost when G is constant: node constraint to round-off, momenta "
                  "of horizontal symmetries kept; two-step: watch the parasitic-mode warning", GNI),
    "gni-euler-a": ("order-1 comparisons (the GNI papers' examples)", GNI),
    "gni-euler-b": ("order-1 comparisons (the adjoint of gni-euler-a)", GNI),
    "gni-euler-ab": ("comparisons: the order-2 composition of the two Euler GNIs", GNI),
    "gni-midpoint": ("a q-dependent metric, symmetric, order 2 (two-step)", "Newton on n"),
    "nh-rattle-sym": ("a safe start on a NonholonomicSystem: order 2, one-step (no parasitic mode), "
                      "configuration constraints φ(q) = 0 beside the rolling ones", SYM),
    "gni-midpoint-sym": ("a q-dependent metric without the parasitic mode; configuration constraints", NM),
    "nh-rattle-4": ("high accuracy, any metric; the default of the sleigh, the chaotic quartic system, "
                    "the snakeboard and the tilting disk", SYM),
    "nh-rattle-6": ("higher accuracy still (order 6), any metric; low accuracy (1e-4) at large h "
                    "with the structure kept, after nh-rattle-8", SYM),
    "nh-rattle-8": ("round-off accuracy at moderate h (order 8), any metric; the fastest "
                    "structure-preserving method to a 1e-4 endpoint, at large h (about 2× "
                    "rk8-projected; benchmarks: low accuracy)", SYM),
    "gni-midpoint-4": ("high accuracy with a q-dependent metric (order 4)", NM),
    "dla-midpoint": ("comparison: a discrete (midpoint) constraint instead of the node constraint", NM),
    "dla-left": ("comparison: order 1, discrete constraint at the left point", NM),
    "si-dla": ("comparison (Celledoni et al. 2019): constant metric", M),
    "i-dla": ("comparison (Celledoni et al. 2019): implicit DLA, any metric", NM),
    "spark-lobatto2": ("comparison: order 2 SPARK (a nonholonomic RATTLE), constant metric",
                       "Newton on m (the general 2-stage SPARK with configuration constraints)"),
    "spark-lobatto3": ("order 4 with the node constraint exact, any metric (3 stages)", "Newton on 3(n + m)"),
    "spark-lobatto4": ("order 6 with the node constraint exact, any metric (4 stages)", "Newton on 4(n + m)"),
    "gonzalez-f": ("exact energy in (q, p) with configuration constraints; the rolling constraint drifts",
                   "Newton on 2n + m + k"),
    "gonzalez-r": ("exact energy and both constraints, from canonical data (Algorithm 1)", DG),
    "rk8-projected": ("low accuracy (a 1e-4 endpoint) and other short runs where energy and symmetry "
                      "need not be kept: the fastest method there, as fast as diffrax's best "
                      "(Dopri8) with jit(dl.solve); order 8, the node constraint kept by projection, "
                      "the energy drifts (benchmarks: low accuracy)",
                      "explicit (m × m solves per stage)"),
    "reference": ("the yardstick: SciPy DOP853 at rtol = atol = 1e-13; not structure-preserving, "
                  "not compiled, no checkpoint", "explicit, adaptive (SciPy)"),
    # --- almost-Poisson form (a NonholonomicSystem reaches it through its reduction) ---
    "dg-gonzalez": ("exact energy (linear constraints), or its exact balance with forces: the recommended discrete gradient", DG),
    "dg-avf": ("exact energy; the averaged-vector-field gradient", DG),
    "dg-itoh-abe": ("exact energy at order 1: the cheapest discrete gradient", DG),
    "dg-itoh-abe-sym": ("exact energy, order 2: the symmetrised Itoh–Abe gradient", DG),
    "implicit-midpoint": ("comparison on the almost-Poisson form (energy not exact unless H is quadratic)", DG),
    "dg-gonzalez-4": ("exact energy and high accuracy (order 4)", DG),
    "dg-gonzalez-6": ("exact energy and higher accuracy (order 6)", DG),
    "dg-avf-4": ("exact energy and high accuracy (order 4), AVF gradient", DG),
    # --- Euler–Poincaré–Suslov on SO(3) ---
    "eps-midpoint": ("a rigid body with body-fixed constraints (Suslov): energy and constraint exact", EPS),
    "eps-variational": ("a rigid body with body-fixed constraints: the variational integrator", EPS),
    "eps-midpoint-4": ("Suslov-type bodies, high accuracy (order 4)", EPS),
    "eps-midpoint-6": ("Suslov-type bodies, higher accuracy (order 6)", EPS),
    "dreps-euler": ("comparison: explicit order 1 on SO(3)", EXPLICIT),
    "dreps-rk4": ("explicit order 4 on SO(3), short runs", EXPLICIT),
    # --- constraints that depend on the attitude (LieNonholonomicSystem) ---
    "lie-gni-mv": ("constraints that depend on the attitude: the Moser–Veselov discrete Lagrangian "
                   "(two-step)", LIE),
    "lie-gni-cayley": ("constraints that depend on the attitude, Cayley discrete Lagrangian (two-step)", LIE),
    "lie-gni-mv-sym": ("long runs on SO(3): one-step, no parasitic mode; energy exact for constant "
                       "covectors", LIE_SYM),
    "lie-gni-mv-4": ("long runs on SO(3), high accuracy (order 4)", LIE_SYM),
    "lie-gni-mv-6": ("long runs on SO(3), higher accuracy (order 6)", LIE_SYM),
    # --- shape × group (ReducedSystem, e.g. the rolling ball) ---
    "lie-gni": ("shape × group (the rolling ball): the recommended one, no chart singularity", REDUCED),
    "reduced-gni": ("shape × group with a retraction (Cayley default)", REDUCED),
    "reduced-rattle": ("shape × group, RATTLE form", "Newton on 3 (ξ; x explicit, one m × m solve)"),
    "reduced-gni-sym": ("shape × group without the parasitic mode; the base of reduced-gni-4", REDUCED_SYM),
    "reduced-gni-4": ("shape × group, high accuracy (order 4)", REDUCED_SYM),
    "gni-exp-chart": ("comparison: order 1 in an exponential chart (§7.4.2)", "Newton on n + 3"),
    # --- any kind, on a Lie groupoid ---
    "groupoid-gni": ("checking the GNI of any kind on a Lie groupoid (general, slower path)",
                     "Newton on the groupoid's coordinates + m"),
    "groupoid-dla": ("comparison: discrete Lagrange–d'Alembert on the same groupoid",
                     "Newton on the groupoid's coordinates + m"),
}
