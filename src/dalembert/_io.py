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


def probe_writable_dir(path: Path) -> None:
    """Create the directory ``path`` if needed and write (then remove) a file in it.

    Raises OSError when either fails."""
    path.mkdir(parents=True, exist_ok=True)
    fd, probe = tempfile.mkstemp(prefix=".dalembert-write-check.", dir=path)
    os.close(fd)
    os.unlink(probe)


def check_writable_dir(path, what: str = "output directory") -> Path:
    """Create ``path`` (a directory) if needed and check that a file can be written in it.

    Raises InputError naming the directory and why, before any work is done."""
    path = Path(path)
    try:
        probe_writable_dir(path)
    except OSError as exc:
        raise InputError(f"{what} {path} is not writable: {exc.strerror or exc}") from None
    return path


def check_output_file(path, what: str) -> Path:
    """A file path a run will write (``stream=``, ``checkpoint=``), checked before the run: a
    path (str or os.PathLike), not a directory, in a directory that exists or can be created and
    is writable.

    Raises InputError naming the path and what to do."""
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise InputError(f"{what} must be a file path (str or os.PathLike); got {path!r} "
                         f"({type(path).__name__}): pass e.g. {what}='run.h5'")
    path = Path(path)
    if str(path) in ("", ".") or path.is_dir():
        raise InputError(f"{what} {str(path)!r} is a directory, not a file: name a file in it, "
                         f"e.g. {what}={str(path / ('run.h5' if what == 'stream' else 'checkpoint.npz'))!r}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".write-check", dir=path.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(f"{what} {path} cannot be written: its directory {path.parent} cannot be created or written "
                         f"({exc.strerror or exc}): choose a writable directory") from None
    return path


#: The lock file of a run directory (see :func:`hold_lock`).
LOCK_NAME = ".dalembert.lock"


def hold_lock(lock_file, what: str):
    """Take the exclusive lock of ``lock_file`` (``fcntl.flock``, created if needed) for this
    process and return its open file object: the lock lasts while the object is open (close it to
    release) and the operating system releases it when the process dies, however it dies, so a
    killed run never leaves it stuck. The holder's pid is written in the file.

    Raises InputError, at once, when another process holds it: ``what`` (e.g. "--out runs/x")
    is in use, by which pid, and what to do."""
    import fcntl
    lock_file = Path(lock_file)
    f = open(lock_file, "a+")
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.seek(0)
        holder = f.read().strip() or "unknown"
        f.close()
        raise InputError(f"{what} is being written by another dalembert run (pid {holder}; lock "
                         f"{lock_file}): wait for it to finish, or write elsewhere") from None
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    return f
