"""What saving every node costs against the step (issues 15 and 37): a method on the chaotic
quartic system (n = 40: 81 coordinates, 247 numbers a node with ``nh-rattle``), CPU µs per step
(``time.process_time``: all threads) with save_every = 1, 10 and N (one node at the end), through
``dl.integrate`` and as the compiled program ``jit(dl.solve)`` (compiled with dalembert's own
compiler options, :func:`dalembert.engine.xla.compiler_options`: without them XLA:CPU runs
each operation of the node loop through its runtime, 10–15 µs a node); interleaved repeats,
min / median / max, and the ratio save_every = 1 over save_every = N of the minima and of the
medians.

    python benchmarks/node_output.py [--n 40] [--method nh-rattle] [--steps 20000] [--repeats 5]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--method", default="nh-rattle")
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    import dalembert as dl
    import jax
    import jax.numpy as jnp
    from dalembert.engine.xla import compiler_options
    model = dl.models.get("chaotic-quartic", n=a.n)
    st, N, h = model.initial_state, a.steps, 0.01
    q0, v0 = jnp.asarray(st["q0"]), jnp.asarray(st["v0"])
    runs = {}
    for se in (1, 10, N):
        runs[("integrate", se)] = (lambda se=se: dl.integrate(
            model.system, a.method, h=h, t_final=N * h, save_every=se, progress=False, **st))
        f = jax.jit(lambda q0, v0, se=se: dl.solve(model.system, a.method, (q0, v0), h, N, save_every=se),
                    compiler_options=compiler_options())
        runs[("jit(dl.solve)", se)] = (lambda f=f: jax.block_until_ready(f(q0, v0)))
    for fn in runs.values():                     # compile
        fn()
    load = os.getloadavg()
    times = {k: [] for k in runs}
    for _ in range(a.repeats):
        for k, fn in runs.items():
            t0 = time.process_time()
            fn()
            times[k].append((time.process_time() - t0) / N * 1e6)
    print(f"# node output cost: {a.method} on chaotic-quartic n = {a.n} ({2 * a.n + 1} coordinates), "
          f"{N} steps; CPU µs per step min / median / max of {a.repeats}; load {load[0]:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    for (path, se), t in times.items():
        print(f"{path + ', save_every ' + str(se):36s} {min(t):7.3f} / {np.median(t):7.3f} / {max(t):7.3f}")
    for path in ("integrate", "jit(dl.solve)"):
        one, end = times[(path, 1)], times[(path, N)]
        print(f"{path}: save_every 1 / save_every {N}: {min(one) / min(end):.2f} (minima), "
              f"{np.median(one) / np.median(end):.2f} (medians)")


if __name__ == "__main__":
    main()
