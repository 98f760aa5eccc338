"""Reading result files: :func:`load` tells the format (``.npz`` or HDF5) by the file's content
and returns the Trajectory or Ensemble it holds."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError
from .ensemble import Ensemble
from .hdf5 import is_hdf5, read_hdf5
from .npz import read_npz
from .trajectory import ARRAYS, RESERVED, Trajectory


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
    if is_hdf5(path):
        md, t, arrays = read_hdf5(path, lazy=lazy)
        return _assembled(path, md, t, arrays)
    md, arrays = read_npz(path)
    kw = {k: arrays[k] for k in ARRAYS if k in arrays}
    extra = {k: a for k, a in arrays.items() if k not in RESERVED}
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
        sizes = {a.shape[0] for a in arrays.values()}
        if not arrays or len(sizes) != 1 or (status is not None and status.shape != (sizes.pop(),)):
            raise InputError(f"{bad} (the ensemble's arrays and status disagree on the member count)")
        return Ensemble(t, arrays, md, status=status)
    std = {k: arrays.pop(k) for k in ARRAYS if k in arrays}
    return Trajectory(t=t, metadata=md, extra=arrays, **std)
