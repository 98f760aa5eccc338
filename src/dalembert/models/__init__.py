"""The model zoo: ``available()``, ``get(name, **params)``.

Each model module gives parameters with defaults, a constraint-consistent default initial state,
invariants, the exact solution where one is known, and its source.
"""
from .base import Model, ModelSpec, Parameter, available, get, register, spec
from . import test_problems  # noqa: F401  (registers p1-linear, p2-affine)

__all__ = ["Model", "ModelSpec", "Parameter", "available", "get", "register", "spec"]
