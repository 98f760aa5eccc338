"""Low-accuracy work-precision on a held-out system (issue 37 item 5): CPU time to reach a final
error of 1e-4 (and 1e-7, 1e-10 for context), dalembert's compositions at large h against
diffrax's best (Tsit5, Dopri5, Dopri8, PID controller), interleaved.

    python benchmarks/work_precision_low.py [--t-final 100] [--repeats 7] [--targets 1e-4,1e-7,1e-10]
        [--methods rk8-projected,nh-rattle-8,rk8-projected:tableau=dop853] [--per-octave 4]

The system is not a zoo model: a knife edge (q = (x, y, θ), blade along (cos θ, sin θ), metric
diag(1, 1, 0.2)) in the anharmonic well V = ½(x² + 2y²) + ¼(x² + y²)² + 0.3 x y², with the
constraint sin θ ẋ − cos θ ẏ = 0 (a constant metric: the explicit GNI path). Reference q_ref(T):
SciPy DOP853 at rtol = atol = 1e-13 on the index-1 ODE, checked against nh-rattle-8 at h = 1/128.

Phase 1 (calibration): for each method, a sweep of the step count N (dalembert, h = T/N, N in
steps of 2^(1/per-octave)) or the tolerance (diffrax, rtol = atol = 10^(-k/4)); at each target the
cheapest point (fewest steps; the largest tol) whose final error max|q(T) − q_ref(T)| is at most
the target. Phase 2 (timing): each chosen point compiled once (the first call excluded), then
``--repeats`` rounds calling every one in turn (interleaved); process CPU time (all threads) and
wall time, min / median / max. dalembert runs as ``jit(dl.solve)`` compiled with dalembert's
per-executable options and through ``dl.integrate`` (the user's call); diffrax's programs are
compiled both with XLA's defaults and with dalembert's per-executable options, and the faster is
its entry. Per-step cost: the CPU time over the step count (diffrax: accepted + rejected steps).
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import os
import statistics
import time
from pathlib import Path

import numpy as np

#: registered methods, and "BASE+COEFFICIENTS" for dl.methods.compose(BASE, COEFFICIENTS) (the
#: 3-stage triple jump: fewer stages than nh-rattle-4's 5-stage Suzuki fractal, a larger error constant);
#: "NAME:KEY=VALUE,..." passes build options (e.g. "rk8-projected:tableau=dop853")
DALEMBERT = ("rk8-projected", "nh-rattle", "nh-rattle-sym", "nh-rattle-4", "nh-rattle-sym+triple-jump-4",
             "nh-rattle-6", "nh-rattle-8", "gni-midpoint-4")


@functools.lru_cache(maxsize=None)
def _method(name):
    """One method object per name: dl.integrate compiles again for a new (equal) composed object,
    which made the 2026-11-28 run's "triple-jump [integrate]" rows (365 ms) a compile per call."""
    import dalembert as dl
    name = name.split(":")[0]
    if "+" in name:
        base, coef = name.split("+")
        return dl.methods.compose(dl.methods.get(base), coef)
    return name
DIFFRAX = ("tsit5", "dopri5", "dopri8")


def _options(name) -> dict:
    """The build options of a method spec "NAME:KEY=VALUE;KEY=VALUE" (strings)."""
    if ":" not in name:
        return {}
    return dict(kv.split("=") for kv in name.split(":", 1)[1].split(";"))


def knife_edge_well():
    import jax.numpy as jnp
    import dalembert as dl

    def V(q):
        r2 = q[0] ** 2 + q[1] ** 2
        return 0.5 * (q[0] ** 2 + 2.0 * q[1] ** 2) + 0.25 * r2 ** 2 + 0.3 * q[0] * q[1] ** 2
    system = dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, 0.2])), potential=V,
        constraint_matrix=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]),
        name="knife-edge-well")
    th = 0.4
    q0 = np.array([0.8, -0.3, th])
    v0 = np.array([0.5 * math.cos(th), 0.5 * math.sin(th), 1.3])   # on the constraint
    return system, q0, v0


def _dl_program(system, method, q0, v0, T, N):
    import jax
    import dalembert as dl
    from dalembert.engine.xla import compile_lowered
    lowered = jax.jit(lambda q0, v0: dl.solve(system, _method(method), (q0, v0), T / N, N, save_every=N,
                                                     **_options(method))).lower(q0, v0)
    compiled = compile_lowered(lowered)
    return lambda: np.asarray(jax.block_until_ready(compiled(q0, v0))["q"])[-1]


def _dl_integrate(system, method, q0, v0, T, N):
    import dalembert as dl
    return lambda: np.asarray(dl.integrate(system, _method(method), q0=q0, v0=v0, h=T / N, t_final=T, save_every=N,
                                           progress=False, **_options(method)).q)[-1]


def _dfx_program(system, solver_name, y0, n, T, tol, opts):
    import diffrax
    import jax
    import jax.numpy as jnp

    def f(t, y, args):
        return jnp.concatenate([y[n:], system.acceleration(y[:n], y[n:])])
    solver = {"tsit5": diffrax.Tsit5(), "dopri5": diffrax.Dopri5(), "dopri8": diffrax.Dopri8()}[solver_name]

    def solve(y0, tol):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(f), solver, 0.0, T, None, y0,
                                  stepsize_controller=diffrax.PIDController(rtol=tol, atol=tol),
                                  saveat=diffrax.SaveAt(t1=True), max_steps=None,
                                  adjoint=diffrax.ForwardMode())
        return sol.ys[-1], sol.stats["num_steps"], sol.stats["num_rejected_steps"]
    lowered = jax.jit(solve).lower(y0, jnp.asarray(tol))
    if opts:
        from dalembert.engine.xla import compile_lowered
        compiled = compile_lowered(lowered)
    else:
        compiled = lowered.compile()
    tol_a = jnp.asarray(tol)

    def run():
        y, s, r = jax.block_until_ready(compiled(y0, tol_a))
        return np.asarray(y[:n]), int(s), int(r)
    return run


def calibrate_dl(system, method, q0, v0, T, q_ref, targets, n_max, per_octave=4):
    chosen, rows = {}, []
    k = 0
    while True:
        N = int(round(T * 2 ** (k / per_octave)))
        k += 1
        if N > n_max:
            break
        try:
            q = _dl_program(system, method, q0, v0, T, N)()
            err = float(np.max(np.abs(q - q_ref)))
        except Exception as exc:  # noqa: BLE001 - a point not reached
            err = math.inf
            print(f"  {method} N={N}: {type(exc).__name__}: {str(exc)[:80]}", flush=True)
        rows.append((N, err))
        for t in targets:
            if t not in chosen and err <= t:
                chosen[t] = N
        if all(t in chosen for t in targets):
            break
    print(f"  {method:16s} " + "  ".join(f"N={N}:{e:.1e}" for N, e in rows), flush=True)
    return chosen, rows


def calibrate_dfx(system, solver, y0, n, T, q_ref, targets, start=8):
    chosen, rows = {}, []
    for j in range(start, 56):
        tol = 10.0 ** (-j / 4)
        q, s, r = _dfx_program(system, solver, y0, n, T, tol, True)()
        err = float(np.max(np.abs(q - q_ref)))
        rows.append((tol, err, s, r))
        for t in targets:
            if t not in chosen and err <= t:
                chosen[t] = tol
        if all(t in chosen for t in targets):
            break
    print(f"  diffrax-{solver:9s} " + "  ".join(f"tol={t:.1e}:{e:.1e}({s}+{r})" for t, e, s, r in rows), flush=True)
    return chosen, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-final", type=float, default=100.0)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--targets", default="1e-4,1e-7,1e-10")
    ap.add_argument("--methods", default=",".join(DALEMBERT))
    ap.add_argument("--n-max", type=int, default=400000)
    ap.add_argument("--per-octave", type=int, default=4, help="dalembert's step counts N = T·2^(k/per-octave)")
    ap.add_argument("--dfx-start", type=int, default=8,
                    help="first tolerance 10^(-k/4) of diffrax's sweeps (20 skips to 1e-5 for a 1e-4 target)")
    ap.add_argument("--out", default="benchmarks/results/work_precision_low")
    a = ap.parse_args(argv)
    import jax
    import jax.numpy as jnp
    import dalembert as dl
    from dalembert.systems.index1_ode import reference_solution
    targets = [float(t) for t in a.targets.split(",")]
    T = a.t_final
    system, q0n, v0n = knife_edge_well()
    n = 3
    qr, _, _ = reference_solution(system, q0n, v0n, np.array([0.0, T]), rtol=1e-13, atol=1e-13)
    q_ref = qr[-1]
    q0, v0 = jnp.asarray(q0n), jnp.asarray(v0n)
    q8 = _dl_program(system, "nh-rattle-8", q0, v0, T, int(128 * T))()
    floor = float(np.max(np.abs(q8 - q_ref)))
    print(f"reference: DOP853(1e-13) q(T) = {q_ref}, |nh-rattle-8(h=1/128) − DOP853| = {floor:.1e}", flush=True)
    y0 = jnp.concatenate([q0, v0])
    load0 = os.getloadavg()
    calib = {}
    for m in a.methods.split(","):
        calib[m] = calibrate_dl(system, m, q0, v0, T, q_ref, targets, a.n_max, a.per_octave)
    for s in DIFFRAX:
        calib[f"diffrax-{s}"] = calibrate_dfx(system, s, y0, n, T, q_ref, targets, a.dfx_start)
    results = {}
    for t in targets:
        runs, steps = {}, {}
        for m in a.methods.split(","):
            N = calib[m][0].get(t)
            if N is None:
                continue
            runs[f"{m} N={N} [jit]"] = _dl_program(system, m, q0, v0, T, N)
            runs[f"{m} N={N} [integrate]"] = _dl_integrate(system, m, q0n, v0n, T, N)
            steps[f"{m} N={N} [jit]"] = steps[f"{m} N={N} [integrate]"] = N
        for s in DIFFRAX:
            tol = calib[f"diffrax-{s}"][0].get(t)
            if tol is None:
                continue
            for opts in (False, True):
                k = f"diffrax-{s} tol={tol:.1e} [{'dl-opts' if opts else 'xla-default'}]"
                runs[k] = _dfx_program(system, s, y0, n, T, tol, opts)
                _, st, rj = runs[k]()
                steps[k] = st
        for fn in runs.values():               # first calls (compiles) excluded
            fn()
        cpu = {k: [] for k in runs}
        wall = {k: [] for k in runs}
        for _ in range(a.repeats):
            for k, fn in runs.items():
                c0, w0 = time.process_time(), time.perf_counter()
                fn()
                cpu[k].append(time.process_time() - c0)
                wall[k].append(time.perf_counter() - w0)
        results[t] = {k: {"steps": steps[k], "cpu": cpu[k], "wall": wall[k]} for k in runs}
    load1 = os.getloadavg()
    lines = [f"# Low-accuracy work-precision: knife edge in an anharmonic well, T = {T:g}",
             "", f"`python benchmarks/work_precision_low.py --t-final {T:g} --repeats {a.repeats} "
             f"--targets {a.targets} --methods {a.methods} --dfx-start {a.dfx_start} --per-octave {a.per_octave}`; dalembert from "
             f"{Path(dl.__file__).parent}; "
             f"load average (1/5/15 min) before {load0[0]:.2f}/{load0[1]:.2f}/{load0[2]:.2f}, after "
             f"{load1[0]:.2f}/{load1[1]:.2f}/{load1[2]:.2f}, {os.cpu_count()} cores; reference floor {floor:.1e}.",
             "CPU time (process, all threads) of one compiled run after the first call, min / median / max of "
             f"{a.repeats} interleaved rounds; per step: median CPU time / steps (diffrax: accepted steps).", ""]
    for t, res in results.items():
        best = {k: statistics.median(v["cpu"]) for k, v in res.items()}
        dfx = {k: w for k, w in best.items() if k.startswith("diffrax")}
        bx = min(dfx, key=dfx.get) if dfx else None
        lines += [f"## target {t:.0e}", "", "| run | steps | CPU ms min / median / max | wall ms median | µs per step | ÷ diffrax best |",
                  "|---|---|---|---|---|---|"]
        for k in sorted(res, key=lambda k: best[k]):
            v = res[k]
            c = [x * 1e3 for x in v["cpu"]]
            ratio = f"{best[k] / dfx[bx]:.2f}" if bx else "—"
            lines.append(f"| {k} | {v['steps']} | {min(c):.3g} / {statistics.median(c):.3g} / {max(c):.3g} | "
                         f"{statistics.median(v['wall']) * 1e3:.3g} | {best[k] / v['steps'] * 1e6:.3g} | {ratio} |")
        lines.append("")
    lines += ["## calibration (final error per sweep point)", ""]
    for m, (ch, rows) in calib.items():
        lines.append(f"- {m}: chosen {ch}; " + ", ".join(
            (f"N={r[0]}: {r[1]:.1e}" if not m.startswith("diffrax") else f"tol={r[0]:.1e}: {r[1]:.1e} ({r[2]}+{r[3]} rej)")
            for r in rows))
    md = "\n".join(lines)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(md + "\n")
    out.with_suffix(".json").write_text(json.dumps({"T": T, "load_before": load0, "load_after": load1, "floor": floor,
                                                    "results": {str(t): r for t, r in results.items()},
                                                    "calibration": {m: [{str(k): v for k, v in ch.items()}, rows]
                                                                    for m, (ch, rows) in calib.items()}}, indent=1))
    print(md)


if __name__ == "__main__":
    main()
