"""Long runs through the automatic almost-Poisson reduction (issue 13): t = 200 with ≥ 20 full
turns of the heading, every discrete-gradient method and implicit-midpoint, three systems with
rotating constraints — a free skate (ours), the Chaplygin sleigh spinning (a = 0.03) and the
vertical rolling disk turning (on its global solved-columns basis, and forced onto the atlas).

    python benchmarks/atlas_long_runs.py [--out benchmarks/results/atlas_long_runs.json]
    python benchmarks/atlas_long_runs.py --quartic 40,80     # large states: Newton at round-off

For each (system, method) and h ∈ {0.04, 0.02, 0.01}: the relative energy error and the
constraint residual (max over the nodes), the number of chart switches, the error at t = 200
against the closed-form solution, and the fitted order.
"""
from __future__ import annotations

import argparse
import json
import time

import jax.numpy as jnp
import numpy as np

import dalembert as dl

METHODS = ("dg-avf", "dg-gonzalez", "dg-itoh-abe", "dg-itoh-abe-sym", "implicit-midpoint")
HS = (0.04, 0.02, 0.01)
T = 200.0


def free_skate():
    return dl.NonholonomicSystem(
        mass_matrix=np.diag([1.0, 1.0, 0.3]),
        constraint_matrix=lambda q: jnp.stack([jnp.sin(q[2]), -jnp.cos(q[2]), 0.0 * q[2]])[None, :],
        name="free-skate")


def skate_case():
    u, w = 1.0, 0.7
    q0 = np.array([0.2, -0.1, 0.3])
    v0 = np.array([u * np.cos(0.3), u * np.sin(0.3), w])

    def exact(t):
        phi = q0[2] + w * t
        return np.array([q0[0] + u / w * (np.sin(phi) - np.sin(q0[2])),
                         q0[1] - u / w * (np.cos(phi) - np.cos(q0[2])), phi])
    return "free skate (ours)", free_skate(), q0, v0, exact


def sleigh_case():
    m = dl.models.get("chaplygin-sleigh", a=0.03)
    th0, u, w = 0.1, 0.01, 2.0
    q0 = np.array([0.0, 0.0, th0])
    v0 = np.array([u * np.cos(th0), u * np.sin(th0), w])
    return "Chaplygin sleigh, a = 0.03", m.system, q0, v0, lambda t: m.solution(np.array([0.0, t]), q0, v0)[0][-1]


def disk_case(frame):
    m = dl.models.get("vertical-rolling-disk")
    system = m.system if frame == "auto" else dl.almost_poisson(m.system, m.q0, frame="atlas")
    name = "vertical rolling disk" + (" (global basis)" if frame == "auto" else " (atlas)")
    return name, system, m.q0, m.v0, lambda t: m.solution(np.array([0.0, t]))[0][-1]


def run_case(case, method):
    name, system, q0, v0, exact = case
    rows = []
    for h in HS:
        if isinstance(system, dl.NonholonomicSystem):
            kw = {"q0": q0, "v0": v0}
        else:
            kw = {"x0": np.asarray(system.reduce(jnp.asarray(q0), jnp.asarray(v0)))}
        t0 = time.perf_counter()
        tr = dl.integrate(system, method, h=h, t_final=T, save_every=10, progress=False, **kw)
        wall = time.perf_counter() - t0
        rows.append({
            "h": h, "energy_rel": float(tr.max_relative_energy_error),
            "constraint": float(np.max(np.abs(tr.constraint_residual))),
            "switches": int(tr.metadata.get("chart_switches", 0)),
            "turns": float((tr.q[-1, 2] - tr.q[0, 2]) / (2 * np.pi)),
            "error": float(np.max(np.abs(tr.q[-1] - exact(tr.t[-1])))),
            "wall_s": wall, "compile_s": tr.metadata["compile_time_s"]})
    order = float(np.polyfit(np.log(HS), np.log([r["error"] for r in rows]), 1)[0])
    return {"system": name, "method": method, "order": order, "runs": rows}


def quartic(n, h=0.05, t_final=100.0):
    """dg-gonzalez on the hand-derived form of the chaotic quartic system with n pairs (4n + 1
    unknowns) to t = 100: relative energy error, largest |x|, Newton iterations, wall time."""
    m = dl.models.get("chaotic-quartic", n=n)
    ap = m.almost_poisson
    x0 = np.asarray(ap.reduce(jnp.asarray(m.q0), jnp.asarray(m.v0)))
    t0 = time.perf_counter()
    tr = dl.integrate(ap, "dg-gonzalez", x0=x0, h=h, t_final=t_final, save_every=10, progress=False)
    return {"n": n, "unknowns": x0.size, "energy_rel": float(tr.max_relative_energy_error),
            "max_abs_x": float(np.max(np.abs(tr.extra["x"]))), "newton": tr.metadata["newton"],
            "wall_s": time.perf_counter() - t0, "compile_s": tr.metadata["compile_time_s"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/atlas_long_runs.json")
    ap.add_argument("--quartic", default=None, help="comma-separated n: run the large quartic systems only")
    a = ap.parse_args(argv)
    dl.configure()
    if a.quartic:
        for n in (int(x) for x in a.quartic.split(",")):
            print(json.dumps(quartic(n)), flush=True)
        return
    cases = [skate_case(), sleigh_case(), disk_case("auto"), disk_case("atlas")]
    out = []
    print(f"t = {T}; h = {HS}; max over h of the relative energy error and constraint residual")
    print(f"{'system':32s} {'method':18s} {'turns':>6s} {'switches':>14s} {'rel. energy':>11s} "
          f"{'constraint':>10s} {'error(h=0.01)':>13s} {'order':>6s}")
    for case in cases:
        for method in METHODS:
            r = run_case(case, method)
            out.append(r)
            runs = r["runs"]
            print(f"{r['system']:32s} {method:18s} {runs[-1]['turns']:6.1f} "
                  f"{'/'.join(str(x['switches']) for x in runs):>14s} "
                  f"{max(x['energy_rel'] for x in runs):11.2e} {max(x['constraint'] for x in runs):10.2e} "
                  f"{runs[-1]['error']:13.2e} {r['order']:6.2f}", flush=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
