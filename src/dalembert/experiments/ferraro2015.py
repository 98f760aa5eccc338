"""Experiments of Ferraro, Jiménez, Martín de Diego, "New developments on the geometric
nonholonomic integrator", Nonlinearity 28 (2015) — spec ``gni-2015-new-developments.md``.

* ``ferraro2015-orders``: the order table of R6 (GNI-A/B order 1), R7 (nonholonomic RATTLE order
  2) and R9 (the T*Q composition A(h/2)∘B(h/2) is order 2 and is not RATTLE; the naive
  composition of the staggered maps (13)/(14) is order 1) on the test problems P1 (linear) and P2
  (affine) of spec §5.5, h = 0.1·2^−j, T = 5.
* ``ferraro2015-adjointness``: R8, Theorem 5.4: F_A^h ∘ F_B^{−h} = Id on S_A(h) and
  F_B^h ∘ F_A^{−h} = Id on S_B(h) (to ≤ 1e-13), and the failure of the identity off the manifold;
  plus the T*Q form: GNI-A(h) ∘ C ∘ GNI-B(−h) ∘ C = Id with C(q, p) = (q, (P−Q)*p + 2Q*Π).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .. import models
from ..convergence import convergence, fitted_order
from ..methods import get as get_method
from ..methods import gni_leapfrog as lf
from ..methods.gni import affine_reflection
from matplotlib.ticker import NullFormatter

from ..plots import plt, _save
from .base import check_above, check_below, check_range, experiment

PAPER = "Ferraro, Jiménez, Martín de Diego, Nonlinearity 28 (2015) 871–900"
ORDER_METHODS = ("gni-euler-a", "gni-euler-b", "nh-rattle", "gni-euler-ab", "gni-midpoint", "dla-midpoint")
EXPECTED = {"gni-euler-a": (0.85, 1.15, "R6"), "gni-euler-b": (0.85, 1.15, "R6"),
            "nh-rattle": (1.9, 2.1, "R7"), "gni-euler-ab": (1.85, 2.15, "R9"),
            "gni-midpoint": (1.85, 2.15, "Def. 4.1"), "dla-midpoint": (1.85, 2.15, "2008 §2.6")}


def _naive_composition_error(model, hs, T):
    """Final-time q error of F_A(h/2) then F_B(h/2) in the staggered (q, p̃, λ̃) variables."""
    sys_ = model.system
    step_a = lf.make_leapfrog_step(sys_, model.q0, "A")
    step_b = lf.make_leapfrog_step(sys_, model.q0, "B")

    @jax.jit
    def run(q0, v0, h, n):
        p0 = sys_.momentum(q0, v0)
        st = lf.LeapfrogState(q0, p0, jnp.zeros(1))

        def body(_, s):
            return step_b(step_a(s, 0.5 * h), 0.5 * h)
        return lax.fori_loop(0, n, body, st).q

    errs = []
    for h in hs:
        n = int(round(T / h))
        qT = np.asarray(run(jnp.asarray(model.q0), jnp.asarray(model.v0), h, n))
        q_ref, _ = model.solution(np.array([0.0, n * h]))
        errs.append(float(np.max(np.abs(qT - q_ref[-1]))))
    return np.array(errs)


@experiment("ferraro2015-orders", "Order table of the GNI family on P1 (linear) and P2 (affine)",
            PAPER, "Fitted global orders (final-time error in q, T = 5) against the reference ODE: "
            "targets R6, R7, R9 of the spec; the naive staggered composition is shown to be first order.")
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
                                  p_naive, 0.7, 1.3, "spec §2.3 / R9"))
        ax.loglog(res.hs, naive, "x--", label=f"naive staggered A∘B ({p_naive:.2f})")
        diff = np.max(np.abs(res.errors_q["gni-euler-ab"] - res.errors_q["nh-rattle"]) / res.errors_q["nh-rattle"])
        checks.append(check_above(f"{name}: gni-euler-ab is not nh-rattle (max relative difference of errors)",
                                  diff, 1e-3, "Remark 5.5 / R9"))
        ax.set_title(f"{name}: {'affine' if mdl.system.is_affine else 'linear'} constraint, T = {T:g}", fontsize=9)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("h")
        ax.set_ylabel("max |q(T) − q_ref(T)|")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    figs = [_save(fig, out / "orders.png")]
    return checks, figs, data, ("Errors are final-time max-norm errors in q against the reference ODE "
                                "(DOP853, rtol = atol = 1e-13). Start-up: p⁺₀ = G v₀ (Legendre).")


def _random_states(model, rng, count, scale=0.5):
    n = model.q0.size
    q = model.q0 + scale * rng.standard_normal((count, n))
    p = rng.standard_normal((count, n))
    lam = rng.standard_normal((count, model.system.constraint_matrix(jnp.asarray(model.q0)).shape[0]))
    return q, p, lam


@experiment("ferraro2015-adjointness", "Adjointness of GNI-A and GNI-B (Theorem 5.4)", PAPER,
            "F_A^h ∘ F_B^{−h} = Id on S_A(h), F_B^h ∘ F_A^{−h} = Id on S_B(h) (target R8), its failure "
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
                                      on, 1e-13, "R8"))
            checks.append(check_above(f"{name}: {label} ≠ Id off the manifold (median error)", off, 1e-3,
                                      "spec §2.3"))
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
                                  "spec §2.3"))
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
    return checks, [_save(fig, out / "adjointness.png")], data, (
        "In the staggered variables the identity holds only on the state manifolds S_A(h), S_B(h) "
        "(λ̃ is part of the state); in T*Q variables the adjoint of GNI-A is C∘GNI-B∘C everywhere.")
