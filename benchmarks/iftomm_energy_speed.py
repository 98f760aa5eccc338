"""The IFToMM bicycle's efficiency test for the energy-conserving method alone: ``gonzalez-f``
(node projection) with a Newton matrix per step against the matrix kept across steps
(``jacobian_reuse``) and the estimated-error Newton test (``newton_estimate``), over a few step
sizes (explicit options: ``timed_run`` adds the experiment's ENERGY_METHOD options to those
given), and Exudyn's pass-mark run (h = 0.014, ``--exudyn``) in the same rounds: 20 s of manoeuvre M2, the energy metric (%), CPU time of the time loop
(``time.process_time``, min / median / max over interleaved rounds), Newton iterations per step,
residuals, and the largest roll and steer errors (rad) at the nodes against a fine run
(``gonzalez-f``, h = 0.005).

    python benchmarks/iftomm_energy_speed.py [--rounds 3] [--h 0.04,0.1,0.2]

The symplectic side (the self-adjoint ``nh-rattle-sym`` and its triple jump ``nh-rattle-4``, full
Newton against the matrix kept across steps): ``--jobs "NAME@H;NAME@H"`` runs the named configs at
their own step sizes instead of ``--configs`` × ``--h``, e.g.

    python benchmarks/iftomm_energy_speed.py --rounds 3 --exudyn \
        --jobs "nh-rattle-4 (main)@0.032;nh-rattle-4 reuse 6 + estimate@0.032"
"""
from __future__ import annotations

import argparse
import os
import statistics

import numpy as np

#: name -> options of gonzalez-f, or (method, options)
CONFIGS = {
    "per step (main)": {"node_projection": True, "jacobian_reuse": 0, "newton_estimate": False},
    "estimate": {"node_projection": True, "jacobian_reuse": 0, "newton_estimate": True},
    "reuse 6 + estimate": {"node_projection": True, "jacobian_reuse": 6, "newton_estimate": True},
    "nh-rattle-sym (main)": ("nh-rattle-sym", {"rtol": 1e-11, "jacobian_reuse": 0, "newton_estimate": False}),
    "nh-rattle-sym reuse 6 + estimate": ("nh-rattle-sym", {"rtol": 1e-13, "jacobian_reuse": 6, "newton_estimate": True}),
    "nh-rattle-4 (main)": ("nh-rattle-4", {"rtol": 1e-14, "jacobian_reuse": 0, "newton_estimate": False}),
    "nh-rattle-4 reuse 6 + estimate": ("nh-rattle-4", {"rtol": 1e-13, "jacobian_reuse": 6, "newton_estimate": True}),
}


def _config(name):
    c = CONFIGS[name]
    return c if isinstance(c, tuple) else ("gonzalez-f", c)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--h", default="0.04,0.1,0.2")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--jobs", default="", help='"NAME@H;NAME@H" (instead of --configs x --h)')
    ap.add_argument("--ref", default="", help='"NAME@H": the reference run (default gonzalez-f, h = 0.005)')
    ap.add_argument("--exudyn", action="store_true")
    a = ap.parse_args(argv)
    from dalembert.experiments import iftomm_bicycle as X
    bike = X.bicycle()
    if a.jobs:
        jobs = [(name, float(h)) for name, h in (j.rsplit("@", 1) for j in a.jobs.split(";"))]
    else:
        jobs = [(name, float(h)) for h in a.h.split(",") for name in a.configs.split(",")]
    print("load at start", os.getloadavg(), flush=True)
    if a.ref:
        name, h = a.ref.rsplit("@", 1)
        ref, _ = X.timed_run(bike, *_config(name)[:1], float(h), 20.0, **_config(name)[1])
    else:
        ref, _ = X.timed_run(bike, "gonzalez-f", 0.005, 20.0, node_projection=True)
    rt, rq = np.asarray(ref.t), np.asarray(ref.q)
    cpu, rows, exu = {}, {}, []
    for r in range(a.rounds):
        for name, h in jobs:
            method, opts = _config(name)
            # (explicit options: timed_run adds the experiment's options for the method to those given)
            tr, c = X.timed_run(bike, method, h, 20.0, **opts)
            cpu.setdefault((name, h), []).append(c)
            if r == 0:
                q, t = np.asarray(tr.q), np.asarray(tr.t)
                i = np.searchsorted(rt, t - 1e-9)
                nw = tr.metadata.get("newton", {})
                rows[(name, h)] = (X.energy_metric(tr.energy), nw.get("mean_iterations"),
                                   float(np.max(np.abs(tr.holonomic_residual))),
                                   float(np.max(np.abs(tr.constraint_residual))),
                                   float(np.max(np.abs(q[:, bike.roll] - rq[i, bike.roll]))),
                                   float(np.max(np.abs(q[:, bike.steer] - rq[i, bike.steer]))))
            print(f"round {r} {name} h={h} cpu {c:.3f} load {os.getloadavg()[0]:.1f}", flush=True)
        if a.exudyn:
            import sys
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import iftomm_peers
            e = iftomm_peers.exudyn_run("M2", h=0.014)
            exu.append((e["metric"], e["cpu_s"], e["drift"]))
            print(f"round {r} exudyn h=0.014 metric {e['metric']:.2e} % cpu {e['cpu_s']:.3f}", flush=True)
    print("load at end", os.getloadavg())
    print("| options | h | metric % | CPU s min / med / max | iterations per step | max |φ| m | rolling m/s "
          "| roll err rad | steer err rad |")
    for (name, h), (m, it, phi, rol, er, es) in rows.items():
        c = cpu[(name, h)]
        print(f"| {name} | {h} | {m:.2e} | {min(c):.3f} / {statistics.median(c):.3f} / {max(c):.3f} | {it:.2f} "
              f"| {phi:.1e} | {rol:.1e} | {er:.1e} | {es:.1e} |")
    if exu:
        c = [x[1] for x in exu]
        print(f"| Exudyn TrapezoidalIndex2 | 0.014 | {exu[0][0]:.2e} | {min(c):.3f} / {statistics.median(c):.3f} / "
              f"{max(c):.3f} | — | {max(x[2] for x in exu):.1e} (contacts, joints) | — | — | — |")


if __name__ == "__main__":
    main()
