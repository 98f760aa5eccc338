"""Sweeps beyond one process: an ensemble split into tasks on a Dask cluster.

:func:`sweep` cuts the B members of an ensemble (initial states, and batched system parameters)
into tasks of ``members_per_task``; each task runs :func:`~dalembert.engine.ensembles.ensemble`
(one compiled, vmapped program) on a ``dask.distributed`` worker and writes its own result file,
atomically, under ``out/tasks/``. A task whose file is already there (from an earlier, stopped
run of the same sweep) is not run again, so a sweep whose worker dies (Dask reruns its tasks
elsewhere) or whose client is killed (run it again) finishes where it stopped. The task files
are then gathered into one :class:`~dalembert.results.ensemble.Ensemble`, saved as
``out/sweep.npz``.

A task ships data — the pickled system (or factory), its slice of initial states and parameters,
the method's name and options — never a compiled JAX object: each worker compiles once per
system (the unpickled system is kept per worker, so its tasks share the compiled program) and
the workers share JAX's persistent compilation cache in ``out/.jax-cache``.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path

import numpy as np

from .._io import atomic_write_text, check_writable_dir
from ..errors import InputError
from ..results.ensemble import Ensemble
from ..results.files import load
from .ensembles import ensemble
from .run import check_run, split_initial_state

#: Format tag of ``out/sweep.json``.
FORMAT = "dalembert-sweep/1"

_WORKER_SYSTEMS: dict = {}


def _dask():
    """dask.distributed (and cloudpickle, which comes with it), or a one-line InputError naming
    the extra that installs them."""
    try:
        import cloudpickle  # noqa: F401
        from dask import distributed
    except ImportError as exc:                         # an optional extra
        raise InputError(f"sweep needs dask.distributed, which is not installed ({exc}): pip install "
                         f"'dalembert[sweep]'") from None
    return distributed


def _system_on_worker(blob: bytes, key: str):
    """The system (or factory) of a sweep, unpickled once per worker process."""
    if key not in _WORKER_SYSTEMS:
        import cloudpickle
        _WORKER_SYSTEMS.clear()
        _WORKER_SYSTEMS[key] = cloudpickle.loads(blob)
    return _WORKER_SYSTEMS[key]


def _use_cache(cache_dir: str):
    import jax
    if jax.config.jax_compilation_cache_dir != cache_dir:
        jax.config.update("jax_compilation_cache_dir", cache_dir)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def run_task(blob: bytes, key: str, spec: dict, states: dict, params, path: str) -> dict:
    """One task of a sweep (runs on a worker): the ensemble of its members, saved to ``path``
    (atomically). Returns ``{"path", "members", "failed"}``. A pure function of its arguments."""
    _use_cache(spec["cache_dir"])
    system = _system_on_worker(blob, key)
    kw = dict(spec["options"], **states)
    if params is not None:
        kw["params"] = params
    ens = ensemble(system, spec["method"], h=spec["h"], t_final=spec["t_final"],
                   save_every=spec["save_every"], keep=spec["keep"], project=spec["project"],
                   progress=False, on_failure="keep", metadata={"sweep": key}, **kw)
    ens.save(path)
    return {"path": path, "members": len(ens), "failed": ens.failed.tolist()}


def _task_done(path: Path, key: str, members: int) -> bool:
    """Whether ``path`` holds the complete result of this sweep's task."""
    if not path.exists():
        return False
    try:
        ens = load(path)
    except InputError:
        return False
    return ens.metadata.get("sweep") == key and len(ens) == members


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else json.dumps(p, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def _client(client, workers):
    """(client, close): the given client, a client of the scheduler at an address, or a new
    LocalCluster of ``workers`` single-threaded worker processes (closed when the sweep ends)."""
    distributed = _dask()
    if isinstance(client, distributed.Client):
        return client, lambda: None
    if isinstance(client, str):
        c = distributed.Client(client)
        return c, c.close
    if client is not None:
        raise InputError(f"client must be a dask.distributed.Client, a scheduler address or None; got {client!r}")
    n = workers or max(1, min(os.cpu_count() or 1, 8))
    cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=40)
    c = distributed.Client(cluster)

    def close():
        c.close()
        cluster.close()
    return c, close


def sweep(system, method, *, out, h, t_final, save_every: int = 1, keep=None, params=None,
          project: bool = False, members_per_task: int | None = None, client=None,
          workers: int | None = None, progress: bool | None = None, retries: int = 3, **kwargs):
    """Integrate an ensemble as tasks on a Dask cluster; every task's result is kept on disk, so
    a stopped sweep resumes (module doc).

    Parameters
    ----------
    system, method, h, t_final, save_every, keep, params, project, **initial state and options :
        as for :func:`dalembert.ensemble` (``system`` a system, or with ``params`` a factory; it
        must pickle with cloudpickle: lambdas and closures do).
    out : directory of the sweep: ``sweep.json`` (what it computes), ``tasks/task-*.npz`` (one
        per task), ``sweep.npz`` (all members, when done). Running the same sweep with the same
        ``out`` again skips the tasks that are done; another sweep there is refused.
    members_per_task : members per task (default: B split into about 4 tasks per worker, at
        least 1 member each). A task is one compiled, vmapped ensemble.
    client : a ``dask.distributed.Client``, a scheduler address (``"tcp://host:8786"``, e.g. of a
        ``dask_jobqueue.SLURMCluster``; docs/sweeps.md), or None for a ``LocalCluster`` of
        ``workers`` processes (default: the CPU count, at most 8) on this machine.
    retries : how often Dask reruns a task whose worker died.

    Returns
    -------
    Ensemble of all B members, in order (``status``/``failed`` as for ``dl.ensemble``);
    ``metadata["sweep"]`` holds the tasks, the workers and the wall time.

    Raises
    ------
    InputError (as :func:`dalembert.ensemble`; ``out`` not writable or holding another sweep; a
    system that does not pickle; dask not installed), and the error of a task that failed for a
    reason other than a failed member (those are kept, as in ``dl.ensemble``).
    """
    _dask()                                           # not installed: refused before any work
    import cloudpickle

    h, t_final, save_every, meth = check_run(h, t_final, save_every, method)
    out = check_writable_dir(out, "out")
    names, states = split_initial_state(system if params is None else _probe(system, params), kwargs)
    states = {n: np.asarray(x, np.float64) for n, x in zip(names, states)}
    B = _members(states, params)
    try:
        blob = cloudpickle.dumps(system)
    except Exception as exc:                      # noqa: BLE001 - any pickling failure
        raise InputError(f"sweep: the system does not pickle, so it cannot be sent to workers ({exc})") from None
    c, close = _client(client, workers)
    try:
        n_workers = max(1, len(c.scheduler_info().get("workers", {})))
        spec = {"method": meth.name, "h": h, "t_final": t_final, "save_every": save_every,
                "keep": None if keep is None else sorted(keep), "project": project, "options": kwargs,
                "members": B, "cache_dir": str(Path(out).resolve() / ".jax-cache")}
        key = _digest(blob, {kk: v for kk, v in spec.items() if kk != "cache_dir"},
                      *[states[n].tobytes() for n in names], _params_bytes(params))
        k = _claim(out, key, spec, members_per_task or max(1, math.ceil(B / (4 * n_workers))),
                   members_per_task is not None)
        bounds = [(lo, min(B, lo + k)) for lo in range(0, B, k)]
        tasks_dir = Path(out) / "tasks"
        tasks_dir.mkdir(exist_ok=True)
        paths = [tasks_dir / f"task-{i:05d}-of-{len(bounds):05d}.npz" for i in range(len(bounds))]
        todo = [i for i, (lo, hi) in enumerate(bounds) if not _task_done(paths[i], key, hi - lo)]
        t0 = time.perf_counter()
        futures = [c.submit(run_task, blob, key, spec, _slice(states, *bounds[i]),
                            _slice_params(params, *bounds[i]), str(paths[i]), retries=retries,
                            key=f"dalembert-{key}-{_digest(str(Path(out).resolve()))}-{i}") for i in todo]
        _wait(futures, len(bounds), len(bounds) - len(todo), progress, meth.name, c)
        wall = time.perf_counter() - t0
    finally:
        close()
    parts = [load(p) for p in paths]
    arrays = {name: np.concatenate([p.arrays[name] for p in parts]) for name in parts[0].arrays}
    md = dict(parts[0].metadata)
    failures = {}
    for (lo, _), p in zip(bounds, parts):
        for i, f in p.metadata.get("failures", {}).items():
            failures[str(lo + int(i))] = f
    md.pop("failures", None)
    if failures:
        md["failures"] = failures
    md.update(members=B, sweep={"key": key, "tasks": len(bounds), "tasks_run": len(todo),
                                "members_per_task": k, "workers": n_workers, "wall_time_s": wall,
                                "out": str(out)})
    if params is not None:
        import jax
        md["params"] = jax.tree_util.tree_map(lambda a: np.asarray(a).tolist(), params)
    ens = Ensemble(parts[0].t, arrays, md, status=np.concatenate([p.status for p in parts]))
    ens.save(Path(out) / "sweep.npz")
    return ens


def _probe(factory, params):
    """The system of the first member of a parameter sweep (for its state names)."""
    import jax
    leaves = jax.tree_util.tree_leaves(params)
    if not leaves or np.ndim(leaves[0]) < 1:
        raise InputError("sweep(params=...): params must be a pytree of arrays with a leading member axis")
    return factory(jax.tree_util.tree_map(lambda a: np.asarray(a)[0], params))


def _members(states: dict, params) -> int:
    import jax
    sizes = {np.shape(x)[0] for x in states.values() if np.ndim(x) >= 2}
    sizes |= {np.shape(a)[0] for a in jax.tree_util.tree_leaves(params)} if params is not None else set()
    if len(sizes) != 1:
        raise InputError("sweep: the batched initial states (B, n) and parameters must share one leading "
                         f"size B; got sizes {sorted(sizes) or 'none (unbatched states)'}")
    B = sizes.pop()
    if B == 0:
        raise InputError("sweep: no members (B = 0)")
    return B


def _slice(states: dict, lo: int, hi: int) -> dict:
    return {n: (x[lo:hi] if x.ndim >= 2 else x) for n, x in states.items()}


def _slice_params(params, lo, hi):
    if params is None:
        return None
    import jax
    return jax.tree_util.tree_map(lambda a: np.asarray(a)[lo:hi], params)


def _params_bytes(params) -> bytes:
    if params is None:
        return b""
    import jax
    return b"".join(np.asarray(a).tobytes() for a in jax.tree_util.tree_leaves(params))


def _claim(out: Path, key: str, spec: dict, k: int, given: bool) -> int:
    """Write ``out/sweep.json`` for this sweep (with ``k`` members per task), or check that it
    is this sweep's; returns the members per task (an earlier run's, unless ``given``)."""
    path = Path(out) / "sweep.json"
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except (OSError, ValueError):
            old = {}
        if old.get("key") != key:
            raise InputError(f"{out} holds another sweep (key {old.get('key')}, this one {key}); use another "
                             f"out directory, or remove it to start over")
        if not given or old.get("members_per_task") == k:
            return int(old["members_per_task"])
        raise InputError(f"{out}: this sweep was started with members_per_task = {old['members_per_task']}; "
                         f"rerun it with that (or none) to continue it")
    atomic_write_text(path, json.dumps({"format": FORMAT, "key": key, "members_per_task": k, **spec},
                                       indent=2, default=str))
    return k


def _wait(futures, total, done, progress, label, client):
    """Wait for the tasks, with a progress bar over tasks (and the dashboard's address)."""
    from .progress import ProgressBar
    distributed = _dask()
    bar = ProgressBar(progress, total, {"system": f"sweep ({client.dashboard_link})", "method": label})
    t0 = time.perf_counter()
    for fut in distributed.as_completed(futures):
        fut.result()                                 # re-raises a task's error here
        done += 1
        bar.update(done, time.perf_counter() - t0)
    bar.close()
