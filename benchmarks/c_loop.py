"""nh-rattle against a C loop of the same step (issue 15: target ≤ 2×), on the gearbox.

    python benchmarks/c_loop.py [--steps 10000000] [--repeats 5]

Builds benchmarks/c_loop/gearbox_nh_rattle.c with the system's C compiler (``cc -O2``; skipped
with a message when there is none), plain and with Kahan summation (``-DCOMPENSATED``, what
dalembert does by default), and times, interleaved and repeated, one run of N steps of each:
the two C loops, ``dl.integrate(gearbox, "nh-rattle", save_every=N)`` (the engine: checks of
every step, chunks, the Trajectory) and the compiled program ``jit(dl.solve)`` alone. Prints
µs/step (min) and the ratios to the C loop with the same summation (min/median/max over the
repeats). The C loop's start-up momentum is p₀ (dalembert's differs by O(h)); the final q of the
runs agree to the method's start-up difference, which is printed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent / "c_loop"


def build():
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        return None
    out = Path(tempfile.mkdtemp(prefix="dalembert-c-loop-"))
    exes = {}
    for label, flags in (("plain", []), ("compensated", ["-DCOMPENSATED"])):
        exe = out / f"rattle_{label}"
        subprocess.run([cc, "-O2", *flags, "-o", str(exe), str(HERE / "gearbox_nh_rattle.c"), "-lm"], check=True)
        exes[label] = exe
    return exes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=10_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    exes = build()
    if exes is None:
        print("no C compiler found (cc, gcc, clang): nothing to compare with")
        return
    from dalembert.engine.xla import compile_lowered, configure
    configure()
    import jax
    import jax.numpy as jnp
    import dalembert as dl

    N, h = a.steps, 1e-3
    g = dl.models.get("gearbox")
    st = g.initial_state
    runs = {}
    for label, exe in exes.items():
        runs[f"C {label}"] = lambda exe=exe: float(subprocess.run([str(exe), str(N), str(h)], check=True,
                                                                  capture_output=True, text=True).stdout.split()[0])
    for comp in (False, True):
        def integ(comp=comp):
            t0 = time.perf_counter()
            dl.integrate(g.system, "nh-rattle", h=h, t_final=N * h, save_every=N, progress=False,
                         compensated=comp, **st)
            return time.perf_counter() - t0
        solver = compile_lowered(jax.jit(lambda q0, v0, comp=comp: dl.solve(
            g.system, "nh-rattle", (q0, v0), h, N, save_every=N, compensated=comp)).lower(
                jnp.asarray(st["q0"]), jnp.asarray(st["v0"])))

        def solve(solver=solver):
            t0 = time.perf_counter()
            jax.block_until_ready(solver(jnp.asarray(st["q0"]), jnp.asarray(st["v0"])))
            return time.perf_counter() - t0
        tag = "compensated" if comp else "plain"
        runs[f"dl.integrate {tag}"] = integ
        runs[f"jit(dl.solve) {tag}"] = solve
    for f in runs.values():
        f()
    walls = {k: [] for k in runs}
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; {N} steps, h = {h}")
    for _ in range(a.repeats):
        for k, f in runs.items():
            walls[k].append(f())
    for k, w in walls.items():
        w = np.asarray(w)
        tag = "compensated" if k.endswith("compensated") else "plain"
        r = w / np.asarray(walls[f"C {tag}"])
        print(f"{k:28s} {1e6 * w.min() / N:7.4f} µs/step; ratio to C {tag} min/median/max "
              f"{r.min():.2f}/{np.median(r):.2f}/{r.max():.2f}")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
