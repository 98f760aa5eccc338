"""Gradients through the integrators (issue 16): agreement with finite differences for every
compiled method, and the cost and memory of a gradient against a forward run.

    python benchmarks/gradients.py table [--steps 200] [--methods a,b,...]
    python benchmarks/gradients.py cost [--steps 1000,10000,100000] [--repeats 5]

``table``: for every registered compiled method, on the first built-in model (and form) it
integrates (:func:`dalembert.verification.pairs`), the scalar f = Σ_i w_i a_i(t_N) of the final
node (a the model's fitted arrays: q, ω or (x, R); fixed weights w_i = sin(i + 1)) as a function
of each initial-state array that is not a group element (q0, v0; ω0; x0, ẋ0, ξ0): its derivative
along a random unit direction by reverse mode (``jax.grad``), by forward mode (``jax.jvp``) and by
central finite differences (step 1e-5), with ``dl.solve`` over ``--steps`` steps of the model's
default h, ``save_every = 10``. Relative differences |AD − FD| / |FD|.

``cost``: the gearbox with ``nh-rattle`` (explicit) and the Chaplygin sleigh with ``gni-midpoint``
(a Newton solve per step): wall time of a compiled forward run (``dl.solve``, final node only)
and of ``jax.value_and_grad`` of the same scalar with respect to (q0, v0), plain reverse mode
and checkpointed (``dl.solve(..., checkpoint=K)`` with K = ⌈√N⌉), interleaved and repeated
(min/median/max of the ratio); and the memory a gradient needs beyond the forward run (XLA's
memory analysis of the compiled programs: temporary buffers).
"""
from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np


def _scalar(out, names):
    import jax.numpy as jnp
    total = 0.0
    for a in names:
        x = jnp.ravel(out[a][-1])
        total = total + jnp.sum(jnp.sin(jnp.arange(x.size) + 1.0) * x)
    return total


def table(steps, only=None):
    import jax
    import jax.numpy as jnp
    import dalembert as dl
    from dalembert import verification as ver
    first = {}
    for m, model, form in ver.pairs():
        first.setdefault(m, (model, form))
    rows = []
    rng = np.random.default_rng(0)
    for method, (model_name, form) in first.items():
        if only and method not in only:
            continue
        model = dl.models.get(model_name)
        system = ver._forms(model)[form]
        state = dict(model.initial_state)
        if form == "almost-poisson":
            state = {"x0": np.asarray(system.reduce(model.q0, model.v0))}
        names = list(state)
        arrays = ver._order_arrays(model) if form == "system" else ("x",)
        h = model.default_h
        for var in names:
            if var == "R0":
                continue
            x0 = np.asarray(state[var], float)
            d = rng.standard_normal(x0.shape)
            d /= np.linalg.norm(d)

            def f(x, var=var):
                st = tuple(x if k == var else jnp.asarray(state[k]) for k in names)
                out = dl.solve(system, method, st, h, steps, save_every=10)
                return _scalar(out, arrays)
            t0 = time.perf_counter()
            try:
                fj = jax.jit(f)
                g = np.asarray(jax.jit(jax.grad(f))(x0))
                _, jv = jax.jit(lambda x: jax.jvp(f, (x,), (jnp.asarray(d),)))(x0)
                eps = 1e-5
                fd = (float(fj(x0 + eps * d)) - float(fj(x0 - eps * d))) / (2 * eps)
            except Exception as exc:                      # noqa: BLE001 (a table row says why)
                rows.append((method, model_name, form, var, None, None, f"{type(exc).__name__}: {exc}"[:120]))
                print(rows[-1], flush=True)
                continue
            rev = float(np.sum(g * d))
            scale = max(abs(fd), 1e-12)
            rows.append((method, model_name, form, var, abs(rev - fd) / scale, abs(float(jv) - fd) / scale,
                         f"{time.perf_counter() - t0:.1f} s"))
            print(f"{method:18s} {model_name:22s} {form:15s} {var:6s} reverse {rows[-1][4]:.1e} "
                  f"forward {rows[-1][5]:.1e}  ({rows[-1][6]})", flush=True)
    return rows


def _problem(name):
    import dalembert as dl
    if name == "gearbox":
        m = dl.models.get("gearbox")
        return m.system, "nh-rattle", m.initial_state, 0.1
    m = dl.models.get("chaplygin-sleigh")
    return m.system, "gni-midpoint", m.initial_state, 0.05


def _functions(name, steps, checkpoint):
    import jax
    import jax.numpy as jnp
    import dalembert as dl
    system, method, st, h = _problem(name)

    def f(q0, v0):
        out = dl.solve(system, method, (q0, v0), h, steps, save_every=steps, checkpoint=checkpoint)
        return _scalar(out, ("q",))
    fwd = jax.jit(f)
    grad = jax.jit(jax.value_and_grad(f, argnums=(0, 1)))
    args = (jnp.asarray(st["q0"]), jnp.asarray(st["v0"]))
    return fwd, grad, args


def _time(fn, args):
    import jax
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - t0


def cost(steps_list, repeats):
    rows = []
    for name in ("gearbox", "sleigh"):
        for steps in steps_list:
            k = math.ceil(math.sqrt(steps))
            fwd, grad, args = _functions(name, steps, None)
            _, grad_ck, _ = _functions(name, steps, k)
            for fn in (fwd, grad, grad_ck):
                _time(fn, args)                 # compile
            walls = {"forward": [], "grad": [], "grad_ck": []}
            for _ in range(repeats):
                for key, fn in (("forward", fwd), ("grad", grad), ("grad_ck", grad_ck)):
                    walls[key].append(_time(fn, args))
            r = np.array(walls["grad"]) / np.array(walls["forward"])
            rc = np.array(walls["grad_ck"]) / np.array(walls["forward"])
            mem = {ck: _memory(name, steps, ck) for ck in (None, k)}
            rows.append((name, steps, np.median(walls["forward"]), r, rc, k, mem))
            print(f"{name:8s} N = {steps:>7d}: forward {np.median(walls['forward']) * 1e3:8.2f} ms; gradient / "
                  f"forward {np.min(r):.2f} {np.median(r):.2f} {np.max(r):.2f} (min/median/max); "
                  f"checkpointed (K = {k}) {np.min(rc):.2f} {np.median(rc):.2f} {np.max(rc):.2f}; extra memory "
                  f"of a gradient: plain {mem[None] / 2**20:.1f} MiB, checkpointed {mem[k] / 2**20:.1f} MiB",
                  flush=True)
    return rows


def _memory(name, steps, checkpoint):
    """Temporary buffers (bytes) of the compiled gradient, as XLA's memory analysis reports them
    (what reverse mode keeps between the forward and the backward sweep), minus those of the
    compiled forward run."""
    fwd, grad, args = _functions(name, steps, checkpoint)
    size = lambda fn: fn.lower(*args).compile().memory_analysis().temp_size_in_bytes  # noqa: E731
    return size(grad) - size(fwd)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    t = sub.add_parser("table")
    t.add_argument("--steps", type=int, default=200)
    t.add_argument("--methods", default="")
    c = sub.add_parser("cost")
    c.add_argument("--steps", default="1000,10000,100000")
    c.add_argument("--repeats", type=int, default=5)
    c.add_argument("--configure", action="store_true",
                   help="call dl.configure() first (XLA:CPU small-loop kernels, as the CLI does)")
    a = ap.parse_args(argv)
    print(f"load average {os.getloadavg()}", flush=True)
    if a.what == "table":
        table(a.steps, set(filter(None, a.methods.split(","))))
    else:
        if a.configure:
            import dalembert as dl
            dl.configure()
        print(f"dl.configure(): {a.configure}", flush=True)
        cost([int(s) for s in a.steps.split(",")], a.repeats)
    print(f"load average {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
