"""A streamed, checkpointed run of the sleigh (see kill.sh): start, resume, or check against an uninterrupted run."""
import sys, numpy as np, dalembert as dl, math
m = dl.models.get("chaplygin-sleigh")
st = {k: np.asarray(v, float) for k, v in m.initial_state.items()}
d = sys.argv[1]
kw = dict(h=0.001, t_final=2000.0, save_every=1, **st)
if sys.argv[2] == "start":
    dl.integrate(m.system, "nh-rattle", chunk_steps=4096, checkpoint=f"{d}/ck.npz", checkpoint_every=0.0, stream=f"{d}/r.h5", **kw)
elif sys.argv[2] == "resume":
    dl.resume(f"{d}/ck.npz", system=m.system, checkpoint=False)
else:
    ref = dl.integrate(m.system, "nh-rattle", **kw)
    got = dl.load(f"{d}/r.h5", lazy=False)
    ok = all(np.array_equal(getattr(ref, k), getattr(got, k)) for k in ("t", "q", "v", "energy"))
    print("EQUAL" if ok else "DIFFERENT")
