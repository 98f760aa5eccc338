"""Output at chosen times (``save_at``) and events (``events``) of a fixed-step run.

The steps stay fixed (a structure-preserving method is a map with a fixed step; choose h by a
convergence study, docs/guide/methods.md). The run keeps every node, then:

* **Dense output.** A node array y at a time τ is the Lagrange interpolant through the p + 1
  nodes nearest τ (p the method's declared order; at least 3, at most 8): the interpolation error
  is O(h^{p+1}), below the nodes' own O(h^p), so the interpolated state keeps the method's order.
  Interpolated are the state arrays of the system kind (q, v; x; …) and the multipliers; the
  diagnostics (energy, constraint residuals) are evaluated again at the interpolated state, so
  they say how far the interpolant is from the constraints (it is on them only to O(h^{p+1})).
  Vector-valued states only (a group element R ∈ SO(3) is not interpolated: those kinds refuse).
* **Events** ``g(t, q, v) -> scalar`` (traceable; for other kinds the arguments are t and the
  state arrays in ``system.state_names`` order), as in SciPy's ``solve_ivp``: the attribute
  ``terminal`` (bool, default False) stops the run at the first such event, ``direction``
  (> 0: rising, < 0: falling, 0: both) filters the crossings. A sign change of g between two
  nodes is located on the interpolant by Brent's method to round-off (xtol = 4ε|t|); the
  result's ``traj.events`` lists, per event function, the times and the states there. A
  terminal event ends the trajectory at the event (its last node is the interpolated state
  there); a step that fails after a terminal event (a bicycle that has fallen) is not an error.
  A run with a terminal event also stops stepping soon after it (:class:`TerminalStop`): it is
  driven in pieces of about 1/:data:`STOP_PIECES` of its steps and ends after the first piece
  that shows the crossing (and the nodes the interpolant reads beyond it), so that its event
  times and states are those of the whole run; ``metadata["steps_taken"]`` counts the steps.

Source of the event semantics: SciPy ``solve_ivp`` (``events``, ``terminal``, ``direction``);
Hairer–Nørsett–Wanner, Solving ODEs I, §II.6 (dense output of fixed-step methods).
"""
from __future__ import annotations

import contextvars
import math

import jax
import jax.numpy as jnp
import numpy as np

from .._cache import cached
from ..errors import ConvergenceError, InputError
from ..results.trajectory import trajectory
from . import loop

#: the degree of the interpolant is the method's order, clipped to this range
MIN_DEGREE, MAX_DEGREE = 3, 8

#: a run with a terminal event is driven in about this many compiled calls (of at least
#: :data:`MIN_STOP_STEPS` steps each), so that it ends within 1/STOP_PIECES of its length after
#: the event (the calls run one compiled program: their size is an argument of it)
STOP_PIECES, MIN_STOP_STEPS = 32, 256

_STOP: contextvars.ContextVar = contextvars.ContextVar("dalembert_terminal_stop", default=None)


def terminal_stop():
    """The :class:`TerminalStop` of the run that :func:`integrate_dense` starts (None for any
    other run)."""
    return _STOP.get()


def crossings(vals, direction: float) -> np.ndarray:
    """(N − 1,) bool: g changes sign between nodes j and j + 1 (a zero at node j + 1 counts, at
    node j not), filtered by ``direction`` (> 0 rising, < 0 falling, 0 both); ``vals`` (N,)."""
    sa, sb = vals[:-1], vals[1:]
    cross = ((sa < 0) & (sb >= 0)) | ((sa > 0) & (sb <= 0))
    if direction > 0:
        cross &= sb > sa
    elif direction < 0:
        cross &= sb < sa
    return cross


class TerminalStop:
    """Ends a run (``stop`` of :func:`dalembert.engine.loop.run_chunks`) after the compiled call
    whose nodes show the first crossing of a terminal event (:func:`crossings`), once the
    :attr:`MARGIN` nodes after it are computed too: the interpolant's stencil around the crossing
    (at most :data:`MAX_DEGREE` + 1 nodes) is then the whole run's, and so are the event's time
    and state that :func:`_locate` finds. ``events``: the terminal event functions; ``names``:
    the node arrays of the state."""

    MARGIN = MAX_DEGREE + 2

    def __init__(self, events, names):
        self.events = [(cached(g, "vmapped event", lambda g=g: jax.jit(jax.vmap(g))), float(getattr(g, "direction", 0)))
                       for g in events]
        self.names = names

    def begin(self, nodes: dict, nodes_done: int, t0: float, h: float, n_steps: int, per_call: int) -> int:
        """Start from the run's node arrays so far (node 0, or a resumed run's nodes;
        ``nodes_done`` after node 0); returns the nodes per compiled call to use (at most
        ``per_call``)."""
        self.last = None if any(k not in nodes for k in self.names) else \
            [np.asarray(nodes[k])[-1:] for k in self.names]
        self.count, self.until = nodes_done + 1, None
        self.t0, self.h, self.n_steps = t0, h, n_steps
        return max(1, min(per_call, max(MIN_STOP_STEPS, -(-n_steps // STOP_PIECES))))

    def __call__(self, chunk: dict) -> bool:
        """After a call: its node arrays (a single run's, every step); True: end the run."""
        n = np.shape(chunk[self.names[0]])[0] if self.names[0] in chunk else 0
        if self.until is None and self.last is not None and n:
            X = [np.concatenate([last, np.asarray(chunk[k])]) for last, k in zip(self.last, self.names)]
            t = self.t0 + loop.node_times(self.h, self.n_steps, 1, self.count + n, self.count - 1)
            for g, direction in self.events:
                vals = np.asarray(g(jnp.asarray(t), *[jnp.asarray(x) for x in X]), float)
                if vals.shape != t.shape:            # (refused by _locate, after the run)
                    continue
                hit = np.flatnonzero(crossings(vals, direction))
                if hit.size:                         # interval (j, j + 1) of the whole run
                    j = self.count - 1 + int(hit[0]) + self.MARGIN
                    self.until = j if self.until is None else min(self.until, j)
            self.last = [x[-1:] for x in X]
        self.count += n
        return self.until is not None and self.count - 1 >= self.until


def check_save_at(save_at, t0: float, t_final: float) -> np.ndarray:
    """``save_at`` as a sorted float64 array (k,) within [t0, t_final] (InputError otherwise)."""
    try:
        ts = np.asarray(save_at, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise InputError(f"save_at must be an array of times; got {save_at!r}") from None
    if ts.size == 0 or not np.all(np.isfinite(ts)):
        raise InputError("save_at must hold at least one finite time")
    if np.any(np.diff(ts) <= 0):
        raise InputError("save_at must be strictly increasing")
    slack = 1e-12 * max(1.0, abs(t_final), abs(t0))
    if ts[0] < t0 - slack or ts[-1] > t_final + slack:
        raise InputError(f"save_at must lie within [t0, t_final] = [{t0:g}, {t_final:g}]; got "
                         f"[{ts[0]:g}, {ts[-1]:g}]")
    return np.clip(ts, t0, t_final)


def check_events(events) -> list:
    """``events`` as a list of callables (InputError otherwise)."""
    if events is None:
        return []
    if callable(events):
        events = [events]
    events = list(events)
    for i, g in enumerate(events):
        if not callable(g):
            raise InputError(f"events[{i}] must be a callable g(t, q, v) -> scalar; got {type(g).__name__}")
        d = getattr(g, "direction", 0)
        if not isinstance(d, (int, float)) or not math.isfinite(d):
            raise InputError(f"events[{i}].direction must be a number (> 0 rising, < 0 falling, 0 both); got {d!r}")
    return events


def _state_arrays(system):
    """The names of the node arrays that make the state (q, v for a NonholonomicSystem)."""
    return tuple(type(system).state_array(k) for k in system.state_names)


def interpolate(t_nodes, y_nodes, ts, degree: int) -> np.ndarray:
    """The Lagrange interpolant through the ``degree`` + 1 nodes nearest each time.

    t_nodes : (N,) increasing node times; y_nodes : (N, ...) node values; ts : (k,) times within
    [t_nodes[0], t_nodes[-1]]. Returns (k, ...). The stencil is centred on the interval holding
    the time (shifted at the ends); nodes need not be equally spaced (a run's last partial node).
    """
    t_nodes, y_nodes, ts = np.asarray(t_nodes, float), np.asarray(y_nodes, float), np.asarray(ts, float)
    N = t_nodes.size
    d = int(min(degree, N - 1))
    i = np.clip(np.searchsorted(t_nodes, ts, side="right") - 1, 0, N - 2)
    start = np.clip(i - (d - 1) // 2, 0, N - 1 - d)
    idx = start[:, None] + np.arange(d + 1)[None, :]                # (k, d+1)
    tn = t_nodes[idx]
    scale = np.maximum(tn[:, -1] - tn[:, 0], 1e-300)[:, None]
    x = (tn - tn[:, :1]) / scale                                     # local coordinates in [0, 1]
    s = ((ts[:, None] - tn[:, :1]) / scale)
    w = np.ones_like(x)
    for j in range(d + 1):
        for m in range(d + 1):
            if m != j:
                w[:, j] *= (s[:, 0] - x[:, m]) / (x[:, j] - x[:, m])
    return np.einsum("kj,kj...->k...", w, y_nodes[idx])


def integrate_dense(integrate, system, method, *, h, t_final, t0, save_every, save_at, events, progress,
                    **run_kw):
    """``dl.integrate`` with ``save_at`` and/or ``events`` (see the module doc); ``integrate`` is
    :func:`dalembert.engine.run.integrate` (passed in: this module does not import it back)."""
    from ..methods.kinds import choose
    if run_kw.get("stream") is not None:     # the file would hold every node, the result other times
        raise InputError("save_at and events keep the nodes in memory (they are interpolated): drop stream=")
    ts = None if save_at is None else check_save_at(save_at, t0, float(t_final))
    events = check_events(events)
    names = _state_arrays(system)
    terminal = [g for g in events if getattr(g, "terminal", False)]
    token = _STOP.set(TerminalStop(terminal, names) if terminal else None)
    try:
        traj = integrate(system, method, h=h, t_final=t_final, t0=t0, save_every=1, progress=progress,
                         **run_kw)
        failure = None
    except ConvergenceError as exc:
        if not events or exc.trajectory is None:
            raise
        traj, failure = exc.trajectory, exc
    finally:
        _STOP.reset(token)
    arrays = {k: getattr(traj, k, None) for k in names}
    for k, a in arrays.items():
        if a is None or np.ndim(a) != 2:
            raise InputError(f"save_at and events interpolate vector states; {getattr(system, 'name', 'this system')!r} "
                             f"has {k} of shape {None if a is None else a.shape}: use the nodes (save_every)")
    order = int(choose(system, traj.metadata["method"]).traits.order)
    degree = int(np.clip(order, MIN_DEGREE, MAX_DEGREE))
    t = np.asarray(traj.t)
    found, t_end = _locate(system, events, t, arrays, degree, names)
    if failure is not None and t_end is None:
        raise failure
    md = dict(traj.metadata)
    md["events"] = found
    md["dense_output_degree"] = degree
    md["steps_taken"] = int(t.size - 1)
    if t_end is not None:
        md["terminated_at"] = t_end
        md.pop("failed", None)
    if ts is None:                         # the nodes (every save_every-th), ending at a terminal event
        keep = np.arange(0, t.size, save_every)
        if keep[-1] != t.size - 1:
            keep = np.append(keep, t.size - 1)
        if t_end is not None:
            keep = keep[t[keep] < t_end]
            out_t = np.append(t[keep], t_end)
        else:
            out_t = t[keep]
        md["save_every"] = int(save_every)
    else:
        out_t = ts if t_end is None else np.append(ts[ts < t_end], t_end)
        md["save_at"] = ts.tolist()
    return _at_times(system, traj, t, out_t, degree, names, md)


def _at_times(system, traj, t, out_t, degree, names, md):
    """The trajectory at ``out_t``: the state and multiplier interpolated (nodes themselves where a
    time is a node), the diagnostics evaluated at the interpolated states."""
    on_node = np.isin(out_t, t)
    node_idx = np.searchsorted(t, out_t)

    def at(a):                             # interpolated, and the exact node value at a node's time
        a = np.asarray(a)
        y = interpolate(t, a, out_t, degree)
        y[on_node] = a[node_idx[on_node]]
        return y
    out = {k: at(getattr(traj, k)) for k in names}
    for k in ("p", "lam"):
        a = getattr(traj, k, None)
        if a is not None and np.ndim(a) == 2:
            out[k] = at(a)
    work = traj.extra.get("work")          # a forced run's work (N+1,): interpolated like the state
    if work is not None:
        out["work"] = at(work)
    obs = {k: jnp.asarray(v) for k, v in out.items()}
    diag = jax.jit(jax.vmap(system.diagnostics))(obs)
    out.update({k: np.asarray(v) for k, v in diag.items() if k not in out})
    return trajectory(np.asarray(out_t, float), out, md)


def _locate(system, events, t, arrays, degree, names):
    """([{name, t, state…, terminal}], time of the first terminal event or None)."""
    if not events:
        return [], None
    from scipy.optimize import brentq
    X = [arrays[k] for k in names]
    found, t_end = [], None
    for i, g in enumerate(events):
        gj = jax.jit(g)
        vals = np.asarray(jax.vmap(gj)(jnp.asarray(t), *[jnp.asarray(x) for x in X]), float)
        if vals.shape != t.shape:
            raise InputError(f"events[{i}] must return a scalar; it returns shape {vals.shape[1:]}")
        sb = vals[1:]
        times = []
        for j in np.flatnonzero(crossings(vals, float(getattr(g, "direction", 0)))):
            if sb[j] == 0.0:
                times.append(float(t[j + 1]))
                continue

            def f(tau, j=j):
                st = [interpolate(t, x, np.array([tau]), degree)[0] for x in X]
                return float(gj(tau, *[jnp.asarray(s) for s in st]))
            times.append(float(brentq(f, t[j], t[j + 1], xtol=4 * np.finfo(float).eps * max(1.0, abs(t[j + 1])),
                                      rtol=4 * np.finfo(float).eps)))
        terminal = bool(getattr(g, "terminal", False))
        if terminal and times:
            times = times[:1]
            t_end = times[0] if t_end is None else min(t_end, times[0])
        rec = {"name": getattr(g, "__name__", f"event{i}"), "terminal": terminal, "t": times}
        for k, x in zip(names, X):
            rec[k] = (interpolate(t, x, np.array(times), degree).tolist() if times else [])
        found.append(rec)
    if t_end is not None:                  # events after the terminal one did not happen
        for rec in found:
            keep = [j for j, tau in enumerate(rec["t"]) if tau <= t_end]
            rec["t"] = [rec["t"][j] for j in keep]
            for k in names:
                rec[k] = [rec[k][j] for j in keep]
    return found, t_end
