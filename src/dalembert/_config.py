"""Process-wide JAX configuration: float64 everywhere, optional persistent compilation cache."""
from __future__ import annotations

import os
from pathlib import Path

import jax

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

    Parameters
    ----------
    path : directory for the cache (created if missing); default :func:`default_cache_dir`.

    Returns
    -------
    The directory used.
    """
    p = Path(path) if path is not None else default_cache_dir()
    p.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(p))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return p
