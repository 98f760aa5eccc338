"""XLA options and CPU devices: dalembert's own compilations, and the one opt-in call that changes
the process (:func:`configure`).

Importing dalembert changes nothing in the process but ``jax_enable_x64`` (float64). What is
per executable is applied to dalembert's own programs only (:func:`compile_lowered`): YNNPACK
fusions off, and XLA:CPU's small-loop kernel threshold (each compiled chunk one native kernel:
3–3.5× faster steps). XLA reads that threshold from a map field of its per-module debug options
that JAX's ``compiler_options`` cannot set, so the first compilation wraps JAX's
``get_compile_options`` (:func:`_install_extra_options_shim`): an ``xla_backend_extra_options``
entry in ``compiler_options`` is written into that map, anything else passes through unchanged.
A user's own programs are compiled as before. What XLA reads only from the process environment —
the CPU device count (``jax_num_cpu_devices``) and the size of XLA's CPU thread pool (``NPROC``)
— is set only by :func:`configure`, which the command line calls and a user may call before JAX
starts.
"""
from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import jax

from ..config import backends_started, enable_compilation_cache
from ..errors import InputError

#: XLA:CPU compiles a ``while`` loop that accesses fewer bytes per iteration than this (and
#: contains no dot, custom call or scatter) into one native kernel instead of running each of its
#: kernels through the runtime. XLA's own default is 1 kB, smaller than one step of any method
#: here; 16 MB also covers the vmapped steps of ensembles (timings: docs/benchmarks.md,
#: "Measurements behind the code").
SMALL_LOOP_BYTES = 1 << 24
_SMALL_LOOP_OPTION = "xla_cpu_small_while_loop_byte_threshold"
#: jaxlib (major, minor) versions on which the option has been checked to exist. XLA aborts the
#: process on an option it does not know, so it is only set on these unless forced.
SMALL_LOOP_JAXLIB_VERSIONS = ((0, 10),)


def _jaxlib_version() -> tuple:
    try:
        from importlib.metadata import version
        v = version("jaxlib")
    except Exception:  # noqa: BLE001 - any failure: unknown version
        v = jax.__version__
    parts = []
    for piece in v.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _option_wanted(env, option: str, variable: str, force: str):
    """Whether to add an XLA option to ``XLA_FLAGS``: None if it is there already (a value
    given is kept); True if ``variable`` equals ``force`` (any jaxlib), False if it has the other
    value of "0"/"1"; otherwise True only on :data:`SMALL_LOOP_JAXLIB_VERSIONS` (XLA aborts the
    process on an option it does not know)."""
    if option in env.get("XLA_FLAGS", ""):
        return None
    mode = env.get(variable, "").strip()
    if mode in ("0", "1"):
        return mode == force
    return _jaxlib_version() in SMALL_LOOP_JAXLIB_VERSIONS


def request_small_loop_kernels(environ=None) -> bool:
    """Add ``--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=<SMALL_LOOP_BYTES>`` to
    ``XLA_FLAGS``, so that XLA:CPU compiles each compiled chunk's loops into single kernels.

    One kernel per loop instead of one dispatch per operation (timings: docs/benchmarks.md, "What
    decides the speed"); results are equal to round-off (the same as dalembert's own programs
    get per executable, :func:`small_loop_option`; against JAX's default 1 kB the order of some
    operations differs: 4.4e-16 in q after 10⁶ knife-edge steps). It takes effect only if JAX's
    CPU backend has not started yet and is process-wide (a user's own programs too):
    :func:`configure` calls it.

    ``DALEMBERT_XLA_SMALL_LOOPS``: ``0`` leaves ``XLA_FLAGS`` alone; ``1`` sets the option on any
    jaxlib; unset: only on the jaxlib versions in :data:`SMALL_LOOP_JAXLIB_VERSIONS`. A value of
    the option already in ``XLA_FLAGS`` is kept.

    Returns
    -------
    True if the option is in ``XLA_FLAGS`` after the call.
    """
    env = os.environ if environ is None else environ
    wanted = _option_wanted(env, _SMALL_LOOP_OPTION, "DALEMBERT_XLA_SMALL_LOOPS", force="1")
    if wanted is not True:
        return wanted is None
    flags = env.get("XLA_FLAGS", "")
    setting = f"{_SMALL_LOOP_OPTION}={SMALL_LOOP_BYTES}"
    tokens = flags.split()
    for i, tok in enumerate(tokens):
        if tok.startswith("--xla_backend_extra_options="):
            tokens[i] = tok + ("," if not tok.endswith("=") else "") + setting
            break
    else:
        tokens.append(f"--xla_backend_extra_options={setting}")
    env["XLA_FLAGS"] = " ".join(tokens)
    return True


#: Per-executable compiler options of every program dalembert compiles (:func:`compile_lowered`):
#: no YNNPACK fusions. XLA:CPU 0.10 hands reductions and dots to YNNPACK as custom fusions; for the
#: tiny reductions of a time step under ``vmap`` (an ensemble) these cost far more than their
#: arithmetic, and they keep a loop from being compiled into one kernel (timings:
#: docs/benchmarks.md, "Measurements behind the code"). Results are the same up to the order of
#: summation. ``DALEMBERT_XLA_YNN=1`` keeps YNNPACK fusions.
COMPILER_OPTIONS = {"xla_cpu_experimental_ynn_fusion_type": ""}
_OPTIONS_OK: list = []          # [bool] once the options were tried on this jaxlib
_EXTRA = "xla_backend_extra_options"


def small_loop_option() -> dict:
    """The per-executable small-loop kernel threshold, as a ``compiler_options`` entry
    (``{"xla_backend_extra_options": "xla_cpu_small_while_loop_byte_threshold=16777216"}``), or
    ``{}`` when it is not used: ``DALEMBERT_XLA_SMALL_LOOPS=0``; a jaxlib outside
    :data:`SMALL_LOOP_JAXLIB_VERSIONS` (unless ``DALEMBERT_XLA_SMALL_LOOPS=1``); a value already
    in ``XLA_FLAGS`` (the process's value then applies to every program); or JAX's compile path
    not as expected (:func:`_install_extra_options_shim`)."""
    if not _option_wanted(os.environ, _SMALL_LOOP_OPTION, "DALEMBERT_XLA_SMALL_LOOPS", force="1"):
        return {}
    if not _install_extra_options_shim():
        return {}
    return {_EXTRA: f"{_SMALL_LOOP_OPTION}={SMALL_LOOP_BYTES}"}


#: Programs whose lowered text has more lines than this compile without the small-loop kernel
#: unless ``DALEMBERT_XLA_SMALL_LOOPS=1``. One native kernel per loop makes steps 3–8× faster, but
#: LLVM's time on one large kernel grows faster than the program: measured (CPU s, 2-core machine,
#: load 1–3; `nh-rattle-sym`'s chunk program) the tilting disk's 7 900 lines compile in 3.2 s with
#: and 4.2 s without, the rattleback's 27 500 lines in 78 s with and 12 s without (steps then
#: 0.08 ms against 0.67 ms: the kernel pays for itself after ~10⁵ steps), the Whipple bicycle's
#: first call 370 s against 53 s. A first call of minutes is the worse default; a long run of a
#: rich model opts in with ``DALEMBERT_XLA_SMALL_LOOPS=1`` (docs/benchmarks.md, "Fast by default").
SMALL_LOOP_MAX_LINES = 15_000


def _too_large(lowered) -> bool:
    """Whether a lowered program is over :data:`SMALL_LOOP_MAX_LINES` (and the kernel is not forced)."""
    if lowered is None or os.environ.get("DALEMBERT_XLA_SMALL_LOOPS", "").strip() == "1":
        return False
    try:
        return lowered.as_text().count("\n") > SMALL_LOOP_MAX_LINES
    except Exception:  # noqa: BLE001 - a program that cannot be printed: keep the default
        return False


def compiler_options(lowered=None) -> dict:
    """The per-executable options in force for dalembert's programs: :data:`COMPILER_OPTIONS`
    (empty if switched off or unknown to this jaxlib) and :func:`small_loop_option` — the latter
    left out for a ``lowered`` program over :data:`SMALL_LOOP_MAX_LINES` (its compile would take
    minutes).

    Also usable for a program of one's own that calls :func:`dalembert.solve`:
    ``jax.jit(f, compiler_options=dalembert.engine.xla.compiler_options())`` compiles its loops
    as dalembert's own (the same speed as :func:`dalembert.integrate`)."""
    out = {}
    if os.environ.get("DALEMBERT_XLA_YNN", "").strip() != "1" and _OPTIONS_OK != [False]:
        out.update(COMPILER_OPTIONS)
    if not _too_large(lowered):
        out.update(small_loop_option())
    return out


def jit_options():
    """:func:`compiler_options` for ``jax.jit(..., compiler_options=...)`` of dalembert's own
    jitted functions (compiled at their first call, where an unknown option cannot be caught):
    None unless the options were compiled with already or the jaxlib is one they were checked on
    (:data:`SMALL_LOOP_JAXLIB_VERSIONS`)."""
    if _OPTIONS_OK == [True] or (_OPTIONS_OK != [False] and _jaxlib_version() in SMALL_LOOP_JAXLIB_VERSIONS):
        return compiler_options() or None
    return None


def compile_lowered(lowered, options: dict | None = None):
    """``lowered.compile()`` with ``options`` (default :func:`compiler_options` of the program;
    for dalembert's own programs only). A jaxlib that does not know an option compiles without
    them (and is remembered)."""
    opts = compiler_options(lowered) if options is None else options
    if not opts:
        return lowered.compile()
    try:
        out = lowered.compile(compiler_options=opts)
    except Exception as exc:  # noqa: BLE001 - an option this jaxlib does not have
        if "option" not in str(exc).lower():
            raise
        _OPTIONS_OK[:] = [False]
        _SHIM[:] = [False]
        return lowered.compile()
    _OPTIONS_OK[:] = [True]
    return out


# --- per-executable xla_backend_extra_options ----------------------------------------------------
#
# XLA:CPU reads the small-loop threshold from DebugOptions.xla_backend_extra_options, a
# map<string, string> (field 500) of the debug options of the module being compiled, so it can be
# set per executable. JAX's ``compiler_options`` are applied by XLA's CompileOptions::ApplyOption,
# which sets scalar fields only ("... is not a valid message value" for the map). jaxlib's
# CompileOptions does parse a serialized CompileOptionsProto, and protobuf merges a message with
# fields appended to it: so the entry is appended to the serialized options (CompileOptionsProto
# field 3 executable_build_options → ExecutableBuildOptionsProto field 3 debug_options → field
# 500, entry {1: key, 2: value}) and parsed back. Field numbers of a proto never change.

_SHIM: list = []                # [bool] once the shim was installed (or found impossible)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def extra_options_bytes(entries: dict) -> bytes:
    """Serialized CompileOptionsProto fields that put ``entries`` (str → str) into
    ``executable_build_options.debug_options.xla_backend_extra_options``."""
    maps = b"".join(_field(500, _field(1, k.encode()) + _field(2, v.encode())) for k, v in entries.items())
    return _field(3, _field(3, maps))


def _parse_extra(value) -> dict:
    """``"k=v,k2=v2"`` (the ``--xla_backend_extra_options`` syntax) → dict."""
    out = {}
    for item in str(value).split(","):
        if item.strip():
            k, _, v = item.partition("=")
            out[k.strip()] = v.strip()
    return out


def with_extra_options(options, entries: dict):
    """A copy of jaxlib ``CompileOptions`` with ``entries`` in its debug options' backend extra
    options map; ``options`` itself if the copy does not hold them as expected."""
    from jax._src.lib import xla_client as xc
    overrides = list(options.env_option_overrides)
    new = xc.CompileOptions.ParseFromString(options.SerializeAsString() + extra_options_bytes(entries))
    new.env_option_overrides = overrides
    back = new.SerializeAsString()
    same = (new.num_replicas == options.num_replicas and new.num_partitions == options.num_partitions
            and new.executable_build_options.debug_options.xla_detailed_logging
            == options.executable_build_options.debug_options.xla_detailed_logging)
    if not same or not all(k.encode() in back and v.encode() in back for k, v in entries.items()):
        return options
    return new


def _install_extra_options_shim() -> bool:
    """Wrap ``jax._src.compiler.get_compile_options`` once so that an ``xla_backend_extra_options``
    entry of ``compiler_options`` ("k=v,...") goes into the compiled module's debug options
    (:func:`with_extra_options`). Calls without that entry are passed through unchanged (a user's
    own compilations). Returns whether the shim is in place (False if JAX's internals are not as
    expected: dalembert then compiles without the option)."""
    if _SHIM:
        return _SHIM[0]
    try:
        from jax._src import compiler
        from jax._src.lib import xla_client as xc
        original = compiler.get_compile_options
        ok = callable(original) and hasattr(xc.CompileOptions, "ParseFromString")
    except Exception:  # noqa: BLE001 - private API moved
        ok = False
    if not ok:
        _SHIM[:] = [False]
        return False
    if getattr(original, "_dalembert_extra_options", False):
        _SHIM[:] = [True]
        return True

    def get_compile_options(*args, **kwargs):
        positional = "env_options_overrides" not in kwargs and len(args) > 3
        overrides = args[3] if positional else kwargs.get("env_options_overrides")
        if not overrides or _EXTRA not in overrides:
            return original(*args, **kwargs)
        overrides = dict(overrides)
        entries = _parse_extra(overrides.pop(_EXTRA))
        if positional:
            args = args[:3] + (overrides,) + args[4:]
        else:
            kwargs["env_options_overrides"] = overrides
        return with_extra_options(original(*args, **kwargs), entries)

    get_compile_options._dalembert_extra_options = True
    get_compile_options.__wrapped__ = original
    compiler.get_compile_options = get_compile_options
    _SHIM[:] = [True]
    return True


#: What :func:`configure` set (empty until it is called).
CONFIGURED: dict = {}


def configure(*, small_loops: bool | None = None, cpu_devices: bool | int = True,
              compilation_cache: bool | str | os.PathLike = False) -> dict:
    """Opt in to the process-wide settings that make dalembert fastest. Call it before anything
    starts JAX (before the first computation); the command line calls it.

    Parameters
    ----------
    small_loops : add XLA:CPU's small-loop kernel threshold to ``XLA_FLAGS``
        (:func:`request_small_loop_kernels`: each compiled loop one kernel). dalembert's own
        programs have it without this (per executable, :func:`compile_lowered`, except programs
        over :data:`SMALL_LOOP_MAX_LINES`, whose compile would take minutes); True: the process
        flag for every program, a user's own ``jax.jit`` of :func:`dalembert.solve` included (or
        pass ``compiler_options=compiler_options()`` to that jit instead) and the large ones too;
        None (default): the flag only where the per-executable option is not available.
    cpu_devices : request one JAX CPU device per thread of XLA's CPU pool (and set ``NPROC``),
        so that :func:`dalembert.ensemble` splits its members over the cores
        (:func:`request_cpu_devices`); an int: the number of cores to plan for.
    compilation_cache : turn on JAX's persistent compilation cache (True: the default
        directory, :func:`dalembert.config.default_cache_dir`; or a path).

    These change the whole process: a user's own JAX programs then also see 2–4 CPU devices and
    the XLA option. Without this call dalembert's programs run with their per-executable options
    (as fast for single runs) and ensembles on one device.

    Returns
    -------
    dict of what took effect: ``small_loops`` (bool), ``cpu_devices`` (int), ``compilation_cache``
    (path or None). If JAX's backends have already started, the first two cannot change: a
    warning says so and they are reported as they are.
    """
    started = backends_started()
    out = {"small_loops": _SMALL_LOOP_OPTION in os.environ.get("XLA_FLAGS", ""),
           "cpu_devices": len(jax.devices("cpu")) if started else 1, "compilation_cache": None}
    if started and (small_loops or cpu_devices):
        warnings.warn("dalembert.configure: JAX has already started, so the XLA options and CPU "
                      "devices cannot change any more; call it first thing (before any JAX "
                      "computation)", RuntimeWarning, stacklevel=2)
    elif not started:
        if small_loops is None:
            small_loops = not small_loop_option()
        if small_loops:
            out["small_loops"] = request_small_loop_kernels()
        if cpu_devices:
            out["cpu_devices"] = request_cpu_devices(
                cores=None if cpu_devices is True else int(cpu_devices))
    if compilation_cache:
        try:
            out["compilation_cache"] = str(enable_compilation_cache(
                None if compilation_cache is True else compilation_cache))
            heal_damaged_cache_entries()
        except InputError as exc:        # runs work without it, compiling every time
            warnings.warn(f"{exc}; running without a persistent compilation cache (set "
                          f"DALEMBERT_CACHE_DIR to a writable directory to keep one)",
                          CacheWarning, stacklevel=2)
    CONFIGURED.update(out)
    return out


class CacheWarning(UserWarning):
    """The persistent compilation cache is not usable, or had a damaged entry (removed)."""


def heal_damaged_cache_entries():
    """Make a damaged entry of JAX's persistent compilation cache warn once, not on every run.

    JAX warns when an entry cannot be read, compiles again, but never replaces the entry (it
    writes only missing ones), so each later process warns again. This wraps JAX's cache read so
    that an entry it cannot read is removed (JAX then writes it afresh after compiling); JAX's
    warning is replaced by one :class:`CacheWarning` per process. Idempotent; does nothing if
    JAX's internals are not as expected."""
    try:
        from jax._src import compilation_cache as cc
    except ImportError:                                      # pragma: no cover - other JAX
        return
    read = getattr(cc, "get_executable_and_time", None)
    if read is None or getattr(read, "_dalembert_heals", False):
        return
    warned = []

    def get_executable_and_time(cache_key, compile_options, backend, *args, **kwargs):
        try:
            return read(cache_key, compile_options, backend, *args, **kwargs)
        except Exception as exc:                       # noqa: BLE001 - any damage
            if isinstance(exc, getattr(cc, "CacheVerificationError", ())):
                raise
            where = _remove_cache_entry(cc, backend, cache_key)
            if not warned:
                warned.append(True)
                warnings.warn(f"a damaged entry of the compilation cache{where} "
                              f"({type(exc).__name__}) was removed; its program is compiled again",
                              CacheWarning, stacklevel=2)
            return None, None                          # a cache miss: compile
    get_executable_and_time._dalembert_heals = True
    cc.get_executable_and_time = get_executable_and_time


def _remove_cache_entry(cc, backend, cache_key) -> str:
    """Remove the files of one entry of JAX's file cache; returns " (its directory)" or ""."""
    try:
        cache = cc._get_cache(backend)
        path = Path(str(cache.path))
        for suffix in ("-cache", "-atime"):
            (path / f"{cache_key}{suffix}").unlink(missing_ok=True)
        return f" ({path})"
    except Exception:                                  # noqa: BLE001 - best effort
        return ""


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def request_cpu_devices(environ=None, config=None, cores: int | None = None) -> int:
    """Ask JAX for one CPU device per thread of XLA's CPU pool (``jax_num_cpu_devices``), so
    that :func:`ensemble` can run its members on all cores (:func:`ensemble_devices`).

    A vmapped time step of a small system is compute-bound on one core; splitting the members
    over the cores, each running its own vmapped loop with no communication, is the remaining
    factor (timings: docs/benchmarks.md, "Measurements behind the code"). Single trajectories are
    unaffected (they run on the default device).

    XLA:CPU runs every device's program on one intra-op thread pool, whose size it reads from
    ``NPROC`` (``DefaultThreadPoolSize``); this sets ``NPROC`` to twice the core count when it
    is unset and requests one device per pool thread. Two facts decide how many of them an
    ensemble uses (:func:`ensemble_devices`):

    - with fewer devices than pool threads, the idle threads take pieces of the busy devices'
      programs and the pieces wait on each other (slower than one device per pool thread, whose
      program then runs on one thread; timings in docs/benchmarks.md);
    - jaxlib's LAPACK kernels split their work over that same pool and wait for the pieces, so
      when every pool thread runs a device's program that calls LAPACK the process deadlocks
      (seen with a batched 300 × 300 solve, and with a Cholesky and a QR factorisation in one
      step, on 2 devices with a pool of 2).

    So a program without LAPACK (or other custom) calls runs on every device, one with them on at
    most ``min(cores, NPROC − 1)`` (one pool thread more than can wait).

    ``cores`` (else ``DALEMBERT_CPU_DEVICES``, else the usable cores): the number of cores to plan
    for (``1``: leave JAX alone). A
    device count already configured (``jax_num_cpu_devices`` or
    ``--xla_force_host_platform_device_count``) is kept. Takes effect only before JAX's backends
    start (:func:`configure` calls it); process-wide.

    Returns
    -------
    The number of CPU devices requested (1 when nothing was changed).
    """
    env = os.environ if environ is None else environ
    cfg = jax.config if config is None else config
    want = env.get("DALEMBERT_CPU_DEVICES", "").strip() if cores is None else str(cores)
    try:
        n = int(want) if want else _usable_cores()
    except ValueError:
        n = 1
    if n <= 1 or getattr(cfg, "jax_num_cpu_devices", -1) > 0 or \
            "xla_force_host_platform_device_count" in env.get("XLA_FLAGS", ""):
        return 1
    nproc = env.get("NPROC", "").strip()
    try:
        pool = int(nproc) if nproc else 2 * n
    except ValueError:
        return 1
    if pool <= 1:
        return 1
    try:
        cfg.update("jax_num_cpu_devices", pool)
    except (RuntimeError, AttributeError, KeyError):   # backends already started, or no such option
        return 1
    if not nproc:
        env["NPROC"] = str(pool)
    return pool


def ensemble_devices(batch: int, custom_calls: bool = False) -> list:
    """The devices an ensemble of ``batch`` members is split over (at most one per member): the
    CPU devices when JAX's default backend is the CPU and has more than one, else the default
    device alone. A program with custom calls (LAPACK) gets at most ``min(cores, pool − 1)``
    of them, the pool being XLA's CPU thread pool (``NPROC``, else the core count; see
    :func:`request_cpu_devices`)."""
    devs = jax.devices()
    if jax.default_backend() != "cpu" or len(devs) < 2 or batch < 2:
        return devs[:1]
    k = len(devs)
    if custom_calls:
        cores = _usable_cores()
        try:
            pool = int(os.environ.get("NPROC", "").strip() or cores)
        except ValueError:
            pool = cores
        k = max(1, min(k, cores, pool - 1))
    return devs[:min(k, batch)]


#: Custom calls of the partitioner (``shard_map``), not kernels.
_PARTITIONER_CALLS = ("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape")


def _custom_calls(lowered) -> tuple:
    """The custom-call targets (LAPACK kernels, host callbacks; not the partitioner's) of a
    lowered program (``jax.jit(fn).lower(...)``), sorted."""
    found = set(re.findall(r"custom_call\s*@([\w.]+)", lowered.as_text()))
    return tuple(sorted(found - set(_PARTITIONER_CALLS)))
