#!/usr/bin/env python
"""Speed of the SO(3) methods (Euler–Poincaré–Suslov schemes and the Lie-group GNI).

    python benchmarks/so3_speed.py                  # full measurement (about a minute)
    python benchmarks/so3_speed.py --quick          # smoke test (not a measurement)
    python benchmarks/so3_speed.py --out benchmarks/results/so3_speed.md --append docs/benchmarks.md

Reports, on the ``suslov`` model (default parameters, a = e3) with h = 0.01:

(a) steps/s of one trajectory after compilation (``dl.integrate``, every node saved: R, ω, λ and
    the diagnostics), against the same scheme as a plain NumPy per-step loop
    (:mod:`dalembert.bench.numpy_lie`, every node stored; best of 3); target ≥ 30×;
(b) trajectory-steps/s of a 1000-member ensemble of initial ω (``dl.ensemble``, ω0 = (a, b, 0)
    with a, b uniform in [−1, 1]), keeping only the energy and the constraint residual every
    100 steps (memory B·N/100·2 floats), against the NumPy loop run once per member; and the same
    1000 members run as 10 ensembles of 100 (a smaller working set per step).

The machine is shared: the load average (``os.getloadavg``) is recorded before and after.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import jax
import numpy as np

import dalembert as dl

dl.configure()   # the process-wide settings the CLI also opts in to (before JAX starts)
from dalembert.bench import numpy_lie
from _report import publish

METHODS = numpy_lie.METHODS
H = 0.01
B = 1000
SUB = 100


def _load():
    return "{:.2f}, {:.2f}, {:.2f}".format(*os.getloadavg())


def _numpy_rate(system, name, R0, w0, n, reps):
    best = np.inf
    for _ in range(reps):
        t = time.perf_counter()
        numpy_lie.integrate(system.inertia, system.A, name, R0, w0, H, n)
        best = min(best, time.perf_counter() - t)
    return n / best


def single(system, R0, w0, quick):
    """(a): rows (method, dalembert steps/s, NumPy steps/s, ratio, steps timed, compile s)."""
    rows = []
    for name in METHODS:
        t0 = time.perf_counter()
        dl.integrate(system, name, R0=R0, omega0=w0, h=H, t_final=100 * H, progress=False)
        compile_s = time.perf_counter() - t0
        n = 2_000 if quick else 200_000
        best = 0.0
        for _ in range(1 if quick else 3):
            tr = dl.integrate(system, name, R0=R0, omega0=w0, h=H, t_final=n * H, progress=False)
            best = max(best, tr.metadata["steps_per_second"])
        np_rate = _numpy_rate(system, name, R0, w0, 200 if quick else 3_000, 1 if quick else 3)
        rows.append((name, best, np_rate, best / np_rate, n, compile_s))
        print(f"  single {name:16s} {best:12.0f} steps/s  NumPy {np_rate:9.0f}  ({best / np_rate:.0f}×)",
              flush=True)
    return rows


def ensemble(system, R0, w0s, np_rates, quick):
    """(b): rows (method, traj-steps/s, NumPy steps/s, ratio, steps, compile s, max energy drift)."""
    rows = []
    n = 200 if quick else 5_000
    Rs = np.broadcast_to(R0, (w0s.shape[0], 3, 3))
    for name in METHODS:
        kw = dict(R0=Rs, omega0=w0s, h=H, save_every=100, keep=["energy", "constraint_residual"],
                  progress=False)
        first = dl.ensemble(system, name, t_final=n * H, **kw)       # compiles
        ens = dl.ensemble(system, name, t_final=n * H, **kw)
        rate = ens.metadata["trajectory_steps_per_second"]
        # the same 1000 members as 10 ensembles of 100 (smaller working set per step)
        kw100 = dict(kw, R0=Rs[:SUB], omega0=w0s[:SUB])
        dl.ensemble(system, name, t_final=n * H, **kw100)             # compiles
        wall = 0.0
        for i in range(0, w0s.shape[0], SUB):
            kw100 = dict(kw, R0=Rs[i:i + SUB], omega0=w0s[i:i + SUB])
            wall += dl.ensemble(system, name, t_final=n * H, **kw100).metadata["wall_time_s"]
        rate_sub = w0s.shape[0] * n / wall
        E = np.asarray(ens.energy)
        drift = float(np.max(np.abs(E - E[:, :1]) / E[:, :1]))
        rows.append((name, rate, np_rates[name], rate / np_rates[name], n,
                     first.metadata["compile_time_s"], drift,
                     float(np.max(np.abs(ens.constraint_residual))), rate_sub))
        print(f"  ensemble {name:16s} {rate:12.0f} traj-steps/s  ({rate / np_rates[name]:.0f}× NumPy); "
              f"as {B // SUB} × {SUB}: {rate_sub:12.0f}", flush=True)
    return rows


def markdown(a, b, quick, started, elapsed, load0, load1):
    out = ["## SO(3) methods (Euler–Poincaré–Suslov schemes, Lie-group GNI)", "",
           f"Measured by `benchmarks/so3_speed.py{' --quick' if quick else ''}` on {started} UTC "
           f"({platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
           f"JAX {jax.__version__}, float64); total {elapsed:.0f} s. Load average (1, 5, 15 min) "
           f"before: {load0}; after: {load1}." + (" QUICK RUN: smoke test, not a measurement." if quick else ""),
           "", f"Model `suslov` (default parameters, a = e3), h = {H}, Cayley reconstruction, default options.",
           "", "### (a) One trajectory: steps per second after compilation (every node saved)", "",
           "| method | dalembert steps/s | µs/step | NumPy loop steps/s | ratio (target ≥ 30×) | steps timed | first call s |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for name, sps, nps, ratio, n, comp in a:
        out.append(f"| {name} | {sps:,.0f} | {1e6 / sps:.3f} | {nps:,.0f} | {ratio:,.0f}× | {n:,} | {comp:.1f} |")
    out += ["", f"### (b) Ensemble of {B} initial ω (keep energy and constraint residual every 100 steps)", "",
            "| method | trajectory-steps/s | NumPy loop steps/s (one member at a time) | ratio | "
            f"as {B // SUB} ensembles of {SUB}: trajectory-steps/s (ratio) | steps per member | first call s | "
            "max rel. energy change | max constraint residual |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, rate, nps, ratio, n, comp, drift, res, rate_sub in b:
        out.append(f"| {name} | {rate:,.0f} | {nps:,.0f} | {ratio:,.0f}× | {rate_sub:,.0f} ({rate_sub / nps:,.0f}×) "
                   f"| {n:,} | {comp:.1f} | {drift:.1e} | {res:.1e} |")
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=None, help="write the markdown tables to this file")
    ap.add_argument("--append", type=Path, default=None, help="append the markdown tables to this file")
    ap.add_argument("--note", default="", help="a paragraph added under the heading")
    args = ap.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    load0 = _load()
    t0 = time.perf_counter()
    model = dl.models.get("suslov")
    system = model.system
    R0, w0 = model.initial_state["R0"], model.initial_state["omega0"]
    a = single(system, R0, w0, args.quick)
    rng = np.random.default_rng(4)
    w0s = np.zeros((B, 3))
    w0s[:, :2] = rng.uniform(-1.0, 1.0, (B, 2))
    b = ensemble(system, R0, w0s, {r[0]: r[2] for r in a}, args.quick)
    publish(markdown(a, b, args.quick, started, time.perf_counter() - t0, load0, _load()), args.note,
            out=args.out, out_heading="# SO(3) methods: speed benchmark results\n\n", append=args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
