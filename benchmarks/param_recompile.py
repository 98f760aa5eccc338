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

Run: `python benchmarks/param_recompile.py [--rounds 5] [--model chaplygin-sleigh]` (writes
benchmarks/results/param_recompile.md).
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--model", default="chaplygin-sleigh")
    args = ap.parse_args()
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
