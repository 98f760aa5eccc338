"""A user's system the model zoo does not have: a rolling disk that tilts, q = (x, y, φ, θ, ψ)
(contact point, heading, tilt from the vertical, spin), its metric G(q) from ``jax.hessian`` of
the kinetic energy and its two rolling constraints from ``jax.jacfwd`` of the contact point's
slip velocity (issue 13's compile-time case). Measures the compile time (first run) and a t = 20
run (≈ 20 turns of the heading) of ``dg-gonzalez`` through the automatic reduction, on the basis
the constraint rows allow ("auto": the x, y columns of μ are constant) and forced onto the atlas.

    python benchmarks/tilting_disk.py [--frames auto,atlas] [--method dg-gonzalez]
"""
from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import dalembert as dl

M, R, A, C, G = 1.0, 0.5, 0.0625, 0.125, 9.81     # mass, radius, inertias (diameter, axis), gravity


def _parts(q, v):
    """Centre velocity, angular velocity, disk axis and contact→centre direction."""
    phi, th = q[2], q[3]

    def centre(q):
        return jnp.stack([q[0] - R * jnp.sin(q[3]) * jnp.sin(q[2]),
                          q[1] + R * jnp.sin(q[3]) * jnp.cos(q[2]), R * jnp.cos(q[3])])
    cdot = jax.jvp(centre, (q,), (v,))[1]
    t = jnp.stack([jnp.cos(phi), jnp.sin(phi), 0.0 * phi])
    nh = jnp.stack([-jnp.sin(phi), jnp.cos(phi), 0.0 * phi])
    ez = jnp.array([0.0, 0.0, 1.0])
    d = jnp.sin(th) * nh + jnp.cos(th) * ez
    a = jnp.cos(th) * nh - jnp.sin(th) * ez
    return cdot, v[2] * ez + v[3] * t + v[4] * a, a, d


def kinetic(q, v):
    cdot, w, a, _ = _parts(q, v)
    Iw = A * (w - a * jnp.dot(a, w)) + C * a * jnp.dot(a, w)
    return 0.5 * M * jnp.dot(cdot, cdot) + 0.5 * jnp.dot(w, Iw)


def tilting_disk():
    def mass_matrix(q):
        return jax.hessian(kinetic, argnums=1)(q, jnp.zeros(5))

    def constraint_matrix(q):
        def slip(v):
            cdot, w, _, d = _parts(q, v)
            return (cdot + jnp.cross(w, -R * d))[:2]
        return jax.jacfwd(slip)(jnp.zeros(5))

    system = dl.NonholonomicSystem(mass_matrix=mass_matrix, constraint_matrix=constraint_matrix,
                                   potential=lambda q: M * G * R * jnp.cos(q[3]), name="tilting-disk")
    q0 = np.array([0.0, 0.0, 0.0, 0.2, 0.0])
    v0 = np.asarray(system.project_velocity(jnp.asarray(q0), jnp.array([0.0, 0.0, 1.5, 0.0, 4.0])))
    return system, q0, v0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", default="auto,atlas")
    ap.add_argument("--method", default="dg-gonzalez")
    a = ap.parse_args(argv)
    dl.configure()
    system, q0, v0 = tilting_disk()
    for frame in a.frames.split(","):
        red = dl.almost_poisson(system, q0, frame=frame)
        x0 = np.asarray(red.reduce(jnp.asarray(q0), jnp.asarray(v0)))
        t0 = time.perf_counter()
        compile_s = dl.integrate(red, a.method, x0=x0, h=0.01, t_final=0.1,
                                 progress=False).metadata["compile_time_s"]
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        tr = dl.integrate(red, a.method, x0=x0, h=0.01, t_final=20.0, progress=False)
        print(f"{frame:6s} atlas={red.atlas!s:5s} first run {first:6.1f} s (compile "
              f"{compile_s:.1f} s); t = 20 (2000 steps): {time.perf_counter() - t0:.2f} s, "
              f"energy {tr.max_relative_energy_error:.2e}, constraint {np.max(np.abs(tr.constraint_residual)):.2e}, "
              f"switches {tr.metadata.get('chart_switches', 0)}, tilt {tr.q[:, 3].min():.2f}…{tr.q[:, 3].max():.2f}, "
              f"turns {(tr.q[-1, 2] - tr.q[0, 2]) / (2 * np.pi):.1f}", flush=True)


if __name__ == "__main__":
    main()
