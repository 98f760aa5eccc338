"""Single runs: :func:`integrate` (validated, chunked, with progress and errors) and :func:`solve`
(the pure functional core, for use inside a user's ``jax.jit`` / ``jax.vmap`` / ``jax.grad``)."""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .. import clock, methods, monitors
from .._version import __version__
from ..errors import ConvergenceError, InputError
from ..methods.kinds import AUTO, choose, resolve
from ..results.files import load
from ..results.metadata import checked_metadata, json_default
from ..results.trajectory import Trajectory, trajectory
from ..solvers import newton_module as newton_mod
from ..systems.kind import kind_name
from . import loop
from . import stream as stream_mod
from .dense import terminal_stop
from .programs import bind, check_options, options_key, single_run_programs, view_of
from .xla import jit_options


# ---------------------------------------------------------------------------------------------
# input checks shared by integrate and ensemble
# ---------------------------------------------------------------------------------------------

def _positive_finite(x, name):
    if isinstance(x, jax.core.Tracer):
        raise InputError(f"{name} is a traced value: dl.integrate validates its input and returns "
                         f"NumPy arrays, so it cannot run inside jax.jit/vmap/grad; use dl.solve "
                         f"(the pure functional core) there")
    xf = _finite(x, name)
    if xf <= 0:
        raise InputError(f"{name} must be > 0; got {xf}")
    return xf


def check_run(h, t_final, save_every, method):
    """Validated (h, t_final, save_every, Method) of a run."""
    h = _positive_finite(h, "h")
    t_final = _positive_finite(t_final, "t_final")
    if not isinstance(save_every, (int, np.integer)) or save_every < 1:
        raise InputError(f"save_every must be an integer ≥ 1; got {save_every!r}")
    return h, t_final, int(save_every), (method if method in AUTO else methods.get(method))


def split_initial_state(system, kwargs: dict):
    """Pop the system's initial-state keywords (``system.state_names``) from kwargs."""
    names = tuple(getattr(system, "state_names", ("q0", "v0")))
    missing = [n for n in names if n not in kwargs]
    if missing:
        raise InputError(f"{getattr(system, 'name', 'system')}: missing initial state "
                         f"{', '.join(missing)} (this system takes {', '.join(names)})")
    return names, [kwargs.pop(n) for n in names]


def failure_error(method, step, h, cause, traj, kept: str, where: str = "", t0: float = 0.0) -> ConvergenceError:
    """The ConvergenceError of a failed step: which step and time, why (the cause code of
    :data:`dalembert.solvers.newton.CAUSES`) and what helps for that cause, what is kept."""
    two_step = (" {0} is a two-step method, whose parasitic mode can turn a stable motion into a "
                "failure at any h: the one-step self-adjoint methods (nh-rattle-sym, gni-midpoint-sym, "
                "nh-rattle-4) do not have one.".format(method.name)
                if getattr(method.traits, "two_step", False) else "")
    return ConvergenceError(
        f"{method.name}: {where}step {step} (t = {t0 + step * h:.6g} → {t0 + (step + 1) * h:.6g}) failed: "
        f"{newton_mod.describe(cause)}.{two_step} {kept}", step=step, time=t0 + step * h, trajectory=traj,
        cause=cause)


def _controlled(system, controls, n_steps, **grid):
    """``system.with_controls(controls, **grid)``, an array of controls checked for one row per
    step (``n_steps()`` steps; called only for an array). Raises InputError for a system that takes
    no controls, and as :meth:`~dalembert.NonholonomicSystem.with_controls` does."""
    if not hasattr(system, "with_controls"):
        raise InputError(f"controls: {getattr(system, 'name', 'this system')!r} takes no controls")
    system = system.with_controls(controls, **grid)
    if not callable(controls):
        expected = n_steps()
        if np.shape(controls)[0] != expected:
            raise InputError(f"controls has {np.shape(controls)[0]} rows; the run has {expected} steps: give "
                             f"one row per step")
    return system


def _finite(x, name):
    """float(x), finite (InputError otherwise)."""
    try:
        xf = float(x)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number; got {x!r}") from None
    if not math.isfinite(xf):
        raise InputError(f"{name} must be finite; got {xf}")
    return xf


def chart_metadata(arrays: dict, h: float) -> dict:
    """For a run through an atlas of charts (node arrays ``chart_switches`` and
    ``last_chart_switch``): the number of chart switches and their times. A time is exact
    (h × the step after which the switch happened) when at most one switch falls between two
    saved nodes; ``chart_switch_times_complete`` says whether that held for all."""
    if "chart_switches" not in arrays or "last_chart_switch" not in arrays:
        return {}
    count = np.asarray(arrays["chart_switches"]).astype(np.int64)
    last = np.asarray(arrays["last_chart_switch"]).astype(np.int64)
    if count.ndim != 1:                               # an ensemble: counts per member only
        return {"chart_switches": count[..., -1].tolist()}
    jumps = np.flatnonzero(np.diff(count) > 0) + 1
    return {"chart_switches": int(count[-1]),
            "chart_switch_times": [float(h * (last[i] + 1)) for i in jumps],
            "chart_switch_times_complete": bool(np.all(np.diff(count) <= 1))}


def system_fingerprint(system, x0s) -> str | None:
    """The system's content fingerprint at the initial state x0s
    (:meth:`~dalembert.systems.kind.SystemKind.fingerprint`), None for an object without one.
    Raises InputError when the initial state does not fit the system."""
    fp = getattr(system, "fingerprint", None)
    if not callable(fp):
        return None
    try:
        return fp(*x0s)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{getattr(system, 'name', 'system')}: cannot evaluate the system at the "
                         f"checkpoint's initial state ({exc}); resume with the same system") from None


def run_metadata(system, method, h, n_steps, save_every, options, **extra) -> dict:
    """The metadata every run records."""
    labels = {k: list(v) for k, v in getattr(system, "labels", {}).items() if v is not None}
    return {"system": system.name, "kind": kind_name(system),
            "method": method.name, "traits": method.traits.as_dict(), "h": h,
            "t_final": n_steps * h, "n_steps": n_steps, "save_every": save_every,
            "options": dict(options), **labels, **extra,
            "dalembert_version": __version__, "jax_version": jax.__version__}


# ---------------------------------------------------------------------------------------------
# integrate
# ---------------------------------------------------------------------------------------------

#: Default seconds between two checkpoints of a run that writes them.
CHECKPOINT_EVERY = 60.0


def integrate(system, method="auto", *, h, t_final, t0: float = 0.0, save_every: int = 1, project: bool = False,
              progress: bool | None = None, chunk_steps: int = loop.CHUNK_STEPS,
              metadata: dict | None = None, checkpoint=None,
              checkpoint_every: float = CHECKPOINT_EVERY, stream=None, save_at=None, events=None,
              controls=None, keep_checkpoint: bool = False, **kwargs) -> Trajectory:
    """Integrate a nonholonomic system with a structure-preserving method.

    Parameters
    ----------
    system : a system kind (NonholonomicSystem, AlmostPoissonSystem, EulerPoincareSuslovSystem,
        LieNonholonomicSystem, ReducedSystem, ...; see :mod:`dalembert.systems.kind`).
    method : registered name (see ``dl.methods.available()``), a Method object, or ``"auto"``
        (the default; the rule of :func:`dl.recommend <dalembert.methods.kinds.recommend>`, by
        the system's kind and features; the choice is in ``traj.metadata["method"]``). It must
        integrate the system's kind, or a kind the system has a registered view to (the
        almost-Poisson reduction of a NonholonomicSystem for the discrete-gradient methods).
    q0, v0 : (n,) initial configuration and velocity; v0 must satisfy μ(q0) v0 = ν(q0) to 1e-10
        (relative to max(1, |v0|)) unless ``project=True``. (Other system kinds take the initial
        state under the names in ``system.state_names``.)
    h : step size (s), > 0.
    t_final : final time (s), > 0: a whole number of steps of ``h`` (to round-off); the run ends
        exactly there (``InputError`` otherwise, with the nearest t_final and h that are).
    save_every : keep every K-th node (K ≥ 1). When K does not divide the number of steps, the
        last node is a partial one, at t_final (``t`` then ends with a shorter interval).
    project : project a constraint-violating v0 onto the constraint space (kinetic metric).
    progress : show a progress bar (None: when stderr is a terminal and the run lasts > 1 s).
    chunk_steps : at most this many steps per call of the compiled chunk (progress granularity,
        and how soon an interrupt is honoured).
    metadata : extra entries for ``Trajectory.metadata`` (e.g. model parameters).
    checkpoint : a path (``.npz``): write a checkpoint there every ``checkpoint_every`` seconds
        and when the run is interrupted (:mod:`dalembert.engine.checkpoint`; atomic writes);
        :func:`resume` continues it. Compiled methods only. When the run completes, the
        checkpoint is removed (after a streamed run's file is complete). A path that already holds
        a checkpoint of *this* run (same system — by name, kind and content fingerprint —, method,
        options, h, t_final, save_every, initial state, metadata and stream) continues it, as
        :func:`resume` would (``metadata['resumed_at_step']`` says where); a path holding another
        run's checkpoint, or a file that is not a checkpoint, is refused (InputError): neither is
        overwritten nor ignored.
    checkpoint_every : seconds between checkpoints (default 60; ``math.inf``: only when
        interrupted).
    keep_checkpoint : leave the checkpoint of a completed run in place (default False: removed);
        for a caller that removes it itself once it has saved the result (``dalembert run``).
    stream : a path (``.h5``): write the nodes to this HDF5 file chunk by chunk instead of
        keeping them in memory (:mod:`dalembert.engine.stream`), so that memory stays bounded
        whatever the run's length. The file is written as ``<stream>.partial`` and renamed when
        the run completes (or fails: it then holds the nodes before the failure); with
        ``checkpoint`` the checkpoint holds the state only. The returned Trajectory reads the
        file: its node arrays are DiskArrays, read when indexed (``traj.q[:]`` reads all,
        ``traj.q[::100]`` every 100th node). Compiled methods only.
    controls : for a system whose force takes a control, f(q, v, t, u) (any kind with
        ``with_controls``): an (n_steps, c) float array, row k held over step k (InputError for
        another number of rows, a 1-D array, non-finite entries, or a system whose force takes
        none), or a callable t -> (c,). An array is an *argument* of the compiled programs: a new
        array of the same shape reuses them (no compilation; model-predictive control calls
        ``integrate`` with a new U at every iteration), with the results of a system built with
        that array bit for bit. A callable is traced into the programs, which are then compiled
        for each call. A checkpoint records the array (the system's fingerprint): a run with
        other controls does not continue it.
    **options : passed to the method's ``build`` (e.g. ``fast_path=False``, ``rtol=1e-13``,
        ``startup="legendre"``), except the engine's own: ``check_every=K`` (check the node's
        outputs and the system's invariants every K steps, not only at the saved nodes) and
        ``on_parasitic="stop"`` (the two-step families: fail the step at which the period-2
        statistic exceeds ``dl.monitors.THRESHOLD``, cause "parasitic"; default "warn").

    Computation is in float64 (importing dalembert enables ``jax_enable_x64``). One compiled
    program per (system object, method, options, state shapes) serves every initial state, h,
    t_final and save_every (for a small program its chunk is compiled in two sizes, each on
    first use: runs of at most :data:`~dalembert.engine.loop.SHORT_CHUNK_SAVES` saved nodes have
    a small one, :class:`~dalembert.engine.programs.ChunkPrograms`); it is
    kept with the system object (``dl.clear_caches()`` drops it) and on disk, for later processes (:mod:`dalembert.engine.disk_cache`; the method's step is
    traced once for all the programs that hold it).
    ``integrate`` validates its input and returns NumPy arrays, so it does not run inside
    ``jax.jit``/``vmap``/``grad``: use :func:`solve` there.

    Interrupts: Ctrl-C (``KeyboardInterrupt``) during a run raises
    :class:`~dalembert.engine.interrupts.RunInterrupted` (a ``KeyboardInterrupt``) whose
    ``.trajectory`` holds the nodes of the completed chunks and ``.checkpoint`` the checkpoint
    written (if ``checkpoint`` was given).

    Returns
    -------
    Trajectory with t (N+1,), q, v, p (N+1, n), lam (N+1, m) or None, energy (N+1,),
    constraint_residual (N+1, m), further node arrays of the kind or method in ``.extra``, and
    metadata (kind, Newton statistics, wall time, steps/s).

    Raises
    ------
    InputError (bad h, t_final, save_every, initial state, system callables; a method that does
    not integrate this kind — raised before anything is traced), ConstraintViolationError,
    UnknownNameError (method), ConvergenceError (a step failed; ``.trajectory`` holds the nodes
    computed before it), RunInterrupted.
    """
    t0 = _finite(t0, "t0")
    if _finite(t_final, "t_final") <= t0:
        raise InputError(f"t_final ({float(t_final):g}) must be after t0 ({t0:g}): the run goes from t0 to t_final")
    if controls is not None:
        hf = _positive_finite(h, "h")
        system = _controlled(system, controls, lambda: loop.step_count(hf, float(t_final) - t0, 1), h=hf, t0=t0)
    if save_at is not None or events:
        from .dense import integrate_dense
        return integrate_dense(integrate, system, method, h=h, t_final=t_final, t0=t0, save_every=save_every,
                               project=project, progress=progress, chunk_steps=chunk_steps, metadata=metadata,
                               checkpoint=checkpoint, checkpoint_every=checkpoint_every, stream=stream,
                               keep_checkpoint=keep_checkpoint, save_at=save_at, events=events, **kwargs)
    h, duration, save_every, method = check_run(h, float(t_final) - t0, save_every, method)
    checkpoint, stream = check_output_paths(checkpoint, stream)      # before any work
    metadata = checked_metadata(metadata)         # at the call, not when the result is saved
    if method not in AUTO:
        resolve(system, method)                   # incompatible kinds: refused before any work
    names, state_in = split_initial_state(system, kwargs)
    options = kwargs
    with clock.at(t0, 0):                         # V(q, t), ν(q, t) checked at the run's start
        x0s = tuple(np.asarray(x, np.float64) for x in system.check_initial_state(*state_in, project=project))
    method = choose(system, method, x0s)          # "auto": the rule of dl.recommend
    if _timed(system) and method.compiled:
        options = dict(options, t0=t0)            # the engine's clock starts there
    resolve(system, method, x0s)                  # features the method does not take: before tracing
    n_steps = loop.step_count(h, duration, save_every)
    md = run_metadata(system, method, h, n_steps, save_every, options,
                      **{name: x.tolist() for name, x in zip(names, x0s)})
    if t0:
        md["t0"], md["t_final"] = t0, t0 + n_steps * h
    md.update(metadata or {})
    if not method.compiled:
        for name, given in (("checkpoint", checkpoint), ("stream", stream)):
            if given is not None:
                raise InputError(f"{name}: {method.name} does not run in the compiled engine, which "
                                 f"writes {name}s")
        return _integrate_uncompiled(system, method, x0s, h, n_steps, save_every, md, options)
    if checkpoint is not None and checkpoint.exists():   # this run's, continued; another's, refused
        ck = _checkpoint_of_this_run(checkpoint, system, md, x0s, stream)
        run = _Run(system, method, x0s, h, n_steps, save_every, dict(ck["metadata"]), options, progress,
                   chunk_steps, checkpoint, checkpoint_every, stream_of_checkpoint(ck), keep_checkpoint)
        return run.go(resume_from=ck)
    if stream is not None:
        md["stream"] = str(stream)
    run = _Run(system, method, x0s, h, n_steps, save_every, md, options, progress, chunk_steps,
               checkpoint, checkpoint_every, stream, keep_checkpoint)
    return run.go()


#: Metadata entries of a run that do not identify it (compared otherwise, or version-dependent).
_NOT_IDENTITY = ("traits", "dalembert_version", "jax_version", "stream", "system_fingerprint")


def _checkpoint_of_this_run(path, system, md, x0s, stream) -> dict:
    """The checkpoint at ``path`` (:func:`dalembert.engine.checkpoint.read`) when it is one of the
    run ``md`` describes (metadata entries but :data:`_NOT_IDENTITY`, the stream file and the
    system's content fingerprint all the same).

    Raises InputError (one line) for a file that is not a checkpoint, or one of another run,
    naming what differs."""
    from . import checkpoint as ckpt_mod
    what_to_do = ("resume that run (dl.resume(path, system); CLI: dalembert run --resume DIR), remove the file, "
                  "or choose another checkpoint path (CLI: --out)")
    try:
        ck = ckpt_mod.read(path)
    except InputError as exc:
        raise InputError(f"checkpoint: {exc}; it is left as it is: remove it or choose another checkpoint "
                         f"path") from None
    theirs = ck["metadata"]
    try:
        mine = json.loads(json.dumps(md, default=json_default))
    except TypeError as exc:
        raise InputError(f"checkpoint: the run's options/metadata must be JSON values ({exc})") from None

    def shown(k):
        a, b = theirs.get(k), mine.get(k)
        short = all(isinstance(x, (str, int, float, type(None))) for x in (a, b))
        return f"{k} ({a!r} there, {b!r} here)" if short else k
    differ = [shown(k) for k in sorted((set(theirs) | set(mine)) - set(_NOT_IDENTITY)) if theirs.get(k) != mine.get(k)]
    there = stream_of_checkpoint(ck)
    if (there is None) != (stream is None) or (there is not None and Path(there).resolve() != Path(stream).resolve()):
        differ.append(f"stream ({there} there, {stream} here)")
    fp = theirs.get("system_fingerprint")
    if not differ and fp is not None and system_fingerprint(system, x0s) != fp:
        differ.append("the system's functions (same name, other values at the probe states)")
    if differ:
        raise InputError(f"checkpoint {ck['path']} holds another run's checkpoint (differs in: {'; '.join(differ)}): "
                         f"{what_to_do}")
    return ck


def resume(path, system=None, *, progress: bool | None = None, checkpoint=True,
           checkpoint_every: float = CHECKPOINT_EVERY, keep_checkpoint: bool = False) -> Trajectory:
    """Continue a run from its checkpoint (written by ``integrate(..., checkpoint=path)`` or
    ``dalembert run --checkpoint``); the result equals the uninterrupted run's bit for bit.

    Parameters
    ----------
    path : the checkpoint file, or a run directory holding ``checkpoint.npz``.
    system : the system object of the run. Not needed for a built-in model run from the command
        line (the checkpoint names the model and its parameters); for a user's system pass the
        same system (the checkpoint holds data, not code).
    progress : as for :func:`integrate`.
    checkpoint : True (default): keep checkpointing to the same file; a path: to that file;
        False/None: write none.
    checkpoint_every : seconds between checkpoints.
    keep_checkpoint : leave the checkpoint the run writes (``checkpoint``; with the default True,
        the one it resumed from) in place when the run completes (default False: removed once
        the result is complete). With ``checkpoint=False`` the file resumed from is left as it is.

    Raises
    ------
    InputError (no or damaged checkpoint; a system whose name, kind or state shapes differ from
    the checkpoint's, or whose content does — the checkpoint holds the system's fingerprint,
    :meth:`~dalembert.systems.kind.SystemKind.fingerprint`, the values of its functions at probe
    states near the initial state; a user system not given), and as :func:`integrate`.
    """
    from . import checkpoint as ckpt_mod

    ck = ckpt_mod.read(path)
    md = dict(ck["metadata"])
    if system is None:
        if "model" not in md:
            raise InputError(f"{ck['path']} is a checkpoint of a user system ({md.get('system')}): pass "
                             f"it again, dl.resume(path, system=...)")
        from .. import models
        system = models.get(md["model"], **md.get("parameters", {})).system
    if getattr(system, "name", None) != md.get("system"):
        raise InputError(f"the checkpoint is of system {md.get('system')!r}; got {getattr(system, 'name', system)!r}")
    method = methods.get(md["method"])
    names = tuple(getattr(system, "state_names", ("q0", "v0")))
    try:
        x0s = tuple(np.asarray(md[n], np.float64) for n in names)
    except KeyError as exc:
        raise InputError(f"the checkpoint has no initial state {exc} of {system.name}") from None
    written_by = md.get("system_fingerprint")
    if written_by is not None and kind_name(system) != md.get("kind"):
        raise InputError(f"checkpoint {ck['path']} was written by a different system (a {md.get('kind')} "
                         f"system, this one is {kind_name(system)}); resume with the same system or "
                         f"start again")
    if written_by is not None and system_fingerprint(system, x0s) != written_by:
        raise InputError(f"checkpoint {ck['path']} was written by a different system (same name "
                         f"{md.get('system')!r}, but its functions give other values at the probe "
                         f"states); resume with the same system or start again")
    if checkpoint is True:
        checkpoint = ck["path"]
    elif checkpoint:
        from .._io import check_output_file
        checkpoint = check_output_file(checkpoint, "checkpoint")
    run = _Run(system, method, x0s, float(md["h"]), int(md["n_steps"]), int(md["save_every"]), md,
               dict(md.get("options", {})), progress, loop.CHUNK_STEPS, checkpoint or None,
               checkpoint_every, stream_of_checkpoint(ck), keep_checkpoint)
    return run.go(resume_from=ck)


def check_output_paths(checkpoint, stream):
    """(checkpoint, stream) as Paths (or None), checked before a run: paths of files in writable
    directories, not directories; a stream file in its checkpoint's directory (or below it), where
    a resumed run looks for it (:func:`stream_of_checkpoint`).

    Raises InputError naming the path and what to do."""
    from .._io import check_output_file
    checkpoint = None if checkpoint is None else check_output_file(checkpoint, "checkpoint")
    stream = None if stream is None else check_output_file(stream, "stream")
    if stream is not None:
        check_output_file(stream_mod.partial_path(stream), "stream")
        if checkpoint is not None and not _inside(stream, checkpoint.parent):
            raise InputError(f"stream {stream} is outside the directory of checkpoint {checkpoint}: a resumed "
                             f"run writes only inside its checkpoint's directory; put both in one directory")
    return checkpoint, stream


def _inside(path, directory) -> bool:
    """Whether ``path`` resolves inside ``directory`` (symbolic links followed)."""
    return Path(path).resolve().is_relative_to(Path(directory).resolve())


def stream_of_checkpoint(ck) -> str | None:
    """The stream file of a checkpoint's run: its ``stream`` path (relative to the checkpoint's
    directory, as :class:`_Run` writes it) resolved against the checkpoint's directory, wherever
    the resuming process runs.

    Raises InputError for a path that resolves outside the checkpoint's directory (a damaged or
    crafted checkpoint must not choose where a run writes)."""
    stored = ck["metadata"].get("stream")
    if stored is None:
        return None
    root = Path(ck["path"]).parent
    if not isinstance(stored, str) or not stored:
        raise InputError(f"{ck['path']}: its stream path {stored!r} is not a path: the checkpoint is damaged; "
                         f"start the run again")
    path = root / stored
    if not _inside(path, root):
        raise InputError(f"{ck['path']}: its stream path {stored!r} resolves to {path.resolve()}, outside the "
                         f"run's directory {root.resolve()}: refused (a damaged or crafted checkpoint); start "
                         f"the run again")
    return str(path)


def _integrate_uncompiled(system, method, x0s, h, n_steps, save_every, md, options):
    target, convert = view_of(system, method, x0s)
    check_options(method, system, options)
    x0s = tuple(np.asarray(a) for a in convert(*x0s))
    full, rem = loop.save_plan(n_steps, save_every)
    # before anything is allocated: t, the state arrays and about as much again (momenta,
    # multipliers, diagnostics), as the compiled engine checks its node arrays
    loop.check_memory(full + (2 if rem else 1), 8 * (1 + 2 * sum(int(np.size(x)) for x in x0s)),
                      what=f"{method.name} run")
    t = md.get("t0", 0.0) + loop.node_times(h, n_steps, save_every, n_steps // save_every + 2)
    start = time.perf_counter()
    arrays, info = method.solve(target, *x0s, t, **options)
    wall = time.perf_counter() - start
    md.update(info)
    md.update({"wall_time_s": wall, "steps_per_second": None, "node_velocity": method.traits.node_velocity})
    obs = {k: jnp.asarray(a) for k, a in arrays.items()}
    diag = jax.jit(jax.vmap(target.diagnostics))(obs)
    return trajectory(t, dict(arrays, **{k: np.asarray(a) for k, a in diag.items() if k not in arrays}), md)


class _Run:
    """A compiled single run (fresh, or resumed from a checkpoint): programs, driver, result."""

    def __init__(self, system, method, x0s, h, n_steps, save_every, md, options, progress,
                 chunk_steps, checkpoint, checkpoint_every, stream=None, keep_checkpoint=False):
        self.stream, self.keep_checkpoint = stream, keep_checkpoint
        if stream is not None:
            md["stream"] = str(stream)
        self.system, self.method, self.x0s, self.h = system, method, x0s, h
        self.n_steps, self.save_every, self.md, self.options = n_steps, save_every, md, options
        self.progress, self.chunk_steps = progress, chunk_steps
        self.checkpoint, self.checkpoint_every = checkpoint, checkpoint_every
        if checkpoint is not None:
            try:
                json.dumps(md, default=json_default)
            except TypeError as exc:
                raise InputError(f"checkpoint: the run's options/metadata must be JSON values ({exc})") from None
            if not checkpoint_every >= 0:          # (math.inf: only when interrupted)
                raise InputError(f"checkpoint_every must be a number of seconds ≥ 0; got {checkpoint_every!r}")

    def _write_checkpoint(self, prior_wall):
        from . import checkpoint as ckpt_mod
        base = dict(self.md)                 # the run's metadata before its results are added
        if self.stream is not None:          # relative to the run's directory: resumable from anywhere
            base["stream"] = os.path.relpath(Path(self.stream).resolve(), Path(self.checkpoint).resolve().parent)

        def write(state, done, steps, nodes, newton, wall):
            if "system_fingerprint" not in base:     # once, when the first checkpoint is written
                base["system_fingerprint"] = system_fingerprint(self.system, self.x0s)
            # a streamed run's nodes are in its (flushed) file; the checkpoint holds the state
            return ckpt_mod.write(self.checkpoint, metadata=base,
                                  state_leaves=[np.asarray(x) for x in jax.tree_util.tree_leaves(state)],
                                  nodes_done=done, steps_done=steps,
                                  arrays={} if nodes.streams else nodes.arrays(), newton=newton,
                                  wall_time_s=prior_wall + wall)
        return write

    def go(self, resume_from=None) -> Trajectory:
        method, h, md, save_every = self.method, self.h, self.md, self.save_every
        # NumPy in: the compiled programs take it as it is (jnp.asarray is an eager dispatch each)
        x0j, hj = tuple(np.asarray(x, np.float64) for x in self.x0s), np.float64(h)
        full, rem = loop.save_plan(self.n_steps, save_every)
        n_total = full + (2 if rem else 1)
        # a run with few nodes to compute runs the short chunk (loop.SHORT_CHUNK_SAVES)
        short = loop.is_short_run(n_total - 1 - (resume_from["nodes_done"] if resume_from is not None else 0))
        t_compile = time.perf_counter()
        start, chunk, layout = single_run_programs(self.system, method, self.options, x0j, hj, short)
        compile_s = time.perf_counter() - t_compile
        if self.stream is None:
            loop.check_memory(n_total, 8 * sum(layout.sizes))
        else:
            stream_mod.check_disk(self.stream, n_total, 8 * (sum(layout.sizes) + 1))
        state, out0 = start(x0j, hj)
        prior_wall, newton, nodes_done = 0.0, (0, 0), 0
        prefix = loop.node_prefix(out0, batched=False)
        if resume_from is not None:
            state = _restored_state(state, resume_from)
            prefix, nodes_done = resume_from["arrays"], resume_from["nodes_done"]
            nw = resume_from["newton"]
            newton = (nw.get("total_iterations", 0), nw.get("max_iterations", 0))
            prior_wall = resume_from["wall_time_s"]
        nodes = self._nodes(prefix, nodes_done, resume_from is not None, layout, n_total)
        if nodes.names() != set(layout.names):
            nodes.release()
            raise InputError(f"the checkpoint's node arrays {sorted(nodes.names())} are not this run's "
                             f"{sorted(layout.names)}")
        per_call = loop.nodes_per_call(loop.single_chunk_saves(sum(layout.sizes), short=short), save_every,
                                       self.chunk_steps)
        stop = terminal_stop()                  # a run with a terminal event (engine.dense)
        if stop is not None:
            per_call = stop.begin(prefix, nodes_done, md.get("t0", 0.0), h, self.n_steps, per_call)
        try:
            r = loop.run_chunks(chunk, layout, state, hj, nodes, self.n_steps, per_call, save_every,
                                self.progress, md, batched=False, nodes_done=nodes_done,
                                checkpoint=None if self.checkpoint is None else self._write_checkpoint(prior_wall),
                                checkpoint_every=self.checkpoint_every, newton=newton, stop=stop)
        except BaseException:
            nodes.release()            # (a streamed run's file lock with it)
            raise
        failure = r.failures.get(0)
        n_nodes = next(iter(r.arrays.values())).shape[0]
        steps_done = failure[0] if failure is not None else loop.steps_done(
            r.nodes_done, self.n_steps, save_every)
        steps_now = steps_done - (resume_from["steps_done"] if resume_from else 0)
        md.update({
            "wall_time_s": r.wall, "compile_time_s": compile_s,
            "steps_per_second": steps_now / r.wall if r.wall > 0 else None,
            "newton": {"total_iterations": r.it_total, "max_iterations": r.it_max,
                       "mean_iterations": r.it_total / max(steps_done, 1)},
            "node_velocity": method.traits.node_velocity,
        })
        if resume_from is not None:
            md.update({"resumed_from": str(resume_from["path"]), "resumed_at_step": resume_from["steps_done"],
                       "wall_time_total_s": prior_wall + r.wall})
        md.update(chart_metadata(r.arrays, h))
        if failure is not None and self.stream is not None:
            md["failed"] = {"step": failure[0], "time": md.get("t0", 0.0) + failure[0] * h}
        if failure is None and not r.interrupted and monitors.monitored(method):   # (else it checks nothing)
            monitors.post_run_checks(self._trajectory(nodes, r.arrays, n_nodes), method)
        traj = self._trajectory(nodes, r.arrays, n_nodes, finish=not r.interrupted)
        if r.interrupted:
            from .interrupts import RunInterrupted
            where = f"; checkpoint {r.checkpoint}" if r.checkpoint else ""
            raise RunInterrupted(
                f"{method.name}: interrupted ({r.interrupted}) after {steps_done} of {self.n_steps} steps "
                f"(t = {traj.t[-1]:.6g}); {n_nodes} nodes are kept in .trajectory{where}",
                trajectory=traj, checkpoint=r.checkpoint, signal_name=r.interrupted, step=steps_done)
        if failure is not None:
            note = monitors.failure_note(traj, method)
            raise failure_error(method, failure[0], h, failure[1], traj,
                                note.strip() + (" " if note else "") +
                                f"{n_nodes} nodes up to t = {traj.t[-1]:.6g} are kept in .trajectory"
                                + (f" (file {self.stream})" if self.stream else ""), t0=md.get("t0", 0.0))
        if not self.keep_checkpoint:    # complete (a streamed run's file renamed): nothing to resume
            if self.checkpoint is not None:
                Path(self.checkpoint).unlink(missing_ok=True)
        return traj

    def _nodes(self, prefix, nodes_done, resumed, layout, rows=None):
        """Where the nodes go: memory (at most ``rows`` nodes), or the stream file (fresh, or the
        partial file resumed)."""
        if self.stream is None:
            return stream_mod.MemoryNodes(prefix, layout=layout, rows=rows)

        def times(first, count):
            return self.md.get("t0", 0.0) + loop.node_times(self.h, self.n_steps, self.save_every, first + count, first)
        if resumed:
            return stream_mod.StreamNodes(self.stream, times, nodes=nodes_done)
        return stream_mod.StreamNodes(self.stream, times, prefix=prefix, metadata=self.md)

    def _trajectory(self, nodes, arrays, n_nodes, finish=None) -> Trajectory:
        """The run's Trajectory. In memory: from the arrays. Streamed: reading the file, which
        ``finish`` (True: complete or failed, renamed to its path; False: interrupted, kept as
        ``.partial``) closes first with the final metadata; None: the open file as it is."""
        if not nodes.streams:
            return trajectory(self.md.get("t0", 0.0) + loop.node_times(self.h, self.n_steps, self.save_every, n_nodes),
                              dict(arrays), self.md)
        if finish is None:
            return trajectory(nodes.file["t"], dict(arrays), self.md)
        return load(nodes.finish(self.md, complete=finish))


def _restored_state(state, ck):
    """The checkpoint's state leaves in the tree structure of ``state`` (a fresh start's),
    checked leaf by leaf for shape and dtype."""
    leaves, treedef = jax.tree_util.tree_flatten(state)
    saved = ck["state_leaves"]
    if len(saved) != len(leaves):
        raise InputError(f"the checkpoint's internal state has {len(saved)} arrays; this method's has "
                         f"{len(leaves)} (a different method, options or version?)")
    for i, (a, b) in enumerate(zip(saved, leaves)):
        if a.shape != tuple(b.shape) or a.dtype != np.dtype(b.dtype):
            raise InputError(f"the checkpoint's internal state array {i} has shape {a.shape} "
                             f"{a.dtype}; this method's has {tuple(b.shape)} {b.dtype}")
    return jax.tree_util.tree_unflatten(treedef, [jnp.asarray(a) for a in saved])


# ---------------------------------------------------------------------------------------------
# solve: the pure functional core
# ---------------------------------------------------------------------------------------------

#: ``dl.solve(checkpoint="auto")`` checkpoints runs of at least this many steps.
AUTO_CHECKPOINT_STEPS = 4096


def checkpoint_segment(checkpoint, n_steps: int) -> int | None:
    """Steps per checkpointed segment of :func:`solve` (None: no checkpointing).

    Raises InputError for a value that is not None, "auto" or a positive integer."""
    if checkpoint is None or checkpoint is False:
        return None
    if isinstance(checkpoint, str):
        if checkpoint != "auto":
            raise InputError(f"dl.solve: checkpoint must be None, 'auto' or a number of steps; got {checkpoint!r}")
        return math.ceil(math.sqrt(n_steps)) if n_steps >= AUTO_CHECKPOINT_STEPS else None
    if isinstance(checkpoint, bool) or not isinstance(checkpoint, (int, np.integer)) or checkpoint < 1:
        raise InputError(f"dl.solve: checkpoint must be None, 'auto' or a positive number of steps; "
                         f"got {checkpoint!r}")
    return int(checkpoint)


def advance(step, carry, h, n: int, segment: int | None):
    """``n`` steps of ``step`` from ``carry`` (Python int n). With ``segment`` = K, the steps run
    as ⌊n/K⌋ segments of K steps under ``jax.checkpoint`` (and the rest): reverse mode then keeps
    the carry at the segments' ends and recomputes one segment's steps at a time, memory ∝ n/K + K
    instead of n, for about one more forward run."""
    one = lambda c, _: (step(c, h), None)            # noqa: E731
    if segment is None or segment >= n:
        return lax.scan(one, carry, None, length=n)[0] if n > 1 else step(carry, h)
    block = jax.checkpoint(lambda c: lax.scan(one, c, None, length=segment)[0])
    carry = lax.scan(lambda c, _: (block(c), None), carry, None, length=n // segment)[0]
    return advance(step, carry, h, n % segment, None) if n % segment else carry


def scan_nodes(node, carry, n_nodes: int, group: int):
    """``lax.scan`` of ``node`` over ``n_nodes`` nodes; with ``group`` > 1, as groups of that
    many nodes under ``jax.checkpoint`` (see :func:`advance`), then the rest."""
    if group <= 1 or group >= n_nodes:
        return lax.scan(node, carry, None, length=n_nodes)
    block = jax.checkpoint(lambda c: lax.scan(node, c, None, length=group))
    carry, outs = lax.scan(lambda c, _: block(c), carry, None, length=n_nodes // group)
    outs = jax.tree_util.tree_map(lambda a: a.reshape((-1,) + a.shape[2:]), outs)
    if n_nodes % group:
        carry, rest = lax.scan(node, carry, None, length=n_nodes % group)
        outs = jax.tree_util.tree_map(lambda a, r: jnp.concatenate([a, r]), outs, rest)
    return carry, outs


def solve(system, method, state0, h, n_steps: int, *, save_every: int = 1, start=None,
          checkpoint="auto", project: bool = False, controls=None, t0: float = 0.0, **options) -> dict:
    """The pure functional core: ``n_steps`` steps of ``method`` from ``state0``, as JAX arrays.

    Works inside ``jax.jit``, ``jax.vmap`` and (for methods whose steps are differentiable, see
    below) ``jax.grad``. Static (Python values, fixed when traced): ``system``, ``method``,
    ``n_steps``, ``save_every`` and the options. Dynamic (arrays, may be traced): ``state0`` and
    ``h``. A concrete (untraced) ``state0`` is checked as :func:`integrate` checks it
    (``system.check_initial_state``: shapes, values, the constraint — a v0 off the constraint is
    refused unless ``project=True``); a traced one only for its shapes (check its values with
    ``system.check_initial_state`` before, outside the trace). No exception is raised for a failed
    step: the state freezes at the last good step and ``ok`` / ``failed_step`` say so, as in
    :func:`integrate`.

    Parameters
    ----------
    system : a system kind (or one with a registered view to a kind ``method`` integrates).
    method : registered name or Method.
    state0 : tuple of arrays in ``system.state_names`` order, e.g. ``(q0, v0)`` of shape (n,).
    h : step size (scalar).
    n_steps : number of steps (a multiple of ``save_every``).
    save_every : keep every K-th node.
    start : optional internal state of the method (a pytree as its ``init`` returns) to start
        from instead of ``init(state0)`` — e.g. a two-step scheme started from two given nodes.
        ``state0`` then only fixes the shapes (and a view's anchor).
    checkpoint : reverse-mode memory (see Gradients below): ``"auto"`` (default) checkpoints
        every ⌈√n_steps⌉ steps when n_steps ≥ :data:`AUTO_CHECKPOINT_STEPS`; an integer K
        checkpoints every K steps; None keeps every step's values. No effect on the result or on
        forward mode.
    project : project a concrete state0 that violates the constraint onto the constraint space
        (as ``dl.integrate(project=True)``); default False: refuse it (ConstraintViolationError).
    controls : for a system whose force takes a control, f(q, v, t, u): an (n_steps, c) array
        (row k held over step k; may be traced: ``jax.grad`` with respect to it works) or a
        callable t -> (c,).
    t0 : the time of state0 (a system with a force; default 0).
    **options : the method's build options.

    Returns
    -------
    dict with the node arrays (leading axis ``n_steps // save_every + 1``: q, v, energy,
    constraint_residual, ... as :func:`integrate` reports them), ``t`` (same leading axis, from ``t0``),
    ``ok`` (bool scalar: every step succeeded), ``failed_step`` (int32; −1 if none) and
    ``failure_cause`` (int32: why, a key of :data:`dalembert.solvers.newton.CAUSES`; 0 if none).

    Gradients (docs/gradients.md): ``jax.grad``, ``jax.jacrev``, ``jax.jacfwd`` and ``jax.jvp`` of
    any function of the result, with respect to ``state0``, ``h`` and whatever the system's
    callables close over (a system built inside the differentiated function from its parameters,
    e.g. ``dl.models.factory(name)(params)``), for every compiled method. The loop is a
    ``lax.scan`` with a fixed trip count; an implicit step's Newton solve is differentiated by
    the implicit function theorem (:func:`dalembert.solvers.newton.newton`: one linear solve with
    the step's Jacobian at the root, never through the iterations). Reverse mode keeps one
    step's values per step, or with ``checkpoint`` = K the carry every K steps and one segment at
    a time (memory ∝ N/K + K; K = √N by default for long runs). A step that failed freezes the
    state: derivatives past it are those of the frozen state (check ``ok``).

    Raises
    ------
    InputError (at trace time): n_steps not a positive multiple of save_every, or traced; state0
    not a tuple of the system's state, of shapes its functions do not take, or (concrete) off the
    constraint without ``project=True`` (ConstraintViolationError); an incompatible method and
    system kind, unknown options.
    """
    n_steps = _static_count(n_steps, "n_steps", "dl.solve")
    save_every = _static_count(save_every, "save_every", "dl.solve")
    if controls is not None:
        system = _controlled(system, controls, lambda: n_steps)
    if _timed(system):
        options = dict(options, t0=_finite(t0, "t0"))
    if n_steps < 1 or save_every < 1 or n_steps % save_every:
        raise InputError(f"dl.solve: n_steps ({n_steps}) must be a positive multiple of save_every "
                         f"({save_every})")
    state0 = _checked_state0(system, state0, "dl.solve", values=start is None, project=project,
                             t0=options.get("t0", 0.0))
    b, state0, h = _bind_traced(system, method, state0, h, options)
    if start is None:
        state = b.scheme.init(*b.convert(*state0), h)
    else:                       # a method state; a monitored scheme carries its statistic too
        wrap = getattr(b.scheme, "wrap", None)     # (idempotent on a state it made)
        state = start if wrap is None else wrap(start, h)
    first = loop.node_outputs(b.system, b.scheme.observe(state, h))
    step = loop.guarded_step(b.scheme, b.system)

    segment = checkpoint_segment(checkpoint, n_steps)
    # a segment longer than a node checkpoints groups of nodes instead of steps within one
    group = 1 if segment is None or save_every >= segment else segment // save_every

    seg = None if group > 1 else segment
    explicit = loop.never_fails(b.scheme, state, h)

    def checked(carry):
        return loop.settled(advance(step, loop.stepping(carry), h, save_every, seg))

    def node(carry, _):
        if explicit:   # unchecked, then checked again only on a failure (loop.run_explicit_steps)
            st = advance(lambda s, hh: b.scheme.step(s, hh)[0], carry[0], h, save_every, seg)
            carry = loop.checked_after(b.scheme, b.system, carry, st, save_every, h, lambda: checked(carry))
        else:
            carry = checked(carry)
        outs = loop.node_outputs(b.system, b.scheme.observe(carry[0], h))
        return loop.check_node(b.system, carry, outs), outs   # as in integrate

    (state, ok, _, failed, cause), nodes = scan_nodes(node, loop.start_carry(state), n_steps // save_every,
                                                      group)
    out = jax.tree_util.tree_map(lambda a, b_: jnp.concatenate([a[None], b_]), first, nodes)
    out["t"] = options.get("t0", t0) + h * save_every * jnp.arange(n_steps // save_every + 1)
    out["ok"], out["failed_step"], out["failure_cause"] = ok, failed, cause
    return out


def final_state(system, method, state0, h, n_steps, **options) -> dict:
    """The node after ``n_steps`` steps, with ``n_steps`` a runtime value: one compiled program
    serves every h and n (e.g. a convergence study). Pure, like :func:`solve` (forward mode
    only: the loop's trip count is dynamic). Returns the node arrays of the last node, ``ok`` and
    ``failed_step``."""
    state0 = _checked_state0(system, state0, "dl.final_state", values=True, project=False)
    b, state0, h = _bind_traced(system, method, state0, h, options)
    carry = loop.run_steps(b.scheme, b.system, loop.start_carry(b.scheme.init(*b.convert(*state0), h)), h, n_steps)
    out = loop.node_outputs(b.system, b.scheme.observe(carry[0], h))
    state, ok, _, failed, cause = loop.check_node(b.system, carry, out)
    out["ok"], out["failed_step"], out["failure_cause"] = ok, failed, cause
    return out


def compiled(fn, system, method, **static):
    """``fn`` (:func:`solve` or :func:`final_state`) for one system and method, jitted once and
    kept with the system: ``compiled(solve, sys, "nh-rattle", n_steps=1000)(state0, h)``.
    ``static``: n_steps, save_every and build options (hashable values)."""
    from .._cache import cached
    method = choose(system, method)
    key = ("compiled", fn.__name__, method, options_key(static))
    return cached(system, key, lambda: jax.jit(
        lambda state0, h, *args: fn(system, method, state0, h, *args, **static),
        compiler_options=jit_options()))


def raise_if_failed(out, method, h, what: str = "run"):
    """ConvergenceError naming the first failed step of a :func:`solve`/:func:`final_state` result
    (for callers outside a trace)."""
    if not bool(out["ok"]):
        raise failure_error(methods.get(method), int(out["failed_step"]), float(h),
                            int(out.get("failure_cause", newton_mod.FAILED)), None, "", where=f"{what}, ")
    return out


def _static_count(x, name: str, where: str) -> int:
    """``x`` as a Python int: it fixes the length of the compiled loop, so it cannot be traced."""
    if isinstance(x, jax.core.Tracer):
        raise InputError(f"{where}: {name} is a traced value, but it fixes the length of the compiled "
                         f"loop: pass a Python int (jax.jit(..., static_argnums=...) for an argument), "
                         f"or use dl.engine.run.final_state, whose n_steps may be traced")
    try:
        xi = int(x)
        ok = xi == x
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok or isinstance(x, bool):
        raise InputError(f"{where}: {name} must be an integer; got {x!r}")
    return xi


def _timed(system) -> bool:
    """Whether ``system`` reads the engine's clock (a force, V(q, t), ν(q, t))."""
    return bool(getattr(system, "timed", getattr(system, "has_force", False)))


def _checked_state0(system, state0, where: str, *, values: bool, project: bool, t0: float = 0.0) -> tuple:
    """state0 of :func:`solve` / :func:`final_state` checked: a tuple (or list) of as many arrays
    as ``system.state_names``; when concrete (and ``values``), validated as :func:`integrate`
    validates it (``system.check_initial_state``, which raises InputError naming the problem);
    when traced, checked for shapes the system's functions take (by abstract evaluation).
    Returns the state (the validated float64 arrays when concrete)."""
    names = tuple(getattr(system, "state_names", ()) or ("q0", "v0"))
    sysname = getattr(system, "name", "system")
    if not isinstance(state0, (tuple, list)) or len(state0) != len(names):
        got = (f"a {type(state0).__name__} of {len(state0)}" if isinstance(state0, (tuple, list))
               else f"{type(state0).__name__}{getattr(state0, 'shape', '')}")
        raise InputError(f"{where}: state0 must be a tuple of the {len(names)} arrays "
                         f"({', '.join(names)}) of {sysname}'s initial state; got {got}")
    traced = any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tuple(state0)))
    check = getattr(system, "check_initial_state", None)
    if not traced and values and callable(check):
        try:
            # concrete values inside an enclosing trace (dl.solve under jax.jit/grad with a
            # closed-over state0): evaluated now, not staged into the trace
            with jax.ensure_compile_time_eval(), clock.at(t0, 0):
                return tuple(check(*state0, project=project))
        except InputError as exc:
            exc.args = (f"{where}: {exc}",)        # (the same error, with its residual etc.)
            raise exc from None
    values_at = getattr(system, "fingerprint_values", None)
    if callable(values_at):
        try:
            shapes = tuple(jax.ShapeDtypeStruct(jnp.shape(x), jnp.float64) for x in state0)
            jax.eval_shape(values_at, *shapes)
        except (TypeError, ValueError, IndexError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"{where}: state0 shapes {[tuple(jnp.shape(x)) for x in state0]} do not fit "
                             f"{sysname} ({first}); pass ({', '.join(names)}) with the shapes of its "
                             f"initial state") from None
    return tuple(state0)


def _bind_traced(system, method, state0, h, options):
    """(Bound, state0 as float64 arrays, h as an array) for :func:`solve` and :func:`final_state`:
    the method bound outside the trace, on the concrete initial state when it is not traced (a
    view may anchor on it), else on zeros of its shapes.

    Raises InputError for a method that does not run compiled, or as :func:`bind` does."""
    concrete = not any(isinstance(x, jax.core.Tracer) for x in state0)
    method = choose(system, method, tuple(np.asarray(x, np.float64) for x in state0) if concrete else None)
    if not method.compiled:
        raise InputError(f"{method.name} is not a compiled method; dl.solve needs one")
    state0 = tuple(jnp.asarray(x, jnp.float64) for x in state0)
    traced = any(isinstance(x, jax.core.Tracer) for x in state0)
    with jax.ensure_compile_time_eval():
        anchor = tuple(np.zeros(x.shape) if traced else np.asarray(x) for x in state0)
        b = bind(system, method, anchor, options)
    return b, state0, jnp.asarray(h, jnp.float64)
