"""``lie-gni`` per step against the same scheme written directly as a jitted JAX function
(issue 37 item 4), on the tilting disk on R² × SO(3) (``tilting-disk-so3``: metric G̃(R) and
potential V(R) depend on the attitude; one Cayley step of the left-trivialised reduced GNI,
docs/theory/ferraro2015.md).

The hand-written step: the model's metric, potential and constraints written out here in
plain ``jax.numpy``; the reflection (P − Q)* by ``jnp.linalg.solve``; FL⁻ and FL⁺ of the
trapezoidal-in-R discrete Lagrangian by ``jax.grad`` (the left-trivialised gradient in R_k by
autodiff along R_k(I + η̂)); Newton in (x_{k+1}, ξ_k) with ``jax.jacfwd`` and ``jnp.linalg.solve``,
stopped when max|Δz| ≤ 1e-14 (1 + max|z|), in a ``lax.while_loop``; a ``lax.fori_loop`` of steps.
No checks, no node outputs. Both start from dalembert's consistent start-up state; the final
states are compared (agreement to round-off shows it is the same scheme).

Timed (CPU time, interleaved rounds; min / median / max of µs per step): the hand-written loop
(``jax.jit`` with JAX's options, and with dalembert's per-executable options), ``jit(dl.solve)``
with dalembert's options (``save_every = N``: one node), and ``dl.integrate`` (``save_every = N``).

    python benchmarks/lie_gni_handwritten.py [--steps 2000] [--repeats 5]
"""
from __future__ import annotations

import argparse

import numpy as np

from _report import cpu_step_table


def handwritten(m, r, g, rtol=1e-14, max_iter=40):
    """``step(x, R, p, h) -> (x, R, p, iterations)`` of the left-trivialised reduced GNI with the
    Cayley retraction on the tilting disk (parameters m, r, g), in plain JAX."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    I3 = jnp.eye(3)
    inertia = (m * r * r / 4.0) * jnp.diag(jnp.array([1.0, 2.0, 1.0]))

    def hat(w):
        return jnp.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])

    def height_and_gradient(R):
        k = R[2, :]
        s = jnp.sqrt(k[0] * k[0] + k[2] * k[2])
        return r * s, -(r * k[1] / s) * jnp.stack([k[2], 0.0 * k[1], -k[0]])

    def metric(x, R):
        _, dz = height_and_gradient(R)
        G = jnp.zeros((5, 5)).at[:2, :2].set(m * jnp.eye(2))
        return G.at[2:, 2:].set(inertia + m * jnp.outer(dz, dz))

    def potential(x, R):
        return m * g * height_and_gradient(R)[0]

    def constraints(x, R):
        a = R[:, 1]
        w = jnp.array([0.0, 0.0, 1.0]) - a[2] * a
        Lz = w / jnp.sqrt(jnp.sum(w * w))
        return jnp.concatenate([jnp.eye(2), r * (hat(Lz) @ R)[:2, :]], axis=1)

    def cay(w):
        W = hat(w)
        return I3 + (W + 0.5 * W @ W) / (1.0 + 0.25 * jnp.dot(w, w))

    def dcay_inv(w):
        return I3 - 0.5 * hat(w) + 0.25 * jnp.outer(w, w)

    def ell(x0, x1, R0, sigma, h):
        R1 = R0 @ cay(sigma)
        u = jnp.concatenate([(x1 - x0) / h, sigma / h])
        xm = 0.5 * (x0 + x1)
        return 0.25 * h * u @ ((metric(xm, R0) + metric(xm, R1)) @ u) - 0.5 * h * (potential(x0, R0) + potential(x1, R1))

    def fl_minus(x0, x1, R0, xi, h):
        d1, ds = jax.grad(ell, argnums=(0, 3))(x0, x1, R0, h * xi, h)
        dR = jax.grad(lambda eta: ell(x0, x1, R0 @ (I3 + hat(eta)), h * xi, h))(jnp.zeros(3))
        return jnp.concatenate([-d1, ds @ dcay_inv(h * xi) - dR])

    def fl_plus(x0, x1, R0, xi, h):
        d2, ds = jax.grad(ell, argnums=(1, 3))(x0, x1, R0, h * xi, h)
        return jnp.concatenate([d2, ds @ dcay_inv(-h * xi)])

    def step(x, R, p, h):
        G, mu = metric(x, R), constraints(x, R)
        Z = jnp.linalg.solve(G, mu.T)
        s = jnp.linalg.solve(mu @ Z, p @ Z)               # ν̃ = 0: linear constraints
        target = p - 2.0 * s @ mu
        u = jnp.linalg.solve(G, target)
        F = lambda z: fl_minus(x, z[:2], R, z[2:], h) - target       # noqa: E731

        def body(c):
            z, it, _ = c
            dz = jnp.linalg.solve(jax.jacfwd(F)(z), F(z))
            z = z - dz
            return z, it + 1, jnp.max(jnp.abs(dz)) <= rtol * (1.0 + jnp.max(jnp.abs(z)))

        z, it, _ = lax.while_loop(lambda c: (~c[2]) & (c[1] < max_iter), body,
                                  (jnp.concatenate([x + h * u[:2], u[2:]]), 0, False))
        x1, xi = z[:2], z[2:]
        return x1, R @ cay(h * xi), fl_plus(x, x1, R, xi, h), it
    return step


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--h", type=float, default=1e-3)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    import jax
    import jax.numpy as jnp
    from jax import lax
    import dalembert as dl
    from dalembert.engine.programs import bind
    from dalembert.engine.xla import compile_lowered

    model = dl.models.get("tilting-disk-so3")
    sysm, st, N, h = model.system, dict(model.initial_state), a.steps, a.h
    pars = {p.name: p.default for p in dl.models.available()["tilting-disk-so3"].parameters}
    names = tuple(sysm.state_names)
    x0s = tuple(jnp.asarray(st[k], jnp.float64) for k in names)
    b = bind(sysm, dl.methods.get("lie-gni"), tuple(np.asarray(x) for x in x0s), {})
    s0 = b.scheme.init(*b.convert(*x0s), h)
    step = handwritten(pars["m"], pars["r"], pars["g"])

    def hand(x, R, p, hh):
        def body(_, c):
            x, R, p, its = c
            x, R, p, it = step(x, R, p, hh)
            return x, R, p, its + it
        return lax.fori_loop(0, N, body, (x, R, p, 0))

    s0 = getattr(s0, "inner", s0)            # (the monitor's window around the method's state)
    args = (s0.x, s0.R, s0.p, jnp.float64(h))
    hand_default = jax.jit(hand).lower(*args).compile()
    hand_opts = compile_lowered(jax.jit(hand).lower(*args))
    solve_c = compile_lowered(jax.jit(lambda x0s, hh: dl.solve(sysm, "lie-gni", x0s, hh, N, save_every=N))
                              .lower(x0s, jnp.float64(h)))

    # the same scheme: the final states agree to round-off
    xh, Rh, ph, its = hand_opts(*args)
    out = solve_c(x0s, jnp.float64(h))
    diff = max(float(jnp.max(jnp.abs(xh - out["x"][-1]))), float(jnp.max(jnp.abs(Rh - out["R"][-1]))))
    tr = dl.integrate(sysm, "lie-gni", h=h, t_final=N * h, save_every=N, progress=False, **st)
    its_dl = tr.metadata["newton"]["total_iterations"]

    runs = {"hand-written, jax.jit (JAX's options)": lambda: jax.block_until_ready(hand_default(*args)),
            "hand-written, dalembert's options": lambda: jax.block_until_ready(hand_opts(*args)),
            "lie-gni, jit(dl.solve) (dalembert's options)": lambda: jax.block_until_ready(solve_c(x0s, jnp.float64(h))),
            "lie-gni, dl.integrate": lambda: dl.integrate(sysm, "lie-gni", h=h, t_final=N * h, save_every=N,
                                                          progress=False, **st)}
    med = cpu_step_table(runs, a.repeats, N, f"lie-gni against a hand-written JAX step: tilting-disk-so3 (R² × "
                                             f"SO(3), G̃(R), V(R)), {N} steps of h = {h}",
                         notes=[f"# final state: max |hand-written − dl.solve| = {diff:.1e}; Newton iterations "
                                f"hand-written {int(its)}, dalembert {its_dl}"], width=46)
    base = med["hand-written, dalembert's options"]
    for k in runs:
        print(f"{k} / hand-written (dalembert's options): {med[k] / base:.2f}")


if __name__ == "__main__":
    main()
