"""``dl.integrate`` of explicit steps with save_every = 1 and 10, two versions of dalembert side
by side (each in its own subprocess, interleaved, repeated): µs per step, the best of 5 runs
in each subprocess, and the ratio new/old per repeat (min / median / max).

    python benchmarks/node_output_versions.py OLD_SRC NEW_SRC [--repeats 5]

OLD_SRC / NEW_SRC: directories holding the ``dalembert`` package (e.g. ``git worktree add
/tmp/before <commit>`` then ``/tmp/before/src``).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r'''
import json, time
import dalembert as dl
dl.configure()
res = {}
for name, kw, N in [("gearbox", {}, 50000), ("vertical-rolling-disk", {}, 50000),
                    ("chaotic-quartic", {"n": 40}, 20000)]:
    m = dl.models.get(name, **kw); st = m.initial_state; h = 0.01
    for se in (1, 10):
        f = lambda: dl.integrate(m.system, "nh-rattle", h=h, t_final=N * h, save_every=se, progress=False, **st)
        f()
        best = 1e9
        for _ in range(5):
            t0 = time.perf_counter(); f(); best = min(best, time.perf_counter() - t0)
        res[f"{name} save_every={se}"] = best / N * 1e6
print(json.dumps(res))
'''


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    out = {"old": [], "new": []}
    load = os.getloadavg()
    for _ in range(a.repeats):
        for v, src in (("old", a.old), ("new", a.new)):
            p = subprocess.run([sys.executable, "-c", CHILD], env=dict(os.environ, PYTHONPATH=src),
                               capture_output=True, text=True, check=True)
            out[v].append(json.loads(p.stdout.strip().splitlines()[-1]))
    print(f"# nh-rattle through dl.integrate, µs per step (best of 5 per process); {a.repeats} interleaved "
          f"repeats; load {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after")
    for k in out["old"][0]:
        o, n = [x[k] for x in out["old"]], [x[k] for x in out["new"]]
        r = sorted(x / y for x, y in zip(n, o))
        print(f"{k:36s} old {min(o):.3f}  new {min(n):.3f}  new/old min/median/max "
              f"{r[0]:.2f}/{statistics.median(r):.2f}/{r[-1]:.2f}")


if __name__ == "__main__":
    main()
