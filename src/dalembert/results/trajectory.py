"""The result object of an integration.

A :class:`Trajectory` holds the node arrays and a metadata dictionary (system, method and its
traits, h, parameters, solver statistics, versions). ``save`` writes one ``.npz`` whose arrays
are the fields below plus ``metadata`` (a JSON string, :mod:`~dalembert.results.npz`): NumPy
alone can read it back, no pickle. With an ``.h5`` suffix it writes the same arrays as HDF5
datasets (:mod:`~dalembert.results.hdf5`, the format of streamed runs), the metadata in the root
attribute ``metadata``.

A Trajectory read from an HDF5 file (a streamed run, or ``load(path)``) holds
:class:`~dalembert.results.hdf5.DiskArray` s: index them to read (``traj.q[:]``, ``traj.energy[::100]``); its reductions
(``max_relative_energy_error``, ``max_constraint_residual``) read the file block by block.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError
from .hdf5 import write_hdf5
from .npz import save_arrays

#: The standard node arrays of a Trajectory, in order.
ARRAYS = ("t", "q", "v", "p", "lam", "energy", "constraint_residual")
#: Names a node array in ``extra`` cannot take.
RESERVED = set(ARRAYS) | {"metadata"}


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
        return [k for k in ARRAYS if getattr(self, k) is not None] + list(self.extra)

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

    @property
    def max_holonomic_residual(self) -> float:
        """max |φ(q_k)| over the nodes (m, rad: the constraint's own units) of a system with
        configuration constraints (``holonomic_residual`` (N+1, k)); 0.0 without them."""
        a = self.extra.get("holonomic_residual")
        return 0.0 if a is None else max_abs(a)

    @property
    def energy_balance_residual(self):
        """(N+1,) E_k − E_0 − W_k for a run with a non-conservative force or explicit time
        (``work`` (N+1,): the force's work along the run, plus with V(q, t) or affine constraints
        the energy ∫(∂V/∂t + λᵀν) dt they supply, :mod:`dalembert.engine.forcing`); None
        without one. It replaces the energy error when forces act: a method with an exact
        discrete energy balance keeps it at round-off, the others at their order."""
        w = self.extra.get("work")
        if w is None or self.energy is None:
            return None
        e = np.asarray(self.energy)
        return e - e[0] - np.asarray(w)

    @property
    def max_energy_balance_residual(self) -> float | None:
        """max |E_k − E_0 − W_k| / max(|E_0|, max |W|) (dimensionless); None without a force."""
        r = self.energy_balance_residual
        if r is None:
            return None
        scale = max(abs(float(np.asarray(self.energy)[0])), float(np.max(np.abs(np.asarray(self.extra["work"])))),
                    np.finfo(float).tiny)
        return float(np.max(np.abs(r))) / scale

    @property
    def events(self) -> list:
        """The events of a run with ``events=[g, ...]`` (:mod:`dalembert.engine.dense`): one dict per
        event function, ``{"name", "terminal", "t": [times], <state array>: [states]}`` (e.g. "q",
        "v"); [] for a run without events. Kept in the metadata, so saved files carry them."""
        return list(self.metadata.get("events", []))

    def plot(self):
        """A quick-look matplotlib Figure: the state against time, the relative energy error and
        the constraint residual (long runs are strided to at most 5000 points per curve).
        ``dalembert run`` writes the model-aware figures with units (:mod:`dalembert.plots`)."""
        from ..plots import trajectory_figure
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
        std = {f: take(getattr(self, f)) for f in ARRAYS if getattr(self, f) is not None and want(f)}
        return Trajectory(metadata=md, extra={n: take(a) for n, a in self.extra.items() if want(n)}, **std)

    def _arrays(self) -> dict:
        arrays = {k: getattr(self, k) for k in ARRAYS if getattr(self, k) is not None}
        for k, a in self.extra.items():
            if k in RESERVED:
                raise InputError(f"extra array name {k!r} clashes with a standard field")
            arrays[k] = a
        return arrays

    def save(self, path) -> Path:
        """Write ``path`` atomically: a process killed while it writes leaves the previous file
        (or none), never a truncated one. ``.h5``/``.hdf5``: HDF5 (module doc); otherwise
        ``.npz`` (appended if missing). Returns the path."""
        arrays = {k: np.asarray(a) for k, a in self._arrays().items()}
        if Path(path).suffix in (".h5", ".hdf5"):
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


def trajectory(t, arrays: dict, md) -> Trajectory:
    """A Trajectory from named node arrays: standard names as fields, the rest as extra."""
    std = ("q", "v", "p", "lam", "energy", "constraint_residual")
    fields = {k: arrays.pop(k) for k in std if k in arrays}
    return Trajectory(t=t, metadata=md, extra=arrays, **fields)
