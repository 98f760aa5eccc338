"""Work-precision benchmark (issue 15): wall time to reach a final error, dalembert's structure-
preserving methods against diffrax (Tsit5, Dopri8) and SciPy's DOP853 on the index-1 ODE.

    python benchmarks/work_precision.py [--t-final 1000] [--problems gearbox,disk,quartic-3,quartic-10]
                                        [--xla dalembert|default] [--budget 20] [--out benchmarks/results]

For each problem and method, a sweep of step sizes (dalembert, fixed h = T/N, N doubling) or of
tolerances (diffrax with a PID controller and DOP853, rtol = atol = 10^-k): the final error
max|q(T) − q_ref(T)|, the wall time of a compiled run (the best of ``--repeats``, after a warm-up
run that compiles), the constraint residual |μ(q)v − ν| and the relative energy error at T. From the
sweep, the wall time at the target errors 1e-4, 1e-7, 1e-10 (log-log interpolation between the two
sweep points around the target; "—" if the sweep does not reach it). The reference q_ref(T): the
exact solution (rolling disk) or nh-rattle-8 at h = 1/64, whose floor (the difference from
h = 1/32) is printed; errors below the floor are not resolved, and DOP853 at 1e-14 is printed as an
independent check of the reference.

``--xla dalembert`` (default) calls ``dalembert.engine.xla.configure()`` before JAX starts (what the
command line does: XLA's small-loop kernels) and compiles the diffrax programs with dalembert's
per-executable options, so that every solver runs under the same XLA settings; ``--xla default``
leaves XLA as it is (dalembert still applies its per-executable options to its own programs).
Needs diffrax (``pip install -e .[bench]``); without it the diffrax columns are left out.
Writes ``work_precision_<xla>.json``, ``.md`` and a work-precision plot ``.png`` to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

TARGETS = (1e-4, 1e-7, 1e-10)
PROBLEMS = {"gearbox": ("gearbox", {}), "disk": ("vertical-rolling-disk", {}),
            "quartic-3": ("chaotic-quartic", {"n": 3}), "quartic-10": ("chaotic-quartic", {"n": 10})}
#: problems whose final error means nothing at --t-final: the chaotic quartic systems, on which two
#: nh-rattle-8 references (h = 1/32, 1/64) differ by O(1) at T = 1000 (Lyapunov growth); their T
#: (floor of the reference: 4e-14 at n = 3, T = 50; 4e-12 at n = 10, T = 20)
PROBLEM_T = {"quartic-3": 50.0, "quartic-10": 20.0}
#: dalembert methods of order ≥ 2 and the first step count of their sweep, per unit time
DALEMBERT = {"nh-rattle": 8, "spark-lobatto2": 8, "nh-rattle-4": 2, "nh-rattle-6": 1, "nh-rattle-8": 1,
             "dg-gonzalez-4": 2, "rk8-projected": 1}


def _timed(fn, repeats):
    fn()                                            # compiles
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _invariants(system, q, v, E0):
    import jax.numpy as jnp
    q, v = jnp.asarray(q), jnp.asarray(v)
    res = float(np.max(np.abs(np.asarray(system.constraint_matrix(q) @ v - system.constraint_rhs(q)))))
    E = float(system.energy(q, v))
    return res, abs(E - E0) / max(abs(E0), 1e-300)


def reference(model, T):
    """q_ref(T) and its floor. The exact solution where the model has one (floor: 0); otherwise
    nh-rattle-8 at h = 1/64 (compensated summation), with floor |q(h = 1/32) − q(h = 1/64)| (an
    order-8 method: the error at 1/64 is 256× smaller than that difference, so the floor is
    conservative). DOP853 at rtol = atol = 1e-14 is printed beside it as an independent check."""
    import dalembert as dl
    from dalembert.systems.index1_ode import reference_solution
    st = model.initial_state

    def rattle8(per_unit):
        N = int(round(T * per_unit))
        tr = dl.integrate(model.system, "nh-rattle-8", h=T / N, t_final=T, save_every=N, progress=False, **st)
        return np.asarray(tr.q)[-1]
    fine, coarse = rattle8(64), rattle8(32)
    q_dop, _, _ = reference_solution(model.system, st["q0"], st["v0"], np.array([0.0, T]), rtol=1e-14, atol=1e-14)
    if model.name == "vertical-rolling-disk":
        sol, _ = model.state_solution(np.array([0.0, T]))
        q_ref, floor = np.asarray(sol["q"])[-1], 0.0
    else:
        q_ref, floor = fine, float(np.max(np.abs(coarse - fine)))
    print(f"  reference: |nh-rattle-8(1/32) − (1/64)| {np.max(np.abs(coarse - fine)):.1e}, "
          f"|(1/64) − q_ref| {np.max(np.abs(fine - q_ref)):.1e}, |DOP853(1e-14) − q_ref| "
          f"{np.max(np.abs(q_dop[-1] - q_ref)):.1e}", flush=True)
    return q_ref, floor


def _compiled_solve(model, method, h, N, xla):
    """jit(dl.solve) for N steps, compiled as the diffrax programs are: the compiled program alone,
    without dl.integrate's input checks, node diagnostics and Trajectory (about 1 ms a call), its
    initial state converted to JAX arrays once, outside the timed call (as diffrax's y0; converting
    two NumPy arrays per call added 40–70 µs)."""
    import jax
    import jax.numpy as jnp
    import dalembert as dl
    st = model.initial_state
    q0, v0 = jnp.asarray(st["q0"]), jnp.asarray(st["v0"])   # on the device once, as diffrax's y0
    lowered = jax.jit(lambda q0, v0: dl.solve(model.system, method, (q0, v0), h, N, save_every=N)).lower(q0, v0)
    if xla == "dalembert":
        from dalembert.engine.xla import compile_lowered
        compiled = compile_lowered(lowered)
    else:
        compiled = lowered.compile()
    return lambda: jax.block_until_ready(compiled(q0, v0))


def sweep_dalembert(model, method, T, q_ref, budget, repeats, xla):
    """Two sweeps of one method: through dl.integrate (rows) and as the compiled program jit(dl.solve)
    (rows_jit)."""
    import dalembert as dl
    st = model.initial_state
    E0 = float(model.system.energy(st["q0"], st["v0"]))
    rows, rows_jit, N = [], [], max(2, int(DALEMBERT[method] * T))
    spent = 0.0
    while spent < budget:
        h = T / N
        try:
            wall, tr = _timed(lambda: dl.integrate(model.system, method, h=h, t_final=T, save_every=N,
                                                   progress=False, **st), repeats)
            wall_jit, out = _timed(_compiled_solve(model, method, h, N, xla), repeats)
        except Exception as exc:  # noqa: BLE001 - a step that fails is a point not reached
            print(f"    {method} N={N}: {type(exc).__name__}: {str(exc)[:80]}", flush=True)
            N *= 2
            continue
        q, v = np.asarray(tr.q)[-1], np.asarray(tr.v)[-1]
        err = float(np.max(np.abs(q - q_ref)))
        err_jit = float(np.max(np.abs(np.asarray(out["q"])[-1] - q_ref)))
        res, dE = _invariants(model.system, q, v, E0)
        rows.append({"N": N, "h": h, "error": err, "wall": wall, "constraint": res, "energy": dE})
        rows_jit.append({"N": N, "h": h, "error": err_jit, "wall": wall_jit, "constraint": res, "energy": dE})
        print(f"    {method:14s} N={N:9d} err {err:.2e} wall {wall:8.4f}s (jit solve {wall_jit:8.4f}s)  "
              f"|μv| {res:.0e} dE {dE:.0e}", flush=True)
        spent += (wall + wall_jit) * (repeats + 1)
        if err < 1e-12 or (len(rows) > 2 and err > 0.5 * rows[-2]["error"] and err < 1e-9):
            break
        N *= 2
    return rows, rows_jit


def _ode(model):
    import jax.numpy as jnp
    n = model.initial_state["q0"].shape[0]
    system = model.system

    def f(t, y, args):
        q, v = y[:n], y[n:]
        return jnp.concatenate([v, system.acceleration(q, v)])
    y0 = jnp.concatenate([jnp.asarray(model.initial_state["q0"]), jnp.asarray(model.initial_state["v0"])])
    return f, y0, n


def sweep_diffrax(model, solver_name, T, q_ref, budget, repeats, xla):
    import diffrax
    import jax
    import jax.numpy as jnp
    f, y0, n = _ode(model)
    solver = {"tsit5": diffrax.Tsit5(), "dopri8": diffrax.Dopri8()}[solver_name]

    def solve(y0, tol):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(f), solver, 0.0, T, None, y0,
                                  stepsize_controller=diffrax.PIDController(rtol=tol, atol=tol),
                                  saveat=diffrax.SaveAt(t1=True), max_steps=None,
                                  adjoint=diffrax.ForwardMode())
        return sol.ys[-1], sol.stats["num_steps"]

    lowered = jax.jit(solve).lower(y0, 1e-6)
    if xla == "dalembert":
        from dalembert.engine.xla import compile_lowered
        compiled = compile_lowered(lowered)
    else:
        compiled = lowered.compile()
    st = model.initial_state
    E0 = float(model.system.energy(st["q0"], st["v0"]))
    rows, spent = [], 0.0
    for k in range(3, 15):
        tol = 10.0 ** (-k)
        wall, (y, steps) = _timed(lambda: jax.block_until_ready(compiled(y0, jnp.asarray(tol))), repeats)
        q, v = np.asarray(y[:n]), np.asarray(y[n:])
        err = float(np.max(np.abs(q - q_ref)))
        res, dE = _invariants(model.system, q, v, E0)
        rows.append({"tol": tol, "steps": int(steps), "error": err, "wall": wall, "constraint": res, "energy": dE})
        print(f"    {solver_name:14s} tol={tol:.0e} steps {int(steps):8d} err {err:.2e} wall {wall:8.4f}s  "
              f"|μv| {res:.0e} dE {dE:.0e}", flush=True)
        spent += wall * (repeats + 1)
        if spent > budget or err < 1e-12:
            break
    return rows


def sweep_dop853(model, T, q_ref, budget):
    from dalembert.systems.index1_ode import reference_solution
    st = model.initial_state
    E0 = float(model.system.energy(st["q0"], st["v0"]))
    rows, spent = [], 0.0
    reference_solution(model.system, st["q0"], st["v0"], np.array([0.0, 1.0]), rtol=1e-6, atol=1e-6)
    for k in range(3, 15):
        tol = 10.0 ** (-k)
        t0 = time.perf_counter()
        q, v, sol = reference_solution(model.system, st["q0"], st["v0"], np.array([0.0, T]), rtol=tol, atol=tol)
        wall = time.perf_counter() - t0
        err = float(np.max(np.abs(q[-1] - q_ref)))
        res, dE = _invariants(model.system, q[-1], v[-1], E0)
        rows.append({"tol": tol, "steps": int(sol.nfev), "error": err, "wall": wall, "constraint": res, "energy": dE})
        print(f"    {'DOP853':14s} tol={tol:.0e} nfev {sol.nfev:8d} err {err:.2e} wall {wall:8.4f}s", flush=True)
        spent += wall
        if spent > budget or err < 1e-12:
            break
    return rows


def wall_at(rows, target):
    """Wall time at a final error ``target``: along the sweep in order of cost, the first point
    that reaches it, log-log interpolated from the point before it (None if the sweep does not
    reach it). In order of cost, not of error: a sweep whose error stops falling (round-off, or a
    drift that does not shrink with h) must not be read at a later, costlier crossing."""
    pts = sorted((r["wall"], r["error"]) for r in rows if np.isfinite(r["error"]))
    for i, (w2, e2) in enumerate(pts):
        if e2 <= target:
            if i == 0:
                return w2
            w1, e1 = pts[i - 1]
            if e1 == e2:
                return w2
            s = (math.log(target) - math.log(e1)) / (math.log(e2) - math.log(e1))
            return math.exp(math.log(w1) + s * (math.log(w2) - math.log(w1)))
    return None


def _best_row(rows, target):
    ok = [r for r in rows if r["error"] <= target]
    return min(ok, key=lambda r: r["wall"]) if ok else None


def table(results, floors, finals):
    lines = ["Final-time error max|q(T) − q_ref(T)|; wall time (s) of a compiled run to reach "
             "it (log-log interpolation along the sweep); constraint residual and relative energy error "
             "at T of the cheapest sweep point that reaches 1e-7.", ""]
    for prob, methods in results.items():
        lines += [f"### {prob}, T = {finals[prob]:g} (reference floor {floors[prob]:.1e})", "",
                  "| method | wall @1e-4 | wall @1e-7 | wall @1e-10 | \\|μv − ν\\| | energy error |", "|---|---|---|---|---|---|"]
        for name, rows in methods.items():
            cells = []
            for tgt in TARGETS:
                w = wall_at(rows, tgt) if tgt >= floors[prob] else None
                cells.append("—" if w is None else f"{w:.3g}")
            r = _best_row(rows, 1e-7)
            inv = ("—", "—") if r is None else (f"{r['constraint']:.0e}", f"{r['energy']:.0e}")
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {inv[0]} | {inv[1]} |")
        lines += ["", _ratios(methods, floors[prob]), ""]
    return "\n".join(lines)


def _ratios(methods, floor):
    out = []
    for tgt in (1e-7, 1e-10):
        if tgt < floor:
            continue
        walls = {n: wall_at(r, tgt) for n, r in methods.items()}
        reached = {n: w for n, w in walls.items() if w is not None}
        dfx = {n: w for n, w in reached.items() if n.startswith("diffrax")}
        groups = (("dl.integrate", {n: w for n, w in reached.items()
                                    if not n.startswith(("diffrax", "DOP853")) and not n.endswith("[jit]")}),
                  ("compiled jit(dl.solve)", {n: w for n, w in reached.items() if n.endswith("[jit]")}))
        s = f"at {tgt:.0e}:"
        for label, dal in groups:
            if not dal:
                s += f" no dalembert method reached it ({label});"
                continue
            bd = min(dal, key=dal.get)
            s += f" fastest dalembert ({label}) {bd} {dal[bd]:.3g} s"
            if dfx:
                bx = min(dfx, key=dfx.get)
                s += f", {dal[bd] / dfx[bx]:.2f}× diffrax's fastest ({bx} {dfx[bx]:.3g} s)"
            if "DOP853" in reached:
                s += f", {dal[bd] / reached['DOP853']:.3f}× DOP853 ({reached['DOP853']:.3g} s)"
            s += ";"
        if not dfx:
            s += " diffrax did not reach it"
        out.append(s.rstrip(";"))
    return "\n".join(f"- {s}" for s in out)


def plot(results, floors, finals, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    probs = list(results)
    fig, axes = plt.subplots(1, len(probs), figsize=(4.6 * len(probs), 4.2), squeeze=False)
    for ax, prob in zip(axes[0], probs):
        for name, rows in results[prob].items():
            rows = sorted(rows, key=lambda r: r["wall"])
            if name.endswith("[jit]"):
                continue                  # the plot shows dl.integrate; the table has both
            style = "--" if name.startswith(("diffrax", "DOP853")) else "-"
            ax.loglog([r["wall"] for r in rows], [max(r["error"], 1e-16) for r in rows], style, marker="o",
                      ms=3, label=name)
        ax.axhline(floors[prob], color="grey", lw=0.8, ls=":")
        ax.set_xlabel("wall time of a compiled run (s)")
        ax.set_ylabel("final error max|q(T) − q_ref(T)|")
        ax.set_title(f"{prob}, T = {finals[prob]:g}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--t-final", type=float, default=1000.0)
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--methods", default=",".join(DALEMBERT))
    ap.add_argument("--xla", choices=("dalembert", "default"), default="dalembert")
    ap.add_argument("--budget", type=float, default=20.0, help="seconds of runs per method and problem")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--no-dop853", action="store_true")
    ap.add_argument("--out", default="benchmarks/results")
    a = ap.parse_args(argv)
    if a.xla == "dalembert":
        from dalembert.engine.xla import configure
        configure()
    import dalembert as dl
    try:
        import diffrax  # noqa: F401
        have_diffrax = True
    except ImportError:
        have_diffrax = False
        print("diffrax is not installed (pip install -e .[bench]): its columns are left out")
    results, floors, finals = {}, {}, {}
    t_start = time.time()
    load = os.getloadavg()
    for prob in a.problems.split(","):
        name, params = PROBLEMS[prob]
        model = dl.models.get(name, **params)
        T = PROBLEM_T.get(prob, a.t_final)
        q_ref, floors[prob] = reference(model, T)
        print(f"{prob}: reference floor {floors[prob]:.1e}", flush=True)
        res = {}
        for m in a.methods.split(","):
            res[m], res[f"{m} [jit]"] = sweep_dalembert(model, m, T, q_ref, a.budget, a.repeats, a.xla)
        if have_diffrax:
            for s in ("tsit5", "dopri8"):
                res[f"diffrax-{s}"] = sweep_diffrax(model, s, T, q_ref, a.budget, a.repeats, a.xla)
        if not a.no_dop853:
            res["DOP853"] = sweep_dop853(model, T, q_ref, a.budget)
        results[prob], finals[prob] = res, T
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    T = a.t_final
    stem = out / f"work_precision_{a.xla}_T{int(T)}"
    meta = {"t_final": T, "t_final_per_problem": finals, "xla": a.xla, "load_before": load, "load_after": os.getloadavg(),
            "seconds": time.time() - t_start, "cores": os.cpu_count(), "python": sys.version.split()[0]}
    stem.with_suffix(".json").write_text(json.dumps({"meta": meta, "floors": floors, "results": results}, indent=1))
    md = (f"# Work-precision, T = {T:g}, XLA {a.xla}\n\nLoad average before/after {load[0]:.2f}/"
          f"{meta['load_after'][0]:.2f} on {meta['cores']} cores; {meta['seconds']:.0f} s in all.\n\n"
          + table(results, floors, finals))
    stem.with_suffix(".md").write_text(md)
    plot(results, floors, finals, stem.with_suffix(".png"))
    print(md)


if __name__ == "__main__":
    main()
