"""Figures: a run's configuration path, energy and constraint residual; the convergence plot;
the quick looks of :meth:`Trajectory.plot` and :meth:`Ensemble.plot`. matplotlib with the Agg
backend (no display needed) unless a backend was chosen before (a notebook's inline one).

Conventions, for every figure the library draws (the report's included, through :func:`save_figure`):
the Okabe–Ito colour-blind-safe palette; axis labels with their unit, or "dimensionless" (the
papers' examples are nondimensional; a model whose parameters carry SI units is plotted in SI);
titles that say what is plotted; log axes with a tick label per decade and, when they span
fewer than two decades, labelled minor ticks.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import matplotlib
import matplotlib.ticker

if matplotlib.get_backend().lower() not in ("module://matplotlib_inline.backend_inline", "nbagg", "widget",
                                            "module://ipympl.backend_nbagg"):
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .systems.kind import kind_class  # noqa: E402

#: At most this many points are drawn per curve (long runs are strided).
MAX_POINTS = 5000

#: Okabe & Ito (2008), colour-blind-safe qualitative palette (black last).
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
plt.rcParams["axes.prop_cycle"] = matplotlib.cycler(color=OKABE_ITO)

#: Words that mark a label as already carrying a unit (or none needed).
_UNIT_MARKS = ("[", "dimensionless", "(count", "step", "number of", "iterations", "members")


def _stride(n):
    return max(1, n // MAX_POINTS)


# ---------------------------------------------------------------------------------------------
# units
# ---------------------------------------------------------------------------------------------

def unit_system(model) -> str:
    """"SI" when the model's parameters carry SI units (kg, m); "declared" for a model of your own
    whose system gives its coordinates' units (``units=``); else "dimensionless"."""
    from .errors import UnknownNameError
    from .models import spec
    if (getattr(model.system, "labels", None) or {}).get("units"):
        return "declared"
    try:
        units = " ".join(p.unit for p in spec(model.name).parameters)
    except UnknownNameError:          # a model of your own without declared units
        return "dimensionless"
    return "SI" if ("kg" in units or " m" in f" {units}") else "dimensionless"


_ANGLES = ("theta", "phi", "psi", "alpha", "angle", "θ", "φ", "ψ")


def unit_of(model, quantity: str) -> str:
    """The unit of ``quantity`` of ``model`` ("" when dimensionless): "t", "energy", "velocity
    of <coordinate>", or a coordinate name (angles in rad, lengths in m)."""
    system = unit_system(model)
    if system == "declared":
        units = model.system.labels["units"]
        rate = quantity.startswith("velocity of ")
        name = quantity.removeprefix("velocity of ")
        if quantity == "t":
            return "s"
        if name in model.coordinates:
            u = units[list(model.coordinates).index(name)]
            return f"{u}/s" if rate else u
        return ""
    if system != "SI":
        return ""
    if quantity == "t":
        return "s"
    if quantity == "energy":
        return "J"
    rate = quantity.startswith("velocity of ")
    name = quantity.removeprefix("velocity of ").lower()
    base = "rad" if (name.startswith(_ANGLES) or name.startswith("omega") or name.startswith("xi")) else "m"
    if name.startswith("omega") or name.startswith("xi"):
        return "rad/s"
    return f"{base}/s" if rate else base


def labelled(name: str, unit: str) -> str:
    """``name [unit]``, or ``name (dimensionless)``."""
    return f"{name} [{unit}]" if unit else f"{name} (dimensionless)"


_DIMENSIONLESS = [False]


@contextlib.contextmanager
def dimensionless_labels():
    """Inside: :func:`save_figure` marks every axis label without a unit as "(dimensionless)" — the
    papers' experiments, whose quantities are nondimensional."""
    _DIMENSIONLESS.append(True)
    try:
        yield
    finally:
        _DIMENSIONLESS.pop()


# ---------------------------------------------------------------------------------------------
# a run's figures
# ---------------------------------------------------------------------------------------------

def run_figures(traj, model, out: Path) -> list[Path]:
    """Write path.png, energy.png, constraint.png for a trajectory of a built-in model; return
    their paths. energy.png shows the relative energy error where energy is an invariant of the
    model, else the energy change E(t) − E(0) (the work of the non-conservative forces, e.g. a
    turning table's). constraint.png shows the rolling residual, and max |φ(q)| (constraint
    units) beside it for a system with configuration constraints."""
    out.mkdir(parents=True, exist_ok=True)
    s = _stride(len(traj))
    t = np.asarray(traj.t[::s])
    label = f"{traj.metadata.get('method')}, h = {traj.metadata.get('h'):g}"
    t_label = labelled("t", unit_of(model, "t"))
    files = []

    i, j = model.path
    x = getattr(traj, model.path_array)
    fig, ax = plt.subplots(figsize=(5.5, 5))
    ax.plot(x[::s, i], x[::s, j], lw=0.8, color=OKABE_ITO[0])
    ax.plot(x[0, i], x[0, j], "o", color=OKABE_ITO[2], label="start")
    ax.plot(x[-1, i], x[-1, j], "s", color=OKABE_ITO[3], label="end")
    ci, cj = model.coordinates[i], model.coordinates[j]
    ax.set_xlabel(labelled(ci, unit_of(model, ci)))
    ax.set_ylabel(labelled(cj, unit_of(model, cj)))
    what = "configuration path" if model.path_array == "q" else f"path of {model.path_array}"
    ax.set_title(f"{model.name}: {what}: {cj} against {ci}\n({label}, t ∈ [0, {traj.t[-1]:g}])", fontsize=9)
    ax.legend(fontsize=8)
    ax.set_aspect("equal", adjustable="datalim")
    files.append(save_figure(fig, out / "path.png"))

    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    if traj.energy_balance_residual is not None:            # forces act: E − E0 − W
        ax.semilogy(t, np.maximum(np.abs(np.asarray(traj.energy_balance_residual[::s])), 1e-17), lw=0.8)
        ax.set_ylabel(labelled("|E(t) − E(0) − W(t)|", unit_of(model, "energy")))
        ax.set_title(f"{model.name}: energy balance residual, W the energy supplied ({label})", fontsize=9)
    elif "energy" in model.invariants:
        err = np.abs(np.asarray(traj.relative_energy_error[::s]))
        ax.semilogy(t, np.maximum(err, 1e-17), lw=0.8)
        ax.set_ylabel("|E(t) − E(0)| / |E(0)| (dimensionless)")
        ax.set_title(f"{model.name}: relative energy error ({label})", fontsize=9)
    else:
        e = np.asarray(traj.energy[::s])
        ax.plot(t, e - e[0], lw=0.8)
        ax.set_ylabel(labelled("E(t) − E(0)", unit_of(model, "energy")))
        ax.set_title(f"{model.name}: energy change E(t) − E(0) ({label})\n"
                     f"E is not an invariant here: the constraint or external forces do work", fontsize=9)
    ax.set_xlabel(t_label)
    ax.grid(True, which="both", alpha=0.3)
    files.append(save_figure(fig, out / "energy.png"))

    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    unit = unit_of(model, "velocity of x")
    rolling = "max |μ(q) v − ν(q)|" + (f" [{unit}, rad/s]" if unit else " (dimensionless)")
    _residual_panel(ax, t, traj, s, rolling)
    ax.set_xlabel(t_label)
    ax.set_title(f"{model.name}: constraint residual at the nodes ({label})", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    files.append(save_figure(fig, out / "constraint.png"))
    return files


#: The label of the configuration-constraint residual's curve (φ is in the constraint's own units).
HOLONOMIC_LABEL = "configuration: max |φ(q)| (constraint units)"


def _residual_panel(ax, t, traj, s, rolling_label):
    """The rolling constraint residual max |μ(q) v − ν(q)| against time, and beside it, for a
    system with configuration constraints (``holonomic_residual`` (N+1, k)), max |φ(q)| in the
    constraint's own units; a legend when there are both. ``s``: the stride of ``t``."""
    res = np.max(np.abs(np.asarray(traj.constraint_residual[::s]).reshape(len(t), -1)), axis=1, initial=0.0)
    if "holonomic_residual" not in traj.fields():
        ax.semilogy(t, np.maximum(res, 1e-18), lw=0.8)
        ax.set_ylabel(rolling_label)
        return
    phi = np.max(np.abs(np.asarray(traj.holonomic_residual[::s]).reshape(len(t), -1)), axis=1, initial=0.0)
    ax.semilogy(t, np.maximum(res, 1e-18), lw=0.8, label=f"rolling: {rolling_label}")
    ax.semilogy(t, np.maximum(phi, 1e-18), lw=0.8, color=OKABE_ITO[3], label=HOLONOMIC_LABEL)
    ax.set_ylabel("max |residual| (each in its own units)")
    ax.legend(fontsize=7)


# ---------------------------------------------------------------------------------------------
# quick looks
# ---------------------------------------------------------------------------------------------

def _state_panel(ax, t, traj):
    """The kind's path array (``SystemKind.path_array``; else its first declared node array the
    trajectory has) against time (at most 6 components)."""
    kind = kind_class(traj.metadata.get("kind", ""))
    names = ((kind.path_array,) + tuple(a.name for a in kind.node_arrays)) if kind is not None else ("q",)
    for name in names:
        a = getattr(traj, name, None) if name in traj.fields() else None
        if a is not None:
            a = np.asarray(a).reshape(len(traj.t), -1)
            s = _stride(len(t))
            md = traj.metadata
            coords, cunits = md.get("coordinate_names"), md.get("units")
            per_s = "" if name == "q" else "/s"
            for k in range(min(a.shape[1], 6)):
                label = f"{name}[{k}]" if not coords or name not in ("q", "v") else (
                    coords[k] if name == "q" else f"d{coords[k]}/dt")
                if cunits and name in ("q", "v"):
                    label += f" ({cunits[k]}{per_s})"
                ax.plot(t[::s], a[::s, k], lw=0.8, label=label)
            units = {n.name: n.unit for n in kind.node_arrays} if kind is not None else {}
            unit = (", ".join(sorted(set(u + per_s for u in cunits))) if cunits and name in ("q", "v")
                    else units.get(name, "system units"))
            ax.set_ylabel(f"{name} ({unit})")
            ax.set_title(f"state {name} against time", fontsize=9)
            ax.legend(fontsize=7, ncol=2)
            return


def trajectory_figure(traj):
    """A quick-look Figure of a Trajectory: a state array, the relative energy error and the
    constraint residual against time (with max |φ(q)| beside it for a system with configuration
    constraints). Units are the system's own."""
    t = np.asarray(traj.t)
    s = _stride(len(t))
    md = traj.metadata
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    _state_panel(axes[0], t, traj)
    balance = traj.energy_balance_residual
    if balance is not None:                   # forces act: the balance E − E0 − W, not E
        axes[1].semilogy(t[::s], np.maximum(np.abs(np.asarray(balance))[::s], 1e-17), lw=0.8)
        axes[1].set_ylabel("|E(t) − E(0) − W(t)| (energy units)")
        axes[1].set_title("energy balance residual (W: energy supplied by forces, supports, ∂V/∂t)", fontsize=9)
    elif traj.energy is not None:
        axes[1].semilogy(t[::s], np.maximum(np.abs(np.asarray(traj.relative_energy_error))[::s], 1e-17), lw=0.8)
        axes[1].set_ylabel("|E(t) − E(0)| / |E(0)| (dimensionless)")
        axes[1].set_title("relative energy error (where E is an invariant; else the energy change)", fontsize=9)
    if traj.constraint_residual is not None:
        _residual_panel(axes[2], t[::s], traj, s, "max |constraint residual| (system units)")
        axes[2].set_title("constraint residual at the nodes", fontsize=9)
    for ax in axes:
        ax.set_xlabel("t (s)" if md.get("units") else "t (system units)")
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"{md.get('system', '')} · {md.get('method', '')} · h = {md.get('h', float('nan')):g}", fontsize=10)
    polish(fig)
    return fig


def ensemble_figure(ens):
    """A quick-look Figure of an Ensemble: each member's relative energy error and constraint
    residual against time (those kept), thin lines, with the median in black."""
    t = np.asarray(ens.t)
    md = ens.metadata
    panels = [k for k in ("energy", "constraint_residual") if k in ens.arrays]
    if not panels:
        panels = [next(iter(ens.arrays))]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 3.8), squeeze=False)
    for ax, name in zip(axes[0], panels):
        if name == "energy":
            y = np.abs(ens.relative_energy_error)
            ax.set_ylabel("|E(t) − E(0)| / |E(0)| (dimensionless)")
            ax.set_title(f"relative energy error, {len(ens)} members", fontsize=9)
        else:
            a = np.asarray(ens.arrays[name])
            y = np.max(np.abs(a.reshape(a.shape[0], a.shape[1], -1)), axis=2)
            ax.set_ylabel(f"max |{name}| (system units)")
            ax.set_title(f"{name.replace('_', ' ')}, {len(ens)} members", fontsize=9)
        floor = 1e-18
        ax.semilogy(t, np.maximum(y.T, floor), lw=0.5, alpha=0.35, color=OKABE_ITO[0])
        ax.semilogy(t, np.maximum(np.nanmedian(y, axis=0), floor), lw=1.2, color="black", label="median")
        ax.set_xlabel("t (system units)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"{md.get('system', '')} · {md.get('method', '')} · h = {md.get('h', float('nan')):g}", fontsize=10)
    polish(fig)
    return fig


# ---------------------------------------------------------------------------------------------
# convergence
# ---------------------------------------------------------------------------------------------

def convergence_figure(result, path: Path, title: str = "") -> Path:
    """Log-log plot of final-time errors in the first state array against h: one line per method
    with its fitted slope, and dashed reference lines of slope p through each method's
    finest-h error, p its declared order."""
    from . import methods as _methods
    fig, ax = plt.subplots(figsize=(6.5, 4.8))
    h = np.asarray(result.hs, float)
    for k, (name, err) in enumerate(result.errors_q.items()):
        c = OKABE_ITO[k % len(OKABE_ITO)]
        ax.loglog(h, err, "o-", color=c, label=f"{name}: fitted slope {result.orders_q[name]:.2f}")
        try:
            p = _methods.get(name).traits.order
        except Exception:  # noqa: BLE001 - a user's method without traits: no reference line
            continue
        e = np.asarray(err, float)
        ok = np.isfinite(e) & (e > 0)
        if ok.any():
            i = np.flatnonzero(ok)[np.argmin(h[ok])]
            ax.loglog(h, e[i] * (h / h[i]) ** p, "--", color=c, lw=0.8, alpha=0.7, label=f"slope {p} (declared)")
    ax.set_xlabel("step size h (time units of the model)")
    x = getattr(result, "labels", ("q", "v"))[0]
    ax.set_ylabel(f"max |{x}(T) − {x}_ref(T)|, T = {result.t_final:g}")
    ax.set_title(title or f"{result.model}: global error at T against h ({result.reference})", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return save_figure(fig, path)


# ---------------------------------------------------------------------------------------------
# finishing every figure
# ---------------------------------------------------------------------------------------------

def _log_ticks(axis, lo, hi):
    axis.set_major_locator(matplotlib.ticker.LogLocator(base=10, numticks=12))
    if lo > 0 and np.isfinite(lo) and np.isfinite(hi) and np.log10(hi / lo) < 2:
        axis.set_minor_locator(matplotlib.ticker.LogLocator(base=10, subs=(2, 3, 5), numticks=12))
        axis.set_minor_formatter(matplotlib.ticker.LogFormatterSciNotation(labelOnlyBase=False,
                                                                            minor_thresholds=(2, 1)))


def polish(fig) -> None:
    """Tick density on log axes (a labelled tick per decade; labelled minor ticks 2, 3, 5 when an
    axis spans under two decades), "(dimensionless)" on unit-less labels inside
    :func:`dimensionless_labels`, and a layout without overlapping labels."""
    for ax in fig.get_axes():
        if ax.get_xscale() == "log":
            _log_ticks(ax.xaxis, *sorted(ax.get_xlim()))
        if ax.get_yscale() == "log":
            _log_ticks(ax.yaxis, *sorted(ax.get_ylim()))
        if _DIMENSIONLESS[-1]:
            for get, set_ in ((ax.get_xlabel, ax.set_xlabel), (ax.get_ylabel, ax.set_ylabel)):
                text = get()
                if text.strip() in ("k", "n", "k (step)"):
                    set_("step k")
                elif text and not any(m in text for m in _UNIT_MARKS):
                    set_(f"{text} (dimensionless)")
        for lab in ax.get_xticklabels(which="both"):
            lab.set_fontsize(8)
    try:
        fig.set_layout_engine("constrained")
    except Exception:  # noqa: BLE001 - older matplotlib
        fig.tight_layout()


def save_figure(fig, path: Path) -> Path:
    """Write a Matplotlib figure to ``path`` (a PNG at 110 dpi; parent folders created) in the
    library's conventions (:func:`polish`: unit-less axis labels marked "(dimensionless)"), close it,
    and return ``path``. The figure may have any number of axes."""
    from ._io import atomic_path
    path = Path(path)
    polish(fig)
    try:        # atomically: a rerun's figure replaces the earlier one only when complete
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=110, format=path.suffix.lstrip(".") or "png")
    finally:
        plt.close(fig)
    return path
