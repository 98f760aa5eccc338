"""One run each of the IFToMM bicycle's efficiency test (20 s of manoeuvre M2) for the given
method / h / options: the energy metric (%), CPU time of the time loop (``time.process_time``,
after a two-step run that compiles), the compile run's CPU, max |φ| (m), the rolling residual at
the nodes (m/s), Newton iterations per step and the load average. Options are JSON; the
experiment's options for the method (``iftomm_bicycle.OPTIONS``) are added to those given.

    python benchmarks/iftomm_symplectic_ladder.py 'nh-rattle-4:0.025:{"rtol":1e-13,"jacobian_reuse":6,"newton_estimate":true}' ...

(environment: T = run length in s, default 20; R = timed repeats, default 1). Output of
2026-12-08: benchmarks/results/iftomm_symplectic_ladder_2026-12-08.txt.
"""
import sys, os, time, json
import numpy as np
from dalembert.experiments import iftomm_bicycle as X
bike = X.bicycle()
T = float(os.environ.get("T", "20"))
out = []
for spec in sys.argv[1:]:
    parts = spec.split(":", 2)
    m, h = parts[0], float(parts[1])
    opts = json.loads(parts[2]) if len(parts) > 2 else {}
    c0 = time.process_time(); w0 = time.time()
    try:
        q0, v0 = bike.upright_state(*X.MANEUVERS["M2"])
        from dalembert.engine import integrate
        kw = dict(q0=q0, v0=v0, h=h, progress=False, **{**X.OPTIONS.get(m, {}), **opts})
        integrate(bike.system, m, t_final=2 * h, **kw)
        comp = time.process_time() - c0
        cpus = []
        for r in range(int(os.environ.get("R", "1"))):
            c1 = time.process_time()
            tr = integrate(bike.system, m, t_final=T, **kw)
            cpus.append(time.process_time() - c1)
    except Exception as e:
        print(f"{m} h={h} {opts} ERROR {type(e).__name__}: {str(e)[:300]}", flush=True); continue
    nw = tr.metadata.get("newton", {})
    print(f"{m} h={h} {opts} metric {X.energy_metric(tr.energy):.3e} % cpu {['%.3f'%c for c in cpus]} "
          f"first {comp:.1f}s phi {np.max(np.abs(tr.holonomic_residual)):.1e} roll {np.max(np.abs(tr.constraint_residual)):.1e} "
          f"it {nw.get('mean_iterations')} load {os.getloadavg()[0]:.1f}", flush=True)
