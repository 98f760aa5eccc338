"""The GNI on a Lie groupoid against the specialised GNIs it generalises (issue 17 §1).

    python benchmarks/groupoid.py [--repeats 3] [--out benchmarks/results/groupoid.txt]

For each case — a built-in system, the specialised method and the groupoid instance that should
reproduce it (``groupoid-gni`` on the pair groupoid for ``gni-midpoint`` and ``nh-rattle``, on
SO(3) ⇉ {e} for ``lie-gni-mv``, on the Atiyah groupoid for ``reduced-gni`` / ``lie-gni``;
``groupoid-dla`` on the pair groupoid for ``dla-midpoint``) — over the model's default run
(h, t_final): the largest difference of the node arrays over the whole trajectory and the compile
times; then steps per second of both paths over ``--steps`` steps (save_every 100) measured
interleaved (``--repeats`` runs each after the compile; min / median / max of the speed ratio
specialised : groupoid).
"""
from __future__ import annotations

import argparse
import os

import numpy as np


def cases():
    import dalembert as dl
    from dalembert.methods import discrete_lagrangians as dls
    out = []
    for name, params in (("p1-linear", {}), ("p2-affine", {})):
        m = dl.models.get(name, **params)
        out.append((f"{name}", m, m.system, m.initial_state, "gni-midpoint", "groupoid-gni", {}, {}, ("q", "v")))
        out.append((f"{name}", m, m.system, m.initial_state, "nh-rattle", "groupoid-gni",
                    {"fast_path": False}, {"discrete_lagrangian": dls.stormer_verlet}, ("q", "v")))
        out.append((f"{name}", m, m.system, m.initial_state, "dla-midpoint", "groupoid-dla", {}, {}, ("q", "v")))
    m = dl.models.get("suslov")
    out.append(("suslov", m, m.system, m.initial_state, "lie-gni-mv", "groupoid-gni", {}, {}, ("R", "omega")))
    for label, params in (("p3-reduced", {}), ("p3-reduced (affine, a = 0.3)", {"nu_amplitude": 0.3})):
        m = dl.models.get("p3-reduced", **params)
        out.append((label, m, m.system, m.initial_state, "reduced-gni", "groupoid-gni", {}, {}, ("x", "R", "xi")))
    m = dl.models.get("rolling-ball")
    out.append(("rolling-ball (R-dependent μ)", m, m.system, m.initial_state, "lie-gni", "groupoid-gni", {}, {},
                ("x", "R", "xi")))
    st = dict(m.initial_state, xi0=m.initial_state["R0"] @ m.initial_state["xi0"])
    out.append(("rolling-ball reduced (right)", m, m.forms["reduced"], st, "reduced-gni", "groupoid-gni", {}, {},
                ("x", "R", "xi")))
    m = dl.models.get("tilting-disk-so3")
    out.append(("tilting-disk-so3 (G̃(R), V(R))", m, m.system, m.initial_state, "lie-gni", "groupoid-gni", {}, {},
                ("x", "R", "xi")))
    return out


def _array(tr, k):
    return np.asarray(getattr(tr, k) if hasattr(tr, k) and getattr(tr, k) is not None else tr.extra[k])


def main(repeats, steps, out_path):
    import dalembert as dl
    lines = [f"# groupoid GNI/DLA vs the specialised methods; {os.cpu_count()} cores, load "
             f"{os.getloadavg()[0]:.2f} at start; speed ratio = specialised steps/s ÷ groupoid steps/s "
             f"(min / median / max of {repeats} interleaved runs)",
             f"{'system':32s} {'specialised':13s} {'groupoid':13s} {'h':>6s} {'T':>6s} {'max |Δ| (arrays)':>40s} "
             f"{'compile s (spec/grp)':>20s} {'steps/s spec':>13s} {'steps/s grp':>12s} {'ratio min/med/max':>18s}"]
    print(lines[0]); print(lines[1])
    for label, model, system, state, spec, grp, sopt, gopt, keys in cases():
        h, T = model.default_h, model.default_t_final

        def run(method, opts):
            return dl.integrate(system, method, h=h, t_final=T, progress=False, **state, **opts)
        a, b = run(spec, sopt), run(grp, gopt)
        diffs = {k: float(np.max(np.abs(_array(a, k) - _array(b, k)))) for k in keys}
        comp = (a.metadata.get("compile_time_s"), b.metadata.get("compile_time_s"))
        sa, sb = [], []

        def speed(method, opts):
            tr = dl.integrate(system, method, h=h, t_final=steps * h, save_every=100, progress=False,
                              **state, **opts)
            return tr.metadata["steps_per_second"]
        speed(spec, sopt), speed(grp, gopt)          # compile the long-run programs
        for _ in range(repeats):
            sa.append(speed(spec, sopt))
            sb.append(speed(grp, gopt))
        ratios = np.array(sa) / np.array(sb)
        dtext = ", ".join(f"{k} {v:.1e}" for k, v in diffs.items())
        line = (f"{label:32s} {spec:13s} {grp:13s} {h:6.3g} {T:6.3g} {dtext:>40s} "
                f"{comp[0]:9.1f}/{comp[1]:<9.1f} {np.median(sa):13.0f} {np.median(sb):12.0f} "
                f"{ratios.min():5.1f}/{np.median(ratios):5.1f}/{ratios.max():5.1f}")
        print(line, flush=True)
        lines.append(line)
    lines.append(f"# load {os.getloadavg()[0]:.2f} at the end")
    if out_path:
        with open(out_path, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--out", default="benchmarks/results/groupoid.txt")
    args = ap.parse_args()
    main(args.repeats, args.steps, args.out)
