"""Euler's disk (model ``eulers-disk``): the relative equilibrium Ω² sin α = 4g/a against the
equations of motion (with a negative control), its closed form against the DOP853 reference,
Moffatt's energy (3/2) m g a sin α; orders of nh-rattle-sym and nh-rattle-4 from a perturbed state
against DOP853; the relative equilibrium over long runs; with the air layer, the energy balance's
order and the fitted singularity exponents (Moffatt, Nature 404, 2000)."""
import numpy as np
import pytest

import dalembert as dl
from dalembert.models import eulers_disk as ed
from dalembert.models import tilting_disk


def _model(**p):
    return dl.models.get("eulers-disk", **p)


def _perturbed(model):
    """Off the relative equilibrium: Ω 5 % high, a lean rate 0.3 rad/s (nutation and a moving centre)."""
    Om = model.v0[0]
    return model.q0, tilting_disk.initial_velocity(model.system, model.q0, 1.05 * Om, 0.3, -Om * np.cos(0.3))


@pytest.mark.parametrize("alpha,sign", [(0.3, 1.0), (0.05, 1.0), (1.2, -1.0)])
def test_relative_equilibrium_solves_the_equations_of_motion(alpha, sign):
    """At Ω² sin α = 4g/a, ψ̇ = Ω, φ̇ = −Ω cos α, the index-1 equations give ψ̈ = ϑ̈ = φ̈ = 0 and a
    contact point on its circle (|acceleration| = a cos α Ω²); measured |ϑ̈| ≤ 3e-14 rad/s². Negative
    control: Ω 1 % off, |ϑ̈| ≥ 0.1 rad/s² (so the zero is not vacuous)."""
    p = {"alpha": alpha, "a": 0.5, "m": 1.0, "g": 9.81}
    model = _model(**p)
    q0, v0 = ed.relative_equilibrium(model.params, sign=sign)
    acc = np.asarray(model.system.acceleration(q0, v0))
    Om = ed.steady_rate(alpha, 0.5, 9.81)
    assert np.max(np.abs(acc[:3])) <= 1e-12 * Om * Om
    assert np.isclose(np.hypot(acc[3], acc[4]), 0.5 * np.cos(alpha) * Om * Om, rtol=1e-12)
    off = tilting_disk.initial_velocity(model.system, q0, 1.01 * sign * Om, 0.0, -1.01 * sign * Om * np.cos(alpha))
    assert abs(float(model.system.acceleration(q0, off)[1])) >= 0.1


def test_energy_is_moffatts_and_the_exact_solution_is_the_reference():
    """E = (3/2) m g a sin α (Moffatt's eq. (2), from the model's metric and potential); the closed
    form against the index-1 ODE by DOP853 (rtol = atol = 1e-13) over 2 s: measured 2e-11."""
    model = _model()
    a, m, g, alpha = 0.5, 1.0, 9.81, 0.3
    assert np.isclose(float(model.system.energy(model.q0, model.v0)), 1.5 * m * g * a * np.sin(alpha), rtol=1e-13)
    t = np.linspace(0.0, 2.0, 41)
    q, v = model.exact_solution(t, model.q0, model.v0)
    ref = model.system.reference_solution(model.q0, model.v0, t=t)
    assert np.max(np.abs(q - ref["q"])) <= 1e-9 and np.max(np.abs(v - ref["v"])) <= 1e-8
    centre = np.stack([np.asarray(tilting_disk.centre(x, a)) for x in q])
    assert np.max(np.abs(centre - centre[0])) <= 1e-14        # the centre at rest


@pytest.mark.full
def test_exact_solution_of_another_state_is_the_reference():
    """A state off the relative equilibrium is not given the closed form: its 'exact solution' is
    the DOP853 reference (a moving centre, a changing α)."""
    model = _model()
    q0, v0 = _perturbed(model)
    t = np.linspace(0.0, 0.5, 6)
    q, _ = model.exact_solution(t, q0, v0)
    assert np.ptp(ed.tilt(q)) > 1e-3


def _order(method, hs, T=1.0):
    model = _model()
    q0, v0 = _perturbed(model)
    ref = model.system.reference_solution(q0, v0, t=np.array([0.0, T]))
    errs = []
    for h in hs:
        tr = dl.integrate(model.system, method, q0=q0, v0=v0, h=h, t_final=T, progress=False)
        assert tr.max_constraint_residual <= 1e-11
        errs.append(np.max(np.abs(tr.q[-1] - ref["q"][-1])))
    return np.polyfit(np.log(hs), np.log(errs), 1)[0], errs


@pytest.mark.full
def test_order_of_nh_rattle_4_from_a_perturbed_state():
    """Against DOP853 at T = 0.5 s from a state with nutation and a moving centre (full suite: the
    compilation and the reference cost a minute; the quick tests run nh-rattle-4 on the relative
    equilibrium). Measured errors 1.2e-2, 9.7e-4, 6.6e-5, 4.3e-6 at h = 4, 2, 1, 0.5 ms (local
    slopes 3.7, 3.9, 4.0; fitted 3.91 on the last three)."""
    order, errs = _order("nh-rattle-4", (0.002, 0.001, 0.0005), T=0.5)
    print("nh-rattle-4", order, errs)
    assert abs(order - 4.0) <= 0.3, errs


@pytest.mark.full
def test_order_of_nh_rattle_sym_from_a_perturbed_state():
    """As above for nh-rattle-sym over T = 0.5 s. The asymptotic range needs hΩ ≲ 0.01 (Ω ≈ 20 rad/s):
    measured errors 8.3e-2, 1.2e-2, 2.6e-3, 6.1e-4 at h = 2, 1, 0.5, 0.25 ms (local slopes 2.8, 2.3, 2.1); at 0.5, 0.25, 0.125 ms: fitted 2.05."""
    order, errs = _order("nh-rattle-sym", (0.0005, 0.00025, 0.000125), T=0.5)
    print("nh-rattle-sym", order, errs)
    assert abs(order - 2.0) <= 0.2, errs


def _kept(T, h, save_every=1):
    """Started at nh-rattle-4's own relative equilibrium Ω_h (one-step map keeps the tilt)."""
    from dalembert.experiments.eulers_disk import discrete_relative_equilibrium, drift
    model = _model()
    Om_h = discrete_relative_equilibrium(model, "nh-rattle-4", h)
    v0 = tilting_disk.initial_velocity(model.system, model.q0, Om_h, 0.0, -Om_h * np.sin(model.q0[1]))
    tr = dl.integrate(model.system, "nh-rattle-4", q0=model.q0, v0=v0, h=h, t_final=T, progress=False,
                      save_every=save_every, **model.options_for("nh-rattle-4"))   # compensated_newton=True
    alpha, Om = ed.tilt(tr.q), ed.precession_rate(tr.v)
    return (abs(Om_h / model.v0[0] - 1.0), np.max(np.abs(alpha - alpha[0])), abs(drift(alpha)),
            abs(drift(Om)) / Om[0])


def test_relative_equilibrium_kept_with_angles_at_a_million_radians():
    """nh-rattle-sym, h = 0.002, T = 1 s from its own relative equilibrium Ω_h, ψ and φ started at
    2π·159155 ≈ 10⁶ rad (ulp 1.2e-10; the same motion: α and Ω do not depend on ψ, φ). The step
    solves for Δq = q_{k+1} − q_k, so the discrete velocity carries no rounding of q (docs/long_runs.md).
    Measured: max |E − E₀|/E₀ 9.5e-14, α's excursion 7.1e-13 rad with ``compensated_newton``
    (1.8e-12 and 1.9e-11 without, the method's default, which this test runs; 7.9e-8 and 1.8e-8 when it solved for q_{k+1}: the negative
    control; 7.2e-14 and 7.0e-13 from ψ = φ = 0)."""
    from dalembert.experiments.eulers_disk import discrete_relative_equilibrium
    model, h = _model(), 0.002
    Om_h = discrete_relative_equilibrium(model, "nh-rattle-sym", h)
    q0 = np.array(model.q0, dtype=float)
    q0[[0, 2]] += 2 * np.pi * 159155
    v0 = tilting_disk.initial_velocity(model.system, q0, Om_h, 0.0, -Om_h * np.sin(model.q0[1]))
    tr = dl.integrate(model.system, "nh-rattle-sym", q0=q0, v0=v0, h=h, t_final=1.0, progress=False)
    alpha = ed.tilt(tr.q)
    assert tr.max_relative_energy_error <= 2e-11
    assert np.max(np.abs(alpha - alpha[0])) <= 2e-10


@pytest.mark.full  # 30 s CPU in a fresh process (two compilations; load 7–10 on 2 cores): over CI's budget
def test_compensated_increments_keep_the_tilt_with_angles_at_150000_radians():
    """nh-rattle-sym, h = 0.005, T = 4 s from its own relative equilibrium, ψ and φ started at
    1.5·10⁵ rad (ulp 2.9e-11). The step's equations see the new node q_k + Δq only to that ulp,
    so Newton stalls there; with ``compensated_newton`` (the model's default option) q and p are
    kept as Kahan sums and Newton is finished at the kept node. Measured max |α − α0|: 2.8e-13
    rad, and 1.1e-11 without (the negative control: the stalled iterates move the tilt)."""
    from dalembert.experiments.eulers_disk import discrete_relative_equilibrium
    model, h = _model(), 0.005
    Om_h = discrete_relative_equilibrium(model, "nh-rattle-sym", h)
    q0 = np.array(model.q0, dtype=float)
    q0[[0, 2]] += 1.5e5
    v0 = tilting_disk.initial_velocity(model.system, q0, Om_h, 0.0, -Om_h * np.sin(model.q0[1]))
    exc = {}
    for comp in (True, False):
        tr = dl.integrate(model.system, "nh-rattle-sym", q0=q0, v0=v0, h=h, t_final=4.0, progress=False,
                          compensated_newton=comp)
        alpha = ed.tilt(tr.q)
        exc[comp] = np.max(np.abs(alpha - alpha[0]))
    assert exc[True] <= 2e-12, exc
    assert exc[False] >= 4e-12, exc


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_relative_equilibrium_kept_briefly():
    """nh-rattle-4, h = 0.002, T = 10 s from its own relative equilibrium Ω_h (measured Ω_h/Ω − 1 =
    1.25e-4): α's excursion and the drift of α and Ω stay small (measured 1.9e-14, 5.6e-16 rad,
    2.2e-16 relative at T = 10 s; 1.1e-12, 7.0e-13, 7.4e-13 before the D* step kept q and p as
    compensated increments; 1.3e-10, 7.6e-11, 4.0e-10 before it solved for Δq); from the
    continuous Ω the nutation would be 4.6e-5 rad."""
    dOm, exc, da, dO = _kept(10.0, 0.002)
    assert dOm <= 1e-3 and exc <= 1e-8 and da <= 1e-8 and dO <= 1e-8


@pytest.mark.full
def test_relative_equilibrium_kept_for_ten_thousand_seconds():
    """nh-rattle-4, h = 0.005, T = 10⁴ s (2·10⁶ steps, 268 s CPU at load 11 on 2 cores) from its own
    relative equilibrium: measured excursion of α 8.5e-11 rad, drift of α 5.2e-11 rad and of Ω
    5.2e-11 relative (bounds ≈ 6× these), most of it where ψ passes 2¹⁷ rad (ulp 2.9e-11). Before
    the step kept q and p as compensated increments and finished Newton at the kept node
    (docs/long_runs.md): 3.0e-7, 2.3e-7, 2.3e-7, from t = 4000 s on (ψ past 2¹⁶ rad); before it
    solved for Δq = q_{k+1} − q_k: 1.1e-6, 9.6e-7, 2.7e-6."""
    dOm, exc, da, dO = _kept(1.0e4, 0.005, save_every=10)
    assert exc <= 5e-10 and da <= 3e-10 and dO <= 3e-10


@pytest.mark.full
def test_energy_balance_converges_at_order_four_with_the_air_layer():
    """With μ = 1e-3 Pa·s over 2 s: max |E − E₀ − W| of nh-rattle-4 at h = 0.004, 0.002, 0.001
    (measured 8.1e-4, 5.8e-5, 3.8e-6: order 3.9); W is what the energy lost (negative control:
    E − E₀ alone is 0.19 J)."""
    model = _model(air_viscosity=1e-3)
    res = []
    for h in (0.004, 0.002, 0.001):
        tr = dl.integrate(model.system, "nh-rattle-4", q0=model.q0, v0=model.v0, h=h, t_final=2.0, progress=False)
        res.append(np.max(np.abs(tr.energy_balance_residual)))
        assert tr.work[-1] < -0.1 and np.all(np.diff(tr.work) <= 1e-15)
    order = np.polyfit(np.log([0.004, 0.002, 0.001]), np.log(res), 1)[0]
    print("balance", order, res)
    assert abs(order - 4.0) <= 0.3, res


@pytest.mark.full
def test_moffatt_exponents():
    """The ladder from α = 0.2 to 0.05 (μ = 3e-4 Pa·s): α ∝ (t₀ − t)^p, Ω ∝ (t₀ − t)^q fitted over
    three windows: measured p = 0.334, 0.337, 0.336, q = −0.161, −0.170, −0.162; t₀ within 4 % of
    the quasi-steady law's."""
    from dalembert.experiments.eulers_disk import moffatt_run, singularity_fits
    run = moffatt_run(3e-4, 0.05, c=0.03)
    fits = singularity_fits(run, [(0.15, 0.05), (0.1, 0.05), (0.15, 0.08)])
    t0q = ed.singularity_time(run["params"], 0.2)
    print("moffatt", fits, t0q)
    for f in fits:
        assert abs(f["p_alpha"] - 1 / 3) <= 0.02 and abs(f["q_Omega"] + 1 / 6) <= 0.02, fits
        assert abs(f["t0_alpha"] / t0q - 1.0) <= 0.06, fits


def test_air_layer_force_power_is_moffatts_dissipation():
    """f·q̇ = −Φ = −π μ a³ Ω²/(4α) at a relative equilibrium; and Φ = π μ a² g/(α sin α) there
    (Ω² sin α = 4g/a), Moffatt's π μ a² g/α² for small α."""
    p = {"alpha": 0.05, "a": 0.5, "m": 1.0, "g": 9.81, "air_viscosity": 1.8e-5}
    model = _model(**p)
    f = np.asarray(ed.air_layer_force(model.params)(model.q0, model.v0, 0.0))
    phi = float(ed.dissipation(model.params, model.q0, model.v0))
    assert np.isclose(f @ model.v0, -phi, rtol=1e-14)
    assert np.isclose(phi, np.pi * 1.8e-5 * 0.25 * 9.81 / (0.05 * np.sin(0.05)), rtol=1e-12)
    assert model.exact_solution is None and model.system.has_force


def test_compensated_newton_and_kept_matrices_are_not_taken_together():
    """The two Newton options exclude each other: one line that says so (no compile)."""
    model = _model()
    with pytest.raises(dl.InputError, match="compensated_newton"):
        dl.methods.get("nh-rattle-sym").build(model.system, np.asarray(model.q0), compensated_newton=True,
                                              jacobian_reuse=4)
