"""The compiled time loop: one chunk of saved nodes as a pure function, and the driver that runs
chunks until a run is done or a step fails.

A run is split into chunks of ``chunk_saves`` saved nodes (``save_every`` steps each). A chunk
is one ahead-of-time compiled function — loops over blocks of saved nodes, over the nodes of a
block and over the ``save_every`` steps of a node (see :func:`make_chunk` for why three) — so no
Python statement runs per step, memory stays bounded and a progress bar can move between chunks.
The number of active nodes and the steps per node are runtime arguments: one compiled chunk
serves every run length and every ``save_every`` of a (system, method, options).

Failures: a step whose Newton solve does not converge, or whose new state is not finite, freezes
the state (node outputs such as the energy are checked too, at the saved nodes: a non-finite one
fails the last step before that node); the driver reports the first failed step.
"""
from __future__ import annotations

import math
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..errors import InputError
from ..solvers import newton_module as newton_mod
from .progress import ProgressBar

#: Target number of steps per compiled chunk.
CHUNK_STEPS = 65536
#: Largest number of member-steps (members × steps) of one compiled ensemble chunk. Measured
#: (issue 3, si-dla, B = 200, two CPU devices): chunks of CHUNK_STEPS / B = 327 steps cost 0.15
#: µs per member-step, chunks of this size 0.10 (the time between chunks is not overlapped).
ENSEMBLE_CHUNK_MEMBER_STEPS = 1 << 22
#: Saved nodes per compiled chunk of a single run: every run length and save_every shares the
#: one program (a call runs at most CHUNK_STEPS steps; the nodes past those are padding, which
#: takes no step).
CHUNK_SAVES = 16384

def step_count(h: float, t_final: float, save_every: int) -> int:
    """Number of steps: ceil(t_final / h) (to 1e-9 relative), rounded up to a multiple of save_every."""
    n = max(1, math.ceil(t_final / h - 1e-9))
    return save_every * math.ceil(n / save_every)


def ensemble_chunk_saves(members: int, chunk_steps: int) -> int:
    """Saved nodes per compiled chunk of an ensemble of ``members``: at most ``chunk_steps``
    records in all (``members`` per node) and :data:`ENSEMBLE_CHUNK_MEMBER_STEPS` member-steps.
    Independent of the run length and of save_every (one program serves them all)."""
    return max(1, min(ENSEMBLE_CHUNK_MEMBER_STEPS, chunk_steps) // members)


def nodes_per_call(chunk_saves: int, save_every: int, step_budget: int) -> int:
    """Active nodes per call of a chunk: at most ``chunk_saves`` and about ``step_budget`` steps
    (so that a run with a large save_every still reports progress), at least one."""
    return max(1, min(chunk_saves, step_budget // save_every))


def _as_dict(obs) -> dict:
    """A method's observation (a dict, or a NamedTuple such as Observation) as a dict without
    the entries that are None."""
    d = dict(obs) if isinstance(obs, dict) else obs._asdict()
    return {k: v for k, v in d.items() if v is not None}


def node_outputs(system, obs):
    """The arrays kept at a node: the method's observation plus the system's diagnostics
    (energy, constraint_residual, ...; the system-kind protocol, see :func:`integrate`)."""
    d = _as_dict(obs)
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


def guarded_step(scheme):
    """``step((state, ok, k, fail_at, cause), h) -> (state, ok, k + 1, fail_at, cause)``: one step
    of the scheme that keeps the last good state once a step fails (Newton did not converge, or
    the new state is not finite); ``fail_at`` is the index k of the first failed step (−1 if
    none) and ``cause`` why it failed (:func:`step_cause`; 0 if none).
    ``with_info=True`` also returns the step's StepInfo. The one step function of every loop."""
    def step(carry, h, with_info=False):
        st, ok, k, fail_at, cause = carry
        new, info = scheme.step(st, h)
        finite = all_finite(new)
        good = info.converged & finite
        take = ok & good
        first = ok & ~good
        st = jax.tree_util.tree_map(lambda a, b: jnp.where(take, a, b), new, st)
        out = (st, take, k + 1, jnp.where(first, k, fail_at),
               jnp.where(first, step_cause(info, finite), cause))
        return (out, info) if with_info else out
    return step


def start_carry(state):
    """The carry of :func:`guarded_step` before the first step."""
    return (state, jnp.array(True), jnp.array(0, jnp.int32), jnp.array(-1, jnp.int32),
            jnp.array(0, jnp.int32))


def check_outputs(carry, outs):
    """A finite state whose node outputs are not (e.g. V = NaN where ∇V is finite) fails at the
    step that produced it: the carry with that failure recorded."""
    st, ok, k, fail_at, cause = carry
    bad = ok & ~all_finite(outs)
    return (st, ok & ~bad, k, jnp.where(bad, k - 1, fail_at),
            jnp.where(bad, newton_mod.NON_FINITE, cause).astype(jnp.int32))


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

    def unpack(self, flat) -> dict:
        """Named arrays (views where possible) from records ``flat`` of shape (..., width)."""
        lead = flat.shape[:-1]
        res, i = {}, 0
        for k, shp, sz in zip(self.names, self.shapes, self.sizes):
            res[k] = flat[..., i:i + sz].reshape(lead + tuple(shp))
            i += sz
        return res


def make_chunk(system, scheme, chunk_saves: int, state, h, keep=None, members: bool = False,
               layout_out: list | None = None):
    """The compiled body of one chunk: ``chunk_saves`` saved nodes of ``n_sub`` steps each.

    ``members``: the body is vmapped over an ensemble's members. The steps of a node are then
    counted the same for every member (a member that failed keeps its last good state, as
    ``take`` below makes it), so that the vmapped step loop has a trip count shared by all
    members; counted per member, the loop became a ``while`` whose every step selects the whole
    carry under a per-member mask and reduces the masks across the members (spark-lobatto2,
    chaotic quartic, B = 200: 0.046 → 0.035 µs per member-step). A vmapped loop computes every
    member's step anyway, so the count saves nothing for a failed member there.

    ``run_chunk(state, h, n_active, n_sub) -> (state, records, ok, fail_at, it_sum, it_max)``:
    three nested loops — the ``n_sub`` (= save_every) steps of a node, the nodes of a *block*, the
    blocks of the chunk. The node outputs are computed per node (as the method's ``observe``
    defines them) and packed into one flat record; a block of records is kept in a buffer of at
    most :data:`BLOCK_BYTES` bytes, and only the outermost loop writes into the chunk-sized
    output ``records`` (≥ chunk_saves rows, flat: the caller unpacks the rows it keeps with the
    :class:`RecordLayout` appended to ``layout_out`` at trace time, on the host, as views).
    Only the blocks that hold active nodes (``j < n_active``) run.

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
    if layout_out is not None:
        layout_out.append(RecordLayout(tuple(names), tuple(tuple(x) for x in shapes), tuple(sizes)))
    width = sum(sizes)
    block = max(1, min(chunk_saves, BLOCK_BYTES // (width * jnp.dtype(dtype).itemsize)))
    n_blocks = -(-chunk_saves // block)

    def pack(outs):
        return jnp.concatenate([jnp.ravel(outs[k]).astype(dtype) for k in names])

    step = guarded_step(scheme)

    def run_chunk(state, h, n_active, n_sub):
        def inner(_, carry):
            *gc, it_sum, it_max = carry
            gc, info = step(tuple(gc), h, with_info=True)
            return (*gc, it_sum + info.iterations, jnp.maximum(it_max, info.iterations))

        def node(carry, j):
            st, ok, k, fail_at, cause, it_sum, it_max = carry
            active = ok & (j < n_active)
            # an inactive node (padding, or after a failure) takes no step at all in a single
            # run (with ok = False the steps would change nothing that is kept); an ensemble
            # counts its steps for every member (see ``members`` above)
            trips = jnp.where((j < n_active) if members else active, n_sub, 0)
            st2, ok2, k2, fail2, cause2, s2, m2 = lax.fori_loop(
                0, trips, inner, (st, active, k, fail_at, cause, it_sum, it_max))
            outs = node_outputs(system, scheme.observe(st2, h))
            # (ok2 is False unless the node was active: the output check applies to those only)
            st2, ok2, k2, fail2, cause2 = check_outputs((st2, ok2, k2, fail2, cause2), outs)
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
        carry0 = start_carry(state) + (zero, zero)
        # only the blocks that hold active nodes run (a short run in a large chunk costs its own
        # nodes, not the chunk's); the rest of the buffer stays zero and is not reported
        buf0 = jnp.zeros((n_blocks, block, width), dtype)
        active_blocks = jnp.minimum((n_active + block - 1) // block, n_blocks)
        (state, ok, k, fail_at, cause, it_sum, it_max), recs = lax.fori_loop(
            0, active_blocks, block_into, (carry0, buf0))
        return state, recs.reshape(n_blocks * block, width), ok, fail_at, cause, it_sum, it_max
    return run_chunk


def run_chunks(chunk, layout, state, hj, out0, n_saves, per_call, save_every, progress, md, batched,
               members=None):
    """Drive the compiled chunks until n_saves nodes are done or a step fails; each call runs at
    most ``per_call`` nodes (:func:`nodes_per_call`); ``layout`` unpacks the records it keeps.

    Returns (arrays, failure, it_total, it_max, wall, state): the node arrays (leading node axis,
    after the member axis when ``batched``), None or (member, step, cause) of the first failure
    (member 0 for a single run; cause a key of :data:`dalembert.solvers.newton.CAUSES`),
    Newton statistics, the wall time and the last internal state.
    ``members``: keep only the first ``members`` members of a batched run (the others pad the
    batch to a multiple of the device count).
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
    bar = ProgressBar(progress, n_saves, md)
    try:
        while done < n_saves:
            n_active = min(per_call, n_saves - done)
            state, outs, ok, fail_at, cause, it_sum, it_mx = chunk(
                state, hj, jnp.array(n_active, jnp.int32), jnp.array(save_every, jnp.int32))
            outs = np.asarray(outs)
            ok, fail_at = np.atleast_1d(mine(ok)), np.atleast_1d(mine(fail_at))
            cause = np.atleast_1d(mine(cause))
            it_total += int(np.sum(mine(it_sum)))
            it_max = max(it_max, int(np.max(mine(it_mx))))
            if not ok.all():
                i = int(np.argmin(ok))
                failure = (i, done * save_every + int(fail_at[i]), int(cause[i]))
                pieces.append(layout.unpack(first(outs, int(fail_at[i]) // save_every)))
                break
            pieces.append(layout.unpack(first(outs, n_active)))
            done += n_active
            bar.update(done, time.perf_counter() - t_run)
    finally:
        bar.close()
    arrays = {k: np.concatenate([p_[k] for p_ in pieces], axis=ax) for k in pieces[0]}
    return arrays, failure, it_total, it_max, time.perf_counter() - t_run, state
