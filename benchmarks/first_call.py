"""Where the first `dl.integrate` call on a rich user system spends its time.

Two systems written the way a user writes them (metric = ``jax.hessian`` of the kinetic energy
T(q, v) in v, constraints by ``jax.jacfwd`` of the contact-point velocity):

* **coin** — a thin disk rolling without slipping on a horizontal plane, 5 coordinates
  q = (x, y, ψ yaw, θ tilt, φ spin), x, y the contact point; T = ½ m |ṙ|² + ½ ωᵀIω with
  r = (x, y, 0) + R e₁ × a (centre), ω = ψ̇ e_z + θ̇ e₁ + φ̇ a, I = A (1 − a aᵀ) + C a aᵀ; two
  rolling constraints (the horizontal contact-point velocity ṙ − ω × (R e₁ × a) = 0); gravity
  V = m g R cos θ (Bloch, *Nonholonomic Mechanics and Control*, §1.4).
* **chain** — a planar snake of 8 links, 10 coordinates q = (x, y, θ₁ … θ₈) ((x, y) the tail
  joint): each link is a rod (mass, inertia about its centre) with a knife-edge wheel at its
  centre (no sideways slip: 8 constraints), neighbouring links joined by torsional springs.

Each measurement runs in a fresh Python process: the first ``dl.integrate`` call (t_final = 1,
every node saved) is split into

* ``checks`` — ``system.check_initial_state`` (shapes by tracing, values, the constraint),
* ``trace`` / ``lower`` / ``compile`` — JAX's own event durations (``jax.monitoring``: jaxpr
  tracing, jaxpr → MLIR, XLA's backend compile or the persistent cache's load) summed over the
  whole call, wherever they happen,
* ``run`` — the run's wall time (``metadata['wall_time_s']``),
* ``other`` — the rest of the call,

with the number of times the user's T was traced (a counter in T), the process's CPU time, and
the second call's wall time (the same system, another initial state). JAX's phase durations are
wall times; the ``cpu:`` line gives the process's CPU seconds inside them (on a shared machine
only those compare). Modes: ``cold`` (JAX's persistent cache turned on by the user's call
``dalembert.config.enable_compilation_cache()`` in a new, empty directory given by
``DALEMBERT_CACHE_DIR``), ``warm`` (a second process with that call on that directory: its time to
the first step), ``default`` (a third process on that directory without the call: what a user who
never heard of the cache gets: dalembert's own cache of its programs, cold), ``default2`` (a fourth
process without the call: that cache warm).

Run: ``python benchmarks/first_call.py [--systems coin chain] [--methods nh-rattle dg-gonzalez]
[--modes cold warm default default2] [--out benchmarks/results/first_call.txt] [--label before]`` (appends).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = Path(os.environ.get("FIRST_CALL_SRC", HERE.parent / "src"))

TRACES = {"T": 0}


# ---------------------------------------------------------------------------------------------
# the systems (as a user writes them)
# ---------------------------------------------------------------------------------------------

def coin():
    import jax
    import jax.numpy as jnp
    import numpy as np
    import dalembert as dl

    m, R, g = 1.0, 0.5, 9.81
    A, C = m * R ** 2 / 4, m * R ** 2 / 2

    def frame(q):
        psi, th = q[2], q[3]
        e1 = jnp.array([jnp.cos(psi), jnp.sin(psi), 0.0])
        a = jnp.cos(th) * jnp.array([-jnp.sin(psi), jnp.cos(psi), 0.0]) + jnp.sin(th) * jnp.array([0.0, 0.0, 1.0])
        return e1, a

    def centre(q):
        e1, a = frame(q)
        return jnp.array([q[0], q[1], 0.0]) + R * jnp.cross(e1, a)

    def omega(q, v):
        e1, a = frame(q)
        return v[2] * jnp.array([0.0, 0.0, 1.0]) + v[3] * e1 + v[4] * a

    def T(q, v):
        TRACES["T"] += 1
        rdot = jax.jvp(centre, (q,), (v,))[1]
        _, a = frame(q)
        w = omega(q, v)
        Iw = A * (w - a * jnp.dot(a, w)) + C * a * jnp.dot(a, w)
        return 0.5 * m * jnp.dot(rdot, rdot) + 0.5 * jnp.dot(w, Iw)

    def metric(q):
        return jax.hessian(T, argnums=1)(q, jnp.zeros_like(q))

    def slip(q, v):
        e1, a = frame(q)
        return (jax.jvp(centre, (q,), (v,))[1] - jnp.cross(omega(q, v), R * jnp.cross(e1, a)))[:2]

    def constraints(q):
        return jax.jacfwd(slip, argnums=1)(q, jnp.zeros_like(q))

    def potential(q):
        return m * g * R * jnp.cos(q[3])

    sys_ = dl.NonholonomicSystem(metric, potential, constraints, name="hessian-coin")

    def state(k=0):
        q0 = np.array([0.0, 0.0, 0.1 * k, 0.2 + 0.01 * k, 0.0])
        w = np.array([0.5, 0.1, 6.0 + k])                    # ψ̇, θ̇, φ̇
        mu = np.asarray(jax.jit(constraints)(q0))
        v0 = np.concatenate([-np.linalg.solve(mu[:, :2], mu[:, 2:] @ w), w])
        return q0, v0
    return sys_, state, 0.01


def chain(links: int = 8):
    import jax
    import jax.numpy as jnp
    import numpy as np
    import dalembert as dl

    L, mass, k_spring = 1.0, 1.0, 2.0
    J = mass * L ** 2 / 12

    def centres(q):
        th = q[2:]
        d = L * jnp.stack([jnp.cos(th), jnp.sin(th)], axis=1)
        joints = q[:2] + jnp.concatenate([jnp.zeros((1, 2)), jnp.cumsum(d, axis=0)[:-1]])
        return joints + 0.5 * d

    def T(q, v):
        TRACES["T"] += 1
        cdot = jax.jvp(centres, (q,), (v,))[1]
        return 0.5 * mass * jnp.sum(cdot ** 2) + 0.5 * J * jnp.sum(v[2:] ** 2)

    def metric(q):
        return jax.hessian(T, argnums=1)(q, jnp.zeros_like(q))

    def sideways(q, v):
        th = q[2:]
        nrm = jnp.stack([-jnp.sin(th), jnp.cos(th)], axis=1)
        return jnp.sum(nrm * jax.jvp(centres, (q,), (v,))[1], axis=1)

    def constraints(q):
        return jax.jacfwd(sideways, argnums=1)(q, jnp.zeros_like(q))

    def potential(q):
        return 0.5 * k_spring * jnp.sum(jnp.diff(q[2:]) ** 2)

    sys_ = dl.NonholonomicSystem(metric, potential, constraints, name=f"snake-{links}")

    def state(k=0):
        q0 = np.concatenate([[0.0, 0.0], 0.3 * np.sin(np.arange(links) + 0.1 * k)])
        mu = np.asarray(jax.jit(constraints)(q0))
        null = np.linalg.svd(mu)[2][mu.shape[0]:]
        v0 = null.T @ np.array([1.0, 0.5 + 0.1 * k])
        return q0, v0
    return sys_, state, 0.01


SYSTEMS = {"coin": coin, "chain": chain}


# ---------------------------------------------------------------------------------------------
# one measurement (in this process)
# ---------------------------------------------------------------------------------------------

def _cpu_per_phase() -> dict:
    """CPU seconds of this process within JAX's timed phases (trace, lower, compile), outermost
    occurrence of each only (a trace inside a trace is counted once): JAX's own event durations
    are wall times, which on a shared machine say more about the load than about the work."""
    from jax._src import dispatch
    cls = dispatch.LogElapsedTimeContextManager
    enter, exit_ = cls.__enter__, cls.__exit__
    spent, open_ = {}, {}

    def __enter__(self):
        if self.event is not None:
            depth, t = open_.get(self.event, (0, None))
            open_[self.event] = (depth + 1, time.process_time() if depth == 0 else t)
        return enter(self)

    def __exit__(self, *exc):
        if self.event is not None and self.event in open_:
            depth, t = open_[self.event]
            if depth == 1:
                spent[self.event] = spent.get(self.event, 0.0) + time.process_time() - t
                del open_[self.event]
            else:
                open_[self.event] = (depth - 1, t)
        return exit_(self, *exc)
    cls.__enter__, cls.__exit__ = __enter__, __exit__
    return spent


def measure(system: str, method: str) -> dict:
    t_start = time.perf_counter()
    cpu_start = time.process_time()
    import jax
    import numpy as np
    import dalembert as dl
    from jax import monitoring

    events = {}

    def listen(name, secs, **kw):
        events[name] = events.get(name, 0.0) + secs
        if "fun_name" in kw:
            key = f"{name.rsplit('/', 1)[-1]}:{kw['fun_name']}"
            events[key] = events.get(key, 0.0) + secs
    monitoring.register_event_duration_secs_listener(listen)
    cpu = _cpu_per_phase()

    sys_, state, h = SYSTEMS[system]()
    q0, v0 = state(0)
    cls = type(sys_)
    check = cls.check_initial_state
    spent = {"checks": 0.0}

    def timed_check(self, *a, **k):
        t = time.perf_counter()
        try:
            return check(self, *a, **k)
        finally:
            spent["checks"] += time.perf_counter() - t
    cls.check_initial_state = timed_check
    TRACES["T"] = 0
    ev0, cpu0 = dict(events), dict(cpu)
    t0, c0 = time.perf_counter(), time.process_time()
    traj = dl.integrate(sys_, method, h=h, t_final=1.0, q0=q0, v0=v0)
    first, first_cpu = time.perf_counter() - t0, time.process_time() - c0
    cpu_ev = {k: v - cpu0.get(k, 0.0) for k, v in cpu.items()}
    ev = {k: v - ev0.get(k, 0.0) for k, v in events.items()}
    traces_first = TRACES["T"]
    md = traj.metadata
    q1, v1 = state(1)
    t1 = time.perf_counter()
    dl.integrate(sys_, method, h=h, t_final=1.0, q0=q1, v0=v1)
    second = time.perf_counter() - t1

    def ev_sum(*keys):
        return sum(v for k, v in ev.items() if k.startswith("/") and any(key in k for key in keys))
    out = {"system": system, "method": method, "first_s": first, "second_s": second,
           "checks_s": spent["checks"], "programs_s": md.get("compile_time_s"),
           "run_s": md.get("wall_time_s"),
           "trace_s": ev_sum("jaxpr_trace_duration"),
           "lower_s": ev_sum("jaxpr_to_mlir_module_duration"),
           "compile_s": ev_sum("backend_compile_duration"),
           "cache_load_s": ev_sum("cache_retrieval_time_sec"),
           "first_cpu_s": first_cpu,
           "trace_cpu_s": sum(v for k, v in cpu_ev.items() if "jaxpr_trace" in k),
           "lower_cpu_s": sum(v for k, v in cpu_ev.items() if "mlir_module" in k),
           "compile_cpu_s": sum(v for k, v in cpu_ev.items() if "backend_compile" in k),
           "T_traces": traces_first, "steps": md.get("n_steps"),
           "process_cpu_s": time.process_time() - cpu_start,
           "process_wall_s": time.perf_counter() - t_start,
           "final_q": np.asarray(traj.q[-1]).tolist(), "events": ev}
    out["other_s"] = first - out["checks_s"] - out["programs_s"] - out["run_s"]
    return out


def spawn(system, method, mode, cache: Path | None) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    env.pop("DALEMBERT_CACHE_DIR", None)
    env["DALEMBERT_CACHE_DIR"] = str(cache)
    if mode in ("cold", "warm"):              # the opt-in call; "default": none
        env["DALEMBERT_FIRST_CALL_CACHE"] = "1"
    r = subprocess.run([sys.executable, __file__, "--one", system, method], env=env, capture_output=True,
                       text=True, timeout=1800)
    if r.returncode != 0:
        raise SystemExit(f"{system}/{method}/{mode} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


ROW = ("{system:6s} {method:12s} {mode:7s} first {first_s:6.1f} s = checks {checks_s:5.1f} + programs "
       "{programs_s:5.1f} + run {run_s:5.2f} + other {other_s:5.1f} | trace {trace_s:5.1f} lower {lower_s:5.1f} "
       "compile {compile_s:5.1f} load {cache_load_s:4.1f} | T traced {T_traces:3d}× | second {second_s:5.2f} s | "
       "process cpu {process_cpu_s:6.1f} s wall {process_wall_s:6.1f} s\n"
       "{blank:30s}cpu:  first {first_cpu_s:6.1f} s | trace {trace_cpu_s:5.1f} lower {lower_cpu_s:5.1f} "
       "compile {compile_cpu_s:5.1f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", nargs=2)
    ap.add_argument("--systems", nargs="+", default=["coin", "chain"])
    ap.add_argument("--methods", nargs="+", default=["nh-rattle", "dg-gonzalez"])
    ap.add_argument("--modes", nargs="+", default=["cold", "warm", "default", "default2"])
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default=str(HERE / "results" / "first_call.txt"))
    args = ap.parse_args()
    if args.one:
        if os.environ.get("DALEMBERT_FIRST_CALL_CACHE") == "1":
            from dalembert.config import enable_compilation_cache
            enable_compilation_cache()        # the explicit opt-in
        print(json.dumps(measure(*args.one)))
        return
    lines = [f"## {args.label} {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             "uptime before: " + subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()]
    print("\n".join(lines), flush=True)
    for system in args.systems:
        for method in args.methods:
            with tempfile.TemporaryDirectory() as cache:
                for mode in args.modes:
                    r = spawn(system, method, mode, Path(cache))
                    line = ROW.format(mode=mode, blank="", **r)
                    print(line, flush=True)
                    print("   final q:", " ".join(f"{x:.17g}" for x in r["final_q"]), flush=True)
                    lines += [line, "   final q: " + " ".join(f"{x:.17g}" for x in r["final_q"])]
    lines.append("uptime after: " + subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(lines[-1])
    with open(args.out, "a") as f:
        f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
