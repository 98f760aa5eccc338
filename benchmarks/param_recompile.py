"""Does a new `--param` value compile again? `dalembert run chaplygin-sleigh` in new processes.

Per round, on a fresh persistent compilation cache ($DALEMBERT_CACHE_DIR) and for each path —
the default (parameters compiled in as constants) and `--reuse-compiled` (parameters as
arguments of the program) —, three processes one after the other: a first run (m = 1.5, empty
cache), a second with another value (m = 2.5) and a third with the first value again (m = 1.5,
the pure cache hit). The two paths alternate within each round, so that a change of the
machine's load falls on both alike. Reported per (path, process): min / median / max of the
process's wall time (start of Python to exit) and of the run's compile time (summary.json
`compile_time_s`: from the call to the compiled programs being ready — tracing, lowering and
XLA's compile or the cache's load), with the load average before and after.

The price of the parameters as arguments is paid at every step: the step's program no longer
has them as constants (XLA cannot fold them). ``--steps-only`` / the second table: steps per
second of the model's default method in this process, both paths alternating (``save_every``
100, ``--speed-t-final``).

Run: `python benchmarks/param_recompile.py [--rounds 5] [--model chaplygin-sleigh]
[--steps-only]` (writes benchmarks/results/param_recompile.md, or param_recompile_steps.md).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _report import publish  # noqa: E402

SRC = HERE.parent / "src"
PROCESSES = (("first (cold cache)", "m=1.5"), ("new value", "m=2.5"), ("same value again", "m=1.5"))
PATHS = (("default", []), ("--reuse-compiled", ["--reuse-compiled"]))


def one(model, value, extra, cache: Path, out: Path) -> tuple:
    env = dict(os.environ, DALEMBERT_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "dalembert.cli", "run", model, "--param", value, "--no-plots",
                        "--out", str(out), *extra], env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"dalembert run failed: {r.stderr[-2000:]}")
    return wall, json.loads((out / "summary.json").read_text())["compile_time_s"]


def step_speed(model: str, rounds: int, t_final: float) -> str:
    """Markdown table: steps/s of the default path and of the parameters as arguments."""
    sys.path.insert(0, str(SRC))
    import dalembert as dl
    from dalembert.engine import programs
    dl.configure()
    mdl, spec = dl.models.get(model), dl.models.spec(model)
    marked = programs.parametrised(spec.system(dict(mdl.params)), spec.system, mdl.params)
    kw = dict(h=mdl.default_h, t_final=t_final, save_every=100, progress=False, **mdl.initial_state)
    systems = {"default": mdl.system, "--reuse-compiled": marked}
    speed = {k: [] for k in systems}
    for s in systems.values():
        dl.integrate(s, mdl.default_method, **kw)                  # compiles
    load0 = os.getloadavg()
    for r in range(rounds):
        for k, s in (systems.items() if r % 2 == 0 else list(systems.items())[::-1]):
            speed[k].append(dl.integrate(s, mdl.default_method, **kw).metadata["steps_per_second"])
    load1 = os.getloadavg()
    lines = [f"# Steps per second with the parameters as arguments: {model}, `{mdl.default_method}`", "",
             "| path | steps/s (min / median / max) |", "|---|---|"]
    for k, v in speed.items():
        lines.append(f"| {k} | {min(v):.3g} / {statistics.median(v):.3g} / {max(v):.3g} |")
    ratio = statistics.median(speed["--reuse-compiled"]) / statistics.median(speed["default"])
    lines += ["", f"Median ratio (arguments / constants): {ratio:.2f}.", ""]
    note = (f"{rounds} rounds, paths alternating, one process; {int(round(t_final / mdl.default_h))} steps "
            f"of h = {mdl.default_h:g} per run, save_every = 100; {os.cpu_count()} cores; load average "
            f"(1 min) {load0[0]:.1f} before, {load1[0]:.1f} after.")
    return publish("\n".join(lines), note, out=HERE / "results" / "param_recompile_steps.md")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--model", default="chaplygin-sleigh")
    ap.add_argument("--steps-only", action="store_true", help="only the steps/s table")
    ap.add_argument("--speed-t-final", type=float, default=5000.0)
    args = ap.parse_args()
    if args.steps_only:
        step_speed(args.model, args.rounds, args.speed_t_final)
        return
    load0 = os.getloadavg()
    walls = {(p, k): [] for p, _ in PATHS for k, _ in PROCESSES}
    compiles = {key: [] for key in walls}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = PATHS if r % 2 == 0 else PATHS[::-1]
            for path, extra in order:
                cache = Path(tmp) / f"cache-{r}-{path.strip('-')}"
                for k, value in PROCESSES:
                    w, c = one(args.model, value, extra, cache, Path(tmp) / "out")
                    walls[(path, k)].append(w)
                    compiles[(path, k)].append(c)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    load1 = os.getloadavg()

    def mmm(xs):
        return f"{min(xs):.2f} / {statistics.median(xs):.2f} / {max(xs):.2f}"
    lines = [f"# A new `--param` value in a new process: `dalembert run {args.model}`", "",
             "| path | process | wall s (min / median / max) | compile s (min / median / max) |",
             "|---|---|---|---|"]
    for path, _ in PATHS:
        for k, value in PROCESSES:
            lines.append(f"| {path} | {k} (`--param {value}`) | {mmm(walls[(path, k)])} | "
                         f"{mmm(compiles[(path, k)])} |")
    note = (f"{args.rounds} rounds, paths interleaved; {os.cpu_count()} cores; load average (1 min) "
            f"{load0[0]:.1f} before, {load1[0]:.1f} after; --no-plots; default method, step and final "
            f"time of the model.")
    publish("\n".join(lines) + "\n", note, out=HERE / "results" / "param_recompile.md")


if __name__ == "__main__":
    main()
