"""Atomic file writes: a file is either its old content or its complete new content, never a
truncated one, whatever kills the process (the data is written to a temporary file in the same
directory, flushed to disk with ``fsync``, then renamed over the target, and the directory entry
is synced)."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from .errors import InputError


def _fsync_dir(directory: Path):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:                                   # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:                                   # pragma: no cover - filesystems without it
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path):
    """``with atomic_path(p) as tmp: write(tmp)``: the content written to ``tmp`` (a path in
    ``p``'s directory) replaces ``p`` only when the block completes; otherwise ``tmp`` is removed
    and ``p`` is left as it was."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    except OSError as exc:
        raise _naming(exc, path) from exc
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except OSError as exc:                # (disk full, …): say which file could not be written
        raise _naming(exc, path) from exc
    finally:
        if tmp.exists():
            tmp.unlink()


def _naming(exc: OSError, path: Path) -> OSError:
    """``exc`` as an OSError of the same class and errno whose ``filename`` (and so its message)
    is ``path``, the file being written (not the temporary file, which is removed)."""
    if exc.errno is None:
        return exc
    reason = exc.strerror or str(exc)
    try:
        return type(exc)(exc.errno, reason, str(path))
    except TypeError:                                 # pragma: no cover - an unusual subclass
        return OSError(exc.errno, reason, str(path))


def atomic_write_text(path, text: str):
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def check_writable_dir(path, what: str = "output directory") -> Path:
    """Create ``path`` (a directory) if needed and check that a file can be written in it.

    Raises InputError naming the directory and why, before any work is done."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".dalembert-write-check.", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(f"{what} {path} is not writable: {exc.strerror or exc}") from None
    return path
