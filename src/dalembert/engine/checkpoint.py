"""Checkpoints of single runs: everything a run needs to continue exactly where it stopped.

A checkpoint is one ``.npz`` (NumPy reads it without dalembert), written atomically
(:mod:`dalembert._io`: temporary file, fsync, rename), with

* ``checkpoint`` — a JSON object: the format tag, the run's metadata (system, method, options,
  h, n_steps, save_every, the initial state; ``model``/``parameters`` when the CLI ran a built-in
  model), ``nodes_done`` (saved nodes after node 0), ``steps_done``, the Newton statistics and
  the wall time so far;
* ``state/0``, ``state/1``, … — the leaves of the method's internal state (the pytree the
  compiled chunk carries: the current node, a two-step scheme's previous node, a chart's anchor,
  …), in ``jax.tree_util`` order;
* ``node/<name>`` — the node arrays saved so far (leading axis ``nodes_done + 1``).

Resuming (:func:`dalembert.resume`) rebuilds the same compiled program, restores the state
leaves into its state's tree structure and runs the remaining nodes with the same step function,
so the result equals the uninterrupted run's bit for bit.
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np

from .._io import atomic_path
from ..errors import InputError
from ..results.metadata import json_default

FORMAT = "dalembert-checkpoint/1"


def write(path, *, metadata: dict, state_leaves, nodes_done: int, steps_done: int, arrays: dict,
          newton: tuple = (0, 0), wall_time_s: float = 0.0) -> Path:
    """Write a checkpoint atomically; returns its path."""
    path = Path(path)
    spec = {"format": FORMAT, "metadata": metadata, "nodes_done": int(nodes_done),
            "steps_done": int(steps_done), "state_leaves": len(state_leaves),
            "newton": {"total_iterations": int(newton[0]), "max_iterations": int(newton[1])},
            "wall_time_s": float(wall_time_s)}
    payload = {f"state/{i}": np.asarray(a) for i, a in enumerate(state_leaves)}
    payload.update({f"node/{k}": np.asarray(a) for k, a in arrays.items()})
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, checkpoint=np.array(json.dumps(spec, default=json_default)), **payload)
    return path


def read(path) -> dict:
    """The checkpoint at ``path`` (a file, or a run directory holding ``checkpoint.npz``):
    ``{"metadata", "nodes_done", "steps_done", "state_leaves" (list of arrays), "arrays" (dict),
    "newton", "wall_time_s", "path"}``.

    Raises InputError: missing, unreadable or damaged, or not a dalembert checkpoint."""
    path = Path(path)
    if path.is_dir():
        path = path / "checkpoint.npz"
    if not path.exists():
        raise InputError(f"no checkpoint at {path}")
    bad = f"{path} is not a dalembert checkpoint"
    try:
        with np.load(path, allow_pickle=False) as z:
            spec = json.loads(str(z["checkpoint"]))
            leaves = [np.array(z[f"state/{i}"]) for i in range(int(spec["state_leaves"]))]
            arrays = {k[len("node/"):]: np.array(z[k]) for k in z.files if k.startswith("node/")}
    except (ValueError, OSError, EOFError, KeyError, TypeError, zipfile.BadZipFile) as exc:
        raise InputError(f"{bad} (unreadable, truncated or damaged: {exc})") from None
    if not isinstance(spec, dict) or spec.get("format") != FORMAT:
        raise InputError(f"{bad} (format {spec.get('format') if isinstance(spec, dict) else None!r}, "
                         f"expected {FORMAT!r})")
    n = spec["nodes_done"] + 1
    for k, a in arrays.items():
        if a.ndim == 0 or a.shape[0] != n:
            raise InputError(f"{bad} (node array {k!r} has {a.shape[0] if a.ndim else 0} nodes, "
                             f"expected {n})")
    return {"metadata": spec["metadata"], "nodes_done": int(spec["nodes_done"]),
            "steps_done": int(spec["steps_done"]), "state_leaves": leaves, "arrays": arrays,
            "newton": spec.get("newton", {}), "wall_time_s": float(spec.get("wall_time_s", 0.0)),
            "path": path}
