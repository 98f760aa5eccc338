"""Per-step cost of the compositions against their stage count × their base method's step
(issue 37 item 4): on the chaotic quartic system (n = 40: 81 coordinates), µs per step of the
compiled program ``jit(dl.solve)`` (dalembert's per-executable options, one node at the end) and
through ``dl.integrate``; interleaved rounds, min / median / max; the ratio
composition / (stages × base) from the medians.

    python benchmarks/composition_cost.py [--n 40] [--steps 4000] [--repeats 5]
"""
from __future__ import annotations

import argparse
import time

from _report import cpu_step_table

#: (composition, base)
PAIRS = (("nh-rattle-4", "nh-rattle-sym"), ("nh-rattle-6", "nh-rattle-sym"), ("nh-rattle-8", "nh-rattle-sym"),
         ("gni-midpoint-4", "gni-midpoint-sym"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--h", type=float, default=0.01)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--integrate", action="store_true", help="also time dl.integrate")
    a = ap.parse_args(argv)
    import jax
    import jax.numpy as jnp
    import dalembert as dl
    from dalembert.engine.xla import compile_lowered
    model = dl.models.get("chaotic-quartic", n=a.n)
    st, N, h = model.initial_state, a.steps, a.h
    q0, v0 = jnp.asarray(st["q0"]), jnp.asarray(st["v0"])
    names = ["nh-rattle"] + sorted({b for _, b in PAIRS}) + [c for c, _ in PAIRS]
    stages = {c: len(dl.methods.get(c).stages) for c, _ in PAIRS}
    runs = {}
    for m in names:
        lowered = jax.jit(lambda q0, v0, m=m: dl.solve(model.system, m, (q0, v0), h, N, save_every=N)).lower(q0, v0)
        t0 = time.perf_counter()
        compiled = compile_lowered(lowered)
        print(f"  {m}: compiled in {time.perf_counter() - t0:.1f} s", flush=True)
        runs[f"{m} [jit]"] = lambda c=compiled: jax.block_until_ready(c(q0, v0))
        if a.integrate:
            runs[f"{m} [integrate]"] = lambda m=m: dl.integrate(model.system, m, h=h, t_final=N * h,
                                                                save_every=N, progress=False, **st)
    med = cpu_step_table(runs, a.repeats, N, f"composition cost: chaotic-quartic n = {a.n} ({2 * a.n + 1} "
                                             f"coordinates), {N} steps of h = {h}")
    for c, b in PAIRS:
        for kind in ("jit", "integrate") if a.integrate else ("jit",):
            r = med[f"{c} [{kind}]"] / (stages[c] * med[f"{b} [{kind}]"])
            print(f"{c} / ({stages[c]} × {b}) [{kind}]: {r:.2f}")
    print(f"nh-rattle-sym / nh-rattle [jit]: {med['nh-rattle-sym [jit]'] / med['nh-rattle [jit]']:.2f}")


if __name__ == "__main__":
    main()
