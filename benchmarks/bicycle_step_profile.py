"""Where a step of the whipple-bicycle goes: lowered program size per method, CPU time of the
pieces (mass matrix, its q-derivative, constraint matrix, the Gonzalez residual and its Jacobian),
the jitted step alone and a 20 s run of manoeuvre M2 with its Newton iteration counts.

    python benchmarks/bicycle_step_profile.py [--methods gonzalez-f,nh-rattle-sym] [--rounds 5]

CPU times (time.process_time, min / median / max over rounds, interleaved) with the load average.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np


def cpu_per_call(f, args, reps):
    jax.block_until_ready(f(*args))
    c = time.process_time()
    for _ in range(reps):
        out = f(*args)
    jax.block_until_ready(out)
    return (time.process_time() - c) / reps


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--methods", default="gonzalez-f,nh-rattle-sym")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--t-final", type=float, default=20.0)
    ap.add_argument("--no-run", action="store_true")
    a = ap.parse_args(argv)
    import dalembert as dl
    from dalembert import methods as M
    from dalembert.experiments import iftomm_bicycle as X
    print("load", os.getloadavg(), flush=True)
    model = dl.models.get("whipple-bicycle")
    s = model.system
    q0, v0 = X.bicycle().upright_state(*X.MANEUVERS["M2"])
    q, v = jnp.asarray(q0) + 0.01, jnp.asarray(v0)
    p = s.momentum(q, v)
    n = 8
    pieces = {
        "mass_matrix": (jax.jit(s.mass_matrix), (q,)),
        "jacfwd(mass_matrix)": (jax.jit(jax.jacfwd(s.mass_matrix)), (q,)),
        "grad_q H": (jax.jit(jax.grad(s.hamiltonian)), (q, p)),
        "constraint_matrix": (jax.jit(s.constraint_matrix), (q,)),
        "jacfwd(constraint_matrix)": (jax.jit(jax.jacfwd(s.constraint_matrix)), (q,)),
        "potential": (jax.jit(s.potential), (q,)),
    }
    # the gonzalez-f residual and its reverse Jacobian, as the step builds them
    from dalembert.methods.discrete_gradients import gonzalez
    H = lambda z: s.hamiltonian(z[:n], z[n:])
    dg = gonzalez(H)
    z = jnp.concatenate([q, p])
    pieces["gonzalez dg(z, z')"] = (jax.jit(dg), (z, z + 1e-3))
    pieces["jacrev(dg)"] = (jax.jit(jax.jacrev(dg, argnums=1)), (z, z + 1e-3))
    pieces["jacfwd(dg)"] = (jax.jit(jax.jacfwd(dg, argnums=1)), (z, z + 1e-3))
    for name, (f, args) in pieces.items():
        lines = f.lower(*args).as_text().count("\n")
        c = time.process_time()
        jax.block_until_ready(f(*args))
        comp = time.process_time() - c
        ts = [cpu_per_call(f, args, 200) * 1e6 for _ in range(a.rounds)]
        print(f"{name:28s} lowered {lines:6d} lines  compile {comp:6.2f} s CPU  "
              f"{min(ts):9.1f} / {statistics.median(ts):9.1f} / {max(ts):9.1f} µs", flush=True)
    for mname in a.methods.split(","):
        opts = X.OPTIONS.get(mname, {})
        sch = M.get(mname).build(s, jnp.asarray(q0), **opts)
        st = sch.init(jnp.asarray(q0), jnp.asarray(v0), 0.04)
        hj = jnp.asarray(0.01)
        step = jax.jit(sch.step)
        low = step.lower(st, hj)
        lines = low.as_text().count("\n")
        c = time.process_time()
        jax.block_until_ready(step(st, hj))
        comp = time.process_time() - c
        ts = [cpu_per_call(step, (st, hj), 50) * 1e6 for _ in range(a.rounds)]
        out = step(st, hj)
        print(f"{mname} step: lowered {lines} lines, compile {comp:.1f} s CPU; jitted step alone "
              f"{min(ts):.0f} / {statistics.median(ts):.0f} / {max(ts):.0f} µs; iterations {int(out[1].iterations)}",
              flush=True)
    if a.no_run:
        return
    for mname in a.methods.split(","):
        for h in (0.04, 0.01):
            w = time.perf_counter()
            tr, cpu = X.timed_run(X.bicycle(), mname, h, a.t_final)
            nw = tr.metadata.get("newton", {})
            print(f"{mname} h={h}: metric {X.energy_metric(tr.energy):.2e} %, CPU {cpu:.3f} s, "
                  f"{cpu / round(a.t_final / h) * 1e6:.0f} µs/step, newton {nw}, phi "
                  f"{float(np.max(np.abs(tr.holonomic_residual))):.1e}, rolling "
                  f"{float(np.max(np.abs(tr.constraint_residual))):.1e}, "
                  f"first+run wall {time.perf_counter() - w:.0f} s",
                  flush=True)
    print("load", os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
