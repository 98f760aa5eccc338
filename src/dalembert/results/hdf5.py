"""The HDF5 result format (through h5py): a dataset per node array (``t``, ``q``, ``v``, …,
leading axis the nodes), the format tag in the root attribute ``format``, the metadata as a JSON
string in the root attribute ``metadata`` and the node count in ``nodes``. It is the layout of
:meth:`dalembert.Trajectory.save` with an ``.h5`` suffix and of streamed runs
(:mod:`dalembert.engine.stream`, which appends to a file made by :func:`new_file`).

Why HDF5 and not zarr: the users of the field read HDF5 from every language they work in (h5py,
MATLAB's ``h5read``, Julia's HDF5.jl — GeometricIntegrators.jl's own solution files are HDF5 —,
C, Fortran, ParaView) and it is one file that moves and archives as one; zarr is a directory of
chunk files that MATLAB does not read.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .._io import atomic_path
from ..errors import InputError
from .metadata import parse_json, to_json

#: Format tag of a dalembert HDF5 trajectory (root attribute ``format``).
FORMAT = "dalembert-trajectory/1"
#: Target bytes per HDF5 chunk of a node array (rows × row size).
CHUNK_BYTES = 1 << 18


def h5py_module():
    """The h5py module.

    Raises InputError when h5py is not installed."""
    try:
        import h5py
    except ImportError:                                # pragma: no cover - a dependency
        raise InputError("streaming output needs h5py (pip install h5py)") from None
    return h5py


def new_file(path: Path, first: dict, metadata: dict, attrs=None):
    """A new HDF5 trajectory file at ``path`` (HDF5 ≥ 1.10 format, for SWMR) with a resizable
    dataset per array of ``first`` (leading node axis), holding ``first``; open for writing.
    ``attrs``: the root attributes (default: the format tag and ``metadata``)."""
    f = h5py_module().File(path, "w", libver="latest")
    for k, v in (attrs or {"format": FORMAT, "metadata": to_json(metadata)}).items():
        f.attrs[k] = v
    for name, a in first.items():
        row = a.shape[1:]
        rows = max(1, CHUNK_BYTES // max(1, a.dtype.itemsize * int(np.prod(row, dtype=np.int64))))
        ds = f.create_dataset(name, shape=(len(a),) + row, maxshape=(None,) + row,
                              chunks=(rows,) + row, dtype=a.dtype)
        ds[:] = a
    return f


def write_final_metadata(path, metadata: dict, nodes: int):
    """Set the root attributes ``metadata`` and ``nodes`` of the closed HDF5 trajectory file at
    ``path`` (flushed and synced to disk)."""
    with h5py_module().File(path, "r+") as f:     # (attributes cannot change under SWMR)
        f.attrs["metadata"] = to_json(metadata)
        f.attrs["nodes"] = nodes
        f.flush()
        os.fsync(f.id.get_vfd_handle())


def is_hdf5(path) -> bool:
    """Whether ``path`` starts with the HDF5 signature."""
    try:
        with open(path, "rb") as f:
            return f.read(8) == b"\x89HDF\r\n\x1a\n"
    except OSError:
        return False


def truncation(path) -> str | None:
    """Why the HDF5 file at ``path`` is visibly truncated or not HDF5 (None when it is not):
    read from its superblock (versions 2 and 3, which HDF5 ≥ 1.10 writes) in microseconds, before
    HDF5 opens it. An SWMR reader does not check this itself: it retries each unreadable
    metadata block (about 400 s on a truncated 2 MB stream file), so a damaged file must be
    recognised first."""
    import struct
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(48)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if head[:8] != b"\x89HDF\r\n\x1a\n":
        return "not an HDF5 file (no HDF5 signature)"
    if len(head) < 12:
        return f"truncated ({size} bytes)"
    version, offsets = head[8], head[9]
    if version not in (2, 3) or offsets != 8:
        return None                                 # (an older layout: HDF5 checks it itself)
    if len(head) < 12 + 4 * 8:
        return f"truncated ({size} bytes)"
    base, _, eof = struct.unpack_from("<QQQ", head, 12)
    if base + eof > size:
        return f"truncated: {size:,} bytes of the {base + eof:,} its superblock records"
    return None


def write_hdf5(path, arrays: dict, metadata: dict) -> Path:
    """Write named arrays (``t`` among them) and metadata to an HDF5 file atomically."""
    h5py = h5py_module()
    path = Path(path)
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            f.attrs["format"] = FORMAT
            f.attrs["metadata"] = to_json(metadata)
            for k, a in arrays.items():
                f.create_dataset(k, data=np.asarray(a))
            f.attrs["nodes"] = len(arrays["t"])
    return path


class DiskArray:
    """A node array in an HDF5 file, read when indexed (``a[:]``, ``a[::100]``, ``a[-1]``,
    ``np.asarray(a)``). Each read opens and closes the file, so no handle stays open: the file
    can be resumed, renamed or rewritten while trajectories that read it are alive."""

    def __init__(self, path, name: str, shape: tuple, dtype):
        self.path, self.name, self.shape, self.dtype = Path(path), name, tuple(shape), np.dtype(dtype)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, index):
        with h5py_module().File(self.path, "r") as f:
            return plain_dataset(f, self.name, self.path)[index]

    def __array__(self, dtype=None, copy=None):
        a = self[()]
        return a if dtype is None else a.astype(dtype)

    def __repr__(self):
        return f"DiskArray({str(self.path)!r}, {self.name!r}, shape={self.shape}, dtype={self.dtype})"


def plain_dataset(f, name: str, path):
    """The dataset ``name`` of the open HDF5 file ``f`` if it is a plain one stored in the file
    itself: a hard link to a dataset (not a soft or external link, not a group), neither virtual
    nor in external storage — so that reading a file never reads another one.

    Raises InputError (one line) naming the file and the entry otherwise."""
    h5py = h5py_module()
    what = None
    link = f.get(name, getlink=True)
    if not isinstance(link, h5py.HardLink):
        what = f"is a link ({type(link).__name__})"
    else:
        obj = f.get(name)
        if isinstance(obj, h5py.Group):
            what = "is an HDF5 group, not a dataset"
        elif not isinstance(obj, h5py.Dataset):
            what = f"is a {type(obj).__name__}, not a dataset"
        elif obj.is_virtual:
            what = "is a virtual dataset (its data live in other files)"
        elif obj.external or obj.id.get_create_plist().get_external_count():
            what = "is stored outside the file (external storage)"
    if what is not None:
        raise InputError(f"{path}: entry {name!r} {what}; dalembert reads only plain datasets "
                         f"stored in the file itself")
    return obj


def read_hdf5(path, lazy: bool = True):
    """(metadata dict, t, {name: array}) of an HDF5 trajectory file; with ``lazy`` t and the node
    arrays are :class:`DiskArray` s (read when indexed), else NumPy arrays.

    Raises InputError for a file that is not a readable dalembert HDF5 trajectory."""
    h5py = h5py_module()
    bad = f"{path} is not a dalembert trajectory file"
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise InputError(f"{bad} (not a readable HDF5 file, truncated or damaged: {exc})") from None
    try:
        if f.attrs.get("format") != FORMAT or "t" not in f:
            raise InputError(f"{bad} (format {f.attrs.get('format')!r}, expected {FORMAT!r}, and a 't')")
        md = parse_json(f.attrs["metadata"], f"{path}: the metadata")
        arrays = {}
        for k in f.keys():
            v = plain_dataset(f, k, path)
            arrays[k] = DiskArray(path, k, v.shape, v.dtype) if lazy else np.array(v)
    except InputError:
        raise
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(f"{bad} (an array or the metadata cannot be read: {exc})") from None
    finally:
        f.close()
    return md, arrays.pop("t"), arrays
