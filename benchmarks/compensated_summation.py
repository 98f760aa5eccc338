"""Compensated summation (issue 15): the error of 10⁷-step runs with and without Kahan's
compensated summation of the state update, and what it costs.

    python benchmarks/compensated_summation.py [--steps 10000000] [--t-final 10000] [--repeats 5]

Error: the vertical rolling disk (exact solution), t ∈ [0, T] in N steps, ``nh-rattle``,
``nh-rattle-4`` and ``nh-rattle-6`` with ``compensated=True`` (the default) and ``False``; the
max-norm error of q against the exact solution at 11 nodes (``save_every = N/10``). The angles of
the disk grow like t, so the uncompensated sums lose ε·|q| per step.

Cost: steps/s of ``nh-rattle`` and ``nh-rattle-sym`` on the gearbox with and without the
compensation, interleaved and repeated (min/median/max of the ratio with/without).
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def errors(steps, T):
    import dalembert as dl
    model = dl.models.get("vertical-rolling-disk")
    every = steps // 10
    rows = []
    for method in ("nh-rattle", "nh-rattle-4", "nh-rattle-6"):
        for comp in (False, True):
            t0 = time.perf_counter()
            tr = dl.integrate(model.system, method, h=T / steps, t_final=T, save_every=every, progress=False,
                              compensated=comp, **model.initial_state)
            wall = time.perf_counter() - t0
            sol, _ = model.state_solution(np.asarray(tr.t))
            err = np.max(np.abs(np.asarray(tr.q) - np.asarray(sol["q"])), axis=1)
            rows.append((method, comp, err, wall, float(np.max(np.abs(np.asarray(tr.q)[-1])))))
            print(f"{method:12s} compensated={comp!s:5s} error at t = T/10, T/2, T: {err[1]:.2e} {err[5]:.2e} "
                  f"{err[-1]:.2e}  |q(T)| {rows[-1][4]:.3g}  wall {wall:.1f} s", flush=True)
    return rows


def cost(repeats, steps=2_000_000):
    import dalembert as dl
    g = dl.models.get("gearbox")
    out = {}
    for method in ("nh-rattle", "nh-rattle-sym"):
        runs = {c: (lambda c=c: dl.integrate(g.system, method, h=0.001, t_final=steps * 0.001, save_every=steps,
                                             progress=False, compensated=c, **g.initial_state)) for c in (False, True)}
        for f in runs.values():
            f()
        ratios, walls = [], {False: [], True: []}
        for _ in range(repeats):
            w = {}
            for c, f in runs.items():
                t0 = time.perf_counter()
                f()
                w[c] = time.perf_counter() - t0
                walls[c].append(w[c])
            ratios.append(w[False] / w[True])
        out[method] = (ratios, walls)
        print(f"{method:14s} steps/s without {steps / min(walls[False]):.3g}, with {steps / min(walls[True]):.3g}; "
              f"ratio with/without (steps/s) min/median/max {min(ratios):.3f}/{np.median(ratios):.3f}/"
              f"{max(ratios):.3f}", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=10_000_000)
    ap.add_argument("--t-final", type=float, default=10_000.0)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    from dalembert.engine.xla import configure
    configure()
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    errors(a.steps, a.t_final)
    cost(a.repeats)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
