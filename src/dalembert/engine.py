"""The compiled time loop: :func:`integrate`.

The run is split into chunks of ``chunk_saves`` saved nodes (``save_every`` steps each). A chunk
is one ahead-of-time compiled function — loops over blocks of saved nodes, over the nodes of a
block and over the ``save_every`` steps of a node (see :func:`_make_chunk` for why three) — so no
Python statement runs per step, memory stays bounded,
a progress bar can move between chunks, and the compiled chunk is reused by every run of the same
system, method, options and save stride (and, through JAX's persistent cache, by later processes).

Failures: a step whose Newton solve does not converge, or whose new state is not finite, freezes
the state (node outputs such as the energy are checked too, at the saved nodes: a non-finite one
fails the last step before that node); the engine raises :class:`~dalembert.errors.ConvergenceError` naming the step and time
and carrying the trajectory up to the last good saved node.
"""
from __future__ import annotations

import math
import os
import re
import sys
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import __version__, methods, monitors
from .errors import ConvergenceError, InputError
from .trajectory import Trajectory

# ---------------------------------------------------------------------------------------------
# XLA:CPU: compile small loops into single kernels
# ---------------------------------------------------------------------------------------------

#: XLA:CPU compiles a ``while`` loop that accesses fewer bytes per iteration than this (and
#: contains no dot, custom call or scatter) into one native kernel instead of running each of its
#: kernels through the runtime. XLA's own default is 1 kB, smaller than one step of any method
#: here. 16 MB also covers the vmapped steps of ensembles (issue 3, measured on the chaotic
#: quartic system, B = 200, one device: si-dla 0.116 → 0.058 µs per member-step, spark-lobatto2
#: 0.169 → 0.097; suslov, B = 1000: dreps-euler 35 → 72 M trajectory-steps/s); single
#: trajectories of small systems are the same as with the previous 64 kB.
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

    Measured (docs/benchmarks.md): nh-rattle on the gearbox 0.6 → 0.17 µs/step, the Newton-based
    steps 3–4× faster; results are bit-for-bit the same. It takes effect only if JAX's CPU
    backend has not started yet (dalembert calls it when it is imported) and is process-wide.

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


#: Whether the small-loop option was requested at import (see :func:`request_small_loop_kernels`).
SMALL_LOOP_KERNELS = request_small_loop_kernels()

_YNN_OPTION = "--xla_cpu_experimental_ynn_fusion_type"


def request_no_ynn_fusions(environ=None) -> bool:
    """Add ``--xla_cpu_experimental_ynn_fusion_type=`` (empty: no YNNPACK fusions) to ``XLA_FLAGS``.

    XLA:CPU 0.10 hands reductions and dots to YNNPACK as custom fusions. For the tiny reductions
    of a time step under ``vmap`` (an ensemble) these cost far more than their arithmetic, and
    they are custom calls, which keep a loop from being compiled into one kernel. Measured on the
    chaotic-quartic almost-Poisson form (13 coordinates), B = 200 members: the Hessian of H
    11 → 0.6 µs per member, a dg-gonzalez step 12.7 → 6.0 µs per member (docs/benchmarks.md,
    issue 3). Results are the same up to the order of summation.

    ``DALEMBERT_XLA_YNN``: ``1`` leaves ``XLA_FLAGS`` alone (YNNPACK fusions on); ``0`` sets the
    option on any jaxlib; unset: only on the jaxlib versions in
    :data:`SMALL_LOOP_JAXLIB_VERSIONS` (XLA aborts on an option it does not know). A value of
    the option already in ``XLA_FLAGS`` is kept. Takes effect only before JAX's CPU backend
    starts (dalembert calls it when it is imported).

    Returns
    -------
    True if the option is in ``XLA_FLAGS`` after the call.
    """
    env = os.environ if environ is None else environ
    wanted = _option_wanted(env, _YNN_OPTION, "DALEMBERT_XLA_YNN", force="0")
    if wanted is not True:
        return wanted is None
    flags = env.get("XLA_FLAGS", "")
    env["XLA_FLAGS"] = (flags + " " if flags else "") + _YNN_OPTION + "="
    return True


#: Whether YNNPACK fusions were switched off at import (see :func:`request_no_ynn_fusions`).
NO_YNN_FUSIONS = request_no_ynn_fusions()


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def request_cpu_devices(environ=None, config=None) -> int:
    """Ask JAX for one CPU device per thread of XLA's CPU pool (``jax_num_cpu_devices``), so
    that :func:`ensemble` can run its members on all cores (:func:`ensemble_devices`).

    A vmapped time step of a small system is compute-bound on one core; splitting the members
    over the cores, each running its own vmapped loop with no communication, is the remaining
    factor (measured on this project's 2-core machine, B = 200 on the chaotic quartic system:
    si-dla 0.058 → 0.031 µs per member-step, i-dla 2.11 → 0.99, dg-gonzalez 5.1 → 3.8).
    Single trajectories are unaffected (they run on the default device).

    XLA:CPU runs every device's program on one intra-op thread pool, whose size it reads from
    ``NPROC`` (``DefaultThreadPoolSize``); this sets ``NPROC`` to twice the core count when it
    is unset and requests one device per pool thread. Two facts decide how many of them an
    ensemble uses (:func:`ensemble_devices`):

    - with fewer devices than pool threads, the idle threads take pieces of the busy devices'
      programs and the pieces wait on each other: dg-gonzalez, B = 200, 2 cores: 2.9 µs per
      member-step on 2 devices with a pool of 3, 3.1 with 4, against 2.2 on 2 devices with a
      pool of 2 and 2.5 on 4 devices with a pool of 4 (each device's program then runs on one
      thread); si-dla, spark-lobatto2 and i-dla are the same on 4 devices as on 2;
    - jaxlib's LAPACK kernels split their work over that same pool and wait for the pieces, so
      when every pool thread runs a device's program that calls LAPACK the process deadlocks
      (seen with a batched 300 × 300 solve, and with a Cholesky and a QR factorisation in one
      step, on 2 devices with a pool of 2).

    So a program without LAPACK (or other custom) calls runs on every device, one with them on at
    most ``min(cores, NPROC − 1)`` (one pool thread more than can wait).

    ``DALEMBERT_CPU_DEVICES``: the number of cores to plan for (``1``: leave JAX alone). A
    device count already configured (``jax_num_cpu_devices`` or
    ``--xla_force_host_platform_device_count``) is kept. Takes effect only before JAX's backends
    start (dalembert calls it when it is imported); process-wide.

    Returns
    -------
    The number of CPU devices requested (1 when nothing was changed).
    """
    env = os.environ if environ is None else environ
    cfg = jax.config if config is None else config
    want = env.get("DALEMBERT_CPU_DEVICES", "").strip()
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


#: CPU devices requested at import (see :func:`request_cpu_devices`).
CPU_DEVICES = request_cpu_devices()


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


#: Target number of steps per compiled chunk.
CHUNK_STEPS = 65536
#: Largest number of member-steps (members × steps) of one compiled ensemble chunk. Measured
#: (issue 3, si-dla, B = 200, two CPU devices): chunks of CHUNK_STEPS / B = 327 steps cost 0.15
#: µs per member-step, chunks of this size 0.10 (the time between chunks is not overlapped).
ENSEMBLE_CHUNK_MEMBER_STEPS = 1 << 22
#: Smallest chunk (in saved nodes): short runs all share one compiled chunk.
MIN_CHUNK_SAVES = 1024

_COMPILED: dict = {}


# ---------------------------------------------------------------------------------------------
# input checks
# ---------------------------------------------------------------------------------------------

def _positive_finite(x, name):
    try:
        xf = float(x)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number; got {x!r}") from None
    if not math.isfinite(xf):
        raise InputError(f"{name} must be finite; got {xf}")
    if xf <= 0:
        raise InputError(f"{name} must be > 0; got {xf}")
    return xf


def step_count(h: float, t_final: float, save_every: int) -> int:
    """Number of steps: ceil(t_final / h) (to 1e-9 relative), rounded up to a multiple of save_every."""
    n = max(1, math.ceil(t_final / h - 1e-9))
    return save_every * math.ceil(n / save_every)


def _chunk_saves(n_saves: int, save_every: int, chunk_steps: int) -> int:
    max_saves = max(1, chunk_steps // save_every)
    pow2 = 1 << max(0, (n_saves - 1).bit_length())
    return min(max_saves, max(pow2, min(MIN_CHUNK_SAVES, max_saves)))


# ---------------------------------------------------------------------------------------------
# compiled pieces
# ---------------------------------------------------------------------------------------------

def _as_dict(obs) -> dict:
    """A method's observation (a dict, or a NamedTuple such as Observation) as a dict without
    the entries that are None."""
    d = dict(obs) if isinstance(obs, dict) else obs._asdict()
    return {k: v for k, v in d.items() if v is not None}


def _node_outputs(system, obs):
    """The arrays kept at a node: the method's observation plus the system's diagnostics
    (energy, constraint_residual, ...; the system-kind protocol, see :func:`integrate`)."""
    d = _as_dict(obs)
    d.update(system.diagnostics(d))
    return d


def _all_finite(tree):
    leaves = jax.tree_util.tree_leaves(tree)
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves]))


#: Largest size (bytes) of the per-block record buffer; see :func:`_make_chunk`.
BLOCK_BYTES = 512


def _record_layout(system, scheme, state, h, keep=None):
    """Names (sorted; only those in ``keep`` if given), shapes, flat sizes and common dtype of
    the node outputs."""
    shapes = jax.eval_shape(lambda s, hh: _node_outputs(system, scheme.observe(s, hh)), state, h)
    if keep is not None:
        unknown = set(keep) - set(shapes)
        if unknown:
            raise InputError(f"keep: unknown node arrays {sorted(unknown)}; available: {sorted(shapes)}")
    names = sorted(k for k in shapes if keep is None or k in keep)
    dtype = jnp.result_type(*[shapes[k].dtype for k in names])
    sizes = [math.prod(shapes[k].shape) for k in names]
    return names, [shapes[k].shape for k in names], sizes, dtype


def _make_chunk(system, scheme, chunk_saves: int, state, h, keep=None, members: bool = False):
    """The compiled body of one chunk: ``chunk_saves`` saved nodes of ``n_sub`` steps each.

    ``members``: the body is vmapped over an ensemble's members. The steps of a node are then
    counted the same for every member (a member that failed keeps its last good state, as
    ``take`` below makes it), so that the vmapped step loop has a trip count shared by all
    members; counted per member, the loop became a ``while`` whose every step selects the whole
    carry under a per-member mask and reduces the masks across the members (spark-lobatto2,
    chaotic quartic, B = 200: 0.046 → 0.035 µs per member-step). A vmapped loop computes every
    member's step anyway, so the count saves nothing for a failed member there.

    ``run_chunk(state, h, n_active, n_sub)``: three nested loops — the ``n_sub`` (= save_every)
    steps of a node, the nodes of a *block*, the blocks of the chunk. The node outputs are
    computed per node (as the method's ``observe`` defines them) and packed into one flat record;
    a block of records is kept in a buffer of at most :data:`BLOCK_BYTES` bytes, and only the
    outermost loop writes into the chunk-sized output. Nodes ``j ≥ n_active`` are padding.

    Why (measured, docs/benchmarks.md): XLA:CPU's runtime runs the kernels of a loop body one
    after the other only when all their buffers are small (≤ 512 B) or the body has at most 8
    kernels; otherwise it schedules them through a concurrent executor whose overhead (about
    1 µs per iteration on this project's 2-core machine) is 15–20× the cost of a RATTLE step.
    Writing each node's outputs straight into the chunk-sized arrays put the per-node loop in
    that regime. The step loop's trip count is a runtime argument, so that XLA keeps it a loop
    even for save_every = 1: the step is then compiled the same way for every save_every (the
    nodes of a save_every = K run are those of the save_every = 1 run, bit for bit), and it stays
    small enough for XLA:CPU to compile into a single kernel (see
    :func:`request_small_loop_kernels`).
    """
    names, shapes, sizes, dtype = _record_layout(system, scheme, state, h, keep)
    width = sum(sizes)
    block = max(1, min(chunk_saves, BLOCK_BYTES // (width * jnp.dtype(dtype).itemsize)))
    n_blocks = -(-chunk_saves // block)

    def pack(outs):
        return jnp.concatenate([jnp.ravel(outs[k]).astype(dtype) for k in names])

    def unpack(flat):
        lead = flat.shape[:-1]
        res, i = {}, 0
        for k, shp, sz in zip(names, shapes, sizes):
            res[k] = flat[..., i:i + sz].reshape(lead + tuple(shp))
            i += sz
        return res

    def run_chunk(state, h, n_active, n_sub):
        def inner(_, carry):
            st, ok, k, fail_at, it_sum, it_max = carry
            new, info = scheme.step(st, h)
            good = info.converged & _all_finite(new)
            take = ok & good
            st = jax.tree_util.tree_map(lambda a, b: jnp.where(take, a, b), new, st)
            fail_at = jnp.where(ok & ~good, k, fail_at)
            return (st, take, k + 1, fail_at, it_sum + info.iterations,
                    jnp.maximum(it_max, info.iterations))

        def node(carry, j):
            st, ok, k, fail_at, it_sum, it_max = carry
            active = ok & (j < n_active)
            # an inactive node (padding, or after a failure) takes no step at all in a single
            # run (with ok = False the steps would change nothing that is kept); an ensemble
            # counts its steps for every member (see ``members`` above)
            trips = jnp.where((j < n_active) if members else active, n_sub, 0)
            st2, ok2, k2, fail2, s2, m2 = lax.fori_loop(
                0, trips, inner, (st, active, k, fail_at, it_sum, it_max))
            outs = _node_outputs(system, scheme.observe(st2, h))
            # a finite state whose node outputs are not (e.g. V = NaN where ∇V is finite) fails
            # at the step that produced it
            bad = active & ok2 & ~_all_finite(outs)
            fail2 = jnp.where(bad, k2 - 1, fail2)
            ok2 = ok2 & ~bad
            # an inactive (padding) node leaves everything as it was
            ok_out = jnp.where(j < n_active, ok2, ok)
            carry = (st2, ok_out, jnp.where(active, k2, k), fail2, jnp.where(active, s2, it_sum),
                     jnp.where(active, m2, it_max))
            return carry, pack(outs)

        def run_block(carry, b):
            return lax.scan(node, carry, b * block + jnp.arange(block, dtype=jnp.int32))

        zero = jnp.array(0, jnp.int32)
        carry0 = (state, jnp.array(True), zero, jnp.array(-1, jnp.int32), zero, zero)
        (state, ok, k, fail_at, it_sum, it_max), recs = lax.scan(
            run_block, carry0, jnp.arange(n_blocks, dtype=jnp.int32))
        outs = unpack(recs.reshape(n_blocks * block, -1)[:chunk_saves])
        return state, outs, ok, fail_at, it_sum, it_max
    return run_chunk


def _build(system, method, x0, options):
    try:
        return method.build(system, x0, **options)
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            raise InputError(f"{method.name}: unknown option ({exc}); initial-state names of "
                             f"{system.name}: {', '.join(system.state_names)}") from None
        raise
    except AttributeError as exc:  # the method needs another kind of system
        raise InputError(f"method {method.name!r} cannot integrate a {type(system).__name__} "
                         f"({exc}); see `dalembert list` for what each method integrates") from None


def _compiled(system, method, options: dict, x0s: tuple, h, save_every: int, chunk_saves: int):
    key = (id(system), id(method), tuple(sorted(options.items())), save_every, chunk_saves,
           tuple(x.shape for x in x0s))
    entry = _COMPILED.get(key)
    if entry is None:
        scheme = _build(system, method, x0s[0], options)

        def start(x0s, h):
            state = scheme.init(*x0s, h)
            return state, _node_outputs(system, scheme.observe(state, h))

        start_c = jax.jit(start).lower(x0s, h).compile()
        state0, _ = start_c(x0s, h)
        chunk_c = jax.jit(_make_chunk(system, scheme, chunk_saves, state0, h)).lower(
            state0, h, jnp.array(0, jnp.int32), jnp.array(save_every, jnp.int32)).compile()
        entry = (system, method, start_c, chunk_c)  # keep system/method alive: ids stay valid
        _COMPILED[key] = entry
    return entry[2], entry[3]


# ---------------------------------------------------------------------------------------------
# the public entry point
# ---------------------------------------------------------------------------------------------

def _check_run(h, t_final, save_every, method):
    """Validated (h, t_final, save_every, Method) of a run."""
    h = _positive_finite(h, "h")
    t_final = _positive_finite(t_final, "t_final")
    if not isinstance(save_every, (int, np.integer)) or save_every < 1:
        raise InputError(f"save_every must be an integer ≥ 1; got {save_every!r}")
    return h, t_final, int(save_every), methods.get(method)


def _run_chunks(chunk, state, hj, out0, n_saves, chunk_saves, save_every, progress, md, batched,
                members=None):
    """Drive the compiled chunks until n_saves nodes are done or a step fails.

    Returns (arrays, failure, it_total, it_max, wall): the node arrays (leading node axis, after
    the member axis when ``batched``), None or (member, step) of the first failure (member 0 for
    a single run), and Newton statistics. ``members``: keep only the first ``members`` members
    of a batched run (the others pad the batch to a multiple of the device count).
    """
    ax = 1 if batched else 0
    keep_m = slice(None) if members is None else slice(0, members)

    def first(x, n):
        return x[keep_m, :n] if batched else x[:n]

    def mine(x):
        return np.asarray(x)[keep_m] if batched else np.asarray(x)

    t_run = time.perf_counter()
    pieces = [jax.tree_util.tree_map(lambda x: np.expand_dims(mine(x), ax), out0)]
    done, it_total, it_max, failure = 0, 0, 0, None
    bar = _ProgressBar(progress, n_saves, md)
    try:
        while done < n_saves:
            n_active = min(chunk_saves, n_saves - done)
            state, outs, ok, fail_at, it_sum, it_mx = chunk(
                state, hj, jnp.array(n_active, jnp.int32), jnp.array(save_every, jnp.int32))
            outs = jax.tree_util.tree_map(np.asarray, outs)
            ok, fail_at = np.atleast_1d(mine(ok)), np.atleast_1d(mine(fail_at))
            it_total += int(np.sum(mine(it_sum)))
            it_max = max(it_max, int(np.max(mine(it_mx))))
            if not ok.all():
                i = int(np.argmin(ok))
                failure = (i, done * save_every + int(fail_at[i]))
                pieces.append(jax.tree_util.tree_map(lambda x: first(x, int(fail_at[i]) // save_every), outs))
                break
            pieces.append(jax.tree_util.tree_map(lambda x: first(x, n_active), outs))
            done += n_active
            bar.update(done, time.perf_counter() - t_run)
    finally:
        bar.close()
    arrays = {k: np.concatenate([p_[k] for p_ in pieces], axis=ax) for k in pieces[0]}
    return arrays, failure, it_total, it_max, time.perf_counter() - t_run


def _split_initial_state(system, kwargs: dict):
    """Pop the system's initial-state keywords (``system.state_names``) from kwargs."""
    names = tuple(getattr(system, "state_names", ("q0", "v0")))
    missing = [n for n in names if n not in kwargs]
    if missing:
        raise InputError(f"{getattr(system, 'name', 'system')}: missing initial state "
                         f"{', '.join(missing)} (this system takes {', '.join(names)})")
    return names, [kwargs.pop(n) for n in names]


def integrate(system, method, *, h, t_final, save_every: int = 1, project: bool = False,
              progress: bool | None = None, chunk_steps: int = CHUNK_STEPS,
              metadata: dict | None = None, **kwargs) -> Trajectory:
    """Integrate a nonholonomic system with a structure-preserving method.

    Parameters
    ----------
    system : NonholonomicSystem (or another system kind: see "System kinds" below).
    method : registered name (see ``dl.methods.available()``) or a Method object.
    q0, v0 : (n,) initial configuration and velocity; v0 must satisfy μ(q0) v0 = ν(q0) to 1e-10
        (relative to max(1, |v0|)) unless ``project=True``. (Other system kinds take the initial
        state under the names in ``system.state_names``.)
    h : step size (s), > 0.
    t_final : final time (s), > 0; the number of steps is ceil(t_final / h) rounded up to a
        multiple of ``save_every`` (``metadata['t_final']`` is the time reached).
    save_every : keep every K-th node (K ≥ 1).
    project : project a constraint-violating v0 onto the constraint space (kinetic metric).
    progress : show a progress bar (None: when stderr is a terminal and the run lasts > 1 s).
    chunk_steps : steps per compiled chunk (memory / progress granularity).
    metadata : extra entries for ``Trajectory.metadata`` (e.g. model parameters).
    **options : passed to the method's ``build`` (e.g. ``fast_path=False``, ``rtol=1e-13``,
        ``startup="legendre"``).

    System kinds (the protocol the engine relies on): ``system.state_names`` (the keywords of
    the initial state, e.g. ``("q0", "v0")``), ``system.check_initial_state(*arrays,
    project=False)`` (validated float64 arrays), ``system.diagnostics(obs)`` (a dict with at
    least ``energy`` and ``constraint_residual`` from a node observation). The method's
    ``observe`` returns named node arrays; names other than the standard ones (t, q, v, p, lam,
    energy, constraint_residual) go to ``Trajectory.extra`` (e.g. ``traj.R``).

    Returns
    -------
    Trajectory with t (N+1,), q, v, p (N+1, n), lam (N+1, m) or None, energy (N+1,),
    constraint_residual (N+1, m) and metadata (incl. Newton statistics, wall time, steps/s).

    Raises
    ------
    InputError (bad h, t_final, save_every, q0, v0, system callables), ConstraintViolationError,
    UnknownNameError (method), ConvergenceError (a step failed; ``.trajectory`` holds the nodes
    computed before it).
    """
    h, t_final, save_every, method = _check_run(h, t_final, save_every, method)
    names, state_in = _split_initial_state(system, kwargs)
    options = kwargs
    x0s = tuple(np.asarray(x, np.float64) for x in system.check_initial_state(*state_in, project=project))
    n_steps = step_count(h, t_final, save_every)
    md = {
        "system": system.name, "method": method.name, "traits": method.traits.as_dict(),
        "h": h, "t_final": n_steps * h, "n_steps": n_steps, "save_every": save_every,
        "options": {k: v for k, v in options.items()},
        **{name: x.tolist() for name, x in zip(names, x0s)},
        "dalembert_version": __version__, "jax_version": jax.__version__,
    }
    md.update(metadata or {})
    if not method.compiled:
        return _integrate_uncompiled(system, method, x0s, h, n_steps, save_every, md, options)
    return _integrate_compiled(system, method, x0s, h, n_steps, save_every, progress,
                               chunk_steps, md, options)


def _integrate_uncompiled(system, method, x0s, h, n_steps, save_every, md, options):
    t = h * np.arange(0, n_steps + 1, save_every)
    t0 = time.perf_counter()
    out = method.solve(system, *x0s, t, **options)
    wall = time.perf_counter() - t0
    md.update(out[-1])
    md.update({"wall_time_s": wall, "steps_per_second": None, "node_velocity": method.traits.node_velocity})
    if isinstance(out[0], dict):          # a system kind whose state is not (q, v)
        obs = {k: jnp.asarray(a) for k, a in out[0].items()}
        diag = jax.vmap(system.diagnostics)(obs)
        return _trajectory(t, dict(out[0], **{k: np.asarray(a) for k, a in diag.items()}), md)
    q, v = out[0], out[1]
    d = {k: np.asarray(a) for k, a in _diagnostics_fn(system)(jnp.asarray(q), jnp.asarray(v)).items()}
    energy, res, lam = d.pop("energy"), d.pop("constraint_residual"), d.pop("lam", None)
    p = np.asarray(jax.vmap(system.momentum)(jnp.asarray(q), jnp.asarray(v)))
    return Trajectory(t=t, q=q, v=v, p=p, lam=lam, energy=energy, constraint_residual=res,
                      metadata=md, extra=d)


_DIAG: dict = {}


def _diagnostics_fn(system):
    if id(system) not in _DIAG:
        f = jax.jit(jax.vmap(system.reference_diagnostics))
        _DIAG[id(system)] = (system, f)
    return _DIAG[id(system)][1]


def _integrate_compiled(system, method, x0s, h, n_steps, save_every, progress, chunk_steps, md,
                        options):
    n_saves = n_steps // save_every
    chunk_saves = _chunk_saves(n_saves, save_every, chunk_steps)
    x0j, hj = tuple(jnp.asarray(x) for x in x0s), jnp.asarray(h, jnp.float64)
    t_compile = time.perf_counter()
    start, chunk = _compiled(system, method, options, x0j, hj, save_every, chunk_saves)
    t_run = time.perf_counter()
    compile_s = t_run - t_compile
    state, out0 = start(x0j, hj)
    arrays, failure, it_total, it_max, wall = _run_chunks(
        chunk, state, hj, out0, n_saves, chunk_saves, save_every, progress, md, batched=False)
    failure = None if failure is None else failure[1]
    n_nodes = next(iter(arrays.values())).shape[0]
    steps_done = failure if failure is not None else n_steps
    md.update({
        "wall_time_s": wall, "compile_time_s": compile_s,
        "steps_per_second": steps_done / wall if wall > 0 else None,
        "newton": {"total_iterations": it_total, "max_iterations": it_max,
                   "mean_iterations": it_total / max(steps_done, 1)},
        "node_velocity": method.traits.node_velocity,
    })
    traj = _trajectory(h * save_every * np.arange(n_nodes), arrays, md)
    if failure is not None:
        kind = ("did not converge (Newton)" if method.traits.implicit
                else "produced non-finite values")
        raise ConvergenceError(
            f"{method.name}: step {failure} (t = {failure * h:.6g} → {(failure + 1) * h:.6g}) "
            f"{kind} or gave a non-finite state; {n_nodes} nodes up to t = {traj.t[-1]:.6g} are "
            f"kept in .trajectory (try a smaller h)", step=failure, time=failure * h, trajectory=traj)
    monitors.post_run_checks(traj, method)
    return traj


def _trajectory(t, arrays: dict, md) -> Trajectory:
    """A Trajectory from named node arrays: standard names as fields, the rest as extra."""
    std = ("q", "v", "p", "lam", "energy", "constraint_residual")
    fields = {k: arrays.pop(k) for k in std if k in arrays}
    return Trajectory(t=t, metadata=md, extra=arrays, **fields)


class _ProgressBar:
    """A rich progress bar on stderr, started only when the run is long enough to need one."""

    def __init__(self, progress, total, md):
        self.want = progress
        self.total = total
        self.label = f"{md['system']} · {md['method']}"
        self.bar = None
        self.task = None

    def update(self, done, elapsed):
        if self.bar is None:
            show = self.want if self.want is not None else sys.stderr.isatty()
            expected = elapsed * self.total / max(done, 1)
            if not show or expected < 1.0 or done >= self.total:
                return
            from rich.progress import (BarColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)
            from rich.console import Console
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>5.1f}%"),
                                TimeElapsedColumn(), TimeRemainingColumn(),
                                console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=self.total)
        self.bar.update(self.task, completed=done)

    def close(self):
        if self.bar is not None:
            self.bar.stop()


# ---------------------------------------------------------------------------------------------
# ensembles
# ---------------------------------------------------------------------------------------------

class Ensemble:
    """B trajectories of one system and method, integrated together.

    t : (N+1,) times.  Node arrays by name, each of shape (B, N+1, ...), as attributes
    (``ens.q``, ``ens.energy``, ...) and in ``ens.arrays``; ``metadata`` as for a Trajectory.
    """

    def __init__(self, t, arrays: dict, metadata: dict):
        self.t = t
        self.arrays = arrays
        self.metadata = metadata

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

    def member(self, i: int) -> Trajectory:
        """Member i as a Trajectory (with the arrays that were kept)."""
        return _trajectory(self.t, {k: v[i] for k, v in self.arrays.items()}, dict(self.metadata, member=i))


def _shard_map():
    """jax.shard_map and the keyword that switches off its replication check (JAX ≥ 0.6:
    ``jax.shard_map(check_vma=)``; older: ``jax.experimental.shard_map.shard_map(check_rep=)``)."""
    try:
        from jax import shard_map
        return shard_map, "check_vma"
    except ImportError:                                   # pragma: no cover - older JAX
        from jax.experimental.shard_map import shard_map
        return shard_map, "check_rep"


def _over_devices(fn, n_batched: int, devices):
    """``fn`` (vmapped over the leading member axis of its first ``n_batched`` arguments) run
    with the members split evenly over ``devices``: each device runs ``fn`` on its own members,
    with no communication (``shard_map``); the other arguments are replicated. The member count
    must be a multiple of ``len(devices)``. One device: ``fn`` itself."""
    if len(devices) < 2:
        return fn
    from jax.sharding import Mesh, PartitionSpec

    shard_map, check = _shard_map()
    mesh = Mesh(np.array(devices), ("members",))

    def run(*args):
        specs = tuple(PartitionSpec("members") if i < n_batched else PartitionSpec() for i in range(len(args)))
        return shard_map(fn, mesh=mesh, in_specs=specs, out_specs=PartitionSpec("members"),
                         **{check: False})(*args)
    return run


def _pad_members(tree, devices):
    """Each leaf (leading member axis B) extended to the next multiple of ``len(devices)``
    members with copies of member 0 (padding members are integrated and dropped)."""
    def pad(a):
        extra = -a.shape[0] % len(devices)
        return a if extra == 0 else jnp.concatenate([a, jnp.repeat(a[:1], extra, axis=0)])
    return jax.tree_util.tree_map(pad, tree)


def _compile_members(scheme_of, lead, x0s, h, save_every, chunk_saves, keep):
    """The compiled start and chunk functions of an ensemble, vmapped over the members and split
    over the devices of :func:`ensemble_devices` (fewer when the program makes custom calls),
    and those devices. ``lead``: the members' batched arguments before the state (() or
    (params,)); ``scheme_of(*lead_i) -> (system, scheme)`` for one member's. The members (B of
    them in ``x0s`` and ``lead``) are padded for the devices (:func:`_pad_members`), as the
    caller must pad the arrays it runs them on."""
    k = len(lead)
    int32 = lambda i: jnp.array(i, jnp.int32)  # noqa: E731

    def start(*args):
        *p, x0s_, hh = args
        system, scheme = scheme_of(*p)
        state = scheme.init(*x0s_, hh)
        outs = _node_outputs(system, scheme.observe(state, hh))
        return state, {n: v for n, v in outs.items() if keep is None or n in keep}

    def chunk_v(one):
        """The vmapped chunk, for a member state of the shapes of ``one``."""
        def chunk(*args):
            *p, state, hh, n_active, n_sub = args
            system, scheme = scheme_of(*p)
            return _make_chunk(system, scheme, chunk_saves, one, hh, keep, members=True)(
                state, hh, n_active, n_sub)
        return jax.vmap(chunk, in_axes=(0,) * (k + 1) + (None,) * 3)

    start_v = jax.vmap(start, in_axes=(0,) * (k + 1) + (None,))
    B = x0s[0].shape[0]

    def lower(devices):
        lead_p, x0s_p = _pad_members(tuple(lead), devices), _pad_members(x0s, devices)
        start_l = jax.jit(_over_devices(start_v, k + 1, devices)).lower(*lead_p, x0s_p, h)
        state_s = start_l.out_info[0] if hasattr(start_l, "out_info") else \
            jax.eval_shape(_over_devices(start_v, k + 1, devices), *lead_p, x0s_p, h)[0]
        one = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape[1:], a.dtype), state_s)
        chunk_l = jax.jit(_over_devices(chunk_v(one), k + 1, devices)).lower(
            *lead_p, state_s, h, int32(0), int32(save_every))
        return start_l, chunk_l

    devices = ensemble_devices(B)
    start_l, chunk_l = lower(devices)
    if _custom_calls(start_l) or _custom_calls(chunk_l):        # LAPACK: fewer devices than pool threads
        fewer = ensemble_devices(B, custom_calls=True)
        if len(fewer) != len(devices):
            devices = fewer
            start_l, chunk_l = lower(devices)
    start_c, chunk_c = start_l.compile(), chunk_l.compile()
    return start_c, chunk_c, devices


def _compiled_ensemble(system, method, options, x0s, h, save_every, chunk_saves, keep):
    key = ("ensemble", id(system), id(method), tuple(sorted(options.items())), save_every,
           chunk_saves, tuple(x.shape for x in x0s), keep, len(ensemble_devices(x0s[0].shape[0])))
    entry = _COMPILED.get(key)
    if entry is None:
        scheme = _build(system, method, x0s[0][0], options)
        compiled = _compile_members(lambda: (system, scheme), (), x0s, h, save_every, chunk_saves, keep)
        entry = (system, method) + compiled   # keep system/method alive: ids stay valid
        _COMPILED[key] = entry
    return entry[2:]


def _compiled_param_ensemble(factory, method, options, params, x0s, h, save_every, chunk_saves, keep):
    """As :func:`_compiled_ensemble`, for a system factory vmapped over a parameter pytree: each
    member builds its system and scheme from its own (traced) parameters. ``params`` are padded
    to the devices' multiple inside the returned functions."""
    leaves, treedef = jax.tree_util.tree_flatten(params)
    key = ("param-ensemble", id(factory), id(method), tuple(sorted(options.items())), save_every,
           chunk_saves, tuple(x.shape for x in x0s), keep, treedef,
           tuple((a.shape, str(a.dtype)) for a in leaves), len(ensemble_devices(x0s[0].shape[0])))
    entry = _COMPILED.get(key)
    if entry is None:
        x0_one = x0s[0][0]

        def scheme_of(p):
            # what does not depend on the traced parameters (constant arrays of the system, a
            # method's once-per-build factorisations) is evaluated now, concretely, as in the
            # one-system case
            with jax.ensure_compile_time_eval():
                system = factory(p)
                return system, _build(system, method, x0_one, options)

        compiled = _compile_members(scheme_of, (params,), x0s, h, save_every, chunk_saves, keep)
        entry = (factory, method) + compiled
        _COMPILED[key] = entry
    start_c, chunk_c, devices = entry[2:]
    params = _pad_members(params, devices)
    return (lambda x0s, h: start_c(params, x0s, h),
            lambda state, h, n_active, n_sub: chunk_c(params, state, h, n_active, n_sub),
            devices)


def _checked_members(system, systems, batch, project):
    """The validated initial states of all members, as (B, ...) float64 arrays. Member 0 is
    checked as :func:`integrate` checks it (callables, shapes, values); a system with
    ``initial_states_ok`` then judges the values of all members in one vectorised call and only
    the members it flags are checked one by one (for their error message, or their projection).
    An error names the member."""
    B = batch[0].shape[0]

    def one(i):
        try:
            sys_i = system if systems is None else systems[i]
            return sys_i.check_initial_state(*[b[i] for b in batch], project=project)
        except InputError as exc:
            raise InputError(f"ensemble member {i}: {exc}") from exc

    first = one(0)
    fast = getattr(system, "initial_states_ok", None) if systems is None else None
    ok = np.asarray(fast(*batch), bool) if fast is not None and B > 1 else np.zeros(B, bool)
    members = [first] + [tuple(np.asarray(b[i], np.float64) for b in batch) if ok[i] else one(i)
                         for i in range(1, B)]
    return [np.stack([m[j] for m in members]) for j in range(len(batch))]


def _batched_params(params):
    """(params as a pytree of float64/int JAX arrays, B) for ``ensemble(params=...)``."""
    leaves, treedef = jax.tree_util.tree_flatten(params)
    if not leaves:
        raise InputError("ensemble: params must be a non-empty pytree of arrays with a leading member axis")
    arrs = []
    for a in leaves:
        a = np.asarray(a)
        if a.ndim < 1:
            raise InputError(f"ensemble: every params leaf needs a leading member axis; got a scalar {a!r}")
        if not np.all(np.isfinite(a)):
            raise InputError("ensemble: params must be finite")
        arrs.append(jnp.asarray(a, jnp.float64 if a.dtype.kind == "f" else a.dtype))
    sizes = {a.shape[0] for a in arrs}
    if len(sizes) != 1:
        raise InputError(f"ensemble: params leaves have different leading sizes {sorted(sizes)}")
    return jax.tree_util.tree_unflatten(treedef, arrs), sizes.pop()


def ensemble(system, method, *, h, t_final, save_every: int = 1, keep=None, project: bool = False,
             progress: bool | None = None, chunk_steps: int = CHUNK_STEPS,
             metadata: dict | None = None, params=None, **kwargs) -> Ensemble:
    """Integrate B trajectories in one compiled, vectorised (``jax.vmap``) call.

    On a CPU with several cores the members are split evenly over the JAX CPU devices that
    dalembert requests at import, one per thread of XLA's CPU pool, or one per core when the
    compiled step calls LAPACK (:func:`request_cpu_devices`, :func:`ensemble_devices`; B is
    padded to a multiple of the device count with copies of member 0, which are dropped): each
    device runs its own vmapped loop, with no communication. ``metadata["devices"]`` says how
    many were used.

    Parameters
    ----------
    system, method, h, t_final, save_every, project, progress, metadata :
        as for :func:`integrate`.
    chunk_steps : a compiled chunk keeps at most this many node records in all (B per saved
        node) and runs at most :data:`ENSEMBLE_CHUNK_MEMBER_STEPS` member-steps.
    q0, v0 (or the system's ``state_names``) : arrays of shape (B, n): one initial state per
        member; each is validated as in :func:`integrate`. With ``params``, an unbatched state
        (shape (n,)) is shared by all members.
    keep : None (all node arrays) or an iterable of names (e.g. ``("energy",)``) to keep; with
        ``save_every`` this bounds memory to B · (N/save_every) · (kept sizes).
    params : batched system parameters. ``system`` is then a *factory* ``params -> system`` and
        ``params`` a pytree (a dict, a tuple, one array) whose leaves all have the leading
        member axis B: member i integrates ``system(tree_map(lambda a: a[i], params))``. The
        factory must be traceable in the parameters (it is called under ``jax.vmap``, once with
        each member's concrete parameters to check its initial state, and the method's ``build``
        then runs on the traced system): parameters may enter the callables (potential, mass
        matrix, constraints, Π, H) but not decisions taken in Python (e.g. a mass matrix that
        does not depend on q is factored once, concretely, by several methods: a parameter in it
        raises InputError). Example, a sweep over a
        spring constant::

            def spring(p):
                return dl.NonholonomicSystem(mass_matrix=np.eye(3),
                                             potential=lambda q: 0.5 * p["k"] * q[0] ** 2, ...)
            ens = dl.ensemble(spring, "nh-rattle", params={"k": np.linspace(1, 2, 8)},
                              q0=q0, v0=v0, h=0.01, t_final=10.0)

        Each member equals ``integrate(system(params_i), ...)`` to round-off.
    **options : passed to the method's ``build``.

    Returns
    -------
    Ensemble with t (N+1,) and the kept node arrays of shape (B, N+1, ...);
    ``metadata["params"]`` holds the parameters (as lists) when given.

    Raises
    ------
    InputError (inconsistent batch sizes, bad members — the message names the member; a factory
    that is not traceable), ConvergenceError (the first member that failed, its step and time;
    ``.trajectory`` is that member's trajectory up to the failure).
    """
    h, t_final, save_every, method = _check_run(h, t_final, save_every, method)
    if not method.compiled:
        raise InputError(f"{method.name} does not run in the compiled engine; ensembles need a compiled method")
    factory = None
    if params is not None:
        if not callable(system) or hasattr(system, "check_initial_state"):
            raise InputError("ensemble(params=...): system must be a factory params -> system")
        factory = system
        params, B_p = _batched_params(params)
        member_params = [jax.tree_util.tree_map(lambda a, i=i: np.asarray(a[i]), params) for i in range(B_p)]
        systems = [factory(p) for p in member_params]
        system = systems[0]
    names, state_in = _split_initial_state(system, kwargs)
    batch = [np.asarray(x, np.float64) for x in state_in]
    if factory is not None:
        batch = [np.broadcast_to(b, (B_p,) + b.shape).copy() if b.ndim == 1 else b for b in batch]
    sizes = {nm: (b.shape[0] if b.ndim >= 1 else None) for nm, b in zip(names, batch)}
    if any(b.ndim < 2 for b in batch) or len(set(sizes.values())) != 1:
        raise InputError(f"ensemble initial states must be batched with one leading size B; got shapes "
                         + ", ".join(f"{nm} {b.shape}" for nm, b in zip(names, batch)))
    B = batch[0].shape[0]
    if factory is not None and B != B_p:
        raise InputError(f"ensemble: {B} initial states but {B_p} parameter sets")
    x0s = tuple(jnp.asarray(a) for a in _checked_members(system, systems if factory else None, batch, project))
    keep_t = None if keep is None else tuple(sorted(set(keep)))
    n_steps = step_count(h, t_final, save_every)
    n_saves = n_steps // save_every
    # a chunk keeps at most chunk_steps records in all (B per saved node) and runs at most
    # ENSEMBLE_CHUNK_MEMBER_STEPS member-steps (progress granularity)
    chunk_saves = min(_chunk_saves(n_saves, save_every, max(1, ENSEMBLE_CHUNK_MEMBER_STEPS // B)),
                      max(1, chunk_steps // B))
    md = {"system": system.name, "method": method.name, "traits": method.traits.as_dict(),
          "h": h, "t_final": n_steps * h, "n_steps": n_steps, "save_every": save_every,
          "members": B, "kept": list(keep_t) if keep_t else "all", "options": dict(kwargs),
          "dalembert_version": __version__, "jax_version": jax.__version__}
    if factory is not None:
        md["params"] = jax.tree_util.tree_map(lambda a: np.asarray(a).tolist(), params)
    md.update(metadata or {})
    hj = jnp.asarray(h, jnp.float64)
    t_c = time.perf_counter()
    if factory is None:
        start, chunk, devices = _compiled_ensemble(system, method, kwargs, x0s, hj, save_every, chunk_saves,
                                                   keep_t)
    else:
        try:
            start, chunk, devices = _compiled_param_ensemble(factory, method, kwargs, params, x0s, hj,
                                                             save_every, chunk_saves, keep_t)
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError) as exc:
            raise InputError(f"ensemble(params=...): {method.name} on this system needs concrete values of "
                             f"the parameters when it is built; batch over parameters that enter only the "
                             f"system's callables ({str(exc).splitlines()[0]})") from None
    x0s = _pad_members(x0s, devices)
    md["devices"] = len(devices)
    t_run = time.perf_counter()
    state, out0 = start(x0s, hj)
    arrays, failure, _, _, wall = _run_chunks(
        chunk, state, hj, out0, n_saves, chunk_saves, save_every, progress, md, batched=True, members=B)
    n_nodes = next(iter(arrays.values())).shape[1]
    t = h * save_every * np.arange(n_nodes)
    md.update({"wall_time_s": wall, "compile_time_s": t_run - t_c,
               "trajectory_steps_per_second": B * n_steps / wall if wall > 0 and failure is None else None})
    if failure is not None:
        i, k = failure
        good = k // save_every + 1
        traj = _trajectory(t[:good], {kk: v[i, :good] for kk, v in arrays.items()}, dict(md, member=i))
        raise ConvergenceError(f"{method.name}: ensemble member {i}, step {k} (t = {k * h:.6g}) failed "
                               f"(Newton did not converge or non-finite values); try a smaller h",
                               step=k, time=k * h, trajectory=traj)
    return Ensemble(t, arrays, md)
