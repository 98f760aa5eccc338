"""The one process-wide change that importing dalembert makes: float64 for JAX (``jax_enable_x64``).

Every integrator here is written and verified in float64 (Newton tolerances near 1e-14), so the
import turns it on; nothing else about the process changes (no environment variables, no XLA
options, no device count: those are opt-in through :func:`dalembert.configure`). If JAX had already
started in float32 when dalembert is imported, a warning says so: arrays made before then stay
float32. JAX's persistent compilation cache, which serves every program of the process (a user's
own too), is opt-in (:func:`enable_compilation_cache`); dalembert keeps its *own* compiled
programs on disk by default without setting any JAX option (:mod:`dalembert.engine.disk_cache`,
``DALEMBERT_COMPILATION_CACHE=0`` turns that off), so that a later process does not compile them
again.
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import jax


def backends_started() -> bool:
    """Whether JAX's backends are running (process-wide XLA settings can no longer change)."""
    try:
        from jax._src import xla_bridge
        return bool(xla_bridge.backends_are_initialized())
    except Exception:  # noqa: BLE001 - private API moved: assume started (the safe answer)
        return True


def _enable_float64() -> None:
    if jax.config.jax_enable_x64:
        return
    if backends_started():
        warnings.warn("dalembert: JAX was already running in float32; dalembert switches it to "
                      "float64 (jax_enable_x64) for the rest of the process. Arrays created before "
                      "`import dalembert` stay float32: import dalembert first, or set "
                      "JAX_ENABLE_X64=1.", RuntimeWarning, stacklevel=3)
    jax.config.update("jax_enable_x64", True)


def default_cache_dir() -> Path:
    """Directory of the persistent JAX compilation cache used by the command line.

    ``$DALEMBERT_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/dalembert/jax`` (``~/.cache/...``).
    """
    env = os.environ.get("DALEMBERT_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dalembert" / "jax"


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path:
    """Turn on JAX's persistent compilation cache, so that a second run does not compile again.

    This is process-wide: it caches a user's own JAX programs too. dalembert's own programs are
    cached without it (:mod:`dalembert.engine.disk_cache`); once this is on, that cache stands
    aside and JAX's serves them.

    Parameters
    ----------
    path : directory for the cache (created if missing); default :func:`default_cache_dir`.

    Returns
    -------
    The directory used.

    Raises
    ------
    InputError (one line, naming the directory) when it cannot be created or written (a file in
    its place, a read-only file system): nothing is changed then.
    """
    from ._io import probe_writable_dir
    from .errors import InputError
    p = Path(path) if path is not None else default_cache_dir()
    try:
        probe_writable_dir(p)
    except OSError as exc:
        raise InputError(f"the compilation cache directory {p} is not usable "
                         f"({exc.strerror or type(exc).__name__})") from None
    jax.config.update("jax_compilation_cache_dir", str(p))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return p


_enable_float64()
