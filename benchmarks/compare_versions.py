"""Speed of two versions of dalembert side by side: steps/s of single runs and member-steps/s of
ensembles, each version in its own subprocess, interleaved and repeated (min / median / max).

    python benchmarks/compare_versions.py OLD_SRC NEW_SRC [--repeats 3] [--out FILE] [--only CASE]...

OLD_SRC / NEW_SRC: directories holding the ``dalembert`` package (e.g. a ``git worktree`` of an
earlier commit: ``git worktree add /tmp/before <commit>`` then ``/tmp/before/src``). A version
that has ``dalembert.configure`` is configured (the CLI's settings); an older one configured
itself at import. Times are after compilation (``metadata['steps_per_second']``, the best of
three runs in each subprocess).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = r'''
import json, sys, time
import numpy as np
import dalembert as dl
if hasattr(dl, "configure"):
    dl.configure()
import jax.numpy as jnp
from dalembert.models.chaotic_quartic import initial_state

def single(model, method, h, steps, form="system", **params):
    m = dl.models.get(model, **params)
    if form == "almost-poisson":
        ap = m.almost_poisson
        kw = {"x0": np.asarray(ap.reduce(jnp.asarray(m.q0), jnp.asarray(m.v0)))}
        sys_ = ap
    else:
        sys_, kw = m.system, dict(m.initial_state)
    best = 0.0
    for _ in range(4):                               # the first run compiles
        tr = dl.integrate(sys_, method, h=h, t_final=steps * h, progress=False, **kw)
        best = max(best, tr.metadata["steps_per_second"])
    return best

def ens(method, B, steps, form="system"):
    m = dl.models.get("chaotic-quartic", n=3)
    rng = np.random.default_rng(1)
    qs, vs = [], []
    for i in range(B):
        q0, v0 = initial_state(3, 0.7 + 0.001 * i) if callable(initial_state) else (m.q0, m.v0)
        qs.append(q0); vs.append(v0)
    qs, vs = np.stack(qs), np.stack(vs)
    if form == "almost-poisson":
        ap = m.almost_poisson
        x0 = np.stack([np.asarray(ap.reduce(jnp.asarray(q), jnp.asarray(v))) for q, v in zip(qs, vs)])
        run = lambda: dl.ensemble(ap, method, x0=x0, h=0.1, t_final=steps * 0.1, keep=["energy"], progress=False)
    else:
        run = lambda: dl.ensemble(m.system, method, q0=qs, v0=vs, h=0.1, t_final=steps * 0.1, keep=["energy"], progress=False)
    run()
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter(); e = run(); best = min(best, e.metadata["wall_time_s"])
    return B * steps / best

CASES = [
    ("gearbox nh-rattle", lambda: single("gearbox", "nh-rattle", 0.1, 200000)),
    ("gearbox gni-euler-a", lambda: single("gearbox", "gni-euler-a", 0.1, 50000)),
    ("gearbox gni-midpoint", lambda: single("gearbox", "gni-midpoint", 0.1, 50000)),
    ("gearbox dla-midpoint", lambda: single("gearbox", "dla-midpoint", 0.1, 50000)),
    ("quartic nh-rattle", lambda: single("chaotic-quartic", "nh-rattle", 0.01, 200000, n=3)),
    ("quartic gni-midpoint", lambda: single("chaotic-quartic", "gni-midpoint", 0.01, 50000, n=3)),
    ("quartic si-dla", lambda: single("chaotic-quartic", "si-dla", 0.1, 100000, n=3)),
    ("quartic i-dla", lambda: single("chaotic-quartic", "i-dla", 0.1, 20000, n=3)),
    ("quartic spark-lobatto2", lambda: single("chaotic-quartic", "spark-lobatto2", 0.1, 100000, n=3)),
    ("quartic dg-gonzalez (AP form)", lambda: single("chaotic-quartic", "dg-gonzalez", 0.1, 20000, "almost-poisson", n=3)),
    ("suslov eps-midpoint", lambda: single("suslov", "eps-midpoint", 0.01, 50000)),
    ("suslov dreps-rk4", lambda: single("suslov", "dreps-rk4", 0.01, 50000)),
    ("rolling-ball lie-gni", lambda: single("rolling-ball", "lie-gni", 0.01, 50000)),
    ("ensemble B=200 si-dla", lambda: ens("si-dla", 200, 2000)),
    ("ensemble B=200 dg-gonzalez (AP form)", lambda: ens("dg-gonzalez", 200, 200, "almost-poisson")),
]
only = sys.argv[1:]
out = {}
for name, f in CASES:
    if only and name not in only:
        continue
    out[name] = f()
print(json.dumps(out))
'''


def run_child(src, only=()):
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "NPROC")}
    env["PYTHONPATH"] = src
    p = subprocess.run([sys.executable, "-c", CHILD, *only], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"child failed ({src}): {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", action="append", default=[], help="run only this case (repeatable)")
    a = ap.parse_args(argv)
    res = {"old": [], "new": []}
    t0 = time.time()
    for i in range(a.repeats):
        for which in (("old", "new") if i % 2 == 0 else ("new", "old")):
            res[which].append(run_child(getattr(a, which), a.only))
            print(f"[{time.time() - t0:6.0f} s] {which} run {len(res[which])} done", file=sys.stderr, flush=True)
    load = os.getloadavg()
    lines = [f"Interleaved runs ({a.repeats} per version), each the best of 3 timed runs after compilation; "
             f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} cores.", "",
             "| case | old: steps/s (min / median / max) | new: steps/s (min / median / max) | new/old (median) |",
             "|---|---|---|---|"]
    for name in res["old"][0]:
        o = [r[name] for r in res["old"]]
        n = [r[name] for r in res["new"]]
        f = lambda v: f"{min(v):.3g} / {statistics.median(v):.3g} / {max(v):.3g}"  # noqa: E731
        lines.append(f"| {name} | {f(o)} | {f(n)} | {statistics.median(n) / statistics.median(o):.3f} |")
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
