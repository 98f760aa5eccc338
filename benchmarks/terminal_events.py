"""Does a terminal event save the steps after it? A run whose terminal event falls at a tenth of
t_final, against the same event function found non-terminally on the whole run (the steps every
event run took before the engine stopped at a terminal event).

The skate of tests/unit/test_dense_events.py (y reaches −1.5 at t ≈ 4.51; t_final = 45), for
``nh-rattle-sym`` at h = 1e-4 (450 000 steps) and ``rk8-projected`` at h = 1e-3 (45 000 steps).
Per case, after one compiling run of each, ``--rounds`` rounds alternate the two runs (so that
a change of the machine's load falls on both alike); reported: steps taken
(``metadata["steps_taken"]``), CPU time of the call (time.process_time: min / median / max), and
whether the event time and the state there are the same in both (bit for bit), with the load
average before and after.

Run: ``python benchmarks/terminal_events.py [--rounds 5]`` (writes
benchmarks/results/terminal_events.txt).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np

import dalembert as dl

Q0, V0 = np.array([2.0, 1.0, 0.3]), np.array([np.cos(0.3), np.sin(0.3), 0.8])
CASES = (("nh-rattle-sym", 1e-4), ("rk8-projected", 1e-3))


def skate():
    return dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, 0.2])), potential=lambda q: 0.5 * q[0] ** 2 + 0.3 * q[1] ** 2,
        constraint_matrix=lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]]), name="my-skate")


def y_low(t, q, v):
    return q[1] + 1.5


def y_low_terminal(t, q, v):
    return q[1] + 1.5


y_low_terminal.terminal = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    lines = [f"load before: {os.getloadavg()}"]
    system = skate()
    for method, h in CASES:
        kw = dict(q0=Q0, v0=V0, h=h, t_final=45.0, progress=False)
        runs = {"whole run (non-terminal)": [y_low], "terminal event": [y_low_terminal]}
        cpu = {k: [] for k in runs}
        last = {k: dl.integrate(system, method, events=ev, **kw) for k, ev in runs.items()}   # compile
        for _ in range(args.rounds):
            for k, ev in runs.items():
                c = time.process_time()
                last[k] = dl.integrate(system, method, events=ev, **kw)
                cpu[k].append(time.process_time() - c)
        a, b = last["whole run (non-terminal)"], last["terminal event"]
        same = (a.events[0]["t"][0] == b.events[0]["t"][0]
                and all(np.array_equal(a.events[0][k][0], b.events[0][k][0]) for k in ("q", "v")))
        lines.append(f"{method} h = {h:g}: event at t = {b.events[0]['t'][0]:.15g} of 45; "
                     f"event time and state bit for bit equal: {same}")
        for k in runs:
            c = cpu[k]
            lines.append(f"  {k:26s} steps {last[k].metadata['steps_taken']:7d}   CPU s min/median/max "
                         f"{min(c):.3f} / {statistics.median(c):.3f} / {max(c):.3f}")
    lines.append(f"load after: {os.getloadavg()}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    Path(__file__).with_name("results").joinpath("terminal_events.txt").write_text(text)


if __name__ == "__main__":
    main()
