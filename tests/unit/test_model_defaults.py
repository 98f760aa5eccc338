"""Each model's default method, step and data — what ``dalembert run MODEL`` does with no
options — are stable and accurate: the whole default run warns of nothing and keeps its
invariants bounded, and it follows the model's exact or reference solution (checked up to
t = 50, where even the chaotic models are still predictable). Nodes kept every 7th step."""
import warnings

import numpy as np
import pytest

import dalembert as dl

COMPARE_UNTIL = 50.0


@pytest.mark.parametrize("name", sorted(dl.models.available()))
def test_default_run_is_stable_and_follows_the_solution(name):
    mdl = dl.models.get(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traj = dl.integrate(mdl.system, mdl.default_method, h=mdl.default_h, t_final=mdl.default_t_final,
                            save_every=7, **mdl.initial_state)
    ours = [str(w.message) for w in caught      # (not another thread's, e.g. a server of another test)
            if w.category.__module__.startswith("dalembert") or "dalembert" in str(w.filename)]
    assert ours == []
    assert traj.metadata.get("warnings", []) == []
    assert traj.max_constraint_residual < 1e-10
    if "energy" in mdl.invariants:           # bounded, no drift
        err = np.abs(traj.energy - traj.energy[0]) / abs(traj.energy[0])
        assert err.max() < 1e-2
    k = int(np.flatnonzero(traj.t <= COMPARE_UNTIL + 1e-9)[-1])
    ref, label = mdl.state_solution(np.array([0.0, traj.t[k]]))
    a = mdl.path_array
    got, want = np.asarray(getattr(traj, a))[k], np.asarray(ref[a])[-1]
    assert np.max(np.abs(got - want)) < 1e-3 * max(1.0, float(np.max(np.abs(want)))), (
        f"{name} · {mdl.default_method}: {a}(t = {traj.t[k]:g}) = {got} against the {label} {want}")
