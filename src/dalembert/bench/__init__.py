"""Speed benchmarks: steps per second of every method, against a NumPy loop and SciPy's DOP853.

For each (model, method):

* **dalembert** — ``dl.integrate`` with the default options (every node saved), one warm-up run
  that compiles, then the best of a few timed runs: ``metadata['steps_per_second']`` (run time
  after compilation);
* **NumPy** — the same scheme as a plain NumPy per-step loop (:mod:`dalembert.bench.numpy_loops`),
  best of a few runs; ``speedup`` = dalembert / NumPy steps per second;
* **accuracy** — the final error in q (max-norm) at ``t_accuracy`` against the reference solution
  (index-1 ODE, DOP853 at rtol = atol = 1e-13), and **SciPy** ``solve_ivp(method="DOP853")`` on the
  same index-1 ODE (dalembert's compiled right-hand side), *tuned to the same final error*: the
  loosest rtol (= atol) on a half-decade grid whose final error in q is at most dalembert's; its
  wall time is compared with the wall time of the ``dl.integrate`` call over the same interval.

Methods: by default the six GNI/DLA methods that have a NumPy loop (``nh-rattle``,
``gni-euler-a``, ``gni-euler-b``, ``gni-euler-ab``, ``gni-midpoint``, ``dla-midpoint``);
``methods="all"`` adds every other compiled method that integrates a ``NonholonomicSystem``
(the discrete-gradient methods), without a NumPy column.

Step sizes: gearbox h = 0.1 (the model's default, and the ``dalembert run`` target), chaotic quartic
(n = 3) h = 0.01 (the first-order GNIs blow up within 10⁴ steps at larger h). Timed runs are
10⁵ steps (2·10⁴ for the methods that solve a Newton system), short enough that every method stays
bounded on both models.

>>> from dalembert.bench import run_benchmarks, format_table
>>> print(format_table(run_benchmarks(quick=True)))
"""
from __future__ import annotations

import datetime as _dt
import os
import platform
import time
import warnings
from typing import Callable, Iterable

import numpy as np

from . import numpy_loops

#: Step size per benchmark model.
BENCH_H = {"gearbox": 0.1, "chaotic-quartic": 0.01}
#: Final time of the accuracy comparison (full / quick).
T_ACCURACY = {"gearbox": 50.0, "chaotic-quartic": 20.0}
T_ACCURACY_QUICK = {"gearbox": 50.0, "chaotic-quartic": 10.0}
#: Timed steps (dalembert, NumPy) for explicit and Newton-based steps: full and quick.
STEPS = {"explicit": (100_000, 20_000), "newton": (20_000, 3_000)}
STEPS_QUICK = {"explicit": (1_000, 300), "newton": (1_000, 100)}
#: Longest timed run (s, estimated from the accuracy run): slow methods get fewer steps.
MAX_RUN_SECONDS = 2.0
#: rtol grid of the DOP853 tuning (rtol = atol), loosest first.
RTOL_GRID = tuple(10.0 ** (-k / 2) for k in range(4, 27))
RTOL_GRID_QUICK = tuple(10.0 ** (-k) for k in range(2, 13))
#: The targets of the benchmark issue.
TARGET_RATTLE_STEPS_PER_SECOND = 1e6
TARGET_SPEEDUP = 30.0
TARGET_CLI_SECONDS = 5.0

_DEFAULT_MODEL_PARAMS = {"chaotic-quartic": {"n": 3}}


def _log(cb, msg):
    if cb is not None:
        cb(msg)


def _best(fn, repeats):
    """(best wall time in s, last result) of ``repeats`` calls of fn()."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):  # pragma: no cover - not Unix
        return None


def machine_info() -> dict:
    """CPU model, core counts, versions and date, for the results file."""
    import jax
    import scipy

    from .. import __version__
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count()
    return {
        "cpu": cpu, "logical_cores": os.cpu_count(), "usable_cores": usable,
        "python": platform.python_version(), "platform": platform.platform(),
        "jax": jax.__version__, "numpy": np.__version__, "scipy": scipy.__version__,
        "dalembert": __version__, "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "load_average": _loadavg(),
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def _reference_final_q(model, T):
    q, _ = model.solution(np.array([0.0, T]))
    return np.asarray(q[-1])


def _dop853_sweep(model, T, q_ref, grid, repeats, cb):
    """[(rtol, final error in q, best wall s, nfev)] for DOP853 on the index-1 ODE over [0, T]."""
    from scipy.integrate import solve_ivp

    from ..methods.reference import _rhs
    n = model.q0.size
    rhs = _rhs(model.system, n)
    f = lambda t, y: np.asarray(rhs(t, y))  # noqa: E731 - what reference_solution does
    y0 = np.concatenate([model.q0, model.v0])
    f(0.0, y0)  # compile the right-hand side outside the timing
    rows = []
    for rtol in grid:
        wall, sol = _best(lambda: solve_ivp(f, (0.0, T), y0, method="DOP853", rtol=rtol, atol=rtol),
                          repeats)
        err = float(np.max(np.abs(sol.y[:n, -1] - q_ref))) if sol.success else float("inf")
        rows.append((rtol, err, wall, int(sol.nfev)))
    _log(cb, f"{model.name}: DOP853 sweep over {len(grid)} tolerances done")
    return rows


def _tuned(rows, target):
    """The loosest-rtol row whose error is ≤ target (rows loosest first), or None."""
    for row in rows:
        if row[1] <= target:
            return row
    return None


def run_benchmarks(models: Iterable[str] = ("gearbox", "chaotic-quartic"), methods=None,
                   n_steps: int | None = None, quick: bool = False,
                   progress_callback: Callable[[str], None] | None = None) -> list[dict]:
    """Run the benchmark; one dict per (model, method).

    Parameters
    ----------
    models : benchmark model names (``gearbox``, ``chaotic-quartic``; others run with their
        default h and without a NumPy loop).
    methods : method names; default: the GNI/DLA methods that have a NumPy loop
        (:data:`numpy_loops.METHODS`); ``"all"``: every registered compiled method that
        integrates the model's kind of system (the others are skipped). A method that fails
        gives a row with the error in ``notes`` and None for the measurements.
    n_steps : steps of each timed dalembert run (default 10⁵ explicit / 2·10⁴ Newton; the NumPy
        loop runs at most this many).
    quick : a smoke test (10³ steps, coarse DOP853 grid, one repetition): well under a
        minute with the default methods; not a measurement.
    progress_callback : called with a short message as the benchmark proceeds.

    Returns
    -------
    list of dicts with keys: model, method, h, newton (bool: the step solves a Newton system),
    steps, steps_per_second, compile_time_s, newton_iterations_per_step, numpy_steps,
    numpy_steps_per_second, speedup, t_accuracy, accuracy_steps, final_error_q, dalembert_wall_s
    (the ``dl.integrate`` call over [0, t_accuracy], after compilation), solve_ivp_rtol,
    solve_ivp_error_q, solve_ivp_wall_s, solve_ivp_nfev, wall_ratio (solve_ivp / dalembert wall),
    notes (list of str).
    """
    import dalembert as dl

    from .. import methods as _methods
    explicit = methods is not None
    if methods is None:
        methods = [m for m in numpy_loops.METHODS if m in _methods.available()]
    elif methods == "all":
        explicit = False
        methods = [m for m in _methods.available() if _methods.get(m).compiled]
    methods = [_methods.get(m).name for m in methods]
    repeats = 1 if quick else 3
    grid = RTOL_GRID_QUICK if quick else RTOL_GRID
    results = []
    for model_name in models:
        model = dl.models.get(model_name, **_DEFAULT_MODEL_PARAMS.get(model_name, {}))
        h = BENCH_H.get(model_name, model.default_h)
        T_acc = (T_ACCURACY_QUICK if quick else T_ACCURACY).get(model_name, model.default_t_final)
        np_model = None
        if model_name in numpy_loops._MODELS:
            np_model = numpy_loops.get(model_name, **{k: v for k, v in model.params.items()
                                                      if k in ("asymmetry", "n")})
        _log(progress_callback, f"{model_name}: reference solution at t = {T_acc:g}")
        q_ref = _reference_final_q(model, T_acc)
        sweep = _dop853_sweep(model, T_acc, q_ref, grid, repeats, progress_callback)
        for method in methods:
            _log(progress_callback, f"{model_name} · {method}")
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    res = _bench_one(dl, model, np_model, method, h, T_acc, q_ref, sweep,
                                     n_steps, quick, repeats)
                kinds = sorted({w.category.__name__ for w in caught
                                if issubclass(w.category, (UserWarning, RuntimeWarning))})
                if kinds:
                    res["notes"].append("warned: " + ", ".join(kinds))
            except dl.InputError as exc:
                # a method for another kind of system (e.g. Euler–Poincaré–Suslov on SO(3))
                _log(progress_callback, f"{model_name} · {method}: not applicable ({exc})")
                if explicit:
                    results.append(_failed_row(model, method, h, f"not applicable: {exc}"))
                continue
            except Exception as exc:  # noqa: BLE001 - one broken method must not stop the run
                msg = f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
                _log(progress_callback, f"{model_name} · {method}: failed ({msg})")
                results.append(_failed_row(model, method, h, f"failed: {msg}"))
                continue
            results.append(res)
    return results


def _failed_row(model, method, h, note):
    return {"model": model.name, "method": method, "h": h, "newton": False, "steps": None,
            "steps_per_second": None, "compile_time_s": None, "newton_iterations_per_step": None,
            "numpy_steps": None, "numpy_steps_per_second": None, "speedup": None,
            "t_accuracy": None, "accuracy_steps": None, "final_error_q": None,
            "dalembert_wall_s": None, "solve_ivp_rtol": None, "solve_ivp_error_q": None,
            "solve_ivp_wall_s": None, "solve_ivp_nfev": None, "wall_ratio": None,
            "notes": [note]}


def _bench_one(dl, model, np_model, method, h, T_acc, q_ref, sweep, n_steps, quick, repeats):
    notes = []
    sysm, q0, v0 = model.system, model.q0, model.v0
    # accuracy run first: it tells whether the step uses Newton
    acc = dl.integrate(sysm, method, q0=q0, v0=v0, h=h, t_final=T_acc, progress=False)
    newton = acc.metadata["newton"]["total_iterations"] > 0
    kind = "newton" if newton else "explicit"
    steps, np_steps = (STEPS_QUICK if quick else STEPS)[kind]
    if n_steps is not None:
        steps = int(n_steps)
        np_steps = min(np_steps, steps)
    dl_wall, acc = _best(lambda: dl.integrate(sysm, method, q0=q0, v0=v0, h=h, t_final=T_acc,
                                              progress=False), repeats)
    err = float(np.max(np.abs(acc.q[-1] - q_ref)))
    estimate = acc.metadata.get("steps_per_second")
    if n_steps is None and estimate and steps > MAX_RUN_SECONDS * estimate:
        # a slow method: keep each timed run to a couple of seconds
        steps = max(2_000, 1_000 * int(MAX_RUN_SECONDS * estimate / 1_000))
        np_steps = min(np_steps, steps)
    # timing run: warm-up (compiles), then the best of `repeats`; a method that blows up
    # before the end of the timed interval (first-order GNIs at large h) is timed on fewer steps
    for _ in range(8):
        try:
            warm = dl.integrate(sysm, method, q0=q0, v0=v0, h=h, t_final=steps * h,
                                progress=False)
            break
        except dl.ConvergenceError as exc:
            notes.append(f"blows up at step {exc.step} at this h: timed on fewer steps")
            steps = max(100, min(steps // 2, 1_000 * int(0.8 * exc.step / 1_000)))
            np_steps = min(np_steps, steps)
    else:
        raise RuntimeError(f"{method}: no stable timing interval found")
    compile_s = warm.metadata["compile_time_s"]
    sps, its = 0.0, None
    for _ in range(repeats):
        tr = dl.integrate(sysm, method, q0=q0, v0=v0, h=h, t_final=steps * h, progress=False)
        sps = max(sps, tr.metadata["steps_per_second"])
        its = tr.metadata["newton"]["mean_iterations"]
    # NumPy loop of the same scheme
    np_sps = None
    if np_model is not None and method in numpy_loops.METHODS:
        startup = numpy_loops.dalembert_startup(method)
        wall, _ = _best(lambda: numpy_loops.integrate(np_model, method, q0, v0, h, np_steps,
                                                      startup=startup), repeats)
        np_sps = np_steps / wall
    else:
        notes.append("no NumPy loop for this model/method")
    # SciPy DOP853 tuned to the same final error
    row = _tuned(sweep, err)
    if row is None:
        notes.append(f"DOP853 does not reach {err:.1e} for rtol ≥ {sweep[-1][0]:.0e}")
    elif row is sweep[0]:
        notes.append(f"DOP853 at the loosest rtol tried ({row[0]:.0e}) is already as accurate")
    if err > 0.1:
        notes.append("final error > 0.1: the method has lost the trajectory at this h and T")
    if newton:
        notes.append(f"Newton: {its:.2f} iterations/step")
    return {
        "model": model.name, "method": method, "h": h, "newton": newton,
        "steps": steps, "steps_per_second": sps, "compile_time_s": compile_s,
        "newton_iterations_per_step": its,
        "numpy_steps": np_steps if np_sps else None, "numpy_steps_per_second": np_sps,
        "speedup": sps / np_sps if np_sps else None,
        "t_accuracy": T_acc, "accuracy_steps": acc.metadata["n_steps"], "final_error_q": err,
        "dalembert_wall_s": dl_wall,
        "solve_ivp_rtol": row[0] if row else None, "solve_ivp_error_q": row[1] if row else None,
        "solve_ivp_wall_s": row[2] if row else None, "solve_ivp_nfev": row[3] if row else None,
        "wall_ratio": row[2] / dl_wall if row else None,
        "notes": notes,
    }


def check_targets(results, cli_wall_s: float | None = None) -> list[dict]:
    """The issue's targets against the measurements: [{target, measured, met}].

    nh-rattle on gearbox ≥ 10⁶ steps/s and ≥ 30× its NumPy loop; every method that solves a
    Newton system ≥ 30× its NumPy loop; ``dalembert run gearbox --method nh-rattle --h 0.1
    --t-final 50000`` under 5 s (if ``cli_wall_s`` is given; None: not measured).
    """
    out = []
    for r in results:
        if r["steps_per_second"] is None:
            continue
        if r["model"] == "gearbox" and r["method"] == "nh-rattle":
            out.append({"target": "nh-rattle on gearbox ≥ 1e6 steps/s",
                        "measured": f"{r['steps_per_second']:.3g} steps/s",
                        "met": r["steps_per_second"] >= TARGET_RATTLE_STEPS_PER_SECOND})
            if r["speedup"] is not None:
                out.append({"target": "nh-rattle on gearbox ≥ 30× NumPy loop",
                            "measured": f"{r['speedup']:.1f}×",
                            "met": r["speedup"] >= TARGET_SPEEDUP})
    for r in results:
        if r["newton"] and r["speedup"] is not None:
            out.append({"target": f"{r['method']} on {r['model']} (Newton) ≥ 30× NumPy loop",
                        "measured": f"{r['speedup']:.1f}×", "met": r["speedup"] >= TARGET_SPEEDUP})
    if cli_wall_s is not None:
        out.append({"target": "dalembert run gearbox nh-rattle h=0.1 T=50000 (warm cache) < 5 s",
                    "measured": f"{cli_wall_s:.2f} s", "met": cli_wall_s < TARGET_CLI_SECONDS})
    return out


def _fmt(x, spec, none="—"):
    return none if x is None else format(x, spec)


def _ratio(x):
    if x is None:
        return "—"
    return f"{x:.1f}×" if x < 10 else f"{x:.0f}×"


def format_table(results) -> str:
    """A markdown table of :func:`run_benchmarks` results."""
    head = ("| model | method | h | dalembert steps/s | NumPy steps/s | speedup | final error q "
            "(T) | DOP853 rtol | DOP853 wall | dalembert wall | DOP853 / dalembert | notes |")
    sep = "|" + "---|" * 12
    lines = [head, sep]
    for r in results:
        lines.append("| " + " | ".join([
            r["model"], f"`{r['method']}`", f"{r['h']:g}",
            _fmt(r["steps_per_second"], ".3g"),
            _fmt(r["numpy_steps_per_second"], ".3g"),
            _ratio(r["speedup"]),
            "—" if r["final_error_q"] is None else f"{r['final_error_q']:.1e} ({r['t_accuracy']:g})",
            _fmt(r["solve_ivp_rtol"], ".0e"),
            _fmt(None if r["solve_ivp_wall_s"] is None else 1e3 * r["solve_ivp_wall_s"], ".1f")
            + (" ms" if r["solve_ivp_wall_s"] is not None else ""),
            "—" if r["dalembert_wall_s"] is None else f"{1e3 * r['dalembert_wall_s']:.1f} ms",
            _ratio(r["wall_ratio"]),
            "; ".join(r["notes"]),
        ]) + " |")
    return "\n".join(lines)


__all__ = ["run_benchmarks", "format_table", "check_targets", "machine_info", "numpy_loops",
           "BENCH_H", "T_ACCURACY"]
