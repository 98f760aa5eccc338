"""The rattleback (model ``rattleback``: Kane & Levinson 1982, PyDy's example) over long times.

* ``rattleback``: (1) conservative, spun with body ω₃ = −5 rad/s: the energy-conserving discrete
  gradient ``dg-gonzalez`` keeps the energy to round-off over t = 25 s (quick) or 1000 s (full)
  and (full) the symmetric ``nh-rattle-sym`` keeps it bounded over 1000 s at h = 0.002 (5·10⁵
  steps; the max error over the second half of the run against the first half's, and an absolute
  bound), with repeated spin reversals (the vertical spin n = ω·N_z changes sign again and again:
  the no-slip, dissipation-free rattleback reverses forever, Moffatt & Tokieda 2008) and the
  rolling constraints at round-off; (2) with PyDy's air-resistance torque −σω, σ = 1e-4 N·m·s
  (full), the spin and the energy decay and the energy balance E − E₀ − W stays at round-off
  (discrete gradient); (3) the first reversal time of the method against the independent
  Newton–Euler reference (:func:`dalembert.models.rattleback.newton_euler_solution`) for a few
  initial spins (the default one in the quick version); (4) the spin-reversal instability: the
  growth rate σ of the steady spin n0 about the vertical, from the eigenvalues of the Newton–Euler
  equations linearised there (:func:`spin_spectrum`, ``jax.jacfwd``), against the shift of the first
  reversal between two small initial tilts, Δt_r = ln(ε₁/ε₂)/σ, by the method at h, h/2, h/4 and
  (full) by the Newton–Euler reference, at ω₃(0) = −5 (quick), −3, −2 rad/s.

Garcia & Hubbard's (1988) formula for the first reversal time (in Kondo & Nakanishi's 2017 form,
Phys. Rev. E 95, 062207, arXiv:1704.06717) is not checked: only the papers' abstracts were at hand
to this experiment's authors (the stored copies of arXiv:1704.06717 searched gave no equations),
and the formula is not derived here. The check (4) tests the linear instability that sets the
reversal's time scale instead: t_r ≈ ln(A/ε)/σ, whose ε-dependence is free of the unknown A.
"""
from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from .. import models
from ..engine.run import integrate
from ..models import rattleback as rb
from ..plots import plt, save_figure
from .base import check_below, check_range, experiment

PAPER = ("T. R. Kane, D. A. Levinson, Realistic mathematical modeling of the rattleback, Int. J. Non-Linear "
         "Mech. 17 (1982) 175–186; PyDy examples/rattleback")
#: the energy-conserving method, the symmetric one; their steps h (s) (nh-rattle-sym's Newton
#: iteration diverges at h = 0.005 near the first reversal, t = 3.2 s)
ENERGY_METHOD, SYMMETRIC_METHOD = "dg-gonzalez", "nh-rattle-sym"
H, H_SYMMETRIC = 0.005, 0.002
#: the symmetric method's bounds in the full version (1000 s at H_SYMMETRIC): max |E − E₀|/E₀ over
#: the run, and the ratio of the max over the second half to the max over the first half (a drift
#: linear in t from a zero start gives 2; the bound does not catch a √t growth, ratio √2)
SYMMETRIC_ENERGY_BOUND, SYMMETRIC_HALVES_BOUND = 0.25, 1.5


def vertical_spin(q, v) -> np.ndarray:
    """n = ω·N_z (N,) (rad/s): the vertical component of the angular velocity (N_z down, so the
    default spin ω₃ = −5 rad/s about the body axis e₃, which points down at rest, gives n ≈ −5) at
    the nodes q, v (N, 5)."""
    def one(qk, vk):
        return rb.rotation(qk)[2, :] @ (rb.angular_velocity_map(qk) @ vk)
    return np.asarray(jax.jit(jax.vmap(one))(jnp.asarray(q), jnp.asarray(v)))


def reversals(t, n, threshold: float = 1.0) -> np.ndarray:
    """The times (s) at which the spin n (N,) changes sign, with hysteresis: a reversal counts once
    |n| ≥ ``threshold`` (rad/s) on the other side (the fast pitch/roll oscillations near a
    reversal then add none); its time is the last zero crossing before that, interpolated."""
    out, side, last_zero = [], 0, None
    for k in range(len(n)):
        if k and n[k - 1] * n[k] < 0:
            last_zero = t[k - 1] + (t[k] - t[k - 1]) * n[k - 1] / (n[k - 1] - n[k])
        if abs(n[k]) >= threshold:
            s = 1 if n[k] > 0 else -1
            if side and s != side and last_zero is not None:
                out.append(last_zero)
            side = s
    return np.array(out)


def first_reversal_reference(p, q0, v0, t_max: float, dt: float = 0.002, threshold: float = 1.0) -> float:
    """The first reversal (:func:`reversals`) of the vertical spin of the Newton–Euler reference
    (DOP853, rtol = atol = 1e-12), sampled every ``dt`` and interpolated: the run stops when n
    reaches ``threshold`` (rad/s) on the side opposite to n(0), and the time is the last zero
    crossing before that; nan if none before ``t_max``."""
    spin = lambda y: rb._quat_to_matrix(y[:4])[2, :] @ y[4:7]            # noqa: E731
    target = -np.sign(vertical_spin(np.asarray(q0)[None], np.asarray(v0)[None])[0]) * threshold

    def event(t, y):
        return spin(y) - target
    event.terminal = True
    t = np.arange(0.0, t_max + dt / 2, dt)
    y, dense = rb.newton_euler_solution(p, q0, v0, t, rtol=1e-12, atol=1e-12, events=event)
    n = np.array([spin(yk) for yk in y])
    if dense.t_max < t_max - dt / 2:                  # stopped at the event: add its node
        t, n = np.append(t[:len(n)], dense.t_max), np.append(n, target)
    r = reversals(t[:len(n)], n, threshold)
    return float(r[0]) if len(r) else float("nan")


def spin_spectrum(p, n0: float) -> np.ndarray:
    """The eigenvalues (6,) (1/s, complex, largest real part first) of the steady spin n0 (rad/s)
    about the vertical (body axis e₃ vertical, μ = e₃, ω = n0 e₃: a relative equilibrium of the
    rolling body): the Jacobian (``jax.jacfwd``) of the closed Newton–Euler equations in (μ, ω)
    (:func:`dalembert.models.rattleback.newton_euler_vertical_rhs`) at that state. Two are zero (|μ|
    is conserved, and n0 is a family of equilibria); the other four are the pitching and rolling
    oscillations, ±i·(their frequencies) at n0 = 0, to which the spin gives real parts of opposite
    signs (one grows, one decays): the instability behind the spin reversal (the linear analysis of
    G. T. Walker, Q. J. Pure Appl. Math. 28 (1896) 175). The equations are reversible (t → −t,
    ω → −ω), so the spectrum at −n0 is minus that at n0. Raises nothing; n0 in rad/s."""
    f = rb.newton_euler_vertical_rhs(p, jnp)
    jac = jax.jacfwd(lambda x: jnp.concatenate(f(x[:3], x[3:])))
    lam = np.linalg.eigvals(np.asarray(jac(jnp.array([0.0, 0.0, 1.0, 0.0, 0.0, n0]))))
    return lam[np.argsort(-lam.real, kind="stable")]


def spin_growth_rate(p, n0: float) -> float:
    """σ (1/s): the largest real part of :func:`spin_spectrum`, the e-folding rate of the
    pitching/rolling amplitude started from a small tilt ε about the steady spin n0. The first
    reversal then comes at t_r ≈ ln(A/ε)/σ with A the amplitude at which the spin reverses
    (independent of ε while ε ≪ A), so two tilts ε₁ > ε₂ reverse Δt = ln(ε₁/ε₂)/σ apart."""
    return float(spin_spectrum(p, n0)[0].real)


#: the initial tilts (roll = pitch, rad) of the two runs whose first reversals differ by ln(ε₁/ε₂)/σ;
#: the default 0.5° is outside the linear regime (Δt from 0.5° to 0.05° is 0.928 s at ω₃(0) = −5
#: rad/s against ln 10/σ = 1.086 s)
EPS_LINEAR = (float(np.deg2rad(0.05)), float(np.deg2rad(0.005)))


def _first_reversal_method(model, q0, v0, h, t_max):
    tr = integrate(model.system, ENERGY_METHOD, q0=q0, v0=v0, h=h, t_final=h * np.ceil(t_max / h), progress=False)
    r = reversals(tr.t, vertical_spin(tr.q, tr.v))
    return float(r[0]) if len(r) else float("nan")


def growth_rate_checks(model, spins, reference: bool):
    """(checks, data): for each ω₃(0) = −w0 in ``spins`` the first reversals from the tilts
    EPS_LINEAR by the method (h = H, H/2, H/4) and, if ``reference``, by the Newton–Euler reference;
    their difference against ln(ε₁/ε₂)/σ with σ = :func:`spin_growth_rate` at n0 = −w0."""
    checks, data = [], []
    p, e1, e2 = model.params, EPS_LINEAR[0], EPS_LINEAR[1]
    for w0 in spins:
        sigma = spin_growth_rate(p, -w0)
        dt_lin = np.log(e1 / e2) / sigma
        row = {"omega0": w0, "sigma": sigma, "sigma_over_spin": sigma / w0, "dt_linear": dt_lin}
        t_max = 3.0 * dt_lin + 4.0
        states = [rb.initial_state(model.system, p, roll=e, pitch=e, omega=(0.0, 0.0, -w0)) for e in (e1, e2)]
        for key, h in (("method_h", H), ("method_h2", H / 2), ("method_h4", H / 4)):
            t = [_first_reversal_method(model, q0, v0, h, t_max) for q0, v0 in states]
            row[key] = {"h": h, "t_first": t, "dt": t[1] - t[0]}
        dm = row["method_h4"]["dt"]
        checks.append(check_below(
            f"ω₃(0) = −{w0:g} rad/s, tilt {np.rad2deg(e1):g}° → {np.rad2deg(e2):g}°: |Δt_r({ENERGY_METHOD}, "
            f"h = {H / 4:g}) − ln(ε₁/ε₂)/σ| / (ln(ε₁/ε₂)/σ), σ = {sigma:.4f}/s (ln(ε₁/ε₂)/σ = {dt_lin:.4f} s)",
            abs(dm - dt_lin) / dt_lin, 0.015,
            "linear stability of the steady spin (eigenvalues of the Newton–Euler Jacobian by jax.jacfwd): the "
            "tilt grows as e^{σt}; the bound adds the linear theory's error (≤ 4.3e-3, below) and the method's "
            "at h/4 (≤ 6.5e-3, below); measured 5.4e-3, 4.7e-3, 6.3e-3 at −5, −3, −2 rad/s (at h = "
            f"{H:g}: 9.0e-2, 7.4e-2, 7.4e-2, h·Ω_roll = 0.54)"))
        if reference:
            t = [first_reversal_reference(p, q0, v0, t_max) for q0, v0 in states]
            row["reference"] = {"t_first": t, "dt": t[1] - t[0]}
            dr = t[1] - t[0]
            checks.append(check_below(
                f"ω₃(0) = −{w0:g} rad/s: |Δt_r(Newton–Euler) − ln(ε₁/ε₂)/σ| / (ln(ε₁/ε₂)/σ)",
                abs(dr - dt_lin) / dt_lin, 0.01,
                "the linear theory's error: nonlinear terms while the tilt is small, the decaying mode, the "
                "detection of the zero crossing; measured 4.3e-3, 2.6e-4, 2.0e-4 at −5, −3, −2 rad/s (and "
                "1.1e-3, 1.1e-4, 1.7e-3 for 0.005° → 0.0005°; 0.15 for 0.5° → 0.05°)"))
            checks.append(check_below(
                f"ω₃(0) = −{w0:g} rad/s: |Δt_r({ENERGY_METHOD}, h = {H / 4:g}) − Δt_r(Newton–Euler)| / Δt_r(Newton–Euler)",
                abs(dm - dr) / dr, 0.015,
                f"the method's error in the growth rate; measured 1.1e-3, 4.4e-3, 6.5e-3 at −5, −3, −2 rad/s "
                f"(h = {H / 2:g}: 6.4e-3, 1.9e-2, 2.0e-2; h = {H:g}: 8.6e-2, 7.4e-2, 7.4e-2)"))
        data.append(row)
    return checks, data


def _run(model, method, h, T, save_every):
    c0 = time.process_time()
    tr = integrate(model.system, method, q0=model.q0, v0=model.v0, h=h, t_final=T, progress=False,
                   save_every=save_every)
    return tr, time.process_time() - c0


def energy_error_spread(t, energy) -> dict:
    """How the relative energy error e = (E − E₀)/|E₀| of a run spreads over time, from its nodes
    t (N,) (s) and energies (N,) (J): max |e| over the first tenth, the last tenth, the first half
    (t ≤ t_N/2), the second half, over [0, T'] for T' = 100 and 500 s within the run, and the
    slope (1/s) of the least-squares line through e(t) (a secular drift shows as a slope whose
    change over the run, slope·t_N, is comparable to max |e|; a bounded oscillation as a small or
    sign-changing one). Raises nothing; t must be increasing."""
    t, e = np.asarray(t, float), (np.asarray(energy, float) - energy[0]) / abs(float(energy[0]))
    a, w = np.abs(e), max(1, len(e) // 10)
    first = t <= t[-1] / 2
    out = {"energy_error_max": float(a.max()), "energy_error_first_tenth": float(a[:w].max()),
           "energy_error_last_tenth": float(a[-w:].max()), "energy_error_first_half": float(a[first].max()),
           "energy_error_second_half": float(a[~first].max()) if (~first).any() else 0.0,
           "energy_error_slope": float(np.polyfit(t, e, 1)[0]) if len(t) > 1 else 0.0}
    for span in (100.0, 500.0):
        if t[-1] >= span:
            out[f"energy_error_max_to_{span:g}"] = float(a[t <= span].max())
    return out


def _summary(tr, cpu, h):
    n = vertical_spin(tr.q, tr.v)
    rev = reversals(tr.t, n)
    return n, {"h": h, "T": float(tr.t[-1]), "cpu_s": cpu, "loop_wall_s": tr.metadata.get("wall_time_s"),
               "compile_s": tr.metadata.get("compile_time_s"), **energy_error_spread(tr.t, tr.energy),
               "reversals": int(len(rev)), "first_reversals": [float(x) for x in rev[:6]],
               "constraint": tr.max_constraint_residual, "newton": tr.metadata.get("newton")}


# quick with the growth-rate check (4): 33 s CPU measured (compilation cache warm); (4) in full: 117 s CPU;
# full: 1157 s CPU, 35 min wall at load 7–14 on 2 cores (nh-rattle-sym over 1000 s: 862 s of it)
@experiment("rattleback", "The rattleback over long times: energy, repeated spin reversals, friction", PAPER,
            quick_in_ci=False)   # quick: 40 s CPU measured (20 s the first compile of dg-gonzalez on this model)
def rattleback(quick, out):
    """Conservative: dg-gonzalez keeps the energy to round-off, nh-rattle-sym keeps it bounded, the
    spin reverses again and again (t = 25 s quick, 1000 s full); with σ = 1e-4 the spin decays (full);
    the first reversal time against the Newton–Euler reference."""
    checks, data, series = [], {}, {}
    model = models.get("rattleback")
    T_run = T = 25.0 if quick else 1000.0
    save = 1 if quick else 20
    src_round = "discrete gradient (Gonzalez 1996): E_{k+1} = E_k up to the Newton tolerance"
    # nh-rattle-sym over 1000 s: 5·10⁵ steps, 576 s CPU measured at load 10–12 on 2 cores with a warm
    # compilation cache (1.15 ms a step; 0.63 ms at load ~1), 862 s with a cold one (149 s wall to compile)
    runs = [(ENERGY_METHOD, H, T)] + ([] if quick else [(SYMMETRIC_METHOD, H_SYMMETRIC, T)])
    for method, h, T in runs:
        tr, cpu = _run(model, method, h, T, save)
        n, s = _summary(tr, cpu, h)
        data[method] = s
        series[method] = (tr.t, n, tr.energy)
        checks.append(check_below(f"{method}, h = {h}, T = {T:g} s: max |E − E₀|/E₀",
                                  s["energy_error_max"],
                                  (1e-12 if quick else 2e-11) if method == ENERGY_METHOD else SYMMETRIC_ENERGY_BOUND,
                                  src_round + "; measured 9.1e-14 (25 s), 5.3e-12 (1000 s: 2.8e-13 in the first "
                                  "100 s, 1.5e-12 in the first 500, round-off accumulating over 2·10⁵ steps)" if method == ENERGY_METHOD else
                                  "symmetric: bounded, not conserved (h·Ω_roll = 0.21, the rolling mode at 107 "
                                  "rad/s); measured 0.106 over 1000 s (at t = 254.5 s; 4.2e-2 over the first 100 s, "
                                  "0.106 over the first 500 s)"))
        checks.append(check_below(f"{method}: max constraint residual |μ(q) v| (m/s, at the saved nodes)",
                                  s["constraint"], 1e-12, "measured over 1000 s: 1.8e-15 (dg-gonzalez), 5.3e-14 "
                                  "(nh-rattle-sym)"))
        checks.append(check_range(f"{method}: spin reversals (sign changes of n = ω·N_z, |n| ≥ 1 rad/s between)",
                                  s["reversals"], 2 if quick else int(T / 50), 10 ** 6,
                                  "no slip, no dissipation: reversals without end (Moffatt & Tokieda 2008); "
                                  "measured over 1000 s: 111 (dg-gonzalez), 129 (nh-rattle-sym)", fmt="{:d}"))
        if method == SYMMETRIC_METHOD:
            checks.append(check_below(
                f"{method}: max |E − E₀|/E₀ over the second half ({T / 2:g}–{T:g} s) / over the first half "
                "(bounded, no secular drift)",
                s["energy_error_second_half"] / s["energy_error_first_half"], SYMMETRIC_HALVES_BOUND,
                "symmetric method: the error oscillates (modified energy) without drift; a drift linear in t gives "
                "2; measured 0.281 (2.97e-2 over the second half, 0.106 over the first; least-squares slope of "
                "(E − E₀)/E₀: −6.1e-5/s)", fmt="{:.3f}"))
    # friction
    if not quick:
        mf = models.get("rattleback", friction=1e-4)
        Tf = 200.0
        tr, cpu = _run(mf, ENERGY_METHOD, H, Tf, save)
        n = vertical_spin(tr.q, tr.v)
        w = max(1, len(n) // 10)
        rev = reversals(tr.t, n)
        data["friction"] = {"sigma": 1e-4, "method": ENERGY_METHOD, "h": H, "T": Tf, "cpu_s": cpu,
                            "energy_start": float(tr.energy[0]), "energy_end": float(tr.energy[-1]),
                            "spin_max_first_tenth": float(np.abs(n[:w]).max()),
                            "spin_max_last_tenth": float(np.abs(n[-w:]).max()),
                            "reversals": int(len(rev)), "balance": tr.max_energy_balance_residual,
                            "energy_monotone": bool(np.all(np.diff(tr.energy) <= 1e-15))}
        series["friction"] = (tr.t, n, tr.energy)
        checks += [
            check_below(f"σ = 1e-4, {ENERGY_METHOD}, T = {Tf:g} s: max |n| of the last tenth / of the first tenth",
                        data["friction"]["spin_max_last_tenth"] / data["friction"]["spin_max_first_tenth"], 0.1,
                        "PyDy's torque −σω: the spin decays", fmt="{:.3f}"),
            check_below("… energy balance max |E − E₀ − W| (J)", data["friction"]["balance"], 1e-12, src_round),
            check_range("… the energy never increases", float(data["friction"]["energy_monotone"]), 1.0, 1.0,
                        "−σ|ω|² ≤ 0", fmt="{:.0f}")]
    # first reversal: method against the Newton–Euler reference
    spins = (5.0,) if quick else (5.0, 3.0, 2.0)
    first = []
    for w0 in spins:
        q0, v0 = rb.initial_state(model.system, model.params, omega=(0.0, 0.0, -w0))
        t_ref = first_reversal_reference(model.params, q0, v0, 30.0 / w0)
        if quick and w0 == 5.0:        # the model's own initial state: the run above, every step saved
            r = np.array(data[ENERGY_METHOD]["first_reversals"])
        else:
            tr = integrate(model.system, ENERGY_METHOD, q0=q0, v0=v0, h=H,
                           t_final=H * np.ceil(min(T_run, 1.5 * t_ref + 1.0) / H), progress=False)
            r = reversals(tr.t, vertical_spin(tr.q, tr.v))
        t_m = float(r[0]) if len(r) else float("nan")
        first.append({"omega0": w0, "t_reference": t_ref, "t_method": t_m})
        checks.append(check_below(f"ω₃(0) = −{w0:g} rad/s: first reversal, |{ENERGY_METHOD} (h = {H}) − "
                                  f"Newton–Euler| / Newton–Euler ({t_ref:.3f} s)",
                                  abs(t_m - t_ref) / t_ref if np.isfinite(t_m) else np.inf, 0.1,
                                  "independent reference: body-frame Newton–Euler, DOP853; measured 1.8e-2, "
                                  "3.7e-2, 5.5e-2 at ω₃(0) = −5, −3, −2 rad/s (the step's error in the time "
                                  "of the reversal)"))
    data["first_reversal"] = first
    # the growth rate of the instability against the shift of the first reversal with the tilt
    c, data["growth_rate"] = growth_rate_checks(model, (5.0,) if quick else (5.0, 3.0, 2.0), reference=not quick)
    checks += c
    # figure
    fig, ax = plt.subplots(1, 2, figsize=(13, 4.2))
    for key, (t, n, E) in series.items():
        s = max(1, len(t) // 20000)
        ax[0].plot(t[::s], n[::s], lw=0.5, label=key if key != "friction" else f"{ENERGY_METHOD}, σ = 1e-4")
        if key != "friction":
            ax[1].semilogy(t[::s], np.maximum(np.abs(E[::s] - E[0]) / abs(E[0]), 1e-17), lw=0.5, label=key)
    ax[0].set_xlabel("t [s]")
    ax[0].set_ylabel("n = ω·N_z [rad/s]")
    ax[0].legend(fontsize=7)
    ax[1].set_xlabel("t [s]")
    ax[1].set_ylabel("|E − E₀| / E₀")
    ax[1].legend(fontsize=7)
    for a in ax:
        a.grid(alpha=0.3)
    figs = [save_figure(fig, out / "rattleback.png")]
    notes = (f"h = {H} s ({ENERGY_METHOD}), {H_SYMMETRIC} s ({SYMMETRIC_METHOD}); energies and residuals at the saved nodes (every "
             f"{save} steps). CPU s: the integrate call, compile included. The first reversal against "
             "Garcia & Hubbard's (1988) formula is not checked (the formula was not available here); "
             "the growth rate σ of the linearised steady spin is, against the shift of the first reversal "
             f"between the tilts {np.rad2deg(EPS_LINEAR[0]):g}° and {np.rad2deg(EPS_LINEAR[1]):g}°.")
    return checks, figs, data, notes
