#!/usr/bin/env python
"""Speed of the discrete-gradient and comparison methods (Celledoni et al. 2019).

    python benchmarks/dg_comparison_speed.py                 # full measurement (several minutes)
    python benchmarks/dg_comparison_speed.py --quick         # smoke test (not a measurement)
    python benchmarks/dg_comparison_speed.py --append docs/benchmarks.md   # also append the tables there

Reports
(a) steps/s of each method after compilation, on ``chaotic-quartic`` (n = 3) and ``gearbox``
    (h = 0.1): the DG methods on the hand-derived almost-Poisson forms, gonzalez-r / gonzalez-f
    and the comparison methods on the NonholonomicSystem;
(b) the wall time of the Figure-2 variance study: 200 initial states × t = 10⁴ × h ∈ {0.1, 0.05}
    for SI-DLA, I-DLA, SPARK and GONZALEZ with ``dl.ensemble(keep=["energy"], save_every=100)``,
    and its trajectory-steps/s. A method whose measured rate would make its share exceed
    ``--max-seconds`` is run on a shorter horizon and its full-study time is extrapolated
    (marked "extrapolated");
(c) ensemble throughput against the same trajectories run one at a time with ``dl.integrate``
    (after compilation; on both sides the whole call is timed, input checks included), B = 20
    and 200.

Both machines' cores are used (no pinning): the variance-study target (< 10 minutes) is stated
for this 2-core machine.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import dalembert as dl

dl.configure()   # the process-wide settings the CLI also opts in to (before JAX starts)
from _report import publish
from dalembert.models.chaotic_quartic import initial_state

DG = ("dg-avf", "dg-gonzalez", "dg-itoh-abe", "dg-itoh-abe-sym", "implicit-midpoint")
CANONICAL = ("gonzalez-r", "gonzalez-f")
COMPARISON = (("si-dla", {}), ("i-dla", {}), ("i-dla", {"constraint": "endpoint"}), ("spark-lobatto2", {}))
VARIANCE = (("SI-DLA", "si-dla"), ("I-DLA", "i-dla"), ("SPARK", "spark-lobatto2"), ("GONZALEZ", "dg-gonzalez"))


def _label(name, opts):
    return name + ("" if not opts else " (" + ", ".join(f"{k}={v}" for k, v in opts.items()) + ")")


def _run(model, name, opts, h, t_final, dg):
    if dg:
        ap = model.almost_poisson
        x0 = np.asarray(ap.reduce(jnp.asarray(model.q0), jnp.asarray(model.v0)))
        return dl.integrate(ap, name, x0=x0, h=h, t_final=t_final, progress=False, **opts)
    return dl.integrate(model.system, name, q0=model.q0, v0=model.v0, h=h, t_final=t_final, progress=False, **opts)


def steps_per_second(quick):
    """(a): rows (model, method, steps/s, µs/step, compile s)."""
    rows = []
    h = 0.1
    for mname in ("chaotic-quartic", "gearbox"):
        model = dl.models.get(mname)
        entries = [(n, {}, True) for n in DG] + [(n, {}, False) for n in CANONICAL] + \
                  [(n, o, False) for n, o in COMPARISON]
        for name, opts, dg in entries:
            t0 = time.perf_counter()
            first = _run(model, name, opts, h, 10.0, dg)          # compiles (100 steps)
            compile_s = time.perf_counter() - t0
            rate0 = first.metadata["steps_per_second"] or 1e4
            # about 1 s of work (0.2 s quick), at most 10⁶ steps; same chunk size → no recompilation
            n = int(min(1e6, max(1000, rate0 * (0.2 if quick else 1.0))))
            n = min(n, 1000) if quick else n
            tr = _run(model, name, opts, h, n * h, dg)
            sps = tr.metadata["steps_per_second"]
            rows.append((mname, _label(name, opts), sps, 1e6 / sps, compile_s, n))
            print(f"  {mname:16s} {_label(name, opts):32s} {sps:12.0f} steps/s  ({n} steps)", flush=True)
    return rows


def _initial_states(model, name, alphas):
    """The ensemble's initial-state keywords: (q0, v0) of shape (B, 7), or x0 (B, 13) on the
    almost-Poisson form for the DG methods."""
    q0 = np.empty((alphas.size, 7))
    v0 = np.empty((alphas.size, 7))
    for i, a in enumerate(alphas):
        q0[i], v0[i] = initial_state(3, a)
    if name.startswith("dg-"):
        ap = model.almost_poisson
        return {"x0": np.asarray(jax.jit(jax.vmap(ap.reduce))(jnp.asarray(q0), jnp.asarray(v0)))}
    return {"q0": q0, "v0": v0}


def _ensemble(model, name, alphas, h, t_final, save_every=100, states=None):
    states = states if states is not None else _initial_states(model, name, alphas)
    system = model.almost_poisson if name.startswith("dg-") else model.system
    return dl.ensemble(system, name, h=h, t_final=t_final, save_every=save_every, keep=["energy"],
                       progress=False, **states)


def variance_study(quick, max_seconds):
    """(b): rows (method, h, trajectory steps, wall s, traj-steps/s, compile s, extrapolated?)."""
    model = dl.models.get("chaotic-quartic")
    n_ic, T = (20, 100.0) if quick else (200, 1.0e4)
    alphas = np.random.default_rng(1).uniform(0.0, np.pi / 2, n_ic)
    rows = []
    for label, name in VARIANCE:
        for h in (0.1, 0.05):
            full_steps = n_ic * int(round(T / h))
            # probe: 200 states × 1000 steps (compiles and measures the rate)
            probe_T = min(T, 1000 * h)
            ens = _ensemble(model, name, alphas, h, probe_T)
            rate = ens.metadata["trajectory_steps_per_second"]
            comp = ens.metadata["compile_time_s"]
            if full_steps / rate <= max_seconds or quick:
                ens = _ensemble(model, name, alphas, h, T)
                wall, rate, extra = ens.metadata["wall_time_s"], ens.metadata["trajectory_steps_per_second"], False
                comp = max(comp, ens.metadata["compile_time_s"])
            else:
                wall, extra = full_steps / rate, True
            rows.append((label, h, full_steps, wall, rate, comp, extra))
            print(f"  variance {label:9s} h={h:<5} {wall:9.1f} s  {rate:12.0f} traj-steps/s"
                  f"{'  (extrapolated from a 1000-step probe)' if extra else ''}", flush=True)
    return rows


def ensemble_speedup(quick):
    """(c): rows (model, method, B, ensemble traj-steps/s, one-at-a-time traj-steps/s, ratio),
    for B = 20 and B = 200 (the size of the variance study)."""
    rows = []
    for B in ((20,) if quick else (20, 200)):
        rows += _ensemble_speedup(quick, B)
    return rows


def _ensemble_speedup(quick, B):
    """Both sides timed as whole calls after compilation (input checks, dispatch and output
    included): the ensemble call of B members, and B − 1 ``dl.integrate`` calls (member 0 pays
    the compilation) scaled to B. Best of 3 for the ensemble."""
    rows = []
    model = dl.models.get("chaotic-quartic")
    alphas = np.random.default_rng(1).uniform(0.0, np.pi / 2, B)
    for name in ("si-dla", "spark-lobatto2", "i-dla", "dg-gonzalez"):
        steps = 1000 if (quick or name.startswith("dg-")) else 10000
        T = steps * 0.1
        states = _initial_states(model, name, alphas)                   # built outside the timing,
        ens = _ensemble(model, name, alphas, 0.1, T, states=states)     # as for the loop below; compiles
        best = np.inf
        for _ in range(1 if quick else 3):
            t1 = time.perf_counter()
            ens = _ensemble(model, name, alphas, 0.1, T, states=states)
            best = min(best, time.perf_counter() - t1)
        ens_rate = B * steps / best
        walls = []
        for i, a in enumerate(alphas):
            q0, v0 = initial_state(3, a)
            if name.startswith("dg-"):
                ap = model.almost_poisson
                kw = {"x0": np.asarray(ap.reduce(jnp.asarray(q0), jnp.asarray(v0)))}
                sys_ = ap
            else:
                kw, sys_ = {"q0": q0, "v0": v0}, model.system
            t1 = time.perf_counter()
            dl.integrate(sys_, name, h=0.1, t_final=T, save_every=100, progress=False, **kw)
            if i > 0:                 # member 0 paid the compilation; the others: the whole call
                walls.append(time.perf_counter() - t1)
        one_rate = steps / np.mean(walls)
        rows.append(("chaotic-quartic", name, B, ens_rate, one_rate, ens_rate / one_rate,
                     ens.metadata.get("devices", 1)))
        print(f"  ensemble {name:16s} B={B}: {ens_rate:12.0f} vs {one_rate:12.0f} one at a time "
              f"({ens_rate / one_rate:.2f}×, {ens.metadata.get('devices', 1)} devices)", flush=True)
    return rows


def markdown(a, b, c, quick, started, elapsed):
    """The report; a part that was not run (``--parts``) is left out."""
    out = [f"## Discrete-gradient and comparison methods (Celledoni et al. 2019)", "",
           f"Measured by `benchmarks/dg_comparison_speed.py{' --quick' if quick else ''}` on {started} UTC "
           f"({platform.processor() or platform.machine()}, {os.cpu_count()} cores, JAX {jax.__version__}, "
           f"float64); total {elapsed:.0f} s." + (" QUICK RUN: smoke test, not a measurement." if quick else "")]
    if a:
        out += ["", "### (a) Steps per second after compilation (h = 0.1, one trajectory)", "",
                "| model | method | steps/s | µs/step | first call (compile + 100 steps) s | steps timed |",
                "|---|---|---:|---:|---:|---:|"]
        out += [f"| {m} | {name} | {sps:,.0f} | {us:.2f} | {comp:.1f} | {n:,} |" for m, name, sps, us, comp, n in a]
    if b:
        total = sum(r[3] for r in b)
        measured = sum(r[3] for r in b if not r[6])
        out += ["", "### (b) Figure-2 variance study (200 states × t = 10⁴ × h ∈ {0.1, 0.05}, keep energy "
                "every 100 steps)", "",
                "| method | h | trajectory steps | wall s | trajectory-steps/s | compile s |", "|---|---:|---:|---:|---:|---:|"]
        out += [f"| {label} | {h} | {steps:,} | {wall:,.1f}{' (extrapolated)' if extra else ''} | {rate:,.0f} | "
                f"{comp:.1f} |" for label, h, steps, wall, rate, comp, extra in b]
        out += ["", f"Total: {total:,.0f} s ({total / 60:.1f} min), of which measured {measured:,.0f} s; "
                f"target < 10 min: {'met' if total < 600 else 'NOT met'}."]
    if c:
        out += ["", "### (c) Ensemble against one trajectory at a time (chaotic quartic, h = 0.1)", "",
                "Both sides are whole calls after compilation; the ensemble's members are split over "
                "the CPU devices (`metadata[\"devices\"]`: one per thread of XLA's CPU pool, fewer when the step calls LAPACK).", "",
                "| method | B | devices | ensemble traj-steps/s | one at a time traj-steps/s | ratio (target ≥ 5×) |",
                "|---|---:|---:|---:|---:|---:|"]
        out += [f"| {name} | {B} | {ndev} | {er:,.0f} | {orate:,.0f} | {ratio:.2f}× |"
                for m, name, B, er, orate, ratio, ndev in c]
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--append", type=Path, default=None, help="append the markdown tables to this file")
    ap.add_argument("--max-seconds", type=float, default=300.0,
                    help="per (method, h) of the variance study: run in full only below this estimate")
    ap.add_argument("--parts", default="abc")
    ap.add_argument("--note", default="", help="a paragraph added under the heading (e.g. machine load)")
    args = ap.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    t0 = time.perf_counter()
    a = steps_per_second(args.quick) if "a" in args.parts else []
    b = variance_study(args.quick, args.max_seconds) if "b" in args.parts else []
    c = ensemble_speedup(args.quick) if "c" in args.parts else []
    publish(markdown(a, b, c, args.quick, started, time.perf_counter() - t0), args.note,
            append=args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
