"""Does `import dalembert` change a user's process? Measured in one process, before and after.

A user's own float64 1000×1000 matrix product and a user's own 10⁶-step `lax.scan`, timed
interleaved before and after `import dalembert` (the same compiled functions, and freshly compiled
ones after), plus the environment variables, JAX device count and XLA_FLAGS. Target: ratio
after/before 1.00 ± 0.05. Run: `python benchmarks/import_side_effects.py` (writes
benchmarks/results/import_side_effects.md).
"""
import os
import statistics
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

REPEATS = 7


def user_programs():
    A = jnp.asarray(jax.random.normal(jax.random.PRNGKey(0), (1000, 1000), jnp.float64))
    matmul = jax.jit(lambda a: a @ a)

    def body(c, _):
        return c + 1e-6 * jnp.sin(c) * c[::-1], None
    scan = jax.jit(lambda x: lax.scan(body, x, None, length=1_000_000)[0])
    x = jnp.linspace(0.0, 1.0, 8)
    matmul(A).block_until_ready()
    scan(x).block_until_ready()
    return {"matmul 1000×1000 f64": lambda: matmul(A).block_until_ready(),
            "lax.scan 10⁶ steps": lambda: scan(x).block_until_ready()}


def best_times(progs):
    out = {}
    for name, f in progs.items():
        ts = []
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        out[name] = ts
    return out


def main():
    env0 = dict(os.environ)
    dev0 = len(jax.devices())
    progs = user_programs()
    before = best_times(progs)
    import dalembert  # noqa: F401
    changed = sorted(k for k in set(env0) | set(os.environ) if env0.get(k) != os.environ.get(k))
    dev1 = len(jax.devices())
    after = best_times(progs)
    fresh = best_times(user_programs())
    before2 = best_times(progs)          # interleaved: before, after, fresh, before again
    load = os.getloadavg()
    lines = ["# `import dalembert` and a user's own JAX programs", "",
             f"One process, {REPEATS} repeats each, times in ms (min / median / max); load average "
             f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; jax {jax.__version__}, {os.cpu_count()} cores.", "",
             f"- environment variables changed by the import: {changed or 'none'}",
             f"- jax.devices(): {dev0} before, {dev1} after; XLA_FLAGS: {os.environ.get('XLA_FLAGS', '(unset)')!r}",
             "", "| program | before | after (same compiled) | after (compiled anew) | ratio after/before (median) |",
             "|---|---|---|---|---|"]
    for name in before:
        b = before[name] + before2[name]
        fmt = lambda ts: f"{1e3 * min(ts):.2f} / {1e3 * statistics.median(ts):.2f} / {1e3 * max(ts):.2f}"  # noqa: E731
        ratio = statistics.median(after[name] + fresh[name]) / statistics.median(b)
        lines.append(f"| {name} | {fmt(b)} | {fmt(after[name])} | {fmt(fresh[name])} | {ratio:.3f} |")
    text = "\n".join(lines) + "\n"
    out = Path(__file__).parent / "results" / "import_side_effects.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
