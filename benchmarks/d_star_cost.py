"""The cost of a step of the one-impulse D* forms against their two-step GNIs (issue 15): µs per
step of ``lie-gni-mv-sym`` / ``lie-gni-mv`` on the Suslov problem and ``reduced-gni-sym`` /
``reduced-gni`` on the rolling ball (and their compositions ``lie-gni-mv-4/-6``,
``reduced-gni-4``), through ``dl.integrate`` with one node at the end; interleaved repeats,
min / median / max, and the ratio of the medians to the two-step form.

    python benchmarks/d_star_cost.py [--steps 20000] [--repeats 5]
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from _report import interleaved_times

CASES = (("suslov", "lie-gni-mv", ("lie-gni-mv-sym", "lie-gni-mv-4", "lie-gni-mv-6")),
         ("rolling-ball", "reduced-gni", ("reduced-gni-sym", "reduced-gni-4")))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    import dalembert as dl
    h, N = 0.01, a.steps
    runs = {}
    for model_name, two_step, others in CASES:
        model = dl.models.get(model_name)
        for method in (two_step,) + others:
            runs[(model_name, method)] = (lambda m=model, method=method: dl.integrate(
                m.system, method, h=h, t_final=N * h, save_every=N, progress=False, **m.initial_state))
    load = os.getloadavg()
    times = interleaved_times(runs, a.repeats, per=N / 1e6)           # µs per step
    print(f"# D* forms against their two-step GNIs: {N} steps, h = {h}, one node at the end; µs per step "
          f"min / median / max of {a.repeats} interleaved repeats; load before {load[0]:.2f}, after "
          f"{os.getloadavg()[0]:.2f}")
    for model_name, two_step, others in CASES:
        base = np.median(times[(model_name, two_step)])
        for method in (two_step,) + others:
            t = times[(model_name, method)]
            print(f"{model_name:14s} {method:16s} {min(t):7.2f} / {np.median(t):7.2f} / {max(t):7.2f}"
                  f"   {np.median(t) / base:5.2f}x {two_step}")


if __name__ == "__main__":
    main()
