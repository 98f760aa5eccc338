"""SIGTERM outside a run's chunks, for the command line only: one line on stderr saying what the
process was doing and what was kept, and exit status 143 (128 + 15), instead of a silent −15.

A run's chunks have their own handling (:func:`dalembert.engine.interrupts.deferred`: the chunk
finishes, the partial result and the checkpoint are written); this covers the rest — importing
dalembert and JAX, building the model, compiling, writing the results. :func:`install` is called
by ``dalembert/__init__`` when the process is the ``dalembert`` command (so that the import is
covered too) and by :func:`dalembert.cli.main`; a library user's process is never touched.
"""
from __future__ import annotations

import os
import signal
import sys
import threading

#: What the command is doing and what a SIGTERM now leaves behind (:func:`phase`).
PHASE = {"doing": "starting (importing dalembert and JAX)", "kept": "nothing was written"}


def is_cli_process() -> bool:
    """Whether this process is the ``dalembert`` command (the console script, or
    ``python -m dalembert.cli``)."""
    argv0 = os.path.basename(sys.argv[0]) if sys.argv else ""
    if argv0 in ("dalembert", "dalembert.exe"):
        return True
    orig = list(getattr(sys, "orig_argv", []))
    return "-m" in orig[:-1] and orig[orig.index("-m") + 1] == "dalembert.cli"


def phase(doing: str, kept: str = "nothing was written"):
    """Record what the command is doing now and what a SIGTERM would leave."""
    PHASE.update(doing=doing, kept=kept)


def _handler(signum, frame):
    try:
        sys.stderr.write(f"dalembert: terminated (SIGTERM) while {PHASE['doing']}; {PHASE['kept']}\n")
        sys.stderr.flush()
    except Exception:                    # noqa: BLE001 - exit whatever stderr is
        pass
    if PHASE["kept"] == "nothing was written":
        # nothing to clean up: leave now. (A SystemExit raised while the interpreter runs a
        # garbage-collection callback — JAX registers one — is printed and ignored, and the process
        # went on to exit 0: seen while importing.)
        os._exit(143)
    raise SystemExit(143)                # (finally blocks run: temporary files are removed)


def install():
    """Handle SIGTERM as above (main thread only; idempotent)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _handler)
