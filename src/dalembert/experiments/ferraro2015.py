"""Experiments of Ferraro, Jiménez, Martín de Diego, "New developments on the geometric
nonholonomic integrator", Nonlinearity 28 (2015); errata and our additions: docs/theory/ferraro2015.md.

* ``ferraro2015-orders``: the order table of Thm 5.2 (GNI-A/B order 1), §5 (nonholonomic RATTLE
  order 2) and Remark 5.5 (the T*Q composition A(h/2)∘B(h/2) is order 2 and is not RATTLE; the naive
  composition of the staggered maps (13)/(14) is order 1) on our test problems P1 (linear) and
  P2 (affine) (docs/theory/ferraro2015.md), h = 0.1·2^−j, T = 5.
* ``ferraro2015-adjointness``: Theorem 5.4: F_A^h ∘ F_B^{−h} = Id on S_A(h) and
  F_B^h ∘ F_A^{−h} = Id on S_B(h) (to ≤ 1e-13), and the failure of the identity off the manifold;
  plus the T*Q form: GNI-A(h) ∘ C ∘ GNI-B(−h) ∘ C = Id with C(q, p) = (q, (P−Q)*p + 2Q*Π).
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import models
from ..convergence import convergence, fitted_order
from ..engine.run import compiled, final_state, raise_if_failed
from ..methods import get as get_method
from ..methods import gni_leapfrog as lf
from ..methods.gni import affine_reflection
from ..models import rolling_ball as rb
from matplotlib.ticker import NullFormatter

from ..plots import plt, save_figure
from .base import Check, check_above, check_below, check_range, experiment

PAPER = "Ferraro, Jiménez, Martín de Diego, Nonlinearity 28 (2015) 871–900"
ORDER_METHODS = ("gni-euler-a", "gni-euler-b", "nh-rattle", "gni-euler-ab", "gni-midpoint", "dla-midpoint")
EXPECTED = {"gni-euler-a": (0.85, 1.15, "Thm 5.2"), "gni-euler-b": (0.85, 1.15, "Thm 5.2"),
            "nh-rattle": (1.9, 2.1, "§5 (nonholonomic RATTLE, order 2, cited)"),
            "gni-euler-ab": (1.85, 2.15, "Remark 5.5"),
            "gni-midpoint": (1.85, 2.15, "Def. 4.1"), "dla-midpoint": (1.85, 2.15, "FIMdD 2008 §5 (DLA)")}


def _naive_composition_error(model, hs, T):
    """Final-time q error of F_A(h/2) then F_B(h/2) in the staggered (q, p̃, λ̃) variables."""
    run = compiled(final_state, model.system, lf.naive_composition)

    errs = []
    for h in hs:
        n = int(round(T / h))
        qT = np.asarray(raise_if_failed(run((model.q0, model.v0), h, n), lf.naive_composition, h)["q"])
        q_ref, _ = model.solution(np.array([0.0, n * h]))
        errs.append(float(np.max(np.abs(qT - q_ref[-1]))))
    return np.array(errs)


@experiment("ferraro2015-orders", "Order table of the GNI family on P1 (linear) and P2 (affine)",
            PAPER, "Fitted global orders (final-time error in q, T = 5) against the reference ODE: "
            "Thm 5.2, the order of nonholonomic RATTLE and Remark 5.5; the naive staggered composition is shown "
            "to be first order.")
def orders(quick, out):
    hs = [0.1 / 2 ** j for j in range(4 if quick else 5)]
    T = 5.0
    checks, data = [], {}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, name in zip(axes, ("p1-linear", "p2-affine")):
        mdl = models.get(name)
        res = convergence(mdl, ORDER_METHODS, hs, t_final=T)
        naive = _naive_composition_error(mdl, hs, T)
        data[name] = res.as_dict()
        data[name]["naive_composition_errors_q"] = naive.tolist()
        for m in ORDER_METHODS:
            lo, hi, src = EXPECTED[m]
            checks.append(check_range(f"{name}: order of {m} (q)", res.orders_q[m], lo, hi, src))
            ax.loglog(res.hs, res.errors_q[m], "o-", ms=3, label=f"{m} ({res.orders_q[m]:.2f})")
        p_naive = fitted_order(res.hs, naive)
        checks.append(check_range(f"{name}: order of the naive (q, p̃, λ̃) composition F_B(h/2)∘F_A(h/2)",
                                  p_naive, 0.7, 1.3, "Remark 5.5 (erratum E5, docs/theory/ferraro2015.md#e5)"))
        ax.loglog(res.hs, naive, "x--", label=f"naive staggered A∘B ({p_naive:.2f})")
        diff = np.max(np.abs(res.errors_q["gni-euler-ab"] - res.errors_q["nh-rattle"]) / res.errors_q["nh-rattle"])
        checks.append(check_above(f"{name}: gni-euler-ab is not nh-rattle (max relative difference of errors)",
                                  diff, 1e-3, "Remark 5.5"))
        ax.set_title(f"{name}: {'affine' if mdl.system.is_affine else 'linear'} constraint, T = {T:g}", fontsize=9)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("h")
        ax.set_ylabel("max |q(T) − q_ref(T)|")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    figs = [save_figure(fig, out / "orders.png")]
    return checks, figs, data, ("Errors are final-time max-norm errors in q against the reference ODE "
                                "(DOP853, rtol = atol = 1e-13). Start-up: p⁺₀ = G v₀ (Legendre).")


def _random_states(model, rng, count, scale=0.5):
    n = model.q0.size
    q = model.q0 + scale * rng.standard_normal((count, n))
    p = rng.standard_normal((count, n))
    lam = rng.standard_normal((count, model.system.constraint_matrix(jnp.asarray(model.q0)).shape[0]))
    return q, p, lam


@experiment("ferraro2015-adjointness", "Adjointness of GNI-A and GNI-B (Theorem 5.4)", PAPER,
            "F_A^h ∘ F_B^{−h} = Id on S_A(h), F_B^h ∘ F_A^{−h} = Id on S_B(h) (Theorem 5.4), its failure "
            "off the manifolds, and the T*Q form of the adjoint.")
def adjointness(quick, out):
    rng = np.random.default_rng(2015)
    count = 50 if quick else 500
    h = 0.1
    checks, data = [], {}
    rows = []
    for name in ("p1-linear", "p2-affine"):
        mdl = models.get(name)
        sys_ = mdl.system
        q, p, lam = _random_states(mdl, rng, count)
        for first, second in (("A", "B"), ("B", "A")):
            f1 = lf.make_leapfrog_step(sys_, mdl.q0, first)
            f2 = lf.make_leapfrog_step(sys_, mdl.q0, second)

            def roundtrip(qi, pi, li):
                st = lf.project_to_manifold(sys_, mdl.q0, first, qi, pi, li, h)
                back = f1(f2(st, -h), h)
                return jnp.max(jnp.abs(jnp.concatenate([back.q - st.q, back.p - st.p, back.lam - st.lam])))

            def offmanifold(qi, pi, li):
                st = lf.LeapfrogState(qi, pi, li)
                back = f1(f2(st, -h), h)
                return jnp.max(jnp.abs(jnp.concatenate([back.q - st.q, back.p - st.p])))

            on = float(jnp.max(jax.jit(jax.vmap(roundtrip))(q, p, lam)))
            off = float(jnp.median(jax.jit(jax.vmap(offmanifold))(q, p, lam)))
            label = f"F_{first}^h ∘ F_{second}^−h"
            checks.append(check_below(f"{name}: {label} = Id on S_{first}(h), max error over {count} states",
                                      on, 1e-13, "Thm 5.4"))
            checks.append(check_above(f"{name}: {label} ≠ Id off the manifold (median error)", off, 1e-3,
                                      "Thm 5.4 holds on S_A(h), S_B(h) only (docs/theory/ferraro2015.md#e4)"))
            rows.append((f"{name}\n{label}", on, off))
            data[f"{name}:{first}{second}"] = {"on_manifold_max": on, "off_manifold_median": off}
        # T*Q form: GNI-A(h) ∘ C ∘ GNI-B(−h) ∘ C = Id, C(q, p) = (q, (P−Q)* p)
        sa = get_method("gni-euler-a").build(sys_, mdl.q0)
        sb = get_method("gni-euler-b").build(sys_, mdl.q0)

        def tq_roundtrip(qi, pi):
            st = sa.init(qi, jnp.zeros_like(qi), h)._replace(p=pi)
            c = st._replace(p=affine_reflection(sys_, st.q, st.p))
            mid, _ = sb.step(c, -h)
            mid = mid._replace(p=affine_reflection(sys_, mid.q, mid.p))
            back, _ = sa.step(mid, h)
            return jnp.max(jnp.abs(jnp.concatenate([back.q - qi, back.p - pi])))

        err = float(jnp.max(jax.jit(jax.vmap(tq_roundtrip))(q, p)))
        checks.append(check_below(f"{name}: T*Q form GNI-A(h)∘C∘GNI-B(−h)∘C = Id, max error", err, 1e-13,
                                  "Thm 5.4 in T*Q variables (ours, docs/theory/ferraro2015.md)"))
        rows.append((f"{name}\nT*Q form", err, np.nan))
        data[f"{name}:TQ"] = err
    fig, ax = plt.subplots(figsize=(10, 4))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [max(r[1], 1e-18) for r in rows], 0.4, label="on the state manifold (max)")
    ax.bar(x + 0.2, [r[2] if np.isfinite(r[2]) else 0 for r in rows], 0.4, label="off the manifold (median)")
    ax.set_yscale("log")
    ax.axhline(1e-13, color="k", ls="--", lw=0.8, label="1e-13")
    ax.set_xticks(x, [r[0] for r in rows], fontsize=7)
    ax.set_ylabel("|round trip − identity|")
    ax.legend(fontsize=8)
    ax.set_title(f"Adjointness of GNI-A and GNI-B, h = {h} ({count} random states)", fontsize=9)
    return checks, [save_figure(fig, out / "adjointness.png")], data, (
        "In the staggered variables the identity holds only on the state manifolds S_A(h), S_B(h) "
        "(λ̃ is part of the state); in T*Q variables the adjoint of GNI-A is C∘GNI-B∘C everywhere.")


# =============================================================================================
# The rolling ball (§7.4, Figs 1–4, and the preprint's example 2)
# =============================================================================================
def _integrate(system, method, h, T, state, save_every=1, **options):
    import dalembert as dl
    return dl.integrate(system, method, h=h, t_final=T, save_every=save_every, progress=False,
                        **state, **options)


def _ball_runtime(tr):
    md = tr.metadata
    return {"steps": md["n_steps"], "wall_s": md.get("wall_time_s"), "compile_s": md.get("compile_time_s"),
            "steps_per_s": md.get("steps_per_second")}


def circle_fit(x):
    """Algebraic (Kåsa) least-squares circle through points x (N, 2): (centre (2,), radius)."""
    x = np.asarray(x, float)
    A = np.column_stack([x[:, 0], x[:, 1], np.ones(len(x))])
    b = -(x[:, 0] ** 2 + x[:, 1] ** 2)
    a, c, d = np.linalg.lstsq(A, b, rcond=None)[0]
    centre = np.array([-a / 2.0, -c / 2.0])
    return centre, float(np.sqrt(centre @ centre - d))


def _error_panels(hs, err, orders_text, title, guides, path, styles=("o-", "s--", "^--")):
    """Three log-log panels (position, angular velocity, energy) of err[series][key] against h,
    with slope guides (powers in ``guides``) through the first series' largest-h error."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    first = next(iter(err))
    for ax, key, lab in zip(axes, ("x", "omega", "energy"), ("position", "angular velocity ω", "energy")):
        for s, style in zip(err, styles):
            ax.loglog(hs, err[s][key], style, ms=3, label=f"{s} ({orders_text[s]})")
        e0 = err[first][key][0]
        for pw, ls in zip(guides, (":", "-.")):
            ax.loglog(hs, e0 * (hs / hs[0]) ** pw, "k" + ls, lw=0.8, label=f"slope {pw}")
        ax.set_xlabel("h")
        ax.set_title(title.format(lab), fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.legend(fontsize=6)
    return save_figure(fig, path)


def _exact_second_point(model, h):
    """('second-point', x(h), ω(h/2)) from the homogeneous exact solution (right trivialisation:
    ξ is the spatial ω)."""
    sol = model.exact_solution(np.array([0.0, 0.5 * h, h]))
    return ("second-point", tuple(sol["x"][2]), tuple(sol["omega"][1]))


def dla_order_check(hs, errs):
    """The groupoid DLA's position errors (the paper's dashed comparison): order 2 (fitted slope in
    [1.8, 2.2]; measured 1.915 over h = 0.1 … 0.0125) with its own error constant e(h)/h² at the
    smallest h in [94, 115] (measured 103.87 at h = 0.0125, ≈ 104.2 extrapolated to h → 0; ± 10 %).
    The slope alone does not identify the method: the GNI is second order too, with a constant ≈ 3.8–4.0."""
    hs, errs = np.asarray(hs, float), np.asarray(errs, float)
    p, c = fitted_order(hs, errs), float(errs[-1] / hs[-1] ** 2)
    return Check("groupoid DLA (the paper's dashed comparison): position order, and error constant e(h)/h² "
                 f"at h = {hs[-1]:g}", "order in [1.8, 2.2], constant in [94, 115]", f"{p:.3f}, {c:.2f}",
                 bool(1.8 <= p <= 2.2 and 94.0 <= c <= 115.0),
                 "groupoid-dla traits: order 2 (midpoint discrete constraint); constant: ours, ± 10 %")


@experiment("ferraro2015-fig1", "Homogeneous ball on a turning table: errors against the exact solution (Fig 1)",
            PAPER, "Fig 1 data (I = 2/3, m = r = Θ = 1, (x0, y0, ẋ0, ẏ0) = (1, 1, 1, 1), ω = (0, 2, 0), "
            "T = 10): reduced affine GNI (reduced-gni, right-trivialised spatial ω, Cayley) with the "
            "paper's two-point start-up and with an exact second point, and the paper's dashed "
            "comparison: the discrete Lagrange–d'Alembert method on the Atiyah groupoid (groupoid-dla, "
            "midpoint discrete constraint, consistent start-up); max errors over [0, 10] in "
            "position, node angular velocity and energy; the §7.4.1 order claim (erratum E15).")
def ball_fig1(quick, out):
    mdl = models.get("rolling-ball")
    system = mdl.forms["reduced"]
    st = dict(mdl.initial_state, xi0=mdl.initial_state["R0"] @ mdl.initial_state["xi0"])   # spatial ω
    T = 10.0
    hs = np.array([0.1 / 2 ** j for j in range(4 if quick else 5)])
    DLA = "groupoid DLA (dashed)"
    starts = {"two-point": ("reduced-gni", lambda h: "two-point"),
              "exact second point": ("reduced-gni", lambda h: _exact_second_point(mdl, h)),
              DLA: ("groupoid-dla", lambda h: "consistent")}
    err = {s: {"x": [], "omega": [], "energy": []} for s in starts}
    for h in hs:
        ex = None                         # the exact solution at the nodes, shared by every series
        for s, (method, opt) in starts.items():
            tr = _integrate(system, method, h, T, st, startup=opt(h))
            ex = ex if ex is not None else mdl.exact_solution(tr.t)
            err[s]["x"].append(float(np.max(np.abs(tr.x - ex["x"]))))
            err[s]["omega"].append(float(np.max(np.abs(tr.omega - ex["omega"]))))
            err[s]["energy"].append(float(np.max(np.abs(tr.energy - ex["energy"]))))
    slopes = {s: {k: fitted_order(hs, np.array(v)) for k, v in e.items()} for s, e in err.items()}
    checks = [
        check_range("two-point start-up: max position error at h = 0.1", err["two-point"]["x"][0],
                    0.9 * 4.0e-2, 1.1 * 4.0e-2, "Fig 1 (our measurement 4.01e-2 ± 10 %)", fmt="{:.3e}"),
        check_range("two-point start-up: position order", slopes["two-point"]["x"], 1.9, 2.1, "Fig 1 (our measurement; the paper gives no numbers)"),
        check_range("two-point start-up: order of the node ω (averaged momentum)", slopes["two-point"]["omega"],
                    1.8, 2.2, "Fig 1 (our measurement: averaged quantities order 2)"),
        check_range("exact second point: position order", slopes["exact second point"]["x"], 1.9, 2.1,
                    "§7.4.1 order claim; second order with a consistent start-up (docs/theory/ferraro2015.md#e15)"),
        check_range("exact second point: node ω order", slopes["exact second point"]["omega"], 1.8, 2.2,
                    "§7.4.1 order claim (docs/theory/ferraro2015.md#e15)"),
        check_range("exact second point: energy order", slopes["exact second point"]["energy"], 1.8, 2.2,
                    "§7.4.1 order claim (docs/theory/ferraro2015.md#e15)"),
        dla_order_check(hs, err[DLA]["x"]),
    ]
    figs = [_error_panels(hs, err, {s: f"order {o['x']:.2f} / {o['omega']:.2f} / {o['energy']:.2f}"
                                    for s, o in slopes.items()},
                          "max error in {}, t ∈ [0, 10]", (2,), out / "fig1_errors.png", styles=("o-", "s-", "^--"))]
    data = {"h": hs.tolist(), "errors": err, "orders": slopes}
    notes = ("The dashed comparison method of the paper's Fig 1 (ref. [28], a discrete Lagrange–d'Alembert "
             "method on Lie groupoids) is not specified in the paper; the dashed line here is our DLA on the "
             "same Atiyah groupoid (groupoid-dla: the GNI's discrete Lagrangian and Legendre maps, multipliers, "
             "the midpoint discrete constraint μ̃(Δx, σ)/h = ν̃(x̄)), so its curve is ours, not the paper's. Node ω and energy come from the averaged momentum p̄_k = P*FL⁺_k + Q*Π "
             "(constraint-consistent), compared with the exact ω(t_k), E(t_k). The paper calls the "
             "scheme first order (§7.4.1); it is second order — its first-order behaviour comes from the "
             "start-up (erratum E15, docs/theory/ferraro2015.md#e15).")
    return checks, figs, data, notes


@experiment("ferraro2015-fig2", "Homogeneous ball: the contact point's circle over 10⁴ steps (Fig 2)",
            PAPER, "Fig 1 data, h = 0.1, 10⁴ steps (T = 1000), paper's two-point start-up: the discrete "
                   "contact point stays on a closed circle (exact: centre (−1.5, 3.5), radius 3.5355) with "
                   "no drift (Fig 2).")
def ball_fig2(quick, out):
    mdl = models.get("rolling-ball")
    st = dict(mdl.initial_state, xi0=mdl.initial_state["R0"] @ mdl.initial_state["xi0"])
    h = 0.1
    n = 3000 if quick else 10000
    tr = _integrate(mdl.forms["reduced"], "reduced-gni", h, n * h, st, startup="two-point")
    ex = mdl.exact_solution(np.array([0.0]))
    kappa, centre_ex, radius_ex = float(ex["kappa"]), np.asarray(ex["centre"]), float(ex["radius"])
    centre, radius = circle_fit(tr.x)
    c_first, r_first = circle_fit(tr.x[:200])
    tail = 2000 if not quick else 1000
    c_last, r_last = circle_fit(tr.x[-tail:])
    drift = float(max(np.max(np.abs(c_first - c_last)), abs(r_first - r_last)))
    checks = [
        check_below("circle centre − exact centre (−1.5, 3.5)", float(np.max(np.abs(centre - centre_ex))), 0.03,
                    "Fig 2", fmt="{:.4f}"),
        check_below("|circle radius − exact radius 3.5355|", abs(radius - radius_ex), 0.03, "Fig 2", fmt="{:.4f}"),
        check_below(f"drift: circle fits over the first 200 and the last {tail} steps differ by", drift, 1e-4, "Fig 2"),
        check_below("ω3 stays 0", float(np.max(np.abs(tr.omega[:, 2]))), 1e-12, "Fig 2 (our measurement ≤ 1e-13)"),
        check_below("averaged-momentum constraint residual", float(np.max(np.abs(tr.constraint_residual))), 1e-12,
                    "constraints in average, (38b)"),
        check_below("R_k ∈ SO(3): max |I − RᵀR|_F", float(np.max(tr.orthogonality_defect)), 1e-12, "Remark 7.2"),
    ]
    fig, ax = plt.subplots(figsize=(6, 6))
    s = np.linspace(0, 2 * np.pi, 400)
    ax.plot(tr.x[:, 0], tr.x[:, 1], lw=0.4, label=f"reduced GNI, h = {h:g}, {n} steps")
    ax.plot(centre_ex[0] + radius_ex * np.cos(s), centre_ex[1] + radius_ex * np.sin(s), "k--", lw=0.8,
            label="exact circle")
    ax.plot([0], [0], "k+", ms=14, mew=2, label="table centre")
    ax.set_aspect("equal")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend(fontsize=8)
    ax.set_title("Homogeneous ball on a turning table: contact point", fontsize=9)
    figs = [save_figure(fig, out / "fig2_circle.png")]
    data = {"centre": centre.tolist(), "radius": radius, "exact_centre": centre_ex.tolist(),
            "exact_radius": radius_ex, "kappa": kappa, "drift": drift,
            "speed_range": [float(np.min(np.hypot(*tr.xdot.T))), float(np.max(np.hypot(*tr.xdot.T)))],
            "runtime": _ball_runtime(tr)}
    notes = ("The ≈ 0.02 offset of the fitted circle from the exact one comes from the first-order "
             "two-point start-up; the circle itself does not drift.")
    return checks, figs, data, notes


def _position_errors_at(tr, ref, times) -> dict:
    """{t: max |x − x_ref| at the node nearest t} for the times within the run."""
    err = np.max(np.abs(tr.x - ref["x"]), axis=1)
    return {t: float(err[np.argmin(np.abs(tr.t - t))]) for t in times if t <= tr.t[-1] + 1e-9}


def _turns(v) -> float:
    """Net turns of the direction of the vectors v (N, 2) (zero vectors skipped): the heading's turns
    for v = the path's increments, the winding about the origin for v = the path."""
    v = np.asarray(v)[np.hypot(*np.asarray(v).T) > 1e-12]
    a = np.unwrap(np.arctan2(v[:, 1], v[:, 0]))
    return float(abs(a[-1] - a[0]) / (2.0 * np.pi))


def _fig3_shape_checks(case, tr, label, full, record, box: bool = True) -> list:
    """The shapes of Fig 3 (recorded in ``record``): the left path loops to the left of the start
    (1, 0), reaching x ≈ −5 by t = 100; the right path is a rosette winding around the table centre.
    Reference values (our unreduced reference solution): left — 4.7 heading turns, min x = −5.01 by t = 100 (0.94 and
    −4.06 by t = 20), 72 % of the time at x < 0, y ∈ [−2.68, 3.10]; right — 19.1 turns about the
    centre by t = 160 (2.35 by t = 20) at distances 0.77–1.30. A path that stalls or drifts away fails.
    ``box=False`` (a path that leaves the reference after t ≈ 40, chaos): the reference's extent is not
    required of the left path, only that its loops reach x ≤ −4.5."""
    x = tr.x
    if case == "left":
        shape = {"heading_turns": _turns(np.diff(x, axis=0)), "fraction_left": float(np.mean(x[:, 0] < 0.0)),
                 "x_range": [float(x[:, 0].min()), float(x[:, 0].max())],
                 "y_range": [float(x[:, 1].min()), float(x[:, 1].max())]}
        record.update(shape)
        (x0, x1), (y0, y1) = shape["x_range"], shape["y_range"]
        extent = [
            check_range(f"left, {label}: min x (the loops reach x ≈ −5 by t = 100; −4.06 by t = 20)", x0,
                        -5.1 if full else -4.2, -4.5 if full else -3.9, "Fig 3"),
            check_range(f"left, {label}: min y", y0, -2.8, -2.0, "Fig 3 (reference −2.68 by t = 100, −2.50 by t = 20)"),
            check_range(f"left, {label}: max y", y1, 2.4, 3.2, "Fig 3 (reference 3.10 by t = 100, 2.60 by t = 20)"),
        ] if box else [check_below(f"left, {label}: min x (the loops reach x ≈ −5 or beyond)", x0, -4.5, "Fig 3",
                                   fmt="{:.3f}")]
        return extent + [
            check_range(f"left, {label}: max x (the loops pass near the start, x = 1)", x1, 0.9, 1.1, "Fig 3"),
            check_above(f"left, {label}: fraction of the time at x < 0 (loops to the left of the start)",
                        shape["fraction_left"], 0.6, "Fig 3", fmt="{:.2f}"),
            check_above(f"left, {label}: turns of the direction of motion (loops)", shape["heading_turns"],
                        3.0 if full else 0.8, "Fig 3 (reference 4.7 by t = 100, 0.94 by t = 20)", fmt="{:.2f}")]
    dist = np.hypot(*x.T)
    shape = {"winding_about_centre": _turns(x), "distance_range": [float(dist.min()), float(dist.max())]}
    record.update(shape)
    return [
        check_range(f"right, {label}: distance from the table centre, min (rosette: never through the centre)",
                    float(dist.min()), 0.7, 1.0, "Fig 3 (reference 0.77)"),
        check_below(f"right, {label}: distance from the table centre, max", float(dist.max()), 1.3, "Fig 3",
                    fmt="{:.3f}"),
        check_above(f"right, {label}: turns around the table centre", shape["winding_about_centre"],
                    15.0 if full else 2.0, "Fig 3 (reference 19.1 by t = 160, 2.35 by t = 20)", fmt="{:.2f}")]


def _fig3_case(case, h, T, save_every, method="lie-gni"):
    """(params, trajectory, unreduced reference solution) of one Fig 3 case. The model's admissibility warning
    is silenced here: the right case is non-physical on purpose; the experiment reports the ratio."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        p, st = rb.fig3_initial_state(case)
        mdl = models.get("rolling-ball", **p)
    tr = _integrate(mdl.system, method, h, T, st, save_every=save_every)
    ref = rb.reference_solution(p, st["x0"], st["R0"], st["xdot0"], st["R0"] @ st["xi0"], tr.t)
    return p, tr, ref


@experiment("ferraro2015-fig3", "Inhomogeneous ball on the turning table (Fig 3, left and right)",
            PAPER, "Fig 3 with our reconstruction of the missing data (erratum E14; x0 = (1, 0), ẋ0 = (0, 0.75), "
                   "ρ0 = (0.5, 0.5, 0.5), ω3(0) = 0): left I = (1, 0.5, 0.7), m = 2, h = 2.5·10⁻⁴, T = 100; "
                   "right I = (10, 10, 1), m = 1 (non-physical), h = 10^−3.75, T = 160; the Lie-group GNI "
                   "(lie-gni) against our unreduced reference solution; the paper's exponential-chart GNI "
                   "(gni-exp-chart, §7.4.2) on the left case.")
def ball_fig3(quick, out):
    h_right = 10 ** -3.75                        # t = 160 is 899 746.1 of these steps: run a whole number
    cfg = {"left": (1e-3, 20.0) if quick else (2.5e-4, 100.0),
           "right": (1e-3, 20.0) if quick else (h_right, h_right * round(160.0 / h_right))}
    checks, data, runs = [], {}, {}
    for case, (h, T) in cfg.items():
        se = max(1, int(round(0.01 / h)))
        p, tr, ref = _fig3_case(case, h, T, se)
        runs[case] = (tr, ref)
        at = _position_errors_at(tr, ref, (10.0, 20.0, 40.0, 60.0, 100.0, 160.0))
        data[case] = {"params": p, "h": h, "T": T, "position_error_at": at,
                      "admissibility_ratio": rb.check_inertia(p, warn=False),
                      "runtime": _ball_runtime(tr)}
        # second order: measured 3.5e-6 (left) and 4.6e-7 (right) at h = 1e-3, 2.2e-7 (left) at 2.5e-4;
        # the bound 10h² is 3× the left case's 3.5h² (a first-order scheme: 2.9e-3 at h = 1e-3, below)
        checks.append(check_below(f"{case}: lie-gni position error vs the reference solution at t = 10 (≤ 10h²)",
                                  at[10.0], 10.0 * h * h,
                                  "our Lie-group GNI, not in the paper (second order; measured)"))
        checks.append(check_below(f"{case}: averaged-momentum constraint residual",
                                  float(np.max(np.abs(tr.constraint_residual))), 1e-12,
                                  "constraints in average, (27b)"))
        checks.append(check_below(f"{case}: max |I − RᵀR|_F", float(np.max(tr.orthogonality_defect)), 1e-12,
                                  "Lie-group scheme"))
    full = not quick
    for case in cfg:
        checks += _fig3_shape_checks(case, runs[case][0], "lie-gni", full, data[case])
    # inputs, reported in the notes (the right case is non-physical on purpose; the paper says so)
    ratios = {case: data[case]["admissibility_ratio"] for case in cfg}
    # the paper's own scheme (exp chart, first order): at the paper's settings in the full run (both
    # cases, to T = 100 and 160), the left case to t = 10 at h = 1e-3 in the quick one
    exp_cfg = {"left": (1e-3, 10.0)} if quick else cfg
    exp_runs = {}
    for case, (h_e, T_e) in exp_cfg.items():
        p, tr_e, ref_e = _fig3_case(case, h_e, T_e, max(1, int(round(0.01 / h_e))), "gni-exp-chart")
        exp_runs[case] = tr_e
        at_e = _position_errors_at(tr_e, ref_e, (10.0, 20.0, 40.0))
        data[f"exp_chart_{case}"] = {"h": h_e, "T": T_e, "position_error_at": at_e, "runtime": _ball_runtime(tr_e)}
        checks.append(check_below(f"{case}, gni-exp-chart h = {h_e:.3g}: averaged-momentum constraint residual",
                                  float(np.max(np.abs(tr_e.constraint_residual))), 1e-12,
                                  "constraints in average, (27b)"))
        if quick:
            checks.append(check_below("left, gni-exp-chart h = 1e-3: position error at t = 10", at_e[10.0], 1e-2,
                                      "§7.4.2 (our measurement 5.3e-3)"))
            continue
        # first order: our reproduction measures 1.3e-3 (t = 10), 3.3e-2 (t = 40) on the left at h = 2.5e-4
        checks.append(check_below(f"{case}, gni-exp-chart h = {h_e:.3g}: position error at t = 10", at_e[10.0],
                                  5e-3, "§7.4.2, Fig 3 (our measurement; first order)"))
        checks.append(check_below(f"{case}, gni-exp-chart h = {h_e:.3g}: position error at t = 40", at_e[40.0],
                                  0.1, "§7.4.2, Fig 3 (our measurement; first order)"))
        checks += _fig3_shape_checks(case, tr_e, "gni-exp-chart", full, data[f"exp_chart_{case}"], box=False)
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.5))
    for ax, case in zip(axes, ("left", "right")):
        tr, ref = runs[case]
        ax.plot(ref["x"][:, 0], ref["x"][:, 1], color="0.6", lw=1.5, label="reference solution (DOP853)")
        ax.plot(tr.x[:, 0], tr.x[:, 1], lw=0.6, color="tab:blue", label=f"lie-gni, h = {data[case]['h']:.4g}")
        if case in exp_runs:
            tr_e = exp_runs[case]
            ax.plot(tr_e.x[:, 0], tr_e.x[:, 1], lw=0.6, ls="--", color="tab:orange",
                    label=f"gni-exp-chart (paper), t ≤ {tr_e.t[-1]:g}")
        ax.plot([0], [0], "k+", ms=14, mew=2, label="table centre")
        ax.set_aspect("equal", adjustable="datalim")
        pp = data[case]["params"]
        ax.set_title(f"{case}: I = ({pp['I1']:g}, {pp['I2']:g}, {pp['I3']:g}), m = {pp['m']:g}, T = {data[case]['T']:g}",
                     fontsize=9)
        ax.legend(fontsize=7)
    figs = [save_figure(fig, out / "fig3_paths.png")]
    notes = ("Chaos: the dynamics amplify errors about 10× per 20 time units, so agreement with the reference "
             "is quantitative only up to t ≈ 40 and qualitative afterwards (docs/theory/ferraro2015.md). The "
             "inertias are inputs: "
             f"(I1 + I2 + I3)/(2mr²) = {ratios['left']:.3f} on the left (admissible), {ratios['right']:.3f} on "
             "the right, which violates I1 + I2 + I3 ≤ 2mr² (the paper says so); r, Θ and the initial data of the "
             "right case are not given and are taken from the left case (erratum E14, "
             "docs/theory/ferraro2015.md#e14).")
    return checks, figs, data, notes


def _forward_energy_error(mdl, p, st, h, T) -> float:
    """max |E⁺_k − E_0| of lie-gni started from the exact second point (x(h), cay⁻¹(R0ᵀR(h))/h) of the
    unreduced reference solution, E⁺_k = ½ u_kᵀ G̃ u_k with the forward velocity u_k = ((x_{k+1} − x_k)/h,
    cay⁻¹(R_kᵀR_{k+1})/h) — the energy and start-up of the Fig 4 reference values (2.05e-4 at h = 0.02)."""
    from ..lie import so3
    import jax
    ref = rb.reference_solution(p, st["x0"], st["R0"], st["xdot0"], st["R0"] @ st["xi0"], np.array([0.0, h]))
    xi0 = np.asarray(so3.cayley_inv(st["R0"].T @ ref["R"][1])) / h
    tr = _integrate(mdl.system, "lie-gni", h, T, st, startup=("second-point", tuple(ref["x"][1]), tuple(xi0)))
    W = np.einsum("kji,kjl->kil", tr.R[:-1], tr.R[1:])
    u = np.concatenate([np.diff(tr.x, axis=0) / h, np.asarray(jax.vmap(so3.cayley_inv)(W)) / h], axis=1)
    G = np.asarray(mdl.system.metric_matrix)
    E = 0.5 * np.einsum("ki,ij,kj->k", u, G, u)
    u0 = np.concatenate([st["xdot0"], st["xi0"]])
    return float(np.max(np.abs(E - 0.5 * u0 @ G @ u0)))


def _post_energy_homogeneous(tr, mass, inertia, h):
    """E⁻_k = ½m|Δx_k/h|² + ½I|ω_k|²(1 + h²|ω_k|²/4)² from consecutive nodes (the energy of
    FIMdD 2008 Thm 1 for this ball; ours, docs/theory/ferraro2015.md), with the
    staggered ω_k = cay⁻¹(R_{k+1}R_kᵀ)/h (right trivialisation)."""
    from ..lie import so3
    import jax
    W = np.einsum("kij,klj->kil", tr.R[1:], tr.R[:-1])
    w = np.asarray(jax.vmap(so3.cayley_inv)(W)) / h
    dx = np.diff(tr.x, axis=0) / h
    s = np.sum(w * w, 1)
    return 0.5 * mass * np.sum(dx * dx, 1) + 0.5 * inertia * s * (1 + h * h * s / 4) ** 2


def path_length(x) -> float:
    """The length of the polygon through the contact points x (N, 2)."""
    return float(np.sum(np.hypot(*np.diff(np.asarray(x, float), axis=0).T)))


def distance_check(method, h, distance, distance_ref):
    """The distance rolled by a second-order method at step h against the reference solution's
    polygon through the same nodes: |D_h − D_ref| ≤ 2.7e-5 (h/0.01)² (lie-gni measured 9.0e-6 at
    h = 0.01 and 2.25e-6 at 0.005: second order; margin 3×). The paper's first-order gni-exp-chart
    misses it (9.2e-3 at h = 0.01)."""
    bound = 2.7e-5 * (h / 0.01) ** 2
    return check_below(f"distance rolled in T = 10, {method} at h = {h:g}: |D_h − D_ref| against the "
                       f"reference solution's {distance_ref:.4f}", abs(distance - distance_ref), bound,
                       "Fig 4 caption (≈ 16 units); second order (ours: 9.0e-6 at h = 0.01, margin 3×)")


@experiment("ferraro2015-fig4", "Energy on a fixed table: exp-chart GNI (order 1) vs Lie-group GNI (order 2) (Fig 4)",
            PAPER, "Fig 4 (Θ = 0, I = (1, 0.5, 0.7), m = 2, r = 1, T = 10) with our reconstructed "
                   "initial data (ẏ0 = 1.6, ω = (−1.6, 0, 0): the ball rolls ≈ 16 length units): max |E_k − E_0| "
                   "for gni-exp-chart (the paper's scheme) and lie-gni (ours) over a sequence of h; and the exact "
                   "conservation of the discrete energy E⁻ for the homogeneous ball (FIMdD 2008 Thm 1).")
def ball_fig4(quick, out):
    p, st = rb.fig4_initial_state()
    mdl = models.get("rolling-ball", **p)
    T = 10.0
    cases = {"gni-exp-chart": np.array([0.01, 0.005] if quick else [0.01, 0.005, 0.0025]),
             "lie-gni": np.array([0.02, 0.01] if quick else [0.02, 0.01, 0.005])}
    err, series, data = {}, {}, {}
    for method, hs in cases.items():
        err[method] = []
        for h in hs:
            tr = _integrate(mdl.system, method, h, T, st)
            dE = np.abs(tr.energy - tr.energy[0])
            err[method].append(float(dE.max()))
            series[(method, float(h))] = (tr.t, dE)
        data[method] = {"h": hs.tolist(), "max_energy_error": err[method], "order": fitted_order(hs, err[method])}
    # the distance rolled: the last run (lie-gni at the smallest h) against the reference solution's
    # polygon through the same nodes
    h_d = float(cases["lie-gni"][-1])
    ref = rb.reference_solution(p, st["x0"], st["R0"], st["xdot0"], st["R0"] @ st["xi0"], tr.t)
    distance, distance_ref = path_length(tr.x), path_length(ref["x"])
    data["distance_rolled"] = {"h": h_d, "lie-gni": distance, "reference": distance_ref}
    checks = [
        check_range("gni-exp-chart: order of the energy error", data["gni-exp-chart"]["order"], 0.8, 1.2,
                    "Fig 4 (first order)"),
        check_range("lie-gni: order of the energy error", data["lie-gni"]["order"], 1.8, 2.2,
                    "Fig 4; our Lie-group GNI (second order)"),
        # magnitudes (ours, measured: 8.44e-3, 4.21e-3, 2.11e-3 at h = 0.01, 0.005, 0.0025; the reference
        # values 1.33e-2, 6.50e-3, 3.26e-3 re-centre both nodes of the two-step form, which jumps more)
        *[check_range(f"gni-exp-chart: max |E_k − E0| of the node energy at h = {hh:g} (± 20 %)", e,
                      0.8 * 8.44e-3 * hh / 0.01, 1.2 * 8.44e-3 * hh / 0.01, "Fig 4 (our measurement; first order)",
                      fmt="{:.3e}") for hh, e in zip(cases["gni-exp-chart"], err["gni-exp-chart"])],
        # measured 2.035e-5 (node energy, consistent start-up; 2.06e-5 with an exact second point)
        check_range("lie-gni: max |E_k − E0| of the node energy at h = 0.02", err["lie-gni"][0],
                    0.8 * 2.035e-5, 1.2 * 2.035e-5, "Fig 4 (our measurement; second order)", fmt="{:.3e}"),
        check_range("the reconstructed data roll ≈ 16 units in T = 10 (reference solution's path length)",
                    distance_ref, 15.0, 17.0, "Fig 4 caption (≈ 16 units; our reconstruction 15.98)", fmt="{:.2f}"),
        distance_check("lie-gni", h_d, distance, distance_ref),
    ]
    # the reference value 2.05e-4 is the forward-velocity energy with an exact second point
    fwd = _forward_energy_error(mdl, p, st, 0.02, T)
    data["lie-gni"]["forward_energy_error_exact_start_h0.02"] = fwd
    checks.append(check_range("lie-gni, exact second point: max |E⁺_k − E0| of the forward-velocity energy "
                              "½u_kᵀG̃u_k, u_k = ((x_{k+1} − x_k)/h, cay⁻¹(R_kᵀR_{k+1})/h), h = 0.02", fwd,
                              0.8 * 2.05e-4, 1.2 * 2.05e-4, "Fig 4 (our reference value 2.05e-4)", fmt="{:.3e}"))
    # the homogeneous ball on a fixed table conserves E⁻ exactly (energy theorem, FIMdD 2008 Thm 1)
    hom = models.get("rolling-ball", theta=0.0)
    h = 0.1
    n = 2000 if quick else 5000
    st0 = {"x0": np.array([1.0, 1.0]), "R0": np.eye(3), "xdot0": np.array([1.0, 1.0]),
           "xi0": np.array([-1.0, 1.0, 0.5])}           # spatial ω with ẋ = rω2, ẏ = −rω1
    trh = _integrate(hom.forms["reduced"], "reduced-gni", h, n * h, st0)
    Em = _post_energy_homogeneous(trh, hom.params["m"], hom.params["I1"], h)
    rel = float(np.max(np.abs(Em - Em[0])) / Em[0])
    checks.append(check_below(f"homogeneous ball, Θ = 0: relative variation of E⁻_k over {n} steps (h = 0.1)",
                              rel, 1e-12, "energy preservation (§4; FIMdD 2008 Thm 1)"))
    data["homogeneous_fixed_table_energy"] = {"steps": n, "relative_variation": rel}
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for (method, hh), (t, dE) in series.items():
        axes[0].semilogy(t, np.maximum(dE, 1e-17), lw=0.7, ls="-" if method == "lie-gni" else "--",
                         label=f"{method}, h = {hh:g}")
    axes[0].set_xlabel("t")
    axes[0].set_ylabel("|E_k − E_0|")
    axes[0].set_title("Fixed table (Θ = 0): energy error", fontsize=9)
    axes[0].legend(fontsize=7)
    axes[0].grid(True, which="both", alpha=0.3)
    for method, hs in cases.items():
        axes[1].loglog(hs, err[method], "o-", label=f"{method} (order {data[method]['order']:.2f})")
    axes[1].set_xlabel("h")
    axes[1].set_ylabel("max |E_k − E_0|, t ∈ [0, 10]")
    axes[1].xaxis.set_minor_formatter(NullFormatter())
    axes[1].grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=7)
    figs = [save_figure(fig, out / "fig4_energy.png")]
    notes = ("E_k is the energy of the node velocity from the averaged momentum (constraint-consistent), "
             "not the forward-difference energy of our earlier reproduction, so magnitudes differ from "
             "its 1.33e-2 (exp chart, h = 0.01); the orders are the claim. For lie-gni both are "
             f"checked: the node energy's {err['lie-gni'][0]:.3e} at h = 0.02 (start-up independent to 2 %), "
             f"and the reference value 2.05e-4, which is the forward-velocity energy with an exact second point "
             f"(reproduced: {fwd:.3e}; 6.6e-4 with the consistent start-up, 8.5e-5 with the two-point one). The exp-chart scheme's "
             "error also jumps at chart re-centrings (|ρ| > π + 0.5).")
    return checks, figs, data, notes


@experiment("ferraro2015-pre-convergence", "Preprint example 2: the h, h, h² slopes and the start-up (preprint Fig 3)",
            PAPER, "The preprint's left-invariant model (NOT the physical sphere, erratum E13): I = (1, 1.1, 1.2), "
                   "m = 3, r = 1, Θ = 0.2, (x0, y0) = (1, 0), ω0 = (−0.2, 0, 0.4), T = 15, h_j = 0.15·10^(−j/4); "
                   "errors at the final node against the continuous equations, with the paper's two-point "
                   "start-up and with an exact second point (the preprint's Fig 3 slopes h, h, h²).")
def pre_convergence(quick, out):
    mdl = models.get("rolling-ball-pre")
    st = mdl.initial_state
    T = 15.0
    hs = np.array([0.15 * 10 ** (-j / 4) for j in range(0, 9 if quick else 14)])
    # each h runs its whole number of steps ceil(T/h) and is compared at its own final node
    finals = np.array([math.ceil(T / h - 1e-9) * h for h in hs])
    # one reference run for every time needed: the exact second points (x(h), ω(h/2)), the final
    # nodes and T
    times = np.unique(np.concatenate([[0.0], 0.5 * hs, hs, finals, [T]]))
    ref = mdl.reference(times)

    def at(key, t):
        return ref[key][np.searchsorted(times, t)]

    err = {"two-point": {"x": [], "omega": [], "energy": []},
           "exact second point": {"x": [], "omega": [], "energy": []}}
    for h, tf in zip(hs, finals):
        opts = {"two-point": "two-point",
                "exact second point": ("second-point", tuple(at("x", h)), tuple(at("omega", 0.5 * h)))}
        for s, startup in opts.items():
            tr = _integrate(mdl.system, "reduced-gni", h, tf, st, save_every=1, startup=startup)
            err[s]["x"].append(float(np.max(np.abs(tr.x[-1] - at("x", tf)))))
            err[s]["omega"].append(float(np.max(np.abs(tr.xi[-1] - at("omega", tf)))))
            err[s]["energy"].append(float(abs(tr.energy[-1] - at("energy", tf))))
    big = hs >= 1.5e-3
    small = hs <= 0.0151     # the asymptotic range (h = 0.15 … 0.027 is pre-asymptotic for the start-up error)
    slopes = {s: {k: fitted_order(hs, np.array(v)) for k, v in e.items()} for s, e in err.items()}
    slopes_big = {s: {k: fitted_order(hs[big], np.array(v)[big]) for k, v in e.items()} for s, e in err.items()}
    slopes_small = {s: {k: fitted_order(hs[small], np.array(v)[small]) for k, v in e.items()} for s, e in err.items()}
    checks = [
        check_range("two-point start-up: position error at h = 0.15", err["two-point"]["x"][0], 0.9 * 7.45e-3,
                    1.1 * 7.45e-3, "preprint example 2 (our measurement 7.45e-3)", fmt="{:.3e}"),
        check_range("two-point start-up: position order (h ≤ 0.015)", slopes_small["two-point"]["x"], 0.9, 1.1,
                    "preprint Fig 3: h"),
        check_range("two-point start-up: ω order (h ≤ 0.015)", slopes_small["two-point"]["omega"], 0.9, 1.1,
                    "preprint Fig 3: h"),
    ]
    if not quick:
        # the preprint's guides ask for slopes ≈ 1 ([0.9, 1.1]) over the whole grid j = 0..13: the position meets it (1.055);
        # ω's 1.102 misses it by 0.002 (the start-up error is pre-asymptotic for h ≥ 0.027): the deviation
        # is stated, and checked as measured, not hidden by narrowing the window
        checks += [
            check_range("two-point start-up: position order over the whole grid h_j, j = 0..13 ([0.9, 1.1])",
                        slopes["two-point"]["x"], 0.9, 1.1, "preprint Fig 3: h"),
            check_range("two-point start-up: ω order over the whole grid ([0.9, 1.1] missed: stated "
                        "deviation, measured 1.102)", slopes["two-point"]["omega"], 1.09, 1.115,
                        "preprint Fig 3: h (deviation)"),
        ]
    checks += [
        check_range("exact second point: position order", slopes["exact second point"]["x"], 1.9, 2.1,
                    "second order with an exact start (docs/theory/ferraro2015.md#e15)"),
        check_range("exact second point: ω order", slopes["exact second point"]["omega"], 1.8, 2.2,
                    "second order with an exact start (docs/theory/ferraro2015.md#e15)"),
        check_range("exact second point: energy order", slopes["exact second point"]["energy"], 1.8, 2.2,
                    "second order with an exact start (docs/theory/ferraro2015.md#e15)"),
    ]
    figs = [_error_panels(hs, err, {s: f"order {o['x']:.2f} / {o['omega']:.2f} / {o['energy']:.2f}, h ≤ 0.015"
                                    for s, o in slopes_small.items()},
                          "error in {} at t = 15", (1, 2), out / "pre_convergence.png")]
    data = {"h": hs.tolist(), "errors": err, "orders": slopes, "orders_h_ge_1.5e-3": slopes_big,
            "orders_h_le_0.015": slopes_small,
            "reference_T15": {"x": at("x", T).tolist()}, "initial_energy": float(ref["energy"][0])}
    notes = ("The preprint's dotted guides are h, h and h² for position, ω and energy. With the two-point "
             "start-up position and ω are first order; the energy's apparent order depends on its "
             "definition (a central energy gives ≈ 2 for h ≥ 1.5e-3 (docs/theory/ferraro2015.md); ours is the averaged-momentum "
             f"node energy, fitted order {slopes['two-point']['energy']:.2f} over all h, "
             f"{slopes_big['two-point']['energy']:.2f} for h ≥ 1.5e-3). With an exact second point all three "
             "are second order: the first order is the start-up's, not the scheme's (erratum E15). Deviation from "
             "the guide (slopes in [0.9, 1.1] over h_j = 0.15·10^(−j/4), j = 0..13): over that whole grid the fitted "
             f"two-point slopes are {slopes['two-point']['x']:.3f} (position) and {slopes['two-point']['omega']:.3f} "
             "(ω; the full run measures 1.102, just above 1.1), because the start-up error is pre-asymptotic for "
             f"h ≥ 0.027; restricted to h ≤ 0.015 they are {slopes_small['two-point']['x']:.3f} and "
             f"{slopes_small['two-point']['omega']:.3f}.")
    return checks, figs, data, notes
