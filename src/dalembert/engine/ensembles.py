"""Ensembles: B trajectories of one system (or of a system factory over a parameter pytree) in one
compiled, vectorised (``jax.vmap``) loop, split over the CPU devices when there are several."""
from __future__ import annotations

import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .._cache import cached
from ..errors import InputError
from ..solvers import newton_module as newton_mod
from ..methods.kinds import AUTO, choose, resolve
from ..results.ensemble import Ensemble
from ..results.trajectory import trajectory
from ..systems.kind import SystemKind
from . import loop
from .stream import MemoryNodes
from ..results.metadata import checked_metadata
from .. import clock
from .run import _finite, _timed, chart_metadata, check_run, failure_error, run_metadata, split_initial_state
from .programs import bind, compile_program, options_key, state_shapes, view_key
from .xla import _custom_calls, ensemble_devices


class EnsembleMemberWarning(RuntimeWarning):
    """Some members of an ensemble failed; the others completed."""


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
    those devices and the record layout. ``lead``: the members' batched arguments before the state (() or
    (params,)); ``scheme_of(*lead_i) -> (system, scheme)`` for one member's. The members (B of
    them in ``x0s`` and ``lead``) are padded for the devices (:func:`_pad_members`), as the
    caller must pad the arrays it runs them on."""
    k = len(lead)
    int32 = lambda i: jnp.array(i, jnp.int32)  # noqa: E731
    layout = []                                       # filled when the chunk is traced

    def start(*args):
        *p, x0s_, hh = args
        b = scheme_of(*p)
        state = b.scheme.init(*b.convert(*x0s_), hh)
        outs = loop.node_outputs(b.system, b.scheme.observe(state, hh))
        return state, {n: v for n, v in outs.items() if keep is None or n in keep}

    def chunk_v(one):
        """The vmapped chunk, for a member state of the shapes of ``one``."""
        def chunk(*args):
            *p, state, alive, hh, n_active, n_sub = args
            b = scheme_of(*p)
            return loop.make_chunk(b.system, b.scheme, chunk_saves, one, hh, keep, members=True,
                                   layout_out=layout)(
                state, hh, n_active, n_sub, alive)
        return jax.vmap(chunk, in_axes=(0,) * (k + 2) + (None,) * 3)

    start_v = jax.vmap(start, in_axes=(0,) * (k + 1) + (None,))
    B = x0s[0].shape[0]

    def lower(devices):
        lead_p, x0s_p = _pad_members(tuple(lead), devices), _pad_members(x0s, devices)
        start_l = jax.jit(_over_devices(start_v, k + 1, devices)).lower(*lead_p, x0s_p, h)
        state_s = start_l.out_info[0] if hasattr(start_l, "out_info") else \
            jax.eval_shape(_over_devices(start_v, k + 1, devices), *lead_p, x0s_p, h)[0]
        one = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape[1:], a.dtype), state_s)
        alive = jnp.ones(x0s_p[0].shape[0], bool)
        chunk_l = jax.jit(_over_devices(chunk_v(one), k + 2, devices)).lower(
            *lead_p, state_s, alive, h, int32(0), int32(save_every))
        return start_l, chunk_l

    devices = ensemble_devices(B)
    start_l, chunk_l = lower(devices)
    if _custom_calls(start_l) or _custom_calls(chunk_l):        # LAPACK: fewer devices than pool threads
        fewer = ensemble_devices(B, custom_calls=True)
        if len(fewer) != len(devices):
            devices = fewer
            start_l, chunk_l = lower(devices)
    start_c, chunk_c = compile_program(start_l), compile_program(chunk_l)
    return start_c, chunk_c, devices, layout[-1]


def _member_chunk(chunk_c, *lead):
    """The compiled ensemble chunk with the driver's argument order
    (:func:`dalembert.engine.loop.run_chunks`: state, h, n_active, n_sub, alive)."""
    return lambda state, h, n_active, n_sub, alive: chunk_c(*lead, state, alive, h, n_active, n_sub)


def _compiled_ensemble(system, method, options, x0s, h, save_every, chunk_saves, keep):
    first = tuple(np.asarray(x[0]) for x in x0s)
    key = ("ensemble", method, options_key(options), chunk_saves, state_shapes(x0s), keep,
           len(ensemble_devices(x0s[0].shape[0])), view_key(system, method, first))

    def make():
        b = bind(system, method, first, options)
        return _compile_members(lambda: b, (), x0s, h, save_every, chunk_saves, keep)
    start_c, chunk_c, devices, layout = cached(system, key, make)
    return start_c, _member_chunk(chunk_c), devices, layout


def _compiled_param_ensemble(factory, method, options, params, x0s, h, save_every, chunk_saves, keep):
    """As :func:`_compiled_ensemble`, for a system factory vmapped over a parameter pytree: each
    member builds its system and scheme from its own (traced) parameters. ``params`` are padded
    to the devices' multiple inside the returned functions."""
    leaves, treedef = jax.tree_util.tree_flatten(params)
    key = ("param-ensemble", method, options_key(options), chunk_saves, state_shapes(x0s), keep,
           treedef, tuple((a.shape, str(a.dtype)) for a in leaves), len(ensemble_devices(x0s[0].shape[0])))

    def make():
        x0_one = tuple(np.asarray(x[0]) for x in x0s)

        def scheme_of(p):
            # what does not depend on the traced parameters (constant arrays of the system, a
            # method's once-per-build factorisations) is evaluated now, concretely, as in the
            # one-system case
            with jax.ensure_compile_time_eval():
                return bind(factory(p), method, x0_one, options)

        return _compile_members(scheme_of, (params,), x0s, h, save_every, chunk_saves, keep)
    start_c, chunk_c, devices, layout = cached(factory, key, make)
    params = _pad_members(params, devices)
    return (lambda x0s, h: start_c(params, x0s, h), _member_chunk(chunk_c, params), devices, layout)


def _first_member(system, kwargs):
    """The first member's initial state from the batched keywords, for ``method="auto"`` (None when
    it cannot be read: the rule then decides without a state)."""
    try:
        state = tuple(np.asarray(kwargs[name], np.float64) for name in system.state_names)
        return tuple(x[0] if x.ndim > 1 else x for x in state)
    except (KeyError, AttributeError, TypeError, ValueError, IndexError):
        return None


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
    fast = system.initial_states_ok(*batch) if systems is None and B > 1 else None
    ok = np.zeros(B, bool) if fast is None else np.asarray(fast, bool)
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


def ensemble(system, method="auto", *, h, t_final, t0: float = 0.0, save_every: int = 1, keep=None,
             project: bool = False,
             progress: bool | None = None, chunk_steps: int = loop.CHUNK_STEPS,
             metadata: dict | None = None, params=None, on_failure: str = "keep", **kwargs) -> Ensemble:
    """Integrate B trajectories in one compiled, vectorised (``jax.vmap``) call.

    When JAX has several CPU devices (opt in with ``dl.configure()`` before JAX starts: one per
    thread of XLA's CPU pool; the command line does this) the members are split evenly over them,
    or over one per core when the compiled step calls LAPACK
    (:func:`~dalembert.engine.xla.request_cpu_devices`, :func:`~dalembert.engine.xla.ensemble_devices`;
    B is padded to a multiple of the device count with copies of member 0, which are dropped):
    each device runs its own vmapped loop, with no communication. Without ``dl.configure()`` the
    ensemble runs on JAX's default device. ``metadata["devices"]`` says how many were used.

    Parameters
    ----------
    system, method, h, t_final, t0, save_every, project, progress, metadata :
        as for :func:`integrate` (the members start at ``t0`` and run to ``t_final``).
    chunk_steps : a compiled chunk keeps at most this many node records in all (B per saved
        node) and runs at most :data:`~dalembert.engine.loop.ENSEMBLE_CHUNK_MEMBER_STEPS` member-steps.
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
        matrix, constraints, Π, H) and the constant arrays of a system (a constant mass matrix, an
        inertia tensor: factored in JAX when traced), but not decisions taken in Python (e.g. a
        method option or a shape computed from a parameter: InputError). Example, a sweep over a
        spring constant::

            def spring(p):
                return dl.NonholonomicSystem(mass_matrix=np.eye(3),
                                             potential=lambda q: 0.5 * p["k"] * q[0] ** 2, ...)
            ens = dl.ensemble(spring, "nh-rattle", params={"k": np.linspace(1, 2, 8)},
                              q0=q0, v0=v0, h=0.01, t_final=10.0)

        Each member equals ``integrate(system(params_i), ...)`` to round-off.
    on_failure : "keep" (default): a member whose step fails keeps its last good state, its
        later nodes are NaN, and the others complete (``Ensemble.status``, ``Ensemble.failed``,
        ``metadata["failures"]``; an :class:`EnsembleMemberWarning`); "raise": raise
        ConvergenceError for the first failure.
    **options : passed to the method's ``build``.

    Returns
    -------
    Ensemble with t (N+1,) and the kept node arrays of shape (B, N+1, ...);
    ``metadata["params"]`` holds the parameters (as lists) when given.

    Raises
    ------
    InputError (B = 0, inconsistent batch sizes, bad members — the message names the member; a
    factory that is not traceable), ConvergenceError (with ``on_failure="raise"``: the first
    member that failed, its step and time; ``.trajectory`` is that member's trajectory up to the
    failure), RunInterrupted (Ctrl-C; ``.trajectory`` the Ensemble so far).
    """
    t0 = _finite(t0, "t0")
    if _finite(t_final, "t_final") <= t0:
        raise InputError(f"t_final ({float(t_final):g}) must be after t0 ({t0:g}): the run goes from t0 to t_final")
    h, duration, save_every, method = check_run(h, float(t_final) - t0, save_every, method)
    metadata = checked_metadata(metadata)         # at the call, not when the result is saved
    if on_failure not in ("keep", "raise"):
        raise InputError(f"on_failure must be 'keep' or 'raise'; got {on_failure!r}")
    if method not in AUTO and not method.compiled:
        raise InputError(f"{method.name} does not run in the compiled engine; ensembles need a compiled method")
    run = _EnsembleRun(system, method, h, duration, t0, save_every, keep, params, project, on_failure, kwargs)
    ens = run.go(progress, chunk_steps, metadata)
    if run.warning is not None:
        warnings.warn(run.warning, stacklevel=2)
    return ens


class _EnsembleRun:
    """An ensemble run: its members (systems, parameters, validated initial states), compiled
    programs, driver and result. ``options``: the caller's keywords; the initial states are
    popped from it, the rest are the method's build options."""

    def __init__(self, system, method, h, duration, t0, save_every, keep, params, project, on_failure, options):
        self.method, self.h, self.save_every, self.on_failure = method, h, save_every, on_failure
        self.t0 = t0
        self.options = options
        self.factory, self.params, self.systems, self.n_params = None, None, None, None
        self.system = system if params is None else self._factory_members(system, params)
        if method in AUTO:      # the rule of dl.recommend, decided at the first member's state
            self.method = method = choose(self.system, method, _first_member(self.system, options))
            if not method.compiled:
                raise InputError(f'method="auto" chose {method.name}, which does not run in the compiled '
                                 "engine; name a compiled method for this ensemble")
        resolve(self.system, method)                  # incompatible kinds: refused before any work
        if _timed(self.system):
            self.options = dict(options, t0=t0)       # the engine's clock starts there
        with clock.at(t0, 0):                         # V(q, t), ν(q, t) checked at the run's start
            self.x0s = self._initial_states(project)
        self.B = self.x0s[0].shape[0]
        self.keep = None if keep is None else tuple(sorted(set(keep)))
        self.n_steps = loop.step_count(h, duration, save_every)
        self.warning = None

    def _factory_members(self, factory, params):
        """Member 0's system; sets the factory, the batched parameters, their member count and
        each member's system (built from its concrete parameters)."""
        if not callable(factory) or isinstance(factory, SystemKind):
            raise InputError("ensemble(params=...): system must be a factory params -> system")
        self.factory = factory
        self.params, self.n_params = _batched_params(params)
        member_params = [jax.tree_util.tree_map(lambda a, i=i: np.asarray(a[i]), self.params)
                         for i in range(self.n_params)]
        self.systems = [factory(p) for p in member_params]
        return self.systems[0]

    def _initial_states(self, project):
        """The members' validated initial states, (B, ...) JAX arrays in ``state_names`` order.

        Raises InputError for unbatched or inconsistent states, B = 0, a member count other than
        the parameters', or a bad member (named)."""
        names, state_in = split_initial_state(self.system, self.options)
        batch = [np.asarray(x, np.float64) for x in state_in]
        if self.factory is not None:
            batch = [np.broadcast_to(b, (self.n_params,) + b.shape).copy() if b.ndim == 1 else b for b in batch]
        sizes = {nm: (b.shape[0] if b.ndim >= 1 else None) for nm, b in zip(names, batch)}
        if any(b.ndim < 2 for b in batch) or len(set(sizes.values())) != 1:
            raise InputError("ensemble initial states must be batched with one leading size B; got shapes "
                             + ", ".join(f"{nm} {b.shape}" for nm, b in zip(names, batch)))
        B = batch[0].shape[0]
        if B == 0:
            raise InputError("ensemble: no members (the initial states have a leading size B = 0)")
        if self.factory is not None and B != self.n_params:
            raise InputError(f"ensemble: {B} initial states but {self.n_params} parameter sets")
        return tuple(jnp.asarray(a) for a in _checked_members(self.system, self.systems if self.factory else None, batch, project))

    def _metadata(self, metadata) -> dict:
        """The run's metadata before it runs (the caller's ``metadata`` last)."""
        md = run_metadata(self.system, self.method, self.h, self.n_steps, self.save_every, self.options,
                          members=self.B, kept=list(self.keep) if self.keep else "all")
        if self.factory is not None:
            md["params"] = jax.tree_util.tree_map(lambda a: np.asarray(a).tolist(), self.params)
        if self.t0:
            md["t0"], md["t_final"] = self.t0, self.t0 + self.n_steps * self.h
        md.update(metadata or {})
        return md

    def _programs(self, hj, chunk_saves):
        """(start, chunk, devices, layout): the compiled programs of the members.

        Raises InputError for a factory whose method build needs concrete parameters."""
        if self.factory is None:
            return _compiled_ensemble(self.system, self.method, self.options, self.x0s, hj, self.save_every,
                                      chunk_saves, self.keep)
        try:
            return _compiled_param_ensemble(self.factory, self.method, self.options, self.params, self.x0s, hj,
                                            self.save_every, chunk_saves, self.keep)
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError) as exc:
            raise InputError(f"ensemble(params=...): {self.method.name} on this system needs concrete values of "
                             f"the parameters when it is built; batch over parameters that enter only the "
                             f"system's callables ({str(exc).splitlines()[0]})") from None

    def go(self, progress, chunk_steps, metadata) -> Ensemble:
        """Compile, run the chunks, and return the Ensemble (or raise; :meth:`_result`)."""
        B, h, save_every = self.B, self.h, self.save_every
        chunk_saves = loop.ensemble_chunk_saves(B, chunk_steps)
        per_call = loop.nodes_per_call(chunk_saves, save_every, max(1, loop.ENSEMBLE_CHUNK_MEMBER_STEPS // B))
        md = self._metadata(metadata)
        hj = jnp.asarray(h, jnp.float64)
        t_c = time.perf_counter()
        start, chunk, devices, layout = self._programs(hj, chunk_saves)
        full, rem = loop.save_plan(self.n_steps, save_every)
        loop.check_memory(full + (2 if rem else 1), 8 * sum(layout.sizes), B, "ensemble")
        x0s = _pad_members(self.x0s, devices)
        md["devices"] = len(devices)
        t_run = time.perf_counter()
        state, out0 = start(x0s, hj)
        nodes = MemoryNodes(loop.node_prefix(out0, True, B), axis=1, layout=layout)
        r = loop.run_chunks(chunk, layout, state, hj, nodes, self.n_steps, per_call,
                            save_every, progress, md, batched=True, members=B,
                            stop_on_failure=self.on_failure == "raise")
        return self._result(r, md, t_run - t_c)

    def _result(self, r, md, compile_s) -> Ensemble:
        """The Ensemble of the driver's result ``r``; sets :attr:`warning` when members failed.

        Raises ConvergenceError (``on_failure="raise"``: the member that failed first) or
        RunInterrupted."""
        B, h, method = self.B, self.h, self.method
        n_nodes = next(iter(r.arrays.values())).shape[1]
        t = self.t0 + loop.node_times(h, self.n_steps, self.save_every, n_nodes)
        md.update({"wall_time_s": r.wall, "compile_time_s": compile_s,
                   "trajectory_steps_per_second": B * self.n_steps / r.wall if r.wall > 0 and not r.failures else None})
        md.update(chart_metadata(r.arrays, h))
        status = np.where(np.isin(np.arange(B), list(r.failures)), "failed", "ok")
        if r.failures:
            md["failures"] = {str(i): {"step": k, "time": self.t0 + k * h, "cause": newton_mod.describe(c)}
                              for i, (k, c) in sorted(r.failures.items())}
        if r.failures and self.on_failure == "raise":
            i = min(r.failures, key=lambda m: r.failures[m][0])
            k, cause = r.failures[i]
            good = k // self.save_every + 1
            traj = trajectory(t[:good], {kk: v[i, :good] for kk, v in r.arrays.items()}, dict(md, member=i))
            raise failure_error(method, k, h, cause, traj, "The member's nodes before it are kept in "
                                ".trajectory", where=f"ensemble member {i}, ", t0=self.t0)
        ens = Ensemble(t, r.arrays, md, status=status)
        if r.interrupted:
            from .interrupts import RunInterrupted
            raise RunInterrupted(f"ensemble: interrupted ({r.interrupted}) at t = {t[-1]:.6g}; the nodes "
                                 f"computed are kept in .trajectory (an Ensemble)", trajectory=ens,
                                 signal_name=r.interrupted)
        if r.failures:
            i = min(r.failures)
            first = md["failures"][str(i)]
            self.warning = EnsembleMemberWarning(
                f"{len(r.failures)} of {B} ensemble members failed (first: member {i}, "
                f"{first['cause']} at t = {first['time']:.6g}); the others completed. "
                f"Ensemble.failed lists them, Ensemble.status says which; their nodes after the failure "
                f"are NaN (on_failure='raise' raises instead)")
        return ens
