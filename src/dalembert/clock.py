"""The engine's clock: the time and step index at which a system's time-dependent functions are
evaluated while a step is traced.

A step function takes (state, h) only; a system with explicit time or controls (a force
f(q, v, t, u)) reads the time of the current step from here. The engine sets it
(:func:`at`) around each traced step — its values are traced arrays of the enclosing program
(t_k and k, carried in the loop's state) — and a method that evaluates a force inside the step
passes the offset of its quadrature node (``dt``: 0 at t_k, h at t_{k+1}, c_i·h at a stage).
A composition moves the clock on between its stages (:func:`shifted`). Outside the engine (an
initial-state check, a fingerprint) the clock reads t = 0, k = 0.

The engine's compiled programs of a single run also take the run's (N, c) control array as an
argument (:func:`controls_given`): a system whose control array is such an argument
(:class:`~dalembert.systems.torque.ControlledForce`) reads it from here, so that a new array of
the same shape runs the same compiled program.

This module imports nothing of dalembert: systems and methods both read it.
"""
from __future__ import annotations

import contextvars
from contextlib import contextmanager

#: The key under which a clocked scheme's observation carries its node's (t, k), for the
#: diagnostics of a system with explicit time (energy with V(q, t), residual with ν(q, t)),
#: removed by the engine (:func:`dalembert.engine.loop.node_outputs`) before the node is kept.
NODE_CLOCK = "_clock"

_NOW: contextvars.ContextVar = contextvars.ContextVar("dalembert_clock", default=None)
_CONTROLS: contextvars.ContextVar = contextvars.ContextVar("dalembert_controls", default=None)


def now():
    """(t, k): the time of the current step's start and its index (traced or plain numbers)."""
    value = _NOW.get()
    return (0.0, 0) if value is None else value


def running() -> bool:
    """Whether the enclosing code runs on the clock (inside :func:`at`)."""
    return _NOW.get() is not None


@contextmanager
def at(t, k):
    """Evaluate the enclosed code (a traced step) at time t, step index k."""
    token = _NOW.set((t, k))
    try:
        yield
    finally:
        _NOW.reset(token)


@contextmanager
def shifted(dt):
    """The clock moved on by dt within the enclosed code (a stage of a composition); the step
    index stays (a control is held over the whole step)."""
    t, k = now()
    with at(t + dt, k):
        yield


def controls():
    """The run's (N, c) control array given to the enclosing program (:func:`controls_given`;
    a traced array inside the program), or None outside one."""
    return _CONTROLS.get()


@contextmanager
def controls_given(u_: tuple):
    """Trace the enclosed code with the run's control array ``u_[0]`` (``u_`` = (U,)); no
    array for ``u_`` = ()."""
    if not u_:
        yield
        return
    token = _CONTROLS.set(u_[0])
    try:
        yield
    finally:
        _CONTROLS.reset(token)
