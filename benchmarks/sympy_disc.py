"""The rolling disc imported from SymPy mechanics (issue 16): set-up time, first-compile time,
per-step time against the hand-written ``tilting-disk`` model, fitted orders against the
reference ODE, constraint residual and energy error.

    python benchmarks/sympy_disc.py [--methods nh-rattle,gni-midpoint,dg-gonzalez] [--repeats 5]

Set-up: building the SymPy model (frames, bodies, LagrangesMethod) and ``dl.from_sympy``
(Hessian, constraint matrices, lambdify), timed separately. Compile: the metadata's
``compile_time_s`` of the first ``dl.integrate``. Step time: t = 10 (1000 steps of h = 0.01),
``save_every = 100``, the imported and the hand-written system interleaved, repeated (min/median/max
of the ratio imported/hand-written). Orders: the final-time error of q at t = 1 against DOP853
(rtol = atol = 1e-13) for h = 0.02, 0.01, 0.005. Energy and constraint: over t = 10, h = 0.01.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import time
from pathlib import Path

import numpy as np


def _disc_module():
    path = Path(__file__).resolve().parents[1] / "tests" / "unit" / "test_sympy_models.py"
    spec = importlib.util.spec_from_file_location("sympy_models_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default="nh-rattle,gni-midpoint,dg-gonzalez")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    import dalembert as dl
    from dalembert.convergence import fitted_order
    dl.configure()
    print(f"load average {os.getloadavg()}", flush=True)
    mod = _disc_module()
    t0 = time.perf_counter()
    lm, values = mod.rolling_disc()
    t1 = time.perf_counter()
    imported = dl.from_sympy(lm, values=values, name="sympy-disc")
    t2 = time.perf_counter()
    print(f"set-up: SymPy model {t1 - t0:.2f} s, dl.from_sympy {t2 - t1:.2f} s", flush=True)
    model = dl.models.get("tilting-disk")
    st = model.initial_state
    ref1 = imported.reference_solution(model.q0, model.v0, t=np.array([0.0, 1.0]))["q"][-1]
    for method in a.methods.split(","):
        runs = {}
        for label, system in (("imported", imported), ("hand-written", model.system)):
            tr = dl.integrate(system, method, h=0.01, t_final=10.0, save_every=100, progress=False, **st)
            runs[label] = tr.metadata.get("compile_time_s", float("nan"))
        ratios = []
        for _ in range(a.repeats):
            w = {}
            for label, system in (("imported", imported), ("hand-written", model.system)):
                tr = dl.integrate(system, method, h=0.01, t_final=10.0, save_every=100, progress=False, **st)
                w[label] = tr.metadata["wall_time_s"]
            ratios.append(w["imported"] / w["hand-written"])
        e = np.asarray(tr.energy)
        hs = np.array([0.02, 0.01, 0.005])
        errs = [float(np.max(np.abs(dl.integrate(imported, method, h=float(h), t_final=1.0, progress=False,
                                                   **st).q[-1] - ref1))) for h in hs]
        tr_i = dl.integrate(imported, method, h=0.01, t_final=10.0, save_every=1, progress=False, **st)
        ei = np.asarray(tr_i.energy)
        print(f"{method:12s} compile: imported {runs['imported']:.1f} s, hand-written {runs['hand-written']:.1f} s; "
              f"step time imported / hand-written {min(ratios):.2f} {np.median(ratios):.2f} {max(ratios):.2f} "
              f"(hand-written {1e6 * w['hand-written'] / 1000:.2f} µs/step incl. output); order {fitted_order(hs, errs):.2f} "
              f"(errors {errs[0]:.2e} {errs[1]:.2e} {errs[2]:.2e}); over t = 10: max |constraint| "
              f"{np.max(np.abs(tr_i.constraint_residual)):.1e}, max relative energy error "
              f"{np.max(np.abs(ei - ei[0])) / abs(ei[0]):.1e}", flush=True)
        del e
    print(f"load average {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
