"""Where a run's saved nodes go: kept in memory (:class:`MemoryNodes`, joined into arrays at the
end) or streamed to an HDF5 file chunk by chunk (:class:`StreamNodes`), so that a run of any
length needs memory for one chunk only.

The file is an HDF5 trajectory (:mod:`dalembert.results.hdf5`: the layout of
:meth:`dalembert.Trajectory.save` with an ``.h5`` suffix, and why HDF5): a dataset per node
array (``t``, ``q``, ``v``, …, leading axis the nodes) and the metadata as a JSON string in the
root attribute ``metadata``.

Safety. The nodes are written to ``<path>.partial`` and the file is renamed to ``<path>`` only
when the run completes (after ``fsync``): a file named ``<path>`` is always a complete run. The
writer runs in HDF5's single-writer/multiple-reader (SWMR) mode, whose ordered metadata writes
are designed to keep the file readable at any moment (measured below; without it, a writer killed
mid-append left an unreadable file in 1 of 40 tries here: a chunk index pointing past the end of
the file). After each chunk the file is flushed (``H5Fflush``, then ``fsync``); a checkpoint
(:mod:`~dalembert.engine.checkpoint`) then holds the state and the node count only, not the
nodes. Resuming copies the partial file's rows up to the checkpoint's count into a fresh file
(dropping a chunk written after the checkpoint) and appends from there. Measured
(``benchmarks/stream_sigkill``): 15 streamed, checkpointed 2·10⁶-step runs killed with SIGKILL
at random times; the 14 killed after their first checkpoint all resumed to completion (the one
compared: bit for bit the uninterrupted run); 40 SWMR writers killed mid-append all left files
that read with every flushed row.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from .._io import _fsync_dir, hold_lock
from ..errors import InputError
from ..results.hdf5 import h5py_module, new_file, truncation, write_final_metadata

#: A streamed run is refused when its file would take more than this fraction of the free disk.
DISK_FRACTION = 0.9


def lock_path(path) -> Path:
    """The lock file of a stream file: ``.<name>.lock`` beside it (one writer per stream file)."""
    path = Path(path)
    return path.with_name(f".{path.name}.lock")


def partial_path(path) -> Path:
    """The file a streamed run writes until it completes: ``<path>.partial``."""
    path = Path(path)
    return path.with_name(path.name + ".partial")


class MemoryNodes:
    """Node arrays kept in memory: pieces appended per chunk, joined by :meth:`arrays`.
    ``axis``: the node axis (1 for an ensemble, whose leading axis is the members).

    ``layout`` (a :class:`~dalembert.engine.loop.RecordLayout`): the chunks' flat records are kept
    as they come (:meth:`append_records`) and joined once, row after row; the node arrays are then
    views of the joined records (the columns of each array), not copies. Joining each array
    from strided views of the records took 0.1 µs per node under the profiler on the gearbox with
    save_every = 1, about a fifth of ``dl.integrate``'s time per step (docs/high_order.md, "Node
    output").

    ``rows`` (single runs, with ``layout``): the nodes the run will have at most. The records
    are then copied, as each chunk's come, into one array of that many rows (allocated at the
    first chunk; its pages are touched as the rows are written), and the chunk's output is
    released at once: the next call reuses its memory (:data:`~dalembert.engine.loop.CHUNK_BYTES`)
    and there is nothing to join at the end."""

    streams = False

    def __init__(self, prefix: dict, axis: int = 0, layout=None, rows: int | None = None):
        self.pieces, self.axis, self.layout = [prefix], axis, layout
        # (a prefix with other arrays, e.g. a checkpoint of another run, is refused by the caller)
        same = layout is not None and set(prefix) == set(layout.names)
        self.records = [layout.pack(prefix)] if same else None
        self.rows, self.buffer, self.count = (rows if same and axis == 0 else None), None, 0

    def append(self, arrays: dict):
        self.pieces.append(arrays)

    def append_records(self, records, layout):
        """Append a chunk's flat records (rows along the node axis, :class:`RecordLayout` widths)."""
        if self.records is None and self.buffer is None:
            self.append(layout.unpack(records))
            return
        if self.rows is not None and self.buffer is None:
            first = self.records[0]
            if first.shape[1:] == records.shape[1:] and len(first) + len(records) <= self.rows:
                self.buffer = np.empty((self.rows,) + records.shape[1:], np.result_type(first, records))
                self.buffer[:len(first)] = first
                self.count, self.records = len(first), None
        if self.buffer is not None and self.count + len(records) <= len(self.buffer):
            self.buffer[self.count:self.count + len(records)] = records
            self.count += len(records)
        elif self.buffer is not None:           # more rows than announced: join as pieces
            self.records = [self.buffer[:self.count], np.array(records)]
            self.buffer = self.rows = None
        else:
            self.records.append(records)

    def names(self) -> set:
        return set(self.pieces[0])

    def arrays(self) -> dict:
        if self.buffer is not None:
            return self.layout.unpack(self.buffer[:self.count])
        if self.records is not None:
            joined = self.records[0] if len(self.records) == 1 else np.concatenate(self.records, axis=self.axis)
            return self.layout.unpack(joined)
        return {k: np.concatenate([p[k] for p in self.pieces], axis=self.axis) for k in self.pieces[0]}

    def close(self):
        pass

    release = close


class StreamNodes:
    """Node arrays appended to an HDF5 file (module doc) as the run goes.

    Parameters
    ----------
    path : the final file (``.h5``); the run writes ``<path>.partial``.
    times : ``times(first, count) -> (count,)`` the times of nodes ``first, …, first+count-1``.
    prefix : the node arrays of a fresh run's node 0 (leading axis 1), or None when resuming.
    nodes : when resuming, the nodes (after node 0) the checkpoint had: the first ``nodes + 1``
        rows of the partial file are kept (copied to a fresh file), later rows are dropped.
    metadata : the run's metadata, written at once (updated by :meth:`finish`).

    Raises InputError: the partial file of a resumed run is missing, damaged or has fewer rows
    than the checkpoint.
    """

    streams = True

    def __init__(self, path, times, *, prefix=None, nodes: int = 0, metadata=None):
        self.path, self.partial, self.times = Path(path), partial_path(path), times
        self.partial.parent.mkdir(parents=True, exist_ok=True)
        # one writer per file: a second run streaming to the same path is refused at once
        self.lock = hold_lock(lock_path(self.path), f"the stream file {self.path}")
        try:
            self._open(prefix, nodes, metadata)
        except BaseException:
            self.lock.close()
            raise

    def _open(self, prefix, nodes, metadata):
        if prefix is not None:
            self.partial.parent.mkdir(parents=True, exist_ok=True)
            arrays = dict(prefix, t=self.times(0, 1))
            self.file = new_file(self.partial, {k: np.asarray(a) for k, a in arrays.items()}, metadata or {})
            self.count = 1
        else:
            self.file = _resumed(self.partial, nodes + 1)
            self.count = nodes + 1
        self.file.swmr_mode = True               # from here on, the file is crash-consistent
        self.flush()

    def append_records(self, records, layout):
        """Append a chunk's flat records (:meth:`MemoryNodes.append_records`)."""
        self.append(layout.unpack(records))

    def append(self, arrays: dict):
        """Append nodes (arrays with a leading node axis of equal length), then flush."""
        arrays = dict(arrays)
        k = len(next(iter(arrays.values())))
        arrays["t"] = self.times(self.count, k)
        for name, a in arrays.items():
            ds = self.file[name]
            ds.resize(self.count + k, axis=0)
            ds[self.count:] = np.asarray(a)
        self.count += k
        self.flush()

    def flush(self):
        self.file.flush()
        os.fsync(self.file.id.get_vfd_handle())

    def names(self) -> set:
        """The names of the node arrays (``t`` excluded)."""
        return set(self.file) - {"t"}

    def arrays(self) -> dict:
        """The node arrays written so far, as h5py datasets (``t`` excluded)."""
        return {k: v for k, v in self.file.items() if k != "t"}

    def close(self):
        if self.file.id.valid:
            self.file.close()

    def release(self):
        """Release the file's lock (after :meth:`finish`, or when the run ends otherwise)."""
        self.close()
        self.lock.close()

    def finish(self, metadata: dict, complete: bool = True) -> Path:
        """Close, write the final metadata, and rename a complete run's file to ``path``
        (returned); an incomplete one stays at ``<path>.partial`` (returned)."""
        self.close()
        try:
            write_final_metadata(self.partial, metadata, self.count)
            if not complete:
                return self.partial
            os.replace(self.partial, self.path)
            _fsync_dir(self.path.parent)
            return self.path
        finally:
            self.lock.close()


def _resumed(partial: Path, rows: int):
    """A fresh stream file in place of the partial file of an interrupted (or killed) run, with
    its first ``rows`` rows, open for writing. The old file is read as an SWMR reader (which
    works on a file whose writer was killed) and copied block by block: HDF5 cannot shrink a
    dataset whose writer died in place."""
    h5py = h5py_module()
    if not partial.exists():
        final = partial.with_name(partial.name[:-len(".partial")])
        if final.exists():
            raise InputError(f"the run of this checkpoint has finished: {final} holds its result and "
                             f"{partial} is gone, so the checkpoint is stale; nothing to resume (remove "
                             f"the checkpoint)")
        raise InputError(f"the streamed nodes of this checkpoint, {partial}, are missing: a resumed "
                         f"streamed run continues that file")
    why = truncation(partial)
    if why is not None:
        raise InputError(f"{partial} (the streamed nodes of this checkpoint) is damaged, {why}: it cannot "
                         f"be resumed; start the run again (remove the checkpoint and {partial.name})")
    fresh = partial.with_name(partial.name + ".resume")
    try:
        with h5py.File(partial, "r", libver="latest", swmr=True) as old:
            have = {k: v.shape[0] for k, v in old.items()}
            if not have or min(have.values()) < rows:
                raise InputError(f"{partial} holds {min(have.values(), default=0)} nodes, fewer than the "
                                 f"{rows} of its checkpoint (a file of another run?)")
            step = 1 << 16
            f = new_file(fresh, {k: old[k][:min(rows, step)] for k in old}, {}, attrs=dict(old.attrs))
            for lo in range(step, rows, step):
                hi = min(rows, lo + step)
                for k in old:
                    f[k].resize(hi, axis=0)
                    f[k][lo:hi] = old[k][lo:hi]
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(f"{partial} (the streamed nodes of this checkpoint) is damaged: {exc}") from None
    f.flush()
    os.fsync(f.id.get_vfd_handle())
    os.replace(fresh, partial)
    _fsync_dir(partial.parent)
    return f


def check_disk(path, n_nodes: int, node_bytes: int):
    """Refuse (InputError) a streamed run whose file (``n_nodes`` × ``node_bytes``) would take
    more than :data:`DISK_FRACTION` of the free space where it is written."""
    need = n_nodes * node_bytes
    where = Path(path).parent
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    if need > DISK_FRACTION * free:
        raise InputError(f"the streamed file {path} would take {need / 2**30:.3g} GiB ({n_nodes:,} nodes × "
                         f"{node_bytes:,} bytes), more than {DISK_FRACTION:.0%} of the "
                         f"{free / 2**30:.3g} GiB free there: keep fewer nodes (save_every / --save-every) "
                         f"or write elsewhere")
