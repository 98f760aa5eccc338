"""'Before' for benchmarks/sympy_bicycle.py: the steps of dl.from_sympy before the change that
added configuration constraints and the completion (commit 0055ee4, read with ``git show``) —
``expand``, Hessian, ``simplify`` of every entry of G and of the linear terms — on the Lagrangian
of SymPy's Whipple bicycle completed as the new code completes it (T = Σ ½ m v·v + ½ ω·I·ω with
the bodies' velocities from their positions), in the old Kane path's order (expand with the
symbolic parameters, then substitute) and with the values substituted first; and the new
Lagrangian route (no expand, no simplify) on the same L. (The old from_sympy itself refuses the
model: configuration constraints, wheel rates without kinematic differential equations.)

    python benchmarks/sympy_bicycle_before.py        # several minutes
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OLD = "0055ee4"


def _module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    import sympy
    import sympy.physics.mechanics as me

    import dalembert.sympy_models as new
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{OLD}:src/dalembert/sympy_models.py"],
                         capture_output=True, text=True, check=True).stdout
    src = src.replace("from .errors import", "from dalembert.errors import").replace(
        "from .systems import", "from dalembert.systems import")
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "old_sympy_models.py").write_text(src)
        old = _module("old_sympy_models", Path(d) / "old_sympy_models.py")
    mod = _module("sympy_models_test", ROOT / "tests" / "unit" / "test_sympy_models.py")
    print(f"load average {os.getloadavg()}", flush=True)
    km, values, V = mod.whipple_bicycle()
    t = me.dynamicsymbols._t
    N, bodies, qs, us = km._inertial, km.bodies, list(km.q), list(km.u)
    kdes = list(km._k_ku_implicit * sympy.Matrix(us) + km._k_kqdot_implicit * sympy.Matrix([q.diff(t) for q in qs])
                + km._f_k_implicit)
    free, u_of = new._speeds_through_qdot(kdes, qs, us, t, sympy, me)
    angles = [me.dynamicsymbols(f"angle_{new._name(u)}") for u in free]
    u_map = {**u_of, **{u: a.diff(t) for u, a in zip(free, angles)}}
    contact, slip = new._complete_rolling(bodies, N, u_map, {new._name(q) for q in qs + angles}, sympy, me, t)
    allq = qs + contact + angles
    T = 0
    for b in bodies:
        v = (b.masscenter.pos_from(slip["root"]).dt(N) + slip["cdot"]).xreplace(u_map)
        w = b.frame.ang_vel_in(N).xreplace(u_map)
        T += b.mass * v.dot(v) / 2 + w.dot(b.central_inertia.dot(w)) / 2
    L = T - V
    qsym = sympy.symbols(f"q0:{len(allq)}", real=True)
    vsym = sympy.symbols(f"v0:{len(allq)}", real=True)
    to_plain = {**{q.diff(t): v for q, v in zip(allq, vsym)}, **dict(zip(allq, qsym))}
    which = sys.argv[1:] or ["symbolic", "values", "new"]
    if "symbolic" in which:
        t1 = time.perf_counter()
        Lx = sympy.expand(L)
        t2 = time.perf_counter()
        Lp = Lx.subs(to_plain).subs(values)
        t3 = time.perf_counter()
        old._mechanical(Lp, vsym, sympy)
        t4 = time.perf_counter()
        print(f"old steps, old Kane order: expand (symbolic parameters, {sympy.count_ops(Lx)} ops) {t2 - t1:.1f} s, "
              f"subs {t3 - t2:.1f} s, Hessian + simplify {t4 - t3:.1f} s; total {t4 - t1:.1f} s", flush=True)
    Lv = L.xreplace(to_plain).xreplace({k: sympy.sympify(v) for k, v in values.items()})
    if "values" in which:
        t1 = time.perf_counter()
        Lx = sympy.expand(Lv)
        t2 = time.perf_counter()
        old._mechanical(Lx, vsym, sympy)
        t3 = time.perf_counter()
        print(f"old steps, values first: expand {t2 - t1:.1f} s, Hessian + simplify {t3 - t2:.1f} s; total "
              f"{t3 - t1:.1f} s", flush=True)
    if "new" in which:
        t1 = time.perf_counter()
        new._mechanical(Lv, qsym, vsym, sympy)
        print(f"new Lagrangian route on the same L: {time.perf_counter() - t1:.1f} s", flush=True)
    print(f"load average {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
