"""The result of an ensemble: B trajectories of one system and method, integrated together."""
from __future__ import annotations

import numpy as np

from .npz import save_arrays
from .trajectory import Trajectory, trajectory


class Ensemble:
    """B trajectories of one system and method, integrated together.

    t : (N+1,) times.  Node arrays by name, each of shape (B, N+1, ...), as attributes
    (``ens.q``, ``ens.energy``, ...) and in ``ens.arrays``; ``metadata`` as for a Trajectory.
    status : (B,) "ok" or "failed" per member (see :func:`ensemble`'s ``on_failure``).
    """

    def __init__(self, t, arrays: dict, metadata: dict, status=None):
        self.t = t
        self.arrays = arrays
        self.metadata = metadata
        B = int(next(iter(arrays.values())).shape[0])
        self.status = np.full(B, "ok") if status is None else np.asarray(status, str)

    @property
    def failed(self) -> np.ndarray:
        """Indices of the members whose integration failed (``status != "ok"``); their step,
        time and cause are in ``metadata["failures"]``."""
        return np.flatnonzero(self.status != "ok")

    def save(self, path):
        """Write the ensemble to ``path`` (``.npz``, atomically): ``t``, the node arrays (B, N+1,
        ...), ``status`` and ``metadata`` (JSON); :func:`dalembert.load` reads it back."""
        return save_arrays(path, dict(self.arrays, t=self.t, status=self.status.astype("U")),
                           dict(self.metadata, ensemble=True))

    def __getattr__(self, name):
        arrays = self.__dict__.get("arrays", {})
        if name in arrays:
            return arrays[name]
        raise AttributeError(f"Ensemble has no array {name!r} (kept: {', '.join(arrays)})")

    def __len__(self):
        return int(next(iter(self.arrays.values())).shape[0])

    def __repr__(self):
        md = self.metadata
        return (f"Ensemble({md.get('system')}, {md.get('method')}, h={md.get('h')}, {len(self)} members, "
                f"{self.t.size} nodes, kept: {', '.join(self.arrays)})")

    @property
    def relative_energy_error(self):
        """(B, N+1): (E(t) − E(0)) / |E(0)| per member (needs ``energy`` kept)."""
        e = self.arrays["energy"]
        return (e - e[:, :1]) / np.maximum(np.abs(e[:, :1]), np.finfo(float).tiny)

    def plot(self):
        """A quick-look matplotlib Figure: every member's relative energy error and constraint
        residual against time (those kept), with the median."""
        from ..plots import ensemble_figure
        return ensemble_figure(self)

    def member(self, i: int) -> Trajectory:
        """Member i as a Trajectory (with the arrays that were kept)."""
        return trajectory(self.t, {k: v[i] for k, v in self.arrays.items()}, dict(self.metadata, member=i))
