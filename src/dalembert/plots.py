"""Figures of a run: configuration path, relative energy error, constraint residual; and the
log-log convergence plot. matplotlib with the Agg backend (no display needed)."""
from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

#: At most this many points are drawn per curve (long runs are strided).
MAX_POINTS = 5000


def _stride(n):
    return max(1, n // MAX_POINTS)


def run_figures(traj, model, out: Path) -> list[Path]:
    """Write path.png, energy.png, constraint.png for a trajectory; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    s = _stride(len(traj))
    t = traj.t[::s]
    label = f"{traj.metadata.get('method')}, h = {traj.metadata.get('h'):g}"
    files = []

    i, j = model.path
    x = getattr(traj, model.path_array)
    fig, ax = plt.subplots(figsize=(5.5, 5))
    ax.plot(x[::s, i], x[::s, j], lw=0.8)
    ax.plot(x[0, i], x[0, j], "o", color="tab:green", label="start")
    ax.plot(x[-1, i], x[-1, j], "s", color="tab:red", label="end")
    ax.set_xlabel(model.coordinates[i])
    ax.set_ylabel(model.coordinates[j])
    what = "configuration path" if model.path_array == "q" else f"path of {model.path_array}"
    ax.set_title(f"{model.name}: {what} ({label})", fontsize=9)
    ax.legend(fontsize=8)
    ax.set_aspect("equal", adjustable="datalim")
    files.append(_save(fig, out / "path.png"))

    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    err = np.abs(traj.relative_energy_error[::s])
    ax.semilogy(t, np.maximum(err, 1e-17), lw=0.8)
    ax.set_xlabel("t")
    ax.set_ylabel("|E(t) − E(0)| / |E(0)|")
    note = "" if "energy" in model.invariants else " (E is not an invariant of this model)"
    ax.set_title(f"{model.name}: relative energy error{note}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    files.append(_save(fig, out / "energy.png"))

    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    res = np.max(np.abs(traj.constraint_residual[::s]), axis=1)
    ax.semilogy(t, np.maximum(res, 1e-18), lw=0.8)
    ax.set_xlabel("t")
    ax.set_ylabel("max |μ(q) v − ν(q)|")
    ax.set_title(f"{model.name}: constraint residual at the nodes", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    files.append(_save(fig, out / "constraint.png"))
    return files


def convergence_figure(result, path: Path, title: str = "") -> Path:
    """Log-log plot of final-time errors in q (the first state array) against h, one line per
    method, with its order."""
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for name, err in result.errors_q.items():
        ax.loglog(result.hs, err, "o-", label=f"{name} (order {result.orders_q[name]:.2f})")
    h = result.hs
    for p, style in ((1, ":"), (2, "--")):
        ref = [e for e in result.errors_q.values()][0]
        ax.loglog(h, ref[0] * (h / h[0]) ** p, "k" + style, lw=0.8, alpha=0.6, label=f"slope {p}")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("h")
    x = getattr(result, "labels", ("q", "v"))[0]
    ax.set_ylabel(f"max |{x}(T) − {x}_ref(T)|, T = {result.t_final:g}")
    ax.set_title(title or f"{result.model}: convergence ({result.reference})", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
