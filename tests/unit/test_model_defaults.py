"""Each model's default method, step and data — what ``dalembert run MODEL`` does with no
options — are stable and accurate: the whole default run warns of nothing and keeps its
invariants bounded, and it follows the model's exact or reference solution (checked up to
t = 50, where even the chaotic models are still predictable). Nodes kept every 7th step."""
import warnings

import numpy as np
import pytest

import dalembert as dl

COMPARE_UNTIL = 50.0
#: measured on the default runs (before: one bound for every model, constraint < 1e-10, energy < 1e-2,
#: path < 1e-3; up to 10⁶× the measured values) (max constraint residual, max relative energy error (None: energy not an
#: invariant), path error at t ≤ 50 relative to max(1, |path|)); the tests allow MARGIN × these, and never
#: less than ROUNDOFF (values at ~1e-16 may be a few 1e-15 on another machine or JAX version)
MEASURED = {
    "chaotic-quartic": (2.4e-16, 2.61e-07, 9.49e-06),
    "chaplygin-sleigh": (8.61e-14, 1.76e-11, 8.57e-13),
    "eulers-disk": (8.35e-12, 2.48e-08, 5.15e-05),
    "gearbox": (1.14e-16, 6.96e-03, 4.19e-04),
    "nonholonomic-particle": (1.11e-16, 1.25e-04, 8.67e-05),
    "p1-linear": (5.55e-17, 3.47e-05, 3.24e-05),
    "p2-affine": (1.11e-16, None, 3.45e-05),
    "p3-reduced": (6.03e-17, 9.70e-06, 2.04e-05),
    "rolling-ball": (1.78e-15, None, 7.48e-06),
    "rolling-ball-pre": (2.22e-16, None, 3.59e-06),
    "snakeboard": (1.60e-16, 1.30e-16, 3.26e-12),
    "suslov": (0.0, 4.81e-15, 3.59e-09),
    "tilting-disk": (4.28e-13, 6.14e-09, 7.85e-08),
    "tilting-disk-so3": (1.19e-15, 1.66e-06, 4.84e-04),
    "tilting-disk-centre": (4.66e-13, 2.70e-09, 4.18e-08),
    "sleigh-pendulum": (8.32e-14, 2.85e-04, 1.22e-04),
    "vertical-rolling-disk": (1.93e-16, 7.95e-08, 1.63e-05),
    # gonzalez-f with node_projection (2026-12-07; nh-rattle-sym before: 7.03e-13, 2.65e-07, 2.58e-06)
    "whipple-bicycle": (4.47e-15, 4.41e-14, 9.59e-08),
    # nh-rattle-sym at h = 0.001 to t = 5 across the spin reversal (the pitch mode at ~10² rad/s)
    "rattleback": (5.33e-14, 9.97e-03, 2.58e-01),
}
#: models whose default run is checked in the full suite only: the bicycle's first compile of its
#: default method and its DOP853 reference took 566 s and 179 s at load average 15–25 (2 cores);
#: the rattleback's run took 97 s in CI, the tilting disks' 15–20 s (their default runs are also drawn
#: by the docs gallery there)
FULL_ONLY = {"whipple-bicycle", "rattleback", "tilting-disk-so3", "tilting-disk-centre"}
MARGIN, ROUNDOFF = 10.0, 1e-14


def allowed(measured):
    return max(MARGIN * measured, ROUNDOFF)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.full) if n in FULL_ONLY else n
                                  for n in sorted(dl.models.available())])
def test_default_run_is_stable_and_follows_the_solution(name):
    mdl = dl.models.get(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traj = dl.integrate(mdl.system, mdl.default_method, h=mdl.default_h, t_final=mdl.default_t_final,
                            save_every=7, **mdl.default_options, **mdl.initial_state)
    ours = [str(w.message) for w in caught      # (not another thread's, e.g. a server of another test)
            if w.category.__module__.startswith("dalembert") or "dalembert" in str(w.filename)]
    assert ours == []
    assert traj.metadata.get("warnings", []) == []
    assert name in MEASURED, f"measure {name}'s default run and add it to MEASURED"
    m_con, m_energy, m_path = MEASURED[name]
    assert traj.max_constraint_residual <= allowed(m_con), traj.max_constraint_residual
    if "energy" in mdl.invariants:           # bounded, no drift
        err = np.abs(traj.energy - traj.energy[0]) / abs(traj.energy[0])
        assert err.max() <= allowed(m_energy), err.max()
    k = int(np.flatnonzero(traj.t <= COMPARE_UNTIL + 1e-9)[-1])
    ref, label = mdl.state_solution(np.array([0.0, traj.t[k]]))
    a = mdl.path_array
    got, want = np.asarray(getattr(traj, a))[k], np.asarray(ref[a])[-1]
    assert np.max(np.abs(got - want)) <= allowed(m_path) * max(1.0, float(np.max(np.abs(want)))), (
        f"{name} · {mdl.default_method}: {a}(t = {traj.t[k]:g}) = {got} against the {label} {want}")


@pytest.mark.parametrize("name", sorted(dl.models.available()))
def test_default_options_are_build_options_of_the_default_method(name):
    """A model's default_options name keyword options of its default method's build (a typo would
    only fail at the first run), and are given to that method alone (Model.options_for)."""
    mdl = dl.models.get(name)
    if mdl.default_method == "auto":
        assert mdl.default_options == {}
        return
    keyword = set(dl.methods.get(mdl.default_method).options() or {})   # (a composition: its stages')
    assert set(mdl.default_options) <= keyword, (name, mdl.default_options, keyword)
    assert mdl.options_for(mdl.default_method) == mdl.default_options
    assert mdl.options_for(dl.methods.get(mdl.default_method)) == mdl.default_options
    other = next(m for m in dl.methods.available() if m != mdl.default_method)
    assert mdl.options_for(other) == {}


def test_the_bicycle_defaults_to_the_energy_benchmark_winner():
    """The IFToMM energy benchmark's winner (experiments/iftomm_bicycle.py ENERGY_METHOD) is the
    bicycle's default, with its options."""
    from dalembert.experiments.iftomm_bicycle import ENERGY_METHOD
    mdl = dl.models.get("whipple-bicycle")
    winner = ("gonzalez-f", {"node_projection": True, "jacobian_reuse": 6, "newton_estimate": True})
    assert (mdl.default_method, mdl.default_options) == ENERGY_METHOD == winner
