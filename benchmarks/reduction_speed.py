"""Per-step time and compile time of the automatic almost-Poisson reduction against the
hand-derived form of the same model (issue 13: targets ≤ 3× both).

    python benchmarks/reduction_speed.py [--method dg-gonzalez] [--repeats 3] [--steps 20000]
                                         [--models chaplygin-sleigh,vertical-rolling-disk,chaotic-quartic]

Each (model, form) runs in its own subprocess (so that compile times are not shared through
in-process caches; the persistent compilation cache is off), the forms interleaved and repeated;
per-step times are from ``metadata['steps_per_second']`` (best of three runs in the subprocess,
after the compiling run). Prints min / median / max and the ratios automatic / hand.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r'''
import json, sys, time
import numpy as np
import dalembert as dl
dl.configure()
import jax.numpy as jnp
model, form, method, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
m = dl.models.get(model)
h = m.default_h
if form == "hand":
    ap = m.almost_poisson
    sys_, kw = ap, {"x0": np.asarray(ap.reduce(jnp.asarray(m.q0), jnp.asarray(m.v0)))}
else:
    sys_, kw = m.system, dict(m.initial_state)
t0 = time.perf_counter()
tr = dl.integrate(sys_, method, h=h, t_final=10 * h, progress=False, **kw)
first = time.perf_counter() - t0
best = 0.0
for _ in range(3):
    tr = dl.integrate(sys_, method, h=h, t_final=steps * h, progress=False, **kw)
    best = max(best, tr.metadata["steps_per_second"])
print(json.dumps({"compile_s": first,
                  "us_per_step": 1e6 / best}))
'''


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="dg-gonzalez")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--models", default="chaplygin-sleigh,vertical-rolling-disk,chaotic-quartic")
    a = ap.parse_args(argv)
    env = dict(os.environ, JAX_ENABLE_COMPILATION_CACHE="false")
    res: dict = {}
    for _ in range(a.repeats):
        for model in a.models.split(","):
            for form in ("hand", "automatic"):
                out = subprocess.run([sys.executable, "-c", CHILD, model, form, a.method, str(a.steps)],
                                     capture_output=True, text=True, env=env)
                if out.returncode:
                    print(out.stderr[-2000:], file=sys.stderr)
                    raise SystemExit(f"{model} {form} failed")
                r = json.loads(out.stdout.strip().splitlines()[-1])
                res.setdefault((model, form), []).append(r)
    print(f"method {a.method}, {a.steps} steps, {a.repeats} repeats (min / median / max); load "
          f"{os.getloadavg()[0]:.2f}")
    print(f"{'model':24s} {'form':10s} {'µs/step':>26s} {'first run (compile) s':>26s}")
    for model in a.models.split(","):
        med = {}
        for form in ("hand", "automatic"):
            us = [r["us_per_step"] for r in res[(model, form)]]
            cs = [r["compile_s"] for r in res[(model, form)]]
            med[form] = (statistics.median(us), statistics.median(cs))
            print(f"{model:24s} {form:10s} {min(us):8.2f} {statistics.median(us):8.2f} {max(us):8.2f}"
                  f" {min(cs):8.2f} {statistics.median(cs):8.2f} {max(cs):8.2f}")
        print(f"{'':24s} {'ratio':10s} {med['automatic'][0] / med['hand'][0]:8.2f}x per step, "
              f"{med['automatic'][1] / med['hand'][1]:8.2f}x first run")


if __name__ == "__main__":
    main()
