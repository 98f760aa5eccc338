"""Fast by default (issue 37): per-step CPU time of ``dl.integrate`` without ``dl.configure()``
against with it, and against a previous version, in interleaved subprocesses; and what the
process-wide alternatives would cost a user's own program.

    python benchmarks/default_speed.py [--previous OLD_SRC] [--rounds 5] [--out FILE]

``steps``: the knife edge of the README (``nh-rattle``, 10⁶ steps), the gearbox (``nh-rattle``,
10⁶ steps) and the chaotic quartic n = 40 (``nh-rattle``, 2·10⁴ steps), each run with
``save_every = N`` (one node: the step's cost), µs of process CPU time per step (best of 3 runs
after the compiling one, in each subprocess). Variants: this version by default and configured,
and ``--previous`` (a directory holding an earlier ``dalembert`` package, e.g. ``git archive
<commit> src | tar -x -C /tmp/prev``) by default and configured. One subprocess per variant per
round, the variants in turn, ``--rounds`` rounds: min / median / max over the rounds. The final
configurations of every variant are compared bit for bit.

``candidates``: the other ways tried (issue 37): per-executable DebugOptions fields of this jaxlib
passed as ``compiler_options`` to dalembert's programs (none of them reaches the small-loop
threshold, a map entry; the shim of ``dalembert.engine.xla`` does), and ``lax.scan(...,
unroll=k)`` of the step loop of ``jit(dl.solve)`` without the small-loop threshold; one
subprocess each, interleaved over rounds, µs of CPU time per step (median).

``user``: a user's own float32 512×512 matmul and a 10⁶-step ``lax.scan``, with and without the
small-loop threshold in ``XLA_FLAGS`` (what setting it at import would do to them), in
interleaved subprocesses; and the same float32 program before and after ``import dalembert``
(``jnp.ones`` is float64 after the import: ``jax_enable_x64``), in one process.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

STEPS_CHILD = r'''
import json, sys, time
configure = sys.argv[1] == "configured"
import numpy as np
import dalembert as dl
if configure:
    dl.configure()
import jax.numpy as jnp

def knife():
    skate = dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, 0.2])),
        potential=lambda q: 9.81 * jnp.sin(0.3) * q[0],
        constraint_matrix=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]), name="skate")
    return skate, dict(q0=[0.0, 0.0, 0.0], v0=[1.0, 0.0, 1.0])

def model(name, **kw):
    m = dl.models.get(name, **kw)
    return m.system, dict(m.initial_state)

CASES = {"knife edge, nh-rattle": (knife, 1_000_000),
         "gearbox, nh-rattle": (lambda: model("gearbox"), 1_000_000),
         "quartic n = 40, nh-rattle": (lambda: model("chaotic-quartic", n=40), 20_000)}
out = {}
for name, (make, n) in CASES.items():
    s, st = make()
    run = lambda: dl.integrate(s, "nh-rattle", h=0.01, t_final=n * 0.01, save_every=n, progress=False, **st)
    tr = run()
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        tr = run()
        best = min(best, (time.process_time() - t0) / n)
    out[name] = {"us": 1e6 * best, "q": np.asarray(tr.q[-1]).tolist()}

# a user's own jax.jit around dl.solve: compiled by the user's jit, with JAX's options unless the
# user passes dalembert's (dalembert.engine.xla.compiler_options(), where it exists)
import jax
s, st = knife()
n = 1_000_000
state0 = (jnp.asarray(st["q0"]), jnp.asarray(st["v0"]))
opts = getattr(dl.engine.xla, "compiler_options", lambda: None)
jits = {"jit(dl.solve), knife edge": {},
        "jit(dl.solve, compiler_options=dalembert's), knife edge": opts() or {}}
for name, o in jits.items():
    f = jax.jit(lambda x0: dl.solve(s, "nh-rattle", x0, 0.01, n, save_every=n)["q"], compiler_options=o or None)
    q = f(state0).block_until_ready()
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        q = f(state0).block_until_ready()
        best = min(best, (time.process_time() - t0) / n)
    out[name] = {"us": 1e6 * best, "q": np.asarray(q[-1]).tolist()}
print("RESULT " + json.dumps(out))
'''

USER_CHILD = r'''
import json, sys, time
import jax, jax.numpy as jnp
from jax import lax
A = jax.random.normal(jax.random.PRNGKey(0), (512, 512), jnp.float32)
matmul = jax.jit(lambda a: a @ a)
def body(c, _):
    return c + 1e-6 * jnp.sin(c) * c[::-1], None
scan = jax.jit(lambda x: lax.scan(body, x, None, length=1_000_000)[0])
x = jnp.linspace(0.0, 1.0, 8, dtype=jnp.float32)
progs = {"matmul 512×512 float32": (lambda: matmul(A).block_until_ready(), 20),
         "lax.scan 10⁶ steps float32": (lambda: scan(x).block_until_ready(), 1)}
out = {}
for name, (f, k) in progs.items():
    f()
    best = float("inf")
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(k):
            f()
        best = min(best, (time.process_time() - t0) / k)
    out[name] = 1e3 * best
print("RESULT " + json.dumps(out))
'''

X64_CHILD = r'''
import json, time
import jax, jax.numpy as jnp
def timed():
    a = jnp.ones((512, 512)) * 0.5          # the user's default dtype
    f = jax.jit(lambda a: a @ a)
    f(a).block_until_ready()
    best = float("inf")
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(20):
            f(a).block_until_ready()
        best = min(best, (time.process_time() - t0) / 20)
    return 1e3 * best, str(a.dtype)
before = [timed() for _ in range(3)]
import dalembert  # noqa: F401
after = [timed() for _ in range(3)]
print("RESULT " + json.dumps({"before": before, "after": after}))
'''


CANDIDATE_CHILD = r'''
import json, sys, time
import numpy as np
import dalembert as dl
import dalembert.engine.xla as X
import jax, jax.numpy as jnp
from jax import lax
kind, arg = sys.argv[1], json.loads(sys.argv[2])
if kind == "options":                     # extra per-executable options, no small-loop threshold
    X.COMPILER_OPTIONS.update(arg)
    X.small_loop_option = lambda: {}
if kind == "unroll":
    from dalembert.engine import run as R
    def advance(step, carry, h, n, segment):
        one = lambda c, _: (step(c, h), None)
        return lax.scan(one, carry, None, length=n, unroll=arg)[0] if n > 1 else step(carry, h)
    R.advance = advance
skate = dl.NonholonomicSystem(
    mass_matrix=jnp.diag(jnp.array([1.0, 1.0, 0.2])), potential=lambda q: 9.81 * jnp.sin(0.3) * q[0],
    constraint_matrix=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]), name="skate")
g = dl.models.get("gearbox")
cases = {"knife edge": (skate, dict(q0=[0.0, 0.0, 0.0], v0=[1.0, 0.0, 1.0])),
         "gearbox": (g.system, dict(g.initial_state))}
n, out = 400_000, {}
for name, (s, st) in cases.items():
    if kind == "unroll":
        x0 = tuple(jnp.asarray(v) for v in st.values())
        f = jax.jit(lambda x0: dl.solve(s, "nh-rattle", x0, 0.01, n, save_every=n)["q"])
        run = lambda: f(x0).block_until_ready()
    else:
        run = lambda: dl.integrate(s, "nh-rattle", h=0.01, t_final=n * 0.01, save_every=n, progress=False, **st)
    run()
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        run()
        best = min(best, (time.process_time() - t0) / n)
    out[name] = 1e6 * best
print("RESULT " + json.dumps(out))
'''

#: per-executable DebugOptions fields of jaxlib 0.10 that compile_lowered accepts (checked by
#: passing a wrong value: "not a valid ... value", against "No such compile option" for
#: xla_cpu_use_thunk_runtime, xla_cpu_disable_loop_unrolling, xla_cpu_use_xla_runtime, ...)
CANDIDATE_OPTIONS = [
    {}, {"xla_cpu_use_fusion_emitters": False}, {"xla_cpu_enable_concurrency_optimized_scheduler": True},
    {"xla_cpu_opt_preset": "CPU_OPT_PRESET_FAST_RUNTIME"},
    {"xla_cpu_scheduler_type": "CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED"}, {"xla_cpu_multi_thread_eigen": False},
    {"xla_cpu_use_xnnpack": False, "xla_cpu_experimental_xnn_graph_fusion_mode": "XNN_GRAPH_FUSION_MODE_DISABLED"},
    {"xla_cpu_parallel_codegen_split_count": 1}, {"xla_cpu_copy_insertion_use_region_analysis": True}]


def candidates(rounds):
    runs = [("options", o) for o in CANDIDATE_OPTIONS] + [("unroll", k) for k in (1, 2, 4, 8, 16)] + \
        [("small-loop", None)]
    times = {}
    for _ in range(rounds):
        for kind, arg in runs:
            res = _child(CANDIDATE_CHILD, ["options" if kind == "small-loop" else kind, json.dumps(arg or {})
                                          if kind != "unroll" else str(arg)], src=SRC) \
                if kind != "small-loop" else _child(STEPS_CHILD.split("# a user's own")[0] + "\nprint('RESULT ' + json.dumps({k: v['us'] for k, v in out.items()}))", ["default"], src=SRC)
            times.setdefault((kind, json.dumps(arg)), []).append(res)
    med = lambda key, case: statistics.median(r[case] for r in times[key])  # noqa: E731
    base = ("options", json.dumps({}))
    lines = ["| candidate | knife edge µs/step | gearbox µs/step | ratio to JAX's defaults (knife, gearbox) |",
             "|---|---|---|---|"]
    for key in times:
        kind, arg = key
        if kind == "small-loop":
            k_, g_ = med(key, "knife edge, nh-rattle"), med(key, "gearbox, nh-rattle")
            label = "dl.integrate with the per-executable small-loop threshold (this version's default)"
            bk, bg = med(base, "knife edge"), med(base, "gearbox")
        else:
            k_, g_ = med(key, "knife edge"), med(key, "gearbox")
            if kind == "unroll":
                label = f"jit(dl.solve), lax.scan unroll = {arg}"
                ref = ("unroll", "1")
            else:
                label = f"dl.integrate, compiler_options {arg}" if arg != "{}" else "dl.integrate, JAX's defaults (YNNPACK fusions off only)"
                ref = base
            bk, bg = med(ref, "knife edge"), med(ref, "gearbox")
        lines.append(f"| {label} | {k_:.4f} | {g_:.4f} | {k_ / bk:.2f}, {g_ / bg:.2f} |")
    return "\n".join(lines)


def _child(script, args, env_extra=None, src=None):
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "NPROC", "DALEMBERT_XLA_SMALL_LOOPS")}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    env.update(env_extra or {})
    r = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def _fmt(ts):
    return f"{min(ts):.4g} / {statistics.median(ts):.4g} / {max(ts):.4g}"


def steps(previous, rounds):
    variants = {"this version, default": (SRC, "default"), "this version, dl.configure()": (SRC, "configured")}
    if previous:
        variants["previous, default"] = (previous, "default")
        variants["previous, dl.configure()"] = (previous, "configured")
    times, finals = {}, {}
    for _ in range(rounds):
        for v, (src, mode) in variants.items():
            res = _child(STEPS_CHILD, [mode], src=src)
            for case, r in res.items():
                times.setdefault(case, {}).setdefault(v, []).append(r["us"])
                finals.setdefault(case, {})[v] = r["q"]
    lines = ["| system | " + " | ".join(variants) + " | default / configured (median) |"
             + (" default / previous configured (median) |" if previous else ""),
             "|---" * (len(variants) + 2 + bool(previous)) + "|"]
    for case, by in times.items():
        med = {v: statistics.median(ts) for v, ts in by.items()}
        row = f"| {case} | " + " | ".join(_fmt(by[v]) for v in variants)
        row += f" | {med['this version, default'] / med['this version, dl.configure()']:.2f} |"
        if previous:
            row += f" {med['this version, default'] / med['previous, dl.configure()']:.2f} |"
        lines.append(row)
    lines.append("")
    for case, by in finals.items():
        ref = by["this version, dl.configure()"]
        same = {v: q == ref for v, q in by.items()}
        diff = {v: max(abs(a - b) for a, b in zip(q, ref)) for v, q in by.items()}
        lines.append(f"- {case}: final q bit-identical to this version configured: "
                     + ", ".join(f"{v} {'yes' if same[v] else f'no (max |Δq| = {diff[v]:.1e})'}" for v in by))
    return "\n".join(lines)


def user(rounds):
    flag = {"XLA_FLAGS": "--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=16777216"}
    times = {}
    for _ in range(rounds):
        for label, env in (("without the flag", {}), ("with the flag", flag)):
            for prog, ms in _child(USER_CHILD, [], env_extra=env).items():
                times.setdefault(prog, {}).setdefault(label, []).append(ms)
    lines = ["| user program (ms of CPU time) | without the flag | with the flag | ratio (median) |",
             "|---|---|---|---|"]
    for prog, by in times.items():
        a, b = by["without the flag"], by["with the flag"]
        lines.append(f"| {prog} | {_fmt(a)} | {_fmt(b)} | {statistics.median(b) / statistics.median(a):.3f} |")
    x = _child(X64_CHILD, [], src=SRC)
    b, a = [t for t, _ in x["before"]], [t for t, _ in x["after"]]
    lines += ["", f"- a user's `jnp.ones((512, 512))` matmul, one process: before `import dalembert` "
              f"{_fmt(b)} ms ({x['before'][0][1]}), after {_fmt(a)} ms ({x['after'][0][1]}): "
              f"×{statistics.median(a) / statistics.median(b):.2f}"]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--previous", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", choices=("steps", "user", "candidates"), default=None)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    import jax
    t0, load0 = time.time(), os.getloadavg()
    parts = [f"# Fast by default: dalembert's steps without dl.configure(), and a user's own programs",
             ""]
    body = []
    if a.only in (None, "steps"):
        body += ["## Per step (µs of CPU time, min / median / max over rounds)", "", steps(a.previous, a.rounds), ""]
    if a.only in (None, "candidates"):
        body += ["## Candidates (µs of CPU time per step, median over rounds)", "", candidates(a.rounds), ""]
    if a.only in (None, "user"):
        body += ["## A user's own programs", "", user(a.rounds), ""]
    load1 = os.getloadavg()
    parts.append(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(t0))}, {a.rounds} interleaved rounds, "
                 f"jax {jax.__version__}, {os.cpu_count()} cores; load average at the start "
                 f"{load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, at the end {load1[0]:.2f} {load1[1]:.2f} "
                 f"{load1[2]:.2f}; {time.time() - t0:.0f} s.")
    parts.append("")
    text = "\n".join(parts + body)
    print(text)
    if a.out:
        a.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
