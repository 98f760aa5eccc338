"""The single trajectory's linear solver for 10 < n ≤ 16 unknowns (issue 15): LAPACK (before) or
the ensembles' elimination with one member (``linalg.SINGLE_AS_MEMBERS``, now the default), and the
ensemble path with B = 1 for comparison.

    python benchmarks/single_solver.py [--steps 20000] [--repeats 5]

The 13-unknown ``dg-gonzalez`` step on the chaotic quartic system (n = 3, hand-derived
almost-Poisson form, h = 0.01), µs per step through ``dl.integrate`` with each setting, and
through ``dl.ensemble`` with one member; interleaved, repeated, min/median/max.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    from dalembert.engine.xla import configure
    configure()
    import dalembert as dl
    from dalembert import linalg

    h, N = 0.01, a.steps
    runs = {}
    for label, flag in (("LAPACK", False), ("members (B = 1 elimination)", True)):
        linalg.SINGLE_AS_MEMBERS = flag
        model = dl.models.get("chaotic-quartic")           # a fresh system: a fresh compilation
        ap_sys = model.almost_poisson
        x0 = np.asarray(ap_sys.reduce(model.q0, model.v0))

        def run(ap_sys=ap_sys, x0=x0):
            return dl.integrate(ap_sys, "dg-gonzalez", x0=x0, h=h, t_final=N * h, save_every=N, progress=False)
        run()
        runs[label] = run
    linalg.SINGLE_AS_MEMBERS = True
    model = dl.models.get("chaotic-quartic")
    ap_sys = model.almost_poisson
    x0 = np.asarray(ap_sys.reduce(model.q0, model.v0))

    def ens():
        return dl.ensemble(ap_sys, "dg-gonzalez", x0=x0[None], h=h, t_final=N * h, save_every=N, progress=False)
    ens()
    runs["dl.ensemble, B = 1"] = ens
    walls = {k: [] for k in runs}
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; {N} steps per run")
    for _ in range(a.repeats):
        for k, f in runs.items():
            t0 = time.perf_counter()
            f()
            walls[k].append(time.perf_counter() - t0)
    base = np.asarray(walls["LAPACK"])
    for k, w in walls.items():
        w = np.asarray(w)
        r = base / w
        print(f"{k:30s} {1e6 * w.min() / N:7.3f} µs/step (median {1e6 * np.median(w) / N:.3f}); "
              f"speed-up over LAPACK min/median/max {r.min():.2f}/{np.median(r):.2f}/{r.max():.2f}")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
