"""Single runs: :func:`integrate` (validated, chunked, with progress and errors) and :func:`solve`
(the pure functional core, for use inside a user's ``jax.jit`` / ``jax.vmap`` / ``jax.grad``)."""
from __future__ import annotations

import math
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .. import methods, monitors
from .._version import __version__
from ..errors import ConvergenceError, InputError
from ..solvers import newton_module as newton_mod
from ..trajectory import Trajectory
from . import loop
from ..systems.kind import kinds_of, resolve
from .programs import bind, options_key, single_run_programs, view_of


# ---------------------------------------------------------------------------------------------
# input checks shared by integrate and ensemble
# ---------------------------------------------------------------------------------------------

def _positive_finite(x, name):
    if isinstance(x, jax.core.Tracer):
        raise InputError(f"{name} is a traced value: dl.integrate validates its input and returns "
                         f"NumPy arrays, so it cannot run inside jax.jit/vmap/grad; use dl.solve "
                         f"(the pure functional core) there")
    try:
        xf = float(x)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number; got {x!r}") from None
    if not math.isfinite(xf):
        raise InputError(f"{name} must be finite; got {xf}")
    if xf <= 0:
        raise InputError(f"{name} must be > 0; got {xf}")
    return xf


def check_run(h, t_final, save_every, method):
    """Validated (h, t_final, save_every, Method) of a run."""
    h = _positive_finite(h, "h")
    t_final = _positive_finite(t_final, "t_final")
    if not isinstance(save_every, (int, np.integer)) or save_every < 1:
        raise InputError(f"save_every must be an integer ≥ 1; got {save_every!r}")
    return h, t_final, int(save_every), methods.get(method)


def split_initial_state(system, kwargs: dict):
    """Pop the system's initial-state keywords (``system.state_names``) from kwargs."""
    names = tuple(getattr(system, "state_names", ("q0", "v0")))
    missing = [n for n in names if n not in kwargs]
    if missing:
        raise InputError(f"{getattr(system, 'name', 'system')}: missing initial state "
                         f"{', '.join(missing)} (this system takes {', '.join(names)})")
    return names, [kwargs.pop(n) for n in names]


def trajectory(t, arrays: dict, md) -> Trajectory:
    """A Trajectory from named node arrays: standard names as fields, the rest as extra."""
    std = ("q", "v", "p", "lam", "energy", "constraint_residual")
    fields = {k: arrays.pop(k) for k in std if k in arrays}
    return Trajectory(t=t, metadata=md, extra=arrays, **fields)


def failure_error(method, step, h, cause, traj, kept: str, where: str = "") -> ConvergenceError:
    """The ConvergenceError of a failed step: which step and time, why (the cause code of
    :data:`dalembert.solvers.newton.CAUSES`) and what helps for that cause, what is kept."""
    return ConvergenceError(
        f"{method.name}: {where}step {step} (t = {step * h:.6g} → {(step + 1) * h:.6g}) failed: "
        f"{newton_mod.describe(cause)}. {kept}", step=step, time=step * h, trajectory=traj, cause=cause)


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


def run_metadata(system, method, h, n_steps, save_every, options, **extra) -> dict:
    """The metadata every run records."""
    kinds = kinds_of(system)
    return {"system": system.name, "kind": kinds[0] if kinds else type(system).__name__,
            "method": method.name, "traits": method.traits.as_dict(), "h": h,
            "t_final": n_steps * h, "n_steps": n_steps, "save_every": save_every,
            "options": dict(options), **extra,
            "dalembert_version": __version__, "jax_version": jax.__version__}


# ---------------------------------------------------------------------------------------------
# integrate
# ---------------------------------------------------------------------------------------------

def integrate(system, method, *, h, t_final, save_every: int = 1, project: bool = False,
              progress: bool | None = None, chunk_steps: int = loop.CHUNK_STEPS,
              metadata: dict | None = None, **kwargs) -> Trajectory:
    """Integrate a nonholonomic system with a structure-preserving method.

    Parameters
    ----------
    system : a system kind (NonholonomicSystem, AlmostPoissonSystem, EulerPoincareSuslovSystem,
        LieNonholonomicSystem, ReducedSystem, ...; see :mod:`dalembert.systems.kind`).
    method : registered name (see ``dl.methods.available()``) or a Method object. It must
        integrate the system's kind, or a kind the system has a registered view to (the
        almost-Poisson reduction of a NonholonomicSystem for the discrete-gradient methods).
    q0, v0 : (n,) initial configuration and velocity; v0 must satisfy μ(q0) v0 = ν(q0) to 1e-10
        (relative to max(1, |v0|)) unless ``project=True``. (Other system kinds take the initial
        state under the names in ``system.state_names``.)
    h : step size (s), > 0.
    t_final : final time (s), > 0; the number of steps is ceil(t_final / h) rounded up to a
        multiple of ``save_every`` (``metadata['t_final']`` is the time reached).
    save_every : keep every K-th node (K ≥ 1).
    project : project a constraint-violating v0 onto the constraint space (kinetic metric).
    progress : show a progress bar (None: when stderr is a terminal and the run lasts > 1 s).
    chunk_steps : at most this many steps per call of the compiled chunk (progress granularity).
    metadata : extra entries for ``Trajectory.metadata`` (e.g. model parameters).
    **options : passed to the method's ``build`` (e.g. ``fast_path=False``, ``rtol=1e-13``,
        ``startup="legendre"``).

    Computation is in float64 (importing dalembert enables ``jax_enable_x64``). One compiled
    program per (system object, method, options, state shapes) serves every initial state, h,
    t_final and save_every; it is kept with the system object (``dl.clear_caches()`` drops it).
    ``integrate`` validates its input and returns NumPy arrays, so it does not run inside
    ``jax.jit``/``vmap``/``grad``: use :func:`solve` there.

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
    computed before it).
    """
    h, t_final, save_every, method = check_run(h, t_final, save_every, method)
    resolve(system, method)                       # incompatible kinds: refused before any work
    names, state_in = split_initial_state(system, kwargs)
    options = kwargs
    x0s = tuple(np.asarray(x, np.float64) for x in system.check_initial_state(*state_in, project=project))
    n_steps = loop.step_count(h, t_final, save_every)
    md = run_metadata(system, method, h, n_steps, save_every, options,
                      **{name: x.tolist() for name, x in zip(names, x0s)})
    md.update(metadata or {})
    if not method.compiled:
        return _integrate_uncompiled(system, method, x0s, h, n_steps, save_every, md, options)
    return _integrate_compiled(system, method, x0s, h, n_steps, save_every, progress,
                               chunk_steps, md, options)


def _integrate_uncompiled(system, method, x0s, h, n_steps, save_every, md, options):
    target, convert = view_of(system, method, x0s)
    x0s = tuple(np.asarray(a) for a in convert(*x0s))
    t = h * np.arange(0, n_steps + 1, save_every)
    t0 = time.perf_counter()
    arrays, info = method.solve(target, *x0s, t, **options)
    wall = time.perf_counter() - t0
    md.update(info)
    md.update({"wall_time_s": wall, "steps_per_second": None, "node_velocity": method.traits.node_velocity})
    obs = {k: jnp.asarray(a) for k, a in arrays.items()}
    diag = jax.jit(jax.vmap(target.diagnostics))(obs)
    return trajectory(t, dict(arrays, **{k: np.asarray(a) for k, a in diag.items() if k not in arrays}), md)


def _integrate_compiled(system, method, x0s, h, n_steps, save_every, progress, chunk_steps, md,
                        options):
    n_saves = n_steps // save_every
    x0j, hj = tuple(jnp.asarray(x) for x in x0s), jnp.asarray(h, jnp.float64)
    t_compile = time.perf_counter()
    start, chunk, layout = single_run_programs(system, method, options, x0j, hj)
    t_run = time.perf_counter()
    compile_s = t_run - t_compile
    state, out0 = start(x0j, hj)
    per_call = loop.nodes_per_call(loop.CHUNK_SAVES, save_every, chunk_steps)
    arrays, failure, it_total, it_max, wall, _ = loop.run_chunks(
        chunk, layout, state, hj, out0, n_saves, per_call, save_every, progress, md, batched=False)
    cause = None if failure is None else failure[2]
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
    t = h * save_every * np.arange(n_nodes)
    md.update(chart_metadata(arrays, h))
    traj = trajectory(t, arrays, md)
    if failure is not None:
        raise failure_error(method, failure, h, cause, traj,
                            f"{n_nodes} nodes up to t = {traj.t[-1]:.6g} are kept in .trajectory")
    monitors.post_run_checks(traj, method)
    return traj


# ---------------------------------------------------------------------------------------------
# solve: the pure functional core
# ---------------------------------------------------------------------------------------------

def solve(system, method, state0, h, n_steps: int, *, save_every: int = 1, start=None,
          **options) -> dict:
    """The pure functional core: ``n_steps`` steps of ``method`` from ``state0``, as JAX arrays.

    Works inside ``jax.jit``, ``jax.vmap`` and (for methods whose steps are differentiable, see
    below) ``jax.grad``. Static (Python values, fixed when traced): ``system``, ``method``,
    ``n_steps``, ``save_every`` and the options. Dynamic (arrays, may be traced): ``state0`` and
    ``h``. Nothing is validated beyond shapes (do that with ``system.check_initial_state`` before,
    outside the trace) and no exception is raised for a failed step: the state freezes at the last
    good step and ``ok`` / ``failed_step`` say so, as in :func:`integrate`.

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
    **options : the method's build options.

    Returns
    -------
    dict with the node arrays (leading axis ``n_steps // save_every + 1``: q, v, energy,
    constraint_residual, ... as :func:`integrate` reports them), ``t`` (same leading axis),
    ``ok`` (bool scalar: every step succeeded), ``failed_step`` (int32; −1 if none) and
    ``failure_cause`` (int32: why, a key of :data:`dalembert.solvers.newton.CAUSES`; 0 if none).

    Gradients: the loop is a ``lax.scan`` over arrays only (no host callbacks), so reverse mode
    works for the explicit steps (e.g. ``nh-rattle`` with a constant mass matrix); the implicit
    steps' Newton iterations are a ``while`` loop, which ``jax.jvp`` differentiates (forward
    mode) and reverse mode does not. (``jax.jacfwd`` over an implicit step trips a JAX batching
    assertion in jax 0.10; use ``jax.jvp`` per direction.)

    Raises
    ------
    InputError (at trace time): n_steps not a positive multiple of save_every, an incompatible
    method and system kind, unknown options.
    """
    n_steps, save_every = int(n_steps), int(save_every)
    if n_steps < 1 or save_every < 1 or n_steps % save_every:
        raise InputError(f"dl.solve: n_steps ({n_steps}) must be a positive multiple of save_every "
                         f"({save_every})")
    b, state0, h = _bind_traced(system, method, state0, h, options)
    state = b.scheme.init(*b.convert(*state0), h) if start is None else start
    first = loop.node_outputs(b.system, b.scheme.observe(state, h))
    step = loop.guarded_step(b.scheme)

    def node(carry, _):
        carry = lax.fori_loop(0, save_every, lambda _, c: step(c, h), carry)
        outs = loop.node_outputs(b.system, b.scheme.observe(carry[0], h))
        return loop.check_outputs(carry, outs), outs      # as in integrate

    (state, ok, _, failed, cause), nodes = lax.scan(node, loop.start_carry(state), None,
                                                    length=n_steps // save_every)
    out = jax.tree_util.tree_map(lambda a, b_: jnp.concatenate([a[None], b_]), first, nodes)
    out["t"] = h * save_every * jnp.arange(n_steps // save_every + 1)
    out["ok"], out["failed_step"], out["failure_cause"] = ok, failed, cause
    return out


def final_state(system, method, state0, h, n_steps, **options) -> dict:
    """The node after ``n_steps`` steps, with ``n_steps`` a runtime value: one compiled program
    serves every h and n (e.g. a convergence study). Pure, like :func:`solve` (forward mode
    only: the loop's trip count is dynamic). Returns the node arrays of the last node, ``ok`` and
    ``failed_step``."""
    b, state0, h = _bind_traced(system, method, state0, h, options)
    step = loop.guarded_step(b.scheme)
    carry = loop.start_carry(b.scheme.init(*b.convert(*state0), h))
    carry = lax.fori_loop(0, n_steps, lambda _, c: step(c, h), carry)
    out = loop.node_outputs(b.system, b.scheme.observe(carry[0], h))
    state, ok, _, failed, cause = loop.check_outputs(carry, out)
    out["ok"], out["failed_step"], out["failure_cause"] = ok, failed, cause
    return out


def compiled(fn, system, method, **static):
    """``fn`` (:func:`solve` or :func:`final_state`) for one system and method, jitted once and
    kept with the system: ``compiled(solve, sys, "nh-rattle", n_steps=1000)(state0, h)``.
    ``static``: n_steps, save_every and build options (hashable values)."""
    from .._cache import cached
    method = methods.get(method)
    key = ("compiled", fn.__name__, method, options_key(static))
    return cached(system, key, lambda: jax.jit(
        lambda state0, h, *args: fn(system, method, state0, h, *args, **static)))


def raise_if_failed(out, method, h, what: str = "run"):
    """ConvergenceError naming the first failed step of a :func:`solve`/:func:`final_state` result
    (for callers outside a trace)."""
    if not bool(out["ok"]):
        raise failure_error(methods.get(method), int(out["failed_step"]), float(h),
                            int(out.get("failure_cause", newton_mod.FAILED)), None, "", where=f"{what}, ")
    return out


def _bind_traced(system, method, state0, h, options):
    """(Bound, state0 as float64 arrays, h as an array) for :func:`solve` and :func:`final_state`:
    the method bound outside the trace, on the concrete initial state when it is not traced (a
    view may anchor on it), else on zeros of its shapes.

    Raises InputError for a method that does not run compiled, or as :func:`bind` does."""
    method = methods.get(method)
    if not method.compiled:
        raise InputError(f"{method.name} is not a compiled method; dl.solve needs one")
    state0 = tuple(jnp.asarray(x, jnp.float64) for x in state0)
    traced = any(isinstance(x, jax.core.Tracer) for x in state0)
    with jax.ensure_compile_time_eval():
        anchor = tuple(np.zeros(x.shape) if traced else np.asarray(x) for x in state0)
        b = bind(system, method, anchor, options)
    return b, state0, jnp.asarray(h, jnp.float64)
