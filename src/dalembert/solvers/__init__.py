"""Nonlinear solvers used inside implicit steps."""
from .newton import NewtonResult, newton

__all__ = ["newton", "NewtonResult"]
