"""The IFToMM "uncontrolled bicycle" efficiency test, dalembert beside its peers on this machine:
20 s of manoeuvre M2 (4.6 m/s, roll rate 0.5 rad/s), the energy metric 100·(max E − min E)/E₀ (%)
against the CPU time of the time integration (``time.process_time``), with the set-up times and the
largest configuration-constraint residual (m).

One worker subprocess per code (dalembert, Exudyn, PyDy/SymPy + SciPy) builds its model once (the
set-up time) and then answers jobs one at a time; the driver sends the jobs round-robin over the
workers, ``--rounds`` times, so that the codes share the machine's load alike, and reports the min,
median and max CPU time per job, with the load average from ``uptime`` before and after. dalembert's
jobs run once untimed first (the compile) and then timed. The peers are optional
(``pip install -e .[peers]``): a peer that is not installed is reported as such and skipped.

    python benchmarks/iftomm_bicycle.py [--rounds 3] [--quick] [--model builtin|sympy]
        [--methods gonzalez-f,nh-rattle-sym] [--h 0.02,0.01,...] [--out benchmarks/results/iftomm_bicycle.txt]

Peers: benchmarks/iftomm_peers.py (Exudyn 1.13.6's own IFToMM model and solver settings; SymPy's
test_kane3 Whipple bicycle with PyDy's Cython code generator and DOP853).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
T_FINAL = 20.0


# --- workers ------------------------------------------------------------------------------------

def _dalembert_worker(model, cache):
    import numpy as np
    from dalembert.config import enable_compilation_cache
    from dalembert.experiments import iftomm_bicycle as X
    if cache:                 # the first call's compile is kept for the next process (as the CLI does)
        enable_compilation_cache(None if cache == "default" else cache)
    c0, w0 = time.process_time(), time.perf_counter()
    if model == "builtin":
        bike = X.bicycle()
    else:
        bike = _sympy_bike()
    setup = {"setup_s": time.process_time() - c0, "setup_wall_s": time.perf_counter() - w0}
    compiled = {}
    yield setup
    while True:
        job = yield None
        method, h = job["method"], job["h"]
        try:
            if method not in compiled:                 # first call: the compile, timed on the wall clock
                w = time.perf_counter()
                X.timed_run(bike, method, h, 4 * h)
                compiled[method] = time.perf_counter() - w
            tr, cpu = X.timed_run(bike, method, h, T_FINAL)
            out = {"metric": X.energy_metric(tr.energy), "cpu_s": cpu,
                   "drift": float(np.max(np.abs(tr.holonomic_residual))),
                   "rolling": float(np.max(np.abs(tr.constraint_residual))), "first_call_s": compiled[method]}
        except Exception as e:
            out = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"}
        yield out


def _sympy_bike():
    """SymPy's test_kane3 Whipple bicycle through dl.from_sympy, adapted to the experiment's
    interface (roll q2, steer q5, forward speed = rear wheel rate × 0.3 m)."""
    import numpy as np
    import dalembert as dl
    from dalembert.experiments.iftomm_bicycle import Bicycle
    sys.path.insert(0, str(HERE))
    import iftomm_peers
    mod = iftomm_peers._sympy_bicycle()
    km, values, V = mod.whipple_bicycle()
    system = dl.from_sympy(km, values=values, potential=V, name="whipple-sympy")
    names = system.coordinate_names
    rear = names.index("angle_u3")
    return Bicycle(system, lambda v, w: mod.bicycle_state(system, v, w), names.index("q2"), names.index("q5"),
                   lambda q, v: np.asarray(v)[..., rear] * mod.R_REAR)


def _exudyn_worker():
    sys.path.insert(0, str(HERE))
    import iftomm_peers
    try:
        import exudyn  # noqa: F401
    except ImportError:
        yield {"missing": "exudyn"}
        return
    c0 = time.process_time()
    iftomm_peers.exudyn_run("M2", 0.1, 0.2)              # import and first build
    yield {"setup_s": time.process_time() - c0}
    while True:
        job = yield None
        r = iftomm_peers.exudyn_run("M2", job["h"], T_FINAL)
        yield {"metric": r["metric"], "cpu_s": r["cpu_s"], "drift": r["drift"], "setup_s": r["setup_s"]}


def _pydy_worker():
    sys.path.insert(0, str(HERE))
    import iftomm_peers
    m = iftomm_peers.pydy_setup()
    if "missing" in m:
        yield m
        return
    yield {"setup_s": m["setup_cpu_s"], "setup_wall_s": m["setup_wall_s"]}
    while True:
        job = yield None
        r = iftomm_peers.pydy_run("M2", job["rtol"], T_FINAL, m)
        yield {"metric": r["metric"], "metric_dense": r["metric_dense"], "cpu_s": r["cpu_s"], "drift": r["drift"],
               "steps": r["steps"]}


def worker_main(kind, model, cache):
    import warnings
    warnings.simplefilter("ignore")
    gen = {"dalembert": lambda: _dalembert_worker(model, cache), "exudyn": _exudyn_worker, "pydy": _pydy_worker}[kind]()
    print(json.dumps(next(gen)), flush=True)
    for line in sys.stdin:
        try:
            next(gen)
            print(json.dumps(gen.send(json.loads(line))), flush=True)
        except StopIteration:
            return


# --- driver -------------------------------------------------------------------------------------

class Worker:
    def __init__(self, kind, model, cache):
        self.kind = kind
        env = dict(os.environ)
        src = str(HERE.parent / "src")
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
        self.p = subprocess.Popen([sys.executable, __file__, "--worker", kind, "--model", model,
                                   "--cache", cache], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)
        self.hello = json.loads(self.p.stdout.readline() or '{"error": "worker died"}')

    def ask(self, job):
        self.p.stdin.write(json.dumps(job) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline() or '{"error": "worker died"}')

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(timeout=60)


def _load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", choices=("dalembert", "exudyn", "pydy"))
    ap.add_argument("--model", default="builtin", choices=("builtin", "sympy"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache", default="default",
                    help="persistent JAX compilation cache directory for dalembert ('default': the CLI's; '' none)")
    ap.add_argument("--quick", action="store_true", help="two dalembert methods, a short ladder")
    ap.add_argument("--peers-only", action="store_true", help="no dalembert worker (the peers' table alone)")
    ap.add_argument("--methods", default="")
    ap.add_argument("--h", default="")
    ap.add_argument("--exudyn-h", default="0.02,0.014,0.01,0.005,0.002,0.001")
    ap.add_argument("--pydy-rtol", default="1e-4,1e-6,1e-8,1e-10,1e-12")
    ap.add_argument("--out", default=str(HERE / "results" / "iftomm_bicycle.txt"))
    a = ap.parse_args(argv)
    if a.worker:
        return worker_main(a.worker, a.model, a.cache)
    methods = a.methods.split(",") if a.methods else (
        ["gonzalez-f", "nh-rattle-sym"] if a.quick else
        ["gonzalez-f", "nh-rattle-sym", "nh-rattle", "gni-midpoint-sym", "dla-midpoint", "spark-lobatto2",
         "nh-rattle-4", "spark-lobatto3", "rk8-projected"])
    hs = [float(x) for x in a.h.split(",")] if a.h else ([0.02, 0.01] if a.quick else [0.04, 0.02, 0.01, 0.005])
    load0 = _load()
    t0 = time.perf_counter()
    workers, lines = {}, []
    for kind in ("exudyn", "pydy") if a.peers_only else ("dalembert", "exudyn", "pydy"):
        w = Worker(kind, a.model, a.cache)
        if "missing" in w.hello:
            lines.append(f"{kind}: not installed ({w.hello['missing']} missing; pip install -e .[peers]): skipped")
            w.close()
            continue
        workers[kind] = w
    jobs = [("dalembert", {"method": m, "h": h}) for m in methods for h in hs] if "dalembert" in workers else []
    if "exudyn" in workers:
        jobs += [("exudyn", {"h": float(h)}) for h in a.exudyn_h.split(",")]
    if "pydy" in workers:
        jobs += [("pydy", {"rtol": float(r)}) for r in a.pydy_rtol.split(",")]
    # interleave: one job of each code in turn
    by_kind = {k: [j for j in jobs if j[0] == k] for k in workers}
    order = []
    while any(by_kind.values()):
        for k in workers:
            if by_kind[k]:
                order.append(by_kind[k].pop(0))
    results = {}
    for r in range(a.rounds):
        for kind, job in order:
            out = workers[kind].ask(job)
            results.setdefault((kind, json.dumps(job, sort_keys=True)), []).append(out)
            print(kind, job, {k: v for k, v in out.items() if k != "first_call_s"}, flush=True)
    for w in workers.values():
        w.close()
    load1 = _load()
    head = [f"IFToMM uncontrolled bicycle, manoeuvre M2 (4.6 m/s, roll rate 0.5 rad/s), {T_FINAL:g} s; "
            f"{a.rounds} interleaved rounds; dalembert model: {a.model}",
            f"load average (1, 5, 15 min) before: {load0}; after: {load1}; wall {time.perf_counter() - t0:.0f} s",
            f"python {sys.version.split()[0]}; machine: {os.cpu_count()} CPUs"]
    for kind, w in workers.items():
        head.append(f"{kind} set-up: " + ", ".join(f"{k} {v:.2f}" for k, v in w.hello.items()))
    head += lines
    table = [f"{'code':10s} {'method':18s} {'h / rtol':>9s} {'metric %':>10s} {'(0.01 s)':>9s} {'CPU min':>8s} "
             f"{'median':>8s} {'max':>8s} {'max |φ| (m)':>11s} {'rolling':>8s} {'1st call s':>10s}"]
    for (kind, key), outs in results.items():
        job = json.loads(key)
        if any("error" in o for o in outs):
            table.append(f"{kind:10s} {job.get('method', ''):18s} {job.get('h', job.get('rtol')):>9g}  "
                         f"{next(o['error'] for o in outs if 'error' in o)}")
            continue
        cpu = [o["cpu_s"] for o in outs]
        o = outs[-1]
        name = job.get("method") or {"exudyn": "TrapezoidalIndex2", "pydy": "DOP853 (Cython)"}[kind]
        dense = f"{o['metric_dense']:>9.1e}" if "metric_dense" in o else f"{'':>9s}"
        table.append(f"{kind:10s} {name:18s} {job.get('h', job.get('rtol')):>9g} {o['metric']:>10.2e} {dense} "
                     f"{min(cpu):>8.3f} {statistics.median(cpu):>8.3f} {max(cpu):>8.3f} {o['drift']:>11.1e} "
                     + (f"{o['rolling']:>8.1e} {o['first_call_s']:>10.1f}" if "rolling" in o else ""))
    foot = ["", "metric %: 100·(max E − min E)/E₀ over the nodes (dalembert: every step; Exudyn: every step; PyDy: "
            "the solver's own steps); (0.01 s): PyDy's metric from its dense output every 0.01 s (a separate, "
            "untimed solve). CPU: time.process_time of the time integration alone (s). max |φ|: dalembert the "
            "front contact height; Exudyn the contact heights of both wheels and the revolute joints' position "
            "mismatch; PyDy the front contact height (the pitch is integrated, not projected). rolling: dalembert's "
            "max |μ(q)v| at the nodes (m/s). 1st call: dalembert's first run in the worker process (compile; "
            "wall s, from the persistent compilation cache when it holds the step)."]
    text = "\n".join(head + [""] + table + foot) + "\n"
    print(text)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
