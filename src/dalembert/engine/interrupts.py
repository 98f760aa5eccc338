"""Interrupts of long runs: a run stops between compiled chunks, never inside one, and keeps
what it computed.

In the API, Python's own SIGINT handler raises ``KeyboardInterrupt`` wherever the interpreter is
(usually while a compiled chunk runs, whose result is then dropped: the run keeps the state and
the nodes of the last complete chunk); the driver turns it into :class:`RunInterrupted`, which
*is* a ``KeyboardInterrupt`` and carries the partial trajectory and the checkpoint written (if
the run writes one). With :func:`deferred` (what ``dalembert run`` uses), SIGINT and SIGTERM only
set a flag: the current chunk finishes, then the driver stops the same way.
"""
from __future__ import annotations

import contextlib
import signal
import threading

_requested: list = []


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by an interrupt (SIGINT, SIGTERM). ``trajectory``: the nodes computed
    before it (a Trajectory or an Ensemble, or None); ``checkpoint``: the checkpoint written
    (a path, or None); ``signal``: the signal's name; ``step``: the steps completed."""

    def __init__(self, message, *, trajectory=None, checkpoint=None, signal_name="SIGINT", step=0):
        super().__init__(message)
        self.trajectory = trajectory
        self.checkpoint = checkpoint
        self.signal = signal_name
        self.step = step


def requested() -> str | None:
    """The name of the signal received under :func:`deferred`, or None."""
    return _requested[0] if _requested else None


@contextlib.contextmanager
def deferred(signals=("SIGINT", "SIGTERM")):
    """Within the block, the given signals set a flag that the run driver checks after each
    compiled chunk instead of stopping the process at once. A second SIGINT stops at once
    (``KeyboardInterrupt``). Only in the main thread; elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {}

    def handler(signum, frame):
        name = signal.Signals(signum).name
        if _requested and name == "SIGINT":
            raise KeyboardInterrupt
        if not _requested:
            _requested.append(name)

    _requested.clear()
    for name in signals:
        sig = getattr(signal, name)
        old[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
        _requested.clear()
