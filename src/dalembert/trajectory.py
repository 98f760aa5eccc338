"""The result object of an integration, and its self-describing file format.

A :class:`Trajectory` holds the node arrays and a metadata dictionary (system, method and its
traits, h, parameters, solver statistics, versions). ``save`` writes one ``.npz`` whose arrays
are the fields below plus ``metadata`` (a JSON string): NumPy alone can read it back, no pickle.
With an ``.h5`` suffix it writes the same arrays as HDF5 datasets (the format of streamed runs,
:mod:`dalembert.engine.stream`), the metadata in the root attribute ``metadata``.

A Trajectory read from an HDF5 file (a streamed run, or ``load(path)``) holds
:class:`~dalembert.engine.stream.DiskArray` s: index them to read (``traj.q[:]``, ``traj.energy[::100]``); its reductions
(``max_relative_energy_error``, ``max_constraint_residual``) read the file block by block.
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
        e0 = float(self.energy[0])
        return (np.asarray(self.energy) - e0) / max(abs(e0), np.finfo(float).tiny)

    @property
    def max_relative_energy_error(self) -> float:
        e0 = float(self.energy[0])
        return max_abs(self.energy, e0) / max(abs(e0), np.finfo(float).tiny)

    @property
    def max_constraint_residual(self) -> float:
        return max_abs(self.constraint_residual)

    def plot(self):
        """A quick-look matplotlib Figure: the state against time, the relative energy error and
        the constraint residual (long runs are strided to at most 5000 points per curve).
        ``dalembert run`` writes the model-aware figures with units (:mod:`dalembert.plots`)."""
        from .plots import trajectory_figure
        return trajectory_figure(self)

    def thinned(self, max_nodes: int, fields=None) -> "Trajectory":
        """An in-memory Trajectory of every k-th node (k the smallest that keeps at most
        ``max_nodes``; the last node is kept too), for plots and checks of very long runs;
        ``fields``: only these arrays (default all). ``metadata['thinned']`` = k."""
        k = max(1, -(-len(self) // max(1, max_nodes - 1)))
        if k == 1 and all(isinstance(a, np.ndarray) for a in self._arrays().values()):
            return self
        last = (len(self) - 1) % k != 0

        def take(a):
            body = strided(a, k)
            return np.concatenate([body, np.asarray(a[-1:])]) if last else body
        md = dict(self.metadata, thinned=k)
        if "save_every" in md:
            md["save_every"] = int(md["save_every"]) * k
        want = (lambda f: True) if fields is None else (lambda f: f == "t" or f in fields)
        std = {f: take(getattr(self, f)) for f in _ARRAYS if getattr(self, f) is not None and want(f)}
        return Trajectory(metadata=md, extra={n: take(a) for n, a in self.extra.items() if want(n)}, **std)

    def _arrays(self) -> dict:
        arrays = {k: getattr(self, k) for k in _ARRAYS if getattr(self, k) is not None}
        for k, a in self.extra.items():
            if k in _RESERVED:
                raise InputError(f"extra array name {k!r} clashes with a standard field")
            arrays[k] = a
        return arrays

    def save(self, path) -> Path:
        """Write ``path`` atomically: a process killed while it writes leaves the previous file
        (or none), never a truncated one. ``.h5``/``.hdf5``: HDF5 (module doc); otherwise
        ``.npz`` (appended if missing). Returns the path."""
        arrays = {k: np.asarray(a) for k, a in self._arrays().items()}
        if Path(path).suffix in (".h5", ".hdf5"):
            from .engine.stream import write_hdf5
            return write_hdf5(path, arrays, self.metadata)
        return save_arrays(path, arrays, self.metadata)


#: Rows per block when a reduction reads an on-disk array.
BLOCK_ROWS = 1 << 20


def strided(a, k: int) -> np.ndarray:
    """``a[::k]`` as a NumPy array; an on-disk array is read in contiguous blocks (h5py's own
    strided selection takes memory of the order of the whole span)."""
    if isinstance(a, np.ndarray) or k == 1:
        return np.asarray(a[::k])
    rows = k * max(1, (BLOCK_ROWS // 16) // k)
    return np.concatenate([np.asarray(a[i:i + rows])[::k].copy() for i in range(0, a.shape[0], rows)])


def max_abs(a, shift: float = 0.0) -> float:
    """max |a − shift| over an array or an on-disk array (read :data:`BLOCK_ROWS` rows at a time)."""
    if isinstance(a, np.ndarray):
        return float(np.max(np.abs(a - shift))) if a.size else 0.0
    return max((float(np.max(np.abs(np.asarray(a[i:i + BLOCK_ROWS]) - shift)))
                for i in range(0, a.shape[0], BLOCK_ROWS)), default=0.0)


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


def load(path, lazy: bool = True):
    """Read a file written by :meth:`Trajectory.save` (a Trajectory), :meth:`dalembert.Ensemble.save`
    (an Ensemble) or a streamed run (``integrate(..., stream=...)``, HDF5; the format is told by
    the file's content, not its name).

    ``lazy`` (HDF5 only): the node arrays are DiskArrays, read from the file when indexed
    (a streamed run can exceed memory); ``lazy=False`` reads them into memory.

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
    from .engine import stream
    if stream.is_hdf5(path):
        md, t, arrays = stream.read_hdf5(path, lazy=lazy)
        return _assembled(path, md, t, arrays)
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
    return _assembled(path, md, kw.pop("t"), dict(kw, **extra))


def _assembled(path, md, t, arrays):
    """The Trajectory or Ensemble of a file's metadata, times and node arrays, checked."""
    bad = f"{path} is not a dalembert trajectory file"
    if not isinstance(md, dict):
        raise InputError(f"{bad} (metadata is not a JSON object)")
    if t.ndim != 1 or t.dtype.kind != "f":
        raise InputError(f"{bad} (t must be a 1-D float array; got shape {t.shape}, dtype {t.dtype})")
    members = md.get("ensemble") is True
    status = arrays.pop("status", None) if members else None
    if status is not None:
        status = np.asarray(status).astype("U")
    ax = 1 if members else 0
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
    std = {k: arrays.pop(k) for k in _ARRAYS if k in arrays}
    return Trajectory(t=t, metadata=md, extra=arrays, **std)
