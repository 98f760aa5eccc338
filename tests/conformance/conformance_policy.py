"""Which (method, model) pairs of the conformance suite the default test run checks (the rest run
with DALEMBERT_FULL_CONFORMANCE=1, and ``python -m dalembert.verification`` runs every pair)."""
from __future__ import annotations

import os

#: methods the test suite runs on the model named here only, unless DALEMBERT_FULL_CONFORMANCE=1
#: (``python -m dalembert.verification`` always runs every pair): those whose every pair compiles
#: for 15–60 s (measured on a 2-core machine), and the registered compositions, whose bases run on
#: every model and which add 1–3 s per pair (each on a different model; every pair passes, as
#: measured by the full run)
EXPENSIVE = {"gonzalez-r": "gearbox", "dg-itoh-abe-sym": "gearbox",
             "nh-rattle-4": "p2-affine", "nh-rattle-6": "chaotic-quartic", "nh-rattle-8": "vertical-rolling-disk",
             "gni-midpoint-4": "nonholonomic-particle", "dg-gonzalez-4": "gearbox",
             "dg-gonzalez-6": "vertical-rolling-disk", "dg-avf-4": "chaotic-quartic",
             "rk8-projected": "nonholonomic-particle", "eps-midpoint-4": "suslov",
             "eps-midpoint-6": "suslov", "lie-gni-mv-4": "suslov", "lie-gni-mv-6": "suslov",
             "reduced-gni-4": "p3-reduced"}

#: methods the test suite leaves to the full conformance run: the groupoid GNI and DLA equal the
#: specialised GNIs and DLA, whose pairs run here, to round-off (tests/unit/test_groupoid.py);
#: `ferraro2015-fig1` checks groupoid-dla's order on the ball
FULL_ONLY = ("groupoid-gni", "groupoid-dla")


#: models the test suite checks with these methods only, unless DALEMBERT_FULL_CONFORMANCE=1: the
#: tilting disk (five coordinates, a q-dependent metric in closed form) adds 5–40 s of compilation
#: per method and repeats what the other q-dependent models check (its SymPy import, equal to it
#: to round-off, is checked for order 2 with three methods in tests/unit/test_sympy_models.py);
#: its R² × SO(3) form's lie-gni order is checked against the Euler-angle disk in
#: tests/unit/test_reduced_system.py (reduced-gni is the same scheme, the exponential chart compiles
#: for a minute); ``python -m dalembert.verification`` runs every method
QUICK_MODEL_METHODS = {"tilting-disk": ("gni-midpoint",), "tilting-disk-so3": (),
                       # the models with a configuration constraint: every method that accepts one
                       # runs on both in the full suite (each pair 5–65 s: compilation); here one
                       # method per kind of claim — the node constraint and φ (gni-midpoint on the
                       # disk; nh-rattle-sym, order 2, runs on the sleigh in
                       # tests/unit/test_holonomic_models.py) and the discrete constraint and φ
                       # (dla-midpoint on the sleigh)
                       "tilting-disk-centre": ("gni-midpoint",), "sleigh-pendulum": ("dla-midpoint",),
                       # the Whipple bicycle (n = 8, k = 1, m = 4): one method's first compile takes
                       # minutes on the 2-core machine; its default method runs in
                       # tests/unit/test_whipple_bicycle.py and the meijaard2007 experiment (full)
                       "whipple-bicycle": (),
                       # Euler's disk is the tilting disk's system at another state (its orders:
                       # tests/unit/test_eulers_disk.py)
                       "eulers-disk": (),
                       # each method compiles for 1–2 minutes on its q-dependent metric:
                       # tests/unit/test_rattleback.py checks it against Newton–Euler instead
                       "rattleback": ()}

#: pairs that fail today, with the reason; the test suite expects them to fail (strictly: a pair
#: that starts to pass fails the suite until it is removed here). Empty: the five pairs of the disk
#: in centre coordinates whose Newton solves stalled at small h pass since the impulses are tested
#: against their round-off floor (methods.base.StepRoundoff).
KNOWN_FAILURES: dict = {}


def in_quick_suite(method: str, model: str) -> bool:
    """Whether the default test suite runs this pair (see :data:`EXPENSIVE`, :data:`FULL_ONLY`,
    :data:`QUICK_MODEL_METHODS`)."""
    if os.environ.get("DALEMBERT_FULL_CONFORMANCE", "").strip() == "1":
        return True
    if method in FULL_ONLY or (model in QUICK_MODEL_METHODS and method not in QUICK_MODEL_METHODS[model]):
        return False
    return method not in EXPENSIVE or model == EXPENSIVE[method]
