"""The result object of an integration, and its self-describing file format.

A :class:`Trajectory` holds the node arrays and a metadata dictionary (system, method and its
traits, h, parameters, solver statistics, versions). ``save`` writes one ``.npz`` whose arrays
are the fields below plus ``metadata`` (a JSON string): NumPy alone can read it back, no pickle.
"""
from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._io import atomic_path
from .errors import InputError

_ARRAYS = ("t", "q", "v", "p", "lam", "energy", "constraint_residual")
_RESERVED = set(_ARRAYS) | {"metadata"}


@dataclass
class Trajectory:
    """Nodes of an integration.

    t : (N+1,) times (s).
    q : (N+1, n) configurations (None for systems whose state is not (q, v); see ``extra``).
    v : (N+1, n) constraint-consistent velocities (the method's choice: ``metadata['node_velocity']``).
    p : (N+1, n) momenta reported with v (G(q) v for most methods).
    lam : (N+1, m) multipliers (Lagrange–d'Alembert sign), or None where the method has none.
    energy : (N+1,) E = ½ vᵀG(q)v + V(q) (J).
    constraint_residual : (N+1, m) μ(q) v − ν(q).
    metadata : dict (JSON-serialisable).
    extra : {name: (N+1, ...) array} further node arrays of systems whose state is not (q, v)
        (e.g. ``R`` and ``omega`` on SO(3)); each is also an attribute (``traj.R``).
    """

    t: np.ndarray
    q: np.ndarray | None = None
    v: np.ndarray | None = None
    p: np.ndarray | None = None
    lam: np.ndarray | None = None
    energy: np.ndarray | None = None
    constraint_residual: np.ndarray | None = None
    metadata: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

    def __getattr__(self, name):
        extra = self.__dict__.get("extra", {})
        if name in extra:
            return extra[name]
        raise AttributeError(f"Trajectory has no field {name!r} (fields: {', '.join(self.fields())})")

    def fields(self) -> list:
        """Names of the node arrays present."""
        return [k for k in _ARRAYS if getattr(self, k) is not None] + list(self.extra)

    def __len__(self):
        return int(self.t.shape[0])

    def __repr__(self):
        md = self.metadata
        return (f"Trajectory({md.get('system', '?')}, {md.get('method', '?')}, h={md.get('h')}, "
                f"{len(self)} nodes, t ∈ [{self.t[0]:g}, {self.t[-1]:g}])")

    @property
    def relative_energy_error(self) -> np.ndarray:
        """(N+1,) (E(t) − E(0)) / max(|E(0)|, tiny)."""
        e0 = self.energy[0]
        return (self.energy - e0) / max(abs(e0), np.finfo(float).tiny)

    @property
    def max_relative_energy_error(self) -> float:
        return float(np.max(np.abs(self.relative_energy_error)))

    @property
    def max_constraint_residual(self) -> float:
        return float(np.max(np.abs(self.constraint_residual)))

    def save(self, path) -> Path:
        """Write ``path`` (``.npz`` appended if missing) atomically: a process killed while it
        writes leaves the previous file (or none), never a truncated one. Returns the path."""
        arrays = {k: np.asarray(getattr(self, k)) for k in _ARRAYS if getattr(self, k) is not None}
        for k, a in self.extra.items():
            if k in _RESERVED:
                raise InputError(f"extra array name {k!r} clashes with a standard field")
            arrays[k] = np.asarray(a)
        return save_arrays(path, arrays, self.metadata)


def save_arrays(path, arrays: dict, metadata: dict) -> Path:
    """Write named arrays and a JSON metadata object to ``path`` (``.npz`` appended if missing),
    atomically. Returns the path written."""
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_suffix(path.suffix + ".npz") if path.suffix else path.with_suffix(".npz")
    md = np.array(json.dumps(metadata, default=_json_default))
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, metadata=md, **arrays)
    return path


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON-serialisable: {type(o).__name__}")


def load(path):
    """Read a file written by :meth:`Trajectory.save` (a Trajectory) or
    :meth:`dalembert.Ensemble.save` (an Ensemble).

    Checks that it is a complete ``.npz`` with ``t`` (1-D), ``metadata`` (a JSON object) and node
    arrays whose node axis (the leading one; for an ensemble the second, after the B members) has
    the length of ``t``.

    Raises
    ------
    InputError if the file is missing, truncated or damaged, or is not a dalembert trajectory.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"no such file: {path}")
    bad = f"{path} is not a dalembert trajectory file"
    try:
        z = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"{bad} (not a readable .npz, truncated or damaged: {exc})") from None
    if not hasattr(z, "files"):  # a plain .npy array
        raise InputError(f"{bad} (a single array, not an .npz)")
    try:
        with z:
            if "metadata" not in z or "t" not in z:
                raise InputError(f"{bad} (no 't'/'metadata')")
            md = json.loads(str(z["metadata"]))
            kw = {k: np.array(z[k]) for k in _ARRAYS if k in z}
            extra = {k: np.array(z[k]) for k in z.files if k not in _RESERVED}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise InputError(f"{bad} (an array or the metadata cannot be read, truncated or damaged: "
                         f"{exc})") from None
    if not isinstance(md, dict):
        raise InputError(f"{bad} (metadata is not a JSON object)")
    t = kw.pop("t")
    if t.ndim != 1 or t.dtype.kind != "f":
        raise InputError(f"{bad} (t must be a 1-D float array; got shape {t.shape}, dtype {t.dtype})")
    members = md.get("ensemble") is True
    status = extra.pop("status", None) if members else None
    ax = 1 if members else 0
    arrays = dict(kw, **extra)
    for k, a in arrays.items():
        if a.ndim <= ax or a.shape[ax] != t.shape[0]:
            raise InputError(f"{bad} (array {k!r} has shape {a.shape}; its node axis ({ax}) must "
                             f"have the {t.shape[0]} nodes of t)")
    if members:
        from .engine.ensembles import Ensemble
        sizes = {a.shape[0] for a in arrays.values()}
        if not arrays or len(sizes) != 1 or (status is not None and status.shape != (sizes.pop(),)):
            raise InputError(f"{bad} (the ensemble's arrays and status disagree on the member count)")
        return Ensemble(t, arrays, md, status=status)
    return Trajectory(t=t, metadata=md, extra=extra, **kw)
