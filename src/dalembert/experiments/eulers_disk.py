"""Euler's disk (model ``eulers-disk``): the relative equilibrium Ω² sin α = 4g/a kept by a
structure-preserving method, and Moffatt's finite-time singularity with the viscous air layer.

* ``eulers-disk``: (1) the relative equilibrium (α = 0.3 rad, a = 0.5 m, m = 1 kg) of nh-rattle-4:
  the precession rate Ω_h at which its one-step map keeps the tilt (near Ω of Ω² sin α = 4g/a; started
  at the continuous Ω instead, the discrete motion circles Ω_h with a nutation of the size of their
  difference), kept over t = 20 s (quick) or 10⁴ s (full): the excursion of α and Ω and their drift
  (the change of their means between the first and last tenth of the run); (2) with the air layer
  (H. K. Moffatt, Nature 404, 833–834 (2000)), a ladder of fixed steps h ≈ c/Ω(α) from α = 0.2 rad
  toward the singularity, each rung stopped by a terminal event when α reaches the next level; the
  fitted exponents of α = A (t₀ − t)^p and Ω = B (t₀ − t)^q (t₀ fitted too) over windows of α, against
  p = 1/3 and q = −1/6, and t₀ against the quasi-steady law of :mod:`dalembert.models.eulers_disk`;
  the energy balance E − E₀ − W of the forced run.
"""
from __future__ import annotations

import numpy as np

from .. import models
from ..engine.run import integrate
from ..models import eulers_disk as ed
from ..plots import plt, save_figure
from .base import check_below, check_range, experiment

PAPER = "H. K. Moffatt, Euler's disk and its finite-time singularity, Nature 404, 833–834 (2000)"

#: the disk of the singularity runs: a = 0.5 m, m = 1 kg, α0 = 0.2 rad; μ (Pa·s) quick / full
MOFFATT = {"alpha": 0.2, "a": 0.5, "m": 1.0, "g": 9.81}


def drift(series, fraction: float = 0.1) -> float:
    """The change of the mean of a node series (N,) between its first and last ``fraction``."""
    w = max(1, int(len(series) * fraction))
    return float(np.mean(series[-w:]) - np.mean(series[:w]))


def discrete_relative_equilibrium(model, method: str, h: float, iterations: int = 4) -> float:
    """Ω_h (rad/s): the precession rate whose state (the model's q0, ψ̇ = Ω_h, ϑ̇ = 0, φ̇ = −Ω_h sin ϑ,
    the centre at rest) the method's one-step map returns at the same tilt (ϑ_1 = ϑ_0): the method's
    own relative equilibrium, by Newton's method with a difference quotient (one step per call)."""
    q0, th = model.q0, float(model.q0[1])

    def lean_change(Om):
        v0 = ed.tilting_disk.initial_velocity(model.system, q0, Om, 0.0, -Om * np.sin(th))
        return float(integrate(model.system, method, q0=q0, v0=v0, h=h, t_final=h, progress=False).q[1, 1] - th)
    Om = float(model.v0[0])
    for _ in range(iterations):
        f, d = lean_change(Om), 1e-5 * Om
        if f == 0.0:
            break
        Om -= f * d / (lean_change(Om + d) - f)
    return Om


def moffatt_run(mu: float, alpha_end: float, *, method: str = "nh-rattle-4", c: float = 0.02, rungs: int = 4,
                alpha0: float = MOFFATT["alpha"]):
    """The disk with air viscosity ``mu`` from its relative equilibrium at ``alpha0`` to α =
    ``alpha_end``: ``rungs`` fixed-step runs, the k-th with h = c/Ω at its final level α_k (the
    levels geometric from alpha0 to alpha_end; h rounded down to 1, 2, 5 × 10^j), each ended by a
    terminal event α = α_k and continued from its last node before the event (every rung starts
    at t0 = 0 of its own clock: one compilation). Returns {"t", "q", "v", "work", "energy",
    "balance" (max relative E − E₀ − W per rung), "steps", "h"} with t (N,) s, q, v (N, 5)."""
    p = dict(MOFFATT, alpha=alpha0, air_viscosity=mu)
    model = models.get("eulers-disk", **p)
    q, v, t, W = model.q0, model.v0, 0.0, 0.0
    out = {k: [] for k in ("t", "q", "v", "work", "energy")}
    balance, steps, hs = [], 0, []
    for level in alpha0 * (alpha_end / alpha0) ** (np.arange(1, rungs + 1) / rungs):
        h = ed._round_step(c / ed.steady_rate(level, p["a"], p["g"]))
        span = ed.singularity_time(p, float(ed.tilt(q))) - ed.singularity_time(p, level)
        n = int(np.ceil(1.2 * span / h)) + 20

        def reached(t_, q_, v_, level=level):
            return (0.5 * np.pi - q_[1]) - level
        reached.terminal, reached.direction = True, -1
        tr = integrate(model.system, method, q0=q, v0=v, h=h, t_final=n * h, events=[reached], progress=False)
        if not tr.events or not tr.events[0]["t"]:
            raise RuntimeError(f"eulers-disk: α did not reach {level:.4g} within {n} steps of h = {h:g}")
        k = len(tr.t) - 2                                   # the last node before the event
        out["t"].append(t + tr.t[:k + 1])
        out["q"].append(tr.q[:k + 1])
        out["v"].append(tr.v[:k + 1])
        out["work"].append(W + np.asarray(tr.work[:k + 1]))
        out["energy"].append(np.asarray(tr.energy[:k + 1]))
        balance.append(tr.max_energy_balance_residual)
        steps += k
        hs.append(h)
        q, v, t, W = tr.q[k], tr.v[k], t + float(tr.t[k]), W + float(tr.work[k])
    res = {key: np.concatenate(val) for key, val in out.items()}
    res.update(balance=balance, steps=steps, h=hs, params=p)
    return res


def fit_power(t, y, t0_guess, p_guess):
    """(A, p, t₀) of y = A (t₀ − t)^p by least squares in log y (SciPy), t (N,), y (N,) > 0."""
    from scipy.optimize import least_squares

    def resid(x):
        return np.log(y) - (x[0] + x[1] * np.log(np.maximum(x[2] - t, 1e-300)))
    t0_guess = max(t0_guess, t[-1] + 0.02 * (t[-1] - t[0]))
    x0 = np.array([np.log(np.mean(y)) - p_guess * np.log(t0_guess - np.mean(t)), p_guess, t0_guess])
    r = least_squares(resid, x0, bounds=([-np.inf, -5.0, t[-1] + 1e-9], [np.inf, 5.0, np.inf]), x_scale="jac")
    return float(np.exp(r.x[0])), float(r.x[1]), float(r.x[2])


def singularity_fits(run, windows):
    """Per window (α_hi, α_lo) of the run: the fitted (p, t₀) of α and (q, t₀) of Ω = ψ̇."""
    t, alpha, Om = run["t"], ed.tilt(run["q"]), np.abs(ed.precession_rate(run["v"]))
    t0q = ed.singularity_time(run["params"], run["params"]["alpha"])
    fits = []
    for hi, lo in windows:
        sel = (alpha <= hi) & (alpha >= lo)
        _, p, ta = fit_power(t[sel], alpha[sel], t0q, 1.0 / 3.0)
        _, q, to = fit_power(t[sel], Om[sel], t0q, -1.0 / 6.0)
        fits.append({"window": [hi, lo], "p_alpha": p, "t0_alpha": ta, "q_Omega": q, "t0_Omega": to})
    return fits


@experiment("eulers-disk", "Euler's disk: the relative equilibrium and Moffatt's finite-time singularity", PAPER,
            quick_in_ci=False)   # 40 s in CI: run by `dalembert reproduce --quick` and the full suite
def eulers_disk(quick, out):
    """The relative equilibrium Ω² sin α = 4g/a kept by nh-rattle-4 (excursion and drift of α and
    Ω); with Moffatt's air layer, the exponents of α ∝ (t₀ − t)^{1/3} and Ω ∝ (t₀ − t)^{−1/6} fitted
    over windows of α, t₀ against the quasi-steady law, and the energy balance."""
    checks, data = [], {}
    # (1) the relative equilibrium
    model = models.get("eulers-disk")
    T, h = (10.0, 0.002) if quick else (1.0e4, 0.005)
    Om_h = discrete_relative_equilibrium(model, "nh-rattle-4", h)
    q0, v0 = model.q0, ed.tilting_disk.initial_velocity(model.system, model.q0, Om_h, 0.0,
                                                         -Om_h * np.sin(model.q0[1]))
    tr = integrate(model.system, "nh-rattle-4", q0=q0, v0=v0, h=h, t_final=T, progress=False,
                   save_every=1 if quick else 10, **model.options_for("nh-rattle-4"))  # compensated_newton
    alpha, Om = ed.tilt(tr.q), ed.precession_rate(tr.v)
    a0, O0 = float(alpha[0]), float(Om[0])
    exc_a, exc_O = float(np.max(np.abs(alpha - a0))), float(np.max(np.abs(Om - O0)) / O0)
    dr_a, dr_O = abs(drift(alpha)), abs(drift(Om)) / O0
    data["relative_equilibrium"] = {"T": T, "h": h, "Omega": float(model.v0[0]), "Omega_h": Om_h,
                                    "excursion_alpha": exc_a, "excursion_Omega_rel": exc_O,
                                    "drift_alpha": dr_a, "drift_Omega_rel": dr_O,
                                    "energy_error": tr.max_relative_energy_error,
                                    "constraint": tr.max_constraint_residual}
    checks += [
        check_below(f"nh-rattle-4's relative equilibrium (h = {h}): |Ω_h/Ω − 1|, Ω² sin α = 4g/a",
                    abs(Om_h / float(model.v0[0]) - 1.0), 1e-3 if quick else 1e-2,
                    "measured 1.25e-4 (h = 0.002), 3.8e-3 (h = 0.005)"),
        check_below(f"… kept over T = {T:g} s: max |α − α0| (rad)", exc_a, 1e-8 if quick else 5e-10,
                    "measured 1.9e-14 (T = 10 s, h = 0.002); 8.5e-11 (T = 10⁴ s, h = 0.005; the bound ≈ 6× "
                    "that). Before the D* step kept q, p as compensated increments and finished Newton at the "
                    "kept node: 1.1e-12 and 3.0e-7 (docs/long_runs.md)"),
        check_below("… drift of α (mean of the last tenth − first tenth, rad)", dr_a, 1e-8 if quick else 3e-10,
                    "measured 5.6e-16 (T = 10 s); 5.2e-11 (T = 10⁴ s, most of it where ψ passes 2¹⁷ rad, "
                    "ulp 2.9e-11; before: 7.0e-13 and 2.3e-7, from t = 4000 s on, ψ past 2¹⁶ rad)"),
        check_below("… drift of Ω, relative", dr_O, 1e-8 if quick else 3e-10,
                    "measured 2.2e-16 (T = 10 s); 5.2e-11 (T = 10⁴ s; before: 7.4e-13 and 2.3e-7)"),
        check_below("… constraint residual |μ(q) v| (m/s)", tr.max_constraint_residual, 1e-10 if quick else 1e-13,
                    "measured 2.7e-15 (T = 10 s); 3.6e-15 (T = 10⁴ s; before: 1.0e-13 and 1.1e-10)")]
    # (2) Moffatt's singularity
    mu, alpha_end = (3e-4, 0.05) if quick else (1e-4, 0.02)
    run = moffatt_run(mu, alpha_end, c=0.03 if quick else 0.02)
    windows = ([(0.15, 0.05), (0.1, 0.05), (0.15, 0.08)] if quick else
               [(0.15, 0.02), (0.1, 0.02), (0.15, 0.05), (0.07, 0.02)])
    fits = singularity_fits(run, windows)
    ps = np.array([f["p_alpha"] for f in fits])
    qs = np.array([f["q_Omega"] for f in fits])
    t0q = ed.singularity_time(run["params"], MOFFATT["alpha"])
    t0s = np.array([f["t0_alpha"] for f in fits])
    data["moffatt"] = {"air_viscosity": mu, "alpha_end": alpha_end, "steps": run["steps"], "h": run["h"],
                       "fits": fits, "p_mean": float(ps.mean()), "p_spread": float(np.ptp(ps)),
                       "q_mean": float(qs.mean()), "q_spread": float(np.ptp(qs)), "t0_quasi_steady": t0q,
                       "energy_balance_per_rung": run["balance"]}
    checks += [
        check_range(f"Moffatt: fitted exponent of α (mean of {len(fits)} windows; spread {np.ptp(ps):.3f})",
                    float(ps.mean()), 0.30, 0.37, "Moffatt (2000): 1/3"),
        check_range(f"Moffatt: fitted exponent of Ω (spread {np.ptp(qs):.3f})", float(qs.mean()), -0.19, -0.14,
                    "Moffatt (2000): −1/6"),
        check_range("fitted t₀ / quasi-steady t₀ = 3 m S(α0)/(2π μ a)", float(np.median(t0s) / t0q), 0.9, 1.1,
                    "quasi-steady law (model doc)", fmt="{:.3f}"),
        check_below("energy balance max |E − E₀ − W| / max(E₀, |W|) over the rungs (nh-rattle-4, h = c/Ω)",
                    max(run["balance"]), 1e-2 if quick else 3e-2, "forced discrete Lagrange–d'Alembert, order 4; "
                    "measured 3.6e-3 (quick: c = 0.03, to α = 0.05), 1.2e-2 (full: c = 0.02, to α = 0.02; the last "
                    "rung), converging at order 4 (tests/unit/test_eulers_disk.py)")]
    # figure
    fig, ax = plt.subplots(1, 3, figsize=(14, 4.2))
    s = max(1, len(tr.t) // 4000)
    ax[0].plot(tr.t[::s], alpha[::s] - a0, lw=0.6)
    ax[0].set_xlabel("t [s]")
    ax[0].set_ylabel("α − α0 [rad]")
    ax[0].set_title("relative equilibrium, nh-rattle-4", fontsize=9)
    t, al, Ob = run["t"], ed.tilt(run["q"]), np.abs(ed.precession_rate(run["v"]))
    tf = float(np.median(t0s))
    k = t < tf
    ax[1].loglog(tf - t[k], al[k], lw=0.6, label="α")
    ax[1].loglog(tf - t[k], Ob[k] / 100.0, lw=0.6, label="Ω / 100")
    x = np.array([np.min(tf - t[k][tf - t[k] > 0]), np.max(tf - t[k])])
    ax[1].loglog(x, al[0] * (x / x[-1]) ** (1 / 3), "k--", lw=0.8, label="slope 1/3")
    ax[1].loglog(x, Ob[0] / 100.0 * (x / x[-1]) ** (-1 / 6), "k:", lw=0.8, label="slope −1/6")
    ax[1].set_xlabel("t₀ − t [s]")
    ax[1].set_ylabel("α [rad], Ω/100 [rad/s]")
    ax[1].legend(fontsize=7)
    ax[1].set_title(f"Moffatt's air layer, μ = {mu:g} Pa·s", fontsize=9)
    ax[2].plot(t, al, lw=0.6, label="α, nh-rattle-4 ladder")
    ax[2].plot(t, ed.quasi_steady_tilt(run["params"], MOFFATT["alpha"], t), "k--", lw=0.8, label="quasi-steady law")
    ax[2].set_xlabel("t [s]")
    ax[2].set_ylabel("α [rad]")
    ax[2].legend(fontsize=7)
    for a in ax:
        a.grid(alpha=0.3)
    figs = [save_figure(fig, out / "eulers_disk.png")]
    return checks, figs, data, ("The drift is the change of the means of α and Ω between the first and last "
                                "tenth of the run, started at nh-rattle-4's own relative equilibrium Ω_h (from the "
                                "continuous Ω at h = 0.002 the nutation about it is 4.6e-5 rad). The air-layer force is "
                                "f_ψ = −π μ a³ ψ̇/(4α) (model doc); μ is larger than air's (1.8e-5 Pa·s) to "
                                "keep the run short; the exponents do not depend on μ.")
