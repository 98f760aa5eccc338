"""Nonlinear solvers used inside implicit steps."""
from . import newton as newton_module
from .newton import NewtonResult, newton

__all__ = ["newton", "NewtonResult", "newton_module"]
