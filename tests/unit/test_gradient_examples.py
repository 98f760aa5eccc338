"""The two worked examples of docs/gradients.md (examples/gradients.py), run as tests: the
recovered parameters and the shooting solution are compared with the truth that generated the
data (the model's exact solution), not with values taken from the code."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gradients.py"


def _example():
    spec = importlib.util.spec_from_file_location("gradient_examples", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_identify_sleigh_mass_distribution_from_a_noisy_path():
    ex = _example()
    t, q_obs, q0, v0 = ex.sleigh_observations(a=0.8, J=5.0, noise=0.01)
    (a, J), loss, _ = ex.identify_sleigh(t, q_obs, q0, v0, guess=(0.5, 2.0))
    assert abs(a - 0.8) <= 0.01 * 0.8 and abs(J - 5.0) <= 0.02 * 5.0
    # the fit leaves the noise: the mean squared residual is the noise variance (1e-4) to ±30 %
    assert 0.7e-4 <= loss <= 1.3e-4


def test_shooting_the_rolling_disk_to_a_target():
    ex = _example()
    target = ex.disk_contact_exact(0.9)
    w, miss, its = ex.shoot_disk(target, w_guess=0.5)
    # the integrator's O(h²) error (h = 0.01) is all that separates w from the exact 0.9
    assert abs(w - 0.9) <= 1e-4 and miss <= 1e-4 and its < 20
    # and the contact point of the exact solution with that w is on target to the same accuracy
    assert np.linalg.norm(ex.disk_contact_exact(w) - target) <= 1e-4
