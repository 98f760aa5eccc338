"""The cost of a non-conservative force: µs per step and first-call seconds of a method on a skate
of ours (x, y, θ; constant metric, a spring potential) without a force, with a time-dependent force
that does not depend on v (the explicit kick keeps ∇V − f) and with viscous damping −D v (f depends
on v: the step becomes a Newton solve on the whole step); the forced runs also sum the work
(trapezoidal, or Hermite from order 4). Per step: ``dl.integrate`` with one node at the end,
interleaved repeats, min / median / max and the ratio of the medians to the unforced run. First
call: a fresh Python process per case timing its first ``dl.integrate`` (no persistent cache),
min of ``--first-repeats``.

    python benchmarks/forces_cost.py [--steps 20000] [--repeats 5] [--first-repeats 2]
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from _report import first_call_seconds, interleaved_times

METHODS = ("nh-rattle", "nh-rattle-sym", "nh-rattle-4", "spark-lobatto3", "rk8-projected")
FORMS = ("none", "driven", "damped")

SETUP = '''
import jax.numpy as jnp, numpy as np
import dalembert as dl
FORCES = {"none": None,
          "driven": lambda q, v, t: jnp.array([0.5 * jnp.cos(2.0 * t), 0.0, 0.3 * jnp.sin(t)]),
          "damped": lambda q, v, t: -jnp.array([0.3, 0.3, 0.1]) * v}
def skate(form):
    return dl.NonholonomicSystem(mass_matrix=jnp.diag(jnp.array([1.0, 1.0, 0.2])),
        potential=lambda q: 0.5 * q[0] ** 2 + 0.3 * q[1] ** 2,
        constraint_matrix=lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]]), name="skate",
        force=FORCES[form])
Q0, V0 = np.array([2.0, 1.0, 0.3]), np.array([np.cos(0.3), np.sin(0.3), 0.8])
'''

FIRST = SETUP + '''
import sys, time
form, method = sys.argv[1], sys.argv[2]
s = skate(form)
t0 = time.perf_counter()
dl.integrate(s, method, q0=Q0, v0=V0, h=0.01, t_final=1.0, progress=False)
print(time.perf_counter() - t0)
'''


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--first-repeats", type=int, default=2)
    ap.add_argument("--methods", default=",".join(METHODS))
    a = ap.parse_args(argv)
    ns = {}
    exec(SETUP, ns)
    import dalembert as dl
    methods = a.methods.split(",")
    h, N = 0.01, a.steps
    systems = {form: ns["skate"](form) for form in FORMS}
    runs = {(m, f): (lambda s=systems[f], m=m: dl.integrate(s, m, q0=ns["Q0"], v0=ns["V0"], h=h, t_final=N * h,
                                                              save_every=N, progress=False))
            for m in methods for f in FORMS}
    load = os.getloadavg()
    times = interleaved_times(runs, a.repeats, per=N / 1e6)
    firsts = {k: first_call_seconds(FIRST, (k[1], k[0]), a.first_repeats) for k in runs} if a.first_repeats else {}
    print(f"# forces: skate (x, y, θ), {N} steps, h = {h}; µs per step min / median / max of {a.repeats} "
          f"interleaved repeats; ratio of medians to the unforced run; first call: min of {a.first_repeats} "
          f"fresh processes; load before {load[0]:.2f}, after {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    for m in methods:
        base = np.median(times[(m, "none")])
        for f in FORMS:
            t = times[(m, f)]
            row = f"{m:16s} {f:7s} {min(t):8.2f} / {np.median(t):8.2f} / {max(t):8.2f}  {np.median(t) / base:5.2f}x"
            if firsts:
                row += f"  first {firsts[(m, f)]:.2f} s"
            print(row)


if __name__ == "__main__":
    main()
