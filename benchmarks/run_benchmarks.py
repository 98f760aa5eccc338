#!/usr/bin/env python
"""Run dalembert's speed benchmark and write benchmarks/RESULTS.md.

    python benchmarks/run_benchmarks.py            # full run (a few minutes), pinned to one core
    python benchmarks/run_benchmarks.py --quick    # smoke test (seconds; not a measurement)

What it measures (see ``dalembert.bench`` and docs/benchmarks.md):

* steps per second of every method on ``gearbox`` and ``chaotic-quartic`` (n = 3), after
  compilation, next to the same scheme as a plain NumPy per-step loop, and SciPy's DOP853 on the
  index-1 ODE tuned to the same final error;
* the command-line target: ``dalembert run gearbox --method nh-rattle --h 0.1 --t-final 50000``
  (5·10⁵ steps), each run in a fresh process with a private compilation cache: the first run
  compiles, the next ones find the cache warm; the fastest warm run is reported;
* with ``--others``: the methods without a NumPy loop, on the gearbox, few steps;
* the same table without XLA's small-loop kernels (``DALEMBERT_XLA_SMALL_LOOPS=0``, in a
  subprocess), to show what that setting is worth.

By default the process (and its subprocesses) is pinned to one CPU core: the targets are stated
"on one core of this machine".
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Timed steps for the methods without a NumPy loop (some take minutes to compile and run
#: at 10¹–10⁴ steps/s; see docs/benchmarks.md).
OTHER_STEPS = 2_000
CLI_ARGS = ["run", "gearbox", "--method", "nh-rattle", "--h", "0.1", "--t-final", "50000"]


def _pin_one_core():
    """Restrict this process (and its children) to one CPU; returns the CPU index or None."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return None
    cpu = cpus[-1]
    os.sched_setaffinity(0, {cpu})
    return cpu


def _dalembert_cli():
    """The command that runs the CLI: the ``dalembert`` script next to this Python, else
    ``python -m dalembert.cli``; None if the CLI has no ``run`` command."""
    try:
        from dalembert import cli  # noqa: F401
    except Exception:  # noqa: BLE001 - the CLI may not exist yet
        return None
    exe = Path(sys.executable).with_name("dalembert")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("dalembert")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from dalembert.cli import main; main(sys.argv[1:])"]


#: Runs of the CLI target: the first compiles into an empty private cache, the others find it
#: warm; the reported time is the fastest warm run (the machine is shared).
CLI_RUNS = 4


def time_cli_target(log=print) -> dict:
    """Run the CLI target CLI_RUNS times (fresh processes, private compilation cache)."""
    cmd = _dalembert_cli()
    if cmd is None:
        return {"available": False, "reason": "dalembert.cli could not be imported"}
    work = Path(tempfile.mkdtemp(prefix="dalembert-bench-"))
    env = dict(os.environ, DALEMBERT_CACHE_DIR=str(work / "jax-cache"))
    out = {"available": True, "command": "dalembert " + " ".join(CLI_ARGS) + " --out <tmp>",
           "runs": []}
    try:
        for i in range(CLI_RUNS):
            t0 = time.perf_counter()
            proc = subprocess.run(cmd + CLI_ARGS + ["--out", str(work / f"run{i}")], env=env,
                                  capture_output=True, text=True)
            wall = time.perf_counter() - t0
            run = {"wall_s": wall, "returncode": proc.returncode}
            summary = work / f"run{i}" / "summary.json"
            if summary.exists():
                s = json.loads(summary.read_text())
                run.update({k: s.get(k) for k in ("n_steps", "steps_per_second", "compile_time_s",
                                                   "integration_wall_time_s", "total_wall_time_s")})
            if proc.returncode != 0:
                run["stderr"] = proc.stderr.strip().splitlines()[-1:] if proc.stderr else []
            out["runs"].append(run)
            log(f"CLI run {i + 1}: {wall:.2f} s (exit {proc.returncode})")
        if any(r["returncode"] != 0 for r in out["runs"]):
            out["available"] = False
            out["reason"] = "dalembert run failed: " + " ".join(out["runs"][-1].get("stderr", []))
        out["warm_wall_s"] = min(r["wall_s"] for r in out["runs"][1:])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def long_run_comparison(T: float = 2000.0, rtols=(1e-3, 1e-6), log=print) -> list[dict]:
    """gearbox over [0, T]: nh-rattle (h = 0.1) against DOP853 at a few tolerances —
    max constraint residual, max energy deviation, wall time (after compilation)."""
    import numpy as np
    from scipy.integrate import solve_ivp

    import dalembert as dl
    from dalembert.methods.reference import _rhs
    m = dl.models.get("gearbox")
    n = m.q0.size
    rows = []
    dl.integrate(m.system, "nh-rattle", q0=m.q0, v0=m.v0, h=0.1, t_final=T)
    t0 = time.perf_counter()
    tr = dl.integrate(m.system, "nh-rattle", q0=m.q0, v0=m.v0, h=0.1, t_final=T)
    rows.append({"solver": "dalembert nh-rattle, h = 0.1", "wall_s": time.perf_counter() - t0,
                 "constraint": float(np.max(np.abs(tr.constraint_residual))),
                 "energy": float(np.max(np.abs(tr.energy - tr.energy[0])))})
    rhs = _rhs(m.system, n)
    f = lambda t, y: np.asarray(rhs(t, y))  # noqa: E731
    y0 = np.concatenate([m.q0, m.v0])
    f(0.0, y0)
    import jax
    jax_energy = jax.jit(jax.vmap(m.system.energy))
    jax_res = jax.jit(jax.vmap(m.system.constraint_residual))
    for rtol in rtols:
        t0 = time.perf_counter()
        sol = solve_ivp(f, (0.0, T), y0, method="DOP853", rtol=rtol, atol=rtol,
                        t_eval=np.linspace(0.0, T, int(T / 0.1) + 1))
        wall = time.perf_counter() - t0
        q, v = sol.y[:n].T, sol.y[n:].T
        energy = np.asarray(jax_energy(q, v))
        rows.append({"solver": f"SciPy DOP853, rtol = atol = {rtol:g}", "wall_s": wall,
                     "constraint": float(np.max(np.abs(np.asarray(jax_res(q, v))))),
                     "energy": float(np.max(np.abs(energy - energy[0])))})
    log(f"long run (T = {T:g}) done")
    return rows


def _table_without_small_loops(quick: bool, log=print):
    """The benchmark table in a subprocess with DALEMBERT_XLA_SMALL_LOOPS=0 (JSON results)."""
    code = ("import json, sys, dalembert; dalembert.configure(); from dalembert.bench import run_benchmarks; "
            f"json.dump(run_benchmarks(quick={quick!r}), sys.stdout)")
    env = dict(os.environ, DALEMBERT_XLA_SMALL_LOOPS="0")
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        log("benchmark without small-loop kernels failed: " + proc.stderr.strip()[-300:])
        return None
    return json.loads(proc.stdout)


def _compact_table(rows_on, rows_off) -> str:
    from dalembert.bench import _ratio
    off = {(r["model"], r["method"]): r for r in rows_off}
    lines = ["| model | method | steps/s, default | steps/s, `DALEMBERT_XLA_SMALL_LOOPS=0` | "
             "speedup vs NumPy, default | speedup vs NumPy, without |", "|---|---|---|---|---|---|"]
    for r in rows_on:
        o = off.get((r["model"], r["method"]))
        if o is None or r["steps_per_second"] is None or o["steps_per_second"] is None:
            continue
        lines.append(f"| {r['model']} | `{r['method']}` | {r['steps_per_second']:.3g} | "
                     f"{o['steps_per_second']:.3g} | {_ratio(r['speedup'])} | {_ratio(o['speedup'])} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke test: few steps, coarse grid")
    ap.add_argument("--no-pin", action="store_true", help="do not pin to one CPU core")
    ap.add_argument("--no-cli", action="store_true", help="skip the `dalembert run` timing")
    ap.add_argument("--no-compare", action="store_true",
                    help="skip the run without XLA small-loop kernels")
    ap.add_argument("--others", action="store_true",
                    help="also time the other methods that integrate a NonholonomicSystem "
                         "(no NumPy loop; some compile for minutes), on the gearbox")
    ap.add_argument("--out", default=str(HERE / "RESULTS.md"), help="results file (markdown)")
    ap.add_argument("--json", default=None, help="also write the raw results here")
    args = ap.parse_args(argv)

    cpu = None if args.no_pin else _pin_one_core()
    import dalembert  # after pinning: JAX sizes its thread pools at start-up
    configured = dalembert.configure()   # the process-wide settings the CLI also opts in to
    from dalembert.bench import check_targets, format_table, machine_info, run_benchmarks

    t0 = time.perf_counter()
    log = lambda msg: print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", flush=True)  # noqa: E731
    info = machine_info()
    info["pinned_cpu"] = cpu
    info["small_loop_kernels"] = configured["small_loops"]
    results = run_benchmarks(quick=args.quick, progress_callback=log)
    others = []
    if args.others:
        from dalembert import methods as _m
        from dalembert.bench import numpy_loops
        names = [m for m in _m.available() if _m.get(m).compiled and m not in numpy_loops.METHODS]
        if names:
            log("other methods (no NumPy loop), gearbox only: " + ", ".join(names))
            rows = run_benchmarks(models=("gearbox",), methods=names, n_steps=OTHER_STEPS,
                                  quick=args.quick, progress_callback=log)
            others = [r for r in rows if not any(n.startswith("not applicable") for n in r["notes"])]
    cli = {"available": False, "reason": "skipped (--no-cli)"} if args.no_cli else time_cli_target(log)
    off = None if args.no_compare else _table_without_small_loops(args.quick, log)
    targets = check_targets(results, cli.get("warm_wall_s") if cli.get("available") else None)
    long_rows = long_run_comparison(T=200.0 if args.quick else 2000.0, log=log)

    md = ["# dalembert speed benchmark — results", ""]
    if args.quick:
        md += ["**Quick mode (`--quick`): a smoke test with few steps, not a measurement.**", ""]
    md += ["Written by `python benchmarks/run_benchmarks.py`; what is measured and how: "
           "[docs/benchmarks.md](../docs/benchmarks.md).", "", "## Machine", ""]
    md += [f"- CPU: {info['cpu']} ({info['logical_cores']} logical cores; "
           + (f"the benchmark pinned to core {cpu})" if cpu is not None else "not pinned)"),
           f"- JAX {info['jax']}, NumPy {info['numpy']}, SciPy {info['scipy']}, "
           f"Python {info['python']}, dalembert {info['dalembert']}",
           f"- XLA small-loop kernels (`dl.configure`, `engine.xla.request_small_loop_kernels`): "
           f"{'on' if info['small_loop_kernels'] else 'off'}; XLA_FLAGS = `{info['xla_flags']}`",
           f"- {info['platform']}",
           f"- load average (1, 5, 15 min) at the start: {info['load_average']}, at the end: "
           f"{machine_info()['load_average']} (other processes share this machine)",
           f"- date: {info['date']}", "", "## Table", "", format_table(results), "",
           "Columns: dalembert steps/s = `metadata['steps_per_second']` (run time after "
           "compilation, every node saved), best of 3 runs; NumPy steps/s = the same scheme as a "
           "plain NumPy loop; final error q = max-norm error of q at T against the DOP853 "
           "reference (rtol = atol = 1e-13); DOP853 rtol = the loosest rtol (= atol, half-decade "
           "grid) reaching that error; the wall times are end-to-end calls over [0, T] after "
           "compilation.", "", "## Command line", ""]
    if cli.get("available"):
        r1, warm = cli["runs"][0], cli["runs"][1:]
        best = min(warm, key=lambda r: r["wall_s"])
        md += [f"`{cli['command']}` (5·10⁵ steps, every node saved, trajectory.npz + summary.json + "
               f"plots), each run in a fresh process (wall time of the whole command):", "",
               f"- first run (compiles into an empty cache): {r1['wall_s']:.2f} s",
               f"- warm compilation cache: **{best['wall_s']:.2f} s** (fastest of {len(warm)}: "
               + ", ".join(f"{r['wall_s']:.2f}" for r in warm) + " s; integration "
               f"{best.get('integration_wall_time_s') or float('nan'):.2f} s at "
               f"{(best.get('steps_per_second') or float('nan')):.3g} steps/s)", ""]
    else:
        md += [f"Not measured: {cli.get('reason')}.", ""]
    if others:
        md += ["## Other methods (no NumPy loop; gearbox only)", "",
               f"The registered methods without a NumPy loop that integrate a "
               f"`NonholonomicSystem`, timed on {OTHER_STEPS} steps (they are slow to compile and "
               "to run; see docs/benchmarks.md):", "", format_table(others), ""]
    T_long = 200 if args.quick else 2000
    md += [f"## A long run: gearbox over [0, {T_long}]", "",
           f"What the tolerances of the table mean over a longer interval ({int(T_long / 0.1)} "
           "steps of nh-rattle; "
           "DOP853 at the tolerances that matched its error at T = 50, and tighter):", "",
           "| solver | max constraint residual | max energy deviation | wall |", "|---|---|---|---|"]
    md += [f"| {r['solver']} | {r['constraint']:.1e} | {r['energy']:.1e} | "
           f"{1e3 * r['wall_s']:.0f} ms |" for r in long_rows]
    md += [""]
    md += ["## Targets", "", "| target | measured | met |", "|---|---|---|"]
    md += [f"| {t['target']} | {t['measured']} | {'yes' if t['met'] else '**no**'} |" for t in targets]
    if off is not None:
        md += ["", "## Without XLA's small-loop kernels", "",
               "The same benchmark in a subprocess with `DALEMBERT_XLA_SMALL_LOOPS=0` (XLA's "
               "default 1 kB loop-kernel threshold):", "", _compact_table(results, off)]
    md += [""]
    Path(args.out).write_text("\n".join(md))
    log(f"wrote {args.out}")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": info, "results": results,
                                               "other_methods": others, "cli": cli,
                                               "long_run": long_rows,
                                               "targets": targets, "without_small_loops": off},
                                              indent=2, default=str))
    print(format_table(results))
    for t in targets:
        print(("MET    " if t["met"] else "MISSED ") + f"{t['target']}: {t['measured']}")


if __name__ == "__main__":
    main()
