#!/usr/bin/env python
"""Speed of the rolling-ball schemes on the Figure-3-left case.

    python benchmarks/rolling_ball_speed.py            # full (a few minutes); writes benchmarks/results/rolling_ball_speed.md
    python benchmarks/rolling_ball_speed.py --quick    # smoke test (not a measurement)

Measures (see docs/benchmarks.md):

(a) steps per second after compilation of ``lie-gni``, ``reduced-gni`` (same scheme on the
    left-trivialised ball) and ``gni-exp-chart`` on the Fig 3-left data (I = (1, 0.5, 0.7), m = 2,
    r = Θ = 1, h = 2.5·10⁻⁴), one trajectory, against the same scheme as a plain NumPy per-step loop
    (:mod:`dalembert.bench.numpy_ball`; both with the Legendre start-up; agreement checked);
(b) the wall time of the Figure-3 pair: lie-gni on the left case (h = 2.5·10⁻⁴, T = 100, 4·10⁵
    steps) and on the right case (h = 10^−3.75, T = 160, 9·10⁵ steps) in a fresh process with a
    private compilation cache (so compile time is included), with and without the DOP853 reference
    solutions; and the whole ``ferraro2015-fig3`` experiment.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

PAIR_SCRIPT = r"""
import json, sys, time, warnings
t_start = time.perf_counter()
import numpy as np
import dalembert as dl

dl.configure()   # the process-wide settings the CLI also opts in to (before JAX starts)
from dalembert.models import rolling_ball as rb
warnings.simplefilter("ignore")
with_ref = sys.argv[1] == "1"
quick = sys.argv[2] == "1"
cases = {"left": (2.5e-4, 100.0), "right": (10 ** -3.75, 160.0)}
if quick:
    cases = {"left": (1e-3, 5.0), "right": (1e-3, 5.0)}
out = {}
for case, (h, T) in cases.items():
    p, st = rb.fig3_initial_state(case)
    m = dl.models.get("rolling-ball", **p)
    t0 = time.perf_counter()
    tr = dl.integrate(m.system, "lie-gni", h=h, t_final=T, save_every=max(1, round(0.01 / h)), progress=False, **st)
    t1 = time.perf_counter()
    out[case] = {"steps": tr.metadata["n_steps"], "integrate_s": t1 - t0,
                 "compile_s": tr.metadata.get("compile_time_s"), "steps_per_s": tr.metadata.get("steps_per_second")}
    if with_ref:
        ref = rb.reference_solution(p, st["x0"], st["R0"], st["xdot0"], st["R0"] @ st["xi0"], tr.t)
        out[case]["reference_s"] = time.perf_counter() - t1
        out[case]["max_position_difference_t10"] = float(np.max(np.abs(tr.x - ref["x"])[tr.t <= 10.0]))
out["total_s"] = time.perf_counter() - t_start
print(json.dumps(out))
"""


def _load():
    try:
        return os.getloadavg()
    except OSError:
        return (float("nan"),) * 3


def _fig3_left():
    from dalembert.models import rolling_ball as rb
    p, st = rb.fig3_initial_state("left")
    return p, st


def bench_single(quick: bool) -> list[dict]:
    import dalembert as dl
    from dalembert.bench import numpy_ball as nb
    from dalembert.models import rolling_ball as rb

    p, st = _fig3_left()
    system = rb.ball_system(p)
    I = [p["I1"], p["I2"], p["I3"]]
    h = 2.5e-4
    n_jax = 20_000 if quick else 400_000
    n_np = 500 if quick else 5_000
    rows = []
    loops = {"lie-gni": nb.lie_gni, "reduced-gni": nb.lie_gni, "gni-exp-chart": nb.exp_chart}
    for method, loop in loops.items():
        opts = {"startup": "legendre"}
        tr = dl.integrate(system, method, h=h, t_final=h * 1000, progress=False, **opts, **st)   # compile
        best = None
        for _ in range(1 if quick else 2):
            tr = dl.integrate(system, method, h=h, t_final=h * n_jax, save_every=100, progress=False, **opts, **st)
            sps = tr.metadata["steps_per_second"]
            best = sps if best is None else max(best, sps)
        t0 = time.perf_counter()
        res = loop(I, p["m"], p["r"], p["theta"], st["x0"], st["R0"], st["xdot0"], st["xi0"], h, n_np)
        np_sps = n_np / (time.perf_counter() - t0)
        # agreement over the NumPy run
        trc = dl.integrate(system, method, h=h, t_final=h * n_np, progress=False, **opts, **st)
        x_np = res[0][:, :2]
        diff = float(np.max(np.abs(trc.x - x_np)))
        rows.append({"method": method, "steps_per_s": best, "numpy_steps_per_s": np_sps, "ratio": best / np_sps,
                     "steps_timed": n_jax, "numpy_steps": n_np, "max_x_difference": diff,
                     "newton_mean_iterations": tr.metadata["newton"]["mean_iterations"]})
        print(f"  {method}: {best:,.0f} steps/s, NumPy {np_sps:,.0f} steps/s, ratio {best / np_sps:.0f}×, "
              f"|Δx| {diff:.1e}", flush=True)
    return rows


def bench_pair(quick: bool) -> dict:
    out = {}
    for with_ref in (False, True):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, DALEMBERT_CACHE_DIR=cache)
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-c", PAIR_SCRIPT, "1" if with_ref else "0", "1" if quick else "0"],
                               capture_output=True, text=True, env=env, check=True)
            wall = time.perf_counter() - t0
        res = json.loads(r.stdout.strip().splitlines()[-1])
        res["process_wall_s"] = wall
        out["with_reference" if with_ref else "integration_only"] = res
        print(f"  Figure-3 pair ({'with' if with_ref else 'without'} reference): {wall:.1f} s", flush=True)
    return out


def bench_experiment(quick: bool) -> float:
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as rep:
        env = dict(os.environ, DALEMBERT_CACHE_DIR=cache)
        t0 = time.perf_counter()
        args = [sys.executable, "-m", "dalembert.cli", "reproduce", "ferraro2015-fig3", "--out", rep]
        if quick:
            args.append("--quick")
        subprocess.run(args, capture_output=True, text=True, env=env, check=True)
        wall = time.perf_counter() - t0
    print(f"  dalembert reproduce ferraro2015-fig3{' --quick' if quick else ''}: {wall:.1f} s", flush=True)
    return wall


def write_results(single, pair, exp_wall, load_before, load_after, quick):
    import platform

    import jax
    lines = ["## The rolling-ball schemes (Ferraro, Jiménez, Martín de Diego 2015)", "",
             f"Measured by `benchmarks/rolling_ball_speed.py{' --quick' if quick else ''}` on "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} ({platform.machine()}, {os.cpu_count()} cores, "
             f"JAX {jax.__version__}, float64); load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
             "(1-minute; about 1 is this benchmark's own process).", "",
             "### (a) One trajectory, Fig 3-left data (h = 2.5·10⁻⁴), after compilation", "",
             "| method | steps/s | NumPy loop steps/s | ratio | mean Newton iterations | max |Δx| vs NumPy |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in single:
        lines.append(f"| {r['method']} | {r['steps_per_s']:,.0f} | {r['numpy_steps_per_s']:,.0f} | "
                     f"{r['ratio']:.0f}× | {r['newton_mean_iterations']:.2f} | {r['max_x_difference']:.1e} |")
    lines += ["", "`reduced-gni` and `lie-gni` are the same scheme on the left-trivialised ball (lie-gni is the "
              "reduced GNI restricted to left trivialisation), so they share the NumPy loop.", "",
              "### (b) The Figure-3 pair (fresh process, empty compilation cache)", "",
              "| what | left steps | right steps | wall s (whole process) |", "|---|---:|---:|---:|"]
    for key, label in (("integration_only", "lie-gni, both cases"),
                       ("with_reference", "lie-gni + DOP853 §4.1 reference, both cases")):
        r = pair[key]
        lines.append(f"| {label} | {r['left']['steps']:,} | {r['right']['steps']:,} | {r['process_wall_s']:.1f} |")
    lines.append(f"| `dalembert reproduce ferraro2015-fig3{' --quick' if quick else ''}` (also gni-exp-chart "
                 f"to t = 40 and the figure) | | | {exp_wall:.1f} |")
    r = pair["integration_only"]
    lines += ["", f"Integration alone: left {r['left']['integrate_s']:.1f} s (compile {r['left']['compile_s']:.1f} s), "
              f"right {r['right']['integrate_s']:.1f} s (compile {r['right']['compile_s'] or 0:.1f} s). "
              "Target: the pair in under 2 minutes.", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(HERE / "results" / "rolling_ball_speed.md"))
    a = ap.parse_args()
    load_before = _load()
    print("(a) single trajectories", flush=True)
    single = bench_single(a.quick)
    print("(b) the Figure-3 pair", flush=True)
    pair = bench_pair(a.quick)
    exp_wall = bench_experiment(a.quick)
    text = write_results(single, pair, exp_wall, load_before, _load(), a.quick)
    if not a.quick:
        Path(a.out).write_text(text)
        print(f"wrote {a.out}")
    else:
        print(text)


if __name__ == "__main__":
    main()
