"""Streaming output vs in-memory nodes (issue 14): integration wall time and peak RSS.

Each run is its own process (peak RSS is per process). Usage:
    python benchmarks/streaming.py compare [steps] [repeats]   # interleaved, save_every = 1
    python benchmarks/streaming.py long [steps] [save_every]   # one streamed run, RSS
"""
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def one(mode, steps, save_every, path):
    import numpy as np
    import dalembert as dl
    m = dl.models.get("chaplygin-sleigh")
    st = {k: np.asarray(v, float) for k, v in m.initial_state.items()}
    h = 1e-3
    t0 = time.perf_counter()
    tr = dl.integrate(m.system, "nh-rattle", h=h, t_final=steps * h, save_every=save_every, progress=False,
                      stream=path if mode == "stream" else None, **st)
    total = time.perf_counter() - t0
    print(json.dumps({"mode": mode, "steps": steps, "save_every": save_every, "nodes": len(tr),
                      "integration_s": tr.metadata["wall_time_s"], "call_s": total,
                      "compile_s": tr.metadata["compile_time_s"],
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "file_mb": os.path.getsize(path) / 2**20 if mode == "stream" else None,
                      "load": os.getloadavg()[0]}))


def spawn(mode, steps, save_every):
    with tempfile.TemporaryDirectory(dir=os.environ.get("STREAM_DIR")) as d:
        r = subprocess.run([sys.executable, __file__, "one", mode, str(steps), str(save_every), f"{d}/run.h5"],
                           capture_output=True, text=True, check=True)
    rec = json.loads(r.stdout.strip().splitlines()[-1])
    print(json.dumps(rec), flush=True)
    return rec


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "one":
        one(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    elif what == "compare":
        steps, reps = int(sys.argv[2]) if len(sys.argv) > 2 else 10**7, int(sys.argv[3]) if len(sys.argv) > 3 else 3
        res = {"memory": [], "stream": []}
        for _ in range(reps):
            for mode in ("memory", "stream"):
                res[mode].append(spawn(mode, steps, 1))
        ratios = sorted(s["integration_s"] / m["integration_s"] for m, s in zip(res["memory"], res["stream"]))
        print(json.dumps({"stream_over_memory_integration": ratios,
                          "peak_rss_mb": {k: [r["peak_rss_mb"] for r in v] for k, v in res.items()}}))
    elif what == "long":
        steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10**8
        spawn("stream", steps, int(sys.argv[3]) if len(sys.argv) > 3 else 10)
