"""Exceptions raised by dalembert.

Every error the library raises on purpose derives from :class:`DalembertError`, so a caller (and
the command line) can tell a problem with the input or the numerics from a bug.
"""
from __future__ import annotations


class DalembertError(Exception):
    """Base class of every error dalembert raises on purpose."""


class InputError(DalembertError, ValueError):
    """Bad input: wrong shapes, non-finite numbers, h <= 0, inconsistent initial data..."""


class SystemError_(InputError):
    """A user callable of a system returned something unusable (shape, symmetry, rank...)."""


class ConstraintViolationError(InputError):
    """Initial velocities violate the constraints by more than the tolerance.

    Attributes
    ----------
    residual : numpy.ndarray, shape (m,)
        mu(q0) v0 - nu(q0).
    """

    def __init__(self, message, residual):
        super().__init__(message)
        self.residual = residual


class UnknownNameError(DalembertError, KeyError):
    """An unknown model, method, experiment or parameter name."""

    def __str__(self):  # KeyError quotes its message; we want it plain
        return str(self.args[0]) if self.args else ""


def did_you_mean(name, choices) -> str:
    """" (did you mean 'x'?)" for the closest of ``choices`` to a mistyped ``name``, or ""."""
    import difflib
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class ConvergenceError(DalembertError, RuntimeError):
    """A step of an implicit method did not converge (or produced non-finite numbers).

    Attributes
    ----------
    step : int
        Index k of the failing step (the step from t_k to t_{k+1}).
    time : float
        t_k.
    trajectory : dalembert.Trajectory or None
        Everything computed before the failing step (nodes t_0 .. t_k at the save stride).
    cause : int or None
        Why (a key of ``dalembert.solvers.newton.CAUSES``: tolerance not reachable, divergence,
        non-finite value, chart degeneracy, too few iterations).
    """

    def __init__(self, message, step, time, trajectory=None, cause=None):
        super().__init__(message)
        self.cause = cause
        self.step = step
        self.time = time
        self.trajectory = trajectory
