"""Continuous models: the systems that methods discretise."""
from .nonholonomic import NonholonomicSystem

__all__ = ["NonholonomicSystem"]
