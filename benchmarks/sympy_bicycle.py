"""SymPy's Whipple bicycle (sympy/physics/mechanics/tests/test_kane3.py) imported by
``dl.from_sympy`` and run at the IFToMM "uncontrolled bicycle" manoeuvre M2 (forward speed
4.6 m/s, roll rate 0.5 rad/s; Meijaard et al., Proc. R. Soc. A 463 (2007)): import time and where
it goes, the linearised eigenvalues against Meijaard's, and per method the front-contact height
residual max |φ|, the rolling residual, the energy metric 100·(max E − min E)/E₀ (%), the roll
envelope and the weave eigenvalue fitted to the roll angle.

    python benchmarks/sympy_bicycle.py [--methods nh-rattle-sym,gonzalez-f] [--h 1e-3] [--t-final 20]

``nh-rattle-sym`` runs with ``rtol=1e-11``: its Newton test ‖Δu‖∞ ≤ rtol (1 + ‖u‖∞) on the
unknowns u = (q_{k+1}, impulses) cannot reach the default 1e-14 (nor 1e-12) on this model (the
updates stall at about 1.4e-12, the round-off of momentum equations whose terms are ~4e2 kg·m/s).
"""
from __future__ import annotations

import argparse
import cProfile
import importlib.util
import os
import pstats
import time
from pathlib import Path

import numpy as np


def _test_module():
    path = Path(__file__).resolve().parents[1] / "tests" / "unit" / "test_sympy_models.py"
    spec = importlib.util.spec_from_file_location("sympy_models_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


STAGES = ("_kane_parts", "_speeds_through_qdot", "_check_axisymmetric", "_complete_rolling", "_mechanical",
          "_linear_constraints", "_independent_rows", "_kinetic_fn", "_matrix_fn", "_vector_fn", "_scalar_fn")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default="nh-rattle-sym,gonzalez-f")
    ap.add_argument("--h", type=float, default=1e-3)
    ap.add_argument("--t-final", type=float, default=20.0)
    ap.add_argument("--save", default="")
    a = ap.parse_args(argv)
    import jax
    import jax.numpy as jnp

    import dalembert as dl
    print(f"load average {os.getloadavg()}", flush=True)
    mod = _test_module()
    t0 = time.perf_counter()
    km, values, V = mod.whipple_bicycle()
    t1 = time.perf_counter()
    prof = cProfile.Profile()
    prof.enable()
    system = dl.from_sympy(km, values=values, potential=V, name="whipple-sympy")
    prof.disable()
    t2 = time.perf_counter()
    st = pstats.Stats(prof)
    where = {fn[2]: st.stats[fn][3] for fn in st.stats if fn[0].endswith("sympy_models.py") and fn[2] in STAGES}
    print(f"set-up: SymPy model (KanesMethod + kanes_equations) {t1 - t0:.2f} s, dl.from_sympy {t2 - t1:.2f} s "
          f"(under the profiler); cumulative by stage: "
          + ", ".join(f"{k} {where[k]:.2f} s" for k in STAGES if k in where), flush=True)
    t3 = time.perf_counter()
    dl.from_sympy(km, values=values, potential=V)
    print(f"dl.from_sympy again, no profiler: {time.perf_counter() - t3:.2f} s", flush=True)
    n, k = len(system.coordinate_names), system.holonomic(jnp.zeros(8)).shape[0]
    m = system.rolling_matrix(jnp.zeros(8)).shape[0]
    print(f"coordinates {system.coordinate_names}; k = {k} configuration, m = {m} rolling constraints", flush=True)
    for speed, ev in zip((4.6, 5.0), mod.linearised_eigenvalues(system, (4.6, 5.0))):
        ref = mod.meijaard_eigenvalues(speed)
        big = ev[np.abs(ev) > 1e-3]
        err = max(np.min(np.abs(big - r)) for r in ref)
        print(f"linearised at {speed} m/s: {np.sort_complex(big)}; Meijaard {np.sort_complex(ref)}; max |Δλ| "
              f"{err:.1e}; the other {2 * n - len(big)} eigenvalues ≤ {np.max(np.abs(ev[np.abs(ev) <= 1e-3])):.1e}",
              flush=True)
    q0, v0 = mod.bicycle_state(system, 4.6, 0.5)
    weave = [x for x in mod.meijaard_eigenvalues(4.6) if x.imag > 0][0]
    names = system.coordinate_names
    for method in a.methods.split(","):
        opts = {"rtol": 1e-11} if method == "nh-rattle-sym" else {}
        t4 = time.perf_counter()
        tr = dl.integrate(system, method, q0=q0, v0=v0, h=a.h, t_final=a.t_final, progress=False, **opts)
        wall = time.perf_counter() - t4
        E = np.asarray(tr.energy)
        q = np.asarray(tr.q)
        t = np.asarray(tr.t)
        roll = q[:, names.index("q2")]
        qbar, dq = 0.5 * (q[1:] + q[:-1]), (q[1:] - q[:-1]) / a.h
        mid = np.asarray(jax.jit(jax.vmap(lambda x, y: system.rolling_matrix(x) @ y))(jnp.asarray(qbar),
                                                                                     jnp.asarray(dq)))
        windows = [float(np.max(np.abs(roll[(t >= s) & (t < s + 2.0)]))) for s in np.arange(0.0, a.t_final, 2.0)]
        sigma, omega, res = mod.fitted_weave(t, roll, 6.0)
        speed = float(np.mean(np.asarray(tr.v)[t >= 6.0, names.index("angle_u3")] * mod.R_REAR))
        at_speed = [x for x in mod.meijaard_eigenvalues(speed) if x.imag > 0][0]
        compile_s = tr.metadata.get('compile_time_s', 0)
        print(f"{method} h = {a.h} t_final = {a.t_final} {opts}: compile {compile_s:.1f} s, "
              f"total {wall:.1f} s; max |φ| {np.max(np.abs(tr.holonomic_residual)):.1e} m; rolling residual at the "
              f"nodes {np.max(np.abs(tr.constraint_residual)):.1e}, at the midpoints μ(q̄)(q₁−q₀)/h "
              f"{np.max(np.abs(mid)):.1e} m/s; "
              f"E₀ {E[0]:.6f} J, energy metric 100·(max E − min E)/E₀ = {100 * (E.max() - E.min()) / E[0]:.2e} %; "
              f"roll max |q2| per 2 s window {' '.join(f'{w:.2e}' for w in windows)}; weave fitted on t ≥ 6 s "
              f"{sigma:.5f} ± {omega:.5f}i /s (fit residual {res:.1e} rad) against Meijaard's at the forward speed "
              f"reached, {speed:.5f} m/s: {at_speed.real:.5f} ± {at_speed.imag:.5f}i (at 4.6 m/s {weave.real:.5f} ± "
              f"{weave.imag:.5f}i)", flush=True)
        if a.save:
            np.savez(f"{a.save}_{method}.npz", t=t, q=q, v=np.asarray(tr.v), E=E)
    print(f"load average {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
