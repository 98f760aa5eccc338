"""A Dask sweep against dl.ensemble on the same machine (issue 14), and a sweep whose worker is
killed halfway. Usage: python benchmarks/sweeps.py [members] [steps] [repeats]"""
import json
import os
import signal
import sys
import tempfile
import threading
import time

import jax.numpy as jnp
import numpy as np

import dalembert as dl


def skate():
    """A spring-tied knife edge (not a zoo model): E = ½|v|² + ½ k x²."""
    return dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, 0.4])), potential=lambda q: 0.5 * 0.3 * q[0] ** 2,
        constraint_matrix=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]), name="spring-skate")


def states(B):
    rng = np.random.default_rng(1)
    q0 = rng.normal(size=(B, 3)) * 0.5
    v0 = np.stack([np.array([np.cos(q[2]), np.sin(q[2]), 0.0]) * (0.5 + rng.random()) + [0, 0, rng.normal()]
                   for q in q0])
    return q0, v0


def kill_halfway(client, out, tasks):
    victim = sorted(client.run(os.getpid).values())[0]

    def watch():
        d = os.path.join(out, "tasks")
        while not (os.path.isdir(d) and len(os.listdir(d)) >= tasks // 2):
            time.sleep(0.05)
        os.kill(victim, signal.SIGKILL)
        print(json.dumps({"killed_worker_pid": victim, "after_task_files": len(os.listdir(d))}), flush=True)
    threading.Thread(target=watch, daemon=True).start()


if __name__ == "__main__":
    from dask import distributed
    B = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    h = 0.01
    q0, v0 = states(B)
    system = skate()
    kw = dict(h=h, t_final=steps * h, save_every=1000, keep=("energy", "q"), q0=q0, v0=v0)
    t0 = time.perf_counter()
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=50)
    client = distributed.Client(cluster)
    print(json.dumps({"cluster_start_s": time.perf_counter() - t0, "members": B, "steps": steps,
                      "load": os.getloadavg()}), flush=True)
    ref = None
    for r in range(reps):
        t0 = time.perf_counter()
        ens = dl.ensemble(system, "nh-rattle", progress=False, **kw)
        t_ens = time.perf_counter() - t0
        ref = ens if ref is None else ref
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            sw = dl.sweep(system, "nh-rattle", out=out, client=client, members_per_task=50, progress=False, **kw)
            t_sw = time.perf_counter() - t0
        same = all(np.array_equal(sw.arrays[k], ref.arrays[k]) for k in ("q", "energy"))
        print(json.dumps({"repeat": r, "ensemble_s": t_ens, "ensemble_compile_s": ens.metadata["compile_time_s"],
                          "sweep_s": t_sw, "sweep_over_ensemble": t_sw / t_ens, "tasks": sw.metadata["sweep"]["tasks"],
                          "equal_bit_for_bit": same, "load": os.getloadavg()[0]}), flush=True)
    with tempfile.TemporaryDirectory() as out:
        kill_halfway(client, out, B // 50)
        t0 = time.perf_counter()
        sw = dl.sweep(system, "nh-rattle", out=out, client=client, members_per_task=50, progress=False, **kw)
        t_sw = time.perf_counter() - t0
        diff = max(float(np.max(np.abs(sw.arrays[k] - ref.arrays[k]))) for k in ("q", "energy"))
        print(json.dumps({"killed_sweep_s": t_sw, "members": len(sw), "failed": len(sw.failed),
                          "max_abs_difference_to_ensemble": diff, "workers_now": len(client.run(os.getpid))}),
              flush=True)
    client.close()
    cluster.close()
