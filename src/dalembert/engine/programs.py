"""Binding a method to a system, and the compiled programs of single runs, kept with the system.

:func:`bind` is where the system-kind protocol meets the method: it resolves the kind (or a
registered view of it, :func:`dalembert.methods.kinds.resolve`) *before* anything is traced, and
builds the method's scheme on the system it integrates. :func:`single_run_programs` compiles the
start and chunk functions of a single run once per (system, method, options, state shapes); they
are kept with the system object (weakly, :mod:`dalembert._cache`) and serve every initial state,
step size, run length and ``save_every``. A system marked by :func:`parametrised` (built by a
model's factory) compiles its parameters as arguments instead: its programs are kept with the
factory and serve every value of the parameters too.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import weakref

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import clock, monitors
from .._cache import cached, hashable
from ..errors import InputError
from ..methods.kinds import resolve
from . import loop
from .disk_cache import compile_cached
from .xla import compile_lowered, compiler_options


def compile_program(lowered):
    """A program of dalembert's compiled with its compiler options
    (:func:`~dalembert.engine.xla.compile_lowered`),
    or loaded from the persistent cache of its programs (:mod:`dalembert.engine.disk_cache`)."""
    options = compiler_options(lowered)          # (prints the program once: its size decides)
    return compile_cached(lowered, lambda lo: compile_lowered(lo, options), options)


def compile_in_background(lowered):
    """:func:`compile_program` of ``lowered`` on a worker thread: a ``concurrent.futures.Future``
    of the compiled program. XLA compiles without the GIL, so a start program compiles while the
    chunk program is traced, lowered and compiled on the caller's thread (two cores: the first
    call's wall time falls by the shorter compile; the work is the same)."""
    global _COMPILER
    if _COMPILER is None:
        from concurrent.futures import ThreadPoolExecutor
        _COMPILER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dalembert-compile")
    return _COMPILER.submit(compile_program, lowered)


_COMPILER = None


class Bound(NamedTuple):
    """A method bound to a system: ``system`` is the one the scheme integrates (the user's, or
    its view); ``convert(*state) -> state`` maps the user's initial state to it (traceable)."""

    system: Any
    scheme: Any
    convert: Callable


def _identity(*state):
    return tuple(state)


def view_of(system, method, state0) -> tuple:
    """(the system ``method`` integrates, ``convert(*state) -> its initial state``): ``system``
    itself and the identity, or the registered view anchored at ``state0`` (concrete arrays).

    Raises InputError for an incompatible kind or feature (:func:`dalembert.methods.kinds.resolve`)."""
    view = resolve(system, method, state0)
    if view is None:
        return system, _identity
    target = view.system(system, *state0)

    def convert(*state):
        return tuple(view.state(target, *state))
    return target, convert


def bind(system, method, state0, options: dict, trace_once: bool = False) -> Bound:
    """The scheme of ``method`` on ``system`` (through a registered view if the method integrates
    another kind); ``state0``: one validated initial state of ``system`` (concrete arrays; a view
    may anchor on it, and ``build`` reads its shapes).

    ``trace_once``: the method's ``init`` and ``observe`` are traced once, at the shapes of
    ``state0`` (:func:`once`), and that trace serves every later use (the monitor's shapes
    below, the start program, the monitor's own init); for the compiled programs of
    :func:`single_run_programs`, not for a bind under a user's transformation.

    Raises InputError: an incompatible kind or a feature the method does not accept (before
    anything is traced), an option the method does not declare (:meth:`Method.options`).
    """
    target, convert = view_of(system, method, state0)
    if target is system:
        x0 = state0[0]
    else:                                     # build reads the shapes of the view's state
        shape = jax.eval_shape(convert, *state0)[0]
        x0 = jnp.zeros(shape.shape, shape.dtype)
    engine = {k: options[k] for k in ENGINE_OPTIONS if k in options}
    options = {k: v for k, v in options.items() if k not in ENGINE_OPTIONS}
    every, on_parasitic = _engine_options(engine)
    check_options(method, system, options)
    scheme = method.build(target, x0, **options)
    if trace_once:
        scheme = _init_traced_once(scheme, state0 if target is system else jax.eval_shape(convert, *state0))
    if monitors.monitored(method):
        h = jax.ShapeDtypeStruct((), jnp.float64)
        obs = jax.eval_shape(lambda s, hh: scheme.observe(scheme.init(*convert(*s), hh), hh),
                             tuple(jnp.asarray(x) for x in state0), h)
        if monitors.has_configuration(obs):
            scheme = monitors.with_sawtooth(scheme, monitors.THRESHOLD if on_parasitic == "stop" else None,
                                            getattr(target, "group", None))
    elif on_parasitic == "stop":
        raise InputError(f"on_parasitic='stop': {method.name} has no parasitic-mode monitor (only the "
                         f"two-step methods have one: {', '.join(monitors.monitored_methods())})")
    if getattr(target, "timed", getattr(target, "has_force", False)):
        from .forcing import with_clock
        scheme = with_clock(scheme, target, engine.get("t0", 0.0), method.traits.order)
    if every:
        scheme = loop.with_checks(scheme, target, every)
    if method.traits.implicit and not method.traits.explicit_when:
        scheme = dataclasses.replace(scheme, never_explicit=True)
    return Bound(target, scheme, convert)


def _init_traced_once(scheme, state0):
    """``scheme`` with ``init`` traced once at the shapes of ``state0`` (the state it takes) and
    a float64 step, and ``observe`` once at the shapes of the state ``init`` returns
    (:func:`once`); as it is if either cannot be traced alone."""
    hs = jax.ShapeDtypeStruct((), jnp.float64)
    try:
        init = once(scheme.init, *_shapes_of(tuple(state0)), hs)
        observe = once(scheme.observe, init.out_shape, hs)
    except Exception:                  # noqa: BLE001 - traced where it is used, as before
        return scheme
    return dataclasses.replace(scheme, init=init, observe=observe)


def check_options(method, system, options: dict) -> None:
    """Raise InputError naming the options in ``options`` that ``method`` does not declare
    (:meth:`~dalembert.methods.base.Method.options`), with those it does and the initial-state
    names of ``system`` (a mistyped state name lands here)."""
    declared = method.options()
    if declared is None:
        return
    unknown = sorted(set(options) - set(declared))
    if unknown:
        raise InputError(f"{method.name}: unknown option{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(unknown)}; its options: {', '.join(declared) or 'none'}; initial-state "
                         f"names of {system.name}: {', '.join(system.state_names)}")


#: Options that the engine takes (not the method's ``build``), given with the build options:
#: ``check_every`` (int ≥ 1: check the node's outputs and the system's invariants every K steps,
#: :func:`~dalembert.engine.loop.with_checks`) and ``on_parasitic`` ("warn", the default, or
#: "stop": fail the step at which the period-2 statistic of a two-step method exceeds
#: :data:`~dalembert.monitors.THRESHOLD`).
ENGINE_OPTIONS = ("check_every", "on_parasitic", "t0")


def _engine_options(engine: dict):
    every = engine.get("check_every")
    if every is not None and (not isinstance(every, (int, np.integer)) or isinstance(every, bool) or every < 1):
        raise InputError(f"check_every must be an integer ≥ 1 (steps) or None; got {every!r}")
    on_parasitic = engine.get("on_parasitic", "warn")
    if on_parasitic not in ("warn", "stop"):
        raise InputError(f"on_parasitic must be 'warn' or 'stop'; got {on_parasitic!r}")
    return (None if every is None else int(every)), on_parasitic


def options_key(options: dict) -> tuple:
    """Build options as a hashable cache key (arrays by value, see :func:`hashable`)."""
    return tuple(sorted((k, hashable(v)) for k, v in options.items()))


def state_shapes(state) -> tuple:
    """((shape, dtype name), ...) of an initial state: part of the programs' keys."""
    return tuple((tuple(np.shape(x)), _dtype_name(np.asarray(x).dtype)) for x in state)


@functools.lru_cache(maxsize=None)
def _dtype_name(dtype) -> str:
    """``str(dtype)``, kept per dtype (str of a NumPy dtype took ~5 µs, twice per dl.integrate call)."""
    return str(dtype)


def view_key(system, method, state0):
    """What of the initial state a view depends on (e.g. the chart anchor's signs): part of the
    program key, so that one program serves every initial state with the same anchor."""
    view = resolve(system, method)
    return None if view is None else id(view.system(system, *state0))


def single_run_programs(system, method, options: dict, state0: tuple, h, short: bool = False):
    """(start, chunk, layout) compiled for a single run; kept with ``system``.

    ``start(state0, h) -> (internal state, node outputs)``;
    ``chunk(state, h, n_active, save_every, alive) -> (state, outputs, ok, fail_at, cause, it_sum,
    it_max)``
    (see :func:`dalembert.engine.loop.make_chunk`), with
    :func:`~dalembert.engine.loop.single_chunk_saves` nodes: the full chunk, or with ``short`` the
    chunk of a short run (:data:`~dalembert.engine.loop.SHORT_CHUNK_SAVES` nodes, whose output
    buffer costs little to zero at each call) for a small program; each is compiled on its first
    use, and they serve every run length (:class:`ChunkPrograms`). For a system marked by
    :func:`parametrised` (and a method without a view), the programs take its float parameters as
    arguments (:func:`_parametrised_programs`). A system with a concrete (N, c) control array
    (:func:`runtime_controls`) gives it to both programs as an argument: they are compiled once
    per array shape and kept with the system the array was given to, and serve every array of
    that shape.
    """
    options, t0 = runtime_options(options)
    made = parametrisation(system)
    if made is not None and resolve(system, method) is None:
        return _parametrised_programs(system, made, method, options, state0, h, t0, short)
    system, u = runtime_controls(system)
    u_spec = () if u is None else (jax.ShapeDtypeStruct(u.shape, jnp.float64),)
    key = ("single", method, options_key(options), state_shapes(state0),
           view_key(system, method, state0), t0 is not None, tuple(x.shape for x in u_spec))

    def traced_controls():
        # traced with a stand-in control array: the programs take the run's as an argument, and
        # the traces kept for them (:func:`once`) take it as an input
        return clock.controls_given(tuple(np.zeros(x.shape) for x in u_spec))

    def make():
        with traced_controls():
            return made_programs()

    def made_programs():
        b = bind(system, method, state0, options, trace_once=True)
        n_t = 0 if t0 is None else 1

        def start(x0s, h, *rt):         # rt: (t0,) when it takes t0, then (U,) when it takes controls
            with clock.controls_given(rt[n_t:]):
                x = b.convert(*x0s)
                with started_at(rt[:n_t]):
                    state = b.scheme.init(*x, h)
                return state, loop.node_outputs(b.system, b.scheme.observe(state, h))

        args = (state0, h) + (() if t0 is None else (np.float64(0.0),)) + u_spec
        traced = jax.jit(start).trace(*args)
        state_s = _shapes_of(traced.out_info[0])
        lowered_start = traced.lower()
        short_ok = _small(lowered_start)   # (printed before its compile starts on the worker)
        start_c = compile_in_background(lowered_start)
        b = traced_once(b, state_s, h)
        int32 = jax.ShapeDtypeStruct((), jnp.int32)

        def compiled_chunk(bound, fast, short_):
            layout = []
            chunk = loop.make_chunk(bound.system, bound.scheme, None, state_s, h, layout_out=layout,
                                    fast=fast, short=short_)
            if u_spec:
                def chunk_u(state, hh, n_active, n_sub, alive, uu):
                    with clock.controls_given((uu,)):
                        return chunk(state, hh, n_active, n_sub, alive)
                return compile_program(jax.jit(chunk_u).lower(state_s, h, int32, int32,
                                                              jax.ShapeDtypeStruct((), jnp.bool_), *u_spec)), layout[0]
            return compile_program(jax.jit(chunk).lower(state_s, h, int32, int32,
                                                        jax.ShapeDtypeStruct((), jnp.bool_))), layout[0]

        # a chunk compiled later (the other size, the checked twin) binds the system again,
        # through a weak reference: the programs are cached with the system, and a closure over
        # it (or over ``b``) would keep it alive for ever
        try:
            owner = weakref.ref(system)
        except TypeError:             # not weakly referenceable: _cache keeps it strongly anyway
            owner = (lambda s: lambda: s)(system)

        def rebound():
            return traced_once(bind(owner(), method, state0, options, trace_once=True), state_s, h)
        chunks = ChunkPrograms(compiled_chunk, rebound, loop.never_fails(b.scheme, state_s, h), traced_controls,
                               short_ok=short_ok)
        chunks.get(short, b)          # the size this run needs, from the scheme traced above
        return start_c.result(), chunks
    start_c, chunks = cached(system, key, make)
    chunk_c, rechecked, layout = chunks.get(short)
    start = with_start_time(start_c, t0)
    if u is not None:
        uj = jnp.asarray(u, jnp.float64)
        start = with_start_time(start_c, t0, uj)

        def with_u(c):
            return lambda state, hh, n_active, n_sub, alive: c(state, hh, n_active, n_sub, alive, uj)
    else:
        def with_u(c):
            return c
    if rechecked is None:
        return start, with_u(chunk_c), layout
    if u is None:      # one Rechecked per cached chunk: its checked twin, once made, is reused as is
        return start, rechecked, layout
    return start, Rechecked(with_u(chunk_c), lambda: with_u(rechecked.make_checked())), layout


#: a start program of at most this many lines of StableHLO marks a small system and method, whose
#: short runs get a chunk of their own (:class:`ChunkPrograms`); the knife edge's ``nh-rattle``
#: start has about 300, the hessian coin's 6700
SHORT_CHUNK_MAX_LINES = 2000


def _small(lowered) -> bool:
    """Whether a lowered start program is at most :data:`SHORT_CHUNK_MAX_LINES` lines."""
    try:
        return lowered.as_text().count("\n") <= SHORT_CHUNK_MAX_LINES
    except Exception:  # noqa: BLE001 - a program that cannot be printed: one chunk size
        return False


class ChunkPrograms:
    """The compiled chunks of one single-run program entry (:func:`single_run_programs`), by size
    — the full chunk and the short run's (``short``) — each compiled on its first use.

    ``compile_chunk(bound, fast, short) -> (compiled chunk, RecordLayout)``; ``rebind() -> Bound``
    binds the system again (for a chunk compiled after the entry was made: the entry must not hold
    the system); ``fast``: the step never fails (:func:`~dalembert.engine.loop.never_fails`), so
    the chunk runs unchecked steps and is a :class:`Rechecked`, whose checked twin is compiled on
    the first failure; ``context()``: the context to trace in (a stand-in control array)."""

    def __init__(self, compile_chunk, rebind, fast: bool, context, short_ok: bool = True):
        self.compile_chunk, self.rebind, self.fast, self.context = compile_chunk, rebind, fast, context
        self.short_ok = short_ok
        self.made = {}

    def get(self, short: bool, bound=None) -> tuple:
        """(compiled chunk, its Rechecked or None, layout) of size ``short``; ``bound``: the
        Bound to compile it from (else :attr:`rebind`). A short run is served by the full chunk
        when that one is compiled already, or when the programs are not small (``short_ok``
        False): a second compile of a rich system's chunk costs seconds, the full chunk's larger
        buffer some 0.1 ms a call (its caller's nodes per call stay within either size)."""
        if short and (not self.short_ok or False in self.made):
            short = False
        if short not in self.made:
            with self.context():
                chunk_c, layout = self.compile_chunk(bound if bound is not None else self.rebind(), self.fast, short)
            rechecked = Rechecked(chunk_c, self._checked_maker(short)) if self.fast else None
            self.made[short] = (chunk_c, rechecked, layout)
        return self.made[short]

    def _checked_maker(self, short):
        checked = {}

        def make_checked():            # compiled on the first failure of a fast chunk, then kept
            if "chunk" not in checked:
                with self.context():
                    checked["chunk"] = self.compile_chunk(self.rebind(), False, short)[0]
            return checked["chunk"]
        return make_checked


def runtime_controls(system) -> tuple:
    """(the system the programs are compiled for, the run's (N, c) control array or None): for a
    system with a concrete control array (``control_array()``), the same system with the array
    read from the programs' argument (``runtime_controlled()``,
    :meth:`~dalembert.systems.torque.ControlledForce.runtime_controlled`) and the array; else
    ``system`` and None."""
    array = getattr(system, "control_array", None)
    u = array() if callable(array) else None
    if u is None:
        return system, None
    return system.runtime_controlled(), u


def runtime_options(options: dict) -> tuple:
    """(``options`` without ``t0``, t0 as a float64 or None): the time of a forced or
    time-dependent run's first node is an argument of its start program, not a constant in it,
    so that one program (and one cache key) serves every t0."""
    if "t0" not in options:
        return options, None
    return {k: v for k, v in options.items() if k != "t0"}, np.float64(options["t0"])


def started_at(t0_: tuple):
    """The engine's clock at the run's first node (t0, k = 0) when the start program takes t0
    (``t0_`` = (t0,)): the clocked scheme's ``init`` starts there
    (:func:`dalembert.engine.forcing.with_clock`); no clock for ``t0_`` = ()."""
    if not t0_:
        return contextlib.nullcontext()
    return clock.at(jnp.asarray(t0_[0], jnp.float64), jnp.asarray(0, jnp.int32))


def with_start_time(start_c, t0, u=None):
    """The start program as ``start(x0s, h)``, with the run's t0 (None: it takes none) and
    control array ``u`` (None: it takes none) bound."""
    rt = (() if t0 is None else (t0,)) + (() if u is None else (u,))
    if not rt:
        return start_c
    return lambda x0s, hh: start_c(x0s, hh, *rt)


def _shapes_of(tree):
    """``tree`` (arrays or shape structs) as plain shape structs (shape, dtype, weak type)."""
    return jax.tree_util.tree_map(
        lambda x: jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x), weak_type=getattr(x, "weak_type", False)),
        tree)


def once(fn, *specs):
    """``fn`` traced once, at the abstract arguments ``specs`` (shape structs): returns a
    function that evaluates that trace (its jaxpr) for arguments of the same tree structure,
    shapes and dtypes, and calls ``fn`` itself for any other. Evaluating a jaxpr binds its
    primitives again — the same operations, so the same compiled program — without running
    ``fn``'s Python: a step whose metric is the Hessian of a user's kinetic energy is traced
    through its autodiff once, not once per program and loop that contains it. Traced while a
    run's control array is given (:func:`dalembert.clock.controls_given`), the array is an input
    of the trace, and a call passes the array given where it is called. A call inside
    the engine's clock (:func:`dalembert.clock.at`: a forced system's time, which the trace did
    not see) calls ``fn``."""
    u = clock.controls()
    u_shape = None if u is None else tuple(jnp.shape(u))
    if u is None:
        closed, out_shape = jax.make_jaxpr(fn, return_shape=True)(*specs)
    else:                              # the run's control array: an input of the trace, not a constant
        def fn_u(uu, *args):
            with clock.controls_given((uu,)):
                return fn(*args)
        closed, out_shape = jax.make_jaxpr(fn_u, return_shape=True)(
            jax.ShapeDtypeStruct(u_shape, jnp.float64), *specs)
    leaves, in_tree = jax.tree_util.tree_flatten(specs)
    avals = [(tuple(x.shape), jnp.dtype(x.dtype)) for x in leaves]
    out_tree = jax.tree_util.tree_structure(out_shape)

    def call(*args):
        flat, tree = jax.tree_util.tree_flatten(args)
        now = clock.controls()
        if tree != in_tree or [(tuple(jnp.shape(x)), jnp.result_type(x)) for x in flat] != avals or \
                clock.running() or \
                (u_shape is not None and (now is None or tuple(jnp.shape(now)) != u_shape)):
            # the trace did not see this clock (a forced system's inner scheme) or these controls
            return fn(*args)
        if u_shape is not None:
            flat = [jnp.asarray(now, jnp.float64)] + flat
        return jax.tree_util.tree_unflatten(out_tree, jax.core.eval_jaxpr(closed.jaxpr, closed.consts, *flat))
    call.out_shape = _shapes_of(out_shape)
    call.traced = (closed, in_tree, avals, out_tree)
    return call


def traced_once(b: Bound, state_s, h) -> Bound:
    """``b`` with its scheme's ``step`` and ``observe`` traced once (:func:`once`) at the
    internal state's shapes ``state_s`` and step size ``h``: every program and loop of a single
    run that steps or observes (the chunk's step loops, the explicit-step test
    :func:`~dalembert.engine.loop.never_fails`, the node outputs, the step's energy check)
    reuses the one trace. A scheme whose step cannot be traced alone is returned as it is."""
    hs = jax.ShapeDtypeStruct(jnp.shape(h), jnp.result_type(h))
    try:
        step = once(b.scheme.step, state_s, hs)
        observe = once(b.scheme.observe, state_s, hs)
    except Exception:                  # noqa: BLE001 - traced where it is used, as before
        return b
    return b._replace(scheme=dataclasses.replace(b.scheme, step=step, observe=observe))


class Rechecked:
    """A chunk of unchecked steps (``make_chunk(fast=True)``) that is run again by the checked
    chunk, compiled on the first failure, whenever it reports one: the checked chunk then names
    the first failed step and keeps the last good state, exactly as if it had run alone. The
    calls and results are those of a compiled chunk (:func:`dalembert.engine.loop.make_chunk`)."""

    def __init__(self, fast, make_checked):
        self.fast, self.make_checked, self.checked = fast, make_checked, None

    def __call__(self, state, h, n_active, n_sub, alive):
        out = self.fast(state, h, n_active, n_sub, alive)
        if bool(np.all(np.asarray(out[2]))) or not bool(np.any(np.asarray(alive))):
            return out
        if self.checked is None:
            self.checked = self.make_checked()
        return self.checked(state, h, n_active, n_sub, alive)



#: systems built by a factory from concrete parameters (:func:`parametrised`):
#: ``{system: (factory, float parameters, other parameters)}``
_PARAMETRISED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def parametrised(system, factory: Callable, params: dict):
    """Mark ``system`` (= ``factory(params)``, concrete) so that its single runs compile the float
    parameters as *arguments* of the program rather than constants in it: one compiled program —
    in memory, kept with ``factory``, and one entry of the persistent compilation cache — serves
    every value of the parameters. Integer parameters (they may decide shapes) stay constants and
    part of the program's key. Returns ``system``.

    The results equal those of the unmarked system to round-off, not bit for bit: XLA compiles a
    constant and an argument differently (it folds constants, contracts a*b + c into a fused
    multiply-add where it can, divides by a scalar as a product with its reciprocal), so that
    the last bits of some nodes differ. A run with a view (a method that integrates another
    kind) compiles as for an unmarked system.

    Raises InputError when ``factory`` cannot build the system from traced parameters (it reads
    their values).
    """
    floats = {k: np.float64(v) for k, v in sorted(params.items())
              if not isinstance(v, (bool, int, np.integer))}
    fixed = {k: v for k, v in params.items() if k not in floats}

    def probe(p):
        factory({**fixed, **p})
        return jnp.zeros(())
    try:
        with jax.ensure_compile_time_eval():
            jax.make_jaxpr(probe)(floats)
    except Exception as exc:  # noqa: BLE001 - any failure of the traced build: refuse, one line
        raise InputError(f"{getattr(system, 'name', 'this system')}: its factory needs concrete parameter "
                         f"values ({type(exc).__name__}), so its parameters cannot be arguments of the "
                         f"compiled program") from None
    _PARAMETRISED[system] = (factory, floats, fixed)
    return system


def parametrisation(system):
    """``(factory, float parameters, other parameters)`` of a system marked by
    :func:`parametrised`, else None."""
    try:
        return _PARAMETRISED.get(system)
    except TypeError:                  # not weakly referenceable: never marked
        return None


def _parametrised_programs(system, made, method, options, state0, h, t0=None, short=False):
    """:func:`single_run_programs` of a system marked by :func:`parametrised`: ``start`` and
    ``chunk`` take the float parameters as their first argument, bound here to the system's
    values (and ``start`` the run's t0, when not None); the compiled programs are kept with the
    factory."""
    factory, floats, fixed = made
    key = ("single-parametrised", method, options_key(options), state_shapes(state0),
           tuple(sorted((k, hashable(v)) for k, v in fixed.items())), tuple(floats), t0 is not None)

    def make():
        def bound(p):
            # what does not depend on the parameters is evaluated now, concretely, as for a
            # system with constant parameters (see _compiled_param_ensemble)
            with jax.ensure_compile_time_eval():
                return bind(factory({**fixed, **p}), method, state0, options)

        def start(p, x0s, h, *t0_):
            b = bound(p)
            x = b.convert(*x0s)
            with started_at(t0_):
                state = b.scheme.init(*x, h)
            return state, loop.node_outputs(b.system, b.scheme.observe(state, h))

        t_args = () if t0 is None else (np.float64(0.0),)
        lowered_start = jax.jit(start).lower(floats, state0, h, *t_args)
        short_ok = _small(lowered_start)   # (printed before its compile starts on the worker)
        start_c = compile_in_background(lowered_start)
        state_s = jax.eval_shape(start, floats, state0, h, *t_args)[0]
        int32 = jax.ShapeDtypeStruct((), jnp.int32)

        def compiled_chunk(_, fast, short_):
            layout = []

            def chunk(p, state, hh, n_active, n_sub, alive):
                b = bound(p)
                return loop.make_chunk(b.system, b.scheme, None, state_s, hh, layout_out=layout,
                                       fast=fast, short=short_)(state, hh, n_active, n_sub, alive)
            return compile_program(jax.jit(chunk).lower(floats, state_s, h, int32, int32,
                                                        jax.ShapeDtypeStruct((), jnp.bool_))), layout[0]

        fast = loop.never_fails(bind(system, method, state0, options).scheme, state_s, h)
        chunks = ChunkPrograms(compiled_chunk, lambda: None, fast, contextlib.nullcontext,
                               short_ok=short_ok)
        chunks.get(short)
        return start_c.result(), chunks
    start_c, chunks = cached(factory, key, make)
    chunk_c, rechecked, layout = chunks.get(short)

    def with_params(c):
        return lambda state, hh, n_active, n_sub, alive: c(floats, state, hh, n_active, n_sub, alive)
    start = (lambda x0s, hh: start_c(floats, x0s, hh, *(() if t0 is None else (t0,))))
    if rechecked is None:
        return start, with_params(chunk_c), layout
    return start, Rechecked(with_params(chunk_c), lambda: with_params(rechecked.make_checked())), layout
