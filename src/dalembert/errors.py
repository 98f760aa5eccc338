"""Exceptions raised by dalembert.

Every error the library raises on purpose derives from :class:`DalembertError`, so a caller (and
the command line) can tell a problem with the input or the numerics from a bug.
"""
from __future__ import annotations


class DalembertError(Exception):
    """Base class of every error dalembert raises on purpose."""


class InputError(DalembertError, ValueError):
    """Bad input: wrong shapes, non-finite numbers, h <= 0, inconsistent initial data..."""


class SystemDefinitionError(InputError):
    """A user callable of a system returned something unusable (shape, symmetry, rank...), or
    could not be traced by JAX. When the cause is JAX's error for NumPy (or a Python ``if``) on a
    traced value, the message is one line with what to write instead (:func:`tracing_hint`)."""

    def __str__(self):
        text = super().__str__()
        hint = tracing_hint(self.__cause__)
        return text if hint is None else f"{text.splitlines()[0].rstrip()}; {hint}"


#: JAX's errors for a traced value used as a concrete one, and what to write instead.
_TRACING_HINTS = {
    "TracerArrayConversionError": "the system's functions are traced by JAX: write them with jax.numpy "
                                  "(import jax.numpy as jnp; jnp.sin(q[0]), not np.sin(q[0]))",
    "ConcretizationTypeError": "the system's functions are traced by JAX: a Python if, bool(), int() or "
                               "float() cannot read a value that depends on the state; use jnp.where or "
                               "jax.lax.cond",
    "TracerBoolConversionError": "the system's functions are traced by JAX: a Python if or bool() cannot "
                                 "read a value that depends on the state; use jnp.where or jax.lax.cond",
    "TracerIntegerConversionError": "the system's functions are traced by JAX: int() or an index cannot read "
                                    "a value that depends on the state; use jnp.where or jax.lax.cond",
}


def tracing_hint(exc) -> str | None:
    """What to write instead, for JAX's error ``exc`` about a traced value used as a concrete one
    (NumPy's np.sin on a tracer, a Python ``if`` on one); None for any other exception."""
    if exc is None or not type(exc).__module__.startswith("jax"):
        return None
    for cls in type(exc).__mro__:
        if cls.__name__ in _TRACING_HINTS:
            return _TRACING_HINTS[cls.__name__]
    return None


def __getattr__(name):
    """``SystemError_``: the deprecated name of :class:`SystemDefinitionError` (a
    DeprecationWarning outside dalembert)."""
    if name == "SystemError_":
        import sys
        import warnings
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if not caller.startswith("dalembert."):
            warnings.warn("dalembert.errors.SystemError_ is deprecated: use SystemDefinitionError (the same "
                          "class)", DeprecationWarning, stacklevel=2)
        return SystemDefinitionError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
