"""The model zoo: ``available()``, ``get(name, **params)``.

Each model module gives parameters with defaults, a constraint-consistent default initial state,
invariants, the exact solution where one is known, and its source.
"""
from .base import Model, ModelSpec, Parameter, available, factory, get, register, spec
from . import (chaotic_quartic, chaplygin_sleigh, gearbox, particle, rolling_disk,  # noqa: F401
               test_problems)

__all__ = ["Model", "ModelSpec", "Parameter", "available", "factory", "get", "register", "spec"]
from . import suslov  # noqa: E402,F401  (Euler–Poincaré–Suslov on SO(3))
from . import snakeboard  # noqa: E402,F401  (Ferraro et al. 2008 Example 2)
from . import rolling_ball  # noqa: E402,F401  (Chaplygin sphere on a turning table; Ferraro et al. 2015)
from . import tilting_disk  # noqa: E402,F401  (Euler's disk: a rolling disk free to tilt)
from . import tilting_disk_centre  # noqa: E402,F401  (the tilting disk in centre coordinates, height as φ(q) = 0)
from . import sleigh_pendulum  # noqa: E402,F401  (a sleigh carrying a pendulum, the rod as φ(q) = 0)
from . import whipple_bicycle  # noqa: E402,F401  (the Whipple–Carvallo bicycle, Meijaard et al. 2007 benchmark)
