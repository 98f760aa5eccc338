"""The parasitic period-2 monitor (dalembert.monitors; spec gni-2008-momentum-energy.md §7.1, T26)."""
import warnings

import numpy as np
import pytest

import dalembert as dl
from dalembert.models.chaplygin_sleigh import ferraro2008_example3
from dalembert.monitors import (ParasiticModeWarning, detect_parasitic_mode, post_run_checks,
                                sawtooth_indicator)


def test_indicator_returns_the_amplitude_of_an_alternating_component_and_damps_smooth_signals():
    k = np.arange(200)
    smooth = np.stack([np.cos(0.05 * k), np.sin(0.05 * k)], axis=1)
    alt = 1e-3 * (-1.0) ** k
    u = smooth + np.stack([alt, 0 * alt], axis=1)
    speed = np.ones((201, 2)) / np.sqrt(2)
    rel = sawtooth_indicator(u, speed)
    inner = rel[2:-3]
    np.testing.assert_allclose(inner, 1e-3, rtol=1e-3)            # smooth part damped by (0.05)⁴/16
    assert np.max(sawtooth_indicator(smooth, speed)[2:-3]) < 1e-6


def test_detects_synthetic_growth_with_its_rate_and_onset():
    h, n, rate = 0.1, 600, 0.03
    k = np.arange(n + 1)
    q = np.stack([h * k, np.sin(0.02 * k), 0 * k], axis=1).astype(float)
    q[:, 2] = 1e-7 * np.exp(rate * k) * (-1.0) ** k * h            # step velocity alternates with amplitude ~1e-7 e^{rk}
    v = np.tile([1.0, 0.0, 0.0], (n + 1, 1))
    rep = detect_parasitic_mode(q=q, speed=v, h=h)
    assert rep.detected
    # amplitude of u ≈ 2e-7 e^{rk}: reaches 1e-2 at k = ln(5e4)/r ≈ 361, 1e-3 at ≈ 284
    assert abs(rep.step - np.log(1e-2 / 2e-7) / rate) <= 2
    assert abs(rep.onset - np.log(1e-3 / 2e-7) / rate) <= 2
    assert abs(rep.growth_rate - rate) < 1e-3


@pytest.fixture(scope="module")
def sleigh():
    d = ferraro2008_example3()
    return d, dl.models.get("chaplygin-sleigh", **d["params"])


def test_fires_on_the_sleigh_long_run_T26(sleigh):
    d, mdl = sleigh
    with pytest.warns(ParasiticModeWarning, match=r"step \d+"):
        tr = dl.integrate(mdl.system, "gni-midpoint", q0=d["q0"], v0=d["v0"], h=1.0, t_final=300)
    info = tr.metadata["parasitic_mode"]
    assert 100 < info["onset"] < info["step"] < 300
    assert 0.045 < info["growth_rate"] < 0.050             # m a v_∞/(I + ma²) = 0.0475 (spec T26)
    # the energy H(q_k, p⁻_k) does not show it (spec §7.1: within 1e-3)
    from dalembert.experiments.ferraro2008 import post_momentum_energy
    E = post_momentum_energy(mdl.system, tr.q, 1.0)
    assert np.max(np.abs(E / E[0] - 1)) < 2e-3


def test_silent_on_dla_and_on_short_sleigh_runs(sleigh):
    d, mdl = sleigh
    tr = dl.integrate(mdl.system, "dla-midpoint", q0=d["q0"], v0=d["v0"], h=1.0, t_final=300)
    assert not detect_parasitic_mode(tr).detected
    with warnings.catch_warnings():
        warnings.simplefilter("error", ParasiticModeWarning)
        dl.integrate(mdl.system, "gni-midpoint", q0=d["q0"], v0=d["v0"], h=1.0, t_final=100)


@pytest.mark.parametrize("q0, v0", [([0.0, 0.0, 0.0], [1.0, 1.0, 0.0]), ([0.0, -5.0, 0.0], [1.0, 1.0, -5.0])])
def test_silent_on_the_particle(q0, v0):
    p = dl.models.get("nonholonomic-particle")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ParasiticModeWarning)
        tr = dl.integrate(p.system, "nh-rattle", q0=q0, v0=v0, h=0.1, t_final=200.0)
    rep = detect_parasitic_mode(tr)
    assert not rep.detected and rep.max_relative_amplitude < 1e-3


@pytest.mark.parametrize("save_every", [2, 4, 7])
def test_the_in_loop_statistic_sees_the_mode_whatever_save_every(sleigh, save_every):
    """The statistic is computed from consecutive steps inside the compiled loop: an even stride
    (which aliases a period-2 mode away from the saved nodes) finds the onset of save_every = 1
    to within one stride."""
    d, mdl = sleigh
    kw = dict(q0=d["q0"], v0=d["v0"], h=1.0, t_final=301)
    with pytest.warns(ParasiticModeWarning):
        ref = detect_parasitic_mode(dl.integrate(mdl.system, "gni-midpoint", **kw))
    with pytest.warns(ParasiticModeWarning):
        tr = dl.integrate(mdl.system, "gni-midpoint", save_every=save_every, **kw)
    rep = detect_parasitic_mode(tr)
    assert rep.detected and tr.metadata["parasitic_mode"]["step"] == rep.step
    assert abs(rep.step - ref.step) < save_every and abs(rep.growth_rate / ref.growth_rate - 1) < 0.05


def test_other_families_are_ignored(sleigh):
    d, mdl = sleigh
    tr1 = dl.integrate(mdl.system, "dla-midpoint", q0=d["q0"], v0=d["v0"], h=1.0, t_final=300)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        post_run_checks(tr1, dl.methods.get("dla-midpoint"))
    assert not [x for x in w if issubclass(x.category, ParasiticModeWarning)]


def test_a_sawtooth_present_from_the_start_and_not_growing_is_not_reported():
    h, n = 0.1, 400
    k = np.arange(n + 1)
    q = np.stack([h * k, np.sin(0.02 * k), 0.05 * h * (-1.0) ** k], axis=1)   # constant 10 % sawtooth
    v = np.tile([1.0, 0.0, 0.0], (n + 1, 1))
    rep = detect_parasitic_mode(q=q, speed=v, h=h)
    assert not rep.detected and rep.max_relative_amplitude > 0.05
