"""dalembert's own persistent cache of its compiled programs, on by default, for this package only.

A later process that runs the same program (the same system's step, method, options and state
shapes) loads the compiled executable from disk instead of compiling it with XLA again, which is
most of a first call's time on a rich system (benchmarks/first_call.py, docs/benchmarks.md "First
calls"). It serves the programs of single runs and ensembles (:func:`compile_cached`), and
changes nothing in the process: no JAX option is set, so a user's own programs are neither
cached nor affected, and a persistent cache a user (or :func:`dalembert.configure`, the command
line) turned on with ``jax_compilation_cache_dir`` takes precedence — this one then stands aside.

An entry is keyed by a SHA-256 of the lowered program's text (StableHLO: every operation and
constant of the program, so a different system or option is a different key), the compiler
options, the JAX and jaxlib versions, the backend's platform and version, the devices and
``XLA_FLAGS``: the same key compiles to the same executable, whose results are bit for bit those
of a fresh compile. An entry holds the ids of the devices the program ran on and the executable
(:mod:`jax.experimental.serialize_executable`, a pickle: the directory must be the user's own, as
JAX's cache is). Entries are written atomically (temporary file, rename); an entry that cannot be
read is removed and the program compiled again.

Where: ``$DALEMBERT_CACHE_DIR/programs`` (default ``~/.cache/dalembert/jax/programs``,
:func:`dalembert.config.default_cache_dir`); ``DALEMBERT_COMPILATION_CACHE=0`` turns it off. A
directory that cannot be written turns it off for the process, silently (runs compile as before).
Programs that compile in under :data:`MIN_COMPILE_S` are not stored (loading costs about as much).
The directory grows with every new program; remove it at any time to reclaim the space.
"""
from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import jax

ENV = "DALEMBERT_COMPILATION_CACHE"
#: programs whose compile took less than this (seconds, wall) are not stored
MIN_COMPILE_S = 0.2
_STATE: dict = {}               # {"dir": Path} once probed; {"off": reason} when unusable


def directory() -> Path | None:
    """The directory of the cache, or None when it is off (``DALEMBERT_COMPILATION_CACHE=0``, JAX's
    own persistent cache turned on, or a directory that could not be written)."""
    if os.environ.get(ENV, "").strip() == "0" or jax.config.jax_compilation_cache_dir:
        return None
    if "off" in _STATE:
        return None
    from ..config import default_cache_dir
    path = default_cache_dir() / "programs"
    if _STATE.get("dir") != path:
        try:
            from .._io import probe_writable_dir
            probe_writable_dir(path)
        except OSError as exc:
            _STATE["off"] = str(exc)
            return None
        _STATE["dir"] = path
    return path


def _versions() -> str:
    try:
        from importlib.metadata import version
        jaxlib = version("jaxlib")
    except Exception:  # noqa: BLE001 - unknown: the JAX version stands for it
        jaxlib = "?"
    devices = jax.devices()
    return "|".join([jax.__version__, jaxlib, jax.default_backend(),
                     str(getattr(getattr(devices[0], "client", None), "platform_version", "")),
                     str(len(devices)), str(getattr(devices[0], "device_kind", "")),
                     os.environ.get("XLA_FLAGS", ""), str(jax.config.jax_enable_x64)])


def key(lowered, options: dict) -> str:
    """The entry's name: SHA-256 of the program's text, the compiler options and the versions."""
    h = hashlib.sha256()
    h.update(lowered.as_text().encode())
    h.update(repr(sorted(options.items())).encode())
    h.update(_versions().encode())
    h.update(repr(lowered._lowering.compile_args.get("in_shardings")).encode())
    h.update(repr(jax.config.jax_default_device).encode())
    return h.hexdigest()


def _load(path: Path, lowered):
    """The executable stored at ``path`` (a line of device ids, then the serialized executable),
    on those devices."""
    from jax.experimental import serialize_executable as se
    head, payload = path.read_bytes().split(b"\n", 1)
    by_id = {d.id: d for d in jax.devices()}
    devices = [by_id[int(i)] for i in head.split()]
    return se.deserialize_and_load(payload, lowered.in_tree, lowered.out_tree, execution_devices=devices)


def _store(path: Path, compiled):
    from jax.experimental import serialize_executable as se
    from .._io import atomic_path
    ids = " ".join(str(d.id) for d in compiled.runtime_executable().local_devices())
    payload = se.serialize(compiled)[0]
    with atomic_path(path) as tmp:
        Path(tmp).write_bytes(ids.encode() + b"\n" + payload)


def compile_cached(lowered, compile_fn, options: dict):
    """``compile_fn(lowered)``, or the executable a previous process stored for the same key
    (:func:`key` with ``options``, the per-executable compiler options ``compile_fn`` applies);
    a fresh compile is stored when it took at least :data:`MIN_COMPILE_S`."""
    where = directory()
    if where is None:
        return compile_fn(lowered)
    try:
        path = where / f"{key(lowered, options)}.xla"
    except Exception:  # noqa: BLE001 - a program this JAX cannot describe: compiled, not kept
        return compile_fn(lowered)
    if path.exists():
        try:
            return _load(path, lowered)
        except Exception:  # noqa: BLE001 - a damaged or foreign entry: compile again
            path.unlink(missing_ok=True)
    t0 = time.perf_counter()
    compiled = compile_fn(lowered)
    if time.perf_counter() - t0 >= MIN_COMPILE_S:
        try:
            _store(path, compiled)
        except Exception:  # noqa: BLE001 - a cache that cannot be written: no entry
            pass
    return compiled
