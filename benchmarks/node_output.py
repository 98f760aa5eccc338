"""What saving every node costs against the step (issue 15): ``nh-rattle`` on the chaotic quartic
system (n = 40: 81 coordinates), 20 000 steps, µs per step with save_every = 1, 10 and 20 000
(one node at the end), through ``dl.integrate`` and as the compiled program ``jit(dl.solve)``;
5 interleaved repeats, min / median / max.

    python benchmarks/node_output.py [--n 40] [--method nh-rattle] [--repeats 5]
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from _report import interleaved_times


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--method", default="nh-rattle")
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    import dalembert as dl
    dl.configure()
    import jax
    import jax.numpy as jnp
    model = dl.models.get("chaotic-quartic", n=a.n)
    st, N, h = model.initial_state, a.steps, 0.01
    q0, v0 = jnp.asarray(st["q0"]), jnp.asarray(st["v0"])
    runs = {}
    for se in (1, 10, N):
        runs[f"integrate, save_every {se}"] = (lambda se=se: dl.integrate(
            model.system, a.method, h=h, t_final=N * h, save_every=se, progress=False, **st))
        f = jax.jit(lambda q0, v0, se=se: dl.solve(model.system, a.method, (q0, v0), h, N, save_every=se))
        runs[f"jit(dl.solve), save_every {se}"] = (lambda f=f: jax.block_until_ready(f(q0, v0)))
    load = os.getloadavg()
    times = interleaved_times(runs, a.repeats, per=N / 1e6)           # µs per step
    print(f"# node output cost: {a.method} on chaotic-quartic n = {a.n} ({2 * a.n + 1} coordinates), "
          f"{N} steps; µs per step min / median / max of {a.repeats}; load {load[0]:.2f}")
    for k, t in times.items():
        print(f"{k:36s} {min(t):7.2f} / {np.median(t):7.2f} / {max(t):7.2f}")


if __name__ == "__main__":
    main()
