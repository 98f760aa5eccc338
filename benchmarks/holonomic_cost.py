"""The cost of configuration constraints: µs per step and first-call seconds of a method on a skate
whose heading is the unit vector (c, s) with φ = c² + s² − 1 (n = 4, k = 1, m = 1) against the same
method on the same skate in (x, y, θ) without configuration constraints (n = 3, m = 1) — the same
motion. Per step: ``dl.integrate`` with one node at the end, interleaved repeats, min / median / max
and the ratio of the medians. First call: a fresh Python process per (system, method) timing its
first ``dl.integrate`` (trace, compile, checks; no persistent cache), min of ``--first-repeats``.

    python benchmarks/holonomic_cost.py [--steps 20000] [--repeats 5] [--first-repeats 2]
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from _report import first_call_seconds, interleaved_times

METHODS = ("nh-rattle", "nh-rattle-sym", "nh-rattle-4", "dla-midpoint", "spark-lobatto3", "gonzalez-f",
           "rk8-projected")

SETUP = '''
import jax.numpy as jnp, numpy as np
import dalembert as dl
I = 0.2
V = lambda x, y: 0.5 * x ** 2 + 0.3 * y ** 2
def theta():
    return dl.NonholonomicSystem(mass_matrix=jnp.diag(jnp.array([1.0, 1.0, I])), potential=lambda q: V(q[0], q[1]),
        constraint_matrix=lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]]), name="skate-theta")
def unit():
    return dl.NonholonomicSystem(mass_matrix=jnp.diag(jnp.array([1.0, 1.0, I, I])), potential=lambda q: V(q[0], q[1]),
        constraint_matrix=lambda q: jnp.array([[-q[3], q[2], 0.0, 0.0]]),
        holonomic_constraints=lambda q: jnp.array([q[2] ** 2 + q[3] ** 2 - 1.0]), name="skate-unit")
th, u, w = 0.3, 1.0, 0.8
STATES = {"theta": (np.array([2.0, 1.0, th]), np.array([u * np.cos(th), u * np.sin(th), w])),
          "unit": (np.array([2.0, 1.0, np.cos(th), np.sin(th)]),
                   np.array([u * np.cos(th), u * np.sin(th), -w * np.sin(th), w * np.cos(th)]))}
SYSTEMS = {"theta": theta, "unit": unit}
'''

FIRST = SETUP + '''
import sys, time
form, method = sys.argv[1], sys.argv[2]
q0, v0 = STATES[form]
s = SYSTEMS[form]()
t0 = time.perf_counter()
dl.integrate(s, method, q0=q0, v0=v0, h=0.01, t_final=1.0, progress=False)
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
    systems = {form: ns["SYSTEMS"][form]() for form in ("theta", "unit")}
    runs = {}
    for method in methods:
        for form in ("theta", "unit"):
            q0, v0 = ns["STATES"][form]
            runs[(method, form)] = (lambda s=systems[form], q0=q0, v0=v0, method=method: dl.integrate(
                s, method, q0=q0, v0=v0, h=h, t_final=N * h, save_every=N, progress=False))
    load = os.getloadavg()
    times = interleaved_times(runs, a.repeats, per=N / 1e6)
    firsts = {k: first_call_seconds(FIRST, k[::-1], a.first_repeats) for k in runs} if a.first_repeats else {}
    print(f"# configuration constraints: skate (x, y, c, s) with φ = c² + s² − 1 against (x, y, θ); {N} steps, "
          f"h = {h}; µs per step min / median / max of {a.repeats} interleaved repeats; first call: min of "
          f"{a.first_repeats} fresh processes (h = 0.01, 100 steps); load before {load[0]:.2f}, after "
          f"{os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    print(f"{'method':16s} {'θ: µs/step':>24s} {'with φ: µs/step':>24s} {'ratio':>6s} {'first θ':>8s} {'first φ':>8s}")
    for method in methods:
        t0, t1 = times[(method, "theta")], times[(method, "unit")]
        row = (f"{method:16s} {min(t0):7.2f} / {np.median(t0):7.2f} / {max(t0):7.2f} "
               f"{min(t1):7.2f} / {np.median(t1):7.2f} / {max(t1):7.2f} {np.median(t1) / np.median(t0):6.2f}")
        if firsts:
            row += f" {firsts[(method, 'theta')]:7.2f}s {firsts[(method, 'unit')]:7.2f}s"
        print(row)


if __name__ == "__main__":
    main()
