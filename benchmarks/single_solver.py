"""The single trajectory's linear solver for 10 < n ≤ 16 unknowns (issue 15): LAPACK (before) or
the ensembles' elimination with one member (``linalg.SINGLE_AS_MEMBERS``, now the default), and the
ensemble path with B = 1 for comparison.

    python benchmarks/single_solver.py [--steps 20000] [--repeats 5]

The 13-unknown ``dg-gonzalez`` step on the chaotic quartic system (n = 3, hand-derived
almost-Poisson form, h = 0.01), µs per step through ``dl.integrate`` with each setting and through
``dl.ensemble`` with one member. The setting is read when the program is traced and the engine
keeps compiled programs by content, so each setting runs in its own process; the processes
alternate (``--repeats`` rounds), each reporting the best of 3 runs; min/median/max over rounds.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def worker(flag: bool, steps: int):
    from dalembert.engine.xla import configure
    configure()
    import dalembert as dl
    from dalembert import linalg
    linalg.SINGLE_AS_MEMBERS = flag
    model = dl.models.get("chaotic-quartic")
    ap = model.almost_poisson
    x0 = np.asarray(ap.reduce(model.q0, model.v0))
    h = 0.01
    runs = {"integrate": lambda: dl.integrate(ap, "dg-gonzalez", x0=x0, h=h, t_final=steps * h, save_every=steps,
                                              progress=False),
            "ensemble": lambda: dl.ensemble(ap, "dg-gonzalez", x0=x0[None], h=h, t_final=steps * h,
                                            save_every=steps, progress=False)}
    out = {}
    for k, f in runs.items():
        f()
        best = np.inf
        for _ in range(3):
            t0 = time.perf_counter()
            f()
            best = min(best, time.perf_counter() - t0)
        out[k] = 1e6 * best / steps
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--worker", choices=("0", "1"), default=None)
    a = ap.parse_args()
    if a.worker is not None:
        return worker(a.worker == "1", a.steps)
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; {a.steps} steps per run")
    res = {"0": [], "1": []}
    for _ in range(a.repeats):
        for flag in ("0", "1"):
            p = subprocess.run([sys.executable, __file__, "--worker", flag, "--steps", str(a.steps)],
                               capture_output=True, text=True, check=True)
            res[flag].append(json.loads(p.stdout.strip().splitlines()[-1]))
    lap = np.array([r["integrate"] for r in res["0"]])
    mem = np.array([r["integrate"] for r in res["1"]])
    ens = np.array([r["ensemble"] for r in res["1"]])
    for label, w in (("dl.integrate, LAPACK", lap), ("dl.integrate, one-member elimination", mem),
                     ("dl.ensemble, B = 1", ens)):
        r = lap / w
        print(f"{label:38s} {w.min():7.3f} µs/step (median {np.median(w):.3f}); speed-up over LAPACK "
              f"min/median/max {r.min():.2f}/{np.median(r):.2f}/{r.max():.2f}")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
