"""Experiments of Celledoni, Farré Puiggalí, Høiseth, Martín de Diego, "Energy-preserving
integrators applied to nonholonomic systems" (2019); errata and our reconstructions: docs/theory/celledoni2019.md.

* ``celledoni2019-fig2``: Figure 2, the chaotic quartic system (n = 3): order plot of AVF,
  GONZALEZ, SI-DLA, I-DLA, SPARK at T = 10 (all second order); constraint residual and relative
  energy error along a sample trajectory; the variance over random initial states of H(t) − H(0),
  scaled by h⁻⁴, with the 10⁻⁴ t reference line (§4.1.3, after McLachlan–Perlmutter).
* ``celledoni2019-fig3``: Figure 3 and Proposition 4.1, the Chaplygin sleigh: the eigenvalues
  59/61 and 61/59 of the linearised midpoint/DG map at (0, ±0.6), the flip of ρ₂ from −0.6 to
  +√(0.36 + 10⁻⁶), the conserved ρ₁² + ρ₂², the sign of ρ₁, and the step-size bounds of Prop. 4.1
  and Remark 4.2.
* ``celledoni2019-fig4``: Figure 4, the gearbox at h = 0.1: relative energy error and constraint
  error of GONZALEZ-R, GONZALEZ-F and SI-DLA, with H = T + V (erratum E1, docs/theory/celledoni2019.md#e1) and a
  circulating initial state of our choice (the paper's is unknown; SI-DLA's energy growth depends
  on it: erratum E12, docs/theory/celledoni2019.md#e12).
"""
from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
from matplotlib.ticker import NullFormatter

from .. import models
from ..convergence import fitted_order
from ..engine import ensemble, integrate
from ..models.chaotic_quartic import initial_state as chaotic_initial_state
from ..plots import plt, save_figure
from .base import Check, check_above, check_below, check_range, experiment

PAPER = ("Celledoni, Farré Puiggalí, Høiseth, Martín de Diego, Energy-preserving integrators applied "
         "to nonholonomic systems, J. Nonlinear Sci. 29 (2019) (arXiv:1605.02845)")

#: Figure-2 methods: label -> (registered name, runs on the almost-Poisson form (21))
FIG2_METHODS = {"AVF": ("dg-avf", True), "GONZALEZ": ("dg-gonzalez", True), "SI-DLA": ("si-dla", False),
                "I-DLA": ("i-dla", False), "SPARK": ("spark-lobatto2", False)}
#: our reproduction (docs/theory/celledoni2019.md): ‖q(10) − q_ref(10)‖∞ at h = 0.1, 0.05, 0.025, 0.0125
FIG2_ANCHORS = {"GONZALEZ": [1.073e-2, 2.645e-3, 6.590e-4, 1.646e-4],
                "AVF": [1.177e-2, 2.924e-3, 7.299e-4, 1.824e-4],
                "SI-DLA": [8.886e-3, 2.234e-3, 5.594e-4, 1.399e-4],
                "I-DLA": [1.006e-2, 2.504e-3, 6.252e-4, 1.563e-4],
                "SPARK": [7.714e-3, 1.935e-3, 4.840e-4, 1.210e-4]}
COLORS = {"AVF": "C0", "GONZALEZ": "C1", "SI-DLA": "C2", "I-DLA": "C3", "SPARK": "C4",
          "GONZALEZ-R": "C1", "GONZALEZ-F": "C5"}


def _chaotic_run(model, label, h, t_final, **kw):
    name, on_ap = FIG2_METHODS[label]
    if on_ap:
        ap = model.almost_poisson
        x0 = np.asarray(ap.reduce(jnp.asarray(model.q0), jnp.asarray(model.v0)))
        return integrate(ap, name, x0=x0, h=h, t_final=t_final, progress=False, **kw)
    return integrate(model.system, name, q0=model.q0, v0=model.v0, h=h, t_final=t_final, progress=False, **kw)


def discrete_constraint(system, q, h):
    """|μ(q̄_k)(q_{k+1} − q_k)|/h over consecutive nodes q (N, n) (q̄_k the midpoint), the first
    constraint row of ``system`` (a NonholonomicSystem): (N − 1,). It depends on the steps taken,
    unlike the node constraint of a reduced method's lifted velocity, which is zero by construction."""
    q = jnp.asarray(q, jnp.float64)
    mu = jax.vmap(lambda a: system.constraint_matrix(a)[0])(0.5 * (q[1:] + q[:-1]))
    return np.abs(np.asarray(jnp.sum(mu * (q[1:] - q[:-1]), axis=1))) / h


def _constraint_series(model, label, tr, h):
    """The constraint the checks and the panel show: for I-DLA and the discrete-gradient methods the
    discrete midpoint constraint over consecutive nodes (the DG methods' node velocity is the lift
    of the reduced state, which satisfies μ(q)q̇ = 0 for any state: that residual cannot fail, so it
    is not checked); for SI-DLA and SPARK, which solve for it, the node constraint μ(q)q̇."""
    if label == "I-DLA":
        return np.abs(tr.extra["discrete_constraint"][:, 0]), "discrete μ(q̄)(q'−q)/h"
    if FIG2_METHODS[label][1]:
        return discrete_constraint(model.system, tr.q, h), "discrete μ(q̄)(q'−q)/h"
    return np.abs(tr.constraint_residual[:, 0]), "node μ(q)q̇"


def _chaotic_ensemble(model, label, alphas, h, t_final, save_every):
    name, on_ap = FIG2_METHODS[label]
    q0 = np.empty((alphas.size, 7))
    v0 = np.empty((alphas.size, 7))
    for i, a in enumerate(alphas):
        q0[i], v0[i] = chaotic_initial_state(3, a)
    if on_ap:
        ap = model.almost_poisson
        red = jax.jit(jax.vmap(ap.reduce))
        x0 = np.asarray(red(jnp.asarray(q0), jnp.asarray(v0)))
        return ensemble(ap, name, x0=x0, h=h, t_final=t_final, save_every=save_every, keep=["energy"],
                        progress=False, on_failure="raise")
    return ensemble(model.system, name, q0=q0, v0=v0, h=h, t_final=t_final, save_every=save_every,
                    keep=["energy"], progress=False, on_failure="raise")


@experiment("celledoni2019-fig2", "Figure 2: the chaotic quartic system (orders, constraint, energy, variance)",
            PAPER, "Chaotic quartic nonholonomic system, n = 3, initial states of the H = 3.06 family "
            "(our reconstruction, erratum E10): order plot of the five methods at T = 10, constraint residual and relative energy "
            "error along the α = 0.7 trajectory at h = 0.1, and Var(H(t) − H(0))/h⁴ over random initial "
            "states (α ~ U[0, π/2], seed 1) with the reference line 10⁻⁴ t (§4.1, Figure 2).")
def fig2(quick, out):
    model = models.get("chaotic-quartic", n=3, alpha=0.7)
    checks, data = [], {}
    timings = {}
    # --- panel 1: orders --------------------------------------------------------------------
    hs = np.array([0.1, 0.05, 0.025] if quick else [0.1, 0.05, 0.025, 0.0125])
    T = 10.0
    q_ref = model.solution(np.array([0.0, T]))[0][-1]
    errors = {}
    t0 = time.perf_counter()
    for label in FIG2_METHODS:
        errors[label] = np.array([np.max(np.abs(_chaotic_run(model, label, h, T).q[-1] - q_ref)) for h in hs])
        p = fitted_order(hs, errors[label])
        checks.append(check_range(f"order of {label} (‖q(10) − q_ref‖∞)", p, 1.9, 2.1, "Fig. 2 top left (second order)"))
        anchor = FIG2_ANCHORS[label][0]
        checks.append(check_range(f"{label}: error at h = 0.1 vs our reference value {anchor:.3e} (±5 %)",
                                  errors[label][0], 0.95 * anchor, 1.05 * anchor,
                                  "our reproduction (docs/theory/celledoni2019.md)", fmt="{:.4e}"))
    timings["orders_s"] = time.perf_counter() - t0
    data["orders"] = {"h": hs.tolist(), "errors_q": {k: v.tolist() for k, v in errors.items()},
                      "reference": "DOP853 rtol = atol = 1e-13 on the index-1 ODE"}
    # --- panels 2, 3: a sample trajectory -------------------------------------------------------
    h_s, T_s = 0.1, (100.0 if quick else 1000.0)
    t0 = time.perf_counter()
    sample = {label: _chaotic_run(model, label, h_s, T_s) for label in FIG2_METHODS}
    timings["sample_s"] = time.perf_counter() - t0
    energy_err, cons = {}, {}
    for label, tr in sample.items():
        e = np.abs(tr.energy - tr.energy[0]) / abs(tr.energy[0])
        c, what = _constraint_series(model, label, tr, h_s)
        scale = max(1.0, float(np.max(np.abs(tr.q))))
        energy_err[label], cons[label] = e, (c, what)
        checks.append(check_below(f"{label}: max {what} over t ≤ {T_s:g} (relative to max(1, |q|))",
                                  float(np.max(c)) / scale, 1e-14,
                                  "Fig. 2 top right (constraint at machine precision)"))
        if label in ("AVF", "GONZALEZ"):
            checks.append(check_below(f"{label}: max relative energy error, t ≤ {T_s:g}", float(np.max(e)),
                                      1e-13, "Fig. 2 bottom left; energy-exact (14)"))
        else:
            checks.append(check_above(f"{label}: max relative energy error, t ≤ {T_s:g} (not conserved; "
                                      "our reproduction: 3e-3 … 5e-3 for t ≤ 100)", float(np.max(e)), 1e-4,
                                      "Fig. 2 bottom left"))
    data["sample"] = {"h": h_s, "t_final": T_s, "alpha": 0.7,
                      "max_relative_energy_error": {k: float(np.max(v)) for k, v in energy_err.items()},
                      "max_constraint": {k: float(np.max(v[0])) for k, v in cons.items()}}
    # --- panel 4: variance ---------------------------------------------------------------------
    n_ic, T_v = (20, 200.0) if quick else (200, 1.0e4)
    alphas = np.random.default_rng(1).uniform(0.0, np.pi / 2, n_ic)
    var_labels = ("SI-DLA",) if quick else ("SI-DLA", "I-DLA", "SPARK")
    n_dg, T_dg = (0, 0.0) if quick else (n_ic, T_v)
    variance = {}
    t0 = time.perf_counter()
    for label in var_labels:
        for h in (0.1, 0.05):
            K = 20 if quick else 100     # the same stride in steps for both h: one compiled ensemble
            tv = time.perf_counter()
            ens = _chaotic_ensemble(model, label, alphas, h, T_v, K)
            dE = ens.energy - ens.energy[:, :1]
            variance[(label, h)] = (ens.t, np.var(dE, axis=0) / h ** 4)
            timings[f"variance {label} h={h}_s"] = time.perf_counter() - tv
    dg_var = {}
    if n_dg:
        for h in (0.1, 0.05):
            tv = time.perf_counter()
            ens = _chaotic_ensemble(model, "GONZALEZ", alphas[:n_dg], h, T_dg, 100)
            dE = ens.energy - ens.energy[:, :1]
            dg_var[h] = (ens.t, np.var(dE, axis=0) / h ** 4)
            timings[f"variance GONZALEZ h={h}_s"] = time.perf_counter() - tv
    timings["variance_s"] = time.perf_counter() - t0
    vdata = {}
    for (label, h), (t, v) in variance.items():
        entry = {"t": t[:: max(1, t.size // 200)].tolist(), "var_over_h4": v[:: max(1, t.size // 200)].tolist()}
        if not quick:
            sel = t >= 1000.0
            slope = float(np.polyfit(t[sel], v[sel], 1)[0])
            entry["slope_1e3_1e4"] = slope
            entry["at"] = {str(int(tt)): float(np.interp(tt, t, v)) for tt in (1000.0, 5000.0, 1.0e4)}
            checks.append(check_range(f"{label}, h = {h}: slope of Var(H − H0)/h⁴ for t ∈ [10³, 10⁴] "
                                      f"({n_ic} initial states)", slope, 3e-5, 3e-4,
                                      "Fig. 2 bottom right; §4.1.3 (variance ≈ 10⁻⁴h⁴t)", fmt="{:.2e}"))
        vdata[f"{label} h={h}"] = entry
    if quick:
        for label in var_labels:
            means = []
            for h in (0.1, 0.05):
                t, v = variance[(label, h)]
                means.append(float(np.mean(v[t >= 100.0])))
            checks.append(check_range(f"{label}: mean of Var(H − H0)/h⁴ over t ∈ [100, {T_v:g}] (bounded O(h⁴) "
                                      "oscillation; our reproduction: 0.06–0.09 at t = 100), h = 0.1", means[0], 0.01, 0.5,
                                      "our reproduction (docs/theory/celledoni2019.md)"))
            checks.append(check_range(f"{label}: the same mean, ratio h = 0.1 to h = 0.05 (h⁴ scaling; h² would "
                                      "give 0.25)", means[0] / means[1], 0.4, 2.5,
                                      "§4.1.3 (variance ∝ h⁴)"))
        # DG: the energy error of the sample trajectories is at round-off, so is any variance
        for label in ("AVF", "GONZALEZ"):
            checks.append(check_below(f"{label}: max |H(t) − H0|² along the sample (bounds its variance; round-off, "
                                      "against 10⁻⁴h⁴t ≈ 10⁻⁶ for the comparison methods)",
                                      float(np.max(energy_err[label] * abs(sample[label].energy[0])) ** 2),
                                      1e-25, "Fig. 2 bottom right"))
    else:
        for h, (t, v) in dg_var.items():
            checks.append(check_below(f"GONZALEZ, h = {h}: max Var(H − H0) (unscaled: round-off), {n_dg} states, "
                                      f"t ≤ {T_dg:g}", float(np.max(v)) * h ** 4, 1e-25, "Fig. 2 bottom right (≲ 1e-27)"))
            vdata[f"GONZALEZ h={h}"] = {"t": t.tolist(), "var_over_h4": v.tolist(), "members": n_dg}
    data["variance"] = vdata
    data["variance_setup"] = {"initial_states": n_ic, "t_final": T_v, "seed": 1,
                              "distribution": "alpha ~ U[0, pi/2] (numpy default_rng(1))"}
    data["timings_s"] = timings
    # --- figure -----------------------------------------------------------------------------
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.5))
    ax = axes[0, 0]
    for label, e in errors.items():
        ax.loglog(hs, e, "o-", ms=3, color=COLORS[label], label=f"{label} ({fitted_order(hs, e):.2f})")
    ax.loglog(hs, 1.0 * hs ** 2, "k:", lw=0.8, label="h²")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("h")
    ax.set_ylabel("‖q(10) − q_ref(10)‖∞")
    ax.set_title("global error at T = 10 (α = 0.7)", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    ax = axes[0, 1]
    for label, (c, what) in cons.items():
        t = sample[label].t[-c.size:]           # a discrete constraint: one value per step
        s = max(1, t.size // 3000)
        ax.semilogy(t[::s], np.maximum(c[::s], 1e-19), lw=0.6, color=COLORS[label], label=f"{label}: {what}")
    ax.set_xlabel("t")
    ax.set_ylabel("|constraint (20)|")
    ax.set_title(f"constraint residual, h = {h_s}", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[1, 0]
    for label, e in energy_err.items():
        t = sample[label].t
        s = max(1, t.size // 3000)
        ax.semilogy(t[::s], np.maximum(e[::s], 1e-18), lw=0.6, color=COLORS[label], label=label)
    ax.set_xlabel("t")
    ax.set_ylabel("|(H(t) − H(0))/H(0)|")
    ax.set_title(f"relative energy error, h = {h_s}", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[1, 1]
    for (label, h), (t, v) in variance.items():
        ax.loglog(t[1:], v[1:], "-" if h == 0.1 else "--", lw=0.9, color=COLORS[label], label=f"{label}, h = {h}")
    for h, (t, v) in dg_var.items():
        ax.loglog(t[1:], np.maximum(v[1:], 1e-30), ":", lw=0.9, color=COLORS["GONZALEZ"],
                  label=f"GONZALEZ, h = {h} ({n_dg} states)")
    tt = np.logspace(0, np.log10(T_v), 50)
    ax.loglog(tt, 1e-4 * tt, "k-", lw=0.8, label="10⁻⁴ t")
    ax.set_xlabel("t")
    ax.set_ylabel("Var(H(t) − H(0)) / h⁴")
    ax.set_title(f"variance over {n_ic} initial states (α ~ U[0, π/2])", fontsize=9)
    ax.legend(fontsize=7)
    fig.suptitle("Chaotic quartic nonholonomic system, n = 3 (Celledoni et al. 2019, Fig. 2)", fontsize=10)
    fig.tight_layout()
    notes = ("DG methods (AVF with 8 Gauss–Legendre nodes, GONZALEZ) run on the hand-derived almost-Poisson "
             "form (21); SI-DLA, I-DLA (classical: discrete midpoint constraint) and SPARK on the full system. "
             "The constraint panel shows the node constraint μ(q)q̇ for SI-DLA and SPARK, and the discrete constraint "
             "μ(q̄)(q'−q)/h over consecutive nodes for I-DLA, whose node momentum is not on the constraint (only the "
             "discrete constraint is kept; erratum E11, docs/theory/celledoni2019.md#e11), and for AVF and GONZALEZ, "
             "whose node velocity is the lift of the reduced state and satisfies μ(q)q̇ = 0 for any state (it "
             "cannot show an error of the steps; E14). The variance uses "
             "save_every so that only the energy every 10 time units is kept. ")
    notes += ("Quick version: 20 states, t ≤ 200, SI-DLA only; at such short times the bounded O(h⁴) "
              "oscillation dominates, so the linear growth is not checked. " if quick else
              f"The DG variance is computed for the same {n_dg} states up to t = {T_dg:g}, like the comparison "
              "methods; a DG step on this 13-dimensional form costs ≈ 6–9 µs per member in the ensemble "
              "against 0.2–2 µs for the comparison methods, so the DG rows are most of this experiment's "
              "wall time (benchmarks/results/dg_comparison_speed.md); its variance stays at round-off throughout. ")
    return checks, [save_figure(fig, out / "figure2.png")], data, notes


# ---------------------------------------------------------------------------------------------
# Figure 3 / Proposition 4.1: Chaplygin sleigh
# ---------------------------------------------------------------------------------------------

def sleigh_step_jacobian(ap, method: str):
    """``jac(rho (2,), h) -> (2, 2)``: the Jacobian of the ρ-part of one step of the library's
    ``method`` on the sleigh's almost-Poisson form (x1, x2, θ, ρ1, ρ2) at x = (0, 0, 0, ρ), by
    forward-mode autodiff through the compiled step (its Newton solve by the implicit-function
    theorem). ``method="explicit-euler"``: ζ' = ζ + h Π(ζ)∇𝓗(ζ) on (22) (Remark 4.2), written here
    (no registered method is explicit Euler). The ρ-map does not depend on (x1, x2, θ)."""
    from .. import methods as _methods
    if method == "explicit-euler":
        step = _explicit_euler(ap)
    else:
        scheme = _methods.get(method).build(ap, np.zeros(5))

        def step(x, h):
            return scheme.observe(scheme.step(scheme.init(x, h), h)[0], h)["x"]

    jac = jax.jit(jax.jacfwd(step))

    def rho_jacobian(rho, h):
        x = jnp.concatenate([jnp.zeros(3), jnp.asarray(rho, jnp.float64)])
        return np.asarray(jac(x, jnp.asarray(h, jnp.float64)))[3:, 3:]
    return rho_jacobian


def classification_violations(rho_jacobian, C, rho2s, fractions, bound: float) -> tuple:
    """(violations, points) of "0 < λ1 < 1 iff ρ2 > 0, and the other eigenvalue is 1 with the
    Jacobian diagonal" at (0, ρ2) for h = fraction · bound/(𝒞|ρ2|) (Prop. 4.1: bound 2, the DG/midpoint
    map; Remark 4.2: bound 1, explicit Euler). λ1 = J[0, 0]."""
    bad, n = 0, 0
    for r2 in rho2s:
        for frac in fractions:
            Jm = rho_jacobian([0.0, r2], frac * bound / (C * abs(r2)))
            bad += bool(abs(Jm[1, 1] - 1.0) > 1e-12 or abs(Jm[0, 1]) + abs(Jm[1, 0]) > 1e-12)
            bad += bool((0.0 < Jm[0, 0] < 1.0) != (r2 > 0))
            n += 1
    return bad, n


def sharpness_violations(rho_jacobian, C, rho2s, fractions, bound: float) -> tuple:
    """(violations, points) of "the classification ends at the bound": for ρ2 > 0 and h = fraction ·
    bound/(𝒞ρ2) with fraction ∈ (1, 2), λ1 = J[0, 0] < 0 (the midpoint/DG map of Prop. 4.1, bound 2:
    λ1 = (1 − f)/(1 + f); explicit Euler of Remark 4.2, bound 1: λ1 = 1 − f). A map whose λ1 stays in
    (0, 1) beyond the bound (implicit Euler, a half step of explicit Euler) violates it, so the bound is
    that method's and not merely a sufficient condition another method also meets."""
    bad, n = 0, 0
    for r2 in rho2s:
        if r2 <= 0:
            continue
        for frac in fractions:
            bad += bool(rho_jacobian([0.0, r2], frac * bound / (C * r2))[0, 0] >= 0.0)
            n += 1
    return bad, n


def _explicit_euler(ap):
    """ζ' = ζ + h Π(ζ)∇𝓗(ζ): explicit Euler on (22) (Remark 4.2), ``step(x, h)``."""
    return lambda x, h: x + h * ap.vector_field(x)


def explicit_euler_run(ap, x0, h: float, n_steps: int):
    """Explicit Euler on (22) (Remark 4.2): the nodes (n_steps + 1, 5), one compiled scan."""
    step = _explicit_euler(ap)

    def body(x, _):
        x1 = step(x, h)
        return x1, x1
    _, xs = jax.jit(lambda x: jax.lax.scan(body, x, None, length=n_steps))(jnp.asarray(x0, jnp.float64))
    return np.concatenate([np.asarray(x0, float)[None], np.asarray(xs)])


def stability_grid_checks(dg_jacobian, euler_jacobian, C, rho2s, fractions, beyond) -> list:
    """The Prop. 4.1 (bound 2, the DG step) and Remark 4.2 (bound 1, explicit Euler) grid checks: the
    classification "0 < λ1 < 1 iff ρ2 > 0" at h = f · bound/(𝒞|ρ2|), f ∈ ``fractions`` (below the
    bound), and its end beyond the bound (λ1 < 0 for ρ2 > 0 at f ∈ ``beyond`` ⊂ (1, 2))."""
    out = []
    for name, jac, bound, claim in (
            ("Prop. 4.1", dg_jacobian, 2.0, "0 < λ1 < 1 iff ρ2 > 0 for h < 2/(𝒞|ρ2|), and λ1 < 0 for ρ2 > 0 "
                                           "beyond it (h𝒞ρ2 ∈ (2, 4)), on a grid (dg-gonzalez step)"),
            ("Remark 4.2", euler_jacobian, 1.0, "explicit Euler λ1 ∈ (0, 1) iff ρ2 > 0 for h < 1/(𝒞|ρ2|), "
                                                "and λ1 < 0 for ρ2 > 0 beyond it (h𝒞ρ2 ∈ (1, 2)), on a grid")):
        bad, n = classification_violations(jac, C, rho2s, fractions, bound)
        bad_b, n_b = sharpness_violations(jac, C, rho2s, beyond, bound)
        out.append(Check(f"{name}: {claim}", "0 violations", f"{bad + bad_b} of {n + n_b}", bad + bad_b == 0, name))
    return out


@experiment("celledoni2019-fig3", "Figure 3 and Proposition 4.1: the Chaplygin sleigh",
            PAPER, "Midpoint/DG scheme (23) on the sleigh (J = 8, a = m = 1, h = 0.5) from (ρ1, ρ2) = (±10⁻³, "
            "−0.6): convergence to the stable equilibrium ρ2 = +√(0.36 + 10⁻⁶); eigenvalues 59/61 and 61/59 at "
            "(0, ±0.6); Prop. 4.1 and Remark 4.2 on a grid of step sizes.")
def fig3(quick, out):
    model = models.get("chaplygin-sleigh", J=8.0, a=1.0, m=1.0)
    ap = model.almost_poisson
    C = 1.0 / 9.0
    h = 0.5
    T = 400.0
    checks, data = [], {}
    runs = {}
    for r1 in (1e-3, -1e-3):
        x0 = np.array([-5.0, 0.0, 0.1, r1, -0.6])
        runs[r1] = integrate(ap, "implicit-midpoint", x0=x0, h=h, t_final=T, progress=False)
    target = np.sqrt(0.36 + 1e-6)
    for r1, tr in runs.items():
        rho = tr.x[:, 3:]
        i300 = int(round(300.0 / h))
        tag = f"ρ1(0) = {r1:+.0e}"
        checks.append(check_below(f"{tag}: |ρ1| at t = 300", float(abs(rho[i300, 0])), 1e-5, "Fig. 3, Prop. 4.1"))
        checks.append(check_below(f"{tag}: |ρ1| at t = 400", float(abs(rho[-1, 0])), 1e-8, "Fig. 3, Prop. 4.1"))
        checks.append(check_below(f"{tag}: |ρ2(400) − √(0.36 + 10⁻⁶)|", float(abs(rho[-1, 1] - target)), 1e-12,
                                  "Fig. 3, Prop. 4.1"))
        circ = rho[:, 0] ** 2 + rho[:, 1] ** 2
        checks.append(check_below(f"{tag}: max |ρ1² + ρ2² − (ρ1² + ρ2²)(0)|", float(np.max(np.abs(circ - circ[0]))),
                                  1e-14, "(23): energy-exact"))
        checks.append(Check(f"{tag}: ρ1 keeps its sign (monotone path along the circle)",
                            "sign(ρ1(t)) = sign(ρ1(0)) for all t", f"min ρ1·sign = {np.min(rho[:, 0] * np.sign(r1)):.2e}",
                            bool(np.all(rho[:, 0] * np.sign(r1) > 0)), "Fig. 3"))
        data[f"rho1_0={r1:+g}"] = {"t": [25, 50, 75, 100, 125, 150, 200, 400],
                                    "rho": [rho[int(round(t / h))].tolist() for t in (25, 50, 75, 100, 125, 150, 200, 400)],
                                    "theta_final": float(tr.x[-1, 2]), "x1_final": float(tr.x[-1, 0])}
    # our reproduction's table (docs/theory/celledoni2019.md) for ρ1(0) = +0.001
    ref = {100: (0.55006, -0.2396), 125: (0.31947, 0.5079)}
    rho_p = runs[1e-3].x[:, 3:]
    for t, (a, b) in ref.items():
        got = rho_p[int(round(t / h))]
        checks.append(check_below(f"ρ(t = {t}) vs our reference table ({a}, {b})", float(np.max(np.abs(got - [a, b]))),
                                  2e-4, "our reproduction (docs/theory/celledoni2019.md)"))
    # eigenvalues of the linearised ρ-map: autodiff through the library's own step
    midpoint_jacobian = sleigh_step_jacobian(ap, "implicit-midpoint")
    eig = {}
    for r2, exact in ((0.6, 59.0 / 61.0), (-0.6, 61.0 / 59.0)):
        ev = np.sort(np.linalg.eigvals(midpoint_jacobian([0.0, r2], h)).real)
        lam1 = ev[0] if r2 > 0 else ev[1]
        other = ev[1] if r2 > 0 else ev[0]
        eig[r2] = ev.tolist()
        checks.append(check_below(f"eigenvalue λ1 at (0, {r2:+}) vs {'59/61' if r2 > 0 else '61/59'}",
                                  float(abs(lam1 - exact)), 1e-13, "Prop. 4.1"))
        checks.append(check_below(f"other eigenvalue at (0, {r2:+}) vs 1", float(abs(other - 1.0)), 1e-13, "Prop. 4.1"))
    # Prop. 4.1 and Remark 4.2 on a grid of h < 2/(C|ρ2|) (resp. 1/(C|ρ2|)), eigenvalues by autodiff
    # of the library's DG step (dg-gonzalez: = the midpoint here) and of explicit Euler on (22)
    rho2s = np.array([-1.5, -0.6, -0.1, 0.1, 0.6, 1.5])
    fractions = np.linspace(0.05, 0.95, 7 if quick else 19)
    beyond = np.linspace(1.05, 1.95, 4 if quick else 10)      # between the bound and twice it
    checks += stability_grid_checks(sleigh_step_jacobian(ap, "dg-gonzalez"), sleigh_step_jacobian(ap, "explicit-euler"),
                                    C, rho2s, fractions, beyond)
    euler_jacobian = sleigh_step_jacobian(ap, "explicit-euler")
    for r2 in (0.6, -0.6):
        lam_e = float(euler_jacobian([0.0, r2], h)[0, 0])
        checks.append(check_below(f"Remark 4.2: explicit Euler eigenvalue at (0, {r2:+}) vs 1 − h𝒞ρ2 = "
                                  f"{1 - h * C * r2:.6f}", abs(lam_e - (1 - h * C * r2)), 1e-14, "Remark 4.2"))
    # Remark 4.2 run: explicit Euler from the unstable equilibrium's neighbourhood also ends on the
    # stable branch; it does not keep ρ1² + ρ2² (the DG scheme does, above)
    eu = explicit_euler_run(ap, np.array([-5.0, 0.0, 0.1, 1e-3, -0.6]), h, int(round(T / h)))
    rad = eu[:, 3] ** 2 + eu[:, 4] ** 2
    checks.append(check_below("Remark 4.2: explicit Euler (h = 0.5) from (10⁻³, −0.6): |ρ1| at t = 400",
                              float(abs(eu[-1, 3])), 1e-8, "Rem 4.2"))
    checks.append(check_above("Remark 4.2: explicit Euler ends on the stable branch: ρ2(400)", float(eu[-1, 4]),
                              0.6, "Rem 4.2"))
    data["explicit_euler"] = {"h": h, "rho_final": eu[-1, 3:].tolist(),
                              "radius_squared_change": float(rad[-1] - rad[0])}
    data["eigenvalues"] = {str(k): v for k, v in eig.items()}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    tr = runs[1e-3]
    axes[0].plot(tr.x[:, 0], tr.x[:, 1], lw=0.8)
    axes[0].set_xlabel("x1")
    axes[0].set_ylabel("x2")
    axes[0].set_title("contact point path, ρ1(0) = +10⁻³", fontsize=9)
    axes[0].set_aspect("equal", adjustable="datalim")
    th = np.linspace(0, 2 * np.pi, 400)
    axes[1].plot(0.6 * np.cos(th), 0.6 * np.sin(th), color="0.8", lw=0.8)
    for r1, trr in runs.items():
        axes[1].plot(trr.x[:, 3], trr.x[:, 4], ".", ms=2, label=f"ρ1(0) = {r1:+g}")
    axes[1].plot([0, 0], [-0.6, 0.6], "kx")
    axes[1].set_xlabel("ρ1")
    axes[1].set_ylabel("ρ2")
    axes[1].set_aspect("equal")
    axes[1].legend(fontsize=7)
    axes[1].set_title(f"(ρ1, ρ2), h = {h}: unstable (0, −0.6) → stable (0, +0.6)", fontsize=9)
    fig.suptitle("Chaplygin sleigh, J = 8, a = m = 1 (Celledoni et al. 2019, Fig. 3)", fontsize=10)
    fig.tight_layout()
    return checks, [save_figure(fig, out / "figure3.png")], data, (
        "Scheme (23) = implicit midpoint rule on the hand-derived almost-Poisson form (all three DGs coincide "
        "because 𝓗 is quadratic). The eigenvalues are those of the Jacobian of the library's own step "
        "(forward-mode autodiff through the compiled step; its Newton solve differentiates by the implicit-"
        "function theorem). Remark 4.2's explicit Euler on (22) is run as well (written in the experiment: "
        "no registered method is explicit Euler); it ends on the stable branch too, with ρ1² + ρ2² growing "
        f"by {rad[-1] - rad[0]:.2e} (the DG scheme keeps it to round-off). Final time 400 (not given in "
        "the paper).")


# ---------------------------------------------------------------------------------------------
# Figure 4: the gearbox
# ---------------------------------------------------------------------------------------------

@experiment("celledoni2019-fig4", "Figure 4: the continuous gearbox (energy and constraint errors)",
            PAPER, "Gearbox driven by an asymmetric pendulum, h = 0.1, a circulating initial state of our "
            "choice (erratum E12): relative energy error and |p1 + sin(q3) p2| of GONZALEZ-R, GONZALEZ-F and "
            "SI-DLA (§4.4, Figure 4).")
def fig4(quick, out):
    model = models.get("gearbox")
    h = 0.1
    T = 1000.0 if quick else 50000.0
    T_dg = 200.0 if quick else T         # the DG methods to the paper's horizon in the full run
    checks, data = [], {}
    runs, timings = {}, {}
    K = 1 if quick else 10
    labels = (("SI-DLA", "si-dla", T), ("GONZALEZ-F", "gonzalez-f", T_dg)) + (
        () if quick else (("GONZALEZ-R", "gonzalez-r", T_dg),))
    for label, name, tf in labels:
        t0 = time.perf_counter()
        runs[label] = integrate(model.system, name, q0=model.q0, v0=model.v0, h=h, t_final=tf,
                                save_every=K, progress=False)
        timings[label] = time.perf_counter() - t0
    rel, cons = {}, {}
    for label, tr in runs.items():
        rel[label] = np.abs(tr.energy - tr.energy[0]) / abs(tr.energy[0])
        cons[label] = np.abs(tr.p[:, 0] + np.sin(tr.q[:, 2]) * tr.p[:, 1])
    H0 = float(runs["SI-DLA"].energy[0])                   # an input (2.270966669647573), reported in data

    def at(label, t):
        tr = runs[label]
        return float(rel[label][np.argmin(np.abs(tr.t - t))])

    def cat(label, t):
        tr = runs[label]
        return float(cons[label][np.argmin(np.abs(tr.t - t))])

    T_roundoff = min(T_dg, 2000.0)
    for label in [lb for lb in ("GONZALEZ-R", "GONZALEZ-F") if lb in runs]:
        tr = runs[label]
        early = tr.t <= T_roundoff + 1e-9
        scale = np.maximum(1.0, np.abs(tr.q[early, 2]))
        checks.append(check_below(f"{label}: max relative energy error / max(1, |q3|), t ≤ {T_roundoff:g}",
                                  float(np.max(rel[label][early] / scale)), 1e-13, "Fig. 4 left"))
        if T_dg > T_roundoff:
            # over 5·10⁵ steps the update q + Δq at |q3| up to 7·10⁴ loses |q3|ε per step: a random walk
            # of round-off to ~1e-9 (measured 1.3e-9 R, 3.2e-9 F); SI-DLA's error is 5·10⁴ there
            checks.append(check_below(f"{label}: max relative energy error, t ≤ {T_dg:g} (accumulated round-off "
                                      "of the update at large |q3|)", float(np.max(rel[label])), 1e-8, "Fig. 4"))
    checks.append(check_above("SI-DLA: relative energy error by t = 1000 (our reproduction: 7.2e-2)", at("SI-DLA", 1000.0),
                              1e-2, "Fig. 4 left"))
    checks.append(check_range("SI-DLA: relative energy error at t = 100 vs our reference 5.9e-3 (factor 1.5)",
                              at("SI-DLA", 100.0), 5.9e-3 / 1.5, 5.9e-3 * 1.5,
                              "our reproduction (docs/theory/celledoni2019.md)", fmt="{:.2e}"))
    if not quick:
        checks.append(check_above("SI-DLA: relative energy error at t = 50000 (exponential growth; our reproduction 5.0e4)",
                                  float(rel["SI-DLA"][-1]), 1.0, "Fig. 4 left"))
    checks.append(check_above("GONZALEZ-F: |p1 + sin(q3)p2| at t = 100 (constraint not kept)", cat("GONZALEZ-F", 100.0),
                              1e-2, "Fig. 4 right"))
    checks.append(check_above("GONZALEZ-F: |p1 + sin(q3)p2| after 10 steps", cat("GONZALEZ-F", 1.0), 1e-4,
                              "Fig. 4 right; §3.3 (constraint only approximate)"))
    for label in [lb for lb in ("SI-DLA", "GONZALEZ-R") if lb in runs]:
        scale = np.maximum(1.0, np.max(np.abs(np.concatenate([runs[label].q, runs[label].p], axis=1)), axis=1))
        checks.append(check_below(f"{label}: max |p1 + sin(q3)p2| / max(1, |state|), t ≤ {runs[label].t[-1]:g}",
                                  float(np.max(cons[label] / scale)), 1e-14, "Fig. 4 right"))
    data = {"h": h, "H0": H0, "timings_s": timings,
            "si_dla_relative_energy_error": {str(t): at("SI-DLA", t) for t in (100.0, 1000.0, 5000.0, 50000.0) if t <= T},
            "gonzalez_f_constraint": {str(t): cat("GONZALEZ-F", t) for t in (1.0, 100.0, 1000.0, 2000.0) if t <= T_dg},
            "max_relative_energy_error": {k: float(np.max(v)) for k, v in rel.items()},
            "max_constraint": {k: float(np.max(v)) for k, v in cons.items()}}
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for label, tr in runs.items():
        s = max(1, tr.t.size // 4000)
        axes[0].semilogy(tr.t[::s], np.maximum(rel[label][::s], 1e-18), lw=0.7, color=COLORS[label], label=label)
        axes[1].semilogy(tr.t[::s], np.maximum(cons[label][::s], 1e-19), lw=0.7, color=COLORS[label], label=label)
    axes[0].set_ylabel("|(H(t) − H(0))/H(0)|")
    axes[1].set_ylabel("|p1 + sin(q3) p2|")
    for ax in axes:
        ax.set_xlabel("t")
        ax.legend(fontsize=7)
    axes[0].set_title(f"relative energy error, h = {h}", fontsize=9)
    axes[1].set_title("constraint error", fontsize=9)
    fig.suptitle("Continuous gearbox (H = T + V, a circulating initial state; Celledoni et al. 2019, Fig. 4)",
                 fontsize=10)
    fig.tight_layout()
    return checks, [save_figure(fig, out / "figure4.png")], data, (
        "H = ½|p|² + V (the paper prints −V, erratum E1, docs/theory/celledoni2019.md#e1: with −V the exact "
        "solution blows up). The paper's initial values are unknown; this circulating state (our choice) shows "
        "SI-DLA's energy growth, which for librating states stays bounded (erratum E12, "
        "docs/theory/celledoni2019.md#e12). The energy round-off of the DG methods grows with |q3| (no wrapping "
        f"here: |q3| reaches {max(float(np.max(np.abs(runs[lb].q[:, 2]))) for lb in runs if lb != 'SI-DLA'):.1e} "
        "along the DG runs), hence the scaling by max(1, |q3|) up "
        "to t = 2000; over the paper's horizon the round-off of the update q + Δq (|q3|ε per step) accumulates as "
        f"a random walk. GONZALEZ-R/F are run to t = {T_dg:g}; their largest relative "
        "energy errors: " + ", ".join(f"{lb} {float(np.max(rel[lb])):.1e}" for lb in ("GONZALEZ-R", "GONZALEZ-F")
                                      if lb in rel) + ". " + (
            "Quick version: SI-DLA to t = 1000, GONZALEZ-F to t = 200, no GONZALEZ-R (its compilation alone takes "
            "~15 s; it is tested in tests/convergence/test_gonzalez.py)." if quick else ""))
