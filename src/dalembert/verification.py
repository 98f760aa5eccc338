"""Conformance of the registry: every registered method on every built-in model of a kind it
integrates, checked against what its traits declare.

For a (method, model) pair, :func:`check_pair` runs the method at three step sizes h0, h0/2, h0/4
to a short final time, fits the global order of the error at the final time against the model's
exact or reference solution (:meth:`~dalembert.models.base.Model.state_solution`) and compares it
with ``traits.order`` (± :data:`ORDER_TOL`); and measures, on the finest run, every checkable claim
of ``traits.preserves`` (:func:`check_claim`, :data:`MEASURES`: the node constraint, a discrete
constraint on consecutive nodes, the energy, group membership). A claim that cannot be read from
the nodes (a momentum map, a quantity the nodes do not report, a condition this model does not
meet, another option) is listed in ``Row.unchecked`` with the reason. A pair the engine refuses
(a feature the method does not accept, e.g. a constant-metric method on a q-dependent metric) is
reported as not applicable, with the reason; a run that stops with a ConvergenceError is a failed
pair (``Row.error``, the one-line message), not an exception.

The order is fitted on the kind's ``order_arrays`` — ``q`` on Rⁿ (and on the almost-Poisson forms,
which report q), the smaller slope of ``x`` and ``R`` on shape × group — and ``omega`` for the
SO(3) kinds, whose declared order is in ω (their R is first order with the left-endpoint
reconstruction, Jiménez–Scheurle 2015 Thm 5.2(2)). ``tests/conformance`` runs the pairs (its
``conformance_policy`` chooses the quick ones); ``python -m dalembert.verification`` prints the
table of every pair.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from . import methods as _methods
from . import models as _models
from .convergence import fitted_order
from .declarations import Invariant, Role
from .errors import ConvergenceError, InputError

#: allowed |fitted − declared| order for a method of order 2; a method of order p is allowed
#: ORDER_TOL · p / 2 (:func:`order_tolerance`): the fitted slope of an order-8 method over three
#: step sizes wanders by a few tenths (measured 7.9–8.3 on the models here)
ORDER_TOL = 0.15
#: the step sizes of a method of order p ≥ 4 are HIGH_ORDER_SCALE[p] × the model's (h0, T), so that
#: its errors lie above round-off (an order-8 method at h0 = 0.1 is at 1e-15); per (model, order),
#: or (model, method name), where the default misses the asymptotic regime
HIGH_ORDER_SCALE = {4: 4.0, 6: 4.0, 8: 8.0}
#: (p1-linear at order 8: rk8-projected, Prince–Dormand's tableau, fits 7.18 at 8× and 6.87 at 4×
#: — errors 3.4e-9, 4.3e-11, 2.5e-13 —, 7.68 at 6×; nh-rattle-8 8.15 at 6×)
HIGH_ORDER_MODEL_SCALE = {("gearbox", 8): 4.0, ("chaplygin-sleigh", 4): 16.0, ("tilting-disk", 8): 4.0,
                          ("tilting-disk-centre", 8): 4.0,
                          # (h0 = 0.1: nh-rattle-6 fits 6.99, spark-lobatto3 3.70 at 4×; nh-rattle-8
                          # 10.5, rk8-projected 9.44 at 8×, 8.70 and 8.34 at 4×)
                          ("sleigh-pendulum", 4): 2.0, ("sleigh-pendulum", 6): 2.0, ("sleigh-pendulum", 8): 3.0,
                          ("p1-linear", 8): 6.0, ("suslov", 6): 16.0,
                          # per method where the model's scale does not suit it: lie-gni-mv-6 fits
                          # 6.89 at 16× (error 2e-3 at h = 1.6: pre-asymptotic), 6.04 at 4×
                          ("suslov", "lie-gni-mv-6"): 4.0}
#: h0 of the first-order methods on these models (× the model's h0): on the tilting disk (spin
#: 6 rad/s) gni-euler-a fits 1.72 and gni-euler-b 2.50 at h = 0.02 … 0.005 (an O(h²) term as
#: large as the O(h) one), 1.11 and 1.00 at h = 0.00125 … 0.0003
#: (the same motion in centre coordinates likewise); on sleigh-pendulum gni-euler-a fits 0.88 at
#: h = 0.1 … 0.025, 0.98 at 0.025 … 0.00625
FIRST_ORDER_MODEL_SCALE = {"tilting-disk": 1 / 16, "tilting-disk-centre": 1 / 16, "sleigh-pendulum": 1 / 4}
#: a pair whose coarsest error is below this is at round-off for every h: not applicable (the
#: model's solution is resolved exactly at these steps; e.g. the sleigh for orders 6 and 8)
ROUNDOFF_ERROR = 1e-10


def order_tolerance(order: int) -> float:
    """The allowed |fitted − declared| for a method of this order (see :data:`ORDER_TOL`)."""
    return ORDER_TOL * max(order, 2) / 2
#: pairs measured one order above the declared (general) order, and why: the check then only
#: requires fitted ≥ declared − ORDER_TOL. A pair not listed must match within ± ORDER_TOL.
SUPERCONVERGENT = {
    ("gni-euler-a", "nonholonomic-particle"): "V = 0: the Euler-A and Euler-B L_d equal Störmer–Verlet's",
    ("gni-euler-b", "nonholonomic-particle"): "V = 0: the Euler-A and Euler-B L_d equal Störmer–Verlet's",
    ("gni-euler-a", "vertical-rolling-disk"): "V = 0: the Euler-A and Euler-B L_d equal Störmer–Verlet's",
    ("gni-euler-b", "vertical-rolling-disk"): "V = 0: the Euler-A and Euler-B L_d equal Störmer–Verlet's",
    ("gni-euler-a", "snakeboard"): "V = 0: the Euler-A and Euler-B L_d equal Störmer–Verlet's",
    ("gni-euler-b", "snakeboard"): "V = 0: the Euler-A and Euler-B L_d equal Störmer–Verlet's",
    ("dg-itoh-abe", "chaplygin-sleigh (almost-poisson)"): "measured order 2 on this hand-derived form",
    ("dg-itoh-abe", "gearbox (almost-poisson)"): "measured order 2 on this hand-derived form",
    ("dg-itoh-abe", "vertical-rolling-disk (almost-poisson)"): "measured order 2 on this hand-derived form",
}
#: (h0, t_final) per model, chosen so that the three errors lie in the asymptotic regime above
#: round-off for every method of the model (default: (0.1, 1.0))
MODEL_SETTINGS = {
    # the exponential-chart GNI (order 1) reaches its asymptotic regime only below h ≈ 0.02 here
    "rolling-ball": (0.02, 1.0), "rolling-ball-pre": (0.01, 1.0),
    # dla-left's error on the affine problem is pre-asymptotic at T = 1 for h ≥ 0.01
    "p2-affine": (0.05, 4.0),
    # the disk spins at 6 rad/s: h = 0.1 is pre-asymptotic
    "tilting-disk": (0.02, 1.0), "tilting-disk-so3": (0.02, 1.0), "tilting-disk-centre": (0.02, 1.0),
    # the rattleback pitches at ~10² rad/s: nh-rattle-sym's q errors at T = 0.1 are 1.3e-3, 3.2e-4
    # for h = 5e-4, 2.5e-4 (order 2.07); at h = 1e-3 still pre-asymptotic (2.19)
    "rattleback": (0.0005, 0.1),
}
DEFAULT_SETTINGS = (0.1, 1.0)


def _relative(values, scale):
    return float(np.max(np.abs(values))) / max(1.0, scale)


#: tolerance of each checkable invariant (measured relative values are at 1e-16 … 1e-13 on the
#: models here; a claim that is false measures O(h^p) ≥ 1e-8 at these steps)
TOLERANCES = {Invariant.NODE_CONSTRAINT: 1e-11, Invariant.DISCRETE_CONSTRAINT: 1e-11, Invariant.ENERGY: 1e-11,
              Invariant.HOLONOMIC_CONSTRAINT: 1e-11,
              Invariant.ENERGY_BALANCE: 1e-11, Invariant.GROUP_MEMBERSHIP: 1e-12}


class NotMeasurable(Exception):
    """A checkable claim that this run cannot measure (the array or the system's function it needs
    is absent); the message says why."""


def _velocity_scale(tr, system) -> float:
    """max |v| of the first velocity array the system's kind declares (the scale of relative
    constraint residuals; 0 when there is none)."""
    for name in type(system).arrays_with(Role.VELOCITY, Role.GROUP_VELOCITY):
        if name in tr.fields():
            return float(np.max(np.abs(getattr(tr, name))))
    return 0.0


def _node_constraint(claim, tr, system):
    return _relative(tr.constraint_residual, _velocity_scale(tr, system))


def _discrete_constraint(claim, tr, system):
    import jax
    import jax.numpy as jnp
    if not hasattr(system, "constraint_matrix") or "q" not in tr.fields():
        raise NotMeasurable(f"a {type(system).kinds()[0]} system has no constraint_matrix(q) to evaluate ω_d with")
    if tr.metadata.get("save_every", 1) != 1:
        raise NotMeasurable("ω_d needs every step's node (save_every = 1)")
    omega = claim.discrete_constraint(system)
    q = jnp.asarray(tr.q)
    h = float(tr.metadata["h"])
    res = jax.jit(jax.vmap(lambda a, b: omega(a, b, h)))(q[:-1], q[1:])
    return _relative(np.asarray(res), _velocity_scale(tr, system))


def _holonomic_constraint(claim, tr, system):
    if "holonomic_residual" not in tr.fields():
        raise NotMeasurable("the system has no configuration constraints")
    return _relative(tr.extra["holonomic_residual"], float(np.max(np.abs(tr.q))))


def _energy(claim, tr, system):
    return float(np.max(np.abs(tr.energy - tr.energy[0]))) / max(abs(float(tr.energy[0])), 1e-300)


def _group_membership(claim, tr, system):
    if "orthogonality_defect" not in tr.fields():
        raise NotMeasurable("the trajectory has no orthogonality_defect")
    return float(np.max(tr.extra["orthogonality_defect"]))


def _energy_balance(claim, tr, system):
    if "work" not in tr.fields():
        raise NotMeasurable("the trajectory has no work array (no forces act)")
    e = np.asarray(tr.energy)
    return float(np.max(np.abs(e - e[0] - np.asarray(tr.work)))) / max(abs(float(e[0])), 1e-300)


#: how each checkable invariant is measured on a Trajectory (``Invariant.how`` says it in words)
MEASURES = {Invariant.NODE_CONSTRAINT: _node_constraint, Invariant.DISCRETE_CONSTRAINT: _discrete_constraint,
            Invariant.HOLONOMIC_CONSTRAINT: _holonomic_constraint,
            Invariant.ENERGY: _energy, Invariant.GROUP_MEMBERSHIP: _group_membership,
            Invariant.ENERGY_BALANCE: _energy_balance}


def check_claim(claim, tr, system, options: dict) -> tuple:
    """``(measured, tolerance, ok)`` for a claim measured on a finished run ``tr`` of ``system``
    with build ``options`` (defaults filled in), or ``(None, reason)`` when it is not checked:
    proved but not readable from the nodes, its condition does not hold or cannot be decided for
    this system, it holds with other options, or this run lacks what the measurement needs."""
    if not claim.invariant.checkable:
        return None, claim.invariant.how
    if not claim.checkable:
        why = "the preserved quantity is not a node array" if not claim.node_quantity else "no node measurement of this form"
        return None, f"proved, not checked: {why}"
    if not claim.holds_with(options):
        return None, f"holds with {', '.join(f'{k}={v!r}' for k, v in claim.options)}: not run here"
    if claim.condition:
        holds = claim.holds_for(system) if claim.holds_for is not None else None
        if holds is None:
            return None, f"proved for {claim.condition}; not decidable for this system: not checked"
        if not holds:
            return None, f"proved for {claim.condition}, which this system is not: not checked"
    try:
        value = MEASURES[claim.invariant](claim, tr, system)
    except NotMeasurable as exc:
        return None, f"not measurable on this run: {exc}"
    tol = TOLERANCES[claim.invariant]
    return value, tol, value <= tol


@dataclass
class Row:
    """One (method, model) pair: declared and fitted order, the preserved checks and the verdict."""

    method: str
    model: str
    kind: str
    declared: int
    fitted: float = math.nan
    errors: list = field(default_factory=list)
    array: str = ""
    preserved: dict = field(default_factory=dict)   # invariant label -> (measured, tolerance, ok)
    unchecked: list = field(default_factory=list)   # (claim statement, why it is not checked)
    applicable: bool = True
    reason: str = ""
    seconds: float = 0.0
    error: str = ""                                  # a run that did not converge: its message

    @property
    def order_ok(self) -> bool:
        if self.error:
            return False
        if (self.method, self.model) in SUPERCONVERGENT:
            return self.fitted >= self.declared - order_tolerance(self.declared)
        return abs(self.fitted - self.declared) <= order_tolerance(self.declared)

    @property
    def ok(self) -> bool:
        return not self.applicable or (self.order_ok and all(v[2] for v in self.preserved.values()))


def _forms(model) -> dict:
    """The systems of a model that conformance runs: ``{"system": model.system}`` plus the
    hand-derived almost-Poisson form where the model has one."""
    out = {"system": model.system}
    if model.almost_poisson is not None:
        out["almost-poisson"] = model.almost_poisson
    return out


def pairs() -> list:
    """(method name, model name, form) for every registered compiled method and every system of a
    built-in model (:func:`_forms`) whose kind the method integrates *directly*; a method that no
    built-in system is of a kind for (the Lie-group GNI) gets the systems that reach it through a
    registered view. Views are otherwise exercised by :data:`VIEW_PAIRS`: through a view every
    pair would recompile the automatic reduction, minutes per model."""
    from .systems.kind import find_view
    out = []
    compiled = {n: m for n, m in _methods.registry().items() if m.compiled}
    for model_name in _models.available():
        for form, system in _forms(_models.get(model_name)).items():
            kinds = set(type(system).kinds())
            out += [(name, model_name, form) for name, m in compiled.items() if kinds & set(m.traits.integrates)]
    covered = {m for m, _, _ in out}
    for name, m in compiled.items():
        if name in covered:
            continue
        for model_name in _models.available():
            try:
                find_view(_models.get(model_name).system, tuple(m.traits.integrates))
            except LookupError:
                continue
            out.append((name, model_name, "system"))
    return out + [p for p in VIEW_PAIRS if p not in out]


#: one (method, model) per registered view that :func:`pairs` does not already run through it:
#: the view's conversion, anchored reduction and state map checked as any pair is
VIEW_PAIRS = (("dg-gonzalez", "chaplygin-sleigh", "system"),)


def check_pair(method_name: str, model_name: str, form: str = "system", hs=None, t_final=None) -> Row:
    """Run and check one pair (see module doc)."""
    from .engine import integrate
    method = _methods.get(method_name)
    model = _models.get(model_name)
    system = _forms(model)[form]
    state = model.initial_state
    if form == "almost-poisson":
        state = {"x0": np.asarray(system.reduce(model.q0, model.v0))}
    kinds = type(system).kinds()
    row = Row(method.name, model.name if form == "system" else f"{model.name} ({form})", kinds[0],
              method.traits.order)
    h0, T = MODEL_SETTINGS.get(model.name, DEFAULT_SETTINGS)
    order = method.traits.order
    h0 *= FIRST_ORDER_MODEL_SCALE.get(model.name, 1.0) if order == 1 else 1.0
    if order >= 4:
        scale = HIGH_ORDER_MODEL_SCALE.get((model.name, method.name), HIGH_ORDER_MODEL_SCALE.get(
            (model.name, order), HIGH_ORDER_SCALE.get(order, 8.0)))
        h0 *= scale
        T = h0 * max(2, math.ceil(T / h0 - 1e-9))              # a whole number of the coarsest steps
    T = float(t_final if t_final is not None else T)
    hs = np.asarray(hs if hs is not None else (h0, h0 / 2, h0 / 4), float)
    arrays = type(model.system).order_arrays
    row.array = ", ".join(arrays)
    t0 = time.perf_counter()
    runs = []
    try:
        for h in hs:
            runs.append(integrate(system, method, h=float(h), t_final=T, progress=False, **state))
    except InputError as exc:
        row.applicable, row.reason = False, " ".join(str(exc).split())
        return row
    except ConvergenceError as exc:
        row.error = f"h = {hs[len(runs)]:g}: " + " ".join(str(exc).split())
        row.seconds = time.perf_counter() - t0
        return row
    finals = sorted({round(float(tr.t[-1]), 12) for tr in runs})
    sol, _ = model.state_solution(np.array([0.0] + finals))
    fits = {}
    for a in arrays:
        ref = {t: np.asarray(sol[a])[i + 1] for i, t in enumerate(finals)}
        errs = [float(np.max(np.abs(np.asarray(getattr(tr, a))[-1] - ref[round(float(tr.t[-1]), 12)])))
                for tr in runs]
        fits[a] = (fitted_order(hs, errs), errs)
    worst = min(fits, key=lambda a: fits[a][0])
    row.fitted, row.errors = fits[worst]
    if max(row.errors) < ROUNDOFF_ERROR:
        row.applicable = False
        row.reason = (f"errors at round-off for every h ({max(row.errors):.0e}): the model's solution is "
                      f"resolved exactly at these steps, no order to fit")
        return row
    finest = runs[-1]
    defaults = method.options() or {}
    for claim in method.traits.preserves:
        label = claim.invariant.label
        result = check_claim(claim, finest, system, defaults)
        if result[0] is None:
            row.unchecked.append((claim.statement, result[1]))
        elif label not in row.preserved or not result[2]:
            row.preserved[label] = result
    row.seconds = time.perf_counter() - t0
    return row


def table(rows) -> str:
    """A Markdown table of rows."""
    lines = ["| method | model | kind | declared | fitted (array) | preserved (measured ≤ tol) | result |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if not r.applicable:
            lines.append(f"| {r.method} | {r.model} | {r.kind} | {r.declared} | — | — | n/a: {r.reason[:90]} |")
            continue
        if r.error:
            lines.append(f"| {r.method} | {r.model} | {r.kind} | {r.declared} | — | — | FAIL: {r.error[:110]} |")
            continue
        pres = "; ".join(f"{k} {v[0]:.1e}" for k, v in r.preserved.items()) or "—"
        if r.unchecked:
            pres += f" ({len(r.unchecked)} proved, not checked)"
        note = " (superconvergent here)" if (r.method, r.model) in SUPERCONVERGENT else ""
        lines.append(f"| {r.method} | {r.model} | {r.kind} | {r.declared} | {r.fitted:.2f} ({r.array}){note} "
                     f"| {pres} | {'pass' if r.ok else 'FAIL'} |")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    import sys
    rows = []
    for mname, model, form in pairs():
        r = check_pair(mname, model, form)
        rows.append(r)
        print(f"{mname:18s} {r.model:40s} {r.fitted:6.2f} {r.declared} {'ok' if r.ok else 'FAIL'} "
              f"{r.seconds:5.1f}s {(r.error or r.reason)[:60]}", file=sys.stderr, flush=True)
    print(table(rows))
    unchecked = sorted({(r.method, claim, why) for r in rows for claim, why in r.unchecked})
    if unchecked:
        print("\n| method | claim | not checked because |\n|---|---|---|")
        print("\n".join(f"| {m} | {c} | {w} |" for m, c, w in unchecked))
