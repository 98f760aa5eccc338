"""Issue 14's measurements: interrupts and resume of a long CLI run, and the cost of the checks
that every step now makes.

    python benchmarks/long_runs.py interrupt [--steps 10000000] [--signals SIGINT,SIGTERM]
    python benchmarks/long_runs.py overhead [--repeats 5]
    python benchmarks/long_runs.py check-every [--repeats 5]

``interrupt``: ``dalembert run gearbox --method nh-rattle`` for ``--steps`` steps, interrupted by
each signal at a random time after its first checkpoint, then ``--resume``; the resumed result is
compared bit for bit with an uninterrupted run of the same command, and what was on disk after
the interrupt is listed.

``overhead``: steps/s of single runs as shipped, without the per-step energy check and without
the in-loop sawtooth statistic, interleaved and repeated (min/median/max; the ratios are steps/s
of the variant over as shipped: above 1 means the check costs), on cheap explicit steps (where a
check costs most) and implicit ones.

``check-every``: steps/s without ``check_every`` (the API default), with ``check_every=1000``
(the command line's default) and with ``check_every=1``, interleaved and repeated (ratios:
steps/s with the option over without; below 1 means the check costs).
"""
from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _cli(*args, **kw):
    return [sys.executable, "-m", "dalembert.cli", *args]


def interrupt(steps: int, signals, seed: int = 0):
    import dalembert as dl
    rng = random.Random(seed)
    h = 0.001
    T = steps * h
    base = ["run", "gearbox", "--method", "nh-rattle", "--h", str(h), "--t-final", f"{T:g}",
            "--save-every", "1000", "--no-plots"]
    tmp = Path(tempfile.mkdtemp(prefix="dalembert-interrupt-"))
    t0 = time.perf_counter()
    subprocess.run(_cli(*base, "--out", str(tmp / "ref")), check=True, capture_output=True)
    t_ref = time.perf_counter() - t0
    ref = dl.load(tmp / "ref" / "trajectory.npz")
    print(f"uninterrupted: {steps:,} steps, {t_ref:.1f} s wall (process), "
          f"{ref.metadata['steps_per_second']:,.0f} steps/s in the loop")
    for sig in signals:
        out = tmp / sig
        p = subprocess.Popen(_cli(*base, "--out", str(out), "--checkpoint", "--checkpoint-every", "0"),
                             stderr=subprocess.PIPE, text=True)
        while not (out / "checkpoint.npz").exists() and p.poll() is None:
            time.sleep(0.01)
        delay = rng.uniform(0.0, 0.8 * ref.metadata["wall_time_s"])
        time.sleep(delay)
        t_sig = time.perf_counter()
        p.send_signal(getattr(signal, sig))
        err = p.communicate()[1].strip()
        t_exit = time.perf_counter() - t_sig
        files = {f.name: f.stat().st_size for f in sorted(out.iterdir())}
        part = dl.load(out / "trajectory.npz")
        print(f"\n{sig} {delay:.2f} s into the loop: exit status {p.returncode}, process gone "
              f"{t_exit:.2f} s after the signal")
        print(f"  stderr: {err}")
        print(f"  on disk: {files}")
        print(f"  partial trajectory: {len(part)} nodes to t = {part.t[-1]:g} "
              f"(step {part.metadata['interrupted']['step']:,})")
        t0 = time.perf_counter()
        r = subprocess.run(_cli("run", "--resume", str(out), "--no-plots"), capture_output=True, text=True)
        t_res = time.perf_counter() - t0
        res = dl.load(out / "trajectory.npz")
        same = all(np.array_equal(getattr(res, k), getattr(ref, k)) for k in ("t", "q", "v", "p", "energy"))
        print(f"  --resume: exit {r.returncode}, {t_res:.1f} s; final t = {res.t[-1]:g}; "
              f"equal to the uninterrupted run bit for bit: {same}; "
              f"files after: {sorted(f.name for f in out.iterdir())}")


def _interleaved(rate, labels, repeats: int) -> dict:
    """{label: [steps/s, ...]}: ``rate(label)`` for every label in turn, ``repeats`` times."""
    rates = {label: [] for label in labels}
    for _ in range(repeats):
        for label in labels:
            rates[label].append(rate(label))
    return rates


def _ratio_line(title: str, rates: dict) -> str:
    """The first variant's steps/s (median, min, max), then each other's ratio to it."""
    first, *others = rates
    base = np.array(rates[first])
    line = f"{title}: {first} {np.median(base):,.0f} steps/s (min {base.min():,.0f}, max {base.max():,.0f})"
    for label in others:
        r = np.array(rates[label]) / base
        line += f"; {label}: ×{np.median(r):.3f} (min {r.min():.3f}, max {r.max():.3f})"
    return line


def overhead(repeats: int):
    """Steps/s as shipped, without the per-step energy check, and without the in-loop sawtooth
    statistic (GNI families), each on a fresh system object (its own compiled program),
    interleaved and repeated."""
    import dalembert as dl
    from dalembert import monitors
    from dalembert.engine import loop
    dl.configure()
    cases = [("gearbox", "nh-rattle", 0.01, 2000.0), ("vertical-rolling-disk", "nh-rattle", 0.01, 2000.0),
             ("chaplygin-sleigh", "gni-midpoint", 0.01, 200.0), ("chaplygin-sleigh", "dla-midpoint", 0.01, 200.0)]
    real_energy, real_monitored = loop.step_energy, monitors.monitored
    variants = {"as shipped": (real_energy, real_monitored),
                "no energy check": (lambda system, scheme: (lambda st, h: None), real_monitored),
                "no sawtooth statistic": (real_energy, lambda method: False)}
    print(f"load average at start: {os.getloadavg()}")
    for model, method, h, T in cases:
        systems = {}
        for label, (en, mon) in variants.items():
            loop.step_energy, monitors.monitored = en, mon
            systems[label] = m = dl.models.get(model)      # a fresh system object: its own programs
            dl.integrate(m.system, method, h=h, t_final=10 * h, **m.initial_state)   # compile
        loop.step_energy, monitors.monitored = real_energy, real_monitored

        def rate(label):
            m = systems[label]
            tr = dl.integrate(m.system, method, h=h, t_final=T, save_every=100, **m.initial_state)
            return tr.metadata["steps_per_second"]
        print(_ratio_line(f"{model} · {method}", _interleaved(rate, variants, repeats)))
    print(f"load average at end: {os.getloadavg()}")


def check_every(repeats: int):
    """Steps/s with the invariant checks every K steps (K = none, 1000, 1), interleaved."""
    import dalembert as dl
    dl.configure()
    cases = [("gearbox", "nh-rattle", 0.01, 2000.0), ("chaplygin-sleigh", "gni-midpoint", 0.01, 200.0)]
    variants = {"no check_every": {}, "K = 1000": {"check_every": 1000}, "K = 1": {"check_every": 1}}
    print(f"load average at start: {os.getloadavg()}")
    for model, method, h, T in cases:
        m = dl.models.get(model)
        for opts in variants.values():
            dl.integrate(m.system, method, h=h, t_final=10 * h, **m.initial_state, **opts)   # compile

        def rate(label):
            tr = dl.integrate(m.system, method, h=h, t_final=T, save_every=100, **m.initial_state,
                              **variants[label])
            return tr.metadata["steps_per_second"]
        print(_ratio_line(f"{model} · {method}", _interleaved(rate, variants, repeats)))
    print(f"load average at end: {os.getloadavg()}")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("interrupt")
    a.add_argument("--steps", type=int, default=10_000_000)
    a.add_argument("--signals", default="SIGINT,SIGTERM")
    a.add_argument("--seed", type=int, default=0)
    b = sub.add_parser("overhead")
    b.add_argument("--repeats", type=int, default=5)
    c = sub.add_parser("check-every")
    c.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if args.cmd == "interrupt":
        interrupt(args.steps, args.signals.split(","), args.seed)
    elif args.cmd == "overhead":
        overhead(args.repeats)
    else:
        check_every(args.repeats)


if __name__ == "__main__":
    main()
