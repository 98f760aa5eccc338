"""The compiled time loop: one chunk of saved nodes as a pure function, and the driver that runs
chunks until a run is done or a step fails.

A run is split into chunks of ``chunk_saves`` saved nodes (``save_every`` steps each). A chunk
is one ahead-of-time compiled function — loops over blocks of saved nodes, over the nodes of a
block and over the ``save_every`` steps of a node (see :func:`make_chunk` for why three) — so no
Python statement runs per step, memory stays bounded and a progress bar can move between chunks.
The number of active nodes and the steps per node are runtime arguments: one compiled chunk
serves every run length and every ``save_every`` of a (system, method, options) — for a small
program's single runs two: a short run (at most :data:`SHORT_CHUNK_SAVES` nodes) has a chunk of
its own, whose output buffer is small (:func:`single_chunk_saves`,
:class:`~dalembert.engine.programs.ChunkPrograms`).

Failures: a step whose Newton solve does not converge, or whose new state or energy is not finite
(checked at every step), freezes the state (the other node outputs, and the system's own
invariants — a symmetric metric, a skew Π — are checked at the saved nodes: a node that fails
them fails the last step before it); the driver reports the first failed step.
"""
from __future__ import annotations

import math
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .. import clock
from ..errors import InputError
from ..methods.base import observation_dict
from ..solvers import newton_module as newton_mod
from .finite import finite_on_finite, output_reads_inputs, reads_inputs
from .progress import ProgressBar

#: Target number of steps per compiled chunk.
CHUNK_STEPS = 65536
#: Largest number of member-steps (members × steps) of one compiled ensemble chunk: chunks of
#: CHUNK_STEPS / B steps leave much of the time between chunks, which is not overlapped
#: (docs/benchmarks.md, "Measurements behind the code").
ENSEMBLE_CHUNK_MEMBER_STEPS = 1 << 22
#: Saved nodes per compiled chunk of a single run: every run length and save_every shares the
#: one program (a call runs at most CHUNK_STEPS steps; the nodes past those are padding, which
#: takes no step). Fewer for wide nodes: :func:`single_chunk_saves`.
CHUNK_SAVES = 16384
#: Largest size (bytes) of a single run's chunk of node records (:func:`single_chunk_saves`).
#: Below glibc's largest mmap threshold (32 MiB), a freed chunk output is reused by the next call
#: instead of being mapped afresh, zeroed and faulted in page by page (with the records copied
#: out at once, :class:`~dalembert.engine.stream.MemoryNodes` ``rows``): the chaotic quartic
#: (n = 40, 2 kB a node) saved every node about a sixth faster through ``dl.integrate`` than with
#: 16 384 × 2 kB = 32 MiB chunks joined at the end (docs/benchmarks.md, "Node output").
CHUNK_BYTES = 8 << 20


#: Saved nodes per compiled chunk of a *short* single run (at most this many nodes after node 0):
#: the chunk's output buffer is zeroed by every call whatever the number of active nodes, 0.08 ms
#: for 16 384 nodes of 12 numbers, the fixed cost that made a short ``dl.integrate`` call slower
#: than diffrax's (docs/benchmarks.md, "Low accuracy"). A short run therefore has a chunk of its
#: own, compiled on its first use: two compiled chunks serve every run length and save_every.
SHORT_CHUNK_SAVES = 1024


def single_chunk_saves(width: int, itemsize: int = 8, short: bool = False) -> int:
    """Saved nodes per compiled chunk of a single run whose node record holds ``width`` numbers
    of ``itemsize`` bytes: :data:`CHUNK_SAVES`, or fewer so that the chunk's records stay within
    :data:`CHUNK_BYTES` (but at least 256); ``short``: the chunk of a short run, at most
    :data:`SHORT_CHUNK_SAVES` of those."""
    full = min(CHUNK_SAVES, max(256, CHUNK_BYTES // max(1, width * itemsize)))
    return min(full, SHORT_CHUNK_SAVES) if short else full


def is_short_run(nodes: int) -> bool:
    """Whether a single run with ``nodes`` saved nodes to compute (after node 0; the partial last
    node counts as one) runs the short chunk (:data:`SHORT_CHUNK_SAVES`)."""
    return nodes <= SHORT_CHUNK_SAVES


#: Most steps of one run: step indices are exact in float64 (t = k·h) below 2**53.
MAX_STEPS = 2 ** 53
#: Most steps per saved node: the compiled loop counts the steps of a node in int32.
MAX_SAVE_EVERY = 2 ** 31 - 1


def step_count(h: float, t_final: float, save_every: int = 1) -> int:
    """Number of steps of a run that ends exactly at ``t_final``: t_final / h, which must be a
    whole number (to round-off: within max(1e-6, 64ε·t_final/h)). When ``save_every`` does not
    divide it, the last saved node is a partial one, at t_final (see :func:`run_chunks`).

    Raises InputError: h > t_final, t_final not a whole number of steps (the message gives the
    nearest t_final and h that are), more than :data:`MAX_STEPS` steps, save_every above
    :data:`MAX_SAVE_EVERY`.
    """
    if save_every > MAX_SAVE_EVERY:
        raise InputError(f"save_every = {save_every} is above the largest supported, {MAX_SAVE_EVERY}")
    ratio = t_final / h
    if not math.isfinite(ratio) or ratio > MAX_STEPS:
        raise InputError(f"t_final / h = {ratio:.3g} steps (t_final = {t_final:g}, h = {h:g}) is more "
                         f"than a run can take ({MAX_STEPS:.3g}); use a larger h or a shorter t_final")
    n = round(ratio)
    if n < 1:
        raise InputError(f"h = {h:g} is larger than t_final = {t_final:g}: a run needs at least one step")
    if abs(ratio - n) > max(1e-6, 64 * np.finfo(float).eps * ratio):
        lo, hi = math.floor(ratio), math.ceil(ratio)
        raise InputError(
            f"t_final = {t_final:g} is not a whole number of steps of h = {h:g} (t_final / h = "
            f"{ratio:.10g}); the run would not end at t_final. Use t_final = {hi * h:.12g} ({hi} steps)"
            + (f" or {lo * h:.12g} ({lo} steps)" if lo >= 1 else "")
            + f", or h = {t_final / hi:.12g} ({hi} steps)")
    return n


#: A run whose node arrays would take more than this fraction of the memory available when it
#: starts is refused before it runs (the arrays are held twice for a moment at the end, when the
#: chunks' pieces are joined: that factor is counted).
MEMORY_FRACTION = 0.5


#: Node arrays up to this size (bytes, counted as :func:`check_memory` counts them) are not
#: checked against the available memory.
SMALL_RUN_BYTES = 64 << 20


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux: MemAvailable; else the free
    physical pages), or None if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import os
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):          # pragma: no cover - not POSIX
        return None


def check_memory(n_nodes: int, node_bytes: int, members: int = 1, what: str = "run"):
    """Refuse (InputError) a run whose node arrays (``n_nodes`` × ``node_bytes`` × ``members``,
    counted twice) exceed :data:`MEMORY_FRACTION` of :func:`available_memory`; the message says
    how to keep less."""
    need = 2 * n_nodes * node_bytes * members
    if need <= SMALL_RUN_BYTES:        # not worth reading /proc/meminfo for (a file read a run)
        return
    avail = available_memory()
    if avail is None or need <= MEMORY_FRACTION * avail:
        return
    raise InputError(
        f"this {what} would keep {n_nodes:,} nodes × {node_bytes * members:,} bytes "
        f"({need / 2**30:.3g} GiB with the copy made when they are joined), more than "
        f"{MEMORY_FRACTION:.0%} of the {avail / 2**30:.3g} GiB of memory available: keep fewer nodes "
        f"(save_every / --save-every), fewer arrays (dl.ensemble(keep=...)), or a shorter t_final")


def save_plan(n_steps: int, save_every: int) -> tuple:
    """(full nodes, steps of the last partial node or 0) of a run: ``n_steps // save_every``
    nodes ``save_every`` steps apart, then, when ``save_every`` does not divide ``n_steps``, one
    node after the remaining steps (at t_final)."""
    return n_steps // save_every, n_steps % save_every


def node_times(h: float, n_steps: int, save_every: int, n_nodes: int, first: int = 0) -> np.ndarray:
    """Times (n_nodes − first,) of saved nodes ``first, …, n_nodes − 1`` of a run (the last
    partial node, if any, at n_steps·h; no more than the run has)."""
    full, rem = save_plan(n_steps, save_every)
    j = np.arange(first, min(n_nodes, full + (2 if rem else 1)), dtype=np.float64)
    return np.where(j > full, h * n_steps, h * save_every * j)


def ensemble_chunk_saves(members: int, chunk_steps: int) -> int:
    """Saved nodes per compiled chunk of an ensemble of ``members``: at most ``chunk_steps``
    records in all (``members`` per node) and :data:`ENSEMBLE_CHUNK_MEMBER_STEPS` member-steps.
    Independent of the run length and of save_every (one program serves them all)."""
    return max(1, min(ENSEMBLE_CHUNK_MEMBER_STEPS, chunk_steps) // members)


def nodes_per_call(chunk_saves: int, save_every: int, step_budget: int) -> int:
    """Active nodes per call of a chunk: at most ``chunk_saves`` and about ``step_budget`` steps
    (so that a run with a large save_every still reports progress), at least one."""
    return max(1, min(chunk_saves, step_budget // save_every))


def node_outputs(system, obs):
    """The arrays kept at a node: the method's observation plus the system's diagnostics
    (energy, constraint_residual, ...; the system-kind protocol, see :func:`integrate`)."""
    d = observation_dict(obs)
    at = d.pop(clock.NODE_CLOCK, None)       # a node of a system with V(q, t) or ν(q, t): its time
    if at is None:
        d.update(system.diagnostics(d))
    else:
        with clock.at(*at):
            d.update(system.diagnostics(d))
    return d


def all_finite(tree):
    leaves = jax.tree_util.tree_leaves(tree)
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves]))


def step_cause(info, new_finite):
    """The failure cause (int32, :data:`dalembert.solvers.newton.CAUSES`) of a step that failed:
    the method's own, else non-finite state or unspecified."""
    if info.cause is not None:
        return jnp.where(info.converged & ~new_finite, newton_mod.NON_FINITE, info.cause).astype(jnp.int32)
    return jnp.where(new_finite, newton_mod.FAILED, newton_mod.NON_FINITE).astype(jnp.int32)


def step_energy(system, scheme):
    """``energy(state, h)``: the value the system requires finite after every step for the node a
    state observes (:meth:`~dalembert.systems.kind.SystemKind.step_check_value`: by default the
    node's energy; XLA keeps only what it needs), or None for a kind without one — or where that
    value is finite whenever the state is (:func:`~dalembert.engine.finite.finite_on_finite`: a
    potential made of sums, products, sin, cos, …), which the step's state check then covers."""
    check = getattr(system, "step_check_value", None)

    def value(st, h):
        obs = observation_dict(scheme.observe(st, h))
        if check is None:
            return node_outputs(system, obs).get("energy")
        at = obs.pop(clock.NODE_CLOCK, None)         # V(q, t) at the node's time
        if at is None:
            return check(obs)
        with clock.at(*at):
            return check(obs)

    def energy(st, h):
        return None if finite_on_finite(value, *_shapes((st, h))) else value(st, h)
    return energy


def _shapes(tree):
    """``tree`` as shape structs (for tracing a function of it at trace time)."""
    return jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x)), tree)


def state_check(system, scheme):
    """``finite(state, h)``: whether a new state is finite and — given ``system`` — its node's
    energy too (:func:`step_energy`; skipped where the state's check covers it). The check of
    :func:`guarded_step` and of :func:`checked_after`."""
    energy = None if system is None else step_energy(system, scheme)

    def finite(st, h):
        ok = all_finite(st)
        e = None if energy is None else energy(st, h)
        return ok if e is None else ok & jnp.all(jnp.isfinite(e))
    return finite


def guarded_step(scheme, system=None, stops: bool = False, select: bool = False):
    """``step((state, good, ok, k, fail_at, cause), h) -> (new, good', ok', k + 1, fail_at', cause')``:
    one step of the scheme, checked. A step fails when its Newton solve did not converge, its new
    state is not finite, or — given ``system`` — the new node's energy is not finite (e.g. a
    potential log(x) that went NaN while its gradient did not: checked at every step, not only
    at the saved nodes). ``fail_at`` is the index k of the first failed step (−1 if none) and
    ``cause`` why it failed (:func:`step_cause`; 0 if none). The carry is made by
    :func:`stepping` and read by :func:`settled`, which gives the last good state.
    ``with_info=True`` also returns the step's StepInfo. The one step function of every loop.

    The step goes on from ``new`` whatever the checks say, and ``good`` keeps the last good state
    beside it: the checks then lie off the recurrence of the state and the processor overlaps
    them with the next step (selecting the state to step from by the checks put them on its
    critical path, at half the cost of a cheap step: docs/benchmarks.md, "Measurements behind the
    code").
    ``stops``: the loop stops at the first failed step (:func:`run_steps` with ``early_exit``),
    so ``good`` is just the state the step started from (a copy); otherwise it is selected by the
    checks at every step (a scan of fixed length). After a failure ``new`` is garbage that
    :func:`settled` does not read. ``select``: the step goes on from the selected state instead
    (both carried states are it) — the vmapped loops of ensembles, whose members must be bit for
    bit the same whatever the batch (a sweep's tasks against one ensemble): the other forms
    compile the step differently for a batch of one member per device (1 ulp in 6 % of the nodes of
    tests/unit/test_sweep.py)."""
    check = state_check(system, scheme)

    def step(carry, h, with_info=False):
        st, good_st, ok, k, fail_at, cause = carry
        new, info = scheme.step(st, h)
        finite = check(new, h)
        good = info.converged & finite
        take = ok & good
        first = ok & ~good
        if stops:                 # the loop stops here on a failure: st is the last good state
            good_st = st
        else:                     # kept by the checks: beside the stepped state, or as it
            good_st = jax.tree_util.tree_map(lambda a, b: jnp.where(take, a, b), new, st if select else good_st)
            new = good_st if select else new
        out = (new, good_st, take, k + 1, jnp.where(first, k, fail_at),
               jnp.where(first, step_cause(info, finite), cause))
        return (out, info) if with_info else out
    return step


def start_carry(state):
    """The node carry ``(state, ok, k, fail_at, cause)`` before the first step."""
    return (state, jnp.array(True), jnp.array(0, jnp.int32), jnp.array(-1, jnp.int32),
            jnp.array(0, jnp.int32))


def stepping(carry):
    """The carry of :func:`guarded_step` from a node carry ``(state, ok, k, fail_at, cause)``."""
    st, *rest = carry
    return (st, st, *rest)


def settled(carry):
    """The node carry ``(last good state, ok, k, fail_at, cause)`` of a :func:`guarded_step`
    carry: the state stepped to while every step succeeded, else the kept good one."""
    st, good, ok, *rest = carry
    return (jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), st, good), ok, *rest)


def run_steps(scheme, system, carry, h, n, *, early_exit: bool = True, counters=None):
    """``n`` (a runtime value) checked steps (:func:`guarded_step`) of ``scheme`` from the node
    carry ``carry``; returns the node carry after them. ``early_exit``: stop at the first failed
    step (a ``while`` on ``ok``; not for a vmapped loop, where it would step every member until
    all failed; without it the step goes on from the selected state, ``select`` of
    :func:`guarded_step`). ``counters``: ``(it_sum, it_max)`` of the Newton iterations, returned updated
    after the carry when given.

    A step that cannot fail to converge (an explicit one: :func:`never_fails`) is, with
    ``early_exit``, run by :func:`run_explicit_steps` instead: the checks are then made after
    the ``n`` steps, and the steps again with a check at each only if they fail."""
    if early_exit and never_fails(scheme, carry[0], h):
        res = run_explicit_steps(scheme, system, carry, h, n)
        return res if counters is None else (res, counters)
    return _checked_steps(scheme, system, carry, h, n, early_exit, counters)


def _checked_steps(scheme, system, carry, h, n, early_exit, counters=None):
    """The loop of :func:`run_steps`, every step checked (:func:`guarded_step`)."""
    step = guarded_step(scheme, system, stops=early_exit, select=not early_exit)

    def body(c):
        i, gc, cnt = c
        if cnt is None:
            return i + 1, step(gc, h), cnt
        gc, info = step(gc, h, with_info=True)
        return i + 1, gc, (cnt[0] + info.iterations, jnp.maximum(cnt[1], info.iterations))

    def cond(c):
        return (c[0] < n) & c[1][2] if early_exit else c[0] < n

    _, gc, cnt = lax.while_loop(cond, body, (jnp.asarray(0, jnp.int32), stepping(carry), counters))
    return settled(gc) if counters is None else (settled(gc), cnt)


def never_fails(scheme, state, h) -> bool:
    """Whether the scheme's step reports convergence unconditionally (an explicit step: its
    ``converged`` does not depend on the state), read from the step's jaxpr at trace time — not
    traced for a scheme marked ``never_explicit`` (an implicit method without an explicit case)."""
    if getattr(scheme, "never_explicit", False):
        return False
    kept = _converged_of_trace(scheme.step, (state, h))
    if kept is not None:               # the step's kept trace (engine.programs.once): read, not traced again
        return not kept
    try:
        closed = jax.make_jaxpr(lambda s, hh: jnp.asarray(scheme.step(s, hh)[1].converged))(*_shapes((state, h)))
    except Exception:                  # noqa: BLE001 - unknown: the checked loop
        return False
    return not reads_inputs(closed)


def _converged_of_trace(step, args):
    """Whether ``step``'s ``converged`` reads its inputs, from the trace kept with a step traced
    once (:func:`dalembert.engine.programs.once`) at the shapes of ``args``; None when there is
    none to read."""
    traced = getattr(step, "traced", None)
    if traced is None:
        return None
    closed, in_tree, avals, out_tree = traced
    leaves, tree = jax.tree_util.tree_flatten(_shapes(args))
    if tree != in_tree or [(tuple(x.shape), jnp.dtype(x.dtype)) for x in leaves] != avals:
        return None
    try:
        index = jax.tree_util.tree_unflatten(out_tree, list(range(out_tree.num_leaves)))[1].converged
    except (AttributeError, IndexError, TypeError):
        return None
    if not isinstance(index, int):
        return None
    return output_reads_inputs(closed, index)


def run_explicit_steps(scheme, system, carry, h, n):
    """:func:`run_steps` for a step that never fails to converge (:func:`never_fails`): the
    ``n`` steps run unchecked, then the state reached and its energy are checked; if they are not
    finite, the steps run again from the start with a check at each (:func:`guarded_step`), which
    names the first failed step and keeps the last good state, exactly as if every step had been
    checked. The result is that of the checked loop because a non-finite number stays non-finite
    through the arithmetic of a step (NaN and ±inf propagate); a step that turned one back into a
    finite number (a comparison or a select on it) would hide it. ``check_every`` (a data-
    dependent check in the step) and ``on_parasitic="stop"`` use the checked loop.

    Why: the finite check of every step is a large part of a cheap explicit step even off the
    state's critical path, because the loop's exit depends on it (timings: docs/benchmarks.md,
    "Measurements behind the code"). The check of the steps again is compiled into the program
    too."""
    trips = jnp.where(carry[1], n, 0)
    st = lax.fori_loop(0, trips, lambda _, s: scheme.step(s, h)[0], carry[0])
    return checked_after(scheme, system, carry, st, trips, h,
                         lambda: _checked_steps(scheme, system, carry, h, n, early_exit=True))


def unchecked_steps(scheme, system, carry, h, n):
    """``n`` unchecked steps from the node carry ``carry`` of a step that never fails to converge
    (:func:`never_fails`), then the check of the state reached (:func:`state_check`), with no
    branch and no selection in the loop: a non-finite state fails at the node's last step (cause
    NON_FINITE) and the carry holds whatever the steps reached. Which step failed first and which
    state was the last good one are not known here: the caller runs the same steps again, each
    checked (:func:`make_chunk` with ``fast``; :class:`~dalembert.engine.programs.Rechecked`).

    Why: the branch of :func:`checked_after` (a ``lax.cond`` whose other side is the checked
    loop) at every node, and its selection of the state, are a measurable share of the node loop
    with save_every = 1 (docs/high_order.md, "Node output")."""
    st0, ok0, k0, fail0, cause0 = carry
    trips = jnp.where(ok0, n, 0)
    st = lax.fori_loop(0, trips, lambda _, s: scheme.step(s, h)[0], st0)
    good = state_check(system, scheme)(st, h)
    bad = ok0 & ~good
    return (st, ok0 & good, k0 + trips, jnp.where(bad, k0 + trips - 1, fail0),
            jnp.where(bad, newton_mod.NON_FINITE, cause0).astype(jnp.int32))


def checked_after(scheme, system, carry, st, steps, h, again):
    """The node carry after ``steps`` unchecked steps from the node carry ``carry`` reached
    ``st`` (:func:`run_explicit_steps`): that, if ``st`` and its energy are finite, else
    ``again()`` — the same steps, each checked (:func:`guarded_step`). A carry that had failed
    before keeps its state."""
    st0, ok0, k0, fail0, cause0 = carry
    finite = state_check(system, scheme)(st, h)
    kept = jax.tree_util.tree_map(lambda a, b: jnp.where(ok0, a, b), st, st0)   # a failed run stays
    return lax.cond(finite, lambda: (kept, ok0, k0 + steps, fail0, cause0), again)


def _fail_node(carry, good, cause_code):
    """The carry with the step that produced the current node failed (cause ``cause_code``)
    unless ``good``."""
    st, ok, k, fail_at, cause = carry
    bad = ok & ~good
    return (st, ok & ~bad, k, jnp.where(bad, k - 1, fail_at),
            jnp.where(bad, cause_code, cause).astype(jnp.int32))


def check_outputs(carry, outs):
    """A finite state whose node outputs are not (e.g. V = NaN where ∇V is finite) fails at the
    step that produced it: the carry with that failure recorded."""
    return _fail_node(carry, all_finite(outs), newton_mod.NON_FINITE)


def check_data(system, carry, outs):
    """The system's own invariants at a saved node (``system.data_ok(node)``: a symmetric metric,
    a skew Π; kinds without it pass): a node that breaks them fails the step that produced it,
    with cause :data:`~dalembert.solvers.newton.INVARIANT`."""
    data_ok = getattr(system, "data_ok", None)
    return carry if data_ok is None else _fail_node(carry, data_ok(outs), newton_mod.INVARIANT)


def check_node(system, carry, outs):
    """The checks of a saved node: finite outputs (:func:`check_outputs`), then the system's
    invariants (:func:`check_data`)."""
    return check_data(system, check_outputs(carry, outs), outs)


class CheckedState(NamedTuple):
    """The state of a scheme checked every K steps (:func:`with_checks`): the inner state and
    the steps taken modulo K."""

    inner: object
    count: object


def with_checks(scheme, system, every: int):
    """``scheme`` whose step also checks, every ``every`` steps, the new node's outputs (finite)
    and the system's invariants (``data_ok``: a symmetric metric, a skew Π) — between the saved
    nodes, which are checked anyway (:func:`check_data`). A step that breaks them fails with
    cause :data:`~dalembert.solvers.newton.INVARIANT`. The check runs under ``lax.cond``: the
    other steps pay a counter."""
    from ..monitors import MonitoredScheme
    data_ok = getattr(system, "data_ok", None)
    inner_wrap = getattr(scheme, "wrap", None)

    def wrap(inner, h):
        if isinstance(inner, CheckedState):
            return inner
        return CheckedState(inner if inner_wrap is None else inner_wrap(inner, h), jnp.asarray(0, jnp.int32))

    def check(new, h):
        outs = node_outputs(system, scheme.observe(new, h))
        ok = all_finite(outs)
        return ok if data_ok is None else ok & data_ok(outs)

    def step(st, h):
        new, info = scheme.step(st.inner, h)
        count = (st.count + 1) % every
        ok = lax.cond(count == 0, check, lambda *_: jnp.array(True), new, h)
        bad = info.converged & ~ok
        base = newton_mod.CONVERGED if info.cause is None else info.cause
        info = info._replace(converged=info.converged & ok,
                             cause=jnp.where(bad, newton_mod.INVARIANT, base).astype(jnp.int32))
        return CheckedState(new, count), info

    return MonitoredScheme(init=lambda *a: wrap(scheme.init(*a), a[-1]), step=step,
                           observe=lambda st, h: scheme.observe(st.inner, h), wrap=wrap)


#: Largest size (bytes) of the per-block record buffer; see :func:`make_chunk`.
BLOCK_BYTES = 512


def _record_layout(system, scheme, state, h, keep=None):
    """Names (sorted; only those in ``keep`` if given), shapes, flat sizes and common dtype of
    the node outputs."""
    shapes = jax.eval_shape(lambda s, hh: node_outputs(system, scheme.observe(s, hh)), state, h)
    if keep is not None:
        unknown = set(keep) - set(shapes)
        if unknown:
            raise InputError(f"keep: unknown node arrays {sorted(unknown)}; available: {sorted(shapes)}")
    names = sorted(k for k in shapes if keep is None or k in keep)
    dtype = jnp.result_type(*[shapes[k].dtype for k in names])
    sizes = [math.prod(shapes[k].shape) for k in names]
    return names, [shapes[k].shape for k in names], sizes, dtype


class RecordLayout(NamedTuple):
    """How a node's outputs are packed into one flat record: names (sorted), shapes, sizes."""

    names: tuple
    shapes: tuple
    sizes: tuple

    def pack(self, arrays: dict):
        """Flat records (..., width) from named arrays (the inverse of :meth:`unpack`): NumPy,
        in the common dtype of the arrays."""
        parts = [np.asarray(arrays[k]) for k in self.names]
        lead = parts[0].shape[:parts[0].ndim - len(self.shapes[0])]
        dtype = np.result_type(*parts)
        return np.concatenate([p.astype(dtype, copy=False).reshape(lead + (-1,)) for p in parts], axis=-1)

    def unpack(self, flat) -> dict:
        """Named arrays (views where possible) from records ``flat`` of shape (..., width)."""
        lead = flat.shape[:-1]
        res, i = {}, 0
        for k, shp, sz in zip(self.names, self.shapes, self.sizes):
            res[k] = flat[..., i:i + sz].reshape(lead + tuple(shp))
            i += sz
        return res


def make_chunk(system, scheme, chunk_saves: int | None, state, h, keep=None, members: bool = False,
               layout_out: list | None = None, fast: bool = False, short: bool = False):
    """The compiled body of one chunk: ``chunk_saves`` saved nodes of ``n_sub`` steps each (None:
    :func:`single_chunk_saves` of the node record, with ``short``).

    ``members``: the body is vmapped over an ensemble's members. The steps of a node are then
    counted the same for every member (a member that failed keeps its last good state, as
    ``take`` below makes it), so that the vmapped step loop has a trip count shared by all
    members; counted per member, the loop became a ``while`` whose every step selects the whole
    carry under a per-member mask and reduces the masks across the members (slower:
    docs/benchmarks.md, "Measurements behind the code"). A vmapped loop computes every
    member's step anyway, so the count saves nothing for a failed member there.

    ``run_chunk(state, h, n_active, n_sub, alive) -> (state, records, ok, fail_at, cause, it_sum,
    it_max)``: ``alive`` (bool) False takes no step (an ensemble member that failed before);
    three nested loops — the ``n_sub`` (= save_every) steps of a node, the nodes of a *block*, the
    blocks of the chunk. The node outputs are computed per node (as the method's ``observe``
    defines them) and packed into one flat record; a block of records is kept in a buffer of at
    most :data:`BLOCK_BYTES` bytes, and only the outermost loop writes into the chunk-sized
    output ``records`` (≥ chunk_saves rows, flat: the caller unpacks the rows it keeps with the
    :class:`RecordLayout` appended to ``layout_out`` at trace time, on the host, as views).
    Only the blocks that hold active nodes (``j < n_active``) run.

    ``fast`` (single runs of a step that never fails to converge, :func:`never_fails`): the steps
    of a node run unchecked and only the node is checked (:func:`unchecked_steps`); a chunk that
    reports a failure is run again by the chunk made without ``fast`` from the same state, which
    names the first failed step exactly (:class:`~dalembert.engine.programs.Rechecked`).

    Why (docs/benchmarks.md, "What decides the speed"): XLA:CPU's runtime runs the kernels of a
    loop body one after the other only when all their buffers are small (≤ 512 B) or the body has
    at most 8 kernels; otherwise it schedules them through a concurrent executor whose overhead
    per iteration is many times the cost of a RATTLE step.
    Writing each node's outputs straight into the chunk-sized arrays put the per-node loop in
    that regime. The step loop's trip count is a runtime argument, so that XLA keeps it a loop
    even for save_every = 1: the step is then compiled the same way for every save_every (the
    nodes of a save_every = K run are those of the save_every = 1 run, bit for bit), and it stays
    small enough for XLA:CPU to compile into a single kernel (see
    :func:`request_small_loop_kernels`).
    """
    names, shapes, sizes, dtype = _record_layout(system, scheme, state, h, keep)
    if chunk_saves is None:
        chunk_saves = single_chunk_saves(sum(sizes), jnp.dtype(dtype).itemsize, short)
    if layout_out is not None:
        layout_out.append(RecordLayout(tuple(names), tuple(tuple(x) for x in shapes), tuple(sizes)))
    width = sum(sizes)
    block = max(1, min(chunk_saves, BLOCK_BYTES // (width * jnp.dtype(dtype).itemsize)))
    n_blocks = -(-chunk_saves // block)

    def pack(outs):
        return jnp.concatenate([jnp.ravel(outs[k]).astype(dtype) for k in names])

    def run_chunk(state, h, n_active, n_sub, alive):
        def node(carry, j):
            st, ok, k, fail_at, cause, it_sum, it_max = carry
            active = ok & (j < n_active)
            # an inactive node (padding, or after a failure) takes no step at all in a single
            # run (with ok = False the steps would change nothing that is kept); an ensemble
            # counts its steps for every member (see ``members`` above)
            trips = jnp.where((j < n_active) if members else active, n_sub, 0)
            if fast:
                st2, ok2, k2, fail2, cause2 = unchecked_steps(scheme, system, (st, active, k, fail_at, cause),
                                                              h, trips)
                s2, m2 = it_sum, it_max
            else:
                (st2, ok2, k2, fail2, cause2), (s2, m2) = run_steps(
                    scheme, system, (st, active, k, fail_at, cause), h, trips, early_exit=not members,
                    counters=(it_sum, it_max))
            outs = node_outputs(system, scheme.observe(st2, h))
            # (ok2 is False unless the node was active: the output check applies to those only)
            st2, ok2, k2, fail2, cause2 = check_node(system, (st2, ok2, k2, fail2, cause2), outs)
            # an inactive (padding) node leaves everything as it was
            ok_out = jnp.where(j < n_active, ok2, ok)
            carry = (st2, ok_out, jnp.where(active, k2, k), fail2, cause2, jnp.where(active, s2, it_sum),
                     jnp.where(active, m2, it_max))
            return carry, pack(outs)

        def run_block(carry, b):
            return lax.scan(node, carry, b * block + jnp.arange(block, dtype=jnp.int32))

        def block_into(b, c):
            carry, buf = c
            carry, recs = run_block(carry, b)
            return carry, lax.dynamic_update_index_in_dim(buf, recs, b, 0)

        zero = jnp.array(0, jnp.int32)
        st0, _, k0, f0, c0 = start_carry(state)
        carry0 = (st0, jnp.asarray(alive, bool), k0, f0, c0, zero, zero)
        # only the blocks that hold active nodes run (a short run in a large chunk costs its own
        # nodes, not the chunk's); the rest of the buffer stays zero and is not reported
        buf0 = jnp.zeros((n_blocks, block, width), dtype)
        active_blocks = jnp.minimum((n_active + block - 1) // block, n_blocks)
        (state, ok, k, fail_at, cause, it_sum, it_max), recs = lax.fori_loop(
            0, active_blocks, block_into, (carry0, buf0))
        return state, recs.reshape(n_blocks * block, width), ok, fail_at, cause, it_sum, it_max
    return run_chunk


def node_prefix(out0, batched: bool, members=None) -> dict:
    """The node arrays of node 0 (``out0``, a start function's outputs) with a node axis (after
    the member axis when ``batched``; only the first ``members`` members), as NumPy arrays."""
    keep_m = slice(None) if members is None else slice(0, members)
    return {k: (np.asarray(v)[keep_m][:, None] if batched else np.asarray(v)[None])
            for k, v in out0.items()}


class ChunkRun(NamedTuple):
    """What :func:`run_chunks` computed.

    arrays : node arrays (leading node axis; after the member axis when batched), from node 0.
    failures : {member: (step, cause)} of the first failed step of each member that failed
        (member 0 for a single run; cause a key of :data:`dalembert.solvers.newton.CAUSES`).
    it_total, it_max : Newton statistics of the steps taken.
    wall : wall time of the calls (s).
    state : the internal state after the last complete call.
    nodes_done : saved nodes after node 0 computed (the partial last node counts as one).
    interrupted : None, or the name of what stopped the run (``"SIGINT"``, ``"SIGTERM"``).
    checkpoint : the path of the last checkpoint written, or None.
    """

    arrays: dict
    failures: dict
    it_total: int
    it_max: int
    wall: float
    state: object
    nodes_done: int
    interrupted: str | None
    checkpoint: object


def run_chunks(chunk, layout, state, hj, nodes, n_steps, per_call, save_every, progress, md,
               batched, members=None, *, stop_on_failure=True, nodes_done=0, checkpoint=None,
               checkpoint_every=None, newton=(0, 0), stop=None) -> ChunkRun:
    """Drive the compiled chunks from ``nodes_done`` saved nodes to the end of an ``n_steps`` run
    (:func:`save_plan`: full nodes ``save_every`` steps apart, then a partial last node at
    t_final), at most ``per_call`` nodes per call (:func:`nodes_per_call`); ``layout`` unpacks
    the records. ``nodes``: where the nodes go (:class:`~dalembert.engine.stream.MemoryNodes`
    or, single runs, :class:`~dalembert.engine.stream.StreamNodes`), holding the ``nodes_done + 1``
    nodes so far (node axis as in the result).

    Failures: a single run (or an ensemble with ``stop_on_failure``) stops at the first failed
    step, keeping the nodes before it; otherwise a failed member keeps its last good state (its
    later nodes are NaN) while the others go on. ``members``: keep only the first ``members``
    of a batched run (the others pad the batch to a multiple of the device count).

    Interrupts (:mod:`~dalembert.engine.interrupts`): a ``KeyboardInterrupt`` during a call, or a
    signal deferred by :func:`~dalembert.engine.interrupts.deferred` after it, stops the run with
    the nodes of the complete calls. ``checkpoint(state, nodes_done, steps_done, nodes, newton,
    wall) -> path`` (single runs) is called every ``checkpoint_every`` seconds and when the run is
    interrupted.

    ``stop(node arrays of the call) -> bool`` (single runs): called after each call's nodes are
    kept; True ends the run there, as a complete one (a terminal event,
    :class:`dalembert.engine.dense.TerminalStop`).
    """
    from . import interrupts

    keep_m = slice(None) if members is None else slice(0, members)
    full, rem = save_plan(n_steps, save_every)
    total = full + (1 if rem else 0)

    def first(x, n):
        return x[keep_m, :n] if batched else x[:n]

    def mine(x):
        return np.asarray(x)[keep_m] if batched else np.asarray(x)

    t_run = t_ckpt = time.perf_counter()
    done, (it_total, it_max), failures, stopped, ckpt = nodes_done, newton, {}, None, None
    # which lanes (members, padding included) still step; a single run has one
    alive = np.ones(jax.tree_util.tree_leaves(state)[0].shape[0], bool) if batched else np.array(True)
    bar = ProgressBar(progress, total, md)
    try:
        while done < total:
            n_active, n_sub = (min(per_call, full - done), save_every) if done < full else (1, rem)
            try:
                # NumPy scalars and arrays: the compiled call takes them as they are (a jnp
                # array of a Python int is an eager dispatch each)
                new_state, outs, ok, fail_at, cause, it_sum, it_mx = chunk(
                    state, hj, np.int32(n_active), np.int32(n_sub), alive)
                outs = np.asarray(outs)
            except KeyboardInterrupt:
                stopped = "SIGINT"
                break
            # the state, the nodes and the counts advance together, after the nodes are appended: an
            # interrupt while they are (a KeyboardInterrupt in the API) checkpoints the previous chunk's
            if batched:
                ok_all, fail_all, cause_all = (np.atleast_1d(np.asarray(x)) for x in (ok, fail_at, cause))
                its = (it_total + int(np.sum(mine(it_sum))), max(it_max, int(np.max(mine(it_mx)))))
                newly = np.flatnonzero(alive & ~ok_all)
            else:              # scalars: Python's int/bool (NumPy's reductions cost µs each)
                ok_all, fail_all, cause_all = [bool(ok)], [int(fail_at)], [int(cause)]
                its = (it_total + int(it_sum), max(it_max, int(it_mx)))
                newly = [0] if bool(alive) and not ok_all[0] else []
            for i in newly:
                if members is None or i < members:
                    failures[int(i)] = (done * save_every + int(fail_all[i]), int(cause_all[i]))
            if batched:
                alive = alive & ok_all
            if failures and (stop_on_failure or not batched):
                i = min(failures, key=lambda m: failures[m][0])
                keep_rows = (failures[i][0] - done * save_every) // save_every if done < full else 0
                nodes.append_records(first(outs, keep_rows), layout)
                state, done, (it_total, it_max) = new_state, done + keep_rows, its
                break
            nodes.append_records(first(outs, n_active), layout)
            state, done, (it_total, it_max) = new_state, done + n_active, its
            bar.update(done, time.perf_counter() - t_run)
            if batched and not np.any(alive[keep_m]):
                break
            if stop is not None and stop(layout.unpack(first(outs, n_active))):
                break
            stopped = interrupts.requested()
            if stopped:
                break
            if checkpoint is not None and checkpoint_every is not None and \
                    time.perf_counter() - t_ckpt >= checkpoint_every:
                ckpt = checkpoint(state, done, steps_done(done, n_steps, save_every), nodes,
                                  (it_total, it_max), time.perf_counter() - t_run)
                t_ckpt = time.perf_counter()
    except KeyboardInterrupt:          # between calls (e.g. while unpacking or checkpointing)
        stopped = "SIGINT"
    finally:
        bar.close()
    if stopped and checkpoint is not None:
        ckpt = checkpoint(state, done, steps_done(done, n_steps, save_every), nodes,
                          (it_total, it_max), time.perf_counter() - t_run)
    arrays = nodes.arrays()
    if batched and failures and not stop_on_failure:
        _blank_after_failures(arrays, failures, n_steps, save_every)
    return ChunkRun(arrays, failures, it_total, it_max, time.perf_counter() - t_run, state, done,
                    stopped, ckpt)


def steps_done(nodes_done: int, n_steps: int, save_every: int) -> int:
    """Steps taken when ``nodes_done`` saved nodes (after node 0) of an ``n_steps`` run are done
    (the partial last node, :func:`save_plan`, ends at n_steps)."""
    return min(nodes_done * save_every, n_steps)


def _blank_after_failures(arrays, failures, n_steps, save_every):
    """NaN in the nodes of failed members after their failure (they hold the last good state,
    which is not the trajectory); integer arrays (counters) are left as they are."""
    n_nodes = next(iter(arrays.values())).shape[1]
    steps = np.round(node_times(1.0, n_steps, save_every, n_nodes)).astype(np.int64)
    for i, (k, _) in failures.items():
        bad = steps > k
        for a in arrays.values():
            if a.dtype.kind in "fc":
                a[i, bad] = np.nan
