"""The fixed cost of one call at the low-accuracy benchmark's system (issue 37 item 5): one step of
``rk8-projected`` on the knife edge in a well (benchmarks/work_precision_low.py) through
``dl.integrate`` and as ``jit(dl.solve)``, the parts of ``dl.integrate``'s call (the input check,
the compiled start and chunk programs), and diffrax's Dopri8 over one such step, interleaved.

    python benchmarks/low_accuracy_fixed_cost.py [--rounds 200]

Process CPU time (all threads) of each call after two warm-up calls, min / median / max over
``--rounds`` interleaved rounds; written to benchmarks/results/low_accuracy_fixed_cost.txt.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--out", default="benchmarks/results/low_accuracy_fixed_cost.txt")
    a = ap.parse_args(argv)
    import jax
    import jax.numpy as jnp
    import dalembert as dl
    from dalembert.engine.programs import single_run_programs
    from work_precision_low import _dfx_program, _dl_program, knife_edge_well
    s, q0, v0 = knife_edge_well()
    q0j, v0j = jnp.asarray(q0), jnp.asarray(v0)
    m = dl.methods.get("rk8-projected")
    x0 = (np.asarray(q0), np.asarray(v0))
    h = np.float64(200 / 519)                # the step that reaches 1e-4 at T = 200
    try:                                   # a 1-step run runs the short chunk (loop.SHORT_CHUNK_SAVES)
        start, chunk, _ = single_run_programs(s, m, {}, x0, h, short=True)
    except TypeError:                      # a version without it (a baseline run): its one chunk
        start, chunk, _ = single_run_programs(s, m, {}, x0, h)
    st, _ = start(x0, h)
    fs = {
        "dl.integrate, 1 step": lambda: dl.integrate(s, m, q0=q0, v0=v0, h=float(h), t_final=float(h),
                                                     progress=False),
        "jit(dl.solve), 1 step": _dl_program(s, "rk8-projected", q0j, v0j, float(h), 1),
        "  its check_initial_state": lambda: s.check_initial_state(q0, v0),
        "  its start program": lambda: jax.block_until_ready(start(x0, h)),
        "  its chunk program, 1 step": lambda: np.asarray(chunk(st, h, np.int32(1), np.int32(1),
                                                                np.array(True))[1]),
        "diffrax Dopri8, t = h": _dfx_program(s, "dopri8", jnp.concatenate([q0j, v0j]), 3, float(h), 3.2e-6, True),
    }
    for f in fs.values():
        f()
        f()
    res = {k: [] for k in fs}
    l0 = os.getloadavg()
    for _ in range(a.rounds):
        for k, f in fs.items():
            c = time.process_time()
            f()
            res[k].append(time.process_time() - c)
    lines = [f"load average (1 min) before {l0[0]:.2f}, after {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; "
             f"CPU µs min / median / max of {a.rounds} interleaved rounds"]
    for k, v in res.items():
        v = [x * 1e6 for x in v]
        lines.append(f"{k:30s} {min(v):7.0f} / {statistics.median(v):7.0f} / {max(v):7.0f}")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
